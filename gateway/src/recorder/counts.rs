//! A run's decisions counted by effect: each `decision` event by what the gateway answered
//! (the recorded `outcome`, else the policy's effect) and each policy decision on a
//! `compile`'s items, as `Runtime::decisions` lists them (counted with the overview's
//! buckets, [`super::buckets::Tally`]). The counts live on the run's row
//! (migration 6) and every append and import adds to them in the same write as the events,
//! so a list of runs reads five integers per run instead of parsing each run's decisions.

use serde::Serialize;
use tollgate_rules::decide::DecisionEffect;

/// How many of a run's decisions ended in each effect.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct DecisionCounts {
    /// Allowed.
    pub allow: u64,
    /// Allowed with parts redacted.
    pub redact: u64,
    /// Held for a human approval.
    pub require_approval: u64,
    /// Refused for now, over a rate limit.
    pub rate_limited: u64,
    /// Denied.
    pub deny: u64,
}

impl DecisionCounts {
    /// Counts one more decision with this effect.
    pub fn add(&mut self, effect: DecisionEffect) {
        *self.slot(effect) += 1;
    }

    /// Counts `n` more decisions with this effect.
    pub fn add_n(&mut self, effect: DecisionEffect, n: u64) {
        *self.slot(effect) += n;
    }

    /// The count for one effect.
    pub fn of(&self, effect: DecisionEffect) -> u64 {
        let mut copy = *self;
        *copy.slot(effect)
    }

    /// All decisions.
    pub fn total(&self) -> u64 {
        self.allow + self.redact + self.require_approval + self.rate_limited + self.deny
    }

    /// Each effect with its count, from most to least permissive.
    pub fn by_effect(&self) -> [(DecisionEffect, u64); 5] {
        EFFECTS.map(|e| (e, self.of(e)))
    }

    fn slot(&mut self, effect: DecisionEffect) -> &mut u64 {
        match effect {
            DecisionEffect::Allow => &mut self.allow,
            DecisionEffect::Redact => &mut self.redact,
            DecisionEffect::RequireApproval => &mut self.require_approval,
            DecisionEffect::RateLimited => &mut self.rate_limited,
            DecisionEffect::Deny => &mut self.deny,
        }
    }

    /// Reads the five `decisions_*` columns (allow, redact, require_approval, rate_limited,
    /// deny) starting at `first`.
    pub(crate) fn from_row(
        r: &crate::store::Row<'_>,
        first: usize,
    ) -> Result<Self, crate::store::StoreError> {
        let at = |i: usize| r.get::<i64>(first + i).map(|n| n.max(0) as u64);
        Ok(DecisionCounts {
            allow: at(0)?,
            redact: at(1)?,
            require_approval: at(2)?,
            rate_limited: at(3)?,
            deny: at(4)?,
        })
    }

    /// The five values, in the columns' order, for SQL parameters.
    pub(crate) fn values(&self) -> [i64; 5] {
        EFFECTS.map(|e| self.of(e) as i64)
    }
}

/// The effects, in the order of the columns.
const EFFECTS: [DecisionEffect; 5] = [
    DecisionEffect::Allow,
    DecisionEffect::Redact,
    DecisionEffect::RequireApproval,
    DecisionEffect::RateLimited,
    DecisionEffect::Deny,
];

/// Bumps a run's row: its event count and head hash set, its decision counts added to
/// (parameters: run, event count, head hash, then the five counts).
pub(crate) const UPDATE_HEAD: &str = "UPDATE runs SET event_count = ?2, head_hash = ?3,
     decisions_allow = decisions_allow + ?4, decisions_redact = decisions_redact + ?5,
     decisions_require_approval = decisions_require_approval + ?6,
     decisions_rate_limited = decisions_rate_limited + ?7, decisions_deny = decisions_deny + ?8
     WHERE id = ?1";

impl std::ops::AddAssign for DecisionCounts {
    fn add_assign(&mut self, other: DecisionCounts) {
        for (effect, n) in other.by_effect() {
            *self.slot(effect) += n;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::buckets::tally_json;
    use super::super::format::EventKind;
    use super::*;
    use serde_json::{Value, json};

    fn decided_in(kind: EventKind, payload: &Value) -> DecisionCounts {
        tally_json(kind, payload).counts
    }

    fn one(effect: DecisionEffect) -> DecisionCounts {
        let mut counts = DecisionCounts::default();
        counts.add(effect);
        counts
    }

    #[test]
    fn the_recorded_outcome_counts_before_the_policys_effect() {
        let decided = |v: Value| decided_in(EventKind::Decision, &v);
        let gated_then_approved =
            json!({"decision": {"effect": "require_approval"}, "outcome": "allow"});
        assert_eq!(decided(gated_then_approved), one(DecisionEffect::Allow));
        let session = json!({"decision": {"effect": "deny"}});
        assert_eq!(decided(session), one(DecisionEffect::Deny));
        assert_eq!(decided(json!({"decision": {"effect": "maybe"}})).total(), 0);
        assert_eq!(decided(json!({"note": "x"})).total(), 0);
        let note = json!({"decision": {"effect": "deny"}});
        assert_eq!(decided_in(EventKind::Note, &note).total(), 0);
    }

    #[test]
    fn a_compile_counts_the_policy_decision_of_each_item_that_has_one() {
        let compile = json!({"outcomes": [
            {"id": "a", "policy": {"effect": "allow"}},
            {"id": "b", "policy": {"effect": "redact"}},
            {"id": "c"},
            {"id": "d", "policy": {"effect": "deny"}},
        ]});
        let counts = decided_in(EventKind::Compile, &compile);
        assert_eq!(counts.values(), [1, 1, 0, 0, 1]);
        let mut sum = counts;
        sum += one(DecisionEffect::Deny);
        assert_eq!(sum.deny, 2);
    }

    #[test]
    fn counts_add_up_by_effect() {
        let mut counts = DecisionCounts::default();
        for e in [
            DecisionEffect::Allow,
            DecisionEffect::Deny,
            DecisionEffect::Allow,
        ] {
            counts.add(e);
        }
        assert_eq!(counts.total(), 3);
        assert_eq!(counts.of(DecisionEffect::Allow), 2);
        assert_eq!(counts.values(), [2, 0, 0, 0, 1]);
        assert_eq!(counts.by_effect()[4], (DecisionEffect::Deny, 1));
    }
}
