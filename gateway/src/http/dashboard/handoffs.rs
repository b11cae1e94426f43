//! The Handoffs screen: every contract with its state; a contract with what it is missing, the
//! evidence that did not cross, the consumer's answers, its delivery checks and their
//! violations, the proofs behind each, and the handoff graph around its producer's run; a
//! run's handoff graph on its own. Read from the same `handoff` functions the JSON routes use.

use axum::extract::{Path, State};
use axum::response::Response;
use maud::{Markup, PreEscaped, html};

use super::layout::{empty, encode, event_href, facts, run_href};
use super::{Viewer, blocking_page};
use crate::handoff::graph::{self, HandoffGraph};
use crate::handoff::store::{self, StoredContract, StoredDelivery};
use crate::handoff::{ContractState, Validation};
use crate::http::AppState;
use crate::runtime::RuntimeError;

/// Contracts listed.
const LISTED: usize = 200;

fn contract_href(id: &str) -> String {
    format!("/ui/handoffs/{}", encode(id))
}

fn graph_href(run: &str) -> String {
    format!("/ui/handoffs/graphs/{}", encode(run))
}

/// A state as a badge.
fn state(s: &str) -> Markup {
    let class = match ContractState::parse(s) {
        Some(ContractState::Fulfilled | ContractState::Accepted) => "label-win",
        Some(ContractState::Rejected | ContractState::Refused | ContractState::Violated) => {
            "label-loss"
        }
        _ => "label-neutral",
    };
    html! { span class=(format!("badge {class}")) { (s) } }
}

/// A party `RUN#AGENT` with a link to its run (none for a run not opened yet).
fn party(run: &str, agent: &str) -> Markup {
    html! {
        (agent) " in "
        @if run.starts_with("handoff:") { span.muted { "a run not opened yet" } }
        @else { a href=(run_href(run)) { code { (run) } } }
    }
}

/// `GET /ui/handoffs`.
pub async fn list(State(state_): State<AppState>, viewer: Viewer) -> Response {
    blocking_page(&state_, &viewer, "Handoffs", "/ui/handoffs", |rt| {
        let all = store::list(rt.store(), LISTED).map_err(RuntimeError::Store)?;
        Ok(html! {
            h1 { "Handoffs" }
            p.muted { "Typed contracts between agents: validated by the handoff pack before the consumer starts, checked when it delivers." }
            @if all.is_empty() {
                (empty("No handoff contract yet.", html! {
                    "A producer posts one: " code.command { "POST /v2/handoffs/contracts" }
                    " (a starter: " code.command { "tollgate handoff template planner_to_executor" } ")."
                }))
            } @else {
                div.scroll {
                    table {
                        caption.visually-hidden { "Handoff contracts" }
                        thead { tr {
                            th scope="col" { "Contract" } th scope="col" { "Template" }
                            th scope="col" { "From" } th scope="col" { "To" }
                            th scope="col" { "State" } th scope="col" { "Missing" }
                            th scope="col" { "Dropped" } th scope="col" { "Changed" }
                        } }
                        tbody {
                            @for c in &all {
                                tr {
                                    td { a href=(contract_href(&c.id)) { code { (c.id) } } " v" (c.version) }
                                    td { (c.template) }
                                    td { (party(&c.producer_run, &c.producer_agent)) }
                                    td { (party(&c.consumer_run, &c.consumer_agent)) }
                                    td { (state(c.state.as_str())) }
                                    td.num { (c.validation.problems.len()) }
                                    td.num { (c.validation.dropped.len()) }
                                    td { (c.updated_at) }
                                }
                            }
                        }
                    }
                }
            }
        })
    })
    .await
}

