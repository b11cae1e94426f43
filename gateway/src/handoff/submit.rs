//! Posting a contract (validated, stored as a version, recorded in the producer's run) and the
//! consumer's answer to it (stored, recorded in the consumer's run).

use serde::Serialize;
use tollgate_rules::envelope::EnvelopeSet;
use tollgate_rules::request::Delegation;

use super::deliver::delivered;
use super::store::{self, StoredContract};
use super::validate::{Parties, parties, validate};
use super::{
    AckResponse, ConsumerAck, ContractState, HandoffContract, HandoffError, Validation, party,
};
use crate::recorder::Recorder;
use crate::recorder::events::{AckRecorded, ContractRecorded, HandoffRecord};
use crate::recorder::write::{append_in, new_event};

/// A posted contract: the version stored (or found unchanged) and whether it is new.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Submitted {
    /// The version.
    pub contract: StoredContract,
    /// `false` when the latest version already had this content (nothing was written).
    pub created: bool,
}

/// A contract judged as posting it would judge it, before anything is written.
#[derive(Debug, Clone)]
pub enum Judged {
    /// The latest stored version has this content: nothing to write.
    Unchanged(Box<StoredContract>),
    /// A new version and what the handoff pack said of it.
    New {
        /// The contract as judged (a new version keeps the consumer's open run).
        contract: Box<HandoffContract>,
        /// The runs as the pack saw them.
        parties: Box<Parties>,
        /// The delegations in force the cycle check read.
        delegations: Vec<Delegation>,
        /// What the pack said.
        validation: Box<Validation>,
    },
}

/// Judges `contract` as [`submit`] would, writing nothing (`tollgate handoff validate`): a new
/// version keeps the consumer's open run; only the producer's agent posts new versions; the
/// handoff pack decides under `set` with the delegations in force.
pub fn judge(
    recorder: &Recorder,
    set: &EnvelopeSet,
    mut contract: HandoffContract,
) -> Result<Judged, HandoffError> {
    let store = recorder.store();
    let latest = store::get(store, &contract.id, None)?;
    if let Some(latest) = &latest
        && contract.consumer.run.is_none()
        && !latest.consumer_run.starts_with("handoff:")
        && latest.consumer_agent == contract.consumer.agent
    {
        // A consumer that opened its run keeps it: a new version (an answer to a
        // clarification) is judged against that run, not a fresh planned one.
        contract.consumer.run = Some(latest.consumer_run.clone());
        contract.consumer.scope = None;
        contract.consumer.clearance = None;
    }
    if let Some(l) = &latest
        && l.content_hash == contract.content_hash()
    {
        return Ok(Judged::Unchanged(Box::new(l.clone())));
    }
    let parties = parties(recorder, set, &contract, true)?;
    if let Some(latest) = &latest
        && (latest.producer_run != parties.producer.id
            || latest.producer_agent != parties.producer_agent)
    {
        return Err(HandoffError::Conflict(format!(
            "contract `{}` belongs to {}\n  help: only its producer posts new versions; give another contract another id",
            contract.id,
            party(&latest.producer_run, &latest.producer_agent)
        )));
    }
    let except = contract.id.clone();
    let delegations = store.read(move |c| store::delegations_in(c, &except))?;
    let validation = validate(set, &parties, &contract, delegations.clone())?;
    Ok(Judged::New {
        contract: Box::new(contract),
        parties: Box::new(parties),
        delegations,
        validation: Box::new(validation),
    })
}

/// Validates `contract` and stores it as the next version of its id, recording a `handoff`
/// event in the producer's run if it is running. Rejected contracts are stored too (with
/// their problems and the decision): the refusal is a decision with a receipt. Posting the
/// content of the latest version again changes nothing.
pub fn submit(
    recorder: &Recorder,
    set: &EnvelopeSet,
    contract: HandoffContract,
    by: &str,
    at: &str,
) -> Result<Submitted, HandoffError> {
    let store = recorder.store();
    let (contract, parties, delegations, validation) = match judge(recorder, set, contract)? {
        Judged::Unchanged(contract) => {
            return Ok(Submitted {
                contract: *contract,
                created: false,
            });
        }
        Judged::New {
            contract,
            parties,
            delegations,
            validation,
        } => (*contract, *parties, delegations, *validation),
    };
    let (by, at) = (by.to_string(), at.to_string());
    let producer = parties.producer.id.clone();
    let producer_agent = parties.producer_agent.clone();
    let consumer = party(&validation.consumer_run, &contract.consumer.agent);
    let id = contract.id.clone();
    store
        .transact(move |c| -> Result<(u32, bool), HandoffError> {
            let now = store::get_in(c, &contract.id, None)?;
            // Posted meanwhile by another request: the same content is the same version.
            if let Some(l) = &now
                && l.content_hash == contract.content_hash()
            {
                return Ok((l.version, false));
            }
            // The cycle check read the contracts in force before this write: if another
            // contract changed them meanwhile, the judgement may be stale (two contracts
            // posted at once could close a cycle together), so this one is refused.
            if store::delegations_in(c, &contract.id)? != delegations {
                return Err(HandoffError::Conflict(format!(
                    "the contracts in force changed while `{}` was judged\n  help: post it again",
                    contract.id
                )));
            }
            let version = now.map_or(1, |l| l.version + 1);
            let recorded = if store::running_in(c, &producer)? {
                let record = HandoffRecord::Contract(ContractRecorded {
                    contract_id: contract.id.clone(),
                    version,
                    content_hash: contract.content_hash(),
                    consumer,
                    state: validation.state.as_str().to_string(),
                    problems: validation
                        .problems
                        .iter()
                        .map(|p| format!("{}:{}", p.code, p.detail))
                        .collect(),
                    dropped: validation.dropped.iter().map(|d| d.item.clone()).collect(),
                    rules: validation.decision.rules.clone(),
                    input_hash: validation.decision.input_hash.clone(),
                });
                let step = store::last_step_in(c, &producer, &producer_agent)?;
                let appended =
                    append_in(c, &producer, vec![new_event(step, at.clone(), &record)?])?;
                appended.first().map(|a| a.seq)
            } else {
                None
            };
            let version = store::insert_in(
                c,
                &contract,
                &validation,
                &producer_agent,
                recorded,
                &by,
                &at,
            )?;
            Ok((version, true))
        })
        .and_then(|(version, created)| {
            let contract = store::get(store, &id, Some(version))?
                .ok_or_else(|| HandoffError::NotFound(format!("no contract `{id}`")))?;
            Ok(Submitted { contract, created })
        })
}

