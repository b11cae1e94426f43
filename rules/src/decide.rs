//! Decisions: a [`PolicyEngine`] materialises the built-in program over an envelope set and
//! its subjects (runs, clearances, memories) once; each request is then a staged query that
//! adds a few request facts, reads the decision relation and explains it.
//!
//! Every answer is an [`EnvelopeDecision`]: one effect, the rules that decided it, the proof of
//! the decision fact (or, for a default denial, why nothing allowed it), the governing envelope
//! versions and a hash of the input. An engine error denies (fail closed) and says why.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, OnceLock};

use tollgate_engine::{
    Answer, Diagnostic, EvalError, Fact, FactSet, Limits, Model, Program, Proof, ProofStep, Value,
    WhyNot,
};

use crate::envelope::EnvelopeSet;
use crate::packs::builtin_program;
use crate::request::{
    ContextItem, Handoff, ModelCall, ToolCall, context_request_facts, handoff_facts,
    memory_request_facts, model_request_facts, now_facts, tool_request_facts,
};
use input_hash::InputHasher;
use permitting::{PermittingRules, permission_chain};

mod decision;
mod input_hash;
mod permitting;
mod request;
#[cfg(test)]
mod tests;

pub use decision::{
    DecisionEffect, EnvelopeDecision, HandoffViolation, MemoryVerdict, OnRead, RequestKind,
};
pub use request::{DecideRequestError, DecisionRequest, PolicyRequest, decide_request};

/// Why a policy engine could not be built.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PolicyError {
    /// The built-in program does not compile (a bug in the packs).
    #[error("the built-in rule packs do not compile: {}", .0.first().map_or(String::new(), |d| d.message.clone()))]
    Program(Vec<Diagnostic>),
    /// Materialising envelopes and subjects failed (a limit, or a fact that does not fit).
    #[error("cannot evaluate the envelopes: {0}")]
    Eval(#[from] EvalError),
}

fn program() -> Result<Program, PolicyError> {
    static PROGRAM: OnceLock<Result<Program, Vec<Diagnostic>>> = OnceLock::new();
    PROGRAM
        .get_or_init(builtin_program)
        .clone()
        .map_err(PolicyError::Program)
}

/// The built-in program materialised over an envelope set and its subjects; immutable and
/// shareable, it answers any number of requests.
#[derive(Debug)]
pub struct PolicyEngine {
    model: Model,
    /// Envelope ids governing each run (the packs' `governs`), sorted: symbols shared with
    /// the model, for the why-not queries that name them.
    governing: BTreeMap<String, Vec<Arc<str>>>,
    /// The envelopes' permitting rules, which a default denial's why-not goes through.
    permitting: PermittingRules,
    /// `ID@VERSION` of the envelopes governing each run, sorted: every decision carries them.
    governing_versions: BTreeMap<String, Vec<String>>,
    /// The subject facts and envelope-set version every input hash includes, pre-written.
    hasher: InputHasher,
    limits: Limits,
    /// Whether default denials carry a why-not.
    explain_denials: bool,
    /// Whether every memory verdict carries its proof (else the first of each kind).
    prove_every_memory: bool,
    /// The hash of the program materialised ([`crate::packs::program_hash`] for the built-in
    /// one): what a receipt recorded without its proof names.
    program_hash: Arc<str>,
}

/// Why a receipt recorded without its proof and why-not cannot be rendered by an engine: it
/// would not show what decided, so nothing is shown in its place.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RenderError {
    /// The receipt was decided under another built-in program (another release's packs or
    /// proof format).
    #[error(
        "the receipt was decided under program {recorded}, this engine runs program {here}\n  help: render it with the program it names (the store keeps every program a receipt names)"
    )]
    Program {
        /// The program the receipt names.
        recorded: String,
        /// This engine's.
        here: String,
    },
    /// The request, the run's subject or the envelope versions rebuilt here are not those
    /// that were decided: their input hash differs.
    #[error(
        "the input rebuilt for this receipt hashes to {now}, the receipt recorded {recorded}: the request, the run's subject or the envelope versions are not those that decided"
    )]
    Input {
        /// The receipt's input hash.
        recorded: String,
        /// The rebuilt input's.
        now: String,
    },
    /// The same input decides otherwise here (an engine that differs from the one that
    /// decided).
    #[error("the receipt recorded {recorded}; deciding its input again gives {now}")]
    Decision {
        /// The recorded effect and rules.
        recorded: String,
        /// What deciding again gives.
        now: String,
    },
}

