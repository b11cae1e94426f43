use super::*;

/// A store for a test in its own throwaway directory (removed when the `Dir` drops).
pub(crate) fn temp_store() -> (tempdir::Dir, Store) {
    let dir = tempdir::Dir::new("store");
    let store = open_in(dir.path());
    (dir, store)
}

/// An SQLite store, whatever engine the tests run on: for the tests of what only SQLite has.
pub(crate) fn sqlite_temp_store() -> (tempdir::Dir, Store) {
    let dir = tempdir::Dir::new("store");
    let store = Store::open(&sqlite_location_in(dir.path())).expect("open a test store");
    (dir, store)
}

/// The one place unit tests open a store, migrated. Every store a test makes comes from here,
/// so the engine the tests run on is chosen in one place: `TOLLGATE_TEST_ENGINE=postgres`
/// gives each store a schema of its own in the database at `TOLLGATE_TEST_POSTGRES_URL`;
/// otherwise (or `sqlite`) it is the file `t.db` under `dir`.
pub(crate) fn open_in(dir: &std::path::Path) -> Store {
    Store::open(&location_in(dir)).expect("open a test store")
}

/// Where [`open_in`] opens its store.
pub(crate) fn location_in(dir: &std::path::Path) -> StoreLocation {
    match std::env::var("TOLLGATE_TEST_ENGINE").as_deref() {
        // The schema made for `dir` is named in `dir/t.pg`: a store opened there again (a
        // restart) finds the same data, as it would the same SQLite file.
        Ok("postgres") => {
            let named = dir.join("t.pg");
            match std::fs::read_to_string(&named) {
                Ok(url) => StoreLocation::postgres(url),
                Err(_) => {
                    let location = postgres_schema();
                    if let StoreLocation::Postgres(url) = &location {
                        std::fs::write(&named, url).expect("name the test schema");
                    }
                    location
                }
            }
        }
        Ok("sqlite") | Err(_) => sqlite_location_in(dir),
        Ok(other) => panic!("TOLLGATE_TEST_ENGINE is `{other}`: use `sqlite` or `postgres`"),
    }
}

/// An SQLite store under `dir`, whatever the engine the tests run on: for the tests of what
/// only SQLite has (its write-ahead log, checkpoints, file permissions, query plans).
pub(crate) fn sqlite_location_in(dir: &std::path::Path) -> StoreLocation {
    StoreLocation::file(dir.join("t.db"))
}

