use serde_json::json;

use super::format::{EventKind, EventRecord, RUN_FORMAT, RunFile, RunHeader, StepRecord};
use super::*;
use crate::store::tests::tempdir::Dir;

fn recorder() -> (Dir, Recorder) {
    let dir = Dir::new("recorder");
    let store = crate::store::tests::open_in(dir.path());
    (dir, Recorder::new(store))
}

fn header(id: &str) -> RunHeader {
    RunHeader {
        id: id.into(),
        agent: "coder".into(),
        task: "T-1".into(),
        scope: "org:acme/repo:api".into(),
        clearance: "internal".into(),
        status: "succeeded".into(),
        started_at: "2026-11-02T09:00:00Z".into(),
        finished_at: Some("2026-11-02T09:01:00Z".into()),
        parent_run: None,
        envelopes: vec![],
        metadata: json!({}),
    }
}

/// `len` characters of hex from a hash chain: LZ4 finds nothing to repeat in them.
fn incompressible(len: usize) -> String {
    let mut out = String::new();
    let mut h = blake3::hash(b"seed");
    while out.len() < len {
        h = blake3::hash(h.as_bytes());
        out.push_str(&h.to_hex());
    }
    out.truncate(len);
    out
}

fn sample(id: &str, events: usize) -> RunFile {
    RunFile {
        format: RUN_FORMAT.into(),
        run: header(id),
        steps: vec![
            StepRecord {
                index: 0,
                name: "read".into(),
                agent: "coder".into(),
            },
            StepRecord {
                index: 1,
                name: "fix".into(),
                agent: "coder".into(),
            },
        ],
        events: (0..events)
            .map(|i| EventRecord {
                seq: i as u64,
                step: (i * 2 / events.max(1)) as u32,
                kind: "note".into(),
                at: format!("2026-11-02T09:00:{:02}Z", i % 60),
                payload: match i {
                    // Large, and too random to compress below the limit: an artifact.
                    1 => json!({"text": incompressible(INLINE_PAYLOAD_LIMIT * 2)}),
                    // Large and repetitive: compressed in its row.
                    2 => json!({"text": "x".repeat(INLINE_PAYLOAD_LIMIT + 10)}),
                    _ => json!({"text": format!("note {i}")}),
                },
                prev: None,
                hash: None,
            })
            .collect(),
        envelope_sources: vec![],
    }
}

#[test]
fn import_export_round_trip_keeps_the_chain() {
    let (_d, rec) = recorder();
    let file = sample("run-1", 6);
    let summary = rec.import(&file).unwrap();
    assert_eq!((summary.steps, summary.events), (2, 6));
    let exported = rec.export("run-1").unwrap();
    assert_eq!(exported.run, file.run);
    assert_eq!(exported.events.len(), 6);
    for (a, b) in exported.events.iter().zip(&file.events) {
        assert_eq!((a.seq, &a.kind, &a.payload), (b.seq, &b.kind, &b.payload));
    }
    assert_eq!(
        exported.events[5].hash.as_deref(),
        Some(summary.head.as_str())
    );
    // An exported file (with hashes) imports into a fresh store with the same head.
    let (_d2, rec2) = recorder();
    assert_eq!(rec2.import(&exported).unwrap().head, summary.head);
    // Importing the same run again changes nothing.
    assert!(rec.import(&exported).unwrap().already_recorded);
    assert!(rec.verify("run-1").unwrap().is_intact());
}

#[test]
fn import_refuses_a_tampered_file_and_stores_nothing() {
    let (_d, rec) = recorder();
    let mut exported = {
        let (_d, r) = recorder();
        r.import(&sample("run-1", 4)).unwrap();
        r.export("run-1").unwrap()
    };
    exported.events[2].payload = json!({"text": "changed"});
    let err = rec.import(&exported).unwrap_err().to_string();
    assert!(
        err.contains("events[2] (seq 2)") && err.contains("edited"),
        "{err}"
    );
    assert!(rec.list().unwrap().is_empty());
}

