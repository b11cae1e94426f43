//! Memories in the store (migration 8): the memory rows, their sources and their review
//! history, and the provenance edge from each source event to the memory.

use std::collections::HashMap;

use crate::store::{
    Connection, IN_LIST, OptionalExtension, Row, in_list, params, params_from_iter,
};
use tollgate_rules::canonical::to_canonical_json;
use tollgate_rules::envelope::Level;

use super::{
    Decision, Evidence, FeedbackVerdict, MemoryArtifact, MemoryCandidate, MemoryClass, MemoryEdit,
    MemoryError, MemoryFeedback, MemoryStatus, PromotionDecision, ScoreParts, dedupe,
};
use crate::store::{Store, StoreError};

/// Which memories to list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MemoryFilter {
    /// Only in this status.
    pub status: Option<MemoryStatus>,
    /// Only of this class.
    pub class: Option<MemoryClass>,
    /// Only those with a source in this run.
    pub run: Option<String>,
}

const COLUMNS: &str = "id, class, text, scope, sensitivity, status, pinned, expires_at, strength, \
                       usage_count, score";

/// One memory with its sources and decisions.
pub fn get(store: &Store, id: &str) -> Result<MemoryArtifact, MemoryError> {
    let key = id.to_string();
    store
        .read(move |c| load(c, &key))?
        .ok_or_else(|| MemoryError::NotFound(id.to_string()))
}

/// The memories `filter` selects, strongest first (then by id).
pub fn list(store: &Store, filter: &MemoryFilter) -> Result<Vec<MemoryArtifact>, MemoryError> {
    let filter = filter.clone();
    Ok(store.read(move |c| {
        let mut stmt = c.prepare(
            "SELECT id FROM memories m
             WHERE (CAST(?1 AS TEXT) IS NULL OR m.status = ?1) AND (CAST(?2 AS TEXT) IS NULL OR m.class = ?2)
               AND (CAST(?3 AS TEXT) IS NULL OR EXISTS
                    (SELECT 1 FROM memory_sources s WHERE s.memory_id = m.id AND s.run_id = ?3))
             ORDER BY m.strength DESC, m.id",
        )?;
        let ids: Vec<String> = stmt
            .query_map(
                params![
                    filter.status.map(MemoryStatus::as_str),
                    filter.class.map(MemoryClass::as_str),
                    filter.run
                ],
                |r| r.get(0),
            )?
            .collect::<Result<_, _>>()?;
        let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
        Ok(load_many(c, &ids)?.into_iter().flatten().collect())
    })?)
}

/// One page of memories in a status (or all), by id.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryPage {
    /// The memories, by id.
    pub memories: Vec<MemoryArtifact>,
    /// The last id of this page when there are more.
    pub next: Option<String>,
}

/// The memories in `status` (all when `None`) of `class` (all when `None`) with an id after
/// `after`, by id, at most `limit`: a page of the memory screen, read by index.
pub fn page(
    store: &Store,
    status: Option<MemoryStatus>,
    class: Option<MemoryClass>,
    after: Option<&str>,
    limit: usize,
) -> Result<MemoryPage, MemoryError> {
    let after = after.unwrap_or("").to_string();
    let limit = limit.clamp(1, 500);
    Ok(store.read(move |c| {
        let mut stmt = c.prepare_cached(
            "SELECT id FROM memories
             WHERE (CAST(?1 AS TEXT) IS NULL OR status = ?1) AND (CAST(?2 AS TEXT) IS NULL OR class = ?2) AND id > ?3
             ORDER BY id LIMIT ?4",
        )?;
        let ids: Vec<String> = stmt
            .query_map(
                params![
                    status.map(MemoryStatus::as_str),
                    class.map(MemoryClass::as_str),
                    after,
                    limit as i64 + 1
                ],
                |r| r.get(0),
            )?
            .collect::<Result<_, _>>()?;
        let more = ids.len() > limit;
        let page: Vec<&str> = ids.iter().take(limit).map(String::as_str).collect();
        let memories: Vec<MemoryArtifact> = load_many(c, &page)?.into_iter().flatten().collect();
        let next = more
            .then(|| memories.last().map(|m| m.id.clone()))
            .flatten();
        Ok(MemoryPage { memories, next })
    })?)
}

