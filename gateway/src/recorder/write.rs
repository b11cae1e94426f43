//! Writing runs: opening one, adding steps, appending events to its chain, finishing it, and
//! importing a whole run file in one transaction (all or nothing).

use std::collections::BTreeMap;

use crate::store::{Connection, ConstraintKind, OptionalExtension, params};
use serde::Serialize;
use serde_json::Value;
use tollgate_rules::canonical::{canonical_json, to_canonical_json};
use tollgate_rules::envelope::{Level, PolicyEnvelope};

use super::buckets::{Buckets, Tally, tally_json};
use super::counts::{self, DecisionCounts};
use super::events::EventPayload;
use super::format::{EnvelopeSource, EventKind, RUN_FORMAT, RunFile, RunHeader, StepRecord};
use super::{Recorder, RecorderError, event_hash, genesis_hash, load_header, short};
use crate::clock::now_rfc3339;
use crate::store::StoreError;

mod rows;
use rows::EventRow;

/// Statuses a run may have.
pub const RUN_STATUSES: [&str; 4] = ["running", "succeeded", "failed", "cancelled"];

/// What an import stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ImportSummary {
    /// Run id.
    pub run: String,
    /// Steps stored.
    pub steps: u32,
    /// Events stored.
    pub events: u64,
    /// The last hash of the chain.
    pub head: String,
    /// Envelope versions stored (new ones only).
    pub envelope_versions: Vec<String>,
    /// The run was already recorded with the same chain: nothing changed.
    pub already_recorded: bool,
}

/// An appended event's place in its chain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct Appended {
    /// Its sequence number.
    pub seq: u64,
    /// Its hash.
    pub hash: String,
}

/// An event's payload: a JSON object, or the canonical text of one that a hot path wrote
/// itself (a tool call's decision with its proof, without building a `Value`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Payload {
    /// A JSON object.
    Json(Value),
    /// The canonical JSON text of an object.
    Canonical(String),
}

impl From<Value> for Payload {
    fn from(value: Value) -> Self {
        Payload::Json(value)
    }
}

/// One event to append.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct NewEvent {
    step: u32,
    kind: EventKind,
    /// RFC 3339.
    at: String,
    payload: Payload,
    /// The decisions it records.
    decided: Tally,
}

impl NewEvent {
    /// With how long the gateway took over what it records (the overview's latency; not part
    /// of the record).
    pub(crate) fn timed(
        mut self,
        what: super::buckets::Timed,
        took: std::time::Duration,
    ) -> NewEvent {
        self.decided.time(what, took);
        self
    }

    /// Records the event at `step` (known only inside the write, `running_step_in`).
    pub(crate) fn set_step(&mut self, step: u32) {
        self.step = step;
    }

    /// An event whose payload is a JSON value (an agent's or an imported one).
    fn json(step: u32, kind: EventKind, at: String, payload: Value) -> NewEvent {
        NewEvent {
            step,
            kind,
            at,
            decided: tally_json(kind, &payload),
            payload: Payload::Json(payload),
        }
    }
}

/// A typed event to append (see [`super::events`]).
pub(crate) fn new_event<P: EventPayload>(
    step: u32,
    at: String,
    payload: &P,
) -> Result<NewEvent, StoreError> {
    let text = to_canonical_json(payload).map_err(|e| {
        StoreError::Invalid(format!(
            "a `{}` payload cannot be written: {e}",
            P::KIND.as_str()
        ))
    })?;
    let mut decided = Tally::default();
    payload.tally(&mut decided);
    Ok(NewEvent {
        step,
        kind: P::KIND,
        at,
        payload: Payload::Canonical(text),
        decided,
    })
}

impl Payload {
    /// Its canonical text, if it is an object.
    fn into_text(self) -> Option<String> {
        match self {
            Payload::Json(v) if v.is_object() => Some(canonical_json(&v)),
            Payload::Json(_) => None,
            Payload::Canonical(text) => Some(text),
        }
    }
}

impl Recorder {
    /// Opens a run (status `running` unless the header says otherwise).
    pub fn open_run(&self, header: &RunHeader) -> Result<(), RecorderError> {
        check_header(header).map_err(RecorderError::Invalid)?;
        let header = header.clone();
        self.store.write(move |c| insert_run(c, &header))?;
        Ok(())
    }