#[test]
fn import_refuses_bad_files_with_where_and_how() {
    let (_d, rec) = recorder();
    let mut f = sample("run-1", 3);
    f.events[1].kind = "tool_cal".into();
    let err = rec.import(&f).unwrap_err().to_string();
    assert!(err.contains("unknown event kind `tool_cal`") && err.contains("tool_call"));
    let mut f = sample("run-1", 3);
    f.events[2].seq = 5;
    assert!(
        rec.import(&f)
            .unwrap_err()
            .to_string()
            .contains("expected seq 2")
    );
    let mut f = sample("bad id", 1);
    f.run.id = "bad id".into();
    assert!(rec.import(&f).unwrap_err().to_string().contains("run id"));
    let mut f = sample("run-1", 1);
    f.run.clearance = "top".into();
    assert!(
        rec.import(&f)
            .unwrap_err()
            .to_string()
            .contains("clearance")
    );
    assert!(rec.list().unwrap().is_empty());
}

#[test]
fn a_different_run_under_an_existing_id_is_refused() {
    let (_d, rec) = recorder();
    rec.import(&sample("run-1", 3)).unwrap();
    let err = rec.import(&sample("run-1", 4)).unwrap_err().to_string();
    assert!(err.contains("already recorded"), "{err}");
}

fn tamper(rec: &Recorder, sql: &'static str) {
    rec.store()
        .write(move |c| {
            c.execute_batch(sql)?;
            Ok(())
        })
        .unwrap();
}

fn problems(rec: &Recorder) -> Vec<(Option<u64>, String)> {
    rec.verify("run-1")
        .unwrap()
        .problems
        .into_iter()
        .map(|p| (p.seq, p.kind))
        .collect()
}

#[test]
fn verify_names_an_edited_event() {
    let (_d, rec) = recorder();
    rec.import(&sample("run-1", 6)).unwrap();
    tamper(
        &rec,
        r#"UPDATE events SET payload = '{"text":"forged"}' WHERE run_id = 'run-1' AND seq = 3"#,
    );
    assert_eq!(problems(&rec), [(Some(3), "edited".to_string())]);
}

