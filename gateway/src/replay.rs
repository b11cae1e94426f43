//! Exact-run replay: recompile every compile of a recorded run from its recorded items and
//! settings under the envelopes it was recorded with, serve the recorded model and tool
//! outputs, and report per step whether the compiled context hashes, the model requests, the
//! outputs and the policy decisions match. Any difference is drift, listed with the first
//! differing item.
//!
//! Each decision is re-decided under the envelope versions it recorded (a run that spanned an
//! envelope update was decided under two versions of it; see [`RecordedVersions`]).
//!
//! The model request a compile leads to is [`crate::compiler::model_request`]: the compiled
//! text as the system message, temperature 0. The fixture generator and replay share it, so a
//! context change shows up as a different request hash and a replay-provider miss.
//!
//! Events are read through their payload types ([`crate::recorder::events`]); a payload that
//! does not read is drift at that event.

pub mod batch;
pub mod counterfactual;
pub mod export;
pub mod jobs;
pub mod metrics;
pub mod result;
pub mod scenario;
pub mod store;

use std::collections::HashMap;

use serde::Serialize;
use serde_json::Value;
use tollgate_rules::decide::{DecisionEffect, PolicyEngine};
use tollgate_rules::engine::FactSet;
use tollgate_rules::envelope::{EnvelopeSet, load_envelopes};

use crate::compiler::{
    CandidateItem, CompileInput, CompilePolicy, CompiledContext, ContextMemo, compile,
    model_request,
};
use crate::providers::{FakeProvider, Provider, ReplayProvider};
use crate::recorder::events::{
    CompileEvent, DecisionEvent, Event, ModelCallEvent, ModelOutputEvent, ToolCallEvent,
    ToolResultEvent,
};
use crate::recorder::format::{EventKind, EventRecord, RunFile};
use crate::recorder::{Recorder, RecorderError, short};
use crate::run_policy::{RecordedVersions, recorded_tool_request, refused_model_call, run_facts};

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
    /// A counterfactual's scenario does not fit its run.
    #[error(transparent)]
    Scenario(#[from] scenario::ScenarioError),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    /// No such scenario, result or batch.
    #[error("{0}")]
    NotFound(String),
    /// A job could not be enqueued or read.
    #[error("job queue: {0}")]
    Job(String),
    /// Something that cannot fail did (a value that does not encode).
    #[error("{0}")]
    Internal(String),
    /// The run does not reproduce, so no counterfactual can be compared with it.
    #[error("run `{run}` cannot be a baseline: {detail}")]
    Baseline {
        /// Run id.
        run: String,
        /// Why.
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
        let output = e.read::<ModelOutputEvent>()?;
        Some((output.request_hash, output.response))
    }));
    let mut replay = Replayer {
        file,
        policies: policies.as_ref(),
        provider,
        offered: HashMap::new(),
        compiled: HashMap::new(),
        memo: ContextMemo::default(),
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
pub struct ReplayPolicies<'a> {
    versions: RecordedVersions<'a>,
    /// By sorted `ID@VERSION`s; an error names versions the run does not hold.
    engines: HashMap<Vec<String>, Result<PolicyEngine, String>>,
}

