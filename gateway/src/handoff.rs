//! Handoff contracts (the first seed's module 4): typed, validated agent-to-agent handoffs.
//!
//! A producer posts a [`HandoffContract`]; it is read against its schema (every fault with its
//! path, nothing stored), then validated by the handoff pack under the envelopes in force
//! ([`validate`]): a contract missing what its template requires, closing a delegation cycle,
//! or handing work to a consumer that could do more than the producer is refused before the
//! consumer starts; evidence the consumer may not see (scope, clearance, the contract's own
//! limits) does not cross and is recorded as dropped. Each version is stored with its
//! decision (the receipt, with a proof per violation) and recorded in the producer's run while
//! it runs. The consumer acknowledges ([`ConsumerAck`]: accept, reject, clarify); a run opened
//! under a contract is governed by the producer's envelopes too. Once the consumer delivers,
//! [`deliver`] checks what it did against the contract (required outputs, blocked actions, the
//! deadline) and raises a violation alert for each breach. [`graph`] draws who handed what to
//! whom; [`a2a`] carries a contract as an A2A task message.

pub mod a2a;
pub mod contract;
pub mod deliver;
pub mod graph;
pub mod store;
pub mod submit;
pub mod templates;
pub mod validate;

use serde::{Deserialize, Serialize};
use tollgate_rules::decide::EnvelopeDecision;

pub use contract::{
    ConstraintSet, ContractFault, ContractFaults, EvidenceBundle, GoalPacket, HandoffContract,
    RequiredOutput, Template,
};

use crate::recorder::RecorderError;
use crate::store::StoreError;

/// Where a contract stands.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, utoipa::ToSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum ContractState {
    /// Valid; the consumer has not answered.
    Validated,
    /// Refused by the handoff pack: the consumer must not start on it.
    Rejected,
    /// The consumer took it on.
    Accepted,
    /// The consumer refused it.
    Refused,
    /// The consumer asked for clarification (a new version answers it).
    ClarificationRequested,
    /// Delivered, and the delivery kept the contract.
    Fulfilled,
    /// Delivered, breaking the contract.
    Violated,
}

impl ContractState {
    /// Its name.
    pub fn as_str(self) -> &'static str {
        match self {
            ContractState::Validated => "validated",
            ContractState::Rejected => "rejected",
            ContractState::Accepted => "accepted",
            ContractState::Refused => "refused",
            ContractState::ClarificationRequested => "clarification_requested",
            ContractState::Fulfilled => "fulfilled",
            ContractState::Violated => "violated",
        }
    }

    /// The state named `s`.
    pub fn parse(s: &str) -> Option<ContractState> {
        [
            ContractState::Validated,
            ContractState::Rejected,
            ContractState::Accepted,
            ContractState::Refused,
            ContractState::ClarificationRequested,
            ContractState::Fulfilled,
            ContractState::Violated,
        ]
        .into_iter()
        .find(|c| c.as_str() == s)
    }

    /// Whether the contract still hands work over (a delegation the cycle check counts).
    pub fn in_force(self) -> bool {
        matches!(
            self,
            ContractState::Validated
                | ContractState::Accepted
                | ContractState::ClarificationRequested
        )
    }
}

/// A piece of evidence that did not cross, and the rule that kept it back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct DroppedEvidence {
    /// The item.
    pub item: String,
    /// `evidence_out_of_scope`, `evidence_above_clearance`, `constraint_violated`.
    pub code: String,
    /// The violation's detail (`max_level:ITEM` for a constraint).
    pub detail: String,
    /// The pack rule that derived it.
    pub rule: String,
}

/// A problem that refuses a contract or breaks it: what, and the rule that found it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Finding {
    /// The violation code (`missing_field`, `missing_output`, …).
    pub code: String,
    /// The field, output, tool or party concerned.
    pub detail: String,
    /// The pack rule that derived it.
    pub rule: String,
    /// What to do about it.
    pub help: String,
}