#[test]
fn verify_names_an_edited_artifact_payload() {
    let (_d, rec) = recorder();
    rec.import(&sample("run-1", 6)).unwrap();
    rec.store()
        .write(|c| {
            c.execute(
                "UPDATE artifacts SET body = ?1",
                [br#"{"text":"y"}"#.to_vec()],
            )?;
            Ok(())
        })
        .unwrap();
    assert_eq!(problems(&rec), [(Some(1), "edited".to_string())]);
}

#[test]
fn large_payloads_are_compressed_in_their_row_or_else_artifacts_and_read_back_alike() {
    let (_d, rec) = recorder();
    let run = sample("run-1", 6);
    rec.import(&run).unwrap();
    let stored: Vec<(u64, bool, bool)> = rec
        .store()
        .read(|c| {
            let mut stmt = c.prepare(
                "SELECT seq, payload IS NULL AND payload_z IS NULL, payload_z IS NOT NULL
                 FROM events ORDER BY seq",
            )?;
            let rows =
                stmt.query_map((), |r| Ok((r.get::<i64>(0)? as u64, r.get(1)?, r.get(2)?)))?;
            rows.collect::<Result<_, _>>()
        })
        .unwrap();
    // seq 1: an artifact (both payload columns NULL); seq 2: compressed (in `payload_z`); the
    // others text.
    assert_eq!(stored[1], (1, true, false));
    assert_eq!(stored[2], (2, false, true));
    assert!(stored[3..].iter().all(|&(_, null, z)| !null && !z));
    let read = rec.export("run-1").unwrap();
    for (a, b) in run.events.iter().zip(&read.events) {
        assert_eq!(a.payload, b.payload, "event {}", a.seq);
    }
    assert!(rec.verify("run-1").unwrap().is_intact());
}

#[test]
fn verify_names_an_edited_compressed_payload() {
    let (_d, rec) = recorder();
    rec.import(&sample("run-1", 6)).unwrap();
    let forged = lz4_flex::compress_prepend_size(
        format!(r#"{{"text":"{}"}}"#, "y".repeat(INLINE_PAYLOAD_LIMIT + 10)).as_bytes(),
    );
    rec.store()
        .write(move |c| {
            c.execute(
                "UPDATE events SET payload_z = ?1 WHERE run_id = 'run-1' AND seq = 2",
                [forged],
            )?;
            Ok(())
        })
        .unwrap();
    assert_eq!(problems(&rec), [(Some(2), "edited".to_string())]);
    // Bytes that are not LZ4 at all read as an edit too, not as an error.
    rec.store()
        .write(|c| {
            c.execute(
                "UPDATE events SET payload_z = ?1 WHERE run_id = 'run-1' AND seq = 2",
                [vec![0x00u8, 0xFF, 0x00, 0xFF]],
            )?;
            Ok(())
        })
        .unwrap();
    assert_eq!(problems(&rec), [(Some(2), "edited".to_string())]);
}

#[test]
fn verify_detects_an_edit_with_rehashed_payload() {
    let (_d, rec) = recorder();
    rec.import(&sample("run-1", 6)).unwrap();
    // The forger also fixes the payload hash: the event hash still gives it away.
    let forged = json!({"text": "forged"});
    let hash = hash_json(&forged);
    let payload = canonical_json(&forged);
    rec.store()
        .write(move |c| {
            c.execute(
                "UPDATE events SET payload = ?1, payload_hash = ?2 WHERE run_id = 'run-1' AND seq = 4",
                crate::store::params![payload, hash],
            )?;
            Ok(())
        })
        .unwrap();
    assert_eq!(problems(&rec), [(Some(4), "edited".to_string())]);
}

#[test]
fn verify_detects_a_gap_and_a_truncated_tail() {
    let (_d, rec) = recorder();
    rec.import(&sample("run-1", 6)).unwrap();
    tamper(
        &rec,
        "DELETE FROM events WHERE run_id = 'run-1' AND seq = 2",
    );
    let found = problems(&rec);
    assert!(found.contains(&(Some(3), "gap".to_string())), "{found:?}");
    assert!(
        found.contains(&(Some(3), "chain_broken".to_string())),
        "{found:?}"
    );

    let (_d, rec) = recorder();
    rec.import(&sample("run-1", 6)).unwrap();
    tamper(
        &rec,
        "DELETE FROM events WHERE run_id = 'run-1' AND seq = 5",
    );
    assert_eq!(problems(&rec), [(None, "truncated".to_string())]);
}

#[test]
fn verify_detects_an_edited_header() {
    let (_d, rec) = recorder();
    rec.import(&sample("run-1", 3)).unwrap();
    tamper(
        &rec,
        "UPDATE runs SET scope = 'org:other' WHERE id = 'run-1'",
    );
    assert_eq!(problems(&rec), [(Some(0), "header_edited".to_string())]);
}

#[test]
fn live_appends_chain_like_an_import() {
    let (_d, rec) = recorder();
    let mut h = header("run-live");
    h.status = "running".into();
    h.finished_at = None;
    rec.open_run(&h).unwrap();
    let step = rec.add_step("run-live", "read", "coder").unwrap();
    for i in 0..3 {
        rec.append(
            "run-live",
            step,
            EventKind::Note,
            "2026-11-02T09:00:00Z",
            json!({"text": i}),
        )
        .unwrap();
    }
    rec.finish_run("run-live", "succeeded", "2026-11-02T09:01:00Z")
        .unwrap();
    assert!(rec.verify("run-live").unwrap().is_intact());
    let exported = rec.export("run-live").unwrap();
    let (_d2, rec2) = recorder();
    rec2.import(&exported).unwrap();
    assert!(rec2.verify("run-live").unwrap().is_intact());
    assert!(
        rec.append("run-live", 7, EventKind::Note, "t", json!({}))
            .unwrap_err()
            .to_string()
            .contains("no step 7")
    );
    assert!(
        rec.append("run-live", 0, EventKind::Note, "t", json!([1]))
            .unwrap_err()
            .to_string()
            .contains("JSON object")
    );
}

/// One append's events go to the store as multi-row `INSERT`s, 64 rows a statement: an append
/// of more, over two steps and with payloads of every size, chains as one event at a time
/// would, and one event naming a step the run lacks stores none of them.
#[test]
fn an_append_of_more_events_than_one_insert_takes_chains_like_single_appends() {
    let (_d, rec) = recorder();
    let (_d2, single) = recorder();
    let mut h = header("run-many");
    h.status = "running".into();
    h.finished_at = None;
    let events: Vec<(u32, EventKind, String, serde_json::Value)> = (0..150u32)
        .map(|i| {
            let payload = match i {
                1 => json!({"text": incompressible(INLINE_PAYLOAD_LIMIT * 2)}),
                2 => json!({"text": "x".repeat(INLINE_PAYLOAD_LIMIT + 10)}),
                _ => json!({"text": format!("note {i}")}),
            };
            (
                u32::from(i >= 70),
                EventKind::Note,
                format!("2026-11-02T09:00:{:02}Z", i % 60),
                payload,
            )
        })
        .collect();
    for r in [&rec, &single] {
        r.open_run(&h).unwrap();
        r.add_step("run-many", "read", "coder").unwrap();
        r.add_step("run-many", "fix", "coder").unwrap();
    }
    let mut wrong = events[..3].to_vec();
    wrong[2].0 = 9;
    let refused = rec.append_many("run-many", wrong).unwrap_err().to_string();
    assert!(refused.contains("no step 9"), "{refused}");
    assert!(
        rec.export("run-many").unwrap().events.is_empty(),
        "nothing of it stored"
    );

    let appended = rec.append_many("run-many", events.clone()).unwrap();
    for (step, kind, at, payload) in events {
        single.append("run-many", step, kind, &at, payload).unwrap();
    }
    let (many, one) = (
        rec.export("run-many").unwrap(),
        single.export("run-many").unwrap(),
    );
    assert_eq!(many.events.len(), 150);
    assert_eq!(many.events, one.events, "the same chain either way");
    assert_eq!(
        appended
            .iter()
            .map(|a| (a.seq, a.hash.clone()))
            .collect::<Vec<_>>(),
        many.events
            .iter()
            .map(|e| (e.seq, e.hash.clone().unwrap()))
            .collect::<Vec<_>>()
    );
    assert!(rec.verify("run-many").unwrap().is_intact());
    // Imported, the same 150 rows go in as they are read, 64 a statement.
    let (_d3, imported) = recorder();
    let file = rec.export("run-many").unwrap();
    assert_eq!(imported.import(&file).unwrap().events, 150);
    assert_eq!(imported.export("run-many").unwrap().events, many.events);
    assert!(imported.verify("run-many").unwrap().is_intact());
}

/// Several gateways on one database (issue 38): each store below is a process's, with its own
/// writer, and steps of one run reach all of them at once. Every append is stored, numbered
/// without a gap or a repeat, and the run's chain stays one line.
#[test]
fn appends_to_one_run_through_several_stores_keep_its_chain_linear() {
    let dir = Dir::new("recorder");
    let stores: Vec<Recorder> = (0..3)
        .map(|_| Recorder::new(crate::store::tests::open_in(dir.path())))
        .collect();
    let mut h = header("run-shared");
    h.status = "running".into();
    h.finished_at = None;
    stores[0].open_run(&h).unwrap();
    let step = stores[0].add_step("run-shared", "work", "coder").unwrap();
    const EACH: usize = 40;
    std::thread::scope(|threads| {
        for (g, rec) in stores.iter().enumerate() {
            for t in 0..2 {
                threads.spawn(move || {
                    for i in 0..EACH {
                        rec.append(
                            "run-shared",
                            step,
                            EventKind::Note,
                            "2026-11-02T09:00:00Z",
                            json!({"gateway": g, "thread": t, "i": i}),
                        )
                        .unwrap_or_else(|e| panic!("gateway {g}, thread {t}, append {i}: {e}"));
                    }
                });
            }
        }
    });
    for rec in &stores {
        let report = rec.verify("run-shared").unwrap();
        assert!(report.is_intact(), "{:?}", report.problems);
        assert_eq!(report.events, (stores.len() * 2 * EACH) as u64);
    }
}

#[test]
fn promoted_records_need_provenance_scope_ttl_and_sensitivity() {
    let (_d, rec) = recorder();
    rec.import(&sample("run-1", 4)).unwrap();
    let good = PromotedRecord {
        id: "memory:m-1".into(),
        kind: "memory".into(),
        body: json!({"text": "use cargo nextest"}),
        provenance: Some(Provenance {
            run: "run-1".into(),
            step: 0,
            event: 1,
        }),
        scope: "org:acme/repo:api".into(),
        ttl_seconds: Some(86_400),
        sensitivity: Some("internal".into()),
    };
    rec.promote(&good).unwrap();
    for (bad, expect) in [
        (
            PromotedRecord {
                provenance: None,
                ..good.clone()
            },
            "no provenance",
        ),
        (
            PromotedRecord {
                scope: " ".into(),
                ..good.clone()
            },
            "no scope",
        ),
        (
            PromotedRecord {
                ttl_seconds: None,
                ..good.clone()
            },
            "no TTL",
        ),
        (
            PromotedRecord {
                sensitivity: None,
                ..good.clone()
            },
            "no sensitivity",
        ),
        (
            PromotedRecord {
                id: "memory:m-2".into(),
                provenance: Some(Provenance {
                    run: "run-1".into(),
                    step: 0,
                    event: 99,
                }),
                ..good.clone()
            },
            "has no event 99",
        ),
        (good.clone(), "refused"),
    ] {
        let err = rec.promote(&bad).unwrap_err().to_string();
        assert!(err.contains(expect), "{expect}: {err}");
    }
}

#[test]
fn timeline_lists_every_event() {
    let (_d, rec) = recorder();
    rec.import(&sample("run-1", 4)).unwrap();
    let text = render_timeline(&rec.export("run-1").unwrap());
    assert!(text.starts_with("run run-1  [succeeded]"));
    assert!(text.contains("step 1 · coder · fix"));
    assert_eq!(text.matches("  note  ").count(), 4, "{text}");
}

/// Pages follow each other by key: every run once, newest first (ties on the start time by
/// id), filters applied on every page, and the last page says there is no next one.
#[test]
fn runs_page_by_key_newest_first_with_filters() {
    let (_d, rec) = recorder();
    for i in 0..7 {
        let mut h = header(&format!("run-{i}"));
        // Two runs share each start time; odd ones belong to another agent.
        h.started_at = format!("2026-11-02T09:0{}:00Z", i / 2);
        if i % 2 == 1 {
            h.agent = "reviewer".into();
            h.status = "failed".into();
        }
        if i >= 5 {
            h.task = "T-2".into();
        }
        rec.open_run(&h).unwrap();
    }
    let mut seen = Vec::new();
    let mut filter = RunFilter::default();
    loop {
        let page = rec.page(&filter, 3).unwrap();
        assert!(page.runs.len() <= 3);
        seen.extend(page.runs.iter().map(|r| r.id.clone()));
        match page.next {
            Some(next) => filter.after = Some(next),
            None => break,
        }
    }
    assert_eq!(
        seen,
        [
            "run-6", "run-5", "run-4", "run-3", "run-2", "run-1", "run-0"
        ]
    );
    let only = |agent: Option<&str>, status: Option<&str>| {
        let filter = RunFilter {
            agent: agent.map(str::to_string),
            status: status.map(str::to_string),
            ..RunFilter::default()
        };
        let ids: Vec<String> = rec
            .page(&filter, 10)
            .unwrap()
            .runs
            .into_iter()
            .map(|r| r.id)
            .collect();
        ids
    };
    assert_eq!(only(Some("reviewer"), None), ["run-5", "run-3", "run-1"]);
    assert_eq!(only(None, Some("failed")), ["run-5", "run-3", "run-1"]);
    assert_eq!(only(Some("coder"), Some("failed")), Vec::<String>::new());
    // By task, and by start time (at or after; the times compare as the runs record them).
    let ids = |filter: RunFilter| -> Vec<String> {
        let page = rec.page(&filter, 10).unwrap();
        page.runs.into_iter().map(|r| r.id).collect()
    };
    let task = |t: &str| RunFilter {
        task: Some(t.into()),
        ..RunFilter::default()
    };
    assert_eq!(ids(task("T-2")), ["run-6", "run-5"]);
    assert_eq!(ids(task("T-9")), Vec::<String>::new());
    let since = RunFilter {
        since: Some("2026-11-02T09:02:00Z".into()),
        ..RunFilter::default()
    };
    assert_eq!(ids(since.clone()), ["run-6", "run-5", "run-4"]);
    let both = RunFilter {
        agent: Some("coder".into()),
        ..since
    };
    assert_eq!(ids(both), ["run-6", "run-4"]);
    let last = rec.page(&RunFilter::default(), 7).unwrap();
    assert_eq!((last.runs.len(), last.next), (7, None));
}

#[test]
fn appending_at_the_current_step_adds_a_first_step_and_refuses_a_finished_run() {
    let (_d, rec) = recorder();
    let mut h = header("run-async");
    h.status = "running".into();
    h.finished_at = None;
    rec.open_run(&h).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let append = |payload: serde_json::Value| {
        rt.block_on(rec.append_at_current_step(
            "run-async",
            "coder",
            EventKind::ToolResult,
            "2026-11-02T09:00:00Z".into(),
            payload,
        ))
    };
    // A run with no step gets `main`, by the agent named.
    let first = append(json!({"call_id": "c1", "status": "ok"})).unwrap();
    assert_eq!(first.seq, 0);
    let steps = rec.export("run-async").unwrap().steps;
    assert_eq!((steps.len(), steps[0].name.as_str()), (1, "main"));
    assert_eq!(steps[0].agent, "coder");
    // Later events go to the last step.
    let later = rec.add_step("run-async", "write", "coder").unwrap();
    append(json!({"call_id": "c2", "status": "ok"})).unwrap();
    let exported = rec.export("run-async").unwrap();
    assert_eq!(exported.events.last().unwrap().step, later);
    assert!(
        append(json!(["not an object"]))
            .unwrap_err()
            .to_string()
            .contains("JSON object")
    );
    rec.finish_run("run-async", "succeeded", "2026-11-02T09:01:00Z")
        .unwrap();
    let refused = append(json!({"call_id": "c3"})).unwrap_err().to_string();
    assert!(refused.contains("succeeded"), "{refused}");
    assert_eq!(rec.export("run-async").unwrap().events.len(), 2);
    assert!(rec.verify("run-async").unwrap().is_intact());
}

/// A run's user (`metadata.user`, when it is text) is kept as a column memory search narrows
/// by; any other value of it is no user.
#[test]
fn a_run_s_text_user_is_kept_as_its_user_column() {
    let (_d, rec) = recorder();
    for (id, metadata) in [
        ("r-alice", json!({"user": "alice", "team": "x"})),
        ("r-number", json!({"user": 7})),
        ("r-none", json!({})),
    ] {
        let mut h = header(id);
        h.metadata = metadata;
        rec.open_run(&h).unwrap();
    }
    let users: Vec<(String, Option<String>)> = rec
        .store()
        .read(|c| {
            let mut stmt = c.prepare("SELECT id, user_id FROM runs ORDER BY id")?;
            let rows = stmt.query_map((), |r| Ok((r.get(0)?, r.get(1)?)))?;
            rows.collect()
        })
        .unwrap();
    assert_eq!(
        users,
        vec![
            ("r-alice".to_string(), Some("alice".to_string())),
            ("r-none".to_string(), None),
            ("r-number".to_string(), None),
        ]
    );
}
