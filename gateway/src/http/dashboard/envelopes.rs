//! The Envelopes screen: the envelopes in force, one envelope's versions and YAML, a diff
//! between two versions rule by rule, and the simulator — a stored version dry-run on a
//! recorded run, what it would allow, deny or redact beside what the run recorded.

use axum::extract::{Path, Query, State};
use axum::response::Response;
use maud::{Markup, html};
use serde::Deserialize;
use tollgate_rules::envelope::{EnvelopeDiff, PolicyEnvelope};

use super::layout::{
    clip, effect, empty, encode, event_href, facts, receipt_href, rules, run_href,
};
use super::{Viewer, blocking_page};
use crate::http::AppState;
use crate::policy::{EnvelopeVersion, list_versions, version_source};
use crate::recorder::{RunFilter, RunSummary};
use crate::simulate::SimulationReport;

/// Recent runs offered to the simulator.
const RUNS_OFFERED: usize = 100;

/// `GET /ui/envelopes`.
pub async fn list(State(state): State<AppState>, viewer: Viewer) -> Response {
    blocking_page(&state, &viewer, "Envelopes", "/ui/envelopes", move |rt| {
        let set = rt.envelopes()?;
        let versions = list_versions(rt.store(), None)?;
        Ok(list_content(set.envelopes(), &versions))
    })
    .await
}

fn list_content(envelopes: &[PolicyEnvelope], versions: &[EnvelopeVersion]) -> Markup {
    html! {
        h1 { "Envelopes" }
        @if envelopes.is_empty() {
            (empty("No envelope is stored: nothing governs any run, so everything is denied.", html! {
                "Store the sample envelopes with "
                (super::layout::command("tollgate policy store fixtures/envelopes"))
                ", or start the gateway with " code { "--envelopes DIR" } "."
            }))
        } @else {
            div.scroll { table {
                caption.visually-hidden { "Envelopes in force" }
                thead { tr {
                    th scope="col" { "Envelope" } th scope="col" { "In force" }
                    th scope="col" class="num" { "Versions" } th scope="col" { "Extends" }
                    th scope="col" { "Attached to" } th scope="col" class="num" { "Rules" }
                } }
                tbody {
                    @for e in envelopes {
                        tr {
                            td { a href=(envelope_href(&e.id)) { (e.id) } }
                            td { code { (e.label()) } }
                            td.num { (versions.iter().filter(|v| v.id == e.id).count()) }
                            td { (e.extends.join(", ")) }
                            td { (attached(e)) }
                            td.num { (rule_count(e)) }
                        }
                    }
                }
            } }
        }
    }
}

fn attached(e: &PolicyEnvelope) -> String {
    let a = &e.attach;
    let mut parts = Vec::new();
    for (what, ids) in [
        ("agents", &a.agents),
        ("tasks", &a.tasks),
        ("runs", &a.runs),
    ] {
        if !ids.is_empty() {
            parts.push(format!("{what}: {}", ids.join(", ")));
        }
    }
    if parts.is_empty() {
        "— (through a child, or a run's own attachment)".to_string()
    } else {
        parts.join("; ")
    }
}

fn rule_count(e: &PolicyEnvelope) -> usize {
    e.tools.len()
        + e.data.len()
        + e.models.len()
        + e.memory.len()
        + e.approvals.len()
        + e.tool_levels.len()
}

fn envelope_href(id: &str) -> String {
    format!("/ui/envelopes/{}", encode(id))
}

/// Which version to show.
#[derive(Debug, Default, Deserialize)]
pub struct VersionQuery {
    #[serde(default)]
    version: Option<u32>,
}

/// `GET /ui/envelopes/{id}`.
pub async fn envelope(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(id): Path<String>,
    Query(query): Query<VersionQuery>,
) -> Response {
    let title = format!("Envelope {id}");
    blocking_page(&state, &viewer, &title, "/ui/envelopes", move |rt| {
        let versions = list_versions(rt.store(), Some(&id))?;
        let reference = match query.version {
            Some(v) => format!("{id}@{v}"),
            None => id.clone(),
        };
        let (label, source) = version_source(rt.store(), &reference)?;
        let runs = rt
            .recorder()
            .page(&RunFilter::default(), RUNS_OFFERED)?
            .runs;
        Ok(envelope_content(&id, &versions, &label, &source, &runs))
    })
    .await
}

