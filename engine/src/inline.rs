//! Relations declared `inline`, as Soufflé reads them: a positive body atom of one is replaced
//! by the bodies of the relation's clauses, its arguments equated with their heads and their
//! variables named apart (`cross(p, q, v)` with `cross([a, b], [c, d], a * d - b * c) :- true`
//! becomes `p = [a.cross1, b.cross1], q = [..], v = a.cross1 * d.cross1 - ..`). So a clause of
//! an inline relation need not bind its head's variables itself: the atom's place does, as in
//! Soufflé's `convex_hull`. A relation used where it cannot be inlined (negated, inside an
//! aggregate or a bracketed disjunction, read or written by a directive) keeps its clauses as
//! well, and is then evaluated as any other relation; a recursive inline relation is refused.

use std::collections::{HashMap, HashSet};

use crate::ast::{Atom, Clause, CmpOp, DirectiveKind, Expr, Ident, Literal, Program};
use crate::diag::{Diagnostic, codes};

/// How many rounds of inlining a body may take: an inline relation reaching itself through
/// others would go on for ever.
const MAX_ROUNDS: usize = 32;
/// How many alternatives inlining may make of one clause (each inline atom multiplies them by
/// its relation's clauses).
const MAX_ALTERNATIVES: usize = 4096;

/// Each inline relation's clauses: its head's arguments and its body's alternatives.
type Defs = HashMap<String, Vec<(Vec<Expr>, Vec<Vec<Literal>>)>>;

