//! A naive bottom-up evaluator over plain values: no interning, no indexes, no datafrog, no
//! plans. Each stratum re-applies every rule to the whole database until nothing changes.
//!
//! It is the reference the real evaluator is tested against, and what the proof checker uses
//! to confirm that negated atoms are absent and aggregates have the claimed values. It is slow
//! on purpose: it is meant to be obviously right.

use std::collections::{BTreeMap, BTreeSet};

use crate::FactSet;
use crate::ast::{AggKind, CmpOp, Functor};
use crate::functions::{self, PatternCache};
use crate::ir::{Ir, IrAtom, IrExpr, IrLit, IrRule, RelId};
use crate::value::{Type, Value};

/// A tuple of values, ordered for set membership.
#[derive(Debug, Clone, PartialEq)]
pub struct Tuple(pub Vec<Value>);

impl Eq for Tuple {}
impl PartialOrd for Tuple {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Tuple {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0
            .iter()
            .zip(&other.0)
            .map(|(a, b)| a.total_cmp(b))
            .find(|o| o.is_ne())
            .unwrap_or_else(|| self.0.len().cmp(&other.0.len()))
    }
}

/// Every relation's tuples.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NaiveDb {
    /// Tuples per relation id.
    pub relations: Vec<BTreeSet<Tuple>>,
}

impl NaiveDb {
    /// Whether `rel` holds `values`.
    pub fn contains(&self, rel: RelId, values: &[Value]) -> bool {
        self.relations
            .get(rel)
            .is_some_and(|s| s.contains(&Tuple(values.to_vec())))
    }

    /// Rows per relation name, sorted (the same shape as the engine's outputs).
    pub fn rows(&self, ir: &Ir) -> BTreeMap<String, Vec<Vec<Value>>> {
        ir.relations
            .iter()
            .enumerate()
            .map(|(i, r)| {
                (
                    r.name.clone(),
                    self.relations[i].iter().map(|t| t.0.clone()).collect(),
                )
            })
            .collect()
    }
}

/// Evaluates a program naively. Facts that do not fit the program are skipped.
pub fn evaluate(ir: &Ir, facts: &FactSet) -> NaiveDb {
    let mut db = NaiveDb {
        relations: vec![BTreeSet::new(); ir.relations.len()],
    };
    for f in &ir.facts {
        db.relations[f.rel].insert(Tuple(f.values.clone()));
    }
    for (fact, _) in facts.iter() {
        if let Some(rel) = ir.relation(&fact.relation)
            && let Some(vals) = coerce_row(&fact.values, &ir.relations[rel].types)
        {
            db.relations[rel].insert(Tuple(vals));
        }
    }
    let mut patterns = PatternCache::for_program(std::sync::Arc::clone(&ir.records));
    for stratum in &ir.strata {
        loop {
            let mut new = Vec::new();
            for rule in ir.rules.iter().filter(|r| stratum.contains(&r.head.rel)) {
                for_each_match(
                    rule,
                    &rule.body,
                    0,
                    &mut vec![None; rule.vars.len()],
                    &db,
                    &mut patterns,
                    &mut |env, p| {
                        if let Some(t) = rule
                            .head
                            .args
                            .iter()
                            .map(|e| eval(e, env, p))
                            .collect::<Option<Vec<Value>>>()
                            && !db.relations[rule.head.rel].contains(&Tuple(t.clone()))
                        {
                            new.push((rule.head.rel, t));
                        }
                    },
                );
            }
            if new.is_empty() {
                break;
            }
            for (r, t) in new {
                db.relations[r].insert(Tuple(t));
            }
        }
    }
    db
}

