//! The kept columns' layout: every memory's [`Ranking`] in one array ordered by row id, so a
//! search, which looks its postings up in ascending row id order, walks forward through
//! memory ([`Cursor`]) instead of hashing into a million scattered entries. At a million
//! memories a hash map lookup missed the cache (and the TLB) a few times each, about half a
//! microsecond: 15 ms for the 28,000 postings of a common word (BENCHMARKS.md, memory search
//! on PostgreSQL).

use super::Ranking;

/// Rankings by row id: the row ids ascending, each with its ranking beside it (one cache line
/// for both), or none where a memory was removed (reclaimed when they make up a quarter of the
/// table).
#[derive(Debug, Default)]
pub(crate) struct Table {
    rows: Vec<(i64, Option<Ranking>)>,
    removed: usize,
}

impl Table {
    /// The table of `rows`, in any order (a row id given twice keeps the later ranking).
    pub(crate) fn from_rows(mut rows: Vec<(i64, Ranking)>) -> Table {
        // Stable, so the later of two equal row ids stays last.
        rows.sort_by_key(|(rowid, _)| *rowid);
        let mut table = Table::default();
        for (rowid, ranking) in rows {
            if table.rows.last().is_some_and(|(last, _)| *last == rowid) {
                table.rows.pop();
            }
            table.rows.push((rowid, Some(ranking)));
        }
        table
    }

    /// Memories held.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.rows.len() - self.removed
    }

    /// The ranking of memory `rowid`.
    #[cfg(test)]
    pub(crate) fn get(&self, rowid: i64) -> Option<&Ranking> {
        let at = self.rows.binary_search_by_key(&rowid, |(r, _)| *r).ok()?;
        self.rows[at].1.as_ref()
    }

    /// A cursor for lookups in ascending row id order.
    pub(crate) fn cursor(&self) -> Cursor<'_> {
        Cursor { table: self, at: 0 }
    }

    /// Applies `changes`, ascending by row id: each memory's ranking now, or none when it is
    /// no longer stored.
    pub(crate) fn apply(&mut self, changes: impl IntoIterator<Item = (i64, Option<Ranking>)>) {
        let mut added: Vec<(i64, Ranking)> = Vec::new();
        for (rowid, ranking) in changes {
            match (self.rows.binary_search_by_key(&rowid, |(r, _)| *r), ranking) {
                (Ok(at), ranking) => {
                    let was = self.rows[at].1.is_some();
                    match (was, ranking.is_some()) {
                        (true, false) => self.removed += 1,
                        (false, true) => self.removed -= 1,
                        _ => {}
                    }
                    self.rows[at].1 = ranking;
                }
                (Err(_), Some(ranking)) => added.push((rowid, ranking)),
                (Err(_), None) => {}
            }
        }
        // New memories take new, higher row ids: appended. One numbered lower (SQLite reuses
        // the highest row id once its memory is removed) merges the table once.
        added.sort_by_key(|(rowid, _)| *rowid);
        let appends = added
            .first()
            .is_none_or(|(first, _)| self.rows.last().is_none_or(|(last, _)| first > last));
        if appends {
            self.rows.extend(
                added
                    .into_iter()
                    .map(|(rowid, ranking)| (rowid, Some(ranking))),
            );
        } else {
            self.merge(added);
        }
        if self.removed > 64 && self.removed * 4 > self.rows.len() {
            self.merge(Vec::new());
        }
    }

    /// Rebuilds the table with `added` (ascending, none held) and without the removed.
    fn merge(&mut self, added: Vec<(i64, Ranking)>) {
        let held = std::mem::take(&mut self.rows)
            .into_iter()
            .filter_map(|(rowid, ranking)| ranking.map(|r| (rowid, r)));
        let mut added = added.into_iter().peekable();
        let mut held = held.peekable();
        loop {
            let next = match (held.peek(), added.peek()) {
                (Some((h, _)), Some((a, _))) => {
                    if a < h {
                        added.next()
                    } else {
                        held.next()
                    }
                }
                (Some(_), None) => held.next(),
                (None, Some(_)) => added.next(),
                (None, None) => break,
            };
            if let Some((rowid, ranking)) = next {
                self.rows.push((rowid, Some(ranking)));
            }
        }
        self.removed = 0;
    }
}

