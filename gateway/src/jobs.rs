//! The background job runner: a durable queue of jobs in the store (tables `jobs` and
//! `job_attempts`, migration 0002), leases with expiry, retries with exponential backoff, and
//! workers that run registered handlers.
//!
//! **Life of a job.** [`JobQueue::enqueue`] adds a `queued` job. A worker
//! [leases](JobQueue::lease) it for a while (`leased`, one more attempt) and keeps the lease by
//! reporting [progress](JobContext::progress) or [heartbeats](JobContext::heartbeat). The
//! handler's result [completes](JobQueue::complete) it (`succeeded`); its error
//! [fails](JobQueue::fail) the attempt: the job is `failed` and leasable again after a backoff
//! of 1 s · 2^(attempt − 1), capped at 10 minutes, or `dead` once `max_attempts` attempts
//! are spent (or at once when the failure is [permanent](JobFailure::permanent)).
//! [`JobQueue::cancel`] ends a job that has not finished (`cancelled`).
//!
//! **Crashes.** A worker that dies stops heartbeating; once its lease runs out the job is
//! leasable again, and the next lease records the lost attempt as `expired` ("lease expired:
//! worker `X` stopped") and counts it against `max_attempts`. The expired lease is not
//! delayed further: waiting for it to run out was the backoff. Handlers must therefore report
//! progress more often than the lease length, and be safe to run again from the start.
//!
//! **Concurrency.** Every state change is one [`Store::write`](crate::store::Store::write):
//! the store's single writer serialises them within a process and SQLite's write lock across
//! processes, so a job is leased by one worker at a time. A worker whose lease was lost (it
//! expired and another worker took the job, or it was cancelled) learns so from its next
//! progress report or from `complete`/`fail` ([`JobError::LeaseLost`]); its late result is
//! discarded.
//!
//! Times are milliseconds since the Unix epoch from a [`Clock`](crate::clock::Clock), so tests drive time with a
//! [`ManualClock`](crate::clock::ManualClock) instead of sleeping.

mod queue;
mod sleep;
mod worker;

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::store::StoreError;

pub use queue::JobQueue;
pub use sleep::{SLEEP_KIND, sleep_job};
pub use worker::{
    JobContext, JobHandler, JobRegistry, RunReport, RunResult, Worker, WorkerConfig, WorkerEvent,
    WorkerStats,
};

/// A job's id: a positive integer, assigned in enqueue order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct JobId(pub i64);

impl fmt::Display for JobId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl FromStr for JobId {
    type Err = JobError;

    fn from_str(s: &str) -> Result<JobId, JobError> {
        s.trim()
            .parse::<i64>()
            .ok()
            .filter(|n| *n > 0)
            .map(JobId)
            .ok_or_else(|| JobError::Invalid(format!("`{s}` is not a job id (a positive number)")))
    }
}

/// Where a job is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JobState {
    /// Waiting for its first lease (possibly not before `run_after`).
    Queued,
    /// A worker holds it until `leased_until`.
    Leased,
    /// It finished successfully.
    Succeeded,
    /// An attempt failed or its lease expired; it will be retried after `run_after`.
    Failed,
    /// Every attempt failed, or a failure was permanent; it will not run again.
    Dead,
    /// Cancelled before it finished.
    Cancelled,
}

impl JobState {
    /// Every state, in life order.
    pub const ALL: [JobState; 6] = [
        JobState::Queued,
        JobState::Leased,
        JobState::Succeeded,
        JobState::Failed,
        JobState::Dead,
        JobState::Cancelled,
    ];

    /// The name stored in the database and shown to users.
    pub fn as_str(self) -> &'static str {
        match self {
            JobState::Queued => "queued",
            JobState::Leased => "leased",
            JobState::Succeeded => "succeeded",
            JobState::Failed => "failed",
            JobState::Dead => "dead",
            JobState::Cancelled => "cancelled",
        }
    }

    /// Whether the job will never run again.
    pub fn is_finished(self) -> bool {
        matches!(
            self,
            JobState::Succeeded | JobState::Dead | JobState::Cancelled
        )
    }
}

impl fmt::Display for JobState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for JobState {
    type Err = JobError;

    fn from_str(s: &str) -> Result<JobState, JobError> {
        JobState::ALL
            .into_iter()
            .find(|state| state.as_str() == s)
            .ok_or_else(|| {
                JobError::Invalid(format!(
                    "`{s}` is not a job state\n  help: use one of queued, leased, succeeded, failed, dead, cancelled"
                ))
            })
    }
}

/// How one attempt (one lease) ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AttemptOutcome {
    /// The lease is still held.
    Running,
    /// The handler succeeded.
    Succeeded,
    /// The handler failed.
    Failed,
    /// The worker stopped reporting and the lease ran out.
    Expired,
    /// The job was cancelled during the attempt.
    Cancelled,
}

impl AttemptOutcome {
    /// The name stored in the database.
    pub fn as_str(self) -> &'static str {
        match self {
            AttemptOutcome::Running => "running",
            AttemptOutcome::Succeeded => "succeeded",
            AttemptOutcome::Failed => "failed",
            AttemptOutcome::Expired => "expired",
            AttemptOutcome::Cancelled => "cancelled",
        }
    }

    fn parse(s: &str) -> Option<AttemptOutcome> {
        [
            AttemptOutcome::Running,
            AttemptOutcome::Succeeded,
            AttemptOutcome::Failed,
            AttemptOutcome::Expired,
            AttemptOutcome::Cancelled,
        ]
        .into_iter()
        .find(|o| o.as_str() == s)
    }
}