fn coerce_row(values: &[Value], types: &[Type]) -> Option<Vec<Value>> {
    if values.len() != types.len() {
        return None;
    }
    values
        .iter()
        .zip(types)
        .map(|(v, t)| match (v, t) {
            (Value::Number(n), Type::Unsigned) => u32::try_from(*n).ok().map(Value::Unsigned),
            (Value::Number(n), Type::Float) => Some(Value::Float(*n as f32)),
            (Value::Record(_) | Value::Nil | Value::Adt { .. }, Type::Record(_)) => Some(v.clone()),
            (v, t) if v.ty() == *t => Some(v.clone()),
            _ => None,
        })
        .collect()
}

/// Calls `f` for every binding satisfying `lits[i..]` (nested loops over whole relations).
pub fn for_each_match(
    rule: &IrRule,
    lits: &[IrLit],
    i: usize,
    env: &mut Vec<Option<Value>>,
    db: &NaiveDb,
    patterns: &mut PatternCache,
    f: &mut dyn FnMut(&[Option<Value>], &mut PatternCache),
) {
    let Some(lit) = lits.get(i) else {
        f(env, patterns);
        return;
    };
    match lit {
        IrLit::Pos(a) => {
            for t in &db.relations[a.rel] {
                let saved = env.clone();
                if bind_atom(a, &t.0, env, patterns) {
                    for_each_match(rule, lits, i + 1, env, db, patterns, f);
                }
                *env = saved;
            }
        }
        IrLit::Range { var, ty, .. } if env[*var].is_none() => {
            for x in range_of(lit, env, patterns).into_iter().flatten() {
                env[*var] = Some(unslot(x, *ty));
                for_each_match(rule, lits, i + 1, env, db, patterns, f);
            }
            env[*var] = None;
        }
        other => {
            let saved = env.clone();
            if holds(rule, other, env, db, patterns) {
                for_each_match(rule, lits, i + 1, env, db, patterns, f);
            }
            *env = saved;
        }
    }
}

fn bind_atom(a: &IrAtom, t: &[Value], env: &mut [Option<Value>], p: &mut PatternCache) -> bool {
    for (arg, v) in a.args.iter().zip(t) {
        match arg {
            IrExpr::Wild => {}
            IrExpr::Var(x) => match &env[*x] {
                Some(b) if b != v => return false,
                Some(_) => {}
                None => env[*x] = Some(v.clone()),
            },
            e => {
                if eval(e, env, p).as_ref() != Some(v) {
                    return false;
                }
            }
        }
    }
    true
}

/// The range `x = range(...)` counts under `env` (none when an argument cannot be computed).
fn range_of(lit: &IrLit, env: &[Option<Value>], p: &mut PatternCache) -> Option<functions::Range> {
    let IrLit::Range { args, ty, .. } = lit else {
        return None;
    };
    let slot = |v: &Value| match v {
        Value::Number(n) => Some(*n as u32),
        Value::Unsigned(u) => Some(*u),
        Value::Float(f) => Some(f.to_bits()),
        Value::Symbol(_) | Value::Record(_) | Value::Nil | Value::Adt { .. } => None,
    };
    let mut vals = Vec::with_capacity(3);
    for a in args {
        vals.push(eval(a, env, p).as_ref().and_then(slot)?);
    }
    let (&from, &to) = (vals.first()?, vals.get(1)?);
    Some(functions::range(*ty, from, to, vals.get(2).copied()))
}

