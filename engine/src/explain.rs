//! The explain stage: proofs of facts that hold and "why not" for facts that do not.
//!
//! A proof is rebuilt after evaluation, top-down: a derived fact is explained by an instance
//! of one of its rules whose premises were all derived *before* it (evaluation records the
//! round in which each fact first appeared), so proofs are well-founded by construction.
//! Among the instances, the rule with the smallest id wins, then the smallest bindings in
//! value order, so the same program and facts give the same proof whatever their order.

use std::borrow::Cow;
use std::collections::BTreeMap;

use std::sync::Arc;

use crate::Fact;
use crate::eval::{self, Db, Derivations, Part, Row};
use crate::ir::RelId;
use crate::model::{InputPart, ModelData, QUERY_RANK_BASE, SparseInputs, sparse_input};
use crate::plan::{CArg, CExpr, CLit, EvalCx};
use crate::value::{Interner, Value, decode};

mod why_not;

pub(crate) use why_not::why_not;
pub use why_not::{RuleFailure, WhyNot};

pub use crate::proof::{Absent, Proof, ProofStep};

/// Why an explanation could not be given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExplainError {
    /// No relation of that name.
    #[error("unknown relation `{0}`")]
    UnknownRelation(String),
    /// The fact does not fit its relation.
    #[error("bad fact: {0}")]
    BadFact(String),
    /// A proof was asked for a fact that does not hold.
    #[error("`{0}` does not hold")]
    NotHolds(String),
    /// A why-not was asked for a fact that holds.
    #[error("`{0}` holds")]
    Holds(String),
    /// The model was built without what proofs need.
    #[error("this model was evaluated without provenance; materialise it to explain")]
    NoProvenance,
}

/// Encodes a fact against a symbol table without interning: `None` if a symbol is unknown
/// (then no tuple can hold it).
fn encode_fact<const W: usize>(
    data: &ModelData<W>,
    symbols: &Interner,
    fact: &Fact,
) -> Result<(RelId, Option<Row<W>>), ExplainError> {
    let ir = data.program.ir();
    let rel = ir
        .relation(&fact.relation)
        .ok_or_else(|| ExplainError::UnknownRelation(fact.relation.clone()))?;
    let info = &ir.relations[rel];
    if info.arity() != fact.values.len() {
        return Err(ExplainError::BadFact(format!(
            "`{}` has {} columns, `{fact}` has {}",
            info.name,
            info.arity(),
            fact.values.len()
        )));
    }
    let mut t = [0u32; W];
    for (i, v) in fact.values.iter().enumerate() {
        // Symbols are looked up where they are (no copy of the string).
        if let (Value::Symbol(s), crate::Type::Symbol) = (v, info.types[i]) {
            match symbols.get(s) {
                Some(id) => t[i] = id,
                None => return Ok((rel, None)),
            }
            continue;
        }
        let v = match v.coerce(info.types[i], &data.program.ir().records) {
            Some(v) => v,
            None => {
                let t = info.types[i];
                return Err(ExplainError::BadFact(format!(
                    "column `{}` of `{}` is `{t}`, got `{}`",
                    info.attrs[i],
                    info.name,
                    v.to_literal()
                )));
            }
        };
        // A symbol or record never interned is in no fact.
        match crate::value::encode_existing(&v, symbols) {
            Some(slot) => t[i] = slot,
            None => return Ok((rel, None)),
        }
    }
    Ok((rel, Some(t)))
}

fn decode_fact<const W: usize>(
    data: &ModelData<W>,
    symbols: &Interner,
    rel: RelId,
    t: &Row<W>,
) -> Fact {
    let info = &data.program.ir().relations[rel];
    Fact {
        relation: info.name.clone(),
        values: (0..info.arity())
            .map(|i| decode(t[i], info.types[i], symbols))
            .collect(),
    }
}

