//! Lowering one rule: a head and one conjunction of the body become an [`IrRule`]'s head,
//! ordered body and variables; aggregates and body expressions become literals; equalities
//! that compute a variable become bindings; range restriction is checked.

use std::collections::{BTreeSet, HashMap};

use super::patterns::{destructured, has_wild, is_wild, ready, wild_outside_records};
use super::{Checker, const_eval_any};
use crate::ast::{self, AggKind, Expr, Functor, Literal, Span};
use crate::diag::{Diagnostic, codes};
use crate::ir::{IrAtom, IrExpr, IrLit, Var, VarId};
use crate::value::{Type, Value};

/// A lowered rule: head, ordered body, variables, warnings.
type LoweredRule = (IrAtom, Vec<IrLit>, Vec<Var>, Vec<Diagnostic>);

/// A pending aggregate: lowered after the outer body's grounding is known.
pub(super) struct PendingAgg {
    pub(super) var: VarId,
    pub(super) kind: AggKind,
    pub(super) target: Option<Expr>,
    pub(super) body: Vec<Literal>,
    pub(super) span: Span,
}

/// Lowers one head with one conjunction into a rule.
pub(super) struct RuleBuilder<'c, 's> {
    pub(super) cx: &'c mut Checker<'s>,
    pub(super) vars: Vec<Var>,
    pub(super) var_types: Vec<Option<(Type, Span)>>,
    pub(super) first_span: Vec<Span>,
    pub(super) names: HashMap<String, VarId>,
    pub(super) occurrences: HashMap<String, (usize, Span)>,
    pub(super) pending: Vec<PendingAgg>,
    /// While lowering an aggregate body: outer grounded names allowed to correlate, and the
    /// local names seen so far.
    pub(super) inner: Option<(HashMap<String, VarId>, HashMap<String, VarId>)>,
    pub(super) errors: usize,
    /// The column type of each variable written bare in the head: what a variable bound only
    /// by `range` or `x = expr` of untyped literals takes (`out(x) :- x = range(1, 10).` with
    /// an unsigned column counts unsigneds, as in Soufflé).
    pub(super) head_types: Vec<Option<Type>>,
}

impl<'c, 's> RuleBuilder<'c, 's> {
    pub(super) fn new(cx: &'c mut Checker<'s>) -> Self {
        RuleBuilder {
            cx,
            vars: Vec::new(),
            var_types: Vec::new(),
            first_span: Vec::new(),
            names: HashMap::new(),
            occurrences: HashMap::new(),
            pending: Vec::new(),
            inner: None,
            errors: 0,
            head_types: Vec::new(),
        }
    }

    pub(super) fn error(&mut self, d: Diagnostic) {
        self.errors += 1;
        self.cx.diags.push(d);
    }

    pub(super) fn fresh(&mut self, name: String, local: bool, span: Span) -> VarId {
        self.vars.push(Var {
            name,
            ty: Type::Number,
            local,
        });
        self.var_types.push(None);
        self.first_span.push(span);
        self.vars.len() - 1
    }

    pub(super) fn var(&mut self, ident: &ast::Ident) -> VarId {
        let entry = self
            .occurrences
            .entry(ident.name.clone())
            .or_insert((0, ident.span));
        entry.0 += 1;
        if let Some((outer, locals)) = &self.inner {
            if let Some(&v) = outer.get(&ident.name) {
                return v;
            }
            if let Some(&v) = locals.get(&ident.name) {
                return v;
            }
            let v = self.fresh(ident.name.clone(), true, ident.span);
            if let Some((_, locals)) = &mut self.inner {
                locals.insert(ident.name.clone(), v);
            }
            return v;
        }
        if let Some(&v) = self.names.get(&ident.name) {
            return v;
        }
        let v = self.fresh(ident.name.clone(), false, ident.span);
        self.names.insert(ident.name.clone(), v);
        v
    }

