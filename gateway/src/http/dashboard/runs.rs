//! The Runs screen: the runs, newest first, filtered by agent, status, task and start time
//! (the last hour, day or week) and paged by key;
//! and one run's timeline — its steps, and in each the compiles (every item with what became
//! of it and why), model calls, tool calls and results, with each decision inline and a link
//! to its receipt.

use axum::Form;
use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Redirect, Response};
use maud::{Markup, html};
use serde::Deserialize;

use super::layout::{
    self, TIMELINE_PAGE, clip, effect, empty, encode, facts, hash, provenance_href, receipt_href,
    rules, run_href,
};
use super::sessions::csrf_ok;
use super::{Viewer, admin_only, blocking_page, csrf_refused};
use crate::auth::PrincipalKind;
use crate::http::AppState;
use crate::policy::pins::{self, Pin};
use crate::recorder::events::{CompileEvent, DecisionEvent, Event};
use crate::recorder::format::{EventRecord, RunHeader, StepRecord};
use crate::recorder::handoff_line;
use crate::recorder::{DecisionCounts, RunFilter, RunKey, RunPage, RunSummary};

/// Runs per page.
pub const PAGE_SIZE: usize = 50;

/// The list's query: filters and where the page starts.
#[derive(Debug, Default, Deserialize)]
pub struct ListQuery {
    /// Only this agent's runs.
    #[serde(default)]
    agent: Option<String>,
    /// Only runs with this status.
    #[serde(default)]
    status: Option<String>,
    /// Only runs of this task.
    #[serde(default)]
    task: Option<String>,
    /// Only runs started in the last `hour`, `day` or `week` (any time otherwise).
    #[serde(default)]
    range: Option<String>,
    /// The start time of the last run of the previous page.
    #[serde(default)]
    after_at: Option<String>,
    /// Its id.
    #[serde(default)]
    after_id: Option<String>,
    /// `shown`: list the runs cases open too (hidden otherwise: a case's run lives as long as
    /// its case, and the Cases screen shows them).
    #[serde(default)]
    cases: Option<String>,
}

/// The time ranges the list offers, with their length in seconds.
const RANGES: [(&str, &str, u64); 3] = [
    ("hour", "last hour", 3_600),
    ("day", "last day", 86_400),
    ("week", "last week", 7 * 86_400),
];

impl ListQuery {
    /// The range asked for, if it is one the list offers.
    fn range(&self) -> Option<(&'static str, u64)> {
        let asked = self.range.as_deref()?;
        RANGES
            .iter()
            .find(|(name, _, _)| *name == asked)
            .map(|(name, _, secs)| (*name, *secs))
    }

    /// The filter, with a range counted back from `now_ms` (the runtime's clock).
    fn filter(&self, now_ms: i64) -> RunFilter {
        let given = |v: &Option<String>| v.clone().filter(|s| !s.trim().is_empty());
        let agent = given(&self.agent);
        let now = u64::try_from(now_ms / 1000).unwrap_or(0);
        RunFilter {
            // An agent asked for by name is shown, cases' included.
            without_cases: agent.is_none() && self.cases.as_deref() != Some("shown"),
            agent,
            status: given(&self.status),
            task: given(&self.task),
            since: self
                .range()
                .map(|(_, secs)| crate::clock::rfc3339(now.saturating_sub(secs))),
            after: match (given(&self.after_at), given(&self.after_id)) {
                (Some(started_at), Some(id)) => Some(RunKey { started_at, id }),
                _ => None,
            },
        }
    }
}

/// `GET /ui/runs`.
pub async fn list(
    State(state): State<AppState>,
    viewer: Viewer,
    Query(query): Query<ListQuery>,
) -> Response {
    let range = query.range().map(|(name, _)| name);
    blocking_page(&state, &viewer, "Runs", "/ui/runs", move |rt| {
        let shown = query.filter(rt.now_ms());
        let page = rt.recorder().page(&shown, PAGE_SIZE)?;
        Ok(list_content(&shown, range, &page))
    })
    .await
}

