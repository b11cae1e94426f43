//! The store: one SQLite database (`.tollgate/tollgate.db` by default) in WAL mode, its
//! migrations, and the two ways in — [`Store::read`] on a pooled read-only connection and
//! [`Store::write`] through the single writer thread, which commits writes in batches.
//!
//! Several processes (the CLI and a running server) may open the same database: WAL lets
//! readers proceed while one writer commits, and a busy timeout makes writers of different
//! processes queue instead of failing.

pub(crate) mod artifacts;
mod counters;
mod migrate;
mod postgres;
mod schema;
mod sql;
mod value;
mod writer;

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rusqlite::OpenFlags;
use rusqlite::config::DbConfig;

pub use counters::{Changes, changes, next_number};
pub use migrate::{Migration, MigrationStatus, migrations};
pub use schema::SchemaDrift;
pub use sql::{Connection, Dialect, Row, Rows, Statement};
pub use value::params;
pub use value::{
    Column, IN_LIST, OptionalExtension, Param, Params, ParamsFromIter, SqlValue, Value, in_list,
    params_from_iter,
};
use writer::Writer;

/// The environment variable naming the database (`sqlite:PATH`).
pub const DATABASE_URL_VAR: &str = "TOLLGATE_DATABASE_URL";
/// The default database path, under the working directory.
pub const DEFAULT_DATABASE: &str = ".tollgate/tollgate.db";

/// How long a connection waits for another process's write lock before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);
/// Prepared statements kept per connection (hot paths use `prepare_cached`).
const STATEMENT_CACHE: usize = 64;
/// Idle read connections kept for reuse.
const READ_POOL: usize = 8;

/// What can go wrong in the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// `TOLLGATE_DATABASE_URL` is neither a `sqlite:` nor a `postgres://` URL.
    #[error(
        "`{0}` is not a supported database url\n  help: use `sqlite:PATH` (for example `sqlite:.tollgate/tollgate.db`) or `postgres://USER@HOST:PORT/DB` (PostgreSQL 14 or later)"
    )]
    BadUrl(String),
    /// A `postgres://` URL that does not parse (shown without its password).
    #[error(
        "`{url}` is not a PostgreSQL URL this build can read: {reason}\n  help: write it as `postgres://USER[:PASSWORD]@HOST:PORT/DB`, with `%`-escapes for special characters in the password"
    )]
    BadPostgresUrl {
        /// The URL, its password hidden.
        url: String,
        /// What the parser said.
        reason: String,
    },
    /// The database file or its folder could not be created or opened.
    #[error(
        "cannot open the database `{path}`: {source}\n  help: check that its folder exists and is writable, or point TOLLGATE_DATABASE_URL at another (`sqlite:PATH`)"
    )]
    Open {
        /// The database path.
        path: PathBuf,
        /// The cause.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The PostgreSQL server could not be reached or refused the connection (the URL shown
    /// without its password; the detail ends with the remedy).
    #[error("cannot connect to the database `{url}`: {detail}")]
    Unreachable {
        /// The URL, its password hidden.
        url: String,
        /// The cause and what to do.
        detail: String,
    },
    /// SQLite refused a statement. Its message is this error's own text, not a source of it,
    /// so a printed chain does not say it twice.
    #[error("database error: {0}{help}", help = sqlite_help(.0))]
    Sqlite(rusqlite::Error),
    /// PostgreSQL refused a statement, or the connection to it failed.
    #[error("database error: {text}", text = postgres::describe(.0))]
    Postgres(tokio_postgres::Error),
    /// A query that should have found a row found none ([`OptionalExtension::optional`]
    /// turns this into `None`).
    #[error("the database has no such row")]
    NoRow,
    /// A stored value could not be decoded.
    #[error("stored data is not valid: {0}")]
    Corrupt(String),
    /// The caller asked for something that does not exist.
    #[error("{0}")]
    NotFound(String),
    /// The caller's record breaks a rule of the store (missing provenance).
    #[error("{0}")]
    Invalid(String),
    /// A record with that id is stored already.
    #[error("{0}")]
    Duplicate(String),
    /// The database was migrated by a newer build, or a migration step failed.
    #[error("{0}")]
    Migration(String),
    /// The transaction holding the write could not begin or commit; nothing was written.
    #[error("the write was not committed: {0}")]
    Commit(String),
    /// The writer thread is gone (the store is shutting down).
    #[error("the store's writer has stopped")]
    WriterGone,
}

impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> Self {
        match e {
            rusqlite::Error::QueryReturnedNoRows => StoreError::NoRow,
            // A parameter refused by our own binding keeps its own error.
            rusqlite::Error::ToSqlConversionFailure(inner) => {
                match inner.downcast::<StoreError>() {
                    Ok(own) => *own,
                    Err(other) => {
                        StoreError::Sqlite(rusqlite::Error::ToSqlConversionFailure(other))
                    }
                }
            }
            e => StoreError::Sqlite(e),
        }
    }
}

impl From<tokio_postgres::Error> for StoreError {
    fn from(e: tokio_postgres::Error) -> Self {
        StoreError::Postgres(e)
    }
}

/// Which kind of constraint a refused write broke.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConstraintKind {
    /// A unique index or primary key: the row exists already.
    Unique,
    /// A foreign key: the row names a missing row, or is named by one.
    ForeignKey,
    /// A `CHECK` constraint.
    Check,
    /// A `NOT NULL` column left empty.
    NotNull,
    /// Another constraint (a trigger's `RAISE`).
    Other,
}

/// A constraint a write broke: its kind and the database's own words for it (the table and
/// columns, or the constraint's name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// Its kind.
    pub kind: ConstraintKind,
    /// What the database said.
    pub detail: String,
}

/// How to fix what SQLite refused, where there is something to say.
fn sqlite_help(e: &rusqlite::Error) -> &'static str {
    use rusqlite::ErrorCode;
    match e.sqlite_error_code() {
        Some(ErrorCode::ReadOnly) => {
            "\n  help: the database cannot be written (the file, or its folder, where SQLite keeps the `-wal` and `-shm` files beside it, is read-only): nothing was written; make them writable, or point TOLLGATE_DATABASE_URL at a writable copy"
        }
        Some(ErrorCode::DiskFull) => {
            "\n  help: the disk holding the database is full: nothing of this write was stored; free some space and try again"
        }
        _ if e.to_string().contains("no such table") => {
            "\n  help: the database lacks a table this build needs: `tollgate db check` says whether migrations are pending (`tollgate db upgrade` applies them) or tables are missing (`tollgate db repair` recreates them)"
        }
        _ => "",
    }
}

impl StoreError {
    /// The constraint this error reports broken, if it is a constraint violation: the one
    /// place the engines' codes are read, so modules match on [`ConstraintKind`].
    pub fn violation(&self) -> Option<Violation> {
        if let StoreError::Postgres(e) = self {
            return postgres::violation(e);
        }
        let StoreError::Sqlite(rusqlite::Error::SqliteFailure(f, message)) = self else {
            return None;
        };
        if f.code != rusqlite::ErrorCode::ConstraintViolation {
            return None;
        }
        let kind = match f.extended_code {
            rusqlite::ffi::SQLITE_CONSTRAINT_UNIQUE
            | rusqlite::ffi::SQLITE_CONSTRAINT_PRIMARYKEY => ConstraintKind::Unique,
            rusqlite::ffi::SQLITE_CONSTRAINT_FOREIGNKEY => ConstraintKind::ForeignKey,
            rusqlite::ffi::SQLITE_CONSTRAINT_CHECK => ConstraintKind::Check,
            rusqlite::ffi::SQLITE_CONSTRAINT_NOTNULL => ConstraintKind::NotNull,
            _ => ConstraintKind::Other,
        };
        Some(Violation {
            kind,
            detail: message
                .clone()
                .unwrap_or_else(|| "a constraint failed".into()),
        })
    }

    /// Wraps a decoding problem.
    pub fn corrupt(what: impl std::fmt::Display) -> Self {
        StoreError::Corrupt(what.to_string())
    }
}

/// Where the database lives: an SQLite file (the embedded default) or a PostgreSQL database.
#[derive(Clone, PartialEq, Eq)]
pub enum StoreLocation {
    /// An SQLite database file.
    File(PathBuf),
    /// A PostgreSQL database, by its URL (`postgres://USER@HOST:PORT/DB`).
    Postgres(String),
}

impl std::fmt::Debug for StoreLocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.to_string())
    }
}

impl std::fmt::Display for StoreLocation {
    /// The file's path, or the URL without its password.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreLocation::File(path) => write!(f, "{}", path.display()),
            StoreLocation::Postgres(url) => f.write_str(&postgres::redact_password(url)),
        }
    }
}

impl StoreLocation {
    /// A database file.
    pub fn file(path: impl Into<PathBuf>) -> Self {
        StoreLocation::File(path.into())
    }

