//! Failure signatures: a tag that clusters similar failures across cases. Two failures share
//! a signature when the same kinds of assertion failed at the same places, expecting the same
//! short values: a call's decision that was `deny` and is no longer, the tool path, the
//! blocked items. Indices and call ids are taken out of paths (`$.calls[3]` and
//! `$.calls[?@.call == 'call-2-0']` are one place), so a policy change that lets every denied
//! call through gives one signature however many cases and calls it touches. Drift is part of
//! the signature: a failure that comes with drift (the build changed what was compiled or
//! decided) is told from one without.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::CaseResult;

/// A tag clustering similar failures.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct FailureSignature {
    /// `sig-` and 10 hex digits of the hash of its parts.
    pub id: String,
    /// What failed, in words: the normalised parts, `; `-joined.
    pub summary: String,
}

/// The signature of a failed result.
pub fn signature(result: &CaseResult) -> FailureSignature {
    let mut parts = BTreeSet::new();
    for a in result.failures() {
        let path = a.path.as_deref().map(normalise).unwrap_or_default();
        let expected = a.expected.as_ref().and_then(short_word);
        let mut part = format!("{} {}", a.class, a.kind);
        if !path.is_empty() {
            part.push(' ');
            part.push_str(&path);
        }
        if let Some(v) = expected {
            part.push_str(&format!(" (expected {v})"));
        }
        parts.insert(part);
    }
    if result.drift {
        parts.insert("drift".to_string());
    }
    let summary = parts.into_iter().collect::<Vec<_>>().join("; ");
    let hash = blake3::hash(summary.as_bytes()).to_hex();
    FailureSignature {
        id: format!("sig-{}", &hash[..10]),
        summary,
    }
}

/// A path with indices and quoted names replaced by `*`.
fn normalise(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    let mut chars = path.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '[' if chars.peek().is_some_and(char::is_ascii_digit) => {
                while chars.peek().is_some_and(char::is_ascii_digit) {
                    chars.next();
                }
                out.push_str("[*");
            }
            '\'' | '"' => {
                for d in chars.by_ref() {
                    if d == c {
                        break;
                    }
                }
                out.push_str("'*'");
            }
            _ => out.push(c),
        }
    }
    out
}

/// An expected value that is a short bare word (a decision, a status): long or structured
/// values would split clusters on detail.
fn short_word(value: &serde_json::Value) -> Option<String> {
    let word = value.as_str()?;
    (!word.is_empty()
        && word.len() <= 24
        && word.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
    .then(|| word.to_string())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use crate::regress::case::AssertionClass;
    use crate::regress::execute::AssertionResult;

    fn failed(path: &str, expected: &str) -> CaseResult {
        CaseResult {
            case: "c".into(),
            version: 1,
            name: "c".into(),
            agent: "coder".into(),
            task_type: "bugfix".into(),
            target: "recorded".into(),
            passed: false,
            drift: false,
            drift_detail: None,
            assertions: vec![AssertionResult {
                class: AssertionClass::Policy,
                index: 0,
                kind: "json_path_equals".into(),
                path: Some(path.into()),
                expected: Some(serde_json::json!(expected)),
                passed: false,
                message: format!("expected `{path}` to be `{expected}`"),
            }],
            signature: None,
            duration_ms: 0.0,
        }
    }

    #[test]
    fn the_same_change_at_different_calls_is_one_signature() {
        let a = failed("$.calls[?@.call == 'call-3-0'].effect", "deny");
        let b = failed("$.calls[?@.call == 'call-9-1'].effect", "deny");
        assert_eq!(signature(&a), signature(&b));
        assert_eq!(
            signature(&a).summary,
            "policy json_path_equals $.calls[?@.call == '*'].effect (expected deny)"
        );
    }

    #[test]
    fn a_change_the_other_way_is_another_signature() {
        let a = failed("$.calls[2].effect", "deny");
        let b = failed("$.calls[5].effect", "allow");
        assert_ne!(signature(&a).id, signature(&b).id);
        let mut drifted = a.clone();
        drifted.drift = true;
        assert_ne!(signature(&a).id, signature(&drifted).id);
    }
}
