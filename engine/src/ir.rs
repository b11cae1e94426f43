//! The checked program: relations resolved to ids, variables to slots, types inferred,
//! disjunctions expanded, aggregates and body expressions lowered to literals, strata computed.
//!
//! Produced by [`crate::check`]; read by the planner, the evaluators, the explainer and the
//! proof checker.

use std::fmt::{self, Write as _};
use std::sync::Arc;

use crate::ast::{AggKind, ArithOp, CmpOp, Functor, Span, TestFn, UnaryOp};
use crate::diag::{Diagnostic, Source};
use crate::functors::UserFunctor;
use crate::value::{Type, Value};

/// Index of a relation in [`Ir::relations`].
pub type RelId = usize;
/// Index of a variable in [`IrRule::vars`].
pub type VarId = usize;

/// A declared relation.
#[derive(Debug, Clone, PartialEq)]
pub struct RelInfo {
    /// Name.
    pub name: String,
    /// Attribute names.
    pub attrs: Vec<String>,
    /// Primitive column types.
    pub types: Vec<Type>,
    /// Column types as declared (may be user type names).
    pub type_names: Vec<String>,
    /// Where it was declared.
    pub span: Span,
    /// `.input` parameters, if it is an input.
    pub input: Option<Vec<(String, String)>>,
    /// `.output` parameters, if it is an output.
    pub output: Option<Vec<(String, String)>>,
    /// Whether `.printsize` names it.
    pub printsize: bool,
}

impl RelInfo {
    /// Number of columns.
    pub fn arity(&self) -> usize {
        self.types.len()
    }
}

/// A variable of a rule.
#[derive(Debug, Clone, PartialEq)]
pub struct Var {
    /// Name as written (`_` for wildcards, `$n` for compiler temporaries).
    pub name: String,
    /// Inferred type.
    pub ty: Type,
    /// Whether it lives only inside an aggregate body.
    pub local: bool,
}

impl Var {
    /// Whether a proof should show this variable's binding.
    pub fn is_shown(&self) -> bool {
        !self.local && !self.name.starts_with('$') && self.name != "_"
    }
}

/// An expression over a rule's variables.
#[derive(Debug, Clone, PartialEq)]
pub enum IrExpr {
    /// A variable.
    Var(VarId),
    /// A constant.
    Const(Value),
    /// `_` (only as an argument of a negated atom or an aggregate body atom).
    Wild,
    /// A unary operator (minus, `bnot`, `lnot`) in the given type.
    Unary(UnaryOp, Box<IrExpr>, Type),
    /// Arithmetic in the given type.
    Arith(ArithOp, Box<IrExpr>, Box<IrExpr>, Type),
    /// A functor call.
    Call(Functor, Vec<IrExpr>),
    /// A user-defined functor's call (`@name(...)`), bound to its implementation.
    User(Arc<UserFunctor>, Vec<IrExpr>),
}

impl IrExpr {
    /// Adds every variable of the expression to `out`.
    pub fn vars(&self, out: &mut Vec<VarId>) {
        match self {
            IrExpr::Var(v) => out.push(*v),
            IrExpr::Const(_) | IrExpr::Wild => {}
            IrExpr::Unary(_, e, _) => e.vars(out),
            IrExpr::Arith(_, a, b, _) => {
                a.vars(out);
                b.vars(out);
            }
            IrExpr::Call(_, args) | IrExpr::User(_, args) => {
                args.iter().for_each(|a| a.vars(out));
            }
        }
    }
}

/// An atom with resolved relation.
#[derive(Debug, Clone, PartialEq)]
pub struct IrAtom {
    /// Relation.
    pub rel: RelId,
    /// Arguments: in positive body atoms only `Var`, `Const` or `Wild`.
    pub args: Vec<IrExpr>,
    /// Source span.
    pub span: Span,
}

