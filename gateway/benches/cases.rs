//! Case-service figures for BENCHMARKS.md:
//! - case events appended per second through the single writer (each append checks the expected
//!   version and brings the projections up to date in the same transaction): one event per
//!   append, 8 threads appending to their own cases, and 100 events per append; beside them, in
//!   the same run, the flight recorder's own append (the floor: one hash-chained event, no
//!   projection);
//! - rebuilding every projection from 100,000 case events (1,000 cases of 100 events with
//!   evidence, proposals, previews, decisions, approvals and commits), and replay health of one
//!   case.
//!
//! `cargo bench -p tollgate-gateway --bench cases`; with `TOLLGATE_BENCH_POSTGRES_URL=postgres://…`
//! on PostgreSQL (benches/support).

use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde_json::{Map, json};
use tollgate_gateway::cases::project;
use tollgate_gateway::cases::store::append;
use tollgate_gateway::cases::{
    ApprovalDecided, CommitApplied, CommitStarted, EventBody, Evidence, NewEvent, Opened,
    PolicyDecided, Preview, Proposal,
};
use tollgate_gateway::packs::adapter::{Change, Mode};
use tollgate_gateway::packs::policy::PackDecision;
use tollgate_gateway::recorder::Recorder;
use tollgate_gateway::recorder::format::{EventKind, RunHeader};
use tollgate_gateway::store::Store;

mod support;

const AT: &str = "2026-11-26T10:00:00Z";

