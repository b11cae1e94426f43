//! Writes a corpus of regression cases for the suite benchmark: N step cases cut from the
//! fixture runs (every step of every run in turn; past the last step, the same steps again
//! with a different total budget, so every case is its own scenario with its own bundle).
//!
//! ```text
//! cargo run --release -p tollgate-gateway --example regress_corpus -- 1000 target/regress-corpus
//! time target/release/tollgate regress run target/regress-corpus
//! ```

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use tollgate_gateway::recorder::format::RunFile;
use tollgate_gateway::regress::{CaseOptions, from_run, write};
use tollgate_gateway::replay::scenario::Mutation;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(n), Some(out)) = (
        args.first().and_then(|n| n.parse::<usize>().ok()),
        args.get(1),
    ) else {
        eprintln!("usage: regress_corpus N OUT_DIR");
        return ExitCode::from(2);
    };
    match corpus(n, Path::new(out)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
    }
}

fn corpus(n: usize, out: &Path) -> Result<(), Box<dyn std::error::Error>> {
    let runs_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/runs");
    let mut runs: Vec<RunFile> = Vec::new();
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&runs_dir)?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    paths.sort();
    for p in paths {
        runs.push(serde_json::from_str(&std::fs::read_to_string(&p)?)?);
    }
    let steps: Vec<(usize, u32)> = runs
        .iter()
        .enumerate()
        .flat_map(|(r, run)| run.steps.iter().map(move |s| (r, s.index)))
        .collect();
    if out.exists() {
        std::fs::remove_dir_all(out)?;
    }
    std::fs::create_dir_all(out)?;
    for i in 0..n {
        let (r, step) = steps[i % steps.len()];
        let round = i / steps.len();
        let run = &runs[r];
        let options = CaseOptions {
            step: Some(step),
            id: Some(format!("{i:04}-{}-step-{step}", run.run.id)),
            ..CaseOptions::default()
        };
        let (mut case, bundle) = from_run(run, &options)?;
        if round > 0 {
            // Another scenario on the same step: a smaller total budget, asserted as it is.
            case.mutations = vec![Mutation::ChangeBudget {
                item_kind: None,
                budget: 4000u32.saturating_sub(300 * u32::try_from(round)?),
            }];
            let templates = case.templates.clone();
            let subject = tollgate_gateway::regress::execute::outcome(
                &case,
                &bundle,
                &tollgate_gateway::regress::target::Target::recorded(),
            )?;
            case.assertions =
                tollgate_gateway::regress::templates::assertions(&templates, &subject);
        }
        write(out, &case, &bundle, true)?;
    }
    println!("wrote {n} cases under {}", out.display());
    Ok(())
}
