//! The handoff graph of a run: who handed work to whom, as parties (`RUN#AGENT`) and the
//! contracts between them, across every run reached through a contract from the run asked
//! about. Handoffs an agent recorded itself (a `handoff` event without a `stage`, as older
//! runs hold) are drawn too, marked `recorded`: the gateway did not validate them. Rendered as
//! JSON, Graphviz DOT or a self-contained SVG; delegation cycles are listed.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt::Write as _;

use petgraph::algo::tarjan_scc;
use petgraph::graph::DiGraph;
use serde::Serialize;
use serde_json::Value;

use super::store;
use super::{ContractState, HandoffError, party};
use crate::recorder::Recorder;
use crate::recorder::RecorderError;
use crate::recorder::events::Event;
use crate::recorder::format::EventKind;

/// Most runs one graph walks.
const MAX_RUNS: usize = 200;

/// A party to a handoff.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GraphNode {
    /// `RUN#AGENT`.
    pub id: String,
    /// The run (`handoff:ID` for one not opened yet).
    pub run: String,
    /// The agent.
    pub agent: String,
}

/// One handoff between two parties.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GraphEdge {
    /// The producing party.
    pub from: String,
    /// The consuming party.
    pub to: String,
    /// The contract (or the id the agent gave its recorded handoff).
    pub contract: String,
    /// Its latest version (none for a recorded handoff).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<u32>,
    /// The contract's state, or `recorded` for a handoff the gateway did not validate.
    pub state: String,
    /// Requirements it is missing (problems that refused it).
    pub missing: Vec<String>,
    /// Evidence that did not cross.
    pub dropped: Vec<String>,
    /// Violations raised against its deliveries.
    pub violations: Vec<String>,
    /// The `handoff` event recording it, `(run, seq)`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub event: Option<(String, u64)>,
}

/// A run's handoff graph.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HandoffGraph {
    /// The run asked about.
    pub run: String,
    /// Every run the graph reached.
    pub runs: Vec<String>,
    /// Parties, by id.
    pub nodes: Vec<GraphNode>,
    /// Handoffs, in the order they were made.
    pub edges: Vec<GraphEdge>,
    /// Delegation cycles: the parties of each, in id order.
    pub cycles: Vec<Vec<String>>,
}

/// The handoff graph around `run`.
pub fn graph(recorder: &Recorder, run: &str) -> Result<HandoffGraph, HandoffError> {
    recorder.header(run).map_err(|e| match e {
        RecorderError::UnknownRun(r) => HandoffError::NotFound(format!("no run `{r}`")),
        other => other.into(),
    })?;
    let store = recorder.store();
    let mut seen: BTreeSet<String> = BTreeSet::from([run.to_string()]);
    let mut queue = VecDeque::from([run.to_string()]);
    let mut contracts = BTreeMap::new();
    let mut edges = Vec::new();
    while let Some(r) = queue.pop_front() {
        for c in store::for_run(store, &r)? {
            for other in [&c.producer_run, &c.consumer_run] {
                if !other.starts_with("handoff:")
                    && seen.len() < MAX_RUNS
                    && seen.insert(other.clone())
                {
                    queue.push_back(other.clone());
                }
            }
            contracts.insert(c.id.clone(), c);
        }
        edges.extend(recorded_handoffs(recorder, &r)?);
    }
    // Each contract's violations: those of the last check of its latest version.
    let mut violations: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (id, c) in &contracts {
        if let Some(d) = store::deliveries(store, id)?
            .into_iter()
            .rev()
            .find(|d| d.version == c.version)
        {
            violations.insert(
                id.clone(),
                d.violations
                    .iter()
                    .map(|v| format!("{}:{}", v.code, v.detail))
                    .collect(),
            );
        }
    }
    let mut ordered: Vec<_> = contracts.into_values().collect();
    ordered.sort_by(|a, b| (&a.created_at, &a.id).cmp(&(&b.created_at, &b.id)));
    for c in ordered {
        edges.push(GraphEdge {
            from: party(&c.producer_run, &c.producer_agent),
            to: party(&c.consumer_run, &c.consumer_agent),
            contract: c.id.clone(),
            version: Some(c.version),
            state: c.state.as_str().to_string(),
            missing: c
                .validation
                .problems
                .iter()
                .map(|p| format!("{}:{}", p.code, p.detail))
                .collect(),
            dropped: c
                .validation
                .dropped
                .iter()
                .map(|d| d.item.clone())
                .collect(),
            violations: violations.remove(&c.id).unwrap_or_default(),
            event: c.recorded_seq.map(|s| (c.producer_run.clone(), s)),
        });
    }
    let mut nodes: BTreeMap<String, GraphNode> = BTreeMap::new();
    for e in &edges {
        for id in [&e.from, &e.to] {
            // Run ids hold no `#`; an agent's name may.
            let (r, a) = id.split_once('#').unwrap_or((id, ""));
            nodes.entry(id.clone()).or_insert_with(|| GraphNode {
                id: id.clone(),
                run: r.to_string(),
                agent: a.to_string(),
            });
        }
    }
    let cycles = cycles(&nodes, &edges);
    Ok(HandoffGraph {
        run: run.to_string(),
        runs: seen.into_iter().collect(),
        nodes: nodes.into_values().collect(),
        edges,
        cycles,
    })
}

