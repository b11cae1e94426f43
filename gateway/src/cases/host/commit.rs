//! Committing an approved proposal: every guardrail first (each refusal recorded), then the
//! approval used and `commit_started` appended in one write, then apply, verify, and
//! compensation when either fails. The only place an adapter applies a change, and the only way
//! to a real adapter.

use std::path::Path;

use serde_json::{Value, json};

use super::{EngineHost, Moved, approval_error, approval_request, proposal_of};
use crate::approvals::{self, ApprovalState, call_hash};
use crate::cases::store as case_store;
use crate::cases::{
    ApprovalDecided, CaseError, CommitApplied, CommitFailed, CommitRefused, CommitStarted,
    EventBody, NewEvent,
};
use crate::packs::adapter::{self, Call, Mode, Op};
use crate::packs::real;

impl EngineHost<'_> {
    /// Records a refused commit (at the case's latest version: a refusal does not depend on
    /// what came before it) and answers the refusal.
    fn refuse(
        &self,
        attempt: &Attempt<'_>,
        code: crate::codes::ErrorCode,
        message: String,
    ) -> CaseError {
        let body = EventBody::CommitRefused(CommitRefused {
            proposal_id: attempt.proposal_id.into(),
            code: code.code.into(),
            message: message.clone(),
            mode: attempt.mode,
        });
        match self.append_latest(attempt.case_id, vec![NewEvent::new(body, attempt.actor)]) {
            Ok(a) => CaseError::Refused {
                code,
                message,
                version: a.version,
            },
            Err(e) => e,
        }
    }

    /// Commits an approved proposal: every guardrail first (each refusal recorded), then the
    /// approval is used and `commit_started` appended in one write (a second commit at the same
    /// time gets a conflict), then apply, verify, and compensation if either fails.
    pub fn commit(
        &self,
        case_id: &str,
        proposal_id: &str,
        mode: Mode,
        policy_file: Option<&Path>,
        actor: &str,
    ) -> Result<Moved, CaseError> {
        let (mut p, case, pack) = self.runnable(case_id)?;
        let proposal = proposal_of(&p, proposal_id)?.clone();
        if matches!(
            proposal.state.as_str(),
            "committing" | "committed" | "failed"
        ) {
            return Err(CaseError::conflict(
                crate::codes::http::PROPOSAL_SETTLED,
                format!(
                    "proposal `{proposal_id}` is {}: a proposal is committed once",
                    proposal.state
                ),
            ));
        }
        let mut version = case.version;
        let attempt = Attempt {
            case_id,
            proposal_id,
            mode,
            actor,
        };
        let refuse =
            |code: crate::codes::ErrorCode, message: String| self.refuse(&attempt, code, message);
        let Some(row) = p.policy.get(proposal_id).cloned() else {
            return Err(refuse(
                crate::codes::case_refusals::POLICY_REQUIRED,
                format!(
                    "proposal `{proposal_id}` has not been decided by policy\n  help: preview it, then decide it (`tollgate cases decide {case_id} {proposal_id}`)"
                ),
            ));
        };
        if row.effect != "allow" {
            return Err(refuse(
                crate::codes::case_refusals::POLICY_DENIED,
                format!(
                    "policy denied `{proposal_id}` ({}): it cannot be committed",
                    row.rules.join(", ")
                ),
            ));
        }
        let Some(approval_id) = row.approval_id.clone() else {
            return Err(refuse(
                crate::codes::case_refusals::APPROVAL_REQUIRED,
                format!(
                    "`{proposal_id}` has no approval\n  help: decide it (`tollgate cases decide {case_id} {proposal_id}`): an allowed proposal asks for one"
                ),
            ));
        };
        let approval = approvals::get(self.runtime.store(), &approval_id, self.runtime.now_ms())
            .map_err(approval_error)?;
        if approval.state == ApprovalState::Approved
            && row.approval_state.as_deref() == Some("pending")
        {
            // Approved through the approvals route: the case records the answer it observed.
            let body = EventBody::ApprovalDecided(ApprovalDecided {
                proposal_id: proposal_id.into(),
                approval_id: approval_id.clone(),
                approved: true,
                by: approval.decided_by.clone().unwrap_or_default(),
                reason: approval.reason.clone().unwrap_or_default(),
            });
            version = self
                .append(case_id, version, vec![NewEvent::new(body, actor)])?
                .version;
            p = self.projection(case_id)?;
        }
        if approval.state != ApprovalState::Approved {
            return Err(refuse(
                crate::codes::case_refusals::APPROVAL_REQUIRED,
                format!(
                    "`{proposal_id}` is not approved (its approval `{approval_id}` is {})\n  help: a person approves it first (`tollgate cases approve {case_id} {proposal_id} --by NAME`, or the Cases screen)",
                    approval.state.as_str()
                ),
            ));
        }
        let authorization = match mode {
            Mode::DryRun => None,
            Mode::Real => match real::authorize(&pack, &proposal.action, self.env, policy_file) {
                Ok(a) => Some(a),
                Err(r) => return Err(refuse(r.code(), r.to_string())),
            },
        };
        // The change as the adapter that will apply it sees it now: in real mode, the real
        // system's, which must be the change approved.
        let now = self.run_preview_with(
            &pack,
            case_id,
            &proposal,
            mode,
            authorization
                .as_ref()
                .map(real::RealAuthorization::executable),
        )?;
        if now.preview_hash != row.preview_hash {
            return Err(refuse(
                crate::codes::case_refusals::STALE_PREVIEW,
                format!(
                    "the approved preview of `{proposal_id}` is stale: the change would now be `{}`\n  help: preview it again, decide it and have it approved anew",
                    now.summary
                ),
            ));
        }
        let Some(preview) = p.previews.get(proposal_id).cloned() else {
            return Err(refuse(
                crate::codes::case_refusals::PREVIEW_REQUIRED,
                format!(
                    "`{proposal_id}` has no preview\n  help: preview it (`tollgate cases preview {case_id} {proposal_id}`), decide it and have it approved"
                ),
            ));
        };
        let (decided, versions) = self.judge(&pack, case_id, &p, &proposal, &preview)?;
        if decided.effect != "allow" {
            return Err(refuse(
                crate::codes::case_refusals::POLICY_CHANGED,
                format!(
                    "policy now denies `{proposal_id}` ({}): the rules or envelopes changed since it was approved",
                    decided.rules.join(", ")
                ),
            ));
        }
        let action = pack.action(&proposal.action).ok_or_else(|| {
            CaseError::Invalid(format!(
                "pack `{}` has no action `{}`",
                pack.manifest.pack_id, proposal.action
            ))
        })?;
        let req = approval_request(case_id, &pack, &proposal, &preview, &row.rules, versions);
        let hash = call_hash(&req.run, &req.tool, &req.arguments);
        let started = EventBody::CommitStarted(CommitStarted {
            proposal_id: proposal_id.into(),
            preview_hash: preview.preview_hash.clone(),
            approval_id: approval_id.clone(),
            mode,
            authorization: authorization
                .as_ref()
                .map(|a| serde_json::to_value(a).unwrap_or(Value::Null)),
        });
        let (id, at, now_ms, actor_s) = (
            case_id.to_string(),
            self.at(),
            self.runtime.now_ms(),
            actor.to_string(),
        );
        let (aid, envelopes) = (approval_id.clone(), req.envelopes.clone());
        // Claimed: the approval is used and the commit started at the version read, in one write,
        // so a second commit of the same proposal gets a conflict.
        self.runtime.store().transact(move |c| {
            approvals::use_in(c, &aid, &id, &hash, &envelopes, now_ms).map_err(|e| {
                CaseError::conflict(crate::codes::http::APPROVAL_NOT_USABLE, e.to_string())
            })?;
            case_store::append_in(c, &id, version, &[NewEvent::new(started, &actor_s)], &at)
        })?;

        let executable = authorization
            .as_ref()
            .map_or(action.adapter.as_str(), |a| a.executable());
        let input = proposal.input.as_object().cloned().unwrap_or_default();
        let key = format!("{case_id}:{proposal_id}:{}", &preview.preview_hash[..16]);
        let state_dir = self.state_dir(&pack, mode);
        let call = |op| {
            adapter::run(&Call {
                root: &pack.root,
                executable,
                op,
                mode,
                pack_id: &pack.manifest.pack_id,
                name: &action.id,
                case_id,
                input: &input,
                idempotency_key: &key,
                state_dir: &state_dir,
            })
        };
        let outcome = call(Op::Apply).and_then(|receipt| {
            let verification = call(Op::Verify)?;
            Ok((receipt, verification))
        });
        let body = match outcome {
            Ok((receipt, verification))
                if verification.get("verified") == Some(&Value::Bool(true)) =>
            {
                EventBody::CommitApplied(CommitApplied {
                    proposal_id: proposal_id.into(),
                    receipt: receipt
                        .get("receipt")
                        .cloned()
                        .unwrap_or(Value::Object(receipt)),
                    verification: Value::Object(verification),
                })
            }
            failed => {
                let error = match failed {
                    Ok(_) => "verify did not confirm the change".to_string(),
                    Err(e) => e.to_string(),
                };
                let compensation = call(Op::Compensate);
                EventBody::CommitFailed(CommitFailed {
                    proposal_id: proposal_id.into(),
                    error,
                    compensated: compensation
                        .as_ref()
                        .is_ok_and(|a| a.get("compensated") == Some(&Value::Bool(true))),
                    compensation: match compensation {
                        Ok(a) => Value::Object(a),
                        Err(e) => json!({"error": e.to_string()}),
                    },
                })
            }
        };
        let detail = body.payload();
        // The outcome is recorded whatever else the case did meanwhile.
        let appended = self.append_latest(case_id, vec![NewEvent::new(body, actor)])?;
        self.moved(&appended, Some(proposal_id), detail)
    }
}

/// A commit being attempted: what a refusal records.
struct Attempt<'a> {
    case_id: &'a str,
    proposal_id: &'a str,
    mode: Mode,
    actor: &'a str,
}
