//! The plan stage: rules compiled against a symbol table (constants interned) and, per rule
//! and per choice of data parts, a pipeline of join and filter operators.
//!
//! A relation's data comes in up to two *parts*: the model's (materialised once, complete) and
//! the evaluation's own (being derived now, or derived earlier in this evaluation). A rule is
//! planned once per *variant*: an assignment of a part to each positive atom. Semi-naive
//! evaluation needs only the variants that read at least one part being derived now.

use std::fmt::{self, Write as _};
use std::sync::Arc;

use crate::ast::{AggKind, ArithOp, CmpOp, Functor, TestFn, UnaryOp};
use crate::functions::{self, PatternCache};
use crate::functors::UserFunctor;
use crate::ir::{Ir, IrExpr, IrLit, IrRule, RelId, VarId};
use crate::value::{Interner, Type, decode, encode};

/// An expression with constants interned.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum CExpr {
    Var(VarId),
    Const(u32),
    Unary(UnaryOp, Box<CExpr>, Type),
    Arith(ArithOp, Box<CExpr>, Box<CExpr>, Type),
    Call(Functor, Vec<CExpr>),
    User(Arc<UserFunctor>, Vec<CExpr>),
}

/// Mutable state expressions need: the symbol table (functors make new symbols) and
/// compiled patterns.
#[derive(Debug)]
pub(crate) struct EvalCx {
    pub symbols: Interner,
    pub patterns: PatternCache,
    /// How many more values `range` may generate (the evaluation's fact limit): a range a
    /// filter then discards costs work but derives no fact, so the fact limit alone would not
    /// stop `x = range(0, 2000000000), x < 0`.
    pub generate_left: usize,
    /// Set when a range wanted more than `generate_left`; the evaluator then stops with
    /// `EvalError::GenerateLimit`.
    pub generate_exceeded: bool,
}

impl CExpr {
    /// The expression's value under `env`; `None` where an operator has none (division by
    /// zero, say). Variables and constants, most arguments, are read in place.
    #[inline]
    pub(crate) fn eval(&self, env: &[u32], cx: &mut EvalCx) -> Option<u32> {
        match self {
            CExpr::Var(v) => Some(env[*v]),
            CExpr::Const(c) => Some(*c),
            other => other.eval_compound(env, cx),
        }
    }

