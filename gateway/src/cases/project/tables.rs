//! The projection tables in SQL: a case's projection written (all but the timeline replaced,
//! the timeline given the new events' rows) and read back.

use crate::store::{Connection, OptionalExtension, params};
use serde::Serialize;
use serde_json::Value;
use tollgate_rules::canonical::canonical_json;

use super::{
    CaseProjection, CaseRow, CommitRow, EvidenceRow, PolicyRow, PreviewRow, ProposalRow,
    TimelineRow,
};
use crate::cases::CaseEvent;
use crate::store::StoreError;

fn json_text(v: &impl Serialize) -> String {
    canonical_json(&serde_json::to_value(v).unwrap_or(Value::Null))
}

fn parse<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, StoreError> {
    serde_json::from_str(text).map_err(StoreError::corrupt)
}

/// Writes the case's projection rows (all but the timeline, which gets `new` events' rows).
pub fn persist_in(
    c: &Connection,
    case_id: &str,
    p: &CaseProjection,
    new: &[CaseEvent],
) -> Result<(), StoreError> {
    for table in [
        "case_evidence",
        "case_proposals",
        "case_previews",
        "case_policy",
        "case_commits",
    ] {
        c.execute(
            &format!("DELETE FROM {table} WHERE case_id = ?1"),
            [case_id],
        )?;
    }
    if let Some(h) = &p.case {
        c.execute(
            "INSERT INTO cases (case_id, pack_id, engine_id, engine_version, pack_root, title, state,
                                version, head_hash, opened_at, updated_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)
             ON CONFLICT (case_id) DO UPDATE SET state = excluded.state, version = excluded.version,
                 head_hash = excluded.head_hash, updated_at = excluded.updated_at",
            params![
                h.case_id, h.pack_id, h.engine_id, h.engine_version, h.pack_root, h.title, h.state,
                h.version, h.head_hash, h.opened_at, h.updated_at
            ],
        )?;
    }
    let mut ins = c.prepare_cached(
        "INSERT INTO case_evidence (case_id, worker, key, value, source, version) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?;
    for r in p.evidence.values() {
        ins.execute(params![
            case_id,
            r.worker,
            r.key,
            json_text(&r.value),
            r.source,
            r.version
        ])?;
    }
    let mut ins = c.prepare_cached(
        "INSERT INTO case_proposals (case_id, proposal_id, capability, action, wording, input, state, version)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?;
    for r in p.proposals.values() {
        ins.execute(params![
            case_id,
            r.proposal_id,
            r.capability,
            r.action,
            r.wording,
            json_text(&r.input),
            r.state,
            r.version
        ])?;
    }
    let mut ins = c.prepare_cached(
        "INSERT INTO case_previews (case_id, proposal_id, preview_hash, diff, summary, version)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?;
    for r in p.previews.values() {
        ins.execute(params![
            case_id,
            r.proposal_id,
            r.preview_hash,
            json_text(&r.changes),
            r.summary,
            r.version
        ])?;
    }
    let mut ins = c.prepare_cached(
        "INSERT INTO case_policy (case_id, proposal_id, preview_hash, effect, rules, approval_id, approval_state, version)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?;
    for r in p.policy.values() {
        ins.execute(params![
            case_id,
            r.proposal_id,
            r.preview_hash,
            r.effect,
            json_text(&r.rules),
            r.approval_id,
            r.approval_state,
            r.version
        ])?;
    }
    let mut ins = c.prepare_cached(
        "INSERT INTO case_commits (case_id, proposal_id, state, mode, detail, version)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?;
    for r in p.commits.values() {
        ins.execute(params![
            case_id,
            r.proposal_id,
            r.state,
            r.mode,
            json_text(&r.detail),
            r.version
        ])?;
    }
    let mut ins = c.prepare_cached(
        "INSERT INTO case_timeline (case_id, version, kind, summary, actor, at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?;
    let mut fresh = CaseProjection::default();
    for e in new {
        // The timeline row of an event depends on the event alone.
        fresh.timeline.clear();
        fresh.apply(e);
        if let Some(t) = fresh.timeline.first() {
            ins.execute(params![
                case_id, t.version, t.kind, t.summary, t.actor, t.at
            ])?;
        }
    }
    Ok(())
}

/// Reads a case's stored projection (with its timeline when asked).
pub fn load_in(
    c: &Connection,
    case_id: &str,
    timeline: bool,
) -> Result<CaseProjection, StoreError> {
    let mut p = CaseProjection {
        case: c
            .query_row(
                "SELECT case_id, pack_id, engine_id, engine_version, pack_root, title, state, version,
                        head_hash, opened_at, updated_at FROM cases WHERE case_id = ?1",
                [case_id],
                |r| {
                    Ok(CaseRow {
                        case_id: r.get(0)?,
                        pack_id: r.get(1)?,
                        engine_id: r.get(2)?,
                        engine_version: r.get(3)?,
                        pack_root: r.get(4)?,
                        title: r.get(5)?,
                        state: r.get(6)?,
                        version: r.get(7)?,
                        head_hash: r.get(8)?,
                        opened_at: r.get(9)?,
                        updated_at: r.get(10)?,
                    })
                },
            )
            .optional()?,
        ..CaseProjection::default()
    };
    let mut q = c.prepare_cached(
        "SELECT worker, key, value, source, version FROM case_evidence WHERE case_id = ?1",
    )?;
    let rows = q.query_map([case_id], |r| {
        Ok((
            r.get::<String>(0)?,
            r.get::<String>(1)?,
            r.get::<String>(2)?,
            r.get::<String>(3)?,
            r.get::<i64>(4)?,
        ))
    })?;
    for row in rows {
        let (worker, key, value, source, version) = row?;
        p.evidence.insert(
            (worker.clone(), key.clone()),
            EvidenceRow {
                worker,
                key,
                value: parse(&value)?,
                source,
                version,
            },
        );
    }
    let mut q = c.prepare_cached(
        "SELECT proposal_id, capability, action, wording, input, state, version FROM case_proposals WHERE case_id = ?1",
    )?;
    let rows = q.query_map([case_id], |r| {
        Ok((
            r.get::<String>(0)?,
            r.get::<String>(1)?,
            r.get::<String>(2)?,
            r.get::<String>(3)?,
            r.get::<String>(4)?,
            r.get::<String>(5)?,
            r.get::<i64>(6)?,
        ))
    })?;
    for row in rows {
        let (proposal_id, capability, action, wording, input, state, version) = row?;
        p.proposals.insert(
            proposal_id.clone(),
            ProposalRow {
                proposal_id,
                capability,
                action,
                wording,
                input: parse(&input)?,
                state,
                version,
            },
        );
    }
    let mut q = c.prepare_cached(
        "SELECT proposal_id, preview_hash, diff, summary, version FROM case_previews WHERE case_id = ?1",
    )?;
    let rows = q.query_map([case_id], |r| {
        Ok((
            r.get::<String>(0)?,
            r.get::<String>(1)?,
            r.get::<String>(2)?,
            r.get::<String>(3)?,
            r.get::<i64>(4)?,
        ))
    })?;
    for row in rows {
        let (proposal_id, preview_hash, diff, summary, version) = row?;
        p.previews.insert(
            proposal_id.clone(),
            PreviewRow {
                proposal_id,
                preview_hash,
                changes: parse(&diff)?,
                summary,
                version,
            },
        );
    }
    let mut q = c.prepare_cached(
        "SELECT proposal_id, preview_hash, effect, rules, approval_id, approval_state, version
         FROM case_policy WHERE case_id = ?1",
    )?;
    let rows = q.query_map([case_id], |r| {
        Ok((
            r.get::<String>(0)?,
            r.get::<String>(1)?,
            r.get::<String>(2)?,
            r.get::<String>(3)?,
            r.get::<Option<String>>(4)?,
            r.get::<Option<String>>(5)?,
            r.get::<i64>(6)?,
        ))
    })?;
    for row in rows {
        let (proposal_id, preview_hash, effect, rules, approval_id, approval_state, version) = row?;
        p.policy.insert(
            proposal_id.clone(),
            PolicyRow {
                proposal_id,
                preview_hash,
                effect,
                rules: parse(&rules)?,
                approval_id,
                approval_state,
                version,
            },
        );
    }
    let mut q = c.prepare_cached(
        "SELECT proposal_id, state, mode, detail, version FROM case_commits WHERE case_id = ?1",
    )?;
    let rows = q.query_map([case_id], |r| {
        Ok((
            r.get::<String>(0)?,
            r.get::<String>(1)?,
            r.get::<String>(2)?,
            r.get::<String>(3)?,
            r.get::<i64>(4)?,
        ))
    })?;
    for row in rows {
        let (proposal_id, state, mode, detail, version) = row?;
        p.commits.insert(
            proposal_id.clone(),
            CommitRow {
                proposal_id,
                state,
                mode,
                detail: parse(&detail)?,
                version,
            },
        );
    }
    if timeline {
        p.timeline = timeline_in(c, case_id, u64::MAX)?;
        p.timeline.reverse();
    }
    Ok(p)
}

/// The case's most recent `limit` timeline rows, newest first.
pub fn timeline_in(
    c: &Connection,
    case_id: &str,
    limit: u64,
) -> Result<Vec<TimelineRow>, StoreError> {
    let mut q = c.prepare_cached(
        "SELECT version, kind, summary, actor, at FROM case_timeline WHERE case_id = ?1
         ORDER BY version DESC LIMIT ?2",
    )?;
    let rows = q.query_map(
        params![case_id, i64::try_from(limit).unwrap_or(i64::MAX)],
        |r| {
            Ok(TimelineRow {
                version: r.get(0)?,
                kind: r.get(1)?,
                summary: r.get(2)?,
                actor: r.get(3)?,
                at: r.get(4)?,
            })
        },
    )?;
    rows.collect::<Result<Vec<_>, _>>()
}
