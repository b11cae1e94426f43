//! An example request for every operation (OpenAPI's `example` on each parameter and on the
//! JSON body): what a client can copy, and what Schemathesis's examples phase sends before it
//! generates anything. Each one is meant to succeed (2xx) on a gateway serving the fixture
//! envelopes (`fixtures/envelopes`), with the demo pack registered (`tollgate demo seed`,
//! `TOLLGATE_PACK_ROOTS=.tollgate/demo-packs/intake_review`) and this store: the fixture runs
//! (`fixtures/runs/01-…` and `03-…`), run 01 distilled, and what [`store`] lists, made through
//! the API — `tests/schemathesis.rs` sets it up and counts the operations that never answered
//! 2xx. So every id below is one that store holds.
//!
//! A case's id and a token's are random (chosen when it opens, when it is made), so no document
//! can name a stored one: those operations' examples name a well-formed id, and the test points
//! them at its own (the stateful phase also reaches them through the links from `GET /cases`,
//! `POST /packs/{engine_id}/{engine_version}/demo-case` and `POST /v1/tokens`).
//!
//! Deciding the held call's approval takes the token of the approver its rule names
//! (`team-lead`), and recording evidence the case's version (2 once it opened and collected),
//! so the test sends those two with what they need.
//!
//! Operations that consume what they act on (deciding an approval, finishing a run, promoting a
//! memory, committing a proposal) each have their own item, so that every example succeeds once
//! whatever order they run in.

use serde_json::{Value, json};

/// The ids of the store the examples are written for, and how `tests/schemathesis.rs` makes
/// each one.
pub(super) mod store {
    /// A finished fixture run (`fixtures/runs/01-bugfix-users-404.json`), distilled.
    pub const RUN: &str = "run-bugfix-users-404";
    /// Another finished fixture run (`fixtures/runs/03-flaky-webhook-retry.json`).
    pub const OTHER_RUN: &str = "run-flaky-webhook-retry";
    /// A running run, one step: `POST /v1/runs` with this id.
    pub const OPEN_RUN: &str = "run-example-open";
    /// A running run for `POST /v1/runs/{run_id}/finish` alone.
    pub const FINISHING_RUN: &str = "run-example-finishing";
    /// A held call's approval, pending: `shell.exec` with `{"command": "ls"}` and call id
    /// `call-example-held` asked on [`OPEN_RUN`] (the id is a hash of the three). The rule
    /// holding it names `team-lead` as its approver: deciding it takes that approver's token.
    pub const APPROVAL: &str = "apr-7d1b70ca6afbbe0f";
    /// A fixture envelope (version 2).
    pub const ENVELOPE: &str = "coding-agent";
    /// A distilled memory of [`RUN`], approved (read, used, given feedback). Distilling a run
    /// gives the same ids every time.
    pub const MEMORY: &str = "mem-ed29aa159d2a2bb3";
    /// A candidate of the same distillation, promoted by the example.
    pub const MEMORY_TO_PROMOTE: &str = "mem-257ca56d1810bb6d";
    /// Another candidate, expired by the example.
    pub const MEMORY_TO_EXPIRE: &str = "mem-300fc015d6a323c9";
    /// A handoff contract from [`OPEN_RUN`] to agent `reviewer`: `POST /v2/handoffs/contracts`
    /// with this id, then its consumer's run `run-example-consumer` opened with `"handoff"`
    /// naming it (checking a delivery needs it; opening it accepts the contract, and the
    /// check's example fulfils it).
    pub const CONTRACT: &str = "handoff-example";
    /// A contract from [`OPEN_RUN`] to agent `tester` that nobody has answered: answered and
    /// exported by the examples (a fulfilled contract is no longer handed over).
    pub const CONTRACT_TO_ANSWER: &str = "handoff-to-answer";
    /// A scenario on [`RUN`], named `without the shell rule`, rule `coding-agent/shell` disabled
    /// (its id is a hash of its spec).
    pub const SCENARIO: &str = "scn-796e957d59212ef6";
    /// Its first execution.
    pub const REPLAY: &str = "rpl-796e957d5921-1";
    /// A regression case from [`RUN`]: `POST /v2/regressions/from-run/{run_id}` with this id.
    pub const REGRESSION: &str = "reg-example";
    /// The first suite run, of [`REGRESSION`]: `POST /v2/regressions/suites/execute`.
    pub const SUITE: &str = "sui-1";
    /// The demo pack (`tollgate demo seed`).
    pub const PACK: (&str, &str) = ("intake_review", "0.1.0");
    /// A well-formed case id (no stored case has it: see the module's documentation).
    pub const CASE: &str = "case-0123456789abcdef";
}

