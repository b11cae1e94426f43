//! Record and branch patterns: `e = [x, _]` and `e = $B(x, _)` (and a record or branch in a
//! body atom, which lowering makes such an equality) become equalities of their fields with
//! field reads of `e`, which `bind_equalities` turns into bindings or filters.

use std::collections::BTreeSet;

use crate::ast::{self, Functor, Span};
use crate::ir::{IrExpr, IrLit, VarId};
use crate::value::{Type, Value};

/// `e = [a, b, ..]` (either way round) with `e`'s value known and the record's not: the
/// equalities of its fields with `e`'s (`a = field(e, 0)`, `_` fields skipped), which bind or
/// test them (a nested record is taken apart the same way in its turn); a record of only `_`
/// tests that `e` is not `nil`. A field of `nil` has no value, so `nil` matches no pattern.
pub(super) fn destructured(l: &IrLit, grounded: &BTreeSet<VarId>) -> Option<Vec<IrLit>> {
    let IrLit::Cmp {
        op: ast::CmpOp::Eq,
        lhs,
        rhs,
        span,
        ..
    } = l
    else {
        return None;
    };
    let ready = |e: &IrExpr| ready(e, grounded);
    let (of, record) = match (lhs, rhs) {
        (record @ IrExpr::Call(Functor::Record(_) | Functor::Branch(..), _), of)
            if !ready(record) && ready(of) =>
        {
            (of, record)
        }
        (of, record @ IrExpr::Call(Functor::Record(_) | Functor::Branch(..), _))
            if !ready(record) && ready(of) =>
        {
            (of, record)
        }
        _ => return None,
    };
    let mut out = Vec::new();
    match record {
        IrExpr::Call(Functor::Branch(t, b), args) => {
            branch_equalities(of, (*t, *b), args, *span, &mut out);
        }
        IrExpr::Call(_, fields) => field_equalities(of, fields, *span, &mut out),
        _ => return None,
    }
    Some(out)
}

/// `e = $B(a, _, ..)` taken apart: `a = e[$B:0]`, ... (a field of a value of another branch has
/// no value); a branch of only `_` tests that `e` is of that branch, as `e = $B(e[$B:0], ..)`.
fn branch_equalities(
    of: &IrExpr,
    (t, b): (u16, u16),
    args: &[IrExpr],
    span: Span,
    out: &mut Vec<IrLit>,
) {
    let arg = |j: usize| {
        let j = u16::try_from(j).unwrap_or(u16::MAX);
        IrExpr::Call(Functor::Arg(t, b, j), vec![of.clone()])
    };
    if args.iter().all(is_wild) {
        out.push(IrLit::Cmp {
            op: ast::CmpOp::Eq,
            lhs: of.clone(),
            rhs: IrExpr::Call(Functor::Branch(t, b), (0..args.len()).map(arg).collect()),
            ty: Type::Number,
            span,
        });
        return;
    }
    for (j, a) in args.iter().enumerate() {
        if !is_wild(a) {
            out.push(IrLit::Cmp {
                op: ast::CmpOp::Eq,
                lhs: a.clone(),
                rhs: arg(j),
                ty: Type::Number,
                span,
            });
        }
    }
}

fn field_equalities(of: &IrExpr, fields: &[IrExpr], span: Span, out: &mut Vec<IrLit>) {
    if fields.is_empty() || fields.iter().all(is_wild) {
        // `[]` is one value; `[_, _]` is any record but `nil`.
        let (op, rhs) = if fields.is_empty() {
            let empty = IrExpr::Call(Functor::Record(Value::ANY_RECORD), Vec::new());
            (ast::CmpOp::Eq, empty)
        } else {
            (ast::CmpOp::Ne, IrExpr::Const(Value::Nil))
        };
        out.push(IrLit::Cmp {
            op,
            lhs: of.clone(),
            rhs,
            ty: Type::Number,
            span,
        });
        return;
    }
    let n = u16::try_from(fields.len()).unwrap_or(u16::MAX);
    for (j, f) in fields.iter().enumerate() {
        let j = u16::try_from(j).unwrap_or(u16::MAX);
        let field = IrExpr::Call(Functor::Field(j, n), vec![of.clone()]);
        match f {
            IrExpr::Wild => {}
            other => out.push(IrLit::Cmp {
                op: ast::CmpOp::Eq,
                lhs: other.clone(),
                rhs: field,
                ty: Type::Number,
                span,
            }),
        }
    }
}

pub(super) fn is_wild(e: &IrExpr) -> bool {
    matches!(e, IrExpr::Wild)
}

/// Whether `_` stands in `e` other than as a field of a record.
pub(super) fn wild_outside_records(e: &IrExpr) -> bool {
    match e {
        IrExpr::Wild => true,
        IrExpr::Call(Functor::Record(_) | Functor::Branch(..), fields) => fields
            .iter()
            .any(|f| !is_wild(f) && wild_outside_records(f)),
        other => has_wild(other),
    }
}

/// Whether `e` can be computed once `grounded` are bound: no `_` in it, every variable bound.
pub(super) fn ready(e: &IrExpr, grounded: &BTreeSet<VarId>) -> bool {
    let mut vs = Vec::new();
    e.vars(&mut vs);
    !has_wild(e) && vs.iter().all(|v| grounded.contains(v))
}

/// Whether an expression holds `_` anywhere.
pub(super) fn has_wild(e: &IrExpr) -> bool {
    match e {
        IrExpr::Wild => true,
        IrExpr::Var(_) | IrExpr::Const(_) => false,
        IrExpr::Unary(_, a, _) => has_wild(a),
        IrExpr::Arith(_, a, b, _) => has_wild(a) || has_wild(b),
        IrExpr::Call(_, args) | IrExpr::User(_, args) => args.iter().any(has_wild),
    }
}
