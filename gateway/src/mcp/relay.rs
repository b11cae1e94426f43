//! What passes between a session's client and its upstream servers besides the client's own
//! requests, and the decisions both directions share. One [`Downstream`] per session, held by
//! the front and by every upstream connection:
//!
//! - a client's progress token goes upstream as the token rmcp gives the upstream request, and
//!   the server's progress notifications come back to the client under the client's token;
//! - a server's `sampling/createMessage` and `elicitation/create` are decided as tool calls
//!   named `SERVER/sampling` and `SERVER/elicitation` (a `/` no tool name of the gateway's
//!   holds: `SERVER.*` in an envelope does not grant them, `**` does) with the request as
//!   arguments — the same receipt, rate limits and approvals — and reach the client only when
//!   allowed; its answer passes the secret redactor, is recorded as the call's result, and
//!   goes back to the server;
//! - a server's changed resource or prompt list is passed on to the client.

#![expect(
    deprecated,
    reason = "the gateway speaks MCP up to 2025-11-25, where sampling, logging and resource subscriptions are current; rmcp marks them deprecated for 2026-07-28"
)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    ClientCapabilities, ElicitationCapability, FormElicitationCapability,
    ProgressNotificationParam, ProgressToken, SamplingCapability, UrlElicitationCapability,
};
use rmcp::{ErrorData as McpError, Peer, RoleServer};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use tollgate_rules::decide::DecisionEffect;

use crate::approvals::ApprovalState;
use crate::recorder::format::EventKind;
use crate::runtime::{Runtime, RuntimeError, ToolCallAnswer, ToolCallRequest};
use crate::secrets::redact_secrets;

/// A session's side towards its client, shared with its upstream connections.
pub struct Downstream {
    runtime: Arc<Runtime>,
    run: String,
    /// The run's agent (a first step, when the run has none, is its).
    agent: String,
    approval_wait: Duration,
    /// The client, once it has made a request.
    client: Mutex<Option<Peer<RoleServer>>>,
    /// What the upstreams are told the client can do (sampling, elicitation).
    offered: ClientCapabilities,
    /// Upstream progress tokens → the client's, and the last progress passed on, for the
    /// calls in flight that asked for progress.
    progress: Mutex<HashMap<ProgressToken, (ProgressToken, Option<f64>)>>,
}

/// How a call held for approval came out of its wait.
pub enum Held {
    /// Decided (allowed, refused, rate limited): the answer to act on.
    Decided(ToolCallAnswer),
    /// Still waiting for a person after the configured wait: the first answer, with the
    /// approval's id.
    Pending(ToolCallAnswer, String),
}

/// Where a wait tells its client how long it has waited.
pub struct Progress<'a> {
    /// The client.
    pub peer: &'a Peer<RoleServer>,
    /// The token its request gave.
    pub token: ProgressToken,
}

impl Downstream {
    /// The session's side towards its client, deciding in `run`. `client`: what the client
    /// said it can do at `initialize`, when the session starts after it (HTTP): its sampling
    /// and elicitation are offered to the upstreams as they are; unknown (stdio, where the
    /// servers start first), both are offered, and a request the client cannot answer fails
    /// there.
    pub fn new(
        runtime: Arc<Runtime>,
        run: String,
        agent: String,
        approval_wait: Duration,
        client: Option<&ClientCapabilities>,
    ) -> Downstream {
        let mut offered = ClientCapabilities::default();
        match client {
            Some(c) => {
                offered.sampling = c.sampling.clone();
                offered.elicitation = c.elicitation.clone();
            }
            None => {
                offered.sampling = Some(SamplingCapability::default());
                offered.elicitation = Some(
                    ElicitationCapability::new()
                        .with_form(FormElicitationCapability::default())
                        .with_url(UrlElicitationCapability::new()),
                );
            }
        }
        Downstream {
            runtime,
            run,
            agent,
            approval_wait,
            offered,
            client: Mutex::new(None),
            progress: Mutex::new(HashMap::new()),
        }
    }