/// The handoffs agents recorded themselves in `run` (their own `handoff` events).
fn recorded_handoffs(recorder: &Recorder, run: &str) -> Result<Vec<GraphEdge>, HandoffError> {
    let steps = recorder.steps(run)?;
    let mut out = Vec::new();
    for e in recorder.events(run, Some(&[EventKind::Handoff]))? {
        let Ok(Event::Handoff(h)) = e.event() else {
            continue;
        };
        if h.record().is_some() {
            continue;
        }
        let text = |k: &str| h.0.get(k).and_then(Value::as_str).map(str::to_string);
        let step_agent = steps
            .iter()
            .find(|s| s.index == e.step)
            .map(|s| s.agent.clone())
            .unwrap_or_default();
        let from_agent = text("from_agent").unwrap_or(step_agent);
        let Some(to_agent) = text("to_agent") else {
            continue;
        };
        let to_run = text("to_run").unwrap_or_else(|| run.to_string());
        let contract = text("handoff_id")
            .or_else(|| {
                h.0.get("contract")
                    .and_then(|c| c.get("id"))
                    .and_then(Value::as_str)
                    .map(str::to_string)
            })
            .unwrap_or_else(|| format!("{run}@{}", e.seq));
        out.push(GraphEdge {
            from: party(run, &from_agent),
            to: party(&to_run, &to_agent),
            contract,
            version: None,
            state: "recorded".into(),
            missing: Vec::new(),
            dropped: Vec::new(),
            violations: Vec::new(),
            event: Some((run.to_string(), e.seq)),
        });
    }
    Ok(out)
}

/// The strongly connected groups of parties that hand work around in a circle.
fn cycles(nodes: &BTreeMap<String, GraphNode>, edges: &[GraphEdge]) -> Vec<Vec<String>> {
    let mut g: DiGraph<&str, ()> = DiGraph::new();
    let index: BTreeMap<&str, _> = nodes.keys().map(|k| (k.as_str(), g.add_node(k))).collect();
    // Contracts that still hand work over, and handoffs agents recorded themselves.
    let live = |state: &str| {
        state == "recorded" || ContractState::parse(state).is_some_and(ContractState::in_force)
    };
    for e in edges.iter().filter(|e| live(&e.state)) {
        if let (Some(a), Some(b)) = (index.get(e.from.as_str()), index.get(e.to.as_str())) {
            g.add_edge(*a, *b, ());
        }
    }
    let mut out: Vec<Vec<String>> = tarjan_scc(&g)
        .into_iter()
        .filter(|scc| scc.len() > 1 || g.contains_edge(scc[0], scc[0]))
        .map(|scc| {
            let mut ids: Vec<String> = scc.iter().map(|n| g[*n].to_string()).collect();
            ids.sort();
            ids
        })
        .collect();
    out.sort();
    out
}

