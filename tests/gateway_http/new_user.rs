//! What a new user met at the gateway's door (issue 33), each with the test that failed before
//! its fix.

use super::support::Gateway;

/// Bug 8: a wrong token was told "a bearer token is required", as if none was sent.
#[test]
fn a_wrong_bearer_token_is_told_it_is_wrong_not_missing() {
    let gw = Gateway::start();
    let (status, none) = gw.call_with("GET", "/v1/approvals", None, &[]);
    assert_eq!(status, 401);
    assert!(
        none["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("a bearer token is required"),
        "{none}"
    );
    let (status, wrong) = gw.call_as("not-the-token", "GET", "/v1/approvals", None);
    assert_eq!(status, 401);
    assert_eq!(wrong["error"]["code"], "unauthorized");
    let message = wrong["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("the bearer token sent is not a credential of this gateway"),
        "{wrong}"
    );
    // The scheme's name is read in any case.
    let auth = format!("bearer {}", gw.token);
    let (status, _) = gw.call_with("GET", "/v1/approvals", None, &[("Authorization", &auth)]);
    assert_eq!(status, 200);
}

/// Bug 9: `GET /` answered a browser with JSON 401.
#[test]
fn a_browser_opening_the_gateways_address_is_sent_to_the_dashboard() {
    let gw = Gateway::start();
    // Followed to the login page.
    let (status, page) = gw.raw("GET", "/", None, &[("Accept", "text/html,*/*;q=0.8")]);
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("<form"), "{page}");
    // A program asking for JSON is still told it needs a token.
    let (status, _) = gw.call_with("GET", "/", None, &[("Accept", "application/json")]);
    assert_eq!(status, 401);
}

/// Bug 6: `timeline_limit=1000000` was answered "`limit` is 1000000".
#[test]
fn a_limit_out_of_range_is_named_as_the_caller_sent_it() {
    let gw = Gateway::start();
    let (status, answer) = gw.call("GET", "/cases/any/inspection?timeline_limit=1000000", None);
    assert_eq!(status, 422, "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("`timeline_limit` is 1000000"),
        "{answer}"
    );
}

/// Bug 13: `serve` said "listening on" twice (once on each stream, both on a terminal).
#[test]
fn the_gateway_says_where_it_listens_once() {
    let gw = Gateway::start();
    // The address was read from stdout (`Gateway::start`); stderr names the token instead.
    let log = gw.log.lock().unwrap().clone();
    assert!(!log.contains("listening on"), "{log}");
    assert!(log.contains("the bearer token is in"), "{log}");
}

/// The HTTP contract (issue 33): JSON Schema's `integer` admits `3.0`, and the gateway refused
/// it; `3.5` stays refused.
#[test]
fn an_integral_number_is_read_as_an_integer_and_a_fraction_is_refused() {
    let gw = Gateway::with_fixture_envelopes();
    let (status, _) = gw.call(
        "POST",
        "/v1/runs",
        Some(&serde_json::json!({"id": "r", "agent": "coder", "task": "t", "scope": "org:acme"})),
    );
    assert_eq!(status, 201);
    let (status, step) = gw.call(
        "POST",
        "/v1/runs/r/steps",
        Some(&serde_json::json!({"name": "read"})),
    );
    assert_eq!(status, 201, "{step}");
    let index = step["step"].as_u64().unwrap();
    let call = |step: serde_json::Value| {
        gw.raw(
            "POST",
            "/v1/runs/r/tool-calls",
            Some(format!(
                r#"{{"tool": "fs.read", "arguments": {{"path": "src/a.rs"}}, "step": {step}}}"#
            )),
            &[("Authorization", &format!("Bearer {}", gw.token))],
        )
    };
    let (status, body) = call(serde_json::json!(index as f64));
    assert_eq!(status, 200, "{body}");
    let (status, body) = call(serde_json::json!(index as f64 + 0.5));
    assert_eq!(status, 422, "{body}");
}
