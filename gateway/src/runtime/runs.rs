//! Runs through the gateway: open one (who, what, where, under which envelopes), add steps,
//! append events, finish it, read it back.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tollgate_rules::envelope::Level;

use super::handoffs::HANDOFF_KEY;
use super::{Runtime, RuntimeError};
use crate::auth::Principal;
use crate::recorder::format::{EventKind, RunHeader};
use crate::recorder::write::{Appended, finished_run};
use crate::recorder::{RecorderError, RunSummary};
use crate::run_policy::ATTACHED_ENVELOPES;

/// What an agent sends to open a run.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct OpenRun {
    /// Run id; generated (`run-…`) when absent.
    #[serde(default)]
    #[schema(pattern = "^[A-Za-z0-9_.:-]{1,128}$")]
    pub id: Option<String>,
    /// The agent.
    #[schema(pattern = r"\S")]
    pub agent: String,
    /// The task.
    #[schema(pattern = r"\S")]
    pub task: String,
    /// Scope path (`org:acme/repo:api/task:T-12`).
    #[schema(pattern = r"\S")]
    pub scope: String,
    /// The highest sensitivity the run may see (default `public`).
    #[serde(default)]
    #[schema(schema_with = run_clearance)]
    pub clearance: Option<Level>,
    /// Ids of stored envelopes to attach to this run (besides those attached to its agent or
    /// task by the envelopes themselves).
    #[serde(default)]
    pub envelopes: Vec<String>,
    /// The run that started this one.
    #[serde(default)]
    pub parent_run: Option<String>,
    /// A handoff contract this run takes on (`POST /v2/handoffs/contracts`): the run is then
    /// governed by the producer's envelopes as well as its own, is cleared no higher than the
    /// contract allows, and is the contract's consumer run.
    #[serde(default)]
    pub handoff: Option<String>,
    /// Free metadata.
    #[serde(default)]
    #[schema(value_type = Object)]
    pub metadata: Map<String, Value>,
}

/// A run as the API shows it.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct RunView {
    /// The header.
    pub run: RunHeader,
    /// Steps, events, head of the chain.
    pub summary: RunSummary,
    /// `ID@VERSION` of every envelope governing it now.
    pub governing: Vec<String>,
}

/// One event to append.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EventInput {
    /// The step (default: the run's last; a first step is added when it has none).
    #[serde(default)]
    pub step: Option<u32>,
    /// The kind: one an agent reports (the gateway records its own decisions).
    #[schema(schema_with = agent_event_kinds)]
    pub kind: String,
    /// A JSON object.
    #[serde(default = "empty")]
    #[schema(value_type = Object)]
    pub payload: Value,
}

fn run_clearance() -> utoipa::openapi::Object {
    crate::schemas::or_null(crate::schemas::level(
        "The highest sensitivity the run may see (default `public`).",
    ))
}

fn agent_event_kinds() -> utoipa::openapi::Object {
    crate::schemas::one_of(
        "The kind: one an agent reports (the gateway records its own decisions).",
        &[
            "note",
            "tool_result",
            "output",
            "error",
            "handoff",
            "context_offered",
        ],
    )
}

fn empty() -> Value {
    Value::Object(Map::new())
}

fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 128
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':'))
}

/// The longest name (bytes) an agent may give for what the store indexes: a run's agent,
/// task, scope and user, a tool. Both engines refuse alike: PostgreSQL's btree indexes take
/// entries up to about 2.7 KB and would otherwise refuse longer ones, SQLite would store them.
pub const LONGEST_NAME: usize = 1024;

/// Refuses `value` as the `what` of a request when it is longer than [`LONGEST_NAME`].
pub(crate) fn check_name_length(what: &str, value: &str) -> Result<(), RuntimeError> {
    if value.len() > LONGEST_NAME {
        return Err(RuntimeError::Invalid(format!(
            "`{what}` is {} bytes long: at most {LONGEST_NAME}\n  help: use a shorter name (put long text in the run's metadata or an event)",
            value.len()
        )));
    }
    Ok(())
}

/// The metadata key naming the credential that opened a run (`tok_…`, `owner`).
pub const OPENED_BY: &str = "opened_by";

/// Metadata keys the gateway writes itself; a run's opener may not give them (they attach
/// envelopes, bind a contract, name who opened the run).
pub const RESERVED_METADATA: [&str; 3] = [ATTACHED_ENVELOPES, HANDOFF_KEY, OPENED_BY];

impl Runtime {
    /// Opens a run. Envelope ids must name stored envelopes; the run records their versions.
    pub fn open_run(&self, req: OpenRun) -> Result<RunView, RuntimeError> {
        self.open_run_as(req, None)
    }

