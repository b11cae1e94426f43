//! Compiling envelopes to the vocabulary's facts (`rules/packs/vocabulary.dl`, section
//! "envelopes"). Every fact's origin is `envelope:ID@VERSION`, so proofs name the envelope.

use std::sync::Arc;

use tollgate_engine::{Fact, FactSet, Value};

use super::EnvelopeSet;
use super::format::{PolicyEnvelope, Section};

impl EnvelopeSet {
    /// The facts of every envelope: `envelope`, `envelope_extends`, `envelope_max_clearance`,
    /// `envelope_attached`,
    /// `tool_rule`, `tool_rule_arg`, `tool_rule_arg_url`, `tool_rule_arg_text`, `tool_rule_closed`, `tool_rule_limit`, `data_rule`,
    /// `data_rule_kind`,
    /// `data_rule_label`, `model_rule`, `memory_rule`, `approval_rule`, `tool_level` and
    /// `envelope_extension`. Rule ids are `ENVELOPE/RULE`.
    pub fn facts(&self) -> FactSet {
        let mut facts = FactSet::new();
        for env in self.envelopes() {
            envelope_facts(env, &mut facts);
        }
        facts
    }
}

fn sym(s: &str) -> Value {
    Value::sym(s)
}

/// Appends the facts of one envelope.
pub(crate) fn envelope_facts(env: &PolicyEnvelope, facts: &mut FactSet) {
    let origin: Arc<str> = Arc::from(format!("envelope:{}", env.label()));
    let mut add = |relation: &str, values: Vec<Value>| {
        facts.push(Fact::new(relation, values), origin.clone());
    };
    let e = sym(&env.id);
    add("envelope", vec![e.clone(), Value::Number(env.version)]);
    for parent in &env.extends {
        add("envelope_extends", vec![e.clone(), sym(parent)]);
    }
    if let Some(max) = env.max_clearance {
        add("envelope_max_clearance", vec![e.clone(), sym(max.as_str())]);
    }
    for (kind, targets) in [
        ("run", &env.attach.runs),
        ("agent", &env.attach.agents),
        ("task", &env.attach.tasks),
    ] {
        for t in targets {
            add("envelope_attached", vec![e.clone(), sym(kind), sym(t)]);
        }
    }
    let rule = |section: Section, i: usize, id: &Option<String>| {
        let local = id
            .clone()
            .unwrap_or_else(|| super::format::local_rule_id(section, i));
        sym(&env.rule_id(&local))
    };
    for (i, r) in env.tools.iter().enumerate() {
        let id = rule(Section::Tools, i, &r.id);
        for tool in &r.tools {
            add(
                "tool_rule",
                vec![e.clone(), id.clone(), sym(r.effect.as_str()), sym(tool)],
            );
        }
        for (arg, written) in &r.args {
            let pattern = written.as_str();
            add(
                "tool_rule_arg",
                vec![e.clone(), id.clone(), sym(arg), sym(pattern)],
            );
            if written.kind() == super::ArgKind::Text {
                add(
                    "tool_rule_arg_text",
                    vec![
                        e.clone(),
                        id.clone(),
                        sym(arg),
                        sym(pattern),
                        sym(&super::text_regex(pattern)),
                    ],
                );
            }
            if written.kind() == super::ArgKind::Url
                && let Some(Ok(url)) = super::UrlPattern::parse(pattern)
            {
                add(
                    "tool_rule_arg_url",
                    vec![
                        e.clone(),
                        id.clone(),
                        sym(arg),
                        sym(pattern),
                        sym(&url.scheme),
                        sym(&url.host),
                        sym(&url.port),
                        sym(&url.path),
                    ],
                );
            }
        }
        if r.only_named_args {
            add("tool_rule_closed", vec![e.clone(), id.clone()]);
        }
        if let Some(l) = &r.limit {
            add(
                "tool_rule_limit",
                vec![
                    e.clone(),
                    id.clone(),
                    Value::Number(l.count),
                    Value::Number(l.window_seconds),
                    sym(l.per.as_str()),
                ],
            );
        }
    }
    for (i, r) in env.data.iter().enumerate() {
        let id = rule(Section::Data, i, &r.id);
        for scope in &r.scopes {
            add(
                "data_rule",
                vec![
                    e.clone(),
                    id.clone(),
                    sym(r.effect.as_str()),
                    sym(scope),
                    sym(r.max_sensitivity.as_str()),
                ],
            );
        }
        for kind in &r.kinds {
            add("data_rule_kind", vec![e.clone(), id.clone(), sym(kind)]);
        }
        for label in &r.labels {
            add("data_rule_label", vec![e.clone(), id.clone(), sym(label)]);
        }
    }
    for (i, r) in env.models.iter().enumerate() {
        let id = rule(Section::Models, i, &r.id);
        add(
            "model_rule",
            vec![
                e.clone(),
                id,
                sym(r.effect.as_str()),
                sym(&r.provider),
                sym(&r.model),
                sym(&r.reasoning),
            ],
        );
    }
    for (i, r) in env.memory.iter().enumerate() {
        let id = rule(Section::Memory, i, &r.id);
        for class in &r.classes {
            add(
                "memory_rule",
                vec![e.clone(), id.clone(), sym(r.effect.as_str()), sym(class)],
            );
        }
    }
    for (i, r) in env.approvals.iter().enumerate() {
        let id = rule(Section::Approvals, i, &r.id);
        let approvers = r.approvers.join(",");
        for tool in &r.tools {
            add(
                "approval_rule",
                vec![
                    e.clone(),
                    id.clone(),
                    sym(tool),
                    sym(&approvers),
                    Value::Number(r.ttl_seconds),
                ],
            );
        }
    }
    for (i, r) in env.tool_levels.iter().enumerate() {
        let id = rule(Section::ToolLevels, i, &r.id);
        for tool in &r.tools {
            add(
                "tool_level",
                vec![e.clone(), id.clone(), sym(tool), sym(r.level.as_str())],
            );
        }
    }
    for (key, value) in &env.extensions {
        for (k, v) in flatten_extension(key, value) {
            add("envelope_extension", vec![e.clone(), sym(&k), sym(&v)]);
        }
    }
}

/// Flattens an extension value to `(key, text)` rows: nested mapping keys join with `.`, each
/// list item gives a row under the list's key, scalars are their JSON text (strings bare,
/// `null` the empty text).
pub fn flatten_extension(key: &str, value: &serde_json::Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    flatten_into(key, value, &mut out);
    out
}

fn flatten_into(key: &str, value: &serde_json::Value, out: &mut Vec<(String, String)>) {
    use serde_json::Value as J;
    match value {
        J::Null => out.push((key.to_string(), String::new())),
        J::String(s) => out.push((key.to_string(), s.clone())),
        J::Bool(_) | J::Number(_) => out.push((key.to_string(), value.to_string())),
        J::Array(items) => {
            for item in items {
                flatten_into(key, item, out);
            }
        }
        J::Object(map) => {
            for (k, v) in map {
                flatten_into(&format!("{key}.{k}"), v, out);
            }
        }
    }
}
