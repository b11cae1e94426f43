//! Tool calls and approvals for agents: `POST /v1/runs/{run_id}/tool-calls` decides a call
//! before the agent executes it; `GET /v1/approvals/{id}?wait=SECONDS` long-polls an approval
//! until a human decides it (or the wait ends); `GET /v1/approvals` lists them.

use std::time::Duration;

use axum::Json;
use axum::extract::State;
use serde::Deserialize;
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::access::Caller;
use super::security::{CredentialsSeen, presented_token};
use super::{ApiError, ApiJson, ApiPath, ApiQuery, AppState, blocking, query_enum};
use crate::approvals::{self, ApprovalFilter, ApprovalState};
use crate::runtime::{RuntimeError, ToolCallAnswer, ToolCallRequest};

/// The longest a long poll waits.
pub const MAX_WAIT_SECONDS: u64 = 60;

/// The routes of this resource.
pub(super) fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(tool_call))
        .routes(routes!(list_approvals))
        .routes(routes!(get_approval))
}

/// How a tool call is answered.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(super) struct ToolCallQuery {
    /// `true`: the answer's decision carries its proof and why-not (deciding costs more). The
    /// receipt is recorded without them either way; reading it renders them.
    #[serde(default)]
    explain: bool,
}

/// Decides a tool call before the agent executes it, and records it.
///
/// The answer's `effect` is `allow` (execute), `redact` (execute with the returned
/// `arguments`, secrets replaced), `deny`, `rate_limited` (retry after `retry_after` seconds)
/// or `require_approval` (wait on `approval.id`, then ask again with `approval_id`). Every
/// answer carries the decision (effect, deciding rules, envelope versions, input hash) and a
/// receipt (the recorded event); its proof and why-not are rendered when the receipt is read
/// (`GET /v2/policies/decisions/{run_id}?seq=SEQ`), or inline with `?explain=true`.
#[utoipa::path(post, path = "/v1/runs/{run_id}/tool-calls", tag = "tools",
    params(("run_id" = String, Path, description = "Run id"), ToolCallQuery),
    request_body = ToolCallRequest,
    responses(
        (status = 200, description = "The decision, what to do, and the receipt", body = ToolCallAnswer),
        (status = 404, description = "No such run or approval", body = super::ErrorBody),
        (status = 409, description = "The approval given does not authorise this call (other arguments, used, expired), or the run is finished", body = super::ErrorBody),
        (status = 422, description = "Invalid call", body = super::ErrorBody),
    ))]
async fn tool_call(
    State(state): State<AppState>,
    caller: Caller,
    seen: Option<axum::Extension<CredentialsSeen>>,
    headers: axum::http::HeaderMap,
    ApiPath(run): ApiPath<String>,
    ApiQuery(q): ApiQuery<ToolCallQuery>,
    ApiJson(mut body): ApiJson<ToolCallRequest>,
) -> Result<Json<ToolCallAnswer>, ApiError> {
    caller.reach_run(&state.runtime, &run)?;
    body.explain = q.explain;
    body.credentials_seen = seen.map(|axum::Extension(CredentialsSeen(n))| n);
    match decide_and_record(&state, &run, &body).await? {
        // A token was revoked after the caller's was verified (kept in memory, `auth::verified`):
        // nothing was recorded. Read the caller's token again; while it stands for the same
        // principal, decide again as a call whose token was just read.
        Err(RuntimeError::CredentialsChanged(now)) => {
            state.verified.forget_before(now);
            let again = {
                let state = state.clone();
                let given = presented_token(&headers).to_owned();
                tokio::task::spawn_blocking(move || state.authenticate(&given))
                    .await
                    .map_err(|e| ApiError::Internal(format!("a blocking task failed: {e}")))??
            };
            if again.as_ref() != Some(&caller.0) {
                return Err(ApiError::WrongToken);
            }
            body.credentials_seen = None;
            Ok(Json(decide_and_record(&state, &run, &body).await??))
        }
        answered => Ok(Json(answered?)),
    }
}

/// Decides and records a tool call. A run whose engine is cached is decided on this thread
/// (tens of microseconds of CPU, a read only for a rate limit or an approval) and its write
/// awaited: two thread switches a call instead of four (`benches/load`). The first call of a
/// run builds its engine, which takes milliseconds, on the blocking pool.
async fn decide_and_record(
    state: &AppState,
    run: &str,
    body: &ToolCallRequest,
) -> Result<Result<ToolCallAnswer, RuntimeError>, ApiError> {
    let runtime = state.runtime.clone();
    if runtime.engine_cached(run) {
        return Ok(runtime.tool_call_async(run, body).await);
    }
    let (run, body) = (run.to_owned(), body.clone());
    tokio::task::spawn_blocking(move || runtime.tool_call(&run, body))
        .await
        .map_err(|e| ApiError::Internal(format!("a blocking task failed: {e}")))
}