    /// Opens a run for `principal` (the credential asking, over HTTP): an agent's credential
    /// fixes the agent and bounds the scope and the clearance (refused beyond them; a
    /// clearance a contract gives is lowered to the credential's), and the run's metadata
    /// records the credential that opened it (`opened_by`).
    pub fn open_run_as(
        &self,
        req: OpenRun,
        principal: Option<&Principal>,
    ) -> Result<RunView, RuntimeError> {
        if let Some(key) = RESERVED_METADATA
            .iter()
            .find(|k| req.metadata.contains_key(**k))
        {
            return Err(RuntimeError::Invalid(format!(
                "`metadata.{key}` is written by the gateway itself\n  help: attach envelopes with `envelopes`, take on a contract with `handoff`, and leave `{key}` out of `metadata`"
            )));
        }
        if let Some(p) = principal {
            p.open_limits(
                &req.agent,
                &req.scope,
                req.clearance.unwrap_or(Level::Public),
            )?;
            if p.is_agent() && !req.envelopes.is_empty() {
                return Err(crate::auth::Refusal::AttachesEnvelopes {
                    envelopes: req.envelopes.join(", "),
                }
                .into());
            }
        }
        let id = match req.id {
            Some(id) if !valid_id(&id) => {
                return Err(RuntimeError::Invalid(format!(
                    "run id `{id}` is not valid: use letters, digits and `-_.:`, at most 128"
                )));
            }
            Some(id) => id,
            None => format!("run-{}", random_hex(8)),
        };
        for (what, value) in [
            ("agent", &req.agent),
            ("task", &req.task),
            ("scope", &req.scope),
        ] {
            if value.trim().is_empty() {
                return Err(RuntimeError::Invalid(format!("`{what}` must not be empty")));
            }
            check_name_length(what, value)?;
        }
        if let Some(Value::String(user)) = req.metadata.get("user") {
            check_name_length("metadata.user", user)?;
        }
        let set = self.envelopes()?;
        for env in &req.envelopes {
            match set.get(env) {
                Some(_) => {}
                None => {
                    return Err(RuntimeError::NotFound(format!(
                        "no stored envelope `{env}`\n  help: store it first (POST /v2/policies/envelopes or `tollgate policy store`)"
                    )));
                }
            }
        }
        if id.starts_with("handoff:") {
            return Err(RuntimeError::Invalid(format!(
                "run id `{id}` is reserved: `handoff:` names a run a contract's consumer has not opened yet\n  help: choose another id"
            )));
        }
        let mut metadata = req.metadata;
        let mut attached = req.envelopes.clone();
        let mut clearance = req.clearance;
        let mut parent_run = req.parent_run;
        let mut under = None;
        if let Some(contract) = &req.handoff {
            let u = self.under_contract(contract, &req.agent, &req.scope, req.clearance)?;
            if parent_run.as_ref().is_some_and(|p| *p != u.parent) {
                return Err(RuntimeError::Invalid(format!(
                    "a run opened under contract `{contract}` is a child of its producer's run `{}`\n  help: leave `parent_run` out",
                    u.parent
                )));
            }
            for e in &u.envelopes {
                if !attached.contains(e) {
                    attached.push(e.clone());
                }
            }
            clearance = Some(u.clearance);
            parent_run = Some(u.parent.clone());
            metadata.insert(HANDOFF_KEY.into(), Value::String(contract.clone()));
            under = Some(u);
        }
        if let Some(p) = principal {
            if let (Some(max), Some(c)) = (p.max_clearance, clearance) {
                clearance = Some(c.min(max));
            }
            metadata.insert(OPENED_BY.into(), Value::String(p.id.clone()));
        }
        if !attached.is_empty() {
            metadata.insert(
                ATTACHED_ENVELOPES.into(),
                Value::Array(attached.into_iter().map(Value::String).collect()),
            );
        }
        let mut header = RunHeader {
            id: id.clone(),
            agent: req.agent,
            task: req.task,
            scope: req.scope,
            clearance: clearance.unwrap_or(Level::Public).as_str().to_string(),
            status: "running".into(),
            started_at: self.now_rfc3339(),
            finished_at: None,
            parent_run,
            envelopes: Vec::new(),
            metadata: Value::Object(metadata),
        };
        // The header records every version that governs the run: attached here, or through
        // its agent or task.
        let seen = self.policy_generation();
        let mut engine = std::sync::Arc::new(self.build_engine(&header)?);
        header.envelopes = engine.governing(&id);
        // A governing envelope's `max_clearance` caps the run's (the packs cap what it is
        // cleared for whatever the header says; the header says it too).
        let cap = header
            .envelopes
            .iter()
            .filter_map(|label| set.get(label.split_once('@').map_or(label.as_str(), |(i, _)| i)))
            .filter_map(|e| e.max_clearance)
            .min();
        if let Some(cap) = cap
            && cap < clearance.unwrap_or(Level::Public)
        {
            header.clearance = cap.as_str().to_string();
            engine = std::sync::Arc::new(self.build_engine(&header)?);
            header.envelopes = engine.governing(&id);
        }
        // Under a contract: judged as the pack judged the planned run, then the contract is
        // claimed before the run opens (so one contract opens one run), and given back if
        // the open fails.
        let claimed = match (&under, &req.handoff) {
            (Some(u), Some(contract)) => {
                self.check_under_contract(u, &header)?;
                Some((contract.clone(), self.claim_contract(contract, &id)?))
            }
            _ => None,
        };
        if let Err(e) = self
            .recorder()
            .open_run_governed(&header, engine.versions().to_vec())
        {
            if let Some((contract, state)) = claimed {
                self.release_contract(&contract, &id, state);
            }
            return Err(e.into());
        }
        engine.mark_linked();
        self.keep_engine(&id, seen, engine);
        self.run_view(&id)
    }