fn list_content(filter: &RunFilter, range: Option<&str>, page: &RunPage) -> Markup {
    let agent = filter.agent.clone().unwrap_or_default();
    let status = filter.status.clone().unwrap_or_default();
    let task = filter.task.clone().unwrap_or_default();
    let filtered = filter.agent.is_some()
        || filter.status.is_some()
        || filter.task.is_some()
        || range.is_some();
    html! {
        h1 { "Runs" }
        form.filters method="get" action="/ui/runs" role="search" {
            label { "Agent " input type="text" name="agent" value=(agent); }
            label {
                "Status "
                select name="status" {
                    option value="" selected[status.is_empty()] { "any" }
                    @for s in crate::recorder::write::RUN_STATUSES {
                        option value=(s) selected[status == s] { (s) }
                    }
                }
            }
            label { "Task " input type="text" name="task" value=(task); }
            label {
                "Started "
                select name="range" {
                    option value="" selected[range.is_none()] { "any time" }
                    @for (name, label, _) in RANGES {
                        option value=(name) selected[range == Some(name)] { (label) }
                    }
                }
            }
            label { input type="checkbox" name="cases" value="shown" checked[!filter.without_cases]; " Case runs" }
            button type="submit" { "Filter" }
            @if filtered { a href="/ui/runs" { "Clear" } }
        }
        @if page.runs.is_empty() {
            @if filtered || filter.after.is_some() {
                (empty("No run matches.", html! { a href="/ui/runs" { "Show every run" } }))
            } @else {
                (empty("No runs are recorded yet.", html! {
                    "Import the fixture runs with "
                    (layout::command("tollgate runs import fixtures/runs/*.json"))
                    ", or run the demo agent with " (layout::command("bash examples/demo.sh")) "."
                    " The runs cases open are hidden here: "
                    a href="/ui/runs?cases=shown" { "show them" } "."
                }))
            }
        } @else {
            div.scroll {
                table {
                    caption.visually-hidden { "Runs, newest first" }
                    thead { tr {
                        th scope="col" { "Run" } th scope="col" { "Agent" }
                        th scope="col" { "Task" } th scope="col" { "Status" }
                        th scope="col" { "Started" } th scope="col" class="num" { "Steps" }
                        th scope="col" class="num" { "Events" }
                        th scope="col" { "Decisions" }
                    } }
                    tbody {
                        @for r in &page.runs {
                            tr {
                                td { a href=(run_href(&r.id)) { (r.id) } }
                                td { (r.agent) }
                                td { (r.task) }
                                td { (layout::status(&r.status)) }
                                td { time datetime=(r.started_at) { (r.started_at) } }
                                td.num { (r.steps) }
                                td.num { (r.events) }
                                td { (decision_counts(&r.decisions)) }
                            }
                        }
                    }
                }
            }
            @if let Some(next) = &page.next {
                nav.pager aria-label="Pages" {
                    a rel="next" href=(next_href(filter, range, next)) { "Older runs →" }
                }
            }
        }
    }
}

/// A run's decisions as counts by effect (`3 allow · 1 deny`), the effects it has none of
/// left out.
fn decision_counts(counts: &DecisionCounts) -> Markup {
    html! {
        @if counts.total() == 0 {
            span.muted { "none" }
        } @else {
            span.counts {
                @for (i, (e, n)) in counts.by_effect().into_iter().filter(|(_, n)| *n > 0).enumerate() {
                    @if i > 0 { " · " }
                    (n) " " (effect(e))
                }
            }
        }
    }
}

fn next_href(filter: &RunFilter, range: Option<&str>, next: &RunKey) -> String {
    let mut query = vec![
        ("after_at", next.started_at.as_str()),
        ("after_id", next.id.as_str()),
    ];
    if let Some(a) = &filter.agent {
        query.push(("agent", a));
    }
    if let Some(s) = &filter.status {
        query.push(("status", s));
    }
    if let Some(t) = &filter.task {
        query.push(("task", t));
    }
    if let Some(r) = range {
        query.push(("range", r));
    }
    if !filter.without_cases {
        query.push(("cases", "shown"));
    }
    let parts: Vec<String> = query
        .iter()
        .map(|(k, v)| format!("{k}={}", encode(v)))
        .collect();
    format!("/ui/runs?{}", parts.join("&"))
}

