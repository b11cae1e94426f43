//! `/v2/replays`: the Counterfactual Replay module — scenarios (a recorded run or step plus
//! mutations) created and executed, batches of them run as background jobs, results with
//! their metrics, label and side-by-side comparison.

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
use crate::replay::ReplayError;
use crate::replay::batch::BatchSpec;
use crate::replay::jobs::{batch_view, create_batch, create_scenario, execute_scenario};
use crate::replay::scenario::ScenarioSpec;
use crate::replay::store::{self, ResultFilter};
use crate::runtime::Runtime;

/// The routes of this resource.
pub(super) fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(create))
        .routes(routes!(get_scenario))
        .routes(routes!(execute))
        .routes(routes!(batches))
        .routes(routes!(list_replays))
        .routes(routes!(get_replay))
        .routes(routes!(export))
}

/// Runs `f` off the async threads, its replay errors answered in the one error shape.
async fn replaying<T, F>(state: &AppState, f: F) -> Result<T, ApiError>
where
    T: Send + 'static,
    F: FnOnce(&Runtime) -> Result<T, ReplayError> + Send + 'static,
{
    blocking(state, move |rt| Ok(f(rt)))
        .await?
        .map_err(ApiError::from)
}

/// Creates a scenario: a recorded run (or one step, `step`) and the mutations to make
/// (`drop_item`, `change_weight`, `change_budget`, `swap_summary`, `disable_rule`,
/// `disable_memory_class`, `drop_retrieval_doc`), with the tool `mode` (`dry_run`,
/// `stubbed_tool`), the `model` (`recorded`; `live` opts in to the configured provider), the
/// `metrics` and a `rubric` of assertions. Checked against the run: a mutation naming what the
/// run does not have is a 422 listing what it has. The same spec twice is one scenario.
#[utoipa::path(post, path = "/v2/replays/scenarios", tag = "replays", operation_id = "create_scenario",
    request_body = ScenarioSpec,
    responses(
        (status = 201, description = "`{\"scenario\": {id, spec, created_by, created_at}, \"created\": true}`", body = Object),
        (status = 200, description = "The same scenario existed: `{\"scenario\", \"created\": false}`", body = Object),
        (status = 400, description = "The body is not JSON", body = super::ErrorBody),
        (status = 404, description = "No such run", body = super::ErrorBody),
        (status = 422, description = "The scenario does not fit its run (`invalid_scenario`, with the mutation's index), or does not parse", body = super::ErrorBody),
    ))]
async fn create(
    State(state): State<AppState>,
    ApiJson(spec): ApiJson<ScenarioSpec>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let (scenario, created) = replaying(&state, move |rt| {
        create_scenario(rt.store(), spec, "api", &now_rfc3339())
    })
    .await?;
    let status = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((
        status,
        Json(json!({"scenario": scenario, "created": created})),
    ))
}

/// A scenario with its results, newest first.
#[utoipa::path(get, path = "/v2/replays/scenarios/{id}", tag = "replays",
    params(("id" = String, Path, description = "A scenario id (`scn-…`)")),
    responses(
        (status = 200, description = "`{\"scenario\", \"results\": [{id, label, first_change, deltas, ...}]}`", body = Object),
        (status = 404, description = "No such scenario", body = super::ErrorBody),
    ))]
async fn get_scenario(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<Value>, ApiError> {
    let answer = replaying(&state, move |rt| {
        let scenario = store::scenario(rt.store(), &id)?
            .ok_or_else(|| ReplayError::NotFound(format!("no scenario `{id}`")))?;
        let results = store::results(
            rt.store(),
            &ResultFilter {
                scenario: Some(id),
                limit: 100,
                ..ResultFilter::default()
            },
        )?;
        Ok(json!({"scenario": scenario, "results": results}))
    })
    .await?;
    Ok(Json(answer))
}

/// Executes a scenario against its run's baseline (the recording, which must replay without
/// drift) and stores the result: metrics with deltas, a win / loss / neutral label, and per
/// step the items, tokens, answers and tool calls that differ. Nothing of the run changes.
#[utoipa::path(post, path = "/v2/replays/scenarios/{id}/execute", tag = "replays", operation_id = "execute_scenario",
    params(("id" = String, Path, description = "A scenario id (`scn-…`)")),
    responses(
        (status = 201, description = "The result (`rpl-…`): `{id, scenario, label, metrics, first_change, steps, notes, baseline, replay}`", body = Object),
        (status = 404, description = "No such scenario", body = super::ErrorBody),
        (status = 409, description = "The run does not replay without drift, so it cannot be a baseline", body = super::ErrorBody),
        (status = 422, description = "The scenario asks for a live model and none is configured", body = super::ErrorBody),
    ))]
