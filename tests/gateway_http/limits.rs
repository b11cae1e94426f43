//! The body limit: a body declared larger is refused before it is read; one that turns out
//! larger (chunked, no length declared) is refused as it is read; both name the limit the
//! gateway was started with.

use super::support::Gateway;

/// Sends `POST /v1/runs` with the token, these further headers and `rest` (what follows the
/// head: a body, or nothing), on a connection of its own; returns the whole answer.
fn post_raw(gw: &Gateway, headers: &str, rest: &str) -> String {
    use std::io::{Read as _, Write as _};
    let addr = gw.base.strip_prefix("http://").unwrap();
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    write!(
        s,
        "POST /v1/runs HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {}\r\n\
         Content-Type: application/json\r\n{headers}Connection: close\r\n\r\n{rest}",
        gw.token
    )
    .unwrap();
    let mut answer = String::new();
    let _ = s.read_to_string(&mut answer);
    answer
}

/// Sends only the head of a request declaring a `length`-byte body and reads the answer: an
/// oversized body is refused before any of it is sent.
pub fn head_only(gw: &Gateway, length: usize) -> String {
    post_raw(gw, &format!("Content-Length: {length}\r\n"), "")
}

#[test]
fn an_oversized_body_is_refused_before_it_is_read() {
    let gw = Gateway::start_with(&[]);
    let answer = head_only(&gw, 3 * 1024 * 1024);
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert!(answer.contains("payload_too_large"), "{answer}");
    assert_eq!(gw.count("runs"), 0);
}

/// Sends `body` chunked (no `Content-Length`, so nothing can be refused before reading) and
/// returns the whole answer.
fn chunked(gw: &Gateway, body: &str) -> String {
    let rest = format!("{:x}\r\n{body}\r\n0\r\n\r\n", body.len());
    post_raw(gw, "Transfer-Encoding: chunked\r\n", &rest)
}

#[test]
fn a_body_over_the_limit_names_the_limit_the_gateway_was_started_with() {
    let gw = Gateway::start_args(&[], &["--body-limit", "1000"]);
    // Declared: refused before it is read.
    let answer = head_only(&gw, 1001);
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert!(answer.contains(r#""limit":1000"#), "{answer}");
    // Chunked: refused as it is read, by the JSON extractor. It named axum's default limit (2
    // MiB) rather than `--body-limit`.
    let padding = "x".repeat(2000);
    let body = format!(
        r#"{{"agent":"coder","task":"T-1","scope":"org:acme","metadata":{{"pad":"{padding}"}}}}"#
    );
    let answer = chunked(&gw, &body);
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert!(answer.contains("payload_too_large"), "{answer}");
    assert!(answer.contains(r#""limit":1000"#), "{answer}");
    assert!(answer.contains("larger than 1000 bytes"), "{answer}");
    assert_eq!(gw.count("runs"), 0);
    // Under the limit, chunked, it goes through.
    let answer = chunked(&gw, r#"{"agent":"coder","task":"T-1","scope":"org:acme"}"#);
    assert!(answer.starts_with("HTTP/1.1 201"), "{answer}");
}
