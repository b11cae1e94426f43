//! Which envelope versions a run is pinned to. A run opens on the versions then in force (its
//! header names them); a version stored later reaches a running run only when an admin re-pins
//! it. Each re-pin is a row of `run_pins` naming the versions, who re-pinned and when; the
//! latest row of a run governs it, and the rows before it are the record of how it moved.

use crate::store::{Connection, OptionalExtension, params};
use serde::Serialize;

use crate::store::{Store, StoreError};

/// One re-pin of a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Pin {
    /// 1 for a run's first re-pin, then 2, 3...
    pub seq: u32,
    /// The `ID@VERSION`s the run was moved to, sorted.
    pub envelopes: Vec<String>,
    /// Who re-pinned it (the principal's id).
    pub pinned_by: String,
    /// When (RFC 3339).
    pub pinned_at: String,
}

/// The versions of a run's latest re-pin, inside the caller's read or write; `None` for a run
/// never re-pinned (its header's versions govern it).
pub(crate) fn latest_in(c: &Connection, run: &str) -> Result<Option<Vec<String>>, StoreError> {
    let text: Option<String> = c
        .prepare_cached(
            "SELECT envelopes FROM run_pins WHERE run_id = ?1 ORDER BY seq DESC LIMIT 1",
        )?
        .query_row([run], |r| r.get(0))
        .optional()?;
    text.map(|t| serde_json::from_str(&t).map_err(StoreError::corrupt))
        .transpose()
}

/// Records a re-pin of `run` to `envelopes` inside the caller's write; its sequence number.
pub(crate) fn pin_in(
    c: &Connection,
    run: &str,
    envelopes: &[String],
    by: &str,
    at: &str,
) -> Result<u32, StoreError> {
    let seq: u32 = c.query_row(
        "SELECT COALESCE(MAX(seq), 0) + 1 FROM run_pins WHERE run_id = ?1",
        [run],
        |r| r.get(0),
    )?;
    let text = serde_json::to_string(envelopes).map_err(StoreError::corrupt)?;
    c.execute(
        "INSERT INTO run_pins (run_id, seq, envelopes, pinned_by, pinned_at)
         VALUES (?1, ?2, ?3, ?4, ?5)",
        params![run, seq, text, by, at],
    )?;
    Ok(seq)
}

/// Every re-pin of a run, oldest first.
pub fn history(store: &Store, run: &str) -> Result<Vec<Pin>, StoreError> {
    let run = run.to_string();
    store.read(move |c| {
        let mut stmt = c.prepare(
            "SELECT seq, envelopes, pinned_by, pinned_at FROM run_pins
             WHERE run_id = ?1 ORDER BY seq",
        )?;
        let rows = stmt.query_map([run], |r| {
            Ok((
                r.get::<u32>(0)?,
                r.get::<String>(1)?,
                r.get::<String>(2)?,
                r.get::<String>(3)?,
            ))
        })?;
        rows.map(|row| {
            let (seq, text, pinned_by, pinned_at) = row?;
            Ok(Pin {
                seq,
                envelopes: serde_json::from_str(&text).map_err(StoreError::corrupt)?,
                pinned_by,
                pinned_at,
            })
        })
        .collect()
    })
}

/// Every running run with the versions it is pinned to (its latest re-pin, else its header's),
/// by id.
pub(crate) fn running(store: &Store) -> Result<Vec<(String, Vec<String>)>, StoreError> {
    store.read(|c| {
        let mut stmt = c.prepare(
            "SELECT r.id, r.envelopes,
                    (SELECT p.envelopes FROM run_pins p WHERE p.run_id = r.id
                     ORDER BY p.seq DESC LIMIT 1)
             FROM runs r WHERE r.status = 'running' ORDER BY r.id",
        )?;
        let rows = stmt.query_map((), |r| {
            Ok((
                r.get::<String>(0)?,
                r.get::<String>(1)?,
                r.get::<Option<String>>(2)?,
            ))
        })?;
        rows.map(|row| {
            let (id, opened, pinned) = row?;
            let text = pinned.unwrap_or(opened);
            let labels = serde_json::from_str(&text).map_err(StoreError::corrupt)?;
            Ok((id, labels))
        })
        .collect()
    })
}
