//! `tollgate cover`: the static inspection of an existing Python agent codebase (issue 35).
//! `inspect` parses the code (nothing is imported, run or sent anywhere) and writes the report
//! to `.tollgate/cover/latest.json`, or where `--output` says.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use tollgate_gateway::cover::{self, Report};

#[derive(Subcommand, Debug)]
pub enum CoverCommand {
    /// Inspect a codebase from its entrypoint: agents and their wiring, tools with their
    /// parameters, model calls, the side effects inside each tool, and what could not be
    /// resolved. Writes the report (`tollgate.cover/v1`) to `.tollgate/cover/latest.json`,
    /// and a draft envelope per agent to `.tollgate/cover/envelopes/`.
    Inspect(InspectArgs),
}

#[derive(Args, Debug)]
pub struct InspectArgs {
    /// The folder holding the agent's Python code.
    path: PathBuf,
    /// `module:object`, the module dotted from PATH (`support.app:triage_agent`).
    #[arg(long)]
    entrypoint: String,
    /// Where to write the report (default `.tollgate/cover/latest.json`).
    #[arg(long)]
    output: Option<PathBuf>,
    /// Print the report as JSON instead of a summary.
    #[arg(long)]
    json: bool,
}

pub fn run(cmd: CoverCommand) -> Result<ExitCode> {
    match cmd {
        CoverCommand::Inspect(args) => inspect(args),
    }
}

fn inspect(args: InspectArgs) -> Result<ExitCode> {
    let report = cover::inspect(&args.path, &args.entrypoint)?;
    let out = args
        .output
        .unwrap_or_else(|| PathBuf::from(cover::LATEST_REPORT));
    if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("cannot create `{}`", dir.display()))?;
    }
    let text = serde_json::to_string_pretty(&report)? + "\n";
    // Written whole or not at all: a reader never sees half a report.
    let tmp = out.with_extension("json.tmp");
    std::fs::write(&tmp, &text).with_context(|| format!("cannot write `{}`", tmp.display()))?;
    std::fs::rename(&tmp, &out).with_context(|| format!("cannot write `{}`", out.display()))?;
    let drafts = write_drafts(&out, &report)?;
    if args.json {
        print!("{text}");
    } else {
        print!("{}", summary(&report));
        println!("report: {}", out.display());
        for d in &drafts {
            println!("draft envelope: {}", d.display());
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Writes a draft envelope per agent with tools into `envelopes/` beside the report, in place
/// of the drafts of an earlier inspection.
fn write_drafts(report_path: &std::path::Path, report: &Report) -> Result<Vec<PathBuf>> {
    let dir = report_path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."))
        .join("envelopes");
    if let Ok(entries) = std::fs::read_dir(&dir) {
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with("cover-") && name.ends_with(".yaml") {
                std::fs::remove_file(e.path())
                    .with_context(|| format!("cannot remove the old draft `{name}`"))?;
            }
        }
    }
    let drafts = cover::envelope::drafts(report);
    if drafts.is_empty() {
        return Ok(Vec::new());
    }
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create `{}`", dir.display()))?;
    let mut written = Vec::new();
    for d in drafts {
        let path = dir.join(&d.file);
        std::fs::write(&path, &d.text)
            .with_context(|| format!("cannot write `{}`", path.display()))?;
        written.push(path);
    }
    Ok(written)
}

/// What a person reads after an inspection.
fn summary(r: &Report) -> String {
    let mut s = String::new();
    let e = &r.entrypoint;
    let _ = writeln!(
        s,
        "entrypoint {} ({}) at {}:{}",
        e.spec, e.kind, e.at.file, e.at.line
    );
    let sk = &r.files.skipped;
    let skipped = sk.symlink_loop + sk.outside_root + sk.binary + sk.oversized + sk.unreadable;
    let _ = writeln!(
        s,
        "read {} Python files ({} lines), {} did not parse, {skipped} skipped; frameworks: {}",
        r.files.python,
        r.files.lines,
        r.files.python - r.files.parsed,
        if r.frameworks.is_empty() {
            "none found".to_string()
        } else {
            r.frameworks.join(", ")
        }
    );
    for f in &r.parse_errors {
        let _ = writeln!(
            s,
            "  does not parse: {}:{}:{}: {}",
            f.at.file, f.at.line, f.at.column, f.message
        );
    }
    let _ = writeln!(s, "agents ({}):", r.agents.len());
    for a in &r.agents {
        let _ = writeln!(
            s,
            "  {} [{} {}]{}{} — {} tool(s){}",
            a.id,
            a.framework,
            a.kind,
            a.model
                .as_deref()
                .map(|m| format!(" model {m}"))
                .unwrap_or_default(),
            if a.reachable {
                ""
            } else {
                " (not reached from the entrypoint)"
            },
            a.tools.len(),
            if a.handoffs.is_empty() {
                String::new()
            } else {
                format!(", hands off to {}", a.handoffs.join(", "))
            }
        );
    }
    let _ = writeln!(s, "tools ({}):", r.tools.len());
    for t in &r.tools {
        let _ = writeln!(
            s,
            "  {} `{}` [{}] {} at {}:{}",
            t.id, t.name, t.framework, t.classification, t.at.file, t.at.line
        );
        for e in &t.effects {
            let _ = writeln!(
                s,
                "    {} {}{}{} ({}, {} confidence) at {}:{}{}",
                e.kind,
                e.call,
                e.operation
                    .as_deref()
                    .map(|o| format!(" {o}"))
                    .unwrap_or_default(),
                e.target
                    .as_deref()
                    .map(|t| format!(" {t}"))
                    .unwrap_or_default(),
                e.classification,
                e.confidence,
                e.at.file,
                e.at.line,
                if e.via.is_empty() {
                    String::new()
                } else {
                    format!(" via {}", e.via.join(" → "))
                }
            );
        }
    }
    let _ = writeln!(s, "model calls: {}", r.model_calls.len());
    if !r.unknowns.is_empty() {
        let _ = writeln!(s, "not resolved statically ({}):", r.unknowns.len());
        for u in &r.unknowns {
            let _ = writeln!(s, "  {}:{}: {}: {}", u.at.file, u.at.line, u.what, u.why);
        }
    }
    s
}
