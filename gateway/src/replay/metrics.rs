//! Outcome metrics: each is an [`Evaluator`] (the interface regression assertions share)
//! judging a trajectory's [`EvalSubject`], built against the baseline where it compares with
//! it; baseline and replay are both evaluated, and the difference labels the replay.
//!
//! | metric | value | better |
//! |---|---|---|
//! | `structural_success` | share of steps that held together (compiled, answered, every call run with an `ok` result) | higher |
//! | `tool_path` | longest common subsequence of the calls run, over the longer path (1 = the baseline's path) | higher |
//! | `latency` | modelled milliseconds (recorded durations; a changed answer scaled by its prompt) | lower |
//! | `cost` | tokens: compiled prompts plus completions | lower |
//! | `diff_quality` | F1 of the write calls run (tools named `*write*`, `*edit*`, `*patch*`, `*commit*`) against the baseline's, by tool and arguments | higher |
//! | `rubric` | share of the scenario's assertions the outcome passes | higher |
//!
//! A metric is a **win** or a **loss** when it moved the better or the worse way by more than
//! its tolerance (1% of the baseline for `latency` and `cost`, nothing for the shares), else
//! **neutral**. The replay is a loss when any selected metric lost, else a win when any won,
//! else neutral: a regression anywhere is not hidden by a gain elsewhere.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::counterfactual::{Served, Trajectory};
use super::scenario::OutcomeMetric;
use crate::evaluators::{
    AssertionSpec, EvalOutcome, EvalSubject, Evaluator, EvaluatorError, Judge,
};

/// A replay's verdict, against the baseline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Label {
    /// Better on some selected metric, worse on none.
    Win,
    /// Worse on some selected metric.
    Loss,
    /// No selected metric moved.
    Neutral,
}

impl Label {
    /// `win`, `loss`, `neutral`.
    pub fn as_str(self) -> &'static str {
        match self {
            Label::Win => "win",
            Label::Loss => "loss",
            Label::Neutral => "neutral",
        }
    }
}

/// One metric, baseline and replay.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricDelta {
    /// The metric.
    pub metric: OutcomeMetric,
    /// Its value on the baseline.
    pub baseline: f64,
    /// Its value on the replay.
    pub replay: f64,
    /// `replay - baseline`.
    pub delta: f64,
    /// Which way it moved.
    pub label: Label,
    /// The evaluator's account of the replay.
    pub message: String,
}

/// Tool names that change something, for `diff_quality`.
const WRITE_WORDS: [&str; 4] = ["write", "edit", "patch", "commit"];

/// The subject metrics and regression assertions judge: the final output as text, the calls
/// run as the tool path, and the figures as `output` (`steps`, `intact_steps`, `tokens`,
/// `latency_ms`, `writes`, `answers`, `output`; `calls`: each tool call's step, id, tool,
/// decision, how it was served and its status; `compiles`: each compile's step, tokens,
/// budget, items included, summarised and blocked by policy, and whether it failed;
/// `blocked` and `redacted`: the items policy excluded or redacted in any compile;
/// `budget_excluded`: the items some compile left out for want of room).
pub fn subject(t: &Trajectory) -> EvalSubject {
    let steps = t.steps.len();
    let intact = t.steps.iter().filter(|s| s.intact()).count();
    let tokens: u64 = t
        .model_calls()
        .map(|m| u64::from(m.prompt_tokens) + u64::from(m.completion_tokens))
        .sum();
    let latency: f64 = t.model_calls().map(|m| m.latency_ms).sum::<f64>()
        + t.tools().map(|c| c.latency_ms).sum::<f64>();
    let writes: Vec<String> = t
        .tools()
        .filter(|c| c.ran() && WRITE_WORDS.iter().any(|w| c.tool.contains(w)))
        .map(|c| {
            let stub = if c.served == Served::Unrecorded {
                " (unrecorded)"
            } else {
                ""
            };
            format!(
                "{}{stub} {}",
                c.tool,
                tollgate_rules::canonical::canonical_json(&c.arguments)
            )
        })
        .collect();
    let mut answers: BTreeMap<String, u64> = BTreeMap::new();
    for m in t.model_calls() {
        let key = serde_json::to_value(m.answered)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        *answers.entry(key).or_default() += 1;
    }
    let calls: Vec<Value> = t
        .steps
        .iter()
        .flat_map(|s| s.tools.iter().map(move |c| (s.step, c)))
        .map(|(step, c)| {
            json!({
                "step": step,
                "call": c.call_id,
                "tool": c.tool,
                "effect": c.effect,
                "served": c.served,
                "status": c.status,
            })
        })
        .collect();
    let mut compiles = Vec::new();
    let (mut blocked, mut redacted, mut crowded) =
        (BTreeSet::new(), BTreeSet::new(), BTreeSet::new());
    for (step, c) in t
        .steps
        .iter()
        .flat_map(|s| s.compiles.iter().map(move |c| (s.step, c)))
    {
        let with = |status: &str| -> Vec<&str> {
            c.items
                .iter()
                .filter(|i| i.status == status)
                .map(|i| i.id.as_str())
                .collect()
        };
        // Excluded by a policy rule (not for want of room).
        let denied: Vec<&str> = c
            .items
            .iter()
            .filter(|i| i.status == "excluded" && i.by_policy)
            .map(|i| i.id.as_str())
            .collect();
        blocked.extend(denied.iter().map(|s| s.to_string()));
        // Excluded for want of room: no rule decided it.
        crowded.extend(
            c.items
                .iter()
                .filter(|i| i.status == "excluded" && !i.by_policy)
                .map(|i| i.id.clone()),
        );
        redacted.extend(with("redacted").iter().map(|s| s.to_string()));
        compiles.push(json!({
            "step": step,
            "tokens": c.tokens,
            "budget": c.budget,
            "included": with("included").len() + with("redacted").len() + with("summarised").len(),
            "summarised": with("summarised"),
            "blocked": denied,
            "failed": c.error.is_some(),
        }));
    }
    EvalSubject {
        output: json!({
            "compiles": compiles,
            "blocked": blocked,
            "redacted": redacted,
            "budget_excluded": crowded,
            "calls": calls,
            "steps": steps,
            "intact_steps": intact,
            "tokens": tokens,
            "latency_ms": latency.round(),
            "writes": writes,
            "answers": answers,
            "output": t.output,
        }),
        text: t.output.clone(),
        tool_path: t.tool_path(),
    }
}

