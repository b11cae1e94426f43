//! Every policy decision of a recorded run with its receipt: the `decision` events (tool
//! calls, model calls, messages, arguments) and the per-item decisions inside each `compile`
//! event. Works for any recorded run, whether it came through the gateway or was imported.

use serde::{Deserialize, Serialize};
use tollgate_rules::decide::{DecisionEffect, EnvelopeDecision, RequestKind};

use super::{Runtime, RuntimeError};
use crate::recorder::events::Event;
use crate::recorder::format::EventKind;

/// One decision as a run recorded it.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
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
    #[schema(schema_with = recorded_kind)]
    pub kind: RequestKind,
    /// What happened: the policy's effect, or for a tool call what the gateway answered
    /// (an approved call is `allow`, secrets in its arguments make it `redact`).
    #[schema(schema_with = recorded_effect)]
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
    #[schema(value_type = Object)]
    pub decision: EnvelopeDecision,
}

fn recorded_kind() -> utoipa::openapi::Object {
    crate::schemas::request_kind(
        "What was decided: `tool`, `context`, `model`, `memory`, `handoff`.",
    )
}

fn recorded_effect() -> utoipa::openapi::Object {
    crate::schemas::effect(
        "What happened: the policy's effect, or for a tool call what the gateway answered (an approved call is `allow`, secrets in its arguments make it `redact`).",
    )
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
            // A payload that does not read records no decision this can show.
            match e.event() {
                Ok(Event::Decision(d)) => {
                    let effect = d.answered();
                    out.push(RecordedDecision {
                        seq: e.seq,
                        step: e.step,
                        at: e.at.clone(),
                        event_hash: hash,
                        kind: d.decision.kind,
                        effect,
                        subject: d.call_id,
                        rules: d.decision.rules.clone(),
                        reason: d.reason,
                        decision: d.decision,
                    });
                }
                Ok(Event::Compile(c)) => {
                    for o in c.outcomes {
                        let Some(decision) = o.policy else { continue };
                        out.push(RecordedDecision {
                            seq: e.seq,
                            step: e.step,
                            at: e.at.clone(),
                            event_hash: hash.clone(),
                            kind: decision.kind,
                            effect: decision.effect,
                            subject: Some(o.id),
                            rules: decision.rules.clone(),
                            reason: None,
                            decision,
                        });
                    }
                }
                _ => {}
            }
        }
        Ok(out
            .into_iter()
            .filter(|d| filter.effect.is_none_or(|e| d.effect == e))
            .filter(|d| filter.kind.is_none_or(|k| d.kind == k))
            .collect())
    }
}
