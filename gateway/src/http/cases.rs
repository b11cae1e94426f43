//! `/cases` and `/packs`: the case-workflow service. Cases are read from the store whatever
//! their pack; only the cases of packs registered at startup (`TOLLGATE_PACK_ROOTS`) move —
//! evidence, proposals, previews, policy, approvals and commits go through the engine host, and
//! a case of another pack answers 403 `case_read_only` with how to register it.

use crate::codes::http as codes;
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::access::Caller;
use super::{ApiError, ApiJson, ApiPath, ApiQuery, AppState};
use crate::approvals::ApprovalAnswer;
use crate::cases::host::{EngineHost, Moved};
use crate::cases::inspect::{self, CaseGraph, Inspection};
use crate::cases::project::{self, ReplayHealth};
use crate::cases::{CaseError, CaseEvent};
use crate::packs::adapter::Mode;
use crate::packs::{ADAPTER_POLICY_VAR, PackRegistry};
use crate::runtime::Runtime;

/// The routes of these resources.
pub(super) fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_cases, open_case))
        .routes(routes!(get_case))
        .routes(routes!(inspection))
        .routes(routes!(timeline))
        .routes(routes!(graph))
        .routes(routes!(record_evidence))
        .routes(routes!(runtime_status))
        .routes(routes!(collect))
        .routes(routes!(propose, proposals))
        .routes(routes!(preview))
        .routes(routes!(policy))
        .routes(routes!(approval))
        .routes(routes!(commit))
        .routes(routes!(model_run))
        .routes(routes!(replay_health, replay_rebuild))
        .routes(routes!(list_packs))
        .routes(routes!(demo_case))
}

impl From<CaseError> for ApiError {
    fn from(e: CaseError) -> Self {
        match e {
            CaseError::Store(s) => s.into(),
            CaseError::NotFound(m) => ApiError::NotFound(m),
            CaseError::VersionConflict {
                case,
                expected,
                actual,
            } => {
                let message = CaseError::VersionConflict {
                    case: case.clone(),
                    expected,
                    actual,
                }
                .to_string();
                ApiError::with_details(
                    codes::VERSION_CONFLICT,
                    message,
                    json!({"case_id": case, "expected_version": expected, "version": actual}),
                )
            }
            CaseError::Conflict { code, message } => ApiError::new(code, message),
            CaseError::Refused {
                code,
                message,
                version,
            } => {
                ApiError::with_details(code, message, json!({"recorded": true, "version": version}))
            }
            CaseError::Invalid(m) => ApiError::new(codes::INVALID_CASE_REQUEST, m),
            CaseError::ReadOnly(m) => ApiError::Coded {
                code: codes::CASE_READ_ONLY,
                message: m,
                details: Value::Null,
            },
            CaseError::Adapter(a) => ApiError::new(codes::ADAPTER_FAILED, a.to_string()),
            CaseError::Evaluation(m) => ApiError::Internal(m),
        }
    }
}

fn process_env(k: &str) -> Option<String> {
    std::env::var(k).ok()
}

/// Runs `f` with an engine host off the async threads.
async fn hosting<T, F>(state: &AppState, f: F) -> Result<T, ApiError>
where
    T: Send + 'static,
    F: FnOnce(&EngineHost<'_>, &Runtime, &PackRegistry) -> Result<T, CaseError> + Send + 'static,
{
    let runtime = state.runtime.clone();
    let packs = state.packs.clone();
    tokio::task::spawn_blocking(move || {
        let host = EngineHost::new(&runtime, &packs, &process_env);
        f(&host, &runtime, &packs)
    })
    .await
    .map_err(|e| ApiError::Internal(format!("a blocking task failed: {e}")))?
    .map_err(ApiError::from)
}

fn created(m: Moved) -> (StatusCode, Json<Moved>) {
    let status = if m.duplicate {
        StatusCode::OK
    } else {
        StatusCode::CREATED
    };
    (status, Json(m))
}

/// Filters of the case list.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct ListQuery {
    /// Only this pack's cases.
    pack: Option<String>,
    /// At most this many (default 50, at most 500).
    #[param(minimum = 1, maximum = 500)]
    limit: Option<u32>,
}

