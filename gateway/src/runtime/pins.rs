//! Envelope versions pinned per run. A run decides under the versions it opened with (its
//! header names them), whatever is stored while it runs; an admin moves a running run to the
//! versions in force by re-pinning it, one run or every running run an envelope governs.
//! Finishing a run is the emergency stop.

use std::sync::Arc;

use serde::Serialize;
use tollgate_rules::envelope::load_envelopes;

use super::{Runtime, RuntimeError};
use crate::policy::{pins, version_source};
use crate::recorder::format::RunHeader;
use crate::recorder::write::{into_recorder, link_envelope_versions, running_in};
use crate::run_policy::{RunPolicy, RunPolicyError};
use crate::store::StoreError;

/// What re-pinning a run did (or, on a dry run, would do).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Repinned {
    /// The run.
    pub run: String,
    /// The `ID@VERSION`s it was pinned to.
    pub from: Vec<String>,
    /// The `ID@VERSION`s that govern it under the envelopes in force.
    pub to: Vec<String>,
    /// Whether the versions differ (an unchanged run is left as it is: no re-pin recorded).
    pub changed: bool,
    /// The re-pin's number for the run (1 for its first), when one was recorded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seq: Option<u32>,
}

impl Runtime {
    /// The versions a run is pinned to: its latest re-pin's, else those its header names.
    pub fn pinned_versions(&self, header: &RunHeader) -> Result<Vec<String>, RuntimeError> {
        let run = header.id.clone();
        let latest = self.store().read(move |c| pins::latest_in(c, &run))?;
        Ok(latest.unwrap_or_else(|| header.envelopes.clone()))
    }

    /// A recorded run's engine, built from the versions it is pinned to. When exactly those
    /// govern the run under the set in force (the common case), the set in force is used as
    /// it is; otherwise (an envelope was updated, or one now attaches to the run's agent or
    /// task) the pinned versions are read back from the store.
    pub(crate) fn pinned_engine(&self, header: &RunHeader) -> Result<RunPolicy, RuntimeError> {
        let pinned = self.pinned_versions(header)?;
        let in_force = self.build_engine(header)?;
        if in_force.governing(&header.id) == pinned {
            return Ok(in_force);
        }
        let sources = pinned
            .iter()
            .map(|label| version_source(self.store(), label))
            .collect::<Result<Vec<_>, _>>()?;
        let set = load_envelopes(&sources).map_err(|e| {
            RuntimeError::Evaluation(format!(
                "run `{}` is pinned to {}, which no longer load together: {}",
                header.id,
                pinned.join(", "),
                e.render()
            ))
        })?;
        policy_for(Arc::new(set), header)
    }

    /// Re-pins a running run to the versions that govern it under the envelopes in force,
    /// recording who did it (`by`, a principal's id). Later decisions are made under the new
    /// versions (and name them). With `dry_run`, says what would change and changes nothing.
    pub fn repin(&self, run: &str, by: &str, dry_run: bool) -> Result<Repinned, RuntimeError> {
        let plan = self.plan_repin(run)?;
        self.commit_repin(plan, by, dry_run)
    }

    /// Re-pins every running run that envelope `id` governs, under the versions it is pinned
    /// to or under those in force (so also a run a new envelope now attaches to); what each
    /// re-pin did, by run. A run that finishes meanwhile is left out.
    pub fn repin_governed_by(
        &self,
        id: &str,
        by: &str,
        dry_run: bool,
    ) -> Result<Vec<Repinned>, RuntimeError> {
        if self.envelopes()?.get(id).is_none() {
            return Err(RuntimeError::NotFound(format!(
                "no stored envelope `{id}`\n  help: `tollgate policy versions` lists what is stored"
            )));
        }
        let prefix = format!("{id}@");
        let names = |labels: &[String]| labels.iter().any(|l| l.starts_with(&prefix));
        let mut out = Vec::new();
        for (run, _) in pins::running(self.store())? {
            let plan = match self.plan_repin(&run) {
                Ok(plan) => plan,
                Err(RuntimeError::Conflict(_) | RuntimeError::NotFound(_)) => continue,
                Err(e) => return Err(e),
            };
            if !names(&plan.from) && !names(&plan.to) {
                continue;
            }
            match self.commit_repin(plan, by, dry_run) {
                Ok(r) => out.push(r),
                Err(RuntimeError::Conflict(_)) => continue,
                Err(e) => return Err(e),
            }
        }
        Ok(out)
    }

    /// What re-pinning a running run would change.
    fn plan_repin(&self, run: &str) -> Result<Plan, RuntimeError> {
        let seen = self.policy_generation();
        let header = self.running(run)?;
        let from = self.pinned_versions(&header)?;
        let engine = Arc::new(self.build_engine(&header)?);
        let to = engine.governing(run);
        Ok(Plan {
            run: run.to_string(),
            from,
            to,
            engine,
            seen,
        })
    }

    /// Records a planned re-pin (unless nothing changes, or on a dry run) and puts its engine
    /// in the run's place: the run's next decision is made under it.
    fn commit_repin(&self, plan: Plan, by: &str, dry_run: bool) -> Result<Repinned, RuntimeError> {
        let Plan {
            run,
            from,
            to,
            engine,
            seen,
        } = plan;
        let changed = to != from;
        if !changed || dry_run {
            return Ok(Repinned {
                run,
                from,
                to,
                changed,
                seq: None,
            });
        }
        let (key, labels, by, at) = (run.clone(), to.clone(), by.to_string(), self.now_rfc3339());
        let links = engine.versions().to_vec();
        let seq = self.store().transact(move |c| {
            // The run may have finished since it was read.
            running_in(c, &key).map_err(|e| match e {
                StoreError::Invalid(m) => RuntimeError::Conflict(m),
                other => RuntimeError::from(into_recorder(other)),
            })?;
            link_envelope_versions(c, &key, &links)?;
            Ok::<_, RuntimeError>(pins::pin_in(c, &key, &labels, &by, &at)?)
        })?;
        engine.mark_linked();
        self.keep_engine(&run, seen, engine);
        Ok(Repinned {
            run,
            from,
            to,
            changed,
            seq: Some(seq),
        })
    }
}

/// A re-pin worked out and not yet recorded.
struct Plan {
    run: String,
    from: Vec<String>,
    to: Vec<String>,
    engine: Arc<RunPolicy>,
    /// The count of policy changes read before the engine was built.
    seen: i64,
}

/// `set` materialised over a run's subject facts.
pub(super) fn policy_for(
    set: Arc<tollgate_rules::envelope::EnvelopeSet>,
    header: &RunHeader,
) -> Result<RunPolicy, RuntimeError> {
    RunPolicy::build(set, header).map_err(|e| match e {
        RunPolicyError::Subject(m) => RuntimeError::Invalid(m),
        RunPolicyError::Engine(m) => RuntimeError::Evaluation(m),
    })
}

#[cfg(test)]
mod tests;
