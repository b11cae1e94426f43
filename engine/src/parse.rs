//! The parser: one source file → [`Program`] with byte spans, or every diagnostic found.
//!
//! It reads a Soufflé-compatible subset plus two Tollgate extensions: the `glob(pattern, s)` test
//! (unless the program declares a relation named `glob`) and `// @id NAME` comments that give the
//! next rule a stable id. A hand-written recursive-descent parser over the tokens of [`lex`];
//! after an error it resumes at the next `.` or directive so one run reports many mistakes.

mod directives;
mod expr;
mod lex;
mod structure;

use crate::ast::{Atom, Clause, CmpOp, Expr, Ident, Literal, Program, Span, TestFn};
use crate::diag::{Diagnostic, Source, codes};
use expr::{agg_kind, functor};
use lex::{IdMark, Tok, Token};

/// Boxed: a `Diagnostic` is large and errors are rare.
type PResult<T> = Result<T, Box<Diagnostic>>;

fn err<T>(d: Diagnostic) -> PResult<T> {
    Err(Box::new(d))
}

const DIRECTIVES: &str =
    "decl type input output printsize number_type symbol_type pragma comp init override functor";
/// Soufflé directives outside the subset: named as unsupported rather than unknown.
const UNSUPPORTED_DIRECTIVES: &str = "limitsize lattice once";
/// Soufflé's storage and optimisation hints; they do not change results.
const IGNORED_QUALIFIERS: &str = "btree btree_delete brie inline no_inline magic no_magic";
/// How deep an expression or a bracketed body may nest (see `Parser::depth`).
pub const MAX_NESTING: usize = 128;

fn listed(list: &str, name: &str) -> bool {
    list.split(' ').any(|item| item == name)
}

const ID_HELP: &str = "put `// @id NAME` on the line directly before a rule";
const DOT_HELP: &str = "end every fact and rule with `.`";

