//! Connections to the upstream MCP servers, spoken to with rmcp's client, their answers never
//! cached (a gateway must see what the server says now). A server is a child process started
//! with only the environment its configuration names (the host's is not passed on), in a
//! process group of its own that is killed, with everything the server started, when the
//! connection is dropped; or a streamable HTTP endpoint, its headers' values read from the
//! environment variables the configuration names. What a server sends unasked (progress,
//! sampling and elicitation requests, changed lists) goes through the session's
//! [`Downstream`].

#![expect(
    deprecated,
    reason = "the gateway speaks MCP up to 2025-11-25, where sampling, logging and resource subscriptions are current; rmcp marks them deprecated for 2026-07-28"
)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use axum::http::{HeaderName, HeaderValue};
use process_wrap::tokio::{CommandWrap, KillOnDrop, ProcessGroup};
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, CancelledNotificationParam,
    ClientConfig, ClientRequest, CompleteRequestParams, CompleteResult, CreateMessageRequestParams,
    CreateMessageResult, ElicitRequestParams, ElicitResult, GetPromptRequestParams,
    GetPromptResult, Implementation, JsonObject, LoggingMessageNotificationParam,
    ProgressNotificationParam, ProgressToken, Prompt, ReadResourceRequestParams,
    ReadResourceResult, RequestId, Resource, ResourceTemplate, ResourceUpdatedNotificationParam,
    ServerResult, SetLevelRequestParams, SubscribeRequestParams, Tool, UnsubscribeRequestParams,
};
use rmcp::service::{NotificationContext, PeerRequestOptions, RequestContext, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientCacheConfig, ClientHandler, RoleClient, ServiceExt};
use rmcp::{ErrorData as McpError, Peer};
use tokio::sync::mpsc;

use super::config::{Reach, ServerConfig};
use super::relay::Downstream;

/// Why an upstream could not be reached or did not answer.
#[derive(Debug, thiserror::Error)]
pub enum UpstreamError {
    /// The server did not start or did not complete the MCP handshake.
    #[error("upstream server `{server}` did not start: {reason}")]
    Start {
        /// The server's name.
        server: String,
        /// Why.
        reason: String,
    },
    /// The server answered a request with an error, or the connection broke.
    #[error("upstream server `{server}` failed: {reason}")]
    Failed {
        /// The server's name.
        server: String,
        /// Why.
        reason: String,
    },
    /// The server took longer than the configured timeout.
    #[error("upstream server `{server}` did not answer within {seconds} s")]
    Timeout {
        /// The server's name.
        server: String,
        /// The timeout.
        seconds: u64,
    },
}

/// Hears an upstream's notifications and requests: a changed tool list is passed on by the
/// server's name (the front reads it again and tells the client); the rest goes through the
/// session's [`Downstream`].
#[derive(Clone)]
pub struct Listener {
    name: String,
    changed: mpsc::UnboundedSender<String>,
    down: Arc<Downstream>,
}

impl ClientHandler for Listener {
    fn get_info(&self) -> ClientConfig {
        // Sampling and elicitation as the client offers them (each request is decided); roots
        // are not offered: a server such as the filesystem one would take the client's roots
        // over the folders configured for it.
        ClientConfig::new(
            self.down.offered(),
            Implementation::new("tollgate", env!("CARGO_PKG_VERSION")),
        )
    }

    async fn on_tool_list_changed(&self, _ctx: NotificationContext<RoleClient>) {
        let _ = self.changed.send(self.name.clone());
    }

    async fn on_resource_list_changed(&self, _ctx: NotificationContext<RoleClient>) {
        if let Some(client) = self.down.client() {
            let _ = client.notify_resource_list_changed().await;
        }
    }

    async fn on_prompt_list_changed(&self, _ctx: NotificationContext<RoleClient>) {
        if let Some(client) = self.down.client() {
            let _ = client.notify_prompt_list_changed().await;
        }
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _ctx: NotificationContext<RoleClient>,
    ) {
        self.down.progress(params).await;
    }

    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _ctx: NotificationContext<RoleClient>,
    ) {
        self.down.log(params).await;
    }

    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _ctx: NotificationContext<RoleClient>,
    ) {
        if let Some(client) = self.down.client() {
            let _ = client.notify_resource_updated(params).await;
        }
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _ctx: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, McpError> {
        self.down
            .ask_client(&self.name, "sampling", params, |client, p| async move {
                client.create_message(p).await
            })
            .await
    }

    async fn create_elicitation(
        &self,
        params: ElicitRequestParams,
        _ctx: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, McpError> {
        self.down
            .ask_client(&self.name, "elicitation", params, |client, p| async move {
                client.create_elicitation(p).await
            })
            .await
    }
}

/// Tells the server a call was given up (the client cancelled it, or it timed out) when
/// dropped armed.
struct CancelOnDrop {
    peer: Peer<RoleClient>,
    id: Option<RequestId>,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else { return };
        let peer = self.peer.clone();
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            handle.spawn(async move {
                let note = CancelledNotificationParam::new(
                    Some(id),
                    Some("the gateway's client gave the call up".into()),
                );
                let _ = peer.notify_cancelled(note).await;
            });
        }
    }
}

