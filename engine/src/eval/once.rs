//! One-pass evaluation of a stratum that does not read itself: what queries use, where a
//! handful of request tuples needs no fixpoint.

use std::cell::RefCell;
use std::sync::Arc;

use datafrog::Relation;

use super::{Db, Index, Part, Row, StratumJob, apply_filter};
use crate::ir::RelId;
use crate::plan::{CRule, EvalCx, KeySrc, Match, Op, Which};
use crate::{EvalError, Limits};

/// Evaluates a stratum none of whose rules reads the stratum itself, in one pass: every body
/// reads complete parts only, so each rule variant is a nested loop of indexed lookups from
/// its first atom. Used for queries, where setting up a datafrog iteration would cost more
/// than the few tuples a request derives.
pub(crate) fn run_stratum_once<const W: usize>(
    job: StratumJob<'_, W>,
    db: &Db<'_, W>,
    cx: &RefCell<EvalCx>,
    limits: &Limits,
    facts_so_far: &mut usize,
    scratch: &mut OnceScratch<W>,
) -> Result<Vec<(RelId, Part<W>)>, EvalError> {
    if let Some(deadline) = &limits.deadline
        && deadline()
    {
        return Err(EvalError::Deadline);
    }
    let derived = &mut scratch.derived;
    derived.clear();
    derived.extend(job.relations.iter().map(|&r| (r, Vec::new())));
    for (r, tuples) in job.seeds {
        if let Some((_, d)) = derived.iter_mut().find(|(x, _)| *x == r) {
            d.extend(tuples);
        }
    }
    let mut cxm = cx.borrow_mut();
    let env = &mut scratch.env;
    // The plan's operators, flattened to atoms (with their part's index) and filters; one
    // buffer for every plan of the stratum.
    let mut steps: Vec<OnceStep<'_, W>> = Vec::new();
    for plan in job.plans {
        let rule = &job.rules[plan.rule];
        let Some(slot) = derived.iter().position(|(r, _)| *r == rule.head_rel) else {
            continue;
        };
        steps.clear();
        let mut readable = true;
        for (oi, op) in plan.ops.iter().enumerate() {
            match op {
                Op::Scan { m, filters, .. } => {
                    let Some(part) = db.part(m.rel, m.which) else {
                        readable = false;
                        break;
                    };
                    if m.which == Which::Model {
                        job.model_scans.set(job.model_scans.get() + part.len());
                    }
                    steps.push(atom_step(m, part));
                    steps.extend(filters.iter().map(|&f| OnceStep::Filter(f)));
                }
                Op::Lookup { m, .. } | Op::Join { m, .. } => {
                    let Some(part) = db.part(m.rel, m.which) else {
                        readable = false;
                        break;
                    };
                    steps.push(atom_step(m, part));
                }
                Op::Map { filters, .. } => {
                    let _ = oi;
                    steps.extend(filters.iter().map(|&f| OnceStep::Filter(f)));
                }
            }
        }
        if !readable {
            continue;
        }
        env.clear();
        env.resize(rule.nvars, 0);
        let mut out = std::mem::take(&mut derived[slot].1);
        once_search(
            rule,
            &steps,
            0,
            env,
            db,
            &mut cxm,
            job.subtract_model,
            &mut out,
        );
        derived[slot].1 = out;
    }
    drop(cxm);
    let mut parts = Vec::new(); // most strata of a query derive nothing: no allocation then
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
        parts.push((r, part));
    }
    if *facts_so_far > limits.max_facts {
        return Err(EvalError::FactLimit {
            limit: limits.max_facts,
        });
    }
    Ok(parts)
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

/// One step of a one-pass rule evaluation.
enum OnceStep<'a, const W: usize> {
    Atom {
        m: &'a Match,
        ix: Arc<Index<W>>,
    },
    /// An atom over a part too small to be worth an index: its tuples, scanned.
    Scan {
        m: &'a Match,
        tuples: &'a [Row<W>],
    },
    Filter(usize),
}

/// Parts with at most this many tuples are scanned rather than indexed. A query's own parts
/// hold the few tuples one request derives; building an index for each would cost more.
const SCAN_AT_MOST: usize = 8;

fn atom_step<'a, const W: usize>(m: &'a Match, part: &'a Part<W>) -> OnceStep<'a, W> {
    if part.len() <= SCAN_AT_MOST {
        OnceStep::Scan {
            m,
            tuples: &part.tuples.elements,
        }
    } else {
        OnceStep::Atom {
            m,
            ix: part.index(&m.key_cols),
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn once_search<const W: usize>(
    rule: &CRule,
    steps: &[OnceStep<'_, W>],
    i: usize,
    env: &mut Vec<u32>,
    db: &Db<'_, W>,
    cx: &mut EvalCx,
    subtract_model: &[bool],
    out: &mut Vec<Row<W>>,
) {
    let Some(step) = steps.get(i) else {
        if let Some(t) = super::head_tuple(rule, env, db, cx, subtract_model) {
            out.push(t);
        }
        return;
    };
    match step {
        OnceStep::Filter(f) => {
            if apply_filter(&rule.lits[*f], env, db, cx) {
                once_search(rule, steps, i + 1, env, db, cx, subtract_model, out);
            }
        }
        OnceStep::Scan { m, tuples } => {
            for t in *tuples {
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
        }
        OnceStep::Atom { m, ix } => {
            let mut key = [0u32; W];
            for (k, src) in m.key.iter().enumerate() {
                key[k] = match src {
                    KeySrc::Var(v) => env[*v],
                    KeySrc::Const(c) => *c,
                };
            }
            // Keys are zero past their columns: compare only those.
            let n = m.key.len();
            let key = &key[..n];
            let start = ix.elements.partition_point(|(k, _)| k[..n] < *key);
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
    }
}
