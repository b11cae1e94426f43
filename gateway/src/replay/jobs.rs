//! Counterfactual replay over the store: scenarios created (checked against their run) and
//! executed, batches created and run as a `replay.batch` job — the baseline replayed once,
//! the scenarios in parallel threads, each result stored as it finishes, so a retried job
//! resumes where it stopped.

use std::sync::Mutex;

use serde::Serialize;
use serde_json::{Value, json};

use super::ReplayError;
use super::batch::{BatchSpec, RuleAttribution, attribution};
use super::result::{Baseline, ReplayResult, ResultSummary, execute};
use super::scenario::{ModelSource, ScenarioError, ScenarioSpec, check, check_in};
use super::store::{
    self, ResultFilter, StoredBatch, StoredScenario, save_batch, save_result, save_scenario,
    set_batch_job,
};
use crate::evaluators::Judge;
use crate::jobs::{EnqueueOptions, JobContext, JobFailure, JobId, JobQueue, JobRecord};
use crate::providers::Provider;
use crate::recorder::Recorder;
use crate::recorder::format::RunFile;
use crate::store::Store;

/// The job kind that runs a batch: payload `{"batch": "bat-..."}`.
pub const BATCH_JOB: &str = "replay.batch";

fn run_file(store: &Store, run: &str) -> Result<RunFile, ReplayError> {
    Ok(Recorder::new(store.clone()).export(run)?)
}

/// Checks `spec` against its run and stores it; whether it was new.
pub fn create_scenario(
    store: &Store,
    spec: ScenarioSpec,
    by: &str,
    at: &str,
) -> Result<(StoredScenario, bool), ReplayError> {
    let file = run_file(store, &spec.run)?;
    check(&spec, &file)?;
    for a in &spec.rubric {
        a.check().map_err(|e| ScenarioError {
            mutation: None,
            message: format!("a rubric assertion does not build: {e}"),
        })?;
    }
    let (by, at) = (by.to_string(), at.to_string());
    Ok(store.write(move |c| save_scenario(c, &spec, &by, &at))?)
}

/// The provider a live scenario is answered by: the environment's.
pub fn live_provider(spec_model: ModelSource) -> Result<Option<Box<dyn Provider>>, ReplayError> {
    match spec_model {
        ModelSource::Recorded => Ok(None),
        ModelSource::Live => crate::providers::provider_from_env()
            .map(Some)
            .map_err(|e| {
                ReplayError::Scenario(ScenarioError {
                    mutation: None,
                    message: format!(
                        "the scenario asks for a live model, but none is configured: {e}"
                    ),
                })
            }),
    }
}

/// The LLM judge the environment turns on, for rubrics' `llm_judge` assertions.
fn judge_from_env() -> Result<Option<Judge>, ReplayError> {
    Judge::from_env().map_err(|e| {
        ReplayError::Scenario(ScenarioError {
            mutation: None,
            message: e.to_string(),
        })
    })
}

/// Executes stored scenario `id` and stores its result.
pub fn execute_scenario(store: &Store, id: &str, at: &str) -> Result<ReplayResult, ReplayError> {
    let scenario = store::scenario(store, id)?
        .ok_or_else(|| ReplayError::NotFound(format!("no scenario `{id}`")))?;
    let file = run_file(store, &scenario.spec.run)?;
    let live = live_provider(scenario.spec.model)?;
    let judge = judge_from_env()?;
    let result = execute(&file, &scenario.spec, live.as_deref(), judge.as_ref())?;
    let at = at.to_string();
    Ok(store.write(move |c| save_result(c, result, &at))?)
}