/// Whether a non-positive literal holds under `env` (binding its output if it has one).
pub fn holds(
    rule: &IrRule,
    lit: &IrLit,
    env: &mut [Option<Value>],
    db: &NaiveDb,
    p: &mut PatternCache,
) -> bool {
    match lit {
        IrLit::Pos(a) => db.relations[a.rel]
            .iter()
            .any(|t| bind_atom(a, &t.0, &mut env.to_vec(), p)),
        IrLit::Neg(a) => !db.relations[a.rel]
            .iter()
            .any(|t| bind_atom(a, &t.0, &mut env.to_vec(), p)),
        IrLit::Cmp {
            op, lhs, rhs, ty, ..
        } => {
            let (Some(a), Some(b)) = (eval(lhs, env, p), eval(rhs, env, p)) else {
                return false;
            };
            compare(*op, *ty, &a, &b)
        }
        IrLit::Test {
            func,
            pattern,
            subject,
            negated,
            ..
        } => match (eval(pattern, env, p), eval(subject, env, p)) {
            (Some(Value::Symbol(pat)), Some(Value::Symbol(s))) => {
                p.test(*func, &pat, &s) != *negated
            }
            _ => false,
        },
        IrLit::Bind { var, expr, .. } => match eval(expr, env, p) {
            Some(v) => match &env[*var] {
                Some(b) => *b == v,
                None => {
                    env[*var] = Some(v);
                    true
                }
            },
            None => false,
        },
        // With `x` bound: whether it is one of the values.
        IrLit::Range { var, .. } => match env[*var].clone() {
            Some(x) => range_of(lit, env, p).is_some_and(|r| r.contains(slot(&x))),
            None => false,
        },
        IrLit::Agg {
            var,
            kind,
            target,
            ty,
            body,
            outer,
            ..
        } => match aggregate(rule, (*kind, target.as_ref(), *ty), body, outer, env, db, p) {
            Some(v) => match &env[*var] {
                Some(b) => *b == v,
                None => {
                    env[*var] = Some(v);
                    true
                }
            },
            None => false,
        },
    }
}

/// Computes an aggregate over the body's matches under the outer bindings in `env`.
#[allow(clippy::too_many_arguments)]
pub fn aggregate(
    rule: &IrRule,
    (kind, target, ty): (AggKind, Option<&IrExpr>, Type),
    body: &[IrLit],
    outer: &[crate::ir::VarId],
    env: &[Option<Value>],
    db: &NaiveDb,
    p: &mut PatternCache,
) -> Option<Value> {
    let mut inner = env.to_vec();
    // Local variables start unbound even if a previous binding left a value; those of an
    // aggregate around this one that it reads (`outer`) keep theirs.
    for (i, v) in rule.vars.iter().enumerate() {
        if v.local && !outer.contains(&i) {
            inner[i] = None;
        }
    }
    let mut values: Vec<Value> = Vec::new();
    let mut count: u32 = 0;
    for_each_match(rule, body, 0, &mut inner, db, p, &mut |e, p| {
        count = count.wrapping_add(1);
        if let Some(t) = target
            && let Some(v) = eval(t, e, p)
        {
            values.push(v);
        }
    });
    match kind {
        AggKind::Count => Some(Value::Number(count as i32)),
        AggKind::Sum => Some(values.into_iter().fold(zero(ty), |a, b| add(ty, &a, &b))),
        AggKind::Min => values
            .into_iter()
            .reduce(|a, b| if compare(CmpOp::Lt, ty, &b, &a) { b } else { a }),
        AggKind::Max => values
            .into_iter()
            .reduce(|a, b| if compare(CmpOp::Gt, ty, &b, &a) { b } else { a }),
        AggKind::Mean => {
            let mut mean = functions::Mean::default();
            for v in &values {
                if let Value::Float(x) = v {
                    mean.add(*x);
                }
            }
            mean.value().map(Value::Float)
        }
    }
}

fn zero(ty: Type) -> Value {
    match ty {
        Type::Unsigned => Value::Unsigned(0),
        Type::Float => Value::Float(0.0),
        _ => Value::Number(0),
    }
}

fn slot(v: &Value) -> u32 {
    match v {
        Value::Number(n) => *n as u32,
        Value::Unsigned(u) => *u,
        Value::Float(x) => x.to_bits(),
        Value::Symbol(_) | Value::Record(_) | Value::Nil | Value::Adt { .. } => 0,
    }
}

fn unslot(s: u32, ty: Type) -> Value {
    match ty {
        Type::Unsigned => Value::Unsigned(s),
        Type::Float => Value::Float(f32::from_bits(s)),
        _ => Value::Number(s as i32),
    }
}

