//! What ranking reads of each memory, kept in memory beside the store: its group and expiry
//! (for the eligibility filter), its length and the numeric parts of its relevance. A search
//! looks its matches up here instead of probing `memories` once per match, which cost about a
//! microsecond each and was most of a search from a large organisation (BENCHMARKS.md, memory
//! search).
//!
//! The store stays the truth. The triggers of migration 0015 log every change to what is kept
//! here in `memory_changes`; each search first reads the log past the last change it applied
//! and reloads those memories (or every memory, when the log no longer reaches back that far or
//! the database is not the one it was). So a search sees at least the state of the store when
//! it began, whichever process wrote it.
//!
//! A change's number is not its commit order everywhere: on PostgreSQL, a writer that took
//! number 10 may commit after one that took 11. A reader that has read up to 11 without 10
//! keeps 10 as a gap and looks for it at each catch-up until it appears (then reloads that
//! memory), for [`GAP_PATIENCE`] (longer than any write of the store takes: a number still
//! missing then was rolled back) or until the log is trimmed past it (then reloads everything).
//! On SQLite, with one writer, numbers commit in order and there are no gaps.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{RwLock, RwLockReadGuard};
use std::time::{Duration, Instant};

use crate::store::{Connection, OptionalExtension, params_from_iter};

use super::MemoryClass;
use crate::store::{Store, StoreError};

mod table;

pub(crate) use table::Cursor;
use table::Table;

/// One memory as ranking sees it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Ranking {
    pub(crate) group: i64,
    pub(crate) expires_at: i64,
    /// Words in its normalised text.
    pub(crate) length: u32,
    /// The words its text says more than once, and how often (most say each word once).
    pub(crate) repeated: Repeated,
    /// The [`Signature`]s of the repeated words together: a word whose signature has a bit
    /// not set here is said once, known without reading `repeated` (a cache miss a match).
    pub(crate) repeats: u64,
    /// Its relevance but for the lexical part: class, support, feedback and recency, rounded
    /// ([`fixed_relevance`]).
    pub(crate) fixed: f64,
}

impl Ranking {
    /// How often its text says `word` (of signature `signed`), knowing it says it.
    pub(crate) fn count(&self, word: &str, signed: Signature) -> u16 {
        if self.repeats & signed.0 != signed.0 {
            return 1;
        }
        self.repeated
            .iter()
            .find(|(w, _)| &**w == word)
            .map_or(1, |(_, n)| *n)
    }
}

/// Words said more than once, and how often.
pub(crate) type Repeated = Box<[(Box<str>, u16)]>;

/// Two bits of 64 chosen by a word's FNV-1a hash: a one-word Bloom filter of the words a
/// memory repeats ([`Ranking::repeats`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Signature(u64);

