//! Workers: a [`JobRegistry`] of handlers by kind, and the [`Worker`] loop that leases jobs of
//! those kinds, runs their handlers with a [`JobContext`], and records how they ended.

use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

use super::{AfterFailure, JobError, JobFailure, JobId, JobQueue, LeasedJob};
use crate::clock::Clock;
use crate::store::Store;

/// A job handler: the payload in, a result or a failure out. It runs on the worker's thread;
/// it reports progress through the context, which also keeps its lease.
pub type JobHandler =
    Arc<dyn Fn(&JobContext<'_>, &Value) -> Result<Value, JobFailure> + Send + Sync>;

/// Handlers by job kind.
#[derive(Clone, Default)]
pub struct JobRegistry {
    handlers: BTreeMap<String, JobHandler>,
}

impl std::fmt::Debug for JobRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.handlers.keys()).finish()
    }
}

impl JobRegistry {
    /// An empty registry.
    pub fn new() -> JobRegistry {
        JobRegistry::default()
    }

    /// Registers (or replaces) the handler of `kind`.
    pub fn register<F>(&mut self, kind: impl Into<String>, handler: F) -> &mut JobRegistry
    where
        F: Fn(&JobContext<'_>, &Value) -> Result<Value, JobFailure> + Send + Sync + 'static,
    {
        self.handlers.insert(kind.into(), Arc::new(handler));
        self
    }

    /// The registered kinds, sorted.
    pub fn kinds(&self) -> Vec<&str> {
        self.handlers.keys().map(String::as_str).collect()
    }

    /// The handler of `kind`.
    pub fn get(&self, kind: &str) -> Option<&JobHandler> {
        self.handlers.get(kind)
    }
}

/// What a handler can do besides computing its result.
pub struct JobContext<'a> {
    queue: &'a JobQueue,
    job: &'a LeasedJob,
    events: &'a dyn Fn(&WorkerEvent),
}

impl JobContext<'_> {
    /// Records progress and extends the lease. An error means the lease is lost (the job was
    /// cancelled or another worker took it) or the store failed: the handler should stop.
    pub fn progress(&self, done: u64, total: u64, message: &str) -> Result<(), JobError> {
        self.queue.progress(self.job, done, total, message)?;
        (self.events)(&WorkerEvent::Progress {
            id: self.job.id,
            kind: self.job.kind.clone(),
            done,
            total,
            message: message.to_string(),
        });
        Ok(())
    }

    /// Extends the lease without reporting progress.
    pub fn heartbeat(&self) -> Result<(), JobError> {
        self.queue.heartbeat(self.job)
    }

    /// The job being run.
    pub fn job(&self) -> &LeasedJob {
        self.job
    }

    /// The store, for handlers that read or write records.
    pub fn store(&self) -> &Store {
        self.queue.store()
    }

    /// The queue's clock: handlers that wait use it, so tests on a manual clock do not.
    pub fn clock(&self) -> &dyn Clock {
        self.queue.clock()
    }
}

/// How a worker runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerConfig {
    /// Recorded on its leases (`worker-PID` by default).
    pub worker_id: String,
    /// Only these kinds (all registered kinds when empty).
    pub kinds: Vec<String>,
    /// How long a lease lasts without progress (default 30 s).
    pub lease_for: Duration,
    /// How long to wait when no job is ready (default 500 ms).
    pub poll_interval: Duration,
}

impl Default for WorkerConfig {
    fn default() -> Self {
        WorkerConfig {
            worker_id: format!("worker-{}", std::process::id()),
            kinds: Vec::new(),
            lease_for: Duration::from_secs(30),
            poll_interval: Duration::from_millis(500),
        }
    }
}

/// What a worker reports as it goes.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum WorkerEvent {
    /// It leased a job.
    Leased {
        /// The job.
        id: JobId,
        /// Its kind.
        kind: String,
        /// This attempt, from 1.
        attempt: u32,
        /// Attempts allowed.
        max_attempts: u32,
    },
    /// The handler reported progress.
    Progress {
        /// The job.
        id: JobId,
        /// Its kind.
        kind: String,
        /// Units done.
        done: u64,
        /// Units in all.
        total: u64,
        /// What is happening.
        message: String,
    },
    /// The job finished.
    Finished {
        /// The job.
        id: JobId,
        /// Its kind.
        kind: String,
        /// How.
        result: RunResult,
    },
}

/// How one run of a handler ended.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum RunResult {
    /// The job succeeded.
    Succeeded,
    /// The attempt failed; the job will be retried or is dead.
    Failed {
        /// The handler's message.
        error: String,
        /// What happens next.
        after: AfterFailure,
    },
    /// The lease was lost while the handler ran; its result was discarded.
    LeaseLost {
        /// What became of the job.
        error: String,
    },
}

/// One job run by [`Worker::run_once`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunReport {
    /// The job.
    pub id: JobId,
    /// Its kind.
    pub kind: String,
    /// The attempt run.
    pub attempt: u32,
    /// How it ended.
    pub result: RunResult,
}

/// Counts of what a worker did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct WorkerStats {
    /// Jobs that succeeded.
    pub succeeded: u64,
    /// Attempts that failed.
    pub failed: u64,
    /// Leases lost while running.
    pub lost: u64,
}

