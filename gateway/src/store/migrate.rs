//! Versioned, reversible migrations. The SQL lives in the crate's `migrations/` (`gateway/migrations/`);
//! `build.rs` embeds it. Applied migrations are rows of `tollgate_migrations` (a table rather
//! than SQLite's `user_version`, so the same bookkeeping works on PostgreSQL).
//!
//! Each engine has its own migrations (`migrations/` and `migrations/postgres/`) under one
//! numbering: version N is the same schema on both. PostgreSQL's begin at its baseline (22, the
//! version at which the engine arrived), one migration creating that version's whole schema;
//! every later version is written for both.

use crate::store::{Connection, Dialect, OptionalExtension, params};
use serde::Serialize;

use super::StoreError;
use crate::clock::now_rfc3339;

include!(concat!(env!("OUT_DIR"), "/migrations.rs"));

/// One embedded migration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Migration {
    /// Its number (1, 2, ...).
    pub version: u32,
    /// Its name (`core`).
    pub name: &'static str,
    /// The SQL that applies it.
    pub up: &'static str,
    /// The SQL that reverts it.
    pub down: &'static str,
}

impl Migration {
    /// blake3 of the up SQL: an applied migration whose file later changed is reported.
    pub fn checksum(&self) -> String {
        blake3::hash(self.up.as_bytes()).to_hex().to_string()
    }
}

/// Every SQLite migration this build knows, in order.
pub fn migrations() -> Vec<Migration> {
    migrations_for(Dialect::Sqlite)
}

/// Every migration this build knows for an engine, in order.
pub fn migrations_for(dialect: Dialect) -> Vec<Migration> {
    let table = match dialect {
        Dialect::Sqlite => MIGRATIONS,
        Dialect::Postgres => POSTGRES_MIGRATIONS,
    };
    table
        .iter()
        .map(|&(version, name, up, down)| Migration {
            version,
            name,
            up,
            down,
        })
        .collect()
}

/// The version at which PostgreSQL's migrations begin.
pub const POSTGRES_BASELINE: u32 = 22;

/// Where a database stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MigrationStatus {
    /// The highest applied version (0 for an empty database).
    pub current: u32,
    /// The newest version this build knows.
    pub latest: u32,
    /// Versions and names not yet applied.
    pub pending: Vec<(u32, String)>,
    /// Applied versions whose SQL differs from this build's.
    pub changed: Vec<u32>,
    /// Applied versions this build does not know (the database is newer than the binary).
    pub unknown: Vec<u32>,
}

impl MigrationStatus {
    /// Whether every known migration is applied and nothing is unknown.
    pub fn is_current(&self) -> bool {
        self.pending.is_empty() && self.unknown.is_empty()
    }
}

const BOOKKEEPING: &str = "CREATE TABLE IF NOT EXISTS tollgate_migrations (
    version INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    checksum TEXT NOT NULL,
    applied_at TEXT NOT NULL
)";

fn applied(conn: &Connection) -> Result<Vec<(u32, String)>, StoreError> {
    let exists: Option<String> = conn
        .query_row(
            match conn.dialect() {
                Dialect::Sqlite => {
                    "SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'tollgate_migrations'"
                }
                Dialect::Postgres => {
                    "SELECT table_name::text FROM information_schema.tables
                     WHERE table_schema = current_schema() AND table_name = 'tollgate_migrations'"
                }
            },
            (),
            |r| r.get(0),
        )
        .optional()?;
    if exists.is_none() {
        return Ok(Vec::new());
    }
    let mut stmt =
        conn.prepare("SELECT version, checksum FROM tollgate_migrations ORDER BY version")?;
    let rows = stmt.query_map((), |r| Ok((r.get::<u32>(0)?, r.get::<String>(1)?)))?;
    rows.collect::<Result<_, _>>()
}

/// The status of the database behind `conn`.
pub(super) fn status(conn: &Connection) -> Result<MigrationStatus, StoreError> {
    let known = migrations_for(conn.dialect());
    let applied = applied(conn)?;
    let current = applied.iter().map(|(v, _)| *v).max().unwrap_or(0);
    let pending = known
        .iter()
        .filter(|m| !applied.iter().any(|(v, _)| *v == m.version))
        .map(|m| (m.version, m.name.to_string()))
        .collect();
    let changed = applied
        .iter()
        .filter(|(v, sum)| {
            known
                .iter()
                .any(|m| m.version == *v && m.checksum() != *sum)
        })
        .map(|(v, _)| *v)
        .collect();
    let unknown = applied
        .iter()
        .filter(|(v, _)| !known.iter().any(|m| m.version == *v))
        .map(|(v, _)| *v)
        .collect();
    Ok(MigrationStatus {
        current,
        latest: known.last().map(|m| m.version).unwrap_or(0),
        pending,
        changed,
        unknown,
    })
}

