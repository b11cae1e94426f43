//! `tollgate policy check | decide | diff`: policy envelopes from YAML or JSON files, decisions
//! on request files, and version diffs with the decisions they change.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::envelope_arg::{envelope_files, load, read_sources, report_errors};
use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use tollgate_engine::ast::Span;
use tollgate_engine::diag::{Diagnostic, Source};
use tollgate_rules::decide::{DecisionRequest, EnvelopeDecision, decide_request};
use tollgate_rules::envelope::{EnvelopeDiff, diff_envelopes, load_envelopes, slash_warnings};

#[derive(Subcommand, Debug)]
pub enum PolicyCommand {
    /// Check envelope files (YAML or JSON) and print diagnostics; exit 2 if any has errors.
    Check(CheckArgs),
    /// Decide one request (a JSON file) under a set of envelopes; exit 0 whatever the effect.
    #[command(
        after_help = "Examples:\n  tollgate policy decide -e fixtures/envelopes -r fixtures/envelopes/requests/secret-context.json\n  tollgate policy decide -e fixtures/envelopes -r fixtures/envelopes/requests/upload.json --explain"
    )]
    Decide(DecideArgs),
    /// Show the rules two versions of an envelope set add, remove or modify, and the
    /// decisions that change.
    Diff(DiffArgs),
    /// Validate envelope files together and keep each envelope as a version in the store
    /// (unchanged content is not a new version; changed content needs a higher `version`).
    Store(crate::policy_versions_cmd::StoreArgs),
    /// List the envelope versions kept in the store.
    Versions(crate::policy_versions_cmd::VersionsArgs),
    /// Print a stored version's source.
    Show(crate::policy_versions_cmd::ShowArgs),
    /// Dry-run envelopes on a recorded run: what they would allow, deny or redact at each
    /// compile, tool call and model call, compared with what was recorded.
    Simulate(crate::simulate_cmd::SimulateArgs),
    /// Print the envelope format's JSON Schema (draft 2020-12), for editors that validate and
    /// complete YAML with one; `policy check` remains the authority.
    #[command(
        after_help = "Example (VS Code's YAML extension, or any yaml-language-server):\n  \
        tollgate policy schema > envelope.schema.json\n  \
        # then, first line of an envelope: # yaml-language-server: $schema=./envelope.schema.json"
    )]
    Schema,
}

