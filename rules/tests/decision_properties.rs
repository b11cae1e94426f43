//! Properties of the built-in packs' decisions on generated worlds (see `generated_world`):
//! an ineligible memory is never eligible, and every decision proof the engine gives passes
//! the independent proof checker, while a tampered one does not.
//!
//! `PROPTEST_CASES` sets the number of worlds (256 when unset; CI sets 1000).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod generated_world;

use std::collections::BTreeSet;
use std::sync::Arc;

use proptest::prelude::*;
use tollgate_engine::proof_check::ProofChecker;
use tollgate_engine::{Fact, FactSet, Limits, Proof, ProofStep, Value};
use tollgate_rules::packs::REQUEST_RELATIONS;

use generated_world::{
    EXPIRIES, LEVELS, NOWS, RUNS, SCOPE_NODES, STATUSES, World, config, fact_set, program, world,
};

/// The rank of a level, `None` for a misspelt one.
fn rank(level: usize) -> Option<usize> {
    (level < 4).then_some(level)
}

impl World {
    /// Why memory `m` is ineligible for a request of run index `r`, computed without the packs
    /// (only the reasons property (a) is about: scope, clearance, expiry, rejected or
    /// quarantined).
    fn ineligible_because(&self, r: usize, m: usize) -> Vec<&'static str> {
        let mem = &self.memories[m];
        let mut why = Vec::new();
        let in_scope = self.run_exists(r)
            && mem.scope < SCOPE_NODES
            && self.ancestors(self.runs[r].scope).contains(&mem.scope);
        if !in_scope {
            why.push("out_of_scope");
        }
        let clearance = if self.run_exists(r) {
            self.runs[r].clearance
        } else if RUNS[r] == "r9" {
            self.ghost_clearance
        } else {
            None
        };
        let cleared = (self.run_exists(r) && LEVELS[mem.level] == "public")
            || matches!(
                (rank(mem.level), clearance.and_then(rank)),
                (Some(l), Some(c)) if l <= c
            );
        if !cleared {
            why.push("above_clearance");
        }
        let expires = EXPIRIES[mem.expires];
        let live = self.now.is_some_and(|t| expires > NOWS[t]);
        if expires != 0 && !mem.pinned && !live {
            why.push("expired");
        }
        match STATUSES[mem.status] {
            "rejected" => why.push("status_rejected"),
            "quarantined" => why.push("status_quarantined"),
            _ => {}
        }
        why
    }
}

fn text_rows(rows: Option<Vec<Vec<Value>>>) -> BTreeSet<Vec<String>> {
    rows.unwrap()
        .iter()
        .map(|r| r.iter().map(ToString::to_string).collect())
        .collect()
}

/// Number of bindings over every rule step of a proof.
fn count_bindings(proof: &Proof) -> usize {
    match &proof.step {
        ProofStep::Input { .. } => 0,
        ProofStep::Rule {
            bindings, premises, ..
        } => bindings.len() + premises.iter().map(|p| count_bindings(p)).sum::<usize>(),
    }
}

/// Changes the `k`-th binding (in pre-order over rule steps) to another value of its type;
/// returns the variable changed.
fn tamper(proof: &mut Proof, k: &mut usize) -> Option<String> {
    let ProofStep::Rule {
        bindings, premises, ..
    } = &mut proof.step
    else {
        return None;
    };
    if *k < bindings.len() {
        let (name, value) = bindings.iter_mut().nth(*k)?;
        *value = match value {
            Value::Symbol(s) => Value::sym(format!("{s}~")),
            Value::Number(n) => Value::Number(n.wrapping_add(1)),
            Value::Unsigned(n) => Value::Unsigned(n.wrapping_add(1)),
            Value::Float(x) => Value::Float(*x + 1.0),
            // Policy relations hold no records.
            Value::Record(_) | Value::Nil | Value::Adt { .. } => return None,
        };
        return Some(format!("{name} in `{}`", proof.fact));
    }
    *k -= bindings.len();
    premises
        .iter_mut()
        .find_map(|p| tamper(Arc::make_mut(p), k))
}

const PROVED: [&str; 4] = [
    "tool_decision",
    "context_decision",
    "model_decision",
    "memory_eligible",
];

proptest! {
    #![proptest_config(config())]

    #[test]
    fn an_ineligible_memory_is_never_eligible(w in world()) {
        let limits = Limits::default();
        let model = program()
            .materialise(&fact_set(&w.static_facts(), "static"), &limits)
            .unwrap();
        let requests = w.requests();
        let memory_requests = requests.iter().filter(|q| q.id.starts_with('m'));
        for (request, r) in memory_requests.zip(&w.memory_requests) {
            let answer = model.query(&fact_set(&request.facts, "request"), &limits).unwrap();
            let eligible = text_rows(answer.relation("memory_eligible"));
            let ineligible = text_rows(answer.relation("memory_ineligible"));
            for m in 0..w.memories.len() {
                let mem = format!("mem{m}");
                for reason in w.ineligible_because(*r, m) {
                    prop_assert!(
                        !eligible.contains(&vec![request.id.clone(), mem.clone()]),
                        "{} eligible for {} ({}) though {}", mem, request.id, RUNS[*r], reason
                    );
                    let row = vec![request.id.clone(), mem.clone(), reason.to_string()];
                    prop_assert!(
                        ineligible.contains(&row),
                        "{} for {}: no `{}` in {:?}", mem, request.id, reason, ineligible
                    );
                }
            }
        }
    }

    #[test]
    fn decision_proofs_check_and_tampered_ones_do_not(w in world(), pick in any::<usize>()) {
        let limits = Limits::default();
        let fixed = w.static_facts();
        let request: Vec<Fact> = w
            .all_facts()
            .into_iter()
            .filter(|f| REQUEST_RELATIONS.contains(&f.relation.as_str()))
            .collect();
        let model = program().materialise(&fact_set(&fixed, "static"), &limits).unwrap();
        let answer = model.query(&fact_set(&request, "request"), &limits).unwrap();
        let mut inputs = FactSet::new();
        inputs.extend_from(&fact_set(&fixed, "static"));
        inputs.extend_from(&fact_set(&request, "request"));
        let checker = ProofChecker::new(program(), &inputs);
        for relation in PROVED {
            for row in answer.relation(relation).unwrap() {
                let fact = Fact::new(relation, row);
                let proof = answer.prove(&fact).unwrap();
                if let Err(e) = checker.check(&proof) {
                    prop_assert!(false, "{}: {}\n{}", fact, e, proof.to_text());
                }
                let mut tampered = proof.clone();
                let total = count_bindings(&tampered);
                prop_assert!(total > 0, "{} proved without a rule", fact);
                let changed = tamper(&mut tampered, &mut (pick % total)).unwrap();
                prop_assert!(
                    checker.check(&tampered).is_err(),
                    "{}: the proof still checks with {} changed", fact, changed
                );
            }
        }
    }
}
