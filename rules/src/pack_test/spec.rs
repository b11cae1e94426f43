//! The YAML format of a pack test file, read with locations: a mistake in the file is a
//! [`TestFileError`] naming the file, line and column, never a panic.
//!
//! A file is either a list of cases or a mapping with `cases:` and what every case shares
//! (`given`, `program`, `envelopes`). Facts are parsed while the YAML is read, so a bad fact
//! is reported at its own line and column.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};
use tollgate_engine::diag::Source;
use tollgate_engine::{Fact, Value};

/// A problem with a test file's input (YAML, a fact, a program, a path): exit code 2, not a
/// failed test.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[error("{}: {message}", self.location())]
pub struct TestFileError {
    /// The file (as given, or as found under a folder).
    pub file: String,
    /// One-based line, when known.
    pub line: Option<usize>,
    /// One-based column, when known.
    pub column: Option<usize>,
    /// What is wrong, lowercase, user input in backticks.
    pub message: String,
    /// How to fix it.
    pub help: Option<String>,
}

impl TestFileError {
    /// An error at a position (or none) of a file.
    pub fn new(file: &str, at: Option<(usize, usize)>, message: impl Into<String>) -> Self {
        TestFileError {
            file: file.to_string(),
            line: at.map(|a| a.0),
            column: at.map(|a| a.1),
            message: message.into(),
            help: None,
        }
    }

    /// Sets the help line.
    #[must_use]
    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    /// `file:line:column`, or as much of it as is known.
    pub fn location(&self) -> String {
        match (self.line, self.column) {
            (Some(l), Some(c)) => format!("{}:{l}:{c}", self.file),
            (Some(l), None) => format!("{}:{l}", self.file),
            _ => self.file.clone(),
        }
    }

    /// Rendered for a terminal: `error: ...`, ` --> file:line:column`, `  = help: ...`.
    pub fn render(&self) -> String {
        let mut out = format!("error: {}\n --> {}\n", self.message, self.location());
        if let Some(help) = &self.help {
            out.push_str(&format!("  = help: {help}\n"));
        }
        out
    }
}

/// Separates a message from its help line inside a serde error string (serde errors carry one
/// string; the help is split off again in [`yaml_error`]).
const HELP_SEPARATOR: char = '\u{1f}';

const FORMAT_HELP: &str = "a test file is a list of cases (`name`, `given`, `expect`, `expect_absent`, `decisions`, `program`), or a mapping with `cases` and what they share; see rules/README.md";
const FACT_HELP: &str =
    "write a fact as Datalog text: `relation(\"a string\", 42)`, strings in double quotes";

/// Turns a YAML error into a located [`TestFileError`].
pub(super) fn yaml_error(file: &str, err: &serde_yaml::Error) -> TestFileError {
    let at = err.location().map(|l| (l.line(), l.column()));
    let mut text = err.to_string();
    if let Some((line, col)) = at {
        // The location is reported separately; drop it from the message.
        let suffix = format!(" at line {line} column {col}");
        if let Some(i) = text.find(&suffix) {
            text.replace_range(i..i + suffix.len(), "");
        }
    }
    // serde's path to the value starts with `.` for the top-level list (`.[0].given[1]`).
    let text = text.strip_prefix('.').map(str::to_string).unwrap_or(text);
    let (message, help) = match text.split_once(HELP_SEPARATOR) {
        Some((m, h)) => (m.to_string(), h.to_string()),
        None => (text, FORMAT_HELP.to_string()),
    };
    TestFileError::new(file, at, message).with_help(help)
}

/// A fact written in a test file: its text and the parsed fact. In `expect` and
/// `expect_absent` a value may be `_` (any value): `handoff_violation("h1", _, _)`.
#[derive(Debug, Clone, PartialEq)]
pub struct FactText {
    /// The text as written.
    pub text: String,
    /// The parsed fact; a `_` column holds a placeholder symbol.
    pub fact: Fact,
    /// Which columns were written `_`.
    pub wildcards: Vec<bool>,
}