    fn eval_compound(&self, env: &[u32], cx: &mut EvalCx) -> Option<u32> {
        match self {
            CExpr::Var(v) => Some(env[*v]),
            CExpr::Const(c) => Some(*c),
            CExpr::Unary(op, e, ty) => functions::unary(*op, *ty, e.eval(env, cx)?),
            CExpr::Arith(op, a, b, ty) => {
                let a = a.eval(env, cx)?;
                let b = b.eval(env, cx)?;
                functions::arith(*op, *ty, a, b)
            }
            CExpr::Call(f, args) => match f {
                Functor::Cat => {
                    let mut s = String::new();
                    for a in args {
                        let id = a.eval(env, cx)?;
                        s.push_str(cx.symbols.resolve(id));
                    }
                    Some(cx.symbols.intern(&s))
                }
                Functor::Strlen => {
                    let id = args.first()?.eval(env, cx)?;
                    Some(cx.symbols.resolve(id).chars().count() as i32 as u32)
                }
                Functor::Substr => {
                    let s = args.first()?.eval(env, cx)?;
                    let i = args.get(1)?.eval(env, cx)? as i32;
                    let n = args.get(2)?.eval(env, cx)? as i32;
                    let out = functions::substr(cx.symbols.resolve(s), i, n)?;
                    Some(cx.symbols.intern(&out))
                }
                Functor::ToNumber => {
                    let id = args.first()?.eval(env, cx)?;
                    functions::to_number(cx.symbols.resolve(id)).map(|n| n as u32)
                }
                Functor::Convert(c) => functions::convert(*c, args.first()?.eval(env, cx)?),
                // A generator, never an expression (the checker keeps it out of expressions).
                Functor::Range => None,
                // The same bits, read as another type.
                Functor::As(_) => args.first()?.eval(env, cx),
                Functor::Max(ty) | Functor::Min(ty) => {
                    let want = if matches!(f, Functor::Max(_)) {
                        std::cmp::Ordering::Greater
                    } else {
                        std::cmp::Ordering::Less
                    };
                    let mut best = args.first()?.eval(env, cx)?;
                    for a in &args[1..] {
                        let x = a.eval(env, cx)?;
                        let ord = if *ty == Type::Symbol {
                            let (x, b) = (cx.symbols.resolve(x), cx.symbols.resolve(best));
                            x.as_bytes().cmp(b.as_bytes())
                        } else {
                            functions::cmp_numeric(*ty, x, best)
                        };
                        if ord == want {
                            best = x;
                        }
                    }
                    Some(best)
                }
                // The checker replaced these with conversions.
                Functor::ToFloat | Functor::ToUnsigned => None,
                Functor::Record(t) => {
                    let Type::Record(t) = *t else { return None };
                    pack(env, cx, None, args, |types| {
                        types.get(usize::from(t)).map(|rt| &rt.fields[..])
                    })
                }
                Functor::Field(j, _) => {
                    let id = args.first()?.eval(env, cx)?;
                    cx.symbols.resolve_record(id)?.get(usize::from(*j)).copied()
                }
                // A branch's value is the record of its index and its fields.
                Functor::Branch(t, b) => pack(env, cx, Some(u32::from(*b)), args, |types| {
                    let rt = types.get(usize::from(*t))?;
                    Some(&rt.branches.get(usize::from(*b))?.fields[..])
                }),
                Functor::Arg(_, b, j) => {
                    let id = args.first()?.eval(env, cx)?;
                    let slots = cx.symbols.resolve_record(id)?;
                    if slots.first() != Some(&u32::from(*b)) {
                        return None;
                    }
                    slots.get(1 + usize::from(*j)).copied()
                }
                Functor::ToString => {
                    let (arg, ty) = match args.first()? {
                        CExpr::Arith(_, _, _, t) | CExpr::Unary(_, _, t) => (args.first()?, *t),
                        c @ CExpr::Call(Functor::Convert(conv), _) => (c, conv.target()),
                        c @ CExpr::Call(Functor::As(t), _) => (c, *t),
                        other => (other, Type::Number),
                    };
                    let slot = arg.eval(env, cx)?;
                    // C++'s `std::to_string`, as Soufflé: six decimals for a float.
                    let text = crate::value::to_string_functor(&crate::value::decode(
                        slot,
                        ty,
                        &cx.symbols,
                    ));
                    Some(cx.symbols.intern(&text))
                }
            },
            CExpr::User(u, args) => {
                let mut vals = Vec::with_capacity(args.len());
                for (a, ty) in args.iter().zip(&u.params) {
                    vals.push(decode(a.eval(env, cx)?, *ty, &cx.symbols));
                }
                let v = u.call(&vals)?;
                Some(encode(&v, &mut cx.symbols))
            }
        }
    }
}

/// The record of `head` (a branch's index) and the values of `args`, whose types `fields`
/// gives: interned, with its depth (one more than its deepest record field's).
fn pack(
    env: &[u32],
    cx: &mut EvalCx,
    head: Option<u32>,
    args: &[CExpr],
    fields: impl for<'a> Fn(&'a [crate::value::RecordType]) -> Option<&'a [(String, Type)]>,
) -> Option<u32> {
    let mut small = [0u32; 8];
    let mut large = Vec::new();
    let n = args.len() + usize::from(head.is_some());
    let slots: &mut [u32] = if n <= small.len() {
        &mut small[..n]
    } else {
        large.resize(n, 0);
        &mut large
    };
    let at = usize::from(head.is_some());
    if let Some(h) = head {
        slots[0] = h;
    }
    for (slot, a) in slots[at..].iter_mut().zip(args) {
        *slot = a.eval(env, cx)?;
    }
    let symbols = &cx.symbols;
    let mut depth = 0;
    for (slot, (_, ty)) in slots[at..].iter().zip(fields(&symbols.record_types)?) {
        if let Type::Record(_) = ty {
            depth = depth.max(symbols.record_depth(*slot));
        }
    }
    Some(cx.symbols.intern_record(slots, depth.saturating_add(1)))
}