/// `GET /ui/handoffs/{id}`.
pub async fn contract(
    State(state_): State<AppState>,
    viewer: Viewer,
    Path(id): Path<String>,
) -> Response {
    blocking_page(&state_, &viewer, "Handoff contract", "/ui/handoffs", move |rt| {
        let s = rt.store();
        let c = store::get(s, &id, None)
            .map_err(RuntimeError::Store)?
            .ok_or_else(|| RuntimeError::NotFound(format!("no contract `{id}`")))?;
        let acks = store::acks(s, &id).map_err(RuntimeError::Store)?;
        let deliveries = store::deliveries(s, &id).map_err(RuntimeError::Store)?;
        let g = graph::graph(rt.recorder(), &c.producer_run)?;
        Ok(html! {
            p.crumbs { a href="/ui/handoffs" { "Handoffs" } " › " code { (c.id) } }
            h1 { "Contract " code { (c.id) } " " (state(c.state.as_str())) }
            (summary(&c))
            (validation(&c.validation))
            h2 { "Answers" }
            @if acks.is_empty() {
                p.muted { "The consumer has not answered." }
            } @else {
                ul { @for a in &acks {
                    li { "v" (a.version) ": " strong { (a.response) } " by " (a.by) " at " (a.at)
                        @if !a.reason.is_empty() { " — " (a.reason) }
                        @for q in &a.questions { br; "asks: " (q) } }
                } }
            }
            h2 { "Deliveries" }
            @if deliveries.is_empty() {
                p.muted { "No delivery checked yet (the consumer's run is checked when it finishes)." }
            } @else {
                @for d in deliveries.iter().rev() { (delivery(d)) }
            }
            h2 { "Graph" }
            (graph_panel(&g))
        })
    })
    .await
}

fn summary(c: &StoredContract) -> Markup {
    let k = &c.contract;
    facts(&[
        (
            "Version",
            html! { (c.version) " · " code { (crate::recorder::short(&c.content_hash)) } },
        ),
        ("Template", html! { (c.template) }),
        ("From", party(&c.producer_run, &c.producer_agent)),
        ("To", party(&c.consumer_run, &c.consumer_agent)),
        (
            "Goal",
            html! { (k.goal.objective) @if let Some(e) = &k.goal.expected_output { br; span.muted { "expected: " (e) } } },
        ),
        (
            "Required outputs",
            html! { @if k.required_outputs.is_empty() { span.muted { "none" } } @else { ul { @for o in &k.required_outputs { li { code { (o.name) } @if let Some(d) = &o.description { " — " (d) } } } } } },
        ),
        (
            "Success criteria",
            html! { @if k.success_criteria.is_empty() { span.muted { "none" } } @else { ul { @for s in &k.success_criteria { li { (s) } } } } },
        ),
        (
            "Constraints",
            html! {
                @if k.constraints.is_empty() { span.muted { "none" } } @else { ul {
                    @for r in &k.constraints.hard_rules { li { (r) } }
                    @for b in &k.constraints.blocked_actions { li { "blocked: " code { (b) } } }
                    @if let Some(d) = &k.constraints.deadline { li { "deadline " (d) } }
                    @for s in &k.constraints.style { li { "style: " (s) } }
                    @if let Some(l) = k.constraints.max_level { li { "evidence up to " (l.as_str()) } }
                    @if let Some(p) = &k.constraints.scope { li { "evidence within " code { (p) } } }
                } }
            },
        ),
        (
            "Posted",
            html! { (c.created_at) " by " (c.created_by)
            @if let Some(seq) = c.recorded_seq { " · " a href=(event_href(&c.producer_run, seq)) { "recorded event " (seq) } } },
        ),
    ])
}

