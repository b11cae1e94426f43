//! Enforcement holes found by trying to break the gateway as a hostile agent (issue 32), each
//! with the test that failed before its fix: rate limits counted per caller-chosen `call_id`,
//! concurrent first calls past a limit, an earlier approval shown for a call asked again
//! with other arguments.

use serde_json::{Value, json};

use super::support::{Gateway, TempDir};

/// A gateway whose envelope allows `http.get` three times per run and gates `shell.*`, with
/// an agent token for `coder`; the run `r` is open.
fn limited() -> (Gateway, String) {
    let dir = TempDir::new("limit-envelope");
    std::fs::write(
        dir.path().join("limited.yaml"),
        "id: limited\nversion: 1\nattach: {agents: [coder]}\ntools:\n  \
         - {id: web, effect: allow, tools: [http.get]}\n  \
         - {id: budget, effect: rate_limit, tools: [http.get], limit: {count: 3, window_seconds: 3600, per: run}}\n  \
         - {id: shell, effect: require_approval, tools: [\"shell.*\"]}\n",
    )
    .unwrap();
    let gw = Gateway::start_args(&[], &["--envelopes", dir.path().to_str().unwrap()]);
    let coder = gw.create_token(&["--kind", "agent", "--agent", "coder"]);
    let (status, run) = gw.call_as(
        &coder,
        "POST",
        "/v1/runs",
        Some(&json!({"id": "r", "agent": "coder", "task": "t", "scope": "org:acme"})),
    );
    assert_eq!(status, 201, "{run}");
    (gw, coder)
}

fn call(gw: &Gateway, token: &str, body: &Value) -> Value {
    let (status, answer) = gw.call_as(token, "POST", "/v1/runs/r/tool-calls", Some(body));
    assert_eq!(status, 200, "{answer}");
    answer
}

#[test]
fn a_rate_limit_counts_decisions_not_the_callers_call_ids() {
    let (gw, coder) = limited();
    let effects: Vec<Value> = (0..20)
        .map(|_| {
            call(
                &gw,
                &coder,
                &json!({"tool": "http.get", "call_id": "same", "arguments": {"url": "https://a.example/"}}),
            )["effect"]
                .clone()
        })
        .collect();
    let allowed = effects.iter().filter(|e| *e == "allow").count();
    assert_eq!(allowed, 3, "{effects:?}");
    assert!(
        effects[3..].iter().all(|e| e == "rate_limited"),
        "{effects:?}"
    );
}

#[test]
fn concurrent_first_calls_of_a_fresh_run_do_not_exceed_a_rate_limit() {
    let (gw, coder) = limited();
    let effects: Vec<Value> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..48)
            .map(|i| {
                let (gw, coder) = (&gw, &coder);
                s.spawn(move || {
                    call(
                        gw,
                        coder,
                        &json!({"tool": "http.get", "call_id": format!("c{i}"), "arguments": {"url": "https://a.example/"}}),
                    )["effect"]
                        .clone()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let allowed = effects.iter().filter(|e| *e == "allow").count();
    assert_eq!(allowed, 3, "{effects:?}");
    assert_eq!(
        effects.iter().filter(|e| *e == "rate_limited").count(),
        45,
        "{effects:?}"
    );
    // Every one is recorded with its decision, and the counts agree with the answers.
    let (_, decisions) = gw.call("GET", "/v2/policies/decisions/r?effect=allow", None);
    assert_eq!(decisions["decisions"].as_array().unwrap().len(), 3);
}

#[test]
fn a_call_asked_again_with_other_arguments_shows_only_its_own_approval() {
    let (gw, coder) = limited();
    let first = call(
        &gw,
        &coder,
        &json!({"tool": "shell.exec", "call_id": "c1", "arguments": {"cmd": "make test"}}),
    );
    assert_eq!(first["effect"], "require_approval", "{first}");
    let approved = first["approval"]["id"].as_str().unwrap().to_string();
    let (status, answer) = gw.call(
        "POST",
        &format!("/v2/policies/approvals/{approved}"),
        Some(&json!({"decision": "approve"})),
    );
    assert_eq!(status, 200, "{answer}");
    // The same call id with other arguments: a new approval of its own, pending.
    let again = call(
        &gw,
        &coder,
        &json!({"tool": "shell.exec", "call_id": "c1", "arguments": {"cmd": "rm -rf /"}}),
    );
    assert_eq!(again["effect"], "require_approval", "{again}");
    assert_eq!(again["approval"]["state"], "pending", "{again}");
    assert_ne!(again["approval"]["id"], approved.as_str(), "{again}");
    // The earlier approval does not carry over to the other arguments ...
    let (status, refused) = gw.call_as(
        &coder,
        "POST",
        "/v1/runs/r/tool-calls",
        Some(&json!({"tool": "shell.exec", "call_id": "c1", "arguments": {"cmd": "rm -rf /"}, "approval_id": approved})),
    );
    assert_eq!(status, 409, "{refused}");
    // ... and still lets the call it approved go ahead, once.
    let used = call(
        &gw,
        &coder,
        &json!({"tool": "shell.exec", "call_id": "c1", "arguments": {"cmd": "make test"}, "approval_id": approved}),
    );
    assert_eq!(used["effect"], "allow", "{used}");
}
