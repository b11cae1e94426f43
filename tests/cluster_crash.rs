//! The cluster crash test (issue 38): three gateways on one store (the same SQLite file, or with
//! `TOLLGATE_TEST_ENGINE=postgres` the same PostgreSQL schema), clients spreading their requests
//! round robin over them — tool calls on shared runs, and runs opened, finished and distilled
//! into memory (jobs the gateways' workers run) — and one gateway killed with SIGKILL at a
//! seeded random moment, then started again. Afterwards every answered receipt is stored with
//! its hash, every run told opened is stored, every chain verifies, no job succeeded twice,
//! and `db check` is clean. `TOLLGATE_CRASH_SEED=N` replays the moments.
//!
//! Not yet in it (issue 38 keeps them open): chats and case appends among the clients'
//! requests, approvals decided under the kill, and a rate limit checked after it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/mod.rs"]
mod support;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{Seeded, root, stderr, stdout};

const GATEWAYS: usize = 3;
const RUNS: [&str; 3] = ["spread-a", "spread-b", "spread-c"];
const CLIENTS: usize = 6;

/// A receipt a client was answered with: (run, seq) → hash.
type Acked = Arc<Mutex<Vec<(String, u64, String)>>>;

/// Where each gateway answers now (a restarted one on a new port).
type Bases = Arc<RwLock<Vec<String>>>;

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(20)))
        .build()
        .into()
}

/// Sends `body` to `path` of gateway `g`; the answer when it is one (a gateway that is down
/// answers nothing).
fn send(
    agent: &ureq::Agent,
    bases: &Bases,
    g: usize,
    token: &str,
    path: &str,
    body: &Value,
) -> Option<(u16, Value)> {
    let base = bases.read().unwrap()[g].clone();
    let mut resp = agent
        .post(format!("{base}{path}"))
        .header("Authorization", &format!("Bearer {token}"))
        .header("Content-Type", "application/json")
        .send(body.to_string())
        .ok()?;
    let status = resp.status().as_u16();
    let text = resp.body_mut().read_to_string().ok()?;
    Some((status, serde_json::from_str(&text).unwrap_or(Value::Null)))
}

/// A client asking tool calls on `run`, each of its requests to the next gateway in turn,
/// keeping every receipt answered; a gateway that does not answer is passed over.
fn tool_client(
    bases: Bases,
    token: String,
    run: String,
    first: usize,
    stop: Arc<AtomicBool>,
    acked: Acked,
) {
    let agent = agent();
    let bodies = [
        json!({"tool": "fs.read_file", "arguments": {"path": "src/lib.rs"}}),
        json!({"tool": "shell.rm", "arguments": {"path": "/"}}),
        json!({"tool": "net.upload"}),
        json!({"tool": "fs.read_file", "arguments": {"path": "src/main.rs", "token": "ghp_3849954504ydfzqgawjbnqkkdnqvlzilhbta88"}}),
    ];
    let path = format!("/v1/runs/{run}/tool-calls");
    let mut n = first;
    while !stop.load(Ordering::Relaxed) {
        n += 1;
        let Some((200, answer)) = send(
            &agent,
            &bases,
            n % GATEWAYS,
            &token,
            &path,
            &bodies[n % bodies.len()],
        ) else {
            std::thread::sleep(Duration::from_millis(5));
            continue;
        };
        let receipt = &answer["receipt"];
        acked.lock().unwrap().push((
            receipt["run"].as_str().unwrap().to_string(),
            receipt["seq"].as_u64().unwrap(),
            receipt["hash"].as_str().unwrap().to_string(),
        ));
    }
}

/// A client opening runs (`open-0`, `open-1`, ...) on one gateway, asking a tool call in each on
/// the next, finishing it on the next and asking its distillation on the next; keeps each run
/// it was told was opened. A step a gateway does not answer is tried on the next.
fn lifecycle_client(
    bases: Bases,
    token: String,
    stop: Arc<AtomicBool>,
    opened: Arc<Mutex<Vec<String>>>,
) {
    let agent = agent();
    let mut g = 0usize;
    let mut step = |path: &str, body: &Value, want: u16| {
        for _ in 0..(4 * GATEWAYS) {
            g += 1;
            match send(&agent, &bases, g % GATEWAYS, &token, path, body) {
                Some((status, _)) if status == want => return true,
                // Done by the attempt the killed gateway answered no more (its write committed).
                Some((409, _)) => return true,
                _ => std::thread::sleep(Duration::from_millis(20)),
            }
        }
        false
    };
    for n in 0.. {
        if stop.load(Ordering::Relaxed) {
            return;
        }
        let id = format!("open-{n}");
        let run = json!({"id": id, "agent": "coder", "task": "T-12",
                         "scope": "org:acme/repo:api/task:T-12", "clearance": "internal"});
        if !step("/v1/runs", &run, 201) {
            continue;
        }
        opened.lock().unwrap().push(id.clone());
        step(
            &format!("/v1/runs/{id}/tool-calls"),
            &json!({"tool": "fs.list"}),
            200,
        );
        step(
            &format!("/v1/runs/{id}/finish"),
            &json!({"status": "succeeded"}),
            200,
        );
        step(&format!("/v2/memory/distill/run/{id}"), &json!({}), 202);
    }
}