impl Signature {
    pub(crate) fn of(word: &str) -> Signature {
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        for b in word.bytes() {
            hash = (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
        Signature((1 << (hash & 63)) | (1 << ((hash >> 6) & 63)))
    }
}

/// Every memory's [`Ranking`], by its full-text rowid, as of change `seen` of the log but for
/// the changes numbered in `gaps` (not committed when the numbers after them were read).
#[derive(Debug, Default)]
pub(crate) struct Columns {
    loaded: bool,
    seen: i64,
    /// Grows with every change applied (and every load): what is derived from the memories'
    /// groups and expiries (`groups::Chains`) is as current as the columns while this has not
    /// moved.
    generation: u64,
    /// Each gap, with when it was first missed.
    gaps: BTreeMap<i64, Instant>,
    rankings: Table,
}

/// Most gaps kept: past this many, everything is loaded again (and a load keeps the gaps of
/// the last this many numbers only: a write still open is a recent one).
const MAX_GAPS: usize = 4096;

/// How long a gap is looked for: a number missing this long after the ones past it were read
/// belongs to a write that was rolled back.
pub(crate) const GAP_PATIENCE: Duration = Duration::from_secs(30);

impl Columns {
    /// A memory's ranking columns.
    #[cfg(test)]
    pub(crate) fn get(&self, rowid: i64) -> Option<&Ranking> {
        self.rankings.get(rowid)
    }

    /// Memories' ranking columns looked up in ascending row id order (as postings come): much
    /// faster than one [`Columns::get`] each.
    pub(crate) fn cursor(&self) -> Cursor<'_> {
        self.rankings.cursor()
    }

    /// How many times what the columns hold has changed since the store was opened: the same
    /// number, the same memories (their groups, expiries and ranking columns) as of the log.
    pub(crate) fn generation(&self) -> u64 {
        self.generation
    }
}

/// The columns a store keeps (one per store, shared by its clones).
#[derive(Debug, Default)]
pub(crate) struct Kept(RwLock<Columns>);

/// The columns of `store`, brought up to what `c` sees.
pub(crate) fn current<'a>(
    kept: &'a Kept,
    c: &Connection,
) -> Result<RwLockReadGuard<'a, Columns>, StoreError> {
    let (first, last): (Option<i64>, Option<i64>) =
        c.query_row(LOG_ENDS, (), |r| Ok((r.get(0)?, r.get(1)?)))?;
    let last = last.unwrap_or(0);
    {
        let columns = kept.0.read().unwrap_or_else(|e| e.into_inner());
        if columns.loaded && columns.seen == last && columns.gaps.is_empty() {
            return Ok(columns);
        }
    }
    {
        let mut columns = kept.0.write().unwrap_or_else(|e| e.into_inner());
        // Another search may have caught up (or gone further) meanwhile: never go back.
        if !(columns.loaded && columns.seen >= last && columns.gaps.is_empty()) {
            // The log no longer reaches back to the oldest change not applied (another
            // database at this path, one restored, or a trimmed log): load everything.
            let now = Instant::now();
            columns
                .gaps
                .retain(|_, missed| now.duration_since(*missed) < GAP_PATIENCE);
            let oldest = columns
                .gaps
                .first_key_value()
                .map_or(columns.seen + 1, |(seq, _)| *seq);
            let reaches = first.is_none_or(|f| f <= oldest);
            if !columns.loaded || !reaches || !apply_changes(&mut columns, c, last)? {
                let generation = columns.generation + 1;
                *columns = load_all(c, first, last)?;
                columns.generation = generation;
            }
        }
    }
    Ok(kept.0.read().unwrap_or_else(|e| e.into_inner()))
}

/// The columns of `store` as they are, brought up to date only when never loaded: for ranking
/// right after the eligibility decision, which brought them up to what its connection saw
/// (`groups::Eligibility::decide`), so a search reads the log once, not twice.
pub(crate) fn as_decided<'a>(
    kept: &'a Kept,
    c: &Connection,
) -> Result<RwLockReadGuard<'a, Columns>, StoreError> {
    {
        let columns = kept.0.read().unwrap_or_else(|e| e.into_inner());
        if columns.loaded {
            return Ok(columns);
        }
    }
    current(kept, c)
}

/// The first and last change of the log. Two subqueries: SQLite reads a lone MIN or MAX from
/// the end of the key, but scans the whole log for the two in one query (5 ms for 100,000
/// changes, on every search).
const LOG_ENDS: &str =
    "SELECT (SELECT MIN(seq) FROM memory_changes), (SELECT MAX(seq) FROM memory_changes)";

/// Loads the ranking columns of `store` now (a server calls it at start, on a thread of its
/// own, so the first search does not pay the load: about a second at a million memories).
pub fn warm(store: &Store) -> Result<(), StoreError> {
    let kept = of(store);
    store.read_scan(move |c| current(&kept, c).map(drop))
}

/// The columns a store keeps, made on first use.
pub(crate) fn of(store: &Store) -> std::sync::Arc<Kept> {
    store.derived::<Kept>()
}

const COLUMNS: &str = "fts_rowid, group_id, expires_at, norm, class, strength, usage_count, \
                       helpful, unhelpful, score";

