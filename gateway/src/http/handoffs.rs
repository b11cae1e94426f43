//! `/v2/handoffs`: the Handoff Contracts module — contracts posted (read against their
//! schema, then validated by the handoff pack; a refused one answers 403 with its problems and
//! is kept with its receipt), answered by the consumer, their deliveries checked, exported to
//! and imported from A2A messages, and the handoff graph of a run as JSON, DOT or SVG.

use crate::codes::http as codes;
use axum::Json;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Value, json};
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::access::Caller;
use super::{ApiError, ApiJson, ApiPath, ApiQuery, AppState, blocking};
use crate::handoff::contract::{self, JSON_SCHEMA};
use crate::handoff::store;
use crate::handoff::submit::Submitted;
use crate::handoff::{ConsumerAck, ContractState, HandoffContract, HandoffError, Template, a2a};
use crate::handoff::{graph, templates};
use crate::runtime::Runtime;

/// The routes of this resource.
pub(super) fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(schema))
        .routes(routes!(template))
        .routes(routes!(create_contract, list_contracts))
        .routes(routes!(get_contract))
        .routes(routes!(ack))
        .routes(routes!(check))
        .routes(routes!(export_a2a))
        .routes(routes!(import_a2a))
        .routes(routes!(graph_of))
}

impl From<HandoffError> for ApiError {
    fn from(e: HandoffError) -> Self {
        match e {
            HandoffError::Store(s) => s.into(),
            HandoffError::Recorder(r) => r.into(),
            HandoffError::Faults(f) => ApiError::Coded {
                code: codes::INVALID_CONTRACT,
                message: f.to_string(),
                details: json!({ "faults": f.0 }),
            },
            HandoffError::NotFound(m) => ApiError::NotFound(m),
            HandoffError::Invalid(m) => ApiError::new(codes::INVALID_HANDOFF, m),
            HandoffError::Conflict(m) => ApiError::Conflict(m),
            HandoffError::Evaluation(m) => ApiError::Internal(m),
        }
    }
}

/// Which side of a contract an agent's credential must be on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    /// The producer: its agent, reaching the producing run.
    Producer,
    /// The consumer: its agent.
    Consumer,
    /// Either.
    Either,
}

/// Refuses (403 `not_a_party`) an agent's credential that is not on `side` of a contract with
/// producer `(run, agent)` and consumer agent `consumer`; approvers and admins pass.
fn party(
    rt: &Runtime,
    who: &Caller,
    side: Side,
    (run, agent): (&str, Option<&str>),
    consumer: &str,
) -> Result<(), ApiError> {
    if !who.0.is_agent() {
        return Ok(());
    }
    let producer = agent.is_none_or(|a| a == who.0.name) && who.reach_run(rt, run).is_ok();
    let consuming = consumer == who.0.name;
    let ok = match side {
        Side::Producer => producer,
        Side::Consumer => consuming,
        Side::Either => producer || consuming,
    };
    if ok {
        return Ok(());
    }
    Err(ApiError::Coded {
        code: codes::NOT_A_PARTY,
        message: format!(
            "agent `{}` is not the {} of this handoff (producer run `{run}`, consumer `{consumer}`)\n  help: an agent posts contracts from its own runs and answers the ones handed to it",
            who.0.name,
            match side {
                Side::Producer => "producer",
                Side::Consumer => "consumer",
                Side::Either => "producer or consumer",
            }
        ),
        details: Value::Null,
    })
}

