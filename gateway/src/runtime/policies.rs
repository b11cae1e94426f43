//! The envelope reads the `/v2/policies` routes and the dashboard's Envelopes screen share: a
//! stored version loaded with the envelopes in force, the diff of two versions, and the
//! simulation of a stored or given version on a recorded run.

use tollgate_rules::envelope::{EnvelopeDiff, EnvelopeSet, diff_envelopes, load_envelopes};

use super::{Runtime, RuntimeError};
use crate::policy::version_source;
use crate::simulate::{SimulateError, SimulationReport, candidate_ids, simulate};

impl Runtime {
    /// The set in force with `reference` (`ID@VERSION`, or `ID` for its latest) in place of
    /// its envelope's latest version, so a version that extends others loads with its parents.
    pub fn envelope_set_with(
        &self,
        id: &str,
        reference: &str,
    ) -> Result<EnvelopeSet, RuntimeError> {
        let mut sources = Vec::new();
        for e in self.envelopes()?.envelopes() {
            if e.id != id {
                sources.push(version_source(self.store(), &e.label())?);
            }
        }
        sources.push(version_source(self.store(), reference)?);
        load_envelopes(&sources).map_err(RuntimeError::Envelopes)
    }

    /// What changed between two stored versions of envelope `id` (`to`: default the latest),
    /// rule by rule, with the `ID@VERSION` of each side.
    pub fn envelope_diff(
        &self,
        id: &str,
        from: u32,
        to: Option<u32>,
    ) -> Result<(String, String, EnvelopeDiff), RuntimeError> {
        let side = |reference: String| -> Result<_, RuntimeError> {
            let (label, _) = version_source(self.store(), &reference)?;
            Ok((label, self.envelope_set_with(id, &reference)?))
        };
        let (from, old) = side(format!("{id}@{from}"))?;
        let (to, new) = side(match to {
            Some(v) => format!("{id}@{v}"),
            None => id.to_string(),
        })?;
        Ok((from, to, diff_envelopes(&old, &new)))
    }

    /// Dry-runs envelope `id` on recorded run `run`: the `candidate` text given (YAML or JSON,
    /// one envelope with that id), else the stored `reference` (`ID@VERSION` or `ID`).
    pub fn simulate_envelope(
        &self,
        id: &str,
        run: &str,
        candidate: Option<String>,
        reference: Option<&str>,
    ) -> Result<SimulationReport, RuntimeError> {
        let (label, text) = match candidate {
            Some(text) => ("request".to_string(), text),
            None => version_source(self.store(), reference.unwrap_or(id))?,
        };
        let file = self.recorder().export(run)?;
        let ids = candidate_ids(&[(label.clone(), text.clone())]);
        if ids != [id.to_string()] {
            return Err(RuntimeError::Invalid(format!(
                "the envelope given must be one envelope with `id: {id}` (found {})",
                if ids.is_empty() {
                    "none".to_string()
                } else {
                    ids.join(", ")
                }
            )));
        }
        simulate(&file, &[(label, text)]).map_err(|e| match e {
            SimulateError::Envelopes(errors) => RuntimeError::Envelopes(errors),
            SimulateError::Policy(m) => RuntimeError::Evaluation(m),
        })
    }
}
