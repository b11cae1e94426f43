//! `tollgate cover`: the static inspection of an existing Python agent codebase and the loop
//! that turns it into a pack (issue 35). `inspect` parses the code (nothing is imported, run or
//! sent anywhere) and writes the report to `.tollgate/cover/latest.json`; `scaffold` writes a
//! draft pack from it; `suggest` and `review` map its tools, `boundaries` turns the reviewed
//! side-effect boundaries into actions. Exit 1 when a file has faults, 2 on bad input.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use serde::Serialize;
use tollgate_gateway::cover::scaffold::Written;
use tollgate_gateway::cover::{self, Report, boundaries, review, scaffold, status};
use tollgate_gateway::packs::PackFaults;

#[derive(Subcommand, Debug)]
pub enum CoverCommand {
    /// Inspect a codebase from its entrypoint: agents and their wiring, tools with their
    /// parameters, model calls, the side effects inside each tool, and what could not be
    /// resolved. Writes the report (`tollgate.cover/v1`) to `.tollgate/cover/latest.json`,
    /// and a draft envelope per agent to `.tollgate/cover/envelopes/`.
    Inspect(InspectArgs),
    /// Write a draft pack from a report: read-only (the tools that read become unreviewed
    /// workers; no action), it validates, and author-check fails until the reviewed mappings
    /// are applied.
    Scaffold(ScaffoldArgs),
    /// Suggest what each inspected tool becomes (worker, boundary, excluded), with the reason.
    /// Inert: nothing changes until a reviewed file is applied.
    Suggest(OutputArgs),
    /// The mapping review: where the pack stands, a template to decide, applying it.
    #[command(subcommand)]
    Review(ReviewCommand),
    /// The side-effect boundaries: suggestions, and their review, which generates the actions.
    #[command(subcommand)]
    Boundaries(BoundariesCommand),
}

#[derive(Subcommand, Debug)]
pub enum ReviewCommand {
    /// What is reviewed, what awaits review, what author-check still owes, the next command.
    Status(PackRootArgs),
    /// Write the mapping review file: the suggestions, every decision `pending`.
    Template(OutputArgs),
    /// Apply a decided mapping review file (nothing changes if it has a fault).
    Apply(MappingArgs),
}

#[derive(Subcommand, Debug)]
pub enum BoundariesCommand {
    /// Suggest an action for each side-effect boundary (input, sample, preview, verify,
    /// compensation, wording). Inert.
    Suggest(OutputArgs),
    /// The boundary review.
    #[command(subcommand)]
    Review(BoundaryReviewCommand),
}

#[derive(Subcommand, Debug)]
pub enum BoundaryReviewCommand {
    /// Write the boundary review file from the suggestions, every decision `pending`.
    Template(BoundaryTemplateArgs),
    /// Apply a decided boundary review: generates actions, capabilities, permits, the dry-run
    /// adapters' table, tests, a demo and the inert real-adapter runbook and templates.
    Apply(MappingArgs),
}

