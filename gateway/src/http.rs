//! The HTTP gateway: an axum router over the [`Runtime`](crate::runtime::Runtime), built by
//! [`router`] (so tests can call it without a socket) and served by [`serve`] with graceful
//! shutdown. Routes are grouped by resource in the submodules; every one but `GET /health`
//! needs the bearer token, and Host/Origin checks refuse foreign pages (see `security`).
//!
//! A write the gateway acknowledges has committed (the store answers only after commit), so
//! stopping the server — gracefully, or not — loses no acknowledged write.

mod access;
mod cases;
mod chat;
pub mod dashboard;
mod duplicate_keys;
mod error;
mod handoffs;
mod mcp_pins;
mod memory;
mod openapi;
mod pins;
mod policies;
mod regressions;
mod replays;
mod runs;
mod security;
mod tokens;
mod tools;

use crate::codes::http as codes;
use std::net::IpAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::middleware::from_fn_with_state;
use axum::routing::get;
use serde_json::json;

pub use crate::auth::write_private;
pub use chat::RUN_HEADER;
pub use error::{ApiError, ApiJson, ApiPath, ApiQuery};
pub use openapi::{ErrorBody, ErrorDetail};
pub use security::resolve_token;

use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::Principal;
use crate::auth::tokens::{self as token_store, TokenKey};
use crate::runtime::{Runtime, RuntimeError};

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
    /// The dashboard's browser sessions.
    pub dashboard: Arc<crate::auth::sessions::Sessions>,
    /// The packs registered at startup (`TOLLGATE_PACK_ROOTS`): only their cases can run here.
    pub packs: Arc<crate::packs::PackRegistry>,
    /// The key token secrets are hashed under; without one, only the owner's token works.
    pub token_key: Option<Arc<TokenKey>>,
    /// Tokens verified for tool calls, whose writes check that none changed since
    /// (`auth::verified`).
    pub verified: Arc<crate::auth::verified::VerifiedTokens>,
    /// Verifies JWTs from a team's identity provider, when configured.
    pub jwt: Option<Arc<crate::auth::jwt::JwtVerifier>>,
    /// The MCP gateway's configuration (`--mcp-config`): `/v1/mcp` answers with it.
    pub mcp: Option<Arc<crate::mcp::config::McpConfig>>,
    /// Cancelled when the server shuts down: ends the MCP sessions and their streams.
    pub shutdown: tokio_util::sync::CancellationToken,
}

impl AppState {
    /// The state of a gateway over `runtime` with bearer token `token`, no dashboard session
    /// open yet (and a fresh one-time login token).
    pub fn new(runtime: Arc<Runtime>, token: &str, config: ServeConfig) -> AppState {
        let sessions = crate::auth::sessions::Sessions::new(runtime.store().clone());
        AppState {
            runtime,
            token: Arc::from(token),
            config: Arc::new(config),
            dashboard: Arc::new(sessions),
            packs: Arc::new(crate::packs::PackRegistry::default()),
            token_key: None,
            verified: Arc::default(),
            jwt: None,
            mcp: None,
            shutdown: tokio_util::sync::CancellationToken::new(),
        }
    }

    /// The same state serving the MCP gateway of `config` at `/v1/mcp`.
    pub fn with_mcp(mut self, config: crate::mcp::config::McpConfig) -> AppState {
        self.mcp = Some(Arc::new(config));
        self
    }

    /// The same state taking the JWTs `verifier` accepts (`TOLLGATE_JWT_JWKS`).
    pub fn with_jwt(mut self, verifier: crate::auth::jwt::JwtVerifier) -> AppState {
        self.jwt = Some(Arc::new(verifier));
        self
    }

    /// The same state accepting the tokens of the store (`tollgate tokens create`), whose
    /// secrets are hashed under `key`.
    pub fn with_token_key(mut self, key: TokenKey) -> AppState {
        self.token_key = Some(Arc::new(key));
        self
    }

    /// The principal a presented bearer token stands for, if any: the owner's token, else a
    /// live token of the store, else a JWT of the configured identity provider. Both comparisons take the same time whatever the text.
    pub fn authenticate(&self, given: &str) -> Result<Option<Principal>, crate::store::StoreError> {
        if security::constant_time_eq(given.as_bytes(), self.token.as_bytes()) {
            return Ok(Some(Principal::owner()));
        }
        if given.starts_with(token_store::PREFIX) {
            return match &self.token_key {
                Some(key) => {
                    token_store::verify(self.runtime.store(), key, given, self.runtime.now_ms())
                }
                None => Ok(None),
            };
        }
        // A JWT (three dot-separated parts), checked against the identity provider's keys.
        match &self.jwt {
            Some(jwt) if given.matches('.').count() == 2 => Ok(jwt.verify(given).ok()),
            _ => Ok(None),
        }
    }

