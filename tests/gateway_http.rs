//! End-to-end tests of the gateway's front door: `tollgate serve` on a free port, talked to
//! over loopback HTTP.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

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

/// Sends only the head of a request declaring a `length`-byte body and reads the answer: an
/// oversized body is refused before any of it is sent.
fn head_only(gw: &Gateway, length: usize) -> String {
    use std::io::{Read as _, Write as _};
    let addr = gw.base.strip_prefix("http://").unwrap();
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    write!(
        s,
        "POST /v1/runs HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {}\r\n\
         Content-Type: application/json\r\nContent-Length: {length}\r\nConnection: close\r\n\r\n",
        gw.token
    )
    .unwrap();
    let mut answer = String::new();
    let _ = s.read_to_string(&mut answer);
    answer
}

#[test]
fn an_oversized_body_is_refused_before_it_is_read() {
    let gw = Gateway::start_with(&[]);
    let answer = head_only(&gw, 3 * 1024 * 1024);
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert!(answer.contains("payload_too_large"), "{answer}");
    assert_eq!(gw.count("runs"), 0);
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
    assert!(head_only(&gw, 3 << 20).starts_with("HTTP/1.1 413"));
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
    assert!(denied["decision"]["proof"].is_object());

    let default_denied = tool(&gw, "e2e-1", json!({"tool": "net.upload"}));
    assert_eq!(default_denied["effect"], "deny");
    assert!(
        !default_denied["decision"]["why_not"]
            .as_array()
            .unwrap()
            .is_empty()
    );

    let (status, chat) = gw.call_with(
        "POST",
        "/v1/chat/completions",
        Some(&json!({"model": "gpt-4.1-mini", "messages": [
            {"role": "user", "content": "the key is AKIAABCDEFGHIJKLMNOP, deploy"}]})),
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
    let (status, body) = gw.call(
        "POST",
        &format!("/v2/policies/approvals/{id}"),
        Some(&json!({"decision": "approve", "by": "intern"})),
    );
    assert_eq!(status, 403, "{body}");
    let (status, body) = gw.call(
        "POST",
        &format!("/v2/policies/approvals/{id}"),
        Some(&json!({"decision": "approve", "by": "team-lead", "reason": "tests only"})),
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["state"], "approved");
    let (status, body) = gw.call(
        "POST",
        &format!("/v2/policies/approvals/{id}"),
        Some(&json!({"decision": "reject", "by": "team-lead"})),
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
    assert!(!String::from_utf8_lossy(&out.stdout).contains("AKIAABCDEFGHIJKLMNOP"));
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
    let db = gw.dir.path().join(".tollgate/tollgate.db");
    let c = rusqlite::Connection::open(db).unwrap();
    let events: i64 = c
        .query_row(
            "SELECT event_count FROM runs WHERE id = 'e2e-stop'",
            [],
            |r| r.get(0),
        )
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

// ---- the model proxy streaming from an OpenAI-compatible upstream ----

/// One step of a scripted upstream answer.
enum Step {
    /// Write these bytes.
    Send(String),
    /// Wait until the test releases the upstream.
    Wait(std::sync::mpsc::Receiver<()>),
}

/// A scripted OpenAI-compatible upstream on loopback: the n-th connection gets the n-th
/// answer, then the connection is closed.
struct Upstream {
    base_url: String,
    /// Answers written to the end.
    finished: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    /// The request bodies received, in order.
    bodies: std::sync::Arc<std::sync::Mutex<Vec<serde_json::Value>>>,
}

impl Upstream {
    fn start(answers: Vec<Vec<Step>>) -> Upstream {
        use std::io::Write as _;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let base_url = format!("http://{}/v1", listener.local_addr().unwrap());
        let finished = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let bodies = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let (done, seen) = (finished.clone(), bodies.clone());
        std::thread::spawn(move || {
            for steps in answers {
                let Ok((mut stream, _)) = listener.accept() else {
                    return;
                };
                seen.lock().unwrap().push(read_request_body(&stream));
                for step in steps {
                    match step {
                        Step::Send(text) => {
                            let _ = stream.write_all(text.as_bytes());
                        }
                        Step::Wait(release) => {
                            let _ = release.recv_timeout(std::time::Duration::from_secs(30));
                        }
                    }
                }
                drop(stream);
                done.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            }
        });
        Upstream {
            base_url,
            finished,
            bodies,
        }
    }

    fn finished(&self) -> usize {
        self.finished.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// A gateway forwarding to this upstream, with the fixture envelopes.
    fn gateway(&self) -> Gateway {
        let envelopes = support::root().join("fixtures/envelopes");
        Gateway::start_args(
            &[
                ("TOLLGATE_PROVIDER", "openai"),
                ("TOLLGATE_PROVIDER_BASE_URL", &self.base_url),
                ("PROVIDER_API_KEY", "sk-upstream-test-key"),
            ],
            &["--envelopes", envelopes.to_str().unwrap()],
        )
    }
}

fn read_request_body(stream: &std::net::TcpStream) -> serde_json::Value {
    use std::io::{BufRead as _, Read as _};
    let mut reader = std::io::BufReader::new(stream);
    let mut length = 0;
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().unwrap();
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).unwrap();
    serde_json::from_slice(&body).unwrap()
}

const SSE_HEAD: &str =
    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n";

fn upstream_chunk(delta: serde_json::Value, finish: serde_json::Value) -> Step {
    let chunk = json!({"id": "chatcmpl-up", "object": "chat.completion.chunk",
                       "created": 1_700_000_000, "model": "gpt-4.1-mini-2025",
                       "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
    Step::Send(format!("data: {chunk}\n\n"))
}

fn upstream_text(text: &str) -> Step {
    upstream_chunk(json!({"content": text}), serde_json::Value::Null)
}

/// The end of a streamed upstream answer: finish, usage, `[DONE]`.
fn upstream_end() -> Vec<Step> {
    let usage = json!({"id": "chatcmpl-up", "object": "chat.completion.chunk",
                       "created": 1_700_000_000, "model": "gpt-4.1-mini-2025", "choices": [],
                       "usage": {"prompt_tokens": 12, "completion_tokens": 2, "total_tokens": 14}});
    vec![
        upstream_chunk(json!({}), json!("stop")),
        Step::Send(format!("data: {usage}\n\ndata: [DONE]\n\n")),
    ]
}

/// The same answer, whole.
fn upstream_whole(text: &str) -> Vec<Step> {
    let body = json!({"id": "chatcmpl-up", "object": "chat.completion", "created": 1_700_000_000,
                      "model": "gpt-4.1-mini-2025",
                      "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                   "finish_reason": "stop"}],
                      "usage": {"prompt_tokens": 12, "completion_tokens": 2, "total_tokens": 14}})
    .to_string();
    vec![Step::Send(format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    ))]
}

/// A streamed chat call, answered: its status, content type and a reader of its body.
fn chat_stream(
    gw: &Gateway,
    run: &str,
    body: &serde_json::Value,
) -> (u16, String, std::io::BufReader<ureq::BodyReader<'static>>) {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let response = agent
        .post(format!("{}/v1/chat/completions", gw.base))
        .header("Authorization", format!("Bearer {}", gw.token))
        .header("X-Tollgate-Run", run)
        .header("Content-Type", "application/json")
        .send(body.to_string())
        .unwrap();
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let reader = std::io::BufReader::new(response.into_body().into_reader());
    (status, content_type, reader)
}

/// The next event's data, or `None` at the end of the stream.
fn next_data(reader: &mut impl std::io::BufRead) -> Option<String> {
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap() == 0 {
            return None;
        }
        if let Some(data) = line.trim_end().strip_prefix("data: ") {
            return Some(data.to_string());
        }
    }
}

fn next_chunk(reader: &mut impl std::io::BufRead) -> serde_json::Value {
    serde_json::from_str(&next_data(reader).expect("another event")).unwrap()
}

fn chat_request(stream: bool) -> serde_json::Value {
    json!({"model": "gpt-4.1-mini", "stream": stream,
           "stream_options": {"include_usage": true},
           "messages": [{"role": "user", "content": "the key is AKIAABCDEFGHIJKLMNOP, deploy"}]})
}

/// The run's events as exported, each without what differs between two calls of the same
/// request (its place in the chain and its time).
fn recorded(gw: &Gateway, run: &str) -> Vec<serde_json::Value> {
    let out = gw.tollgate(&["runs", "export", run]);
    assert!(out.status.success(), "{}", support::stderr(&out));
    let file: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    file["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| json!({"kind": e["kind"], "step": e["step"], "payload": e["payload"]}))
        .collect()
}

#[test]
fn a_streamed_completion_reaches_the_client_before_the_upstream_finishes() {
    let (release, wait) = std::sync::mpsc::channel();
    let mut streamed = vec![
        Step::Send(SSE_HEAD.to_string()),
        upstream_chunk(
            json!({"role": "assistant", "content": ""}),
            serde_json::Value::Null,
        ),
        upstream_text("Deploying"),
        Step::Wait(wait),
        upstream_text(" now."),
    ];
    streamed.extend(upstream_end());
    let upstream = Upstream::start(vec![upstream_whole("Deploying now."), streamed]);
    let gw = upstream.gateway();
    open_run(&gw, "e2e-stream");

    // A whole call first, then the same request streamed.
    let (status, whole) = gw.call_with(
        "POST",
        "/v1/chat/completions",
        Some(&chat_request(false)),
        &[
            ("Authorization", &format!("Bearer {}", gw.token)),
            ("X-Tollgate-Run", "e2e-stream"),
        ],
    );
    assert_eq!(status, 200, "{whole}");
    assert_eq!(whole["choices"][0]["message"]["content"], "Deploying now.");
    let after_whole = recorded(&gw, "e2e-stream").len();

    let (status, content_type, mut reader) = chat_stream(&gw, "e2e-stream", &chat_request(true));
    assert_eq!(status, 200);
    assert!(
        content_type.starts_with("text/event-stream"),
        "{content_type}"
    );
    let role = next_chunk(&mut reader);
    assert_eq!(role["choices"][0]["delta"]["role"], "assistant");
    assert_eq!(role["id"], "chatcmpl-up");
    let first = next_chunk(&mut reader);
    assert_eq!(first["object"], "chat.completion.chunk");
    assert_eq!(first["choices"][0]["delta"]["content"], "Deploying");
    assert_eq!(
        upstream.finished(),
        1,
        "the first chunk arrived while the upstream was still answering"
    );
    release.send(()).unwrap();
    let second = next_chunk(&mut reader);
    assert_eq!(second["choices"][0]["delta"]["content"], " now.");
    let finish = next_chunk(&mut reader);
    assert_eq!(finish["choices"][0]["finish_reason"], "stop");
    assert_eq!(finish["tollgate"]["run"], "e2e-stream");
    assert_eq!(
        finish["tollgate"]["messages"][0]["effect"], "redact",
        "{finish}"
    );
    let usage = next_chunk(&mut reader);
    assert_eq!(usage["usage"]["total_tokens"], 14);
    assert_eq!(next_data(&mut reader).as_deref(), Some("[DONE]"));
    assert_eq!(next_data(&mut reader), None);

    // The upstream was asked to stream, with the secret redacted; the client's own
    // stream settings were not forwarded as they came.
    let bodies = upstream.bodies.lock().unwrap().clone();
    assert_eq!(bodies[0]["stream"], false);
    assert_eq!(bodies[1]["stream"], true);
    assert_eq!(bodies[1]["stream_options"], json!({"include_usage": true}));
    assert!(!bodies[1].to_string().contains("AKIA"), "{}", bodies[1]);

    // The streamed call is recorded exactly as the whole one was.
    let events = recorded(&gw, "e2e-stream");
    let (whole_call, streamed_call) = events.split_at(after_whole);
    assert_eq!(
        &whole_call[whole_call.len() - streamed_call.len()..],
        streamed_call
    );
    assert_eq!(
        streamed_call.last().unwrap()["kind"],
        "model_output",
        "{streamed_call:?}"
    );
    assert_eq!(finish["tollgate"]["seq"], events.len() - 1);
    let replay = gw.tollgate(&["replay", "exact", "e2e-stream"]);
    assert!(replay.status.success(), "{}", support::stdout(&replay));
}

#[test]
fn a_stream_that_fails_or_is_refused_is_answered_and_recorded() {
    let (release, wait) = std::sync::mpsc::channel();
    let mut abandoned = vec![
        Step::Send(SSE_HEAD.to_string()),
        upstream_text("Half"),
        Step::Wait(wait),
        upstream_text(" done."),
    ];
    abandoned.extend(upstream_end());
    let upstream = Upstream::start(vec![
        // Fails mid-stream.
        vec![
            Step::Send(SSE_HEAD.to_string()),
            upstream_text("Partial"),
            Step::Send(
                "data: {\"error\": {\"message\": \"The server had an error\", \"type\": \"server_error\"}}\n\n"
                    .to_string(),
            ),
        ],
        // Refuses before streaming.
        vec![Step::Send(
            "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 10\r\nConnection: close\r\n\r\noverloaded"
                .to_string(),
        )],
        // Is abandoned by its client.
        abandoned,
    ]);
    let gw = upstream.gateway();
    open_run(&gw, "e2e-fail");

    let (status, _, mut reader) = chat_stream(&gw, "e2e-fail", &chat_request(true));
    assert_eq!(status, 200);
    assert_eq!(
        next_chunk(&mut reader)["choices"][0]["delta"]["role"],
        "assistant"
    );
    assert_eq!(
        next_chunk(&mut reader)["choices"][0]["delta"]["content"],
        "Partial"
    );
    let error = next_chunk(&mut reader);
    assert_eq!(error["error"]["code"], "upstream_error", "{error}");
    assert_eq!(
        error["error"]["message"],
        "the provider failed mid-stream: The server had an error"
    );
    assert_eq!(next_data(&mut reader), None, "no [DONE] after an error");
    let events = recorded(&gw, "e2e-fail");
    let last = events.last().unwrap();
    assert_eq!(last["kind"], "error");
    assert!(
        last["payload"]["message"]
            .as_str()
            .unwrap()
            .contains("mid-stream"),
        "{last}"
    );

    // An upstream error before any text is the usual JSON error, not a stream.
    let (status, content_type, mut reader) = chat_stream(&gw, "e2e-fail", &chat_request(true));
    assert_eq!(status, 502);
    assert!(
        content_type.starts_with("application/json"),
        "{content_type}"
    );
    let mut text = String::new();
    std::io::Read::read_to_string(&mut reader, &mut text).unwrap();
    let body: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        body["error"]["message"],
        "the provider failed (http 503): overloaded"
    );

    // A model the envelopes refuse is a 403 before anything leaves.
    let mut denied = chat_request(true);
    denied["model"] = json!("gpt-5");
    let (status, content_type, _) = chat_stream(&gw, "e2e-fail", &denied);
    assert_eq!(status, 403);
    assert!(
        content_type.starts_with("application/json"),
        "{content_type}"
    );
    assert_eq!(upstream.bodies.lock().unwrap().len(), 2);

    // A client that goes away mid-stream still leaves its call recorded to the end.
    let (status, _, mut reader) = chat_stream(&gw, "e2e-fail", &chat_request(true));
    assert_eq!(status, 200);
    next_chunk(&mut reader);
    assert_eq!(
        next_chunk(&mut reader)["choices"][0]["delta"]["content"],
        "Half"
    );
    drop(reader);
    release.send(()).unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let events = recorded(&gw, "e2e-fail");
        let last = events.last().unwrap();
        if last["kind"] == "model_output" {
            assert_eq!(last["payload"]["response"]["content"], "Half done.");
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the abandoned call was not recorded: {last}"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let verify = gw.tollgate(&["runs", "verify", "e2e-fail"]);
    assert!(verify.status.success(), "{}", support::stdout(&verify));
}

/// `coding-agent` version 3 as the fixture's version 2 with the web revoked.
fn coding_agent_revoking_the_web() -> String {
    let v2 = std::fs::read_to_string(support::root().join("fixtures/envelopes/coding-agent.yaml"))
        .unwrap();
    let v3 = v2.replace("version: 2", "version: 3").replace(
        "  - id: web\n    effect: allow",
        "  - id: web\n    effect: deny",
    );
    assert!(
        v3.contains("effect: deny\n    tools: [http.get]"),
        "the fixture changed shape"
    );
    v3
}

#[test]
fn replay_exact_of_a_run_spanning_an_envelope_update_reports_no_drift() {
    let gw = Gateway::with_fixture_envelopes();
    open_run(&gw, "r-span");
    let before = tool(
        &gw,
        "r-span",
        json!({"tool": "http.get", "arguments": {"url": "https://docs.rs/a"}}),
    );
    assert_eq!(before["effect"], "allow", "{before}");

    // The envelope is updated while the run runs: the revocation bites its next call.
    let (status, stored) = gw.raw(
        "POST",
        "/v2/policies/envelopes",
        Some(coding_agent_revoking_the_web()),
        &[
            ("Authorization", &format!("Bearer {}", gw.token)),
            ("Content-Type", "application/yaml"),
        ],
    );
    assert_eq!(status, 201, "{stored}");
    let after = tool(
        &gw,
        "r-span",
        json!({"tool": "http.get", "arguments": {"url": "https://docs.rs/b"}}),
    );
    assert_eq!(after["effect"], "deny", "{after}");
    assert_eq!(
        after["receipt"]["envelopes"],
        json!(["coding-agent@3", "org-baseline@1"])
    );
    let (status, _) = gw.call(
        "POST",
        "/v1/runs/r-span/finish",
        Some(&json!({"status": "succeeded"})),
    );
    assert_eq!(status, 200);

    // Both versions are linked, and each decision replays under its own.
    assert_eq!(gw.count("run_envelopes"), 3);
    let out = gw.tollgate(&["replay", "exact", "r-span"]);
    let text = support::stdout(&out);
    assert!(out.status.success(), "{text}{}", support::stderr(&out));
    assert!(text.contains("2 tool calls replayed; no drift"), "{text}");

    // Exported and imported into another store, both versions travel and replay clean.
    let exported = gw.dir.path().join("r-span.json");
    let out = gw.tollgate(&["runs", "export", "r-span", "-o", exported.to_str().unwrap()]);
    assert!(out.status.success(), "{}", support::stderr(&out));
    let file: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&exported).unwrap()).unwrap();
    let sources: Vec<String> = file["envelope_sources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| format!("{}@{}", s["id"].as_str().unwrap(), s["version"]))
        .collect();
    assert_eq!(
        sources,
        ["coding-agent@2", "coding-agent@3", "org-baseline@1"]
    );
    let other = support::TempDir::new("span-import");
    let url = other.database_url();
    let env = [("TOLLGATE_DATABASE_URL", url.as_str())];
    let out = support::tollgate_env(&env, &["runs", "import", exported.to_str().unwrap()]);
    assert!(out.status.success(), "{}", support::stderr(&out));
    let out = support::tollgate_env(&env, &["replay", "exact", "r-span"]);
    let text = support::stdout(&out);
    assert!(out.status.success(), "{text}{}", support::stderr(&out));
    assert!(text.contains("no drift"), "{text}");

    // A genuine change still drifts: version 3 edited in the file to allow the web again.
    let edited = exported.with_file_name("r-span-edited.json");
    let mut file = file;
    for s in file["envelope_sources"].as_array_mut().unwrap() {
        if s["id"] == "coding-agent" && s["version"] == 3 {
            let yaml = s["yaml"].as_str().unwrap().replace(
                "  - id: web\n    effect: deny",
                "  - id: web\n    effect: allow",
            );
            s["yaml"] = json!(yaml);
        }
    }
    file["run"]["id"] = json!("r-span-edited");
    for e in file["events"].as_array_mut().unwrap() {
        let e = e.as_object_mut().unwrap();
        e.remove("hash");
        e.remove("prev");
    }
    std::fs::write(&edited, serde_json::to_string(&file).unwrap()).unwrap();
    // (A store that holds the real version 3 refuses a different content under its number.)
    let out = support::tollgate_env(&env, &["runs", "import", edited.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", support::stderr(&out));
    assert!(
        support::stderr(&out).contains("version 3 is already stored with different content"),
        "{}",
        support::stderr(&out)
    );
    let third = support::TempDir::new("span-edited");
    let url = third.database_url();
    let env = [("TOLLGATE_DATABASE_URL", url.as_str())];
    let out = support::tollgate_env(&env, &["runs", "import", edited.to_str().unwrap()]);
    assert!(out.status.success(), "{}", support::stderr(&out));
    let out = support::tollgate_env(&env, &["replay", "exact", "r-span-edited"]);
    let text = support::stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("deny was recorded, the envelopes now say allow"),
        "{text}"
    );
}
