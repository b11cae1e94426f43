//! Reading typed values out of YAML nodes, each with its diagnostic: mappings with known keys
//! (unknown ones get a did-you-mean), text, ids, integers, lists, globs and fixed choices.

use serde_json::Value as Json;
use tollgate_engine::Diagnostic;
use tollgate_engine::diag::{Code, codes};
use tollgate_engine::functions::compile_glob;

use super::super::yaml::{Key, Node, Value};
use super::{Checker, Shape};

const GLOB_HELP: &str = "in a glob, `*` matches within a `/` segment, `**` across segments, `?` one character, `[abc]` a class and `{a,b}` alternatives; escape a literal character with `\\`";

/// A mapping's entries by key, nulls left out (a key written with no value counts as absent).
pub(super) struct Fields<'n> {
    pub(super) node: &'n Node,
    entries: Vec<(&'n Key, &'n Node)>,
    /// Keys suggested for unknown ones (`tools` for `tool`): not also reported missing.
    pub(super) suggested: Vec<&'static str>,
}

impl<'n> Fields<'n> {
    pub(super) fn get(&self, key: &str) -> Option<&'n Node> {
        self.entries
            .iter()
            .find(|(k, _)| k.name == key)
            .map(|(_, v)| *v)
    }

    pub(super) fn key(&self, key: &str) -> Option<&'n Key> {
        self.entries
            .iter()
            .find(|(k, _)| k.name == key)
            .map(|(k, _)| *k)
    }
}