/// A body literal.
#[derive(Debug, Clone, PartialEq)]
pub enum IrLit {
    /// A positive atom; binds its variables.
    Pos(IrAtom),
    /// A negated atom over a lower stratum.
    Neg(IrAtom),
    /// A comparison of two bound expressions of type `ty`.
    Cmp {
        /// Operator.
        op: CmpOp,
        /// Left.
        lhs: IrExpr,
        /// Right.
        rhs: IrExpr,
        /// Operand type.
        ty: Type,
        /// Source span.
        span: Span,
    },
    /// A test functor (`match`, `contains`, `glob`).
    Test {
        /// Which.
        func: TestFn,
        /// Pattern or needle.
        pattern: IrExpr,
        /// Subject.
        subject: IrExpr,
        /// Written with `!`.
        negated: bool,
        /// Source span.
        span: Span,
    },
    /// `var = expr` where `var` is bound by nothing else: computes it.
    Bind {
        /// The variable computed.
        var: VarId,
        /// Its value.
        expr: IrExpr,
        /// Source span.
        span: Span,
    },
    /// `var = range(from, to[, step])`: binds `var` to each value in turn (a generator), or,
    /// when `bound`, holds when `var` is one of them.
    Range {
        /// The variable.
        var: VarId,
        /// `from`, `to` and, if given, `step`.
        args: Vec<IrExpr>,
        /// Their type (and the variable's): number, unsigned or float.
        ty: Type,
        /// Whether `var` is bound before (a membership test) rather than generated.
        bound: bool,
        /// Source span.
        span: Span,
    },
    /// `var = kind target : { body }` over lower strata.
    Agg {
        /// The variable receiving the result.
        var: VarId,
        /// Which aggregate.
        kind: AggKind,
        /// Aggregated expression (not for `count`).
        target: Option<IrExpr>,
        /// Result type.
        ty: Type,
        /// Body: positive atoms (binding local variables), then filters.
        body: Vec<IrLit>,
        /// Outer variables the body refers to (correlated), bound before the aggregate.
        outer: Vec<VarId>,
        /// Source span.
        span: Span,
    },
}

impl IrLit {
    /// Source span.
    pub fn span(&self) -> Span {
        match self {
            IrLit::Pos(a) | IrLit::Neg(a) => a.span,
            IrLit::Cmp { span, .. }
            | IrLit::Test { span, .. }
            | IrLit::Bind { span, .. }
            | IrLit::Range { span, .. }
            | IrLit::Agg { span, .. } => *span,
        }
    }

    /// Variables the literal needs bound before it can run (none for positive atoms).
    pub fn inputs(&self) -> Vec<VarId> {
        let mut out = Vec::new();
        match self {
            IrLit::Pos(_) => {}
            IrLit::Neg(a) => a.args.iter().for_each(|e| e.vars(&mut out)),
            IrLit::Cmp { lhs, rhs, .. } => {
                lhs.vars(&mut out);
                rhs.vars(&mut out);
            }
            IrLit::Test {
                pattern, subject, ..
            } => {
                pattern.vars(&mut out);
                subject.vars(&mut out);
            }
            IrLit::Bind { expr, .. } => expr.vars(&mut out),
            IrLit::Range {
                var, args, bound, ..
            } => {
                args.iter().for_each(|a| a.vars(&mut out));
                if *bound {
                    out.push(*var);
                }
            }
            IrLit::Agg { outer, .. } => out.extend(outer),
        }
        out
    }

    /// The variables the literal binds.
    pub fn outputs(&self) -> Vec<VarId> {
        match self {
            IrLit::Pos(a) => {
                let mut out = Vec::new();
                for arg in &a.args {
                    if let IrExpr::Var(v) = arg {
                        out.push(*v);
                    }
                }
                out
            }
            IrLit::Bind { var, .. } | IrLit::Agg { var, .. } => vec![*var],
            IrLit::Range { var, bound, .. } => {
                if *bound {
                    vec![]
                } else {
                    vec![*var]
                }
            }
            IrLit::Neg(_) | IrLit::Cmp { .. } | IrLit::Test { .. } => Vec::new(),
        }
    }
}

