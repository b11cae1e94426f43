//! Secrets: the detectors and the span redactor, the one place that says what a secret looks
//! like and how it is hidden. The compiler redacts context items with it (an item whose
//! policy decision is `redact`), the tool endpoint scans and redacts JSON arguments, and the
//! model proxy scans and redacts messages and the arguments of their tool calls.
//!
//! Built-in detectors find secrets: private key blocks, the token formats of the table shared
//! with the fixture scrubber ([`formats`]: cloud keys, service tokens by their prefixes), URL
//! passwords, and what follows a name that says it holds one (`password=`, `token :=`,
//! `<secret>`, `Authorization:`, a JSON field `"api_key"`). Each span found is replaced by `[REDACTED:<rule ids>]`; overlapping spans are
//! merged first. When no detector finds anything, the whole text is replaced by one marker:
//! policy said the item holds something to hide, and not finding it is no reason to show it.

#[cfg(test)]
mod corpus_tests;
pub(crate) mod formats;
#[cfg(test)]
mod gitleaks_tests;
pub mod scrub;

use std::sync::LazyLock;

use regex::{Regex, RegexSet};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Which part of an item a span was cut from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BodyPart {
    /// The item's content.
    Content,
    /// Its reference (rendered when it has no content).
    Reference,
    /// Its summary.
    Summary,
}

impl BodyPart {
    /// `content`, `reference`, `summary`.
    pub fn as_str(self) -> &'static str {
        match self {
            BodyPart::Content => "content",
            BodyPart::Reference => "reference",
            BodyPart::Summary => "summary",
        }
    }
}

/// One replaced span of what was rendered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RedactedSpan {
    /// The part it was cut from.
    pub part: BodyPart,
    /// Byte offset of its start in the original part.
    pub start: usize,
    /// Byte offset just past its end in the original part.
    pub end: usize,
    /// The detector that found it (`aws_access_key`, ...), or `whole` when nothing was found
    /// and the whole part was replaced.
    pub detector: String,
    /// The marker it was replaced with names these rules (comma-separated).
    pub rule: String,
}

/// The detector name of a whole-part replacement.
pub const WHOLE: &str = "whole";

struct Detector {
    name: &'static str,
    regex: Regex,
    /// The capture group that is the secret (0: the whole match).
    group: usize,
    /// What a match must also pass ([`formats::is_secret`]).
    check: formats::Check,
}

/// A PEM private key block. An unterminated block is cut to the end: half a key is still a
/// key. (Shared with [`scrub`].)
pub(crate) const PRIVATE_KEY: &str =
    r"(?s)-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\z)";
/// The password of a URL's user information (`postgres://user:PASSWORD@host`, or with no user
/// name), group 1. Brackets, `?`, `#` and quotes cannot be in user information (RFC 3986), so
/// a marker put there (`[REDACTED:rule]@`), a port before a query (`host:8080?to=a@b`) or two
/// URLs of one JSON text are not taken for one. (Shared with [`scrub`].)
pub(crate) const URL_PASSWORD: &str =
    r#"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s:/@\[\]?#"]*:([^\s@/\[\]?#"]+)@"#;

/// The live detectors: private keys, every token format of the shared table
/// ([`formats::TOKENS`]), URL passwords, then the shapes a secret is written in
/// ([`formats::SHAPES`]). Earlier detectors name a span when two overlap.
static DETECTORS: LazyLock<Vec<Detector>> = LazyLock::new(|| {
    let head: [formats::Format; 1] = [("private_key", PRIVATE_KEY, 0, formats::Check::Format)];
    let url: [formats::Format; 1] = [("url_password", URL_PASSWORD, 1, formats::Check::Format)];
    head.iter()
        .chain(formats::TOKENS)
        .chain(url.iter())
        .chain(formats::SHAPES)
        .map(|(name, pattern, group, check)| {
            #[expect(
                clippy::expect_used,
                reason = "constant patterns; `every_detector_compiles` tests them"
            )]
            let regex = Regex::new(pattern).expect("detector patterns compile");
            Detector {
                name,
                regex,
                group: *group,
                check: *check,
            }
        })
        .collect()
});

