//! A replay as the draft of a regression case: where it came from (result, scenario, run,
//! step, mutations), what it showed (label, first change), and assertions — structural
//! (steps that held), behavioural (the tool path) and policy (each call whose decision the
//! mutations changed) — in the shared `AssertionSpec` form, judged on the replay's
//! [`super::metrics::subject`]. Each assertion holds on the replay it was drafted from;
//! the regression module (issue 15) turns drafts into versioned cases.

use serde::{Deserialize, Serialize};

use super::metrics::{Label, subject};
use super::result::ReplayResult;
use super::scenario::{ModelSource, Mutation, ToolMode};
use crate::evaluators::{AssertionSpec, ToolPathMode};

/// The most policy assertions a draft carries.
const MAX_DECISIONS: usize = 20;

/// Where a draft came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DraftSource {
    /// The result.
    pub replay: String,
    /// Its scenario.
    pub scenario: String,
    /// The run.
    pub run: String,
    /// The step, when anchored to one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<u32>,
}

/// What the replay showed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DraftExpectation {
    /// Its label against the baseline.
    pub label: Label,
    /// The first step that changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_change: Option<u32>,
}

/// A regression case drafted from a replay.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RegressionDraft {
    /// A name: the scenario's, else its mutations.
    pub name: String,
    /// Where it came from.
    pub source: DraftSource,
    /// The mutations that make the case.
    pub mutations: Vec<Mutation>,
    /// How tools were served.
    pub mode: ToolMode,
    /// Who answered changed calls.
    pub model: ModelSource,
    /// What the replay showed.
    pub expect: DraftExpectation,
    /// Assertions on the replay's outcome.
    pub assertions: Vec<AssertionSpec>,
}

/// The draft of a regression case from `r`.
pub fn regression_draft(r: &ReplayResult) -> RegressionDraft {
    let replayed = subject(&r.replay);
    let baseline = subject(&r.baseline);
    let mut assertions = vec![
        AssertionSpec::JsonPathEquals {
            path: "$.intact_steps".into(),
            value: replayed.output["intact_steps"].clone(),
        },
        AssertionSpec::ToolPath {
            expected: replayed.tool_path.clone(),
            mode: ToolPathMode::Exact,
        },
    ];
    let empty = Vec::new();
    let now = replayed.output["calls"].as_array().unwrap_or(&empty);
    let was = baseline.output["calls"].as_array().unwrap_or(&empty);
    for (i, call) in now.iter().enumerate() {
        let before = was.iter().find(|c| c["call"] == call["call"]);
        if before.is_some_and(|b| b["effect"] == call["effect"]) {
            continue;
        }
        assertions.push(AssertionSpec::JsonPathEquals {
            path: format!("$.calls[{i}].effect"),
            value: call["effect"].clone(),
        });
        if assertions.len() >= 2 + MAX_DECISIONS {
            break;
        }
    }
    let name = r.name.clone().unwrap_or_else(|| {
        r.mutations
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("; ")
    });
    RegressionDraft {
        name,
        source: DraftSource {
            replay: r.id.clone(),
            scenario: r.scenario.clone(),
            run: r.run.clone(),
            step: r.step,
        },
        mutations: r.mutations.clone(),
        mode: r.mode,
        model: r.model,
        expect: DraftExpectation {
            label: r.label,
            first_change: r.first_change,
        },
        assertions,
    }
}

/// The draft as YAML, headed by a comment saying what it is.
pub fn draft_yaml(d: &RegressionDraft) -> String {
    let body = serde_yaml::to_string(d).unwrap_or_else(|e| format!("# cannot encode: {e}\n"));
    format!(
        "# A regression case drafted from replay {} of run {}.\n# Each assertion holds on that replay; commit it to keep the behaviour.\n{body}",
        d.source.replay, d.source.run
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use crate::replay::result::execute;
    use crate::replay::scenario::ScenarioSpec;

    #[test]
    fn a_draft_holds_on_its_replay_and_tells_it_from_the_baseline() {
        let path = format!(
            "{}/../fixtures/runs/03-flaky-webhook-retry.json",
            env!("CARGO_MANIFEST_DIR")
        );
        let file = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let spec = ScenarioSpec {
            run: "run-flaky-webhook-retry".into(),
            step: None,
            name: None,
            mutations: vec![Mutation::DisableRule {
                rule: "coding-agent/read-only".into(),
            }],
            mode: ToolMode::DryRun,
            model: ModelSource::Recorded,
            metrics: Vec::new(),
            rubric: Vec::new(),
        };
        let r = execute(&file, &spec, None, None).unwrap();
        let draft = regression_draft(&r);
        assert!(draft.assertions.len() > 2, "policy assertions: {draft:?}");
        let (on_replay, on_baseline) = (subject(&r.replay), subject(&r.baseline));
        let mut failed_on_baseline = 0;
        for a in &draft.assertions {
            let judge = a.build().unwrap();
            let outcome = judge.evaluate(&on_replay);
            assert!(outcome.passed, "{a:?}: {}", outcome.message);
            if !judge.evaluate(&on_baseline).passed {
                failed_on_baseline += 1;
            }
        }
        assert!(
            failed_on_baseline >= 3,
            "the case tells the replay from the baseline"
        );
        // It reads back as it was written.
        let yaml = draft_yaml(&draft);
        assert!(yaml.starts_with("# A regression case drafted from replay"));
        let back: RegressionDraft = serde_yaml::from_str(&yaml).unwrap();
        assert_eq!(back, draft);
    }
}
