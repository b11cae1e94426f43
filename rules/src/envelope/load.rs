//! Loading envelope files all-or-nothing: parse, check each document, then the checks across
//! envelopes (duplicate ids, duplicate rule ids, unknown parents, cycles in `extends`).

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt;

use tollgate_engine::ast::Span;
use tollgate_engine::diag::{LocatedDiagnostic, codes};
use tollgate_engine::{Diagnostic, Source};

use super::EnvelopeSet;
use super::check::{CheckedEnvelope, check_document, closest};
use super::format::PolicyEnvelope;
use super::yaml::{Node, Value, parse_documents};

/// Envelope files that did not load: every problem found, with the joined source of all the
/// files (spans point into it; each diagnostic still names its own file and line).
#[derive(Debug, Clone, PartialEq)]
pub struct EnvelopeErrors {
    /// The files, joined.
    pub source: Source,
    /// Every problem, in file order.
    pub diagnostics: Vec<Diagnostic>,
}

impl EnvelopeErrors {
    /// Every diagnostic rendered rustc-style (file:line:column, the line, a caret, help).
    pub fn render(&self) -> String {
        self.diagnostics
            .iter()
            .map(|d| d.render(&self.source))
            .collect()
    }

    /// Every diagnostic resolved to file, line and column, for JSON output.
    pub fn located(&self) -> Vec<LocatedDiagnostic> {
        self.diagnostics
            .iter()
            .map(|d| d.located(&self.source))
            .collect()
    }
}

impl fmt::Display for EnvelopeErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.render())
    }
}

impl std::error::Error for EnvelopeErrors {}

/// An envelope that passed its own checks.
struct Loaded {
    checked: CheckedEnvelope,
}

/// Loads envelopes from `(file name, text)` pairs (YAML or JSON; a YAML file may hold several
/// envelopes as `---`-separated documents). All or nothing: any problem in any file fails the
/// whole load with every problem found.
pub fn load_envelopes<N: AsRef<str>, T: AsRef<str>>(
    sources: &[(N, T)],
) -> Result<EnvelopeSet, EnvelopeErrors> {
    let files: Vec<Source> = sources
        .iter()
        .map(|(n, t)| Source::new(n.as_ref(), t.as_ref()))
        .collect();
    let joined = Source::join(&files);
    let mut diags = Vec::new();
    let mut loaded: Vec<Loaded> = Vec::new();
    // Ids written anywhere, even in envelopes that fail other checks, so that a child of a
    // broken parent is not also reported as extending an unknown envelope.
    let mut declared: BTreeSet<String> = BTreeSet::new();
    let mut base = 0usize;
    let mut ends_with_newline = false;
    for file in &files {
        let docs = match parse_documents(&file.text, base) {
            Ok(docs) => docs,
            Err(d) => {
                diags.push(*d);
                Vec::new()
            }
        };
        let had_error = diags.last().is_some_and(|d| d.span.start as usize >= base);
        if docs.is_empty() && !had_error {
            diags.push(
                Diagnostic::error(
                    codes::ENVELOPE_EMPTY,
                    format!("`{}` holds no envelope", file.name),
                    Span::new(base, base),
                )
                .with_help("write an envelope: `id: my-envelope`, `version: 1`, then its rules"),
            );
        }
        for doc in &docs {
            if let Some(id) = written_id(doc) {
                declared.insert(id);
            }
            if let Some(checked) = check_document(doc, &mut diags) {
                loaded.push(Loaded { checked });
            }
        }
        // `Source::join` ends every file with a newline: mirror it to know where the next
        // file starts.
        base += file.text.len();
        if !file.text.is_empty() {
            ends_with_newline = file.text.ends_with('\n');
        }
        if !ends_with_newline {
            base += 1;
            ends_with_newline = true;
        }
    }
    check_rule_ids(&loaded, &mut diags);
    let unique = check_duplicate_ids(loaded, &mut diags);
    check_parents(&unique, &declared, &mut diags);
    check_cycles(&unique, &mut diags);
    if !diags.is_empty() {
        diags.sort_by_key(|d| d.span.start);
        return Err(EnvelopeErrors {
            source: joined,
            diagnostics: diags,
        });
    }
    Ok(EnvelopeSet::new(
        unique.into_values().map(|l| l.checked.envelope).collect(),
    ))
}

/// The `id` of a document if it is written as text.
fn written_id(doc: &Node) -> Option<String> {
    doc.as_map()?.iter().find_map(|(k, v)| match &v.value {
        Value::Str(s) if k.name == "id" => Some(s.clone()),
        _ => None,
    })
}

fn check_rule_ids(loaded: &[Loaded], diags: &mut Vec<Diagnostic>) {
    for l in loaded {
        let mut seen: BTreeMap<&str, Span> = BTreeMap::new();
        for (id, span) in &l.checked.spans.rules {
            if let Some(first) = seen.get(id.as_str()) {
                diags.push(
                    Diagnostic::error(
                        codes::ENVELOPE_DUPLICATE_RULE,
                        format!(
                            "rule id `{id}` is used twice in envelope `{}`",
                            l.checked.envelope.id
                        ),
                        *span,
                    )
                    .with_label("second use")
                    .with_secondary(*first, "first used here")
                    .with_help("give each rule of an envelope its own `id` (decisions and receipts name rules by `ENVELOPE/RULE`)"),
                );
            } else {
                seen.insert(id, *span);
            }
        }
    }
}

