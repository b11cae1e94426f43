//! `/v1/runs`: open a run, add steps, append events, compile context, finish, read it back.

use axum::Json;
use axum::extract::State;
use serde::Deserialize;
use serde_json::{Value, json};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::access::Caller;
use super::{ApiError, ApiJson, ApiPath, AppState, blocking};
use crate::compiler::{CandidateItem, CompileInput, CompileSettings};
use crate::runtime::{EventInput, OpenRun};

/// The routes of this resource.
pub(super) fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(open_run))
        .routes(routes!(get_run))
        .routes(routes!(add_step))
        .routes(routes!(append_events))
        .routes(routes!(compile))
        .routes(routes!(finish_run))
}

/// Opens a run.
#[utoipa::path(post, path = "/v1/runs", tag = "runs",
    request_body(content = OpenRun, description = "Who runs, what, where, under which envelopes"),
    responses(
        (status = 201, description = "The run, its summary and the envelope versions governing it", body = Object),
        (status = 422, description = "Invalid request (an empty field, a bad id)", body = super::ErrorBody),
        (status = 404, description = "An envelope or the handoff contract named is not stored", body = super::ErrorBody),
        (status = 403, description = "An agent's credential opening a run as another agent (`other_agent`), outside its scope (`outside_scope`), above its clearance (`above_clearance`), or attaching envelopes (`attaches_envelopes`)", body = super::ErrorBody),
        (status = 409, description = "A run with that id exists", body = super::ErrorBody),
    ))]
async fn open_run(
    State(state): State<AppState>,
    Caller(who): Caller,
    ApiJson(body): ApiJson<OpenRun>,
) -> Result<(axum::http::StatusCode, Json<Value>), ApiError> {
    let view = blocking(&state, move |rt| rt.open_run_as(body, Some(&who))).await?;
    Ok((axum::http::StatusCode::CREATED, Json(json!(view))))
}

/// A run: header, summary, governing envelopes.
#[utoipa::path(get, path = "/v1/runs/{run_id}", tag = "runs",
    params(("run_id" = String, Path, description = "Run id")),
    responses(
        (status = 200, description = "The run", body = Object),
        (status = 404, description = "No such run", body = super::ErrorBody),
    ))]
async fn get_run(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(run): ApiPath<String>,
) -> Result<Json<Value>, ApiError> {
    caller.reach_run(&state.runtime, &run)?;
    let view = blocking(&state, move |rt| rt.run_view(&run)).await?;
    Ok(Json(json!(view)))
}

/// A step to add.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct StepBody {
    /// What the step does.
    name: String,
    /// The agent acting in it (default: the run's).
    #[serde(default)]
    agent: Option<String>,
}

/// Adds a step to a run.
#[utoipa::path(post, path = "/v1/runs/{run_id}/steps", tag = "runs",
    params(("run_id" = String, Path, description = "Run id")),
    request_body = StepBody,
    responses(
        (status = 201, description = "`{\"step\": INDEX}`", body = Object),
        (status = 404, description = "No such run", body = super::ErrorBody),
        (status = 409, description = "The run is finished", body = super::ErrorBody),
    ))]
async fn add_step(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(run): ApiPath<String>,
    ApiJson(body): ApiJson<StepBody>,
) -> Result<(axum::http::StatusCode, Json<Value>), ApiError> {
    caller.reach_run(&state.runtime, &run)?;
    let step = blocking(&state, move |rt| {
        rt.add_step(&run, &body.name, body.agent.as_deref())
    })
    .await?;
    Ok((
        axum::http::StatusCode::CREATED,
        Json(json!({ "step": step })),
    ))
}

/// Events to append.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct EventsBody {
    /// Events in order (`note`, `tool_result`, `output`, `error`, `handoff`, `context_offered`).
    events: Vec<EventInput>,
}

/// Appends agent-reported events (tool results, outputs, notes) to a run's chain.
#[utoipa::path(post, path = "/v1/runs/{run_id}/events", tag = "runs",
    params(("run_id" = String, Path, description = "Run id")),
    request_body = EventsBody,
    responses(
        (status = 201, description = "`{\"appended\": [{seq, hash}]}`", body = Object),
        (status = 422, description = "An unknown kind, or one only the gateway records", body = super::ErrorBody),
        (status = 409, description = "The run is finished", body = super::ErrorBody),
    ))]
async fn append_events(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(run): ApiPath<String>,
    ApiJson(body): ApiJson<EventsBody>,
) -> Result<(axum::http::StatusCode, Json<Value>), ApiError> {
    caller.reach_run(&state.runtime, &run)?;
    let appended = blocking(&state, move |rt| rt.append_events(&run, body.events)).await?;
    Ok((
        axum::http::StatusCode::CREATED,
        Json(json!({ "appended": appended })),
    ))
}

/// A compile request: `tollgate compile --items`'s format without `subject` (the run is the
/// subject), and the step.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct CompileBody {
    /// The candidates; each needs `content`, a `reference` or its `tokens`, and an id of its own.
    items: Vec<CandidateItem>,
    /// How to compile.
    #[serde(default)]
    settings: CompileSettings,
    /// The step (default: the run's last).
    #[serde(default)]
    step: Option<u32>,
}

/// Compiles context for a run: policy decides every item before render; recorded.
#[utoipa::path(post, path = "/v1/runs/{run_id}/compile", tag = "runs",
    params(("run_id" = String, Path, description = "Run id")),
    request_body = CompileBody,
    responses(
        (status = 200, description = "The compiled context, every item's outcome with its receipt, and the explanation", body = Object),
        (status = 409, description = "The run is finished", body = super::ErrorBody),
        (status = 422, description = "Invalid items or settings, or a step the run does not have", body = super::ErrorBody),
    ))]
async fn compile(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(run): ApiPath<String>,
    ApiJson(body): ApiJson<CompileBody>,
) -> Result<Json<crate::runtime::CompileAnswer>, ApiError> {
    caller.reach_run(&state.runtime, &run)?;
    let input = CompileInput {
        items: body.items,
        settings: body.settings,
        subject: None,
    };
    let answer = blocking(&state, move |rt| rt.compile(&run, input, body.step)).await?;
    Ok(Json(answer))
}

/// How a run ended.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct FinishBody {
    /// How it ended.
    #[schema(schema_with = run_endings)]
    status: String,
}

fn run_endings() -> utoipa::openapi::Object {
    crate::schemas::one_of("How it ended.", &["succeeded", "failed", "cancelled"])
}

/// Finishes a run.
#[utoipa::path(post, path = "/v1/runs/{run_id}/finish", tag = "runs",
    params(("run_id" = String, Path, description = "Run id")),
    request_body = FinishBody,
    responses(
        (status = 200, description = "The finished run", body = Object),
        (status = 409, description = "Already finished", body = super::ErrorBody),
    ))]
async fn finish_run(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(run): ApiPath<String>,
    ApiJson(body): ApiJson<FinishBody>,
) -> Result<Json<Value>, ApiError> {
    caller.reach_run(&state.runtime, &run)?;
    let view = blocking(&state, move |rt| rt.finish_run(&run, &body.status)).await?;
    Ok(Json(json!(view)))
}
