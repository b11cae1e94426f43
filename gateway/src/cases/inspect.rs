//! Reading cases: the list, the compact inspection report (worker evidence, proposal actions,
//! preview diffs, policy status, commit status, replay health, recent timeline events), the
//! case graph, and the timeline page by page.

use crate::store::params;
use serde::Serialize;

use super::project::{
    self, CaseRow, CommitRow, EvidenceRow, PolicyRow, PreviewRow, ProposalRow, ReplayHealth,
    TimelineRow,
};
use super::{CaseError, CaseEvent};
use crate::packs::PackRegistry;
use crate::store::{Store, StoreError};

/// The default number of timeline events in an inspection.
pub const DEFAULT_TIMELINE_LIMIT: u64 = 20;
/// The most timeline events an inspection or a timeline page holds.
pub const MAX_TIMELINE_LIMIT: u64 = 500;

/// Whether the case's pack can run here.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct PackStatus {
    /// `ENGINE_ID@ENGINE_VERSION`.
    pub engine: String,
    /// Registered at startup: the case can be run from the API and the browser.
    pub registered: bool,
    /// Whether the registered pack's files changed since the case was opened.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub changed_since_opened: bool,
    /// How to register it, when it is not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub guidance: Option<String>,
}

/// The compact inspection report.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Inspection {
    /// The case.
    pub case: CaseRow,
    /// Its pack here.
    pub pack: PackStatus,
    /// Worker evidence.
    pub worker_evidence: Vec<EvidenceRow>,
    /// Proposal actions.
    pub proposal_actions: Vec<ProposalRow>,
    /// Preview diffs.
    pub preview_diffs: Vec<PreviewRow>,
    /// Policy status.
    pub policy_status: Vec<PolicyRow>,
    /// Commit status.
    pub commit_status: Vec<CommitRow>,
    /// Replay health.
    pub replay_health: ReplayHealth,
    /// The most recent timeline events, newest first.
    pub timeline: Vec<TimelineRow>,
    /// How many were asked for.
    pub timeline_limit: u64,
}

/// How a case's pack stands in `registry`.
pub fn pack_status(case: &CaseRow, registry: &PackRegistry, pack_hash: Option<&str>) -> PackStatus {
    let engine = format!("{}@{}", case.engine_id, case.engine_version);
    match registry.get(&case.engine_id, &case.engine_version) {
        Some(pack) => PackStatus {
            engine,
            registered: true,
            changed_since_opened: pack_hash.is_some_and(|h| h != pack.hash),
            guidance: None,
        },
        None => PackStatus {
            guidance: Some(format!(
                "pack `{}` ({engine}) is not registered with this server, so the case is read-only here; register it at startup: TOLLGATE_PACK_ROOTS={} tollgate serve (roots separated by `{}`)",
                case.pack_id,
                case.pack_root,
                if cfg!(windows) { ";" } else { ":" }
            )),
            engine,
            registered: false,
            changed_since_opened: false,
        },
    }
}

/// The pack hash the case was opened with.
pub fn opened_hash(store: &Store, case_id: &str) -> Result<Option<String>, StoreError> {
    let id = case_id.to_string();
    store.read(move |c| {
        let first = super::log::events_in(c, &id, 0, 1)?;
        Ok(first.into_iter().find_map(|e| match e.body {
            super::EventBody::CaseOpened(o) => Some(o.pack_hash),
            _ => None,
        }))
    })
}

/// A case's header and how its pack stands in `registry`.
pub fn header(
    store: &Store,
    registry: &PackRegistry,
    case_id: &str,
) -> Result<(CaseRow, PackStatus), CaseError> {
    let id = case_id.to_string();
    let case = store
        .read(move |c| project::load_in(c, &id, false))?
        .case
        .ok_or_else(|| not_found(case_id))?;
    let hash = opened_hash(store, case_id)?;
    let status = pack_status(&case, registry, hash.as_deref());
    Ok((case, status))
}

/// The inspection report of `case_id`.
pub fn inspect(
    store: &Store,
    registry: &PackRegistry,
    case_id: &str,
    timeline_limit: Option<u64>,
) -> Result<Inspection, CaseError> {
    let limit = timeline_limit
        .unwrap_or(DEFAULT_TIMELINE_LIMIT)
        .min(MAX_TIMELINE_LIMIT);
    let id = case_id.to_string();
    let (p, health, timeline) = store.read(move |c| {
        let p = project::load_in(c, &id, false)?;
        let health = project::health_in(c, &id)?;
        let timeline = project::timeline_in(c, &id, limit)?;
        Ok((p, health, timeline))
    })?;
    let case = p.case.ok_or_else(|| not_found(case_id))?;
    let hash = opened_hash(store, case_id)?;
    Ok(Inspection {
        pack: pack_status(&case, registry, hash.as_deref()),
        case,
        worker_evidence: p.evidence.into_values().collect(),
        proposal_actions: p.proposals.into_values().collect(),
        preview_diffs: p.previews.into_values().collect(),
        policy_status: p.policy.into_values().collect(),
        commit_status: p.commits.into_values().collect(),
        replay_health: health,
        timeline,
        timeline_limit: limit,
    })
}

