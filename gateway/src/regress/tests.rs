#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::bundle::tests::fixture;
use super::case::AssertionClass;
use super::execute::{load, run_case};
use super::target::Target;
use super::*;
use crate::replay::result::execute as replay;
use crate::replay::scenario::ScenarioSpec;

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tollgate-regress-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn a_case_from_a_run_passes_on_its_own_bundle() {
    for name in ["01-bugfix-users-404", "04-forbidden-tool-pool-exhaustion"] {
        let run = fixture(name);
        let (case, bundle) = from_run(&run, &CaseOptions::default()).unwrap();
        assert_eq!(case.version, 1);
        assert_eq!(case.agent, run.run.agent);
        for class in AssertionClass::ALL {
            assert!(!case.assertions.of(class).is_empty(), "{name}: no {class}");
        }
        let result = run_case(&case, &bundle, &Target::recorded()).unwrap();
        assert!(
            result.passed,
            "{name}: {:#?}",
            result.failures().collect::<Vec<_>>()
        );
        assert!(!result.drift, "{name}: {:?}", result.drift_detail);
        assert!(result.signature.is_none());
    }
}

#[test]
fn a_case_asserts_the_denials_of_its_run() {
    let run = fixture("04-forbidden-tool-pool-exhaustion");
    let (case, _) = from_run(&run, &CaseOptions::default()).unwrap();
    let yaml = case.to_yaml();
    assert!(yaml.contains("value: deny"), "{yaml}");
    assert!(yaml.contains("$.calls[?@.call == 'call-"), "{yaml}");
}

#[test]
fn a_case_fails_when_policy_no_longer_denies_a_call() {
    let run = fixture("04-forbidden-tool-pool-exhaustion");
    let (mut case, bundle) = from_run(&run, &CaseOptions::default()).unwrap();
    // What a loosened envelope would do: the rule that denied `shell.rm_rf` is gone (the
    // call now waits for an approval the recording never gave).
    case.mutations = vec![Mutation::DisableRule {
        rule: "org-baseline/no-rm".into(),
    }];
    let result = run_case(&case, &bundle, &Target::recorded()).unwrap();
    assert!(!result.passed);
    let failed: Vec<_> = result.failures().collect();
    assert!(
        failed
            .iter()
            .any(|a| a.class == AssertionClass::Policy && a.message.contains("\"deny\"")),
        "{failed:#?}"
    );
    let sig = result.signature.unwrap();
    assert!(sig.summary.contains("(expected deny)"), "{}", sig.summary);
    assert!(!result.drift, "a mutation is not drift");
}

#[test]
fn a_step_case_covers_its_step() {
    let run = fixture("01-bugfix-users-404");
    let options = CaseOptions {
        step: Some(7),
        ..CaseOptions::default()
    };
    let (case, bundle) = from_run(&run, &options).unwrap();
    assert_eq!(case.id, "run-bugfix-users-404-step-7");
    assert!(case.name.contains("step 7"), "{}", case.name);
    assert_eq!(bundle.run.steps.len(), 8);
    let result = run_case(&case, &bundle, &Target::recorded()).unwrap();
    assert!(result.passed);
}

#[test]
fn a_case_from_a_replay_keeps_its_mutations_and_holds_on_them() {
    let run = fixture("03-flaky-webhook-retry");
    let spec = ScenarioSpec {
        run: run.run.id.clone(),
        step: None,
        name: Some("without read-only".into()),
        mutations: vec![Mutation::DisableRule {
            rule: "coding-agent/read-only".into(),
        }],
        mode: ToolMode::DryRun,
        model: ModelSource::Recorded,
        metrics: Vec::new(),
        rubric: Vec::new(),
    };
    let result = replay(&run, &spec, None, None).unwrap();
    let (case, bundle) = from_replay(&run, &result, &CaseOptions::default()).unwrap();
    assert_eq!(case.mutations, spec.mutations);
    assert_eq!(case.source.replay.as_deref(), Some(result.id.as_str()));
    assert_eq!(case.name, "without read-only");
    assert!(
        run_case(&case, &bundle, &Target::recorded())
            .unwrap()
            .passed
    );
    // Without the mutation, the same assertions tell the baseline apart.
    let mut plain = case.clone();
    plain.mutations.clear();
    assert!(
        !run_case(&plain, &bundle, &Target::recorded())
            .unwrap()
            .passed
    );
}

