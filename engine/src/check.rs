//! The check stage: names, arities, types, range restriction, rule ids; lowers the syntax
//! tree to [`Ir`]. Every problem is a [`Diagnostic`] with a span and a help line.

use std::collections::{BTreeSet, HashMap, HashSet};

use crate::ast::{self, AggKind, Expr, Functor, Literal, Program, Span};
use crate::diag::{Diagnostic, Source};
use crate::functions;
use crate::ir::{Ir, IrAtom, IrExpr, IrFact, IrLit, IrRule, RelId, RelInfo, Var, VarId};
use crate::stratify;
use crate::value::{Type, Value};

/// Largest supported arity (tuples are fixed-width arrays of at most this many slots).
pub const MAX_ARITY: usize = 16;

/// Checks a parsed program and lowers it. Warnings travel in [`Ir::warnings`].
pub fn check(program: &Program, source: &Source) -> Result<Ir, Vec<Diagnostic>> {
    let mut cx = Checker {
        source,
        diags: Vec::new(),
        types: HashMap::new(),
        relations: Vec::new(),
        rel_by_name: HashMap::new(),
    };
    cx.resolve_types(program);
    cx.declare_relations(program);
    cx.apply_directives(program);
    let mut rules = Vec::new();
    let mut facts = Vec::new();
    let mut warnings = Vec::new();
    let mut used_ids: HashMap<String, Span> = HashMap::new();
    for (ci, clause) in program.clauses.iter().enumerate() {
        if clause.body.is_empty() {
            for head in &clause.heads {
                if let Some(f) = cx.lower_fact(head) {
                    facts.push(f);
                }
            }
            if let Some(id) = &clause.id {
                cx.diags.push(
                    Diagnostic::error("E-rule-id", "a rule id on a fact", id.span)
                        .with_help("rule ids name rules; facts are named by their origin"),
                );
            }
            continue;
        }
        let id = cx.rule_id(clause, &mut used_ids);
        let line = source.line_col(clause.span.start).0;
        for (di, conj) in expand_disjunctions(&clause.body).iter().enumerate() {
            for (hi, head) in clause.heads.iter().enumerate() {
                let mut b = RuleBuilder::new(&mut cx);
                if let Some((head, body, vars, warns)) = b.lower(head, conj) {
                    warnings.extend(warns);
                    rules.push(IrRule {
                        id: id.clone(),
                        clause: ci,
                        head_index: hi,
                        disjunct: di,
                        head,
                        body,
                        vars,
                        span: clause.span,
                        line,
                    });
                }
            }
        }
    }
    if cx.diags.iter().any(Diagnostic::is_error) {
        return Err(cx.diags);
    }
    // Singleton warnings repeat once per disjunct and head; keep one of each.
    let mut seen = HashSet::new();
    warnings.retain(|w| seen.insert((w.span, w.code)));
    let strat = stratify::stratify(&cx.relations, &rules, source)?;
    Ok(Ir {
        source: source.clone(),
        relations: cx.relations,
        rel_by_name: cx.rel_by_name,
        rules,
        facts,
        strata: strat.strata,
        stratum_of: strat.stratum_of,
        recursive: strat.recursive,
        warnings,
    })
}

/// Expands bracketed disjunctions into a flat list of conjunctions.
fn expand_disjunctions(body: &[Vec<Literal>]) -> Vec<Vec<Literal>> {
    let mut out = Vec::new();
    for alt in body {
        let mut acc: Vec<Vec<Literal>> = vec![Vec::new()];
        for lit in alt {
            match lit {
                Literal::Disjunction(alts, _) => {
                    let expanded = expand_disjunctions(alts);
                    let mut next = Vec::new();
                    for prefix in &acc {
                        for e in &expanded {
                            let mut p = prefix.clone();
                            p.extend(e.iter().cloned());
                            next.push(p);
                        }
                    }
                    acc = next;
                }
                other => acc.iter_mut().for_each(|p| p.push(other.clone())),
            }
        }
        out.extend(acc);
    }
    out
}

