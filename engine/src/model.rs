//! Materialised models and staged queries.
//!
//! [`Program::materialise`] evaluates a program over its slow-changing facts into an immutable
//! [`Model`] (shareable across threads). [`Model::query`] adds request facts and derives only
//! what depends on them: relations the request cannot reach are read from the model as they
//! are; relations it reaches positively get the model's tuples plus new ones; relations it
//! reaches through negation or aggregation are recomputed for the query. The model is never
//! copied or changed: its symbol table is the parent of the query's, its relations and
//! indexes are read in place.

use std::cell::RefCell;
use std::collections::BTreeMap;

use rustc_hash::FxHashMap as HashMap;
use std::sync::{Arc, OnceLock, RwLock};

use crate::eval::{self, Db, Part, Row, StratumJob};
use crate::ir::{Ir, RelId, RuleTexts};
use crate::plan::{self, CLit, CRule, EvalCx, RulePlan, Which};
use crate::prepared::ProofNames;
use crate::value::{Interner, Value, decode, encode};
use crate::{EvalError, Fact, FactSet, Limits, Outputs, Program};

/// Queries rank their facts after every fact of the model.
pub(crate) const QUERY_RANK_BASE: u32 = 1 << 30;

/// Input facts of one relation: sorted tuples with the index of their origin label.
pub(crate) type InputPart<const W: usize> = Vec<(Row<W>, u32)>;

/// The width-specific body of a model.
pub(crate) struct ModelData<const W: usize> {
    pub program: Program,
    pub rules: Arc<[CRule]>,
    pub symbols: Arc<Interner>,
    pub parts: Vec<Part<W>>,
    pub inputs: Vec<InputPart<W>>,
    pub origins: Vec<Arc<str>>,
    pub with_ranks: bool,
    query_plans: RwLock<HashMap<Vec<RelId>, Arc<QueryPlan<W>>>>,
    /// Proofs of model facts, built on first use and shared by every later proof (a model
    /// fact's proof is the same in every query that does not reach its relation).
    pub proof_cache: RwLock<HashMap<(RelId, Row<W>), Arc<crate::proof::Proof>>>,
    /// Compiled `glob` / `match` patterns, shared by materialisation and every query.
    pub patterns: crate::functions::PatternCache,
    /// Per relation, its rules ordered by id (then head and alternative): the order in which
    /// proofs try them, independent of the order rules are written in.
    pub rules_by_id: Arc<[Vec<usize>]>,
    /// Per rule, its position in its head relation's `rules_by_id`.
    pub rule_rank: Arc<[u32]>,
    /// Per rule, its number of variables.
    pub rule_vars: Arc<[usize]>,
    /// The names proofs are written with, shared rather than copied into every proof.
    pub names: Arc<ProofNames>,
    /// The rules, literal texts and shown variables why-nots are written with, prepared by
    /// the first why-not (most models are never asked one).
    pub rule_texts: OnceLock<RuleTexts>,
}

/// How a query with request facts in a given set of relations is evaluated.
pub(crate) struct QueryPlan<const W: usize> {
    /// Whether the request reaches each relation.
    pub affected: Vec<bool>,
    /// Whether the model's part of each relation stays valid.
    pub model_valid: Vec<bool>,
    /// Whether new tuples of each relation must leave out the model's.
    pub subtract_model: Vec<bool>,
    /// Affected strata in order.
    pub strata: Vec<QueryStratum<W>>,
}

/// One affected stratum of a query plan.
pub(crate) struct QueryStratum<const W: usize> {
    /// Its relations.
    pub relations: Vec<RelId>,
    /// Relations that may start with tuples: the request's, and recomputed relations' inputs.
    pub seeded: Vec<RelId>,
    /// How it is evaluated.
    pub run: StratumRun<W>,
}

/// A stratum that reads itself runs semi-naively on datafrog; any other, in one pass.
pub(crate) enum StratumRun<const W: usize> {
    Fixpoint(Vec<RulePlan>),
    OnePass(Vec<eval::OncePlan<W>>),
}

/// Input facts of the relations a query's request touches, sorted by relation: a request
/// touches a few relations, and a table over all of them would be allocated per query.
pub(crate) type SparseInputs<const W: usize> = Vec<(RelId, InputPart<W>)>;

