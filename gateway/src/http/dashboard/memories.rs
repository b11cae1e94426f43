//! The Memories screen: the review queue (candidates with their score's parts and evidence),
//! the memories in every other state with their provenance and usage, and a person's
//! controls — accept, pin or unpin, reject, expire, quarantine, and a sensitivity edit — each
//! recorded with who and why through the same `memory` functions the JSON routes and the
//! command line use.

use axum::Form;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use maud::{Markup, html};
use serde::Deserialize;
use tollgate_rules::envelope::Level;

use super::layout::{clip, empty, encode, event_href, facts, provenance_href, run_href};
use super::sessions::csrf_ok;
use super::{Viewer, admin_only, blocking_page, csrf_refused};
use crate::http::AppState;
use crate::memory::{
    self, Decision, MemoryArtifact, MemoryClass, MemoryLink, MemoryPage, MemoryStatus,
};
use crate::runtime::RuntimeError;

/// Memories on one page.
pub const PAGE_SIZE: usize = 50;

/// The tabs: the review queue first.
const STATES: [(&str, &str); 6] = [
    ("candidate", "Review queue"),
    ("approved", "Approved"),
    ("quarantined", "Quarantined"),
    ("rejected", "Rejected"),
    ("expired", "Expired"),
    ("all", "All"),
];

const CLASSES: [&str; 5] = ["fact", "procedure", "preference", "warning", "summary"];
const LEVELS: [Level; 4] = [
    Level::Public,
    Level::Internal,
    Level::Confidential,
    Level::Secret,
];

/// The list's query.
#[derive(Debug, Default, Deserialize)]
pub struct ListQuery {
    /// A status, or `all`; the review queue (`candidate`) by default.
    #[serde(default)]
    state: Option<String>,
    /// Only this class.
    #[serde(default)]
    class: Option<String>,
    /// The last id of the previous page.
    #[serde(default)]
    after: Option<String>,
}

/// `GET /ui/memories`.
pub async fn list(
    State(state): State<AppState>,
    viewer: Viewer,
    Query(query): Query<ListQuery>,
) -> Response {
    let wanted = query.state.clone().unwrap_or_else(|| "candidate".into());
    blocking_page(&state, &viewer, "Memories", "/ui/memories", move |rt| {
        let status = match wanted.as_str() {
            "all" => None,
            s => Some(MemoryStatus::parse(s).ok_or_else(|| {
                RuntimeError::Invalid(format!(
                    "`{s}` is not a memory state: use {}",
                    STATES.map(|(s, _)| s).join(", ")
                ))
            })?),
        };
        let class = match query.class.as_deref().filter(|c| !c.is_empty()) {
            None => None,
            Some(c) => Some(MemoryClass::parse(c).ok_or_else(|| {
                RuntimeError::Invalid(format!(
                    "`{c}` is not a memory class: use {}",
                    CLASSES.join(", ")
                ))
            })?),
        };
        let page = memory::page(rt.store(), status, class, query.after.as_deref(), PAGE_SIZE)?;
        Ok(content(&wanted, class, &page, query.after.is_some()))
    })
    .await
}

fn list_href(state: &str, class: Option<MemoryClass>) -> String {
    match class {
        Some(c) => format!("/ui/memories?state={state}&class={}", c.as_str()),
        None => format!("/ui/memories?state={state}"),
    }
}

fn memory_href(id: &str) -> String {
    format!("/ui/memories/{}", encode(id))
}

