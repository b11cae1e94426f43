//! Imports OpenTelemetry GenAI traces as runs: an OTLP/JSON trace export (or a JSON-lines file
//! of them) becomes [`RunFile`]s in the run format, ready for the importer, which computes the
//! hash chain (`hash`/`prev` are left out).
//!
//! The attributes read are those of the OpenTelemetry GenAI semantic conventions (status
//! "Development"; `gen_ai.operation.name` = `chat`, `text_completion`, `generate_content`,
//! `execute_tool`, `invoke_agent`, …), with the older names and span events still emitted
//! by many instrumentations (`gen_ai.system`, `gen_ai.usage.prompt_tokens`,
//! `gen_ai.user.message` / `gen_ai.choice` events with `gen_ai.event.content`,
//! `gen_ai.content.prompt` / `gen_ai.content.completion`).
//!
//! # Mapping
//!
//! - **Runs.** One run per trace, with id `otel-<traceId>`. A conversation
//!   (`gen_ai.conversation.id`) often spans several traces (one per turn), so it is the
//!   run's default *task*, not its id; without one the task is the trace id, and
//!   [`OtlpImportOptions::task`] overrides both. Spans of one trace may be spread over
//!   several documents or resources. Runs come out ordered by start time, then trace id.
//! - **Header.** `agent`: `gen_ai.agent.name` (else `gen_ai.agent.id`) of the outermost,
//!   earliest `invoke_agent` span, else the root span's resource `service.name`, else
//!   `unknown_service`. `status`: `failed` when the root span (the earliest span without a
//!   parent in the trace) ended with an error, else `succeeded`. `started_at` / `finished_at`:
//!   the earliest start and latest end of any span. `metadata`: `source: "otlp"`, `trace_id`,
//!   `root_span`, and `service_name` / `conversation_id` when known. No envelopes.
//! - **Order.** Spans are ordered by start time, ties by span id; events by time (a call's
//!   events at its span's start, a result's at its end), then ends before starts, children's
//!   ends before their parent's, then span order — so the input order of spans never
//!   matters. `at` is RFC 3339 to the second; `seq` keeps the nanosecond order.
//! - **Steps.** One per `invoke_agent` span, named after the span, with its agent. A trace
//!   without one gets a step per model call that is not inside another (each turn of a bare
//!   agent loop), agent as the run's; a trace with neither gets one step named after the
//!   root span. An event belongs to the step of its nearest enclosing step span, else to the
//!   latest step begun by its time, else to step 0.
//! - **Events.** A span's operation is `gen_ai.operation.name`, else the first word of its
//!   name when that is an operation (`chat gpt-4o`), as older instrumentations wrote it.
//!   - `chat`, `text_completion`, `generate_content` → `model_call {provider, request,
//!     request_hash}` and `model_output {request_hash, response}` in the shapes of
//!     [`ChatRequest`](crate::providers::ChatRequest) (model, messages from
//!     `gen_ai.system_instructions` + `gen_ai.input.messages`, temperature, max_tokens, and
//!     top_p/seed/stop/… as extra fields; `request_hash` is
//!     [`ChatRequest::hash`](crate::providers::ChatRequest::hash)) and
//!     [`ChatResponse`](crate::providers::ChatResponse) (the first output message's text,
//!     `gen_ai.response.id` / `.model`, finish reason, token usage). Message text keeps text
//!     parts and tool responses; tool-call, blob and file parts are left out (the
//!     converter does not map tool-call parts to `ChatMessage::tool_calls`). A failed call with no sign of an answer gets no
//!     `model_output`. When the trace has no `execute_tool` span, the tool calls in a model's
//!     output become `tool_call` events.
//!   - `execute_tool` → `tool_call {call_id, tool, arguments}` and `tool_result {call_id,
//!     status: ok|error, output}`; `call_id` is `gen_ai.tool.call.id` (else `otel-<spanId>`),
//!     arguments and result are parsed when they are JSON objects or arrays in a string
//!     (missing arguments read as `{}`; a failed tool without a result has its error as
//!     output).
//!   - `invoke_agent` → `output {content}` when it records `gen_ai.output.messages`; a
//!     sub-agent's answer (an `invoke_agent` inside another) is a `note` instead, as it is
//!     not the run's output.
//!   - Any span that failed (status error, or an `error.type` attribute) → `error {message}`
//!     at its end: the status message, else its `exception` event, else its `error.type`.
//!   - Any other span (`embeddings`, `create_agent`, `retrieval`, HTTP spans, spans without
//!     GenAI attributes) → `note {text}` naming it, so nothing is dropped silently.
//!
//! Span events other than the GenAI message events and `exception` are not imported.

mod attributes;
mod events;
mod messages;
mod parse;
mod trace;
mod tree;

use std::collections::BTreeMap;

use serde_json::Value;

use self::parse::{Span, collect_spans};
use super::format::RunFile;

/// Where a document came from: a line of a JSON-lines file, or the whole input.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct DocLocation {
    /// The line the document starts on, when the input held several documents.
    pub line: Option<usize>,
}

impl DocLocation {
    /// `path`, followed by the document's line when there is one.
    pub fn at(self, path: &str) -> String {
        match self.line {
            Some(line) => format!("{path} (line {line})"),
            None => path.to_owned(),
        }
    }

