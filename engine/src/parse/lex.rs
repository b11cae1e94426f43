//! The lexer behind [`crate::parse`]: source text → tokens with byte offsets, plus the
//! `// @id NAME` marks found in line comments; and the parser's cursor over those tokens.
//!
//! It never stops at an error: it records a diagnostic, skips what it could not read and goes on,
//! so the parser can still report the errors that follow.

use super::{PResult, Parser, err};
use crate::ast::{Expr, Ident, Span};
use crate::diag::{Diagnostic, codes};

/// What a token is.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Tok {
    /// A name: `[A-Za-z_?][A-Za-z0-9_?]*`, except a lone `_`.
    Ident(String),
    /// `_`
    Underscore,
    /// An integer literal's magnitude (decimal, hex or binary); `None` if it exceeds `u64`.
    Int(Option<u64>),
    /// An integer literal with a `u` suffix; `None` if it exceeds `u64`.
    Unsigned(Option<u64>),
    /// A float literal.
    Float(f64),
    /// An IPv4 address `a.b.c.d`, read as Soufflé reads it: the number
    /// `(a << 24) + (b << 16) + (c << 8) + d` in 32 bits (negative from `128.0.0.0` on).
    Ip(i32),
    /// A string literal, escapes resolved.
    Str(String),
    /// `.name` at the start of an item (a `.` not glued to the previous token).
    Directive(String),
    LParen,
    RParen,
    LBrace,
    RBrace,
    LBracket,
    /// `@`, before a user-defined functor's name.
    At,
    /// `$`, before a branch of an algebraic data type.
    Dollar,
    RBracket,
    Comma,
    Dot,
    Colon,
    Semi,
    /// `:-`
    If,
    /// `<:`
    Subtype,
    Bang,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    Plus,
    Minus,
    Star,
    Slash,
    Percent,
    /// `^`
    Caret,
    Pipe,
    Eof,
}

/// A token and where it was written.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Token {
    pub tok: Tok,
    pub start: usize,
    pub end: usize,
    /// Whether a line break separates it from the previous token.
    pub line_break_before: bool,
}

impl Token {
    pub fn span(&self) -> Span {
        Span::new(self.start, self.end)
    }
}

/// A well-formed `// @id NAME` comment.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct IdMark {
    /// NAME and its span.
    pub name: Ident,
    /// From `//` to the end of NAME.
    pub comment: Span,
    /// Index of the first token after the comment.
    pub before_token: usize,
}

/// The lexer's output.
#[derive(Debug, Default)]
pub(super) struct Lexed {
    /// Tokens, always ending with [`Tok::Eof`].
    pub tokens: Vec<Token>,
    pub id_marks: Vec<IdMark>,
    pub errors: Vec<Diagnostic>,
}

/// Splits `text` into tokens.
pub(super) fn lex(text: &str) -> Lexed {
    let mut lexer = Lexer {
        text,
        bytes: text.as_bytes(),
        pos: 0,
        line_break: false,
        out: Lexed::default(),
    };
    lexer.run();
    lexer.out
}

/// `__LINE__` and `__FILE__` as Soufflé's scanner reads them: the number of the line they are
/// written on and the name of the file, within the file they are written in (an included
/// file's own lines and name).
pub(super) fn position_macros(tokens: &mut [Token], source: &crate::diag::Source) {
    for t in tokens {
        let Tok::Ident(name) = &t.tok else { continue };
        let offset = u32::try_from(t.start).unwrap_or(u32::MAX);
        t.tok = match name.as_str() {
            "__LINE__" => Tok::Int(Some(source.line_col(offset).0 as u64)),
            "__FILE__" => Tok::Str(source.name_at(offset).to_string()),
            _ => continue,
        };
    }
}

pub(super) fn is_ident_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_' || b == b'?'
}

fn is_ident_continue(b: u8) -> bool {
    is_ident_start(b) || b.is_ascii_digit()
}

fn is_rule_id_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "_.:/-".contains(c)
}