impl Checker<'_> {
    pub(super) fn fields<'n>(&mut self, node: &'n Node, shape: &Shape) -> Option<Fields<'n>> {
        let Some(entries) = node.as_map() else {
            self.wrong_type(
                node,
                shape.what,
                "a mapping",
                &format!(
                    "write {} as a mapping, e.g. `{}`",
                    shape.what, shape.example
                ),
            );
            return None;
        };
        let mut fields = Fields {
            node,
            entries: Vec::new(),
            suggested: Vec::new(),
        };
        for (k, v) in entries {
            if !shape.keys.contains(&k.name.as_str()) {
                let keys = shape
                    .keys
                    .iter()
                    .map(|k| format!("`{k}`"))
                    .collect::<Vec<_>>()
                    .join(", ");
                let help = match closest(&k.name, shape.keys) {
                    Some(s) => {
                        fields.suggested.push(s);
                        format!("did you mean `{s}`? {} has {keys}", shape.what)
                    }
                    None => format!("{} has {keys}", shape.what),
                };
                self.diags.push(
                    Diagnostic::error(
                        codes::ENVELOPE_UNKNOWN_KEY,
                        format!("unknown key `{}` in {}", k.name, shape.what),
                        k.span,
                    )
                    .with_label("unknown key")
                    .with_help(help),
                );
                continue;
            }
            if v.value != Value::Null {
                fields.entries.push((k, v));
            }
        }
        Some(fields)
    }

    pub(super) fn require<'n>(
        &mut self,
        fields: &Fields<'n>,
        key: &str,
        shape: &Shape,
        help: &str,
    ) -> Option<&'n Node> {
        let found = fields.get(key);
        if found.is_none() && !fields.suggested.contains(&key) {
            let span = fields.key(key).map_or(fields.node.span, |k| k.span);
            self.diags.push(
                Diagnostic::error(
                    codes::ENVELOPE_MISSING_KEY,
                    format!("{} needs `{key}`", shape.what),
                    span,
                )
                .with_label(format!("`{key}` missing here"))
                .with_help(help.to_string()),
            );
        }
        found
    }

    pub(super) fn wrong_type(&mut self, node: &Node, what: &str, expected: &str, help: &str) {
        self.diags.push(
            Diagnostic::error(
                codes::ENVELOPE_TYPE,
                format!("{what} must be {expected}, found {}", node.kind_name()),
                node.span,
            )
            .with_label(format!("expected {expected}"))
            .with_help(help.to_string()),
        );
    }

    pub(super) fn empty(&mut self, node: &Node, what: &str, help: &str) {
        self.diags.push(
            Diagnostic::error(
                codes::ENVELOPE_EMPTY,
                format!("{what} must not be empty"),
                node.span,
            )
            .with_label("empty")
            .with_help(help.to_string()),
        );
    }

    pub(super) fn text(&mut self, node: &Node, what: &str) -> Option<String> {
        match &node.value {
            Value::Str(s) => Some(s.clone()),
            _ => {
                let help = match &node.value {
                    Value::Int(_) | Value::Float(_) | Value::Bool(_) => {
                        "quote it to make it text: `\"...\"`".to_string()
                    }
                    _ => "write a single value on the same line as the key".to_string(),
                };
                self.wrong_type(node, what, "text", &help);
                None
            }
        }
    }

    /// An envelope, rule or attachment id: non-empty, without spaces or `/` (which joins
    /// envelope and rule ids).
    pub(super) fn id(&mut self, node: &Node, what: &str) -> Option<String> {
        let id = self.text(node, what)?;
        if id.is_empty() || id.contains('/') || id.chars().any(char::is_whitespace) {
            self.diags.push(
                Diagnostic::error(
                    codes::ENVELOPE_BAD_ID,
                    format!("{what} `{id}` is not a valid id"),
                    node.span,
                )
                .with_label("invalid id")
                .with_help("ids are non-empty and have no spaces and no `/` (it joins envelope and rule ids: `coding-agent/read-only`)"),
            );
            return None;
        }
        Some(id)
    }

    pub(super) fn ids(&mut self, node: &Node, what: &str) -> Option<Json> {
        let items = self.list(node, what, "agents: [coder]")?;
        let mut out = Vec::new();
        for item in items {
            match self.text(item, &format!("an entry of {what}")) {
                Some(t) if !t.is_empty() => out.push(Json::String(t)),
                Some(_) => {
                    self.empty(item, &format!("an entry of {what}"), "write an id");
                }
                None => {}
            }
        }
        Some(Json::Array(out))
    }

    pub(super) fn integer(
        &mut self,
        node: &Node,
        what: &str,
        min: i64,
        example: &str,
    ) -> Option<i64> {
        let Value::Int(n) = node.value else {
            let help = match &node.value {
                Value::Str(s) if s.trim().parse::<i64>().is_ok() => {
                    format!("remove the quotes: `{example}`")
                }
                _ => format!("write a whole number: `{example}`"),
            };
            self.wrong_type(node, what, "an integer", &help);
            return None;
        };
        if n < min || n > i64::from(i32::MAX) {
            self.diags.push(
                Diagnostic::error(
                    codes::ENVELOPE_RANGE,
                    format!("{what} must be between {min} and {}, found `{n}`", i32::MAX),
                    node.span,
                )
                .with_label("out of range")
                .with_help(format!("for example `{example}`")),
            );
            return None;
        }
        Some(n)
    }

    pub(super) fn boolean(&mut self, node: &Node, what: &str, example: &str) -> Option<bool> {
        match &node.value {
            Value::Bool(b) => Some(*b),
            Value::Str(s) if matches!(s.as_str(), "true" | "false") => {
                let help = format!("remove the quotes: `{example}`");
                self.wrong_type(node, what, "true or false", &help);
                None
            }
            _ => {
                self.wrong_type(node, what, "true or false", &format!("write `{example}`"));
                None
            }
        }
    }

    pub(super) fn list<'n>(
        &mut self,
        node: &'n Node,
        what: &str,
        example: &str,
    ) -> Option<&'n [Node]> {
        match &node.value {
            Value::Seq(items) => Some(items),
            _ => {
                self.wrong_type(
                    node,
                    what,
                    "a list",
                    &format!("write a list, e.g. `{example}`"),
                );
                None
            }
        }
    }

    pub(super) fn texts(&mut self, node: &Node, what: &str) -> Option<Json> {
        let items = self.list(node, what, &format!("{}: [a, b]", what.trim_matches('`')))?;
        let mut out = Vec::new();
        let mut ok = true;
        for item in items {
            match self.text(item, &format!("an entry of {what}")) {
                Some(t) => out.push(Json::String(t)),
                None => ok = false,
            }
        }
        ok.then_some(Json::Array(out))
    }

    /// A non-empty list of valid globs.
    pub(super) fn globs(&mut self, node: &Node, what: &str) -> Option<Json> {
        let items = self.list(
            node,
            what,
            &format!("{}: [\"fs.read*\"]", what.trim_matches('`')),
        )?;
        if items.is_empty() {
            self.empty(
                node,
                what,
                "a rule with no patterns matches nothing: add a pattern or remove the rule",
            );
            return None;
        }
        let mut out = Vec::new();
        let mut ok = true;
        for item in items {
            match self.glob(item, &format!("an entry of {what}")) {
                Some(g) => out.push(Json::String(g)),
                None => ok = false,
            }
        }
        ok.then_some(Json::Array(out))
    }

    pub(super) fn glob(&mut self, node: &Node, what: &str) -> Option<String> {
        let pattern = self.text(node, what)?;
        if let Some(problem) = too_complex(&pattern) {
            self.diags.push(
                Diagnostic::error(
                    codes::ENVELOPE_GLOB_COMPLEX,
                    format!("glob pattern is too complex: {problem}"),
                    node.span,
                )
                .with_label("too complex")
                .with_help(format!(
                    "a pattern has at most {MAX_PATTERN_BYTES} bytes and {MAX_PATTERN_WILDCARDS} wildcards (`*`, `?`, `[`, `{{`): every decision matches it, so one pathological pattern would slow every call; split it into several rules"
                )),
            );
            return None;
        }
        if let Err(e) = compile_glob(&pattern) {
            self.diags.push(
                Diagnostic::error(
                    codes::ENVELOPE_GLOB,
                    format!("invalid glob pattern `{pattern}`: {}", glob_reason(&e)),
                    node.span,
                )
                .with_label("invalid pattern")
                .with_help(GLOB_HELP),
            );
            return None;
        }
        Some(pattern)
    }

    pub(super) fn effect(
        &mut self,
        node: &Node,
        rule_kind: &str,
        options: &[&'static str],
    ) -> Option<&'static str> {
        self.choice(
            node,
            codes::ENVELOPE_UNKNOWN_EFFECT,
            &format!("{rule_kind} rule effect"),
            options,
        )
    }

    pub(super) fn choice(
        &mut self,
        node: &Node,
        code: Code,
        what: &str,
        options: &[&'static str],
    ) -> Option<&'static str> {
        let text = self.text(node, &format!("the {what}"))?;
        if let Some(found) = options.iter().find(|o| **o == text) {
            return Some(found);
        }
        let listed = options
            .iter()
            .map(|o| format!("`{o}`"))
            .collect::<Vec<_>>()
            .join(", ");
        let help = match closest(&text, options) {
            Some(s) => format!("did you mean `{s}`? a {what} is one of {listed}"),
            None => format!("a {what} is one of {listed}"),
        };
        self.diags.push(
            Diagnostic::error(code, format!("unknown {what} `{text}`"), node.span)
                .with_label(format!("not a {what}"))
                .with_help(help),
        );
        None
    }
}