    pub(super) fn expr(&mut self, e: &Expr) -> IrExpr {
        match e {
            Expr::UserCall { name, args, span } => {
                let lowered: Vec<IrExpr> = args.iter().map(|a| self.expr(a)).collect();
                let found = self.cx.functors.get(&name.name).cloned();
                match found {
                    Some(Some(f)) if f.params.len() == args.len() => IrExpr::User(f, lowered),
                    Some(Some(f)) => {
                        let msg = format!(
                            "`@{}` takes {} argument(s), {} given",
                            name.name,
                            f.params.len(),
                            args.len()
                        );
                        self.error(Diagnostic::error(codes::ARITY, msg, *span).with_help(
                            "give one argument per parameter of its `.functor` declaration",
                        ));
                        IrExpr::Const(Value::Number(0))
                    }
                    Some(None) => {
                        let msg = format!("functor `@{}` has no implementation", name.name);
                        let help = "Tollgate runs user-defined functors written in Rust and registered with `Functors::register` by the program's host (`Program::compile_with`); `tollgate rules` registers none";
                        self.error(Diagnostic::error(codes::FUNCTOR, msg, *span).with_help(help));
                        IrExpr::Const(Value::Number(0))
                    }
                    None => {
                        let msg = format!("functor `@{}` is not declared", name.name);
                        let help = format!(
                            "declare it with `.functor {}(x: number): number`, its parameter and value types",
                            name.name
                        );
                        self.error(
                            Diagnostic::error(codes::FUNCTOR, msg, name.span).with_help(help),
                        );
                        IrExpr::Const(Value::Number(0))
                    }
                }
            }
            Expr::Var(i) => IrExpr::Var(self.var(i)),
            Expr::Wildcard(_) => IrExpr::Wild,
            // Typed by where it stands (`check_expr`).
            Expr::Record(fields, _) => IrExpr::Call(
                Functor::Record(Value::ANY_RECORD),
                fields.iter().map(|f| self.expr(f)).collect(),
            ),
            Expr::Nil(_) => IrExpr::Const(Value::Nil),
            Expr::Branch(name, args, span) => {
                let fields: Vec<IrExpr> = args.iter().map(|a| self.expr(a)).collect();
                let Some(&(t, b)) = self.cx.branches.get(&name.name) else {
                    let msg = format!("unknown branch `${}`", name.name);
                    let help = "declare it as a branch of an algebraic data type, as in `.type T = A {x: number} | B {}`";
                    self.error(Diagnostic::error(codes::TYPE, msg, name.span).with_help(help));
                    return IrExpr::Const(Value::Number(0));
                };
                let want = self.cx.records[usize::from(t)].branches[usize::from(b)]
                    .fields
                    .len();
                if want != fields.len() {
                    let msg = format!(
                        "`${}` takes {want} field(s), {} given",
                        name.name,
                        fields.len()
                    );
                    let rt = &self.cx.records[usize::from(t)];
                    let help = format!(
                        "`${}` is a branch of `{}`; give one value per field, or write `${}` for a branch without fields",
                        name.name, rt.name, name.name
                    );
                    self.error(Diagnostic::error(codes::ARITY, msg, *span).with_help(help));
                    return IrExpr::Const(Value::Number(0));
                }
                IrExpr::Call(Functor::Branch(t, b), fields)
            }
            Expr::Number(..) | Expr::Unsigned(..) | Expr::Float(..) | Expr::String(..) => {
                match const_eval_any(e, None) {
                    Ok(v) => IrExpr::Const(v),
                    Err(m) => {
                        self.error(
                            Diagnostic::error(codes::LITERAL, m, e.span())
                                .with_help("numbers are 32-bit: -2147483648 to 2147483647"),
                        );
                        IrExpr::Const(Value::Number(0))
                    }
                }
            }
            Expr::Unary(op, inner, _) => {
                let i = self.expr(inner);
                IrExpr::Unary(*op, Box::new(i), Type::Number)
            }
            Expr::Binary { op, lhs, rhs, .. } => {
                let a = self.expr(lhs);
                let b = self.expr(rhs);
                IrExpr::Arith(*op, Box::new(a), Box::new(b), Type::Number)
            }
            Expr::Call {
                func: Functor::As(_),
                args,
                span,
            } if args.len() == 2 => {
                let Expr::Var(type_name) = &args[1] else {
                    let help = "write the type by name, as in `as(x, number)`";
                    self.error(
                        Diagnostic::error(
                            codes::TYPE,
                            "`as` needs a type name as its second argument",
                            *span,
                        )
                        .with_help(help),
                    );
                    return IrExpr::Const(Value::Number(0));
                };
                let target = self.cx.type_of_name(type_name);
                let arg = self.expr(&args[0]);
                IrExpr::Call(Functor::As(target), vec![arg])
            }
            Expr::Call { func, args, span } => {
                let want = match func {
                    Functor::Cat | Functor::Range | Functor::Max(_) | Functor::Min(_) => None,
                    // Never parsed as calls.
                    Functor::Record(_)
                    | Functor::Field(..)
                    | Functor::Branch(..)
                    | Functor::Arg(..) => None,
                    Functor::As(_) => Some(2),
                    Functor::Strlen
                    | Functor::ToNumber
                    | Functor::ToString
                    | Functor::ToFloat
                    | Functor::ToUnsigned
                    | Functor::Convert(_) => Some(1),
                    Functor::Substr => Some(3),
                };
                let ok = match want {
                    Some(n) => args.len() == n,
                    None if *func == Functor::Range => (2..=3).contains(&args.len()),
                    None => args.len() >= 2,
                };
                if !ok {
                    self.error(
                        Diagnostic::error(
                            codes::ARITY,
                            format!(
                                "`{}` takes {} argument(s), {} given",
                                func.as_str(),
                                match (want, func) {
                                    (Some(n), _) => n.to_string(),
                                    (None, Functor::Range) => "2 or 3".to_string(),
                                    (None, _) => "2 or more".to_string(),
                                },
                                args.len()
                            ),
                            *span,
                        )
                        .with_help(functor_help(*func)),
                    );
                }
                IrExpr::Call(*func, args.iter().map(|a| self.expr(a)).collect())
            }
            Expr::Aggregate {
                kind,
                target,
                body,
                span,
            } => {
                // Inside an aggregate's body, the result is that aggregate's own variable
                // (named apart: the pending list starts again at each level).
                let local = self.inner.is_some();
                let name = if local {
                    format!("${}_inner{}", kind.as_str(), self.vars.len())
                } else {
                    format!("${}{}", kind.as_str(), self.pending.len())
                };
                let var = self.fresh(name, local, *span);
                self.pending.push(PendingAgg {
                    var,
                    kind: *kind,
                    target: target.as_deref().cloned(),
                    body: body.clone(),
                    span: *span,
                });
                IrExpr::Var(var)
            }
        }
    }