    /// [`AppState::authenticate`] for a tool call, whose write checks that no token changed
    /// since its token was verified: a token of the store verified before is admitted without
    /// reading its row (`auth::verified`), with the count of credential changes the write
    /// compares. Other credentials are checked as by `authenticate` (and need no such check).
    pub fn admit_for_write(
        &self,
        given: &str,
    ) -> Result<Option<(Principal, Option<i64>)>, crate::store::StoreError> {
        if let (true, Some(key)) = (given.starts_with(token_store::PREFIX), &self.token_key)
            && !security::constant_time_eq(given.as_bytes(), self.token.as_bytes())
        {
            let admitted =
                self.verified
                    .admit(self.runtime.store(), key, given, self.runtime.now_ms())?;
            return Ok(admitted.map(|a| (a.principal, Some(a.credentials_seen))));
        }
        Ok(self.authenticate(given)?.map(|p| (p, None)))
    }

    /// The same state running the cases of `packs`.
    pub fn with_packs(mut self, packs: crate::packs::PackRegistry) -> AppState {
        self.packs = Arc::new(packs);
        self
    }

    /// The dashboard URL with the one-time login token, while it is unused (the token is
    /// stored the first time, so any gateway on the same database takes it).
    pub fn dashboard_login_url(&self) -> Result<Option<String>, crate::store::StoreError> {
        let Some(token) = self.dashboard.login_token(self.runtime.now_ms())? else {
            return Ok(None);
        };
        Ok(Some(format!(
            "http://{}/ui/login?token={token}",
            self.config.public_authority()
        )))
    }
}

impl ServeConfig {
    /// Where a person reaches this gateway, as `host:port`, by a name its Host check accepts:
    /// the first `--allow-host` name when there is one (the load balancer's or the machine's
    /// name: every gateway behind it answers, since login tokens and sessions are stored);
    /// else `localhost` when it listens on every address (`0.0.0.0` is no address a browser
    /// can be sent to, nor a Host the gateway accepts); else the address it listens on.
    pub fn public_authority(&self) -> String {
        let host = match (self.extra_hosts.first(), self.addr) {
            (Some(name), _) => name.clone(),
            (None, a) if a.is_unspecified() => "localhost".into(),
            (None, IpAddr::V6(a)) => format!("[{a}]"),
            (None, IpAddr::V4(a)) => a.to_string(),
        };
        format!("{host}:{}", self.port)
    }
}

/// The whole API. Layers run outside in: Host/Origin, body size, token.
pub fn router(state: AppState) -> Router {
    let (api, doc) = api_routes().split_for_parts();
    // Rendered once: the document does not change while the gateway runs.
    let openapi = axum::body::Bytes::from(openapi::finish(doc).to_string());
    // `/v1/mcp` speaks MCP (JSON-RPC over streamable HTTP), not this API's JSON: it is behind
    // the same layers, and outside the OpenAPI document.
    let api = match &state.mcp {
        Some(config) => {
            let owners = crate::mcp::session::Owners::default();
            let service = crate::mcp::session::service(
                state.runtime.clone(),
                config.clone(),
                owners.clone(),
                state.shutdown.child_token(),
                state.config.body_limit,
            );
            api.merge(
                Router::new()
                    .route_service(MCP_PATH, service)
                    .layer(from_fn_with_state(owners, crate::mcp::session::guard)),
            )
        }
        None => api.route(MCP_PATH, axum::routing::any(mcp_not_configured)),
    };
    api.route(
        "/openapi.json",
        get(move || {
            let doc = openapi.clone();
            async move {
                (
                    [(axum::http::header::CONTENT_TYPE, "application/json")],
                    doc,
                )
            }
        }),
    )
    .route_layer(from_fn_with_state(state.clone(), access::authorize))
    .merge(
        dashboard::routes().route_layer(from_fn_with_state(state.clone(), dashboard::audit_forms)),
    )
    .fallback(not_found)
    .layer(DefaultBodyLimit::max(state.config.body_limit))
    .layer(from_fn_with_state(state.clone(), security::require_token))
    .layer(from_fn_with_state(state.clone(), security::check_body_size))
    .layer(from_fn_with_state(state.clone(), security::check_origin))
    .with_state(state)
}

