//! The store's two engines against each other: one random sequence of operations goes through
//! the modules' own APIs — the recorder (runs opened, steps, events appended one by one and in
//! batches, runs finished and imported), approvals (asked, decided, used), jobs (enqueued,
//! leased, completed, failed, cancelled, leases run out), cases (appends at a version, event ids
//! repeated), memories (distilled from the runs, reviewed, pinned, decayed, collected), rate
//! limits (calls counted) and handoffs (contracts posted, answered) — into an SQLite store and a
//! PostgreSQL store. Every operation must be answered alike by both (the same value, or the
//! same refusal), and so must every read at the end: runs listed and paged, each run's steps
//! and events with their hashes, its chain's verification and its export, approvals by run,
//! agent, state and page, jobs and their attempts, cases with their projections, replay health
//! and timelines, memories by status and page, their searches and provenance, rate-limit
//! windows, contracts with their versions and answers, handoff graphs.
//!
//! Ids come from small pools, so operations collide: a run opened twice, an event appended to a
//! step that does not exist, an approval decided or used twice, a lease used after it ran out,
//! a case appended at a stale version, unknown ids. Refusals are compared as the error's kind
//! and message; a refusal the database itself made (a constraint) by its [`ConstraintKind`],
//! since the engines word those differently. Some ids sort apart bytewise and by a language's
//! collation, so a PostgreSQL database whose collation is not `C` shows in the listings.
//!
//! Every time is an input (the jobs' clock is a [`ManualClock`] per engine, moved in step), so
//! nothing compared depends on the wall clock: the columns written with it (`runs.recorded_at`,
//! `artifacts.created_at`) are never read back by these APIs.
//!
//! Run it against a throwaway PostgreSQL:
//!
//! ```text
//! export TOLLGATE_TEST_POSTGRES_URL=$(scripts/pg-throwaway start /tmp/tollgate-pg)
//! cargo test -p tollgate-gateway --lib store::differential
//! ```
//!
//! Without `TOLLGATE_TEST_POSTGRES_URL` the test is skipped, except under `CI`, where it fails.
//! `PROPTEST_CASES` sets the number of sequences (16 when unset, at most 128: each migrates a
//! schema).
//!
//! [`ConstraintKind`]: super::ConstraintKind

mod ops;
mod pools;
mod reads;

use std::fmt::Debug;
use std::sync::Arc;

use proptest::prelude::*;

use self::ops::{Op, memory_ids, op};
use self::pools::{Call, T0_MS};
use self::reads::reads;
use super::tests::{postgres_schema, sqlite_temp_store};
use super::{Store, StoreError, StoreLocation};
use crate::approvals::ApprovalError;
use crate::cases::CaseError;
use crate::clock::ManualClock;
use crate::handoff::HandoffError;
use crate::jobs::{JobError, JobQueue, LeasedJob};
use crate::memory::MemoryError;
use crate::recorder::{Recorder, RecorderError};

/// The longest sequence of operations.
const MAX_OPS: usize = 40;

/// Sequences per run of the test: `PROPTEST_CASES`, else 16 (each opens a PostgreSQL schema
/// and migrates it, which takes most of a case's time).
fn config() -> ProptestConfig {
    // At most 128 even when CI asks 1,000 cases of every property: a case here is two stores
    // migrated and up to 50 operations on each, about half a second.
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse::<u32>().ok())
        .map_or(16, |n| n.min(128));
    ProptestConfig {
        cases,
        // A saved seed replays another sequence once the generator changes: a failure is kept
        // as a named regression test instead, built from the sequence it prints.
        failure_persistence: None,
        // Each shrinking step migrates a schema too: enough to shorten a sequence, bounded.
        max_shrink_iters: 256,
        ..ProptestConfig::default()
    }
}

