//! `tollgate jobs list | show | enqueue | cancel | run`: the background job queue in the store,
//! and a worker that runs its jobs in the foreground.

use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use tollgate_gateway::clock::{Clock, SystemClock, rfc3339};
use tollgate_gateway::job_kinds::builtin_registry;
use tollgate_gateway::jobs::{
    AfterFailure, EnqueueOptions, JobId, JobQueue, JobRecord, JobState, RunResult, Worker,
    WorkerConfig, WorkerEvent,
};

use crate::store_arg;

#[derive(Subcommand, Debug)]
pub enum JobsCommand {
    /// List jobs, newest first.
    List(ListArgs),
    /// Show one job: its state, progress, result and every attempt.
    Show(ShowArgs),
    /// Add a job to the queue.
    Enqueue(EnqueueArgs),
    /// Cancel a job that has not finished.
    Cancel(ShowArgs),
    /// Run a worker in the foreground, printing progress to stderr. A worker that is killed
    /// leaves its job to the next worker once its lease runs out.
    Run(RunArgs),
}

#[derive(Args, Debug)]
pub struct ListArgs {
    /// Only jobs in this state (queued, leased, succeeded, failed, dead, cancelled).
    #[arg(long, value_parser = parse_state)]
    state: Option<JobState>,
    /// At most this many.
    #[arg(long, default_value_t = 50)]
    limit: usize,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
pub struct ShowArgs {
    /// The job id.
    #[arg(value_parser = parse_id)]
    id: JobId,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
pub struct EnqueueArgs {
    /// The job kind (`sleep` is built in: `{"ms": N, "steps": K}`).
    kind: String,
    /// The payload, as JSON.
    #[arg(long, default_value = "{}")]
    payload: String,
    /// Attempts before the job is dead.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    max_attempts: u32,
    /// Do not run it before this many seconds from now.
    #[arg(long)]
    delay_seconds: Option<u64>,
    /// Return the unfinished job of the same kind with this key instead of adding another.
    #[arg(long)]
    dedupe_key: Option<String>,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
pub struct RunArgs {
    /// Run at most one job, then exit (1 if it failed).
    #[arg(long)]
    once: bool,
    /// Only these kinds, comma-separated (default: every kind this binary knows).
    #[arg(long, value_delimiter = ',')]
    kinds: Vec<String>,
    /// How long a lease lasts without progress; a killed worker's job waits this long.
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..))]
    lease_seconds: u64,
    /// The name recorded on this worker's leases (default `worker-PID`).
    #[arg(long)]
    worker_id: Option<String>,
    /// Exit once no job of its kinds is left: none queued, leased or waiting to retry.
    #[arg(long)]
    idle_exit: bool,
    /// How often to look for work when idle, in milliseconds.
    #[arg(long, default_value_t = 500, value_parser = clap::value_parser!(u64).range(1..))]
    poll_ms: u64,
    /// Print what the worker did as JSON on stdout when it exits.
    #[arg(long)]
    json: bool,
}

fn parse_state(s: &str) -> std::result::Result<JobState, String> {
    s.parse()
        .map_err(|e: tollgate_gateway::jobs::JobError| e.to_string())
}

fn parse_id(s: &str) -> std::result::Result<JobId, String> {
    s.parse()
        .map_err(|e: tollgate_gateway::jobs::JobError| e.to_string())
}

pub fn run(cmd: JobsCommand) -> Result<ExitCode> {
    let queue = JobQueue::new(store_arg::open()?);
    match cmd {
        JobsCommand::List(a) => list(&queue, &a),
        JobsCommand::Show(a) => show(&queue, &a),
        JobsCommand::Enqueue(a) => enqueue(&queue, a),
        JobsCommand::Cancel(a) => {
            let was = queue.cancel(a.id)?;
            if a.json {
                println!("{}", serde_json::json!({"id": a.id, "was": was}));
            } else {
                println!("cancelled job {} (it was {was})", a.id);
            }
            Ok(ExitCode::SUCCESS)
        }
        JobsCommand::Run(a) => run_worker(queue, a),
    }
}

fn list(queue: &JobQueue, args: &ListArgs) -> Result<ExitCode> {
    let jobs = queue.list(args.state, args.limit)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&jobs)?);
        return Ok(ExitCode::SUCCESS);
    }
    if jobs.is_empty() {
        println!("no jobs");
        return Ok(ExitCode::SUCCESS);
    }
    let now = SystemClock.now_ms();
    let header = ["ID", "KIND", "STATE", "ATTEMPTS", "PROGRESS", "UPDATED"].map(String::from);
    let rows: Vec<[String; 6]> = jobs
        .iter()
        .map(|j| {
            [
                j.id.to_string(),
                j.kind.clone(),
                state_label(j, now),
                format!("{}/{}", j.attempts, j.max_attempts),
                j.progress
                    .as_ref()
                    .map(|p| format!("{}/{} {}", p.done, p.total, p.message))
                    .unwrap_or_default(),
                time(j.updated_at_ms),
            ]
        })
        .collect();
    let mut widths = header.clone().map(|h| h.len());
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    for row in std::iter::once(&header).chain(&rows) {
        let cells: Vec<String> = row
            .iter()
            .zip(widths)
            .map(|(cell, w)| format!("{cell:<w$}"))
            .collect();
        println!("{}", cells.join("  ").trim_end());
    }
    Ok(ExitCode::SUCCESS)
}

/// The state, with who holds a lease and whether it has run out.
fn state_label(job: &JobRecord, now: i64) -> String {
    match (job.state, &job.leased_by, job.leased_until_ms) {
        (JobState::Leased, Some(worker), Some(until)) if until < now => {
            format!("leased by {worker} (expired)")
        }
        (JobState::Leased, Some(worker), _) => format!("leased by {worker}"),
        (state, ..) => state.to_string(),
    }
}

