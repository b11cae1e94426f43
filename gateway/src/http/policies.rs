//! `/v2/policies`: the Policy Envelopes module — store envelope versions (YAML or JSON),
//! read them and their diffs, dry-run one on a recorded run, list a run's decisions with
//! their receipts, and approve or reject a gated action.

use crate::codes::http as codes;
use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use serde::Deserialize;
use serde_json::{Value, json};
use tollgate_rules::envelope::diff_envelopes;
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::access::Caller;
use super::{ApiError, ApiJson, ApiPath, ApiQuery, AppState, blocking, query_enum};
use crate::approvals::{self, ApprovalAnswer};
use crate::policy::{list_versions, store_envelopes, version_source};
use crate::runtime::DecisionFilter;

/// The routes of this resource.
pub(super) fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(store, list_envelopes))
        .routes(routes!(get_envelope))
        .routes(routes!(diff))
        .routes(routes!(simulate_on_run))
        .routes(routes!(decisions))
        .routes(routes!(decide_approval))
}

/// Creates or updates envelopes: the body is YAML (one or more documents) or JSON (one
/// envelope, or an array). Validated as one set with the envelopes already stored, all or
/// nothing; a changed envelope needs a higher `version`. Answers the versions stored and what
/// changed, rule by rule.
#[utoipa::path(post, path = "/v2/policies/envelopes", tag = "policies",
    request_body(content = Object, description = "An envelope as YAML (`application/yaml`; several documents for several envelopes) or JSON (an envelope, or an array). Documented as the mapping the YAML holds, which is how a client writes it", content_type = "application/yaml"),
    responses(
        (status = 201, description = "`{\"stored\": [...], \"changes\": {...}, \"runs_behind\": [{run, pinned}]}`: the versions stored, what changed rule by rule, and the running runs that stay on an earlier version until re-pinned", body = Object),
        (status = 200, description = "Nothing new: every envelope was stored already", body = Object),
        (status = 422, description = "Invalid envelopes, with line, column and help per problem in `details`", body = super::ErrorBody),
        (status = 409, description = "A changed envelope reuses or lowers a stored version", body = super::ErrorBody),
    ))]
async fn store(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let text = String::from_utf8(body.to_vec())
        .map_err(|_| ApiError::new(codes::UNREADABLE_BODY, "the body is not UTF-8 text"))?;
    let is_json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    // JSON is YAML; an array of envelopes becomes one document per envelope.
    let text = if is_json {
        let value: Value = serde_json::from_str(&text).map_err(|e| {
            ApiError::new(
                codes::MALFORMED_JSON,
                format!("the body is not valid JSON: {e}"),
            )
        })?;
        match value {
            Value::Array(items) => items
                .iter()
                .map(|i| format!("---\n{}\n", i))
                .collect::<String>(),
            other => other.to_string(),
        }
    } else {
        text
    };
    let (stored, changes, behind) = blocking(&state, move |rt| {
        let before = rt.envelopes()?;
        let stored = store_envelopes(rt.store(), &[("request".to_string(), text)])?;
        rt.reload_envelopes()?;
        let changes = diff_envelopes(&before, &*rt.envelopes()?);
        let behind = runs_behind(rt, &stored)?;
        Ok((stored, changes, behind))
    })
    .await?;
    let status = if stored.iter().any(|s| s.new) {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((
        status,
        Json(json!({ "stored": stored, "changes": changes, "runs_behind": behind })),
    ))
}

/// The running runs pinned to an earlier version of an envelope just stored: they stay on it
/// until re-pinned (`POST /v2/policies/envelopes/{id}/repin`).
fn runs_behind(
    rt: &crate::runtime::Runtime,
    stored: &[crate::policy::Stored],
) -> Result<Vec<Value>, crate::runtime::RuntimeError> {
    let new: Vec<_> = stored
        .iter()
        .filter(|s| s.new)
        .map(|s| &s.version)
        .collect();
    if new.is_empty() {
        return Ok(Vec::new());
    }
    let running = crate::policy::pins::running(rt.store())?;
    Ok(running
        .into_iter()
        .filter_map(|(run, labels)| {
            let earlier: Vec<&String> = labels
                .iter()
                .filter(|l| {
                    new.iter().any(|v| {
                        l.strip_prefix(&format!("{}@", v.id))
                            .is_some_and(|n| *n != v.version.to_string())
                    })
                })
                .collect();
            (!earlier.is_empty()).then(|| json!({ "run": run, "pinned": earlier }))
        })
        .collect())
}

/// Every stored envelope version, by id then version.
#[utoipa::path(get, path = "/v2/policies/envelopes", tag = "policies",
    responses((status = 200, description = "`{\"versions\": [{id, version, content_hash, created_at}]}`", body = Object)))]
