//! Memory retrieval, a context source of the compiler. Policy decides first: every stored
//! memory's eligibility for the run (scope, clearance, expiry, status, the envelopes' memory
//! rules) is decided by the memory pack (`PolicyRequest::Memory`) from its metadata alone, and
//! only the eligible ones are read and ranked — lexical relevance to what the compile is about,
//! then class, strength and use, ties by id. The chosen ones become candidate items of kind
//! `memory`; the compile then decides and budgets them like any other item, and a `MemoryLink`
//! records each one it included.

use std::collections::{BTreeMap, BTreeSet};

use rusqlite::params;
use tollgate_rules::decide::{MemoryVerdict, PolicyEngine};
use tollgate_rules::engine::ProofStep;
use tollgate_rules::envelope::{EnvelopeSet, Level};
use tollgate_rules::request::{MemoryRecord, subject_facts};

use super::store::stored_level;
use super::{MemoryClass, MemoryError, dedupe};
use crate::compiler::{CandidateItem, ItemKind};
use crate::recorder::events::RetrievalVerdict;
use crate::recorder::format::RunHeader;
use crate::run_policy::run_facts;
use crate::store::{Store, StoreError};

/// At most this many memories are offered to one compile.
pub const RETRIEVE_LIMIT: usize = 8;

/// A retrieval: the items to offer and every memory's verdict.
#[derive(Debug, Clone, PartialEq)]
pub struct Retrieval {
    /// The memories offered, as candidate items, best first.
    pub items: Vec<CandidateItem>,
    /// Every stored memory's verdict, offered ones first, then by id.
    pub verdicts: Vec<RetrievalVerdict>,
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
    let verdicts = eligibility(store, set, header, now)?;
    if verdicts.is_empty() {
        return Ok(Retrieval {
            items: Vec::new(),
            verdicts: Vec::new(),
        });
    }
    let eligible: Vec<String> = verdicts
        .values()
        .filter(|v| v.eligible)
        .map(|v| v.memory.clone())
        .collect();
    // Only now is anything of the eligible memories read.
    let read = store.read(move |c| read_eligible(c, &eligible))?;
    let ranked = rank(&read, query);
    let mut out = Vec::new();
    let mut items = Vec::new();
    for (i, (relevance, m)) in ranked.iter().enumerate() {
        let offered = i < RETRIEVE_LIMIT;
        if offered {
            items.push(item(m, *relevance));
        }
        out.push(verdict(
            &verdicts[&m.id],
            Some(i as u32 + 1),
            Some(*relevance),
            offered,
        ));
    }
    for v in verdicts.values().filter(|v| !v.eligible) {
        out.push(verdict(v, None, None, false));
    }
    Ok(Retrieval {
        items,
        verdicts: out,
    })
}

/// Every stored memory's verdict for `header`'s run at `now`, decided by the memory pack from
/// the memories' metadata (nothing of what they say is read). Empty when none is stored.
pub(crate) fn eligibility(
    store: &Store,
    set: &EnvelopeSet,
    header: &RunHeader,
    now: i64,
) -> Result<BTreeMap<String, MemoryVerdict>, MemoryError> {
    let records = store.read(metadata)?;
    if records.is_empty() {
        return Ok(BTreeMap::new());
    }
    let mut facts = run_facts(header).map_err(MemoryError::Invalid)?;
    facts.extend_from(&subject_facts(&[], &records));
    let engine = PolicyEngine::new(set, &facts).map_err(|e| MemoryError::Invalid(e.to_string()))?;
    let now32 = i32::try_from(now).unwrap_or(i32::MAX);
    let decision = engine.retrieve_memories(&header.id, Some(now32));
    Ok(decision
        .memories
        .into_iter()
        .map(|v| (v.memory.clone(), v))
        .collect())
}

fn verdict(
    v: &MemoryVerdict,
    rank: Option<u32>,
    relevance: Option<f64>,
    offered: bool,
) -> RetrievalVerdict {
    // The rule that derived the verdict (`memory.out-of-scope`, `memory.eligible`).
    let rules = match v.proof.as_ref().map(|p| &p.step) {
        Some(ProofStep::Rule { rule, .. }) => vec![rule.to_string()],
        _ => Vec::new(),
    };
    RetrievalVerdict {
        memory: v.memory.clone(),
        eligible: v.eligible,
        reasons: v.reasons.clone(),
        rules,
        rank,
        relevance,
        offered,
    }
}

