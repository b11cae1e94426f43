//! Re-pinning: a run decides under the envelope versions it opened with until an admin moves
//! it to the versions in force — one run (`/v1/runs/{run_id}/repin`), or every running run an
//! envelope governs (`/v2/policies/envelopes/{id}/repin`) after a new version was stored.
//! `?dry_run=true` says what would move and moves nothing.

use axum::Json;
use axum::extract::State;
use serde::Deserialize;
use serde_json::{Value, json};
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::access::Caller;
use super::{ApiError, ApiPath, ApiQuery, AppState, blocking};

/// The routes of this resource.
pub(super) fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(repin_run))
        .routes(routes!(repin_envelope))
}

/// Whether to only say what would move.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(super) struct RepinQuery {
    /// Say what would move, and move nothing (default: false).
    #[serde(default)]
    dry_run: bool,
}

/// Re-pins a running run to the envelope versions that govern it under those in force. Its
/// later decisions are made under them and name them; its earlier receipts keep theirs.
#[utoipa::path(post, path = "/v1/runs/{run_id}/repin", tag = "runs",
    params(("run_id" = String, Path, description = "Run id"), RepinQuery),
    responses(
        (status = 200, description = "`{\"run\", \"from\", \"to\", \"changed\", \"seq\"}`: the versions it was on and is on now (`changed: false`: nothing to move, nothing recorded)", body = Object),
        (status = 404, description = "No such run", body = super::ErrorBody),
        (status = 409, description = "The run has finished", body = super::ErrorBody),
    ))]
async fn repin_run(
    State(state): State<AppState>,
    Caller(who): Caller,
    ApiPath(run): ApiPath<String>,
    ApiQuery(q): ApiQuery<RepinQuery>,
) -> Result<Json<Value>, ApiError> {
    let done = blocking(&state, move |rt| rt.repin(&run, &who.id, q.dry_run)).await?;
    Ok(Json(json!(done)))
}

/// Re-pins every running run envelope `{id}` governs — under the versions it is pinned to or
/// under those in force — to the versions in force: how a new version reaches running runs.
#[utoipa::path(post, path = "/v2/policies/envelopes/{id}/repin", tag = "policies",
    params(("id" = String, Path, description = "Envelope id"), RepinQuery),
    responses(
        (status = 200, description = "`{\"envelope\", \"dry_run\", \"runs\": [{run, from, to, changed, seq}]}`", body = Object),
        (status = 404, description = "No such envelope", body = super::ErrorBody),
    ))]
async fn repin_envelope(
    State(state): State<AppState>,
    Caller(who): Caller,
    ApiPath(id): ApiPath<String>,
    ApiQuery(q): ApiQuery<RepinQuery>,
) -> Result<Json<Value>, ApiError> {
    let key = id.clone();
    let runs = blocking(&state, move |rt| {
        rt.repin_governed_by(&key, &who.id, q.dry_run)
    })
    .await?;
    Ok(Json(
        json!({ "envelope": id, "dry_run": q.dry_run, "runs": runs }),
    ))
}
