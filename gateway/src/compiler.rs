//! The context compiler: from candidate items (files, docs, messages, tool results, memories,
//! summaries) and settings (token budgets, ordering, tokenizer) to the text a model receives,
//! its hash, and for every candidate what became of it and why.
//!
//! Stages, in order:
//!
//! 1. **check** ([`CompileInput::check`]): tokenizer known, ids unique, weights sane, every
//!    item measurable. Errors here are the caller's to fix ([`CompileError`]).
//! 2. **policy** (optional, [`CompilePolicy`]): every item is decided by the envelopes of the
//!    run *before* anything is measured or rendered. `deny` (or any effect that is not `allow`
//!    or `redact`) excludes it: its text goes no further. `redact` sends its content (or
//!    reference) and summary through the span redactor ([`crate::secrets`]).
//! 3. **measure** ([`tokens`]): each form of each item is rendered as its block and counted.
//! 4. **select** ([`select`]): items compete for the budgets in the settings' order; full
//!    form, else summary, else excluded with the truthful reason.
//! 5. **render** ([`render`]): the chosen blocks, in selection order, are the text; its
//!    blake3 is the hash.
//!
//! **Deterministic:** the same items and settings (and the same policy) give the same bytes,
//! hash and outcomes. With [`Ordering::Weight`] the input order does not matter either.
//!
//! The compiler does no I/O: items come with their content; the command line reads files.

mod items;
mod outcome;
mod render;
mod select;
#[cfg(test)]
mod tests;
pub mod tokens;

use tollgate_rules::decide::{DecisionEffect, EnvelopeDecision, PolicyEngine};

pub use items::{CandidateItem, CompileInput, CompileSettings, DEFAULT_BUDGET, ItemKind, Ordering};
pub use outcome::{CompiledContext, ItemOutcome, ItemStatus, Limit, Reason};
pub use tokens::{BYTES4, DEFAULT_TOKENIZER, TOKENIZERS, count_tokens};

use crate::secrets::{self, BodyPart};
use render::Form;
use select::{Chosen, Eligible, Rendered};
use tokens::TokenCounter;

/// Why a compile could not start. Each names the item (by id, or index when it has none) and
/// says how to fix it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CompileError {
    /// The settings name a tokenizer the compiler does not have.
    #[error(
        "unknown tokenizer `{name}`; use `o200k_base` (the default), `cl100k_base`, or `bytes4` (a quarter of the bytes)"
    )]
    UnknownTokenizer {
        /// The name given.
        name: String,
    },
    /// A BPE vocabulary could not be built from the data embedded in `tiktoken-rs`.
    #[error(
        "cannot load the tokenizer `{name}`: {message}; set `\"tokenizer\": \"bytes4\"` to count without it"
    )]
    TokenizerLoad {
        /// The tokenizer.
        name: String,
        /// What went wrong.
        message: String,
    },
    /// An item has an empty id.
    #[error("item {index} (counting from 0) has an empty `id`; give every item a unique id")]
    EmptyId {
        /// Its position in the input.
        index: usize,
    },
    /// Two items share an id.
    #[error("items {first} and {second} (counting from 0) share the id `{id}`; ids must be unique")]
    DuplicateId {
        /// The id.
        id: String,
        /// The first item's position.
        first: usize,
        /// The second item's position.
        second: usize,
    },
    /// A weight that is negative, NaN or infinite.
    #[error("item `{id}` has weight `{weight}`; a weight must be a finite number `>= 0`")]
    BadWeight {
        /// The item.
        id: String,
        /// The weight as given.
        weight: String,
    },
    /// An item with nothing to render and no size.
    #[error(
        "item `{id}` has neither `content`, `reference` nor `tokens`; give it its text, where the text lives, or its size"
    )]
    NothingToMeasure {
        /// The item.
        id: String,
    },
}

/// The policy a compile runs under: an engine materialised over the envelopes and the run's
/// subject facts, and the run the context is compiled for.
#[derive(Debug, Clone, Copy)]
pub struct CompilePolicy<'a> {
    /// The engine that decides each item.
    pub engine: &'a PolicyEngine,
    /// The run (its envelopes govern what it may see).
    pub run: &'a str,
    /// Decisions to reuse across the compiles of one walk over a run (replay), when given.
    pub memo: Option<&'a ContextMemo>,
}

impl CompilePolicy<'_> {
    /// The engine's decision on `item`, from the memo when it holds one.
    fn decide(&self, item: &CandidateItem) -> EnvelopeDecision {
        let context = item.context_item();
        let Some(memo) = self.memo else {
            return self.engine.decide_context(self.run, &context);
        };
        let key = (
            std::ptr::from_ref(self.engine) as usize,
            format!(
                "{}\u{0}{}",
                self.run,
                serde_json::to_string(&context).unwrap_or_default()
            ),
        );
        if let Some(d) = memo.0.lock().ok().and_then(|m| m.get(&key).cloned()) {
            return d;
        }
        let d = self.engine.decide_context(self.run, &context);
        if let Ok(mut m) = memo.0.lock() {
            m.insert(key, d.clone());
        }
        d
    }
}

/// Context decisions already made, by engine and item, for the compiles of one walk over a
/// run: an item is decided again at every compile it is offered to, and a decision is a pure
/// function of the engine and the item (the determinism invariant). Keep one per walk, while
/// its engines live: an engine is known by its address.
#[derive(Debug, Default)]
pub struct ContextMemo(
    std::sync::Mutex<std::collections::HashMap<(usize, String), EnvelopeDecision>>,
);

