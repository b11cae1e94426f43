//! Request and subject encoders: pure functions from domain records to the vocabulary's facts.
//!
//! Request facts (origin `request`) are the facts of one decision; subject facts (origin
//! `subject`: runs, clearances, memories and the scopes they mention) change slowly and are
//! materialised with the envelopes.

pub mod arguments;

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use tollgate_engine::{FactSet, Value};

use crate::envelope::Level;

/// The origin label of request facts.
pub const REQUEST_ORIGIN: &str = "request";
/// The origin label of subject facts.
pub const SUBJECT_ORIGIN: &str = "subject";

/// A run: who runs it, for which task, in which scope, seeing up to which level.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunSubject {
    /// Run id.
    pub run: String,
    /// Agent id.
    pub agent: String,
    /// Task id.
    pub task: String,
    /// Scope path, `kind:name` segments joined by `/` (`org:acme/repo:api/task:T-12`).
    pub scope: String,
    /// The highest level the run may see (`public` when not given: fail closed).
    #[serde(default = "lowest_level")]
    pub clearance: Level,
}

fn lowest_level() -> Level {
    Level::Public
}

/// A stored memory, as memory eligibility sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemoryRecord {
    /// Memory id.
    pub id: String,
    /// Class: fact, procedure, preference, warning, summary.
    pub class: String,
    /// Scope path.
    pub scope: String,
    /// Sensitivity.
    pub sensitivity: Level,
    /// candidate | approved | rejected | quarantined.
    #[serde(default = "approved")]
    pub status: String,
    /// Expiry in seconds since the epoch; 0 never expires.
    #[serde(default)]
    pub expires_at: i32,
    /// Pinned memories do not decay.
    #[serde(default)]
    pub pinned: bool,
}

fn approved() -> String {
    "approved".to_string()
}

/// A tool call to decide.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolCall {
    /// Tool name (`fs.read_file`).
    pub name: String,
    /// Arguments, a JSON object.
    #[serde(default)]
    pub args: serde_json::Value,
    /// Calls already counted against rate-limited rules in their current window, by rule id
    /// (from the store).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub usage: BTreeMap<String, i32>,
}

/// A context item a compile wants to include.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContextItem {
    /// Item id.
    pub id: String,
    /// Kind: file, doc, memory, tool_output...
    pub kind: String,
    /// Scope path.
    pub scope: String,
    /// Sensitivity.
    pub sensitivity: Level,
    /// Labels (`secret`, `pii`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub labels: Vec<String>,
}

/// A model call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelCall {
    /// Provider (`openai`).
    pub provider: String,
    /// Model (`gpt-4.1-mini`).
    pub model: String,
    /// Reasoning mode (`low`, `high`); empty when the model has none.
    #[serde(default)]
    pub reasoning: String,
}

/// A handoff between two runs under a contract.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Handoff {
    /// Handoff id.
    pub id: String,
    /// The producing run.
    pub from_run: String,
    /// The consuming run.
    pub to_run: String,
    /// The contract's terms.
    pub contract: HandoffContract,
    /// The goal packet's objective.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goal: Option<String>,
    /// The evidence bundle.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub evidence: Vec<Evidence>,
    /// The contract's template; `lightweight` when `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<String>,
    /// The fields the contract fills (`goal`, `expected_output`, `evidence`, `constraints`,
    /// `required_outputs`, `success_criteria`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fields: Vec<String>,
    /// Who hands work to whom (`RUN#AGENT`), for the delegation-cycle check.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parties: Option<Delegation>,
    /// Earlier contracts still in force among the runs concerned.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub delegations: Vec<Delegation>,
    /// What the consumer delivered, when its delivery is checked (`None` when the contract
    /// itself is validated).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery: Option<Delivery>,
    /// The time of a delivery check, seconds since the epoch (for a `deadline` constraint).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub now: Option<i32>,
}

/// A producer handing work to a consumer, each `RUN#AGENT`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Delegation {
    /// The producing party.
    pub producer: String,
    /// The consuming party.
    pub consumer: String,
}

/// What a consumer delivered under a contract.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Delivery {
    /// The outputs it delivered, by the contract's names.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub outputs: Vec<String>,
    /// The tools it executed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub actions: Vec<String>,
}

/// What a handoff contract requires.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HandoffContract {
    /// Contract id.
    pub id: String,
    /// Outputs the producer must deliver.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub requires: Vec<String>,
    /// Constraints as `(name, value)`: `max_level`/LEVEL, `scope`/PATTERN...
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub constraints: Vec<Constraint>,
}