fn content(wanted: &str, class: Option<MemoryClass>, page: &MemoryPage, paged: bool) -> Markup {
    html! {
        h1 { "Memories" }
        nav.tabs aria-label="Memory states" {
            @for (s, name) in STATES {
                @if s == wanted {
                    a href=(list_href(s, class)) aria-current="page" { (name) }
                } @else {
                    a href=(list_href(s, class)) { (name) }
                }
                " "
            }
        }
        form.filters method="get" action="/ui/memories" role="search" {
            input type="hidden" name="state" value=(wanted);
            label {
                "Class "
                select name="class" {
                    option value="" { "every class" }
                    @for c in CLASSES {
                        @if class.map(MemoryClass::as_str) == Some(c) {
                            option value=(c) selected { (c) }
                        } @else {
                            option value=(c) { (c) }
                        }
                    }
                }
            }
            button type="submit" { "Filter" }
        }
        @if page.memories.is_empty() {
            @if paged {
                (empty("No more memories here.", html! { a href=(list_href(wanted, class)) { "Back to the first page" } }))
            } @else if wanted == "candidate" {
                (empty("Nothing waits for review.", html! {
                    "Distilling a finished run (" code { "tollgate memory distill RUN" }
                    ") adds what falls below the promotion thresholds here."
                }))
            } @else {
                (empty("No memory in this state.", html! { a href="/ui/memories" { "Show the review queue" } }))
            }
        } @else {
            div.scroll {
                table {
                    caption.visually-hidden { "Memories" }
                    thead { tr {
                        th scope="col" { "Memory" } th scope="col" { "Class" }
                        th scope="col" { "Says" } th scope="col" { "Scope" }
                        th scope="col" { "Sensitivity" } th scope="col" { "State" }
                        th.num scope="col" { "Score" } th.num scope="col" { "Sources" }
                        th.num scope="col" { "Used" }
                    } }
                    tbody {
                        @for m in &page.memories {
                            tr {
                                td { a href=(memory_href(&m.id)) { code { (m.id) } } }
                                td { (m.class.as_str()) }
                                td { (clip(&m.text, 160)) }
                                td { code { (m.scope) } }
                                td { (m.sensitivity.as_str()) }
                                td { (state_badge(m)) }
                                td.num { (format!("{:.3}", m.score.total)) }
                                td.num { (m.sources.len()) }
                                td.num { (m.usage_count) }
                            }
                        }
                    }
                }
            }
        }
        @if let Some(next) = &page.next {
            nav.pager aria-label="Pages" {
                a rel="next" href=(format!("{}&after={}", list_href(wanted, class), encode(next))) { "More memories →" }
            }
        }
    }
}

fn state_badge(m: &MemoryArtifact) -> Markup {
    html! {
        span class=(format!("badge memory-{}", m.status.as_str())) { (m.status.as_str()) }
        @if m.pinned { " " span.badge.memory-pinned { "pinned" } }
    }
}

/// The memory page's query.
#[derive(Debug, Default, Deserialize)]
pub struct MemoryQuery {
    /// The action just taken (to say so).
    #[serde(default)]
    done: Option<String>,
}

/// `GET /ui/memories/{id}`.
pub async fn memory(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(id): Path<String>,
    Query(query): Query<MemoryQuery>,
) -> Response {
    let csrf = viewer.0.csrf.clone();
    let me = viewer.0.principal.clone();
    blocking_page(&state, &viewer, "Memory", "/ui/memories", move |rt| {
        let m = memory::get(rt.store(), &id)?;
        let used = memory::usage(rt.store(), &id)?;
        Ok(detail(&m, &used, (&csrf, &me), query.done.as_deref(), None))
    })
    .await
}

