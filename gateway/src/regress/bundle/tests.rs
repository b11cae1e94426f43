#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;

pub(crate) fn fixture(name: &str) -> RunFile {
    let path = format!(
        "{}/../fixtures/runs/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

const RUNBOOK_SECRETS: [&str; 3] = [
    "Xk3r9tQe2mZwq7",
    "AKIASFUHIPUR8FUTQKVQ",
    "pOjvuCJnjQPBX/T6IKRYV/hDbKjgCXLDUKYHQIKA",
];

#[test]
fn a_bundle_carries_no_secret_of_its_run_and_replays_exactly() {
    let run = fixture("04-forbidden-tool-pool-exhaustion");
    let raw = serde_json::to_string_pretty(&run).unwrap();
    for secret in RUNBOOK_SECRETS {
        assert!(raw.contains(secret), "the fixture has {secret}");
    }
    let bundle = cut(&run, None).unwrap();
    let text = bundle.to_file();
    for secret in RUNBOOK_SECRETS {
        assert!(!text.contains(secret), "{secret} survived");
    }
    assert!(
        bundle
            .redactions
            .get("aws_access_key")
            .copied()
            .unwrap_or(0)
            > 0,
        "{:?}",
        bundle.redactions
    );
    // Derived text is dropped; what replay needs is all there.
    assert!(
        text.len() < raw.len() / 3,
        "{} of {}",
        text.len(),
        raw.len()
    );
    let report = replay_file(&bundle.run).unwrap();
    assert!(!report.drifted(), "{}", report.to_text());
    assert_eq!(report.compiles, run.steps.len());
}

#[test]
fn every_fixture_run_bundles() {
    for name in [
        "01-bugfix-users-404",
        "02-feature-users-pagination",
        "03-flaky-webhook-retry",
        "04-forbidden-tool-pool-exhaustion",
        "05-planner-executor-rate-limit",
    ] {
        let bundle = cut(&fixture(name), None).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(bundle.format, BUNDLE_FORMAT);
    }
}

#[test]
fn a_bundle_is_the_same_every_time() {
    let run = fixture("01-bugfix-users-404");
    let (a, b) = (cut(&run, Some(5)).unwrap(), cut(&run, Some(5)).unwrap());
    assert_eq!(a.hash(), b.hash());
    assert_eq!(a.to_file(), b.to_file());
    let back = FixtureBundle::from_file(&a.to_file(), "a.json").unwrap();
    assert_eq!(back.hash(), a.hash());
}

#[test]
fn a_step_bundle_keeps_the_steps_up_to_it() {
    let run = fixture("01-bugfix-users-404");
    let bundle = cut(&run, Some(3)).unwrap();
    assert_eq!(bundle.run.steps.len(), 4);
    assert!(bundle.run.events.iter().all(|e| e.step <= 3));
    assert_eq!(bundle.source.step, Some(3));
}

#[test]
fn a_step_the_run_lacks_is_refused_with_its_range() {
    let run = fixture("01-bugfix-users-404");
    let err = cut(&run, Some(999)).unwrap_err().to_string();
    assert!(err.contains("has no step 999"), "{err}");
    assert!(err.contains("its steps are 0 to 27"), "{err}");
}

#[test]
fn a_secret_put_into_a_bundle_is_found_by_the_rescan() {
    let run = fixture("03-flaky-webhook-retry");
    let mut bundle = cut(&run, Some(2)).unwrap();
    bundle.run.run.metadata["leak"] =
        serde_json::json!("token ghp_7147415695xfmewjewfoZZLLJYJJKV9042");
    let err = check(&bundle).unwrap_err().to_string();
    assert!(err.contains("$.run.run.metadata.leak"), "{err}");
    assert!(err.contains("`ghp_"), "{err}");
}

#[test]
fn a_bundle_of_another_format_is_refused() {
    let run = fixture("03-flaky-webhook-retry");
    let mut bundle = cut(&run, Some(1)).unwrap();
    bundle.format = "tollgate.fixture/v0".into();
    let err = FixtureBundle::from_file(&bundle.to_file(), "x.json").unwrap_err();
    assert!(
        err.to_string()
            .contains("x.json: format `tollgate.fixture/v0`"),
        "{err}"
    );
    let err = FixtureBundle::from_file("{\"format\": 1", "y.json").unwrap_err();
    assert!(err.to_string().contains("y.json: line 1"), "{err}");
}
