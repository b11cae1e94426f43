//! The MCP server an agent's client talks to. A session is one Tollgate run; the upstream
//! servers' tools are listed as `SERVER.TOOL` (server names hold no `.`, so a name maps to
//! one server and one tool, and no two collide), those the run's envelopes deny outright
//! hidden; every `tools/call` is decided through the runtime exactly as a `/v1` tool call —
//! the same receipt, proof, rate limits and approvals — before the upstream sees it.
//!
//! - allow → forwarded; redact → forwarded with the arguments as the data rules rewrote them;
//! - deny or rate limited → an error result naming the reason and the receipt (and
//!   `retry_after`), the upstream never called;
//! - approval → the call waits (up to `approval_wait_seconds`) for a person to decide it on
//!   the dashboard, the CLI or the API, with progress notifications when the client asked for
//!   them; approved, exactly the arguments approved run; rejected, an error result; still
//!   pending, an error result carrying the approval id, which the client may present again in
//!   the request's `_meta` (`tollgate/approval_id`).
//!
//! Results pass the live secret redactor before the client sees them and are recorded as the
//! call's `tool_result`; a result over `max_result_bytes` is cut, with a note. Resources and
//! prompts are decided as context items (`context`); what passes between client and servers
//! unasked, and the decisions both share, is the session's [`Downstream`] (`super::relay`).

#![expect(
    deprecated,
    reason = "the gateway speaks MCP up to 2025-11-25, where sampling, logging and resource subscriptions are current; rmcp marks them deprecated for 2026-07-28"
)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, GetPromptRequestParams,
    GetPromptResponse, Implementation, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ListToolsResult, PaginatedRequestParams, ProtocolVersion,
    ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::{Map, Value, json};
use tokio::sync::{RwLock, mpsc};

use super::config::McpConfig;
use super::pins::{self, Seen, ToolPin};
use super::relay::{self, Downstream, Held, Progress, decision_meta, receipt_text};
use super::upstream::{MAX_RESTARTS, Supervised, Upstream, UpstreamError};
use crate::auth::Principal;
use crate::runtime::{OpenRun, Runtime, RuntimeError, ToolCallAnswer};
use crate::secrets::redact_secrets;

mod context;
mod passthrough;
mod pinned;

/// The `_meta` key under which a client presents an approval granted for a call.
pub const APPROVAL_META: &str = "tollgate/approval_id";
/// The `_meta` key of a result under which the decision's receipt is given.
pub const DECISION_META: &str = "tollgate/decision";