/// Inlines the program's `inline` relations. A program without any is returned unchanged.
pub fn expand(mut prog: Program) -> Result<Program, Vec<Diagnostic>> {
    let inline: HashSet<String> = prog
        .decls
        .iter()
        .filter(|d| d.inline)
        .map(|d| d.name.name.clone())
        .collect();
    if inline.is_empty() {
        return Ok(prog);
    }
    // Each inline relation's clauses, as `(heads' args, body alternatives)` for its one head.
    let mut defs: Defs = HashMap::new();
    for c in &prog.clauses {
        for h in c.heads.iter().filter(|h| inline.contains(&h.relation.name)) {
            let body = if c.body.is_empty() {
                vec![Vec::new()]
            } else {
                c.body.clone()
            };
            let def = defs.entry(h.relation.name.clone()).or_default();
            def.push((h.args.clone(), body));
        }
    }
    // Where a relation cannot be inlined, it keeps its clauses.
    let mut kept: HashSet<String> = HashSet::new();
    for d in &prog.directives {
        if matches!(d.kind, DirectiveKind::Input | DirectiveKind::Output) {
            kept.extend(d.relations.iter().map(|r| r.name.clone()));
        }
    }
    for c in &prog.clauses {
        for alt in &c.body {
            for lit in alt {
                not_inlinable(lit, &inline, &mut kept, true);
            }
        }
    }
    let mut errors = Vec::new();
    let mut counter = 0usize;
    for clause in &mut prog.clauses {
        if clause.body.is_empty() {
            continue;
        }
        let mut rounds = 0;
        while clause
            .body
            .iter()
            .flatten()
            .any(|l| matches!(l, Literal::Atom(a) if defs.contains_key(&a.relation.name)))
        {
            rounds += 1;
            if rounds > MAX_ROUNDS || clause.body.len() > MAX_ALTERNATIVES {
                errors.push(recursive(clause, &defs));
                break;
            }
            let mut next = Vec::new();
            for alt in std::mem::take(&mut clause.body) {
                next.extend(inline_once(alt, &defs, &mut counter));
            }
            clause.body = next;
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    prog.clauses.retain(|c| {
        !c.heads
            .iter()
            .all(|h| defs.contains_key(&h.relation.name) && !kept.contains(&h.relation.name))
    });
    Ok(prog)
}

/// Marks the inline relations `lit` uses where they cannot be inlined: negated, and anywhere
/// inside an aggregate or a bracketed disjunction (`top` is false there).
fn not_inlinable(lit: &Literal, inline: &HashSet<String>, kept: &mut HashSet<String>, top: bool) {
    let mut mark = |a: &Atom| {
        if inline.contains(&a.relation.name) {
            kept.insert(a.relation.name.clone());
        }
    };
    match lit {
        Literal::Atom(a) => {
            if !top {
                mark(a);
            }
            a.args.iter().for_each(|e| in_expr(e, inline, kept));
        }
        Literal::Negated(a, _) => {
            mark(a);
            a.args.iter().for_each(|e| in_expr(e, inline, kept));
        }
        Literal::Compare { lhs, rhs, .. } => {
            in_expr(lhs, inline, kept);
            in_expr(rhs, inline, kept);
        }
        Literal::Test { args, .. } => args.iter().for_each(|e| in_expr(e, inline, kept)),
        Literal::Disjunction(alts, _) => alts
            .iter()
            .flatten()
            .for_each(|l| not_inlinable(l, inline, kept, false)),
    }
}

fn in_expr(e: &Expr, inline: &HashSet<String>, kept: &mut HashSet<String>) {
    match e {
        Expr::Aggregate { target, body, .. } => {
            if let Some(t) = target {
                in_expr(t, inline, kept);
            }
            body.iter()
                .for_each(|l| not_inlinable(l, inline, kept, false));
        }
        Expr::Unary(_, a, _) => in_expr(a, inline, kept),
        Expr::Binary { lhs, rhs, .. } => {
            in_expr(lhs, inline, kept);
            in_expr(rhs, inline, kept);
        }
        Expr::Call { args, .. }
        | Expr::UserCall { args, .. }
        | Expr::Record(args, _)
        | Expr::Branch(_, args, _) => args.iter().for_each(|a| in_expr(a, inline, kept)),
        Expr::Var(_)
        | Expr::Wildcard(_)
        | Expr::Number(..)
        | Expr::Unsigned(..)
        | Expr::Float(..)
        | Expr::String(..)
        | Expr::Nil(_) => {}
    }
}

/// One alternative with its first positive inline atom replaced: one alternative per
/// alternative of each clause of the relation.
fn inline_once(alt: Vec<Literal>, defs: &Defs, counter: &mut usize) -> Vec<Vec<Literal>> {
    let at = alt
        .iter()
        .position(|l| matches!(l, Literal::Atom(a) if defs.contains_key(&a.relation.name)));
    let Some(at) = at else {
        return vec![alt];
    };
    let Literal::Atom(atom) = &alt[at] else {
        return vec![alt];
    };
    let mut out = Vec::new();
    for (head, bodies) in &defs[&atom.relation.name] {
        for body in bodies {
            *counter += 1;
            let suffix = format!("{}{}", atom.relation.name, counter);
            let mut lits: Vec<Literal> = alt[..at].to_vec();
            for (arg, h) in atom.args.iter().zip(head) {
                if matches!(arg, Expr::Wildcard(_)) {
                    continue;
                }
                lits.push(Literal::Compare {
                    op: CmpOp::Eq,
                    lhs: arg.clone(),
                    rhs: renamed_expr(h, &suffix),
                    span: atom.span,
                });
            }
            lits.extend(body.iter().map(|l| renamed_lit(l, &suffix)));
            lits.extend(alt[at + 1..].iter().cloned());
            out.push(lits);
        }
    }
    out
}

fn rename(i: &Ident, suffix: &str) -> Ident {
    Ident {
        name: format!("{suffix}.{}", i.name),
        span: i.span,
    }
}

fn renamed_expr(e: &Expr, suffix: &str) -> Expr {
    let all = |args: &[Expr]| args.iter().map(|a| renamed_expr(a, suffix)).collect();
    match e {
        Expr::Var(i) => Expr::Var(rename(i, suffix)),
        Expr::Unary(op, a, s) => Expr::Unary(*op, Box::new(renamed_expr(a, suffix)), *s),
        Expr::Binary { op, lhs, rhs, span } => Expr::Binary {
            op: *op,
            lhs: Box::new(renamed_expr(lhs, suffix)),
            rhs: Box::new(renamed_expr(rhs, suffix)),
            span: *span,
        },
        Expr::Call { func, args, span } => Expr::Call {
            func: *func,
            // `as(x, T)` names a type, not a variable.
            args: match func {
                crate::ast::Functor::As(_) => {
                    let mut a = args.clone();
                    if let Some(first) = a.first_mut() {
                        *first = renamed_expr(first, suffix);
                    }
                    a
                }
                _ => all(args),
            },
            span: *span,
        },
        Expr::UserCall { name, args, span } => Expr::UserCall {
            name: name.clone(),
            args: all(args),
            span: *span,
        },
        Expr::Record(args, s) => Expr::Record(all(args), *s),
        Expr::Branch(name, args, s) => Expr::Branch(name.clone(), all(args), *s),
        Expr::Aggregate {
            kind,
            target,
            body,
            span,
        } => Expr::Aggregate {
            kind: *kind,
            target: target.as_ref().map(|t| Box::new(renamed_expr(t, suffix))),
            body: body.iter().map(|l| renamed_lit(l, suffix)).collect(),
            span: *span,
        },
        Expr::Wildcard(_)
        | Expr::Number(..)
        | Expr::Unsigned(..)
        | Expr::Float(..)
        | Expr::String(..)
        | Expr::Nil(_) => e.clone(),
    }
}

fn renamed_lit(l: &Literal, suffix: &str) -> Literal {
    let atom = |a: &Atom| Atom {
        relation: a.relation.clone(),
        args: a.args.iter().map(|e| renamed_expr(e, suffix)).collect(),
        span: a.span,
    };
    match l {
        Literal::Atom(a) => Literal::Atom(atom(a)),
        Literal::Negated(a, s) => Literal::Negated(atom(a), *s),
        Literal::Compare { op, lhs, rhs, span } => Literal::Compare {
            op: *op,
            lhs: renamed_expr(lhs, suffix),
            rhs: renamed_expr(rhs, suffix),
            span: *span,
        },
        Literal::Test {
            func,
            args,
            negated,
            span,
        } => Literal::Test {
            func: *func,
            args: args.iter().map(|e| renamed_expr(e, suffix)).collect(),
            negated: *negated,
            span: *span,
        },
        Literal::Disjunction(alts, s) => Literal::Disjunction(
            alts.iter()
                .map(|alt| alt.iter().map(|l| renamed_lit(l, suffix)).collect())
                .collect(),
            *s,
        ),
    }
}

fn recursive(clause: &Clause, defs: &Defs) -> Diagnostic {
    let name = clause
        .body
        .iter()
        .flatten()
        .find_map(|l| match l {
            Literal::Atom(a) if defs.contains_key(&a.relation.name) => {
                Some(a.relation.name.clone())
            }
            _ => None,
        })
        .unwrap_or_default();
    let msg = format!(
        "inline relation `{name}` reaches itself, or inlining it makes too many alternatives"
    );
    let help = "an inline relation is replaced by its rules where it is used, so it cannot be recursive; drop `inline` from its declaration";
    Diagnostic::error(codes::UNSUPPORTED, msg, clause.span).with_help(help)
}
