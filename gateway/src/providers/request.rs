//! The request and response every provider speaks, in OpenAI's chat-completions wire shape.

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value, json};
use tollgate_rules::canonical::canonical_json;

use super::ProviderError;

/// A chat-completions request, as OpenAI's API takes it.
///
/// An OpenAI request body deserialises into it: the fields Tollgate reads are typed, and every
/// other top-level field (`top_p`, `tools`, `response_format`, `stream`, …) is kept verbatim in
/// `extra` and sent on unchanged.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ChatRequest {
    /// The model name.
    pub model: String,
    /// The conversation, oldest first.
    pub messages: Vec<ChatMessage>,
    /// Sampling temperature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Upper bound on generated tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// Every other top-level field, verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One message of a [`ChatRequest`].
///
/// `role`, `content`, `name` and OpenAI's function calling fields are kept: an assistant
/// message's `tool_calls` and a `tool` message's `tool_call_id`; other per-message fields are
/// dropped on deserialisation, so they neither reach the provider nor count in the hash.
/// `content` may arrive as a string, `null` or missing (read as empty), or an array of text
/// parts (joined with newlines); other parts (images, audio) are rejected. An empty `content`
/// beside `tool_calls` is sent as `null`, as OpenAI writes it; a message without tool calls
/// serialises exactly as before they were kept, so its request hash is unchanged.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
pub struct ChatMessage {
    /// `system`, `user`, `assistant`, `tool`, …
    pub role: String,
    /// The text.
    #[serde(default, deserialize_with = "content_text")]
    pub content: String,
    /// The participant's name, if given.
    #[serde(default)]
    pub name: Option<String>,
    /// The calls an assistant message made (empty for other messages).
    #[serde(default)]
    pub tool_calls: Vec<ToolCall>,
    /// The call a `tool` message answers.
    #[serde(default)]
    pub tool_call_id: Option<String>,
}

/// A function call the model made, in OpenAI's shape
/// (`{"id", "type": "function", "function": {"name", "arguments"}}`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ToolCall {
    /// The call's id, which the `tool` message answering it names.
    pub id: String,
    /// `function` (the only kind OpenAI defines for chat completions).
    #[serde(rename = "type", default = "function_kind")]
    pub kind: String,
    /// The function and its arguments.
    pub function: FunctionCall,
}

/// The function of a [`ToolCall`].
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct FunctionCall {
    /// The function's name.
    pub name: String,
    /// Its arguments as the model wrote them: JSON text, kept verbatim (not parsed).
    #[serde(default)]
    pub arguments: String,
}

fn function_kind() -> String {
    "function".to_owned()
}

/// How a [`ChatMessage`] is written: absent optional fields are left out, and empty text
/// beside tool calls is `null`.
#[derive(Serialize)]
struct MessageOut<'a> {
    role: &'a str,
    content: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<&'a str>,
    #[serde(skip_serializing_if = "<[ToolCall]>::is_empty")]
    tool_calls: &'a [ToolCall],
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_call_id: Option<&'a str>,
}

impl Serialize for ChatMessage {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let content = if self.content.is_empty() && !self.tool_calls.is_empty() {
            None
        } else {
            Some(self.content.as_str())
        };
        MessageOut {
            role: &self.role,
            content,
            name: self.name.as_deref(),
            tool_calls: &self.tool_calls,
            tool_call_id: self.tool_call_id.as_deref(),
        }
        .serialize(serializer)
    }
}

impl ChatMessage {
    /// A message without a name.
    pub fn new(role: impl Into<String>, content: impl Into<String>) -> Self {
        ChatMessage {
            role: role.into(),
            content: content.into(),
            ..ChatMessage::default()
        }
    }
}

/// Reads OpenAI's `content`: a string, `null`, or an array of `{"type":"text","text":…}`.
fn content_text<'de, D: Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    use serde::de::Error as _;
    match Value::deserialize(deserializer)? {
        Value::String(text) => Ok(text),
        Value::Null => Ok(String::new()),
        Value::Array(parts) => {
            let mut texts = Vec::with_capacity(parts.len());
            for part in &parts {
                let kind = part.get("type").and_then(Value::as_str).unwrap_or("");
                match (kind, part.get("text").and_then(Value::as_str)) {
                    ("text", Some(text)) => texts.push(text),
                    _ => {
                        return Err(D::Error::custom(format!(
                            "unsupported message content part `{kind}`: only text parts are \
                             supported"
                        )));
                    }
                }
            }
            Ok(texts.join("\n"))
        }
        _ => Err(D::Error::custom(
            "message content must be a string, null or an array of text parts",
        )),
    }
}

impl ChatRequest {
    /// The request's identity: blake3 (hex) of its canonical JSON (keys sorted, no
    /// whitespace). Parsing the same request from differently ordered or spaced JSON gives
    /// the same hash; any change to a message, parameter or extra field changes it.
    pub fn hash(&self) -> String {
        blake3::hash(canonical_json(&self.to_json()).as_bytes())
            .to_hex()
            .to_string()
    }