/// Every detector's pattern in one set: one pass over a text says which detectors match at
/// all, and only those are run for their spans (most texts match none).
static DETECTOR_SET: LazyLock<RegexSet> = LazyLock::new(|| {
    #[expect(
        clippy::expect_used,
        reason = "constant patterns; `every_detector_compiles` tests them"
    )]
    let set = RegexSet::new(DETECTORS.iter().map(|d| d.regex.as_str()))
        .expect("detector patterns compile as a set");
    set
});

/// The detector name of a Kubernetes `Secret`'s data value ([`formats::kubernetes_secret_values`]).
const KUBERNETES_SECRET: &str = "kubernetes_secret";

/// A redacted text and the spans replaced in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Redaction {
    pub(crate) text: String,
    pub(crate) spans: Vec<RedactedSpan>,
}

/// The marker that replaces a span.
pub fn marker(rule: &str) -> String {
    format!("[REDACTED:{rule}]")
}

/// Finds the secret spans of `text`: `(start, end, detector)`, sorted, non-overlapping. A
/// text with zero-width characters or Unicode hyphens is searched as if they were not there
/// (or were `-`), and the spans found are those of the text as given.
pub(crate) fn find_spans(text: &str) -> Vec<(usize, usize, &'static str)> {
    if let Some((unfolded, at)) = formats::unfolded(text) {
        return find_spans_in(&unfolded)
            .into_iter()
            .map(|(s, e, name)| (at[s], at[e], name))
            .collect();
    }
    find_spans_in(text)
}

fn find_spans_in(text: &str) -> Vec<(usize, usize, &'static str)> {
    let mut found: Vec<(usize, usize, usize)> = Vec::new();
    for rank in DETECTOR_SET.matches(text).into_iter() {
        let Some(d) = DETECTORS.get(rank) else {
            continue;
        };
        for caps in d.regex.captures_iter(text) {
            if let Some(m) = caps.get(d.group)
                && !m.is_empty()
                && formats::is_secret(d.check, m.as_str())
            {
                found.push((m.start(), m.end(), rank));
            }
        }
    }
    // Ranked after every detector: a span one of them found keeps its name.
    for (start, end) in formats::kubernetes_secret_values(text) {
        found.push((start, end, DETECTORS.len()));
    }
    // By start, the longest first, then detector rank: a deterministic merge.
    found.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)).then(a.2.cmp(&b.2)));
    let mut merged: Vec<(usize, usize, &'static str)> = Vec::new();
    for (start, end, rank) in found {
        match merged.last_mut() {
            Some(last) if start < last.1 => last.1 = last.1.max(end),
            _ => {
                let name = DETECTORS.get(rank).map_or(KUBERNETES_SECRET, |d| d.name);
                merged.push((start, end, name));
            }
        }
    }
    merged
}

/// Replaces every secret span of `text` (a `part` of an item) by the marker of `rule`, or the
/// whole text when no detector matches. Empty text stays empty.
pub(crate) fn redact(text: &str, part: BodyPart, rule: &str) -> Redaction {
    if text.is_empty() {
        return Redaction {
            text: String::new(),
            spans: Vec::new(),
        };
    }
    let marker = marker(rule);
    let found = find_spans(text);
    if found.is_empty() {
        return Redaction {
            text: marker,
            spans: vec![RedactedSpan {
                part,
                start: 0,
                end: text.len(),
                detector: WHOLE.to_string(),
                rule: rule.to_string(),
            }],
        };
    }
    let mut out = String::with_capacity(text.len());
    let mut spans = Vec::with_capacity(found.len());
    let mut at = 0;
    for (start, end, detector) in found {
        out.push_str(text.get(at..start).unwrap_or_default());
        out.push_str(&marker);
        at = end;
        spans.push(RedactedSpan {
            part,
            start,
            end,
            detector: detector.to_string(),
            rule: rule.to_string(),
        });
    }
    out.push_str(text.get(at..).unwrap_or_default());
    Redaction { text: out, spans }
}

