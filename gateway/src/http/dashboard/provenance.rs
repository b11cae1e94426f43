//! The Provenance screen: for any record, where it came from and what used it, drawn as a
//! graph in SVG — ancestors in the columns left of it, descendants to the right, one column per
//! step away, each node a link to its own provenance.

use std::collections::{BTreeMap, HashMap};

use axum::extract::{Query, State};
use axum::response::Response;
use maud::{Markup, html};
use serde::Deserialize;

use super::layout::{clip, empty, provenance_href};
use super::{Viewer, blocking_page};
use crate::http::AppState;
use crate::provenance::{ProvEdge, ProvNode, ProvenanceAnswer, Walk, query, resolve_id};
use crate::runtime::RuntimeError;

/// Nodes drawn at most on each side (a run's descendants are all its events).
pub const MAX_NODES: usize = 400;

const NODE_W: i64 = 230;
const NODE_H: i64 = 40;
const GAP_X: i64 = 60;
const GAP_Y: i64 = 14;

/// The record to start from.
#[derive(Debug, Default, Deserialize)]
pub struct ProvenanceQuery {
    /// A run id, `run:ID`, `step:RUN/N`, `event:RUN/SEQ` or a record id.
    #[serde(default)]
    id: Option<String>,
}

/// `GET /ui/provenance?id=…`.
pub async fn provenance(
    State(state): State<AppState>,
    viewer: Viewer,
    Query(q): Query<ProvenanceQuery>,
) -> Response {
    blocking_page(&state, &viewer, "Provenance", "/ui/provenance", move |rt| {
        let Some(input) = q.id.filter(|i| !i.trim().is_empty()) else {
            return Ok(form(
                None,
                html! {
                    (empty("Name a record to trace.", html! {
                        "A run id, " code { "event:RUN/SEQ" } " or " code { "step:RUN/N" }
                        "; every event of a run's timeline links here too."
                    }))
                },
            ));
        };
        let start = resolve_id(rt.recorder(), input.trim())?;
        let up = query(rt.recorder(), &start, Walk::Ancestors)
            .map_err(|e| RuntimeError::NotFound(e.to_string()))?;
        let down = query(rt.recorder(), &start, Walk::Descendants)
            .map_err(|e| RuntimeError::NotFound(e.to_string()))?;
        Ok(form(Some(&input), graph(&start, &up, &down)))
    })
    .await
}

fn form(id: Option<&str>, content: Markup) -> Markup {
    html! {
        h1 { "Provenance" }
        form.filters method="get" action="/ui/provenance" role="search" {
            label { "Record " input type="text" name="id" value=(id.unwrap_or("")) size="40"; }
            button type="submit" { "Trace" }
        }
        (content)
    }
}

/// Distances from the start along the answer's edges (backwards for ancestors).
fn distances(start: &str, answer: &ProvenanceAnswer, backwards: bool) -> HashMap<String, i64> {
    let mut dist = HashMap::from([(start.to_string(), 0)]);
    let mut frontier = vec![start.to_string()];
    while !frontier.is_empty() {
        let mut next = Vec::new();
        for id in &frontier {
            let d = dist[id];
            for e in &answer.edges {
                let (from, to) = if backwards {
                    (&e.to, &e.from)
                } else {
                    (&e.from, &e.to)
                };
                if from == id && !dist.contains_key(to) {
                    dist.insert(to.clone(), d + 1);
                    next.push(to.clone());
                }
            }
        }
        frontier = next;
    }
    dist
}

fn graph(start: &str, up: &ProvenanceAnswer, down: &ProvenanceAnswer) -> Markup {
    // Columns: ancestors at minus their distance, descendants at plus theirs.
    let mut column: BTreeMap<String, i64> = BTreeMap::new();
    let mut nodes: BTreeMap<String, &ProvNode> = BTreeMap::new();
    let mut truncated = false;
    for (answer, sign) in [(up, -1), (down, 1)] {
        let dist = distances(start, answer, sign < 0);
        let mut reached: Vec<&ProvNode> = answer.nodes.iter().collect();
        reached.sort_by_key(|n| (dist.get(&n.id).copied().unwrap_or(i64::MAX), n.id.clone()));
        if reached.len() > MAX_NODES {
            truncated = true;
            reached.truncate(MAX_NODES);
        }
        for n in reached {
            let d = dist.get(&n.id).copied().unwrap_or(1);
            column.entry(n.id.clone()).or_insert(sign * d);
            nodes.entry(n.id.clone()).or_insert(n);
        }
    }
    let mut edges: Vec<&ProvEdge> = up.edges.iter().chain(&down.edges).collect();
    edges.sort();
    edges.dedup();
    edges.retain(|e| column.contains_key(&e.from) && column.contains_key(&e.to));

    let min = column.values().copied().min().unwrap_or(0);
    let mut rows: BTreeMap<i64, i64> = BTreeMap::new();
    let mut place: HashMap<&str, (i64, i64)> = HashMap::new();
    for (id, c) in &column {
        let row = rows.entry(*c).or_insert(0);
        let x = (c - min) * (NODE_W + GAP_X) + 10;
        let y = *row * (NODE_H + GAP_Y) + 10;
        *row += 1;
        place.insert(id.as_str(), (x, y));
    }
    let width = (column.values().max().unwrap_or(&0) - min + 1) * (NODE_W + GAP_X) + 20;
    let height = rows.values().max().copied().unwrap_or(1) * (NODE_H + GAP_Y) + 20;
    html! {
        p {
            (up.nodes.len().saturating_sub(1)) " ancestor(s), "
            (down.nodes.len().saturating_sub(1)) " descendant(s) of " code { (start) } "."
            @if truncated { " Only the nearest " (MAX_NODES) " on each side are drawn." }
        }
        div.scroll.graph {
            svg width=(width) height=(height)
                viewBox=(format!("0 0 {width} {height}")) role="img"
                aria-label=(format!("Provenance graph of {start}")) {
                defs {
                    marker #arrow viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7"
                        markerHeight="7" orient="auto-start-reverse" {
                        path d="M 0 0 L 10 5 L 0 10 z" fill="#57606a";
                    }
                }
                @for e in &edges {
                    @if let (Some(&(x1, y1)), Some(&(x2, y2))) = (place.get(e.from.as_str()), place.get(e.to.as_str())) {
                        @let (sx, ex) = if x1 <= x2 { (x1 + NODE_W, x2) } else { (x1, x2 + NODE_W) };
                        @let (sy, ey) = (y1 + NODE_H / 2, y2 + NODE_H / 2);
                        path.edge d=(format!("M {sx} {sy} C {} {sy}, {} {ey}, {ex} {ey}", (sx + ex) / 2, (sx + ex) / 2))
                            marker-end="url(#arrow)" { title { (e.relation) } }
                    }
                }
                @for (id, n) in &nodes {
                    @if let Some(&(x, y)) = place.get(id.as_str()) {
                        a href=(provenance_href(id)) {
                            g class=(if id == start { "node start" } else { "node" }) {
                                title { (n.id) ": " (n.label) }
                                rect x=(x) y=(y) width=(NODE_W) height=(NODE_H) rx="6";
                                text x=(x + 8) y=(y + 16) { (clip(&n.kind.replace('_', " "), 30)) }
                                text.label x=(x + 8) y=(y + 32) { (clip(&n.label, 32)) }
                            }
                        }
                    }
                }
            }
        }
        details {
            summary { "The same as a list" }
            ul {
                @for (id, n) in &nodes {
                    li { a href=(provenance_href(id)) { code { (id) } } " " (n.kind) ": " (n.label) }
                }
            }
        }
    }
}