fn validation(v: &Validation) -> Markup {
    html! {
        h2 { "Validation" }
        p { "The handoff pack's decision: " strong { (v.decision.effect.as_str()) }
            @if !v.decision.rules.is_empty() { " by " @for (i, r) in v.decision.rules.iter().enumerate() { @if i > 0 { ", " } code { (r) } } }
            " · input " code { (crate::recorder::short(&v.decision.input_hash)) } }
        @if !v.problems.is_empty() {
            h3 { "Missing requirements and problems" }
            ul.problems { @for p in &v.problems {
                li { strong { (p.code) } " " code { (p.detail) } " (" code { (p.rule) } ") — " (p.help) }
            } }
        }
        h3 { "Evidence" }
        @if v.crossing.is_empty() && v.dropped.is_empty() { p.muted { "None handed over." } }
        ul {
            @for i in &v.crossing { li { code { (i) } " crosses" } }
            @for d in &v.dropped { li { code { (d.item) } " " strong { "dropped" } ": " (d.code) " (" code { (d.rule) } ")" } }
        }
        @if v.decision.violations.iter().any(|x| x.proof.is_some()) {
            details {
                summary { "Proofs" }
                @for x in &v.decision.violations {
                    @if let Some(p) = &x.proof { pre.args { (p.to_text()) } }
                }
            }
        }
    }
}

fn delivery(d: &StoredDelivery) -> Markup {
    html! {
        section.delivery {
            h3 { "Check of v" (d.version) " at " (d.at) " " (state(d.state.as_str())) }
            p { "Consumer run " a href=(run_href(&d.consumer_run)) { code { (d.consumer_run) } } }
            @if d.violations.is_empty() {
                p { "Every required output delivered, no blocked action taken, on time." }
            } @else {
                ul.problems { @for v in &d.violations {
                    li { strong { (v.code) } " " code { (v.detail) } " (" code { (v.rule) } ")"
                        @if let Some(seq) = v.recorded_seq { " · " a href=(event_href(&d.consumer_run, seq)) { "alert event " (seq) } } }
                } }
            }
        }
    }
}

fn graph_panel(g: &HandoffGraph) -> Markup {
    html! {
        @if g.edges.is_empty() {
            p.muted { "No handoff in or out of " code { (g.run) } "." }
        } @else {
            div.scroll.graph { (PreEscaped(g.to_svg())) }
            @if !g.cycles.is_empty() {
                p.error { "Delegation cycle: " @for c in &g.cycles { code { (c.join(" → ")) } " " } }
            }
            div.scroll {
                table {
                    caption.visually-hidden { "Handoffs" }
                    thead { tr { th scope="col" { "From" } th scope="col" { "To" } th scope="col" { "Contract" } th scope="col" { "State" } th scope="col" { "Problems" } } }
                    tbody { @for e in &g.edges {
                        tr {
                            td { code { (e.from) } } td { code { (e.to) } }
                            td { @if e.version.is_some() { a href=(contract_href(&e.contract)) { code { (e.contract) } } } @else { code { (e.contract) } } }
                            td { (state(&e.state)) }
                            td {
                                @for m in &e.missing { "missing " code { (m) } br; }
                                @for d in &e.dropped { "dropped " code { (d) } br; }
                                @for v in &e.violations { "violation " code { (v) } br; }
                            }
                        }
                    } }
                }
            }
        }
        p { a href=(graph_href(&g.run)) { "The graph of " code { (g.run) } " on its own" } }
    }
}

/// `GET /ui/handoffs/graphs/{run_id}`.
pub async fn run_graph(
    State(state_): State<AppState>,
    viewer: Viewer,
    Path(run): Path<String>,
) -> Response {
    blocking_page(&state_, &viewer, "Handoff graph", "/ui/handoffs", move |rt| {
        let g = graph::graph(rt.recorder(), &run)?;
        Ok(html! {
            p.crumbs { a href="/ui/handoffs" { "Handoffs" } " › graph of " a href=(run_href(&g.run)) { code { (g.run) } } }
            h1 { "Handoff graph of " code { (g.run) } }
            p.muted { (g.runs.len()) " run(s) reached; parties are " code { "RUN#AGENT" } "; " code { "recorded" } " handoffs were written by an agent and not validated." }
            (graph_panel(&g))
        })
    })
    .await
}
