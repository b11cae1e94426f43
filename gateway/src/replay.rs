//! Exact-run replay: recompile every compile of a recorded run from its recorded items and
//! settings under the envelopes it was recorded with, serve the recorded model and tool
//! outputs, and report per step whether the compiled context hashes, the model requests, the
//! outputs and the policy decisions match. Any difference is drift, listed with the first
//! differing item.
//!
//! Each decision is re-decided under the envelope versions it recorded (a run that spanned an
//! envelope update was decided under two versions of it; see [`RecordedVersions`]).
//!
//! The model request a compile leads to is [`model_request`]: the compiled text as the system
//! message, temperature 0. The recorder, the fixture generator and replay share it, so a
//! context change shows up as a different request hash and a replay-provider miss.

use std::collections::HashMap;

use serde::Serialize;
use serde_json::Value;
use tollgate_rules::decide::{DecisionEffect, PolicyEngine, PolicyRequest};
use tollgate_rules::engine::{FactSet, Value as EngineValue};
use tollgate_rules::envelope::request::{
    ModelCall, RunSubject, SUBJECT_ORIGIN, ToolCall, subject_facts,
};
use tollgate_rules::envelope::{EnvelopeSet, Level, load_envelopes};

use crate::compiler::{
    CandidateItem, CompileInput, CompilePolicy, CompileSettings, CompiledContext, compile,
};
use crate::providers::{
    ChatMessage, ChatRequest, ChatResponse, FakeProvider, Provider, ReplayProvider,
};
use crate::recorder::format::{EventRecord, RunFile, RunHeader};
use crate::recorder::{Recorder, RecorderError, short};

pub(crate) mod versions;
pub use versions::RecordedVersions;

/// The chat request the gateway sends for a compiled context.
pub fn model_request(compiled: &CompiledContext, model: &str) -> ChatRequest {
    ChatRequest {
        model: model.to_string(),
        messages: vec![ChatMessage::new("system", compiled.text.clone())],
        temperature: Some(0.0),
        max_tokens: None,
        extra: Default::default(),
    }
}

/// Why a replay could not run at all (drift is not an error: it is the report).
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// The run could not be read.
    #[error(transparent)]
    Recorder(#[from] RecorderError),
    /// The run's recorded envelopes no longer load.
    #[error("the envelopes recorded with run `{run}` do not load:\n{detail}")]
    Envelopes {
        /// Run id.
        run: String,
        /// The diagnostics.
        detail: String,
    },
    /// The policy engine could not be built.
    #[error("cannot build the policy of run `{run}`: {detail}")]
    Policy {
        /// Run id.
        run: String,
        /// What failed.
        detail: String,
    },
}

/// One comparison.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReplayCheck {
    /// The recorded event compared.
    pub seq: u64,
    /// `compile`, `model`, `tool` or `decision`.
    pub check: &'static str,
    /// Whether the replay reproduced the recording.
    pub matched: bool,
    /// What was compared, or what differs.
    pub detail: String,
    /// For a compile that drifted: the first item whose outcome differs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_difference: Option<String>,
}

/// The checks of one step.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepReplay {
    /// Step index.
    pub step: u32,
    /// Step name.
    pub name: String,
    /// Its checks, in event order.
    pub checks: Vec<ReplayCheck>,
}

impl StepReplay {
    /// Whether every check of the step matched.
    pub fn matched(&self) -> bool {
        self.checks.iter().all(|c| c.matched)
    }
}

/// The result of an exact replay.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReplayReport {
    /// Run id.
    pub run: String,
    /// Per step.
    pub steps: Vec<StepReplay>,
    /// Compiles recomputed.
    pub compiles: usize,
    /// Model calls served.
    pub model_calls: usize,
    /// Tool calls re-decided and served.
    pub tool_calls: usize,
}

impl ReplayReport {
    /// Whether anything drifted.
    pub fn drifted(&self) -> bool {
        self.steps.iter().any(|s| !s.matched())
    }

