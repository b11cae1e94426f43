//! The evaluate stage: one stratum at a time, semi-naively, on datafrog.
//!
//! Tuples are fixed-width arrays of 32-bit slots (`[u32; W]`, `W` chosen per program), so
//! rules compiled at run time use datafrog's statically typed `Variable`s and `Relation`s.
//! Each rule variant is a pipeline of operators (see [`crate::plan`]); every operator reads
//! the *recent* tuples of its input and adds to its output, so each round touches only new
//! tuples. Joins with complete data go through sorted indexes (datafrog leapjoins); joins of
//! two live variables use datafrog's variable join. Negation is a lookup in a sorted
//! projection of a complete lower-stratum relation (datafrog 2.0.1's `Relation::from_antijoin`
//! is broken; this is the same gallop-and-drop, by binary search).

use rustc_hash::FxHashMap as HashMap;
use std::cell::RefCell;
use std::sync::{Arc, RwLock};

use datafrog::{Iteration, Relation, RelationLeaper, ValueFilter, Variable};

use crate::ast::AggKind;
use crate::functions::{self, cmp_numeric};
use crate::ir::RelId;
use crate::plan::{
    CArg, CAtom, CExpr, CLit, CRule, Emit, EvalCx, KeySrc, Match, Op, RulePlan, Which,
};
use crate::value::Type;
use crate::{EvalError, Limits};

/// A tuple or a row of variable values.
pub(crate) type Row<const W: usize> = [u32; W];

type Index<const W: usize> = Relation<(Row<W>, Row<W>)>;

/// A complete set of tuples of one relation, with the round each was first derived in and
/// indexes built on demand.
pub(crate) struct Part<const W: usize> {
    pub tuples: Relation<Row<W>>,
    /// Round of first derivation per tuple (aligned with `tuples`); empty when not recorded.
    pub ranks: Vec<u32>,
    indexes: RwLock<HashMap<Vec<usize>, Arc<Index<W>>>>,
    projections: RwLock<HashMap<Vec<usize>, Arc<Vec<Row<W>>>>>,
}

impl<const W: usize> Part<W> {
    pub(crate) fn new(tuples: Relation<Row<W>>, ranks: Vec<u32>) -> Self {
        Part {
            tuples,
            ranks,
            indexes: RwLock::new(HashMap::default()),
            projections: RwLock::new(HashMap::default()),
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.tuples.elements.len()
    }

    pub(crate) fn contains(&self, t: &Row<W>) -> bool {
        self.tuples.elements.binary_search(t).is_ok()
    }

    pub(crate) fn rank(&self, t: &Row<W>) -> Option<u32> {
        let i = self.tuples.elements.binary_search(t).ok()?;
        Some(self.ranks.get(i).copied().unwrap_or(0))
    }

    /// The tuples keyed by `cols` (datafrog `(key, tuple)` pairs, sorted).
    pub(crate) fn index(&self, cols: &[usize]) -> Arc<Index<W>> {
        if let Ok(map) = self.indexes.read()
            && let Some(ix) = map.get(cols)
        {
            return ix.clone();
        }
        let ix = Arc::new(Relation::from_vec(
            self.tuples
                .elements
                .iter()
                .map(|t| (project(t, cols), *t))
                .collect(),
        ));
        if let Ok(mut map) = self.indexes.write() {
            map.insert(cols.to_vec(), ix.clone());
        }
        ix
    }

    /// The tuples whose `cols` equal `key`.
    pub(crate) fn lookup<'a>(&self, ix: &'a Index<W>, key: &Row<W>) -> &'a [(Row<W>, Row<W>)] {
        let _ = self;
        let start = ix.elements.partition_point(|(k, _)| k < key);
        let end = start + ix.elements[start..].partition_point(|(k, _)| k == key);
        &ix.elements[start..end]
    }

    /// Whether some tuple has `key` in `cols`.
    pub(crate) fn has_projection(&self, cols: &[usize], key: &Row<W>) -> bool {
        let proj = {
            let found = self
                .projections
                .read()
                .ok()
                .and_then(|m| m.get(cols).cloned());
            match found {
                Some(p) => p,
                None => {
                    let mut v: Vec<Row<W>> = self
                        .tuples
                        .elements
                        .iter()
                        .map(|t| project(t, cols))
                        .collect();
                    v.sort_unstable();
                    v.dedup();
                    let p = Arc::new(v);
                    if let Ok(mut m) = self.projections.write() {
                        m.insert(cols.to_vec(), p.clone());
                    }
                    p
                }
            }
        };
        proj.binary_search(key).is_ok()
    }
}

