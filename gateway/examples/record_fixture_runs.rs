//! Records the hand-written agent sessions under `fixtures/runs/sessions/` as run files
//! (`fixtures/runs/NN-name.json`, format `tollgate.run/v1`), deterministically.
//!
//! ```text
//! cargo run -p tollgate-gateway --example record_fixture_runs            # write the files
//! cargo run -p tollgate-gateway --example record_fixture_runs -- --check # exit 1 if stale
//! ```
//!
//! Every step becomes: `context_offered` (the step's offers and the items that tool calls of
//! earlier steps produced), `compile` (every item offered so far, under the envelopes in
//! `fixtures/envelopes/`), `model_call` / `model_output` (the recorded reply), per tool call
//! `tool_call`, `decision` and, by the decision, `approval` and `tool_result` or a `note`; then
//! `handoff`, `output` and `note` when the step has them. `fixtures/runs/README.md` documents
//! the session format.

use std::collections::BTreeSet;
use std::error::Error;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde::Deserialize;
use serde_json::Value;
use tollgate_gateway::compiler::{
    CandidateItem, CompileInput, CompilePolicy, CompileSettings, ItemKind, compile, model_request,
};
use tollgate_gateway::providers::{ChatResponse, Usage};
use tollgate_gateway::recorder::events::{
    ApprovalEvent, CompileEvent, ContextOfferedEvent, DecisionEvent, EventPayload, HandoffEvent,
    ModelCallEvent, ModelOutputEvent, NoteEvent, OutputEvent, ToolCallEvent, ToolResultEvent,
    to_json,
};
use tollgate_gateway::recorder::format::{
    EnvelopeSource, EventKind, EventRecord, RUN_FORMAT, RunFile, RunHeader, StepRecord,
};
use tollgate_gateway::replay::replay_file;
use tollgate_gateway::run_policy::run_subject;
use tollgate_rules::decide::{DecisionEffect, PolicyEngine};
use tollgate_rules::envelope::{EnvelopeSet, Level, load_envelopes};
use tollgate_rules::request::subject_facts;

type Fallible<T> = Result<T, Box<dyn Error>>;