#[test]
fn a_gateway_killed_among_three_under_load_loses_nothing_and_every_chain_verifies() {
    let args = [
        "--envelopes".to_string(),
        root().join("fixtures/envelopes").display().to_string(),
    ];
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut gws = support::cluster(GATEWAYS, &[], &args);
    for run in RUNS {
        let (status, body) = gws[0].call(
            "POST",
            "/v1/runs",
            Some(&json!({"id": run, "agent": "coder", "task": "T-12",
                         "scope": "org:acme/repo:api/task:T-12", "clearance": "confidential"})),
        );
        assert_eq!(status, 201, "{body}");
    }
    let mut rng = Seeded::from_env();
    let seed = rng.seed;
    let victim = rng.between(0, GATEWAYS as u64 - 1) as usize;
    let kill_after = rng.between(50, 600) as usize;
    let extra_ms = rng.next() % 20;

    let bases: Bases = Arc::new(RwLock::new(gws.iter().map(|g| g.base.clone()).collect()));
    let stop = Arc::new(AtomicBool::new(false));
    let acked: Acked = Arc::default();
    let opened: Arc<Mutex<Vec<String>>> = Arc::default();
    let token = gws[0].token.clone();
    let mut clients: Vec<_> = (0..CLIENTS)
        .map(|i| {
            let (bases, token, stop, acked) =
                (bases.clone(), token.clone(), stop.clone(), acked.clone());
            let run = RUNS[i % RUNS.len()].to_string();
            std::thread::spawn(move || tool_client(bases, token, run, i, stop, acked))
        })
        .collect();
    {
        let (bases, token, stop, opened) =
            (bases.clone(), token.clone(), stop.clone(), opened.clone());
        clients.push(std::thread::spawn(move || {
            lifecycle_client(bases, token, stop, opened)
        }));
    }
    let wait_for = |n: usize| {
        let start = Instant::now();
        while acked.lock().unwrap().len() < n {
            assert!(
                start.elapsed() < Duration::from_secs(90),
                "seed {seed}: the clients got fewer than {n} answers in 90 s"
            );
            std::thread::sleep(Duration::from_millis(2));
        }
    };
    wait_for(kill_after);
    std::thread::sleep(Duration::from_millis(extra_ms));
    gws[victim].kill();
    let at_kill = acked.lock().unwrap().len();
    // The others go on alone for a while, then the killed one comes back on the same store.
    wait_for(at_kill + 100);
    gws[victim].restart_as_started();
    bases.write().unwrap()[victim] = gws[victim].base.clone();
    let at_restart = acked.lock().unwrap().len();
    wait_for(at_restart + 150);
    stop.store(true, Ordering::Relaxed);
    for c in clients {
        c.join().expect("client thread");
    }
    let acked = Arc::try_unwrap(acked).unwrap().into_inner().unwrap();
    let opened = Arc::try_unwrap(opened).unwrap().into_inner().unwrap();
    eprintln!(
        "seed {seed}: gateway {victim} killed after {at_kill} answers, restarted after \
         {at_restart}; {} answers and {} runs opened in all",
        acked.len(),
        opened.len()
    );

    let stored = support::stored_hashes(gws[0].dir.path());
    for (run, seq, hash) in &acked {
        assert_eq!(
            stored.get(&(run.clone(), *seq)),
            Some(hash),
            "seed {seed}: the answered receipt {run}#{seq} is not stored as answered"
        );
    }
    let check = |args: &[&str]| {
        let out = gws[0].tollgate(args);
        assert!(
            out.status.success(),
            "seed {seed}: tollgate {args:?}:\n{}{}",
            stdout(&out),
            stderr(&out)
        );
    };
    for run in RUNS
        .iter()
        .map(|r| r.to_string())
        .chain(opened.iter().cloned())
    {
        check(&["runs", "verify", &run]);
    }
    check(&["db", "check"]);
    // No job succeeded twice (a job the killed gateway held is taken over after its lease).
    let twice: i64 = support::store_in(gws[0].dir.path())
        .read(|c| {
            c.query_row(
                "SELECT COUNT(*) FROM (SELECT job_id FROM job_attempts
                 WHERE outcome = 'succeeded' GROUP BY job_id HAVING COUNT(*) > 1) AS t",
                (),
                |r| r.get::<i64>(0),
            )
        })
        .unwrap();
    assert_eq!(twice, 0, "seed {seed}: a job succeeded twice");
    let jobs: Vec<(String, i64)> = support::store_in(gws[0].dir.path())
        .read(|c| {
            c.prepare("SELECT state, COUNT(*) FROM jobs GROUP BY state ORDER BY state")?
                .query_map((), |r| Ok((r.get::<String>(0)?, r.get::<i64>(1)?)))?
                .collect()
        })
        .unwrap();
    eprintln!("seed {seed}: jobs by state {jobs:?}");
    assert!(
        jobs.iter().any(|(state, n)| state == "succeeded" && *n > 0),
        "seed {seed}: the gateways' workers ran distillations: {jobs:?}"
    );
}