    /// A readable report: one line per step, then each drift with its detail.
    pub fn to_text(&self) -> String {
        use std::fmt::Write as _;
        let mut out = String::new();
        for s in &self.steps {
            let mark = if s.matched() { "ok   " } else { "DRIFT" };
            let _ = writeln!(
                out,
                "{mark} step {:>3} {:<40} {} check(s)",
                s.step,
                s.name,
                s.checks.len()
            );
            for c in s.checks.iter().filter(|c| !c.matched) {
                let _ = writeln!(out, "        event {} {}: {}", c.seq, c.check, c.detail);
                if let Some(first) = &c.first_difference {
                    let _ = writeln!(out, "          first difference: {first}");
                }
            }
        }
        let drifted: usize = self.steps.iter().filter(|s| !s.matched()).count();
        let _ = writeln!(
            out,
            "\nrun {}: {} compiles, {} model calls, {} tool calls replayed; {}",
            self.run,
            self.compiles,
            self.model_calls,
            self.tool_calls,
            if drifted == 0 {
                "no drift".to_string()
            } else {
                format!("drift in {drifted} step(s)")
            }
        );
        out
    }
}

/// Replays a stored run exactly.
pub fn replay_exact(recorder: &Recorder, run: &str) -> Result<ReplayReport, ReplayError> {
    let file = recorder.export(run)?;
    replay_file(&file)
}

/// Replays a run file exactly (no store needed).
pub fn replay_file(file: &RunFile) -> Result<ReplayReport, ReplayError> {
    let policies = ReplayPolicies::new(file)?;
    let provider = ReplayProvider::new(file.events.iter().filter_map(|e| {
        (e.kind == "model_output").then(|| {
            let hash = str_of(&e.payload, "request_hash");
            let response: Option<ChatResponse> = e
                .payload
                .get("response")
                .and_then(|r| serde_json::from_value(r.clone()).ok());
            response.map(|r| (hash, r))
        })?
    }));
    let mut replay = Replayer {
        file,
        policies: policies.as_ref(),
        provider,
        offered: HashMap::new(),
        compiled: HashMap::new(),
        report: ReplayReport {
            run: file.run.id.clone(),
            steps: file
                .steps
                .iter()
                .map(|s| StepReplay {
                    step: s.index,
                    name: s.name.clone(),
                    checks: Vec::new(),
                })
                .collect(),
            compiles: 0,
            model_calls: 0,
            tool_calls: 0,
        },
    };
    for e in &file.events {
        replay.event(e);
    }
    Ok(replay.report)
}

/// The policies a run was decided under: one engine per distinct set of envelope versions its
/// decisions recorded (a run that spanned an envelope update has two), each decision re-decided
/// by the engine of its own versions.
struct ReplayPolicies<'a> {
    versions: RecordedVersions<'a>,
    /// By sorted `ID@VERSION`s; an error names versions the run does not hold.
    engines: HashMap<Vec<String>, Result<PolicyEngine, String>>,
}

