//! End-to-end tests of the gateway's front door: `tollgate serve` on a free port, talked to
//! over loopback HTTP.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

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
fn an_oversized_body_is_refused_before_it_is_read() {
    let gw = Gateway::start_with(&[]);
    let auth = format!("Bearer {}", gw.token);
    let big = "x".repeat(3 * 1024 * 1024);
    let (status, text) = gw.raw("POST", "/v1/runs", Some(big), &[("Authorization", &auth)]);
    assert_eq!(status, 413, "{text}");
    assert!(text.contains("payload_too_large"), "{text}");
}
