//! Cases: the case-workflow service's record. A case is an append-only, hash-chained stream of
//! case events ([`store`]: an append states the version it expects, a mismatch is a conflict and
//! never a lost write; an event id appended twice is stored once), with projections rebuilt from
//! it by replay ([`project`]: the case header, worker evidence, proposal actions, preview diffs,
//! policy status, commit status, the timeline; replay health compares them with a fresh replay).
//! [`inspect`] is the compact inspection report; [`host`] is the engine host that moves a case
//! through proposal → preview → policy → approval → commit, each step an event.

pub mod host;
pub mod inspect;
pub mod log;
pub mod project;
pub mod store;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::packs::adapter::{Change, Mode};
use crate::packs::policy::PackDecision;
use crate::store::StoreError;

/// What can go wrong with a case.
#[derive(Debug, thiserror::Error)]
pub enum CaseError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// No such case (or proposal).
    #[error("{0}")]
    NotFound(String),
    /// The append expected another version.
    #[error(
        "case `{case}` is at version {actual}, the append expected {expected}\n  help: read the case again and retry the append at version {actual}"
    )]
    VersionConflict {
        /// The case.
        case: String,
        /// What the append expected.
        expected: i64,
        /// Where the case is.
        actual: i64,
    },
    /// A step out of order, a stale preview, a reused event id with other content.
    #[error("{message}")]
    Conflict {
        /// Machine-readable (`stale_preview`, `approval_required`, `event_id_reused`...).
        code: crate::codes::ErrorCode,
        /// What and how to fix it.
        message: String,
    },
    /// A refusal the case recorded (a commit refused): the event says why.
    #[error("{message}")]
    Refused {
        /// Machine-readable.
        code: crate::codes::ErrorCode,
        /// What and how to fix it.
        message: String,
        /// The case's version after the refusal was recorded.
        version: i64,
    },
    /// The request is not valid.
    #[error("{0}")]
    Invalid(String),
    /// The case's pack is not registered here: the case is read-only.
    #[error("{0}")]
    ReadOnly(String),
    /// An adapter failed.
    #[error(transparent)]
    Adapter(#[from] crate::packs::adapter::AdapterError),
    /// The pack's rules could not be evaluated.
    #[error("the pack's rules could not be evaluated: {0}")]
    Evaluation(String),
}

impl CaseError {
    /// A conflict with a code.
    pub fn conflict(code: crate::codes::ErrorCode, message: impl Into<String>) -> CaseError {
        CaseError::Conflict {
            code,
            message: message.into(),
        }
    }
}

impl From<CaseError> for crate::runtime::RuntimeError {
    fn from(e: CaseError) -> Self {
        use crate::runtime::RuntimeError;
        match e {
            CaseError::Store(s) => RuntimeError::Store(s),
            CaseError::NotFound(m) => RuntimeError::NotFound(m),
            CaseError::Invalid(m) => RuntimeError::Invalid(m),
            CaseError::ReadOnly(m) => RuntimeError::Forbidden(m),
            CaseError::Evaluation(m) => RuntimeError::Evaluation(m),
            other => RuntimeError::Conflict(other.to_string()),
        }
    }
}

/// One event of a case, as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct CaseEvent {
    /// The case.
    pub case_id: String,
    /// The case's version after this event (1, 2, 3...).
    pub version: i64,
    /// The appender's id.
    pub event_id: String,
    /// What happened, with its payload.
    #[serde(flatten)]
    #[schema(value_type = Object)]
    pub body: EventBody,
    /// Who appended it.
    pub actor: String,
    /// When (RFC 3339).
    pub at: String,
    /// The previous event's hash.
    pub prev_hash: String,
    /// This event's hash.
    pub hash: String,
    /// The payload exactly as stored (canonical JSON), which the hash covers: the chain is
    /// verified over these bytes, not over a re-serialisation by this build.
    #[serde(skip)]
    pub payload_text: String,
}

/// What a case event says. The `kind` is stored in its own column; the rest is the payload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "payload", rename_all = "snake_case")]
pub enum EventBody {
    /// The case was opened for a pack.
    CaseOpened(Opened),
    /// A worker (or a caller) recorded evidence.
    EvidenceRecorded(Evidence),
    /// A capability was proposed.
    ProposalMade(Proposal),
    /// An adapter previewed the proposal's change.
    PreviewRecorded(Preview),
    /// The pack's rules and the envelopes decided the previewed proposal.
    PolicyDecided(Box<PolicyDecided>),
    /// An approval bound to the previewed change was asked for.
    ApprovalRequested(ApprovalRequested),
    /// A person approved or rejected it.
    ApprovalDecided(ApprovalDecided),
    /// A commit began (the approval was used).
    CommitStarted(CommitStarted),
    /// The change was applied and verified.
    CommitApplied(CommitApplied),
    /// Apply or verify failed; compensation ran.
    CommitFailed(CommitFailed),
    /// A commit was refused before anything ran.
    CommitRefused(CommitRefused),
    /// A model call made for the case (server-side, opt-in).
    ModelRun(ModelRun),
}

