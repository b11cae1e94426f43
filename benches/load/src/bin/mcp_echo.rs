//! `mcp_echo`: the upstream of the MCP bench, an MCP server (rmcp) with one tool, `echo`, that
//! answers its `text` argument as one text content block and does nothing else, so a gateway in
//! front of it shows only its own cost.
//!
//! - `mcp_echo stdio`: MCP on stdin and stdout (one JSON-RPC message a line), as a client or a
//!   gateway launches it.
//! - `mcp_echo http PORT`: MCP's streamable HTTP at `/mcp` (sessions in memory); `PORT` 0 picks
//!   a free one. Prints `listening on http://ADDR`.
//!
//! Protocol versions are pinned up to 2025-11-25: the `initialize` handshake and sessions, as
//! Tollgate's front answers them (2026-07-28 would be stateless).

use std::borrow::Cow;
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ProtocolVersion, ServerCapabilities, ServerConfig,
    Tool, object,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt};
use serde_json::json;

#[derive(Clone)]
struct Echo {
    tools: Arc<Vec<Tool>>,
}

impl Echo {
    fn new() -> Self {
        let schema = object(json!({
            "type": "object",
            "properties": {"text": {"type": "string", "description": "What to answer"}},
            "required": ["text"]
        }));
        Echo {
            tools: Arc::new(vec![Tool::new("echo", "Answers its text", schema)]),
        }
    }
}

impl ServerHandler for Echo {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("mcp_echo", env!("CARGO_PKG_VERSION")))
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(ProtocolVersion::known_up_to(&ProtocolVersion::V_2025_11_25))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(self.tools.as_ref().clone()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        if request.name != "echo" {
            return Err(McpError::invalid_params(
                format!("unknown tool `{}`; the tool is echo", request.name),
                None,
            ));
        }
        let text = request
            .arguments
            .as_ref()
            .and_then(|a| a.get("text"))
            .and_then(|v| v.as_str())
            .ok_or_else(|| McpError::invalid_params("`text` (a string) is required", None))?;
        Ok(CallToolResult::success(vec![ContentBlock::text(text.to_string())]).into())
    }
}

async fn stdio() -> Result<()> {
    let running = Echo::new().serve(rmcp::transport::stdio()).await?;
    running.waiting().await?;
    Ok(())
}

async fn http(port: u16) -> Result<()> {
    let echo = Echo::new();
    let mcp = StreamableHttpService::new(
        move || Ok(echo.clone()),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    let app = axum::Router::new().nest_service("/mcp", mcp);
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    println!("listening on http://{}", listener.local_addr()?);
    axum::serve(listener, app).await?;
    Ok(())
}

#[tokio::main]
async fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("stdio") => stdio().await,
        Some("http") => {
            let port = match args.get(1) {
                Some(p) => p.parse().context("PORT is a number")?,
                None => 0,
            };
            http(port).await
        }
        _ => bail!("usage: mcp_echo stdio | mcp_echo http PORT"),
    }
}