/// The stored contract `id`'s parties checked for `who`, before `f` runs.
async fn as_party<T, F>(
    state: &AppState,
    who: Caller,
    side: Side,
    id: String,
    f: F,
) -> Result<T, ApiError>
where
    T: Send + 'static,
    F: FnOnce(&Runtime, String) -> Result<T, HandoffError> + Send + 'static,
{
    blocking(state, move |rt| {
        Ok((|| {
            if who.0.is_agent() {
                let stored = store::get(rt.store(), &id, None)
                    .map_err(ApiError::from)?
                    .ok_or_else(|| ApiError::NotFound(format!("no contract `{id}`")))?;
                party(
                    rt,
                    &who,
                    side,
                    (&stored.producer_run, Some(&stored.producer_agent)),
                    &stored.consumer_agent,
                )?;
            }
            f(rt, id).map_err(ApiError::from)
        })())
    })
    .await?
}

/// Runs `f` off the async threads, its handoff errors answered in the one error shape.
async fn handing<T, F>(state: &AppState, f: F) -> Result<T, ApiError>
where
    T: Send + 'static,
    F: FnOnce(&Runtime) -> Result<T, HandoffError> + Send + 'static,
{
    blocking(state, move |rt| Ok(f(rt)))
        .await?
        .map_err(ApiError::from)
}

/// The contract's JSON Schema (`tollgate.handoff/v1`, draft 2020-12).
#[utoipa::path(get, path = "/v2/handoffs/schema", tag = "handoffs",
    responses((status = 200, description = "The JSON Schema every posted contract is read against", body = Object, content_type = "application/schema+json")))]
async fn schema() -> Response {
    (
        [(header::CONTENT_TYPE, "application/schema+json")],
        JSON_SCHEMA,
    )
        .into_response()
}

/// A template's starter contract (YAML, with placeholders): `lightweight`,
/// `code_patch_review`, `research_to_implementation`, `planner_to_executor`.
#[utoipa::path(get, path = "/v2/handoffs/templates/{name}", tag = "handoffs",
    params(("name" = String, Path, description = "The template")),
    responses(
        (status = 200, description = "The starter contract, as YAML (a mapping, which a client reads as an object)", body = Object, content_type = "application/yaml"),
        (status = 404, description = "No such template", body = super::ErrorBody),
    ))]
async fn template(ApiPath(name): ApiPath<String>) -> Result<Response, ApiError> {
    let t = Template::parse(&name).ok_or_else(|| {
        ApiError::NotFound(format!(
            "no template `{name}`: the templates are lightweight, code_patch_review, research_to_implementation, planner_to_executor"
        ))
    })?;
    Ok((
        [(header::CONTENT_TYPE, "application/yaml")],
        templates::starter(t),
    )
        .into_response())
}

/// The answer to a posted contract: 201 (a new version, validated), 200 (unchanged), 403
/// (refused by the handoff pack: stored with its problems and receipt).
/// A contract posted: the version stored (or the latest, unchanged).
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub(super) struct Posted {
    /// The version.
    contract: crate::handoff::store::StoredContract,
    /// `false` when the latest version already had this content (nothing was written).
    created: bool,
}

fn posted(s: Submitted) -> Result<(StatusCode, Json<Posted>), ApiError> {
    let body = json!({"contract": s.contract, "created": s.created});
    if s.contract.state == ContractState::Rejected {
        let problems: Vec<String> = s
            .contract
            .validation
            .problems
            .iter()
            .map(|p| format!("{} `{}` ({})", p.code, p.detail, p.rule))
            .collect();
        return Err(ApiError::Coded {
            code: codes::CONTRACT_REJECTED,
            message: format!(
                "contract `{}` version {} is refused before the consumer starts: {}",
                s.contract.id,
                s.contract.version,
                problems.join("; ")
            ),
            details: body,
        });
    }
    let status = if s.created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((
        status,
        Json(Posted {
            contract: s.contract,
            created: s.created,
        }),
    ))
}

