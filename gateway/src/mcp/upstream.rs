//! Connections to the upstream MCP servers, spoken to with rmcp's client, their answers never
//! cached (a gateway must see what the server says now). A server is a child process started
//! with only the environment its configuration names (the host's is not passed on), in a
//! process group of its own that is killed, with everything the server started, when the
//! connection is dropped; or a streamable HTTP endpoint, its headers' values read from the
//! environment variables the configuration names.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use axum::http::{HeaderName, HeaderValue};
use process_wrap::tokio::{CommandWrap, KillOnDrop, ProcessGroup};
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, Implementation,
    JsonObject, Tool,
};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientCacheConfig, ClientHandler, RoleClient, ServiceExt};
use tokio::sync::mpsc;

use super::config::{Reach, ServerConfig};

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

/// Hears an upstream's notifications: a changed tool list is passed on by the server's name.
#[derive(Clone)]
pub struct Listener {
    name: String,
    changed: mpsc::UnboundedSender<String>,
}

impl ClientHandler for Listener {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("tollgate", env!("CARGO_PKG_VERSION")),
        )
    }

    async fn on_tool_list_changed(&self, _ctx: NotificationContext<RoleClient>) {
        let _ = self.changed.send(self.name.clone());
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
        timeout: Duration,
    ) -> Result<Upstream, UpstreamError> {
        let start = |reason: String| UpstreamError::Start {
            server: server.name.clone(),
            reason,
        };
        let listener = Listener {
            name: server.name.clone(),
            changed,
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
        tokio::time::timeout(timeout, self.service.list_all_tools())
            .await
            .map_err(|_| self.timeout(timeout))?
            .map_err(|e| self.failed(e))
    }

    /// Calls the server's tool `name` with `arguments`; dropping the future cancels the call
    /// upstream.
    pub async fn call(
        &self,
        name: &str,
        arguments: Option<JsonObject>,
        timeout: Duration,
    ) -> Result<CallToolResult, UpstreamError> {
        let mut params = CallToolRequestParams::new(name.to_string());
        if let Some(arguments) = arguments {
            params = params.with_arguments(arguments);
        }
        tokio::time::timeout(timeout, self.service.call_tool(params))
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
    current: tokio::sync::RwLock<Arc<Upstream>>,
    restarts: AtomicU32,
}

impl Supervised {
    /// Starts `server` ([`Upstream::start`]).
    pub async fn start(
        server: &ServerConfig,
        changed: mpsc::UnboundedSender<String>,
        timeout: Duration,
    ) -> Result<Supervised, UpstreamError> {
        let up = Upstream::start(server, changed.clone(), timeout).await?;
        Ok(Supervised {
            name: server.name.clone(),
            server: server.clone(),
            changed,
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
        let fresh = Arc::new(Upstream::start(&self.server, self.changed.clone(), timeout).await?);
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