/// Why a session could not start.
#[derive(Debug, thiserror::Error)]
pub enum FrontError {
    /// The run could not be opened.
    #[error("cannot open the session's run: {0}")]
    Run(#[from] RuntimeError),
    /// An upstream server did not start.
    #[error(transparent)]
    Upstream(#[from] UpstreamError),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    /// A blocking task did not finish.
    #[error("the gateway's worker thread failed: {0}")]
    Join(String),
}

/// One MCP session in front of the upstream servers: cheap to clone.
#[derive(Clone)]
pub struct Front {
    inner: Arc<Inner>,
}

/// A tool as the upstream lists it and as the client is shown it.
#[derive(Clone)]
struct Entry {
    /// `SERVER.TOOL`, the name policy decides.
    name: String,
    /// The name the client is shown and calls: `name`, or the server's own name for a server
    /// configured with `prefix: false` (unless another server's tool is shown by it first).
    shown: String,
    /// The upstream's index.
    at: usize,
    /// The tool as the upstream lists it now.
    tool: Tool,
    /// The definition the client is shown: the accepted one ([`pins`]); `None` when it does
    /// not read back, and the tool is not listed.
    served: Option<Tool>,
    /// Whether the upstream's definition was the accepted one when last listed (a call then
    /// needs no read of its pin: what the client was shown is what was accepted).
    accepted: bool,
}

struct Inner {
    runtime: Arc<Runtime>,
    config: Arc<McpConfig>,
    run: String,
    /// Whether the session opened its run, and has not finished it yet.
    owned: AtomicBool,
    upstreams: Vec<Supervised>,
    /// The upstreams' tools as last listed, by name.
    tools: RwLock<Vec<Entry>>,
    /// The side towards the client, shared with the upstreams.
    down: Arc<Downstream>,
    /// Where resource URIs are read, as last listed.
    routes: RwLock<context::Routes>,
}

/// Which run a session decides its calls in.
#[derive(Debug, Clone)]
pub enum SessionRun {
    /// A new run, as the configuration describes it, for the principal whose credential
    /// opened the session (none on stdio, where the command line is the store's owner); the
    /// session finishes it when it ends.
    Open(Option<Principal>),
    /// A running run the client named, which the principal reaches; left running when the
    /// session ends.
    Join {
        /// The run.
        run: String,
        /// Who asks (none on stdio).
        principal: Option<Principal>,
    },
}

/// A session's run is finished when the last handle on it goes (an HTTP session closed or
/// expired; a session that failed to start), if it was opened and not finished already.
impl Drop for Inner {
    fn drop(&mut self) {
        if !self.owned.swap(false, Ordering::SeqCst) {
            return;
        }
        let (rt, key) = (self.runtime.clone(), self.run.clone());
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => {
                handle.spawn_blocking(move || {
                    if let Err(e) = rt.finish_run(&key, "succeeded") {
                        eprintln!("tollgate: mcp: cannot finish run {key}: {e}");
                    }
                });
            }
            Err(_) => {
                if let Err(e) = rt.finish_run(&key, "succeeded") {
                    eprintln!("tollgate: mcp: cannot finish run {key}: {e}");
                }
            }
        }
    }
}

impl Front {
    /// Opens (or joins) the session's run and starts the upstream servers (all of them, or
    /// none: a server that does not start stops the session, a run it opened finished as
    /// failed).
    pub async fn start(
        runtime: Arc<Runtime>,
        config: Arc<McpConfig>,
        how: SessionRun,
        client: Option<&rmcp::model::ClientCapabilities>,
    ) -> Result<Front, FrontError> {
        let rt = runtime.clone();
        let (run, agent, owned) = match how {
            SessionRun::Open(principal) => {
                // An agent's credential names the agent, and takes no envelope from the
                // configuration: every agent token may open a session, so envelopes reach an
                // agent only through their own `attach: {agents: [...]}` (fail closed). The
                // configuration names agent and envelopes for the command line and admins.
                let agent = principal.as_ref().filter(|p| p.is_agent());
                let open = OpenRun {
                    id: None,
                    agent: agent.map_or_else(|| config.run.agent.clone(), |p| p.name.clone()),
                    task: config.run.task.clone(),
                    scope: config.run.scope.clone(),
                    clearance: config.run.clearance,
                    envelopes: match agent {
                        Some(_) => Vec::new(),
                        None => config.run.envelopes.clone(),
                    },
                    parent_run: None,
                    handoff: None,
                    metadata: Map::from_iter([("mcp".to_string(), json!(true))]),
                };
                let view = blocking(move || rt.open_run_as(open, principal.as_ref())).await??;
                (view.run.id, view.run.agent, true)
            }
            SessionRun::Join { run, principal } => {
                let key = run.clone();
                let agent = blocking(move || -> Result<String, RuntimeError> {
                    let (agent, scope) = rt.run_owner(&key)?;
                    if let Some(p) = &principal {
                        p.reaches_run(&key, &agent, &scope)?;
                    }
                    let status = rt.run_view(&key)?.run.status;
                    if status != "running" {
                        return Err(RuntimeError::Conflict(format!(
                            "run `{key}` is {status}; a session joins a running run\n  help: leave `{}` out to open a new run",
                            crate::runtime::RUN_HEADER
                        )));
                    }
                    Ok(agent)
                })
                .await??;
                (run, agent, false)
            }
        };
        let (changed, mut heard) = mpsc::unbounded_channel();
        let timeout = Duration::from_secs(config.call_timeout_seconds);
        let down = Arc::new(Downstream::new(
            runtime.clone(),
            run.clone(),
            agent,
            Duration::from_secs(config.approval_wait_seconds),
            client,
        ));
        let mut upstreams = Vec::new();
        for server in &config.servers {
            match Supervised::start(server, changed.clone(), down.clone(), timeout).await {
                Ok(u) => upstreams.push(u),
                Err(e) => {
                    if owned {
                        let (rt, key) = (runtime.clone(), run.clone());
                        let _ = blocking(move || rt.finish_run(&key, "failed")).await;
                    }
                    return Err(e.into());
                }
            }
        }
        let front = Front {
            inner: Arc::new(Inner {
                runtime,
                config,
                run,
                owned: AtomicBool::new(owned),
                upstreams,
                tools: RwLock::new(Vec::new()),
                down,
                routes: RwLock::new(context::Routes::default()),
            }),
        };
        for i in 0..front.inner.upstreams.len() {
            if let Err(e) = front.refresh(i).await {
                let _ = front.finish("failed").await;
                return Err(e);
            }
        }
        // A changed tool list upstream: read it again and tell the client.
        let weak = Arc::downgrade(&front.inner);
        tokio::spawn(async move {
            while let Some(name) = heard.recv().await {
                let Some(inner) = weak.upgrade() else { break };
                let front = Front { inner };
                let Some(i) = front.inner.upstreams.iter().position(|u| u.name == name) else {
                    continue;
                };
                if let Err(e) = front.refresh(i).await {
                    eprintln!("tollgate: mcp: cannot read the tools of `{name}` again: {e}");
                    continue;
                }
                if let Some(client) = front.inner.down.client() {
                    let _ = client.notify_tool_list_changed().await;
                }
            }
        });
        Ok(front)
    }