    /// Lowers a body atom: arguments that are not variables, constants or `_` become fresh
    /// variables constrained by an equality.
    pub(super) fn body_atom(
        &mut self,
        a: &ast::Atom,
        out: &mut Vec<IrLit>,
        positive: bool,
    ) -> Option<IrAtom> {
        let rel = self.cx.lookup(&a.relation.name, a.relation.span);
        let Some(rel) = rel else {
            self.errors += 1;
            return None;
        };
        if !self.cx.check_arity(rel, a.args.len(), a.span) {
            self.errors += 1;
            return None;
        }
        let mut args = Vec::new();
        for arg in &a.args {
            let e = self.expr(arg);
            match e {
                IrExpr::Var(_) | IrExpr::Const(_) | IrExpr::Wild => args.push(e),
                other if positive => {
                    let local = self.inner.is_some();
                    let t = self.fresh(format!("${}", self.vars.len()), local, arg.span());
                    args.push(IrExpr::Var(t));
                    out.push(IrLit::Cmp {
                        op: ast::CmpOp::Eq,
                        lhs: IrExpr::Var(t),
                        rhs: other,
                        ty: Type::Number,
                        span: arg.span(),
                    });
                }
                other => args.push(other),
            }
        }
        Some(IrAtom {
            rel,
            args,
            span: a.span,
        })
    }

