//! The OpenAI adapter against a one-request mock server on 127.0.0.1. Nothing here leaves
//! loopback.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::mpsc;
use std::thread::{self, JoinHandle};
use std::time::Duration;

use serde_json::{Value, json};

use super::super::*;
use super::conversation;

const KEY: &str = "sk-test-0123456789abcdef";

/// What the mock server received.
#[derive(Debug)]
struct Received {
    request_line: String,
    headers: Vec<(String, String)>,
    body: String,
}

impl Received {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// A server that answers one request with `status` (e.g. `200 OK`), `headers` and `body`,
/// after waiting for `release` when given one.
struct MockServer {
    base_url: String,
    handle: JoinHandle<Received>,
}

impl MockServer {
    fn start(
        status: &str,
        headers: &[(&str, &str)],
        body: &str,
        release: Option<mpsc::Receiver<()>>,
    ) -> MockServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let base_url = format!("http://{}/v1", listener.local_addr().unwrap());
        let mut head = format!("HTTP/1.1 {status}\r\n");
        for (name, value) in headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str(&format!(
            "Content-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        ));
        let reply = head + body;
        let handle = thread::spawn(move || {
            let (stream, _) = listener.accept().unwrap();
            stream
                .set_read_timeout(Some(Duration::from_secs(10)))
                .unwrap();
            let received = read_request(&stream);
            if let Some(release) = release {
                let _ = release.recv_timeout(Duration::from_secs(10));
            }
            let mut stream = stream;
            let _ = stream.write_all(reply.as_bytes());
            received
        });
        MockServer { base_url, handle }
    }

    /// A server that answers one request with a `text/event-stream` body written step by
    /// step, then closes the connection (the end of the body).
    fn stream(steps: Vec<Step>) -> MockServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let base_url = format!("http://{}/v1", listener.local_addr().unwrap());
        let handle = thread::spawn(move || {
            let (stream, _) = listener.accept().unwrap();
            stream
                .set_read_timeout(Some(Duration::from_secs(10)))
                .unwrap();
            let received = read_request(&stream);
            let mut stream = stream;
            let _ = stream.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n",
            );
            for step in steps {
                match step {
                    Step::Send(text) => {
                        let _ = stream.write_all(text.as_bytes());
                    }
                    Step::Wait(release) => {
                        let _ = release.recv_timeout(Duration::from_secs(10));
                    }
                }
            }
            received
        });
        MockServer { base_url, handle }
    }

    fn provider(&self, timeout: Duration) -> OpenAiProvider {
        OpenAiProvider::new(OpenAiConfig {
            base_url: self.base_url.clone(),
            api_key: ApiKey::new(KEY),
            timeout,
        })
        .unwrap()
    }

    fn received(self) -> Received {
        self.handle.join().unwrap()
    }
}

/// One step of a streamed answer.
enum Step {
    /// Write these bytes.
    Send(String),
    /// Wait until the test releases the server.
    Wait(mpsc::Receiver<()>),
}

fn read_request(stream: &TcpStream) -> Received {
    let mut reader = BufReader::new(stream);
    let mut request_line = String::new();
    reader.read_line(&mut request_line).unwrap();
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let (name, value) = line.split_once(':').unwrap();
        headers.push((name.trim().to_owned(), value.trim().to_owned()));
    }
    let length: usize = headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
        .map_or(0, |(_, v)| v.parse().unwrap());
    let mut body = vec![0; length];
    reader.read_exact(&mut body).unwrap();
    Received {
        request_line: request_line.trim_end().to_owned(),
        headers,
        body: String::from_utf8(body).unwrap(),
    }
}

fn completion() -> String {
    json!({
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": "gpt-test-2024",
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": "README says hello."},
            "finish_reason": "stop",
        }],
        "usage": {"prompt_tokens": 31, "completion_tokens": 4, "total_tokens": 35},
    })
    .to_string()
}

fn assert_no_key(error: &ProviderError) {
    assert!(!error.to_string().contains(KEY), "{error}");
    assert!(!format!("{error:?}").contains(KEY), "{error:?}");
}

