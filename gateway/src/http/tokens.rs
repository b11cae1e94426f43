//! `/v1/tokens` and `/v1/audit`: an admin creates, lists and revokes credentials, and reads
//! what approvers and admins did. The same as `tollgate tokens` and `tollgate audit`.

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
use super::{ApiError, ApiJson, ApiPath, ApiQuery, AppState};
use crate::auth::PrincipalKind;
use crate::auth::audit;
use crate::auth::tokens::{self, NewToken, TokenError};

/// The routes of this resource.
pub(super) fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(create_token, list_tokens))
        .routes(routes!(revoke_token))
        .routes(routes!(audit_log))
}

/// What a new token is for.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct NewTokenBody {
    /// `agent`, `approver` or `admin`.
    #[schema(schema_with = kinds)]
    kind: String,
    /// The agent's name (agents) or the person's.
    #[schema(pattern = r"^[A-Za-z0-9_.:@-]{1,128}$")]
    name: String,
    /// Agents: the scope every run they open must lie within.
    #[serde(default)]
    max_scope: Option<String>,
    /// Agents: the highest clearance of their runs.
    #[serde(default)]
    #[schema(schema_with = clearance)]
    max_clearance: Option<Level>,
    /// How long it works: `30d`, `12h`, `45m`, `90s` (default: until revoked).
    #[serde(default)]
    #[schema(pattern = r"^[1-9][0-9]{0,8}[dhms]$")]
    expires_in: Option<String>,
}

fn kinds() -> utoipa::openapi::Object {
    crate::schemas::one_of(
        "The kind of principal: `agent`, `approver` or `admin`.",
        &["agent", "approver", "admin"],
    )
}

fn clearance() -> utoipa::openapi::Object {
    crate::schemas::or_null(crate::schemas::level(
        "Agents: the highest clearance of the runs they open.",
    ))
}

/// Runs `f` on the blocking pool; its token and store errors become answers.
async fn on_store<T, F>(state: &AppState, f: F) -> Result<T, ApiError>
where
    T: Send + 'static,
    F: FnOnce(&crate::runtime::Runtime) -> Result<T, ApiError> + Send + 'static,
{
    let runtime = state.runtime.clone();
    tokio::task::spawn_blocking(move || f(&runtime))
        .await
        .map_err(|e| ApiError::Internal(format!("a blocking task failed: {e}")))?
}

impl From<TokenError> for ApiError {
    fn from(e: TokenError) -> ApiError {
        match e {
            TokenError::Invalid(m) => ApiError::new(codes::INVALID_TOKEN_REQUEST, m),
            TokenError::NotFound(id) => ApiError::NotFound(format!("no token `{id}`")),
            TokenError::Store(s) => s.into(),
        }
    }
}

/// Creates a token. Its text is in this answer only: it is stored as a keyed hash.
#[utoipa::path(post, path = "/v1/tokens", tag = "tokens",
    request_body = NewTokenBody,
    responses(
        (status = 201, description = "`{\"token\": \"tg_…\" (shown once), \"record\": {id, kind, name, max_scope, max_clearance, created_at, created_by, expires_at_ms}}`", body = Object),
        (status = 422, description = "An unknown kind, a name that is not plain, bounds on a token that is not an agent's, or a bad duration", body = super::ErrorBody),
    ))]
async fn create_token(
    State(state): State<AppState>,
    Caller(by): Caller,
    ApiJson(body): ApiJson<NewTokenBody>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let Some(key) = state.token_key.clone() else {
        return Err(ApiError::Conflict(
            "this gateway was started without a token key, so it cannot issue tokens".into(),
        ));
    };
    let kind = PrincipalKind::parse(&body.kind).ok_or_else(|| {
        ApiError::new(
            codes::INVALID_TOKEN_REQUEST,
            format!(
                "`{}` is not a kind: use `agent`, `approver` or `admin`",
                body.kind
            ),
        )
    })?;
    let now_ms = state.runtime.now_ms();
    let expires_at_ms = match &body.expires_in {
        None => None,
        Some(text) => Some(
            tokens::parse_duration_ms(text)
                .and_then(|d| now_ms.checked_add(d))
                .ok_or_else(|| {
                    ApiError::new(
                        codes::INVALID_TOKEN_REQUEST,
                        format!("`{text}` is not a duration: write `30d`, `12h`, `45m` or `90s`"),
                    )
                })?,
        ),
    };
    let new = NewToken {
        kind,
        name: body.name,
        max_scope: body.max_scope,
        max_clearance: body.max_clearance,
        expires_at_ms,
    };
    let (record, text) = on_store(&state, move |rt| {
        Ok(tokens::create(
            rt.store(),
            &key,
            &new,
            &by,
            &rt.now_rfc3339(),
        )?)
    })
    .await?;
    Ok((
        StatusCode::CREATED,
        Json(json!({"token": text, "record": record})),
    ))
}

/// Every token, newest first; never their secrets.
#[utoipa::path(get, path = "/v1/tokens", tag = "tokens",
    responses((status = 200, description = "`{\"tokens\": [{id, kind, name, max_scope, max_clearance, created_at, created_by, expires_at_ms, revoked_at, revoked_by}]}`", body = Object)))]
async fn list_tokens(State(state): State<AppState>) -> Result<Json<Value>, ApiError> {
    let list = on_store(&state, |rt| Ok(tokens::list(rt.store())?)).await?;
    Ok(Json(json!({ "tokens": list })))
}

/// Revokes a token: its next use is refused, in every gateway sharing the store.
#[utoipa::path(post, path = "/v1/tokens/{id}/revoke", tag = "tokens",
    params(("id" = String, Path, description = "The token's id (`tok_…`)")),
    responses(
        (status = 200, description = "`{\"record\": {..., revoked_at, revoked_by}}`", body = Object),
        (status = 404, description = "No such token", body = super::ErrorBody),
    ))]
async fn revoke_token(
    State(state): State<AppState>,
    Caller(by): Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<Value>, ApiError> {
    let record = on_store(&state, move |rt| {
        Ok(tokens::revoke(rt.store(), &id, &by, &rt.now_rfc3339())?)
    })
    .await?;
    Ok(Json(json!({ "record": record })))
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct AuditParams {
    /// Entries before this `seq` (the next page of a previous answer).
    #[param(minimum = 1)]
    before: Option<i64>,
    /// At most this many (default 100, at most 1000).
    #[param(minimum = 1, maximum = 1000)]
    limit: Option<u32>,
}

/// What approvers and admins did, newest first: who, what, on what, with what answer.
#[utoipa::path(get, path = "/v1/audit", tag = "tokens",
    params(AuditParams),
    responses((status = 200, description = "`{\"entries\": [{seq, at, principal, kind, name, action, target, status}]}`", body = Object)))]
async fn audit_log(
    State(state): State<AppState>,
    ApiQuery(p): ApiQuery<AuditParams>,
) -> Result<Json<Value>, ApiError> {
    let limit = super::page_limit(p.limit, 100, 1000)?;
    if let Some(before) = p.before.filter(|b| *b < 1) {
        return Err(ApiError::new(
            codes::INVALID_QUERY,
            format!("`before` is {before}; it is a `seq` of the log, from 1"),
        ));
    }
    let runtime = state.runtime.clone();
    let entries =
        tokio::task::spawn_blocking(move || audit::page(runtime.store(), p.before, limit))
            .await
            .map_err(|e| ApiError::Internal(format!("a blocking task failed: {e}")))??;
    Ok(Json(json!({ "entries": entries })))
}
