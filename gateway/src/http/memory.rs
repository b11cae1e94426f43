//! `/v2/memory`: the Memory Distiller module — distill a finished run (a background job),
//! search the memories a run could retrieve, read a memory with its sources, review history
//! and usage, promote (or pin) and expire one, and take feedback from those who used one.

use crate::codes::http as codes;
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::Deserialize;
use serde_json::{Value, json};
use tollgate_rules::envelope::Level;
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::access::Caller;
use super::{ApiError, ApiJson, ApiPath, ApiQuery, AppState, blocking};
use crate::jobs::{EnqueueOptions, JobQueue};
use crate::memory::{
    self, DISTILL_JOB, Decision, FeedbackVerdict, MemoryClass, MemoryFeedback, MemoryStatus,
    SearchQuery,
};
use crate::runtime::RuntimeError;

/// The routes of this resource.
pub(super) fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(distill))
        .routes(routes!(search_memories))
        .routes(routes!(get_memory))
        .routes(routes!(get_usage))
        .routes(routes!(promote))
        .routes(routes!(expire))
        .routes(routes!(feedback))
}

/// Enqueues the distillation of a finished run as a `memory.distill` job (the gateway's own
/// worker runs it; `tollgate memory distill RUN` does the same in the foreground). While a
/// distillation of the run is queued or running, asking again returns that job.
#[utoipa::path(post, path = "/v2/memory/distill/run/{run_id}", tag = "memory",
    params(("run_id" = String, Path, description = "A finished run")),
    responses(
        (status = 202, description = "`{\"job\": {id, kind, state, ...}}`: poll it with `tollgate jobs show ID`", body = Object),
        (status = 404, description = "No such run", body = super::ErrorBody),
        (status = 409, description = "The run is still running", body = super::ErrorBody),
    ))]
async fn distill(
    State(state): State<AppState>,
    ApiPath(run_id): ApiPath<String>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let job = blocking(&state, move |rt| {
        let header = rt.recorder().header(&run_id)?;
        if header.status == "running" {
            return Err(RuntimeError::Conflict(format!(
                "run `{run_id}` is still running: distill it once it has finished"
            )));
        }
        let queue = JobQueue::new(rt.store().clone());
        let options = EnqueueOptions {
            dedupe_key: Some(run_id.clone()),
            ..EnqueueOptions::default()
        };
        let id = queue
            .enqueue(DISTILL_JOB, json!({"run": run_id}), options)
            .map_err(|e| RuntimeError::Evaluation(e.to_string()))?;
        queue
            .get(id)
            .map_err(|e| RuntimeError::Evaluation(e.to_string()))
    })
    .await?;
    Ok((StatusCode::ACCEPTED, Json(json!({ "job": job }))))
}

/// A search: where from, as whom, and what.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct SearchParams {
    /// Where the searcher stands (`org:acme/repo:api`): the memories visible from there.
    #[param(required = true, pattern = r"\S")]
    scope: Option<String>,
    /// The searcher's clearance (default `internal`).
    #[param(schema_with = search_clearance)]
    clearance: Option<String>,
    /// As this agent (its envelopes' memory rules apply), and only memories from its runs.
    agent: Option<String>,
    /// Only memories from runs of this task.
    task: Option<String>,
    /// Only memories from runs opened for this user (the run's `metadata.user`).
    user: Option<String>,
    /// Only memories scoped to this repository.
    repo: Option<String>,
    /// Only this class.
    #[param(schema_with = memory_classes)]
    class: Option<String>,
    /// Text to rank by.
    q: Option<String>,
    /// At most this many hits (default 20).
    #[param(minimum = 1, maximum = 200)]
    limit: Option<u32>,
}

fn search_clearance() -> utoipa::openapi::Object {
    crate::schemas::level("The searcher's clearance (default `internal`).")
}

fn memory_classes() -> utoipa::openapi::Object {
    crate::schemas::one_of(
        "Only this class.",
        &["fact", "procedure", "preference", "warning", "summary"],
    )
}