    pub(super) fn literal(&mut self, lit: &Literal, out: &mut Vec<IrLit>) {
        match lit {
            Literal::Atom(a) => {
                let mut extra = Vec::new();
                if let Some(atom) = self.body_atom(a, &mut extra, true) {
                    out.push(IrLit::Pos(atom));
                }
                out.extend(extra);
            }
            Literal::Negated(a, _) => {
                if let Some(atom) = self.body_atom(a, out, false) {
                    if let Some(arg) = atom.args.iter().find(|e| !is_wild(e) && has_wild(e)) {
                        let _ = arg;
                        let msg = "`_` inside a record in a negated atom";
                        let help = "name the field with a variable bound in the body, or read the record into a helper relation first";
                        self.error(
                            Diagnostic::error(codes::UNSUPPORTED, msg, a.span).with_help(help),
                        );
                        return;
                    }
                    out.push(IrLit::Neg(atom));
                }
            }
            Literal::Compare { op, lhs, rhs, span } => {
                // `_ = min x : { .. }`: the aggregate's value is dropped (its witnesses may
                // still be read), as in Soufflé.
                if *op == ast::CmpOp::Eq {
                    match (lhs, rhs) {
                        (Expr::Wildcard(_), agg @ Expr::Aggregate { .. })
                        | (agg @ Expr::Aggregate { .. }, Expr::Wildcard(_)) => {
                            self.expr(agg);
                            return;
                        }
                        _ => {}
                    }
                }
                let l = self.expr(lhs);
                let r = self.expr(rhs);
                // `_` may stand for a field of a record matched with `=` (`t = [x, _]`).
                let wild = |e: &IrExpr| {
                    if *op == ast::CmpOp::Eq {
                        wild_outside_records(e)
                    } else {
                        has_wild(e)
                    }
                };
                if [&l, &r].iter().any(|e| wild(e)) {
                    // Soufflé's "Underscore in binary relation": `_` has no value to compare.
                    self.error(
                        Diagnostic::error(codes::UNBOUND, "`_` in a comparison", *span)
                            .with_help("compare with a variable bound in the body, or a constant"),
                    );
                    return;
                }
                out.push(IrLit::Cmp {
                    op: *op,
                    lhs: l,
                    rhs: r,
                    ty: Type::Number,
                    span: *span,
                });
            }
            Literal::Test {
                func,
                args,
                negated,
                span,
            } => {
                if args.len() != 2 {
                    self.error(
                        Diagnostic::error(
                            codes::ARITY,
                            format!(
                                "`{}` takes 2 arguments, {} given",
                                func.as_str(),
                                args.len()
                            ),
                            *span,
                        )
                        .with_help(test_help(*func)),
                    );
                    return;
                }
                let p = self.expr(&args[0]);
                let s = self.expr(&args[1]);
                out.push(IrLit::Test {
                    func: *func,
                    pattern: p,
                    subject: s,
                    negated: *negated,
                    span: *span,
                });
            }
            Literal::Disjunction(_, span) => {
                self.error(
                    Diagnostic::error(
                        codes::UNSUPPORTED,
                        "a disjunction inside an aggregate",
                        *span,
                    )
                    .with_help("write the alternatives as separate rules of a helper relation"),
                );
            }
        }
    }

    /// Lowers `pending` aggregates of one scope into `lits`, each result grounded for those
    /// after it and for the equalities that read it.
    fn aggregates(
        &mut self,
        pending: Vec<PendingAgg>,
        visible: &HashMap<String, VarId>,
        lits: &mut Vec<IrLit>,
        grounded: &mut BTreeSet<VarId>,
    ) {
        // Each result is bound, and what equalities compute from it, before the next aggregate
        // is lowered: `y = min b : { r(a, b), a = x }` after `x = min a : { .. }` reads `x` from
        // around it (it once made `x` a variable of its own, matching every `a`).
        let mut waiting: BTreeSet<VarId> = pending.iter().map(|p| p.var).collect();
        for p in pending {
            let var = p.var;
            waiting.remove(&var);
            let lit = self.aggregate(p, visible, grounded);
            lits.push(lit);
            grounded.insert(var);
            bind_equalities(lits, grounded, &waiting);
        }
    }

