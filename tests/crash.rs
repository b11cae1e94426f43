//! Crash tests: `tollgate serve` killed with SIGKILL while clients are being answered loses no
//! decision it answered. Every answer is sent only after the transaction holding its receipt
//! has committed, so each receipt a client holds (run, seq, hash) must be in the store after
//! the crash, every run's hash chain must still verify, and the gateway must start again on
//! the same store and go on recording. The moments of the kills are random, from a seed the
//! test prints (`TOLLGATE_CRASH_SEED=N` replays them): mostly once the clients hold a random
//! number of answers, plus a random few milliseconds; sometimes a random time after the start.
//! Beside the tool calls, one client opens runs one after another: every run it was told was
//! opened must be stored and verify.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/mod.rs"]
mod support;

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{Gateway, Seeded, root, stderr, stdout};

/// A receipt a client was answered with.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Acked {
    run: String,
    seq: u64,
    hash: String,
}

const RUNS: [&str; 2] = ["crash-a", "crash-b"];
const CLIENTS: usize = 6;

fn serve_args() -> Vec<String> {
    vec![
        "--envelopes".into(),
        root().join("fixtures/envelopes").display().to_string(),
    ]
}

/// One client: asks tool calls on its run (an allow, a deny, a default deny, a redaction) on
/// a keep-alive connection until the gateway stops answering; keeps every receipt answered.
fn client(
    base: String,
    token: String,
    run: String,
    stop: Arc<AtomicBool>,
    acked: Arc<Mutex<Vec<Acked>>>,
) {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(20)))
        .build()
        .into();
    let bodies = [
        json!({"tool": "fs.read_file", "arguments": {"path": "src/lib.rs"}}),
        json!({"tool": "shell.rm", "arguments": {"path": "/"}}),
        json!({"tool": "net.upload"}),
        json!({"tool": "fs.read_file", "arguments": {"path": "src/main.rs", "token": "ghp_3849954504ydfzqgawjbnqkkdnqvlzilhbta88"}}),
    ];
    let url = format!("{base}/v1/runs/{run}/tool-calls");
    let mut n = 0usize;
    while !stop.load(Ordering::Relaxed) {
        let body = &bodies[n % bodies.len()];
        n += 1;
        let sent = agent
            .post(&url)
            .header("Authorization", &format!("Bearer {token}"))
            .header("Content-Type", "application/json")
            .send(body.to_string());
        let Ok(mut resp) = sent else { return };
        if resp.status() != 200 {
            return;
        }
        let Ok(text) = resp.body_mut().read_to_string() else {
            return;
        };
        let Ok(answer) = serde_json::from_str::<Value>(&text) else {
            return;
        };
        let receipt = &answer["receipt"];
        acked.lock().unwrap().push(Acked {
            run: receipt["run"].as_str().expect("receipt run").to_string(),
            seq: receipt["seq"].as_u64().expect("receipt seq"),
            hash: receipt["hash"].as_str().expect("receipt hash").to_string(),
        });
    }
}

/// One client that opens runs (`{prefix}-0`, `{prefix}-1`, ...) until the gateway stops
/// answering; keeps the id of every run it was told was opened (201).
fn opener(base: String, token: String, prefix: String, opened: Arc<Mutex<Vec<String>>>) {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(20)))
        .build()
        .into();
    for n in 0.. {
        let id = format!("{prefix}-{n}");
        let body = json!({"id": id, "agent": "coder", "task": "T-12",
                          "scope": "org:acme/repo:api/task:T-12", "clearance": "internal"});
        let sent = agent
            .post(&format!("{base}/v1/runs"))
            .header("Authorization", &format!("Bearer {token}"))
            .header("Content-Type", "application/json")
            .send(body.to_string());
        match sent {
            Ok(resp) if resp.status() == 201 => opened.lock().unwrap().push(id),
            _ => return,
        }
    }
}

/// When to kill the gateway.
#[derive(Debug, Clone, Copy)]
enum KillAt {
    /// Once the clients hold this many answers, plus this many milliseconds.
    Answers(usize, u64),
    /// This many milliseconds after the clients started.
    Time(u64),
}

impl KillAt {
    fn random(rng: &mut Seeded) -> KillAt {
        if rng.next().is_multiple_of(4) {
            KillAt::Time(rng.between(150, 1500))
        } else {
            KillAt::Answers(rng.between(20, 800) as usize, rng.next() % 15)
        }
    }
}