/// The input part of `rel` in sparse inputs.
pub(crate) fn sparse_input<const W: usize>(
    inputs: &SparseInputs<W>,
    rel: RelId,
) -> Option<&InputPart<W>> {
    inputs.iter().find(|(r, _)| *r == rel).map(|(_, p)| p)
}

/// Encodes facts, checking relation, arity and types; one input part per relation.
pub(crate) fn encode_facts<const W: usize>(
    ir: &Ir,
    facts: &FactSet,
    symbols: &mut Interner,
    origins: &mut Vec<Arc<str>>,
    origin_ids: &mut HashMap<Arc<str>, u32>,
) -> Result<Vec<InputPart<W>>, EvalError> {
    let mut out: Vec<InputPart<W>> = vec![Vec::new(); ir.relations.len()];
    for (rel, part) in encode_facts_sparse(ir, facts, symbols, origins, origin_ids)? {
        out[rel] = part;
    }
    Ok(out)
}

/// Encodes facts, checking relation, arity and types; parts only for relations with facts.
pub(crate) fn encode_facts_sparse<const W: usize>(
    ir: &Ir,
    facts: &FactSet,
    symbols: &mut Interner,
    origins: &mut Vec<Arc<str>>,
    origin_ids: &mut HashMap<Arc<str>, u32>,
) -> Result<SparseInputs<W>, EvalError> {
    let mut out: SparseInputs<W> = Vec::new();
    for (fact, origin) in facts.iter() {
        let Some(rel) = ir.relation(&fact.relation) else {
            return Err(EvalError::BadFact {
                origin: origin.to_string(),
                message: format!("unknown relation `{}`", fact.relation),
            });
        };
        let info = &ir.relations[rel];
        if info.arity() != fact.values.len() {
            return Err(EvalError::BadFact {
                origin: origin.to_string(),
                message: format!(
                    "`{}` has {} columns, the fact has {}",
                    info.name,
                    info.arity(),
                    fact.values.len()
                ),
            });
        }
        let mut t = [0u32; W];
        for (i, v) in fact.values.iter().enumerate() {
            // Symbols are interned where they are (no copy of the string).
            match (v, info.types[i]) {
                (Value::Symbol(s), crate::value::Type::Symbol) => {
                    t[i] = symbols.intern(s);
                    continue;
                }
                // Numbers as they are: most columns of most facts.
                (Value::Number(n), crate::value::Type::Number) => {
                    t[i] = *n as u32;
                    continue;
                }
                _ => {}
            }
            let v = coerce(v, info.types[i], &ir.records).ok_or_else(|| EvalError::BadFact {
                origin: origin.to_string(),
                message: format!(
                    "column `{}` of `{}` is `{}`, got `{}`",
                    info.attrs[i],
                    info.name,
                    info.types[i],
                    v.to_literal()
                ),
            })?;
            t[i] = encode(&v, symbols);
        }
        // A request has an origin or two: searched in place until there are more.
        let known = if origin_ids.is_empty() {
            origins
                .iter()
                .position(|o| **o == **origin)
                .map(|i| i as u32)
        } else {
            origin_ids.get(origin).copied()
        };
        let oid = known.unwrap_or_else(|| {
            origins.push(origin.clone());
            let id = (origins.len() - 1) as u32;
            if !origin_ids.is_empty() {
                origin_ids.insert(origin.clone(), id);
            } else if origins.len() > 8 {
                *origin_ids = origins.iter().cloned().zip(0..).collect();
            }
            id
        });
        match out.iter_mut().find(|(r, _)| *r == rel) {
            Some((_, part)) => part.push((t, oid)),
            None => out.push((rel, vec![(t, oid)])),
        }
    }
    out.sort_by_key(|(r, _)| *r);
    for (_, p) in &mut out {
        // Keep the first origin of a duplicated fact in the order given.
        p.sort_by_key(|a| a.0);
        p.dedup_by(|a, b| a.0 == b.0);
    }
    Ok(out)
}

/// Accepts a value for a column of type `ty` ([`Value::coerce`]).
fn coerce(
    v: &Value,
    ty: crate::value::Type,
    records: &[crate::value::RecordType],
) -> Option<Value> {
    v.coerce(ty, records)
}