    /// Lowers an aggregate whose enclosing scope (the rule, or an aggregate around it) sees
    /// the names `visible`, of which `grounded` are bound there. Soufflé: variables of the
    /// aggregated expression are always local to the aggregate; other body variables bound
    /// outside it are shared with the scope around it. Aggregates inside its body are lowered
    /// the same way, seeing its names too.
    fn aggregate(
        &mut self,
        p: PendingAgg,
        visible: &HashMap<String, VarId>,
        grounded: &BTreeSet<VarId>,
    ) -> IrLit {
        let mut target_names = Vec::new();
        if let Some(t) = &p.target {
            expr_var_names(t, &mut target_names);
        }
        let outer: HashMap<String, VarId> = visible
            .iter()
            .filter(|(n, v)| grounded.contains(v) && **v != p.var && !target_names.contains(n))
            .map(|(n, v)| (n.clone(), *v))
            .collect();
        let around = self.inner.replace((outer.clone(), HashMap::new()));
        let pending_around = std::mem::take(&mut self.pending);
        let mut body = Vec::new();
        for l in &p.body {
            self.literal(l, &mut body);
        }
        let target = p.target.as_ref().map(|t| self.expr(t));
        let nested = std::mem::replace(&mut self.pending, pending_around);
        let locals = match std::mem::replace(&mut self.inner, around) {
            Some((_, locals)) => locals,
            None => HashMap::new(),
        };
        let mut inner_ground: BTreeSet<VarId> = outer.values().copied().collect();
        for l in &body {
            if let IrLit::Pos(a) = l {
                inner_ground.extend(IrLit::Pos(a.clone()).outputs());
            }
        }
        let results: BTreeSet<VarId> = nested.iter().map(|n| n.var).collect();
        bind_equalities(&mut body, &mut inner_ground, &results);
        if !nested.is_empty() {
            let mut visible_inside = outer.clone();
            visible_inside.extend(locals);
            self.aggregates(nested, &visible_inside, &mut body, &mut inner_ground);
        }
        // What the aggregate reads from the scope around it.
        let from_outside: BTreeSet<VarId> = outer.values().copied().collect();
        let mut used = Vec::new();
        for l in &body {
            used.extend(l.inputs());
            used.extend(l.outputs());
        }
        if let Some(t) = &target {
            t.vars(&mut used);
        }
        let mut outer_used: Vec<VarId> = used
            .into_iter()
            .filter(|v| from_outside.contains(v))
            .collect();
        outer_used.sort_unstable();
        outer_used.dedup();
        for l in &body {
            if !matches!(l, IrLit::Agg { .. }) {
                self.require_bound(&l.inputs(), &inner_ground, l.span());
            }
        }
        if let Some(t) = &target {
            let mut tv = Vec::new();
            t.vars(&mut tv);
            self.require_bound(&tv, &inner_ground, p.span);
        }
        let body = order_body(body, &from_outside);
        IrLit::Agg {
            var: p.var,
            kind: p.kind,
            target,
            ty: Type::Number,
            body,
            outer: outer_used,
            span: p.span,
        }
    }

    pub(super) fn lower(&mut self, head: &ast::Atom, conj: &[Literal]) -> Option<LoweredRule> {
        let errors_before = self.cx.diags.len();
        let mut lits = Vec::new();
        for lit in conj {
            self.literal(lit, &mut lits);
        }
        // Head.
        let head_rel = self.cx.lookup(&head.relation.name, head.relation.span)?;
        if !self.cx.check_arity(head_rel, head.args.len(), head.span) {
            return None;
        }
        let mut head_args = Vec::new();
        for arg in &head.args {
            if let Expr::Wildcard(s) = arg {
                self.error(Diagnostic::error(codes::UNBOUND, "`_` in a rule head", *s).with_help("a head needs a value in every column: use a variable bound in the body or a constant"));
                continue;
            }
            head_args.push(self.expr(arg));
        }
        // An unknown relation or a wrong arity leaves its variables unbound: stop here rather
        // than report that as well.
        if self.cx.diags.len() > errors_before {
            return None;
        }
        // Grounding of the outer body, without aggregates first.
        let mut grounded: BTreeSet<VarId> = BTreeSet::new();
        for l in &lits {
            if let IrLit::Pos(a) = l {
                grounded.extend(IrLit::Pos(a.clone()).outputs());
            }
        }
        // An aggregate's result is computed by the aggregate, never by an equality: with
        // `x = count : {..}` and `x` bound elsewhere, the equality is a filter.
        let results: BTreeSet<VarId> = self.pending.iter().map(|p| p.var).collect();
        bind_equalities(&mut lits, &mut grounded, &results);
        // Aggregates: correlated names are those grounded outside.
        let pending = std::mem::take(&mut self.pending);
        let visible = self.names.clone();
        self.aggregates(pending, &visible, &mut lits, &mut grounded);
        // Witnesses: what the head or a literal reads that only an aggregate's body binds.
        let mut needed = Vec::new();
        for a in &head_args {
            a.vars(&mut needed);
        }
        for l in &lits {
            if !matches!(l, IrLit::Agg { .. }) {
                needed.extend(l.inputs());
            }
        }
        needed.retain(|v| !grounded.contains(v));
        needed.dedup();
        if !needed.is_empty() {
            self.export_witnesses(&mut lits, &needed, &mut grounded, false);
        }
        // Range restriction.
        for l in &lits {
            if !matches!(l, IrLit::Agg { .. }) {
                self.require_bound(&l.inputs(), &grounded, l.span());
            }
        }
        for a in &head_args {
            let mut vs = Vec::new();
            a.vars(&mut vs);
            self.require_bound(&vs, &grounded, head.span);
        }
        let mut head = IrAtom {
            rel: head_rel,
            args: head_args,
            span: head.span,
        };
        let mut body = order_body(lits, &BTreeSet::new());
        if self.cx.diags.len() > errors_before || self.errors > 0 {
            return None;
        }
        self.infer_types(&mut head, &mut body);
        if self.cx.diags.len() > errors_before {
            return None;
        }
        let mut warnings = Vec::new();
        let mut singles: Vec<(&String, &(usize, Span))> = self
            .occurrences
            .iter()
            .filter(|(n, (c, _))| *c == 1 && !n.starts_with('_') && !n.contains('.'))
            .collect();
        singles.sort_by_key(|(_, (_, s))| *s);
        for (name, (_, span)) in singles {
            warnings.push(
                Diagnostic::warning(
                    codes::SINGLETON,
                    format!("variable `{name}` occurs only once"),
                    *span,
                )
                .with_help(format!("replace `{name}` with `_` if any value will do")),
            );
        }
        for (v, t) in self.var_types.iter().enumerate() {
            if let Some((t, _)) = t {
                self.vars[v].ty = *t;
            }
        }
        Some((head, body, std::mem::take(&mut self.vars), warnings))
    }

