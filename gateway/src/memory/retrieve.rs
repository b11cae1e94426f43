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
        rows = matching(c, eligibility, keep, narrow, &filter, &words)?;
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

/// The eligible memories (`filter`) that say any of `words`, with their BM25 relevance: the
/// words looked up among the memories of the scopes with eligible members (the index touches
/// nothing else), the eligibility filter applied before any row is read; BM25 computed here,
/// over what is left.
fn matching(
    c: &Connection,
    eligibility: &Eligibility,
    keep: &dyn Fn(&Group) -> bool,
    narrow: &Narrow,
    filter: &str,
    words: &[Term],
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
        "SELECT {COLUMNS} FROM memories_fts JOIN memories m ON m.fts_rowid = memories_fts.rowid
         WHERE memories_fts MATCH ?1 AND {filter}{narrowing}"
    );
    let mut stmt = c.prepare_cached(&sql)?;
    let mut found = stmt.query(params_from_iter(values))?;
    let mut matched = Vec::new();
    while let Some(r) = found.next()? {
        let norm: String = r.get(9)?;
        matched.push((row(r, 0.0)?, norm));
    }
    let scores = bm25(words, &matched, eligibility.total);
    Ok(matched
        .into_iter()
        .zip(scores)
        .map(|((mut r, _), lexical)| {
            r.0.relevance = ((r.0.relevance + lexical) * 1000.0).round() / 1000.0;
            r
        })
        .collect())
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

/// Okapi BM25 (k1 1.2, b 0.75) of each matched memory's normalised text for `words`, as a
/// share of the most a memory could score (every word, often): 0 to 1. Document frequencies
/// are over every stored memory (`total`); the average length over the matched ones.
fn bm25<T>(words: &[Term], matched: &[(T, String)], total: u64) -> Vec<f64> {
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
    let lengths: Vec<f64> = matched
        .iter()
        .map(|(_, norm)| norm.split(' ').count() as f64)
        .collect();
    let average = (lengths.iter().sum::<f64>() / lengths.len().max(1) as f64).max(1.0);
    matched
        .iter()
        .zip(&lengths)
        .map(|((_, norm), length)| {
            let mut score = 0.0;
            for (t, idf) in words.iter().zip(&idf) {
                let tf = norm.split(' ').filter(|w| *w == t.word).count() as f64;
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
    let usage = r.get::<_, i64>(6)?.max(0) as f64;
    let score: ScoreParts =
        serde_json::from_str(&r.get::<_, String>(7)?).map_err(StoreError::corrupt)?;
    let class_weight = match class {
        MemoryClass::Preference => 0.3,
        MemoryClass::Warning => 0.2,
        MemoryClass::Procedure => 0.15,
        MemoryClass::Fact => 0.1,
        MemoryClass::Summary => 0.0,
    };
    let support = 0.05 * f64::from(strength).ln_1p() + 0.02 * usage.ln_1p();
    let recency = 0.05 * score.recency;
    // Feedback from those who used it: helpful raises it, unhelpful lowers it, a little.
    let helpful = r.get::<_, i64>(10)?.max(0) as f64;
    let unhelpful = r.get::<_, i64>(11)?.max(0) as f64;
    let feedback = 0.05 * helpful.ln_1p() - 0.05 * unhelpful.ln_1p();
    let relevance =
        ((lexical + class_weight + support + recency + feedback) * 1000.0).round() / 1000.0;
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
