//! Approvals of gated tool calls: a tool call whose decision is `require_approval` gets an
//! approval bound to that exact call — the hash of run, tool and arguments, the governing
//! envelope versions, and an expiry — that a human approves or rejects once, and that the
//! agent can use once. Different arguments, other envelope versions, an expired or an already
//! used approval do not authorise the call.
//!
//! The `approvals` table is a projection for lookups; the record is the run's chain: the
//! `decision` event that asked for the approval and the `approval` event of its answer, which
//! is appended in the same transaction that changes the row.

use crate::store::{Connection, OptionalExtension, Row, params};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tollgate_rules::canonical::canonical_json;

use crate::clock::rfc3339;
use crate::recorder::events::ApprovalEvent;
use crate::recorder::write::{append_in, new_event};
use crate::store::{Store, StoreError};

/// Where an approval stands.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    utoipa::ToSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalState {
    /// Waiting for a human.
    Pending,
    /// Approved; the call may run once.
    Approved,
    /// Rejected; the call must not run.
    Rejected,
    /// Approved and used by the call it was bound to.
    Used,
    /// Its time ran out before it was decided or used.
    Expired,
}

impl ApprovalState {
    /// The stored and wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalState::Pending => "pending",
            ApprovalState::Approved => "approved",
            ApprovalState::Rejected => "rejected",
            ApprovalState::Used => "used",
            ApprovalState::Expired => "expired",
        }
    }

    fn parse(s: &str) -> Result<ApprovalState, StoreError> {
        Ok(match s {
            "pending" => ApprovalState::Pending,
            "approved" => ApprovalState::Approved,
            "rejected" => ApprovalState::Rejected,
            "used" => ApprovalState::Used,
            "expired" => ApprovalState::Expired,
            other => return Err(StoreError::corrupt(format!("approval state `{other}`"))),
        })
    }

    /// Whether nothing can change it any more.
    pub fn is_final(self) -> bool {
        matches!(
            self,
            ApprovalState::Rejected | ApprovalState::Used | ApprovalState::Expired
        )
    }
}

/// One approval.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Approval {
    /// `apr-…`.
    pub id: String,
    /// The run whose call it gates.
    pub run: String,
    /// The call.
    pub call_id: String,
    /// The tool.
    pub tool: String,
    /// The arguments, as the call gave them.
    #[schema(value_type = Object)]
    pub arguments: Value,
    /// [`call_hash`] of the call.
    pub call_hash: String,
    /// `ID@VERSION` of the envelopes that governed the call.
    pub envelopes: Vec<String>,
    /// The rules that required the approval.
    pub rules: Vec<String>,
    /// Who may approve (empty: anyone holding the gateway's token or the store).
    pub approvers: Vec<String>,
    /// Where it stands (an undecided or unused approval past its expiry reads as expired).
    pub state: ApprovalState,
    /// Milliseconds since the epoch.
    pub requested_at: i64,
    /// Milliseconds since the epoch.
    pub expires_at: i64,
    /// Who decided.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decided_by: Option<String>,
    /// Why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// When it was decided.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decided_at: Option<i64>,
    /// When the call used it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub used_at: Option<i64>,
}

impl Approval {
    /// RFC 3339 of `expires_at`.
    pub fn expires_at_rfc3339(&self) -> String {
        rfc3339(u64::try_from(self.expires_at / 1000).unwrap_or(0))
    }
}

/// What a new approval request binds.
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalRequest {
    /// The run.
    pub run: String,
    /// The call.
    pub call_id: String,
    /// The tool.
    pub tool: String,
    /// Its arguments.
    pub arguments: Value,
    /// Governing envelope versions.
    pub envelopes: Vec<String>,
    /// The rules that require approval.
    pub rules: Vec<String>,
    /// Who may approve (empty: anyone).
    pub approvers: Vec<String>,
    /// How long it holds, in seconds.
    pub ttl_seconds: i64,
}

impl ApprovalRequest {
    /// The id the approval it asks for gets.
    pub fn id(&self) -> String {
        approval_id(
            &self.run,
            &self.call_id,
            &call_hash(&self.run, &self.tool, &self.arguments),
        )
    }
}

