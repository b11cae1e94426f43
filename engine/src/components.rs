//! Soufflé's components, expanded away after parsing: every `.init name = Comp<Args>` becomes
//! the relations, types, clauses and I/O directives of `Comp` (and of the components it
//! inherits from), with the type parameters replaced by the arguments and every name the
//! component declares qualified as `name.relation`. Names a component uses but does not declare
//! stay as written, so they refer to the enclosing program. What comes out is a plain
//! [`Program`]; the checker and everything after it never see a component.
//!
//! Soufflé's rules, which this follows:
//! - a component's content is first what its bases give (their type parameters bound to the
//!   arguments written after `:`), then its own declarations and clauses;
//! - `.override r` drops the clauses for `r` that the bases give; `r` must be declared
//!   `overridable` in a base;
//! - `.init` inside a component instantiates when the component does, its relations becoming
//!   `outer.inner.relation`;
//! - a component is looked up from where it is used outward: components declared in the
//!   component's body, then in the scopes around its definition.
//!
//! Clause ids (`// @id`) are qualified like relations, so two instances do not clash.

use std::collections::{HashMap, HashSet};

use crate::ast::{Atom, CompRef, Component, Expr, Ident, Literal, Program};
use crate::diag::{Diagnostic, codes};

/// How deeply instantiations and inheritance may nest: deeper means a component reaches
/// itself, which Soufflé also rejects.
const MAX_DEPTH: usize = 64;
/// How many instances (with inherited bases) one program may make: nesting multiplies them,
/// so a few lines could otherwise ask for more than any machine holds.
const MAX_INSTANCES: usize = 10_000;

type Result<T> = std::result::Result<T, Box<Diagnostic>>;

/// Expands the components of a parsed program. A program without any is returned unchanged.
pub fn expand(mut prog: Program) -> std::result::Result<Program, Vec<Diagnostic>> {
    if prog.components.is_empty() && prog.inits.is_empty() && prog.overrides.is_empty() {
        return Ok(prog);
    }
    let components = std::mem::take(&mut prog.components);
    let inits = std::mem::take(&mut prog.inits);
    let mut errors: Vec<Diagnostic> = std::mem::take(&mut prog.overrides)
        .into_iter()
        .map(|o| {
            let msg = format!("`.override {}` outside a component", o.name);
            Diagnostic::error(codes::COMPONENT, msg, o.span).with_help(
                "`.override` belongs in the body of a component that inherits the relation",
            )
        })
        .collect();
    duplicates(&components, &inits, &mut errors);
    let stack = [components.as_slice()];
    let mut budget = MAX_INSTANCES;
    for init in &inits {
        match instantiate(&stack, &init.comp, &HashMap::new(), 0, &mut budget) {
            Ok(content) => merge(&mut prog, qualified(content, &init.name.name)),
            Err(d) => errors.push(*d),
        }
    }
    if errors.is_empty() {
        Ok(prog)
    } else {
        errors.sort_by_key(|d| d.span.start);
        Err(errors)
    }
}

/// Two components or two instances of one name in one scope (nested bodies checked too).
fn duplicates(components: &[Component], inits: &[crate::ast::Init], errors: &mut Vec<Diagnostic>) {
    let mut seen: HashMap<&str, &Ident> = HashMap::new();
    for c in components {
        if let Some(first) = seen.insert(&c.name.name, &c.name) {
            let msg = format!("component `{}` is declared twice", c.name.name);
            errors.push(
                Diagnostic::error(codes::COMPONENT, msg, c.name.span)
                    .with_secondary(first.span, "first declared here")
                    .with_help("give each component its own name"),
            );
        }
        duplicates(&c.body.components, &c.body.inits, errors);
    }
    let mut seen: HashMap<&str, &Ident> = HashMap::new();
    for i in inits {
        if let Some(first) = seen.insert(&i.name.name, &i.name) {
            let msg = format!("instance `{}` is declared twice", i.name.name);
            errors.push(
                Diagnostic::error(codes::COMPONENT, msg, i.name.span)
                    .with_secondary(first.span, "first declared here")
                    .with_help("give each `.init` its own instance name"),
            );
        }
    }
}

