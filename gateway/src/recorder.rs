//! The flight recorder: runs, steps and append-only events in the store, each event chained to
//! the previous one of its run by hash, large payloads stored once as artifacts, and the run
//! file format for import and export.
//!
//! The chain: a run's *genesis* hash covers its immutable header (id, agent, task, scope,
//! clearance, start, parent, envelopes, metadata); event `n` hashes its run, sequence number,
//! step, kind, time, the hash of its payload and the hash of event `n-1` (the genesis hash for
//! the first). The run row keeps the count and the last hash, so an edited event, a deleted
//! one, a reordered one and a truncated tail are all detected by [`Recorder::verify`].

pub mod buckets;
mod counts;
pub mod events;
pub mod format;
pub mod otel;
mod page;
mod promote;
mod timeline;
pub(crate) mod write;

use crate::store::{Connection, OptionalExtension, params};
use serde::Serialize;
use serde_json::{Value, json};
use tollgate_rules::canonical::canonical_json;

use crate::store::{Store, StoreError};
use format::{EventKind, EventRecord, RunFile, RunHeader, StepRecord};

pub use counts::DecisionCounts;
pub use page::{RunFilter, RunKey, RunPage};
pub use promote::{PromotedRecord, Provenance};
pub use timeline::{clip, handoff_line, render_timeline};
pub use write::ImportSummary;

/// Payloads larger than this (canonical JSON bytes) are stored compressed (LZ4, a BLOB) in the
/// event's `payload` column.
pub const COMPRESS_PAYLOAD_OVER: usize = 1024;
/// Payloads still larger than this once compressed are stored once as artifacts.
pub const INLINE_PAYLOAD_LIMIT: usize = 4096;

/// What can go wrong recording.
#[derive(Debug, thiserror::Error)]
pub enum RecorderError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A run file or an event is not acceptable; nothing was stored.
    #[error("{0}")]
    Invalid(String),
    /// No such run.
    #[error("no run `{0}`\n  help: `tollgate runs list` shows the recorded runs")]
    UnknownRun(String),
}

/// blake3 hex of a JSON value's canonical form.
pub fn hash_json(value: &Value) -> String {
    blake3::hash(canonical_json(value).as_bytes())
        .to_hex()
        .to_string()
}

/// The genesis hash of a run: its immutable header fields.
pub fn genesis_hash(header: &RunHeader) -> String {
    hash_json(&json!({
        "run": header.id,
        "agent": header.agent,
        "task": header.task,
        "scope": header.scope,
        "clearance": header.clearance,
        "started_at": header.started_at,
        "parent_run": header.parent_run,
        "envelopes": header.envelopes,
        "metadata": header.metadata,
    }))
}

/// The hash of one event, given its payload's hash and its predecessor's hash.
pub fn event_hash(
    run: &str,
    seq: u64,
    step: u32,
    kind: &str,
    at: &str,
    payload_hash: &str,
    prev: &str,
) -> String {
    hash_json(&json!({
        "run": run, "seq": seq, "step": step, "kind": kind, "at": at,
        "payload": payload_hash, "prev": prev,
    }))
}

/// The columns [`summary_of_row`] reads, of `runs r`.
const SUMMARY_COLUMNS: &str = "r.id, r.agent, r.task, r.status, r.started_at, r.event_count,
     (SELECT COUNT(*) FROM steps s WHERE s.run_id = r.id), r.decisions_allow, r.decisions_redact,
     r.decisions_require_approval, r.decisions_rate_limited, r.decisions_deny";

/// A run's summary from a row of [`SUMMARY_COLUMNS`].
fn summary_of_row(r: &crate::store::Row<'_>) -> Result<RunSummary, StoreError> {
    Ok(RunSummary {
        id: r.get(0)?,
        agent: r.get(1)?,
        task: r.get(2)?,
        status: r.get(3)?,
        started_at: r.get(4)?,
        events: r.get::<i64>(5)? as u64,
        steps: r.get(6)?,
        decisions: DecisionCounts::from_row(r, 7)?,
    })
}

