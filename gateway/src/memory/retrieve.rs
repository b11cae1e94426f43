//! Memory retrieval, a context source of the compiler. Policy decides first: the memory
//! pack decides eligibility (scope, clearance, expiry, status, the envelopes' memory rules)
//! per group of memories sharing the metadata it looks at (`groups`), and the eligible groups
//! become the store's filter, so an ineligible memory is never read or scored. The eligible
//! ones are ranked by BM25 relevance to what the compile is about (SQLite FTS5), then a little
//! for class, strength, use and recency, ties by id. The chosen ones become candidate items of
//! kind `memory`; the compile decides and budgets them like any other item, and a `MemoryLink`
//! records each one it included.

use std::collections::{BTreeSet, HashMap};
use std::fmt::Write as _;

use crate::store::{Connection, Dialect, IN_LIST, in_list, params, params_from_iter};
use tollgate_rules::envelope::{EnvelopeSet, Level};

use super::columns::{self, Signature, base_relevance, fixed_relevance, relevance};
use super::groups::{Eligibility, Group, Window};
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
#[derive(Debug, Clone, Default, PartialEq)]
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
    let kept = columns::of(store);
    let (ranked, withheld) = store.read_scan(move |c| {
        let ranked = ranked(
            c,
            &eligibility,
            &|_| true,
            &Narrow::default(),
            &kept,
            &query,
            POOL,
        )?;
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
    fn condition(&self, first: usize) -> (String, Vec<crate::store::Value>) {
        let mut values = Vec::new();
        let mut tests = String::new();
        for (column, value) in [
            ("r.agent", &self.agent),
            ("r.task", &self.task),
            ("r.user_id", &self.user),
        ] {
            if let Some(v) = value {
                let _ = write!(tests, " AND {column} = ?{}", first + values.len());
                values.push(crate::store::Value::Text(v.clone()));
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
    kept: &columns::Kept,
    query: &str,
    limit: usize,
) -> Result<Vec<Ranked>, StoreError> {
    if eligibility.eligible(keep).next().is_none() {
        return Ok(Vec::new());
    }
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
                "SELECT {COLUMNS} FROM memories m{}
                 WHERE {}{narrowing}
                 ORDER BY m.group_id, m.strength DESC, m.usage_count DESC, m.id LIMIT {limit}",
                c.dialect().indexed_by("memories_by_group_rank"),
                part.condition(eligibility.now),
            );
            let mut stmt = c.prepare_cached(&sql)?;
            let mut found = stmt.query(params_from_iter(values))?;
            while let Some(r) = found.next()? {
                rows.push(row(&r)?);
            }
        }
    } else {
        rows = matching(c, eligibility, keep, narrow, kept, &words, limit)?;
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

/// The columns `row` reads (and the expiry, to check a match is still eligible).
const COLUMNS: &str = "m.id, m.class, m.text, m.scope, m.sensitivity, m.strength, m.usage_count, \
                       m.score, m.group_id, m.norm, m.helpful, m.unhelpful, m.expires_at";

/// The eligible memories that say any of `words`, with their BM25 relevance, best first, at
/// most `limit` (ties by id). The index holds each word of a memory with its scope (SQLite's
/// FTS5 table, PostgreSQL's `memory_postings`), so only the postings of the scopes with
/// eligible members are looked up, each word's apart (which words a memory says is then
/// known), and the index touches nothing else.
///
/// In two passes, so a match costs what ranking it needs and no more. The first looks each
/// match up in the ranking columns kept in memory (`columns`): the eligibility filter, its
/// length, how often it says each query word and the rest of its relevance. BM25 is computed
/// over the eligible matches, which ranks every one of them exactly, no row read. The second
/// reads whole rows only for the best `limit` (and any tied with the last), checks they are
/// still eligible (a write may have come since the columns were read) and ranks them from the
/// rows, exactly as reading every match would.
fn matching(
    c: &Connection,
    eligibility: &Eligibility,
    keep: &dyn Fn(&Group) -> bool,
    narrow: &Narrow,
    kept: &columns::Kept,
    words: &[Term],
    limit: usize,
) -> Result<Vec<(Ranked, i64)>, StoreError> {
    let scopes: BTreeSet<&str> = eligibility
        .eligible(keep)
        .map(|p| p.group.scope.as_str())
        .collect();
    // The windows of each group policy lets through.
    let mut allowed: HashMap<i64, [bool; 3]> = HashMap::new();
    for p in eligibility.eligible(keep) {
        allowed.entry(p.group.id).or_default()[p.window as usize] = true;
    }
    let now = eligibility.now;
    let admits = |group: i64, expires_at: i64| {
        let window = if expires_at == 0 {
            Window::None
        } else if expires_at > now {
            Window::NotYet
        } else {
            Window::Passed
        };
        allowed.get(&group).is_some_and(|w| w[window as usize])
    };
    // Every posting of a visible scope's term for each word: (rowid, word).
    let mut postings = if scopes.is_empty() {
        Vec::new()
    } else {
        match c.dialect() {
            Dialect::Sqlite => fts5_postings(c, &scopes, words)?,
            Dialect::Postgres => btree_postings(c, &scopes, words)?,
        }
    };
    postings.sort_unstable();
    let (narrowing, values) = narrow.condition(2);
    let mut narrowed = (!narrowing.is_empty())
        .then(|| {
            c.prepare_cached(&format!(
                "SELECT 1 FROM memories m WHERE m.fts_rowid = ?1{narrowing}"
            ))
        })
        .transpose()?;
    let mut matched: Vec<Match> = Vec::new();
    let signatures: Vec<Signature> = words.iter().map(|t| Signature::of(&t.word)).collect();
    {
        // As the eligibility decision left them (it read the change log): a memory written
        // since is not among them and is skipped, one changed since is checked again on its
        // row below.
        let columns = columns::as_decided(kept, c)?;
        let mut columns = columns.cursor();
        for run in postings.chunk_by(|a, b| a.0 == b.0) {
            let rowid = run[0].0;
            let Some(r) = columns.get(rowid) else {
                continue;
            };
            if !admits(r.group, r.expires_at) {
                continue;
            }
            if let Some(stmt) = narrowed.as_mut() {
                let mut args = vec![crate::store::Value::Integer(rowid)];
                args.extend(values.iter().cloned());
                if !stmt.exists(params_from_iter(args))? {
                    continue;
                }
            }
            let mut counts = [0u16; QUERY_TERMS];
            for &(_, i) in run {
                counts[i as usize] = r.count(&words[i as usize].word, signatures[i as usize]);
            }
            matched.push(Match {
                rowid,
                length: r.length,
                counts,
                fixed: r.fixed,
            });
        }
    }
    let weights = Bm25::over(words, &matched, eligibility.total);
    let mut ranked: Vec<(f64, usize)> = matched
        .iter()
        .enumerate()
        .map(|(i, m)| (relevance(m.fixed, weights.score(m.length, &m.counts)), i))
        .collect();
    // The `limit`-th best relevance: the rows of every match reaching it (ties included, less
    // a rounding step for a memory written since its columns were read) are read whole.
    const SLACK: f64 = 0.001;
    let floor = if ranked.len() > limit {
        ranked.select_nth_unstable_by(limit - 1, |a, b| b.0.total_cmp(&a.0));
        ranked[limit - 1].0 - SLACK
    } else {
        f64::NEG_INFINITY
    };
    // Read in one statement per 32 rows (a round trip each on PostgreSQL); the caller orders
    // what is kept by relevance, then id.
    let wanted: Vec<i64> = ranked
        .iter()
        .filter(|b| b.0 >= floor)
        .map(|&(_, i)| matched[i].rowid)
        .collect();
    let mut out = Vec::new();
    for chunk in wanted.chunks(IN_LIST) {
        let mut whole = c.prepare_cached(&format!(
            "SELECT {COLUMNS} FROM memories m WHERE m.fts_rowid IN ({})",
            in_list(1)
        ))?;
        // Padded with a row id no memory has (they count from 1).
        let keys = (0..IN_LIST).map(|i| chunk.get(i).copied().unwrap_or(0));
        let mut rows = whole.query(params_from_iter(keys))?;
        while let Some(r) = rows.next()? {
            // Written since the columns were read: policy's filter again, on the row.
            if !admits(r.get(8)?, r.get(12)?) {
                continue;
            }
            let mut counts = [0u16; QUERY_TERMS];
            let mut length = 0u32;
            let norm = r.value(9)?.as_str()?;
            for w in norm.split(' ') {
                length += 1;
                if let Some(i) = words.iter().position(|t| t.word == w) {
                    counts[i] = counts[i].saturating_add(1);
                }
            }
            let lexical = weights.score(length, &counts);
            let (mut ranked, group) = row(&r)?;
            ranked.relevance = relevance(ranked.relevance, lexical);
            out.push((ranked, group));
        }
    }
    Ok(out)
}

/// SQLite: the FTS5 table, one query per word, a phrase per visible scope's term.
fn fts5_postings(
    c: &Connection,
    scopes: &BTreeSet<&str>,
    words: &[Term],
) -> Result<Vec<(i64, u32)>, StoreError> {
    let mut postings = Vec::new();
    let mut lookup =
        c.prepare_cached("SELECT rowid FROM memories_fts WHERE memories_fts MATCH ?1")?;
    for (i, t) in words.iter().enumerate() {
        let expr = scopes
            .iter()
            .map(|s| {
                let term = format!("{}w{}", scope_token(s), t.word);
                format!("\"{}\"", term.replace('"', "\"\""))
            })
            .collect::<Vec<_>>()
            .join(" OR ");
        let mut found = lookup.query([expr])?;
        while let Some(r) = found.next()? {
            postings.push((r.get(0)?, i as u32));
        }
    }
    Ok(postings)
}

/// PostgreSQL: the B-tree of postings (migration 0025), keyed by each memory's scope, a space
/// and a word of it: every (visible scope, query word) in one index-only scan per [`IN_LIST`]
/// of them (a search from a task asks three scopes, so one statement for up to ten words).
/// Each term's row ids come back as one value, eight big-endian bytes each: a row per posting
/// cost the client more than the server's scan (a common word has 28,000 in a large
/// organisation's scopes: 11 ms to receive and decode as rows, against 2 ms for the aggregate).
fn btree_postings(
    c: &Connection,
    scopes: &BTreeSet<&str>,
    words: &[Term],
) -> Result<Vec<(i64, u32)>, StoreError> {
    let mut terms: HashMap<String, u32> = HashMap::new();
    for scope in scopes {
        for (i, t) in words.iter().enumerate() {
            terms.insert(format!("{scope} {}", t.word), i as u32);
        }
    }
    let keys: Vec<&str> = terms.keys().map(String::as_str).collect();
    let mut postings = Vec::new();
    let mut lookup = c.prepare_cached(&format!(
        "SELECT term, string_agg(int8send(fts_rowid), ''::bytea) FROM memory_postings
         WHERE term IN ({}) GROUP BY term",
        in_list(1)
    ))?;
    for chunk in keys.chunks(IN_LIST) {
        // Padded with the empty term, which no posting has.
        let values = (0..IN_LIST).map(|i| chunk.get(i).copied().unwrap_or(""));
        let mut found = lookup.query(params_from_iter(values))?;
        while let Some(r) = found.next()? {
            let Some(&i) = terms.get(r.value(0)?.as_str()?) else {
                continue;
            };
            let rowids = match r.value(1)? {
                crate::store::SqlValue::Blob(b) if b.len() % 8 == 0 => b,
                other => {
                    return Err(StoreError::Corrupt(format!(
                        "memory postings: the row ids of a term are {}, not eight bytes each",
                        other.kind()
                    )));
                }
            };
            postings.extend(rowids.chunks_exact(8).map(|b| {
                let mut be = [0u8; 8];
                be.copy_from_slice(b);
                (i64::from_be_bytes(be), i)
            }));
        }
    }
    Ok(postings)
}

/// What the first pass of [`matching`] keeps of a match.
#[derive(Debug, Clone, Copy)]
struct Match {
    rowid: i64,
    /// Words in its normalised text.
    length: u32,
    /// How often it says each query word.
    counts: [u16; QUERY_TERMS],
    /// Its relevance but for the lexical part.
    fixed: f64,
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
    let words: Vec<String> = terms(query).into_iter().collect();
    // Every word's count in one statement (per 32 words), not one each.
    let mut counts: HashMap<String, i64> = HashMap::new();
    for chunk in words.chunks(IN_LIST) {
        let mut stmt = c.prepare_cached(&format!(
            "SELECT word, documents FROM memory_words WHERE word IN ({})",
            in_list(1)
        ))?;
        // Padded with the empty word, which no memory says.
        let keys = (0..IN_LIST).map(|i| chunk.get(i).map_or("", String::as_str));
        let mut rows = stmt.query(params_from_iter(keys))?;
        while let Some(r) = rows.next()? {
            counts.insert(r.get(0)?, r.get(1)?);
        }
    }
    let mut found = Vec::new();
    for word in words {
        let documents = counts.get(&word).copied();
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

/// The prefix of a scope's terms in SQLite's `memories_fts` (as migration 0015's triggers write
/// them): `s` and the scope's bytes in lowercase hex.
fn scope_token(scope: &str) -> String {
    let mut out = String::with_capacity(1 + 2 * scope.len());
    out.push('s');
    for b in scope.bytes() {
        let _ = write!(out, "{b:02x}");
    }
    out
}

/// Okapi BM25 (k1 1.2, b 0.75) of matched memories, as a share of the most a memory could
/// score (every word, often): 0 to 1. Document frequencies are over every stored memory
/// (`total`); the average length over the matched ones.
struct Bm25 {
    idf: Vec<f64>,
    most: f64,
    average: f64,
}

impl Bm25 {
    const K1: f64 = 1.2;
    const B: f64 = 0.75;

    fn over(words: &[Term], matched: &[Match], total: u64) -> Bm25 {
        let n = total.max(1) as f64;
        let idf: Vec<f64> = words
            .iter()
            .map(|t| {
                let df = t.documents as f64;
                ((n - df + 0.5) / (df + 0.5) + 1.0).ln()
            })
            .collect();
        let most = idf.iter().sum::<f64>() * (Bm25::K1 + 1.0);
        let average = (matched.iter().map(|m| f64::from(m.length)).sum::<f64>()
            / matched.len().max(1) as f64)
            .max(1.0);
        Bm25 { idf, most, average }
    }

    /// The score of a memory of `length` words saying each query word `counts` times.
    fn score(&self, length: u32, counts: &[u16; QUERY_TERMS]) -> f64 {
        let (k1, b) = (Bm25::K1, Bm25::B);
        let length = f64::from(length);
        let mut score = 0.0;
        for (count, idf) in counts.iter().zip(&self.idf) {
            let tf = f64::from(*count);
            if tf > 0.0 {
                score += idf * tf * (k1 + 1.0) / (tf + k1 * (1.0 - b + b * length / self.average));
            }
        }
        if self.most > 0.0 {
            score / self.most
        } else {
            0.0
        }
    }
}

/// A ranked memory from a row of `ranked`'s columns (its group id beside it): its relevance
/// the class, strength, use, recency and feedback parts plus `lexical`.
fn row(r: &crate::store::Row<'_>) -> Result<(Ranked, i64), StoreError> {
    let id: String = r.get(0)?;
    let corrupt = |what: &str| StoreError::Corrupt(format!("memory `{id}`: {what}"));
    let class = MemoryClass::parse(&r.get::<String>(1)?).ok_or_else(|| corrupt("class"))?;
    let strength: u32 = r.get(5)?;
    let score: ScoreParts =
        serde_json::from_str(&r.get::<String>(7)?).map_err(StoreError::corrupt)?;
    let helpful = r.get::<i64>(10)?;
    let unhelpful = r.get::<i64>(11)?;
    let base = base_relevance(class, strength, r.get::<i64>(6)?, helpful, unhelpful);
    let relevance = fixed_relevance(base, score.recency);
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

/// The longest word search asks for, in bytes: PostgreSQL's index leaves longer words out of a
/// memory's terms, so neither engine matches them (and each answers alike).
pub(crate) const LONGEST_WORD: usize = 512;

/// Words worth matching: lowercase, three letters or more (at most [`LONGEST_WORD`] bytes),
/// not the commonest English words.
fn terms(text: &str) -> BTreeSet<String> {
    const STOP: [&str; 24] = [
        "the", "and", "for", "with", "that", "this", "from", "are", "was", "not", "but", "you",
        "your", "have", "has", "its", "our", "all", "any", "can", "will", "into", "out", "one",
    ];
    dedupe::normalise(text)
        .split(' ')
        .filter(|w| w.chars().count() >= 3 && w.len() <= LONGEST_WORD && !STOP.contains(w))
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
    c: &crate::store::Connection,
    id: &str,
    run: &str,
    seq: u64,
    reason: &str,
    at: &str,
) -> Result<(), StoreError> {
    let added = c.execute(
        "INSERT INTO memory_links (memory_id, run_id, compile_seq, reason, at)
         VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT DO NOTHING",
        params![id, run, seq as i64, reason, at],
    )? == 1;
    if added {
        c.execute(
            "UPDATE memories SET usage_count = usage_count + 1 WHERE id = ?1",
            [id],
        )?;
        c.execute(
            "INSERT INTO provenance_edges (parent, child, relation)
             VALUES (?1, ?2, 'retrieved') ON CONFLICT DO NOTHING",
            params![format!("memory:{id}"), format!("event:{run}/{seq}")],
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
