//! `tollgate mcp`: the MCP gateway on stdio (`proxy`) and the check of its configuration.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context as _, Result};
use clap::{Args, Subcommand};
use rmcp::ServiceExt;
use tollgate_gateway::mcp::config::{self, McpConfig};
use tollgate_gateway::mcp::front::Front;
use tollgate_gateway::providers::FakeProvider;
use tollgate_gateway::runtime::Runtime;

use crate::store_arg;

#[derive(Subcommand, Debug)]
pub enum McpCommand {
    /// The MCP server an agent's client launches instead of its servers: starts the upstream
    /// servers of the configuration, opens a run, and decides every tool call by the run's
    /// envelopes before an upstream sees it. Speaks MCP on stdin and stdout; logs go to
    /// stderr.
    Proxy(ConfigArgs),
    /// Check a configuration file: every fault with its line and column.
    Check(ConfigArgs),
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
        McpCommand::Proxy(args) => proxy(&args.config),
    }
}

fn read(path: &PathBuf) -> Result<McpConfig> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read `{}`", path.display()))?;
    config::parse(&text).map_err(|faults| anyhow::anyhow!("{}: {faults}", path.display()))
}

fn proxy(path: &PathBuf) -> Result<ExitCode> {
    let config = Arc::new(read(path)?);
    let store = store_arg::open()?;
    let runtime = Arc::new(Runtime::new(store, Arc::new(FakeProvider::new()))?);
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    tokio.block_on(async move {
        let front = Front::start(runtime, config).await?;
        eprintln!(
            "tollgate: mcp: run {} opened; serving MCP on stdio",
            front.run()
        );
        let session = front
            .clone()
            .serve(rmcp::transport::stdio())
            .await
            .context("the MCP client did not complete the handshake")?;
        let ended = session.waiting().await;
        let status = if ended.is_ok() { "succeeded" } else { "failed" };
        front.finish(status).await?;
        eprintln!("tollgate: mcp: run {} finished ({status})", front.run());
        Ok(ExitCode::SUCCESS)
    })
}