/// A compiled atom argument.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum CArg {
    Var(VarId),
    Const(u32),
    Wild,
    Expr(CExpr),
}

/// A compiled atom.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CAtom {
    pub rel: RelId,
    pub args: Vec<CArg>,
}

/// A compiled literal.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum CLit {
    Pos(CAtom),
    Neg(CAtom),
    Cmp(CmpOp, CExpr, CExpr, Type),
    Test(TestFn, CExpr, CExpr, bool),
    Bind(VarId, CExpr),
    /// `var = range(args)`: a generator, or a membership test when `bound`.
    Range {
        var: VarId,
        args: Vec<CExpr>,
        ty: Type,
        bound: bool,
    },
    Agg {
        var: VarId,
        kind: AggKind,
        target: Option<CExpr>,
        ty: Type,
        body: Vec<CLit>,
        /// Variables of the enclosing rule the body reads (bound before the aggregate).
        outer: Vec<VarId>,
    },
}

/// A compiled rule.
#[derive(Debug, Clone)]
pub(crate) struct CRule {
    pub head_rel: RelId,
    pub head: Vec<CExpr>,
    pub lits: Vec<CLit>,
    pub nvars: usize,
    /// Which variables each literal needs bound.
    pub inputs: Vec<Vec<VarId>>,
    /// Which variables each literal binds.
    pub outputs: Vec<Vec<VarId>>,
    /// Whether a literal generates several bindings (`x = range(...)` with `x` unbound).
    pub generates: bool,
}

fn compile_expr(e: &IrExpr, symbols: &mut Interner) -> CExpr {
    match e {
        IrExpr::Var(v) => CExpr::Var(*v),
        IrExpr::Const(c) => CExpr::Const(encode(c, symbols)),
        IrExpr::Wild => CExpr::Const(0),
        IrExpr::Unary(op, e, t) => CExpr::Unary(*op, Box::new(compile_expr(e, symbols)), *t),
        IrExpr::Arith(op, a, b, t) => CExpr::Arith(
            *op,
            Box::new(compile_expr(a, symbols)),
            Box::new(compile_expr(b, symbols)),
            *t,
        ),
        // `to_string` of a constant is a constant (its type is known here, and would not be
        // once encoded: a float's bits would print as a number).
        IrExpr::Call(Functor::ToString, args)
            if let [IrExpr::Const(c)] = args.as_slice()
                && c.ty() != Type::Symbol =>
        {
            CExpr::Const(symbols.intern(&crate::value::to_string_functor(c)))
        }
        IrExpr::Call(f, args) => {
            let args: Vec<CExpr> = args.iter().map(|a| compile_expr(a, symbols)).collect();
            // `to_string` needs its argument's type; numbers are the default, other numeric
            // types arrive wrapped so the evaluator can tell.
            CExpr::Call(*f, args)
        }
        IrExpr::User(u, args) => CExpr::User(
            Arc::clone(u),
            args.iter().map(|a| compile_expr(a, symbols)).collect(),
        ),
    }
}

fn compile_atom(a: &crate::ir::IrAtom, symbols: &mut Interner) -> CAtom {
    CAtom {
        rel: a.rel,
        args: a
            .args
            .iter()
            .map(|e| match e {
                IrExpr::Var(v) => CArg::Var(*v),
                IrExpr::Const(c) => CArg::Const(encode(c, symbols)),
                IrExpr::Wild => CArg::Wild,
                other => CArg::Expr(compile_expr(other, symbols)),
            })
            .collect(),
    }
}

