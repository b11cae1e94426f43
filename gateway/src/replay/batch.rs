//! Scenario batches: many mutations against one baseline. A batch lists scenarios, single
//! mutations (one scenario each), or a sweep the run's inventory expands — disabling each of
//! its envelope rules in turn attributes outcome changes to rules.
//!
//! ```json
//! {"run": "run-forbidden-tool-pool-exhaustion", "sweep": "disable_each_rule",
//!  "metrics": ["structural_success", "tool_path"]}
//! ```

use serde::{Deserialize, Serialize};

use super::metrics::Label;
use super::result::ResultSummary;
use super::scenario::{
    ModelSource, Mutation, OutcomeMetric, RunInventory, ScenarioError, ScenarioSpec, ToolMode,
};
use crate::evaluators::AssertionSpec;

/// The most scenarios one batch may hold.
pub const MAX_SCENARIOS: usize = 1_000;

/// A sweep: one scenario per element of the run's inventory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Sweep {
    /// `disable_rule` for each envelope rule of the run.
    DisableEachRule,
    /// `drop_item` for each item offered.
    DropEachItem,
    /// `disable_memory_class` for each memory class offered.
    DisableEachMemoryClass,
}

/// One scenario of a batch, as written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Variant {
    /// A name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Its mutations, applied together.
    pub mutations: Vec<Mutation>,
}

/// A batch as written: the run (or step), the scenarios, and what every scenario shares.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BatchSpec {
    /// The recorded run.
    pub run: String,
    /// Only this step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<u32>,
    /// A name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Scenarios.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scenarios: Vec<Variant>,
    /// Single mutations, one scenario each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mutations: Vec<Mutation>,
    /// A sweep over the run's inventory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sweep: Option<Sweep>,
    /// How tools are served.
    #[serde(default)]
    pub mode: ToolMode,
    /// Who answers a changed model call.
    #[serde(default)]
    pub model: ModelSource,
    /// The metrics each label is judged on.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub metrics: Vec<OutcomeMetric>,
    /// Assertions on each replay's final outcome.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rubric: Vec<AssertionSpec>,
}

impl BatchSpec {
    /// The scenarios the batch runs, in order: its scenarios, its single mutations, its sweep.
    pub fn expand(&self, inventory: &RunInventory) -> Result<Vec<ScenarioSpec>, ScenarioError> {
        let mut variants: Vec<(Option<String>, Vec<Mutation>)> = self
            .scenarios
            .iter()
            .map(|v| (v.name.clone(), v.mutations.clone()))
            .collect();
        variants.extend(self.mutations.iter().map(|m| (None, vec![m.clone()])));
        match self.sweep {
            Some(Sweep::DisableEachRule) => variants.extend(
                inventory
                    .rules
                    .iter()
                    .map(|r| (None, vec![Mutation::DisableRule { rule: r.clone() }])),
            ),
            Some(Sweep::DropEachItem) => variants.extend(
                inventory
                    .items
                    .keys()
                    .map(|id| (None, vec![Mutation::DropItem { item: id.clone() }])),
            ),
            Some(Sweep::DisableEachMemoryClass) => variants.extend(
                inventory
                    .memory_classes
                    .iter()
                    .map(|c| (None, vec![Mutation::DisableMemoryClass { class: *c }])),
            ),
            None => {}
        }
        if variants.is_empty() {
            return Err(ScenarioError {
                mutation: None,
                message: "a batch needs scenarios, mutations or a sweep\n  help: for example \
                          {\"run\": \"RUN\", \"sweep\": \"disable_each_rule\"}; sweeps: \
                          disable_each_rule, drop_each_item, disable_each_memory_class"
                    .into(),
            });
        }
        if variants.len() > MAX_SCENARIOS {
            return Err(ScenarioError {
                mutation: None,
                message: format!(
                    "a batch holds at most {MAX_SCENARIOS} scenarios; this one expands to {}\n  \
                     help: split it, or anchor it to a step",
                    variants.len()
                ),
            });
        }
        Ok(variants
            .into_iter()
            .map(|(name, mutations)| ScenarioSpec {
                run: self.run.clone(),
                step: self.step,
                name,
                mutations,
                mode: self.mode,
                model: self.model,
                metrics: self.metrics.clone(),
                rubric: self.rubric.clone(),
            })
            .collect())
    }
}

/// What disabling one rule did to the outcome.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RuleAttribution {
    /// The rule.
    pub rule: String,
    /// The replay's label without it.
    pub label: Label,
    /// The first step that changed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_change: Option<u32>,
    /// The metrics that moved, with their deltas.
    pub moved: Vec<(String, f64)>,
    /// The result.
    pub result: String,
}

/// The results of single-rule scenarios as an attribution: the rules whose absence changed
/// the outcome first (losses, then wins), then those that changed nothing.
pub fn attribution(results: &[ResultSummary]) -> Vec<RuleAttribution> {
    let mut out: Vec<RuleAttribution> = results
        .iter()
        .filter_map(|r| match r.mutations.as_slice() {
            [Mutation::DisableRule { rule }] => Some(RuleAttribution {
                rule: rule.clone(),
                label: r.label,
                first_change: r.first_change,
                moved: r
                    .deltas
                    .iter()
                    .filter(|(_, d)| d.abs() > 0.0)
                    .cloned()
                    .collect(),
                result: r.id.clone(),
            }),
            _ => None,
        })
        .collect();
    let rank = |l: Label| match l {
        Label::Loss => 0,
        Label::Win => 1,
        Label::Neutral => 2,
    };
    out.sort_by(|a, b| {
        rank(a.label)
            .cmp(&rank(b.label))
            .then(b.moved.len().cmp(&a.moved.len()))
            .then(a.rule.cmp(&b.rule))
    });
    out
}
