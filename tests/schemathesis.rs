//! The HTTP contract, tested by Schemathesis against `/openapi.json`: every operation, with
//! its documented example, generated valid and invalid requests, and the stateful phase, on a
//! gateway serving the fixture envelopes and the demo pack over a store that holds what the
//! examples name (`gateway/src/http/openapi/examples.rs`). Checked: no server error, every
//! status and content type documented, every response (errors included) in its documented
//! schema, invalid requests refused, and **every operation answered 2xx at least once** (read
//! from the HAR file Schemathesis writes of every request). Not checked here: that every
//! schema-valid request is accepted (`positive_data_acceptance`) — some rules cannot be said in
//! a schema (an envelope's YAML, a candidate's unique id); RELIABILITY.md lists them.
//!
//! `TOLLGATE_SCHEMATHESIS_HAR=FILE` keeps the HAR file (every request and answer) there.
//!
//! Schemathesis is `TOLLGATE_TEST_SCHEMATHESIS`, else `.ci/venv/bin/schemathesis` (`.ci/run`
//! installs it from `tests/requirements-schemathesis.txt`). Under `CI` a missing one fails the
//! test; elsewhere the test says so and passes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/mod.rs"]
mod support;

use std::collections::BTreeMap;
use std::process::Command;

use serde_json::{Value, json};
use support::{Gateway, TempDir};

/// Examples per operation and phase: about a minute on two cores for the whole API.
const MAX_EXAMPLES: &str = "15";

/// Operations that may end the run without a 2xx answer, each with the reason. Keep it short:
/// an operation belongs here only when no request this test can make succeeds.
const NEVER_2XX_ALLOWED: &[(&str, &str)] = &[];

fn schemathesis() -> Option<String> {
    if let Ok(p) = std::env::var("TOLLGATE_TEST_SCHEMATHESIS") {
        return Some(p);
    }
    let venv = support::root().join(".ci/venv/bin/schemathesis");
    venv.exists().then(|| venv.display().to_string())
}

/// Runs `tollgate ARGS...` in `dir` (its store); it must succeed; returns its output as JSON.
fn tollgate_in(dir: &TempDir, envs: &[(&str, &str)], args: &[&str]) -> Value {
    let out = support::with_store(
        &mut Command::new(env!("CARGO_BIN_EXE_tollgate")),
        dir.path(),
    )
    .current_dir(dir.path())
    .envs(envs.iter().copied())
    .args(args)
    .output()
    .expect("run tollgate");
    assert!(
        out.status.success(),
        "tollgate {args:?}: {}",
        support::stderr(&out)
    );
    serde_json::from_slice(&out.stdout).unwrap_or(Value::Null)
}

/// What Schemathesis is told per operation, by operation id: path parameters for the
/// operations whose examples cannot name a stored thing (a case's id and a token's are
/// random), and headers (deciding the held call's approval takes the token of the approver
/// its rule names).
#[derive(Default)]
struct Overrides {
    parameters: BTreeMap<&'static str, Vec<(&'static str, String)>>,
    /// Query parameters pinned to keep the run's time bounded.
    query: BTreeMap<&'static str, Vec<(&'static str, String)>>,
    headers: BTreeMap<&'static str, Vec<(&'static str, String)>>,
}