pub(crate) fn contains<const W: usize>(
    data: &ModelData<W>,
    db: &Db<'_, W>,
    symbols: &Interner,
    fact: &Fact,
) -> bool {
    matches!(encode_fact(data, symbols, fact), Ok((rel, Some(t))) if db.contains(rel, &t))
}

/// The rank of a tuple: (stratum, round of first derivation).
fn rank_of<const W: usize>(
    data: &ModelData<W>,
    db: &Db<'_, W>,
    rel: RelId,
    t: &Row<W>,
) -> (usize, u32) {
    let s = data.program.ir().stratum_of[rel];
    let r = db
        .parts(rel)
        .iter()
        .flatten()
        .find_map(|p| p.rank(t))
        .unwrap_or(0);
    (s, r)
}

/// How one fact is derived: an input, or an instance of a rule (its slots, borrowed when the
/// evaluation recorded them, and its premises).
enum Step<'a, const W: usize> {
    Input(Arc<str>),
    Rule {
        rule: usize,
        env: Cow<'a, [u32]>,
        premises: Vec<(RelId, Row<W>)>,
    },
    Unexplained,
}

struct Prover<'a, const W: usize> {
    data: &'a ModelData<W>,
    db: &'a Db<'a, W>,
    query_inputs: &'a SparseInputs<W>,
    query_origins: &'a [Arc<str>],
    /// Relations the request reaches; empty when proving in the model itself.
    affected: &'a [bool],
    /// Derivations recorded by the query's one-pass strata.
    derivations: Option<&'a Derivations<W>>,
    /// The derivation chosen for each fact of the proof. A proof has a dozen facts or so: a
    /// list searched in place costs less than a hash table of 64-byte keys.
    steps: Vec<((RelId, Row<W>), Step<'a, W>)>,
    /// The proof written for each step, once written.
    built: Vec<Option<Arc<Proof>>>,
}

/// What a proof reads besides the parts: the query's inputs and their origins, the relations
/// its request reaches (empty when proving in the model itself), and the derivations its
/// one-pass strata recorded.
pub(crate) struct ProofInputs<'a, const W: usize> {
    pub inputs: &'a SparseInputs<W>,
    pub origins: &'a [Arc<str>],
    pub affected: &'a [bool],
    pub derivations: Option<&'a Derivations<W>>,
}

pub(crate) fn prove<'a, const W: usize>(
    data: &'a ModelData<W>,
    db: &'a Db<'a, W>,
    cx: &mut EvalCx,
    query: ProofInputs<'a, W>,
    fact: &Fact,
) -> Result<Proof, ExplainError> {
    if !data.with_ranks {
        return Err(ExplainError::NoProvenance);
    }
    let (rel, t) = encode_fact(data, &cx.symbols, fact)?;
    let Some(t) = t.filter(|t| db.contains(rel, t)) else {
        return Err(ExplainError::NotHolds(fact.to_string()));
    };
    let mut p = Prover {
        data,
        db,
        query_inputs: query.inputs,
        query_origins: query.origins,
        affected: query.affected,
        derivations: query.derivations,
        steps: Vec::new(),
        built: Vec::new(),
    };
    // First choose a derivation for every fact involved (each once), then write the tree.
    p.derive(rel, &t, cx);
    p.built = vec![None; p.steps.len()];
    let root = p.build(rel, &t, cx);
    // The prover's record of written proofs holds the root too.
    drop(p);
    Ok(Arc::try_unwrap(root).unwrap_or_else(|shared| (*shared).clone()))
}

impl<'a, const W: usize> Prover<'a, W> {
    fn input_origin(&self, rel: RelId, t: &Row<W>) -> Option<Arc<str>> {
        let find = |part: Option<&InputPart<W>>, origins: &[Arc<str>]| {
            let part = part?;
            let i = part.binary_search_by(|(u, _)| u.cmp(t)).ok()?;
            origins.get(part[i].1 as usize).cloned()
        };
        // The model's input facts are inputs of every query too (recomputed relations are
        // seeded with them).
        if let Some(o) = find(self.data.inputs.get(rel), &self.data.origins) {
            return Some(o);
        }
        find(sparse_input(self.query_inputs, rel), self.query_origins)
    }