/// Names of JSON fields that hold a secret whatever it looks like (`"password"`,
/// `"apiToken"`, `"client_secret"`).
static SECRET_FIELD: LazyLock<Regex> = LazyLock::new(|| {
    #[expect(clippy::expect_used, reason = "a constant pattern, tested")]
    let regex =
        Regex::new(&format!("(?i)^{}$", formats::SECRET_NAME)).expect("the field pattern compiles");
    regex
});

/// Whether `value` is the secret of a field named for one (`{"password": "hunter2-prod"}`:
/// scanned alone, the value looks like any word). A placeholder is not.
fn secret_field(key: &str, value: &Value) -> bool {
    matches!(value, Value::String(s) if !formats::is_placeholder(s) && !formats::filler(s))
        && SECRET_FIELD.is_match(key)
}

/// Whether a detector finds a secret in any string or key of `v`, or a field named for a
/// secret holds a value.
pub(crate) fn holds_secret(v: &Value) -> bool {
    match v {
        Value::String(s) => !find_spans(s).is_empty(),
        Value::Array(items) => items.iter().any(holds_secret),
        Value::Object(map) => object_holds_secret(map),
        _ => false,
    }
}

/// [`holds_secret`] of a JSON object, read where it is (a chat request's other fields).
pub(crate) fn object_holds_secret(map: &serde_json::Map<String, Value>) -> bool {
    map.iter()
        .any(|(k, v)| !find_spans(k).is_empty() || secret_field(k, v) || holds_secret(v))
}

/// `v` with every secret span of its strings and keys replaced by the redaction marker of
/// `rule`, and the value of every field named for a secret replaced whole (strings without
/// one are kept as they are); and how many spans were replaced.
pub(crate) fn redact_secrets(v: &Value, rule: &str) -> (Value, usize) {
    let mut spans = 0;
    let redacted = redact_value(v, rule, &mut spans);
    (redacted, spans)
}

fn redact_text(s: &str, rule: &str, spans: &mut usize) -> String {
    if find_spans(s).is_empty() {
        return s.to_string();
    }
    let r = redact(s, BodyPart::Content, rule);
    *spans += r.spans.len();
    r.text
}

