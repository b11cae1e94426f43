//! The lifecycle of memories: decay lowers a memory's recency with age and unuse and expires
//! what is stale — past its expiry, or unused for [`STALE_DAYS`] — unless it is pinned. Each
//! expiry is a recorded `expire` decision by `decay`, with why. The `memory.decay` job runs it.

use crate::store::params;
use serde::Serialize;
use serde_json::{Value, json};

use super::{Decision, MemoryError, MemoryStatus, PromotionDecision, ScoreParts, store};
use crate::clock::{parse_rfc3339, rfc3339};
use crate::jobs::{JobContext, JobFailure};
use crate::store::Store;

/// The job kind that runs decay (`{}`).
pub const DECAY_JOB: &str = "memory.decay";

/// An unpinned memory neither distilled again nor used for this long is stale.
pub const STALE_DAYS: i64 = 180;

/// Recency halves every this many days (as in the score at distillation).
const HALF_LIFE_DAYS: f64 = 30.0;

/// What a decay pass did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DecayReport {
    /// When it ran (RFC 3339).
    pub at: String,
    /// Memories looked at (candidates and approved ones).
    pub considered: usize,
    /// Pinned ones left as they are.
    pub pinned: usize,
    /// Those expired, with why.
    pub expired: Vec<(String, String)>,
    /// Those whose score was lowered.
    pub decayed: usize,
}

/// Decays every candidate and approved memory at `now` (seconds since the epoch), in one
/// write.
pub fn decay(store: &Store, now: i64) -> Result<DecayReport, MemoryError> {
    let at = rfc3339(u64::try_from(now).unwrap_or(0));
    let report = store.write(move |c| {
        let rows: Vec<(String, bool, i64, String, String, Option<String>)> = {
            let mut stmt = c.prepare(
                "SELECT m.id, m.pinned, m.expires_at, m.score, m.updated_at,
                        (SELECT MAX(l.at) FROM memory_links l WHERE l.memory_id = m.id)
                 FROM memories m WHERE m.status IN ('candidate', 'approved') ORDER BY m.id",
            )?;
            stmt.query_map((), |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                ))
            })?
            .collect::<Result<_, _>>()?
        };
        let mut report = DecayReport {
            at: at.clone(),
            considered: rows.len(),
            pinned: 0,
            expired: Vec::new(),
            decayed: 0,
        };
        for (id, pinned, expires_at, score, updated_at, last_used) in rows {
            if pinned {
                report.pinned += 1;
                continue;
            }
            let last = [Some(updated_at.as_str()), last_used.as_deref()]
                .into_iter()
                .flatten()
                .filter_map(parse_rfc3339)
                .max()
                .map_or(now, |t| t as i64);
            let idle_days = (now - last).max(0) / 86_400;
            let why = if expires_at != 0 && expires_at <= now {
                Some(format!(
                    "its time ran out ({})",
                    rfc3339(expires_at.max(0) as u64)
                ))
            } else if idle_days >= STALE_DAYS {
                Some(format!(
                    "stale: neither distilled again nor used for {idle_days} days"
                ))
            } else {
                None
            };
            if let Some(why) = why {
                store::insert_decision(
                    c,
                    &PromotionDecision {
                        memory: id.clone(),
                        decision: Decision::Expire,
                        by: "decay".into(),
                        reason: why.clone(),
                        at: at.clone(),
                        merged_into: None,
                    },
                )?;
                store::set_status(c, &id, MemoryStatus::Expired, &at)?;
                report.expired.push((id, why));
                continue;
            }
            // Recency with age and unuse, the other parts as distilled.
            let mut parts: ScoreParts =
                serde_json::from_str(&score).map_err(crate::store::StoreError::corrupt)?;
            let recency =
                (0.5f64.powf(idle_days as f64 / HALF_LIFE_DAYS) * 1000.0).round() / 1000.0;
            if recency < parts.recency {
                parts.total =
                    ((parts.total - 0.2 * (parts.recency - recency)) * 1000.0).round() / 1000.0;
                parts.recency = recency;
                let text = tollgate_rules::canonical::to_canonical_json(&parts)
                    .map_err(crate::store::StoreError::corrupt)?;
                c.execute(
                    "UPDATE memories SET score = ?2 WHERE id = ?1",
                    params![id, text],
                )?;
                report.decayed += 1;
            }
        }
        Ok(report)
    })?;
    Ok(report)
}

/// The `memory.decay` job: one decay pass at the worker's clock.
pub fn decay_job(context: &JobContext<'_>, _payload: &Value) -> Result<Value, JobFailure> {
    context
        .progress(0, 1, "decaying memories")
        .map_err(|e| JobFailure::retry(e.to_string()))?;
    let report = decay(context.store(), context.clock().now_ms().div_euclid(1000))
        .map_err(|e| JobFailure::retry(e.to_string()))?;
    context
        .progress(1, 1, &format!("{} expired", report.expired.len()))
        .map_err(|e| JobFailure::retry(e.to_string()))?;
    Ok(json!({
        "considered": report.considered,
        "pinned": report.pinned,
        "expired": report.expired.len(),
        "decayed": report.decayed,
    }))
}

/// The job kind that collects expired and rejected memories past retention (`{}` or
/// `{"retention_days": N}`).
pub const GC_JOB: &str = "memory.gc";

/// An expired or rejected memory is kept this long after its last decision, for audit, then
/// collected.
pub const RETENTION_DAYS: i64 = 90;

/// What a collection did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GcReport {
    /// When it ran (RFC 3339).
    pub at: String,
    /// The retention applied, in days.
    pub retention_days: i64,
    /// The memories deleted, with their sources, decisions, edits, links and provenance edges.
    pub collected: Vec<String>,
}

