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
) -> Result<Vec<(RelId, Part<W>)>, EvalError> {
    if let Some(deadline) = &limits.deadline
        && deadline()
    {
        return Err(EvalError::Deadline);
    }
    let mut derived: Vec<(RelId, Vec<Row<W>>)> =
        job.relations.iter().map(|&r| (r, Vec::new())).collect();
    for (r, tuples) in job.seeds {
        if let Some((_, d)) = derived.iter_mut().find(|(x, _)| *x == r) {
            d.extend(tuples);
        }
    }
    let mut cxm = cx.borrow_mut();
    let mut env = Vec::new();
    for plan in job.plans {
        let rule = &job.rules[plan.rule];
        let Some(slot) = derived.iter().position(|(r, _)| *r == rule.head_rel) else {
            continue;
        };
        // The plan's operators, flattened to atoms (with their part's index) and filters.
        let mut steps: Vec<OnceStep<'_, W>> = Vec::new();
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
                    steps.push(OnceStep::Atom {
                        m,
                        ix: part.index(&m.key_cols),
                    });
                    steps.extend(filters.iter().map(|&f| OnceStep::Filter(f)));
                }
                Op::Lookup { m, .. } | Op::Join { m, .. } => {
                    let Some(part) = db.part(m.rel, m.which) else {
                        readable = false;
                        break;
                    };
                    steps.push(OnceStep::Atom {
                        m,
                        ix: part.index(&m.key_cols),
                    });
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
            &mut env,
            db,
            &mut cxm,
            job.subtract_model,
            &mut out,
        );
        derived[slot].1 = out;
    }
    drop(cxm);
    let mut parts = Vec::with_capacity(derived.len());
    for (r, mut tuples) in derived {
        tuples.sort_unstable();
        tuples.dedup();
        if job.subtract_model.get(r).copied().unwrap_or(false)
            && let Some(mp) = db.part(r, Which::Model)
        {
            tuples.retain(|t| !mp.contains(t));
        }
        *facts_so_far += tuples.len();
        // Every premise lies in a lower stratum, so one round number serves all.
        let ranks = if job.record_ranks {
            vec![job.rank_base + 1; tuples.len()]
        } else {
            Vec::new()
        };
        parts.push((r, Part::new(Relation::from_vec(tuples), ranks)));
    }
    if *facts_so_far > limits.max_facts {
        return Err(EvalError::FactLimit {
            limit: limits.max_facts,
        });
    }
    Ok(parts)
}

/// One step of a one-pass rule evaluation.
enum OnceStep<'a, const W: usize> {
    Atom { m: &'a Match, ix: Arc<Index<W>> },
    Filter(usize),
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
        OnceStep::Atom { m, ix } => {
            let mut key = [0u32; W];
            for (k, src) in m.key.iter().enumerate() {
                key[k] = match src {
                    KeySrc::Var(v) => env[*v],
                    KeySrc::Const(c) => *c,
                };
            }
            let start = ix.elements.partition_point(|(k, _)| *k < key);
            for (k, t) in &ix.elements[start..] {
                if *k != key {
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