fn load_all(c: &Connection, first: Option<i64>, last: i64) -> Result<Columns, StoreError> {
    // The numbers the log lacks are changes not committed yet (on PostgreSQL), which this
    // load does not see either: kept as gaps, to be looked for.
    let mut gaps = BTreeMap::new();
    if let Some(first) = first {
        let now = Instant::now();
        let from = first.max(last - MAX_GAPS as i64 + 1);
        let mut stmt = c.prepare("SELECT seq FROM memory_changes WHERE seq >= ?1 ORDER BY seq")?;
        let mut expected = from;
        for seq in stmt.query_map([from], |r| r.get::<i64>(0))? {
            let seq = seq?;
            gaps.extend((expected..seq).map(|n| (n, now)));
            expected = seq + 1;
        }
    }
    let mut stmt = c.prepare(&format!(
        "SELECT {COLUMNS} FROM memories WHERE fts_rowid IS NOT NULL"
    ))?;
    let mut rows = stmt.query(())?;
    let mut all = Vec::new();
    while let Some(r) = rows.next()? {
        all.push(ranking(&r)?);
    }
    Ok(Columns {
        loaded: true,
        seen: last,
        generation: 0,
        gaps,
        rankings: Table::from_rows(all),
    })
}

/// Applies the changes after `seen` up to `last` and those of the gaps that have appeared;
/// `false` (nothing applied) when there would be more gaps than [`MAX_GAPS`].
fn apply_changes(columns: &mut Columns, c: &Connection, last: i64) -> Result<bool, StoreError> {
    let mut changed = BTreeSet::new();
    let upto = last.max(columns.seen);
    let mut gaps = columns.gaps.clone();
    let now = Instant::now();
    {
        let mut stmt = c.prepare_cached(
            "SELECT seq, fts_rowid FROM memory_changes WHERE seq > ?1 AND seq <= ?2 ORDER BY seq",
        )?;
        let mut expected = columns.seen + 1;
        for row in stmt.query_map([columns.seen, upto], |r| {
            Ok((r.get::<i64>(0)?, r.get::<i64>(1)?))
        })? {
            let (seq, rowid) = row?;
            if seq - expected > MAX_GAPS as i64 {
                return Ok(false);
            }
            gaps.extend((expected..seq).map(|n| (n, now)));
            expected = seq + 1;
            changed.insert(rowid);
        }
        // `upto` is the log's last number or one already read: no gap past the last row.
    }
    let looked_for: Vec<i64> = columns.gaps.keys().copied().collect();
    if !looked_for.is_empty() {
        let marks = (1..=looked_for.len())
            .map(|i| format!("?{i}"))
            .collect::<Vec<_>>()
            .join(", ");
        let mut stmt = c.prepare(&format!(
            "SELECT seq, fts_rowid FROM memory_changes WHERE seq IN ({marks})"
        ))?;
        for row in stmt.query_map(params_from_iter(looked_for.iter()), |r| {
            Ok((r.get::<i64>(0)?, r.get::<i64>(1)?))
        })? {
            let (seq, rowid) = row?;
            gaps.remove(&seq);
            changed.insert(rowid);
        }
    }
    if gaps.len() > MAX_GAPS {
        return Ok(false);
    }
    if !changed.is_empty() {
        columns.generation += 1;
    }
    let mut stmt = c.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM memories WHERE fts_rowid = ?1"
    ))?;
    let mut now_held = Vec::with_capacity(changed.len());
    for rowid in changed {
        match stmt.query_row([rowid], |r| Ok(ranking(r))).optional()? {
            Some(found) => {
                let (_, ranking) = found?;
                now_held.push((rowid, Some(ranking)));
            }
            None => now_held.push((rowid, None)),
        }
    }
    columns.rankings.apply(now_held);
    columns.seen = upto;
    columns.gaps = gaps;
    Ok(true)
}