async fn list_envelopes(State(state): State<AppState>) -> Result<Json<Value>, ApiError> {
    let versions = blocking(&state, |rt| Ok(list_versions(rt.store(), None)?)).await?;
    Ok(Json(json!({ "versions": versions })))
}

/// An envelope's versions and the source of its latest (or `?version=N`).
#[utoipa::path(get, path = "/v2/policies/envelopes/{id}", tag = "policies",
    params(("id" = String, Path, description = "Envelope id"), VersionQuery),
    responses(
        (status = 200, description = "`{\"id\", \"versions\", \"version\", \"source\", \"envelope\"}`", body = Object),
        (status = 404, description = "No such envelope or version", body = super::ErrorBody),
    ))]
async fn get_envelope(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
    ApiQuery(q): ApiQuery<VersionQuery>,
) -> Result<Json<Value>, ApiError> {
    let doc = blocking(&state, move |rt| {
        let versions = list_versions(rt.store(), Some(&id))?;
        let reference = match q.version {
            Some(v) => format!("{id}@{v}"),
            None => id.clone(),
        };
        let (label, source) = version_source(rt.store(), &reference)?;
        let set = rt.envelope_set_with(&id, &reference)?;
        Ok(json!({
            "id": id,
            "versions": versions,
            "version": label,
            "source": source,
            "envelope": set.get(&id),
        }))
    })
    .await?;
    Ok(Json(doc))
}

/// Which version.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(super) struct VersionQuery {
    /// A stored version number (default: the latest).
    version: Option<u32>,
}

/// Versions to compare.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(super) struct DiffQuery {
    /// The old version.
    from: u32,
    /// The new version (default: the latest).
    to: Option<u32>,
}

/// What changed between two stored versions of an envelope, rule by rule.
#[utoipa::path(get, path = "/v2/policies/envelopes/{id}/diff", tag = "policies",
    params(("id" = String, Path, description = "Envelope id"), DiffQuery),
    responses(
        (status = 200, description = "`{\"from\", \"to\", \"changes\"}`", body = Object),
        (status = 404, description = "No such version", body = super::ErrorBody),
    ))]
async fn diff(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
    ApiQuery(q): ApiQuery<DiffQuery>,
) -> Result<Json<Value>, ApiError> {
    let doc = blocking(&state, move |rt| {
        let (from, to, changes) = rt.envelope_diff(&id, q.from, q.to)?;
        Ok(json!({ "from": from, "to": to, "changes": changes }))
    })
    .await?;
    Ok(Json(doc))
}

/// What to simulate.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct SimulateBody {
    /// The recorded run to dry-run on.
    run_id: String,
    /// The candidate envelope as YAML or JSON text (default: the stored latest version of
    /// `{id}`). Its `id` must be `{id}`.
    #[serde(default)]
    envelope: Option<String>,
}

/// Dry-runs an envelope on a recorded run: what it would allow, deny or redact at each
/// compile, tool call and model call, compared with what the run recorded. Enforces nothing
/// and writes nothing.
#[utoipa::path(post, path = "/v2/policies/envelopes/{id}/simulate", tag = "policies",
    params(("id" = String, Path, description = "Envelope id")),
    request_body = SimulateBody,
    responses(
        (status = 200, description = "The simulation: every decision point, recorded and simulated, the changed ones with their new receipts", body = Object),
        (status = 404, description = "No such run or envelope", body = super::ErrorBody),
        (status = 422, description = "The candidate does not load with the run's envelopes", body = super::ErrorBody),
    ))]
async fn simulate_on_run(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
    ApiJson(body): ApiJson<SimulateBody>,
) -> Result<Json<Value>, ApiError> {
    let report = blocking(&state, move |rt| {
        rt.simulate_envelope(&id, &body.run_id, body.envelope, None)
    })
    .await?;
    let changed = report.changed().count();
    let mut doc = json!(report);
    if let Some(obj) = doc.as_object_mut() {
        obj.insert("changed".into(), json!(changed));
    }
    Ok(Json(doc))
}

/// Filters for a run's decisions.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(super) struct DecisionsQuery {
    /// Only with this effect.
    #[param(schema_with = effects)]
    effect: Option<String>,
    /// Only of this kind.
    #[param(schema_with = decision_kinds)]
    kind: Option<String>,
    /// Only those the event with this sequence number records.
    seq: Option<u64>,
    /// `true`: decisions as recorded, without rendering the proofs and why-nots of receipts
    /// recorded without them (cheaper for a long run).
    #[serde(default)]
    raw: bool,
}

