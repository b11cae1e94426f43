//! `POST /v1/chat/completions`: the OpenAI-compatible model proxy. The run is named by the
//! `X-Tollgate-Run` header (an OpenAI client sets it once as a default header); without it, the
//! call goes to the client's implicit run of the day (`runtime::implicit`). Model rules
//! and data rules decide before anything leaves; the call goes to the configured provider and
//! is recorded.
//!
//! `"stream": true` is answered as server-sent events in OpenAI's chunk format, as the
//! provider streams: policy decides first (a refusal is its usual JSON error, not a stream),
//! then each piece of text, or of a tool call (`delta.tool_calls[0]` with its `index`, the
//! call's `id`, `type` and `function.name` on its first piece, `function.arguments` pieces),
//! is forwarded as a `chat.completion.chunk` as it arrives, then the
//! finish chunk with the `tollgate` member, the usage chunk (`stream_options.include_usage`)
//! and `[DONE]`. A provider that fails before any text is answered with its error status; one
//! that fails mid-stream ends the stream with an OpenAI-style `data: {"error": …}` event.
//! The call runs on a blocking task that outlives the request, so a client that goes away
//! mid-stream still leaves its call recorded, with its output or its error.

use std::convert::Infallible;

use axum::Json;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::sse::{Event, Sse};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_stream::StreamExt as _;
use tokio_stream::wrappers::UnboundedReceiverStream;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::access::Caller;
use super::{ApiError, ApiJson, AppState, blocking};
use crate::providers::{ChatDelta, ChatRequest, ToolCallDelta};
use crate::runtime::{ChatOutcome, RuntimeError};

pub use crate::runtime::RUN_HEADER;

/// The routes of this resource.
pub(super) fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(chat_completions))
}

/// The body's schema: OpenAI's chat-completions request as [`ChatRequest`] reads it. The fields
/// the gateway reads are typed; every other field is passed on to the provider as it came.
struct ChatCompletionRequest;

impl utoipa::PartialSchema for ChatCompletionRequest {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        serde_json::from_value(chat_request_schema())
            .unwrap_or_else(|_| utoipa::openapi::ObjectBuilder::new().into())
    }
}

impl utoipa::ToSchema for ChatCompletionRequest {}

/// The JSON Schema of [`ChatCompletionRequest`] (keywords utoipa's model can hold: it drops the
/// others silently, which the test below would catch).
fn chat_request_schema() -> Value {
    let text_part = json!({
        "type": "object", "required": ["type", "text"],
        "properties": {"type": {"type": "string", "enum": ["text"]}, "text": {"type": "string"}},
    });
    let tool_call = json!({
        "type": "object", "required": ["id", "function"],
        "properties": {
            "id": {"type": "string"},
            "type": {"type": "string", "description": "`function` (the default)"},
            "function": {
                "type": "object", "required": ["name"],
                "properties": {
                    "name": {"type": "string"},
                    "arguments": {"type": "string", "description": "JSON text, kept verbatim"},
                },
            },
        },
    });
    let message = json!({
        "type": "object", "required": ["role"],
        "description": "One message; fields other than these are dropped.",
        "properties": {
            "role": {"type": "string", "description": "`system`, `user`, `assistant`, `tool`, …"},
            "content": {
                "description": "Text, null, or text parts (joined with newlines); other parts are refused",
                "oneOf": [{"type": "string"}, {"type": "null"}, {"type": "array", "items": text_part}],
            },
            "name": {"type": ["string", "null"]},
            "tool_calls": {"type": "array", "items": tool_call},
            "tool_call_id": {"type": ["string", "null"]},
        },
    });
    let request = json!({
        "type": "object", "required": ["model", "messages"],
        "properties": {
            "model": {"type": "string", "pattern": "\\S", "description": "The model; `PROVIDER/MODEL` names its provider"},
            "messages": {"type": "array", "minItems": 1, "items": message},
            "temperature": {"type": ["number", "null"]},
            "max_tokens": {"type": ["integer", "null"], "minimum": 0, "maximum": u32::MAX},
        },
        "additionalProperties": true,
    });
    request
}

