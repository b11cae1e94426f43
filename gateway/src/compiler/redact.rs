//! The span redactor: what happens to an item whose policy decision is `redact`.
//!
//! Built-in detectors find secrets (private key blocks, AWS access key ids, `sk-` API keys,
//! GitHub and Slack tokens, bearer tokens, and the values of `password=` / `token:` style
//! assignments). Each span found is replaced by `[REDACTED:<rule ids>]`; overlapping spans are
//! merged first. When no detector finds anything, the whole text is replaced by one marker:
//! policy said the item holds something to hide, and not finding it is no reason to show it.

use std::sync::LazyLock;

use regex::Regex;
use serde::{Deserialize, Serialize};

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
}

/// `(name, pattern, group)`; earlier detectors name a span when two overlap.
const PATTERNS: [(&str, &str, usize); 7] = [
    // An unterminated block is cut to the end: half a key is still a key.
    (
        "private_key",
        r"(?s)-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\z)",
        0,
    ),
    ("aws_access_key", r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b", 0),
    ("api_key", r"\bsk-[A-Za-z0-9_-]{16,}", 0),
    (
        "github_token",
        r"\b(?:gh[pousr]|github_pat)_[A-Za-z0-9_]{20,}",
        0,
    ),
    ("slack_token", r"\bxox[abposr]-[A-Za-z0-9-]{10,}", 0),
    (
        "bearer_token",
        r"(?i)\bbearer\s+([A-Za-z0-9._~+/-]{8,}=*)",
        1,
    ),
    // `password=...`, `db_password: ...`, `"api_key": "..."`: the value, quotes included.
    (
        "assignment",
        r#"(?i)[A-Za-z0-9_.-]*(?:password|passwd|pwd|secret|token|api[_-]?key|access[_-]?key)[A-Za-z0-9_-]*["']?\s*[:=]\s*("[^"\n]*"|'[^'\n]*'|[^\s"',;]+)"#,
        1,
    ),
];

static DETECTORS: LazyLock<Vec<Detector>> = LazyLock::new(|| {
    PATTERNS
        .iter()
        .map(|(name, pattern, group)| {
            #[expect(
                clippy::expect_used,
                reason = "constant patterns; `every_detector_compiles` tests them"
            )]
            let regex = Regex::new(pattern).expect("detector patterns compile");
            Detector {
                name,
                regex,
                group: *group,
            }
        })
        .collect()
});

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

/// Finds the secret spans of `text`: `(start, end, detector)`, sorted, non-overlapping.
pub(crate) fn find_spans(text: &str) -> Vec<(usize, usize, &'static str)> {
    let mut found: Vec<(usize, usize, usize)> = Vec::new();
    for (rank, d) in DETECTORS.iter().enumerate() {
        for caps in d.regex.captures_iter(text) {
            if let Some(m) = caps.get(d.group)
                && !m.is_empty()
            {
                found.push((m.start(), m.end(), rank));
            }
        }
    }
    // By start, the longest first, then detector rank: a deterministic merge.
    found.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)).then(a.2.cmp(&b.2)));
    let mut merged: Vec<(usize, usize, &'static str)> = Vec::new();
    for (start, end, rank) in found {
        match merged.last_mut() {
            Some(last) if start < last.1 => last.1 = last.1.max(end),
            _ => {
                let name = DETECTORS.get(rank).map_or(WHOLE, |d| d.name);
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
