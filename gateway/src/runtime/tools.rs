//! Tool calls: the agent asks before it executes. The answer is the tool decision of the
//! envelopes in force (with the run's rate-limit usage as facts), then, for a call that may go
//! ahead, the data rules over its arguments (secrets found in them are redacted or block the
//! call), then approvals: a `require_approval` call gets an approval bound to it, and the same
//! call presented again with an approved approval id goes ahead once.
//!
//! Deciding and recording are apart: `decide_tool_call` reads the store and gives a
//! `ToolCallOutcome` (effect, reason, the approval step as an `ApprovalStep`, the arguments to
//! execute with and the call as it will be recorded); `record_tool_call` writes it.
//!
//! The call, its decision (with the receipt) and any approval use are recorded in one write,
//! together with the rate-limit count and, for the first decision under an engine, the links of
//! its envelope versions to the run, so a crash never leaves a counted call unrecorded nor a
//! recorded decision without the versions it was made under.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;
use tollgate_rules::canonical::to_canonical_json;
use tollgate_rules::decide::{DecisionEffect, EnvelopeDecision, PolicyRequest};
use tollgate_rules::envelope::{Level, Section};
use tollgate_rules::request::{ContextItem, ToolCall};

use super::{RunPolicy, Runtime, RuntimeError};
use crate::approvals::{
    self, Approval, ApprovalError, ApprovalRequest, ApprovalState, approval_id, call_hash,
};
use crate::ratelimit;
use crate::recorder::buckets::Timed;
use crate::recorder::events::{Decided, DecisionEvent, ToolCallEvent};
use crate::recorder::format::RunHeader;
use crate::recorder::write::{append_in, link_envelope_versions, new_event, running_step_in};
use crate::secrets::{holds_secret, redact_secrets};
use crate::store::StoreError;

/// How long an approval holds when the rule that gated the call names no `ttl_seconds`.
pub const DEFAULT_APPROVAL_TTL_SECONDS: i64 = 3600;

/// What an agent asks before it executes a tool.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolCallRequest {
    /// The tool (`fs.read_file`).
    #[schema(pattern = r"\S")]
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
    /// Whether the answer carries the decision's proof and why-not (`?explain=true`): the
    /// receipt is recorded without them either way, and they are rendered when it is read.
    #[serde(skip)]
    pub explain: bool,
    /// For a caller admitted from a token kept verified (`auth::verified`): the count of
    /// credential changes it was verified at. The write records the call only while the
    /// store's count is still this one, else refuses it with
    /// [`RuntimeError::CredentialsChanged`] and records nothing.
    #[serde(skip)]
    pub credentials_seen: Option<i64>,
}

fn empty_object() -> Value {
    Value::Object(Default::default())
}

/// An approval as an answer shows it.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
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
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct ToolCallAnswer {
    /// The call's id.
    pub call_id: String,
    /// What the agent must do: `allow` (execute), `redact` (execute with `arguments`),
    /// `deny`, `rate_limited` (retry after `retry_after` seconds), `require_approval` (wait
    /// for `approval`, then ask again with its id).
    #[schema(schema_with = answer_effect)]
    pub effect: DecisionEffect,
    /// Whether the agent may execute the call now.
    pub execute: bool,
    /// The tool.
    pub tool: String,
    /// The arguments to execute with (secrets replaced when `effect` is `redact`); null when
    /// the call may not run.
    #[schema(value_type = Option<Object>, required = true)]
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
    /// The tool decision: effect, deciding rules, envelope versions and input hash, as its
    /// receipt records it; with its proof and why-not when the call was asked with
    /// `?explain=true` (else they are rendered when the receipt is read:
    /// `GET /v2/policies/decisions/{run_id}?seq=SEQ`).
    #[schema(value_type = Object)]
    pub decision: Rendered,
    /// The data decision over the arguments, when they held something to hide.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub data_decision: Option<Rendered>,
}

