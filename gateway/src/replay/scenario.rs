//! A counterfactual replay's scenario: the recorded run (or one of its steps) it is anchored
//! to, the mutations it makes, how the model and the tools are served, and the metrics that
//! judge it. A scenario is checked against its run before anything runs: a mutation that names
//! an item, a rule or a memory class the run does not have is refused with what exists.
//!
//! ```json
//! {"run": "run-flaky-webhook-retry", "name": "without the flaky-test warning",
//!  "mutations": [{"kind": "drop_item", "item": "mem-warning-flaky-fetch-timeout"},
//!                {"kind": "change_budget", "budget": 2000},
//!                {"kind": "disable_rule", "rule": "coding-agent/read-only"}],
//!  "metrics": ["structural_success", "tool_path", "cost"]}
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde::{Deserialize, Serialize};
use tollgate_rules::envelope::load_envelopes;

use crate::compiler::{CandidateItem, ItemKind};
use crate::evaluators::AssertionSpec;
use crate::memory::MemoryClass;
use crate::recorder::events::{CompileEvent, ContextOfferedEvent};
use crate::recorder::format::RunFile;
use crate::run_policy::RecordedVersions;

/// Which form of an item a `swap_summary` mutation forces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum SummaryForm {
    /// The summary in place of the content (the item is offered as its summary alone).
    Summary,
    /// The content only: the summary is taken away, so the item fits in full or not at all.
    Raw,
}

/// One controlled change, on normalised context items, compile settings or policy; never on
/// a provider payload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Mutation {
    /// The item is not offered.
    DropItem {
        /// Its id.
        item: String,
    },
    /// The item competes for the budget with this weight.
    ChangeWeight {
        /// Its id.
        item: String,
        /// The new weight (finite, `>= 0`).
        weight: f64,
    },
    /// The total budget, or with `item_kind` the budget of one kind, is this many tokens.
    ChangeBudget {
        /// The kind whose budget changes; the total when absent.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        item_kind: Option<ItemKind>,
        /// Tokens.
        budget: u32,
    },
    /// The item is offered as its summary only (`summary`) or its content only (`raw`).
    SwapSummary {
        /// Its id (an item with both content and a summary).
        item: String,
        /// The form forced.
        to: SummaryForm,
    },
    /// The envelope rule (`ENVELOPE/RULE`) is taken out of every envelope version the run
    /// was decided under.
    DisableRule {
        /// Its id.
        rule: String,
    },
    /// No memory of this class is offered.
    DisableMemoryClass {
        /// The class.
        class: MemoryClass,
    },
    /// One retrieved document (a `doc` item) is not offered.
    DropRetrievalDoc {
        /// Its id.
        item: String,
    },
}

impl Mutation {
    /// The mutation's `kind` tag.
    pub fn kind(&self) -> &'static str {
        match self {
            Mutation::DropItem { .. } => "drop_item",
            Mutation::ChangeWeight { .. } => "change_weight",
            Mutation::ChangeBudget { .. } => "change_budget",
            Mutation::SwapSummary { .. } => "swap_summary",
            Mutation::DisableRule { .. } => "disable_rule",
            Mutation::DisableMemoryClass { .. } => "disable_memory_class",
            Mutation::DropRetrievalDoc { .. } => "drop_retrieval_doc",
        }
    }
}

impl fmt::Display for Mutation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Mutation::DropItem { item } => write!(f, "drop item `{item}`"),
            Mutation::ChangeWeight { item, weight } => write!(f, "weigh `{item}` {weight}"),
            Mutation::ChangeBudget {
                item_kind: None,
                budget,
            } => write!(f, "budget {budget}"),
            Mutation::ChangeBudget {
                item_kind: Some(kind),
                budget,
            } => write!(f, "`{kind}` budget {budget}"),
            Mutation::SwapSummary {
                item,
                to: SummaryForm::Summary,
            } => write!(f, "`{item}` as its summary"),
            Mutation::SwapSummary {
                item,
                to: SummaryForm::Raw,
            } => write!(f, "`{item}` without its summary"),
            Mutation::DisableRule { rule } => write!(f, "disable rule `{rule}`"),
            Mutation::DisableMemoryClass { class } => {
                write!(f, "no `{}` memories", class.as_str())
            }
            Mutation::DropRetrievalDoc { item } => write!(f, "drop retrieved doc `{item}`"),
        }
    }
}