/// Changes a memory's sensitivity, recording who, why, and from what: raising it keeps the
/// memory from runs cleared below it from then on; lowering it needs as good a reason.
/// Refused, changing nothing, without a person or a reason, or when it is that already.
pub fn set_sensitivity(
    store: &Store,
    id: &str,
    level: Level,
    by: &str,
    reason: &str,
    at: &str,
) -> Result<MemoryArtifact, MemoryError> {
    if by.trim().is_empty() || reason.trim().is_empty() {
        return Err(MemoryError::Invalid(
            "an edit names who made it and why\n  help: give `by` and `reason`".into(),
        ));
    }
    let (key, by, reason, at) = (
        id.to_string(),
        by.trim().to_string(),
        reason.trim().to_string(),
        at.to_string(),
    );
    store.write(move |c| {
        let Some(m) = load(c, &key)? else {
            return Ok(Err(MemoryError::NotFound(key)));
        };
        if m.sensitivity == level {
            return Ok(Err(MemoryError::Conflict(format!(
                "memory `{key}` is {} already",
                level.as_str()
            ))));
        }
        let seq: i64 = c.query_row(
            "SELECT COUNT(*) FROM memory_edits WHERE memory_id = ?1",
            [&key],
            |r| r.get(0),
        )?;
        c.execute(
            "INSERT INTO memory_edits (memory_id, seq, field, old_value, new_value, edited_by,
                 reason, at)
             VALUES (?1, ?2, 'sensitivity', ?3, ?4, ?5, ?6, ?7)",
            params![
                key,
                seq,
                m.sensitivity.as_str(),
                level.as_str(),
                by,
                reason,
                at
            ],
        )?;
        c.execute(
            "UPDATE memories SET sensitivity = ?2, updated_at = ?3 WHERE id = ?1",
            params![key, level.as_str(), at],
        )?;
        Ok(load(c, &key)?.ok_or_else(|| MemoryError::NotFound(key.clone())))
    })?
}

/// Records feedback on a memory from someone who used it: `helpful` and `unhelpful` move its
/// rank a little; `wrong` also quarantines it (a recorded `quarantine` by the same person, the
/// note as the reason) until a person reviews it. Refused, changing nothing, without who, for
/// `wrong` without a note, or for a memory rejected or expired already.
pub fn give_feedback(
    store: &Store,
    id: &str,
    feedback: MemoryFeedback,
) -> Result<MemoryArtifact, MemoryError> {
    if feedback.by.trim().is_empty() {
        return Err(MemoryError::Invalid(
            "feedback names who gives it\n  help: give `by` (a person or an agent)".into(),
        ));
    }
    if feedback.verdict == FeedbackVerdict::Wrong && feedback.note.trim().is_empty() {
        return Err(MemoryError::Invalid(
            "calling a memory wrong says why\n  help: give a `note`: it becomes the quarantine's reason".into(),
        ));
    }
    let key = id.to_string();
    store.write(move |c| {
        let Some(m) = load(c, &key)? else {
            return Ok(Err(MemoryError::NotFound(key)));
        };
        if matches!(m.status, MemoryStatus::Rejected | MemoryStatus::Expired) {
            return Ok(Err(MemoryError::Conflict(format!(
                "memory `{key}` is {}: it is never retrieved, so feedback changes nothing",
                m.status.as_str()
            ))));
        }
        let f = &feedback;
        let seq: i64 = c
            .prepare_cached("SELECT COUNT(*) FROM memory_feedback WHERE memory_id = ?1")?
            .query_row([&key], |r| r.get(0))?;
        c.execute(
            "INSERT INTO memory_feedback (memory_id, seq, verdict, given_by, note, run_id, at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![
                key,
                seq,
                f.verdict.as_str(),
                f.by.trim(),
                f.note.trim(),
                f.run,
                f.at
            ],
        )?;
        match f.verdict {
            FeedbackVerdict::Helpful => {
                c.execute(
                    "UPDATE memories SET helpful = helpful + 1 WHERE id = ?1",
                    [&key],
                )?;
            }
            FeedbackVerdict::Unhelpful => {
                c.execute(
                    "UPDATE memories SET unhelpful = unhelpful + 1 WHERE id = ?1",
                    [&key],
                )?;
            }
            FeedbackVerdict::Wrong if m.status != MemoryStatus::Quarantined => {
                insert_decision(
                    c,
                    &PromotionDecision {
                        memory: key.clone(),
                        decision: Decision::Quarantine,
                        by: f.by.trim().to_string(),
                        reason: format!("reported wrong: {}", f.note.trim()),
                        at: f.at.clone(),
                        merged_into: None,
                    },
                )?;
                set_status(c, &key, MemoryStatus::Quarantined, &f.at)?;
            }
            FeedbackVerdict::Wrong => {}
        }
        Ok(load(c, &key)?.ok_or_else(|| MemoryError::NotFound(key.clone())))
    })?
}

