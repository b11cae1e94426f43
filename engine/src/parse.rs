//! The parser: one source file → [`Program`] with byte spans, or every diagnostic found.
//!
//! It reads a Soufflé-compatible subset plus two Tollgate extensions: the `glob(pattern, s)` test
//! (unless the program declares a relation named `glob`) and `// @id NAME` comments that give the
//! next rule a stable id. A hand-written recursive-descent parser over the tokens of [`lex`];
//! after an error it resumes at the next `.` or directive so one run reports many mistakes.

#[path = "lex.rs"]
mod lex;

use crate::ast::{
    AggKind, ArithOp, Atom, Attr, Clause, CmpOp, Directive, DirectiveKind, Expr, Functor, Ident,
    Literal, Program, RelDecl, Span, TestFn, TypeDecl,
};
use crate::diag::{Diagnostic, Source};
use lex::{IdMark, Tok, Token};

/// Boxed: a `Diagnostic` is large and errors are rare.
type PResult<T> = Result<T, Box<Diagnostic>>;

fn err<T>(d: Diagnostic) -> PResult<T> {
    Err(Box::new(d))
}

const DIRECTIVES: &str = "decl type input output printsize number_type symbol_type";
/// Soufflé directives outside the subset: named as unsupported rather than unknown.
const UNSUPPORTED_DIRECTIVES: &str =
    "functor comp init pragma plan limitsize override lattice once";
/// Soufflé's storage and optimisation hints; they do not change results.
const IGNORED_QUALIFIERS: &str = "btree brie inline no_inline magic no_magic";
/// Soufflé functors outside the subset.
const UNSUPPORTED_FUNCTORS: &str = "ord to_float to_unsigned itou itof utoi utof ftoi ftou range as autoinc lor land bnot band bor bxor";

fn listed(list: &str, name: &str) -> bool {
    list.split(' ').any(|item| item == name)
}

const FUNCTOR_HELP: &str =
    "the functors are `cat`, `strlen`, `substr`, `to_number` and `to_string`";
const ID_HELP: &str = "put `// @id NAME` on the line directly before a rule";
const DOT_HELP: &str = "end every fact and rule with `.`";

/// Parses one source file. On error returns every diagnostic found, in source order: the parser
/// resumes at the next `.` or directive after each error.
pub fn parse_program(source: &Source) -> Result<Program, Vec<Diagnostic>> {
    let lexed = lex::lex(&source.text);
    let mut errors = lexed.errors;
    let mut parser = Parser::new(&source.text, lexed.tokens);
    let program = parser.program(&lexed.id_marks, &mut errors);
    if errors.is_empty() {
        Ok(program)
    } else {
        errors.sort_by_key(|d| d.span.start);
        Err(errors)
    }
}

/// Parses a single ground fact such as `r("a", 3)` or `r("a", 3).` (for `rules explain --fact`).
/// Arguments must be literals: strings, integers (also negative, hex and binary), unsigned `3u`
/// and floats. Errors carry spans into `source`.
#[expect(
    clippy::result_large_err,
    reason = "the signature is the crate's API; one diagnostic per call is cheap"
)]
pub fn parse_fact(source: &Source) -> Result<Atom, Diagnostic> {
    let lexed = lex::lex(&source.text);
    if let Some(first) = lexed.errors.into_iter().next() {
        return Err(first);
    }
    Parser::new(&source.text, lexed.tokens)
        .fact()
        .map_err(|d| *d)
}

struct Parser<'s> {
    text: &'s str,
    toks: Vec<Token>,
    pos: usize,
    /// A `.decl glob(...)` turns `glob(...)` in bodies into an atom instead of the glob test.
    glob_is_relation: bool,
    /// Set by an error after which parsing should resume right where it stopped.
    resume_here: bool,
}

impl<'s> Parser<'s> {
    /// `toks` comes from the lexer, so it ends with [`Tok::Eof`].
    fn new(text: &'s str, toks: Vec<Token>) -> Self {
        let glob_is_relation = toks.windows(2).any(|w| {
            w[0].tok == Tok::Directive("decl".into()) && w[1].tok == Tok::Ident("glob".into())
        });
        Parser {
            text,
            toks,
            pos: 0,
            glob_is_relation,
            resume_here: false,
        }
    }

    // ----- program structure -----

    fn program(&mut self, marks: &[IdMark], errors: &mut Vec<Diagnostic>) -> Program {
        let mut prog = Program::default();
        let mut next_mark = 0;
        let mut after_error = false;
        loop {
            let item_start = self.pos;
            let mut pending = Vec::new();
            while let Some(m) = marks
                .get(next_mark)
                .filter(|m| m.before_token <= item_start)
            {
                if m.before_token == item_start {
                    pending.push(m);
                } else if !after_error {
                    // Inside the previous item (unless error recovery skipped over it).
                    errors.push(misplaced_id(m));
                }
                next_mark += 1;
            }
            let id = match self.peek() {
                Tok::Ident(_) => pending.pop().map(|m| m.name.clone()),
                _ => None,
            };
            errors.extend(pending.into_iter().map(misplaced_id));
            let result = match self.peek() {
                Tok::Eof => break,
                Tok::Directive(name) => {
                    let name = name.clone();
                    self.directive(&name, &mut prog)
                }
                Tok::Ident(_) => self.clause(id).map(|c| prog.clauses.push(c)),
                _ => Err(self.expected(
                    "a directive, a fact or a rule",
                    "start each item with a directive such as `.decl`, or with a relation name",
                )),
            };
            after_error = result.is_err();
            if let Err(d) = result {
                let in_directive = matches!(self.tok_at(item_start).tok, Tok::Directive(_));
                errors.push(*d);
                self.recover(item_start, in_directive);
            }
        }
        prog
    }

    /// Skips to where the next item probably starts: past the next `.`, or to the next
    /// directive; after a broken directive also to a line starting with `name(`.
    fn recover(&mut self, item_start: usize, in_directive: bool) {
        if std::mem::take(&mut self.resume_here) && self.pos > item_start {
            return;
        }
        if self.pos == item_start {
            self.bump();
        }
        loop {
            let t = self.cur();
            match t.tok {
                Tok::Eof | Tok::Directive(_) => return,
                Tok::Dot => {
                    self.bump();
                    return;
                }
                _ if in_directive && t.line_break_before && self.is_atom_start() => return,
                _ => {
                    self.bump();
                }
            }
        }
    }