/// Applies the pending migrations in order. Runs inside the writer's transaction: if one
/// fails, none of them is applied.
pub(super) fn upgrade(conn: &Connection) -> Result<Vec<u32>, StoreError> {
    conn.execute_batch(BOOKKEEPING)?;
    let state = status(conn)?;
    if let Some(v) = state.unknown.first() {
        return Err(StoreError::Migration(format!(
            "the database has migration {v}, which this build does not know\n  help: use a newer `tollgate`, or `tollgate db downgrade --to {}` with the build that applied it",
            state.latest
        )));
    }
    let mut done = Vec::new();
    for m in migrations_for(conn.dialect()) {
        if !state.pending.iter().any(|(v, _)| *v == m.version) {
            continue;
        }
        conn.execute_batch(m.up).map_err(|e| {
            StoreError::Migration(format!("migration {} `{}` failed: {e}", m.version, m.name))
        })?;
        conn.execute(
            "INSERT INTO tollgate_migrations (version, name, checksum, applied_at) VALUES (?1, ?2, ?3, ?4)",
            params![m.version, m.name, m.checksum(), now_rfc3339()],
        )?;
        done.push(m.version);
    }
    Ok(done)
}

/// Reverts the applied migrations above `to`, newest first; without `to`, the newest one alone
/// (on PostgreSQL at its baseline, that is the baseline: down to an empty database).
pub(super) fn downgrade(conn: &Connection, to: Option<u32>) -> Result<Vec<u32>, StoreError> {
    let state = status(conn)?;
    let target = match to {
        Some(to) => to,
        None => applied(conn)?
            .into_iter()
            .map(|(v, _)| v)
            .filter(|v| *v < state.current)
            .max()
            .unwrap_or(0),
    };
    if target > state.current {
        return Err(StoreError::Migration(format!(
            "cannot downgrade to {target}: the database is at {}\n  help: use `tollgate db upgrade` to move forward",
            state.current
        )));
    }
    if conn.dialect() == Dialect::Postgres && target > 0 && target < POSTGRES_BASELINE {
        return Err(StoreError::Migration(format!(
            "cannot downgrade to {target}: on PostgreSQL the schema begins at version {POSTGRES_BASELINE} (the version at which the engine arrived)\n  help: downgrade to {POSTGRES_BASELINE} or above, or to 0 for an empty database"
        )));
    }
    let known = migrations_for(conn.dialect());
    let mut done = Vec::new();
    let mut versions: Vec<u32> = applied(conn)?.into_iter().map(|(v, _)| v).collect();
    versions.sort_unstable_by(|a, b| b.cmp(a));
    for v in versions.into_iter().filter(|v| *v > target) {
        let m = known.iter().find(|m| m.version == v).ok_or_else(|| {
            StoreError::Migration(format!(
                "migration {v} is not known to this build, so it cannot be reverted"
            ))
        })?;
        before_down(conn, v)?;
        conn.execute_batch(m.down).map_err(|e| {
            StoreError::Migration(format!("reverting migration {v} `{}` failed: {e}", m.name))
        })?;
        conn.execute("DELETE FROM tollgate_migrations WHERE version = ?1", [v])?;
        done.push(v);
    }
    Ok(done)
}

/// What a migration's down SQL cannot do alone, done first. Reverting 14 (compressed payloads)
/// puts every compressed payload back as the canonical JSON text it holds, inline (the builds
/// before 14 read an inline payload of any size).
fn before_down(conn: &Connection, version: u32) -> Result<(), StoreError> {
    if version != 14 {
        return Ok(());
    }
    let mut after = 0i64;
    loop {
        let batch: Vec<(i64, String, i64, Vec<u8>)> = {
            let mut stmt = conn.prepare(
                "SELECT rowid, run_id, seq, payload FROM events
                 WHERE typeof(payload) = 'blob' AND rowid > ?1 ORDER BY rowid LIMIT 1000",
            )?;
            let rows = stmt.query_map([after], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
            })?;
            rows.collect::<Result<_, _>>()?
        };
        let Some(last) = batch.last() else {
            return Ok(());
        };
        after = last.0;
        for (rowid, run, seq, z) in batch {
            let text = lz4_flex::decompress_size_prepended(&z)
                .ok()
                .and_then(|b| String::from_utf8(b).ok())
                .ok_or_else(|| {
                    StoreError::Corrupt(format!(
                        "event {seq} of run `{run}`: its compressed payload does not decompress"
                    ))
                })?;
            conn.execute(
                "UPDATE events SET payload = ?1 WHERE rowid = ?2",
                params![text, rowid],
            )?;
        }
    }
}
