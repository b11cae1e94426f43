//! The fake provider: a deterministic answer computed from the whole request.

use super::{ChatRequest, ChatResponse, Provider, ProviderError, Usage};

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
        let count = request.messages.len();
        let plural = if count == 1 { "" } else { "s" };
        let echo = match request.last_user_message() {
            Some(text) => format!("you said: \"{}\"", first_words(text, ECHO_WORDS)),
            None => "no user message".to_owned(),
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