    /// The session's run.
    pub fn run(&self) -> &str {
        &self.inner.run
    }

    /// Finishes the session's run (`succeeded` when the client closed the session), if the
    /// session opened it; a joined run is left running.
    pub async fn finish(&self, status: &str) -> Result<(), FrontError> {
        if !self.inner.owned.swap(false, Ordering::SeqCst) {
            return Ok(());
        }
        let (rt, key, status) = (
            self.inner.runtime.clone(),
            self.inner.run.clone(),
            status.to_string(),
        );
        blocking(move || rt.finish_run(&key, &status)).await??;
        Ok(())
    }

    /// Reads upstream `i`'s tools again and observes their pins: a definition other than the
    /// accepted one is recorded in the run (once) and the accepted one stays what the client
    /// is shown.
    async fn refresh(&self, i: usize) -> Result<(), FrontError> {
        let upstream = &self.inner.upstreams[i];
        let listed = self.upstream(i).await?.tools(self.timeout()).await?;
        let (rt, server) = (self.inner.runtime.clone(), upstream.name.clone());
        let observed = blocking(move || {
            let at = rt.now_rfc3339();
            listed
                .into_iter()
                .map(|tool| {
                    let seen = pins::observe(rt.store(), &server, &tool, &at)?;
                    Ok((tool, seen))
                })
                .collect::<Result<Vec<_>, crate::store::StoreError>>()
        })
        .await??;
        let mut entries = Vec::new();
        for (tool, (seen, pin)) in observed {
            let name = format!("{}.{}", upstream.name, tool.name);
            if seen == (Seen::Changed { new: true }) {
                self.changed_definition(&name, &pin).await;
            }
            let accepted = pin.hash == pins::hash(&pins::definition(&tool));
            let served = if accepted {
                Some(tool.clone())
            } else {
                pins::tool_of(&pin.definition)
            };
            entries.push(Entry {
                shown: name.clone(),
                name,
                at: i,
                tool,
                served,
                accepted,
            });
        }
        let mut tools = self.inner.tools.write().await;
        tools.retain(|e| e.at != i);
        tools.extend(entries);
        tools.sort_by(|a, b| a.name.cmp(&b.name));
        self.name_shown(&mut tools);
        Ok(())
    }

