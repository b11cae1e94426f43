//! The overview over a real store: the counters kept as decisions are recorded equal what a
//! recount of the events finds, the plots' sums equal the runs' counts, and a bar's receipts
//! are the decisions it counts.

use serde_json::json;
use tollgate_rules::decide::DecisionEffect;

use super::*;
use crate::clock::ManualClock;
use crate::recorder::format::RunFile;
use crate::runtime::tests::{START_MS, call, open, runtime};
use crate::store::tests::tempdir::Dir;

/// Every row of every decision counter table, as text, in key order.
fn counters(store: &Store) -> Vec<String> {
    let mut all = Vec::new();
    for table in crate::recorder::buckets::DECISION_TABLES {
        let rows: Vec<String> = store
            .read(move |c| {
                let mut stmt = c.prepare(&format!("SELECT * FROM {table}"))?;
                let width = stmt.column_count();
                let rows = stmt.query_map((), |r| {
                    let mut cells = vec![table.to_string()];
                    for i in 0..width {
                        cells.push(match r.get::<i64>(i) {
                            Ok(n) => n.to_string(),
                            Err(_) => r.get::<String>(i)?,
                        });
                    }
                    Ok(cells.join(" | "))
                })?;
                rows.collect()
            })
            .unwrap();
        all.extend(rows);
    }
    // Sorted here: an `ORDER BY` of some columns leaves ties to the engine.
    all.sort();
    all
}

fn window(since: i64, until: i64) -> Window {
    Window {
        since,
        until,
        agent: None,
        task: None,
    }
}