fn number(subject: &EvalSubject, key: &str) -> f64 {
    subject
        .output
        .get(key)
        .and_then(Value::as_f64)
        .unwrap_or(0.0)
}

fn strings(subject: &EvalSubject, key: &str) -> Vec<String> {
    subject
        .output
        .get(key)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// `structural_success`.
struct Structural;

impl Evaluator for Structural {
    fn name(&self) -> &str {
        "structural_success"
    }

    fn evaluate(&self, s: &EvalSubject) -> EvalOutcome {
        let (steps, intact) = (number(s, "steps"), number(s, "intact_steps"));
        let share = if steps == 0.0 { 1.0 } else { intact / steps };
        EvalOutcome::measured(
            self.name(),
            share,
            share,
            format!("{intact} of {steps} steps held together"),
        )
    }
}

/// `tool_path`: agreement with the baseline's path.
struct ToolPathAgreement {
    baseline: Vec<String>,
}

impl Evaluator for ToolPathAgreement {
    fn name(&self) -> &str {
        "tool_path"
    }

    fn evaluate(&self, s: &EvalSubject) -> EvalOutcome {
        let common = lcs(&self.baseline, &s.tool_path);
        let longer = self.baseline.len().max(s.tool_path.len());
        let share = if longer == 0 {
            1.0
        } else {
            common as f64 / longer as f64
        };
        let first = self
            .baseline
            .iter()
            .zip(&s.tool_path)
            .position(|(a, b)| a != b)
            .or_else(|| {
                (self.baseline.len() != s.tool_path.len())
                    .then(|| self.baseline.len().min(s.tool_path.len()))
            });
        let message = match first {
            None => format!("the same {} calls", s.tool_path.len()),
            Some(i) => format!(
                "{common} of {longer} calls in common; first difference at call {}: baseline {}, replay {}",
                i + 1,
                self.baseline.get(i).map_or("nothing", String::as_str),
                s.tool_path.get(i).map_or("nothing", String::as_str),
            ),
        };
        EvalOutcome::measured(self.name(), share, share, message)
    }
}

/// Length of the longest common subsequence.
fn lcs(a: &[String], b: &[String]) -> usize {
    let mut row = vec![0usize; b.len() + 1];
    for x in a {
        let mut diagonal = 0;
        for (j, y) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = if x == y {
                diagonal + 1
            } else {
                above.max(row[j])
            };
            diagonal = above;
        }
    }
    row[b.len()]
}

/// `latency` or `cost`: a quantity where less is better, scored against the baseline's.
struct LessIsBetter {
    name: &'static str,
    key: &'static str,
    unit: &'static str,
    baseline: f64,
}

impl Evaluator for LessIsBetter {
    fn name(&self) -> &str {
        self.name
    }

    fn evaluate(&self, s: &EvalSubject) -> EvalOutcome {
        let value = number(s, self.key);
        let score = if value <= self.baseline || value == 0.0 {
            1.0
        } else {
            self.baseline / value
        };
        EvalOutcome::measured(
            self.name,
            score,
            value,
            format!("{value:.0} {} (baseline {:.0})", self.unit, self.baseline),
        )
    }
}

