//! Requests: what the engine decides ([`PolicyRequest`], for a run it knows), and the request
//! file the command line reads ([`DecisionRequest`], which brings its own subjects).

use serde::{Deserialize, Serialize};
use tollgate_engine::FactSet;

use super::{
    DecisionEffect, EnvelopeDecision, PolicyEngine, PolicyError, RequestKind, fail_closed,
};
use crate::canonical::canonical_json;
use crate::envelope::EnvelopeSet;
use crate::request::{
    ContextItem, Handoff, MemoryRecord, ModelCall, RunSubject, ToolCall, subject_facts,
};

/// A request to decide, for a run the engine knows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum PolicyRequest {
    /// May `run` call this tool?
    Tool {
        /// The calling run.
        run: String,
        /// The call.
        call: ToolCall,
        /// The time, for rules that read `now`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        now: Option<i32>,
    },
    /// May `run` see this context item?
    Context {
        /// The compiling run.
        run: String,
        /// The item.
        item: ContextItem,
    },
    /// May `run` call this model?
    Model {
        /// The calling run.
        run: String,
        /// The call.
        call: ModelCall,
    },
    /// Which memories may `run` retrieve?
    Memory {
        /// The retrieving run.
        run: String,
        /// The time, for expiries (without it every memory with an expiry counts as expired).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        now: Option<i32>,
    },
    /// Is this handoff packet valid for its consumer?
    Handoff {
        /// The packet.
        handoff: Box<Handoff>,
    },
}

impl PolicyRequest {
    /// What is being decided.
    pub fn kind(&self) -> RequestKind {
        match self {
            PolicyRequest::Tool { .. } => RequestKind::Tool,
            PolicyRequest::Context { .. } => RequestKind::Context,
            PolicyRequest::Model { .. } => RequestKind::Model,
            PolicyRequest::Memory { .. } => RequestKind::Memory,
            PolicyRequest::Handoff { .. } => RequestKind::Handoff,
        }
    }

    /// The run whose envelopes govern the request (a handoff's consumer).
    pub fn run(&self) -> &str {
        match self {
            PolicyRequest::Tool { run, .. }
            | PolicyRequest::Context { run, .. }
            | PolicyRequest::Model { run, .. }
            | PolicyRequest::Memory { run, .. } => run,
            PolicyRequest::Handoff { handoff } => &handoff.to_run,
        }
    }
}

/// A request as a file holds it (`tollgate policy decide --request FILE`): the kind, the
/// subject run (and any other runs it involves), the memories for a retrieval, the time, and
/// the payload of that kind.
///
/// ```json
/// {"kind": "tool",
///  "subject": {"run": "run-42", "agent": "coder", "task": "T-12",
///              "scope": "org:acme/repo:api/task:T-12", "clearance": "confidential"},
///  "tool": {"name": "fs.read_file", "args": {"path": "src/main.rs"}}}
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DecisionRequest {
    /// What is being decided.
    pub kind: RequestKind,
    /// The run asking (for a handoff, the producer).
    pub subject: RunSubject,
    /// Other runs involved (a handoff's consumer).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runs: Vec<RunSubject>,
    /// Memories a retrieval chooses from.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub memories: Vec<MemoryRecord>,
    /// The time in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub now: Option<i32>,
    /// For `tool`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<ToolCall>,
    /// For `context`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub item: Option<ContextItem>,
    /// For `model`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<ModelCall>,
    /// For `handoff`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handoff: Option<Handoff>,
}

impl DecisionRequest {
    /// The subject facts: the runs and the memories.
    pub fn subject_facts(&self) -> FactSet {
        let mut runs = vec![self.subject.clone()];
        runs.extend(self.runs.iter().cloned());
        subject_facts(&runs, &self.memories)
    }

    /// The request to decide, or what is missing for its kind.
    pub fn to_policy_request(&self) -> Result<PolicyRequest, String> {
        let run = self.subject.run.clone();
        let missing = |field: &str| {
            format!(
                "a `{}` request needs a `{field}` object",
                self.kind.as_str()
            )
        };
        Ok(match self.kind {
            RequestKind::Tool => PolicyRequest::Tool {
                run,
                call: self.tool.clone().ok_or_else(|| missing("tool"))?,
                now: self.now,
            },
            RequestKind::Context => PolicyRequest::Context {
                run,
                item: self.item.clone().ok_or_else(|| missing("item"))?,
            },
            RequestKind::Model => PolicyRequest::Model {
                run,
                call: self.model.clone().ok_or_else(|| missing("model"))?,
            },
            RequestKind::Memory => PolicyRequest::Memory { run, now: self.now },
            RequestKind::Handoff => PolicyRequest::Handoff {
                handoff: Box::new(self.handoff.clone().ok_or_else(|| missing("handoff"))?),
            },
        })
    }
}

/// Builds an engine for one request file's subjects and decides it.
pub fn decide_request(
    set: &EnvelopeSet,
    request: &DecisionRequest,
) -> Result<EnvelopeDecision, DecideRequestError> {
    let policy_request = request
        .to_policy_request()
        .map_err(DecideRequestError::Request)?;
    match PolicyEngine::new(set, &request.subject_facts()) {
        Ok(engine) => Ok(engine.decide(&policy_request)),
        // Materialising failed (a limit): no decision can be explained, so deny.
        Err(PolicyError::Eval(e)) => {
            let doc = serde_json::json!({
                "request": serde_json::to_value(request).unwrap_or(serde_json::Value::Null),
                "envelopes": set.version(),
            });
            let decision = EnvelopeDecision {
                kind: request.kind,
                request: String::new(),
                effect: DecisionEffect::Deny,
                rules: Vec::new(),
                proof: None,
                why_not: Vec::new(),
                envelope_versions: Vec::new(),
                input_hash: blake3::hash(canonical_json(&doc).as_bytes())
                    .to_hex()
                    .to_string(),
                error: None,
                memories: Vec::new(),
                violations: Vec::new(),
                on_read: None,
            };
            Ok(fail_closed(decision, e.to_string()))
        }
        Err(e) => Err(e.into()),
    }
}

/// Why [`decide_request`] could not decide.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DecideRequestError {
    /// The request file lacks what its kind needs.
    #[error("{0}")]
    Request(String),
    /// The engine could not be built.
    #[error(transparent)]
    Policy(#[from] PolicyError),
}
