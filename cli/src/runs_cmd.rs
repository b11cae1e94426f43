//! `tollgate runs import | export | list | show | explain | verify`: the flight recorder's runs.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result, anyhow, bail};
use clap::{Args, Subcommand};
use tollgate_gateway::receipts::Renderer;
use tollgate_gateway::recorder::events::DecisionEvent;
use tollgate_gateway::recorder::format::RunFile;
use tollgate_gateway::recorder::otel::{OtlpImportOptions, runs_from_otlp_str};
use tollgate_gateway::recorder::{Recorder, render_timeline, short};

use crate::store_arg;

#[derive(Subcommand, Debug)]
pub enum RunsCommand {
    /// Import runs: run files (`tollgate.run/v1` JSON) or OpenTelemetry GenAI traces (OTLP
    /// JSON); all of a file or none of it.
    Import(ImportArgs),
    /// Write a run as a run file (to stdout, or `--output`).
    Export(ExportArgs),
    /// List recorded runs, newest first.
    List(JsonArg),
    /// Show a run as a readable timeline.
    Show(RunArg),
    /// Show a recorded decision with its proof or why-not, rendered from its receipt under the
    /// envelope versions and rule program it names.
    Explain(ExplainArgs),
    /// Recompute a run's hash chain; exit 1 and name every edited, missing or reordered event.
    Verify(RunArg),
}