/// Lookups walking forward through a [`Table`], each from where the last one ended. Row ids
/// are distinct integers, so the one sought is at most its distance from the cursor's row id
/// past the cursor; they nearly count up by one (memories are numbered in turn, few are
/// removed), so it is nearly always there or a step before: one probe, where a binary search
/// missed the cache a dozen times. From that bound the search steps back by doubling steps,
/// then halves them. A row id lower than the last starts again from the beginning (still
/// correct, just not faster).
pub(crate) struct Cursor<'a> {
    table: &'a Table,
    at: usize,
}

impl<'a> Cursor<'a> {
    /// The ranking of memory `rowid`.
    pub(crate) fn get(&mut self, rowid: i64) -> Option<&'a Ranking> {
        let rows = &self.table.rows;
        if self.at > 0 && rows.get(self.at - 1).is_some_and(|(r, _)| *r >= rowid) {
            self.at = 0;
        }
        let from = self.at;
        let &(first, _) = rows.get(from)?;
        if first >= rowid {
            return self.found(from, rowid);
        }
        // `rowid` is at or before `high`, and after `from`.
        let distance = usize::try_from(rowid - first).unwrap_or(usize::MAX);
        let mut high = from.saturating_add(distance).min(rows.len() - 1);
        if rows[high].0 < rowid {
            self.at = rows.len();
            return None;
        }
        // Step back while still past `rowid`: then it is after `high - step`.
        let mut step = 1;
        while high - from > step && rows[high - step].0 > rowid {
            high -= step;
            step *= 2;
        }
        let low = high.saturating_sub(step).max(from);
        let at = low + rows[low..=high].partition_point(|(r, _)| *r < rowid);
        self.found(at, rowid)
    }

    /// The ranking at `at` if it is memory `rowid`'s; the cursor moves past `at`'s row id.
    fn found(&mut self, at: usize, rowid: i64) -> Option<&'a Ranking> {
        match self.table.rows.get(at) {
            Some((r, ranking)) if *r == rowid => {
                self.at = at + 1;
                return ranking.as_ref();
            }
            _ => {}
        }
        self.at = at;
        None
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::collections::BTreeMap;

    use proptest::prelude::*;

    use super::*;

    fn ranking(group: i64) -> Ranking {
        Ranking {
            group,
            expires_at: 0,
            length: 1,
            repeated: Box::new([]),
            repeats: 0,
            fixed: 0.0,
        }
    }

    /// A change: a row id and the group of its ranking, or none for a removal.
    fn change() -> impl Strategy<Value = (i64, Option<i64>)> {
        (1i64..300, prop::option::weighted(0.7, 0..1000i64))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        /// Whatever the loads, changes and lookups (in any order), the table answers as a map
        /// of the same changes would: the cursor and a lone lookup alike.
        #[test]
        fn a_table_answers_as_a_map_of_the_same_changes(
            loaded in prop::collection::vec((1i64..300, 0..1000i64), 0..200),
            batches in prop::collection::vec(prop::collection::vec(change(), 0..80), 0..6),
            mut lookups in prop::collection::vec(0i64..320, 0..200),
            ascending in any::<bool>(),
        ) {
            let mut model: BTreeMap<i64, i64> = loaded.iter().copied().collect();
            let mut table =
                Table::from_rows(loaded.iter().map(|&(r, g)| (r, ranking(g))).collect());
            for batch in batches {
                let batch: BTreeMap<i64, Option<i64>> = batch.into_iter().collect();
                for (&rowid, group) in &batch {
                    match group {
                        Some(g) => model.insert(rowid, *g),
                        None => model.remove(&rowid),
                    };
                }
                table.apply(batch.into_iter().map(|(r, g)| (r, g.map(ranking))));
                prop_assert_eq!(table.len(), model.len());
            }
            if ascending {
                lookups.sort_unstable();
            }
            let mut cursor = table.cursor();
            for rowid in lookups {
                let expected = model.get(&rowid).copied();
                prop_assert_eq!(cursor.get(rowid).map(|r| r.group), expected);
                prop_assert_eq!(table.get(rowid).map(|r| r.group), expected);
            }
        }
    }

    #[test]
    fn removed_rows_are_reclaimed_once_a_quarter_of_the_table() {
        let mut table = Table::from_rows((1..=1000).map(|r| (r, ranking(r))).collect());
        table.apply((1..=200).map(|r| (r, None)));
        assert_eq!(table.rows.len(), 1000, "a fifth removed: kept as holes");
        table.apply((201..=300).map(|r| (r, None)));
        assert_eq!(table.rows.len(), 700, "three tenths removed: reclaimed");
        assert_eq!(table.len(), 700);
        assert!(table.get(300).is_none());
        assert_eq!(table.get(301).map(|r| r.group), Some(301));
    }
}