/// Why an approval cannot be decided or used.
#[derive(Debug, thiserror::Error)]
pub enum ApprovalError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// No such approval.
    #[error("no approval `{0}`")]
    NotFound(String),
    /// Already decided, used or expired.
    #[error("approval `{id}` is {state}: {help}", state = .state.as_str())]
    Final {
        /// The approval.
        id: String,
        /// Its state.
        state: ApprovalState,
        /// What to do instead.
        help: &'static str,
    },
    /// The approver is not one the rule names.
    #[error("`{by}` may not decide approval `{id}`; the approvers are {}", .approvers.join(", "))]
    NotAnApprover {
        /// The approval.
        id: String,
        /// Who tried.
        by: String,
        /// Who may.
        approvers: Vec<String>,
    },
    /// Used for a different call than the one approved.
    #[error("approval `{id}` was granted for another call: {detail}")]
    Mismatch {
        /// The approval.
        id: String,
        /// What differs.
        detail: String,
    },
    /// Not decided yet.
    #[error("approval `{0}` is still pending")]
    Pending(String),
    /// The approver's credential may not decide it (its own call).
    #[error(transparent)]
    Refused(#[from] crate::auth::Refusal),
    /// The request is not valid.
    #[error("{0}")]
    Invalid(String),
}

/// The hash an approval binds: blake3 of the canonical JSON of `{run, tool, arguments}`.
pub fn call_hash(run: &str, tool: &str, arguments: &Value) -> String {
    let bound = json!({ "run": run, "tool": tool, "arguments": arguments });
    blake3::hash(canonical_json(&bound).as_bytes())
        .to_hex()
        .to_string()
}

/// The id of the approval of call `call_id` of `run` with the arguments hashed in
/// `call_hash`: one approval per call and arguments, so a call asked again under the same id
/// with other arguments gets an approval of its own, never the earlier one's state (issue 32,
/// hole 9).
pub fn approval_id(run: &str, call_id: &str, call_hash: &str) -> String {
    let h = blake3::hash(format!("{run}\u{0}{call_id}\u{0}{call_hash}").as_bytes()).to_hex();
    format!("apr-{}", &h[..16])
}

const COLUMNS: &str = "id, run_id, call_id, tool, arguments, call_hash, envelopes, rules, \
                       approvers, state, requested_at, expires_at, decided_by, reason, \
                       decided_at, used_at";

