//! `tollgate memory distill | list | search | show | review | decay | gc | quarantine-review |
//! sensitivity | feedback`: the memory distiller and its lifecycle over the local store.
//! `distill` runs in the foreground with progress on stderr (the gateway's
//! `POST /v2/memory/distill/run/{run_id}` enqueues the same work as a `memory.distill` job).

use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, Subcommand};
use tollgate_gateway::clock::{Clock, SystemClock, rfc3339};
use tollgate_gateway::memory::{
    self, Decision, FeedbackVerdict, MemoryArtifact, MemoryClass, MemoryError, MemoryFeedback,
    MemoryFilter, MemoryStatus,
};
use tollgate_gateway::recorder::Recorder;
use tollgate_rules::envelope::Level;

use crate::store_arg;

#[derive(Subcommand, Debug)]
pub enum MemoryCommand {
    /// Distill a finished run into memories: episodes, candidates, what became of each.
    Distill(DistillArgs),
    /// List memories (every status unless one is asked).
    List(ListArgs),
    /// Search the memories a run working at a scope could retrieve, ranked by relevance to
    /// the text (the same search as `GET /v2/memory/search`).
    #[command(
        after_help = "Examples:\n  tollgate memory search \"flaky test retries\" --scope org:acme/repo:api/task:T-1\n  tollgate memory search --scope org:acme/repo:api --clearance confidential --class warning --json"
    )]
    Search(SearchArgs),
    /// One memory: its score's parts, its sources and its review history.
    Show(ShowArgs),
    /// Review a memory: accept, reject, expire or quarantine it, saying who and why.
    Review(ReviewArgs),
    /// Decay memories now: lower recency with age and unuse, expire stale unpinned ones (the
    /// `memory.decay` job does the same in the background).
    Decay(DecayArgs),
    /// Delete expired and rejected memories past their retention, with what is recorded about
    /// them (the `memory.gc` job does the same in the background).
    Gc(GcArgs),
    /// Reject memories left in quarantine too long without a decision (the
    /// `memory.quarantine_review` job does the same in the background).
    QuarantineReview(DecayArgs),
    /// Change a memory's sensitivity, saying who and why.
    Sensitivity(SensitivityArgs),
    /// Feedback from someone who used a memory: helpful, unhelpful, or wrong (which
    /// quarantines it).
    Feedback(FeedbackArgs),
}