/// Posts a contract: read against the schema (every fault with its JSON pointer, 422, nothing
/// stored), then validated by the handoff pack under the envelopes in force. A valid contract
/// is a new version (201; the same content as the latest version is 200 and writes nothing);
/// evidence the consumer may not see does not cross (`validation.dropped`). A contract the
/// pack refuses — missing what its template requires, closing a delegation cycle, handing
/// work to a consumer that could do more than its producer — is stored with its problems and
/// answered 403 `contract_rejected`: the consumer must not start.
#[utoipa::path(post, path = "/v2/handoffs/contracts", tag = "handoffs",
    request_body = HandoffContract,
    responses(
        (status = 201, description = "The stored version, with what the handoff pack said of it (`validation`: problems, dropped, crossing, decision)", body = Posted),
        (status = 200, description = "Unchanged: the latest version has this content", body = Posted),
        (status = 400, description = "The body is not JSON", body = super::ErrorBody),
        (status = 403, description = "Refused by the handoff pack (`contract_rejected`); `details` holds the stored version", body = super::ErrorBody),
        (status = 404, description = "No such producer (or consumer) run", body = super::ErrorBody),
        (status = 409, description = "The id belongs to another producer (run or agent), or the contracts in force changed while it was judged (post it again)", body = super::ErrorBody),
        (status = 422, description = "The contract breaks its schema (`invalid_contract`, `details.faults`: path, message, help each) or names an agent or run wrongly (`invalid_handoff`)", body = super::ErrorBody),
    ))]
async fn create_contract(
    State(state): State<AppState>,
    who: Caller,
    ApiJson(body): ApiJson<Value>,
) -> Result<(StatusCode, Json<Posted>), ApiError> {
    let submitted = blocking(&state, move |rt| {
        Ok((|| {
            let contract = contract::from_value(&body).map_err(HandoffError::from)?;
            let producer = (&*contract.producer.run, contract.producer.agent.as_deref());
            party(rt, &who, Side::Producer, producer, &contract.consumer.agent)?;
            rt.submit_contract(contract, "api").map_err(ApiError::from)
        })())
    })
    .await??;
    posted(submitted)
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct ListQuery {
    /// At most this many (default 50, at most 500).
    #[param(minimum = 1, maximum = 500)]
    limit: Option<u32>,
}

/// The latest version of every contract, most recently changed first.
#[utoipa::path(get, path = "/v2/handoffs/contracts", tag = "handoffs",
    params(ListQuery),
    responses((status = 200, description = "`{\"contracts\": [...]}`", body = Object)))]
async fn list_contracts(
    State(state): State<AppState>,
    ApiQuery(q): ApiQuery<ListQuery>,
) -> Result<Json<Value>, ApiError> {
    let limit = super::page_limit(q.limit, 50, 500)? as usize;
    let contracts = handing(&state, move |rt| Ok(store::list(rt.store(), limit)?)).await?;
    Ok(Json(json!({ "contracts": contracts })))
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct VersionQuery {
    /// A version (the latest when absent).
    version: Option<u32>,
}

/// A contract: the version asked for (the latest by default) with its validation and receipt,
/// the contract as it reaches the consumer (`handed`: only the evidence that crossed), every
/// version, the consumer's answers, and each delivery check with its violations.
#[utoipa::path(get, path = "/v2/handoffs/contracts/{id}", tag = "handoffs",
    params(("id" = String, Path, description = "The contract's id"), VersionQuery),
    responses(
        (status = 200, description = "`{\"contract\", \"handed\", \"versions\", \"acks\", \"deliveries\"}`", body = Object),
        (status = 404, description = "No such contract or version", body = super::ErrorBody),
    ))]
async fn get_contract(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
    ApiQuery(q): ApiQuery<VersionQuery>,
) -> Result<Json<Value>, ApiError> {
    let answer = handing(&state, move |rt| {
        let s = rt.store();
        let contract = store::get(s, &id, q.version)?
            .ok_or_else(|| HandoffError::NotFound(format!("no contract `{id}`")))?;
        let versions: Vec<Value> = store::versions(s, &id)?
            .into_iter()
            .map(|(v, state, hash, at)| {
                json!({"version": v, "state": state, "content_hash": hash, "created_at": at})
            })
            .collect();
        Ok(json!({
            "handed": contract.handed(),
            "contract": contract,
            "versions": versions,
            "acks": store::acks(s, &id)?,
            "deliveries": store::deliveries(s, &id)?,
        }))
    })
    .await?;
    Ok(Json(answer))
}

