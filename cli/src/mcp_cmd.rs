//! `tollgate mcp`: the MCP gateway on stdio (`proxy`) and the check of its configuration.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context as _, Result};
use clap::{Args, Subcommand};
use rmcp::ServiceExt;
use tollgate_gateway::mcp::config::{self, McpConfig};
use tollgate_gateway::mcp::front::{Front, SessionRun};
use tollgate_gateway::mcp::{pins, stdio};
use tollgate_gateway::providers::FakeProvider;
use tollgate_gateway::runtime::Runtime;

use crate::store_arg;

#[derive(Subcommand, Debug)]
pub enum McpCommand {
    /// The MCP server an agent's client launches instead of its servers: starts the upstream
    /// servers of the configuration, opens a run, and decides every tool call by the run's
    /// envelopes before an upstream sees it. Speaks MCP on stdin and stdout; logs go to
    /// stderr.
    Proxy(ProxyArgs),
    /// Check a configuration file: every fault with its line and column.
    Check(ConfigArgs),
    /// Tool pins: each upstream tool's definition as accepted, and those that changed since
    /// (refused until a person accepts them).
    #[command(subcommand)]
    Pins(PinsCommand),
}

#[derive(Subcommand, Debug)]
pub enum PinsCommand {
    /// The pinned tools, with the changed definitions waiting for acceptance.
    List(PinsListArgs),
    /// Accept a tool's changed definition (after reading it with `list --changed`).
    Accept(PinsAcceptArgs),
}

#[derive(Args, Debug)]
pub struct PinsListArgs {
    /// Only the tools whose definition changed.
    #[arg(long)]
    changed: bool,
    /// Machine-readable output (with the definitions).
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
pub struct PinsAcceptArgs {
    /// The tool, `SERVER.TOOL`.
    tool: String,
    /// Who accepts it.
    #[arg(long)]
    by: String,
    /// The changed definition's hash (or its first characters) as reviewed: refused when the
    /// definition waiting has another.
    #[arg(long)]
    hash: Option<String>,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
pub struct ProxyArgs {
    /// The configuration file (YAML or JSON): `servers` and the `run` each session opens.
    #[arg(long, short)]
    config: PathBuf,
    /// Join this running run instead of opening one (it is left running when the session
    /// ends).
    #[arg(long)]
    run: Option<String>,
}

#[derive(Args, Debug)]
pub struct ConfigArgs {
    /// The configuration file (YAML or JSON): `servers` and the `run` each session opens.
    #[arg(long, short)]
    config: PathBuf,
}

pub fn run(cmd: McpCommand) -> Result<ExitCode> {
    match cmd {
        McpCommand::Check(args) => {
            let config = read(&args.config)?;
            println!(
                "{}: ok ({} server(s): {}; runs as agent `{}` in `{}`)",
                args.config.display(),
                config.servers.len(),
                config
                    .servers
                    .iter()
                    .map(|s| s.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                config.run.agent,
                config.run.scope
            );
            Ok(ExitCode::SUCCESS)
        }
        McpCommand::Proxy(args) => proxy(&args.config, args.run),
        McpCommand::Pins(PinsCommand::List(a)) => pins_list(&a),
        McpCommand::Pins(PinsCommand::Accept(a)) => pins_accept(&a),
    }
}

fn pins_list(a: &PinsListArgs) -> Result<ExitCode> {
    let store = store_arg::open()?;
    let listed = pins::list(&store, a.changed)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&listed)?);
        return Ok(ExitCode::SUCCESS);
    }
    if listed.is_empty() {
        println!(
            "{}",
            if a.changed {
                "no tool definition waits for acceptance"
            } else {
                "no pinned tools yet (tools are pinned when `tollgate mcp proxy` first lists them)"
            }
        );
    }
    for p in &listed {
        let short = |h: &str| h.get(..12).unwrap_or(h).to_string();
        match &p.changed {
            None => println!(
                "{:<40} {}  accepted by {} at {}",
                p.name(),
                short(&p.hash),
                p.accepted_by,
                p.accepted_at
            ),
            Some(c) => {
                println!(
                    "{:<40} {}  CHANGED to {} at {}  (accept: tollgate mcp pins accept {} --by NAME --hash {})",
                    p.name(),
                    short(&p.hash),
                    short(&c.hash),
                    c.at,
                    p.name(),
                    short(&c.hash)
                );
                for (what, before, after) in pins::differences(&p.definition, &c.definition) {
                    println!("    {what}:\n      - {before}\n      + {after}");
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn pins_accept(a: &PinsAcceptArgs) -> Result<ExitCode> {
    let Some((server, tool)) = a.tool.split_once('.') else {
        anyhow::bail!(
            "`{}` is not a tool name\n  help: name it `SERVER.TOOL`, as `tollgate mcp pins list` does",
            a.tool
        );
    };
    if a.by.trim().is_empty() {
        anyhow::bail!("`--by` must name who accepts the definition");
    }
    let store = store_arg::open()?;
    let at = tollgate_gateway::clock::now_rfc3339();
    let pin = pins::accept(&store, server, tool, a.hash.as_deref(), &a.by, &at)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&pin)?);
    } else {
        println!(
            "accepted {} ({}) by {}",
            pin.name(),
            pin.hash.get(..12).unwrap_or(&pin.hash),
            pin.accepted_by
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// The configuration in `path`, or its faults with line and column.
pub fn read(path: &PathBuf) -> Result<McpConfig> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read `{}`", path.display()))?;
    config::parse(&text).map_err(|faults| anyhow::anyhow!("{}: {faults}", path.display()))
}

fn proxy(path: &PathBuf, join: Option<String>) -> Result<ExitCode> {
    let config = Arc::new(read(path)?);
    let store = store_arg::open()?;
    let runtime = Arc::new(Runtime::new(store, Arc::new(FakeProvider::new()))?);
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    tokio.block_on(async move {
        let how = match join {
            Some(run) => SessionRun::Join {
                run,
                principal: None,
            },
            None => SessionRun::Open(None),
        };
        let front = Front::start(runtime, config, how, None).await?;
        eprintln!(
            "tollgate: mcp: run {} opened; serving MCP on stdio",
            front.run()
        );
        let session = front
            .clone()
            .serve(stdio::framed(tokio::io::stdin(), tokio::io::stdout()))
            .await
            .context("the MCP client did not complete the handshake")?;
        let ended = session.waiting().await;
        let status = if ended.is_ok() { "succeeded" } else { "failed" };
        front.finish(status).await?;
        eprintln!("tollgate: mcp: run {} finished ({status})", front.run());
        Ok(ExitCode::SUCCESS)
    })
}
