//! The check stage: names, arities, types, range restriction, rule ids; lowers the syntax
//! tree to [`Ir`]. Every problem is a [`Diagnostic`] with a span and a help line.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use crate::ast::{self, Expr, Functor, Literal, Program, Span};
use crate::diag::{Diagnostic, Source, codes};
use crate::functions;
use crate::functors::{Functors, UserFunctor};
use crate::ir::{Ir, IrFact, IrRule, RelId, RelInfo};
use crate::stratify;

mod lower;
mod patterns;
mod type_decls;
mod types;
mod witness;

use crate::value::{RecordType, Type, Value};
use lower::RuleBuilder;

/// Largest supported arity (tuples are fixed-width arrays of at most this many slots).
pub const MAX_ARITY: usize = 32;

/// Checks a parsed program and lowers it. Warnings travel in [`Ir::warnings`].
pub fn check(program: &Program, source: &Source) -> Result<Ir, Vec<Diagnostic>> {
    check_with(program, source, &Functors::default())
}

/// Like [`check`], binding the program's `.functor` declarations to `functors`.
pub fn check_with(
    program: &Program,
    source: &Source,
    functors: &Functors,
) -> Result<Ir, Vec<Diagnostic>> {
    let mut cx = Checker {
        source,
        diags: Vec::new(),
        types: HashMap::new(),
        records: Vec::new(),
        branches: HashMap::new(),
        relations: Vec::new(),
        rel_by_name: rustc_hash::FxHashMap::default(),
        functors: HashMap::new(),
    };
    cx.resolve_types(program);
    cx.declare_functors(program, functors);
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
                    Diagnostic::error(codes::RULE_ID, "a rule id on a fact", id.span)
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
    let pragmas = pragmas(program, &mut warnings);
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
        pragmas,
        records: cx.records.into(),
    })
}

/// The `.pragma` options `tollgate rules eval` honours, as Soufflé does: `fact-dir` and
/// `output-dir`, the folders `-F` and `-D` name (which win when given, as Soufflé's command line
/// wins over a pragma).
pub const HONOURED_PRAGMAS: [&str; 2] = ["fact-dir", "output-dir"];