/// A connected upstream server.
pub struct Upstream {
    /// Its name in the configuration.
    pub name: String,
    service: RunningService<RoleClient, Listener>,
}

impl Upstream {
    /// Starts `server` and completes the MCP handshake. A changed tool list is announced on
    /// `changed` with the server's name.
    pub async fn start(
        server: &ServerConfig,
        changed: mpsc::UnboundedSender<String>,
        down: Arc<Downstream>,
        timeout: Duration,
    ) -> Result<Upstream, UpstreamError> {
        let start = |reason: String| UpstreamError::Start {
            server: server.name.clone(),
            reason,
        };
        let listener = Listener {
            name: server.name.clone(),
            changed,
            down,
        };
        let handshake = |r: Result<Result<_, _>, _>| {
            r.map_err(|_| start(format!("no MCP handshake within {} s", timeout.as_secs())))?
                .map_err(|e| start(format!("the MCP handshake failed: {e}")))
        };
        let service = match &server.reach {
            Reach::Command {
                command,
                args,
                env,
                cwd,
            } => {
                let transport = child(command, args, env, cwd.as_deref()).map_err(start)?;
                handshake(tokio::time::timeout(timeout, listener.serve(transport)).await)?
            }
            Reach::Url { url, headers } => {
                let config = http(url, headers).map_err(start)?;
                let transport = StreamableHttpClientTransport::from_config(config);
                handshake(tokio::time::timeout(timeout, listener.serve(transport)).await)?
            }
        };
        service
            .peer()
            .set_response_cache_config(ClientCacheConfig::disabled())
            .await;
        Ok(Upstream {
            name: server.name.clone(),
            service,
        })
    }

    /// The server's tools, every page.
    pub async fn tools(&self, timeout: Duration) -> Result<Vec<Tool>, UpstreamError> {
        self.within(timeout, self.service.list_all_tools()).await
    }

    /// Calls the server's tool `name` with `arguments`; the server's progress reaches the
    /// client under `progress` (its token) when given. Dropping the future, or the timeout,
    /// cancels the call upstream.
    pub async fn call(
        &self,
        name: &str,
        arguments: Option<JsonObject>,
        timeout: Duration,
        progress: Option<(&Downstream, ProgressToken)>,
    ) -> Result<CallToolResult, UpstreamError> {
        let mut params = CallToolRequestParams::new(name.to_string());
        if let Some(arguments) = arguments {
            params = params.with_arguments(arguments);
        }
        let peer = self.service.peer();
        let handle = peer
            .send_request_with_option(
                ClientRequest::CallToolRequest(CallToolRequest::new(params)),
                PeerRequestOptions::no_options(),
            )
            .await
            .map_err(|e| self.failed(e))?;
        let mut armed = CancelOnDrop {
            peer: peer.clone(),
            id: Some(handle.id.clone()),
        };
        let token = handle.progress_token.clone();
        if let Some((down, client)) = &progress {
            down.track_progress(token.clone(), client.clone());
        }
        let answered = tokio::time::timeout(timeout, handle.await_response()).await;
        if let Some((down, _)) = &progress {
            // rmcp hands each notification to a task of its own, so the server's last
            // progress may still be on its way when the result is: let those tasks run
            // before the token is forgotten (progress is a courtesy, never awaited further).
            for _ in 0..4 {
                tokio::task::yield_now().await;
            }
            down.forget_progress(&token);
        }
        let answered = answered.map_err(|_| self.timeout(timeout))?;
        armed.id = None;
        match answered.map_err(|e| self.failed(e))? {
            ServerResult::CallToolResult(result) => Ok(result),
            other => Err(self.failed(format!(
                "it answered tools/call with something else than a tool result: {other:?}"
            ))),
        }
    }

    /// The server's resources, every page (none when it offers none).
    pub async fn resources(&self, timeout: Duration) -> Result<Vec<Resource>, UpstreamError> {
        if !self.offers(|c| c.resources.is_some()) {
            return Ok(Vec::new());
        }
        self.within(timeout, self.service.list_all_resources())
            .await
    }

