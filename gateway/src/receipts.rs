//! Receipts rendered on read. A tool decision is recorded without its proof and why-not
//! (`PolicyEngine::decide_receipt`: the effect, the deciding rules, the envelope versions, the
//! input hash, and the program to render under); reading it — the decisions API, the receipt
//! page, a tool call asked with `explain=full` — renders them by deciding the recorded request
//! again under the recorded versions and program, on the run's recorded subject. The engine
//! checks that the input hash, the effect and the rules come out as recorded, so what is shown
//! is byte for byte what deciding wrote before receipts were rendered on read (the equality is
//! tested over every fixture run and every AgentGW-Bench decision).
//!
//! What rendering needs, the store keeps: every envelope version a run's decisions used is
//! linked to the run in the write that records the first decision under it, and every
//! program a receipt names is kept in `rule_programs` (written when a runtime opens the
//! store). A receipt whose versions or program are gone, or whose request cannot be rebuilt,
//! says so ([`ReceiptError`]); it is never rendered against other rules. Decisions recorded
//! with their proof (before this, and every kind the gateway still records in full) read as
//! they are.

use std::collections::HashMap;
use std::sync::Arc;

use tollgate_rules::decide::{
    EnvelopeDecision, PolicyEngine, PolicyRequest, RenderError, RequestKind,
};
use tollgate_rules::engine::{FactSet, Limits, Program};
use tollgate_rules::envelope::load_envelopes;
use tollgate_rules::packs::{builtin_files, program_from_files, program_hash, program_hash_of};

use crate::clock::now_rfc3339;
use crate::recorder::events::{DecisionEvent, ToolCallEvent};
use crate::recorder::format::{EventKind, RunFile};
use crate::run_policy::{
    RecordedVersions, RunPolicy, recorded_tool_request, refused_model_call, run_facts, sorted,
};
use crate::store::{Connection, OptionalExtension, Store, StoreError, params};

/// Keeps the built-in program of this build under its hash (once: a later call finds it).
pub fn keep_program_in(c: &Connection) -> Result<(), StoreError> {
    let files = serde_json::to_string(&builtin_files())
        .map_err(|e| StoreError::Invalid(format!("cannot write the program's files: {e}")))?;
    c.execute(
        "INSERT INTO rule_programs (hash, files, created_at) VALUES (?1, ?2, ?3)
         ON CONFLICT DO NOTHING",
        params![program_hash(), files, now_rfc3339()],
    )?;
    Ok(())
}

/// The files of a kept program, by hash.
pub fn stored_program(
    store: &Store,
    hash: &str,
) -> Result<Option<Vec<(String, String)>>, StoreError> {
    let key = hash.to_string();
    let text: Option<String> = store.read(move |c| {
        c.query_row(
            "SELECT files FROM rule_programs WHERE hash = ?1",
            params![key],
            |r| r.get(0),
        )
        .optional()
    })?;
    text.map(|t| {
        serde_json::from_str(&t).map_err(|e| {
            StoreError::Invalid(format!("the stored program {hash} does not read: {e}"))
        })
    })
    .transpose()
}

/// Why a receipt's proof and why-not could not be rendered. The receipt is then shown as
/// recorded, with this said beside it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReceiptError {
    /// The envelope versions it names are not all recorded with the run, or no longer load.
    #[error("cannot rebuild the envelopes it was decided under: {0}")]
    Versions(String),
    /// The program it names is not kept by this store.
    #[error(
        "it was decided under program {0}, which this store does not keep\n  help: read it with the store it was recorded in, or with the release that decided it"
    )]
    Program(String),
    /// The request it decided cannot be rebuilt from the run's events.
    #[error("cannot rebuild the request it decided: {0}")]
    Request(String),
    /// The engine rebuilt is not the one that decided.
    #[error(transparent)]
    Render(#[from] RenderError),
    /// The store could not be read.
    #[error("{0}")]
    Store(String),
}

/// Renders the receipts of one run: one engine per distinct set of envelope versions and
/// program its receipts name, built when first needed.
pub struct Renderer<'a> {
    file: &'a RunFile,
    versions: RecordedVersions<'a>,
    subject: Result<FactSet, String>,
    store: Option<&'a Store>,
    /// The run's live engine, when the process keeps one: used for receipts decided under its
    /// versions (no engine to build).
    live: Option<Arc<RunPolicy>>,
    engines: HashMap<(Vec<String>, String), Result<Arc<PolicyEngine>, ReceiptError>>,
    programs: HashMap<String, Result<Program, ReceiptError>>,
    /// The run's `tool_call` events by call id, in order (read once: a run's decisions are
    /// rendered together, and each looks up its call).
    calls: Option<HashMap<String, Vec<(u64, ToolCallEvent)>>>,
}