struct Lexer<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
    line_break: bool,
    out: Lexed,
}

impl Lexer<'_> {
    fn at(&self, i: usize) -> u8 {
        self.bytes.get(i).copied().unwrap_or(0)
    }

    fn push(&mut self, tok: Tok, start: usize) {
        self.out.tokens.push(Token {
            tok,
            start,
            end: self.pos,
            line_break_before: self.line_break,
        });
        self.line_break = false;
    }

    fn error(&mut self, message: String, start: usize, end: usize, help: &str) {
        let d = Diagnostic::error(codes::PARSE, message, Span::new(start, end)).with_help(help);
        self.out.errors.push(d);
    }

    fn run(&mut self) {
        loop {
            self.skip_trivia();
            let start = self.pos;
            let Some(&b) = self.bytes.get(start) else {
                self.push(Tok::Eof, start);
                return;
            };
            match b {
                b'"' => self.string(),
                b'0'..=b'9' => self.number(),
                b'.' if is_ident_start(self.at(start + 1)) && self.glued_to_previous(start) => {
                    self.pos += 1;
                    self.push(Tok::Dot, start);
                }
                b'.' if is_ident_start(self.at(start + 1)) => {
                    self.pos += 1;
                    let name = self.ident_text();
                    self.push(Tok::Directive(name), start);
                }
                _ if is_ident_start(b) => {
                    let name = self.ident_text();
                    let tok = if name == "_" {
                        Tok::Underscore
                    } else {
                        Tok::Ident(name)
                    };
                    self.push(tok, start);
                }
                // `a::edge`: the qualifier newer Soufflé writes, read as `a.edge`.
                b':' if self.at(start + 1) == b':'
                    && is_ident_start(self.at(start + 2))
                    && self.glued_to_previous(start)
                    && matches!(self.out.tokens.last().map(|t| &t.tok), Some(Tok::Ident(_))) =>
                {
                    self.pos += 2;
                    self.push(Tok::Dot, start);
                }
                _ => self.punct(start),
            }
        }
    }

    /// Whether the token at `start` directly follows the previous token (no space or comment).
    fn glued_to_previous(&self, start: usize) -> bool {
        self.out.tokens.last().is_some_and(|t| t.end == start)
    }

    fn ident_text(&mut self) -> String {
        let start = self.pos;
        while is_ident_continue(self.at(self.pos)) {
            self.pos += 1;
        }
        self.text[start..self.pos].to_string()
    }

    fn punct(&mut self, start: usize) {
        let next = self.at(start + 1);
        let (tok, len) = match self.at(start) {
            b'(' => (Tok::LParen, 1),
            b')' => (Tok::RParen, 1),
            b'{' => (Tok::LBrace, 1),
            b'}' => (Tok::RBrace, 1),
            b'[' => (Tok::LBracket, 1),
            b']' => (Tok::RBracket, 1),
            b',' => (Tok::Comma, 1),
            b'.' => (Tok::Dot, 1),
            b';' => (Tok::Semi, 1),
            b':' if next == b'-' => (Tok::If, 2),
            b':' => (Tok::Colon, 1),
            b'!' if next == b'=' => (Tok::Ne, 2),
            b'!' => (Tok::Bang, 1),
            b'=' => (Tok::Eq, 1),
            b'<' if next == b'=' => (Tok::Le, 2),
            b'<' if next == b':' => (Tok::Subtype, 2),
            b'<' => (Tok::Lt, 1),
            b'>' if next == b'=' => (Tok::Ge, 2),
            b'>' => (Tok::Gt, 1),
            b'+' => (Tok::Plus, 1),
            b'-' => (Tok::Minus, 1),
            b'*' => (Tok::Star, 1),
            b'/' => (Tok::Slash, 1),
            b'%' => (Tok::Percent, 1),
            b'^' => (Tok::Caret, 1),
            b'|' => (Tok::Pipe, 1),
            b'@' => (Tok::At, 1),
            b'$' => (Tok::Dollar, 1),
            b'#' if self.text[..start]
                .rsplit('\n')
                .next()
                .is_some_and(|before| before.trim().is_empty()) =>
            {
                self.pos += 1;
                self.error(
                    "a preprocessor line (`#include`, `#define`, ...) in a program that was not preprocessed".into(),
                    start,
                    self.pos,
                    "program files given to `tollgate rules eval`, `check` and `explain` are preprocessed; rule packs and envelopes are not: write the rules out",
                );
                return;
            }
            _ => {
                let ch = self.text[start..].chars().next().unwrap_or('\u{fffd}');
                self.pos += ch.len_utf8().max(1);
                self.error(
                    format!("unexpected character `{ch}`"),
                    start,
                    self.pos,
                    "remove it, or put it inside a string literal",
                );
                return;
            }
        };
        self.pos += len;
        self.push(tok, start);
    }

    fn skip_trivia(&mut self) {
        loop {
            match (self.at(self.pos), self.at(self.pos + 1)) {
                (b'\n', _) => {
                    self.line_break = true;
                    self.pos += 1;
                }
                (b' ' | b'\t' | b'\r' | b'\x0c', _) => self.pos += 1,
                (b'/', b'/') => self.line_comment(),
                (b'/', b'*') => self.block_comment(),
                _ => return,
            }
        }
    }

    fn block_comment(&mut self) {
        let start = self.pos;
        match self.text[start + 2..].find("*/") {
            Some(i) => {
                let end = start + 2 + i + 2;
                if self.text[start..end].contains('\n') {
                    self.line_break = true;
                }
                self.pos = end;
            }
            None => {
                self.pos = self.text.len();
                self.error(
                    "unterminated block comment".to_string(),
                    start,
                    start + 2,
                    "close the comment with `*/`",
                );
            }
        }
    }

    /// Skips a `//` comment, recording it if it is a `// @id NAME` mark.
    fn line_comment(&mut self) {
        let start = self.pos;
        let end = self.text[start..]
            .find('\n')
            .map_or(self.text.len(), |i| start + i);
        self.pos = end;
        let body_start = start + 2;
        let body = &self.text[body_start..end];
        let trimmed = body.trim_start_matches([' ', '\t']);
        let Some(after) = trimmed.strip_prefix("@id") else {
            return;
        };
        if after.chars().next().is_some_and(|c| !c.is_whitespace()) {
            return; // `// @identity ...` is an ordinary comment
        }
        let at = body_start + (body.len() - trimmed.len());
        let after_start = at + 3;
        let name_text = after.trim_start();
        let name_start = after_start + (after.len() - name_text.len());
        let name_len = name_text
            .find(char::is_whitespace)
            .unwrap_or(name_text.len());
        let name = &name_text[..name_len];
        let rest = name_text[name_len..].trim();
        let help = "write `// @id NAME` where NAME uses letters, digits and `_ . : / -`";
        if name.is_empty() {
            self.error("missing rule id after `@id`".into(), at, after_start, help);
        } else if !name.chars().all(is_rule_id_char) {
            let msg = format!("invalid rule id `{name}`");
            self.error(msg, name_start, name_start + name_len, help);
        } else if !rest.is_empty() {
            let rest_start = name_start
                + name_len
                + (name_text[name_len..].len() - name_text[name_len..].trim_start().len());
            let msg = format!("unexpected `{rest}` after rule id `{name}`");
            self.error(msg, rest_start, rest_start + rest.len(), help);
        } else {
            self.out.id_marks.push(IdMark {
                name: Ident {
                    name: name.to_string(),
                    span: Span::new(name_start, name_start + name_len),
                },
                comment: Span::new(start, name_start + name_len),
                before_token: self.out.tokens.len(),
            });
        }
    }

    fn string(&mut self) {
        let start = self.pos;
        self.pos += 1;
        let mut value = String::new();
        loop {
            let rest = &self.text[self.pos..];
            let Some(c) = rest.chars().next() else { break };
            match c {
                '"' => {
                    self.pos += 1;
                    self.push(Tok::Str(value), start);
                    return;
                }
                '\n' => break,
                '\\' => {
                    let Some(e) = rest[1..].chars().next().filter(|&e| e != '\n') else {
                        self.pos += 1;
                        break;
                    };
                    match e {
                        'n' => value.push('\n'),
                        't' => value.push('\t'),
                        'r' => value.push('\r'),
                        '"' | '\\' => value.push(e),
                        // Soufflé keeps other escape sequences as written.
                        _ => {
                            value.push('\\');
                            value.push(e);
                        }
                    }
                    self.pos += 1 + e.len_utf8();
                }
                _ => {
                    value.push(c);
                    self.pos += c.len_utf8();
                }
            }
        }
        let end = self.pos;
        let line_end = self.text[start..end].trim_end_matches('\r').len() + start;
        self.error(
            "unterminated string literal".into(),
            start,
            line_end,
            "close the string with `\"` on the same line",
        );
        self.push(Tok::Str(value), start);
    }

    fn number(&mut self) {
        let start = self.pos;
        let (radix, digits_start) = match (self.at(start), self.at(start + 1)) {
            (b'0', b'x' | b'X') => (16, start + 2),
            (b'0', b'b' | b'B') => (2, start + 2),
            _ => (10, start),
        };
        if radix == 10
            && let Some((end, ip)) = self.ip_address(start)
        {
            self.pos = end;
            self.push(Tok::Ip(ip), start);
            return;
        }
        self.pos = digits_start;
        while (self.at(self.pos) as char).is_digit(radix) {
            self.pos += 1;
        }
        let digits_end = self.pos;
        let mut is_float = false;
        if radix == 10 {
            if self.at(self.pos) == b'.' && self.at(self.pos + 1).is_ascii_digit() {
                self.pos += 1;
                while self.at(self.pos).is_ascii_digit() {
                    self.pos += 1;
                }
                is_float = true;
            }
            let (e, sign, digit) = (
                self.at(self.pos),
                self.at(self.pos + 1),
                self.at(self.pos + 2),
            );
            if matches!(e, b'e' | b'E')
                && (sign.is_ascii_digit()
                    || (matches!(sign, b'+' | b'-') && digit.is_ascii_digit()))
            {
                self.pos += 2;
                while self.at(self.pos).is_ascii_digit() {
                    self.pos += 1;
                }
                is_float = true;
            }
        }
        let unsigned = !is_float && self.at(self.pos) == b'u';
        if unsigned {
            self.pos += 1;
        }
        if digits_end == digits_start || is_ident_continue(self.at(self.pos)) {
            while is_ident_continue(self.at(self.pos)) {
                self.pos += 1;
            }
            let text = &self.text[start..self.pos];
            let msg = format!("invalid number literal `{text}`");
            let help =
                "write an integer (`42`, `0x2A`, `0b101`), an unsigned `42u` or a float `4.2`";
            self.error(msg, start, self.pos, help);
            self.push(Tok::Int(Some(0)), start);
            return;
        }
        let text = &self.text[start..self.pos];
        let tok = if is_float {
            Tok::Float(text.parse().unwrap_or(f64::NAN))
        } else {
            let value = u64::from_str_radix(&self.text[digits_start..digits_end], radix).ok();
            if unsigned {
                Tok::Unsigned(value)
            } else {
                Tok::Int(value)
            }
        };
        self.push(tok, start);
    }

    /// An IPv4 address at `start` (four decimal numbers joined by dots, each at most 255) and
    /// where it ends; a part over 255 is an error, as in Soufflé.
    fn ip_address(&mut self, start: usize) -> Option<(usize, i32)> {
        let mut pos = start;
        let mut parts = Vec::with_capacity(4);
        for i in 0..4 {
            if i > 0 {
                if self.at(pos) != b'.' || !self.at(pos + 1).is_ascii_digit() {
                    return None;
                }
                pos += 1;
            }
            let from = pos;
            while self.at(pos).is_ascii_digit() {
                pos += 1;
            }
            parts.push(self.text[from..pos].parse::<u64>().unwrap_or(u64::MAX));
        }
        if is_ident_continue(self.at(pos))
            || self.at(pos) == b'.' && self.at(pos + 1).is_ascii_digit()
        {
            return None;
        }
        if parts.iter().any(|&p| p > 255) {
            let text = &self.text[start..pos];
            let msg = format!("invalid IP address `{text}`: a part is over 255");
            self.error(
                msg,
                start,
                pos,
                "each of an address's four parts lies between 0 and 255",
            );
            return Some((pos, 0));
        }
        let ip = parts.iter().fold(0u32, |acc, &p| (acc << 8) | p as u32);
        Some((pos, ip as i32))
    }
}