/// One hand-written session (`fixtures/runs/sessions/NN-name.yaml`).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Session {
    /// The run's header as the run file has it, but `envelopes` lists ids (the file gets
    /// `ID@VERSION`) and `finished_at` is derived.
    run: RunHeader,
    model: SessionModel,
    #[serde(default)]
    settings: CompileSettings,
    steps: Vec<SessionStep>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SessionModel {
    provider: String,
    model: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SessionStep {
    name: String,
    /// Defaults to the run's agent.
    agent: Option<String>,
    /// How long the step takes; event times are spread over it.
    seconds: u32,
    #[serde(default)]
    offer: Vec<CandidateItem>,
    model_output: String,
    #[serde(default)]
    tool_calls: Vec<SessionToolCall>,
    /// A handoff packet (goal, evidence, constraints...), recorded as a `handoff` event.
    handoff: Option<serde_json::Map<String, Value>>,
    output: Option<String>,
    #[serde(default)]
    notes: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SessionToolCall {
    tool: String,
    #[serde(default)]
    arguments: serde_json::Map<String, Value>,
    /// What the tool printed; required when the call runs, refused when it cannot.
    output: Option<String>,
    #[serde(default = "ok")]
    status: String,
    /// The approver's answer when policy asks for one (approved unless `rejected`).
    #[serde(default)]
    approval: Approval,
    approval_reason: Option<String>,
    /// The effect the session expects from policy; recording fails if it differs.
    expect: Option<DecisionEffect>,
}

#[derive(Deserialize, Default, PartialEq, Eq, Clone, Copy)]
#[serde(rename_all = "snake_case")]
enum Approval {
    #[default]
    Approved,
    Rejected,
}

fn ok() -> String {
    "ok".to_string()
}

/// The approver the envelopes name (`coding-agent`'s `lead-approves`).
const APPROVER: &str = "team-lead";

fn main() -> ExitCode {
    let check = match std::env::args().skip(1).collect::<Vec<_>>().as_slice() {
        [] => false,
        [flag] if flag == "--check" => true,
        _ => {
            eprintln!("usage: record_fixture_runs [--check]");
            return ExitCode::from(2);
        }
    };
    match run(check) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

/// Records every session; with `check`, compares instead of writing. Ok(false): stale files.
fn run(check: bool) -> Fallible<bool> {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures");
    let runs_dir = fixtures.join("runs");
    let (set, sources) = envelopes(&fixtures.join("envelopes"))?;
    let mut fresh = true;
    let mut written = BTreeSet::new();
    for path in files_with_extension(&runs_dir.join("sessions"), "yaml")? {
        let stem = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_default();
        let target = runs_dir.join(format!("{stem}.json"));
        let session: Session = serde_yaml::from_str(&std::fs::read_to_string(&path)?)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        let file =
            record(&session, &set, &sources).map_err(|e| format!("{}: {e}", path.display()))?;
        // The fixtures must replay exactly: recompiled contexts, model requests and decisions
        // all match what was recorded.
        let replay = replay_file(&file)?;
        if replay.drifted() {
            return Err(
                format!("{} drifts on replay:\n{}", path.display(), replay.to_text()).into(),
            );
        }
        let text = serde_json::to_string_pretty(&file)? + "\n";
        written.insert(target.clone());
        let summary = format!("{} steps, {} events", file.steps.len(), file.events.len());
        if check {
            if std::fs::read_to_string(&target).ok().as_deref() != Some(text.as_str()) {
                eprintln!(
                    "stale: {} (rerun the example without --check)",
                    target.display()
                );
                fresh = false;
            }
        } else {
            std::fs::write(&target, text)?;
            println!("wrote {} ({summary})", target.display());
        }
    }
    for stray in files_with_extension(&runs_dir, "json")? {
        if !written.contains(&stray) {
            eprintln!("{} has no session under sessions/", stray.display());
            fresh = false;
        }
    }
    Ok(fresh)
}

fn files_with_extension(dir: &Path, ext: &str) -> Fallible<Vec<PathBuf>> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))? {
        let path = entry?.path();
        if path.is_file() && path.extension().is_some_and(|e| e == ext) {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

/// Loads `fixtures/envelopes/*.yaml` as one set, and keeps each envelope's source text.
fn envelopes(dir: &Path) -> Fallible<(EnvelopeSet, Vec<EnvelopeSource>)> {
    let mut named = Vec::new();
    for path in files_with_extension(dir, "yaml")? {
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_string();
        named.push((name, std::fs::read_to_string(&path)?));
    }
    let set = load_envelopes(&named).map_err(|e| e.render())?;
    let mut sources = Vec::new();
    for (name, yaml) in &named {
        let head: Value = serde_yaml::from_str(yaml)?;
        let id = head.get("id").and_then(Value::as_str);
        let version = head.get("version").and_then(Value::as_u64);
        let (Some(id), Some(version)) = (id, version) else {
            return Err(format!("{name}: one envelope per file, with `id` and `version`").into());
        };
        let version = u32::try_from(version)?;
        sources.push(EnvelopeSource {
            id: id.to_string(),
            version,
            yaml: yaml.clone(),
        });
    }
    Ok((set, sources))
}

/// The events of one step before they get times and sequence numbers.
type StepEvents = Vec<(EventKind, Value)>;

/// Adds a typed event to a step's events.
fn push<P: EventPayload>(out: &mut StepEvents, payload: &P) {
    out.push((P::KIND, to_json(payload)));
}

/// Records one session as a run file.
fn record(s: &Session, set: &EnvelopeSet, sources: &[EnvelopeSource]) -> Fallible<RunFile> {
    let start = parse_utc(&s.run.started_at)?;
    let mut header = s.run.clone();
    header.envelopes.clear();
    for id in &s.run.envelopes {
        let envelope = set
            .get(id)
            .ok_or_else(|| format!("unknown envelope `{id}`"))?;
        header.envelopes.push(envelope.label());
    }
    let subject = run_subject(&header)?;
    let engine = PolicyEngine::new(set, &subject_facts(&[subject], &[]))?;
    let mut governing = engine.governing(&header.id);
    let mut listed = header.envelopes.clone();
    governing.sort();
    listed.sort();
    if governing != listed {
        return Err(
            format!("the envelopes govern as {governing:?}, the session lists {listed:?}").into(),
        );
    }
    let policy = CompilePolicy {
        engine: &engine,
        run: &header.id,
        memo: None,
    };

    let mut steps = Vec::new();
    let mut events: Vec<EventRecord> = Vec::new();
    let mut offered: Vec<CandidateItem> = Vec::new();
    let mut pending: Vec<CandidateItem> = Vec::new();
    let mut request_hashes = BTreeSet::new();
    let mut elapsed: i64 = 0;
    for (index, step) in s.steps.iter().enumerate() {
        let index = u32::try_from(index)?;
        let agent = step.agent.clone().unwrap_or_else(|| s.run.agent.clone());
        steps.push(StepRecord {
            index,
            name: step.name.clone(),
            agent,
        });
        let mut step_events: StepEvents = Vec::new();

        // 1. Offers: results of earlier tool calls first (they happened first), then the step's own.
        let mut new_items = std::mem::take(&mut pending);
        new_items.extend(step.offer.iter().cloned());
        offered.extend(new_items.iter().cloned());
        push(&mut step_events, &ContextOfferedEvent { items: new_items });

        // 2. Compile everything offered so far under the run's envelopes.
        let input = CompileInput {
            items: offered.clone(),
            settings: s.settings.clone(),
            subject: None,
        };
        let compiled = compile(&input, Some(&policy)).map_err(|e| format!("step {index}: {e}"))?;
        let compile_seq = events.len() + step_events.len();
        push(
            &mut step_events,
            &CompileEvent {
                settings: s.settings.clone(),
                item_ids: offered.iter().map(|i| i.id.clone()).collect(),
                hash: compiled.hash.clone(),
                tokens: compiled.tokens,
                outcomes: compiled.outcomes_for_record(),
                text: compiled.text.clone(),
                memories: Vec::new(),
                withheld: Vec::new(),
            },
        );

        // 3. The model call the compile leads to, and its recorded reply.
        let request = model_request(&compiled, &s.model.model);
        let request_hash = request.hash();
        if !request_hashes.insert(request_hash.clone()) {
            return Err(format!(
                "step {index} (`{}`) sends the same request as an earlier step; a model at \
                 temperature 0 would answer the same: offer something new",
                step.name
            )
            .into());
        }
        let response = ChatResponse {
            id: format!("chatcmpl-{}", &request_hash[..12]),
            model: s.model.model.clone(),
            content: step.model_output.clone(),
            finish_reason: "stop".to_string(),
            usage: Usage {
                prompt_tokens: compiled.tokens,
                completion_tokens: u32::try_from(step.model_output.split_whitespace().count())?,
            },
            tool_calls: Vec::new(),
        };
        push(
            &mut step_events,
            &ModelCallEvent {
                provider: s.model.provider.clone(),
                request,
                request_hash: request_hash.clone(),
                compile_seq: Some(u64::try_from(compile_seq)?),
                messages: None,
            },
        );
        push(
            &mut step_events,
            &ModelOutputEvent {
                request_hash,
                response,
            },
        );

        // 4. Tool calls, each decided by policy before it runs.
        for (n, call) in step.tool_calls.iter().enumerate() {
            let call_id = format!("call-{index}-{n}");
            let result = tool_call(&engine, &header, &call_id, call, &mut step_events)
                .map_err(|e| format!("step {index}, {call_id} (`{}`): {e}", call.tool))?;
            // What the agent learnt from the call is context for its later compiles.
            pending.push(CandidateItem {
                scope: header.scope.clone(),
                sensitivity: Level::Internal,
                weight: tool_result_weight(index),
                summary: Some(tool_summary(call, &result)),
                ..CandidateItem::new(format!("tool-{call_id}"), ItemKind::ToolResult, result)
            });
        }

        // 5. Handoff, output and notes.
        if let Some(handoff) = &step.handoff {
            push(&mut step_events, &HandoffEvent(handoff.clone()));
        }
        if let Some(output) = &step.output {
            push(
                &mut step_events,
                &OutputEvent {
                    content: output.clone(),
                },
            );
        }
        for note in &step.notes {
            push(&mut step_events, &NoteEvent { text: note.clone() });
        }

        // Times: the step's events spread evenly over its seconds.
        let count = i64::try_from(step_events.len())?;
        let seconds = i64::from(step.seconds);
        for (i, (kind, payload)) in step_events.into_iter().enumerate() {
            let i = i64::try_from(i)?;
            events.push(EventRecord {
                seq: u64::try_from(events.len())?,
                step: index,
                kind: kind.as_str().to_string(),
                at: format_utc(start + elapsed + i * seconds / count),
                payload,
                prev: None,
                hash: None,
            });
        }
        elapsed += seconds;
    }
    header.finished_at = Some(format_utc(start + elapsed));
    Ok(RunFile {
        format: RUN_FORMAT.to_string(),
        run: header,
        steps,
        events,
        envelope_sources: sources.to_vec(),
    })
}

/// Records one tool call and returns what the agent is told: the tool's output, or why it
/// did not run.
fn tool_call(
    engine: &PolicyEngine,
    header: &RunHeader,
    call_id: &str,
    call: &SessionToolCall,
    out: &mut StepEvents,
) -> Fallible<String> {
    let arguments = Value::Object(call.arguments.clone());
    push(
        out,
        &ToolCallEvent {
            call_id: call_id.to_string(),
            tool: call.tool.clone(),
            arguments: arguments.clone(),
            usage: None,
            call_hash: None,
        },
    );
    let decision = engine.decide_tool(&header.id, &call.tool, &arguments);
    let effect = decision.effect;
    let rules = decision.rules.join(", ");
    if let Some(expected) = call.expect
        && expected != effect
    {
        return Err(format!(
            "policy says {} by {rules}, the session expects {}",
            effect.as_str(),
            expected.as_str()
        )
        .into());
    }
    push(
        out,
        &DecisionEvent {
            outcome: None,
            call_id: Some(call_id.to_string()),
            ..DecisionEvent::new(&decision, effect)
        },
    );
    match effect {
        DecisionEffect::Allow => {}
        DecisionEffect::RequireApproval => {
            let approved = call.approval == Approval::Approved;
            let answer = if approved { "approved" } else { "rejected" };
            let reason = call.approval_reason.as_deref().unwrap_or(answer);
            push(
                out,
                &ApprovalEvent {
                    approval_id: format!("appr-{call_id}"),
                    decision: answer.to_string(),
                    by: APPROVER.to_string(),
                    reason: reason.to_string(),
                    call_id: Some(call_id.to_string()),
                    call_hash: None,
                },
            );
            if !approved {
                return refused(
                    out,
                    call_id,
                    call,
                    format!(
                        "{APPROVER} rejected `{}` ({reason}); it did not run",
                        call.tool
                    ),
                );
            }
        }
        DecisionEffect::Deny | DecisionEffect::RateLimited | DecisionEffect::Redact => {
            let verb = if effect == DecisionEffect::RateLimited {
                "rate-limited"
            } else {
                "denied"
            };
            return refused(
                out,
                call_id,
                call,
                format!("policy {verb} `{}` by {rules}; it did not run", call.tool),
            );
        }
    }
    let output = call
        .output
        .clone()
        .ok_or("the call runs, so the session must give its `output`")?;
    push(
        out,
        &ToolResultEvent {
            call_id: call_id.to_string(),
            status: call.status.clone(),
            output: Value::String(output.clone()),
        },
    );
    Ok(output)
}

/// Records that a call did not run and returns what the agent is told.
fn refused(
    out: &mut StepEvents,
    call_id: &str,
    call: &SessionToolCall,
    told: String,
) -> Fallible<String> {
    let note = format!("{call_id}: {told}; the agent was told");
    push(out, &NoteEvent { text: note });
    match call.output {
        Some(_) => Err(format!("{told}, yet the session gives it an `output`").into()),
        None => Ok(told),
    }
}

/// Tool results outrank docs, files and memories (weight 2) and yield to messages (3); a later
/// result outranks an earlier one, so a full context drops the oldest observations first.
fn tool_result_weight(step: u32) -> f64 {
    (2.0 + f64::from(step) / 1000.0).min(2.999)
}

/// What the agent keeps of a call when its full result no longer fits: the tool, its main
/// argument and the size of what it said.
fn tool_summary(call: &SessionToolCall, result: &str) -> String {
    let clip = |text: &str| -> String {
        let short: String = text.chars().take(100).collect();
        if short.len() < text.len() {
            short + "..."
        } else {
            short
        }
    };
    let target = ["path", "command", "url", "pattern", "name"]
        .iter()
        .find_map(|key| call.arguments.get(*key).and_then(Value::as_str))
        .map(|arg| format!(" {}", clip(arg)))
        .unwrap_or_default();
    let first = clip(result.lines().next().unwrap_or(""));
    let lines = result.lines().count();
    format!(
        "{}{target}: {lines} line(s) of output, starting `{first}`",
        call.tool
    )
}

/// Seconds since the epoch of `YYYY-MM-DDTHH:MM:SSZ`.
fn parse_utc(text: &str) -> Fallible<i64> {
    let bad = || format!("`{text}` is not YYYY-MM-DDTHH:MM:SSZ");
    let (date, time) = text
        .strip_suffix('Z')
        .and_then(|t| t.split_once('T'))
        .ok_or_else(bad)?;
    let fields = |part: &str, sep: char| -> Option<Vec<i64>> {
        part.split(sep).map(|n| n.parse().ok()).collect()
    };
    match (fields(date, '-').as_deref(), fields(time, ':').as_deref()) {
        (Some(&[y, m, d]), Some(&[hh, mm, ss]))
            if (1..=12).contains(&m) && (1..=31).contains(&d) && hh < 24 && mm < 60 && ss < 60 =>
        {
            Ok(days_from_civil(y, m, d) * 86_400 + hh * 3_600 + mm * 60 + ss)
        }
        _ => Err(bad().into()),
    }
}

fn format_utc(t: i64) -> String {
    let (days, secs) = (t.div_euclid(86_400), t.rem_euclid(86_400));
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        secs / 3_600,
        secs % 3_600 / 60,
        secs % 60
    )
}

// Howard Hinnant's `days_from_civil` / `civil_from_days` (proleptic Gregorian calendar).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}