/// The store the document's examples are written for (see `http/openapi/examples.rs`): the
/// demo cases, two fixture runs, run 01 distilled, and, through the API, two running runs, a
/// held call, a handoff contract, a scenario and its replay, a regression case and a suite;
/// and the overrides: cases with proposals in each state an operation acts on, a token.
fn gateway_with_the_example_store() -> (Gateway, Overrides) {
    let dir = TempDir::new("schemathesis");
    let seeded = tollgate_in(&dir, &[], &["demo", "seed", "--json"]);
    let pack_root = seeded["pack_root"].as_str().unwrap().to_string();
    let demo: Vec<String> = seeded["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["case_id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(demo.len(), 4, "{seeded}");
    let runs = support::root().join("fixtures/runs");
    for run in ["01-bugfix-users-404.json", "03-flaky-webhook-retry.json"] {
        let path = runs.join(run).display().to_string();
        tollgate_in(&dir, &[], &["runs", "import", &path]);
    }
    tollgate_in(
        &dir,
        &[],
        &["memory", "distill", "run-bugfix-users-404", "--json"],
    );
    // A tool pinned by the MCP gateway whose definition changed since (what a session seeing
    // a rewritten description leaves; `tests/mcp_http.rs` makes one that way).
    support::store_in(dir.path())
        .write(|db| {
            db.execute(
                "INSERT INTO mcp_tool_pins VALUES ('files', 'read_file', ?1, '{\"name\":\"read_file\"}',
                 'first use', '2026-11-28T00:00:00Z', ?2,
                 '{\"name\":\"read_file\",\"description\":\"Read a file.\"}', '2026-11-28T00:01:00Z')",
                ["a".repeat(64), "b".repeat(64)],
            )
        })
        .unwrap();
    let envelopes = support::root().join("fixtures/envelopes");
    let gw = Gateway::start_in(
        dir,
        &[("TOLLGATE_PACK_ROOTS", &pack_root)],
        &["--envelopes", envelopes.to_str().unwrap()],
    );
    let ok = |method: &str, path: &str, body: Value| -> Value {
        let body = (!body.is_null()).then_some(body);
        let (status, answer) = gw.call(method, path, body.as_ref());
        assert!(
            (200..300).contains(&status),
            "{method} {path}: {status} {answer}"
        );
        answer
    };
    for run in ["run-example-open", "run-example-finishing"] {
        ok(
            "POST",
            "/v1/runs",
            json!({"id": run, "agent": "coder", "task": "T-200",
                   "scope": "org:acme/repo:api/task:T-200", "clearance": "confidential"}),
        );
        ok(
            "POST",
            &format!("/v1/runs/{run}/steps"),
            json!({"name": "work"}),
        );
    }
    let held = ok(
        "POST",
        "/v1/runs/run-example-open/tool-calls",
        json!({"tool": "shell.exec", "arguments": {"command": "ls"}, "call_id": "call-example-held"}),
    );
    assert_eq!(held["approval"]["id"], "apr-7d1b70ca6afbbe0f", "{held}");
    ok(
        "POST",
        "/v2/handoffs/contracts",
        json!({"schema": "tollgate.handoff/v1", "id": "handoff-example",
               "producer": {"run": "run-example-open"}, "consumer": {"agent": "reviewer"},
               "goal": "Review the fix"}),
    );
    ok(
        "POST",
        "/v2/handoffs/contracts",
        json!({"schema": "tollgate.handoff/v1", "id": "handoff-to-answer",
               "producer": {"run": "run-example-open"}, "consumer": {"agent": "tester"},
               "goal": "Test the fix"}),
    );
    ok(
        "POST",
        "/v1/runs",
        json!({"id": "run-example-consumer", "agent": "reviewer", "task": "T-200",
               "scope": "org:acme/repo:api/task:T-200", "handoff": "handoff-example"}),
    );
    let scenario = ok(
        "POST",
        "/v2/replays/scenarios",
        json!({"run": "run-bugfix-users-404", "name": "without the shell rule",
               "mutations": [{"kind": "disable_rule", "rule": "coding-agent/shell"}]}),
    );
    let scn = scenario["scenario"]["id"].as_str().unwrap().to_string();
    let replay = ok(
        "POST",
        &format!("/v2/replays/scenarios/{scn}/execute"),
        Value::Null,
    );
    assert_eq!(scn, "scn-796e957d59212ef6");
    assert_eq!(replay["id"], "rpl-796e957d5921-1");
    ok(
        "POST",
        "/v2/regressions/from-run/run-bugfix-users-404",
        json!({"id": "reg-example", "name": "the users 404 fix"}),
    );
    let suite = ok(
        "POST",
        "/v2/regressions/suites/execute",
        json!({"cases": ["reg-example"]}),
    );
    assert_eq!(suite["suite"]["id"], "sui-1", "{suite}");
    let mut overrides = Overrides {
        parameters: case_states(&gw, &demo, &ok),
        ..Overrides::default()
    };
    let token = ok(
        "POST",
        "/v1/tokens",
        json!({"kind": "approver", "name": "to-revoke"}),
    );
    let token = token["record"]["id"].as_str().unwrap().to_string();
    overrides
        .parameters
        .insert("revoke_token", vec![("id", token)]);
    let lead = ok(
        "POST",
        "/v1/tokens",
        json!({"kind": "approver", "name": "team-lead"}),
    );
    let lead = format!("Bearer {}", lead["token"].as_str().unwrap());
    overrides
        .headers
        .insert("decide_approval", vec![("Authorization", lead)]);
    // Executing the stored regression case `repeat` times (up to 100) replays it that often
    // in the request: past about 50, longer than the 10 s a request may take on a loaded
    // two-core machine. One run each here; `tests/regress.rs` checks that 0 is refused.
    overrides
        .query
        .insert("execute_regression", vec![("repeat", "1".to_string())]);
    // A long poll on a pending approval waits up to 60 s, past the 10 s a request may take
    // here: with the answers' schemas typed, Schemathesis finds the held call's approval id
    // and would wait on it. `tests/gateway_http.rs` checks the long poll itself.
    overrides
        .query
        .insert("get_approval", vec![("wait", "0".to_string())]);
    (gw, overrides)
}