/// The consumer's answer to the latest version: `accept`, `reject` (with a `reason`) or
/// `clarify` (with `questions` or a `reason`). Recorded in the consumer's run while it is open.
#[utoipa::path(post, path = "/v2/handoffs/contracts/{id}/ack", tag = "handoffs",
    params(("id" = String, Path, description = "The contract's id")),
    request_body = ConsumerAck,
    responses(
        (status = 200, description = "The contract after the answer (`accepted`, `refused`, `clarification_requested`)", body = Object),
        (status = 404, description = "No such contract", body = super::ErrorBody),
        (status = 409, description = "The contract was rejected, is answered already, or has a newer version", body = super::ErrorBody),
        (status = 422, description = "A rejection without a reason, a clarification without questions, or the wrong consumer run", body = super::ErrorBody),
    ))]
async fn ack(
    State(state): State<AppState>,
    who: Caller,
    ApiPath(id): ApiPath<String>,
    ApiJson(ack): ApiJson<ConsumerAck>,
) -> Result<Json<Value>, ApiError> {
    let contract = as_party(&state, who, Side::Consumer, id, move |rt, id| {
        rt.ack_contract(&id, ack)
    })
    .await?;
    Ok(Json(json!({ "contract": contract })))
}

/// Checks the consumer's delivery under the latest version now: every required output
/// delivered, no blocked action executed, the deadline kept. Each breach is a violation alert
/// (recorded in the consumer's run while it is open); the contract becomes `fulfilled` or
/// `violated`. A consumer run that finishes is checked the same way.
#[utoipa::path(post, path = "/v2/handoffs/contracts/{id}/check", tag = "handoffs",
    params(("id" = String, Path, description = "The contract's id")),
    responses(
        (status = 201, description = "`{contract, delivery: {state, delivered, decision, violations}, findings}`", body = Object),
        (status = 404, description = "No such contract", body = super::ErrorBody),
        (status = 409, description = "Nothing to check: the contract was rejected or refused, or the consumer has not opened its run", body = super::ErrorBody),
    ))]
async fn check(
    State(state): State<AppState>,
    who: Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let report = as_party(&state, who, Side::Either, id, move |rt, id| {
        rt.check_delivery(&id)
    })
    .await?;
    Ok((StatusCode::CREATED, Json(json!(report))))
}

/// The latest version as an A2A `Message` (a text part with the objective, a data part with
/// the contract as it reaches the consumer: only the evidence that crossed). A contract the
/// pack refused, or that the consumer refused, is not handed over (409).
#[utoipa::path(get, path = "/v2/handoffs/contracts/{id}/a2a", tag = "handoffs",
    params(("id" = String, Path, description = "The contract's id")),
    responses(
        (status = 200, description = "An A2A message", body = Object),
        (status = 404, description = "No such contract", body = super::ErrorBody),
        (status = 409, description = "The contract is not validated or accepted", body = super::ErrorBody),
    ))]