/// Options of [`JobQueue::enqueue`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnqueueOptions {
    /// Attempts before the job is `dead` (at least 1; default 5).
    pub max_attempts: u32,
    /// Not leased before this time (milliseconds since the epoch); default now.
    pub run_after_ms: Option<i64>,
    /// While a job of the same kind with this key has not finished, enqueueing returns that
    /// job instead of adding another.
    pub dedupe_key: Option<String>,
}

impl Default for EnqueueOptions {
    fn default() -> Self {
        EnqueueOptions {
            max_attempts: 5,
            run_after_ms: None,
            dedupe_key: None,
        }
    }
}

/// A worker's reported progress.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobProgress {
    /// Units done.
    pub done: u64,
    /// Units in all.
    pub total: u64,
    /// What is happening.
    pub message: String,
    /// When it was reported.
    pub at_ms: i64,
}

/// A job as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobRecord {
    /// Its id.
    pub id: JobId,
    /// Which handler runs it.
    pub kind: String,
    /// The handler's input.
    pub payload: serde_json::Value,
    /// Where it is.
    pub state: JobState,
    /// Leases taken so far.
    pub attempts: u32,
    /// Leases allowed.
    pub max_attempts: u32,
    /// Not leased before this time.
    pub run_after_ms: i64,
    /// Its dedupe key.
    pub dedupe_key: Option<String>,
    /// The worker holding it (while `leased`).
    pub leased_by: Option<String>,
    /// When the lease runs out (while `leased`).
    pub leased_until_ms: Option<i64>,
    /// The last progress reported during the current or last attempt.
    pub progress: Option<JobProgress>,
    /// The handler's result (once `succeeded`).
    pub result: Option<serde_json::Value>,
    /// The last failure.
    pub last_error: Option<String>,
    /// When it was enqueued.
    pub created_at_ms: i64,
    /// When it last changed.
    pub updated_at_ms: i64,
    /// When it finished.
    pub finished_at_ms: Option<i64>,
}

/// One attempt at a job, as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobAttempt {
    /// 1 for the first lease.
    pub attempt: u32,
    /// The worker that held it.
    pub worker: String,
    /// When it was leased.
    pub leased_at_ms: i64,
    /// When it ended.
    pub ended_at_ms: Option<i64>,
    /// How it ended.
    pub outcome: AttemptOutcome,
    /// Why it failed.
    pub error: Option<String>,
}

/// A job a worker holds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LeasedJob {
    /// Its id.
    pub id: JobId,
    /// Its kind.
    pub kind: String,
    /// The handler's input.
    pub payload: serde_json::Value,
    /// This attempt's number, from 1.
    pub attempt: u32,
    /// Attempts allowed.
    pub max_attempts: u32,
    /// The worker holding it.
    pub worker: String,
    /// How long each heartbeat extends the lease.
    pub lease_ms: i64,
}

/// What happens to a job after a failed attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "next", rename_all = "snake_case")]
pub enum AfterFailure {
    /// It will be leasable again at this time.
    Retry {
        /// Milliseconds since the epoch.
        at_ms: i64,
    },
    /// It will not run again.
    Dead,
}

/// A handler's failure.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct JobFailure {
    /// What went wrong.
    pub message: String,
    /// Whether retrying is pointless (a malformed payload): the job goes straight to `dead`.
    pub permanent: bool,
}

impl JobFailure {
    /// A failure worth retrying.
    pub fn retry(message: impl Into<String>) -> JobFailure {
        JobFailure {
            message: message.into(),
            permanent: false,
        }
    }

    /// A failure no retry can fix.
    pub fn permanent(message: impl Into<String>) -> JobFailure {
        JobFailure {
            message: message.into(),
            permanent: true,
        }
    }
}

impl From<String> for JobFailure {
    /// A failure worth retrying.
    fn from(message: String) -> JobFailure {
        JobFailure::retry(message)
    }
}

impl From<&str> for JobFailure {
    /// A failure worth retrying.
    fn from(message: &str) -> JobFailure {
        JobFailure::retry(message)
    }
}

impl From<JobError> for JobFailure {
    /// Lets handlers use `?` on [`JobContext::progress`]: a lost lease ends the handler (the
    /// worker discards whatever it returns), a store error is worth retrying.
    fn from(e: JobError) -> JobFailure {
        JobFailure::retry(e.to_string())
    }
}

/// Delays between attempts: `base · 2^(attempt − 1)`, capped at `max`. Deterministic (no
/// jitter): workers poll, so retries of many jobs do not arrive in lockstep anyway.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    /// The delay after the first failure.
    pub base: Duration,
    /// The longest delay.
    pub max: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff {
            base: Duration::from_secs(1),
            max: Duration::from_secs(600),
        }
    }
}

impl Backoff {
    /// The delay after failed attempt number `attempt` (from 1).
    pub fn delay(&self, attempt: u32) -> Duration {
        let doublings = attempt.saturating_sub(1);
        if doublings > 31 {
            return self.max;
        }
        self.base
            .checked_mul(1u32 << doublings)
            .map_or(self.max, |d| d.min(self.max))
    }
}

/// What can go wrong with jobs.
#[derive(Debug, thiserror::Error)]
pub enum JobError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// No job has this id.
    #[error("there is no job `{0}`\n  help: `tollgate jobs list` shows the jobs")]
    NotFound(JobId),
    /// The worker no longer holds the job.
    #[error("job {id} is no longer leased by `{worker}`: {now}")]
    LeaseLost {
        /// The job.
        id: JobId,
        /// The worker that thought it held it.
        worker: String,
        /// What became of the job.
        now: String,
    },
    /// The job has already finished.
    #[error("job {id} has already finished ({state})")]
    Finished {
        /// The job.
        id: JobId,
        /// Its final state.
        state: JobState,
    },
    /// An argument is not acceptable.
    #[error("{0}")]
    Invalid(String),
}

/// Milliseconds in `d`, saturating.
#[cfg(test)]
mod tests;
