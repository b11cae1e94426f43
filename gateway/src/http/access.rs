//! Which kinds of principal each operation admits (issue 32), checked on every matched route
//! after the token has named the principal (`security::require_token`), and stated in the
//! OpenAPI document as `x-tollgate-kinds` on every operation. An operation missing from
//! [`ACCESS`] admits nobody (fail closed; `tests::every_documented_operation_has_its_kinds`).
//!
//! What each kind is trusted with: an **agent** opens and drives its own runs (which runs are
//! its own the handlers check, `Caller::reach_run`) and reads its approvals' state; an
//! **approver** decides approvals and reads runs, receipts and what they rest on; an
//! **admin** does everything, including what grants rights: envelopes, tokens, packs, memory
//! review, regression versions. Every admin and approver action that changes something is
//! logged with who did it ([`audit`]).

use crate::codes::http as codes;
use axum::extract::{FromRequestParts, MatchedPath, Request, State};
use axum::http::Method;
use axum::http::request::Parts;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::{ApiError, AppState};
use crate::auth::{Principal, PrincipalKind};
use crate::runtime::{Runtime, RuntimeError};

/// Agents.
const A: u8 = 1;
/// Approvers.
const P: u8 = 2;
/// Admins.
const D: u8 = 4;
/// Every kind.
const ALL: u8 = A | P | D;

/// `(method, path template, kinds)` for every operation.
pub(crate) const ACCESS: &[(&str, &str, u8)] = &[
    ("GET", "/health", ALL),
    ("GET", "/openapi.json", ALL),
    // Runs: an agent's own (checked by the handler); approvers read them.
    ("POST", "/v1/runs", A | D),
    ("GET", "/v1/runs", ALL),
    ("GET", "/v1/runs/{run_id}", ALL),
    ("POST", "/v1/runs/{run_id}/steps", A | D),
    ("POST", "/v1/runs/{run_id}/events", A | D),
    ("POST", "/v1/runs/{run_id}/compile", A | D),
    ("POST", "/v1/runs/{run_id}/finish", A | D),
    ("POST", "/v1/runs/{run_id}/repin", D),
    ("POST", "/v1/runs/{run_id}/tool-calls", A | D),
    ("POST", "/v1/chat/completions", A | D),
    // MCP (JSON-RPC over streamable HTTP, outside the OpenAPI document): a session opens a
    // run, as `POST /v1/runs` does.
    ("POST", "/v1/mcp", A | D),
    ("GET", "/v1/mcp", A | D),
    ("DELETE", "/v1/mcp", A | D),
    // Tool pins: accepting a changed definition lets its calls through, so never an agent's.
    ("GET", "/v1/mcp/pins", P | D),
    ("POST", "/v1/mcp/pins/{tool}/accept", P | D),
    ("GET", "/v1/approvals", ALL),
    ("GET", "/v1/approvals/{id}", ALL),
    // Policies: admins write envelopes; approvers read them and decide approvals.
    ("POST", "/v2/policies/envelopes", D),
    ("GET", "/v2/policies/envelopes", P | D),
    ("GET", "/v2/policies/envelopes/{id}", P | D),
    ("GET", "/v2/policies/envelopes/{id}/diff", P | D),
    ("POST", "/v2/policies/envelopes/{id}/simulate", P | D),
    ("POST", "/v2/policies/envelopes/{id}/repin", D),
    ("GET", "/v2/policies/decisions/{run_id}", ALL),
    ("POST", "/v2/policies/approvals/{id}", P | D),
    // Memory: review is an admin's; approvers read.
    ("POST", "/v2/memory/distill/run/{run_id}", D),
    ("GET", "/v2/memory/search", P | D),
    ("GET", "/v2/memory/{id}", P | D),
    ("GET", "/v2/memory/{id}/usage", P | D),
    ("POST", "/v2/memory/{id}/promote", D),
    ("POST", "/v2/memory/{id}/expire", D),
    ("POST", "/v2/memory/{id}/feedback", D),
    // Replays and regressions: developers' tools (admins); approvers read results.
    ("POST", "/v2/replays/scenarios", D),
    ("GET", "/v2/replays/scenarios/{id}", P | D),
    ("POST", "/v2/replays/scenarios/{id}/execute", D),
    ("POST", "/v2/replays/batches", D),
    ("GET", "/v2/replays", P | D),
    ("GET", "/v2/replays/{id}", P | D),
    ("GET", "/v2/replays/{id}/export", P | D),
    ("POST", "/v2/regressions/from-run/{run_id}", D),
    ("POST", "/v2/regressions/from-replay/{replay_id}", D),
    ("GET", "/v2/regressions", P | D),
    ("GET", "/v2/regressions/{id}", P | D),
    ("POST", "/v2/regressions/{id}/execute", D),
    ("POST", "/v2/regressions/{id}/versions", D),
    ("GET", "/v2/regressions/{id}/bundle", P | D),
    ("GET", "/v2/regressions/{id}/history", P | D),
    ("POST", "/v2/regressions/suites/execute", D),
    ("GET", "/v2/regressions/suites/{id}", P | D),
    // Handoffs: the schema and templates are for everyone; an agent posts contracts from its
    // own runs, answers those handed to it and checks or exports those it is a party to (the
    // handlers check which side it is on, `http/handoffs.rs::party`); approvers read.
    ("GET", "/v2/handoffs/schema", ALL),
    ("GET", "/v2/handoffs/templates/{name}", ALL),
    ("POST", "/v2/handoffs/contracts", A | D),
    ("GET", "/v2/handoffs/contracts", P | D),
    ("GET", "/v2/handoffs/contracts/{id}", P | D),
    ("POST", "/v2/handoffs/contracts/{id}/ack", A | D),
    ("POST", "/v2/handoffs/contracts/{id}/check", A | D),
    ("GET", "/v2/handoffs/contracts/{id}/a2a", ALL),
    ("POST", "/v2/handoffs/a2a", A | D),
    ("GET", "/v2/handoffs/graphs/{run_id}", P | D),
    // Cases: operators move them; approvers read and decide their approvals.
    ("GET", "/cases", P | D),
    ("POST", "/cases", D),
    ("GET", "/cases/{case_id}", P | D),
    ("GET", "/cases/{case_id}/inspection", P | D),
    ("GET", "/cases/{case_id}/timeline", P | D),
    ("GET", "/cases/{case_id}/graph", P | D),
    ("POST", "/cases/{case_id}/evidence", D),
    ("GET", "/cases/{case_id}/runtime", P | D),
    ("POST", "/cases/{case_id}/runtime/collect", D),
    ("POST", "/cases/{case_id}/proposals", D),
    ("GET", "/cases/{case_id}/proposals", P | D),
    (
        "POST",
        "/cases/{case_id}/proposals/{proposal_id}/preview",
        D,
    ),
    ("POST", "/cases/{case_id}/proposals/{proposal_id}/policy", D),
    (
        "POST",
        "/cases/{case_id}/proposals/{proposal_id}/approval",
        P | D,
    ),
    ("POST", "/cases/{case_id}/proposals/{proposal_id}/commit", D),
    ("POST", "/cases/{case_id}/model-runs", D),
    ("GET", "/cases/{case_id}/replay", P | D),
    ("POST", "/cases/{case_id}/replay", D),
    ("GET", "/packs", P | D),
    ("POST", "/packs/{engine_id}/{engine_version}/demo-case", D),
    // Tokens and the audit log: admins only.
    ("POST", "/v1/tokens", D),
    ("GET", "/v1/tokens", D),
    ("POST", "/v1/tokens/{id}/revoke", D),
    ("GET", "/v1/audit", D),
];

