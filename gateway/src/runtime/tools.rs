//! Tool calls: the agent asks before it executes. The answer is the tool decision of the
//! envelopes in force (with the run's rate-limit usage as facts), then, for a call that may go
//! ahead, the data rules over its arguments (secrets found in them are redacted or block the
//! call), then approvals: a `require_approval` call gets an approval bound to it, and the same
//! call presented again with an approved approval id goes ahead once.
//!
//! The call, its decision (with the receipt) and any approval use are recorded in one write,
//! together with the rate-limit count and, for the first decision under an engine, the links of
//! its envelope versions to the run, so a crash never leaves a counted call unrecorded nor a
//! recorded decision without the versions it was made under.

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Value, json};
use tollgate_rules::decide::{DecisionEffect, EnvelopeDecision, PolicyRequest};
use tollgate_rules::envelope::request::{ContextItem, ToolCall};
use tollgate_rules::envelope::{Level, Section, to_canonical_json};

use super::{Runtime, RuntimeError};
use crate::approvals::{
    self, Approval, ApprovalError, ApprovalRequest, ApprovalState, approval_id, call_hash,
};
use crate::compiler::redact::{BodyPart, find_spans, redact};
use crate::ratelimit;
use crate::recorder::format::EventKind;
use crate::recorder::write::{Payload, append_in, link_envelope_versions};

/// How long an approval holds when the rule that gated the call names no `ttl_seconds`.
pub const DEFAULT_APPROVAL_TTL_SECONDS: i64 = 3600;

/// What an agent asks before it executes a tool.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolCallRequest {
    /// The tool (`fs.read_file`).
    pub tool: String,
    /// Its arguments, a JSON object.
    #[serde(default = "empty_object")]
    #[schema(value_type = Object)]
    pub arguments: Value,
    /// The step (default: the run's last).
    #[serde(default)]
    pub step: Option<u32>,
    /// The agent's id for the call (generated when absent). Asking again with the same id
    /// after an approval reuses the approval.
    #[serde(default)]
    pub call_id: Option<String>,
    /// An approval granted for exactly this call.
    #[serde(default)]
    pub approval_id: Option<String>,
}

fn empty_object() -> Value {
    Value::Object(Default::default())
}

/// An approval as an answer shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ApprovalView {
    /// Its id.
    pub id: String,
    /// `pending`, `approved`, `rejected`, `used`, `expired`.
    pub state: ApprovalState,
    /// RFC 3339.
    pub expires_at: String,
    /// Who may approve (empty: anyone).
    pub approvers: Vec<String>,
    /// Who decided, and why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decided_by: Option<String>,
    /// Why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl From<&Approval> for ApprovalView {
    fn from(a: &Approval) -> Self {
        ApprovalView {
            id: a.id.clone(),
            state: a.state,
            expires_at: a.expires_at_rfc3339(),
            approvers: a.approvers.clone(),
            decided_by: a.decided_by.clone(),
            reason: a.reason.clone(),
        }
    }
}

/// The gateway's answer to a tool call.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolCallAnswer {
    /// The call's id.
    pub call_id: String,
    /// What the agent must do: `allow` (execute), `redact` (execute with `arguments`),
    /// `deny`, `rate_limited` (retry after `retry_after` seconds), `require_approval` (wait
    /// for `approval`, then ask again with its id).
    pub effect: DecisionEffect,
    /// Whether the agent may execute the call now.
    pub execute: bool,
    /// The tool.
    pub tool: String,
    /// The arguments to execute with (secrets replaced when `effect` is `redact`).
    pub arguments: Value,
    /// A sentence for the agent (and its logs).
    pub reason: String,
    /// The deciding rules.
    pub rules: Vec<String>,
    /// Seconds until a rate-limited call may succeed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_after: Option<u64>,
    /// The approval gating the call.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approval: Option<ApprovalView>,
    /// The receipt: where the decision is recorded.
    pub receipt: Receipt,
    /// The tool decision, with its proof.
    pub decision: Rendered,
    /// The data decision over the arguments, when they held something to hide.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data_decision: Option<Rendered>,
}

