//! Who may do what (issue 32), end to end: separate agent, approver and admin credentials
//! against a running gateway. An agent cannot approve its own call, change an envelope, open
//! a run as another agent or beyond its credential's scope and clearance, or reach another
//! agent's run; every operation answers every kind as `/openapi.json` says.

use serde_json::{Value, json};

use super::support::Gateway;

/// A gateway with the fixture envelopes and a token of each kind: the `coder` agent (within
/// `org:acme`, cleared `internal`), the approver `team-lead` and an admin `ada`.
struct Team {
    gw: Gateway,
    coder: String,
    lead: String,
    admin: String,
}

fn team() -> Team {
    let gw = Gateway::with_fixture_envelopes();
    let coder = gw.create_token(&[
        "--kind",
        "agent",
        "--agent",
        "coder",
        "--max-scope",
        "org:acme",
        "--max-clearance",
        "internal",
    ]);
    let lead = gw.create_token(&["--kind", "approver", "--name", "team-lead"]);
    let admin = gw.create_token(&["--kind", "admin", "--name", "ada"]);
    Team {
        gw,
        coder,
        lead,
        admin,
    }
}

fn open(gw: &Gateway, token: &str, id: &str, agent: &str) -> (u16, Value) {
    gw.call_as(
        token,
        "POST",
        "/v1/runs",
        Some(&json!({"id": id, "agent": agent, "task": "T-12", "scope": "org:acme/repo:api"})),
    )
}

fn gated(gw: &Gateway, token: &str, run: &str) -> String {
    let (status, body) = gw.call_as(
        token,
        "POST",
        &format!("/v1/runs/{run}/tool-calls"),
        Some(&json!({"tool": "shell.exec", "call_id": "c1", "arguments": {"cmd": "make deploy"}})),
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["effect"], "require_approval", "{body}");
    body["approval"]["id"].as_str().unwrap().to_string()
}

fn code(body: &Value) -> &str {
    body["error"]["code"].as_str().unwrap_or("")
}

#[test]
fn an_agent_cannot_approve_its_own_call_and_no_one_approves_with_the_credential_that_opened_the_run()
 {
    let t = team();
    let gw = &t.gw;
    assert_eq!(open(gw, &t.coder, "own", "coder").0, 201);
    let id = gated(gw, &t.coder, "own");
    let path = format!("/v2/policies/approvals/{id}");
    // The agent's own credential reaches no approval route, whatever name the body gives.
    for body in [
        json!({"decision": "approve"}),
        json!({"decision": "approve", "by": "team-lead"}),
    ] {
        let (status, answer) = gw.call_as(&t.coder, "POST", &path, Some(&body));
        assert_eq!(status, 403, "{answer}");
        assert_eq!(code(&answer), "kind_not_admitted", "{answer}");
    }
    // Who approves is the credential's principal, never a body field.
    let (status, answer) = gw.call_as(
        &t.lead,
        "POST",
        &path,
        Some(&json!({"decision": "approve", "by": "someone-else"})),
    );
    assert_eq!(status, 422, "{answer}");
    // An approver named as the agent whose call it is may not approve it.
    let namesake = gw.create_token(&["--kind", "approver", "--name", "coder"]);
    let (status, answer) = gw.call_as(
        &namesake,
        "POST",
        &path,
        Some(&json!({"decision": "approve"})),
    );
    assert_eq!(status, 403, "{answer}");
    assert_eq!(code(&answer), "self_approval", "{answer}");
    let (_, pending) = gw.call_as(&t.coder, "GET", &format!("/v1/approvals/{id}"), None);
    assert_eq!(pending["state"], "pending", "{pending}");
    // The approver the rule names decides it.
    let (status, answer) = gw.call_as(
        &t.lead,
        "POST",
        &path,
        Some(&json!({"decision": "approve", "reason": "reviewed"})),
    );
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["decided_by"], "team-lead");
    let (status, used) = gw.call_as(
        &t.coder,
        "POST",
        "/v1/runs/own/tool-calls",
        Some(&json!({"tool": "shell.exec", "call_id": "c1", "arguments": {"cmd": "make deploy"}, "approval_id": id})),
    );
    assert_eq!(status, 200, "{used}");
    assert_eq!(used["effect"], "allow", "{used}");

    // An admin's credential that opened a run cannot approve that run's calls either: an
    // agent handed an admin token would otherwise approve itself.
    let lead_admin = gw.create_token(&["--kind", "admin", "--name", "team-lead"]);
    assert_eq!(open(gw, &lead_admin, "admin-run", "coder").0, 201);
    let id = gated(gw, &lead_admin, "admin-run");
    let (status, answer) = gw.call_as(
        &lead_admin,
        "POST",
        &format!("/v2/policies/approvals/{id}"),
        Some(&json!({"decision": "approve"})),
    );
    assert_eq!(status, 403, "{answer}");
    assert_eq!(code(&answer), "self_approval", "{answer}");

    // Every approver and admin action is logged with who did it.
    let (status, log) = gw.call_as(&t.admin, "GET", "/v1/audit", None);
    assert_eq!(status, 200, "{log}");
    let entries = log["entries"].as_array().unwrap();
    assert!(
        entries.iter().any(|e| e["name"] == "team-lead"
            && e["kind"] == "approver"
            && e["action"] == "POST"
            && e["target"] == path.as_str()
            && e["status"] == 200),
        "{log}"
    );
    assert!(
        entries
            .iter()
            .all(|e| e["kind"] != "agent" && e["principal"] != "owner"),
        "agents' actions are in their runs, not the audit log: {log}"
    );
}

