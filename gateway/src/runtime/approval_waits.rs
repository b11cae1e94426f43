//! Long polls on approvals (`GET /v1/approvals/{id}?wait=`, the MCP front holding a gated
//! call): a wait ends as soon as its approval is decided, wherever it was decided.
//!
//! A decision made through this gateway wakes its waits at once (`Runtime::approvals_changed`).
//! One made through another gateway on the same database, or a command, is seen by the
//! watcher (issue 38): while at least one wait is open, one task per gateway reads the store's
//! `changes/approvals` counter (raised by a trigger whenever an approval is decided, used or
//! expires) every [`WATCH_EVERY`], and wakes every wait when it moved. The counter is read
//! with the approval each wait looks at, and the watcher compares with the oldest such
//! count, so a decision committed between a wait's look and the watcher's next read is never
//! missed. Nobody waiting, nothing is read. Each wait also looks again every 250 ms whatever
//! happens, so a watcher that cannot read the store delays, never loses, a wake-up.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::{Runtime, RuntimeError};
use crate::approvals::{self, Approval};
use crate::store::{Changes, changes};

/// How often the watcher reads the counter while a wait is open.
pub const WATCH_EVERY: Duration = Duration::from_millis(20);

/// The waits open in this process and the oldest count of approval changes one of them read.
#[derive(Debug)]
pub struct ApprovalWaits {
    /// Woken whenever an approval may have changed.
    changed: Notify,
    waiting: AtomicUsize,
    /// Woken when a wait opens (a stored permit: a wake before the watcher sleeps counts).
    opened: Notify,
    /// The lowest count a wait read since the watcher last woke them (`i64::MAX`: none).
    seen: AtomicI64,
}

impl Default for ApprovalWaits {
    fn default() -> Self {
        ApprovalWaits {
            changed: Notify::new(),
            waiting: AtomicUsize::new(0),
            opened: Notify::new(),
            seen: AtomicI64::new(i64::MAX),
        }
    }
}

impl ApprovalWaits {
    /// Wakes every wait: an approval was decided through this gateway.
    pub fn wake(&self) {
        self.changed.notify_waiters();
    }

    /// A future that completes at the next wake-up (create it before looking at the approval:
    /// a wake-up in between is not lost).
    pub fn changed(&self) -> tokio::sync::futures::Notified<'_> {
        self.changed.notified()
    }

    /// Opens a wait: until the guard is dropped, the watcher watches.
    pub fn open(&self) -> Waiting<'_> {
        self.waiting.fetch_add(1, Ordering::AcqRel);
        self.opened.notify_one();
        Waiting(self)
    }
}

/// An open wait (see [`ApprovalWaits::open`]).
#[derive(Debug)]
pub struct Waiting<'a>(&'a ApprovalWaits);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.waiting.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Runtime {
    /// Approval `id` as a wait looks at it, reading the count of approval changes first, so
    /// the watcher wakes the wait for any change committed after this look.
    pub fn approval_for_wait(&self, id: &str, now_ms: i64) -> Result<Approval, RuntimeError> {
        let count = changes(self.store(), Changes::Approvals)?;
        let approval = approvals::get(self.store(), id, now_ms)?;
        self.approval_waits.seen.fetch_min(count, Ordering::AcqRel);
        Ok(approval)
    }
}

/// The watcher (started by `http::serve`): while a wait is open, reads the count of approval
/// changes every [`WATCH_EVERY`] and wakes every wait when it is past the oldest count a wait
/// read. Ends when `stop` is cancelled.
pub async fn watch(runtime: Arc<Runtime>, stop: CancellationToken) {
    let waits = &runtime.approval_waits;
    loop {
        if waits.waiting.load(Ordering::Acquire) == 0 {
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = waits.opened.notified() => continue,
            }
        }
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(WATCH_EVERY) => {}
        }
        let rt = runtime.clone();
        let read =
            tokio::task::spawn_blocking(move || changes(rt.store(), Changes::Approvals)).await;
        let Ok(Ok(count)) = read else {
            // The waits look again on their own every 250 ms.
            continue;
        };
        if count > waits.seen.load(Ordering::Acquire) {
            waits.seen.store(i64::MAX, Ordering::Release);
            waits.wake();
        }
    }
}
