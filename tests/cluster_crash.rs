//! The cluster crash test (issue 38): three gateways on one store (the same SQLite file, or with
//! `TOLLGATE_TEST_ENGINE=postgres` the same PostgreSQL schema), clients spreading their requests
//! round robin over them — tool calls on shared runs, and runs opened, finished and distilled
//! into memory (jobs the gateways' workers run) — and one gateway killed with SIGKILL at a
//! seeded random moment, then started again. Besides, clients chat through the OpenAI-compatible
//! route, append evidence to cases of a pack, ask approvals, decide them through another
//! gateway and present them through a third, and spend a run's rate limit. Afterwards every
//! answered receipt (tool call and chat) is stored with its hash, every acknowledged case
//! append is in its case at its version, no approval let two calls go, the rate limit allowed
//! exactly its 30 calls, every run told opened is stored, every chain verifies, no job
//! succeeded twice, and `db check` is clean. `TOLLGATE_CRASH_SEED=N` replays the moments.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/mod.rs"]
mod support;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{Seeded, root, stderr, stdout};

const GATEWAYS: usize = 3;
const RUNS: [&str; 3] = ["spread-a", "spread-b", "spread-c"];
const CLIENTS: usize = 6;
/// The runs of the chat, approval and rate-limit clients.
const CHAT: &str = "chatting";
const GATED: &str = "gated";
const LIMITED: &str = "limited";
/// The same token key on every gateway: the approver's token verifies on each.
const TOKEN_KEY: &str = support::CLUSTER_TOKEN_KEY;

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

/// The model calls a chat client was answered for: (run, seq).
type Chats = Arc<Mutex<Vec<(String, u64)>>>;