#[test]
fn an_agent_cannot_change_an_envelope_mint_a_token_or_read_the_audit_log() {
    let t = team();
    let gw = &t.gw;
    // The red team's move: a new version of the envelope governing its own run, allowing all.
    let envelope = json!({"id": "coding-agent", "version": 3, "attach": {"agents": ["coder"]},
                          "tools": [{"effect": "allow", "tools": ["*"]}]});
    let (status, answer) = gw.call_as(&t.coder, "POST", "/v2/policies/envelopes", Some(&envelope));
    assert_eq!(status, 403, "{answer}");
    assert_eq!(code(&answer), "kind_not_admitted", "{answer}");
    let (status, _) = gw.call_as(&t.lead, "POST", "/v2/policies/envelopes", Some(&envelope));
    assert_eq!(
        status, 403,
        "approvers read envelopes, they do not write them"
    );
    let (status, answer) = gw.call_as(
        &t.coder,
        "POST",
        "/v1/tokens",
        Some(&json!({"kind": "admin", "name": "me"})),
    );
    assert_eq!(status, 403, "{answer}");
    for path in ["/v1/tokens", "/v1/audit"] {
        assert_eq!(gw.call_as(&t.coder, "GET", path, None).0, 403, "{path}");
    }
    // An admin mints one over HTTP; it is shown once and listed without its secret.
    let (status, made) = gw.call_as(
        &t.admin,
        "POST",
        "/v1/tokens",
        Some(&json!({"kind": "agent", "name": "reviewer", "max_clearance": "public", "expires_in": "1d"})),
    );
    assert_eq!(status, 201, "{made}");
    let text = made["token"].as_str().unwrap();
    let (_, listed) = gw.call_as(&t.admin, "GET", "/v1/tokens", None);
    assert!(!listed.to_string().contains(text), "{listed}");
    assert_eq!(open(gw, text, "rev-1", "reviewer").0, 201);
}

