//! Searching memories from a vantage point: the scope (and agent, task, clearance) a run would
//! have. Eligibility is the memory pack's decision for such a run, as in retrieval, so a search
//! shows exactly what a compile there could retrieve; filters narrow it by class, repository,
//! and the agent or task of the runs a memory came from; relevance to the text query ranks it.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use serde_json::json;
use tollgate_rules::envelope::{EnvelopeSet, Level};

use super::retrieve::{eligibility, rank, read_eligible};
use super::{MemoryArtifact, MemoryClass, MemoryError, store};
use crate::clock::rfc3339;
use crate::recorder::format::RunHeader;
use crate::store::Store;

/// The most hits one search returns.
pub const MAX_HITS: usize = 200;

/// A search.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchQuery {
    /// Where the searcher stands (`org:acme/repo:api/task:T-1`): memories visible from there.
    pub scope: String,
    /// The searcher's clearance.
    pub clearance: Level,
    /// As this agent (its envelopes' memory rules apply), and only memories from its runs.
    pub agent: Option<String>,
    /// Only memories from runs of this task.
    pub task: Option<String>,
    /// Only memories scoped to this repository (`repo:NAME` in their scope).
    pub repo: Option<String>,
    /// Only this class.
    pub class: Option<MemoryClass>,
    /// What to rank by (may be empty).
    pub text: String,
    /// At most this many hits (1 to [`MAX_HITS`]).
    pub limit: usize,
}

/// One memory found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SearchHit {
    /// Its rank (1 first).
    pub rank: u32,
    /// Its relevance to the text.
    pub relevance: f64,
    /// The memory.
    pub memory: MemoryArtifact,
}

/// What a search found, and what policy kept from it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SearchAnswer {
    /// The hits, best first.
    pub hits: Vec<SearchHit>,
    /// How many memories were eligible and passed the filters.
    pub matched: usize,
    /// How many policy kept back, by reason (`out_of_scope`, `status_candidate`, ...).
    pub withheld: BTreeMap<String, usize>,
}

/// Runs `query` at `now` (seconds since the epoch) under `set`.
pub fn search(
    store: &Store,
    set: &EnvelopeSet,
    query: &SearchQuery,
    now: i64,
) -> Result<SearchAnswer, MemoryError> {
    if query.scope.trim().is_empty() {
        return Err(MemoryError::Invalid(
            "a search names the scope it looks from\n  help: `scope=org:acme/repo:api`: memories are visible from where a run works".into(),
        ));
    }
    let header = RunHeader {
        id: "memory-search".into(),
        agent: query.agent.clone().unwrap_or_else(|| "*".into()),
        task: query.task.clone().unwrap_or_default(),
        scope: query.scope.clone(),
        clearance: query.clearance.as_str().into(),
        status: "running".into(),
        started_at: rfc3339(u64::try_from(now).unwrap_or(0)),
        finished_at: None,
        parent_run: None,
        envelopes: Vec::new(),
        metadata: json!({}),
    };
    let verdicts = eligibility(store, set, &header, now)?;
    let mut withheld: BTreeMap<String, usize> = BTreeMap::new();
    for v in verdicts.values().filter(|v| !v.eligible) {
        for r in &v.reasons {
            *withheld.entry(r.clone()).or_default() += 1;
        }
    }
    let eligible: Vec<String> = verdicts
        .values()
        .filter(|v| v.eligible)
        .map(|v| v.memory.clone())
        .collect();
    let (agent, task) = (query.agent.clone(), query.task.clone());
    let (read, from_runs) = store.read(move |c| {
        let read = read_eligible(c, &eligible)?;
        // Memories with a source in a run of the agent and task asked for.
        let from_runs: Option<BTreeSet<String>> = if agent.is_some() || task.is_some() {
            let mut stmt = c.prepare(
                "SELECT DISTINCT s.memory_id FROM memory_sources s JOIN runs r ON r.id = s.run_id
                 WHERE (?1 IS NULL OR r.agent = ?1) AND (?2 IS NULL OR r.task = ?2)",
            )?;
            let ids = stmt
                .query_map(rusqlite::params![agent, task], |r| r.get(0))?
                .collect::<Result<BTreeSet<String>, _>>()?;
            Some(ids)
        } else {
            None
        };
        Ok((read, from_runs))
    })?;
    let repo = query.repo.as_ref().map(|r| format!("repo:{r}"));
    let kept: Vec<_> = read
        .into_iter()
        .filter(|m| query.class.is_none_or(|c| m.class == c))
        .filter(|m| {
            repo.as_ref()
                .is_none_or(|r| m.scope.split('/').any(|segment| segment == r))
        })
        .filter(|m| from_runs.as_ref().is_none_or(|ids| ids.contains(&m.id)))
        .collect();
    let ranked = rank(&kept, &query.text);
    let limit = query.limit.clamp(1, MAX_HITS);
    let mut hits = Vec::new();
    for (i, (relevance, m)) in ranked.iter().take(limit).enumerate() {
        hits.push(SearchHit {
            rank: i as u32 + 1,
            relevance: *relevance,
            memory: store::get(store, &m.id)?,
        });
    }
    Ok(SearchAnswer {
        hits,
        matched: ranked.len(),
        withheld,
    })
}