/// A fresh PostgreSQL schema when `TOLLGATE_TEST_POSTGRES_URL` names a server; `None` (the
/// test is skipped) without it, except under CI, as the store's other two-engine tests do.
fn postgres_location() -> Option<StoreLocation> {
    match std::env::var("TOLLGATE_TEST_POSTGRES_URL") {
        Ok(url) if !url.is_empty() => Some(postgres_schema()),
        _ => {
            assert!(
                std::env::var_os("CI").is_none(),
                "under CI the store's tests run on PostgreSQL too: set TOLLGATE_TEST_POSTGRES_URL (scripts/pg-throwaway start DIR)"
            );
            None
        }
    }
}

// ---- answers ---------------------------------------------------------------------------------

/// An error as both engines should give it: its kind and message, except that a statement the
/// database refused is told by the constraint it broke (the engines word those differently).
trait EngineNeutral: Debug {
    fn neutral(&self) -> String;
}

impl EngineNeutral for StoreError {
    fn neutral(&self) -> String {
        match self {
            StoreError::Sqlite(_) | StoreError::Postgres(_) => match self.violation() {
                Some(v) => format!("the database refused it: a {:?} constraint", v.kind),
                None => "the database refused it (no constraint)".into(),
            },
            other => format!("{other:?}"),
        }
    }
}

impl EngineNeutral for RecorderError {
    fn neutral(&self) -> String {
        match self {
            RecorderError::Store(e) => format!("Store({})", e.neutral()),
            other => format!("{other:?}"),
        }
    }
}

impl EngineNeutral for ApprovalError {
    fn neutral(&self) -> String {
        match self {
            ApprovalError::Store(e) => format!("Store({})", e.neutral()),
            other => format!("{other:?}"),
        }
    }
}

impl EngineNeutral for JobError {
    fn neutral(&self) -> String {
        match self {
            JobError::Store(e) => format!("Store({})", e.neutral()),
            other => format!("{other:?}"),
        }
    }
}

impl EngineNeutral for CaseError {
    fn neutral(&self) -> String {
        match self {
            CaseError::Store(e) => format!("Store({})", e.neutral()),
            other => format!("{other:?}"),
        }
    }
}

impl EngineNeutral for HandoffError {
    fn neutral(&self) -> String {
        match self {
            HandoffError::Store(e) => format!("Store({})", e.neutral()),
            HandoffError::Recorder(e) => format!("Recorder({})", e.neutral()),
            other => format!("{other:?}"),
        }
    }
}

impl EngineNeutral for MemoryError {
    fn neutral(&self) -> String {
        match self {
            MemoryError::Store(e) => format!("Store({})", e.neutral()),
            MemoryError::Recorder(e) => format!("Recorder({})", e.neutral()),
            other => format!("{other:?}"),
        }
    }
}

/// An answer as text: the value, or the refusal.
fn show<T: Debug, E: EngineNeutral>(answer: Result<T, E>) -> String {
    match answer {
        Ok(value) => format!("ok {value:?}"),
        Err(e) => format!("refused {}", e.neutral()),
    }
}

/// One engine's store with the modules over it.
struct Engine {
    recorder: Recorder,
    jobs: JobQueue,
    clock: ManualClock,
    /// The leases its workers took, in order; one that was lost stays, to be used late.
    leases: Vec<LeasedJob>,
}

impl Engine {
    fn new(store: Store) -> Engine {
        let clock = ManualClock::new(T0_MS);
        Engine {
            jobs: JobQueue::with_clock(store.clone(), Arc::new(clock.clone())),
            recorder: Recorder::new(store),
            clock,
            leases: Vec::new(),
        }
    }

    fn store(&self) -> &Store {
        self.recorder.store()
    }

    /// The lease a job operation names (the `k`-th taken, round), if any was taken.
    fn lease(&self, k: usize) -> Option<LeasedJob> {
        (!self.leases.is_empty()).then(|| self.leases[k % self.leases.len()].clone())
    }
}

// ---- the property ----------------------------------------------------------------------------

