//! Crash tests: `tollgate serve` killed with SIGKILL while clients are being answered loses no
//! decision it answered. Every answer is sent only after the transaction holding its receipt
//! has committed, so each receipt a client holds (run, seq, hash) must be in the store after
//! the crash, every run's hash chain must still verify, and the gateway must start again on
//! the same store and go on recording.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/mod.rs"]
mod support;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use support::{Gateway, root, stderr, stdout};

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
        json!({"tool": "fs.read_file", "arguments": {"path": "src/main.rs", "token": "ghp_0123456789abcdefghijklmnopqrstuvwxyz01"}}),
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

/// Runs the clients against the gateway and kills it with SIGKILL after `after`; returns the
/// receipts the clients were answered with.
fn load_then_kill(gw: &mut Gateway, after: Duration) -> Vec<Acked> {
    let stop = Arc::new(AtomicBool::new(false));
    let acked = Arc::new(Mutex::new(Vec::new()));
    let clients: Vec<_> = (0..CLIENTS)
        .map(|i| {
            let (base, token) = (gw.base.clone(), gw.token.clone());
            let run = RUNS[i % RUNS.len()].to_string();
            let (stop, acked) = (stop.clone(), acked.clone());
            std::thread::spawn(move || client(base, token, run, stop, acked))
        })
        .collect();
    std::thread::sleep(after);
    gw.kill();
    stop.store(true, Ordering::Relaxed);
    for c in clients {
        c.join().expect("client thread");
    }
    Arc::try_unwrap(acked).unwrap().into_inner().unwrap()
}

/// The hash of every stored event of the runs, by (run, seq).
fn stored_hashes(gw: &Gateway) -> HashMap<(String, u64), String> {
    let db = gw.dir.path().join(".tollgate/tollgate.db");
    let c = rusqlite::Connection::open(db).expect("open the database after the crash");
    let mut stmt = c
        .prepare("SELECT run_id, seq, hash FROM events")
        .expect("prepare");
    stmt.query_map([], |r| {
        Ok((
            (r.get::<_, String>(0)?, r.get::<_, i64>(1)? as u64),
            r.get(2)?,
        ))
    })
    .expect("query")
    .map(|row| row.expect("row"))
    .collect()
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
    let mut total = 0;
    // Three crashes at different points of the load, each followed by a restart on the same
    // store.
    for (round, after_ms) in [400u64, 900, 650].into_iter().enumerate() {
        let acked = load_then_kill(&mut gw, Duration::from_millis(after_ms));
        assert!(
            acked.len() >= 20,
            "round {round}: the clients were answered only {} times before the kill",
            acked.len()
        );
        total += acked.len();
        let stored = stored_hashes(&gw);
        for a in &acked {
            assert_eq!(
                stored.get(&(a.run.clone(), a.seq)),
                Some(&a.hash),
                "round {round}: the answered receipt {a:?} is not in the store as answered"
            );
        }
        for run in RUNS {
            let out = gw.tollgate(&["runs", "verify", run]);
            assert!(
                out.status.success(),
                "round {round}: run {run} does not verify after the crash:\n{}{}",
                stdout(&out),
                stderr(&out)
            );
        }
        let out = gw.tollgate(&["db", "check"]);
        assert!(
            out.status.success(),
            "round {round}: db check after the crash:\n{}{}",
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
                .max()
                .expect("events of the run");
            let (status, answer) = gw.call(
                "POST",
                &format!("/v1/runs/{run}/tool-calls"),
                Some(&json!({"tool": "fs.list"})),
            );
            assert_eq!(status, 200, "{answer}");
            assert!(
                answer["receipt"]["seq"].as_u64().unwrap() > last,
                "round {round}: {answer}"
            );
        }
    }
    eprintln!("{total} answered decisions over three crashes, none lost");
}
