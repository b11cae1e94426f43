//! One-pass evaluation of a stratum that does not read itself: what queries use, where a
//! handful of request tuples needs no fixpoint.
//!
//! A query's rule variants are prepared once per query plan ([`OncePlan`]): their operators
//! flattened to atoms and filters, and the model's indexes they look up fetched up front (the
//! model never changes). What is left per query is the nested loops themselves.

use std::cell::RefCell;
use std::sync::Arc;

use datafrog::Relation;

use super::{Db, Index, Part, Row, apply_filter};
use crate::ir::{Ir, RelId};
use crate::plan::{CRule, EvalCx, KeySrc, Match, Op, RulePlan, Which};
use crate::{EvalError, Limits};

/// A rule variant prepared for one-pass evaluation.
pub(crate) struct OncePlan<const W: usize> {
    /// The rule's index.
    pub rule: usize,
    steps: Vec<OnceStep<W>>,
    /// Relations of earlier strata whose query part the variant reads: without one of them
    /// it derives nothing.
    pub reads_local: Vec<RelId>,
    /// The model relation its first operator scans whole, if any (counted in the stats).
    scans_model: Option<RelId>,
}

/// One step of a one-pass rule evaluation.
enum OnceStep<const W: usize> {
    /// An atom over a model part large enough to be indexed: the index, fetched once.
    Indexed { m: Match, ix: Arc<Index<W>> },
    /// An atom over a part found when the query runs: scanned when it is small (a query's own
    /// parts hold the few tuples one request derives), else looked up through its index.
    Part { m: Match },
    /// A filter literal.
    Filter(usize),
}

/// Parts with at most this many tuples are scanned rather than indexed. A query's own parts
/// hold the few tuples one request derives; building an index for each would cost more.
const SCAN_AT_MOST: usize = 8;

impl<const W: usize> OncePlan<W> {
    /// Prepares a variant whose model parts are `model` (complete, valid for the query).
    pub(crate) fn new(plan: &RulePlan, model: &[Part<W>]) -> Self {
        let mut steps = Vec::new();
        let mut reads_local = Vec::new();
        let mut scans_model = None;
        for (oi, op) in plan.ops.iter().enumerate() {
            let (m, filters): (Option<&Match>, &[usize]) = match op {
                Op::Scan { m, filters, .. } => (Some(m), filters),
                Op::Lookup { m, .. } | Op::Join { m, .. } => (Some(m), &[]),
                Op::Map { filters, .. } => (None, filters),
            };
            if let Some(m) = m {
                let part = (m.which == Which::Model)
                    .then(|| model.get(m.rel))
                    .flatten();
                if oi == 0 && m.which == Which::Model {
                    scans_model = Some(m.rel);
                }
                if m.which == Which::Local {
                    reads_local.push(m.rel);
                }
                steps.push(match part {
                    Some(p) if p.len() > SCAN_AT_MOST => OnceStep::Indexed {
                        m: m.clone(),
                        ix: p.index(&m.key_cols),
                    },
                    _ => OnceStep::Part { m: m.clone() },
                });
            }
            steps.extend(filters.iter().map(|&f| OnceStep::Filter(f)));
        }
        OncePlan {
            rule: plan.rule,
            steps,
            reads_local,
            scans_model,
        }
    }
}

/// A one-pass stratum of a query: its relations, the tuples they start from, its variants.
pub(crate) struct OnceJob<'a, const W: usize> {
    pub rules: &'a [CRule],
    pub plans: &'a [&'a OncePlan<W>],
    /// Relations derived in this stratum.
    pub relations: &'a [RelId],
    /// Tuples to start from, per relation of the stratum (input facts).
    pub seeds: &'a mut Vec<(RelId, Vec<Row<W>>)>,
    /// Relations whose new tuples must leave out the model's (incremental relations).
    pub subtract_model: &'a [bool],
    pub record_ranks: bool,
    /// Added to round numbers (queries rank after everything in the model).
    pub rank_base: u32,
    /// Counts tuples read by full scans of the model's parts (a query should need none).
    pub model_scans: &'a std::cell::Cell<usize>,
    /// Where to record each derived tuple's derivation, when proofs are wanted.
    pub derivations: Option<(&'a mut Derivations<W>, ProofOrder<'a>)>,
}

/// How proofs order the derivations of one tuple: by the rule's rank among the rules of its
/// head relation (by id, then head, then alternative), then by bindings in value order.
#[derive(Clone, Copy)]
pub(crate) struct ProofOrder<'a> {
    pub ir: &'a Ir,
    pub rule_rank: &'a [u32],
}

/// The derivation proofs use for each tuple a query's one-pass strata derived: among the rule
/// instances that derived it, the one of the rule with the smallest id, then with the
/// smallest bindings in value order. That is the instance the proof search would choose:
/// every premise of a one-pass stratum lies in a lower stratum, so every instance ranks below
/// its head, and the evaluation finds every instance. Only the rule and its variables are
/// kept; the premises follow from them (see `explain`).
pub(crate) struct Derivations<const W: usize> {
    /// Relation, tuple, rule, and where its variables start in `env`.
    first: Vec<(RelId, Row<W>, u32, u32)>,
    /// Variable slots of the recorded instances, back to back.
    env: Vec<u32>,
}

