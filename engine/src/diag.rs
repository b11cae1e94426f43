//! Diagnostics for user-authored programs: a code, a message, a primary span, extra labelled
//! spans, and a help line; rendered with the source line underlined.

pub mod codes;

use std::fmt::{self, Write as _};

use crate::ast::Span;
pub use codes::Code;

/// One source file: its display name and its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    /// The name shown in diagnostics (usually a path; for joined sources, the first file's).
    pub name: String,
    /// The full text.
    pub text: String,
    /// Where each piece of a file starts in `text`: its byte offset, the file's name and the
    /// line (one-based) of that file it starts at. One entry for a single file; a pack of
    /// files joined has one per file; a file with `#include`s one per stretch between them.
    files: Vec<(usize, String, usize)>,
}

impl Source {
    /// A named source.
    pub fn new(name: impl Into<String>, text: impl Into<String>) -> Self {
        let name = name.into();
        Source {
            files: vec![(0, name.clone(), 1)],
            name,
            text: text.into(),
        }
    }

    /// A source assembled from pieces of files (as the preprocessor does): `pieces` gives,
    /// in order of `start`, where each piece starts in `text`, the file it comes from and the
    /// line of that file it starts at. Every piece must start at the beginning of a line.
    pub fn from_pieces(
        name: impl Into<String>,
        text: impl Into<String>,
        pieces: Vec<(usize, String, usize)>,
    ) -> Self {
        let name = name.into();
        let files = if pieces.is_empty() {
            vec![(0, name.clone(), 1)]
        } else {
            pieces
        };
        Source {
            name,
            text: text.into(),
            files,
        }
    }

    /// Several files read as one program (a pack of `.dl` files). Diagnostics still name the
    /// file and the line within it.
    pub fn join(files: &[Source]) -> Source {
        let mut text = String::new();
        let mut parts = Vec::new();
        for f in files {
            for (start, name, line) in &f.files {
                parts.push((text.len() + start, name.clone(), *line));
            }
            text.push_str(&f.text);
            if !text.ends_with('\n') {
                text.push('\n');
            }
        }
        Source {
            name: files.first().map_or_else(String::new, |f| f.name.clone()),
            text,
            files: parts,
        }
    }

    /// Whether this source joins several files (a pack, or a file with `#include`s).
    pub fn is_joined(&self) -> bool {
        self.files.iter().any(|(_, n, _)| *n != self.name)
    }

    /// The piece a byte offset falls in: where it starts, its file, its first line.
    fn file_at(&self, offset: usize) -> (usize, &str, usize) {
        let i = self
            .files
            .partition_point(|(start, _, _)| *start <= offset)
            .saturating_sub(1);
        self.files
            .get(i)
            .map_or((0, self.name.as_str(), 1), |(s, n, l)| (*s, n.as_str(), *l))
    }

    /// The name of the file a byte offset falls in.
    pub fn name_at(&self, offset: u32) -> &str {
        self.file_at(offset as usize).1
    }

    /// One-based line (within its file) and column (in characters) of a byte offset.
    pub fn line_col(&self, offset: u32) -> (usize, usize) {
        let offset = floor_char_boundary(&self.text, (offset as usize).min(self.text.len()));
        let (file_start, _, first_line) = self.file_at(offset);
        let before = &self.text[file_start..offset];
        let line = before.matches('\n').count() + first_line;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let col = before[line_start..].chars().count() + 1;
        (line, col)
    }

    /// The text of the line a byte offset falls on, without its newline.
    pub fn line_at(&self, offset: u32) -> &str {
        let offset = floor_char_boundary(&self.text, (offset as usize).min(self.text.len()));
        let start = self.text[..offset].rfind('\n').map_or(0, |i| i + 1);
        let end = self.text[offset..]
            .find('\n')
            .map_or(self.text.len(), |i| offset + i);
        &self.text[start..end]
    }
}

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// How bad a diagnostic is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    /// The program is rejected.
    Error,
    /// The program runs, but probably not as meant.
    Warning,
}

/// A secondary span with a note (for example "rule 3 of the cycle").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Label {
    /// Where.
    pub span: Span,
    /// What to say there.
    pub message: String,
}

/// One problem found in a program.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// Severity.
    pub severity: Severity,
    /// A stable code such as `E-parse`, `E-unknown-relation`, `E-unstratifiable`: the `id`
    /// of one of the [`codes`].
    pub code: &'static str,
    /// Lowercase message; user input in backticks.
    pub message: String,
    /// The primary span.
    pub span: Span,
    /// What to write under the primary span (may be empty).
    pub label: String,
    /// Further labelled spans, in order.
    pub labels: Vec<Label>,
    /// How to fix it.
    pub help: Option<String>,
}

