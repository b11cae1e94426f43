//! [`JobQueue`]: the job tables' only writer. Each operation is one transaction of the store's
//! writer, so the checks it makes (is this job still leased by me?) and the change it makes
//! cannot be interleaved with another worker's.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::store::{Connection, OptionalExtension, Row, next_number, params, params_from_iter};
use serde_json::Value;

use super::{
    AfterFailure, AttemptOutcome, Backoff, EnqueueOptions, JobAttempt, JobError, JobFailure, JobId,
    JobProgress, JobRecord, JobState, LeasedJob,
};
use crate::clock::{Clock, SystemClock, millis};
use crate::store::{Store, StoreError};

/// The job queue over a store. Cheap to clone.
#[derive(Debug, Clone)]
pub struct JobQueue {
    store: Store,
    clock: Arc<dyn Clock>,
    backoff: Backoff,
}

/// States in which a job may still run.
const UNFINISHED: &str = "('queued', 'leased', 'failed')";

const JOB_COLUMNS: &str = "id, kind, payload, state, attempts, max_attempts, run_after, \
    dedupe_key, leased_by, leased_until, progress_done, progress_total, progress_message, \
    progress_at, result, last_error, created_at, updated_at, finished_at";

impl JobQueue {
    /// A queue on the system clock with the default backoff.
    pub fn new(store: Store) -> JobQueue {
        JobQueue::with_clock(store, Arc::new(SystemClock))
    }

    /// A queue on `clock` (a [`ManualClock`](super::ManualClock) in tests).
    pub fn with_clock(store: Store, clock: Arc<dyn Clock>) -> JobQueue {
        JobQueue {
            store,
            clock,
            backoff: Backoff::default(),
        }
    }

    /// The same queue with another retry schedule.
    pub fn with_backoff(mut self, backoff: Backoff) -> JobQueue {
        self.backoff = backoff;
        self
    }

    /// The store underneath.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The clock it reads.
    pub fn clock(&self) -> &dyn Clock {
        &*self.clock
    }

    /// Adds a job, or returns the unfinished job of the same kind and dedupe key.
    pub fn enqueue(
        &self,
        kind: &str,
        payload: Value,
        options: EnqueueOptions,
    ) -> Result<JobId, JobError> {
        if kind.trim().is_empty() {
            return Err(JobError::Invalid("a job needs a kind".into()));
        }
        if options.max_attempts == 0 {
            return Err(JobError::Invalid(
                "`max_attempts` must be at least 1".into(),
            ));
        }
        let kind = kind.to_string();
        let payload = payload.to_string();
        self.transaction(move |conn, now| {
            if let Some(key) = &options.dedupe_key {
                let existing: Option<i64> = conn
                    .query_row(
                        &format!(
                            "SELECT id FROM jobs WHERE kind = ?1 AND dedupe_key = ?2 \
                             AND state IN {UNFINISHED} ORDER BY id LIMIT 1"
                        ),
                        params![kind, key],
                        |r| r.get(0),
                    )
                    .optional()?;
                if let Some(id) = existing {
                    return Ok(JobId(id));
                }
            }
            let id = next_number(conn, "jobs")?;
            conn.execute(
                "INSERT INTO jobs (id, kind, payload, state, attempts, max_attempts, run_after, \
                 dedupe_key, created_at, updated_at) \
                 VALUES (?1, ?2, ?3, 'queued', 0, ?4, ?5, ?6, ?7, ?7)",
                params![
                    id,
                    kind,
                    payload,
                    options.max_attempts,
                    options.run_after_ms.unwrap_or(now),
                    options.dedupe_key,
                    now
                ],
            )?;
            Ok(JobId(id))
        })
    }

