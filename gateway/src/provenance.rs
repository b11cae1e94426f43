//! The provenance graph: where a record came from and what used it, across runs, steps,
//! events (compiles, model calls, tool calls, decisions...), envelope versions and the records
//! promoted from runs (memories, replays, cases).
//!
//! Edges point from a source to what was derived from or used it. Edges inside a run are
//! derived from the recorded events themselves (a run contains its steps, a step its events; a
//! compile uses the offers holding its items; a model call uses its compile; an output answers
//! its call; a decision, an approval and a result concern their tool call; the model output
//! before a tool call in a step requested it); edges across records are rows of
//! `provenance_edges` (written by whoever promotes a record) and `run_envelopes`. A query loads
//! only the runs it reaches, into a petgraph `StableDiGraph`.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::fmt::Write as _;

use crate::store::{Connection, params};
use petgraph::Direction;
use petgraph::graph::{DiGraph, NodeIndex};
use serde::Serialize;

use crate::recorder::events::Event;
use crate::recorder::{Recorder, RecorderError, short};
use crate::store::StoreError;

/// A node of the graph.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct ProvNode {
    /// `run:R`, `step:R/N`, `event:R/SEQ`, `envelope:ID@V#HASH`, or a record id.
    pub id: String,
    /// `run`, `step`, an event kind, `envelope`, or the record kind.
    pub kind: String,
    /// A short description.
    pub label: String,
}

/// An edge: `from` was used by, or produced, `to`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct ProvEdge {
    /// Source node id.
    pub from: String,
    /// Derived node id.
    pub to: String,
    /// `contains`, `offered`, `compiled`, `answered`, `requested`, `decided`, `approved`,
    /// `result`, `governed`, `handoff`, `promoted`, ...
    pub relation: String,
}

/// Which way to walk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Walk {
    /// Where it came from.
    Ancestors,
    /// What used it.
    Descendants,
}

/// The answer to one provenance query: the start node and every node reached, with the edges
/// between them.
#[derive(Debug, Clone, Serialize)]
pub struct ProvenanceAnswer {
    /// The node asked about.
    pub start: String,
    /// Ancestors or descendants.
    pub direction: &'static str,
    /// Reached nodes, start first, then by id.
    pub nodes: Vec<ProvNode>,
    /// Edges among them.
    pub edges: Vec<ProvEdge>,
}

/// Resolves what a user typed (`run-1`, `run:run-1`, `event:run-1/12`, `memory:m-3`) to a node
/// id, or says what exists.
pub fn resolve_id(recorder: &Recorder, input: &str) -> Result<String, RecorderError> {
    if input.contains(':') {
        return Ok(input.to_string());
    }
    if input.starts_with("mem-") {
        return Ok(format!("memory:{input}"));
    }
    recorder.header(input)?;
    Ok(format!("run:{input}"))
}

/// Walks the graph from `start`.
pub fn query(
    recorder: &Recorder,
    start: &str,
    walk: Walk,
) -> Result<ProvenanceAnswer, RecorderError> {
    let mut graph = Graph::default();
    let mut loaded_runs = BTreeSet::new();
    let store = recorder.store();
    let start_id = start.to_string();
    let mut queue = VecDeque::from([start_id.clone()]);
    let mut seen = BTreeSet::from([start_id.clone()]);
    while let Some(id) = queue.pop_front() {
        if let Some(run) = run_of(&id)
            && loaded_runs.insert(run.clone())
        {
            let r = run.clone();
            let (nodes, edges) = store.read(move |c| run_graph(c, &r))?;
            for n in nodes {
                graph.node(n);
            }
            for e in edges {
                graph.edge(e);
            }
        }
        let key = id.clone();
        let stored = store.read(move |c| stored_edges(c, &key))?;
        for e in stored {
            for end in [&e.from, &e.to] {
                if graph.index(end).is_none() {
                    graph.node(stored_node(end));
                }
            }
            graph.edge(e);
        }
        if graph.index(&id).is_none() {
            if id == start_id {
                return Err(RecorderError::Invalid(format!(
                    "nothing is recorded as `{id}`\n  help: use a run id, `run:ID`, `step:RUN/N`, `event:RUN/SEQ` or a record id"
                )));
            }
            graph.node(stored_node(&id));
        }
        for next in graph.neighbours(&id, walk) {
            if seen.insert(next.clone()) {
                queue.push_back(next);
            }
        }
    }
    Ok(graph.answer(&start_id, &seen, walk))
}