    /// The server's resource templates, every page (none when it offers no resources).
    pub async fn templates(
        &self,
        timeout: Duration,
    ) -> Result<Vec<ResourceTemplate>, UpstreamError> {
        if !self.offers(|c| c.resources.is_some()) {
            return Ok(Vec::new());
        }
        self.within(timeout, self.service.list_all_resource_templates())
            .await
    }

    /// The server's prompts, every page (none when it offers none).
    pub async fn prompts(&self, timeout: Duration) -> Result<Vec<Prompt>, UpstreamError> {
        if !self.offers(|c| c.prompts.is_some()) {
            return Ok(Vec::new());
        }
        self.within(timeout, self.service.list_all_prompts()).await
    }

    /// Reads the resource at `uri`.
    pub async fn read(
        &self,
        uri: &str,
        timeout: Duration,
    ) -> Result<ReadResourceResult, UpstreamError> {
        let params: ReadResourceRequestParams =
            serde_json::from_value(serde_json::json!({"uri": uri})).map_err(|e| self.failed(e))?;
        self.within(timeout, self.service.read_resource(params))
            .await
    }

    /// Gets prompt `name` with `arguments`.
    pub async fn prompt(
        &self,
        name: &str,
        arguments: Option<JsonObject>,
        timeout: Duration,
    ) -> Result<GetPromptResult, UpstreamError> {
        let params: GetPromptRequestParams =
            serde_json::from_value(serde_json::json!({"name": name, "arguments": arguments}))
                .map_err(|e| self.failed(e))?;
        self.within(timeout, self.service.get_prompt(params)).await
    }

    /// Sets the server's logging level.
    pub async fn set_level(
        &self,
        params: SetLevelRequestParams,
        timeout: Duration,
    ) -> Result<(), UpstreamError> {
        self.within(timeout, self.service.set_level(params)).await
    }

    /// Completes an argument of one of the server's prompts or templates.
    pub async fn complete(
        &self,
        params: CompleteRequestParams,
        timeout: Duration,
    ) -> Result<CompleteResult, UpstreamError> {
        self.within(timeout, self.service.complete(params)).await
    }

    /// Subscribes to one of the server's resources.
    pub async fn subscribe(
        &self,
        params: SubscribeRequestParams,
        timeout: Duration,
    ) -> Result<(), UpstreamError> {
        self.within(timeout, self.service.subscribe(params)).await
    }

    /// Unsubscribes from one of the server's resources.
    pub async fn unsubscribe(
        &self,
        params: UnsubscribeRequestParams,
        timeout: Duration,
    ) -> Result<(), UpstreamError> {
        self.within(timeout, self.service.unsubscribe(params)).await
    }

    /// Whether the server said at the handshake that it offers what `has` looks for.
    pub fn offers(&self, has: impl Fn(&rmcp::model::ServerCapabilities) -> bool) -> bool {
        self.service
            .peer_info()
            .is_some_and(|info| has(&info.capabilities))
    }

    async fn within<T>(
        &self,
        timeout: Duration,
        f: impl std::future::Future<Output = Result<T, rmcp::service::ServiceError>>,
    ) -> Result<T, UpstreamError> {
        tokio::time::timeout(timeout, f)
            .await
            .map_err(|_| self.timeout(timeout))?
            .map_err(|e| self.failed(e))
    }

    /// Whether the connection is gone (the server exited).
    pub fn is_closed(&self) -> bool {
        // `RunningService::is_closed` says only whether it was cancelled; a server that
        // exited ends the service loop, which closes the peer's channel.
        self.service.is_closed() || self.service.peer().is_transport_closed()
    }

    fn timeout(&self, timeout: Duration) -> UpstreamError {
        UpstreamError::Timeout {
            server: self.name.clone(),
            seconds: timeout.as_secs(),
        }
    }

    fn failed(&self, e: impl std::fmt::Display) -> UpstreamError {
        UpstreamError::Failed {
            server: self.name.clone(),
            reason: e.to_string(),
        }
    }
}

/// How many times a session starts an upstream server again after it exited.
pub const MAX_RESTARTS: u32 = 3;

/// An upstream server that is started again when it has exited (at the next request for it,
/// never by repeating the call it died in: that call may have had its effect), at most
/// [`MAX_RESTARTS`] times.
pub struct Supervised {
    /// Its name in the configuration.
    pub name: String,
    server: ServerConfig,
    changed: mpsc::UnboundedSender<String>,
    down: Arc<Downstream>,
    current: tokio::sync::RwLock<Arc<Upstream>>,
    restarts: AtomicU32,
}