    /// The document itself.
    pub(super) fn whole(self) -> String {
        match self.line {
            Some(line) => format!("the document at line {line}"),
            None => "the document".to_owned(),
        }
    }
}

/// How imported runs are filed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OtlpImportOptions {
    /// The scope every run is recorded under (required by the store).
    pub scope: String,
    /// The highest sensitivity the runs may see.
    pub clearance: String,
    /// The task of every run; by default the trace's `gen_ai.conversation.id`, else its trace
    /// id.
    pub task: Option<String>,
}

/// Why an export could not be imported. Locations are paths into the export
/// (`resourceSpans[0].scopeSpans[1].spans[4].attributes[2]`), with the line of the document
/// when the input held several.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OtlpError {
    /// [`OtlpImportOptions::scope`] is empty.
    #[error(
        "runs need a scope, and none was given\n  help: pass the scope the runs belong to, for \
         example `org:acme/repo:api`"
    )]
    EmptyScope,
    /// The text is not JSON (nor JSON lines).
    #[error(
        "the input is not JSON: {message}\n  help: give an OTLP/JSON trace export, or a \
         JSON-lines file with one export per line"
    )]
    NotJson {
        /// The parser's message, with line and column.
        message: String,
    },
    /// A document is JSON but not an OTLP trace export.
    #[error("{location} is not an OTLP/JSON trace export: {reason}\n  help: {help}")]
    NotOtlp {
        /// `the document`, or `the document at line N`.
        location: String,
        /// What is wrong.
        reason: String,
        /// How to fix it.
        help: String,
    },
    /// Part of the export's structure is wrong: a span without ids or times, a repeated
    /// span id, a list that is not a list.
    #[error("{location} {reason}\n  help: {help}")]
    Malformed {
        /// Where.
        location: String,
        /// What is wrong (`has no \`traceId\``).
        reason: String,
        /// How to fix it.
        help: String,
    },
    /// An attribute's value is not a valid OTLP value, or not what its GenAI convention says.
    #[error("attribute `{key}` at {location} {reason}\n  help: {help}")]
    BadAttribute {
        /// Where.
        location: String,
        /// The attribute key.
        key: String,
        /// What is wrong.
        reason: String,
        /// How to fix it.
        help: String,
    },
    /// The input holds no spans at all.
    #[error(
        "the export holds no spans\n  help: check that the exporter wrote traces; an empty \
         export has nothing to import"
    )]
    NoSpans,
}

/// The runs of one OTLP/JSON trace export (`{"resourceSpans": [...]}`), one per trace.
pub fn runs_from_otlp(doc: &Value, options: &OtlpImportOptions) -> Result<Vec<RunFile>, OtlpError> {
    check_options(options)?;
    let mut spans = Vec::new();
    collect_spans(doc, DocLocation::default(), &mut spans)?;
    runs_from_spans(spans, options)
}

/// The runs of an OTLP/JSON file: one export, or several one after the other (JSON lines, as
/// the collector's `file` exporter writes them). Spans of one trace may be split across
/// documents.
pub fn runs_from_otlp_str(
    text: &str,
    options: &OtlpImportOptions,
) -> Result<Vec<RunFile>, OtlpError> {
    check_options(options)?;
    let mut documents = Vec::new();
    let mut stream = serde_json::Deserializer::from_str(text).into_iter::<Value>();
    loop {
        let offset = stream.byte_offset();
        match stream.next() {
            None => break,
            Some(Ok(doc)) => documents.push((line_of_next_value(text, offset), doc)),
            Some(Err(e)) => {
                return Err(OtlpError::NotJson {
                    message: e.to_string(),
                });
            }
        }
    }
    let several = documents.len() > 1;
    let mut spans = Vec::new();
    for (line, doc) in &documents {
        let at = DocLocation {
            line: several.then_some(*line),
        };
        collect_spans(doc, at, &mut spans)?;
    }
    runs_from_spans(spans, options)
}

fn check_options(options: &OtlpImportOptions) -> Result<(), OtlpError> {
    if options.scope.trim().is_empty() {
        return Err(OtlpError::EmptyScope);
    }
    Ok(())
}

/// The 1-based line of the first non-blank character at or after `offset`.
fn line_of_next_value(text: &str, offset: usize) -> usize {
    let rest = text.get(offset..).unwrap_or("");
    let start = offset + (rest.len() - rest.trim_start().len());
    1 + text.as_bytes()[..start.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
}

fn runs_from_spans(
    spans: Vec<Span>,
    options: &OtlpImportOptions,
) -> Result<Vec<RunFile>, OtlpError> {
    if spans.is_empty() {
        return Err(OtlpError::NoSpans);
    }
    let mut traces: BTreeMap<String, Vec<Span>> = BTreeMap::new();
    for span in spans {
        traces.entry(span.trace_id.clone()).or_default().push(span);
    }
    let mut traces: Vec<(u64, Vec<Span>)> = traces
        .into_values()
        .map(|spans| (spans.iter().map(|s| s.start).min().unwrap_or(0), spans))
        .collect();
    // Map order is trace id order, so a stable sort by start leaves ties by trace id.
    traces.sort_by_key(|(start, _)| *start);
    traces
        .into_iter()
        .map(|(_, spans)| trace::run_from_trace(spans, options))
        .collect()
}

#[cfg(test)]
mod tests;