/// What every sequence starts with, so that most operations find something to act on: a
/// finished run distilled into memories, two running runs with a first step each, an approval
/// asked in one, a job leased, and an open case.
fn prelude() -> Vec<Op> {
    vec![
        Op::Import {
            run: 2,
            events: 4,
            finished: true,
        },
        Op::Distill { run: 2, day: 0 },
        Op::OpenRun {
            run: 0,
            agent: 0,
            start: 0,
            status: 0,
        },
        Op::AddStep { run: 0, name: 0 },
        Op::OpenRun {
            run: 1,
            agent: 1,
            start: 1,
            status: 0,
        },
        Op::AddStep { run: 1, name: 0 },
        Op::RequestApproval {
            call: Call {
                run: 0,
                call: 0,
                args: 0,
            },
            approvers: false,
            ttl_seconds: 600,
            now: 0,
        },
        Op::Enqueue {
            kind: 0,
            dedupe: None,
            max_attempts: 2,
            delay_secs: None,
        },
        Op::Lease {
            worker: 0,
            kind: None,
            secs: 60,
        },
        Op::CaseAppend {
            case: 0,
            off_by: 0,
            bodies: vec![0],
            event_ids: None,
            at: 0,
        },
    ]
}

/// What a failure says: the operations so far, and both answers.
fn differ(done: &[String], what: &str, sqlite: &str, postgres: &str) -> String {
    let ops: Vec<String> = done
        .iter()
        .enumerate()
        .map(|(i, op)| format!("  {i:>2}. {op}"))
        .collect();
    format!(
        "the engines answer {what} differently, after these operations:\n{}\nSQLite:     {sqlite}\nPostgreSQL: {postgres}",
        ops.join("\n")
    )
}

/// The same operations give the same answers, and leave the same reads, on both engines.
///
/// Run through a `TestRunner` of its own rather than `proptest!`: the macro lets
/// `PROPTEST_CASES` override the configured cases, and CI's 1,000 (two stores migrated per
/// case, on PostgreSQL a schema) took seven minutes of the unit tests where 128 were meant
/// (`differential_cases_stay_capped_whatever_ci_asks`).
#[test]
fn both_engines_answer_every_operation_and_read_alike() {
    if postgres_location().is_none() {
        return;
    }
    let mut runner = proptest::test_runner::TestRunner::new(config());
    let outcome = runner.run(&prop::collection::vec(op(), 1..=MAX_OPS), |ops| {
        let (_dir, sqlite) = sqlite_temp_store();
        // A schema of its own per case.
        let postgres = postgres_location().expect("the PostgreSQL test database");
        let postgres = Store::open(&postgres).expect("open the PostgreSQL store");
        let [mut a, mut b] = [Engine::new(sqlite), Engine::new(postgres)];
        let mut done = Vec::with_capacity(ops.len());
        for op in prelude().iter().chain(&ops) {
            let picked = op.pick(a.store());
            done.push(match &picked {
                Some(p) if !p.id.is_empty() => format!("{op:?} on {}", p.id),
                Some(p) => format!("{op:?} expecting version {}", p.version),
                None => format!("{op:?}"),
            });
            let picked = picked.unwrap_or_default();
            let (on_sqlite, on_postgres) = (a.apply(op, &picked), b.apply(op, &picked));
            prop_assert!(
                on_sqlite == on_postgres,
                "{}",
                differ(&done, "the last operation", &on_sqlite, &on_postgres)
            );
        }
        let memories = memory_ids(a.store());
        let (on_sqlite, on_postgres) = (reads(&a, &memories), reads(&b, &memories));
        // Paging follows each engine's own answers, so the reads pair up only while they agree.
        for ((what, x), (asked, y)) in on_sqlite.iter().zip(&on_postgres) {
            prop_assert!(what == asked && x == y, "{}", differ(&done, what, x, y));
        }
        prop_assert_eq!(on_sqlite.len(), on_postgres.len());
        Ok(())
    });
    if let Err(e) = outcome {
        panic!("{e}\n{runner}");
    }
}

#[test]
fn differential_cases_stay_capped_whatever_ci_asks() {
    let asked = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse::<u32>().ok());
    let cases = proptest::test_runner::TestRunner::new(config())
        .config()
        .cases;
    assert!(cases <= 128, "{cases} cases (PROPTEST_CASES={asked:?})");
    assert_eq!(cases, asked.map_or(16, |n| n.min(128)));
}