/// Cases for the case operations: the demo's first case (a proposal awaiting approval) for the
/// approval; one with a proposal approved, for the commit; one with a proposal just made, for
/// the preview; one previewed, for the policy; one untouched since it opened, for evidence; a
/// demo case for the rest.
fn case_states(
    gw: &Gateway,
    demo: &[String],
    ok: &dyn Fn(&str, &str, Value) -> Value,
) -> BTreeMap<&'static str, Vec<(&'static str, String)>> {
    let open = || -> String {
        let made = ok(
            "POST",
            "/cases",
            json!({"engine_id": "intake_review", "engine_version": "0.1.0",
                   "input": {"title": "Printer jammed", "body": "The third-floor printer jams.",
                             "requester": "ops", "amount": 0}}),
        );
        let case = made["case_id"].as_str().unwrap().to_string();
        ok(
            "POST",
            &format!("/cases/{case}/runtime/collect"),
            Value::Null,
        );
        case
    };
    let propose = |case: &str| -> String {
        let made = ok(
            "POST",
            &format!("/cases/{case}/proposals"),
            json!({"capability": "route_to_queue"}),
        );
        made["proposal_id"].as_str().unwrap().to_string()
    };
    let step = |case: &str, pid: &str, what: &str, body: Value| {
        ok(
            "POST",
            &format!("/cases/{case}/proposals/{pid}/{what}"),
            body,
        );
    };
    let for_preview = open();
    let preview_pid = propose(&for_preview);
    let for_policy = open();
    let policy_pid = propose(&for_policy);
    step(&for_policy, &policy_pid, "preview", Value::Null);
    let for_commit = open();
    let commit_pid = propose(&for_commit);
    step(&for_commit, &commit_pid, "preview", Value::Null);
    step(&for_commit, &commit_pid, "policy", Value::Null);
    step(
        &for_commit,
        &commit_pid,
        "approval",
        json!({"approve": true, "reason": "routine"}),
    );
    let for_evidence = open();
    let (_, case) = gw.call("GET", &format!("/cases/{for_evidence}"), None);
    // The version the example of `POST /cases/{case_id}/evidence` expects.
    assert_eq!(case["case"]["version"], 2, "{case}");
    let mut by_operation = BTreeMap::new();
    for operation in [
        "get_case",
        "inspection",
        "timeline",
        "graph",
        "runtime_status",
        "collect",
        "proposals",
        "propose",
        "model_run",
        "replay_health",
        "replay_rebuild",
    ] {
        by_operation.insert(operation, vec![("case_id", demo[1].clone())]);
    }
    let proposal = |case: &str, pid: &str| {
        vec![
            ("case_id", case.to_string()),
            ("proposal_id", pid.to_string()),
        ]
    };
    by_operation.insert("approval", proposal(&demo[0], "prop-1"));
    by_operation.insert("commit", proposal(&for_commit, &commit_pid));
    by_operation.insert("preview", proposal(&for_preview, &preview_pid));
    by_operation.insert("policy", proposal(&for_policy, &policy_pid));
    by_operation.insert("record_evidence", vec![("case_id", for_evidence)]);
    by_operation
}

