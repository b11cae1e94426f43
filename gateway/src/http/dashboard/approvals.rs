//! The Approvals screen: gated tool calls waiting for a person, with their tool, arguments
//! (every detected secret hidden), run and the rules that gated them; approve or reject with
//! a reason. A decision wakes the agent's long poll at once, as the JSON route does.

use axum::Form;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use maud::{Markup, html};
use serde::Deserialize;

use super::layout::{clip, empty, encode, rules, run_href};
use super::sessions::csrf_ok;
use super::{Viewer, blocking_page, csrf_refused};
use crate::approvals::{self, Approval, ApprovalAnswer, ApprovalKey, ApprovalPage, ApprovalState};
use crate::clock::rfc3339;
use crate::http::AppState;
use crate::runtime::RuntimeError;
use crate::secrets::redact_secrets;

/// Approvals on one page (the newest first; older ones a page further).
pub const PAGE_SIZE: usize = 50;

/// The list's query.
#[derive(Debug, Default, Deserialize)]
pub struct ListQuery {
    /// `pending` (the default), `approved`, `rejected`, `used`, `expired` or `all`.
    #[serde(default)]
    state: Option<String>,
    /// The approval just decided (to say so).
    #[serde(default)]
    decided: Option<String>,
    /// The request time (ms) of the last approval of the previous page.
    #[serde(default)]
    after_at: Option<i64>,
    /// Its id.
    #[serde(default)]
    after_id: Option<String>,
}

const STATES: [&str; 6] = ["pending", "approved", "rejected", "used", "expired", "all"];

/// `GET /ui/approvals`.
pub async fn list(
    State(state): State<AppState>,
    viewer: Viewer,
    Query(query): Query<ListQuery>,
) -> Response {
    let wanted = query.state.clone().unwrap_or_else(|| "pending".into());
    let csrf = viewer.0.csrf.clone();
    let me = viewer.0.principal.name.clone();
    blocking_page(&state, &viewer, "Approvals", "/ui/approvals", move |rt| {
        let filter_state = match wanted.as_str() {
            "all" => None,
            s => Some(
                serde_json::from_value::<ApprovalState>(serde_json::Value::String(s.into()))
                    .map_err(|_| {
                        RuntimeError::Invalid(format!(
                            "`{s}` is not an approval state: use {}",
                            STATES.join(", ")
                        ))
                    })?,
            ),
        };
        let after = match (query.after_at, query.after_id.clone()) {
            (Some(requested_at), Some(id)) => Some(ApprovalKey { requested_at, id }),
            _ => None,
        };
        let page = approvals::page(
            rt.store(),
            filter_state,
            after.as_ref(),
            rt.now_ms(),
            PAGE_SIZE,
        )?;
        Ok(content(
            &wanted,
            &page,
            after.is_some(),
            (&csrf, &me),
            query.decided.as_deref(),
            None,
        ))
    })
    .await
}

fn content(
    wanted: &str,
    page: &ApprovalPage,
    paged: bool,
    (csrf, me): (&str, &str),
    decided: Option<&str>,
    problem: Option<&str>,
) -> Markup {
    html! {
        h1 { "Approvals" }
        nav.tabs aria-label="Approval states" {
            @for s in STATES {
                @if s == wanted {
                    a href=(format!("/ui/approvals?state={s}")) aria-current="page" { (s) }
                } @else {
                    a href=(format!("/ui/approvals?state={s}")) { (s) }
                }
                " "
            }
        }
        @if let Some(id) = decided { p.notice role="status" { "Approval " code { (id) } " decided." } }
        @if let Some(problem) = problem { div.error role="alert" { (problem) } }
        @if page.approvals.is_empty() {
            @if paged {
                (empty("No older approval in this state.", html! { a href=(format!("/ui/approvals?state={wanted}")) { "Back to the newest" } }))
            } @else if wanted == "pending" {
                (empty("No gated call is waiting.", html! {
                    "A tool call a rule marks " code { "require_approval" }
                    " waits here until someone approves or rejects it."
                }))
            } @else {
                (empty("No approval in this state.", html! { a href="/ui/approvals" { "Show the pending ones" } }))
            }
        }
        @for a in &page.approvals { (card(a, csrf, me)) }
        @if let Some(next) = &page.next {
            nav.pager aria-label="Pages" {
                a rel="next" href=(format!(
                    "/ui/approvals?state={wanted}&after_at={}&after_id={}",
                    next.requested_at,
                    encode(&next.id)
                )) { "Older approvals →" }
            }
        }
    }
}