    pub(super) fn require_bound(
        &mut self,
        vars: &[VarId],
        grounded: &BTreeSet<VarId>,
        _span: Span,
    ) {
        for v in vars {
            if !grounded.contains(v) && !self.vars[*v].name.starts_with('$') {
                let name = self.vars[*v].name.clone();
                let span = self.first_span[*v];
                if self
                    .cx
                    .diags
                    .iter()
                    .any(|d| d.code == codes::UNBOUND.id && d.span == span)
                {
                    continue;
                }
                self.error(
                    Diagnostic::error(codes::UNBOUND, format!("variable `{name}` is not bound by a positive atom"), span)
                        .with_label("used here")
                        .with_help(format!("add a body atom that binds `{name}`, or give it a value with `{name} = ...`")),
                );
            }
        }
    }
}

pub(super) fn functor_help(f: Functor) -> &'static str {
    match f {
        Functor::Cat => "`cat(s1, s2, ...)` joins two or more symbols",
        Functor::Strlen => "`strlen(s)` is the number of characters of a symbol",
        Functor::Substr => "`substr(s, start, length)` is zero-based",
        Functor::ToNumber => "`to_number(s)` parses a symbol as a number",
        Functor::ToString => "`to_string(n)` prints a number as a symbol",
        Functor::ToFloat => "`to_float(x)` converts a number or an unsigned to a float",
        Functor::ToUnsigned => "`to_unsigned(x)` converts a number or a float to an unsigned",
        Functor::Convert(_) => {
            "`itof`, `itou`, `utoi`, `utof`, `ftoi` and `ftou` convert between number (`i`), unsigned (`u`) and float (`f`)"
        }
        Functor::Range => {
            "`x = range(from, to)` gives `x` every value from `from` toward `to` (excluded); `range(from, to, step)` steps by `step`"
        }
        Functor::Max(_) => "`max(a, b, ...)` is the greatest of two or more values of one type",
        Functor::Min(_) => "`min(a, b, ...)` is the least of two or more values of one type",
        Functor::As(_) => {
            "`as(x, T)` reads `x` as type `T` without converting it: between number, unsigned and float the bits stay; use `to_float`, `to_unsigned` or `to_number` to convert"
        }
        Functor::Record(_) | Functor::Field(..) => {
            "a record is written `[a, b, ...]`, one value per field of its type"
        }
        Functor::Branch(..) | Functor::Arg(..) => {
            "a branch is written `$Name(a, b, ...)`, one value per field of the branch (`$Name` without fields)"
        }
    }
}

fn test_help(t: ast::TestFn) -> &'static str {
    match t {
        ast::TestFn::Match => "`match(regex, s)` holds when the whole of `s` matches",
        ast::TestFn::Contains => "`contains(needle, s)` holds when `needle` occurs in `s`",
        ast::TestFn::Glob => "`glob(pattern, s)` holds when `s` matches the glob pattern",
    }
}

