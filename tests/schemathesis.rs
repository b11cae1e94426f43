//! The HTTP contract, tested by Schemathesis against `/openapi.json`: every operation, with
//! generated valid and invalid requests (and the stateful phase), on a gateway serving the
//! fixture envelopes and runs. Checked: no server error, every status and content type
//! documented, every response (errors included) in its documented schema, and invalid
//! requests refused. Not checked here: that every schema-valid request is accepted
//! (`positive_data_acceptance`) — some rules cannot be said in a schema (an envelope's YAML, a
//! candidate's unique id); RELIABILITY.md lists them.
//!
//! Schemathesis is `TOLLGATE_TEST_SCHEMATHESIS`, else `.ci/venv/bin/schemathesis` (`.ci/run`
//! installs it from `tests/requirements-schemathesis.txt`). Under `CI` a missing one fails the
//! test; elsewhere the test says so and passes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/mod.rs"]
mod support;

use std::process::Command;

use support::Gateway;

/// Examples per operation and phase: about a minute on two cores for the whole API.
const MAX_EXAMPLES: &str = "15";

fn schemathesis() -> Option<String> {
    if let Ok(p) = std::env::var("TOLLGATE_TEST_SCHEMATHESIS") {
        return Some(p);
    }
    let venv = support::root().join(".ci/venv/bin/schemathesis");
    venv.exists().then(|| venv.display().to_string())
}

#[test]
fn the_api_keeps_its_openapi_contract_under_generated_requests() {
    let Some(schemathesis) = schemathesis() else {
        assert!(
            std::env::var_os("CI").is_none(),
            "no Schemathesis: .ci/run installs it into .ci/venv"
        );
        eprintln!(
            "skipped: no Schemathesis (run .ci/run, or set TOLLGATE_TEST_SCHEMATHESIS to its binary)"
        );
        return;
    };
    let gw = Gateway::with_fixture_envelopes();
    gw.import_fixture_runs(&["01-bugfix-users-404.json", "03-flaky-webhook-retry.json"]);
    let seed = std::env::var("TOLLGATE_SCHEMATHESIS_SEED").unwrap_or_else(|_| "1".into());
    let out = Command::new(&schemathesis)
        .current_dir(gw.dir.path())
        .args([
            "run",
            &format!("{}/openapi.json", gw.base),
            "--header",
            &format!("Authorization: Bearer {}", gw.token),
            "--checks",
            "all",
            "--exclude-checks",
            "positive_data_acceptance",
            "--max-examples",
            MAX_EXAMPLES,
            "--workers",
            "2",
            "--seed",
            &seed,
            "--request-timeout",
            "10",
            "--no-color",
        ])
        .output()
        .expect("run schemathesis");
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "Schemathesis found failures (seed {seed}):\n{report}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Every operation was tested: a document that lost its paths would pass vacuously.
    let (status, doc) = gw.call("GET", "/openapi.json", None);
    assert_eq!(status, 200);
    let operations: usize = doc["paths"]
        .as_object()
        .unwrap()
        .values()
        .map(|item| item.as_object().unwrap().len())
        .sum();
    assert!(
        report.contains(&format!("Tested: {operations}")),
        "not all {operations} operations were tested:\n{report}"
    );
    eprintln!(
        "{}",
        report.lines().rev().take(12).collect::<Vec<_>>().join("\n")
    );
}
