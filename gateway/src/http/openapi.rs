//! The gateway's OpenAPI document: its header (title, security, tags), the error body every
//! route answers with, and the error responses every route can give whatever its handler
//! documents — added here once, from what the route takes, so `/openapi.json` lists every
//! status a client can meet (a client generated from it, or Schemathesis, can trust it) — and
//! the links between operations ([`links`]) and an example request of each ([`examples`]).

mod examples;
mod links;

use utoipa::ToSchema;
use utoipa::openapi::path::{Operation, ParameterIn};
use utoipa::openapi::security::SecurityRequirement;
use utoipa::openapi::{OpenApi, Ref, RefOr, Response};

#[derive(utoipa::OpenApi)]
#[openapi(
    info(
        title = "Tollgate",
        description = "A policy gateway with a Datalog core for LLM agents: runs, compiles, tool-call decisions with approvals and rate limits, an OpenAI-compatible model proxy, and the /v2/policies module. Every route but /health needs `Authorization: Bearer TOKEN`; each operation admits the kinds of principal its `x-tollgate-kinds` names (agent, approver, admin), and answers 403 `kind_not_admitted` to others.",
    ),
    modifiers(&BearerAuth),
    security(("bearer" = [])),
    components(schemas(ErrorBody, ErrorDetail)),
    tags(
        (name = "runs", description = "Runs, steps, events and compiles"),
        (name = "tools", description = "Tool-call decisions and approvals"),
        (name = "models", description = "The OpenAI-compatible model proxy"),
        (name = "policies", description = "Policy envelopes, simulation, decisions and approvals"),
        (name = "memory", description = "Memories distilled from finished runs: distill, read, promote, expire"),
        (name = "replays", description = "Counterfactual replay: scenarios of mutations on recorded runs, batches, results compared with the baseline"),
        (name = "regressions", description = "Regression cases from runs and replays, their versions, history and suites"),
        (name = "handoffs", description = "Handoff contracts: validated, answered, their deliveries checked; handoff graphs; A2A messages"),
        (name = "cases", description = "The case-workflow service: cases as append-only events with projections; proposal, preview, policy, approval and commit through the engine host; inspection, timeline, graph and replay health"),
        (name = "packs", description = "The packs registered at startup (TOLLGATE_PACK_ROOTS) and their demo cases"),
        (name = "mcp", description = "The MCP gateway's tool pins: accepted definitions, and changed ones waiting for a person (MCP itself is served at /v1/mcp, outside this document)"),
        (name = "tokens", description = "Credentials by kind of principal (agent, approver, admin) and the log of what approvers and admins did"),
        (name = "health", description = "Liveness"),
    )
)]
pub(super) struct ApiDoc;

struct BearerAuth;

impl utoipa::Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
    }
}

/// The body of every error.
#[derive(Debug, serde::Serialize, ToSchema)]
pub struct ErrorBody {
    /// The error.
    error: ErrorDetail,
}

/// What went wrong.
#[derive(Debug, serde::Serialize, ToSchema)]
pub struct ErrorDetail {
    /// Machine-readable (`unauthorized`, `malformed_json`, `policy_denied`, ...): the enum of
    /// every code is added by `finish`, from `crate::codes`.
    code: String,
    /// What is wrong and how to fix it.
    message: String,
    /// Structured detail (diagnostics, the denying decision, a list of faults), or null.
    #[schema(value_type = Value)]
    details: serde_json::Value,
}

/// Completes the generated document: the error responses every route can give, the true
/// bounds of unsigned integers, the links between operations and an example request of each
/// (in the JSON: utoipa's model
/// cannot read back every schema it writes, so the document is not turned back into it).
pub(super) fn finish(mut doc: OpenApi) -> serde_json::Value {
    document_errors(&mut doc);
    let mut value = serde_json::to_value(&doc).unwrap_or_default();
    bound_unsigned(&mut value);
    links::add(&mut value);
    examples::add(&mut value);
    state_kinds(&mut value);
    enumerate_codes(&mut value);
    value
}

/// Lists every code an error can carry, from the one table (`crate::codes`), as the enum of
/// `ErrorDetail.code`: a client can switch on it, and a contract test (Schemathesis's response
/// schema check) fails on an answer whose code is not in the table.
fn enumerate_codes(value: &mut serde_json::Value) {
    use crate::codes::{case_refusals, http};
    let mut all: Vec<&str> = http::ALL
        .iter()
        .chain(case_refusals::ALL)
        .map(|c| c.code)
        .collect();
    all.sort_unstable();
    all.dedup();
    if let Some(code) = value.pointer_mut("/components/schemas/ErrorDetail/properties/code") {
        code["enum"] = serde_json::json!(all);
        code["description"] = serde_json::json!(
            "Machine-readable: one of the codes of `docs/reference/errors.md`, each with its meaning and remedy."
        );
    }
}