#[test]
fn a_live_replay_cannot_become_a_case() {
    let run = fixture("03-flaky-webhook-retry");
    let spec = ScenarioSpec {
        run: run.run.id.clone(),
        step: Some(1),
        name: None,
        mutations: vec![Mutation::ChangeBudget {
            item_kind: None,
            budget: 900,
        }],
        mode: ToolMode::DryRun,
        model: ModelSource::Recorded,
        metrics: Vec::new(),
        rubric: Vec::new(),
    };
    let mut result = replay(&run, &spec, None, None).unwrap();
    result.model = ModelSource::Live;
    let err = from_replay(&run, &result, &CaseOptions::default()).unwrap_err();
    assert!(err.to_string().contains("runs offline"), "{err}");
}

#[test]
fn written_cases_load_and_a_changed_bundle_is_refused() {
    let dir = scratch("write");
    let run = fixture("02-feature-users-pagination");
    let options = CaseOptions {
        step: Some(4),
        task_type: Some("feature".into()),
        ..CaseOptions::default()
    };
    let (case, bundle) = from_run(&run, &options).unwrap();
    let path = write(&dir, &case, &bundle, false).unwrap();
    assert_eq!(path, dir.join("run-feature-users-pagination-step-4.yaml"));
    let loaded = load(&path).unwrap();
    assert_eq!(loaded.case, case);
    assert_eq!(loaded.case.task_type, "feature");
    // Written twice: refused without `replace`, and nothing changes.
    let err = write(&dir, &case, &bundle, false).unwrap_err();
    assert!(err.to_string().contains("--force"), "{err}");
    // A hand-edited bundle no longer matches its pin.
    let bundle_path = dir.join(&case.bundle.path);
    let text = std::fs::read_to_string(&bundle_path).unwrap();
    std::fs::write(&bundle_path, text.replacen("\"ok\"", "\"error\"", 1)).unwrap();
    let err = load(&path).unwrap_err().to_string();
    assert!(err.contains("content hash"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_bad_id_is_refused_before_anything_is_made() {
    let run = fixture("01-bugfix-users-404");
    let options = CaseOptions {
        id: Some("../escape".into()),
        ..CaseOptions::default()
    };
    let err = from_run(&run, &options).unwrap_err();
    assert!(err.to_string().contains("not a valid case id"), "{err}");
}

/// The optional LLM judge (seed 000): a case's `llm_judge` assertion fails, saying how to turn
/// the judge on, when the judge is off; with it on, the judge's answer decides, and an answer
/// that is not a verdict (the fake provider's) fails. Accepting new behaviour keeps the rubric.
#[test]
fn an_llm_judge_assertion_is_judged_only_with_the_judge_on() {
    use crate::evaluators::{AssertionSpec, Judge};
    use crate::providers::FakeProvider;
    let run = fixture("01-bugfix-users-404");
    let (mut case, bundle) = from_run(&run, &CaseOptions::default()).unwrap();
    let rubric: AssertionSpec = serde_json::from_value(serde_json::json!({
        "kind": "llm_judge",
        "rubric": "The agent fixed the 404 on the users route.",
    }))
    .unwrap();
    case.assertions.output.push(rubric.clone());
    let text = case.to_yaml();
    assert!(text.contains("kind: llm_judge"), "{text}");

    let off = run_case(&case, &bundle, &Target::recorded()).unwrap();
    assert!(!off.passed);
    let failed: Vec<_> = off.failures().collect();
    assert_eq!(failed.len(), 1, "{failed:#?}");
    assert_eq!(failed[0].kind, "llm_judge");
    assert!(
        failed[0].message.contains("TOLLGATE_LLM_JUDGE=on"),
        "{}",
        failed[0].message
    );

    let judge = Judge::new(std::sync::Arc::new(FakeProvider::new()), "judge-model");
    let on = run_case(&case, &bundle, &Target::recorded().with_judge(Some(judge))).unwrap();
    let failed: Vec<_> = on.failures().collect();
    assert_eq!(failed.len(), 1, "{failed:#?}");
    assert!(
        failed[0].message.contains("did not answer with a verdict"),
        "{}",
        failed[0].message
    );

    let accepted = update::update(&case, &bundle, &Target::recorded(), "accept", false)
        .unwrap()
        .map(|u| u.case)
        .unwrap_or(case.clone());
    assert!(accepted.assertions.output.contains(&rubric));
}
