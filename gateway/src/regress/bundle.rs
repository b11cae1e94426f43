//! Fixture bundles: the minimum of a recorded run a regression case needs to rerun safely,
//! aggressively redacted, as a file a repository can commit.
//!
//! A bundle is a run file (`tollgate.run/v1`) cut and cleaned:
//!
//! 1. **Cut.** A case anchored to a step keeps the steps up to it (later steps cannot change
//!    it: each step sees only the recorded past).
//! 2. **Scrubbed.** Every string of the header's metadata, the step names and every event
//!    payload goes through one [`Scrubber`] (secrets and personal data become stable
//!    `[REDACTED:rule:n]` placeholders, the same value the same placeholder everywhere, so a
//!    token offered at one step and echoed at another stays one token). The envelope sources
//!    are policy, kept verbatim.
//! 3. **Resealed.** Scrubbing changes what was compiled, so everything derived from content is
//!    derived again under the run's recorded envelopes: each compile's hash, tokens and item
//!    outcomes, each model request built from a compile and its hash (and the outputs that
//!    answer it), each approval binding's call hash. What replay derives again is dropped:
//!    the compiled text (from the compile and from the request built from it), the proofs
//!    and why-nots of decisions, an allowed item's decision; so is the store's hash chain.
//! 4. **Checked.** The bundle must replay exactly ([`crate::replay::replay_file`]: no drift;
//!    scrubbing that changed a policy decision is refused, not papered over) and an independent
//!    [`rescan`] of every string in it must find nothing.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tollgate_rules::decide::{DecisionEffect, EnvelopeDecision};

use super::RegressError;
use crate::approvals::call_hash;
use crate::compiler::{
    CandidateItem, CompileInput, CompilePolicy, CompiledContext, ContextMemo, compile,
    model_request,
};
use crate::recorder::events::{
    ApprovalEvent, ContextOfferedEvent, Event, EventPayload, ToolCallEvent, to_json,
};
use crate::recorder::format::{EventRecord, RunFile};
use crate::replay::{ReplayPolicies, replay_file};
use crate::secrets::scrub::{Scrubber, rescan};

/// The bundle format.
pub const BUNDLE_FORMAT: &str = "tollgate.fixture/v1";

/// Where a bundle was cut from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BundleSource {
    /// The run.
    pub run: String,
    /// The last step kept, when cut at one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<u32>,
}

/// A recorded run, cut, scrubbed and resealed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FixtureBundle {
    /// [`BUNDLE_FORMAT`].
    pub format: String,
    /// Where it was cut from.
    pub source: BundleSource,
    /// How many values each scrub rule replaced.
    pub redactions: BTreeMap<String, usize>,
    /// The run, as replay reads it.
    pub run: RunFile,
}

impl FixtureBundle {
    /// The bundle's hash: blake3 of its file ([`FixtureBundle::to_file`], deterministic), what
    /// a case pins, like a lockfile's checksum.
    pub fn hash(&self) -> String {
        file_hash(&self.to_file())
    }

    /// The bundle as the committed file: pretty JSON with a final newline.
    pub fn to_file(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default() + "\n"
    }

    /// Reads a bundle file; `origin` names it in errors.
    pub fn from_file(text: &str, origin: &str) -> Result<FixtureBundle, RegressError> {
        let bundle: FixtureBundle =
            serde_json::from_str(text).map_err(|e| RegressError::Bundle {
                path: origin.to_string(),
                detail: format!(
                    "line {}, column {}: {e}\n  help: a bundle is written by `tollgate regress from-run`; regenerate it rather than edit it",
                    e.line(),
                    e.column()
                ),
            })?;
        if bundle.format != BUNDLE_FORMAT {
            return Err(RegressError::Bundle {
                path: origin.to_string(),
                detail: format!(
                    "format `{}` is not `{BUNDLE_FORMAT}`\n  help: regenerate it with this version of tollgate",
                    bundle.format
                ),
            });
        }
        Ok(bundle)
    }
}

/// The hash of a bundle file's text.
pub fn file_hash(text: &str) -> String {
    blake3::hash(text.as_bytes()).to_hex().to_string()
}

/// Cuts a bundle from `file`, at `step` when given.
pub fn cut(file: &RunFile, step: Option<u32>) -> Result<FixtureBundle, RegressError> {
    let mut run = file.clone();
    if let Some(step) = step {
        if !run.steps.iter().any(|s| s.index == step) {
            let last = run.steps.iter().map(|s| s.index).max();
            return Err(RegressError::Invalid(format!(
                "run `{}` has no step {step}{}",
                run.run.id,
                match last {
                    Some(last) => format!("\n  help: its steps are 0 to {last}"),
                    None => "\n  help: it has no steps".to_string(),
                }
            )));
        }
        run.steps.retain(|s| s.index <= step);
        run.events.retain(|e| e.step <= step);
    }
    let mut scrubber = Scrubber::new();
    run.run.metadata = scrubber.json(&run.run.metadata);
    for s in &mut run.steps {
        s.name = scrubber.text(&s.name);
    }
    for e in &mut run.events {
        e.payload = scrubber.json(&e.payload);
        e.prev = None;
        e.hash = None;
    }
    reseal(&mut run)?;
    let mut redactions = BTreeMap::new();
    for f in &scrubber.findings {
        *redactions.entry(f.rule.to_string()).or_insert(0) += 1;
    }
    let bundle = FixtureBundle {
        format: BUNDLE_FORMAT.to_string(),
        source: BundleSource {
            run: file.run.id.clone(),
            step,
        },
        redactions,
        run,
    };
    check(&bundle)?;
    Ok(bundle)
}