/// States on every operation the kinds of principal it admits (`x-tollgate-kinds`, from
/// `access::ACCESS`, the table the gateway enforces), and says so in its description.
fn state_kinds(value: &mut serde_json::Value) {
    let Some(paths) = value.get_mut("paths").and_then(|p| p.as_object_mut()) else {
        return;
    };
    for (path, item) in paths.iter_mut() {
        for method in ["get", "put", "post", "delete", "patch"] {
            let Some(operation) = item.get_mut(method).and_then(|o| o.as_object_mut()) else {
                continue;
            };
            let kinds: Vec<&str> = super::access::kinds(&method.to_uppercase(), path)
                .into_iter()
                .map(crate::auth::PrincipalKind::as_str)
                .collect();
            let admits = format!("Admits: {}.", kinds.join(", "));
            let description = match operation.get("description").and_then(|d| d.as_str()) {
                Some(d) if !d.is_empty() => format!("{d}\n\n{admits}"),
                _ => admits,
            };
            operation.insert("description".into(), description.into());
            operation.insert("x-tollgate-kinds".into(), serde_json::json!(kinds));
        }
    }
}

/// utoipa writes a `u32` as `{"type": "integer", "format": "int32", "minimum": 0}`, which reads
/// as at most 2^31 - 1 where the gateway takes up to 2^32 - 1 (Schemathesis rightly flagged
/// 2^31 accepted); likewise `int64` for a `u64`. The maximum is written out, and the format,
/// which would contradict it, dropped.
fn bound_unsigned(value: &mut serde_json::Value) {
    use serde_json::Value;
    match value {
        Value::Object(map) => {
            let integer = match map.get("type") {
                Some(Value::String(t)) => t == "integer",
                Some(Value::Array(ts)) => ts.iter().any(|t| t == "integer"),
                _ => false,
            };
            let unsigned = map
                .get("minimum")
                .and_then(Value::as_f64)
                .is_some_and(|m| m >= 0.0);
            if integer && unsigned && !map.contains_key("maximum") {
                let maximum = match map.get("format").and_then(Value::as_str) {
                    Some("int32") => Some(Value::from(u32::MAX)),
                    Some("int64") => Some(Value::from(u64::MAX)),
                    _ => None,
                };
                if let Some(maximum) = maximum {
                    map.remove("format");
                    map.insert("maximum".into(), maximum);
                }
            }
            map.values_mut().for_each(bound_unsigned);
        }
        Value::Array(items) => items.iter_mut().for_each(bound_unsigned),
        _ => {}
    }
}

/// Adds to every operation the error responses it can give besides those its handler names:
/// 401 without the token (every route but `/health`), 403 for a foreign Host or Origin, 500;
/// with a body, 400 (not JSON), 413 (too large), 415 (not sent as JSON) and 422 (not the
/// shape); with path parameters, 404 and 422 (a segment that does not read); with query
/// parameters, 422. A response the handler documents keeps its own description.
fn document_errors(doc: &mut OpenApi) {
    for item in doc.paths.paths.values_mut() {
        let operations = [
            &mut item.get,
            &mut item.put,
            &mut item.post,
            &mut item.delete,
            &mut item.patch,
        ];
        for operation in operations.into_iter().flatten() {
            for (status, description) in errors_of(operation) {
                let body = Response::builder()
                    .description(description)
                    .content(
                        "application/json",
                        utoipa::openapi::Content::new(Some(RefOr::Ref(Ref::from_schema_name(
                            "ErrorBody",
                        )))),
                    )
                    .build();
                operation
                    .responses
                    .responses
                    .entry(status.to_string())
                    .or_insert_with(|| RefOr::T(body));
            }
        }
    }
}

fn errors_of(operation: &Operation) -> Vec<(u16, &'static str)> {
    let open = operation
        .security
        .as_ref()
        .is_some_and(|s| s.contains(&SecurityRequirement::default()));
    let parameters = operation
        .parameters
        .iter()
        .flatten()
        .filter_map(|p| match p {
            RefOr::T(p) => Some(&p.parameter_in),
            RefOr::Ref(_) => None,
        });
    let (mut path, mut query) = (false, false);
    for place in parameters {
        path |= *place == ParameterIn::Path;
        query |= *place == ParameterIn::Query;
    }
    let mut errors = vec![
        (
            403,
            "A foreign Host or Origin header (a page of another site), or a credential of a kind the operation does not admit (`kind_not_admitted`; see `x-tollgate-kinds`)",
        ),
        (500, "The gateway failed; the detail is in its log"),
    ];
    if !open {
        errors.push((401, "No bearer token, or a wrong one"));
    }
    if operation.request_body.is_some() {
        errors.extend([
            (400, "The body is not JSON"),
            (413, "The body is larger than the limit"),
            (415, "The body is not sent as `application/json`"),
            (
                422,
                "The body is not of the documented shape, or its values are invalid",
            ),
        ]);
    }
    if path {
        errors.extend([
            (404, "Nothing stored under that path"),
            (422, "A path segment does not read as its parameter"),
        ]);
    }
    if query {
        errors.push((422, "A query parameter does not read as documented"));
    }
    errors
}
