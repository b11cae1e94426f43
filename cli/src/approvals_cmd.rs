//! `tollgate approvals list | approve | reject`: the approvals of gated tool calls, decided
//! locally on the same store a running gateway uses (its long polls see the answer).

use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, Subcommand};
use tollgate_gateway::approvals::{
    self, ApprovalAnswer, ApprovalError, ApprovalFilter, ApprovalState,
};
use tollgate_gateway::clock::rfc3339;
use tollgate_gateway::clock::{Clock, SystemClock};

use crate::store_arg;

#[derive(Subcommand, Debug)]
pub enum ApprovalsCommand {
    /// List approvals (pending ones by default).
    List(ListArgs),
    /// Approve a pending approval.
    #[command(
        after_help = "Examples:\n  tollgate approvals list\n  tollgate approvals approve apr-0001 --by alice --reason \"checked the command\""
    )]
    Approve(DecideArgs),
    /// Reject a pending approval.
    Reject(DecideArgs),
}

#[derive(Args, Debug)]
pub struct ListArgs {
    /// Only this run's.
    #[arg(long)]
    run: Option<String>,
    /// Only in this state (pending, approved, rejected, used, expired), or `all`.
    #[arg(long, default_value = "pending")]
    state: String,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
pub struct DecideArgs {
    /// The approval id (`apr-…`).
    id: String,
    /// Who decides (must be one of the rule's approvers when it names any).
    #[arg(long)]
    by: String,
    /// Why.
    #[arg(long, default_value = "")]
    reason: String,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

pub fn run(cmd: ApprovalsCommand) -> Result<ExitCode> {
    match cmd {
        ApprovalsCommand::List(a) => list(a),
        ApprovalsCommand::Approve(a) => decide(a, true),
        ApprovalsCommand::Reject(a) => decide(a, false),
    }
}

fn list(args: ListArgs) -> Result<ExitCode> {
    let state = match args.state.as_str() {
        "all" => None,
        s => match serde_json::from_value::<ApprovalState>(serde_json::Value::String(s.into())) {
            Ok(state) => Some(state),
            Err(_) => {
                eprintln!(
                    "error: `{s}` is not a state\n  help: use pending, approved, rejected, used, expired or all"
                );
                return Ok(ExitCode::from(2));
            }
        },
    };
    let store = store_arg::open()?;
    let now = SystemClock.now_ms();
    let list = approvals::list(
        &store,
        &ApprovalFilter {
            run: args.run,
            state,
            agent: None,
        },
        now,
    )?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&list)?);
        return Ok(ExitCode::SUCCESS);
    }
    if list.is_empty() {
        println!("no approvals");
    }
    for a in &list {
        println!(
            "{}  {:<8}  run {}  {} {}  by rule {}  expires {}{}",
            a.id,
            a.state.as_str(),
            a.run,
            a.tool,
            a.arguments,
            a.rules.join(", "),
            a.expires_at_rfc3339(),
            if a.approvers.is_empty() {
                String::new()
            } else {
                format!("  approvers {}", a.approvers.join(", "))
            }
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn decide(args: DecideArgs, approve: bool) -> Result<ExitCode> {
    let store = store_arg::open()?;
    let now = SystemClock.now_ms();
    let at = rfc3339(u64::try_from(now / 1000).unwrap_or(0));
    // The command line is the local operator: `--by` names the person deciding, and the
    // audit log keeps who ran it.
    let operator = crate::tokens_cmd::operator();
    let answer = ApprovalAnswer {
        approve,
        by: args.by,
        reason: args.reason,
        principal: Some(operator.id.clone()),
    };
    match approvals::decide(&store, &args.id, &answer, now, &at) {
        Ok(a) => {
            let action = if approve {
                "approvals approve"
            } else {
                "approvals reject"
            };
            tollgate_gateway::auth::audit::record_blocking(
                &store,
                &operator,
                at.clone(),
                format!("{action} --by {}", answer.by),
                a.id.clone(),
            )?;
            if args.json {
                println!("{}", serde_json::to_string_pretty(&a)?);
            } else {
                println!(
                    "{} {} by {}: {} {} (run {}, call {})",
                    a.id,
                    a.state.as_str(),
                    a.decided_by.as_deref().unwrap_or("?"),
                    a.tool,
                    a.arguments,
                    a.run,
                    a.call_id
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(e @ ApprovalError::Store(_)) => Err(e.into()),
        Err(e) => {
            eprintln!("error: {e}");
            Ok(ExitCode::from(match e {
                ApprovalError::NotFound(_) | ApprovalError::Invalid(_) => 2,
                _ => 1,
            }))
        }
    }
}