    fn clause(&mut self, id: Option<Ident>) -> PResult<Clause> {
        let start = self.cur().start;
        let mut heads = vec![self.head()?];
        while self.eat(&Tok::Comma) {
            heads.push(self.head()?);
        }
        let is_rule = self.eat(&Tok::If);
        let body = if is_rule {
            self.disjunction()?
        } else {
            Vec::new()
        };
        if *self.peek() != Tok::Dot {
            return Err(self.missing_dot(is_rule));
        }
        let end = self.bump().end;
        Ok(Clause {
            id,
            heads,
            body,
            span: Span::new(start, end),
        })
    }

    fn head(&mut self) -> PResult<Atom> {
        if !self.is_atom_start() {
            let help = "a head is a relation applied to arguments, such as `path(x, y)`";
            return Err(self.expected("a relation name followed by `(`", help));
        }
        self.atom()
    }

    fn missing_dot(&mut self, is_rule: bool) -> Box<Diagnostic> {
        let t = self.cur();
        let starts_next_item = matches!(t.tok, Tok::Eof | Tok::Directive(_)) || t.line_break_before;
        if !starts_next_item {
            let what = if is_rule {
                "`,`, `;` or `.` after the body literal"
            } else {
                "`:-`, `,` or `.` after the head"
            };
            return self.expected(what, DOT_HELP);
        }
        self.resume_here = true;
        let end = self.prev_end();
        let kind = if is_rule { "rule" } else { "fact" };
        Diagnostic::error(
            "E-parse",
            format!("missing `.` at the end of the {kind}"),
            Span::new(end, end),
        )
        .with_label("expected `.` here")
        .with_help(DOT_HELP)
        .into()
    }

    // ----- bodies -----

    /// `conj (';' conj)*`
    fn disjunction(&mut self) -> PResult<Vec<Vec<Literal>>> {
        let mut alternatives = vec![self.conjunction()?];
        while self.eat(&Tok::Semi) {
            alternatives.push(self.conjunction()?);
        }
        Ok(alternatives)
    }

    /// `literal (',' literal)*`
    fn conjunction(&mut self) -> PResult<Vec<Literal>> {
        let mut literals = vec![self.literal()?];
        while self.eat(&Tok::Comma) {
            literals.push(self.literal()?);
        }
        Ok(literals)
    }

    fn test_fn(&self, name: &str) -> Option<TestFn> {
        match name {
            "match" => Some(TestFn::Match),
            "contains" => Some(TestFn::Contains),
            "glob" if !self.glob_is_relation => Some(TestFn::Glob),
            _ => None,
        }
    }

    fn literal(&mut self) -> PResult<Literal> {
        match self.peek() {
            Tok::Bang => {
                let bang = self.bump().span();
                match self.peek() {
                    Tok::Ident(name) if *self.peek2() == Tok::LParen => {
                        if let Some(func) = self.test_fn(name) {
                            return self.test(func, Some(bang));
                        }
                        let atom = self.atom()?;
                        let span = bang.to(atom.span);
                        Ok(Literal::Negated(atom, span))
                    }
                    _ => Err(self.expected(
                        "a relation name after `!`",
                        "negate an atom, as in `!edge(x, y)`",
                    )),
                }
            }
            Tok::LParen => self.bracketed_or_comparison(),
            Tok::Ident(name) if *self.peek2() == Tok::LParen => {
                if let Some(func) = self.test_fn(name) {
                    self.test(func, None)
                } else if functor(name).is_some() || agg_kind(name).is_some() {
                    self.comparison()
                } else {
                    self.atom().map(Literal::Atom)
                }
            }
            _ => self.comparison(),
        }
    }

    /// `( body )` is a bracketed disjunction, but `(x + 1) < y` is a comparison: try the first,
    /// and if it fails the second, reporting the error that got further.
    fn bracketed_or_comparison(&mut self) -> PResult<Literal> {
        let start = self.pos;
        let open = self.bump().span();
        let bracketed = self.disjunction().and_then(|alts| {
            let help = "close the bracketed disjunction with `)`";
            let close = self.expect(&Tok::RParen, "`)`, `,` or `;` in the bracketed body", help)?;
            Ok(Literal::Disjunction(alts, open.to(close.span())))
        });
        let Err(first) = bracketed else {
            return bracketed;
        };
        self.pos = start;
        self.comparison().map_err(|second| {
            if second.span.start > first.span.start {
                second
            } else {
                first
            }
        })
    }

    fn test(&mut self, func: TestFn, bang: Option<Span>) -> PResult<Literal> {
        let name = self.bump().span();
        let (args, end) = self.arg_list("test's", Parser::expr)?;
        let span = bang.unwrap_or(name).to(Span::new(end, end));
        if args.len() != 2 {
            let msg = format!(
                "`{}` takes 2 arguments, found {}",
                func.as_str(),
                args.len()
            );
            let help = format!("write `{}(pattern, text)`", func.as_str());
            return err(Diagnostic::error("E-parse", msg, span).with_help(help));
        }
        Ok(Literal::Test {
            func,
            args,
            negated: bang.is_some(),
            span,
        })
    }

    fn comparison(&mut self) -> PResult<Literal> {
        let start = self.cur().start;
        let lhs = self.expr()?;
        let op = match self.peek() {
            Tok::Eq => CmpOp::Eq,
            Tok::Ne => CmpOp::Ne,
            Tok::Lt => CmpOp::Lt,
            Tok::Le => CmpOp::Le,
            Tok::Gt => CmpOp::Gt,
            Tok::Ge => CmpOp::Ge,
            _ => return Err(self.not_a_comparison(&lhs)),
        };
        self.bump();
        let rhs = self.expr()?;
        let span = Span::new(start, self.prev_end());
        Ok(Literal::Compare { op, lhs, rhs, span })
    }

