//! The one encoder from a run to policy input, shared by the live runtime, exact replay and
//! the simulator, so all three decide the same request the same way by construction.
//!
//! - [`run_facts`]: a run's subject facts (the run, its agent, task, scope and clearance, and
//!   the envelopes attached to it when it was opened), over which a policy is materialised.
//! - [`requested_model_call`]: the model call a chat request asks for (provider, model,
//!   reasoning mode), as the model proxy decides it and the simulator re-decides it.
//! - [`recorded_tool_request`], [`refused_model_call`]: the request a recorded event stands
//!   for (a `tool_call` with the rate-limit usage counted when it was decided; a refused
//!   model call carried by its `decision`).
//! - [`RunPolicy`]: a live run's materialised engine with the stored envelope versions that
//!   govern it; [`handoff_policy`]: the engine a handoff between two runs is validated under.
//! - [`RecordedVersions`]: the envelope versions a recorded run's decisions were made under.

mod versions;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::Value;
use tollgate_rules::decide::{PolicyEngine, PolicyRequest};
use tollgate_rules::engine::{FactSet, Value as EngineValue};
use tollgate_rules::envelope::{EnvelopeSet, Level};
use tollgate_rules::request::{ModelCall, RunSubject, SUBJECT_ORIGIN, ToolCall, subject_facts};

use crate::providers::ChatRequest;
use crate::recorder::events::{DecisionEvent, ToolCallEvent};
use crate::recorder::format::RunHeader;

pub use versions::{RecordedVersions, sorted};

/// The metadata key holding the ids of envelopes attached to a run when it was opened.
pub const ATTACHED_ENVELOPES: &str = "attached_envelopes";