/// An OpenAI-compatible chat completion, decided by the run's envelopes and recorded.
#[utoipa::path(post, path = "/v1/chat/completions", tag = "models",
    params(("X-Tollgate-Run" = Option<String>, Header, description = "The run the call belongs to. Without it the call goes to the client's implicit run of the day, `implicit-CLIENT-YYYYMMDD` (CLIENT: the request's `user` when it is a plain id, else `openai-client`; agent CLIENT, task `implicit`), governed by the envelopes attached to that agent")),
    request_body(content = ChatCompletionRequest, description = "OpenAI's chat-completions request (`model`, `messages`, `tools`, `stream`, ...; messages may carry `tool_calls` and `tool_call_id`). `model` may name its provider: `openai/gpt-4.1-mini`."),
    responses(
        (status = 200, description = "A `chat.completion` (the model's `tool_calls` in `message.tool_calls`) with a `tollgate` member (run, receipt, what policy did to each message); when `stream` is true, a `text/event-stream` of `chat.completion.chunk` (text and `tool_calls` pieces) forwarded as the provider streams, the finish chunk carrying the `tollgate` member, ended by `[DONE]` (or by a `{\"error\": ...}` event if the provider fails mid-stream)", body = Object),
        (status = 400, description = "The body is not JSON", body = super::ErrorBody),
        (status = 403, description = "The model, or a message, is denied by policy (the decision is in `details`)", body = super::ErrorBody),
        (status = 404, description = "No run of the id `X-Tollgate-Run` names", body = super::ErrorBody),
        (status = 409, description = "The run is finished", body = super::ErrorBody),
        (status = 429, description = "The provider is rate limiting (`Retry-After` says when to try again)", body = super::ErrorBody),
        (status = 502, description = "The provider failed", body = super::ErrorBody),
    ))]