    /// Opens a run governed by stored envelope versions (`(id, content hash)`), recording the
    /// links in the same write so replay and simulation can rebuild its policy. Versions that
    /// govern it later (an envelope updated while it runs) are linked by the write that records
    /// the first decision made under them ([`link_envelope_versions`]).
    pub fn open_run_governed(
        &self,
        header: &RunHeader,
        envelopes: Vec<(String, String)>,
    ) -> Result<(), RecorderError> {
        check_header(header).map_err(RecorderError::Invalid)?;
        let header = header.clone();
        self.store
            .write(move |c| {
                insert_run(c, &header)?;
                link_envelope_versions(c, &header.id, &envelopes)
            })
            .map_err(into_recorder)
    }

    /// Adds the next step of a run; returns its index.
    pub fn add_step(&self, run: &str, name: &str, agent: &str) -> Result<u32, RecorderError> {
        let (run, name, agent) = (run.to_string(), name.to_string(), agent.to_string());
        self.store
            .write(move |c| {
                require_run(c, &run)?;
                add_step_in(c, &run, &name, &agent)
            })
            .map_err(into_recorder)
    }

    /// Appends one event to a run's chain.
    pub fn append(
        &self,
        run: &str,
        step: u32,
        kind: EventKind,
        at: &str,
        payload: Value,
    ) -> Result<Appended, RecorderError> {
        let mut done = self.append_many(run, vec![(step, kind, at.to_string(), payload)])?;
        done.pop()
            .ok_or_else(|| RecorderError::Invalid("nothing appended".into()))
    }

    /// Appends one typed event to a run's chain.
    pub fn append_event<P: EventPayload>(
        &self,
        run: &str,
        step: u32,
        at: &str,
        payload: &P,
    ) -> Result<Appended, RecorderError> {
        let event = new_event(step, at.to_string(), payload).map_err(into_recorder)?;
        self.append_new(run, event)
    }

    /// Appends one event made with [`new_event`] (and maybe [`NewEvent::timed`]).
    pub(crate) fn append_new(&self, run: &str, event: NewEvent) -> Result<Appended, RecorderError> {
        let run = run.to_string();
        let mut done = self
            .store
            .write(move |c| append_in(c, &run, vec![event]))
            .map_err(into_recorder)?;
        done.pop()
            .ok_or_else(|| RecorderError::Invalid("nothing appended".into()))
    }

    /// Appends several events to a run's chain in one write.
    pub fn append_many(
        &self,
        run: &str,
        events: Vec<(u32, EventKind, String, Value)>,
    ) -> Result<Vec<Appended>, RecorderError> {
        for (_, kind, _, payload) in &events {
            if !payload.is_object() {
                return Err(RecorderError::Invalid(format!(
                    "a `{}` event's payload must be a JSON object",
                    kind.as_str()
                )));
            }
        }
        let run = run.to_string();
        let events = events
            .into_iter()
            .map(|(step, kind, at, payload)| NewEvent::json(step, kind, at, payload))
            .collect();
        self.store
            .write(move |c| append_in(c, &run, events))
            .map_err(into_recorder)
    }

    /// Appends one event at the run's current step in a single write, for async callers (the
    /// MCP front's tool results and notes): the run is checked to be running, and the step
    /// found (a first step `main` by `agent` added to a run with none), inside the write that
    /// appends, so nothing is read before it and no thread is held while it commits.
    pub async fn append_at_current_step(
        &self,
        run: &str,
        agent: &str,
        kind: EventKind,
        at: String,
        payload: Value,
    ) -> Result<Appended, RecorderError> {
        if !payload.is_object() {
            return Err(RecorderError::Invalid(format!(
                "a `{}` event's payload must be a JSON object",
                kind.as_str()
            )));
        }
        let (run, agent) = (run.to_string(), agent.to_string());
        let mut event = NewEvent::json(0, kind, at, payload);
        self.store
            .transact_async(move |c| {
                event.set_step(running_step_in(c, &run, &agent, None)?.step);
                append_in(c, &run, vec![event])?
                    .pop()
                    .ok_or_else(|| StoreError::Invalid("nothing appended".into()))
            })
            .await
            .map_err(into_recorder)
    }