#[test]
fn an_agent_credential_fixes_the_agent_and_bounds_scope_and_clearance() {
    let t = team();
    let gw = &t.gw;
    let cases = [
        (
            json!({"agent": "deployer", "task": "t", "scope": "org:acme"}),
            "other_agent",
        ),
        (
            json!({"agent": "coder", "task": "t", "scope": "org:other"}),
            "outside_scope",
        ),
        (
            json!({"agent": "coder", "task": "t", "scope": "org:acme-evil"}),
            "outside_scope",
        ),
        (
            json!({"agent": "coder", "task": "t", "scope": "org:acme/../org:other"}),
            "outside_scope",
        ),
        (
            json!({"agent": "coder", "task": "t", "scope": "org:acme", "clearance": "secret"}),
            "above_clearance",
        ),
        // Choosing its own policy: an agent with no envelope of its own would take another's.
        (
            json!({"agent": "coder", "task": "t", "scope": "org:acme", "envelopes": ["org-baseline"]}),
            "attaches_envelopes",
        ),
    ];
    for (body, expected) in cases {
        let (status, answer) = gw.call_as(&t.coder, "POST", "/v1/runs", Some(&body));
        assert_eq!(status, 403, "{body}: {answer}");
        assert_eq!(code(&answer), expected, "{body}: {answer}");
    }
    // What the gateway writes into a run's metadata cannot be given (issue 32, hole 8: an
    // unknown envelope attached through `metadata.attached_envelopes`), by anyone.
    for key in ["attached_envelopes", "handoff", "opened_by"] {
        for token in [&t.coder, &t.admin] {
            let body = json!({"agent": "coder", "task": "t", "scope": "org:acme",
                              "metadata": {key: ["no-such-envelope"]}});
            let (status, answer) = gw.call_as(token, "POST", "/v1/runs", Some(&body));
            assert_eq!(status, 422, "{key}: {answer}");
        }
    }
    assert_eq!(gw.count("runs"), 0, "a refused open writes nothing");
    let (status, run) = gw.call_as(
        &t.coder,
        "POST",
        "/v1/runs",
        Some(&json!({"id": "fine", "agent": "coder", "task": "t", "scope": "org:acme/repo:api", "clearance": "internal"})),
    );
    assert_eq!(status, 201, "{run}");
    assert_eq!(run["run"]["clearance"], "internal");
    assert!(
        run["run"]["metadata"]["opened_by"]
            .as_str()
            .unwrap()
            .starts_with("tok_"),
        "{run}"
    );
}

#[test]
fn an_agent_reaches_only_its_own_runs() {
    let t = team();
    let gw = &t.gw;
    let reviewer = gw.create_token(&["--kind", "agent", "--agent", "reviewer"]);
    assert_eq!(open(gw, &reviewer, "theirs", "reviewer").0, 201);
    let (status, _) = gw.call_as(
        &reviewer,
        "POST",
        "/v1/runs/theirs/tool-calls",
        Some(&json!({"tool": "fs.read_file", "call_id": "r1", "arguments": {"path": "README.md"}})),
    );
    assert_eq!(status, 200);
    let posts = [
        (
            "/v1/runs/theirs/tool-calls",
            json!({"tool": "fs.read_file", "arguments": {"path": "a"}}),
        ),
        (
            "/v1/runs/theirs/events",
            json!({"events": [{"kind": "note", "payload": {"text": "mine now"}}]}),
        ),
        ("/v1/runs/theirs/steps", json!({"name": "hijack"})),
        ("/v1/runs/theirs/compile", json!({"items": []})),
        ("/v1/runs/theirs/finish", json!({"status": "failed"})),
    ];
    for (path, body) in posts {
        let (status, answer) = gw.call_as(&t.coder, "POST", path, Some(&body));
        assert_eq!(status, 403, "{path}: {answer}");
        assert_eq!(code(&answer), "not_own_run", "{path}: {answer}");
    }
    for path in [
        "/v1/runs/theirs",
        "/v2/policies/decisions/theirs",
        "/v1/approvals?run=theirs",
    ] {
        let (status, answer) = gw.call_as(&t.coder, "GET", path, None);
        assert_eq!(status, 403, "{path}: {answer}");
    }
    let (status, answer) = gw.call_with(
        "POST",
        "/v1/chat/completions",
        Some(&json!({"model": "gpt-4.1-mini", "messages": [{"role": "user", "content": "hi"}]})),
        &[
            ("Authorization", &format!("Bearer {}", t.coder)),
            ("X-Tollgate-Run", "theirs"),
        ],
    );
    assert_eq!(status, 403, "{answer}");
    assert_eq!(code(&answer), "not_own_run", "{answer}");
    // The run is as its agent left it: one call, still running.
    let (_, run) = gw.call_as(&reviewer, "GET", "/v1/runs/theirs", None);
    assert_eq!(run["run"]["status"], "running", "{run}");
    assert_eq!(run["summary"]["events"], 2, "{run}");
    // Another agent's approvals are not listed, nor readable.
    assert_eq!(open(gw, &reviewer, "theirs-2", "reviewer").0, 201);
    let (status, gate) = gw.call_as(
        &reviewer,
        "POST",
        "/v1/runs/theirs-2/tool-calls",
        Some(&json!({"tool": "shell.exec", "arguments": {"cmd": "ls"}})),
    );
    assert_eq!(status, 200, "{gate}");
    let id = gate["approval"]["id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    if !id.is_empty() {
        let (status, _) = gw.call_as(&t.coder, "GET", &format!("/v1/approvals/{id}"), None);
        assert_eq!(status, 404);
        let (_, listed) = gw.call_as(&t.coder, "GET", "/v1/approvals", None);
        assert_eq!(listed["approvals"], json!([]), "{listed}");
        let (_, listed) = gw.call_as(&reviewer, "GET", "/v1/approvals", None);
        assert_eq!(listed["approvals"].as_array().unwrap().len(), 1, "{listed}");
    }
}

