//! Records promoted from a run (memories, regression cases, later records): the store refuses
//! any without provenance (source run, step and event, which must exist), a scope, a TTL and
//! a sensitivity.

use crate::store::{OptionalExtension, params};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Recorder, RecorderError};
use crate::clock::now_rfc3339;
use crate::store::StoreError;

/// Where a promoted record came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Provenance {
    /// Source run.
    pub run: String,
    /// Source step.
    pub step: u32,
    /// Source event (its sequence number in the run).
    pub event: u64,
}

/// A record promoted from a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PromotedRecord {
    /// Record id (`memory:m-12`); unique.
    pub id: String,
    /// Kind (`memory`, `regression_case`, ...).
    pub kind: String,
    /// The record itself.
    pub body: Value,
    /// Where it came from; required.
    pub provenance: Option<Provenance>,
    /// Scope path; required.
    pub scope: String,
    /// Time to live in seconds (0: until removed); required.
    pub ttl_seconds: Option<u64>,
    /// Sensitivity; required.
    pub sensitivity: Option<String>,
}

impl Recorder {
    /// Stores a promoted record, refusing it when provenance, scope, TTL or sensitivity is
    /// missing or points at nothing.
    pub fn promote(&self, record: &PromotedRecord) -> Result<(), RecorderError> {
        let missing = |what: &str| {
            RecorderError::Invalid(format!(
                "record `{}` has no {what}\n  help: everything promoted from a run carries provenance (run, step, event), scope, TTL and sensitivity",
                record.id
            ))
        };
        let p = record
            .provenance
            .clone()
            .ok_or_else(|| missing("provenance"))?;
        if record.scope.trim().is_empty() {
            return Err(missing("scope"));
        }
        let ttl = record.ttl_seconds.ok_or_else(|| missing("TTL"))?;
        let sensitivity = record
            .sensitivity
            .clone()
            .ok_or_else(|| missing("sensitivity"))?;
        if !["public", "internal", "confidential", "secret"].contains(&sensitivity.as_str()) {
            return Err(RecorderError::Invalid(format!(
                "record `{}`: sensitivity `{sensitivity}` is not a level\n  help: use public, internal, confidential or secret",
                record.id
            )));
        }
        let r = record.clone();
        self.store
            .write(move |c| {
                let step: Option<u32> = c
                    .query_row(
                        "SELECT step_idx FROM events WHERE run_id = ?1 AND seq = ?2",
                        params![p.run, p.event as i64],
                        |row| row.get(0),
                    )
                    .optional()?;
                match step {
                    None => {
                        return Err(StoreError::Invalid(format!(
                            "record `{}`: run `{}` has no event {}",
                            r.id, p.run, p.event
                        )));
                    }
                    Some(s) if s != p.step => {
                        return Err(StoreError::Invalid(format!(
                            "record `{}`: event {} of run `{}` is in step {s}, not {}",
                            r.id, p.event, p.run, p.step
                        )));
                    }
                    Some(_) => {}
                }
                let body = serde_json::to_string(&r.body).map_err(StoreError::corrupt)?;
                c.execute(
                    "INSERT INTO promoted_records (id, kind, body, source_run, source_step,
                        source_event, scope, ttl_seconds, sensitivity, created_at)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                    params![
                        r.id, r.kind, body, p.run, p.step, p.event as i64, r.scope, ttl as i64, sensitivity,
                        now_rfc3339()
                    ],
                )?;
                c.execute(
                    "INSERT INTO provenance_edges (parent, child, relation) VALUES (?1, ?2, 'promoted')",
                    params![format!("event:{}/{}", p.run, p.event), r.id],
                )?;
                Ok(())
            })
            .map_err(|e| match (e.violation(), e) {
                (_, StoreError::Invalid(m)) => RecorderError::Invalid(m),
                (Some(v), _) => RecorderError::Invalid(format!(
                    "record `{}` was refused: {}",
                    record.id, v.detail
                )),
                (None, other) => other.into(),
            })
    }
}