/// Projects a tuple onto columns, left-aligned, zero-padded.
pub(crate) fn project<const W: usize>(t: &Row<W>, cols: &[usize]) -> Row<W> {
    let mut k = [0u32; W];
    for (i, &c) in cols.iter().enumerate() {
        k[i] = t[c];
    }
    k
}

/// What a stratum evaluation can read besides its own live relations.
pub(crate) struct Db<'a, const W: usize> {
    /// The model's parts, per relation (absent when materialising).
    pub model: Option<&'a [Part<W>]>,
    /// Whether the model's part of a relation is still valid for this evaluation.
    pub model_valid: &'a [bool],
    /// Parts completed earlier in this evaluation.
    pub local: &'a [Option<Part<W>>],
}

impl<const W: usize> Db<'_, W> {
    pub(crate) fn part(&self, rel: RelId, which: Which) -> Option<&Part<W>> {
        match which {
            Which::Model => {
                if self.model_valid.get(rel).copied().unwrap_or(false) {
                    self.model.and_then(|m| m.get(rel))
                } else {
                    None
                }
            }
            Which::Local => self.local.get(rel).and_then(Option::as_ref),
        }
    }

    /// Every complete part of a relation.
    pub(crate) fn parts(&self, rel: RelId) -> [Option<&Part<W>>; 2] {
        [self.part(rel, Which::Model), self.part(rel, Which::Local)]
    }

    pub(crate) fn contains(&self, rel: RelId, t: &Row<W>) -> bool {
        self.parts(rel).iter().flatten().any(|p| p.contains(t))
    }
}

/// One stratum to evaluate.
pub(crate) struct StratumJob<'a, const W: usize> {
    pub rules: &'a [CRule],
    pub plans: &'a [&'a RulePlan],
    /// Relations derived in this stratum.
    pub relations: &'a [RelId],
    /// Tuples to start from, per relation of the stratum (input facts).
    pub seeds: Vec<(RelId, Vec<Row<W>>)>,
    /// Relations whose new tuples must leave out the model's (incremental relations).
    pub subtract_model: &'a [bool],
    pub record_ranks: bool,
    /// Added to round numbers (queries rank after everything in the model).
    pub rank_base: u32,
    /// Counts tuples read by full scans of the model's parts (a query should need none).
    pub model_scans: &'a std::cell::Cell<usize>,
}

/// The output of one operator, the input of the next.
enum Pipe<const W: usize> {
    Plain(Variable<Row<W>>),
    Keyed(Variable<(Row<W>, Row<W>)>),
    Head,
}

/// Where an operator's results go.
struct Target<'a, const W: usize> {
    pipe: &'a Pipe<W>,
    head: Option<&'a Variable<Row<W>>>,
}