    /// A PostgreSQL database.
    pub fn postgres(url: impl Into<String>) -> Self {
        StoreLocation::Postgres(url.into())
    }

    /// `TOLLGATE_DATABASE_URL` when set (through `env`, so tests need not touch the process
    /// environment), else `.tollgate/tollgate.db` under `cwd`: `sqlite:PATH` (relative to
    /// `cwd`), or `postgres://` / `postgresql://` URLs as PostgreSQL reads them.
    pub fn from_env(
        env: &dyn Fn(&str) -> Option<String>,
        cwd: &Path,
    ) -> Result<StoreLocation, StoreError> {
        let Some(url) = env(DATABASE_URL_VAR).filter(|u| !u.trim().is_empty()) else {
            return Ok(StoreLocation::file(cwd.join(DEFAULT_DATABASE)));
        };
        let url = url.trim().to_string();
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            // Parsed now, so a malformed URL is refused before anything connects.
            postgres::parse_url(&url)?;
            return Ok(StoreLocation::Postgres(url));
        }
        let rest = url
            .strip_prefix("sqlite://")
            .or_else(|| url.strip_prefix("sqlite:"))
            .ok_or_else(|| StoreError::BadUrl(url.clone()))?;
        if rest.is_empty() {
            return Err(StoreError::BadUrl(url));
        }
        let path = Path::new(rest);
        Ok(StoreLocation::file(if path.is_absolute() {
            path.to_path_buf()
        } else {
            cwd.join(path)
        }))
    }

    /// The database file, for SQLite.
    pub fn file_path(&self) -> Option<&Path> {
        match self {
            StoreLocation::File(path) => Some(path),
            StoreLocation::Postgres(_) => None,
        }
    }

    /// The folder this machine keeps its own files in beside the database (the token key, the
    /// operator token, dry-run adapter state, demo packs): the SQLite file's folder, or
    /// `.tollgate/` in the working directory for PostgreSQL, which keeps no file. Absolute on
    /// PostgreSQL, so a process started elsewhere (a pack's adapter runs in its pack) is given
    /// the same folder.
    pub fn local_dir(&self) -> PathBuf {
        match self {
            StoreLocation::File(path) => path.parent().map(Path::to_path_buf).unwrap_or_default(),
            StoreLocation::Postgres(_) => std::env::current_dir()
                .unwrap_or_default()
                .join(".tollgate"),
        }
    }

    /// The SQL its engine speaks.
    pub fn dialect(&self) -> Dialect {
        match self {
            StoreLocation::File(_) => Dialect::Sqlite,
            StoreLocation::Postgres(_) => Dialect::Postgres,
        }
    }
}

/// The store. Cheap to clone; all clones share one writer and one read pool.
#[derive(Clone)]
pub struct Store {
    inner: Arc<Inner>,
}

struct Inner {
    location: StoreLocation,
    writer: Writer,
    readers: Mutex<Vec<Connection>>,
    /// Readers that map the file ([`Store::read_scan`]).
    scanners: Mutex<Vec<Connection>>,
    /// What modules derive from the store and keep beside it (caches), one per type.
    derived: Mutex<HashMap<TypeId, Arc<dyn Any + Send + Sync>>>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("location", &self.inner.location)
            .finish()
    }
}

impl Store {
    /// Opens (creating it if needed) the database and applies pending migrations.
    pub fn open(location: &StoreLocation) -> Result<Store, StoreError> {
        let store = Store::open_unmigrated(location)?;
        store.write(|conn| migrate::upgrade(conn).map(|_| ()))?;
        Ok(store)
    }