/// The longest glob pattern an envelope may hold, in bytes.
pub(crate) const MAX_PATTERN_BYTES: usize = 1024;

/// The most wildcards (`*` runs, `?`, `[`, `{`) a glob pattern may hold.
pub(crate) const MAX_PATTERN_WILDCARDS: usize = 32;

/// Why a pattern is too complex to match on every decision, if it is (issue 32, hole 7: a deny
/// rule whose pattern was `*a` repeated 20,000 times cost seconds per decision).
pub(crate) fn too_complex(pattern: &str) -> Option<String> {
    if pattern.len() > MAX_PATTERN_BYTES {
        return Some(format!(
            "{} bytes, more than {MAX_PATTERN_BYTES}",
            pattern.len()
        ));
    }
    let mut wildcards = 0;
    let mut previous = '\0';
    let mut escaped = false;
    for c in pattern.chars() {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if matches!(c, '?' | '[' | '{') || (c == '*' && previous != '*') {
            wildcards += 1;
        }
        previous = c;
    }
    (wildcards > MAX_PATTERN_WILDCARDS)
        .then(|| format!("{wildcards} wildcards, more than {MAX_PATTERN_WILDCARDS}"))
}

/// globset's message without its `error parsing glob '...': ` prefix (the pattern is
/// already in the message).
fn glob_reason(error: &str) -> &str {
    error.rsplit_once("': ").map_or(error, |(_, reason)| reason)
}

/// RFC 6901: empty or `/`-led, with `~` only in `~0` and `~1`. The empty pointer (the whole
/// arguments object) is not a scalar, so it is not accepted here.
pub(super) fn is_json_pointer(pointer: &str) -> bool {
    if !pointer.starts_with('/') {
        return false;
    }
    let mut chars = pointer.chars();
    while let Some(c) = chars.next() {
        if c == '~' && !matches!(chars.next(), Some('0' | '1')) {
            return false;
        }
    }
    true
}

/// The candidate closest to `word`: a prefix of it or it of the candidate (`scope` for
/// `scopes`, `ttl` for `ttl_seconds`), else within a small edit distance.
pub fn closest<'a>(word: &str, candidates: &[&'a str]) -> Option<&'a str> {
    let lower = word.to_lowercase();
    if lower.len() >= 3
        && let Some(c) = candidates
            .iter()
            .find(|c| c.starts_with(&lower) || lower.starts_with(**c))
    {
        return Some(c);
    }
    let limit = if lower.chars().count() >= 5 { 2 } else { 1 };
    candidates
        .iter()
        .map(|c| (edit_distance(&lower, c), *c))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// Edits (insert, delete, replace, or swap two neighbours: `evn` for `env` is one) from `a`
/// to `b` — the optimal string alignment distance.
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = best;
        }
    }
    d[a.len()][b.len()]
}