/// A decision together with its canonical JSON, written once: the recorded event and the
/// answer carry the same text (a decision's proof is most of what a call costs to write).
/// Derefs to the decision; serializes as the text.
#[derive(Debug, Clone)]
pub struct Rendered {
    decision: EnvelopeDecision,
    json: Box<RawValue>,
}

impl Rendered {
    pub(super) fn new(decision: EnvelopeDecision) -> Result<Rendered, RuntimeError> {
        let text = to_canonical_json(&decision)
            .map_err(|e| RuntimeError::Evaluation(format!("cannot write the decision: {e}")))?;
        let json = RawValue::from_string(text)
            .map_err(|e| RuntimeError::Evaluation(format!("cannot write the decision: {e}")))?;
        Ok(Rendered { decision, json })
    }

    /// The decision's canonical JSON.
    pub fn json(&self) -> &str {
        self.json.get()
    }

    /// The decision.
    pub fn into_inner(self) -> EnvelopeDecision {
        self.decision
    }
}

impl std::ops::Deref for Rendered {
    type Target = EnvelopeDecision;
    fn deref(&self) -> &EnvelopeDecision {
        &self.decision
    }
}

impl PartialEq for Rendered {
    fn eq(&self, other: &Rendered) -> bool {
        self.decision == other.decision
    }
}

impl Serialize for Rendered {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.json.serialize(s)
    }
}

/// The canonical JSON of a tool call's `decision` event, assembled from the decisions'
/// already written text (keys in sorted order; `decision_event_text_is_canonical` checks it
/// against the general writer).
pub(super) fn decision_event_text(
    approval_id: Option<&str>,
    call_id: &str,
    data_decision: Option<&Rendered>,
    decision: &Rendered,
    outcome: DecisionEffect,
    reason: &str,
) -> String {
    let string = |s: &str| Value::from(s).to_string();
    let mut out = String::with_capacity(decision.json().len() + 256);
    out.push_str("{\"approval_id\":");
    out.push_str(&approval_id.map_or_else(|| "null".to_string(), string));
    out.push_str(",\"call_id\":");
    out.push_str(&string(call_id));
    out.push_str(",\"data_decision\":");
    out.push_str(data_decision.map_or("null", Rendered::json));
    out.push_str(",\"decision\":");
    out.push_str(decision.json());
    out.push_str(",\"outcome\":");
    out.push_str(&string(outcome.as_str()));
    out.push_str(",\"reason\":");
    out.push_str(&string(reason));
    out.push('}');
    out
}

/// Where a decision is recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Receipt {
    /// The run.
    pub run: String,
    /// The `decision` event's sequence number.
    pub seq: u64,
    /// Its hash in the run's chain.
    pub hash: String,
    /// The decision's input hash.
    pub input_hash: String,
    /// `ID@VERSION` of the envelopes that decided.
    pub envelopes: Vec<String>,
}

/// The data decision over a call's arguments and the arguments to execute with.
struct ArgumentCheck {
    decision: EnvelopeDecision,
    arguments: Value,
}

