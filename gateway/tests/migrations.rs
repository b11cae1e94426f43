//! Every migration goes up, down and up again on a populated database: the schema comes back
//! identical, and the data of the tables older migrations own survives each round trip.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;

use serde_json::json;
use tollgate_gateway::recorder::Recorder;
use tollgate_gateway::recorder::format::{EventRecord, RUN_FORMAT, RunFile, RunHeader, StepRecord};
use tollgate_gateway::store::{Connection, SqlValue};
use tollgate_gateway::store::{Store, StoreError, StoreLocation, migrations};

type Schema = BTreeMap<String, String>;
/// Each table's column names and rows (each cell rendered).
type Data = BTreeMap<String, (Vec<String>, Vec<Vec<String>>)>;

/// A table's rows with only the columns `columns` (those a table had before a migration
/// added some to it).
fn project(table: &(Vec<String>, Vec<Vec<String>>), columns: &[String]) -> Vec<Vec<String>> {
    let at: Vec<usize> = columns
        .iter()
        .map(|c| {
            table
                .0
                .iter()
                .position(|t| t == c)
                .expect("a column of the table")
        })
        .collect();
    table
        .1
        .iter()
        .map(|row| at.iter().map(|&i| row[i].clone()).collect())
        .collect()
}

fn schema(c: &Connection) -> Result<Schema, StoreError> {
    let mut stmt = c.prepare(
        "SELECT name, sql FROM sqlite_master WHERE sql IS NOT NULL AND name <> 'tollgate_migrations'",
    )?;
    let rows = stmt.query_map((), |r| Ok((r.get(0)?, r.get(1)?)))?;
    rows.collect::<Result<_, _>>()
}

fn data(c: &Connection) -> Result<Data, StoreError> {
    let tables: Vec<String> = {
        let mut stmt = c.prepare(
            // FTS5's shadow tables are its index's internals: the full-text table itself is
            // compared, as any other.
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name <> 'tollgate_migrations'
               AND name NOT GLOB '*_fts_*'",
        )?;
        stmt.query_map((), |r| r.get(0))?
            .collect::<Result<_, _>>()?
    };
    let mut out = Data::new();
    for t in tables {
        let mut stmt = c.prepare(&format!("SELECT * FROM {t} ORDER BY rowid"))?;
        let n = stmt.column_count();
        let columns: Vec<String> = stmt.column_names();
        let rows = stmt.query_map((), |r| {
            let mut cells = Vec::with_capacity(n);
            for i in 0..n {
                cells.push(format!("{:?}", r.value(i)?));
            }
            Ok(cells)
        })?;
        out.insert(t, (columns, rows.collect::<Result<_, _>>()?));
    }
    Ok(out)
}

/// Which migration created each table (by applying them one at a time).
fn owners(path: &std::path::Path) -> BTreeMap<String, u32> {
    let store = Store::open_unmigrated(&StoreLocation::file(path)).unwrap();
    let mut owner = BTreeMap::new();
    for m in migrations() {
        store
            .write(move |c| {
                c.execute_batch(m.up)?;
                Ok(())
            })
            .unwrap();
        for table in store.read(data).unwrap().into_keys() {
            owner.entry(table).or_insert(m.version);
        }
    }
    owner
}