/// The kinds operation `method path` admits; none when it is not in [`ACCESS`].
pub(crate) fn kinds(method: &str, path: &str) -> Vec<PrincipalKind> {
    let bits = ACCESS
        .iter()
        .find(|(m, p, _)| *m == method && *p == path)
        .map_or(0, |(_, _, k)| *k);
    PrincipalKind::ALL
        .into_iter()
        .filter(|k| bits & bit(*k) != 0)
        .collect()
}

fn bit(kind: PrincipalKind) -> u8 {
    match kind {
        PrincipalKind::Agent => A,
        PrincipalKind::Approver => P,
        PrincipalKind::Admin => D,
    }
}

/// Refuses (403 `kind_not_admitted`) a principal whose kind the matched operation does not
/// admit, then logs what an approver or an admin changed. Runs as a route layer, so the
/// matched path template is known; the dashboard's pages check their sessions themselves.
pub(crate) async fn authorize(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let template = req
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_string());
    let Some(template) = template else {
        return next.run(req).await;
    };
    if template == "/ui" || template.starts_with("/ui/") {
        return next.run(req).await;
    }
    let method = req.method().clone();
    let principal = req.extensions().get::<Principal>().cloned();
    if method == Method::GET && template == "/health" {
        return next.run(req).await;
    }
    let Some(principal) = principal else {
        return ApiError::Unauthorized.into_response();
    };
    // HEAD is served by a GET handler, and admits what the GET admits.
    let looked_up = if method == Method::HEAD {
        Method::GET
    } else {
        method.clone()
    };
    let allowed: Vec<&str> = ACCESS
        .iter()
        .filter(|(_, p, _)| *p == template)
        .map(|(m, _, _)| *m)
        .collect();
    if !allowed.contains(&looked_up.as_str()) {
        // No operation of that method on this path: what axum would answer, without
        // reaching a handler.
        let mut response = ApiError::Coded {
            code: codes::METHOD_NOT_ALLOWED,
            message: format!("`{template}` answers {}", allowed.join(", ")),
            details: serde_json::Value::Null,
        }
        .into_response();
        if let Ok(value) = axum::http::HeaderValue::from_str(&allowed.join(", ")) {
            response
                .headers_mut()
                .insert(axum::http::header::ALLOW, value);
        }
        return response;
    }
    let admitted = kinds(looked_up.as_str(), &template);
    if !admitted.contains(&principal.kind) {
        let names: Vec<&str> = admitted.iter().map(|k| k.as_str()).collect();
        return ApiError::Coded {
            code: codes::KIND_NOT_ADMITTED,
            message: format!(
                "`{method} {template}` admits {}; this credential is {} `{}`\n  help: use a credential of a kind it admits (`tollgate tokens create --kind ...`)",
                if names.is_empty() {
                    "no credential".to_string()
                } else {
                    names.join(", ")
                },
                principal.kind,
                principal.name
            ),
            details: serde_json::json!({"admits": names, "kind": principal.kind}),
        }
        .into_response();
    }
    let target = req.uri().path().to_string();
    let response = next.run(req).await;
    // An MCP session's calls are recorded in its run, each with its receipt; logging every
    // JSON-RPC message of an admin's session would say it again.
    if method != Method::GET
        && principal.kind != PrincipalKind::Agent
        && template != super::MCP_PATH
    {
        audit(
            &state.runtime,
            &principal,
            &method,
            &target,
            response.status().as_u16(),
        )
        .await;
    }
    response
}