fn compile_lit(l: &IrLit, symbols: &mut Interner) -> CLit {
    match l {
        IrLit::Pos(a) => CLit::Pos(compile_atom(a, symbols)),
        IrLit::Neg(a) => CLit::Neg(compile_atom(a, symbols)),
        IrLit::Cmp {
            op, lhs, rhs, ty, ..
        } => CLit::Cmp(
            *op,
            compile_expr(lhs, symbols),
            compile_expr(rhs, symbols),
            *ty,
        ),
        IrLit::Test {
            func,
            pattern,
            subject,
            negated,
            ..
        } => CLit::Test(
            *func,
            compile_expr(pattern, symbols),
            compile_expr(subject, symbols),
            *negated,
        ),
        IrLit::Bind { var, expr, .. } => CLit::Bind(*var, compile_expr(expr, symbols)),
        IrLit::Range {
            var,
            args,
            ty,
            bound,
            ..
        } => CLit::Range {
            var: *var,
            args: args.iter().map(|a| compile_expr(a, symbols)).collect(),
            ty: *ty,
            bound: *bound,
        },
        IrLit::Agg {
            var,
            kind,
            target,
            ty,
            body,
            outer,
            ..
        } => CLit::Agg {
            var: *var,
            kind: *kind,
            target: target.as_ref().map(|t| compile_expr(t, symbols)),
            ty: *ty,
            body: body.iter().map(|b| compile_lit(b, symbols)).collect(),
            outer: outer.clone(),
        },
    }
}

/// Wraps `to_string` arguments of non-number numeric type so evaluation knows the type.
fn fix_to_string(e: &mut CExpr, rule: &IrRule) {
    match e {
        CExpr::Call(Functor::ToString, args) => {
            if let Some(CExpr::Var(v)) = args.first() {
                let ty = rule.vars[*v].ty;
                if ty != Type::Number {
                    let v = *v;
                    // `x + 0` in the variable's own type: same value, typed.
                    let zero = if ty == Type::Float { 0f32.to_bits() } else { 0 };
                    args[0] = CExpr::Arith(
                        ArithOp::Add,
                        Box::new(CExpr::Var(v)),
                        Box::new(CExpr::Const(zero)),
                        ty,
                    );
                }
            }
            args.iter_mut().for_each(|a| fix_to_string(a, rule));
        }
        CExpr::Call(_, args) | CExpr::User(_, args) => {
            args.iter_mut().for_each(|a| fix_to_string(a, rule));
        }
        CExpr::Unary(_, a, _) => fix_to_string(a, rule),
        CExpr::Arith(_, a, b, _) => {
            fix_to_string(a, rule);
            fix_to_string(b, rule);
        }
        CExpr::Var(_) | CExpr::Const(_) => {}
    }
}

fn fix_lit(l: &mut CLit, rule: &IrRule) {
    match l {
        CLit::Pos(a) | CLit::Neg(a) => a.args.iter_mut().for_each(|x| {
            if let CArg::Expr(e) = x {
                fix_to_string(e, rule);
            }
        }),
        CLit::Cmp(_, a, b, _) | CLit::Test(_, a, b, _) => {
            fix_to_string(a, rule);
            fix_to_string(b, rule);
        }
        CLit::Bind(_, e) => fix_to_string(e, rule),
        CLit::Range { args, .. } => args.iter_mut().for_each(|a| fix_to_string(a, rule)),
        CLit::Agg { target, body, .. } => {
            if let Some(t) = target {
                fix_to_string(t, rule);
            }
            body.iter_mut().for_each(|b| fix_lit(b, rule));
        }
    }
}

