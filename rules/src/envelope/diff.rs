//! Version diffs: which envelopes and rules two sets add, remove or modify.

use std::collections::BTreeMap;

use serde::Serialize;

use super::EnvelopeSet;
use super::format::{PolicyEnvelope, Section};

/// Added, removed or modified.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    /// Only in the new set.
    Added,
    /// Only in the old set.
    Removed,
    /// In both, different.
    Modified,
}

impl Change {
    /// `added`, `removed`, `modified`.
    pub fn as_str(self) -> &'static str {
        match self {
            Change::Added => "added",
            Change::Removed => "removed",
            Change::Modified => "modified",
        }
    }
}

/// What changed between two envelope sets, envelope by envelope (unchanged ones left out).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EnvelopeDiff {
    /// Changed envelopes, by id.
    pub envelopes: Vec<EnvelopeChange>,
}

impl EnvelopeDiff {
    /// Whether the sets are equal.
    pub fn is_empty(&self) -> bool {
        self.envelopes.is_empty()
    }
}

/// How one envelope changed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EnvelopeChange {
    /// Envelope id.
    pub id: String,
    /// Added, removed or modified.
    pub change: Change,
    /// Version before (absent when added).
    pub old_version: Option<i32>,
    /// Version after (absent when removed).
    pub new_version: Option<i32>,
    /// Envelope-level fields that changed (`extends`, `attach`, `extensions`, `description`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fields: Vec<String>,
    /// Rules added, removed or modified.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<RuleChange>,
    /// Set when the content changed but `version` did not.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub version_not_raised: bool,
}

/// How one rule changed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RuleChange {
    /// `ENVELOPE/RULE`.
    pub rule: String,
    /// Its section.
    pub section: Section,
    /// Added, removed or modified.
    pub change: Change,
    /// The rule before.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub old: Option<serde_json::Value>,
    /// The rule after.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub new: Option<serde_json::Value>,
}

type RuleMap = BTreeMap<(Section, String), serde_json::Value>;

fn rules_of(env: &PolicyEnvelope) -> RuleMap {
    env.rules()
        .into_iter()
        .map(|(section, local, json)| ((section, env.rule_id(&local)), json))
        .collect()
}

/// Compares two sets.
pub fn diff_envelopes(old: &EnvelopeSet, new: &EnvelopeSet) -> EnvelopeDiff {
    let mut ids: Vec<&str> = old
        .envelopes()
        .iter()
        .chain(new.envelopes())
        .map(|e| e.id.as_str())
        .collect();
    ids.sort_unstable();
    ids.dedup();
    let mut envelopes = Vec::new();
    for id in ids {
        let (o, n) = (old.get(id), new.get(id));
        let change = match (o, n) {
            (None, Some(_)) => Change::Added,
            (Some(_), None) => Change::Removed,
            (Some(a), Some(b)) if a != b => Change::Modified,
            _ => continue,
        };
        let empty = RuleMap::new();
        let old_rules = o.map(rules_of);
        let new_rules = n.map(rules_of);
        let (or, nr) = (
            old_rules.as_ref().unwrap_or(&empty),
            new_rules.as_ref().unwrap_or(&empty),
        );
        let mut rules = Vec::new();
        let mut keys: Vec<&(Section, String)> = or.keys().chain(nr.keys()).collect();
        keys.sort();
        keys.dedup();
        for key in keys {
            let (a, b) = (or.get(key), nr.get(key));
            let change = match (a, b) {
                (None, Some(_)) => Change::Added,
                (Some(_), None) => Change::Removed,
                (Some(x), Some(y)) if x != y => Change::Modified,
                _ => continue,
            };
            rules.push(RuleChange {
                rule: key.1.clone(),
                section: key.0,
                change,
                old: a.cloned(),
                new: b.cloned(),
            });
        }
        let mut fields = Vec::new();
        if let (Some(a), Some(b)) = (o, n) {
            if a.extends != b.extends {
                fields.push("extends".to_string());
            }
            if a.attach != b.attach {
                fields.push("attach".to_string());
            }
            if a.extensions != b.extensions {
                fields.push("extensions".to_string());
            }
            if a.description != b.description {
                fields.push("description".to_string());
            }
        }
        let version_not_raised =
            change == Change::Modified && o.map(|e| e.version) >= n.map(|e| e.version);
        envelopes.push(EnvelopeChange {
            id: id.to_string(),
            change,
            old_version: o.map(|e| e.version),
            new_version: n.map(|e| e.version),
            fields,
            rules,
            version_not_raised,
        });
    }
    EnvelopeDiff { envelopes }
}