    /// Opens the database as it is, without migrating (for `db check` and `db downgrade`).
    pub fn open_unmigrated(location: &StoreLocation) -> Result<Store, StoreError> {
        let writer = match location {
            StoreLocation::File(path) => {
                if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                    std::fs::create_dir_all(dir).map_err(|e| StoreError::Open {
                        path: path.clone(),
                        source: Box::new(e),
                    })?;
                }
                let conn = open_connection(path, false)?;
                // WAL is a property of the file: set once, every later connection sees it.
                let mode: String = conn.query_row("PRAGMA journal_mode = WAL", (), |r| r.get(0))?;
                if !mode.eq_ignore_ascii_case("wal") {
                    return Err(StoreError::Open {
                        path: path.clone(),
                        source: format!("journal mode is `{mode}`, expected `wal`").into(),
                    });
                }
                Writer::start(conn, Some(path))?
            }
            StoreLocation::Postgres(url) => {
                let conn = Connection::postgres(url)?;
                // Acknowledged means durable, whatever the server's default.
                conn.execute_batch("SET synchronous_commit = on")?;
                Writer::start(conn, None)?
            }
        };
        Ok(Store {
            inner: Arc::new(Inner {
                location: location.clone(),
                writer,
                readers: Mutex::new(Vec::new()),
                scanners: Mutex::new(Vec::new()),
                derived: Mutex::new(HashMap::new()),
            }),
        })
    }

    /// Where the database is.
    pub fn location(&self) -> &StoreLocation {
        &self.inner.location
    }

    /// The SQL the database speaks.
    pub fn dialect(&self) -> Dialect {
        self.inner.location.dialect()
    }

    /// The `T` this store keeps for a module (a cache of what it derives from the stored data),
    /// made with `T::default()` on first use and shared by every clone of the store. What it
    /// holds must stay correct when another process writes the same file: it is kept for
    /// speed, the database stays the truth.
    pub fn derived<T: Any + Send + Sync + Default>(&self) -> Arc<T> {
        let mut derived = self.inner.derived.lock().unwrap_or_else(|e| e.into_inner());
        let kept = derived
            .entry(TypeId::of::<T>())
            .or_insert_with(|| Arc::new(T::default()))
            .clone();
        drop(derived);
        match kept.downcast::<T>() {
            Ok(t) => t,
            // Entries are made only under their own type's id just above.
            Err(_) => unreachable!("a derived value kept under another type's id"),
        }
    }

    /// Runs `f` on a read-only connection. Reads see the last committed state and never
    /// block the writer. For reads of a few rows (a token, a run's header, a page of a list):
    /// on SQLite the connection reads pages with `pread`, not through a map of the file, since
    /// SQLite drops a reader's whole map whenever the database changed since its last read —
    /// after every write, on a gateway that records — and mapping it again cost a tool call
    /// more than its read (`benches/load`).
    pub fn read<T>(
        &self,
        f: impl FnOnce(&Connection) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        self.read_from(&self.inner.readers, false, f)
    }

    /// Like [`Store::read`], for a read that touches pages all over a large file (a memory
    /// search over a million memories): on SQLite through a map of the whole file, which
    /// costs a new map after a write but saves a copy per page.
    pub fn read_scan<T>(
        &self,
        f: impl FnOnce(&Connection) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        self.read_from(&self.inner.scanners, true, f)
    }

    fn read_from<T>(
        &self,
        pool: &Mutex<Vec<Connection>>,
        mapped: bool,
        f: impl FnOnce(&Connection) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        // A panic while holding the pool lock leaves only a Vec of connections behind.
        let lock = || {
            pool.lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
        };
        let conn = match lock().pop() {
            Some(conn) => conn,
            None => open_reader(&self.inner.location, mapped)?,
        };
        let result = f(&conn);
        let mut pool = lock();
        if pool.len() < READ_POOL {
            pool.push(conn);
        }
        result
    }

    /// Runs `f` inside the writer's current transaction and returns once that transaction
    /// has committed: an `Ok` is durable. If `f` fails, its changes are rolled back and the
    /// other writes of the batch still commit.
    pub fn write<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
    {
        self.inner.writer.submit(f)
    }

    /// Like [`Store::write`], for a write that can fail with the caller's own error (a domain
    /// refusal found inside the transaction, such as an approval used meanwhile): an `Err`
    /// rolls the write back like any failure, and reaches the caller as it was returned.
    pub fn transact<T, E, F>(&self, f: F) -> Result<T, E>
    where
        T: Send + 'static,
        E: From<StoreError> + Send + 'static,
        F: FnOnce(&Connection) -> Result<T, E> + Send + 'static,
    {
        self.inner.writer.submit(f)
    }

    /// [`Store::transact`] for async callers: the future resolves once the transaction holding
    /// the write has committed (an `Ok` is durable), without holding a thread meanwhile.
    pub async fn transact_async<T, E, F>(&self, f: F) -> Result<T, E>
    where
        T: Send + 'static,
        E: From<StoreError> + Send + 'static,
        F: FnOnce(&Connection) -> Result<T, E> + Send + 'static,
    {
        self.inner.writer.submit_async(f).await
    }

    /// The migration status: current version and pending migrations.
    pub fn migration_status(&self) -> Result<MigrationStatus, StoreError> {
        self.read(migrate::status)
    }

    /// SQLite's own check of the file (`PRAGMA quick_check`: every page and index entry well
    /// formed) and of its references (`PRAGMA foreign_key_check`); returns each problem found,
    /// none when the database is sound.
    pub fn integrity(&self) -> Result<Vec<String>, StoreError> {
        self.read(|c| {
            // PostgreSQL enforces references on every write and checks its pages itself
            // (`data_checksums`, `amcheck`): there is nothing of this kind to ask it.
            if c.dialect() == Dialect::Postgres {
                return Ok(Vec::new());
            }
            let mut problems = Vec::new();
            let mut stmt = c.prepare("PRAGMA quick_check")?;
            for line in stmt.query_map((), |r| r.get::<String>(0))? {
                let line = line?;
                if line != "ok" {
                    problems.push(line);
                }
            }
            let mut stmt = c.prepare("PRAGMA foreign_key_check")?;
            let dangling = stmt.query_map((), |r| {
                Ok(format!(
                    "a row of `{}` (rowid {}) names a missing row of `{}`",
                    r.get::<String>(0)?,
                    r.get::<Option<i64>>(1)?
                        .map_or("-".into(), |n| n.to_string()),
                    r.get::<String>(2)?
                ))
            })?;
            for line in dangling {
                problems.push(line?);
            }
            Ok(problems)
        })
    }

    /// Applies every pending migration; returns the versions applied.
    pub fn upgrade(&self) -> Result<Vec<u32>, StoreError> {
        self.write(migrate::upgrade)
    }

    /// How the schema differs from what the applied migrations create: the tables, indexes,
    /// triggers and views missing, and those whose definition changed.
    pub fn schema_drift(&self) -> Result<SchemaDrift, StoreError> {
        match self.dialect() {
            Dialect::Sqlite => self.read(schema::drift),
            // Definitions are compared with a scratch schema the migrations make inside the
            // transaction, rolled back: the writer's (it holds the write lock meanwhile).
            Dialect::Postgres => self.write(schema::drift),
        }
    }

    /// Recreates what the applied migrations create and the database lacks (empty); the
    /// objects recreated.
    pub fn repair_schema(&self) -> Result<Vec<String>, StoreError> {
        self.write(schema::repair)
    }

    /// Reverts migrations above `to` (default: the current version minus one), newest first;
    /// returns the versions reverted.
    pub fn downgrade(&self, to: Option<u32>) -> Result<Vec<u32>, StoreError> {
        self.write(move |conn| migrate::downgrade(conn, to))
    }
}

