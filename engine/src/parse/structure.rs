//! The item loop of a program and of a component's body, and the component directives:
//! `.comp Name<T> : Base<T> { ... }`, `.init name = Comp<Args>`. Expansion into plain
//! relations happens after parsing, in [`crate::components`].

use super::lex::{IdMark, Tok};
use super::{PResult, Parser, misplaced_id};
use crate::ast::{CompRef, Component, FunctorDecl, Ident, Init, Program, Span};
use crate::diag::{Diagnostic, codes};

const COMP_HELP: &str = "write a component as `.comp Name<T> : Base<T> { ... }`";
const INIT_HELP: &str =
    "write an instantiation as `.init name = Component` or `.init name = Component<T>`";

/// Where the `// @id` marks stand while items are read (shared by nested bodies).
struct Marks<'m> {
    marks: &'m [IdMark],
    next: usize,
}

impl Parser<'_> {
    pub(super) fn program(&mut self, marks: &[IdMark], errors: &mut Vec<Diagnostic>) -> Program {
        let mut prog = Program::default();
        let mut marks = Marks { marks, next: 0 };
        self.items(&mut prog, &mut marks, errors, false);
        prog
    }

    /// Reads items into `prog` until the end of the file or, in a component's body
    /// (`nested`), until its `}` (left for the caller).
    fn items(
        &mut self,
        prog: &mut Program,
        marks: &mut Marks<'_>,
        errors: &mut Vec<Diagnostic>,
        nested: bool,
    ) {
        let mut after_error = false;
        loop {
            let item_start = self.pos;
            let mut pending = Vec::new();
            while let Some(m) = marks
                .marks
                .get(marks.next)
                .filter(|m| m.before_token <= item_start)
            {
                if m.before_token == item_start {
                    pending.push(m);
                } else if !after_error {
                    // Inside the previous item (unless error recovery skipped over it).
                    errors.push(misplaced_id(m));
                }
                marks.next += 1;
            }
            let id = match self.peek() {
                Tok::Ident(_) => pending.pop().map(|m| m.name.clone()),
                _ => None,
            };
            errors.extend(pending.into_iter().map(misplaced_id));
            self.depth = 0;
            let result = match self.peek() {
                Tok::Eof => break,
                Tok::RBrace if nested => break,
                Tok::Directive(name) if name == "comp" => self
                    .component(marks, errors)
                    .map(|c| prog.components.push(c)),
                Tok::Directive(name) => {
                    let name = name.clone();
                    self.directive(&name, prog)
                }
                Tok::Ident(_) => self.clause(id).map(|c| prog.clauses.push(c)),
                Tok::RBrace => Err(self.expected(
                    "a directive, a fact or a rule",
                    "this `}` closes no component; remove it",
                )),
                _ => Err(self.expected(
                    "a directive, a fact or a rule",
                    "start each item with a directive such as `.decl`, or with a relation name",
                )),
            };
            after_error = result.is_err();
            if let Err(d) = result {
                let in_directive = matches!(self.tok_at(item_start).tok, Tok::Directive(_));
                errors.push(*d);
                self.recover(item_start, in_directive, nested);
            }
        }
    }

    /// `.comp Name<T, ...> : Base<A>, ... { items }`; the current token is `.comp`.
    fn component(
        &mut self,
        marks: &mut Marks<'_>,
        errors: &mut Vec<Diagnostic>,
    ) -> PResult<Component> {
        let start = self.bump().start;
        let name = self.ident("a component name after `.comp`")?;
        let params = self.type_params(COMP_HELP)?;
        let mut bases = Vec::new();
        if self.eat(&Tok::Colon) {
            bases.push(self.comp_ref("a base component after `:`", COMP_HELP)?);
            // Soufflé's grammar separates bases with `,` or `:`.
            while self.eat(&Tok::Comma) || self.eat(&Tok::Colon) {
                bases.push(self.comp_ref("a base component after `,`", COMP_HELP)?);
            }
        }
        self.expect(
            &Tok::LBrace,
            &format!("`{{` to open the body of component `{}`", name.name),
            COMP_HELP,
        )?;
        let mut body = Program::default();
        self.items(&mut body, marks, errors, true);
        let close = self.expect(
            &Tok::RBrace,
            &format!("`}}` to close component `{}`", name.name),
            "close the component's body with `}`",
        )?;
        Ok(Component {
            name,
            params,
            bases,
            body,
            span: Span::new(start, close.end),
        })
    }

    /// `.init name = Component<Args>`; the current token follows `.init`.
    pub(super) fn init(&mut self, start: usize) -> PResult<Init> {
        let name = self.ident("an instance name after `.init`")?;
        self.expect(&Tok::Eq, "`=` after the instance name", INIT_HELP)?;
        let comp = self.comp_ref("a component name after `=`", INIT_HELP)?;
        Ok(Init {
            name,
            comp,
            span: Span::new(start, self.prev_end()),
        })
    }

    /// `.functor name(x: T, ...): R`, or Soufflé's older `.functor name(T, ...): R`; the
    /// current token follows `.functor`.
    pub(super) fn functor_decl(&mut self, start: usize) -> PResult<FunctorDecl> {
        let help = "declare a functor as `.functor name(x: number, s: symbol): number`";
        let name = self.ident("a functor name after `.functor`")?;
        self.expect(&Tok::LParen, "`(` after the functor's name", help)?;
        let mut params = Vec::new();
        while *self.peek() != Tok::RParen {
            let first = self.qualified("a parameter")?;
            params.push(if self.eat(&Tok::Colon) {
                self.qualified("a type name")?
            } else {
                first
            });
            if !self.eat(&Tok::Comma) {
                break;
            }
        }
        self.expect(&Tok::RParen, "`)` or `,` after a parameter", help)?;
        self.expect(&Tok::Colon, "`:` and the type of the functor's value", help)?;
        let ret = self.qualified("the type of the functor's value")?;
        if let Tok::Ident(q) = self.peek()
            && q == "stateful"
        {
            let msg = "stateful functors are not supported";
            let help = "a stateful functor reaches Soufflé's record and symbol tables from C++; write a pure functor";
            return Err(Box::new(
                Diagnostic::error(codes::UNSUPPORTED, msg, self.cur().span()).with_help(help),
            ));
        }
        Ok(FunctorDecl {
            name,
            params,
            ret,
            span: Span::new(start, self.prev_end()),
        })
    }

    /// `Name` or `Name<A, B>`.
    fn comp_ref(&mut self, what: &str, help: &str) -> PResult<CompRef> {
        let name = self.ident(what)?;
        let args = self.type_params(help)?;
        let span = name.span.to(Span::new(self.prev_end(), self.prev_end()));
        Ok(CompRef { name, args, span })
    }

    /// An optional `<A, B.c, ...>` list of type names.
    fn type_params(&mut self, help: &str) -> PResult<Vec<Ident>> {
        let mut params: Vec<Ident> = Vec::new();
        if !self.eat(&Tok::Lt) {
            return Ok(params);
        }
        loop {
            params.push(self.qualified("a type name")?);
            if !self.eat(&Tok::Comma) {
                break;
            }
        }
        self.expect(&Tok::Gt, "`>` or `,` after the type name", help)?;
        Ok(params)
    }
}