    /// Sets the names the client is shown ([`Front::shown_names`]).
    fn name_shown(&self, tools: &mut [Entry]) {
        let items: Vec<(usize, String)> = tools
            .iter()
            .map(|e| (e.at, e.tool.name.to_string()))
            .collect();
        for (e, shown) in tools.iter_mut().zip(self.shown_names(&items)) {
            e.shown = shown;
        }
    }

    /// The names the client is shown for `items` (upstream, the server's own name):
    /// `SERVER.NAME`, or the server's own for a server configured with `prefix: false` —
    /// unless an item of a server before it (servers in name order, whatever the envelopes
    /// hide, so a name does not change with policy) is shown by that name (said on stderr), or the name holds a `.` (it could be another server's `SERVER.NAME`), when
    /// it keeps `SERVER.NAME`. Bare names hold no `.` and prefixed ones one at least, so no
    /// two items are shown by one name.
    fn shown_names(&self, items: &[(usize, String)]) -> Vec<String> {
        let mut taken: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
        let mut shown: Vec<String> = items
            .iter()
            .map(|(at, own)| format!("{}.{own}", self.inner.upstreams[*at].name))
            .collect();
        let mut order: Vec<usize> = (0..items.len()).collect();
        order.sort_by_key(|&k| items[k].0);
        for k in order {
            let (at, own) = (items[k].0, items[k].1.as_str());
            if self.inner.config.servers[at].prefix || own.contains('.') {
                continue;
            }
            match taken.get(own) {
                Some(first) if *first != at => eprintln!(
                    "tollgate: mcp: `{own}` of `{}` is shown as `{}`: one of `{}` is shown by that name",
                    self.inner.upstreams[at].name, shown[k], self.inner.upstreams[*first].name
                ),
                _ => {
                    taken.insert(own, at);
                    shown[k] = own.to_string();
                }
            }
        }
        shown
    }

    /// Records in the run that `name`'s definition changed (the gateway's own note, shown on
    /// the run's timeline), and says so on stderr.
    async fn changed_definition(&self, name: &str, pin: &ToolPin) {
        let Some(changed) = &pin.changed else { return };
        eprintln!(
            "tollgate: mcp: the definition of `{name}` changed ({} -> {}); it is refused until accepted: tollgate mcp pins accept {name} --by NAME",
            short(&pin.hash),
            short(&changed.hash)
        );
        let payload = json!({
            "mcp_tool_changed": {
                "tool": name,
                "accepted_hash": pin.hash,
                "changed_hash": changed.hash,
                "accepted": pin.definition,
                "changed": changed.definition,
            }
        });
        self.note(payload).await;
    }

    /// Records a note of the gateway in the run.
    async fn note(&self, payload: Value) {
        self.inner.down.note(payload).await;
    }

    /// Upstream `i`'s connection, the server started again if it has exited (recorded in the
    /// run as a note).
    async fn upstream(&self, i: usize) -> Result<Arc<Upstream>, UpstreamError> {
        let supervised = &self.inner.upstreams[i];
        let (upstream, restarted) = supervised.get(self.timeout()).await?;
        if let Some(n) = restarted {
            eprintln!(
                "tollgate: mcp: upstream server `{}` had exited; started again ({n} of {MAX_RESTARTS})",
                supervised.name
            );
            self.note(json!({"mcp_upstream_restarted": {
                "server": supervised.name, "restart": n, "of": MAX_RESTARTS,
            }}))
            .await;
        }
        Ok(upstream)
    }