/// The timeline's query: where the page of events starts.
#[derive(Debug, Default, Deserialize)]
pub struct TimelineQuery {
    /// The first event's sequence number (a multiple of the page size).
    #[serde(default)]
    from: Option<u64>,
}

/// `GET /ui/runs/{run_id}[?from=SEQ]`: a page of the run's events, grouped by step.
pub async fn timeline(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(run): Path<String>,
    Query(query): Query<TimelineQuery>,
) -> Response {
    let title = format!("Run {run}");
    let from = query.from.unwrap_or(0);
    let from = from - from % TIMELINE_PAGE;
    // An admin may re-pin a running run from here (the form carries the session's CSRF).
    let repin_csrf =
        (viewer.0.principal.kind == PrincipalKind::Admin).then(|| viewer.0.csrf.clone());
    blocking_page(&state, &viewer, &title, "/ui/runs", move |rt| {
        let recorder = rt.recorder();
        let header = recorder.header(&run)?;
        let summary = recorder.summary(&run)?;
        let steps = recorder.steps(&run)?;
        let events = recorder.events_window(&run, from, TIMELINE_PAGE)?;
        let pins = pins::history(rt.store(), &run)?;
        Ok(timeline_content(&Timeline {
            header: &header,
            summary: &summary,
            steps: &steps,
            events: &events,
            from,
            pins: &pins,
            repin_csrf: repin_csrf.as_deref(),
        }))
    })
    .await
}

/// One page of a run's timeline.
struct Timeline<'a> {
    header: &'a RunHeader,
    summary: &'a RunSummary,
    steps: &'a [StepRecord],
    events: &'a [EventRecord],
    from: u64,
    /// The run's re-pins, oldest first.
    pins: &'a [Pin],
    /// The viewer's CSRF token when it is an admin's session (who may re-pin).
    repin_csrf: Option<&'a str>,
}

fn timeline_content(t: &Timeline<'_>) -> Markup {
    let h = t.header;
    let total = t.summary.events;
    let paged = total > TIMELINE_PAGE;
    let shown_steps: Vec<&StepRecord> = t
        .steps
        .iter()
        .filter(|s| total == 0 || t.events.iter().any(|e| e.step == s.index))
        .collect();
    let page_href = |from: u64| {
        if from == 0 {
            run_href(&h.id)
        } else {
            format!("{}?from={from}", run_href(&h.id))
        }
    };
    let pager = html! {
        @if paged {
            nav.pager aria-label="Pages of events" {
                @if t.from > 0 {
                    a rel="prev" href=(page_href(t.from.saturating_sub(TIMELINE_PAGE))) { "← Earlier events" }
                    " "
                }
                span.muted {
                    "Events " (t.from) "–" (t.from + t.events.len().max(1) as u64 - 1) " of " (total)
                }
                @if t.from + TIMELINE_PAGE < total {
                    " "
                    a rel="next" href=(page_href(t.from + TIMELINE_PAGE)) { "Later events →" }
                }
            }
        }
    };
    html! {
        p.crumbs { a href="/ui/runs" { "Runs" } " / " (h.id) }
        h1 { "Run " (h.id) " " (layout::status(&h.status)) }
        p { a href=(provenance_href(&format!("run:{}", h.id))) { "Provenance of this run" } }
        (facts(&[
            ("Agent", html! { (h.agent) }),
            ("Task", html! { (h.task) }),
            ("Scope", html! { code { (h.scope) } }),
            ("Clearance", html! { (h.clearance) }),
            ("Started", html! { (h.started_at) }),
            ("Finished", html! { (h.finished_at.as_deref().unwrap_or("still running")) }),
            ("Envelopes", envelopes(t)),
            ("Decisions", decision_counts(&t.summary.decisions)),
            ("Steps and events", html! { (t.steps.len()) " · " (total) }),
        ]))
        @if t.steps.is_empty() {
            (empty("This run has no steps yet.", html! {
                "Steps appear as the agent records them (" code { "POST /v1/runs/{id}/steps" } ")."
            }))
        } @else if t.events.is_empty() && total > 0 {
            (empty("No events on this page.", html! { a href=(run_href(&h.id)) { "Back to the first events" } }))
        }
        (pager)
        @for step in shown_steps {
            section.step aria-labelledby=(format!("step-{}", step.index)) {
                h2 id=(format!("step-{}", step.index)) {
                    "Step " (step.index) " · " (step.name)
                    span.agent { " (" (step.agent) ")" }
                }
                ol.events {
                    @for e in t.events.iter().filter(|e| e.step == step.index) {
                        li id=(format!("event-{}", e.seq)) { (event_row(&h.id, e)) }
                    }
                }
            }
        }
        (pager)
    }
}

