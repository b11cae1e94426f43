//! `tollgate init` and `tollgate packs`: new packs from a template or a scaffold, and the
//! author's checks — validate (schema, references, rules), author-check (what is still owed),
//! adapter-dry-run (the adapter harness) and adapter-preflight (the guardrails of a mode, run
//! nothing). Exit 1 when a check fails, 2 on bad input.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, Subcommand};
use serde::Serialize;
use tollgate_gateway::packs::adapter::Mode;
use tollgate_gateway::packs::{
    self, JSON_SCHEMA, PackFault, PackRegistry, author_check, harness, preflight, templates,
    validate,
};

#[derive(Args, Debug)]
pub struct InitArgs {
    /// The template (`intake_review`).
    template: String,
    /// The folder to write the pack into (absent or empty).
    #[arg(long)]
    output: PathBuf,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

#[derive(Subcommand, Debug)]
pub enum PacksCommand {
    /// Write the skeleton of a new pack.
    Scaffold(ScaffoldArgs),
    /// Check a pack: its files against their schema, references between them (actions,
    /// policy rules, adapters, placeholders), and its rules compiled over the case vocabulary.
    Validate(RootArgs),
    /// Check what an author still owes: preview, verify and compensation of every action,
    /// wording, reviewed mappings, descriptions, the demo.
    AuthorCheck(RootArgs),
    /// Run every adapter of the pack through the harness (dry run, in a temporary folder):
    /// preview, apply, verify, idempotency, compensation; workers collect on the demo input.
    AdapterDryRun(RootArgs),
    /// Check the guardrails of a mode without running any adapter; writes the findings to
    /// `.tollgate/adapter-preflight/`.
    AdapterPreflight(PreflightArgs),
    /// The packs registered through TOLLGATE_PACK_ROOTS (and the roots that do not register).
    List(JsonArgs),
    /// Print the JSON Schema of the pack files.
    Schema,
}

#[derive(Args, Debug)]
pub struct ScaffoldArgs {
    /// `transactional` or `advisory`.
    #[arg(long)]
    kind: String,
    /// The new pack's id.
    #[arg(long = "pack-id")]
    pack_id: String,
    /// The folder to write it into (absent or empty).
    #[arg(long)]
    output: PathBuf,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
pub struct RootArgs {
    /// The pack root (the folder holding pack.yaml).
    #[arg(long = "pack-root")]
    pack_root: PathBuf,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
pub struct PreflightArgs {
    /// The pack root.
    #[arg(long = "pack-root")]
    pack_root: PathBuf,
    /// `dry_run` or `real`.
    #[arg(long, default_value = "dry_run")]
    mode: String,
    /// The adapter policy file (real mode; default: TOLLGATE_ADAPTER_POLICY).
    #[arg(long)]
    policy: Option<PathBuf>,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
pub struct JsonArgs {
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

fn print_json(v: &impl Serialize) {
    println!(
        "{}",
        serde_json::to_string_pretty(v).unwrap_or_else(|_| "{}".into())
    );
}

fn code(ok: bool) -> ExitCode {
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

fn print_faults(faults: &[PackFault]) {
    for f in faults {
        eprintln!("  {f}");
    }
}

/// `tollgate init`.
pub fn init(args: InitArgs) -> Result<ExitCode> {
    written(templates::init(&args.template, &args.output), args.json)
}

fn written(
    result: Result<templates::Written, templates::TemplateError>,
    json: bool,
) -> Result<ExitCode> {
    match result {
        Ok(w) if json => {
            print_json(&w);
            Ok(ExitCode::SUCCESS)
        }
        Ok(w) => {
            println!(
                "wrote pack `{}` to {} ({} files)",
                w.pack_id,
                w.root,
                w.files.len()
            );
            println!("next:");
            for step in &w.next {
                println!("  {step}");
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            eprintln!("error: {e}");
            Ok(ExitCode::from(2))
        }
    }
}

pub fn run(cmd: PacksCommand) -> Result<ExitCode> {
    match cmd {
        PacksCommand::Scaffold(a) => {
            written(templates::scaffold(&a.kind, &a.pack_id, &a.output), a.json)
        }
        PacksCommand::Validate(a) => {
            let v = validate::validate(&a.pack_root);
            if a.json {
                print_json(&v);
            } else if v.ok {
                let c = &v.counted;
                println!(
                    "pack `{}` ({}) is valid: {} worker(s), {} action(s), {} capability(ies), {} rule(s) in {} file(s)",
                    v.pack_id.as_deref().unwrap_or_default(),
                    v.engine.as_deref().unwrap_or_default(),
                    c.workers,
                    c.actions,
                    c.capabilities,
                    c.rules,
                    c.rule_files
                );
            } else {
                eprintln!(
                    "the pack at {} is not valid ({} fault(s)):",
                    a.pack_root.display(),
                    v.faults.len()
                );
                print_faults(&v.faults);
            }
            Ok(code(v.ok))
        }
        PacksCommand::AuthorCheck(a) => {
            let r = author_check::author_check(&a.pack_root);
            if a.json {
                print_json(&r);
            } else if r.ok {
                println!(
                    "pack `{}`: nothing is missing",
                    r.pack_id.as_deref().unwrap_or_default()
                );
            } else {
                if !r.faults.is_empty() {
                    eprintln!("the pack does not validate ({} fault(s)):", r.faults.len());
                    print_faults(&r.faults);
                }
                if !r.missing.is_empty() {
                    eprintln!("missing ({}):", r.missing.len());
                    for m in &r.missing {
                        eprintln!("  {} {}: {}", m.file, m.path, m.message);
                    }
                }
            }
            Ok(code(r.ok))
        }
        PacksCommand::AdapterDryRun(a) => {
            let json = a.json;
            let mut progress = |c: &harness::Check| {
                if !json {
                    let mark = if c.ok { "ok  " } else { "FAIL" };
                    println!("{mark} {:<28} {:<22} {}", c.subject, c.check, c.detail);
                }
            };
            match harness::dry_run(&a.pack_root, &mut progress) {
                Ok(r) => {
                    if json {
                        print_json(&r);
                    } else {
                        let failed = r.checks.iter().filter(|c| !c.ok).count();
                        println!(
                            "{}: {} check(s), {} failed",
                            if r.ok { "passed" } else { "FAILED" },
                            r.checks.len(),
                            failed
                        );
                    }
                    Ok(code(r.ok))
                }
                Err(f) => faults_exit(&f, json),
            }
        }
        PacksCommand::AdapterPreflight(a) => {
            let Some(mode) = Mode::parse(&a.mode) else {
                eprintln!(
                    "error: `--mode {}` is not a mode\n  help: use dry_run or real",
                    a.mode
                );
                return Ok(ExitCode::from(2));
            };
            let out = std::env::current_dir()?
                .join(".tollgate")
                .join("adapter-preflight");
            let env = |k: &str| std::env::var(k).ok();
            let policy = policy_file(a.policy.clone());
            match preflight::preflight(&a.pack_root, mode, policy.as_deref(), &env, &out) {
                Ok(r) => {
                    if a.json {
                        print_json(&r);
                    } else {
                        for f in &r.findings {
                            let mark = if f.ok { "ok  " } else { "FAIL" };
                            println!("{mark} {:<36} {}", f.check, f.detail);
                        }
                        println!(
                            "{} ({} mode); findings written to {}",
                            if r.ok {
                                "guardrails hold"
                            } else {
                                "guardrails do NOT hold"
                            },
                            r.mode.as_str(),
                            r.written_to
                        );
                    }
                    Ok(code(r.ok))
                }
                Err(f) => faults_exit(&f, a.json),
            }
        }
        PacksCommand::List(a) => {
            let registry = PackRegistry::from_env(&|k| std::env::var(k).ok());
            list(&registry, a.json);
            Ok(ExitCode::SUCCESS)
        }
        PacksCommand::Schema => {
            println!("{JSON_SCHEMA}");
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn list(registry: &PackRegistry, json: bool) {
    #[derive(Serialize)]
    struct Row<'a> {
        engine: String,
        pack_id: &'a str,
        kind: &'a str,
        root: String,
    }
    let rows: Vec<Row<'_>> = registry
        .packs()
        .map(|p| Row {
            engine: p.engine(),
            pack_id: &p.manifest.pack_id,
            kind: &p.manifest.kind,
            root: p.root.display().to_string(),
        })
        .collect();
    if json {
        print_json(&serde_json::json!({"packs": rows, "unregistered": registry.unregistered()}));
        return;
    }
    if rows.is_empty() && registry.unregistered().is_empty() {
        println!(
            "no pack is registered: set {}=ROOT[:ROOT...]",
            packs::PACK_ROOTS_VAR
        );
    }
    for r in &rows {
        println!(
            "{:<28} {:<20} {:<14} {}",
            r.engine, r.pack_id, r.kind, r.root
        );
    }
    for u in registry.unregistered() {
        eprintln!("not registered: {}", u.root);
        print_faults(&u.faults);
    }
}

fn faults_exit(f: &packs::PackFaults, json: bool) -> Result<ExitCode> {
    if json {
        print_json(&serde_json::json!({"ok": false, "faults": f.0}));
    } else {
        eprintln!("error: {f}");
    }
    Ok(ExitCode::from(2))
}

/// `--policy`, else TOLLGATE_ADAPTER_POLICY.
pub fn policy_file(given: Option<PathBuf>) -> Option<PathBuf> {
    given.or_else(|| {
        std::env::var_os(tollgate_gateway::packs::ADAPTER_POLICY_VAR).map(PathBuf::from)
    })
}

/// The pack at `root`, as a registry of one, or its faults printed.
pub fn single(root: &Path) -> Result<PackRegistry> {
    let pack = packs::load(root).map_err(|f| anyhow::anyhow!("{f}"))?;
    let (faults, _) = validate::check(&pack);
    if !faults.is_empty() {
        anyhow::bail!(
            "the pack at {} is not valid:\n{}\n  help: `tollgate packs validate --pack-root {}`",
            root.display(),
            packs::render(&faults),
            root.display()
        );
    }
    Ok(PackRegistry::single(pack))
}