/// Filters for the approval list.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(super) struct ApprovalQuery {
    /// Only this run's.
    run: Option<String>,
    /// Only in this state.
    #[param(schema_with = approval_states)]
    state: Option<String>,
}

fn approval_states() -> utoipa::openapi::Object {
    crate::schemas::one_of(
        "Only in this state.",
        &["pending", "approved", "rejected", "used", "expired"],
    )
}

/// Lists approvals, oldest first.
#[utoipa::path(get, path = "/v1/approvals", tag = "tools",
    params(ApprovalQuery),
    responses(
        (status = 200, description = "The approvals", body = ApprovalList),
        (status = 422, description = "Unknown state", body = super::ErrorBody),
    ))]
async fn list_approvals(
    State(state): State<AppState>,
    caller: Caller,
    ApiQuery(q): ApiQuery<ApprovalQuery>,
) -> Result<Json<ApprovalList>, ApiError> {
    if let Some(run) = &q.run {
        caller.reach_run(&state.runtime, run)?;
    }
    let wanted = query_enum(
        q.state,
        "an approval state",
        "pending, approved, rejected, used or expired",
    )?;
    let now = state.runtime.now_ms();
    let filter = ApprovalFilter {
        run: q.run,
        state: wanted,
        // An agent lists only its own runs' approvals.
        agent: caller.0.is_agent().then(|| caller.0.name.clone()),
    };
    let list = blocking(&state, move |rt| {
        let mut list = approvals::list(rt.store(), &filter, now)?;
        if caller.0.is_agent() {
            let mut reached = std::collections::HashMap::new();
            list.retain(|a| {
                *reached
                    .entry(a.run.clone())
                    .or_insert_with(|| caller.reach_run(rt, &a.run).is_ok())
            });
        }
        Ok(list)
    })
    .await?;
    Ok(Json(ApprovalList { approvals: list }))
}

/// Approvals, oldest first.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub(super) struct ApprovalList {
    /// The approvals.
    approvals: Vec<approvals::Approval>,
}

/// Long-poll parameters.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(super) struct WaitQuery {
    /// Seconds to wait while the approval is pending (0 to 60; default 0).
    wait: Option<u64>,
}

/// An approval; with `wait`, answers as soon as it is decided (or expires), or when the wait
/// ends with it still pending.
#[utoipa::path(get, path = "/v1/approvals/{id}", tag = "tools",
    params(("id" = String, Path, description = "Approval id"), WaitQuery),
    responses(
        (status = 200, description = "The approval", body = approvals::Approval),
        (status = 404, description = "No such approval", body = super::ErrorBody),
    ))]
async fn get_approval(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
    ApiQuery(q): ApiQuery<WaitQuery>,
) -> Result<Json<approvals::Approval>, ApiError> {
    let mut reached = !caller.0.is_agent();
    let wait = Duration::from_secs(q.wait.unwrap_or(0).min(MAX_WAIT_SECONDS));
    let deadline = tokio::time::Instant::now() + wait;
    let runtime = state.runtime.clone();
    let _watching = (!wait.is_zero()).then(|| runtime.approval_waits.open());
    loop {
        // Register interest before reading, so a decision between the read and the wait
        // is not missed.
        let notified = runtime.approval_waits.changed();
        let now = runtime.now_ms();
        let key = id.clone();
        let approval = blocking(&state, move |rt| rt.approval_for_wait(&key, now)).await?;
        if !reached {
            // Another agent's approval is answered as if it did not exist.
            caller
                .reach_run(&state.runtime, &approval.run)
                .map_err(|_| ApiError::NotFound(format!("no approval `{id}`")))?;
            reached = true;
        }
        if approval.state != ApprovalState::Pending || tokio::time::Instant::now() >= deadline {
            return Ok(Json(approval));
        }
        // Decisions made by this gateway wake the wait at once; those made by another
        // gateway or a command on the same database, when the watcher next reads
        // (`runtime::approval_waits`); and the wait looks again every 250 ms whatever happens.
        let _ = tokio::time::timeout_at(
            deadline.min(tokio::time::Instant::now() + Duration::from_millis(250)),
            notified,
        )
        .await;
    }
}