/// A run as listed.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct RunSummary {
    /// Run id.
    pub id: String,
    /// Agent.
    pub agent: String,
    /// Task.
    pub task: String,
    /// Status.
    pub status: String,
    /// Start time.
    pub started_at: String,
    /// Number of steps.
    pub steps: u32,
    /// Number of events.
    pub events: u64,
    /// Its decisions by what the gateway answered.
    pub decisions: DecisionCounts,
}

/// One problem `verify` found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChainProblem {
    /// The event concerned (`None` for the run itself).
    pub seq: Option<u64>,
    /// `edited`, `gap`, `chain_broken`, `missing_artifact`, `truncated`, `header_edited`,
    /// `unknown_step`.
    pub kind: String,
    /// What exactly differs.
    pub detail: String,
}

/// The result of verifying one run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VerifyReport {
    /// Run id.
    pub run: String,
    /// Events checked.
    pub events: u64,
    /// The last hash of the chain as recomputed.
    pub head: String,
    /// Every problem, in event order.
    pub problems: Vec<ChainProblem>,
}

impl VerifyReport {
    /// Whether the chain holds.
    pub fn is_intact(&self) -> bool {
        self.problems.is_empty()
    }
}

/// The flight recorder over a store.
#[derive(Debug, Clone)]
pub struct Recorder {
    store: Store,
}

impl Recorder {
    /// A recorder writing to `store`.
    pub fn new(store: Store) -> Recorder {
        Recorder { store }
    }

    /// The store underneath.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Every run, newest first.
    pub fn list(&self) -> Result<Vec<RunSummary>, RecorderError> {
        self.summaries(None)
    }

    /// One run's summary.
    pub fn summary(&self, run: &str) -> Result<RunSummary, RecorderError> {
        self.summaries(Some(run))?
            .pop()
            .ok_or_else(|| RecorderError::UnknownRun(run.to_string()))
    }

    fn summaries(&self, run: Option<&str>) -> Result<Vec<RunSummary>, RecorderError> {
        let run = run.map(str::to_string);
        Ok(self.store.read(move |c| {
            // One run by its key; all of them in order (an `OR` would scan for one).
            let mut stmt = match run {
                Some(_) => c.prepare_cached(&format!(
                    "SELECT {SUMMARY_COLUMNS} FROM runs r WHERE r.id = ?1"
                ))?,
                None => c.prepare_cached(&format!(
                    "SELECT {SUMMARY_COLUMNS} FROM runs r WHERE CAST(?1 AS TEXT) IS NULL
                     ORDER BY r.started_at DESC, r.id"
                ))?,
            };
            let rows = stmt.query_map([run], summary_of_row)?;
            rows.collect::<Result<_, _>>()
        })?)
    }

    /// A run's steps, in order.
    pub fn steps(&self, run: &str) -> Result<Vec<StepRecord>, RecorderError> {
        self.header(run)?;
        let id = run.to_string();
        Ok(self.store.read(move |c| load_steps(c, &id))?)
    }

    /// Up to `limit` of a run's events from sequence number `from` on, in order (a window of a
    /// long run, read by key).
    pub fn events_window(
        &self,
        run: &str,
        from: u64,
        limit: u64,
    ) -> Result<Vec<EventRecord>, RecorderError> {
        self.header(run)?;
        let id = run.to_string();
        let end = from.saturating_add(limit);
        let events = self
            .store
            .read(move |c| load_events_in(c, &id, from, end))?;
        Ok(events.into_iter().map(|e| e.record).collect())
    }

    /// The header of a run.
    pub fn header(&self, run: &str) -> Result<RunHeader, RecorderError> {
        let id = run.to_string();
        self.store
            .read(move |c| load_header(c, &id))?
            .ok_or_else(|| RecorderError::UnknownRun(run.to_string()))
    }

