//! The Replays screen: counterfactual results newest first (paged by key), a result with its
//! baseline and replay side by side — included items, exclusions, tokens by kind, the model's
//! answers as a diff, the tool trace, the metrics and the label — and a batch with its rule
//! attribution. Read from the same `replay` functions the JSON routes and the CLI use.

use axum::extract::{Path, Query, State};
use axum::response::Response;
use maud::{Markup, html};
use serde::Deserialize;

use super::layout::{empty, encode, facts, run_href};
use super::{Viewer, blocking_page};
use crate::http::AppState;
use crate::replay::ReplayError;
use crate::replay::counterfactual::{CompileTrace, ItemTrace, StepTrace, ToolTrace};
use crate::replay::jobs::{BatchView, batch_view};
use crate::replay::metrics::Label;
use crate::replay::result::{ReplayResult, ResultSummary, StepComparison};
use crate::replay::store::{self, ResultFilter};
use crate::runtime::RuntimeError;

/// Results on one page.
pub const PAGE_SIZE: usize = 50;

/// A replay error as the dashboard shows it (the JSON routes' statuses).
fn runtime(e: ReplayError) -> RuntimeError {
    match e {
        ReplayError::NotFound(m) => RuntimeError::NotFound(m),
        ReplayError::Store(s) => RuntimeError::Store(s),
        ReplayError::Recorder(r) => RuntimeError::Recorder(r),
        ReplayError::Scenario(s) => RuntimeError::Invalid(s.message),
        other => RuntimeError::Conflict(other.to_string()),
    }
}

/// The list's query.
#[derive(Debug, Default, Deserialize)]
pub struct ListQuery {
    /// Only this run's results.
    #[serde(default)]
    run: Option<String>,
    /// The last result of the previous page.
    #[serde(default)]
    before: Option<String>,
}

fn replay_href(id: &str) -> String {
    format!("/ui/replays/{}", encode(id))
}

fn label(l: Label) -> Markup {
    html! { span class=(format!("badge label-{}", l.as_str())) { (l.as_str()) } }
}

/// `GET /ui/replays`.
pub async fn list(
    State(state): State<AppState>,
    viewer: Viewer,
    Query(query): Query<ListQuery>,
) -> Response {
    blocking_page(&state, &viewer, "Replays", "/ui/replays", move |rt| {
        let run = query.run.filter(|r| !r.is_empty());
        let results = store::results(
            rt.store(),
            &ResultFilter {
                run: run.clone(),
                before: query.before.clone(),
                limit: PAGE_SIZE + 1,
                ..ResultFilter::default()
            },
        )
        .map_err(RuntimeError::Store)?;
        Ok(list_content(
            run.as_deref(),
            &results,
            query.before.is_some(),
        ))
    })
    .await
}

fn list_content(run: Option<&str>, results: &[ResultSummary], paged: bool) -> Markup {
    let shown = &results[..results.len().min(PAGE_SIZE)];
    let next = (results.len() > PAGE_SIZE)
        .then(|| shown.last().map(|r| r.id.clone()))
        .flatten();
    html! {
        h1 { "Replays" }
        p.muted { "Recorded runs rerun with mutations, each compared with its baseline (the exact replay of the recording)." }
        form.filters method="get" action="/ui/replays" role="search" {
            label { "Run " input type="text" name="run" value=(run.unwrap_or("")) placeholder="run id"; }
            button type="submit" { "Filter" }
        }
        @if shown.is_empty() {
            @if paged {
                (empty("No older results.", html! { a href="/ui/replays" { "Back to the newest" } }))
            } @else {
                (empty("No replay yet.", html! {
                    "Create a scenario and run it: " code.command { "tollgate replay run SCENARIO.yaml" }
                    ", or " code.command { "tollgate replay batch --run RUN --sweep disable-each-rule" } "."
                }))
            }
        } @else {
            div.scroll {
                table {
                    caption.visually-hidden { "Replay results" }
                    thead { tr {
                        th scope="col" { "Result" } th scope="col" { "Run" }
                        th scope="col" { "Mutations" } th scope="col" { "Label" }
                        th scope="col" { "First change" } th scope="col" { "Batch" }
                        th scope="col" { "Ran" }
                    } }
                    tbody {
                        @for r in shown {
                            tr {
                                td { a href=(replay_href(&r.id)) { code { (r.id) } } }
                                td { a href=(run_href(&r.run)) { code { (r.run) } } }
                                td { (mutation_list(&r.mutations)) }
                                td { (label(r.label)) }
                                td { @if let Some(s) = r.first_change { "step " (s) } @else { span.muted { "none" } } }
                                td { @if let Some(b) = &r.batch { a href=(replay_href(b)) { code { (b) } } } }
                                td { (r.executed_at) }
                            }
                        }
                    }
                }
            }
        }
        @if let Some(next) = next {
            nav.pager aria-label="Pages" {
                a rel="next" href=(format!("/ui/replays?run={}&before={}", encode(run.unwrap_or("")), encode(&next))) { "Older results →" }
            }
        }
    }
}

