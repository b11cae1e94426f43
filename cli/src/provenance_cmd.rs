//! `tollgate provenance ID [--used-by]`: where a record came from, or what used it.

use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use tollgate_gateway::provenance::{Walk, query, resolve_id};
use tollgate_gateway::recorder::Recorder;

use crate::store_arg;

#[derive(Args, Debug)]
pub struct ProvenanceArgs {
    /// A run id, or `run:ID`, `step:RUN/N`, `event:RUN/SEQ`, `envelope:...`, a record id.
    id: String,
    /// Walk forward: what used it (descendants) instead of where it came from.
    #[arg(long)]
    used_by: bool,
    /// Machine-readable output (nodes and edges).
    #[arg(long, conflicts_with = "dot")]
    json: bool,
    /// Graphviz DOT output.
    #[arg(long)]
    dot: bool,
}

pub fn run(a: ProvenanceArgs) -> Result<ExitCode> {
    let recorder = Recorder::new(store_arg::open()?);
    let start = resolve_id(&recorder, &a.id)?;
    let walk = if a.used_by {
        Walk::Descendants
    } else {
        Walk::Ancestors
    };
    let answer = query(&recorder, &start, walk)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&answer)?);
    } else if a.dot {
        print!("{}", answer.to_dot());
    } else {
        print!("{}", answer.to_text());
    }
    Ok(ExitCode::SUCCESS)
}