/// The versions the run opened with, each re-pin since (who, when, to what), and for an
/// admin's session on a running run the form that re-pins it to the versions in force.
fn envelopes(t: &Timeline<'_>) -> Markup {
    let h = t.header;
    let list = |labels: &[String]| {
        if labels.is_empty() {
            "none".to_string()
        } else {
            labels.join(", ")
        }
    };
    html! {
        span { (list(&h.envelopes)) }
        @if !t.pins.is_empty() {
            " (opened with)"
            ul.pins {
                @for p in t.pins {
                    li { "re-pinned to " (list(&p.envelopes)) " by " code { (p.pinned_by) } " at " (p.pinned_at) }
                }
            }
        }
        @if let (Some(csrf), "running") = (t.repin_csrf, h.status.as_str()) {
            form.repin method="post" action=(format!("{}/repin", run_href(&h.id))) {
                input type="hidden" name="csrf" value=(csrf);
                button type="submit" { "Re-pin to the versions in force" }
                span.muted { " A running run stays on its versions until re-pinned." }
            }
        }
    }
}

/// The re-pin form.
#[derive(Debug, Deserialize)]
pub struct RepinForm {
    #[serde(default)]
    csrf: String,
}

/// `POST /ui/runs/{run_id}/repin`: an admin moves a running run to the versions in force.
pub async fn repin(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(run): Path<String>,
    Form(form): Form<RepinForm>,
) -> Response {
    if !csrf_ok(&viewer.0, &form.csrf) {
        return csrf_refused();
    }
    if let Some(refused) = admin_only(&viewer) {
        return refused;
    }
    let (runtime, by, key) = (
        state.runtime.clone(),
        viewer.0.principal.id.clone(),
        run.clone(),
    );
    match tokio::task::spawn_blocking(move || runtime.repin(&key, &by, false)).await {
        Ok(Ok(_)) => Redirect::to(&run_href(&run)).into_response(),
        Ok(Err(e)) => {
            let message = e.to_string();
            not_repinned(&run, &message, crate::http::ApiError::from(e).status())
        }
        Err(e) => not_repinned(
            &run,
            &e.to_string(),
            axum::http::StatusCode::INTERNAL_SERVER_ERROR,
        ),
    }
}

/// Why a run was not re-pinned (it finished meanwhile...), with the way back to it.
fn not_repinned(run: &str, message: &str, status: axum::http::StatusCode) -> Response {
    let mut response = layout::bare_page(
        "Not re-pinned",
        html! {
            h1 { "Not re-pinned" }
            div.error role="alert" { (message) }
            p { a href=(run_href(run)) { "Back to the run" } }
        },
    );
    *response.status_mut() = status;
    response
}