/// The content of one instance of `cref`, with names relative to the instance (not yet
/// qualified). `stack` holds the component scopes visible where `cref` is written, innermost
/// last; `bindings` maps the enclosing component's type parameters to their arguments.
fn instantiate(
    stack: &[&[Component]],
    cref: &CompRef,
    bindings: &HashMap<String, String>,
    depth: usize,
    budget: &mut usize,
) -> Result<Program> {
    if *budget == 0 {
        let msg = format!("the program makes more than {MAX_INSTANCES} component instances");
        let help = "instances nested in instances multiply; instantiate fewer";
        return Err(Diagnostic::error(codes::COMPONENT, msg, cref.span)
            .with_help(help)
            .into());
    }
    *budget -= 1;
    if depth > MAX_DEPTH {
        let msg = format!(
            "components nest more than {MAX_DEPTH} levels deep at `{}`",
            cref.name.name
        );
        let help =
            "a component must not instantiate or inherit from itself, directly or through others";
        return Err(Diagnostic::error(codes::COMPONENT, msg, cref.span)
            .with_help(help)
            .into());
    }
    // A type parameter may name the component (`.init x = T`, `.comp A<T> : T`).
    let name = Ident {
        name: bind(bindings, &cref.name.name),
        span: cref.name.span,
    };
    let (level, comp) = find(stack, &name)?;
    if comp.params.len() != cref.args.len() {
        let msg = format!(
            "component `{}` takes {} type parameter{}, given {}",
            comp.name.name,
            comp.params.len(),
            if comp.params.len() == 1 { "" } else { "s" },
            cref.args.len()
        );
        let params: Vec<&str> = comp.params.iter().map(|p| p.name.as_str()).collect();
        let help = if params.is_empty() {
            format!("write `{}` without `<...>`", comp.name.name)
        } else {
            format!(
                "write `{}<{}>` with a type for each",
                comp.name.name,
                params.join(", ")
            )
        };
        return Err(Diagnostic::error(codes::COMPONENT, msg, cref.span)
            .with_secondary(comp.name.span, "declared here")
            .with_help(help)
            .into());
    }
    let own: HashMap<String, String> = comp
        .params
        .iter()
        .zip(&cref.args)
        .map(|(p, a)| (p.name.clone(), bind(bindings, &a.name)))
        .collect();
    let defining = &stack[..=level];
    let mut content = Program::default();
    for base in &comp.bases {
        merge(
            &mut content,
            instantiate(defining, base, &own, depth + 1, budget)?,
        );
    }
    for o in &comp.body.overrides {
        apply_override(&mut content, o, comp)?;
    }
    let body = &comp.body;
    content
        .types
        .extend(body.types.iter().cloned().map(|mut t| {
            for b in &mut t.bases {
                b.name = bind(&own, &b.name);
            }
            for (_, b) in t.fields.iter_mut().flatten() {
                b.name = bind(&own, &b.name);
            }
            for (_, fields) in t.branches.iter_mut().flatten() {
                for (_, b) in fields {
                    b.name = bind(&own, &b.name);
                }
            }
            t
        }));
    content
        .decls
        .extend(body.decls.iter().cloned().map(|mut d| {
            for a in &mut d.attrs {
                a.ty.name = bind(&own, &a.ty.name);
            }
            d
        }));
    content.directives.extend(body.directives.iter().cloned());
    content.clauses.extend(body.clauses.iter().cloned());
    content.pragmas.extend(body.pragmas.iter().cloned());
    content.functors.extend(body.functors.iter().cloned());
    let mut inner = defining.to_vec();
    inner.push(&body.components);
    for init in &body.inits {
        let nested = instantiate(&inner, &init.comp, &own, depth + 1, budget)?;
        merge(&mut content, qualified(nested, &init.name.name));
    }
    Ok(content)
}

fn bind(bindings: &HashMap<String, String>, name: &str) -> String {
    bindings
        .get(name)
        .cloned()
        .unwrap_or_else(|| name.to_string())
}