#[test]
fn the_counters_kept_while_recording_equal_a_recount_and_the_runs_counts() {
    let dir = Dir::new("overview");
    let clock = ManualClock::new(START_MS);
    let rt = runtime(&dir, &clock);
    open(&rt, "r1");
    let mut answered = crate::recorder::DecisionCounts::default();
    for (tool, args) in [
        ("fs.read_file", json!({"path": "a"})),
        ("net.http_get", json!({"url": "https://example.com"})),
        ("shell.exec", json!({"cmd": "rm -rf /"})),
        (
            "fs.read_file",
            json!({"path": "AWS_KEY=AKIAPYDATUTGFKRXITKP"}),
        ),
    ] {
        answered.add(rt.tool_call("r1", call(tool, args)).unwrap().effect);
        clock.advance(std::time::Duration::from_secs(400));
    }
    // A chat call: its decisions are counted, and the model's round trip timed.
    rt.chat(
        "r1",
        crate::providers::ChatRequest {
            model: "gpt-4.1-mini".into(),
            messages: vec![crate::providers::ChatMessage::new("user", "hello")],
            ..Default::default()
        },
    )
    .unwrap();
    let tools_answered = answered;
    let answered = rt.recorder().summary("r1").unwrap().decisions;
    assert!(answered.total() > tools_answered.total());
    // A run imported from a file counts from its JSON, at its own times.
    let file: RunFile = serde_json::from_str(
        &std::fs::read_to_string(format!(
            "{}/../fixtures/runs/04-forbidden-tool-pool-exhaustion.json",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap(),
    )
    .unwrap();
    rt.recorder().import(&file).unwrap();

    let kept = counters(rt.store());
    assert!(!kept.is_empty());
    let counted = rt.recorder().recount_buckets().unwrap();
    assert_eq!(
        counters(rt.store()),
        kept,
        "the typed hot path and the events agree"
    );
    let runs = rt.recorder().list().unwrap();
    let mut all = crate::recorder::DecisionCounts::default();
    for r in &runs {
        all += r.decisions;
    }
    assert_eq!(counted, all.total());
    // Every decision of r1 is counted under its task.
    let r1: u64 = kept
        .iter()
        .filter(|row| row.starts_with("decision_task_buckets | T-12 |"))
        .map(|row| row.rsplit(" | ").next().unwrap().parse::<u64>().unwrap())
        .sum();
    assert_eq!(r1, answered.total());
    // The timings are not in the record: a recount leaves them.
    let timings = |store: &Store| -> i64 {
        store
            .read(|c| {
                c.query_row(
                    "SELECT CAST(COALESCE(SUM(n), 0) AS BIGINT) FROM latency_buckets",
                    (),
                    |r| r.get(0),
                )
            })
            .unwrap()
    };
    assert_eq!(
        timings(rt.store()),
        i64::try_from(tools_answered.total()).unwrap() + 1
    );

    // The overview of the window around r1 sums to r1's decisions, in bars of five minutes.
    let now = START_MS / 1000;
    let ov = read(rt.store(), &window(now - 60, now + 1_800), START_MS).unwrap();
    assert_eq!(ov.totals, answered);
    assert_eq!(ov.step_secs, 300);
    let summed = ov
        .decisions
        .iter()
        .fold(Default::default(), |mut sum: DecisionCounts, b| {
            sum += b.counts;
            sum
        });
    assert_eq!(summed, answered);
    let not_allowed = tools_answered.total() - tools_answered.allow;
    assert!(
        not_allowed > 0 && tools_answered.deny > 0,
        "{tools_answered:?}"
    );
    let by_tool: u64 = ov.tools.iter().map(|r| r.n).sum();
    assert_eq!(by_tool, not_allowed, "{:?}", ov.tools);
    // Every tool call and the chat call were timed, in the bars they were made in.
    let timed = |pick: fn(&LatencyBar) -> Option<Percentiles>| -> u64 {
        ov.latency.iter().filter_map(pick).map(|p| p.count).sum()
    };
    assert_eq!(timed(|b| b.tool_call), tools_answered.total());
    assert_eq!(timed(|b| b.chat), 1);
    assert!(
        ov.latency
            .iter()
            .filter_map(|b| b.tool_call)
            .all(|p| p.p50_us <= p.p99_us)
    );
    // Filtered to another agent or task, nothing; to r1's task, the same counts and reasons.
    let mut other = window(now - 60, now + 1_800);
    other.agent = Some("nobody".into());
    assert_eq!(
        read(rt.store(), &other, START_MS).unwrap().totals.total(),
        0
    );
    let mut other = window(now - 60, now + 1_800);
    other.task = Some("T-nobody".into());
    assert_eq!(
        read(rt.store(), &other, START_MS).unwrap().totals.total(),
        0
    );
    let mut task = window(now - 60, now + 1_800);
    task.task = Some("T-12".into());
    task.agent = Some("coder".into());
    let by_task = read(rt.store(), &task, START_MS).unwrap();
    assert_eq!(by_task.totals, answered);
    assert_eq!((&by_task.rules, &by_task.tools), (&ov.rules, &ov.tools));
    assert!(
        by_task.latency.iter().all(|b| b.tool_call.is_none()),
        "latency is not kept by task"
    );

    // The imported run's decisions are in its own day.
    let since = crate::clock::parse_rfc3339(&file.run.started_at).unwrap() as i64;
    let ov = read(rt.store(), &window(since - 60, since + 3_600), START_MS).unwrap();
    let imported = runs.iter().find(|r| r.id == file.run.id).unwrap();
    assert_eq!(ov.totals, imported.decisions);

    // The receipts behind the denials of r1's window are r1's denials, each with its tool.
    let deny = Drill {
        effect: Some(DecisionEffect::Deny),
        ..Drill::default()
    };
    let (rows, more) = drill(&rt, &window(now - 60, now + 1_800), &deny, 50).unwrap();
    assert!(!more);
    assert_eq!(rows.len() as u64, tools_answered.deny);
    assert!(
        rows.iter().all(|r| r.run == "r1" && r.tool.is_some()),
        "{rows:?}"
    );
    if let Some(first) = rows.first() {
        let by_tool = Drill {
            tool: first.tool.clone(),
            ..deny.clone()
        };
        let (same, _) = drill(&rt, &window(now - 60, now + 1_800), &by_tool, 50).unwrap();
        assert!(same.iter().all(|r| r.tool == first.tool) && !same.is_empty());
    }
}

#[test]
fn a_window_is_cut_in_at_most_48_bars_of_a_round_width() {
    for (span, step) in [
        (3_600, 300),
        (86_400, 1_800),
        (7 * 86_400, 6 * 3_600),
        (30 * 86_400, 86_400),
        (366 * 86_400, 7 * 86_400),
    ] {
        assert_eq!(window(0, span).step(), step, "span {span}");
    }
}

#[test]
fn the_memories_compiles_used_are_counted_by_class_in_their_window() {
    let dir = Dir::new("overview-memory");
    let clock = ManualClock::new(START_MS);
    let rt = runtime(&dir, &clock);
    open(&rt, "r1");
    let file: RunFile = serde_json::from_str(
        &std::fs::read_to_string(format!(
            "{}/../fixtures/runs/01-bugfix-users-404.json",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap(),
    )
    .unwrap();
    rt.recorder().import(&file).unwrap();
    crate::memory::distill_run(rt.recorder(), &file.run.id, START_MS, &mut |_, _, _| {}).unwrap();
    let memories: Vec<(String, String)> = rt
        .store()
        .read(|c| {
            let mut stmt = c.prepare("SELECT id, class FROM memories ORDER BY id")?;
            let rows = stmt.query_map((), |r| Ok((r.get(0)?, r.get(1)?)))?;
            rows.collect()
        })
        .unwrap();
    assert!(!memories.is_empty());
    let (id, class) = memories[0].clone();
    // Used by two compiles of r1 now, and by one of the imported run long before.
    let now = START_MS / 1000;
    let at = crate::clock::rfc3339(u64::try_from(now).unwrap());
    let (id2, at2) = (id.clone(), at.clone());
    rt.store()
        .write(move |c| {
            crate::memory::link_in(c, &id2, "r1", 0, "test", &at2)?;
            crate::memory::link_in(c, &id2, "r1", 1, "test", &at2)?;
            crate::memory::link_in(c, &id2, &file.run.id, 0, "test", &file.run.started_at)
        })
        .unwrap();
    let ov = read(rt.store(), &window(now - 60, now + 60), START_MS).unwrap();
    assert_eq!(ov.memories_used, vec![Count { name: class, n: 2 }]);
    let listed: u64 = ov.memories.iter().map(|c| c.n).sum();
    assert_eq!(listed, memories.len() as u64);
}