    /// Leases the next ready job of one of `kinds` (any kind when empty) to `worker` for
    /// `lease_for`: the oldest `run_after` first, then the lowest id. First ends every lease
    /// that has run out, recording the attempt as expired.
    pub fn lease(
        &self,
        worker: &str,
        kinds: &[&str],
        lease_for: Duration,
    ) -> Result<Option<LeasedJob>, JobError> {
        let worker = worker.to_string();
        let kinds: Vec<String> = kinds.iter().map(|k| k.to_string()).collect();
        let lease_ms = millis(lease_for).max(1);
        self.transaction(move |conn, now| {
            expire_leases(conn, now)?;
            let kind_filter = if kinds.is_empty() {
                String::new()
            } else {
                let marks: Vec<String> = (0..kinds.len()).map(|i| format!("?{}", i + 2)).collect();
                format!(" AND kind IN ({})", marks.join(", "))
            };
            let sql = format!(
                "SELECT id FROM jobs WHERE state IN ('queued', 'failed') AND run_after <= ?1\
                 {kind_filter} ORDER BY run_after, id LIMIT 1"
            );
            let mut args: Vec<crate::store::Value> = vec![now.into()];
            args.extend(kinds.iter().map(|k| k.clone().into()));
            // The lease is taken only while the job is still waiting: a worker that read the
            // same job meanwhile (another gateway on the same database) finds it leased, its
            // UPDATE changes no row, and it looks again.
            let (id, kind, payload, attempt, max_attempts) = loop {
                let id: Option<i64> = conn
                    .query_row(&sql, params_from_iter(args.iter()), |r| r.get(0))
                    .optional()?;
                let Some(id) = id else {
                    return Ok(None);
                };
                let taken: Option<(String, String, u32, u32)> = conn
                    .query_row(
                        "UPDATE jobs SET state = 'leased', attempts = attempts + 1, leased_by = ?2, \
                         leased_until = ?3, lease_ms = ?4, progress_done = NULL, \
                         progress_total = NULL, progress_message = NULL, progress_at = NULL, \
                         updated_at = ?5 \
                         WHERE id = ?1 AND state IN ('queued', 'failed') AND run_after <= ?5 \
                         RETURNING kind, payload, attempts, max_attempts",
                        params![id, worker, now.saturating_add(lease_ms), lease_ms, now],
                        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
                    )
                    .optional()?;
                if let Some((kind, payload, attempt, max_attempts)) = taken {
                    break (id, kind, payload, attempt, max_attempts);
                }
            };
            conn.execute(
                "INSERT INTO job_attempts (job_id, attempt, worker, leased_at, outcome) \
                 VALUES (?1, ?2, ?3, ?4, 'running')",
                params![id, attempt, worker, now],
            )?;
            Ok(Some(LeasedJob {
                id: JobId(id),
                kind,
                payload: parse_json(&payload, "payload")?,
                attempt,
                max_attempts,
                worker,
                lease_ms,
            }))
        })
    }

    /// Extends the lease by its length.
    pub fn heartbeat(&self, job: &LeasedJob) -> Result<(), JobError> {
        self.touch(job, None)
    }

    /// Records progress and extends the lease.
    pub fn progress(
        &self,
        job: &LeasedJob,
        done: u64,
        total: u64,
        message: &str,
    ) -> Result<(), JobError> {
        self.touch(job, Some((done, total, message.to_string())))
    }

    fn touch(&self, job: &LeasedJob, progress: Option<(u64, u64, String)>) -> Result<(), JobError> {
        let job = job.clone();
        self.transaction(move |conn, now| {
            let until = now.saturating_add(job.lease_ms);
            let changed = match progress {
                None => conn.execute(
                    "UPDATE jobs SET leased_until = ?4, updated_at = ?5 \
                     WHERE id = ?1 AND state = 'leased' AND leased_by = ?2 AND attempts = ?3",
                    params![job.id.0, job.worker, job.attempt, until, now],
                )?,
                Some((done, total, message)) => conn.execute(
                    "UPDATE jobs SET leased_until = ?4, updated_at = ?5, progress_done = ?6, \
                     progress_total = ?7, progress_message = ?8, progress_at = ?5 \
                     WHERE id = ?1 AND state = 'leased' AND leased_by = ?2 AND attempts = ?3",
                    params![
                        job.id.0,
                        job.worker,
                        job.attempt,
                        until,
                        now,
                        saturating_i64(done),
                        saturating_i64(total),
                        message
                    ],
                )?,
            };
            if changed == 0 {
                return Err(lease_lost(conn, &job));
            }
            Ok(())
        })
    }

