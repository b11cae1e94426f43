//! Flight-recorder and replay figures for BENCHMARKS.md:
//! - events appended per second through the single writer: one event per write, 100 per
//!   write, and 8 threads appending one at a time (their writes batch into shared commits);
//! - exact replay of the largest fixture run (recompile every step, serve the recorded
//!   outputs, re-decide every tool call).
//!
//! `cargo bench -p tollgate-gateway --bench recorder`

use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde_json::json;
use tollgate_gateway::recorder::Recorder;
use tollgate_gateway::recorder::format::{EventKind, RunFile, RunHeader};
use tollgate_gateway::replay::replay_file;
use tollgate_gateway::store::{Store, StoreLocation};

fn store(tag: &str) -> (std::path::PathBuf, Recorder) {
    let dir = std::env::temp_dir().join(format!("tollgate-bench-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap_or_default();
    let store = match Store::open(&StoreLocation::file(dir.join("b.db"))) {
        Ok(s) => s,
        Err(e) => panic!("cannot open the bench store: {e}"),
    };
    (dir, Recorder::new(store))
}

fn open_run(rec: &Recorder, id: &str) {
    let header = RunHeader {
        id: id.into(),
        agent: "coder".into(),
        task: "T-1".into(),
        scope: "org:acme/repo:api".into(),
        clearance: "internal".into(),
        status: "running".into(),
        started_at: "2026-11-02T09:00:00Z".into(),
        finished_at: None,
        parent_run: None,
        envelopes: vec![],
        metadata: json!({}),
    };
    if let Err(e) = rec
        .open_run(&header)
        .and_then(|_| rec.add_step(id, "s", "coder"))
    {
        panic!("cannot open the bench run: {e}");
    }
}

fn payload(i: u64) -> serde_json::Value {
    json!({"call_id": format!("call-{i}"), "tool": "fs.read_file",
           "arguments": {"path": format!("src/module_{i}.rs")}})
}

fn appends(c: &mut Criterion) {
    let mut group = c.benchmark_group("recorder_append");
    group.measurement_time(Duration::from_secs(8));
    let (dir, rec) = store("append");
    open_run(&rec, "single");
    group.throughput(Throughput::Elements(1));
    let mut n = 0u64;
    group.bench_function("one_event_per_write", |b| {
        b.iter(|| {
            n += 1;
            rec.append(
                "single",
                0,
                EventKind::ToolCall,
                "2026-11-02T09:00:00Z",
                payload(n),
            )
        })
    });
    open_run(&rec, "batched");
    group.throughput(Throughput::Elements(100));
    group.bench_function("100_events_per_write", |b| {
        b.iter(|| {
            let batch = (0..100)
                .map(|i| {
                    (
                        0,
                        EventKind::ToolCall,
                        "2026-11-02T09:00:00Z".to_string(),
                        payload(i),
                    )
                })
                .collect();
            rec.append_many("batched", batch)
        })
    });
    // Eight writers on eight runs: the writer thread commits whatever is queued together.
    for t in 0..8 {
        open_run(&rec, &format!("t{t}"));
    }
    group.throughput(Throughput::Elements(8 * 50));
    group.bench_function("8_threads_one_event_per_write", |b| {
        b.iter_custom(|iters| {
            let start = Instant::now();
            for _ in 0..iters {
                std::thread::scope(|s| {
                    for t in 0..8 {
                        let rec = rec.clone();
                        s.spawn(move || {
                            for i in 0..50 {
                                let _ = rec.append(
                                    &format!("t{t}"),
                                    0,
                                    EventKind::ToolCall,
                                    "2026-11-02T09:00:00Z",
                                    payload(i),
                                );
                            }
                        });
                    }
                });
            }
            start.elapsed()
        })
    });
    group.finish();
    drop(rec);
    let _ = std::fs::remove_dir_all(dir);
}

fn largest_fixture() -> RunFile {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../fixtures/runs");
    let mut best: Option<(usize, RunFile)> = None;
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "json") {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        if let Ok(file) = serde_json::from_str::<RunFile>(&text)
            && best.as_ref().is_none_or(|(n, _)| file.events.len() > *n)
        {
            best = Some((file.events.len(), file));
        }
    }
    match best {
        Some((_, file)) => file,
        None => panic!("no fixture runs under {dir}"),
    }
}

fn replay(c: &mut Criterion) {
    let file = largest_fixture();
    let mut group = c.benchmark_group("replay_exact");
    group.sample_size(10);
    group.bench_function(
        format!("{} ({} events)", file.run.id, file.events.len()),
        |b| b.iter(|| replay_file(&file)),
    );
    group.finish();
}

criterion_group!(benches, appends, replay);
criterion_main!(benches);
