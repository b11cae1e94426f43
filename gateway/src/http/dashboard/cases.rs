//! The Cases screen: every case with its pack and state, and the registered packs with a button
//! that opens a demo case; a case's inspection — worker evidence, each proposal with its preview
//! diff, policy decision, approval and commit, replay health, the recent timeline — with the
//! approve, reject and commit controls of a registered pack's case (a case of another pack is
//! read-only and says how to register it). Read and moved through the same `cases` functions
//! the JSON routes use.

use axum::Form;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use maud::{Markup, html};
use serde::Deserialize;

use super::layout::{empty, encode, facts, hash, rules};
use super::sessions::csrf_ok;
use super::{Viewer, admin_only, blocking_page, csrf_refused};
use crate::approvals::ApprovalAnswer;
use crate::cases::host::EngineHost;
use crate::cases::inspect::{self, Inspection};
use crate::cases::project::{CaseRow, ProposalRow};
use crate::http::AppState;
use crate::packs::adapter::Mode;
use crate::runtime::RuntimeError;

/// Cases listed.
const LISTED: u64 = 200;
/// Timeline events shown on a case.
const TIMELINE: u64 = 50;

fn case_href(id: &str) -> String {
    format!("/ui/cases/{}", encode(id))
}

fn process_env(k: &str) -> Option<String> {
    std::env::var(k).ok()
}

/// A case or proposal state as a badge.
fn state(s: &str) -> Markup {
    let class = match s {
        "committed" | "approved" | "allowed" | "allow" | "healthy" => "label-win",
        "denied" | "deny" | "rejected" | "failed" | "refused" | "drift" => "label-loss",
        _ => "label-neutral",
    };
    html! { span class=(format!("badge {class}")) { (s) } }
}

/// `GET /ui/cases`.
pub async fn list(State(state_): State<AppState>, viewer: Viewer) -> Response {
    let packs = state_.packs.clone();
    let csrf = viewer.0.csrf.clone();
    blocking_page(&state_, &viewer, "Cases", "/ui/cases", move |rt| {
        let cases = inspect::list(rt.store(), None, LISTED)?;
        Ok(html! {
            h1 { "Cases" }
            p.muted { "Append-only cases of the registered packs: proposal, preview, policy, approval, commit — every step an event." }
            h2 { "Packs" }
            @if packs.packs().next().is_none() {
                (empty("No pack is registered with this server.", html! {
                    "Start it with " code.command { "TOLLGATE_PACK_ROOTS=PACK_ROOT tollgate serve" }
                    " (a pack: " code.command { "tollgate init intake_review --output PACK_ROOT" } ")."
                }))
            } @else {
                ul.packs {
                    @for p in packs.packs() {
                        li {
                            strong { (p.manifest.title) } " " code { (p.engine()) }
                            @if !p.manifest.description.is_empty() { " — " (p.manifest.description) }
                            @if p.manifest.demo.is_some() {
                                form.inline method="post" action=(format!("/ui/packs/{}/{}/demo-case", encode(&p.manifest.engine_id), encode(&p.manifest.engine_version))) {
                                    input type="hidden" name="csrf" value=(csrf);
                                    button type="submit" { "Open a demo case" }
                                }
                            }
                        }
                    }
                }
            }
            @for u in packs.unregistered() {
                div.error role="alert" {
                    "Not registered: " code { (u.root) }
                    @if let Some(first) = &u.clashes_with {
                        ". Its engine is already registered from " code { (first) }
                        ": give one of the two packs another " code { "engine_id" } " or " code { "engine_version" } " in its pack.yaml."
                    } @else {
                        ul { @for f in &u.faults { li { (f) } } }
                        code.command { "tollgate packs validate --pack-root " (u.root) } " checks it again."
                    }
                }
            }
            h2 { "Cases" }
            @if cases.is_empty() {
                (empty("No case yet.", html! {
                    "Open one above, run a pack's demo script, or " code.command { "tollgate demo seed" } "."
                }))
            } @else {
                div.scroll {
                    table {
                        caption.visually-hidden { "Cases" }
                        thead { tr {
                            th scope="col" { "Case" } th scope="col" { "Title" } th scope="col" { "Pack" }
                            th scope="col" { "State" } th scope="col" { "Events" } th scope="col" { "Updated" }
                        } }
                        tbody {
                            @for c in &cases { (case_row(c, packs.get(&c.engine_id, &c.engine_version).is_some())) }
                        }
                    }
                }
            }
        })
    })
    .await
}

fn case_row(c: &CaseRow, registered: bool) -> Markup {
    html! {
        tr {
            td { a href=(case_href(&c.case_id)) { code { (c.case_id) } } }
            td { (c.title) }
            td { code { (c.pack_id) } @if !registered { " " span.muted { "(read-only)" } } }
            td { (state(&c.state)) }
            td.num { (c.version) }
            td { (c.updated_at) }
        }
    }
}

/// What a case page was asked to say.
#[derive(Debug, Deserialize)]
pub struct CaseQuery {
    #[serde(default)]
    done: Option<String>,
}