/// Every memory's metadata, as the memory pack sees it.
fn metadata(c: &rusqlite::Connection) -> Result<Vec<MemoryRecord>, StoreError> {
    let mut stmt = c.prepare_cached(
        "SELECT id, class, scope, sensitivity, status, expires_at, pinned FROM memories
         ORDER BY id",
    )?;
    let rows = stmt.query_map([], |r| {
        Ok((
            r.get::<_, String>(0)?,
            r.get::<_, String>(1)?,
            r.get::<_, String>(2)?,
            r.get::<_, String>(3)?,
            r.get::<_, String>(4)?,
            r.get::<_, i64>(5)?,
            r.get::<_, bool>(6)?,
        ))
    })?;
    let mut out = Vec::new();
    for row in rows {
        let (id, class, scope, level, status, expires_at, pinned) = row?;
        let sensitivity = stored_level(&id, level)?;
        out.push(MemoryRecord {
            id,
            class,
            scope,
            sensitivity,
            status,
            expires_at: i32::try_from(expires_at).unwrap_or(i32::MAX),
            pinned,
        });
    }
    Ok(out)
}

/// What ranking reads of an eligible memory.
pub(crate) struct Readable {
    pub(crate) id: String,
    pub(crate) class: MemoryClass,
    text: String,
    pub(crate) scope: String,
    sensitivity: Level,
    strength: u32,
    usage: u64,
}

pub(crate) fn read_eligible(
    c: &rusqlite::Connection,
    ids: &[String],
) -> Result<Vec<Readable>, StoreError> {
    let mut stmt = c.prepare_cached(
        "SELECT id, class, text, scope, sensitivity, strength, usage_count FROM memories
         WHERE id = ?1",
    )?;
    let mut out = Vec::with_capacity(ids.len());
    for id in ids {
        let row = stmt.query_row(params![id], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, String>(3)?,
                r.get::<_, String>(4)?,
                r.get::<_, u32>(5)?,
                r.get::<_, i64>(6)?,
            ))
        })?;
        let (id, class, text, scope, level, strength, usage) = row;
        let corrupt = |what: &str| StoreError::Corrupt(format!("memory `{id}`: {what}"));
        out.push(Readable {
            class: MemoryClass::parse(&class).ok_or_else(|| corrupt("class"))?,
            sensitivity: stored_level(&id, level)?,
            id,
            text,
            scope,
            strength,
            usage: usage.max(0) as u64,
        });
    }
    Ok(out)
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

/// The eligible memories by relevance to `query`, best first (ties by id): the
/// inverse-document-frequency weight of the query's words each memory shares, normalised, plus
/// a little for its class (preferences and warnings apply broadly), its strength and its use.
pub(crate) fn rank<'a>(memories: &'a [Readable], query: &str) -> Vec<(f64, &'a Readable)> {
    let query = terms(query);
    let docs: Vec<BTreeSet<String>> = memories.iter().map(|m| terms(&m.text)).collect();
    let n = docs.len() as f64;
    let idf = |t: &str| {
        let df = docs.iter().filter(|d| d.contains(t)).count() as f64;
        ((n + 1.0) / (df + 0.5)).ln()
    };
    let mut scored: Vec<(f64, &Readable)> = memories
        .iter()
        .zip(&docs)
        .map(|(m, d)| {
            let shared: f64 = d
                .iter()
                .filter(|t| query.contains(*t))
                .map(|t| idf(t))
                .sum();
            let whole: f64 = d.iter().map(|t| idf(t)).sum::<f64>().max(1.0);
            let lexical = shared / whole;
            let class = match m.class {
                MemoryClass::Preference => 0.3,
                MemoryClass::Warning => 0.2,
                MemoryClass::Procedure => 0.15,
                MemoryClass::Fact => 0.1,
                MemoryClass::Summary => 0.0,
            };
            let support = 0.05 * f64::from(m.strength).ln_1p() + 0.02 * (m.usage as f64).ln_1p();
            let total = ((lexical + class + support) * 1000.0).round() / 1000.0;
            (total, m)
        })
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.id.cmp(&b.1.id)));
    scored
}

/// A memory as a candidate item of the compile.
fn item(m: &Readable, relevance: f64) -> CandidateItem {
    let mut item = CandidateItem::new(
        &m.id,
        ItemKind::Memory,
        format!("{} ({}): {}", m.class.as_str(), m.id, m.text),
    );
    item.scope = m.scope.clone();
    item.sensitivity = m.sensitivity;
    item.weight = 1.0 + relevance;
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
