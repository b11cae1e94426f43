//! The MCP tool pins screen (`crate::mcp::pins`): the tools the MCP gateway pinned, a changed
//! definition shown field by field beside the accepted one, and accepting it — as the
//! session's principal, for exactly the definition shown (its hash travels with the form, so a
//! definition that changed again meanwhile is refused, not accepted unseen). Approvers and
//! admins, as `POST /v1/mcp/pins/{tool}/accept`.

use axum::Form;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use maud::{Markup, html};
use serde::Deserialize;

use super::layout::{command, empty, encode, hash};
use super::sessions::csrf_ok;
use super::{Viewer, blocking_page, csrf_refused};
use crate::http::AppState;
use crate::mcp::pins::{self, AcceptError, ToolPin};
use crate::runtime::RuntimeError;

/// The screen's path.
pub const SCREEN: &str = "/ui/mcp/pins";

/// The list's query.
#[derive(Debug, Default, Deserialize)]
pub struct ListQuery {
    /// Every pin, not only the changed ones.
    #[serde(default)]
    all: bool,
    /// The tool just accepted (to say so).
    #[serde(default)]
    accepted: Option<String>,
}

/// `GET /ui/mcp/pins`.
pub async fn list(
    State(state): State<AppState>,
    viewer: Viewer,
    Query(query): Query<ListQuery>,
) -> Response {
    let csrf = viewer.0.csrf.clone();
    blocking_page(&state, &viewer, "MCP tool pins", SCREEN, move |rt| {
        let listed = pins::list(rt.store(), !query.all)?;
        Ok(content(
            &listed,
            query.all,
            &csrf,
            query.accepted.as_deref(),
            None,
        ))
    })
    .await
}

fn content(
    listed: &[ToolPin],
    all: bool,
    csrf: &str,
    accepted: Option<&str>,
    problem: Option<&str>,
) -> Markup {
    html! {
        h1 { "MCP tool pins" }
        p {
            "Each tool an MCP server lists is pinned by its definition when first seen. A changed "
            "definition is refused (or held, where an envelope says " code { "mcp_changed_tools: hold" }
            ") until a person reads the change and accepts it."
        }
        nav.tabs aria-label="Which pins" {
            @if all {
                a href=(SCREEN) { "changed" } " "
                a href=(format!("{SCREEN}?all=true")) aria-current="page" { "all" }
            } @else {
                a href=(SCREEN) aria-current="page" { "changed" } " "
                a href=(format!("{SCREEN}?all=true")) { "all" }
            }
        }
        @if let Some(tool) = accepted {
            p.notice role="status" { "The new definition of " code { (tool) } " is accepted: its calls go through again." }
        }
        @if let Some(problem) = problem { div.error role="alert" { (problem) } }
        @if listed.is_empty() {
            @if all {
                (empty("No tool is pinned yet.", html! {
                    "Serve MCP with " (command("tollgate serve --mcp-config mcp.yaml"))
                    " or " (command("tollgate mcp proxy --config mcp.yaml")) "; each tool is pinned when first listed."
                }))
            } @else {
                (empty("No tool definition changed.", html! { a href=(format!("{SCREEN}?all=true")) { "Show every pin" } }))
            }
        }
        @for pin in listed { (card(pin, csrf)) }
    }
}

fn card(pin: &ToolPin, csrf: &str) -> Markup {
    let name = pin.name();
    let id = format!("pin-{}", encode(&name));
    html! {
        article.pin aria-labelledby=(id) {
            h2 id=(id) {
                code { (name) } " "
                @if pin.changed.is_some() {
                    span.badge.effect-deny { "changed" }
                } @else {
                    span.badge.effect-allow { "accepted" }
                }
            }
            dl.facts {
                dt { "Accepted" } dd { (hash(&pin.hash)) " by " (pin.accepted_by) " at " (pin.accepted_at) }
                @if let Some(c) = &pin.changed {
                    dt { "Changed to" } dd { (hash(&c.hash)) ", seen " (c.at) }
                }
            }
            @if let Some(c) = &pin.changed {
                table.diff {
                    caption { "What changed" }
                    thead { tr { th scope="col" { "Field" } th scope="col" { "Accepted" } th scope="col" { "Now" } } }
                    tbody {
                        @for (field, before, after) in pins::differences(&pin.definition, &c.definition) {
                            tr {
                                th scope="row" { code { (field) } }
                                td { pre.args { (before) } }
                                td { pre.args { (after) } }
                            }
                        }
                    }
                }
                form.decide method="post" action=(format!("{SCREEN}/{}/accept", encode(&name))) {
                    input type="hidden" name="csrf" value=(csrf);
                    input type="hidden" name="hash" value=(c.hash);
                    button type="submit" { "Accept this definition" }
                }
            }
        }
    }
}

/// The accept form.
#[derive(Debug, Deserialize)]
pub struct AcceptForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    hash: String,
}

/// `POST /ui/mcp/pins/{tool}/accept`: accepts the definition shown, as the session's
/// principal.
pub async fn accept(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(tool): Path<String>,
    Form(form): Form<AcceptForm>,
) -> Response {
    if !csrf_ok(&viewer.0, &form.csrf) {
        return csrf_refused();
    }
    let Some((server, name)) = tool.split_once('.') else {
        return problem_page(
            &state,
            &viewer,
            format!("no pinned tool `{tool}`: tools are named `SERVER.TOOL`"),
            StatusCode::NOT_FOUND,
        )
        .await;
    };
    if form.hash.len() < 12 {
        return problem_page(
            &state,
            &viewer,
            "The form did not carry the definition's hash: reload the page and accept again."
                .into(),
            StatusCode::UNPROCESSABLE_ENTITY,
        )
        .await;
    }
    let (server, name) = (server.to_string(), name.to_string());
    let runtime = state.runtime.clone();
    let by = viewer.0.principal.name.clone();
    let accepted = tokio::task::spawn_blocking(move || {
        let at = runtime.now_rfc3339();
        pins::accept(runtime.store(), &server, &name, Some(&form.hash), &by, &at)
    })
    .await;
    let (message, status) = match accepted {
        Ok(Ok(_)) => {
            return Redirect::to(&format!("{SCREEN}?accepted={}", encode(&tool))).into_response();
        }
        Ok(Err(e @ AcceptError::NotFound(_))) => (e.to_string(), StatusCode::NOT_FOUND),
        Ok(Err(e @ (AcceptError::NothingChanged(_) | AcceptError::Stale { .. }))) => {
            (e.to_string(), StatusCode::CONFLICT)
        }
        Ok(Err(AcceptError::Store(e))) => (
            RuntimeError::from(e).to_string(),
            StatusCode::INTERNAL_SERVER_ERROR,
        ),
        Err(e) => (e.to_string(), StatusCode::INTERNAL_SERVER_ERROR),
    };
    problem_page(&state, &viewer, message, status).await
}

/// The changed pins again, saying why the definition was not accepted.
async fn problem_page(
    state: &AppState,
    viewer: &Viewer,
    problem: String,
    status: StatusCode,
) -> Response {
    let csrf = viewer.0.csrf.clone();
    let mut response = blocking_page(state, viewer, "MCP tool pins", SCREEN, move |rt| {
        let listed = pins::list(rt.store(), true)?;
        Ok(content(&listed, false, &csrf, None, Some(&problem)))
    })
    .await;
    *response.status_mut() = status;
    response
}