impl FactText {
    /// Whether any column is `_`.
    pub fn has_wildcards(&self) -> bool {
        self.wildcards.iter().any(|w| *w)
    }
}

/// What a `_` column becomes before the fact parser (which takes literals only) reads it.
const WILDCARD: &str = "<<any value>>";

/// Replaces each `_` argument (outside string literals) by a placeholder literal.
fn mark_wildcards(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_string = false;
    let mut escaped = false;
    let chars: Vec<char> = text.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if in_string {
            in_string = c != '"' || escaped;
            escaped = c == '\\' && !escaped;
            out.push(c);
            continue;
        }
        let before = chars[..i].iter().rev().find(|c| !c.is_whitespace());
        let after = chars[i + 1..].iter().find(|c| !c.is_whitespace());
        if c == '_' && matches!(before, Some('(' | ',')) && matches!(after, Some(')' | ',')) {
            out.push('"');
            out.push_str(WILDCARD);
            out.push('"');
        } else {
            in_string = c == '"';
            out.push(c);
        }
    }
    out
}

impl<'de> Deserialize<'de> for FactText {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct FactVisitor;
        impl Visitor<'_> for FactVisitor {
            type Value = FactText;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a fact such as `run(\"r1\", \"coder\", \"T-1\", \"org:acme\")`")
            }
            // Parsing inside the visitor lets the YAML reader attach this scalar's position.
            fn visit_str<E: de::Error>(self, text: &str) -> Result<FactText, E> {
                match Fact::parse(&mark_wildcards(text)) {
                    Ok(fact) => Ok(FactText {
                        text: text.to_string(),
                        wildcards: fact
                            .values
                            .iter()
                            .map(|v| matches!(v, Value::Symbol(s) if &**s == WILDCARD))
                            .collect(),
                        fact,
                    }),
                    Err(d) => {
                        let (_, col) = Source::new("<fact>", text).line_col(d.span.start);
                        let help = d.help.as_deref().unwrap_or(FACT_HELP);
                        Err(E::custom(format!(
                            "bad fact `{text}`: {} (at character {col} of the fact){HELP_SEPARATOR}{help}",
                            d.message
                        )))
                    }
                }
            }
        }
        d.deserialize_str(FactVisitor)
    }
}

/// Which decision relation a `decisions:` entry checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DecisionKind {
    /// `tool_decision`.
    Tool,
    /// `context_decision`.
    Context,
    /// `model_decision`.
    Model,
}

impl DecisionKind {
    /// The relation holding these decisions.
    pub fn relation(self) -> &'static str {
        match self {
            DecisionKind::Tool => "tool_decision",
            DecisionKind::Context => "context_decision",
            DecisionKind::Model => "model_decision",
        }
    }

    /// The effects a decision of this kind can have.
    pub fn effects(self) -> &'static [Effect] {
        match self {
            DecisionKind::Tool => &[
                Effect::Allow,
                Effect::Deny,
                Effect::RequireApproval,
                Effect::RateLimited,
            ],
            DecisionKind::Context => &[Effect::See, Effect::Redact, Effect::Block],
            DecisionKind::Model => &[Effect::Allow, Effect::Deny],
        }
    }
}

/// A decision's effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Effect {
    /// Tool or model call allowed.
    Allow,
    /// Tool or model call denied.
    Deny,
    /// Tool call waits for a human.
    RequireApproval,
    /// Tool call over its rate limit.
    RateLimited,
    /// Context item shown.
    See,
    /// Context item shown redacted.
    Redact,
    /// Context item withheld.
    Block,
}