/// A row of [`COLUMNS`] as ranking sees it.
fn ranking(r: &crate::store::Row<'_>) -> Result<(i64, Ranking), StoreError> {
    let rowid: i64 = r.get(0)?;
    let norm = r.value(3)?.as_str()?;
    let length = norm.split(' ').count() as u32;
    let (repeated, repeats) = repeats_of(norm);
    let class = r.value(4)?.as_str()?;
    let class = MemoryClass::parse(class)
        .ok_or_else(|| StoreError::Corrupt(format!("memory class `{class}`")))?;
    // A score that does not parse ranks as if not recent; reading the row (the second pass of
    // ranking, for the best matches only) reports it as corrupt, as before these columns.
    let recency = r
        .value(9)?
        .as_str()
        .ok()
        .and_then(|s| serde_json::from_str::<Recency>(s).ok())
        .map_or(0.0, |s| s.recency);
    let base = base_relevance(class, r.get(5)?, r.get(6)?, r.get(7)?, r.get(8)?);
    Ok((
        rowid,
        Ranking {
            group: r.get::<Option<i64>>(1)?.unwrap_or(0),
            expires_at: r.get(2)?,
            length,
            repeated,
            repeats,
            fixed: fixed_relevance(base, recency),
        },
    ))
}

/// The words `norm` says more than once, how often, and their signatures together.
fn repeats_of(norm: &str) -> (Repeated, u64) {
    let mut words: Vec<(&str, u16)> = Vec::new();
    for w in norm.split(' ') {
        match words.iter_mut().find(|(seen, _)| *seen == w) {
            Some((_, n)) => *n = n.saturating_add(1),
            None => words.push((w, 1)),
        }
    }
    let repeated: Repeated = words
        .into_iter()
        .filter(|(_, n)| *n > 1)
        .map(|(w, n)| (Box::from(w), n))
        .collect();
    let repeats = repeated
        .iter()
        .fold(0, |bits, (w, _)| bits | Signature::of(w).0);
    (repeated, repeats)
}

/// The part of a memory's score ranking reads.
#[derive(serde::Deserialize)]
struct Recency {
    recency: f64,
}

/// The most recency adds to a memory's relevance (its score's recency is 0 to 1).
pub(crate) const RECENCY_WEIGHT: f64 = 0.05;

/// A memory's relevance but for the lexical part, to 0.001: its [`base_relevance`] and its
/// score's recency (0 to 1) weighed by [`RECENCY_WEIGHT`].
pub(crate) fn fixed_relevance(base: f64, recency: f64) -> f64 {
    ((base + RECENCY_WEIGHT * recency.clamp(0.0, 1.0)) * 1000.0).round() / 1000.0
}

/// A memory's relevance from its fixed part and the lexical one, to 0.001.
pub(crate) fn relevance(fixed: f64, lexical: f64) -> f64 {
    ((fixed + lexical) * 1000.0).round() / 1000.0
}