/// That `bundle` replays exactly and that the rescan finds nothing in it.
pub fn check(bundle: &FixtureBundle) -> Result<(), RegressError> {
    let report = replay_file(&bundle.run)?;
    if report.drifted() {
        return Err(RegressError::Unsafe(format!(
            "run `{}` does not replay exactly once scrubbed (a redacted value changed what \
             policy decided or compiled), so it cannot be a fixture:\n{}",
            bundle.source.run,
            report.to_text()
        )));
    }
    let value = serde_json::to_value(bundle).unwrap_or(Value::Null);
    let mut found = Vec::new();
    leftovers(&value, "$", &mut found);
    if !found.is_empty() {
        return Err(RegressError::Unsafe(format!(
            "the rescan of the bundle of run `{}` still finds {} suspect value(s):\n  {}\n  help: the scrubber missed these; nothing was written",
            bundle.source.run,
            found.len(),
            found.join("\n  ")
        )));
    }
    Ok(())
}

/// Every string under `value` that the rescan flags, with its path.
fn leftovers(value: &Value, at: &str, out: &mut Vec<String>) {
    match value {
        Value::String(s) => {
            for what in rescan(s) {
                out.push(format!("{at}: {what}"));
            }
        }
        Value::Array(a) => {
            for (i, v) in a.iter().enumerate() {
                leftovers(v, &format!("{at}[{i}]"), out);
            }
        }
        Value::Object(o) => {
            for (k, v) in o {
                // Policy is kept verbatim: its rules may name the very shapes they guard.
                if at == "$.run" && k == "envelope_sources" {
                    continue;
                }
                leftovers(v, &format!("{at}.{k}"), out);
            }
        }
        _ => {}
    }
}

/// Derives again what scrubbing changed: compiles, model requests and their hashes, and the
/// call hashes approvals bind.
fn reseal(run: &mut RunFile) -> Result<(), RegressError> {
    let snapshot = run.clone();
    let policies = ReplayPolicies::new(&snapshot)?;
    let memo = ContextMemo::default();
    let mut offered: HashMap<String, CandidateItem> = HashMap::new();
    let mut compiled: HashMap<u64, CompiledContext> = HashMap::new();
    let mut hashes: HashMap<String, String> = HashMap::new();
    let mut calls: HashMap<String, (String, Value)> = HashMap::new();
    let run_id = snapshot.run.id.clone();
    for e in &mut run.events {
        let Ok(event) = e.event() else { continue };
        match event {
            Event::ContextOffered(ContextOfferedEvent { items }) => {
                for item in items {
                    offered.insert(item.id.clone(), item);
                }
            }
            Event::Compile(mut c) => {
                let items = c
                    .item_ids
                    .iter()
                    .filter_map(|id| offered.get(id).cloned())
                    .collect();
                let policy = match &policies {
                    Some(p) => Some(p.engine(e).map_err(RegressError::Unsafe)?),
                    None => None,
                };
                let policy = policy.map(|engine| CompilePolicy {
                    engine,
                    run: &run_id,
                    memo: Some(&memo),
                });
                let input = CompileInput {
                    items,
                    settings: c.settings.clone(),
                    subject: None,
                };
                let now = compile(&input, policy.as_ref()).map_err(|err| {
                    RegressError::Unsafe(format!(
                        "the compile at event {} fails once scrubbed: {err}",
                        e.seq
                    ))
                })?;
                c.hash = now.hash.clone();
                c.tokens = now.tokens;
                c.outcomes = now.outcomes_for_record();
                for o in &mut c.outcomes {
                    // Proofs are derived: replay decides again. What an allowed item's
                    // decision adds beyond its status is all proof.
                    if o.policy
                        .as_ref()
                        .is_some_and(|p| p.effect == DecisionEffect::Allow)
                    {
                        o.policy = None;
                    } else if let Some(p) = o.policy.as_mut() {
                        slim(p);
                    }
                }
                c.text = String::new();
                set(e, &c);
                compiled.insert(e.seq, now);
            }
            Event::ModelCall(mut m) => {
                if let Some(at) = m.compile_seq
                    && let Some(context) = compiled.get(&at)
                {
                    m.request = model_request(context, &m.request.model);
                }
                let hash = m.request.hash();
                hashes.insert(m.request_hash.clone(), hash.clone());
                m.request_hash = hash;
                if m.compile_seq.is_some_and(|at| compiled.contains_key(&at)) {
                    // The compiled text again: derived, and replay rebuilds it.
                    m.request.messages.clear();
                }
                set(e, &m);
            }
            Event::ModelOutput(mut o) => {
                if let Some(hash) = hashes.get(&o.request_hash) {
                    o.request_hash = hash.clone();
                    set(e, &o);
                }
            }
            Event::Decision(mut d) => {
                slim(&mut d.decision);
                if let Some(Some(data)) = d.data_decision.as_mut() {
                    slim(data);
                }
                set(e, &d);
            }
            Event::ToolCall(mut c) => {
                calls.insert(c.call_id.clone(), (c.tool.clone(), c.arguments.clone()));
                if c.call_hash.is_some() {
                    c.call_hash = Some(call_hash(&run_id, &c.tool, &c.arguments));
                    set::<ToolCallEvent>(e, &c);
                }
            }
            Event::Approval(mut a) => {
                if a.call_hash.is_some()
                    && let Some((tool, arguments)) = a.call_id.as_ref().and_then(|id| calls.get(id))
                {
                    a.call_hash = Some(call_hash(&run_id, tool, arguments));
                    set::<ApprovalEvent>(e, &a);
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// A decision without its proof and why-nots (derived: replay decides again).
fn slim(d: &mut EnvelopeDecision) {
    d.proof = None;
    d.why_not.clear();
}

fn set<P: EventPayload>(e: &mut EventRecord, payload: &P) {
    e.payload = to_json(payload);
}

#[cfg(test)]
pub(crate) mod tests;