#[test]
fn posts_the_request_and_reads_the_completion() {
    let server = MockServer::start(
        "200 OK",
        &[("Content-Type", "application/json")],
        &completion(),
        None,
    );
    let provider = server.provider(Duration::from_secs(10));
    let mut request = conversation();
    request.extra.insert("stream".to_owned(), json!(true));
    request.extra.insert("top_p".to_owned(), json!(0.9));

    let answer = provider.complete(&request).unwrap();
    assert_eq!(provider.name(), "openai");
    assert_eq!(
        answer,
        ChatResponse {
            id: "chatcmpl-1".to_owned(),
            model: "gpt-test-2024".to_owned(),
            content: "README says hello.".to_owned(),
            finish_reason: "stop".to_owned(),
            usage: Usage {
                prompt_tokens: 31,
                completion_tokens: 4,
            },
            tool_calls: Vec::new(),
        }
    );

    let received = server.received();
    assert_eq!(received.request_line, "POST /v1/chat/completions HTTP/1.1");
    assert_eq!(
        received.header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert_eq!(received.header("content-type"), Some("application/json"));
    let body: Value = serde_json::from_str(&received.body).unwrap();
    let mut expected = request.to_json();
    expected["stream"] = json!(false);
    assert_eq!(body, expected);
}

#[test]
fn unauthorized_drops_the_servers_message() {
    let body = json!({"error": {"message": format!("Incorrect API key provided: {KEY}")}});
    let server = MockServer::start("401 Unauthorized", &[], &body.to_string(), None);
    let error = server
        .provider(Duration::from_secs(10))
        .complete(&conversation())
        .unwrap_err();
    assert_eq!(error, ProviderError::Unauthorized { status: 401 });
    assert_eq!(
        error.to_string(),
        "the provider rejected the api key (http 401)"
    );
    assert_no_key(&error);
    server.received();
}

#[test]
fn rate_limit_carries_retry_after() {
    let server = MockServer::start(
        "429 Too Many Requests",
        &[("Retry-After", "7")],
        r#"{"error":{"message":"slow down"}}"#,
        None,
    );
    let error = server
        .provider(Duration::from_secs(10))
        .complete(&conversation())
        .unwrap_err();
    assert_eq!(
        error,
        ProviderError::RateLimited {
            retry_after: Some(Duration::from_secs(7))
        }
    );
    assert_eq!(
        error.to_string(),
        "the provider is rate limiting requests (retry after 7 s)"
    );
    server.received();
}

#[test]
fn server_errors_keep_a_scrubbed_message() {
    let body = json!({"error": {"message": format!("upstream broke while using {KEY}")}});
    let server = MockServer::start("503 Service Unavailable", &[], &body.to_string(), None);
    let error = server
        .provider(Duration::from_secs(10))
        .complete(&conversation())
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "the provider failed (http 503): upstream broke while using <redacted>"
    );
    assert_no_key(&error);
    server.received();
}

#[test]
fn other_statuses_are_rejections() {
    let server = MockServer::start("404 Not Found", &[], "no such model", None);
    let error = server
        .provider(Duration::from_secs(10))
        .complete(&conversation())
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "the provider refused the request (http 404): no such model"
    );
    server.received();
}

#[test]
fn malformed_bodies_are_errors() {
    let cases = [
        (
            "this is not json",
            "the body is not json (expected ident at line 1 column 2)",
        ),
        (
            r#"{"id":"x","model":"m","choices":[]}"#,
            "`choices` is missing or empty",
        ),
    ];
    for (body, reason) in cases {
        let server = MockServer::start("200 OK", &[], body, None);
        let error = server
            .provider(Duration::from_secs(10))
            .complete(&conversation())
            .unwrap_err();
        assert_eq!(
            error,
            ProviderError::MalformedResponse {
                reason: reason.to_owned()
            }
        );
        server.received();
    }
}

#[test]
fn a_silent_server_times_out() {
    let (release, wait) = mpsc::channel();
    let server = MockServer::start("200 OK", &[], &completion(), Some(wait));
    let timeout = Duration::from_millis(300);
    let error = server
        .provider(timeout)
        .complete(&conversation())
        .unwrap_err();
    assert_eq!(error, ProviderError::Timeout { after: timeout });
    assert_eq!(
        error.to_string(),
        "the provider did not answer within 0.3 s"
    );
    release.send(()).unwrap();
    server.received();
}