/// Evaluates a stratum to a fixpoint and returns the complete parts it derived.
pub(crate) fn run_stratum<const W: usize>(
    job: StratumJob<'_, W>,
    db: &Db<'_, W>,
    cx: &RefCell<EvalCx>,
    limits: &Limits,
    facts_so_far: &mut usize,
) -> Result<Vec<(RelId, Part<W>)>, EvalError> {
    let mut iteration = Iteration::new();
    // Relations in a BTreeMap-like fixed order (the stratum's order) for determinism of work.
    let mut vars: Vec<(RelId, Variable<Row<W>>)> = Vec::new();
    for &r in job.relations {
        vars.push((r, iteration.variable::<Row<W>>("relation")));
    }
    let var_of = |vars: &[(RelId, Variable<Row<W>>)], r: RelId| -> Option<usize> {
        vars.iter().position(|(x, _)| *x == r)
    };
    for (r, tuples) in job.seeds {
        if let Some(i) = var_of(&vars, r) {
            vars[i].1.insert(Relation::from_vec(tuples));
        }
    }
    type MirrorKey = (RelId, Vec<usize>, Vec<(usize, usize)>);
    let mut mirrors: Vec<(MirrorKey, Variable<(Row<W>, Row<W>)>)> = Vec::new();
    let mut pipes: Vec<Vec<Pipe<W>>> = Vec::new();
    for plan in job.plans {
        let mut ps = Vec::new();
        for op in &plan.ops {
            ps.push(match op.out() {
                Emit::Plain(_) => Pipe::Plain(iteration.variable("pipe")),
                Emit::Keyed(..) => Pipe::Keyed(iteration.variable("pipe")),
                Emit::Head => Pipe::Head,
            });
            if let Op::Join { m, .. } = op {
                let key = (m.rel, m.key_cols.clone(), m.eqs.clone());
                if !mirrors.iter().any(|(k, _)| *k == key) {
                    mirrors.push((key, iteration.variable("mirror")));
                }
            }
        }
        pipes.push(ps);
    }
    let mut env: Vec<u32> = Vec::new();

    // Operators over complete data, and rules without positive atoms, run once up front.
    for (pi, plan) in job.plans.iter().enumerate() {
        let rule = &job.rules[plan.rule];
        let head = var_of(&vars, rule.head_rel).map(|i| &vars[i].1);
        let target = Target {
            pipe: &pipes[pi][0],
            head,
        };
        match &plan.ops[0] {
            Op::Scan { m, filters, out }
                if !(m.which == Which::Local && var_of(&vars, m.rel).is_some()) =>
            {
                if let Some(part) = db.part(m.rel, m.which) {
                    if m.which == Which::Model {
                        job.model_scans.set(job.model_scans.get() + part.len());
                    }
                    let mut cxm = cx.borrow_mut();
                    run_scan(
                        rule,
                        m,
                        filters,
                        out,
                        &part.tuples.elements,
                        db,
                        &mut cxm,
                        &mut env,
                        &target,
                        job.subtract_model,
                    );
                }
            }
            Op::Map { filters, out } => {
                let mut cxm = cx.borrow_mut();
                run_map(
                    rule,
                    filters,
                    out,
                    &[],
                    &[[0u32; W]],
                    db,
                    &mut cxm,
                    &mut env,
                    &target,
                    job.subtract_model,
                );
            }
            _ => {}
        }
    }

    // Per operator, what does not change between rounds: indexes, key and output sources,
    // mirror positions.
    let mut prepared: Vec<Vec<Prepared<W>>> = Vec::with_capacity(job.plans.len());
    for plan in job.plans {
        let rule = &job.rules[plan.rule];
        let mut ps = Vec::with_capacity(plan.ops.len());
        for (oi, op) in plan.ops.iter().enumerate() {
            let in_layout: &[usize] = match oi.checked_sub(1).map(|p| plan.ops[p].out()) {
                Some(Emit::Plain(l) | Emit::Keyed(_, l)) => l,
                _ => &[],
            };
            ps.push(match op {
                Op::Lookup { m, out } => match db.part(m.rel, m.which) {
                    Some(part) => Prepared::Lookup {
                        ix: part.index(&m.key_cols),
                        key: m
                            .key
                            .iter()
                            .map(|k| match k {
                                KeySrc::Const(c) => Src::Const(*c),
                                KeySrc::Var(v) => in_layout
                                    .iter()
                                    .position(|x| x == v)
                                    .map_or(Src::Const(0), Src::In),
                            })
                            .collect(),
                        srcs: sources_for(out, in_layout, m, rule),
                    },
                    None => Prepared::Skip,
                },
                Op::Join { m, out } => {
                    let key = (m.rel, m.key_cols.clone(), m.eqs.clone());
                    match mirrors.iter().position(|(k, _)| *k == key) {
                        Some(mirror) => Prepared::Join {
                            mirror,
                            srcs: sources_for(out, in_layout, m, rule),
                        },
                        None => Prepared::Skip,
                    }
                }
                Op::Scan { m, .. } => match var_of(&vars, m.rel) {
                    Some(i) if m.which == Which::Local => Prepared::Scan { var: i },
                    _ => Prepared::Skip,
                },
                Op::Map { .. } => Prepared::Map,
            });
        }
        prepared.push(ps);
    }

    let mut round: u32 = 0;
    let mut rank_log: Vec<Vec<(Row<W>, u32)>> = vec![Vec::new(); vars.len()];
    while iteration.changed() {
        round += 1;
        if round as usize > limits.max_iterations {
            return Err(EvalError::IterationLimit {
                limit: limits.max_iterations,
            });
        }
        if let Some(deadline) = &limits.deadline
            && deadline()
        {
            return Err(EvalError::Deadline);
        }
        for (i, (_, v)) in vars.iter().enumerate() {
            let recent = v.recent.borrow();
            *facts_so_far += recent.len();
            if job.record_ranks {
                rank_log[i].extend(recent.iter().map(|t| (*t, job.rank_base + round)));
            }
        }
        if *facts_so_far > limits.max_facts {
            return Err(EvalError::FactLimit {
                limit: limits.max_facts,
            });
        }
        // Mirrors follow their relations, one round behind.
        for ((rel, cols, eqs), mirror) in &mirrors {
            if let Some(i) = var_of(&vars, *rel) {
                let recent = vars[i].1.recent.borrow();
                let keyed: Vec<(Row<W>, Row<W>)> = recent
                    .iter()
                    .filter(|t| eqs.iter().all(|&(a, b)| t[a] == t[b]))
                    .map(|t| (project(t, cols), *t))
                    .collect();
                mirror.insert(Relation::from_vec(keyed));
            }
        }
        for (pi, plan) in job.plans.iter().enumerate() {
            let rule = &job.rules[plan.rule];
            let head = var_of(&vars, rule.head_rel).map(|i| &vars[i].1);
            for (oi, op) in plan.ops.iter().enumerate() {
                let target = Target {
                    pipe: &pipes[pi][oi],
                    head,
                };
                let input = oi
                    .checked_sub(1)
                    .map(|p| (&pipes[pi][p], plan.ops[p].out()));
                match (op, &prepared[pi][oi]) {
                    (Op::Scan { m, filters, out }, Prepared::Scan { var }) => {
                        let recent = vars[*var].1.recent.borrow();
                        let mut cxm = cx.borrow_mut();
                        run_scan(
                            rule,
                            m,
                            filters,
                            out,
                            &recent.elements,
                            db,
                            &mut cxm,
                            &mut env,
                            &target,
                            job.subtract_model,
                        );
                    }
                    (Op::Map { filters, out }, Prepared::Map) => {
                        let Some((Pipe::Plain(input), Emit::Plain(layout))) = input else {
                            continue;
                        };
                        let recent = input.recent.borrow();
                        let mut cxm = cx.borrow_mut();
                        run_map(
                            rule,
                            filters,
                            out,
                            layout,
                            &recent.elements,
                            db,
                            &mut cxm,
                            &mut env,
                            &target,
                            job.subtract_model,
                        );
                    }
                    (Op::Lookup { m, .. }, Prepared::Lookup { ix, key, srcs }) => {
                        let Some((Pipe::Plain(input), _)) = input else {
                            continue;
                        };
                        run_lookup(m, input, ix, key, srcs, &target);
                    }
                    (Op::Join { .. }, Prepared::Join { mirror, srcs }) => {
                        let Some((Pipe::Keyed(input), _)) = input else {
                            continue;
                        };
                        let mirror = &mirrors[*mirror].1;
                        // join: out(values) :- input(key, row), mirror(key, tuple).
                        match target.pipe {
                            Pipe::Plain(o) => o.from_join(input, mirror, |_, row, t| {
                                build_row(&srcs.values, row, t)
                            }),
                            Pipe::Keyed(o) => o.from_join(input, mirror, |_, row, t| {
                                (
                                    build_row(&srcs.key, row, t),
                                    build_row(&srcs.values, row, t),
                                )
                            }),
                            Pipe::Head => {
                                if let Some(h) = target.head {
                                    h.from_join(input, mirror, |_, row, t| {
                                        build_row(&srcs.values, row, t)
                                    });
                                }
                            }
                        }
                    }
                    _ => {}
                }
            }
        }
    }

    let mut out = Vec::new();
    for (i, (r, v)) in vars.into_iter().enumerate() {
        let mut rel = v.complete();
        if job.subtract_model.get(r).copied().unwrap_or(false)
            && let Some(mp) = db.part(r, Which::Model)
        {
            rel.elements.retain(|t| !mp.contains(t));
        }
        let ranks = if job.record_ranks {
            let mut log = std::mem::take(&mut rank_log[i]);
            log.sort_unstable();
            let mut ranks = Vec::with_capacity(rel.elements.len());
            let mut j = 0;
            for t in &rel.elements {
                while j < log.len() && log[j].0 < *t {
                    j += 1;
                }
                ranks.push(log.get(j).filter(|(u, _)| u == t).map_or(0, |(_, r)| *r));
            }
            ranks
        } else {
            Vec::new()
        };
        out.push((r, Part::new(rel, ranks)));
    }
    Ok(out)
}

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
        let mut t = [0u32; W];
        for (c, e) in rule.head.iter().enumerate() {
            match e.eval(env, cx) {
                Some(x) => t[c] = x,
                None => return,
            }
        }
        if subtract_model.get(rule.head_rel).copied().unwrap_or(false)
            && db
                .part(rule.head_rel, Which::Model)
                .is_some_and(|p| p.contains(&t))
        {
            return;
        }
        out.push(t);
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

