//! The dashboard's list pages and its overview over a large store, for BENCHMARKS.md (issue 12,
//! done-when 4; issue 42): 10,000 runs holding 1,000,000 decisions and 10,000 approvals, each
//! page fetched whole (session check, the store's query, the HTML) from `tollgate serve`'s
//! router on loopback. Every list is paged by key, so the thousandth page costs what the first
//! does, and the overview reads the counters kept per five minutes; the figure to hold is under
//! 100 ms a page.
//!
//! `cargo bench -p tollgate-gateway --bench dashboard`
//!
//! The store is built once (about a minute) and kept under the target directory
//! (`bench-stores/dashboard-v3.db`, about 0.5 GB); delete it to rebuild. With
//! `TOLLGATE_BENCH_POSTGRES_URL=postgres://…` the store is the schema `bench_dashboard_v3` of
//! that database instead (benches/support).

use std::sync::Arc;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use tollgate_gateway::http::{AppState, ServeConfig, serve};
use tollgate_gateway::providers::FakeProvider;
use tollgate_gateway::recorder::Recorder;
use tollgate_gateway::recorder::format::{EventRecord, RUN_FORMAT, RunFile, RunHeader, StepRecord};
use tollgate_gateway::runtime::Runtime;
use tollgate_gateway::store::Store;

mod support;

const RUNS: usize = 10_000;
const DECISIONS_PER_RUN: usize = 100;
const AGENTS: [&str; 8] = [
    "coder",
    "reviewer",
    "planner",
    "executor",
    "researcher",
    "ops",
    "support",
    "triage",
];
const STATUSES: [&str; 4] = ["succeeded", "failed", "running", "cancelled"];
const EFFECTS: [&str; 4] = ["allow", "deny", "redact", "require_approval"];

fn fail(what: &str, e: impl std::fmt::Display) -> ! {
    panic!("{what}: {e}")
}

/// Run `i`: one step, `DECISIONS_PER_RUN` tool decisions as the gateway records them.
fn run_file(i: usize) -> RunFile {
    let id = format!("run-{i:05}");
    let agent = AGENTS[i % AGENTS.len()];
    // One run a minute from 2026-11-01 on.
    let (day, minute) = (1 + i / 1440, i % 1440);
    let started = format!("2026-11-{day:02}T{:02}:{:02}:00Z", minute / 60, minute % 60);
    let events = (0..DECISIONS_PER_RUN)
        .map(|n| {
            let effect = EFFECTS[(i + n) % EFFECTS.len()];
            EventRecord {
                seq: n as u64,
                step: 0,
                kind: "decision".into(),
                at: started.clone(),
                payload: json!({
                    "call_id": format!("call-{n}"),
                    "decision": {
                        "kind": "tool",
                        "request": format!("tool:fs.read_file#{n}"),
                        "effect": effect,
                        "rules": [format!("{agent}/rule-{}", n % 7)],
                        "envelope_versions": ["org-baseline@1", "coding-agent@2"],
                        "input_hash": format!("{:064x}", i * DECISIONS_PER_RUN + n),
                    },
                    "outcome": effect,
                    "reason": "decided by the bench",
                }),
                prev: None,
                hash: None,
            }
        })
        .collect();
    RunFile {
        format: RUN_FORMAT.into(),
        run: RunHeader {
            id,
            agent: agent.into(),
            task: format!("T-{}", i % 300),
            scope: "org:acme/repo:api".into(),
            clearance: "internal".into(),
            status: STATUSES[i % STATUSES.len()].into(),
            started_at: started,
            finished_at: None,
            parent_run: None,
            envelopes: vec![],
            metadata: json!({}),
        },
        steps: vec![StepRecord {
            index: 0,
            name: "work".into(),
            agent: agent.into(),
        }],
        events,
        envelope_sources: vec![],
    }
}

/// The bench store, built on first use.
fn store() -> Store {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("bench-stores");
    let _ = std::fs::create_dir_all(&dir);
    let (store, built) = support::open("dashboard-v3", &dir.join("dashboard-v3.db"));
    if !built {
        let recorder = Recorder::new(store.clone());
        eprintln!("building the bench store: {RUNS} runs × {DECISIONS_PER_RUN} decisions");
        for i in 0..RUNS {
            recorder
                .import(&run_file(i))
                .unwrap_or_else(|e| fail("import a run", e));
            if i % 1000 == 999 {
                eprintln!("  {} runs", i + 1);
            }
        }
        // One approval per run, in every state, requested a minute apart.
        store
            .write(|c| {
                let mut insert = c.prepare(
                    "INSERT INTO approvals (id, run_id, call_id, tool, arguments, call_hash,
                         envelopes, rules, approvers, state, requested_at, expires_at)
                     VALUES (?1, ?2, 'call-0', 'shell.exec', '{\"cmd\":\"make test\"}', ?3,
                         'coding-agent@2', 'coding-agent/shell', 'team-lead', ?4, ?5, ?6)",
                )?;
                for i in 0..RUNS {
                    let state = ["pending", "approved", "rejected", "used"][i % 4];
                    let at = 1_793_577_600_000i64 + i as i64 * 60_000;
                    insert.execute(tollgate_gateway::store::params![
                        format!("apr-{i:05}"),
                        format!("run-{i:05}"),
                        format!("{i:064x}"),
                        state,
                        at,
                        i64::MAX / 2,
                    ])?;
                }
                Ok(())
            })
            .unwrap_or_else(|e| fail("insert approvals", e));
        drop(recorder);
        support::mark_built(&store);
    }
    store
}

