//! Expressions: operators at Soufflé's precedence, numbers, strings, functor calls (`cat`,
//! `max(a, b, ...)`, `@f(..)`, ...) and aggregates (`count : { .. }`, `max e : { .. }`, ...).

use super::lex::Tok;
use super::{MAX_NESTING, PResult, Parser, err, listed};
use crate::ast::{AggKind, ArithOp, Conversion, Expr, Functor, Ident, Literal, Span, UnaryOp};
use crate::diag::{Diagnostic, codes};

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

const FUNCTOR_HELP: &str = "the functors are `cat`, `strlen`, `substr`, `to_number`, `to_string`, `to_float`, \
     `to_unsigned`, `max`, `min`, `range` and `as`";

impl Parser<'_> {
    // ----- expressions -----

    /// `$Name(a, ..)` or `$Name`, its fields read by `item`.
    pub(super) fn branch_term(
        &mut self,
        item: impl FnMut(&mut Self) -> PResult<Expr>,
    ) -> PResult<Expr> {
        let dollar = self.bump();
        if !matches!(self.peek(), Tok::Ident(_)) {
            let msg = "`$` alone (Soufflé's deprecated counter, `autoinc()`) is not supported";
            let help = "`$Name(..)` is a branch of an algebraic data type; a counter numbers tuples in the order Soufflé derives them, which is not the order Tollgate does";
            return err(Diagnostic::error(codes::UNSUPPORTED, msg, dollar.span()).with_help(help));
        }
        let name = self.ident("a branch name after `$`")?;
        self.deeper(1)?;
        let (args, end) = if *self.peek() == Tok::LParen {
            self.arg_list("branch's", item)?
        } else {
            (Vec::new(), name.span.end as usize)
        };
        self.depth -= 1;
        Ok(Expr::Branch(name, args, Span::new(dollar.start, end)))
    }

    /// An expression. Binary operators bind as in Soufflé, loosest first: `lor`, `lxor`,
    /// `land`, `bor`, `bxor`, `band`, the shifts (`bshl`, `bshr`, `bshru`), `+ -`, `* / %` (all
    /// left-associative); then the prefixes `bnot` and `lnot`; then `^` (right-associative);
    /// then unary minus, tightest (`-2 ^ 2` is 4).
    pub(super) fn expr(&mut self) -> PResult<Expr> {
        self.deeper(1)?;
        let e = self.binary_level(0)?;
        self.depth -= 1;
        Ok(e)
    }

    /// Counts `by` more levels of nesting; an error past [`MAX_NESTING`]. (An error ends the
    /// item, and the count starts again at the next.)
    pub(super) fn deeper(&mut self, by: usize) -> PResult<()> {
        self.depth += by;
        if self.depth <= MAX_NESTING {
            return Ok(());
        }
        let msg = format!("the expression nests more than {MAX_NESTING} levels deep");
        let help = "split it with variables bound in the body, as in `y = a + b, z = y + c`";
        err(Diagnostic::error(codes::PARSE, msg, self.cur().span()).with_help(help))
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
                | Tok::Ip(_)
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
        if matches!(self.peek(), Tok::Int(_) | Tok::Float(_) | Tok::Ip(_)) {
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
            Tok::Int(_) | Tok::Unsigned(_) | Tok::Float(_) | Tok::Ip(_) => self.number(None),
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
                if name == "nil" {
                    return Ok(Expr::Nil(span));
                }
                Ok(Expr::Var(Ident { name, span }))
            }
            Tok::Dollar => self.branch_term(Parser::expr),
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
                self.bump();
                self.deeper(1)?;
                let mut fields = Vec::new();
                if *self.peek() != Tok::RBracket {
                    loop {
                        fields.push(self.expr()?);
                        if !self.eat(&Tok::Comma) {
                            break;
                        }
                    }
                }
                self.depth -= 1;
                let help = "close the record with `]`, separating its fields with `,`";
                let close = self.expect(&Tok::RBracket, "`]` or `,` after a field", help)?;
                Ok(Expr::Record(
                    fields,
                    Span::new(span.start as usize, close.end),
                ))
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
                (codes::PARSE, msg, help)
            } else if listed(UNSUPPORTED_FUNCTORS, name) {
                (
                    codes::UNSUPPORTED,
                    format!("functor `{name}` is not supported"),
                    unsupported_functor_help(name).into(),
                )
            } else {
                let msg = format!("`{name}` is not a functor: relations cannot be used as terms");
                let help = format!(
                    "add `{name}(..., v)` as a separate body literal and use the variable `v`; {FUNCTOR_HELP}"
                );
                (codes::PARSE, msg, help)
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
            // Never parsed as calls.
            Functor::Record(_) | Functor::Field(..) | Functor::Branch(..) | Functor::Arg(..) => {
                (0, usize::MAX, "")
            }
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
                Diagnostic::error(codes::PARSE, msg, span).with_help(format!("write `{usage}`"))
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
}

pub(super) fn functor(name: &str) -> Option<Functor> {
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

pub(super) fn agg_kind(name: &str) -> Option<AggKind> {
    match name {
        "count" => Some(AggKind::Count),
        "sum" => Some(AggKind::Sum),
        "min" => Some(AggKind::Min),
        "max" => Some(AggKind::Max),
        "mean" => Some(AggKind::Mean),
        _ => None,
    }
}