    /// Marks a run finished.
    pub fn finish_run(
        &self,
        run: &str,
        status: &str,
        finished_at: &str,
    ) -> Result<(), RecorderError> {
        if !RUN_STATUSES.contains(&status) || status == "running" {
            return Err(RecorderError::Invalid(format!(
                "`{status}` is not a final run status\n  help: use succeeded, failed or cancelled"
            )));
        }
        let (run, status, at) = (run.to_string(), status.to_string(), finished_at.to_string());
        self.store
            .write(move |c| {
                require_run(c, &run)?;
                c.execute(
                    "UPDATE runs SET status = ?2, finished_at = ?3 WHERE id = ?1",
                    params![run, status, at],
                )?;
                Ok(())
            })
            .map_err(into_recorder)
    }

    /// Imports a whole run in one transaction. Hashes given in the file are checked; missing
    /// ones are computed. Importing the same run again is a no-op; a different run under an
    /// existing id is refused.
    pub fn import(&self, file: &RunFile) -> Result<ImportSummary, RecorderError> {
        let plan = plan_import(file).map_err(RecorderError::Invalid)?;
        self.store
            .write(move |c| {
                if let Some(existing) = load_header(c, &plan.header.id)? {
                    let head: String = c.query_row(
                        "SELECT head_hash FROM runs WHERE id = ?1",
                        [&plan.header.id],
                        |r| r.get(0),
                    )?;
                    if genesis_hash(&existing) == genesis_hash(&plan.header) && head == plan.head {
                        return Ok(ImportSummary {
                            run: plan.header.id.clone(),
                            steps: plan.steps.len() as u32,
                            events: plan.events.len() as u64,
                            head,
                            envelope_versions: Vec::new(),
                            already_recorded: true,
                        });
                    }
                    return Err(StoreError::Invalid(format!(
                        "a different run `{}` is already recorded\n  help: runs are append-only; import it under another id",
                        plan.header.id
                    )));
                }
                insert_run(c, &plan.header)?;
                let envelope_versions = store_envelope_sources(c, &plan.header.id, &plan.envelopes)?;
                for s in &plan.steps {
                    c.execute(
                        "INSERT INTO steps (run_id, idx, name, agent) VALUES (?1, ?2, ?3, ?4)",
                        params![plan.header.id, s.index, s.name, s.agent],
                    )?;
                }
                let mut prev = genesis_hash(&plan.header);
                let mut counts = DecisionCounts::default();
                let mut buckets = Buckets::default();
                let mut rows = Vec::with_capacity(rows::ROWS_PER_INSERT);
                for e in &plan.events {
                    if let Some(kind) = EventKind::parse(&e.kind) {
                        let tally = tally_json(kind, &e.payload);
                        counts += tally.counts;
                        buckets.add(&e.at, &tally);
                    }
                    let row = EventRow::new(
                        c,
                        &plan.header.id,
                        e.seq,
                        e.step,
                        &e.kind,
                        &e.at,
                        &canonical_json(&e.payload),
                        &prev,
                    )?;
                    prev.clone_from(&row.hash);
                    rows.push(row);
                    // A long run is inserted as it is read, not held whole a second time.
                    if rows.len() == rows::ROWS_PER_INSERT {
                        rows::insert(c, &plan.header.id, &rows)?;
                        rows.clear();
                    }
                }
                rows::insert(c, &plan.header.id, &rows)?;
                buckets.write(c, &plan.header.agent, &plan.header.task)?;
                let [a, r, g, l, d] = counts.values();
                c.execute(
                    counts::UPDATE_HEAD,
                    params![plan.header.id, plan.events.len() as i64, prev, a, r, g, l, d],
                )?;
                Ok(ImportSummary {
                    run: plan.header.id.clone(),
                    steps: plan.steps.len() as u32,
                    events: plan.events.len() as u64,
                    head: prev,
                    envelope_versions,
                    already_recorded: false,
                })
            })
            .map_err(into_recorder)
    }

    /// The YAML of the envelope versions a run was recorded with.
    pub fn envelope_sources(&self, run: &str) -> Result<Vec<EnvelopeSource>, RecorderError> {
        self.header(run)?;
        let run = run.to_string();
        Ok(self.store.read(move |c| load_envelope_sources(c, &run))?)
    }
}