/// How tool calls are made in a replay. No mode runs a tool for real: Tollgate decides tool
/// calls and agents execute them, so a replay serves each result from the recording.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum ToolMode {
    /// The agent's recorded calls are replayed as a script: re-decided under the scenario's
    /// policy, results served from the recording. Context mutations change what the model
    /// sees and costs; policy mutations change which calls run.
    #[default]
    DryRun,
    /// The model's answers steer: a step whose answer changed makes the calls that answer
    /// asks for (OpenAI `tool_calls`, or `Action: TOOL {json}` lines), each served from the
    /// recording when it made the same call, else an explicit `unrecorded` stub. Meaningful
    /// with a live model.
    StubbedTool,
}

/// Who answers a model call whose request changed. An unchanged request is always served its
/// recorded answer.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum ModelSource {
    /// The fake provider (deterministic, no network).
    #[default]
    Recorded,
    /// The provider configured in the environment (`TOLLGATE_PROVIDER`, ...): a real model,
    /// on explicit opt-in.
    Live,
}

/// What judges an outcome (see `replay::metrics`).
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
pub enum OutcomeMetric {
    /// The share of steps that held together: compiled, answered, every call run with an
    /// `ok` result.
    StructuralSuccess,
    /// How closely the calls run follow the baseline's.
    ToolPath,
    /// Modelled latency (recorded durations; a changed answer scaled by its prompt).
    Latency,
    /// Tokens: compiled prompts plus completions.
    Cost,
    /// How much of the baseline's change (its write calls) the replay makes, and nothing else.
    DiffQuality,
    /// The share of the scenario's rubric assertions the final outcome passes.
    Rubric,
}

impl OutcomeMetric {
    /// Every metric.
    pub const ALL: [OutcomeMetric; 6] = [
        OutcomeMetric::StructuralSuccess,
        OutcomeMetric::ToolPath,
        OutcomeMetric::Latency,
        OutcomeMetric::Cost,
        OutcomeMetric::DiffQuality,
        OutcomeMetric::Rubric,
    ];

    /// `structural_success`, `tool_path`, ...
    pub fn as_str(self) -> &'static str {
        match self {
            OutcomeMetric::StructuralSuccess => "structural_success",
            OutcomeMetric::ToolPath => "tool_path",
            OutcomeMetric::Latency => "latency",
            OutcomeMetric::Cost => "cost",
            OutcomeMetric::DiffQuality => "diff_quality",
            OutcomeMetric::Rubric => "rubric",
        }
    }
}

/// A scenario as written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ScenarioSpec {
    /// The recorded run.
    pub run: String,
    /// Only this step of it (the mutations act there; the comparison covers it alone).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<u32>,
    /// A name for people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The changes, applied together.
    pub mutations: Vec<Mutation>,
    /// How tools are served.
    #[serde(default)]
    pub mode: ToolMode,
    /// Who answers a changed model call.
    #[serde(default)]
    pub model: ModelSource,
    /// The metrics the label is judged on (all but `rubric` when empty; `rubric` too when
    /// the rubric is not empty).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub metrics: Vec<OutcomeMetric>,
    /// Assertions on the replay's final outcome (its output text, tool path, summary).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rubric: Vec<AssertionSpec>,
}

impl ScenarioSpec {
    /// The metrics the label is judged on.
    pub fn selected_metrics(&self) -> Vec<OutcomeMetric> {
        if !self.metrics.is_empty() {
            let set: BTreeSet<OutcomeMetric> = self.metrics.iter().copied().collect();
            return set.into_iter().collect();
        }
        OutcomeMetric::ALL
            .into_iter()
            .filter(|m| *m != OutcomeMetric::Rubric || !self.rubric.is_empty())
            .collect()
    }

    /// The scenario's id: `scn-` and 16 hex digits of the blake3 of its canonical JSON, so
    /// the same scenario written twice is one scenario.
    pub fn id(&self) -> String {
        let json = serde_json::to_value(self).unwrap_or_default();
        let canonical = tollgate_rules::canonical::canonical_json(&json);
        let hash = blake3::hash(canonical.as_bytes()).to_hex();
        format!("scn-{}", &hash[..16])
    }
}

