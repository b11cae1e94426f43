//! Searching memories from a vantage point: the scope (and agent, task, clearance) a run would
//! have. Eligibility is the memory pack's decision for such a run, as in retrieval (per group,
//! see `groups`), so a search shows exactly what a compile there could retrieve; filters narrow
//! it by class, repository, and the agent, task or user of the runs a memory came from; relevance to
//! the text query ranks it (BM25, then class, strength, use and recency).

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::json;
use tollgate_rules::envelope::{EnvelopeSet, Level};

use super::columns;
use super::groups::{Eligibility, Group};
use super::retrieve::{Narrow, ranked};
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
    /// Only memories from runs opened for this user (the run's `metadata.user`).
    pub user: Option<String>,
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
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct SearchHit {
    /// Its rank (1 first).
    pub rank: u32,
    /// Its relevance to the text.
    pub relevance: f64,
    /// The memory.
    pub memory: MemoryArtifact,
}

/// What a search found, and what policy kept from it.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct SearchAnswer {
    /// The hits, best first.
    pub hits: Vec<SearchHit>,
    /// How many memories policy lets a run there retrieve, of the class and repository asked
    /// for (the text, agent and task not considered).
    pub eligible: u64,
    /// How many policy kept back, by reason (`out_of_scope`, `status_candidate`, ...).
    pub withheld: BTreeMap<String, u64>,
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
    let eligibility = Eligibility::decide(store, set, &header, now)?;
    let repo = query.repo.as_ref().map(|r| format!("repo:{r}"));
    let class = query.class.map(MemoryClass::as_str);
    let keep = move |g: &Group| {
        class.is_none_or(|c| g.class == c)
            && repo
                .as_ref()
                .is_none_or(|r| g.scope.split('/').any(|segment| segment == r))
    };
    let narrow = Narrow {
        agent: query.agent.clone(),
        task: query.task.clone(),
        user: query.user.clone(),
    };
    let limit = query.limit.clamp(1, MAX_HITS);
    let text = query.text.clone();
    let kept = columns::of(store);
    let (found, eligible, withheld) = store.read_scan(move |c| {
        let found = ranked(c, &eligibility, &keep, &narrow, &kept, &text, limit)?;
        let mut eligible = 0;
        for p in eligibility.eligible(&keep) {
            eligible += eligibility.members(p);
        }
        let mut withheld: BTreeMap<String, u64> = BTreeMap::new();
        for e in eligibility.withheld(c, false)? {
            for r in &e.reasons {
                *withheld.entry(r.clone()).or_default() += e.count;
            }
        }
        Ok((found, eligible, withheld))
    })?;
    // The hits' rows and histories in one read (a statement per table, not per hit).
    let ids: Vec<String> = found.iter().map(|m| m.id.clone()).collect();
    let memories = store
        .read(move |c| store::load_many(c, &ids.iter().map(String::as_str).collect::<Vec<_>>()))?;
    let mut hits = Vec::new();
    for (i, (m, memory)) in found.iter().zip(memories).enumerate() {
        hits.push(SearchHit {
            rank: i as u32 + 1,
            relevance: m.relevance,
            memory: memory.ok_or_else(|| MemoryError::NotFound(m.id.clone()))?,
        });
    }
    Ok(SearchAnswer {
        hits,
        eligible,
        withheld,
    })
}