    fn not_a_comparison(&self, lhs: &Expr) -> Box<Diagnostic> {
        let ends_literal = matches!(
            self.peek(),
            Tok::Comma | Tok::Dot | Tok::Semi | Tok::RParen | Tok::RBrace
        );
        match lhs {
            Expr::Var(v) if ends_literal => {
                let msg = format!("expected a literal, found `{}`", v.name);
                let help = format!(
                    "a variable alone is not a condition; write a relation with no columns as `{}()`",
                    v.name
                );
                Box::new(Diagnostic::error("E-parse", msg, v.span).with_help(help))
            }
            _ => self.expected(
                "a comparison operator",
                "compare with `=`, `!=`, `<`, `<=`, `>` or `>=`",
            ),
        }
    }

    fn atom(&mut self) -> PResult<Atom> {
        let relation = self.ident("a relation name")?;
        let (args, end) = self.arg_list("atom's", Parser::expr)?;
        let span = relation.span.to(Span::new(end, end));
        Ok(Atom {
            relation,
            args,
            span,
        })
    }

    /// `( item, ... )` — the current token must be `(`. Returns the items and the end of `)`.
    fn arg_list(
        &mut self,
        owner: &str,
        mut item: impl FnMut(&mut Self) -> PResult<Expr>,
    ) -> PResult<(Vec<Expr>, usize)> {
        self.expect(
            &Tok::LParen,
            "`(`",
            "write the arguments in parentheses, as in `r(x, y)`",
        )?;
        let mut args = Vec::new();
        if *self.peek() != Tok::RParen {
            loop {
                args.push(item(self)?);
                if !self.eat(&Tok::Comma) {
                    break;
                }
            }
        }
        let help =
            format!("close the {owner} argument list with `)`, separating arguments with `,`");
        let close = self.expect(&Tok::RParen, "`)` or `,` after argument", &help)?;
        Ok((args, close.end))
    }

    // ----- expressions -----

    fn expr(&mut self) -> PResult<Expr> {
        let start = self.cur().start;
        let mut lhs = self.term()?;
        loop {
            let op = match self.peek() {
                Tok::Plus => ArithOp::Add,
                Tok::Minus => ArithOp::Sub,
                _ => return Ok(lhs),
            };
            self.bump();
            let rhs = self.term()?;
            lhs = self.binary(op, lhs, rhs, start);
        }
    }

    fn term(&mut self) -> PResult<Expr> {
        let start = self.cur().start;
        let mut lhs = self.unary()?;
        loop {
            let op = match self.peek() {
                Tok::Star => ArithOp::Mul,
                Tok::Slash => ArithOp::Div,
                Tok::Percent => ArithOp::Mod,
                _ => return Ok(lhs),
            };
            self.bump();
            let rhs = self.unary()?;
            lhs = self.binary(op, lhs, rhs, start);
        }
    }

    fn binary(&self, op: ArithOp, lhs: Expr, rhs: Expr, start: usize) -> Expr {
        let span = Span::new(start, self.prev_end());
        Expr::Binary {
            op,
            lhs: Box::new(lhs),
            rhs: Box::new(rhs),
            span,
        }
    }

    fn unary(&mut self) -> PResult<Expr> {
        if *self.peek() != Tok::Minus {
            return self.primary();
        }
        let minus = self.bump();
        if matches!(self.peek(), Tok::Int(_) | Tok::Float(_)) {
            return self.number(Some(minus.start));
        }
        let operand = self.unary()?;
        let span = Span::new(minus.start, self.prev_end());
        Ok(Expr::Neg(Box::new(operand), span))
    }

    fn primary(&mut self) -> PResult<Expr> {
        let t = self.cur();
        let span = t.span();
        match &t.tok {
            Tok::Int(_) | Tok::Unsigned(_) | Tok::Float(_) => self.number(None),
            Tok::Str(s) => {
                let e = Expr::String(s.clone(), span);
                self.bump();
                Ok(e)
            }
            Tok::Underscore => {
                self.bump();
                Ok(Expr::Wildcard(span))
            }
            Tok::LParen => {
                self.bump();
                let inner = self.expr()?;
                let help = "close the parenthesized expression with `)`";
                self.expect(&Tok::RParen, "`)`", help)?;
                Ok(inner)
            }
            Tok::Ident(name) => {
                if let Some(kind) = agg_kind(name) {
                    return self.aggregate(kind);
                }
                let name = name.clone();
                if *self.peek2() == Tok::LParen {
                    return self.call(&name);
                }
                self.bump();
                Ok(Expr::Var(Ident { name, span }))
            }
            Tok::LBracket => {
                let msg = "record terms `[...]` are not supported";
                err(Diagnostic::error("E-unsupported", msg, span)
                    .with_help("use separate columns instead of a record"))
            }
            _ => Err(self.expected(
                "an expression",
                "write a variable, `_`, a number, a string, a functor call or an aggregate",
            )),
        }
    }

    fn call(&mut self, name: &str) -> PResult<Expr> {
        let start = self.cur().start;
        let name_span = self.cur().span();
        let Some(func) = functor(name) else {
            let known_test = matches!(name, "match" | "contains" | "glob");
            let (code, msg, help) = if known_test && !(name == "glob" && self.glob_is_relation) {
                let msg = format!("`{name}` is a test, not a value");
                let help =
                    format!("use it as a body literal on its own, as in `{name}(\"a*\", x)`");
                ("E-parse", msg, help)
            } else if listed(UNSUPPORTED_FUNCTORS, name) {
                (
                    "E-unsupported",
                    format!("functor `{name}` is not supported"),
                    FUNCTOR_HELP.into(),
                )
            } else {
                let msg = format!("`{name}` is not a functor: relations cannot be used as terms");
                let help = format!(
                    "add `{name}(..., v)` as a separate body literal and use the variable `v`; {FUNCTOR_HELP}"
                );
                ("E-parse", msg, help)
            };
            return err(Diagnostic::error(code, msg, name_span).with_help(help));
        };
        self.bump();
        let (args, end) = self.arg_list("functor's", Parser::expr)?;
        let span = Span::new(start, end);
        let (min, max, usage) = match func {
            Functor::Cat => (2, usize::MAX, "cat(a, b, ...)"),
            Functor::Strlen => (1, 1, "strlen(s)"),
            Functor::Substr => (3, 3, "substr(s, start, length)"),
            Functor::ToNumber => (1, 1, "to_number(s)"),
            Functor::ToString => (1, 1, "to_string(n)"),
        };
        if args.len() < min || args.len() > max {
            let takes = if max == usize::MAX {
                format!("at least {min}")
            } else {
                min.to_string()
            };
            let plural = if min == 1 && max == 1 {
                "argument"
            } else {
                "arguments"
            };
            let msg = format!("`{name}` takes {takes} {plural}, found {}", args.len());
            return err(
                Diagnostic::error("E-parse", msg, span).with_help(format!("write `{usage}`"))
            );
        }
        Ok(Expr::Call { func, args, span })
    }