/// "no case `ID`", with help.
pub fn not_found(case_id: &str) -> CaseError {
    CaseError::NotFound(format!(
        "no case `{case_id}`\n  help: `tollgate cases list` (or `GET /cases`) lists the cases of this store"
    ))
}

/// Cases, most recently updated first, at most `limit`, optionally of one pack.
pub fn list(store: &Store, pack: Option<&str>, limit: u64) -> Result<Vec<CaseRow>, StoreError> {
    let pack = pack.map(str::to_string);
    store.read(move |c| {
        let mut q = c.prepare_cached(
            "SELECT case_id FROM cases WHERE (CAST(?1 AS TEXT) IS NULL OR pack_id = ?1)
             ORDER BY updated_at DESC, case_id DESC LIMIT ?2",
        )?;
        let ids: Vec<String> = q
            .query_map(
                params![pack, i64::try_from(limit).unwrap_or(i64::MAX)],
                |r| r.get(0),
            )?
            .collect::<Result<_, _>>()?;
        let mut out = Vec::new();
        for id in ids {
            if let Some(case) = project::load_in(c, &id, false)?.case {
                out.push(case);
            }
        }
        Ok(out)
    })
}

/// The events of a case after `after`, at most `limit`.
pub fn timeline(
    store: &Store,
    case_id: &str,
    after: i64,
    limit: u64,
) -> Result<Vec<CaseEvent>, CaseError> {
    let id = case_id.to_string();
    let limit = limit.clamp(1, MAX_TIMELINE_LIMIT);
    let (exists, events) = store.read(move |c| {
        let exists = super::log::version_in(c, &id)? > 0;
        Ok((exists, super::log::events_in(c, &id, after, limit)?))
    })?;
    if !exists {
        return Err(not_found(case_id));
    }
    Ok(events)
}

/// One node of the case graph.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct Node {
    /// `case:ID`, `evidence:WORKER`, `proposal:ID`, `preview:ID`, `policy:ID`,
    /// `approval:ID`, `commit:ID`.
    pub id: String,
    /// `case`, `evidence`, `proposal`, `preview`, `policy`, `approval`, `commit`.
    pub kind: String,
    /// In words.
    pub label: String,
    /// Its state, where it has one.
    pub state: String,
}

/// One edge.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct Edge {
    /// From.
    pub from: String,
    /// To.
    pub to: String,
}

/// The case graph: the case, its workers' evidence, and each proposal's chain through preview,
/// policy, approval and commit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct CaseGraph {
    /// Nodes.
    pub nodes: Vec<Node>,
    /// Edges.
    pub edges: Vec<Edge>,
}

/// The graph of `case_id`.
pub fn graph(store: &Store, case_id: &str) -> Result<CaseGraph, CaseError> {
    let id = case_id.to_string();
    let p = store.read(move |c| project::load_in(c, &id, false))?;
    let case = p.case.ok_or_else(|| not_found(case_id))?;
    let mut nodes = Vec::new();
    let mut edges = Vec::new();
    let root = format!("case:{}", case.case_id);
    nodes.push(Node {
        id: root.clone(),
        kind: "case".into(),
        label: case.title.clone(),
        state: case.state.clone(),
    });
    let mut workers: Vec<&str> = p.evidence.values().map(|e| e.worker.as_str()).collect();
    workers.dedup();
    for w in workers {
        let keys: Vec<String> = p
            .evidence
            .values()
            .filter(|e| e.worker == w)
            .map(|e| format!("{}={}", e.key, crate::packs::policy::symbol_of(&e.value)))
            .collect();
        let id = format!("evidence:{w}");
        nodes.push(Node {
            id: id.clone(),
            kind: "evidence".into(),
            label: keys.join(", "),
            state: String::new(),
        });
        edges.push(Edge {
            from: root.clone(),
            to: id,
        });
    }
    for prop in p.proposals.values() {
        let pid = &prop.proposal_id;
        let mut last = format!("proposal:{pid}");
        nodes.push(Node {
            id: last.clone(),
            kind: "proposal".into(),
            label: prop.wording.clone(),
            state: prop.state.clone(),
        });
        edges.push(Edge {
            from: root.clone(),
            to: last.clone(),
        });
        let mut step = |kind: &str, label: String, state: String, last: &mut String| {
            let id = format!("{kind}:{pid}");
            nodes.push(Node {
                id: id.clone(),
                kind: kind.into(),
                label,
                state,
            });
            edges.push(Edge {
                from: last.clone(),
                to: id.clone(),
            });
            *last = id;
        };
        if let Some(pv) = p.previews.get(pid) {
            step(
                "preview",
                pv.summary.clone(),
                format!("{} change(s)", pv.changes.len()),
                &mut last,
            );
        }
        if let Some(pol) = p.policy.get(pid) {
            step(
                "policy",
                pol.rules.join(", "),
                pol.effect.clone(),
                &mut last,
            );
            if let (Some(a), Some(s)) = (&pol.approval_id, &pol.approval_state) {
                step("approval", a.clone(), s.clone(), &mut last);
            }
        }
        if let Some(cm) = p.commits.get(pid) {
            step("commit", cm.mode.clone(), cm.state.clone(), &mut last);
        }
    }
    Ok(CaseGraph { nodes, edges })
}
