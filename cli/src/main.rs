//! `tollgate`: the command line. Parses flags, validates them into a command, then acts.
//!
//! Exit codes: 0 ok; 1 a check failed or evaluation hit a limit; 2 usage or input error
//! (bad program, bad facts, missing files).

mod policy_cmd;
mod rules_cmd;

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
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Rules(cmd) => rules_cmd::run(cmd),
        Command::Policy(cmd) => policy_cmd::run(cmd),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::from(2)
        }
    }
}