/// A scenario the run does not support, saying what it does have.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ScenarioError {
    /// The mutation at fault (its index), when one is.
    pub mutation: Option<usize>,
    /// What is wrong, what exists, how to fix it.
    pub message: String,
}

fn refuse(mutation: Option<usize>, message: String) -> ScenarioError {
    ScenarioError { mutation, message }
}

/// What a run offers a scenario to name: its items (by id, with kind and whether they have a
/// summary), its envelope rules, its memory classes and its steps.
#[derive(Debug, Clone, Default)]
pub struct RunInventory {
    /// Items offered, by id.
    pub items: BTreeMap<String, CandidateItem>,
    /// Envelope rules, by id.
    pub rules: BTreeSet<String>,
    /// Classes of the memories offered.
    pub memory_classes: BTreeSet<MemoryClass>,
    /// Step indexes.
    pub steps: BTreeSet<u32>,
}

impl RunInventory {
    /// What `file` has, within `step` when given (the items its compiles take, whichever
    /// step offered them).
    pub fn of(file: &RunFile, step: Option<u32>) -> RunInventory {
        let mut inventory = RunInventory {
            steps: file.steps.iter().map(|s| s.index).collect(),
            ..RunInventory::default()
        };
        let mut offered: BTreeMap<String, CandidateItem> = BTreeMap::new();
        for e in &file.events {
            if let Some(o) = e.read::<ContextOfferedEvent>() {
                for item in o.items {
                    offered.insert(item.id.clone(), item);
                }
            }
            if step.is_some_and(|s| s != e.step) {
                continue;
            }
            if let Some(c) = e.read::<CompileEvent>() {
                for id in c.item_ids {
                    if let Some(item) = offered.get(&id) {
                        if let Some(class) = memory_class(item) {
                            inventory.memory_classes.insert(class);
                        }
                        inventory.items.insert(id, item.clone());
                    }
                }
            }
        }
        let versions = RecordedVersions::new(file);
        for set in versions.used(file) {
            if let Ok(sources) = versions.sources(&set)
                && let Ok(loaded) = load_envelopes(&sources)
            {
                inventory.rules.extend(loaded.rule_ids());
            }
        }
        inventory
    }
}

/// The class of a memory item: the word its text opens with (`procedure (from run-1): ...`,
/// as retrieval renders memories and recorded sessions write them). `None` for other items.
pub fn memory_class(item: &CandidateItem) -> Option<MemoryClass> {
    if item.kind != ItemKind::Memory {
        return None;
    }
    let text = item.content.as_deref().or(item.summary.as_deref())?;
    let word: String = text
        .trim_start()
        .chars()
        .take_while(char::is_ascii_alphabetic)
        .collect();
    MemoryClass::parse(&word.to_ascii_lowercase())
}

/// Checks `spec` against the run it names: the step exists, every item, rule and memory class
/// a mutation names is the run's, weights and budgets are sane.
pub fn check(spec: &ScenarioSpec, file: &RunFile) -> Result<RunInventory, ScenarioError> {
    let inventory = RunInventory::of(file, spec.step);
    check_in(spec, &file.run.id, &inventory)?;
    Ok(inventory)
}