/// `diff_quality`: F1 of the write calls against the baseline's.
struct DiffQuality {
    baseline: Vec<String>,
}

impl Evaluator for DiffQuality {
    fn name(&self) -> &str {
        "diff_quality"
    }

    fn evaluate(&self, s: &EvalSubject) -> EvalOutcome {
        let writes = strings(s, "writes");
        let mut left: BTreeMap<&str, usize> = BTreeMap::new();
        for w in &self.baseline {
            *left.entry(w.as_str()).or_default() += 1;
        }
        let mut common = 0usize;
        for w in &writes {
            if let Some(n) = left.get_mut(w.as_str())
                && *n > 0
            {
                *n -= 1;
                common += 1;
            }
        }
        let (b, r) = (self.baseline.len(), writes.len());
        let f1 = if b + r == 0 {
            1.0
        } else {
            2.0 * common as f64 / (b + r) as f64
        };
        EvalOutcome::measured(
            self.name(),
            f1,
            f1,
            format!("{common} of the baseline's {b} writes made, {r} writes in all"),
        )
    }
}

/// `rubric`: the scenario's assertions, as a share passed.
struct Rubric {
    assertions: Vec<Box<dyn Evaluator>>,
}

impl Evaluator for Rubric {
    fn name(&self) -> &str {
        "rubric"
    }

    fn evaluate(&self, s: &EvalSubject) -> EvalOutcome {
        if self.assertions.is_empty() {
            return EvalOutcome::measured(self.name(), 1.0, 1.0, "no assertions");
        }
        let outcomes: Vec<EvalOutcome> = self.assertions.iter().map(|a| a.evaluate(s)).collect();
        let passed = outcomes.iter().filter(|o| o.passed).count();
        let share = passed as f64 / outcomes.len() as f64;
        let failed: Vec<String> = outcomes
            .iter()
            .filter(|o| !o.passed)
            .map(|o| format!("{}: {}", o.evaluator, o.message))
            .collect();
        let message = if failed.is_empty() {
            format!("all {} assertions pass", outcomes.len())
        } else {
            format!("{passed} of {} pass; {}", outcomes.len(), failed.join("; "))
        };
        EvalOutcome::measured(self.name(), share, share, message)
    }
}

/// The evaluator of `metric`, built against the baseline's subject.
pub fn evaluator(
    metric: OutcomeMetric,
    baseline: &EvalSubject,
    rubric: &[AssertionSpec],
    judge: Option<&Judge>,
) -> Result<Box<dyn Evaluator>, EvaluatorError> {
    Ok(match metric {
        OutcomeMetric::StructuralSuccess => Box::new(Structural),
        OutcomeMetric::ToolPath => Box::new(ToolPathAgreement {
            baseline: baseline.tool_path.clone(),
        }),
        OutcomeMetric::Latency => Box::new(LessIsBetter {
            name: "latency",
            key: "latency_ms",
            unit: "ms",
            baseline: number(baseline, "latency_ms"),
        }),
        OutcomeMetric::Cost => Box::new(LessIsBetter {
            name: "cost",
            key: "tokens",
            unit: "tokens",
            baseline: number(baseline, "tokens"),
        }),
        OutcomeMetric::DiffQuality => Box::new(DiffQuality {
            baseline: strings(baseline, "writes"),
        }),
        OutcomeMetric::Rubric => Box::new(Rubric {
            assertions: rubric
                .iter()
                .map(|a| a.build_with(judge))
                .collect::<Result<_, _>>()?,
        }),
    })
}

fn lower_is_better(metric: OutcomeMetric) -> bool {
    matches!(metric, OutcomeMetric::Latency | OutcomeMetric::Cost)
}

/// Each selected metric on both subjects, and the replay's label.
pub fn compare(
    baseline: &EvalSubject,
    replay: &EvalSubject,
    metrics: &[OutcomeMetric],
    rubric: &[AssertionSpec],
    judge: Option<&Judge>,
) -> Result<(Label, Vec<MetricDelta>), EvaluatorError> {
    let mut deltas = Vec::with_capacity(metrics.len());
    for &metric in metrics {
        let metric_judge = evaluator(metric, baseline, rubric, judge)?;
        let before = metric_judge.evaluate(baseline);
        let after = metric_judge.evaluate(replay);
        let (b, r) = (before.value.unwrap_or(0.0), after.value.unwrap_or(0.0));
        let delta = r - b;
        let tolerance = if lower_is_better(metric) {
            b.abs() * 0.01
        } else {
            1e-9
        };
        let label = if delta.abs() <= tolerance {
            Label::Neutral
        } else if (delta < 0.0) == lower_is_better(metric) {
            Label::Win
        } else {
            Label::Loss
        };
        deltas.push(MetricDelta {
            metric,
            baseline: round(b),
            replay: round(r),
            delta: round(delta),
            label,
            message: after.message,
        });
    }
    let label = if deltas.iter().any(|d| d.label == Label::Loss) {
        Label::Loss
    } else if deltas.iter().any(|d| d.label == Label::Win) {
        Label::Win
    } else {
        Label::Neutral
    };
    Ok((label, deltas))
}