/// What the handoff pack said of a contract.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Validation {
    /// `validated` or `rejected`.
    pub state: ContractState,
    /// What refuses the contract (empty when validated).
    pub problems: Vec<Finding>,
    /// Evidence that does not cross.
    pub dropped: Vec<DroppedEvidence>,
    /// Evidence that crosses, in the contract's order.
    pub crossing: Vec<String>,
    /// The consumer run the pack judged (the producer's own, an open one, or the run the
    /// consumer will open: `handoff:ID`).
    pub consumer_run: String,
    /// The decision: effect, rules, a proof per violation, envelope versions, input hash.
    pub decision: EnvelopeDecision,
}

/// The consumer's answer to a contract.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum AckResponse {
    /// It takes the work on.
    Accept,
    /// It refuses it.
    Reject,
    /// It needs more before it can start.
    Clarify,
}

impl AckResponse {
    /// Its name.
    pub fn as_str(self) -> &'static str {
        match self {
            AckResponse::Accept => "accept",
            AckResponse::Reject => "reject",
            AckResponse::Clarify => "clarify",
        }
    }

    /// The state the contract moves to.
    pub fn state(self) -> ContractState {
        match self {
            AckResponse::Accept => ContractState::Accepted,
            AckResponse::Reject => ContractState::Refused,
            AckResponse::Clarify => ContractState::ClarificationRequested,
        }
    }
}

/// `ConsumerAck`: the downstream agent's response to one version of a contract.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ConsumerAck {
    /// Accept, reject or clarify.
    pub response: AckResponse,
    /// The version answered (the latest when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<u32>,
    /// The consuming run, when it is open (it must be the contract's, if the contract names
    /// one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
    /// Who answers (the consumer agent when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
    /// Why; required to reject or clarify.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// What the consumer needs to know, for a clarification.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub questions: Vec<String>,
}

/// What can go wrong in the handoff module.
#[derive(Debug, thiserror::Error)]
pub enum HandoffError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The recorder failed or refused.
    #[error(transparent)]
    Recorder(#[from] RecorderError),
    /// The contract does not read (every fault with its path).
    #[error(transparent)]
    Faults(#[from] ContractFaults),
    /// Something named does not exist.
    #[error("{0}")]
    NotFound(String),
    /// The request is not acceptable.
    #[error("{0}")]
    Invalid(String),
    /// The request conflicts with the contract's state.
    #[error("{0}")]
    Conflict(String),
    /// Policy could not be evaluated (fail closed: the contract is refused).
    #[error("policy evaluation failed: {0}")]
    Evaluation(String),
}

/// A party to a handoff as the graph draws it: `RUN#AGENT`.
pub fn party(run: &str, agent: &str) -> String {
    format!("{run}#{agent}")
}

/// The party id the pack's delegation facts use: `TASK#AGENT`.
pub fn delegate(task: &str, agent: &str) -> String {
    format!("{task}#{agent}")
}

/// The run id a consumer not yet running is judged as, and opens its run under.
pub fn planned_run(contract: &str) -> String {
    format!("handoff:{contract}")
}

/// What to do about a violation code.
pub fn help_for(code: &str) -> &'static str {
    match code {
        "missing_goal" => "state the objective in `goal`",
        "missing_field" => "fill the field the template requires, or choose a lighter template",
        "unknown_template" => {
            "use `lightweight`, `code_patch_review`, `research_to_implementation` or `planner_to_executor`"
        }
        "delegation_cycle" => {
            "hand the work to an agent that does not already hand work back to the producer"
        }
        "envelope_escalation" => {
            "open the consumer's run under this contract (`handoff` when opening it), or attach the envelope to it"
        }
        "clearance_escalation" => "lower the consumer's clearance to the producer's",
        "evidence_out_of_scope" => "hand over only evidence within the consumer's scope",
        "evidence_above_clearance" => "hand over only evidence the consumer is cleared to see",
        "constraint_violated" => "hand over only evidence the contract's limits allow",
        "missing_output" => "deliver every required output",
        "blocked_action_taken" => "do not execute a tool the contract blocks",
        "deadline_missed" => "deliver before the deadline, or agree a new version",
        _ => "see the handoff pack (rules/packs/handoff.dl)",
    }
}