/// A client chatting on `run` through the OpenAI-compatible route, each request to the next
/// gateway, keeping the run and sequence number of every answer.
fn chat_client(bases: Bases, token: String, run: String, stop: Arc<AtomicBool>, chats: Chats) {
    let agent = agent();
    let body = json!({"model": "gpt-4.1-mini", "messages": [
        {"role": "user", "content": "Summarise the change to src/lib.rs."}]});
    let mut n = 0usize;
    while !stop.load(Ordering::Relaxed) {
        n += 1;
        let base = bases.read().unwrap()[n % GATEWAYS].clone();
        let answer = agent
            .post(format!("{base}/v1/chat/completions"))
            .header("Authorization", &format!("Bearer {token}"))
            .header("X-Tollgate-Run", &run)
            .header("Content-Type", "application/json")
            .send(body.to_string())
            .ok()
            .filter(|r| r.status() == 200)
            .and_then(|mut r| r.body_mut().read_to_string().ok());
        let Some(text) = answer else {
            std::thread::sleep(Duration::from_millis(5));
            continue;
        };
        let answer: Value = serde_json::from_str(&text).unwrap();
        let member = &answer["tollgate"];
        chats.lock().unwrap().push((
            member["run"].as_str().unwrap().to_string(),
            member["seq"].as_u64().unwrap(),
        ));
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Sends `body` to gateway after gateway until one answers; the answer (`None` when none did
/// in `4 × GATEWAYS` tries).
fn until_answered(
    agent: &ureq::Agent,
    bases: &Bases,
    g: &mut usize,
    token: &str,
    path: &str,
    body: &Value,
) -> Option<(u16, Value)> {
    for _ in 0..(4 * GATEWAYS) {
        *g += 1;
        if let Some(answer) = send(agent, bases, *g % GATEWAYS, token, path, body) {
            return Some(answer);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

/// An acknowledged case append: (case, event id, the version it was stored at).
type Appended = Arc<Mutex<Vec<(String, String, i64)>>>;

/// A client making cases of the `intake_review` pack and appending evidence to each at the
/// version it last saw, each request to the next gateway; an append not answered is sent
/// again as it was (the same event id is stored once) to the next. Keeps every acknowledged
/// append.
fn case_client(bases: Bases, token: String, stop: Arc<AtomicBool>, appended: Appended) {
    let agent = agent();
    let mut g = 0usize;
    while !stop.load(Ordering::Relaxed) {
        let path = "/packs/intake_review/0.1.0/demo-case";
        let Some((201, made)) = until_answered(&agent, &bases, &mut g, &token, path, &json!({}))
        else {
            continue;
        };
        let case = made["case_id"].as_str().unwrap().to_string();
        let mut version = made["version"].as_i64().unwrap();
        for k in 0..20 {
            if stop.load(Ordering::Relaxed) {
                return;
            }
            let event = format!("ev-{k}");
            let body = json!({"expected_version": version, "event_id": event,
                              "worker": "triage", "evidence": {"urgency": format!("u{k}")}});
            let path = format!("/cases/{case}/evidence");
            match until_answered(&agent, &bases, &mut g, &token, &path, &body) {
                Some((200 | 201, answer)) => {
                    version = answer["version"].as_i64().unwrap();
                    appended
                        .lock()
                        .unwrap()
                        .push((case.clone(), event, version));
                }
                other => panic!("append {event} to {case} at {version}: {other:?}"),
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

/// Each approval's id and the effects of every presentation of it that was answered.
type Presented = Arc<Mutex<Vec<(String, Vec<String>)>>>;

/// A client asking a call that needs approval on `run` through one gateway, approving it as
/// `lead` through the next and presenting it through the next, then once more through
/// another (a used approval lets nothing more go). A step not answered is sent to the next
/// gateway.
fn approval_client(
    bases: Bases,
    token: String,
    lead: String,
    run: String,
    stop: Arc<AtomicBool>,
    presented: Presented,
) {
    let agent = agent();
    let mut g = 0usize;
    let path = format!("/v1/runs/{run}/tool-calls");
    let call = json!({"tool": "shell.exec", "arguments": {"cmd": "make test"}});
    while !stop.load(Ordering::Relaxed) {
        let Some((200, gated)) = until_answered(&agent, &bases, &mut g, &token, &path, &call)
        else {
            continue;
        };
        assert_eq!(gated["effect"], "require_approval", "{gated}");
        let id = gated["approval"]["id"].as_str().unwrap().to_string();
        let decide = format!("/v2/policies/approvals/{id}");
        match until_answered(
            &agent,
            &bases,
            &mut g,
            &lead,
            &decide,
            &json!({"decision": "approve"}),
        ) {
            // 409: decided by the attempt a killed gateway answered no more.
            Some((200 | 409, _)) => {}
            other => panic!("approve {id}: {other:?}"),
        }
        let with = json!({"tool": "shell.exec", "arguments": {"cmd": "make test"},
                          "approval_id": id});
        let mut effects = Vec::new();
        for _ in 0..2 {
            if let Some((status, answer)) =
                until_answered(&agent, &bases, &mut g, &token, &path, &with)
            {
                effects.push(format!(
                    "{status} {}",
                    answer["effect"].as_str().unwrap_or("-")
                ));
            }
        }
        presented.lock().unwrap().push((id, effects));
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A client spending `run`'s `http.get` budget (30 an hour) through gateway after gateway:
/// the allowed answers it got. Counts the calls answered rate limited in `limited`.
fn budget_client(
    bases: Bases,
    token: String,
    run: String,
    stop: Arc<AtomicBool>,
    limited: Arc<AtomicUsize>,
) -> usize {
    let agent = agent();
    let mut allowed = 0;
    let path = format!("/v1/runs/{run}/tool-calls");
    for n in 0usize.. {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let body = json!({"tool": "http.get", "call_id": format!("b{n}"),
                          "arguments": {"url": "https://a.example/"}});
        if let Some((200, answer)) = send(&agent, &bases, n % GATEWAYS, &token, &path, &body) {
            allowed += usize::from(answer["effect"] == "allow");
            if answer["effect"] == "rate_limited" {
                limited.fetch_add(1, Ordering::Relaxed);
            }
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    allowed
}

#[test]
fn a_gateway_killed_among_three_under_load_loses_nothing_and_every_chain_verifies() {
    let args = [
        "--envelopes".to_string(),
        root().join("fixtures/envelopes").display().to_string(),
    ];
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    // Every gateway runs the `intake_review` pack's cases and verifies the same tokens.
    let packs = support::TempDir::new("packs");
    let init = support::with_store(
        &mut std::process::Command::new(env!("CARGO_BIN_EXE_tollgate")),
        packs.path(),
    )
    .current_dir(packs.path())
    .args(["init", "intake_review", "--output", "pack"])
    .output()
    .unwrap();
    assert!(init.status.success(), "{}", stderr(&init));
    let pack = packs.path().join("pack").display().to_string();
    let envs = [
        ("TOLLGATE_PACK_ROOTS", pack.as_str()),
        ("TOLLGATE_TOKEN_KEY", TOKEN_KEY),
    ];
    let mut gws = support::cluster(GATEWAYS, &envs, &args);
    for (run, clearance) in RUNS.iter().map(|r| (*r, "confidential")).chain([
        (CHAT, "internal"),
        (GATED, "internal"),
        (LIMITED, "internal"),
    ]) {
        let (status, body) = gws[0].call(
            "POST",
            "/v1/runs",
            Some(&json!({"id": run, "agent": "coder", "task": "T-12",
                         "scope": "org:acme/repo:api/task:T-12", "clearance": clearance})),
        );
        assert_eq!(status, 201, "{body}");
    }
    let lead = support::team_lead(&gws[0]);
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
    let chats: Chats = Arc::default();
    {
        let (bases, token, stop, chats) =
            (bases.clone(), token.clone(), stop.clone(), chats.clone());
        clients.push(std::thread::spawn(move || {
            chat_client(bases, token, CHAT.into(), stop, chats)
        }));
    }
    let appended: Appended = Arc::default();
    {
        let (bases, token, stop, appended) =
            (bases.clone(), token.clone(), stop.clone(), appended.clone());
        clients.push(std::thread::spawn(move || {
            case_client(bases, token, stop, appended)
        }));
    }
    let presented: Presented = Arc::default();
    {
        let (bases, token, stop, presented) = (
            bases.clone(),
            token.clone(),
            stop.clone(),
            presented.clone(),
        );
        clients.push(std::thread::spawn(move || {
            approval_client(bases, token, lead, GATED.into(), stop, presented)
        }));
    }
    let limited = Arc::new(AtomicUsize::new(0));
    let budget = {
        let (bases, token, stop, limited) =
            (bases.clone(), token.clone(), stop.clone(), limited.clone());
        std::thread::spawn(move || budget_client(bases, token, LIMITED.into(), stop, limited))
    };
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
    // Every kind of client got answers after the restart too.
    let (chats_at, cases_at, approvals_at) = (
        chats.lock().unwrap().len(),
        appended.lock().unwrap().len(),
        presented.lock().unwrap().len(),
    );
    let start = Instant::now();
    while chats.lock().unwrap().len() < chats_at + 3
        || appended.lock().unwrap().len() < cases_at + 3
        || presented.lock().unwrap().len() < approvals_at + 2
        || limited.load(Ordering::Relaxed) == 0
    {
        assert!(
            start.elapsed() < Duration::from_secs(90),
            "seed {seed}: a client got no answers after the restart"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    stop.store(true, Ordering::Relaxed);
    for c in clients {
        c.join().expect("client thread");
    }
    let allowed_answers = budget.join().expect("budget client");
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
    // Every answered chat's model call is stored.
    let chats = Arc::try_unwrap(chats).unwrap().into_inner().unwrap();
    assert!(!chats.is_empty(), "seed {seed}: no chat was answered");
    for (run, seq) in &chats {
        assert!(
            stored.contains_key(&(run.clone(), *seq)),
            "seed {seed}: the answered chat {run}#{seq} is not stored"
        );
    }

    // Every acknowledged case append is in its case, at the version it was answered with.
    let appended = Arc::try_unwrap(appended).unwrap().into_inner().unwrap();
    let cases: std::collections::BTreeSet<&String> = appended.iter().map(|a| &a.0).collect();
    for case in &cases {
        let out = gws[0].tollgate(&["cases", "timeline", case, "--json"]);
        assert!(out.status.success(), "seed {seed}: {}", stderr(&out));
        let timeline: Value = serde_json::from_str(&stdout(&out)).unwrap();
        let stored: Vec<(String, i64)> = timeline["events"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                (
                    e["event_id"].as_str().unwrap().to_string(),
                    e["version"].as_i64().unwrap(),
                )
            })
            .collect();
        for (_, event, version) in appended.iter().filter(|a| &a.0 == *case) {
            assert!(
                stored.contains(&(event.clone(), *version)),
                "seed {seed}: the acknowledged append {event} of {case} at {version} is not stored: {stored:?}"
            );
        }
    }
    // No approval let two calls go, and approvals went through across the kill.
    let presented = Arc::try_unwrap(presented).unwrap().into_inner().unwrap();
    for (id, effects) in &presented {
        let allowed = effects.iter().filter(|e| *e == "200 allow").count();
        assert!(
            allowed <= 1,
            "seed {seed}: approval {id} let {allowed} calls go: {effects:?}"
        );
    }
    let used = presented
        .iter()
        .filter(|(_, e)| e.iter().any(|e| e == "200 allow"))
        .count();
    assert!(used > 0, "seed {seed}: no approval was used: {presented:?}");
    // The allowed tool decisions stored in a run (each of these runs asks one tool).
    let stored_allowed = |run: &str| -> usize {
        let (status, list) = gws[0].call(
            "GET",
            &format!("/v2/policies/decisions/{run}?effect=allow&kind=tool"),
            None,
        );
        assert_eq!(status, 200, "{list}");
        list.get("decisions")
            .unwrap_or(&list)
            .as_array()
            .unwrap()
            .len()
    };
    let gated_calls = stored_allowed(GATED);
    assert!(
        gated_calls <= presented.len() + 1,
        "seed {seed}: {gated_calls} approved calls stored for {} approvals",
        presented.len()
    );
    // The budget of 30 calls an hour held through the kill: exactly 30 allowed are stored.
    assert!(
        allowed_answers <= 30,
        "seed {seed}: {allowed_answers} allowed answers"
    );
    assert_eq!(stored_allowed(LIMITED), 30, "seed {seed}");
    eprintln!(
        "seed {seed}: {} case appends to {} cases, {} approvals ({used} used), {allowed_answers} budget calls answered allowed",
        appended.len(),
        cases.len(),
        presented.len()
    );
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
