//! The single writer: one thread owns the read-write connection and commits the writes it is
//! given in batches (group commit). A caller's `write` returns only after the transaction
//! holding its work has committed, so an acknowledged write survives a crash.
//!
//! Checkpoints (copying the write-ahead log back into the database file, with an fsync of
//! each) run on a thread of their own: left to SQLite, every thousandth page a commit would
//! checkpoint before it returns, and the answers waiting on that commit would wait for the
//! copy and both fsyncs (the tail of every recorded call's latency, `benches/load`).

use std::path::Path;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use super::{Connection, Dialect, StoreError};

/// Most writes committed in one transaction.
const MAX_BATCH: usize = 512;
/// Pending writes before `submit` blocks (back-pressure).
const QUEUE: usize = 4096;
/// Pages in the write-ahead log at which the checkpointer is woken (SQLite's own default).
pub(super) const CHECKPOINT_PAGES: i32 = 1000;
/// Pages at which the writer checkpoints itself between two batches (passive, and only when
/// the checkpointer is idle), so the log restarts near 32 MB: by then the checkpointer has
/// copied most of it, so what is left is short.
pub(super) const CHECKPOINT_PAGES_MAX: i32 = 8 * CHECKPOINT_PAGES;
/// Pages at which the writer stops taking writes until the log has been copied and restarted
/// (it waits for the checkpointer, then checkpoints in SQLite's RESTART mode): the bound on
/// the log however slow the disk, at the cost of a pause in writes when it is reached.
pub(super) const CHECKPOINT_PAGES_HARD: i32 = 2 * CHECKPOINT_PAGES_MAX;
/// Longest the writer retries a hard-bound checkpoint that another process's checkpoint keeps
/// out (SQLite gives the checkpoint lock to one connection and does not wait for it).
const CHECKPOINT_RETRY: std::time::Duration = std::time::Duration::from_secs(10);

/// How a PostgreSQL batch begins: a transaction holding the write lock of the schema it writes
/// (`pg_advisory_xact_lock`, keyed by the schema's name so the schemas of one database do not
/// wait on each other; a collision of two names' hashes only makes them take turns). Sent as
/// one statement list: one round trip. The first key is "tolg" read as a 32-bit number.
pub(super) const POSTGRES_BEGIN: &str =
    "BEGIN; SELECT pg_advisory_xact_lock(1953459303, hashtext(current_schema()))";

/// Runs one write inside the open transaction and returns what to do once the transaction's
/// fate is known (deliver the result, or the commit error).
type Job = Box<dyn FnOnce(Result<&Connection, &StoreError>) -> Completion + Send>;
type Completion = Box<dyn FnOnce(Result<(), &StoreError>) + Send>;

pub(super) struct Writer {
    jobs: Option<SyncSender<Job>>,
    thread: Option<JoinHandle<()>>,
    checkpointer: Option<JoinHandle<()>>,
}

impl Writer {
    /// Starts the writer on `conn`; for an SQLite file, the checkpointer too, on a
    /// connection of its own to `file` (PostgreSQL keeps its own log).
    pub(super) fn start(mut conn: Connection, file: Option<&Path>) -> Result<Writer, StoreError> {
        let spawn_error = |e: std::io::Error| StoreError::Open {
            path: file.map_or_else(|| "the database".into(), Path::to_path_buf),
            source: Box::new(e),
        };
        // One checkpoint at a time in this process: SQLite refuses a second one at once (no
        // busy wait), so the writer, past the hard bound, waits on this lock instead.
        let checkpointing = Arc::new(Mutex::new(()));
        let log_pages = Arc::new(AtomicI32::new(0));
        let checkpointer = match file {
            Some(path) => Some(start_checkpointer(
                &mut conn,
                path,
                &checkpointing,
                &log_pages,
            )?),
            None => None,
        };
        let (jobs, queue) = mpsc::sync_channel::<Job>(QUEUE);
        let thread = std::thread::Builder::new()
            .name("tollgate-store-writer".into())
            .spawn(move || run(conn, queue, &log_pages, &checkpointing))
            .map_err(spawn_error)?;
        Ok(Writer {
            jobs: Some(jobs),
            thread: Some(thread),
            checkpointer,
        })
    }

