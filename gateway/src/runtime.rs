//! The agent runtime: what the HTTP gateway (and the CLI, where it acts locally) does for an
//! agent — open runs, record steps and events, compile context, decide tool calls and model
//! calls under the envelopes in force, keep approvals and rate-limit counters — on top of the
//! store, the recorder, the compiler, the providers and the policy engine.
//!
//! One `Runtime` per process, shared by every request. The envelope set in force is the latest
//! stored version of every envelope (`policy::current_set`); a run opens on the versions of it
//! that govern the run and stays pinned to them until an admin re-pins it (`pins`). A policy
//! engine is materialised per run (its pinned versions plus its subject facts) and cached. The
//! versions a run's decisions are made under are linked to the run when the first such
//! decision is recorded ([`RunPolicy`]).

pub mod approval_waits;
mod chat;
mod compile;
mod decisions;
mod handoffs;
mod implicit;
mod listing;
mod pins;
mod policies;
mod runs;
mod tools;

pub use handoffs::HANDOFF_KEY;

/// The HTTP header naming the run a request belongs to: a model call's (the OpenAI-compatible
/// proxy), or the run an MCP session joins.
pub const RUN_HEADER: &str = "x-tollgate-run";
pub use implicit::{DEFAULT_CLIENT, IMPLICIT_TASK, client_of};

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use tollgate_rules::engine::functions::PatternCache;
use tollgate_rules::envelope::EnvelopeSet;

use crate::clock::{Clock, SystemClock};
use crate::policy::{PolicyStoreError, current_set};
use crate::providers::Provider;
use crate::recorder::format::RunHeader;
use crate::recorder::write::{
    Appended, NewEvent, append_in, into_recorder, link_envelope_versions, running_in,
};
use crate::recorder::{Recorder, RecorderError};
use crate::run_policy::RunPolicy;
use crate::store::{Changes, Store, StoreError, changes};

/// What can go wrong in the runtime, before it is mapped to an HTTP status.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The recorder refused or failed.
    #[error(transparent)]
    Recorder(#[from] RecorderError),
    /// Envelope versions could not be read or stored.
    #[error(transparent)]
    Policy(#[from] PolicyStoreError),
    /// Envelopes given with the request do not load (diagnostics with line and column).
    #[error("{}", .0.render())]
    Envelopes(tollgate_rules::envelope::EnvelopeErrors),
    /// The request is not acceptable (a message for the caller).
    #[error("{0}")]
    Invalid(String),
    /// Something named does not exist.
    #[error("{0}")]
    NotFound(String),
    /// The request conflicts with what is stored (an approval used twice, a finished run).
    #[error("{0}")]
    Conflict(String),
    /// Policy refused the request (a model call, a message); the decision says why.
    #[error("{message}")]
    Denied {
        /// What was refused.
        message: String,
        /// The decision.
        decision: Box<tollgate_rules::decide::EnvelopeDecision>,
        /// Where the refusal is recorded: `{run, seq, hash}` of its decision event.
        receipt: Option<serde_json::Value>,
    },
    /// The caller may not do this (an approver the rule does not name).
    #[error("{0}")]
    Forbidden(String),
    /// The caller's credential does not reach this (another agent's run, a scope or a
    /// clearance beyond it).
    #[error(transparent)]
    Refused(#[from] crate::auth::Refusal),
    /// The model provider failed.
    #[error(transparent)]
    Upstream(#[from] crate::providers::ProviderError),
    /// Policy could not be evaluated (fail closed: the caller denies).
    #[error("policy evaluation failed: {0}")]
    Evaluation(String),
    /// A tool call's write found that a token was revoked or deleted after the caller's was
    /// verified (`ToolCallRequest::credentials_seen`): nothing was recorded; the caller's token
    /// must be read again (the store's count of credential changes as the write read it).
    #[error(
        "a credential was revoked while this call was decided; nothing was recorded\n  help: retry the call"
    )]
    CredentialsChanged(i64),
}

impl From<crate::memory::MemoryError> for RuntimeError {
    fn from(e: crate::memory::MemoryError) -> Self {
        use crate::memory::MemoryError;
        match e {
            MemoryError::Store(s) => RuntimeError::Store(s),
            MemoryError::Recorder(r) => RuntimeError::Recorder(r),
            MemoryError::NotFound(id) => RuntimeError::NotFound(format!("no memory `{id}`")),
            MemoryError::Invalid(m) => RuntimeError::Invalid(m),
            MemoryError::Conflict(m) => RuntimeError::Conflict(m),
        }
    }
}

/// The shared runtime.
pub struct Runtime {
    store: Store,
    recorder: Recorder,
    provider: Arc<dyn Provider>,
    envelopes: RwLock<Arc<EnvelopeSet>>,
    /// Each run's engine, with the count of policy changes (`policy_seen`) read before it was
    /// built: a write that finds the store's count moved past it records nothing
    /// (`tools.rs`, `RecordError::PolicyChanged`).
    engines: Mutex<HashMap<String, (i64, Arc<RunPolicy>)>>,
    /// The store's count of policy changes the envelope set and the engines were loaded at
    /// (`changes/policy`, raised by triggers whenever a version is stored or a run re-pinned,
    /// here or through another gateway on the same database).
    policy_seen: AtomicI64,
    clock: Arc<dyn Clock>,
    /// Compiled glob patterns of rate-limited rules, shared by every call.
    patterns: PatternCache,
    /// The long polls on approvals, woken when one is decided here or elsewhere.
    pub approval_waits: approval_waits::ApprovalWaits,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("store", &self.store)
            .field("provider", &self.provider.name())
            .finish()
    }
}

