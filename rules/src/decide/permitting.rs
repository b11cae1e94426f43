//! What a default denial's why-not asks about: per decision relation, the relations of its
//! permission chain, and per envelope its permitting rules (allow and require-approval tool
//! rules, see and redact data rules, allow model rules).
//!
//! The rules are read from the model once per engine rather than from every answer: they are
//! envelope facts, and request facts never add to them, so every answer sees the model's.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use tollgate_engine::{Model, Value};

/// The permission chain of one decision relation: `permitted(req)`, and per permitting rule
/// `hit(req, env, rule, effect)`, then `applies(req, env, rule, effect)`.
#[derive(Debug)]
pub(super) struct PermissionChain {
    pub permitted: &'static str,
    /// The relation of the envelopes' rules: `(env, rule, effect, ...)`.
    pub rule_rel: &'static str,
    pub hit: &'static str,
    pub applies: &'static str,
    /// The permitting effects, with the decision effect each gives.
    pub permitting: &'static [(&'static str, &'static str)],
}

const TOOL: PermissionChain = PermissionChain {
    permitted: "tool_permitted",
    rule_rel: "tool_rule",
    hit: "tool_rule_hit",
    applies: "tool_rule_applies",
    permitting: &[("allow", "allow"), ("require_approval", "require_approval")],
};

const CONTEXT: PermissionChain = PermissionChain {
    permitted: "data_permitted",
    rule_rel: "data_rule",
    hit: "data_rule_hit",
    applies: "data_rule_applies",
    permitting: &[("see", "see"), ("redact", "redact")],
};

const MODEL: PermissionChain = PermissionChain {
    permitted: "model_permitted",
    rule_rel: "model_rule",
    hit: "model_rule_applies",
    applies: "model_rule_applies",
    permitting: &[("allow", "allow")],
};

/// The chain of a decision relation (`tool_decision`, `context_decision`, else the model's).
pub(super) fn permission_chain(decision_relation: &str) -> &'static PermissionChain {
    match decision_relation {
        "tool_decision" => &TOOL,
        "context_decision" => &CONTEXT,
        _ => &MODEL,
    }
}

/// A permitting rule of an envelope: rule id, its effect, and the decision effect it gives.
pub(super) type PermittingRule = (Arc<str>, Arc<str>, &'static str);

/// Per rule relation, per envelope, its permitting rules sorted by rule then effect, each
/// once. The strings are the model's symbols.
#[derive(Debug, Default)]
pub(super) struct PermittingRules {
    by_relation: BTreeMap<&'static str, BTreeMap<Arc<str>, Vec<PermittingRule>>>,
}

impl PermittingRules {
    pub(super) fn new(model: &Model) -> PermittingRules {
        let mut by_relation = BTreeMap::new();
        for chain in [&TOOL, &CONTEXT, &MODEL] {
            let mut by_env: BTreeMap<Arc<str>, BTreeSet<PermittingRule>> = BTreeMap::new();
            for row in model.relation(chain.rule_rel).unwrap_or_default() {
                if let [
                    Value::Symbol(env),
                    Value::Symbol(rule),
                    Value::Symbol(eff),
                    ..,
                ] = row.as_slice()
                    && let Some((_, decided)) = chain.permitting.iter().find(|(e, _)| *e == &**eff)
                {
                    let rules = by_env.entry(env.clone()).or_default();
                    rules.insert((rule.clone(), eff.clone(), *decided));
                }
            }
            let by_env = by_env
                .into_iter()
                .map(|(env, rules)| (env, rules.into_iter().collect()))
                .collect();
            by_relation.insert(chain.rule_rel, by_env);
        }
        PermittingRules { by_relation }
    }

    /// The permitting rules of `env` in the chain's rule relation.
    pub(super) fn of(&self, chain: &PermissionChain, env: &str) -> &[PermittingRule] {
        self.by_relation
            .get(chain.rule_rel)
            .and_then(|by_env| by_env.get(env))
            .map_or(&[], Vec::as_slice)
    }
}
