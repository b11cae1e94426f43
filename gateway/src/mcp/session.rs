//! `/v1/mcp`: the MCP gateway over streamable HTTP on `tollgate serve`, behind the same bearer
//! token, Host and Origin checks as every other route (`http::security`) and admitting agents
//! and admins (`http::access`).
//!
//! A session is bound at `initialize`, to the credential that sent it: it opens a run as the
//! configuration describes it (an agent's credential naming the agent and bounding scope and
//! clearance, as for `POST /v1/runs`), or joins the running run the client names in the
//! `x-tollgate-run` header, which the credential must reach. The session is then a [`Front`]
//! like the stdio proxy's, and every later request must come with the same credential: a
//! session id alone is not a credential. A session that ends (the client's `DELETE`, or
//! `keep_alive` without a request) finishes the run it opened and stops its upstreams.

#![expect(
    deprecated,
    reason = "the gateway speaks MCP up to 2025-11-25, where sampling, logging and resource subscriptions are current; rmcp marks them deprecated for 2026-07-28"
)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::request::Parts;
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, Extensions, GetPromptRequestParams, GetPromptResponse,
    InitializeRequestParams, InitializeResult, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ListToolsResult, PaginatedRequestParams, ProtocolVersion,
    ReadResourceRequestParams, ReadResourceResponse, ServerConfig,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use tokio_util::sync::CancellationToken;

use super::config::McpConfig;
use super::front::{self, Front, SessionRun};
use crate::auth::Principal;
use crate::runtime::Runtime;

/// The HTTP service of `/v1/mcp`.
pub type McpService = StreamableHttpService<HttpSession, LocalSessionManager>;

/// How long a session lives without a request before it ends (and its run is finished).
pub const SESSION_IDLE: Duration = Duration::from_secs(30 * 60);

/// One HTTP session: unbound until `initialize`, then the [`Front`] of its run.
pub struct HttpSession {
    runtime: Arc<Runtime>,
    config: Arc<McpConfig>,
    front: tokio::sync::OnceCell<Front>,
    /// The credential the session was opened with.
    opened_by: OnceLock<String>,
    /// Every session's credential, by session id (this one's entry goes with it).
    owners: Owners,
    /// This session's id, once the client has used it.
    id: OnceLock<String>,
}

/// The credential (its id) each live session was opened with, by session id: a request
/// naming a session opened with another credential is answered as for an unknown session.
#[derive(Clone, Default)]
pub struct Owners(Arc<Mutex<HashMap<String, String>>>);

impl Owners {
    fn owner(&self, session: &str) -> Option<String> {
        self.0.lock().ok()?.get(session).cloned()
    }
}

impl Drop for HttpSession {
    fn drop(&mut self) {
        if let (Some(id), Ok(mut owners)) = (self.id.get(), self.owners.0.lock()) {
            owners.remove(id);
        }
    }
}

/// In front of the MCP service: a request that names a session (`mcp-session-id`) opened
/// with another credential gets rmcp's answer for an unknown session (404), so one
/// credential cannot read another's stream or close its session; and a closed session's
/// `DELETE` answers 200, as the Python and TypeScript SDKs' servers do (rmcp says 202, which
/// the Python client logs as a failure).
pub async fn guard(State(owners): State<Owners>, req: Request, next: Next) -> Response {
    let session = req
        .headers()
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    if let Some(session) = session
        && let Some(owner) = owners.owner(&session)
    {
        let asking = req.extensions().get::<Principal>().map(|p| p.id.as_str());
        if asking != Some(owner.as_str()) {
            return (StatusCode::NOT_FOUND, "Not Found: Session not found").into_response();
        }
    }
    let delete = req.method() == Method::DELETE;
    let mut response = next.run(req).await;
    if delete && response.status() == StatusCode::ACCEPTED {
        *response.status_mut() = StatusCode::OK;
    }
    response
}

/// The header naming a streamable HTTP session.
const SESSION_HEADER: &str = "mcp-session-id";

/// The service answering `/v1/mcp` for `config`; sessions end when `cancel` is cancelled (the
/// server shutting down).
pub fn service(
    runtime: Arc<Runtime>,
    config: Arc<McpConfig>,
    owners: Owners,
    cancel: CancellationToken,
    body_limit: usize,
) -> McpService {
    // Host and Origin are checked by the gateway's own layer, which knows its `--host`
    // names; rmcp's list would refuse them.
    let http = StreamableHttpServerConfig::default()
        .disable_allowed_hosts()
        .with_cancellation_token(cancel)
        .with_max_request_body_bytes(body_limit);
    let mut sessions = LocalSessionManager::default();
    sessions.session_config.keep_alive = Some(SESSION_IDLE);
    StreamableHttpService::new(
        move || {
            Ok(HttpSession {
                runtime: runtime.clone(),
                config: config.clone(),
                front: tokio::sync::OnceCell::new(),
                opened_by: OnceLock::new(),
                owners: owners.clone(),
                id: OnceLock::new(),
            })
        },
        Arc::new(sessions),
        http,
    )
}