/// How the parser walks the tokens: lookahead, consuming, and "expected X, found Y" errors.
impl Parser<'_> {
    pub(super) fn tok_at(&self, i: usize) -> &Token {
        let last = self.toks.len().saturating_sub(1);
        &self.toks[i.min(last)]
    }

    pub(super) fn cur(&self) -> &Token {
        self.tok_at(self.pos)
    }

    pub(super) fn peek(&self) -> &Tok {
        &self.cur().tok
    }

    pub(super) fn peek2(&self) -> &Tok {
        &self.tok_at(self.pos + 1).tok
    }

    pub(super) fn bump(&mut self) -> Token {
        let t = self.cur().clone();
        if t.tok != Tok::Eof {
            self.pos += 1;
        }
        t
    }

    pub(super) fn eat(&mut self, tok: &Tok) -> bool {
        let hit = self.peek() == tok;
        if hit {
            self.bump();
        }
        hit
    }

    /// End of the last consumed token.
    pub(super) fn prev_end(&self) -> usize {
        if self.pos == 0 {
            0
        } else {
            self.tok_at(self.pos - 1).end
        }
    }

    pub(super) fn is_atom_start(&self) -> bool {
        matches!(self.peek(), Tok::Ident(_))
            && self.tok_at(self.pos + self.qualified_len()).tok == Tok::LParen
    }

    /// How many tokens the name at the current token spans: 1 for `edge`, 3 for `g.edge`
    /// (a qualified name, as components make: the parts and dots written without spaces).
    pub(super) fn qualified_len(&self) -> usize {
        let mut len = 1;
        loop {
            let (dot, next) = (self.tok_at(self.pos + len), self.tok_at(self.pos + len + 1));
            let glued = self.tok_at(self.pos + len - 1).end == dot.start && dot.end == next.start;
            if dot.tok == Tok::Dot && matches!(next.tok, Tok::Ident(_)) && glued {
                len += 2;
            } else {
                return len;
            }
        }
    }

    /// A name that may be qualified by instance names: `edge`, `London.train.edge`.
    pub(super) fn qualified(&mut self, what: &str) -> PResult<Ident> {
        let len = match self.peek() {
            Tok::Ident(_) => self.qualified_len(),
            _ => 1,
        };
        let first = self.ident(what)?;
        if len == 1 {
            return Ok(first);
        }
        let start = first.span.start as usize;
        for _ in 0..len - 1 {
            self.bump();
        }
        let end = self.prev_end();
        Ok(Ident {
            name: self.text[start..end].replace("::", "."),
            span: Span::new(start, end),
        })
    }

    pub(super) fn describe(&self, t: &Token) -> String {
        if t.tok == Tok::Eof {
            return "end of file".into();
        }
        let text = &self.text[t.start..t.end];
        match text.char_indices().nth(30) {
            Some((i, _)) => format!("`{}...`", &text[..i]),
            None => format!("`{text}`"),
        }
    }

    /// "expected WHAT, found TOKEN" at the current token.
    pub(super) fn expected(&self, what: &str, help: &str) -> Box<Diagnostic> {
        let t = self.cur();
        let message = format!("expected {what}, found {}", self.describe(t));
        Box::new(Diagnostic::error(codes::PARSE, message, t.span()).with_help(help))
    }

    pub(super) fn expect(&mut self, tok: &Tok, what: &str, help: &str) -> PResult<Token> {
        if self.peek() == tok {
            Ok(self.bump())
        } else {
            Err(self.expected(what, help))
        }
    }

    pub(super) fn ident(&mut self, what: &str) -> PResult<Ident> {
        match self.peek() {
            Tok::Ident(name) => {
                let name = name.clone();
                let t = self.bump();
                Ok(Ident {
                    name,
                    span: t.span(),
                })
            }
            _ => Err(self.expected(what, "names start with a letter, `_` or `?`")),
        }
    }
}

