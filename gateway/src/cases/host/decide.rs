//! Deciding a previewed proposal — the pack's rules with their proof and the envelopes that
//! govern the case — with an approval bound to the exact preview, and a person's answer to it.

use serde_json::{Map, Value, json};

use super::{EngineHost, Moved, approval_error, approval_request, proposal_of};
use crate::approvals::{self, ApprovalAnswer};
use crate::cases::project::{self, CaseProjection};
use crate::cases::store as case_store;
use crate::cases::{
    ApprovalDecided, ApprovalRequested, CaseError, EventBody, NewEvent, PolicyDecided,
};
use crate::packs::Pack;
use crate::packs::policy::{PackPolicy, ProposalFacts};

impl EngineHost<'_> {
    /// The pack's rules and the envelopes on a previewed proposal now.
    pub(super) fn judge(
        &self,
        pack: &Pack,
        case_id: &str,
        p: &CaseProjection,
        proposal: &project::ProposalRow,
        preview: &project::PreviewRow,
    ) -> Result<(PolicyDecided, Vec<String>), CaseError> {
        let policy = PackPolicy::compile(pack)
            .map_err(|f| CaseError::Evaluation(crate::packs::render(&f)))?;
        let opened = self.opened(case_id)?;
        let empty = Map::new();
        let input = proposal.input.as_object().unwrap_or(&empty);
        let facts = ProposalFacts {
            case_id,
            pack_id: &pack.manifest.pack_id,
            case_input: &opened.input,
            evidence: p
                .evidence
                .values()
                .map(|e| {
                    (
                        e.worker.as_str(),
                        e.key.as_str(),
                        &e.value,
                        e.source.as_str(),
                    )
                })
                .collect(),
            proposal_id: &proposal.proposal_id,
            capability: &proposal.capability,
            action: &proposal.action,
            input,
            changes: preview
                .changes
                .iter()
                .map(|c| {
                    (
                        c.target.clone(),
                        c.field.clone(),
                        c.before.clone(),
                        c.after.clone(),
                    )
                })
                .collect(),
        };
        let rule = pack
            .capability(&proposal.capability)
            .map(|c| c.policy_rule.clone())
            .ok_or_else(|| {
                CaseError::Invalid(format!(
                    "pack `{}` no longer has capability `{}`",
                    pack.manifest.pack_id, proposal.capability
                ))
            })?;
        let decision = policy
            .decide_for(&facts, &rule)
            .map_err(CaseError::Evaluation)?;
        let engine = self
            .runtime
            .engine_for(case_id)
            .map_err(|e| CaseError::Evaluation(e.to_string()))?;
        let tool = format!("{}.{}", pack.manifest.pack_id, proposal.action);
        let args = json!({"proposal": proposal.proposal_id, "preview_hash": preview.preview_hash, "input": input});
        let env = engine.decide_tool(case_id, &tool, &args);
        let governed = env.rules != ["no-envelope"];
        let versions = if governed {
            env.envelope_versions.clone()
        } else {
            Vec::new()
        };
        let env_denies = governed
            && matches!(
                env.effect,
                tollgate_rules::decide::DecisionEffect::Deny
                    | tollgate_rules::decide::DecisionEffect::RateLimited
            );
        let mut rules = decision.rules.clone();
        if governed {
            rules.extend(env.rules.iter().cloned());
        }
        let effect = if decision.effect == "allow" && !env_denies {
            "allow"
        } else {
            "deny"
        };
        Ok((
            PolicyDecided {
                proposal_id: proposal.proposal_id.clone(),
                preview_hash: preview.preview_hash.clone(),
                effect: effect.into(),
                rules,
                pack: decision,
                envelopes: governed.then(|| serde_json::to_value(&env).unwrap_or(Value::Null)),
            },
            versions,
        ))
    }

    /// Decides a previewed proposal; an allowed one gets an approval bound to its preview.
    pub fn decide(
        &self,
        case_id: &str,
        proposal_id: &str,
        actor: &str,
    ) -> Result<Moved, CaseError> {
        let (p, case, pack) = self.runnable(case_id)?;
        let proposal = proposal_of(&p, proposal_id)?;
        let preview = p.previews.get(proposal_id).ok_or_else(|| {
            CaseError::conflict(crate::codes::http::PREVIEW_REQUIRED, format!("proposal `{proposal_id}` has no preview yet\n  help: preview it first (`tollgate cases preview {case_id} {proposal_id}`)"))
        })?;
        if proposal.state != "previewed" {
            return Err(CaseError::conflict(
                crate::codes::http::OUT_OF_ORDER,
                format!(
                    "proposal `{proposal_id}` is {}; policy decides a freshly previewed proposal (preview it again to decide anew)",
                    proposal.state
                ),
            ));
        }
        let (decided, versions) = self.judge(&pack, case_id, &p, proposal, preview)?;
        let detail = serde_json::to_value(&decided).unwrap_or(Value::Null);
        let allowed = decided.effect == "allow";
        let mut events = vec![NewEvent::new(
            EventBody::PolicyDecided(Box::new(decided.clone())),
            actor,
        )];
        let request = allowed.then(|| {
            // The decision's version names the approval, so every decision gets its own.
            let call_id = format!(
                "{proposal_id}:{}:v{}",
                &preview.preview_hash[..16],
                case.version + 1
            );
            let mut req =
                approval_request(case_id, &pack, proposal, preview, &decided.rules, versions);
            req.call_id = call_id;
            req
        });
        if let Some(req) = &request {
            events.push(NewEvent::new(
                EventBody::ApprovalRequested(ApprovalRequested {
                    proposal_id: proposal_id.into(),
                    approval_id: req.id(),
                    preview_hash: preview.preview_hash.clone(),
                }),
                actor,
            ));
        }
        let (id, version, at, now) = (
            case_id.to_string(),
            case.version,
            self.at(),
            self.runtime.now_ms(),
        );
        let appended = self.runtime.store().transact(move |c| {
            if let Some(req) = &request {
                approvals::insert_pending(c, req, now)?;
            }
            case_store::append_in(c, &id, version, &events, &at)
        })?;
        self.moved(&appended, Some(proposal_id), detail)
    }

    /// A person's answer to a proposal's approval. Refused when the preview is stale.
    pub fn answer(
        &self,
        case_id: &str,
        proposal_id: &str,
        answer: &ApprovalAnswer,
    ) -> Result<Moved, CaseError> {
        let (p, case, pack) = self.runnable(case_id)?;
        let proposal = proposal_of(&p, proposal_id)?;
        let row = p.policy.get(proposal_id);
        let Some((approval_id, "pending")) =
            row.and_then(|r| Some((r.approval_id.clone()?, r.approval_state.as_deref()?)))
        else {
            return Err(CaseError::conflict(
                crate::codes::http::NO_PENDING_APPROVAL,
                format!(
                    "proposal `{proposal_id}` is {}: it has no approval waiting\n  help: an approval is asked for when policy allows a previewed proposal (`tollgate cases decide {case_id} {proposal_id}`)",
                    proposal.state
                ),
            ));
        };
        if answer.approve {
            let now = self.run_preview(&pack, case_id, proposal)?;
            let approved_hash = row.map(|r| r.preview_hash.as_str()).unwrap_or_default();
            if now.preview_hash != approved_hash {
                return Err(CaseError::conflict(
                    crate::codes::http::STALE_PREVIEW,
                    format!(
                        "the preview of `{proposal_id}` is stale: the change would now be `{}`, not what was previewed\n  help: preview it again and decide it anew before approving",
                        now.summary
                    ),
                ));
            }
        }
        let body = EventBody::ApprovalDecided(ApprovalDecided {
            proposal_id: proposal_id.into(),
            approval_id: approval_id.clone(),
            approved: answer.approve,
            by: answer.by.clone(),
            reason: answer.reason.clone(),
        });
        // The approval's answer and the case's event commit together, or neither does.
        let events = vec![NewEvent::new(body, &answer.by)];
        let (id, version, at, now) = (
            case_id.to_string(),
            case.version,
            self.at(),
            self.runtime.now_ms(),
        );
        let given = answer.clone();
        let appended = self.runtime.store().transact(move |c| {
            approvals::decide_in(c, &approval_id, &given, now, &at).map_err(approval_error)?;
            case_store::append_in(c, &id, version, &events, &at)
        })?;
        self.moved(
            &appended,
            Some(proposal_id),
            json!({"approved": answer.approve, "by": answer.by}),
        )
    }
}