#[derive(Args, Debug)]
pub struct CheckArgs {
    /// Envelope files, or folders whose `*.yaml`, `*.yml` and `*.json` files are read (not
    /// their subfolders). Checked together: `extends` may name envelopes of any of them.
    #[arg(required = true)]
    paths: Vec<PathBuf>,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
pub struct DecideArgs {
    /// Envelope files or folders.
    #[arg(long = "envelope", short = 'e', required = true)]
    envelopes: Vec<PathBuf>,
    /// The request: a JSON file with `kind` (tool | context | model | memory | handoff),
    /// `subject` (run, agent, task, scope, clearance) and the payload of its kind.
    #[arg(long, short = 'r')]
    request: PathBuf,
    /// Print the proof of the decision, or why nothing allowed it.
    #[arg(long)]
    explain: bool,
    /// Print the whole decision as JSON (proof and why-not included).
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
pub struct DiffArgs {
    /// The old envelope file or folder, or a stored version `ID@VERSION` (with the latest
    /// stored versions of the other envelopes, unless `--with` is given).
    old: PathBuf,
    /// The new envelope file or folder, or a stored version `ID@VERSION`.
    new: PathBuf,
    /// Envelope files loaded on both sides (a shared baseline the two extend).
    #[arg(long = "with", short = 'w')]
    with: Vec<PathBuf>,
    /// Requests, one JSON object per line: each is decided under both versions and reported
    /// if its decision changes.
    #[arg(long)]
    requests: Option<PathBuf>,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

pub fn run(cmd: PolicyCommand) -> Result<ExitCode> {
    match cmd {
        PolicyCommand::Check(a) => check(a),
        PolicyCommand::Decide(a) => decide(a),
        PolicyCommand::Diff(a) => diff(a),
        PolicyCommand::Store(a) => crate::policy_versions_cmd::store(a),
        PolicyCommand::Versions(a) => crate::policy_versions_cmd::versions(a),
        PolicyCommand::Show(a) => crate::policy_versions_cmd::show(a),
        PolicyCommand::Simulate(a) => crate::simulate_cmd::run(a),
        PolicyCommand::Schema => {
            let schema = tollgate_rules::envelope::envelope_json_schema();
            println!("{}", serde_json::to_string_pretty(&schema)?);
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn check(args: CheckArgs) -> Result<ExitCode> {
    let files = envelope_files(&args.paths)?;
    let sources = read_sources(&files)?;
    let result = load_envelopes(&sources);
    let plural = |n: usize, word: &str| format!("{n} {word}{}", if n == 1 { "" } else { "s" });
    let warnings: Vec<String> = match &result {
        Ok(set) => set.envelopes().iter().flat_map(slash_warnings).collect(),
        Err(_) => Vec::new(),
    };
    if args.json {
        let doc = match &result {
            Ok(set) => serde_json::json!({
                "files": files.len(),
                "errors": 0,
                "warnings": warnings,
                "envelopes": set.envelopes().iter().map(|e| serde_json::json!({
                    "id": e.id,
                    "version": e.version,
                    "extends": e.extends,
                    "rules": e.rules().len(),
                })).collect::<Vec<_>>(),
                "version": set.version(),
                "diagnostics": [],
            }),
            Err(errors) => serde_json::json!({
                "files": files.len(),
                "errors": errors.diagnostics.len(),
                "envelopes": [],
                "diagnostics": errors.located(),
            }),
        };
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        match &result {
            Ok(set) => {
                for w in &warnings {
                    eprintln!("warning: {w}");
                }
                for e in set.envelopes() {
                    let extends = if e.extends.is_empty() {
                        String::new()
                    } else {
                        format!(", extends {}", e.extends.join(", "))
                    };
                    println!(
                        "{}: {}{extends}",
                        e.label(),
                        plural(e.rules().len(), "rule")
                    );
                }
                println!(
                    "{} in {} checked, no errors{}",
                    plural(set.len(), "envelope"),
                    plural(files.len(), "file"),
                    if warnings.is_empty() {
                        String::new()
                    } else {
                        format!(", {}", plural(warnings.len(), "warning"))
                    }
                );
            }
            Err(errors) => report_errors(errors),
        }
    }
    Ok(if result.is_ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(2)
    })
}

const REQUEST_HELP: &str = "a request has `kind` (tool | context | model | memory | handoff), `subject` {run, agent, task, scope, clearance} and the payload of its kind: `tool` {name, args}, `item` {id, kind, scope, sensitivity, labels}, `model` {provider, model, reasoning}, `handoff` {...}; see fixtures/envelopes/requests/";

/// Reads one request: `text` is the part of the file `source` that starts at byte `start`
/// (the whole file, or one line of a JSON Lines file). Errors come rendered at their line
/// and column.
fn read_request(
    source: &Source,
    start: usize,
    text: &str,
) -> std::result::Result<DecisionRequest, String> {
    let request: DecisionRequest = serde_json::from_str(text).map_err(|e| {
        let at = start + offset_of(text, e.line(), e.column());
        Diagnostic::error(
            tollgate_engine::diag::codes::REQUEST,
            format!("invalid request: {e}"),
            Span::new(at, at + 1),
        )
        .with_help(REQUEST_HELP)
        .render(source)
    })?;
    if let Err(e) = request.to_policy_request() {
        let key = match request.kind.as_str() {
            "context" => "item",
            k => k,
        };
        return Err(Diagnostic::error(
            tollgate_engine::diag::codes::REQUEST,
            format!("invalid request: {e}"),
            Span::new(start, start + 1),
        )
        .with_help(format!(
            "add `\"{key}\": {{...}}` (see fixtures/envelopes/requests/)"
        ))
        .render(source));
    }
    Ok(request)
}

/// Byte offset of a one-based line and column (serde_json's columns count bytes).
fn offset_of(text: &str, line: usize, column: usize) -> usize {
    let start: usize = text
        .split_inclusive('\n')
        .take(line.saturating_sub(1))
        .map(str::len)
        .sum();
    (start + column.saturating_sub(1)).min(text.len())
}

fn decide(args: DecideArgs) -> Result<ExitCode> {
    let set = match load(&args.envelopes)? {
        Ok(s) => s,
        Err(code) => return Ok(code),
    };
    let text = std::fs::read_to_string(&args.request)
        .with_context(|| format!("cannot read `{}`", args.request.display()))?;
    let source = Source::new(args.request.display().to_string(), text.clone());
    let request = match read_request(&source, 0, &text) {
        Ok(r) => r,
        Err(rendered) => {
            eprint!("{rendered}");
            return Ok(ExitCode::from(2));
        }
    };
    let decision = decide_request(&set, &request)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&decision)?);
    } else if args.explain {
        print!("{}", decision.explain());
    } else {
        print!("{}", summary(&decision));
    }
    Ok(ExitCode::SUCCESS)
}

/// The effect and deciding rules, with the governing envelopes (and an error, if any).
fn summary(d: &EnvelopeDecision) -> String {
    let explained = d.explain();
    explained
        .lines()
        .take_while(|l| !l.starts_with("proof:") && !l.starts_with("why not allowed:"))
        .map(|l| format!("{l}\n"))
        .collect()
}

fn diff(args: DiffArgs) -> Result<ExitCode> {
    let side = |path: &PathBuf| -> Result<std::result::Result<_, ExitCode>> {
        if crate::policy_versions_cmd::is_stored_reference(path) {
            let with = read_sources(&envelope_files(&args.with)?)?;
            crate::policy_versions_cmd::stored_side(&path.display().to_string(), &with)
        } else {
            let mut paths = args.with.clone();
            paths.push(path.clone());
            load(&paths)
        }
    };
    let old = match side(&args.old)? {
        Ok(s) => s,
        Err(code) => return Ok(code),
    };
    let new = match side(&args.new)? {
        Ok(s) => s,
        Err(code) => return Ok(code),
    };
    let changes = diff_envelopes(&old, &new);
    let mut changed_decisions = Vec::new();
    let mut requests_read = 0usize;
    if let Some(path) = &args.requests {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read `{}`", path.display()))?;
        let source = Source::new(path.display().to_string(), text.clone());
        let mut start = 0usize;
        for (i, raw) in text.split_inclusive('\n').enumerate() {
            let line_start = start;
            start += raw.len();
            let line = raw.trim_end_matches(['\n', '\r']);
            if line.trim().is_empty() {
                continue;
            }
            let request = match read_request(&source, line_start, line) {
                Ok(r) => r,
                Err(rendered) => {
                    eprint!("{rendered}");
                    return Ok(ExitCode::from(2));
                }
            };
            requests_read += 1;
            let before = decide_request(&old, &request)?;
            let after = decide_request(&new, &request)?;
            if before.effect != after.effect || before.rules != after.rules {
                changed_decisions.push((i + 1, before, after));
            }
        }
    }
    if args.json {
        let doc = serde_json::json!({
            "old_version": old.version(),
            "new_version": new.version(),
            "envelopes": changes.envelopes,
            "requests": requests_read,
            "changed_decisions": changed_decisions.iter().map(|(line, before, after)| serde_json::json!({
                "line": line,
                "old": before,
                "new": after,
            })).collect::<Vec<_>>(),
        });
        println!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(ExitCode::SUCCESS);
    }
    print!("{}", diff_text(&changes));
    if args.requests.is_some() {
        println!(
            "{} of {requests_read} request{} change decision",
            changed_decisions.len(),
            if requests_read == 1 { "" } else { "s" }
        );
        for (line, before, after) in &changed_decisions {
            println!(
                "\nline {line}: {} {} -> {}",
                before.kind.as_str(),
                effect_with_rules(before),
                effect_with_rules(after)
            );
            println!("  old:");
            print_indented(&before.explain(), 4);
            println!("  new:");
            print_indented(&after.explain(), 4);
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn effect_with_rules(d: &EnvelopeDecision) -> String {
    if d.rules.is_empty() {
        d.effect.as_str().to_string()
    } else {
        format!("{} ({})", d.effect.as_str(), d.rules.join(", "))
    }
}

fn print_indented(text: &str, by: usize) {
    let pad = " ".repeat(by);
    for line in text.lines() {
        println!("{pad}{line}");
    }
}

fn diff_text(diff: &EnvelopeDiff) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    if diff.is_empty() {
        out.push_str("no envelope changed\n");
        return out;
    }
    let version = |v: Option<i32>| v.map_or_else(|| "-".to_string(), |v| v.to_string());
    for e in &diff.envelopes {
        let _ = writeln!(
            out,
            "{} {} (version {} -> {})",
            e.change.as_str(),
            e.id,
            version(e.old_version),
            version(e.new_version)
        );
        if e.version_not_raised {
            let _ = writeln!(
                out,
                "  warning: the content changed but `version` was not raised"
            );
        }
        for f in &e.fields {
            let _ = writeln!(out, "  ~ {f}");
        }
        for r in &e.rules {
            let mark = match r.change {
                tollgate_rules::envelope::Change::Added => '+',
                tollgate_rules::envelope::Change::Removed => '-',
                tollgate_rules::envelope::Change::Modified => '~',
            };
            let show = |v: &Option<serde_json::Value>| {
                v.as_ref()
                    .map(|j| serde_json::to_string(j).unwrap_or_default())
                    .unwrap_or_default()
            };
            let _ = writeln!(out, "  {mark} {} {}", r.section.key(), r.rule);
            match r.change {
                tollgate_rules::envelope::Change::Added => {
                    let _ = writeln!(out, "      {}", show(&r.new));
                }
                tollgate_rules::envelope::Change::Removed => {
                    let _ = writeln!(out, "      {}", show(&r.old));
                }
                tollgate_rules::envelope::Change::Modified => {
                    let _ = writeln!(out, "      old: {}", show(&r.old));
                    let _ = writeln!(out, "      new: {}", show(&r.new));
                }
            }
        }
    }
    out
}
