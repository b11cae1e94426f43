//! The fake provider: a deterministic answer computed from the whole request.

use serde_json::Value;

use super::{ChatRequest, ChatResponse, FunctionCall, Provider, ProviderError, ToolCall, Usage};

/// How many words of the last user message the fake answer echoes.
const ECHO_WORDS: usize = 8;
/// How many hex digits of the request hash the fake answer shows.
const DIGEST_CHARS: usize = 12;

/// Answers every request with a short readable text computed from it alone, e.g.
///
/// ```text
/// [fake gpt-4o · 3 messages · request 5f0c2a9e41b7] you said: "what is in the repo…"
/// ```
///
/// The text names the model, counts the messages, shows the first digits of
/// [`ChatRequest::hash`] (so a change anywhere in the request, even one character of an old
/// message or a parameter in `extra`, changes the answer) and echoes the first words of the
/// last user message. The `id` is `fake-` and the hash's first 24 digits; `finish_reason` is
/// `stop`. Usage counts whitespace-separated words: prompt tokens over every message's
/// content, completion tokens over the answer. No clock, no randomness: the same request
/// always gets the same bytes back.
///
/// It also plays an agent's part in function calling, so framework agents (the OpenAI Agents
/// SDK, LangGraph) can be driven end to end without a model: the last user message scripts
/// the calls with `[[call NAME {"json": "arguments"}]]` directives (arguments optional,
/// default `{}`). When the request offers tools (`tools`), the answer is a call of the first
/// directive whose tool is offered and that no assistant message has made since that user
/// message (same name, same arguments), with `finish_reason` `tool_calls`; when none is left,
/// a text answer, which echoes the last tool result if the conversation ends with one.
#[derive(Debug, Clone, Copy, Default)]
pub struct FakeProvider;

impl FakeProvider {
    /// The fake provider.
    pub fn new() -> Self {
        FakeProvider
    }
}

impl Provider for FakeProvider {
    fn name(&self) -> &str {
        "fake"
    }

    fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, ProviderError> {
        let hash = request.hash();
        if let Some((name, arguments)) = next_scripted_call(request) {
            let usage = Usage {
                prompt_tokens: saturate(
                    request
                        .messages
                        .iter()
                        .map(|m| word_count(&m.content))
                        .sum(),
                ),
                completion_tokens: saturate(word_count(&arguments) + 1),
            };
            return Ok(ChatResponse {
                id: format!("fake-{}", &hash[..24]),
                model: request.model.clone(),
                content: String::new(),
                finish_reason: "tool_calls".to_owned(),
                usage,
                tool_calls: vec![ToolCall {
                    id: format!("call_{}", &hash[..DIGEST_CHARS]),
                    kind: "function".to_owned(),
                    function: FunctionCall { name, arguments },
                }],
            });
        }
        let count = request.messages.len();
        let plural = if count == 1 { "" } else { "s" };
        let last_tool = request
            .messages
            .last()
            .filter(|m| m.role == "tool")
            .map(|m| m.content.as_str());
        let echo = match (last_tool, request.last_user_message()) {
            (Some(result), _) => format!("the tool said: \"{}\"", first_words(result, ECHO_WORDS)),
            (None, Some(text)) => format!("you said: \"{}\"", first_words(text, ECHO_WORDS)),
            (None, None) => "no user message".to_owned(),
        };
        let content = format!(
            "[fake {model} · {count} message{plural} · request {digest}] {echo}",
            model = request.model,
            digest = &hash[..DIGEST_CHARS],
        );
        let prompt_words: usize = request
            .messages
            .iter()
            .map(|m| word_count(&m.content))
            .sum();
        let usage = Usage {
            prompt_tokens: saturate(prompt_words),
            completion_tokens: saturate(word_count(&content)),
        };
        Ok(ChatResponse {
            id: format!("fake-{}", &hash[..24]),
            model: request.model.clone(),
            content,
            finish_reason: "stop".to_owned(),
            usage,
            tool_calls: Vec::new(),
        })
    }
}

/// The directive that opens a scripted call in a user message.
const DIRECTIVE: &str = "[[call ";

/// The call the request's script makes next, as (name, arguments as compact JSON): the first
/// directive of the last user message whose tool the request offers and that no later
/// assistant message made with the same arguments.
fn next_scripted_call(request: &ChatRequest) -> Option<(String, String)> {
    let offered = offered_tools(request);
    if offered.is_empty() {
        return None;
    }
    let user = request.messages.iter().rposition(|m| m.role == "user")?;
    let made: Vec<(&str, Option<Value>)> = request.messages[user + 1..]
        .iter()
        .flat_map(|m| &m.tool_calls)
        .map(|c| {
            (
                c.function.name.as_str(),
                serde_json::from_str(&c.function.arguments).ok(),
            )
        })
        .collect();
    directives(&request.messages[user].content)
        .into_iter()
        .find(|(name, args)| {
            offered.iter().any(|o| o == name)
                && !made
                    .iter()
                    .any(|(n, a)| n == name && a.as_ref() == Some(args))
        })
        .map(|(name, args)| (name, args.to_string()))
}

/// The function names a request offers in `tools`.
fn offered_tools(request: &ChatRequest) -> Vec<String> {
    request
        .extra
        .get("tools")
        .and_then(Value::as_array)
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| t.pointer("/function/name").and_then(Value::as_str))
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// Every well-formed `[[call NAME JSON]]` directive of `text`, in order; a malformed one is
/// text like any other.
fn directives(text: &str) -> Vec<(String, Value)> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find(DIRECTIVE) {
        rest = &rest[at + DIRECTIVE.len()..];
        let name_end = rest
            .find(|c: char| c.is_whitespace() || c == ']')
            .unwrap_or(rest.len());
        let (name, after) = rest.split_at(name_end);
        let after = after.trim_start();
        let (args, after) = if after.starts_with('{') {
            let mut stream = serde_json::Deserializer::from_str(after).into_iter::<Value>();
            match stream.next() {
                Some(Ok(value @ Value::Object(_))) => (value, &after[stream.byte_offset()..]),
                _ => continue,
            }
        } else {
            (Value::Object(Default::default()), after)
        };
        if let Some(tail) = after.trim_start().strip_prefix("]]") {
            if !name.is_empty() {
                found.push((name.to_owned(), args));
            }
            rest = tail;
        }
    }
    found
}

/// The first `n` whitespace-separated words, joined by single spaces, with `…` if cut.
fn first_words(text: &str, n: usize) -> String {
    let mut words = text.split_whitespace();
    let head = words.by_ref().take(n).collect::<Vec<_>>().join(" ");
    if words.next().is_some() {
        format!("{head}…")
    } else {
        head
    }
}

fn word_count(text: &str) -> usize {
    text.split_whitespace().count()
}

fn saturate(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}
