//! Reading OpenAI's streamed chat completion: server-sent events ([`EventReader`]) whose data
//! are `chat.completion.chunk` objects, assembled into one [`ChatResponse`]
//! ([`ChunkAssembly`]) while each piece of text or of a tool call is reported as it arrives.

use std::io::{self, BufRead};

use serde_json::{Map, Value};

use crate::providers::{ChatDelta, ChatResponse, ProviderError, ToolCall, ToolCallDelta, Usage};

/// Why the next event could not be read.
#[derive(Debug)]
pub(super) enum ReadError {
    /// The body could not be read (a timeout, a dropped connection, the size limit).
    Io(io::Error),
    /// A line is not UTF-8.
    NotUtf8,
}

/// Reads server-sent events line by line (the `text/event-stream` format): `data:` lines are
/// joined with newlines into an event's data, a blank line ends an event, comments (`:`) and
/// other fields (`event:`, `id:`, `retry:`) are skipped.
pub(super) struct EventReader<R> {
    reader: R,
    line: Vec<u8>,
}

impl<R: BufRead> EventReader<R> {
    pub(super) fn new(reader: R) -> Self {
        EventReader {
            reader,
            line: Vec::new(),
        }
    }

    /// The data of the next event that has any; `None` once the body ends. An event cut off
    /// by the end of the body (no blank line after it) is still returned, so a server that
    /// closes right after `data: [DONE]` is understood.
    pub(super) fn next_data(&mut self) -> Result<Option<String>, ReadError> {
        let mut data: Option<String> = None;
        loop {
            self.line.clear();
            let read = self
                .reader
                .read_until(b'\n', &mut self.line)
                .map_err(ReadError::Io)?;
            if read == 0 {
                return Ok(data);
            }
            let line = std::str::from_utf8(&self.line).map_err(|_| ReadError::NotUtf8)?;
            let line = line.strip_suffix('\n').unwrap_or(line);
            let line = line.strip_suffix('\r').unwrap_or(line);
            if line.is_empty() {
                if data.is_some() {
                    return Ok(data);
                }
                continue;
            }
            let (field, value) = match line.split_once(':') {
                Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
                None => (line, ""),
            };
            if field == "data" {
                match &mut data {
                    Some(text) => {
                        text.push('\n');
                        text.push_str(value);
                    }
                    None => data = Some(value.to_owned()),
                }
            }
        }
    }
}

/// The answer being assembled from its chunks.
#[derive(Debug, Default)]
pub(super) struct ChunkAssembly {
    /// Chunks read so far.
    chunks: usize,
    id: String,
    model: String,
    content: String,
    finish_reason: Option<String>,
    usage: Usage,
    /// Tool calls by index, their arguments concatenated from their pieces.
    tool_calls: Vec<ToolCall>,
}

/// More tool calls than any model makes in one answer: an index past it is malformed (it
/// would otherwise size the assembly).
const MAX_TOOL_CALLS: usize = 128;

impl ChunkAssembly {
    /// Reads one chunk's data, reporting its text (if any) to `on_delta`.
    ///
    /// The first chunk names the completion (`id`, `model`); a chunk's text is
    /// `choices[0].delta.content`, its tool-call pieces `choices[0].delta.tool_calls` (each with
    /// its `index`; the first piece of a call carries `id` and `function.name`, every piece may
    /// add to `function.arguments`), its end `choices[0].finish_reason`; the usage chunk (empty
    /// `choices`) carries the token counts. A chunk with an `error` member is
    /// [`ProviderError::StreamFailed`] carrying the chunk's whole data (the caller extracts and
    /// scrubs the message).
    pub(super) fn chunk(
        &mut self,
        data: &str,
        on_delta: &mut dyn FnMut(&ChatDelta<'_>),
    ) -> Result<(), ProviderError> {
        self.chunks += 1;
        let n = self.chunks;
        let malformed = |reason: String| ProviderError::MalformedResponse { reason };
        let value: Value = serde_json::from_str(data)
            .map_err(|e| malformed(format!("stream chunk {n} is not json ({e})")))?;
        let object = value
            .as_object()
            .ok_or_else(|| malformed(format!("stream chunk {n} is not a json object")))?;
        if object.get("error").is_some_and(|e| !e.is_null()) {
            return Err(ProviderError::StreamFailed {
                message: data.to_owned(),
            });
        }
        if n == 1 {
            let text = |name: &str| {
                object
                    .get(name)
                    .and_then(Value::as_str)
                    .map(str::to_owned)
                    .ok_or_else(|| {
                        malformed(format!(
                            "`{name}` of stream chunk 1 is missing or not a string"
                        ))
                    })
            };
            self.id = text("id")?;
            self.model = text("model")?;
        }
        if let Some(choice) = first_choice(object) {
            match choice.get("delta").and_then(|delta| delta.get("content")) {
                None | Some(Value::Null) => {}
                Some(Value::String(text)) => {
                    if !text.is_empty() {
                        self.content.push_str(text);
                        on_delta(&ChatDelta {
                            id: &self.id,
                            model: &self.model,
                            content: text,
                            tool_call: None,
                        });
                    }
                }
                Some(_) => {
                    return Err(malformed(format!(
                        "`choices[0].delta.content` of stream chunk {n} is not a string"
                    )));
                }
            }
            if let Some(calls) = choice
                .get("delta")
                .and_then(|delta| delta.get("tool_calls"))
            {
                self.tool_call_pieces(n, calls, on_delta)?;
            }
            if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
                self.finish_reason = Some(reason.to_owned());
            }
        }
        if let Some(usage) = object.get("usage").filter(|u| u.is_object()) {
            let count = |name: &str| {
                usage
                    .get(name)
                    .and_then(Value::as_u64)
                    .map_or(0, |n| u32::try_from(n).unwrap_or(u32::MAX))
            };
            self.usage = Usage {
                prompt_tokens: count("prompt_tokens"),
                completion_tokens: count("completion_tokens"),
            };
        }
        Ok(())
    }

