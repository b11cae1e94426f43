//! Handoffs through the runtime: contracts validated under the envelopes in force, answered,
//! and checked when the consumer delivers; a run opened under a contract is governed by its
//! producer's envelopes as well as its own, and sees no more than its producer; a consumer run
//! that finishes has its deliveries checked before it closes.

use std::sync::Arc;

use serde_json::Value;
use tollgate_rules::envelope::{EnvelopeSet, Level};

use super::{Runtime, RuntimeError};
use crate::handoff::deliver::{self, DeliveryReport};
use crate::handoff::store::{self, StoredContract};
use crate::handoff::submit::{self, Submitted};
use crate::handoff::validate::{escalations, lower, parties, within};
use crate::handoff::{ConsumerAck, ContractState, HandoffContract, HandoffError};
use crate::run_policy::attached_envelopes;

/// The metadata key naming the contract a run was opened under.
pub const HANDOFF_KEY: &str = "handoff";

impl From<HandoffError> for RuntimeError {
    fn from(e: HandoffError) -> Self {
        match e {
            HandoffError::Store(s) => RuntimeError::Store(s),
            HandoffError::Recorder(r) => RuntimeError::Recorder(r),
            HandoffError::Faults(f) => RuntimeError::Invalid(f.to_string()),
            HandoffError::NotFound(m) => RuntimeError::NotFound(m),
            HandoffError::Invalid(m) => RuntimeError::Invalid(m),
            HandoffError::Conflict(m) => RuntimeError::Conflict(m),
            HandoffError::Evaluation(m) => RuntimeError::Evaluation(m),
        }
    }
}

/// How a run opened under a contract differs from what its opener asked: the envelopes it is
/// governed by and the clearance it gets.
#[derive(Debug, Clone)]
pub(crate) struct UnderContract {
    /// Envelope ids to attach (the producer's governing ones).
    pub envelopes: Vec<String>,
    /// The clearance: the lower of the one asked and the contract's.
    pub clearance: Level,
    /// The producer's run (the new run's parent).
    pub parent: String,
    /// The contract and its parties as the pack judged them, to judge the run itself.
    contract: HandoffContract,
    producer: crate::recorder::format::RunHeader,
    producer_agent: String,
}

impl Runtime {
    /// The envelope set in force, for the handoff module (it fails closed: a set that cannot
    /// be read refuses the contract).
    fn handoff_envelopes(&self) -> Result<Arc<EnvelopeSet>, HandoffError> {
        self.envelopes().map_err(|e| match e {
            RuntimeError::Store(s) => HandoffError::Store(s),
            other => HandoffError::Evaluation(other.to_string()),
        })
    }

    /// Validates and stores a contract version (see [`submit::submit`]).
    pub fn submit_contract(
        &self,
        contract: HandoffContract,
        by: &str,
    ) -> Result<Submitted, HandoffError> {
        submit::submit(
            self.recorder(),
            &*self.handoff_envelopes()?,
            contract,
            by,
            &self.now_rfc3339(),
        )
    }

    /// Records the consumer's answer (see [`submit::acknowledge`]).
    pub fn ack_contract(&self, id: &str, ack: ConsumerAck) -> Result<StoredContract, HandoffError> {
        submit::acknowledge(self.recorder(), id, ack, &self.now_rfc3339())
    }

    /// Checks the consumer's delivery now (see [`deliver::check`]).
    pub fn check_delivery(&self, id: &str) -> Result<DeliveryReport, HandoffError> {
        let now = i32::try_from(self.now_ms() / 1000).unwrap_or(i32::MAX);
        deliver::check(
            self.recorder(),
            &*self.handoff_envelopes()?,
            id,
            now,
            &self.now_rfc3339(),
        )
    }