    fn timeout(&self) -> Duration {
        Duration::from_secs(self.inner.config.call_timeout_seconds)
    }

    /// Calls the upstream with the arguments decided, then passes the result through the
    /// data rules, caps it and records it.
    async fn forward(
        &self,
        at: usize,
        tool: &Tool,
        answer: &ToolCallAnswer,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let arguments = match &answer.arguments {
            Value::Object(m) if m.is_empty() => None,
            Value::Object(m) => Some(m.clone()),
            _ => None,
        };
        let progress = ctx
            .meta
            .get_progress_token()
            .map(|token| (self.inner.down.as_ref(), token));
        let called = async {
            self.upstream(at)
                .await?
                .call(&tool.name, arguments, self.timeout(), progress)
                .await
        };
        let called = tokio::select! {
            r = called => r,
            _ = ctx.ct.cancelled() => {
                self.record(answer, "error", json!({"error": "cancelled by the client"})).await;
                return Err(McpError::internal_error("the client cancelled the call", None));
            }
        };
        let result = match called {
            Ok(result) => result,
            Err(e) => {
                self.record(answer, "error", json!({"error": e.to_string()}))
                    .await;
                return Ok(refusal(
                    answer,
                    format!(
                        "{e}; the call was allowed (receipt {})",
                        receipt_text(answer)
                    ),
                ));
            }
        };
        let (result, mut output, redacted) = self.pass(result)?;
        let status = if result.is_error == Some(true) {
            "error"
        } else {
            "ok"
        };
        if redacted > 0
            && let Value::Object(o) = &mut output
        {
            o.insert("redacted".into(), json!(redacted));
        }
        self.record(answer, status, output).await;
        Ok(with_decision(result, answer))
    }

    /// The result as the client may see it (secrets redacted, cut to the configured size),
    /// the same as JSON for the record, and how many secrets were redacted. Serialized once:
    /// this runs on every call.
    fn pass(&self, result: CallToolResult) -> Result<(CallToolResult, Value, usize), McpError> {
        let internal = |e: serde_json::Error| McpError::internal_error(e.to_string(), None);
        let value = serde_json::to_value(&result).map_err(internal)?;
        let (value, redacted) = redact_secrets(&value, "mcp_result");
        let result =
            <CallToolResult as serde::Deserialize>::deserialize(&value).map_err(internal)?;
        let max = self.inner.config.max_result_bytes;
        let size = serde_json::to_vec(&value).map_or(0, |v| v.len());
        if size <= max {
            return Ok((result, value, redacted));
        }
        let result = cap(result, max, size);
        let value = serde_json::to_value(&result).map_err(internal)?;
        Ok((result, value, redacted))
    }

    /// Records the call's `tool_result`.
    async fn record(&self, answer: &ToolCallAnswer, status: &str, output: Value) {
        self.inner.down.record(answer, status, output).await;
    }
}

impl ServerHandler for Front {
    fn get_info(&self) -> ServerConfig {
        server_info(Some(&self.inner.run))
    }