    /// What the upstreams are told the client can do.
    pub fn offered(&self) -> ClientCapabilities {
        self.offered.clone()
    }

    /// The runtime.
    pub fn runtime(&self) -> &Arc<Runtime> {
        &self.runtime
    }

    /// The session's run.
    pub fn run(&self) -> &str {
        &self.run
    }

    /// Remembers the client (the first request's peer).
    pub fn remember_client(&self, peer: &Peer<RoleServer>) {
        if let Ok(mut client) = self.client.lock()
            && client.is_none()
        {
            *client = Some(peer.clone());
        }
    }

    /// The client, once it has made a request.
    pub fn client(&self) -> Option<Peer<RoleServer>> {
        self.client.lock().ok().and_then(|c| c.clone())
    }

    /// Passes upstream progress under `upstream` to the client as `client`, until
    /// [`Downstream::forget_progress`].
    pub fn track_progress(&self, upstream: ProgressToken, client: ProgressToken) {
        if let Ok(mut map) = self.progress.lock() {
            map.insert(upstream, (client, None));
        }
    }

    /// Stops passing progress under `upstream` on.
    pub fn forget_progress(&self, upstream: &ProgressToken) {
        if let Ok(mut map) = self.progress.lock() {
            map.remove(upstream);
        }
    }

    /// An upstream's progress notification, passed to the client under the client's token
    /// when a call in flight asked for progress (others are dropped: the client did not ask).
    /// rmcp hands each notification to a task of its own, so they may come out of order: one
    /// not beyond the last passed on is dropped, and the client sees progress increase, as
    /// the protocol wants it to.
    pub async fn progress(&self, mut note: ProgressNotificationParam) {
        let token = self.progress.lock().ok().and_then(|mut m| {
            let (token, last) = m.get_mut(&note.progress_token)?;
            if last.is_some_and(|l| note.progress <= l) {
                return None;
            }
            *last = Some(note.progress);
            Some(token.clone())
        });
        let (Some(token), Some(client)) = (token, self.client()) else {
            return;
        };
        note.progress_token = token;
        if let Some(message) = note.message.take() {
            let (text, _) = redact_secrets(&Value::String(message), "mcp_progress");
            note.message = text.as_str().map(str::to_string);
        }
        let _ = client.notify_progress(note).await;
    }

    /// An upstream's log message, passed to the client with its secrets redacted.
    pub async fn log(&self, mut message: rmcp::model::LoggingMessageNotificationParam) {
        let Some(client) = self.client() else { return };
        message.data = redact_secrets(&message.data, "mcp_log").0;
        let _ = client.notify_logging_message(message).await;
    }

    /// Decides a call through the runtime (recorded with its receipt).
    pub async fn decide(
        &self,
        tool: &str,
        arguments: Value,
        call_id: Option<String>,
        approval_id: Option<String>,
    ) -> Result<ToolCallAnswer, McpError> {
        let req = ToolCallRequest {
            tool: tool.to_string(),
            arguments,
            step: None,
            call_id,
            approval_id,
            explain: false,
            credentials_seen: None,
        };
        self.runtime
            .tool_call_async(&self.run, &req)
            .await
            .map_err(runtime_error)
    }