/// Cases, most recently updated first.
#[utoipa::path(get, path = "/cases", tag = "cases", params(ListQuery),
    responses((status = 200, description = "`{\"cases\": [case rows]}`", body = Object)))]
async fn list_cases(
    State(state): State<AppState>,
    ApiQuery(q): ApiQuery<ListQuery>,
) -> Result<Json<Value>, ApiError> {
    let limit = u64::from(super::page_limit(q.limit, 50, 500)?);
    let cases = hosting(&state, move |_, rt, _| {
        Ok(inspect::list(rt.store(), q.pack.as_deref(), limit)?)
    })
    .await?;
    Ok(Json(json!({ "cases": cases })))
}

/// A case to open.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct OpenCase {
    /// The registered pack's engine id.
    engine_id: String,
    /// Its engine version.
    engine_version: String,
    /// A title (default: the input's `title`).
    #[serde(default)]
    title: Option<String>,
    /// The case input.
    #[serde(default)]
    #[schema(value_type = Object)]
    input: Map<String, Value>,
}

/// Opens a case of a registered pack.
#[utoipa::path(post, path = "/cases", tag = "cases", request_body = OpenCase,
    responses(
        (status = 201, description = "The case, opened", body = Moved),
        (status = 400, description = "The body is not JSON", body = super::ErrorBody),
        (status = 404, description = "No registered pack with that engine id and version", body = super::ErrorBody),
        (status = 422, description = "The body does not read", body = super::ErrorBody),
    ))]
async fn open_case(
    State(state): State<AppState>,
    ApiJson(body): ApiJson<OpenCase>,
) -> Result<(StatusCode, Json<Moved>), ApiError> {
    let m = hosting(&state, move |host, _, _| {
        host.open(
            &body.engine_id,
            &body.engine_version,
            body.title,
            body.input,
            "api",
        )
    })
    .await?;
    Ok(created(m))
}

/// A case's header and whether its pack can run here.
#[utoipa::path(get, path = "/cases/{case_id}", tag = "cases",
    params(("case_id" = String, Path, description = "The case")),
    responses(
        (status = 200, description = "`{\"case\", \"pack\": {engine, registered, guidance}}`", body = Object),
        (status = 404, description = "No such case", body = super::ErrorBody),
    ))]
async fn get_case(
    State(state): State<AppState>,
    ApiPath(case_id): ApiPath<String>,
) -> Result<Json<Value>, ApiError> {
    hosting(&state, move |_, rt, packs| {
        let (case, pack) = inspect::header(rt.store(), packs, &case_id)?;
        Ok(Json(json!({"case": case, "pack": pack})))
    })
    .await
}

/// The inspection's query.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct InspectionQuery {
    /// Recent timeline events to include (default 20).
    #[param(minimum = 1, maximum = 500)]
    timeline_limit: Option<u32>,
}

/// The compact inspection report: worker evidence, proposal actions, preview diffs, policy
/// status, commit status, replay health and the recent timeline.
#[utoipa::path(get, path = "/cases/{case_id}/inspection", tag = "cases",
    params(("case_id" = String, Path, description = "The case"), InspectionQuery),
    responses(
        (status = 200, description = "The inspection report", body = Inspection),
        (status = 404, description = "No such case", body = super::ErrorBody),
    ))]
async fn inspection(
    State(state): State<AppState>,
    ApiPath(case_id): ApiPath<String>,
    ApiQuery(q): ApiQuery<InspectionQuery>,
) -> Result<Json<Inspection>, ApiError> {
    let timeline_limit = match q.timeline_limit {
        None => None,
        limit => Some(u64::from(super::named_limit(
            "timeline_limit",
            limit,
            20,
            500,
        )?)),
    };
    hosting(&state, move |_, rt, packs| {
        inspect::inspect(rt.store(), packs, &case_id, timeline_limit).map(Json)
    })
    .await
}

