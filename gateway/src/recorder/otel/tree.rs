//! The span tree of one trace: parents, depths, operations, and what a span says about its
//! agent and its failure.

use std::collections::HashMap;

use serde_json::Value;

use super::OtlpError;
use super::parse::Span;

/// What a span did, from `gen_ai.operation.name`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Operation {
    /// `chat`, `text_completion` or `generate_content`: a model call.
    Model,
    /// `execute_tool`.
    Tool,
    /// `invoke_agent`.
    Agent,
    /// Anything else (`embeddings`, `create_agent`, `retrieval`, …); empty when the span has
    /// no GenAI operation at all.
    Other(String),
}

/// Operation names a span's name may start with when the attribute is missing (older
/// instrumentations named spans `chat gpt-4o` before they set `gen_ai.operation.name`).
const OPERATIONS_BY_NAME: [&str; 5] = [
    "chat",
    "text_completion",
    "generate_content",
    "execute_tool",
    "invoke_agent",
];

pub(super) fn operation(span: &Span) -> Result<Operation, OtlpError> {
    let named = span
        .name
        .split_whitespace()
        .next()
        .filter(|word| OPERATIONS_BY_NAME.contains(word));
    let name = span
        .attributes
        .string("gen_ai.operation.name")?
        .or(named)
        .unwrap_or("");
    Ok(match name {
        "chat" | "text_completion" | "generate_content" => Operation::Model,
        "execute_tool" => Operation::Tool,
        "invoke_agent" => Operation::Agent,
        other => Operation::Other(other.to_owned()),
    })
}

/// The span tree of one trace, spans sorted by (start, span id).
pub(super) struct Tree {
    pub spans: Vec<Span>,
    /// Index of each span's parent, when it is in the trace.
    pub parent: Vec<Option<usize>>,
    /// Ancestors in the trace.
    pub depth: Vec<usize>,
    pub operations: Vec<Operation>,
}

impl Tree {
    pub(super) fn new(mut spans: Vec<Span>) -> Result<Tree, OtlpError> {
        spans.sort_by(|a, b| (a.start, &a.span_id).cmp(&(b.start, &b.span_id)));
        let mut index_of: HashMap<&str, usize> = HashMap::with_capacity(spans.len());
        for (i, span) in spans.iter().enumerate() {
            if let Some(first) = index_of.insert(&span.span_id, i) {
                return Err(OtlpError::Malformed {
                    location: span.location.clone(),
                    reason: format!(
                        "repeats the span id `{}` of {}",
                        span.span_id, spans[first].location
                    ),
                    help: "a span id is unique within its trace; the export may hold the same \
                           batch twice, so remove the repeated one"
                        .to_owned(),
                });
            }
        }
        // A parent outside the export (a partial trace) makes its child a root.
        let parent: Vec<Option<usize>> = spans
            .iter()
            .map(|span| {
                span.parent_span_id
                    .as_deref()
                    .and_then(|p| index_of.get(p).copied())
            })
            .collect();
        let mut depth = Vec::with_capacity(spans.len());
        for (i, span) in spans.iter().enumerate() {
            let mut d = 0;
            let mut at = parent[i];
            while let Some(p) = at {
                d += 1;
                if d > spans.len() {
                    return Err(OtlpError::Malformed {
                        location: span.location.clone(),
                        reason: "has ancestors whose `parentSpanId`s loop".to_owned(),
                        help: "a span's parent chain must end at a root span".to_owned(),
                    });
                }
                at = parent[p];
            }
            depth.push(d);
        }
        let operations = spans.iter().map(operation).collect::<Result<Vec<_>, _>>()?;
        Ok(Tree {
            spans,
            parent,
            depth,
            operations,
        })
    }

    /// `i` and its ancestors, nearest first.
    pub(super) fn ancestry(&self, i: usize) -> impl Iterator<Item = usize> + '_ {
        std::iter::successors(Some(i), |&at| self.parent[at])
    }

    pub(super) fn failed(&self, i: usize) -> bool {
        self.spans[i].status_error || self.spans[i].attributes.get("error.type").is_some()
    }

    /// Why span `i` failed: its status message, else its last `exception` event, else its
    /// `error.type`.
    pub(super) fn error_message(&self, i: usize) -> String {
        let span = &self.spans[i];
        if !span.status_message.is_empty() {
            return span.status_message.clone();
        }
        let exception = span.events.iter().rev().find(|e| e.name == "exception");
        if let Some(event) = exception {
            let text = |key| event.attributes.get(key).and_then(Value::as_str);
            match (text("exception.type"), text("exception.message")) {
                (Some(kind), Some(message)) => return format!("{kind}: {message}"),
                (None, Some(message)) => return message.to_owned(),
                (Some(kind), None) => return kind.to_owned(),
                (None, None) => {}
            }
        }
        match span.attributes.get("error.type").and_then(Value::as_str) {
            Some(kind) => format!("span `{}` failed: {kind}", span.name),
            None => format!("span `{}` ended with an error", span.name),
        }
    }

    pub(super) fn agent_name(&self, i: usize) -> Result<Option<String>, OtlpError> {
        let attributes = &self.spans[i].attributes;
        let name = attributes
            .string("gen_ai.agent.name")?
            .filter(|s| !s.is_empty());
        let id = attributes
            .string("gen_ai.agent.id")?
            .filter(|s| !s.is_empty());
        Ok(name.or(id).map(str::to_owned))
    }
}