fn store(tag: &str) -> (std::path::PathBuf, Store) {
    let dir = std::env::temp_dir().join(format!("tollgate-bench-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap_or_default();
    match Store::open(&support::location(tag, &dir.join("b.db"), true)) {
        Ok(s) => (dir, s),
        Err(e) => panic!("cannot open the bench store: {e}"),
    }
}

fn opened(case: &str) -> NewEvent {
    NewEvent::new(
        EventBody::CaseOpened(Opened {
            pack_id: "intake_review".into(),
            engine_id: "intake_review".into(),
            engine_version: "0.1.0".into(),
            pack_root: "/packs/intake_review".into(),
            pack_hash: "0".repeat(64),
            title: format!("Intake {case}"),
            input: Map::from_iter([("title".to_string(), json!("Vendor contract renewal"))]),
            run_id: case.into(),
        }),
        "bench",
    )
}

fn evidence(i: u64) -> NewEvent {
    NewEvent::new(
        EventBody::EvidenceRecorded(Evidence {
            worker: "triage".into(),
            evidence: Map::from_iter([(format!("k{}", i % 8), json!(i))]),
            source: "api".into(),
        }),
        "bench",
    )
}

fn must<T, E: std::fmt::Display>(r: Result<T, E>) -> T {
    r.unwrap_or_else(|e| panic!("{e}"))
}

/// A case history of `n` events: evidence, then proposals moved through every step.
fn history(n: u64) -> Vec<NewEvent> {
    let mut out = Vec::new();
    let mut i = 0u64;
    while (out.len() as u64) < n {
        let p = format!("prop-{}", i / 7 + 1);
        let body = match i % 7 {
            0 | 1 => evidence(i).body,
            2 => EventBody::ProposalMade(Proposal {
                proposal_id: p,
                capability: "route_to_queue".into(),
                action: "assign_queue".into(),
                input: Map::from_iter([("queue".to_string(), json!("legal"))]),
                wording: "Route to the legal queue".into(),
            }),
            3 => EventBody::PreviewRecorded(Preview {
                proposal_id: p,
                preview_hash: format!("{i:064}"),
                changes: vec![Change {
                    target: "case".into(),
                    field: "queue".into(),
                    before: String::new(),
                    after: "legal".into(),
                }],
                summary: "queue → legal".into(),
            }),
            4 => EventBody::PolicyDecided(Box::new(PolicyDecided {
                proposal_id: p,
                preview_hash: format!("{:064}", i - 1),
                effect: "allow".into(),
                rules: vec!["intake.route-permitted".into()],
                pack: PackDecision {
                    effect: "allow".into(),
                    rules: vec!["intake.route-permitted".into()],
                    reasons: Vec::new(),
                    proof: None,
                    why_not: None,
                    input_hash: "0".repeat(64),
                },
                envelopes: None,
            })),
            5 => EventBody::ApprovalDecided(ApprovalDecided {
                proposal_id: p,
                approval_id: format!("apr-{i}"),
                approved: true,
                by: "lead".into(),
                reason: "ok".into(),
            }),
            _ => {
                out.push(NewEvent::new(
                    EventBody::CommitStarted(CommitStarted {
                        proposal_id: p.clone(),
                        preview_hash: format!("{:064}", i - 3),
                        approval_id: format!("apr-{}", i - 1),
                        mode: Mode::DryRun,
                        authorization: None,
                    }),
                    "bench",
                ));
                EventBody::CommitApplied(CommitApplied {
                    proposal_id: p,
                    receipt: json!({"record": "case", "fields": ["queue"]}),
                    verification: json!({"verified": true}),
                })
            }
        };
        out.push(NewEvent::new(body, "bench"));
        i += 1;
    }
    out.truncate(n as usize);
    out
}

fn appends(c: &mut Criterion) {
    let mut group = c.benchmark_group(format!("case_append ({})", support::engine()));
    group.measurement_time(Duration::from_secs(8));
    let (dir, s) = store("case-append");
    group.throughput(Throughput::Elements(1));

    // The floor, in the same run: one flight-recorder event per write.
    let rec = Recorder::new(s.clone());
    let header = RunHeader {
        id: "floor".into(),
        agent: "coder".into(),
        task: "T-1".into(),
        scope: "org:acme".into(),
        clearance: "internal".into(),
        status: "running".into(),
        started_at: AT.into(),
        finished_at: None,
        parent_run: None,
        envelopes: vec![],
        metadata: json!({}),
    };
    must(
        rec.open_run(&header)
            .and_then(|_| rec.add_step("floor", "s", "coder")),
    );
    let mut n = 0u64;
    group.bench_function("recorder_event_per_write", |b| {
        b.iter(|| {
            n += 1;
            rec.append("floor", 0, EventKind::Note, AT, json!({"n": n}))
        })
    });

    must(append(&s, "case-one", 0, vec![opened("case-one")], AT));
    let mut version = 1i64;
    group.bench_function("one_event_per_append", |b| {
        b.iter(|| {
            version = must(append(
                &s,
                "case-one",
                version,
                vec![evidence(version as u64)],
                AT,
            ))
            .version;
        })
    });

    // Eight writers, each on its own case: their appends share the writer's commits.
    let cases: Vec<String> = (0..8).map(|t| format!("case-t{t}")).collect();
    for c in &cases {
        must(append(&s, c, 0, vec![opened(c)], AT));
    }
    group.throughput(Throughput::Elements(8 * 50));
    let mut versions = [1i64; 8];
    group.bench_function("8_threads_x_50_appends", |b| {
        b.iter(|| {
            std::thread::scope(|scope| {
                let handles: Vec<_> = cases
                    .iter()
                    .zip(versions.iter().copied())
                    .map(|(c, v0)| {
                        let s = s.clone();
                        scope.spawn(move || {
                            let mut v = v0;
                            for _ in 0..50 {
                                v = must(append(&s, c, v, vec![evidence(v as u64)], AT)).version;
                            }
                            v
                        })
                    })
                    .collect();
                for (slot, h) in versions.iter_mut().zip(handles) {
                    *slot = h.join().unwrap_or(*slot);
                }
            });
        })
    });

    must(append(&s, "case-batch", 0, vec![opened("case-batch")], AT));
    let mut bv = 1i64;
    group.throughput(Throughput::Elements(100));
    group.bench_function("100_events_per_append", |b| {
        b.iter(|| {
            let batch: Vec<NewEvent> = (0..100).map(|i| evidence(bv as u64 + i)).collect();
            bv = must(append(&s, "case-batch", bv, batch, AT)).version;
        })
    });
    group.finish();
    drop(s);
    let _ = std::fs::remove_dir_all(dir);
}

fn rebuild(c: &mut Criterion) {
    let (dir, s) = store("case-rebuild");
    let started = Instant::now();
    for k in 0..1000 {
        let id = format!("case-{k:04}");
        let mut events = vec![opened(&id)];
        events.extend(history(99));
        must(append(&s, &id, 0, events, AT));
    }
    eprintln!(
        "case_rebuild: 1,000 cases × 100 events = 100,000 events appended (100 per append) in {:?}",
        started.elapsed()
    );
    let mut group = c.benchmark_group(format!("case_projection ({})", support::engine()));
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(30));
    group.throughput(Throughput::Elements(100_000));
    group.bench_function("rebuild_100k_events", |b| {
        b.iter(|| {
            let r = must(project::rebuild(&s));
            assert_eq!(r.events, 100_000);
        })
    });
    group.throughput(Throughput::Elements(100));
    group.bench_function("replay_health_of_one_100_event_case", |b| {
        b.iter(|| must(s.read(|c| project::health_in(c, "case-0500"))))
    });
    group.finish();
    drop(s);
    let _ = std::fs::remove_dir_all(dir);
}

criterion_group!(benches, appends, rebuild);
criterion_main!(benches);