/// A page of the timeline.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct TimelineQuery {
    /// Events after this version (default 0: from the start).
    after: Option<i64>,
    /// At most this many (default 100).
    #[param(minimum = 1, maximum = 500)]
    limit: Option<u32>,
}

/// A case's events, oldest first, with their hashes.
#[utoipa::path(get, path = "/cases/{case_id}/timeline", tag = "cases",
    params(("case_id" = String, Path, description = "The case"), TimelineQuery),
    responses(
        (status = 200, description = "`{\"events\": [...], \"next_after\"}`", body = Object),
        (status = 404, description = "No such case", body = super::ErrorBody),
    ))]
async fn timeline(
    State(state): State<AppState>,
    ApiPath(case_id): ApiPath<String>,
    ApiQuery(q): ApiQuery<TimelineQuery>,
) -> Result<Json<Value>, ApiError> {
    let limit = u64::from(super::page_limit(q.limit, 100, 500)?);
    let events: Vec<CaseEvent> = hosting(&state, move |_, rt, _| {
        inspect::timeline(rt.store(), &case_id, q.after.unwrap_or(0), limit)
    })
    .await?;
    let next = events.last().map(|e| e.version);
    Ok(Json(json!({"events": events, "next_after": next})))
}

/// The case graph: evidence, and each proposal's preview, policy, approval and commit.
#[utoipa::path(get, path = "/cases/{case_id}/graph", tag = "cases",
    params(("case_id" = String, Path, description = "The case")),
    responses(
        (status = 200, description = "Nodes and edges", body = CaseGraph),
        (status = 404, description = "No such case", body = super::ErrorBody),
    ))]
async fn graph(
    State(state): State<AppState>,
    ApiPath(case_id): ApiPath<String>,
) -> Result<Json<CaseGraph>, ApiError> {
    hosting(&state, move |_, rt, _| {
        inspect::graph(rt.store(), &case_id).map(Json)
    })
    .await
}

/// Evidence a caller collected, appended at the version it read.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct EvidenceAppend {
    /// The case version the caller read: the append is refused (409) if the case moved since.
    expected_version: i64,
    /// The caller's id for the event: the same id appended again stores nothing (200).
    #[serde(default)]
    event_id: Option<String>,
    /// A worker of the case's pack.
    worker: String,
    /// Keys the worker declares in `produces`.
    #[schema(value_type = Object)]
    evidence: Map<String, Value>,
}

/// Appends worker evidence with optimistic concurrency and an idempotent event id.
#[utoipa::path(post, path = "/cases/{case_id}/evidence", tag = "cases",
    params(("case_id" = String, Path, description = "The case")),
    request_body = EvidenceAppend,
    responses(
        (status = 201, description = "Appended", body = Moved),
        (status = 200, description = "The event id was appended before with the same content: nothing written", body = Moved),
        (status = 400, description = "The body is not JSON", body = super::ErrorBody),
        (status = 403, description = "The case's pack is not registered here (`case_read_only`)", body = super::ErrorBody),
        (status = 404, description = "No such case", body = super::ErrorBody),
        (status = 409, description = "The case is at another version (`version_conflict`, with the version), or the event id was used for other content", body = super::ErrorBody),
        (status = 422, description = "Not a worker of the pack, or keys it does not produce", body = super::ErrorBody),
    ))]
async fn record_evidence(
    State(state): State<AppState>,
    ApiPath(case_id): ApiPath<String>,
    ApiJson(body): ApiJson<EvidenceAppend>,
) -> Result<(StatusCode, Json<Moved>), ApiError> {
    let m = hosting(&state, move |host, _, _| {
        host.record_evidence(
            &case_id,
            body.expected_version,
            &body.worker,
            body.evidence,
            body.event_id,
            "api",
        )
    })
    .await?;
    Ok(created(m))
}

/// Whether the case's pack can run here, and its workers, capabilities and actions.
#[utoipa::path(get, path = "/cases/{case_id}/runtime", tag = "cases",
    params(("case_id" = String, Path, description = "The case")),
    responses(
        (status = 200, description = "`{\"pack\": {engine, registered, guidance}, \"workers\", \"capabilities\", \"actions\"}`", body = Object),
        (status = 404, description = "No such case", body = super::ErrorBody),
    ))]