    /// Marks the job succeeded with `result`.
    pub fn complete(&self, job: &LeasedJob, result: Value) -> Result<(), JobError> {
        let job = job.clone();
        let result = result.to_string();
        self.transaction(move |conn, now| {
            let changed = conn.execute(
                "UPDATE jobs SET state = 'succeeded', result = ?4, leased_by = NULL, \
                 leased_until = NULL, finished_at = ?5, updated_at = ?5 \
                 WHERE id = ?1 AND state = 'leased' AND leased_by = ?2 AND attempts = ?3",
                params![job.id.0, job.worker, job.attempt, result, now],
            )?;
            if changed == 0 {
                return Err(lease_lost(conn, &job));
            }
            end_attempt(
                conn,
                job.id,
                job.attempt,
                AttemptOutcome::Succeeded,
                now,
                None,
            )?;
            Ok(())
        })
    }

    /// Records a failed attempt: the job is retried after the backoff, or is `dead` when its
    /// attempts are spent or the failure is permanent.
    pub fn fail(
        &self,
        job: &LeasedJob,
        failure: impl Into<JobFailure>,
    ) -> Result<AfterFailure, JobError> {
        let job = job.clone();
        let failure = failure.into();
        let backoff = self.backoff;
        self.transaction(move |conn, now| {
            let next = if failure.permanent || job.attempt >= job.max_attempts {
                AfterFailure::Dead
            } else {
                AfterFailure::Retry {
                    at_ms: now.saturating_add(millis(backoff.delay(job.attempt))),
                }
            };
            let changed = match next {
                AfterFailure::Dead => conn.execute(
                    "UPDATE jobs SET state = 'dead', last_error = ?4, leased_by = NULL, \
                     leased_until = NULL, finished_at = ?5, updated_at = ?5 \
                     WHERE id = ?1 AND state = 'leased' AND leased_by = ?2 AND attempts = ?3",
                    params![job.id.0, job.worker, job.attempt, failure.message, now],
                )?,
                AfterFailure::Retry { at_ms } => conn.execute(
                    "UPDATE jobs SET state = 'failed', last_error = ?4, leased_by = NULL, \
                     leased_until = NULL, run_after = ?6, updated_at = ?5 \
                     WHERE id = ?1 AND state = 'leased' AND leased_by = ?2 AND attempts = ?3",
                    params![
                        job.id.0,
                        job.worker,
                        job.attempt,
                        failure.message,
                        now,
                        at_ms
                    ],
                )?,
            };
            if changed == 0 {
                return Err(lease_lost(conn, &job));
            }
            end_attempt(
                conn,
                job.id,
                job.attempt,
                AttemptOutcome::Failed,
                now,
                Some(&failure.message),
            )?;
            Ok(next)
        })
    }

    /// Cancels a job that has not finished; returns the state it was in. A worker holding it
    /// loses its lease.
    pub fn cancel(&self, id: JobId) -> Result<JobState, JobError> {
        self.transaction(move |conn, now| {
            let (state, attempts) = state_of(conn, id)?.ok_or(JobError::NotFound(id))?;
            if state.is_finished() {
                return Err(JobError::Finished { id, state });
            }
            // Only from the state just read: a job that finished or was leased meanwhile is
            // not cancelled over it.
            let changed = conn.execute(
                "UPDATE jobs SET state = 'cancelled', leased_by = NULL, leased_until = NULL, \
                 finished_at = ?2, updated_at = ?2 WHERE id = ?1 AND state = ?3 AND attempts = ?4",
                params![id.0, now, state.as_str(), attempts],
            )?;
            if changed == 0 {
                return Err(JobError::Invalid(format!(
                    "job {} changed state while being cancelled; try again",
                    id.0
                )));
            }
            if state == JobState::Leased {
                end_attempt(conn, id, attempts, AttemptOutcome::Cancelled, now, None)?;
            }
            Ok(state)
        })
    }

    /// Ends every lease that has run out; returns how many. [`lease`](Self::lease) does
    /// this first, so calling it is only needed to make listings current.
    pub fn expire_leases(&self) -> Result<usize, JobError> {
        self.transaction(expire_leases)
    }

    /// One job.
    pub fn get(&self, id: JobId) -> Result<JobRecord, JobError> {
        let found = self.store.read(move |conn| {
            conn.query_row(
                &format!("SELECT {JOB_COLUMNS} FROM jobs WHERE id = ?1"),
                [id.0],
                |r| Ok(job_record(r)),
            )
            .optional()?
            .transpose()
        })?;
        found.ok_or(JobError::NotFound(id))
    }