    fn supported_protocol_versions(&self) -> std::borrow::Cow<'static, [ProtocolVersion]> {
        protocol_versions()
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        self.inner.down.remember_client(&ctx.peer);
        // What the servers list now: a definition changed without a notification is caught
        // here, before the client's model reads it.
        for i in 0..self.inner.upstreams.len() {
            if let Err(e) = self.refresh(i).await {
                eprintln!(
                    "tollgate: mcp: cannot list the tools of `{}`: {e}",
                    self.inner.upstreams[i].name
                );
            }
        }
        let tools = self.inner.tools.read().await.clone();
        let names: Vec<String> = tools.iter().map(|e| e.name.clone()).collect();
        let (rt, run) = (self.inner.runtime.clone(), self.inner.run.clone());
        let listed = blocking(move || {
            names
                .iter()
                .map(|n| rt.tool_listed(&run, n))
                .collect::<Result<Vec<bool>, _>>()
        })
        .await?
        .map_err(relay::runtime_error)?;
        let shown = tools
            .into_iter()
            .zip(listed)
            .filter(|(_, listed)| *listed)
            .filter_map(|(e, _)| {
                let mut tool = e.served?;
                tool.name = e.shown.into();
                Some(tool)
            })
            .collect();
        Ok(ListToolsResult::with_all_items(shown))
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        self.inner.down.remember_client(&ctx.peer);
        self.resources_listed().await
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        self.inner.down.remember_client(&ctx.peer);
        self.templates_listed().await
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        self.inner.down.remember_client(&ctx.peer);
        Ok(self.resource_read(request).await?.into())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        self.inner.down.remember_client(&ctx.peer);
        self.prompts_listed().await
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        self.inner.down.remember_client(&ctx.peer);
        Ok(self.prompt_got(request).await?.into())
    }

    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.inner.down.remember_client(&ctx.peer);
        self.level_set(request).await
    }

    async fn complete(
        &self,
        request: rmcp::model::CompleteRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CompleteResult, McpError> {
        self.inner.down.remember_client(&ctx.peer);
        self.completed(request).await
    }

    async fn subscribe(
        &self,
        request: rmcp::model::SubscribeRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.inner.down.remember_client(&ctx.peer);
        self.subscription(request.uri, true).await
    }

    async fn unsubscribe(
        &self,
        request: rmcp::model::UnsubscribeRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.inner.down.remember_client(&ctx.peer);
        self.subscription(request.uri, false).await
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        self.inner.down.remember_client(&ctx.peer);
        let name = request.name.to_string();
        let found = {
            let tools = self.inner.tools.read().await;
            tools
                .iter()
                .find(|e| e.shown == name)
                .map(|e| (e.name.clone(), e.at, e.tool.clone(), e.accepted))
        };
        let Some((policy_name, at, tool, accepted)) = found else {
            // Named as the listing names them: a hidden tool stays unsaid.
            let known: Vec<String> = self
                .list_tools(None, ctx)
                .await?
                .tools
                .into_iter()
                .map(|t| t.name.to_string())
                .collect();
            return Err(unknown("tool", &name, known));
        };
        // From here on the tool is named as policy names it.
        let name = policy_name;
        // A definition changed since it was accepted: refused, or held, until a person
        // accepts it.
        if let Some(refused) = self
            .gate_changed(at, &name, &tool.name, accepted, &ctx)
            .await?
        {
            return Ok(refused.into());
        }
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        let presented = ctx
            .meta
            .0
            .0
            .get(APPROVAL_META)
            .and_then(Value::as_str)
            .map(str::to_string);
        let progress = ctx.meta.get_progress_token().map(|token| Progress {
            peer: &ctx.peer,
            token,
        });
        let held = self
            .inner
            .down
            .decide_held(&name, arguments, presented, progress, &ctx.ct)
            .await?;
        let answer = match held {
            Held::Decided(answer) => answer,
            Held::Pending(answer, id) => {
                return Ok(refusal(
                    &answer,
                    format!(
                        "{}; still pending after {} s: call again with `_meta: {{\"{APPROVAL_META}\": \"{id}\"}}` once it is decided (receipt {})",
                        answer.reason,
                        self.inner.config.approval_wait_seconds,
                        receipt_text(&answer)
                    ),
                )
                .into());
            }
        };
        if !answer.execute {
            let mut why = format!("{} (receipt {})", answer.reason, receipt_text(&answer));
            if let Some(after) = answer.retry_after {
                why = format!("{why}; retry after {after} s");
            }
            return Ok(refusal(&answer, why).into());
        }
        Ok(self.forward(at, &tool, &answer, &ctx).await?.into())
    }
}