async fn runtime_status(
    State(state): State<AppState>,
    ApiPath(case_id): ApiPath<String>,
) -> Result<Json<Value>, ApiError> {
    hosting(&state, move |_, rt, packs| {
        let (case, status) = inspect::header(rt.store(), packs, &case_id)?;
        let pack = packs.get(&case.engine_id, &case.engine_version);
        Ok(Json(json!({
            "pack": status,
            "workers": pack.as_ref().map(|p| p.workers.iter().map(|w| &w.id).collect::<Vec<_>>()),
            "capabilities": pack.as_ref().map(|p| &p.capabilities),
            "actions": pack.as_ref().map(|p| p.actions.iter().map(|a| json!({"id": a.id, "description": a.description, "real_adapter": a.real_adapter.is_some()})).collect::<Vec<_>>()),
        })))
    })
    .await
}

/// Runs every worker of the case's pack and records their evidence.
#[utoipa::path(post, path = "/cases/{case_id}/runtime/collect", tag = "cases",
    params(("case_id" = String, Path, description = "The case")),
    responses(
        (status = 201, description = "The evidence, recorded", body = Moved),
        (status = 403, description = "The case's pack is not registered here", body = super::ErrorBody),
        (status = 404, description = "No such case", body = super::ErrorBody),
        (status = 409, description = "The case moved meanwhile (`version_conflict`)", body = super::ErrorBody),
        (status = 422, description = "A worker recorded keys it does not declare", body = super::ErrorBody),
        (status = 502, description = "A worker's adapter failed (`adapter_failed`)", body = super::ErrorBody),
    ))]
async fn collect(
    State(state): State<AppState>,
    ApiPath(case_id): ApiPath<String>,
) -> Result<(StatusCode, Json<Moved>), ApiError> {
    let m = hosting(&state, move |host, _, _| host.collect(&case_id, "api")).await?;
    Ok(created(m))
}

/// A proposal to make.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct ProposeBody {
    /// A capability of the case's pack.
    capability: String,
}

/// Proposes a capability: its input and wording filled from the case input and evidence.
#[utoipa::path(post, path = "/cases/{case_id}/proposals", tag = "cases",
    params(("case_id" = String, Path, description = "The case")),
    request_body = ProposeBody,
    responses(
        (status = 201, description = "The proposal (`prop-N`)", body = Moved),
        (status = 400, description = "The body is not JSON", body = super::ErrorBody),
        (status = 403, description = "The case's pack is not registered here", body = super::ErrorBody),
        (status = 404, description = "No such case", body = super::ErrorBody),
        (status = 409, description = "Evidence the capability needs is missing (`evidence_missing`), or the case moved", body = super::ErrorBody),
        (status = 422, description = "No such capability", body = super::ErrorBody),
    ))]
async fn propose(
    State(state): State<AppState>,
    ApiPath(case_id): ApiPath<String>,
    ApiJson(body): ApiJson<ProposeBody>,
) -> Result<(StatusCode, Json<Moved>), ApiError> {
    let m = hosting(&state, move |host, _, _| {
        host.propose(&case_id, &body.capability, "api")
    })
    .await?;
    Ok(created(m))
}

/// The case's proposal actions.
#[utoipa::path(get, path = "/cases/{case_id}/proposals", tag = "cases",
    params(("case_id" = String, Path, description = "The case")),
    responses(
        (status = 200, description = "`{\"proposals\": [...]}`", body = Object),
        (status = 404, description = "No such case", body = super::ErrorBody),
    ))]
async fn proposals(
    State(state): State<AppState>,
    ApiPath(case_id): ApiPath<String>,
) -> Result<Json<Value>, ApiError> {
    hosting(&state, move |_, rt, _| {
        let id = case_id.clone();
        let p = rt.store().read(move |c| project::load_in(c, &id, false))?;
        if p.case.is_none() {
            return Err(inspect::not_found(&case_id));
        }
        Ok(Json(
            json!({"proposals": p.proposals.into_values().collect::<Vec<_>>()}),
        ))
    })
    .await
}

