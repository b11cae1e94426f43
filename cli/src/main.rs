//! `tollgate`: the command line. Parses flags, validates them into a command, then acts.
//!
//! Exit codes: 0 ok; 1 a check failed or evaluation hit a limit; 2 usage or input error
//! (bad program, bad facts, missing files).

/// mimalloc rather than the system allocator: a recorded tool call allocates and frees
/// hundreds of small objects across threads, and glibc's malloc was a sixth of the gateway's
/// CPU under load (`benches/load`, BENCHMARKS.md). Without transparent huge pages (`no_thp`):
/// with them, memory mimalloc gave back and touched again was zeroed 2 MB at a time, a fifth of
/// the gateway's CPU under 64 chat connections.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod approvals_cmd;
mod cases_cmd;
mod compile_cmd;
mod db_cmd;
mod envelope_arg;
mod handoff_cmd;
mod jobs_cmd;
mod memory_cmd;
mod packs_cmd;
mod policy_cmd;
mod policy_versions_cmd;
mod provenance_cmd;
mod regress_bisect;
mod regress_cmd;
mod replay_cmd;
mod rules_cmd;
mod runs_cmd;
mod serve_cmd;
mod simulate_cmd;
mod store_arg;
mod tokens_cmd;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser, Debug)]
#[command(
    name = "tollgate",
    version,
    about = "A policy gateway with a Datalog core for LLM agents"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Datalog rule programs: evaluate, check, explain, and run pack tests.
    #[command(subcommand)]
    Rules(rules_cmd::RulesCommand),
    /// Policy envelopes: check, decide requests, diff versions.
    #[command(subcommand)]
    Policy(policy_cmd::PolicyCommand),
    /// The store's schema: check the version, upgrade, downgrade.
    #[command(subcommand)]
    Db(db_cmd::DbCommand),
    /// Recorded runs: import, export, list, show, verify their hash chains.
    #[command(subcommand)]
    Runs(runs_cmd::RunsCommand),
    /// Where a record came from (or, with --used-by, what used it).
    Provenance(provenance_cmd::ProvenanceArgs),
    /// Start the HTTP gateway (agents route compiles, model calls and tool calls through it).
    Serve(serve_cmd::ServeArgs),
    /// Replay recorded runs: `exact` recompiles every step and reports drift; `scenario`,
    /// `run`, `batch`, `show` and `list` rerun a run with mutations and compare.
    #[command(subcommand)]
    Replay(replay_cmd::ReplayCommand),
    /// Regression cases from runs and replays: make them (scrubbed fixtures, assertions), run
    /// them offline as a suite (text, JSON, JUnit), change them as new versions.
    #[command(subcommand)]
    Regress(regress_cmd::RegressCommand),
    /// Compile candidate context items under a token budget and, with --envelope, policy.
    Compile(compile_cmd::CompileArgs),
    /// Background jobs: list, show, enqueue, cancel, and run a worker in the foreground.
    #[command(subcommand)]
    Jobs(jobs_cmd::JobsCommand),
    /// Approvals of gated tool calls: list, approve, reject.
    #[command(subcommand)]
    Approvals(approvals_cmd::ApprovalsCommand),
    /// Memories distilled from finished runs: distill, list, show, review.
    #[command(subcommand)]
    Memory(memory_cmd::MemoryCommand),
    /// Handoff contracts between agents: templates, validate, submit, answer, check a
    /// delivery, show, the handoff graph of a run, A2A messages.
    #[command(subcommand)]
    Handoff(handoff_cmd::HandoffCommand),
    /// Write a new pack from a template (`intake_review`).
    Init(packs_cmd::InitArgs),
    /// Packs of the case service: scaffold, validate, author-check, the adapter harness and
    /// preflight, the registered packs.
    #[command(subcommand)]
    Packs(packs_cmd::PacksCommand),
    /// Cases of the case service: list, inspect, timeline, replay health; open, collect,
    /// propose, preview, decide, approve, commit.
    #[command(subcommand)]
    Cases(cases_cmd::CasesCommand),
    /// Credentials for agents, approvers and admins: create, list, revoke.
    #[command(subcommand)]
    Tokens(tokens_cmd::TokensCommand),
    /// What approvers and admins did, newest first.
    Audit(tokens_cmd::AuditArgs),
    /// Demo data: `tollgate demo seed` opens demo cases of the intake_review pack.
    #[command(subcommand)]
    Demo(DemoCommand),
}

#[derive(Subcommand, Debug)]
enum DemoCommand {
    /// Open demo cases of the intake_review pack in every state a reviewer meets.
    Seed {
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Rules(cmd) => rules_cmd::run(cmd),
        Command::Policy(cmd) => policy_cmd::run(cmd),
        Command::Db(cmd) => db_cmd::run(cmd),
        Command::Runs(cmd) => runs_cmd::run(cmd),
        Command::Provenance(args) => provenance_cmd::run(args),
        Command::Serve(args) => serve_cmd::run(args),
        Command::Replay(cmd) => replay_cmd::run(cmd),
        Command::Regress(cmd) => regress_cmd::run(cmd),
        Command::Jobs(cmd) => jobs_cmd::run(cmd),
        Command::Compile(args) => compile_cmd::run(args),
        Command::Approvals(cmd) => approvals_cmd::run(cmd),
        Command::Memory(cmd) => memory_cmd::run(cmd),
        Command::Handoff(cmd) => handoff_cmd::run(cmd),
        Command::Init(args) => packs_cmd::init(args),
        Command::Packs(cmd) => packs_cmd::run(cmd),
        Command::Cases(cmd) => cases_cmd::run(cmd),
        Command::Tokens(cmd) => tokens_cmd::run(cmd),
        Command::Audit(args) => tokens_cmd::audit_log(args),
        Command::Demo(DemoCommand::Seed { json }) => cases_cmd::seed(json),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::from(2)
        }
    }
}