/// The component `name` refers to, searching from the innermost scope outward, with the
/// index of the scope it was found in.
fn find<'a>(stack: &[&'a [Component]], name: &Ident) -> Result<(usize, &'a Component)> {
    for (level, scope) in stack.iter().enumerate().rev() {
        if let Some(c) = scope.iter().find(|c| c.name.name == name.name) {
            return Ok((level, c));
        }
    }
    let known: Vec<&str> = stack
        .iter()
        .flat_map(|s| s.iter().map(|c| c.name.name.as_str()))
        .collect();
    let msg = format!("unknown component `{}`", name.name);
    let help = match known.as_slice() {
        [] => "declare it with `.comp Name { ... }`".to_string(),
        _ => format!(
            "the components visible here are {}",
            known
                .iter()
                .map(|k| format!("`{k}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    Err(Diagnostic::error(codes::COMPONENT, msg, name.span)
        .with_help(help)
        .into())
}

/// `.override r` in `comp`: drops `r` from the heads of the inherited clauses (and a clause
/// left without heads); `r` must be inherited and declared `overridable`.
fn apply_override(content: &mut Program, o: &Ident, comp: &Component) -> Result<()> {
    let Some(decl) = content.decls.iter().find(|d| d.name.name == o.name) else {
        let msg = format!(
            "`.override {}`: no base of component `{}` declares `{}`",
            o.name, comp.name.name, o.name
        );
        let help = "override a relation the component inherits, declared in a base component";
        return Err(Diagnostic::error(codes::COMPONENT, msg, o.span)
            .with_help(help)
            .into());
    };
    if !decl.overridable {
        let msg = format!("relation `{}` is not declared `overridable`", o.name);
        let help = format!(
            "add `overridable` after the attributes of `.decl {}` in the base component",
            o.name
        );
        return Err(Diagnostic::error(codes::COMPONENT, msg, o.span)
            .with_secondary(decl.name.span, "declared here")
            .with_help(help)
            .into());
    }
    content.clauses.retain_mut(|c| {
        c.heads.retain(|h| h.relation.name != o.name);
        !c.heads.is_empty()
    });
    Ok(())
}

fn merge(into: &mut Program, from: Program) {
    into.types.extend(from.types);
    into.decls.extend(from.decls);
    into.directives.extend(from.directives);
    into.clauses.extend(from.clauses);
    into.pragmas.extend(from.pragmas);
    into.functors.extend(from.functors);
}

/// The content of an instance named `prefix`: what it declares renamed `prefix.name`.
fn qualified(mut content: Program, prefix: &str) -> Program {
    let relations: HashSet<String> = content.decls.iter().map(|d| d.name.name.clone()).collect();
    let types: HashSet<String> = content.types.iter().map(|t| t.name.name.clone()).collect();
    let rename = |id: &mut Ident, names: &HashSet<String>| {
        if names.contains(&id.name) {
            id.name = format!("{prefix}.{}", id.name);
        }
    };
    for t in &mut content.types {
        rename(&mut t.name, &types);
        for b in &mut t.bases {
            rename(b, &types);
        }
        for (_, b) in t.fields.iter_mut().flatten() {
            rename(b, &types);
        }
        for (_, fields) in t.branches.iter_mut().flatten() {
            for (_, b) in fields {
                rename(b, &types);
            }
        }
    }
    for d in &mut content.decls {
        rename(&mut d.name, &relations);
        for a in &mut d.attrs {
            rename(&mut a.ty, &types);
        }
    }
    for dir in &mut content.directives {
        for r in &mut dir.relations {
            rename(r, &relations);
        }
    }
    for c in &mut content.clauses {
        if let Some(id) = &mut c.id {
            id.name = format!("{prefix}.{}", id.name);
        }
        let mut visit = |a: &mut Atom| rename(&mut a.relation, &relations);
        for h in &mut c.heads {
            visit(h);
        }
        for alternative in &mut c.body {
            atoms_in_literals(alternative, &mut visit);
        }
    }
    content
}

/// Calls `f` on every atom in `literals`, in aggregates and disjunctions too.
fn atoms_in_literals(literals: &mut [Literal], f: &mut impl FnMut(&mut Atom)) {
    for l in literals {
        match l {
            Literal::Atom(a) | Literal::Negated(a, _) => {
                f(a);
                atoms_in_exprs(&mut a.args, f);
            }
            Literal::Compare { lhs, rhs, .. } => {
                atoms_in_expr(lhs, f);
                atoms_in_expr(rhs, f);
            }
            Literal::Test { args, .. } => atoms_in_exprs(args, f),
            Literal::Disjunction(alternatives, _) => {
                for alternative in alternatives {
                    atoms_in_literals(alternative, f);
                }
            }
        }
    }
}

fn atoms_in_exprs(exprs: &mut [Expr], f: &mut impl FnMut(&mut Atom)) {
    for e in exprs {
        atoms_in_expr(e, f);
    }
}

fn atoms_in_expr(e: &mut Expr, f: &mut impl FnMut(&mut Atom)) {
    match e {
        Expr::Var(_)
        | Expr::Wildcard(_)
        | Expr::Number(..)
        | Expr::Unsigned(..)
        | Expr::Float(..)
        | Expr::String(..)
        | Expr::Nil(_) => {}
        Expr::Record(fields, _) | Expr::Branch(_, fields, _) => atoms_in_exprs(fields, f),
        Expr::Unary(_, inner, _) => atoms_in_expr(inner, f),
        Expr::Binary { lhs, rhs, .. } => {
            atoms_in_expr(lhs, f);
            atoms_in_expr(rhs, f);
        }
        Expr::Call { args, .. } | Expr::UserCall { args, .. } => atoms_in_exprs(args, f),
        Expr::Aggregate { target, body, .. } => {
            if let Some(t) = target {
                atoms_in_expr(t, f);
            }
            atoms_in_literals(body, f);
        }
    }
}
