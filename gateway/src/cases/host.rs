//! The engine host: the one place a case moves. It opens a case for a registered pack (with a
//! recorder run that holds its approvals), runs the pack's workers, makes proposals from its
//! capabilities, previews them through the action's adapter, decides them (the pack's rules and
//! the envelopes that govern the case), asks for an approval bound to the exact preview, takes a
//! person's answer, and commits — the only operation that applies a change, after every step
//! before it, and the only way a real adapter runs. Every step is a case event; every refused
//! commit is recorded with why.

use std::path::PathBuf;
use std::sync::Arc;

use serde::Serialize;
use serde_json::{Map, Value, json};
use tollgate_rules::canonical::canonical_json;

use super::project::{self, CaseProjection};
use super::store::{self as case_store, Appended};
use super::{CaseError, EventBody, Evidence, ModelRun, NewEvent, Opened, Preview, Proposal};
use crate::approvals::{self, ApprovalRequest};
use crate::packs::adapter::{self, Call, Mode, Op};
use crate::packs::{Pack, PackRegistry};
use crate::runtime::OpenRun;

mod commit;
mod decide;
use crate::runtime::Runtime;

/// How long an approval of a case change holds.
pub const APPROVAL_TTL_SECONDS: i64 = 7 * 24 * 3600;

/// Where a step left the case.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Moved {
    /// The case.
    pub case_id: String,
    /// Its version now.
    pub version: i64,
    /// The proposal moved, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub proposal_id: Option<String>,
    /// The case's state now.
    pub state: String,
    /// What the step produced (the evidence, the preview, the decision, the receipt).
    #[schema(value_type = Object)]
    pub detail: Value,
    /// The append repeated event ids already stored: nothing was written.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub duplicate: bool,
}

/// The engine host over a runtime and the packs it may run.
pub struct EngineHost<'a> {
    runtime: &'a Runtime,
    registry: &'a PackRegistry,
    env: &'a (dyn Fn(&str) -> Option<String> + Sync),
    state_root: PathBuf,
}

/// The folder dry-run adapters keep their effects in: `adapter-state/` in the store's local
/// folder (beside an SQLite database; `.tollgate/` for PostgreSQL: the effects of a dry run
/// are this machine's, not the shared database's).
pub fn state_root(runtime: &Runtime) -> PathBuf {
    runtime.store().location().local_dir().join("adapter-state")
}