#[test]
fn an_unreachable_server_is_a_transport_error() {
    // Bind then drop a listener: the port is (very likely) closed right after.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let provider = OpenAiProvider::new(OpenAiConfig::new(
        format!("http://127.0.0.1:{port}/v1"),
        ApiKey::new(KEY),
    ))
    .unwrap();
    let error = provider.complete(&conversation()).unwrap_err();
    assert!(
        matches!(error, ProviderError::Transport { .. }),
        "{error:?}"
    );
    assert_no_key(&error);
}

// ---- streaming ----

/// An SSE event carrying one chunk.
fn event(chunk: &Value) -> Step {
    Step::Send(format!("data: {chunk}\n\n"))
}

fn content_chunk(content: &str) -> Value {
    json!({"id": "chatcmpl-9", "object": "chat.completion.chunk", "created": 1_700_000_000,
           "model": "gpt-test-2024",
           "choices": [{"index": 0, "delta": {"content": content}, "finish_reason": null}]})
}

fn role_chunk() -> Value {
    json!({"id": "chatcmpl-9", "object": "chat.completion.chunk", "created": 1_700_000_000,
           "model": "gpt-test-2024",
           "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""},
                        "finish_reason": null}]})
}

fn finish_chunk(reason: &str) -> Value {
    json!({"id": "chatcmpl-9", "object": "chat.completion.chunk", "created": 1_700_000_000,
           "model": "gpt-test-2024",
           "choices": [{"index": 0, "delta": {}, "finish_reason": reason}]})
}

fn usage_chunk() -> Value {
    json!({"id": "chatcmpl-9", "object": "chat.completion.chunk", "created": 1_700_000_000,
           "model": "gpt-test-2024", "choices": [],
           "usage": {"prompt_tokens": 31, "completion_tokens": 4, "total_tokens": 35}})
}

fn done() -> Step {
    Step::Send("data: [DONE]\n\n".to_owned())
}

/// Streams `request` through `provider`; the pieces reported, and the answer.
fn stream_through(
    provider: &OpenAiProvider,
    on_piece: &mut dyn FnMut(&str),
) -> (Vec<String>, Result<ChatResponse, ProviderError>) {
    let mut pieces = Vec::new();
    let answer = provider.stream(&conversation(), &mut |delta| {
        assert_eq!((delta.id, delta.model), ("chatcmpl-9", "gpt-test-2024"));
        pieces.push(delta.content.to_owned());
        on_piece(delta.content);
    });
    (pieces, answer)
}

#[test]
fn streams_chunks_as_they_arrive_and_assembles_the_answer() {
    let (release, wait) = mpsc::channel();
    let server = MockServer::stream(vec![
        // A comment, an event name and CRLF line ends are all legal SSE.
        Step::Send(": keep-alive\r\n\r\n".to_owned()),
        Step::Send(format!("event: message\r\ndata: {}\r\n\r\n", role_chunk())),
        event(&content_chunk("README")),
        // The rest is sent only once the first piece has been reported: a provider that
        // waited for the whole body would time out here.
        Step::Wait(wait),
        event(&content_chunk(" says")),
        event(&content_chunk(" hello.")),
        event(&finish_chunk("length")),
        event(&usage_chunk()),
        done(),
    ]);
    let provider = server.provider(Duration::from_secs(5));
    let mut release = Some(release);
    let (pieces, answer) = stream_through(&provider, &mut |_| {
        if let Some(release) = release.take() {
            release.send(()).unwrap();
        }
    });
    assert_eq!(pieces, ["README", " says", " hello."]);
    assert_eq!(
        answer.unwrap(),
        ChatResponse {
            id: "chatcmpl-9".to_owned(),
            model: "gpt-test-2024".to_owned(),
            content: "README says hello.".to_owned(),
            finish_reason: "length".to_owned(),
            usage: Usage {
                prompt_tokens: 31,
                completion_tokens: 4,
            },
            tool_calls: Vec::new(),
        }
    );

    let received = server.received();
    assert_eq!(received.header("accept"), Some("text/event-stream"));
    let body: Value = serde_json::from_str(&received.body).unwrap();
    let mut expected = conversation().to_json();
    expected["stream"] = json!(true);
    expected["stream_options"] = json!({"include_usage": true});
    assert_eq!(body, expected);
}