impl EventBody {
    /// The stored kind.
    pub fn kind(&self) -> &'static str {
        match self {
            EventBody::CaseOpened(_) => "case_opened",
            EventBody::EvidenceRecorded(_) => "evidence_recorded",
            EventBody::ProposalMade(_) => "proposal_made",
            EventBody::PreviewRecorded(_) => "preview_recorded",
            EventBody::PolicyDecided(_) => "policy_decided",
            EventBody::ApprovalRequested(_) => "approval_requested",
            EventBody::ApprovalDecided(_) => "approval_decided",
            EventBody::CommitStarted(_) => "commit_started",
            EventBody::CommitApplied(_) => "commit_applied",
            EventBody::CommitFailed(_) => "commit_failed",
            EventBody::CommitRefused(_) => "commit_refused",
            EventBody::ModelRun(_) => "model_run",
        }
    }

    /// The payload as JSON (without the kind).
    pub fn payload(&self) -> Value {
        match serde_json::to_value(self) {
            Ok(Value::Object(mut m)) => m.remove("payload").unwrap_or(Value::Null),
            _ => Value::Null,
        }
    }

    /// Reads a stored kind and payload.
    pub fn from_parts(kind: &str, payload: Value) -> Result<EventBody, String> {
        serde_json::from_value(serde_json::json!({"kind": kind, "payload": payload}))
            .map_err(|e| format!("case event `{kind}`: {e}"))
    }
}

/// `case_opened`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Opened {
    /// The pack.
    pub pack_id: String,
    /// Its engine id.
    pub engine_id: String,
    /// Its engine version.
    pub engine_version: String,
    /// Its root when the case was opened.
    pub pack_root: String,
    /// blake3 of its files then.
    pub pack_hash: String,
    /// A title.
    pub title: String,
    /// The case's input.
    pub input: Map<String, Value>,
    /// The recorder run that holds the case's approvals.
    pub run_id: String,
}

/// `evidence_recorded`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Evidence {
    /// The worker.
    pub worker: String,
    /// Its evidence.
    pub evidence: Map<String, Value>,
    /// `adapter` (collected by the worker's adapter) or `api` (posted by a caller).
    pub source: String,
}

/// `proposal_made`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Proposal {
    /// `prop-N`.
    pub proposal_id: String,
    /// The capability.
    pub capability: String,
    /// Its action.
    pub action: String,
    /// The action's input, placeholders filled.
    pub input: Map<String, Value>,
    /// The wording, placeholders filled.
    pub wording: String,
}

/// `preview_recorded`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Preview {
    /// The proposal.
    pub proposal_id: String,
    /// blake3 of the proposal's action, input and the changes.
    pub preview_hash: String,
    /// The changes.
    pub changes: Vec<Change>,
    /// In words.
    pub summary: String,
}

/// `policy_decided`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PolicyDecided {
    /// The proposal.
    pub proposal_id: String,
    /// The preview decided on.
    pub preview_hash: String,
    /// `allow` or `deny`: deny if either the pack or the envelopes deny.
    pub effect: String,
    /// Every deciding rule (the pack's, then the envelopes').
    pub rules: Vec<String>,
    /// The pack's decision with its proof.
    pub pack: PackDecision,
    /// The envelopes' decision of the action as a tool call of the case's run, with its
    /// receipt; absent when no envelope governs the case.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub envelopes: Option<Value>,
}

/// `approval_requested`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApprovalRequested {
    /// The proposal.
    pub proposal_id: String,
    /// The approval (`apr-…`).
    pub approval_id: String,
    /// The preview it is bound to.
    pub preview_hash: String,
}

/// `approval_decided`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApprovalDecided {
    /// The proposal.
    pub proposal_id: String,
    /// The approval.
    pub approval_id: String,
    /// Approved or rejected.
    pub approved: bool,
    /// Who.
    pub by: String,
    /// Why.
    #[serde(default)]
    pub reason: String,
}

/// `commit_started`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommitStarted {
    /// The proposal.
    pub proposal_id: String,
    /// The preview committed.
    pub preview_hash: String,
    /// The approval used.
    pub approval_id: String,
    /// The mode.
    pub mode: Mode,
    /// In real mode: the policy file and its hash that allowed it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authorization: Option<Value>,
}

/// `commit_applied`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommitApplied {
    /// The proposal.
    pub proposal_id: String,
    /// The adapter's receipt.
    pub receipt: Value,
    /// What verify answered.
    pub verification: Value,
}

/// `commit_failed`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommitFailed {
    /// The proposal.
    pub proposal_id: String,
    /// What failed.
    pub error: String,
    /// Whether compensation ran and said so.
    pub compensated: bool,
    /// What compensation answered (or its error).
    pub compensation: Value,
}

/// `commit_refused`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommitRefused {
    /// The proposal.
    pub proposal_id: String,
    /// Machine-readable.
    pub code: String,
    /// Why, and how to fix it.
    pub message: String,
    /// The mode asked for.
    pub mode: Mode,
}

/// `model_run`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelRun {
    /// The provider (`fake` without a key).
    pub provider: String,
    /// The model asked for.
    pub model: String,
    /// What it was asked (the purpose).
    pub purpose: String,
    /// Its answer.
    pub output: String,
    /// A note (the fake provider was used because no key is set).
    #[serde(default)]
    pub note: String,
}

/// An event to append.
#[derive(Debug, Clone, PartialEq)]
pub struct NewEvent {
    /// The appender's id (generated when absent): appending the same id again stores nothing.
    pub event_id: Option<String>,
    /// What happened.
    pub body: EventBody,
    /// Who.
    pub actor: String,
}

impl NewEvent {
    /// An event with a generated id.
    pub fn new(body: EventBody, actor: &str) -> NewEvent {
        NewEvent {
            event_id: None,
            body,
            actor: actor.to_string(),
        }
    }
}

#[cfg(test)]
mod tests;
