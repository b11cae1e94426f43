//! The counterfactual executor on the fixture runs: the baseline reproduces each recording,
//! every mutation kind reruns the recorded failure, bad scenarios are refused with what exists.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use crate::providers::{ChatRequest, ProviderError, Usage};
use crate::replay::metrics::Label;
use crate::replay::result::{Baseline, execute};
use crate::replay::scenario::{OutcomeMetric, ScenarioSpec, check};

fn fixture(name: &str) -> RunFile {
    let path = format!(
        "{}/../fixtures/runs/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

const FLAKY: &str = "03-flaky-webhook-retry";
const FORBIDDEN: &str = "04-forbidden-tool-pool-exhaustion";

fn spec(file: &RunFile, mutations: Vec<Mutation>) -> ScenarioSpec {
    ScenarioSpec {
        run: file.run.id.clone(),
        step: None,
        name: None,
        mutations,
        mode: ToolMode::DryRun,
        model: ModelSource::Recorded,
        metrics: Vec::new(),
        rubric: Vec::new(),
    }
}

#[test]
fn the_baseline_of_every_fixture_run_is_its_recording() {
    for name in [
        "01-bugfix-users-404",
        "02-feature-users-pagination",
        FLAKY,
        FORBIDDEN,
        "05-planner-executor-rate-limit",
    ] {
        let file = fixture(name);
        let baseline = Baseline::new(&file, None).unwrap();
        let t = baseline.trajectory();
        assert_eq!(t.steps.len(), file.steps.len(), "{name}");
        assert!(
            t.model_calls().all(|m| m.answered == Answered::Recorded),
            "{name}"
        );
        // Every recorded call with a result is served it; the others are not run.
        let results = file
            .events
            .iter()
            .filter(|e| e.kind == "tool_result")
            .count();
        let served = t.tools().filter(|c| c.served == Served::Recorded).count();
        assert_eq!(served, results, "{name}");
        assert!(t.tools().all(|c| c.served != Served::Unrecorded), "{name}");
        assert!(t.output.is_some(), "{name}");
    }
}

#[test]
fn a_mutation_that_changes_nothing_is_neutral_and_the_same_inputs_give_the_same_result() {
    let file = fixture(FLAKY);
    let same_budget = file
        .events
        .iter()
        .find_map(|e| e.read::<crate::recorder::events::CompileEvent>())
        .unwrap()
        .settings
        .budget;
    let s = spec(
        &file,
        vec![Mutation::ChangeBudget {
            item_kind: None,
            budget: same_budget,
        }],
    );
    let r = execute(&file, &s, None, None).unwrap();
    assert_eq!(r.label, Label::Neutral, "{:?}", r.metrics);
    assert_eq!(r.first_change, None);
    assert!(r.steps.iter().all(|s| !s.changed));
    assert_eq!(execute(&file, &s, None, None).unwrap(), r, "deterministic");
}

#[test]
fn a_recorded_failure_reruns_under_seven_mutation_kinds_without_editing_a_payload() {
    let file = fixture(FLAKY);
    let before = serde_json::to_string(&file).unwrap();
    let baseline = Baseline::new(&file, None).unwrap();
    let cases = [
        Mutation::DropItem {
            item: "doc-agent-guidelines".into(),
        },
        Mutation::ChangeWeight {
            item: "mem-procedure-db-tests".into(),
            weight: 50.0,
        },
        Mutation::ChangeBudget {
            item_kind: None,
            budget: 500,
        },
        Mutation::SwapSummary {
            item: "doc-webhooks".into(),
            to: crate::replay::scenario::SummaryForm::Summary,
        },
        Mutation::DisableRule {
            rule: "coding-agent/read-only".into(),
        },
        Mutation::DisableMemoryClass {
            class: crate::memory::MemoryClass::Procedure,
        },
        Mutation::DropRetrievalDoc {
            item: "doc-ticket-T-127".into(),
        },
    ];
    // A weight matters when not everything fits: with a small budget, the heaviest win.
    let small = Mutation::ChangeBudget {
        item_kind: None,
        budget: 500,
    };
    let squeezed = baseline
        .run(&spec(&file, vec![small.clone()]), None, None)
        .unwrap();
    for m in cases {
        let mutations = match &m {
            Mutation::ChangeWeight { .. } => vec![small.clone(), m.clone()],
            _ => vec![m.clone()],
        };
        let r = baseline.run(&spec(&file, mutations), None, None).unwrap();
        assert_eq!(
            r.first_change,
            Some(0),
            "{m}: every mutation reaches step 0"
        );
        let changed = r.steps.iter().find(|s| s.changed).unwrap();
        match &m {
            Mutation::DisableRule { .. } => {
                // Without `read-only`, reads fall to the default deny: the calls do not run.
                let denied = changed
                    .tools
                    .iter()
                    .find(|t| t.tool == "fs.read_file")
                    .unwrap();
                assert_eq!(denied.baseline.as_ref().unwrap().effect, "allow");
                assert_eq!(denied.replay.as_ref().unwrap().effect, "deny");
                assert_eq!(denied.replay.as_ref().unwrap().served, Served::NotRun);
                assert_eq!(r.label, Label::Loss, "{:?}", r.metrics);
                let structural = &r.metrics[0];
                assert_eq!(structural.metric, OutcomeMetric::StructuralSuccess);
                assert!(structural.delta < 0.0);
            }
            Mutation::ChangeBudget { .. } => {
                let cost = r
                    .metrics
                    .iter()
                    .find(|d| d.metric == OutcomeMetric::Cost)
                    .unwrap();
                assert!(cost.delta < 0.0, "a smaller budget costs less: {cost:?}");
                assert!(
                    changed
                        .items
                        .iter()
                        .any(|i| i.replay.as_ref().unwrap().status != "included"),
                    "some item no longer fits"
                );
            }
            Mutation::DropItem { item } | Mutation::DropRetrievalDoc { item } => {
                let gone = changed.items.iter().find(|i| i.id == *item).unwrap();
                assert_eq!(gone.replay.as_ref().unwrap().status, "dropped");
            }
            Mutation::DisableMemoryClass { .. } => {
                let gone = changed
                    .items
                    .iter()
                    .find(|i| i.id == "mem-procedure-db-tests")
                    .unwrap();
                assert_eq!(gone.replay.as_ref().unwrap().status, "dropped");
                assert!(
                    changed
                        .items
                        .iter()
                        .all(|i| i.id != "mem-preference-no-new-crates"),
                    "a preference is not a procedure"
                );
            }
            Mutation::SwapSummary { .. } => {
                let swapped = changed
                    .items
                    .iter()
                    .find(|i| i.id == "doc-webhooks")
                    .unwrap();
                assert!(
                    swapped.replay.as_ref().unwrap().tokens
                        < swapped.baseline.as_ref().unwrap().tokens
                );
            }
            Mutation::ChangeWeight { item, .. } => {
                let status = |r: &crate::replay::result::ReplayResult| {
                    r.replay.steps[0].compiles[0]
                        .items
                        .iter()
                        .find(|i| i.id == *item)
                        .unwrap()
                        .status
                        .clone()
                };
                assert_eq!(status(&squeezed), "excluded");
                assert_ne!(status(&r), "excluded", "heavier, it wins a place");
            }
        }
        if !matches!(m, Mutation::DisableRule { .. }) {
            // A context change: the model saw something else, the fake provider answered, and
            // the recorded calls were kept (dry run), so the tool path is the baseline's.
            assert!(!changed.answers.is_empty(), "{m}");
            assert_eq!(changed.answers[0].replay, Answered::Fake);
            assert!(changed.answers[0].diff.contains("+[fake"), "{m}");
            let path = r
                .metrics
                .iter()
                .find(|d| d.metric == OutcomeMetric::ToolPath)
                .unwrap();
            assert_eq!(path.delta, 0.0, "{m}");
            assert!(r.notes.iter().any(|n| n.contains("fake provider")), "{m}");
        }
    }
    assert_eq!(
        serde_json::to_string(&file).unwrap(),
        before,
        "the run is untouched"
    );
}

#[test]
fn a_scenario_naming_what_the_run_lacks_is_refused_with_what_exists() {
    let file = fixture(FLAKY);
    let refused = |m: Mutation| check(&spec(&file, vec![m]), &file).unwrap_err().message;
    let e = refused(Mutation::DropItem {
        item: "doc-nothing".into(),
    });
    assert!(
        e.contains("`doc-nothing`") && e.contains("`doc-webhooks`"),
        "{e}"
    );
    let e = refused(Mutation::DisableRule {
        rule: "default-deny".into(),
    });
    assert!(
        e.contains("cannot be disabled") && e.contains("`coding-agent/read-only`"),
        "{e}"
    );
    let e = refused(Mutation::DisableMemoryClass {
        class: crate::memory::MemoryClass::Warning,
    });
    assert!(e.contains("`procedure`, `preference`"), "{e}");
    let e = refused(Mutation::SwapSummary {
        item: "mem-procedure-db-tests".into(),
        to: crate::replay::scenario::SummaryForm::Raw,
    });
    assert!(
        e.contains("no summary") && e.contains("`doc-webhooks`"),
        "{e}"
    );
    let e = refused(Mutation::DropRetrievalDoc {
        item: "mem-procedure-db-tests".into(),
    });
    assert!(e.contains("not a retrieved doc"), "{e}");
    let e = refused(Mutation::ChangeWeight {
        item: "doc-webhooks".into(),
        weight: f64::NAN,
    });
    assert!(e.contains("finite"), "{e}");
    let mut anchored = spec(
        &file,
        vec![Mutation::ChangeBudget {
            item_kind: None,
            budget: 10,
        }],
    );
    anchored.step = Some(99);
    let e = check(&anchored, &file).unwrap_err().message;
    assert!(e.contains("no step 99") && e.contains("0 to 23"), "{e}");
    let e = check(&spec(&file, vec![]), &file).unwrap_err().message;
    assert!(e.contains("at least one mutation"), "{e}");
}

#[test]
fn a_step_anchored_scenario_covers_that_step_alone() {
    let file = fixture(FLAKY);
    let mut s = spec(
        &file,
        vec![Mutation::DisableRule {
            rule: "coding-agent/read-only".into(),
        }],
    );
    s.step = Some(1);
    let r = execute(&file, &s, None, None).unwrap();
    assert_eq!(r.steps.len(), 1);
    assert_eq!(r.steps[0].step, 1);
    assert_eq!(r.first_change, Some(1));
}

/// A model that always asks for the same call.
struct Asks(&'static str);

impl Provider for Asks {
    fn name(&self) -> &str {
        "asks"
    }

    fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, ProviderError> {
        Ok(ChatResponse {
            id: "live-1".into(),
            model: request.model.clone(),
            content: format!("Looking again.\nAction: {}", self.0),
            finish_reason: "stop".into(),
            usage: Usage {
                prompt_tokens: 10,
                completion_tokens: 5,
            },
            tool_calls: Vec::new(),
        })
    }
}

#[test]
fn stubbed_tool_mode_makes_the_calls_a_live_answer_asks_for_and_stubs_unrecorded_ones() {
    let file = fixture(FLAKY);
    let mut s = spec(
        &file,
        vec![Mutation::DropItem {
            item: "doc-agent-guidelines".into(),
        }],
    );
    s.mode = ToolMode::StubbedTool;
    s.model = ModelSource::Live;
    s.step = Some(1);
    // A call the recording made (step 0 read webhooks.rs): served from the recording.
    let again = Asks(r#"fs.read_file {"path": "src/routes/webhooks.rs"}"#);
    let r = execute(&file, &s, Some(&again), None).unwrap();
    let tools = &r.replay.steps[0].tools;
    assert_eq!(tools.len(), 1, "{tools:?}");
    assert_eq!(tools[0].served, Served::Recorded);
    assert_eq!(r.replay.steps[0].model_calls[0].answered, Answered::Live);
    // A call it never made: an explicit stub, a tool-path divergence.
    let other = Asks(r#"fs.read_file {"path": "src/lib.rs"}"#);
    let r = execute(&file, &s, Some(&other), None).unwrap();
    let tools = &r.replay.steps[0].tools;
    assert_eq!(tools[0].served, Served::Unrecorded);
    assert_eq!(tools[0].status.as_deref(), Some("unrecorded"));
    let path = r
        .metrics
        .iter()
        .find(|d| d.metric == OutcomeMetric::ToolPath)
        .unwrap();
    assert!(path.delta < 0.0, "{path:?}");
    assert!(r.notes.iter().any(|n| n.contains("stubbed")));
    // Live without a provider fails the call, it does not fall back.
    let r = execute(&file, &s, None, None).unwrap();
    assert_eq!(r.replay.steps[0].model_calls[0].answered, Answered::Failed);
}

#[test]
fn answers_ask_for_tools_by_openai_tool_calls_and_action_lines() {
    let response = ChatResponse {
        id: "x".into(),
        model: "m".into(),
        content: "Thinking.\nAction: fs.read_file {\"path\": \"a.rs\"}\n  Action: fs.list\n".into(),
        finish_reason: "stop".into(),
        usage: Usage::default(),
        tool_calls: vec![crate::providers::ToolCall {
            id: "c1".into(),
            kind: "function".into(),
            function: crate::providers::FunctionCall {
                name: "search.grep".into(),
                arguments: "{\"pattern\": \"x\"}".into(),
            },
        }],
    };
    let calls = proposed_calls(&response);
    assert_eq!(
        calls,
        vec![
            (
                "search.grep".to_string(),
                serde_json::json!({"pattern": "x"})
            ),
            (
                "fs.read_file".to_string(),
                serde_json::json!({"path": "a.rs"})
            ),
            ("fs.list".to_string(), serde_json::json!({})),
        ]
    );
}

mod properties {
    use proptest::prelude::*;

    use super::*;
    use crate::replay::scenario::RunInventory;

    /// Every mutation the flaky run admits, one of each kind per element of its inventory.
    fn admissible(file: &RunFile) -> Vec<Mutation> {
        let inventory = RunInventory::of(file, None);
        let mut all = Vec::new();
        for (id, item) in &inventory.items {
            all.push(Mutation::DropItem { item: id.clone() });
            all.push(Mutation::ChangeWeight {
                item: id.clone(),
                weight: 0.5,
            });
            if item.summary.is_some() && item.content.is_some() {
                all.push(Mutation::SwapSummary {
                    item: id.clone(),
                    to: crate::replay::scenario::SummaryForm::Summary,
                });
            }
            if item.kind == crate::compiler::ItemKind::Doc {
                all.push(Mutation::DropRetrievalDoc { item: id.clone() });
            }
        }
        all.extend(
            inventory
                .rules
                .iter()
                .map(|r| Mutation::DisableRule { rule: r.clone() }),
        );
        all.extend(
            inventory
                .memory_classes
                .iter()
                .map(|c| Mutation::DisableMemoryClass { class: *c }),
        );
        all.push(Mutation::ChangeBudget {
            item_kind: None,
            budget: 700,
        });
        all
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]

        /// Any admissible mix of mutations: the scenario is accepted, runs, gives the same
        /// result twice, compares against the unmutated baseline, labels by its deltas, and
        /// leaves the run as it was.
        #[test]
        fn any_admissible_scenario_is_deterministic_and_labelled_by_its_deltas(
            picks in proptest::collection::vec(any::<prop::sample::Index>(), 1..4),
        ) {
            let file = fixture(FLAKY);
            let before = serde_json::to_string(&file).unwrap();
            let all = admissible(&file);
            let mutations: Vec<Mutation> = picks.iter().map(|i| all[i.index(all.len())].clone()).collect();
            let s = spec(&file, mutations);
            prop_assert!(check(&s, &file).is_ok());
            let baseline = Baseline::new(&file, None).unwrap();
            let first = baseline.run(&s, None, None).unwrap();
            let second = baseline.run(&s, None, None).unwrap();
            prop_assert_eq!(&first, &second);
            prop_assert_eq!(&first.baseline, baseline.trajectory());
            let lost = first.metrics.iter().any(|m| m.label == Label::Loss);
            let won = first.metrics.iter().any(|m| m.label == Label::Win);
            let expected = if lost { Label::Loss } else if won { Label::Win } else { Label::Neutral };
            prop_assert_eq!(first.label, expected);
            // A step the comparison calls unchanged is the baseline's, call for call.
            for (c, (b, r)) in first.steps.iter().zip(first.baseline.steps.iter().zip(&first.replay.steps)) {
                if !c.changed {
                    prop_assert_eq!(&b.tools, &r.tools);
                    prop_assert_eq!(
                        b.compiles.iter().map(|x| &x.hash).collect::<Vec<_>>(),
                        r.compiles.iter().map(|x| &x.hash).collect::<Vec<_>>()
                    );
                }
            }
            prop_assert_eq!(serde_json::to_string(&file).unwrap(), before);
        }
    }
}
