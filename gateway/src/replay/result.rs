//! A scenario executed: the baseline (the exact replay of the recording, which must not
//! drift) and the replay side by side — per step the items whose outcome changed, tokens by
//! kind, each changed answer as a diff, each tool call that went differently — with the
//! metrics, their deltas and the label.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::counterfactual::{
    Answered, Execution, ItemTrace, Prepared, Served, StepTrace, ToolTrace, Trajectory, allocation,
};
use super::metrics::{Label, MetricDelta, compare, subject};
use super::scenario::{
    ModelSource, Mutation, RunInventory, ScenarioSpec, ToolMode, check, check_in,
};
use super::{ReplayError, replay_file};
use crate::compiler::ItemKind;
use crate::evaluators::{EvalSubject, Judge};
use crate::providers::Provider;
use crate::recorder::format::RunFile;

/// One side of an item's change.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ItemSide {
    /// `included`, `redacted`, `summarised`, `excluded`, `dropped`.
    pub status: String,
    /// Tokens.
    pub tokens: u32,
    /// Why.
    pub why: String,
}

/// An item whose outcome differs between baseline and replay in one compile.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ItemChange {
    /// The compile event.
    pub compile: u64,
    /// The item.
    pub id: String,
    /// Its kind.
    pub kind: ItemKind,
    /// In the baseline (absent when only the replay had it).
    pub baseline: Option<ItemSide>,
    /// In the replay.
    pub replay: Option<ItemSide>,
}

/// Tokens one kind of item took in a step, both sides.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Allocation {
    /// The kind.
    pub kind: ItemKind,
    /// Baseline tokens.
    pub baseline: u32,
    /// Replay tokens.
    pub replay: u32,
}

/// A model call answered differently.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AnswerChange {
    /// The `model_call` event.
    pub seq: u64,
    /// Who answered the baseline.
    pub baseline: Answered,
    /// Who answered the replay.
    pub replay: Answered,
    /// A unified diff of the two answers' text.
    pub diff: String,
}

/// One side of a tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSide {
    /// What policy decided.
    pub effect: String,
    /// How it was served.
    pub served: Served,
    /// The result's status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// Why.
    pub why: String,
}

/// A tool call that went differently (or was made on one side only).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolChange {
    /// The call.
    pub call_id: String,
    /// The tool.
    pub tool: String,
    /// In the baseline.
    pub baseline: Option<ToolSide>,
    /// In the replay.
    pub replay: Option<ToolSide>,
}

/// One step, baseline against replay.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepComparison {
    /// Step index.
    pub step: u32,
    /// Step name.
    pub name: String,
    /// Whether anything differs.
    pub changed: bool,
    /// Items whose outcome differs.
    pub items: Vec<ItemChange>,
    /// Tokens by kind (every kind either side used).
    pub allocation: Vec<Allocation>,
    /// Answers that differ.
    pub answers: Vec<AnswerChange>,
    /// Tool calls that differ.
    pub tools: Vec<ToolChange>,
}

/// A scenario's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplayResult {
    /// `rpl-...`, given when stored (empty before).
    pub id: String,
    /// The scenario's id.
    pub scenario: String,
    /// The batch it ran in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch: Option<String>,
    /// The run.
    pub run: String,
    /// The step, when anchored to one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<u32>,
    /// The scenario's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The mutations.
    pub mutations: Vec<Mutation>,
    /// The tool mode.
    pub mode: ToolMode,
    /// The model source.
    pub model: ModelSource,
    /// The verdict.
    pub label: Label,
    /// The selected metrics, baseline and replay.
    pub metrics: Vec<MetricDelta>,
    /// The first step that differs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_change: Option<u32>,
    /// Every step compared.
    pub steps: Vec<StepComparison>,
    /// What the figures do not say (answers a model would have given differently, stubs).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// The baseline trajectory.
    pub baseline: Trajectory,
    /// The replay trajectory.
    pub replay: Trajectory,
    /// When it ran (set by the store).
    #[serde(default)]
    pub executed_at: String,
}

/// One result, in a list.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ResultSummary {
    /// `rpl-...`.
    pub id: String,
    /// Its scenario.
    pub scenario: String,
    /// Its batch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub batch: Option<String>,
    /// The run.
    pub run: String,
    /// The scenario's name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The mutations.
    pub mutations: Vec<Mutation>,
    /// The verdict.
    pub label: Label,
    /// The first step that differs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_change: Option<u32>,
    /// Each metric's delta, by name.
    pub deltas: Vec<(String, f64)>,
    /// When it ran.
    pub executed_at: String,
}