impl WorkerStats {
    fn count(&mut self, result: &RunResult) {
        match result {
            RunResult::Succeeded => self.succeeded += 1,
            RunResult::Failed { .. } => self.failed += 1,
            RunResult::LeaseLost { .. } => self.lost += 1,
        }
    }
}

type EventSink = Box<dyn Fn(&WorkerEvent) + Send + Sync>;

/// A worker: leases jobs of its kinds one at a time and runs them on the calling thread.
/// Run several (threads or processes) for parallelism; the queue keeps them apart.
pub struct Worker {
    queue: JobQueue,
    registry: JobRegistry,
    config: WorkerConfig,
    events: EventSink,
}

impl std::fmt::Debug for Worker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Worker")
            .field("registry", &self.registry)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl Worker {
    /// A worker for `registry`'s handlers. Fails if `config.kinds` names a kind with no
    /// handler, or there is nothing to run.
    pub fn new(
        queue: JobQueue,
        registry: JobRegistry,
        config: WorkerConfig,
    ) -> Result<Worker, JobError> {
        if let Some(kind) = config.kinds.iter().find(|k| registry.get(k).is_none()) {
            return Err(JobError::Invalid(format!(
                "no handler for job kind `{kind}`\n  help: this worker runs {}",
                known(&registry)
            )));
        }
        if registry.kinds().is_empty() {
            return Err(JobError::Invalid(
                "the worker has no job handlers registered".into(),
            ));
        }
        Ok(Worker {
            queue,
            registry,
            config,
            events: Box::new(|_| {}),
        })
    }

    /// The same worker, reporting what it does to `sink`.
    pub fn on_event(mut self, sink: impl Fn(&WorkerEvent) + Send + Sync + 'static) -> Worker {
        self.events = Box::new(sink);
        self
    }

    /// The kinds it leases.
    pub fn kinds(&self) -> Vec<&str> {
        if self.config.kinds.is_empty() {
            self.registry.kinds()
        } else {
            self.config.kinds.iter().map(String::as_str).collect()
        }
    }

    /// Leases and runs one ready job; `None` when no job is ready. A lost lease is a report,
    /// not an error; errors are the store's.
    pub fn run_once(&self) -> Result<Option<RunReport>, JobError> {
        let kinds = self.kinds();
        let Some(job) = self
            .queue
            .lease(&self.config.worker_id, &kinds, self.config.lease_for)?
        else {
            return Ok(None);
        };
        (self.events)(&WorkerEvent::Leased {
            id: job.id,
            kind: job.kind.clone(),
            attempt: job.attempt,
            max_attempts: job.max_attempts,
        });
        let outcome = match self.registry.get(&job.kind) {
            Some(handler) => {
                let context = JobContext {
                    queue: &self.queue,
                    job: &job,
                    events: &*self.events,
                };
                // A panicking handler fails its attempt instead of taking the worker down.
                catch_unwind(AssertUnwindSafe(|| handler(&context, &job.payload)))
                    .unwrap_or_else(|panic| Err(JobFailure::retry(panic_message(&*panic))))
            }
            // Unreachable while `kinds` come from the registry; kept as a failure, not a panic.
            None => Err(JobFailure::permanent(format!(
                "no handler for job kind `{}`",
                job.kind
            ))),
        };
        let settled = match outcome {
            Ok(value) => self
                .queue
                .complete(&job, value)
                .map(|()| RunResult::Succeeded),
            Err(failure) => {
                let error = failure.message.clone();
                self.queue
                    .fail(&job, failure)
                    .map(|after| RunResult::Failed { error, after })
            }
        };
        let result = match settled {
            Ok(result) => result,
            Err(e @ JobError::LeaseLost { .. }) => RunResult::LeaseLost {
                error: e.to_string(),
            },
            Err(e) => return Err(e),
        };
        (self.events)(&WorkerEvent::Finished {
            id: job.id,
            kind: job.kind.clone(),
            result: result.clone(),
        });
        Ok(Some(RunReport {
            id: job.id,
            kind: job.kind,
            attempt: job.attempt,
            result,
        }))
    }

    /// Runs jobs until `stop` is set (checked between jobs and while idle).
    pub fn run_until(&self, stop: &AtomicBool) -> Result<WorkerStats, JobError> {
        self.run_loop(stop, false)
    }

    /// Runs jobs until `stop` is set or no job of its kinds is left to run: none queued,
    /// leased (by any worker: its lease may yet expire) or waiting to retry.
    pub fn run_until_drained(&self, stop: &AtomicBool) -> Result<WorkerStats, JobError> {
        self.run_loop(stop, true)
    }

    fn run_loop(&self, stop: &AtomicBool, drain: bool) -> Result<WorkerStats, JobError> {
        let mut stats = WorkerStats::default();
        while !stop.load(Ordering::SeqCst) {
            match self.run_once()? {
                Some(report) => stats.count(&report.result),
                None => {
                    if drain && !self.queue.has_unfinished(&self.kinds())? {
                        break;
                    }
                    self.queue.clock().sleep(self.config.poll_interval);
                }
            }
        }
        Ok(stats)
    }
}

/// `a`, `b` and `c` kinds, for messages.
fn known(registry: &JobRegistry) -> String {
    let kinds = registry.kinds();
    if kinds.is_empty() {
        "no job kinds".to_string()
    } else {
        format!("`{}`", kinds.join("`, `"))
    }
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    let detail = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_default();
    format!("the handler panicked: {detail}")
}