async fn execute(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let result = replaying(&state, move |rt| {
        execute_scenario(rt.store(), &id, &now_rfc3339())
    })
    .await?;
    let body = serde_json::to_value(&result).map_err(|e| ApiError::Internal(e.to_string()))?;
    Ok((StatusCode::CREATED, Json(body)))
}

/// Runs many mutations against one baseline as a `replay.batch` job: `scenarios` (each with
/// its mutations), single `mutations` (one scenario each) and a `sweep` over the run
/// (`disable_each_rule` attributes outcome changes to rules; `drop_each_item`;
/// `disable_each_memory_class`). Every scenario is checked before anything is stored.
#[utoipa::path(post, path = "/v2/replays/batches", tag = "replays",
    request_body = BatchSpec,
    responses(
        (status = 202, description = "`{\"batch\": {id, scenarios, ...}, \"job\": {id, kind, state}}`: follow it at `GET /v2/replays/{batch id}`", body = Object),
        (status = 400, description = "The body is not JSON", body = super::ErrorBody),
        (status = 404, description = "No such run", body = super::ErrorBody),
        (status = 422, description = "A scenario does not fit the run, or the batch is empty or too large", body = super::ErrorBody),
    ))]
async fn batches(
    State(state): State<AppState>,
    ApiJson(spec): ApiJson<BatchSpec>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let (batch, job) = replaying(&state, move |rt| {
        create_batch(rt.store(), spec, "api", &now_rfc3339(), true)
    })
    .await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(json!({"batch": batch, "job": job})),
    ))
}

/// Which results to list.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct ListParams {
    /// Only of this run.
    run: Option<String>,
    /// At most this many (default 50, at most 500).
    #[param(minimum = 1, maximum = 500)]
    limit: Option<u32>,
}

/// Replay results, newest first.
#[utoipa::path(get, path = "/v2/replays", tag = "replays",
    params(ListParams),
    responses(
        (status = 200, description = "`{\"results\": [{id, scenario, run, label, first_change, deltas, executed_at}]}`", body = Object),
    ))]
async fn list_replays(
    State(state): State<AppState>,
    ApiQuery(p): ApiQuery<ListParams>,
) -> Result<Json<Value>, ApiError> {
    let limit = super::page_limit(p.limit, 50, 500)? as usize;
    let results = replaying(&state, move |rt| {
        Ok(store::results(
            rt.store(),
            &ResultFilter {
                run: p.run,
                limit,
                ..ResultFilter::default()
            },
        )?)
    })
    .await?;
    Ok(Json(json!({ "results": results })))
}

/// A result (`rpl-…`: its metrics, deltas, label and per-step comparison, with both
/// trajectories) or a batch (`bat-…`: its job's state, results by label, and for rule
/// sweeps the attribution of outcome changes to rules).
#[utoipa::path(get, path = "/v2/replays/{id}", tag = "replays",
    params(("id" = String, Path, description = "A result (`rpl-…`) or batch (`bat-…`) id")),
    responses(
        (status = 200, description = "The result or the batch", body = Object),
        (status = 404, description = "No such result or batch", body = super::ErrorBody),
    ))]
async fn get_replay(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<Value>, ApiError> {
    let answer = replaying(&state, move |rt| {
        if id.starts_with("bat-") {
            let view = batch_view(rt.store(), &id)?;
            return serde_json::to_value(view).map_err(|e| ReplayError::Internal(e.to_string()));
        }
        let result = store::result(rt.store(), &id)?.ok_or_else(|| {
            ReplayError::NotFound(format!(
                "no replay `{id}`: results are `rpl-…` and batches `bat-…` \
                 (`GET /v2/replays` lists results)"
            ))
        })?;
        serde_json::to_value(result).map_err(|e| ReplayError::Internal(e.to_string()))
    })
    .await?;
    Ok(Json(answer))
}

/// A result as the draft of a regression case: its source (result, scenario, run, step,
/// mutations), what it showed (label, first change) and assertions — the steps that held, the
/// tool path, each call whose decision changed — that hold on it; as JSON and as the YAML a
/// repository can commit.
#[utoipa::path(get, path = "/v2/replays/{id}/export", tag = "replays",
    params(("id" = String, Path, description = "A result id (`rpl-…`)")),
    responses(
        (status = 200, description = "`{\"draft\": {name, source, mutations, expect, assertions}, \"yaml\"}`", body = Object),
        (status = 404, description = "No such result", body = super::ErrorBody),
    ))]
async fn export(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<Value>, ApiError> {
    let draft = replaying(&state, move |rt| {
        let result = store::result(rt.store(), &id)?
            .ok_or_else(|| ReplayError::NotFound(format!("no replay result `{id}`")))?;
        Ok(crate::replay::export::regression_draft(&result))
    })
    .await?;
    let yaml = crate::replay::export::draft_yaml(&draft);
    Ok(Json(json!({"draft": draft, "yaml": yaml})))
}