    /// What opening a run under contract `id` as `agent` at `scope` must add: the contract
    /// must hand work to a run not opened yet, to this agent, at or below the contract's
    /// consumer scope; the run is governed by the producer's envelopes too and cleared no
    /// higher than the contract allows.
    pub(crate) fn under_contract(
        &self,
        id: &str,
        agent: &str,
        scope: &str,
        clearance: Option<Level>,
    ) -> Result<UnderContract, RuntimeError> {
        let stored = store::get(self.store(), id, None)?
            .ok_or_else(|| RuntimeError::NotFound(format!("no contract `{id}`")))?;
        stored.claimable().map_err(RuntimeError::Conflict)?;
        if stored.consumer_agent != agent {
            return Err(RuntimeError::Invalid(format!(
                "contract `{id}` hands work to agent `{}`, not `{agent}`",
                stored.consumer_agent
            )));
        }
        let parties = parties(
            self.recorder(),
            &*self.envelopes()?,
            &stored.contract,
            false,
        )?;
        let planned = &parties.consumer;
        if !within(scope, &planned.scope) {
            return Err(RuntimeError::Invalid(format!(
                "scope `{scope}` is outside the contract's consumer scope `{}`\n  help: open the run at that scope or below it",
                planned.scope
            )));
        }
        let allowed: Level = serde_json::from_value(Value::String(planned.clearance.clone()))
            .map_err(|_| RuntimeError::Invalid(format!("clearance `{}`", planned.clearance)))?;
        if let Some(asked) = clearance
            && asked > allowed
        {
            return Err(RuntimeError::Invalid(format!(
                "clearance `{}` is above what contract `{id}` allows (`{}`): a run opened under a handoff sees no more than its producer\n  help: ask for `{}` or less, or leave `clearance` out",
                asked.as_str(),
                allowed.as_str(),
                allowed.as_str()
            )));
        }
        Ok(UnderContract {
            envelopes: attached_envelopes(&planned.metadata),
            clearance: clearance.map_or(allowed, |c| lower(c, allowed)),
            parent: stored.producer_run,
            contract: stored.contract,
            producer: parties.producer,
            producer_agent: parties.producer_agent,
        })
    }

    /// Judges the run about to be opened under a contract as the handoff pack judged the
    /// planned one: envelopes or a task its opener adds must not make it more powerful than
    /// its producer.
    pub(crate) fn check_under_contract(
        &self,
        under: &UnderContract,
        header: &crate::recorder::format::RunHeader,
    ) -> Result<(), RuntimeError> {
        let found = escalations(
            &*self.envelopes()?,
            &under.producer,
            &under.producer_agent,
            header,
            &under.contract,
        )?;
        if found.is_empty() {
            return Ok(());
        }
        let what: Vec<String> = found
            .iter()
            .map(|f| format!("{} `{}` ({})", f.code, f.detail, f.rule))
            .collect();
        Err(RuntimeError::Invalid(format!(
            "run `{}` would be allowed more than its producer under contract `{}`: {}\n  help: {}",
            header.id,
            under.contract.id,
            what.join("; "),
            found[0].help
        )))
    }

    /// Claims contract `id` for run `run` (see [`store::claim_in`]); returns the state it had.
    pub(crate) fn claim_contract(
        &self,
        id: &str,
        run: &str,
    ) -> Result<ContractState, RuntimeError> {
        let (id, run, at) = (id.to_string(), run.to_string(), self.now_rfc3339());
        self.store()
            .write(move |c| store::claim_in(c, &id, &run, &at))
            .map_err(|e| match e {
                crate::store::StoreError::Invalid(m) => RuntimeError::Conflict(m),
                other => other.into(),
            })
    }

    /// Gives a claimed contract back (the run could not be opened).
    pub(crate) fn release_contract(&self, id: &str, run: &str, state: ContractState) {
        let (id, run) = (id.to_string(), run.to_string());
        if let Err(e) = self
            .store()
            .write(move |c| store::release_in(c, &id, &run, state))
        {
            eprintln!("tollgate: could not give contract back after a failed open: {e}");
        }
    }

    /// Checks the delivery of every contract whose consumer is `run` and may have worked under
    /// it (answered or not, checked before or not), so its violations are recorded in the run
    /// while it is open. A check that fails is logged and does not keep the run from
    /// finishing.
    pub(crate) fn check_deliveries_of(&self, run: &str) -> Result<(), RuntimeError> {
        for c in store::for_run(self.store(), run)? {
            let bound = c.consumer_run == run;
            let open = matches!(
                c.state,
                ContractState::Validated
                    | ContractState::Accepted
                    | ContractState::Fulfilled
                    | ContractState::Violated
            );
            if bound
                && open
                && let Err(e) = self.check_delivery(&c.id)
            {
                eprintln!(
                    "tollgate: the delivery check of contract `{}` for run `{run}` failed: {e}",
                    c.id
                );
            }
        }
        Ok(())
    }
}