    /// `count : { body }`, `sum e : { body }`, or with a single atom instead of braces.
    fn aggregate(&mut self, kind: AggKind) -> PResult<Expr> {
        let start = self.bump().start;
        let kw = kind.as_str();
        let target = match kind {
            AggKind::Count => None,
            _ => Some(Box::new(self.expr()?)),
        };
        let usage = if target.is_some() {
            format!("{kw} x : {{ r(x) }}")
        } else {
            "count : { r(x) }".into()
        };
        let what = if target.is_some() {
            format!("`:` after `{kw}` and its expression")
        } else {
            "`:` after `count`".into()
        };
        self.expect(
            &Tok::Colon,
            &what,
            &format!("write an aggregate as `{usage}`"),
        )?;
        let body = match self.peek() {
            Tok::LBrace => {
                let open = self.bump().span();
                let mut alternatives = self.disjunction()?;
                let close = self.expect(
                    &Tok::RBrace,
                    "`}` to close the aggregate body",
                    "close the body with `}`",
                )?;
                match alternatives.len() {
                    1 => alternatives.pop().unwrap_or_default(),
                    _ => vec![Literal::Disjunction(alternatives, open.to(close.span()))],
                }
            }
            _ if self.is_atom_start() => vec![Literal::Atom(self.atom()?)],
            _ => {
                let help = format!("write the body in braces, as in `{usage}`");
                return Err(self.expected("`{` or an atom after the aggregate's `:`", &help));
            }
        };
        let span = Span::new(start, self.prev_end());
        Ok(Expr::Aggregate {
            kind,
            target,
            body,
            span,
        })
    }

    /// A whole source that is one ground fact, with an optional final `.`.
    fn fact(&mut self) -> PResult<Atom> {
        if !self.is_atom_start() {
            let help = "write the relation name, then its values in parentheses";
            return Err(self.expected("a fact such as `r(\"a\", 3)`", help));
        }
        let relation = self.ident("a relation name")?;
        let (args, end) = self.arg_list("fact's", Parser::fact_value)?;
        self.eat(&Tok::Dot);
        if *self.peek() != Tok::Eof {
            let help = "give exactly one fact, such as `r(\"a\", 3)`";
            return Err(self.expected("the end of the fact", help));
        }
        let span = relation.span.to(Span::new(end, end));
        Ok(Atom {
            relation,
            args,
            span,
        })
    }

    // ----- directives -----

    fn directive(&mut self, name: &str, prog: &mut Program) -> PResult<()> {
        let kw = self.bump();
        match name {
            "decl" => prog.decls.push(self.decl(kw.start)?),
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
            _ if listed(UNSUPPORTED_DIRECTIVES, name) => {
                let msg = format!("directive `.{name}` is not supported");
                let help = "Tollgate reads `.decl`, `.type`, `.input`, `.output` and `.printsize`";
                return err(Diagnostic::error("E-unsupported", msg, kw.span()).with_help(help));
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
                return err(Diagnostic::error("E-parse", msg, kw.span()).with_help(help));
            }
        }
        Ok(())
    }