    /// Decides a call and, when it is held for a person, waits (up to the configured wait)
    /// for the decision, then decides it again with the approval, for exactly the arguments
    /// approved.
    pub async fn decide_held(
        &self,
        tool: &str,
        arguments: Value,
        presented: Option<String>,
        progress: Option<Progress<'_>>,
        cancelled: &CancellationToken,
    ) -> Result<Held, McpError> {
        let answer = self
            .decide(tool, arguments.clone(), None, presented)
            .await?;
        if answer.effect != DecisionEffect::RequireApproval {
            return Ok(Held::Decided(answer));
        }
        let Some(approval) = answer.approval.clone() else {
            return Ok(Held::Decided(answer));
        };
        if approval.state != ApprovalState::Pending {
            return Ok(Held::Decided(answer));
        }
        let state = self.wait_for(&approval.id, progress, cancelled).await?;
        if state == ApprovalState::Pending {
            return Ok(Held::Pending(answer, approval.id));
        }
        let again = self
            .decide(
                tool,
                arguments,
                Some(answer.call_id.clone()),
                Some(approval.id),
            )
            .await?;
        Ok(Held::Decided(again))
    }

    /// Waits for approval `id` to be decided, up to the configured wait, telling the client
    /// how long it has waited when it asked for progress.
    async fn wait_for(
        &self,
        id: &str,
        progress: Option<Progress<'_>>,
        cancelled: &CancellationToken,
    ) -> Result<ApprovalState, McpError> {
        let wait = self.approval_wait;
        let started = tokio::time::Instant::now();
        let deadline = started + wait;
        let mut told = 0u64;
        let _watching = self.runtime.approval_waits.open();
        loop {
            let notified = self.runtime.approval_waits.changed();
            let (rt, key) = (self.runtime.clone(), id.to_string());
            let state = blocking(move || {
                let now = rt.now_ms();
                rt.approval_for_wait(&key, now).map(|a| a.state)
            })
            .await
            .map_err(|e| McpError::internal_error(e, None))?
            .map_err(|e| McpError::internal_error(e.to_string(), None))?;
            let now = tokio::time::Instant::now();
            if state != ApprovalState::Pending || now >= deadline {
                return Ok(state);
            }
            let waited = now.duration_since(started).as_secs();
            if let Some(p) = &progress
                && waited >= told + 5
            {
                told = waited;
                let note = ProgressNotificationParam::new(p.token.clone(), waited as f64)
                    .with_total(wait.as_secs() as f64)
                    .with_message(format!("waiting for approval {id} ({waited} s)"));
                let _ = p.peer.notify_progress(note).await;
            }
            // Decisions made by this gateway wake the wait at once; those made by another
            // gateway or a command on the same database, when the watcher next reads
            // (`runtime::approval_waits`); and the wait looks again every 250 ms regardless.
            tokio::select! {
                _ = cancelled.cancelled() => {
                    return Err(McpError::internal_error("the client cancelled the call", None));
                }
                _ = tokio::time::timeout_at(
                    deadline.min(now + Duration::from_millis(250)),
                    notified,
                ) => {}
            }
        }
    }

    /// Records a call's `tool_result` (a failure to record is said on stderr: the call and
    /// its decision are recorded already).
    pub async fn record(&self, answer: &ToolCallAnswer, status: &str, output: Value) {
        self.append(
            EventKind::ToolResult,
            json!({
                "call_id": answer.call_id,
                "tool": answer.tool,
                "status": status,
                "output": output,
            }),
        )
        .await;
    }

    /// Records a note of the gateway in the run.
    pub async fn note(&self, payload: Value) {
        self.append(EventKind::Note, payload).await;
    }

    /// Appends an event at the run's current step: one write, awaited without a thread.
    async fn append(&self, kind: EventKind, payload: Value) {
        let at = self.runtime.now_rfc3339();
        let appended = self
            .runtime
            .recorder()
            .append_at_current_step(&self.run, &self.agent, kind, at, payload)
            .await;
        if let Err(e) = appended {
            eprintln!("tollgate: mcp: cannot record a {}: {e}", kind.as_str());
        }
    }

