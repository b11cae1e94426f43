//! Crash tests of job workers killed while they write (issue 19): a `replay.batch` job, which
//! stores a result per scenario as it goes, is run by workers killed with SIGKILL at random
//! moments, each next one taking the job over once the lease of the dead one runs out. In the
//! end the batch holds exactly one result per scenario, every result stored before a kill is
//! still there (not redone), the results say what an uninterrupted run of the same batch says,
//! and `tollgate db check` is clean. And a distillation, which stores a run's memories in one
//! write, killed at random: all of them stored or none. The kill moments come from a seed
//! printed on failure (`TOLLGATE_CRASH_SEED=N` replays them).
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/mod.rs"]
mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use support::{Gateway, Seeded, root, stderr, stdout};

const RUN: &str = "run-feature-users-pagination";
/// Kills: each is an attempt lost, and a job gets five (`jobs::EnqueueOptions::max_attempts`),
/// the fifth left to the worker that is not killed.
const KILLS: usize = 4;

fn json_of(out: &std::process::Output) -> Value {
    assert!(out.status.success(), "{}", stderr(out));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// A gateway (without its own job worker) holding the fixture run.
fn gateway() -> Gateway {
    let envelopes = root().join("fixtures/envelopes");
    let gw = Gateway::start_args(
        &[],
        &["--envelopes", envelopes.to_str().unwrap(), "--no-worker"],
    );
    gw.import_fixture_runs(&["02-feature-users-pagination.json"]);
    gw
}

fn batch_args(background: bool) -> Vec<&'static str> {
    let mut args = vec![
        "replay",
        "batch",
        "--run",
        RUN,
        "--sweep",
        "drop-each-item",
        "--json",
    ];
    if background {
        args.push("--background");
    }
    args
}

/// What a result says, by scenario: label, first step changed, deltas.
fn outcomes(view: &Value) -> BTreeMap<String, Value> {
    view["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["scenario"].as_str().unwrap().to_string(),
                serde_json::json!([r["label"], r["first_change"], r["deltas"]]),
            )
        })
        .collect()
}