impl Effect {
    /// The symbol the packs use.
    pub fn as_str(self) -> &'static str {
        match self {
            Effect::Allow => "allow",
            Effect::Deny => "deny",
            Effect::RequireApproval => "require_approval",
            Effect::RateLimited => "rate_limited",
            Effect::See => "see",
            Effect::Redact => "redact",
            Effect::Block => "block",
        }
    }
}

/// One case as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaseSpec {
    /// What the case checks, unique within the file.
    pub name: String,
    /// Facts given to the program.
    #[serde(default)]
    pub given: Vec<FactText>,
    /// A user pack (`.dl` file or folder, relative to the test file) read with the vocabulary
    /// instead of the built-in packs.
    #[serde(default)]
    pub program: Option<String>,
    /// Envelope YAML files whose facts are added to `given`.
    #[serde(default)]
    pub envelopes: Vec<String>,
    /// Facts that must hold.
    #[serde(default)]
    pub expect: Vec<FactText>,
    /// Facts that must not hold.
    #[serde(default)]
    pub expect_absent: Vec<FactText>,
    /// Expected effects by kind and request id.
    #[serde(default)]
    pub decisions: BTreeMap<DecisionKind, BTreeMap<String, Effect>>,
}

/// The mapping form of a file: shared parts and the cases.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct SuiteSpec {
    #[serde(default)]
    given: Vec<FactText>,
    #[serde(default)]
    program: Option<String>,
    #[serde(default)]
    envelopes: Vec<String>,
    cases: Vec<CaseSpec>,
}

/// A whole file: the cases, with the shared parts of the mapping form.
#[derive(Debug, Clone, Default)]
pub struct TestFileSpec {
    /// Facts every case is given (before its own).
    pub given: Vec<FactText>,
    /// The program of every case that names none.
    pub program: Option<String>,
    /// Envelope files every case is given.
    pub envelopes: Vec<String>,
    /// The cases, in file order.
    pub cases: Vec<CaseSpec>,
}

impl<'de> Deserialize<'de> for TestFileSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct FileVisitor;
        impl<'de> Visitor<'de> for FileVisitor {
            type Value = TestFileSpec;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a list of test cases, or a mapping with `cases`")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<TestFileSpec, A::Error> {
                let mut cases = Vec::new();
                while let Some(case) = seq.next_element::<CaseSpec>()? {
                    cases.push(case);
                }
                Ok(TestFileSpec {
                    cases,
                    ..TestFileSpec::default()
                })
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<TestFileSpec, A::Error> {
                let suite = SuiteSpec::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(TestFileSpec {
                    given: suite.given,
                    program: suite.program,
                    envelopes: suite.envelopes,
                    cases: suite.cases,
                })
            }
        }
        d.deserialize_any(FileVisitor)
    }
}

/// Reads a test file's text.
pub(super) fn parse(file: &str, text: &str) -> Result<TestFileSpec, TestFileError> {
    serde_yaml::from_str(text).map_err(|e| yaml_error(file, &e))
}

/// The one-based line and column of a byte offset.
fn line_col(text: &str, at: usize) -> (usize, usize) {
    let before = &text[..at];
    let line = before.matches('\n').count() + 1;
    let col = before[before.rfind('\n').map_or(0, |i| i + 1)..]
        .chars()
        .count()
        + 1;
    (line, col)
}

/// The one-based line and column where `needle` first occurs in `text` at or after byte `from`
/// (else anywhere), for errors found after reading, such as an unknown relation: the YAML
/// reader keeps no positions.
pub(super) fn locate_from(text: &str, needle: &str, from: usize) -> Option<(usize, usize)> {
    let at = text
        .get(from..)
        .and_then(|rest| rest.find(needle))
        .map(|i| from + i)
        .or_else(|| text.find(needle))?;
    Some(line_col(text, at))
}

/// [`locate_from`] the start of the text.
pub(super) fn locate(text: &str, needle: &str) -> Option<(usize, usize)> {
    locate_from(text, needle, 0)
}

