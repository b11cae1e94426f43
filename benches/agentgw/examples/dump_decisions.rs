//! Writes every AgentGW-Bench decision as one JSON line (effect, rules, proof, why-not,
//! envelope versions, input hash), for the public engine (why-nots on) and then the
//! receipts engine (why-nots off). Two commits decide identically when their dumps are equal:
//! `cargo run --release --example dump_decisions | sha256sum`.
//!
//! `--check-render` writes nothing: it decides each request as the gateway records it
//! (`decide_receipt`), renders the receipt on an engine materialised separately, and exits 1
//! unless every rendered decision is byte for byte the one the public engine writes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write as _;
use std::process::ExitCode;

use tollgate_agentgw_bench::{Tollgate, Workload, agent_name, tool_name};

fn main() -> ExitCode {
    let w = Workload::generate();
    if std::env::args().any(|a| a == "--check-render") {
        let check = tollgate_agentgw_bench::check_render(&w).expect("every receipt renders");
        println!(
            "{} decisions rendered on read ({} why-nots), {} differ from deciding in full",
            check.decisions, check.why_nots, check.differ
        );
        return if check.differ == 0 {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        };
    }
    let t = Tollgate::new(&w).expect("the workload loads");
    let args = serde_json::json!({});
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    for engine in [&t.engine, &t.receipts] {
        for &(a, tool) in &w.requests {
            let d = engine.decide_tool(&agent_name(a), &tool_name(tool), &args);
            let line = serde_json::to_string(&d).expect("a decision serialises");
            writeln!(out, "{line}").expect("stdout");
        }
    }
    ExitCode::SUCCESS
}
