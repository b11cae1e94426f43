//! Type inference and checking for a rule being lowered: variables take their columns' types,
//! integer literals adapt to their context, operators get their operand types.

use super::lower::{RuleBuilder, functor_help};
use crate::ast::{self, AggKind, Conversion, Functor, Span};
use crate::diag::{Diagnostic, codes};
use crate::functions;
use crate::ir::{IrAtom, IrExpr, IrLit, VarId};
use crate::value::{Type, Value};

impl RuleBuilder<'_, '_> {
    pub(super) fn set_var_type(&mut self, v: VarId, t: Type, span: Span) {
        match self.var_types[v] {
            None => self.var_types[v] = Some((t, span)),
            Some((prev, prev_span)) if prev != t => {
                let name = self.vars[v].name.clone();
                let line = self.cx.source.line_col(prev_span.start).0;
                self.error(
                    Diagnostic::error(codes::TYPE, format!("variable `{name}` is used as `{}` here and as `{}` elsewhere", self.cx.type_name(t), self.cx.type_name(prev)), span)
                        .with_secondary(prev_span, format!("used as `{prev}` here (line {line})"))
                        .with_help("a variable has one type; use a second variable or convert with `to_string`/`to_number`"),
                );
            }
            Some(_) => {}
        }
    }

    pub(super) fn infer_types(&mut self, head: &mut IrAtom, body: &mut [IrLit]) {
        self.head_types = vec![None; self.vars.len()];
        for (a, t) in head.args.iter().zip(&self.cx.relations[head.rel].types) {
            if let IrExpr::Var(v) = a
                && let Some(slot) = self.head_types.get_mut(*v)
            {
                slot.get_or_insert(*t);
            }
        }
        for l in body.iter_mut() {
            self.type_lit(l);
        }
        let types = self.cx.relations[head.rel].types.clone();
        for (i, a) in head.args.iter_mut().enumerate() {
            self.check_expr(a, types[i], head.span);
        }
    }

    pub(super) fn type_atom(&mut self, a: &mut IrAtom) {
        let types = self.cx.relations[a.rel].types.clone();
        for (i, arg) in a.args.iter().enumerate() {
            if let IrExpr::Var(v) = arg {
                self.set_var_type(*v, types[i], a.span);
            }
        }
        for (i, arg) in a.args.iter_mut().enumerate() {
            if !matches!(arg, IrExpr::Var(_) | IrExpr::Wild) {
                self.check_expr(arg, types[i], a.span);
            }
        }
    }

