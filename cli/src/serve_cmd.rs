//! `tollgate serve`: the HTTP gateway on loopback, over the embedded store.

use std::net::IpAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{Context, Result};
use clap::Args;
use tollgate_gateway::auth::jwt::JwtVerifier;
use tollgate_gateway::auth::tokens::TokenKey;
use tollgate_gateway::http::{AppState, ServeConfig, resolve_token, serve, write_private};
use tollgate_gateway::job_kinds::builtin_registry;
use tollgate_gateway::jobs::{JobQueue, Worker, WorkerConfig};
use tollgate_gateway::packs::PackRegistry;
use tollgate_gateway::providers::provider_from_env;
use tollgate_gateway::runtime::Runtime;

use crate::envelope_arg::{envelope_files, read_sources, report_errors};
use crate::store_arg;
use tollgate_gateway::policy::{PolicyStoreError, store_envelopes};

#[derive(Args, Debug)]
pub struct ServeArgs {
    /// Address to bind.
    #[arg(long, default_value = "127.0.0.1")]
    addr: IpAddr,
    /// Port (0 picks a free one; the chosen port is printed).
    #[arg(long, default_value_t = 8000)]
    port: u16,
    /// Largest accepted request body, in bytes.
    #[arg(long, default_value_t = tollgate_gateway::http::DEFAULT_BODY_LIMIT)]
    body_limit: usize,
    /// Envelope files or folders to store (as `tollgate policy store` does) before serving;
    /// invalid envelopes stop the start with their diagnostics.
    #[arg(long = "envelopes", short = 'e')]
    envelopes: Vec<std::path::PathBuf>,
    /// Do not run background jobs (memory distillation, replays) in this process; leave them
    /// to `tollgate jobs run`.
    #[arg(long)]
    no_worker: bool,
    /// Serve the MCP gateway at `/v1/mcp` with this configuration (the file `tollgate mcp
    /// proxy` takes; or `TOLLGATE_MCP_CONFIG`).
    #[arg(long)]
    mcp_config: Option<std::path::PathBuf>,
    /// A host name the gateway also answers to, at any port (repeat for several; or
    /// `TOLLGATE_ALLOWED_HOSTS`, comma-separated): the name clients reach it by behind a load
    /// balancer or a proxy (`--addr 0.0.0.0 --allow-host tollgate.internal`). Requests naming
    /// any other host, or sent from a page of another origin, are refused (DNS rebinding).
    #[arg(long = "allow-host", value_name = "NAME")]
    allow_hosts: Vec<String>,
}