/// Compiles every rule of a program, interning its constants.
pub(crate) fn compile_rules(ir: &Ir, symbols: &mut Interner) -> Vec<CRule> {
    ir.rules
        .iter()
        .map(|r| {
            let mut head: Vec<CExpr> = r
                .head
                .args
                .iter()
                .map(|e| compile_expr(e, symbols))
                .collect();
            head.iter_mut().for_each(|e| fix_to_string(e, r));
            let mut lits: Vec<CLit> = r.body.iter().map(|l| compile_lit(l, symbols)).collect();
            lits.iter_mut().for_each(|l| fix_lit(l, r));
            let generates = lits
                .iter()
                .any(|l| matches!(l, CLit::Range { bound: false, .. }));
            CRule {
                head_rel: r.head.rel,
                head,
                generates,
                lits,
                nvars: r.vars.len(),
                inputs: r.body.iter().map(IrLit::inputs).collect(),
                outputs: r.body.iter().map(IrLit::outputs).collect(),
            }
        })
        .collect()
}

/// The widest row any plan of the program can need: the largest arity, or the most
/// variables any operator of any plan carries. A rule's plans differ only in which atom they
/// start from (the rest of the order follows from the bindings), so planning each rule once
/// per possible first atom covers every plan a query can make.
pub(crate) fn row_width(ir: &Ir) -> usize {
    let mut w = ir
        .relations
        .iter()
        .map(|r| r.arity())
        .max()
        .unwrap_or(1)
        .max(1);
    let mut scratch = Interner::default();
    let rules = compile_rules(ir, &mut scratch);
    for (ri, rule) in rules.iter().enumerate() {
        for (i, lit) in rule.lits.iter().enumerate() {
            let CLit::Pos(a) = lit else { continue };
            let which: Vec<Which> = (0..rule.lits.len())
                .map(|j| if j == i { Which::Local } else { Which::Model })
                .collect();
            let rel = a.rel;
            let plan = plan_rule(ri, rule, &which, &|r| r == rel);
            for op in &plan.ops {
                w = w.max(match op.out() {
                    Emit::Plain(l) => l.len(),
                    Emit::Keyed(k, l) => k.len().max(l.len()),
                    Emit::Head => 0,
                });
            }
        }
    }
    w
}

/// Which part of a relation an atom reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Which {
    /// The model's complete part.
    Model,
    /// This evaluation's part: live if the relation is in the stratum being evaluated,
    /// complete if it was derived in an earlier stratum of this evaluation.
    Local,
}

/// Where a key value comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum KeySrc {
    Var(VarId),
    Const(u32),
}

/// How an operator hands its results on.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Emit {
    /// Rows holding these variables.
    Plain(Vec<VarId>),
    /// Rows keyed for a join with a live relation.
    Keyed(Vec<KeySrc>, Vec<VarId>),
    /// Tuples of the head relation.
    Head,
}

/// How one atom's tuples are matched once its key columns are known.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Match {
    /// The literal index of the atom.
    pub lit: usize,
    pub rel: RelId,
    pub which: Which,
    /// Columns known before the atom (constants and bound variables), in order.
    pub key_cols: Vec<usize>,
    pub key: Vec<KeySrc>,
    /// Columns that bind a new variable (first occurrence).
    pub binds: Vec<(usize, VarId)>,
    /// Pairs of columns that must be equal (a new variable repeated in the atom).
    pub eqs: Vec<(usize, usize)>,
}

/// One operator of a rule's pipeline.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Op {
    /// Reads an atom's part (the recent tuples of a live part; all tuples of a complete part,
    /// once) and applies `filters`.
    Scan {
        m: Match,
        filters: Vec<usize>,
        out: Emit,
    },
    /// Joins plain rows with a complete part through its index (a datafrog leapjoin).
    Lookup { m: Match, out: Emit },
    /// Joins keyed rows with a live part (a datafrog join of two variables).
    Join { m: Match, out: Emit },
    /// Applies filters, bindings, aggregates and negations to plain rows.
    Map { filters: Vec<usize>, out: Emit },
}