/// One constraint of a contract.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Constraint {
    /// Constraint name.
    pub name: String,
    /// Its value.
    pub value: String,
}

/// One piece of evidence passed in a handoff.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Evidence {
    /// Item id.
    pub item: String,
    /// Scope path.
    pub scope: String,
    /// Sensitivity.
    pub sensitivity: Level,
}

fn sym(s: &str) -> Value {
    Value::sym(s)
}

/// `(child, parent)` for every prefix of a scope path: `org:a/repo:b/task:c` gives
/// `(org:a/repo:b/task:c, org:a/repo:b)` and `(org:a/repo:b, org:a)`.
pub fn scope_parents(scope: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut child = scope;
    while let Some((parent, _)) = child.rsplit_once('/') {
        if parent.is_empty() {
            break;
        }
        out.push((child.to_string(), parent.to_string()));
        child = parent;
    }
    out
}

fn add_scopes<'a>(facts: &mut FactSet, scopes: impl IntoIterator<Item = &'a str>, origin: &str) {
    let mut pairs = BTreeSet::new();
    for s in scopes {
        pairs.extend(scope_parents(s));
    }
    for (child, parent) in pairs {
        facts.add("scope_parent", vec![sym(&child), sym(&parent)], origin);
    }
}

/// Subject facts: `run` and `clearance` per run, `memory` per memory, and `scope_parent` for
/// every prefix of every scope they mention.
pub fn subject_facts(runs: &[RunSubject], memories: &[MemoryRecord]) -> FactSet {
    let mut facts = FactSet::new();
    let o = SUBJECT_ORIGIN;
    for r in runs {
        facts.add(
            "run",
            vec![sym(&r.run), sym(&r.agent), sym(&r.task), sym(&r.scope)],
            o,
        );
        facts.add("clearance", vec![sym(&r.run), sym(r.clearance.as_str())], o);
    }
    for m in memories {
        facts.add(
            "memory",
            vec![
                sym(&m.id),
                sym(&m.class),
                sym(&m.scope),
                sym(m.sensitivity.as_str()),
                sym(&m.status),
                Value::Number(m.expires_at),
                Value::Number(i32::from(m.pinned)),
            ],
            o,
        );
    }
    add_scopes(
        &mut facts,
        runs.iter()
            .map(|r| r.scope.as_str())
            .chain(memories.iter().map(|m| m.scope.as_str())),
        o,
    );
    facts
}

/// `now(t)`: the request's time in seconds.
pub fn now_facts(now: i32) -> FactSet {
    let mut facts = FactSet::new();
    facts.add("now", vec![Value::Number(now)], REQUEST_ORIGIN);
    facts
}

/// `tool_request`, a `tool_arg` row per scalar of the arguments, what keeps a hostile value
/// from slipping past a condition (`tool_arg_in`, `tool_arg_unsafe`, `tool_arg_url`: see
/// [`arguments`]), and `tool_usage` rows.
pub fn tool_request_facts(req: &str, run: &str, call: &ToolCall) -> FactSet {
    let mut facts = FactSet::new();
    let o = REQUEST_ORIGIN;
    facts.add("tool_request", vec![sym(req), sym(run), sym(&call.name)], o);
    for (pointer, value) in flatten_arguments(&call.args) {
        if let Some(why) = arguments::unsafe_reason(&value) {
            facts.add(
                "tool_arg_unsafe",
                vec![sym(req), sym(&pointer), sym(why)],
                o,
            );
        }
        if let Some((scheme, host, port, path)) = arguments::url_parts(&value) {
            facts.add(
                "tool_arg_url",
                vec![
                    sym(req),
                    sym(&pointer),
                    sym(&scheme),
                    sym(&host),
                    sym(&port),
                    sym(&path),
                ],
                o,
            );
        }
        facts.add("tool_arg", vec![sym(req), sym(&pointer), sym(&value)], o);
    }
    for (container, leaf) in arguments::containment(&call.args) {
        facts.add(
            "tool_arg_in",
            vec![sym(req), sym(&container), sym(&leaf)],
            o,
        );
    }
    for (rule, used) in &call.usage {
        facts.add(
            "tool_usage",
            vec![sym(req), sym(rule), Value::Number(*used)],
            o,
        );
    }
    facts
}