impl ProvenanceAnswer {
    /// An indented tree from the start node (a node reached twice is shown once, then
    /// referred to).
    pub fn to_text(&self) -> String {
        let nodes: HashMap<&str, &ProvNode> =
            self.nodes.iter().map(|n| (n.id.as_str(), n)).collect();
        let mut children: BTreeMap<&str, Vec<(&str, &str)>> = BTreeMap::new();
        for e in &self.edges {
            let (a, b) = if self.direction == "ancestors" {
                (e.to.as_str(), e.from.as_str())
            } else {
                (e.from.as_str(), e.to.as_str())
            };
            children
                .entry(a)
                .or_default()
                .push((b, e.relation.as_str()));
        }
        let mut out = format!("{} of {}\n", self.direction, self.start);
        let mut shown = BTreeSet::new();
        let mut stack = vec![(self.start.as_str(), 0usize, "")];
        while let Some((id, depth, relation)) = stack.pop() {
            let node = nodes.get(id);
            let label = node.map_or("", |n| n.label.as_str());
            let kind = node.map_or("", |n| n.kind.as_str());
            let indent = "  ".repeat(depth);
            let via = if relation.is_empty() {
                String::new()
            } else {
                format!("[{relation}] ")
            };
            if !shown.insert(id) {
                let _ = writeln!(out, "{indent}{via}{id} (see above)");
                continue;
            }
            let _ = writeln!(out, "{indent}{via}{id} · {kind} · {label}");
            if let Some(next) = children.get(id) {
                for (child, rel) in next.iter().rev() {
                    stack.push((child, depth + 1, rel));
                }
            }
        }
        out
    }

    /// Graphviz DOT (through petgraph's `Dot`).
    pub fn to_dot(&self) -> String {
        let mut g: DiGraph<String, String> = DiGraph::new();
        let mut index = HashMap::new();
        for n in &self.nodes {
            index.insert(n.id.as_str(), g.add_node(format!("{}\n{}", n.id, n.label)));
        }
        for e in &self.edges {
            if let (Some(&a), Some(&b)) = (index.get(e.from.as_str()), index.get(e.to.as_str())) {
                g.add_edge(a, b, e.relation.clone());
            }
        }
        format!("{}", petgraph::dot::Dot::new(&g))
    }
}

/// The graph being assembled.
#[derive(Default)]
struct Graph {
    g: DiGraph<ProvNode, String>,
    ids: HashMap<String, NodeIndex>,
    edges: BTreeSet<(String, String, String)>,
}

impl Graph {
    fn index(&self, id: &str) -> Option<NodeIndex> {
        self.ids.get(id).copied()
    }

    fn node(&mut self, node: ProvNode) -> NodeIndex {
        if let Some(&i) = self.ids.get(&node.id) {
            return i;
        }
        let id = node.id.clone();
        let i = self.g.add_node(node);
        self.ids.insert(id, i);
        i
    }

    fn edge(&mut self, e: ProvEdge) {
        let (Some(a), Some(b)) = (self.index(&e.from), self.index(&e.to)) else {
            return;
        };
        if self.edges.insert((e.from, e.to, e.relation.clone())) {
            self.g.add_edge(a, b, e.relation);
        }
    }

    fn neighbours(&self, id: &str, walk: Walk) -> Vec<String> {
        let Some(i) = self.index(id) else {
            return Vec::new();
        };
        let dir = match walk {
            Walk::Ancestors => Direction::Incoming,
            Walk::Descendants => Direction::Outgoing,
        };
        let mut out: Vec<String> = self
            .g
            .neighbors_directed(i, dir)
            .map(|n| self.g[n].id.clone())
            .collect();
        out.sort();
        out.dedup();
        out
    }

    fn answer(&self, start: &str, reached: &BTreeSet<String>, walk: Walk) -> ProvenanceAnswer {
        let mut nodes: Vec<ProvNode> = reached
            .iter()
            .filter_map(|id| self.index(id).map(|i| self.g[i].clone()))
            .collect();
        nodes.sort_by_key(|n| (n.id != start, n.id.clone()));
        let mut edges: Vec<ProvEdge> = self
            .g
            .edge_indices()
            .filter_map(|e| {
                let (a, b) = self.g.edge_endpoints(e)?;
                let (from, to) = (&self.g[a].id, &self.g[b].id);
                (reached.contains(from) && reached.contains(to)).then(|| ProvEdge {
                    from: from.clone(),
                    to: to.clone(),
                    relation: self.g[e].clone(),
                })
            })
            .collect();
        edges.sort();
        edges.dedup();
        ProvenanceAnswer {
            start: start.to_string(),
            direction: match walk {
                Walk::Ancestors => "ancestors",
                Walk::Descendants => "descendants",
            },
            nodes,
            edges,
        }
    }
}

