//! `/v2/regressions`: the Auto-Regression module — cases made from stored runs and replay
//! results (a scrubbed fixture bundle and assertions), kept by version, executed one at a time
//! or as a suite (a `regress.suite` job), with each case's history.

use crate::codes::http as codes;
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::Deserialize;
use serde_json::{Value, json};
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::{ApiError, ApiJson, ApiPath, ApiQuery, AppState, blocking};
use crate::clock::now_rfc3339;
use crate::regress::bundle::FixtureBundle;
use crate::regress::case::{RegressionCase, version_diff};
use crate::regress::jobs::{
    MAX_REPEAT, SuiteSelection, create_from_replay, create_from_run, create_suite, execute_case,
    new_version,
};
use crate::regress::store as cases;
use crate::regress::target::{SettingsOverride, Target};
use crate::regress::templates::Template;
use crate::regress::{CaseOptions, RegressError};
use crate::runtime::Runtime;

/// The routes of this resource.
pub(super) fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(from_run))
        .routes(routes!(from_replay))
        .routes(routes!(list_regressions))
        .routes(routes!(get_regression))
        .routes(routes!(execute_regression))
        .routes(routes!(versions))
        .routes(routes!(history))
        .routes(routes!(bundle))
        .routes(routes!(suites))
        .routes(routes!(get_suite))
}

/// Runs `f` off the async threads, its errors answered in the one error shape.
async fn regressing<T, F>(state: &AppState, f: F) -> Result<T, ApiError>
where
    T: Send + 'static,
    F: FnOnce(&Runtime) -> Result<T, RegressError> + Send + 'static,
{
    blocking(state, move |rt| Ok(f(rt)))
        .await?
        .map_err(ApiError::from)
}

/// How a case is made.
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CaseRequest {
    /// Cover only this step of the run (ignored for a replay, which has its own).
    #[serde(default)]
    pub step: Option<u32>,
    /// The case id (default: from the run and step, or the replay).
    #[serde(default)]
    #[schema(pattern = "^[A-Za-z0-9][A-Za-z0-9._-]{0,119}$")]
    pub id: Option<String>,
    /// A name for people.
    #[serde(default)]
    pub name: Option<String>,
    /// The task type, for coverage.
    #[serde(default)]
    pub task_type: Option<String>,
    /// Assertion templates (default all).
    #[serde(default)]
    pub templates: Vec<Template>,
}

impl CaseRequest {
    fn options(self) -> CaseOptions {
        CaseOptions {
            step: self.step,
            id: self.id,
            name: self.name,
            task_type: self.task_type,
            templates: self.templates,
        }
    }
}

fn made(case: &RegressionCase, bundle: &FixtureBundle) -> Value {
    json!({
        "case": case,
        "yaml": case.to_yaml(),
        "bundle": {
            "hash": case.bundle.hash,
            "steps": bundle.run.steps.len(),
            "events": bundle.run.events.len(),
            "redactions": bundle.redactions,
        },
    })
}

/// An optional body: absent or empty means the defaults.
/// An optional body: none, or `null`, is the default request.
fn body_or_default(body: Option<ApiJson<Option<CaseRequest>>>) -> CaseRequest {
    body.and_then(|ApiJson(b)| b).unwrap_or_default()
}

/// Makes a case from a stored run (or one step of it): its fixture bundle — the run cut at
/// the step, secrets and personal data scrubbed, resealed so it replays exactly — and
/// assertions (structural, behavioural, output, policy) that hold on it. Stored as version 1.
#[utoipa::path(post, path = "/v2/regressions/from-run/{run_id}", tag = "regressions",
    params(("run_id" = String, Path, description = "A stored run")),
    request_body(content = Option<CaseRequest>, description = "Optional: step, id, name, task_type, templates"),
    responses(
        (status = 201, description = "`{\"case\", \"yaml\", \"bundle\": {hash, steps, events, redactions}}`", body = Object),
        (status = 400, description = "The body is not JSON", body = super::ErrorBody),
        (status = 404, description = "No such run", body = super::ErrorBody),
        (status = 409, description = "A case of that id exists", body = super::ErrorBody),
        (status = 422, description = "No such step, a bad id, or a run that cannot be a safe fixture", body = super::ErrorBody),
    ))]