    fn decl(&mut self, start: usize) -> PResult<RelDecl> {
        let name = self.ident("a relation name after `.decl`")?;
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
                let ty = self.ident("a type name")?;
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
        while let Tok::Ident(q) = self.peek() {
            if *self.peek2() == Tok::LParen {
                break;
            }
            let span = self.cur().span();
            if q == "eqrel" {
                let msg = "`eqrel` relations are not supported";
                let help = "declare a plain relation and write the reflexive, symmetric and transitive rules";
                return err(Diagnostic::error("E-unsupported", msg, span).with_help(help));
            }
            if !listed(IGNORED_QUALIFIERS, q) {
                let msg = format!("unknown relation qualifier `{q}`");
                let help = "the qualifiers `btree`, `brie`, `inline`, `no_inline`, `magic` and `no_magic` are accepted and ignored";
                return err(Diagnostic::error("E-parse", msg, span).with_help(help));
            }
            self.bump();
        }
        Ok(RelDecl {
            name,
            attrs,
            span: Span::new(start, self.prev_end()),
        })
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
                if *self.peek() == Tok::LBracket {
                    let msg = "record types are not supported";
                    let help = "use separate attributes instead of a record";
                    return err(
                        Diagnostic::error("E-unsupported", msg, self.cur().span()).with_help(help)
                    );
                }
                bases.push(self.ident("a type name after `=`")?);
                while self.eat(&Tok::Pipe) {
                    bases.push(self.ident("a type name after `|`")?);
                }
            }
            _ => {
                let help = "write `.type T <: symbol`, `.type T = number` or `.type T = A | B`";
                return Err(self.expected(&format!("`<:` or `=` after type `{}`", name.name), help));
            }
        }
        Ok(TypeDecl {
            name,
            bases,
            span: Span::new(start, self.prev_end()),
        })
    }

    /// `.input a, b(key=value, ...)`: the parameters apply to every relation named.
    fn io(&mut self, kind: DirectiveKind, start: usize) -> PResult<Directive> {
        let mut relations = vec![self.ident("a relation name")?];
        while self.eat(&Tok::Comma) {
            relations.push(self.ident("a relation name after `,`")?);
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

fn misplaced_id(m: &IdMark) -> Diagnostic {
    let msg = format!("rule id `{}` is not followed by a rule", m.name.name);
    Diagnostic::error("E-parse", msg, m.comment)
        .with_label("this comment names no rule")
        .with_help(ID_HELP)
}

fn functor(name: &str) -> Option<Functor> {
    match name {
        "cat" => Some(Functor::Cat),
        "strlen" => Some(Functor::Strlen),
        "substr" => Some(Functor::Substr),
        "to_number" => Some(Functor::ToNumber),
        "to_string" => Some(Functor::ToString),
        _ => None,
    }
}

fn agg_kind(name: &str) -> Option<AggKind> {
    match name {
        "count" => Some(AggKind::Count),
        "sum" => Some(AggKind::Sum),
        "min" => Some(AggKind::Min),
        "max" => Some(AggKind::Max),
        _ => None,
    }
}

/// Levenshtein distance, for "did you mean" hints.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diag = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let next = (diag + usize::from(ca != cb))
                .min(row[j] + 1)
                .min(row[j + 1] + 1);
            diag = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn src(text: &str) -> Source {
        Source::new("t.dl", text)
    }

    fn parse(text: &str) -> Program {
        let source = src(text);
        parse_program(&source).unwrap_or_else(|errors| {
            panic!(
                "{}",
                errors.iter().map(|d| d.render(&source)).collect::<String>()
            )
        })
    }

    fn errors(text: &str) -> Vec<Diagnostic> {
        match parse_program(&src(text)) {
            Ok(p) => panic!("accepted {p:?}"),
            Err(errors) => errors,
        }
    }

    fn slice(text: &str, span: Span) -> &str {
        &text[span.start as usize..span.end as usize]
    }

    /// Source, code, message, start and end (line, column) of the span, help.
    type ErrorCase<'a> = (
        &'a str,
        &'a str,
        &'a str,
        (usize, usize),
        (usize, usize),
        &'a str,
    );

    fn check(d: &Diagnostic, (text, code, message, start, end, help): ErrorCase<'_>) {
        let source = src(text);
        let shown = d.render(&source);
        assert_eq!((d.code, d.message.as_str()), (code, message), "{shown}");
        let at = (source.line_col(d.span.start), source.line_col(d.span.end));
        assert_eq!(at, (start, end), "{shown}");
        assert_eq!(d.help.as_deref(), Some(help), "{shown}");
    }

    fn fact_error(text: &str) -> Diagnostic {
        match parse_fact(&src(text)) {
            Ok(a) => panic!("accepted {a:?}"),
            Err(d) => d,
        }
    }

    fn join<T>(items: &[T], sep: &str, f: impl Fn(&T) -> String) -> String {
        items.iter().map(f).collect::<Vec<_>>().join(sep)
    }

    /// An S-expression dump of an expression: `(+ 1 (* 2 3))`.
    fn dump_expr(e: &Expr) -> String {
        match e {
            Expr::Var(v) => v.name.clone(),
            Expr::Wildcard(_) => "_".into(),
            Expr::Number(n, _) => n.to_string(),
            Expr::Unsigned(u, _) => format!("{u}u"),
            Expr::Float(f, _) => format!("{f:?}f"),
            Expr::String(s, _) => format!("{s:?}"),
            Expr::Neg(e, _) => format!("(neg {})", dump_expr(e)),
            Expr::Binary { op, lhs, rhs, .. } => {
                format!("({} {} {})", op.as_str(), dump_expr(lhs), dump_expr(rhs))
            }
            Expr::Call { func, args, .. } => {
                format!("({} {})", func.as_str(), join(args, " ", dump_expr))
            }
            Expr::Aggregate {
                kind, target, body, ..
            } => {
                let target = target.as_ref().map(|t| format!("{} ", dump_expr(t)));
                let body = join(body, ", ", dump_literal);
                format!(
                    "({} {}{{{body}}})",
                    kind.as_str(),
                    target.unwrap_or_default()
                )
            }
        }
    }

    fn dump_atom(a: &Atom) -> String {
        format!("{}({})", a.relation, join(&a.args, ", ", dump_expr))
    }

    /// Atoms as written, tests as `?name(..)`, disjunctions as `[a | b]`.
    fn dump_literal(l: &Literal) -> String {
        match l {
            Literal::Atom(a) => dump_atom(a),
            Literal::Negated(a, _) => format!("!{}", dump_atom(a)),
            Literal::Compare { op, lhs, rhs, .. } => {
                format!("({} {} {})", op.as_str(), dump_expr(lhs), dump_expr(rhs))
            }
            Literal::Test {
                func,
                args,
                negated,
                ..
            } => {
                let bang = if *negated { "!" } else { "" };
                format!("{bang}?{}({})", func.as_str(), join(args, ", ", dump_expr))
            }
            Literal::Disjunction(alts, _) => format!("[{}]", dump_body(alts)),
        }
    }

    fn dump_body(alts: &[Vec<Literal>]) -> String {
        join(alts, " | ", |c| join(c, ", ", dump_literal))
    }

    /// The body of the only clause of `text`.
    fn body(text: &str) -> String {
        dump_body(&parse(text).clauses[0].body)
    }

    /// `text` parsed as the right-hand side of a comparison.
    fn expr(text: &str) -> String {
        match &parse(&format!("r(x) :- x = {text}.")).clauses[0].body[0][0] {
            Literal::Compare { rhs, .. } => dump_expr(rhs),
            other => panic!("not a comparison: {other:?}"),
        }
    }

    #[test]
    fn declarations_types_and_qualifiers() {
        let text = ".decl edge(x: number, y: symbol) btree\n.decl flag()\n\
                    .decl p(a: T) brie inline no_inline magic no_magic\n\
                    .type T <: symbol\n.type N = number\n.type U = A | B\n\
                    .number_type Old\n.symbol_type S\n";
        let p = parse(text);
        let decls = join(&p.decls, " ", |d| {
            format!(
                "{}({})",
                d.name,
                join(&d.attrs, ",", |a| format!("{}:{}", a.name, a.ty))
            )
        });
        assert_eq!(decls, "edge(x:number,y:symbol) flag() p(a:T)");
        assert_eq!(
            slice(text, p.decls[0].span),
            ".decl edge(x: number, y: symbol) btree"
        );
        assert_eq!(slice(text, p.decls[0].attrs[1].ty.span), "symbol");
        let types = join(&p.types, " ", |t| {
            format!("{}={}", t.name, join(&t.bases, "|", |b| b.name.clone()))
        });
        assert_eq!(types, "T=symbol N=number U=A|B Old=number S=symbol");
        assert_eq!(slice(text, p.types[2].span), ".type U = A | B");
        assert!(p.clauses.is_empty() && p.directives.is_empty());
    }

    #[test]
    fn io_directives_with_parameters() {
        let text = ".input a, b\n.output r()\n\
                    .output r(IO=file, filename=\"x.csv\", delimiter=\",\")\n.printsize r\n";
        let p = parse(text);
        let dump = join(&p.directives, " ", |d| {
            let params = join(&d.params, ",", |(k, v)| format!("{k}={v}"));
            let names = join(&d.relations, ",", |r| r.name.clone());
            format!("{:?}:{names}({params})", d.kind)
        });
        assert_eq!(
            dump,
            "Input:a,b() Output:r() Output:r(IO=file,filename=x.csv,delimiter=,) PrintSize:r()"
        );
        assert_eq!(slice(text, p.directives[0].span), ".input a, b");
        assert_eq!(slice(text, p.directives[1].span), ".output r()");
        assert!(slice(text, p.directives[2].span).ends_with("delimiter=\",\")"));
    }

    #[test]
    fn facts_rules_several_heads_and_alternatives() {
        let text = "edge(1, 2).\npath(x, y) :- edge(x, y).\n\
                    a(x), b(x) :- c(x); d(x), !e(x).\nflag().";
        let p = parse(text);
        let heads = join(&p.clauses, " ", |c| join(&c.heads, "+", dump_atom));
        assert_eq!(heads, "edge(1, 2) path(x, y) a(x)+b(x) flag()");
        assert!(p.clauses[0].body.is_empty() && p.clauses[3].body.is_empty());
        assert_eq!(dump_body(&p.clauses[2].body), "c(x) | d(x), !e(x)");
        assert_eq!(slice(text, p.clauses[1].span), "path(x, y) :- edge(x, y).");
        assert_eq!(slice(text, p.clauses[2].heads[1].span), "b(x)");
        assert_eq!(slice(text, p.clauses[2].body[1][1].span()), "!e(x)");
        // A clause may end glued to the next one.
        assert_eq!(parse("a(1).a(2).").clauses.len(), 2);
    }

    #[test]
    fn bracketed_disjunction_and_parenthesized_comparison() {
        let text = "r(x) :- a(x), (b(x) ; c(x), d(x)), (e(x)), (x + 1) * 2 < 7.";
        assert_eq!(
            body(text),
            "a(x), [b(x) | c(x), d(x)], [e(x)], (< (* (+ x 1) 2) 7)"
        );
        let p = parse(text);
        assert_eq!(
            slice(text, p.clauses[0].body[0][1].span()),
            "(b(x) ; c(x), d(x))"
        );
        assert_eq!(
            slice(text, p.clauses[0].body[0][3].span()),
            "(x + 1) * 2 < 7"
        );
    }

    #[test]
    fn atoms_comparisons_and_tests() {
        let text = "r(x) :- a(x, \"s\", _, 3, y+1, cat(a, b)), x = 1, x != 2, x < 3, x <= 4, \
                    x > 5, x >= 6.";
        let want = "a(x, \"s\", _, 3, (+ y 1), (cat a b)), (= x 1), (!= x 2), (< x 3), \
                    (<= x 4), (> x 5), (>= x 6)";
        assert_eq!(body(text), want);
        let text = "r(x) :- match(\"a.*\", x), !contains(\"b\", x), glob(\"*.rs\", x), \
                    !glob(\"x\", x), strlen(x) > 2.";
        let want = "?match(\"a.*\", x), !?contains(\"b\", x), ?glob(\"*.rs\", x), \
                    !?glob(\"x\", x), (> (strlen x) 2)";
        assert_eq!(body(text), want);
        let p = parse(text);
        assert_eq!(
            slice(text, p.clauses[0].body[0][1].span()),
            "!contains(\"b\", x)"
        );
        assert_eq!(slice(text, p.clauses[0].body[0][4].span()), "strlen(x) > 2");
    }

    #[test]
    fn glob_is_an_atom_when_a_relation_is_declared_glob() {
        let text = "r(x) :- glob(\"*\", x), !glob(x, \"y\").\n.decl glob(p: symbol, s: symbol)\n";
        assert_eq!(body(text), "glob(\"*\", x), !glob(x, \"y\")");
    }

    #[test]
    fn precedence_and_associativity() {
        let cases = [
            ("1 + 2 * 3", "(+ 1 (* 2 3))"),
            ("1 * 2 + 3", "(+ (* 1 2) 3)"),
            ("1 - 2 - 3", "(- (- 1 2) 3)"),
            ("8 / 4 % 3 * 2", "(* (% (/ 8 4) 3) 2)"),
            ("(1 + 2) * 3", "(* (+ 1 2) 3)"),
            ("-x * y", "(* (neg x) y)"),
            ("1 - -5", "(- 1 -5)"),
            ("-(5)", "(neg 5)"),
            ("- - x", "(neg (neg x))"),
        ];
        for (text, want) in cases {
            assert_eq!(expr(text), want, "{text}");
        }
    }

    #[test]
    fn number_string_and_functor_literals() {
        let cases = [
            ("-5", "-5"),
            ("-2147483648", "-2147483648"),
            ("-9223372036854775808", "-9223372036854775808"),
            ("9223372036854775807", "9223372036854775807"),
            ("0x1F + 0b101", "(+ 31 5)"),
            ("7u + 18446744073709551615u", "(+ 7u 18446744073709551615u)"),
            ("1.5 + 2.0e3 + -0.5", "(+ (+ 1.5f 2000.0f) -0.5f)"),
            (r#""a\"b\\c\n\t\r\x""#, r#""a\"b\\c\n\t\r\\x""#),
            (
                "cat(a, \"-\", to_string(n), substr(s, 0, strlen(s)), to_number(\"4\"))",
                "(cat a \"-\" (to_string n) (substr s 0 (strlen s)) (to_number \"4\"))",
            ),
        ];
        for (text, want) in cases {
            assert_eq!(expr(text), want, "{text}");
        }
        let text = "r(x) :- x = -5 + 1.";
        let Literal::Compare { rhs, .. } = &parse(text).clauses[0].body[0][0] else {
            panic!()
        };
        assert_eq!(slice(text, rhs.span()), "-5 + 1");
        let Expr::Binary { lhs, .. } = rhs else {
            panic!("{rhs:?}")
        };
        assert_eq!(slice(text, lhs.span()), "-5");
    }

    #[test]
    fn aggregates_with_and_without_braces() {
        let cases = [
            ("count : { a(x), b(x) }", "(count {a(x), b(x)})"),
            ("sum y : { a(_, y) }", "(sum y {a(_, y)})"),
            ("min y : a(_, y)", "(min y {a(_, y)})"),
            ("count : a(_, _)", "(count {a(_, _)})"),
            (
                "max y + 1 : { a(y) ; b(y), y > 0 }",
                "(max (+ y 1) {[a(y) | b(y), (> y 0)]})",
            ),
        ];
        for (text, want) in cases {
            assert_eq!(expr(text), want, "{text}");
        }
        let text = "total(sum y : { a(y) }) :- b().";
        let p = parse(text);
        assert_eq!(dump_atom(&p.clauses[0].heads[0]), "total((sum y {a(y)}))");
        assert_eq!(
            slice(text, p.clauses[0].heads[0].args[0].span()),
            "sum y : { a(y) }"
        );
    }

    #[test]
    fn rule_ids_attach_to_the_next_clause() {
        let text = "// @id tc.base\npath(x, y) :- edge(x, y).\n//@id tc/step-2:x\n// other\n\
                    /* block */\npath(x, z) :- path(x, y), edge(y, z).\nedge(1, 2).\n\
                    // @identity is a comment\nedge(2, 3).";
        let p = parse(text);
        let ids = join(&p.clauses, " ", |c| {
            c.id.as_ref().map_or("-".into(), |i| i.name.clone())
        });
        assert_eq!(ids, "tc.base tc/step-2:x - -");
        assert_eq!(
            p.clauses[1].id.as_ref().map(|i| slice(text, i.span)),
            Some("tc/step-2:x")
        );
    }

    #[rustfmt::skip]
    const ERROR_CASES: &[ErrorCase<'static>] = &[
        ("// @id x\n.decl a(n: number)\n", "E-parse", "rule id `x` is not followed by a rule",
         (1, 1), (1, 9), ID_HELP),
        ("a(1).\n  // @id x\n", "E-parse", "rule id `x` is not followed by a rule",
         (2, 3), (2, 11), ID_HELP),
        ("a(x) :-\n// @id x\n b(x).", "E-parse", "rule id `x` is not followed by a rule",
         (2, 1), (2, 9), ID_HELP),
        ("// @id x\n// @id y\na(1).", "E-parse", "rule id `x` is not followed by a rule",
         (1, 1), (1, 9), ID_HELP),
        ("edge(1, 2)\nedge(2, 3).\n", "E-parse", "missing `.` at the end of the fact",
         (1, 11), (1, 11), DOT_HELP),
        ("p(x) :- e(x)\n.decl a(x: number)", "E-parse", "missing `.` at the end of the rule",
         (1, 13), (1, 13), DOT_HELP),
        ("r(x) :- a(x y).", "E-parse", "expected `)` or `,` after argument, found `y`",
         (1, 13), (1, 14), "close the atom's argument list with `)`, separating arguments with `,`"),
        ("r(x) :- a(x, y.", "E-parse", "expected `)` or `,` after argument, found `.`",
         (1, 15), (1, 16), "close the atom's argument list with `)`, separating arguments with `,`"),
        ("r(x) :- a(x) b(x).", "E-parse", "expected `,`, `;` or `.` after the body literal, found `b`",
         (1, 14), (1, 15), DOT_HELP),
        ("b(", "E-parse", "expected an expression, found end of file", (1, 3), (1, 3),
         "write a variable, `_`, a number, a string, a functor call or an aggregate"),
        (".inptu edge\nedge(1).\n", "E-parse", "unknown directive `.inptu`", (1, 1), (1, 7),
         "did you mean `.input`? the directives are `.decl`, `.type`, `.input`, `.output`, \
          `.printsize`, `.number_type`, `.symbol_type`"),
        (".pragma \"a\" \"b\"\n", "E-unsupported", "directive `.pragma` is not supported", (1, 1), (1, 8),
         "Tollgate reads `.decl`, `.type`, `.input`, `.output` and `.printsize`"),
        (".decl eq(x: number, y: number) eqrel\n", "E-unsupported", "`eqrel` relations are not supported",
         (1, 32), (1, 37), "declare a plain relation and write the reflexive, symmetric and transitive rules"),
        (".decl r(x: number) fast\n", "E-parse", "unknown relation qualifier `fast`", (1, 20), (1, 24),
         "the qualifiers `btree`, `brie`, `inline`, `no_inline`, `magic` and `no_magic` are accepted and ignored"),
        (".decl r(x number)\n", "E-parse", "expected `:` after attribute `x`, found `number`", (1, 11), (1, 17),
         "give every attribute a type, as in `x: number`"),
        (".type T\n", "E-parse", "expected `<:` or `=` after type `T`, found end of file", (2, 1), (2, 1),
         "write `.type T <: symbol`, `.type T = number` or `.type T = A | B`"),
        ("r(9223372036854775808).", "E-parse", "invalid number literal `9223372036854775808`: out of range",
         (1, 3), (1, 22), "integers must lie between -9223372036854775808 and 9223372036854775807, \
                           unsigned integers between 0u and 18446744073709551615u"),
        ("r(x) :- x = -9223372036854775809.", "E-parse",
         "invalid number literal `-9223372036854775809`: out of range", (1, 13), (1, 33),
         "integers must lie between -9223372036854775808 and 9223372036854775807, \
          unsigned integers between 0u and 18446744073709551615u"),
        ("r(x) :- a(y), x = foo(y).", "E-parse", "`foo` is not a functor: relations cannot be used as terms",
         (1, 19), (1, 22), "add `foo(..., v)` as a separate body literal and use the variable `v`; \
                            the functors are `cat`, `strlen`, `substr`, `to_number` and `to_string`"),
        ("r(x) :- a(foo(x)).", "E-parse", "`foo` is not a functor: relations cannot be used as terms",
         (1, 11), (1, 14), "add `foo(..., v)` as a separate body literal and use the variable `v`; \
                            the functors are `cat`, `strlen`, `substr`, `to_number` and `to_string`"),
        ("r(x) :- x = ord(\"a\").", "E-unsupported", "functor `ord` is not supported", (1, 13), (1, 16),
         FUNCTOR_HELP),
        ("r(x) :- x = match(\"a\", x).", "E-parse", "`match` is a test, not a value", (1, 13), (1, 18),
         "use it as a body literal on its own, as in `match(\"a*\", x)`"),
        ("r(x) :- x = substr(\"a\", 1).", "E-parse", "`substr` takes 3 arguments, found 2", (1, 13), (1, 27),
         "write `substr(s, start, length)`"),
        ("r(x) :- x = cat(\"a\").", "E-parse", "`cat` takes at least 2 arguments, found 1", (1, 13), (1, 21),
         "write `cat(a, b, ...)`"),
        ("r(x) :- !contains(x).", "E-parse", "`contains` takes 2 arguments, found 1", (1, 9), (1, 21),
         "write `contains(pattern, text)`"),
        ("r(x) :- a(x), b.", "E-parse", "expected a literal, found `b`", (1, 15), (1, 16),
         "a variable alone is not a condition; write a relation with no columns as `b()`"),
        ("r(x) :- x + 1.", "E-parse", "expected a comparison operator, found `.`", (1, 14), (1, 15),
         "compare with `=`, `!=`, `<`, `<=`, `>` or `>=`"),
        ("r(x) :- !x.", "E-parse", "expected a relation name after `!`, found `x`", (1, 10), (1, 11),
         "negate an atom, as in `!edge(x, y)`"),
        ("!r(x) :- a(x).", "E-parse", "expected a directive, a fact or a rule, found `!`", (1, 1), (1, 2),
         "start each item with a directive such as `.decl`, or with a relation name"),
        ("r(n) :- n = count { a(_) }.", "E-parse", "expected `:` after `count`, found `{`", (1, 19), (1, 20),
         "write an aggregate as `count : { r(x) }`"),
        ("r(n) :- n = sum y : { a(y) .", "E-parse", "expected `}` to close the aggregate body, found `.`",
         (1, 28), (1, 29), "close the body with `}`"),
        ("r(n) :- n = min y : y.", "E-parse", "expected `{` or an atom after the aggregate's `:`, found `y`",
         (1, 21), (1, 22), "write the body in braces, as in `min x : { r(x) }`"),
        ("r(x) :- (a(x) ; b(x).", "E-parse", "expected `)`, `,` or `;` in the bracketed body, found `.`",
         (1, 21), (1, 22), "close the bracketed disjunction with `)`"),
        ("r(x) :- a(x), [x] = y.", "E-unsupported", "record terms `[...]` are not supported", (1, 15), (1, 16),
         "use separate columns instead of a record"),
    ];

    #[test]
    fn errors_have_code_message_span_and_help() {
        for case in ERROR_CASES {
            let found = errors(case.0);
            assert_eq!(found.len(), 1, "{}: {found:?}", case.0);
            check(&found[0], *case);
        }
        let misplaced = errors("// @id x\n.decl a(n: number)\n");
        assert_eq!(misplaced[0].label, "this comment names no rule");
        assert_eq!(errors("a(1)\na(2).")[0].label, "expected `.` here");
    }

    #[test]
    fn recovery_reports_every_broken_item() {
        let text =
            "a(1) b.\n.inptu x\nc(1).\nd(x) :- .\ne(x) :- f(x)\n.decl g()\nh(1).\n// @id z\n";
        let lines = join(&errors(text), " ", |d| {
            src(text).line_col(d.span.start).0.to_string()
        });
        assert_eq!(lines, "1 2 4 5 8");
    }

    #[test]
    fn single_facts() {
        let fact = |t: &str| parse_fact(&src(t)).map(|a| dump_atom(&a)).ok();
        assert_eq!(fact("r(\"a\", 3)").as_deref(), Some("r(\"a\", 3)"));
        let all_kinds = fact(" r(\"a\", -3, 7u, -1.5, 0x10).\n");
        assert_eq!(all_kinds.as_deref(), Some("r(\"a\", -3, 7u, -1.5f, 16)"));
        assert_eq!(fact("flag()").as_deref(), Some("flag()"));
        let text = "r(\"a\", 3).";
        let span = parse_fact(&src(text)).map(|a| a.span).ok();
        assert_eq!(span.map(|s| slice(text, s)), Some("r(\"a\", 3)"));
        let help = "fact arguments are literals: strings in double quotes (`\"a\"`) or numbers \
                    (`3`, `-3`, `3u`, `1.5`)";
        let d = fact_error("r(x)");
        check(
            &d,
            (
                "r(x)",
                "E-parse",
                "expected a literal value, found `x`",
                (1, 3),
                (1, 4),
                help,
            ),
        );
        let d = fact_error("r(1) s(2)");
        let help = "give exactly one fact, such as `r(\"a\", 3)`";
        let msg = "expected the end of the fact, found `s`";
        check(&d, ("r(1) s(2)", "E-parse", msg, (1, 6), (1, 7), help));
        let d = fact_error("r(\"a)");
        assert_eq!(d.message, "unterminated string literal");
    }
}