/// One rule: one head of one disjunct of one clause.
#[derive(Debug, Clone, PartialEq)]
pub struct IrRule {
    /// Stable id (`// @id NAME`, or derived from the head and the clause text).
    pub id: String,
    /// Index of the clause in the program.
    pub clause: usize,
    /// Which head of the clause.
    pub head_index: usize,
    /// Which alternative of the clause's body (after expanding disjunctions).
    pub disjunct: usize,
    /// The head; arguments may be expressions over bound variables.
    pub head: IrAtom,
    /// The body in a runnable order: every literal's inputs are bound by earlier literals.
    pub body: Vec<IrLit>,
    /// Variables.
    pub vars: Vec<Var>,
    /// Span of the whole clause.
    pub span: Span,
    /// One-based line of the clause.
    pub line: usize,
}

impl IrRule {
    /// Relations this rule reads, with whether the dependency is negative (negation or
    /// aggregation), in body order.
    pub fn dependencies(&self) -> Vec<(RelId, bool, Span)> {
        fn walk(lits: &[IrLit], negative: bool, out: &mut Vec<(RelId, bool, Span)>) {
            for lit in lits {
                match lit {
                    IrLit::Pos(a) => out.push((a.rel, negative, a.span)),
                    IrLit::Neg(a) => out.push((a.rel, true, a.span)),
                    IrLit::Agg { body, .. } => walk(body, true, out),
                    IrLit::Cmp { .. }
                    | IrLit::Test { .. }
                    | IrLit::Bind { .. }
                    | IrLit::Range { .. } => {}
                }
            }
        }
        let mut out = Vec::new();
        walk(&self.body, false, &mut out);
        out
    }

    /// Indices of the variables shown in proofs, sorted by name.
    pub fn shown_vars(&self) -> Vec<VarId> {
        let mut v: Vec<VarId> = (0..self.vars.len())
            .filter(|&i| self.vars[i].is_shown())
            .collect();
        v.sort_by(|&a, &b| self.vars[a].name.cmp(&self.vars[b].name));
        v
    }
}

/// A ground fact written in the program.
#[derive(Debug, Clone, PartialEq)]
pub struct IrFact {
    /// Relation.
    pub rel: RelId,
    /// Values.
    pub values: Vec<Value>,
    /// Source span.
    pub span: Span,
    /// One-based line.
    pub line: usize,
    /// Its origin label in proofs: `program:LINE`, or `FILE:LINE` in a program joined from
    /// several files.
    pub origin: String,
}

/// A checked, stratified program.
#[derive(Debug, Clone)]
pub struct Ir {
    /// The source it came from.
    pub source: Source,
    /// Relations in declaration order.
    pub relations: Vec<RelInfo>,
    /// Name → id (FxHash: looked up for every fact encoded, decoded or explained).
    pub rel_by_name: rustc_hash::FxHashMap<String, RelId>,
    /// Rules in source order.
    pub rules: Vec<IrRule>,
    /// Facts written in the program.
    pub facts: Vec<IrFact>,
    /// Strata in evaluation order; each a list of relations.
    pub strata: Vec<Vec<RelId>>,
    /// Stratum of each relation.
    pub stratum_of: Vec<usize>,
    /// Whether each relation's stratum is recursive (a rule of it reads its own stratum).
    pub recursive: Vec<bool>,
    /// Warnings found while checking.
    pub warnings: Vec<Diagnostic>,
    /// The program's `.pragma` options as `(key, value)`, in source order (`check::HONOURED_PRAGMAS`).
    pub pragmas: Vec<(String, String)>,
    /// Record types, by the index in [`Type::Record`].
    pub records: Arc<[crate::value::RecordType]>,
}

impl Ir {
    /// The relation called `name`.
    pub fn relation(&self, name: &str) -> Option<RelId> {
        self.rel_by_name.get(name).copied()
    }

    /// Rules whose head is `rel`, in source order.
    pub fn rules_for(&self, rel: RelId) -> impl Iterator<Item = (usize, &IrRule)> {
        self.rules
            .iter()
            .enumerate()
            .filter(move |(_, r)| r.head.rel == rel)
    }

