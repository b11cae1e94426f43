//! GenAI message content → Tollgate's chat shapes: `gen_ai.input.messages`,
//! `gen_ai.system_instructions` and `gen_ai.output.messages` (the current conventions), or the
//! older span events (`gen_ai.user.message`, `gen_ai.choice`, … with `gen_ai.event.content`;
//! before them `gen_ai.content.prompt` / `gen_ai.content.completion`).

use serde_json::Value;
use tollgate_rules::canonical::canonical_json;

use super::OtlpError;
use super::attributes::{Attributes, json_in_text};
use super::parse::Span;
use crate::providers::ChatMessage;

const INPUT_SHAPE: &str = "a JSON array of messages: [{\"role\": \"user\", \"parts\": \
                           [{\"type\": \"text\", \"content\": \"…\"}]}]";
const OUTPUT_SHAPE: &str = "a JSON array of messages: [{\"role\": \"assistant\", \"parts\": \
                            [{\"type\": \"text\", \"content\": \"…\"}], \"finish_reason\": \
                            \"stop\"}]";
const INSTRUCTIONS_SHAPE: &str =
    "a JSON array of parts: [{\"type\": \"text\", \"content\": \"…\"}]";

/// What a model answered, as far as the span says.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct ModelOutput {
    /// Text of the first choice.
    pub content: String,
    /// The first choice's finish reason, when given with the message.
    pub finish_reason: Option<String>,
    /// Tool calls the model asked for: `(id, name, arguments)`.
    pub tool_calls: Vec<(Option<String>, String, Value)>,
    /// Whether the span held any output content at all.
    pub present: bool,
}

/// The request's messages: system instructions first, then the input messages; the older
/// per-message events when the span has no `gen_ai.input.messages`.
pub(super) fn input_messages(span: &Span) -> Result<Vec<ChatMessage>, OtlpError> {
    let attributes = &span.attributes;
    let mut messages = Vec::new();
    let instructions_key = "gen_ai.system_instructions";
    if let Some(instructions) = attributes.structured(instructions_key, INSTRUCTIONS_SHAPE)? {
        let text = match &instructions {
            Value::Array(parts) => parts_text(parts),
            other => text_of(other),
        };
        messages.push(ChatMessage::new("system", text));
    }
    let key = "gen_ai.input.messages";
    if let Some(input) = attributes.structured(key, INPUT_SHAPE)? {
        let Value::Array(items) = input else {
            return Err(attributes.bad(key, "is not an array of messages", INPUT_SHAPE));
        };
        for item in &items {
            messages.push(chat_message(item, attributes, key, INPUT_SHAPE)?);
        }
        return Ok(messages);
    }
    for event in &span.events {
        let role = match event.name.as_str() {
            "gen_ai.system.message" => "system",
            "gen_ai.user.message" => "user",
            "gen_ai.assistant.message" => "assistant",
            "gen_ai.tool.message" => "tool",
            "gen_ai.content.prompt" => {
                messages.extend(legacy_prompt(&event.attributes)?);
                continue;
            }
            _ => continue,
        };
        let body = event_body(&event.attributes)?;
        let role = body.get("role").and_then(Value::as_str).unwrap_or(role);
        let mut message =
            ChatMessage::new(role, body.get("content").map(text_of).unwrap_or_default());
        message.name = body.get("name").and_then(Value::as_str).map(str::to_owned);
        messages.push(message);
    }
    Ok(messages)
}

