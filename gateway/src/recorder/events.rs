//! The payload of each event kind, as one serde type: every writer in the gateway (the
//! runtime, approvals, the OTLP import, the fixture generator) builds its event with it and
//! every reader (replay, simulation, provenance, the timeline, the decisions list) reads it
//! back through it, so a field is named in one place. Events an agent appends itself
//! (`POST /v1/runs/{id}/events`) and imported run files are checked for a known kind and an
//! object payload only; a reader meeting one that does not read as its type reports it.
//!
//! A payload is recorded as its canonical JSON (keys sorted), so the order of fields here
//! does not matter, but which fields are present does: the chain hashes the bytes. Fields a
//! writer may leave out are `Option`s skipped when `None`; a field the gateway always writes,
//! even as `null`, while other sources (fixture runs, imported files, OTLP traces) leave it
//! out, is an `Option<Option<_>>` ([`present`] reads `null` as `Some(None)`). Reading is
//! lenient where the recorded sources differ (a field some sources leave out has a default)
//! and strict about types: a payload that does not read is reported by whoever reads it.
//! Fields are declared in key order where a payload is written on a hot path (tool calls and
//! their decisions): the canonical writer then writes them straight out, without sorting.
//!
//! A new event kind is a variant of [`EventKind`], a type here implementing [`EventPayload`],
//! and an arm of [`Event`].

use std::collections::BTreeMap;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};
use tollgate_rules::canonical::{CanonicalError, to_canonical_json};
use tollgate_rules::decide::{DecisionEffect, EnvelopeDecision};
use tollgate_rules::request::ModelCall;

use super::buckets::Tally;
use super::format::{EventKind, EventRecord};
use crate::compiler::{CandidateItem, CompileSettings, ItemOutcome};
use crate::providers::{ChatRequest, ChatResponse};

/// A payload type of one event kind.
pub trait EventPayload: Serialize {
    /// The kind it records.
    const KIND: EventKind;

    /// Counts the decisions it records (by effect on the run's row, by bucket for the
    /// overview): a `decision`'s answer, a `compile`'s item decisions; and the tool of a
    /// `tool_call`. Nothing for other kinds.
    fn tally(&self, _tally: &mut Tally) {}
}

/// A decision a `decision` event carries: the record itself, or a form of it that the hot
/// path has already written out.
pub trait Decided {
    /// The decision.
    fn decision(&self) -> &EnvelopeDecision;
}

impl Decided for EnvelopeDecision {
    fn decision(&self) -> &EnvelopeDecision {
        self
    }
}

impl<T: Decided + ?Sized> Decided for &T {
    fn decision(&self) -> &EnvelopeDecision {
        (**self).decision()
    }
}

/// A payload as a JSON value, for a run file built in memory (an OTLP import, the fixture
/// generator); the recorder itself writes canonical text ([`crate::recorder::write`]).
pub fn to_json<P: EventPayload>(payload: &P) -> Value {
    #[expect(
        clippy::expect_used,
        reason = "payload types are structs of strings, numbers and JSON values with string \
                  keys: they always convert to a JSON value"
    )]
    serde_json::to_value(payload).expect("an event payload converts to json")
}

/// `context_offered`: candidate items offered to the compile that follows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContextOfferedEvent {
    /// The items, as offered.
    pub items: Vec<CandidateItem>,
}

/// `compile`: a compile's settings and result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompileEvent {
    /// The settings it ran with.
    #[serde(default)]
    pub settings: CompileSettings,
    /// The items compiled, by id, from the offers so far.
    #[serde(default)]
    pub item_ids: Vec<String>,
    /// The compiled text's hash.
    #[serde(default)]
    pub hash: String,
    /// Its size in tokens.
    #[serde(default)]
    pub tokens: u32,
    /// Every item's outcome (an allowed item's proof left out: replay recomputes it).
    #[serde(default)]
    pub outcomes: Vec<ItemOutcome>,
    /// The compiled text.
    #[serde(default)]
    pub text: String,
    /// The memories retrieval ranked (eligible ones), offered or beyond the limit, with
    /// rank and relevance. Empty when none was eligible.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub memories: Vec<RetrievalVerdict>,
    /// What policy withheld from retrieval, by reason: how many memories, the rule, examples.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub withheld: Vec<RetrievalExclusion>,
}