    pub(super) fn type_lit(&mut self, l: &mut IrLit) {
        match l {
            IrLit::Pos(a) | IrLit::Neg(a) => self.type_atom(a),
            IrLit::Cmp {
                lhs,
                rhs,
                ty,
                span,
                op,
            } => {
                let t = match (self.peek_type(lhs), self.peek_type(rhs)) {
                    (Some(t), _) | (None, Some(t)) => t,
                    (None, None) if is_record_term(lhs) || is_record_term(rhs) => {
                        // Soufflé's "Ambiguous record".
                        let msg = "the type of this record cannot be told";
                        let help = "compare it with a variable or a column of a record type, as in `r = [x, y]` with `r` read from an atom";
                        self.error(Diagnostic::error(codes::TYPE, msg, *span).with_help(help));
                        return;
                    }
                    (None, None) => Type::Number,
                };
                if !t.is_ordered() && !matches!(op, ast::CmpOp::Eq | ast::CmpOp::Ne) {
                    let msg = format!(
                        "records are compared only with `=` and `!=`, not `{}`",
                        op.as_str()
                    );
                    let help = "compare their fields instead, as in `r = [x, _], x < 3`";
                    self.error(Diagnostic::error(codes::TYPE, msg, *span).with_help(help));
                    return;
                }
                self.check_expr(lhs, t, *span);
                self.check_expr(rhs, t, *span);
                // `$n = expr` from a body-atom expression: the temporary takes the type.
                *ty = t;
                let _ = op;
            }
            IrLit::Test {
                func,
                pattern,
                subject,
                span,
                ..
            } => {
                self.check_expr(pattern, Type::Symbol, *span);
                self.check_expr(subject, Type::Symbol, *span);
                if let IrExpr::Const(Value::Symbol(p)) = pattern {
                    let compiled = match func {
                        ast::TestFn::Match => functions::compile_regex(p).map(|_| ()),
                        ast::TestFn::Glob => functions::compile_glob(p).map(|_| ()),
                        ast::TestFn::Contains => Ok(()),
                    };
                    if let Err(e) = compiled {
                        let (what, help) = match func {
                            ast::TestFn::Glob => (
                                "glob pattern",
                                "`*` matches within a `/` segment, `**` across segments, `?` one character, `[abc]` a class, `{a,b}` alternatives",
                            ),
                            _ => (
                                "regular expression",
                                "`match` takes a regular expression (Rust `regex` syntax) that must match the whole string",
                            ),
                        };
                        let first = e.lines().last().unwrap_or(&e).trim().to_string();
                        self.error(
                            Diagnostic::error(
                                codes::PATTERN,
                                format!("invalid {what} `{p}`: {first}"),
                                *span,
                            )
                            .with_help(help),
                        );
                    }
                }
            }
            IrLit::Bind { var, expr, span } => {
                let t = self
                    .peek_type(expr)
                    .or_else(|| self.var_types[*var].map(|(t, _)| t))
                    .or_else(|| self.head_types.get(*var).copied().flatten())
                    .unwrap_or(Type::Number);
                self.check_expr(expr, t, *span);
                self.set_var_type(*var, t, *span);
            }
            IrLit::Range {
                var,
                args,
                ty,
                span,
                ..
            } => {
                let t = args
                    .iter()
                    .find_map(|a| self.peek_type(a))
                    .or_else(|| self.var_types[*var].map(|(t, _)| t))
                    .or_else(|| self.head_types.get(*var).copied().flatten())
                    .unwrap_or(Type::Number);
                if t == Type::Symbol {
                    self.error(
                        Diagnostic::error(codes::TYPE, "`range` over symbols", *span)
                            .with_help("`range` counts numbers, unsigneds or floats"),
                    );
                }
                for a in args.iter_mut() {
                    self.check_expr(a, t, *span);
                }
                *ty = t;
                self.set_var_type(*var, t, *span);
            }
            IrLit::Agg {
                var,
                kind,
                target,
                ty,
                body,
                span,
                ..
            } => {
                for b in body.iter_mut() {
                    self.type_lit(b);
                }
                let kind = *kind;
                let t = match (kind, target) {
                    (AggKind::Count, _) | (_, None) => Type::Number,
                    (AggKind::Mean, Some(e)) => {
                        match self.peek_type(e) {
                            Some(t) if t != Type::Float => self.error(
                                Diagnostic::error(
                                    codes::TYPE,
                                    format!("`mean` over `{t}` values"),
                                    *span,
                                )
                                .with_help(
                                    "`mean` takes floats, as in Soufflé: convert with `to_float(x)`",
                                ),
                            ),
                            _ => self.check_expr(e, Type::Float, *span),
                        }
                        Type::Float
                    }
                    (_, Some(e)) => {
                        let t = self.peek_type(e).unwrap_or(Type::Number);
                        if t == Type::Symbol {
                            self.error(
                                Diagnostic::error(
                                    codes::TYPE,
                                    format!("`{}` over symbols", kind.as_str()),
                                    *span,
                                )
                                .with_help("sum, min and max take numeric values"),
                            );
                            // Reported once; the result is a number for what follows.
                            Type::Number
                        } else {
                            self.check_expr(e, t, *span);
                            t
                        }
                    }
                };
                *ty = t;
                self.set_var_type(*var, t, *span);
            }
        }
    }

    /// Whether `t` is an algebraic data type.
    fn is_adt(&self, t: Type) -> bool {
        match t {
            Type::Record(id) => self
                .cx
                .records
                .get(usize::from(id))
                .is_some_and(crate::value::RecordType::is_adt),
            _ => false,
        }
    }

