//! Memory retrieval, a context source of the compiler. Policy decides first: the memory
//! pack decides eligibility (scope, clearance, expiry, status, the envelopes' memory rules)
//! per group of memories sharing the metadata it looks at (`groups`), and the eligible groups
//! become the store's filter, so an ineligible memory is never read or scored. The eligible
//! ones are ranked by BM25 relevance to what the compile is about (SQLite FTS5), then a little
//! for class, strength, use and recency, ties by id. The chosen ones become candidate items of
//! kind `memory`; the compile decides and budgets them like any other item, and a `MemoryLink`
//! records each one it included.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use rusqlite::{Connection, OptionalExtension, params, params_from_iter};
use tollgate_rules::envelope::{EnvelopeSet, Level};

use super::groups::{Eligibility, Group};
use super::store::stored_level;
use super::{MemoryClass, MemoryError, ScoreParts, dedupe};
use crate::compiler::{CandidateItem, ItemKind};
use crate::recorder::events::{RetrievalExclusion, RetrievalVerdict};
use crate::recorder::format::RunHeader;
use crate::store::{Store, StoreError};

/// At most this many memories are offered to one compile.
pub const RETRIEVE_LIMIT: usize = 8;

/// How many of the best lexical matches are re-ranked with class, strength, use and recency.
const POOL: usize = 64;

/// At most this many distinct words of a query are looked up (the rarest first).
const QUERY_TERMS: usize = 32;

/// A retrieval: the items to offer, the ranked memories' verdicts and what policy withheld.
#[derive(Debug, Clone, PartialEq)]
pub struct Retrieval {
    /// The memories offered, as candidate items, best first.
    pub items: Vec<CandidateItem>,
    /// The ranked memories' verdicts, best first: the offered ones, then the next few.
    pub verdicts: Vec<RetrievalVerdict>,
    /// What policy withheld, by reason.
    pub withheld: Vec<RetrievalExclusion>,
}

/// Retrieves the memories a compile for `header`'s run about `query` may use at `now`
/// (seconds since the epoch), under `set`.
pub fn retrieve(
    store: &Store,
    set: &EnvelopeSet,
    header: &RunHeader,
    query: &str,
    now: i64,
) -> Result<Retrieval, MemoryError> {
    let eligibility = Eligibility::decide(store, set, header, now)?;
    let query = query.to_string();
    let (ranked, withheld) = store.read(move |c| {
        let ranked = ranked(c, &eligibility, &|_| true, &Narrow::default(), &query, POOL)?;
        Ok((ranked, eligibility.withheld(c, true)?))
    })?;
    let mut items = Vec::new();
    let mut verdicts = Vec::new();
    for (i, m) in ranked.iter().take(RETRIEVE_LIMIT * 2).enumerate() {
        let offered = i < RETRIEVE_LIMIT;
        if offered {
            items.push(item(m));
        }
        verdicts.push(RetrievalVerdict {
            memory: m.id.clone(),
            eligible: true,
            reasons: Vec::new(),
            rules: m.rules.clone(),
            rank: Some(i as u32 + 1),
            relevance: Some(m.relevance),
            offered,
        });
    }
    Ok(Retrieval {
        items,
        verdicts,
        withheld,
    })
}

/// Narrowing beyond eligibility: only memories with a source in a run of this agent, task and
/// user (`metadata.user` of the run).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Narrow {
    pub(crate) agent: Option<String>,
    pub(crate) task: Option<String>,
    pub(crate) user: Option<String>,
}

impl Narrow {
    /// The SQL condition (starting ` AND `, empty when there is nothing to narrow) and its
    /// values, numbered from `?first`.
    fn condition(&self, first: usize) -> (String, Vec<rusqlite::types::Value>) {
        let mut values = Vec::new();
        let mut tests = String::new();
        for (column, value) in [
            ("r.agent", &self.agent),
            ("r.task", &self.task),
            ("json_extract(r.metadata, '$.user')", &self.user),
        ] {
            if let Some(v) = value {
                let _ = write!(tests, " AND {column} = ?{}", first + values.len());
                values.push(rusqlite::types::Value::Text(v.clone()));
            }
        }
        if values.is_empty() {
            return (String::new(), values);
        }
        (
            format!(
                " AND EXISTS (SELECT 1 FROM memory_sources s JOIN runs r ON r.id = s.run_id
                              WHERE s.memory_id = m.id{tests})"
            ),
            values,
        )
    }
}

/// An eligible memory, ranked.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Ranked {
    pub(crate) id: String,
    pub(crate) class: MemoryClass,
    pub(crate) text: String,
    pub(crate) scope: String,
    pub(crate) sensitivity: Level,
    /// Its relevance: lexical, plus class, strength, use and recency.
    pub(crate) relevance: f64,
    /// The rule of the proof of its eligibility.
    pub(crate) rules: Vec<String>,
}