fn show(queue: &JobQueue, args: &ShowArgs) -> Result<ExitCode> {
    let job = queue.get(args.id)?;
    let history = queue.attempts(args.id)?;
    if args.json {
        let doc = serde_json::json!({"job": job, "history": history});
        println!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(ExitCode::SUCCESS);
    }
    let now = SystemClock.now_ms();
    println!("job {} ({}): {}", job.id, job.kind, state_label(&job, now));
    println!("payload: {}", job.payload);
    println!("attempts: {} of {}", job.attempts, job.max_attempts);
    if let Some(p) = &job.progress {
        println!(
            "progress: {}/{} {} (at {})",
            p.done,
            p.total,
            p.message,
            time(p.at_ms)
        );
    }
    if job.state == JobState::Failed {
        println!("retry at: {}", time(job.run_after_ms));
    }
    if let Some(result) = &job.result {
        println!("result: {result}");
    }
    if let Some(error) = &job.last_error {
        println!("last error: {error}");
    }
    println!("created: {}", time(job.created_at_ms));
    if let Some(at) = job.finished_at_ms {
        println!("finished: {}", time(at));
    }
    for a in &history {
        let error = a
            .error
            .as_deref()
            .map(|e| format!(": {e}"))
            .unwrap_or_default();
        println!(
            "attempt {} by {} at {}: {}{error}",
            a.attempt,
            a.worker,
            time(a.leased_at_ms),
            a.outcome.as_str()
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn enqueue(queue: &JobQueue, args: EnqueueArgs) -> Result<ExitCode> {
    let payload: serde_json::Value = serde_json::from_str(&args.payload)
        .with_context(|| format!("`--payload` is not JSON: `{}`", args.payload))?;
    if !builtin_registry().kinds().contains(&args.kind.as_str()) {
        eprintln!(
            "warning: this binary has no handler for job kind `{}`; only a worker that registers it will run the job",
            args.kind
        );
    }
    let run_after_ms = args.delay_seconds.map(|s| {
        SystemClock
            .now_ms()
            .saturating_add(i64::try_from(s.saturating_mul(1000)).unwrap_or(i64::MAX))
    });
    let id = queue.enqueue(
        &args.kind,
        payload,
        EnqueueOptions {
            max_attempts: args.max_attempts,
            run_after_ms,
            dedupe_key: args.dedupe_key,
        },
    )?;
    if args.json {
        println!("{}", serde_json::json!({"id": id, "kind": args.kind}));
    } else {
        println!("enqueued job {id} ({})", args.kind);
    }
    Ok(ExitCode::SUCCESS)
}

fn run_worker(queue: JobQueue, args: RunArgs) -> Result<ExitCode> {
    let mut config = WorkerConfig {
        kinds: args.kinds,
        lease_for: Duration::from_secs(args.lease_seconds),
        poll_interval: Duration::from_millis(args.poll_ms),
        ..WorkerConfig::default()
    };
    if let Some(id) = args.worker_id {
        config.worker_id = id;
    }
    let worker_id = config.worker_id.clone();
    let worker = Worker::new(queue, builtin_registry(), config)?.on_event(print_event);
    eprintln!("{worker_id}: running {} jobs", worker.kinds().join(", "));
    if args.once {
        let report = worker.run_once()?;
        if args.json {
            println!("{}", serde_json::to_string_pretty(&report)?);
        }
        return Ok(match report {
            None => {
                eprintln!("{worker_id}: no job is ready");
                ExitCode::SUCCESS
            }
            Some(r) if r.result == RunResult::Succeeded => ExitCode::SUCCESS,
            Some(_) => ExitCode::from(1),
        });
    }
    // Nothing sets the flag: the loop ends when the queue drains (`--idle-exit`) or the
    // process is stopped, and a stopped worker's lease simply runs out.
    let stop = AtomicBool::new(false);
    let stats = if args.idle_exit {
        worker.run_until_drained(&stop)?
    } else {
        worker.run_until(&stop)?
    };
    eprintln!(
        "{worker_id}: stopping: {} succeeded, {} failed attempts, {} lost leases",
        stats.succeeded, stats.failed, stats.lost
    );
    if args.json {
        println!("{}", serde_json::to_string_pretty(&stats)?);
    }
    Ok(ExitCode::SUCCESS)
}

/// One line on stderr per event.
fn print_event(event: &WorkerEvent) {
    let line = match event {
        WorkerEvent::Leased {
            id,
            kind,
            attempt,
            max_attempts,
        } => format!("job {id} ({kind}): leased, attempt {attempt} of {max_attempts}"),
        WorkerEvent::Progress {
            id,
            kind,
            done,
            total,
            message,
        } => format!("job {id} ({kind}): {done}/{total} {message}"),
        WorkerEvent::Finished { id, kind, result } => match result {
            RunResult::Succeeded => format!("job {id} ({kind}): succeeded"),
            RunResult::Failed {
                error,
                after: AfterFailure::Retry { at_ms },
            } => format!(
                "job {id} ({kind}): failed, retry at {}: {error}",
                time(*at_ms)
            ),
            RunResult::Failed {
                error,
                after: AfterFailure::Dead,
            } => format!("job {id} ({kind}): failed for good: {error}"),
            RunResult::LeaseLost { error } => format!("job {id} ({kind}): abandoned: {error}"),
        },
    };
    eprintln!("{line}");
}

/// Milliseconds since the epoch as RFC 3339 (seconds).
fn time(ms: i64) -> String {
    rfc3339(u64::try_from(ms / 1000).unwrap_or(0))
}