    fn step_index(&self, rel: RelId, t: &Row<W>) -> Option<usize> {
        self.steps
            .iter()
            .position(|((r, u), _)| *r == rel && u == t)
    }

    /// Whether a fact's proof is the same in every query on this model (its relation is not
    /// reached by the request), so it can be shared through the model's proof cache.
    fn shareable(&self, rel: RelId) -> bool {
        !self.affected.get(rel).copied().unwrap_or(false)
    }

    fn cached(&self, rel: RelId, t: &Row<W>) -> Option<Arc<Proof>> {
        if !self.shareable(rel) {
            return None;
        }
        self.data.proof_cache.read().ok()?.get(&(rel, *t)).cloned()
    }

    fn derive(&mut self, rel: RelId, t: &Row<W>, cx: &mut EvalCx) {
        if self.step_index(rel, t).is_some() || self.cached(rel, t).is_some() {
            return;
        }
        if let Some(origin) = self.input_origin(rel, t) {
            self.steps.push(((rel, *t), Step::Input(origin)));
            return;
        }
        // A tuple of a query's one-pass stratum: the evaluation recorded its derivation.
        let recorded = self
            .derivations
            .and_then(|d| d.get(rel, t, &self.data.rule_vars))
            .and_then(|(rule, env)| {
                let premises = self.premises_of(rule, env)?;
                Some(Step::Rule {
                    rule,
                    env: Cow::Borrowed(env),
                    premises,
                })
            });
        let step = match recorded {
            Some(step) => {
                // The recorded derivation is the one the search would choose (checked in
                // debug builds, so that every test proving a query's fact checks it).
                #[cfg(debug_assertions)]
                if let (
                    Step::Rule {
                        rule,
                        env,
                        premises,
                    },
                    Step::Rule {
                        rule: r2,
                        env: e2,
                        premises: p2,
                    },
                ) = (&step, self.choose(rel, t, cx))
                {
                    debug_assert_eq!((*rule, &**env, premises), (r2, &*e2, &p2));
                } else {
                    debug_assert!(false, "the search found no derivation for a recorded one");
                }
                step
            }
            None => self.choose(rel, t, cx),
        };
        let at = self.steps.len();
        let n = match &step {
            Step::Rule { premises, .. } => premises.len(),
            Step::Input(_) | Step::Unexplained => 0,
        };
        self.steps.push(((rel, *t), step));
        for k in 0..n {
            let Step::Rule { premises, .. } = &self.steps[at].1 else {
                break;
            };
            let (r, u) = premises[k];
            self.derive(r, &u, cx);
        }
    }

    /// The premises of a recorded rule instance: for each positive atom, in body order, the
    /// tuple it matched. An atom of variables and constants is its own tuple; one with `_`
    /// takes the tuple the proof search would find first (the model's part before the
    /// query's, each in tuple order; with every variable bound the atoms match
    /// independently). `None` if no tuple matches (the evaluation recorded something else).
    fn premises_of(&self, rule: usize, env: &[u32]) -> Option<Vec<(RelId, Row<W>)>> {
        let rule = &self.data.rules[rule];
        let mut out = Vec::new();
        for lit in &rule.lits {
            let CLit::Pos(a) = lit else { continue };
            let mut t = [0u32; W];
            let mut cols = [0usize; W];
            let mut key = [0u32; W];
            let mut n = 0;
            for (c, arg) in a.args.iter().enumerate() {
                let slot = match arg {
                    CArg::Var(v) => env[*v],
                    CArg::Const(k) => *k,
                    CArg::Wild | CArg::Expr(_) => continue,
                };
                t[c] = slot;
                cols[n] = c;
                key[n] = slot;
                n += 1;
            }
            if n < a.args.len() {
                let cols = &cols[..n];
                t = self
                    .db
                    .parts(a.rel)
                    .into_iter()
                    .flatten()
                    .find_map(|part| {
                        if part.len() <= 32 {
                            part.tuples
                                .elements
                                .iter()
                                .find(|u| cols.iter().zip(&key).all(|(&c, k)| u[c] == *k))
                                .copied()
                        } else {
                            let ix = part.index(cols);
                            part.lookup(&ix, &key).first().map(|(_, u)| *u)
                        }
                    })?;
            }
            out.push((a.rel, t));
        }
        Some(out)
    }

