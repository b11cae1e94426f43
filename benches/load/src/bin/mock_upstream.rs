//! `mock_upstream PORT`: an OpenAI-compatible chat upstream that answers at once, so a proxy in
//! front of it shows only its own cost. `POST /v1/chat/completions` answers a fixed
//! `chat.completion`, or with `"stream": true` a fixed stream of `chat.completion.chunk` events
//! and `[DONE]`; `GET /v1/models` lists the model. Prints `listening on http://ADDR`.

use anyhow::Result;
use axum::Json;
use axum::Router;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};

const WORDS: [&str; 8] = [
    "The", " change", " looks", " safe", " to", " merge", " after", " tests.",
];

async fn chat(Json(body): Json<Value>) -> Response {
    let model = body["model"].as_str().unwrap_or("gpt-4.1-mini").to_string();
    if body["stream"].as_bool() == Some(true) {
        let mut out = String::new();
        let chunk = |delta: Value, finish: Value| {
            json!({"id": "chatcmpl-mock", "object": "chat.completion.chunk", "created": 1_764_000_000,
                   "model": model, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
        };
        out.push_str(&format!(
            "data: {}\n\n",
            chunk(json!({"role": "assistant", "content": ""}), Value::Null)
        ));
        for w in WORDS {
            out.push_str(&format!(
                "data: {}\n\n",
                chunk(json!({"content": w}), Value::Null)
            ));
        }
        out.push_str(&format!("data: {}\n\n", chunk(json!({}), json!("stop"))));
        out.push_str("data: [DONE]\n\n");
        return ([(header::CONTENT_TYPE, "text/event-stream")], out).into_response();
    }
    Json(json!({
        "id": "chatcmpl-mock", "object": "chat.completion", "created": 1_764_000_000, "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": WORDS.concat()}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 8, "total_tokens": 20}
    }))
    .into_response()
}

async fn models() -> Json<Value> {
    Json(
        json!({"object": "list", "data": [{"id": "gpt-4.1-mini", "object": "model", "owned_by": "mock"}]}),
    )
}

#[tokio::main]
async fn main() -> Result<()> {
    let port: u16 = std::env::args()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    let app = Router::new()
        .route("/v1/chat/completions", post(chat))
        .route("/chat/completions", post(chat))
        .route("/v1/models", get(models));
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    println!("listening on http://{}", listener.local_addr()?);
    axum::serve(listener, app).await?;
    Ok(())
}