/// One operation's example: its parameters by name and its JSON body.
struct Example {
    method: &'static str,
    path: &'static str,
    parameters: Vec<(&'static str, Value)>,
    body: Option<Value>,
}

fn example(
    method: &'static str,
    path: &'static str,
    parameters: Vec<(&'static str, Value)>,
    body: Option<Value>,
) -> Example {
    Example {
        method,
        path,
        parameters,
        body,
    }
}

/// Every operation's example.
fn examples() -> Vec<Example> {
    use store::*;
    let run = || vec![("run_id", json!(RUN))];
    let open = || vec![("run_id", json!(OPEN_RUN))];
    let case = || vec![("case_id", json!(CASE))];
    let proposal = || vec![("case_id", json!(CASE)), ("proposal_id", json!("prop-1"))];
    let id = |v: &str| vec![("id", json!(v))];
    // Sent as YAML: a client (Schemathesis too) writes the mapping out.
    let envelope = json!({"id": "example-envelope", "version": 1, "description": "An example.",
                          "tools": [{"id": "read", "effect": "allow", "tools": ["fs.read_file"]}]});
    vec![
        example("get", "/health", vec![], None),
        // Runs.
        example(
            "post",
            "/v1/runs",
            vec![],
            Some(json!({"agent": "coder", "task": "T-200",
                        "scope": "org:acme/repo:api/task:T-200", "clearance": "confidential"})),
        ),
        example(
            "get",
            "/v1/runs",
            vec![("agent", json!("coder")), ("limit", json!(20))],
            None,
        ),
        example("get", "/v1/runs/{run_id}", run(), None),
        example(
            "post",
            "/v1/runs/{run_id}/steps",
            open(),
            Some(json!({"name": "read the failing test"})),
        ),
        example(
            "post",
            "/v1/runs/{run_id}/events",
            open(),
            Some(
                json!({"events": [{"kind": "note", "payload": {"text": "the test fails on /users/7"}}]}),
            ),
        ),
        example(
            "post",
            "/v1/runs/{run_id}/compile",
            open(),
            Some(
                json!({"items": [{"id": "task", "kind": "message", "role": "user",
                                    "content": "Fix the 404 on /users/{id}.",
                                    "scope": "org:acme/repo:api/task:T-200",
                                    "sensitivity": "internal"}]}),
            ),
        ),
        example(
            "post",
            "/v1/runs/{run_id}/finish",
            vec![("run_id", json!(FINISHING_RUN))],
            Some(json!({"status": "succeeded"})),
        ),
        example(
            "post",
            "/v1/runs/{run_id}/repin",
            vec![("run_id", json!(OPEN_RUN)), ("dry_run", json!(true))],
            None,
        ),
        example(
            "post",
            "/v1/runs/{run_id}/tool-calls",
            open(),
            Some(json!({"tool": "fs.read_file", "arguments": {"path": "src/users.rs"}})),
        ),
        example(
            "get",
            "/v1/approvals",
            vec![("run", json!(OPEN_RUN)), ("state", json!("pending"))],
            None,
        ),
        example(
            "get",
            "/v1/approvals/{id}",
            vec![("id", json!(APPROVAL)), ("wait", json!(0))],
            None,
        ),
        example(
            "post",
            "/v1/chat/completions",
            vec![("X-Tollgate-Run", json!(OPEN_RUN))],
            Some(
                json!({"model": "gpt-4.1-mini", "messages": [{"role": "user", "content": "Why does /users/7 answer 404?"}]}),
            ),
        ),
        // Policies.
        example("get", "/v2/policies/envelopes", vec![], None),
        example("post", "/v2/policies/envelopes", vec![], Some(envelope)),
        example(
            "get",
            "/v2/policies/envelopes/{id}",
            vec![("id", json!(ENVELOPE)), ("version", json!(2))],
            None,
        ),
        example(
            "get",
            "/v2/policies/envelopes/{id}/diff",
            vec![
                ("id", json!(ENVELOPE)),
                ("from", json!(2)),
                ("to", json!(2)),
            ],
            None,
        ),
        example(
            "post",
            "/v2/policies/envelopes/{id}/simulate",
            id(ENVELOPE),
            Some(json!({"run_id": RUN})),
        ),
        example(
            "post",
            "/v2/policies/envelopes/{id}/repin",
            vec![("id", json!(ENVELOPE)), ("dry_run", json!(true))],
            None,
        ),
        example(
            "get",
            "/v2/policies/decisions/{run_id}",
            vec![("run_id", json!(RUN)), ("kind", json!("tool"))],
            None,
        ),
        example(
            "post",
            "/v2/policies/approvals/{id}",
            id(APPROVAL),
            Some(json!({"decision": "approve", "reason": "listing the repository is harmless"})),
        ),
        // Memory.
        example(
            "post",
            "/v2/memory/distill/run/{run_id}",
            vec![("run_id", json!(OTHER_RUN))],
            None,
        ),
        example(
            "get",
            "/v2/memory/search",
            vec![
                ("scope", json!("org:acme/repo:api")),
                ("clearance", json!("confidential")),
                ("limit", json!(10)),
            ],
            None,
        ),
        example("get", "/v2/memory/{id}", id(MEMORY), None),
        example("get", "/v2/memory/{id}/usage", id(MEMORY), None),
        example(
            "post",
            "/v2/memory/{id}/promote",
            id(MEMORY_TO_PROMOTE),
            Some(json!({"reason": "checked against the code", "pin": false})),
        ),
        example(
            "post",
            "/v2/memory/{id}/expire",
            id(MEMORY_TO_EXPIRE),
            Some(json!({"reason": "the module was rewritten"})),
        ),
        example(
            "post",
            "/v2/memory/{id}/feedback",
            id(MEMORY),
            Some(json!({"verdict": "helpful", "run": RUN})),
        ),
        // Replays.
        example(
            "post",
            "/v2/replays/scenarios",
            vec![],
            Some(json!({"run": RUN, "name": "without the shell rule",
                        "mutations": [{"kind": "disable_rule", "rule": "coding-agent/shell"}]})),
        ),
        example("get", "/v2/replays/scenarios/{id}", id(SCENARIO), None),
        example(
            "post",
            "/v2/replays/scenarios/{id}/execute",
            id(SCENARIO),
            None,
        ),
        example(
            "post",
            "/v2/replays/batches",
            vec![],
            Some(
                json!({"run": RUN, "mutations": [{"kind": "disable_rule", "rule": "coding-agent/shell"}]}),
            ),
        ),
        example(
            "get",
            "/v2/replays",
            vec![("run", json!(RUN)), ("limit", json!(20))],
            None,
        ),
        example("get", "/v2/replays/{id}", id(REPLAY), None),
        example("get", "/v2/replays/{id}/export", id(REPLAY), None),
        // Regressions.
        example(
            "post",
            "/v2/regressions/from-run/{run_id}",
            vec![("run_id", json!(OTHER_RUN))],
            Some(json!({"name": "webhook retries"})),
        ),
        example(
            "post",
            "/v2/regressions/from-replay/{replay_id}",
            vec![("replay_id", json!(REPLAY))],
            Some(json!({"name": "without the shell rule"})),
        ),
        example("get", "/v2/regressions", vec![], None),
        example("get", "/v2/regressions/{id}", id(REGRESSION), None),
        example(
            "post",
            "/v2/regressions/{id}/execute",
            vec![("id", json!(REGRESSION)), ("repeat", json!(1))],
            Some(json!({})),
        ),
        example(
            "post",
            "/v2/regressions/{id}/versions",
            id(REGRESSION),
            Some(json!({"reason": "the expectations hold", "regenerate": false})),
        ),
        example(
            "get",
            "/v2/regressions/{id}/history",
            vec![("id", json!(REGRESSION)), ("limit", json!(20))],
            None,
        ),
        example("get", "/v2/regressions/{id}/bundle", id(REGRESSION), None),
        example(
            "post",
            "/v2/regressions/suites/execute",
            vec![],
            Some(json!({"cases": [REGRESSION], "repeat": 1})),
        ),
        example("get", "/v2/regressions/suites/{id}", id(SUITE), None),
        // Handoffs.
        example("get", "/v2/handoffs/schema", vec![], None),
        example(
            "get",
            "/v2/handoffs/templates/{name}",
            vec![("name", json!("code_patch_review"))],
            None,
        ),
        example(
            "post",
            "/v2/handoffs/contracts",
            vec![],
            Some(
                json!({"schema": "tollgate.handoff/v1", "id": "handoff-example-2",
                        "producer": {"run": OPEN_RUN}, "consumer": {"agent": "reviewer"},
                        "goal": "Review the fix"}),
            ),
        ),
        example(
            "get",
            "/v2/handoffs/contracts",
            vec![("limit", json!(20))],
            None,
        ),
        example("get", "/v2/handoffs/contracts/{id}", id(CONTRACT), None),
        example(
            "post",
            "/v2/handoffs/contracts/{id}/ack",
            id(CONTRACT_TO_ANSWER),
            Some(json!({"response": "accept"})),
        ),
        example(
            "post",
            "/v2/handoffs/contracts/{id}/check",
            id(CONTRACT),
            None,
        ),
        example(
            "get",
            "/v2/handoffs/contracts/{id}/a2a",
            id(CONTRACT_TO_ANSWER),
            None,
        ),
        example(
            "post",
            "/v2/handoffs/a2a",
            vec![],
            Some(
                json!({"kind": "message", "role": "user", "messageId": "handoff-example-a2a@1",
                        "parts": [
                            {"kind": "text", "text": "Check the fix"},
                            {"kind": "data", "metadata": {"schema": "tollgate.handoff/v1"},
                             "data": {"schema": "tollgate.handoff/v1", "id": "handoff-example-a2a",
                                      "producer": {"run": OPEN_RUN}, "consumer": {"agent": "tester"},
                                      "goal": "Check the fix"}}]}),
            ),
        ),
        example(
            "get",
            "/v2/handoffs/graphs/{run_id}",
            vec![("run_id", json!(OPEN_RUN)), ("format", json!("json"))],
            None,
        ),
        // Cases.
        example(
            "get",
            "/cases",
            vec![("pack", json!(PACK.0)), ("limit", json!(20))],
            None,
        ),
        example(
            "post",
            "/cases",
            vec![],
            Some(json!({"engine_id": PACK.0, "engine_version": PACK.1,
                        "input": {"title": "Printer jammed", "body": "The third-floor printer jams.",
                                  "requester": "ops", "amount": 0}})),
        ),
        example("get", "/cases/{case_id}", case(), None),
        example(
            "get",
            "/cases/{case_id}/inspection",
            vec![("case_id", json!(CASE)), ("timeline_limit", json!(20))],
            None,
        ),
        example(
            "get",
            "/cases/{case_id}/timeline",
            vec![("case_id", json!(CASE)), ("limit", json!(20))],
            None,
        ),
        example("get", "/cases/{case_id}/graph", case(), None),
        example(
            "post",
            "/cases/{case_id}/evidence",
            case(),
            Some(json!({"expected_version": 2, "worker": "triage",
                        "evidence": {"urgency": "high"}})),
        ),
        example("get", "/cases/{case_id}/runtime", case(), None),
        example("post", "/cases/{case_id}/runtime/collect", case(), None),
        example("get", "/cases/{case_id}/proposals", case(), None),
        example(
            "post",
            "/cases/{case_id}/proposals",
            case(),
            Some(json!({"capability": "route_to_queue"})),
        ),
        example(
            "post",
            "/cases/{case_id}/proposals/{proposal_id}/preview",
            proposal(),
            None,
        ),
        example(
            "post",
            "/cases/{case_id}/proposals/{proposal_id}/policy",
            proposal(),
            None,
        ),
        example(
            "post",
            "/cases/{case_id}/proposals/{proposal_id}/approval",
            proposal(),
            Some(json!({"approve": true, "reason": "routine"})),
        ),
        example(
            "post",
            "/cases/{case_id}/proposals/{proposal_id}/commit",
            proposal(),
            Some(json!({"mode": "dry_run"})),
        ),
        example(
            "post",
            "/cases/{case_id}/model-runs",
            case(),
            Some(json!({"purpose": "a summary for the reviewer"})),
        ),
        example("get", "/cases/{case_id}/replay", case(), None),
        example("post", "/cases/{case_id}/replay", case(), None),
        example("get", "/packs", vec![], None),
        example(
            "post",
            "/packs/{engine_id}/{engine_version}/demo-case",
            vec![
                ("engine_id", json!(PACK.0)),
                ("engine_version", json!(PACK.1)),
            ],
            None,
        ),
        // MCP tool pins: `files.read_file`, whose definition changed (hash `bbbb…`).
        example("get", "/v1/mcp/pins", vec![("changed", json!(true))], None),
        example(
            "post",
            "/v1/mcp/pins/{tool}/accept",
            vec![("tool", json!("files.read_file"))],
            Some(json!({"hash": "bbbbbbbbbbbb"})),
        ),
        // Tokens.
        example(
            "post",
            "/v1/tokens",
            vec![],
            Some(json!({"kind": "approver", "name": "jane", "expires_in": "30d"})),
        ),
        example("get", "/v1/tokens", vec![], None),
        example(
            "post",
            "/v1/tokens/{id}/revoke",
            id("tok_0000000000000000"),
            None,
        ),
        example("get", "/v1/audit", vec![("limit", json!(20))], None),
    ]
}

/// Puts each example in the document (in its JSON form): `example` on each parameter it
/// names and on the body's first media type.
pub(super) fn add(doc: &mut Value) {
    for e in examples() {
        let at = format!(
            "/paths/{}/{}",
            e.path.replace('~', "~0").replace('/', "~1"),
            e.method
        );
        let Some(operation) = doc.pointer_mut(&at).and_then(Value::as_object_mut) else {
            continue;
        };
        if let Some(parameters) = operation
            .get_mut("parameters")
            .and_then(Value::as_array_mut)
        {
            for parameter in parameters.iter_mut().filter_map(Value::as_object_mut) {
                let name = parameter
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                if let Some((_, value)) = e.parameters.iter().find(|(n, _)| *n == name) {
                    parameter.insert("example".into(), value.clone());
                }
            }
        }
        if let Some(body) = e.body {
            let content = operation
                .get_mut("requestBody")
                .and_then(|b| b.get_mut("content"))
                .and_then(Value::as_object_mut);
            if let Some(media) = content
                .and_then(|c| c.values_mut().next())
                .and_then(Value::as_object_mut)
            {
                media.insert("example".into(), body);
            }
        }
    }
}

/// The operations of the document without an example: (method, path) of those with path or
/// query parameters or a body none of which has one.
#[cfg(test)]
fn without_examples(doc: &Value) -> Vec<String> {
    let mut missing = Vec::new();
    let known: Vec<(String, String)> = examples()
        .iter()
        .map(|e| (e.method.to_string(), e.path.to_string()))
        .collect();
    for (path, item) in doc["paths"].as_object().into_iter().flatten() {
        for method in item.as_object().into_iter().flat_map(serde_json::Map::keys) {
            if !known.contains(&(method.clone(), path.clone())) {
                missing.push(format!("{method} {path}"));
            }
        }
    }
    missing
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_operation_has_an_example_and_every_example_an_operation() {
        let doc = crate::http::openapi();
        assert_eq!(without_examples(&doc), Vec::<String>::new());
        for e in examples() {
            let at = format!("/paths/{}/{}", e.path.replace('/', "~1"), e.method);
            let operation = doc.pointer(&at);
            assert!(
                operation.is_some(),
                "an example of no operation: {} {}",
                e.method,
                e.path
            );
            let operation = operation.unwrap_or(&Value::Null);
            let names: Vec<&str> = operation["parameters"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|p| p["name"].as_str())
                .collect();
            for (name, _) in &e.parameters {
                assert!(
                    names.contains(name),
                    "{} {}: no parameter `{name}`",
                    e.method,
                    e.path
                );
            }
            // Every path parameter has its example.
            for p in operation["parameters"].as_array().into_iter().flatten() {
                if p["in"] == "path" || p["required"] == true {
                    assert!(
                        p.get("example").is_some(),
                        "{} {}: `{}` has no example",
                        e.method,
                        e.path,
                        p["name"]
                    );
                }
            }
            if let Some(body) = &e.body {
                let content = &operation["requestBody"]["content"];
                assert!(
                    content.is_object(),
                    "{} {}: a body example, and no body",
                    e.method,
                    e.path
                );
                let _ = body;
            }
        }
    }
}
