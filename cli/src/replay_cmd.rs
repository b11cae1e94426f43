//! `tollgate replay exact RUN`: recompile every step of a recorded run, serve the recorded
//! outputs, and report drift (exit 1).

use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, Subcommand};
use tollgate_gateway::recorder::Recorder;
use tollgate_gateway::replay::replay_exact;

use crate::store_arg;

#[derive(Subcommand, Debug)]
pub enum ReplayCommand {
    /// Recompile every step from the recorded items and settings, serve recorded model and
    /// tool outputs, and report per step whether hashes, outputs and decisions match; exit 1
    /// on any drift.
    Exact(ExactArgs),
}

#[derive(Args, Debug)]
pub struct ExactArgs {
    /// Run id.
    run: String,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

pub fn run(cmd: ReplayCommand) -> Result<ExitCode> {
    match cmd {
        ReplayCommand::Exact(a) => {
            let recorder = Recorder::new(store_arg::open()?);
            let report = replay_exact(&recorder, &a.run)?;
            if a.json {
                let mut doc = serde_json::to_value(&report)?;
                doc["drift"] = report.drifted().into();
                println!("{}", serde_json::to_string_pretty(&doc)?);
            } else {
                print!("{}", report.to_text());
            }
            Ok(if report.drifted() {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            })
        }
    }
}