/// Memories policy kept from a retrieval for the same reasons (see `crate::memory::retrieve`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RetrievalExclusion {
    /// Why (`out_of_scope`, `above_clearance`, `expired`, `status_candidate`,
    /// `class_denied`), as the memory pack derived it.
    pub reasons: Vec<String>,
    /// The rule of the proof of the verdict.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<String>,
    /// How many memories.
    pub count: u64,
    /// Some of them (the strongest, at most ten), by id.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub examples: Vec<String>,
    /// The memory pack's proof of the verdict, for the group it decided first (its
    /// representative `group-N-WINDOW` stands for those memories); none for memories off the
    /// run's scope chain, which the scope index leaves out undecided.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proof: Option<tollgate_rules::engine::Proof>,
}

/// What became of one stored memory when a compile retrieved memories (see
/// `crate::memory::retrieve`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RetrievalVerdict {
    /// The memory.
    pub memory: String,
    /// Whether policy let it be retrieved.
    pub eligible: bool,
    /// Why not (`out_of_scope`, `above_clearance`, `expired`, `status_candidate`,
    /// `class_denied`), as the memory pack derived it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reasons: Vec<String>,
    /// The rules of the proof of its verdict.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<String>,
    /// Its rank among the eligible ones (1 first), when eligible.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rank: Option<u32>,
    /// Its relevance, when eligible.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relevance: Option<f64>,
    /// Whether it was offered to the compile (eligible and within the limit).
    pub offered: bool,
}

/// What policy did to one message of a model call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MessageDecision {
    /// Its index in `messages`.
    pub index: usize,
    /// `allow`, `redact` (or `deny`, which refuses the call).
    pub effect: DecisionEffect,
    /// The deciding rules.
    pub rules: Vec<String>,
    /// Secrets replaced in it.
    pub redacted_spans: usize,
}

/// `model_call`: a request sent to a model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelCallEvent {
    /// The provider it went to (the gateway's upstream: `fake`, `openai`, `replay`; or the
    /// logical provider of a recorded session).
    #[serde(default)]
    pub provider: String,
    /// The request as sent.
    pub request: ChatRequest,
    /// [`ChatRequest::hash`] of it.
    #[serde(default)]
    pub request_hash: String,
    /// The `compile` event whose text it sends, when it came from one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compile_seq: Option<u64>,
    /// What policy did to each message (the gateway's proxy).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub messages: Option<Vec<MessageDecision>>,
}

/// `model_output`: a model's answer to the request of that hash.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelOutputEvent {
    /// The request answered.
    #[serde(default)]
    pub request_hash: String,
    /// The answer.
    pub response: ChatResponse,
}

/// `tool_call`: a tool call the agent made or asked to make.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCallEvent {
    /// Its arguments (secrets already replaced when the gateway recorded it).
    #[serde(default)]
    pub arguments: Value,
    /// The hash binding an approval to the call (the gateway's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_hash: Option<String>,
    /// The call's id.
    #[serde(default)]
    pub call_id: String,
    /// The tool.
    #[serde(default)]
    pub tool: String,
    /// The rate-limit usage counted when the gateway decided it, by rule id (replay and
    /// simulation decide it with the same usage).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<BTreeMap<String, i32>>,
}

/// `tool_result`: what a tool returned.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolResultEvent {
    /// The call it answers.
    #[serde(default)]
    pub call_id: String,
    /// `ok` or `error`.
    #[serde(default)]
    pub status: String,
    /// The output.
    #[serde(default)]
    pub output: Value,
}

/// `decision`: a policy decision with its receipt. `D` is the decision as written: the hot
/// path writes the tool decision's already rendered canonical text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(bound(serialize = "D: Serialize", deserialize = "D: Deserialize<'de>"))]
pub struct DecisionEvent<D = EnvelopeDecision> {
    /// The approval gating the tool call (`null` when none does; the gateway writes it on
    /// every tool decision).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub approval_id: Option<Option<String>>,
    /// The tool call decided.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    /// The data decision over the tool call's arguments (`null` when they held nothing to
    /// hide; the gateway writes it on every tool decision).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub data_decision: Option<Option<D>>,
    /// The decision, with its proof, envelope versions and input hash.
    pub decision: D,
    /// What the gateway answered when it differs in kind from the policy's effect (an
    /// approved call is `allow`, secrets redacted from its arguments `redact`); the gateway
    /// writes it on every decision, a recorded session may leave it out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<DecisionEffect>,
    /// Why, in words, as the gateway told the agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The model call the gateway refused (no `model_call` event follows a refusal, so this
    /// is where replay and simulation find it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused_model_call: Option<ModelCall>,
    /// The model request a message decision is about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_hash: Option<String>,
}

impl<D> DecisionEvent<D> {
    /// A decision and what the gateway answered, nothing else.
    pub fn new(decision: D, outcome: DecisionEffect) -> DecisionEvent<D> {
        DecisionEvent {
            decision,
            outcome: Some(outcome),
            call_id: None,
            approval_id: None,
            data_decision: None,
            reason: None,
            request_hash: None,
            refused_model_call: None,
        }
    }
}

