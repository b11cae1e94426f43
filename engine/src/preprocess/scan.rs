//! The preprocessor's view of a line: identifiers (which macros may replace) and everything
//! else (strings, comments, numbers, punctuation) passed through untouched; and the small
//! parsers of directive lines.

use std::collections::HashMap;

use super::Macro;

/// One piece of text.
pub(super) enum Piece<'t> {
    /// A C identifier.
    Ident(&'t str),
    /// Anything else, copied as it is.
    Other(&'t str),
}

impl<'t> Piece<'t> {
    pub(super) fn text(&self) -> &'t str {
        match self {
            Piece::Ident(t) | Piece::Other(t) => t,
        }
    }
}

fn is_ident_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_'
}

fn is_ident_continue(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

pub(super) struct Scanner<'t> {
    text: &'t str,
    pos: usize,
}

impl<'t> Scanner<'t> {
    pub(super) fn new(text: &'t str) -> Self {
        Scanner { text, pos: 0 }
    }

    fn at(&self, i: usize) -> u8 {
        self.text.as_bytes().get(i).copied().unwrap_or(0)
    }

    /// The end of the string literal opened at `start` (after its closing quote, or the end).
    fn string_end(&self, start: usize) -> usize {
        let bytes = self.text.as_bytes();
        let mut i = start + 1;
        while i < bytes.len() {
            match bytes[i] {
                b'\\' => i += 2,
                b'"' => return i + 1,
                _ => i += 1,
            }
        }
        bytes.len()
    }

    pub(super) fn next_piece(&mut self) -> Option<Piece<'t>> {
        let start = self.pos;
        let bytes = self.text.as_bytes();
        let b = *bytes.get(start)?;
        let end = match b {
            b'"' => self.string_end(start),
            b'/' if self.at(start + 1) == b'/' => bytes.len(),
            b'/' if self.at(start + 1) == b'*' => self.text[start + 2..]
                .find("*/")
                .map_or(bytes.len(), |i| start + 2 + i + 2),
            b'0'..=b'9' => {
                let mut i = start + 1;
                while is_ident_continue(self.at(i)) || self.at(i) == b'.' {
                    i += 1;
                }
                i
            }
            _ if is_ident_start(b) => {
                let mut i = start + 1;
                while is_ident_continue(self.at(i)) {
                    i += 1;
                }
                self.pos = i;
                return Some(Piece::Ident(&self.text[start..i]));
            }
            _ => {
                let width = self.text[start..].chars().next().map_or(1, char::len_utf8);
                start + width
            }
        };
        self.pos = end.min(bytes.len());
        Some(Piece::Other(&self.text[start..self.pos]))
    }

    /// After a function-like macro's name: its arguments if a `(` follows (split at the
    /// top-level commas), `None` if not (the name then stands alone).
    pub(super) fn call_args(&mut self) -> Result<Option<Vec<String>>, String> {
        let mut i = self.pos;
        while matches!(self.at(i), b' ' | b'\t') {
            i += 1;
        }
        if self.at(i) != b'(' {
            return Ok(None);
        }
        let mut args = Vec::new();
        let mut depth = 0usize;
        let mut arg_start = i + 1;
        let bytes = self.text.as_bytes();
        while i < bytes.len() {
            match bytes[i] {
                b'"' => {
                    i = self.string_end(i);
                    continue;
                }
                b'(' => depth += 1,
                b')' => {
                    depth -= 1;
                    if depth == 0 {
                        args.push(self.text[arg_start..i].to_string());
                        self.pos = i + 1;
                        return Ok(Some(args));
                    }
                }
                b',' if depth == 1 => {
                    args.push(self.text[arg_start..i].to_string());
                    arg_start = i + 1;
                }
                _ => {}
            }
            i += 1;
        }
        Err("a macro call's `(` is not closed on its line".to_string())
    }
}

/// Whether a block comment is open at the end of `line`, given whether one was at its start.
pub(super) fn comment_state(line: &str, in_comment: bool) -> bool {
    let rest = if in_comment {
        match line.find("*/") {
            Some(i) => &line[i + 2..],
            None => return true,
        }
    } else {
        line
    };
    // An unclosed `/*` runs to the end of the line, so it is the last piece.
    let mut open = false;
    let mut scan = Scanner::new(rest);
    while let Some(p) = scan.next_piece() {
        let t = p.text();
        open = t.starts_with("/*") && !(t.len() >= 4 && t.ends_with("*/"));
    }
    open
}

