//! Regression over the store: cases made from stored runs and replay results and kept by
//! version, a case executed and its run recorded in its history, a new version accepting the
//! current outcome, and suites run as a `regress.suite` job (cases on threads, each run
//! recorded as it finishes).

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::bundle::FixtureBundle;
use super::case::RegressionCase;
use super::store::{
    self as cases, CaseRun, StoredSuite, create_suite as insert_suite, finish_suite, record_run,
    save_case, set_suite_job,
};
use super::suite::{CaseReport, clusters, figures, par_map, run_loaded};
use super::target::Target;
use super::update::{CaseUpdate, update};
use super::{CaseOptions, RegressError, from_replay, from_run};
use crate::jobs::{EnqueueOptions, JobContext, JobFailure, JobQueue, JobRecord};
use crate::recorder::Recorder;
use crate::store::Store;

/// The job kind that runs a suite: payload `{"suite": "sui-N"}`.
pub const SUITE_JOB: &str = "regress.suite";

/// The most repeats a request may ask for.
pub const MAX_REPEAT: u32 = 100;

/// Makes a case from stored run `run` and stores it (version 1); refused when the id is taken.
pub fn create_from_run(
    store: &Store,
    run: &str,
    options: &CaseOptions,
    at: &str,
) -> Result<(RegressionCase, FixtureBundle), RegressError> {
    let file = Recorder::new(store.clone())
        .export(run)
        .map_err(crate::replay::ReplayError::from)?;
    let made = from_run(&file, options)?;
    keep(store, made, at)
}

/// Makes a case from stored replay result `replay` and stores it (version 1).
pub fn create_from_replay(
    store: &Store,
    replay: &str,
    options: &CaseOptions,
    at: &str,
) -> Result<(RegressionCase, FixtureBundle), RegressError> {
    let result = crate::replay::store::result(store, replay)?
        .ok_or_else(|| RegressError::NotFound(format!("no replay result `{replay}`")))?;
    let file = Recorder::new(store.clone())
        .export(&result.run)
        .map_err(crate::replay::ReplayError::from)?;
    let made = from_replay(&file, &result, options)?;
    keep(store, made, at)
}

fn keep(
    store: &Store,
    (case, bundle): (RegressionCase, FixtureBundle),
    at: &str,
) -> Result<(RegressionCase, FixtureBundle), RegressError> {
    let (c, b, at) = (case.clone(), bundle.clone(), at.to_string());
    // Checked in the write that stores it, so two requests for one id cannot both pass.
    store.transact(move |conn| {
        let existing: Option<u32> = conn
            .query_row(
                "SELECT max(version) FROM regression_cases WHERE id = ?1",
                [&c.id],
                |r| r.get(0),
            )?;
        if let Some(v) = existing {
            return Err(RegressError::Conflict(format!(
                "case `{}` exists (version {v})\n  help: name the new case with `id`, or change the existing one with a new version",
                c.id
            )));
        }
        save_case(conn, &c, &b, &at)
    })?;
    Ok((case, bundle))
}

/// A stored case with its bundle, at `version` (the latest when `None`).
pub fn load_stored(
    store: &Store,
    id: &str,
    version: Option<u32>,
) -> Result<(RegressionCase, FixtureBundle), RegressError> {
    let case = cases::case(store, id, version)?.ok_or_else(|| {
        RegressError::NotFound(match version {
            Some(v) => format!("no case `{id}` version {v}"),
            None => format!("no case `{id}`"),
        })
    })?;
    let bundle = cases::bundle(store, &case.bundle.hash)?.ok_or_else(|| {
        RegressError::NotFound(format!("the bundle of case `{id}` is not in the store"))
    })?;
    Ok((case, bundle))
}

/// Runs stored case `id` `repeat` times against `target` and records the run in its history.
pub fn execute_case(
    store: &Store,
    id: &str,
    version: Option<u32>,
    repeat: u32,
    target: &Target,
    at: &str,
) -> Result<CaseRun, RegressError> {
    let (case, bundle) = load_stored(store, id, version)?;
    let report = run_loaded(
        &format!("store:{id}"),
        &case,
        &bundle,
        repeat.clamp(1, MAX_REPEAT),
        target,
    );
    let (v, at) = (case.version, at.to_string());
    let row_report = report.clone();
    let row = store.write(move |c| record_run(c, v, &row_report, None, &at))?;
    cases::history(store, id, 1, Some(row + 1))?
        .pop()
        .ok_or_else(|| {
            RegressError::NotFound(format!(
                "the run of case `{}` was not recorded",
                report.case
            ))
        })
}

/// Stores the next version of case `id`, accepting what it does now; `None` when nothing
/// changes.
pub fn new_version(
    store: &Store,
    id: &str,
    reason: &str,
    regenerate: bool,
    at: &str,
) -> Result<Option<CaseUpdate>, RegressError> {
    if reason.trim().is_empty() {
        return Err(RegressError::Invalid(
            "a new version needs a `reason`: why the expectations change".into(),
        ));
    }
    let (case, bundle) = load_stored(store, id, None)?;
    let Some(u) = update(&case, &bundle, &Target::recorded(), reason, regenerate)? else {
        return Ok(None);
    };
    let (c, b, at) = (u.case.clone(), bundle, at.to_string());
    store.transact(move |conn| save_case(conn, &c, &b, &at))?;
    Ok(Some(u))
}

/// What a suite runs: the cases named, else every stored case (of the agent and task type
/// when given), each `repeat` times.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SuiteSelection {
    /// Case ids; every stored case when empty.
    #[serde(default)]
    pub cases: Vec<String>,
    /// Only cases of this agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// Only cases of this task type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_type: Option<String>,
    /// Runs per case (1 to 100; default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 1, maximum = 100)]
    pub repeat: Option<u32>,
}