/// The principal the bearer token named (`http::security::require_token` put it in the
/// request's extensions; rmcp hands the request's parts on).
fn principal_of(extensions: &Extensions) -> Option<Principal> {
    extensions
        .get::<Parts>()?
        .extensions
        .get::<Principal>()
        .cloned()
}

/// The run the client asks to join, from the `x-tollgate-run` header.
fn joined_run(extensions: &Extensions) -> Option<String> {
    let value = extensions
        .get::<Parts>()?
        .headers
        .get(crate::runtime::RUN_HEADER)?;
    Some(value.to_str().ok()?.trim().to_string()).filter(|v| !v.is_empty())
}

impl HttpSession {
    /// The session's front, for a request sent with the credential that opened it.
    fn bound(&self, extensions: &Extensions) -> Result<&Front, McpError> {
        let front = self.front.get().ok_or_else(|| {
            McpError::invalid_request(
                "the session is not initialized: send `initialize` first",
                None,
            )
        })?;
        let asking = principal_of(extensions).map(|p| p.id);
        if asking.as_deref() != self.opened_by.get().map(String::as_str) {
            return Err(McpError::invalid_request(
                "this session was opened with another credential; a session id is not a credential\n  help: open a session of your own with `initialize`",
                None,
            ));
        }
        Ok(front)
    }
}

impl ServerHandler for HttpSession {
    fn get_info(&self) -> ServerConfig {
        front::server_info(self.front.get().map(Front::run))
    }

    fn supported_protocol_versions(&self) -> std::borrow::Cow<'static, [ProtocolVersion]> {
        front::protocol_versions()
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, McpError> {
        if self.front.initialized() {
            return Err(McpError::invalid_request(
                "the session is initialized already",
                None,
            ));
        }
        let principal = principal_of(&ctx.extensions).ok_or_else(|| {
            McpError::invalid_request("no credential: send `Authorization: Bearer TOKEN`", None)
        })?;
        let how = match joined_run(&ctx.extensions) {
            Some(run) => SessionRun::Join {
                run,
                principal: Some(principal.clone()),
            },
            None => SessionRun::Open(Some(principal.clone())),
        };
        let started = Front::start(
            self.runtime.clone(),
            self.config.clone(),
            how,
            Some(&request.capabilities),
        )
        .await?;
        let run = started.run().to_string();
        if self.front.set(started).is_err() {
            return Err(McpError::invalid_request(
                "the session is initialized already",
                None,
            ));
        }
        let _ = self.opened_by.set(principal.id.clone());
        eprintln!(
            "tollgate: mcp: session for {} in run {run}",
            principal.label()
        );
        ctx.peer.set_peer_info(request.clone());
        self.negotiate_initialize(&request)
    }

    async fn on_initialized(&self, ctx: NotificationContext<RoleServer>) {
        let session = ctx
            .extensions
            .get::<Parts>()
            .and_then(|p| p.headers.get(SESSION_HEADER))
            .and_then(|v| v.to_str().ok());
        if let (Some(session), Some(owner)) = (session, self.opened_by.get())
            && self.id.set(session.to_string()).is_ok()
            && let Ok(mut owners) = self.owners.0.lock()
        {
            owners.insert(session.to_string(), owner.clone());
        }
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        self.bound(&ctx.extensions)?
            .clone()
            .list_tools(request, ctx)
            .await
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        self.bound(&ctx.extensions)?
            .clone()
            .call_tool(request, ctx)
            .await
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        self.bound(&ctx.extensions)?
            .clone()
            .list_resources(request, ctx)
            .await
    }

    async fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        self.bound(&ctx.extensions)?
            .clone()
            .list_resource_templates(request, ctx)
            .await
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        self.bound(&ctx.extensions)?
            .clone()
            .read_resource(request, ctx)
            .await
    }

    async fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        self.bound(&ctx.extensions)?
            .clone()
            .list_prompts(request, ctx)
            .await
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        self.bound(&ctx.extensions)?
            .clone()
            .get_prompt(request, ctx)
            .await
    }

    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.bound(&ctx.extensions)?
            .clone()
            .set_level(request, ctx)
            .await
    }

    async fn complete(
        &self,
        request: rmcp::model::CompleteRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CompleteResult, McpError> {
        self.bound(&ctx.extensions)?
            .clone()
            .complete(request, ctx)
            .await
    }

    async fn subscribe(
        &self,
        request: rmcp::model::SubscribeRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.bound(&ctx.extensions)?
            .clone()
            .subscribe(request, ctx)
            .await
    }

    async fn unsubscribe(
        &self,
        request: rmcp::model::UnsubscribeRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.bound(&ctx.extensions)?
            .clone()
            .unsubscribe(request, ctx)
            .await
    }
}