#[derive(Args, Debug)]
pub struct ScaffoldArgs {
    /// The cover report (default `.tollgate/cover/latest.json`).
    #[arg(long = "from")]
    from: Option<PathBuf>,
    /// The folder to write the pack into, absent or empty (default
    /// `.tollgate/covered_system_pack`).
    #[arg(long)]
    output: Option<PathBuf>,
    /// The pack's id (default `covered_` and the entrypoint's object).
    #[arg(long = "pack-id")]
    pack_id: Option<String>,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
pub struct PackRootArgs {
    /// The covered pack's root (default `.tollgate/covered_system_pack`).
    #[arg(long = "pack-root")]
    pack_root: Option<PathBuf>,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
pub struct OutputArgs {
    #[command(flatten)]
    root: PackRootArgs,
    /// The file to write (default: in the pack root, under the seed's name).
    #[arg(long)]
    output: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct BoundaryTemplateArgs {
    #[command(flatten)]
    out: OutputArgs,
    /// The suggestions file (default: `cover-boundaries.suggested.yaml` in the pack root).
    #[arg(long)]
    suggestions: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct MappingArgs {
    #[command(flatten)]
    root: PackRootArgs,
    /// The decided review file.
    #[arg(long = "mapping-file")]
    mapping_file: PathBuf,
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
        CoverCommand::Scaffold(a) => {
            let from = a
                .from
                .unwrap_or_else(|| PathBuf::from(cover::LATEST_REPORT));
            let output = a
                .output
                .unwrap_or_else(|| PathBuf::from(scaffold::DEFAULT_OUTPUT));
            match scaffold::scaffold(&from, &output, a.pack_id.as_deref()) {
                Ok(w) => Ok(written(&w, a.json)),
                Err(e) => {
                    eprintln!("error: {e}");
                    Ok(ExitCode::from(2))
                }
            }
        }
        CoverCommand::Suggest(a) => {
            let root = root_of(&a.root);
            let out = a
                .output
                .unwrap_or_else(|| root.join(review::SUGGESTED_FILE));
            faults_or(review::suggestions(&root), a.root.json, |f| {
                write_file(&root, &out, &review::render(&f, true), a.root.json)
            })
        }
        CoverCommand::Review(ReviewCommand::Status(a)) => {
            let root = root_of(&a);
            faults_or(status::status(&root), a.json, |s| {
                if a.json {
                    print_json(&s);
                } else {
                    print!("{}", status_text(&s));
                }
                Ok(ExitCode::SUCCESS)
            })
        }
        CoverCommand::Review(ReviewCommand::Template(a)) => {
            let root = root_of(&a.root);
            let out = a.output.unwrap_or_else(|| root.join(review::REVIEW_FILE));
            faults_or(review::template(&root), a.root.json, |f| {
                write_file(&root, &out, &review::render(&f, false), a.root.json)
            })
        }
        CoverCommand::Review(ReviewCommand::Apply(a)) => {
            let root = root_of(&a.root);
            faults_or(review::apply(&root, &a.mapping_file), a.root.json, |w| {
                Ok(written(&w, a.root.json))
            })
        }
        CoverCommand::Boundaries(BoundariesCommand::Suggest(a)) => {
            let root = root_of(&a.root);
            let out = a
                .output
                .unwrap_or_else(|| root.join(boundaries::SUGGESTED_FILE));
            faults_or(boundaries::suggestions(&root), a.root.json, |f| {
                write_file(&root, &out, &boundaries::render(&f, true), a.root.json)
            })
        }
        CoverCommand::Boundaries(BoundariesCommand::Review(BoundaryReviewCommand::Template(a))) => {
            let root = root_of(&a.out.root);
            let suggestions = a
                .suggestions
                .unwrap_or_else(|| root.join(boundaries::SUGGESTED_FILE));
            let out = a
                .out
                .output
                .unwrap_or_else(|| root.join(boundaries::REVIEW_FILE));
            faults_or(
                boundaries::template(&root, &suggestions),
                a.out.root.json,
                |f| write_file(&root, &out, &boundaries::render(&f, false), a.out.root.json),
            )
        }
        CoverCommand::Boundaries(BoundariesCommand::Review(BoundaryReviewCommand::Apply(a))) => {
            let root = root_of(&a.root);
            faults_or(
                boundaries::apply(&root, &a.mapping_file),
                a.root.json,
                |w| Ok(written(&w, a.root.json)),
            )
        }
    }
}

fn root_of(a: &PackRootArgs) -> PathBuf {
    a.pack_root
        .clone()
        .unwrap_or_else(|| PathBuf::from(scaffold::DEFAULT_OUTPUT))
}

fn print_json(v: &impl Serialize) {
    println!(
        "{}",
        serde_json::to_string_pretty(v).unwrap_or_else(|_| "{}".into())
    );
}

/// The step's result, or its faults (exit 1), each with its file, line and help.
fn faults_or<T>(
    r: Result<T, PackFaults>,
    json: bool,
    then: impl FnOnce(T) -> Result<ExitCode>,
) -> Result<ExitCode> {
    match r {
        Ok(v) => then(v),
        Err(PackFaults(faults)) => {
            if json {
                print_json(&serde_json::json!({"ok": false, "faults": faults}));
            } else {
                eprintln!("error: {} fault(s), nothing was changed", faults.len());
                for f in &faults {
                    eprintln!("  {f}");
                }
            }
            Ok(ExitCode::from(1))
        }
    }
}

fn write_file(
    root: &std::path::Path,
    out: &std::path::Path,
    text: &str,
    json: bool,
) -> Result<ExitCode> {
    if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("cannot create `{}`", dir.display()))?;
    }
    std::fs::write(out, text).with_context(|| format!("cannot write `{}`", out.display()))?;
    if json {
        print_json(
            &serde_json::json!({"ok": true, "written": out.display().to_string(), "pack_root": root.display().to_string()}),
        );
    } else {
        println!("wrote {}", out.display());
    }
    Ok(ExitCode::SUCCESS)
}

fn written(w: &Written, json: bool) -> ExitCode {
    if json {
        print_json(w);
    } else {
        println!("pack `{}` at {}", w.pack_id, w.root);
        for f in &w.files {
            println!("  wrote {f}");
        }
        for n in &w.notes {
            println!("{n}");
        }
        println!("next:");
        for n in &w.next {
            println!("  {n}");
        }
    }
    ExitCode::SUCCESS
}

fn status_text(s: &status::Status) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "pack `{}` covers {} ({} tools)",
        s.pack_id, s.source, s.tools
    );
    let _ = writeln!(
        out,
        "mapping review: {}; workers {} ({} reviewed)",
        if s.mappings_applied {
            "applied"
        } else {
            "not applied"
        },
        s.workers,
        s.workers_reviewed
    );
    let _ = writeln!(
        out,
        "boundary review: {}; {} boundar(ies), {} action(s)",
        if s.boundaries_applied {
            "applied"
        } else {
            "not applied"
        },
        s.boundaries,
        s.actions
    );
    if s.author_check_ok {
        let _ = writeln!(out, "author-check: passes");
    } else {
        let _ = writeln!(out, "author-check: fails; awaiting review:");
        for a in &s.awaiting {
            let _ = writeln!(out, "  {a}");
        }
    }
    let _ = writeln!(out, "next:");
    for n in &s.next {
        let _ = writeln!(out, "  {n}");
    }
    out
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