impl<const W: usize> ModelData<W> {
    pub(crate) fn materialise(
        program: &Program,
        facts: &FactSet,
        limits: &Limits,
        with_ranks: bool,
    ) -> Result<Self, EvalError> {
        let ir = program.ir();
        let prepared = program.prepared();
        let mut symbols = prepared.symbols.clone();
        let rules = &prepared.rules;
        let mut origins = Vec::new();
        let mut origin_ids = HashMap::default();
        let mut all = FactSet::new();
        for f in &ir.facts {
            all.push(
                Fact {
                    relation: ir.relations[f.rel].name.clone(),
                    values: f.values.clone(),
                },
                Arc::from(f.origin.as_str()),
            );
        }
        all.extend_from(facts);
        let inputs = encode_facts::<W>(ir, &all, &mut symbols, &mut origins, &mut origin_ids)?;
        let patterns = crate::functions::PatternCache::default();
        let cx = RefCell::new(EvalCx {
            symbols,
            patterns: patterns.clone(),
            generate_left: limits.max_facts,
            generate_exceeded: false,
        });
        let n = ir.relations.len();
        let mut local: Vec<Option<Box<Part<W>>>> = (0..n).map(|_| None).collect();
        let mut facts_so_far = 0usize;
        let no_subtract = vec![false; n];
        let scans = std::cell::Cell::new(0);
        for (stratum, plans) in ir.strata.iter().zip(&prepared.strata) {
            let seeds: Vec<(RelId, Vec<Row<W>>)> = stratum
                .iter()
                .map(|&r| (r, inputs[r].iter().map(|(t, _)| *t).collect()))
                .collect();
            let plan_refs: Vec<&RulePlan> = plans.iter().collect();
            let job = StratumJob {
                rules,
                plans: &plan_refs,
                relations: stratum,
                seeds,
                subtract_model: &no_subtract,
                record_ranks: with_ranks,
                rank_base: 0,
                model_scans: &scans,
            };
            let db = Db {
                model: None,
                model_valid: &[],
                local: eval::LocalParts::Dense(&local),
            };
            let done = eval::run_stratum(job, &db, &cx, limits, &mut facts_so_far)?;
            for (r, part) in done {
                local[r] = Some(Box::new(part));
            }
        }
        let parts: Vec<Part<W>> = local
            .into_iter()
            .map(|p| p.map_or_else(|| Part::new(Vec::new().into(), Vec::new()), |p| *p))
            .collect();
        let EvalCx { symbols, .. } = cx.into_inner();
        Ok(ModelData {
            program: program.clone(),
            rules: rules.clone(),
            symbols: Arc::new(symbols),
            parts,
            inputs,
            origins,
            with_ranks,
            query_plans: RwLock::new(HashMap::default()),
            proof_cache: RwLock::new(HashMap::default()),
            names: prepared.names.clone(),
            rule_texts: OnceLock::new(),
            patterns,
            rule_rank: prepared.rule_rank.clone(),
            rule_vars: prepared.rule_vars.clone(),
            rules_by_id: prepared.rules_by_id.clone(),
        })
    }

    /// The plan for queries whose request facts fall in `delta`.
    pub(crate) fn query_plan(&self, delta: &[RelId]) -> Arc<QueryPlan<W>> {
        if let Ok(m) = self.query_plans.read()
            && let Some(p) = m.get(delta)
        {
            return p.clone();
        }
        let p = Arc::new(build_query_plan(
            self.program.ir(),
            &self.rules,
            &self.parts,
            &self.inputs,
            delta,
        ));
        if let Ok(mut m) = self.query_plans.write() {
            m.insert(delta.to_vec(), p.clone());
        }
        p
    }