struct Checker<'s> {
    source: &'s Source,
    diags: Vec<Diagnostic>,
    types: HashMap<String, Type>,
    relations: Vec<RelInfo>,
    rel_by_name: HashMap<String, RelId>,
}

fn builtin_type(name: &str) -> Option<Type> {
    match name {
        "symbol" => Some(Type::Symbol),
        "number" => Some(Type::Number),
        "unsigned" => Some(Type::Unsigned),
        "float" => Some(Type::Float),
        _ => None,
    }
}

impl Checker<'_> {
    fn resolve_types(&mut self, program: &Program) {
        let decls: HashMap<&str, &ast::TypeDecl> = program
            .types
            .iter()
            .map(|t| (t.name.name.as_str(), t))
            .collect();
        for t in &program.types {
            if builtin_type(&t.name.name).is_some() {
                self.diags.push(
                    Diagnostic::error(
                        "E-type",
                        format!("`{}` is a built-in type", t.name),
                        t.name.span,
                    )
                    .with_help("choose another name for the new type"),
                );
                continue;
            }
            let mut visiting = Vec::new();
            if let Some(ty) = self.resolve_type(&t.name.name, &decls, &mut visiting) {
                self.types.insert(t.name.name.clone(), ty);
            }
        }
    }

    fn resolve_type(
        &mut self,
        name: &str,
        decls: &HashMap<&str, &ast::TypeDecl>,
        visiting: &mut Vec<String>,
    ) -> Option<Type> {
        if let Some(t) = builtin_type(name) {
            return Some(t);
        }
        if let Some(t) = self.types.get(name) {
            return Some(*t);
        }
        let decl = decls.get(name)?;
        if visiting.iter().any(|v| v == name) {
            self.diags.push(
                Diagnostic::error(
                    "E-type",
                    format!("type `{name}` is defined in terms of itself"),
                    decl.span,
                )
                .with_help("every type must come down to symbol, number, unsigned or float"),
            );
            return None;
        }
        visiting.push(name.to_string());
        let mut result: Option<Type> = None;
        for base in &decl.bases {
            let Some(t) = self.resolve_type(&base.name, decls, visiting) else {
                if builtin_type(&base.name).is_none() && !decls.contains_key(base.name.as_str()) {
                    self.diags.push(
                        Diagnostic::error(
                            "E-type",
                            format!("unknown type `{}`", base.name),
                            base.span,
                        )
                        .with_help(
                            "use symbol, number, unsigned, float or a type declared with `.type`",
                        ),
                    );
                }
                return None;
            };
            match result {
                Some(r) if r != t => {
                    self.diags.push(
                        Diagnostic::error(
                            "E-type",
                            format!("union `{name}` mixes `{r}` and `{t}`"),
                            base.span,
                        )
                        .with_help("all members of a union type must have the same primitive type"),
                    );
                    return None;
                }
                _ => result = Some(t),
            }
        }
        visiting.pop();
        result
    }

    fn type_of_name(&mut self, ty: &ast::Ident) -> Type {
        if let Some(t) = builtin_type(&ty.name).or_else(|| self.types.get(&ty.name).copied()) {
            return t;
        }
        self.diags.push(
            Diagnostic::error("E-type", format!("unknown type `{}`", ty.name), ty.span)
                .with_help("use symbol, number, unsigned, float or declare it with `.type`"),
        );
        Type::Symbol
    }

    fn declare_relations(&mut self, program: &Program) {
        for d in &program.decls {
            if let Some(&prev) = self.rel_by_name.get(&d.name.name) {
                let prev_line = self.source.line_col(self.relations[prev].span.start).0;
                self.diags.push(
                    Diagnostic::error(
                        "E-duplicate-decl",
                        format!("relation `{}` is declared twice", d.name),
                        d.name.span,
                    )
                    .with_help(format!(
                        "it was first declared on line {prev_line}; remove one declaration"
                    )),
                );
                continue;
            }
            if d.attrs.len() > MAX_ARITY {
                self.diags.push(
                    Diagnostic::error(
                        "E-arity",
                        format!(
                            "relation `{}` has {} columns; at most {MAX_ARITY} are supported",
                            d.name,
                            d.attrs.len()
                        ),
                        d.span,
                    )
                    .with_help("split the relation into narrower relations joined by a key"),
                );
            }
            let types: Vec<Type> = d.attrs.iter().map(|a| self.type_of_name(&a.ty)).collect();
            self.rel_by_name
                .insert(d.name.name.clone(), self.relations.len());
            self.relations.push(RelInfo {
                name: d.name.name.clone(),
                attrs: d.attrs.iter().map(|a| a.name.name.clone()).collect(),
                types,
                type_names: d.attrs.iter().map(|a| a.ty.name.clone()).collect(),
                span: d.span,
                input: None,
                output: None,
                printsize: false,
            });
        }
    }

    fn apply_directives(&mut self, program: &Program) {
        for d in &program.directives {
            let params: Vec<(String, String)> = d
                .params
                .iter()
                .map(|(k, v)| (k.name.clone(), v.clone()))
                .collect();
            for r in &d.relations {
                let Some(id) = self.lookup(&r.name, r.span) else {
                    continue;
                };
                let rel = &mut self.relations[id];
                match d.kind {
                    ast::DirectiveKind::Input => rel.input = Some(params.clone()),
                    ast::DirectiveKind::Output => rel.output = Some(params.clone()),
                    ast::DirectiveKind::PrintSize => rel.printsize = true,
                }
            }
        }
    }

    fn lookup(&mut self, name: &str, span: Span) -> Option<RelId> {
        if let Some(&id) = self.rel_by_name.get(name) {
            return Some(id);
        }
        let suggestion = self
            .relations
            .iter()
            .map(|r| (edit_distance(&r.name, name), &r.name))
            .filter(|(d, _)| *d <= 2)
            .min()
            .map(|(_, n)| n.clone());
        let help = match suggestion {
            Some(s) => format!("did you mean `{s}`? otherwise declare it with `.decl {name}(...)`"),
            None => format!("declare it with `.decl {name}(...)`"),
        };
        self.diags.push(
            Diagnostic::error(
                "E-unknown-relation",
                format!("unknown relation `{name}`"),
                span,
            )
            .with_label("not declared")
            .with_help(help),
        );
        None
    }

    fn check_arity(&mut self, rel: RelId, got: usize, span: Span) -> bool {
        let want = self.relations[rel].arity();
        if want == got {
            return true;
        }
        let r = &self.relations[rel];
        let cols: Vec<String> = r
            .attrs
            .iter()
            .zip(&r.type_names)
            .map(|(a, t)| format!("{a}: {t}"))
            .collect();
        self.diags.push(
            Diagnostic::error(
                "E-arity",
                format!(
                    "`{}` has {want} column{}, but {got} argument{} given",
                    r.name,
                    plural(want),
                    plural(got)
                ),
                span,
            )
            .with_help(format!(
                "it is declared as `{}({})`",
                r.name,
                cols.join(", ")
            )),
        );
        false
    }

    fn rule_id(&mut self, clause: &ast::Clause, used: &mut HashMap<String, Span>) -> String {
        if let Some(id) = &clause.id {
            if let Some(prev) = used.get(&id.name) {
                let line = self.source.line_col(prev.start).0;
                self.diags.push(
                    Diagnostic::error(
                        "E-rule-id",
                        format!("rule id `{}` is used twice", id.name),
                        id.span,
                    )
                    .with_help(format!(
                        "it already names the rule on line {line}; rule ids must be unique"
                    )),
                );
            }
            used.insert(id.name.clone(), clause.span);
            return id.name.clone();
        }
        // Derived ids depend only on the clause's text, so they survive reordering and edits
        // elsewhere in the program.
        let text = &self.source.text[clause.span.start as usize..clause.span.end as usize];
        let normalized: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
        let hash = blake3::hash(normalized.as_bytes()).to_hex();
        let head = clause
            .heads
            .first()
            .map_or("rule", |h| h.relation.name.as_str());
        let base = format!("{head}:{}", &hash[..8]);
        let mut id = base.clone();
        let mut n = 2;
        while used.contains_key(&id) {
            id = format!("{base}~{n}");
            n += 1;
        }
        used.insert(id.clone(), clause.span);
        id
    }

    fn lower_fact(&mut self, head: &ast::Atom) -> Option<IrFact> {
        let rel = self.lookup(&head.relation.name, head.relation.span)?;
        if !self.check_arity(rel, head.args.len(), head.span) {
            return None;
        }
        let mut values = Vec::new();
        for (i, arg) in head.args.iter().enumerate() {
            let ty = self.relations[rel].types[i];
            match const_eval(arg, ty) {
                Ok(v) => values.push(v),
                Err(msg) => {
                    self.diags
                        .push(
                            Diagnostic::error("E-fact", msg, arg.span()).with_help(format!(
                                "a fact holds constants; column `{}` of `{}` is `{}`",
                                self.relations[rel].attrs[i],
                                self.relations[rel].name,
                                self.relations[rel].type_names[i]
                            )),
                        );
                    return None;
                }
            }
        }
        Some(IrFact {
            rel,
            values,
            span: head.span,
            line: self.source.line_col(head.span.start).0,
        })
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur.push(sub.min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

/// Evaluates a ground expression of a fact to a value of type `ty`.
pub(crate) fn const_eval(e: &Expr, ty: Type) -> Result<Value, String> {
    let v = const_eval_any(e, Some(ty))?;
    if v.ty() == ty {
        Ok(v)
    } else {
        Err(format!(
            "expected a `{ty}`, found `{}` of type `{}`",
            v.to_literal(),
            v.ty()
        ))
    }
}

fn const_eval_any(e: &Expr, want: Option<Type>) -> Result<Value, String> {
    Ok(match e {
        Expr::Number(n, _) => match want {
            Some(Type::Unsigned) if *n >= 0 => Value::Unsigned(
                u32::try_from(*n).map_err(|_| format!("`{n}` does not fit an unsigned"))?,
            ),
            Some(Type::Float) => Value::Float(*n as f32),
            _ => Value::Number(
                i32::try_from(*n).map_err(|_| format!("`{n}` does not fit a 32-bit number"))?,
            ),
        },
        Expr::Unsigned(n, _) => Value::Unsigned(
            u32::try_from(*n).map_err(|_| format!("`{n}` does not fit an unsigned"))?,
        ),
        Expr::Float(x, _) => Value::Float(*x as f32),
        Expr::String(s, _) => Value::Symbol(s.clone()),
        Expr::Neg(inner, _) => {
            let v = const_eval_any(inner, want)?;
            let slot = slot_of(&v);
            let r = functions::negate(v.ty(), slot).ok_or("cannot negate a symbol")?;
            value_of(r, v.ty())?
        }
        Expr::Binary { op, lhs, rhs, .. } => {
            let a = const_eval_any(lhs, want)?;
            let b = const_eval_any(rhs, Some(a.ty()))?;
            if a.ty() != b.ty() || a.ty() == Type::Symbol {
                return Err(format!(
                    "cannot apply `{}` to `{}` and `{}`",
                    op.as_str(),
                    a.ty(),
                    b.ty()
                ));
            }
            let r = functions::arith(*op, a.ty(), slot_of(&a), slot_of(&b))
                .ok_or("division by zero")?;
            value_of(r, a.ty())?
        }
        Expr::Call { func, args, .. } => {
            let vals: Result<Vec<Value>, String> =
                args.iter().map(|a| const_eval_any(a, None)).collect();
            let vals = vals?;
            match (func, vals.as_slice()) {
                (Functor::Cat, vs) if vs.iter().all(|v| matches!(v, Value::Symbol(_))) => {
                    Value::Symbol(vs.iter().map(|v| v.to_string()).collect())
                }
                (Functor::Strlen, [Value::Symbol(s)]) => Value::Number(s.chars().count() as i32),
                (Functor::Substr, [Value::Symbol(s), Value::Number(i), Value::Number(n)]) => {
                    Value::Symbol(functions::substr(s, *i, *n).ok_or("substr out of range")?)
                }
                (Functor::ToNumber, [Value::Symbol(s)]) => Value::Number(
                    functions::to_number(s).ok_or_else(|| format!("`{s}` is not a number"))?,
                ),
                (Functor::ToString, [v]) if v.ty() != Type::Symbol => Value::Symbol(v.to_string()),
                _ => return Err(format!("bad arguments to `{}`", func.as_str())),
            }
        }
        Expr::Var(v) => return Err(format!("variable `{}` in a fact", v.name)),
        Expr::Wildcard(_) => return Err("`_` in a fact".into()),
        Expr::Aggregate { .. } => return Err("aggregate in a fact".into()),
    })
}

fn slot_of(v: &Value) -> u32 {
    match v {
        Value::Number(n) => *n as u32,
        Value::Unsigned(u) => *u,
        Value::Float(f) => f.to_bits(),
        Value::Symbol(_) => 0,
    }
}

fn value_of(slot: u32, ty: Type) -> Result<Value, String> {
    Ok(match ty {
        Type::Number => Value::Number(slot as i32),
        Type::Unsigned => Value::Unsigned(slot),
        Type::Float => Value::Float(f32::from_bits(slot)),
        Type::Symbol => return Err("not a number".into()),
    })
}

/// A lowered rule: head, ordered body, variables, warnings.
type LoweredRule = (IrAtom, Vec<IrLit>, Vec<Var>, Vec<Diagnostic>);

/// A pending aggregate: lowered after the outer body's grounding is known.
struct PendingAgg {
    var: VarId,
    kind: AggKind,
    target: Option<Expr>,
    body: Vec<Literal>,
    span: Span,
}

/// Lowers one head with one conjunction into a rule.
struct RuleBuilder<'c, 's> {
    cx: &'c mut Checker<'s>,
    vars: Vec<Var>,
    var_types: Vec<Option<(Type, Span)>>,
    first_span: Vec<Span>,
    names: HashMap<String, VarId>,
    occurrences: HashMap<String, (usize, Span)>,
    pending: Vec<PendingAgg>,
    /// While lowering an aggregate body: outer grounded names allowed to correlate, and the
    /// local names seen so far.
    inner: Option<(HashMap<String, VarId>, HashMap<String, VarId>)>,
    errors: usize,
}

impl<'c, 's> RuleBuilder<'c, 's> {
    fn new(cx: &'c mut Checker<'s>) -> Self {
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
        }
    }

    fn error(&mut self, d: Diagnostic) {
        self.errors += 1;
        self.cx.diags.push(d);
    }

    fn fresh(&mut self, name: String, local: bool, span: Span) -> VarId {
        self.vars.push(Var {
            name,
            ty: Type::Number,
            local,
        });
        self.var_types.push(None);
        self.first_span.push(span);
        self.vars.len() - 1
    }

    fn var(&mut self, ident: &ast::Ident) -> VarId {
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

    fn expr(&mut self, e: &Expr) -> IrExpr {
        match e {
            Expr::Var(i) => IrExpr::Var(self.var(i)),
            Expr::Wildcard(_) => IrExpr::Wild,
            Expr::Number(..) | Expr::Unsigned(..) | Expr::Float(..) | Expr::String(..) => {
                match const_eval_any(e, None) {
                    Ok(v) => IrExpr::Const(v),
                    Err(m) => {
                        self.error(
                            Diagnostic::error("E-literal", m, e.span())
                                .with_help("numbers are 32-bit: -2147483648 to 2147483647"),
                        );
                        IrExpr::Const(Value::Number(0))
                    }
                }
            }
            Expr::Neg(inner, _) => {
                let i = self.expr(inner);
                IrExpr::Neg(Box::new(i), Type::Number)
            }
            Expr::Binary { op, lhs, rhs, .. } => {
                let a = self.expr(lhs);
                let b = self.expr(rhs);
                IrExpr::Arith(*op, Box::new(a), Box::new(b), Type::Number)
            }
            Expr::Call { func, args, span } => {
                let want = match func {
                    Functor::Cat => None,
                    Functor::Strlen | Functor::ToNumber | Functor::ToString => Some(1),
                    Functor::Substr => Some(3),
                };
                let ok = match want {
                    Some(n) => args.len() == n,
                    None => args.len() >= 2,
                };
                if !ok {
                    self.error(
                        Diagnostic::error(
                            "E-arity",
                            format!(
                                "`{}` takes {} argument(s), {} given",
                                func.as_str(),
                                want.map_or("2 or more".to_string(), |n| n.to_string()),
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
                if self.inner.is_some() {
                    self.error(
                        Diagnostic::error(
                            "E-unsupported",
                            "an aggregate inside an aggregate",
                            *span,
                        )
                        .with_help("compute the inner aggregate in a separate rule"),
                    );
                    return IrExpr::Const(Value::Number(0));
                }
                let n = self.pending.len();
                let var = self.fresh(format!("${}{n}", kind.as_str()), false, *span);
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
    fn body_atom(&mut self, a: &ast::Atom, out: &mut Vec<IrLit>, positive: bool) -> Option<IrAtom> {
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

    fn literal(&mut self, lit: &Literal, out: &mut Vec<IrLit>) {
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
                    out.push(IrLit::Neg(atom));
                }
            }
            Literal::Compare { op, lhs, rhs, span } => {
                let l = self.expr(lhs);
                let r = self.expr(rhs);
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
                            "E-arity",
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
                    Diagnostic::error("E-unsupported", "a disjunction inside an aggregate", *span)
                        .with_help("write the alternatives as separate rules of a helper relation"),
                );
            }
        }
    }

    fn lower(&mut self, head: &ast::Atom, conj: &[Literal]) -> Option<LoweredRule> {
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
                self.error(Diagnostic::error("E-unbound", "`_` in a rule head", *s).with_help("a head needs a value in every column: use a variable bound in the body or a constant"));
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
        for p in pending {
            // Soufflé: variables of the aggregated expression are always local to the
            // aggregate; other body variables bound outside it are shared with the rule.
            let mut target_names = Vec::new();
            if let Some(t) = &p.target {
                expr_var_names(t, &mut target_names);
            }
            let outer: HashMap<String, VarId> = self
                .names
                .iter()
                .filter(|(n, v)| grounded.contains(v) && **v != p.var && !target_names.contains(n))
                .map(|(n, v)| (n.clone(), *v))
                .collect();
            self.inner = Some((outer.clone(), HashMap::new()));
            let mut body = Vec::new();
            for l in &p.body {
                self.literal(l, &mut body);
            }
            let target = p.target.as_ref().map(|t| self.expr(t));
            self.inner = None;
            let mut inner_ground: BTreeSet<VarId> = outer.values().copied().collect();
            for l in &body {
                if let IrLit::Pos(a) = l {
                    inner_ground.extend(IrLit::Pos(a.clone()).outputs());
                }
            }
            bind_equalities(&mut body, &mut inner_ground, &BTreeSet::new());
            let mut used = Vec::new();
            for l in &body {
                used.extend(l.inputs());
                used.extend(l.outputs());
            }
            if let Some(t) = &target {
                t.vars(&mut used);
            }
            let mut outer_used: Vec<VarId> =
                used.into_iter().filter(|v| !self.vars[*v].local).collect();
            outer_used.sort_unstable();
            outer_used.dedup();
            for l in &body {
                self.require_bound(&l.inputs(), &inner_ground, l.span());
            }
            if let Some(t) = &target {
                let mut tv = Vec::new();
                t.vars(&mut tv);
                self.require_bound(&tv, &inner_ground, p.span);
            }
            let body = order_body(body, &outer.values().copied().collect());
            lits.push(IrLit::Agg {
                var: p.var,
                kind: p.kind,
                target,
                ty: Type::Number,
                body,
                outer: outer_used,
                span: p.span,
            });
            grounded.insert(p.var);
        }
        bind_equalities(&mut lits, &mut grounded, &BTreeSet::new());
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
            .filter(|(n, (c, _))| *c == 1 && !n.starts_with('_'))
            .collect();
        singles.sort_by_key(|(_, (_, s))| *s);
        for (name, (_, span)) in singles {
            warnings.push(
                Diagnostic::warning(
                    "W-singleton",
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

    fn require_bound(&mut self, vars: &[VarId], grounded: &BTreeSet<VarId>, _span: Span) {
        for v in vars {
            if !grounded.contains(v) && !self.vars[*v].name.starts_with('$') {
                let name = self.vars[*v].name.clone();
                let span = self.first_span[*v];
                if self
                    .cx
                    .diags
                    .iter()
                    .any(|d| d.code == "E-unbound" && d.span == span)
                {
                    continue;
                }
                self.error(
                    Diagnostic::error("E-unbound", format!("variable `{name}` is not bound by a positive atom"), span)
                        .with_label("used here")
                        .with_help(format!("add a body atom that binds `{name}`, or give it a value with `{name} = ...`")),
                );
            }
        }
    }

    // ---- types -------------------------------------------------------------------------

    fn set_var_type(&mut self, v: VarId, t: Type, span: Span) {
        match self.var_types[v] {
            None => self.var_types[v] = Some((t, span)),
            Some((prev, prev_span)) if prev != t => {
                let name = self.vars[v].name.clone();
                let line = self.cx.source.line_col(prev_span.start).0;
                self.error(
                    Diagnostic::error("E-type", format!("variable `{name}` is used as `{t}` here and as `{prev}` elsewhere"), span)
                        .with_secondary(prev_span, format!("used as `{prev}` here (line {line})"))
                        .with_help("a variable has one type; use a second variable or convert with `to_string`/`to_number`"),
                );
            }
            Some(_) => {}
        }
    }

    fn infer_types(&mut self, head: &mut IrAtom, body: &mut [IrLit]) {
        for l in body.iter_mut() {
            self.type_lit(l);
        }
        let types = self.cx.relations[head.rel].types.clone();
        for (i, a) in head.args.iter_mut().enumerate() {
            self.check_expr(a, types[i], head.span);
        }
    }

    fn type_atom(&mut self, a: &mut IrAtom) {
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

    fn type_lit(&mut self, l: &mut IrLit) {
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
                    (None, None) => Type::Number,
                };
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
                                "E-pattern",
                                format!("invalid {what} `{p}`: {first}"),
                                *span,
                            )
                            .with_help(help),
                        );
                    }
                }
            }
            IrLit::Bind { var, expr, span } => {
                let t = self.peek_type(expr).unwrap_or(Type::Number);
                self.check_expr(expr, t, *span);
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
                    (_, Some(e)) => {
                        let t = self.peek_type(e).unwrap_or(Type::Number);
                        if t == Type::Symbol {
                            self.error(
                                Diagnostic::error(
                                    "E-type",
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

    /// The type an expression has on its own, if it determines one.
    fn peek_type(&self, e: &IrExpr) -> Option<Type> {
        match e {
            IrExpr::Var(v) => self.var_types[*v].map(|(t, _)| t),
            IrExpr::Const(c) => match c {
                Value::Number(_) => None, // integer literals adapt to their context
                other => Some(other.ty()),
            },
            IrExpr::Wild => None,
            IrExpr::Neg(i, _) => self.peek_type(i),
            IrExpr::Arith(_, a, b, _) => self.peek_type(a).or_else(|| self.peek_type(b)),
            IrExpr::Call(f, _) => Some(match f {
                Functor::Cat | Functor::Substr | Functor::ToString => Type::Symbol,
                Functor::Strlen | Functor::ToNumber => Type::Number,
            }),
        }
    }

    /// Checks that `e` has type `want`, fixing operator types and adapting integer literals.
    fn check_expr(&mut self, e: &mut IrExpr, want: Type, span: Span) {
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
                            Diagnostic::error("E-type", format!("{shown} is `{t}` but `{want}` is expected here"), span)
                                .with_help("convert with `to_string(...)` or `to_number(...)`, or use a variable of the right type"),
                        );
                    }
                    Some(_) => {}
                    None => self.var_types[v] = Some((want, span)),
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
                            "E-type",
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
            IrExpr::Neg(i, t) => {
                if want == Type::Symbol {
                    self.error(
                        Diagnostic::error(
                            "E-type",
                            "arithmetic where a `symbol` is expected",
                            span,
                        )
                        .with_help("use `cat(...)` to build symbols"),
                    );
                }
                *t = want;
                self.check_expr(i, want, span);
            }
            IrExpr::Arith(_, a, b, t) => {
                if want == Type::Symbol {
                    self.error(Diagnostic::error("E-type", "arithmetic where a `symbol` is expected", span).with_help("use `cat(...)` to build symbols, `to_string(...)` to turn numbers into symbols"));
                }
                *t = want;
                self.check_expr(a, want, span);
                self.check_expr(b, want, span);
            }
            IrExpr::Call(f, args) => {
                let (ret, params): (Type, Vec<Option<Type>>) = match f {
                    Functor::Cat => (Type::Symbol, vec![Some(Type::Symbol); args.len()]),
                    Functor::Strlen => (Type::Number, vec![Some(Type::Symbol)]),
                    Functor::Substr => (
                        Type::Symbol,
                        vec![Some(Type::Symbol), Some(Type::Number), Some(Type::Number)],
                    ),
                    Functor::ToNumber => (Type::Number, vec![Some(Type::Symbol)]),
                    Functor::ToString => (Type::Symbol, vec![None]),
                };
                if ret != want {
                    self.error(
                        Diagnostic::error(
                            "E-type",
                            format!(
                                "`{}` gives a `{ret}` but `{want}` is expected here",
                                f.as_str()
                            ),
                            span,
                        )
                        .with_help(functor_help(*f)),
                    );
                }
                for (a, p) in args.iter_mut().zip(params) {
                    let p = p.unwrap_or_else(|| match self.peek_type(a) {
                        Some(Type::Symbol) | None => Type::Number,
                        Some(t) => t,
                    });
                    self.check_expr(a, p, span);
                }
            }
        }
    }
}

fn functor_help(f: Functor) -> &'static str {
    match f {
        Functor::Cat => "`cat(s1, s2, ...)` joins two or more symbols",
        Functor::Strlen => "`strlen(s)` is the number of characters of a symbol",
        Functor::Substr => "`substr(s, start, length)` is zero-based",
        Functor::ToNumber => "`to_number(s)` parses a symbol as a number",
        Functor::ToString => "`to_string(n)` prints a number as a symbol",
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
/// is `reserved`; repeats until nothing changes.
fn bind_equalities(lits: &mut [IrLit], grounded: &mut BTreeSet<VarId>, reserved: &BTreeSet<VarId>) {
    loop {
        let mut changed = false;
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
            let ready = |e: &IrExpr, g: &BTreeSet<VarId>| {
                let mut vs = Vec::new();
                e.vars(&mut vs);
                !matches!(e, IrExpr::Wild) && vs.iter().all(|v| g.contains(v))
            };
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
        Expr::Neg(a, _) => expr_var_names(a, out),
        Expr::Binary { lhs, rhs, .. } => {
            expr_var_names(lhs, out);
            expr_var_names(rhs, out);
        }
        Expr::Call { args, .. } => args.iter().for_each(|a| expr_var_names(a, out)),
        Expr::Wildcard(_)
        | Expr::Number(..)
        | Expr::Unsigned(..)
        | Expr::Float(..)
        | Expr::String(..)
        | Expr::Aggregate { .. } => {}
    }
}
