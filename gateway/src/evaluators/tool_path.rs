//! `tool_path`: the sequence of tools an agent called, against the expected one.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::{EvalOutcome, EvalSubject, Evaluator, quote};

/// How called tools are compared with the expected ones.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ToolPathMode {
    /// The same tools in the same order, nothing more.
    #[default]
    Exact,
    /// The expected tools appear in this order; other calls may come between them.
    Subsequence,
    /// The same set of tools, whatever the order and however many times each.
    Set,
}

impl ToolPathMode {
    fn as_str(self) -> &'static str {
        match self {
            ToolPathMode::Exact => "exact",
            ToolPathMode::Subsequence => "subsequence",
            ToolPathMode::Set => "set",
        }
    }
}

/// Passes when the subject's tool path matches the expected tools under a [`ToolPathMode`].
#[derive(Debug, Clone)]
pub struct ToolPathMatch {
    name: String,
    expected: Vec<String>,
    mode: ToolPathMode,
}

impl ToolPathMatch {
    /// An evaluator for `expected` under `mode`. An empty `expected` in `exact` or `set` mode
    /// asserts that no tool was called; in `subsequence` mode it always passes.
    pub fn new(expected: Vec<String>, mode: ToolPathMode) -> ToolPathMatch {
        ToolPathMatch {
            name: format!("tool_path({})", mode.as_str()),
            expected,
            mode,
        }
    }
}

impl Evaluator for ToolPathMatch {
    fn name(&self) -> &str {
        &self.name
    }

    fn evaluate(&self, subject: &EvalSubject) -> EvalOutcome {
        let called = &subject.tool_path;
        let failure = match self.mode {
            ToolPathMode::Exact => exact(&self.expected, called),
            ToolPathMode::Subsequence => subsequence(&self.expected, called),
            ToolPathMode::Set => set(&self.expected, called),
        };
        match failure {
            None => EvalOutcome::pass(
                &self.name,
                format!("the tools called {} match", sequence(called)),
            ),
            Some(why) => EvalOutcome::fail(&self.name, why),
        }
    }
}

/// `[a, b, c]`.
fn sequence(tools: &[String]) -> String {
    quote(&format!("[{}]", tools.join(", ")))
}

fn exact(expected: &[String], called: &[String]) -> Option<String> {
    let first_difference = expected
        .iter()
        .zip(called)
        .position(|(e, c)| e != c)
        .or_else(|| (expected.len() != called.len()).then(|| expected.len().min(called.len())))?;
    let at = first_difference;
    let detail = match (expected.get(at), called.get(at)) {
        (Some(e), Some(c)) => format!("call {} is `{c}`, expected `{e}`", at + 1),
        (Some(e), None) => format!("call {} to `{e}` is missing", at + 1),
        // Past the end of `expected`, so `called` is the longer one.
        (None, extra) => format!(
            "call {} to `{}` is extra",
            at + 1,
            extra.map_or("", String::as_str)
        ),
    };
    Some(format!(
        "expected the tools {} in this order; called {}: {detail}",
        sequence(expected),
        sequence(called)
    ))
}

fn subsequence(expected: &[String], called: &[String]) -> Option<String> {
    // Greedy matching finds the expected sequence if it is there at all.
    let mut calls = called.iter();
    for (i, want) in expected.iter().enumerate() {
        if !calls.by_ref().any(|c| c == want) {
            let after = match i.checked_sub(1).and_then(|p| expected.get(p)) {
                Some(prev) => format!(" after `{prev}`"),
                None => String::new(),
            };
            return Some(format!(
                "expected the tools {} in this order, other calls allowed between them; called {}: no call to `{want}`{after}",
                sequence(expected),
                sequence(called)
            ));
        }
    }
    None
}

fn set(expected: &[String], called: &[String]) -> Option<String> {
    let want: BTreeSet<&str> = expected.iter().map(String::as_str).collect();
    let got: BTreeSet<&str> = called.iter().map(String::as_str).collect();
    if want == got {
        return None;
    }
    let missing: Vec<&str> = want.difference(&got).copied().collect();
    let extra: Vec<&str> = got.difference(&want).copied().collect();
    let mut parts = Vec::new();
    if !missing.is_empty() {
        parts.push(format!("never called `{}`", missing.join("`, `")));
    }
    if !extra.is_empty() {
        parts.push(format!("also called `{}`", extra.join("`, `")));
    }
    Some(format!(
        "expected the set of tools {{{}}}; called {}: {}",
        want.into_iter().collect::<Vec<_>>().join(", "),
        sequence(called),
        parts.join(", ")
    ))
}