    /// Queues `f` and blocks until its transaction's fate is known.
    pub(super) fn submit<T, E, F>(&self, f: F) -> Result<T, E>
    where
        T: Send + 'static,
        E: From<StoreError> + Send + 'static,
        F: FnOnce(&Connection) -> Result<T, E> + Send + 'static,
    {
        let (reply, answer) = mpsc::sync_channel::<Result<T, E>>(1);
        self.queue(f, move |delivered| {
            let _ = reply.send(delivered);
        })?;
        answer.recv().map_err(|_| StoreError::WriterGone)?
    }

    /// Queues `f`; the future resolves once its transaction's fate is known. The caller's
    /// thread is free meanwhile: an async handler awaiting its write is woken by the writer
    /// itself, with no blocking thread in between.
    pub(super) async fn submit_async<T, E, F>(&self, f: F) -> Result<T, E>
    where
        T: Send + 'static,
        E: From<StoreError> + Send + 'static,
        F: FnOnce(&Connection) -> Result<T, E> + Send + 'static,
    {
        let (reply, answer) = tokio::sync::oneshot::channel::<Result<T, E>>();
        self.queue(f, move |delivered| {
            let _ = reply.send(delivered);
        })?;
        answer.await.map_err(|_| StoreError::WriterGone)?
    }

    /// Queues `f` (in its own savepoint of the writer's next transaction); `deliver` gets its
    /// result once the transaction committed, or the commit's error. Blocks only while the
    /// queue is full (back-pressure).
    fn queue<T, E, F>(
        &self,
        f: F,
        deliver: impl FnOnce(Result<T, E>) + Send + 'static,
    ) -> Result<(), StoreError>
    where
        T: Send + 'static,
        E: From<StoreError> + Send + 'static,
        F: FnOnce(&Connection) -> Result<T, E> + Send + 'static,
    {
        let job: Job = Box::new(move |conn: Result<&Connection, &StoreError>| {
            // Without a transaction the work is not run at all.
            let result = match conn {
                Ok(conn) => in_savepoint(conn, f),
                Err(e) => Err(StoreError::Commit(e.to_string()).into()),
            };
            Box::new(move |committed: Result<(), &StoreError>| {
                deliver(match (committed, result) {
                    (Ok(()), result) => result,
                    // Its own failure says more than the transaction's.
                    (Err(_), Err(own)) => Err(own),
                    (Err(e), Ok(_)) => Err(StoreError::Commit(e.to_string()).into()),
                });
            })
        });
        let jobs = self.jobs.as_ref().ok_or(StoreError::WriterGone)?;
        jobs.send(job).map_err(|_| StoreError::WriterGone)
    }
}