#[test]
fn a_revoked_or_expired_token_is_refused_at_once() {
    let t = team();
    let gw = &t.gw;
    assert_eq!(gw.call_as(&t.lead, "GET", "/v1/approvals", None).0, 200);
    let listed = gw.tollgate(&["tokens", "list", "--json"]);
    let tokens: Value = serde_json::from_slice(&listed.stdout).unwrap();
    let id = tokens
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "team-lead")
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let out = gw.tollgate(&["tokens", "revoke", &id]);
    assert!(out.status.success());
    // Revoked by another process on the same store: refused at the next request.
    let (status, answer) = gw.call_as(&t.lead, "GET", "/v1/approvals", None);
    assert_eq!(status, 401, "{answer}");
    // Four seconds leave a loaded machine time for the first call; the second comes after.
    let brief = gw.create_token(&["--kind", "approver", "--name", "temp", "--expires", "4s"]);
    let made = std::time::Instant::now();
    assert_eq!(gw.call_as(&brief, "GET", "/v1/approvals", None).0, 200);
    std::thread::sleep(std::time::Duration::from_millis(4_500).saturating_sub(made.elapsed()));
    assert_eq!(gw.call_as(&brief, "GET", "/v1/approvals", None).0, 401);
    // A guess with a real token's id and another secret is refused too.
    let last = if t.coder.ends_with('0') { '1' } else { '0' };
    let forged = format!("{}{last}", &t.coder[..t.coder.len() - 1]);
    assert_eq!(gw.call_as(&forged, "GET", "/v1/approvals", None).0, 401);
}

/// Every operation of the document, called with every kind: a kind it does not admit gets
/// 403 `kind_not_admitted`; a kind it admits never does.
#[test]
fn every_operation_answers_every_kind_as_the_document_says() {
    let t = team();
    let gw = &t.gw;
    let (status, doc) = gw.call_as(&t.admin, "GET", "/openapi.json", None);
    assert_eq!(status, 200);
    let kinds = [
        ("agent", &t.coder),
        ("approver", &t.lead),
        ("admin", &t.admin),
    ];
    // Every error answered below carries a code of the one table, as the document lists it.
    let codes: Vec<&str> = doc
        .pointer("/components/schemas/ErrorDetail/properties/code/enum")
        .and_then(Value::as_array)
        .expect("the document enumerates the error codes")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let mut checked = 0;
    for (template, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            let Some(admits) = op.get("x-tollgate-kinds").and_then(Value::as_array) else {
                panic!("{method} {template} states no kinds");
            };
            let path = template
                .split('/')
                .map(|seg| if seg.starts_with('{') { "x-none" } else { seg })
                .collect::<Vec<_>>()
                .join("/");
            let body = (method == "post").then(|| json!({}));
            for (kind, token) in kinds {
                let (status, answer) =
                    gw.call_as(token, &method.to_uppercase(), &path, body.as_ref());
                if status >= 400 {
                    assert!(
                        codes.contains(&code(&answer)),
                        "{method} {template} as {kind}: {status} {answer}: its code is not in the table"
                    );
                }
                let refused = status == 403 && code(&answer) == "kind_not_admitted";
                let admitted = admits.iter().any(|k| k == kind);
                assert_eq!(
                    refused, !admitted,
                    "{method} {template} as {kind}: {status} {answer}"
                );
                checked += 1;
            }
        }
    }
    assert!(checked > 200, "{checked}");
}