fn mutation_list(mutations: &[crate::replay::scenario::Mutation]) -> Markup {
    html! {
        @for (i, m) in mutations.iter().enumerate() {
            @if i > 0 { "; " }
            (m.to_string())
        }
    }
}

/// `GET /ui/replays/{id}`: a result (`rpl-…`) or a batch (`bat-…`).
pub async fn replay(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(id): Path<String>,
) -> Response {
    blocking_page(&state, &viewer, "Replay", "/ui/replays", move |rt| {
        if id.starts_with("bat-") {
            let view = batch_view(rt.store(), &id).map_err(runtime)?;
            return Ok(batch(&view));
        }
        let result = store::result(rt.store(), &id)
            .map_err(RuntimeError::Store)?
            .ok_or_else(|| RuntimeError::NotFound(format!("no replay `{id}`")))?;
        Ok(detail(&result))
    })
    .await
}

fn detail(r: &ReplayResult) -> Markup {
    let changed: Vec<&StepComparison> = r.steps.iter().filter(|s| s.changed).collect();
    let unchanged: Vec<String> = r
        .steps
        .iter()
        .filter(|s| !s.changed)
        .map(|s| s.step.to_string())
        .collect();
    html! {
        p.crumbs { a href="/ui/replays" { "Replays" } " › " code { (r.id) } }
        h1 { "Replay " (label(r.label)) }
        (facts(&[
            ("Run", html! { a href=(run_href(&r.run)) { code { (r.run) } } @if let Some(s) = r.step { " step " (s) } }),
            ("Scenario", html! { code { (r.scenario) } @if let Some(n) = &r.name { " · " (n) } }),
            ("Mutations", html! { ul { @for m in &r.mutations { li { (m.to_string()) } } } }),
            ("Tools", html! { (serde_json::to_value(r.mode).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default()) }),
            ("Changed answers from", html! { @match r.model { crate::replay::scenario::ModelSource::Recorded => "the fake provider", crate::replay::scenario::ModelSource::Live => "a live model" } }),
            ("First change", html! { @if let Some(s) = r.first_change { a href=(format!("#step-{s}")) { "step " (s) } } @else { "none: the replay is the baseline" } }),
            ("Batch", html! { @if let Some(b) = &r.batch { a href=(replay_href(b)) { code { (b) } } } @else { span.muted { "none" } } }),
            ("Ran", html! { (r.executed_at) }),
        ]))
        h2 { "Outcome" }
        div.scroll {
            table {
                caption.visually-hidden { "Metrics, baseline and replay" }
                thead { tr {
                    th scope="col" { "Metric" } th.num scope="col" { "Baseline" }
                    th.num scope="col" { "Replay" } th.num scope="col" { "Delta" }
                    th scope="col" { "Label" } th scope="col" { "What the replay did" }
                } }
                tbody {
                    @for m in &r.metrics {
                        tr {
                            th scope="row" { (m.metric.as_str()) }
                            td.num { (m.baseline) }
                            td.num { (m.replay) }
                            td.num { (format!("{:+}", m.delta)) }
                            td { (label(m.label)) }
                            td { (m.message) }
                        }
                    }
                }
            }
        }
        @for n in &r.notes { p.note role="note" { (n) } }
        h2 { "Steps, baseline and replay" }
        @if changed.is_empty() {
            (empty("No step changed.", html! { "The mutations left every compile, answer and call as recorded." }))
        }
        @for s in changed {
            (step(r, s))
        }
        @if !unchanged.is_empty() {
            p.muted { "Unchanged: step " (unchanged.join(", ")) "." }
        }
    }
}

fn step_of(t: &crate::replay::counterfactual::Trajectory, step: u32) -> Option<&StepTrace> {
    t.steps.iter().find(|s| s.step == step)
}

fn step(r: &ReplayResult, s: &StepComparison) -> Markup {
    let (b, p) = (step_of(&r.baseline, s.step), step_of(&r.replay, s.step));
    let changed_items: Vec<&str> = s.items.iter().map(|i| i.id.as_str()).collect();
    html! {
        section.step id=(format!("step-{}", s.step)) {
            h3 { "Step " (s.step) " · " (s.name) }
            div.side-by-side {
                @for (side, trace) in [("Baseline", b), ("Replay", p)] {
                    div {
                        h4 { (side) }
                        @if let Some(t) = trace {
                            @for c in &t.compiles { (compile(c, &changed_items)) }
                            (tools(&t.tools))
                        }
                    }
                }
            }
            @if !s.allocation.is_empty() {
                div.scroll {
                    table {
                        caption { "Tokens by kind" }
                        thead { tr { th scope="col" { "Kind" } th.num scope="col" { "Baseline" } th.num scope="col" { "Replay" } } }
                        tbody {
                            @for a in &s.allocation {
                                tr.changed[a.baseline != a.replay] {
                                    th scope="row" { (a.kind.as_str()) }
                                    td.num { (a.baseline) }
                                    td.num { (a.replay) }
                                }
                            }
                        }
                    }
                }
            }
            @for a in &s.answers {
                details open {
                    summary { "The model's answer at event " (a.seq) ": " (format!("{:?}", a.baseline).to_lowercase()) " → " (format!("{:?}", a.replay).to_lowercase()) }
                    pre.diff {
                        @for line in a.diff.lines() {
                            @if line.starts_with('+') && !line.starts_with("+++") {
                                span.add { (line) } "\n"
                            } @else if line.starts_with('-') && !line.starts_with("---") {
                                span.del { (line) } "\n"
                            } @else {
                                (line) "\n"
                            }
                        }
                    }
                }
            }
        }
    }
}