pub(crate) fn into_recorder(e: StoreError) -> RecorderError {
    match e {
        StoreError::Invalid(m) => RecorderError::Invalid(m),
        StoreError::NotFound(run) => RecorderError::UnknownRun(run),
        other => RecorderError::Store(other),
    }
}

/// Appends events to a run's chain inside the caller's write (so a projection row and the
/// events that record it commit together). Payloads must be JSON objects.
pub(crate) fn append_in(
    c: &Connection,
    run: &str,
    events: Vec<NewEvent>,
) -> Result<Vec<Appended>, StoreError> {
    // The chain's head, and whether the first event's step exists, in one statement (a round
    // trip on PostgreSQL).
    let first_step = events.first().map_or(0, |e| e.step);
    let (mut seq, mut prev, first_found, agent, task): (u64, String, bool, String, String) = c
        .prepare_cached(
            "SELECT event_count, head_hash,
                    EXISTS (SELECT 1 FROM steps WHERE run_id = ?1 AND idx = ?2), agent, task
             FROM runs WHERE id = ?1",
        )?
        .query_row(params![run, first_step], |r| {
            Ok((
                r.get::<i64>(0)? as u64,
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
            ))
        })
        .optional()?
        .ok_or_else(|| StoreError::NotFound(run.to_string()))?;
    if seq == 0 {
        let header = load_header(c, run)?.ok_or_else(|| StoreError::NotFound(run.to_string()))?;
        prev = genesis_hash(&header);
    }
    let mut out = Vec::with_capacity(events.len());
    let mut rows = Vec::with_capacity(events.len());
    let mut counts = DecisionCounts::default();
    let mut buckets = Buckets::default();
    // The steps found so far: the events of one append are nearly always of one step.
    let mut found: Vec<u32> = Vec::new();
    if first_found {
        found.push(first_step);
    }
    for NewEvent {
        step,
        kind,
        at,
        payload,
        decided,
    } in events
    {
        let Some(text) = payload.into_text() else {
            return Err(StoreError::Invalid(format!(
                "a `{}` event's payload must be a JSON object",
                kind.as_str()
            )));
        };
        if !found.contains(&step) {
            let steps: u32 = c
                .prepare_cached("SELECT COUNT(*) FROM steps WHERE run_id = ?1 AND idx = ?2")?
                .query_row(params![run, step], |r| r.get(0))?;
            if steps == 0 {
                return Err(StoreError::Invalid(format!(
                    "run `{run}` has no step {step}\n  help: add the step before its events"
                )));
            }
            found.push(step);
        }
        let row = EventRow::new(c, run, seq, step, kind.as_str(), &at, &text, &prev)?;
        out.push(Appended {
            seq,
            hash: row.hash.clone(),
        });
        prev.clone_from(&row.hash);
        rows.push(row);
        seq += 1;
        counts += decided.counts;
        buckets.add(&at, &decided);
    }
    rows::insert(c, run, &rows)?;
    buckets.write(c, &agent, &task)?;
    let [a, r, g, l, d] = counts.values();
    c.prepare_cached(counts::UPDATE_HEAD)?
        .execute(params![run, seq as i64, prev, a, r, g, l, d])?;
    Ok(out)
}

/// Adds the next step of a run inside the caller's write; returns its index.
fn add_step_in(c: &Connection, run: &str, name: &str, agent: &str) -> Result<u32, StoreError> {
    // Steps are numbered from 0 without gaps: the next is one past the last (found by the
    // steps' key, where counting them reads every one).
    let next: u32 = c
        .prepare_cached("SELECT COALESCE(MAX(idx) + 1, 0) FROM steps WHERE run_id = ?1")?
        .query_row([run], |r| r.get(0))?;
    c.prepare_cached("INSERT INTO steps (run_id, idx, name, agent) VALUES (?1, ?2, ?3, ?4)")?
        .execute(params![run, next, name, agent])?;
    Ok(next)
}

/// Why a finished run takes nothing more (a write refused inside the store, or a request
/// refused before it decides).
pub(crate) fn finished_run(run: &str, status: &str) -> String {
    format!("run `{run}` is {status}; a finished run takes no more steps, calls or events")
}

