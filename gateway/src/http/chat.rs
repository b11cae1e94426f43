//! `POST /v1/chat/completions`: the OpenAI-compatible model proxy. The run is named by the
//! `X-Tollgate-Run` header (an OpenAI client sets it once as a default header). Model rules
//! and data rules decide before anything leaves; the call goes to the configured provider and
//! is recorded. `"stream": true` is answered as server-sent events in OpenAI's chunk format
//! (the provider answers whole; the gateway streams the decided, recorded answer).

use std::convert::Infallible;

use axum::Json;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::sse::{Event, Sse};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::{ApiError, ApiJson, AppState, blocking};
use crate::providers::ChatRequest;
use crate::runtime::ChatOutcome;

/// The header naming the run a model call belongs to.
pub const RUN_HEADER: &str = "x-tollgate-run";

/// The routes of this resource.
pub(super) fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(chat_completions))
}

/// An OpenAI-compatible chat completion, decided by the run's envelopes and recorded.
#[utoipa::path(post, path = "/v1/chat/completions", tag = "models",
    params(("X-Tollgate-Run" = String, Header, description = "The run the call belongs to")),
    request_body(content = Object, description = "OpenAI's chat-completions request (`model`, `messages`, `stream`, ...). `model` may name its provider: `openai/gpt-4.1-mini`."),
    responses(
        (status = 200, description = "A `chat.completion` (or `text/event-stream` of `chat.completion.chunk` when `stream` is true), with a `tollgate` member: run, receipt, what policy did to each message", body = Object),
        (status = 400, description = "No `X-Tollgate-Run` header", body = super::ErrorBody),
        (status = 403, description = "The model, or a message, is denied by policy (the decision is in `details`)", body = super::ErrorBody),
        (status = 502, description = "The provider failed", body = super::ErrorBody),
    ))]
async fn chat_completions(
    State(state): State<AppState>,
    headers: HeaderMap,
    ApiJson(body): ApiJson<ChatRequest>,
) -> Result<Response, ApiError> {
    let run = headers
        .get(RUN_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .ok_or_else(|| {
            ApiError::bad_request(
                "missing_run",
                "name the run with the `X-Tollgate-Run` header (open one with POST /v1/runs); \
                 with the openai client: `OpenAI(base_url=..., default_headers={\"X-Tollgate-Run\": run_id})`",
            )
        })?
        .to_string();
    let stream = body.extra.get("stream").and_then(Value::as_bool) == Some(true);
    let include_usage = body
        .extra
        .get("stream_options")
        .and_then(|o| o.get("include_usage"))
        .and_then(Value::as_bool)
        == Some(true);
    let outcome = blocking(&state, move |rt| rt.chat(&run, body)).await?;
    if stream {
        Ok(sse(&outcome, include_usage).into_response())
    } else {
        Ok(Json(outcome.to_openai_json()).into_response())
    }
}

/// The outcome as OpenAI's stream: a role chunk, content chunks, a finish chunk, an optional
/// usage chunk, then `[DONE]`.
fn sse(outcome: &ChatOutcome, include_usage: bool) -> impl IntoResponse + use<> {
    let r = &outcome.response;
    let chunk = |delta: Value, finish: Value| {
        json!({
            "id": r.id, "object": "chat.completion.chunk", "created": 0, "model": r.model,
            "choices": [{ "index": 0, "delta": delta, "finish_reason": finish }],
        })
    };
    let mut chunks = vec![chunk(
        json!({ "role": "assistant", "content": "" }),
        Value::Null,
    )];
    for piece in pieces(&r.content) {
        chunks.push(chunk(json!({ "content": piece }), Value::Null));
    }
    let mut last = chunk(json!({}), json!(r.finish_reason));
    if let Some(obj) = last.as_object_mut() {
        obj.insert(
            "tollgate".into(),
            outcome
                .to_openai_json()
                .get("tollgate")
                .cloned()
                .unwrap_or(Value::Null),
        );
    }
    chunks.push(last);
    if include_usage {
        let total = r
            .usage
            .prompt_tokens
            .saturating_add(r.usage.completion_tokens);
        chunks.push(json!({
            "id": r.id, "object": "chat.completion.chunk", "created": 0, "model": r.model,
            "choices": [],
            "usage": { "prompt_tokens": r.usage.prompt_tokens,
                       "completion_tokens": r.usage.completion_tokens, "total_tokens": total },
        }));
    }
    let mut events: Vec<Result<Event, Infallible>> = chunks
        .into_iter()
        .map(|c| Ok(Event::default().data(c.to_string())))
        .collect();
    events.push(Ok(Event::default().data("[DONE]")));
    Sse::new(tokio_stream::iter(events))
}

/// Splits text into word-sized pieces that concatenate back to it.
fn pieces(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut in_space = false;
    for (i, c) in text.char_indices() {
        let space = c.is_whitespace();
        // A piece is a run of spaces followed by a word.
        if in_space && !space && i > start && text[start..i].trim().is_empty() {
            in_space = false;
            continue;
        }
        if space && !in_space && i > start {
            out.push(&text[start..i]);
            start = i;
        }
        in_space = space;
    }
    if start < text.len() {
        out.push(&text[start..]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::pieces;

    #[test]
    fn pieces_concatenate_to_the_text() {
        for text in ["", "one", "one two  three", " lead", "trail ", "a\nb c"] {
            assert_eq!(pieces(text).concat(), text, "{text:?}");
        }
        assert_eq!(pieces("one two three"), ["one", " two", " three"]);
    }
}