/// The first output message (`gen_ai.output.messages`), else the `gen_ai.choice` event with
/// the lowest index, else the oldest `gen_ai.completion`.
pub(super) fn model_output(span: &Span) -> Result<ModelOutput, OtlpError> {
    let attributes = &span.attributes;
    let key = "gen_ai.output.messages";
    if let Some(output) = attributes.structured(key, OUTPUT_SHAPE)? {
        let Value::Array(items) = output else {
            return Err(attributes.bad(key, "is not an array of messages", OUTPUT_SHAPE));
        };
        let Some(first) = items.first() else {
            return Ok(ModelOutput::default());
        };
        let message = chat_message(first, attributes, key, OUTPUT_SHAPE)?;
        let parts = first.get("parts").and_then(Value::as_array);
        return Ok(ModelOutput {
            content: message.content,
            finish_reason: first
                .get("finish_reason")
                .and_then(Value::as_str)
                .map(str::to_owned),
            tool_calls: parts
                .map(|parts| part_tool_calls(parts))
                .unwrap_or_default(),
            present: true,
        });
    }
    let mut best: Option<(u64, Value)> = None;
    for event in &span.events {
        match event.name.as_str() {
            "gen_ai.choice" => {
                let body = event_body(&event.attributes)?;
                let index = body.get("index").and_then(Value::as_u64).unwrap_or(0);
                if best.as_ref().is_none_or(|(b, _)| index < *b) {
                    best = Some((index, body));
                }
            }
            "gen_ai.content.completion" if best.is_none() => {
                if let Some(completion) = event.attributes.loose("gen_ai.completion") {
                    let content = match &completion {
                        // An OpenAI-style list of `{role, content}`: the first.
                        Value::Array(items) => items.first().map(message_text).unwrap_or_default(),
                        other => text_of(other),
                    };
                    best = Some((
                        u64::MAX,
                        serde_json::json!({ "message": { "content": content } }),
                    ));
                }
            }
            _ => {}
        }
    }
    let Some((_, body)) = best else {
        return Ok(ModelOutput::default());
    };
    let message = body.get("message").cloned().unwrap_or(Value::Null);
    let tool_calls = message
        .get("tool_calls")
        .and_then(Value::as_array)
        .map(|calls| calls.iter().filter_map(openai_tool_call).collect())
        .unwrap_or_default();
    Ok(ModelOutput {
        content: message.get("content").map(text_of).unwrap_or_default(),
        finish_reason: body
            .get("finish_reason")
            .and_then(Value::as_str)
            .map(str::to_owned),
        tool_calls,
        present: true,
    })
}

/// The text an `invoke_agent` span reports as the agent's answer.
pub(super) fn agent_output(attributes: &Attributes) -> Result<Option<String>, OtlpError> {
    let key = "gen_ai.output.messages";
    let Some(output) = attributes.structured(key, OUTPUT_SHAPE)? else {
        return Ok(None);
    };
    let Value::Array(items) = output else {
        return Err(attributes.bad(key, "is not an array of messages", OUTPUT_SHAPE));
    };
    let texts = items
        .iter()
        .map(|item| chat_message(item, attributes, key, OUTPUT_SHAPE).map(|m| m.content))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Some(texts.join("\n")))
}

/// One message: `{role, parts}` (the conventions) or `{role, content}` (what some
/// instrumentations write instead).
fn chat_message(
    item: &Value,
    attributes: &Attributes,
    key: &str,
    shape: &str,
) -> Result<ChatMessage, OtlpError> {
    let Some(object) = item.as_object() else {
        return Err(attributes.bad(key, "holds a message that is not an object", shape));
    };
    let role = object.get("role").and_then(Value::as_str).unwrap_or("user");
    let content = match (object.get("parts"), object.get("content")) {
        (Some(Value::Array(parts)), _) => parts_text(parts),
        (Some(_), _) => {
            return Err(attributes.bad(
                key,
                "holds a message whose `parts` is not an array",
                shape,
            ));
        }
        (None, Some(content)) => text_of(content),
        (None, None) => String::new(),
    };
    let mut message = ChatMessage::new(role, content);
    message.name = object
        .get("name")
        .and_then(Value::as_str)
        .map(str::to_owned);
    Ok(message)
}

