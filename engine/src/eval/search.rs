//! Filters, negation, aggregates and the tuple-at-a-time search shared by the pipeline,
//! aggregates, proofs and why-not.

use super::{Db, Part, Row};
use crate::ast::AggKind;
use crate::functions::{self, cmp_numeric};
use crate::ir::RelId;
use crate::plan::{CArg, CAtom, CExpr, CLit, EvalCx};
use crate::value::Type;

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
            let (symbols, patterns) = (&cx.symbols, &mut cx.patterns);
            patterns.test(*f, symbols.resolve(p), symbols.resolve(s)) != *negated
        }
        CLit::Bind(v, e) => match e.eval(env, cx) {
            Some(x) => {
                env[*v] = x;
                true
            }
            None => false,
        },
        // As a filter, `x = range(...)` holds when `x` is one of the values (a generator is
        // run by the callers, through `generated`).
        CLit::Range { var, .. } => {
            let x = env[*var];
            generated_values(lit, env, cx).is_some_and(|(_, values)| values.contains(x))
        }
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

/// The values `x = range(...)` gives under `env`, with their type (no value when an argument
/// cannot be computed); `None` for any other literal.
fn generated_values(lit: &CLit, env: &[u32], cx: &mut EvalCx) -> Option<(Type, functions::Range)> {
    let CLit::Range { args, ty, .. } = lit else {
        return None;
    };
    let mut vals = [0u32; 3];
    for (slot, a) in vals.iter_mut().zip(args) {
        match a.eval(env, cx) {
            Some(x) => *slot = x,
            // Nothing to count: an empty range.
            None => return Some((*ty, functions::range(*ty, 0, 0, Some(1)))),
        }
    }
    let step = (args.len() == 3).then_some(vals[2]);
    Some((*ty, functions::range(*ty, vals[0], vals[1], step)))
}

/// A generator literal's variable and values: `x = range(...)` where `x` is not bound before
/// (by the plan: `bound` says so statically; a search passes what it has bound).
pub(crate) fn generated(
    lit: &CLit,
    env: &[u32],
    bound_now: Option<&[bool]>,
    cx: &mut EvalCx,
) -> Option<(usize, std::iter::Take<functions::Range>)> {
    let CLit::Range { var, bound, .. } = lit else {
        return None;
    };
    let is_bound = bound_now.map_or(*bound, |b| b[*var]);
    if is_bound {
        return None;
    }
    let (_, values) = generated_values(lit, env, cx)?;
    // Counted before any is used, and at most one past what is left.
    let n = values
        .clone()
        .take(cx.generate_left.saturating_add(1))
        .count();
    if n > cx.generate_left {
        cx.generate_left = 0;
        cx.generate_exceeded = true;
        return Some((*var, values.take(0)));
    }
    cx.generate_left -= n;
    Some((*var, values.take(n)))
}

/// Whether the instance of a negated atom under `env` is present.
pub(crate) fn negated_present<const W: usize>(
    a: &CAtom,
    env: &[u32],
    db: &Db<'_, W>,
    cx: &mut EvalCx,
) -> bool {
    // Columns that are not `_`, and their values: at most `W` (no allocation per test).
    let mut cols = [0usize; W];
    let mut n = 0;
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
        key[n] = v;
        cols[n] = c;
        n += 1;
    }
    let full = n == a.args.len();
    db.parts(a.rel).iter().flatten().any(|p| {
        if full {
            p.contains(&key)
        } else {
            p.has_projection(&cols[..n], &key)
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
    // `mean`: the values' sum and how many (see `functions::mean`).
    let mut values = functions::Mean::default();
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
            if kind == AggKind::Mean {
                values.add(f32::from_bits(x));
            } else {
                acc = Some(match acc {
                    None => x,
                    Some(a) => fold(kind, ty, a, x),
                });
            }
        }
        true
    });
    match kind {
        AggKind::Count => Some(count),
        AggKind::Sum => Some(acc.unwrap_or(if ty == Type::Float { 0f32.to_bits() } else { 0 })),
        AggKind::Min | AggKind::Max => acc,
        AggKind::Mean => values.value().map(f32::to_bits),
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
        AggKind::Count | AggKind::Mean => a,
    }
}

/// Parts with at most this many tuples are scanned rather than indexed by the search.
const SCAN_BELOW: usize = 32;

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
            let mut binds_buf = [(0usize, 0usize); W];
            let mut nbinds = 0;
            let mut eqs_buf = [(0usize, 0usize); W];
            let mut neqs = 0;
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
                        if let Some(&(first, _)) = binds_buf[..nbinds].iter().find(|(_, w)| w == v)
                        {
                            eqs_buf[neqs] = (first, c);
                            neqs += 1;
                        } else {
                            binds_buf[nbinds] = (c, *v);
                            nbinds += 1;
                        }
                    }
                    CArg::Wild | CArg::Expr(_) => {}
                }
            }
            let cols = &cols_buf[..ncols];
            let (binds, eqs) = (&binds_buf[..nbinds], &eqs_buf[..neqs]);
            for part in db.parts(a.rel).into_iter().flatten() {
                // A part of a few tuples (a query's own) is scanned: cheaper than indexing it.
                let ix;
                let (few, indexed): (&[Row<W>], &[(Row<W>, Row<W>)]) = if part.len() <= SCAN_BELOW {
                    (&part.tuples.elements, &[])
                } else {
                    ix = part.index(cols);
                    (&[], part.lookup(&ix, &key))
                };
                let matching = few
                    .iter()
                    .filter(|t| cols.iter().enumerate().all(|(k, &c)| t[c] == key[k]))
                    .chain(indexed.iter().map(|(_, t)| t));
                for t in matching {
                    if !eqs.iter().all(|&(x, y)| t[x] == t[y]) {
                        continue;
                    }
                    if let Some(acc) = accept
                        && !acc(a.rel, part, t)
                    {
                        continue;
                    }
                    for &(c, v) in binds {
                        env[v] = t[c];
                        bound[v] = true;
                    }
                    trail.push((a.rel, *t));
                    let go_on = search_with(lits, i + 1, env, bound, db, cx, accept, trail, f);
                    trail.pop();
                    for &(_, v) in binds {
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
            if let Some((var, values)) = generated(other, env, Some(bound), cx) {
                bound[var] = true;
                for x in values {
                    env[var] = x;
                    if !search_with(lits, i + 1, env, bound, db, cx, accept, trail, f) {
                        bound[var] = false;
                        return false;
                    }
                }
                bound[var] = false;
                return true;
            }
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