#[derive(Args, Debug)]
pub struct ImportArgs {
    /// Run files or OTLP JSON files.
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// For OTLP traces: the scope the imported runs belong to.
    #[arg(long, default_value = "org:default")]
    scope: String,
    /// For OTLP traces: the runs' clearance.
    #[arg(long, default_value = "internal")]
    clearance: String,
    /// For OTLP traces: the task id (default: the trace or conversation id).
    #[arg(long)]
    task: Option<String>,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
pub struct ExportArgs {
    /// Run id.
    run: String,
    /// Write here instead of stdout.
    #[arg(long, short = 'o')]
    output: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct ExplainArgs {
    /// Run id.
    run: String,
    /// The `decision` event's sequence number (a tool call's answer gives it as `receipt.seq`).
    seq: u64,
    /// The decision as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
pub struct JsonArg {
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
pub struct RunArg {
    /// Run id.
    run: String,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

pub fn run(cmd: RunsCommand) -> Result<ExitCode> {
    let recorder = Recorder::new(store_arg::open()?);
    match cmd {
        RunsCommand::Import(a) => import(&recorder, a),
        RunsCommand::Export(a) => {
            let file = recorder.export(&a.run)?;
            let text = serde_json::to_string_pretty(&file)? + "\n";
            match a.output {
                Some(path) => std::fs::write(&path, text)
                    .with_context(|| format!("cannot write `{}`", path.display()))?,
                None => print!("{text}"),
            }
            Ok(ExitCode::SUCCESS)
        }
        RunsCommand::List(a) => {
            let runs = recorder.list()?;
            if a.json {
                println!("{}", serde_json::to_string_pretty(&runs)?);
            } else if runs.is_empty() {
                println!("no runs recorded\nhelp: `tollgate runs import fixtures/runs/*.json`");
            } else {
                let w = runs.iter().map(|r| r.id.len()).max().unwrap_or(3).max(3);
                let a = runs.iter().map(|r| r.agent.len()).max().unwrap_or(5).max(5);
                println!(
                    "{:<w$}  {:<a$}  {:<8} {:<10} {:>5} {:>6}  started",
                    "run", "agent", "task", "status", "steps", "events"
                );
                for r in runs {
                    println!(
                        "{:<w$}  {:<a$}  {:<8} {:<10} {:>5} {:>6}  {}",
                        r.id, r.agent, r.task, r.status, r.steps, r.events, r.started_at
                    );
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        RunsCommand::Show(a) => {
            let file = recorder.export(&a.run)?;
            if a.json {
                println!("{}", serde_json::to_string_pretty(&file)?);
            } else {
                print!("{}", render_timeline(&file));
            }
            Ok(ExitCode::SUCCESS)
        }
        RunsCommand::Explain(a) => explain(&recorder, &a),
        RunsCommand::Verify(a) => {
            let report = recorder.verify(&a.run)?;
            if a.json {
                println!("{}", serde_json::to_string_pretty(&report)?);
            } else if report.is_intact() {
                println!(
                    "run {}: {} events, chain intact, head {}",
                    report.run,
                    report.events,
                    short(&report.head)
                );
            } else {
                println!(
                    "run {}: the chain does not hold ({} problem(s))",
                    report.run,
                    report.problems.len()
                );
                for p in &report.problems {
                    let at = p.seq.map_or("run".to_string(), |s| format!("event {s}"));
                    println!("  {at:<10} {:<16} {}", p.kind, p.detail);
                }
            }
            Ok(if report.is_intact() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
    }
}

/// Renders one recorded decision (`tollgate runs explain RUN SEQ`).
fn explain(recorder: &Recorder, a: &ExplainArgs) -> Result<ExitCode> {
    let file = recorder.export(&a.run)?;
    let event = file
        .events
        .iter()
        .find(|e| e.seq == a.seq)
        .ok_or_else(|| anyhow!("run `{}` has no event {}", a.run, a.seq))?;
    let decided = event.read::<DecisionEvent>().ok_or_else(|| {
        anyhow!(
            "event {} of run `{}` is a `{}`, not a decision\nhelp: `tollgate runs show {}` lists its events; a tool call's answer names its decision as `receipt.seq`",
            a.seq,
            a.run,
            event.kind,
            a.run
        )
    })?;
    let mut renderer = Renderer::new(&file, Some(recorder.store()));
    let decision = renderer.render(a.seq, &decided).map_err(|e| {
        anyhow!(
            "the receipt of event {} cannot be rendered: {e}\nas recorded: {} by {}",
            a.seq,
            decided.decision.effect.as_str(),
            decided.decision.rules.join(", ")
        )
    })?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&decision)?);
    } else {
        print!("{}", decision.explain());
    }
    Ok(ExitCode::SUCCESS)
}

fn import(recorder: &Recorder, a: ImportArgs) -> Result<ExitCode> {
    // Parse and convert every file before storing anything.
    let mut runs = Vec::new();
    for path in &a.files {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read `{}`", path.display()))?;
        let value: serde_json::Value = match serde_json::from_str(&text) {
            Ok(v) => v,
            // OTLP exporters also write JSON lines: let the OTLP reader try.
            Err(_) if text.contains("resourceSpans") => serde_json::Value::Null,
            Err(e) => bail!("`{}` is not JSON: {e}", path.display()),
        };
        if value.is_null() || value.get("resourceSpans").is_some() {
            let options = OtlpImportOptions {
                scope: a.scope.clone(),
                clearance: a.clearance.clone(),
                task: a.task.clone(),
            };
            let converted = runs_from_otlp_str(&text, &options)
                .with_context(|| format!("`{}`", path.display()))?;
            runs.extend(converted.into_iter().map(|r| (path.clone(), r)));
        } else {
            let file: RunFile = serde_json::from_value(value)
                .with_context(|| format!("`{}` is not a run file", path.display()))?;
            runs.push((path.clone(), file));
        }
    }
    let mut summaries = Vec::new();
    for (path, file) in &runs {
        let summary = recorder
            .import(file)
            .with_context(|| format!("`{}`", path.display()))?;
        if !a.json {
            if summary.already_recorded {
                println!("{}: already recorded, unchanged", summary.run);
            } else {
                println!(
                    "{}: imported {} steps, {} events, head {}",
                    summary.run,
                    summary.steps,
                    summary.events,
                    short(&summary.head)
                );
            }
        }
        summaries.push(summary);
    }
    if a.json {
        println!("{}", serde_json::to_string_pretty(&summaries)?);
    }
    Ok(ExitCode::SUCCESS)
}
