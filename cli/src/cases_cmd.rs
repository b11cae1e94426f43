//! `tollgate cases` and `tollgate demo seed`: cases on the local store — list, inspect, the
//! timeline, replay health and rebuild; and, for a pack the command can load (`--pack-root`,
//! `TOLLGATE_PACK_ROOTS`, or the root the case was opened from), every step of the change flow:
//! open, collect, propose, preview, decide, approve or reject, commit, a model run, the demo.
//! Exit 1 when a step is refused, 2 on bad input.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use tollgate_gateway::codes::http as codes;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use serde::Serialize;
use serde_json::{Map, Value};
use tollgate_gateway::approvals::ApprovalAnswer;
use tollgate_gateway::cases::host::{EngineHost, Moved};
use tollgate_gateway::cases::{CaseError, inspect, project};
use tollgate_gateway::packs::adapter::Mode;
use tollgate_gateway::packs::{PackRegistry, templates};
use tollgate_gateway::providers::provider_from_env;
use tollgate_gateway::runtime::Runtime;

use crate::store_arg;

#[derive(Subcommand, Debug)]
pub enum CasesCommand {
    /// Cases, most recently updated first.
    List(ListArgs),
    /// The compact inspection report: worker evidence, proposal actions, preview diffs, policy
    /// status, commit status, replay health, recent timeline events.
    Inspect(InspectArgs),
    /// A case's events, oldest first.
    Timeline(TimelineArgs),
    /// Replay health of a case (its projections against a fresh replay of its events), or,
    /// with --rebuild, drop every projection and replay every case.
    Replay(ReplayArgs),
    /// Open a case of a pack with an input (a JSON or YAML file).
    Open(OpenArgs),
    /// Open the pack's demo case and run it up to approval; prints its case_id.
    Demo(PackArgs),
    /// Run the pack's workers on the case and record their evidence.
    Collect(CaseArgs),
    /// Propose one of the pack's capabilities.
    Propose(ProposeArgs),
    /// Preview a proposal through its action's adapter (nothing changes).
    Preview(StepArgs),
    /// Decide a previewed proposal (the pack's rules and the envelopes); an allowed one waits
    /// for approval.
    Decide(StepArgs),
    /// Approve a proposal's change, as previewed.
    Approve(AnswerArgs),
    /// Reject a proposal's change.
    Reject(AnswerArgs),
    /// Commit an approved proposal through the engine host: apply, verify, compensate on
    /// failure. Real mode needs TOLLGATE_ALLOW_REAL_ADAPTERS=1 and --policy.
    Commit(CommitArgs),
    /// Ask the model provider (the fake one without a key) for a summary of the case.
    ModelRun(ModelRunArgs),
}

