//! The MCP gateway's tool pins over HTTP (`mcp::pins`): the pinned tools with the changed
//! definitions waiting, and accepting one — by an approver or an admin, as themselves, for the
//! definition they read (its hash), never by an agent: accepting a definition lets its calls
//! through again.

use crate::codes::http as codes;
use axum::Json;
use axum::extract::State;
use serde::Deserialize;
use serde_json::{Value, json};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::access::Caller;
use super::{ApiError, ApiJson, ApiPath, ApiQuery, AppState};
use crate::mcp::pins::{self, AcceptError};

/// The routes of this resource.
pub(super) fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_pins))
        .routes(routes!(accept_pin))
}

/// Which pins to list.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(super) struct PinsQuery {
    /// Only the tools whose definition changed since it was accepted (default: false).
    #[serde(default)]
    changed: bool,
}

/// The tools the MCP gateway has pinned: each accepted definition, and the changed one waiting
/// for a person (its calls are refused meanwhile).
#[utoipa::path(get, path = "/v1/mcp/pins", tag = "mcp", params(PinsQuery),
    responses(
        (status = 200, description = "`{\"pins\": [{server, tool, hash, definition, accepted_by, accepted_at, changed?: {hash, definition, at}}]}`", body = Object),
    ))]
async fn list_pins(
    State(state): State<AppState>,
    ApiQuery(q): ApiQuery<PinsQuery>,
) -> Result<Json<Value>, ApiError> {
    let runtime = state.runtime.clone();
    let listed = tokio::task::spawn_blocking(move || pins::list(runtime.store(), q.changed))
        .await
        .map_err(|e| ApiError::Internal(format!("a blocking task failed: {e}")))??;
    Ok(Json(json!({ "pins": listed })))
}

/// What a person accepts.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct AcceptBody {
    /// The changed definition's hash as reviewed (or its first characters, at least 12):
    /// refused when the definition waiting has another.
    hash: String,
}

/// Accepts the changed definition of `SERVER.TOOL`, the one whose hash the caller read; its
/// calls go through again. Who accepted it is the caller's principal.
#[utoipa::path(post, path = "/v1/mcp/pins/{tool}/accept", tag = "mcp",
    params(("tool" = String, Path, description = "The tool, `SERVER.TOOL`")),
    request_body = AcceptBody,
    responses(
        (status = 200, description = "The pin as accepted now", body = Object),
        (status = 404, description = "No such pinned tool", body = super::ErrorBody),
        (status = 409, description = "Nothing waits to be accepted, or the definition waiting is not the one reviewed", body = super::ErrorBody),
        (status = 422, description = "The hash is shorter than 12 characters", body = super::ErrorBody),
    ))]
async fn accept_pin(
    State(state): State<AppState>,
    Caller(who): Caller,
    ApiPath(tool): ApiPath<String>,
    ApiJson(body): ApiJson<AcceptBody>,
) -> Result<Json<Value>, ApiError> {
    let Some((server, name)) = tool.split_once('.') else {
        return Err(ApiError::NotFound(format!(
            "no pinned tool `{tool}`: tools are named `SERVER.TOOL`"
        )));
    };
    if body.hash.len() < 12 {
        return Err(ApiError::new(
            codes::INVALID_HASH,
            "`hash` must give at least its first 12 characters, as `GET /v1/mcp/pins?changed=true` shows it",
        ));
    }
    let (server, name) = (server.to_string(), name.to_string());
    let runtime = state.runtime.clone();
    let by = who.name.clone();
    let accepted = tokio::task::spawn_blocking(move || {
        let at = runtime.now_rfc3339();
        pins::accept(runtime.store(), &server, &name, Some(&body.hash), &by, &at)
    })
    .await
    .map_err(|e| ApiError::Internal(format!("a blocking task failed: {e}")))?;
    match accepted {
        Ok(pin) => Ok(Json(json!(pin))),
        Err(e @ AcceptError::NotFound(_)) => Err(ApiError::NotFound(e.to_string())),
        Err(e @ (AcceptError::NothingChanged(_) | AcceptError::Stale { .. })) => {
            Err(ApiError::Conflict(e.to_string()))
        }
        Err(AcceptError::Store(e)) => Err(e.into()),
    }
}
