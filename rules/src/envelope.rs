//! Policy envelopes: the YAML format, loading with validation, and compilation to facts.
//!
//! An envelope is attached to runs, agents or tasks, extends parent envelopes, and holds tool,
//! data, model, memory and approval rules, tool sensitivity levels, plus free extension fields:
//!
//! ```yaml
//! id: coding-agent
//! version: 3
//! extends: [org-baseline]
//! attach: {agents: [coder]}
//! tools:
//!   - {id: read-only, effect: allow, tools: ["fs.read*", "fs.list", "search.*"]}
//!   - {id: writes, effect: require_approval, tools: ["fs.write*"], args: {/path: "src/**"}}
//!   - {id: docs, effect: allow, tools: [http.get], args: {/url: "https://docs.acme.dev/**"}, only_named_args: true}
//!   - {id: api, effect: rate_limit, tools: ["http.*"], limit: {count: 10, window_seconds: 60}}
//! data:
//!   - {id: secrets, effect: redact, labels: [secret]}
//! models:
//!   - {effect: allow, provider: openai, model: gpt-4.1-mini}
//! memory:
//!   - {effect: allow, classes: [fact, procedure]}
//! approvals:
//!   - {tools: ["shell.*"], approvers: [team-lead], ttl_seconds: 900}
//! tool_levels:
//!   - {id: prod, tools: ["deploy.prod*"], level: secret}
//! extensions: {ticket_system: jira}
//! ```
//!
//! JSON is read the same way (YAML is a superset). [`load_envelopes`] checks everything with a
//! spanned diagnostic per problem (all or nothing); [`EnvelopeSet::facts`] compiles the set to
//! the vocabulary's facts; [`crate::request`] encodes requests and subjects.

mod arg_pattern;
mod check;
mod diff;
mod facts;
mod format;
mod load;
mod schema;
#[cfg(test)]
mod tests;
mod url_pattern;
pub(crate) mod yaml;

pub use arg_pattern::{ArgKind, ArgPattern, slash_warnings, text_regex};
pub use check::values::closest;
pub use diff::{Change, EnvelopeChange, EnvelopeDiff, RuleChange, diff_envelopes};
pub use facts::flatten_extension;
pub use format::{
    ApprovalRule, Attachments, DataEffect, DataRule, Level, MemoryRule, ModelRule, PolicyEnvelope,
    RateLimit, RateScope, RuleEffect, Section, ToolEffect, ToolLevelRule, ToolRule, local_rule_id,
};
pub use load::{EnvelopeErrors, load_envelopes};
pub use schema::{SCHEMA_ID, envelope_json_schema};
pub use url_pattern::UrlPattern;

/// A checked set of envelopes, sorted by id: every parent present, no cycles, ids unique.
#[derive(Debug, Clone, PartialEq)]
pub struct EnvelopeSet {
    envelopes: Vec<PolicyEnvelope>,
    version: String,
}

impl EnvelopeSet {
    /// Only the loader builds sets, after its checks.
    pub(crate) fn new(mut envelopes: Vec<PolicyEnvelope>) -> Self {
        envelopes.sort_by(|a, b| a.id.cmp(&b.id));
        let json = serde_json::to_value(&envelopes).unwrap_or(serde_json::Value::Null);
        let version = blake3::hash(crate::canonical::canonical_json(&json).as_bytes())
            .to_hex()
            .to_string();
        EnvelopeSet { envelopes, version }
    }

    /// An empty set (nothing governs anything).
    pub fn empty() -> Self {
        EnvelopeSet::new(Vec::new())
    }

    /// The set of the envelopes `ids` names, when they make a set: every parent of one of them
    /// among them (`None` otherwise). The envelopes governing a run make one: the packs have a
    /// run governed by every parent of an envelope that governs it.
    pub fn only(&self, ids: &[&str]) -> Option<EnvelopeSet> {
        let kept: Vec<PolicyEnvelope> = self
            .envelopes
            .iter()
            .filter(|e| ids.contains(&e.id.as_str()))
            .cloned()
            .collect();
        let closed = kept
            .iter()
            .all(|e| e.extends.iter().all(|p| ids.contains(&p.as_str())));
        closed.then(|| EnvelopeSet::new(kept))
    }

    /// The envelopes, by id.
    pub fn envelopes(&self) -> &[PolicyEnvelope] {
        &self.envelopes
    }

    /// One envelope.
    pub fn get(&self, id: &str) -> Option<&PolicyEnvelope> {
        self.envelopes
            .binary_search_by(|e| e.id.as_str().cmp(id))
            .ok()
            .and_then(|i| self.envelopes.get(i))
    }

    /// A content hash of the whole set (blake3 over its canonical JSON): equal sets, equal
    /// versions, whatever the file order or layout.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// Number of envelopes.
    pub fn len(&self) -> usize {
        self.envelopes.len()
    }

    /// Whether the set holds no envelope.
    pub fn is_empty(&self) -> bool {
        self.envelopes.is_empty()
    }

    /// Every rule's id as decisions cite it (`ENVELOPE/RULE`), envelope by envelope in id
    /// order, each in section then written order.
    pub fn rule_ids(&self) -> Vec<String> {
        self.envelopes
            .iter()
            .flat_map(|e| e.rules().into_iter().map(|(_, local, _)| e.rule_id(&local)))
            .collect()
    }

    /// The set with the rule `id` (`ENVELOPE/RULE`, as in [`EnvelopeSet::rule_ids`]) taken
    /// out, or `None` when no envelope has it. Every other rule keeps its id: the rules of the
    /// envelope written without one are first given their positional ids (`tools.2`), so
    /// taking out `tools.1` does not renumber the rest. What a counterfactual replay
    /// disables.
    pub fn without_rule(&self, id: &str) -> Option<EnvelopeSet> {
        let (envelope, local) = id.split_once('/')?;
        let index = self.envelopes.iter().position(|e| e.id == envelope)?;
        let mut changed = self.envelopes.get(index)?.clone();
        if !changed.remove_rule(local) {
            return None;
        }
        let mut envelopes = self.envelopes.clone();
        envelopes[index] = changed;
        Some(EnvelopeSet::new(envelopes))
    }
}
