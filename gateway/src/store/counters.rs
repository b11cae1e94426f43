//! Numbers handed out by the store (migration 20): job ids, suite numbers, replay result and
//! batch numbers. One statement takes the next number and keeps the counter's row until the
//! write commits, so two writers never get the same number, on any engine; reading
//! `COUNT(*) + 1` before inserting would give both the same one on PostgreSQL. And the
//! counters of changes ([`Changes`]) that triggers raise.

use super::{Connection, StoreError};

/// The next number of `counter` (1 for a counter never used), taken inside the caller's write.
pub fn next_number(c: &Connection, counter: &str) -> Result<i64, StoreError> {
    c.prepare_cached(
        "INSERT INTO tollgate_counters (name, value) VALUES (?1, 1)
         ON CONFLICT (name) DO UPDATE SET value = tollgate_counters.value + 1
         RETURNING value",
    )?
    .query_row([counter], |r| r.get(0))
}

/// A counter of changes (migration 24), raised by triggers in the write that changes what it
/// counts: what a process keeps in memory, or waits on, is current while it has not moved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Changes {
    /// Envelope versions stored, runs re-pinned (`changes/policy`).
    Policy,
    /// Approvals decided, used or expired (`changes/approvals`).
    Approvals,
    /// Tokens revoked or deleted (`changes/credentials`, migration 29).
    Credentials,
}

impl Changes {
    /// The counter's name in `tollgate_counters` (for a write that reads it with other columns).
    pub fn counter(self) -> &'static str {
        match self {
            Changes::Policy => "changes/policy",
            Changes::Approvals => "changes/approvals",
            Changes::Credentials => "changes/credentials",
        }
    }
}

/// How many changes of `what` the store has counted (0 before the first).
pub fn changes(store: &super::Store, what: Changes) -> Result<i64, StoreError> {
    store.read(move |c| {
        c.prepare_cached(
            "SELECT COALESCE((SELECT value FROM tollgate_counters WHERE name = ?1), 0)",
        )?
        .query_row([what.counter()], |r| r.get::<i64>(0))
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[test]
    fn numbers_count_up_from_one_per_counter_and_a_failed_write_gives_its_number_back() {
        let (_dir, store) = crate::store::tests::temp_store();
        let take = |name: &'static str| store.write(move |c| next_number(c, name)).unwrap();
        assert_eq!(take("a"), 1);
        assert_eq!(take("a"), 2);
        assert_eq!(take("b"), 1);
        let failed: Result<(), StoreError> = store.write(|c| {
            assert_eq!(next_number(c, "a")?, 3);
            Err(StoreError::Invalid("refused".into()))
        });
        assert!(failed.is_err());
        assert_eq!(
            take("a"),
            3,
            "the rolled-back write's number is handed out again"
        );
    }
}