fn detail(
    m: &MemoryArtifact,
    used: &[MemoryLink],
    (csrf, me): (&str, &crate::auth::Principal),
    done: Option<&str>,
    problem: Option<&str>,
) -> Markup {
    let s = &m.score;
    html! {
        p.crumbs { a href="/ui/memories" { "Memories" } " / " code { (m.id) } }
        h1 { (m.class.as_str()) " " (state_badge(m)) }
        @if let Some(done) = done { p.notice role="status" { "Done: " (done) "." } }
        @if let Some(problem) = problem { div.error role="alert" { (problem) } }
        blockquote.memory-text { (m.text) }
        (facts(&[
            ("Memory", html! { code { (m.id) } }),
            ("Scope", html! { code { (m.scope) } }),
            ("Sensitivity", html! { (m.sensitivity.as_str()) }),
            ("Expires", html! {
                @if m.expires_at == 0 { "no fixed end" }
                @else { (crate::clock::rfc3339(u64::try_from(m.expires_at).unwrap_or(0))) }
            }),
            ("Strength", html! { (m.strength) " source(s) said it" }),
            ("Used by", html! { (m.usage_count) " compile(s)" }),
            ("Provenance", html! { a href=(provenance_href(&format!("memory:{}", m.id))) { "Trace its sources and uses" } }),
        ]))
        h2 { "Score" }
        (facts(&[
            ("Confidence", html! { (format!("{:.3}", s.confidence)) " · how sure the extractor is" }),
            ("Reuse", html! { (format!("{:.3}", s.reuse)) " · how likely it matters again" }),
            ("Recency", html! { (format!("{:.3}", s.recency)) " · halves every 30 days" }),
            ("Sensitivity penalty", html! { (format!("{:.3}", s.sensitivity)) }),
            ("Total", html! {
                strong { (format!("{:.3}", s.total)) }
                " · promotion needs confidence ≥ " (memory::ACCEPT_CONFIDENCE)
                ", reuse ≥ 0.6 and sensitivity at most internal"
            }),
        ]))
        h2 { "Evidence" }
        ol.evidence {
            @for e in &m.sources {
                li {
                    a href=(event_href(&e.run, e.event)) { (e.run) " · step " (e.step) " · event " (e.event) }
                    " (episode " (e.episode) ")"
                    @if !e.quote.is_empty() { blockquote { (clip(&e.quote, 400)) } }
                }
            }
        }
        h2 { "Review" }
        @if me.kind == crate::auth::PrincipalKind::Admin { (controls(m, csrf, &me.name)) }
        h2 { "History" }
        @if m.decisions.is_empty() && m.edits.is_empty() && m.feedback.is_empty() {
            p.muted { "No decision yet." }
        } @else {
            ul.history {
                @for d in &m.decisions {
                    li {
                        strong { (d.decision.as_str()) } " by " (d.by) " at " (d.at) ": " (d.reason)
                        @if let Some(into) = &d.merged_into { " → " a href=(memory_href(into)) { code { (into) } } }
                    }
                }
                @for e in &m.edits {
                    li { strong { (e.field) } " " (e.from) " → " (e.to) " by " (e.by) " at " (e.at) ": " (e.reason) }
                }
                @for f in &m.feedback {
                    li {
                        "feedback " strong { (f.verdict.as_str()) } " by " (f.by) " at " (f.at)
                        @if !f.note.is_empty() { ": " (f.note) }
                        @if let Some(run) = &f.run { " (" a href=(run_href(run)) { (run) } ")" }
                    }
                }
            }
        }
        h2 { "Used by" }
        @if used.is_empty() {
            p.muted { "No compile has included it yet." }
        } @else {
            ul {
                @for l in used {
                    li {
                        a href=(event_href(&l.run, l.compile_seq)) { (l.run) " · compile " (l.compile_seq) }
                        " at " (l.at) ": " (l.reason)
                        " (" a href=(run_href(&l.run)) { "run" } ")"
                    }
                }
            }
        }
    }
}

fn controls(m: &MemoryArtifact, csrf: &str, me: &str) -> Markup {
    let open = !matches!(m.status, MemoryStatus::Rejected | MemoryStatus::Expired);
    let action = format!("/ui/memories/{}", encode(&m.id));
    html! {
        @if open {
            form.decide method="post" action=(action) {
                input type="hidden" name="csrf" value=(csrf);
                p.deciding { "Deciding as " strong { (me) } }
                label { "Reason " input type="text" name="reason" required maxlength="500"; }
                @if m.status != MemoryStatus::Approved {
                    button type="submit" name="action" value="accept" { "Accept" }
                }
                @if m.pinned {
                    button type="submit" name="action" value="unpin" { "Unpin" }
                } @else {
                    button type="submit" name="action" value="pin" { "Pin" }
                }
                button type="submit" name="action" value="reject" { "Reject" }
                @if m.status != MemoryStatus::Quarantined {
                    button type="submit" name="action" value="quarantine" { "Quarantine" }
                }
                button type="submit" name="action" value="expire" { "Expire" }
            }
            form.decide method="post" action=(action) {
                input type="hidden" name="csrf" value=(csrf);
                input type="hidden" name="action" value="sensitivity";
                p.deciding { "Deciding as " strong { (me) } }
                label { "Reason " input type="text" name="reason" required maxlength="500"; }
                label {
                    "Sensitivity "
                    select name="level" {
                        @for l in LEVELS {
                            @if l == m.sensitivity {
                                option value=(l.as_str()) selected { (l.as_str()) }
                            } @else {
                                option value=(l.as_str()) { (l.as_str()) }
                            }
                        }
                    }
                }
                button type="submit" { "Change sensitivity" }
            }
        } @else {
            p.muted { "It is " (m.status.as_str()) ": a final state." }
        }
    }
}

