//! The C preprocessor lines Soufflé programs use (Soufflé runs `cpp` over every program):
//! `#include "file"` and `#include <file>`, `#define` (object-like and function-like macros),
//! `#undef`, `#ifdef`, `#ifndef`, `#if`, `#elif`, `#else`, `#endif` (with `defined`, integer
//! arithmetic, comparisons and logic), `#pragma once`, `#error` and `#warning`.
//!
//! The result is one [`Source`] whose text is what the parser reads: directive lines and lines
//! left out by a condition become empty lines, macros are replaced, included files are spliced
//! in. Its pieces remember which file and line each stretch of text came from, so a
//! diagnostic or a proof's origin names `rules/edges.dl:3`, not a line of the combined text.
//!
//! Not supported (refused or left as written, never guessed): `#` stringizing and `##` pasting
//! in macro bodies, and a function-like macro call whose arguments span several lines.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

mod cond;
mod scan;

use crate::ast::Span;
use crate::diag::{Diagnostic, Source, SourcedDiagnostic, codes};
use scan::{
    Piece, Scanner, comment_state, first_word, include_target, parse_define, resolve_defined,
    split_word, strip_comments, substitute,
};

/// How deeply `#include`s may nest (deeper means a file includes itself).
const MAX_INCLUDE_DEPTH: usize = 64;
/// How many `#include`s one program may read in all (files including others twice, level
/// after level, would otherwise multiply without end).
const MAX_INCLUDES: usize = 10_000;
/// The most text the preprocessor may produce: includes and macros multiply, and a few lines
/// could otherwise ask for more than any machine holds.
const MAX_OUTPUT: usize = 64 << 20;
/// How many times one line's macros may be replaced (a guard against exponential bodies).
const MAX_EXPANSIONS_PER_LINE: usize = 10_000;

/// Where `#include`d files come from.
pub trait Includes {
    /// The file `target` names, included from the file called `from`: its name (as shown in
    /// diagnostics) and text, or why it cannot be read. `angled` is `<target>`.
    fn read(&self, from: &str, target: &str, angled: bool) -> Result<(String, String), String>;
}

/// No files: every `#include` is refused (programs given as text, such as rule packs).
pub struct NoIncludes;

impl Includes for NoIncludes {
    fn read(&self, _from: &str, target: &str, _angled: bool) -> Result<(String, String), String> {
        Err(format!(
            "cannot include `{target}`: this program was given as text, not read from a file"
        ))
    }
}

/// Files on disk: `"name"` relative to the including file's folder, then each include folder;
/// `<name>` in the include folders only (as `cpp` does).
pub struct FileIncludes {
    /// Folders searched after the including file's own (`-I`).
    pub dirs: Vec<PathBuf>,
}

impl Includes for FileIncludes {
    fn read(&self, from: &str, target: &str, angled: bool) -> Result<(String, String), String> {
        let own = Path::new(from).parent().map(|p| p.join(target));
        let candidates: Vec<PathBuf> = own
            .filter(|_| !angled)
            .into_iter()
            .chain(self.dirs.iter().map(|d| d.join(target)))
            .collect();
        for path in &candidates {
            if path.is_file() {
                return std::fs::read_to_string(path)
                    .map(|text| (path.display().to_string(), text))
                    .map_err(|e| format!("cannot read `{}`: {e}", path.display()));
            }
        }
        let looked: Vec<String> = candidates
            .iter()
            .map(|p| format!("`{}`", p.display()))
            .collect();
        Err(format!(
            "cannot find `{target}` (looked for {})",
            if looked.is_empty() {
                "it in no folder: give one with `-I`".to_string()
            } else {
                looked.join(", ")
            }
        ))
    }
}

/// Whether `text` has any line the preprocessor would act on (a `#` first on a line, or
/// Soufflé's `.include` / `.once`).
pub fn has_directives(text: &str) -> bool {
    text.lines()
        .any(|l| l.trim_start().starts_with('#') || souffle_include(l).is_some())
}

/// A preprocessed program: the text the parser reads, and the `#warning`s met on the way.
#[derive(Debug)]
pub struct Preprocessed {
    /// The combined text, with pieces naming the files and lines it came from.
    pub source: Source,
    /// `#warning` lines, each with the source of its file.
    pub warnings: Vec<SourcedDiagnostic>,
}