/// Runs the clients against the gateway and kills it with SIGKILL at `at`; returns the
/// receipts the clients were answered with and the runs the opener was told were opened.
fn load_then_kill(gw: &mut Gateway, at: KillAt, round: usize) -> (Vec<Acked>, Vec<String>) {
    let stop = Arc::new(AtomicBool::new(false));
    let acked = Arc::new(Mutex::new(Vec::new()));
    let opened = Arc::new(Mutex::new(Vec::new()));
    let mut clients: Vec<_> = (0..CLIENTS)
        .map(|i| {
            let (base, token) = (gw.base.clone(), gw.token.clone());
            let run = RUNS[i % RUNS.len()].to_string();
            let (stop, acked) = (stop.clone(), acked.clone());
            std::thread::spawn(move || client(base, token, run, stop, acked))
        })
        .collect();
    {
        let (base, token) = (gw.base.clone(), gw.token.clone());
        let opened = opened.clone();
        let prefix = format!("crash-open-{round}");
        clients.push(std::thread::spawn(move || {
            opener(base, token, prefix, opened)
        }));
    }
    let start = Instant::now();
    match at {
        KillAt::Time(ms) => std::thread::sleep(Duration::from_millis(ms)),
        KillAt::Answers(n, ms) => {
            while acked.lock().unwrap().len() < n {
                assert!(
                    start.elapsed() < Duration::from_secs(60),
                    "the clients got fewer than {n} answers in a minute"
                );
                std::thread::sleep(Duration::from_millis(1));
            }
            std::thread::sleep(Duration::from_millis(ms));
        }
    }
    gw.kill();
    stop.store(true, Ordering::Relaxed);
    for c in clients {
        c.join().expect("client thread");
    }
    (
        Arc::try_unwrap(acked).unwrap().into_inner().unwrap(),
        Arc::try_unwrap(opened).unwrap().into_inner().unwrap(),
    )
}

/// The ids of the stored runs, read after the crash (either engine).
fn stored_runs(gw: &Gateway) -> HashSet<String> {
    support::store_in(gw.dir.path())
        .read(|c| {
            c.prepare("SELECT id FROM runs")?
                .query_map((), |r| r.get::<String>(0))?
                .collect()
        })
        .expect("read the stored runs")
}

#[test]
fn a_gateway_killed_with_sigkill_under_load_loses_no_answered_decision_and_its_chains_verify() {
    let args = serve_args();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut gw = Gateway::start_args(&[], &args);
    for run in RUNS {
        let (status, body) = gw.call(
            "POST",
            "/v1/runs",
            Some(&json!({"id": run, "agent": "coder", "task": "T-12",
                         "scope": "org:acme/repo:api/task:T-12", "clearance": "confidential"})),
        );
        assert_eq!(status, 201, "{body}");
    }
    let mut rng = Seeded::from_env();
    let seed = rng.seed;
    let (mut total, mut opened_total) = (0, 0);
    let mut kills = Vec::new();
    // Four crashes at random points of the load, each followed by a restart on the same store.
    for round in 0..4 {
        let at = KillAt::random(&mut rng);
        let (acked, opened) = load_then_kill(&mut gw, at, round);
        kills.push((at, acked.len(), opened.len()));
        total += acked.len();
        opened_total += opened.len();
        let stored = support::stored_hashes(gw.dir.path());
        for a in &acked {
            assert_eq!(
                stored.get(&(a.run.clone(), a.seq)),
                Some(&a.hash),
                "seed {seed}, round {round}, killed at {at:?}: the answered receipt {a:?} \
                 is not in the store as answered"
            );
        }
        let runs = stored_runs(&gw);
        for id in &opened {
            assert!(
                runs.contains(id),
                "seed {seed}, round {round}, killed at {at:?}: run {id} was opened (201) \
                 but is not stored"
            );
        }
        // The runs verify: those of the load and the last few opened, whose opening was the
        // last write before the kill.
        let last_opened = opened.iter().rev().take(2);
        for run in RUNS.iter().copied().chain(last_opened.map(String::as_str)) {
            let out = gw.tollgate(&["runs", "verify", run]);
            assert!(
                out.status.success(),
                "seed {seed}, round {round}: run {run} does not verify after the crash:\n{}{}",
                stdout(&out),
                stderr(&out)
            );
        }
        let out = gw.tollgate(&["db", "check"]);
        assert!(
            out.status.success(),
            "seed {seed}, round {round}: db check after the crash:\n{}{}",
            stdout(&out),
            stderr(&out)
        );
        gw.restart(&[], &args);
        // The restarted gateway goes on with each run's chain where the crash left it.
        for run in RUNS {
            let last = stored
                .keys()
                .filter(|(r, _)| r == run)
                .map(|(_, s)| *s)
                .max();
            let (status, answer) = gw.call(
                "POST",
                &format!("/v1/runs/{run}/tool-calls"),
                Some(&json!({"tool": "fs.list"})),
            );
            assert_eq!(status, 200, "{answer}");
            let seq = answer["receipt"]["seq"].as_u64().unwrap();
            assert!(
                last.is_none_or(|last| seq > last),
                "seed {seed}, round {round}: {answer}"
            );
        }
    }
    eprintln!(
        "seed {seed}: {total} answered decisions and {opened_total} opened runs over four \
         crashes (kill point, answers, runs opened: {kills:?}), none lost"
    );
}