    /// A server's request to the client (`what`: `sampling`, `elicitation`), decided as the
    /// tool call `SERVER/what` with the request as its arguments; when allowed, `send` puts it
    /// to the client and its answer, secrets redacted, is recorded and returned.
    pub async fn ask_client<P, R, F, Fut>(
        &self,
        server: &str,
        what: &str,
        params: P,
        send: F,
    ) -> Result<R, McpError>
    where
        P: serde::Serialize + serde::de::DeserializeOwned,
        R: serde::Serialize + serde::de::DeserializeOwned,
        F: FnOnce(Peer<RoleServer>, P) -> Fut,
        Fut: std::future::Future<Output = Result<R, rmcp::service::ServiceError>>,
    {
        let tool = format!("{server}/{what}");
        let arguments = serde_json::to_value(&params)
            .map_err(|e| McpError::internal_error(e.to_string(), None))?;
        let never = CancellationToken::new();
        let answer = match self
            .decide_held(&tool, arguments, None, None, &never)
            .await?
        {
            Held::Decided(answer) => answer,
            Held::Pending(answer, id) => {
                return Err(McpError::invalid_request(
                    format!(
                        "{}; approval {id} is still pending after {} s (receipt {})",
                        answer.reason,
                        self.approval_wait.as_secs(),
                        receipt_text(&answer)
                    ),
                    Some(decision_meta(&answer)),
                ));
            }
        };
        if !answer.execute {
            let mut why = format!(
                "Tollgate refused `{tool}`: {} (receipt {})",
                answer.reason,
                receipt_text(&answer)
            );
            if let Some(after) = answer.retry_after {
                why = format!("{why}; retry after {after} s");
            }
            return Err(McpError::invalid_request(why, Some(decision_meta(&answer))));
        }
        let Some(client) = self.client() else {
            self.record(&answer, "error", json!({"error": "no client to ask"}))
                .await;
            return Err(McpError::internal_error(
                format!("`{tool}` was allowed, but the session's client has not spoken yet"),
                None,
            ));
        };
        // What the decision allowed: the arguments as the data rules left them.
        let params: P = serde_json::from_value(answer.arguments.clone())
            .map_err(|e| McpError::internal_error(e.to_string(), None))?;
        match send(client, params).await {
            Ok(result) => {
                let value = serde_json::to_value(&result)
                    .map_err(|e| McpError::internal_error(e.to_string(), None))?;
                let (value, redacted) = redact_secrets(&value, "mcp_client_answer");
                let mut output = value.clone();
                if redacted > 0
                    && let Value::Object(o) = &mut output
                {
                    o.insert("redacted".into(), json!(redacted));
                }
                self.record(&answer, "ok", output).await;
                serde_json::from_value(value)
                    .map_err(|e| McpError::internal_error(e.to_string(), None))
            }
            Err(e) => {
                self.record(&answer, "error", json!({"error": e.to_string()}))
                    .await;
                Err(match e {
                    rmcp::service::ServiceError::McpError(e) => e,
                    other => McpError::internal_error(
                        format!("the client did not answer `{what}`: {other}"),
                        None,
                    ),
                })
            }
        }
    }
}

/// `RUN#SEQ`, the receipt as the CLI names it.
pub fn receipt_text(answer: &ToolCallAnswer) -> String {
    format!("{}#{}", answer.receipt.run, answer.receipt.seq)
}

/// The decision as a result's `_meta` carries it.
pub fn decision_meta(answer: &ToolCallAnswer) -> Value {
    json!({
        "effect": answer.effect,
        "reason": answer.reason,
        "rules": answer.rules,
        "call_id": answer.call_id,
        "receipt": answer.receipt,
        "retry_after": answer.retry_after,
        "approval_id": answer.approval.as_ref().map(|a| a.id.clone()),
    })
}

/// A runtime error as the client is told it.
pub fn runtime_error(e: RuntimeError) -> McpError {
    match e {
        RuntimeError::Invalid(m) => McpError::invalid_params(m, None),
        other => McpError::internal_error(other.to_string(), None),
    }
}

/// Runs store work off the async threads.
pub async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, String> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| format!("the gateway's worker thread failed: {e}"))
}