/// Previews a proposal through its action's adapter (dry run: nothing changes).
#[utoipa::path(post, path = "/cases/{case_id}/proposals/{proposal_id}/preview", tag = "cases",
    params(("case_id" = String, Path, description = "The case"), ("proposal_id" = String, Path, description = "The proposal")),
    responses(
        (status = 201, description = "The preview, recorded", body = Moved),
        (status = 403, description = "The case's pack is not registered here", body = super::ErrorBody),
        (status = 404, description = "No such case or proposal", body = super::ErrorBody),
        (status = 409, description = "The proposal is committed, or the case moved", body = super::ErrorBody),
        (status = 502, description = "The adapter failed", body = super::ErrorBody),
    ))]
async fn preview(
    State(state): State<AppState>,
    ApiPath((case_id, proposal_id)): ApiPath<(String, String)>,
) -> Result<(StatusCode, Json<Moved>), ApiError> {
    let m = hosting(&state, move |host, _, _| {
        host.preview(&case_id, &proposal_id, "api")
    })
    .await?;
    Ok(created(m))
}

/// Decides a previewed proposal: the pack's rules (with the proof) and the envelopes that
/// govern the case. An allowed proposal gets an approval bound to its preview.
#[utoipa::path(post, path = "/cases/{case_id}/proposals/{proposal_id}/policy", tag = "cases",
    params(("case_id" = String, Path, description = "The case"), ("proposal_id" = String, Path, description = "The proposal")),
    responses(
        (status = 201, description = "The decision, recorded (`detail.effect`: allow or deny)", body = Moved),
        (status = 403, description = "The case's pack is not registered here", body = super::ErrorBody),
        (status = 404, description = "No such case or proposal", body = super::ErrorBody),
        (status = 409, description = "No fresh preview to decide (`preview_required`, `out_of_order`), or the case moved", body = super::ErrorBody),
    ))]
async fn policy(
    State(state): State<AppState>,
    ApiPath((case_id, proposal_id)): ApiPath<(String, String)>,
) -> Result<(StatusCode, Json<Moved>), ApiError> {
    let m = hosting(&state, move |host, _, _| {
        host.decide(&case_id, &proposal_id, "api")
    })
    .await?;
    Ok(created(m))
}

/// A person's answer.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = CaseApprovalBody)]
struct ApprovalBody {
    /// Approve (`true`) or reject.
    approve: bool,
    /// Why.
    #[serde(default)]
    reason: String,
}

/// Approves or rejects a proposal's change as previewed; refused (409 `stale_preview`) when
/// the change would now differ from the preview.
#[utoipa::path(post, path = "/cases/{case_id}/proposals/{proposal_id}/approval", tag = "cases",
    params(("case_id" = String, Path, description = "The case"), ("proposal_id" = String, Path, description = "The proposal")),
    request_body = ApprovalBody,
    responses(
        (status = 201, description = "The answer, recorded", body = Moved),
        (status = 400, description = "The body is not JSON", body = super::ErrorBody),
        (status = 403, description = "The case's pack is not registered here", body = super::ErrorBody),
        (status = 404, description = "No such case or proposal", body = super::ErrorBody),
        (status = 409, description = "No approval is waiting, the preview is stale, or the case moved", body = super::ErrorBody),
    ))]
async fn approval(
    State(state): State<AppState>,
    Caller(who): Caller,
    ApiPath((case_id, proposal_id)): ApiPath<(String, String)>,
    ApiJson(body): ApiJson<ApprovalBody>,
) -> Result<(StatusCode, Json<Moved>), ApiError> {
    // Who answers is the credential's principal, never a field of the body.
    let answer = ApprovalAnswer {
        approve: body.approve,
        by: who.name,
        reason: body.reason,
        principal: Some(who.id),
    };
    let m = hosting(&state, move |host, _, _| {
        host.answer(&case_id, &proposal_id, &answer)
    })
    .await?;
    Ok(created(m))
}