fn split(list: &str) -> Vec<String> {
    list.split(',')
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

fn from_row(r: &Row<'_>, now_ms: i64) -> Result<Result<Approval, StoreError>, StoreError> {
    let state: String = r.get(9)?;
    let arguments: String = r.get(4)?;
    let expires_at: i64 = r.get(11)?;
    let built = (|| {
        let mut state = ApprovalState::parse(&state)?;
        if matches!(state, ApprovalState::Pending | ApprovalState::Approved) && now_ms >= expires_at
        {
            state = ApprovalState::Expired;
        }
        Ok::<_, StoreError>(state)
    })();
    let state = match built {
        Ok(s) => s,
        Err(e) => return Ok(Err(e)),
    };
    let arguments = match serde_json::from_str(&arguments) {
        Ok(v) => v,
        Err(e) => return Ok(Err(StoreError::corrupt(e))),
    };
    Ok(Ok(Approval {
        id: r.get(0)?,
        run: r.get(1)?,
        call_id: r.get(2)?,
        tool: r.get(3)?,
        arguments,
        call_hash: r.get(5)?,
        envelopes: split(&r.get::<String>(6)?),
        rules: split(&r.get::<String>(7)?),
        approvers: split(&r.get::<String>(8)?),
        state,
        requested_at: r.get(10)?,
        expires_at,
        decided_by: r.get(12)?,
        reason: r.get(13)?,
        decided_at: r.get(14)?,
        used_at: r.get(15)?,
    }))
}

fn load(c: &Connection, id: &str, now_ms: i64) -> Result<Option<Approval>, StoreError> {
    c.query_row(
        &format!("SELECT {COLUMNS} FROM approvals WHERE id = ?1"),
        [id],
        |r| from_row(r, now_ms),
    )
    .optional()?
    .transpose()
}

/// Inserts a pending approval inside the caller's write; an approval of the same call is
/// returned as it is.
pub(crate) fn insert_pending(
    c: &Connection,
    req: &ApprovalRequest,
    now_ms: i64,
) -> Result<Approval, StoreError> {
    let hash = call_hash(&req.run, &req.tool, &req.arguments);
    let id = approval_id(&req.run, &req.call_id, &hash);
    if let Some(existing) = load(c, &id, now_ms)? {
        return Ok(existing);
    }
    let expires_at = now_ms.saturating_add(req.ttl_seconds.max(1).saturating_mul(1000));
    c.execute(
        &format!(
            "INSERT INTO approvals ({COLUMNS}) VALUES
             (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, 'pending', ?10, ?11, NULL, NULL, NULL, NULL)"
        ),
        params![
            id,
            req.run,
            req.call_id,
            req.tool,
            canonical_json(&req.arguments),
            hash,
            req.envelopes.join(","),
            req.rules.join(","),
            req.approvers.join(","),
            now_ms,
            expires_at
        ],
    )?;
    load(c, &id, now_ms)?.ok_or_else(|| StoreError::NotFound(id))
}

/// Filters for [`list`].
#[derive(Debug, Clone, Default)]
pub struct ApprovalFilter {
    /// Only this run's.
    pub run: Option<String>,
    /// Only in this state (as read now: expiry applied).
    pub state: Option<ApprovalState>,
    /// Only of this agent's runs.
    pub agent: Option<String>,
}

/// Approvals, oldest first.
pub fn list(
    store: &Store,
    filter: &ApprovalFilter,
    now_ms: i64,
) -> Result<Vec<Approval>, StoreError> {
    let (run, agent) = (filter.run.clone(), filter.agent.clone());
    let all = store.read(move |c| {
        let mut stmt = c.prepare(&format!(
            "SELECT {COLUMNS} FROM approvals WHERE (CAST(?1 AS TEXT) IS NULL OR run_id = ?1)
               AND (CAST(?2 AS TEXT) IS NULL OR run_id IN (SELECT id FROM runs WHERE agent = ?2))
             ORDER BY requested_at, id"
        ))?;
        let rows = stmt.query_map(params![run, agent], |r| from_row(r, now_ms))?;
        let mut out = Vec::new();
        for row in rows {
            out.push(row??);
        }
        Ok(out)
    })?;
    Ok(all
        .into_iter()
        .filter(|a| filter.state.is_none_or(|s| a.state == s))
        .collect())
}

/// Where an approval sits in the newest-first order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovalKey {
    /// When it was requested (ms since the Unix epoch).
    pub requested_at: i64,
    /// Its id (ties on the time).
    pub id: String,
}

/// One page of approvals, newest first.
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalPage {
    /// The approvals.
    pub approvals: Vec<Approval>,
    /// The key to ask for the next (older) page with, when there is one.
    pub next: Option<ApprovalKey>,
}

/// Up to `limit` approvals in `state` (as read now: a pending or approved one past its
/// expiry is `expired`), newest first, older than `after` when given. Paged by key on the
/// `approvals_by_state` index, so a page costs the same however many approvals there are.
pub fn page(
    store: &Store,
    state: Option<ApprovalState>,
    after: Option<&ApprovalKey>,
    now_ms: i64,
    limit: usize,
) -> Result<ApprovalPage, StoreError> {
    let limit = limit.clamp(1, 500);
    // The stored state and expiry that read as `state` at `now_ms` (?1; named in every form of
    // the query, so PostgreSQL knows its type where `in_state` does not use it).
    let in_state = match state {
        None => "1 = 1",
        Some(ApprovalState::Pending) => "state = 'pending' AND expires_at > ?1",
        Some(ApprovalState::Approved) => "state = 'approved' AND expires_at > ?1",
        Some(ApprovalState::Expired) => {
            "(state = 'expired' OR (state IN ('pending', 'approved') AND expires_at <= ?1))"
        }
        Some(ApprovalState::Rejected) => "state = 'rejected'",
        Some(ApprovalState::Used) => "state = 'used'",
    };
    let (after_at, after_id) = match after {
        Some(k) => (Some(k.requested_at), Some(k.id.clone())),
        None => (None, None),
    };
    let mut approvals = store.read(move |c| {
        let mut stmt = c.prepare_cached(&format!(
            "SELECT {COLUMNS} FROM approvals
             WHERE {in_state} AND CAST(?1 AS BIGINT) IS NOT NULL
               AND (CAST(?2 AS BIGINT) IS NULL OR requested_at < ?2 OR (requested_at = ?2 AND id < ?3))
             ORDER BY requested_at DESC, id DESC
             LIMIT ?4"
        ))?;
        let rows = stmt.query_map(params![now_ms, after_at, after_id, limit as i64 + 1], |r| {
            from_row(r, now_ms)
        })?;
        let mut out = Vec::new();
        for row in rows {
            out.push(row??);
        }
        Ok(out)
    })?;
    let next = (approvals.len() > limit)
        .then(|| {
            approvals.truncate(limit);
            approvals.last().map(|a| ApprovalKey {
                requested_at: a.requested_at,
                id: a.id.clone(),
            })
        })
        .flatten();
    Ok(ApprovalPage { approvals, next })
}