/// The text of message parts, joined by newlines. A tool response (a `tool` message's
/// content in OpenAI's shape) counts as text; tool calls, blobs, files and unknown parts do
/// not: [`ChatMessage`] holds text only, and tool calls are recorded as their own events.
fn parts_text(parts: &[Value]) -> String {
    let texts: Vec<String> = parts
        .iter()
        .filter_map(|part| {
            let kind = part.get("type").and_then(Value::as_str).unwrap_or("text");
            match kind {
                "text" => part
                    .get("content")
                    .or_else(|| part.get("text"))
                    .map(text_of),
                "tool_call_response" => part
                    .get("response")
                    .or_else(|| part.get("result"))
                    .map(text_of),
                _ => None,
            }
        })
        .collect();
    texts.join("\n")
}

/// Tool-call parts of an output message.
fn part_tool_calls(parts: &[Value]) -> Vec<(Option<String>, String, Value)> {
    parts
        .iter()
        .filter(|part| part.get("type").and_then(Value::as_str) == Some("tool_call"))
        .filter_map(|part| {
            let name = part.get("name").and_then(Value::as_str)?;
            let id = part.get("id").and_then(Value::as_str).map(str::to_owned);
            Some((id, name.to_owned(), arguments(part.get("arguments"))))
        })
        .collect()
}

/// An OpenAI `tool_calls` entry (`{id, function: {name, arguments}}`) of a `gen_ai.choice`.
fn openai_tool_call(call: &Value) -> Option<(Option<String>, String, Value)> {
    let function = call.get("function")?;
    let name = function.get("name").and_then(Value::as_str)?;
    let id = call.get("id").and_then(Value::as_str).map(str::to_owned);
    Some((id, name.to_owned(), arguments(function.get("arguments"))))
}

/// Tool arguments: see [`json_in_text`]; missing arguments read as `{}`.
pub(super) fn arguments(value: Option<&Value>) -> Value {
    match value {
        None | Some(Value::Null) => Value::Object(Default::default()),
        Some(Value::String(text)) => json_in_text(text),
        Some(other) => other.clone(),
    }
}

/// The body of an older message event: `gen_ai.event.content` (a JSON object) merged over
/// the event's other attributes.
fn event_body(attributes: &Attributes) -> Result<Value, OtlpError> {
    let mut body = serde_json::Map::new();
    for key in [
        "role",
        "content",
        "index",
        "finish_reason",
        "message",
        "name",
    ] {
        if let Some(value) = attributes.get(key) {
            body.insert(key.to_owned(), value.clone());
        }
    }
    let key = "gen_ai.event.content";
    match attributes.loose(key) {
        None => {}
        Some(Value::Object(content)) => body.extend(content),
        // A bare string is the message text.
        Some(Value::String(text)) => {
            body.insert("content".to_owned(), Value::String(text));
        }
        Some(_) => {
            return Err(attributes.bad(
                key,
                "is neither a JSON object nor text",
                "write the event body as a JSON object, for example {\"role\": \"user\", \
                 \"content\": \"…\"}",
            ));
        }
    }
    Ok(Value::Object(body))
}

/// `gen_ai.prompt` of a `gen_ai.content.prompt` event: an OpenAI-style message list, or the
/// prompt text itself.
fn legacy_prompt(attributes: &Attributes) -> Result<Vec<ChatMessage>, OtlpError> {
    Ok(match attributes.loose("gen_ai.prompt") {
        None => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| {
                let role = item.get("role").and_then(Value::as_str).unwrap_or("user");
                ChatMessage::new(role, message_text(item))
            })
            .collect(),
        Some(other) => vec![ChatMessage::new("user", text_of(&other))],
    })
}

/// `content` of an OpenAI-style message.
fn message_text(item: &Value) -> String {
    item.get("content").map(text_of).unwrap_or_default()
}

/// A content value as text: strings as they are, `null` empty, an array of text parts joined,
/// anything else as canonical JSON (so structured tool output keeps its data).
fn text_of(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Null => String::new(),
        Value::Array(parts)
            if parts
                .iter()
                .all(|p| p.get("type").and_then(Value::as_str).is_some()) =>
        {
            parts_text(parts)
        }
        other => canonical_json(other),
    }
}