fn populate(store: &Store) {
    let recorder = Recorder::new(store.clone());
    recorder
        .import(&RunFile {
            format: RUN_FORMAT.into(),
            run: RunHeader {
                id: "run-m".into(),
                agent: "coder".into(),
                task: "T-1".into(),
                scope: "org:acme".into(),
                clearance: "internal".into(),
                status: "succeeded".into(),
                started_at: "2026-11-02T09:00:00Z".into(),
                finished_at: None,
                parent_run: None,
                envelopes: vec![],
                metadata: json!({"k": "v"}),
            },
            steps: vec![StepRecord {
                index: 0,
                name: "s".into(),
                agent: "coder".into(),
            }],
            events: (0..3)
                .map(|i| EventRecord {
                    seq: i,
                    step: 0,
                    kind: "note".into(),
                    at: "2026-11-02T09:00:00Z".into(),
                    payload: json!({"text": "x".repeat(if i == 1 { 5000 } else { 3 })}),
                    prev: None,
                    hash: None,
                })
                .collect(),
            envelope_sources: vec![],
        })
        .unwrap();
    store
        .write(|c| {
            c.execute(
                "INSERT INTO promoted_records (id, kind, body, source_run, source_step, source_event,
                    scope, ttl_seconds, sensitivity, created_at)
                 VALUES ('memory:m', 'memory', '{}', 'run-m', 0, 1, 'org:acme', 60, 'internal', 't')",
                (),
            )?;
            for (id, class, text) in [
                ("mem-b", "warning", "never force-push to main"),
                ("mem-a", "fact", "the api crate builds with cargo"),
            ] {
                c.execute(
                    "INSERT INTO memories (id, class, text, norm, scope, sensitivity, status,
                        pinned, ttl_seconds, expires_at, strength, usage_count, score, extractor,
                        created_at, updated_at)
                     VALUES (?1, ?2, ?3, ?3, 'org:acme', 'internal', 'approved', 0, 0, 0, 1, 0,
                        '{}', 'test', 't', 't')",
                    tollgate_gateway::store::params![id, class, text],
                )?;
            }
            c.execute(
                "INSERT INTO approvals (id, run_id, call_id, tool, arguments, call_hash, envelopes,
                    rules, approvers, state, requested_at, expires_at)
                 VALUES ('apr-1', 'run-m', 'c1', 'shell.exec', '{}', 'h', 'e@1', 'e/r', '',
                    'pending', 1, 2)",
                (),
            )?;
            c.execute(
                "INSERT INTO tool_usage (rule_id, per_kind, per_id, run_id, call_id, at)
                 VALUES ('e/limit', 'run', 'run-m', 'run-m', 'c1', 1)",
                (),
            )?;
            Ok(())
        })
        .unwrap();
}

/// Migrations whose down step rewrites rows of an older table into the layout the builds before
/// them read: the rows change, what they hold does not. For these, the table is compared as its
/// reader reads it (the run exported and its chain verified; the memory index searched), not
/// row by row.
const RELAYOUT: &[(u32, &str)] = &[(14, "events"), (15, "memories_fts"), (22, "events")];

/// The oldest version whose layout this build's recorder reads (22 moved compressed payloads to
/// a column of their own). Below it, a run is compared as [`events_as_laid_out`] reads it.
const RECORDER_READS_FROM: u32 = 22;

/// Every event of `run-m` (seq, hash, payload text) in the layout of the store's version: the
/// text inline, compressed (in `payload` from 14, in `payload_z` from 22) or an artifact.
fn events_as_laid_out(store: &Store) -> Vec<(i64, String, String)> {
    let version = store.migration_status().unwrap().current;
    let packed = if version >= 22 { "e.payload_z" } else { "NULL" };
    let sql = format!(
        "SELECT e.seq, e.hash, e.payload, {packed}, a.body FROM events e
         LEFT JOIN artifacts a ON a.hash = e.payload_hash
         WHERE e.run_id = 'run-m' ORDER BY e.seq"
    );
    store
        .read(move |c| {
            let mut stmt = c.prepare(&sql)?;
            let rows = stmt.query_map((), |r| {
                let unpack =
                    |z: &[u8]| String::from_utf8(lz4_flex::decompress_size_prepended(z).unwrap());
                let text = match (r.value(2)?, r.get::<Option<Vec<u8>>>(3)?) {
                    (SqlValue::Text(t), _) => t.to_string(),
                    (SqlValue::Blob(z), _) => unpack(z).unwrap(),
                    (_, Some(z)) => unpack(&z).unwrap(),
                    _ => String::from_utf8(r.get::<Vec<u8>>(4)?).unwrap(),
                };
                Ok((r.get(0)?, r.get(1)?, text))
            })?;
            rows.collect()
        })
        .unwrap()
}

