//! Every AgentGW-Bench decision, recorded as the gateway records it and rendered on read, is
//! byte for byte the decision deciding in full writes; exits 1 otherwise. Run by `.ci/run`
//! (a binary, so it builds without the bench's peers):
//! `cargo run --release --manifest-path benches/agentgw/Cargo.toml --bin check_render`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::ExitCode;

use tollgate_agentgw_bench::{Workload, check_render};

fn main() -> ExitCode {
    let w = Workload::generate();
    let check = check_render(&w).expect("the workload loads and every receipt renders");
    println!(
        "{} decisions rendered on read ({} why-nots), {} differ from deciding in full",
        check.decisions, check.why_nots, check.differ
    );
    if check.differ == 0 && check.decisions == w.requests.len() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
