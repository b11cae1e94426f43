//! The projections of a case: the tables `cases`, `case_evidence`, `case_proposals`,
//! `case_previews`, `case_policy`, `case_commits` and `case_timeline`, derived from its events
//! by one fold ([`CaseProjection::apply`]). An append applies its events to the stored
//! projection in the same transaction; [`rebuild`] drops every projection row and replays every
//! case; [`health`] folds a case's events afresh and compares the result with what is stored.

use std::collections::BTreeMap;

use crate::store::Connection;
use serde::Serialize;
use serde_json::Value;

use super::log::{all_events_in, verify_chain};
use super::{CaseEvent, EventBody};
use crate::packs::adapter::Change;
use crate::store::{Store, StoreError};

mod tables;

pub use tables::{load_in, persist_in, timeline_in};

/// The case's header row.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct CaseRow {
    /// The case.
    pub case_id: String,
    /// Its pack.
    pub pack_id: String,
    /// The pack's engine id.
    pub engine_id: String,
    /// The pack's engine version.
    pub engine_version: String,
    /// The pack root when it was opened.
    pub pack_root: String,
    /// Its title.
    pub title: String,
    /// `open`, or the state of its most recently moved proposal (`awaiting_approval`,
    /// `committed`...).
    pub state: String,
    /// Its version.
    pub version: i64,
    /// Its head hash.
    pub head_hash: String,
    /// Opened (RFC 3339).
    pub opened_at: String,
    /// Last event (RFC 3339).
    pub updated_at: String,
}

/// One piece of worker evidence.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct EvidenceRow {
    /// The worker.
    pub worker: String,
    /// The key.
    pub key: String,
    /// The value (any JSON: a worker's `amount` is a number).
    #[schema(value_type = Value)]
    pub value: Value,
    /// `adapter` (the worker's adapter collected it) or `api` (a caller posted it).
    pub source: String,
    /// The event that recorded it.
    pub version: i64,
}

/// One proposal action.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct ProposalRow {
    /// `prop-N`.
    pub proposal_id: String,
    /// The capability.
    pub capability: String,
    /// The action.
    pub action: String,
    /// The wording.
    pub wording: String,
    /// The action's input.
    #[schema(value_type = Object)]
    pub input: Value,
    /// `proposed`, `previewed`, `allowed`, `denied`, `awaiting_approval`, `approved`,
    /// `rejected`, `committing`, `committed`, `failed`.
    pub state: String,
    /// The event that last moved it.
    pub version: i64,
}

/// One preview diff.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct PreviewRow {
    /// The proposal.
    pub proposal_id: String,
    /// Its hash.
    pub preview_hash: String,
    /// The changes.
    pub changes: Vec<Change>,
    /// In words.
    pub summary: String,
    /// The event that recorded it.
    pub version: i64,
}

/// One proposal's policy status.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct PolicyRow {
    /// The proposal.
    pub proposal_id: String,
    /// The preview decided on.
    pub preview_hash: String,
    /// `allow` or `deny`.
    pub effect: String,
    /// The deciding rules.
    pub rules: Vec<String>,
    /// Its approval.
    pub approval_id: Option<String>,
    /// `pending`, `approved`, `rejected`.
    pub approval_state: Option<String>,
    /// The event that last moved it.
    pub version: i64,
}

/// One proposal's commit status.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct CommitRow {
    /// The proposal.
    pub proposal_id: String,
    /// `started`, `committed`, `failed`, `refused`.
    pub state: String,
    /// `dry_run` or `real`.
    pub mode: String,
    /// The receipt and verification, what failed, or why it was refused.
    #[schema(value_type = Object)]
    pub detail: Value,
    /// The event that last moved it.
    pub version: i64,
}

/// One timeline entry.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct TimelineRow {
    /// The event's version.
    pub version: i64,
    /// Its kind.
    pub kind: String,
    /// In words.
    pub summary: String,
    /// Who.
    pub actor: String,
    /// When.
    pub at: String,
}

/// Every projection of one case.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CaseProjection {
    /// The header.
    pub case: Option<CaseRow>,
    /// Evidence by (worker, key).
    pub evidence: BTreeMap<(String, String), EvidenceRow>,
    /// Proposals by id.
    pub proposals: BTreeMap<String, ProposalRow>,
    /// Previews by proposal.
    pub previews: BTreeMap<String, PreviewRow>,
    /// Policy status by proposal.
    pub policy: BTreeMap<String, PolicyRow>,
    /// Commit status by proposal.
    pub commits: BTreeMap<String, CommitRow>,
    /// The timeline (empty when loaded without it).
    pub timeline: Vec<TimelineRow>,
}