/// `tollgate serve`'s router over the store on a loopback port; its base URL and a session
/// cookie.
fn gateway(rt: &tokio::runtime::Runtime, store: Store) -> (String, String) {
    let runtime = Runtime::new(store, Arc::new(FakeProvider::new()))
        .unwrap_or_else(|e| fail("start the runtime", e));
    let listener = rt
        .block_on(tokio::net::TcpListener::bind(("127.0.0.1", 0)))
        .unwrap_or_else(|e| fail("listen", e));
    let port = listener
        .local_addr()
        .unwrap_or_else(|e| fail("listen", e))
        .port();
    let config = ServeConfig {
        addr: [127, 0, 0, 1].into(),
        port,
        body_limit: 1 << 20,
        extra_hosts: Vec::new(),
    };
    let state = AppState::new(Arc::new(runtime), "bench-token", config);
    let login = state
        .dashboard_login_url()
        .unwrap_or_else(|e| fail("log in", e))
        .unwrap_or_else(|| fail("log in", "no login URL"));
    rt.spawn(serve(listener, state, std::future::pending()));
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .max_redirects(0)
        .http_status_as_error(false)
        .build()
        .into();
    let answer = agent
        .get(&login)
        .call()
        .unwrap_or_else(|e| fail("log in", e));
    let cookie = answer
        .headers()
        .get("set-cookie")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .unwrap_or_else(|| fail("log in", "no session cookie"))
        .to_string();
    (format!("http://127.0.0.1:{port}"), cookie)
}

fn pages(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap_or_else(|e| fail("start tokio", e));
    let (base, cookie) = gateway(&rt, store());
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let fetch = |path: &str| {
        let mut answer = agent
            .get(format!("{base}{path}"))
            .header("Cookie", &cookie)
            .call()
            .unwrap_or_else(|e| fail(path, e));
        let status = answer.status().as_u16();
        let body = answer.body_mut().read_to_string().unwrap_or_default();
        assert_eq!(status, 200, "{path}: {body}");
        body
    };
    // A page in the middle of the list: the key of run 5,000 (newest first).
    let middle = {
        let i = RUNS / 2;
        let (day, minute) = (1 + i / 1440, i % 1440);
        format!(
            "/ui/runs?after_at=2026-11-{day:02}T{:02}%3A{:02}%3A00Z&after_id=run-{i:05}",
            minute / 60,
            minute % 60
        )
    };
    let cases = [
        ("runs, first page", "/ui/runs".to_string()),
        ("runs, page at run 5,000", middle),
        ("runs, one agent", "/ui/runs?agent=planner".to_string()),
        ("runs, one status", "/ui/runs?status=failed".to_string()),
        (
            "runs, one agent and status, past half",
            "/ui/runs?agent=coder&status=succeeded&after_at=2026-11-04T12%3A00%3A00Z&after_id=z"
                .to_string(),
        ),
        ("approvals, pending", "/ui/approvals".to_string()),
        (
            "approvals, all, page at 5,000",
            "/ui/approvals?state=all&after_at=1793877600000&after_id=apr-05000".to_string(),
        ),
        ("envelopes", "/ui/envelopes".to_string()),
        (
            "one run's timeline (100 decisions)",
            "/ui/runs/run-05000".to_string(),
        ),
        (
            "overview, the whole week (1,000,000 decisions)",
            "/ui?range=custom&from=2026-11-01T00%3A00&to=2026-11-08T00%3A00".to_string(),
        ),
        (
            "overview, one day",
            "/ui?range=custom&from=2026-11-03T00%3A00&to=2026-11-04T00%3A00".to_string(),
        ),
        (
            "overview, the week, one agent",
            "/ui?range=custom&from=2026-11-01T00%3A00&to=2026-11-08T00%3A00&agent=planner"
                .to_string(),
        ),
        (
            "overview, the week, one task",
            "/ui?range=custom&from=2026-11-01T00%3A00&to=2026-11-08T00%3A00&task=T-42".to_string(),
        ),
    ];
    for (_, path) in &cases {
        let page = fetch(path);
        assert!(
            [
                "</table>",
                "<article",
                "class=\"events\"",
                "class=\"empty\"",
                "id=\"plot-decisions\""
            ]
            .iter()
            .any(|m| page.contains(m)),
            "{path} shows a list"
        );
    }
    let first = fetch("/ui/runs");
    assert!(
        first.contains("25 allow") || first.contains("allow"),
        "the runs list shows counts"
    );
    // The week's overview counts every decision the store holds.
    let week = fetch(&cases[9].1);
    let all = (RUNS * DECISIONS_PER_RUN).to_string();
    assert!(
        week.contains(&format!("<span class=\"figure\">{all}</span>")),
        "the week's overview counts {all} decisions"
    );
    let mut group = c.benchmark_group(format!("dashboard_page ({})", support::engine()));
    group.sample_size(30);
    group.measurement_time(Duration::from_secs(5));
    for (name, path) in &cases {
        group.bench_function(*name, |b| b.iter(|| fetch(path)));
    }
    group.finish();
}

criterion_group!(benches, pages);
criterion_main!(benches);