async fn export_a2a(
    State(state): State<AppState>,
    who: Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<Value>, ApiError> {
    let message = as_party(&state, who, Side::Either, id, move |rt, id| {
        let stored = store::get(rt.store(), &id, None)?
            .ok_or_else(|| HandoffError::NotFound(format!("no contract `{id}`")))?;
        if !matches!(
            stored.state,
            ContractState::Validated | ContractState::Accepted
        ) {
            return Err(HandoffError::Conflict(format!(
                "contract `{id}` is {}: only a validated or accepted contract is handed to its consumer",
                stored.state.as_str()
            )));
        }
        Ok(a2a::export(&stored))
    })
    .await?;
    Ok(Json(message))
}

/// Posts the contract an A2A message carries (a `Message`, a `message/send` request or its
/// `params`), as `POST /v2/handoffs/contracts` does; fault paths point into the message.
#[utoipa::path(post, path = "/v2/handoffs/a2a", tag = "handoffs",
    request_body(content = Object, description = "An A2A message with a data part holding a `tollgate.handoff/v1` contract"),
    responses(
        (status = 201, description = "A new version, validated", body = Posted),
        (status = 200, description = "Unchanged", body = Posted),
        (status = 400, description = "The body is not JSON", body = super::ErrorBody),
        (status = 403, description = "Refused by the handoff pack (`contract_rejected`)", body = super::ErrorBody),
        (status = 404, description = "No such producer (or consumer) run", body = super::ErrorBody),
        (status = 409, description = "The id belongs to another producer (run or agent), or the contracts in force changed while it was judged (post it again)", body = super::ErrorBody),
        (status = 422, description = "No contract in the message, or one that breaks its schema (`invalid_contract`)", body = super::ErrorBody),
    ))]
async fn import_a2a(
    State(state): State<AppState>,
    who: Caller,
    ApiJson(body): ApiJson<Value>,
) -> Result<(StatusCode, Json<Posted>), ApiError> {
    let submitted = blocking(&state, move |rt| {
        Ok((|| {
            let contract = a2a::import(&body).map_err(HandoffError::from)?;
            let producer = (&*contract.producer.run, contract.producer.agent.as_deref());
            party(rt, &who, Side::Producer, producer, &contract.consumer.agent)?;
            rt.submit_contract(contract, "a2a").map_err(ApiError::from)
        })())
    })
    .await??;
    posted(submitted)
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct GraphQuery {
    /// `json` (default), `dot` or `svg`.
    #[param(schema_with = graph_formats)]
    format: Option<String>,
}

fn graph_formats() -> utoipa::openapi::Object {
    crate::schemas::one_of("`json` (default), `dot` or `svg`.", &["json", "dot", "svg"])
}

/// The handoff graph of a run: parties (`RUN#AGENT`) and the contracts between them, across
/// every run reached through a contract, with each contract's state, missing requirements,
/// dropped evidence and violations, and any delegation cycle. Handoffs an agent recorded itself
/// are drawn as `recorded`.
#[utoipa::path(get, path = "/v2/handoffs/graphs/{run_id}", tag = "handoffs",
    params(("run_id" = String, Path, description = "A run"), GraphQuery),
    responses(
        (status = 200, description = "`{run, runs, nodes, edges, cycles}`; `text/vnd.graphviz` for `dot`, `image/svg+xml` for `svg`",
            content((Object = "application/json"), (String = "text/vnd.graphviz"), (String = "image/svg+xml"))),
        (status = 404, description = "No such run", body = super::ErrorBody),
        (status = 422, description = "An unknown format", body = super::ErrorBody),
    ))]
async fn graph_of(
    State(state): State<AppState>,
    ApiPath(run_id): ApiPath<String>,
    ApiQuery(q): ApiQuery<GraphQuery>,
) -> Result<Response, ApiError> {
    let format = q.format.unwrap_or_else(|| "json".into());
    if !matches!(format.as_str(), "json" | "dot" | "svg") {
        return Err(ApiError::new(
            codes::INVALID_FORMAT,
            format!("format `{format}` is not one of json, dot, svg"),
        ));
    }
    let g = handing(&state, move |rt| graph::graph(rt.recorder(), &run_id)).await?;
    Ok(match format.as_str() {
        "dot" => ([(header::CONTENT_TYPE, "text/vnd.graphviz")], g.to_dot()).into_response(),
        "svg" => ([(header::CONTENT_TYPE, "image/svg+xml")], g.to_svg()).into_response(),
        _ => Json(json!(g)).into_response(),
    })
}