/// Checks every scenario of `spec` against its run and stores the batch; with `enqueue`,
/// enqueues the `replay.batch` job that runs it (else the caller runs it: [`run_batch`]).
pub fn create_batch(
    store: &Store,
    spec: BatchSpec,
    by: &str,
    at: &str,
    enqueue: bool,
) -> Result<(StoredBatch, Option<JobRecord>), ReplayError> {
    let file = run_file(store, &spec.run)?;
    let inventory = super::scenario::RunInventory::of(&file, spec.step);
    let scenarios = spec.expand(&inventory)?;
    for (i, s) in scenarios.iter().enumerate() {
        check_in(s, &file.run.id, &inventory).map_err(|e| ScenarioError {
            mutation: e.mutation,
            message: format!("scenario {i} of the batch: {}", e.message),
        })?;
    }
    for a in &spec.rubric {
        a.check().map_err(|e| ScenarioError {
            mutation: None,
            message: format!("a rubric assertion does not build: {e}"),
        })?;
    }
    let (by, at) = (by.to_string(), at.to_string());
    let batch = store.write(move |c| save_batch(c, &spec, &scenarios, &by, &at))?;
    if !enqueue {
        return Ok((batch, None));
    }
    let queue = JobQueue::new(store.clone());
    let job = queue
        .enqueue(
            BATCH_JOB,
            json!({"batch": batch.id}),
            EnqueueOptions::default(),
        )
        .map_err(|e| ReplayError::Job(e.to_string()))?;
    let batch_id = batch.id.clone();
    store.write(move |c| set_batch_job(c, &batch_id, job.0))?;
    let record = queue
        .get(job)
        .map_err(|e| ReplayError::Job(e.to_string()))?;
    Ok((
        StoredBatch {
            job: Some(job.0),
            ..batch
        },
        Some(record),
    ))
}

/// How far a batch got.
#[derive(Debug, Clone, Serialize)]
pub struct BatchView {
    /// The batch.
    #[serde(flatten)]
    pub batch: StoredBatch,
    /// Its job, when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub job_state: Option<String>,
    /// Scenarios with a result.
    pub done: usize,
    /// Scenarios.
    pub total: usize,
    /// Results by label.
    pub labels: std::collections::BTreeMap<String, usize>,
    /// The results, newest first.
    pub results: Vec<ResultSummary>,
    /// The single-rule scenarios as an attribution of outcome changes to rules.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub attribution: Vec<RuleAttribution>,
}

/// Batch `id` with its results.
pub fn batch_view(store: &Store, id: &str) -> Result<BatchView, ReplayError> {
    let batch = store::batch(store, id)?
        .ok_or_else(|| ReplayError::NotFound(format!("no batch `{id}`")))?;
    // The job's state first, then the results: a job that has succeeded stored every result
    // before, so the results read after it are all there. (Read the other way round, a job
    // finishing between the two reads showed `succeeded` with a result missing.)
    let job_state = match batch.job {
        Some(job) => JobQueue::new(store.clone())
            .get(JobId(job))
            .ok()
            .map(|j| j.state.as_str().to_string()),
        None => None,
    };
    let results = store::results(
        store,
        &ResultFilter {
            batch: Some(batch.id.clone()),
            limit: super::batch::MAX_SCENARIOS,
            ..ResultFilter::default()
        },
    )?;
    let mut labels = std::collections::BTreeMap::new();
    for r in &results {
        *labels.entry(r.label.as_str().to_string()).or_insert(0) += 1;
    }
    Ok(BatchView {
        done: results.len(),
        total: batch.scenarios.len(),
        attribution: attribution(&results),
        batch,
        job_state,
        labels,
        results,
    })
}