impl<'a> ReplayPolicies<'a> {
    /// The run's engines, when it was recorded with envelopes.
    fn new(file: &'a RunFile) -> Result<Option<ReplayPolicies<'a>>, ReplayError> {
        let versions = RecordedVersions::new(file);
        if versions.is_empty() {
            return Ok(None);
        }
        let facts = run_facts(&file.run).map_err(|detail| ReplayError::Policy {
            run: file.run.id.clone(),
            detail,
        })?;
        let mut engines = HashMap::new();
        for set in versions.used(file) {
            let engine = match versions.sources(&set) {
                Ok(named) => Ok(engine_over(file, &named, &facts)?),
                Err(missing) => Err(missing),
            };
            engines.insert(set, engine);
        }
        Ok(Some(ReplayPolicies { versions, engines }))
    }

    /// The engine of the versions in force when the run opened.
    #[cfg(test)]
    fn opening_engine(&self) -> &PolicyEngine {
        match self.engines.get(self.versions.opening()) {
            Some(Ok(engine)) => engine,
            _ => panic!("the opening versions always build"),
        }
    }

    /// The engine of the versions event `e` recorded (the opening versions when it recorded
    /// none).
    fn engine(&self, e: &EventRecord) -> Result<&PolicyEngine, String> {
        let set = RecordedVersions::of_event(e);
        let set = set.as_deref().unwrap_or(self.versions.opening());
        match self.engines.get(set) {
            Some(Ok(engine)) => Ok(engine),
            Some(Err(missing)) => Err(missing.clone()),
            None => Err(format!("no policy was built for {}", set.join(", "))),
        }
    }
}

/// An engine over the named envelope sources and a run's subject facts.
fn engine_over(
    file: &RunFile,
    named: &[(String, &str)],
    facts: &FactSet,
) -> Result<PolicyEngine, ReplayError> {
    let set: EnvelopeSet = load_envelopes(named).map_err(|e| ReplayError::Envelopes {
        run: file.run.id.clone(),
        detail: e.render(),
    })?;
    PolicyEngine::new(&set, facts).map_err(|e| ReplayError::Policy {
        run: file.run.id.clone(),
        detail: e.to_string(),
    })
}

/// The subject facts a run's policy is materialised over: the run (agent, task, scope,
/// clearance) and the envelopes attached to the run itself when it was opened (kept in its
/// metadata under [`crate::runtime::ATTACHED_ENVELOPES`]).
pub fn run_facts(h: &RunHeader) -> Result<FactSet, String> {
    let mut facts = subject_facts(&[run_subject(h)?], &[]);
    for id in crate::runtime::attached_envelopes(&h.metadata) {
        facts.add(
            "envelope_attached",
            vec![
                EngineValue::sym(id),
                EngineValue::sym("run"),
                EngineValue::sym(&h.id),
            ],
            SUBJECT_ORIGIN,
        );
    }
    Ok(facts)
}

/// The tool decision request a recorded `tool_call` event stands for: its tool, arguments and
/// the rate-limit usage the gateway counted when it was decided.
pub fn recorded_tool_request(run: &str, payload: &Value) -> PolicyRequest {
    PolicyRequest::Tool {
        run: run.to_string(),
        call: ToolCall {
            name: str_of(payload, "tool"),
            args: payload.get("arguments").cloned().unwrap_or(Value::Null),
            usage: payload
                .get("usage")
                .and_then(|u| serde_json::from_value(u.clone()).ok())
                .unwrap_or_default(),
        },
        now: None,
    }
}

/// The model call a `decision` event records when the gateway refused it (no `model_call`
/// event follows a refusal): its provider, model and reasoning mode.
pub fn refused_model_call(payload: &Value) -> Option<ModelCall> {
    let refused = payload
        .get("refused_model_call")
        .filter(|r| r.is_object())?;
    Some(ModelCall {
        provider: str_of(refused, "provider"),
        model: str_of(refused, "model"),
        reasoning: str_of(refused, "reasoning"),
    })
}

/// The policy subject of a run.
pub fn run_subject(h: &RunHeader) -> Result<RunSubject, String> {
    let clearance: Level = serde_json::from_value(Value::String(h.clearance.clone()))
        .map_err(|_| format!("clearance `{}` is not a level", h.clearance))?;
    Ok(RunSubject {
        run: h.id.clone(),
        agent: h.agent.clone(),
        task: h.task.clone(),
        scope: h.scope.clone(),
        clearance,
    })
}

/// The job kind that replays a stored run exactly: payload `{"run": "RUN"}`; the result is the
/// report's figures and the steps that drifted (drift is a result, not a failure).
pub const REPLAY_EXACT_JOB: &str = "replay.exact";

/// The `replay.exact` job handler.
pub fn replay_exact_job(
    context: &crate::jobs::JobContext<'_>,
    payload: &Value,
) -> Result<Value, crate::jobs::JobFailure> {
    let run = payload.get("run").and_then(Value::as_str).ok_or_else(|| {
        crate::jobs::JobFailure::permanent(
            "a `replay.exact` payload names its run\n  help: {\"run\": \"run-1\"}",
        )
    })?;
    context.progress(0, 1, &format!("replaying {run}"))?;
    let recorder = Recorder::new(context.store().clone());
    let report = match replay_exact(&recorder, run) {
        Ok(r) => r,
        Err(ReplayError::Recorder(RecorderError::UnknownRun(r))) => {
            return Err(crate::jobs::JobFailure::permanent(format!("no run `{r}`")));
        }
        Err(e) => return Err(crate::jobs::JobFailure::permanent(e.to_string())),
    };
    let drifted: Vec<u32> = report
        .steps
        .iter()
        .filter(|s| !s.matched())
        .map(|s| s.step)
        .collect();
    context.progress(
        1,
        1,
        if drifted.is_empty() {
            "no drift"
        } else {
            "drift"
        },
    )?;
    Ok(serde_json::json!({
        "run": report.run,
        "drift": !drifted.is_empty(),
        "drifted_steps": drifted,
        "compiles": report.compiles,
        "model_calls": report.model_calls,
        "tool_calls": report.tool_calls,
    }))
}

fn str_of(v: &Value, key: &str) -> String {
    v.get(key).and_then(Value::as_str).unwrap_or("").to_string()
}

struct Replayer<'a> {
    file: &'a RunFile,
    policies: Option<&'a ReplayPolicies<'a>>,
    provider: ReplayProvider,
    /// Items offered so far, by id (a later offer of an id replaces the earlier).
    offered: HashMap<String, CandidateItem>,
    /// Recompiled contexts by the seq of their compile event.
    compiled: HashMap<u64, CompiledContext>,
    report: ReplayReport,
}