/// `GET /ui/cases/{case_id}`.
pub async fn case(
    State(state_): State<AppState>,
    viewer: Viewer,
    Path(id): Path<String>,
    Query(query): Query<CaseQuery>,
) -> Response {
    case_page(&state_, &viewer, id, query.done, None, StatusCode::OK).await
}

async fn case_page(
    state_: &AppState,
    viewer: &Viewer,
    id: String,
    done: Option<String>,
    problem: Option<String>,
    status: StatusCode,
) -> Response {
    let packs = state_.packs.clone();
    let csrf = viewer.0.csrf.clone();
    let me = viewer.0.principal.name.clone();
    let mut response = blocking_page(state_, viewer, "Case", "/ui/cases", move |rt| {
        let r = inspect::inspect(rt.store(), &packs, &id, Some(TIMELINE))
            .map_err(RuntimeError::from)?;
        Ok(detail(
            &r,
            (&csrf, &me),
            done.as_deref(),
            problem.as_deref(),
        ))
    })
    .await;
    if status != StatusCode::OK {
        *response.status_mut() = status;
    }
    response
}

fn detail(
    r: &Inspection,
    (csrf, me): (&str, &str),
    done: Option<&str>,
    problem: Option<&str>,
) -> Markup {
    let c = &r.case;
    let h = &r.replay_health;
    html! {
        p.crumbs { a href="/ui/cases" { "Cases" } " / " code { (c.case_id) } }
        h1 { (c.title) " " (state(&c.state)) }
        @if let Some(done) = done { p.notice role="status" { "Done: " (done) "." } }
        @if let Some(problem) = problem { div.error role="alert" { (problem) } }
        @if let Some(g) = &r.pack.guidance { div.error role="note" { "Read-only here: " (g) } }
        (facts(&[
            ("Case", html! { code { (c.case_id) } }),
            ("Pack", html! { code { (c.pack_id) } " (" (r.pack.engine) ")" @if r.pack.changed_since_opened { " " span.muted { "— its files changed since the case was opened" } } }),
            ("Version", html! { (c.version) " event(s), head " (hash(&c.head_hash)) }),
            ("Replay health", html! {
                (state(&h.status))
                " " (h.events) " event(s) replayed, chain " (h.chain)
                @if !h.drift.is_empty() { ", " (h.drift.len()) " row(s) drift" }
            }),
            ("Opened", html! { (c.opened_at) }),
        ]))
        @if let Some(help) = &h.help { p.muted { (help) } }
        h2 { "Worker evidence" }
        @if r.worker_evidence.is_empty() {
            p.muted { "No evidence yet." }
        } @else {
            table {
                caption.visually-hidden { "Worker evidence" }
                thead { tr { th scope="col" { "Worker" } th scope="col" { "Key" } th scope="col" { "Value" } th scope="col" { "Source" } } }
                tbody {
                    @for e in &r.worker_evidence {
                        tr { td { (e.worker) } td { code { (e.key) } } td { code { (crate::packs::policy::symbol_of(&e.value)) } } td { (e.source) } }
                    }
                }
            }
        }
        h2 { "Proposals" }
        @if r.proposal_actions.is_empty() { p.muted { "No proposal yet." } }
        @for p in &r.proposal_actions { (proposal(r, p, csrf, me)) }
        h2 { "Timeline" }
        p.muted { "The " (r.timeline.len()) " most recent events, newest first (all of them: " code.command { "GET /cases/" (c.case_id) "/timeline" } ")." }
        ol.timeline reversed {
            @for t in &r.timeline {
                li { strong { (t.kind) } " · " (t.summary) " · " span.muted { (t.actor) " at " (t.at) } }
            }
        }
    }
}