impl DecisionEvent {
    /// What the gateway answered: the recorded outcome, else the policy's effect.
    pub fn answered(&self) -> DecisionEffect {
        self.outcome.unwrap_or(self.decision.effect)
    }
}

/// `approval`: an approval granted or refused.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApprovalEvent {
    /// The approval.
    #[serde(default)]
    pub approval_id: String,
    /// `approved` or `rejected`.
    #[serde(default)]
    pub decision: String,
    /// Who decided.
    #[serde(default)]
    pub by: String,
    /// Why.
    #[serde(default)]
    pub reason: String,
    /// The call it is bound to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    /// The hash binding it to the call (the gateway's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_hash: Option<String>,
}

/// `handoff`: a handoff to another agent — as an agent recorded it itself (a free object), or
/// as the handoff module recorded a contract, an acknowledgement or a violation (an object
/// with a `stage`: [`HandoffRecord`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct HandoffEvent(pub Map<String, Value>);

impl HandoffEvent {
    /// What the handoff module recorded, if it recorded this event (it has a `stage`); an
    /// agent's own handoff is `None`.
    pub fn record(&self) -> Option<Result<HandoffRecord, serde_json::Error>> {
        self.0
            .contains_key(HANDOFF_STAGE)
            .then(|| HandoffRecord::deserialize(Value::Object(self.0.clone())))
    }
}

/// The key that marks a `handoff` event as the handoff module's; agents may not write it.
pub const HANDOFF_STAGE: &str = "stage";

/// A `handoff` event the handoff module records, by stage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "stage", rename_all = "snake_case")]
pub enum HandoffRecord {
    /// A contract version validated (in the producer's run).
    Contract(ContractRecorded),
    /// The consumer's answer (in the consumer's run).
    Ack(AckRecorded),
    /// A delivery broke the contract: the alert (in the consumer's run).
    Violation(ViolationRecorded),
}

/// A contract version and what the handoff pack said of it; the decision with its proofs is
/// the contract's receipt, kept with the version (`GET /v2/handoffs/contracts/{id}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContractRecorded {
    /// The contract.
    pub contract_id: String,
    /// Its version.
    pub version: u32,
    /// blake3 of its canonical JSON.
    pub content_hash: String,
    /// Who takes it: `RUN#AGENT`.
    pub consumer: String,
    /// `validated` or `rejected`.
    pub state: String,
    /// What refuses it, `CODE:DETAIL`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<String>,
    /// Evidence that does not cross.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dropped: Vec<String>,
    /// The pack rules that decided.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<String>,
    /// The decision's input hash.
    pub input_hash: String,
}

/// A consumer's answer to a contract version.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AckRecorded {
    /// The contract.
    pub contract_id: String,
    /// The version answered.
    pub version: u32,
    /// `accept`, `reject`, `clarify`.
    pub response: String,
    /// Who answered.
    pub by: String,
    /// Why.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// What the consumer asks, for a clarification.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub questions: Vec<String>,
}

/// A violation alert: a delivery that broke the contract.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ViolationRecorded {
    /// The contract.
    pub contract_id: String,
    /// The version broken.
    pub version: u32,
    /// `missing_output`, `blocked_action_taken`, `deadline_missed`.
    pub code: String,
    /// The output, tool or deadline concerned.
    pub detail: String,
    /// The pack rule that found it.
    pub rule: String,
}

impl EventPayload for HandoffRecord {
    const KIND: EventKind = EventKind::Handoff;
}

/// `output`: the run's output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutputEvent {
    /// Its text.
    #[serde(default)]
    pub content: String,
}

/// `note`: a free note.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NoteEvent {
    /// Its text.
    #[serde(default)]
    pub text: String,
}

/// `error`: an error the agent (or the gateway on its behalf) met.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorEvent {
    /// What went wrong.
    #[serde(default)]
    pub message: String,
    /// The model request that failed, when a provider failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_hash: Option<String>,
}

impl EventPayload for CompileEvent {
    const KIND: EventKind = EventKind::Compile;

    fn tally(&self, tally: &mut Tally) {
        for decision in self.outcomes.iter().filter_map(|o| o.policy.as_ref()) {
            tally.decided(decision.effect, &decision.rules, None);
        }
    }
}

impl<D: Serialize + Decided> EventPayload for DecisionEvent<D> {
    const KIND: EventKind = EventKind::Decision;

    fn tally(&self, tally: &mut Tally) {
        let decision = self.decision.decision();
        tally.decided(
            self.outcome.unwrap_or(decision.effect),
            &decision.rules,
            self.call_id.as_deref(),
        );
    }
}