/// Opens a read-only connection.
fn open_reader(location: &StoreLocation, mapped: bool) -> Result<Connection, StoreError> {
    match location {
        StoreLocation::File(path) => {
            let conn = open_connection(path, true)?;
            if !mapped {
                conn.execute_batch("PRAGMA mmap_size = 0")?;
            }
            Ok(conn)
        }
        StoreLocation::Postgres(url) => {
            let conn = Connection::postgres(url)?;
            // A read that tries to write is refused, as SQLite's read-only connections do.
            conn.execute_batch("SET default_transaction_read_only = on")?;
            Ok(conn)
        }
    }
}

/// Opens one SQLite connection with the store's settings.
fn open_connection(path: &Path, read_only: bool) -> Result<Connection, StoreError> {
    let flags = if read_only {
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX
    } else {
        OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
    };
    let conn =
        rusqlite::Connection::open_with_flags(path, flags).map_err(|e| StoreError::Open {
            path: path.to_path_buf(),
            source: Box::new(e),
        })?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    // One plan per statement whatever its parameters (the query planner stability guarantee):
    // otherwise a cached statement with a parameter in an indexed range is prepared again
    // each time it is bound, a tenth of a memory search's time (`benches/memory_search.rs`).
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)?;
    // Reads through a memory map of the whole file, up to SQLite's ceiling of 2 GiB (no copy
    // per page; a map of the first 256 MiB left a million memories' index to `pread`), and a
    // larger page cache: a search over a million memories touches pages all over the file.
    // The map is address space, not memory: pages are the kernel's page cache, shared.
    conn.execute_batch(
        "PRAGMA foreign_keys = ON; PRAGMA synchronous = NORMAL;
         PRAGMA mmap_size = 2147418112; PRAGMA cache_size = -16384;",
    )?;
    Ok(Connection::sqlite(conn))
}

#[cfg(test)]
mod differential;
#[cfg(test)]
pub(crate) mod tests;
