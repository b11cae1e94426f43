//! The events of a trace's spans, in time order: what each GenAI operation records.

use serde_json::{Map, Value};

use super::OtlpError;
use super::messages::{agent_output, arguments, input_messages, model_output};
use super::parse::Span;
use super::tree::{Operation, Tree};
use crate::clock::rfc3339;
use crate::providers::{ChatRequest, ChatResponse, Usage};
use crate::recorder::events::ErrorEvent;
use crate::recorder::events::{
    EventPayload, ModelCallEvent, ModelOutputEvent, NoteEvent, OutputEvent, ToolCallEvent,
    ToolResultEvent, to_json,
};
use crate::recorder::format::{EventKind, EventRecord};

/// An event before sequencing. Events sort by time; at the same instant, ends before starts,
/// a child's end before its parent's, a parent's start before its child's, then span order.
struct PendingEvent {
    nanos: u64,
    /// 0 for what happens when a span ends, 1 when it starts.
    phase: u8,
    /// Depth for starts, minus depth for ends.
    depth_key: i64,
    /// The span's place in (start, span id) order.
    rank: usize,
    /// Order among one span's events.
    sub: u32,
    step: u32,
    kind: EventKind,
    payload: Value,
}

/// Every event of the trace, sequenced. `step_at(span, nanos)` says which step an event of
/// `span` at `nanos` belongs to.
pub(super) fn events_of_tree(
    tree: &Tree,
    step_at: &dyn Fn(usize, u64) -> u32,
    run_agent: &str,
) -> Result<Vec<EventRecord>, OtlpError> {
    // Tool calls a model asked for become events of their own only when no `execute_tool`
    // span records them.
    let tools_traced = tree.operations.contains(&Operation::Tool);
    let mut pending = Vec::new();
    for i in 0..tree.spans.len() {
        let mut emitter = Emitter {
            tree,
            i,
            out: &mut pending,
            step_at,
            start_sub: 0,
            end_sub: 0,
        };
        match tree.operations[i].clone() {
            Operation::Model => emitter.model_call(tools_traced)?,
            Operation::Tool => emitter.tool_call()?,
            Operation::Agent => {
                if let Some(content) = agent_output(&tree.spans[i].attributes)? {
                    // Only the outermost agent's answer is the run's output; a sub-agent's
                    // is kept as a note.
                    let nested = tree
                        .ancestry(i)
                        .skip(1)
                        .any(|a| tree.operations[a] == Operation::Agent);
                    if nested {
                        let agent = tree.agent_name(i)?.unwrap_or_else(|| run_agent.to_owned());
                        let text = format!("agent `{agent}` answered: {content}");
                        emitter.at_end(&NoteEvent { text });
                    } else {
                        emitter.at_end(&OutputEvent { content });
                    }
                }
                emitter.error_if_failed();
            }
            Operation::Other(name) => {
                let span = &tree.spans[i].name;
                let text = if name.is_empty() {
                    format!("span `{span}` (no gen_ai operation)")
                } else {
                    format!("span `{span}` (gen_ai operation `{name}`, not mapped)")
                };
                emitter.at_start(&NoteEvent { text });
                emitter.error_if_failed();
            }
        }
    }
    pending.sort_by_key(|e| (e.nanos, e.phase, e.depth_key, e.rank, e.sub));
    let records = pending
        .into_iter()
        .enumerate()
        .map(|(seq, event)| EventRecord {
            seq: seq as u64,
            step: event.step,
            kind: event.kind.as_str().to_owned(),
            at: at(event.nanos),
            payload: event.payload,
            prev: None,
            hash: None,
        })
        .collect();
    Ok(records)
}

/// Builds the events of one span.
struct Emitter<'a> {
    tree: &'a Tree,
    i: usize,
    out: &'a mut Vec<PendingEvent>,
    step_at: &'a dyn Fn(usize, u64) -> u32,
    start_sub: u32,
    end_sub: u32,
}