impl PolicyEngine {
    /// Materialises the built-in program over the set's facts and the subject facts
    /// (see [`crate::request::subject_facts`]).
    pub fn new(set: &EnvelopeSet, subjects: &FactSet) -> Result<PolicyEngine, PolicyError> {
        PolicyEngine::with_limits(set, subjects, Limits::default())
    }

    /// Like [`PolicyEngine::new`], with limits for materialising and for every query.
    pub fn with_limits(
        set: &EnvelopeSet,
        subjects: &FactSet,
        limits: Limits,
    ) -> Result<PolicyEngine, PolicyError> {
        PolicyEngine::with_program(
            &program()?,
            crate::packs::program_hash(),
            set,
            subjects,
            limits,
        )
    }

    /// Like [`PolicyEngine::with_limits`] under another program than the built-in one (a
    /// stored older one, to render the receipts recorded under it); `hash` is its
    /// [`crate::packs::program_hash_of`].
    pub fn with_program(
        program: &Program,
        hash: &str,
        set: &EnvelopeSet,
        subjects: &FactSet,
        limits: Limits,
    ) -> Result<PolicyEngine, PolicyError> {
        let mut facts = set.facts();
        facts.extend_from(subjects);
        let model = program.materialise(&facts, &limits)?;
        let mut governing: BTreeMap<String, BTreeSet<Arc<str>>> = BTreeMap::new();
        for row in model.relation("governs").unwrap_or_default() {
            if let [Value::Symbol(run), Value::Symbol(env)] = row.as_slice() {
                governing
                    .entry(run.to_string())
                    .or_default()
                    .insert(env.clone());
            }
        }
        let mut subject: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for rel in ["run", "clearance"] {
            for row in model.relation(rel).unwrap_or_default() {
                if let Some(Value::Symbol(run)) = row.first() {
                    let text = Fact::new(rel, row.clone()).to_string();
                    subject.entry(run.to_string()).or_default().push(text);
                }
            }
        }
        let memories = model
            .relation("memory")
            .unwrap_or_default()
            .into_iter()
            .map(|row| Fact::new("memory", row).to_string())
            .collect();
        let versions: BTreeMap<String, String> = set
            .envelopes()
            .iter()
            .map(|e| (e.id.clone(), e.label()))
            .collect();
        let governing_versions = governing
            .iter()
            .map(|(run, ids)| {
                let labels = ids.iter().filter_map(|id| versions.get(&**id).cloned());
                (run.clone(), labels.collect())
            })
            .collect();
        let governing = governing
            .into_iter()
            .map(|(run, ids)| (run, ids.into_iter().collect()))
            .collect();
        Ok(PolicyEngine {
            permitting: PermittingRules::new(&model),
            model,
            governing,
            governing_versions,
            hasher: InputHasher::new(set.version(), subject, memories),
            limits,
            explain_denials: true,
            prove_every_memory: true,
            program_hash: Arc::from(hash),
        })
    }

    /// Whether a default denial carries the why-not of its allow (on by default). A caller on
    /// a hot path that records receipts can turn it off and explain a denial when someone
    /// asks: decisions are deterministic, so the same inputs give the same why-not later.
    #[must_use]
    pub fn explain_denials(mut self, on: bool) -> Self {
        self.explain_denials = on;
        self
    }

    /// Whether every memory of a retrieval carries the proof of its verdict (on by default).
    /// Off, only the first memory of each kind of verdict does — eligible, or ineligible for
    /// the same reasons — and the others carry none: for a caller deciding many memories that
    /// are alike (representatives of groups) and explaining each kind once.
    #[must_use]
    pub fn prove_every_memory(mut self, on: bool) -> Self {
        self.prove_every_memory = on;
        self
    }

    /// The `ID@VERSION` of every envelope governing `run`, sorted.
    pub fn governing(&self, run: &str) -> Vec<String> {
        self.governing_versions
            .get(run)
            .cloned()
            .unwrap_or_default()
    }

    /// May `run` call `tool` with `args`?
    pub fn decide_tool(&self, run: &str, tool: &str, args: &serde_json::Value) -> EnvelopeDecision {
        self.decide(&PolicyRequest::Tool {
            run: run.to_string(),
            call: ToolCall {
                name: tool.to_string(),
                args: args.clone(),
                usage: Default::default(),
            },
            now: None,
        })
    }

