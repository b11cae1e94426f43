//! End-to-end tests of handoff contracts through a running gateway and the CLI: the fixture
//! planner-to-executor run's graph, an incomplete contract refused before the consumer starts,
//! a complete one whose out-of-scope evidence does not cross, a consumer run opened under it
//! (governed by the producer's envelopes, cleared no higher), its answer, and a delivery that
//! skips a required output and takes a blocked action raising violation alerts.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/mod.rs"]
mod support;

use serde_json::{Value, json};
use support::{Gateway, root, stderr, stdout};

const FIXTURE_RUN: &str = "run-planner-executor-rate-limit";

#[test]
fn the_planner_to_executor_fixture_run_shows_its_handoff_graph() {
    let gw = Gateway::with_fixture_envelopes();
    gw.import_fixture_runs(&["05-planner-executor-rate-limit.json"]);
    let (status, g) = gw.call("GET", &format!("/v2/handoffs/graphs/{FIXTURE_RUN}"), None);
    assert_eq!(status, 200, "{g}");
    let edges = g["edges"].as_array().unwrap();
    assert_eq!(edges.len(), 1, "{g}");
    assert_eq!(edges[0]["from"], format!("{FIXTURE_RUN}#planner"));
    assert_eq!(edges[0]["to"], format!("{FIXTURE_RUN}#executor"));
    assert_eq!(edges[0]["contract"], "handoff-T-140-plan");
    assert_eq!(edges[0]["state"], "recorded");
    assert_eq!(g["nodes"].as_array().unwrap().len(), 2);
    assert!(g["cycles"].as_array().unwrap().is_empty());

    let (status, svg) = gw.raw(
        "GET",
        &format!("/v2/handoffs/graphs/{FIXTURE_RUN}?format=svg"),
        None,
        &[("Authorization", &format!("Bearer {}", gw.token))],
    );
    assert_eq!(status, 200);
    assert!(svg.starts_with("<svg") && svg.contains(">planner<") && svg.contains(">executor<"));
    let dot = stdout(&gw.tollgate(&["handoff", "graph", FIXTURE_RUN, "--format", "dot"]));
    assert!(
        dot.contains(&format!(
            "\"{FIXTURE_RUN}#planner\" -> \"{FIXTURE_RUN}#executor\""
        )),
        "{dot}"
    );
    let (status, bad) = gw.call(
        "GET",
        &format!("/v2/handoffs/graphs/{FIXTURE_RUN}?format=png"),
        None,
    );
    assert_eq!(status, 422, "{bad}");
    let (status, _) = gw.call("GET", "/v2/handoffs/graphs/run-nope", None);
    assert_eq!(status, 404);
}

fn open(gw: &Gateway, body: Value) -> (u16, Value) {
    gw.call("POST", "/v1/runs", Some(&body))
}

fn planner_run(gw: &Gateway) -> String {
    let (status, run) = open(
        gw,
        json!({"id": "run-t200-plan", "agent": "coder", "task": "T-200",
               "scope": "org:acme/repo:api/task:T-200", "clearance": "internal"}),
    );
    assert_eq!(status, 201, "{run}");
    run["run"]["id"].as_str().unwrap().to_string()
}

fn contract(producer: &str) -> Value {
    json!({
        "id": "plan-T-200",
        "template": "planner_to_executor",
        "producer": {"run": producer},
        "consumer": {"agent": "executor"},
        "goal": {"objective": "Add a per-client rate limit to GET /users", "expected_output": "a patch and a test report"},
        "evidence": [
            {"item": "doc-ticket-T-200", "scope": "org:acme/repo:api/task:T-200", "sensitivity": "internal"},
            {"item": "doc-globex-limits", "scope": "org:globex/repo:edge", "sensitivity": "internal"}
        ],
        "constraints": {"blocked_actions": ["http.get"], "hard_rules": ["no new crates"]},
        "required_outputs": ["patch", "test_report"],
        "success_criteria": ["cargo test passes"]
    })
}