impl EventPayload for ToolCallEvent {
    const KIND: EventKind = EventKind::ToolCall;

    fn tally(&self, tally: &mut Tally) {
        tally.call(&self.call_id, &self.tool);
    }
}

macro_rules! payload_kinds {
    ($($ty:ident => $kind:ident),* $(,)?) => {
        $(payload_kinds!(@impl $ty => $kind);)*

        /// A recorded event's payload, read as its kind's type.
        #[derive(Debug, Clone, PartialEq)]
        #[expect(
            clippy::large_enum_variant,
            reason = "read one at a time while walking a run; boxing the decision would only \
                      add an allocation per decision read"
        )]
        pub enum Event {
            $(
                #[doc = concat!("A `", stringify!($kind), "` event.")]
                $kind($ty),
            )*
        }

        impl Event {
            /// Reads `payload` as the type of `kind`.
            pub fn read(kind: EventKind, payload: &Value) -> Result<Event, serde_json::Error> {
                Ok(match kind {
                    $(EventKind::$kind => Event::$kind($ty::deserialize(payload)?),)*
                })
            }

            /// Its kind.
            pub fn kind(&self) -> EventKind {
                match self {
                    $(Event::$kind(_) => EventKind::$kind,)*
                }
            }

            /// The payload's canonical JSON, as the recorder writes it.
            pub fn to_canonical_json(&self) -> Result<String, CanonicalError> {
                match self {
                    $(Event::$kind(payload) => to_canonical_json(payload),)*
                }
            }
        }
    };
    (@impl DecisionEvent => $kind:ident) => {};
    (@impl CompileEvent => $kind:ident) => {};
    (@impl ToolCallEvent => $kind:ident) => {};
    (@impl $ty:ident => $kind:ident) => {
        impl EventPayload for $ty {
            const KIND: EventKind = EventKind::$kind;
        }
    };
}

payload_kinds! {
    ContextOfferedEvent => ContextOffered,
    CompileEvent => Compile,
    ModelCallEvent => ModelCall,
    ModelOutputEvent => ModelOutput,
    ToolCallEvent => ToolCall,
    ToolResultEvent => ToolResult,
    DecisionEvent => Decision,
    ApprovalEvent => Approval,
    HandoffEvent => Handoff,
    OutputEvent => Output,
    NoteEvent => Note,
    ErrorEvent => Error,
}

/// Why a recorded event does not read as its kind's type.
#[derive(Debug, thiserror::Error)]
pub enum EventReadError {
    /// The kind is not one the recorder knows.
    #[error("event {seq}: unknown kind `{kind}`")]
    UnknownKind {
        /// The event.
        seq: u64,
        /// Its kind.
        kind: String,
    },
    /// The payload does not have its kind's shape.
    #[error("event {seq} ({kind}): the payload does not read: {source}")]
    Payload {
        /// The event.
        seq: u64,
        /// Its kind.
        kind: &'static str,
        /// What is wrong.
        source: serde_json::Error,
    },
}

impl EventRecord {
    /// The event's kind, when the recorder knows it.
    pub fn event_kind(&self) -> Option<EventKind> {
        EventKind::parse(&self.kind)
    }

    /// The payload read as its kind's type.
    pub fn event(&self) -> Result<Event, EventReadError> {
        let kind = self
            .event_kind()
            .ok_or_else(|| EventReadError::UnknownKind {
                seq: self.seq,
                kind: self.kind.clone(),
            })?;
        Event::read(kind, &self.payload).map_err(|source| EventReadError::Payload {
            seq: self.seq,
            kind: kind.as_str(),
            source,
        })
    }

    /// The payload as `P`: `None` for an event of another kind, an error for one of `P`'s
    /// kind that does not read.
    pub fn payload_as<P: EventPayload + DeserializeOwned>(
        &self,
    ) -> Option<Result<P, EventReadError>> {
        (self.kind == P::KIND.as_str()).then(|| {
            P::deserialize(&self.payload).map_err(|source| EventReadError::Payload {
                seq: self.seq,
                kind: P::KIND.as_str(),
                source,
            })
        })
    }

    /// The payload as `P`, when the event is of `P`'s kind and reads.
    pub fn read<P: EventPayload + DeserializeOwned>(&self) -> Option<P> {
        self.payload_as::<P>()?.ok()
    }
}

/// Reads a field that is present as `Some`, `null` included (`Some(None)`); an absent field
/// is `None` through `#[serde(default)]`.
fn present<'de, D, T>(d: D) -> Result<Option<Option<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(d).map(Some)
}

#[cfg(test)]
mod tests;