impl Diagnostic {
    /// An error with a code (one of the [`codes`]), message and primary span.
    pub fn error(code: Code, message: impl Into<String>, span: Span) -> Self {
        Diagnostic {
            severity: Severity::Error,
            code: code.id,
            message: message.into(),
            span,
            label: String::new(),
            labels: Vec::new(),
            help: None,
        }
    }

    /// A warning with a code (one of the [`codes`]), message and primary span.
    pub fn warning(code: Code, message: impl Into<String>, span: Span) -> Self {
        Diagnostic {
            severity: Severity::Warning,
            ..Diagnostic::error(code, message, span)
        }
    }

    /// Sets the text under the primary span.
    #[must_use]
    pub fn with_label(mut self, label: impl Into<String>) -> Self {
        self.label = label.into();
        self
    }

    /// Adds a secondary labelled span.
    #[must_use]
    pub fn with_secondary(mut self, span: Span, message: impl Into<String>) -> Self {
        self.labels.push(Label {
            span,
            message: message.into(),
        });
        self
    }

    /// Sets the help line.
    #[must_use]
    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    /// Whether this is an error.
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }

    /// Renders the diagnostic against its source, rustc style:
    ///
    /// ```text
    /// error[E-unknown-relation]: unknown relation `edg`
    ///  --> tc.dl:4:16
    ///   |
    /// 4 | path(x, y) :- edg(x, y).
    ///   |               ^^^^^^^^^ not declared
    ///   = help: declare it with `.decl edg(...)` or fix the name (did you mean `edge`?)
    /// ```
    pub fn render(&self, source: &Source) -> String {
        let mut out = String::new();
        let kind = match self.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        let _ = writeln!(out, "{kind}[{}]: {}", self.code, self.message);
        let (line, col) = source.line_col(self.span.start);
        let _ = writeln!(out, " --> {}:{line}:{col}", source.name_at(self.span.start));
        render_snippet(&mut out, source, self.span, &self.label);
        for label in &self.labels {
            let (l, c) = source.line_col(label.span.start);
            let _ = writeln!(out, " ::: {}:{l}:{c}", source.name_at(label.span.start));
            render_snippet(&mut out, source, label.span, &label.message);
        }
        if let Some(help) = &self.help {
            let _ = writeln!(out, "  = help: {help}");
        }
        out
    }

    /// The diagnostic as a JSON-ready record (code, message, file, line, column, help).
    pub fn located(&self, source: &Source) -> LocatedDiagnostic {
        let (line, column) = source.line_col(self.span.start);
        let (end_line, end_column) = source.line_col(self.span.end);
        LocatedDiagnostic {
            severity: match self.severity {
                Severity::Error => "error",
                Severity::Warning => "warning",
            },
            code: self.code,
            message: self.message.clone(),
            file: source.name_at(self.span.start).to_string(),
            line,
            column,
            end_line,
            end_column,
            label: self.label.clone(),
            help: self.help.clone(),
            related: self
                .labels
                .iter()
                .map(|l| {
                    let (line, column) = source.line_col(l.span.start);
                    RelatedLocation {
                        line,
                        column,
                        message: l.message.clone(),
                    }
                })
                .collect(),
        }
    }
}

fn render_snippet(out: &mut String, source: &Source, span: Span, label: &str) {
    let (line, col) = source.line_col(span.start);
    let (end_line, end_col) = source.line_col(span.end);
    let text = source.line_at(span.start);
    let gutter = line.to_string().len();
    let pad = " ".repeat(gutter);
    let width = if end_line == line {
        end_col.saturating_sub(col).max(1)
    } else {
        text.chars().count().saturating_sub(col - 1).max(1)
    };
    let _ = writeln!(out, "{pad} |");
    let _ = writeln!(out, "{line} | {text}");
    let marks = "^".repeat(width);
    let under = " ".repeat(col - 1);
    if label.is_empty() {
        let _ = writeln!(out, "{pad} | {under}{marks}");
    } else {
        let _ = writeln!(out, "{pad} | {under}{marks} {label}");
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.message)
    }
}

impl std::error::Error for Diagnostic {}

/// A diagnostic together with its source, for `miette`'s report handlers (a `Diagnostic`
/// alone has spans but not the text they point into).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourcedDiagnostic {
    /// The diagnostic.
    pub diagnostic: Diagnostic,
    /// The source its spans point into.
    pub source: Source,
}

impl Diagnostic {
    /// Attaches the source, for `miette`.
    pub fn with_source(self, source: &Source) -> SourcedDiagnostic {
        SourcedDiagnostic {
            diagnostic: self,
            source: source.clone(),
        }
    }
}

impl fmt::Display for SourcedDiagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.diagnostic.message)
    }
}

impl std::error::Error for SourcedDiagnostic {}