pub fn run(args: ServeArgs) -> Result<ExitCode> {
    let mcp = match args
        .mcp_config
        .clone()
        .or_else(|| std::env::var_os("TOLLGATE_MCP_CONFIG").map(Into::into))
    {
        Some(path) => Some(crate::mcp_cmd::read(&path)?),
        None => None,
    };
    let store = store_arg::open()?;
    if !args.envelopes.is_empty() {
        let sources = read_sources(&envelope_files(&args.envelopes)?)?;
        match store_envelopes(&store, &sources) {
            Ok(stored) => {
                for s in stored.iter().filter(|s| s.new) {
                    eprintln!("tollgate: stored envelope {}", s.version.label());
                }
            }
            Err(PolicyStoreError::Envelopes(errors)) => {
                report_errors(&errors);
                return Ok(ExitCode::from(2));
            }
            Err(e) => return Err(e.into()),
        }
    }
    let token_dir = store.location().local_dir();
    let token = resolve_token(std::env::var("TOLLGATE_TOKEN").ok(), &token_dir)
        .context("cannot create the token file")?;
    let token_key = TokenKey::resolve(std::env::var("TOLLGATE_TOKEN_KEY").ok(), &token_dir)
        .context("cannot read or create the token key")?;
    let jwt = match JwtVerifier::from_env(&|k| std::env::var(k).ok()) {
        None => None,
        Some(Ok(verifier)) => {
            eprintln!("tollgate: JWTs accepted ({verifier:?})");
            Some(verifier)
        }
        Some(Err(e)) => {
            eprintln!("error: {e}");
            return Ok(ExitCode::from(2));
        }
    };
    let provider = provider_from_env()?;
    if provider.name() == "fake" {
        eprintln!(
            "tollgate: model calls use the deterministic fake provider (no provider key is set: set TOLLGATE_PROVIDER=openai and PROVIDER_API_KEY for a real one)"
        );
    }
    let packs = PackRegistry::from_env(&|k| std::env::var(k).ok());
    for p in packs.packs() {
        eprintln!(
            "tollgate: pack {} registered from {}",
            p.engine(),
            p.root.display()
        );
    }
    for u in packs.unregistered() {
        eprintln!(
            "tollgate: pack root {} is not registered (its cases stay read-only):\n{}",
            u.root,
            tollgate_gateway::packs::render(&u.faults)
        );
    }
    // The memory ranking columns load in the background, not on the first compile.
    let warming = store.clone();
    std::thread::spawn(move || {
        if let Err(e) = tollgate_gateway::memory::warm(&warming) {
            eprintln!("tollgate: the memory index did not load ahead of searches: {e}");
        }
    });
    let jobs = JobQueue::new(store.clone());
    let runtime = Runtime::new(store, Arc::from(provider))?;
    // The gateway runs the jobs its routes enqueue (a distillation, a replay) on a thread of
    // its own, stopped with the server.
    let stop = Arc::new(AtomicBool::new(false));
    let worker = if args.no_worker {
        None
    } else {
        let config = WorkerConfig {
            worker_id: format!("serve-{}", std::process::id()),
            ..WorkerConfig::default()
        };
        let worker =
            Worker::new(jobs, builtin_registry(), config).context("cannot start the job worker")?;
        let stop = stop.clone();
        Some(std::thread::spawn(move || {
            if let Err(e) = worker.run_until(&stop) {
                eprintln!("tollgate: the job worker stopped: {e}");
            }
        }))
    };
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    tokio.block_on(async move {
        let listener = tokio::net::TcpListener::bind((args.addr, args.port))
            .await
            .with_context(|| {
                format!(
                    "cannot listen on {}:{} (is another server using the port? start on another with --port N, or --port 0 for a free one, and point the browser at it)",
                    args.addr, args.port
                )
            })?;
        let local = listener.local_addr()?;
        let config = ServeConfig {
            addr: args.addr,
            port: local.port(),
            body_limit: args.body_limit,
            extra_hosts: allowed_hosts(&args.allow_hosts)?,
        };
        let mut state = AppState::new(Arc::new(runtime), &token, config)
            .with_packs(packs)
            .with_token_key(token_key);
        if let Some(verifier) = jwt {
            state = state.with_jwt(verifier);
        }
        if let Some(mcp) = mcp {
            eprintln!(
                "tollgate: MCP gateway at http://{local}/v1/mcp ({} server(s): {})",
                mcp.servers.len(),
                mcp.servers
                    .iter()
                    .map(|s| s.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            state = state.with_mcp(mcp);
        }
        // The address once, on stdout (scripts and tests that start the gateway on port 0
        // read it there); the rest of what a person needs on stderr.
        println!("listening on http://{local}");
        eprintln!(
            "tollgate: the bearer token is in {}, or TOLLGATE_TOKEN",
            token_dir.join("token").display()
        );
        if let Some(url) = state.dashboard_login_url()? {
            announce_dashboard(&url, &token_dir)?;
        }
        let served = serve(listener, state, shutdown_signal()).await;
        stop.store(true, Ordering::SeqCst);
        if let Some(worker) = worker {
            let _ = worker.join();
        }
        served?;
        eprintln!("tollgate: stopped");
        Ok(ExitCode::SUCCESS)
    })
}

/// Tells where the dashboard's login URL is. The URL carries the one-time login token, so it
/// is written to an owner-only file beside the token and printed only to a terminal, never
/// into a log that stderr was redirected to.
fn announce_dashboard(url: &str, token_dir: &std::path::Path) -> Result<()> {
    use std::io::IsTerminal as _;
    let path = token_dir.join(DASHBOARD_URL_FILE);
    std::fs::create_dir_all(token_dir)
        .and_then(|()| write_private(&path, url))
        .with_context(|| format!("cannot write {}", path.display()))?;
    if std::io::stderr().is_terminal() {
        eprintln!("tollgate: dashboard at {url}");
    } else {
        eprintln!(
            "tollgate: dashboard login URL in {} (owner-only; the token is one-time)",
            path.display()
        );
    }
    Ok(())
}

/// The file that holds the dashboard's login URL while the gateway runs.
const DASHBOARD_URL_FILE: &str = "dashboard-url";

/// Ctrl-C or SIGTERM.
async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = term => {},
    }
}

/// The host names of `--allow-host` and `TOLLGATE_ALLOWED_HOSTS`, each checked: a bare name
/// (letters, digits, `-`, `.`), no port, no scheme.
fn allowed_hosts(flags: &[String]) -> Result<Vec<String>> {
    let from_env = std::env::var("TOLLGATE_ALLOWED_HOSTS").unwrap_or_default();
    let mut hosts = Vec::new();
    for name in flags
        .iter()
        .map(String::as_str)
        .chain(from_env.split(','))
        .map(str::trim)
        .filter(|n| !n.is_empty())
    {
        let plain = name.len() <= 253
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.')
            && !name.starts_with(['-', '.']);
        if !plain {
            anyhow::bail!(
                "`{name}` is not a host name\n  help: give the bare name clients use, such as `tollgate.internal` (no scheme, no port)"
            );
        }
        hosts.push(name.to_ascii_lowercase());
    }
    Ok(hosts)
}