#[test]
fn a_stream_without_usage_or_finish_reason_reads_as_a_whole_answer_would() {
    // The last event is not followed by a blank line: the connection's end closes it.
    let server = MockServer::stream(vec![
        event(&content_chunk("hi")),
        Step::Send("data: [DONE]\n".to_owned()),
    ]);
    let (pieces, answer) = stream_through(&server.provider(Duration::from_secs(5)), &mut |_| {});
    assert_eq!(pieces, ["hi"]);
    let answer = answer.unwrap();
    assert_eq!(
        (answer.finish_reason.as_str(), answer.usage),
        ("unknown", Usage::default())
    );
    server.received();
}

#[test]
fn a_stream_answered_with_an_error_status_maps_like_a_whole_call() {
    let cases = [
        (
            "401 Unauthorized",
            &[][..],
            format!(r#"{{"error":{{"message":"bad key {KEY}"}}}}"#),
        ),
        (
            "429 Too Many Requests",
            &[("Retry-After", "2")][..],
            "{}".to_owned(),
        ),
        (
            "503 Service Unavailable",
            &[][..],
            format!("overloaded for {KEY}"),
        ),
        ("404 Not Found", &[][..], "no such model".to_owned()),
    ];
    for (status, headers, body) in cases {
        let whole = MockServer::start(status, headers, &body, None);
        let expected = whole
            .provider(Duration::from_secs(5))
            .complete(&conversation())
            .unwrap_err();
        whole.received();
        let streamed = MockServer::start(status, headers, &body, None);
        let (pieces, error) =
            stream_through(&streamed.provider(Duration::from_secs(5)), &mut |_| {});
        let error = error.unwrap_err();
        assert_eq!(error, expected, "{status}");
        assert!(pieces.is_empty());
        assert_no_key(&error);
        streamed.received();
    }
}

#[test]
fn a_broken_stream_is_an_error_after_the_pieces_before_it() {
    let cases = [
        (
            vec![
                event(&content_chunk("one")),
                Step::Send("data: {\"id\": \n\n".to_owned()),
            ],
            "stream chunk 2 is not json (EOF while parsing a value at line 1 column 7)",
        ),
        (
            vec![event(&content_chunk("one")), event(&content_chunk("two"))],
            "the stream ended before `data: [DONE]`",
        ),
        (
            vec![
                event(&content_chunk("one")),
                event(&json!({"id": "chatcmpl-9", "model": "gpt-test-2024",
                              "choices": [{"index": 0, "delta": {"content": 7}}]})),
            ],
            "`choices[0].delta.content` of stream chunk 2 is not a string",
        ),
        (
            vec![done()],
            "the stream ended with `data: [DONE]` before any chunk",
        ),
    ];
    for (steps, reason) in cases {
        let server = MockServer::stream(steps);
        let (pieces, answer) =
            stream_through(&server.provider(Duration::from_secs(5)), &mut |_| {});
        assert_eq!(
            answer.unwrap_err(),
            ProviderError::MalformedResponse {
                reason: reason.to_owned()
            }
        );
        assert!(pieces.len() <= 2, "{pieces:?}");
        server.received();
    }
}

#[test]
fn an_error_chunk_ends_the_stream_with_a_scrubbed_message() {
    let server = MockServer::stream(vec![
        event(&content_chunk("one")),
        event(
            &json!({"error": {"message": format!("the server had an error with {KEY}"),
                                "type": "server_error"}}),
        ),
    ]);
    let (pieces, answer) = stream_through(&server.provider(Duration::from_secs(5)), &mut |_| {});
    assert_eq!(pieces, ["one"]);
    let error = answer.unwrap_err();
    assert_eq!(
        error.to_string(),
        "the provider failed mid-stream: the server had an error with <redacted>"
    );
    assert_no_key(&error);
    server.received();
}

#[test]
fn a_stream_that_stalls_times_out() {
    let (release, wait) = mpsc::channel();
    let server = MockServer::stream(vec![
        event(&role_chunk()),
        event(&content_chunk("one")),
        Step::Wait(wait),
        done(),
    ]);
    let timeout = Duration::from_millis(400);
    let (pieces, answer) = stream_through(&server.provider(timeout), &mut |_| {});
    assert_eq!(pieces, ["one"]);
    assert_eq!(
        answer.unwrap_err(),
        ProviderError::Timeout { after: timeout }
    );
    release.send(()).unwrap();
    server.received();
}

#[test]
fn a_server_that_answers_a_stream_whole_is_reported_once() {
    let server = MockServer::start(
        "200 OK",
        &[("Content-Type", "application/json")],
        &completion(),
        None,
    );
    let provider = server.provider(Duration::from_secs(5));
    let mut pieces = Vec::new();
    let answer = provider
        .stream(&conversation(), &mut |delta| {
            pieces.push(delta.content.to_owned())
        })
        .unwrap();
    assert_eq!(pieces, ["README says hello."]);
    assert_eq!(answer.content, "README says hello.");
    server.received();
}

// ---- tool calls ----

fn tool_call_chunk(pieces: Value) -> Value {
    json!({"id": "chatcmpl-9", "object": "chat.completion.chunk", "created": 1_700_000_000,
           "model": "gpt-test-2024",
           "choices": [{"index": 0, "delta": {"tool_calls": pieces}, "finish_reason": null}]})
}

fn call(id: &str, name: &str, arguments: &str) -> ToolCall {
    ToolCall {
        id: id.to_owned(),
        kind: "function".to_owned(),
        function: FunctionCall {
            name: name.to_owned(),
            arguments: arguments.to_owned(),
        },
    }
}

#[test]
fn streamed_tool_calls_are_assembled_per_index_and_reported_piece_by_piece() {
    // Two parallel calls, their arguments split across chunks and interleaved, as OpenAI
    // streams them: the first piece of a call names it, later ones only add arguments.
    let server = MockServer::stream(vec![
        event(&role_chunk()),
        event(&tool_call_chunk(
            json!([{"index": 0, "id": "call_a", "type": "function",
                                        "function": {"name": "read_file", "arguments": ""}}]),
        )),
        event(&tool_call_chunk(
            json!([{"index": 0, "function": {"arguments": "{\"path\": \"REA"}}]),
        )),
        event(&tool_call_chunk(
            json!([{"index": 1, "id": "call_b", "type": "function",
                                        "function": {"name": "list_dir", "arguments": "{}"}}]),
        )),
        event(&tool_call_chunk(
            json!([{"index": 0, "function": {"arguments": "DME.md\"}"}}]),
        )),
        event(&finish_chunk("tool_calls")),
        event(&usage_chunk()),
        done(),
    ]);
    let provider = server.provider(Duration::from_secs(5));
    let mut pieces = Vec::new();
    let answer = provider
        .stream(&conversation(), &mut |delta| {
            assert_eq!(delta.content, "");
            let call = delta.tool_call.unwrap();
            pieces.push((
                call.index,
                call.id.map(str::to_owned),
                call.name.map(str::to_owned),
                call.arguments.to_owned(),
            ));
        })
        .unwrap();
    let piece = |index, id: Option<&str>, name: Option<&str>, arguments: &str| {
        (
            index,
            id.map(str::to_owned),
            name.map(str::to_owned),
            arguments.to_owned(),
        )
    };
    assert_eq!(
        pieces,
        [
            piece(0, Some("call_a"), Some("read_file"), ""),
            piece(0, None, None, "{\"path\": \"REA"),
            piece(1, Some("call_b"), Some("list_dir"), "{}"),
            piece(0, None, None, "DME.md\"}"),
        ]
    );
    assert_eq!(answer.content, "");
    assert_eq!(answer.finish_reason, "tool_calls");
    assert_eq!(
        answer.tool_calls,
        [
            call("call_a", "read_file", "{\"path\": \"README.md\"}"),
            call("call_b", "list_dir", "{}")
        ]
    );
}

#[test]
fn a_streamed_tool_call_that_is_never_named_is_malformed() {
    let server = MockServer::stream(vec![
        event(&tool_call_chunk(
            json!([{"index": 1, "id": "call_b", "function": {"name": "f", "arguments": "{}"}}]),
        )),
        done(),
    ]);
    let answer = server
        .provider(Duration::from_secs(5))
        .stream(&conversation(), &mut |_| {});
    assert_eq!(
        answer.unwrap_err(),
        ProviderError::MalformedResponse {
            reason: "streamed tool call 0 has no `id` or no `function.name`".to_owned()
        }
    );
}
