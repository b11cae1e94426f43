//! The local dashboard: server-rendered HTML under `/ui`, served by the gateway itself, a
//! view over the same runtime and store as the JSON routes (no second data path), with no
//! front-end build step and nothing fetched from outside the machine.
//!
//! Access is a browser session ([`sessions`], stored, so every gateway on one database knows
//! it), not the bearer token: `tollgate serve` prints
//! a URL carrying a one-time login token; opening it sets an HttpOnly, SameSite=Strict
//! cookie and redirects to a URL without it. The login page also accepts the bearer token.
//! Every form that changes something carries the session's CSRF token; the gateway's Host and
//! Origin checks apply here as everywhere.
//!
//! The landing page is the [`overview`]: plots of what was decided and why, approvals
//! waiting, the regression suite, drawn as SVG by [`charts`].
//!
//! The pattern every screen follows: one page module per resource (`runs`, `receipts`,
//! `approvals`, `envelopes`, `memories`, `provenance`, `mcp_pins`...),
//! rendering with the shared [`layout`] and its components, reading through the runtime in
//! [`blocking_page`]. A later module adds its screen as one more page module and one more
//! entry in the navigation.

mod approvals;
mod cases;
mod charts;
mod envelopes;
mod handoffs;
pub mod layout;
mod mcp_pins;
mod memories;
mod overview;
mod provenance;
mod receipts;
mod regressions;
mod replays;
mod runs;

use axum::Form;
use axum::Router;
use axum::extract::{FromRequestParts, Query, State};
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use maud::{Markup, html};
use serde::Deserialize;

use super::AppState;
use crate::auth::Principal;
pub use crate::auth::sessions;
use crate::runtime::{Runtime, RuntimeError};
use sessions::{SESSION_TTL_MS, Session, csrf_ok};

/// The cookie carrying the session id.
pub const COOKIE: &str = "tollgate_session";

/// The dashboard's routes, all under `/ui`.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/ui", get(overview::page))
        .route("/ui/", get(|| async { Redirect::to("/ui") }))
        .route("/ui/overview/data", get(overview::data))
        .route("/ui/decisions", get(overview::decisions))
        .route("/ui/login", get(login_page).post(login_form))
        .route("/ui/logout", post(logout))
        .route("/ui/assets/dashboard.css", get(stylesheet))
        .route("/ui/runs", get(runs::list))
        .route("/ui/runs/{run_id}", get(runs::timeline))
        .route("/ui/runs/{run_id}/repin", post(runs::repin))
        .route("/ui/runs/{run_id}/receipts/{seq}", get(receipts::receipt))
        .route("/ui/approvals", get(approvals::list))
        .route("/ui/envelopes", get(envelopes::list))
        .route("/ui/envelopes/{id}", get(envelopes::envelope))
        .route("/ui/envelopes/{id}/diff", get(envelopes::diff))
        .route("/ui/envelopes/{id}/simulate", get(envelopes::simulate))
        .route("/ui/provenance", get(provenance::provenance))
        .route("/ui/approvals/{id}", post(approvals::decide))
        .route("/ui/replays", get(replays::list))
        .route("/ui/replays/{id}", get(replays::replay))
        .route("/ui/regressions", get(regressions::list))
        .route("/ui/regressions/{id}", get(regressions::case))
        .route("/ui/handoffs", get(handoffs::list))
        .route("/ui/handoffs/{id}", get(handoffs::contract))
        .route("/ui/handoffs/graphs/{run_id}", get(handoffs::run_graph))
        .route("/ui/cases", get(cases::list))
        .route("/ui/cases/{case_id}", get(cases::case))
        .route(
            "/ui/cases/{case_id}/proposals/{proposal_id}",
            post(cases::step),
        )
        .route(
            "/ui/packs/{engine_id}/{engine_version}/demo-case",
            post(cases::demo),
        )
        .route(mcp_pins::SCREEN, get(mcp_pins::list))
        .route("/ui/mcp/pins/{tool}/accept", post(mcp_pins::accept))
        .route("/ui/memories", get(memories::list))
        .route(
            "/ui/memories/{id}",
            get(memories::memory).post(memories::act),
        )
}

/// Logs every form a session sends (a decision, a commit, a re-pin, a memory review...) in the
/// audit log with the session's principal, as the JSON routes log theirs: what people do
/// through the dashboard is as accountable as what they do with a token. A form sent without
/// a session (the login form) changes nothing a principal answers for.
pub(crate) async fn audit_forms(
    State(state): State<AppState>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let method = req.method().clone();
    if method == axum::http::Method::GET || method == axum::http::Method::HEAD {
        return next.run(req).await;
    }
    let session = match cookie_of(req.headers(), COOKIE) {
        Some(id) => session_of(&state, id).await,
        None => None,
    };
    let target = req.uri().path().to_string();
    let response = next.run(req).await;
    if let Some(session) = session {
        super::access::audit(
            &state.runtime,
            &session.principal,
            &method,
            &target,
            response.status().as_u16(),
        )
        .await;
    }
    response
}

