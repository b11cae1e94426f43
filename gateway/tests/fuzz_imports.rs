//! Recorded runs from generated text (issue 19): run files (`tollgate.run/v1`) and OTLP traces
//! with characters replaced, inserted or removed, and any string. Whatever the text, reading
//! and importing it returns within a bound and never panics; a run file is imported whole or
//! not at all, and a stored run's chain verifies. CI runs `PROPTEST_CASES` (1,000) per
//! property; RELIABILITY.md has the offline figures.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../../tests/fuzz_support/mod.rs"]
mod fuzz_support;

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use proptest::prelude::*;
use tollgate_gateway::recorder::Recorder;
use tollgate_gateway::recorder::format::RunFile;
use tollgate_gateway::recorder::otel::{OtlpImportOptions, runs_from_otlp_str};
use tollgate_gateway::store::{Store, StoreLocation};

const BOUND: Duration = Duration::from_secs(10);

/// One store for the whole test binary: imports of mutated runs accumulate in it.
fn recorder() -> Arc<Recorder> {
    static RECORDER: OnceLock<Arc<Recorder>> = OnceLock::new();
    RECORDER
        .get_or_init(|| {
            let dir =
                std::env::temp_dir().join(format!("tollgate-fuzz-imports-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            let store = Store::open(&StoreLocation::file(dir.join("t.db"))).unwrap();
            Arc::new(Recorder::new(store))
        })
        .clone()
}

const RUN_FILES: &[&str] = &[
    include_str!("../../fixtures/runs/01-bugfix-users-404.json"),
    include_str!("../../fixtures/runs/03-flaky-webhook-retry.json"),
];
const TRACES: &[&str] = &[include_str!("../../fixtures/otel/coding-agent-trace.json")];

/// Reads `text` as a run file and imports it: all or nothing, and what is stored verifies.
fn import(text: String) -> Result<(), TestCaseError> {
    let recorder = recorder();
    fuzz_support::checked(BOUND, move || {
        let Ok(file) = serde_json::from_str::<RunFile>(&text) else {
            return Ok(());
        };
        let run = file.run.id.clone();
        let before = recorder.header(&run).is_ok();
        match recorder.import(&file) {
            Ok(_) => {
                let report = recorder.verify(&run).map_err(|e| e.to_string())?;
                if !report.is_intact() {
                    return Err(format!(
                        "run `{run}` imported but its chain does not verify"
                    ));
                }
                Ok(())
            }
            Err(_) if !before && recorder.header(&run).is_ok() => {
                Err(format!("run `{run}` was refused but partly stored"))
            }
            Err(_) => Ok(()),
        }
    })
}

fn read_trace(text: String) -> Result<(), TestCaseError> {
    fuzz_support::checked(BOUND, move || {
        let options = OtlpImportOptions {
            scope: "org:acme/repo:api".into(),
            clearance: "internal".into(),
            task: None,
        };
        let _ = runs_from_otlp_str(&text, &options);
        Ok(())
    })
}

proptest! {
    #[test]
    fn a_mutated_run_file_is_imported_whole_or_not_at_all(text in fuzz_support::mutated(RUN_FILES.to_vec())) {
        import(text)?;
    }

    #[test]
    fn any_string_as_a_run_file_is_refused_without_harm(text in ".{0,200}") {
        import(text)?;
    }

    #[test]
    fn a_mutated_trace_reads_or_fails(text in fuzz_support::mutated(TRACES.to_vec())) {
        read_trace(text)?;
    }

    #[test]
    fn any_string_as_a_trace_reads_or_fails(text in ".{0,200}") {
        read_trace(text)?;
    }
}