/// A fresh, empty schema in the test database, as a location whose connections use it.
pub(crate) fn postgres_schema() -> StoreLocation {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static N: AtomicUsize = AtomicUsize::new(0);
    let url = std::env::var("TOLLGATE_TEST_POSTGRES_URL").expect(
        "TOLLGATE_TEST_ENGINE=postgres needs TOLLGATE_TEST_POSTGRES_URL (scripts/pg-throwaway)",
    );
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let schema = format!(
        "t_{}_{}_{nanos}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    );
    let admin = Connection::postgres(&url).expect("connect to the test database");
    admin
        .execute_batch(&format!("CREATE SCHEMA {schema}"))
        .expect("create a test schema");
    let sep = if url.contains('?') { '&' } else { '?' };
    StoreLocation::postgres(format!("{url}{sep}options=-c%20search_path%3D{schema}"))
}

/// A throwaway directory under the target dir's temp, removed on drop.
pub(crate) mod tempdir {
    use std::path::{Path, PathBuf};
    use std::sync::atomic::{AtomicUsize, Ordering};

    pub(crate) struct Dir(PathBuf);

    impl Dir {
        pub(crate) fn new(tag: &str) -> Dir {
            static N: AtomicUsize = AtomicUsize::new(0);
            let path = std::env::temp_dir().join(format!(
                "tollgate-{tag}-{}-{}",
                std::process::id(),
                N.fetch_add(1, Ordering::Relaxed)
            ));
            let _ = std::fs::remove_dir_all(&path);
            std::fs::create_dir_all(&path).unwrap();
            Dir(path)
        }
        pub(crate) fn path(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

#[test]
fn location_from_env() {
    let cwd = Path::new("/work/x");
    let at = |url: Option<&str>| {
        let url = url.map(str::to_string);
        StoreLocation::from_env(&move |_: &str| url.clone(), cwd)
    };
    assert_eq!(
        at(None).unwrap(),
        StoreLocation::file("/work/x/.tollgate/tollgate.db")
    );
    assert_eq!(
        at(Some("sqlite:data/t.db")).unwrap(),
        StoreLocation::file("/work/x/data/t.db")
    );
    assert_eq!(
        at(Some("sqlite:///tmp/t.db")).unwrap(),
        StoreLocation::file("/tmp/t.db")
    );
    for url in [
        "postgres://tg@db.internal:5432/tollgate",
        "postgresql://tg:secret@127.0.0.1/tollgate",
    ] {
        assert_eq!(at(Some(url)).unwrap(), StoreLocation::postgres(url));
    }
    assert!(matches!(at(Some("mysql://x")), Err(StoreError::BadUrl(_))));
    assert!(matches!(at(Some("sqlite:")), Err(StoreError::BadUrl(_))));
}

#[test]
fn a_malformed_postgres_url_is_refused_before_connecting_and_its_password_is_not_shown() {
    let url = Some("postgres://tg:hunter2@db:notaport/x".to_string());
    let e = StoreLocation::from_env(&move |_: &str| url.clone(), Path::new("/")).unwrap_err();
    let text = e.to_string();
    assert!(matches!(e, StoreError::BadPostgresUrl { .. }), "{e:?}");
    assert!(!text.contains("hunter2"), "{text}");
    assert!(
        text.contains("postgres://USER[:PASSWORD]@HOST:PORT/DB"),
        "{text}"
    );
}

#[test]
fn an_unreachable_postgres_server_gets_the_seed_s_remedy() {
    // A port nothing listens on (bound, then released).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let location = StoreLocation::postgres(format!("postgres://tg:hunter2@127.0.0.1:{port}/x"));
    let e = Store::open(&location).unwrap_err().to_string();
    assert!(e.contains("Database unreachable"), "{e}");
    assert!(e.contains("TOLLGATE_DATABASE_URL"), "{e}");
    assert!(!e.contains("hunter2"), "{e}");
}

#[test]
fn open_applies_every_migration_and_uses_wal() {
    let (_dir, store) = temp_store();
    let status = store.migration_status().unwrap();
    assert!(status.is_current(), "{status:?}");
    assert_eq!(status.current, status.latest);
    assert_eq!(status.latest, migrations().last().unwrap().version);
    if store.dialect() == Dialect::Postgres {
        return;
    }
    let mode: String = store
        .read(|c| c.query_row("PRAGMA journal_mode", (), |r| r.get(0)))
        .unwrap();
    assert_eq!(mode, "wal");
}

#[test]
fn failed_write_changes_nothing_and_others_in_the_batch_commit() {
    let (_dir, store) = temp_store();
    let insert = |id: &'static str| {
        move |c: &Connection| {
            c.execute(
                "INSERT INTO provenance_edges (parent, child, relation) VALUES (?1, 'c', 'r')",
                [id],
            )?;
            Ok(())
        }
    };
    store.write(insert("a")).unwrap();
    let failed = store.write(move |c| {
        insert("b")(c)?;
        Err::<(), _>(StoreError::Invalid("refused".into()))
    });
    assert!(matches!(failed, Err(StoreError::Invalid(_))));
    store.write(insert("c")).unwrap();
    let parents: Vec<String> = store
        .read(|c| {
            let mut s = c.prepare("SELECT parent FROM provenance_edges ORDER BY parent")?;
            let rows = s.query_map((), |r| r.get(0))?;
            rows.collect::<Result<_, _>>()
        })
        .unwrap();
    assert_eq!(parents, ["a", "c"]);
}

#[test]
fn concurrent_writers_are_batched_and_all_acknowledged() {
    let (_dir, store) = temp_store();
    std::thread::scope(|s| {
        for t in 0..8 {
            let store = store.clone();
            s.spawn(move || {
                for i in 0..50 {
                    store
                        .write(move |c| {
                            c.execute(
                                "INSERT INTO provenance_edges (parent, child, relation) VALUES (?1, ?2, 'r')",
                                [format!("t{t}"), format!("i{i}")],
                            )?;
                            Ok(())
                        })
                        .unwrap();
                }
            });
        }
    });
    let n: i64 = store
        .read(|c| c.query_row("SELECT COUNT(*) FROM provenance_edges", (), |r| r.get(0)))
        .unwrap();
    assert_eq!(n, 400);
}

#[test]
fn a_second_store_on_the_same_file_sees_committed_writes() {
    let dir = tempdir::Dir::new("two");
    let location = StoreLocation::file(dir.path().join("t.db"));
    let a = Store::open(&location).unwrap();
    let b = Store::open(&location).unwrap();
    a.write(|c| {
        c.execute(
            "INSERT INTO provenance_edges (parent, child, relation) VALUES ('p', 'c', 'r')",
            (),
        )?;
        Ok(())
    })
    .unwrap();
    let n: i64 = b
        .read(|c| c.query_row("SELECT COUNT(*) FROM provenance_edges", (), |r| r.get(0)))
        .unwrap();
    assert_eq!(n, 1);
}

#[test]
fn downgrade_then_upgrade() {
    let (_dir, store) = temp_store();
    let known = migrate::migrations_for(store.dialect()).len();
    let reverted = store.downgrade(Some(0)).unwrap();
    assert_eq!(reverted.len(), known);
    let status = store.migration_status().unwrap();
    assert_eq!(status.current, 0);
    assert_eq!(status.pending.len(), known);
    assert_eq!(store.upgrade().unwrap().len(), known);
    assert!(store.migration_status().unwrap().is_current());
}

/// `db downgrade` without a version reverts the newest migration alone: on SQLite down to the
/// one before; on PostgreSQL, whose schema begins at a baseline, from the baseline to an empty
/// database (not to a version below the baseline, which it refuses).
#[test]
fn downgrade_without_a_version_reverts_the_newest_migration_alone() {
    let (_dir, store) = temp_store();
    let known = migrate::migrations_for(store.dialect());
    let newest = known.last().unwrap().version;
    assert_eq!(store.downgrade(None).unwrap(), vec![newest]);
    let below = known.iter().rev().nth(1).map_or(0, |m| m.version);
    assert_eq!(store.migration_status().unwrap().current, below);
    assert_eq!(store.upgrade().unwrap(), vec![newest]);
}

#[test]
fn a_statement_on_a_missing_table_says_how_to_find_and_restore_it() {
    let (_d, store) = temp_store();
    let e = store
        .read(|c| {
            c.query_row("SELECT COUNT(*) FROM no_such_table", (), |r| {
                r.get::<i64>(0)
            })
        })
        .unwrap_err();
    // Pending migrations or a dropped table: `db check` tells which (issue 33, bug 2).
    for said in [
        "`tollgate db check`",
        "`tollgate db upgrade`",
        "`tollgate db repair`",
    ] {
        assert!(e.to_string().contains(said), "{e}");
    }
    let other = store
        .read(|c| c.query_row("SELECT nonsense(", (), |r| r.get::<i64>(0)))
        .unwrap_err();
    assert!(!other.to_string().contains("db upgrade"), "{other}");
}

#[test]
fn a_database_that_cannot_be_opened_says_to_set_the_url() {
    let dir = tempdir::Dir::new("store-unreachable");
    // A file where the database's folder should be.
    let blocker = dir.path().join("blocker");
    std::fs::write(&blocker, "").unwrap();
    let e = Store::open(&StoreLocation::file(blocker.join("t.db"))).unwrap_err();
    assert!(e.to_string().contains("TOLLGATE_DATABASE_URL"), "{e}");
}

#[test]
fn integrity_is_clean_for_a_sound_database_and_names_a_dangling_reference() {
    let (dir, store) = sqlite_temp_store();
    assert_eq!(store.integrity().unwrap(), Vec::<String>::new());
    // An event whose run does not exist, written by another connection with references
    // unchecked (as a tool editing the file by hand could).
    let other = rusqlite::Connection::open(dir.path().join("t.db")).unwrap();
    other
        .execute_batch(
            "PRAGMA foreign_keys = OFF;
             INSERT INTO events (run_id, seq, step_idx, kind, at, payload, payload_hash,
                                 prev_hash, hash)
             VALUES ('ghost', 0, 0, 'note', 't', '{}', 'h', 'p', 'h');",
        )
        .unwrap();
    let problems = store.integrity().unwrap();
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(
        problems[0].contains("`events`") && problems[0].contains("`runs`"),
        "{problems:?}"
    );
}

/// Commits one artifact of `size` zero bytes, `blob-I`, in a write of its own.
fn write_blob(store: &Store, i: i32, size: i64) -> Result<(), StoreError> {
    store.write(move |c| {
        c.execute(
            "INSERT INTO artifacts (hash, media_type, size, body, created_at)
             VALUES (?1, 'application/octet-stream', ?2, zeroblob(?2), 't')",
            crate::store::params![format!("blob-{i}"), size],
        )?;
        Ok(())
    })
}

#[test]
fn the_checkpointer_copies_the_log_into_the_database_while_the_store_is_open() {
    let (dir, store) = sqlite_temp_store();
    let file = dir.path().join("t.db");
    let before = std::fs::metadata(&file).unwrap().len();
    // About 1,500 pages of log, in commits of their own: past the checkpointer's threshold,
    // below the writer's own.
    for i in 0..1500 {
        write_blob(&store, i, 4000).unwrap();
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let mut after = before;
    while std::time::Instant::now() < deadline {
        after = std::fs::metadata(&file).unwrap().len();
        if after >= before + 4_000_000 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(
        after >= before + 4_000_000,
        "the database file grew from {before} to {after} bytes only: nothing was checkpointed"
    );
}

/// The WAL hook runs inside COMMIT: a failed checkpoint there once made SQLite report
/// committed writes as failed (the load bench's 500s). Writes past the writer's own
/// checkpoint bound must all succeed, and the log must restart rather than grow.
#[test]
fn writes_past_the_checkpoint_bound_all_succeed_and_the_log_stays_bounded() {
    let (dir, store) = sqlite_temp_store();
    let wal = dir.path().join("t.db-wal");
    let mut largest = 0;
    // About 1.5 × the hard bound in pages, four pages a commit.
    for i in 0..(3 * writer::CHECKPOINT_PAGES_HARD / 8) {
        write_blob(&store, i, 16000).unwrap_or_else(|e| panic!("write {i} failed: {e}"));
        largest = largest.max(std::fs::metadata(&wal).map_or(0, |m| m.len()));
    }
    let bound = (writer::CHECKPOINT_PAGES_HARD as u64 + 64) * 4120;
    assert!(
        largest <= bound,
        "the log grew to {largest} bytes (bound {bound}): it never restarted"
    );
}

/// A reader holding an old snapshot keeps the log from being copied past it: past the hard
/// bound the writer waits for the reader (on the busy timeout) instead of letting the log grow.
#[test]
fn past_the_hard_bound_writes_wait_for_a_reader_holding_the_log_rather_than_grow_it() {
    let (dir, store) = sqlite_temp_store();
    let wal = dir.path().join("t.db-wal");
    let reader = rusqlite::Connection::open(dir.path().join("t.db")).unwrap();
    // The reader's snapshot predates every write below: no page of the log can be copied
    // into the database until it lets go, which it does once the log has reached the bound
    // and a little more time has passed (time in which the log would otherwise grow).
    reader
        .execute_batch("BEGIN; SELECT COUNT(*) FROM artifacts;")
        .unwrap();
    let hard_bytes = writer::CHECKPOINT_PAGES_HARD as u64 * 4096;
    let holder = {
        let wal = wal.clone();
        std::thread::spawn(move || {
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
            while std::fs::metadata(&wal).map_or(0, |m| m.len()) < hard_bytes
                && std::time::Instant::now() < deadline
            {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            std::thread::sleep(std::time::Duration::from_millis(500));
            reader.execute_batch("COMMIT").unwrap();
        })
    };
    let mut largest = 0;
    for i in 0..(3 * writer::CHECKPOINT_PAGES_HARD / 8) {
        write_blob(&store, i, 16000).unwrap_or_else(|e| panic!("write {i} failed: {e}"));
        largest = largest.max(std::fs::metadata(&wal).map_or(0, |m| m.len()));
    }
    holder.join().unwrap();
    let bound = (writer::CHECKPOINT_PAGES_HARD as u64 + 64) * 4120;
    assert!(
        largest <= bound,
        "the log grew to {largest} bytes (bound {bound}) while a reader held it"
    );
}

#[test]
fn an_async_write_resolves_after_its_commit_and_a_failed_one_changes_nothing() {
    let (_dir, store) = temp_store();
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let insert = |id: &'static str| {
        move |c: &Connection| -> Result<(), StoreError> {
            c.execute(
                "INSERT INTO artifacts (hash, media_type, size, body, created_at)
                 VALUES (?1, 'text/plain', 1, ?2, 't')",
                params![id, vec![0u8]],
            )?;
            Ok(())
        }
    };
    rt.block_on(store.transact_async(insert("a"))).unwrap();
    // Resolved means committed: a read on another connection sees it.
    let count = |store: &Store| {
        store
            .read(|c| c.query_row("SELECT COUNT(*) FROM artifacts", (), |r| r.get::<i64>(0)))
            .unwrap()
    };
    assert_eq!(count(&store), 1);
    let failed: Result<(), StoreError> = rt.block_on(store.transact_async(move |c| {
        insert("b")(c)?;
        Err(StoreError::Invalid("refused".into()))
    }));
    assert!(matches!(failed, Err(StoreError::Invalid(_))));
    assert_eq!(count(&store), 1);
}

/// A full disk (SQLite's page limit stands in for it): the write fails saying so and how to
/// fix it, nothing of it is stored, the writes around it are, and the store takes writes
/// again once there is room (issue 19).
#[test]
fn a_full_disk_fails_the_write_with_help_and_stores_none_of_it() {
    let (_dir, store) = sqlite_temp_store();
    write_blob(&store, 0, 1000).unwrap();
    let count = |store: &Store| {
        store
            .read(|c| c.query_row("SELECT COUNT(*) FROM artifacts", (), |r| r.get::<i64>(0)))
            .unwrap()
    };
    let limit = |pages: &'static str| {
        move |c: &Connection| -> Result<(), StoreError> {
            let sql = format!("PRAGMA max_page_count = {pages}");
            c.query_row(&sql, (), |_| Ok(()))?;
            Ok(())
        }
    };
    let pages: i64 = store
        .read(|c| c.query_row("PRAGMA page_count", (), |r| r.get(0)))
        .unwrap();
    let cap: &'static str = Box::leak((pages + 4).to_string().into_boxed_str());
    store.write(limit(cap)).unwrap();
    // About a hundred pages: past the cap.
    let err = write_blob(&store, 1, 400_000).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("full") && text.contains("help: the disk holding the database is full"),
        "{text}"
    );
    assert_eq!(count(&store), 1);
    write_blob(&store, 2, 100).unwrap();
    assert_eq!(count(&store), 2);
    store.write(limit("1073741823")).unwrap();
    write_blob(&store, 1, 400_000).unwrap();
    assert_eq!(count(&store), 3);
}

/// A database that cannot be written says so, with what to do.
#[test]
fn a_read_only_database_names_the_cause_and_the_fix() {
    let (_dir, store) = sqlite_temp_store();
    store
        .write(|c| {
            c.execute_batch("PRAGMA query_only = ON")?;
            Ok(())
        })
        .unwrap();
    let err = write_blob(&store, 0, 10).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("readonly") && text.contains("help: the database cannot be written"),
        "{text}"
    );
}

/// A full disk in one write of a batch made SQLite roll back the whole transaction; the writes
/// queued after it then ran outside any transaction (each committed on its own) and were told
/// they had failed. Whatever the batch, a write told `Ok` is stored and a write told `Err` is
/// not.
#[test]
fn writes_batched_with_one_that_fills_the_disk_are_stored_exactly_when_acknowledged() {
    let (_dir, store) = sqlite_temp_store();
    write_blob(&store, 0, 1000).unwrap();
    let pages: i64 = store
        .read(|c| c.query_row("PRAGMA page_count", (), |r| r.get(0)))
        .unwrap();
    store
        .write(move |c| {
            c.query_row(
                &format!("PRAGMA max_page_count = {}", pages + 40),
                (),
                |_| Ok(()),
            )?;
            Ok(())
        })
        .unwrap();
    let store = std::sync::Arc::new(store);
    let results: Vec<(i32, bool)> = std::thread::scope(|s| {
        let handles: Vec<_> = (1..=24)
            .map(|i| {
                let store = store.clone();
                s.spawn(move || {
                    // Every sixth write is far past the cap.
                    let size = if i % 6 == 0 { 400_000 } else { 200 };
                    (i, write_blob(&store, i, size).is_ok())
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for (i, acknowledged) in results {
        let stored: i64 = store
            .read(move |c| {
                c.query_row(
                    "SELECT COUNT(*) FROM artifacts WHERE hash = ?1",
                    [format!("blob-{i}")],
                    |r| r.get(0),
                )
            })
            .unwrap();
        assert_eq!(
            stored == 1,
            acknowledged,
            "write {i}: told ok = {acknowledged}"
        );
        if i % 6 == 0 {
            assert!(!acknowledged, "write {i} fits past the cap");
        }
    }
}

/// A definition changed by hand (an index on other columns, a trigger function's body) is
/// named as changed, on SQLite from the text it keeps, on PostgreSQL from its catalog compared
/// with a scratch schema the migrations make (and roll back: no schema is left behind).
#[test]
fn a_changed_definition_is_named_on_either_engine() {
    let (_dir, store) = temp_store();
    let drift = store.schema_drift().unwrap();
    assert_eq!(drift, SchemaDrift::default());
    store
        .write(|c| {
            c.execute_batch(
                "DROP INDEX memories_by_group_rank;
                 CREATE INDEX memories_by_group_rank ON memories (group_id, id)",
            )
        })
        .unwrap();
    let drift = store.schema_drift().unwrap();
    assert_eq!(
        drift.changed,
        ["index `memories_by_group_rank`"],
        "{drift:?}"
    );
    assert!(
        drift.missing.is_empty() && drift.unchecked.is_none(),
        "{drift:?}"
    );
    if store.dialect() == Dialect::Postgres {
        store
            .write(|c| {
                c.execute_batch(
                    "CREATE OR REPLACE FUNCTION tollgate_memories_reworded() RETURNS TRIGGER
                     LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$",
                )
            })
            .unwrap();
        let drift = store.schema_drift().unwrap();
        assert_eq!(
            drift.changed,
            [
                "index `memories_by_group_rank`",
                "function `tollgate_memories_reworded`"
            ],
            "{drift:?}"
        );
        let scratch: i64 = store
            .read(|c| {
                c.query_row(
                    "SELECT COUNT(*) FROM pg_namespace WHERE nspname LIKE 'tollgate_expected%'",
                    (),
                    |r| r.get(0),
                )
            })
            .unwrap();
        assert_eq!(scratch, 0, "the scratch schema is rolled back");
    }
}

#[test]
fn a_dropped_table_is_named_missing_and_repair_recreates_it_on_either_engine() {
    let (_dir, store) = temp_store();
    assert_eq!(store.schema_drift().unwrap(), SchemaDrift::default());
    store
        .write(|c| c.execute_batch("DROP TABLE memory_feedback"))
        .unwrap();
    let drift = store.schema_drift().unwrap();
    assert_eq!(drift.missing, ["table `memory_feedback`"], "{drift:?}");
    let repaired = store.repair_schema().unwrap();
    assert_eq!(repaired, ["table `memory_feedback`"]);
    assert_eq!(store.schema_drift().unwrap(), SchemaDrift::default());
    let rows: i64 = store
        .read(|c| c.query_row("SELECT COUNT(*) FROM memory_feedback", (), |r| r.get(0)))
        .unwrap();
    assert_eq!(rows, 0);
}

#[test]
fn a_memory_holding_a_word_too_long_for_postgres_index_is_stored_on_either_engine() {
    let (_dir, store) = temp_store();
    // 3,200 letters and digits that do not compress (a repeated letter would fit the index).
    let long: String = (0..50u32)
        .map(|i| blake3::hash(&i.to_le_bytes()).to_hex().to_string())
        .collect();
    let norm = format!("short {long} words");
    store
        .write(move |c| {
            c.execute(
                "INSERT INTO memories (id, class, text, norm, scope, sensitivity, status,
                     ttl_seconds, expires_at, score, extractor, created_at, updated_at)
                 VALUES ('m1', 'fact', ?1, ?1, 'org:a', 'internal', 'candidate', 0, 0, '{}',
                         'x', 't', 't')",
                [norm],
            )?;
            Ok(())
        })
        .unwrap();
    let short: i64 = store
        .read(|c| {
            c.query_row(
                "SELECT documents FROM memory_words WHERE word = 'short'",
                (),
                |r| r.get(0),
            )
        })
        .unwrap();
    assert_eq!(short, 1);
}

/// Bug found running the end-to-end tests on PostgreSQL (issue 37): the machine's own folder
/// was `.tollgate` relative to whichever directory read it, so a pack's adapter, which runs in
/// its pack, kept its dry-run effects apart from the gateway's and a stale preview went
/// unseen. It is absolute on either engine.
#[test]
fn the_local_folder_is_absolute_on_either_engine() {
    let cwd = std::env::current_dir().unwrap();
    let postgres = StoreLocation::postgres("postgres://u@127.0.0.1:5432/d");
    assert_eq!(postgres.local_dir(), cwd.join(".tollgate"));
    let env = |_: &str| Some("sqlite:rel/t.db".to_string());
    let sqlite = StoreLocation::from_env(&env, &cwd).unwrap();
    assert_eq!(sqlite.local_dir(), cwd.join("rel"));
    assert!(postgres.local_dir().is_absolute() && sqlite.local_dir().is_absolute());
}
