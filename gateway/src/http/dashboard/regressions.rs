//! The Regressions screen: the last suite's figures (pass rate, failures, flaky cases, drift,
//! coverage) and its failures clustered by signature, every case with how it last ran; a case
//! with its last failure (the assertions that failed, its signature), its history and its
//! versions. Read from the same `regress` functions the JSON routes use.

use axum::extract::{Path, State};
use axum::response::Response;
use maud::{Markup, html};

use super::layout::{empty, encode, facts, run_href};
use super::{Viewer, blocking_page};
use crate::http::AppState;
use crate::regress::store::{self as cases, CaseRun, CaseSummary, StoredSuite};
use crate::runtime::RuntimeError;

/// Runs shown in a case's history.
pub const HISTORY: u32 = 50;

fn case_href(id: &str) -> String {
    format!("/ui/regressions/{}", encode(id))
}

/// A status as a badge: passed, failed, flaky, error.
fn status(s: &str) -> Markup {
    let class = match s {
        "passed" => "label-win",
        "flaky" => "label-neutral",
        _ => "label-loss",
    };
    html! { span class=(format!("badge {class}")) { (s) } }
}

/// `GET /ui/regressions`.
pub async fn list(State(state): State<AppState>, viewer: Viewer) -> Response {
    blocking_page(&state, &viewer, "Regressions", "/ui/regressions", |rt| {
        let all = cases::cases(rt.store()).map_err(RuntimeError::Store)?;
        let suite = cases::last_suite(rt.store()).map_err(RuntimeError::Store)?;
        Ok(list_content(&all, suite.as_ref()))
    })
    .await
}

fn list_content(all: &[CaseSummary], suite: Option<&StoredSuite>) -> Markup {
    html! {
        h1 { "Regressions" }
        p.muted { "Recorded runs frozen as cases: a scrubbed fixture and assertions, rerun offline." }
        @if let Some(s) = suite { (suite_panel(s)) }
        @if all.is_empty() {
            (empty("No regression case yet.", html! {
                "Make one from a run: " code.command { "POST /v2/regressions/from-run/RUN" }
                " (files for a repository: " code.command { "tollgate regress from-run RUN" } ")."
            }))
        } @else {
            h2 { "Cases" }
            div.scroll {
                table {
                    caption.visually-hidden { "Regression cases" }
                    thead { tr {
                        th scope="col" { "Case" } th scope="col" { "Version" }
                        th scope="col" { "Agent" } th scope="col" { "Task type" }
                        th scope="col" { "Run" } th scope="col" { "Last run" }
                        th scope="col" { "Signature" } th scope="col" { "When" }
                    } }
                    tbody {
                        @for c in all {
                            tr {
                                td { a href=(case_href(&c.id)) { code { (c.id) } } br; span.muted { (c.name) } }
                                td.num { (c.version) }
                                td { (c.agent) }
                                td { (c.task_type) }
                                td { a href=(run_href(&c.run)) { code { (c.run) } } }
                                td { @if let Some(s) = &c.last_status { (status(s)) } @else { span.muted { "never run" } } }
                                td { @if let Some(s) = &c.last_signature { code { (s) } } }
                                td { @if let Some(at) = &c.last_run_at { (at) } }
                            }
                        }
                    }
                }
            }
        }
    }
}

fn suite_panel(s: &StoredSuite) -> Markup {
    html! {
        h2 { "Last suite " code { (s.id) } }
        @if let Some(f) = &s.figures {
            (facts(&[
                ("Pass rate", html! { (format!("{:.1} %", f.pass_rate * 100.0)) " of " (f.cases) " case(s)" }),
                ("Passed", html! { (f.passed) }),
                ("Failed", html! { (f.failed) }),
                ("Flaky", html! { (f.flaky) " (mixed over repeats; not failures)" }),
                ("Errors", html! { (f.errors) }),
                ("Drift", html! { (f.drift) " case(s) whose bundle no longer replays exactly" }),
                ("By agent", html! { @for (i, (k, v)) in f.by_agent.iter().enumerate() { @if i > 0 { ", " } (k) " " (v.passed) "/" (v.cases) } }),
                ("By task type", html! { @for (i, (k, v)) in f.by_task_type.iter().enumerate() { @if i > 0 { ", " } (k) " " (v.passed) "/" (v.cases) } }),
                ("Finished", html! { (s.finished_at.clone().unwrap_or_default()) }),
            ]))
        }
        @if !s.signatures.is_empty() {
            h3 { "Failures by signature" }
            ul {
                @for c in &s.signatures {
                    li {
                        code { (c.signature.id) } " · " (c.signature.summary) " — "
                        @for (i, id) in c.cases.iter().enumerate() {
                            @if i > 0 { ", " }
                            a href=(case_href(id)) { (id) }
                        }
                    }
                }
            }
        }
    }
}