/// Flattens JSON arguments to `(JSON pointer, scalar as text)` pairs: `{"opts": {"force":
/// true}, "files": ["a"]}` gives `("/opts/force", "true")` and `("/files/0", "a")`. Strings
/// are bare, other scalars their JSON text; `~` and `/` in keys are escaped as `~0` and `~1`.
pub fn flatten_arguments(args: &serde_json::Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    flatten_into(String::new(), args, &mut out);
    out
}

fn flatten_into(pointer: String, value: &serde_json::Value, out: &mut Vec<(String, String)>) {
    use serde_json::Value as J;
    match value {
        J::Object(map) => {
            for (k, v) in map {
                let key = k.replace('~', "~0").replace('/', "~1");
                flatten_into(format!("{pointer}/{key}"), v, out);
            }
        }
        J::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                flatten_into(format!("{pointer}/{i}"), v, out);
            }
        }
        // A scalar at the top (not an object) has the empty pointer.
        J::String(s) => out.push((pointer, s.clone())),
        other => out.push((pointer, other.to_string())),
    }
}

/// `context_request`, a `context_label` per label, and the item scope's `scope_parent` rows.
pub fn context_request_facts(req: &str, run: &str, item: &ContextItem) -> FactSet {
    let mut facts = FactSet::new();
    let o = REQUEST_ORIGIN;
    facts.add(
        "context_request",
        vec![
            sym(req),
            sym(run),
            sym(&item.id),
            sym(&item.kind),
            sym(&item.scope),
            sym(item.sensitivity.as_str()),
        ],
        o,
    );
    for label in &item.labels {
        facts.add("context_label", vec![sym(req), sym(label)], o);
    }
    add_scopes(&mut facts, [item.scope.as_str()], o);
    facts
}

/// `memory_request`.
pub fn memory_request_facts(req: &str, run: &str) -> FactSet {
    let mut facts = FactSet::new();
    facts.add("memory_request", vec![sym(req), sym(run)], REQUEST_ORIGIN);
    facts
}

/// `model_request`.
pub fn model_request_facts(req: &str, run: &str, call: &ModelCall) -> FactSet {
    let mut facts = FactSet::new();
    facts.add(
        "model_request",
        vec![
            sym(req),
            sym(run),
            sym(&call.provider),
            sym(&call.model),
            sym(&call.reasoning),
        ],
        REQUEST_ORIGIN,
    );
    facts
}

/// `handoff`, `handoff_goal`, `handoff_evidence`, `handoff_output`, the contract's
/// `contract_requires` and `contract_constraint`, and the evidence scopes' `scope_parent`.
pub fn handoff_facts(h: &Handoff) -> FactSet {
    let mut facts = FactSet::new();
    let o = REQUEST_ORIGIN;
    let id = sym(&h.id);
    facts.add(
        "handoff",
        vec![
            id.clone(),
            sym(&h.from_run),
            sym(&h.to_run),
            sym(&h.contract.id),
        ],
        o,
    );
    if let Some(goal) = &h.goal {
        facts.add("handoff_goal", vec![id.clone(), sym(goal)], o);
    }
    for e in &h.evidence {
        facts.add(
            "handoff_evidence",
            vec![
                id.clone(),
                sym(&e.item),
                sym(&e.scope),
                sym(e.sensitivity.as_str()),
            ],
            o,
        );
    }
    facts.add(
        "handoff_template",
        vec![
            id.clone(),
            sym(h.template.as_deref().unwrap_or("lightweight")),
        ],
        o,
    );
    for f in &h.fields {
        facts.add("handoff_field", vec![id.clone(), sym(f)], o);
    }
    if let Some(p) = &h.parties {
        facts.add(
            "handoff_parties",
            vec![id.clone(), sym(&p.producer), sym(&p.consumer)],
            o,
        );
    }
    for d in &h.delegations {
        facts.add("delegation", vec![sym(&d.producer), sym(&d.consumer)], o);
    }
    if let Some(delivery) = &h.delivery {
        facts.add("handoff_delivery", vec![id.clone()], o);
        for out in &delivery.outputs {
            facts.add("handoff_output", vec![id.clone(), sym(out)], o);
        }
        for tool in &delivery.actions {
            facts.add("handoff_action", vec![id.clone(), sym(tool)], o);
        }
    }
    for r in &h.contract.requires {
        facts.add("contract_requires", vec![sym(&h.contract.id), sym(r)], o);
    }
    for c in &h.contract.constraints {
        facts.add(
            "contract_constraint",
            vec![sym(&h.contract.id), sym(&c.name), sym(&c.value)],
            o,
        );
    }
    add_scopes(&mut facts, h.evidence.iter().map(|e| e.scope.as_str()), o);
    facts
}