    /// A readable dump of the checked program (the `check` stage's snapshot).
    pub fn dump(&self) -> String {
        let mut out = String::new();
        for (i, stratum) in self.strata.iter().enumerate() {
            let names: Vec<&str> = stratum
                .iter()
                .map(|&r| self.relations[r].name.as_str())
                .collect();
            let _ = writeln!(out, "stratum {i}: {}", names.join(", "));
        }
        for rule in &self.rules {
            let _ = writeln!(out, "[{}] {}", rule.id, DisplayRule(self, rule));
        }
        out
    }
}

/// Formats a rule in Datalog syntax with its body in evaluation order.
pub struct DisplayRule<'a>(pub &'a Ir, pub &'a IrRule);

impl fmt::Display for DisplayRule<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (ir, rule) = (self.0, self.1);
        write_atom(f, ir, rule, &rule.head)?;
        f.write_str(" :- ")?;
        for (i, lit) in rule.body.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write_lit(f, ir, rule, lit)?;
        }
        f.write_str(".")
    }
}

/// Formats one literal of a rule.
pub struct DisplayLit<'a>(pub &'a Ir, pub &'a IrRule, pub &'a IrLit);

impl fmt::Display for DisplayLit<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_lit(f, self.0, self.1, self.2)
    }
}

fn write_lit(f: &mut fmt::Formatter<'_>, ir: &Ir, rule: &IrRule, lit: &IrLit) -> fmt::Result {
    match lit {
        IrLit::Pos(a) => write_atom(f, ir, rule, a),
        IrLit::Neg(a) => {
            f.write_str("!")?;
            write_atom(f, ir, rule, a)
        }
        // Soufflé's `true` and `false` (the parser writes them as these comparisons).
        IrLit::Cmp {
            op: op @ (CmpOp::Eq | CmpOp::Ne),
            lhs: IrExpr::Const(Value::Number(0)),
            rhs: IrExpr::Const(Value::Number(0)),
            ..
        } => f.write_str(if *op == CmpOp::Eq { "true" } else { "false" }),
        IrLit::Cmp { op, lhs, rhs, .. } => {
            write_expr(f, ir, rule, lhs)?;
            write!(f, " {} ", op.as_str())?;
            write_expr(f, ir, rule, rhs)
        }
        IrLit::Test {
            func,
            pattern,
            subject,
            negated,
            ..
        } => {
            if *negated {
                f.write_str("!")?;
            }
            write!(f, "{}(", func.as_str())?;
            write_expr(f, ir, rule, pattern)?;
            f.write_str(", ")?;
            write_expr(f, ir, rule, subject)?;
            f.write_str(")")
        }
        IrLit::Bind { var, expr, .. } => {
            write!(f, "{} = ", rule.vars[*var].name)?;
            write_expr(f, ir, rule, expr)
        }
        IrLit::Range { var, args, .. } => {
            write!(f, "{} = range(", rule.vars[*var].name)?;
            for (i, a) in args.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                write_expr(f, ir, rule, a)?;
            }
            f.write_str(")")
        }
        IrLit::Agg {
            var,
            kind,
            target,
            body,
            ..
        } => {
            write!(f, "{} = {}", rule.vars[*var].name, kind.as_str())?;
            if let Some(t) = target {
                f.write_str(" ")?;
                write_expr(f, ir, rule, t)?;
            }
            f.write_str(" : { ")?;
            for (i, l) in body.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                write_lit(f, ir, rule, l)?;
            }
            f.write_str(" }")
        }
    }
}

fn write_atom(f: &mut fmt::Formatter<'_>, ir: &Ir, rule: &IrRule, atom: &IrAtom) -> fmt::Result {
    write!(f, "{}(", ir.relations[atom.rel].name)?;
    for (i, a) in atom.args.iter().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        write_expr(f, ir, rule, a)?;
    }
    f.write_str(")")
}