fn effects() -> utoipa::openapi::Object {
    crate::schemas::one_of(
        "Only with this effect.",
        &[
            "allow",
            "deny",
            "redact",
            "require_approval",
            "rate_limited",
        ],
    )
}

fn decision_kinds() -> utoipa::openapi::Object {
    crate::schemas::one_of(
        "Only of this kind.",
        &["tool", "context", "model", "memory", "handoff"],
    )
}

/// Every decision of a run with its receipt: rule ids, proof (or why-not), envelope versions,
/// input hash, and the recorded event that holds it.
#[utoipa::path(get, path = "/v2/policies/decisions/{run_id}", tag = "policies",
    params(("run_id" = String, Path, description = "Run id"), DecisionsQuery),
    responses(
        (status = 200, description = "The run's decisions, in event order", body = RunDecisions),
        (status = 404, description = "No such run", body = super::ErrorBody),
        (status = 422, description = "Unknown effect or kind", body = super::ErrorBody),
    ))]
async fn decisions(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(run): ApiPath<String>,
    ApiQuery(q): ApiQuery<DecisionsQuery>,
) -> Result<Json<RunDecisions>, ApiError> {
    caller.reach_run(&state.runtime, &run)?;
    let effect = query_enum(
        q.effect,
        "an effect",
        "allow, deny, redact, require_approval or rate_limited",
    )?;
    let kind = query_enum(q.kind, "a kind", "tool, context, model, memory or handoff")?;
    let filter = DecisionFilter {
        effect,
        kind,
        seq: q.seq,
        raw: q.raw,
    };
    let key = run.clone();
    let list = blocking(&state, move |rt| rt.decisions(&key, &filter)).await?;
    Ok(Json(RunDecisions {
        run,
        decisions: list,
    }))
}

/// A run's decisions.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub(super) struct RunDecisions {
    /// The run.
    run: String,
    /// Its decisions, in event order.
    decisions: Vec<crate::runtime::RecordedDecision>,
}

/// A human's answer to a gated action.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct ApprovalBody {
    /// `approve` or `reject` (`approved` and `rejected` are read alike).
    #[schema(schema_with = approval_decisions)]
    decision: String,
    /// Why.
    #[serde(default)]
    reason: String,
}

fn approval_decisions() -> utoipa::openapi::Object {
    crate::schemas::one_of(
        "`approve` or `reject` (`approved` and `rejected` are read alike).",
        &["approve", "reject", "approved", "rejected"],
    )
}

/// Approves or rejects a gated action; recorded as an `approval` event of its run.
#[utoipa::path(post, path = "/v2/policies/approvals/{id}", tag = "policies",
    params(("id" = String, Path, description = "Approval id")),
    request_body = ApprovalBody,
    responses(
        (status = 200, description = "The approval, decided", body = crate::approvals::Approval),
        (status = 403, description = "The credential's principal is not an approver the rule names, or opened the run whose call it is (`self_approval`)", body = super::ErrorBody),
        (status = 404, description = "No such approval", body = super::ErrorBody),
        (status = 409, description = "Already decided, used or expired", body = super::ErrorBody),
        (status = 422, description = "`decision` is not approve or reject", body = super::ErrorBody),
    ))]
async fn decide_approval(
    State(state): State<AppState>,
    Caller(who): Caller,
    ApiPath(id): ApiPath<String>,
    ApiJson(body): ApiJson<ApprovalBody>,
) -> Result<Json<crate::approvals::Approval>, ApiError> {
    let approve = match body.decision.as_str() {
        "approve" | "approved" => true,
        "reject" | "rejected" => false,
        other => {
            return Err(ApiError::new(
                codes::INVALID_DECISION,
                format!("`{other}` is not a decision: use `approve` or `reject`"),
            ));
        }
    };
    // Who answers is the credential's principal, never a field of the body.
    let answer = ApprovalAnswer {
        approve,
        by: who.name,
        reason: body.reason,
        principal: Some(who.id),
    };
    let approval = blocking(&state, move |rt| {
        Ok(approvals::decide(
            rt.store(),
            &id,
            &answer,
            rt.now_ms(),
            &rt.now_rfc3339(),
        )?)
    })
    .await?;
    state.runtime.approval_waits.wake();
    Ok(Json(approval))
}