fn proposal(r: &Inspection, p: &ProposalRow, csrf: &str, me: &str) -> Markup {
    let pid = &p.proposal_id;
    let preview = r.preview_diffs.iter().find(|x| &x.proposal_id == pid);
    let policy = r.policy_status.iter().find(|x| &x.proposal_id == pid);
    let commit = r.commit_status.iter().find(|x| &x.proposal_id == pid);
    let action = format!(
        "/ui/cases/{}/proposals/{}",
        encode(&r.case.case_id),
        encode(pid)
    );
    html! {
        section.proposal aria-label=(format!("Proposal {pid}")) {
            h3 { code { (pid) } " " (p.wording) " " (state(&p.state)) }
            p.muted { "Capability " code { (p.capability) } " → action " code { (p.action) } }
            @if let Some(pv) = preview {
                table {
                    caption { "Preview " (hash(&pv.preview_hash)) ": " (pv.summary) }
                    thead { tr { th scope="col" { "Target" } th scope="col" { "Field" } th scope="col" { "Before" } th scope="col" { "After" } } }
                    tbody {
                        @for ch in &pv.changes {
                            tr {
                                td { code { (ch.target) } } td { (ch.field) }
                                td { @if ch.before.is_empty() { span.muted { "(none)" } } @else { (ch.before) } }
                                td { strong { (ch.after) } }
                            }
                        }
                    }
                }
            }
            @if let Some(pol) = policy {
                p { "Policy: " (state(&pol.effect)) " by " (rules(&pol.rules))
                    @if let (Some(a), Some(s)) = (&pol.approval_id, &pol.approval_state) { " · approval " code { (a) } " " (state(s)) }
                }
            }
            @if let Some(cm) = commit {
                p { "Commit (" (cm.mode) "): " (state(&cm.state)) }
                details { summary { "Receipt and verification" } pre { (serde_json::to_string_pretty(&cm.detail).unwrap_or_default()) } }
            }
            @if r.pack.registered {
                @if p.state == "awaiting_approval" {
                    form.decide method="post" action=(action) {
                        input type="hidden" name="csrf" value=(csrf);
                        p.deciding { "Deciding as " strong { (me) } }
                        label { "Reason " input type="text" name="reason" maxlength="500"; }
                        button type="submit" name="action" value="approve" { "Approve the change as previewed" }
                        button type="submit" name="action" value="reject" { "Reject" }
                    }
                }
                @if p.state == "approved" {
                    form.decide method="post" action=(action) {
                        input type="hidden" name="csrf" value=(csrf);
                        button type="submit" name="action" value="commit" { "Commit (dry run)" }
                    }
                }
            }
        }
    }
}

/// The controls' form.
#[derive(Debug, Deserialize)]
pub struct StepForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    action: String,
    #[serde(default)]
    reason: String,
}

/// `POST /ui/cases/{case_id}/proposals/{proposal_id}`: approve, reject or commit (dry run).
pub async fn step(
    State(state_): State<AppState>,
    viewer: Viewer,
    Path((id, pid)): Path<(String, String)>,
    Form(form): Form<StepForm>,
) -> Response {
    if !csrf_ok(&viewer.0, &form.csrf) {
        return csrf_refused();
    }
    if form.action == "commit"
        && let Some(refused) = admin_only(&viewer)
    {
        return refused;
    }
    let principal = viewer.0.principal.clone();
    let (runtime, packs) = (state_.runtime.clone(), state_.packs.clone());
    let (key, action) = (id.clone(), form.action.clone());
    let moved = tokio::task::spawn_blocking(move || {
        let host = EngineHost::new(&runtime, &packs, &process_env);
        let answer = |approve| ApprovalAnswer {
            approve,
            by: principal.name.clone(),
            reason: form.reason.trim().to_string(),
            principal: Some(principal.id.clone()),
        };
        match form.action.as_str() {
            "approve" => host.answer(&key, &pid, &answer(true)),
            "reject" => host.answer(&key, &pid, &answer(false)),
            "commit" => host.commit(&key, &pid, Mode::DryRun, None, "dashboard"),
            other => Err(crate::cases::CaseError::Invalid(format!(
                "`{other}` is not a step here: approve, reject or commit"
            ))),
        }
    })
    .await;
    match moved {
        Ok(Ok(_)) => {
            Redirect::to(&format!("{}?done={}", case_href(&id), encode(&action))).into_response()
        }
        Ok(Err(e)) => {
            let message = e.to_string();
            let status = crate::http::ApiError::from(e).status();
            case_page(&state_, &viewer, id, None, Some(message), status).await
        }
        Err(e) => {
            case_page(
                &state_,
                &viewer,
                id,
                None,
                Some(e.to_string()),
                StatusCode::INTERNAL_SERVER_ERROR,
            )
            .await
        }
    }
}

/// The demo form.
#[derive(Debug, Deserialize)]
pub struct CsrfForm {
    #[serde(default)]
    csrf: String,
}

/// `POST /ui/packs/{engine_id}/{engine_version}/demo-case`: opens the pack's demo case and
/// shows it.
pub async fn demo(
    State(state_): State<AppState>,
    viewer: Viewer,
    Path((engine_id, engine_version)): Path<(String, String)>,
    Form(form): Form<CsrfForm>,
) -> Response {
    if !csrf_ok(&viewer.0, &form.csrf) {
        return csrf_refused();
    }
    if let Some(refused) = admin_only(&viewer) {
        return refused;
    }
    let (runtime, packs) = (state_.runtime.clone(), state_.packs.clone());
    let opened = tokio::task::spawn_blocking(move || {
        EngineHost::new(&runtime, &packs, &process_env).demo(
            &engine_id,
            &engine_version,
            "dashboard",
        )
    })
    .await;
    match opened {
        Ok(Ok(m)) => {
            Redirect::to(&format!("{}?done=opened", case_href(&m.case_id))).into_response()
        }
        Ok(Err(e)) => {
            let message = e.to_string();
            let status = crate::http::ApiError::from(e).status();
            let mut r = blocking_page(&state_, &viewer, "Cases", "/ui/cases", move |_| {
                Ok(html! { h1 { "Cases" } div.error role="alert" { (message) } p { a href="/ui/cases" { "Back to the cases" } } })
            })
            .await;
            *r.status_mut() = status;
            r
        }
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    }
}