    pub(crate) fn query(
        &self,
        request: &FactSet,
        limits: &Limits,
    ) -> Result<QueryState<W>, EvalError> {
        let ir = self.program.ir();
        let mut symbols = Interner::child(self.symbols.clone());
        let mut origins = Vec::new();
        let mut origin_ids = HashMap::default();
        let inputs =
            encode_facts_sparse::<W>(ir, request, &mut symbols, &mut origins, &mut origin_ids)?;
        let delta: Vec<RelId> = inputs.iter().map(|(r, _)| *r).collect();
        let qp = self.query_plan(&delta);
        let cx = RefCell::new(EvalCx {
            symbols,
            patterns: self.patterns.clone(),
            generate_left: limits.max_facts,
            generate_exceeded: false,
        });
        // The parts the query derives, in the order derived: a request reaches a few dozen
        // relations and derives something for a handful.
        let mut local: Vec<(RelId, Part<W>)> = Vec::new();
        let mut facts_so_far = 0usize;
        let scans = std::cell::Cell::new(0);
        // Reused by every stratum: most strata of a query run a rule variant or two.
        let mut scratch = eval::OnceScratch::default();
        let mut seeds: Vec<(RelId, Vec<Row<W>>)> = Vec::new();
        let mut runnable_once: Vec<&eval::OncePlan<W>> = Vec::new();
        let mut done: Vec<(RelId, Part<W>)> = Vec::new();
        let mut derivations = if self.with_ranks {
            eval::Derivations::for_query()
        } else {
            eval::Derivations::empty()
        };
        for stratum in &qp.strata {
            let rels = &stratum.relations;
            // Only relations with tuples to start from (no allocation for the others).
            seeds.clear();
            for &r in &stratum.seeded {
                let mut s: Vec<Row<W>> = sparse_input(&inputs, r)
                    .into_iter()
                    .flatten()
                    .map(|(t, _)| *t)
                    .collect();
                if qp.subtract_model[r] {
                    s.retain(|t| !self.parts[r].contains(t));
                }
                if !qp.model_valid[r] {
                    // Recomputed from scratch: the model's own input facts count too.
                    s.extend(self.inputs[r].iter().map(|(t, _)| *t));
                }
                if !s.is_empty() {
                    seeds.push((r, s));
                }
            }
            let has_local = |r: RelId| local.iter().any(|(x, p)| *x == r && p.len() > 0);
            match &stratum.run {
                StratumRun::OnePass(plans) => {
                    // Skip variants reading an empty query part of a lower stratum.
                    runnable_once.clear();
                    runnable_once.extend(
                        plans
                            .iter()
                            .filter(|p| p.reads_local.iter().all(|&r| has_local(r))),
                    );
                    if runnable_once.is_empty() && seeds.is_empty() {
                        continue;
                    }
                    let db = Db {
                        model: Some(&self.parts),
                        model_valid: &qp.model_valid,
                        local: eval::LocalParts::Sparse(&local),
                    };
                    let job = eval::OnceJob {
                        rules: &self.rules,
                        plans: &runnable_once,
                        relations: rels,
                        seeds: &mut seeds,
                        subtract_model: &qp.subtract_model,
                        record_ranks: self.with_ranks,
                        rank_base: QUERY_RANK_BASE,
                        model_scans: &scans,
                        derivations: self.with_ranks.then_some((
                            &mut derivations,
                            eval::ProofOrder {
                                ir,
                                rule_rank: &self.rule_rank,
                            },
                        )),
                    };
                    eval::run_stratum_once(
                        job,
                        &db,
                        &cx,
                        limits,
                        &mut facts_so_far,
                        &mut scratch,
                        &mut done,
                    )?;
                    local.append(&mut done);
                }
                StratumRun::Fixpoint(plans) => {
                    // Skip variants reading an empty local part of a lower stratum.
                    let runnable: Vec<&RulePlan> = plans
                        .iter()
                        .filter(|p| {
                            p.ops.iter().all(|op| match op {
                                plan::Op::Scan { m, .. }
                                | plan::Op::Lookup { m, .. }
                                | plan::Op::Join { m, .. } => {
                                    m.which == Which::Model
                                        || rels.contains(&m.rel)
                                        || has_local(m.rel)
                                }
                                plan::Op::Map { .. } => true,
                            })
                        })
                        .collect();
                    if runnable.is_empty() && seeds.is_empty() {
                        continue;
                    }
                    let job = StratumJob {
                        rules: &self.rules,
                        plans: &runnable,
                        relations: rels,
                        seeds: std::mem::take(&mut seeds),
                        subtract_model: &qp.subtract_model,
                        record_ranks: self.with_ranks,
                        rank_base: QUERY_RANK_BASE,
                        model_scans: &scans,
                    };
                    let db = Db {
                        model: Some(&self.parts),
                        model_valid: &qp.model_valid,
                        local: eval::LocalParts::Sparse(&local),
                    };
                    let done = eval::run_stratum(job, &db, &cx, limits, &mut facts_so_far)?;
                    local.extend(done);
                }
            }
        }
        let EvalCx { symbols, .. } = cx.into_inner();
        let derived = local.iter().map(|(_, p)| p.len()).sum();
        Ok(QueryState {
            stats: QueryStats {
                model_tuples_scanned: scans.get(),
                derived,
            },
            plan: qp,
            local,
            symbols: Arc::new(symbols),
            inputs,
            origins,
            derivations,
        })
    }