/// Where each output slot of a join comes from.
#[derive(Clone, Copy)]
enum Src {
    In(usize),
    Tup(usize),
    Const(u32),
}

struct JoinSources {
    key: Vec<Src>,
    values: Vec<Src>,
}

fn src_of_var(v: usize, in_layout: &[usize], m: &Match) -> Src {
    if let Some(p) = in_layout.iter().position(|&x| x == v) {
        return Src::In(p);
    }
    if let Some(&(col, _)) = m.binds.iter().find(|&&(_, w)| w == v) {
        return Src::Tup(col);
    }
    if let Some(i) = m.key.iter().position(|k| *k == KeySrc::Var(v)) {
        return Src::Tup(m.key_cols[i]);
    }
    Src::Const(0)
}

fn sources_for(out: &Emit, in_layout: &[usize], m: &Match, rule: &CRule) -> JoinSources {
    let var = |v: usize| src_of_var(v, in_layout, m);
    let key = |k: &KeySrc| match k {
        KeySrc::Var(v) => var(*v),
        KeySrc::Const(c) => Src::Const(*c),
    };
    match out {
        Emit::Plain(l) => JoinSources {
            key: Vec::new(),
            values: l.iter().map(|&v| var(v)).collect(),
        },
        Emit::Keyed(k, l) => JoinSources {
            key: k.iter().map(key).collect(),
            values: l.iter().map(|&v| var(v)).collect(),
        },
        Emit::Head => JoinSources {
            key: Vec::new(),
            values: rule
                .head
                .iter()
                .map(|e| match e {
                    CExpr::Var(v) => var(*v),
                    CExpr::Const(c) => Src::Const(*c),
                    // The planner routes heads with expressions through a Map.
                    _ => Src::Const(0),
                })
                .collect(),
        },
    }
}

