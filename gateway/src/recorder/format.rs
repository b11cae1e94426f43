//! The run format (`tollgate.run/v1`): a whole run as one JSON document, for
//! `tollgate runs import` and `runs export`, and the fixtures under `fixtures/runs/`.
//!
//! ```json
//! { "format": "tollgate.run/v1",
//!   "run": { "id": "run-1", "agent": "coder", "task": "T-1", "scope": "org:acme/repo:api",
//!            "clearance": "internal", "status": "succeeded",
//!            "started_at": "2026-11-02T09:00:00Z", "finished_at": "2026-11-02T09:04:10Z",
//!            "envelopes": ["coding-agent@2"], "metadata": {} },
//!   "steps": [ { "index": 0, "name": "read the failing test", "agent": "coder" } ],
//!   "events": [ { "seq": 0, "step": 0, "kind": "context_offered",
//!                 "at": "2026-11-02T09:00:01Z", "payload": { "items": [] },
//!                 "prev": "", "hash": "…" } ],
//!   "envelope_sources": [ { "id": "coding-agent", "version": 2, "yaml": "…" } ] }
//! ```
//!
//! `hash` and `prev` may be left out of a hand-written file: import computes them. When they
//! are present, import checks them and refuses a file whose chain does not hold.
//!
//! Event kinds are [`EventKind`]; each kind's payload is one type in
//! [`super::events`]. Payloads are JSON objects; the recorder checks the kind is known and the
//! payload an object, and hashes whatever it holds.

use serde::{Deserialize, Serialize};

/// The format tag of a run file.
pub const RUN_FORMAT: &str = "tollgate.run/v1";

/// A whole run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunFile {
    /// Always [`RUN_FORMAT`].
    pub format: String,
    /// The run's header.
    pub run: RunHeader,
    /// Its steps, by index.
    #[serde(default)]
    pub steps: Vec<StepRecord>,
    /// Its events, by sequence number.
    #[serde(default)]
    pub events: Vec<EventRecord>,
    /// The envelopes the run was governed by, as their YAML source (stored as envelope
    /// versions on import, so replay and simulation can rebuild the policy): every version any
    /// of its decisions used, so several versions of one id when an envelope was updated while
    /// the run ran.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub envelope_sources: Vec<EnvelopeSource>,
}

/// Who ran what, where, and how it ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RunHeader {
    /// Run id.
    pub id: String,
    /// Agent id.
    pub agent: String,
    /// Task id.
    pub task: String,
    /// Scope path (`org:acme/repo:api/task:T-12`).
    pub scope: String,
    /// The highest sensitivity the run may see.
    #[serde(default = "public")]
    #[schema(required = true)]
    pub clearance: String,
    /// `running`, `succeeded`, `failed` or `cancelled`.
    pub status: String,
    /// RFC 3339.
    pub started_at: String,
    /// RFC 3339, when finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<String>,
    /// The run that started this one (a handoff's producer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_run: Option<String>,
    /// `ID@VERSION` of the envelopes attached.
    #[serde(default)]
    pub envelopes: Vec<String>,
    /// Free metadata (framework, model, repository...).
    #[serde(default = "empty_object")]
    #[schema(value_type = Object)]
    pub metadata: serde_json::Value,
}

fn public() -> String {
    "public".to_string()
}

fn empty_object() -> serde_json::Value {
    serde_json::Value::Object(Default::default())
}

/// A step: a named slice of the run (one agent turn, one tool phase).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepRecord {
    /// 0-based, contiguous.
    pub index: u32,
    /// What the step does.
    pub name: String,
    /// The agent acting in it (several agents may share a run).
    pub agent: String,
}

/// One event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EventRecord {
    /// 0-based, contiguous within the run.
    pub seq: u64,
    /// The step it belongs to.
    pub step: u32,
    /// See [`EventKind`].
    pub kind: String,
    /// RFC 3339.
    pub at: String,
    /// A JSON object.
    pub payload: serde_json::Value,
    /// The previous event's hash (empty for the first).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prev: Option<String>,
    /// This event's hash.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hash: Option<String>,
}

/// An envelope as recorded with a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EnvelopeSource {
    /// Envelope id.
    pub id: String,
    /// Its declared version.
    pub version: u32,
    /// Its YAML.
    pub yaml: String,
}

/// The event kinds the recorder accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    /// Candidate context items offered to a compile.
    ContextOffered,
    /// A compile's settings and result.
    Compile,
    /// A model request.
    ModelCall,
    /// A model response.
    ModelOutput,
    /// A tool call the agent made (or asked to make).
    ToolCall,
    /// A tool's result.
    ToolResult,
    /// A policy decision with its receipt.
    Decision,
    /// An approval granted or refused.
    Approval,
    /// A handoff to another agent.
    Handoff,
    /// The run's output.
    Output,
    /// A free note.
    Note,
    /// An error the agent met.
    Error,
}

impl EventKind {
    /// Every kind.
    pub const ALL: [EventKind; 12] = [
        EventKind::ContextOffered,
        EventKind::Compile,
        EventKind::ModelCall,
        EventKind::ModelOutput,
        EventKind::ToolCall,
        EventKind::ToolResult,
        EventKind::Decision,
        EventKind::Approval,
        EventKind::Handoff,
        EventKind::Output,
        EventKind::Note,
        EventKind::Error,
    ];

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::ContextOffered => "context_offered",
            EventKind::Compile => "compile",
            EventKind::ModelCall => "model_call",
            EventKind::ModelOutput => "model_output",
            EventKind::ToolCall => "tool_call",
            EventKind::ToolResult => "tool_result",
            EventKind::Decision => "decision",
            EventKind::Approval => "approval",
            EventKind::Handoff => "handoff",
            EventKind::Output => "output",
            EventKind::Note => "note",
            EventKind::Error => "error",
        }
    }

    /// Parses a wire name.
    pub fn parse(name: &str) -> Option<EventKind> {
        EventKind::ALL.into_iter().find(|k| k.as_str() == name)
    }
}