/// The session of the browser asking; without one, a page answers with the login page.
#[derive(Debug, Clone)]
pub struct Viewer(pub Session);

impl FromRequestParts<AppState> for Viewer {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Viewer, Response> {
        let session = match cookie(parts, COOKIE) {
            Some(id) => session_of(state, id).await,
            None => None,
        };
        session
            .map(Viewer)
            .ok_or_else(|| Redirect::to("/ui/login").into_response())
    }
}

/// The live session of a cookie's id, read from the store off the async threads. A store that
/// cannot answer logs why and lets no one in.
async fn session_of(state: &AppState, id: String) -> Option<Session> {
    let (sessions, now) = (state.dashboard.clone(), state.runtime.now_ms());
    let checked = tokio::task::spawn_blocking(move || sessions.check(&id, now)).await;
    let checked = match checked {
        Ok(checked) => checked.map_err(|e| e.to_string()),
        Err(e) => Err(e.to_string()),
    };
    checked.unwrap_or_else(|e| {
        eprintln!("tollgate: a dashboard session could not be checked: {e}");
        None
    })
}

/// The value of cookie `name` in the request.
fn cookie(parts: &Parts, name: &str) -> Option<String> {
    cookie_of(&parts.headers, name)
}

fn cookie_of(headers: &axum::http::HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.to_string())
}

/// Renders a page from the runtime, off the async workers; a failure is a page saying what
/// went wrong (a run that does not exist is a 404 page).
pub(crate) async fn blocking_page<F>(
    state: &AppState,
    viewer: &Viewer,
    title: &str,
    screen: &'static str,
    f: F,
) -> Response
where
    F: FnOnce(&Runtime) -> Result<Markup, RuntimeError> + Send + 'static,
{
    let runtime = state.runtime.clone();
    let result = tokio::task::spawn_blocking(move || f(&runtime)).await;
    let (status, content) = match result {
        Ok(Ok(content)) => (StatusCode::OK, content),
        Ok(Err(e)) => {
            let message = e.to_string();
            // The same status the JSON routes give (a 500 logs its detail there).
            let status = super::ApiError::from(e).status();
            let shown = if status.is_client_error() {
                message
            } else {
                "The gateway could not answer; its log says why.".to_string()
            };
            let content = html! {
                h1 { (status.canonical_reason().unwrap_or("Error")) }
                div.error role="alert" { (shown) }
                p { a href="/ui/runs" { "Back to the runs" } }
            };
            (status, content)
        }
        Err(e) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            html! { h1 { "Error" } div.error role="alert" { (e.to_string()) } },
        ),
    };
    let mut response = layout::page(title, screen, &viewer.0, content);
    *response.status_mut() = status;
    response
}

/// `?token=` of the URL `serve` prints.
#[derive(Debug, Deserialize)]
struct LoginQuery {
    #[serde(default)]
    token: Option<String>,
}

/// The login form's fields.
#[derive(Debug, Deserialize)]
struct LoginForm {
    token: String,
}

/// `GET /ui/login`: with a valid token, opens a session; otherwise the login form.
async fn login_page(State(state): State<AppState>, Query(query): Query<LoginQuery>) -> Response {
    match query.token {
        Some(token) => login(&state, &token).await,
        None => login_form_page(None),
    }
}

/// `POST /ui/login`.
async fn login_form(State(state): State<AppState>, Form(form): Form<LoginForm>) -> Response {
    login(&state, form.token.trim()).await
}

/// Opens a session for a login token (the store is read and written off the async threads).
async fn login(state: &AppState, token: &str) -> Response {
    let (state, token) = (state.clone(), token.to_string());
    tokio::task::spawn_blocking(move || login_blocking(&state, &token))
        .await
        .unwrap_or_else(|e| {
            eprintln!("tollgate: a dashboard login could not be checked: {e}");
            login_refused("The gateway could not check that token; its log says why.")
        })
}