impl<const W: usize> Derivations<W> {
    /// Room for what one request typically derives (kept under the allocator's small sizes:
    /// a larger first allocation costs more than growing the rare query that needs it).
    pub(crate) fn for_query() -> Self {
        Derivations {
            first: Vec::with_capacity(8),
            env: Vec::with_capacity(8 * 12),
        }
    }

    /// No derivations.
    pub(crate) fn empty() -> Self {
        Derivations {
            first: Vec::new(),
            env: Vec::new(),
        }
    }

    /// The recorded derivation of a tuple: its rule and the rule's variable slots.
    pub(crate) fn get(
        &self,
        rel: RelId,
        tuple: &Row<W>,
        nvars: &[usize],
    ) -> Option<(usize, &[u32])> {
        let &(_, _, rule, at) = self
            .first
            .iter()
            .find(|(r, t, _, _)| *r == rel && t == tuple)?;
        let (rule, at) = (rule as usize, at as usize);
        Some((rule, &self.env[at..at + nvars[rule]]))
    }

    /// Records an instance of `rule` deriving `tuple` if it comes before the one recorded.
    fn offer(
        &mut self,
        order: &ProofOrder<'_>,
        rel: RelId,
        tuple: &Row<W>,
        rule: usize,
        env: &[u32],
        cx: &EvalCx,
    ) {
        let existing = self
            .first
            .iter()
            .position(|(r, t, _, _)| *r == rel && t == tuple);
        if let Some(i) = existing {
            let (_, _, theirs, at) = self.first[i];
            let (theirs, at) = (theirs as usize, at as usize);
            let ord = order.rule_rank[rule]
                .cmp(&order.rule_rank[theirs])
                .then_with(|| {
                    crate::explain::cmp_bindings(
                        env,
                        &self.env[at..at + env.len()],
                        &order.ir.rules[rule].vars,
                        &cx.symbols,
                    )
                });
            if ord.is_ge() {
                return;
            }
            // Same rule: as many slots, overwritten in place.
            if theirs == rule {
                self.env[at..at + env.len()].copy_from_slice(env);
                return;
            }
        }
        let at = self.env.len() as u32;
        self.env.extend_from_slice(env);
        match existing {
            Some(i) => self.first[i] = (rel, *tuple, rule as u32, at),
            None => self.first.push((rel, *tuple, rule as u32, at)),
        }
    }
}

/// Evaluates a stratum none of whose rules reads the stratum itself, in one pass: every body
/// reads complete parts only, so each rule variant is a nested loop of indexed lookups from
/// its first atom. Used for queries, where setting up a datafrog iteration would cost more
/// than the few tuples a request derives. Appends the parts it derived to `out`.
pub(crate) fn run_stratum_once<const W: usize>(
    mut job: OnceJob<'_, W>,
    db: &Db<'_, W>,
    cx: &RefCell<EvalCx>,
    limits: &Limits,
    facts_so_far: &mut usize,
    scratch: &mut OnceScratch<W>,
    out: &mut Vec<(RelId, Part<W>)>,
) -> Result<(), EvalError> {
    if let Some(deadline) = &limits.deadline
        && deadline()
    {
        return Err(EvalError::Deadline);
    }
    if cx.borrow().symbols.too_deep {
        return Err(EvalError::RecordDepth {
            limit: crate::value::MAX_RECORD_DEPTH,
        });
    }
    if cx.borrow().generate_exceeded {
        return Err(EvalError::GenerateLimit {
            limit: limits.max_facts,
        });
    }
    let derived = &mut scratch.derived;
    derived.clear();
    derived.extend(job.relations.iter().map(|&r| (r, Vec::new())));
    for (r, tuples) in job.seeds.drain(..) {
        if let Some((_, d)) = derived.iter_mut().find(|(x, _)| *x == r) {
            d.extend(tuples);
        }
    }
    let mut cxm = cx.borrow_mut();
    let env = &mut scratch.env;
    for plan in job.plans {
        let rule = &job.rules[plan.rule];
        let Some(slot) = derived.iter().position(|(r, _)| *r == rule.head_rel) else {
            continue;
        };
        if let Some(rel) = plan.scans_model
            && let Some(part) = db.part(rel, Which::Model)
        {
            job.model_scans.set(job.model_scans.get() + part.len());
        }
        env.clear();
        env.resize(rule.nvars, 0);
        let mut sink = Sink {
            rule_index: plan.rule,
            found: &mut derived[slot].1,
            record: job.derivations.as_mut().map(|(d, o)| (&mut **d, &*o)),
        };
        once_search(
            rule,
            &plan.steps,
            0,
            env,
            db,
            &mut cxm,
            job.subtract_model,
            &mut sink,
        );
    }
    drop(cxm);
    for (r, mut tuples) in derived.drain(..) {
        tuples.sort_unstable();
        tuples.dedup();
        if job.subtract_model.get(r).copied().unwrap_or(false)
            && let Some(mp) = db.part(r, Which::Model)
        {
            tuples.retain(|t| !mp.contains(t));
        }
        *facts_so_far += tuples.len();
        // No part for a relation the stratum derived nothing for: an absent part reads as an
        // empty one, and a query would allocate one for each of dozens of relations.
        if tuples.is_empty() {
            continue;
        }
        // Every premise lies in a lower stratum, so one round number serves all.
        let part = if job.record_ranks {
            Part::with_uniform_rank(Relation::from_vec(tuples), job.rank_base + 1)
        } else {
            Part::new(Relation::from_vec(tuples), Vec::new())
        };
        out.push((r, part));
    }
    if *facts_so_far > limits.max_facts {
        return Err(EvalError::FactLimit {
            limit: limits.max_facts,
        });
    }
    if cx.borrow().symbols.too_deep {
        return Err(EvalError::RecordDepth {
            limit: crate::value::MAX_RECORD_DEPTH,
        });
    }
    if cx.borrow().generate_exceeded {
        return Err(EvalError::GenerateLimit {
            limit: limits.max_facts,
        });
    }
    Ok(())
}