impl Runtime {
    /// Decides a tool call of `run` and records it.
    pub fn tool_call(
        &self,
        run: &str,
        req: ToolCallRequest,
    ) -> Result<ToolCallAnswer, RuntimeError> {
        if req.tool.trim().is_empty() {
            return Err(RuntimeError::Invalid("`tool` must not be empty".into()));
        }
        if !req.arguments.is_object() {
            return Err(RuntimeError::Invalid(
                "`arguments` must be a JSON object".into(),
            ));
        }
        let header = self.running(run)?;
        let engine = self.engine_for(run)?;
        let set = self.envelopes();
        let governing = engine.governing(run);
        let now = self.now_ms();
        let call_id = req
            .call_id
            .clone()
            .unwrap_or_else(|| format!("call-{}", super::runs::random_hex(6)));
        let step = match req.step {
            Some(s) => s,
            None => self.current_step(run, &header)?,
        };

        // Rate-limit usage first: the packs decide `rate_limited` from it.
        let limited =
            ratelimit::applicable(&set, &governing, &req.tool, &req.arguments, &self.patterns);
        let usage = {
            let (h, l) = (header.clone(), limited.clone());
            self.store()
                .read(move |c| ratelimit::usage(c, &h, &l, now))?
        };
        let call = ToolCall {
            name: req.tool.clone(),
            args: req.arguments.clone(),
            usage: usage.iter().map(|(k, u)| (k.clone(), u.used)).collect(),
        };
        let decision = engine.decide(&PolicyRequest::Tool {
            run: run.to_string(),
            call: call.clone(),
            now: None,
        });
        let hash = call_hash(run, &req.tool, &req.arguments);
        // One scan for secrets per call: it decides whether data rules apply to the arguments.
        let secret = holds_secret(&req.arguments);

        let mut effect = decision.effect;
        let mut reason;
        let mut approval: Option<Approval> = None;
        let mut use_approval = None;
        let mut new_approval = None;
        let mut retry_after = None;
        match decision.effect {
            DecisionEffect::Allow => reason = format!("allowed by {}", decision.rules.join(", ")),
            DecisionEffect::Deny | DecisionEffect::Redact => {
                effect = DecisionEffect::Deny;
                reason = format!("denied by {}", decision.rules.join(", "));
            }
            DecisionEffect::RateLimited => {
                let after = ratelimit::retry_after(&limited, &usage, &decision.rules, now);
                retry_after = Some(after);
                reason = format!(
                    "rate limited by {}; retry after {after} s",
                    decision.rules.join(", ")
                );
            }
            DecisionEffect::RequireApproval => match &req.approval_id {
                Some(id) => {
                    let a = approvals::get(self.store(), id, now)?;
                    match a.state {
                        ApprovalState::Rejected => {
                            effect = DecisionEffect::Deny;
                            reason = format!(
                                "approval {id} was rejected by {}{}",
                                a.decided_by.as_deref().unwrap_or("?"),
                                a.reason
                                    .as_deref()
                                    .filter(|r| !r.is_empty())
                                    .map(|r| format!(": {r}"))
                                    .unwrap_or_default()
                            );
                            approval = Some(a);
                        }
                        ApprovalState::Pending => {
                            approvals::check_binding(&a, run, &hash, &governing)?;
                            reason = format!("waiting for approval {id}");
                            approval = Some(a);
                        }
                        _ => {
                            approvals::check_use(&a, run, &hash, &governing)?;
                            effect = DecisionEffect::Allow;
                            reason = format!(
                                "approved by {} (approval {id}); required by {}",
                                a.decided_by.as_deref().unwrap_or("?"),
                                decision.rules.join(", ")
                            );
                            use_approval = Some(id.clone());
                        }
                    }
                }
                None => {
                    let (approvers, ttl) = approval_terms(&set, &decision.rules);
                    new_approval = Some(ApprovalRequest {
                        run: run.to_string(),
                        call_id: call_id.clone(),
                        tool: req.tool.clone(),
                        arguments: req.arguments.clone(),
                        envelopes: governing.clone(),
                        rules: decision.rules.clone(),
                        approvers,
                        ttl_seconds: ttl,
                    });
                    reason = format!(
                        "needs approval {} (required by {})",
                        approval_id(run, &call_id),
                        decision.rules.join(", ")
                    );
                }
            },
        }

        // Data rules over the arguments of a call that may go ahead.
        let mut arguments = req.arguments.clone();
        let mut data_decision = None;
        if effect == DecisionEffect::Allow && secret {
            let check = self.check_arguments(&engine, run, &header.scope, &call_id, &req.arguments);
            match check.decision.effect {
                DecisionEffect::Allow => {}
                DecisionEffect::Redact => {
                    effect = DecisionEffect::Redact;
                    arguments = check.arguments;
                    reason = format!(
                        "{reason}; secrets in the arguments redacted by {}",
                        check.decision.rules.join(", ")
                    );
                }
                _ => {
                    effect = DecisionEffect::Deny;
                    reason = format!(
                        "the arguments hold data the run may not pass on ({})",
                        check.decision.rules.join(", ")
                    );
                    use_approval = None;
                }
            }
            data_decision = Some(check.decision);
        }
        let execute = matches!(effect, DecisionEffect::Allow | DecisionEffect::Redact);

        // Record: the call (with secrets already replaced), the decision, the approval use or
        // request, and the rate-limit count — one write.
        let at = self.now_rfc3339();
        // The recorder never keeps a detected secret, whatever the decision.
        let recorded_args = if effect == DecisionEffect::Redact {
            arguments.clone()
        } else if secret {
            redact_secrets(&req.arguments, "secret").0
        } else {
            req.arguments.clone()
        };
        let call_event = json!({
            "call_id": call_id,
            "tool": req.tool,
            "arguments": recorded_args,
            "usage": call.usage,
            "call_hash": hash,
        });
        // The decision with its proof is the largest thing recorded per call: its canonical
        // JSON is written once, for the event and for the answer.
        let decision = Rendered::new(decision)?;
        let data_decision = data_decision.map(Rendered::new).transpose()?;
        let gate = req
            .approval_id
            .clone()
            .or_else(|| new_approval.as_ref().map(|a| approval_id(run, &a.call_id)));
        let decision_event = Payload::Canonical(decision_event_text(
            gate.as_deref(),
            &call_id,
            data_decision.as_ref(),
            &decision,
            effect,
            &reason,
        ));
        let (run_id, h, gov) = (run.to_string(), header.clone(), governing.clone());
        let counted = if execute { limited.clone() } else { Vec::new() };
        let cid = call_id.clone();
        let links = engine.unlinked();
        let written = self.store().write(move |c| {
            if let Some(links) = &links {
                link_envelope_versions(c, &run_id, links)?;
            }
            let mut used = None;
            if let Some(id) = &use_approval {
                used = Some(
                    approvals::use_in(c, id, &run_id, &hash, &gov, now)
                        .map_err(|e| crate::store::StoreError::Invalid(e.to_string()))?,
                );
            }
            let created = match &new_approval {
                Some(r) => Some(approvals::insert_pending(c, r, now)?),
                None => None,
            };
            ratelimit::record_in(c, &h, &counted, &cid, now)?;
            let appended = append_in(
                c,
                &run_id,
                vec![
                    (step, EventKind::ToolCall, at.clone(), call_event.into()),
                    (step, EventKind::Decision, at, decision_event),
                ],
            )?;
            Ok((appended, used.or(created)))
        });
        let (appended, stored_approval) = written.map_err(|e| match e {
            crate::store::StoreError::Invalid(m) => RuntimeError::Conflict(m),
            other => other.into(),
        })?;
        engine.mark_linked();
        if stored_approval.is_some() {
            approval = stored_approval;
        }
        let last = appended
            .last()
            .ok_or_else(|| RuntimeError::Evaluation("nothing was recorded".into()))?;
        Ok(ToolCallAnswer {
            call_id,
            effect,
            execute,
            tool: req.tool,
            arguments: if execute { arguments } else { Value::Null },
            reason,
            rules: decision.rules.clone(),
            retry_after,
            approval: approval.as_ref().map(ApprovalView::from),
            receipt: Receipt {
                run: run.to_string(),
                seq: last.seq,
                hash: last.hash.clone(),
                input_hash: decision.input_hash.clone(),
                envelopes: decision.envelope_versions.clone(),
            },
            decision,
            data_decision,
        })
    }

