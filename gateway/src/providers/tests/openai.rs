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