fn summary(body: &EventBody) -> String {
    match body {
        EventBody::CaseOpened(o) => format!("opened for pack {} ({})", o.pack_id, o.title),
        EventBody::EvidenceRecorded(e) => format!(
            "{} recorded {}",
            e.worker,
            e.evidence.keys().cloned().collect::<Vec<_>>().join(", ")
        ),
        EventBody::ProposalMade(p) => format!("{} proposed: {}", p.proposal_id, p.wording),
        EventBody::PreviewRecorded(p) => format!("{} previewed: {}", p.proposal_id, p.summary),
        EventBody::PolicyDecided(p) => format!(
            "{} policy {} by {}",
            p.proposal_id,
            p.effect,
            p.rules.join(", ")
        ),
        EventBody::ApprovalRequested(a) => {
            format!("{} awaits approval {}", a.proposal_id, a.approval_id)
        }
        EventBody::ApprovalDecided(a) => format!(
            "{} {} by {}",
            a.proposal_id,
            if a.approved { "approved" } else { "rejected" },
            a.by
        ),
        EventBody::CommitStarted(c) => {
            format!("{} commit started ({})", c.proposal_id, c.mode.as_str())
        }
        EventBody::CommitApplied(c) => format!("{} committed and verified", c.proposal_id),
        EventBody::CommitFailed(c) => format!(
            "{} commit failed ({}){}",
            c.proposal_id,
            c.error,
            if c.compensated { "; compensated" } else { "" }
        ),
        EventBody::CommitRefused(c) => {
            format!("{} commit refused: {}", c.proposal_id, c.code)
        }
        EventBody::ModelRun(m) => format!("model run ({}, {}): {}", m.provider, m.model, m.purpose),
    }
}

impl CaseProjection {
    fn move_proposal(&mut self, id: &str, state: &str, version: i64) {
        if let Some(p) = self.proposals.get_mut(id) {
            p.state = state.to_string();
            p.version = version;
            if let Some(case) = self.case.as_mut() {
                case.state = state.to_string();
            }
        }
    }

