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
    let t = Tollgate::new(&w).expect("the workload loads");
    let args = serde_json::json!({});
    if std::env::args().any(|a| a == "--check-render") {
        let reader = Tollgate::new(&w).expect("the workload loads");
        let mut differ = 0usize;
        let mut why_nots = 0usize;
        for &(a, tool) in &w.requests {
            let (run, tool) = (agent_name(a), tool_name(tool));
            let full = t.engine.decide_tool(&run, &tool, &args);
            let receipt = t.receipt(&run, &tool);
            let rendered = reader
                .engine
                .render(&t.request(&run, &tool), &receipt)
                .expect("a receipt renders");
            why_nots += full.why_not.len();
            if serde_json::to_string(&rendered).unwrap() != serde_json::to_string(&full).unwrap()
            {
                differ += 1;
                eprintln!("{run} {tool}: rendered differs from decided");
            }
        }
        println!(
            "{} decisions rendered on read ({why_nots} why-nots), {differ} differ from deciding in full",
            w.requests.len()
        );
        return if differ == 0 {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        };
    }
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
