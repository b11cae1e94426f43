//! `/v1/runs`: open a run, add steps, append events, compile context, finish, read it back,
//! list them.

use crate::codes::http as codes;
use axum::Json;
use axum::extract::State;
use serde::Deserialize;
use serde_json::{Value, json};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::access::Caller;
use super::{ApiError, ApiJson, ApiPath, ApiQuery, AppState, blocking};
use crate::compiler::{CandidateItem, CompileInput, CompileSettings};
use crate::recorder::write::RUN_STATUSES;
use crate::recorder::{RunFilter, RunKey};
use crate::runtime::{EventInput, OpenRun};

/// The routes of this resource.
pub(super) fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(open_run, list_runs))
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
        (status = 201, description = "The run, its summary and the envelope versions governing it", body = crate::runtime::RunView),
        (status = 422, description = "Invalid request (an empty field, a bad id)", body = super::ErrorBody),
        (status = 404, description = "An envelope or the handoff contract named is not stored", body = super::ErrorBody),
        (status = 403, description = "An agent's credential opening a run as another agent (`other_agent`), outside its scope (`outside_scope`), above its clearance (`above_clearance`), or attaching envelopes (`attaches_envelopes`)", body = super::ErrorBody),
        (status = 409, description = "A run with that id exists", body = super::ErrorBody),
    ))]
async fn open_run(
    State(state): State<AppState>,
    Caller(who): Caller,
    ApiJson(body): ApiJson<OpenRun>,
) -> Result<(axum::http::StatusCode, Json<crate::runtime::RunView>), ApiError> {
    let view = blocking(&state, move |rt| rt.open_run_as(body, Some(&who))).await?;
    Ok((axum::http::StatusCode::CREATED, Json(view)))
}

/// Which runs to list.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct ListRuns {
    /// Only this agent's runs.
    agent: Option<String>,
    /// Only runs with this status.
    #[param(schema_with = run_statuses)]
    status: Option<String>,
    /// At most this many (default 50, at most 500).
    #[param(minimum = 1, maximum = 500)]
    limit: Option<u32>,
    /// Only runs older than this one: the `next.id` of the previous page.
    after: Option<String>,
    /// With `after`: that run's start time, the `next.started_at` of the previous page.
    after_started_at: Option<String>,
}

fn run_statuses() -> utoipa::openapi::Object {
    crate::schemas::one_of(
        "Only runs with this status: `running`, `succeeded`, `failed` or `cancelled`.",
        &RUN_STATUSES,
    )
}

/// Runs, newest first, paged by key: `{"runs": [{id, agent, task, status, started_at, steps,
/// events, decisions}], "next": {started_at, id} | null}`. An agent's credential lists only
/// the runs it may reach (its own, within its scope).
#[utoipa::path(get, path = "/v1/runs", tag = "runs",
    params(ListRuns),
    responses(
        (status = 200, description = "`{\"runs\": [{id, agent, task, status, started_at, steps, events, decisions}], \"next\": {started_at, id} | null}`", body = Object),
    ))]
async fn list_runs(
    State(state): State<AppState>,
    Caller(who): Caller,
    ApiQuery(p): ApiQuery<ListRuns>,
) -> Result<Json<Value>, ApiError> {
    let limit = super::page_limit(p.limit, 50, 500)? as usize;
    if let Some(status) = p.status.as_deref()
        && !RUN_STATUSES.contains(&status)
    {
        // Unchecked, a status no run has lists nothing, which reads as "no such runs".
        return Err(ApiError::Coded {
            code: codes::INVALID_QUERY,
            message: format!(
                "`status` is one of {}, not `{status}`",
                RUN_STATUSES.join(", ")
            ),
            details: Value::Null,
        });
    }
    let after = match (p.after, p.after_started_at) {
        (Some(id), Some(started_at)) => Some(RunKey { started_at, id }),
        (None, None) => None,
        _ => {
            return Err(ApiError::Coded {
                code: codes::INVALID_QUERY,
                message: "`after` and `after_started_at` go together: both from the previous page's `next`".into(),
                details: Value::Null,
            });
        }
    };
    let agent = if who.is_agent() {
        Some(who.name.clone())
    } else {
        p.agent
    };
    let filter = RunFilter {
        agent,
        status: p.status,
        after,
        ..RunFilter::default()
    };
    let page = blocking(&state, move |rt| {
        let mut page = rt.recorder().page(&filter, limit)?;
        if who.is_agent() {
            // Its own agent's runs, less those outside its scope (a credential whose scope
            // narrowed): the page may come out short, `next` still leads on.
            page.runs.retain(|r| {
                rt.run_owner(&r.id)
                    .is_ok_and(|(agent, scope)| who.reaches_run(&r.id, &agent, &scope).is_ok())
            });
        }
        Ok(page)
    })
    .await?;
    Ok(Json(json!(page)))
}