/// Turns `x = e` (and `e = x`) into bindings when `x` is not grounded but `e` is, unless `x`
/// is `reserved`, and `r = [a, b]` with `r` grounded but not the record into its fields'
/// equalities (`a = field(r, 0)`, ...); repeats until nothing changes.
fn bind_equalities(
    lits: &mut Vec<IrLit>,
    grounded: &mut BTreeSet<VarId>,
    reserved: &BTreeSet<VarId>,
) {
    loop {
        let mut changed = false;
        let mut i = 0;
        while i < lits.len() {
            if let Some(fields) = destructured(&lits[i], grounded) {
                let n = fields.len();
                lits.splice(i..=i, fields);
                i += n;
                changed = true;
                continue;
            }
            i += 1;
        }
        for l in lits.iter_mut() {
            let IrLit::Cmp {
                op: ast::CmpOp::Eq,
                lhs,
                rhs,
                span,
                ..
            } = l
            else {
                continue;
            };
            // `x = range(...)`: a generator when `x` is not grounded, a membership test when it
            // is (Soufflé reads it both ways).
            let range = match (&*lhs, &*rhs) {
                (IrExpr::Var(v), IrExpr::Call(Functor::Range, args))
                | (IrExpr::Call(Functor::Range, args), IrExpr::Var(v))
                    if !reserved.contains(v) && args.iter().all(|a| ready(a, grounded)) =>
                {
                    Some((*v, args.clone(), grounded.contains(v)))
                }
                _ => None,
            };
            if let Some((var, args, bound)) = range {
                grounded.insert(var);
                *l = IrLit::Range {
                    var,
                    args,
                    ty: Type::Number,
                    bound,
                    span: *span,
                };
                changed = true;
                continue;
            }
            let bind = match (&*lhs, &*rhs) {
                (IrExpr::Var(v), e)
                    if !grounded.contains(v) && !reserved.contains(v) && ready(e, grounded) =>
                {
                    Some((*v, e.clone()))
                }
                (e, IrExpr::Var(v))
                    if !grounded.contains(v) && !reserved.contains(v) && ready(e, grounded) =>
                {
                    Some((*v, e.clone()))
                }
                _ => None,
            };
            if let Some((var, expr)) = bind {
                grounded.insert(var);
                *l = IrLit::Bind {
                    var,
                    expr,
                    span: *span,
                };
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
}

/// Orders a body so that each literal comes after the literals binding its inputs: positive
/// atoms keep their source order; every other literal runs as soon as its inputs are bound.
fn order_body(lits: Vec<IrLit>, initially_bound: &BTreeSet<VarId>) -> Vec<IrLit> {
    let mut bound = initially_bound.clone();
    let mut out = Vec::with_capacity(lits.len());
    let mut pending: Vec<IrLit> = Vec::new();
    let flush = |pending: &mut Vec<IrLit>, bound: &mut BTreeSet<VarId>, out: &mut Vec<IrLit>| loop {
        let pos = pending
            .iter()
            .position(|l| l.inputs().iter().all(|v| bound.contains(v)));
        match pos {
            Some(i) => {
                let l = pending.remove(i);
                bound.extend(l.outputs());
                out.push(l);
            }
            None => break,
        }
    };
    for l in lits {
        if matches!(l, IrLit::Pos(_)) {
            bound.extend(l.outputs());
            out.push(l);
        } else {
            pending.push(l);
        }
        flush(&mut pending, &mut bound, &mut out);
    }
    // Whatever is left refers to unbound variables (already reported); keep it for display.
    out.extend(pending);
    out
}

/// Names of the variables written in an expression (aggregate bodies excluded).
fn expr_var_names(e: &Expr, out: &mut Vec<String>) {
    match e {
        Expr::Var(i) => out.push(i.name.clone()),
        Expr::Unary(_, a, _) => expr_var_names(a, out),
        Expr::Binary { lhs, rhs, .. } => {
            expr_var_names(lhs, out);
            expr_var_names(rhs, out);
        }
        Expr::Call { args, .. } | Expr::UserCall { args, .. } => {
            args.iter().for_each(|a| expr_var_names(a, out));
        }
        Expr::Wildcard(_)
        | Expr::Number(..)
        | Expr::Unsigned(..)
        | Expr::Float(..)
        | Expr::String(..)
        | Expr::Nil(_)
        | Expr::Aggregate { .. } => {}
        Expr::Record(fields, _) | Expr::Branch(_, fields, _) => {
            fields.iter().for_each(|f| expr_var_names(f, out));
        }
    }
}