impl Runtime {
    /// A runtime over `store`, calling models through `provider`, with the stored envelope
    /// versions in force.
    pub fn new(store: Store, provider: Arc<dyn Provider>) -> Result<Runtime, RuntimeError> {
        Runtime::with_clock(store, provider, Arc::new(SystemClock))
    }

    /// Like [`Runtime::new`], reading time from `clock` (approval expiries, rate-limit
    /// windows, event times).
    pub fn with_clock(
        store: Store,
        provider: Arc<dyn Provider>,
        clock: Arc<dyn Clock>,
    ) -> Result<Runtime, RuntimeError> {
        let generation = changes(&store, Changes::Policy)?;
        let envelopes = current_set(&store)?;
        // The program this build decides under, kept for its receipts to be rendered when read
        // by a later release.
        store.transact(crate::receipts::keep_program_in)?;
        Ok(Runtime {
            recorder: Recorder::new(store.clone()),
            store,
            provider,
            envelopes: RwLock::new(Arc::new(envelopes)),
            engines: Mutex::new(HashMap::new()),
            policy_seen: AtomicI64::new(generation),
            clock,
            patterns: PatternCache::default(),
            approval_waits: approval_waits::ApprovalWaits::default(),
        })
    }

    /// The store.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The recorder.
    pub fn recorder(&self) -> &Recorder {
        &self.recorder
    }

    /// The model provider.
    pub fn provider(&self) -> &Arc<dyn Provider> {
        &self.provider
    }

    /// Milliseconds since the epoch, from the runtime's clock.
    pub fn now_ms(&self) -> i64 {
        self.clock.now_ms()
    }

    /// The runtime's clock as RFC 3339 (event times).
    pub fn now_rfc3339(&self) -> String {
        crate::clock::rfc3339(u64::try_from(self.now_ms() / 1000).unwrap_or(0))
    }

    /// The envelope set in force, as the store holds it now (see [`Runtime::fresh_policy`]).
    pub fn envelopes(&self) -> Result<Arc<EnvelopeSet>, RuntimeError> {
        self.fresh_policy()?;
        Ok(self
            .envelopes
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone())
    }

