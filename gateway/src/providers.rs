//! Provider adapters: what answers a model call once policy has allowed it.
//!
//! Every adapter implements [`Provider`] over one request type, [`ChatRequest`], which is
//! OpenAI's chat-completions request body (so an agent's request deserialises into it as it
//! is) and whose [`ChatRequest::hash`] identifies a request for recording and replay.
//!
//! - [`FakeProvider`] (the default): a deterministic function of the whole request, so tests
//!   and demos run offline and any change to the compiled context changes the output.
//! - [`ReplayProvider`]: serves recorded responses by request hash; a request that differs
//!   from every recording is a [`ProviderError::ReplayMiss`], never a silent live call.
//! - [`OpenAiProvider`]: OpenAI-compatible chat completions over HTTP (blocking `ureq`),
//!   streamed from the upstream token by token when asked to ([`Provider::stream`]).
//!
//! [`provider_from_env`] picks one from `TOLLGATE_PROVIDER` and friends (see [`config`]).
//! Providers are synchronous; an async caller runs them on a blocking thread. A streamed call
//! reports the text as it arrives and still returns the whole [`ChatResponse`], the same one
//! [`Provider::complete`] would have returned, so what is recorded does not depend on how
//! the client asked.
//!
//! Function calling is carried through: an assistant message's `tool_calls` and a `tool`
//! message's `tool_call_id` reach the provider, and the model's tool calls (whole, or
//! assembled from streamed deltas per index) are part of the [`ChatResponse`].
//!
//! Secrets: the API key lives in an [`ApiKey`], whose `Debug` is redacted, and no
//! [`ProviderError`] ever carries it (server messages are scrubbed of it).

pub mod config;
mod fake;
mod openai;
mod replay;
mod request;
#[cfg(test)]
mod tests;

use std::time::Duration;

pub use config::{ProviderConfig, provider_from_env, provider_from_lookup};
pub use fake::FakeProvider;
pub use openai::{ApiKey, DEFAULT_TIMEOUT, OpenAiConfig, OpenAiProvider};
pub use replay::ReplayProvider;
pub use request::{ChatMessage, ChatRequest, ChatResponse, FunctionCall, ToolCall, Usage};

/// Something that completes chat requests.
///
/// Implementations are `Send + Sync` so one instance can serve concurrent requests; calls
/// block (the HTTP gateway runs them on a blocking thread).
pub trait Provider: Send + Sync {
    /// A short stable name (`fake`, `replay`, `openai`), recorded with each call.
    fn name(&self) -> &str;

    /// Completes one request.
    fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, ProviderError>;

    /// Completes one request, calling `on_delta` with each piece of the answer as it
    /// arrives: text (pieces concatenate to the returned `content`; empty pieces are not
    /// reported) or a piece of a tool call (pieces of one index concatenate to the returned
    /// call's arguments).
    ///
    /// The default answers whole: it calls [`Provider::complete`] and reports the content
    /// once, then each tool call once, so deterministic providers (fake, replay) stream
    /// exactly what they complete.
    fn stream(
        &self,
        request: &ChatRequest,
        on_delta: &mut dyn FnMut(&ChatDelta<'_>),
    ) -> Result<ChatResponse, ProviderError> {
        let response = self.complete(request)?;
        report_whole(&response, on_delta);
        Ok(response)
    }
}

/// Reports a whole answer as pieces: its text once, then each tool call once.
fn report_whole(response: &ChatResponse, on_delta: &mut dyn FnMut(&ChatDelta<'_>)) {
    if !response.content.is_empty() {
        on_delta(&ChatDelta {
            id: &response.id,
            model: &response.model,
            content: &response.content,
            tool_call: None,
        });
    }
    for (index, call) in response.tool_calls.iter().enumerate() {
        on_delta(&ChatDelta {
            id: &response.id,
            model: &response.model,
            content: "",
            tool_call: Some(ToolCallDelta {
                index,
                id: Some(&call.id),
                name: Some(&call.function.name),
                arguments: &call.function.arguments,
            }),
        });
    }
}

/// A piece of a streamed answer: new text, or a piece of one tool call (then `content` is
/// empty).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChatDelta<'a> {
    /// The completion's id (as the provider names it; every piece of one answer has the same).
    pub id: &'a str,
    /// The model that answers (as the provider reports it).
    pub model: &'a str,
    /// The new text.
    pub content: &'a str,
    /// A piece of a tool call, in OpenAI's delta shape.
    pub tool_call: Option<ToolCallDelta<'a>>,
}

/// A piece of one tool call of a streamed answer (OpenAI's `delta.tool_calls[i]`): the first
/// piece of a call names it, later ones add to its arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolCallDelta<'a> {
    /// Which call of the answer (0, 1, … in the order the model made them).
    pub index: usize,
    /// The call's id, on its first piece.
    pub id: Option<&'a str>,
    /// The function's name, on its first piece.
    pub name: Option<&'a str>,
    /// More of the arguments' text (possibly empty).
    pub arguments: &'a str,
}