/// The envelope ids a run's metadata attaches to it.
pub fn attached_envelopes(metadata: &Value) -> Vec<String> {
    metadata
        .get(ATTACHED_ENVELOPES)
        .and_then(Value::as_array)
        .map(|ids| {
            ids.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
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

/// The subject facts a run's policy is materialised over: the run (agent, task, scope,
/// clearance) and the envelopes attached to the run itself when it was opened (kept in its
/// metadata under [`ATTACHED_ENVELOPES`]).
pub fn run_facts(h: &RunHeader) -> Result<FactSet, String> {
    let mut facts = subject_facts(&[run_subject(h)?], &[]);
    for id in attached_envelopes(&h.metadata) {
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

/// The engine a handoff is validated under: `set` materialised over the producer run's subject
/// facts and, when the consumer works in another run (open, or about to be opened under the
/// contract), that run's too.
pub fn handoff_policy(
    set: &EnvelopeSet,
    producer: &RunHeader,
    consumer: Option<&RunHeader>,
) -> Result<PolicyEngine, RunPolicyError> {
    let mut facts = run_facts(producer).map_err(RunPolicyError::Subject)?;
    if let Some(c) = consumer.filter(|c| c.id != producer.id) {
        facts.extend_from(&run_facts(c).map_err(RunPolicyError::Subject)?);
    }
    PolicyEngine::new(set, &facts).map_err(|e| RunPolicyError::Engine(e.to_string()))
}

/// Splits `provider/model`; a bare model is `openai`'s (the dialect the gateway speaks).
pub fn provider_and_model(model: &str) -> (String, String) {
    match model.split_once('/') {
        Some((p, m)) if !p.is_empty() && !m.is_empty() => (p.to_string(), m.to_string()),
        _ => ("openai".to_string(), model.to_string()),
    }
}

/// The model call a chat request asks for: its provider and model (`provider/model`, or a
/// bare model of `openai`) and its reasoning mode (`reasoning_effort`, empty without one).
pub fn requested_model_call(request: &ChatRequest) -> ModelCall {
    let (provider, model) = provider_and_model(&request.model);
    let reasoning = request
        .extra
        .get("reasoning_effort")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    ModelCall {
        provider,
        model,
        reasoning,
    }
}

/// The tool decision request a recorded `tool_call` event stands for: its tool, arguments and
/// the rate-limit usage the gateway counted when it was decided.
pub fn recorded_tool_request(run: &str, call: &ToolCallEvent) -> PolicyRequest {
    PolicyRequest::Tool {
        run: run.to_string(),
        call: ToolCall {
            name: call.tool.clone(),
            args: call.arguments.clone(),
            usage: call.usage.clone().unwrap_or_default(),
        },
        now: None,
    }
}

/// The model call a `decision` event records when the gateway refused it (no `model_call`
/// event follows a refusal): its provider, model and reasoning mode.
pub fn refused_model_call(decision: &DecisionEvent) -> Option<&ModelCall> {
    decision.refused_model_call.as_ref()
}

/// A run's policy engine, with the stored envelope versions that govern the run in it.
///
/// A run is pinned to the versions it opened with: an envelope stored while the run is running
/// reaches it only when an admin re-pins the run (`Runtime::repin`), and finishing the run is
/// the emergency stop. So the engine is built from the versions the run is pinned to (or from
/// the set in force, when under it exactly those govern the run). Each decision records the
/// `ID@VERSION`s it was made under; the first write recording a decision under this engine
/// also links its versions to the run (`run_envelopes`), so replay and simulation can rebuild
/// every decision's policy, whichever version it was made under.
pub struct RunPolicy {
    engine: PolicyEngine,
    /// The envelopes the engine was materialised from: what rate limits and approval terms
    /// are read from, so they come from the same versions as the decision.
    set: Arc<EnvelopeSet>,
    /// `(id, content hash)` of every envelope version governing the run in `engine`.
    versions: Vec<(String, String)>,
    /// Whether `versions` are known to be linked to the run (a write linking them committed).
    linked: AtomicBool,
    /// The run's header as it was when the engine was built. Its subject (agent, task,
    /// scope, clearance) never changes; its status may have since, and is checked by the
    /// write that records a decision.
    header: RunHeader,
}

impl RunPolicy {
    /// Materialises `set` over a run's subject facts (the run need not be stored yet), noting
    /// the stored versions that govern the run in it.
    ///
    /// The engine is materialised over the envelopes that govern the run and nothing else (a
    /// set with others is narrowed, and materialised again): a decision's input hash names
    /// its envelope set, so a receipt rendered on read is rebuilt from exactly the versions it
    /// records (`crate::receipts`).
    pub fn build(set: Arc<EnvelopeSet>, header: &RunHeader) -> Result<RunPolicy, RunPolicyError> {
        let facts = run_facts(header).map_err(RunPolicyError::Subject)?;
        let engine_over = |set: &EnvelopeSet| {
            PolicyEngine::new(set, &facts).map_err(|e| RunPolicyError::Engine(e.to_string()))
        };
        let mut engine = engine_over(&set)?;
        let mut set = set;
        let governing = engine.governing(&header.id);
        if governing.len() < set.len() {
            let ids: Vec<&str> = governing
                .iter()
                .map(|label| label.split_once('@').map_or(label.as_str(), |(id, _)| id))
                .collect();
            if let Some(narrow) = set.only(&ids) {
                let narrowed = engine_over(&narrow)?;
                // The packs govern a run by what attaches to it and the parents of that, so
                // the same envelopes govern it in the narrow set.
                if narrowed.governing(&header.id) == governing {
                    (engine, set) = (narrowed, Arc::new(narrow));
                }
            }
        }
        let versions = engine
            .governing(&header.id)
            .iter()
            .filter_map(|label| {
                let id = label.split_once('@').map_or(label.as_str(), |(id, _)| id);
                set.get(id)
                    .map(|e| (e.id.clone(), crate::policy::content_hash(e)))
            })
            .collect();
        Ok(RunPolicy {
            engine,
            set,
            versions,
            linked: AtomicBool::new(false),
            header: header.clone(),
        })
    }

    /// The run's header as it was when the engine was built (its status may have changed).
    pub fn header(&self) -> &RunHeader {
        &self.header
    }

    /// The envelopes the engine was materialised from.
    pub fn set(&self) -> &Arc<EnvelopeSet> {
        &self.set
    }

    /// The `(id, content hash)` of the versions governing the run in this engine.
    pub fn versions(&self) -> &[(String, String)] {
        &self.versions
    }

    /// The links a write recording a decision under this engine must add: none once a write
    /// has committed them.
    pub(crate) fn unlinked(&self) -> Option<Vec<(String, String)>> {
        (!self.linked.load(Ordering::Acquire)).then(|| self.versions.clone())
    }

    /// Notes that a committed write linked this engine's versions to the run.
    pub(crate) fn mark_linked(&self) {
        self.linked.store(true, Ordering::Release);
    }
}

/// Why a run's policy could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RunPolicyError {
    /// The run's header does not make a subject (its clearance is not a level).
    #[error("{0}")]
    Subject(String),
    /// The engine could not be materialised.
    #[error("{0}")]
    Engine(String),
}

impl std::ops::Deref for RunPolicy {
    type Target = PolicyEngine;
    fn deref(&self) -> &PolicyEngine {
        &self.engine
    }
}

impl std::fmt::Debug for RunPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunPolicy")
            .field("versions", &self.versions)
            .field("linked", &self.linked)
            .finish_non_exhaustive()
    }
}