impl Op {
    pub(crate) fn out(&self) -> &Emit {
        match self {
            Op::Scan { out, .. }
            | Op::Lookup { out, .. }
            | Op::Join { out, .. }
            | Op::Map { out, .. } => out,
        }
    }
}

/// A rule's pipeline for one variant.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RulePlan {
    pub rule: usize,
    pub ops: Vec<Op>,
}

/// Plans a rule for a variant.
///
/// `which[i]` is the part the `i`-th literal reads if it is a positive atom; `live(rel)` says
/// whether a relation's local part is being derived in this stratum. The first operator reads
/// a live part when there is one, so that every round only touches new tuples.
pub(crate) fn plan_rule(
    rule_index: usize,
    rule: &CRule,
    which: &[Which],
    live: &dyn Fn(RelId) -> bool,
) -> RulePlan {
    let is_live = |i: usize| match &rule.lits[i] {
        CLit::Pos(a) => which[i] == Which::Local && live(a.rel),
        _ => false,
    };
    let positives: Vec<usize> = (0..rule.lits.len())
        .filter(|&i| matches!(rule.lits[i], CLit::Pos(_)))
        .collect();
    // Source: the first live atom; else the first local one; else the first atom.
    let source = positives
        .iter()
        .copied()
        .find(|&i| is_live(i))
        .or_else(|| {
            positives
                .iter()
                .copied()
                .find(|&i| which[i] == Which::Local)
        })
        .or_else(|| positives.first().copied());
    let mut bound = vec![false; rule.nvars];
    let mut done = vec![false; rule.lits.len()];
    let mut steps: Vec<(Option<usize>, Vec<usize>)> = Vec::new(); // (atom, filters after it)

    // Filters (every non-positive literal) whose inputs are bound, in body order, until none
    // is left ready; the variables they bind count as bound for the next ones.
    let drain = |bound: &mut Vec<bool>, done: &mut Vec<bool>| {
        let mut out = Vec::new();
        loop {
            let before = out.len();
            for (i, lit) in rule.lits.iter().enumerate() {
                if !done[i]
                    && !matches!(lit, CLit::Pos(_))
                    && rule.inputs[i].iter().all(|&v| bound[v])
                {
                    done[i] = true;
                    out.push(i);
                    for &v in &rule.outputs[i] {
                        bound[v] = true;
                    }
                }
            }
            if out.len() == before {
                return out;
            }
        }
    };

    // The first step: the source atom, or for a rule without positive atoms, the filters over
    // constants alone.
    if let Some(src) = source {
        done[src] = true;
        for &v in &rule.outputs[src] {
            bound[v] = true;
        }
    }
    let first = drain(&mut bound, &mut done);
    steps.push((source, first));
    // Remaining atoms: the first in body order that shares a bound variable, else the first.
    loop {
        let remaining: Vec<usize> = positives.iter().copied().filter(|&i| !done[i]).collect();
        if remaining.is_empty() {
            break;
        }
        let shares = |i: usize| match &rule.lits[i] {
            CLit::Pos(a) => a
                .args
                .iter()
                .any(|x| matches!(x, CArg::Var(v) if bound[*v]) || matches!(x, CArg::Const(_))),
            _ => false,
        };
        let next = remaining
            .iter()
            .copied()
            .find(|&i| shares(i))
            .unwrap_or(remaining[0]);
        done[next] = true;
        for &v in &rule.outputs[next] {
            bound[v] = true;
        }
        let fs = drain(&mut bound, &mut done);
        steps.push((Some(next), fs));
    }

    // Liveness: which variables are needed after each step.
    let mut needed_after: Vec<Vec<bool>> = vec![vec![false; rule.nvars]; steps.len()];
    let mut need = vec![false; rule.nvars];
    for e in &rule.head {
        let mut vs = Vec::new();
        cexpr_vars(e, &mut vs);
        vs.into_iter().for_each(|v| need[v] = true);
    }
    for s in (0..steps.len()).rev() {
        needed_after[s] = need.clone();
        let (atom, filters) = &steps[s];
        for &f in filters {
            for &v in &rule.inputs[f] {
                need[v] = true;
            }
        }
        if let Some(a) = atom
            && let CLit::Pos(at) = &rule.lits[*a]
        {
            // Variables bound before this atom and used as its key.
            for x in &at.args {
                if let CArg::Var(v) = x {
                    need[*v] = true;
                }
            }
        }
    }

    // Build operators.
    let mut ops = Vec::new();
    let mut bound = vec![false; rule.nvars];
    let mut layout: Vec<VarId> = Vec::new();
    for (s, (atom, filters)) in steps.iter().enumerate() {
        let m = atom.map(|a| make_match(rule, a, which[a], &bound));
        if let Some(m) = &m {
            for &(_, v) in &m.binds {
                bound[v] = true;
            }
        }
        for &f in filters {
            for &v in &rule.outputs[f] {
                bound[v] = true;
            }
        }
        let keep: Vec<VarId> = (0..rule.nvars)
            .filter(|&v| bound[v] && needed_after[s][v])
            .collect();
        // What does the next step want?
        let out = match steps.get(s + 1) {
            None => Emit::Head,
            Some((Some(next), _)) if is_live(*next) => {
                let nm = make_match(rule, *next, which[*next], &bound);
                Emit::Keyed(nm.key.clone(), keep.clone())
            }
            Some(_) => Emit::Plain(keep.clone()),
        };
        match m {
            None => ops.push(Op::Map {
                filters: filters.clone(),
                out,
            }),
            Some(m) if s == 0 => ops.push(Op::Scan {
                m,
                filters: filters.clone(),
                out,
            }),
            Some(m) => {
                let live_atom = is_live(m.lit);
                // Joins emit without filtering; filters after a join get a Map of their own,
                // and so does a head with expressions.
                let head_is_simple = rule
                    .head
                    .iter()
                    .all(|e| matches!(e, CExpr::Var(_) | CExpr::Const(_)));
                let needs_map =
                    !filters.is_empty() || (matches!(out, Emit::Head) && !head_is_simple);
                let join_out = if needs_map {
                    let carried: Vec<VarId> = (0..rule.nvars)
                        .filter(|&v| {
                            bound[v]
                                && (needed_after[s][v]
                                    || filters.iter().any(|&f| rule.inputs[f].contains(&v)))
                        })
                        .filter(|&v| !filters.iter().any(|&f| rule.outputs[f].contains(&v)))
                        .collect();
                    Emit::Plain(carried)
                } else {
                    out.clone()
                };
                if live_atom {
                    ops.push(Op::Join { m, out: join_out });
                } else {
                    ops.push(Op::Lookup { m, out: join_out });
                }
                if needs_map {
                    ops.push(Op::Map {
                        filters: filters.clone(),
                        out,
                    });
                }
            }
        }
        layout = keep;
    }
    let _ = layout;
    RulePlan {
        rule: rule_index,
        ops,
    }
}