    /// The derivation of a fact: among instances of its rules whose premises rank below it,
    /// the one of the rule with the smallest id, then with the smallest bindings.
    fn choose(&self, rel: RelId, t: &Row<W>, cx: &mut EvalCx) -> Step<'a, W> {
        let ir = self.data.program.ir();
        let my_rank = rank_of(self.data, self.db, rel, t);
        // One pair of buffers for every rule tried.
        let mut env: Vec<u32> = Vec::new();
        let mut bound: Vec<bool> = Vec::new();
        for &ri in &self.data.rules_by_id[rel] {
            let rule = &self.data.rules[ri];
            env.clear();
            env.resize(rule.nvars, 0);
            bound.clear();
            bound.resize(rule.nvars, false);
            if !unify_head(&rule.head, t, &mut env, &mut bound) {
                continue;
            }
            let accept = |r: RelId, part: &Part<W>, u: &Row<W>| {
                let s = ir.stratum_of[r];
                s < my_rank.0 || part.rank(u).unwrap_or(0) < my_rank.1
            };
            let vars = &ir.rules[ri].vars;
            let head_exprs = &rule.head;
            let mut best: Option<Instance<W>> = None;
            let mut trail = Vec::new();
            eval::search_with(
                &rule.lits,
                0,
                &mut env,
                &mut bound,
                self.db,
                cx,
                Some(&accept),
                &mut trail,
                &mut |env, cx, trail| {
                    // Heads with expressions are checked once the body has bound everything.
                    for (i, e) in head_exprs.iter().enumerate() {
                        if !matches!(e, CExpr::Var(_) | CExpr::Const(_))
                            && e.eval(env, cx) != Some(t[i])
                        {
                            return true;
                        }
                    }
                    let better = best
                        .as_ref()
                        .is_none_or(|(b, _)| cmp_bindings(env, b, vars, &cx.symbols).is_lt());
                    if better {
                        best = Some((env.to_vec(), trail.to_vec()));
                    }
                    true
                },
            );
            if let Some((env, premises)) = best {
                return Step::Rule {
                    rule: ri,
                    env: Cow::Owned(env),
                    premises,
                };
            }
        }
        Step::Unexplained
    }

    fn build(&mut self, rel: RelId, t: &Row<W>, cx: &mut EvalCx) -> Arc<Proof> {
        if let Some(p) = self.cached(rel, t) {
            return p;
        }
        let Some(i) = self.step_index(rel, t) else {
            // Unreachable for facts the evaluator derived; say so rather than invent a proof.
            return Arc::new(Proof {
                fact: decode_fact(self.data, &cx.symbols, rel, t),
                step: ProofStep::Input {
                    origin: Arc::from("unexplained"),
                },
            });
        };
        // A fact reached twice in one proof (an allowed request's rule application, say) is
        // written once and shared.
        if let Some(p) = &self.built[i] {
            return p.clone();
        }
        let proof = Arc::new(self.build_step(i, rel, t, cx));
        self.built[i] = Some(proof.clone());
        if self.shareable(rel)
            && let Ok(mut cache) = self.data.proof_cache.write()
        {
            cache.insert((rel, *t), proof.clone());
        }
        proof
    }

    fn build_step(&mut self, i: usize, rel: RelId, t: &Row<W>, cx: &mut EvalCx) -> Proof {
        let fact = decode_fact(self.data, &cx.symbols, rel, t);
        // Each step is written once (see `built`): its buffers can be taken.
        let (ri, env, premises) = match std::mem::replace(&mut self.steps[i].1, Step::Unexplained) {
            Step::Input(origin) => {
                return Proof {
                    fact,
                    step: ProofStep::Input { origin },
                };
            }
            Step::Unexplained => {
                return Proof {
                    fact,
                    step: ProofStep::Input {
                        origin: Arc::from("unexplained"),
                    },
                };
            }
            Step::Rule {
                rule,
                env,
                premises,
            } => (rule, env, premises),
        };
        let data = self.data;
        let ir = data.program.ir();
        let ir_rule = &ir.rules[ri];
        let rule = &data.rules[ri];
        let names = &data.names;
        let bindings: BTreeMap<Arc<str>, Value> = names.bindings[ri]
            .iter()
            .map(|(v, name)| {
                (
                    name.clone(),
                    decode(env[*v], ir_rule.vars[*v].ty, &cx.symbols),
                )
            })
            .collect();
        let premises: Vec<Arc<Proof>> = premises
            .iter()
            .map(|(r, u)| self.build(*r, u, cx))
            .collect();
        let mut absent = Vec::new();
        for lit in &rule.lits {
            if let CLit::Neg(a) = lit {
                let info = &ir.relations[a.rel];
                let values = a
                    .args
                    .iter()
                    .enumerate()
                    .map(|(c, arg)| {
                        let slot = match arg {
                            CArg::Wild => return None,
                            CArg::Var(v) => env[*v],
                            CArg::Const(k) => *k,
                            CArg::Expr(e) => e.eval(&env, cx)?,
                        };
                        Some(decode(slot, info.types[c], &cx.symbols))
                    })
                    .collect();
                absent.push(Absent {
                    relation: names.relations[a.rel].clone(),
                    values,
                });
            }
        }
        Proof {
            fact,
            step: ProofStep::Rule {
                rule: names.rules[ri].clone(),
                head: ir_rule.head_index,
                disjunct: ir_rule.disjunct,
                line: ir_rule.line,
                bindings,
                premises,
                absent,
            },
        }
    }
}