/// Parses one source file. On error returns every diagnostic found, in source order: the parser
/// resumes at the next `.` or directive after each error.
pub fn parse_program(source: &Source) -> Result<Program, Vec<Diagnostic>> {
    let mut lexed = lex::lex(&source.text);
    lex::position_macros(&mut lexed.tokens, source);
    let mut errors = lexed.errors;
    let mut parser = Parser::new(&source.text, lexed.tokens);
    let program = parser.program(&lexed.id_marks, &mut errors);
    if errors.is_empty() {
        crate::components::expand(program).and_then(crate::inline::expand)
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
    /// How deep the expression or body being parsed nests (parentheses, prefix operators,
    /// operators of one chain): at most [`MAX_NESTING`], so that no stage's recursion over it
    /// can exhaust a thread's stack. Reset at each item.
    depth: usize,
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
            depth: 0,
        }
    }

    // ----- program structure (the item loop and components: `structure.rs`) -----

    /// Skips to where the next item probably starts: past the next `.`, or to the next
    /// directive; after a broken directive also to a line starting with `name(`.
    /// In a component's body (`nested`) it also stops at the `}` that closes it.
    fn recover(&mut self, item_start: usize, in_directive: bool, nested: bool) {
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
                Tok::RBrace if nested => return,
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
        if *self.peek() == Tok::Le {
            let msg = "subsumption (`r(..) <= r(..) :- body`) is not supported";
            let help = "it removes tuples while the rules run, which Tollgate's evaluation does not do; keep the best tuple with an aggregate, as in `best(k, v) :- r(k, _), v = min w : { r(k, w) }`";
            return err(
                Diagnostic::error(codes::UNSUPPORTED, msg, self.cur().span()).with_help(help),
            );
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
        if is_rule && *self.peek() == Tok::Directive("plan".into()) {
            self.query_plan()?;
        }
        Ok(Clause {
            id,
            heads,
            body,
            span: Span::new(start, end),
        })
    }

    /// `.plan 0:(1,2), 1:(2,1)` after a rule: Soufflé's order of the body atoms for each
    /// version of the rule. Read and dropped: the planner chooses its own order, and an order
    /// changes how fast a rule runs, never what it derives.
    fn query_plan(&mut self) -> PResult<()> {
        self.bump();
        let help = "write a plan as `.plan 0:(1,2)`: a version of the rule, then the order of its body atoms, numbered from 1";
        loop {
            if !matches!(self.peek(), Tok::Int(_)) {
                return Err(self.expected("a rule version (a number) after `.plan`", help));
            }
            self.bump();
            self.expect(&Tok::Colon, "`:` after the rule version", help)?;
            self.expect(&Tok::LParen, "`(` before the atoms' order", help)?;
            if !self.eat(&Tok::RParen) {
                loop {
                    if !matches!(self.peek(), Tok::Int(_)) {
                        return Err(self.expected("an atom's number", help));
                    }
                    self.bump();
                    if self.eat(&Tok::RParen) {
                        break;
                    }
                    self.expect(&Tok::Comma, "`,` or `)` in the atoms' order", help)?;
                }
            }
            if !self.eat(&Tok::Comma) {
                return Ok(());
            }
        }
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
            codes::PARSE,
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
        if let Some(lit) = self.boolean(None) {
            return Ok(lit);
        }
        match self.peek() {
            Tok::Bang => {
                let bang = self.bump().span();
                if let Some(lit) = self.boolean(Some(bang)) {
                    return Ok(lit);
                }
                match self.peek() {
                    Tok::Ident(_) if self.qualified_len() > 1 && self.is_atom_start() => {
                        let atom = self.atom()?;
                        let span = bang.to(atom.span);
                        Ok(Literal::Negated(atom, span))
                    }
                    Tok::Ident(name) if *self.peek2() == Tok::LParen => {
                        if let Some(func) = self.test_fn(name) {
                            return self.test(func, Some(bang));
                        }
                        let atom = self.atom()?;
                        let span = bang.to(atom.span);
                        Ok(Literal::Negated(atom, span))
                    }
                    // `!(body)`, `!!term` and `!x < y`: Soufflé negates any term, pushing the
                    // `!` onto its atoms and constraints.
                    Tok::LParen | Tok::Bang => {
                        self.deeper(1)?;
                        let inner = self.literal()?;
                        self.depth -= 1;
                        Ok(negate(inner, bang))
                    }
                    Tok::Ident(_) | Tok::Int(_) | Tok::Ip(_) | Tok::Str(_) | Tok::Minus => {
                        let inner = self.comparison()?;
                        Ok(negate(inner, bang))
                    }
                    _ => Err(self.expected(
                        "a relation name after `!`",
                        "negate an atom, as in `!edge(x, y)`",
                    )),
                }
            }
            Tok::LParen => self.bracketed_or_comparison(),
            Tok::Ident(_) if self.qualified_len() > 1 && self.is_atom_start() => {
                self.atom().map(Literal::Atom)
            }
            Tok::Ident(name) if *self.peek2() == Tok::LParen => {
                if let Some(func) = self.test_fn(name) {
                    self.test(func, None)
                } else if functor(name).is_some()
                    || agg_kind(name).is_some()
                    || name == "bnot"
                    || name == "lnot"
                    || name == "ord"
                    || name == "autoinc"
                {
                    // `bnot(1u) > 0u`: an operator applied to a bracketed operand; `ord(x) <
                    // ord(y)` reaches the functor's own message.
                    self.comparison()
                } else {
                    self.atom().map(Literal::Atom)
                }
            }
            _ => self.comparison(),
        }
    }

    /// Soufflé's constraints `true` and `false` (and `!true`, `!false`), as the comparisons
    /// `0 = 0` and `0 != 0` spanning the word: a body with `false` never holds.
    fn boolean(&mut self, bang: Option<Span>) -> Option<Literal> {
        let Tok::Ident(word) = self.peek() else {
            return None;
        };
        let holds = match word.as_str() {
            "true" => true,
            "false" => false,
            _ => return None,
        };
        // `true(...)` is an atom of a relation of that name.
        if *self.peek2() == Tok::LParen || self.qualified_len() > 1 {
            return None;
        }
        let word_span = self.bump().span();
        let span = bang.map_or(word_span, |b| b.to(word_span));
        let op = if holds == bang.is_none() {
            CmpOp::Eq
        } else {
            CmpOp::Ne
        };
        Some(Literal::Compare {
            op,
            lhs: Expr::Number(0, word_span),
            rhs: Expr::Number(0, word_span),
            span,
        })
    }

    /// `( body )` is a bracketed disjunction, but `(x + 1) < y` is a comparison: try the first,
    /// and if it fails the second, reporting the error that got further.
    fn bracketed_or_comparison(&mut self) -> PResult<Literal> {
        let start = self.pos;
        let depth = self.depth;
        self.deeper(1)?;
        let open = self.bump().span();
        let bracketed = self.disjunction().and_then(|alts| {
            let help = "close the bracketed disjunction with `)`";
            let close = self.expect(&Tok::RParen, "`)`, `,` or `;` in the bracketed body", help)?;
            Ok(Literal::Disjunction(alts, open.to(close.span())))
        });
        let Err(first) = bracketed else {
            self.depth = depth;
            return bracketed;
        };
        self.pos = start;
        self.depth = depth;
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
            return err(Diagnostic::error(codes::PARSE, msg, span).with_help(help));
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
                Box::new(Diagnostic::error(codes::PARSE, msg, v.span).with_help(help))
            }
            _ => self.expected(
                "a comparison operator",
                "compare with `=`, `!=`, `<`, `<=`, `>` or `>=`",
            ),
        }
    }

    fn atom(&mut self) -> PResult<Atom> {
        let relation = self.qualified("a relation name")?;
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

    /// A whole source that is one ground fact, with an optional final `.`.
    fn fact(&mut self) -> PResult<Atom> {
        if !self.is_atom_start() {
            let help = "write the relation name, then its values in parentheses";
            return Err(self.expected("a fact such as `r(\"a\", 3)`", help));
        }
        let relation = self.qualified("a relation name")?;
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
}

fn misplaced_id(m: &IdMark) -> Diagnostic {
    let msg = format!("rule id `{}` is not followed by a rule", m.name.name);
    Diagnostic::error(codes::PARSE, msg, m.comment)
        .with_label("this comment names no rule")
        .with_help(ID_HELP)
}

/// `!lit`, as Soufflé reads it: an atom negated (or a negated one made positive), a
/// constraint with the opposite operator, a test flipped, and a bracketed body by De Morgan:
/// `!(a, b)` is `(!a ; !b)` and `!(a ; b)` is `!a, !b`. The result spans from the `!`.
fn negate(lit: Literal, bang: Span) -> Literal {
    match lit {
        Literal::Atom(a) => {
            let span = bang.to(a.span);
            Literal::Negated(a, span)
        }
        Literal::Negated(a, _) => Literal::Atom(a),
        Literal::Compare { op, lhs, rhs, span } => Literal::Compare {
            op: op.negated(),
            lhs,
            rhs,
            span: bang.to(span),
        },
        Literal::Test {
            func,
            args,
            negated,
            span,
        } => Literal::Test {
            func,
            args,
            negated: !negated,
            span: bang.to(span),
        },
        Literal::Disjunction(alts, span) => {
            let span = bang.to(span);
            // Each alternative fails: for each, one of its literals fails.
            let mut all_fail: Vec<Literal> = alts
                .into_iter()
                .map(|conj| {
                    let mut negs: Vec<Literal> =
                        conj.into_iter().map(|l| negate(l, bang)).collect();
                    if negs.len() == 1 {
                        negs.remove(0)
                    } else {
                        Literal::Disjunction(negs.into_iter().map(|l| vec![l]).collect(), span)
                    }
                })
                .collect();
            if all_fail.len() == 1
                && let Some(one) = all_fail.pop()
            {
                // The one literal spans the whole `!( .. )`.
                return match one {
                    Literal::Negated(a, _) => Literal::Negated(a, span),
                    Literal::Compare { op, lhs, rhs, .. } => {
                        Literal::Compare { op, lhs, rhs, span }
                    }
                    Literal::Test {
                        func,
                        args,
                        negated,
                        ..
                    } => Literal::Test {
                        func,
                        args,
                        negated,
                        span,
                    },
                    Literal::Disjunction(alts, _) => Literal::Disjunction(alts, span),
                    atom @ Literal::Atom(_) => atom,
                };
            }
            Literal::Disjunction(vec![all_fail], span)
        }
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
mod tests;
