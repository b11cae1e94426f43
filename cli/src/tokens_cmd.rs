//! `tollgate tokens create | list | revoke` and `tollgate audit`: credentials per kind of
//! principal, made on the store's machine (the command line acts as the local operator, an
//! admin: whoever can open the database can change anything in it), and the log of what
//! approvers and admins did.

use std::process::ExitCode;

use anyhow::{Context as _, Result};
use clap::{Args, Subcommand};
use tollgate_gateway::auth::audit;
use tollgate_gateway::auth::tokens::{self, KEY_FILE, NewToken, TokenError, TokenKey};
use tollgate_gateway::auth::{Principal, PrincipalKind};
use tollgate_gateway::clock::{Clock, SystemClock, now_rfc3339};
use tollgate_gateway::rules::envelope::Level;
use tollgate_gateway::store::Store;

use crate::store_arg;

#[derive(Subcommand, Debug)]
pub enum TokensCommand {
    /// Create a token for an agent, an approver or an admin; it is printed once.
    Create(CreateArgs),
    /// List tokens (never their secrets).
    List(ListArgs),
    /// Revoke a token: its next use is refused.
    Revoke(RevokeArgs),
}

#[derive(Args, Debug)]
pub struct CreateArgs {
    /// `agent`, `approver` or `admin`.
    #[arg(long)]
    kind: String,
    /// The agent's name (with `--kind agent`).
    #[arg(long, conflicts_with = "name")]
    agent: Option<String>,
    /// The person's name (approvers and admins: the name approval rules list).
    #[arg(long)]
    name: Option<String>,
    /// Agents: every run they open must lie within this scope.
    #[arg(long)]
    max_scope: Option<String>,
    /// Agents: the highest clearance of their runs (public, internal, confidential, secret).
    #[arg(long)]
    max_clearance: Option<String>,
    /// How long it works: `30d`, `12h`, `45m`, `90s` (default: until revoked).
    #[arg(long)]
    expires: Option<String>,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
pub struct ListArgs {
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
pub struct RevokeArgs {
    /// The token's id (`tok_…`).
    id: String,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
pub struct AuditArgs {
    /// At most this many entries, newest first.
    #[arg(long, default_value_t = 50)]
    limit: u32,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

pub fn run(cmd: TokensCommand) -> Result<ExitCode> {
    match cmd {
        TokensCommand::Create(a) => create(a),
        TokensCommand::List(a) => list(a),
        TokensCommand::Revoke(a) => revoke(a),
    }
}

/// The local operator: the OS user running the command.
pub(crate) fn operator() -> Principal {
    let user = std::env::var("USER")
        .or_else(|_| std::env::var("USERNAME"))
        .unwrap_or_else(|_| "operator".into());
    Principal::local(&user)
}

/// The token key beside the database (or `TOLLGATE_TOKEN_KEY`), as `tollgate serve` reads it.
fn key(store: &Store) -> Result<TokenKey> {
    let dir = store.location().local_dir();
    TokenKey::resolve(std::env::var("TOLLGATE_TOKEN_KEY").ok(), &dir)
        .with_context(|| format!("cannot read or create {}", dir.join(KEY_FILE).display()))
}

fn usage(message: &str) -> Result<ExitCode> {
    eprintln!("error: {message}");
    Ok(ExitCode::from(2))
}

fn create(args: CreateArgs) -> Result<ExitCode> {
    let Some(kind) = PrincipalKind::parse(&args.kind) else {
        return usage(&format!(
            "`{}` is not a kind\n  help: use `agent`, `approver` or `admin`",
            args.kind
        ));
    };
    let name = match (kind, args.agent, args.name) {
        (PrincipalKind::Agent, Some(agent), None) => agent,
        (PrincipalKind::Agent, None, _) => {
            return usage("an agent token names its agent\n  help: add `--agent NAME`");
        }
        (_, Some(_), _) => {
            return usage(&format!(
                "`--agent` names an agent; a {kind} token names a person\n  help: use `--name NAME`"
            ));
        }
        (_, None, Some(name)) => name,
        (_, None, None) => {
            return usage(&format!(
                "a {kind} token names its person\n  help: add `--name NAME` (the name approval rules list)"
            ));
        }
    };
    let max_clearance = match args.max_clearance.as_deref() {
        None => None,
        Some(text) => match Level::ALL.into_iter().find(|l| l.as_str() == text) {
            Some(level) => Some(level),
            None => {
                return usage(&format!(
                    "`{text}` is not a clearance\n  help: use public, internal, confidential or secret"
                ));
            }
        },
    };
    let now_ms = SystemClock.now_ms();
    let expires_at_ms = match args.expires.as_deref() {
        None => None,
        Some(text) => match tokens::parse_duration_ms(text).and_then(|d| now_ms.checked_add(d)) {
            Some(at) => Some(at),
            None => {
                return usage(&format!(
                    "`{text}` is not a duration\n  help: write `30d`, `12h`, `45m` or `90s`"
                ));
            }
        },
    };
    let new = NewToken {
        kind,
        name,
        max_scope: args.max_scope,
        max_clearance,
        expires_at_ms,
    };
    let store = store_arg::open()?;
    let key = key(&store)?;
    let who = operator();
    let (record, text) = match tokens::create(&store, &key, &new, &who, &now_rfc3339()) {
        Ok(made) => made,
        Err(TokenError::Invalid(m)) => return usage(&m),
        Err(e) => return Err(e.into()),
    };
    audit::record_blocking(
        &store,
        &who,
        now_rfc3339(),
        "tokens create".into(),
        record.id.clone(),
    )?;
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({"token": text, "record": record}))?
        );
    } else {
        println!("{text}");
        eprintln!(
            "tollgate: token {} for {} `{}` (shown once: keep it now; `tollgate tokens revoke {}` ends it)",
            record.id, record.kind, record.name, record.id
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn list(args: ListArgs) -> Result<ExitCode> {
    let store = store_arg::open()?;
    let list = tokens::list(&store)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&list)?);
        return Ok(ExitCode::SUCCESS);
    }
    if list.is_empty() {
        println!("no tokens (`tollgate tokens create --kind agent --agent NAME` makes one)");
    }
    for t in &list {
        let bounds = match (&t.max_scope, t.max_clearance) {
            (None, None) => String::new(),
            (scope, clearance) => format!(
                " scope {} clearance {}",
                scope.as_deref().unwrap_or("any"),
                clearance.map_or("any", Level::as_str)
            ),
        };
        let state = match (&t.revoked_at, t.expires_at_ms) {
            (Some(at), _) => format!(" revoked {at}"),
            (None, Some(ms)) if ms <= SystemClock.now_ms() => " expired".into(),
            _ => String::new(),
        };
        println!(
            "{}  {:8}  {}{bounds}  created {} by {}{state}",
            t.id, t.kind, t.name, t.created_at, t.created_by
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn revoke(args: RevokeArgs) -> Result<ExitCode> {
    let store = store_arg::open()?;
    let who = operator();
    let record = match tokens::revoke(&store, &args.id, &who, &now_rfc3339()) {
        Ok(record) => record,
        Err(TokenError::NotFound(id)) => {
            return usage(&format!(
                "no token `{id}`\n  help: `tollgate tokens list` shows them"
            ));
        }
        Err(e) => return Err(e.into()),
    };
    audit::record_blocking(
        &store,
        &who,
        now_rfc3339(),
        "tokens revoke".into(),
        record.id.clone(),
    )?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&record)?);
    } else {
        println!("revoked {} ({} `{}`)", record.id, record.kind, record.name);
    }
    Ok(ExitCode::SUCCESS)
}

/// `tollgate audit`.
pub fn audit_log(args: AuditArgs) -> Result<ExitCode> {
    let store = store_arg::open()?;
    let entries = audit::page(&store, None, args.limit.clamp(1, 10_000))?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&entries)?);
        return Ok(ExitCode::SUCCESS);
    }
    for e in &entries {
        let status = if e.status == 0 {
            String::new()
        } else {
            format!(" → {}", e.status)
        };
        println!(
            "{:>6}  {}  {}:{} ({})  {} {}{status}",
            e.seq, e.at, e.kind, e.name, e.principal, e.action, e.target
        );
    }
    Ok(ExitCode::SUCCESS)
}