/// What the gateway says of itself at `initialize`: its capabilities, and the run it decides
/// in once one is bound.
pub(crate) fn server_info(run: Option<&str>) -> ServerConfig {
    let info = ServerConfig::new(
        ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .enable_resources()
            .enable_resources_list_changed()
            .enable_prompts()
            .enable_prompts_list_changed()
            .enable_resources_subscribe()
            .enable_logging()
            .enable_completions()
            .build(),
    )
    .with_server_info(Implementation::new("tollgate", env!("CARGO_PKG_VERSION")));
    match run {
        Some(run) => info.with_instructions(format!(
            "Tollgate decides every tool call of run {run} by its policy envelopes; a refused call's result names the reason and the receipt."
        )),
        None => info,
    }
}

/// Sessions with an `initialize` (each one a run); not the stateless protocol of 2026-07-28,
/// which has no session to bind a run to.
pub(crate) fn protocol_versions() -> std::borrow::Cow<'static, [ProtocolVersion]> {
    std::borrow::Cow::Borrowed(ProtocolVersion::known_up_to(&ProtocolVersion::V_2025_11_25))
}

/// An error result the client's model reads: the reason, the receipt, and the decision in
/// `_meta`.
fn refusal(answer: &ToolCallAnswer, text: String) -> CallToolResult {
    with_decision(
        CallToolResult::error(vec![ContentBlock::text(text)]),
        answer,
    )
}

/// The result with the decision's receipt in its `_meta`.
fn with_decision(mut result: CallToolResult, answer: &ToolCallAnswer) -> CallToolResult {
    let mut meta = result.meta.take().unwrap_or_default();
    meta.0.insert(DECISION_META.into(), decision_meta(answer));
    result.meta = Some(meta);
    result
}

/// A name no listing shows (`what`: `tool`, `prompt`), with those the listing shows.
fn unknown(what: &str, name: &str, known: Vec<String>) -> McpError {
    let listed = if known.is_empty() {
        "none".to_string()
    } else {
        known.join(", ")
    };
    McpError::invalid_params(
        format!("unknown {what} `{name}`; the {what}s are {listed}"),
        Some(Value::Object(Map::from_iter([
            (what.to_string(), json!(name)),
            ("known".to_string(), json!(known)),
        ]))),
    )
}

/// The first 12 characters of a hash, as the CLI shows them.
fn short(hash: &str) -> &str {
    hash.get(..12).unwrap_or(hash)
}

/// A result over `max` bytes: its text blocks cut so the whole fits, with a note saying so;
/// structured content that does not fit is dropped (its text copy, cut, stays).
fn cap(mut result: CallToolResult, max: usize, size: usize) -> CallToolResult {
    let note = format!(
        "[tollgate: the result was {size} bytes, over the gateway's limit of {max}; it was cut]"
    );
    result.structured_content = None;
    let mut budget = max.saturating_sub(note.len() + 256);
    let mut kept = Vec::new();
    for block in result.content {
        let Some(text) = block.as_text().map(|t| t.text.clone()) else {
            continue;
        };
        if budget == 0 {
            break;
        }
        let mut end = text.len().min(budget);
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        budget -= end;
        kept.push(ContentBlock::text(text[..end].to_string()));
    }
    kept.push(ContentBlock::text(note));
    result.content = kept;
    result
}

/// Runs store work off the async threads.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, FrontError> {
    relay::blocking(f).await.map_err(FrontError::Join)
}

impl From<FrontError> for McpError {
    fn from(e: FrontError) -> Self {
        match e {
            // What the client asked for cannot be: said as its fault, with the remedy.
            FrontError::Run(
                e @ (RuntimeError::Invalid(_)
                | RuntimeError::NotFound(_)
                | RuntimeError::Conflict(_)
                | RuntimeError::Refused(_)),
            ) => McpError::invalid_request(e.to_string(), None),
            other => McpError::internal_error(other.to_string(), None),
        }
    }
}