    /// The data rules over a call's arguments that hold a detected secret: the arguments are a
    /// context item of kind `tool_arguments`, in the run's scope, labelled `secret`.
    fn check_arguments(
        &self,
        engine: &tollgate_rules::decide::PolicyEngine,
        run: &str,
        scope: &str,
        call_id: &str,
        arguments: &Value,
    ) -> ArgumentCheck {
        let item = ContextItem {
            id: format!("{call_id}/arguments"),
            kind: "tool_arguments".into(),
            scope: scope.to_string(),
            sensitivity: Level::Internal,
            labels: vec!["secret".into()],
        };
        let decision = engine.decide_context(run, &item);
        let (arguments, _) = redact_secrets(arguments, &decision.rules.join(","));
        ArgumentCheck {
            decision,
            arguments,
        }
    }
}

/// Whether a detector finds a secret in any string of `v` (object keys excepted).
pub(super) fn holds_secret(v: &Value) -> bool {
    match v {
        Value::String(s) => !find_spans(s).is_empty(),
        Value::Array(items) => items.iter().any(holds_secret),
        Value::Object(map) => map.values().any(holds_secret),
        _ => false,
    }
}

/// `v` with every secret span replaced by the compiler's redaction marker of `rule` (strings
/// without one are kept as they are), and how many spans were replaced.
pub(super) fn redact_secrets(v: &Value, rule: &str) -> (Value, usize) {
    let mut spans = 0;
    let redacted = rewrite_strings(v, &mut |s| {
        if find_spans(s).is_empty() {
            return None;
        }
        let r = redact(s, BodyPart::Content, rule);
        spans += r.spans.len();
        Some(r.text)
    });
    (redacted, spans)
}