/// Schemathesis's configuration: each overridden operation's parameters and headers.
fn config(overrides: &Overrides) -> String {
    let table = |pairs: &[(&str, String)], prefix: &str| -> String {
        let values: Vec<String> = pairs
            .iter()
            .map(|(name, value)| format!("\"{prefix}{name}\" = \"{value}\""))
            .collect();
        format!("{{ {} }}", values.join(", "))
    };
    // The examples phase sends each operation its own example, and only that: with the
    // values Schemathesis captures from answers mixed in, the example finishing one run also
    // finished the run the other examples add steps to, whichever came first.
    let mut toml =
        String::from("[phases.examples]\nextra-data-sources = { responses = false }\n\n");
    for (operation, parameters) in &overrides.parameters {
        toml.push_str(&format!(
            "[[operations]]\ninclude-operation-id = \"{operation}\"\nparameters = {}\n\n",
            table(parameters, "path.")
        ));
    }
    // With a query parameter pinned, Schemathesis sends unknown query parameters as invalid
    // data and expects them refused (`POST /v2/regressions/{id}/execute` refuses them).
    for (operation, parameters) in &overrides.query {
        toml.push_str(&format!(
            "[[operations]]\ninclude-operation-id = \"{operation}\"\nparameters = {}\n\n",
            table(parameters, "query.")
        ));
    }
    for (operation, headers) in &overrides.headers {
        toml.push_str(&format!(
            "[[operations]]\ninclude-operation-id = \"{operation}\"\nheaders = {}\n\n",
            table(headers, "")
        ));
    }
    toml
}

/// Whether `path` (no query) is an instance of the template `template`.
fn matches(template: &str, path: &str) -> bool {
    let (t, p): (Vec<&str>, Vec<&str>) = (template.split('/').collect(), path.split('/').collect());
    t.len() == p.len()
        && t.iter()
            .zip(&p)
            .all(|(t, p)| (t.starts_with('{') && t.ends_with('}') && !p.is_empty()) || t == p)
}

/// The operation (`METHOD /template`) a request was for: among the templates it matches, the
/// one with the most literal segments (`/v2/replays/scenarios` before `/v2/replays/{id}`).
fn operation_of<'a>(
    templates: &'a [(String, String)],
    method: &str,
    path: &str,
) -> Option<&'a (String, String)> {
    templates
        .iter()
        .filter(|(m, t)| m.eq_ignore_ascii_case(method) && matches(t, path))
        .max_by_key(|(_, t)| t.split('/').filter(|s| !s.starts_with('{')).count())
}

/// Answers by operation from the HAR file: `(METHOD, template) -> (requests, 2xx answers)`.
fn answers_by_operation(doc: &Value, har: &Value) -> BTreeMap<(String, String), (usize, usize)> {
    let mut templates = Vec::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for method in item.as_object().unwrap().keys() {
            templates.push((method.to_uppercase(), path.clone()));
        }
    }
    let mut counts: BTreeMap<(String, String), (usize, usize)> =
        templates.iter().map(|o| (o.clone(), (0, 0))).collect();
    for entry in har["log"]["entries"].as_array().unwrap() {
        let method = entry["request"]["method"].as_str().unwrap_or_default();
        let url = entry["request"]["url"].as_str().unwrap_or_default();
        let path = url
            .split_once("://")
            .map_or(url, |(_, rest)| rest.find('/').map_or("/", |i| &rest[i..]));
        let path = path.split(['?', '#']).next().unwrap_or(path);
        let status = entry["response"]["status"].as_u64().unwrap_or(0);
        if let Some(operation) = operation_of(&templates, method, path) {
            let count = counts.get_mut(operation).unwrap();
            count.0 += 1;
            if (200..300).contains(&status) {
                count.1 += 1;
            }
        }
    }
    counts
}

#[test]
fn har_requests_are_counted_against_the_operation_they_were_for() {
    let doc = json!({"paths": {
        "/v2/replays/{id}": {"get": {}},
        "/v2/replays/scenarios": {"post": {}},
        "/v2/replays/scenarios/{id}": {"get": {}},
        "/cases/{case_id}/proposals/{proposal_id}/commit": {"post": {}},
    }});
    let entry = |method: &str, url: &str, status: u16| json!({"request": {"method": method, "url": url}, "response": {"status": status}});
    let har = json!({"log": {"entries": [
        entry("GET", "http://127.0.0.1:1/v2/replays/rpl-1?x=1", 200),
        entry("GET", "http://127.0.0.1:1/v2/replays/scenarios", 405),
        entry("GET", "http://127.0.0.1:1/v2/replays/scenarios/scn-1", 404),
        entry("POST", "http://127.0.0.1:1/v2/replays/scenarios", 201),
        entry("POST", "http://127.0.0.1:1/cases/c/proposals/p/commit", 500),
        entry("POST", "http://127.0.0.1:1/cases//proposals/p/commit", 201),
    ]}});
    let counts = answers_by_operation(&doc, &har);
    let get = |m: &str, p: &str| counts[&(m.to_string(), p.to_string())];
    // `GET /v2/replays/scenarios` is the replay `scenarios` as far as the paths go.
    assert_eq!(get("GET", "/v2/replays/{id}"), (2, 1));
    assert_eq!(get("GET", "/v2/replays/scenarios/{id}"), (1, 0));
    assert_eq!(get("POST", "/v2/replays/scenarios"), (1, 1));
    assert_eq!(
        get("POST", "/cases/{case_id}/proposals/{proposal_id}/commit"),
        (1, 0)
    );
}

