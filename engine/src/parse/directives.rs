//! Directives: `.decl` (with `eqrel` and `overridable`), `.type`, `.input` / `.output` /
//! `.printsize`, `.pragma`, `.init`, `.override`, `.functor` (and `.comp`, in `structure.rs`).

use super::lex::Tok;
use super::{
    DIRECTIVES, IGNORED_QUALIFIERS, PResult, Parser, UNSUPPORTED_DIRECTIVES, edit_distance, err,
    listed,
};
use crate::ast::{
    Atom, Attr, Clause, Directive, DirectiveKind, Expr, Ident, Literal, Pragma, Program, RelDecl,
    Span, TypeDecl,
};
use crate::diag::{Diagnostic, codes};

/// The words Soufflé's scanner reads as keywords, none of which can name a relation there
/// (its `scanner.ll`): aggregates, functors, operators, qualifiers and literals.
const RESERVED: &str = "autoinc band bor bxor bnot bshl bshr bshru land lor lxor lnot match \
    mean cat ord fold range strlen substr stateful contains output input overridable printsize \
    eqrel inline no_inline magic no_magic brie btree_delete btree min max as nil count sum true \
    false to_float to_number to_string to_unsigned __ITERATION__ __FILE__ __LINE__ __INCL__";

impl Parser<'_> {
    pub(super) fn directive(&mut self, name: &str, prog: &mut Program) -> PResult<()> {
        let kw = self.bump();
        match name {
            "decl" => {
                let (decls, eqrel) = self.decl(kw.start)?;
                if eqrel {
                    for d in &decls {
                        prog.clauses.extend(eqrel_rules(d));
                    }
                }
                prog.decls.extend(decls);
            }
            "type" => prog.types.push(self.type_decl(kw.start)?),
            "number_type" | "symbol_type" => {
                let name_id = self.ident("a type name")?;
                let base = Ident {
                    name: name.trim_end_matches("_type").into(),
                    span: kw.span(),
                };
                let span = Span::new(kw.start, self.prev_end());
                prog.types.push(TypeDecl {
                    name: name_id,
                    bases: vec![base],
                    fields: None,
                    branches: None,
                    span,
                });
            }
            "input" => prog
                .directives
                .push(self.io(DirectiveKind::Input, kw.start)?),
            "output" => prog
                .directives
                .push(self.io(DirectiveKind::Output, kw.start)?),
            "printsize" => prog
                .directives
                .push(self.io(DirectiveKind::PrintSize, kw.start)?),
            "pragma" => prog.pragmas.push(self.pragma(kw.start)?),
            "init" => prog.inits.push(self.init(kw.start)?),
            "functor" => prog.functors.push(self.functor_decl(kw.start)?),
            "override" => prog
                .overrides
                .push(self.qualified("a relation name after `.override`")?),
            "include" | "once" => {
                let msg = format!("`.{name}` is read only in program files");
                let help = "`tollgate rules eval`, `check` and `explain` read `.include` and `.once` in the files they are given; a rule pack or an envelope is one text, so put what it needs in it";
                return err(Diagnostic::error(codes::UNSUPPORTED, msg, kw.span()).with_help(help));
            }
            "plan" => {
                let msg = "`.plan` must follow the rule it orders";
                let help =
                    "move it right after the rule's `.`, as in `a(x) :- b(x), c(x). .plan 0:(2,1)`";
                return err(Diagnostic::error(codes::PARSE, msg, kw.span()).with_help(help));
            }
            _ if listed(UNSUPPORTED_DIRECTIVES, name) => {
                let msg = format!("directive `.{name}` is not supported");
                let help = "Tollgate reads `.decl`, `.type`, `.input`, `.output`, `.printsize`, `.pragma`, `.comp`, `.init`, `.override` and `.functor`";
                return err(Diagnostic::error(codes::UNSUPPORTED, msg, kw.span()).with_help(help));
            }
            _ => {
                let known = DIRECTIVES
                    .split(' ')
                    .map(|d| format!("`.{d}`"))
                    .collect::<Vec<_>>();
                let mut help = format!("the directives are {}", known.join(", "));
                if let Some(best) = DIRECTIVES
                    .split(' ')
                    .filter(|d| edit_distance(d, name) <= 2)
                    .min_by_key(|d| edit_distance(d, name))
                {
                    help = format!("did you mean `.{best}`? {help}");
                }
                let msg = format!("unknown directive `.{name}`");
                return err(Diagnostic::error(codes::PARSE, msg, kw.span()).with_help(help));
            }
        }
        Ok(())
    }

    /// `.pragma "key"` or `.pragma "key" "value"` (Soufflé's grammar: `'.pragma' STRING STRING?`).
    fn pragma(&mut self, start: usize) -> PResult<Pragma> {
        let help =
            "write a pragma as `.pragma \"key\" \"value\"`, as in `.pragma \"fact-dir\" \"facts\"`";
        let Tok::Str(key) = self.peek().clone() else {
            return Err(self.expected("the option's name as a string after `.pragma`", help));
        };
        self.bump();
        let value = match self.peek().clone() {
            Tok::Str(value) => {
                self.bump();
                value
            }
            _ => String::new(),
        };
        Ok(Pragma {
            key,
            value,
            span: Span::new(start, self.prev_end()),
        })
    }

    /// A relation's name in a declaration: not one of the words Soufflé's scanner reads as
    /// keywords ([`RESERVED`]), which a body would read as something else (`true` as a
    /// constraint, `count(..)` as an aggregate, `match(..)` as a test).
    fn relation_name(&mut self, what: &str) -> PResult<Ident> {
        let name = self.qualified(what)?;
        if RESERVED.split(' ').any(|w| w == name.name) {
            let msg = format!("`{}` is a keyword and cannot name a relation", name.name);
            let help = format!(
                "rename the relation (`{}_rel`, say): Soufflé reserves the same words",
                name.name
            );
            return err(Diagnostic::error(codes::PARSE, msg, name.span).with_help(help));
        }
        Ok(name)
    }

    /// `.decl a(x: number)`, or several relations of the same attributes at once, as Soufflé
    /// allows: `.decl a, b(x: number)`; with whether they are `eqrel`.
    fn decl(&mut self, start: usize) -> PResult<(Vec<RelDecl>, bool)> {
        let mut names = vec![self.relation_name("a relation name after `.decl`")?];
        while self.eat(&Tok::Comma) {
            names.push(self.relation_name("a relation name after `,`")?);
        }
        self.expect(
            &Tok::LParen,
            "`(` after the relation name",
            "declare attributes as in `.decl edge(x: number, y: number)`",
        )?;
        let mut attrs = Vec::new();
        if *self.peek() != Tok::RParen {
            loop {
                let attr = self.ident("an attribute name")?;
                let help = format!("give every attribute a type, as in `{}: number`", attr.name);
                self.expect(
                    &Tok::Colon,
                    &format!("`:` after attribute `{}`", attr.name),
                    &help,
                )?;
                let ty = self.qualified("a type name")?;
                attrs.push(Attr { name: attr, ty });
                if !self.eat(&Tok::Comma) {
                    break;
                }
            }
        }
        self.expect(
            &Tok::RParen,
            "`)` or `,` after attribute",
            "close the attribute list with `)`",
        )?;
        // Qualifiers; a name followed by `(` starts the next clause instead.
        let mut eqrel = false;
        let mut overridable = false;
        let mut inline = false;
        while let Tok::Ident(q) = self.peek() {
            if self.is_atom_start() {
                break;
            }
            let span = self.cur().span();
            if q == "eqrel" {
                if attrs.len() != 2 {
                    let msg = format!(
                        "an `eqrel` relation has two attributes; this one has {}",
                        attrs.len()
                    );
                    let help = "an equivalence relation pairs two values of one type, as in `.decl same(a: T, b: T) eqrel`";
                    return err(Diagnostic::error(codes::EQREL, msg, span).with_help(help));
                }
                eqrel = true;
                self.bump();
                continue;
            }
            if q == "overridable" {
                overridable = true;
                self.bump();
                continue;
            }
            if q == "inline" {
                inline = true;
                self.bump();
                continue;
            }
            if q == "choice" && *self.peek2() == Tok::Minus {
                let msg = "`choice-domain` is not supported";
                let help = "keep one tuple per key with an aggregate instead, as in `r(k, v) :- s(k, _), v = min w : { s(k, w) }`";
                return err(Diagnostic::error(codes::UNSUPPORTED, msg, span).with_help(help));
            }
            if !listed(IGNORED_QUALIFIERS, q) {
                let msg = format!("unknown relation qualifier `{q}`");
                let help = "the qualifiers are `eqrel` and `overridable`; `btree`, `btree_delete`, `brie`, `inline`, `no_inline`, `magic` and `no_magic` are accepted and ignored";
                return err(Diagnostic::error(codes::PARSE, msg, span).with_help(help));
            }
            self.bump();
        }
        let span = Span::new(start, self.prev_end());
        let decls = names
            .into_iter()
            .map(|name| RelDecl {
                name,
                attrs: attrs.clone(),
                overridable,
                inline,
                span,
            })
            .collect();
        Ok((decls, eqrel))
    }

    fn type_decl(&mut self, start: usize) -> PResult<TypeDecl> {
        let name = self.ident("a type name after `.type`")?;
        let mut bases = Vec::new();
        match self.peek() {
            Tok::Subtype => {
                self.bump();
                bases.push(self.ident("a base type after `<:`")?);
            }
            Tok::Eq => {
                self.bump();
                if self.eat(&Tok::LBracket) {
                    let fields = self.record_fields(&Tok::RBracket, "]")?;
                    return Ok(TypeDecl {
                        name,
                        bases,
                        fields: Some(fields),
                        branches: None,
                        span: Span::new(start, self.prev_end()),
                    });
                }
                if matches!(self.peek(), Tok::Ident(_)) && *self.peek2() == Tok::LBrace {
                    let mut branches = Vec::new();
                    loop {
                        let branch = self.ident("a branch name")?;
                        let help = "write a branch as `Name {field: type, ...}` (`Name {}` without fields)";
                        self.expect(&Tok::LBrace, "`{` after the branch's name", help)?;
                        let fields = self.record_fields(&Tok::RBrace, "}")?;
                        branches.push((branch, fields));
                        if !self.eat(&Tok::Pipe) {
                            break;
                        }
                    }
                    return Ok(TypeDecl {
                        name,
                        bases,
                        fields: None,
                        branches: Some(branches),
                        span: Span::new(start, self.prev_end()),
                    });
                }
                bases.push(self.ident("a type name after `=`")?);
                self.no_adt_branch()?;
                while self.eat(&Tok::Pipe) {
                    bases.push(self.ident("a type name after `|`")?);
                    self.no_adt_branch()?;
                }
            }
            // `.type T` alone: Soufflé's deprecated form of `.type T <: symbol`, which older
            // programs (its own `fib`, `prime`, `ackermann` tests) still use.
            Tok::Directive(_) | Tok::Eof => bases.push(Ident {
                name: "symbol".into(),
                span: name.span,
            }),
            _ if self.cur().line_break_before => bases.push(Ident {
                name: "symbol".into(),
                span: name.span,
            }),
            _ => {
                let help = "write `.type T <: symbol`, `.type T = number` or `.type T = A | B`";
                return Err(self.expected(&format!("`<:` or `=` after type `{}`", name.name), help));
            }
        }
        Ok(TypeDecl {
            name,
            bases,
            fields: None,
            branches: None,
            span: Span::new(start, self.prev_end()),
        })
    }

    /// Fields after a record type's `[` or a branch's `{`: `a: number, b: T]` (possibly none),
    /// up to `close`.
    fn record_fields(&mut self, close: &Tok, close_text: &str) -> PResult<Vec<(Ident, Ident)>> {
        let help = "write the fields as `name: type`, separated by `,`, as in `.type Pair = [a: number, b: symbol]` or `.type T = A {x: number} | B {}`";
        let mut fields = Vec::new();
        if self.eat(close) {
            return Ok(fields);
        }
        loop {
            let name = self.ident("a field name")?;
            self.expect(&Tok::Colon, "`:` and the field's type", help)?;
            let ty = self.qualified("the field's type")?;
            fields.push((name, ty));
            if !self.eat(&Tok::Comma) {
                break;
            }
        }
        self.expect(close, &format!("`{close_text}` or `,` after a field"), help)?;
        Ok(fields)
    }

    /// After a name in `.type T = A | B`: `{` would make it a branch of an algebraic data type.
    fn no_adt_branch(&mut self) -> PResult<()> {
        if *self.peek() != Tok::LBrace {
            return Ok(());
        }
        let msg = "a union of types mixed with a branch of an algebraic data type";
        let help = "write every alternative as a branch, as in `.type T = A {x: number} | B {}`";
        err(Diagnostic::error(codes::UNSUPPORTED, msg, self.cur().span()).with_help(help))
    }

    /// `.input a, b(key=value, ...)`: the parameters apply to every relation named.
    fn io(&mut self, kind: DirectiveKind, start: usize) -> PResult<Directive> {
        let mut relations = vec![self.qualified("a relation name")?];
        while self.eat(&Tok::Comma) {
            relations.push(self.qualified("a relation name after `,`")?);
        }
        let mut params = Vec::new();
        if self.eat(&Tok::LParen) {
            while *self.peek() != Tok::RParen {
                let key = self.ident("a parameter name")?;
                let help = "write parameters as `key=\"value\"`, as in `filename=\"edges.tsv\"`";
                self.expect(
                    &Tok::Eq,
                    &format!("`=` after parameter `{}`", key.name),
                    help,
                )?;
                let t = self.cur().clone();
                let value = match &t.tok {
                    Tok::Str(s) => s.clone(),
                    Tok::Ident(_) | Tok::Int(_) | Tok::Unsigned(_) | Tok::Float(_) => {
                        self.text[t.start..t.end].to_string()
                    }
                    _ => {
                        return Err(
                            self.expected("a string or a name as the parameter's value", help)
                        );
                    }
                };
                self.bump();
                params.push((key, value));
                if !self.eat(&Tok::Comma) {
                    break;
                }
            }
            let help = "close the parameter list with `)`";
            self.expect(&Tok::RParen, "`)` or `,` after parameter", help)?;
        }
        Ok(Directive {
            kind,
            relations,
            params,
            span: Span::new(start, self.prev_end()),
        })
    }
}