/// How to commit.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct CommitBody {
    /// `dry_run` (default) or `real` (the server's operator allows it: `TOLLGATE_ALLOW_REAL_ADAPTERS=1`
    /// and `TOLLGATE_ADAPTER_POLICY` naming the adapter policy file, where the server starts).
    #[serde(default)]
    mode: Mode,
}

/// Commits an approved proposal through the engine host: apply, verify, compensation on
/// failure. Refused — and recorded — without approval, with a stale preview, when policy now
/// denies, or in real mode without `TOLLGATE_ALLOW_REAL_ADAPTERS=1` on the server and an
/// adapter policy (`TOLLGATE_ADAPTER_POLICY`) allowing the action.
#[utoipa::path(post, path = "/cases/{case_id}/proposals/{proposal_id}/commit", tag = "cases",
    params(("case_id" = String, Path, description = "The case"), ("proposal_id" = String, Path, description = "The proposal")),
    request_body(content = CommitBody, description = "Optional: `{}` commits in dry_run"),
    responses(
        (status = 201, description = "Committed (`state: committed`) or failed and compensated (`state: failed`)", body = Moved),
        (status = 400, description = "The body is not JSON", body = super::ErrorBody),
        (status = 403, description = "The case's pack is not registered here", body = super::ErrorBody),
        (status = 404, description = "No such case or proposal", body = super::ErrorBody),
        (status = 409, description = "Refused and recorded (`approval_required`, `stale_preview`, `policy_denied`, `policy_changed`, `real_adapters_off`, `adapter_policy_missing`, ...), already committed, or the case moved", body = super::ErrorBody),
        (status = 502, description = "The adapter failed before the commit started", body = super::ErrorBody),
    ))]
async fn commit(
    State(state): State<AppState>,
    ApiPath((case_id, proposal_id)): ApiPath<(String, String)>,
    body: Option<ApiJson<CommitBody>>,
) -> Result<(StatusCode, Json<Moved>), ApiError> {
    let body = body.map(|ApiJson(b)| b).unwrap_or_default();
    let m = hosting(&state, move |host, _, _| {
        // The operator's policy file, never one a client names.
        let policy = process_env(ADAPTER_POLICY_VAR).map(std::path::PathBuf::from);
        host.commit(&case_id, &proposal_id, body.mode, policy.as_deref(), "api")
    })
    .await?;
    Ok(created(m))
}

/// A model run's purpose.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct ModelRunBody {
    /// What the summary is for.
    #[serde(default)]
    purpose: Option<String>,
}

/// Asks the configured model provider for a summary of the case and records it (server-side;
/// without a provider key the deterministic fake provider answers and the event says so).
#[utoipa::path(post, path = "/cases/{case_id}/model-runs", tag = "cases",
    params(("case_id" = String, Path, description = "The case")),
    request_body(content = Option<ModelRunBody>, description = "Optional: the purpose"),
    responses(
        (status = 201, description = "The model run, recorded", body = Moved),
        (status = 400, description = "The body is not JSON", body = super::ErrorBody),
        (status = 404, description = "No such case", body = super::ErrorBody),
        (status = 409, description = "The case moved meanwhile", body = super::ErrorBody),
        (status = 422, description = "The model call failed", body = super::ErrorBody),
    ))]
async fn model_run(
    State(state): State<AppState>,
    ApiPath(case_id): ApiPath<String>,
    body: Option<ApiJson<Option<ModelRunBody>>>,
) -> Result<(StatusCode, Json<Moved>), ApiError> {
    // No body, or `null`, as the document says (Schemathesis found the body documented as
    // required while the handler took none).
    let purpose = body
        .and_then(|ApiJson(b)| b)
        .and_then(|b| b.purpose)
        .unwrap_or_else(|| "summarise the case for its reviewer".into());
    let m = hosting(&state, move |host, _, _| {
        host.model_run(&case_id, &purpose, "api")
    })
    .await?;
    Ok(created(m))
}