fn event_row(run: &str, e: &EventRecord) -> Markup {
    let event = e.event();
    html! {
        span.seq { a href=(provenance_href(&format!("event:{run}/{}", e.seq))) title="provenance" { (e.seq) } }
        span.kind { (e.kind.replace('_', " ")) }
        time datetime=(e.at) { (e.at.split('T').nth(1).unwrap_or(&e.at).trim_end_matches('Z')) }
        div.body {
            @match event {
                Ok(Event::ContextOffered(o)) => {
                    (o.items.len()) " item(s) offered: "
                    (clip(&o.items.iter().map(|i| i.id.as_str()).collect::<Vec<_>>().join(", "), 120))
                }
                Ok(Event::Compile(c)) => (compile(run, e.seq, &c)),
                Ok(Event::ModelCall(m)) => {
                    (m.provider) " / " (m.request.model) " · request " (hash(&m.request_hash))
                }
                Ok(Event::ModelOutput(o)) => {
                    q { (clip(&o.response.content, 200)) }
                    @if !o.response.tool_calls.is_empty() {
                        " · " (o.response.tool_calls.len()) " tool call(s)"
                    }
                }
                Ok(Event::ToolCall(c)) => {
                    code { (c.tool) } " " span.muted { (c.call_id) }
                    pre.args { (clip(&c.arguments.to_string(), 400)) }
                }
                Ok(Event::ToolResult(r)) => {
                    span.muted { (r.call_id) } " " (r.status) ": "
                    (clip(r.output.as_str().map_or_else(|| r.output.to_string(), str::to_string).as_str(), 200))
                }
                Ok(Event::Decision(d)) => (decision(run, e.seq, &d)),
                Ok(Event::Approval(a)) => {
                    (a.approval_id) " " strong { (a.decision) } " by " (a.by)
                    @if !a.reason.is_empty() { ": " (clip(&a.reason, 200)) }
                }
                Ok(Event::Output(o)) => { q { (clip(&o.content, 300)) } }
                Ok(Event::Note(n)) => { (clip(&n.text, 300)) }
                Ok(Event::Error(err)) => { span.error { (clip(&err.message, 300)) } }
                Ok(Event::Handoff(h)) => {
                    @if h.record().is_some() { (clip(&handoff_line(&h), 400)) }
                    @else { pre.args { (clip(&handoff_line(&h), 400)) } }
                }
                Err(err) => { span.error { (err.to_string()) } }
            }
        }
    }
}

fn decision(run: &str, seq: u64, d: &DecisionEvent) -> Markup {
    let answered = d.answered();
    html! {
        (effect(d.decision.effect))
        @if answered != d.decision.effect { " → " (effect(answered)) }
        " " (d.decision.kind.as_str())
        @if let Some(call) = &d.call_id { " " span.muted { (call) } }
        " by " (rules(&d.decision.rules))
        @if let Some(reason) = &d.reason { div.reason { (reason) } }
        " " a href=(receipt_href(run, seq, None)) { "receipt" }
    }
}

fn compile(run: &str, seq: u64, c: &CompileEvent) -> Markup {
    html! {
        (c.tokens) " tokens · hash " (hash(&c.hash))
        details {
            summary { (c.outcomes.len()) " item(s): "
                (c.outcomes.iter().filter(|o| o.status != crate::compiler::ItemStatus::Excluded).count())
                " in the context" }
            div.scroll {
                table.items {
                    thead { tr {
                        th scope="col" { "Item" } th scope="col" { "Kind" } th scope="col" { "Outcome" }
                        th scope="col" { "Why" } th scope="col" class="num" { "Tokens" }
                        th scope="col" { "Policy" }
                    } }
                    tbody {
                        @for o in &c.outcomes {
                            tr {
                                td { code { (o.id) } }
                                td { (o.kind.to_string()) }
                                td { span class=(format!("badge item-{}", o.status.as_str())) { (o.status.as_str()) } }
                                td { (o.reason.to_string()) }
                                td.num { (o.tokens) }
                                td {
                                    @if let Some(p) = &o.policy {
                                        (effect(p.effect)) " "
                                        a href=(receipt_href(run, seq, Some(&o.id))) { "receipt" }
                                    } @else { span.muted { "—" } }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}