/// A rule instance: its variables' slots and the tuples its positive atoms matched.
type Instance<const W: usize> = (Vec<u32>, Vec<(RelId, Row<W>)>);

/// Orders two bindings of one rule by value, variable by variable (aggregate-local variables
/// left out), without decoding anything into owned values.
pub(crate) fn cmp_bindings(
    a: &[u32],
    b: &[u32],
    vars: &[crate::ir::Var],
    symbols: &Interner,
) -> std::cmp::Ordering {
    for (v, var) in vars.iter().enumerate() {
        if var.local || a[v] == b[v] {
            continue;
        }
        let ord = match var.ty {
            crate::Type::Symbol => symbols
                .resolve(a[v])
                .as_bytes()
                .cmp(symbols.resolve(b[v]).as_bytes()),
            ty => crate::functions::cmp_numeric(ty, a[v], b[v]),
        };
        if ord.is_ne() {
            return ord;
        }
    }
    std::cmp::Ordering::Equal
}

/// Binds head variables from a tuple; `false` if a constant or repeated variable disagrees.
fn unify_head<const W: usize>(
    head: &[CExpr],
    t: &Row<W>,
    env: &mut [u32],
    bound: &mut [bool],
) -> bool {
    for (i, e) in head.iter().enumerate() {
        match e {
            CExpr::Var(v) => {
                if bound[*v] && env[*v] != t[i] {
                    return false;
                }
                env[*v] = t[i];
                bound[*v] = true;
            }
            CExpr::Const(c) if *c != t[i] => return false,
            _ => {}
        }
    }
    true
}

/// Rank base re-exported for the proof checker's documentation of query ranks.
pub const QUERY_ROUND_BASE: u32 = QUERY_RANK_BASE;
