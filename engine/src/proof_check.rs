//! An independent proof checker: re-checks a [`Proof`] against the program and the input
//! facts without the evaluator (no datafrog, no plans, no symbol table).
//!
//! Each rule step must be an instance of its rule: the bindings give every variable a value of
//! its type, the head instantiates to the fact, each positive body atom instantiates to the
//! next premise, comparisons and functors recompute to true, bindings and aggregates recompute
//! to the bound values, and negated atoms are absent. Each leaf must be an input fact with the
//! claimed origin. No fact may appear among its own ancestors. Absence and aggregates are
//! checked against the naive reference evaluator ([`crate::naive`]), computed once per
//! checker.

use std::cell::OnceCell;

use crate::functions::PatternCache;
use crate::ir::{IrExpr, IrLit};
use crate::naive::{self, NaiveDb};
use crate::proof::{Proof, ProofStep};
use crate::value::Value;
use crate::{Fact, FactSet, Program};

/// Why a proof was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("proof of `{fact}` rejected: {reason}")]
pub struct ProofError {
    /// The fact of the step that failed.
    pub fact: String,
    /// What was wrong.
    pub reason: String,
}

/// Checks proofs against one program and one set of input facts.
pub struct ProofChecker<'a> {
    program: &'a Program,
    inputs: &'a FactSet,
    reference: OnceCell<NaiveDb>,
}

impl<'a> ProofChecker<'a> {
    /// A checker for proofs over `inputs` (the facts written in the program are inputs too,
    /// with origin `program:LINE`).
    pub fn new(program: &'a Program, inputs: &'a FactSet) -> Self {
        ProofChecker {
            program,
            inputs,
            reference: OnceCell::new(),
        }
    }

    fn reference(&self) -> &NaiveDb {
        self.reference
            .get_or_init(|| naive::evaluate(self.program.ir(), self.inputs))
    }

    /// Checks a proof.
    pub fn check(&self, proof: &Proof) -> Result<(), ProofError> {
        let mut ancestors = Vec::new();
        self.check_step(proof, &mut ancestors)
    }

    fn fail(&self, fact: &Fact, reason: impl Into<String>) -> ProofError {
        ProofError {
            fact: fact.to_string(),
            reason: reason.into(),
        }
    }

    fn is_input(&self, fact: &Fact, origin: &str) -> bool {
        let ir = self.program.ir();
        let given = self.inputs.iter().any(|(f, o)| {
            &**o == origin && f.relation == fact.relation && same_values(&f.values, &fact.values)
        });
        let written = ir.facts.iter().any(|f| {
            f.origin == origin
                && ir.relations[f.rel].name == fact.relation
                && same_values(&f.values, &fact.values)
        });
        given || written
    }