fn answer_effect() -> utoipa::openapi::Object {
    crate::schemas::effect(
        "What the agent must do: `allow` (execute), `redact` (execute with `arguments`), `deny`, `rate_limited` (retry after `retry_after` seconds), `require_approval` (wait for `approval`, then ask again with its id).",
    )
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

impl Decided for Rendered {
    fn decision(&self) -> &EnvelopeDecision {
        &self.decision
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

/// Where a decision is recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
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

/// What approvals do for a call: nothing, ask for a new approval, show the one gating it
/// (pending or rejected), or use an approved one.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ApprovalStep {
    /// No approval is involved.
    None,
    /// The call needs an approval it does not have yet: this one is stored, pending.
    Request(ApprovalRequest),
    /// The approval presented does not let the call go ahead (pending or rejected).
    Show(Approval),
    /// The approval presented, approved for exactly this call, is used by it.
    Use(String),
}

impl ApprovalStep {
    /// The approval a `decision` event names: the one presented, or the one requested.
    fn gate(&self, presented: Option<&str>) -> Option<String> {
        match (presented, self) {
            (Some(id), _) => Some(id.to_string()),
            (None, ApprovalStep::Request(r)) => Some(r.id()),
            (None, _) => None,
        }
    }
}

/// A tool call decided and not yet recorded: everything its one write records and its answer
/// says. Deciding reads the store (rate-limit usage, the approval presented) and writes
/// nothing; [`Runtime::record_tool_call`] writes it.
#[derive(Debug, Clone)]
pub(crate) struct ToolCallOutcome {
    /// The run's header (its id, and the agent and task rate limits count against).
    header: RunHeader,
    /// The count of policy changes the deciding engine was built at: the write records the
    /// decision only while the store's count is still this one.
    policy_seen: i64,
    /// The count of credential changes the caller's token was verified at, when it was
    /// admitted from memory: the write records the call only while it holds.
    credentials_seen: Option<i64>,
    /// The engine that decided: the first write under it links its versions to the run.
    engine: std::sync::Arc<RunPolicy>,
    /// The step the agent named (default: the run's last, found by the write).
    step: Option<u32>,
    call_id: String,
    tool: String,
    /// What the agent must do.
    effect: DecisionEffect,
    /// A sentence for the agent.
    reason: String,
    retry_after: Option<u64>,
    approval: ApprovalStep,
    /// The approval id the agent presented.
    presented: Option<String>,
    /// The tool decision, as recorded.
    decision: EnvelopeDecision,
    /// The tool decision with its proof and why-not, for an answer asked with `explain`.
    explained: Option<EnvelopeDecision>,
    /// The data decision over the arguments, when they held a secret.
    data_decision: Option<EnvelopeDecision>,
    /// The arguments to execute with (secrets replaced when `effect` is `redact`).
    arguments: Value,
    /// What the recorder keeps: never a detected secret.
    event: ToolCallEvent,
    /// Rate-limited rules the call counts against (empty unless it executes).
    counted: Vec<ratelimit::LimitedRule>,
    /// The governing envelope versions an approval is bound to.
    governing: Vec<String>,
    now_ms: i64,
    /// When deciding began: the time to the decision is counted for the overview.
    started: std::time::Instant,
}

impl ToolCallOutcome {
    /// What the agent must do.
    pub(crate) fn effect(&self) -> DecisionEffect {
        self.effect
    }

    fn executes(&self) -> bool {
        matches!(self.effect, DecisionEffect::Allow | DecisionEffect::Redact)
    }
}

/// Why a tool call's write failed: the store, or the approval it uses (decided, used or
/// expired meanwhile).
enum RecordError {
    Store(StoreError),
    Approval(ApprovalError),
    /// A rate limit filled between the decision and its write: decide again.
    LimitReached(ratelimit::LimitReached),
    /// The policy changed (an envelope version stored, a run re-pinned, here or through
    /// another gateway) after the engine that decided was built: load it and decide again.
    /// The store's count of policy changes as the write read it.
    PolicyChanged(i64),
    /// A token was revoked or deleted after the caller's was verified: the caller's is read
    /// again. The store's count of credential changes as the write read it.
    CredentialsChanged(i64),
}

impl From<StoreError> for RecordError {
    fn from(e: StoreError) -> Self {
        RecordError::Store(e)
    }
}

impl From<RecordError> for RuntimeError {
    fn from(e: RecordError) -> Self {
        match e {
            RecordError::Approval(ApprovalError::Store(e)) | RecordError::Store(e) => match e {
                // A step the run does not have, or a row changed meanwhile.
                StoreError::Invalid(m) => RuntimeError::Conflict(m),
                other => RuntimeError::Store(other),
            },
            RecordError::Approval(e) => RuntimeError::Conflict(e.to_string()),
            RecordError::LimitReached(r) => RuntimeError::Conflict(format!(
                "rate limit `{}` filled while this call was decided, again and again; nothing was recorded\n  help: retry the call",
                r.rule
            )),
            RecordError::CredentialsChanged(now) => RuntimeError::CredentialsChanged(now),
            RecordError::PolicyChanged(_) => RuntimeError::Conflict(
                "the policy changed while this call was decided, again and again; nothing was recorded\n  help: retry the call".into(),
            ),
        }
    }
}

impl Runtime {
    /// Decides a tool call of `run` and records it.
    pub fn tool_call(
        &self,
        run: &str,
        req: ToolCallRequest,
    ) -> Result<ToolCallAnswer, RuntimeError> {
        for _ in 1..DECIDE_ATTEMPTS {
            let outcome = self.decide_tool_call_as_kept(run, req.clone())?;
            let (write, pending) = self.tool_call_write(outcome)?;
            match self.store().transact(write) {
                // Decided on a count that filled meanwhile: decide again on the new count.
                Err(RecordError::LimitReached(_)) => continue,
                // Decided under a policy changed meanwhile: decide again under the new one.
                Err(RecordError::PolicyChanged(now)) => self.load_policy(now)?,
                written => return pending.answer(written),
            }
        }
        let outcome = self.decide_tool_call_as_kept(run, req)?;
        self.record_tool_call(outcome)
    }

    /// Decides a tool call: the tool decision under the run's envelopes with its rate-limit
    /// usage, then the approval it needs or presents, then the data rules over arguments
    /// that hold a secret. Reads the store; writes nothing.
    pub(crate) fn decide_tool_call(
        &self,
        run: &str,
        req: ToolCallRequest,
    ) -> Result<ToolCallOutcome, RuntimeError> {
        self.fresh_policy()?;
        self.decide_tool_call_as_kept(run, req)
    }

    /// Decides a tool call under the run's engine as this process keeps it, without first
    /// reading the store's count of policy changes: for a decision that is recorded, whose
    /// write checks that count under the store's write lock (exact, where a read before
    /// deciding could miss a change committed between the read and the write) and has it
    /// decided again when it moved. One store read less per call.
    fn decide_tool_call_as_kept(
        &self,
        run: &str,
        req: ToolCallRequest,
    ) -> Result<ToolCallOutcome, RuntimeError> {
        let started = std::time::Instant::now();
        if req.tool.trim().is_empty() {
            return Err(RuntimeError::Invalid("`tool` must not be empty".into()));
        }
        super::runs::check_name_length("tool", &req.tool)?;
        if !req.arguments.is_object() {
            return Err(RuntimeError::Invalid(
                "`arguments` must be a JSON object".into(),
            ));
        }
        let (header, engine, policy_seen) = self.running_engine_as_kept(run)?;
        // Rate limits and approval terms come from the versions the run is pinned to.
        let set = engine.set().clone();
        let governing = engine.governing(run);
        let now = self.now_ms();
        let call_id = req
            .call_id
            .clone()
            .unwrap_or_else(|| format!("call-{}", super::runs::random_hex(6)));

        // Rate-limit usage first: the packs decide `rate_limited` from it.
        let limited =
            ratelimit::applicable(&set, &governing, &req.tool, &req.arguments, &self.patterns);
        let usage = if limited.is_empty() {
            Default::default()
        } else {
            let (h, l) = (header.clone(), limited.clone());
            self.store()
                .read(move |c| ratelimit::usage(c, &h, &l, now))?
        };
        let call = ToolCall {
            name: req.tool.clone(),
            args: req.arguments.clone(),
            usage: usage.iter().map(|(k, u)| (k.clone(), u.used)).collect(),
        };
        let request = PolicyRequest::Tool {
            run: run.to_string(),
            call: call.clone(),
            now: None,
        };
        // One scan for secrets. A call whose arguments hold one is recorded with it replaced,
        // so its request cannot be rebuilt from the record: its decision is recorded in full.
        // Any other is recorded as a receipt whose proof and why-not are rendered when read.
        let secret = holds_secret(&req.arguments);
        let decision = if secret {
            engine.decide(&request)
        } else {
            engine.decide_receipt(&request)
        };
        let explained =
            (req.explain && decision.on_read.is_some()).then(|| engine.decide(&request));
        let hash = call_hash(run, &req.tool, &req.arguments);
        let rules = decision.rules.join(", ");

        let mut retry_after = None;
        let (mut effect, mut reason, mut approval) = match decision.effect {
            DecisionEffect::Allow => (
                DecisionEffect::Allow,
                format!("allowed by {rules}"),
                ApprovalStep::None,
            ),
            DecisionEffect::Deny | DecisionEffect::Redact => (
                DecisionEffect::Deny,
                format!("denied by {rules}"),
                ApprovalStep::None,
            ),
            DecisionEffect::RateLimited => {
                let after = ratelimit::retry_after(&limited, &usage, &decision.rules, now);
                retry_after = Some(after);
                (
                    DecisionEffect::RateLimited,
                    format!("rate limited by {rules}; retry after {after} s"),
                    ApprovalStep::None,
                )
            }
            DecisionEffect::RequireApproval => match &req.approval_id {
                Some(id) => {
                    let a = approvals::get(self.store(), id, now)?;
                    match a.state {
                        ApprovalState::Rejected => {
                            let why = a
                                .reason
                                .as_deref()
                                .filter(|r| !r.is_empty())
                                .map(|r| format!(": {r}"))
                                .unwrap_or_default();
                            let by = a.decided_by.as_deref().unwrap_or("?");
                            let reason = format!("approval {id} was rejected by {by}{why}");
                            (DecisionEffect::Deny, reason, ApprovalStep::Show(a))
                        }
                        ApprovalState::Pending => {
                            approvals::check_binding(&a, run, &hash, &governing)?;
                            let reason = format!("waiting for approval {id}");
                            (
                                DecisionEffect::RequireApproval,
                                reason,
                                ApprovalStep::Show(a),
                            )
                        }
                        _ => {
                            approvals::check_use(&a, run, &hash, &governing)?;
                            let by = a.decided_by.as_deref().unwrap_or("?");
                            let reason =
                                format!("approved by {by} (approval {id}); required by {rules}");
                            (DecisionEffect::Allow, reason, ApprovalStep::Use(id.clone()))
                        }
                    }
                }
                None => {
                    let (approvers, ttl) = approval_terms(&set, &decision.rules);
                    let reason = format!(
                        "needs approval {} (required by {rules})",
                        approval_id(run, &call_id, &hash)
                    );
                    let request = ApprovalRequest {
                        run: run.to_string(),
                        call_id: call_id.clone(),
                        tool: req.tool.clone(),
                        arguments: req.arguments.clone(),
                        envelopes: governing.clone(),
                        rules: decision.rules.clone(),
                        approvers,
                        ttl_seconds: ttl,
                    };
                    (
                        DecisionEffect::RequireApproval,
                        reason,
                        ApprovalStep::Request(request),
                    )
                }
            },
        };

        // Data rules over the arguments of a call that may go ahead.
        let mut arguments = req.arguments.clone();
        let mut data_decision = None;
        if effect == DecisionEffect::Allow && secret {
            let check = self.check_arguments(&engine, run, &header.scope, &call_id, &req.arguments);
            let data_rules = check.decision.rules.join(", ");
            match check.decision.effect {
                DecisionEffect::Allow => {}
                DecisionEffect::Redact => {
                    effect = DecisionEffect::Redact;
                    arguments = check.arguments;
                    reason = format!("{reason}; secrets in the arguments redacted by {data_rules}");
                }
                _ => {
                    effect = DecisionEffect::Deny;
                    reason =
                        format!("the arguments hold data the run may not pass on ({data_rules})");
                    if matches!(approval, ApprovalStep::Use(_)) {
                        approval = ApprovalStep::None;
                    }
                }
            }
            data_decision = Some(check.decision);
        }

        // The recorder never keeps a detected secret, whatever the decision.
        let recorded_arguments = if effect == DecisionEffect::Redact {
            arguments.clone()
        } else if secret {
            redact_secrets(&req.arguments, "secret").0
        } else {
            req.arguments.clone()
        };
        let mut outcome = ToolCallOutcome {
            header,
            engine,
            policy_seen,
            credentials_seen: req.credentials_seen,
            step: req.step,
            call_id: call_id.clone(),
            tool: req.tool.clone(),
            effect,
            reason,
            retry_after,
            approval,
            presented: req.approval_id,
            decision,
            explained,
            data_decision,
            arguments,
            event: ToolCallEvent {
                call_id,
                tool: req.tool,
                arguments: recorded_arguments,
                usage: Some(call.usage),
                call_hash: Some(hash),
            },
            counted: Vec::new(),
            governing,
            now_ms: now,
            started,
        };
        if outcome.executes() {
            outcome.counted = limited;
        }
        Ok(outcome)
    }

    /// Records a decided tool call in one write — the call (secrets already replaced), the
    /// decision with its receipt, the approval used or requested, the rate-limit count and,
    /// for the first decision under the run's engine, the links of its envelope versions —
    /// and answers it.
    pub(crate) fn record_tool_call(
        &self,
        outcome: ToolCallOutcome,
    ) -> Result<ToolCallAnswer, RuntimeError> {
        let (write, pending) = self.tool_call_write(outcome)?;
        pending.answer(self.store().transact(write))
    }

    /// Decides a tool call and records it, for async callers (the HTTP handler): the decision
    /// is made on the caller's thread, and the write is awaited without holding one, so the
    /// writer's commit wakes the handler directly.
    pub async fn tool_call_async(
        &self,
        run: &str,
        req: &ToolCallRequest,
    ) -> Result<ToolCallAnswer, RuntimeError> {
        for _ in 1..DECIDE_ATTEMPTS {
            let outcome = self.decide_tool_call_as_kept(run, req.clone())?;
            let (write, pending) = self.tool_call_write(outcome)?;
            match self.store().transact_async(write).await {
                Err(RecordError::LimitReached(_)) => continue,
                Err(RecordError::PolicyChanged(now)) => self.load_policy(now)?,
                written => return pending.answer(written),
            }
        }
        let outcome = self.decide_tool_call_as_kept(run, req.clone())?;
        let (write, pending) = self.tool_call_write(outcome)?;
        pending.answer(self.store().transact_async(write).await)
    }

    /// The one write that records a decided tool call, and what its answer needs once the write
    /// has committed.
    fn tool_call_write(
        &self,
        outcome: ToolCallOutcome,
    ) -> Result<(ToolCallWrite, PendingAnswer), RuntimeError> {
        let execute = outcome.executes();
        let ToolCallOutcome {
            header,
            policy_seen,
            credentials_seen,
            engine,
            step,
            call_id,
            tool,
            effect,
            reason,
            retry_after,
            approval,
            presented,
            decision,
            explained,
            data_decision,
            arguments,
            event,
            counted,
            governing,
            now_ms: now,
            started,
        } = outcome;
        let at = self.now_rfc3339();
        // The decision's canonical JSON is written once, for the event and for the answer.
        let decision = Rendered::new(decision)?;
        let data_decision = data_decision.map(Rendered::new).transpose()?;
        let run = header.id.clone();
        let decision_event = DecisionEvent {
            call_id: Some(call_id.clone()),
            approval_id: Some(approval.gate(presented.as_deref())),
            data_decision: Some(data_decision.as_ref()),
            reason: Some(reason.clone()),
            ..DecisionEvent::new(&decision, effect)
        };
        // The step is set by the write, which also checks that the run still runs.
        let mut events = vec![
            new_event(0, at.clone(), &event)?,
            new_event(0, at, &decision_event)?.timed(Timed::ToolCall, started.elapsed()),
        ];
        let links = engine.unlinked();
        let hash = event.call_hash.unwrap_or_default();
        let (key, id) = (run.clone(), call_id.clone());
        // The write owns what it needs; the approval to show comes back with the result.
        let write: ToolCallWrite = Box::new(move |c: &crate::store::Connection| {
            let running = running_step_in(c, &key, &header.agent, step)?;
            if credentials_seen.is_some_and(|seen| seen != running.credential_changes) {
                return Err(RecordError::CredentialsChanged(running.credential_changes));
            }
            if running.policy_changes != policy_seen {
                return Err(RecordError::PolicyChanged(running.policy_changes));
            }
            for e in &mut events {
                e.set_step(running.step);
            }
            if let Some(links) = &links {
                link_envelope_versions(c, &key, links)?;
            }
            let shown = match approval {
                ApprovalStep::Use(id) => Some(
                    approvals::use_in(c, &id, &key, &hash, &governing, now)
                        .map_err(RecordError::Approval)?,
                ),
                ApprovalStep::Request(r) => Some(approvals::insert_pending(c, &r, now)?),
                ApprovalStep::Show(a) => Some(a),
                ApprovalStep::None => None,
            };
            ratelimit::record_in(c, &header, &counted, &id, now)?
                .map_err(RecordError::LimitReached)?;
            let appended = append_in(c, &key, events)?;
            Ok::<_, RecordError>(Written { appended, shown })
        });
        // The answer carries the decision as recorded, or with its proof when asked.
        let decision = match explained {
            Some(full) => Rendered::new(full)?,
            None => decision,
        };
        let pending = PendingAnswer {
            engine,
            run,
            call_id,
            effect,
            execute,
            tool,
            arguments,
            reason,
            retry_after,
            decision,
            data_decision,
        };
        Ok((write, pending))
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

/// How often a call is decided when rate limits keep filling between its decision and its
/// write. A second decision reads the filled count and is `rate_limited` (not counted, so its
/// write cannot race), so more than two happen only when the window also moves meanwhile.
const DECIDE_ATTEMPTS: usize = 4;

/// The write recording a decided tool call.
type ToolCallWrite =
    Box<dyn FnOnce(&crate::store::Connection) -> Result<Written, RecordError> + Send + 'static>;

/// What a tool call's write gives back: the appended events, and the approval to show.
struct Written {
    appended: Vec<crate::recorder::write::Appended>,
    shown: Option<Approval>,
}

/// What a tool call's answer needs besides its write's result.
struct PendingAnswer {
    engine: std::sync::Arc<RunPolicy>,
    run: String,
    call_id: String,
    effect: DecisionEffect,
    execute: bool,
    tool: String,
    arguments: Value,
    reason: String,
    retry_after: Option<u64>,
    decision: Rendered,
    data_decision: Option<Rendered>,
}

impl PendingAnswer {
    /// The answer, once the write has committed (or its error).
    fn answer(self, written: Result<Written, RecordError>) -> Result<ToolCallAnswer, RuntimeError> {
        let Written { appended, shown } = written?;
        self.engine.mark_linked();
        let last = appended
            .last()
            .ok_or_else(|| RuntimeError::Evaluation("nothing was recorded".into()))?;
        let decision = self.decision;
        Ok(ToolCallAnswer {
            call_id: self.call_id,
            effect: self.effect,
            execute: self.execute,
            tool: self.tool,
            arguments: if self.execute {
                self.arguments
            } else {
                Value::Null
            },
            reason: self.reason,
            rules: decision.rules.clone(),
            retry_after: self.retry_after,
            approval: shown.as_ref().map(ApprovalView::from),
            receipt: Receipt {
                run: self.run,
                seq: last.seq,
                hash: last.hash.clone(),
                input_hash: decision.input_hash.clone(),
                envelopes: decision.envelope_versions.clone(),
            },
            decision,
            data_decision: self.data_decision,
        })
    }
}

/// The data decision over a call's arguments and the arguments to execute with.
struct ArgumentCheck {
    decision: EnvelopeDecision,
    arguments: Value,
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
            ApprovalError::Refused(r) => RuntimeError::Refused(r),
            other @ (ApprovalError::Final { .. }
            | ApprovalError::Mismatch { .. }
            | ApprovalError::Pending(_)) => RuntimeError::Conflict(other.to_string()),
        }
    }
}