impl SuiteSelection {
    /// The case ids it selects, by id.
    pub fn resolve(&self, store: &Store) -> Result<Vec<String>, RegressError> {
        if let Some(r) = self.repeat
            && !(1..=MAX_REPEAT).contains(&r)
        {
            return Err(RegressError::Invalid(format!(
                "`repeat` is {r}; it runs from 1 to {MAX_REPEAT}"
            )));
        }
        let all = cases::cases(store)?;
        let mut ids = Vec::new();
        if self.cases.is_empty() {
            for c in &all {
                let agent_ok = self.agent.as_ref().is_none_or(|a| *a == c.agent);
                let type_ok = self.task_type.as_ref().is_none_or(|t| *t == c.task_type);
                if agent_ok && type_ok {
                    ids.push(c.id.clone());
                }
            }
        } else {
            for id in &self.cases {
                if !all.iter().any(|c| c.id == *id) {
                    return Err(RegressError::NotFound(format!("no case `{id}`")));
                }
                ids.push(id.clone());
            }
            ids.sort();
            ids.dedup();
        }
        if ids.is_empty() {
            return Err(RegressError::NotFound(
                "the selection has no case\n  help: make cases with `POST /v2/regressions/from-run/{run_id}`, or widen `agent` and `task_type`".into(),
            ));
        }
        Ok(ids)
    }
}

/// Checks `selection`, stores a suite and enqueues its job (unless `enqueue` is off: the
/// caller runs it).
pub fn create_suite(
    store: &Store,
    selection: &SuiteSelection,
    at: &str,
    enqueue: bool,
) -> Result<(StoredSuite, Option<JobRecord>), RegressError> {
    let ids = selection.resolve(store)?;
    let body = json!({
        "cases": ids,
        "repeat": selection.repeat.unwrap_or(1),
        "agent": selection.agent,
        "task_type": selection.task_type,
    });
    let at_s = at.to_string();
    let id = store.write(move |c| insert_suite(c, &body, &at_s))?;
    let mut job = None;
    if enqueue {
        let queue = JobQueue::new(store.clone());
        let jid = queue
            .enqueue(SUITE_JOB, json!({"suite": id}), EnqueueOptions::default())
            .map_err(|e| RegressError::Invalid(format!("job queue: {e}")))?;
        let sid = id.clone();
        store.write(move |c| set_suite_job(c, &sid, jid.0))?;
        job = Some(
            queue
                .get(jid)
                .map_err(|e| RegressError::Invalid(format!("job queue: {e}")))?,
        );
    }
    let suite = cases::suite(store, &id)?
        .ok_or_else(|| RegressError::NotFound(format!("no suite `{id}`")))?;
    Ok((suite, job))
}

/// Runs stored suite `id` on `threads` threads: every case's run recorded, then the figures.
pub fn run_stored_suite(
    store: &Store,
    id: &str,
    threads: usize,
    at: &str,
    progress: &dyn Fn(u64, u64),
) -> Result<StoredSuite, RegressError> {
    let suite = cases::suite(store, id)?
        .ok_or_else(|| RegressError::NotFound(format!("no suite `{id}`")))?;
    let ids: Vec<String> = suite.selection["cases"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    let repeat = suite.selection["repeat"]
        .as_u64()
        .and_then(|r| u32::try_from(r).ok())
        .unwrap_or(1)
        .clamp(1, MAX_REPEAT);
    let total = ids.len() as u64;
    let target = Target::recorded().with_judge(super::target::judge_from_env()?);
    // Each case's run is recorded as it finishes, so a suite cut short keeps what it ran.
    let outcomes = par_map(
        &ids,
        threads,
        |case_id| {
            let shown = format!("store:{case_id}");
            let (version, report) = match load_stored(store, case_id, None) {
                Ok((case, bundle)) => (
                    case.version,
                    run_loaded(&shown, &case, &bundle, repeat, &target),
                ),
                Err(e) => (0, CaseReport::error(&shown, case_id, &e)),
            };
            let (row, sid, at) = (report.clone(), id.to_string(), at.to_string());
            store
                .write(move |c| record_run(c, version, &row, Some(&sid), &at))
                .map(|_| report)
        },
        &mut |n| progress(n as u64, total),
    );
    let reports = outcomes.into_iter().collect::<Result<Vec<_>, _>>()?;
    let (f, s) = (figures(&reports), clusters(&reports));
    let (sid, at) = (id.to_string(), at.to_string());
    store.write(move |c| finish_suite(c, &sid, &f, &s, &at))?;
    cases::suite(store, id)?.ok_or_else(|| RegressError::NotFound(format!("no suite `{id}`")))
}

/// The `regress.suite` job handler.
pub fn suite_job(context: &JobContext<'_>, payload: &Value) -> Result<Value, JobFailure> {
    let id = payload
        .get("suite")
        .and_then(Value::as_str)
        .ok_or_else(|| {
            JobFailure::permanent(
                "a `regress.suite` payload names its suite\n  help: {\"suite\": \"sui-1\"}",
            )
        })?;
    let at = crate::clock::rfc3339(u64::try_from(context.clock().now_ms() / 1000).unwrap_or(0));
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let report = |done: u64, total: u64| {
        let _ = context.progress(done, total, &format!("{done} of {total} cases"));
    };
    match run_stored_suite(context.store(), id, threads, &at, &report) {
        Ok(suite) => Ok(json!({"suite": suite.id, "figures": suite.figures})),
        Err(RegressError::Store(e)) => Err(JobFailure::retry(e.to_string())),
        Err(e) => Err(JobFailure::permanent(e.to_string())),
    }
}