fn login_blocking(state: &AppState, token: &str) -> Response {
    let now = state.runtime.now_ms();
    let principal = match state.dashboard.spend_login(token, now) {
        Ok(true) => Ok(Some(Principal::owner())),
        Ok(false) => state.authenticate(token),
        Err(e) => Err(e),
    };
    let problem = match principal {
        Ok(Some(p)) if !p.is_agent() => {
            let session = match state.dashboard.open(p, now) {
                Ok(session) => session,
                Err(e) => {
                    eprintln!("tollgate: a dashboard session could not be opened: {e}");
                    return login_refused(
                        "The gateway could not open a session; its log says why.",
                    );
                }
            };
            let cookie = format!(
                "{COOKIE}={}; HttpOnly; SameSite=Strict; Path=/ui; Max-Age={}",
                session.id,
                SESSION_TTL_MS / 1000
            );
            let mut response = Redirect::to("/ui").into_response();
            if let Ok(value) = HeaderValue::from_str(&cookie) {
                response.headers_mut().insert(header::SET_COOKIE, value);
            }
            return response;
        }
        Ok(Some(_)) => "That is an agent's token: the dashboard is for approvers and admins.",
        Ok(None) => {
            "That token is not valid, or it was a one-time token already used (or unused for a \
             day: restart `tollgate serve` for a new one)."
        }
        Err(e) => {
            eprintln!("tollgate: a dashboard login could not be checked: {e}");
            "The gateway could not check that token; its log says why."
        }
    };
    login_refused(problem)
}

/// The login form again, saying why.
fn login_refused(problem: &str) -> Response {
    let mut response = login_form_page(Some(problem));
    *response.status_mut() = StatusCode::UNAUTHORIZED;
    response
}

fn login_form_page(problem: Option<&str>) -> Response {
    layout::bare_page(
        "Log in",
        html! {
            h1 { "Tollgate" }
            p {
                "Open the one-time login URL " code { "tollgate serve" } " printed in its terminal or "
                "wrote to " code { ".tollgate/dashboard-url" } ", or paste your approver or admin token ("
                code { "tollgate tokens create --kind approver" } "), or the owner's token (in "
                code { ".tollgate/token" } ", or " code { "TOLLGATE_TOKEN" } ")."
            }
            @if let Some(problem) = problem { div.error role="alert" { (problem) } }
            form method="post" action="/ui/login" {
                label for="token" { "Token" }
                input #token type="password" name="token" autocomplete="off" required autofocus;
                button type="submit" { "Log in" }
            }
        },
    )
}

/// A form that changes something: its CSRF token.
#[derive(Debug, Deserialize)]
struct CsrfForm {
    #[serde(default)]
    csrf: String,
}

/// `POST /ui/logout`.
async fn logout(
    State(state): State<AppState>,
    viewer: Viewer,
    Form(form): Form<CsrfForm>,
) -> Response {
    if !csrf_ok(&viewer.0, &form.csrf) {
        return csrf_refused();
    }
    let (sessions, id) = (state.dashboard.clone(), viewer.0.id.clone());
    let ended = match tokio::task::spawn_blocking(move || sessions.logout(&id)).await {
        Ok(ended) => ended.map_err(|e| e.to_string()),
        Err(e) => Err(e.to_string()),
    };
    if let Err(e) = ended {
        eprintln!("tollgate: a dashboard session could not be ended: {e}");
        let mut response = layout::bare_page(
            "Error",
            html! {
                h1 { "Error" }
                div.error role="alert" {
                    "The gateway could not end the session; its log says why. You are still logged in."
                }
            },
        );
        *response.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
        return response;
    }
    let mut response = Redirect::to("/ui/login").into_response();
    let clear = format!("{COOKIE}=; HttpOnly; SameSite=Strict; Path=/ui; Max-Age=0");
    if let Ok(value) = HeaderValue::from_str(&clear) {
        response.headers_mut().insert(header::SET_COOKIE, value);
    }
    response
}

/// A form only an admin's session may send (a commit, a demo case, memory review): `None` for
/// an admin, else the refusal, nothing changed.
pub(crate) fn admin_only(viewer: &Viewer) -> Option<Response> {
    if viewer.0.principal.kind == crate::auth::PrincipalKind::Admin {
        return None;
    }
    let mut response = layout::bare_page(
        "Refused",
        html! {
            h1 { "Refused" }
            div.error role="alert" {
                "This session is approver " code { (viewer.0.principal.name) }
                "'s; only an admin may do this. Approvers decide approvals and read what was decided."
            }
            p { a href="/ui/runs" { "Back to the runs" } }
        },
    );
    *response.status_mut() = StatusCode::FORBIDDEN;
    Some(response)
}

/// A form without its session's CSRF token: refused, nothing changed.
pub(crate) fn csrf_refused() -> Response {
    let mut response = layout::bare_page(
        "Refused",
        html! {
            h1 { "Refused" }
            div.error role="alert" {
                "The form did not carry this session's token, so nothing was changed. "
                "Reload the page and try again."
            }
        },
    );
    *response.status_mut() = StatusCode::FORBIDDEN;
    response
}

async fn stylesheet() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/css; charset=utf-8"),
            (header::CACHE_CONTROL, "max-age=3600"),
        ],
        layout::STYLESHEET,
    )
        .into_response()
}