fn redact_value(v: &Value, rule: &str, spans: &mut usize) -> Value {
    match v {
        Value::String(s) => Value::String(redact_text(s, rule, spans)),
        Value::Array(items) => {
            Value::Array(items.iter().map(|i| redact_value(i, rule, spans)).collect())
        }
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, i)| {
                    let value = if secret_field(k, i) {
                        *spans += 1;
                        Value::String(marker(rule))
                    } else {
                        redact_value(i, rule, spans)
                    };
                    (redact_text(k, rule, spans), value)
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Whether a detector finds a secret in a model's tool-call arguments (a JSON text): in any
/// string of them when they are JSON (as the tool endpoint scans arguments), in the text
/// otherwise.
pub(crate) fn arguments_hold_secret(arguments: &str) -> bool {
    match serde_json::from_str::<Value>(arguments) {
        Ok(value) => holds_secret(&value),
        Err(_) => !find_spans(arguments).is_empty(),
    }
}

/// A model's tool-call arguments with every detected secret replaced by `rule`'s marker, and
/// how many spans were replaced. JSON arguments are redacted string by string and written
/// again (a marker replacing a quoted value must not break the JSON); other text as text.
pub(crate) fn redact_arguments(arguments: &str, rule: &str) -> (String, usize) {
    match serde_json::from_str::<Value>(arguments) {
        Ok(value) if holds_secret(&value) => {
            let (redacted, spans) = redact_secrets(&value, rule);
            (redacted.to_string(), spans)
        }
        Ok(_) => (arguments.to_owned(), 0),
        Err(_) if find_spans(arguments).is_empty() => (arguments.to_owned(), 0),
        Err(_) => {
            let r = redact(arguments, BodyPart::Content, rule);
            (r.text, r.spans.len())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{arguments_hold_secret, find_spans, redact_arguments};

    #[test]
    fn service_tokens_of_the_injection_corpus_are_found_and_markers_are_not() {
        // Each of these reached the model whole before issue 19's corpus.
        for (text, detector, secret) in [
            (
                "key sk_live_4eC39HqLyjWDarjtT1zdp7dc",
                "stripe_key",
                "sk_live_4eC39HqLyjWDarjtT1zdp7dc",
            ),
            (
                "rk_test_01E5fLxIhJtApOtMsJxIhYb",
                "stripe_key",
                "rk_test_01E5fLxIhJtApOtMsJxIhYb",
            ),
            (
                "AIzaSyG3911096850enaceobyasygzrhvdklczx",
                "gcp_api_key",
                "AIzaSyG3911096850enaceobyasygzrhvdklczx",
            ),
            (
                "glpat-lqvjrmmfvdbluxvrdcec",
                "gitlab_token",
                "glpat-lqvjrmmfvdbluxvrdcec",
            ),
            (
                "npm_kzkfdfwktjtfyxlnnzkulysvqb0371491913",
                "npm_token",
                "npm_kzkfdfwktjtfyxlnnzkulysvqb0371491913",
            ),
            (
                "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.dozjgNryP4J3jVmN",
                "jwt",
                "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.dozjgNryP4J3jVmN",
            ),
            (
                "postgres://app:hunter2-db@db:5432/prod",
                "url_password",
                "hunter2-db",
            ),
            ("redis://:s3cret@cache:6379", "url_password", "s3cret"),
        ] {
            let spans = find_spans(text);
            assert_eq!(spans.len(), 1, "{text}: {spans:?}");
            let (start, end, name) = spans[0];
            assert_eq!((&text[start..end], name), (secret, detector), "{text}");
        }
        // A publishable Stripe key is not a secret; a marker already in a URL is not a password.
        for clean in [
            "pk_live_4eC39HqLyjWDarjtT1zdp7dc",
            "postgres://[REDACTED:url_credentials]@localhost:5433/acme_test",
            "https://docs.acme.dev/a:b@c",
            r#"{"homepage":"https://acme.dev","email":"ops@acme.dev"}"#,
            "http://localhost:8080?to=a@b",
        ] {
            assert_eq!(find_spans(clean), [], "{clean}");
        }
    }

    #[test]
    fn json_arguments_are_redacted_string_by_string_and_stay_json() {
        let arguments = r#"{"cmd": "ls", "auth": {"api_key": "sk-qgeidfnqeezprookuxhaa"}}"#;
        assert!(arguments_hold_secret(arguments));
        let (redacted, spans) = redact_arguments(arguments, "r");
        assert_eq!(spans, 1);
        let value: serde_json::Value = serde_json::from_str(&redacted).unwrap();
        assert_eq!(
            value,
            serde_json::json!({"cmd": "ls", "auth": {"api_key": "[REDACTED:r]"}})
        );
    }

    #[test]
    fn arguments_that_are_not_json_are_redacted_as_text_and_clean_ones_kept() {
        let (redacted, spans) = redact_arguments("deploy AKIAPYDATUTGFKRXITKP now", "r");
        assert_eq!((redacted.as_str(), spans), ("deploy [REDACTED:r] now", 1));
        for clean in [r#"{"cmd": "ls"}"#, "not json", ""] {
            assert!(!arguments_hold_secret(clean));
            assert_eq!(redact_arguments(clean, "r"), (clean.to_owned(), 0));
        }
    }
}