#[test]
fn the_api_keeps_its_openapi_contract_under_generated_requests() {
    let Some(schemathesis) = schemathesis() else {
        assert!(
            std::env::var_os("CI").is_none(),
            "no Schemathesis: .ci/run installs it into .ci/venv"
        );
        eprintln!(
            "skipped: no Schemathesis (run .ci/run, or set TOLLGATE_TEST_SCHEMATHESIS to its binary)"
        );
        return;
    };
    let (gw, overrides) = gateway_with_the_example_store();
    let config_file = gw.dir.path().join("schemathesis.toml");
    std::fs::write(&config_file, config(&overrides)).unwrap();
    let reports = gw.dir.path().join("reports");
    let har_file = reports.join("requests.har");
    let seed = std::env::var("TOLLGATE_SCHEMATHESIS_SEED").unwrap_or_else(|_| "1".into());
    let started = std::time::Instant::now();
    let out = Command::new(&schemathesis)
        .current_dir(gw.dir.path())
        .args([
            "--config-file",
            config_file.to_str().unwrap(),
            "run",
            &format!("{}/openapi.json", gw.base),
            "--header",
            &format!("Authorization: Bearer {}", gw.token),
            "--checks",
            "all",
            "--exclude-checks",
            "positive_data_acceptance",
            "--max-examples",
            MAX_EXAMPLES,
            "--workers",
            "2",
            "--seed",
            &seed,
            "--request-timeout",
            "10",
            "--report",
            "har",
            "--report-har-path",
            har_file.to_str().unwrap(),
            "--no-color",
        ])
        .output()
        .expect("run schemathesis");
    let report = String::from_utf8_lossy(&out.stdout);
    if let Ok(keep) = std::env::var("TOLLGATE_SCHEMATHESIS_HAR") {
        let _ = std::fs::copy(&har_file, &keep);
    }
    assert!(
        out.status.success(),
        "Schemathesis found failures (seed {seed}):\n{report}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Every operation was tested: a document that lost its paths would pass vacuously.
    let (status, doc) = gw.call("GET", "/openapi.json", None);
    assert_eq!(status, 200);
    let operations: usize = doc["paths"]
        .as_object()
        .unwrap()
        .values()
        .map(|item| item.as_object().unwrap().len())
        .sum();
    assert!(
        report.contains(&format!("Tested: {operations}")),
        "not all {operations} operations were tested:\n{report}"
    );
    // Every operation answered 2xx at least once.
    let har: Value = serde_json::from_slice(&std::fs::read(&har_file).expect("the HAR report"))
        .expect("the HAR report is JSON");
    let counts = answers_by_operation(&doc, &har);
    let requests: usize = counts.values().map(|c| c.0).sum();
    let never: Vec<String> = counts
        .iter()
        .filter(|(_, (_, ok))| *ok == 0)
        .map(|((m, p), (n, _))| format!("{m} {p} ({n} requests)"))
        .filter(|o| {
            !NEVER_2XX_ALLOWED
                .iter()
                .any(|(a, _)| o.starts_with(&format!("{a} ")))
        })
        .collect();
    let answered = counts.values().filter(|c| c.1 > 0).count();
    eprintln!(
        "{answered} of {operations} operations answered 2xx; {requests} requests in {:.0?}",
        started.elapsed()
    );
    assert!(
        never.is_empty(),
        "{} operations never answered 2xx (seed {seed}):\n  {}\n{report}",
        never.len(),
        never.join("\n  ")
    );
    eprintln!(
        "{}",
        report.lines().rev().take(12).collect::<Vec<_>>().join("\n")
    );
}
