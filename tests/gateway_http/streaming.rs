//! Streamed chat completions through the gateway: an upstream that answers chunk by chunk,
//! fails mid-stream or is refused by policy.

use serde_json::json;

use super::open_run;
use super::support::{self, Gateway};

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
    whole_answer(json!({"role": "assistant", "content": text}), "stop")
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
           "messages": [{"role": "user", "content": "the key is AKIAPYDATUTGFKRXITKP, deploy"}]})
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

// ---- function calling ----

const TOOLS: &str = r#"[{"type": "function", "function": {"name": "run_shell",
    "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}}}}]"#;

/// The model's answer: two parallel calls, no text.
fn tool_calls_answer() -> serde_json::Value {
    json!([
        {"id": "call_1", "type": "function",
         "function": {"name": "run_shell", "arguments": "{\"cmd\": \"ls -la\"}"}},
        {"id": "call_2", "type": "function",
         "function": {"name": "run_shell", "arguments": "{}"}},
    ])
}

/// A whole (non-streamed) completion answering `message`, ended by `finish`.
fn whole_answer(message: serde_json::Value, finish: &str) -> Vec<Step> {
    let body = json!({"id": "chatcmpl-up", "object": "chat.completion", "created": 1_700_000_000,
                      "model": "gpt-4.1-mini-2025",
                      "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                      "usage": {"prompt_tokens": 12, "completion_tokens": 2, "total_tokens": 14}})
    .to_string();
    vec![Step::Send(format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    ))]
}

/// The same calls streamed as OpenAI streams them: named first, arguments in pieces split
/// inside their JSON, the two calls interleaved.
fn streamed_tool_calls() -> Vec<Step> {
    let piece = |p: serde_json::Value| upstream_chunk(json!({"tool_calls": [p]}), json!(null));
    let usage = json!({"id": "chatcmpl-up", "object": "chat.completion.chunk",
                       "created": 1_700_000_000, "model": "gpt-4.1-mini-2025", "choices": [],
                       "usage": {"prompt_tokens": 12, "completion_tokens": 2, "total_tokens": 14}});
    vec![
        Step::Send(SSE_HEAD.to_string()),
        upstream_chunk(json!({"role": "assistant", "content": null}), json!(null)),
        piece(json!({"index": 0, "id": "call_1", "type": "function",
                     "function": {"name": "run_shell", "arguments": ""}})),
        piece(json!({"index": 0, "function": {"arguments": "{\"cmd\": \"ls"}})),
        piece(json!({"index": 1, "id": "call_2", "type": "function",
                     "function": {"name": "run_shell", "arguments": "{}"}})),
        piece(json!({"index": 0, "function": {"arguments": " -la\"}"}})),
        upstream_chunk(json!({}), json!("tool_calls")),
        Step::Send(format!("data: {usage}\n\ndata: [DONE]\n\n")),
    ]
}

fn tool_request(stream: bool, messages: serde_json::Value) -> serde_json::Value {
    json!({"model": "gpt-4.1-mini", "stream": stream, "stream_options": {"include_usage": true},
           "tools": serde_json::from_str::<serde_json::Value>(TOOLS).unwrap(),
           "messages": messages})
}

#[test]
fn tool_calls_reach_the_client_whole_and_streamed_and_their_results_reach_the_upstream() {
    let upstream = Upstream::start(vec![
        whole_answer(
            json!({"role": "assistant", "content": null, "tool_calls": tool_calls_answer()}),
            "tool_calls",
        ),
        streamed_tool_calls(),
        whole_answer(json!({"role": "assistant", "content": "Listed."}), "stop"),
    ]);
    let gw = upstream.gateway();
    open_run(&gw, "e2e-tools");
    let headers = [
        ("Authorization", format!("Bearer {}", gw.token)),
        ("X-Tollgate-Run", "e2e-tools".to_string()),
    ];
    let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
    let ask = json!([{"role": "user", "content": "list the files"}]);

    // Whole: the calls in OpenAI's shape.
    let (status, whole) = gw.call_with(
        "POST",
        "/v1/chat/completions",
        Some(&tool_request(false, ask.clone())),
        &headers,
    );
    assert_eq!(status, 200, "{whole}");
    let choice = &whole["choices"][0];
    assert_eq!(choice["finish_reason"], "tool_calls");
    assert_eq!(choice["message"]["content"], json!(null));
    assert_eq!(choice["message"]["tool_calls"], tool_calls_answer());
    let after_whole = recorded(&gw, "e2e-tools").len();

    // Streamed: the pieces forwarded as OpenAI streams them, concatenating to the calls.
    let (status, _, mut reader) = chat_stream(&gw, "e2e-tools", &tool_request(true, ask.clone()));
    assert_eq!(status, 200);
    assert_eq!(
        next_chunk(&mut reader)["choices"][0]["delta"]["role"],
        "assistant"
    );
    let mut pieces = Vec::new();
    let finish = loop {
        let chunk = next_chunk(&mut reader);
        let choice = &chunk["choices"][0];
        if !choice["finish_reason"].is_null() {
            break chunk;
        }
        pieces.push(choice["delta"]["tool_calls"][0].clone());
    };
    assert_eq!(
        pieces[0],
        json!({"index": 0, "id": "call_1", "type": "function",
               "function": {"name": "run_shell", "arguments": ""}})
    );
    assert_eq!(
        pieces[1],
        json!({"index": 0, "function": {"arguments": "{\"cmd\": \"ls"}})
    );
    let mut assembled = vec![json!({}), json!({})];
    for piece in &pieces {
        let call = &mut assembled[piece["index"].as_u64().unwrap() as usize];
        if let Some(id) = piece.get("id") {
            *call = json!({"id": id, "type": piece["type"],
                           "function": {"name": piece["function"]["name"], "arguments": ""}});
        }
        let arguments = format!(
            "{}{}",
            call["function"]["arguments"].as_str().unwrap(),
            piece["function"]["arguments"].as_str().unwrap()
        );
        call["function"]["arguments"] = json!(arguments);
    }
    assert_eq!(json!(assembled), tool_calls_answer());
    assert_eq!(finish["choices"][0]["finish_reason"], "tool_calls");
    assert_eq!(next_chunk(&mut reader)["usage"]["total_tokens"], 14);
    assert_eq!(next_data(&mut reader).as_deref(), Some("[DONE]"));

    // Recorded with the output, and the same events whether streamed or not.
    let events = recorded(&gw, "e2e-tools");
    let (whole_call, streamed_call) = events.split_at(after_whole);
    assert_eq!(
        &whole_call[whole_call.len() - streamed_call.len()..],
        streamed_call
    );
    let output = streamed_call.last().unwrap();
    assert_eq!(output["kind"], "model_output");
    assert_eq!(
        output["payload"]["response"]["tool_calls"],
        tool_calls_answer()
    );

    // The follow-up: the assistant's calls (one argument holding a secret) and the results.
    let follow_up = json!([
        {"role": "user", "content": "list the files"},
        {"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "run_shell",
             "arguments": "{\"cmd\": \"ls -la\", \"env\": \"AWS_KEY AKIAPYDATUTGFKRXITKP\"}"}},
            {"id": "call_2", "type": "function",
             "function": {"name": "run_shell", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "README.md"},
        {"role": "tool", "tool_call_id": "call_2", "content": "key sk-proj-capmmyyldvharuoxkwfpxt"},
    ]);
    let (status, answer) = gw.call_with(
        "POST",
        "/v1/chat/completions",
        Some(&tool_request(false, follow_up)),
        &headers,
    );
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["choices"][0]["message"]["content"], "Listed.");
    assert!(
        answer["choices"][0]["message"].get("tool_calls").is_none(),
        "{answer}"
    );
    let effects: Vec<&serde_json::Value> = answer["tollgate"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| &m["effect"])
        .collect();
    assert_eq!(effects, ["allow", "redact", "allow", "redact"], "{answer}");

    let bodies = upstream.bodies.lock().unwrap().clone();
    assert_eq!(bodies[0]["tools"][0]["function"]["name"], "run_shell");
    let sent = &bodies[2]["messages"];
    assert_eq!(sent[1]["content"], json!(null));
    assert_eq!(sent[1]["tool_calls"][0]["id"], "call_1");
    assert_eq!(sent[1]["tool_calls"][1]["function"]["arguments"], "{}");
    let arguments: serde_json::Value = serde_json::from_str(
        sent[1]["tool_calls"][0]["function"]["arguments"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(arguments["cmd"], "ls -la");
    assert!(
        arguments["env"]
            .as_str()
            .unwrap()
            .starts_with("AWS_KEY [REDACTED:"),
        "{arguments}"
    );
    assert_eq!(sent[2]["tool_call_id"], "call_1");
    assert_eq!(sent[3]["tool_call_id"], "call_2");
    assert!(
        sent[3]["content"]
            .as_str()
            .unwrap()
            .starts_with("key [REDACTED:"),
        "{sent}"
    );
    for secret in ["AKIAPYDATUTGFKRXITKP", "sk-proj-capmmyyldvharuoxkwfpxt"] {
        assert!(!bodies[2].to_string().contains(secret), "{}", bodies[2]);
    }

    // Nothing recorded holds the secrets, and the run replays exactly, tool calls included.
    let export = gw.tollgate(&["runs", "export", "e2e-tools"]);
    let export = String::from_utf8(export.stdout).unwrap();
    assert!(export.contains("call_2"));
    for secret in ["AKIAPYDATUTGFKRXITKP", "sk-proj-capmmyyldvharuoxkwfpxt"] {
        assert!(!export.contains(secret), "{secret} recorded");
    }
    let replay = gw.tollgate(&["replay", "exact", "e2e-tools"]);
    assert!(replay.status.success(), "{}", support::stdout(&replay));
}
