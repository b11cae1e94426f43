//! The single writer: one thread owns the read-write connection and commits the writes it is
//! given in batches (group commit). A caller's `write` returns only after the transaction
//! holding its work has committed, so an acknowledged write survives a crash.

use std::sync::mpsc::{self, Receiver, SyncSender};
use std::thread::JoinHandle;

use rusqlite::Connection;

use super::StoreError;

/// Most writes committed in one transaction.
const MAX_BATCH: usize = 512;
/// Pending writes before `submit` blocks (back-pressure).
const QUEUE: usize = 4096;

/// Runs one write inside the open transaction and returns what to do once the transaction's
/// fate is known (deliver the result, or the commit error).
type Job = Box<dyn FnOnce(Result<&Connection, &StoreError>) -> Completion + Send>;
type Completion = Box<dyn FnOnce(Result<(), &StoreError>) + Send>;

pub(super) struct Writer {
    jobs: Option<SyncSender<Job>>,
    thread: Option<JoinHandle<()>>,
}

impl Writer {
    pub(super) fn start(conn: Connection) -> Result<Writer, StoreError> {
        let (jobs, queue) = mpsc::sync_channel::<Job>(QUEUE);
        let thread = std::thread::Builder::new()
            .name("tollgate-store-writer".into())
            .spawn(move || run(conn, queue))
            .map_err(|e| StoreError::Open {
                path: Default::default(),
                source: Box::new(e),
            })?;
        Ok(Writer {
            jobs: Some(jobs),
            thread: Some(thread),
        })
    }

    pub(super) fn submit<T, E, F>(&self, f: F) -> Result<T, E>
    where
        T: Send + 'static,
        E: From<StoreError> + Send + 'static,
        F: FnOnce(&Connection) -> Result<T, E> + Send + 'static,
    {
        let (reply, answer) = mpsc::sync_channel::<Result<T, E>>(1);
        let job: Job = Box::new(move |conn: Result<&Connection, &StoreError>| {
            // Without a transaction the work is not run at all.
            let result = match conn {
                Ok(conn) => in_savepoint(conn, f),
                Err(e) => Err(StoreError::Commit(e.to_string()).into()),
            };
            Box::new(move |committed: Result<(), &StoreError>| {
                let delivered = match committed {
                    Ok(()) => result,
                    Err(e) => Err(StoreError::Commit(e.to_string()).into()),
                };
                let _ = reply.send(delivered);
            })
        });
        let jobs = self.jobs.as_ref().ok_or(StoreError::WriterGone)?;
        jobs.send(job).map_err(|_| StoreError::WriterGone)?;
        answer.recv().map_err(|_| StoreError::WriterGone)?
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        // Closing the queue lets the thread finish the writes already queued, then exit.
        self.jobs.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// `f` inside a savepoint: its failure undoes only its own changes.
fn in_savepoint<T, E: From<StoreError>>(
    conn: &Connection,
    f: impl FnOnce(&Connection) -> Result<T, E>,
) -> Result<T, E> {
    let sql = |sql: &str| conn.execute_batch(sql).map_err(StoreError::from);
    sql("SAVEPOINT tollgate_write")?;
    match f(conn) {
        Ok(value) => {
            sql("RELEASE tollgate_write")?;
            Ok(value)
        }
        Err(e) => {
            sql("ROLLBACK TO tollgate_write; RELEASE tollgate_write")?;
            Err(e)
        }
    }
}

fn run(conn: Connection, queue: Receiver<Job>) {
    while let Ok(first) = queue.recv() {
        let mut completions = Vec::new();
        // IMMEDIATE takes the write lock up front, so writers of other processes queue on
        // the busy timeout instead of deadlocking on a lock upgrade.
        let begun = conn
            .execute_batch("BEGIN IMMEDIATE")
            .map_err(StoreError::from);
        if let Err(e) = begun {
            first(Err(&e))(Err(&e));
            continue;
        }
        completions.push(first(Ok(&conn)));
        while completions.len() < MAX_BATCH {
            match queue.try_recv() {
                Ok(job) => completions.push(job(Ok(&conn))),
                Err(_) => break,
            }
        }
        let committed = conn.execute_batch("COMMIT").map_err(StoreError::from);
        if committed.is_err() {
            let _ = conn.execute_batch("ROLLBACK");
        }
        for done in completions {
            done(committed.as_ref().map(|_| ()));
        }
    }
}
