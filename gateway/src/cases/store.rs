//! The case event stream: appends with optimistic concurrency and idempotent event ids, each
//! event hash-chained to the one before, and the projections brought up to date in the same
//! transaction (so a reader never sees an event without its projection, nor the reverse).

use crate::store::{Connection, ConstraintKind, OptionalExtension, params};
use serde::Serialize;
use tollgate_rules::canonical::canonical_json;

use super::log::{event_hash, head_in, version_in};
use super::project::{self, CaseProjection};
use super::{CaseError, CaseEvent, EventBody, NewEvent};
use crate::store::Store;

/// What an append did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct Appended {
    /// The case.
    pub case_id: String,
    /// Its version now.
    pub version: i64,
    /// The versions of the events (the stored ones, for a repeated append).
    pub versions: Vec<i64>,
    /// Its head hash now.
    pub head: String,
    /// Every event id was stored already with the same content: nothing was written.
    pub duplicate: bool,
}

/// Appends `events` to `case_id` inside the caller's write, if the case is at
/// `expected_version`. Event ids already stored with the same case, kind, payload and actor make
/// the append a repeat that writes nothing; a stored id with other content is a conflict.
pub fn append_in(
    c: &Connection,
    case_id: &str,
    expected_version: i64,
    events: &[NewEvent],
    at: &str,
) -> Result<Appended, CaseError> {
    if events.is_empty() {
        return Err(CaseError::Invalid(
            "an append needs at least one event".into(),
        ));
    }
    let mut repeats = Vec::new();
    for e in events {
        let Some(id) = &e.event_id else { continue };
        let stored: Option<(String, i64, String, String, String)> = c
            .query_row(
                "SELECT case_id, version, kind, payload, actor FROM case_events
                 WHERE case_id = ?1 AND event_id = ?2",
                [case_id, id.as_str()],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)),
            )
            .optional()?;
        if let Some((case, version, kind, payload, actor)) = stored {
            let same = case == case_id
                && kind == e.body.kind()
                && payload == canonical_json(&e.body.payload())
                && actor == e.actor;
            if !same {
                return Err(CaseError::conflict(
                    crate::codes::http::EVENT_ID_REUSED,
                    format!(
                        "event id `{id}` is stored already with other content (case `{case}`, version {version})\n  help: give a new event a new id"
                    ),
                ));
            }
            repeats.push(version);
        }
    }
    if !repeats.is_empty() {
        if repeats.len() != events.len() {
            return Err(CaseError::conflict(
                crate::codes::http::EVENT_ID_REUSED,
                "some of the event ids are stored already and some are not: an append is repeated whole or not at all",
            ));
        }
        return Ok(Appended {
            case_id: case_id.into(),
            version: version_in(c, case_id)?,
            versions: repeats,
            head: head_in(c, case_id)?,
            duplicate: true,
        });
    }
    let actual = version_in(c, case_id)?;
    if actual != expected_version {
        return Err(CaseError::VersionConflict {
            case: case_id.into(),
            expected: expected_version,
            actual,
        });
    }
    let opening = matches!(events[0].body, EventBody::CaseOpened(_));
    if (actual == 0) != opening {
        return Err(CaseError::Invalid(if actual == 0 {
            format!("case `{case_id}` does not exist: a case starts with `case_opened`")
        } else {
            format!("case `{case_id}` is open already")
        }));
    }
    if events
        .iter()
        .skip(1)
        .any(|e| matches!(e.body, EventBody::CaseOpened(_)))
    {
        return Err(CaseError::Invalid("`case_opened` comes first, once".into()));
    }
    let mut projection = if actual == 0 {
        CaseProjection::default()
    } else {
        project::load_in(c, case_id, false)?
    };
    let mut prev = head_in(c, case_id)?;
    let mut version = actual;
    let mut stored = Vec::new();
    for e in events {
        version += 1;
        let event_id = e
            .event_id
            .clone()
            .unwrap_or_else(|| format!("{case_id}/{version}"));
        let payload = canonical_json(&e.body.payload());
        let kind = e.body.kind();
        let hash = event_hash(&prev, version, &event_id, kind, &payload, &e.actor, at);
        c.execute(
            "INSERT INTO case_events (case_id, version, event_id, kind, payload, actor, at, prev_hash, hash)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            params![case_id, version, event_id, kind, payload, e.actor, at, prev, hash],
        )
        .map_err(|err| match err.violation() {
            Some(v) if v.kind == ConstraintKind::Unique => {
                CaseError::conflict(crate::codes::http::EVENT_ID_REUSED,
                    format!("event id `{event_id}` is stored already\n  help: give a new event a new id"),
                )
            }
            _ => CaseError::Store(err),
        })?;
        let event = CaseEvent {
            payload_text: payload.clone(),
            case_id: case_id.into(),
            version,
            event_id,
            body: e.body.clone(),
            actor: e.actor.clone(),
            at: at.into(),
            prev_hash: prev.clone(),
            hash: hash.clone(),
        };
        projection.apply(&event);
        stored.push(event);
        prev = hash;
    }
    project::persist_in(c, case_id, &projection, &stored)?;
    Ok(Appended {
        case_id: case_id.into(),
        version,
        versions: stored.iter().map(|e| e.version).collect(),
        head: prev,
        duplicate: false,
    })
}

/// Appends in one write of its own.
pub fn append(
    store: &Store,
    case_id: &str,
    expected_version: i64,
    events: Vec<NewEvent>,
    at: &str,
) -> Result<Appended, CaseError> {
    let (case_id, at) = (case_id.to_string(), at.to_string());
    store.transact(move |c| append_in(c, &case_id, expected_version, &events, &at))
}
