//! One trace → one run: the header and the steps; [`events_of_tree`] makes the events.

use std::collections::HashMap;

use serde_json::{Map, Value, json};

use super::events::{at, events_of_tree};
use super::parse::Span;
use super::tree::{Operation, Tree};
use super::{OtlpError, OtlpImportOptions};
use crate::recorder::format::{RUN_FORMAT, RunFile, RunHeader, StepRecord};

/// The run of one trace.
pub(super) fn run_from_trace(
    spans: Vec<Span>,
    options: &OtlpImportOptions,
) -> Result<RunFile, OtlpError> {
    let tree = Tree::new(spans)?;
    let n = tree.spans.len();
    let agents: Vec<usize> = (0..n)
        .filter(|&i| tree.operations[i] == Operation::Agent)
        .collect();
    // The run's agent: the outermost, earliest `invoke_agent`, else the service.
    let root = (0..n).find(|&i| tree.parent[i].is_none()).unwrap_or(0);
    let outermost = agents.iter().copied().min_by_key(|&i| (tree.depth[i], i));
    let run_agent = match outermost {
        Some(i) => tree.agent_name(i)?,
        None => None,
    }
    .or_else(|| tree.spans[root].service_name.clone())
    .or_else(|| tree.spans.iter().find_map(|s| s.service_name.clone()))
    .unwrap_or_else(|| "unknown_service".to_owned());

    // Steps: one per `invoke_agent`; without any, one per model call not inside another.
    let anchors: Vec<usize> = if agents.is_empty() {
        (0..n)
            .filter(|&i| {
                tree.operations[i] == Operation::Model
                    && tree
                        .ancestry(i)
                        .skip(1)
                        .all(|a| tree.operations[a] != Operation::Model)
            })
            .collect()
    } else {
        agents
    };
    let mut steps = Vec::with_capacity(anchors.len().max(1));
    for &i in &anchors {
        let agent = match tree.operations[i] {
            Operation::Agent => tree.agent_name(i)?.unwrap_or_else(|| run_agent.clone()),
            _ => run_agent.clone(),
        };
        steps.push(StepRecord {
            index: index_u32(steps.len()),
            name: step_name(&tree.spans[i]),
            agent,
        });
    }
    if steps.is_empty() {
        steps.push(StepRecord {
            index: 0,
            name: step_name(&tree.spans[root]),
            agent: run_agent.clone(),
        });
    }
    let step_of_anchor: HashMap<usize, u32> = anchors
        .iter()
        .enumerate()
        .map(|(s, &i)| (i, index_u32(s)))
        .collect();
    // A span inside an anchor belongs to its step; any other event to the latest step begun
    // by its time.
    let step_at = |i: usize, nanos: u64| -> u32 {
        if let Some(step) = tree
            .ancestry(i)
            .find_map(|a| step_of_anchor.get(&a).copied())
        {
            return step;
        }
        let begun = anchors
            .iter()
            .filter(|&&a| tree.spans[a].start <= nanos)
            .count();
        index_u32(begun.saturating_sub(1))
    };

    let events = events_of_tree(&tree, &step_at, &run_agent)?;

    let trace_id = tree.spans[root].trace_id.clone();
    let conversation = tree
        .spans
        .iter()
        .map(|s| s.attributes.string("gen_ai.conversation.id"))
        .find_map(|id| id.map(|id| id.filter(|id| !id.is_empty())).transpose())
        .transpose()?
        .map(str::to_owned);
    let mut metadata = Map::new();
    metadata.insert("source".to_owned(), json!("otlp"));
    metadata.insert("trace_id".to_owned(), json!(trace_id));
    metadata.insert("root_span".to_owned(), json!(tree.spans[root].name));
    if let Some(service) = &tree.spans[root].service_name {
        metadata.insert("service_name".to_owned(), json!(service));
    }
    if let Some(conversation) = &conversation {
        metadata.insert("conversation_id".to_owned(), json!(conversation));
    }
    let started = tree.spans.iter().map(|s| s.start).min().unwrap_or(0);
    let finished = tree.spans.iter().map(|s| s.end).max().unwrap_or(started);
    let run = RunHeader {
        id: format!("otel-{trace_id}"),
        agent: run_agent,
        task: options
            .task
            .clone()
            .or(conversation)
            .unwrap_or_else(|| trace_id.clone()),
        scope: options.scope.clone(),
        clearance: options.clearance.clone(),
        status: if tree.failed(root) {
            "failed"
        } else {
            "succeeded"
        }
        .to_owned(),
        started_at: at(started),
        finished_at: Some(at(finished)),
        parent_run: None,
        envelopes: Vec::new(),
        metadata: Value::Object(metadata),
    };
    Ok(RunFile {
        format: RUN_FORMAT.to_owned(),
        run,
        steps,
        events,
        envelope_sources: Vec::new(),
    })
}

fn step_name(span: &Span) -> String {
    if span.name.is_empty() {
        format!("span {}", span.span_id)
    } else {
        span.name.clone()
    }
}

fn index_u32(index: usize) -> u32 {
    u32::try_from(index).unwrap_or(u32::MAX)
}
