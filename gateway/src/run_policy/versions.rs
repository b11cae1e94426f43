//! The envelope versions a recorded run was decided under. A run's envelopes are its
//! `envelope_sources`: every version any of its decisions used, so several versions of one
//! envelope when it was updated while the run ran. Every decision records the `ID@VERSION`s
//! it was made under (`envelope_versions`); replay and simulation rebuild each decision's
//! policy from exactly those versions, one engine per distinct set.

use std::collections::{BTreeMap, BTreeSet};

use crate::recorder::format::{EnvelopeSource, EventKind, EventRecord, RunFile};

/// The one field of a recorded `EnvelopeDecision` that says which versions decided it (the
/// rest of the decision is not read).
#[derive(serde::Deserialize)]
struct VersionsOnly {
    envelope_versions: Vec<String>,
}

/// The versions of a run file's envelopes, by label, and the sets its decisions used.
#[derive(Debug)]
pub struct RecordedVersions<'a> {
    by_label: BTreeMap<String, &'a EnvelopeSource>,
    opening: Vec<String>,
}

impl<'a> RecordedVersions<'a> {
    /// The versions of `file`'s envelope sources.
    pub fn new(file: &'a RunFile) -> RecordedVersions<'a> {
        let by_label: BTreeMap<String, &EnvelopeSource> = file
            .envelope_sources
            .iter()
            .map(|s| (label(s), s))
            .collect();
        // The versions in force when the run opened: those its header names, and for an id it
        // does not name (a hand-written file), the lowest version among the sources.
        let named = |s: &EnvelopeSource| file.run.envelopes.contains(&label(s));
        let mut opening: BTreeMap<&str, &EnvelopeSource> = BTreeMap::new();
        for s in &file.envelope_sources {
            let better = opening.get(s.id.as_str()).is_none_or(|cur| {
                (named(s), std::cmp::Reverse(s.version))
                    > (named(cur), std::cmp::Reverse(cur.version))
            });
            if better {
                opening.insert(&s.id, s);
            }
        }
        let opening = sorted(
            opening
                .values()
                .map(|s| label(s))
                .collect::<Vec<_>>()
                .iter()
                .map(String::as_str),
        );
        RecordedVersions { by_label, opening }
    }

    /// Whether the run was recorded with any envelope.
    pub fn is_empty(&self) -> bool {
        self.by_label.is_empty()
    }

    /// The versions in force when the run opened (sorted): the policy of anything the run
    /// recorded no versions for.
    pub fn opening(&self) -> &[String] {
        &self.opening
    }

    /// The `ID@VERSION`s a recorded event says it was decided under (sorted): a `decision`'s
    /// decision, a `compile`'s first item decision. `None` for events that record none.
    ///
    /// Only the versions are read (replay asks for every decision and compile it re-decides):
    /// the event's payload type has them at `decision.envelope_versions` and
    /// `outcomes[*].policy.envelope_versions`, and [`VersionsOnly`] reads those fields alone.
    pub fn of_event(e: &EventRecord) -> Option<Vec<String>> {
        use serde::Deserialize as _;
        let versions = match e.event_kind()? {
            EventKind::Decision => {
                VersionsOnly::deserialize(e.payload.get("decision")?)
                    .ok()?
                    .envelope_versions
            }
            EventKind::Compile => {
                let outcomes = e.payload.get("outcomes")?.as_array()?;
                outcomes
                    .iter()
                    .filter_map(|o| o.get("policy").filter(|p| !p.is_null()))
                    .find_map(|p| VersionsOnly::deserialize(p).ok())?
                    .envelope_versions
            }
            _ => return None,
        };
        Some(sorted(versions.iter().map(String::as_str)))
    }

    /// Every distinct set of versions the run's decisions were made under, the opening set
    /// included.
    pub fn used(&self, file: &RunFile) -> BTreeSet<Vec<String>> {
        let mut sets: BTreeSet<Vec<String>> =
            file.events.iter().filter_map(Self::of_event).collect();
        sets.insert(self.opening.clone());
        sets
    }

    /// The sources of a set of versions, named `ID@VERSION`; an error names the versions the
    /// run does not hold (a run recorded before it linked every version it used).
    pub fn sources(&self, versions: &[String]) -> Result<Vec<(String, &'a str)>, String> {
        let missing: Vec<&str> = versions
            .iter()
            .filter(|v| !self.by_label.contains_key(*v))
            .map(String::as_str)
            .collect();
        if !missing.is_empty() {
            return Err(format!(
                "decided under {}, which the run does not record",
                missing.join(", ")
            ));
        }
        Ok(versions
            .iter()
            .filter_map(|v| self.by_label.get(v))
            .map(|s| (label(s), s.yaml.as_str()))
            .collect())
    }
}

/// Sorted, deduplicated labels.
pub fn sorted<'s>(labels: impl Iterator<Item = &'s str>) -> Vec<String> {
    let set: BTreeSet<&str> = labels.collect();
    set.into_iter().map(str::to_string).collect()
}

fn label(s: &EnvelopeSource) -> String {
    format!("{}@{}", s.id, s.version)
}