    /// Brings what this process keeps of policy up to date with the store before a decision:
    /// one read of the store's count of policy changes, and when it moved (an envelope version
    /// stored, a run re-pinned — by this gateway, another on the same database, or a command),
    /// the envelope set in force loaded again and every cached engine dropped. So several
    /// gateways decide alike from their next decision on (issue 38).
    pub fn fresh_policy(&self) -> Result<(), RuntimeError> {
        let now = changes(&self.store, Changes::Policy)?;
        if now != self.policy_seen.load(Ordering::Acquire) {
            self.load_policy(now)?;
        }
        Ok(())
    }

    /// Loads the envelope set in force and drops the cached engines, noting the count read
    /// before the load (so a change committed meanwhile is loaded again next time).
    pub(crate) fn load_policy(&self, generation: i64) -> Result<(), RuntimeError> {
        let set = current_set(&self.store)?;
        *self
            .envelopes
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Arc::new(set);
        self.engines
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clear();
        self.policy_seen.store(generation, Ordering::Release);
        Ok(())
    }

    /// Re-reads the envelope set in force from the store (after envelopes were stored). Runs
    /// opened from now on open under it; the engines are built again from the versions their
    /// runs are pinned to.
    pub fn reload_envelopes(&self) -> Result<(), RuntimeError> {
        let now = changes(&self.store, Changes::Policy)?;
        self.load_policy(now)
    }

    /// The policy engine for a recorded run: the versions it is pinned to plus the run's
    /// subject facts, materialised once and cached.
    pub fn engine_for(&self, run: &str) -> Result<Arc<RunPolicy>, RuntimeError> {
        self.fresh_policy()?;
        if let Some((_, engine)) = self.cached_engine(run) {
            return Ok(engine);
        }
        let seen = self.policy_generation();
        let header = self.recorder.header(run)?;
        let engine = Arc::new(self.pinned_engine(&header)?);
        self.keep_engine(run, seen, engine.clone());
        Ok(engine)
    }

    /// The count of policy changes this process has loaded (see [`Runtime::fresh_policy`]).
    /// Read before building an engine, it tags the engine: never later than what the engine
    /// was built from.
    fn policy_generation(&self) -> i64 {
        self.policy_seen.load(Ordering::Acquire)
    }
}

pub use chat::{AllowedChat, ChatOutcome};
pub use compile::CompileAnswer;
pub use decisions::{DecisionFilter, RecordedDecision};
pub use pins::Repinned;
pub(crate) use runs::random_hex;
pub use runs::{EventInput, LONGEST_NAME, OPENED_BY, OpenRun, RunView};
pub use tools::{ApprovalView, Receipt, ToolCallAnswer, ToolCallRequest};

impl Runtime {
    /// Materialises the envelopes in force over a run's subject facts (the run need not be
    /// stored yet), noting the stored versions that govern the run in it: the engine a run
    /// opens, or is re-pinned, under.
    pub(crate) fn build_engine(&self, header: &RunHeader) -> Result<RunPolicy, RuntimeError> {
        pins::policy_for(self.envelopes()?, header)
    }

    /// Appends events recording decisions made under `policy`, linking the envelope versions
    /// it was built from to the run in the same write: no recorded decision is ever without
    /// the links replay needs to rebuild its policy.
    pub(crate) fn append_decided(
        &self,
        run: &str,
        policy: &RunPolicy,
        events: Vec<NewEvent>,
    ) -> Result<Vec<Appended>, RuntimeError> {
        self.append_decided_then(run, policy, events, |_, _| Ok(()))
    }