/// `GET /ui/regressions/{id}`.
pub async fn case(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(id): Path<String>,
) -> Response {
    blocking_page(&state, &viewer, "Regression case", "/ui/regressions", move |rt| {
        let store = rt.store();
        let case = cases::case(store, &id, None)
            .map_err(RuntimeError::Store)?
            .ok_or_else(|| RuntimeError::NotFound(format!("no case `{id}`")))?;
        let versions = cases::versions(store, &id).map_err(RuntimeError::Store)?;
        let history = cases::history(store, &id, HISTORY, None).map_err(RuntimeError::Store)?;
        Ok(html! {
            p.crumbs { a href="/ui/regressions" { "Regressions" } " › " code { (case.id) } }
            h1 { (case.name) }
            (facts(&[
                ("Case", html! { code { (case.id) } " version " (case.version) }),
                ("Agent", html! { (case.agent) }),
                ("Task type", html! { (case.task_type) }),
                ("From", html! {
                    a href=(run_href(&case.source.run)) { code { (case.source.run) } }
                    @if let Some(s) = case.source.step { " step " (s) }
                    @if let Some(r) = &case.source.replay { " · replay " a href=(format!("/ui/replays/{}", encode(r))) { code { (r) } } }
                }),
                ("Mutations", html! { @if case.mutations.is_empty() { span.muted { "none" } } @else { ul { @for m in &case.mutations { li { (m.to_string()) } } } } }),
                ("Assertions", html! { (case.assertions.structural.len()) " structural, " (case.assertions.behavioral.len()) " behavioural, " (case.assertions.output.len()) " output, " (case.assertions.policy.len()) " policy" }),
                ("Fixture", html! { code { (crate::recorder::short(&case.bundle.hash)) } }),
            ]))
            @if let Some(last) = history.first() { (last_run(last)) }
            h2 { "History" }
            @if history.is_empty() {
                (empty("Never run.", html! { code.command { (format!("POST /v2/regressions/{}/execute", case.id)) } }))
            } @else {
                div.scroll {
                    table {
                        caption.visually-hidden { "Runs, newest first" }
                        thead { tr {
                            th scope="col" { "Run" } th scope="col" { "Version" } th scope="col" { "Status" }
                            th scope="col" { "Repeats" } th scope="col" { "Target" } th scope="col" { "Drift" }
                            th scope="col" { "Signature" } th scope="col" { "Suite" } th scope="col" { "When" }
                        } }
                        tbody {
                            @for r in &history {
                                tr {
                                    td.num { (r.id) }
                                    td.num { (r.version) }
                                    td { (status(&r.status)) }
                                    td { (r.passes) "/" (r.runs) " passed" }
                                    td { @if let Some(res) = &r.report.result { (res.target) } }
                                    td { @if r.drift { "drift" } @else { span.muted { "none" } } }
                                    td { @if let Some(s) = &r.signature { code { (s) } } }
                                    td { @if let Some(s) = &r.suite { code { (s) } } }
                                    td { (r.executed_at) }
                                }
                            }
                        }
                    }
                }
            }
            h2 { "Versions" }
            ol {
                @for v in &versions {
                    li { "version " (v.version) " · " (v.reason) " · " span.muted { (v.created_at) } }
                }
            }
            details {
                summary { "The case file" }
                pre.diff { (case.to_yaml()) }
            }
        })
    })
    .await
}

fn last_run(r: &CaseRun) -> Markup {
    let Some(res) = &r.report.result else {
        return html! {
            h2 { "Last run " (status(&r.status)) }
            @if let Some(e) = &r.report.error { pre.diff { (e) } }
        };
    };
    html! {
        h2 { "Last run " (status(&r.status)) }
        @if let Some(sig) = &res.signature {
            p { "Failure signature " code { (sig.id) } ": " (sig.summary) }
        }
        @if let Some(d) = &res.drift_detail { p { "Drift: " (d) } }
        @if !res.passed {
            div.scroll {
                table {
                    caption { "Failed assertions" }
                    thead { tr { th scope="col" { "Class" } th scope="col" { "#" } th scope="col" { "Kind" } th scope="col" { "What was expected and found" } } }
                    tbody {
                        @for a in res.failures() {
                            tr {
                                td { (a.class.as_str()) }
                                td.num { (a.index + 1) }
                                td { (a.kind) }
                                td { (a.message) }
                            }
                        }
                    }
                }
            }
        } @else {
            p.muted { "Every assertion passed (" (res.assertions.len()) ")." }
        }
    }
}