/// The byte offset of the line holding a case's `name:`.
pub(super) fn case_offset(text: &str, name: &str) -> Option<usize> {
    text.match_indices(name).find_map(|(i, _)| {
        let line_start = text[..i].rfind('\n').map_or(0, |j| j + 1);
        let prefix = text[line_start..i].trim_start_matches([' ', '-']);
        let prefix = prefix.trim_end_matches(['"', '\'']).trim_end();
        (prefix == "name:").then_some(line_start)
    })
}

/// Where a case starts: its `name:` line.
pub(super) fn locate_case(text: &str, name: &str) -> Option<(usize, usize)> {
    case_offset(text, name).map(|at| line_col(text, at))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[test]
    fn a_list_of_cases_reads_facts_and_decisions() {
        let spec = parse(
            "t.yaml",
            "- name: one\n  given:\n    - run(\"r1\", \"coder\", \"T-1\", \"org:acme\")\n  decisions:\n    tool: { q1: deny }\n",
        )
        .unwrap();
        assert_eq!(spec.cases.len(), 1);
        assert_eq!(spec.cases[0].given[0].fact.relation, "run");
        assert_eq!(
            spec.cases[0].decisions[&DecisionKind::Tool]["q1"],
            Effect::Deny
        );
    }

    #[test]
    fn the_mapping_form_shares_given_facts() {
        let spec = parse(
            "t.yaml",
            "given:\n  - now(5)\ncases:\n  - name: a\n  - name: b\n",
        )
        .unwrap();
        assert_eq!(spec.given.len(), 1);
        assert_eq!(spec.cases.len(), 2);
    }

    #[test]
    fn a_bad_fact_is_reported_at_its_line_and_column_with_help() {
        let text = "- name: one\n  given:\n    - now(5)\n    - run(\"r1\", coder)\n";
        let e = parse("t.yaml", text).unwrap_err();
        assert_eq!((e.line, e.column), (Some(4), Some(7)), "{e:?}");
        assert!(e.message.contains("bad fact `run(\"r1\", coder)`"), "{e:?}");
        assert!(!e.message.contains("at line"), "{e:?}");
        assert!(e.help.is_some());
    }

    #[test]
    fn an_unknown_field_and_an_unknown_effect_are_located() {
        let e = parse("t.yaml", "- name: one\n  expect_abscent: []\n").unwrap_err();
        assert_eq!(e.line, Some(2), "{e:?}");
        assert!(
            e.message.contains("unknown field `expect_abscent`"),
            "{e:?}"
        );
        let e = parse(
            "t.yaml",
            "- name: one\n  decisions:\n    tool: { q1: permit }\n",
        )
        .unwrap_err();
        assert_eq!(e.line, Some(3), "{e:?}");
        assert!(e.message.contains("unknown variant `permit`"), "{e:?}");
    }

    #[test]
    fn broken_yaml_is_located() {
        let e = parse("t.yaml", "- name: one\n  given: [\n").unwrap_err();
        assert!(e.line.is_some(), "{e:?}");
        assert!(e.render().contains(" --> t.yaml:"), "{}", e.render());
    }

    #[test]
    fn underscores_outside_strings_are_wildcards() {
        let spec = parse(
            "t.yaml",
            "- name: w\n  expect_absent:\n    - 'r(\"_\", _, \"a,_\", _ )'\n",
        )
        .unwrap();
        let f = &spec.cases[0].expect_absent[0];
        assert_eq!(f.wildcards, [false, true, false, true]);
        assert_eq!(f.fact.values[0], Value::sym("_"));
        assert_eq!(f.fact.values[2], Value::sym("a,_"));
    }

    #[test]
    fn cases_are_found_by_their_name_line() {
        let text = "- name: alpha\n  given: []\n- name: \"beta\"\n";
        assert_eq!(locate_case(text, "alpha"), Some((1, 1)));
        assert_eq!(locate_case(text, "beta"), Some((3, 1)));
    }
}