    /// The model's own parts (no query's).
    pub(crate) fn db<'a>(&'a self, valid: &'a [bool]) -> Db<'a, W> {
        Db {
            model: Some(&self.parts),
            model_valid: valid,
            local: eval::LocalParts::none(),
        }
    }

    /// Decodes the rows of a relation from the given parts, sorted in output order.
    pub(crate) fn rows(&self, rel: RelId, db: &Db<'_, W>, symbols: &Interner) -> Vec<Vec<Value>> {
        let info = &self.program.ir().relations[rel];
        let mut rows: Vec<Vec<Value>> = db
            .parts(rel)
            .iter()
            .flatten()
            .flat_map(|p| p.tuples.elements.iter())
            .map(|t| {
                (0..info.arity())
                    .map(|i| decode(t[i], info.types[i], symbols))
                    .collect()
            })
            .collect();
        sort_rows(&mut rows);
        rows
    }
}

impl<const W: usize> ModelData<W> {
    /// Like [`ModelData::rows`], only the rows whose `column` holds `value`.
    pub(crate) fn rows_where(
        &self,
        rel: RelId,
        db: &Db<'_, W>,
        symbols: &Interner,
        column: usize,
        value: &Value,
    ) -> Vec<Vec<Value>> {
        let info = &self.program.ir().relations[rel];
        let Some(&ty) = info.types.get(column) else {
            return Vec::new();
        };
        // The value's slot; a symbol never interned matches no row.
        let slot = match (value, ty) {
            (Value::Symbol(s), crate::value::Type::Symbol) => symbols.get(s),
            (v, t) => coerce(v, t, &self.program.ir().records)
                .and_then(|v| crate::value::encode_existing(&v, symbols)),
        };
        let Some(slot) = slot else {
            return Vec::new();
        };
        let mut rows: Vec<Vec<Value>> = db
            .parts(rel)
            .iter()
            .flatten()
            .flat_map(|p| p.tuples.elements.iter())
            .filter(|t| t[column] == slot)
            .map(|t| {
                (0..info.arity())
                    .map(|i| decode(t[i], info.types[i], symbols))
                    .collect()
            })
            .collect();
        sort_rows(&mut rows);
        rows
    }
}