/// Records a person's review of a memory and applies it: accept, reject, expire or
/// quarantine (a merge is the distiller's). Refused, changing nothing, when the memory is
/// rejected or expired already, or the reviewer or reason is missing.
pub fn record_decision(
    store: &Store,
    id: &str,
    decision: Decision,
    by: &str,
    reason: &str,
    at: &str,
) -> Result<MemoryArtifact, MemoryError> {
    if by.trim().is_empty() || reason.trim().is_empty() {
        return Err(MemoryError::Invalid(
            "a review names who decided and why\n  help: give `by` and `reason`".into(),
        ));
    }
    let Some(next) = decision.status() else {
        return Err(MemoryError::Invalid(
            "memories are merged by the distiller, not by hand\n  help: reject the duplicate instead".into(),
        ));
    };
    let d = PromotionDecision {
        memory: id.to_string(),
        decision,
        by: by.trim().to_string(),
        reason: reason.trim().to_string(),
        at: at.to_string(),
        merged_into: None,
    };
    let key = id.to_string();
    store.write(move |c| {
        let Some(m) = load(c, &key)? else {
            return Ok(Err(MemoryError::NotFound(key)));
        };
        if matches!(m.status, MemoryStatus::Rejected | MemoryStatus::Expired) || m.status == next {
            return Ok(Err(MemoryError::Conflict(format!(
                "memory `{key}` is {} already: a `{}` changes nothing",
                m.status.as_str(),
                d.decision.as_str()
            ))));
        }
        insert_decision(c, &d)?;
        c.execute(
            "UPDATE memories SET status = ?2, updated_at = ?3 WHERE id = ?1",
            params![key, next.as_str(), d.at],
        )?;
        Ok(load(c, &key)?.ok_or_else(|| MemoryError::NotFound(key.clone())))
    })?
}

/// Pins (or unpins) a memory: a pinned memory does not decay.
pub fn set_pinned(
    store: &Store,
    id: &str,
    pinned: bool,
    at: &str,
) -> Result<MemoryArtifact, MemoryError> {
    let (key, at) = (id.to_string(), at.to_string());
    store
        .write(move |c| {
            c.execute(
                "UPDATE memories SET pinned = ?2, updated_at = ?3 WHERE id = ?1",
                params![key, pinned, at],
            )?;
            load(c, &key)
        })?
        .ok_or_else(|| MemoryError::NotFound(id.to_string()))
}

/// A compile that included a memory: the `MemoryLink`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct MemoryLink {
    /// The memory.
    pub memory: String,
    /// The run compiled.
    pub run: String,
    /// Its `compile` event.
    pub compile_seq: u64,
    /// Why the memory was chosen (rank and relevance).
    pub reason: String,
    /// When (RFC 3339).
    pub at: String,
}

