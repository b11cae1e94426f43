use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;

use super::*;
use crate::clock::{Clock, ManualClock};
use crate::job_kinds::builtin_registry;
use crate::store::{Store, StoreLocation};

/// A throwaway directory, removed on drop.
struct TempDir(std::path::PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        static N: AtomicU32 = AtomicU32::new(0);
        let path = std::env::temp_dir().join(format!(
            "tollgate-jobs-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).unwrap();
        TempDir(path)
    }

    fn db(&self) -> StoreLocation {
        crate::store::tests::location_in(&self.0)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

const T0: i64 = 1_700_000_000_000;
const SEC: Duration = Duration::from_secs(1);

/// A queue on a manual clock at `T0`.
fn queue(tag: &str) -> (TempDir, JobQueue, ManualClock) {
    let dir = TempDir::new(tag);
    let store = Store::open(&dir.db()).unwrap();
    let clock = ManualClock::new(T0);
    let queue = JobQueue::with_clock(store, Arc::new(clock.clone()));
    (dir, queue, clock)
}

fn enqueue(queue: &JobQueue, kind: &str) -> JobId {
    queue
        .enqueue(kind, json!({"n": 1}), EnqueueOptions::default())
        .unwrap()
}

fn lease(queue: &JobQueue, worker: &str, secs: u64) -> Option<LeasedJob> {
    queue.lease(worker, &[], Duration::from_secs(secs)).unwrap()
}

#[test]
fn lease_takes_ready_jobs_in_order_and_by_kind() {
    let (_dir, q, clock) = queue("order");
    let a = enqueue(&q, "a");
    let b = enqueue(&q, "b");
    let later = q
        .enqueue(
            "a",
            json!(null),
            EnqueueOptions {
                run_after_ms: Some(T0 + 5_000),
                ..EnqueueOptions::default()
            },
        )
        .unwrap();
    assert_eq!((a, b, later), (JobId(1), JobId(2), JobId(3)));
    let job = q.lease("w", &["b"], 60 * SEC).unwrap().unwrap();
    assert_eq!((job.id, job.kind.as_str(), job.attempt), (b, "b", 1));
    let job = lease(&q, "w", 60).unwrap();
    assert_eq!((job.id, &job.payload), (a, &json!({"n": 1})));
    assert_eq!(lease(&q, "w", 60), None, "job 3 is not due yet");
    clock.advance(5 * SEC);
    assert_eq!(lease(&q, "w", 60).unwrap().id, later);
    let record = q.get(b).unwrap();
    assert_eq!(record.state, JobState::Leased);
    assert_eq!(record.leased_by.as_deref(), Some("w"));
    assert_eq!(record.leased_until_ms, Some(T0 + 60_000));
}

#[test]
fn an_expired_lease_is_leased_again_and_counts_as_a_failed_attempt() {
    let (_dir, q, clock) = queue("expiry");
    let id = enqueue(&q, "a");
    let first = lease(&q, "w1", 10).unwrap();
    clock.advance(10 * SEC);
    assert_eq!(
        lease(&q, "w2", 10),
        None,
        "the lease runs until its last instant"
    );
    clock.advance(Duration::from_millis(1));
    let second = lease(&q, "w2", 10).unwrap();
    assert_eq!((second.id, second.attempt), (id, 2));
    let history = q.attempts(id).unwrap();
    assert_eq!(
        history,
        vec![
            JobAttempt {
                attempt: 1,
                worker: "w1".into(),
                leased_at_ms: T0,
                ended_at_ms: Some(T0 + 10_000),
                outcome: AttemptOutcome::Expired,
                error: Some("lease expired: worker `w1` stopped".into()),
            },
            JobAttempt {
                attempt: 2,
                worker: "w2".into(),
                leased_at_ms: T0 + 10_001,
                ended_at_ms: None,
                outcome: AttemptOutcome::Running,
                error: None,
            },
        ]
    );
    // The first worker comes back: its lease is gone, whatever it tries.
    let lost = q.complete(&first, json!("late")).unwrap_err();
    assert_eq!(
        lost.to_string(),
        "job 1 is no longer leased by `w1`: its lease expired and attempt 2 holds it"
    );
    assert!(matches!(
        q.progress(&first, 1, 2, "x"),
        Err(JobError::LeaseLost { .. })
    ));
    assert!(matches!(
        q.fail(&first, "x"),
        Err(JobError::LeaseLost { .. })
    ));
    q.complete(&second, json!("done")).unwrap();
    let record = q.get(id).unwrap();
    assert_eq!(record.state, JobState::Succeeded);
    assert_eq!(record.attempts, 2);
    assert_eq!(record.result, Some(json!("done")));
    assert_eq!(
        record.last_error.as_deref(),
        Some("lease expired: worker `w1` stopped")
    );
}

#[test]
fn progress_and_heartbeats_extend_the_lease() {
    let (_dir, q, clock) = queue("heartbeat");
    let id = enqueue(&q, "a");
    let job = lease(&q, "w1", 10).unwrap();
    clock.advance(8 * SEC);
    q.progress(&job, 3, 10, "three").unwrap();
    clock.advance(8 * SEC);
    assert_eq!(lease(&q, "w2", 10), None);
    q.heartbeat(&job).unwrap();
    clock.advance(8 * SEC);
    assert_eq!(lease(&q, "w2", 10), None);
    let record = q.get(id).unwrap();
    assert_eq!(record.leased_until_ms, Some(T0 + 26_000));
    assert_eq!(
        record.progress,
        Some(JobProgress {
            done: 3,
            total: 10,
            message: "three".into(),
            at_ms: T0 + 8_000
        })
    );
    // Not even a late heartbeat revives a lease another worker has taken.
    clock.advance(11 * SEC);
    let taken = lease(&q, "w2", 10).unwrap();
    assert_eq!(taken.attempt, 2);
    assert_eq!(
        q.get(id).unwrap().progress,
        None,
        "a new lease starts without progress"
    );
    assert!(matches!(q.heartbeat(&job), Err(JobError::LeaseLost { .. })));
}

#[test]
fn failures_back_off_exponentially_then_the_job_is_dead() {
    let backoff = Backoff::default();
    let delays: Vec<u64> = (1..=12).map(|a| backoff.delay(a).as_secs()).collect();
    assert_eq!(delays, [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 600, 600]);
    assert_eq!(backoff.delay(u32::MAX), Duration::from_secs(600));

    let (_dir, q, clock) = queue("backoff");
    let id = q
        .enqueue(
            "a",
            json!({}),
            EnqueueOptions {
                max_attempts: 3,
                ..EnqueueOptions::default()
            },
        )
        .unwrap();
    let mut seen = Vec::new();
    for attempt in 1..=3 {
        let job = lease(&q, "w", 60).unwrap();
        assert_eq!(job.attempt, attempt);
        let start = clock.now_ms();
        let after = q.fail(&job, format!("boom {attempt}")).unwrap();
        seen.push(after);
        if let AfterFailure::Retry { at_ms } = after {
            assert_eq!(q.get(id).unwrap().state, JobState::Failed);
            // Not a moment early.
            clock.set(at_ms - 1);
            assert_eq!(lease(&q, "w", 60), None);
            clock.set(at_ms);
            assert_eq!(at_ms - start, 1_000 << (attempt - 1));
        }
    }
    assert_eq!(
        seen,
        [
            AfterFailure::Retry { at_ms: T0 + 1_000 },
            AfterFailure::Retry { at_ms: T0 + 3_000 },
            AfterFailure::Dead
        ]
    );
    let record = q.get(id).unwrap();
    assert_eq!(record.state, JobState::Dead);
    assert_eq!(record.last_error.as_deref(), Some("boom 3"));
    assert_eq!(record.finished_at_ms, Some(T0 + 3_000));
    clock.advance(Duration::from_secs(3600));
    assert_eq!(lease(&q, "w", 60), None);
    let outcomes: Vec<_> = q
        .attempts(id)
        .unwrap()
        .into_iter()
        .map(|a| a.outcome)
        .collect();
    assert_eq!(outcomes, [AttemptOutcome::Failed; 3]);
}

#[test]
fn an_expired_last_attempt_leaves_the_job_dead() {
    let (_dir, q, clock) = queue("expired-dead");
    let id = q
        .enqueue(
            "a",
            json!({}),
            EnqueueOptions {
                max_attempts: 1,
                ..EnqueueOptions::default()
            },
        )
        .unwrap();
    lease(&q, "w1", 1).unwrap();
    clock.advance(2 * SEC);
    assert_eq!(q.expire_leases().unwrap(), 1);
    let record = q.get(id).unwrap();
    assert_eq!(record.state, JobState::Dead);
    assert_eq!(
        record.last_error.as_deref(),
        Some("lease expired: worker `w1` stopped")
    );
    assert_eq!(lease(&q, "w2", 1), None);
}

#[test]
fn a_permanent_failure_is_not_retried() {
    let (_dir, q, _clock) = queue("permanent");
    let id = enqueue(&q, "a");
    let job = lease(&q, "w", 60).unwrap();
    assert_eq!(
        q.fail(&job, JobFailure::permanent("bad payload")).unwrap(),
        AfterFailure::Dead
    );
    assert_eq!(q.get(id).unwrap().state, JobState::Dead);
}

#[test]
fn cancel_ends_unfinished_jobs_and_the_lease_of_a_running_one() {
    let (_dir, q, _clock) = queue("cancel");
    let queued = enqueue(&q, "a");
    let running = enqueue(&q, "b");
    let job = q.lease("w", &["b"], SEC * 60).unwrap().unwrap();
    assert_eq!(q.cancel(queued).unwrap(), JobState::Queued);
    assert_eq!(q.cancel(running).unwrap(), JobState::Leased);
    assert_eq!(
        q.progress(&job, 1, 1, "x").unwrap_err().to_string(),
        "job 2 is no longer leased by `w`: it is cancelled"
    );
    assert_eq!(
        q.cancel(queued).unwrap_err().to_string(),
        "job 1 has already finished (cancelled)"
    );
    assert_eq!(
        q.cancel(JobId(9)).unwrap_err().to_string(),
        "there is no job `9`\n  help: `tollgate jobs list` shows the jobs"
    );
    assert_eq!(
        q.attempts(running).unwrap()[0].outcome,
        AttemptOutcome::Cancelled
    );
    assert_eq!(lease(&q, "w", 60), None);
}

#[test]
fn a_dedupe_key_returns_the_unfinished_job() {
    let (_dir, q, _clock) = queue("dedupe");
    let keyed = |kind: &str| {
        q.enqueue(
            kind,
            json!({}),
            EnqueueOptions {
                dedupe_key: Some("run-7".into()),
                ..EnqueueOptions::default()
            },
        )
        .unwrap()
    };
    let first = keyed("replay");
    assert_eq!(keyed("replay"), first);
    assert_ne!(keyed("distill"), first, "keys are per kind");
    let job = q.lease("w", &["replay"], SEC).unwrap().unwrap();
    assert_eq!(keyed("replay"), first, "a leased job still counts");
    q.complete(&job, json!(null)).unwrap();
    assert_eq!(keyed("replay"), JobId(3), "a finished one does not");
}

#[test]
fn bad_options_and_names_are_refused() {
    let (_dir, q, _clock) = queue("invalid");
    let zero = EnqueueOptions {
        max_attempts: 0,
        ..EnqueueOptions::default()
    };
    assert_eq!(
        q.enqueue("a", json!({}), zero).unwrap_err().to_string(),
        "`max_attempts` must be at least 1"
    );
    assert_eq!(
        "runing".parse::<JobState>().unwrap_err().to_string(),
        "`runing` is not a job state\n  help: use one of queued, leased, succeeded, failed, dead, cancelled"
    );
    assert_eq!("12".parse::<JobId>().unwrap(), JobId(12));
    assert!("-1".parse::<JobId>().is_err());
    let err = Worker::new(
        q.clone(),
        builtin_registry(),
        WorkerConfig {
            kinds: vec!["replay".into()],
            ..WorkerConfig::default()
        },
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "no handler for job kind `replay`\n  help: this worker runs `memory.decay`, `memory.distill`, `memory.gc`, `memory.quarantine_review`, `regress.suite`, `replay.batch`, `replay.exact`, `sleep`"
    );
    assert!(Worker::new(q, JobRegistry::new(), WorkerConfig::default()).is_err());
}

#[test]
fn a_worker_runs_the_sleep_job_and_reports_progress() {
    let (_dir, q, clock) = queue("sleep");
    let id = q
        .enqueue(
            SLEEP_KIND,
            json!({"ms": 1000, "steps": 3}),
            EnqueueOptions::default(),
        )
        .unwrap();
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&events);
    let worker = Worker::new(q.clone(), builtin_registry(), WorkerConfig::default())
        .unwrap()
        .on_event(move |e| sink.lock().unwrap().push(e.clone()));
    let report = worker.run_once().unwrap().unwrap();
    assert_eq!(report.result, RunResult::Succeeded);
    assert_eq!(
        clock.now_ms(),
        T0 + 1_000,
        "the job slept on the manual clock"
    );
    let record = q.get(id).unwrap();
    assert_eq!(record.result, Some(json!({"slept_ms": 1000, "steps": 3})));
    assert_eq!(record.progress.unwrap().message, "slept 1000 of 1000 ms");
    let progress: Vec<(u64, String)> = events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| match e {
            WorkerEvent::Progress { done, message, .. } => Some((*done, message.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        progress,
        [
            (0, "sleeping 1000 ms in 3 steps".to_string()),
            (1, "slept 333 of 1000 ms".to_string()),
            (2, "slept 666 of 1000 ms".to_string()),
            (3, "slept 1000 of 1000 ms".to_string()),
        ]
    );
    assert!(matches!(
        events.lock().unwrap()[0],
        WorkerEvent::Leased { attempt: 1, .. }
    ));
    assert_eq!(worker.run_once().unwrap(), None);
}

#[test]
fn a_bad_sleep_payload_is_a_permanent_failure() {
    let (_dir, q, _clock) = queue("sleep-bad");
    let id = q
        .enqueue(SLEEP_KIND, json!({"ms": "soon"}), EnqueueOptions::default())
        .unwrap();
    let worker = Worker::new(q.clone(), builtin_registry(), WorkerConfig::default()).unwrap();
    let report = worker.run_once().unwrap().unwrap();
    assert!(matches!(
        report.result,
        RunResult::Failed {
            after: AfterFailure::Dead,
            ..
        }
    ));
    assert_eq!(
        q.get(id).unwrap().last_error.as_deref(),
        Some(
            "`ms` must be a whole number, not `\"soon\"`\n  help: a `sleep` payload looks like {\"ms\": 3000, \"steps\": 6}"
        )
    );
}

#[test]
fn a_worker_retries_failures_and_survives_panics_until_drained() {
    let (_dir, q, _clock) = queue("retry");
    let calls = Arc::new(AtomicU32::new(0));
    let seen = Arc::clone(&calls);
    let mut registry = JobRegistry::new();
    registry.register("flaky", move |ctx, _payload| {
        match seen.fetch_add(1, Ordering::SeqCst) {
            0 => Err(JobFailure::retry("not yet")),
            1 => panic!("handler bug"),
            _ => Ok(json!({"attempt": ctx.job().attempt})),
        }
    });
    let id = q
        .enqueue("flaky", json!({}), EnqueueOptions::default())
        .unwrap();
    let worker = Worker::new(q.clone(), registry, WorkerConfig::default()).unwrap();
    // Idle polls sleep on the manual clock, which carries it past each backoff.
    let stats = worker.run_until_drained(&AtomicBool::new(false)).unwrap();
    assert_eq!(
        stats,
        WorkerStats {
            succeeded: 1,
            failed: 2,
            lost: 0
        }
    );
    let record = q.get(id).unwrap();
    assert_eq!(record.result, Some(json!({"attempt": 3})));
    let errors: Vec<_> = q
        .attempts(id)
        .unwrap()
        .into_iter()
        .map(|a| a.error)
        .collect();
    assert_eq!(
        errors,
        [
            Some("not yet".to_string()),
            Some("the handler panicked: handler bug".to_string()),
            None
        ]
    );
}

#[test]
fn a_worker_that_lost_its_lease_discards_its_result() {
    let (_dir, q, clock) = queue("lost");
    let id = enqueue(&q, "slow");
    let mut registry = JobRegistry::new();
    let (q2, clock2) = (q.clone(), clock.clone());
    registry.register("slow", move |ctx, _| {
        // The lease runs out and another worker takes the job meanwhile.
        clock2.advance(Duration::from_secs(31));
        q2.lease("other", &[], Duration::from_secs(30)).unwrap();
        ctx.progress(1, 1, "done")?;
        Ok(json!("mine"))
    });
    let worker = Worker::new(q.clone(), registry, WorkerConfig::default()).unwrap();
    let report = worker.run_once().unwrap().unwrap();
    assert!(
        matches!(report.result, RunResult::LeaseLost { .. }),
        "{report:?}"
    );
    let record = q.get(id).unwrap();
    assert_eq!((record.state, record.attempts), (JobState::Leased, 2));
    assert_eq!(record.leased_by.as_deref(), Some("other"));
}

#[test]
fn concurrent_workers_never_run_a_job_twice() {
    let dir = TempDir::new("concurrent");
    // Two stores on one file: two writer threads that SQLite's lock must keep apart, as two
    // processes would be.
    let stores = [
        Store::open(&dir.db()).unwrap(),
        Store::open(&dir.db()).unwrap(),
    ];
    let queue = JobQueue::new(stores[0].clone());
    let ids: Vec<JobId> = (0..60)
        .map(|n| {
            queue
                .enqueue("count", json!({"n": n}), EnqueueOptions::default())
                .unwrap()
        })
        .collect();
    let runs = Arc::new(Mutex::new(Vec::new()));
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let runs = Arc::clone(&runs);
            let queue = JobQueue::new(stores[t % 2].clone());
            std::thread::spawn(move || {
                let mut registry = JobRegistry::new();
                registry.register("count", move |ctx, _| {
                    runs.lock().unwrap().push(ctx.job().id);
                    ctx.progress(1, 1, "counted")?;
                    Ok(json!(null))
                });
                let config = WorkerConfig {
                    worker_id: format!("w{t}"),
                    poll_interval: Duration::from_millis(5),
                    ..WorkerConfig::default()
                };
                Worker::new(queue, registry, config)
                    .unwrap()
                    .run_until_drained(&AtomicBool::new(false))
                    .unwrap()
            })
        })
        .collect();
    let stats: Vec<WorkerStats> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    let mut runs = runs.lock().unwrap().clone();
    runs.sort();
    assert_eq!(runs, ids, "each job ran exactly once");
    assert_eq!(stats.iter().map(|s| s.succeeded).sum::<u64>(), 60);
    assert!(stats.iter().all(|s| s.failed == 0 && s.lost == 0));
    let done = queue.list(Some(JobState::Succeeded), 100).unwrap();
    assert_eq!(done.len(), 60);
    assert!(done.iter().all(|j| j.attempts == 1));
}

#[test]
fn the_jobs_migration_reverts_and_reapplies() {
    // Migration 2 exists on SQLite alone (PostgreSQL's schema begins at 22).
    let dir = TempDir::new("migration");
    let store = Store::open(&crate::store::tests::sqlite_location_in(&dir.0)).unwrap();
    let q = JobQueue::new(store.clone());
    enqueue(&q, "a");
    assert!(store.downgrade(Some(1)).unwrap().contains(&2));
    assert!(q.get(JobId(1)).is_err());
    assert!(store.upgrade().unwrap().contains(&2));
    assert_eq!(enqueue(&q, "a"), JobId(1));
    assert_eq!(q.list(None, 10).unwrap().len(), 1);
}
