//! The decision record: one effect, the deciding rules, the proof or why-not, the governing
//! envelope versions and the input hash, serializable as the recorder's `EnvelopeDecision`.

use serde::{Deserialize, Serialize};
use tollgate_engine::{Proof, WhyNot};

/// The one effect of a decision. Context items map `see` to `allow`, `block` to `deny`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DecisionEffect {
    /// Go ahead.
    Allow,
    /// Shown with the sensitive parts removed.
    Redact,
    /// Wait for a human approval.
    RequireApproval,
    /// Over a rate limit; try later.
    RateLimited,
    /// Refused.
    Deny,
}

impl DecisionEffect {
    /// `allow`, `deny`, `redact`, `require_approval`, `rate_limited`.
    pub fn as_str(self) -> &'static str {
        match self {
            DecisionEffect::Allow => "allow",
            DecisionEffect::Redact => "redact",
            DecisionEffect::RequireApproval => "require_approval",
            DecisionEffect::RateLimited => "rate_limited",
            DecisionEffect::Deny => "deny",
        }
    }

    /// The effect a pack writes in a `*_decision` fact, if it is one.
    pub(crate) fn from_pack(effect: &str) -> Option<DecisionEffect> {
        Some(match effect {
            "allow" | "see" => DecisionEffect::Allow,
            "redact" => DecisionEffect::Redact,
            "require_approval" => DecisionEffect::RequireApproval,
            "rate_limited" => DecisionEffect::RateLimited,
            "deny" | "block" => DecisionEffect::Deny,
            _ => return None,
        })
    }
}

/// What is being decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RequestKind {
    /// A tool call.
    Tool,
    /// A context item in a compile.
    Context,
    /// A model call.
    Model,
    /// A memory retrieval.
    Memory,
    /// A handoff between runs.
    Handoff,
}

impl RequestKind {
    /// `tool`, `context`, `model`, `memory`, `handoff`.
    pub fn as_str(self) -> &'static str {
        match self {
            RequestKind::Tool => "tool",
            RequestKind::Context => "context",
            RequestKind::Model => "model",
            RequestKind::Memory => "memory",
            RequestKind::Handoff => "handoff",
        }
    }
}

/// A memory's verdict in a retrieval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryVerdict {
    /// Memory id.
    pub memory: String,
    /// Whether it may be retrieved.
    pub eligible: bool,
    /// Why not (`out_of_scope`, `above_clearance`, `expired`, `status_candidate`,
    /// `class_denied`); empty when eligible.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reasons: Vec<String>,
    /// Proof of the eligibility fact, or of the first reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proof: Option<Proof>,
}

/// One problem with a handoff contract or a delivery under it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HandoffViolation {
    /// `missing_goal`, `missing_field`, `unknown_template`, `delegation_cycle`,
    /// `evidence_out_of_scope`, `evidence_above_clearance`, `constraint_violated` (of the
    /// contract); `missing_output`, `blocked_action_taken`, `deadline_missed` (of a delivery).
    pub code: String,
    /// The item, output or constraint concerned.
    pub detail: String,
    /// Proof of the violation fact.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proof: Option<Proof>,
}

impl HandoffViolation {
    /// Whether the violation names one piece of evidence, which then does not cross (the
    /// contract may go ahead without it): out of the consumer's scope, above its clearance,
    /// or against an evidence constraint (`max_level:ITEM`, `scope:ITEM`).
    pub fn drops_evidence(&self) -> bool {
        self.evidence_item().is_some()
    }

    /// The piece of evidence the violation names, if it names one.
    pub fn evidence_item(&self) -> Option<&str> {
        match self.code.as_str() {
            "evidence_out_of_scope" | "evidence_above_clearance" => Some(&self.detail),
            "constraint_violated" => self
                .detail
                .strip_prefix("max_level:")
                .or_else(|| self.detail.strip_prefix("scope:")),
            _ => None,
        }
    }
}

/// The recorder artifact of one decision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EnvelopeDecision {
    /// What was decided.
    pub kind: RequestKind,
    /// The request's id in the facts (derived from the input hash; a handoff's own id).
    pub request: String,
    /// The effect.
    pub effect: DecisionEffect,
    /// The deciding rules: envelope rule ids (`coding-agent/read-only`) or the packs' own
    /// names (`default-deny`, `no-envelope`, `clearance-forbid`, `handoff.missing-goal`).
    pub rules: Vec<String>,
    /// The proof of the decision fact.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proof: Option<Proof>,
    /// For a default denial: why the permitting facts do not hold.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub why_not: Vec<WhyNot>,
    /// `ID@VERSION` of every envelope governing the run.
    pub envelope_versions: Vec<String>,
    /// blake3 over the canonical JSON of the request, the run's subject facts and the envelope
    /// set's version.
    pub input_hash: String,
    /// The engine error that made this a denial (fail closed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Memory retrievals: every memory's verdict.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub memories: Vec<MemoryVerdict>,
    /// Handoffs: every violation.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub violations: Vec<HandoffViolation>,
    /// Set on a receipt recorded without its proof and why-not: they are rendered when read
    /// (`PolicyEngine::render`), from the request, the run's subject and the envelope
    /// versions, under the built-in program named here. Absent on a decision that carries
    /// them (every decision recorded before receipts were rendered on read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_read: Option<OnRead>,
}

/// What a receipt recorded without its proof and why-not names, beyond the request and the
/// envelope versions, for them to be rendered exactly when read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OnRead {
    /// The built-in program's hash ([`crate::packs::program_hash`]): its packs' sources and
    /// the engine's proof format.
    pub program: String,
}

impl EnvelopeDecision {
    /// A readable explanation: the effect and rules, then the proof or the why-not.
    pub fn explain(&self) -> String {
        use std::fmt::Write as _;
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{} {}: {}{}",
            self.kind.as_str(),
            self.request,
            self.effect.as_str(),
            if self.rules.is_empty() {
                String::new()
            } else {
                format!(" by {}", self.rules.join(", "))
            }
        );
        if let Some(e) = &self.error {
            let _ = writeln!(out, "error (failed closed): {e}");
        }
        if !self.envelope_versions.is_empty() {
            let _ = writeln!(out, "envelopes: {}", self.envelope_versions.join(", "));
        }
        for m in &self.memories {
            if m.eligible {
                let _ = writeln!(out, "memory {}: eligible", m.memory);
            } else {
                let _ = writeln!(
                    out,
                    "memory {}: ineligible ({})",
                    m.memory,
                    m.reasons.join(", ")
                );
            }
        }
        for v in &self.violations {
            let _ = writeln!(out, "violation {}: {}", v.code, v.detail);
        }
        if let Some(p) = &self.proof {
            let _ = writeln!(out, "proof:");
            for line in p.to_text().lines() {
                let _ = writeln!(out, "  {line}");
            }
        }
        if !self.why_not.is_empty() {
            let _ = writeln!(out, "why not allowed:");
            for w in &self.why_not {
                for line in w.to_text().lines() {
                    let _ = writeln!(out, "  {line}");
                }
            }
        }
        out
    }
}
