//! The case event log as stored: each event hash-chained to the one before (from a genesis
//! hash of the case id), read back in version order, and its chain verified.

use crate::store::{Connection, OptionalExtension, params};
use serde_json::Value;
use tollgate_rules::canonical::canonical_json;

use super::{CaseEvent, EventBody};
use crate::store::StoreError;

/// The hash the chain of `case_id` starts from.
pub fn genesis(case_id: &str) -> String {
    blake3::hash(format!("tollgate.case/v1\u{0}{case_id}").as_bytes())
        .to_hex()
        .to_string()
}

/// An event's hash.
pub fn event_hash(
    prev: &str,
    version: i64,
    event_id: &str,
    kind: &str,
    payload: &str,
    actor: &str,
    at: &str,
) -> String {
    let mut h = blake3::Hasher::new();
    for part in [
        prev,
        &version.to_string(),
        event_id,
        kind,
        payload,
        actor,
        at,
    ] {
        h.update(part.as_bytes());
        h.update(&[0]);
    }
    h.finalize().to_hex().to_string()
}

/// The case's version (0 for a case with no event).
pub fn version_in(c: &Connection, case_id: &str) -> Result<i64, StoreError> {
    let v: Option<i64> = c.query_row(
        "SELECT MAX(version) FROM case_events WHERE case_id = ?1",
        [case_id],
        |r| r.get(0),
    )?;
    Ok(v.unwrap_or(0))
}

pub(super) fn head_in(c: &Connection, case_id: &str) -> Result<String, StoreError> {
    Ok(c.query_row(
        "SELECT hash FROM case_events WHERE case_id = ?1 ORDER BY version DESC LIMIT 1",
        [case_id],
        |r| r.get(0),
    )
    .optional()?
    .unwrap_or_else(|| genesis(case_id)))
}

fn event_from_row(r: &crate::store::Row<'_>) -> Result<Result<CaseEvent, StoreError>, StoreError> {
    let kind: String = r.get(3)?;
    let payload: String = r.get(4)?;
    let body = serde_json::from_str::<Value>(&payload)
        .map_err(|e| e.to_string())
        .and_then(|p| EventBody::from_parts(&kind, p));
    let body = match body {
        Ok(b) => b,
        Err(e) => return Ok(Err(StoreError::corrupt(e))),
    };
    Ok(Ok(CaseEvent {
        payload_text: payload.clone(),
        case_id: r.get(0)?,
        version: r.get(1)?,
        event_id: r.get(2)?,
        body,
        actor: r.get(5)?,
        at: r.get(6)?,
        prev_hash: r.get(7)?,
        hash: r.get(8)?,
    }))
}

const EVENT_COLUMNS: &str = "case_id, version, event_id, kind, payload, actor, at, prev_hash, hash";

/// The events of a case after `after`, at most `limit`, in order.
pub fn events_in(
    c: &Connection,
    case_id: &str,
    after: i64,
    limit: u64,
) -> Result<Vec<CaseEvent>, StoreError> {
    let mut stmt = c.prepare_cached(&format!(
        "SELECT {EVENT_COLUMNS} FROM case_events WHERE case_id = ?1 AND version > ?2
         ORDER BY version LIMIT ?3"
    ))?;
    let rows = stmt.query_map(
        params![case_id, after, i64::try_from(limit).unwrap_or(i64::MAX)],
        event_from_row,
    )?;
    let mut out = Vec::new();
    for row in rows {
        out.push(row??);
    }
    Ok(out)
}

/// Every event of a case.
pub fn all_events_in(c: &Connection, case_id: &str) -> Result<Vec<CaseEvent>, StoreError> {
    events_in(c, case_id, 0, u64::MAX)
}

/// Whether the case's chain verifies: every event's hash recomputes and links to the one before,
/// versions without gaps. The first break, if any.
pub fn verify_chain(events: &[CaseEvent]) -> Result<(), String> {
    let Some(first) = events.first() else {
        return Ok(());
    };
    let mut prev = genesis(&first.case_id);
    for (i, e) in events.iter().enumerate() {
        if e.version != i as i64 + 1 {
            return Err(format!("version {} follows version {i}", e.version));
        }
        let payload = if e.payload_text.is_empty() {
            canonical_json(&e.body.payload())
        } else {
            e.payload_text.clone()
        };
        let hash = event_hash(
            &prev,
            e.version,
            &e.event_id,
            e.body.kind(),
            &payload,
            &e.actor,
            &e.at,
        );
        if e.prev_hash != prev || e.hash != hash {
            return Err(format!("event {} does not hash to its chain", e.version));
        }
        prev = hash;
    }
    Ok(())
}