fn add(ty: Type, a: &Value, b: &Value) -> Value {
    functions::arith(crate::ast::ArithOp::Add, ty, slot(a), slot(b))
        .map_or_else(|| a.clone(), |s| unslot(s, ty))
}

/// Compares two values of type `ty`.
pub fn compare(op: CmpOp, ty: Type, a: &Value, b: &Value) -> bool {
    let ord = match (a, b) {
        (Value::Symbol(x), Value::Symbol(y)) => x.as_bytes().cmp(y.as_bytes()),
        // Records by their fields (the engine compares their ids: equal fields, equal id).
        (Value::Record(_) | Value::Nil | Value::Adt { .. }, _)
        | (_, Value::Record(_) | Value::Nil | Value::Adt { .. }) => a.total_cmp(b),
        _ => functions::cmp_numeric(ty, slot(a), slot(b)),
    };
    functions::holds(op, ord)
}

/// Evaluates an expression over values.
pub fn eval(e: &IrExpr, env: &[Option<Value>], p: &mut PatternCache) -> Option<Value> {
    let _ = p;
    Some(match e {
        IrExpr::Var(v) => env.get(*v)?.clone()?,
        IrExpr::Const(c) => c.clone(),
        IrExpr::Wild => return None,
        IrExpr::Unary(op, a, ty) => {
            unslot(functions::unary(*op, *ty, slot(&eval(a, env, p)?))?, *ty)
        }
        IrExpr::Arith(op, a, b, ty) => {
            let (x, y) = (eval(a, env, p)?, eval(b, env, p)?);
            unslot(functions::arith(*op, *ty, slot(&x), slot(&y))?, *ty)
        }
        IrExpr::User(u, args) => {
            let vals: Option<Vec<Value>> = args.iter().map(|a| eval(a, env, p)).collect();
            u.call(&vals?)?
        }
        IrExpr::Call(f, args) => {
            let vals: Option<Vec<Value>> = args.iter().map(|a| eval(a, env, p)).collect();
            let vals = vals?;
            match (f, vals.as_slice()) {
                (Functor::Cat, vs) => {
                    Value::sym(vs.iter().map(ToString::to_string).collect::<String>())
                }
                (Functor::Strlen, [Value::Symbol(s)]) => Value::Number(s.chars().count() as i32),
                (Functor::Substr, [Value::Symbol(s), Value::Number(i), Value::Number(n)]) => {
                    Value::sym(functions::substr(s, *i, *n)?)
                }
                (Functor::ToNumber, [Value::Symbol(s)]) => Value::Number(functions::to_number(s)?),
                (Functor::ToString, [v]) => Value::sym(crate::value::to_string_functor(v)),
                // A symbol stays itself (the checker allows `as` between symbols only).
                (Functor::As(_), [v @ Value::Symbol(_)]) => v.clone(),
                (Functor::As(t), [v]) => unslot(slot(v), *t),
                (Functor::Max(_) | Functor::Min(_), vs) => {
                    Value::extreme(vs, matches!(f, Functor::Max(_)))?.clone()
                }
                (Functor::Convert(c), [v]) if v.ty() == c.source() => {
                    unslot(functions::convert(*c, slot(v))?, c.target())
                }
                (Functor::Record(_), vs) => Value::Record(vs.into()),
                (Functor::Field(j, _), [Value::Record(fs)]) => fs.get(usize::from(*j))?.clone(),
                (Functor::Branch(t, b), vs) => Value::Adt {
                    branch: p.branch_name(*t, *b)?,
                    args: vs.into(),
                },
                (Functor::Arg(t, b, j), [Value::Adt { branch, args }])
                    if p.branch_name(*t, *b).as_deref() == Some(&**branch) =>
                {
                    args.get(usize::from(*j))?.clone()
                }
                _ => return None,
            }
        }
    })
}
