//! The OpenAI-compatible provider: chat completions over HTTP (blocking `ureq`), whole or
//! streamed (`text/event-stream`, read in [`stream`]).

mod stream;

use std::fmt;
use std::io::BufReader;
use std::net::IpAddr;
use std::time::Duration;

use serde_json::{Value, json};

use super::{ChatDelta, ChatRequest, ChatResponse, Provider, ProviderError};
use stream::{ChunkAssembly, EventReader, ReadError};

/// How long a call may take, end to end, unless configured otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// How much of a server's error message an error keeps.
const MESSAGE_CHARS: usize = 300;

/// The largest streamed body read (what ureq allows a whole body by default).
const STREAM_LIMIT: u64 = 10 * 1024 * 1024;

/// An API key. `Debug` prints `ApiKey(<redacted>)`; there is no `Display`.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// Wraps a key.
    pub fn new(key: impl Into<String>) -> Self {
        ApiKey(key.into())
    }

    /// The key itself, for the `Authorization` header (and tests).
    pub(super) fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(<redacted>)")
    }
}

/// Where and how to reach an OpenAI-compatible server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenAiConfig {
    /// The API root, e.g. `https://api.openai.com/v1`; requests go to
    /// `{base_url}/chat/completions`.
    pub base_url: String,
    /// Sent as `Authorization: Bearer …`.
    pub api_key: ApiKey,
    /// End-to-end limit for one call (connect, send, read the whole response — for a
    /// streamed call, the whole stream).
    pub timeout: Duration,
}

impl OpenAiConfig {
    /// A configuration with the [`DEFAULT_TIMEOUT`].
    pub fn new(base_url: impl Into<String>, api_key: ApiKey) -> Self {
        OpenAiConfig {
            base_url: base_url.into(),
            api_key,
            timeout: DEFAULT_TIMEOUT,
        }
    }
}

/// Calls `POST {base_url}/chat/completions` with the request as JSON (`stream` forced to
/// `false`) and reads one `chat.completion`; or, for [`Provider::stream`], with `stream` and
/// `stream_options.include_usage` set, and reads the `chat.completion.chunk` events as they
/// arrive until `data: [DONE]`.
///
/// The agent has no retries and follows no redirects (an API that redirects is an error, and
/// the key must not travel to another host); proxies come from the usual environment
/// variables except for loopback servers, which are always reached directly. Errors map to
/// [`ProviderError`]: 401/403 `Unauthorized`, 429 `RateLimited` (with `Retry-After` in
/// seconds), 5xx `Server`, other statuses `Rejected`, timeouts `Timeout`, everything else
/// that stops an HTTP answer `Transport`; none carries the key. A stream that breaks after
/// its status (a chunk that is not JSON, an end before `[DONE]`) is `MalformedResponse`, an
/// error chunk from the server `StreamFailed`, and the timeout covers the whole stream.
pub struct OpenAiProvider {
    agent: ureq::Agent,
    endpoint: String,
    api_key: ApiKey,
    timeout: Duration,
}

impl fmt::Debug for OpenAiProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiProvider")
            .field("endpoint", &self.endpoint)
            .field("api_key", &self.api_key)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl OpenAiProvider {
    /// A provider for `config`. Fails if the base URL is not `http://…` or `https://…`.
    pub fn new(config: OpenAiConfig) -> Result<Self, ProviderError> {
        let base_url = config.base_url.trim().trim_end_matches('/');
        let host = url_host(base_url).ok_or_else(|| ProviderError::InvalidSetting {
            name: "base url".to_owned(),
            reason: format!("`{base_url}` is not an http:// or https:// url with a host"),
        })?;
        let mut builder = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            .timeout_global(Some(config.timeout))
            .user_agent(concat!("tollgate/", env!("CARGO_PKG_VERSION")));
        if is_loopback(host) {
            builder = builder.proxy(None);
        }
        Ok(OpenAiProvider {
            agent: ureq::Agent::new_with_config(builder.build()),
            endpoint: format!("{base_url}/chat/completions"),
            api_key: config.api_key,
            timeout: config.timeout,
        })
    }

    /// The URL requests are sent to.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    fn transport_error(&self, error: &ureq::Error) -> ProviderError {
        match error {
            ureq::Error::Timeout(_) => ProviderError::Timeout {
                after: self.timeout,
            },
            other => ProviderError::Transport {
                message: self.scrub(&other.to_string()),
            },
        }
    }

    /// The text with every occurrence of the key replaced.
    fn scrub(&self, text: &str) -> String {
        let key = self.api_key.expose();
        if key.is_empty() {
            text.to_owned()
        } else {
            text.replace(key, "<redacted>")
        }
    }

    /// A server's error message: `error.message` of a JSON error body, else the body;
    /// shortened and scrubbed.
    fn server_message(&self, body: &str) -> String {
        let from_json = serde_json::from_str::<Value>(body).ok().and_then(|value| {
            value
                .pointer("/error/message")
                .and_then(Value::as_str)
                .map(str::to_owned)
        });
        let text = from_json.unwrap_or_else(|| body.trim().to_owned());
        let mut short: String = text.chars().take(MESSAGE_CHARS).collect();
        if short.len() < text.len() {
            short.push('…');
        }
        if short.is_empty() {
            short.push_str("no message");
        }
        self.scrub(&short)
    }
}