fn build_row<const W: usize>(srcs: &[Src], row: &Row<W>, t: &Row<W>) -> Row<W> {
    let mut out = [0u32; W];
    for (i, s) in srcs.iter().enumerate() {
        out[i] = match *s {
            Src::In(p) => row[p],
            Src::Tup(c) => t[c],
            Src::Const(c) => c,
        };
    }
    out
}

/// What an operator keeps between rounds.
enum Prepared<const W: usize> {
    Scan {
        var: usize,
    },
    Map,
    Lookup {
        ix: Arc<Index<W>>,
        key: Vec<Src>,
        srcs: JoinSources,
    },
    Join {
        mirror: usize,
        srcs: JoinSources,
    },
    Skip,
}

/// lookup: out(values) :- input(row), part(tuple), tuple[key_cols] = key(row), eqs hold.
fn run_lookup<const W: usize>(
    m: &Match,
    input: &Variable<Row<W>>,
    ix: &Index<W>,
    key: &[Src],
    srcs: &JoinSources,
    target: &Target<'_, W>,
) {
    let keyf = |row: &Row<W>| build_row(key, row, row);
    let eqs = &m.eqs;
    let filter =
        ValueFilter::from(|_row: &Row<W>, t: &Row<W>| eqs.iter().all(|&(a, b)| t[a] == t[b]));
    match target.pipe {
        Pipe::Plain(o) => o.from_leapjoin(input, (ix.extend_with(keyf), filter), |row, t| {
            build_row(&srcs.values, row, t)
        }),
        Pipe::Keyed(o) => o.from_leapjoin(input, (ix.extend_with(keyf), filter), |row, t| {
            (
                build_row(&srcs.key, row, t),
                build_row(&srcs.values, row, t),
            )
        }),
        Pipe::Head => {
            if let Some(h) = target.head {
                h.from_leapjoin(input, (ix.extend_with(keyf), filter), |row, t| {
                    build_row(&srcs.values, row, t)
                });
            }
        }
    }
}

