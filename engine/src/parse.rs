//! The parser: one source file → [`Program`] with byte spans, or every diagnostic found.
//!
//! It reads a Soufflé-compatible subset plus two Tollgate extensions: the `glob(pattern, s)` test
//! (unless the program declares a relation named `glob`) and `// @id NAME` comments that give the
//! next rule a stable id. A hand-written recursive-descent parser over the tokens of [`lex`];
//! after an error it resumes at the next `.` or directive so one run reports many mistakes.

mod directives;
mod lex;
mod structure;

use crate::ast::{
    AggKind, ArithOp, Atom, Clause, CmpOp, Conversion, Expr, Functor, Ident, Literal, Program,
    Span, TestFn, UnaryOp,
};
use crate::diag::{Diagnostic, Source};
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
/// Soufflé functors outside the subset.
const UNSUPPORTED_FUNCTORS: &str = "ord autoinc";
/// Why each of [`UNSUPPORTED_FUNCTORS`] is left out.
fn unsupported_functor_help(name: &str) -> &'static str {
    if name == "autoinc" {
        "`autoinc()` numbers tuples in the order Soufflé derives them, which is not the order Tollgate does: the same program would give other numbers"
    } else {
        "`ord(x)` is a value's place in Soufflé's symbol table, which Tollgate does not share"
    }
}
/// The binary operator levels of [`Parser::binary_level`]: `lor` (0) to `* / %` (8).
const BINARY_LEVELS: usize = 9;
/// How deep an expression or a bracketed body may nest (see `Parser::depth`).
pub const MAX_NESTING: usize = 128;

fn listed(list: &str, name: &str) -> bool {
    list.split(' ').any(|item| item == name)
}

