//! A call of a tool whose definition changed since a person accepted it (see `super::pins`):
//! refused, or — when the run's envelopes say `extensions: {mcp_changed_tools: hold}` and
//! none says `deny` — held until a person accepts the new definition (`tollgate mcp pins
//! accept`, `POST /v1/mcp/pins/{tool}/accept`, the dashboard), up to the approval wait, the
//! client told how long it has waited when it asked for progress. Accepted meanwhile, the call
//! goes on to be decided like any other; still changed, it is refused with the remedy. Either
//! way the run notes it.

use std::time::Duration;

use rmcp::model::{CallToolResult, ContentBlock, ProgressNotificationParam};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer};
use serde_json::json;

use super::super::pins::{self, ToolPin};
use super::{Front, blocking, short};

impl Front {
    /// `None` when the call of `name` (upstream `at`'s `tool`) may go on to its decision;
    /// else the refusal to answer. `accepted`: the last listing found the definition the
    /// accepted one (no read needed).
    pub(super) async fn gate_changed(
        &self,
        at: usize,
        name: &str,
        tool: &str,
        accepted: bool,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<Option<CallToolResult>, McpError> {
        if accepted {
            return Ok(None);
        }
        // Read now: it may have been accepted from another process meanwhile.
        let Some(pin) = self.changed_pin(at, tool).await? else {
            return Ok(None);
        };
        let (rt, run) = (self.inner.runtime.clone(), self.inner.run.clone());
        let hold = blocking(move || rt.changed_tools_held(&run))
            .await?
            .map_err(super::relay::runtime_error)?;
        if !hold {
            let why = format!(
                "{}; it is refused until a person accepts it: tollgate mcp pins accept {name} --by NAME",
                changed_text(name, &pin)
            );
            self.note(json!({"mcp_refused": {"tool": name, "reason": why}}))
                .await;
            return Ok(Some(CallToolResult::error(vec![ContentBlock::text(why)])));
        }
        self.note(json!({"mcp_held": {"tool": name, "reason": changed_text(name, &pin)}}))
            .await;
        let wait = Duration::from_secs(self.inner.config.approval_wait_seconds);
        let started = tokio::time::Instant::now();
        let token = ctx.meta.get_progress_token();
        let mut told = 0u64;
        loop {
            tokio::select! {
                _ = ctx.ct.cancelled() => {
                    return Err(McpError::internal_error("the client cancelled the call", None));
                }
                _ = tokio::time::sleep(Duration::from_millis(250)) => {}
            }
            let Some(pin) = self.changed_pin(at, tool).await? else {
                // Accepted: the listing reads the definition now accepted, and the call goes on.
                self.refresh(at).await?;
                return Ok(None);
            };
            let waited = started.elapsed().as_secs();
            if started.elapsed() >= wait {
                let why = format!(
                    "{}; held {waited} s for a person to accept it, and not accepted: tollgate mcp pins accept {name} --by NAME, then call again",
                    changed_text(name, &pin)
                );
                self.note(json!({"mcp_refused": {"tool": name, "reason": why}}))
                    .await;
                return Ok(Some(CallToolResult::error(vec![ContentBlock::text(why)])));
            }
            if let Some(token) = &token
                && waited >= told + 5
            {
                told = waited;
                let note = ProgressNotificationParam::new(token.clone(), waited as f64)
                    .with_total(wait.as_secs() as f64)
                    .with_message(format!(
                        "waiting for a person to accept the new definition of {name} ({waited} s)"
                    ));
                let _ = ctx.peer.notify_progress(note).await;
            }
        }
    }

    /// Upstream `at`'s `tool`'s pin, when a changed definition waits to be accepted.
    async fn changed_pin(&self, at: usize, tool: &str) -> Result<Option<ToolPin>, McpError> {
        let (rt, server, tool) = (
            self.inner.runtime.clone(),
            self.inner.upstreams[at].name.clone(),
            tool.to_string(),
        );
        let pin = blocking(move || pins::get(rt.store(), &server, &tool))
            .await?
            .map_err(|e| McpError::internal_error(e.to_string(), None))?;
        Ok(pin.filter(|p| p.changed.is_some()))
    }
}

/// "the definition of `NAME` changed since it was accepted (OLD -> NEW, seen AT)".
fn changed_text(name: &str, pin: &ToolPin) -> String {
    let (new, at) = pin
        .changed
        .as_ref()
        .map_or(("?", ""), |c| (short(&c.hash), c.at.as_str()));
    format!(
        "the definition of `{name}` changed since it was accepted ({} -> {new}, seen {at})",
        short(&pin.hash)
    )
}