/// Emits the current binding `env` to the target. Fallible (head expressions).
#[allow(clippy::too_many_arguments)]
fn emit<const W: usize>(
    rule: &CRule,
    out: &Emit,
    env: &[u32],
    db: &Db<'_, W>,
    cx: &mut EvalCx,
    subtract_model: &[bool],
    plain: &mut Vec<Row<W>>,
    keyed: &mut Vec<(Row<W>, Row<W>)>,
) {
    match out {
        Emit::Plain(l) => {
            let mut r = [0u32; W];
            for (i, &v) in l.iter().enumerate() {
                r[i] = env[v];
            }
            plain.push(r);
        }
        Emit::Keyed(k, l) => {
            let mut key = [0u32; W];
            for (i, s) in k.iter().enumerate() {
                key[i] = match s {
                    KeySrc::Var(v) => env[*v],
                    KeySrc::Const(c) => *c,
                };
            }
            let mut r = [0u32; W];
            for (i, &v) in l.iter().enumerate() {
                r[i] = env[v];
            }
            keyed.push((key, r));
        }
        Emit::Head => {
            let mut t = [0u32; W];
            for (i, e) in rule.head.iter().enumerate() {
                match e.eval(env, cx) {
                    Some(x) => t[i] = x,
                    None => return,
                }
            }
            if subtract_model.get(rule.head_rel).copied().unwrap_or(false)
                && db
                    .part(rule.head_rel, Which::Model)
                    .is_some_and(|p| p.contains(&t))
            {
                return;
            }
            plain.push(t);
        }
    }
}

fn flush<const W: usize>(target: &Target<'_, W>, plain: Vec<Row<W>>, keyed: Vec<(Row<W>, Row<W>)>) {
    match target.pipe {
        Pipe::Plain(o) => o.insert(Relation::from_vec(plain)),
        Pipe::Keyed(o) => o.insert(Relation::from_vec(keyed)),
        Pipe::Head => {
            if let Some(h) = target.head {
                h.insert(Relation::from_vec(plain));
            }
        }
    }
}

/// scan: out :- atom(tuple), filters.
#[allow(clippy::too_many_arguments)]
fn run_scan<const W: usize>(
    rule: &CRule,
    m: &Match,
    filters: &[usize],
    out: &Emit,
    tuples: &[Row<W>],
    db: &Db<'_, W>,
    cx: &mut EvalCx,
    env: &mut Vec<u32>,
    target: &Target<'_, W>,
    subtract_model: &[bool],
) {
    if tuples.is_empty() {
        return;
    }
    env.clear();
    env.resize(rule.nvars, 0);
    let mut consts: Vec<(usize, u32)> = Vec::new();
    for (i, &c) in m.key_cols.iter().enumerate() {
        if let KeySrc::Const(k) = m.key[i] {
            consts.push((c, k));
        }
    }
    let (mut plain, mut keyed) = (Vec::new(), Vec::new());
    'tuples: for t in tuples {
        if !consts.iter().all(|&(c, k)| t[c] == k) || !m.eqs.iter().all(|&(a, b)| t[a] == t[b]) {
            continue;
        }
        for &(c, v) in &m.binds {
            env[v] = t[c];
        }
        for &f in filters {
            if !apply_filter(&rule.lits[f], env, db, cx) {
                continue 'tuples;
            }
        }
        emit(
            rule,
            out,
            env,
            db,
            cx,
            subtract_model,
            &mut plain,
            &mut keyed,
        );
    }
    flush(target, plain, keyed);
}

/// map: out :- input(row), filters.
#[allow(clippy::too_many_arguments)]
fn run_map<const W: usize>(
    rule: &CRule,
    filters: &[usize],
    out: &Emit,
    in_layout: &[usize],
    rows: &[Row<W>],
    db: &Db<'_, W>,
    cx: &mut EvalCx,
    env: &mut Vec<u32>,
    target: &Target<'_, W>,
    subtract_model: &[bool],
) {
    if rows.is_empty() {
        return;
    }
    env.clear();
    env.resize(rule.nvars, 0);
    let (mut plain, mut keyed) = (Vec::new(), Vec::new());
    'rows: for row in rows {
        for (i, &v) in in_layout.iter().enumerate() {
            env[v] = row[i];
        }
        for &f in filters {
            if !apply_filter(&rule.lits[f], env, db, cx) {
                continue 'rows;
            }
        }
        emit(
            rule,
            out,
            env,
            db,
            cx,
            subtract_model,
            &mut plain,
            &mut keyed,
        );
    }
    flush(target, plain, keyed);
}

// ---- filters, shared by the pipeline, aggregates, proofs and why-not ---------------------