#[derive(Args, Debug)]
pub struct ListArgs {
    /// Only this pack's.
    #[arg(long)]
    pack: Option<String>,
    /// At most this many.
    #[arg(long, default_value_t = 50)]
    limit: u64,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
pub struct InspectArgs {
    /// The case.
    case_id: String,
    /// Recent timeline events to show.
    #[arg(long = "timeline-limit")]
    timeline_limit: Option<u64>,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
pub struct TimelineArgs {
    /// The case.
    case_id: String,
    /// Events after this version.
    #[arg(long, default_value_t = 0)]
    after: i64,
    /// At most this many.
    #[arg(long, default_value_t = 100)]
    limit: u64,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
pub struct ReplayArgs {
    /// The case (omit with --rebuild).
    case_id: Option<String>,
    /// Drop every projection row and rebuild them all from the events.
    #[arg(long)]
    rebuild: bool,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
pub struct PackArgs {
    /// The pack root.
    #[arg(long = "pack-root")]
    pack_root: PathBuf,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
pub struct OpenArgs {
    /// The pack root.
    #[arg(long = "pack-root")]
    pack_root: PathBuf,
    /// The case input (JSON or YAML object); the pack's demo input when absent.
    #[arg(long)]
    input: Option<PathBuf>,
    /// A title.
    #[arg(long)]
    title: Option<String>,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
pub struct CaseArgs {
    /// The case.
    case_id: String,
    /// The pack root (default: TOLLGATE_PACK_ROOTS, else the root the case was opened from).
    #[arg(long = "pack-root")]
    pack_root: Option<PathBuf>,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
pub struct ProposeArgs {
    #[command(flatten)]
    case: CaseArgs,
    /// The capability.
    #[arg(long)]
    capability: String,
}

#[derive(Args, Debug)]
pub struct StepArgs {
    #[command(flatten)]
    case: CaseArgs,
    /// The proposal (default: the case's latest).
    proposal: Option<String>,
}

#[derive(Args, Debug)]
pub struct AnswerArgs {
    #[command(flatten)]
    step: StepArgs,
    /// Who answers.
    #[arg(long)]
    by: String,
    /// Why.
    #[arg(long, default_value = "")]
    reason: String,
}

#[derive(Args, Debug)]
pub struct CommitArgs {
    #[command(flatten)]
    step: StepArgs,
    /// `dry_run` (default) or `real`.
    #[arg(long, default_value = "dry_run")]
    mode: String,
    /// The adapter policy file (real mode; default: TOLLGATE_ADAPTER_POLICY).
    #[arg(long)]
    policy: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct ModelRunArgs {
    #[command(flatten)]
    case: CaseArgs,
    /// What the summary is for.
    #[arg(long, default_value = "summarise the case for its reviewer")]
    purpose: String,
}

fn print_json(v: &impl Serialize) {
    println!(
        "{}",
        serde_json::to_string_pretty(v).unwrap_or_else(|_| "{}".into())
    );
}

fn actor() -> String {
    std::env::var("USER").map_or_else(|_| "cli".to_string(), |u| format!("cli:{u}"))
}

fn runtime() -> Result<Runtime> {
    let store = store_arg::open()?;
    let provider = provider_from_env()?;
    Ok(Runtime::new(store, Arc::from(provider))?)
}

fn env(k: &str) -> Option<String> {
    std::env::var(k).ok()
}

/// The packs a command on `case_id` may run: `--pack-root`, else TOLLGATE_PACK_ROOTS plus the
/// root the case was opened from.
fn registry_for(rt: &Runtime, case_id: &str, root: Option<&Path>) -> Result<PackRegistry> {
    if let Some(root) = root {
        return crate::packs_cmd::single(root);
    }
    let mut registry = PackRegistry::from_env(&env);
    let id = case_id.to_string();
    let case = rt
        .store()
        .read(move |c| project::load_in(c, &id, false))?
        .case;
    if let Some(case) = case
        && registry
            .get(&case.engine_id, &case.engine_version)
            .is_none()
    {
        registry.register(Path::new(&case.pack_root));
    }
    Ok(registry)
}

/// The exit of a step: its outcome printed, or its refusal.
fn finish(
    result: Result<Moved, CaseError>,
    json: bool,
    describe: &dyn Fn(&Moved) -> String,
) -> Result<ExitCode> {
    match result {
        Ok(m) => {
            if json {
                print_json(&m);
            } else {
                println!("{}", describe(&m));
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            let (code, exit) = match &e {
                CaseError::Refused { code, .. } | CaseError::Conflict { code, .. } => {
                    (code.code, 1)
                }
                CaseError::VersionConflict { .. } => (codes::VERSION_CONFLICT.code, 1),
                CaseError::NotFound(_) => (codes::NOT_FOUND.code, 2),
                CaseError::ReadOnly(_) => (codes::CASE_READ_ONLY.code, 2),
                CaseError::Invalid(_) => (codes::INVALID_CASE_REQUEST.code, 2),
                CaseError::Adapter(_) => (codes::ADAPTER_FAILED.code, 2),
                _ => (codes::INTERNAL.code, 2),
            };
            if json {
                print_json(&serde_json::json!({"error": {"code": code, "message": e.to_string()}}));
            } else {
                eprintln!("error[{code}]: {e}");
            }
            Ok(ExitCode::from(exit))
        }
    }
}

fn latest(rt: &Runtime, case_id: &str, given: Option<String>) -> Result<String> {
    if let Some(p) = given {
        return Ok(p);
    }
    let id = case_id.to_string();
    let p = rt.store().read(move |c| project::load_in(c, &id, false))?;
    p.proposals
        .values()
        .max_by_key(|r| r.proposal_id.trim_start_matches("prop-").parse::<u64>().unwrap_or(0))
        .map(|r| r.proposal_id.clone())
        .with_context(|| format!("case `{case_id}` has no proposal yet (propose one with `tollgate cases propose {case_id} --capability ID`)"))
}

fn read_input(path: &Path) -> Result<Map<String, Value>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let doc = tollgate_gateway::rules::located::Located::parse(&text)
        .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    match doc.value {
        Value::Object(m) => Ok(m),
        _ => anyhow::bail!("{}: the case input must be an object", path.display()),
    }
}

pub fn run(cmd: CasesCommand) -> Result<ExitCode> {
    let rt = runtime()?;
    match cmd {
        CasesCommand::List(a) => {
            let cases = inspect::list(rt.store(), a.pack.as_deref(), a.limit)?;
            if a.json {
                print_json(&serde_json::json!({"cases": cases}));
            } else if cases.is_empty() {
                println!("no case yet: `tollgate demo seed`, or a pack's demo script, opens some");
            } else {
                for c in &cases {
                    println!(
                        "{:<24} {:<18} {:<18} v{:<4} {}",
                        c.case_id, c.pack_id, c.state, c.version, c.title
                    );
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        CasesCommand::Inspect(a) => {
            // What this command could run: TOLLGATE_PACK_ROOTS, else the root it was opened from.
            let registry = registry_for(&rt, &a.case_id, None)?;
            match inspect::inspect(rt.store(), &registry, &a.case_id, a.timeline_limit) {
                Ok(r) if a.json => {
                    print_json(&r);
                    Ok(if r.replay_health.status == "healthy" {
                        ExitCode::SUCCESS
                    } else {
                        ExitCode::from(1)
                    })
                }
                Ok(r) => {
                    print!("{}", render_inspection(&r));
                    Ok(if r.replay_health.status == "healthy" {
                        ExitCode::SUCCESS
                    } else {
                        ExitCode::from(1)
                    })
                }
                Err(e) => finish(Err(e), a.json, &|_| String::new()),
            }
        }
        CasesCommand::Timeline(a) => {
            match inspect::timeline(rt.store(), &a.case_id, a.after, a.limit) {
                Ok(events) if a.json => {
                    print_json(&serde_json::json!({"events": events}));
                    Ok(ExitCode::SUCCESS)
                }
                Ok(events) => {
                    for e in &events {
                        println!(
                            "{:>4} {} {:<18} {:<14} {}",
                            e.version,
                            e.at,
                            e.body.kind(),
                            e.actor,
                            e.hash.get(..12).unwrap_or_default()
                        );
                    }
                    Ok(ExitCode::SUCCESS)
                }
                Err(e) => finish(Err(e), a.json, &|_| String::new()),
            }
        }
        CasesCommand::Replay(a) => replay(&rt, a),
        CasesCommand::Open(a) => {
            let registry = crate::packs_cmd::single(&a.pack_root)?;
            let pack = registry.packs().next().cloned().context("no pack")?;
            let input = match &a.input {
                Some(p) => read_input(p)?,
                None => pack
                    .manifest
                    .demo
                    .as_ref()
                    .map(|d| d.input.clone())
                    .unwrap_or_default(),
            };
            let host = EngineHost::new(&rt, &registry, &env);
            let r = host.open(
                &pack.manifest.engine_id,
                &pack.manifest.engine_version,
                a.title,
                input,
                &actor(),
            );
            finish(r, a.json, &|m| m.case_id.clone())
        }
        CasesCommand::Demo(a) => {
            let registry = crate::packs_cmd::single(&a.pack_root)?;
            let pack = registry.packs().next().cloned().context("no pack")?;
            let host = EngineHost::new(&rt, &registry, &env);
            let r = host.demo(
                &pack.manifest.engine_id,
                &pack.manifest.engine_version,
                &actor(),
            );
            finish(r, a.json, &|m| m.case_id.clone())
        }
        CasesCommand::Collect(a) => {
            let registry = registry_for(&rt, &a.case_id, a.pack_root.as_deref())?;
            let r = EngineHost::new(&rt, &registry, &env).collect(&a.case_id, &actor());
            finish(r, a.json, &|m| {
                format!("{} v{}: evidence {}", m.case_id, m.version, m.detail)
            })
        }
        CasesCommand::Propose(a) => {
            let c = a.case;
            let registry = registry_for(&rt, &c.case_id, c.pack_root.as_deref())?;
            let r =
                EngineHost::new(&rt, &registry, &env).propose(&c.case_id, &a.capability, &actor());
            finish(r, c.json, &|m| {
                format!(
                    "{} {}: {}",
                    m.case_id,
                    m.proposal_id.as_deref().unwrap_or_default(),
                    m.detail["wording"].as_str().unwrap_or_default()
                )
            })
        }
        CasesCommand::Preview(a) => {
            let registry = registry_for(&rt, &a.case.case_id, a.case.pack_root.as_deref())?;
            let pid = latest(&rt, &a.case.case_id, a.proposal)?;
            let r = EngineHost::new(&rt, &registry, &env).preview(&a.case.case_id, &pid, &actor());
            finish(r, a.case.json, &|m| {
                format!(
                    "{} {}: {}",
                    m.case_id,
                    pid,
                    m.detail["summary"].as_str().unwrap_or_default()
                )
            })
        }
        CasesCommand::Decide(a) => {
            let registry = registry_for(&rt, &a.case.case_id, a.case.pack_root.as_deref())?;
            let pid = latest(&rt, &a.case.case_id, a.proposal)?;
            let r = EngineHost::new(&rt, &registry, &env).decide(&a.case.case_id, &pid, &actor());
            finish(r, a.case.json, &|m| {
                format!(
                    "{} {}: {} ({})",
                    m.case_id,
                    pid,
                    m.detail["effect"].as_str().unwrap_or_default(),
                    m.state
                )
            })
        }
        CasesCommand::Approve(a) => answer(&rt, a, true),
        CasesCommand::Reject(a) => answer(&rt, a, false),
        CasesCommand::Commit(a) => {
            let Some(mode) = Mode::parse(&a.mode) else {
                eprintln!(
                    "error: `--mode {}` is not a mode\n  help: use dry_run or real",
                    a.mode
                );
                return Ok(ExitCode::from(2));
            };
            let c = &a.step.case;
            let registry = registry_for(&rt, &c.case_id, c.pack_root.as_deref())?;
            let pid = latest(&rt, &c.case_id, a.step.proposal.clone())?;
            let r = EngineHost::new(&rt, &registry, &env).commit(
                &c.case_id,
                &pid,
                mode,
                crate::packs_cmd::policy_file(a.policy.clone()).as_deref(),
                &actor(),
            );
            finish(r, c.json, &|m| {
                format!("{} {}: {}", m.case_id, pid, m.state)
            })
        }
        CasesCommand::ModelRun(a) => {
            let c = a.case;
            let registry = registry_for(&rt, &c.case_id, c.pack_root.as_deref())?;
            let r =
                EngineHost::new(&rt, &registry, &env).model_run(&c.case_id, &a.purpose, &actor());
            finish(r, c.json, &|m| {
                let note = m.detail["note"].as_str().unwrap_or_default();
                let out = m.detail["output"].as_str().unwrap_or_default();
                if note.is_empty() {
                    out.to_string()
                } else {
                    format!("{out}\n(note: {note})")
                }
            })
        }
    }
}

fn answer(rt: &Runtime, a: AnswerArgs, approve: bool) -> Result<ExitCode> {
    let c = &a.step.case;
    let registry = registry_for(rt, &c.case_id, c.pack_root.as_deref())?;
    let pid = latest(rt, &c.case_id, a.step.proposal.clone())?;
    let answer = ApprovalAnswer {
        approve,
        by: a.by.clone(),
        reason: a.reason.clone(),
        principal: None,
    };
    let r = EngineHost::new(rt, &registry, &env).answer(&c.case_id, &pid, &answer);
    finish(r, c.json, &|m| {
        format!("{} {}: {}", m.case_id, pid, m.state)
    })
}

fn replay(rt: &Runtime, a: ReplayArgs) -> Result<ExitCode> {
    if a.rebuild {
        let started = std::time::Instant::now();
        let r = project::rebuild(rt.store())?;
        if a.json {
            print_json(&serde_json::json!({"rebuilt": r, "millis": started.elapsed().as_millis()}));
        } else {
            println!(
                "rebuilt the projections of {} case(s) from {} event(s) in {:?}",
                r.cases,
                r.events,
                started.elapsed()
            );
        }
        return Ok(ExitCode::SUCCESS);
    }
    let Some(case_id) = a.case_id else {
        eprintln!("error: name a case, or pass --rebuild to rebuild every case's projections");
        return Ok(ExitCode::from(2));
    };
    let id = case_id.clone();
    let (exists, health) = rt.store().read(move |c| {
        Ok((
            tollgate_gateway::cases::log::version_in(c, &id)? > 0,
            project::health_in(c, &id)?,
        ))
    })?;
    if !exists {
        return finish(Err(inspect::not_found(&case_id)), a.json, &|_| {
            String::new()
        });
    }
    if a.json {
        print_json(&health);
    } else {
        println!(
            "{}: {} ({} events, chain {})",
            case_id, health.status, health.events, health.chain
        );
        for d in &health.drift {
            println!(
                "  drift in {} `{}`: stored {} / replayed {}",
                d.table,
                d.key,
                show(&d.stored),
                show(&d.replayed)
            );
        }
        if let Some(h) = &health.help {
            println!("  help: {h}");
        }
    }
    Ok(if health.status == "healthy" {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn show(v: &Option<Value>) -> String {
    v.as_ref().map_or_else(|| "(none)".into(), Value::to_string)
}

fn render_inspection(r: &inspect::Inspection) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let c = &r.case;
    let _ = writeln!(out, "case {}  {}", c.case_id, c.title);
    let _ = writeln!(
        out,
        "  pack {} ({}), state {}, version {}",
        c.pack_id, r.pack.engine, c.state, c.version
    );
    if let Some(g) = &r.pack.guidance {
        let _ = writeln!(out, "  read-only: {g}");
    }
    let _ = writeln!(out, "worker evidence");
    for e in &r.worker_evidence {
        let _ = writeln!(out, "  {}.{} = {} ({})", e.worker, e.key, e.value, e.source);
    }
    let _ = writeln!(out, "proposal actions");
    for p in &r.proposal_actions {
        let _ = writeln!(
            out,
            "  {} {} → {} [{}]: {}",
            p.proposal_id, p.capability, p.action, p.state, p.wording
        );
    }
    let _ = writeln!(out, "preview diffs");
    for p in &r.preview_diffs {
        let _ = writeln!(
            out,
            "  {} ({}): {}",
            p.proposal_id,
            &p.preview_hash[..12.min(p.preview_hash.len())],
            p.summary
        );
        for ch in &p.changes {
            let _ = writeln!(
                out,
                "    {}.{}: {:?} → {:?}",
                ch.target, ch.field, ch.before, ch.after
            );
        }
    }
    let _ = writeln!(out, "policy status");
    for p in &r.policy_status {
        let _ = writeln!(
            out,
            "  {} {} by {}; approval {} {}",
            p.proposal_id,
            p.effect,
            p.rules.join(", "),
            p.approval_id.as_deref().unwrap_or("-"),
            p.approval_state.as_deref().unwrap_or("")
        );
    }
    let _ = writeln!(out, "commit status");
    for p in &r.commit_status {
        let _ = writeln!(
            out,
            "  {} {} ({}): {}",
            p.proposal_id, p.state, p.mode, p.detail
        );
    }
    let h = &r.replay_health;
    let _ = writeln!(
        out,
        "replay health: {} ({} events, chain {}, {} drift)",
        h.status,
        h.events,
        h.chain,
        h.drift.len()
    );
    if let Some(help) = &h.help {
        let _ = writeln!(out, "  help: {help}");
    }
    let _ = writeln!(
        out,
        "recent timeline (newest first, {} at most)",
        r.timeline_limit
    );
    for t in &r.timeline {
        let _ = writeln!(
            out,
            "  {:>4} {} {:<18} {}",
            t.version, t.at, t.kind, t.summary
        );
    }
    out
}

/// `tollgate demo seed`: writes the intake_review pack under `.tollgate/demo-packs/` (once) and
/// opens demo cases in every state a reviewer meets: awaiting approval, committed, denied by
/// policy, rejected.
pub fn seed(json: bool) -> Result<ExitCode> {
    let rt = runtime()?;
    let root = rt
        .store()
        .location()
        .local_dir()
        .join("demo-packs")
        .join("intake_review");
    if !root.join("pack.yaml").exists() {
        templates::init("intake_review", &root).map_err(|e| anyhow::anyhow!("{e}"))?;
    }
    let registry = crate::packs_cmd::single(&root)?;
    let pack = registry.packs().next().cloned().context("no pack")?;
    // Seeding twice adds nothing (issue 33): the demo cases are the ones of the demo pack.
    let demo_root = pack.root.display().to_string();
    let existing: Vec<String> = rt.store().read(move |c| {
        let mut q = c.prepare("SELECT case_id FROM cases WHERE pack_root = ?1 ORDER BY case_id")?;
        let ids = q.query_map([demo_root], |r| r.get(0))?;
        ids.collect::<Result<_, _>>()
    })?;
    if !existing.is_empty() {
        if json {
            print_json(&serde_json::json!({"pack_root": root.display().to_string(),
                                           "cases": [], "already_seeded": existing}));
        } else {
            println!(
                "the demo cases are already seeded ({} case(s) of pack root {}): nothing added",
                existing.len(),
                root.display()
            );
            println!("next: tollgate cases list; tollgate cases inspect CASE_ID");
        }
        return Ok(ExitCode::SUCCESS);
    }
    let host = EngineHost::new(&rt, &registry, &env);
    let (eid, ev) = (
        pack.manifest.engine_id.clone(),
        pack.manifest.engine_version.clone(),
    );
    let who = "demo-seed";
    let open = |title: &str, body: &str, amount: i64| -> Result<String> {
        let input = serde_json::json!({"title": title, "body": body, "requester": "demo", "amount": amount});
        let input = input.as_object().cloned().unwrap_or_default();
        let m = host.open(&eid, &ev, None, input, who)?;
        host.collect(&m.case_id, who)?;
        Ok(m.case_id)
    };
    let flow = |case: &str, capability: &str| -> Result<Moved, CaseError> {
        let p = host.propose(case, capability, who)?;
        let pid = p.proposal_id.unwrap_or_default();
        host.preview(case, &pid, who)?;
        host.decide(case, &pid, who)
    };
    let mut seeded = Vec::new();
    let a = open(
        "Vendor contract renewal",
        "The NDA and liability terms change on renewal.",
        4800,
    )?;
    flow(&a, "route_to_queue")?;
    seeded.push((a, "awaiting approval"));
    let b = open(
        "Laptop replacement",
        "My laptop screen is broken; need access to a spare today.",
        900,
    )?;
    let m = flow(&b, "route_to_queue")?;
    let pid = m.proposal_id.unwrap_or_default();
    host.answer(
        &b,
        &pid,
        &ApprovalAnswer {
            approve: true,
            by: "demo-reviewer".into(),
            reason: "routine".into(),
            principal: None,
        },
    )?;
    host.commit(&b, &pid, Mode::DryRun, None, who)?;
    let m = flow(&b, "escalate")?;
    seeded.push((
        b,
        if m.state == "awaiting_approval" {
            "committed; escalation awaiting approval"
        } else {
            "committed"
        },
    ));
    let c = open(
        "Refund request",
        "Please refund invoice 7781; reach me at jane@example.com.",
        2300,
    )?;
    flow(&c, "route_to_queue")?;
    seeded.push((c, "denied by policy (personal data)"));
    let d = open(
        "Large purchase order",
        "Purchase order for 40 servers, payment due next month.",
        64000,
    )?;
    let m = flow(&d, "route_to_queue")?;
    if m.state == "awaiting_approval" {
        let pid = m.proposal_id.unwrap_or_default();
        host.answer(
            &d,
            &pid,
            &ApprovalAnswer {
                approve: false,
                by: "demo-reviewer".into(),
                reason: "needs a second quote".into(),
                principal: None,
            },
        )?;
    }
    seeded.push((d, "denied or rejected"));
    if json {
        let rows: Vec<Value> = seeded
            .iter()
            .map(|(id, s)| serde_json::json!({"case_id": id, "seeded": s}))
            .collect();
        print_json(&serde_json::json!({"pack_root": root.display().to_string(), "cases": rows}));
    } else {
        println!(
            "seeded {} demo case(s) of {} (pack root {}):",
            seeded.len(),
            pack.engine(),
            root.display()
        );
        for (id, s) in &seeded {
            println!("  {id}  {s}");
        }
        println!(
            "next: tollgate cases inspect CASE_ID; TOLLGATE_PACK_ROOTS={} tollgate serve runs them from the dashboard",
            root.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}