/// The rules that make `.decl r(a: T, b: T) eqrel` an equivalence relation, as Soufflé's
/// `eqrel` is: the reflexive, symmetric and transitive closure of the pairs put into it (a
/// value in no pair is related to nothing). Written at the declaration, with ids
/// `r:eqrel-reflexive`, `r:eqrel-reflexive-right`, `r:eqrel-symmetric`, `r:eqrel-transitive`,
/// so proofs name them.
fn eqrel_rules(decl: &RelDecl) -> Vec<Clause> {
    let span = decl.span;
    let name = |n: &str| Ident {
        name: n.to_string(),
        span,
    };
    let var = |n: &str| Expr::Var(name(n));
    let atom = |a: Expr, b: Expr| Atom {
        relation: decl.name.clone(),
        args: vec![a, b],
        span,
    };
    let rule = |id: &str, head: Atom, body: Vec<Atom>| Clause {
        id: Some(name(&format!("{}:eqrel-{id}", decl.name.name))),
        heads: vec![head],
        body: vec![body.into_iter().map(Literal::Atom).collect()],
        span,
    };
    vec![
        rule(
            "reflexive",
            atom(var("x"), var("x")),
            vec![atom(var("x"), Expr::Wildcard(span))],
        ),
        rule(
            "reflexive-right",
            atom(var("y"), var("y")),
            vec![atom(Expr::Wildcard(span), var("y"))],
        ),
        rule(
            "symmetric",
            atom(var("y"), var("x")),
            vec![atom(var("x"), var("y"))],
        ),
        rule(
            "transitive",
            atom(var("x"), var("z")),
            vec![atom(var("x"), var("y")), atom(var("y"), var("z"))],
        ),
    ]
}