/// Inside a write: checks that `run` is still running (`Invalid` when it is finished).
pub(crate) fn running_in(c: &Connection, run: &str) -> Result<(), StoreError> {
    let status: String = c
        .prepare_cached("SELECT status FROM runs WHERE id = ?1")?
        .query_row([run], |r| r.get(0))
        .optional()?
        .ok_or_else(|| StoreError::NotFound(run.to_string()))?;
    if status != "running" {
        return Err(StoreError::Invalid(finished_run(run, &status)));
    }
    Ok(())
}

/// What a write learns of a running run, in one statement: the step to record at, and the
/// store's counts of policy and credential changes as of this write (`store::Changes`, exact:
/// the write holds the store's write lock), so a decision made under an older policy, or for
/// a token verified before a revocation, is caught before it is recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Running {
    /// The step the events are recorded at.
    pub(crate) step: u32,
    /// `changes/policy` as this write sees it.
    pub(crate) policy_changes: i64,
    /// `changes/credentials` as this write sees it.
    pub(crate) credential_changes: i64,
}

/// Inside a write: checks that `run` is still running, and gives the step a call is recorded
/// at — `step` when the caller named one (`append_in` checks it exists), else the run's last,
/// adding a first step `main` by `agent` to a run that has none.
pub(crate) fn running_step_in(
    c: &Connection,
    run: &str,
    agent: &str,
    step: Option<u32>,
) -> Result<Running, StoreError> {
    // The run's state, its last step (by the steps' key, not by counting them) and the count
    // of policy changes in one statement: a round trip on PostgreSQL.
    let (status, last, policy_changes, credential_changes): (String, Option<u32>, i64, i64) = c
        .prepare_cached(
            "SELECT status, (SELECT MAX(idx) FROM steps WHERE run_id = ?1),
                    COALESCE((SELECT value FROM tollgate_counters WHERE name = ?2), 0),
                    COALESCE((SELECT value FROM tollgate_counters WHERE name = ?3), 0)
             FROM runs WHERE id = ?1",
        )?
        .query_row(
            params![
                run,
                crate::store::Changes::Policy.counter(),
                crate::store::Changes::Credentials.counter()
            ],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
        )
        .optional()?
        .ok_or_else(|| StoreError::NotFound(run.to_string()))?;
    if status != "running" {
        return Err(StoreError::Invalid(finished_run(run, &status)));
    }
    let step = match (step, last) {
        (Some(step), _) => step,
        (None, None) => add_step_in(c, run, "main", agent)?,
        (None, Some(last)) => last,
    };
    Ok(Running {
        step,
        policy_changes,
        credential_changes,
    })
}

fn require_run(c: &Connection, run: &str) -> Result<(), StoreError> {
    let found: Option<String> = c
        .query_row("SELECT id FROM runs WHERE id = ?1", [run], |r| r.get(0))
        .optional()?;
    found
        .map(|_| ())
        .ok_or_else(|| StoreError::NotFound(run.to_string()))
}

fn insert_run(c: &Connection, h: &RunHeader) -> Result<(), StoreError> {
    let envelopes = serde_json::to_string(&h.envelopes).map_err(StoreError::corrupt)?;
    // Who the run is for, when its metadata says (as text): memory search narrows by it.
    let user = h.metadata.get("user").and_then(Value::as_str);
    c.execute(
        "INSERT INTO runs (id, agent, task, scope, clearance, status, started_at, finished_at,
                           parent_run, envelopes, metadata, recorded_at, user_id)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
        params![
            h.id,
            h.agent,
            h.task,
            h.scope,
            h.clearance,
            h.status,
            h.started_at,
            h.finished_at,
            h.parent_run,
            envelopes,
            canonical_json(&h.metadata),
            now_rfc3339(),
            user
        ],
    )
    .map_err(|e| match e.violation() {
        Some(v) if v.kind == ConstraintKind::Unique => {
            StoreError::Duplicate(format!("run `{}` is already recorded", h.id))
        }
        _ => e,
    })?;
    Ok(())
}

/// Stores a run's envelopes as versions; returns the new `ID@VERSION`s.
fn store_envelope_sources(
    c: &Connection,
    run: &str,
    envelopes: &[(PolicyEnvelope, String)],
) -> Result<Vec<String>, StoreError> {
    let mut added = Vec::new();
    for (envelope, text) in envelopes {
        let stored = crate::policy::store_version(c, envelope, text, false)?;
        if stored.new {
            added.push(stored.version.label());
        }
        link_envelope_versions(
            c,
            run,
            &[(envelope.id.clone(), stored.version.content_hash.clone())],
        )?;
    }
    Ok(added)
}

