//! Every policy decision of a recorded run with its receipt: the `decision` events (tool
//! calls, model calls, messages, arguments) and the per-item decisions inside each `compile`
//! event. Works for any recorded run, whether it came through the gateway or was imported.

use serde::{Deserialize, Serialize};
use tollgate_rules::decide::{DecisionEffect, EnvelopeDecision, RequestKind};

use super::{Runtime, RuntimeError};
use crate::receipts::Renderer;
use crate::recorder::events::Event;

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
    /// The decision with its proof (or why-not), envelope versions and input hash; a receipt
    /// recorded without its proof and why-not has them rendered (unless `raw` was asked).
    #[schema(value_type = Object)]
    pub decision: EnvelopeDecision,
    /// Why the receipt's proof and why-not could not be rendered (its envelope versions or
    /// program are gone, or its request cannot be rebuilt): the decision is as recorded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unrendered: Option<String>,
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

/// Which decisions to list, and how.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct DecisionFilter {
    /// Only with this effect.
    #[serde(default)]
    pub effect: Option<DecisionEffect>,
    /// Only of this kind.
    #[serde(default)]
    pub kind: Option<RequestKind>,
    /// Only those the event `seq` records.
    #[serde(default)]
    pub seq: Option<u64>,
    /// Decisions as recorded: receipts recorded without their proof and why-not are not
    /// rendered (`crate::receipts`).
    #[serde(default)]
    pub raw: bool,
}

impl Runtime {
    /// The decisions of `run`, in event order, each receipt's proof and why-not rendered
    /// (unless `filter.raw`).
    pub fn decisions(
        &self,
        run: &str,
        filter: &DecisionFilter,
    ) -> Result<Vec<RecordedDecision>, RuntimeError> {
        let file = self.recorder().export(run)?;
        let mut out = Vec::new();
        let mut events = Vec::new();
        for e in &file.events {
            if filter.seq.is_some_and(|s| s != e.seq) {
                continue;
            }
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
                        subject: d.call_id.clone(),
                        rules: d.decision.rules.clone(),
                        reason: d.reason.clone(),
                        decision: d.decision.clone(),
                        unrendered: None,
                    });
                    events.push(Some(d));
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
                            unrendered: None,
                        });
                        events.push(None);
                    }
                }
                _ => {}
            }
        }
        let mut renderer = (!filter.raw).then(|| {
            let live = self.cached_engine(run).map(|(_, engine)| engine);
            Renderer::new(&file, Some(self.store())).with_live(live)
        });
        let mut kept = Vec::new();
        for (mut d, event) in out.into_iter().zip(events) {
            if filter.effect.is_some_and(|e| d.effect != e)
                || filter.kind.is_some_and(|k| d.kind != k)
            {
                continue;
            }
            if let (Some(r), Some(event)) = (renderer.as_mut(), event)
                && d.decision.on_read.is_some()
            {
                match r.render(d.seq, &event) {
                    Ok(rendered) => d.decision = rendered,
                    Err(e) => d.unrendered = Some(e.to_string()),
                }
            }
            kept.push(d);
        }
        Ok(kept)
    }
}
