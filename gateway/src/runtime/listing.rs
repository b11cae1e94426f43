//! Which tools a run is shown (the MCP gateway's `tools/list`): a tool is hidden only when the
//! run's envelopes deny it outright — asked with no arguments it is denied, and no rule that
//! could let it run (allow, approval, rate limit) names it. A tool allowed for some arguments
//! stays listed; every call is decided with its arguments whatever the listing showed, so
//! the listing is a courtesy to the client, never a gate.

use serde_json::{Map, Value};
use tollgate_rules::decide::DecisionEffect;
use tollgate_rules::engine::ast::TestFn;
use tollgate_rules::envelope::ToolEffect;

use super::tools::ToolCallRequest;
use super::{Runtime, RuntimeError};

impl Runtime {
    /// Whether `run` is shown `tool` in a tool listing. Reads the store; writes nothing.
    pub fn tool_listed(&self, run: &str, tool: &str) -> Result<bool, RuntimeError> {
        let outcome = self.decide_tool_call(
            run,
            ToolCallRequest {
                tool: tool.to_string(),
                arguments: Value::Object(Map::new()),
                step: None,
                call_id: Some("listing".into()),
                approval_id: None,
                explain: false,
                credentials_seen: None,
            },
        )?;
        if outcome.effect() != DecisionEffect::Deny {
            return Ok(true);
        }
        let (_, engine) = self.running_engine(run)?;
        let set = engine.set().clone();
        let mut patterns = self.patterns.clone();
        for label in engine.governing(run) {
            let id = label.split_once('@').map_or(label.as_str(), |(id, _)| id);
            let Some(envelope) = set.get(id) else {
                continue;
            };
            let may_run = envelope.tools.iter().any(|rule| {
                rule.effect != ToolEffect::Deny
                    && rule
                        .tools
                        .iter()
                        .any(|p| patterns.test(TestFn::Glob, p, tool))
            });
            if may_run {
                return Ok(true);
            }
        }
        Ok(false)
    }
}

impl Runtime {
    /// Whether `run` is shown each context item in a listing (the MCP gateway's resources):
    /// one is hidden when its envelopes deny it; a read is decided again, and recorded. Reads
    /// the store; writes nothing.
    pub fn contexts_listed(
        &self,
        run: &str,
        items: &[tollgate_rules::request::ContextItem],
    ) -> Result<Vec<bool>, RuntimeError> {
        let (_, engine) = self.running_engine(run)?;
        Ok(items
            .iter()
            .map(|item| engine.decide_context(run, item).effect != DecisionEffect::Deny)
            .collect())
    }
}

/// The envelope extension that says what becomes of a call of an MCP tool whose definition
/// changed since it was accepted: `deny` (the default) or `hold`.
pub const CHANGED_TOOLS_EXTENSION: &str = "mcp_changed_tools";

impl Runtime {
    /// Whether `run`'s envelopes hold a call of a changed MCP tool until a person accepts the
    /// new definition, rather than refuse it: some governing envelope says
    /// `extensions: {mcp_changed_tools: hold}` and none says `deny` (fail closed).
    pub fn changed_tools_held(&self, run: &str) -> Result<bool, RuntimeError> {
        let (_, engine) = self.running_engine(run)?;
        let set = engine.set();
        let said: Vec<Option<String>> = engine
            .governing(run)
            .iter()
            .filter_map(|label| set.get(label.split_once('@').map_or(label.as_str(), |(id, _)| id)))
            .map(|envelope| {
                envelope
                    .extensions
                    .get(CHANGED_TOOLS_EXTENSION)
                    .map(|v| v.as_str().unwrap_or("deny").to_string())
            })
            .collect();
        let held = said.iter().any(|s| s.as_deref() == Some("hold"));
        let denied = said
            .iter()
            .any(|s| s.as_deref().is_some_and(|s| s != "hold"));
        Ok(held && !denied)
    }
}