/// Every documented route, with its OpenAPI description.
fn api_routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::with_openapi(openapi::ApiDoc::openapi())
        .routes(routes!(health))
        .merge(runs::routes())
        .merge(tools::routes())
        .merge(chat::routes())
        .merge(policies::routes())
        .merge(memory::routes())
        .merge(replays::routes())
        .merge(regressions::routes())
        .merge(handoffs::routes())
        .merge(cases::routes())
        .merge(pins::routes())
        .merge(mcp_pins::routes())
        .merge(tokens::routes())
}

/// The OpenAPI document of the gateway (`GET /openapi.json`), generated from the handlers.
pub fn openapi() -> serde_json::Value {
    openapi::finish(api_routes().into_openapi())
}

/// A query parameter naming one value of a snake_case enum (`effect=deny`), or a 422 saying
/// which values there are.
pub(crate) fn query_enum<T: serde::de::DeserializeOwned>(
    value: Option<String>,
    what: &str,
    choices: &str,
) -> Result<Option<T>, ApiError> {
    value
        .map(|v| {
            serde_json::from_value(serde_json::Value::String(v.clone())).map_err(|_| {
                ApiError::new(
                    codes::INVALID_QUERY,
                    format!("`{v}` is not {what}: use {choices}"),
                )
            })
        })
        .transpose()
}

/// A page size from the query: `default` when absent, else from 1 to `max`, or a 422 saying
/// the range (the document states the same range, so a generated client never sends more).
pub(crate) fn page_limit(value: Option<u32>, default: u32, max: u32) -> Result<u32, ApiError> {
    named_limit("limit", value, default, max)
}

/// [`page_limit`] for a query parameter of another name (`timeline_limit`), which the error
/// names as the caller sent it.
pub(crate) fn named_limit(
    name: &str,
    value: Option<u32>,
    default: u32,
    max: u32,
) -> Result<u32, ApiError> {
    match value {
        None => Ok(default),
        Some(n) if (1..=max).contains(&n) => Ok(n),
        Some(n) => Err(ApiError::new(
            codes::INVALID_QUERY,
            format!("`{name}` is {n}; it runs from 1 to {max}"),
        )),
    }
}

/// Runs blocking runtime work (store writes wait for their commit; providers block) off the
/// async workers.
pub(crate) async fn blocking<T, F>(state: &AppState, f: F) -> Result<T, ApiError>
where
    T: Send + 'static,
    F: FnOnce(&Runtime) -> Result<T, RuntimeError> + Send + 'static,
{
    let runtime = state.runtime.clone();
    tokio::task::spawn_blocking(move || f(&runtime))
        .await
        .map_err(|e| ApiError::Internal(format!("a blocking task failed: {e}")))?
        .map_err(ApiError::from)
}

/// Liveness: no token needed.
#[utoipa::path(get, path = "/health", tag = "health", security(()),
    responses((status = 200, description = "`{\"status\": \"ok\", \"version\"}`", body = Object)))]
async fn health() -> axum::Json<serde_json::Value> {
    axum::Json(json!({ "status": "ok", "version": env!("CARGO_PKG_VERSION") }))
}

/// Where the MCP gateway answers on `tollgate serve`.
pub const MCP_PATH: &str = "/v1/mcp";

async fn mcp_not_configured() -> ApiError {
    ApiError::Coded {
        code: codes::MCP_NOT_CONFIGURED,
        message: "this gateway serves no MCP servers\n  help: start it with `tollgate serve --mcp-config FILE` (the file `tollgate mcp proxy` takes)".into(),
        details: serde_json::Value::Null,
    }
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
    use axum::serve::ListenerExt as _;
    // TCP_NODELAY on every connection: a streamed answer is many small writes, and with Nagle's
    // algorithm each one after the first waited for the client's delayed ACK (~40 ms a chunk
    // at one connection; found by `benches/load`).
    let listener = listener.tap_io(|tcp| {
        if let Err(e) = tcp.set_nodelay(true) {
            eprintln!("tollgate: cannot set TCP_NODELAY on a connection: {e}");
        }
    });
    // The watcher that wakes approval long polls for decisions made through other gateways
    // on the same database; it ends with the server.
    tokio::spawn(crate::runtime::approval_waits::watch(
        state.runtime.clone(),
        state.shutdown.clone(),
    ));
    // MCP sessions hold streams open: they end first, so in-flight requests can finish.
    let sessions = state.shutdown.clone();
    let shutdown = async move {
        shutdown.await;
        sessions.cancel();
    };
    axum::serve(listener, router(state))
        .with_graceful_shutdown(shutdown)
        .await
}