impl<'a> EngineHost<'a> {
    /// A host running the packs of `registry`; `env` is read for the real-mode guardrail.
    pub fn new(
        runtime: &'a Runtime,
        registry: &'a PackRegistry,
        env: &'a (dyn Fn(&str) -> Option<String> + Sync),
    ) -> EngineHost<'a> {
        EngineHost {
            state_root: state_root(runtime),
            runtime,
            registry,
            env,
        }
    }

    pub(super) fn at(&self) -> String {
        self.runtime.now_rfc3339()
    }

    pub(super) fn projection(&self, case_id: &str) -> Result<CaseProjection, CaseError> {
        let id = case_id.to_string();
        let p = self
            .runtime
            .store()
            .read(move |c| project::load_in(c, &id, false))?;
        if p.case.is_none() {
            return Err(super::inspect::not_found(case_id));
        }
        Ok(p)
    }

    pub(super) fn opened(&self, case_id: &str) -> Result<Opened, CaseError> {
        let id = case_id.to_string();
        let first = self
            .runtime
            .store()
            .read(move |c| crate::cases::log::events_in(c, &id, 0, 1))?;
        match first.into_iter().next().map(|e| e.body) {
            Some(EventBody::CaseOpened(o)) => Ok(o),
            _ => Err(super::inspect::not_found(case_id)),
        }
    }

    /// A case that can move here: its projection, its header and its registered pack (or why
    /// it is read-only).
    pub(super) fn runnable(
        &self,
        case_id: &str,
    ) -> Result<(CaseProjection, project::CaseRow, Arc<Pack>), CaseError> {
        let p = self.projection(case_id)?;
        let case = p
            .case
            .clone()
            .ok_or_else(|| super::inspect::not_found(case_id))?;
        let pack = self.pack_of(&case)?;
        Ok((p, case, pack))
    }

    /// The registered pack of a case, or why the case is read-only here.
    pub(super) fn pack_of(&self, case: &project::CaseRow) -> Result<Arc<Pack>, CaseError> {
        self.registry
            .get(&case.engine_id, &case.engine_version)
            .ok_or_else(|| {
                let status = super::inspect::pack_status(case, self.registry, None);
                CaseError::ReadOnly(format!(
                    "case `{}` is read-only here: {}",
                    case.case_id,
                    status.guidance.unwrap_or_default()
                ))
            })
    }

    fn append(
        &self,
        case_id: &str,
        expected: i64,
        events: Vec<NewEvent>,
    ) -> Result<Appended, CaseError> {
        case_store::append(self.runtime.store(), case_id, expected, events, &self.at())
    }

    /// Appends events that do not depend on the events before them (a commit's outcome, a
    /// refusal) at whatever version the case is at, again when another append got there first,
    /// so they are never lost to a concurrent step.
    fn append_latest(&self, case_id: &str, events: Vec<NewEvent>) -> Result<Appended, CaseError> {
        let mut tries = 0;
        loop {
            let id = case_id.to_string();
            let version = self
                .runtime
                .store()
                .read(move |c| crate::cases::log::version_in(c, &id))?;
            match self.append(case_id, version, events.clone()) {
                Err(CaseError::VersionConflict { .. }) if tries < 16 => tries += 1,
                other => return other,
            }
        }
    }

    fn moved(
        &self,
        appended: &Appended,
        proposal: Option<&str>,
        detail: Value,
    ) -> Result<Moved, CaseError> {
        let p = self.projection(&appended.case_id)?;
        Ok(Moved {
            case_id: appended.case_id.clone(),
            version: appended.version,
            proposal_id: proposal.map(str::to_string),
            state: p.case.map(|c| c.state).unwrap_or_default(),
            detail,
            duplicate: appended.duplicate,
        })
    }

    /// Opens a case of the registered pack `engine_id@engine_version`.
    pub fn open(
        &self,
        engine_id: &str,
        engine_version: &str,
        title: Option<String>,
        input: Map<String, Value>,
        actor: &str,
    ) -> Result<Moved, CaseError> {
        let pack = self.registry.get(engine_id, engine_version).ok_or_else(|| {
            CaseError::NotFound(format!(
                "no registered pack `{engine_id}@{engine_version}`\n  help: `GET /packs` lists the registered packs; register a pack root at startup with TOLLGATE_PACK_ROOTS"
            ))
        })?;
        let case_id = format!("case-{}", crate::runtime::random_hex(8));
        let pack_id = &pack.manifest.pack_id;
        self.runtime
            .open_run(OpenRun {
                id: Some(case_id.clone()),
                agent: format!("pack:{pack_id}"),
                task: case_id.clone(),
                scope: format!("pack:{pack_id}/case:{case_id}"),
                clearance: None,
                envelopes: Vec::new(),
                parent_run: None,
                handoff: None,
                metadata: Map::from_iter([("case_id".to_string(), Value::String(case_id.clone()))]),
            })
            .map_err(|e| CaseError::Invalid(format!("cannot open the case's run: {e}")))?;
        self.runtime
            .add_step(&case_id, "case", None)
            .map_err(|e| CaseError::Invalid(format!("cannot open the case's run: {e}")))?;
        let title = title
            .filter(|t| !t.trim().is_empty())
            .or_else(|| {
                input
                    .get("title")
                    .and_then(Value::as_str)
                    .map(str::to_string)
            })
            .unwrap_or_else(|| format!("{pack_id} case"));
        let opened = Opened {
            pack_id: pack_id.clone(),
            engine_id: pack.manifest.engine_id.clone(),
            engine_version: pack.manifest.engine_version.clone(),
            pack_root: pack.root.display().to_string(),
            pack_hash: pack.hash.clone(),
            title,
            input,
            run_id: case_id.clone(),
        };
        let appended = self.append(
            &case_id,
            0,
            vec![NewEvent::new(EventBody::CaseOpened(opened), actor)],
        )?;
        self.moved(&appended, None, json!({"pack": pack.engine()}))
    }

    /// Runs every worker of the case's pack on the case input and records their evidence.
    pub fn collect(&self, case_id: &str, actor: &str) -> Result<Moved, CaseError> {
        let (_, case, pack) = self.runnable(case_id)?;
        let opened = self.opened(case_id)?;
        let mut events = Vec::new();
        let mut detail = Map::new();
        for w in &pack.workers {
            let answer = adapter::run(&Call {
                root: &pack.root,
                executable: &w.adapter,
                op: Op::Collect,
                mode: Mode::DryRun,
                pack_id: &pack.manifest.pack_id,
                name: &w.id,
                case_id,
                input: &opened.input,
                idempotency_key: &format!("{case_id}:collect:{}", w.id),
                state_dir: &self.state_dir(&pack, Mode::DryRun),
            })?;
            let evidence = checked_evidence(w, &answer)?;
            detail.insert(w.id.clone(), Value::Object(evidence.clone()));
            events.push(NewEvent::new(
                EventBody::EvidenceRecorded(Evidence {
                    worker: w.id.clone(),
                    evidence,
                    source: "adapter".into(),
                }),
                actor,
            ));
        }
        if events.is_empty() {
            return Err(CaseError::Invalid(format!(
                "pack `{}` has no workers",
                pack.manifest.pack_id
            )));
        }
        let appended = self.append(case_id, case.version, events)?;
        self.moved(&appended, None, Value::Object(detail))
    }

    /// Records evidence a caller collected, at the version it read.
    pub fn record_evidence(
        &self,
        case_id: &str,
        expected_version: i64,
        worker: &str,
        evidence: Map<String, Value>,
        event_id: Option<String>,
        actor: &str,
    ) -> Result<Moved, CaseError> {
        let (_, _, pack) = self.runnable(case_id)?;
        let w = pack.worker(worker).ok_or_else(|| {
            CaseError::Invalid(format!(
                "pack `{}` has no worker `{worker}` (its workers: {})",
                pack.manifest.pack_id,
                pack.workers
                    .iter()
                    .map(|w| w.id.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })?;
        if let Some(id) = &event_id
            && !valid_event_id(id)
        {
            return Err(CaseError::Invalid(format!(
                "event id `{id}` is not valid: use 1 to 128 letters, digits and `-_.:` (ids with `/` are the case's own)"
            )));
        }
        let evidence = checked_evidence(
            w,
            &Map::from_iter([("evidence".into(), Value::Object(evidence))]),
        )?;
        let appended = self.append(
            case_id,
            expected_version,
            vec![NewEvent {
                event_id,
                body: EventBody::EvidenceRecorded(Evidence {
                    worker: worker.into(),
                    evidence: evidence.clone(),
                    source: "api".into(),
                }),
                actor: actor.into(),
            }],
        )?;
        self.moved(&appended, None, Value::Object(evidence))
    }

    /// Proposes `capability`: its input and wording filled from the case input and evidence.
    pub fn propose(
        &self,
        case_id: &str,
        capability: &str,
        actor: &str,
    ) -> Result<Moved, CaseError> {
        let (p, case, pack) = self.runnable(case_id)?;
        let cap = pack.capability(capability).ok_or_else(|| {
            CaseError::Invalid(format!(
                "pack `{}` has no capability `{capability}` (its capabilities: {})",
                pack.manifest.pack_id,
                pack.capabilities
                    .iter()
                    .map(|c| c.id.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })?;
        let opened = self.opened(case_id)?;
        let fill = |placeholder: &str| -> Option<Value> {
            let parts: Vec<&str> = placeholder.split('.').collect();
            match parts.as_slice() {
                ["case", "case_id"] => Some(Value::String(case_id.into())),
                ["case", key] => opened.input.get(*key).cloned(),
                ["evidence", worker, key] => p
                    .evidence
                    .get(&((*worker).to_string(), (*key).to_string()))
                    .map(|e| e.value.clone()),
                _ => None,
            }
        };
        let mut input = Map::new();
        for (k, v) in &cap.input {
            let filled = match v.as_str().and_then(|s| s.strip_prefix('{')?.strip_suffix('}')) {
                Some(ph) => fill(ph).ok_or_else(|| {
                    CaseError::conflict(crate::codes::http::EVIDENCE_MISSING,
                        format!("capability `{capability}` needs `{{{ph}}}`, which the case does not have yet\n  help: run the workers first (`tollgate cases collect {case_id}` or POST /cases/{case_id}/runtime/collect)"),
                    )
                })?,
                None => v.clone(),
            };
            input.insert(k.clone(), filled);
        }
        let wording = fill_wording(&cap.wording, &|ph| match ph.strip_prefix("input.") {
            Some(k) => input.get(k).map(crate::packs::policy::symbol_of),
            None => fill(ph).map(|v| crate::packs::policy::symbol_of(&v)),
        });
        let proposal_id = format!("prop-{}", p.proposals.len() + 1);
        let body = EventBody::ProposalMade(Proposal {
            proposal_id: proposal_id.clone(),
            capability: cap.id.clone(),
            action: cap.action.clone(),
            input: input.clone(),
            wording: wording.clone(),
        });
        let appended = self.append(case_id, case.version, vec![NewEvent::new(body, actor)])?;
        self.moved(
            &appended,
            Some(&proposal_id),
            json!({"wording": wording, "input": input}),
        )
    }

    pub(super) fn state_dir(&self, pack: &Pack, mode: Mode) -> PathBuf {
        self.state_root
            .join(&pack.manifest.pack_id)
            .join(mode.as_str())
    }

    /// Runs the action's dry-run preview of a proposal now: its changes, summary and hash.
    pub(super) fn run_preview(
        &self,
        pack: &Pack,
        case_id: &str,
        proposal: &project::ProposalRow,
    ) -> Result<Preview, CaseError> {
        self.run_preview_with(pack, case_id, proposal, Mode::DryRun, None)
    }

    /// The preview by the adapter of `mode`: the dry-run adapter, or (given its authorisation's
    /// executable) the real one, which previews against the real system.
    pub(super) fn run_preview_with(
        &self,
        pack: &Pack,
        case_id: &str,
        proposal: &project::ProposalRow,
        mode: Mode,
        real_executable: Option<&str>,
    ) -> Result<Preview, CaseError> {
        let action = pack.action(&proposal.action).ok_or_else(|| {
            CaseError::Invalid(format!(
                "pack `{}` no longer has action `{}`",
                pack.manifest.pack_id, proposal.action
            ))
        })?;
        let input = proposal.input.as_object().cloned().unwrap_or_default();
        let executable = real_executable.unwrap_or(&action.adapter);
        let answer = adapter::run(&Call {
            root: &pack.root,
            executable,
            op: Op::Preview,
            mode,
            pack_id: &pack.manifest.pack_id,
            name: &action.id,
            case_id,
            input: &input,
            idempotency_key: &format!("{case_id}:{}", proposal.proposal_id),
            state_dir: &self.state_dir(pack, mode),
        })?;
        let (changes, summary) = adapter::preview_of(&answer).map_err(|m| {
            CaseError::Adapter(adapter::AdapterError::BadAnswer {
                executable: action.adapter.clone(),
                op: "preview".into(),
                message: m,
            })
        })?;
        let hashed = json!({"action": action.id, "input": input, "changes": changes});
        let preview_hash = blake3::hash(canonical_json(&hashed).as_bytes())
            .to_hex()
            .to_string();
        Ok(Preview {
            proposal_id: proposal.proposal_id.clone(),
            preview_hash,
            changes,
            summary,
        })
    }

    /// Previews a proposal through its action's adapter (dry run: nothing changes).
    pub fn preview(
        &self,
        case_id: &str,
        proposal_id: &str,
        actor: &str,
    ) -> Result<Moved, CaseError> {
        let (p, case, pack) = self.runnable(case_id)?;
        let proposal = proposal_of(&p, proposal_id)?;
        if matches!(proposal.state.as_str(), "committing" | "committed") {
            return Err(CaseError::conflict(
                crate::codes::http::PROPOSAL_SETTLED,
                format!(
                    "proposal `{proposal_id}` is {}: it cannot be previewed again",
                    proposal.state
                ),
            ));
        }
        let preview = self.run_preview(&pack, case_id, proposal)?;
        let detail = serde_json::to_value(&preview).unwrap_or(Value::Null);
        let appended = self.append(
            case_id,
            case.version,
            vec![NewEvent::new(EventBody::PreviewRecorded(preview), actor)],
        )?;
        self.moved(&appended, Some(proposal_id), detail)
    }

    /// Asks the model provider for a short summary of the case and records it. Without a
    /// provider key the deterministic fake provider answers, and the event says so.
    pub fn model_run(&self, case_id: &str, purpose: &str, actor: &str) -> Result<Moved, CaseError> {
        let p = self.projection(case_id)?;
        let case = p
            .case
            .as_ref()
            .ok_or_else(|| super::inspect::not_found(case_id))?;
        let facts: Vec<String> = p
            .evidence
            .values()
            .map(|e| {
                format!(
                    "{}.{} = {}",
                    e.worker,
                    e.key,
                    crate::packs::policy::symbol_of(&e.value)
                )
            })
            .chain(
                p.proposals
                    .values()
                    .map(|pr| format!("{}: {} ({})", pr.proposal_id, pr.wording, pr.state)),
            )
            .collect();
        let request = crate::providers::ChatRequest {
            model: "case-summary".into(),
            messages: vec![
                crate::providers::ChatMessage::new(
                    "system",
                    format!(
                        "You help review case `{}` ({}). Purpose: {purpose}. Answer in two sentences.",
                        case.case_id, case.title
                    ),
                ),
                crate::providers::ChatMessage::new("user", facts.join("\n")),
            ],
            temperature: Some(0.0),
            max_tokens: Some(200),
            extra: Map::new(),
        };
        let provider = self.runtime.provider();
        let response = provider
            .complete(&request)
            .map_err(|e| CaseError::Invalid(format!("the model call failed: {e}")))?;
        let note = if provider.name() == "fake" {
            "no provider is configured (TOLLGATE_PROVIDER=openai with PROVIDER_API_KEY): the deterministic fake provider answered".to_string()
        } else {
            String::new()
        };
        let body = EventBody::ModelRun(ModelRun {
            provider: provider.name().into(),
            model: request.model.clone(),
            purpose: purpose.into(),
            output: response.content.clone(),
            note,
        });
        let detail = body.payload();
        let appended = self.append(case_id, case.version, vec![NewEvent::new(body, actor)])?;
        self.moved(&appended, None, detail)
    }

    /// The pack's demo case: opened with the demo input, its workers run, the demo capability
    /// proposed, previewed and decided — up to the approval a person gives.
    pub fn demo(
        &self,
        engine_id: &str,
        engine_version: &str,
        actor: &str,
    ) -> Result<Moved, CaseError> {
        let pack = self
            .registry
            .get(engine_id, engine_version)
            .ok_or_else(|| {
                CaseError::NotFound(format!("no registered pack `{engine_id}@{engine_version}`"))
            })?;
        let demo = pack.manifest.demo.clone().ok_or_else(|| {
            CaseError::Invalid(format!(
                "pack `{}` has no demo in pack.yaml",
                pack.manifest.pack_id
            ))
        })?;
        let opened = self.open(
            engine_id,
            engine_version,
            Some(demo.title.clone()),
            demo.input.clone(),
            actor,
        )?;
        let case_id = opened.case_id;
        if !pack.workers.is_empty() {
            self.collect(&case_id, actor)?;
        }
        let capability = demo
            .capability
            .or_else(|| pack.capabilities.first().map(|c| c.id.clone()))
            .ok_or_else(|| {
                CaseError::Invalid(format!(
                    "pack `{}` has no capability",
                    pack.manifest.pack_id
                ))
            })?;
        let proposed = self.propose(&case_id, &capability, actor)?;
        let pid = proposed.proposal_id.unwrap_or_default();
        self.preview(&case_id, &pid, actor)?;
        self.decide(&case_id, &pid, actor)
    }
}

pub(super) fn approval_error(e: approvals::ApprovalError) -> CaseError {
    match e {
        approvals::ApprovalError::Store(s) => CaseError::Store(s),
        approvals::ApprovalError::NotFound(m) => CaseError::NotFound(format!("no approval `{m}`")),
        approvals::ApprovalError::Invalid(m) => CaseError::Invalid(m),
        approvals::ApprovalError::Final { id, state, .. } => CaseError::conflict(
            crate::codes::http::APPROVAL_REFUSED,
            format!(
                "approval `{id}` is {}\n  help: preview the proposal again and decide it anew: a new decision asks for a new approval",
                state.as_str()
            ),
        ),
        other => CaseError::conflict(crate::codes::http::APPROVAL_REFUSED, other.to_string()),
    }
}

/// What an approval of a proposal's previewed change binds: the case's run, the pack's action as
/// the tool, the proposal, its input and the preview's hash as the arguments.
pub(super) fn approval_request(
    case_id: &str,
    pack: &Pack,
    proposal: &project::ProposalRow,
    preview: &project::PreviewRow,
    rules: &[String],
    envelopes: Vec<String>,
) -> ApprovalRequest {
    ApprovalRequest {
        run: case_id.into(),
        call_id: format!("{}:{}", proposal.proposal_id, &preview.preview_hash[..16]),
        tool: format!("{}.{}", pack.manifest.pack_id, proposal.action),
        arguments: json!({"proposal": proposal.proposal_id, "preview_hash": preview.preview_hash, "input": proposal.input}),
        envelopes,
        rules: rules.to_vec(),
        approvers: Vec::new(),
        ttl_seconds: APPROVAL_TTL_SECONDS,
    }
}

pub(super) fn proposal_of<'p>(
    p: &'p CaseProjection,
    id: &str,
) -> Result<&'p project::ProposalRow, CaseError> {
    p.proposals.get(id).ok_or_else(|| {
        CaseError::NotFound(format!(
            "case has no proposal `{id}` (its proposals: {})",
            p.proposals.keys().cloned().collect::<Vec<_>>().join(", ")
        ))
    })
}

fn checked_evidence(
    w: &crate::packs::Worker,
    answer: &Map<String, Value>,
) -> Result<Map<String, Value>, CaseError> {
    let evidence = answer
        .get("evidence")
        .and_then(Value::as_object)
        .ok_or_else(|| {
            CaseError::Invalid(format!("worker `{}` answered no `evidence` object", w.id))
        })?;
    let undeclared: Vec<&String> = evidence
        .keys()
        .filter(|k| !w.produces.contains(k))
        .collect();
    if !undeclared.is_empty() {
        return Err(CaseError::Invalid(format!(
            "worker `{}` recorded keys it does not declare in `produces`: {}",
            w.id,
            undeclared
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    Ok(evidence.clone())
}

/// Whether a caller's event id is one it may use: the case's own generated ids hold a `/`.
fn valid_event_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 128
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':'))
}

/// Fills `{...}` placeholders of a wording; unknown ones stay as written.
fn fill_wording(text: &str, fill: &dyn Fn(&str) -> Option<String>) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find('{') {
        out.push_str(&rest[..start]);
        match rest[start..].find('}') {
            Some(end) => {
                let ph = &rest[start + 1..start + end];
                match fill(ph) {
                    Some(v) => out.push_str(&v),
                    None => out.push_str(&rest[start..=start + end]),
                }
                rest = &rest[start + end + 1..];
            }
            None => {
                out.push_str(&rest[start..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}
