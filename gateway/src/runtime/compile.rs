//! Compiles through the gateway: the agent offers candidate items, the gateway adds the
//! memories policy lets the run retrieve (a context source: see `crate::memory::retrieve`),
//! decides each item under the run's envelopes before anything is rendered, compiles within
//! the budget and records the offer (retrieved memories included) and the result
//! (`context_offered`, `compile` with every memory's verdict), so exact replay can recompute
//! it byte for byte; each memory the compile included gets a `MemoryLink`.

use serde::Serialize;

use super::{Runtime, RuntimeError};
use crate::compiler::{CompileInput, CompilePolicy, CompiledContext, ItemStatus, compile};
use crate::memory::{self, RetrievalExclusion, RetrievalVerdict};
use crate::recorder::events::{CompileEvent, ContextOfferedEvent};
use crate::recorder::write::new_event;

/// A compile's answer.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct CompileAnswer {
    /// The compiled context, every item's outcome with its reason and policy receipt.
    pub compiled: CompiledContext,
    /// The memories retrieval ranked, best first: offered to the compile or beyond the
    /// retrieval limit (rank, relevance, the rule that made each eligible).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[schema(value_type = Vec<Object>)]
    pub memories: Vec<RetrievalVerdict>,
    /// What policy withheld from retrieval, by reason: how many, the rule, examples.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[schema(value_type = Vec<Object>)]
    pub memories_withheld: Vec<RetrievalExclusion>,
    /// The readable explanation (`tollgate compile --explain`).
    pub explanation: String,
    /// The `compile` event's sequence number and hash.
    pub seq: u64,
    /// Its hash.
    pub hash: String,
}

impl Runtime {
    /// Compiles `input` for `run` under its envelopes and records it. A `subject` in the input
    /// is refused: the run is the subject.
    pub fn compile(
        &self,
        run: &str,
        input: CompileInput,
        step: Option<u32>,
    ) -> Result<CompileAnswer, RuntimeError> {
        self.compile_from(run, input, step, true)
    }

    /// Decides and records items a source put before the agent, with nothing retrieved
    /// beside them (the MCP gateway's `resources/read` and `prompts/get`): the same
    /// `context_offered` and `compile` events, receipts and replay as [`Runtime::compile`].
    pub fn compile_offered(
        &self,
        run: &str,
        input: CompileInput,
    ) -> Result<CompileAnswer, RuntimeError> {
        self.compile_from(run, input, None, false)
    }

    fn compile_from(
        &self,
        run: &str,
        input: CompileInput,
        step: Option<u32>,
        retrieve: bool,
    ) -> Result<CompileAnswer, RuntimeError> {
        if input.subject.is_some() {
            return Err(RuntimeError::Invalid(
                "`subject` is not accepted here: the run is the subject\n  help: leave `subject` out".into(),
            ));
        }
        let (header, engine) = self.running_engine(run)?;
        // Memories: a context source, eligibility decided by policy before any is read. What
        // the compile is about is what its items say.
        let query: Vec<&str> = input
            .items
            .iter()
            .filter_map(|i| i.content.as_deref().or(i.summary.as_deref()))
            .collect();
        let retrieval = if retrieve {
            memory::retrieve(
                self.store(),
                engine.set(),
                &header,
                &query.join("\n"),
                self.now_ms().div_euclid(1000),
            )?
        } else {
            memory::Retrieval::default()
        };
        let mut input = input;
        for item in retrieval.items {
            // A memory the agent offered itself is not offered twice.
            if !input.items.iter().any(|i| i.id == item.id) {
                input.items.push(item);
            }
        }
        let memories = retrieval.verdicts;
        let withheld = retrieval.withheld;
        let compiled = compile(
            &input,
            Some(&CompilePolicy {
                engine: &engine,
                run,
                memo: None,
            }),
        )
        .map_err(|e| RuntimeError::Invalid(e.to_string()))?;
        let step = match step {
            Some(s) => s,
            None => self.current_step(run, &header)?,
        };
        let at = self.now_rfc3339();
        let offered = ContextOfferedEvent {
            items: input.items.clone(),
        };
        let recorded = CompileEvent {
            settings: input.settings.clone(),
            item_ids: input.items.iter().map(|i| i.id.clone()).collect(),
            hash: compiled.hash.clone(),
            tokens: compiled.tokens,
            outcomes: compiled.outcomes_for_record(),
            text: compiled.text.clone(),
            memories: memories.clone(),
            withheld: withheld.clone(),
        };
        // The memories the compile included, each with why it was chosen.
        let links: Vec<(String, String)> = memories
            .iter()
            .filter(|m| m.offered)
            .filter(|m| {
                compiled
                    .outcomes
                    .iter()
                    .any(|o| o.id == m.memory && o.status != ItemStatus::Excluded)
            })
            .map(|m| {
                let why = format!(
                    "rank {} (relevance {:.3}), included by the compile",
                    m.rank.unwrap_or(0),
                    m.relevance.unwrap_or(0.0)
                );
                (m.memory.clone(), why)
            })
            .collect();
        let (key, linked_at) = (run.to_string(), at.clone());
        let appended = self.append_decided_then(
            run,
            &engine,
            vec![
                new_event(step, at.clone(), &offered)?,
                new_event(step, at, &recorded)?,
            ],
            move |c, appended| {
                let seq = appended.last().map_or(0, |a| a.seq);
                for (memory, why) in &links {
                    memory::link_in(c, memory, &key, seq, why, &linked_at)?;
                }
                Ok(())
            },
        )?;
        let last = appended
            .last()
            .ok_or_else(|| RuntimeError::Evaluation("nothing was recorded".into()))?;
        let mut explanation = compiled.explain();
        explain_memories(&mut explanation, &memories, &withheld);
        Ok(CompileAnswer {
            explanation,
            memories,
            memories_withheld: withheld,
            compiled,
            seq: last.seq,
            hash: last.hash.clone(),
        })
    }
}

/// Adds to a compile's explanation a line per memory retrieval ranked (offered at what rank,
/// or beyond the limit) and a line per reason policy withheld memories for (which rule, how
/// many, some of them).
fn explain_memories(
    out: &mut String,
    memories: &[RetrievalVerdict],
    withheld: &[RetrievalExclusion],
) {
    use std::fmt::Write as _;
    if memories.is_empty() && withheld.is_empty() {
        return;
    }
    let _ = writeln!(out, "memories ({} ranked):", memories.len());
    for m in memories {
        let _ = writeln!(
            out,
            "  {} eligible ({}), rank {} (relevance {:.3}){}",
            m.memory,
            m.rules.join(", "),
            m.rank.unwrap_or(0),
            m.relevance.unwrap_or(0.0),
            if m.offered {
                ", offered"
            } else {
                ", beyond the retrieval limit"
            }
        );
    }
    for e in withheld {
        let rule = if e.rules.is_empty() {
            "?".to_string()
        } else {
            e.rules.join(", ")
        };
        let shown = if e.examples.is_empty() {
            String::new()
        } else {
            let more = e.count.saturating_sub(e.examples.len() as u64);
            let tail = if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            };
            format!(": {}{tail}", e.examples.join(", "))
        };
        let _ = writeln!(
            out,
            "  {} not retrieved: {} (rule {rule}){shown}",
            plural(e.count),
            e.reasons.join(", ")
        );
    }
}

fn plural(n: u64) -> String {
    if n == 1 {
        "1 memory".into()
    } else {
        format!("{n} memories")
    }
}
