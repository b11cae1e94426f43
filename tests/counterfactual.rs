//! End-to-end tests of counterfactual replay: `tollgate replay scenario|run|batch|show` on
//! the fixture runs, and the `/v2/replays` routes of a running gateway, whose own worker runs
//! the batch job.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/mod.rs"]
mod support;

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{Gateway, stderr, stdout};

fn json_of(out: &std::process::Output) -> Value {
    assert!(out.status.success(), "{}", stderr(out));
    serde_json::from_slice(&out.stdout).unwrap()
}

const FLAKY: &str = "03-flaky-webhook-retry.json";

#[test]
fn the_cli_reruns_a_recorded_failure_with_five_mutation_kinds_and_leaves_the_run_as_it_was() {
    let gw = Gateway::with_fixture_envelopes();
    gw.import_fixture_runs(&[FLAKY]);
    let exported =
        |gw: &Gateway| stdout(&gw.tollgate(&["runs", "export", "run-flaky-webhook-retry"]));
    let before = exported(&gw);

    // Five kinds in one scenario, written as flags.
    let five_kinds = [
        "replay",
        "scenario",
        "--run",
        "run-flaky-webhook-retry",
        "--name",
        "five kinds",
        "--drop",
        "doc-ticket-T-127",
        "--weight",
        "mem-procedure-db-tests=0.5",
        "--budget",
        "2000",
        "--summary",
        "doc-webhooks",
        "--disable-class",
        "preference",
        "--json",
    ];
    let created = json_of(&gw.tollgate(&five_kinds));
    assert_eq!(created["created"], true);
    let id = created["scenario"]["id"].as_str().unwrap().to_string();
    assert_eq!(
        created["scenario"]["spec"]["mutations"]
            .as_array()
            .unwrap()
            .len(),
        5
    );
    // The same scenario again is the same scenario.
    let again = json_of(&gw.tollgate(&five_kinds));
    assert_eq!(
        (again["created"].clone(), again["scenario"]["id"].clone()),
        (json!(false), json!(id))
    );

    let result = json_of(&gw.tollgate(&["replay", "run", &id, "--json"]));
    assert_eq!(result["first_change"], 0, "{}", result["steps"][0]);
    assert_eq!(result["run"], "run-flaky-webhook-retry");
    let metric = |name: &str| {
        result["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["metric"] == name)
            .unwrap()
            .clone()
    };
    assert!(metric("cost")["delta"].as_f64().unwrap() < 0.0);
    assert_eq!(
        metric("tool_path")["delta"],
        0.0,
        "a dry run keeps the recorded calls"
    );
    let rid = result["id"].as_str().unwrap().to_string();
    assert!(rid.starts_with("rpl-"));

    // The two remaining kinds, from a file: a disabled rule and a dropped retrieval doc.
    let file = gw.dir.path().join("scenario.yaml");
    std::fs::write(
        &file,
        "run: run-flaky-webhook-retry\nmutations:\n  - {kind: disable_rule, rule: coding-agent/read-only}\n  - {kind: drop_retrieval_doc, item: doc-agent-guidelines}\nmetrics: [structural_success, tool_path]\n",
    )
    .unwrap();
    let text = gw.tollgate(&["replay", "run", file.to_str().unwrap()]);
    assert!(text.status.success(), "{}", stderr(&text));
    let text = stdout(&text);
    assert!(text.contains(": LOSS"), "{text}");
    assert!(
        text.contains("call call-0-0 fs.read_file: allow Recorded ok -> deny NotRun"),
        "{text}"
    );

    // Exported as the draft of a regression case.
    let draft = gw.dir.path().join("case.yaml");
    let exported_case = gw.tollgate(&[
        "replay",
        "export",
        &rid,
        "--output",
        draft.to_str().unwrap(),
    ]);
    assert!(exported_case.status.success(), "{}", stderr(&exported_case));
    let yaml = std::fs::read_to_string(&draft).unwrap();
    assert!(
        yaml.contains(&format!("replay: {rid}")) && yaml.contains("kind: tool_path"),
        "{yaml}"
    );

    // Shown again, listed.
    let shown = gw.tollgate(&["replay", "show", &rid]);
    assert!(
        stdout(&shown).contains("drop item `doc-ticket-T-127`"),
        "{}",
        stdout(&shown)
    );
    let listed = json_of(&gw.tollgate(&["replay", "list", "--json"]));
    assert_eq!(listed.as_array().unwrap().len(), 2);

    // A mutation naming what the run lacks: exit 2, what exists, nothing stored.
    let bad = gw.tollgate(&[
        "replay",
        "scenario",
        "--run",
        "run-flaky-webhook-retry",
        "--drop",
        "doc-nothing",
    ]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(stderr(&bad).contains("`doc-webhooks`"), "{}", stderr(&bad));
    assert_eq!(gw.count("replay_scenarios"), 2);
    let unknown = gw.tollgate(&[
        "replay",
        "scenario",
        "--run",
        "no-such-run",
        "--budget",
        "10",
    ]);
    assert_eq!(unknown.status.code(), Some(2));

    // Nothing of the run changed.
    assert_eq!(exported(&gw), before);
    let exact = gw.tollgate(&["replay", "exact", "run-flaky-webhook-retry"]);
    assert!(exact.status.success(), "{}", stdout(&exact));
}

#[test]
fn the_gateway_runs_scenarios_and_a_rule_sweep_batch_and_attributes_outcome_changes_to_rules() {
    let gw = Gateway::with_fixture_envelopes();
    gw.import_fixture_runs(&["04-forbidden-tool-pool-exhaustion.json"]);
    let run = "run-forbidden-tool-pool-exhaustion";

    let (status, created) = gw.call(
        "POST",
        "/v2/replays/scenarios",
        Some(&json!({"run": run, "mutations": [{"kind": "disable_rule", "rule": "org-baseline/no-rm"}]})),
    );
    assert_eq!(status, 201, "{created}");
    let id = created["scenario"]["id"].as_str().unwrap().to_string();
    let (status, result) = gw.call("POST", &format!("/v2/replays/scenarios/{id}/execute"), None);
    assert_eq!(status, 201, "{result}");
    // Without `no-rm`, `shell.rm_rf` is no longer denied: the shell rule asks for an approval
    // the recording never gave, so it still does not run.
    let changed = result["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["changed"] == true)
        .unwrap();
    let call = changed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["tool"] == "shell.rm_rf")
        .unwrap();
    assert_eq!(call["baseline"]["effect"], "deny");
    assert_eq!(call["replay"]["effect"], "require_approval");
    assert_eq!(call["replay"]["served"], "not_run");
    let rid = result["id"].as_str().unwrap();
    let (status, fetched) = gw.call("GET", &format!("/v2/replays/{rid}"), None);
    assert_eq!(status, 200);
    assert_eq!(fetched["label"], result["label"]);
    assert_eq!(
        fetched["baseline"], result["baseline"],
        "the baseline reads back whole"
    );
    // Executed again: a second result, the baseline stored once for both.
    let artifacts = gw.count("artifacts");
    let (status, again) = gw.call("POST", &format!("/v2/replays/scenarios/{id}/execute"), None);
    assert_eq!(status, 201, "{again}");
    assert!(
        again["id"].as_str().unwrap().ends_with("-2"),
        "{}",
        again["id"]
    );
    assert_eq!(gw.count("artifacts"), artifacts);
    let (status, draft) = gw.call("GET", &format!("/v2/replays/{rid}/export"), None);
    assert_eq!(status, 200, "{draft}");
    assert_eq!(draft["draft"]["source"]["replay"], rid);
    assert!(draft["yaml"].as_str().unwrap().contains("assertions:"));
    let (status, scenario) = gw.call("GET", &format!("/v2/replays/scenarios/{id}"), None);
    assert_eq!(status, 200);
    assert_eq!(scenario["results"][1]["id"], rid, "newest first");

    // Bad input: 422 with the mutation's index and what exists; unknown run 404; nothing stored.
    let (status, err) = gw.call(
        "POST",
        "/v2/replays/scenarios",
        Some(&json!({"run": run, "mutations": [{"kind": "change_budget", "budget": 100}, {"kind": "disable_memory_class", "class": "preference"}]})),
    );
    assert_eq!(status, 422, "{err}");
    assert_eq!(err["error"]["code"], "invalid_scenario");
    assert_eq!(err["error"]["details"]["mutation"], 1);
    assert!(
        err["error"]["message"]
            .as_str()
            .unwrap()
            .contains("`fact`, `warning`"),
        "{err}"
    );
    let (status, _) = gw.call(
        "POST",
        "/v2/replays/scenarios",
        Some(&json!({"run": "nope", "mutations": [{"kind": "change_budget", "budget": 100}]})),
    );
    assert_eq!(status, 404);
    let (status, err) = gw.call(
        "POST",
        "/v2/replays/scenarios",
        Some(&json!({"run": run, "mutations": [{"kind": "teleport"}]})),
    );
    assert_eq!(status, 422, "{err}");
    assert_eq!(gw.count("replay_scenarios"), 1);
    let (status, _) = gw.call("GET", "/v2/replays/rpl-nothing", None);
    assert_eq!(status, 404);

    // A batch disabling each rule in turn, run by the gateway's worker.
    let (status, started) = gw.call(
        "POST",
        "/v2/replays/batches",
        Some(&json!({"run": run, "sweep": "disable_each_rule", "metrics": ["structural_success", "tool_path"]})),
    );
    assert_eq!(status, 202, "{started}");
    let batch = started["batch"]["id"].as_str().unwrap().to_string();
    let total = started["batch"]["scenarios"].as_array().unwrap().len();
    assert!(total >= 10, "{started}");
    let began = Instant::now();
    let view = loop {
        let (_, view) = gw.call("GET", &format!("/v2/replays/{batch}"), None);
        if view["job_state"] == "succeeded" {
            break view;
        }
        assert!(
            view["job_state"] != "dead" && began.elapsed() < Duration::from_secs(120),
            "{view}"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(view["done"], total);
    let attribution = view["attribution"].as_array().unwrap();
    assert_eq!(attribution.len(), total);
    // Disabling what lets the agent read breaks the run: a loss, listed first.
    assert_eq!(attribution[0]["label"], "loss", "{view}");
    let read_only = attribution
        .iter()
        .find(|a| a["rule"] == "coding-agent/read-only")
        .unwrap();
    assert_eq!(read_only["label"], "loss");
    let no_rm = attribution
        .iter()
        .find(|a| a["rule"] == "org-baseline/no-rm")
        .unwrap();
    assert_eq!(
        no_rm["label"], "neutral",
        "the call still does not run: {no_rm}"
    );
}