impl<'a> ReplayPolicies<'a> {
    /// The run's engines, when it was recorded with envelopes.
    pub fn new(file: &'a RunFile) -> Result<Option<ReplayPolicies<'a>>, ReplayError> {
        Self::with_disabled(file, &[])
    }

    /// The run's engines with the envelope rules `disabled` (`ENVELOPE/RULE`) taken out of
    /// every version that has them (a counterfactual replay's `disable_rule`).
    fn with_disabled(
        file: &'a RunFile,
        disabled: &[String],
    ) -> Result<Option<ReplayPolicies<'a>>, ReplayError> {
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
                Ok(named) => Ok(engine_over(file, &named, &facts, disabled)?),
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
    pub fn engine(&self, e: &EventRecord) -> Result<&PolicyEngine, String> {
        let set = RecordedVersions::of_event(e);
        let set = set.as_deref().unwrap_or(self.versions.opening());
        match self.engines.get(set) {
            Some(Ok(engine)) => Ok(engine),
            Some(Err(missing)) => Err(missing.clone()),
            None => Err(format!("no policy was built for {}", set.join(", "))),
        }
    }
}

/// An engine over the named envelope sources, less the `disabled` rules, and a run's
/// subject facts.
fn engine_over(
    file: &RunFile,
    named: &[(String, &str)],
    facts: &FactSet,
    disabled: &[String],
) -> Result<PolicyEngine, ReplayError> {
    let mut set: EnvelopeSet = load_envelopes(named).map_err(|e| ReplayError::Envelopes {
        run: file.run.id.clone(),
        detail: e.render(),
    })?;
    for rule in disabled {
        if let Some(without) = set.without_rule(rule) {
            set = without;
        }
    }
    PolicyEngine::new(&set, facts).map_err(|e| ReplayError::Policy {
        run: file.run.id.clone(),
        detail: e.to_string(),
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

struct Replayer<'a> {
    file: &'a RunFile,
    policies: Option<&'a ReplayPolicies<'a>>,
    provider: ReplayProvider,
    /// Items offered so far, by id (a later offer of an id replaces the earlier).
    offered: HashMap<String, CandidateItem>,
    /// Recompiled contexts by the seq of their compile event.
    compiled: HashMap<u64, CompiledContext>,
    /// Context decisions made so far (an item is decided again at every compile).
    memo: ContextMemo,
    report: ReplayReport,
}

impl Replayer<'_> {
    fn check(&mut self, e: &EventRecord, check: ReplayCheck) {
        if let Some(step) = self.report.steps.iter_mut().find(|s| s.step == e.step) {
            step.checks.push(check);
        }
    }

    fn event(&mut self, e: &EventRecord) {
        let check = match e.event_kind() {
            Some(kind @ (EventKind::ContextOffered | EventKind::Compile)) => (kind, "compile"),
            Some(kind @ EventKind::ModelCall) => (kind, "model"),
            Some(kind @ EventKind::ToolCall) => (kind, "tool"),
            Some(kind @ EventKind::Decision) => (kind, "decision"),
            _ => return,
        };
        let event = match e.event() {
            Ok(event) => event,
            // A decision is checked here only when it carries a refused model call; one that
            // does not read carries none (a session's own decision may be any shape).
            Err(_) if check.0 == EventKind::Decision => return,
            Err(err) => {
                match check.0 {
                    EventKind::Compile => self.report.compiles += 1,
                    EventKind::ModelCall => self.report.model_calls += 1,
                    EventKind::ToolCall => self.report.tool_calls += 1,
                    _ => {}
                }
                let check = drift(e.seq, check.1, err.to_string());
                self.check(e, check);
                return;
            }
        };
        match event {
            Event::ContextOffered(offered) => {
                for item in offered.items {
                    self.offered.insert(item.id.clone(), item);
                }
            }
            Event::Compile(compile) => {
                let check = self.compile(e, &compile);
                self.report.compiles += 1;
                self.check(e, check);
            }
            Event::ModelCall(call) => {
                let check = self.model_call(e, &call);
                self.report.model_calls += 1;
                self.check(e, check);
            }
            Event::ToolCall(call) => {
                let checks = self.tool_call(e, &call);
                self.report.tool_calls += 1;
                for c in checks {
                    self.check(e, c);
                }
            }
            Event::Decision(decision) => {
                if let Some(check) = self.refused_model_call(e, &decision) {
                    self.check(e, check);
                }
            }
            _ => {}
        }
    }

    /// A model call the gateway refused (its decision event records the call; nothing was
    /// sent): the envelopes must refuse it again.
    fn refused_model_call(&self, e: &EventRecord, d: &DecisionEvent) -> Option<ReplayCheck> {
        let call = refused_model_call(d)?;
        let engine = match self.policies?.engine(e) {
            Ok(engine) => engine,
            Err(why) => return Some(drift(e.seq, "decision", why)),
        };
        let now = engine.decide_model(&self.file.run.id, call);
        let was = d.decision.effect.as_str();
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

    fn compile(&mut self, e: &EventRecord, p: &CompileEvent) -> ReplayCheck {
        let ids = &p.item_ids;
        let mut items = Vec::with_capacity(ids.len());
        for id in ids {
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
            settings: p.settings.clone(),
            subject: None,
        };
        let policy = match self.policies.map(|p| p.engine(e)).transpose() {
            Ok(engine) => engine.map(|engine| CompilePolicy {
                engine,
                run: &self.file.run.id,
                memo: Some(&self.memo),
            }),
            Err(why) => return drift(e.seq, "compile", why),
        };
        let compiled = match compile(&input, policy.as_ref()) {
            Ok(c) => c,
            Err(err) => return drift(e.seq, "compile", format!("the compile fails now: {err}")),
        };
        let recorded = &p.hash;
        let check = if compiled.hash == *recorded {
            ReplayCheck {
                seq: e.seq,
                check: "compile",
                matched: true,
                detail: format!("{} items, hash {}", ids.len(), short(recorded)),
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
                        short(recorded),
                        short(&compiled.hash)
                    ),
                )
            }
        };
        self.compiled.insert(e.seq, compiled);
        check
    }

    fn model_call(&mut self, e: &EventRecord, p: &ModelCallEvent) -> ReplayCheck {
        let recorded_hash = &p.request_hash;
        let recorded = &p.request;
        let request = match p.compile_seq {
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
        if hash != *recorded_hash {
            return drift(
                e.seq,
                "model",
                format!(
                    "request {} was recorded, the replay sends {}",
                    short(recorded_hash),
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
        if p.provider == "fake" {
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
        let expected = self
            .file
            .events
            .iter()
            .filter(|o| o.seq > e.seq)
            .filter_map(EventRecord::read::<ModelOutputEvent>)
            .find(|o| o.request_hash == hash)
            .map(|o| o.response);
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

    fn tool_call(&mut self, e: &EventRecord, p: &ToolCallEvent) -> Vec<ReplayCheck> {
        let (call, tool) = (&p.call_id, &p.tool);
        let later = self.file.events.iter().filter(|o| o.seq > e.seq);
        let recorded_decision = later.clone().find_map(|o| {
            let d = o.read::<DecisionEvent>()?;
            (d.call_id.as_ref() == Some(call)).then_some((o, d))
        });
        let result = later.filter_map(|o| Some((o.seq, o.read::<ToolResultEvent>()?)));
        let result = result.clone().find(|(_, r)| r.call_id == *call);
        let mut checks = Vec::new();
        if let (Some(policies), Some((recorded, decided))) = (self.policies, recorded_decision) {
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
            let was = decided.decision.effect.as_str();
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
            Some((seq, r)) => ReplayCheck {
                seq,
                check: "tool",
                matched: true,
                detail: format!("{call} {tool}: served the recorded {} output", r.status),
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
fn first_difference(recorded: &CompileEvent, now: &CompiledContext) -> String {
    for (i, o) in now.outcomes.iter().enumerate() {
        let was = recorded.outcomes.get(i);
        let same = was.is_some_and(|w| {
            w.id == o.id && w.status == o.status && w.tokens == o.tokens && w.reason == o.reason
        });
        if !same {
            let was_status = was.map_or("absent", |w| w.status.as_str());
            let reason = serde_json::to_string(&o.reason).unwrap_or_default();
            return format!(
                "item `{}`: recorded {was_status}, now {} ({reason})",
                o.id,
                o.status.as_str(),
            );
        }
    }
    for (n, (a, b)) in recorded.text.lines().zip(now.text.lines()).enumerate() {
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
