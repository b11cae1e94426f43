//! Memory distillation figures for BENCHMARKS.md (issue 13, done-when 5, first half): the
//! largest fixture run (`run-feature-users-pagination`, 31 steps, 243 events) and a generated
//! run of 10,000 steps, each distilled into a store that already holds the run (import is not
//! timed). Search figures at 100k and 1M memories wait for the scalable eligibility filter.
//!
//! `cargo bench -p tollgate-gateway --bench memory`

use std::time::Duration;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use serde_json::json;
use tollgate_gateway::memory::distill_run;
use tollgate_gateway::recorder::Recorder;
use tollgate_gateway::recorder::format::{EventRecord, RUN_FORMAT, RunFile, RunHeader, StepRecord};
use tollgate_gateway::store::{Store, StoreLocation};

/// 2026-11-25T00:00:00Z.
const NOW_MS: i64 = 1_795_564_800_000;

fn fail(what: &str, e: impl std::fmt::Display) -> ! {
    panic!("{what}: {e}")
}

fn fixture(name: &str) -> RunFile {
    let path = format!("{}/../fixtures/runs/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| fail(&path, e));
    serde_json::from_str(&text).unwrap_or_else(|e| fail(&path, e))
}

/// A finished run of `steps` steps: each a shell or file tool call and its result, a failure
/// every 50 steps, a user message every 100 and a labelled note every 25.
fn generated(steps: usize) -> RunFile {
    let mut events = Vec::new();
    let mut push = |step: usize, kind: &str, payload: serde_json::Value| {
        events.push(EventRecord {
            seq: events.len() as u64,
            step: step as u32,
            kind: kind.into(),
            at: "2026-11-20T10:00:00Z".into(),
            payload,
            prev: None,
            hash: None,
        });
    };
    for s in 0..steps {
        if s % 100 == 0 {
            push(
                s,
                "context_offered",
                json!({"items": [{
                    "id": format!("msg-user-{s}"), "kind": "message", "role": "user",
                    "scope": "org:acme/repo:api/task:T-9", "sensitivity": "internal", "weight": 1.0,
                    "content": format!("Part {s}: please keep module {s} small. Don't add crates for it.")
                }]}),
            );
        }
        let (tool, args) = if s % 3 == 0 {
            (
                "shell.exec",
                json!({"command": format!("cargo test -p part{}", s % 40)}),
            )
        } else {
            ("fs.read_file", json!({"path": format!("src/part{s}.rs")}))
        };
        let call = format!("call-{s}");
        push(
            s,
            "tool_call",
            json!({"call_id": call, "tool": tool, "arguments": args}),
        );
        let status = if s % 50 == 49 { "error" } else { "ok" };
        push(
            s,
            "tool_result",
            json!({"call_id": call, "status": status,
                                       "output": format!("error: part {s} broke\nmore")}),
        );
        if s % 25 == 0 {
            push(
                s,
                "note",
                json!({"text": format!("fact: part {s} depends on part {}", s + 1)}),
            );
        }
    }
    RunFile {
        format: RUN_FORMAT.into(),
        run: RunHeader {
            id: "run-generated".into(),
            agent: "coder".into(),
            task: "T-9".into(),
            scope: "org:acme/repo:api/task:T-9".into(),
            clearance: "confidential".into(),
            status: "succeeded".into(),
            started_at: "2026-11-20T09:00:00Z".into(),
            finished_at: Some("2026-11-20T18:00:00Z".into()),
            parent_run: None,
            envelopes: vec![],
            metadata: json!({}),
        },
        steps: (0..steps)
            .map(|s| StepRecord {
                index: s as u32,
                name: format!("step {s}"),
                agent: "coder".into(),
            })
            .collect(),
        events,
        envelope_sources: vec![],
    }
}

/// A fresh store holding `run`.
fn with_run(dir: &std::path::Path, n: usize, run: &RunFile) -> Recorder {
    let path = dir.join(format!("m{n}.db"));
    let _ = std::fs::remove_file(&path);
    let store = Store::open(&StoreLocation::file(&path)).unwrap_or_else(|e| fail("open", e));
    let recorder = Recorder::new(store);
    recorder.import(run).unwrap_or_else(|e| fail("import", e));
    recorder
}

fn distillation(c: &mut Criterion) {
    let dir = std::env::temp_dir().join(format!("tollgate-bench-memory-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let mut n = 0;
    let mut group = c.benchmark_group("memory_distill");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(10));
    for (name, run) in [
        (
            "largest fixture run (31 steps)",
            fixture("02-feature-users-pagination.json"),
        ),
        ("generated run (10,000 steps)", generated(10_000)),
    ] {
        let id = run.run.id.clone();
        group.bench_function(name, |b| {
            b.iter_batched(
                || {
                    n += 1;
                    with_run(&dir, n, &run)
                },
                |recorder| {
                    let report = distill_run(&recorder, &id, NOW_MS, &mut |_, _, _| {})
                        .unwrap_or_else(|e| fail("distill", e));
                    assert!(!report.outcomes.is_empty());
                    report
                },
                BatchSize::PerIteration,
            );
        });
    }
    group.finish();
    let _ = std::fs::remove_dir_all(&dir);
}

criterion_group!(benches, distillation);
criterion_main!(benches);