/// Runs batch `id`: the baseline once, then every scenario without a result in this batch
/// yet, `threads` at a time; `progress(done, total)` after each.
pub fn run_batch(
    store: &Store,
    id: &str,
    threads: usize,
    at: &str,
    progress: &dyn Fn(u64, u64),
) -> Result<BatchView, ReplayError> {
    let batch = store::batch(store, id)?
        .ok_or_else(|| ReplayError::NotFound(format!("no batch `{id}`")))?;
    let file = run_file(store, &batch.spec.run)?;
    let baseline = Baseline::new(&file, batch.spec.step)?;
    let live = live_provider(batch.spec.model)?;
    let judge = judge_from_env()?;
    let judge = judge.as_ref();
    let done: std::collections::HashSet<String> = store::results(
        store,
        &ResultFilter {
            batch: Some(batch.id.clone()),
            limit: super::batch::MAX_SCENARIOS,
            ..ResultFilter::default()
        },
    )?
    .into_iter()
    .map(|r| r.scenario)
    .collect();
    let mut todo = Vec::new();
    for sid in &batch.scenarios {
        if done.contains(sid) {
            continue;
        }
        let scenario = store::scenario(store, sid)?
            .ok_or_else(|| ReplayError::NotFound(format!("no scenario `{sid}`")))?;
        todo.push(scenario.spec);
    }
    let total = batch.scenarios.len() as u64;
    let mut finished = done.len() as u64;
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let next = Mutex::new(todo.into_iter());
    let failure: Mutex<Option<ReplayError>> = Mutex::new(None);
    let threads = threads.clamp(1, 8);
    let (next, failure, baseline, live, batch_id) = (
        &next,
        &failure,
        &baseline,
        live.as_deref(),
        batch.id.as_str(),
    );
    std::thread::scope(|scope| {
        for _ in 0..threads {
            let tx = tx.clone();
            scope.spawn(move || {
                loop {
                    let spec = match next.lock() {
                        Ok(mut it) => it.next(),
                        Err(_) => None,
                    };
                    let Some(spec) = spec else { break };
                    if failure.lock().map(|f| f.is_some()).unwrap_or(true) {
                        break;
                    }
                    let outcome = baseline.run(&spec, live, judge).and_then(|mut r| {
                        r.batch = Some(batch_id.to_string());
                        let at = at.to_string();
                        Ok(store.write(move |c| save_result(c, r, &at))?)
                    });
                    match outcome {
                        Ok(_) => {
                            let _ = tx.send(());
                        }
                        Err(e) => {
                            if let Ok(mut f) = failure.lock() {
                                f.get_or_insert(e);
                            }
                            break;
                        }
                    }
                }
            });
        }
        drop(tx);
        // Progress is reported from this thread: the job's context is not shared.
        for () in rx.iter() {
            finished += 1;
            progress(finished, total);
        }
    });
    if let Some(e) = failure.lock().ok().and_then(|mut f| f.take()) {
        return Err(e);
    }
    batch_view(store, id)
}

/// The `replay.batch` job handler.
pub fn batch_job(context: &JobContext<'_>, payload: &Value) -> Result<Value, JobFailure> {
    let id = payload
        .get("batch")
        .and_then(Value::as_str)
        .ok_or_else(|| {
            JobFailure::permanent(
                "a `replay.batch` payload names its batch\n  help: {\"batch\": \"bat-...\"}",
            )
        })?;
    let at = crate::clock::rfc3339(u64::try_from(context.clock().now_ms() / 1000).unwrap_or(0));
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let report = |done: u64, total: u64| {
        let _ = context.progress(done, total, &format!("{done} of {total} scenarios"));
    };
    match run_batch(context.store(), id, threads, &at, &report) {
        Ok(view) => Ok(json!({
            "batch": view.batch.id,
            "results": view.done,
            "labels": view.labels,
        })),
        Err(ReplayError::Store(e)) => Err(JobFailure::retry(e.to_string())),
        Err(e) => Err(JobFailure::permanent(e.to_string())),
    }
}

impl BatchView {
    /// A readable report: progress, labels, the rule attribution, every result.
    pub fn to_text(&self) -> String {
        use std::fmt::Write as _;
        let mut out = String::new();
        let _ = writeln!(
            out,
            "batch {} on {}: {} of {} scenarios done{}",
            self.batch.id,
            self.batch.spec.run,
            self.done,
            self.total,
            self.job_state
                .as_ref()
                .map(|s| format!(" (job {s})"))
                .unwrap_or_default()
        );
        let labels: Vec<String> = self
            .labels
            .iter()
            .map(|(l, n)| format!("{l} {n}"))
            .collect();
        let _ = writeln!(out, "labels: {}", labels.join(", "));
        if !self.attribution.is_empty() {
            let _ = writeln!(
                out,
                "\nwhat each rule does to the outcome (disabled in turn):"
            );
            for a in &self.attribution {
                let moved: Vec<String> =
                    a.moved.iter().map(|(m, d)| format!("{m} {d:+}")).collect();
                let _ = writeln!(
                    out,
                    "  {:<36} {:<7} {:<14} {}",
                    a.rule,
                    a.label.as_str(),
                    a.first_change
                        .map(|s| format!("from step {s}"))
                        .unwrap_or_else(|| "no change".into()),
                    moved.join(", ")
                );
            }
        }
        let _ = writeln!(out, "\nresults:");
        for r in &self.results {
            let mutations: Vec<String> = r.mutations.iter().map(ToString::to_string).collect();
            let _ = writeln!(
                out,
                "  {:<22} {:<7} {:<14} {}",
                r.id,
                r.label.as_str(),
                r.first_change
                    .map(|s| format!("from step {s}"))
                    .unwrap_or_else(|| "no change".into()),
                mutations.join("; ")
            );
        }
        out
    }
}
