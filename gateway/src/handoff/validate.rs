//! Validation: a contract judged by the handoff pack under the envelopes in force, with the
//! producer's run and the consumer's (its own run, an open one, or the run it will open under
//! the contract) as subjects.

use tollgate_rules::decide::{EnvelopeDecision, PolicyEngine};
use tollgate_rules::envelope::{EnvelopeSet, Level};
use tollgate_rules::request::HandoffContract as PackContract;
use tollgate_rules::request::{Constraint, Delegation, Delivery, Evidence, Handoff};

use super::{
    ContractFault, ContractFaults, ContractState, DroppedEvidence, Finding, HandoffContract,
    HandoffError, Validation, delegate, help_for, planned_run,
};
use crate::recorder::Recorder;
use crate::recorder::RecorderError;
use crate::recorder::format::RunHeader;
use crate::run_policy::{ATTACHED_ENVELOPES, handoff_policy};

/// The two sides of a contract as policy sees them.
#[derive(Debug, Clone)]
pub struct Parties {
    /// The producing run.
    pub producer: RunHeader,
    /// The producing agent.
    pub producer_agent: String,
    /// The consuming run: the producer's, an open one, or the planned `handoff:ID`.
    pub consumer: RunHeader,
    /// Whether the consumer's run is not open yet (it is judged as it will be opened).
    pub planned: bool,
}

impl Parties {
    /// The delegation the contract makes: `TASK#AGENT` of the producer and of the consumer
    /// (by task, not run, so a cycle through a run opened later, or a new run of the same
    /// agent, is the same party).
    pub fn delegation(&self, contract: &HandoffContract) -> Delegation {
        Delegation {
            producer: delegate(&self.producer.task, &self.producer_agent),
            consumer: delegate(&self.consumer.task, &contract.consumer.agent),
        }
    }
}

/// Reads the runs a contract names: the producer's must be recorded (and its agent act in
/// it); the consumer's is the producer's, another recorded run, or — when it names none —
/// the run it will open under the contract, governed by every envelope that governs the
/// producer, with the producer's task and the scope and clearance the contract gives (the
/// producer's by default). A contract being posted (`posting`) must also name a consumer run
/// that is running and that its agent acts in, and a planned consumer's scope must lie within
/// the producer's; a delivery check reads the runs as they are.
pub fn parties(
    recorder: &Recorder,
    set: &EnvelopeSet,
    c: &HandoffContract,
    posting: bool,
) -> Result<Parties, HandoffError> {
    let producer = header(recorder, &c.producer.run)?;
    let producer_agent = match &c.producer.agent {
        None => producer.agent.clone(),
        Some(a) => {
            if !acts_in(recorder, &producer, a)? {
                return Err(fault(
                    "/producer/agent",
                    format!("agent `{a}` does not act in run `{}`", producer.id),
                    format!(
                        "name the agent of one of the run's steps, or leave `producer.agent` out for the run's own (`{}`)",
                        producer.agent
                    ),
                ));
            }
            a.clone()
        }
    };
    let (consumer, planned) = match &c.consumer.run {
        Some(run) => {
            if c.consumer.scope.is_some() || c.consumer.clearance.is_some() {
                return Err(fault(
                    "/consumer",
                    format!(
                        "the consumer's run `{run}` is open: its scope and clearance are its own"
                    ),
                    "leave `consumer.scope` and `consumer.clearance` out, or `consumer.run` for a run opened under the contract",
                ));
            }
            if *run == producer.id {
                (producer.clone(), false)
            } else {
                let consumer = header(recorder, run)?;
                if posting && consumer.status != "running" {
                    return Err(fault(
                        "/consumer/run",
                        format!(
                            "run `{run}` is {}: work cannot be handed to it",
                            consumer.status
                        ),
                        "name a running run, or leave `consumer.run` out for a run opened under the contract",
                    ));
                }
                if posting && !acts_in(recorder, &consumer, &c.consumer.agent)? {
                    return Err(fault(
                        "/consumer/agent",
                        format!("agent `{}` does not act in run `{run}`", c.consumer.agent),
                        format!(
                            "name the run's agent (`{}`) or one of its steps'",
                            consumer.agent
                        ),
                    ));
                }
                (consumer, false)
            }
        }
        None => {
            let planned = planned_consumer(set, &producer, c)?;
            if posting && !within(&planned.scope, &producer.scope) {
                return Err(fault(
                    "/consumer/scope",
                    format!(
                        "scope `{}` is outside the producer's scope `{}`",
                        planned.scope, producer.scope
                    ),
                    "hand work to a scope at or below the producer's (evidence crosses by the consumer's scope)",
                ));
            }
            (planned, true)
        }
    };
    Ok(Parties {
        producer,
        producer_agent,
        consumer,
        planned,
    })
}