impl OpenAiProvider {
    /// Posts the request (streamed or not) and returns the response if its status is a
    /// success; any other status is read and mapped to its error.
    fn post(
        &self,
        request: &ChatRequest,
        stream: bool,
    ) -> Result<ureq::http::Response<ureq::Body>, ProviderError> {
        let mut body = request.to_json();
        if let Value::Object(fields) = &mut body {
            fields.insert("stream".to_owned(), Value::Bool(stream));
            if stream {
                fields.insert(
                    "stream_options".to_owned(),
                    json!({ "include_usage": true }),
                );
            }
        }
        let accept = if stream {
            "text/event-stream"
        } else {
            "application/json"
        };
        let mut response = self
            .agent
            .post(&self.endpoint)
            .header("Authorization", format!("Bearer {}", self.api_key.expose()))
            .header("Content-Type", "application/json")
            .header("Accept", accept)
            .send(body.to_string())
            .map_err(|e| self.transport_error(&e))?;
        let status = response.status().as_u16();
        if (200..=299).contains(&status) {
            return Ok(response);
        }
        let retry_after = response
            .headers()
            .get("retry-after")
            .and_then(|value| value.to_str().ok())
            .and_then(parse_retry_after);
        let text = response
            .body_mut()
            .read_to_string()
            .map_err(|e| self.transport_error(&e))?;
        Err(match status {
            401 | 403 => ProviderError::Unauthorized { status },
            429 => ProviderError::RateLimited { retry_after },
            500..=599 => ProviderError::Server {
                status,
                message: self.server_message(&text),
            },
            _ => ProviderError::Rejected {
                status,
                message: self.server_message(&text),
            },
        })
    }

    /// Reads a whole `chat.completion` body.
    fn read_completion(
        &self,
        response: &mut ureq::http::Response<ureq::Body>,
    ) -> Result<ChatResponse, ProviderError> {
        let text = response
            .body_mut()
            .read_to_string()
            .map_err(|e| self.transport_error(&e))?;
        let value: Value =
            serde_json::from_str(&text).map_err(|e| ProviderError::MalformedResponse {
                reason: format!("the body is not json ({e})"),
            })?;
        ChatResponse::from_openai_json(&value)
    }
}

impl Provider for OpenAiProvider {
    fn name(&self) -> &str {
        "openai"
    }

    fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, ProviderError> {
        let mut response = self.post(request, false)?;
        self.read_completion(&mut response)
    }

    fn stream(
        &self,
        request: &ChatRequest,
        on_delta: &mut dyn FnMut(&ChatDelta<'_>),
    ) -> Result<ChatResponse, ProviderError> {
        let mut response = self.post(request, true)?;
        let is_json = response
            .headers()
            .get("content-type")
            .and_then(|value| value.to_str().ok())
            .is_some_and(|value| value.trim_start().starts_with("application/json"));
        if is_json {
            // A compatible server that does not stream answers whole: report it once.
            let whole = self.read_completion(&mut response)?;
            super::report_whole(&whole, on_delta);
            return Ok(whole);
        }
        let reader = response
            .into_body()
            .into_with_config()
            .limit(STREAM_LIMIT)
            .reader();
        let mut events = EventReader::new(BufReader::new(reader));
        let mut assembly = ChunkAssembly::default();
        loop {
            let data = events.next_data().map_err(|e| match e {
                ReadError::Io(io) => self.transport_error(&ureq::Error::from(io)),
                ReadError::NotUtf8 => ProviderError::MalformedResponse {
                    reason: "the stream is not utf-8".to_owned(),
                },
            })?;
            match data {
                None => {
                    return Err(ProviderError::MalformedResponse {
                        reason: "the stream ended before `data: [DONE]`".to_owned(),
                    });
                }
                Some(data) if data.trim() == "[DONE]" => return assembly.finish(),
                Some(data) => assembly.chunk(&data, on_delta).map_err(|e| match e {
                    ProviderError::StreamFailed { message } => ProviderError::StreamFailed {
                        message: self.server_message(&message),
                    },
                    other => other,
                })?,
            }
        }
    }
}

/// `Retry-After` in (possibly fractional) seconds; an HTTP date is ignored.
fn parse_retry_after(value: &str) -> Option<Duration> {
    let seconds: f64 = value.trim().parse().ok()?;
    Duration::try_from_secs_f64(seconds).ok()
}

/// The host of an `http://` or `https://` URL (without user info or port), if it has one.
fn url_host(url: &str) -> Option<&str> {
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))?;
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host_port = authority.rsplit('@').next().unwrap_or(authority);
    let host = if let Some(bracketed) = host_port.strip_prefix('[') {
        bracketed.split(']').next().unwrap_or("")
    } else {
        host_port.split(':').next().unwrap_or("")
    };
    (!host.is_empty()).then_some(host)
}

fn is_loopback(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost")
        || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}
