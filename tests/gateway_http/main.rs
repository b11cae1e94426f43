//! End-to-end tests of the gateway's front door: `tollgate serve` on a free port, talked to
//! over loopback HTTP.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../support/mod.rs"]
mod support;

mod enforcement;
mod guide;
mod jwt;
mod limits;
mod links;
mod new_user;
mod pins;
mod principals;
mod replay;
mod streaming;
mod tokens;

use serde_json::json;
use support::Gateway;

#[test]
fn health_needs_no_token_and_everything_else_does() {
    let gw = Gateway::start();
    let (status, body) = gw.call_with("GET", "/health", None, &[]);
    assert_eq!(status, 200);
    assert_eq!(body["status"], "ok");
    let (status, body) = gw.call_with("GET", "/v1/runs/x", None, &[]);
    assert_eq!(status, 401, "{body}");
    assert_eq!(body["error"]["code"], "unauthorized");
    let (status, _) = gw.call_with(
        "GET",
        "/v1/runs/x",
        None,
        &[("Authorization", "Bearer wrong")],
    );
    assert_eq!(status, 401);
    let (status, body) = gw.call("GET", "/no/such/route", None);
    assert_eq!(status, 404);
    assert_eq!(body["error"]["code"], "not_found");
}

#[test]
fn foreign_origins_and_hosts_are_refused() {
    let gw = Gateway::start();
    let auth = format!("Bearer {}", gw.token);
    let (status, body) = gw.call_with(
        "GET",
        "/health",
        None,
        &[("Origin", "http://evil.example"), ("Authorization", &auth)],
    );
    assert_eq!(status, 403, "{body}");
    assert_eq!(body["error"]["code"], "foreign_origin");
    let (status, body) = gw.call_with("GET", "/health", None, &[("Host", "evil.example:8000")]);
    assert_eq!(status, 403, "{body}");
    assert_eq!(body["error"]["code"], "foreign_host");
    let port = gw.base.rsplit(':').next().unwrap();
    let own = format!("http://localhost:{port}");
    let (status, _) = gw.call_with("GET", "/health", None, &[("Origin", own.as_str())]);
    assert_eq!(status, 200);
}

#[test]
fn refused_requests_write_nothing() {
    let gw = Gateway::with_fixture_envelopes();
    let auth = format!("Bearer {}", gw.token);
    let open = r#"{"agent":"coder","task":"T-1","scope":"org:acme"}"#;
    let (status, _) = gw.raw("POST", "/v1/runs", Some(open.into()), &[]);
    assert_eq!(status, 401);
    let (status, _) = gw.raw(
        "POST",
        "/v1/runs",
        Some(open.into()),
        &[("Authorization", &auth), ("Origin", "http://evil.example")],
    );
    assert_eq!(status, 403);
    let (status, text) = gw.raw(
        "POST",
        "/v1/runs",
        Some(r#"{"agent": "coder", "task": }"#.into()),
        &[("Authorization", &auth)],
    );
    assert_eq!(status, 400, "{text}");
    assert!(
        text.contains("malformed_json") && text.contains("line 1"),
        "{text}"
    );
    let (status, text) = gw.raw(
        "POST",
        "/v1/runs",
        Some(r#"{"agent": "coder"}"#.into()),
        &[("Authorization", &auth)],
    );
    assert_eq!(status, 422, "{text}");
    assert!(text.contains("task"), "{text}");
    assert!(limits::head_only(&gw, 3 << 20).starts_with("HTTP/1.1 413"));
    assert_eq!(gw.count("runs"), 0);
    assert_eq!(gw.count("events"), 0);
    // An invalid envelope is refused whole, with its line and column, and stores nothing.
    let versions = gw.count("envelope_versions");
    let (status, text) = gw.raw(
        "POST",
        "/v2/policies/envelopes",
        Some("id: broken\nversion: 1\ntools:\n  - effect: allow\n    tool: [\"x\"]\n".into()),
        &[
            ("Authorization", &auth),
            ("Content-Type", "application/yaml"),
        ],
    );
    assert_eq!(status, 422, "{text}");
    let body: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(body["error"]["code"], "invalid_envelope");
    assert_eq!(body["error"]["details"][0]["line"], 5, "{body}");
    assert_eq!(gw.count("envelope_versions"), versions);
}

fn open_run(gw: &Gateway, id: &str) {
    let (status, body) = gw.call(
        "POST",
        "/v1/runs",
        Some(&json!({"id": id, "agent": "coder", "task": "T-12",
                     "scope": "org:acme/repo:api/task:T-12", "clearance": "confidential"})),
    );
    assert_eq!(status, 201, "{body}");
    assert_eq!(
        body["governing"],
        json!(["coding-agent@2", "org-baseline@1"])
    );
}

/// Schemathesis found a taken run id answered 422 `invalid_record`, where the document says 409.
#[test]
fn opening_a_run_whose_id_is_taken_is_a_conflict() {
    let gw = Gateway::with_fixture_envelopes();
    open_run(&gw, "taken-1");
    let (status, body) = gw.call(
        "POST",
        "/v1/runs",
        Some(&json!({"id": "taken-1", "agent": "coder", "task": "T-13", "scope": "org:acme"})),
    );
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["error"]["code"], "conflict", "{body}");
}

/// Schemathesis found `[null, null]` accepted as a case request: serde reads a struct from an
/// array, field by field. A body that is an array is refused and opens nothing.
#[test]
fn a_body_that_is_an_array_is_refused_not_read_field_by_field() {
    let gw = Gateway::with_fixture_envelopes();
    let (status, body) = gw.call(
        "POST",
        "/v1/runs",
        Some(&json!(["array-1", "coder", "T-1", "org:acme"])),
    );
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["error"]["code"], "invalid_body", "{body}");
    let (status, _) = gw.call("GET", "/v1/runs/array-1", None);
    assert_eq!(status, 404);
}