    /// The request as OpenAI's JSON body.
    pub fn to_json(&self) -> Value {
        #[expect(
            clippy::expect_used,
            reason = "a struct of strings, numbers and a JSON map with string keys always \
                      converts to a JSON value"
        )]
        serde_json::to_value(self).expect("chat request converts to json")
    }

    /// The text of the last `user` message, if any.
    pub fn last_user_message(&self) -> Option<&str> {
        self.messages
            .iter()
            .rev()
            .find(|m| m.role == "user")
            .map(|m| m.content.as_str())
    }
}

/// A completed chat request: one choice, its text and its tool calls.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatResponse {
    /// The provider's completion id.
    pub id: String,
    /// The model that answered (as the provider reports it).
    pub model: String,
    /// The assistant's text (empty when the provider returned none, e.g. only tool calls).
    pub content: String,
    /// Why generation stopped (`stop`, `length`, `tool_calls`, …; `unknown` if the provider
    /// said nothing).
    pub finish_reason: String,
    /// Token counts.
    pub usage: Usage,
    /// The function calls the model made, in order. Left out of the JSON when empty, so a
    /// text answer is written (and recorded) exactly as before tool calls were kept.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
}

/// Token counts of a completion.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Usage {
    /// Tokens in the request.
    pub prompt_tokens: u32,
    /// Tokens generated.
    pub completion_tokens: u32,
}

impl ChatResponse {
    /// The response as an OpenAI `chat.completion` object. `created` is always 0: responses
    /// must be byte-identical on replay, so no clock is read here.
    ///
    /// Tool calls are `message.tool_calls`; beside them an empty text is `null`, as OpenAI
    /// writes it.
    pub fn to_openai_json(&self) -> Value {
        let mut message = json!({ "role": "assistant", "content": self.content });
        if !self.tool_calls.is_empty()
            && let Some(obj) = message.as_object_mut()
        {
            if self.content.is_empty() {
                obj.insert("content".into(), Value::Null);
            }
            obj.insert("tool_calls".into(), json!(self.tool_calls));
        }
        json!({
            "id": self.id,
            "object": "chat.completion",
            "created": 0,
            "model": self.model,
            "choices": [{
                "index": 0,
                "message": message,
                "finish_reason": self.finish_reason,
            }],
            "usage": {
                "prompt_tokens": self.usage.prompt_tokens,
                "completion_tokens": self.usage.completion_tokens,
                "total_tokens": self.usage.prompt_tokens.saturating_add(self.usage.completion_tokens),
            },
        })
    }

    /// Reads an OpenAI `chat.completion` object: `id`, `model` and the first choice's
    /// message are required; a `null` content is read as empty, a missing `finish_reason`
    /// as `unknown`, missing `usage` as zeros; `message.tool_calls`, when present, must be
    /// OpenAI's function calls.
    pub fn from_openai_json(value: &Value) -> Result<ChatResponse, ProviderError> {
        let malformed = |reason: &str| ProviderError::MalformedResponse {
            reason: reason.to_owned(),
        };
        let object = value
            .as_object()
            .ok_or_else(|| malformed("the body is not a json object"))?;
        let text_field = |name: &str| {
            object
                .get(name)
                .and_then(Value::as_str)
                .map(str::to_owned)
                .ok_or_else(|| malformed(&format!("`{name}` is missing or not a string")))
        };
        let id = text_field("id")?;
        let model = text_field("model")?;
        let choice = object
            .get("choices")
            .and_then(Value::as_array)
            .and_then(|choices| choices.first())
            .ok_or_else(|| malformed("`choices` is missing or empty"))?;
        let message = choice
            .get("message")
            .and_then(Value::as_object)
            .ok_or_else(|| malformed("`choices[0].message` is missing"))?;
        let content = match message.get("content") {
            None | Some(Value::Null) => String::new(),
            Some(Value::String(text)) => text.clone(),
            Some(_) => return Err(malformed("`choices[0].message.content` is not a string")),
        };
        let tool_calls = match message.get("tool_calls") {
            None | Some(Value::Null) => Vec::new(),
            Some(calls) => Vec::<ToolCall>::deserialize(calls).map_err(|e| {
                malformed(&format!(
                    "`choices[0].message.tool_calls` are not function calls ({e})"
                ))
            })?,
        };
        let finish_reason = choice
            .get("finish_reason")
            .and_then(Value::as_str)
            .unwrap_or("unknown")
            .to_owned();
        let count = |name: &str| {
            object
                .get("usage")
                .and_then(|usage| usage.get(name))
                .and_then(Value::as_u64)
                .map_or(0, |n| u32::try_from(n).unwrap_or(u32::MAX))
        };
        Ok(ChatResponse {
            id,
            model,
            content,
            finish_reason,
            usage: Usage {
                prompt_tokens: count("prompt_tokens"),
                completion_tokens: count("completion_tokens"),
            },
            tool_calls,
        })
    }
}