/// [`check`] against an inventory already taken (of `run`, at the scenario's step): a batch
/// takes it once for all its scenarios.
pub fn check_in(
    spec: &ScenarioSpec,
    run: &str,
    inventory: &RunInventory,
) -> Result<(), ScenarioError> {
    if spec.mutations.is_empty() {
        return Err(refuse(
            None,
            "a scenario needs at least one mutation\n  help: for example \
             {\"kind\": \"drop_item\", \"item\": \"ID\"}; kinds: drop_item, change_weight, \
             change_budget, swap_summary, disable_rule, disable_memory_class, drop_retrieval_doc"
                .into(),
        ));
    }
    if let Some(step) = spec.step
        && !inventory.steps.contains(&step)
    {
        return Err(refuse(
            None,
            format!(
                "run `{run}` has no step {step}; its steps are {}",
                range_of(&inventory.steps)
            ),
        ));
    }
    let within = match spec.step {
        Some(s) => format!("step {s} of run `{run}`"),
        None => format!("run `{run}`"),
    };
    for (i, m) in spec.mutations.iter().enumerate() {
        let at = Some(i);
        let item_of = |id: &str| {
            inventory.items.get(id).ok_or_else(|| {
                refuse(
                    at,
                    format!(
                        "mutation {i} ({}) names item `{id}`, which {within} never offers\n  help: \
                         its items are {}",
                        m.kind(),
                        listing(inventory.items.keys())
                    ),
                )
            })
        };
        match m {
            Mutation::DropItem { item } => {
                item_of(item)?;
            }
            Mutation::ChangeWeight { item, weight } => {
                item_of(item)?;
                if !weight.is_finite() || *weight < 0.0 {
                    return Err(refuse(
                        at,
                        format!(
                            "mutation {i} (change_weight) gives `{item}` weight {weight}; a \
                             weight is a finite number >= 0"
                        ),
                    ));
                }
            }
            Mutation::ChangeBudget { budget, .. } => {
                if *budget == 0 {
                    return Err(refuse(
                        at,
                        format!(
                            "mutation {i} (change_budget) sets a budget of 0 tokens, which \
                             nothing fits\n  help: give a positive number of tokens"
                        ),
                    ));
                }
            }
            Mutation::SwapSummary { item, .. } => {
                let found = item_of(item)?;
                if found.summary.is_none() || found.body().is_none() {
                    let swappable: Vec<&String> = inventory
                        .items
                        .values()
                        .filter(|c| c.summary.is_some() && c.body().is_some())
                        .map(|c| &c.id)
                        .collect();
                    return Err(refuse(
                        at,
                        format!(
                            "mutation {i} (swap_summary) names `{item}`, which has no {}\n  \
                             help: the items of {within} with both a summary and content are {}",
                            if found.summary.is_none() {
                                "summary"
                            } else {
                                "content"
                            },
                            listing(swappable)
                        ),
                    ));
                }
            }
            Mutation::DisableRule { rule } => {
                if !inventory.rules.contains(rule) {
                    return Err(refuse(
                        at,
                        format!(
                            "mutation {i} (disable_rule) names rule `{rule}`, which no envelope \
                             of run `{run}` has{}\n  help: its rules are {}",
                            if rule.contains('/') {
                                ""
                            } else {
                                " (rules are named ENVELOPE/RULE; the pack's own defaults, \
                                 such as `default-deny`, cannot be disabled)"
                            },
                            listing(&inventory.rules)
                        ),
                    ));
                }
            }
            Mutation::DisableMemoryClass { class } => {
                if !inventory.memory_classes.contains(class) {
                    return Err(refuse(
                        at,
                        format!(
                            "mutation {i} (disable_memory_class) names `{}`, but {within} \
                             offers no memory of that class\n  help: the classes it offers are {}",
                            class.as_str(),
                            listing(inventory.memory_classes.iter().map(|c| c.as_str()))
                        ),
                    ));
                }
            }
            Mutation::DropRetrievalDoc { item } => {
                let found = item_of(item)?;
                if found.kind != ItemKind::Doc {
                    let docs: Vec<&String> = inventory
                        .items
                        .values()
                        .filter(|c| c.kind == ItemKind::Doc)
                        .map(|c| &c.id)
                        .collect();
                    return Err(refuse(
                        at,
                        format!(
                            "mutation {i} (drop_retrieval_doc) names `{item}`, a `{}`, not a \
                             retrieved doc\n  help: use drop_item for it; the docs of {within} \
                             are {}",
                            found.kind,
                            listing(docs)
                        ),
                    ));
                }
            }
        }
    }
    Ok(())
}

/// `a`, `b` and 3 more; `none` when empty.
fn listing<S: fmt::Display>(items: impl IntoIterator<Item = S>) -> String {
    const SHOWN: usize = 40;
    let all: Vec<String> = items.into_iter().map(|s| format!("`{s}`")).collect();
    if all.is_empty() {
        return "none".into();
    }
    let shown = all
        .iter()
        .take(SHOWN)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if all.len() > SHOWN {
        format!("{shown} and {} more", all.len() - SHOWN)
    } else {
        shown
    }
}

fn range_of(steps: &BTreeSet<u32>) -> String {
    match (steps.first(), steps.last()) {
        (Some(a), Some(b)) => format!("{a} to {b}"),
        _ => "none".into(),
    }
}