impl HandoffGraph {
    /// Graphviz DOT.
    pub fn to_dot(&self) -> String {
        let mut out = String::from(
            "digraph handoffs {\n  rankdir=LR;\n  node [shape=box, fontname=\"sans-serif\"];\n",
        );
        for n in &self.nodes {
            let _ = writeln!(
                out,
                "  {} [label={}];",
                dot_id(&n.id),
                dot_id(&format!("{}\n{}", n.agent, n.run))
            );
        }
        for e in &self.edges {
            let _ = writeln!(
                out,
                "  {} -> {} [label={}, color={}];",
                dot_id(&e.from),
                dot_id(&e.to),
                dot_id(&format!("{} ({})", e.contract, e.state)),
                dot_id(colour(&e.state))
            );
        }
        out.push_str("}\n");
        out
    }

    /// A self-contained SVG: parties in columns by how far down the chain of handoffs they
    /// are, edges labelled with the contract and coloured by its state.
    pub fn to_svg(&self) -> String {
        const W: usize = 230;
        const H: usize = 54;
        const GAP_X: usize = 200;
        const GAP_Y: usize = 36;
        let depth = self.depths();
        let mut columns: BTreeMap<usize, Vec<&GraphNode>> = BTreeMap::new();
        for n in &self.nodes {
            columns.entry(depth[&n.id]).or_default().push(n);
        }
        let mut place: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
        for (col, nodes) in &columns {
            for (row, n) in nodes.iter().enumerate() {
                place.insert(&n.id, (20 + col * (W + GAP_X), 20 + row * (H + GAP_Y)));
            }
        }
        let width = 40 + columns.len().max(1) * (W + GAP_X) - GAP_X;
        let rows = columns.values().map(Vec::len).max().unwrap_or(1);
        let height = 40 + rows * (H + GAP_Y) - GAP_Y;
        let mut out = format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {width} {height}\" width=\"{width}\" height=\"{height}\" role=\"img\" aria-label=\"handoff graph of {}\" font-family=\"sans-serif\" font-size=\"12\">\n<defs><marker id=\"arrow\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" markerWidth=\"7\" markerHeight=\"7\" orient=\"auto-start-reverse\"><path d=\"M0 0L10 5L0 10z\" fill=\"#444\"/></marker></defs>\n",
            xml(&self.run)
        );
        for (i, e) in self.edges.iter().enumerate() {
            let (Some(&(x1, y1)), Some(&(x2, y2))) =
                (place.get(e.from.as_str()), place.get(e.to.as_str()))
            else {
                continue;
            };
            let (sx, sy, tx, ty) = if x1 == x2 {
                // Same column: an arc on the right.
                (x1 + W, y1 + H / 2, x2 + W, y2 + H / 2)
            } else {
                (x1 + W, y1 + H / 2, x2, y2 + H / 2)
            };
            let bend = if x1 == x2 { 60 + 10 * (i % 3) } else { 0 };
            let (mx, my) = ((sx + tx) / 2 + bend, (sy + ty) / 2);
            // The contract above the arrow, its state below it.
            let _ = writeln!(
                out,
                "<path d=\"M{sx} {sy} Q{} {} {tx} {ty}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\" marker-end=\"url(#arrow)\"><title>{}</title></path>\n<text x=\"{mx}\" y=\"{}\" text-anchor=\"middle\" font-size=\"11\" fill=\"#222\">{}</text>\n<text x=\"{mx}\" y=\"{}\" text-anchor=\"middle\" font-size=\"11\" fill=\"{}\">{}</text>",
                (sx + tx) / 2 + bend * 2,
                (sy + ty) / 2,
                colour(&e.state),
                xml(&format!(
                    "{} → {}: {} ({})",
                    e.from, e.to, e.contract, e.state
                )),
                my.saturating_sub(7),
                xml(&clip(&e.contract, 30)),
                my + 16,
                colour(&e.state),
                xml(&e.state)
            );
        }
        for n in &self.nodes {
            let (x, y) = place[n.id.as_str()];
            let _ = writeln!(
                out,
                "<g><rect x=\"{x}\" y=\"{y}\" width=\"{W}\" height=\"{H}\" rx=\"6\" fill=\"#f7f7f2\" stroke=\"#555\"/><text x=\"{}\" y=\"{}\" font-weight=\"bold\">{}</text><text x=\"{}\" y=\"{}\" fill=\"#444\">{}</text></g>",
                x + 10,
                y + 22,
                xml(&n.agent),
                x + 10,
                y + 40,
                xml(&clip(&n.run, 32))
            );
        }
        out.push_str("</svg>\n");
        out
    }

    /// Each party's column: the longest chain of handoffs leading to it (cycles cut).
    fn depths(&self) -> BTreeMap<String, usize> {
        let mut depth: BTreeMap<String, usize> =
            self.nodes.iter().map(|n| (n.id.clone(), 0)).collect();
        for _ in 0..self.nodes.len() {
            let mut changed = false;
            for e in self.edges.iter().filter(|e| e.from != e.to) {
                let d = depth.get(&e.from).copied().unwrap_or(0) + 1;
                if d < self.nodes.len() && depth.get(&e.to).is_some_and(|t| *t < d) {
                    depth.insert(e.to.clone(), d);
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        depth
    }
}

fn colour(state: &str) -> &'static str {
    match state {
        "rejected" | "violated" | "refused" => "#b3261e",
        "fulfilled" | "accepted" => "#1b6e3a",
        "clarification_requested" => "#8a5a00",
        _ => "#444444",
    }
}

fn dot_id(s: &str) -> String {
    format!(
        "\"{}\"",
        s.replace('\\', "\\\\")
            .replace('"', "\\\"")
            .replace('\n', "\\n")
    )
}

fn xml(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn clip(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        format!("{}…", s.chars().take(n - 1).collect::<String>())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edge(from: &str, to: &str, state: &str) -> GraphEdge {
        GraphEdge {
            from: from.into(),
            to: to.into(),
            contract: format!("{from}->{to}"),
            version: Some(1),
            state: state.into(),
            missing: vec![],
            dropped: vec![],
            violations: vec![],
            event: None,
        }
    }

    fn graph_of(edges: Vec<GraphEdge>) -> HandoffGraph {
        let mut nodes = BTreeMap::new();
        for e in &edges {
            for id in [&e.from, &e.to] {
                let (r, a) = id.split_once('#').unwrap();
                nodes.insert(
                    id.clone(),
                    GraphNode {
                        id: id.clone(),
                        run: r.into(),
                        agent: a.into(),
                    },
                );
            }
        }
        let cycles = cycles(&nodes, &edges);
        HandoffGraph {
            run: "r1".into(),
            runs: vec!["r1".into()],
            nodes: nodes.into_values().collect(),
            edges,
            cycles,
        }
    }

    #[test]
    fn cycles_are_found_and_refused_or_finished_contracts_do_not_close_them() {
        let g = graph_of(vec![
            edge("r1#a", "r1#b", "accepted"),
            edge("r1#b", "r2#c", "validated"),
            edge("r2#c", "r1#a", "recorded"),
            edge("r2#c", "r3#d", "validated"),
            edge("r3#d", "r2#c", "fulfilled"),
        ]);
        assert_eq!(g.cycles, [vec!["r1#a", "r1#b", "r2#c"]]);
        let g = graph_of(vec![
            edge("r1#a", "r1#b", "accepted"),
            edge("r1#b", "r1#a", "rejected"),
        ]);
        assert!(g.cycles.is_empty());
    }

    #[test]
    fn dot_and_svg_name_every_party_and_contract() {
        let g = graph_of(vec![edge("r1#planner", "r1#executor", "accepted")]);
        let dot = g.to_dot();
        assert!(dot.contains("\"r1#planner\" -> \"r1#executor\""), "{dot}");
        let svg = g.to_svg();
        assert!(svg.starts_with("<svg"), "{svg}");
        assert!(
            svg.contains(">planner<") && svg.contains(">executor<"),
            "{svg}"
        );
        assert!(svg.contains("r1#planner-&gt;r1#executor"), "{svg}");
        assert_eq!(g.depths()["r1#executor"], 1);
    }
}