/// Every compile that used memory `id`, oldest first.
pub fn usage(store: &Store, id: &str) -> Result<Vec<MemoryLink>, MemoryError> {
    let key = id.to_string();
    let found = store.read(move |c| {
        if load(c, &key)?.is_none() {
            return Ok(None);
        }
        let mut stmt = c.prepare(
            "SELECT run_id, compile_seq, reason, at FROM memory_links WHERE memory_id = ?1
             ORDER BY at, run_id, compile_seq",
        )?;
        let rows = stmt.query_map([&key], |r| {
            Ok(MemoryLink {
                memory: key.clone(),
                run: r.get(0)?,
                compile_seq: r.get::<i64>(1)? as u64,
                reason: r.get(2)?,
                at: r.get(3)?,
            })
        })?;
        Ok(Some(rows.collect::<Result<Vec<_>, _>>()?))
    })?;
    found.ok_or_else(|| MemoryError::NotFound(id.to_string()))
}

/// A memory's stored sensitivity read back as a level.
pub(crate) fn stored_level(id: &str, level: String) -> Result<Level, StoreError> {
    serde_json::from_value(serde_json::Value::String(level))
        .map_err(|_| StoreError::Corrupt(format!("memory `{id}`: sensitivity")))
}

/// The memory `id`, if stored.
pub(crate) fn load(c: &Connection, id: &str) -> Result<Option<MemoryArtifact>, StoreError> {
    Ok(load_many(c, &[id])?.pop().flatten())
}

/// The memories `ids`, in their order (`None` for one not stored): each table read once per
/// [`IN_LIST`] memories, not once per memory (a search's hits, a page of the list).
pub(crate) fn load_many(
    c: &Connection,
    ids: &[&str],
) -> Result<Vec<Option<MemoryArtifact>>, StoreError> {
    let mut found: HashMap<String, MemoryArtifact> = HashMap::with_capacity(ids.len());
    for chunk in ids.chunks(IN_LIST) {
        // Padded with the empty id, which no memory has.
        let keys = || (0..IN_LIST).map(|i| chunk.get(i).copied().unwrap_or(""));
        let mut stmt = c.prepare_cached(&format!(
            "SELECT {COLUMNS} FROM memories WHERE id IN ({})",
            in_list(1)
        ))?;
        let mut rows = stmt.query(params_from_iter(keys()))?;
        while let Some(r) = rows.next()? {
            let m = memory_row(&r)?;
            found.insert(m.id.clone(), m);
        }
        for_each_row(c, HISTORY[0], keys(), |id, r| {
            let Some(m) = found.get_mut(id) else {
                return Ok(());
            };
            m.sources.push(Evidence {
                run: r.get(1)?,
                step: r.get(2)?,
                event: r.get::<i64>(3)? as u64,
                episode: r.get(4)?,
                quote: r.get(5)?,
            });
            Ok(())
        })?;
        for_each_row(c, HISTORY[1], keys(), |id, r| {
            let Some(m) = found.get_mut(id) else {
                return Ok(());
            };
            let decision: String = r.get(1)?;
            m.decisions.push(PromotionDecision {
                memory: id.to_string(),
                decision: serde_json::from_value(serde_json::Value::String(decision))
                    .map_err(StoreError::corrupt)?,
                by: r.get(2)?,
                reason: r.get(3)?,
                at: r.get(4)?,
                merged_into: r.get(5)?,
            });
            Ok(())
        })?;
        for_each_row(c, HISTORY[2], keys(), |id, r| {
            let Some(m) = found.get_mut(id) else {
                return Ok(());
            };
            m.edits.push(MemoryEdit {
                field: r.get(1)?,
                from: r.get(2)?,
                to: r.get(3)?,
                by: r.get(4)?,
                reason: r.get(5)?,
                at: r.get(6)?,
            });
            Ok(())
        })?;
        for_each_row(c, HISTORY[3], keys(), |id, r| {
            let Some(m) = found.get_mut(id) else {
                return Ok(());
            };
            let verdict: String = r.get(1)?;
            m.feedback.push(MemoryFeedback {
                verdict: FeedbackVerdict::parse(&verdict).ok_or_else(|| {
                    StoreError::Corrupt(format!("memory `{id}`: feedback verdict"))
                })?,
                by: r.get(2)?,
                note: r.get(3)?,
                run: r.get(4)?,
                at: r.get(5)?,
            });
            Ok(())
        })?;
    }
    // Cloned, not taken: an id asked twice is answered twice.
    Ok(ids.iter().map(|id| found.get(*id).cloned()).collect())
}