    /// [`Runtime::append_decided`], then `then` in the same write (rows that refer to the
    /// appended events, such as a compile's memory links).
    pub(crate) fn append_decided_then<F>(
        &self,
        run: &str,
        policy: &RunPolicy,
        events: Vec<NewEvent>,
        then: F,
    ) -> Result<Vec<Appended>, RuntimeError>
    where
        F: FnOnce(&crate::store::Connection, &[Appended]) -> Result<(), StoreError>
            + Send
            + 'static,
    {
        let (key, links) = (run.to_string(), policy.unlinked());
        let appended = self.store.transact(move |c| {
            // Decisions made under a cached engine read nothing before: the run may have
            // finished meanwhile, in this process or another.
            running_in(c, &key).map_err(|e| match e {
                StoreError::Invalid(m) => RuntimeError::Conflict(m),
                other => RuntimeError::from(into_recorder(other)),
            })?;
            let recorded = |e: StoreError| RuntimeError::from(into_recorder(e));
            if let Some(links) = &links {
                link_envelope_versions(c, &key, links).map_err(recorded)?;
            }
            let appended = append_in(c, &key, events).map_err(recorded)?;
            then(c, &appended).map_err(recorded)?;
            Ok::<_, RuntimeError>(appended)
        })?;
        policy.mark_linked();
        Ok(appended)
    }

    /// Whether a run's engine is built and cached (its next decision needs no store read).
    pub fn engine_cached(&self, run: &str) -> bool {
        self.engines
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .contains_key(run)
    }

    /// A running run's header and engine. A run whose engine is cached is not read at all: its
    /// subject cannot change, and the write recording what is decided checks that the run is
    /// still running (`recorder::write::running_step_in`), so a run finished meanwhile (by
    /// this process or another) records nothing more.
    pub(crate) fn running_engine(
        &self,
        run: &str,
    ) -> Result<(RunHeader, Arc<RunPolicy>), RuntimeError> {
        // A re-pin through another gateway drops the cached engines (a store read, so the
        // decision is made under the versions the run is pinned to now).
        self.fresh_policy()?;
        let (header, engine, _) = self.running_engine_as_kept(run)?;
        Ok((header, engine))
    }

    /// Like [`Runtime::running_engine`] without reading the store's count of policy changes
    /// first: the engine as this process keeps it, with the count it was built at. For a
    /// decision whose write checks that count (`running_step_in`) and is decided again when
    /// it moved: one store read less per decision.
    pub(crate) fn running_engine_as_kept(
        &self,
        run: &str,
    ) -> Result<(RunHeader, Arc<RunPolicy>, i64), RuntimeError> {
        if let Some((seen, engine)) = self.cached_engine(run) {
            return Ok((engine.header().clone(), engine, seen));
        }
        let seen = self.policy_generation();
        let header = self.running(run)?;
        let engine = Arc::new(self.pinned_engine(&header)?);
        self.keep_engine(run, seen, engine.clone());
        Ok((header, engine, seen))
    }

    /// The agent and scope of a run, for deciding whether a credential reaches it: from the
    /// engine cache when the run is cached (no store read), else from its header.
    pub fn run_owner(&self, run: &str) -> Result<(String, String), RuntimeError> {
        if let Some((_, engine)) = self.cached_engine(run) {
            let h = engine.header();
            return Ok((h.agent.clone(), h.scope.clone()));
        }
        let header = self.recorder.header(run).map_err(|e| match e {
            RecorderError::UnknownRun(r) => RuntimeError::NotFound(format!("no run `{r}`")),
            other => other.into(),
        })?;
        Ok((header.agent, header.scope))
    }

    /// A run's cached engine, if it is cached.
    fn cached_engine(&self, run: &str) -> Option<(i64, Arc<RunPolicy>)> {
        self.engines
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(run)
            .cloned()
    }

    /// Drops a run's cached engine (a finished run needs it no more).
    pub(crate) fn forget_engine(&self, run: &str) {
        self.engines
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(run);
    }

    /// Caches an engine built for a run, with the count of policy changes read before it was
    /// built ([`Runtime::policy_generation`]).
    pub(crate) fn keep_engine(&self, run: &str, seen: i64, engine: Arc<RunPolicy>) {
        self.engines
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(run.to_string(), (seen, engine));
    }
}

#[cfg(test)]
pub(crate) mod tests;