    /// May `run` see `item`?
    pub fn decide_context(&self, run: &str, item: &ContextItem) -> EnvelopeDecision {
        self.decide(&PolicyRequest::Context {
            run: run.to_string(),
            item: item.clone(),
        })
    }

    /// May `run` make this model call?
    pub fn decide_model(&self, run: &str, call: &ModelCall) -> EnvelopeDecision {
        self.decide(&PolicyRequest::Model {
            run: run.to_string(),
            call: call.clone(),
        })
    }

    /// Which of the engine's memories may `run` retrieve at time `now`? The decision's
    /// `memories` lists every memory with its verdict; the effect is `deny` only when there
    /// are memories and none is eligible.
    pub fn retrieve_memories(&self, run: &str, now: Option<i32>) -> EnvelopeDecision {
        self.decide(&PolicyRequest::Memory {
            run: run.to_string(),
            now,
        })
    }

    /// The proof that memory `memory` (one of the engine's subject memories) is ineligible for
    /// `run` at `now` for `reason`, when it is. A retrieval's verdict proves a memory's first
    /// reason only; this proves the one asked for (an off-scope representative's
    /// `out_of_scope`, whatever else it is).
    pub fn prove_memory_reason(
        &self,
        run: &str,
        memory: &str,
        reason: &str,
        now: Option<i32>,
    ) -> Option<Proof> {
        let request = PolicyRequest::Memory {
            run: run.to_string(),
            now,
        };
        let input_hash = self.input_hash(&request);
        let req = format!("req-{}", &input_hash[..16]);
        let mut facts = memory_request_facts(&req, run);
        if let Some(t) = now {
            facts.extend_from(&now_facts(t));
        }
        let answer = self.model.query(&facts, &self.limits).ok()?;
        answer
            .prove(&Fact::new(
                "memory_ineligible",
                vec![Value::sym(&req), Value::sym(memory), Value::sym(reason)],
            ))
            .ok()
    }

    /// Is this handoff valid? `allow`; `redact` when only evidence the consumer may not see
    /// is in the way (that evidence does not cross); `deny` otherwise. Every violation is
    /// listed with its proof.
    pub fn validate_handoff(&self, handoff: &Handoff) -> EnvelopeDecision {
        self.decide(&PolicyRequest::Handoff {
            handoff: Box::new(handoff.clone()),
        })
    }

    /// The hash of the program this engine materialised.
    pub fn program_hash(&self) -> &str {
        &self.program_hash
    }

    /// Decides any request, with the proof of its decision and, for a default denial, the
    /// why-not of its allow.
    pub fn decide(&self, request: &PolicyRequest) -> EnvelopeDecision {
        self.decide_explained(request, true)
    }

    /// Decides a request for a receipt whose proof and why-not are rendered when read: a tool,
    /// context or model request is decided without them (its effect, rules, envelope versions
    /// and input hash are those [`PolicyEngine::decide`] gives) and names the program to
    /// render them under ([`EnvelopeDecision::on_read`]). Retrievals and handoffs, whose
    /// callers read their proofs, are decided in full.
    pub fn decide_receipt(&self, request: &PolicyRequest) -> EnvelopeDecision {
        if !matches!(
            request.kind(),
            RequestKind::Tool | RequestKind::Context | RequestKind::Model
        ) {
            return self.decide(request);
        }
        let mut decision = self.decide_explained(request, false);
        if decision.error.is_none() {
            decision.on_read = Some(OnRead {
                program: self.program_hash.to_string(),
            });
        }
        decision
    }