/// The batch's result ids.
fn result_ids(gw: &Gateway, batch: &str) -> BTreeSet<String> {
    let view = json_of(&gw.tollgate(&["replay", "show", batch, "--json"]));
    view["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect()
}

fn worker(gw: &Gateway, id: &str, idle_exit: bool) -> Child {
    let mut args = vec![
        "jobs",
        "run",
        "--lease-seconds",
        "1",
        "--worker-id",
        id,
        "--poll-ms",
        "20",
    ];
    if idle_exit {
        args.push("--idle-exit");
    }
    support::with_store(
        &mut Command::new(env!("CARGO_BIN_EXE_tollgate")),
        gw.dir.path(),
    )
    .current_dir(gw.dir.path())
    .args(&args)
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .spawn()
    .unwrap()
}

#[test]
fn a_replay_batch_whose_workers_are_killed_at_random_ends_as_if_run_once() {
    let mut rng = Seeded::from_env();
    let seed = rng.seed;

    // The same batch, run once in the foreground on another store.
    let reference = gateway();
    let once = json_of(&reference.tollgate(&batch_args(false)));
    let want = outcomes(&once);
    assert!(want.len() >= 20, "a batch of {} scenarios", want.len());

    let gw = gateway();
    let created = json_of(&gw.tollgate(&batch_args(true)));
    let batch = created["batch"]["id"].as_str().unwrap().to_string();
    let total = created["batch"]["scenarios"].as_array().unwrap().len();
    assert_eq!(total, want.len());

    let mut kept: BTreeSet<String> = BTreeSet::new();
    let mut kills = Vec::new();
    for k in 0..KILLS {
        let before = result_ids(&gw, &batch);
        if before.len() == total {
            break;
        }
        let mut child = worker(&gw, &format!("doomed-{k}"), false);
        // Mostly: once the worker has stored something more (it first waits out the dead one's
        // lease), a random moment more, short beside the batch (39 scenarios take about 300
        // ms). Sometimes: a random moment after it started, stored or not.
        let wait = if rng.next().is_multiple_of(4) {
            rng.next() % 1500
        } else {
            let start = Instant::now();
            while result_ids(&gw, &batch).len() == before.len() {
                assert!(
                    start.elapsed() < Duration::from_secs(60),
                    "seed {seed}: worker {k} stored nothing"
                );
                std::thread::sleep(Duration::from_millis(10));
            }
            rng.next() % 60
        };
        std::thread::sleep(Duration::from_millis(wait));
        child.kill().unwrap();
        child.wait().unwrap();
        let after = result_ids(&gw, &batch);
        kills.push((wait, after.len()));
        assert!(
            kept.is_subset(&after),
            "seed {seed}: results stored before kill {k} are gone"
        );
        kept = after;
    }

    let status = worker(&gw, "last", true).wait().unwrap();
    assert!(status.success(), "seed {seed}");
    let view = json_of(&gw.tollgate(&["replay", "show", &batch, "--json"]));
    assert_eq!(view["job_state"], "succeeded", "seed {seed}: {view}");
    let ids = result_ids(&gw, &batch);
    assert!(
        kept.is_subset(&ids),
        "seed {seed}: results stored before the last kill are gone"
    );
    assert_eq!(
        ids.len(),
        total,
        "seed {seed}, kills {kills:?}: one result per scenario"
    );
    assert_eq!(
        outcomes(&view),
        want,
        "seed {seed}, kills {kills:?}: the results differ from a run never killed"
    );
    let check = gw.tollgate(&["db", "check"]);
    assert!(check.status.success(), "seed {seed}: {}", stdout(&check));
    eprintln!("seed {seed}: killed after {kills:?} (wait ms, results stored) of {total}");
}

/// The memories of the store: (id, status, sources), by id.
fn memories(gw: &Gateway) -> Vec<(String, String, i64)> {
    support::store_in(gw.dir.path())
        .read(|c| {
            c.prepare(
                "SELECT m.id, m.status, (SELECT COUNT(*) FROM memory_sources s WHERE s.memory_id = m.id)
                 FROM memories m ORDER BY m.id",
            )?
            .query_map((), |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
            .collect()
        })
        .unwrap()
}

#[test]
fn a_distillation_killed_at_random_stores_all_of_it_or_none() {
    // The distiller stores a run's memories in one write: a kill before its commit leaves
    // none, after it all; distilling again then gives what a run never killed gives.
    let mut rng = Seeded::from_env();
    let seed = rng.seed;
    let distill = |gw: &Gateway| -> Child {
        support::with_store(
            &mut Command::new(env!("CARGO_BIN_EXE_tollgate")),
            gw.dir.path(),
        )
        .current_dir(gw.dir.path())
        .args(["memory", "distill", RUN])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
    };
    let reference = gateway();
    let start = Instant::now();
    assert!(distill(&reference).wait().unwrap().success());
    let took = start.elapsed().as_millis() as u64;
    let want = memories(&reference);
    assert!(want.len() >= 3, "{want:?}");

    let mut outcomes = Vec::new();
    for round in 0..6 {
        let gw = gateway();
        // Anywhere from the process's start to a little past the time a whole distillation took.
        let wait = rng.next() % (took + took / 2 + 1);
        let mut child = distill(&gw);
        std::thread::sleep(Duration::from_millis(wait));
        let _ = child.kill();
        let finished = child.wait().unwrap().success();
        let got = memories(&gw);
        assert!(
            got.is_empty() || got == want,
            "seed {seed}, round {round}, killed after {wait} ms: {} of {} memories stored",
            got.len(),
            want.len()
        );
        let check = gw.tollgate(&["db", "check"]);
        assert!(check.status.success(), "seed {seed}: {}", stdout(&check));
        assert!(distill(&gw).wait().unwrap().success(), "seed {seed}");
        assert_eq!(memories(&gw), want, "seed {seed}, round {round}");
        outcomes.push((wait, finished, got.len()));
    }
    eprintln!(
        "seed {seed}: a distillation takes {took} ms; killed after (ms, finished, memories): {outcomes:?}"
    );
}