    /// Jobs, newest first; only those in `state` when given; at most `limit`.
    pub fn list(&self, state: Option<JobState>, limit: usize) -> Result<Vec<JobRecord>, JobError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        Ok(self.store.read(move |conn| {
            let sql = format!(
                "SELECT {JOB_COLUMNS} FROM jobs WHERE (CAST(?1 AS TEXT) IS NULL OR state = ?1) \
                 ORDER BY id DESC LIMIT ?2"
            );
            let mut stmt = conn.prepare(&sql)?;
            let rows = stmt.query_map(params![state.map(JobState::as_str), limit], |r| {
                Ok(job_record(r))
            })?;
            let mut out = Vec::new();
            for row in rows {
                out.push(row??);
            }
            Ok(out)
        })?)
    }

    /// The attempts at a job, oldest first.
    pub fn attempts(&self, id: JobId) -> Result<Vec<JobAttempt>, JobError> {
        Ok(self.store.read(move |conn| {
            let mut stmt = conn.prepare(
                "SELECT attempt, worker, leased_at, ended_at, outcome, error FROM job_attempts \
                 WHERE job_id = ?1 ORDER BY attempt",
            )?;
            type Row = (u32, String, i64, Option<i64>, String, Option<String>);
            let rows: Vec<Row> = stmt
                .query_map([id.0], |r| {
                    Ok((
                        r.get(0)?,
                        r.get(1)?,
                        r.get(2)?,
                        r.get(3)?,
                        r.get(4)?,
                        r.get(5)?,
                    ))
                })?
                .collect::<Result<_, _>>()?;
            let mut out = Vec::with_capacity(rows.len());
            for (attempt, worker, leased_at_ms, ended_at_ms, outcome, error) in rows {
                let outcome = AttemptOutcome::parse(&outcome).ok_or_else(|| {
                    StoreError::corrupt(format!("`{outcome}` is not an attempt outcome"))
                })?;
                out.push(JobAttempt {
                    attempt,
                    worker,
                    leased_at_ms,
                    ended_at_ms,
                    outcome,
                    error,
                });
            }
            Ok(out)
        })?)
    }

    /// Whether a job of one of `kinds` (any kind when empty) may still run: queued, leased
    /// or waiting to retry.
    pub fn has_unfinished(&self, kinds: &[&str]) -> Result<bool, JobError> {
        let kinds: Vec<String> = kinds.iter().map(|k| k.to_string()).collect();
        Ok(self.store.read(move |conn| {
            let mut stmt = conn.prepare(&format!(
                "SELECT DISTINCT kind FROM jobs WHERE state IN {UNFINISHED}"
            ))?;
            let found: Vec<String> = stmt
                .query_map((), |r| r.get(0))?
                .collect::<Result<_, _>>()?;
            Ok(found.iter().any(|k| kinds.is_empty() || kinds.contains(k)))
        })?)
    }

    /// Runs `f` in one write transaction at the clock's current time. A [`JobError`] from `f`
    /// rolls its changes back and reaches the caller as it was.
    fn transaction<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Connection, i64) -> Result<T, JobError> + Send + 'static,
    ) -> Result<T, JobError> {
        let clock = Arc::clone(&self.clock);
        // The store's closure can only fail with a `StoreError`; a domain error waits here
        // while a stand-in makes the store roll back.
        let refused: Arc<Mutex<Option<JobError>>> = Arc::default();
        let slot = Arc::clone(&refused);
        let result = self.store.write(move |conn| match f(conn, clock.now_ms()) {
            Ok(value) => Ok(value),
            Err(JobError::Store(e)) => Err(e),
            Err(e) => {
                let message = e.to_string();
                *slot
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(e);
                Err(StoreError::Invalid(message))
            }
        });
        result.map_err(|store_error| {
            refused
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .take()
                .unwrap_or(JobError::Store(store_error))
        })
    }
}