    /// The decision `recorded` (of `request`) with its proof and why-not: deciding the request
    /// again gives them, exactly, when this engine is the one that decided — the same program,
    /// the same envelope set and subject (the input hash says so), the same effect and rules.
    /// Otherwise an error says which differs; nothing is rendered against other rules. A
    /// decision that carries its proof (no [`EnvelopeDecision::on_read`]) is returned as it is.
    pub fn render(
        &self,
        request: &PolicyRequest,
        recorded: &EnvelopeDecision,
    ) -> Result<EnvelopeDecision, RenderError> {
        let Some(on_read) = &recorded.on_read else {
            return Ok(recorded.clone());
        };
        if on_read.program != *self.program_hash {
            return Err(RenderError::Program {
                recorded: on_read.program.clone(),
                here: self.program_hash.to_string(),
            });
        }
        let now = self.decide(request);
        if now.input_hash != recorded.input_hash {
            return Err(RenderError::Input {
                recorded: recorded.input_hash.clone(),
                now: now.input_hash,
            });
        }
        let summary = |d: &EnvelopeDecision| {
            format!(
                "{} {} by [{}] under [{}]{}",
                d.kind.as_str(),
                d.effect.as_str(),
                d.rules.join(", "),
                d.envelope_versions.join(", "),
                d.error
                    .as_deref()
                    .map(|e| format!(" (error: {e})"))
                    .unwrap_or_default()
            )
        };
        if (
            now.kind,
            &now.request,
            now.effect,
            &now.rules,
            &now.envelope_versions,
            &now.error,
        ) != (
            recorded.kind,
            &recorded.request,
            recorded.effect,
            &recorded.rules,
            &recorded.envelope_versions,
            &recorded.error,
        ) {
            return Err(RenderError::Decision {
                recorded: summary(recorded),
                now: summary(&now),
            });
        }
        Ok(now)
    }

    fn decide_explained(&self, request: &PolicyRequest, explain: bool) -> EnvelopeDecision {
        let input_hash = self.input_hash(request);
        let req = match request {
            PolicyRequest::Handoff { handoff } => handoff.id.clone(),
            _ => format!("req-{}", &input_hash[..16]),
        };
        let mut facts = match request {
            PolicyRequest::Tool { run, call, .. } => tool_request_facts(&req, run, call),
            PolicyRequest::Context { run, item } => context_request_facts(&req, run, item),
            PolicyRequest::Model { run, call } => model_request_facts(&req, run, call),
            PolicyRequest::Memory { run, .. } => memory_request_facts(&req, run),
            PolicyRequest::Handoff { handoff } => handoff_facts(handoff),
        };
        if let PolicyRequest::Tool { now: Some(t), .. }
        | PolicyRequest::Memory { now: Some(t), .. } = request
        {
            facts.extend_from(&now_facts(*t));
        }
        if let PolicyRequest::Handoff { handoff } = request
            && let Some(t) = handoff.now
        {
            facts.extend_from(&now_facts(t));
        }
        let mut decision = EnvelopeDecision {
            kind: request.kind(),
            request: req.clone(),
            effect: DecisionEffect::Deny,
            rules: Vec::new(),
            proof: None,
            why_not: Vec::new(),
            envelope_versions: self.governing(request.run()),
            input_hash,
            error: None,
            memories: Vec::new(),
            violations: Vec::new(),
            on_read: None,
        };
        let answer = match self.model.query(&facts, &self.limits) {
            Ok(a) => a,
            Err(e) => return fail_closed(decision, e.to_string()),
        };
        let outcome = match request.kind() {
            RequestKind::Tool => self.effect_decision(
                &answer,
                "tool_decision",
                &req,
                (request.run(), explain),
                &mut decision,
            ),
            RequestKind::Context => self.effect_decision(
                &answer,
                "context_decision",
                &req,
                (request.run(), explain),
                &mut decision,
            ),
            RequestKind::Model => self.effect_decision(
                &answer,
                "model_decision",
                &req,
                (request.run(), explain),
                &mut decision,
            ),
            RequestKind::Memory => {
                memory_decision(&answer, &req, self.prove_every_memory, &mut decision)
            }
            RequestKind::Handoff => handoff_decision(&answer, &req, &mut decision),
        };
        match outcome {
            Ok(()) => decision,
            Err(e) => fail_closed(decision, e),
        }
    }

    /// The canonical input of a request: the request itself, the subject facts of the runs it
    /// names (and the memories, for a retrieval), and the envelope set's version.
    fn input_hash(&self, request: &PolicyRequest) -> String {
        self.hasher.hash(request)
    }