async fn from_run(
    State(state): State<AppState>,
    ApiPath(run_id): ApiPath<String>,
    body: Option<ApiJson<Option<CaseRequest>>>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let options = body_or_default(body).options();
    let answer = regressing(&state, move |rt| {
        let (case, bundle) = create_from_run(rt.store(), &run_id, &options, &now_rfc3339())?;
        Ok(made(&case, &bundle))
    })
    .await?;
    Ok((StatusCode::CREATED, Json(answer)))
}

/// Makes a case from a stored replay result: its step and mutations, assertions on what they
/// lead to. Stored as version 1.
#[utoipa::path(post, path = "/v2/regressions/from-replay/{replay_id}", tag = "regressions",
    params(("replay_id" = String, Path, description = "A replay result (`rpl-…`)")),
    request_body(content = Option<CaseRequest>, description = "Optional: id, name, task_type, templates"),
    responses(
        (status = 201, description = "`{\"case\", \"yaml\", \"bundle\"}`", body = Object),
        (status = 400, description = "The body is not JSON", body = super::ErrorBody),
        (status = 404, description = "No such result", body = super::ErrorBody),
        (status = 409, description = "A case of that id exists", body = super::ErrorBody),
        (status = 422, description = "A live replay (cases run offline), or a run that cannot be a safe fixture", body = super::ErrorBody),
    ))]
async fn from_replay(
    State(state): State<AppState>,
    ApiPath(replay_id): ApiPath<String>,
    body: Option<ApiJson<Option<CaseRequest>>>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let options = body_or_default(body).options();
    let answer = regressing(&state, move |rt| {
        let (case, bundle) = create_from_replay(rt.store(), &replay_id, &options, &now_rfc3339())?;
        Ok(made(&case, &bundle))
    })
    .await?;
    Ok((StatusCode::CREATED, Json(answer)))
}

/// Every case at its latest version, with how it last ran.
#[utoipa::path(get, path = "/v2/regressions", tag = "regressions",
    responses((status = 200, description = "`{\"cases\": [{id, version, name, agent, task_type, run, last_status, last_signature, last_run_at}]}`", body = Object)))]
async fn list_regressions(State(state): State<AppState>) -> Result<Json<Value>, ApiError> {
    let cases = regressing(&state, |rt| Ok(cases::cases(rt.store())?)).await?;
    Ok(Json(json!({ "cases": cases })))
}

/// Which version.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct VersionQuery {
    /// A version (default the latest).
    pub version: Option<u32>,
}

/// A case at a version (the latest by default), its file, every version, and the diff from
/// the version before it.
#[utoipa::path(get, path = "/v2/regressions/{id}", tag = "regressions",
    params(("id" = String, Path, description = "A case id"), VersionQuery),
    responses(
        (status = 200, description = "`{\"case\", \"yaml\", \"versions\": [{version, reason, created_at}], \"diff\"}`", body = Object),
        (status = 404, description = "No such case or version", body = super::ErrorBody),
    ))]
async fn get_regression(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
    ApiQuery(q): ApiQuery<VersionQuery>,
) -> Result<Json<Value>, ApiError> {
    let answer = regressing(&state, move |rt| {
        let store = rt.store();
        let case = cases::case(store, &id, q.version)?.ok_or_else(|| {
            RegressError::NotFound(match q.version {
                Some(v) => format!("no case `{id}` version {v}"),
                None => format!("no case `{id}`"),
            })
        })?;
        let yaml = case.to_yaml();
        let diff = match case.version.checked_sub(1).filter(|v| *v > 0) {
            Some(before) => cases::case(store, &id, Some(before))?.map(|b| version_diff(&b, &case)),
            None => None,
        };
        Ok(json!({
            "case": case,
            "yaml": yaml,
            "versions": cases::versions(store, &id)?,
            "diff": diff,
        }))
    })
    .await?;
    Ok(Json(answer))
}

/// How many runs. Unknown parameters are refused: a misspelt `repeat` would otherwise run the
/// case once, silently.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct ExecuteQuery {
    /// A version (default the latest).
    pub version: Option<u32>,
    /// Runs (1 to 100, default 1); mixed results make the case flaky.
    #[param(minimum = 1, maximum = 100)]
    pub repeat: Option<u32>,
}

