//! A decision's receipt, readable by a person: what was decided and what the gateway
//! answered, the deciding rules and the reason, the proof tree (each step collapsible), the
//! why-not of a denial, the envelope versions, the input hash and where the run records it.

use axum::extract::{Path, Query, State};
use axum::response::Response;
use maud::{Markup, html};
use serde::Deserialize;
use tollgate_engine::{Proof, ProofStep};

use super::layout::{clip, effect, empty, event_href, facts, hash, rules, run_href};
use super::{Viewer, blocking_page};
use crate::http::AppState;
use crate::runtime::{DecisionFilter, RecordedDecision};

/// Which decision of a compile event: the item's id.
#[derive(Debug, Default, Deserialize)]
pub struct ReceiptQuery {
    /// The compile item whose decision to show.
    #[serde(default)]
    item: Option<String>,
}

/// `GET /ui/runs/{run_id}/receipts/{seq}`.
pub async fn receipt(
    State(state): State<AppState>,
    viewer: Viewer,
    Path((run, seq)): Path<(String, u64)>,
    Query(query): Query<ReceiptQuery>,
) -> Response {
    let title = format!("Receipt {run}/{seq}");
    blocking_page(&state, &viewer, &title, "/ui/runs", move |rt| {
        let filter = DecisionFilter {
            seq: Some(seq),
            ..DecisionFilter::default()
        };
        let decisions = rt.decisions(&run, &filter)?;
        let found = decisions.into_iter().find(|d| {
            d.seq == seq
                && query
                    .item
                    .as_ref()
                    .is_none_or(|i| d.subject.as_ref() == Some(i))
        });
        Ok(match found {
            Some(d) => content(&run, &d),
            None => html! {
                p.crumbs { a href="/ui/runs" { "Runs" } " / " a href=(run_href(&run)) { (run) } }
                (empty("No decision is recorded there.", html! {
                    "Event " (seq) " of run " (run) " records no decision"
                    @if let Some(item) = &query.item { " for item " code { (item) } }
                    ". " a href=(run_href(&run)) { "Back to the run" }
                }))
            },
        })
    })
    .await
}

fn content(run: &str, d: &RecordedDecision) -> Markup {
    let policy = &d.decision;
    html! {
        p.crumbs {
            a href="/ui/runs" { "Runs" } " / "
            a href=(run_href(run)) { (run) } " / "
            a href=(event_href(run, d.seq)) { "event " (d.seq) }
        }
        h1 {
            "Receipt: " (policy.kind.as_str())
            @if let Some(subject) = &d.subject { " " code { (subject) } }
            " " (effect(policy.effect))
        }
        (facts(&[
            ("Policy said", effect(policy.effect)),
            ("Gateway answered", effect(d.effect)),
            ("Deciding rules", rules(&policy.rules)),
            ("Reason", html! { (d.reason.as_deref().unwrap_or("—")) }),
            ("Request", html! { code { (clip(&policy.request, 300)) } }),
            ("Envelope versions", html! {
                @if policy.envelope_versions.is_empty() { "none" }
                @for (i, v) in policy.envelope_versions.iter().enumerate() {
                    @if i > 0 { ", " } code { (v) }
                }
            }),
            ("Input hash", hash(&policy.input_hash)),
            ("Recorded", html! {
                "run " a href=(run_href(run)) { (run) } ", event " (d.seq) ", step " (d.step)
                ", at " (d.at) ", event hash " (hash(&d.event_hash))
            }),
        ]))
        @if let Some(error) = &policy.error {
            div.error role="alert" { "Policy could not be evaluated (denied, fail closed): " (error) }
        }
        section aria-labelledby="proof" {
            h2 #proof { "Proof" }
            @match &policy.proof {
                Some(proof) => { ul.proof { li { (proof_tree(proof, 0)) } } }
                None => {
                    p.muted {
                        @if let Some(why) = &d.unrendered {
                            "This receipt was recorded without its proof, which cannot be "
                            "rendered now: " (why)
                        } @else if policy.why_not.is_empty() {
                            "No proof is kept with this decision (an allowed compile item's proof is "
                            "left out of the record: replay recomputes it)."
                        } @else {
                            "Nothing allowed it; see why not below."
                        }
                    }
                }
            }
        }
        @if !policy.why_not.is_empty() {
            section aria-labelledby="why-not" {
                h2 #why-not { "Why not" }
                @for w in &policy.why_not {
                    details open {
                        summary { code { (w.fact.to_string()) } " does not hold" }
                        @if w.rules.is_empty() {
                            p { @if w.is_input { "No such input fact." } @else { "No rule derives it." } }
                        }
                        ul {
                            @for r in &w.rules {
                                li {
                                    "rule " code { (r.rule) } " (line " (r.line) "): " (r.reason)
                                    @if let Some(lit) = &r.failed_literal { " — at " code { (lit) } }
                                }
                            }
                        }
                    }
                }
            }
        }
        p { a href=(event_href(run, d.seq)) { "← Back to the timeline" } }
    }
}

/// One proof node and, collapsible, how it was derived.
fn proof_tree(proof: &Proof, depth: usize) -> Markup {
    html! {
        @match &proof.step {
            ProofStep::Input { origin } => {
                code { (proof.fact.to_string()) } " " span.input { "input: " (origin) }
            }
            ProofStep::Rule { rule, line, bindings, premises, absent, .. } => {
                details open[depth < 2] {
                    summary {
                        code { (proof.fact.to_string()) } " "
                        span.rule { "rule " (rule) ", line " (line) }
                    }
                    @let shown: Vec<String> = bindings
                        .iter()
                        .filter(|(k, _)| !k.starts_with('$'))
                        .map(|(k, v)| format!("{k} = {}", v.to_literal()))
                        .collect();
                    @if !shown.is_empty() { p.bindings { "with " (shown.join(", ")) } }
                    ul.proof {
                        @for p in premises { li { (proof_tree(p, depth + 1)) } }
                        @for a in absent { li { code { "!" (a.to_string()) } " " span.input { "absent" } } }
                    }
                }
            }
        }
    }
}