pub(crate) fn cexpr_vars(e: &CExpr, out: &mut Vec<VarId>) {
    match e {
        CExpr::Var(v) => out.push(*v),
        CExpr::Const(_) => {}
        CExpr::Unary(_, a, _) => cexpr_vars(a, out),
        CExpr::Arith(_, a, b, _) => {
            cexpr_vars(a, out);
            cexpr_vars(b, out);
        }
        CExpr::Call(_, args) | CExpr::User(_, args) => {
            args.iter().for_each(|a| cexpr_vars(a, out));
        }
    }
}

/// How atom `lit` matches given the variables bound before it.
pub(crate) fn make_match(rule: &CRule, lit: usize, which: Which, bound: &[bool]) -> Match {
    let CLit::Pos(a) = &rule.lits[lit] else {
        return Match {
            lit,
            rel: 0,
            which,
            key_cols: vec![],
            key: vec![],
            binds: vec![],
            eqs: vec![],
        };
    };
    let mut key_cols = Vec::new();
    let mut key = Vec::new();
    let mut binds: Vec<(usize, VarId)> = Vec::new();
    let mut eqs = Vec::new();
    for (col, arg) in a.args.iter().enumerate() {
        match arg {
            CArg::Const(c) => {
                key_cols.push(col);
                key.push(KeySrc::Const(*c));
            }
            CArg::Var(v) if bound[*v] => {
                key_cols.push(col);
                key.push(KeySrc::Var(*v));
            }
            CArg::Var(v) => {
                if let Some(&(first, _)) = binds.iter().find(|(_, w)| w == v) {
                    eqs.push((first, col));
                } else {
                    binds.push((col, *v));
                }
            }
            CArg::Wild | CArg::Expr(_) => {}
        }
    }
    Match {
        lit,
        rel: a.rel,
        which,
        key_cols,
        key,
        binds,
        eqs,
    }
}

