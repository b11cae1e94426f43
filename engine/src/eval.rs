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

use std::cell::RefCell;
use std::sync::{Arc, RwLock};

use datafrog::{Iteration, Relation, RelationLeaper, ValueFilter, Variable};
use rustc_hash::FxHashMap as HashMap;

use crate::ir::RelId;
use crate::plan::{CExpr, CRule, Emit, EvalCx, KeySrc, Match, Op, RulePlan, Which};
use crate::{EvalError, Limits};

mod once;
mod search;

pub(crate) use once::{Derivations, OnceJob, OncePlan, OnceScratch, ProofOrder, run_stratum_once};
pub(crate) use search::{apply_bound_filter, apply_filter, generated, search_with};

/// A tuple or a row of variable values.
pub(crate) type Row<const W: usize> = [u32; W];

type Index<const W: usize> = Relation<(Row<W>, Row<W>)>;

/// A complete set of tuples of one relation, with the round each was first derived in and
/// indexes built on demand.
pub(crate) struct Part<const W: usize> {
    pub tuples: Relation<Row<W>>,
    /// Round of first derivation per tuple (aligned with `tuples`); empty when not recorded.
    pub ranks: Vec<u32>,
    /// The round of every tuple, when all share one (a one-pass stratum); `ranks` is empty.
    uniform_rank: Option<u32>,
    /// Indexes and projections, built on demand (one lock: a query's parts rarely need
    /// either, and a smaller part is cheaper to keep in a query's list).
    caches: RwLock<PartCaches<W>>,
}

struct PartCaches<const W: usize> {
    indexes: HashMap<Vec<usize>, Arc<Index<W>>>,
    projections: HashMap<Vec<usize>, Arc<Vec<Row<W>>>>,
}

impl<const W: usize> Part<W> {
    pub(crate) fn new(tuples: Relation<Row<W>>, ranks: Vec<u32>) -> Self {
        Part {
            tuples,
            ranks,
            uniform_rank: None,
            caches: RwLock::new(PartCaches {
                indexes: HashMap::default(),
                projections: HashMap::default(),
            }),
        }
    }