    fn check_step(&self, proof: &Proof, ancestors: &mut Vec<Fact>) -> Result<(), ProofError> {
        let fact = &proof.fact;
        if ancestors.contains(fact) {
            return Err(self.fail(fact, "the fact is used to prove itself"));
        }
        match &proof.step {
            ProofStep::Input { origin } => {
                if self.is_input(fact, origin) {
                    Ok(())
                } else {
                    Err(self.fail(fact, format!("not an input fact with origin `{origin}`")))
                }
            }
            ProofStep::Rule {
                rule,
                head,
                disjunct,
                bindings,
                premises,
                absent,
                ..
            } => {
                let ir = self.program.ir();
                let Some(r) = ir
                    .rules
                    .iter()
                    .find(|r| *r.id == **rule && r.head_index == *head && r.disjunct == *disjunct)
                else {
                    return Err(self.fail(
                        fact,
                        format!("no rule `{rule}` (head {head}, alternative {disjunct})"),
                    ));
                };
                if ir.relations[r.head.rel].name != fact.relation {
                    return Err(self.fail(
                        fact,
                        format!("rule `{rule}` derives `{}`", ir.relations[r.head.rel].name),
                    ));
                }
                // Every variable outside aggregates is bound, with a value of its type.
                let mut env: Vec<Option<Value>> = vec![None; r.vars.len()];
                for (i, v) in r.vars.iter().enumerate() {
                    if v.local {
                        continue;
                    }
                    let Some(val) = bindings.get(v.name.as_str()) else {
                        return Err(
                            self.fail(fact, format!("variable `{}` has no binding", v.name))
                        );
                    };
                    let val = match (val, v.ty) {
                        (Value::Number(n), crate::Type::Unsigned) if *n >= 0 => {
                            Value::Unsigned(*n as u32)
                        }
                        (val, _) => val.clone(),
                    };
                    if !val.fits(v.ty, &ir.records) {
                        return Err(self.fail(
                            fact,
                            format!(
                                "variable `{}` is `{}`, bound to `{}`",
                                v.name,
                                v.ty,
                                val.to_literal()
                            ),
                        ));
                    }
                    env[i] = Some(val);
                }
                let mut patterns = PatternCache::for_program(std::sync::Arc::clone(&ir.records));
                // Head.
                for (i, e) in r.head.args.iter().enumerate() {
                    let got = naive::eval(e, &env, &mut patterns);
                    if got
                        .as_ref()
                        .is_none_or(|g| fact.values.get(i).is_none_or(|f| !same_value(g, f)))
                    {
                        return Err(self.fail(fact, format!("the head of `{rule}` under these bindings is not this fact (column {i})")));
                    }
                }
                // Body, in order.
                let mut premise = premises.iter();
                let mut absent_iter = absent.iter();
                ancestors.push(fact.clone());
                for lit in &r.body {
                    match lit {
                        IrLit::Pos(a) => {
                            let Some(p) = premise.next() else {
                                return Err(
                                    self.fail(fact, "fewer premises than positive body atoms")
                                );
                            };
                            let name = &ir.relations[a.rel].name;
                            if &p.fact.relation != name || p.fact.values.len() != a.args.len() {
                                return Err(self.fail(
                                    fact,
                                    format!("premise `{}` is not an instance of `{name}`", p.fact),
                                ));
                            }
                            for (arg, v) in a.args.iter().zip(&p.fact.values) {
                                let ok = match arg {
                                    IrExpr::Wild => true,
                                    e => naive::eval(e, &env, &mut patterns)
                                        .is_some_and(|x| same_value(&x, v)),
                                };
                                if !ok {
                                    return Err(self.fail(fact, format!("premise `{}` does not match the rule's atom under the bindings", p.fact)));
                                }
                            }
                            self.check_step(p, ancestors)?;
                        }
                        IrLit::Neg(a) => {
                            let inst: Vec<Option<Value>> = a
                                .args
                                .iter()
                                .map(|e| match e {
                                    IrExpr::Wild => None,
                                    e => naive::eval(e, &env, &mut patterns),
                                })
                                .collect();
                            let claimed = absent_iter.next();
                            if claimed.is_none_or(|c| {
                                *c.relation != *ir.relations[a.rel].name
                                    || c.values.len() != inst.len()
                                    || !c.values.iter().zip(&inst).all(|(x, y)| match (x, y) {
                                        (None, None) => true,
                                        (Some(x), Some(y)) => same_value(x, y),
                                        _ => false,
                                    })
                            }) {
                                return Err(self.fail(
                                    fact,
                                    format!(
                                        "the negated atom `{}` is not recorded as absent",
                                        ir.relations[a.rel].name
                                    ),
                                ));
                            }
                            let db = self.reference();
                            let present = db.relations[a.rel].iter().any(|t| {
                                t.0.iter()
                                    .zip(&inst)
                                    .all(|(v, want)| want.as_ref().is_none_or(|w| same_value(v, w)))
                            });
                            if present {
                                return Err(self.fail(
                                    fact,
                                    format!(
                                        "`{}` is present, so `!{}` fails",
                                        ir.relations[a.rel].name, ir.relations[a.rel].name
                                    ),
                                ));
                            }
                        }
                        other => {
                            let needs_db = matches!(other, IrLit::Agg { .. });
                            let empty = NaiveDb::default();
                            let db = if needs_db { self.reference() } else { &empty };
                            let mut scratch = env.clone();
                            if !naive::holds(r, other, &mut scratch, db, &mut patterns) {
                                return Err(self.fail(fact, format!("a comparison, functor or aggregate of `{rule}` does not hold under the bindings (line {})", r.line)));
                            }
                        }
                    }
                }
                ancestors.pop();
                if premise.next().is_some() {
                    return Err(self.fail(fact, "more premises than positive body atoms"));
                }
                Ok(())
            }
        }
    }
}

fn same_value(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Unsigned(x), Value::Number(y)) | (Value::Number(y), Value::Unsigned(x)) => {
            i64::from(*x) == i64::from(*y)
        }
        (Value::Float(x), Value::Float(y)) => x.to_bits() == y.to_bits(),
        _ => a == b,
    }
}

fn same_values(a: &[Value], b: &[Value]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same_value(x, y))
}

/// Checks one proof (convenience for [`ProofChecker`]).
pub fn check_proof(program: &Program, inputs: &FactSet, proof: &Proof) -> Result<(), ProofError> {
    ProofChecker::new(program, inputs).check(proof)
}