/// One approval.
pub fn get(store: &Store, id: &str, now_ms: i64) -> Result<Approval, ApprovalError> {
    let key = id.to_string();
    store
        .read(move |c| load(c, &key, now_ms))?
        .ok_or_else(|| ApprovalError::NotFound(id.to_string()))
}

/// A human's answer.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
pub struct ApprovalAnswer {
    /// Approve (`true`) or reject.
    pub approve: bool,
    /// Who answers: the authenticated principal's name over HTTP and in the dashboard.
    pub by: String,
    /// Why.
    #[serde(default)]
    pub reason: String,
    /// The credential answering (`tok_…`, `owner`); a run's opener may not answer its calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub principal: Option<String>,
}

/// Approves or rejects a pending approval, appending the `approval` event to its run in the
/// same transaction. `at` is the event's RFC 3339 time.
pub fn decide(
    store: &Store,
    id: &str,
    answer: &ApprovalAnswer,
    now_ms: i64,
    at: &str,
) -> Result<Approval, ApprovalError> {
    let (key, answer, at) = (id.to_string(), answer.clone(), at.to_string());
    store.transact(move |c| decide_in(c, &key, &answer, now_ms, &at))
}

/// [`decide`] inside the caller's write (a case records its answer in the same transaction).
pub(crate) fn decide_in(
    c: &Connection,
    id: &str,
    answer: &ApprovalAnswer,
    now_ms: i64,
    at: &str,
) -> Result<Approval, ApprovalError> {
    if answer.by.trim().is_empty() {
        return Err(ApprovalError::Invalid(
            "an approval needs `by`: who approves or rejects".into(),
        ));
    }
    let current = load(c, id, now_ms)?.ok_or_else(|| ApprovalError::NotFound(id.to_string()))?;
    if current.state != ApprovalState::Pending {
        return Err(ApprovalError::Final {
            id: id.to_string(),
            state: current.state,
            help: "an approval is decided once; ask the agent to call again for a new one",
        });
    }
    check_not_own_call(c, &current, answer)?;
    if !current.approvers.is_empty() && !current.approvers.iter().any(|a| a == &answer.by) {
        return Err(ApprovalError::NotAnApprover {
            id: id.to_string(),
            by: answer.by.clone(),
            approvers: current.approvers,
        });
    }
    let state = if answer.approve {
        ApprovalState::Approved
    } else {
        ApprovalState::Rejected
    };
    // Only a row still pending changes: a concurrent answer wins once.
    let changed = c.execute(
        "UPDATE approvals SET state = ?2, decided_by = ?3, reason = ?4, decided_at = ?5
             WHERE id = ?1 AND state = 'pending' AND expires_at > ?5",
        params![id, state.as_str(), answer.by, answer.reason, now_ms],
    )?;
    if changed == 0 {
        return Err(ApprovalError::Invalid(format!(
            "approval `{id}` was decided or expired meanwhile"
        )));
    }
    let approval = load(c, id, now_ms)?.ok_or_else(|| ApprovalError::NotFound(id.to_string()))?;
    let step = last_step(c, &approval.run)?;
    let event = ApprovalEvent {
        approval_id: approval.id.clone(),
        decision: state.as_str().to_string(),
        by: answer.by.clone(),
        reason: answer.reason.clone(),
        call_id: Some(approval.call_id.clone()),
        call_hash: Some(approval.call_hash.clone()),
    };
    append_in(
        c,
        &approval.run,
        vec![new_event(step, at.to_string(), &event)?],
    )?;
    Ok(approval)
}