    /// Reads a `*_decision(req, effect, rule)` relation: one effect, its rules and, when
    /// `explain`, its proof and for a default denial the why-not of the permitting facts.
    fn effect_decision(
        &self,
        answer: &Answer<'_>,
        relation: &str,
        req: &str,
        (run, explain): (&str, bool),
        decision: &mut EnvelopeDecision,
    ) -> Result<(), String> {
        let rows = rows_for(answer, relation, req)?;
        // Effect, pack effect, rule, and the row (its values are the decision fact's).
        let mut decided: Vec<(DecisionEffect, &str, &str, usize)> = Vec::new();
        for (i, row) in rows.iter().enumerate() {
            let (Some(Value::Symbol(effect)), Some(Value::Symbol(rule))) = (row.get(1), row.get(2))
            else {
                continue;
            };
            let Some(e) = DecisionEffect::from_pack(effect) else {
                return Err(format!("`{relation}` has an unknown effect `{effect}`"));
            };
            decided.push((e, effect, rule, i));
        }
        // The packs give every request exactly one effect; should two ever appear, the most
        // restrictive wins.
        let Some(effect) = decided.iter().map(|d| d.0).max() else {
            return Err(format!("no `{relation}` was derived for the request"));
        };
        decided.retain(|d| d.0 == effect);
        decided.sort();
        decision.effect = effect;
        decision.rules = decided.iter().map(|d| d.2.to_string()).collect();
        if !explain {
            return Ok(());
        }
        if let Some(&(.., row)) = decided.first() {
            let fact = Fact::new(relation, rows[row].clone());
            decision.proof = Some(answer.prove(&fact).map_err(|e| e.to_string())?);
        }
        if self.explain_denials
            && effect == DecisionEffect::Deny
            && decision
                .rules
                .iter()
                .all(|r| r == "default-deny" || r == "no-envelope")
        {
            decision.why_not = self.why_not_allowed(answer, relation, req, run);
        }
        Ok(())
    }

    /// Why a default-denied request was not allowed: the why-not of the request being
    /// permitted, then for each permitting rule of the governing envelopes the first step that
    /// failed: the rule does not match the request (its hit), a condition fails (it does not
    /// apply), or it applies but another envelope withholds the request (its decision).
    /// Explanations that cannot be given are left out: the decision is already a denial.
    fn why_not_allowed(
        &self,
        answer: &Answer<'_>,
        relation: &str,
        req: &str,
        run: &str,
    ) -> Vec<WhyNot> {
        let chain = permission_chain(relation);
        let q = Value::sym(req);
        let mut out: Vec<WhyNot> = why_not(answer, Fact::new(chain.permitted, vec![q.clone()]))
            .into_iter()
            .collect();
        // The permitting rules of the governing envelopes, sorted by envelope, rule and effect
        // (the envelopes are sorted, and so is each one's list). A bounded list: an envelope
        // set with hundreds of permitting rules gets the first few.
        let governing = self.governing.get(run).map_or(&[][..], Vec::as_slice);
        let rules = governing.iter().flat_map(|env| {
            let rules = self.permitting.of(chain, env).iter();
            rules.map(move |rule| (env, rule))
        });
        for (env, (rule, eff, decided)) in rules.take(8) {
            let args = vec![
                q.clone(),
                Value::Symbol(env.clone()),
                Value::Symbol(rule.clone()),
                Value::Symbol(eff.clone()),
            ];
            let hit_fact = Fact::new(chain.hit, args);
            let fact = if !answer.contains(&hit_fact) {
                hit_fact
            } else {
                let applies_fact = Fact::new(chain.applies, hit_fact.values);
                if !answer.contains(&applies_fact) {
                    applies_fact
                } else {
                    Fact::new(
                        relation,
                        vec![q.clone(), Value::sym(decided), Value::Symbol(rule.clone())],
                    )
                }
            };
            out.extend(why_not(answer, fact));
        }
        out
    }
}

/// The why-not of a fact, without the rules whose head cannot produce it (noise for a
/// reader: `deny` rules when asking why something is not allowed).
fn why_not(answer: &Answer<'_>, fact: Fact) -> Option<WhyNot> {
    let mut w = answer.why_not_owned(fact).ok()?;
    w.rules.retain(|r| r.failed_literal.is_some());
    Some(w)
}

pub(crate) fn fail_closed(mut decision: EnvelopeDecision, error: String) -> EnvelopeDecision {
    decision.effect = DecisionEffect::Deny;
    decision.rules.clear();
    decision.proof = None;
    decision.why_not.clear();
    decision.memories.clear();
    decision.violations.clear();
    decision.error = Some(error);
    decision
}

/// The rows of `relation` whose first column is `req`.
fn rows_for(answer: &Answer<'_>, relation: &str, req: &str) -> Result<Vec<Vec<Value>>, String> {
    answer
        .relation_where(relation, 0, &Value::sym(req))
        .ok_or_else(|| format!("the built-in program has no relation `{relation}`"))
}