fn envelope_content(
    id: &str,
    versions: &[EnvelopeVersion],
    label: &str,
    source: &str,
    runs: &[RunSummary],
) -> Markup {
    let shown = label.rsplit('@').next().unwrap_or("");
    let latest = versions
        .last()
        .map(|v| v.version.to_string())
        .unwrap_or_default();
    html! {
        p.crumbs { a href="/ui/envelopes" { "Envelopes" } " / " (id) }
        h1 { "Envelope " code { (label) } }
        section aria-labelledby="versions" {
            h2 #versions { "Versions" }
            ul.versions {
                @for v in versions {
                    li {
                        @if v.version.to_string() == shown {
                            strong { (v.label()) }
                        } @else {
                            a href=(format!("{}?version={}", envelope_href(id), v.version)) { (v.label()) }
                        }
                        " " span.muted { "stored " (v.created_at) }
                    }
                }
            }
            @if versions.len() > 1 {
                form.filters method="get" action=(format!("{}/diff", envelope_href(id))) {
                    label { "From " (version_select("from", versions, &versions[0].version.to_string())) }
                    label { "To " (version_select("to", versions, &latest)) }
                    button type="submit" { "Compare" }
                }
            }
        }
        section aria-labelledby="simulate" {
            h2 #simulate { "Simulate on a recorded run" }
            @if runs.is_empty() {
                (empty("No run is recorded to simulate on.", html! {
                    "Import one with " (super::layout::command("tollgate runs import RUN.json")) "."
                }))
            } @else {
                form.filters method="get" action=(format!("{}/simulate", envelope_href(id))) {
                    input type="hidden" name="version" value=(shown);
                    label { "Run "
                        select name="run" required {
                            @for r in runs { option value=(r.id) { (r.id) " (" (r.agent) ", " (r.started_at) ")" } }
                        }
                    }
                    button type="submit" { "Simulate " (label) }
                }
            }
        }
        section aria-labelledby="source" {
            h2 #source { "Source" }
            pre.source { (source) }
        }
    }
}

fn version_select(name: &str, versions: &[EnvelopeVersion], selected: &str) -> Markup {
    html! {
        select name=(name) {
            @for v in versions {
                @let value = v.version.to_string();
                option value=(value) selected[value == selected] { (v.label()) }
            }
        }
    }
}

/// Two versions to compare.
#[derive(Debug, Deserialize)]
pub struct DiffQuery {
    from: u32,
    #[serde(default)]
    to: Option<u32>,
}

/// `GET /ui/envelopes/{id}/diff?from=N&to=M`.
pub async fn diff(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(id): Path<String>,
    Query(query): Query<DiffQuery>,
) -> Response {
    let title = format!("Diff of {id}");
    blocking_page(&state, &viewer, &title, "/ui/envelopes", move |rt| {
        let (from, to, changes) = rt.envelope_diff(&id, query.from, query.to)?;
        Ok(diff_content(&id, &from, &to, &changes))
    })
    .await
}

fn diff_content(id: &str, from: &str, to: &str, diff: &EnvelopeDiff) -> Markup {
    html! {
        p.crumbs { a href="/ui/envelopes" { "Envelopes" } " / " a href=(envelope_href(id)) { (id) } " / diff" }
        h1 { code { (from) } " → " code { (to) } }
        @if diff.is_empty() {
            (empty("The two versions decide alike: no rule or field differs.", html! {
                a href=(envelope_href(id)) { "Back to the envelope" }
            }))
        }
        @for e in &diff.envelopes {
            section {
                h2 { code { (e.id) } " " (e.change.as_str()) }
                @if !e.fields.is_empty() { p { "Fields changed: " (e.fields.join(", ")) } }
                div.scroll { table {
                    thead { tr {
                        th scope="col" { "Rule" } th scope="col" { "Section" }
                        th scope="col" { "Change" } th scope="col" { "Before" } th scope="col" { "After" }
                    } }
                    tbody {
                        @for r in &e.rules {
                            tr class=(format!("change-{}", r.change.as_str())) {
                                td { code { (r.rule) } }
                                td { (r.section.key()) }
                                td { (r.change.as_str()) }
                                td { @if let Some(old) = &r.old { pre { (old.to_string()) } } }
                                td { @if let Some(new) = &r.new { pre { (new.to_string()) } } }
                            }
                        }
                    }
                } }
            }
        }
    }
}