/// Records the consumer's answer to the latest version of contract `id`: accept, reject (with
/// a reason) or clarify (with a reason or questions). Only a validated contract can be
/// answered; a rejected one never reaches its consumer.
pub fn acknowledge(
    recorder: &Recorder,
    id: &str,
    ack: ConsumerAck,
    at: &str,
) -> Result<StoredContract, HandoffError> {
    let store = recorder.store();
    let stored = store::get(store, id, None)?
        .ok_or_else(|| HandoffError::NotFound(format!("no contract `{id}`")))?;
    if let Some(v) = ack.version
        && v != stored.version
    {
        return Err(HandoffError::Conflict(format!(
            "version {v} of `{id}` is superseded by version {}\n  help: answer the latest version",
            stored.version
        )));
    }
    let reason = ack.reason.clone().unwrap_or_default();
    match ack.response {
        AckResponse::Accept => {}
        AckResponse::Reject if reason.trim().is_empty() => {
            return Err(HandoffError::Invalid(
                "a rejection needs a `reason`\n  help: say why the consumer will not take the work on".into(),
            ));
        }
        AckResponse::Clarify if reason.trim().is_empty() && ack.questions.is_empty() => {
            return Err(HandoffError::Invalid(
                "a clarification request needs `questions` or a `reason`\n  help: ask what the consumer needs to know".into(),
            ));
        }
        AckResponse::Reject | AckResponse::Clarify => {}
    }
    let consumer_run = match &ack.run {
        None => (!stored.consumer_run.starts_with("handoff:")).then(|| stored.consumer_run.clone()),
        Some(run) if *run == stored.consumer_run => Some(run.clone()),
        Some(run) => {
            return Err(HandoffError::Invalid(format!(
                "contract `{id}` hands work to run `{}`, not `{run}`\n  help: {}",
                stored.consumer_run,
                if stored.consumer_run.starts_with("handoff:") {
                    format!("open the consumer's run with `\"handoff\": \"{id}\"` first")
                } else {
                    "answer from the contract's consumer run".to_string()
                }
            )));
        }
    };
    // A consumer that has acted under the contract has taken it on: it can no longer refuse
    // it or ask first, and its delivery is checked.
    if ack.response != AckResponse::Accept
        && let Some(run) = &consumer_run
    {
        let done = delivered(recorder, &stored, run)?;
        if let Some(tool) = done.actions.keys().next() {
            return Err(HandoffError::Conflict(format!(
                "the consumer has acted under contract `{id}` already (it executed `{tool}`): it can no longer {}\n  help: finish the work; its delivery is checked against the contract",
                if ack.response == AckResponse::Reject {
                    "refuse it"
                } else {
                    "ask for clarification"
                }
            )));
        }
    }
    let by = ack
        .by
        .clone()
        .unwrap_or_else(|| stored.consumer_agent.clone());
    let (id_owned, at) = (id.to_string(), at.to_string());
    let version = stored.version;
    let agent = stored.consumer_agent.clone();
    store.transact(move |c| -> Result<(), HandoffError> {
        let now = store::get_in(c, &id_owned, None)?
            .ok_or_else(|| HandoffError::NotFound(format!("no contract `{id_owned}`")))?;
        if now.version != version || now.state != ContractState::Validated {
            return Err(HandoffError::Conflict(match now.state {
                ContractState::Rejected => format!(
                    "contract `{id_owned}` was rejected by the handoff pack: the consumer cannot take it on\n  help: post a version that fixes its problems"
                ),
                s if now.version != version => format!(
                    "contract `{id_owned}` has a newer version ({}, {})",
                    now.version,
                    s.as_str()
                ),
                s => format!(
                    "contract `{id_owned}` is {} already\n  help: a new version of the contract can be answered again",
                    s.as_str()
                ),
            }));
        }
        let recorded = match &consumer_run {
            Some(run) if store::running_in(c, run)? => {
                let record = HandoffRecord::Ack(AckRecorded {
                    contract_id: id_owned.clone(),
                    version,
                    response: ack.response.as_str().to_string(),
                    by: by.clone(),
                    reason: reason.clone(),
                    questions: ack.questions.clone(),
                });
                let step = store::last_step_in(c, run, &agent)?;
                append_in(c, run, vec![new_event(step, at.clone(), &record)?])?
                    .first()
                    .map(|a| a.seq)
            }
            _ => None,
        };
        store::insert_ack_in(
            c,
            &id_owned,
            version,
            ack.response.as_str(),
            consumer_run.as_deref(),
            &by,
            &reason,
            &ack.questions,
            recorded,
            &at,
        )?;
        store::set_state_in(c, &id_owned, version, ack.response.state(), &at)?;
        Ok(())
    })?;
    store::get(store, id, Some(version))?
        .ok_or_else(|| HandoffError::NotFound(format!("no contract `{id}`")))
}