fn card(a: &Approval, csrf: &str, me: &str) -> Markup {
    let (arguments, _) = redact_secrets(&a.arguments, "secret");
    let ms = |t: i64| rfc3339(u64::try_from(t / 1000).unwrap_or(0));
    html! {
        article.approval aria-labelledby=(format!("apr-{}", a.id)) {
            h2 id=(format!("apr-{}", a.id)) {
                code { (a.tool) } " "
                span class=(format!("badge approval-{}", a.state.as_str())) { (a.state.as_str()) }
            }
            dl.facts {
                dt { "Approval" } dd { code { (a.id) } }
                dt { "Run" } dd { a href=(run_href(&a.run)) { (a.run) } " · call " code { (a.call_id) } }
                dt { "Arguments" } dd { pre.args { (clip(&arguments.to_string(), 600)) } }
                dt { "Required by" } dd { (rules(&a.rules)) }
                dt { "Approvers" } dd {
                    @if a.approvers.is_empty() { "anyone" } @else { (a.approvers.join(", ")) }
                }
                dt { "Requested" } dd { (ms(a.requested_at)) }
                dt { "Expires" } dd { (ms(a.expires_at)) }
                @if let Some(by) = &a.decided_by {
                    dt { "Decided by" } dd { (by) @if let Some(r) = &a.reason { ": " (r) } }
                }
            }
            @if a.state == ApprovalState::Pending {
                form.decide method="post" action=(format!("/ui/approvals/{}", encode(&a.id))) {
                    input type="hidden" name="csrf" value=(csrf);
                    p.deciding {
                        "Deciding as " strong { (me) }
                        @if !a.approvers.is_empty() && !a.approvers.iter().any(|who| who == me) {
                            " — not one of its approvers, so the gateway will refuse"
                        }
                    }
                    label { "Reason " input type="text" name="reason" maxlength="500"; }
                    button type="submit" name="decision" value="approve" { "Approve" }
                    button type="submit" name="decision" value="reject" { "Reject" }
                }
            }
        }
    }
}

/// The approve / reject form.
#[derive(Debug, Deserialize)]
pub struct DecideForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    decision: String,
    #[serde(default)]
    reason: String,
}

/// `POST /ui/approvals/{id}`: decides it and wakes whoever waits on it.
pub async fn decide(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(id): Path<String>,
    Form(form): Form<DecideForm>,
) -> Response {
    if !csrf_ok(&viewer.0, &form.csrf) {
        return csrf_refused();
    }
    let approve = match form.decision.as_str() {
        "approve" => true,
        "reject" => false,
        _ => {
            return problem_page(
                &state,
                &viewer,
                "Choose approve or reject.",
                StatusCode::UNPROCESSABLE_ENTITY,
            )
            .await;
        }
    };
    // The answer is the session's principal's: no form field names who decides.
    let answer = ApprovalAnswer {
        approve,
        by: viewer.0.principal.name.clone(),
        reason: form.reason.trim().to_string(),
        principal: Some(viewer.0.principal.id.clone()),
    };
    let runtime = state.runtime.clone();
    let key = id.clone();
    let decided = tokio::task::spawn_blocking(move || {
        approvals::decide(
            runtime.store(),
            &key,
            &answer,
            runtime.now_ms(),
            &runtime.now_rfc3339(),
        )
    })
    .await;
    match decided {
        Ok(Ok(_)) => {
            state.runtime.approval_waits.wake();
            Redirect::to(&format!("/ui/approvals?decided={}", encode(&id))).into_response()
        }
        Ok(Err(e)) => {
            let e = RuntimeError::from(e);
            let message = e.to_string();
            // The status the JSON route gives: 403 not an approver, 409 decided meanwhile.
            let status = crate::http::ApiError::from(e).status();
            problem_page(&state, &viewer, &message, status).await
        }
        Err(e) => {
            problem_page(
                &state,
                &viewer,
                &e.to_string(),
                StatusCode::INTERNAL_SERVER_ERROR,
            )
            .await
        }
    }
}

/// The pending list again, saying why a decision was not taken.
async fn problem_page(
    state: &AppState,
    viewer: &Viewer,
    problem: &str,
    status: StatusCode,
) -> Response {
    let csrf = viewer.0.csrf.clone();
    let me = viewer.0.principal.name.clone();
    let problem = problem.to_string();
    let mut response = blocking_page(state, viewer, "Approvals", "/ui/approvals", move |rt| {
        let page = approvals::page(
            rt.store(),
            Some(ApprovalState::Pending),
            None,
            rt.now_ms(),
            PAGE_SIZE,
        )?;
        Ok(content(
            "pending",
            &page,
            false,
            (&csrf, &me),
            None,
            Some(&problem),
        ))
    })
    .await;
    *response.status_mut() = status;
    response
}