/// Searches the memories a run at `scope` (as `agent`, with `clearance`) could retrieve: the
/// memory pack decides eligibility, the filters narrow, the text ranks. The answer counts what
/// policy withheld, by reason.
#[utoipa::path(get, path = "/v2/memory/search", tag = "memory",
    params(SearchParams),
    responses(
        (status = 200, description = "The hits, best first, how many memories are eligible, and what policy withheld by reason", body = crate::memory::SearchAnswer),
        (status = 422, description = "No scope, or a clearance or class that is not one", body = super::ErrorBody),
    ))]
async fn search_memories(
    State(state): State<AppState>,
    ApiQuery(p): ApiQuery<SearchParams>,
) -> Result<Json<crate::memory::SearchAnswer>, ApiError> {
    let clearance: Level = match p.clearance.as_deref() {
        None => Level::Internal,
        Some(c) => serde_json::from_value(Value::String(c.into())).map_err(|_| {
            ApiError::new(
                codes::INVALID,
                format!("`{c}` is not a clearance: use public, internal, confidential or secret"),
            )
        })?,
    };
    let class = match p.class.as_deref() {
        None => None,
        Some(c) => Some(MemoryClass::parse(c).ok_or_else(|| {
            ApiError::new(
                codes::INVALID,
                format!(
                    "`{c}` is not a class: use fact, procedure, preference, warning or summary"
                ),
            )
        })?),
    };
    let query = SearchQuery {
        scope: p.scope.unwrap_or_default(),
        clearance,
        agent: p.agent,
        task: p.task,
        user: p.user,
        repo: p.repo,
        class,
        text: p.q.unwrap_or_default(),
        limit: super::page_limit(p.limit, 20, 200)? as usize,
    };
    let answer = blocking(&state, move |rt| {
        let now = rt.now_ms().div_euclid(1000);
        Ok(memory::search(rt.store(), &*rt.envelopes()?, &query, now)?)
    })
    .await?;
    Ok(Json(answer))
}

/// A memory: class, text, scope, sensitivity, status, pinned, expiry, strength, usage, its
/// score by parts, every source (run, step, event) and its review history.
#[utoipa::path(get, path = "/v2/memory/{id}", tag = "memory",
    params(("id" = String, Path, description = "A memory id (`mem-…`)")),
    responses(
        (status = 200, description = "The memory", body = Object),
        (status = 404, description = "No such memory", body = super::ErrorBody),
    ))]
async fn get_memory(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<Value>, ApiError> {
    let m = blocking(&state, move |rt| Ok(memory::get(rt.store(), &id)?)).await?;
    Ok(Json(serde_json::to_value(m).unwrap_or(Value::Null)))
}

/// Every compile that used a memory (its `MemoryLink`s): run, `compile` event, why it was
/// chosen, when.
#[utoipa::path(get, path = "/v2/memory/{id}/usage", tag = "memory",
    params(("id" = String, Path, description = "A memory id (`mem-…`)")),
    responses(
        (status = 200, description = "`{\"memory\": ID, \"usage\": [{run, compile_seq, reason, at}]}`", body = Object),
        (status = 404, description = "No such memory", body = super::ErrorBody),
    ))]
async fn get_usage(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<Value>, ApiError> {
    let key = id.clone();
    let links = blocking(&state, move |rt| Ok(memory::usage(rt.store(), &key)?)).await?;
    Ok(Json(json!({ "memory": id, "usage": links })))
}

/// A reviewer's action on a memory.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct ReviewBody {
    /// Why.
    #[schema(pattern = r"\S")]
    reason: String,
    /// Also pin it, so it never decays.
    #[serde(default)]
    pin: bool,
}

/// Who expires a memory, and why.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct ExpireBody {
    /// Why.
    #[schema(pattern = r"\S")]
    reason: String,
}

/// Promotes a candidate (or a quarantined memory) to approved, recording who and why; with
/// `"pin": true` it is also pinned and never decays. Promoting an approved memory only pins it.
#[utoipa::path(post, path = "/v2/memory/{id}/promote", tag = "memory",
    params(("id" = String, Path, description = "A memory id (`mem-…`)")),
    request_body = ReviewBody,
    responses(
        (status = 200, description = "The memory, approved", body = Object),
        (status = 404, description = "No such memory", body = super::ErrorBody),
        (status = 409, description = "The memory is rejected or expired (final)", body = super::ErrorBody),
        (status = 422, description = "No reason", body = super::ErrorBody),
    ))]