/// The agent whose call it is can never approve it: refused when the answer comes from the
/// credential that opened the run, or names the run's agent.
fn check_not_own_call(
    c: &Connection,
    approval: &Approval,
    answer: &ApprovalAnswer,
) -> Result<(), ApprovalError> {
    let (agent, metadata): (String, String) = c.query_row(
        "SELECT agent, metadata FROM runs WHERE id = ?1",
        [&approval.run],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    let opened_by = serde_json::from_str::<Value>(&metadata).ok().and_then(|m| {
        m.get(crate::runtime::OPENED_BY)?
            .as_str()
            .map(str::to_string)
    });
    let own_credential = answer.principal.is_some() && answer.principal == opened_by;
    if own_credential || answer.by == agent {
        return Err(crate::auth::Refusal::OwnCall {
            approval: approval.id.clone(),
            agent,
            by: answer.by.clone(),
        }
        .into());
    }
    Ok(())
}

/// The step the run is in now (its last), for events that do not name one.
pub(crate) fn last_step(c: &Connection, run: &str) -> Result<u32, StoreError> {
    let steps: u32 = c.query_row("SELECT COUNT(*) FROM steps WHERE run_id = ?1", [run], |r| {
        r.get(0)
    })?;
    Ok(steps.saturating_sub(1))
}

/// Marks an approved approval used by the call it is bound to, inside the caller's write.
/// Fails unless it is approved, unexpired, for this exact call and these envelope versions.
pub(crate) fn use_in(
    c: &Connection,
    id: &str,
    run: &str,
    hash: &str,
    envelopes: &[String],
    now_ms: i64,
) -> Result<Approval, ApprovalError> {
    let approval = load(c, id, now_ms)?.ok_or_else(|| ApprovalError::NotFound(id.to_string()))?;
    check_use(&approval, run, hash, envelopes)?;
    mark_used(c, &approval, now_ms)?;
    load(c, id, now_ms)?.ok_or_else(|| ApprovalError::NotFound(id.to_string()))
}

/// Marks `approval`, read as approved, used: only a row still approved and unexpired changes,
/// so of two calls using it at once (on two gateways) one is refused, however their reads
/// interleaved.
fn mark_used(c: &Connection, approval: &Approval, now_ms: i64) -> Result<(), ApprovalError> {
    let changed = c.execute(
        "UPDATE approvals SET state = 'used', used_at = ?2
         WHERE id = ?1 AND state = 'approved' AND expires_at > ?2",
        params![approval.id, now_ms],
    )?;
    if changed == 0 {
        return Err(ApprovalError::Final {
            id: approval.id.clone(),
            state: ApprovalState::Used,
            help: "an approval authorises one call, and another call used it meanwhile; ask again for a new one",
        });
    }
    Ok(())
}

/// Whether `approval` authorises the call `hash` of `run` under `envelopes`.
pub fn check_use(
    approval: &Approval,
    run: &str,
    hash: &str,
    envelopes: &[String],
) -> Result<(), ApprovalError> {
    check_binding(approval, run, hash, envelopes)?;
    match approval.state {
        ApprovalState::Approved => Ok(()),
        ApprovalState::Pending => Err(ApprovalError::Pending(approval.id.clone())),
        state => Err(ApprovalError::Final {
            id: approval.id.clone(),
            state,
            help: "call again without `approval_id` to ask for a new approval",
        }),
    }
}

/// Whether `approval` was asked for the call `hash` of `run` under `envelopes`, whatever its
/// state.
pub fn check_binding(
    approval: &Approval,
    run: &str,
    hash: &str,
    envelopes: &[String],
) -> Result<(), ApprovalError> {
    let mismatch = |detail: String| {
        Err(ApprovalError::Mismatch {
            id: approval.id.clone(),
            detail,
        })
    };
    if approval.run != run {
        return mismatch(format!("it belongs to run `{}`", approval.run));
    }
    if approval.call_hash != hash {
        return mismatch(format!(
            "it approves `{}` with other arguments; different arguments need a new approval",
            approval.tool
        ));
    }
    if approval.envelopes != envelopes {
        return mismatch(format!(
            "it was granted under {}, the call is now governed by {}",
            approval.envelopes.join(", "),
            envelopes.join(", ")
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