impl miette::Diagnostic for SourcedDiagnostic {
    fn code<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        Some(Box::new(self.diagnostic.code))
    }

    fn severity(&self) -> Option<miette::Severity> {
        Some(match self.diagnostic.severity {
            Severity::Error => miette::Severity::Error,
            Severity::Warning => miette::Severity::Warning,
        })
    }

    fn help<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        self.diagnostic
            .help
            .as_ref()
            .map(|h| Box::new(h) as Box<dyn fmt::Display>)
    }

    fn source_code(&self) -> Option<&dyn miette::SourceCode> {
        Some(&self.source.text)
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = miette::LabeledSpan> + '_>> {
        let span = |s: Span| (s.start as usize, s.end.saturating_sub(s.start) as usize);
        let d = &self.diagnostic;
        let (start, len) = span(d.span);
        let primary = miette::LabeledSpan::new_primary_with_span(
            (!d.label.is_empty()).then(|| d.label.clone()),
            (start, len),
        );
        let rest = d.labels.iter().map(move |l| {
            let (start, len) = span(l.span);
            miette::LabeledSpan::new_with_span(Some(l.message.clone()), (start, len))
        });
        Some(Box::new(std::iter::once(primary).chain(rest)))
    }
}

/// A diagnostic resolved to lines and columns, for `--json` output.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct LocatedDiagnostic {
    /// `error` or `warning`.
    pub severity: &'static str,
    /// Stable code.
    pub code: &'static str,
    /// Message.
    pub message: String,
    /// File name.
    pub file: String,
    /// One-based line of the primary span's start.
    pub line: usize,
    /// One-based column of the primary span's start.
    pub column: usize,
    /// One-based line of the primary span's end.
    pub end_line: usize,
    /// One-based column of the primary span's end.
    pub end_column: usize,
    /// Label under the primary span.
    pub label: String,
    /// Help line.
    pub help: Option<String>,
    /// Secondary locations.
    pub related: Vec<RelatedLocation>,
}

/// A secondary location in a [`LocatedDiagnostic`].
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct RelatedLocation {
    /// One-based line.
    pub line: usize,
    /// One-based column.
    pub column: usize,
    /// Note.
    pub message: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn miette_sees_code_help_and_every_labelled_span() {
        use miette::Diagnostic as _;
        let src = Source::new("t.dl", "a(x) :- b(x).\n");
        let d = Diagnostic::error(codes::PARSE, "msg", Span::new(8, 12))
            .with_label("here")
            .with_secondary(Span::new(0, 4), "and here")
            .with_help("fix it")
            .with_source(&src);
        assert_eq!(d.code().map(|c| c.to_string()).as_deref(), Some("E-parse"));
        assert_eq!(d.help().map(|c| c.to_string()).as_deref(), Some("fix it"));
        let labels: Vec<_> = d
            .labels()
            .unwrap()
            .map(|l| (l.offset(), l.len(), l.label().map(str::to_string)))
            .collect();
        assert_eq!(
            labels,
            vec![(8, 4, Some("here".into())), (0, 4, Some("and here".into()))]
        );
    }

    #[test]
    fn joined_sources_report_the_file_and_the_line_within_it() {
        let a = Source::new("a.dl", ".decl e(x: number)\n");
        let b = Source::new("b.dl", "// b\ne(1).\np(x) :- q(x).\n");
        let joined = Source::join(&[a, b]);
        let at = joined.text.find("q(x)").unwrap();
        assert_eq!(joined.name_at(at as u32), "b.dl");
        assert_eq!(joined.line_col(at as u32), (3, 9));
        assert_eq!(joined.line_at(at as u32), "p(x) :- q(x).");
        let d = Diagnostic::error(
            codes::UNKNOWN_RELATION,
            "unknown relation `q`",
            Span::new(at, at + 4),
        );
        assert!(d.render(&joined).contains(" --> b.dl:3:9\n"));
        assert_eq!(d.located(&joined).file, "b.dl");
    }

    #[test]
    fn renders_line_column_underline_and_help() {
        let src = Source::new(
            "tc.dl",
            ".decl edge(x: number, y: number)\npath(x, y) :- edg(x, y).\n",
        );
        let start = src.text.find("edg(").map_or(0, |i| i);
        let d = Diagnostic::error(
            codes::UNKNOWN_RELATION,
            "unknown relation `edg`",
            Span::new(start, start + 9),
        )
        .with_label("not declared")
        .with_help("did you mean `edge`?");
        let text = d.render(&src);
        assert_eq!(
            text,
            "error[E-unknown-relation]: unknown relation `edg`\n --> tc.dl:2:15\n  |\n2 | path(x, y) :- edg(x, y).\n  |               ^^^^^^^^^ not declared\n  = help: did you mean `edge`?\n"
        );
        let j = d.located(&src);
        assert_eq!((j.line, j.column), (2, 15));
    }
}