/// Literal values: numbers (with an optional `-` before them) and the values of a ground fact.
impl Parser<'_> {
    /// A numeric literal at the current token, negated if `minus` gives the `-` before it.
    pub(super) fn number(&mut self, minus: Option<usize>) -> PResult<Expr> {
        let t = self.bump();
        let start = minus.unwrap_or(t.start);
        let span = Span::new(start, t.end);
        let out_of_range = || {
            let msg = format!(
                "invalid number literal `{}`: out of range",
                &self.text[start..t.end]
            );
            let help = "integers must lie between -9223372036854775808 and 9223372036854775807, \
                        unsigned integers between 0u and 18446744073709551615u";
            Diagnostic::error(codes::PARSE, msg, span).with_help(help)
        };
        match t.tok {
            Tok::Int(magnitude) => {
                let value = magnitude
                    .map(i128::from)
                    .map(|m| if minus.is_some() { -m } else { m });
                let value = value
                    .and_then(|v| i64::try_from(v).ok())
                    .ok_or_else(out_of_range)?;
                Ok(Expr::Number(value, span))
            }
            Tok::Float(f) => Ok(Expr::Float(if minus.is_some() { -f } else { f }, span)),
            Tok::Ip(ip) => Ok(Expr::Number(
                if minus.is_some() {
                    -i64::from(ip)
                } else {
                    i64::from(ip)
                },
                span,
            )),
            Tok::Unsigned(Some(u)) if minus.is_none() => Ok(Expr::Unsigned(u, span)),
            Tok::Unsigned(_) => err(out_of_range()),
            _ => err(Diagnostic::error(
                codes::PARSE,
                "expected a number",
                t.span(),
            )),
        }
    }

    pub(super) fn fact_value(&mut self) -> PResult<Expr> {
        match self.peek() {
            Tok::Int(_) | Tok::Unsigned(_) | Tok::Float(_) | Tok::Ip(_) => self.number(None),
            Tok::Minus if matches!(self.peek2(), Tok::Int(_) | Tok::Float(_) | Tok::Ip(_)) => {
                let minus = self.bump().start;
                self.number(Some(minus))
            }
            Tok::Str(s) => {
                let e = Expr::String(s.clone(), self.cur().span());
                self.bump();
                Ok(e)
            }
            Tok::Ident(w) if w == "nil" => {
                let span = self.bump().span();
                Ok(Expr::Nil(span))
            }
            Tok::Dollar => self.branch_term(Parser::fact_value),
            Tok::LBracket => {
                let start = self.bump().start;
                self.deeper(1)?;
                let mut fields = Vec::new();
                if *self.peek() != Tok::RBracket {
                    loop {
                        fields.push(self.fact_value()?);
                        if !self.eat(&Tok::Comma) {
                            break;
                        }
                    }
                }
                self.depth -= 1;
                let help = "close the record with `]`, separating its fields with `,`";
                let close = self.expect(&Tok::RBracket, "`]` or `,` after a field", help)?;
                Ok(Expr::Record(fields, Span::new(start, close.end)))
            }
            _ => Err(self.expected(
                "a literal value",
                "fact arguments are literals: strings in double quotes (`\"a\"`), numbers (`3`, `-3`, `3u`, `1.5`), records (`[1, \"a\"]`) or `nil`",
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(text: &str) -> Vec<Tok> {
        let lexed = lex(text);
        assert!(lexed.errors.is_empty(), "{:?}", lexed.errors);
        lexed.tokens.into_iter().map(|t| t.tok).collect()
    }

    #[test]
    fn numbers_directives_and_dots() {
        use Tok::*;
        assert_eq!(
            toks("0x1F 0b101 7u 1.5 2.0e3 1e2 3."),
            vec![
                Int(Some(31)),
                Int(Some(5)),
                Unsigned(Some(7)),
                Float(1.5),
                Float(2000.0),
                Float(100.0),
                Int(Some(3)),
                Dot,
                Eof
            ]
        );
        assert_eq!(toks("a(1).\n.decl")[5..], [Directive("decl".into()), Eof]);
        // A dot glued to the previous token ends a clause even when a name follows.
        assert_eq!(toks("a(1).b")[4..], [Dot, Ident("b".into()), Eof]);
        assert_eq!(toks("99999999999999999999"), vec![Int(None), Eof]);
    }

    #[test]
    fn strings_keep_unknown_escapes() {
        assert_eq!(
            toks(r#""a\"b\\c\n\t\r\x""#),
            vec![Tok::Str("a\"b\\c\n\t\r\\x".into()), Tok::Eof]
        );
    }

    #[test]
    fn id_marks_record_the_next_token() {
        let lexed = lex("a(1).\n// @id r.1/x:y-z\n/* c */ b(2).");
        assert!(lexed.errors.is_empty());
        let mark = &lexed.id_marks[0];
        assert_eq!(
            (mark.name.name.as_str(), mark.before_token),
            ("r.1/x:y-z", 5)
        );
        assert_eq!(
            &"a(1).\n// @id r.1/x:y-z"[mark.name.span.start as usize..],
            "r.1/x:y-z"
        );
        assert!(lex("// @identity x\n// not @id x").id_marks.is_empty());
    }
    #[test]
    fn lexical_errors_have_message_span_and_help() {
        let id_help = "write `// @id NAME` where NAME uses letters, digits and `_ . : / -`";
        let number_help =
            "write an integer (`42`, `0x2A`, `0b101`), an unsigned `42u` or a float `4.2`";
        let cases = [
            (
                "r(\"abc).\nb(1).",
                "unterminated string literal",
                (1, 3),
                (1, 9),
                "close the string with `\"` on the same line",
            ),
            (
                "a(1).\n/* x",
                "unterminated block comment",
                (2, 1),
                (2, 3),
                "close the comment with `*/`",
            ),
            (
                "// @id\na(1).",
                "missing rule id after `@id`",
                (1, 4),
                (1, 7),
                id_help,
            ),
            (
                "// @id a!b\na(1).",
                "invalid rule id `a!b`",
                (1, 8),
                (1, 11),
                id_help,
            ),
            (
                "// @id a b\na(1).",
                "unexpected `b` after rule id `a`",
                (1, 10),
                (1, 11),
                id_help,
            ),
            (
                "r(12abc).",
                "invalid number literal `12abc`",
                (1, 3),
                (1, 8),
                number_help,
            ),
            (
                "r(0x).",
                "invalid number literal `0x`",
                (1, 3),
                (1, 5),
                number_help,
            ),
            (
                "r(x) :- x = #1.",
                "unexpected character `#`",
                (1, 13),
                (1, 14),
                "remove it, or put it inside a string literal",
            ),
        ];
        for (text, message, start, end, help) in cases {
            let source = crate::diag::Source::new("t.dl", text);
            let errors = super::super::parse_program(&source)
                .err()
                .unwrap_or_default();
            let d = &errors[0];
            let at = (source.line_col(d.span.start), source.line_col(d.span.end));
            let got = (d.code, d.message.as_str(), at, d.help.as_deref());
            assert_eq!(
                got,
                ("E-parse", message, (start, end), Some(help)),
                "{text}"
            );
        }
    }
}