/// Every pragma as `(key, value)`, in source order; a warning for each one ignored: Soufflé's
/// other options choose how it compiles, schedules or profiles a program, not what it derives.
fn pragmas(program: &Program, warnings: &mut Vec<Diagnostic>) -> Vec<(String, String)> {
    for p in &program.pragmas {
        if HONOURED_PRAGMAS.contains(&p.key.as_str()) {
            continue;
        }
        let why = match p.key.as_str() {
            "jobs" => "evaluation here is deterministic and needs no threads",
            "provenance" => "every derived fact can be explained here: `tollgate rules explain`",
            "magic-transform"
            | "magic-transform-exclude"
            | "inline-exclude"
            | "disable-transformers" => "it is a Soufflé optimisation, which changes no result",
            "profile" | "profile-use" | "debug-report" | "verbose" | "show" | "index-stats" => {
                "it reports on Soufflé's own compilation and run"
            }
            _ => {
                "Tollgate honours `fact-dir` and `output-dir`; the other options choose how Soufflé compiles or runs a program, not what it derives"
            }
        };
        warnings.push(
            Diagnostic::warning(
                codes::PRAGMA,
                format!("`.pragma \"{}\"` is ignored", p.key),
                p.span,
            )
            .with_help(why),
        );
    }
    program
        .pragmas
        .iter()
        .map(|p| (p.key.clone(), p.value.clone()))
        .collect()
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
    /// Record types and algebraic data types, by the index in [`Type::Record`].
    records: Vec<RecordType>,
    /// Each branch of an algebraic data type: its type and its index there.
    branches: HashMap<String, (u16, u16)>,
    relations: Vec<RelInfo>,
    rel_by_name: rustc_hash::FxHashMap<String, RelId>,
    /// Declared functors: bound to their implementation, or `None` when none is registered.
    functors: HashMap<String, Option<Arc<UserFunctor>>>,
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
    fn type_of_name(&mut self, ty: &ast::Ident) -> Type {
        if let Some(t) = builtin_type(&ty.name).or_else(|| self.types.get(&ty.name).copied()) {
            return t;
        }
        self.diags.push(
            Diagnostic::error(codes::TYPE, format!("unknown type `{}`", ty.name), ty.span)
                .with_help("use symbol, number, unsigned, float or declare it with `.type`"),
        );
        Type::Symbol
    }

    fn declare_functors(&mut self, program: &Program, registry: &Functors) {
        for d in &program.functors {
            if self.functors.contains_key(&d.name.name) {
                let msg = format!("functor `{}` is declared twice", d.name);
                self.diags.push(
                    Diagnostic::error(codes::FUNCTOR, msg, d.name.span)
                        .with_help("declare each functor once"),
                );
                continue;
            }
            let params: Vec<Type> = d.params.iter().map(|p| self.type_of_name(p)).collect();
            let ret = self.type_of_name(&d.ret);
            let bound = registry.get(&d.name.name).map(|imp| {
                Arc::new(UserFunctor::new(
                    d.name.name.clone(),
                    params,
                    ret,
                    Arc::clone(imp),
                ))
            });
            self.functors.insert(d.name.name.clone(), bound);
        }
    }

    fn declare_relations(&mut self, program: &Program) {
        for d in &program.decls {
            if let Some(&prev) = self.rel_by_name.get(&d.name.name) {
                let prev_line = self.source.line_col(self.relations[prev].span.start).0;
                self.diags.push(
                    Diagnostic::error(
                        codes::DUPLICATE_DECL,
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
                        codes::ARITY,
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
                codes::UNKNOWN_RELATION,
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
                codes::ARITY,
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
                        codes::RULE_ID,
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
            match const_eval_in(arg, ty, &self.records) {
                Ok(v) => values.push(v),
                Err(msg) => {
                    self.diags
                        .push(
                            Diagnostic::error(codes::FACT, msg, arg.span()).with_help(format!(
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
        let line = self.source.line_col(head.span.start).0;
        let origin = if self.source.is_joined() {
            format!("{}:{line}", self.source.name_at(head.span.start))
        } else {
            format!("program:{line}")
        };
        Some(IrFact {
            rel,
            values,
            span: head.span,
            line,
            origin,
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

/// [`const_eval`] where record types are known: a record term `[..]` or `nil` in a column of
/// a record type.
pub(crate) fn const_eval_in(e: &Expr, ty: Type, records: &[RecordType]) -> Result<Value, String> {
    let adt = |id: u16| records.get(usize::from(id)).is_some_and(RecordType::is_adt);
    match (e, ty) {
        (Expr::Branch(name, args, _), Type::Record(id)) if adt(id) => {
            let rt = &records[usize::from(id)];
            let (_, branch) = rt
                .branch(&name.name)
                .ok_or_else(|| format!("`${}` is not a branch of `{}`", name.name, rt.name))?;
            if args.len() != branch.fields.len() {
                return Err(format!(
                    "`${}` takes {} field{}, {} given",
                    name.name,
                    branch.fields.len(),
                    plural(branch.fields.len()),
                    args.len()
                ));
            }
            let values: Result<Vec<Value>, String> = (args.iter().zip(&branch.fields))
                .map(|(f, (_, t))| const_eval_in(f, *t, records))
                .collect();
            Ok(Value::Adt {
                branch: Arc::from(name.name.as_str()),
                args: values?.into(),
            })
        }
        (_, Type::Record(id)) if adt(id) => Err(format!(
            "expected a branch of `{}` (`$Name(..)`)",
            records[usize::from(id)].name
        )),
        (Expr::Nil(_), Type::Record(_)) => Ok(Value::Nil),
        (Expr::Record(fields, _), Type::Record(id)) => {
            let rt = records
                .get(usize::from(id))
                .ok_or("a record of an unknown type")?;
            if fields.len() != rt.fields.len() {
                return Err(format!(
                    "a record of {} field{} where `{}` has {}",
                    fields.len(),
                    plural(fields.len()),
                    rt.name,
                    rt.fields.len()
                ));
            }
            let values: Result<Vec<Value>, String> = (fields.iter().zip(&rt.fields))
                .map(|(f, (_, t))| const_eval_in(f, *t, records))
                .collect();
            Ok(Value::Record(values?.into()))
        }
        (_, Type::Record(id)) => {
            let name = records.get(usize::from(id)).map_or("record", |r| &r.name);
            Err(format!(
                "expected a record of type `{name}` (`[...]` or `nil`)"
            ))
        }
        _ => const_eval(e, ty),
    }
}

fn const_eval_any(e: &Expr, want: Option<Type>) -> Result<Value, String> {
    Ok(match e {
        Expr::Nil(_) => return Err("`nil` where a record is not expected".into()),
        Expr::Branch(name, ..) => {
            return Err(format!(
                "`${}` where an algebraic data type is not expected",
                name.name
            ));
        }
        Expr::Record(..) => return Err("a record `[...]` where a record is not expected".into()),
        Expr::UserCall { name, .. } => {
            return Err(format!(
                "functor `@{name}` in a fact (facts hold literal values)"
            ));
        }
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
        Expr::String(s, _) => Value::sym(s),
        Expr::Unary(op, inner, _) => {
            let v = const_eval_any(inner, want)?;
            let slot = slot_of(&v);
            let r = functions::unary(*op, v.ty(), slot).ok_or_else(|| {
                format!("cannot apply `{}` to `{}`", op.as_prefix().trim(), v.ty())
            })?;
            value_of(r, v.ty())?
        }
        Expr::Binary { op, lhs, rhs, .. } => {
            let a = const_eval_any(lhs, want)?;
            let b = const_eval_any(rhs, Some(a.ty()))?;
            // `"pre-" + "-post"`: Soufflé reads `+` on symbols as `cat`.
            if let (ast::ArithOp::Add, Value::Symbol(x), Value::Symbol(y)) = (op, &a, &b) {
                return Ok(Value::sym(format!("{x}{y}")));
            }
            if a.ty() != b.ty()
                || a.ty() == Type::Symbol
                || (op.integral() && a.ty() == Type::Float)
            {
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
        Expr::Call {
            func: Functor::As(_),
            args,
            ..
        } => {
            let (Some(arg), Some(Expr::Var(ty))) = (args.first(), args.get(1)) else {
                return Err("`as` takes a value and a type name".into());
            };
            let target = builtin_type(&ty.name).ok_or_else(|| {
                format!(
                    "`as(.., {})` in a fact: facts cast only to number, unsigned, float or symbol",
                    ty.name
                )
            })?;
            let v = const_eval_any(arg, None)?;
            if (v.ty() == Type::Symbol) != (target == Type::Symbol) {
                return Err(format!("`as` cannot read a `{}` as a `{target}`", v.ty()));
            }
            let bits = match &v {
                Value::Number(n) => *n as u32,
                Value::Unsigned(u) => *u,
                Value::Float(f) => f.to_bits(),
                Value::Symbol(_) | Value::Record(_) | Value::Nil | Value::Adt { .. } => {
                    return Ok(v);
                }
            };
            match target {
                Type::Number => Value::Number(bits as i32),
                Type::Unsigned => Value::Unsigned(bits),
                Type::Float => Value::Float(f32::from_bits(bits)),
                Type::Symbol | Type::Record(_) => v,
            }
        }
        Expr::Call { func, args, .. } => {
            let vals: Result<Vec<Value>, String> =
                args.iter().map(|a| const_eval_any(a, None)).collect();
            let vals = vals?;
            match (func, vals.as_slice()) {
                (Functor::Cat, vs) if vs.iter().all(|v| matches!(v, Value::Symbol(_))) => {
                    Value::sym(vs.iter().map(|v| v.to_string()).collect::<String>())
                }
                (Functor::Max(_) | Functor::Min(_), [first, rest @ ..])
                    if rest.iter().all(|v| v.ty() == first.ty()) =>
                {
                    Value::extreme(vals.as_slice(), matches!(func, Functor::Max(_)))
                        .ok_or("no values")?
                        .clone()
                }
                (Functor::Strlen, [Value::Symbol(s)]) => Value::Number(s.chars().count() as i32),
                (Functor::Substr, [Value::Symbol(s), Value::Number(i), Value::Number(n)]) => {
                    Value::sym(functions::substr(s, *i, *n).ok_or("substr out of range")?)
                }
                (Functor::ToNumber, [Value::Symbol(s)]) => Value::Number(
                    functions::to_number(s).ok_or_else(|| format!("`{s}` is not a number"))?,
                ),
                (Functor::ToString, [v]) if v.ty() != Type::Symbol => {
                    Value::sym(crate::value::to_string_functor(v))
                }
                (Functor::ToFloat | Functor::ToUnsigned | Functor::ToNumber, [v])
                    if v.ty() != Type::Symbol =>
                {
                    let to = match func {
                        Functor::ToFloat => Type::Float,
                        Functor::ToUnsigned => Type::Unsigned,
                        _ => Type::Number,
                    };
                    match ast::Conversion::between(v.ty(), to) {
                        None => v.clone(),
                        Some(c) => convert_const(c, v)?,
                    }
                }
                (Functor::Convert(c), [v]) if v.ty() == c.source() => convert_const(*c, v)?,
                _ => return Err(format!("bad arguments to `{}`", func.as_str())),
            }
        }
        Expr::Var(v) => return Err(format!("variable `{}` in a fact", v.name)),
        Expr::Wildcard(_) => return Err("`_` in a fact".into()),
        Expr::Aggregate { .. } => return Err("aggregate in a fact".into()),
    })
}

/// A constant converted, or why not.
fn convert_const(c: ast::Conversion, v: &Value) -> Result<Value, String> {
    let r = functions::convert(c, slot_of(v))
        .ok_or_else(|| format!("`{}({v})` does not fit a {}", c.as_str(), c.target()))?;
    value_of(r, c.target())
}

fn slot_of(v: &Value) -> u32 {
    match v {
        Value::Number(n) => *n as u32,
        Value::Unsigned(u) => *u,
        Value::Float(f) => f.to_bits(),
        Value::Symbol(_) | Value::Record(_) | Value::Nil | Value::Adt { .. } => 0,
    }
}

fn value_of(slot: u32, ty: Type) -> Result<Value, String> {
    Ok(match ty {
        Type::Number => Value::Number(slot as i32),
        Type::Unsigned => Value::Unsigned(slot),
        Type::Float => Value::Float(f32::from_bits(slot)),
        Type::Symbol | Type::Record(_) => return Err("not a number".into()),
    })
}