/// The review form.
#[derive(Debug, Deserialize)]
pub struct ActForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    action: String,
    #[serde(default)]
    reason: String,
    #[serde(default)]
    level: String,
}

/// `POST /ui/memories/{id}`: accept, pin, unpin, reject, quarantine, expire or change the
/// sensitivity, saying who and why.
pub async fn act(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(id): Path<String>,
    Form(form): Form<ActForm>,
) -> Response {
    if !csrf_ok(&viewer.0, &form.csrf) {
        return csrf_refused();
    }
    if let Some(refused) = admin_only(&viewer) {
        return refused;
    }
    let me = viewer.0.principal.name.clone();
    let runtime = state.runtime.clone();
    let key = id.clone();
    let action = form.action.clone();
    let acted = tokio::task::spawn_blocking(move || -> Result<(), RuntimeError> {
        let at = runtime.now_rfc3339();
        let store = runtime.store();
        let (by, reason) = (me.as_str(), form.reason.trim());
        let decide = |d: Decision| memory::record_decision(store, &key, d, by, reason, &at);
        match form.action.as_str() {
            "accept" => decide(Decision::Accept).map(drop)?,
            "reject" => decide(Decision::Reject).map(drop)?,
            "quarantine" => decide(Decision::Quarantine).map(drop)?,
            "expire" => decide(Decision::Expire).map(drop)?,
            "pin" | "unpin" => {
                if by.is_empty() || reason.is_empty() {
                    return Err(RuntimeError::Invalid(
                        "a review names who decided and why: give your name and a reason".into(),
                    ));
                }
                let m = memory::get(store, &key)?;
                // Pinning a candidate promotes it, as `POST /v2/memory/{id}/promote` does.
                if form.action == "pin" && m.status == MemoryStatus::Candidate {
                    decide(Decision::Accept)?;
                }
                memory::set_pinned(store, &key, form.action == "pin", &at)?;
            }
            "sensitivity" => {
                let level: Level =
                    serde_json::from_value(serde_json::Value::String(form.level.clone()))
                        .map_err(|_| {
                            RuntimeError::Invalid(format!(
                                "`{}` is not a sensitivity: use public, internal, confidential or secret",
                                form.level
                            ))
                        })?;
                memory::set_sensitivity(store, &key, level, by, reason, &at)?;
            }
            other => {
                return Err(RuntimeError::Invalid(format!(
                    "`{other}` is not a review action: accept, pin, unpin, reject, quarantine, expire or sensitivity"
                )));
            }
        }
        Ok(())
    })
    .await;
    match acted {
        Ok(Ok(())) => {
            Redirect::to(&format!("{}?done={}", memory_href(&id), encode(&action))).into_response()
        }
        Ok(Err(e)) => {
            let message = e.to_string();
            let status = crate::http::ApiError::from(e).status();
            problem_page(&state, &viewer, &id, &message, status).await
        }
        Err(e) => {
            problem_page(
                &state,
                &viewer,
                &id,
                &e.to_string(),
                StatusCode::INTERNAL_SERVER_ERROR,
            )
            .await
        }
    }
}

/// The memory again, saying why the action was not taken.
async fn problem_page(
    state: &AppState,
    viewer: &Viewer,
    id: &str,
    problem: &str,
    status: StatusCode,
) -> Response {
    let csrf = viewer.0.csrf.clone();
    let me = viewer.0.principal.clone();
    let (key, problem) = (id.to_string(), problem.to_string());
    let mut response = blocking_page(state, viewer, "Memory", "/ui/memories", move |rt| {
        let m = memory::get(rt.store(), &key)?;
        let used = memory::usage(rt.store(), &key)?;
        Ok(detail(&m, &used, (&csrf, &me), None, Some(&problem)))
    })
    .await;
    *response.status_mut() = status;
    response
}