/// A run: header, summary, governing envelopes.
#[utoipa::path(get, path = "/v1/runs/{run_id}", tag = "runs",
    params(("run_id" = String, Path, description = "Run id")),
    responses(
        (status = 200, description = "The run", body = crate::runtime::RunView),
        (status = 404, description = "No such run", body = super::ErrorBody),
    ))]
async fn get_run(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(run): ApiPath<String>,
) -> Result<Json<crate::runtime::RunView>, ApiError> {
    caller.reach_run(&state.runtime, &run)?;
    let view = blocking(&state, move |rt| rt.run_view(&run)).await?;
    Ok(Json(view))
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
        (status = 201, description = "The step's index", body = StepAdded),
        (status = 404, description = "No such run", body = super::ErrorBody),
        (status = 409, description = "The run is finished", body = super::ErrorBody),
    ))]
async fn add_step(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(run): ApiPath<String>,
    ApiJson(body): ApiJson<StepBody>,
) -> Result<(axum::http::StatusCode, Json<StepAdded>), ApiError> {
    caller.reach_run(&state.runtime, &run)?;
    let step = blocking(&state, move |rt| {
        rt.add_step(&run, &body.name, body.agent.as_deref())
    })
    .await?;
    Ok((axum::http::StatusCode::CREATED, Json(StepAdded { step })))
}

/// A step added.
#[derive(Debug, serde::Serialize, ToSchema)]
pub(super) struct StepAdded {
    /// Its index in the run.
    step: u32,
}

/// Events appended.
#[derive(Debug, serde::Serialize, ToSchema)]
pub(super) struct EventsAppended {
    /// Each event's sequence number and hash, in order.
    appended: Vec<crate::recorder::write::Appended>,
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
        (status = 201, description = "Each event's sequence number and hash", body = EventsAppended),
        (status = 422, description = "An unknown kind, or one only the gateway records", body = super::ErrorBody),
        (status = 409, description = "The run is finished", body = super::ErrorBody),
    ))]
async fn append_events(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(run): ApiPath<String>,
    ApiJson(body): ApiJson<EventsBody>,
) -> Result<(axum::http::StatusCode, Json<EventsAppended>), ApiError> {
    caller.reach_run(&state.runtime, &run)?;
    let appended = blocking(&state, move |rt| rt.append_events(&run, body.events)).await?;
    Ok((
        axum::http::StatusCode::CREATED,
        Json(EventsAppended { appended }),
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
        (status = 200, description = "The compiled context, every item's outcome with its receipt, and the explanation", body = crate::runtime::CompileAnswer),
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
        (status = 200, description = "The finished run", body = crate::runtime::RunView),
        (status = 409, description = "Already finished", body = super::ErrorBody),
    ))]
async fn finish_run(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(run): ApiPath<String>,
    ApiJson(body): ApiJson<FinishBody>,
) -> Result<Json<crate::runtime::RunView>, ApiError> {
    caller.reach_run(&state.runtime, &run)?;
    let view = blocking(&state, move |rt| rt.finish_run(&run, &body.status)).await?;
    Ok(Json(view))
}