/// The eligible memories whose group `keep` accepts, narrowed by `narrow`, best first: at
/// most `limit`. With words to match, the best lexical matches (BM25) among the eligible ones;
/// without, the strongest and most used of each eligible group.
pub(crate) fn ranked(
    c: &Connection,
    eligibility: &Eligibility,
    keep: &dyn Fn(&Group) -> bool,
    narrow: &Narrow,
    query: &str,
    limit: usize,
) -> Result<Vec<Ranked>, StoreError> {
    let Some(filter) = eligibility.filter(keep) else {
        return Ok(Vec::new());
    };
    let rules_of = |group: i64| {
        eligibility
            .parts
            .iter()
            .find(|p| p.group.id == group && p.verdict.eligible)
            .map(|p| p.rules())
            .unwrap_or_default()
    };
    let mut rows = Vec::new();
    let words = query_terms(c, query)?;
    if words.is_empty() {
        // Each eligible part by the rank index, then merged.
        for part in eligibility.eligible(keep) {
            let (narrowing, values) = narrow.condition(1);
            let sql = format!(
                "SELECT {COLUMNS} FROM memories m INDEXED BY memories_by_group_rank
                 WHERE {}{narrowing}
                 ORDER BY m.group_id, m.strength DESC, m.usage_count DESC, m.id LIMIT {limit}",
                part.condition(eligibility.now),
            );
            let mut stmt = c.prepare_cached(&sql)?;
            let mut found = stmt.query(params_from_iter(values))?;
            while let Some(r) = found.next()? {
                rows.push(row(r, 0.0)?);
            }
        }
    } else {
        rows = matching(c, eligibility, keep, narrow, &filter, &words, limit)?;
    }
    // Ranked and cut first: the eligibility rule is looked up only for what is kept (a match
    // set runs to thousands of rows, the parts to hundreds).
    rows.sort_by(|(a, _), (b, _)| b.relevance.total_cmp(&a.relevance).then(a.id.cmp(&b.id)));
    rows.truncate(limit);
    Ok(rows
        .into_iter()
        .map(|(r, group)| Ranked {
            rules: rules_of(group),
            ..r
        })
        .collect())
}

/// The columns `row` reads.
const COLUMNS: &str = "m.id, m.class, m.text, m.scope, m.sensitivity, m.strength, m.usage_count, \
                       m.score, m.group_id, m.norm, m.helpful, m.unhelpful";

/// The eligible memories (`filter`) that say any of `words`, with their BM25 relevance, best
/// first, at most `limit` (ties by id): the words looked up among the memories of the scopes
/// with eligible members (the index touches nothing else), the eligibility filter applied
/// before any row is read.
///
/// In two passes, so a match costs what ranking it needs and no more: the first reads of every
/// match only its length, word counts and the numeric parts of its relevance (no text, no
/// allocation); BM25 is computed over them; everything but recency (at most
/// [`RECENCY_WEIGHT`]) is then known, which bounds each match's relevance from below and
/// above. The second reads whole rows only for the matches whose upper bound reaches the
/// `limit`-th best lower bound — the only ones that can be among the best — and ranks them
/// exactly as reading every match would.
fn matching(
    c: &Connection,
    eligibility: &Eligibility,
    keep: &dyn Fn(&Group) -> bool,
    narrow: &Narrow,
    filter: &str,
    words: &[Term],
    limit: usize,
) -> Result<Vec<(Ranked, i64)>, StoreError> {
    let scopes: BTreeSet<&str> = eligibility
        .eligible(keep)
        .map(|p| p.group.scope.as_str())
        .collect();
    let expr = format!(
        "{{norm}}: ({}) AND {{scope_token}}: ({})",
        words
            .iter()
            .map(|t| format!("\"{}\"", t.word.replace('"', "\"\"")))
            .collect::<Vec<_>>()
            .join(" OR "),
        scopes
            .iter()
            .map(|s| scope_token(s))
            .collect::<Vec<_>>()
            .join(" OR ")
    );
    let (narrowing, mut values) = narrow.condition(2);
    values.insert(0, rusqlite::types::Value::Text(expr));
    let sql = format!(
        "SELECT m.rowid, m.norm, m.class, m.strength, m.usage_count, m.helpful, m.unhelpful
         FROM memories_fts JOIN memories m ON m.fts_rowid = memories_fts.rowid
         WHERE memories_fts MATCH ?1 AND {filter}{narrowing}"
    );
    let mut stmt = c.prepare_cached(&sql)?;
    let mut found = stmt.query(params_from_iter(values))?;
    let mut matched: Vec<Match> = Vec::new();
    while let Some(r) = found.next()? {
        let norm = r.get_ref(1)?.as_str().map_err(StoreError::corrupt)?;
        let class = r.get_ref(2)?.as_str().map_err(StoreError::corrupt)?;
        let class = MemoryClass::parse(class)
            .ok_or_else(|| StoreError::Corrupt(format!("memory class `{class}`")))?;
        let mut counts = [0u16; QUERY_TERMS];
        let mut length = 0u32;
        for w in norm.split(' ') {
            length += 1;
            if let Some(i) = words.iter().position(|t| t.word == w) {
                counts[i] = counts[i].saturating_add(1);
            }
        }
        matched.push(Match {
            rowid: r.get(0)?,
            length,
            counts,
            base: base_relevance(
                class,
                r.get(3)?,
                r.get::<_, i64>(4)?,
                r.get::<_, i64>(5)?,
                r.get::<_, i64>(6)?,
            ),
        });
    }
    let lexical = bm25(words, &matched, eligibility.total);
    // Bounds of each match's relevance, rounded as `row` rounds (twice, to 0.001): recency
    // adds between 0 and RECENCY_WEIGHT; rounding moves a value by at most 0.001 in all.
    const SLACK: f64 = 0.002;
    let mut bounds: Vec<(f64, f64, usize)> = matched
        .iter()
        .zip(&lexical)
        .enumerate()
        .map(|(i, (m, l))| (m.base + l - SLACK, m.base + l + RECENCY_WEIGHT + SLACK, i))
        .collect();
    let floor = if bounds.len() > limit {
        bounds.select_nth_unstable_by(limit - 1, |a, b| b.0.total_cmp(&a.0));
        bounds[limit - 1].0
    } else {
        f64::NEG_INFINITY
    };
    let mut whole = c.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM memories m WHERE m.rowid = ?1"
    ))?;
    let mut out = Vec::new();
    for &(_, upper, i) in bounds.iter().filter(|b| b.1 >= floor) {
        let mut rows = whole.query([matched[i].rowid])?;
        if let Some(r) = rows.next()? {
            let (mut ranked, group) = row(r, 0.0)?;
            ranked.relevance = ((ranked.relevance + lexical[i]) * 1000.0).round() / 1000.0;
            debug_assert!(
                ranked.relevance <= upper,
                "{} above its bound {upper}",
                ranked.id
            );
            out.push((ranked, group));
        }
    }
    Ok(out)
}