/// Ends the leases that ran out before `now`: each attempt is recorded as expired and counts
/// against `max_attempts`; the job is leasable again at once, or `dead`.
fn expire_leases(conn: &Connection, now: i64) -> Result<usize, JobError> {
    let expired: Vec<(i64, String, u32, u32, i64)> = {
        let mut stmt = conn.prepare(
            "SELECT id, leased_by, attempts, max_attempts, leased_until FROM jobs \
             WHERE state = 'leased' AND leased_until < ?1 ORDER BY id",
        )?;
        stmt.query_map([now], |r| {
            Ok((
                r.get(0)?,
                r.get::<Option<String>>(1)?.unwrap_or_default(),
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
            ))
        })?
        .collect::<Result<_, _>>()?
    };
    for (id, worker, attempts, max_attempts, until) in &expired {
        let error = format!("lease expired: worker `{worker}` stopped");
        if attempts >= max_attempts {
            conn.execute(
                "UPDATE jobs SET state = 'dead', last_error = ?2, leased_by = NULL, \
                 leased_until = NULL, finished_at = ?3, updated_at = ?3 WHERE id = ?1",
                params![id, error, now],
            )?;
        } else {
            conn.execute(
                "UPDATE jobs SET state = 'failed', last_error = ?2, leased_by = NULL, \
                 leased_until = NULL, run_after = ?3, updated_at = ?3 WHERE id = ?1",
                params![id, error, now],
            )?;
        }
        end_attempt(
            conn,
            JobId(*id),
            *attempts,
            AttemptOutcome::Expired,
            *until,
            Some(&error),
        )?;
    }
    Ok(expired.len())
}

fn end_attempt(
    conn: &Connection,
    id: JobId,
    attempt: u32,
    outcome: AttemptOutcome,
    at: i64,
    error: Option<&str>,
) -> Result<(), JobError> {
    conn.execute(
        "UPDATE job_attempts SET outcome = ?3, ended_at = ?4, error = ?5 \
         WHERE job_id = ?1 AND attempt = ?2",
        params![id.0, attempt, outcome.as_str(), at, error],
    )?;
    Ok(())
}

/// A job's state and attempt count.
fn state_of(conn: &Connection, id: JobId) -> Result<Option<(JobState, u32)>, JobError> {
    let row: Option<(String, u32)> = conn
        .query_row(
            "SELECT state, attempts FROM jobs WHERE id = ?1",
            [id.0],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?;
    row.map(|(state, attempts)| Ok((parse_state(&state)?, attempts)))
        .transpose()
}

/// The error for a worker whose lease is gone, saying what became of the job.
fn lease_lost(conn: &Connection, job: &LeasedJob) -> JobError {
    let now = match state_of(conn, job.id) {
        Ok(Some((JobState::Leased, attempts))) if attempts != job.attempt => {
            format!("its lease expired and attempt {attempts} holds it")
        }
        Ok(Some((JobState::Failed, _))) => "its lease expired".to_string(),
        Ok(Some((state, _))) => format!("it is {state}"),
        Ok(None) => "it no longer exists".to_string(),
        Err(e) => return e,
    };
    JobError::LeaseLost {
        id: job.id,
        worker: job.worker.clone(),
        now,
    }
}

fn job_record(r: &Row<'_>) -> Result<JobRecord, StoreError> {
    let progress = match (r.get::<Option<i64>>(10)?, r.get::<Option<i64>>(11)?) {
        (Some(done), Some(total)) => Some(JobProgress {
            done: u64::try_from(done).unwrap_or(0),
            total: u64::try_from(total).unwrap_or(0),
            message: r.get::<Option<String>>(12)?.unwrap_or_default(),
            at_ms: r.get::<Option<i64>>(13)?.unwrap_or(0),
        }),
        _ => None,
    };
    let state: String = r.get(3)?;
    Ok(JobRecord {
        id: JobId(r.get(0)?),
        kind: r.get(1)?,
        payload: parse_json(&r.get::<String>(2)?, "payload")?,
        state: parse_state(&state)?,
        attempts: r.get(4)?,
        max_attempts: r.get(5)?,
        run_after_ms: r.get(6)?,
        dedupe_key: r.get(7)?,
        leased_by: r.get(8)?,
        leased_until_ms: r.get(9)?,
        progress,
        result: r
            .get::<Option<String>>(14)?
            .map(|s| parse_json(&s, "result"))
            .transpose()?,
        last_error: r.get(15)?,
        created_at_ms: r.get(16)?,
        updated_at_ms: r.get(17)?,
        finished_at_ms: r.get(18)?,
    })
}

fn parse_state(s: &str) -> Result<JobState, StoreError> {
    s.parse()
        .map_err(|_| StoreError::corrupt(format!("`{s}` is not a job state")))
}

fn parse_json(text: &str, what: &str) -> Result<Value, StoreError> {
    serde_json::from_str(text)
        .map_err(|e| StoreError::corrupt(format!("a job's {what} is not JSON: {e}")))
}

fn saturating_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}