/// Whether `agent` is the run's agent or acts in one of its steps.
fn acts_in(recorder: &Recorder, run: &RunHeader, agent: &str) -> Result<bool, HandoffError> {
    Ok(run.agent == agent || recorder.steps(&run.id)?.iter().any(|s| s.agent == agent))
}

/// Whether scope `s` is `ancestor` or below it.
pub fn within(s: &str, ancestor: &str) -> bool {
    s == ancestor
        || s.strip_prefix(ancestor)
            .is_some_and(|rest| rest.starts_with('/'))
}

fn fault(path: &str, message: String, help: impl Into<String>) -> HandoffError {
    HandoffError::Faults(ContractFaults(vec![ContractFault {
        path: path.to_string(),
        line: None,
        column: None,
        message,
        help: help.into(),
    }]))
}

/// The problems that would make a run opened under `c` with `consumer` as its header more
/// powerful than its producer (the handoff pack's `*_escalation` violations).
pub fn escalations(
    set: &EnvelopeSet,
    producer: &RunHeader,
    producer_agent: &str,
    consumer: &RunHeader,
    c: &HandoffContract,
) -> Result<Vec<Finding>, HandoffError> {
    let parties = Parties {
        producer: producer.clone(),
        producer_agent: producer_agent.to_string(),
        consumer: consumer.clone(),
        planned: false,
    };
    let v = validate(set, &parties, c, Vec::new())?;
    Ok(v.problems
        .into_iter()
        .filter(|p| p.code.ends_with("_escalation") || p.code == "evaluation_failed")
        .collect())
}

fn header(recorder: &Recorder, run: &str) -> Result<RunHeader, HandoffError> {
    recorder.header(run).map_err(|e| match e {
        RecorderError::UnknownRun(r) => HandoffError::NotFound(format!("no run `{r}`")),
        other => other.into(),
    })
}

/// The header of the run a consumer will open under `c`.
fn planned_consumer(
    set: &EnvelopeSet,
    producer: &RunHeader,
    c: &HandoffContract,
) -> Result<RunHeader, HandoffError> {
    let engine =
        handoff_policy(set, producer, None).map_err(|e| HandoffError::Evaluation(e.to_string()))?;
    let mut metadata = serde_json::Map::new();
    metadata.insert(
        ATTACHED_ENVELOPES.into(),
        governing_ids(&engine, &producer.id)
            .into_iter()
            .map(serde_json::Value::String)
            .collect(),
    );
    Ok(RunHeader {
        id: planned_run(&c.id),
        agent: c.consumer.agent.clone(),
        task: producer.task.clone(),
        scope: c
            .consumer
            .scope
            .clone()
            .unwrap_or_else(|| producer.scope.clone()),
        clearance: c
            .consumer
            .clearance
            .map_or_else(|| producer.clearance.clone(), |l| l.as_str().to_string()),
        status: "planned".into(),
        started_at: String::new(),
        finished_at: None,
        parent_run: Some(producer.id.clone()),
        envelopes: Vec::new(),
        metadata: serde_json::Value::Object(metadata),
    })
}

/// The ids of the envelopes governing `run` in `engine` (its labels are `ID@VERSION`).
pub fn governing_ids(engine: &PolicyEngine, run: &str) -> Vec<String> {
    engine
        .governing(run)
        .iter()
        .map(|l| {
            l.split_once('@')
                .map_or(l.as_str(), |(id, _)| id)
                .to_string()
        })
        .collect()
}