/// Renders plans for the `plan` stage's text dump.
pub(crate) struct DisplayPlan<'a>(pub &'a Ir, pub &'a RulePlan);

impl fmt::Display for DisplayPlan<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (ir, plan) = (self.0, self.1);
        let rule = &ir.rules[plan.rule];
        let var = |v: &VarId| rule.vars[*v].name.clone();
        let emit = |e: &Emit| match e {
            Emit::Head => format!("-> {}", ir.relations[rule.head.rel].name),
            Emit::Plain(vs) => {
                format!("-> ({})", vs.iter().map(var).collect::<Vec<_>>().join(", "))
            }
            Emit::Keyed(k, vs) => format!(
                "-> [{}] ({})",
                k.iter()
                    .map(|k| match k {
                        KeySrc::Var(v) => var(v),
                        KeySrc::Const(c) => format!("#{c}"),
                    })
                    .collect::<Vec<_>>()
                    .join(", "),
                vs.iter().map(var).collect::<Vec<_>>().join(", ")
            ),
        };
        let m = |m: &Match| {
            format!(
                "{}{}[{}]",
                ir.relations[m.rel].name,
                if m.which == Which::Model {
                    "@model"
                } else {
                    ""
                },
                m.key_cols
                    .iter()
                    .map(|c| c.to_string())
                    .collect::<Vec<_>>()
                    .join(",")
            )
        };
        let mut out = String::new();
        let _ = write!(out, "{}:", rule.id);
        for op in &plan.ops {
            let _ = match op {
                Op::Scan {
                    m: mm,
                    filters,
                    out: e,
                } => write!(out, " scan {} filters {:?} {};", m(mm), filters, emit(e)),
                Op::Lookup { m: mm, out: e } => write!(out, " lookup {} {};", m(mm), emit(e)),
                Op::Join { m: mm, out: e } => write!(out, " join {} {};", m(mm), emit(e)),
                Op::Map { filters, out: e } => write!(out, " map {:?} {};", filters, emit(e)),
            };
        }
        f.write_str(&out)
    }
}

#[cfg(test)]
mod tests {
    use crate::{Program, diag::Source};

    fn width(src: &str) -> usize {
        super::row_width(Program::compile(&Source::new("t.dl", src)).unwrap().ir())
    }

    #[test]
    fn transitive_closure_fits_two_slots_whatever_atom_a_query_starts_from() {
        let tc = ".decl e(x: number, y: number)\n.decl p(x: number, y: number)\np(x, y) :- e(x, y).\np(x, z) :- p(x, y), e(y, z).\n";
        assert_eq!(width(tc), 2);
    }

    #[test]
    fn a_three_way_join_carries_three_variables() {
        let src = ".decl e(x: number, y: number)\n.decl t(x: number, y: number, z: number)\nt(x, y, z) :- e(x, y), e(y, z), e(z, x).\n";
        assert_eq!(width(src), 3);
    }
}