/// Buffers a query's one-pass strata share, so that each stratum does not allocate its own.
pub(crate) struct OnceScratch<const W: usize> {
    env: Vec<u32>,
    derived: Vec<(RelId, Vec<Row<W>>)>,
}

impl<const W: usize> Default for OnceScratch<W> {
    fn default() -> Self {
        OnceScratch {
            env: Vec::new(),
            derived: Vec::new(),
        }
    }
}

/// Where a variant's results go: the stratum's new tuples, and the derivations proofs use.
struct Sink<'s, const W: usize> {
    rule_index: usize,
    found: &'s mut Vec<Row<W>>,
    record: Option<(&'s mut Derivations<W>, &'s ProofOrder<'s>)>,
}

#[allow(clippy::too_many_arguments)]
fn once_search<const W: usize>(
    rule: &CRule,
    steps: &[OnceStep<W>],
    i: usize,
    env: &mut Vec<u32>,
    db: &Db<'_, W>,
    cx: &mut EvalCx,
    subtract_model: &[bool],
    out: &mut Sink<'_, W>,
) {
    let Some(step) = steps.get(i) else {
        if let Some(t) = super::head_tuple(rule, env, db, cx, subtract_model) {
            out.found.push(t);
            if let Some((derivations, order)) = &mut out.record {
                derivations.offer(order, rule.head_rel, &t, out.rule_index, env, cx);
            }
        }
        return;
    };
    let fetched;
    let (m, ix): (&Match, &Index<W>) = match step {
        OnceStep::Filter(f) => {
            if let Some((var, values)) = super::search::generated(&rule.lits[*f], env, None, cx) {
                for x in values {
                    env[var] = x;
                    once_search(rule, steps, i + 1, env, db, cx, subtract_model, out);
                }
                return;
            }
            if apply_filter(&rule.lits[*f], env, db, cx) {
                once_search(rule, steps, i + 1, env, db, cx, subtract_model, out);
            }
            return;
        }
        OnceStep::Indexed { m, ix } => (m, ix),
        OnceStep::Part { m } => {
            let Some(part) = db.part(m.rel, m.which) else {
                return;
            };
            if part.len() > SCAN_AT_MOST {
                fetched = part.index(&m.key_cols);
                (m, &fetched)
            } else {
                for t in &part.tuples.elements {
                    let key_matches = m.key_cols.iter().zip(&m.key).all(|(&c, src)| {
                        t[c] == match src {
                            KeySrc::Var(v) => env[*v],
                            KeySrc::Const(k) => *k,
                        }
                    });
                    if !key_matches || !m.eqs.iter().all(|&(a, b)| t[a] == t[b]) {
                        continue;
                    }
                    for &(c, v) in &m.binds {
                        env[v] = t[c];
                    }
                    once_search(rule, steps, i + 1, env, db, cx, subtract_model, out);
                }
                return;
            }
        }
    };
    let mut key = [0u32; W];
    for (k, src) in m.key.iter().enumerate() {
        key[k] = match src {
            KeySrc::Var(v) => env[*v],
            KeySrc::Const(c) => *c,
        };
    }
    // Keys are zero past their columns: compare only those (one column, the usual case, as
    // a number rather than a slice).
    let n = m.key.len();
    let key = &key[..n];
    let start = match key {
        [k0] => ix.elements.partition_point(|(k, _)| k[0] < *k0),
        _ => ix.elements.partition_point(|(k, _)| k[..n] < *key),
    };
    for (k, t) in &ix.elements[start..] {
        if k[..n] != *key {
            break;
        }
        if !m.eqs.iter().all(|&(a, b)| t[a] == t[b]) {
            continue;
        }
        for &(c, v) in &m.binds {
            env[v] = t[c];
        }
        once_search(rule, steps, i + 1, env, db, cx, subtract_model, out);
    }
}