/// Links stored envelope versions (`(id, content hash)`) to a run inside the caller's write;
/// a link already there is left as it is. A run links every version any of its decisions
/// used, so one envelope may be linked in several versions.
pub(crate) fn link_envelope_versions(
    c: &Connection,
    run: &str,
    versions: &[(String, String)],
) -> Result<(), StoreError> {
    for (id, hash) in versions {
        c.prepare_cached(
            "INSERT INTO run_envelopes (run_id, envelope_id, content_hash) VALUES (?1, ?2, ?3)
             ON CONFLICT DO NOTHING",
        )?
        .execute(params![run, id, hash])?;
    }
    Ok(())
}

/// The YAML of every envelope version linked to a run, by id then version.
pub(super) fn load_envelope_sources(
    c: &Connection,
    run: &str,
) -> Result<Vec<EnvelopeSource>, StoreError> {
    let mut stmt = c.prepare(
        "SELECT v.id, v.version, a.body FROM run_envelopes r
         JOIN envelope_versions v ON v.id = r.envelope_id AND v.content_hash = r.content_hash
         JOIN artifacts a ON a.hash = v.artifact
         WHERE r.run_id = ?1
         ORDER BY v.id, v.version",
    )?;
    let rows = stmt.query_map([run], |r| {
        Ok(EnvelopeSource {
            id: r.get(0)?,
            version: r.get(1)?,
            yaml: String::from_utf8_lossy(&r.get::<Vec<u8>>(2)?).into_owned(),
        })
    })?;
    rows.collect::<Result<_, _>>()
}

/// A checked run file, ready to insert.
struct ImportPlan {
    header: RunHeader,
    steps: Vec<StepRecord>,
    events: Vec<PlannedEvent>,
    envelopes: Vec<(PolicyEnvelope, String)>,
    head: String,
}

struct PlannedEvent {
    seq: u64,
    step: u32,
    kind: String,
    at: String,
    payload: Value,
}

/// Checks a run file completely before anything is written.
fn plan_import(file: &RunFile) -> Result<ImportPlan, String> {
    if file.format != RUN_FORMAT {
        return Err(format!(
            "run file format is `{}`, expected `{RUN_FORMAT}`",
            file.format
        ));
    }
    check_header(&file.run)?;
    for (i, s) in file.steps.iter().enumerate() {
        if s.index as usize != i {
            return Err(format!(
                "steps[{i}] has index {}, expected {i}\n  help: steps are numbered 0, 1, 2... in order",
                s.index
            ));
        }
    }
    let envelopes = plan_envelope_sources(&file.envelope_sources)?;
    let mut prev = genesis_hash(&file.run);
    let mut events = Vec::with_capacity(file.events.len());
    for (i, e) in file.events.iter().enumerate() {
        let at = format!("events[{i}] (seq {})", e.seq);
        if e.seq != i as u64 {
            return Err(format!(
                "{at}: expected seq {i}\n  help: events are numbered 0, 1, 2... in order"
            ));
        }
        if e.step as usize >= file.steps.len() {
            return Err(format!(
                "{at}: step {} is not among the run's {} steps",
                e.step,
                file.steps.len()
            ));
        }
        if EventKind::parse(&e.kind).is_none() {
            let known: Vec<&str> = EventKind::ALL.iter().map(|k| k.as_str()).collect();
            return Err(format!(
                "{at}: unknown event kind `{}`\n  help: use one of {}",
                e.kind,
                known.join(", ")
            ));
        }
        if !e.payload.is_object() {
            return Err(format!("{at}: the payload must be a JSON object"));
        }
        let payload_hash = super::hash_json(&e.payload);
        if let Some(given) = &e.prev
            && *given != prev
        {
            return Err(format!(
                "{at}: `prev` is {} but the chain gives {}: the file was edited or events are missing",
                short(given),
                short(&prev)
            ));
        }
        let hash = event_hash(
            &file.run.id,
            e.seq,
            e.step,
            &e.kind,
            &e.at,
            &payload_hash,
            &prev,
        );
        if let Some(given) = &e.hash
            && *given != hash
        {
            return Err(format!(
                "{at}: `hash` is {} but the event hashes to {}: the event was edited",
                short(given),
                short(&hash)
            ));
        }
        events.push(PlannedEvent {
            seq: e.seq,
            step: e.step,
            kind: e.kind.clone(),
            at: e.at.clone(),
            payload: e.payload.clone(),
        });
        prev = hash;
    }
    Ok(ImportPlan {
        header: file.run.clone(),
        steps: file.steps.clone(),
        events,
        envelopes,
        head: prev,
    })
}