    /// A whole run in the run format, with hashes.
    pub fn export(&self, run: &str) -> Result<RunFile, RecorderError> {
        let header = self.header(run)?;
        let id = run.to_string();
        let (steps, events, envelope_sources) = self.store.read(move |c| {
            let steps = load_steps(c, &id)?;
            let events = load_events(c, &id)?;
            let sources = write::load_envelope_sources(c, &id)?;
            Ok((steps, events, sources))
        })?;
        Ok(RunFile {
            format: format::RUN_FORMAT.to_string(),
            run: header,
            steps,
            events: events.into_iter().map(|e| e.record).collect(),
            envelope_sources,
        })
    }

    /// Events of a run, in order, optionally only of some kinds.
    pub fn events(
        &self,
        run: &str,
        kinds: Option<&[EventKind]>,
    ) -> Result<Vec<EventRecord>, RecorderError> {
        self.header(run)?;
        let id = run.to_string();
        let all = self.store.read(move |c| load_events(c, &id))?;
        Ok(all
            .into_iter()
            .map(|e| e.record)
            .filter(|e| {
                kinds.is_none_or(|ks| EventKind::parse(&e.kind).is_some_and(|k| ks.contains(&k)))
            })
            .collect())
    }

    /// Rebuilds the overview's decision buckets (migration 30) from every run's events, in one
    /// write: `tollgate db recount` runs it for decisions recorded before the buckets were
    /// kept, and the buckets kept as decisions are recorded must equal what it counts. Returns
    /// the decisions counted.
    pub fn recount_buckets(&self) -> Result<u64, RecorderError> {
        Ok(self.store.write(|c| {
            for table in buckets::DECISION_TABLES {
                c.execute(&format!("DELETE FROM {table}"), ())?;
            }
            let runs: Vec<(String, String, String)> = {
                let mut stmt = c.prepare("SELECT id, agent, task FROM runs ORDER BY id")?;
                let rows = stmt.query_map((), |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
                rows.collect::<Result<_, _>>()?
            };
            let mut total = 0;
            for (run, agent, task) in runs {
                let mut counted = buckets::Buckets::default();
                for e in load_events(c, &run)? {
                    if let Some(kind) = EventKind::parse(&e.record.kind) {
                        let tally = buckets::tally_json(kind, &e.record.payload);
                        total += tally.counts.total();
                        counted.add(&e.record.at, &tally);
                    }
                }
                counted.write(c, &agent, &task)?;
            }
            Ok(total)
        })?)
    }

    /// Recomputes a run's chain from what is stored and lists every place it does not hold.
    pub fn verify(&self, run: &str) -> Result<VerifyReport, RecorderError> {
        let header = self.header(run)?;
        let id = run.to_string();
        let (events, steps, stored_count, stored_head) = self.store.read(move |c| {
            let events = load_events(c, &id)?;
            let steps = load_steps(c, &id)?;
            let (count, head): (u64, String) = c.query_row(
                "SELECT event_count, head_hash FROM runs WHERE id = ?1",
                [&id],
                |r| Ok((r.get::<i64>(0)? as u64, r.get(1)?)),
            )?;
            Ok((events, steps, count, head))
        })?;
        Ok(verify_chain(
            &header,
            &events,
            &steps,
            stored_count,
            &stored_head,
        ))
    }
}

/// An event as stored, with what verification needs.
#[derive(Debug, Clone)]
struct StoredEvent {
    record: EventRecord,
    /// The payload hash column.
    payload_hash: String,
    /// Set when the payload lives in an artifact that is missing.
    missing_artifact: bool,
}

fn load_header(c: &Connection, run: &str) -> Result<Option<RunHeader>, StoreError> {
    let row = c
        .prepare_cached(
            "SELECT id, agent, task, scope, clearance, status, started_at, finished_at,
                    parent_run, envelopes, metadata
             FROM runs WHERE id = ?1",
        )?
        .query_row([run], |r| {
            Ok((
                RunHeader {
                    id: r.get(0)?,
                    agent: r.get(1)?,
                    task: r.get(2)?,
                    scope: r.get(3)?,
                    clearance: r.get(4)?,
                    status: r.get(5)?,
                    started_at: r.get(6)?,
                    finished_at: r.get(7)?,
                    parent_run: r.get(8)?,
                    envelopes: Vec::new(),
                    metadata: Value::Null,
                },
                r.get::<String>(9)?,
                r.get::<String>(10)?,
            ))
        })
        .optional()?;
    let Some((mut header, envelopes, metadata)) = row else {
        return Ok(None);
    };
    header.envelopes = serde_json::from_str(&envelopes).map_err(StoreError::corrupt)?;
    header.metadata = serde_json::from_str(&metadata).map_err(StoreError::corrupt)?;
    Ok(Some(header))
}

fn load_steps(c: &Connection, run: &str) -> Result<Vec<StepRecord>, StoreError> {
    let mut stmt =
        c.prepare("SELECT idx, name, agent FROM steps WHERE run_id = ?1 ORDER BY idx")?;
    let rows = stmt.query_map([run], |r| {
        Ok(StepRecord {
            index: r.get(0)?,
            name: r.get(1)?,
            agent: r.get(2)?,
        })
    })?;
    rows.collect::<Result<_, _>>()
}

fn load_events(c: &Connection, run: &str) -> Result<Vec<StoredEvent>, StoreError> {
    load_events_in(c, run, 0, u64::MAX)
}

/// A run's events with `from <= seq < to`, in order.
fn load_events_in(
    c: &Connection,
    run: &str,
    from: u64,
    to: u64,
) -> Result<Vec<StoredEvent>, StoreError> {
    let as_sql = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
    let mut stmt = c.prepare_cached(
        "SELECT e.seq, e.step_idx, e.kind, e.at, e.payload, e.payload_hash, e.prev_hash, e.hash,
                a.body, e.payload_z
         FROM events e
         LEFT JOIN artifacts a
           ON e.payload IS NULL AND e.payload_z IS NULL AND a.hash = e.payload_hash
         WHERE e.run_id = ?1 AND e.seq >= ?2 AND e.seq < ?3 ORDER BY e.seq",
    )?;
    let rows = stmt.query_map(params![run, as_sql(from), as_sql(to)], |r| {
        Ok((
            r.get::<i64>(0)? as u64,
            r.get::<u32>(1)?,
            r.get::<String>(2)?,
            r.get::<String>(3)?,
            match (r.get::<Option<String>>(4)?, r.get::<Option<Vec<u8>>>(9)?) {
                (Some(text), _) => Stored::Text(text),
                (None, Some(z)) => Stored::Compressed(z),
                (None, None) => Stored::Elsewhere,
            },
            r.get::<String>(5)?,
            r.get::<String>(6)?,
            r.get::<String>(7)?,
            r.get::<Option<Vec<u8>>>(8)?,
        ))
    })?;
    let mut out = Vec::new();
    for row in rows {
        let (seq, step, kind, at, stored, payload_hash, prev, hash, artifact) = row?;
        let (text, missing_artifact) = match (stored, artifact) {
            (Stored::Text(text), _) => (text, false),
            // A payload that does not decompress reads as empty text: verification reports
            // it as edited (its hash no longer matches).
            (Stored::Compressed(z), _) => (decompress_payload(&z).unwrap_or_default(), false),
            (Stored::Elsewhere, Some(body)) => (String::from_utf8_lossy(&body).into_owned(), false),
            (Stored::Elsewhere, None) => ("null".to_string(), true),
        };
        let payload = serde_json::from_str(&text).unwrap_or(Value::String(text));
        out.push(StoredEvent {
            record: EventRecord {
                seq,
                step,
                kind,
                at,
                payload,
                prev: Some(prev),
                hash: Some(hash),
            },
            payload_hash,
            missing_artifact,
        });
    }
    Ok(out)
}

/// Where an event's payload is: its text in the row, compressed in the row, or an artifact.
enum Stored {
    Text(String),
    Compressed(Vec<u8>),
    Elsewhere,
}

/// A payload's canonical text compressed for its row (LZ4 block, size prepended).
fn compress_payload(text: &str) -> Vec<u8> {
    lz4_flex::compress_prepend_size(text.as_bytes())
}

/// The canonical text of a compressed payload; `None` when the bytes are not one.
fn decompress_payload(z: &[u8]) -> Option<String> {
    let bytes = lz4_flex::decompress_size_prepended(z).ok()?;
    String::from_utf8(bytes).ok()
}

fn verify_chain(
    header: &RunHeader,
    events: &[StoredEvent],
    steps: &[StepRecord],
    stored_count: u64,
    stored_head: &str,
) -> VerifyReport {
    let mut problems = Vec::new();
    let mut problem = |seq: Option<u64>, kind: &str, detail: String| {
        problems.push(ChainProblem {
            seq,
            kind: kind.to_string(),
            detail,
        })
    };
    let genesis = genesis_hash(header);
    let mut prev = genesis.clone();
    let mut expected_seq = 0u64;
    for e in events {
        let r = &e.record;
        if r.seq != expected_seq {
            problem(
                Some(r.seq),
                "gap",
                format!(
                    "expected event {expected_seq} next, found {}: events {expected_seq}..{} are missing",
                    r.seq,
                    r.seq.saturating_sub(1)
                ),
            );
            expected_seq = r.seq;
        }
        if e.missing_artifact {
            problem(
                Some(r.seq),
                "missing_artifact",
                format!("the payload artifact `{}` is missing", e.payload_hash),
            );
        } else {
            let actual = hash_json(&r.payload);
            if actual != e.payload_hash {
                problem(
                    Some(r.seq),
                    "edited",
                    format!(
                        "event {} ({}) was edited: its payload hashes to {} but was recorded as {}",
                        r.seq,
                        r.kind,
                        short(&actual),
                        short(&e.payload_hash)
                    ),
                );
            }
        }
        let recorded_prev = r.prev.as_deref().unwrap_or_default();
        if recorded_prev != prev {
            let what = if r.seq == 0 {
                "the run header was edited (its genesis hash differs)".to_string()
            } else {
                format!("it does not follow event {} as recorded", r.seq - 1)
            };
            problem(
                Some(r.seq),
                if r.seq == 0 {
                    "header_edited"
                } else {
                    "chain_broken"
                },
                format!("event {}: {what}", r.seq),
            );
        }
        let recomputed = event_hash(
            &header.id,
            r.seq,
            r.step,
            &r.kind,
            &r.at,
            &e.payload_hash,
            recorded_prev,
        );
        if Some(recomputed.as_str()) != r.hash.as_deref() {
            problem(
                Some(r.seq),
                "edited",
                format!(
                    "event {} ({}) was edited: its fields hash to {} but it was recorded as {}",
                    r.seq,
                    r.kind,
                    short(&recomputed),
                    short(r.hash.as_deref().unwrap_or_default())
                ),
            );
        }
        if !steps.iter().any(|s| s.index == r.step) {
            problem(
                Some(r.seq),
                "unknown_step",
                format!(
                    "event {} names step {}, which is not recorded",
                    r.seq, r.step
                ),
            );
        }
        prev = r.hash.clone().unwrap_or_default();
        expected_seq += 1;
    }
    let count = events.len() as u64;
    if count != stored_count || (count > 0 && prev != stored_head) {
        problem(
            None,
            "truncated",
            format!(
                "the run recorded {stored_count} events ending at {}, the store holds {count} ending at {}",
                short(stored_head),
                short(&prev)
            ),
        );
    }
    VerifyReport {
        run: header.id.clone(),
        events: count,
        head: if count == 0 { genesis } else { prev },
        problems,
    }
}

/// A run's events for the provenance graph (payloads decoded).
pub(crate) fn events_for_provenance(
    c: &Connection,
    run: &str,
) -> Result<Vec<EventRecord>, StoreError> {
    Ok(load_events(c, run)?.into_iter().map(|e| e.record).collect())
}

/// The first 12 hex digits of a hash, for messages.
pub fn short(hash: &str) -> &str {
    hash.get(..12).unwrap_or(hash)
}

#[cfg(test)]
mod tests;