async fn promote(
    State(state): State<AppState>,
    Caller(who): Caller,
    ApiPath(id): ApiPath<String>,
    ApiJson(body): ApiJson<ReviewBody>,
) -> Result<Json<Value>, ApiError> {
    let m = blocking(&state, move |rt| {
        let at = rt.now_rfc3339();
        let current = memory::get(rt.store(), &id)?;
        let m = if current.status == MemoryStatus::Approved && body.pin {
            current
        } else {
            memory::record_decision(
                rt.store(),
                &id,
                Decision::Accept,
                &who.name,
                &body.reason,
                &at,
            )?
        };
        if body.pin && !m.pinned {
            return Ok(memory::set_pinned(rt.store(), &m.id, true, &at)?);
        }
        Ok(m)
    })
    .await?;
    Ok(Json(serde_json::to_value(m).unwrap_or(Value::Null)))
}

/// Expires a memory now, recording who and why: it is never retrieved again.
#[utoipa::path(post, path = "/v2/memory/{id}/expire", tag = "memory",
    params(("id" = String, Path, description = "A memory id (`mem-…`)")),
    request_body = ExpireBody,
    responses(
        (status = 200, description = "The memory, expired", body = Object),
        (status = 404, description = "No such memory", body = super::ErrorBody),
        (status = 409, description = "The memory is rejected or expired already", body = super::ErrorBody),
        (status = 422, description = "No reason", body = super::ErrorBody),
    ))]
async fn expire(
    State(state): State<AppState>,
    Caller(who): Caller,
    ApiPath(id): ApiPath<String>,
    ApiJson(body): ApiJson<ExpireBody>,
) -> Result<Json<Value>, ApiError> {
    let m = blocking(&state, move |rt| {
        let at = rt.now_rfc3339();
        Ok(memory::record_decision(
            rt.store(),
            &id,
            Decision::Expire,
            &who.name,
            &body.reason,
            &at,
        )?)
    })
    .await?;
    Ok(Json(serde_json::to_value(m).unwrap_or(Value::Null)))
}

/// Feedback on a memory from someone who used it.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct FeedbackBody {
    /// `helpful`, `unhelpful` or `wrong` (which quarantines it).
    #[schema(schema_with = verdicts)]
    verdict: String,
    /// Why (required for `wrong`: it becomes the quarantine's reason).
    #[serde(default)]
    note: String,
    /// The run it was used in.
    #[serde(default)]
    run: Option<String>,
}

fn verdicts() -> utoipa::openapi::Object {
    crate::schemas::one_of(
        "`helpful`, `unhelpful` or `wrong` (which quarantines it).",
        &["helpful", "unhelpful", "wrong"],
    )
}

/// Records feedback on a memory: `helpful` and `unhelpful` move its rank a little; `wrong`
/// quarantines it until a person reviews it.
#[utoipa::path(post, path = "/v2/memory/{id}/feedback", tag = "memory",
    params(("id" = String, Path, description = "A memory id (`mem-…`)")),
    request_body = FeedbackBody,
    responses(
        (status = 200, description = "The memory, with its feedback", body = Object),
        (status = 404, description = "No such memory", body = super::ErrorBody),
        (status = 409, description = "The memory is rejected or expired", body = super::ErrorBody),
        (status = 422, description = "No verdict, or `wrong` without a note", body = super::ErrorBody),
    ))]
async fn feedback(
    State(state): State<AppState>,
    Caller(who): Caller,
    ApiPath(id): ApiPath<String>,
    ApiJson(body): ApiJson<FeedbackBody>,
) -> Result<Json<Value>, ApiError> {
    let verdict = FeedbackVerdict::parse(&body.verdict).ok_or_else(|| {
        ApiError::new(
            codes::INVALID,
            format!(
                "`{}` is not a feedback verdict: use helpful, unhelpful or wrong",
                body.verdict
            ),
        )
    })?;
    let m = blocking(&state, move |rt| {
        Ok(memory::give_feedback(
            rt.store(),
            &id,
            MemoryFeedback {
                verdict,
                by: who.name,
                note: body.note,
                run: body.run,
                at: rt.now_rfc3339(),
            },
        )?)
    })
    .await?;
    Ok(Json(serde_json::to_value(m).unwrap_or(Value::Null)))
}