/// Why a provider could not complete a request or could not be configured.
///
/// No variant ever contains an API key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProviderError {
    /// Replay found no recording for the request.
    #[error("replay miss: request `{hash}` (model `{model}`) differs from every recorded request")]
    ReplayMiss {
        /// The request's [`ChatRequest::hash`].
        hash: String,
        /// The request's model.
        model: String,
    },
    /// `TOLLGATE_PROVIDER` names no provider that can be built from the environment.
    #[error("unknown provider `{name}`: expected `fake` or `openai`")]
    UnknownProvider {
        /// The value given.
        name: String,
    },
    /// The OpenAI provider was selected without a key.
    #[error("the openai provider needs an api key: set `PROVIDER_API_KEY` or `OPENAI_API_KEY`")]
    MissingApiKey,
    /// A configuration value is malformed.
    #[error("invalid provider setting `{name}`: {reason}")]
    InvalidSetting {
        /// The setting (an environment variable name).
        name: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The provider refused the credentials (HTTP 401 or 403). The server's message is
    /// dropped: OpenAI's echoes part of the key.
    #[error("the provider rejected the api key (http {status})")]
    Unauthorized {
        /// 401 or 403.
        status: u16,
    },
    /// HTTP 429.
    #[error("the provider is rate limiting requests{}", retry_hint(*retry_after))]
    RateLimited {
        /// The server's `Retry-After`, when it gave one in seconds.
        retry_after: Option<Duration>,
    },
    /// HTTP 5xx.
    #[error("the provider failed (http {status}): {message}")]
    Server {
        /// The status code.
        status: u16,
        /// The server's error message, if any (scrubbed of the key, shortened).
        message: String,
    },
    /// Any other non-success status (400, 404, a redirect, …).
    #[error("the provider refused the request (http {status}): {message}")]
    Rejected {
        /// The status code.
        status: u16,
        /// The server's error message, if any (scrubbed of the key, shortened).
        message: String,
    },
    /// No answer within the configured timeout.
    #[error("the provider did not answer within {} s", after.as_secs_f64())]
    Timeout {
        /// The configured timeout.
        after: Duration,
    },
    /// The request never got an HTTP answer (DNS, connection, TLS, protocol).
    #[error("could not reach the provider: {message}")]
    Transport {
        /// What went wrong (scrubbed of the key).
        message: String,
    },
    /// A success status whose body is not a chat completion (or, streamed, not a well-formed
    /// stream of chunks ending with `data: [DONE]`).
    #[error("the provider's response is not a chat completion: {reason}")]
    MalformedResponse {
        /// What is missing or wrong.
        reason: String,
    },
    /// A stream that had begun was ended by the provider with an error chunk
    /// (`data: {"error": …}`).
    #[error("the provider failed mid-stream: {message}")]
    StreamFailed {
        /// The provider's error message (scrubbed of the key, shortened).
        message: String,
    },
}

fn retry_hint(retry_after: Option<Duration>) -> String {
    match retry_after {
        Some(after) => format!(" (retry after {} s)", after.as_secs_f64()),
        None => String::new(),
    }
}
