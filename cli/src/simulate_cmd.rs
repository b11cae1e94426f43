//! `tollgate policy simulate --envelope FILE --run RUN`: dry-run candidate envelopes on a
//! recorded run and list the decisions that would change, with their new receipts.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use tollgate_gateway::recorder::Recorder;
use tollgate_gateway::simulate::{SimulateError, simulate};

use crate::envelope_arg::{envelope_files, read_sources, report_errors};
use crate::store_arg;

#[derive(Args, Debug)]
pub struct SimulateArgs {
    /// Candidate envelope files or folders: they replace the run's envelopes of the same ids.
    #[arg(long = "envelope", short = 'e', required = true)]
    envelopes: Vec<PathBuf>,
    /// The recorded run.
    #[arg(long)]
    run: String,
    /// Print each changed decision's new proof (or why-not).
    #[arg(long)]
    explain: bool,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

pub fn run(args: SimulateArgs) -> Result<ExitCode> {
    let sources = read_sources(&envelope_files(&args.envelopes)?)?;
    let store = store_arg::open()?;
    let file = match Recorder::new(store).export(&args.run) {
        Ok(f) => f,
        // The recorder's error carries its help (`tollgate runs list`).
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(ExitCode::from(2));
        }
    };
    let report = match simulate(&file, &sources) {
        Ok(r) => r,
        Err(SimulateError::Envelopes(errors)) => {
            report_errors(&errors);
            return Ok(ExitCode::from(2));
        }
        Err(e @ SimulateError::Policy(_)) => {
            eprintln!("error: {e}");
            return Ok(ExitCode::from(2));
        }
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(ExitCode::SUCCESS);
    }
    let text = report.to_text();
    if !args.explain {
        print!("{text}");
        return Ok(ExitCode::SUCCESS);
    }
    let mut changed = report.changed();
    for line in text.lines() {
        println!("{line}");
        if line.starts_with("CHANGED")
            && let Some(d) = changed.next()
            && let Some(receipt) = &d.receipt
        {
            for l in receipt.explain().lines() {
                println!("    {l}");
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