/// Sorts rows in output order and removes duplicates.
pub(crate) fn sort_rows(rows: &mut Vec<Vec<Value>>) {
    rows.sort_by(|a, b| {
        a.iter()
            .zip(b)
            .map(|(x, y)| x.total_cmp(y))
            .find(|o| o.is_ne())
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    rows.dedup();
}

/// What a query leaves behind: its own parts and symbols, over the model.
pub(crate) struct QueryState<const W: usize> {
    pub stats: QueryStats,
    pub plan: Arc<QueryPlan<W>>,
    /// The parts the query derived, in the order derived.
    pub local: Vec<(RelId, Part<W>)>,
    pub symbols: Arc<Interner>,
    pub inputs: SparseInputs<W>,
    pub origins: Vec<Arc<str>>,
    /// The derivation proofs use for each tuple of the query's one-pass strata.
    pub derivations: eval::Derivations<W>,
}

/// What a query did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct QueryStats {
    /// Tuples of the model read by full scans (not by indexed lookups). Zero when every rule
    /// reached by the request starts from a request-dependent atom.
    pub model_tuples_scanned: usize,
    /// Tuples the query derived beyond the model (request facts included).
    pub derived: usize,
}

/// Classifies relations for a query and plans the rule variants to run.
fn build_query_plan<const W: usize>(
    ir: &Ir,
    rules: &[CRule],
    model: &[Part<W>],
    model_inputs: &[InputPart<W>],
    delta: &[RelId],
) -> QueryPlan<W> {
    let n = ir.relations.len();
    let mut affected = vec![false; n];
    delta.iter().for_each(|&r| affected[r] = true);
    let deps: Vec<Vec<(RelId, bool)>> = rules.iter().map(rule_deps).collect();
    loop {
        let mut changed = false;
        for (i, r) in rules.iter().enumerate() {
            if !affected[r.head_rel] && deps[i].iter().any(|&(d, _)| affected[d]) {
                affected[r.head_rel] = true;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    let mut recompute = vec![false; n];
    loop {
        let mut changed = false;
        for (i, r) in rules.iter().enumerate() {
            let h = r.head_rel;
            if !recompute[h]
                && deps[i]
                    .iter()
                    .any(|&(d, neg)| (neg && affected[d]) || recompute[d])
            {
                recompute[h] = true;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    let model_valid: Vec<bool> = (0..n).map(|r| !recompute[r]).collect();
    let subtract_model: Vec<bool> = (0..n).map(|r| affected[r] && !recompute[r]).collect();
    let mut strata = Vec::new();
    for stratum in &ir.strata {
        if !stratum.iter().any(|&r| affected[r]) {
            continue;
        }
        let live = |r: RelId| stratum.contains(&r);
        let mut plans = Vec::new();
        for (ri, rule) in rules.iter().enumerate() {
            if !stratum.contains(&rule.head_rel) {
                continue;
            }
            let head_recompute = recompute[rule.head_rel];
            // Choices per positive atom.
            let choices: Vec<Vec<Which>> = rule
                .lits
                .iter()
                .map(|l| match l {
                    CLit::Pos(a) if !affected[a.rel] => vec![Which::Model],
                    CLit::Pos(a) if recompute[a.rel] => vec![Which::Local],
                    CLit::Pos(_) => vec![Which::Model, Which::Local],
                    _ => vec![Which::Model],
                })
                .collect();
            let mut variants: Vec<Vec<Which>> = vec![Vec::new()];
            for c in &choices {
                let mut next = Vec::new();
                for v in &variants {
                    for &w in c {
                        let mut v2 = v.clone();
                        v2.push(w);
                        next.push(v2);
                    }
                }
                variants = next;
            }
            for which in variants {
                let reads_local = rule
                    .lits
                    .iter()
                    .zip(&which)
                    .any(|(l, w)| matches!(l, CLit::Pos(_)) && *w == Which::Local);
                if !head_recompute && !reads_local {
                    continue; // already in the model
                }
                // A variant joining with an empty model part derives nothing, in any query:
                // the model never changes.
                let reads_empty_model = rule.lits.iter().zip(&which).any(|(l, w)| {
                    matches!(l, CLit::Pos(a) if *w == Which::Model && model[a.rel].len() == 0)
                });
                if reads_empty_model {
                    continue;
                }
                plans.push(plan::plan_rule(ri, rule, &which, &live));
            }
        }
        let seeded = stratum
            .iter()
            .copied()
            .filter(|&r| delta.contains(&r) || (recompute[r] && !model_inputs[r].is_empty()))
            .collect();
        let run = if stratum.iter().any(|&r| ir.recursive[r]) {
            StratumRun::Fixpoint(plans)
        } else {
            StratumRun::OnePass(
                plans
                    .iter()
                    .map(|p| eval::OncePlan::new(p, model))
                    .collect(),
            )
        };
        strata.push(QueryStratum {
            relations: stratum.clone(),
            seeded,
            run,
        });
    }
    QueryPlan {
        affected,
        model_valid,
        subtract_model,
        strata,
    }
}

fn rule_deps(rule: &CRule) -> Vec<(RelId, bool)> {
    fn walk(lits: &[CLit], neg: bool, out: &mut Vec<(RelId, bool)>) {
        for l in lits {
            match l {
                CLit::Pos(a) => out.push((a.rel, neg)),
                CLit::Neg(a) => out.push((a.rel, true)),
                CLit::Agg { body, .. } => walk(body, true, out),
                CLit::Cmp(..) | CLit::Test(..) | CLit::Bind(..) | CLit::Range { .. } => {}
            }
        }
    }
    let mut out = Vec::new();
    walk(&rule.lits, false, &mut out);
    out
}

/// Builds [`Outputs`] for the named relations.
pub(crate) fn outputs_of<const W: usize>(
    data: &ModelData<W>,
    rels: &[RelId],
    db: &Db<'_, W>,
    symbols: &Interner,
) -> Outputs {
    let ir = data.program.ir();
    let mut map = BTreeMap::new();
    for &r in rels {
        map.insert(ir.relations[r].name.clone(), data.rows(r, db, symbols));
    }
    Outputs::new(
        map,
        rels.iter()
            .map(|&r| (ir.relations[r].name.clone(), ir.relations[r].arity()))
            .collect(),
    )
}