/// Compiles `input`: checks it, runs `policy` (when given) on every item, measures, selects
/// and renders. See the module documentation for the stages.
pub fn compile(
    input: &CompileInput,
    policy: Option<&CompilePolicy<'_>>,
) -> Result<CompiledContext, CompileError> {
    input.check()?;
    let counter = TokenCounter::for_name(&input.settings.tokenizer)?;
    let items = &input.items;
    // Policy first: a denied item's text is never rendered, counted or redacted.
    let decisions: Vec<Option<EnvelopeDecision>> = items
        .iter()
        .map(|item| policy.map(|p| p.decide(item)))
        .collect();
    let eligible: Vec<Option<Eligible>> = items
        .iter()
        .zip(&decisions)
        .map(|(item, decision)| match decision {
            None => Some(prepare(item, None, counter)),
            Some(d) => match d.effect {
                DecisionEffect::Allow => Some(prepare(item, None, counter)),
                DecisionEffect::Redact => Some(prepare(item, Some(&d.rules), counter)),
                // Context is seen or not: an approval or a rate limit has no meaning here, so
                // anything else is a denial (fail closed).
                DecisionEffect::Deny
                | DecisionEffect::RequireApproval
                | DecisionEffect::RateLimited => None,
            },
        })
        .collect();
    let ranked = select::rank(items, input.settings.order);
    let selections = select::select(items, &eligible, &ranked, &input.settings);

    let mut text = String::new();
    let mut total: u32 = 0;
    let mut outcomes: Vec<Option<ItemOutcome>> = vec![None; items.len()];
    for (i, selection) in selections {
        let (Some(item), Some(Some(e))) = (items.get(i), eligible.get(i)) else {
            continue;
        };
        let form = match selection.chosen {
            Some(Chosen::Full) => e.full.as_ref(),
            Some(Chosen::Summary) => e.summary.as_ref(),
            None => None,
        };
        if let Some(r) = form {
            text.push_str(&r.block);
            total = total.saturating_add(r.cost);
        }
        if let Some(slot) = outcomes.get_mut(i) {
            *slot = Some(ItemOutcome {
                id: item.id.clone(),
                kind: item.kind,
                status: selection.status,
                reason: selection.reason,
                tokens: form.map_or(0, |r| r.cost),
                spans: form.map(|r| r.spans.clone()).unwrap_or_default(),
                policy: decisions.get(i).cloned().flatten(),
            });
        }
    }
    let outcomes = items
        .iter()
        .zip(decisions)
        .zip(outcomes)
        .map(|((item, decision), outcome)| {
            outcome.unwrap_or_else(|| ItemOutcome {
                id: item.id.clone(),
                kind: item.kind,
                status: ItemStatus::Excluded,
                reason: Reason::Policy {
                    effect: decision.as_ref().map_or(DecisionEffect::Deny, |d| d.effect),
                    rules: decision
                        .as_ref()
                        .map(|d| d.rules.clone())
                        .unwrap_or_default(),
                },
                tokens: 0,
                spans: Vec::new(),
                policy: decision,
            })
        })
        .collect();
    Ok(CompiledContext {
        hash: render::hash(&text),
        text,
        tokens: total,
        budget: input.settings.budget,
        tokenizer: input.settings.tokenizer.clone(),
        outcomes,
    })
}

/// Renders and measures an item's forms; `redact_by` holds the redacting rules when policy
/// said `redact`.
fn prepare(item: &CandidateItem, redact_by: Option<&[String]>, counter: TokenCounter) -> Eligible {
    let rule = redact_by.map(|rules| rules.join(","));
    let role = item.role.as_deref();
    let full = item.body().map(|body| {
        let (form, part) = if item.content.is_some() {
            (Form::Content, BodyPart::Content)
        } else {
            (Form::Reference, BodyPart::Reference)
        };
        match &rule {
            Some(rule) => {
                let r = secrets::redact(body, part, rule);
                let block = render::block(&item.id, item.kind, role, form, &r.text);
                Rendered {
                    cost: counter.count(&block),
                    block,
                    spans: r.spans,
                }
            }
            None => {
                let block = render::block(&item.id, item.kind, role, form, body);
                // A given size is trusted for the body; the delimiters are always counted.
                let cost = match item.tokens {
                    Some(n) => counter
                        .count(&render::block(&item.id, item.kind, role, form, ""))
                        .saturating_add(n),
                    None => counter.count(&block),
                };
                Rendered {
                    block,
                    cost,
                    spans: Vec::new(),
                }
            }
        }
    });
    let summary = item.summary.as_deref().map(|summary| {
        let (body, spans) = match &rule {
            Some(rule) => {
                let r = secrets::redact(summary, BodyPart::Summary, rule);
                (r.text, r.spans)
            }
            None => (summary.to_string(), Vec::new()),
        };
        let block = render::block(&item.id, item.kind, role, Form::Summary, &body);
        Rendered {
            cost: counter.count(&block),
            block,
            spans,
        }
    });
    Eligible {
        full,
        summary,
        redacted: rule.is_some(),
    }
}

/// The chat request the gateway sends for a compiled context.
pub fn model_request(compiled: &CompiledContext, model: &str) -> crate::providers::ChatRequest {
    crate::providers::ChatRequest {
        model: model.to_string(),
        messages: vec![crate::providers::ChatMessage::new(
            "system",
            compiled.text.clone(),
        )],
        temperature: Some(0.0),
        max_tokens: None,
        extra: Default::default(),
    }
}