    /// The type an expression has on its own, if it determines one.
    pub(super) fn peek_type(&self, e: &IrExpr) -> Option<Type> {
        match e {
            IrExpr::Var(v) => self.var_types[*v].map(|(t, _)| t),
            IrExpr::Const(c) => match c {
                // Integer literals adapt to their context, `nil` to any record type.
                Value::Number(_) | Value::Nil => None,
                other => Some(other.ty()),
            },
            IrExpr::Wild => None,
            IrExpr::Unary(_, i, _) => self.peek_type(i),
            IrExpr::Arith(_, a, b, _) => self.peek_type(a).or_else(|| self.peek_type(b)),
            IrExpr::Call(f, args) => Some(match f {
                Functor::Cat | Functor::Substr | Functor::ToString => Type::Symbol,
                Functor::Strlen | Functor::ToNumber => Type::Number,
                Functor::ToFloat => Type::Float,
                Functor::ToUnsigned => Type::Unsigned,
                Functor::Convert(c) => c.target(),
                Functor::Range => return None,
                Functor::As(t) => *t,
                Functor::Max(_) | Functor::Min(_) => {
                    return args.iter().find_map(|a| self.peek_type(a));
                }
                Functor::Record(t) if *t == Value::ANY_RECORD => return None,
                Functor::Record(t) => *t,
                Functor::Branch(t, _) => Type::Record(*t),
                Functor::Arg(t, b, j) => {
                    let rt = self.cx.records.get(usize::from(*t))?;
                    let branch = rt.branches.get(usize::from(*b))?;
                    return branch.fields.get(usize::from(*j)).map(|(_, t)| *t);
                }
                Functor::Field(j, _) => {
                    let Some(Type::Record(id)) = args.first().and_then(|a| self.peek_type(a))
                    else {
                        return None;
                    };
                    let rt = self.cx.records.get(usize::from(id))?;
                    return rt.fields.get(usize::from(*j)).map(|(_, t)| *t);
                }
            }),
            IrExpr::User(u, _) => Some(u.ret),
        }
    }