impl Supervised {
    /// Starts `server` ([`Upstream::start`]).
    pub async fn start(
        server: &ServerConfig,
        changed: mpsc::UnboundedSender<String>,
        down: Arc<Downstream>,
        timeout: Duration,
    ) -> Result<Supervised, UpstreamError> {
        let up = Upstream::start(server, changed.clone(), down.clone(), timeout).await?;
        Ok(Supervised {
            name: server.name.clone(),
            server: server.clone(),
            changed,
            down,
            current: tokio::sync::RwLock::new(Arc::new(up)),
            restarts: AtomicU32::new(0),
        })
    }

    /// The connection, the server started again first if it has exited; with the number of
    /// the restart when there was one.
    pub async fn get(
        &self,
        timeout: Duration,
    ) -> Result<(Arc<Upstream>, Option<u32>), UpstreamError> {
        let current = self.current.read().await.clone();
        if !current.is_closed() {
            return Ok((current, None));
        }
        let mut slot = self.current.write().await;
        if !slot.is_closed() {
            return Ok((slot.clone(), None));
        }
        let done = self.restarts.load(Ordering::SeqCst);
        if done >= MAX_RESTARTS {
            return Err(UpstreamError::Failed {
                server: self.name.clone(),
                reason: format!(
                    "it exited, and was started again {MAX_RESTARTS} times already in this session; open a new session once it is fixed"
                ),
            });
        }
        self.restarts.store(done + 1, Ordering::SeqCst);
        let fresh = Arc::new(
            Upstream::start(
                &self.server,
                self.changed.clone(),
                self.down.clone(),
                timeout,
            )
            .await?,
        );
        *slot = fresh.clone();
        Ok((fresh, Some(done + 1)))
    }
}

/// A child process for `command`, with only the environment named, in a process group of
/// its own killed when dropped.
fn child(
    command: &str,
    args: &[String],
    env: &[String],
    cwd: Option<&Path>,
) -> Result<TokioChildProcess, String> {
    let program = resolve(command, cwd)?;
    let mut cmd = tokio::process::Command::new(&program);
    cmd.args(args).env_clear();
    for name in env {
        if let Some(value) = std::env::var_os(name) {
            cmd.env(name, value);
        }
    }
    if let Some(cwd) = cwd {
        cmd.current_dir(cwd);
    }
    let mut wrapped = CommandWrap::from(cmd);
    wrapped.wrap(ProcessGroup::leader()).wrap(KillOnDrop);
    // The server's stderr is the gateway's: its logs reach whoever runs the gateway, and
    // never the MCP client on stdout.
    let (transport, _) = TokioChildProcess::builder(wrapped)
        .stderr(std::process::Stdio::inherit())
        .spawn()
        .map_err(|e| format!("cannot run `{}`: {e}", program.display()))?;
    Ok(transport)
}

/// How to reach `url` over streamable HTTP, with `headers` whose values are read now from
/// the environment variables named.
fn http(
    url: &str,
    headers: &[(String, String)],
) -> Result<StreamableHttpClientTransportConfig, String> {
    // rustls with ring (the gateway's TLS elsewhere too); installed once per process.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut sent = HashMap::new();
    for (header, var) in headers {
        let value = std::env::var(var).map_err(|_| {
            format!("header `{header}` comes from the environment variable `{var}`, which is not set where the gateway runs")
        })?;
        let name = HeaderName::from_bytes(header.as_bytes())
            .map_err(|e| format!("header `{header}`: {e}"))?;
        let mut value = HeaderValue::from_str(&value).map_err(|_| {
            format!("the value of `{var}` (header `{header}`) is not a valid header value")
        })?;
        value.set_sensitive(true);
        sent.insert(name, value);
    }
    Ok(StreamableHttpClientTransportConfig::with_uri(url.to_string()).custom_headers(sent))
}

/// The program to run: a path as written (relative to the server's directory), else the
/// first executable of that name on the host's `PATH` — found here, since the server itself
/// is started without the host's environment.
fn resolve(command: &str, cwd: Option<&Path>) -> Result<PathBuf, String> {
    if command.contains('/') {
        let path = match cwd {
            Some(dir) if Path::new(command).is_relative() => dir.join(command),
            _ => PathBuf::from(command),
        };
        return Ok(path);
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join(command))
        .find(|p| is_executable(p))
        .ok_or_else(|| format!("`{command}` is not on the host's PATH; give its full path"))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}
