//! The compiler's output: the compiled context and, for every candidate, what became of it
//! and why. Everything serializes: a compile's receipt is this record as JSON.

use std::fmt::{self, Write as _};

use serde::{Deserialize, Serialize};
use tollgate_rules::decide::{DecisionEffect, EnvelopeDecision};

use super::items::ItemKind;
use crate::secrets::RedactedSpan;

/// What became of a candidate.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    utoipa::ToSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum ItemStatus {
    /// In the output, in full.
    Included,
    /// In the output in full, with the spans policy hides replaced by markers.
    Redacted,
    /// In the output as its summary (itself redacted if policy said so: see the spans).
    Summarised,
    /// Not in the output.
    Excluded,
}

impl ItemStatus {
    /// `included`, `redacted`, `summarised`, `excluded`.
    pub fn as_str(self) -> &'static str {
        match self {
            ItemStatus::Included => "included",
            ItemStatus::Redacted => "redacted",
            ItemStatus::Summarised => "summarised",
            ItemStatus::Excluded => "excluded",
        }
    }
}

/// A budget an item is measured against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "limit", rename_all = "snake_case")]
pub enum Limit {
    /// The whole compile's budget.
    Total {
        /// Its size in tokens.
        budget: u32,
    },
    /// The budget of one kind.
    Kind {
        /// The kind.
        kind: ItemKind,
        /// Its size in tokens.
        budget: u32,
    },
}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Limit::Total { budget } => write!(f, "the budget ({budget})"),
            Limit::Kind { kind, budget } => write!(f, "the `{kind}` budget ({budget})"),
        }
    }
}

/// Why a candidate has its status. Token figures are the cost of the item's block in the
/// compiled text, delimiters included.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum Reason {
    /// Policy allowed (or redacted) it and it fit; `left` tokens of the budget remained after.
    Fits {
        /// Tokens of the total budget left after it.
        left: u32,
    },
    /// Its full form (`needed` tokens) did not fit in `limit`, which had `left` tokens; its
    /// summary did.
    ReplacedBySummary {
        /// Tokens the full form needed.
        needed: u32,
        /// Tokens left in `limit` when it was tried.
        left: u32,
        /// The budget it did not fit.
        limit: Limit,
    },
    /// It has neither content nor reference, so it can only appear as its summary.
    SummaryOnly {
        /// Tokens of the total budget left after it.
        left: u32,
    },
    /// It needs more than the whole of `limit`: no choice of other items would make room.
    Budget {
        /// Tokens its smallest form needs.
        needed: u32,
        /// Tokens left in `limit` when it was tried.
        left: u32,
        /// The budget it exceeds.
        limit: Limit,
        /// Whether `needed` is its summary's cost.
        as_summary: bool,
    },
    /// It would fit in an empty `limit`, but items ahead of it took the room, and every one of
    /// them is heavier (weighs at least `lightest_ahead`, more than its `weight`).
    LowerWeight {
        /// Tokens its smallest form needs.
        needed: u32,
        /// Tokens left in `limit` when it was tried.
        left: u32,
        /// The budget that ran out.
        limit: Limit,
        /// Whether `needed` is its summary's cost.
        as_summary: bool,
        /// Its weight.
        weight: f64,
        /// The lightest of the items that took room in `limit` before it.
        lightest_ahead: f64,
    },
    /// It would fit in an empty `limit`, but items before it in the order took the room (the
    /// given order, or an equal weight with a smaller id).
    LaterInOrder {
        /// Tokens its smallest form needs.
        needed: u32,
        /// Tokens left in `limit` when it was tried.
        left: u32,
        /// The budget that ran out.
        limit: Limit,
        /// Whether `needed` is its summary's cost.
        as_summary: bool,
    },
    /// The policy decision did not let the run see it (`deny`, or an effect that does not
    /// apply to context and so counts as a denial). The proof is in
    /// [`ItemOutcome::policy`].
    Policy {
        /// The effect.
        effect: DecisionEffect,
        /// The deciding rule ids.
        rules: Vec<String>,
    },
    /// It has neither content, reference nor summary: nothing to render.
    NoContent,
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let form = |as_summary: bool| if as_summary { " (as its summary)" } else { "" };
        match self {
            Reason::Fits { left } => write!(f, "fits, {left} tokens left"),
            Reason::ReplacedBySummary {
                needed,
                left,
                limit,
            } => write!(
                f,
                "replaced by its summary: needs {needed} tokens, {left} left in {limit}"
            ),
            Reason::SummaryOnly { left } => write!(
                f,
                "no content or reference, so its summary; {left} tokens left"
            ),
            Reason::Budget {
                needed,
                left,
                limit,
                as_summary,
            } => write!(
                f,
                "over budget: needs {needed} tokens{}, more than {limit}; {left} left",
                form(*as_summary)
            ),
            Reason::LowerWeight {
                needed,
                left,
                limit,
                as_summary,
                weight,
                lightest_ahead,
            } => write!(
                f,
                "lower weight: needs {needed} tokens{}, {left} left in {limit}; \
                 the items ahead weigh at least {lightest_ahead}, it weighs {weight}",
                form(*as_summary)
            ),
            Reason::LaterInOrder {
                needed,
                left,
                limit,
                as_summary,
            } => write!(
                f,
                "later in order: needs {needed} tokens{}, {left} left in {limit}",
                form(*as_summary)
            ),
            Reason::Policy { effect, rules } => {
                write!(f, "policy: {}", effect.as_str())?;
                if !rules.is_empty() {
                    write!(f, " by {}", rules.join(", "))?;
                }
                Ok(())
            }
            Reason::NoContent => f.write_str("no content, reference or summary"),
        }
    }
}