/// The first word of `text` and what follows it.
pub(super) fn split_word(text: &str) -> (&str, &str) {
    let end = text
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(text.len());
    (&text[..end], &text[end..])
}

pub(super) fn first_word(text: &str) -> &str {
    split_word(text.trim_start()).0
}

/// A directive's text without its comments (outside strings).
pub(super) fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut scan = Scanner::new(text);
    while let Some(p) = scan.next_piece() {
        let t = p.text();
        if t.starts_with("//") {
            break;
        }
        if t.starts_with("/*") {
            out.push(' ');
        } else {
            out.push_str(t);
        }
    }
    out
}

/// `"file"` or `<file>`, with whether it was angled.
pub(super) fn include_target(text: &str) -> Option<(&str, bool)> {
    let text = text.trim();
    if let Some(inner) = text.strip_prefix('"').and_then(|t| t.strip_suffix('"')) {
        return Some((inner, false));
    }
    text.strip_prefix('<')
        .and_then(|t| t.strip_suffix('>'))
        .map(|inner| (inner, true))
}

/// `NAME body` or `NAME(a, b) body` (the `(` right after the name).
pub(super) fn parse_define(text: &str) -> Result<(String, Macro), String> {
    let (name, rest) = split_word(text);
    if name.is_empty() || !is_ident_start(name.as_bytes()[0]) {
        return Err("expected a macro name after `#define`".into());
    }
    let (params, body) = match rest.strip_prefix('(') {
        Some(after) => {
            let close = after.find(')').ok_or_else(|| {
                format!("the parameters of macro `{name}` are not closed with `)`")
            })?;
            let list = after[..close].trim();
            let params: Vec<String> = if list.is_empty() {
                Vec::new()
            } else {
                list.split(',').map(|p| p.trim().to_string()).collect()
            };
            if let Some(bad) = params.iter().find(|p| {
                p.is_empty()
                    || !p.bytes().all(is_ident_continue)
                    || p.as_bytes()[0].is_ascii_digit()
            }) {
                return Err(format!(
                    "`{bad}` cannot name a parameter of macro `{name}` (variadic macros are not supported)"
                ));
            }
            (Some(params), &after[close + 1..])
        }
        None => (None, rest),
    };
    let body = body.trim().to_string();
    let mut scan = Scanner::new(&body);
    while let Some(p) = scan.next_piece() {
        if p.text() == "#" {
            return Err(format!(
                "`#` and `##` in the body of macro `{name}` are not supported"
            ));
        }
    }
    Ok((name.to_string(), Macro { params, body }))
}

/// A function-like macro's body with each parameter replaced by its argument.
pub(super) fn substitute(body: &str, params: &[String], args: &[String]) -> String {
    let mut out = String::with_capacity(body.len());
    let mut scan = Scanner::new(body);
    while let Some(p) = scan.next_piece() {
        match p {
            Piece::Ident(id) => match params.iter().position(|q| q == id) {
                Some(i) => out.push_str(&args[i]),
                None => out.push_str(id),
            },
            Piece::Other(t) => out.push_str(t),
        }
    }
    out
}

/// An `#if` condition with `defined NAME` and `defined(NAME)` replaced by `1` or `0`.
pub(super) fn resolve_defined(
    text: &str,
    macros: &HashMap<String, Macro>,
) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut scan = Scanner::new(text);
    while let Some(p) = scan.next_piece() {
        if p.text() != "defined" {
            out.push_str(p.text());
            continue;
        }
        let mut parens = false;
        let name = loop {
            match scan.next_piece() {
                Some(Piece::Other(t)) if t.trim().is_empty() => {}
                Some(Piece::Other("(")) if !parens => parens = true,
                Some(Piece::Ident(name)) => break name,
                _ => return Err("expected a macro name after `defined`".into()),
            }
        };
        if parens {
            loop {
                match scan.next_piece() {
                    Some(Piece::Other(t)) if t.trim().is_empty() => {}
                    Some(Piece::Other(")")) => break,
                    _ => return Err("expected `)` after `defined(NAME`".into()),
                }
            }
        }
        out.push_str(if macros.contains_key(name) {
            " 1 "
        } else {
            " 0 "
        });
    }
    Ok(out)
}