/// What a case runs against, when not what its bundle recorded.
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ExecuteRequest {
    /// Envelope files (`{name, yaml}`) replacing the recorded versions of the same ids: a
    /// candidate policy, checked before it is stored.
    #[serde(default)]
    pub envelopes: Vec<EnvelopeFile>,
    /// Compile settings laid over the recorded ones.
    #[serde(default)]
    pub settings: SettingsOverride,
}

/// One envelope file.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EnvelopeFile {
    /// Its name, for diagnostics.
    pub name: String,
    /// Its YAML.
    pub yaml: String,
}

/// Runs a case offline on its bundle (no tool executed, no network) and records the run in
/// its history: every assertion's verdict, drift, the failure signature. Against what the
/// bundle recorded, or with a body, against candidate envelopes and compile settings.
#[utoipa::path(post, path = "/v2/regressions/{id}/execute", tag = "regressions",
    params(("id" = String, Path, description = "A case id"), ExecuteQuery),
    request_body(content = ExecuteRequest, description = "Optional: a target (`envelopes`, `settings`)"),
    responses(
        (status = 201, description = "The run: `{id, case, version, status, passes, runs, drift, signature, report, executed_at}`", body = Object),
        (status = 400, description = "The body is not JSON", body = super::ErrorBody),
        (status = 404, description = "No such case or version", body = super::ErrorBody),
        (status = 422, description = "`repeat` out of range, or envelopes that do not load", body = super::ErrorBody),
    ))]
async fn execute_regression(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
    ApiQuery(q): ApiQuery<ExecuteQuery>,
    body: Option<ApiJson<ExecuteRequest>>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let req = body.map(|ApiJson(b)| b).unwrap_or_default();
    let repeat = q.repeat.unwrap_or(1);
    if !(1..=MAX_REPEAT).contains(&repeat) {
        return Err(ApiError::new(
            codes::INVALID,
            format!("`repeat` is {repeat}; it runs from 1 to {MAX_REPEAT}"),
        ));
    }
    let run = regressing(&state, move |rt| {
        let target = if req.envelopes.is_empty() && req.settings.is_empty() {
            Target::recorded()
        } else {
            let files: Vec<(String, String)> = req
                .envelopes
                .into_iter()
                .map(|e| (e.name, e.yaml))
                .collect();
            Target::from_parts("the request", &files, req.settings)?
        }
        .with_judge(crate::regress::target::judge_from_env()?);
        execute_case(rt.store(), &id, q.version, repeat, &target, &now_rfc3339())
    })
    .await?;
    let body = serde_json::to_value(&run).map_err(|e| ApiError::Internal(e.to_string()))?;
    Ok((StatusCode::CREATED, Json(body)))
}

/// A change of expectations.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct VersionRequest {
    /// Why the expectations change.
    #[schema(pattern = r"\S")]
    pub reason: String,
    /// Write every assertion again from the case's templates (default: keep the passing
    /// ones, rewrite the failing ones to the current outcome).
    #[serde(default)]
    pub regenerate: bool,
}

/// Makes the next version of a case, accepting what it does now, with the diff.
#[utoipa::path(post, path = "/v2/regressions/{id}/versions", tag = "regressions",
    params(("id" = String, Path, description = "A case id")),
    request_body = VersionRequest,
    responses(
        (status = 201, description = "`{\"changed\": true, \"case\", \"diff\", \"rewritten\", \"dropped\"}`", body = Object),
        (status = 200, description = "`{\"changed\": false}`: every assertion passes as written", body = Object),
        (status = 400, description = "The body is not JSON", body = super::ErrorBody),
        (status = 404, description = "No such case", body = super::ErrorBody),
        (status = 422, description = "No reason given, or nothing would be left to assert", body = super::ErrorBody),
    ))]
async fn versions(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
    ApiJson(req): ApiJson<VersionRequest>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let u = regressing(&state, move |rt| {
        new_version(rt.store(), &id, &req.reason, req.regenerate, &now_rfc3339())
    })
    .await?;
    Ok(match u {
        Some(u) => (
            StatusCode::CREATED,
            Json(json!({
                "changed": true,
                "case": u.case,
                "diff": u.diff,
                "rewritten": u.rewritten,
                "dropped": u.dropped,
            })),
        ),
        None => (StatusCode::OK, Json(json!({"changed": false}))),
    })
}