/// Deletes every expired or rejected memory whose last decision is older than
/// `retention_days` at `now`, with everything recorded about it, in one write. Pinned
/// memories are never collected; the runs and events they came from are untouched.
pub fn collect(store: &Store, now: i64, retention_days: i64) -> Result<GcReport, MemoryError> {
    if retention_days < 0 {
        return Err(MemoryError::Invalid(format!(
            "a retention of {retention_days} days is not one\n  help: give 0 or more days"
        )));
    }
    let at = rfc3339(u64::try_from(now).unwrap_or(0));
    let cutoff = now - retention_days * 86_400;
    let report = store.write(move |c| {
        let rows: Vec<(String, Option<String>)> = {
            let mut stmt = c.prepare(
                "SELECT m.id, (SELECT MAX(d.at) FROM memory_decisions d WHERE d.memory_id = m.id)
                 FROM memories m
                 WHERE m.status IN ('expired', 'rejected') AND m.pinned = 0 ORDER BY m.id",
            )?;
            stmt.query_map((), |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<Result<_, _>>()?
        };
        let mut collected = Vec::new();
        for (id, last) in rows {
            let decided = last
                .as_deref()
                .and_then(parse_rfc3339)
                .map_or(i64::MIN, |t| t as i64);
            if decided > cutoff {
                continue;
            }
            let node = format!("memory:{id}");
            for sql in [
                "DELETE FROM memory_sources WHERE memory_id = ?1",
                "DELETE FROM memory_decisions WHERE memory_id = ?1",
                "DELETE FROM memory_edits WHERE memory_id = ?1",
                "DELETE FROM memory_feedback WHERE memory_id = ?1",
                "DELETE FROM memory_links WHERE memory_id = ?1",
                "DELETE FROM memories WHERE id = ?1",
            ] {
                c.execute(sql, [&id])?;
            }
            c.execute(
                "DELETE FROM provenance_edges WHERE parent = ?1 OR child = ?1",
                [&node],
            )?;
            collected.push(id);
        }
        Ok(GcReport {
            at: at.clone(),
            retention_days,
            collected,
        })
    })?;
    Ok(report)
}

/// The `memory.gc` job: one collection at the worker's clock.
pub fn collect_job(context: &JobContext<'_>, payload: &Value) -> Result<Value, JobFailure> {
    let retention = payload
        .get("retention_days")
        .and_then(Value::as_i64)
        .unwrap_or(RETENTION_DAYS);
    let report = collect(
        context.store(),
        context.clock().now_ms().div_euclid(1000),
        retention,
    )
    .map_err(|e| match e {
        MemoryError::Invalid(m) => JobFailure::permanent(m),
        e => JobFailure::retry(e.to_string()),
    })?;
    Ok(json!({"retention_days": report.retention_days, "collected": report.collected}))
}

/// The job kind that reviews quarantines (`{}`).
pub const QUARANTINE_JOB: &str = "memory.quarantine_review";

/// A quarantine left this long without a person's decision ends in rejection.
pub const QUARANTINE_DAYS: i64 = 30;

/// What a quarantine review did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QuarantineReport {
    /// When it ran (RFC 3339).
    pub at: String,
    /// Quarantined memories looked at.
    pub considered: usize,
    /// Those rejected because nobody decided within [`QUARANTINE_DAYS`].
    pub rejected: Vec<String>,
}

/// Rejects every memory quarantined for [`QUARANTINE_DAYS`] or more at `now` (a quarantine
/// is a hold for a person's look, not a place to stay), each a recorded `reject` by
/// `quarantine-review` with why. The others wait, and the report counts them.
pub fn review_quarantine(store: &Store, now: i64) -> Result<QuarantineReport, MemoryError> {
    let at = rfc3339(u64::try_from(now).unwrap_or(0));
    let report = store.write(move |c| {
        let rows: Vec<(String, Option<String>)> = {
            let mut stmt = c.prepare(
                "SELECT m.id, (SELECT MAX(d.at) FROM memory_decisions d
                               WHERE d.memory_id = m.id AND d.decision = 'quarantine')
                 FROM memories m WHERE m.status = 'quarantined' ORDER BY m.id",
            )?;
            stmt.query_map((), |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<Result<_, _>>()?
        };
        let mut report = QuarantineReport {
            at: at.clone(),
            considered: rows.len(),
            rejected: Vec::new(),
        };
        for (id, since) in rows {
            let since = since
                .as_deref()
                .and_then(parse_rfc3339)
                .map_or(now, |t| t as i64);
            let days = (now - since).max(0) / 86_400;
            if days < QUARANTINE_DAYS {
                continue;
            }
            store::insert_decision(
                c,
                &PromotionDecision {
                    memory: id.clone(),
                    decision: Decision::Reject,
                    by: "quarantine-review".into(),
                    reason: format!(
                        "quarantined {days} days without a decision (the limit is {QUARANTINE_DAYS})"
                    ),
                    at: at.clone(),
                    merged_into: None,
                },
            )?;
            store::set_status(c, &id, MemoryStatus::Rejected, &at)?;
            report.rejected.push(id);
        }
        Ok(report)
    })?;
    Ok(report)
}

/// The `memory.quarantine_review` job: one review at the worker's clock.
pub fn review_quarantine_job(
    context: &JobContext<'_>,
    _payload: &Value,
) -> Result<Value, JobFailure> {
    let report = review_quarantine(context.store(), context.clock().now_ms().div_euclid(1000))
        .map_err(|e| JobFailure::retry(e.to_string()))?;
    Ok(json!({"considered": report.considered, "rejected": report.rejected}))
}
