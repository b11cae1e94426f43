//! Recorded runs: a run file (`tollgate.run/v1`) is imported whole or not at all, and a run
//! stored from it verifies; an OTLP trace is read or refused, never a panic. The input's
//! first byte picks which (even: a run file; odd: a trace), the rest is the text.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use tollgate_gateway::recorder::Recorder;
use tollgate_gateway::recorder::format::RunFile;
use tollgate_gateway::recorder::otel::{OtlpImportOptions, runs_from_otlp_str};
use tollgate_gateway::store::{Store, StoreLocation};

/// One store per process: imports accumulate in it, as in a gateway that lives long.
fn recorder() -> &'static Recorder {
    static RECORDER: OnceLock<Recorder> = OnceLock::new();
    RECORDER.get_or_init(|| {
        let dir =
            std::env::temp_dir().join(format!("tollgate-fuzz-imports-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        if let Err(e) = std::fs::create_dir_all(&dir) {
            panic!("cannot make {}: {e}", dir.display());
        }
        match Store::open(&StoreLocation::file(dir.join("t.db"))) {
            Ok(store) => Recorder::new(store),
            Err(e) => panic!("cannot open the store: {e}"),
        }
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&which, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    if which % 2 == 1 {
        let options = OtlpImportOptions {
            scope: "org:acme/repo:api".into(),
            clearance: "internal".into(),
            task: None,
        };
        let _ = runs_from_otlp_str(text, &options);
        return;
    }
    let Ok(file) = serde_json::from_str::<RunFile>(text) else {
        return;
    };
    let recorder = recorder();
    let run = file.run.id.clone();
    let before = recorder.header(&run).is_ok();
    match recorder.import(&file) {
        Ok(_) => match recorder.verify(&run) {
            Ok(report) => assert!(
                report.is_intact(),
                "run `{run}` imported but its chain does not verify"
            ),
            Err(e) => panic!("run `{run}` imported but cannot be verified: {e}"),
        },
        Err(_) => assert!(
            before || recorder.header(&run).is_err(),
            "run `{run}` was refused but partly stored"
        ),
    }
});