/// The memories the full-text index finds saying `force` at scope `org:acme`, in the layout of
/// the store's version: before 15 a word and a scope token, from 15 one term for both.
fn indexed_saying_force(store: &Store) -> Vec<String> {
    let version = store.migration_status().unwrap().current;
    let expr = if version >= 15 {
        "\"s6f72673a61636d65wforce\"".to_string()
    } else {
        "norm: force AND scope_token: s6f72673a61636d65".to_string()
    };
    store
        .read(move |c| {
            let mut stmt = c.prepare(
                "SELECT m.id FROM memories_fts JOIN memories m ON m.fts_rowid = memories_fts.rowid
                 WHERE memories_fts MATCH ?1 ORDER BY m.id",
            )?;
            let found = stmt.query_map([&expr], |r| r.get(0))?;
            found.collect::<Result<Vec<String>, _>>()
        })
        .unwrap()
}

/// Whether going below `v` (which reverts every migration from `v` up) relays `table`.
fn relaid(v: u32, table: &str) -> bool {
    RELAYOUT.iter().any(|&(m, t)| m >= v && t == table)
}

#[test]
fn every_migration_round_trips_on_a_populated_database() {
    let dir = std::env::temp_dir().join(format!("tollgate-migrations-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let owner = owners(&dir.join("owners.db"));

    let latest = migrations().len() as u32;
    assert!(latest >= 1);
    // A fresh populated database for each migration: take it down below `v`, then up again.
    for v in (1..=latest).rev() {
        let store = Store::open(&StoreLocation::file(dir.join(format!("t{v}.db")))).unwrap();
        populate(&store);
        let full_schema = store.read(schema).unwrap();
        let full_data = store.read(data).unwrap();
        let recorder = Recorder::new(store.clone());
        let full_run = recorder.export("run-m").unwrap();
        let full_events = events_as_laid_out(&store);
        store.downgrade(Some(v - 1)).unwrap();
        if v > 9 {
            assert_eq!(
                indexed_saying_force(&store),
                ["mem-b"],
                "going down to {}",
                v - 1
            );
        }
        // Below 1 there are no runs to read.
        if v > RECORDER_READS_FROM {
            let down_run = recorder.export("run-m").unwrap();
            assert_eq!(down_run, full_run, "going down to {}", v - 1);
            assert!(recorder.verify("run-m").unwrap().is_intact());
        } else if v > 1 {
            assert_eq!(
                events_as_laid_out(&store),
                full_events,
                "going down to {}",
                v - 1
            );
        }
        assert_eq!(store.migration_status().unwrap().current, v - 1);
        // What a down leaves is exactly what the migrations below it create: `db check` finds
        // nothing missing or changed.
        assert_eq!(
            store.schema_drift().unwrap(),
            Default::default(),
            "going down to {}",
            v - 1
        );
        let down_data = store.read(data).unwrap();
        for (table, rows) in &full_data {
            match owner.get(table) {
                // A table older than `v` keeps its rows, in the columns it had before `v`.
                Some(&o) if o < v && relaid(v, table) => {}
                Some(&o) if o < v => {
                    let down = down_data.get(table).expect("the table survives");
                    assert_eq!(
                        down.1,
                        project(rows, &down.0),
                        "{table} lost data going down to {}",
                        v - 1
                    )
                }
                _ => assert!(
                    !down_data.contains_key(table),
                    "{table} survived the down of its migration"
                ),
            }
        }
        store.upgrade().unwrap();
        assert!(store.migration_status().unwrap().is_current());
        assert_eq!(store.schema_drift().unwrap(), Default::default());
        // Going below 8 drops the memories with their table.
        if v > 8 {
            assert_eq!(
                indexed_saying_force(&store),
                ["mem-b"],
                "after {v} down and up"
            );
        }
        assert_eq!(
            store.read(schema).unwrap(),
            full_schema,
            "schema differs after {v} down and up"
        );
        if v > 1 {
            let up_run = recorder.export("run-m").unwrap();
            assert_eq!(up_run, full_run, "after {v} down and up");
        }
        let up_data = store.read(data).unwrap();
        for (table, rows) in &full_data {
            if owner.get(table).is_some_and(|&o| o < v) && !relaid(v, table) {
                assert_eq!(
                    up_data.get(table),
                    Some(rows),
                    "{table} changed across {v} down and up"
                );
            }
        }
    }
    let store = Store::open(&StoreLocation::file(dir.join("t1.db"))).unwrap();
    // All the way down leaves nothing but the bookkeeping table.
    store.downgrade(Some(0)).unwrap();
    assert!(store.read(schema).unwrap().is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}

/// A fixture run governed by `org-baseline@1` and `coding-agent@2`.
fn fixture_run() -> RunFile {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../fixtures/runs/01-bugfix-users-404.json"
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn linked(recorder: &Recorder, run: &str) -> Vec<String> {
    recorder
        .envelope_sources(run)
        .unwrap()
        .iter()
        .map(|s| format!("{}@{}", s.id, s.version))
        .collect()
}

#[test]
fn a_store_made_before_runs_linked_several_versions_of_an_envelope_upgrades_and_reads_its_runs() {
    let dir = std::env::temp_dir().join(format!("tollgate-migrations-0004-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let location = StoreLocation::file(dir.join("old.db"));
    // The store as the build before migration 4 left it: a run imported, then migrations 4
    // and later taken down (their tables and columns dropped, the run kept).
    let store = Store::open(&location).unwrap();
    let recorder = Recorder::new(store.clone());
    let file = fixture_run();
    recorder.import(&file).unwrap();
    let before = recorder.export(&file.run.id).unwrap();
    store.downgrade(Some(3)).unwrap();
    assert_eq!(store.migration_status().unwrap().current, 3);
    drop((recorder, store));

    let store = Store::open(&location).unwrap();
    assert!(store.migration_status().unwrap().is_current());
    let recorder = Recorder::new(store.clone());
    assert_eq!(recorder.export(&file.run.id).unwrap(), before);
    assert!(recorder.verify(&file.run.id).unwrap().is_intact());
    let report = tollgate_gateway::replay::replay_exact(&recorder, &file.run.id).unwrap();
    assert!(!report.drifted(), "{}", report.to_text());

    // The upgraded store holds a run that used two versions of one envelope...
    let mut spanning = fixture_run();
    spanning.run.id = "run-spanning".into();
    let v2 = spanning
        .envelope_sources
        .iter()
        .find(|s| s.id == "coding-agent")
        .unwrap()
        .clone();
    let mut v3 = v2.clone();
    v3.version = 3;
    v3.yaml = v3.yaml.replace("version: 2", "version: 3");
    spanning.envelope_sources.push(v3);
    recorder.import(&spanning).unwrap();
    assert_eq!(
        linked(&recorder, "run-spanning"),
        ["coding-agent@2", "coding-agent@3", "org-baseline@1"]
    );
    // ...and going down keeps the version each run opened with.
    store.downgrade(Some(3)).unwrap();
    assert_eq!(
        linked(&recorder, "run-spanning"),
        ["coding-agent@2", "org-baseline@1"]
    );
    store.upgrade().unwrap();
    assert_eq!(recorder.export(&file.run.id).unwrap(), before);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Every fixture run file.
fn fixture_runs() -> Vec<RunFile> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../fixtures/runs");
    let mut paths: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    paths.sort();
    paths
        .iter()
        .map(|p| serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap())
        .collect()
}

#[test]
fn runs_recorded_before_decision_counts_are_counted_by_the_upgrade_as_a_new_import_counts_them() {
    let dir = std::env::temp_dir().join(format!("tollgate-migrations-0006-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let runs = fixture_runs();

    // Counted by the recorder as it imports (the Rust path).
    let fresh = Recorder::new(Store::open(&StoreLocation::file(dir.join("new.db"))).unwrap());
    for run in &runs {
        fresh.import(run).unwrap();
    }
    let counted = fresh.list().unwrap();
    assert!(
        counted.iter().all(|r| r.decisions.total() > 0),
        "every fixture run records decisions"
    );

    // Taken below migration 6 (the counts dropped, the events kept) and up again: the
    // migration's SQL counts the recorded events (large payloads are artifacts) alike.
    let store = Store::open(&StoreLocation::file(dir.join("new.db"))).unwrap();
    store.downgrade(Some(5)).unwrap();
    store.upgrade().unwrap();
    assert_eq!(Recorder::new(store).list().unwrap(), counted);
    let _ = std::fs::remove_dir_all(&dir);
}
