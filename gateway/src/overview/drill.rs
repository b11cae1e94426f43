//! From a bar of the overview to its receipts: the decisions of one effect in the window,
//! optionally by one rule or one tool, newest run first. The counters say how many there are;
//! this finds them, reading the decisions of the runs that were open in the window and
//! recorded a decision with that effect (the runs' own counts), so it reads runs, not the
//! whole store, and stops at the page's end.

use serde::{Deserialize, Serialize};
use tollgate_rules::decide::{DecisionEffect, RequestKind};

use super::{NO_RULE, Window};
use crate::clock::rfc3339;
use crate::recorder::format::EventKind;
use crate::runtime::{DecisionFilter, Runtime, RuntimeError};
use crate::store::params;

/// Which decisions.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Drill {
    /// Only with this effect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effect: Option<DecisionEffect>,
    /// Only those this rule decided ([`NO_RULE`]: those no rule decided).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    /// Only calls of this tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
}

/// One decision found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DrillRow {
    /// The run.
    pub run: String,
    /// Its agent.
    pub agent: String,
    /// The event recording it.
    pub seq: u64,
    /// The compile item it is about (a context decision).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub item: Option<String>,
    /// When.
    pub at: String,
    /// What was decided.
    pub kind: RequestKind,
    /// The effect answered.
    pub effect: DecisionEffect,
    /// The tool, for a tool call.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// The deciding rules.
    pub rules: Vec<String>,
}

/// Up to `limit` decisions matching `drill` in `window`, newest run first; `true` with them when
/// more runs were left unread.
pub fn drill(
    rt: &Runtime,
    window: &Window,
    drill: &Drill,
    limit: usize,
) -> Result<(Vec<DrillRow>, bool), RuntimeError> {
    let since = rfc3339(u64::try_from(window.since).unwrap_or(0));
    let until = rfc3339(u64::try_from(window.until).unwrap_or(0));
    // The column is chosen from the effect, never from the request's text.
    let counted = match drill.effect {
        Some(DecisionEffect::Allow) => "r.decisions_allow",
        Some(DecisionEffect::Redact) => "r.decisions_redact",
        Some(DecisionEffect::RequireApproval) => "r.decisions_require_approval",
        Some(DecisionEffect::RateLimited) => "r.decisions_rate_limited",
        Some(DecisionEffect::Deny) => "r.decisions_deny",
        None => "1",
    };
    let (agent, task) = (window.agent.clone(), window.task.clone());
    let runs: Vec<(String, String)> = rt.store().read(move |c| {
        let mut stmt = c.prepare(&format!(
            "SELECT r.id, r.agent FROM runs r
             WHERE r.started_at < ?2 AND (r.finished_at IS NULL OR r.finished_at >= ?1)
               AND {counted} > 0
               AND (CAST(?3 AS TEXT) IS NULL OR r.agent = ?3)
               AND (CAST(?4 AS TEXT) IS NULL OR r.task = ?4)
             ORDER BY r.started_at DESC, r.id"
        ))?;
        let rows = stmt.query_map(params![since, until, agent, task], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })?;
        rows.collect()
    })?;
    let (since, until) = (
        u64::try_from(window.since).unwrap_or(0),
        u64::try_from(window.until).unwrap_or(0),
    );
    let filter = DecisionFilter {
        effect: drill.effect,
        raw: true,
        ..DecisionFilter::default()
    };
    let mut found = Vec::new();
    for (i, (run, agent)) in runs.iter().enumerate() {
        if found.len() >= limit {
            return Ok((found, i < runs.len()));
        }
        let tools: std::collections::HashMap<String, String> = rt
            .recorder()
            .events(run, Some(&[EventKind::ToolCall]))?
            .into_iter()
            .filter_map(|e| {
                let id = e.payload.get("call_id")?.as_str()?.to_string();
                let tool = e.payload.get("tool")?.as_str()?.to_string();
                Some((id, tool))
            })
            .collect();
        let mut decisions = rt.decisions(run, &filter)?;
        decisions.reverse();
        for d in decisions {
            let at = crate::clock::parse_rfc3339(&d.at);
            if at.is_none_or(|at| at < since || at >= until) {
                continue;
            }
            let tool = match d.kind {
                RequestKind::Tool => d.subject.as_ref().and_then(|id| tools.get(id)).cloned(),
                _ => None,
            };
            let rule_matches = drill.rule.as_ref().is_none_or(|rule| {
                if rule == NO_RULE {
                    d.rules.is_empty()
                } else {
                    d.rules.contains(rule)
                }
            });
            let tool_matches = drill.tool.as_ref().is_none_or(|t| tool.as_ref() == Some(t));
            if !rule_matches || !tool_matches {
                continue;
            }
            found.push(DrillRow {
                run: run.clone(),
                agent: agent.clone(),
                seq: d.seq,
                item: (d.kind != RequestKind::Tool)
                    .then(|| d.subject.clone())
                    .flatten(),
                at: d.at,
                kind: d.kind,
                effect: d.effect,
                tool,
                rules: d.rules,
            });
            if found.len() >= limit {
                return Ok((found, true));
            }
        }
    }
    Ok((found, false))
}