fn item_row(i: &ItemTrace, changed: bool) -> Markup {
    html! {
        tr.changed[changed] {
            td { code { (i.id) } }
            td { span class=(format!("badge item-{}", i.status)) { (i.status) } }
            td.num { (i.tokens) }
            td.reason { (i.why) }
        }
    }
}

fn compile(c: &CompileTrace, changed: &[&str]) -> Markup {
    html! {
        div.scroll {
            table {
                caption { "Compile: " (c.tokens) " of " (c.budget) " tokens"
                    @if let Some(e) = &c.error { " · " span.error { (e) } } }
                thead { tr { th scope="col" { "Item" } th scope="col" { "Status" } th.num scope="col" { "Tokens" } th scope="col" { "Why" } } }
                tbody {
                    @for i in &c.items { (item_row(i, changed.contains(&i.id.as_str()))) }
                }
            }
        }
    }
}

fn tools(calls: &[ToolTrace]) -> Markup {
    html! {
        @if calls.is_empty() {
            p.muted { "No tool call." }
        } @else {
            div.scroll {
                table {
                    caption { "Tool calls" }
                    thead { tr { th scope="col" { "Call" } th scope="col" { "Decision" } th scope="col" { "Served" } th scope="col" { "Why" } } }
                    tbody {
                        @for t in calls {
                            tr {
                                td { code { (t.tool) } " " span.muted { (t.call_id) } }
                                td { span class=(format!("badge effect-{}", t.effect)) { (t.effect) } }
                                td { (format!("{:?}", t.served).to_lowercase()) @if let Some(st) = &t.status { " · " (st) } }
                                td.reason { (t.why) }
                            }
                        }
                    }
                }
            }
        }
    }
}

fn batch(v: &BatchView) -> Markup {
    html! {
        p.crumbs { a href="/ui/replays" { "Replays" } " › " code { (v.batch.id) } }
        h1 { "Batch" }
        (facts(&[
            ("Run", html! { a href=(run_href(&v.batch.spec.run)) { code { (v.batch.spec.run) } } }),
            ("Done", html! { (v.done) " of " (v.total) " scenarios" @if let Some(s) = &v.job_state { " · job " (s) } }),
            ("Labels", html! { @for (l, n) in &v.labels { span.count { (n) " " (l) } } }),
            ("Created", html! { (v.batch.created_at) " by " (v.batch.created_by) }),
        ]))
        @if !v.attribution.is_empty() {
            h2 { "What each rule does to the outcome" }
            p.muted { "Each rule disabled in turn: the rules whose absence changes the outcome first." }
            div.scroll {
                table {
                    caption.visually-hidden { "Rule attribution" }
                    thead { tr { th scope="col" { "Rule" } th scope="col" { "Without it" } th scope="col" { "From" } th scope="col" { "Metrics that moved" } } }
                    tbody {
                        @for a in &v.attribution {
                            tr {
                                th scope="row" { a href=(replay_href(&a.result)) { code { (a.rule) } } }
                                td { (label(a.label)) }
                                td { @if let Some(s) = a.first_change { "step " (s) } @else { span.muted { "no change" } } }
                                td { @for (i, (m, d)) in a.moved.iter().enumerate() { @if i > 0 { ", " } (m) " " (format!("{d:+}")) } }
                            }
                        }
                    }
                }
            }
        }
        h2 { "Results" }
        @if v.results.is_empty() {
            (empty("No result yet.", html! { "The batch's job runs its scenarios; this page shows them as they finish." }))
        } @else {
            div.scroll {
                table {
                    caption.visually-hidden { "Results of the batch" }
                    thead { tr { th scope="col" { "Result" } th scope="col" { "Mutations" } th scope="col" { "Label" } th scope="col" { "First change" } } }
                    tbody {
                        @for r in &v.results {
                            tr {
                                td { a href=(replay_href(&r.id)) { code { (r.id) } } }
                                td { (mutation_list(&r.mutations)) }
                                td { (label(r.label)) }
                                td { @if let Some(s) = r.first_change { "step " (s) } @else { span.muted { "none" } } }
                            }
                        }
                    }
                }
            }
        }
    }
}