fn write_expr(f: &mut fmt::Formatter<'_>, ir: &Ir, rule: &IrRule, e: &IrExpr) -> fmt::Result {
    match e {
        IrExpr::Var(v) => f.write_str(&rule.vars[*v].name),
        IrExpr::Const(c) => f.write_str(&c.to_literal()),
        IrExpr::Wild => f.write_str("_"),
        IrExpr::Unary(op, e, _) => {
            f.write_str(op.as_prefix())?;
            write_expr(f, ir, rule, e)
        }
        IrExpr::Arith(op, a, b, _) => {
            f.write_str("(")?;
            write_expr(f, ir, rule, a)?;
            write!(f, " {} ", op.as_str())?;
            write_expr(f, ir, rule, b)?;
            f.write_str(")")
        }
        // A record as written; a field of one as `r[0]` (zero-based), what a pattern
        // `r = [x, _]` reads.
        IrExpr::Call(Functor::Record(_), fields) => {
            f.write_str("[")?;
            for (i, a) in fields.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                write_expr(f, ir, rule, a)?;
            }
            f.write_str("]")
        }
        IrExpr::Call(Functor::Field(j, _), args) if args.len() == 1 => {
            write_expr(f, ir, rule, &args[0])?;
            write!(f, "[{j}]")
        }
        // A branch as written; a field of one as `e[$B:0]` (none for another branch).
        IrExpr::Call(Functor::Branch(t, b), args) => {
            write!(f, "${}", branch_name(ir, *t, *b))?;
            if !args.is_empty() {
                f.write_str("(")?;
                for (i, a) in args.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write_expr(f, ir, rule, a)?;
                }
                f.write_str(")")?;
            }
            Ok(())
        }
        IrExpr::Call(Functor::Arg(t, b, j), args) if args.len() == 1 => {
            write_expr(f, ir, rule, &args[0])?;
            write!(f, "[${}:{j}]", branch_name(ir, *t, *b))
        }
        IrExpr::Call(_, args) | IrExpr::User(_, args) => {
            match e {
                IrExpr::User(u, _) => write!(f, "@{}(", u.name)?,
                IrExpr::Call(func, _) => write!(f, "{}(", func.as_str())?,
                _ => {}
            }
            for (i, a) in args.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                write_expr(f, ir, rule, a)?;
            }
            f.write_str(")")
        }
    }
}

fn branch_name(ir: &Ir, t: u16, b: u16) -> &str {
    ir.records
        .get(usize::from(t))
        .and_then(|rt| rt.branches.get(usize::from(b)))
        .map_or("?", |branch| branch.name.as_str())
}

/// The texts explanations write that depend only on the program, prepared once per model
/// (`ModelData::rule_texts`): every default denial asks for a few why-nots, which would
/// otherwise look up the same rules and format the same literals each time.
pub(crate) struct RuleTexts {
    /// Per relation, the rules with it as head, in source order.
    pub(crate) rules_by_head: Vec<Vec<usize>>,
    /// Per rule, the text of each body literal (the `failed_literal` it may name).
    pub(crate) literals: Vec<Vec<Arc<str>>>,
    /// Per rule, the variables a failure shows, in slot order: slot and name.
    pub(crate) shown: Vec<Vec<(usize, Arc<str>)>>,
}

impl RuleTexts {
    pub(crate) fn new(ir: &Ir) -> RuleTexts {
        let mut rules_by_head = vec![Vec::new(); ir.relations.len()];
        for (ri, rule) in ir.rules.iter().enumerate() {
            rules_by_head[rule.head.rel].push(ri);
        }
        RuleTexts {
            rules_by_head,
            literals: ir
                .rules
                .iter()
                .map(|rule| {
                    let text = |lit| Arc::from(DisplayLit(ir, rule, lit).to_string());
                    rule.body.iter().map(text).collect()
                })
                .collect(),
            shown: ir
                .rules
                .iter()
                .map(|rule| {
                    let vars = rule.vars.iter().enumerate();
                    let shown = vars.filter(|(_, var)| var.is_shown());
                    shown
                        .map(|(v, var)| (v, Arc::from(var.name.as_str())))
                        .collect()
                })
                .collect(),
        }
    }
}