    /// Applies one event.
    pub fn apply(&mut self, e: &CaseEvent) {
        let v = e.version;
        match &e.body {
            EventBody::CaseOpened(o) => {
                self.case = Some(CaseRow {
                    case_id: e.case_id.clone(),
                    pack_id: o.pack_id.clone(),
                    engine_id: o.engine_id.clone(),
                    engine_version: o.engine_version.clone(),
                    pack_root: o.pack_root.clone(),
                    title: o.title.clone(),
                    state: "open".into(),
                    version: v,
                    head_hash: e.hash.clone(),
                    opened_at: e.at.clone(),
                    updated_at: e.at.clone(),
                });
            }
            EventBody::EvidenceRecorded(ev) => {
                for (key, value) in &ev.evidence {
                    self.evidence.insert(
                        (ev.worker.clone(), key.clone()),
                        EvidenceRow {
                            worker: ev.worker.clone(),
                            key: key.clone(),
                            value: value.clone(),
                            source: ev.source.clone(),
                            version: v,
                        },
                    );
                }
            }
            EventBody::ProposalMade(p) => {
                self.proposals.insert(
                    p.proposal_id.clone(),
                    ProposalRow {
                        proposal_id: p.proposal_id.clone(),
                        capability: p.capability.clone(),
                        action: p.action.clone(),
                        wording: p.wording.clone(),
                        input: Value::Object(p.input.clone()),
                        state: "proposed".into(),
                        version: v,
                    },
                );
                self.move_proposal(&p.proposal_id, "proposed", v);
            }
            EventBody::PreviewRecorded(p) => {
                self.previews.insert(
                    p.proposal_id.clone(),
                    PreviewRow {
                        proposal_id: p.proposal_id.clone(),
                        preview_hash: p.preview_hash.clone(),
                        changes: p.changes.clone(),
                        summary: p.summary.clone(),
                        version: v,
                    },
                );
                // A new preview needs a new decision and a new approval.
                self.policy.remove(&p.proposal_id);
                if self
                    .commits
                    .get(&p.proposal_id)
                    .is_some_and(|c| c.state == "refused")
                {
                    self.commits.remove(&p.proposal_id);
                }
                self.move_proposal(&p.proposal_id, "previewed", v);
            }
            EventBody::PolicyDecided(p) => {
                self.policy.insert(
                    p.proposal_id.clone(),
                    PolicyRow {
                        proposal_id: p.proposal_id.clone(),
                        preview_hash: p.preview_hash.clone(),
                        effect: p.effect.clone(),
                        rules: p.rules.clone(),
                        approval_id: None,
                        approval_state: None,
                        version: v,
                    },
                );
                let state = if p.effect == "allow" {
                    "allowed"
                } else {
                    "denied"
                };
                self.move_proposal(&p.proposal_id, state, v);
            }
            EventBody::ApprovalRequested(a) => {
                if let Some(row) = self.policy.get_mut(&a.proposal_id) {
                    row.approval_id = Some(a.approval_id.clone());
                    row.approval_state = Some("pending".into());
                    row.version = v;
                }
                self.move_proposal(&a.proposal_id, "awaiting_approval", v);
            }
            EventBody::ApprovalDecided(a) => {
                let state = if a.approved { "approved" } else { "rejected" };
                if let Some(row) = self.policy.get_mut(&a.proposal_id) {
                    row.approval_state = Some(state.into());
                    row.version = v;
                }
                self.move_proposal(&a.proposal_id, state, v);
            }
            EventBody::CommitStarted(c) => {
                self.commits.insert(
                    c.proposal_id.clone(),
                    CommitRow {
                        proposal_id: c.proposal_id.clone(),
                        state: "started".into(),
                        mode: c.mode.as_str().into(),
                        detail: serde_json::json!({
                            "approval_id": c.approval_id,
                            "preview_hash": c.preview_hash,
                            "authorization": c.authorization,
                        }),
                        version: v,
                    },
                );
                self.move_proposal(&c.proposal_id, "committing", v);
            }
            EventBody::CommitApplied(c) => {
                if let Some(row) = self.commits.get_mut(&c.proposal_id) {
                    row.state = "committed".into();
                    row.detail =
                        serde_json::json!({"receipt": c.receipt, "verification": c.verification});
                    row.version = v;
                }
                self.move_proposal(&c.proposal_id, "committed", v);
            }
            EventBody::CommitFailed(c) => {
                if let Some(row) = self.commits.get_mut(&c.proposal_id) {
                    row.state = "failed".into();
                    row.detail = serde_json::json!({
                        "error": c.error, "compensated": c.compensated, "compensation": c.compensation,
                    });
                    row.version = v;
                }
                self.move_proposal(&c.proposal_id, "failed", v);
            }
            EventBody::CommitRefused(c) => {
                let settled = self
                    .commits
                    .get(&c.proposal_id)
                    .is_some_and(|r| r.state != "refused");
                if !settled {
                    self.commits.insert(
                        c.proposal_id.clone(),
                        CommitRow {
                            proposal_id: c.proposal_id.clone(),
                            state: "refused".into(),
                            mode: c.mode.as_str().into(),
                            detail: serde_json::json!({"code": c.code, "message": c.message}),
                            version: v,
                        },
                    );
                }
            }
            EventBody::ModelRun(_) => {}
        }
        if let Some(case) = self.case.as_mut() {
            case.version = v;
            case.head_hash = e.hash.clone();
            case.updated_at = e.at.clone();
        }
        self.timeline.push(TimelineRow {
            version: v,
            kind: e.body.kind().into(),
            summary: summary(&e.body),
            actor: e.actor.clone(),
            at: e.at.clone(),
        });
    }

    /// The projection of `events`, replayed from nothing.
    pub fn fold(events: &[CaseEvent]) -> CaseProjection {
        let mut p = CaseProjection::default();
        for e in events {
            p.apply(e);
        }
        p
    }
}

/// The projection tables, dropped and rebuilt by [`rebuild`].
pub const TABLES: [&str; 7] = [
    "cases",
    "case_evidence",
    "case_proposals",
    "case_previews",
    "case_policy",
    "case_commits",
    "case_timeline",
];

/// What a rebuild did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Rebuilt {
    /// Cases replayed.
    pub cases: u64,
    /// Events replayed.
    pub events: u64,
}

/// Deletes every projection row and replays every case's events, in one write.
pub fn rebuild(store: &Store) -> Result<Rebuilt, StoreError> {
    store.write(|c| {
        for t in TABLES {
            c.execute(&format!("DELETE FROM {t}"), ())?;
        }
        let ids: Vec<String> = {
            let mut q = c.prepare("SELECT DISTINCT case_id FROM case_events ORDER BY case_id")?;
            let rows = q.query_map((), |r| r.get(0))?;
            rows.collect::<Result<_, _>>()?
        };
        let mut events = 0;
        for id in &ids {
            events += rebuild_case_in(c, id)?;
        }
        Ok(Rebuilt {
            cases: ids.len() as u64,
            events,
        })
    })
}