#[test]
fn an_incomplete_contract_is_refused_before_the_consumer_starts_and_bad_input_stores_nothing() {
    let gw = Gateway::with_fixture_envelopes();
    let producer = planner_run(&gw);

    // Breaking the schema: every fault with its path; nothing stored.
    let mut broken = contract(&producer);
    broken["consumer"] = json!({"agent": "executor", "clearence": "secret"});
    broken["evidence"][0]["sensitivity"] = json!("top");
    let (status, err) = gw.call("POST", "/v2/handoffs/contracts", Some(&broken));
    assert_eq!(status, 422, "{err}");
    assert_eq!(err["error"]["code"], "invalid_contract");
    let paths: Vec<&str> = err["error"]["details"]["faults"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["/consumer", "/evidence/0/sensitivity"], "{err}");
    assert_eq!(gw.count("handoff_contracts"), 0);

    // A planner-to-executor contract with only a goal: refused by the handoff pack, with what
    // is missing; kept with its receipt.
    let incomplete = json!({
        "id": "plan-T-200", "template": "planner_to_executor",
        "producer": {"run": producer}, "consumer": {"agent": "executor"},
        "goal": "Add a per-client rate limit"
    });
    let (status, err) = gw.call("POST", "/v2/handoffs/contracts", Some(&incomplete));
    assert_eq!(status, 403, "{err}");
    assert_eq!(err["error"]["code"], "contract_rejected");
    let stored = &err["error"]["details"]["contract"];
    assert_eq!(stored["state"], "rejected");
    let missing: Vec<String> = stored["validation"]["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            format!(
                "{}:{}",
                p["code"].as_str().unwrap(),
                p["detail"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        missing,
        [
            "missing_field:constraints",
            "missing_field:evidence",
            "missing_field:expected_output",
            "missing_field:required_outputs"
        ]
    );
    assert!(stored["validation"]["problems"][0]["rule"] == "handoff.missing-field");
    assert_eq!(stored["validation"]["decision"]["effect"], "deny");
    // Recorded in the producer's run, which is running.
    let (_, events) = gw.call("GET", &format!("/v1/runs/{producer}"), None);
    assert_eq!(events["summary"]["events"], 1, "{events}");

    // The consumer cannot start on it: no run opens under it, no answer is taken.
    let (status, err) = open(
        &gw,
        json!({"agent": "executor", "task": "T-200", "scope": "org:acme/repo:api/task:T-200",
               "handoff": "plan-T-200"}),
    );
    assert_eq!(status, 409, "{err}");
    let (status, err) = gw.call(
        "POST",
        "/v2/handoffs/contracts/plan-T-200/ack",
        Some(&json!({"response": "accept"})),
    );
    assert_eq!(status, 409, "{err}");
    assert!(
        err["error"]["message"]
            .as_str()
            .unwrap()
            .contains("rejected")
    );

    // The CLI says the same from a file, exit 1, storing nothing more.
    let file = gw.dir.path().join("incomplete.yaml");
    std::fs::write(
        &file,
        format!("id: plan-T-201\ntemplate: planner_to_executor\nproducer: {{run: {producer}}}\nconsumer: {{agent: executor}}\ngoal: x\n"),
    )
    .unwrap();
    let out = gw.tollgate(&["handoff", "validate", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("problem missing_field `evidence`"),
        "{}",
        stdout(&out)
    );
    std::fs::write(
        &file,
        "id: x\nproducer: {run: r}\nconsumer: {agent: a, clearence: secret}\ngoal: x\n",
    )
    .unwrap();
    let out = gw.tollgate(&["handoff", "validate", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("incomplete.yaml:3:"),
        "{}",
        stderr(&out)
    );
    assert_eq!(gw.count("handoff_contracts"), 1);
}

#[test]
fn a_delivery_that_skips_a_required_output_and_takes_a_blocked_action_raises_violations() {
    let gw = Gateway::with_fixture_envelopes();
    let producer = planner_run(&gw);
    let (status, posted) = gw.call("POST", "/v2/handoffs/contracts", Some(&contract(&producer)));
    assert_eq!(status, 201, "{posted}");
    let c = &posted["contract"];
    assert_eq!(c["state"], "validated");
    assert_eq!(c["consumer_run"], "handoff:plan-T-200");
    // Only the evidence within the consumer's scope crosses; what was dropped is recorded.
    assert_eq!(c["validation"]["crossing"], json!(["doc-ticket-T-200"]));
    assert_eq!(c["validation"]["dropped"][0]["item"], "doc-globex-limits");
    assert_eq!(
        c["validation"]["dropped"][0]["code"],
        "evidence_out_of_scope"
    );
    assert_eq!(c["validation"]["decision"]["effect"], "redact");
    // Posting the same content again writes nothing.
    let (status, again) = gw.call("POST", "/v2/handoffs/contracts", Some(&contract(&producer)));
    assert_eq!(status, 200, "{again}");
    assert_eq!(gw.count("handoff_contracts"), 1);

    // The consumer accepts before it has a run.
    let (status, acked) = gw.call(
        "POST",
        "/v2/handoffs/contracts/plan-T-200/ack",
        Some(&json!({"response": "accept"})),
    );
    assert_eq!(status, 200, "{acked}");
    assert_eq!(acked["contract"]["state"], "accepted");

    // The consumer's run, opened under the contract: the producer's envelopes govern it too,
    // and it cannot see more than the producer.
    let asked_too_much = json!({"agent": "executor", "task": "T-200",
        "scope": "org:acme/repo:api/task:T-200", "clearance": "secret", "handoff": "plan-T-200"});
    let (status, err) = open(&gw, asked_too_much);
    assert_eq!(status, 422, "{err}");
    assert!(
        err["error"]["message"]
            .as_str()
            .unwrap()
            .contains("sees no more than its producer")
    );
    let (status, run) = open(
        &gw,
        json!({"id": "run-t200-exec", "agent": "executor", "task": "T-200",
               "scope": "org:acme/repo:api/task:T-200", "handoff": "plan-T-200"}),
    );
    assert_eq!(status, 201, "{run}");
    assert_eq!(run["run"]["clearance"], "internal");
    assert_eq!(run["run"]["parent_run"], producer);
    let governing: Vec<&str> = run["governing"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g.as_str().unwrap())
        .collect();
    assert!(
        governing.iter().any(|g| g.starts_with("coding-agent@")),
        "{run}"
    );
    assert!(
        governing.iter().any(|g| g.starts_with("org-baseline@")),
        "{run}"
    );
    let consumer = "run-t200-exec";

    // One contract opens one run; answering twice is a conflict.
    let (status, err) = open(
        &gw,
        json!({"agent": "executor", "task": "T-200",
               "scope": "org:acme/repo:api/task:T-200", "handoff": "plan-T-200"}),
    );
    assert_eq!(status, 409, "{err}");
    let (status, _) = gw.call(
        "POST",
        "/v2/handoffs/contracts/plan-T-200/ack",
        Some(&json!({"response": "reject", "reason": "changed my mind"})),
    );
    assert_eq!(status, 409);

    // It works: a read, a blocked network call the envelope allows, and an output with the
    // patch but no test report.
    for tool in ["fs.read_file", "http.get"] {
        let (status, answer) = gw.call(
            "POST",
            &format!("/v1/runs/{consumer}/tool-calls"),
            Some(&json!({"tool": tool, "arguments": {"path": "src/lib.rs", "url": "https://example.com"}})),
        );
        assert_eq!(status, 200, "{answer}");
        assert_eq!(answer["effect"], "allow", "{tool}: {answer}");
    }
    let (status, _) = gw.call(
        "POST",
        &format!("/v1/runs/{consumer}/events"),
        Some(&json!({"events": [{"kind": "output", "payload": {"content": "Done.\n\nPatch:\n- src/rate_limit.rs\n"}}]})),
    );
    assert_eq!(status, 201);
    // An agent cannot forge the module's record.
    let (status, _) = gw.call(
        "POST",
        &format!("/v1/runs/{consumer}/events"),
        Some(&json!({"events": [{"kind": "handoff", "payload": {"stage": "ack", "contract_id": "plan-T-200"}}]})),
    );
    assert_eq!(status, 422);

    // Finishing the consumer's run checks its delivery first: the alerts are in its record.
    let (status, finished) = gw.call(
        "POST",
        &format!("/v1/runs/{consumer}/finish"),
        Some(&json!({"status": "succeeded"})),
    );
    assert_eq!(status, 200, "{finished}");
    let (status, shown) = gw.call("GET", "/v2/handoffs/contracts/plan-T-200", None);
    assert_eq!(status, 200);
    assert_eq!(shown["contract"]["state"], "violated", "{shown}");
    let violations: Vec<String> = shown["deliveries"][0]["violations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| {
            format!(
                "{}:{}",
                v["code"].as_str().unwrap(),
                v["detail"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        violations,
        [
            "blocked_action_taken:http.get",
            "missing_output:test_report"
        ]
    );
    assert_eq!(
        shown["deliveries"][0]["delivered"]["outputs"]["patch"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    assert_eq!(shown["acks"][0]["response"], "accept");
    let out = gw.tollgate(&["runs", "show", consumer]);
    let timeline = stdout(&out);
    assert!(
        timeline.contains("VIOLATION of contract plan-T-200 v1: missing_output `test_report`"),
        "{timeline}"
    );
    assert_eq!(
        timeline.matches("VIOLATION").count(),
        2,
        "one alert per breach: {timeline}"
    );
    let verify = gw.tollgate(&["runs", "verify", consumer]);
    assert!(verify.status.success(), "{}", stderr(&verify));

    // The graph of the producer's run reaches the consumer's, with the contract's state and
    // what went wrong.
    let (_, g) = gw.call("GET", &format!("/v2/handoffs/graphs/{producer}"), None);
    let edge = &g["edges"][0];
    assert_eq!(edge["from"], format!("{producer}#coder"));
    assert_eq!(edge["to"], format!("{consumer}#executor"));
    assert_eq!(edge["state"], "violated");
    assert_eq!(edge["dropped"], json!(["doc-globex-limits"]));
    assert_eq!(g["runs"], json!([consumer, producer]), "runs in id order");

    // Checked again by hand: the same breaches, no second alert.
    let (status, checked) = gw.call("POST", "/v2/handoffs/contracts/plan-T-200/check", None);
    assert_eq!(status, 201, "{checked}");
    assert_eq!(checked["findings"].as_array().unwrap().len(), 2);
    let timeline = stdout(&gw.tollgate(&["runs", "show", consumer]));
    assert_eq!(timeline.matches("VIOLATION").count(), 2, "{timeline}");
    // A violated contract is not handed over as an A2A message.
    let (status, _) = gw.call("GET", "/v2/handoffs/contracts/plan-T-200/a2a", None);
    assert_eq!(status, 409);
}

#[test]
fn a_contract_travels_as_an_a2a_message_without_the_evidence_that_stayed_behind() {
    let gw = Gateway::with_fixture_envelopes();
    let producer = planner_run(&gw);
    let (status, _) = gw.call("POST", "/v2/handoffs/contracts", Some(&contract(&producer)));
    assert_eq!(status, 201);
    let (status, message) = gw.call("GET", "/v2/handoffs/contracts/plan-T-200/a2a", None);
    assert_eq!(status, 200);
    assert_eq!(message["parts"][1]["kind"], "data");
    let data = &message["parts"][1]["data"];
    assert_eq!(data["id"], "plan-T-200");
    assert_eq!(data["evidence"].as_array().unwrap().len(), 1, "{data}");
    assert_eq!(data["evidence"][0]["item"], "doc-ticket-T-200");
    let (_, shown) = gw.call("GET", "/v2/handoffs/contracts/plan-T-200", None);
    assert_eq!(shown["handed"]["evidence"], data["evidence"]);
    // Imported back: the same producer run, the content is what crossed, so it is a new
    // version — the contract handed on without what its consumer could not see.
    let (status, imported) = gw.call("POST", "/v2/handoffs/a2a", Some(&message));
    assert_eq!(status, 201, "{imported}");
    assert_eq!(imported["contract"]["version"], 2);
    assert!(
        imported["contract"]["validation"]["dropped"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    // A message without a contract: 422 with the path; nothing stored.
    let (status, err) = gw.call(
        "POST",
        "/v2/handoffs/a2a",
        Some(&json!({"parts": [{"kind": "text", "text": "hi"}]})),
    );
    assert_eq!(status, 422, "{err}");
    assert_eq!(err["error"]["details"]["faults"][0]["path"], "/parts");
    assert_eq!(gw.count("handoff_contracts"), 2);
}

#[test]
fn a_new_version_keeps_the_open_run_and_a_consumer_that_acted_cannot_refuse() {
    let gw = Gateway::with_fixture_envelopes();
    let producer = planner_run(&gw);
    let (status, _) = gw.call("POST", "/v2/handoffs/contracts", Some(&contract(&producer)));
    assert_eq!(status, 201);
    // Opening the run accepts the contract.
    let (status, run) = open(
        &gw,
        json!({"id": "run-exec-2", "agent": "executor", "task": "T-200",
               "scope": "org:acme/repo:api/task:T-200", "handoff": "plan-T-200"}),
    );
    assert_eq!(status, 201, "{run}");
    let (_, shown) = gw.call("GET", "/v2/handoffs/contracts/plan-T-200", None);
    assert_eq!(shown["contract"]["state"], "accepted");
    assert_eq!(shown["acks"][0]["consumer_run"], "run-exec-2");

    // The producer answers with a new version: it goes to the run already open.
    let mut v2 = contract(&producer);
    v2["goal"]["objective"] = json!("Add a per-client rate limit to GET /users and GET /teams");
    let (status, posted) = gw.call("POST", "/v2/handoffs/contracts", Some(&v2));
    assert_eq!(status, 201, "{posted}");
    assert_eq!(posted["contract"]["version"], 2);
    assert_eq!(posted["contract"]["consumer_run"], "run-exec-2");
    assert_eq!(posted["contract"]["state"], "validated");

    // The consumer acts, then tries to refuse: too late.
    let (status, _) = gw.call(
        "POST",
        "/v1/runs/run-exec-2/tool-calls",
        Some(&json!({"tool": "fs.read_file", "arguments": {"path": "src/lib.rs"}})),
    );
    assert_eq!(status, 200);
    let (status, err) = gw.call(
        "POST",
        "/v2/handoffs/contracts/plan-T-200/ack",
        Some(&json!({"response": "reject", "reason": "not mine", "run": "run-exec-2"})),
    );
    assert_eq!(status, 409, "{err}");
    assert!(
        err["error"]["message"]
            .as_str()
            .unwrap()
            .contains("acted under contract")
    );
    // An answer from another run is refused with where the work went.
    let (status, err) = gw.call(
        "POST",
        "/v2/handoffs/contracts/plan-T-200/ack",
        Some(&json!({"response": "accept", "run": producer})),
    );
    assert_eq!(status, 422, "{err}");
    // Another producer agent cannot post versions of it.
    let mut foreign = contract(&producer);
    foreign["producer"]["agent"] = json!("reviewer");
    let (status, err) = gw.call("POST", "/v2/handoffs/contracts", Some(&foreign));
    assert_eq!(status, 422, "{err}");
    assert_eq!(
        err["error"]["details"]["faults"][0]["path"],
        "/producer/agent"
    );
}

#[test]
fn opening_a_consumer_run_with_more_envelopes_than_its_producer_is_refused() {
    let gw = Gateway::with_fixture_envelopes();
    // The producer: governed by the organisation's baseline only (tool and data rules).
    let (status, run) = open(
        &gw,
        json!({"id": "run-lead", "agent": "lead", "task": "T-400", "envelopes": ["org-baseline"],
               "scope": "org:acme/repo:api/task:T-400", "clearance": "internal"}),
    );
    assert_eq!(status, 201, "{run}");
    let lightweight = json!({"id": "h-400", "producer": {"run": "run-lead"},
        "consumer": {"agent": "helper"}, "goal": "Look into T-400"});
    let (status, posted) = gw.call("POST", "/v2/handoffs/contracts", Some(&lightweight));
    assert_eq!(status, 201, "{posted}");
    // A consumer whose own envelopes bring model rules the producer's lack could call models
    // the producer may not: refused, and the contract stays unclaimed.
    let (status, err) = open(
        &gw,
        json!({"agent": "helper", "task": "T-400", "envelopes": ["coding-agent"],
               "scope": "org:acme/repo:api/task:T-400", "handoff": "h-400"}),
    );
    assert_eq!(status, 422, "{err}");
    let message = err["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("envelope_escalation `model-rules`"),
        "{message}"
    );
    let (_, shown) = gw.call("GET", "/v2/handoffs/contracts/h-400", None);
    assert_eq!(shown["contract"]["consumer_run"], "handoff:h-400");
    assert_eq!(shown["contract"]["state"], "validated");
    // A consumer scope outside the producer's is refused when the contract is posted.
    let wide = json!({"id": "h-401", "producer": {"run": "run-lead"},
        "consumer": {"agent": "helper", "scope": "org:globex"}, "goal": "Look"});
    let (status, err) = gw.call("POST", "/v2/handoffs/contracts", Some(&wide));
    assert_eq!(status, 422, "{err}");
    assert_eq!(
        err["error"]["details"]["faults"][0]["path"],
        "/consumer/scope"
    );
    // The opener without the extra envelope gets its run.
    let (status, run) = open(
        &gw,
        json!({"agent": "helper", "task": "T-400",
               "scope": "org:acme/repo:api/task:T-400", "handoff": "h-400"}),
    );
    assert_eq!(status, 201, "{run}");
}

#[test]
fn a_delegation_back_to_the_producer_through_a_run_opened_later_is_a_cycle() {
    let gw = Gateway::with_fixture_envelopes();
    let producer = planner_run(&gw);
    let (status, _) = gw.call("POST", "/v2/handoffs/contracts", Some(&contract(&producer)));
    assert_eq!(status, 201);
    let (status, _) = open(
        &gw,
        json!({"id": "run-exec-3", "agent": "executor", "task": "T-200",
               "scope": "org:acme/repo:api/task:T-200", "handoff": "plan-T-200"}),
    );
    assert_eq!(status, 201);
    // The executor hands the same task back to the coder, in a run the coder would open.
    let back = json!({"id": "back-T-200", "producer": {"run": "run-exec-3"},
        "consumer": {"agent": "coder"}, "goal": "Finish it yourself"});
    let (status, err) = gw.call("POST", "/v2/handoffs/contracts", Some(&back));
    assert_eq!(status, 403, "{err}");
    let problems = &err["error"]["details"]["contract"]["validation"]["problems"];
    assert_eq!(problems[0]["code"], "delegation_cycle", "{problems}");
    assert_eq!(problems[0]["rule"], "handoff.delegation-cycle");
}

#[test]
fn every_template_starter_is_served_and_reads() {
    let gw = Gateway::start();
    for name in [
        "lightweight",
        "code_patch_review",
        "research_to_implementation",
        "planner_to_executor",
    ] {
        let out = gw.tollgate(&["handoff", "template", name]);
        assert!(out.status.success(), "{}", stderr(&out));
        assert!(stdout(&out).contains(&format!("template: {name}")) || name == "lightweight");
        let (status, body) = gw.raw(
            "GET",
            &format!("/v2/handoffs/templates/{name}"),
            None,
            &[("Authorization", &format!("Bearer {}", gw.token))],
        );
        assert_eq!(status, 200);
        assert_eq!(body, stdout(&out));
    }
    let (status, schema) = gw.call("GET", "/v2/handoffs/schema", None);
    assert_eq!(status, 200);
    assert_eq!(schema["title"], "HandoffContract");
    assert!(
        root()
            .join("gateway/src/handoff/contract.schema.json")
            .exists()
    );
}