const FUNCTOR_HELP: &str = "the functors are `cat`, `strlen`, `substr`, `to_number`, `to_string`, `to_float`, \
     `to_unsigned`, `max`, `min`, `range` and `as`";
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
        crate::components::expand(program)
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
            return err(Diagnostic::error("E-unsupported", msg, self.cur().span()).with_help(help));
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
                    Tok::Ident(_) | Tok::Int(_) | Tok::Str(_) | Tok::Minus => {
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
                } else if functor(name).is_some() || agg_kind(name).is_some() {
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

    // ----- expressions -----

    /// An expression. Binary operators bind as in Soufflé, loosest first: `lor`, `lxor`,
    /// `land`, `bor`, `bxor`, `band`, the shifts (`bshl`, `bshr`, `bshru`), `+ -`, `* / %` (all
    /// left-associative); then the prefixes `bnot` and `lnot`; then `^` (right-associative);
    /// then unary minus, tightest (`-2 ^ 2` is 4).
    fn expr(&mut self) -> PResult<Expr> {
        self.deeper(1)?;
        let e = self.binary_level(0)?;
        self.depth -= 1;
        Ok(e)
    }

    /// Counts `by` more levels of nesting; an error past [`MAX_NESTING`]. (An error ends the
    /// item, and the count starts again at the next.)
    fn deeper(&mut self, by: usize) -> PResult<()> {
        self.depth += by;
        if self.depth <= MAX_NESTING {
            return Ok(());
        }
        let msg = format!("the expression nests more than {MAX_NESTING} levels deep");
        let help = "split it with variables bound in the body, as in `y = a + b, z = y + c`";
        err(Diagnostic::error("E-parse", msg, self.cur().span()).with_help(help))
    }

    fn binary_level(&mut self, level: usize) -> PResult<Expr> {
        if level == BINARY_LEVELS {
            return self.not_level();
        }
        let start = self.cur().start;
        let mut lhs = self.binary_level(level + 1)?;
        // Each operator of a left-associative chain nests the tree one level deeper.
        let mut chain = 0;
        while let Some(op) = self.binary_op(level) {
            self.bump();
            self.deeper(1)?;
            chain += 1;
            let rhs = self.binary_level(level + 1)?;
            lhs = self.binary(op, lhs, rhs, start);
        }
        self.depth -= chain;
        Ok(lhs)
    }

    /// The binary operator at the cursor, if it binds at `level` (0 the loosest).
    fn binary_op(&self, level: usize) -> Option<ArithOp> {
        let word = match self.peek() {
            Tok::Ident(w) => w.as_str(),
            Tok::Plus if level == 7 => return Some(ArithOp::Add),
            Tok::Minus if level == 7 => return Some(ArithOp::Sub),
            Tok::Star if level == 8 => return Some(ArithOp::Mul),
            Tok::Slash if level == 8 => return Some(ArithOp::Div),
            Tok::Percent if level == 8 => return Some(ArithOp::Mod),
            _ => return None,
        };
        Some(match (level, word) {
            (0, "lor") => ArithOp::LOr,
            (1, "lxor") => ArithOp::LXor,
            (2, "land") => ArithOp::LAnd,
            (3, "bor") => ArithOp::BOr,
            (4, "bxor") => ArithOp::BXor,
            (5, "band") => ArithOp::BAnd,
            (6, "bshl") => ArithOp::BShl,
            (6, "bshr") => ArithOp::BShr,
            (6, "bshru") => ArithOp::BShrU,
            _ => return None,
        })
    }

    /// `bnot` or `lnot` at the cursor, when an operand follows it (else it is a name).
    fn prefix_op(&self) -> Option<UnaryOp> {
        let op = match self.peek() {
            Tok::Ident(w) if w == "bnot" => UnaryOp::BNot,
            Tok::Ident(w) if w == "lnot" => UnaryOp::LNot,
            _ => return None,
        };
        matches!(
            self.peek2(),
            Tok::Ident(_)
                | Tok::Int(_)
                | Tok::Unsigned(_)
                | Tok::Float(_)
                | Tok::Str(_)
                | Tok::LParen
                | Tok::Minus
        )
        .then_some(op)
    }

    /// `bnot x`, `lnot x`: below `^`, above `*`.
    fn not_level(&mut self) -> PResult<Expr> {
        let Some(op) = self.prefix_op() else {
            return self.power();
        };
        let kw = self.bump();
        self.deeper(1)?;
        let operand = self.not_level()?;
        self.depth -= 1;
        let span = Span::new(kw.start, self.prev_end());
        Ok(Expr::Unary(op, Box::new(operand), span))
    }

    /// `a ^ b`, right-associative.
    fn power(&mut self) -> PResult<Expr> {
        let start = self.cur().start;
        let lhs = self.unary()?;
        if *self.peek() != Tok::Caret {
            return Ok(lhs);
        }
        self.bump();
        self.deeper(1)?;
        let rhs = self.not_level()?;
        self.depth -= 1;
        Ok(self.binary(ArithOp::Pow, lhs, rhs, start))
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
        self.deeper(1)?;
        let operand = if self.prefix_op().is_some() {
            self.not_level()?
        } else {
            self.unary()?
        };
        self.depth -= 1;
        let span = Span::new(minus.start, self.prev_end());
        Ok(Expr::Unary(UnaryOp::Neg, Box::new(operand), span))
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
                    // `max(a, b, ...)` and `min(a, b, ...)` are functors (Soufflé tells them from
                    // the aggregates `max (e) : { .. }` by the comma).
                    if matches!(kind, AggKind::Max | AggKind::Min) && self.commas_ahead() {
                        let name = name.clone();
                        return self.call(&name);
                    }
                    return self.aggregate(kind);
                }
                let name = name.clone();
                if *self.peek2() == Tok::LParen {
                    return self.call(&name);
                }
                self.bump();
                Ok(Expr::Var(Ident { name, span }))
            }
            Tok::At => {
                self.bump();
                let name = self.ident("a functor name after `@`")?;
                if *self.peek() != Tok::LParen {
                    let help = format!("call it with its arguments, as in `@{}(x)`", name.name);
                    return Err(self.expected("`(` after the functor's name", &help));
                }
                let (args, end) = self.arg_list("functor's", Parser::expr)?;
                Ok(Expr::UserCall {
                    name,
                    args,
                    span: Span::new(span.start as usize, end),
                })
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

    /// At `max` or `min`: whether `(` follows with a comma at its own level before its `)`.
    fn commas_ahead(&self) -> bool {
        if *self.peek2() != Tok::LParen {
            return false;
        }
        let mut depth = 0usize;
        for t in &self.toks[(self.pos + 2).min(self.toks.len())..] {
            match t.tok {
                Tok::LParen | Tok::LBrace | Tok::LBracket => depth += 1,
                Tok::RParen | Tok::RBrace | Tok::RBracket => match depth.checked_sub(1) {
                    Some(d) => depth = d,
                    None => return false,
                },
                Tok::Comma if depth == 0 => return true,
                Tok::Eof | Tok::Dot | Tok::Colon => return false,
                _ => {}
            }
        }
        false
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
                    unsupported_functor_help(name).into(),
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
            Functor::ToFloat => (1, 1, "to_float(x)"),
            Functor::ToUnsigned => (1, 1, "to_unsigned(x)"),
            Functor::Convert(c) => (1, 1, c.as_str()),
            Functor::Range => (2, 3, "x = range(from, to) or x = range(from, to, step)"),
            Functor::As(_) => (2, 2, "as(x, type)"),
            Functor::Max(_) => (2, usize::MAX, "max(a, b, ...)"),
            Functor::Min(_) => (2, usize::MAX, "min(a, b, ...)"),
        };
        if args.len() < min || args.len() > max {
            let takes = if max == usize::MAX {
                format!("at least {min}")
            } else if max != min {
                format!("{min} or {max}")
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
    Diagnostic::error("E-parse", msg, m.comment)
        .with_label("this comment names no rule")
        .with_help(ID_HELP)
}

fn functor(name: &str) -> Option<Functor> {
    match name {
        "cat" => Some(Functor::Cat),
        "max" => Some(Functor::Max(crate::value::Type::Number)),
        "min" => Some(Functor::Min(crate::value::Type::Number)),
        "strlen" => Some(Functor::Strlen),
        "substr" => Some(Functor::Substr),
        "to_number" => Some(Functor::ToNumber),
        "to_string" => Some(Functor::ToString),
        "to_float" => Some(Functor::ToFloat),
        "to_unsigned" => Some(Functor::ToUnsigned),
        "range" => Some(Functor::Range),
        "as" => Some(Functor::As(crate::value::Type::Number)),
        other => Conversion::ALL
            .into_iter()
            .find(|c| c.as_str() == other)
            .map(Functor::Convert),
    }
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

fn agg_kind(name: &str) -> Option<AggKind> {
    match name {
        "count" => Some(AggKind::Count),
        "sum" => Some(AggKind::Sum),
        "min" => Some(AggKind::Min),
        "max" => Some(AggKind::Max),
        "mean" => Some(AggKind::Mean),
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
mod tests;