    /// Checks that `e` has type `want`, fixing operator types and adapting integer literals.
    pub(super) fn check_expr(&mut self, e: &mut IrExpr, want: Type, span: Span) {
        // `to_float`, `to_unsigned` and a numeric `to_number` take the conversion their
        // argument's type calls for (Soufflé's overloads), or vanish when it is the same type.
        if let IrExpr::Call(
            f @ (Functor::ToFloat | Functor::ToUnsigned | Functor::ToNumber),
            args,
        ) = &*e
        {
            let from = args.first().and_then(|a| self.peek_type(a));
            let to = match f {
                Functor::ToFloat => Type::Float,
                Functor::ToUnsigned => Type::Unsigned,
                _ => Type::Number,
            };
            let from = match (f, from) {
                // A symbol, or nothing known: `to_number` parses a symbol, as before.
                (Functor::ToNumber, None | Some(Type::Symbol)) => None,
                // Integer literals and untyped arguments are numbers.
                (_, None) => Some(Type::Number),
                (_, Some(t)) => Some(t),
            };
            match from {
                Some(from) if from == to => {
                    if let IrExpr::Call(_, args) = e
                        && let Some(arg) = args.pop()
                    {
                        *e = arg;
                    }
                    return self.check_expr(e, want, span);
                }
                Some(from) => {
                    if let (IrExpr::Call(f, _), Some(c)) = (&mut *e, Conversion::between(from, to))
                    {
                        *f = Functor::Convert(c);
                    }
                }
                None => {}
            }
        }
        match e {
            IrExpr::Var(v) => {
                let v = *v;
                match self.var_types[v] {
                    Some((t, _)) if t != want => {
                        let name = self.vars[v].name.clone();
                        let shown = if name.starts_with('$') {
                            "this expression".to_string()
                        } else {
                            format!("variable `{name}`")
                        };
                        self.error(
                            Diagnostic::error(codes::TYPE, format!("{shown} is `{}` but `{}` is expected here", self.cx.type_name(t), self.cx.type_name(want)), span)
                                .with_help("convert with `to_string(...)` or `to_number(...)`, or use a variable of the right type"),
                        );
                    }
                    Some(_) => {}
                    None => self.var_types[v] = Some((want, span)),
                }
            }
            IrExpr::Const(Value::Nil) => {
                if !matches!(want, Type::Record(_)) || self.is_adt(want) {
                    let msg = format!("`nil` where a `{}` is expected", self.cx.type_name(want));
                    let help =
                        "`nil` is the empty record: it stands only where a record type is expected";
                    self.error(Diagnostic::error(codes::TYPE, msg, span).with_help(help));
                }
            }
            IrExpr::Const(c) => {
                let adapted = match (&*c, want) {
                    (Value::Number(n), Type::Unsigned) if *n >= 0 => {
                        Some(Value::Unsigned(*n as u32))
                    }
                    (Value::Number(n), Type::Float) => Some(Value::Float(*n as f32)),
                    _ => None,
                };
                if let Some(a) = adapted {
                    *c = a;
                } else if c.ty() != want {
                    let lit = c.to_literal();
                    let have = c.ty();
                    self.error(
                        Diagnostic::error(
                            codes::TYPE,
                            format!("`{lit}` is a `{have}` but `{want}` is expected here"),
                            span,
                        )
                        .with_help(if want == Type::Symbol {
                            "write symbols in double quotes"
                        } else {
                            "write a number without quotes"
                        }),
                    );
                }
            }
            IrExpr::Wild => {}
            IrExpr::Unary(op, i, t) => {
                if *op != crate::ast::UnaryOp::Neg && want == Type::Float {
                    self.error(
                        Diagnostic::error(
                            codes::TYPE,
                            format!("`{}` where a `float` is expected", op.as_prefix().trim()),
                            span,
                        )
                        .with_help("bitwise and logical operators take numbers or unsigneds"),
                    );
                }
                if want == Type::Symbol {
                    self.error(
                        Diagnostic::error(
                            codes::TYPE,
                            "arithmetic where a `symbol` is expected",
                            span,
                        )
                        .with_help("use `cat(...)` to build symbols"),
                    );
                }
                if let Type::Record(_) = want {
                    let msg = format!(
                        "`{}` where a record `{}` is expected",
                        op.as_prefix().trim(),
                        self.cx.type_name(want)
                    );
                    let help = "operators apply to numbers; a record is built with `[..]`";
                    self.error(Diagnostic::error(codes::TYPE, msg, span).with_help(help));
                    return;
                }
                *t = want;
                self.check_expr(i, want, span);
            }
            // `"pre-" + s`: Soufflé reads `+` on symbols as `cat`.
            IrExpr::Arith(crate::ast::ArithOp::Add, a, b, _) if want == Type::Symbol => {
                let (a, b) = (
                    std::mem::replace(&mut **a, IrExpr::Wild),
                    std::mem::replace(&mut **b, IrExpr::Wild),
                );
                *e = IrExpr::Call(Functor::Cat, vec![a, b]);
                self.check_expr(e, want, span);
            }
            IrExpr::Arith(op, a, b, t) => {
                if op.integral() && want == Type::Float {
                    self.error(
                        Diagnostic::error(
                            codes::TYPE,
                            format!("`{}` where a `float` is expected", op.as_str()),
                            span,
                        )
                        .with_help("bitwise and logical operators take numbers or unsigneds"),
                    );
                }
                if want == Type::Symbol {
                    self.error(Diagnostic::error(codes::TYPE, "arithmetic where a `symbol` is expected", span).with_help("use `cat(...)` to build symbols, `to_string(...)` to turn numbers into symbols"));
                }
                if let Type::Record(_) = want {
                    let msg = format!(
                        "arithmetic where a record `{}` is expected",
                        self.cx.type_name(want)
                    );
                    let help = "a record is built with `[..]`; compute its fields instead, as in `[x + 1, y]`";
                    self.error(Diagnostic::error(codes::TYPE, msg, span).with_help(help));
                    return;
                }
                *t = want;
                self.check_expr(a, want, span);
                self.check_expr(b, want, span);
            }
            IrExpr::User(u, args) => {
                if u.ret != want {
                    let msg = format!(
                        "`@{}` gives a `{}` but `{want}` is expected here",
                        u.name, u.ret
                    );
                    self.error(
                        Diagnostic::error(codes::TYPE, msg, span)
                            .with_help("its `.functor` declaration gives the type of its value"),
                    );
                }
                let params = u.params.clone();
                for (a, p) in args.iter_mut().zip(params) {
                    self.check_expr(a, p, span);
                }
            }
            IrExpr::Call(Functor::Branch(t, b), args) => {
                let (t, b) = (*t, *b);
                if want != Type::Record(t) {
                    let rt = &self.cx.records[usize::from(t)];
                    let msg = format!(
                        "`${}` is a `{}` but `{}` is expected here",
                        rt.branches[usize::from(b)].name,
                        rt.name,
                        self.cx.type_name(want)
                    );
                    let help = "a branch stands only where its algebraic data type is expected";
                    self.error(Diagnostic::error(codes::TYPE, msg, span).with_help(help));
                    return;
                }
                let fields = self.cx.records[usize::from(t)].branches[usize::from(b)]
                    .fields
                    .clone();
                for (a, (_, ft)) in args.iter_mut().zip(&fields) {
                    if !matches!(a, IrExpr::Wild) {
                        self.check_expr(a, *ft, span);
                    }
                }
            }
            IrExpr::Call(Functor::Arg(t, b, j), args) => {
                let (t, b, j) = (*t, *b, *j);
                if let Some(of) = args.first_mut() {
                    self.check_expr(of, Type::Record(t), span);
                }
                let rt = &self.cx.records[usize::from(t)];
                let branch = &rt.branches[usize::from(b)];
                if let Some((name, ft)) = branch.fields.get(usize::from(j)).cloned()
                    && ft != want
                {
                    let msg = format!(
                        "field `{name}` of `${}` is `{}` but `{}` is expected here",
                        branch.name,
                        self.cx.type_name(ft),
                        self.cx.type_name(want)
                    );
                    self.error(
                        Diagnostic::error(codes::TYPE, msg, span).with_help(
                            "a variable has one type; use a variable of the field's type",
                        ),
                    );
                }
            }
            IrExpr::Call(Functor::Record(t), fields) => {
                if self.is_adt(want) {
                    let msg = format!(
                        "a record where the algebraic data type `{}` is expected",
                        self.cx.type_name(want)
                    );
                    let help = "write one of its branches, `$Name(..)`";
                    self.error(Diagnostic::error(codes::TYPE, msg, span).with_help(help));
                    return;
                }
                let Type::Record(id) = want else {
                    let msg = format!("a record where a `{want}` is expected");
                    let help = "a record `[..]` stands only where a record type is expected: declare one with `.type T = [a: number, b: symbol]`";
                    self.error(Diagnostic::error(codes::TYPE, msg, span).with_help(help));
                    return;
                };
                *t = want;
                let Some(rt) = self.cx.records.get(usize::from(id)).cloned() else {
                    return;
                };
                if rt.fields.len() != fields.len() {
                    let msg = format!(
                        "a record of {} field(s) where `{}` has {}",
                        fields.len(),
                        rt.name,
                        rt.fields.len()
                    );
                    let names: Vec<&str> = rt.fields.iter().map(|(n, _)| n.as_str()).collect();
                    let help = format!("give one value per field: {}", names.join(", "));
                    self.error(Diagnostic::error(codes::ARITY, msg, span).with_help(help));
                    return;
                }
                for (f, (_, ft)) in fields.iter_mut().zip(&rt.fields) {
                    if !matches!(f, IrExpr::Wild) {
                        self.check_expr(f, *ft, span);
                    }
                }
            }
            IrExpr::Call(Functor::Field(j, n), args) => {
                let of = args.first().and_then(|a| self.peek_type(a));
                let Some(Type::Record(id)) = of.filter(|t| !self.is_adt(*t)) else {
                    let msg = "a record pattern `[..]` over a value that is not a record";
                    let help = "match records against a variable or column of a record type";
                    self.error(Diagnostic::error(codes::TYPE, msg, span).with_help(help));
                    return;
                };
                let Some(rt) = self.cx.records.get(usize::from(id)).cloned() else {
                    return;
                };
                if rt.fields.len() != usize::from(*n) {
                    // Reported once per pattern: by its first field.
                    if *j == 0 || usize::from(*j) == rt.fields.len() {
                        let msg = format!(
                            "a record of {n} field(s) where `{}` has {}",
                            rt.name,
                            rt.fields.len()
                        );
                        let names: Vec<&str> = rt.fields.iter().map(|(n, _)| n.as_str()).collect();
                        let help = format!("give one value per field: {}", names.join(", "));
                        self.error(Diagnostic::error(codes::ARITY, msg, span).with_help(help));
                    }
                    return;
                }
                let ft = rt.fields[usize::from(*j)].1;
                if ft != want {
                    let msg = format!(
                        "field `{}` of `{}` is `{}` but `{}` is expected here",
                        rt.fields[usize::from(*j)].0,
                        rt.name,
                        self.cx.type_name(ft),
                        self.cx.type_name(want)
                    );
                    self.error(
                        Diagnostic::error(codes::TYPE, msg, span).with_help(
                            "a variable has one type; use a variable of the field's type",
                        ),
                    );
                }
            }
            IrExpr::Call(f, args) => {
                if *f == Functor::Range {
                    self.error(
                        Diagnostic::error(
                            codes::RANGE,
                            "`range` gives several values and can only be bound to a variable",
                            span,
                        )
                        .with_help("write `x = range(from, to)` as a body literal and use `x`"),
                    );
                    return;
                }
                if let Functor::Max(ty) | Functor::Min(ty) = f {
                    // One type for the arguments and the value: the one expected here.
                    *ty = want;
                    for a in args.iter_mut() {
                        self.check_expr(a, want, span);
                    }
                    return;
                }
                if let Functor::As(target) = *f {
                    let from = args.first().and_then(|a| self.peek_type(a)).unwrap_or(
                        if target == Type::Symbol {
                            Type::Symbol
                        } else {
                            Type::Number
                        },
                    );
                    if (from == Type::Symbol) != (target == Type::Symbol) {
                        let msg = format!("`as` cannot read a `{from}` as a `{target}`");
                        let help = "a symbol's number is its place in Soufflé's symbol table, which Tollgate does not share; convert with `to_number` or `to_string`";
                        self.error(Diagnostic::error(codes::TYPE, msg, span).with_help(help));
                    }
                    if target != want {
                        let msg = format!(
                            "`as(.., {target})` gives a `{target}` but `{want}` is expected here"
                        );
                        self.error(
                            Diagnostic::error(codes::TYPE, msg, span).with_help(functor_help(*f)),
                        );
                    }
                    if let Some(a) = args.first_mut() {
                        self.check_expr(a, from, span);
                    }
                    return;
                }
                let (ret, params): (Type, Vec<Option<Type>>) = match f {
                    Functor::Range
                    | Functor::As(_)
                    | Functor::Max(_)
                    | Functor::Min(_)
                    | Functor::Record(_)
                    | Functor::Field(..)
                    | Functor::Branch(..)
                    | Functor::Arg(..) => (want, Vec::new()),
                    Functor::Cat => (Type::Symbol, vec![Some(Type::Symbol); args.len()]),
                    Functor::Strlen => (Type::Number, vec![Some(Type::Symbol)]),
                    Functor::Substr => (
                        Type::Symbol,
                        vec![Some(Type::Symbol), Some(Type::Number), Some(Type::Number)],
                    ),
                    Functor::ToNumber => (Type::Number, vec![Some(Type::Symbol)]),
                    Functor::ToString => (Type::Symbol, vec![None]),
                    // Left only when the argument is a symbol: the conversion's type error.
                    Functor::ToFloat => (Type::Float, vec![Some(Type::Number)]),
                    Functor::ToUnsigned => (Type::Unsigned, vec![Some(Type::Number)]),
                    Functor::Convert(c) => (c.target(), vec![Some(c.source())]),
                };
                if ret != want {
                    self.error(
                        Diagnostic::error(
                            codes::TYPE,
                            format!(
                                "`{}` gives a `{ret}` but `{want}` is expected here",
                                f.as_str()
                            ),
                            span,
                        )
                        .with_help(functor_help(*f)),
                    );
                }
                let to_string = *f == Functor::ToString;
                for (a, p) in args.iter_mut().zip(params) {
                    let p = p.unwrap_or_else(|| match self.peek_type(a) {
                        Some(Type::Symbol) | None => Type::Number,
                        Some(t) => t,
                    });
                    self.check_expr(a, p, span);
                    // `to_string` prints by its argument's type, which its encoded slot does
                    // not carry: a float or unsigned argument says it as `as(arg, T)` (the
                    // same bits). `to_string(max(x, 1.5))` once printed the float's bits.
                    if to_string && matches!(p, Type::Float | Type::Unsigned) {
                        let arg = std::mem::replace(a, IrExpr::Wild);
                        *a = IrExpr::Call(Functor::As(p), vec![arg]);
                    }
                }
            }
        }
    }
}

/// A record term or `nil`: typed only by where it stands.
fn is_record_term(e: &IrExpr) -> bool {
    matches!(
        e,
        IrExpr::Const(Value::Nil) | IrExpr::Call(Functor::Record(_), _)
    )
}