/// A memory's row, its histories empty.
fn memory_row(r: &Row<'_>) -> Result<MemoryArtifact, StoreError> {
    let id: String = r.get(0)?;
    let corrupt = |what: &str| StoreError::Corrupt(format!("memory `{id}`: {what}"));
    let class = MemoryClass::parse(&r.get::<String>(1)?).ok_or_else(|| corrupt("class"))?;
    let status = MemoryStatus::parse(&r.get::<String>(5)?).ok_or_else(|| corrupt("status"))?;
    let sensitivity = stored_level(&id, r.get(4)?)?;
    let score: ScoreParts =
        serde_json::from_str(&r.get::<String>(10)?).map_err(StoreError::corrupt)?;
    Ok(MemoryArtifact {
        class,
        text: r.get(2)?,
        scope: r.get(3)?,
        sensitivity,
        status,
        pinned: r.get(6)?,
        expires_at: r.get(7)?,
        strength: r.get(8)?,
        usage_count: r.get::<i64>(9)?.max(0) as u64,
        score,
        sources: Vec::new(),
        decisions: Vec::new(),
        edits: Vec::new(),
        feedback: Vec::new(),
        id,
    })
}

/// A memory's histories: the columns after `memory_id`, in the order each was written.
const HISTORY: [&str; 4] = [
    "SELECT memory_id, run_id, step, event, episode, quote FROM memory_sources \
     WHERE memory_id IN ({}) ORDER BY memory_id, run_id, event",
    "SELECT memory_id, decision, decided_by, reason, at, merged_into FROM memory_decisions \
     WHERE memory_id IN ({}) ORDER BY memory_id, seq",
    "SELECT memory_id, field, old_value, new_value, edited_by, reason, at FROM memory_edits \
     WHERE memory_id IN ({}) ORDER BY memory_id, seq",
    "SELECT memory_id, verdict, given_by, note, run_id, at FROM memory_feedback \
     WHERE memory_id IN ({}) ORDER BY memory_id, seq",
];

/// Runs one of [`HISTORY`] over `keys` ([`IN_LIST`] of them), `each` on every row with the
/// memory it belongs to.
fn for_each_row<'k>(
    c: &Connection,
    sql: &str,
    keys: impl Iterator<Item = &'k str>,
    mut each: impl FnMut(&str, &Row<'_>) -> Result<(), StoreError>,
) -> Result<(), StoreError> {
    let mut stmt = c.prepare_cached(&sql.replace("{}", &in_list(1)))?;
    let mut rows = stmt.query(params_from_iter(keys))?;
    while let Some(r) = rows.next()? {
        let id: String = r.get(0)?;
        each(&id, &r)?;
    }
    Ok(())
}

