//! The HTTP gateway: an axum router over the [`Runtime`](crate::runtime::Runtime), built by
//! [`router`] (so tests can call it without a socket) and served by [`serve`] with graceful
//! shutdown. Routes are grouped by resource in the submodules; every one but `GET /health`
//! needs the bearer token, and Host/Origin checks refuse foreign pages (see `security`).
//!
//! A write the gateway acknowledges has committed (the store answers only after commit), so
//! stopping the server — gracefully, or not — loses no acknowledged write.

mod chat;
mod error;
mod policies;
mod runs;
mod security;
mod tools;

use std::net::IpAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::middleware::from_fn_with_state;
use axum::routing::get;
use serde_json::json;

pub use error::{ApiError, ApiJson};
pub use security::resolve_token;

use crate::runtime::Runtime;

/// Request bodies above this are refused with 413 (unless configured otherwise).
pub const DEFAULT_BODY_LIMIT: usize = 2 * 1024 * 1024;

/// How the server is set up.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    /// Address to bind (loopback by default).
    pub addr: IpAddr,
    /// Port.
    pub port: u16,
    /// Largest accepted request body.
    pub body_limit: usize,
    /// Host names accepted besides `127.0.0.1`, `localhost` and `[::1]`.
    pub extra_hosts: Vec<String>,
}

impl Default for ServeConfig {
    fn default() -> Self {
        ServeConfig {
            addr: IpAddr::from([127, 0, 0, 1]),
            port: 8000,
            body_limit: DEFAULT_BODY_LIMIT,
            extra_hosts: Vec::new(),
        }
    }
}

/// What every handler sees.
#[derive(Clone)]
pub struct AppState {
    /// The runtime.
    pub runtime: Arc<Runtime>,
    /// The bearer token.
    pub token: Arc<str>,
    /// The configuration.
    pub config: Arc<ServeConfig>,
}

/// The whole API. Layers run outside in: Host/Origin, body size, token.
pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/health", get(health))
        .merge(runs::routes())
        .merge(tools::routes())
        .merge(chat::routes())
        .merge(policies::routes())
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(state.config.body_limit))
        .layer(from_fn_with_state(state.clone(), security::require_token))
        .layer(from_fn_with_state(state.clone(), security::check_body_size))
        .layer(from_fn_with_state(state.clone(), security::check_origin))
        .with_state(state)
}

async fn health() -> axum::Json<serde_json::Value> {
    axum::Json(json!({ "status": "ok", "version": env!("CARGO_PKG_VERSION") }))
}

async fn not_found(uri: axum::http::Uri) -> ApiError {
    ApiError::NotFound(format!("no route `{}`", uri.path()))
}

/// Serves `router(state)` on `listener` until `shutdown` resolves; in-flight requests finish
/// first.
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: AppState,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, router(state))
        .with_graceful_shutdown(shutdown)
        .await
}