fn tool(gw: &Gateway, run: &str, body: serde_json::Value) -> serde_json::Value {
    let (status, answer) = gw.call("POST", &format!("/v1/runs/{run}/tool-calls"), Some(&body));
    assert_eq!(status, 200, "{answer}");
    answer
}

#[test]
fn a_denied_tool_a_redacted_secret_and_an_approved_call_are_in_the_decisions() {
    let gw = Gateway::with_fixture_envelopes();
    open_run(&gw, "e2e-1");
    let denied = tool(
        &gw,
        "e2e-1",
        json!({"tool": "shell.rm", "arguments": {"path": "/"}}),
    );
    assert_eq!(denied["effect"], "deny");
    assert_eq!(denied["execute"], false);
    assert_eq!(denied["rules"], json!(["org-baseline/no-rm"]));
    // The answer carries the receipt's decision; its proof is rendered when read.
    assert!(denied["decision"]["proof"].is_null(), "{denied}");
    assert!(
        denied["decision"]["on_read"]["program"].is_string(),
        "{denied}"
    );

    // Asked with `explain=true`, the answer carries the proof and the why-not.
    let (status, default_denied) = gw.call(
        "POST",
        "/v1/runs/e2e-1/tool-calls?explain=true",
        Some(&json!({"tool": "net.upload"})),
    );
    assert_eq!(status, 200, "{default_denied}");
    assert_eq!(default_denied["effect"], "deny");
    assert!(default_denied["decision"]["proof"].is_object());
    assert!(
        !default_denied["decision"]["why_not"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    // Read back, the receipt renders to exactly that decision.
    let seq = default_denied["receipt"]["seq"].as_u64().unwrap();
    let (status, read) = gw.call(
        "GET",
        &format!("/v2/policies/decisions/e2e-1?seq={seq}"),
        None,
    );
    assert_eq!(status, 200, "{read}");
    assert_eq!(
        read["decisions"][0]["decision"], default_denied["decision"],
        "{read}"
    );
    let (_, raw) = gw.call(
        "GET",
        &format!("/v2/policies/decisions/e2e-1?seq={seq}&raw=true"),
        None,
    );
    assert!(
        raw["decisions"][0]["decision"]["why_not"].is_null(),
        "{raw}"
    );
    // The CLI renders the same receipt from the store.
    let out = gw.tollgate(&["runs", "explain", "e2e-1", &seq.to_string(), "--json"]);
    assert!(out.status.success(), "{}", support::stderr(&out));
    let cli: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(cli, default_denied["decision"]);
    let out = gw.tollgate(&["runs", "explain", "e2e-1", &seq.to_string()]);
    assert!(
        support::stdout(&out).contains("why not allowed:"),
        "{}",
        support::stdout(&out)
    );
    // The event before it records the call, not a decision: said, with where to look.
    let out = gw.tollgate(&["runs", "explain", "e2e-1", &(seq - 1).to_string()]);
    assert!(!out.status.success());
    assert!(
        support::stderr(&out).contains("not a decision"),
        "{}",
        support::stderr(&out)
    );

    let (status, chat) = gw.call_with(
        "POST",
        "/v1/chat/completions",
        Some(&json!({"model": "gpt-4.1-mini", "messages": [
            {"role": "user", "content": "the key is AKIAPYDATUTGFKRXITKP, deploy"}]})),
        &[
            ("Authorization", &format!("Bearer {}", gw.token)),
            ("X-Tollgate-Run", "e2e-1"),
        ],
    );
    assert_eq!(status, 200, "{chat}");
    let said = chat["choices"][0]["message"]["content"].as_str().unwrap();
    assert!(!said.contains("AKIA"), "{said}");
    assert!(
        said.contains("[REDACTED:org-baseline/secrets-redacted]"),
        "{said}"
    );

    let gated = tool(
        &gw,
        "e2e-1",
        json!({"tool": "shell.exec", "arguments": {"cmd": "make test"}}),
    );
    assert_eq!(gated["effect"], "require_approval");
    let id = gated["approval"]["id"].as_str().unwrap().to_string();
    // Who approves is the approver's credential: an approver the rule does not name is refused.
    let intern = gw.create_token(&["--kind", "approver", "--name", "intern"]);
    let lead = gw.create_token(&["--kind", "approver", "--name", "team-lead"]);
    let (status, body) = gw.call_as(
        &intern,
        "POST",
        &format!("/v2/policies/approvals/{id}"),
        Some(&json!({"decision": "approve"})),
    );
    assert_eq!(status, 403, "{body}");
    let (status, body) = gw.call_as(
        &lead,
        "POST",
        &format!("/v2/policies/approvals/{id}"),
        Some(&json!({"decision": "approve", "reason": "tests only"})),
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["state"], "approved");
    let (status, body) = gw.call_as(
        &lead,
        "POST",
        &format!("/v2/policies/approvals/{id}"),
        Some(&json!({"decision": "reject"})),
    );
    assert_eq!(status, 409, "{body}");
    let mismatch = gw.call(
        "POST",
        "/v1/runs/e2e-1/tool-calls",
        Some(
            &json!({"tool": "shell.exec", "arguments": {"cmd": "make deploy"}, "approval_id": id}),
        ),
    );
    assert_eq!(mismatch.0, 409, "{}", mismatch.1);
    let approved = tool(
        &gw,
        "e2e-1",
        json!({"tool": "shell.exec", "arguments": {"cmd": "make test"}, "approval_id": id}),
    );
    assert_eq!(approved["effect"], "allow", "{approved}");
    assert_eq!(approved["execute"], true);

    let (status, all) = gw.call("GET", "/v2/policies/decisions/e2e-1", None);
    assert_eq!(status, 200);
    let decisions = all["decisions"].as_array().unwrap();
    let find = |kind: &str, effect: &str| {
        decisions
            .iter()
            .find(|d| d["kind"] == kind && d["effect"] == effect)
            .unwrap_or_else(|| panic!("no {kind} {effect} in {all}"))
    };
    let deny = find("tool", "deny");
    assert_eq!(deny["rules"], json!(["org-baseline/no-rm"]));
    for d in [deny, find("context", "redact"), find("tool", "allow")] {
        assert!(d["decision"]["proof"].is_object(), "{d}");
        assert_eq!(
            d["decision"]["envelope_versions"],
            json!(["coding-agent@2", "org-baseline@1"])
        );
        assert_eq!(d["decision"]["input_hash"].as_str().unwrap().len(), 64);
    }
    assert!(
        find("tool", "allow")["reason"]
            .as_str()
            .unwrap()
            .contains("approved by team-lead")
    );
    let (_, redacted) = gw.call("GET", "/v2/policies/decisions/e2e-1?effect=redact", None);
    assert_eq!(redacted["decisions"].as_array().unwrap().len(), 1);
    let (status, _) = gw.call("GET", "/v2/policies/decisions/e2e-1?effect=maybe", None);
    assert_eq!(status, 422);
    // The recorded run holds no secret and its chain is intact.
    let out = gw.tollgate(&["runs", "export", "e2e-1"]);
    assert!(!String::from_utf8_lossy(&out.stdout).contains("AKIAPYDATUTGFKRXITKP"));
    let verify = gw.tollgate(&["runs", "verify", "e2e-1"]);
    assert!(verify.status.success(), "{}", support::stdout(&verify));
}

#[test]
fn a_long_poll_returns_when_the_cli_approves() {
    let gw = Gateway::with_fixture_envelopes();
    open_run(&gw, "e2e-poll");
    let gated = tool(
        &gw,
        "e2e-poll",
        json!({"tool": "fs.write_file", "arguments": {"path": "src/a.rs"}}),
    );
    let id = gated["approval"]["id"].as_str().unwrap().to_string();
    let started = std::time::Instant::now();
    let (base, token, path) = (
        gw.base.clone(),
        gw.token.clone(),
        format!("/v1/approvals/{id}?wait=20"),
    );
    let waiter = std::thread::spawn(move || {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .build()
            .into();
        let mut resp = agent
            .get(format!("{base}{path}"))
            .header("Authorization", format!("Bearer {token}"))
            .call()
            .unwrap();
        let text = resp.body_mut().read_to_string().unwrap();
        serde_json::from_str::<serde_json::Value>(&text).unwrap()
    });
    std::thread::sleep(std::time::Duration::from_millis(500));
    let out = gw.tollgate(&["approvals", "approve", &id, "--by", "team-lead"]);
    assert!(out.status.success(), "{}", support::stderr(&out));
    let answered = waiter.join().unwrap();
    assert_eq!(answered["state"], "approved", "{answered}");
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    let listed = gw.tollgate(&["approvals", "list", "--state", "all", "--json"]);
    let list: serde_json::Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(list[0]["decided_by"], "team-lead");
    // The audit log keeps who ran the command and whom it named.
    let audit = gw.tollgate(&["audit", "--json"]);
    let entries: serde_json::Value = serde_json::from_slice(&audit.stdout).unwrap();
    assert_eq!(
        entries[0]["action"], "approvals approve --by team-lead",
        "{entries}"
    );
    assert_eq!(entries[0]["kind"], "admin", "{entries}");
    assert!(
        entries[0]["principal"]
            .as_str()
            .unwrap()
            .starts_with("local:"),
        "{entries}"
    );
}

#[test]
fn envelopes_are_versioned_over_http_and_simulated_on_a_recorded_run() {
    let gw = Gateway::with_fixture_envelopes();
    let fixture = support::root().join("fixtures/runs/01-bugfix-users-404.json");
    let out = gw.tollgate(&["runs", "import", fixture.to_str().unwrap()]);
    assert!(out.status.success(), "{}", support::stderr(&out));
    let v3 = std::fs::read_to_string(
        support::root().join("fixtures/envelopes/diff/coding-agent.v3.yaml"),
    )
    .unwrap();

    // Dry run first: nothing stored, nothing enforced.
    let (status, sim) = gw.call(
        "POST",
        "/v2/policies/envelopes/coding-agent/simulate",
        Some(&json!({"run_id": "run-bugfix-users-404", "envelope": v3})),
    );
    assert_eq!(status, 200, "{sim}");
    assert_eq!(sim["candidates"], json!(["coding-agent@3"]));
    assert_eq!(sim["replaces"], json!(["coding-agent@2"]));
    assert!(sim["changed"].as_u64().unwrap() > 0, "{sim}");
    let changed: Vec<&serde_json::Value> = sim["decisions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["changed"] == true)
        .collect();
    assert!(changed.iter().all(|d| d["receipt"]["rules"].is_array()));
    assert_eq!(gw.count("envelope_versions"), 2);

    // Then store it: a new version, with the rules that changed.
    let (status, stored) = gw.raw(
        "POST",
        "/v2/policies/envelopes",
        Some(v3.clone()),
        &[
            ("Authorization", &format!("Bearer {}", gw.token)),
            ("Content-Type", "application/yaml"),
        ],
    );
    assert_eq!(status, 201, "{stored}");
    let stored: serde_json::Value = serde_json::from_str(&stored).unwrap();
    assert_eq!(stored["stored"][0]["version"]["version"], 3);
    assert!(
        !stored["changes"]["envelopes"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    let (status, diff) = gw.call(
        "GET",
        "/v2/policies/envelopes/coding-agent/diff?from=2",
        None,
    );
    assert_eq!(status, 200, "{diff}");
    assert_eq!(diff["from"], "coding-agent@2");
    assert_eq!(diff["to"], "coding-agent@3");
    // The same content again is not a new version; a change under the same number is refused.
    let (status, _) = gw.raw(
        "POST",
        "/v2/policies/envelopes",
        Some(v3.clone()),
        &[
            ("Authorization", &format!("Bearer {}", gw.token)),
            ("Content-Type", "application/yaml"),
        ],
    );
    assert_eq!(status, 200);
    let (status, body) = gw.raw(
        "POST",
        "/v2/policies/envelopes",
        Some(v3.replace("gpt-4.1-mini", "gpt-4.1")),
        &[
            ("Authorization", &format!("Bearer {}", gw.token)),
            ("Content-Type", "application/yaml"),
        ],
    );
    assert_eq!(status, 409, "{body}");
    // New runs are governed by the new version.
    let (_, opened) = gw.call(
        "POST",
        "/v1/runs",
        Some(&json!({"agent": "coder", "task": "T-9", "scope": "org:acme/repo:api"})),
    );
    assert_eq!(
        opened["governing"],
        json!(["coding-agent@3", "org-baseline@1"])
    );

    // The CLI simulates the same way.
    let path = support::root().join("fixtures/envelopes/diff/coding-agent.v3.yaml");
    let out = gw.tollgate(&[
        "policy",
        "simulate",
        "--envelope",
        path.to_str().unwrap(),
        "--run",
        "run-bugfix-users-404",
    ]);
    assert!(out.status.success(), "{}", support::stderr(&out));
    let text = support::stdout(&out);
    assert!(
        text.contains(
            "simulating coding-agent@3 on run run-bugfix-users-404 (in place of coding-agent@2)"
        ),
        "{text}"
    );
    assert!(text.contains("CHANGED"), "{text}");
}

#[test]
fn graceful_shutdown_keeps_every_acknowledged_write() {
    let mut gw = Gateway::with_fixture_envelopes();
    open_run(&gw, "e2e-stop");
    for i in 0..20 {
        tool(
            &gw,
            "e2e-stop",
            json!({"tool": "fs.read_file", "arguments": {"path": format!("f{i}")}}),
        );
    }
    assert!(
        gw.terminate(),
        "the gateway did not exit cleanly on SIGTERM"
    );
    let events: i64 = support::store_in(gw.dir.path())
        .read(|c| {
            c.query_row(
                "SELECT event_count FROM runs WHERE id = 'e2e-stop'",
                (),
                |r| r.get(0),
            )
        })
        .unwrap();
    assert_eq!(events, 40, "every acknowledged call and decision is stored");
}

#[test]
fn the_openapi_document_is_served_with_the_token() {
    let gw = Gateway::start();
    let (status, _) = gw.call_with("GET", "/openapi.json", None, &[]);
    assert_eq!(status, 401);
    let (status, doc) = gw.call("GET", "/openapi.json", None);
    assert_eq!(status, 200);
    assert_eq!(doc["openapi"], "3.1.0");
    assert!(doc["paths"]["/v1/chat/completions"]["post"].is_object());
}

#[test]
fn a_chat_call_without_a_run_header_goes_to_the_clients_implicit_run_of_the_day() {
    let envelopes = support::root().join("examples/envelopes");
    let gw = Gateway::start_args(&[], &["--envelopes", envelopes.to_str().unwrap()]);
    let chat = |body: serde_json::Value| {
        gw.call_with(
            "POST",
            "/v1/chat/completions",
            Some(&body),
            &[("Authorization", &format!("Bearer {}", gw.token))],
        )
    };
    let (status, first) =
        chat(json!({"model": "gpt-4.1-mini", "messages": [{"role": "user", "content": "hello"}]}));
    assert_eq!(status, 200, "{first}");
    let run = first["tollgate"]["run"].as_str().unwrap().to_string();
    let day: String = tollgate_gateway::clock::now_rfc3339()
        .chars()
        .take(10)
        .filter(char::is_ascii_digit)
        .collect();
    assert_eq!(run, format!("implicit-openai-client-{day}"));
    let (status, second) =
        chat(json!({"model": "gpt-4.1-mini", "messages": [{"role": "user", "content": "again"}]}));
    assert_eq!(status, 200, "{second}");
    assert_eq!(
        second["tollgate"]["run"],
        run.as_str(),
        "one run per client per day"
    );
    let (status, view) = gw.call("GET", &format!("/v1/runs/{run}"), None);
    assert_eq!(status, 200, "{view}");
    assert_eq!(view["run"]["agent"], "openai-client");
    assert_eq!(view["run"]["task"], "implicit");
    assert_eq!(view["governing"], json!(["openai-client@1"]));
    // The envelope decides: a model it does not allow is denied in the implicit run too.
    let (status, denied) =
        chat(json!({"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}));
    assert_eq!(status, 403, "{denied}");
    // A client naming itself (OpenAI's `user`) gets its own run, governed by what is attached to
    // it: nothing here, so its model calls are denied.
    let (status, other) = chat(
        json!({"model": "gpt-4.1-mini", "user": "billing-bot", "messages": [{"role": "user", "content": "hi"}]}),
    );
    assert_eq!(status, 403, "{other}");
    let (status, _) = gw.call("GET", &format!("/v1/runs/implicit-billing-bot-{day}"), None);
    assert_eq!(status, 200);
}