/// Logs an approver's or admin's action (`audit_log`). A failure to log is itself logged;
/// the action has already happened.
pub(crate) async fn audit(
    runtime: &Runtime,
    principal: &Principal,
    method: &Method,
    target: &str,
    status: u16,
) {
    let logged = crate::auth::audit::record(
        runtime.store(),
        principal,
        runtime.now_rfc3339(),
        method.as_str().to_string(),
        target.to_string(),
        status,
    )
    .await;
    if let Err(e) = logged {
        eprintln!(
            "tollgate: could not log {}'s action on {target}: {e}",
            principal.label()
        );
    }
}

/// The principal behind the request, as the token named it.
#[derive(Debug, Clone)]
pub(crate) struct Caller(pub Principal);

impl FromRequestParts<AppState> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &AppState) -> Result<Caller, ApiError> {
        parts
            .extensions
            .get::<Principal>()
            .cloned()
            .map(Caller)
            .ok_or(ApiError::Unauthorized)
    }
}

impl Caller {
    /// Whether the caller may reach run `run`: an agent only its own (404 when the run does
    /// not exist, 403 when it is another's); approvers and admins any, without a read.
    pub(crate) fn reach_run(&self, runtime: &Runtime, run: &str) -> Result<(), ApiError> {
        if !self.0.is_agent() {
            return Ok(());
        }
        let (agent, scope) = runtime.run_owner(run)?;
        self.0
            .reaches_run(run, &agent, &scope)
            .map_err(|r| ApiError::from(RuntimeError::from(r)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_documented_operation_has_its_kinds_and_no_entry_is_stale() {
        let doc = super::super::openapi();
        let mut documented = Vec::new();
        for (path, item) in doc["paths"].as_object().unwrap() {
            for method in ["get", "post", "put", "delete", "patch"] {
                if item.get(method).is_some() {
                    documented.push((method.to_uppercase(), path.clone()));
                }
            }
        }
        for (method, path) in &documented {
            assert!(
                !kinds(method, path).is_empty(),
                "`{method} {path}` is documented but admits nobody: add it to ACCESS"
            );
        }
        for (method, path, _) in ACCESS {
            assert!(
                *path == "/openapi.json"
                    || *path == super::super::MCP_PATH
                    || documented.iter().any(|(m, p)| m == method && p == path),
                "ACCESS names `{method} {path}`, which no route serves"
            );
        }
    }

    #[test]
    fn nothing_that_grants_rights_admits_an_agent() {
        for (method, path) in [
            ("POST", "/v2/policies/envelopes"),
            ("POST", "/v2/policies/approvals/{id}"),
            ("POST", "/cases/{case_id}/proposals/{proposal_id}/approval"),
            ("POST", "/v1/tokens"),
            ("POST", "/v1/mcp/pins/{tool}/accept"),
            ("POST", "/v1/tokens/{id}/revoke"),
            ("POST", "/v1/runs/{run_id}/repin"),
            ("POST", "/v2/policies/envelopes/{id}/repin"),
            ("POST", "/v2/memory/{id}/promote"),
            ("POST", "/v2/regressions/{id}/versions"),
        ] {
            assert!(
                !kinds(method, path).contains(&PrincipalKind::Agent),
                "{method} {path}"
            );
        }
    }
}