/// The most recency adds to a memory's relevance (its score's recency is 0 to 1).
const RECENCY_WEIGHT: f64 = 0.05;

/// What the first pass of [`matching`] keeps of a match.
#[derive(Debug, Clone, Copy)]
struct Match {
    rowid: i64,
    /// Words in its normalised text.
    length: u32,
    /// How often it says each query word.
    counts: [u16; QUERY_TERMS],
    /// Its relevance but for the lexical and recency parts.
    base: f64,
}

/// A query word and how many memories say it.
#[derive(Debug, Clone, PartialEq)]
struct Term {
    word: String,
    documents: u64,
}

/// A word more memories than this say is left out of a query, as a stop word, unless every
/// word of the query is that common (then the rarest is kept): looking it up walks that many
/// postings, and its BM25 weight is low. A memory that shares only such words with the query
/// is not found. An absolute count, as the cost is: a store of a hundred thousand memories
/// keeps nearly every word. `benches/memory_search.rs` at a million memories: no limit (a
/// word in 10% kept), p99 18.6 ms; this one, 9 ms.
const MAX_POSTINGS: u64 = 20_000;

/// The words of `query` to look up: those some memory says, without the very common ones
/// ([`MAX_POSTINGS`]) unless all are, the rarest first (ties alphabetical), at most
/// [`QUERY_TERMS`].
fn query_terms(c: &Connection, query: &str) -> Result<Vec<Term>, StoreError> {
    let mut stmt = c.prepare_cached("SELECT documents FROM memory_words WHERE word = ?1")?;
    let mut found = Vec::new();
    for word in terms(query) {
        let documents: Option<i64> = stmt.query_row([&word], |r| r.get(0)).optional()?;
        if let Some(d) = documents.filter(|d| *d > 0) {
            found.push(Term {
                word,
                documents: d as u64,
            });
        }
    }
    found.sort_by(|a, b| a.documents.cmp(&b.documents).then(a.word.cmp(&b.word)));
    let uncommon = found.iter().filter(|t| t.documents <= MAX_POSTINGS).count();
    found.truncate(uncommon.clamp(1, QUERY_TERMS));
    Ok(found)
}

/// The FTS token of a scope (as the migration's triggers write it).
fn scope_token(scope: &str) -> String {
    let mut out = String::with_capacity(1 + 2 * scope.len());
    out.push('s');
    for b in scope.bytes() {
        let _ = write!(out, "{b:02x}");
    }
    out
}