/// Checks a run file's envelope sources: each `ID@VERSION` once, each holding that envelope
/// at that version, and each loading with the run's other envelopes. A run that spanned an
/// envelope update holds several versions of one id, which cannot load as one set; they load
/// in layers (layer `k`: the `k`-th version of every id, or its last), so every version is
/// checked against the parents it extends.
fn plan_envelope_sources(
    sources: &[EnvelopeSource],
) -> Result<Vec<(PolicyEnvelope, String)>, String> {
    let mut by_id: BTreeMap<&str, Vec<&EnvelopeSource>> = BTreeMap::new();
    for source in sources {
        by_id.entry(&source.id).or_default().push(source);
    }
    for versions in by_id.values_mut() {
        versions.sort_by_key(|s| s.version);
        if let Some(pair) = versions.windows(2).find(|w| w[0].version == w[1].version) {
            return Err(format!(
                "envelope_sources: `{}@{}` is given twice\n  help: a run file holds each envelope version once",
                pair[0].id, pair[0].version
            ));
        }
    }
    let layers = by_id.values().map(Vec::len).max().unwrap_or(0);
    let mut envelopes = Vec::with_capacity(sources.len());
    for k in 0..layers {
        let layer: Vec<(&EnvelopeSource, bool)> = by_id
            .values()
            .filter_map(|v| {
                let last = v.len().checked_sub(1)?;
                Some((v[k.min(last)], k <= last))
            })
            .collect();
        let named: Vec<(String, &str)> = layer
            .iter()
            .map(|(s, _)| {
                (
                    format!("envelope_sources/{}@{}", s.id, s.version),
                    s.yaml.as_str(),
                )
            })
            .collect();
        let set = tollgate_rules::envelope::load_envelopes(&named)
            .map_err(|e| format!("the run's envelope sources do not load:\n{}", e.render()))?;
        for (source, _) in layer.into_iter().filter(|(_, new)| *new) {
            let label = format!("{}@{}", source.id, source.version);
            let envelope = set.get(&source.id).ok_or_else(|| {
                format!(
                    "envelope_sources: `{label}` does not hold an envelope with id `{}`",
                    source.id
                )
            })?;
            if envelope.label() != label {
                return Err(format!(
                    "envelope_sources: `{label}` holds `{}`\n  help: a source's `version` is the version its YAML declares",
                    envelope.label()
                ));
            }
            envelopes.push((envelope.clone(), source.yaml.clone()));
        }
    }
    Ok(envelopes)
}

/// Checks what every run must carry.
fn check_header(h: &RunHeader) -> Result<(), String> {
    let id_ok = !h.id.is_empty()
        && h.id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':'));
    if !id_ok {
        return Err(format!(
            "run id `{}` is not valid\n  help: use letters, digits, `-`, `_`, `.` and `:`",
            h.id
        ));
    }
    for (field, value) in [
        ("agent", &h.agent),
        ("task", &h.task),
        ("scope", &h.scope),
        ("started_at", &h.started_at),
    ] {
        if value.trim().is_empty() {
            return Err(format!("run `{}` has no `{field}`", h.id));
        }
    }
    if serde_json::from_value::<Level>(Value::String(h.clearance.clone())).is_err() {
        return Err(format!(
            "run `{}`: clearance `{}` is not a sensitivity level\n  help: use public, internal, confidential or secret",
            h.id, h.clearance
        ));
    }
    if !RUN_STATUSES.contains(&h.status.as_str()) {
        return Err(format!(
            "run `{}`: status `{}` is not known\n  help: use one of {}",
            h.id,
            h.status,
            RUN_STATUSES.join(", ")
        ));
    }
    if !h.metadata.is_object() {
        return Err(format!("run `{}`: `metadata` must be a JSON object", h.id));
    }
    Ok(())
}