impl<'a> Renderer<'a> {
    /// A renderer for `file`'s receipts; `store` is where programs other than this build's
    /// are looked up.
    pub fn new(file: &'a RunFile, store: Option<&'a Store>) -> Renderer<'a> {
        Renderer {
            file,
            versions: RecordedVersions::new(file),
            subject: run_facts(&file.run),
            store,
            live: None,
            engines: HashMap::new(),
            programs: HashMap::new(),
            calls: None,
        }
    }

    /// Uses the run's live engine for the receipts decided under its versions.
    #[must_use]
    pub fn with_live(mut self, live: Option<Arc<RunPolicy>>) -> Renderer<'a> {
        self.live = live;
        self
    }

    /// The decision event `seq` records, with its proof and why-not.
    pub fn render(
        &mut self,
        seq: u64,
        event: &DecisionEvent,
    ) -> Result<EnvelopeDecision, ReceiptError> {
        let recorded = &event.decision;
        let Some(on_read) = &recorded.on_read else {
            return Ok(recorded.clone());
        };
        let request = self.request(seq, event)?;
        let labels = sorted(recorded.envelope_versions.iter().map(String::as_str));
        if let Some(live) = &self.live
            && on_read.program == live.program_hash()
            && live.governing(&self.file.run.id) == labels
        {
            return Ok(live.render(&request, recorded)?);
        }
        let engine = self.engine(labels, &on_read.program)?;
        Ok(engine.render(&request, recorded)?)
    }

    /// The request a recorded decision decided: a tool call's from its `tool_call` event (the
    /// last one with its call id before it), a refused model call's from the decision itself.
    fn request(&mut self, seq: u64, event: &DecisionEvent) -> Result<PolicyRequest, ReceiptError> {
        let run = self.file.run.id.as_str();
        match event.decision.kind {
            RequestKind::Tool => {
                let call_id = event.call_id.as_deref().ok_or_else(|| {
                    ReceiptError::Request("the decision names no tool call".into())
                })?;
                let file = self.file;
                let calls = self.calls.get_or_insert_with(|| {
                    let mut by_id: HashMap<String, Vec<(u64, ToolCallEvent)>> = HashMap::new();
                    for e in &file.events {
                        if e.event_kind() == Some(EventKind::ToolCall)
                            && let Some(c) = e.read::<ToolCallEvent>()
                        {
                            by_id.entry(c.call_id.clone()).or_default().push((e.seq, c));
                        }
                    }
                    by_id
                });
                let call = calls
                    .get(call_id)
                    .and_then(|list| list.iter().rev().find(|(at, _)| *at < seq))
                    .map(|(_, c)| c)
                    .ok_or_else(|| {
                        ReceiptError::Request(format!(
                            "no `tool_call` event of call {call_id} before it"
                        ))
                    })?;
                Ok(recorded_tool_request(run, call))
            }
            RequestKind::Model => {
                let call = refused_model_call(event).ok_or_else(|| {
                    ReceiptError::Request("the decision records no refused model call".into())
                })?;
                Ok(PolicyRequest::Model {
                    run: run.to_string(),
                    call: call.clone(),
                })
            }
            other => Err(ReceiptError::Request(format!(
                "a {} decision is recorded with its proof, not rendered on read",
                other.as_str()
            ))),
        }
    }

    /// The engine of a set of versions under a program.
    fn engine(
        &mut self,
        labels: Vec<String>,
        program: &str,
    ) -> Result<Arc<PolicyEngine>, ReceiptError> {
        let key = (labels, program.to_string());
        if let Some(built) = self.engines.get(&key) {
            return built.clone();
        }
        let built = self.build(&key.0, program);
        self.engines.insert(key, built.clone());
        built
    }

    fn build(
        &mut self,
        labels: &[String],
        program: &str,
    ) -> Result<Arc<PolicyEngine>, ReceiptError> {
        let sources = self
            .versions
            .sources(labels)
            .map_err(ReceiptError::Versions)?;
        let set = load_envelopes(&sources).map_err(|e| ReceiptError::Versions(e.render()))?;
        let subject = self.subject.clone().map_err(ReceiptError::Versions)?;
        let engine = if program == program_hash() {
            PolicyEngine::new(&set, &subject)
        } else {
            let compiled = self.program(program)?;
            PolicyEngine::with_program(&compiled, program, &set, &subject, Limits::default())
        };
        engine
            .map(Arc::new)
            .map_err(|e| ReceiptError::Versions(e.to_string()))
    }

    /// A program other than this build's, compiled from the files the store keeps.
    fn program(&mut self, hash: &str) -> Result<Program, ReceiptError> {
        if let Some(p) = self.programs.get(hash) {
            return p.clone();
        }
        let compiled = (|| {
            let store = self
                .store
                .ok_or_else(|| ReceiptError::Program(hash.into()))?;
            let files = stored_program(store, hash)
                .map_err(|e| ReceiptError::Store(e.to_string()))?
                .ok_or_else(|| ReceiptError::Program(hash.into()))?;
            if program_hash_of(&files) != hash {
                return Err(ReceiptError::Store(format!(
                    "the program stored as {hash} does not hash to it"
                )));
            }
            program_from_files(&files).map_err(|d| {
                ReceiptError::Store(format!(
                    "the program stored as {hash} no longer compiles: {}",
                    d.first().map_or(String::new(), |d| d.message.clone())
                ))
            })
        })();
        self.programs.insert(hash.to_string(), compiled.clone());
        compiled
    }
}

#[cfg(test)]
mod tests;