/// Okapi BM25 (k1 1.2, b 0.75) of each matched memory for `words`, from its length and word
/// counts, as a share of the most a memory could score (every word, often): 0 to 1. Document
/// frequencies are over every stored memory (`total`); the average length over the matched
/// ones.
fn bm25(words: &[Term], matched: &[Match], total: u64) -> Vec<f64> {
    const K1: f64 = 1.2;
    const B: f64 = 0.75;
    let n = total.max(1) as f64;
    let idf: Vec<f64> = words
        .iter()
        .map(|t| {
            let df = t.documents as f64;
            ((n - df + 0.5) / (df + 0.5) + 1.0).ln()
        })
        .collect();
    let most: f64 = idf.iter().sum::<f64>() * (K1 + 1.0);
    let average = (matched.iter().map(|m| f64::from(m.length)).sum::<f64>()
        / matched.len().max(1) as f64)
        .max(1.0);
    matched
        .iter()
        .map(|m| {
            let length = f64::from(m.length);
            let mut score = 0.0;
            for (count, idf) in m.counts.iter().zip(&idf) {
                let tf = f64::from(*count);
                if tf > 0.0 {
                    score += idf * tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * length / average));
                }
            }
            if most > 0.0 { score / most } else { 0.0 }
        })
        .collect()
}

/// A ranked memory from a row of `ranked`'s columns (its group id beside it): its relevance
/// the class, strength, use, recency and feedback parts plus `lexical`.
fn row(r: &rusqlite::Row<'_>, lexical: f64) -> Result<(Ranked, i64), StoreError> {
    let id: String = r.get(0)?;
    let corrupt = |what: &str| StoreError::Corrupt(format!("memory `{id}`: {what}"));
    let class = MemoryClass::parse(&r.get::<_, String>(1)?).ok_or_else(|| corrupt("class"))?;
    let strength: u32 = r.get(5)?;
    let score: ScoreParts =
        serde_json::from_str(&r.get::<_, String>(7)?).map_err(StoreError::corrupt)?;
    let helpful = r.get::<_, i64>(10)?;
    let unhelpful = r.get::<_, i64>(11)?;
    let base = base_relevance(class, strength, r.get::<_, i64>(6)?, helpful, unhelpful);
    let recency = RECENCY_WEIGHT * score.recency.clamp(0.0, 1.0);
    let relevance = ((lexical + base + recency) * 1000.0).round() / 1000.0;
    Ok((
        Ranked {
            class,
            text: r.get(2)?,
            scope: r.get(3)?,
            sensitivity: stored_level(&id, r.get(4)?)?,
            id,
            relevance,
            rules: Vec::new(),
        },
        r.get(8)?,
    ))
}

/// A memory's relevance but for the lexical and recency parts: its class, its support
/// (strength, use) and the feedback of those who used it (helpful raises it, unhelpful lowers
/// it, a little).
fn base_relevance(
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

/// Words worth matching: lowercase, three letters or more, not the commonest English words.
fn terms(text: &str) -> BTreeSet<String> {
    const STOP: [&str; 24] = [
        "the", "and", "for", "with", "that", "this", "from", "are", "was", "not", "but", "you",
        "your", "have", "has", "its", "our", "all", "any", "can", "will", "into", "out", "one",
    ];
    dedupe::normalise(text)
        .split(' ')
        .filter(|w| w.chars().count() >= 3 && !STOP.contains(w))
        .map(str::to_string)
        .collect()
}

/// A memory as a candidate item of the compile.
fn item(m: &Ranked) -> CandidateItem {
    let mut item = CandidateItem::new(
        &m.id,
        ItemKind::Memory,
        format!("{} ({}): {}", m.class.as_str(), m.id, m.text),
    );
    item.scope = m.scope.clone();
    item.sensitivity = m.sensitivity;
    item.weight = 1.0 + m.relevance;
    item
}

/// Records that a compile of `run` (its `compile` event `seq`) included memory `id`, why, and
/// counts the use; with the provenance edge `memory → event`.
pub(crate) fn link_in(
    c: &rusqlite::Connection,
    id: &str,
    run: &str,
    seq: u64,
    reason: &str,
    at: &str,
) -> Result<(), StoreError> {
    let added = c.execute(
        "INSERT OR IGNORE INTO memory_links (memory_id, run_id, compile_seq, reason, at)
         VALUES (?1, ?2, ?3, ?4, ?5)",
        params![id, run, seq as i64, reason, at],
    )? == 1;
    if added {
        c.execute(
            "UPDATE memories SET usage_count = usage_count + 1 WHERE id = ?1",
            [id],
        )?;
        c.execute(
            "INSERT OR IGNORE INTO provenance_edges (parent, child, relation)
             VALUES (?1, ?2, 'retrieved')",
            params![format!("memory:{id}"), format!("event:{run}/{seq}")],
        )?;
    }
    Ok(())
}