impl Replayer<'_> {
    fn check(&mut self, e: &EventRecord, check: ReplayCheck) {
        if let Some(step) = self.report.steps.iter_mut().find(|s| s.step == e.step) {
            step.checks.push(check);
        }
    }

    fn event(&mut self, e: &EventRecord) {
        match e.kind.as_str() {
            "context_offered" => {
                let items = e.payload.get("items").and_then(Value::as_array);
                for item in items.into_iter().flatten() {
                    match serde_json::from_value::<CandidateItem>(item.clone()) {
                        Ok(item) => {
                            self.offered.insert(item.id.clone(), item);
                        }
                        Err(err) => {
                            let check = drift(
                                e.seq,
                                "compile",
                                format!("an offered item does not read: {err}"),
                            );
                            self.check(e, check);
                        }
                    }
                }
            }
            "compile" => {
                let check = self.compile(e);
                self.report.compiles += 1;
                self.check(e, check);
            }
            "model_call" => {
                let check = self.model_call(e);
                self.report.model_calls += 1;
                self.check(e, check);
            }
            "tool_call" => {
                let checks = self.tool_call(e);
                self.report.tool_calls += 1;
                for c in checks {
                    self.check(e, c);
                }
            }
            "decision" => {
                if let Some(check) = self.refused_model_call(e) {
                    self.check(e, check);
                }
            }
            _ => {}
        }
    }

    /// A model call the gateway refused (its decision event records the call; nothing was
    /// sent): the envelopes must refuse it again.
    fn refused_model_call(&self, e: &EventRecord) -> Option<ReplayCheck> {
        let p = &e.payload;
        let call = refused_model_call(p)?;
        let engine = match self.policies?.engine(e) {
            Ok(engine) => engine,
            Err(why) => return Some(drift(e.seq, "decision", why)),
        };
        let now = engine.decide_model(&self.file.run.id, &call);
        let was = p
            .pointer("/decision/effect")
            .and_then(Value::as_str)
            .unwrap_or("");
        let matched = now.effect.as_str() == was;
        Some(ReplayCheck {
            seq: e.seq,
            check: "decision",
            matched,
            detail: if matched {
                format!(
                    "model {}/{}: {was} by {}",
                    call.provider,
                    call.model,
                    now.rules.join(", ")
                )
            } else {
                format!(
                    "model {}/{}: {was} was recorded, the envelopes now say {} by {}",
                    call.provider,
                    call.model,
                    now.effect.as_str(),
                    now.rules.join(", ")
                )
            },
            first_difference: None,
        })
    }

    fn compile(&mut self, e: &EventRecord) -> ReplayCheck {
        let p = &e.payload;
        let settings: CompileSettings = match p.get("settings").cloned().map(serde_json::from_value)
        {
            Some(Ok(s)) => s,
            Some(Err(err)) => {
                return drift(
                    e.seq,
                    "compile",
                    format!("the recorded settings do not read: {err}"),
                );
            }
            None => CompileSettings::default(),
        };
        let ids: Vec<String> = p
            .get("item_ids")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        let mut items = Vec::with_capacity(ids.len());
        for id in &ids {
            match self.offered.get(id) {
                Some(item) => items.push(item.clone()),
                None => {
                    return ReplayCheck {
                        first_difference: Some(id.clone()),
                        ..drift(
                            e.seq,
                            "compile",
                            format!("item `{id}` was compiled but never offered before"),
                        )
                    };
                }
            }
        }
        let input = CompileInput {
            items,
            settings,
            subject: None,
        };
        let policy = match self.policies.map(|p| p.engine(e)).transpose() {
            Ok(engine) => engine.map(|engine| CompilePolicy {
                engine,
                run: &self.file.run.id,
            }),
            Err(why) => return drift(e.seq, "compile", why),
        };
        let compiled = match compile(&input, policy.as_ref()) {
            Ok(c) => c,
            Err(err) => return drift(e.seq, "compile", format!("the compile fails now: {err}")),
        };
        let recorded = str_of(p, "hash");
        let check = if compiled.hash == recorded {
            ReplayCheck {
                seq: e.seq,
                check: "compile",
                matched: true,
                detail: format!("{} items, hash {}", ids.len(), short(&recorded)),
                first_difference: None,
            }
        } else {
            ReplayCheck {
                first_difference: Some(first_difference(p, &compiled)),
                ..drift(
                    e.seq,
                    "compile",
                    format!(
                        "context hash {} was recorded, the recompile gives {}",
                        short(&recorded),
                        short(&compiled.hash)
                    ),
                )
            }
        };
        self.compiled.insert(e.seq, compiled);
        check
    }

    fn model_call(&mut self, e: &EventRecord) -> ReplayCheck {
        let p = &e.payload;
        let recorded_hash = str_of(p, "request_hash");
        let recorded: Option<ChatRequest> = p
            .get("request")
            .and_then(|r| serde_json::from_value(r.clone()).ok());
        let Some(recorded) = recorded else {
            return drift(e.seq, "model", "the recorded request does not read".into());
        };
        let request = match p.get("compile_seq").and_then(Value::as_u64) {
            Some(seq) => match self.compiled.get(&seq) {
                Some(compiled) => model_request(compiled, &recorded.model),
                None => {
                    return drift(e.seq, "model", format!("compile {seq} was not replayed"));
                }
            },
            // An agent's own request (not from a compile) is replayed as recorded.
            None => recorded.clone(),
        };
        let hash = request.hash();
        if hash != recorded_hash {
            return drift(
                e.seq,
                "model",
                format!(
                    "request {} was recorded, the replay sends {}",
                    short(&recorded_hash),
                    short(&hash)
                ),
            );
        }
        let served = match self.provider.complete(&request) {
            Ok(r) => r,
            Err(err) => return drift(e.seq, "model", err.to_string()),
        };
        // The fake provider is a function of the request: recompute it rather than trust
        // the recording.
        if str_of(p, "provider") == "fake" {
            match FakeProvider::new().complete(&request) {
                Ok(fresh) if fresh == served => {}
                Ok(_) => {
                    return drift(
                        e.seq,
                        "model",
                        "the fake provider now answers differently from the recorded output".into(),
                    );
                }
                Err(err) => return drift(e.seq, "model", err.to_string()),
            }
        }
        let expected = self.file.events.iter().find(|o| {
            o.kind == "model_output" && o.seq > e.seq && str_of(&o.payload, "request_hash") == hash
        });
        let expected: Option<ChatResponse> = expected
            .and_then(|o| o.payload.get("response"))
            .and_then(|r| serde_json::from_value(r.clone()).ok());
        match expected {
            Some(r) if r == served => ReplayCheck {
                seq: e.seq,
                check: "model",
                matched: true,
                detail: format!("request {} served {}", short(&hash), r.id),
                first_difference: None,
            },
            Some(_) => drift(
                e.seq,
                "model",
                "the served output differs from the recorded one".into(),
            ),
            None => drift(
                e.seq,
                "model",
                "no recorded output follows this call".into(),
            ),
        }
    }

    fn tool_call(&mut self, e: &EventRecord) -> Vec<ReplayCheck> {
        let p = &e.payload;
        let call = str_of(p, "call_id");
        let tool = str_of(p, "tool");
        let later = |kind: &str| {
            self.file
                .events
                .iter()
                .find(|o| o.kind == kind && o.seq > e.seq && str_of(&o.payload, "call_id") == call)
        };
        let recorded_decision = later("decision");
        let result = later("tool_result");
        let mut checks = Vec::new();
        if let (Some(policies), Some(recorded)) = (self.policies, recorded_decision) {
            let engine = match policies.engine(recorded) {
                Ok(engine) => engine,
                Err(why) => {
                    checks.push(drift(
                        recorded.seq,
                        "decision",
                        format!("{call} {tool}: {why}"),
                    ));
                    return checks;
                }
            };
            let now = engine.decide(&recorded_tool_request(&self.file.run.id, p));
            let was = recorded
                .payload
                .pointer("/decision/effect")
                .and_then(Value::as_str)
                .unwrap_or("");
            checks.push(ReplayCheck {
                seq: recorded.seq,
                check: "decision",
                matched: now.effect.as_str() == was,
                detail: if now.effect.as_str() == was {
                    format!("{call} {tool}: {was} by {}", now.rules.join(", "))
                } else {
                    format!(
                        "{call} {tool}: {was} was recorded, the envelopes now say {} by {}",
                        now.effect.as_str(),
                        now.rules.join(", ")
                    )
                },
                first_difference: None,
            });
            let executes = matches!(
                now.effect,
                DecisionEffect::Allow | DecisionEffect::RequireApproval
            );
            if !executes && result.is_some() {
                checks.push(drift(
                    e.seq,
                    "tool",
                    format!("{call} {tool} has a recorded result but would not be executed now"),
                ));
            }
        }
        checks.push(match result {
            Some(r) => ReplayCheck {
                seq: r.seq,
                check: "tool",
                matched: true,
                detail: format!(
                    "{call} {tool}: served the recorded {} output",
                    str_of(&r.payload, "status")
                ),
                first_difference: None,
            },
            None => ReplayCheck {
                seq: e.seq,
                check: "tool",
                matched: true,
                detail: format!("{call} {tool}: not executed (no recorded result)"),
                first_difference: None,
            },
        });
        checks
    }
}

