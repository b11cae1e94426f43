#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use crate::regress::bundle::tests::fixture;
use crate::regress::case::AssertionClass;
use crate::regress::render::{junit, text};
use crate::regress::target::Target;
use crate::regress::{CaseOptions, from_run, write};

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tollgate-suite-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn report(case: &str, status: CaseStatus, agent: &str, drift: bool) -> CaseReport {
    let passed = status == CaseStatus::Passed;
    let result = CaseResult {
        case: case.into(),
        version: 1,
        name: case.into(),
        agent: agent.into(),
        task_type: "bugfix".into(),
        target: "recorded".into(),
        passed,
        drift,
        drift_detail: drift.then(|| "step 1, event 4 compile: hash".to_string()),
        assertions: vec![crate::regress::execute::AssertionResult {
            class: AssertionClass::Behavioral,
            index: 0,
            kind: "tool_path".into(),
            path: None,
            expected: None,
            passed,
            message: "m".into(),
        }],
        signature: None,
        duration_ms: 1.0,
    };
    let signature = (!passed).then(|| crate::regress::execute::signature::signature(&result));
    CaseReport {
        path: format!("{case}.yaml"),
        case: case.into(),
        status,
        passes: u32::from(passed),
        runs: 2,
        result: Some(CaseResult {
            signature,
            ..result
        }),
        error: None,
    }
}

#[test]
fn figures_count_flaky_apart_from_failures_and_cover_agents() {
    let cases = vec![
        report("a", CaseStatus::Passed, "coder", false),
        report("b", CaseStatus::Failed, "coder", true),
        report("c", CaseStatus::Flaky, "planner", false),
        report("d", CaseStatus::Failed, "planner", false),
    ];
    let f = figures(&cases);
    assert_eq!(
        (f.cases, f.passed, f.failed, f.flaky, f.errors),
        (4, 1, 2, 1, 0)
    );
    assert_eq!(f.drift, 1);
    assert!((f.pass_rate - 0.25).abs() < 1e-9);
    assert_eq!(
        f.by_agent["coder"],
        Coverage {
            cases: 2,
            passed: 1
        }
    );
    assert_eq!(
        f.by_agent["planner"],
        Coverage {
            cases: 2,
            passed: 0
        }
    );
    let clusters = clusters(&cases);
    // b drifted, d did not: two signatures; the flaky case's kept failure is a third.
    assert_eq!(clusters.len(), 2, "{clusters:#?}");
    let all: usize = clusters.iter().map(|c| c.cases.len()).sum();
    assert_eq!(all, 3);
}

#[test]
fn a_suite_of_written_cases_passes_and_a_broken_file_is_an_error() {
    let dir = scratch("run");
    for (name, step) in [
        ("01-bugfix-users-404", Some(3)),
        ("05-planner-executor-rate-limit", Some(9)),
    ] {
        let options = CaseOptions {
            step,
            ..CaseOptions::default()
        };
        let (case, bundle) = from_run(&fixture(name), &options).unwrap();
        write(&dir, &case, &bundle, false).unwrap();
    }
    let paths = discover(&dir).unwrap();
    assert_eq!(paths.len(), 2, "bundles are not cases: {paths:?}");
    let r = run_suite("suite", &paths, 2, 2, &Target::recorded());
    assert!(!r.failed(), "{}", text(&r));
    assert_eq!(r.figures.passed, 2);
    assert!(r.cases.iter().all(|c| c.passes == 2 && c.runs == 2));
    assert_eq!(r.figures.by_agent.len(), 2, "{:?}", r.figures.by_agent);

    std::fs::write(
        dir.join("zz-broken.yaml"),
        "format: tollgate.case/v1\nid: [\n",
    )
    .unwrap();
    let r = run_suite("suite", &discover(&dir).unwrap(), 1, 2, &Target::recorded());
    assert!(r.failed());
    assert_eq!(r.figures.errors, 1);
    let broken = r.cases.last().unwrap();
    assert_eq!(broken.status, CaseStatus::Error);
    assert!(
        broken.error.as_ref().unwrap().contains("zz-broken.yaml:"),
        "{broken:?}"
    );
    let xml = junit(&r);
    assert!(xml.contains("errors=\"1\""), "{xml}");
    assert_eq!(xml.matches("<testcase ").count(), 3);
    assert!(xml.contains("type=\"load\""), "{xml}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn junit_marks_failures_with_their_signature_and_flaky_cases_apart() {
    let cases = vec![
        report("ok-case", CaseStatus::Passed, "coder", false),
        report("bad<case>", CaseStatus::Failed, "coder", false),
        report("shaky", CaseStatus::Flaky, "coder", false),
    ];
    let r = SuiteReport {
        path: "regressions".into(),
        target: "recorded".into(),
        repeat: 2,
        figures: figures(&cases),
        signatures: clusters(&cases),
        cases,
        duration_ms: 12.0,
    };
    let xml = junit(&r);
    assert!(
        xml.contains("tests=\"3\" failures=\"1\" errors=\"0\""),
        "{xml}"
    );
    assert!(xml.contains("name=\"bad&lt;case&gt;\""), "{xml}");
    assert_eq!(xml.matches("<failure ").count(), 1, "{xml}");
    assert_eq!(xml.matches("<flakyFailure ").count(), 1, "{xml}");
    assert!(xml.contains("type=\"sig-"), "{xml}");
    assert!(
        text(&r).contains("FLAKY shaky (0/2 passed)"),
        "{}",
        text(&r)
    );
}