/// Appends a decision to a memory's history.
pub(crate) fn insert_decision(c: &Connection, d: &PromotionDecision) -> Result<(), StoreError> {
    let seq: i64 = c
        .prepare_cached("SELECT COUNT(*) FROM memory_decisions WHERE memory_id = ?1")?
        .query_row([&d.memory], |r| r.get(0))?;
    c.prepare_cached(
        "INSERT INTO memory_decisions (memory_id, seq, decision, decided_by, reason, at, merged_into)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?
    .execute(
        params![d.memory, seq, d.decision.as_str(), d.by, d.reason, d.at, d.merged_into],
    )?;
    Ok(())
}

/// The memories of `class` in `scope` that can still be strengthened (not rejected or
/// expired), indexed for near duplicates.
pub(crate) fn near_index(
    c: &Connection,
    class: MemoryClass,
    scope: &str,
) -> Result<dedupe::NearIndex, StoreError> {
    let mut stmt = c.prepare_cached(
        "SELECT id, text FROM memories WHERE class = ?1 AND scope = ?2
           AND status NOT IN ('rejected', 'expired')
         ORDER BY id",
    )?;
    let rows = stmt.query_map(params![class.as_str(), scope], |r| {
        Ok((r.get::<String>(0)?, r.get::<String>(1)?))
    })?;
    let mut index = dedupe::NearIndex::default();
    for row in rows {
        let (id, text) = row?;
        index.add(&id, &text);
    }
    Ok(index)
}

/// A memory's status, if it is stored (without reading its sources and history).
pub(crate) fn status(c: &Connection, id: &str) -> Result<Option<MemoryStatus>, StoreError> {
    let found: Option<String> = c
        .prepare_cached("SELECT status FROM memories WHERE id = ?1")?
        .query_row([id], |r| r.get(0))
        .optional()?;
    found
        .map(|s| {
            MemoryStatus::parse(&s)
                .ok_or_else(|| StoreError::Corrupt(format!("memory `{id}`: status")))
        })
        .transpose()
}

/// Adds a source to a memory (and its provenance edge); whether it was new. A new source
/// strengthens the memory and carries its expiry forward.
pub(crate) fn add_source(
    c: &Connection,
    id: &str,
    e: &Evidence,
    expires_at: i64,
    at: &str,
) -> Result<bool, StoreError> {
    let added =
        c.prepare_cached(
            "INSERT INTO memory_sources (memory_id, run_id, step, event, episode, quote)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT DO NOTHING",
        )?
        .execute(params![
            id,
            e.run,
            e.step,
            e.event as i64,
            e.episode,
            e.quote
        ])? == 1;
    if added {
        c.prepare_cached(
            "UPDATE memories SET strength = strength + 1, updated_at = ?3,
                 expires_at = CASE WHEN expires_at = 0 OR ?2 = 0 THEN 0
                                   WHEN expires_at >= ?2 THEN expires_at ELSE ?2 END
             WHERE id = ?1",
        )?
        .execute(params![id, expires_at, at])?;
        edge(c, e, id)?;
    }
    Ok(added)
}

/// Stores a new memory from a candidate, with its first source.
pub(crate) fn insert(
    c: &Connection,
    m: &MemoryCandidate,
    expires_at: i64,
    at: &str,
) -> Result<(), StoreError> {
    let score = to_canonical_json(&m.score).map_err(StoreError::corrupt)?;
    c.prepare_cached(
        "INSERT INTO memories (id, class, text, norm, scope, sensitivity, status, pinned,
             ttl_seconds, expires_at, strength, usage_count, score, extractor, created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'candidate', 0, ?7, ?8, 0, 0, ?9, ?10, ?11, ?11)",
    )?
    .execute(
        params![
            m.id,
            m.class.as_str(),
            m.text,
            dedupe::normalise(&m.text),
            m.scope,
            m.sensitivity.as_str(),
            m.ttl_seconds as i64,
            expires_at,
            score,
            m.extractor,
            at
        ],
    )?;
    add_source(c, &m.id, &m.evidence, expires_at, at)?;
    Ok(())
}

/// Sets a memory's status (the distiller's own promotion).
pub(crate) fn set_status(
    c: &Connection,
    id: &str,
    status: MemoryStatus,
    at: &str,
) -> Result<(), StoreError> {
    c.prepare_cached("UPDATE memories SET status = ?2, updated_at = ?3 WHERE id = ?1")?
        .execute(params![id, status.as_str(), at])?;
    Ok(())
}

fn edge(c: &Connection, e: &Evidence, id: &str) -> Result<(), StoreError> {
    c.prepare_cached(
        "INSERT INTO provenance_edges (parent, child, relation)
         VALUES (?1, ?2, 'distilled') ON CONFLICT DO NOTHING",
    )?
    .execute(params![
        format!("event:{}/{}", e.run, e.event),
        format!("memory:{id}")
    ])?;
    Ok(())
}