/// The baseline of a run (or one step): the recording reproduced by the counterfactual
/// executor with no mutation, after the exact replay found no drift.
pub struct Baseline<'a> {
    file: &'a RunFile,
    step: Option<u32>,
    /// What scenarios may name, taken once.
    inventory: RunInventory,
    prepared: Prepared<'a>,
    trajectory: Trajectory,
    subject: EvalSubject,
}

impl<'a> Baseline<'a> {
    /// The baseline of `file` (only `step` when given). Refused when the exact replay drifts:
    /// a comparison with it would mix the drift into every mutation's effect.
    pub fn new(file: &'a RunFile, step: Option<u32>) -> Result<Baseline<'a>, ReplayError> {
        let report = replay_file(file)?;
        if report.drifted() {
            let steps: Vec<String> = report
                .steps
                .iter()
                .filter(|s| !s.matched())
                .map(|s| s.step.to_string())
                .collect();
            return Err(ReplayError::Baseline {
                run: file.run.id.clone(),
                detail: format!(
                    "its exact replay drifts at step(s) {}\n  help: `tollgate replay exact {}` \
                     shows the drift; a counterfactual needs a baseline that reproduces",
                    steps.join(", "),
                    file.run.id
                ),
            });
        }
        let execution = Execution {
            mutations: &[],
            step,
            mode: ToolMode::DryRun,
            model: ModelSource::Recorded,
            live: None,
        };
        let prepared = Prepared::new(file)?;
        let trajectory = prepared.trajectory(&execution)?;
        if let Some(m) = trajectory
            .model_calls()
            .find(|m| m.answered != Answered::Recorded)
        {
            return Err(ReplayError::Baseline {
                run: file.run.id.clone(),
                detail: format!(
                    "its model call at event {} is not served its recorded answer without a \
                     mutation ({})",
                    m.seq,
                    m.why.clone().unwrap_or_default()
                ),
            });
        }
        let subject = subject(&trajectory);
        Ok(Baseline {
            file,
            step,
            inventory: RunInventory::of(file, step),
            prepared,
            trajectory,
            subject,
        })
    }

    /// The baseline trajectory.
    pub fn trajectory(&self) -> &Trajectory {
        &self.trajectory
    }

    /// Runs `spec` (checked against the run first) and compares it with the baseline.
    /// `live` answers changed requests when the scenario asks for a live model; `judge`
    /// answers the rubric's `llm_judge` assertions when the LLM judge is on.
    pub fn run(
        &self,
        spec: &ScenarioSpec,
        live: Option<&dyn Provider>,
        judge: Option<&Judge>,
    ) -> Result<ReplayResult, ReplayError> {
        if spec.step != self.step {
            return Err(ReplayError::Scenario(super::scenario::ScenarioError {
                mutation: None,
                message: format!(
                    "the scenario is anchored to {}, the baseline to {}",
                    step_name(spec.step),
                    step_name(self.step)
                ),
            }));
        }
        check_in(spec, &self.file.run.id, &self.inventory)?;
        let execution = Execution {
            mutations: &spec.mutations,
            step: spec.step,
            mode: spec.mode,
            model: spec.model,
            live,
        };
        let replay = self.prepared.trajectory(&execution)?;
        let (label, metrics) = compare(
            &self.subject,
            &subject(&replay),
            &spec.selected_metrics(),
            &spec.rubric,
            judge,
        )
        .map_err(|e| {
            ReplayError::Scenario(super::scenario::ScenarioError {
                mutation: None,
                message: format!("the rubric does not build: {e}"),
            })
        })?;
        let steps: Vec<StepComparison> = self
            .trajectory
            .steps
            .iter()
            .zip(&replay.steps)
            .map(|(b, r)| compare_step(b, r))
            .collect();
        Ok(ReplayResult {
            id: String::new(),
            scenario: spec.id(),
            batch: None,
            run: self.file.run.id.clone(),
            step: spec.step,
            name: spec.name.clone(),
            mutations: spec.mutations.clone(),
            mode: spec.mode,
            model: spec.model,
            label,
            metrics,
            first_change: steps.iter().find(|s| s.changed).map(|s| s.step),
            notes: notes(spec, &replay),
            steps,
            baseline: self.trajectory.clone(),
            replay,
            executed_at: String::new(),
        })
    }
}

fn step_name(step: Option<u32>) -> String {
    match step {
        Some(s) => format!("step {s}"),
        None => "the whole run".into(),
    }
}

/// Runs one scenario against its run's baseline (see [`Baseline::run`] for `live` and
/// `judge`).
pub fn execute(
    file: &RunFile,
    spec: &ScenarioSpec,
    live: Option<&dyn Provider>,
    judge: Option<&Judge>,
) -> Result<ReplayResult, ReplayError> {
    check(spec, file)?;
    Baseline::new(file, spec.step)?.run(spec, live, judge)
}

fn notes(spec: &ScenarioSpec, replay: &Trajectory) -> Vec<String> {
    let mut notes = Vec::new();
    let steps_where = |pred: &dyn Fn(&StepTrace) -> bool| -> Vec<String> {
        replay
            .steps
            .iter()
            .filter(|s| pred(s))
            .map(|s| s.step.to_string())
            .collect()
    };
    let fake = steps_where(&|s| s.model_calls.iter().any(|m| m.answered == Answered::Fake));
    if !fake.is_empty() {
        notes.push(format!(
            "the model saw a changed context at step(s) {}; the fake provider answered there. {}",
            fake.join(", "),
            match spec.mode {
                ToolMode::DryRun => {
                    "In dry_run mode the agent's recorded calls were kept, so what a model would \
                     have done differently is not measured: run the scenario with a live model \
                     in stubbed_tool mode to ask one."
                }
                ToolMode::StubbedTool => {
                    "The fake answer asks for no tool, so those steps make no call: a live \
                     model answers for real."
                }
            }
        ));
    }
    let stubbed: Vec<String> = replay
        .tools()
        .filter(|t| t.served == Served::Unrecorded)
        .map(|t| format!("{} ({})", t.tool, t.call_id))
        .collect();
    if !stubbed.is_empty() {
        notes.push(format!(
            "{} call(s) the recording never ran were stubbed: {}",
            stubbed.len(),
            stubbed.join(", ")
        ));
    }
    notes
}

fn item_side(t: &ItemTrace) -> ItemSide {
    ItemSide {
        status: t.status.clone(),
        tokens: t.tokens,
        why: t.why.clone(),
    }
}

fn tool_side(t: &ToolTrace) -> ToolSide {
    ToolSide {
        effect: t.effect.clone(),
        served: t.served,
        status: t.status.clone(),
        why: t.why.clone(),
    }
}

/// One step, baseline against replay.
pub fn compare_step(b: &StepTrace, r: &StepTrace) -> StepComparison {
    let mut items = Vec::new();
    for (cb, cr) in b.compiles.iter().zip(&r.compiles) {
        let before: BTreeMap<&str, &ItemTrace> =
            cb.items.iter().map(|i| (i.id.as_str(), i)).collect();
        let after: BTreeMap<&str, &ItemTrace> =
            cr.items.iter().map(|i| (i.id.as_str(), i)).collect();
        let ids: BTreeSet<&str> = before.keys().chain(after.keys()).copied().collect();
        for id in ids {
            let (x, y) = (before.get(id), after.get(id));
            let same = matches!((x, y), (Some(x), Some(y)) if x.status == y.status && x.tokens == y.tokens);
            if same {
                continue;
            }
            let kind = x.or(y).map_or(ItemKind::Doc, |t| t.kind);
            items.push(ItemChange {
                compile: cb.seq,
                id: id.to_string(),
                kind,
                baseline: x.map(|t| item_side(t)),
                replay: y.map(|t| item_side(t)),
            });
        }
    }
    let (ab, ar) = (allocation(b), allocation(r));
    let kinds: BTreeSet<ItemKind> = ab.keys().chain(ar.keys()).copied().collect();
    let allocation: Vec<Allocation> = kinds
        .into_iter()
        .map(|kind| Allocation {
            kind,
            baseline: ab.get(&kind).copied().unwrap_or(0),
            replay: ar.get(&kind).copied().unwrap_or(0),
        })
        .filter(|a| a.baseline > 0 || a.replay > 0)
        .collect();
    let answers: Vec<AnswerChange> = b
        .model_calls
        .iter()
        .zip(&r.model_calls)
        .filter(|(x, y)| x.answered != y.answered || x.content != y.content)
        .map(|(x, y)| AnswerChange {
            seq: x.seq,
            baseline: x.answered,
            replay: y.answered,
            diff: similar::TextDiff::from_lines(&x.content, &y.content)
                .unified_diff()
                .context_radius(2)
                .header("baseline", "replay")
                .to_string(),
        })
        .collect();
    let before: BTreeMap<&str, &ToolTrace> =
        b.tools.iter().map(|t| (t.call_id.as_str(), t)).collect();
    let after: BTreeMap<&str, &ToolTrace> =
        r.tools.iter().map(|t| (t.call_id.as_str(), t)).collect();
    let mut order: Vec<&ToolTrace> = b.tools.iter().collect();
    order.extend(
        r.tools
            .iter()
            .filter(|t| !before.contains_key(t.call_id.as_str())),
    );
    let tools: Vec<ToolChange> = order
        .into_iter()
        .filter_map(|t| {
            let (x, y) = (
                before.get(t.call_id.as_str()).map(|t| tool_side(t)),
                after.get(t.call_id.as_str()).map(|t| tool_side(t)),
            );
            (x != y).then(|| ToolChange {
                call_id: t.call_id.clone(),
                tool: t.tool.clone(),
                baseline: x,
                replay: y,
            })
        })
        .collect();
    let compiles_differ = b
        .compiles
        .iter()
        .zip(&r.compiles)
        .any(|(x, y)| x.hash != y.hash || x.error != y.error);
    StepComparison {
        step: b.step,
        name: b.name.clone(),
        changed: compiles_differ || !items.is_empty() || !answers.is_empty() || !tools.is_empty(),
        items,
        allocation,
        answers,
        tools,
    }
}

impl ReplayResult {
    /// A readable report: the verdict and metrics, then each step that changed.
    pub fn to_text(&self) -> String {
        use std::fmt::Write as _;
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{} {} on {}{}: {}",
            if self.id.is_empty() {
                "replay"
            } else {
                &self.id
            },
            self.scenario,
            self.run,
            self.step.map(|s| format!(" step {s}")).unwrap_or_default(),
            self.label.as_str().to_uppercase()
        );
        let mutations: Vec<String> = self.mutations.iter().map(ToString::to_string).collect();
        let _ = writeln!(
            out,
            "mutations: {}; tools {}, changed answers from the {} model",
            mutations.join("; "),
            serde_json::to_value(self.mode)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default(),
            match self.model {
                ModelSource::Recorded => "fake",
                ModelSource::Live => "live",
            }
        );
        let _ = writeln!(
            out,
            "\n{:<20} {:>12} {:>12} {:>12}  label",
            "metric", "baseline", "replay", "delta"
        );
        for m in &self.metrics {
            let _ = writeln!(
                out,
                "{:<20} {:>12} {:>12} {:>+12}  {:<7}  {}",
                m.metric.as_str(),
                m.baseline,
                m.replay,
                m.delta,
                m.label.as_str(),
                m.message
            );
        }
        let changed: Vec<&StepComparison> = self.steps.iter().filter(|s| s.changed).collect();
        let _ = writeln!(
            out,
            "\n{} of {} steps changed{}",
            changed.len(),
            self.steps.len(),
            self.first_change
                .map(|s| format!(", first at step {s}"))
                .unwrap_or_default()
        );
        for s in changed {
            let _ = writeln!(out, "\nstep {} {}", s.step, s.name);
            for i in &s.items {
                let side = |x: &Option<ItemSide>| {
                    x.as_ref().map_or("absent".to_string(), |x| {
                        format!("{} {}", x.status, x.tokens)
                    })
                };
                let why = i.replay.as_ref().map(|r| r.why.as_str()).unwrap_or("");
                let _ = writeln!(
                    out,
                    "  item {:<32} {} -> {}  ({why})",
                    i.id,
                    side(&i.baseline),
                    side(&i.replay)
                );
            }
            let tokens: Vec<String> = s
                .allocation
                .iter()
                .filter(|a| a.baseline != a.replay)
                .map(|a| format!("{} {} -> {}", a.kind, a.baseline, a.replay))
                .collect();
            if !tokens.is_empty() {
                let _ = writeln!(out, "  tokens: {}", tokens.join(", "));
            }
            for a in &s.answers {
                let _ = writeln!(
                    out,
                    "  answer at event {}: {:?} -> {:?}",
                    a.seq, a.baseline, a.replay
                );
            }
            for t in &s.tools {
                let side = |x: &Option<ToolSide>| {
                    x.as_ref().map_or("not made".to_string(), |x| {
                        format!(
                            "{} {:?}{}",
                            x.effect,
                            x.served,
                            x.status
                                .as_ref()
                                .map(|s| format!(" {s}"))
                                .unwrap_or_default()
                        )
                    })
                };
                let _ = writeln!(
                    out,
                    "  call {} {}: {} -> {}",
                    t.call_id,
                    t.tool,
                    side(&t.baseline),
                    side(&t.replay)
                );
            }
        }
        for n in &self.notes {
            let _ = writeln!(out, "\nnote: {n}");
        }
        out
    }
}