async fn chat_completions(
    State(state): State<AppState>,
    caller: Caller,
    headers: HeaderMap,
    ApiJson(body): ApiJson<ChatRequest>,
) -> Result<Response, ApiError> {
    let named = headers
        .get(RUN_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(str::to_string);
    let run = match named {
        Some(run) => {
            caller.reach_run(&state.runtime, &run)?;
            run
        }
        // An unmodified OpenAI client: its calls go to its implicit run of the day. An
        // agent's credential names the client itself (the body's `user` cannot).
        None => {
            let client = if caller.0.is_agent() {
                crate::runtime::client_of(Some(&caller.0.name))
            } else {
                crate::runtime::client_of(body.extra.get("user").and_then(Value::as_str))
            };
            // A run with a cached engine is open: no store read, no thread switch. The write
            // recording the call checks that it still runs.
            let id = state.runtime.implicit_run_id(&client);
            let id = if state.runtime.engine_cached(&id) {
                id
            } else {
                let who = caller.0.clone();
                blocking(&state, move |rt| rt.implicit_run_as(&client, Some(&who))).await?
            };
            // An agent whose name is not a plain id gets `openai-client`'s run: refused.
            caller.reach_run(&state.runtime, &id)?;
            id
        }
    };
    let stream = body.extra.get("stream").and_then(Value::as_bool) == Some(true);
    let include_usage = body
        .extra
        .get("stream_options")
        .and_then(|o| o.get("include_usage"))
        .and_then(Value::as_bool)
        == Some(true);
    if stream {
        return stream_completion(&state, run, body, include_usage).await;
    }
    let outcome = blocking(&state, move |rt| rt.chat(&run, body)).await?;
    Ok(Json(outcome.to_openai_json()).into_response())
}

/// What the blocking side of a stream sends: events, or, only as the first frame, the error
/// of a call refused or failed before any text (answered with its status, not a stream).
type Frame = Result<Event, ApiError>;

/// Decides and forwards the call on a blocking task, answering with the stream of its chunks
/// once the first one (or the error) arrives.
async fn stream_completion(
    state: &AppState,
    run: String,
    body: ChatRequest,
    include_usage: bool,
) -> Result<Response, ApiError> {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let runtime = state.runtime.clone();
    // Detached on purpose: the call is decided, forwarded and recorded to its end whether or
    // not anyone still reads the stream. The channel is unbounded so a slow reader never
    // holds up the upstream (the provider bounds the body's size).
    drop(tokio::task::spawn_blocking(move || {
        let mut sink = ChunkSink::new(tx, include_usage);
        let result = runtime
            .allow_chat(&run, body)
            .and_then(|allowed| runtime.stream_chat(allowed, &mut |delta| sink.delta(delta)));
        sink.finish(result);
    }));
    let first = rx
        .recv()
        .await
        .ok_or_else(|| ApiError::Internal("the streaming task sent nothing".to_owned()))??;
    let rest = UnboundedReceiverStream::new(rx).map(|frame| Ok(frame.unwrap_or_else(error_event)));
    let events = tokio_stream::once(Ok::<_, Infallible>(first)).chain(rest);
    Ok(Sse::new(events).into_response())
}

/// Turns the provider's pieces and the call's outcome into OpenAI's stream: a role chunk,
/// content chunks, a finish chunk with the `tollgate` member, an optional usage chunk, then
/// `[DONE]`.
struct ChunkSink {
    tx: mpsc::UnboundedSender<Frame>,
    include_usage: bool,
    /// Whether the role chunk has been sent (the client has a 200 stream).
    started: bool,
    /// Whether the outcome has been sent.
    finished: bool,
}

impl ChunkSink {
    fn new(tx: mpsc::UnboundedSender<Frame>, include_usage: bool) -> Self {
        ChunkSink {
            tx,
            include_usage,
            started: false,
            finished: false,
        }
    }

    fn send(&self, frame: Frame) {
        // A client that went away has dropped the receiver; the call goes on regardless.
        let _ = self.tx.send(frame);
    }

    fn send_chunk(&self, id: &str, model: &str, delta: Value, finish: Value) {
        self.send(Ok(data_event(&chunk(id, model, delta, finish))));
    }

    fn start(&mut self, id: &str, model: &str) {
        if !self.started {
            self.started = true;
            let role = json!({ "role": "assistant", "content": "" });
            self.send_chunk(id, model, role, Value::Null);
        }
    }

    fn delta(&mut self, delta: &ChatDelta<'_>) {
        self.start(delta.id, delta.model);
        let piece = match &delta.tool_call {
            None => json!({ "content": delta.content }),
            Some(call) => json!({ "tool_calls": [tool_call_piece(call)] }),
        };
        self.send_chunk(delta.id, delta.model, piece, Value::Null);
    }

    fn finish(mut self, result: Result<ChatOutcome, RuntimeError>) {
        self.finished = true;
        let outcome = match result {
            Ok(outcome) => outcome,
            Err(e) => {
                let error = ApiError::from(e);
                let frame = if self.started {
                    Ok(error_event(error))
                } else {
                    Err(error)
                };
                self.send(frame);
                return;
            }
        };
        let r = &outcome.response;
        self.start(&r.id, &r.model);
        let mut last = chunk(&r.id, &r.model, json!({}), json!(r.finish_reason));
        if let Some(obj) = last.as_object_mut() {
            obj.insert("tollgate".into(), outcome.tollgate_member());
        }
        self.send(Ok(data_event(&last)));
        if self.include_usage {
            let total = r
                .usage
                .prompt_tokens
                .saturating_add(r.usage.completion_tokens);
            self.send(Ok(data_event(&json!({
                "id": r.id, "object": "chat.completion.chunk", "created": 0, "model": r.model,
                "choices": [],
                "usage": { "prompt_tokens": r.usage.prompt_tokens,
                           "completion_tokens": r.usage.completion_tokens, "total_tokens": total },
            }))));
        }
        self.send(Ok(Event::default().data("[DONE]")));
    }
}

impl Drop for ChunkSink {
    /// A task that panicked before sending the outcome still ends the answer with an error
    /// (the stream would otherwise just stop, which a client may take for a complete answer).
    fn drop(&mut self) {
        if !self.finished {
            let error = ApiError::Internal("the streaming task stopped before the end".to_owned());
            let frame = if self.started {
                Ok(error_event(error))
            } else {
                Err(error)
            };
            self.send(frame);
        }
    }
}

/// One `chat.completion.chunk`. `created` is 0, as in whole answers (no clock in answers).
fn chunk(id: &str, model: &str, delta: Value, finish: Value) -> Value {
    json!({
        "id": id, "object": "chat.completion.chunk", "created": 0, "model": model,
        "choices": [{ "index": 0, "delta": delta, "finish_reason": finish }],
    })
}

/// A tool call's piece as OpenAI streams it: `index`, then `id`, `type` and `function.name` on
/// the piece that names the call, and more `function.arguments`.
fn tool_call_piece(call: &ToolCallDelta<'_>) -> Value {
    let mut function = serde_json::Map::new();
    if let Some(name) = call.name {
        function.insert("name".into(), json!(name));
    }
    function.insert("arguments".into(), json!(call.arguments));
    let mut piece = serde_json::Map::new();
    piece.insert("index".into(), json!(call.index));
    if let Some(id) = call.id {
        piece.insert("id".into(), json!(id));
        piece.insert("type".into(), json!("function"));
    }
    piece.insert("function".into(), Value::Object(function));
    Value::Object(piece)
}

fn data_event(value: &Value) -> Event {
    Event::default().data(value.to_string())
}

/// The error as the stream's last event, `data: {"error": {"code", "message", "details"}}`:
/// OpenAI's clients raise an error for a chunk with an `error` member.
fn error_event(error: ApiError) -> Event {
    data_event(&error.into_body())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chat_request_schema_keeps_every_keyword_it_is_written_with() {
        let rendered =
            serde_json::to_value(<ChatCompletionRequest as utoipa::PartialSchema>::schema());
        assert_eq!(rendered.ok(), Some(chat_request_schema()));
    }
}