/// Preprocesses `source`. Errors (and warnings) carry the source of the file they are in.
pub fn preprocess(
    source: &Source,
    includes: &dyn Includes,
) -> Result<Preprocessed, Vec<SourcedDiagnostic>> {
    let mut pre = Pre {
        includes,
        macros: HashMap::new(),
        once: HashSet::new(),
        out: String::new(),
        pieces: Vec::new(),
        diags: Vec::new(),
        stopped: false,
        included: 0,
    };
    pre.file(&source.name, &source.text, 0);
    let (errors, warnings): (Vec<_>, Vec<_>) =
        pre.diags.into_iter().partition(|d| d.diagnostic.is_error());
    if errors.is_empty() {
        Ok(Preprocessed {
            source: Source::from_pieces(&source.name, pre.out, pre.pieces),
            warnings,
        })
    } else {
        Err(errors)
    }
}

#[derive(Clone)]
struct Macro {
    /// `None` for an object-like macro.
    params: Option<Vec<String>>,
    body: String,
}

/// One `#if` level: whether its text is kept, and whether a branch was already taken.
struct Cond {
    keeping: bool,
    taken: bool,
    seen_else: bool,
    span: Span,
}

struct Pre<'i> {
    includes: &'i dyn Includes,
    macros: HashMap<String, Macro>,
    /// Files that said `#pragma once`.
    once: HashSet<String>,
    out: String,
    pieces: Vec<(usize, String, usize)>,
    diags: Vec<SourcedDiagnostic>,
    /// Set when a limit was reached: nothing more is read.
    stopped: bool,
    /// `#include`s read so far.
    included: usize,
}

fn pp_error(message: String, span: Span, help: &str) -> Diagnostic {
    Diagnostic::error(codes::PREPROCESSOR, message, span).with_help(help)
}

const CONDITION_HELP: &str = "open a condition with `#if`, `#ifdef` or `#ifndef` before it";