#[derive(Args, Debug)]
pub struct FeedbackArgs {
    /// The memory id (`mem-…`).
    id: String,
    /// helpful, unhelpful or wrong.
    #[arg(long)]
    verdict: String,
    /// Who gives it.
    #[arg(long)]
    by: String,
    /// Why (required for `wrong`).
    #[arg(long, default_value = "")]
    note: String,
    /// The run it was used in.
    #[arg(long)]
    run: Option<String>,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
pub struct GcArgs {
    /// Keep expired and rejected memories this many days after their last decision.
    #[arg(long, default_value_t = memory::RETENTION_DAYS)]
    retention_days: i64,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
pub struct SensitivityArgs {
    /// The memory id (`mem-…`).
    id: String,
    /// public, internal, confidential or secret.
    #[arg(long)]
    level: String,
    /// Who decides.
    #[arg(long)]
    by: String,
    /// Why.
    #[arg(long)]
    reason: String,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
pub struct DecayArgs {
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
pub struct DistillArgs {
    /// The run id.
    run: String,
    /// Machine-readable output (the whole report).
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
pub struct ListArgs {
    /// Only in this status: candidate, approved, rejected, quarantined, expired.
    #[arg(long)]
    status: Option<String>,
    /// Only of this class: fact, procedure, preference, warning, summary.
    #[arg(long)]
    class: Option<String>,
    /// Only those with a source in this run.
    #[arg(long)]
    run: Option<String>,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
pub struct SearchArgs {
    /// What to rank by (words; may be left out to list by score).
    text: Option<String>,
    /// Where the searcher stands (`org:acme/repo:api/task:T-1`): memories visible from there.
    #[arg(long)]
    scope: String,
    /// The searcher's clearance: public, internal, confidential or secret.
    #[arg(long, default_value = "internal")]
    clearance: String,
    /// As this agent (its envelopes' memory rules apply), and only memories from its runs.
    #[arg(long)]
    agent: Option<String>,
    /// Only memories from runs of this task.
    #[arg(long)]
    task: Option<String>,
    /// Only memories from runs opened for this user.
    #[arg(long)]
    user: Option<String>,
    /// Only memories scoped to this repository.
    #[arg(long)]
    repo: Option<String>,
    /// Only of this class: fact, procedure, preference, warning, summary.
    #[arg(long)]
    class: Option<String>,
    /// At most this many hits (1 to 200).
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u16).range(1..=200))]
    limit: u16,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
pub struct ShowArgs {
    /// The memory id (`mem-…`).
    id: String,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
pub struct ReviewArgs {
    /// The memory id (`mem-…`).
    id: String,
    /// accept, reject, expire or quarantine.
    #[arg(long)]
    decision: String,
    /// Who decides.
    #[arg(long)]
    by: String,
    /// Why.
    #[arg(long)]
    reason: String,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

pub fn run(cmd: MemoryCommand) -> Result<ExitCode> {
    match cmd {
        MemoryCommand::Distill(a) => distill(a),
        MemoryCommand::List(a) => list(a),
        MemoryCommand::Search(a) => search(a),
        MemoryCommand::Show(a) => show(a),
        MemoryCommand::Review(a) => review(a),
        MemoryCommand::Decay(a) => decay(a),
        MemoryCommand::Gc(a) => gc(a),
        MemoryCommand::QuarantineReview(a) => quarantine_review(a),
        MemoryCommand::Sensitivity(a) => sensitivity(a),
        MemoryCommand::Feedback(a) => feedback(a),
    }
}

/// Prints a refusal (exit 2) or passes a store failure on.
fn refused(e: MemoryError) -> Result<ExitCode> {
    match e {
        MemoryError::Store(_) => Err(e.into()),
        other => {
            eprintln!("error: {other}");
            Ok(ExitCode::from(2))
        }
    }
}

fn distill(args: DistillArgs) -> Result<ExitCode> {
    let recorder = Recorder::new(store_arg::open()?);
    let now = SystemClock.now_ms();
    let report = memory::distill_run(&recorder, &args.run, now, &mut |done, total, message| {
        eprintln!("tollgate: [{done}/{total}] {message}");
    });
    match report {
        Ok(r) if args.json => println!("{}", serde_json::to_string_pretty(&r)?),
        Ok(r) => print!("{}", r.to_text()),
        Err(e) => return refused(e),
    }
    Ok(ExitCode::SUCCESS)
}

fn list(args: ListArgs) -> Result<ExitCode> {
    let status = match args.status.as_deref().map(|s| (s, MemoryStatus::parse(s))) {
        None => None,
        Some((_, Some(s))) => Some(s),
        Some((s, None)) => {
            eprintln!(
                "error: `{s}` is not a status\n  help: use candidate, approved, rejected, quarantined or expired"
            );
            return Ok(ExitCode::from(2));
        }
    };
    let Ok(class) = class_arg(args.class.as_deref()) else {
        return Ok(ExitCode::from(2));
    };
    let store = store_arg::open()?;
    let filter = MemoryFilter {
        status,
        class,
        run: args.run,
    };
    let found = match memory::list(&store, &filter) {
        Ok(found) => found,
        Err(e) => return refused(e),
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&found)?);
        return Ok(ExitCode::SUCCESS);
    }
    if found.is_empty() {
        println!("no memories (distill a finished run: tollgate memory distill RUN)");
    }
    for m in &found {
        println!("{}", line(m));
    }
    Ok(ExitCode::SUCCESS)
}

/// The `--class` given, or `Err` after saying what classes there are.
fn class_arg(given: Option<&str>) -> Result<Option<MemoryClass>, ()> {
    match given.map(|c| (c, MemoryClass::parse(c))) {
        None => Ok(None),
        Some((_, Some(c))) => Ok(Some(c)),
        Some((c, None)) => {
            eprintln!(
                "error: `{c}` is not a class\n  help: use fact, procedure, preference, warning or summary"
            );
            Err(())
        }
    }
}

fn search(args: SearchArgs) -> Result<ExitCode> {
    let Ok(clearance) = serde_json::from_value::<Level>(args.clearance.clone().into()) else {
        eprintln!(
            "error: `{}` is not a clearance\n  help: use public, internal, confidential or secret",
            args.clearance
        );
        return Ok(ExitCode::from(2));
    };
    let Ok(class) = class_arg(args.class.as_deref()) else {
        return Ok(ExitCode::from(2));
    };
    let store = store_arg::open()?;
    let set = tollgate_gateway::policy::current_set(&store)?;
    let query = memory::SearchQuery {
        scope: args.scope,
        clearance,
        agent: args.agent,
        task: args.task,
        user: args.user,
        repo: args.repo,
        class,
        text: args.text.unwrap_or_default(),
        limit: usize::from(args.limit),
    };
    let now = SystemClock.now_ms().div_euclid(1000);
    let answer = match memory::search(&store, &set, &query, now) {
        Ok(a) => a,
        Err(e) => return refused(e),
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&answer)?);
        return Ok(ExitCode::SUCCESS);
    }
    if answer.hits.is_empty() {
        println!("no memory found");
    }
    for hit in &answer.hits {
        println!(
            "{:>3}. {:.3}  {}",
            hit.rank,
            hit.relevance,
            line(&hit.memory)
        );
    }
    let withheld: Vec<String> = answer
        .withheld
        .iter()
        .map(|(why, n)| format!("{n} {why}"))
        .collect();
    println!(
        "{} eligible from {}{}",
        answer.eligible,
        query.scope,
        if withheld.is_empty() {
            String::new()
        } else {
            format!("; withheld by policy: {}", withheld.join(", "))
        }
    );
    Ok(ExitCode::SUCCESS)
}

fn line(m: &MemoryArtifact) -> String {
    format!(
        "{}  {:<10} {:<11} ×{} {}  {}{}",
        m.id,
        m.class.as_str(),
        m.status.as_str(),
        m.strength,
        m.scope,
        m.text,
        if m.pinned { "  (pinned)" } else { "" }
    )
}

fn show(args: ShowArgs) -> Result<ExitCode> {
    let store = store_arg::open()?;
    let m = match memory::get(&store, &args.id) {
        Ok(m) => m,
        Err(e) => return refused(e),
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&m)?);
        return Ok(ExitCode::SUCCESS);
    }
    println!("{}", line(&m));
    let s = &m.score;
    println!(
        "score {:.2}: confidence {:.2}, reuse {:.2}, recency {:.2}, sensitivity -{:.1} ({})",
        s.total,
        s.confidence,
        s.reuse,
        s.recency,
        s.sensitivity,
        m.sensitivity.as_str()
    );
    println!("{}", expiry(&m, SystemClock.now_ms().div_euclid(1000)));
    for e in &m.sources {
        println!(
            "source run {} step {} event {} (episode {}): {}",
            e.run, e.step, e.event, e.episode, e.quote
        );
    }
    let links = match memory::usage(&store, &m.id) {
        Ok(links) => links,
        Err(e) => return refused(e),
    };
    for l in &links {
        println!(
            "used by run {} compile event {} at {}: {}",
            l.run, l.compile_seq, l.at, l.reason
        );
    }
    for d in &m.decisions {
        println!(
            "{} {} by {}: {}{}",
            d.at,
            d.decision.as_str(),
            d.by,
            d.reason,
            d.merged_into
                .as_deref()
                .map(|m| format!(" (into {m})"))
                .unwrap_or_default()
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// When a memory expires, or expired: an expired memory says when it did (its expiring
/// decision), never a time still to come (issue 33).
fn expiry(m: &MemoryArtifact, now: i64) -> String {
    let at = || rfc3339(u64::try_from(m.expires_at).unwrap_or(0));
    if m.status == MemoryStatus::Expired {
        return match m
            .decisions
            .iter()
            .rev()
            .find(|d| d.decision == Decision::Expire)
        {
            Some(d) => format!("expired {} ({} by {})", d.at, d.reason, d.by),
            None => "expired".to_string(),
        };
    }
    match m.expires_at {
        0 => "expires never (decay only)".to_string(),
        t if t <= now => format!("expired {} (to be marked so by the next decay)", at()),
        _ => format!("expires {}", at()),
    }
}

fn review(args: ReviewArgs) -> Result<ExitCode> {
    let decision = match args.decision.as_str() {
        "accept" => Decision::Accept,
        "reject" => Decision::Reject,
        "expire" => Decision::Expire,
        "quarantine" => Decision::Quarantine,
        other => {
            eprintln!(
                "error: `{other}` is not a review decision\n  help: use accept, reject, expire or quarantine"
            );
            return Ok(ExitCode::from(2));
        }
    };
    let store = store_arg::open()?;
    let at = rfc3339(u64::try_from(SystemClock.now_ms() / 1000).unwrap_or(0));
    match memory::record_decision(&store, &args.id, decision, &args.by, &args.reason, &at) {
        Ok(m) if args.json => println!("{}", serde_json::to_string_pretty(&m)?),
        Ok(m) => println!("{}", line(&m)),
        Err(e) => return refused(e),
    }
    Ok(ExitCode::SUCCESS)
}

fn decay(args: DecayArgs) -> Result<ExitCode> {
    let store = store_arg::open()?;
    let report = match memory::decay(&store, SystemClock.now_ms().div_euclid(1000)) {
        Ok(r) => r,
        Err(e) => return refused(e),
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "{} memory(ies) considered, {} pinned, {} decayed, {} expired",
        report.considered,
        report.pinned,
        report.decayed,
        report.expired.len()
    );
    for (id, why) in &report.expired {
        println!("expired {id}: {why}");
    }
    Ok(ExitCode::SUCCESS)
}

fn gc(args: GcArgs) -> Result<ExitCode> {
    let store = store_arg::open()?;
    let now = SystemClock.now_ms().div_euclid(1000);
    let report = match memory::collect(&store, now, args.retention_days) {
        Ok(r) => r,
        Err(e) => return refused(e),
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "{} memory(ies) collected (expired or rejected more than {} days ago)",
        report.collected.len(),
        report.retention_days
    );
    for id in &report.collected {
        println!("collected {id}");
    }
    Ok(ExitCode::SUCCESS)
}

fn quarantine_review(args: DecayArgs) -> Result<ExitCode> {
    let store = store_arg::open()?;
    let report = match memory::review_quarantine(&store, SystemClock.now_ms().div_euclid(1000)) {
        Ok(r) => r,
        Err(e) => return refused(e),
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "{} quarantined, {} rejected after {} days without a decision",
        report.considered,
        report.rejected.len(),
        memory::QUARANTINE_DAYS
    );
    for id in &report.rejected {
        println!("rejected {id}");
    }
    Ok(ExitCode::SUCCESS)
}

fn sensitivity(args: SensitivityArgs) -> Result<ExitCode> {
    let Ok(level) = serde_json::from_value::<Level>(serde_json::Value::String(args.level.clone()))
    else {
        eprintln!(
            "error: `{}` is not a sensitivity\n  help: use public, internal, confidential or secret",
            args.level
        );
        return Ok(ExitCode::from(2));
    };
    let store = store_arg::open()?;
    let at = rfc3339(u64::try_from(SystemClock.now_ms().div_euclid(1000)).unwrap_or(0));
    match memory::set_sensitivity(&store, &args.id, level, &args.by, &args.reason, &at) {
        Ok(m) if args.json => println!("{}", serde_json::to_string_pretty(&m)?),
        Ok(m) => println!("{}", line(&m)),
        Err(e) => return refused(e),
    }
    Ok(ExitCode::SUCCESS)
}

fn feedback(args: FeedbackArgs) -> Result<ExitCode> {
    let Some(verdict) = FeedbackVerdict::parse(&args.verdict) else {
        eprintln!(
            "error: `{}` is not a feedback verdict\n  help: use helpful, unhelpful or wrong",
            args.verdict
        );
        return Ok(ExitCode::from(2));
    };
    let store = store_arg::open()?;
    let at = rfc3339(u64::try_from(SystemClock.now_ms().div_euclid(1000)).unwrap_or(0));
    let given = MemoryFeedback {
        verdict,
        by: args.by,
        note: args.note,
        run: args.run,
        at,
    };
    match memory::give_feedback(&store, &args.id, given) {
        Ok(m) if args.json => println!("{}", serde_json::to_string_pretty(&m)?),
        Ok(m) => println!("{}", line(&m)),
        Err(e) => return refused(e),
    }
    Ok(ExitCode::SUCCESS)
}