/// A run to simulate on, and the version.
#[derive(Debug, Deserialize)]
pub struct SimulateQuery {
    run: String,
    #[serde(default)]
    version: Option<String>,
    /// Show every decision point, not only the changed ones.
    #[serde(default)]
    all: Option<String>,
}

/// `GET /ui/envelopes/{id}/simulate?run=RUN&version=N[&all=1]`: a dry run, nothing enforced or written.
pub async fn simulate(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(id): Path<String>,
    Query(query): Query<SimulateQuery>,
) -> Response {
    let title = format!("Simulate {id} on {}", query.run);
    blocking_page(&state, &viewer, &title, "/ui/envelopes", move |rt| {
        let reference = match query.version.as_deref().filter(|v| !v.is_empty()) {
            Some(v) => format!("{id}@{v}"),
            None => id.clone(),
        };
        let report = rt.simulate_envelope(&id, &query.run, None, Some(&reference))?;
        let all_href = format!(
            "{}/simulate?run={}&version={}&all=1",
            envelope_href(&id),
            encode(&query.run),
            encode(query.version.as_deref().unwrap_or_default())
        );
        let all = query
            .all
            .as_deref()
            .is_some_and(|a| !a.is_empty() && a != "0");
        Ok(simulate_content(&id, &report, all, &all_href))
    })
    .await
}

/// The simulation: the changed decision points first and alone (every one with `all`, or
/// when none changed).
fn simulate_content(id: &str, report: &SimulationReport, all: bool, all_href: &str) -> Markup {
    let changed = report.changed().count();
    let run = &report.run;
    let only_changed = !all && changed > 0;
    html! {
        p.crumbs { a href="/ui/envelopes" { "Envelopes" } " / " a href=(envelope_href(id)) { (id) } " / simulate" }
        h1 { "Simulating " (report.candidates.join(", ")) " on " a href=(run_href(run)) { (run) } }
        (facts(&[
            ("In place of", html! { @if report.replaces.is_empty() { "nothing (added)" } @else { (report.replaces.join(", ")) } }),
            ("Governing", html! { (report.governing.join(", ")) }),
            ("Decisions", html! {
                (report.decisions.len()) " · "
                @for (e, n) in report.totals() { span.count { (n) " " (e.as_str()) } }
            }),
            ("Changed", html! { strong { (changed) } }),
        ]))
        @if report.decisions.is_empty() {
            (empty("The run has no decision point.", html! { "Runs recorded through the gateway have one per compile item, tool call and model call." }))
        } @else {
            @if only_changed {
                p {
                    "The " (changed) " decision point(s) this version changes. "
                    a href=(all_href) { "Show all " (report.decisions.len()) }
                }
            } @else if changed == 0 {
                p.notice role="status" { "No decision changes: this version decides the run as recorded." }
            }
            div.scroll { table.simulation {
                caption.visually-hidden { "Decision points, recorded and simulated" }
                thead { tr {
                    th scope="col" class="num" { "Event" } th scope="col" { "Kind" } th scope="col" { "Subject" }
                    th scope="col" { "Recorded" } th scope="col" { "Simulated" } th scope="col" { "Rules now" }
                } }
                tbody {
                    @for d in report.decisions.iter().filter(|d| d.changed || !only_changed) {
                        tr class=(if d.changed { "changed" } else { "" }) {
                            td.num { a href=(event_href(run, d.seq)) { (d.seq) } }
                            td { (d.kind.as_str()) }
                            td { code { (clip(&d.subject, 80)) } }
                            td {
                                (effect(d.recorded))
                                @if d.recorded_in_run {
                                    " " a href=(receipt_href(run, d.seq, (d.kind == tollgate_rules::decide::RequestKind::Context).then_some(d.subject.as_str()))) { "receipt" }
                                }
                            }
                            td { (effect(d.simulated)) @if d.changed { " " strong { "changed" } } }
                            td { (rules(&d.simulated_rules)) }
                        }
                    }
                }
            } }
        }
    }
}