impl Pre<'_> {
    fn report(&mut self, src: &Source, d: Diagnostic) {
        self.diags.push(d.with_source(src));
    }

    /// Reads one file (the program or an included one) into the output.
    fn file(&mut self, name: &str, text: &str, depth: usize) {
        let src = Source::new(name, text);
        self.pieces.push((self.out.len(), name.to_string(), 1));
        let lines: Vec<&str> = text.split_inclusive('\n').collect();
        let mut conds: Vec<Cond> = Vec::new();
        let mut in_comment = false;
        let (mut i, mut offset) = (0, 0);
        while i < lines.len() && !self.stopped {
            let keeping = conds.iter().all(|c| c.keeping);
            let line = lines[i];
            let start = offset;
            // Soufflé's own `.include "file"` and `.once`, first on a line: read as `#include`
            // and `#pragma once` (Soufflé's scanner reads them after the preprocessor ran).
            if keeping
                && !in_comment
                && let Some(word) = souffle_include(line)
            {
                let span = Span::new(start, start + line.trim_end().len());
                offset += line.len();
                i += 1;
                if line.ends_with('\n') {
                    self.out.push('\n');
                }
                match word {
                    Some(rest) => {
                        let rest = strip_comments(rest);
                        self.include(name, (".include", rest.trim()), span, &src, depth, i + 1);
                    }
                    None => {
                        self.once.insert(name.to_string());
                    }
                }
                continue;
            }
            if in_comment || !line.trim_start().starts_with('#') {
                if keeping {
                    match self.expand_line(line, in_comment) {
                        Ok(expanded) => self.out.push_str(&expanded),
                        Err(msg) => {
                            let span = Span::new(start, start + line.trim_end().len());
                            self.report(&src, pp_error(msg, span, "check the macro's use"));
                            self.out.push_str(line);
                        }
                    }
                } else if line.ends_with('\n') {
                    self.out.push('\n');
                }
                in_comment = comment_state(line, in_comment);
                offset += line.len();
                i += 1;
                if self.out.len() > MAX_OUTPUT {
                    let msg = format!(
                        "the program grows past {} MiB once preprocessed",
                        MAX_OUTPUT >> 20
                    );
                    let span = Span::new(start, start);
                    self.report(&src, pp_error(msg, span, "include or expand less"));
                    self.stopped = true;
                }
                continue;
            }
            // A directive, with the lines its trailing `\` continues onto.
            let mut full = String::new();
            let mut consumed = 0;
            while let Some(l) = lines.get(i + consumed) {
                consumed += 1;
                let body = l.trim_end_matches(['\n', '\r']);
                match body.strip_suffix('\\') {
                    Some(cont) => {
                        full.push_str(cont);
                        full.push(' ');
                    }
                    None => {
                        full.push_str(body);
                        break;
                    }
                }
            }
            let span = Span::new(start, start + line.trim_end().len());
            for l in &lines[i..i + consumed] {
                offset += l.len();
                if l.ends_with('\n') {
                    self.out.push('\n');
                }
            }
            let next_line = i + consumed + 1;
            i += consumed;
            let text = full.trim_start()[1..].trim_start();
            let (word, rest) = split_word(text);
            let rest = strip_comments(rest);
            let rest = rest.trim();
            match word {
                "ifdef" | "ifndef" => {
                    let holds = (word == "ifdef") == self.macros.contains_key(first_word(rest));
                    conds.push(Cond {
                        keeping: keeping && holds,
                        taken: holds,
                        seen_else: false,
                        span,
                    });
                }
                "if" => {
                    let holds = keeping && self.condition(rest, span, &src);
                    conds.push(Cond {
                        keeping: holds,
                        taken: holds,
                        seen_else: false,
                        span,
                    });
                }
                "elif" | "else" => {
                    let outer = conds.iter().rev().skip(1).all(|c| c.keeping);
                    let (taken, seen_else) = match conds.last() {
                        Some(c) => (c.taken, c.seen_else),
                        None => {
                            let msg = format!("`#{word}` without `#if`");
                            self.report(&src, pp_error(msg, span, CONDITION_HELP));
                            continue;
                        }
                    };
                    if seen_else {
                        let msg = format!("`#{word}` after `#else`");
                        let help = "a condition has at most one `#else`, and it comes last";
                        self.report(&src, pp_error(msg, span, help));
                        continue;
                    }
                    let holds =
                        !taken && outer && (word == "else" || self.condition(rest, span, &src));
                    if let Some(c) = conds.last_mut() {
                        c.keeping = holds;
                        c.taken |= holds;
                        c.seen_else = word == "else";
                    }
                }
                "endif" => {
                    if conds.pop().is_none() {
                        let msg = "`#endif` without `#if`".to_string();
                        self.report(&src, pp_error(msg, span, CONDITION_HELP));
                    }
                }
                _ if !keeping => {}
                "define" => match parse_define(rest) {
                    Ok((macro_name, m)) => {
                        self.macros.insert(macro_name, m);
                    }
                    Err(msg) => {
                        let help = "write `#define NAME value` or `#define NAME(a, b) value`";
                        self.report(&src, pp_error(msg, span, help));
                    }
                },
                "undef" => {
                    self.macros.remove(first_word(rest));
                }
                "include" => self.include(name, ("#include", rest), span, &src, depth, next_line),
                "pragma" if first_word(rest) == "once" => {
                    self.once.insert(name.to_string());
                }
                // Other pragmas are for a C compiler (Soufflé's options are `.pragma`);
                // `# 12 "file"` and `#line` are line markers; `#` alone does nothing.
                "pragma" | "line" | "" => {}
                _ if word.bytes().all(|b| b.is_ascii_digit()) => {}
                "error" => {
                    let msg = format!("#error {rest}");
                    let help = "the program stops itself here: a condition it checks does not hold";
                    self.report(&src, pp_error(msg, span, help));
                }
                "warning" => {
                    let d = Diagnostic::warning(
                        codes::PREPROCESSOR_WARNING,
                        format!("#warning {rest}"),
                        span,
                    );
                    self.report(&src, d);
                }
                other => {
                    let msg = format!("unknown preprocessor directive `#{other}`");
                    let help = "the directives are `#include`, `#define`, `#undef`, `#ifdef`, \
                                `#ifndef`, `#if`, `#elif`, `#else`, `#endif`, `#pragma`, \
                                `#error` and `#warning`";
                    self.report(&src, pp_error(msg, span, help));
                }
            }
        }
        for c in conds {
            let msg = "this condition is never closed".to_string();
            self.report(&src, pp_error(msg, c.span, "close it with `#endif`"));
        }
    }

    /// `#include "file"` or `<file>` (or `.include "file"`) in `from`, whose text goes on at
    /// line `next_line`.
    fn include(
        &mut self,
        from: &str,
        (directive, rest): (&str, &str),
        span: Span,
        src: &Source,
        depth: usize,
        next_line: usize,
    ) {
        let target = include_target(rest).filter(|(_, angled)| !angled || directive == "#include");
        let Some((target, angled)) = target else {
            let msg = if directive == "#include" {
                format!("expected `\"file\"` or `<file>` after `#include`, found `{rest}`")
            } else {
                format!("expected `\"file\"` after `{directive}`, found `{rest}`")
            };
            let help = format!("write `{directive} \"other.dl\"`");
            self.report(src, pp_error(msg, span, &help));
            return;
        };
        if depth >= MAX_INCLUDE_DEPTH || self.included >= MAX_INCLUDES {
            let msg = if depth >= MAX_INCLUDE_DEPTH {
                format!("`#include`s nest more than {MAX_INCLUDE_DEPTH} levels deep")
            } else {
                format!("the program reads more than {MAX_INCLUDES} `#include`s")
            };
            let help = "a file must not include itself; guard it with `#pragma once` or `#ifndef`";
            self.report(src, pp_error(msg, span, help));
            self.stopped = true;
            return;
        }
        self.included += 1;
        match self.includes.read(from, target, angled) {
            Ok((name, text)) => {
                if !self.once.contains(&name) {
                    self.file(&name, &text, depth + 1);
                    if !self.out.ends_with('\n') && !self.out.is_empty() {
                        self.out.push('\n');
                    }
                }
                self.pieces
                    .push((self.out.len(), from.to_string(), next_line));
            }
            Err(msg) => {
                let help = "give the path relative to the including file, or a folder with `-I`";
                self.report(src, pp_error(msg, span, help));
            }
        }
    }

    /// Whether an `#if` / `#elif` condition holds; a malformed one is reported and is false.
    fn condition(&mut self, text: &str, span: Span, src: &Source) -> bool {
        let result = resolve_defined(text, &self.macros)
            .and_then(|t| self.expand(&t, &mut Vec::new(), &mut MAX_EXPANSIONS_PER_LINE.clone()))
            .and_then(|t| cond::evaluate(&t));
        match result {
            Ok(v) => v != 0,
            Err(msg) => {
                let help = "conditions use integers, `defined(NAME)`, macros, arithmetic, \
                            comparisons and `!`, `&&`, `||`";
                self.report(src, pp_error(msg, span, help));
                false
            }
        }
    }

    fn expand_line(&self, line: &str, in_comment: bool) -> Result<String, String> {
        if self.macros.is_empty() {
            return Ok(line.to_string());
        }
        let mut budget = MAX_EXPANSIONS_PER_LINE;
        let mut out = String::with_capacity(line.len());
        let mut rest = line;
        if in_comment {
            match line.find("*/") {
                Some(end) => {
                    out.push_str(&line[..end + 2]);
                    rest = &line[end + 2..];
                }
                None => return Ok(line.to_string()),
            }
        }
        out.push_str(&self.expand(rest, &mut Vec::new(), &mut budget)?);
        Ok(out)
    }

    /// Replaces the macros in `text` (not inside strings or comments), rescanning each
    /// replacement with its own macro disabled, as `cpp` does.
    fn expand(
        &self,
        text: &str,
        disabled: &mut Vec<String>,
        budget: &mut usize,
    ) -> Result<String, String> {
        let mut out = String::with_capacity(text.len());
        let mut scan = Scanner::new(text);
        while let Some(piece) = scan.next_piece() {
            let Piece::Ident(name) = piece else {
                out.push_str(piece.text());
                continue;
            };
            let Some(m) = self
                .macros
                .get(name)
                .filter(|_| !disabled.iter().any(|d| d == name))
            else {
                out.push_str(name);
                continue;
            };
            if *budget == 0 {
                return Err(format!(
                    "macros replaced more than {MAX_EXPANSIONS_PER_LINE} times on one line"
                ));
            }
            *budget -= 1;
            let body = match &m.params {
                None => m.body.clone(),
                Some(params) => {
                    let Some(args) = scan.call_args()? else {
                        out.push_str(name); // a function-like macro's name without `(`
                        continue;
                    };
                    let args = if params.is_empty() && args.len() == 1 && args[0].trim().is_empty()
                    {
                        Vec::new()
                    } else {
                        args
                    };
                    if args.len() != params.len() {
                        return Err(format!(
                            "macro `{name}` takes {} argument{}, given {}",
                            params.len(),
                            if params.len() == 1 { "" } else { "s" },
                            args.len()
                        ));
                    }
                    let mut expanded_args = Vec::with_capacity(args.len());
                    for a in &args {
                        expanded_args.push(self.expand(a.trim(), disabled, budget)?);
                    }
                    substitute(&m.body, params, &expanded_args)
                }
            };
            disabled.push(name.to_string());
            let replaced = self.expand(&body, disabled, budget);
            disabled.pop();
            out.push_str(&replaced?);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests;

/// `Some(Some(rest))` for a line `.include rest`, `Some(None)` for `.once`, else `None`.
fn souffle_include(line: &str) -> Option<Option<&str>> {
    let t = line.trim();
    if let Some(rest) = t.strip_prefix(".include")
        && (rest.starts_with([' ', '\t', '"']) || rest.is_empty())
    {
        return Some(Some(rest));
    }
    (strip_comments(t).trim() == ".once").then_some(None)
}
