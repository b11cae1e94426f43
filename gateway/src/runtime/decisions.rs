//! Every policy decision of a recorded run with its receipt: the `decision` events (tool
//! calls, model calls, messages, arguments) and the per-item decisions inside each `compile`
//! event. Works for any recorded run, whether it came through the gateway or was imported.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tollgate_rules::decide::{DecisionEffect, EnvelopeDecision, RequestKind};

use super::{Runtime, RuntimeError};
use crate::recorder::format::EventKind;

/// One decision as a run recorded it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RecordedDecision {
    /// The event that records it.
    pub seq: u64,
    /// Its step.
    pub step: u32,
    /// When.
    pub at: String,
    /// That event's hash in the run's chain.
    pub event_hash: String,
    /// `tool`, `context`, `model`, `memory`, `handoff`.
    pub kind: RequestKind,
    /// What happened: the policy's effect, or for a tool call what the gateway answered
    /// (an approved call is `allow`, secrets in its arguments make it `redact`).
    pub effect: DecisionEffect,
    /// The tool call or context item it is about.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    /// The deciding rules.
    pub rules: Vec<String>,
    /// Why, in words, when the gateway said it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The decision with its proof, envelope versions and input hash.
    pub decision: EnvelopeDecision,
}

/// Which decisions to list.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct DecisionFilter {
    /// Only with this effect.
    #[serde(default)]
    pub effect: Option<DecisionEffect>,
    /// Only of this kind.
    #[serde(default)]
    pub kind: Option<RequestKind>,
}

impl Runtime {
    /// The decisions of `run`, in event order.
    pub fn decisions(
        &self,
        run: &str,
        filter: &DecisionFilter,
    ) -> Result<Vec<RecordedDecision>, RuntimeError> {
        let events = self
            .recorder()
            .events(run, Some(&[EventKind::Decision, EventKind::Compile]))?;
        let mut out = Vec::new();
        for e in events {
            let hash = e.hash.clone().unwrap_or_default();
            if e.kind == "decision" {
                let Some(decision) = e
                    .payload
                    .get("decision")
                    .and_then(|d| serde_json::from_value::<EnvelopeDecision>(d.clone()).ok())
                else {
                    continue;
                };
                let effect = e
                    .payload
                    .get("outcome")
                    .and_then(|o| serde_json::from_value::<DecisionEffect>(o.clone()).ok())
                    .unwrap_or(decision.effect);
                out.push(RecordedDecision {
                    seq: e.seq,
                    step: e.step,
                    at: e.at.clone(),
                    event_hash: hash,
                    kind: decision.kind,
                    effect,
                    subject: e
                        .payload
                        .get("call_id")
                        .and_then(Value::as_str)
                        .map(str::to_string),
                    rules: decision.rules.clone(),
                    reason: e
                        .payload
                        .get("reason")
                        .and_then(Value::as_str)
                        .map(str::to_string),
                    decision,
                });
            } else {
                let outcomes = e.payload.get("outcomes").and_then(Value::as_array);
                for o in outcomes.into_iter().flatten() {
                    let Some(decision) = o
                        .get("policy")
                        .filter(|p| !p.is_null())
                        .and_then(|p| serde_json::from_value::<EnvelopeDecision>(p.clone()).ok())
                    else {
                        continue;
                    };
                    out.push(RecordedDecision {
                        seq: e.seq,
                        step: e.step,
                        at: e.at.clone(),
                        event_hash: hash.clone(),
                        kind: decision.kind,
                        effect: decision.effect,
                        subject: o.get("id").and_then(Value::as_str).map(str::to_string),
                        rules: decision.rules.clone(),
                        reason: None,
                        decision,
                    });
                }
            }
        }
        Ok(out
            .into_iter()
            .filter(|d| filter.effect.is_none_or(|e| d.effect == e))
            .filter(|d| filter.kind.is_none_or(|k| d.kind == k))
            .collect())
    }
}