#[test]
fn a_runs_clearance_is_the_lowest_of_what_it_asked_its_credential_and_its_envelopes() {
    let t = team();
    let gw = &t.gw;
    let envelope = json!({"id": "capped", "version": 1, "attach": {"agents": ["coder"]},
                          "max_clearance": "public", "tools": [{"effect": "allow", "tools": ["*"]}]});
    let (status, stored) = gw.call_as(&t.admin, "POST", "/v2/policies/envelopes", Some(&envelope));
    assert!(status == 200 || status == 201, "{stored}");
    // The credential allows `internal`, the run asks for it, an envelope caps it at `public`.
    let (status, run) = gw.call_as(
        &t.coder,
        "POST",
        "/v1/runs",
        Some(&json!({"id": "capped-run", "agent": "coder", "task": "t", "scope": "org:acme", "clearance": "internal"})),
    );
    assert_eq!(status, 201, "{run}");
    assert_eq!(run["run"]["clearance"], "public", "{run}");
}

#[test]
fn an_agent_hands_off_only_from_its_own_runs_and_answers_only_what_is_handed_to_it() {
    let t = team();
    let gw = &t.gw;
    let executor = gw.create_token(&["--kind", "agent", "--agent", "executor"]);
    let (status, run) = gw.call_as(
        &t.coder,
        "POST",
        "/v1/runs",
        Some(
            &json!({"id": "planner-run", "agent": "coder", "task": "T-1",
                     "scope": "org:acme/repo:api", "clearance": "internal"}),
        ),
    );
    assert_eq!(status, 201, "{run}");
    let contract = json!({
        "id": "plan-1",
        "template": "planner_to_executor",
        "producer": {"run": "planner-run"},
        "consumer": {"agent": "executor"},
        "goal": {"objective": "Add a per-client rate limit", "expected_output": "a patch"},
        "evidence": [{"item": "doc-ticket-T-1", "scope": "org:acme/repo:api", "sensitivity": "internal"}],
        "constraints": {"hard_rules": ["no new crates"]},
        "required_outputs": ["patch", "test_report"],
        "success_criteria": ["cargo test passes"]
    });
    // The consumer cannot post a contract in the producer's name (its run is not its own).
    let (status, answer) = gw.call_as(&executor, "POST", "/v2/handoffs/contracts", Some(&contract));
    assert_eq!(status, 403, "{answer}");
    assert_eq!(code(&answer), "not_a_party", "{answer}");
    let (status, posted) = gw.call_as(&t.coder, "POST", "/v2/handoffs/contracts", Some(&contract));
    assert_eq!(status, 201, "{posted}");
    // Only the consumer answers it.
    let ack = json!({"response": "accept"});
    let (status, answer) = gw.call_as(
        &t.coder,
        "POST",
        "/v2/handoffs/contracts/plan-1/ack",
        Some(&ack),
    );
    assert_eq!(status, 403, "{answer}");
    assert_eq!(code(&answer), "not_a_party", "{answer}");
    let (status, answer) = gw.call_as(
        &executor,
        "POST",
        "/v2/handoffs/contracts/plan-1/ack",
        Some(&ack),
    );
    assert_eq!(status, 200, "{answer}");
    // A third agent is no party at all.
    let stranger = gw.create_token(&["--kind", "agent", "--agent", "stranger"]);
    let (status, _) = gw.call_as(&stranger, "GET", "/v2/handoffs/contracts/plan-1/a2a", None);
    assert_eq!(status, 403);
    let (status, _) = gw.call_as(&executor, "GET", "/v2/handoffs/contracts/plan-1/a2a", None);
    assert_eq!(status, 200);
}