    /// A run with its summary and governing envelopes.
    pub fn run_view(&self, run: &str) -> Result<RunView, RuntimeError> {
        let header = self.recorder().header(run)?;
        let summary = self.recorder().summary(run)?;
        let governing = self.engine_for(run)?.governing(run);
        Ok(RunView {
            run: header,
            summary,
            governing,
        })
    }

    /// Adds a step; returns its index.
    pub fn add_step(
        &self,
        run: &str,
        name: &str,
        agent: Option<&str>,
    ) -> Result<u32, RuntimeError> {
        let header = self.running(run)?;
        let agent = agent.unwrap_or(&header.agent);
        Ok(self.recorder().add_step(run, name, agent)?)
    }

    /// The step events go to when the caller names none: the last, or a first one.
    pub(crate) fn current_step(&self, run: &str, header: &RunHeader) -> Result<u32, RuntimeError> {
        let key = run.to_string();
        let steps: u32 = self.store().read(move |c| {
            c.prepare_cached("SELECT COUNT(*) FROM steps WHERE run_id = ?1")?
                .query_row([&key], |r| r.get(0))
        })?;
        if steps == 0 {
            return Ok(self.recorder().add_step(run, "main", &header.agent)?);
        }
        Ok(steps - 1)
    }

    /// Appends agent-reported events (notes, tool results, outputs, errors, handoffs). The
    /// kinds the gateway records itself (compiles, model calls, decisions, approvals) cannot
    /// be appended from outside.
    pub fn append_events(
        &self,
        run: &str,
        events: Vec<EventInput>,
    ) -> Result<Vec<Appended>, RuntimeError> {
        let header = self.running(run)?;
        let mut batch = Vec::with_capacity(events.len());
        let mut default_step = None;
        for e in events {
            let kind = EventKind::parse(&e.kind).ok_or_else(|| {
                RuntimeError::Invalid(format!(
                    "unknown event kind `{}`\n  help: agents append `note`, `tool_result`, `output`, `error`, `handoff` or `context_offered`",
                    e.kind
                ))
            })?;
            if matches!(
                kind,
                EventKind::Compile
                    | EventKind::ModelCall
                    | EventKind::ModelOutput
                    | EventKind::Decision
                    | EventKind::Approval
                    | EventKind::ToolCall
            ) {
                return Err(RuntimeError::Invalid(format!(
                    "`{}` events are recorded by the gateway itself\n  help: use the compile, tool-call and chat routes, which decide and record",
                    e.kind
                )));
            }
            if kind == EventKind::Handoff
                && e.payload
                    .get(crate::recorder::events::HANDOFF_STAGE)
                    .is_some()
            {
                return Err(RuntimeError::Invalid(
                    "a `handoff` event with a `stage` is the handoff module's record\n  help: post contracts to /v2/handoffs/contracts, or leave `stage` out of your own handoff note".into(),
                ));
            }
            let step = match e.step {
                Some(s) => s,
                None => match default_step {
                    Some(s) => s,
                    None => {
                        let s = self.current_step(run, &header)?;
                        default_step = Some(s);
                        s
                    }
                },
            };
            batch.push((step, kind, self.now_rfc3339(), e.payload));
        }
        Ok(self.recorder().append_many(run, batch)?)
    }

    /// Finishes a run. The deliveries of the contracts it is the consumer of are checked
    /// first, so their violation alerts are recorded in it.
    pub fn finish_run(&self, run: &str, status: &str) -> Result<RunView, RuntimeError> {
        self.running(run)?;
        self.check_deliveries_of(run)?;
        self.recorder()
            .finish_run(run, status, &self.now_rfc3339())?;
        self.forget_engine(run);
        self.run_view(run)
    }

    /// The header of a run that is still running.
    pub(crate) fn running(&self, run: &str) -> Result<RunHeader, RuntimeError> {
        let header = self.recorder().header(run).map_err(|e| match e {
            RecorderError::UnknownRun(r) => RuntimeError::NotFound(format!("no run `{r}`")),
            other => other.into(),
        })?;
        if header.status != "running" {
            return Err(RuntimeError::Conflict(finished_run(run, &header.status)));
        }
        Ok(header)
    }
}

/// `n` random bytes as hex (ids only; never in the engine).
pub(crate) fn random_hex(n: usize) -> String {
    let mut bytes = vec![0u8; n];
    if getrandom::fill(&mut bytes).is_err() {
        // Ids must still be unique: fall back on the time and a counter.
        static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let c = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        return blake3::hash(format!("{t}-{c}").as_bytes())
            .to_hex()
            .chars()
            .take(n * 2)
            .collect();
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