/// Keeps the first envelope of each id, reporting the others.
fn check_duplicate_ids(
    loaded: Vec<Loaded>,
    diags: &mut Vec<Diagnostic>,
) -> BTreeMap<String, Loaded> {
    let mut unique: BTreeMap<String, Loaded> = BTreeMap::new();
    for l in loaded {
        let id = l.checked.envelope.id.clone();
        if let Some(first) = unique.get(&id) {
            diags.push(
                Diagnostic::error(
                    codes::ENVELOPE_DUPLICATE_ID,
                    format!("envelope id `{id}` is defined twice"),
                    l.checked.spans.id,
                )
                .with_label("second definition")
                .with_secondary(first.checked.spans.id, "first defined here")
                .with_help("give each envelope its own id; to change an envelope, edit it and raise its `version`"),
            );
        } else {
            unique.insert(id, l);
        }
    }
    unique
}

fn check_parents(
    unique: &BTreeMap<String, Loaded>,
    declared: &BTreeSet<String>,
    diags: &mut Vec<Diagnostic>,
) {
    let known: Vec<&str> = declared.iter().map(String::as_str).collect();
    for l in unique.values() {
        let env = &l.checked.envelope;
        for (parent, span) in env.extends.iter().zip(&l.checked.spans.extends) {
            if declared.contains(parent) {
                continue;
            }
            let help = match closest(parent, &known) {
                Some(s) => {
                    format!("did you mean `{s}`? or load the file that defines `{parent}` too")
                }
                None => format!(
                    "load the file that defines `{parent}` too, or remove it from `extends`"
                ),
            };
            diags.push(
                Diagnostic::error(
                    codes::ENVELOPE_UNKNOWN_PARENT,
                    format!("envelope `{}` extends unknown envelope `{parent}`", env.id),
                    *span,
                )
                .with_label("no envelope has this id")
                .with_help(help),
            );
        }
    }
}

/// Reports each cycle of `extends` once, naming every envelope on it.
fn check_cycles(unique: &BTreeMap<String, Loaded>, diags: &mut Vec<Diagnostic>) {
    let edges = |id: &str| -> Vec<&str> {
        unique
            .get(id)
            .map(|l| {
                l.checked
                    .envelope
                    .extends
                    .iter()
                    .filter(|p| unique.contains_key(p.as_str()))
                    .map(String::as_str)
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut reported: BTreeSet<&str> = BTreeSet::new();
    for start in unique.keys() {
        let start = start.as_str();
        if reported.contains(start) {
            continue;
        }
        let Some(cycle) = shortest_cycle(start, &edges) else {
            continue;
        };
        // Only report from the smallest id on the cycle, so each cycle is reported once.
        if cycle.iter().min() != Some(&start) {
            continue;
        }
        reported.extend(cycle.iter().copied());
        let span_of = |from: &str, to: &str| -> Option<Span> {
            let l = unique.get(from)?;
            let i = l.checked.envelope.extends.iter().position(|p| p == to)?;
            l.checked.spans.extends.get(i).copied()
        };
        let next = |i: usize| cycle[(i + 1) % cycle.len()];
        let Some(primary) = span_of(cycle[0], next(0)) else {
            continue;
        };
        let names = name_list(&cycle);
        let path = cycle
            .iter()
            .chain(std::iter::once(&cycle[0]))
            .copied()
            .collect::<Vec<_>>()
            .join(" -> ");
        let message = if cycle.len() == 1 {
            format!("envelope `{}` extends itself", cycle[0])
        } else {
            format!("envelopes {names} extend each other in a cycle")
        };
        let mut d = Diagnostic::error(codes::ENVELOPE_CYCLE, message, primary)
            .with_label(format!("`{}` extends `{}`", cycle[0], next(0)))
            .with_help(format!(
                "an envelope cannot inherit from itself: remove one `extends` entry of the cycle {path}"
            ));
        for (i, from) in cycle.iter().enumerate().skip(1) {
            if let Some(span) = span_of(from, next(i)) {
                d = d.with_secondary(span, format!("`{from}` extends `{}`", next(i)));
            }
        }
        diags.push(d);
    }
}

/// The shortest path of `extends` edges from `start` back to itself, as the list of
/// envelopes on it (starting with `start`), if any.
fn shortest_cycle<'a>(
    start: &'a str,
    edges: &impl Fn(&str) -> Vec<&'a str>,
) -> Option<Vec<&'a str>> {
    let mut previous: BTreeMap<&str, &str> = BTreeMap::new();
    let mut queue = VecDeque::from([start]);
    while let Some(at) = queue.pop_front() {
        for next in edges(at) {
            if next == start {
                let mut path = vec![at];
                let mut cur = at;
                while cur != start {
                    cur = previous.get(cur).copied()?;
                    path.push(cur);
                }
                path.reverse();
                return Some(path);
            }
            if !previous.contains_key(next) {
                previous.insert(next, at);
                queue.push_back(next);
            }
        }
    }
    None
}

/// "`a`, `b` and `c`".
fn name_list(ids: &[&str]) -> String {
    let quoted: Vec<String> = ids.iter().map(|i| format!("`{i}`")).collect();
    match quoted.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        Some((last, _)) => last.clone(),
        None => String::new(),
    }
}

impl EnvelopeSet {
    /// Builds a set from envelopes made in code or read as JSON elsewhere, with the same
    /// checks as [`load_envelopes`] (each envelope is shown as `<envelope ID>` in
    /// diagnostics).
    pub fn from_envelopes(envelopes: &[PolicyEnvelope]) -> Result<EnvelopeSet, EnvelopeErrors> {
        let sources: Vec<(String, String)> = envelopes
            .iter()
            .map(|e| {
                (
                    format!("<envelope {}>", e.id),
                    serde_json::to_string_pretty(e).unwrap_or_default(),
                )
            })
            .collect();
        load_envelopes(&sources)
    }
}