/// Replay health: the stored projections against a fresh replay of the events, and the chain.
#[utoipa::path(get, path = "/cases/{case_id}/replay", tag = "cases",
    params(("case_id" = String, Path, description = "The case")),
    responses(
        (status = 200, description = "`healthy`, or `drift` with every differing row", body = ReplayHealth),
        (status = 404, description = "No such case", body = super::ErrorBody),
    ))]
async fn replay_health(
    State(state): State<AppState>,
    ApiPath(case_id): ApiPath<String>,
) -> Result<Json<ReplayHealth>, ApiError> {
    hosting(&state, move |_, rt, _| {
        let id = case_id.clone();
        let (exists, health) = rt.store().read(move |c| {
            Ok((
                crate::cases::log::version_in(c, &id)? > 0,
                project::health_in(c, &id)?,
            ))
        })?;
        if !exists {
            return Err(inspect::not_found(&case_id));
        }
        Ok(Json(health))
    })
    .await
}

/// Rebuilds the case's projections from its events, then reports its health.
#[utoipa::path(post, path = "/cases/{case_id}/replay", tag = "cases",
    params(("case_id" = String, Path, description = "The case")),
    responses(
        (status = 200, description = "The health after the rebuild", body = ReplayHealth),
        (status = 404, description = "No such case", body = super::ErrorBody),
    ))]
async fn replay_rebuild(
    State(state): State<AppState>,
    ApiPath(case_id): ApiPath<String>,
) -> Result<Json<ReplayHealth>, ApiError> {
    hosting(&state, move |_, rt, _| {
        let id = case_id.clone();
        let health = rt.store().transact(move |c| {
            if crate::cases::log::version_in(c, &id)? == 0 {
                return Err(inspect::not_found(&id));
            }
            project::rebuild_case_in(c, &id)?;
            Ok(project::health_in(c, &id)?)
        })?;
        Ok(Json(health))
    })
    .await
}

/// The packs registered at startup, and the roots that could not be.
#[utoipa::path(get, path = "/packs", tag = "packs",
    responses((status = 200, description = "`{\"packs\": [{engine_id, engine_version, pack_id, kind, title, root, capabilities}], \"unregistered\": [{root, faults}]}`", body = Object)))]
async fn list_packs(State(state): State<AppState>) -> Json<Value> {
    let packs: Vec<Value> = state
        .packs
        .packs()
        .map(|p| {
            json!({
                "engine_id": p.manifest.engine_id,
                "engine_version": p.manifest.engine_version,
                "pack_id": p.manifest.pack_id,
                "kind": p.manifest.kind,
                "title": p.manifest.title,
                "description": p.manifest.description,
                "root": p.root.display().to_string(),
                "hash": p.hash,
                "capabilities": p.capabilities.iter().map(|c| &c.id).collect::<Vec<_>>(),
                "demo": p.manifest.demo.is_some(),
            })
        })
        .collect();
    Json(json!({"packs": packs, "unregistered": state.packs.unregistered()}))
}

/// Opens the pack's demo case and runs it up to approval (workers, proposal, preview,
/// policy); the case routes then run it on.
#[utoipa::path(post, path = "/packs/{engine_id}/{engine_version}/demo-case", tag = "packs",
    params(("engine_id" = String, Path, description = "The pack's engine id"), ("engine_version" = String, Path, description = "Its engine version")),
    responses(
        (status = 201, description = "The demo case, awaiting approval (or denied by policy)", body = Moved),
        (status = 404, description = "No registered pack with that engine id and version", body = super::ErrorBody),
        (status = 422, description = "The pack has no demo", body = super::ErrorBody),
        (status = 502, description = "An adapter failed", body = super::ErrorBody),
    ))]
async fn demo_case(
    State(state): State<AppState>,
    ApiPath((engine_id, engine_version)): ApiPath<(String, String)>,
) -> Result<(StatusCode, Json<Moved>), ApiError> {
    let m = hosting(&state, move |host, _, _| {
        host.demo(&engine_id, &engine_version, "api")
    })
    .await?;
    Ok(created(m))
}