/// Starts the checkpointer on a connection of its own to `path`, woken by a hook on the
/// writer's connection `conn`.
fn start_checkpointer(
    conn: &mut Connection,
    path: &Path,
    checkpointing: &Arc<Mutex<()>>,
    log_pages: &Arc<AtomicI32>,
) -> Result<JoinHandle<()>, StoreError> {
    let checkpoint_conn = super::open_connection(path, false)?;
    let (wake, woken) = mpsc::sync_channel::<()>(1);
    let checkpointer = {
        let checkpointing = Arc::clone(checkpointing);
        std::thread::Builder::new()
            .name("tollgate-store-checkpoint".into())
            .spawn(move || checkpoint(checkpoint_conn, woken, &checkpointing))
            .map_err(|e| StoreError::Open {
                path: path.to_path_buf(),
                source: Box::new(e),
            })?
    };
    // Replaces SQLite's automatic checkpoint (itself a WAL hook) on this connection. The
    // hook runs inside COMMIT, after the transaction is durable and before the answers
    // waiting on it are sent: it only notes the log's length and wakes the checkpointer.
    // It never fails: an error from it would make SQLite report a committed write as
    // failed. The checkpointer is woken once per CHECKPOINT_PAGES new pages, not after
    // every commit: a checkpoint running all the time would hold the lock the writer's
    // own checkpoint needs, and the log would never restart.
    let mut woken_at = 0;
    let log_pages = Arc::clone(log_pages);
    conn.raw_mut()
        .ok_or(StoreError::WriterGone)?
        .wal_hook(Some(
            move |_: &mut rusqlite::hooks::Wal, pages: std::ffi::c_int| {
                log_pages.store(pages, Ordering::Relaxed);
                let at = pages / CHECKPOINT_PAGES;
                if at > woken_at && pages < CHECKPOINT_PAGES_MAX {
                    // Already woken and not yet done: nothing to add.
                    let _ = wake.try_send(());
                }
                woken_at = at;
                Ok(())
            },
        ))?;
    Ok(checkpointer)
}

impl Drop for Writer {
    fn drop(&mut self) {
        // Closing the queue lets the thread finish the writes already queued, then exit.
        self.jobs.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        // The writer's connection (and its hook, the checkpointer's only waker) is closed:
        // the checkpointer's queue is closed too.
        if let Some(thread) = self.checkpointer.take() {
            let _ = thread.join();
        }
    }
}

/// `f` inside a savepoint: its failure undoes only its own changes.
fn in_savepoint<T, E: From<StoreError>>(
    conn: &Connection,
    f: impl FnOnce(&Connection) -> Result<T, E>,
) -> Result<T, E> {
    let sql = |sql: &str| conn.execute_batch(sql);
    control(conn, "SAVEPOINT tollgate_write")?;
    match f(conn) {
        Ok(value) => {
            control(conn, "RELEASE tollgate_write")?;
            Ok(value)
        }
        // SQLite rolled the whole transaction back (a full disk, an I/O error): there is no
        // savepoint left to undo, and the error is the write's own.
        Err(e) if rolled_back_under(conn) => Err(e),
        Err(e) => {
            sql("ROLLBACK TO tollgate_write; RELEASE tollgate_write")?;
            Err(e)
        }
    }
}

/// A transaction-control statement (`BEGIN IMMEDIATE`, `SAVEPOINT`, `COMMIT`...): on SQLite
/// prepared once and kept, rather than parsed again on every write (a tenth of a tool call's
/// time in the writer went to parsing these four).
fn control(conn: &Connection, sql: &str) -> Result<(), StoreError> {
    match conn.dialect() {
        Dialect::Sqlite => conn.prepare_cached(sql)?.execute(()).map(drop),
        Dialect::Postgres => conn.execute_batch(sql),
    }
}

/// Whether SQLite rolled the open transaction back under the writes (it is out of one).
fn rolled_back_under(conn: &Connection) -> bool {
    conn.raw().is_some_and(rusqlite::Connection::is_autocommit)
}

/// What the writes of a batch are told when SQLite rolled its transaction back under them.
fn rolled_back() -> StoreError {
    StoreError::Commit(
        "SQLite rolled the transaction back (a full disk or an I/O error in one of its writes): \
         none of its writes was stored"
            .into(),
    )
}