/// The handoff request the pack judges for `c` between `parties`: the contract's terms, its
/// fields, the parties and the delegations in force, and — for a delivery check — what the
/// consumer delivered and the time.
pub fn request(
    c: &HandoffContract,
    parties: &Parties,
    delegations: Vec<Delegation>,
    delivery: Option<(Delivery, i32)>,
) -> Handoff {
    let mut constraints = Vec::new();
    if let Some(l) = c.constraints.max_level {
        constraints.push(constraint("max_level", l.as_str()));
    }
    if let Some(p) = &c.constraints.scope {
        constraints.push(constraint("scope", p));
    }
    for p in &c.constraints.blocked_actions {
        constraints.push(constraint("blocked_action", p));
    }
    if let Some(d) = c.deadline_secs() {
        constraints.push(constraint("deadline", &d.to_string()));
    }
    let (delivery, now) = match delivery {
        Some((d, now)) => (Some(d), Some(now)),
        None => (None, None),
    };
    Handoff {
        id: c.id.clone(),
        from_run: parties.producer.id.clone(),
        to_run: parties.consumer.id.clone(),
        contract: PackContract {
            id: c.id.clone(),
            requires: c.required_outputs.iter().map(|o| o.name.clone()).collect(),
            constraints,
        },
        goal: Some(c.goal.objective.clone()),
        evidence: c
            .evidence
            .0
            .iter()
            .map(|e| Evidence {
                item: e.item.clone(),
                scope: e.scope.clone(),
                sensitivity: e.sensitivity,
            })
            .collect(),
        template: Some(c.template().as_str().to_string()),
        fields: c.fields(),
        parties: Some(parties.delegation(c)),
        delegations,
        delivery,
        now,
    }
}

fn constraint(name: &str, value: &str) -> Constraint {
    Constraint {
        name: name.into(),
        value: value.into(),
    }
}

/// Judges `c`: its problems (which refuse it), the evidence that does not cross, the decision.
/// `delegations` are the contracts in force among other parties (for the cycle check).
pub fn validate(
    set: &EnvelopeSet,
    parties: &Parties,
    c: &HandoffContract,
    delegations: Vec<Delegation>,
) -> Result<Validation, HandoffError> {
    let engine = handoff_policy(set, &parties.producer, Some(&parties.consumer))
        .map_err(|e| HandoffError::Evaluation(e.to_string()))?;
    let decision = engine.validate_handoff(&request(c, parties, delegations, None));
    Ok(judge(c, parties, decision))
}

/// Splits a decision's violations into problems and dropped evidence.
fn judge(c: &HandoffContract, parties: &Parties, decision: EnvelopeDecision) -> Validation {
    let mut problems = Vec::new();
    let mut dropped = Vec::new();
    for v in &decision.violations {
        let rule = v.proof.as_ref().map(rule_of).unwrap_or_default();
        match v.evidence_item() {
            Some(item) => dropped.push(DroppedEvidence {
                item: item.to_string(),
                code: v.code.clone(),
                detail: v.detail.clone(),
                rule,
            }),
            None => problems.push(Finding {
                code: v.code.clone(),
                detail: v.detail.clone(),
                rule,
                help: help_for(&v.code).to_string(),
            }),
        }
    }
    if let Some(error) = &decision.error {
        problems.push(Finding {
            code: "evaluation_failed".into(),
            detail: error.clone(),
            rule: decision.rules.first().cloned().unwrap_or_default(),
            help: "the contract is refused while policy cannot be evaluated (fail closed)".into(),
        });
    }
    let crossing = c
        .evidence
        .0
        .iter()
        .map(|e| e.item.clone())
        .filter(|i| !dropped.iter().any(|d| d.item == *i))
        .collect();
    Validation {
        state: if problems.is_empty() {
            ContractState::Validated
        } else {
            ContractState::Rejected
        },
        problems,
        dropped,
        crossing,
        consumer_run: parties.consumer.id.clone(),
        decision,
    }
}

/// The rule a proof's root applied (empty for an input fact).
pub fn rule_of(proof: &tollgate_rules::engine::Proof) -> String {
    match &proof.step {
        tollgate_rules::engine::ProofStep::Rule { rule, .. } => rule.to_string(),
        tollgate_rules::engine::ProofStep::Input { .. } => String::new(),
    }
}

/// The lower of two clearances (a run opened under a contract sees no more than its producer).
pub fn lower(a: Level, b: Level) -> Level {
    if a <= b { a } else { b }
}