/// Applies `f` to every string in `v` (object keys excepted); `Some` replaces it.
fn rewrite_strings(v: &Value, f: &mut dyn FnMut(&str) -> Option<String>) -> Value {
    match v {
        Value::String(s) => Value::String(f(s).unwrap_or_else(|| s.clone())),
        Value::Array(items) => Value::Array(items.iter().map(|i| rewrite_strings(i, f)).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, i)| (k.clone(), rewrite_strings(i, f)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Who may approve and for how long, from the approval rules among the deciding rules; a
/// `require_approval` tool rule names nobody (anyone may approve) and holds for an hour.
fn approval_terms(
    set: &tollgate_rules::envelope::EnvelopeSet,
    rules: &[String],
) -> (Vec<String>, i64) {
    let mut approvers = Vec::new();
    let mut ttl: Option<i64> = None;
    for rule in rules {
        let Some((env_id, local)) = rule.split_once('/') else {
            continue;
        };
        let Some(env) = set.get(env_id) else { continue };
        for (i, a) in env.approvals.iter().enumerate() {
            let id = a
                .id
                .clone()
                .unwrap_or_else(|| tollgate_rules::envelope::local_rule_id(Section::Approvals, i));
            if id == local {
                approvers.extend(a.approvers.iter().cloned());
                let t = i64::from(a.ttl_seconds);
                ttl = Some(ttl.map_or(t, |old: i64| old.min(t)));
            }
        }
    }
    approvers.sort();
    approvers.dedup();
    (approvers, ttl.unwrap_or(DEFAULT_APPROVAL_TTL_SECONDS))
}

impl From<ApprovalError> for RuntimeError {
    fn from(e: ApprovalError) -> Self {
        match e {
            ApprovalError::Store(s) => RuntimeError::Store(s),
            ApprovalError::NotFound(id) => RuntimeError::NotFound(format!("no approval `{id}`")),
            ApprovalError::Invalid(m) => RuntimeError::Invalid(m),
            e @ ApprovalError::NotAnApprover { .. } => RuntimeError::Forbidden(e.to_string()),
            other @ (ApprovalError::Final { .. }
            | ApprovalError::Mismatch { .. }
            | ApprovalError::Pending(_)) => RuntimeError::Conflict(other.to_string()),
        }
    }
}