/// Deletes one case's projection rows and replays its events, inside the caller's write;
/// returns the number of events replayed.
pub fn rebuild_case_in(c: &Connection, case_id: &str) -> Result<u64, StoreError> {
    for t in TABLES {
        c.execute(&format!("DELETE FROM {t} WHERE case_id = ?1"), [case_id])?;
    }
    let all = all_events_in(c, case_id)?;
    let p = CaseProjection::fold(&all);
    persist_in(c, case_id, &p, &all)?;
    Ok(all.len() as u64)
}

/// One difference between the stored projection and a fresh replay.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Drift {
    /// The table.
    pub table: String,
    /// The row's key.
    pub key: String,
    /// As stored (absent: no such row).
    #[schema(value_type = Option<Object>)]
    pub stored: Option<Value>,
    /// As replayed (absent: no such row).
    #[schema(value_type = Option<Object>)]
    pub replayed: Option<Value>,
}

/// Replay health of one case.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct ReplayHealth {
    /// `healthy` or `drift`.
    pub status: String,
    /// Events replayed.
    pub events: u64,
    /// Whether the event chain verifies (and where it breaks).
    pub chain: String,
    /// Every difference.
    pub drift: Vec<Drift>,
    /// What to do about drift.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub help: Option<String>,
}

fn diff_maps<K: Ord + std::fmt::Debug, V: Serialize + PartialEq>(
    table: &str,
    stored: &BTreeMap<K, V>,
    replayed: &BTreeMap<K, V>,
    out: &mut Vec<Drift>,
) {
    let keys: std::collections::BTreeSet<&K> = stored.keys().chain(replayed.keys()).collect();
    for k in keys {
        let (s, r) = (stored.get(k), replayed.get(k));
        if s != r {
            out.push(Drift {
                table: table.into(),
                key: format!("{k:?}").trim_matches('"').to_string(),
                stored: s.and_then(|v| serde_json::to_value(v).ok()),
                replayed: r.and_then(|v| serde_json::to_value(v).ok()),
            });
        }
    }
}

/// Folds the case's events afresh and compares with the stored projection.
pub fn health_in(c: &Connection, case_id: &str) -> Result<ReplayHealth, StoreError> {
    let events = all_events_in(c, case_id)?;
    let replayed = CaseProjection::fold(&events);
    let stored = load_in(c, case_id, true)?;
    let mut drift = Vec::new();
    let one = |v: &Option<CaseRow>| {
        v.iter()
            .map(|r| (r.case_id.clone(), r.clone()))
            .collect::<BTreeMap<_, _>>()
    };
    diff_maps(
        "cases",
        &one(&stored.case),
        &one(&replayed.case),
        &mut drift,
    );
    diff_maps(
        "case_evidence",
        &stored.evidence,
        &replayed.evidence,
        &mut drift,
    );
    diff_maps(
        "case_proposals",
        &stored.proposals,
        &replayed.proposals,
        &mut drift,
    );
    diff_maps(
        "case_previews",
        &stored.previews,
        &replayed.previews,
        &mut drift,
    );
    diff_maps("case_policy", &stored.policy, &replayed.policy, &mut drift);
    diff_maps(
        "case_commits",
        &stored.commits,
        &replayed.commits,
        &mut drift,
    );
    let by_version = |t: &[TimelineRow]| {
        t.iter()
            .map(|r| (r.version, r.clone()))
            .collect::<BTreeMap<_, _>>()
    };
    diff_maps(
        "case_timeline",
        &by_version(&stored.timeline),
        &by_version(&replayed.timeline),
        &mut drift,
    );
    let chain = match verify_chain(&events) {
        Ok(()) => "verified".to_string(),
        Err(e) => format!("broken: {e}"),
    };
    let healthy = drift.is_empty() && chain == "verified";
    Ok(ReplayHealth {
        status: if healthy { "healthy" } else { "drift" }.into(),
        events: events.len() as u64,
        chain,
        help: (!healthy).then(|| {
            format!("compare the drifting rows with the case's timeline (`tollgate cases timeline {case_id}`); `tollgate cases replay --rebuild` rebuilds every projection from the events")
        }),
        drift,
    })
}