/// Runs a filter literal on a binding. Returns `false` when the binding is rejected.
pub(crate) fn apply_filter<const W: usize>(
    lit: &CLit,
    env: &mut [u32],
    db: &Db<'_, W>,
    cx: &mut EvalCx,
) -> bool {
    match lit {
        CLit::Pos(_) => true,
        CLit::Cmp(op, a, b, ty) => {
            let (Some(x), Some(y)) = (a.eval(env, cx), b.eval(env, cx)) else {
                return false;
            };
            let ord = if *ty == Type::Symbol {
                cx.symbols
                    .resolve(x)
                    .as_bytes()
                    .cmp(cx.symbols.resolve(y).as_bytes())
            } else {
                cmp_numeric(*ty, x, y)
            };
            functions::holds(*op, ord)
        }
        CLit::Test(f, p, s, negated) => {
            let (Some(p), Some(s)) = (p.eval(env, cx), s.eval(env, cx)) else {
                return false;
            };
            let pattern = cx.symbols.resolve(p).to_string();
            let subject = cx.symbols.resolve(s).to_string();
            cx.patterns.test(*f, &pattern, &subject) != *negated
        }
        CLit::Bind(v, e) => match e.eval(env, cx) {
            Some(x) => {
                env[*v] = x;
                true
            }
            None => false,
        },
        CLit::Neg(a) => !negated_present(a, env, db, cx),
        CLit::Agg {
            var,
            kind,
            target,
            ty,
            body,
            outer,
        } => match aggregate(*kind, target.as_ref(), *ty, body, outer, env, db, cx) {
            Some(x) => {
                env[*var] = x;
                true
            }
            None => false,
        },
    }
}

/// Whether the instance of a negated atom under `env` is present.
pub(crate) fn negated_present<const W: usize>(
    a: &CAtom,
    env: &[u32],
    db: &Db<'_, W>,
    cx: &mut EvalCx,
) -> bool {
    let mut cols = Vec::with_capacity(a.args.len());
    let mut key = [0u32; W];
    for (c, arg) in a.args.iter().enumerate() {
        let v = match arg {
            CArg::Wild => continue,
            CArg::Var(v) => env[*v],
            CArg::Const(k) => *k,
            CArg::Expr(e) => match e.eval(env, cx) {
                Some(x) => x,
                // An argument that cannot be computed matches nothing.
                None => return false,
            },
        };
        key[cols.len()] = v;
        cols.push(c);
    }
    let full = cols.len() == a.args.len();
    db.parts(a.rel).iter().flatten().any(|p| {
        if full {
            let mut t = [0u32; W];
            t[..cols.len()].copy_from_slice(&key[..cols.len()]);
            p.contains(&t)
        } else {
            p.has_projection(&cols, &key)
        }
    })
}

/// Computes an aggregate for the current outer binding.
#[allow(clippy::too_many_arguments)]
pub(crate) fn aggregate<const W: usize>(
    kind: AggKind,
    target: Option<&CExpr>,
    ty: Type,
    body: &[CLit],
    outer: &[usize],
    env: &mut [u32],
    db: &Db<'_, W>,
    cx: &mut EvalCx,
) -> Option<u32> {
    let mut count: u32 = 0;
    let mut acc: Option<u32> = None;
    let mut bound: Vec<bool> = vec![false; env.len()];
    for &v in outer {
        bound[v] = true;
    }
    let mut work = env.to_vec();
    search(body, 0, &mut work, &mut bound, db, cx, &mut |env, cx| {
        count = count.wrapping_add(1);
        if let Some(t) = target
            && let Some(x) = t.eval(env, cx)
        {
            acc = Some(match acc {
                None => x,
                Some(a) => fold(kind, ty, a, x),
            });
        }
        true
    });
    match kind {
        AggKind::Count => Some(count),
        AggKind::Sum => Some(acc.unwrap_or(if ty == Type::Float { 0f32.to_bits() } else { 0 })),
        AggKind::Min | AggKind::Max => acc,
    }
}

fn fold(kind: AggKind, ty: Type, a: u32, x: u32) -> u32 {
    match kind {
        AggKind::Sum => functions::arith(crate::ast::ArithOp::Add, ty, a, x).unwrap_or(a),
        AggKind::Min => {
            if cmp_numeric(ty, x, a).is_lt() {
                x
            } else {
                a
            }
        }
        AggKind::Max => {
            if cmp_numeric(ty, x, a).is_gt() {
                x
            } else {
                a
            }
        }
        AggKind::Count => a,
    }
}

/// Enumerates the bindings of `lits[i..]` over complete parts, depth first, calling `f` for
/// each full match. `f` returns `false` to stop. Returns `false` if stopped.
pub(crate) fn search<const W: usize>(
    lits: &[CLit],
    i: usize,
    env: &mut Vec<u32>,
    bound: &mut Vec<bool>,
    db: &Db<'_, W>,
    cx: &mut EvalCx,
    f: &mut dyn FnMut(&[u32], &mut EvalCx) -> bool,
) -> bool {
    let mut trail = Vec::new();
    search_with(
        lits,
        i,
        env,
        bound,
        db,
        cx,
        None,
        &mut trail,
        &mut |env, cx, _| f(env, cx),
    )
}