    /// Reads the tool-call pieces of chunk `n`, reporting each.
    fn tool_call_pieces(
        &mut self,
        n: usize,
        calls: &Value,
        on_delta: &mut dyn FnMut(&ChatDelta<'_>),
    ) -> Result<(), ProviderError> {
        let malformed = |what: &str| ProviderError::MalformedResponse {
            reason: format!("`choices[0].delta.tool_calls` of stream chunk {n}: {what}"),
        };
        let calls = match calls {
            Value::Null => return Ok(()),
            Value::Array(calls) => calls,
            _ => return Err(malformed("not an array")),
        };
        for piece in calls {
            let index = piece
                .get("index")
                .and_then(Value::as_u64)
                .and_then(|i| usize::try_from(i).ok())
                .filter(|i| *i < MAX_TOOL_CALLS)
                .ok_or_else(|| malformed("a piece without a valid `index`"))?;
            let text = |value, name: &str| {
                optional_text(value).ok_or_else(|| malformed(&format!("`{name}` is not a string")))
            };
            let function = piece.get("function");
            let id = text(piece.get("id"), "id")?;
            let kind = text(piece.get("type"), "type")?;
            let name = text(function.and_then(|f| f.get("name")), "function.name")?;
            let arguments = text(
                function.and_then(|f| f.get("arguments")),
                "function.arguments",
            )?
            .unwrap_or("");
            if self.tool_calls.len() <= index {
                self.tool_calls.resize_with(index + 1, ToolCall::default);
            }
            let call = &mut self.tool_calls[index];
            if let Some(id) = id {
                call.id = id.to_owned();
            }
            if let Some(kind) = kind {
                call.kind = kind.to_owned();
            }
            if let Some(name) = name {
                call.function.name.push_str(name);
            }
            call.function.arguments.push_str(arguments);
            on_delta(&ChatDelta {
                id: &self.id,
                model: &self.model,
                content: "",
                tool_call: Some(ToolCallDelta {
                    index,
                    id,
                    name,
                    arguments,
                }),
            });
        }
        Ok(())
    }

    /// The whole answer, once `[DONE]` has arrived: as [`ChatResponse::from_openai_json`]
    /// reads a whole completion, a missing `finish_reason` is `unknown` and missing usage
    /// zeros. Every tool call must have been given an `id` and a name (a gap in the indices
    /// is a call without them).
    pub(super) fn finish(self) -> Result<ChatResponse, ProviderError> {
        if self.chunks == 0 {
            return Err(ProviderError::MalformedResponse {
                reason: "the stream ended with `data: [DONE]` before any chunk".to_owned(),
            });
        }
        let mut tool_calls = self.tool_calls;
        for (index, call) in tool_calls.iter_mut().enumerate() {
            if call.id.is_empty() || call.function.name.is_empty() {
                return Err(ProviderError::MalformedResponse {
                    reason: format!("streamed tool call {index} has no `id` or no `function.name`"),
                });
            }
            if call.kind.is_empty() {
                call.kind = "function".to_owned();
            }
        }
        Ok(ChatResponse {
            id: self.id,
            model: self.model,
            content: self.content,
            finish_reason: self.finish_reason.unwrap_or_else(|| "unknown".to_owned()),
            usage: self.usage,
            tool_calls,
        })
    }
}

/// A string member that may be missing or `null`; `None` when it is something else.
fn optional_text(value: Option<&Value>) -> Option<Option<&str>> {
    match value {
        None | Some(Value::Null) => Some(None),
        Some(Value::String(text)) => Some(Some(text.as_str())),
        Some(_) => None,
    }
}

/// The choice with index 0 (a request with `n > 1` streams several; Tollgate keeps the
/// first, as it does for a whole completion).
fn first_choice(object: &Map<String, Value>) -> Option<&Value> {
    object
        .get("choices")
        .and_then(Value::as_array)?
        .iter()
        .find(|choice| choice.get("index").and_then(Value::as_u64).unwrap_or(0) == 0)
}