/// A case's fixture bundle, as the file a repository commits beside the case (its hash is
/// the one the case pins): with `GET /v2/regressions/{id}`'s `yaml`, the case as files.
#[utoipa::path(get, path = "/v2/regressions/{id}/bundle", tag = "regressions",
    params(("id" = String, Path, description = "A case id"), VersionQuery),
    responses(
        (status = 200, description = "The bundle (`tollgate.fixture/v1`)", body = Object),
        (status = 404, description = "No such case or version", body = super::ErrorBody),
    ))]
async fn bundle(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
    ApiQuery(q): ApiQuery<VersionQuery>,
) -> Result<Json<Value>, ApiError> {
    let bundle = regressing(&state, move |rt| {
        let (_, bundle) = crate::regress::jobs::load_stored(rt.store(), &id, q.version)?;
        Ok(bundle)
    })
    .await?;
    let body = serde_json::to_value(&bundle).map_err(|e| ApiError::Internal(e.to_string()))?;
    Ok(Json(body))
}

/// A page of history.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct HistoryQuery {
    /// Runs per page (1 to 200, default 50).
    #[param(minimum = 1, maximum = 200)]
    pub limit: Option<u32>,
    /// Only runs older than this run id (the last `id` of the previous page).
    pub before: Option<i64>,
}

/// A case's runs, newest first: status, version, drift and signature of each, and its
/// report.
#[utoipa::path(get, path = "/v2/regressions/{id}/history", tag = "regressions",
    params(("id" = String, Path, description = "A case id"), HistoryQuery),
    responses(
        (status = 200, description = "`{\"case\", \"runs\": [...], \"next_before\"}`", body = Object),
        (status = 404, description = "No such case", body = super::ErrorBody),
    ))]
async fn history(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
    ApiQuery(q): ApiQuery<HistoryQuery>,
) -> Result<Json<Value>, ApiError> {
    let limit = super::page_limit(q.limit, 50, 200)?;
    let answer = regressing(&state, move |rt| {
        if cases::case(rt.store(), &id, None)?.is_none() {
            return Err(RegressError::NotFound(format!("no case `{id}`")));
        }
        let runs = cases::history(rt.store(), &id, limit, q.before)?;
        let next = (runs.len() == limit as usize)
            .then(|| runs.last().map(|r| r.id))
            .flatten();
        Ok(json!({"case": id, "runs": runs, "next_before": next}))
    })
    .await?;
    Ok(Json(answer))
}

/// Runs a suite as a `regress.suite` job: the cases named, else every stored case (of an
/// agent, a task type), each `repeat` times; each run recorded in its case's history, then the
/// suite's figures (pass rate, drift, flaky, coverage) and failure signatures.
#[utoipa::path(post, path = "/v2/regressions/suites/execute", tag = "regressions",
    request_body = SuiteSelection,
    responses(
        (status = 202, description = "`{\"suite\": {id, selection, job}, \"job\": {id, kind, state}}`: follow it at `GET /v2/regressions/suites/{id}`", body = Object),
        (status = 400, description = "The body is not JSON", body = super::ErrorBody),
        (status = 404, description = "A named case does not exist, or no case matches the selection", body = super::ErrorBody),
        (status = 422, description = "`repeat` is out of range", body = super::ErrorBody),
    ))]
async fn suites(
    State(state): State<AppState>,
    ApiJson(selection): ApiJson<SuiteSelection>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let (suite, job) = regressing(&state, move |rt| {
        create_suite(rt.store(), &selection, &now_rfc3339(), true)
    })
    .await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(json!({"suite": suite, "job": job})),
    ))
}

/// A suite: what it selected, its figures and signatures once finished, and its runs.
#[utoipa::path(get, path = "/v2/regressions/suites/{id}", tag = "regressions",
    params(("id" = String, Path, description = "A suite id (`sui-…`)")),
    responses(
        (status = 200, description = "`{\"suite\": {id, selection, job, figures, signatures, created_at, finished_at}, \"runs\": [...]}`", body = Object),
        (status = 404, description = "No such suite", body = super::ErrorBody),
    ))]
async fn get_suite(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<Value>, ApiError> {
    let answer = regressing(&state, move |rt| {
        let suite = cases::suite(rt.store(), &id)?
            .ok_or_else(|| RegressError::NotFound(format!("no suite `{id}`")))?;
        let runs = cases::suite_runs(rt.store(), &id)?;
        Ok(json!({"suite": suite, "runs": runs}))
    })
    .await?;
    Ok(Json(answer))
}