/// The run a node belongs to, from its id.
fn run_of(id: &str) -> Option<String> {
    let rest = id
        .strip_prefix("run:")
        .or_else(|| id.strip_prefix("step:"))
        .or_else(|| id.strip_prefix("event:"))?;
    Some(rest.split('/').next().unwrap_or(rest).to_string())
}

fn stored_node(id: &str) -> ProvNode {
    let kind = id.split(':').next().unwrap_or("record").to_string();
    ProvNode {
        id: id.to_string(),
        kind,
        label: String::new(),
    }
}

fn stored_edges(c: &Connection, id: &str) -> Result<Vec<ProvEdge>, StoreError> {
    let mut stmt = c.prepare(
        "SELECT parent, child, relation FROM provenance_edges WHERE parent = ?1 OR child = ?1",
    )?;
    let rows = stmt.query_map([id], |r| {
        Ok(ProvEdge {
            from: r.get(0)?,
            to: r.get(1)?,
            relation: r.get(2)?,
        })
    })?;
    rows.collect::<Result<_, _>>()
}

/// Every node and edge a run's records imply.
fn run_graph(c: &Connection, run: &str) -> Result<(Vec<ProvNode>, Vec<ProvEdge>), StoreError> {
    let mut nodes = Vec::new();
    let mut edges = Vec::new();
    let edge = |from: String, to: String, relation: &str| ProvEdge {
        from,
        to,
        relation: relation.to_string(),
    };
    let header: Option<(String, String, Option<String>)> = c
        .query_row(
            "SELECT agent, task, parent_run FROM runs WHERE id = ?1",
            [run],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .ok();
    let Some((agent, task, parent_run)) = header else {
        return Ok((nodes, edges));
    };
    let run_id = format!("run:{run}");
    nodes.push(ProvNode {
        id: run_id.clone(),
        kind: "run".into(),
        label: format!("agent {agent}, task {task}"),
    });
    if let Some(parent) = parent_run {
        nodes.push(stored_node(&format!("run:{parent}")));
        edges.push(edge(format!("run:{parent}"), run_id.clone(), "handoff"));
    }
    let mut stmt = c.prepare("SELECT id FROM runs WHERE parent_run = ?1")?;
    let children: Vec<String> = stmt
        .query_map([run], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    for child in children {
        nodes.push(stored_node(&format!("run:{child}")));
        edges.push(edge(run_id.clone(), format!("run:{child}"), "handoff"));
    }
    let mut envelopes: HashMap<String, String> = HashMap::new();
    let mut stmt = c.prepare(
        "SELECT v.id, v.version, v.content_hash FROM run_envelopes r
         JOIN envelope_versions v ON v.id = r.envelope_id AND v.content_hash = r.content_hash
         WHERE r.run_id = ?1",
    )?;
    let rows = stmt.query_map([run], |r| {
        Ok((r.get::<String>(0)?, r.get::<u32>(1)?, r.get::<String>(2)?))
    })?;
    for row in rows {
        let (id, version, hash) = row?;
        let node = format!("envelope:{id}@{version}#{}", short(&hash));
        nodes.push(ProvNode {
            id: node.clone(),
            kind: "envelope".into(),
            label: format!("{id} version {version}"),
        });
        edges.push(edge(node.clone(), run_id.clone(), "governed"));
        envelopes.insert(format!("{id}@{version}"), node);
    }
    let mut stmt =
        c.prepare("SELECT idx, name, agent FROM steps WHERE run_id = ?1 ORDER BY idx")?;
    let steps = stmt.query_map([run], |r| {
        Ok((r.get::<u32>(0)?, r.get::<String>(1)?, r.get::<String>(2)?))
    })?;
    for s in steps {
        let (idx, name, agent) = s?;
        let id = format!("step:{run}/{idx}");
        nodes.push(ProvNode {
            id: id.clone(),
            kind: "step".into(),
            label: format!("{agent}: {name}"),
        });
        edges.push(edge(run_id.clone(), id, "contains"));
    }
    let events = crate::recorder::events_for_provenance(c, run)?;
    let ev = |seq: u64| format!("event:{run}/{seq}");
    let mut offered_items: HashMap<String, u64> = HashMap::new();
    let mut calls: HashMap<String, u64> = HashMap::new();
    let mut requests: HashMap<String, u64> = HashMap::new();
    let mut last_output_in_step: HashMap<u32, u64> = HashMap::new();
    let mut decision_for_call: HashMap<String, u64> = HashMap::new();
    for e in &events {
        let id = ev(e.seq);
        edges.push(edge(
            format!("step:{run}/{}", e.step),
            id.clone(),
            "contains",
        ));
        // An event whose payload does not read is a node without edges of its own.
        let event = e.event().ok();
        let label = match event {
            Some(Event::ContextOffered(offered)) => {
                for item in &offered.items {
                    offered_items.insert(item.id.clone(), e.seq);
                }
                format!("{} item(s) offered", offered.items.len())
            }
            Some(Event::Compile(compile)) => {
                let sources: BTreeSet<u64> = compile
                    .item_ids
                    .iter()
                    .filter_map(|item| offered_items.get(item).copied())
                    .collect();
                for seq in sources {
                    edges.push(edge(ev(seq), id.clone(), "offered"));
                }
                format!("compile {}", short(&compile.hash))
            }
            Some(Event::ModelCall(call)) => {
                if let Some(seq) = call.compile_seq {
                    edges.push(edge(ev(seq), id.clone(), "compiled"));
                }
                requests.insert(call.request_hash.clone(), e.seq);
                format!(
                    "{} request {}",
                    call.request.model,
                    short(&call.request_hash)
                )
            }
            Some(Event::ModelOutput(output)) => {
                if let Some(&seq) = requests.get(&output.request_hash) {
                    edges.push(edge(ev(seq), id.clone(), "answered"));
                }
                last_output_in_step.insert(e.step, e.seq);
                "model output".to_string()
            }
            Some(Event::ToolCall(call)) => {
                if let Some(&seq) = last_output_in_step.get(&e.step) {
                    edges.push(edge(ev(seq), id.clone(), "requested"));
                }
                calls.insert(call.call_id.clone(), e.seq);
                format!("{} {}", call.call_id, call.tool)
            }
            Some(Event::Decision(d)) => {
                let call = d.call_id.unwrap_or_default();
                if let Some(&seq) = calls.get(&call) {
                    edges.push(edge(ev(seq), id.clone(), "decided"));
                }
                decision_for_call.insert(call.clone(), e.seq);
                for v in &d.decision.envelope_versions {
                    if let Some(node) = envelopes.get(v) {
                        edges.push(edge(node.clone(), id.clone(), "decided"));
                    }
                }
                format!("{} {}", d.decision.effect.as_str(), call)
            }
            Some(Event::Approval(a)) => {
                let call = a.call_id.unwrap_or_default();
                if let Some(&seq) = calls.get(&call) {
                    edges.push(edge(ev(seq), id.clone(), "approved"));
                }
                format!("approval {call}")
            }
            Some(Event::ToolResult(r)) => {
                if let Some(&seq) = calls.get(&r.call_id) {
                    edges.push(edge(ev(seq), id.clone(), "result"));
                }
                if let Some(&seq) = decision_for_call.get(&r.call_id) {
                    edges.push(edge(ev(seq), id.clone(), "allowed"));
                }
                format!("tool result {}", r.call_id)
            }
            _ => e.kind.replace('_', " "),
        };
        nodes.push(ProvNode {
            id,
            kind: e.kind.clone(),
            label,
        });
    }
    Ok((nodes, edges))
}

/// Adds an edge between records (for whoever promotes or derives one).
pub fn record_edge(
    recorder: &Recorder,
    parent: &str,
    child: &str,
    relation: &str,
) -> Result<(), RecorderError> {
    let (p, ch, r) = (parent.to_string(), child.to_string(), relation.to_string());
    recorder.store().write(move |c| {
        c.execute(
            "INSERT INTO provenance_edges (parent, child, relation) VALUES (?1, ?2, ?3)
             ON CONFLICT DO NOTHING",
            params![p, ch, r],
        )?;
        Ok(())
    })?;
    Ok(())
}

#[cfg(test)]
mod tests;