fn text(v: Option<&Value>) -> String {
    match v {
        Some(Value::Symbol(s)) => s.to_string(),
        Some(other) => other.to_string(),
        None => String::new(),
    }
}

/// The rule at the root of a proof.
fn root_rule(proof: &Proof) -> Option<String> {
    match &proof.step {
        ProofStep::Rule { rule, .. } => Some(rule.to_string()),
        ProofStep::Input { .. } => None,
    }
}

fn memory_decision(
    answer: &Answer<'_>,
    req: &str,
    prove_every: bool,
    decision: &mut EnvelopeDecision,
) -> Result<(), String> {
    // The kinds of verdict proved so far (when not proving every memory).
    let mut proved: BTreeSet<(bool, Vec<String>)> = BTreeSet::new();
    let eligible: BTreeSet<String> = rows_for(answer, "memory_eligible", req)?
        .iter()
        .map(|r| text(r.get(1)))
        .collect();
    let ineligible = rows_for(answer, "memory_ineligible", req)?;
    let memories: BTreeSet<String> = answer
        .relation("memory")
        .unwrap_or_default()
        .iter()
        .map(|r| text(r.first()))
        .collect();
    // Each memory's reasons, gathered once (not a scan of every reason per memory).
    let mut reasons_of: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for r in &ineligible {
        reasons_of
            .entry(text(r.get(1)))
            .or_default()
            .push(text(r.get(2)));
    }
    for m in &memories {
        let is_eligible = eligible.contains(m);
        let mut reasons = reasons_of.remove(m).unwrap_or_default();
        reasons.sort();
        let first_of_kind = prove_every || proved.insert((is_eligible, reasons.clone()));
        let fact = if !first_of_kind {
            None
        } else if is_eligible {
            Some(Fact::new(
                "memory_eligible",
                vec![Value::sym(req), Value::sym(m)],
            ))
        } else {
            reasons.first().map(|reason| {
                Fact::new(
                    "memory_ineligible",
                    vec![Value::sym(req), Value::sym(m), Value::sym(reason)],
                )
            })
        };
        let proof = match fact {
            Some(f) => Some(answer.prove(&f).map_err(|e| e.to_string())?),
            None => None,
        };
        decision.memories.push(MemoryVerdict {
            memory: m.clone(),
            eligible: is_eligible,
            reasons,
            proof,
        });
    }
    let any_eligible = decision.memories.iter().any(|m| m.eligible);
    decision.effect = if any_eligible || decision.memories.is_empty() {
        DecisionEffect::Allow
    } else {
        DecisionEffect::Deny
    };
    decision.proof = decision
        .memories
        .iter()
        .find(|m| m.eligible == any_eligible)
        .and_then(|m| m.proof.clone());
    decision.rules = decision
        .proof
        .as_ref()
        .and_then(root_rule)
        .into_iter()
        .collect();
    Ok(())
}

fn handoff_decision(
    answer: &Answer<'_>,
    req: &str,
    decision: &mut EnvelopeDecision,
) -> Result<(), String> {
    let mut rows = rows_for(answer, "handoff_violation", req)?;
    rows.sort_by_key(|r| (text(r.get(1)), text(r.get(2))));
    let mut rules = BTreeSet::new();
    for row in rows {
        let proof = answer
            .prove(&Fact::new("handoff_violation", row.clone()))
            .map_err(|e| e.to_string())?;
        if let Some(r) = root_rule(&proof) {
            rules.insert(r);
        }
        decision.violations.push(HandoffViolation {
            code: text(row.get(1)),
            detail: text(row.get(2)),
            proof: Some(proof),
        });
    }
    // Evidence the consumer may not see does not cross, and the rest of the contract may:
    // `redact`. Anything else refuses the contract.
    decision.effect = if decision.violations.is_empty() {
        DecisionEffect::Allow
    } else if decision
        .violations
        .iter()
        .all(HandoffViolation::drops_evidence)
    {
        DecisionEffect::Redact
    } else {
        DecisionEffect::Deny
    };
    decision.rules = rules.into_iter().collect();
    decision.proof = decision.violations.first().and_then(|v| v.proof.clone());
    Ok(())
}

#[cfg(test)]
mod on_read_tests;