/// A memory's relevance but for the lexical and recency parts: its class, its support
/// (strength, use) and the feedback of those who used it (helpful raises it, unhelpful lowers
/// it, a little).
pub(crate) fn base_relevance(
    class: MemoryClass,
    strength: u32,
    usage: i64,
    helpful: i64,
    unhelpful: i64,
) -> f64 {
    let class_weight = match class {
        MemoryClass::Preference => 0.3,
        MemoryClass::Warning => 0.2,
        MemoryClass::Procedure => 0.15,
        MemoryClass::Fact => 0.1,
        MemoryClass::Summary => 0.0,
    };
    let support = 0.05 * f64::from(strength).ln_1p() + 0.02 * (usage.max(0) as f64).ln_1p();
    let feedback =
        0.05 * (helpful.max(0) as f64).ln_1p() - 0.05 * (unhelpful.max(0) as f64).ln_1p();
    class_weight + support + feedback
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    use crate::store::tests::tempdir::Dir;

    #[test]
    fn the_change_log_is_read_at_its_ends_not_scanned() {
        // SQLite's query plan (PostgreSQL reads the ends of a primary key the same way).
        let dir = Dir::new("columns");
        let store = crate::store::Store::open(&crate::store::tests::sqlite_location_in(dir.path()))
            .unwrap();
        let plan: Vec<String> = store
            .read(|c| {
                let mut stmt = c.prepare(&format!("EXPLAIN QUERY PLAN {LOG_ENDS}"))?;
                let rows = stmt.query_map((), |r| r.get(3))?;
                rows.collect::<Result<_, _>>()
            })
            .unwrap();
        assert!(
            plan.iter()
                .all(|step| !step.starts_with("SCAN memory_changes")),
            "{plan:?}"
        );
    }

    /// The signature is only a shortcut: every repeated word is counted, every other word of
    /// the text once, whatever bits their hashes share.
    #[test]
    fn a_memory_counts_each_word_as_often_as_its_text_says_it() {
        let mut text = Vec::new();
        for i in 0..200u16 {
            for _ in 0..=(i % 3) {
                text.push(format!("w{i}"));
            }
        }
        let norm = text.join(" ");
        let (repeated, repeats) = repeats_of(&norm);
        let ranking = Ranking {
            group: 1,
            expires_at: 0,
            length: text.len() as u32,
            repeated,
            repeats,
            fixed: 0.0,
        };
        for i in 0..200u16 {
            let word = format!("w{i}");
            assert_eq!(
                ranking.count(&word, Signature::of(&word)),
                i % 3 + 1,
                "{word}"
            );
        }
        assert!(
            repeats.count_ones() > 32,
            "most bits set: the shortcut rarely helps here"
        );
    }

    fn insert(c: &Connection, id: &str, strength: i64) -> Result<(), StoreError> {
        c.execute(
            "INSERT INTO memories (id, class, text, norm, scope, sensitivity, status, pinned,
                 ttl_seconds, expires_at, strength, usage_count, helpful, score, extractor,
                 created_at, updated_at)
             VALUES (?1, 'fact', 'the words', 'the words', 'org:acme', 'internal', 'approved', 0,
                     0, 0, ?2, 0, 0, '{\"recency\": 0.5}', 'test', 't', 't')",
            crate::store::params![id, strength],
        )?;
        Ok(())
    }

    fn strength_of(store: &Store, id: &'static str) -> f64 {
        let kept = of(store);
        store
            .read(move |c| {
                let rowid: i64 =
                    c.query_row("SELECT fts_rowid FROM memories WHERE id = ?1", [id], |r| {
                        r.get(0)
                    })?;
                let columns = current(&kept, c)?;
                Ok(columns.get(rowid).map_or(-1.0, |r| r.fixed))
            })
            .unwrap()
    }

    /// A change whose number commits after a later number was read (as on PostgreSQL, where
    /// sequence values commit out of order) is still applied: the reader keeps its number as a
    /// gap and finds it at a later catch-up, rather than skipping it for good.
    #[test]
    fn a_change_numbered_before_one_already_read_is_applied_when_it_commits() {
        let dir = Dir::new("columns-gap");
        let store = crate::store::tests::open_in(dir.path());
        store
            .write(|c| {
                insert(c, "late", 1)?;
                insert(c, "early", 1)
            })
            .unwrap();
        let before = strength_of(&store, "late");
        assert_eq!(strength_of(&store, "early"), before);
        // Two changes, `late` numbered first; its log row is withheld as if its writer had not
        // committed yet when the reader looked.
        let withheld: (i64, i64) = store
            .write(|c| {
                c.execute("UPDATE memories SET strength = 50 WHERE id = 'late'", ())?;
                c.execute("UPDATE memories SET strength = 50 WHERE id = 'early'", ())?;
                let late: (i64, i64) = c.query_row(
                    "SELECT seq, fts_rowid FROM memory_changes ORDER BY seq DESC LIMIT 1 OFFSET 1",
                    (),
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )?;
                c.execute("DELETE FROM memory_changes WHERE seq = ?1", [late.0])?;
                Ok(late)
            })
            .unwrap();
        let after_early = strength_of(&store, "early");
        assert!(after_early > before, "the change read is applied");
        // The reader has read past `late`'s number; `late`'s row in `memories` changed, but the
        // log has not said so yet, so the kept columns may still hold the old value.
        assert_eq!(strength_of(&store, "late"), before);
        // The late writer commits its log row.
        store
            .write(move |c| {
                c.execute(
                    "INSERT INTO memory_changes (seq, fts_rowid) VALUES (?1, ?2)",
                    [withheld.0, withheld.1],
                )?;
                Ok(())
            })
            .unwrap();
        assert_eq!(
            strength_of(&store, "late"),
            after_early,
            "the late change is applied once it commits"
        );
        let kept = of(&store);
        assert!(kept.0.read().unwrap().gaps.is_empty(), "its gap is closed");
    }
}