    /// A part whose tuples were all first derived in round `rank`.
    pub(crate) fn with_uniform_rank(tuples: Relation<Row<W>>, rank: u32) -> Self {
        Part {
            uniform_rank: Some(rank),
            ..Part::new(tuples, Vec::new())
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
        Some(
            self.uniform_rank
                .unwrap_or_else(|| self.ranks.get(i).copied().unwrap_or(0)),
        )
    }

    /// The tuples keyed by `cols` (datafrog `(key, tuple)` pairs, sorted).
    pub(crate) fn index(&self, cols: &[usize]) -> Arc<Index<W>> {
        if let Ok(c) = self.caches.read()
            && let Some(ix) = c.indexes.get(cols)
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
        if let Ok(mut c) = self.caches.write() {
            c.indexes.insert(cols.to_vec(), ix.clone());
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
        // A handful of tuples (a query's own part) is scanned rather than projected.
        if self.len() <= 8 {
            return self
                .tuples
                .elements
                .iter()
                .any(|t| project(t, cols) == *key);
        }
        let proj = {
            let found = self
                .caches
                .read()
                .ok()
                .and_then(|c| c.projections.get(cols).cloned());
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
                    if let Ok(mut c) = self.caches.write() {
                        c.projections.insert(cols.to_vec(), p.clone());
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
    pub local: LocalParts<'a, W>,
}

/// The parts an evaluation derived so far.
#[derive(Clone, Copy)]
pub(crate) enum LocalParts<'a, const W: usize> {
    /// One slot per relation (materialisation derives most relations).
    Dense(&'a [Option<Box<Part<W>>>]),
    /// The few relations a query derived something for, in the order derived.
    Sparse(&'a [(RelId, Part<W>)]),
}

impl<'a, const W: usize> LocalParts<'a, W> {
    /// No parts.
    pub(crate) fn none() -> Self {
        LocalParts::Sparse(&[])
    }

    pub(crate) fn get(self, rel: RelId) -> Option<&'a Part<W>> {
        match self {
            LocalParts::Dense(parts) => parts.get(rel).and_then(|p| p.as_deref()),
            LocalParts::Sparse(parts) => parts.iter().find(|(r, _)| *r == rel).map(|(_, p)| p),
        }
    }
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
            Which::Local => self.local.get(rel),
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
    // A last round may have run out of values to generate without deriving anything new.
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
            if let Some(t) = head_tuple(rule, env, db, cx, subtract_model) {
                plain.push(t);
            }
        }
    }
}

/// The head tuple of a rule under a binding: `None` if a head expression has no value, or if
/// the relation only takes tuples new to the model and the model has this one.
pub(crate) fn head_tuple<const W: usize>(
    rule: &CRule,
    env: &[u32],
    db: &Db<'_, W>,
    cx: &mut EvalCx,
    subtract_model: &[bool],
) -> Option<Row<W>> {
    let mut t = [0u32; W];
    for (i, e) in rule.head.iter().enumerate() {
        t[i] = e.eval(env, cx)?;
    }
    let known = subtract_model.get(rule.head_rel).copied().unwrap_or(false)
        && db
            .part(rule.head_rel, Which::Model)
            .is_some_and(|p| p.contains(&t));
    (!known).then_some(t)
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
    for t in tuples {
        if !consts.iter().all(|&(c, k)| t[c] == k) || !m.eqs.iter().all(|&(a, b)| t[a] == t[b]) {
            continue;
        }
        for &(c, v) in &m.binds {
            env[v] = t[c];
        }
        filter_and_emit(
            rule,
            filters,
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

/// Runs `filters` on the binding in `env` and, if it passes them all, emits it.
#[allow(clippy::too_many_arguments)]
fn filter_and_emit<const W: usize>(
    rule: &CRule,
    filters: &[usize],
    out: &Emit,
    env: &mut [u32],
    db: &Db<'_, W>,
    cx: &mut EvalCx,
    subtract_model: &[bool],
    plain: &mut Vec<Row<W>>,
    keyed: &mut Vec<(Row<W>, Row<W>)>,
) {
    if rule.generates {
        filter_generating_and_emit(
            rule,
            filters,
            out,
            env,
            db,
            cx,
            subtract_model,
            plain,
            keyed,
        );
        return;
    }
    if filters
        .iter()
        .all(|&f| apply_filter(&rule.lits[f], env, db, cx))
    {
        emit(rule, out, env, db, cx, subtract_model, plain, keyed);
    }
}

/// [`filter_and_emit`] for a rule with a generator (`x = range(...)`): after a generator the
/// remaining filters run, and a binding is emitted, once per value. Apart, so that the
/// path every other rule takes stays as small as it was.
#[cold]
#[inline(never)]
#[allow(clippy::too_many_arguments)]
fn filter_generating_and_emit<const W: usize>(
    rule: &CRule,
    filters: &[usize],
    out: &Emit,
    env: &mut [u32],
    db: &Db<'_, W>,
    cx: &mut EvalCx,
    subtract_model: &[bool],
    plain: &mut Vec<Row<W>>,
    keyed: &mut Vec<(Row<W>, Row<W>)>,
) {
    for (k, &f) in filters.iter().enumerate() {
        let lit = &rule.lits[f];
        if let Some((var, values)) = search::generated(lit, env, None, cx) {
            for x in values {
                env[var] = x;
                let rest = &filters[k + 1..];
                filter_generating_and_emit(
                    rule,
                    rest,
                    out,
                    env,
                    db,
                    cx,
                    subtract_model,
                    plain,
                    keyed,
                );
            }
            return;
        }
        if !apply_filter(lit, env, db, cx) {
            return;
        }
    }
    emit(rule, out, env, db, cx, subtract_model, plain, keyed);
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
    for row in rows {
        for (i, &v) in in_layout.iter().enumerate() {
            env[v] = row[i];
        }
        filter_and_emit(
            rule,
            filters,
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
