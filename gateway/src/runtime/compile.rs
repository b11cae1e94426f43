//! Compiles through the gateway: the agent offers candidate items, the gateway decides each
//! under the run's envelopes before anything is rendered, compiles within the budget and
//! records the offer and the result (`context_offered`, `compile`), so exact replay can
//! recompute it byte for byte.

use serde::Serialize;

use super::{Runtime, RuntimeError};
use crate::compiler::{CompileInput, CompilePolicy, CompiledContext, compile};
use crate::recorder::events::{CompileEvent, ContextOfferedEvent};
use crate::recorder::write::new_event;

/// A compile's answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CompileAnswer {
    /// The compiled context, every item's outcome with its reason and policy receipt.
    pub compiled: CompiledContext,
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
        if input.subject.is_some() {
            return Err(RuntimeError::Invalid(
                "`subject` is not accepted here: the run is the subject\n  help: leave `subject` out".into(),
            ));
        }
        let header = self.running(run)?;
        let engine = self.engine_for(run)?;
        let compiled = compile(
            &input,
            Some(&CompilePolicy {
                engine: &engine,
                run,
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
        };
        let appended = self.append_decided(
            run,
            &engine,
            vec![
                new_event(step, at.clone(), &offered)?,
                new_event(step, at, &recorded)?,
            ],
        )?;
        let last = appended
            .last()
            .ok_or_else(|| RuntimeError::Evaluation("nothing was recorded".into()))?;
        Ok(CompileAnswer {
            explanation: compiled.explain(),
            compiled,
            seq: last.seq,
            hash: last.hash.clone(),
        })
    }
}