/// Rounded to 4 decimals, so figures print and compare stably.
fn round(x: f64) -> f64 {
    (x * 10_000.0).round() / 10_000.0
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    fn path(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_longest_common_subsequence_is_counted() {
        assert_eq!(
            lcs(&path(&["a", "b", "c", "d"]), &path(&["a", "c", "d"])),
            3
        );
        assert_eq!(lcs(&path(&["a", "b"]), &path(&["b", "a"])), 1);
        assert_eq!(lcs(&path(&[]), &path(&["a"])), 0);
    }

    #[test]
    fn a_loss_anywhere_makes_the_replay_a_loss_and_small_cost_changes_are_neutral() {
        let base = EvalSubject {
            output: json!({"steps": 4, "intact_steps": 4, "tokens": 10_000, "latency_ms": 100.0, "writes": []}),
            tool_path: path(&["a", "b"]),
            ..EvalSubject::default()
        };
        let cheaper_but_broken = EvalSubject {
            output: json!({"steps": 4, "intact_steps": 3, "tokens": 5_000, "latency_ms": 100.0, "writes": []}),
            tool_path: path(&["a", "b"]),
            ..EvalSubject::default()
        };
        let metrics = [
            OutcomeMetric::StructuralSuccess,
            OutcomeMetric::ToolPath,
            OutcomeMetric::Cost,
        ];
        let (label, deltas) = compare(&base, &cheaper_but_broken, &metrics, &[], None).unwrap();
        assert_eq!(label, Label::Loss);
        assert_eq!(deltas[0].label, Label::Loss);
        assert_eq!(deltas[2].label, Label::Win);
        assert_eq!(deltas[2].delta, -5_000.0);

        let barely = EvalSubject {
            output: json!({"steps": 4, "intact_steps": 4, "tokens": 9_950, "latency_ms": 100.0, "writes": []}),
            tool_path: path(&["a", "b"]),
            ..EvalSubject::default()
        };
        let (label, _) = compare(&base, &barely, &metrics, &[], None).unwrap();
        assert_eq!(
            label,
            Label::Neutral,
            "0.5% fewer tokens is within tolerance"
        );
        let (label, _) = compare(&base, &base, &OutcomeMetric::ALL, &[], None).unwrap();
        assert_eq!(label, Label::Neutral, "the baseline against itself");
    }

    #[test]
    fn diff_quality_is_the_f1_of_the_writes() {
        let base = EvalSubject {
            output: json!({"writes": ["fs.write {\"path\":\"a\"}", "fs.write {\"path\":\"b\"}"]}),
            ..EvalSubject::default()
        };
        let half = EvalSubject {
            output: json!({"writes": ["fs.write {\"path\":\"a\"}"]}),
            ..EvalSubject::default()
        };
        let judge = evaluator(OutcomeMetric::DiffQuality, &base, &[], None).unwrap();
        let outcome = judge.evaluate(&half);
        assert!(
            (outcome.value.unwrap() - 2.0 / 3.0).abs() < 1e-9,
            "{outcome:?}"
        );
        assert!(!outcome.passed);
        assert!(judge.evaluate(&base).passed);
    }

    /// A rubric's `llm_judge` assertion is judged by the judge the replay is given, and a
    /// replay without one says the judge is off instead of scoring.
    #[test]
    fn a_rubric_with_an_llm_judge_needs_the_judge_on() {
        use crate::providers::FakeProvider;
        let rubric: Vec<AssertionSpec> = vec![
            serde_json::from_value(json!({"kind": "llm_judge", "rubric": "The fix is right."}))
                .unwrap(),
        ];
        let base = EvalSubject::from_text("fixed");
        let off = compare(&base, &base, &[OutcomeMetric::Rubric], &rubric, None).unwrap_err();
        assert_eq!(off, EvaluatorError::JudgeOff);
        let judge = Judge::new(std::sync::Arc::new(FakeProvider::new()), "judge-model");
        let (label, deltas) = compare(
            &base,
            &base,
            &[OutcomeMetric::Rubric],
            &rubric,
            Some(&judge),
        )
        .unwrap();
        // The fake provider gives no verdict: both sides fail alike.
        assert_eq!(label, Label::Neutral);
        assert_eq!(deltas.len(), 1);
    }
}
