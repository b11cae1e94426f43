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
mod cover_cmd;
mod db_cmd;
mod docs_cmd;
mod envelope_arg;
#[cfg(test)]
mod guide_commands;
mod handoff_cmd;
mod jobs_cmd;
mod mcp_cmd;
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
mod schema_reference;
mod serve_cmd;
mod simulate_cmd;
mod store_arg;
mod tokens_cmd;

use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

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
    #[command(
        after_help = "Examples:\n  tollgate serve --envelopes fixtures/envelopes\n  tollgate serve --port 0 --no-worker        # a free port, printed; jobs left to `tollgate jobs run`"
    )]
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
    /// The MCP gateway: `tollgate mcp proxy --config FILE` is the MCP server a client
    /// launches in front of its servers; `check` reads a configuration.
    #[command(subcommand)]
    Mcp(mcp_cmd::McpCommand),
    /// Cover: statically inspect an existing Python agent codebase (nothing of it is
    /// imported or run): its agents, tools, model calls and the side effects of each tool.
    #[command(subcommand)]
    Cover(cover_cmd::CoverCommand),
    /// Demo data: `tollgate demo seed` opens demo cases of the intake_review pack.
    #[command(subcommand)]
    Demo(DemoCommand),
    /// Print the completion script for a shell (bash, zsh, fish, powershell, elvish).
    Completions(docs_cmd::CompletionsArgs),
    /// Write the man pages: one for tollgate and one for each of its commands.
    Man(docs_cmd::ManArgs),
    /// References generated from the code: `cli`, every command and flag as Markdown.
    #[command(subcommand)]
    Reference(docs_cmd::ReferenceCommand),
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
    quiet_on_closed_pipe();
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
        Command::Mcp(cmd) => mcp_cmd::run(cmd),
        Command::Cover(cmd) => cover_cmd::run(cmd),
        Command::Demo(DemoCommand::Seed { json }) => cases_cmd::seed(json),
        Command::Completions(args) => docs_cmd::completions(args, Cli::command()),
        Command::Man(args) => docs_cmd::man(args, Cli::command()),
        Command::Reference(cmd) => docs_cmd::reference(cmd, Cli::command()),
    };
    match result {
        Ok(code) => code,
        // The reader went away (`| head`): the command is done, as every Unix tool's is.
        Err(err) if closed_pipe(&err) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::from(2)
        }
    }
}

/// A command whose output is piped into a reader that stops early (`tollgate memory list |
/// head -1`) ends quietly with success, as ripgrep does, instead of panicking in `println!`.
/// Rust ignores SIGPIPE, so a write to a closed pipe fails with `BrokenPipe`, and `println!`
/// panics on it; restoring the signal's default needs `unsafe` (forbidden here) and std's
/// `-Zon-broken-pipe` is unstable. So the panic hook ends the process at that one panic, and
/// `main` treats an error caused by a closed pipe as the end.
fn quiet_on_closed_pipe() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let message = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or("");
        if is_closed_pipe_panic(message) {
            std::process::exit(0);
        }
        default(info);
    }));
}

/// Whether a panic is std's on writing to a closed standard output or error.
fn is_closed_pipe_panic(message: &str) -> bool {
    (message.starts_with("failed printing to stdout")
        || message.starts_with("failed printing to stderr"))
        && message.contains("Broken pipe")
}

/// Whether an error was caused by writing to a closed pipe.
fn closed_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_std_s_closed_pipe_panics_end_the_command_quietly() {
        assert!(is_closed_pipe_panic(
            "failed printing to stdout: Broken pipe (os error 32)"
        ));
        assert!(!is_closed_pipe_panic(
            "failed printing to stdout: disk full"
        ));
        assert!(!is_closed_pipe_panic("index out of bounds: Broken pipe"));
        let io = std::io::Error::from(std::io::ErrorKind::BrokenPipe);
        assert!(closed_pipe(&anyhow::Error::from(io).context("writing")));
        assert!(!closed_pipe(&anyhow::anyhow!("no such run")));
    }
}