impl Emitter<'_> {
    fn span(&self) -> &Span {
        &self.tree.spans[self.i]
    }

    fn at_start<P: EventPayload>(&mut self, payload: &P) {
        let (kind, payload) = (P::KIND, to_json(payload));
        let nanos = self.span().start;
        let depth = self.tree.depth[self.i] as i64;
        let sub = self.start_sub;
        self.start_sub += 1;
        self.push(nanos, 1, depth, sub, kind, payload);
    }

    fn at_end<P: EventPayload>(&mut self, payload: &P) {
        let (kind, payload) = (P::KIND, to_json(payload));
        let (start, nanos) = (self.span().start, self.span().end);
        let depth = self.tree.depth[self.i] as i64;
        // An instant span's end events stay after its start events.
        let (phase, depth_key) = if nanos == start {
            (1, depth)
        } else {
            (0, -depth)
        };
        // Start events number from 0, end events after every possible start event.
        let sub = (1 << 16) + self.end_sub;
        self.end_sub += 1;
        self.push(nanos, phase, depth_key, sub, kind, payload);
    }

    fn push(
        &mut self,
        nanos: u64,
        phase: u8,
        depth_key: i64,
        sub: u32,
        kind: EventKind,
        payload: Value,
    ) {
        let step = (self.step_at)(self.i, nanos);
        self.out.push(PendingEvent {
            nanos,
            phase,
            depth_key,
            rank: self.i,
            sub,
            step,
            kind,
            payload,
        });
    }

    fn error_if_failed(&mut self) {
        if self.tree.failed(self.i) {
            let message = self.tree.error_message(self.i);
            self.at_end(&ErrorEvent {
                message,
                request_hash: None,
            });
        }
    }

    /// `model_call` at the start; `model_output` at the end unless the call failed without
    /// answering; then an error, if any.
    fn model_call(&mut self, tools_traced: bool) -> Result<(), OtlpError> {
        let span = self.span();
        let attributes = &span.attributes;
        let provider = attributes
            .string("gen_ai.provider.name")?
            .or(attributes.string("gen_ai.system")?)
            .unwrap_or("unknown")
            .to_owned();
        let response_model = attributes.string("gen_ai.response.model")?;
        let model = attributes
            .string("gen_ai.request.model")?
            .or(response_model)
            .unwrap_or("");
        let mut extra = Map::new();
        for (key, field) in REQUEST_EXTRAS {
            if let Some(value) = attributes.get(key).filter(|v| !v.is_null()) {
                extra.insert(field.to_owned(), value.clone());
            }
        }
        let request = ChatRequest {
            model: model.to_owned(),
            messages: input_messages(span)?,
            temperature: attributes.number("gen_ai.request.temperature")?,
            max_tokens: attributes.count("gen_ai.request.max_tokens")?,
            extra,
        };
        let request_hash = request.hash();

        let output = model_output(span)?;
        let response_id = attributes.string("gen_ai.response.id")?;
        let input_tokens = match attributes.count("gen_ai.usage.input_tokens")? {
            Some(n) => Some(n),
            None => attributes.count("gen_ai.usage.prompt_tokens")?,
        };
        let output_tokens = match attributes.count("gen_ai.usage.output_tokens")? {
            Some(n) => Some(n),
            None => attributes.count("gen_ai.usage.completion_tokens")?,
        };
        let listed_reason = match attributes.get("gen_ai.response.finish_reasons") {
            Some(Value::Array(reasons)) => reasons.first().and_then(Value::as_str),
            Some(Value::String(reason)) => Some(reason.as_str()),
            _ => None,
        };
        let answered = output.present || response_id.is_some() || output_tokens.is_some();
        let response = ChatResponse {
            id: response_id.unwrap_or("").to_owned(),
            model: response_model.unwrap_or(model).to_owned(),
            content: output.content.clone(),
            finish_reason: output
                .finish_reason
                .as_deref()
                .or(listed_reason)
                .unwrap_or("unknown")
                .to_owned(),
            usage: Usage {
                prompt_tokens: input_tokens.unwrap_or(0),
                completion_tokens: output_tokens.unwrap_or(0),
            },
            tool_calls: Vec::new(),
        };
        let span_id = span.span_id.clone();
        let failed = self.tree.failed(self.i);

        self.at_start(&ModelCallEvent {
            provider,
            request,
            request_hash: request_hash.clone(),
            compile_seq: None,
            messages: None,
        });
        if answered || !failed {
            self.at_end(&ModelOutputEvent {
                request_hash,
                response,
            });
        }
        if !tools_traced {
            for (n, (id, tool, arguments)) in output.tool_calls.into_iter().enumerate() {
                let call_id = id.unwrap_or_else(|| format!("otel-{span_id}-{n}"));
                self.at_end(&ToolCallEvent {
                    call_id,
                    tool,
                    arguments,
                    usage: None,
                    call_hash: None,
                });
            }
        }
        self.error_if_failed();
        Ok(())
    }

    /// `tool_call` at the start, `tool_result` at the end, then an error, if any.
    fn tool_call(&mut self) -> Result<(), OtlpError> {
        let span = self.span();
        let attributes = &span.attributes;
        let call_id = attributes
            .string("gen_ai.tool.call.id")?
            .map_or_else(|| format!("otel-{}", span.span_id), str::to_owned);
        let tool = match attributes.string("gen_ai.tool.name")? {
            Some(tool) => tool.to_owned(),
            None => span
                .name
                .strip_prefix("execute_tool ")
                .unwrap_or(&span.name)
                .to_owned(),
        };
        let arguments = arguments(attributes.get("gen_ai.tool.call.arguments"));
        let failed = self.tree.failed(self.i);
        // Without a recorded result, a failed tool's output is its error: that is what the
        // agent saw.
        let output = match attributes.loose("gen_ai.tool.call.result") {
            Some(result) => result,
            None if failed => Value::String(self.tree.error_message(self.i)),
            None => Value::Null,
        };
        let status = if failed { "error" } else { "ok" };
        self.at_start(&ToolCallEvent {
            call_id: call_id.clone(),
            tool,
            arguments,
            usage: None,
            call_hash: None,
        });
        self.at_end(&ToolResultEvent {
            call_id,
            status: status.to_string(),
            output,
        });
        self.error_if_failed();
        Ok(())
    }
}

/// Request attributes kept in the request's extra fields, under OpenAI's names.
const REQUEST_EXTRAS: [(&str, &str); 6] = [
    ("gen_ai.request.top_p", "top_p"),
    ("gen_ai.request.frequency_penalty", "frequency_penalty"),
    ("gen_ai.request.presence_penalty", "presence_penalty"),
    ("gen_ai.request.seed", "seed"),
    ("gen_ai.request.stop_sequences", "stop"),
    ("gen_ai.request.choice.count", "n"),
];

/// RFC 3339 to the second, as the run format writes times; event order keeps the
/// nanoseconds.
pub(super) fn at(nanos: u64) -> String {
    rfc3339(nanos / 1_000_000_000)
}