/// What became of one candidate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ItemOutcome {
    /// The candidate's id.
    pub id: String,
    /// Its kind.
    pub kind: ItemKind,
    /// What became of it.
    pub status: ItemStatus,
    /// Why.
    #[schema(value_type = Object)]
    pub reason: Reason,
    /// Tokens its block takes in the compiled text (0 when excluded).
    pub tokens: u32,
    /// The spans replaced in what was rendered (empty unless redacted).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schema(value_type = Vec<Object>)]
    pub spans: Vec<RedactedSpan>,
    /// The policy decision about it, with its rules and proof, when a policy ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub policy: Option<EnvelopeDecision>,
}

/// The result of a compile.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct CompiledContext {
    /// The rendered context.
    pub text: String,
    /// blake3 (hex) of `text`'s UTF-8 bytes and nothing else: it names the bytes a model
    /// received. Two compiles that render the same bytes share it whatever their settings;
    /// the outcomes record how the bytes came about.
    pub hash: String,
    /// Tokens of `text`: the sum of the included blocks' counts.
    pub tokens: u32,
    /// The total budget it was compiled under.
    pub budget: u32,
    /// The tokenizer that counted.
    pub tokenizer: String,
    /// One per candidate, in input order.
    pub outcomes: Vec<ItemOutcome>,
}

impl CompiledContext {
    /// The outcomes as a `compile` event records them: an allowed item's proof is left out
    /// (decisions are deterministic: replay recomputes it), a redaction's or an exclusion's is
    /// kept.
    pub fn outcomes_for_record(&self) -> Vec<ItemOutcome> {
        let mut outcomes = self.outcomes.clone();
        for decision in outcomes.iter_mut().filter_map(|o| o.policy.as_mut()) {
            if decision.effect == tollgate_rules::decide::DecisionEffect::Allow {
                decision.proof = None;
            }
        }
        outcomes
    }

    /// The outcome of the item `id`.
    pub fn outcome(&self, id: &str) -> Option<&ItemOutcome> {
        self.outcomes.iter().find(|o| o.id == id)
    }

    /// A readable account: a header line, then per item its status, kind and reason, the
    /// deciding rules of its policy decision, the spans replaced, and for items policy
    /// excluded or redacted the decision's proof (or why nothing allowed it).
    pub fn explain(&self) -> String {
        let mut out = String::new();
        let shown = self
            .outcomes
            .iter()
            .filter(|o| o.status != ItemStatus::Excluded)
            .count();
        let _ = writeln!(
            out,
            "compiled {shown} of {} items: {} of {} tokens ({}), hash {}",
            self.outcomes.len(),
            self.tokens,
            self.budget,
            self.tokenizer,
            self.hash
        );
        for o in &self.outcomes {
            let _ = writeln!(
                out,
                "{:<10} {} ({}): {}",
                o.status.as_str(),
                o.id,
                o.kind,
                o.reason
            );
            if let Some(d) = &o.policy
                && !matches!(o.reason, Reason::Policy { .. })
            {
                let _ = writeln!(
                    out,
                    "  policy: {} by {}",
                    d.effect.as_str(),
                    d.rules.join(", ")
                );
            }
            for s in &o.spans {
                let _ = writeln!(
                    out,
                    "  redacted {} bytes {}..{} ({}) by {}",
                    s.part.as_str(),
                    s.start,
                    s.end,
                    s.detector,
                    s.rule
                );
            }
            if let Some(d) = &o.policy
                && d.effect != DecisionEffect::Allow
            {
                for line in d.explain().lines() {
                    let _ = writeln!(out, "  | {line}");
                }
            }
        }
        out
    }
}