fn run(conn: Connection, queue: Receiver<Job>, log_pages: &AtomicI32, checkpointing: &Mutex<()>) {
    while let Ok(first) = queue.recv() {
        let mut completions = Vec::new();
        // IMMEDIATE takes SQLite's write lock up front, so writers of other processes queue
        // on the busy timeout instead of deadlocking on a lock upgrade. On PostgreSQL the
        // same: the batch takes its schema's write lock (an advisory lock held to the end of
        // the transaction) before it reads anything, so the writers of several gateways on one
        // database take turns as SQLite's do, and every check-then-write of a batch (a run's
        // chain head, an approval's use, a rate limit's count, a job's claim) sees every write
        // committed before it (issue 38).
        let begun = match conn.dialect() {
            Dialect::Sqlite => control(&conn, "BEGIN IMMEDIATE"),
            Dialect::Postgres => conn.execute_batch(POSTGRES_BEGIN),
        };
        if let Err(e) = begun {
            first(Err(&e))(Err(&e));
            continue;
        }
        completions.push(first(Ok(&conn)));
        // A write whose failure made SQLite roll the whole transaction back ends the batch:
        // the writes after it would otherwise run outside any transaction, each committed on
        // its own, and then be told they failed.
        let mut lost = rolled_back_under(&conn);
        while !lost && completions.len() < MAX_BATCH {
            match queue.try_recv() {
                Ok(job) => {
                    completions.push(job(Ok(&conn)));
                    lost = rolled_back_under(&conn);
                }
                Err(_) => break,
            }
        }
        let committed = if lost {
            Err(rolled_back())
        } else {
            control(&conn, "COMMIT")
        };
        if committed.is_err() && !rolled_back_under(&conn) {
            let _ = conn.execute_batch("ROLLBACK");
        }
        for done in completions {
            done(committed.as_ref().map(|_| ()));
        }
        // Between batches, with every answer sent: the log restarts from its beginning only
        // once a checkpoint has copied all of it before the next write begins, which the
        // checkpointer, racing the writer under steady load, may never manage. This one does.
        let pages = log_pages.load(Ordering::Relaxed);
        if pages >= CHECKPOINT_PAGES_HARD {
            let _held = lock(checkpointing);
            if restart_log(&conn) {
                log_pages.store(0, Ordering::Relaxed);
            }
        } else if pages >= CHECKPOINT_PAGES_MAX
            && let Ok(_held) = checkpointing.try_lock()
            && wal_checkpoint(&conn, "PASSIVE") == Some(true)
        {
            log_pages.store(0, Ordering::Relaxed);
        }
    }
}

/// Copies the whole log into the database and waits for readers to leave it, so the next write
/// starts the log over (SQLite's RESTART mode, which waits on the busy timeout for writers of
/// other processes and for readers). Retries while another process's checkpoint holds the lock.
fn restart_log(conn: &Connection) -> bool {
    let deadline = std::time::Instant::now() + CHECKPOINT_RETRY;
    loop {
        match wal_checkpoint(conn, "RESTART") {
            Some(true) => return true,
            Some(false) if std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
            // A full disk, a reader that outlived the busy timeout: the log grows for now,
            // and the next batch tries again.
            _ => return false,
        }
    }
}

/// Runs `PRAGMA wal_checkpoint(MODE)`: `Some(true)` when the whole log was copied, `Some(false)`
/// when a lock kept part of it out, `None` on an error.
fn wal_checkpoint(conn: &Connection, mode: &str) -> Option<bool> {
    conn.query_row(&format!("PRAGMA wal_checkpoint({mode})"), (), |row| {
        let busy: i64 = row.get(0)?;
        let log: i64 = row.get(1)?;
        let copied: i64 = row.get(2)?;
        Ok(busy == 0 && log == copied)
    })
    .ok()
}

fn lock(mutex: &Mutex<()>) -> std::sync::MutexGuard<'_, ()> {
    // The lock guards no data: a panic while holding it leaves nothing half-done.
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Checkpoints each time the writer says the log has grown past [`CHECKPOINT_PAGES`]. A
/// passive checkpoint copies what no reader still needs and never blocks the writer; what it
/// could not copy waits for the next.
fn checkpoint(conn: Connection, woken: Receiver<()>, checkpointing: &Mutex<()>) {
    while woken.recv().is_ok() {
        let _held = lock(checkpointing);
        // A failure (a reader holding an old snapshot, a full disk) leaves the log as it is:
        // the next wake tries again, and the writer checkpoints itself past the bound.
        let _ = wal_checkpoint(&conn, "PASSIVE");
    }
}