/// Accepts or rejects a matched tuple (used by proofs to keep children below their parent).
pub(crate) type Accept<'a, const W: usize> = &'a dyn Fn(RelId, &Part<W>, &Row<W>) -> bool;

/// Called with each full match: the bindings, the context and the matched tuples.
pub(crate) type MatchFn<'a, const W: usize> =
    dyn FnMut(&[u32], &mut EvalCx, &[(RelId, Row<W>)]) -> bool + 'a;

/// [`search`] that also records the matched tuples (`trail`, one per positive atom) and can
/// reject tuples.
#[allow(clippy::too_many_arguments)]
pub(crate) fn search_with<const W: usize>(
    lits: &[CLit],
    i: usize,
    env: &mut Vec<u32>,
    bound: &mut Vec<bool>,
    db: &Db<'_, W>,
    cx: &mut EvalCx,
    accept: Option<Accept<'_, W>>,
    trail: &mut Vec<(RelId, Row<W>)>,
    f: &mut MatchFn<'_, W>,
) -> bool {
    let Some(lit) = lits.get(i) else {
        return f(env, cx, trail);
    };
    match lit {
        CLit::Pos(a) => {
            // Fixed buffers: this runs for every candidate of every proof and aggregate.
            let mut cols_buf = [0usize; W];
            let mut ncols = 0;
            let mut key = [0u32; W];
            let mut binds: Vec<(usize, usize)> = Vec::new();
            let mut eqs = Vec::new();
            for (c, arg) in a.args.iter().enumerate() {
                match arg {
                    CArg::Const(k) => {
                        key[ncols] = *k;
                        cols_buf[ncols] = c;
                        ncols += 1;
                    }
                    CArg::Var(v) if bound[*v] => {
                        key[ncols] = env[*v];
                        cols_buf[ncols] = c;
                        ncols += 1;
                    }
                    CArg::Var(v) => {
                        if let Some(&(first, _)) = binds.iter().find(|(_, w)| w == v) {
                            eqs.push((first, c));
                        } else {
                            binds.push((c, *v));
                        }
                    }
                    CArg::Wild | CArg::Expr(_) => {}
                }
            }
            let cols = &cols_buf[..ncols];
            for part in db.parts(a.rel).into_iter().flatten() {
                let ix = part.index(cols);
                for (_, t) in part.lookup(&ix, &key) {
                    if !eqs.iter().all(|&(x, y)| t[x] == t[y]) {
                        continue;
                    }
                    if let Some(acc) = accept
                        && !acc(a.rel, part, t)
                    {
                        continue;
                    }
                    for &(c, v) in &binds {
                        env[v] = t[c];
                        bound[v] = true;
                    }
                    trail.push((a.rel, *t));
                    let go_on = search_with(lits, i + 1, env, bound, db, cx, accept, trail, f);
                    trail.pop();
                    for &(_, v) in &binds {
                        bound[v] = false;
                    }
                    if !go_on {
                        return false;
                    }
                }
            }
            true
        }
        other => {
            let Some(newly) = apply_bound_filter(other, env, bound, db, cx) else {
                return true;
            };
            let r = search_with(lits, i + 1, env, bound, db, cx, accept, trail, f);
            if let Some(v) = newly {
                bound[v] = false;
            }
            r
        }
    }
}

/// Runs a filter literal during a search where some variables may already be bound (by a
/// head being explained): a binding or aggregate whose variable is bound must compute the
/// same value, else the binding is rejected. Returns `None` when rejected, else the variable
/// it newly bound, if any (the caller unbinds it when backtracking).
pub(crate) fn apply_bound_filter<const W: usize>(
    lit: &CLit,
    env: &mut [u32],
    bound: &mut [bool],
    db: &Db<'_, W>,
    cx: &mut EvalCx,
) -> Option<Option<usize>> {
    let out = match lit {
        CLit::Bind(v, _) | CLit::Agg { var: v, .. } => Some(*v),
        _ => None,
    };
    match out {
        Some(v) if bound[v] => {
            let before = env[v];
            let ok = apply_filter(lit, env, db, cx) && env[v] == before;
            env[v] = before;
            ok.then_some(None)
        }
        Some(v) => {
            if !apply_filter(lit, env, db, cx) {
                return None;
            }
            bound[v] = true;
            Some(Some(v))
        }
        None => apply_filter(lit, env, db, cx).then_some(None),
    }
}
