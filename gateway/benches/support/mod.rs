//! What the store-touching benches share: where a bench store lives (issue 37). Without
//! `TOLLGATE_BENCH_POSTGRES_URL` a bench store is an SQLite file, as before; with it (a server
//! `scripts/pg-throwaway start DIR` gives), each bench store is a schema of that database
//! named after the store, so the same bench measures PostgreSQL. Figures name the engine.
// Each bench uses part of this module.
#![allow(dead_code)]

use std::path::Path;

use tollgate_gateway::store::{Store, StoreLocation};

/// The PostgreSQL server the benches run on, when one is named.
pub fn postgres_server() -> Option<String> {
    std::env::var("TOLLGATE_BENCH_POSTGRES_URL")
        .ok()
        .filter(|u| !u.trim().is_empty())
}

/// The engine the bench stores are on, for the figures' labels.
pub fn engine() -> &'static str {
    if postgres_server().is_some() {
        "PostgreSQL"
    } else {
        "SQLite"
    }
}

/// Where the bench store `name` is: `file` on SQLite; on PostgreSQL the schema `bench_NAME`
/// (made when missing) of the server. `fresh` empties it first.
pub fn location(name: &str, file: &Path, fresh: bool) -> StoreLocation {
    let Some(server) = postgres_server() else {
        if fresh {
            for suffix in ["", "-wal", "-shm"] {
                let mut stale = file.as_os_str().to_owned();
                stale.push(suffix);
                let _ = std::fs::remove_file(stale);
            }
        }
        return StoreLocation::file(file);
    };
    let schema: String = format!("bench_{name}")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .collect();
    let admin = Store::open_unmigrated(&StoreLocation::postgres(server.clone()))
        .unwrap_or_else(|e| panic!("connect to {server}: {e}"));
    let sql = if fresh {
        format!("DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema}")
    } else {
        format!("CREATE SCHEMA IF NOT EXISTS {schema}")
    };
    admin
        .write(move |c| c.execute_batch(&sql))
        .unwrap_or_else(|e| panic!("make the bench schema: {e}"));
    let sep = if server.contains('?') { '&' } else { '?' };
    StoreLocation::postgres(format!("{server}{sep}options=-c%20search_path%3D{schema}"))
}

/// The bench store `name` (see [`location`]) and whether it was built whole before (marked
/// by [`mark_built`]); one not built whole is emptied, ready to build.
pub fn open(name: &str, file: &Path) -> (Store, bool) {
    let store = Store::open(&location(name, file, false))
        .unwrap_or_else(|e| panic!("open the bench store {name}: {e}"));
    let built = store
        .read(|c| c.query_row("SELECT COUNT(*) FROM bench_built", (), |r| r.get::<i64>(0)))
        .is_ok_and(|n| n > 0);
    if built {
        return (store, true);
    }
    drop(store);
    let store = Store::open(&location(name, file, true))
        .unwrap_or_else(|e| panic!("open the bench store {name}: {e}"));
    (store, false)
}

/// Marks the bench store as built whole, in the store itself (so a PostgreSQL cluster made
/// again, or an SQLite file removed, is built again).
pub fn mark_built(store: &Store) {
    store
        .write(|c| {
            c.execute_batch(
                "CREATE TABLE bench_built (whole INTEGER); INSERT INTO bench_built VALUES (1)",
            )
        })
        .unwrap_or_else(|e| panic!("mark the bench store built: {e}"));
}