fn drift(seq: u64, check: &'static str, detail: String) -> ReplayCheck {
    ReplayCheck {
        seq,
        check,
        matched: false,
        detail,
        first_difference: None,
    }
}

/// The first item whose recorded outcome (status, tokens, reason) differs from the
/// recompile's; failing that, the first differing line of the text.
fn first_difference(recorded: &Value, now: &CompiledContext) -> String {
    let outcomes = recorded.get("outcomes").and_then(Value::as_array);
    for (i, o) in now.outcomes.iter().enumerate() {
        let was = outcomes.and_then(|os| os.get(i));
        let now_json = serde_json::to_value(o).unwrap_or(Value::Null);
        let same = |key: &str| was.and_then(|w| w.get(key)) == now_json.get(key);
        if was.is_none() || !same("id") || !same("status") || !same("tokens") || !same("reason") {
            let was_status = was
                .map(|w| str_of(w, "status"))
                .unwrap_or_else(|| "absent".into());
            return format!(
                "item `{}`: recorded {was_status}, now {} ({})",
                o.id,
                o.status.as_str(),
                now_json
                    .get("reason")
                    .map(Value::to_string)
                    .unwrap_or_default()
            );
        }
    }
    let text = str_of(recorded, "text");
    for (n, (a, b)) in text.lines().zip(now.text.lines()).enumerate() {
        if a != b {
            return format!(
                "line {} of the compiled text: recorded `{a}`, now `{b}`",
                n + 1
            );
        }
    }
    "the compiled text differs in length".to_string()
}

#[cfg(test)]
mod tests;
