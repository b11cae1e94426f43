//! Aggressive redaction for what leaves the store to be committed (regression fixture
//! bundles, issue 15): a rule set in the spirit of gitleaks — cloud keys, service tokens,
//! private keys, connection-string credentials, JWTs, high-entropy strings — and personal data
//! (emails, phone numbers), each replaced by a stable placeholder: the same value gets the same
//! `[REDACTED:<rule>:<n>]` everywhere in one [`Scrubber`]'s output, numbered in order of
//! appearance, so a fixture stays consistent (a token sent and later echoed is one token) and
//! nothing of the value survives (no hash of a phone number to brute-force).
//!
//! This is stricter than the gateway's own redaction ([`super::find_spans`]), which hides what
//! policy asks to hide in live traffic and must not change recorded runs; the two are kept
//! apart on purpose. [`rescan`] is an independent check written differently (no regular
//! expressions: token shapes, known prefixes, character entropy) that a scrubbed text must
//! pass.

use std::collections::HashMap;
use std::sync::LazyLock;

use regex::{Regex, RegexSet};

use super::formats::Check;
use serde_json::Value;

/// The scrubber's own rules, beside the shared table: keys known by where they are written,
/// and personal data. `(rule, pattern, group)`: the group that is the secret (0: the whole
/// match).
const OWN_KEYS: [(&str, &str, usize); 3] = [
    (
        "aws_secret_key",
        r#"(?i)aws[a-z0-9_.-]{0,20}(?:secret|key)[a-z0-9_.-]{0,20}["']?\s*[:=]\s*["']?([A-Za-z0-9/+=]{40})\b"#,
        1,
    ),
    (
        "gcp_service_account_key",
        r#""private_key_id"\s*:\s*"([0-9a-f]{40})""#,
        1,
    ),
    (
        "azure_storage_key",
        r"(?i)AccountKey=([A-Za-z0-9+/]{80,90}={0,2})",
        1,
    ),
];

const PERSONAL: [(&str, &str, usize); 4] = [
    (
        "email",
        r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b",
        0,
    ),
    // `+1 415 555 0134`, `(030) 1234 5678`, and five pairs (`06 12 34 56 78`).
    (
        "phone",
        r"(?:\+\d{1,3}[\s.-]?)?(?:\(\d{2,4}\)|\b\d{2,4})[\s.-]\d{3,4}[\s.-]\d{3,4}\b|\b\d{2}(?:[\s.]\d{2}){4}\b",
        0,
    ),
    // Ten or more bare digits: a phone written without separators, a card or account number,
    // an epoch timestamp (what the rescan takes for personal data, redacted to be safe).
    // A token of digits, `+`, `-` and `.` with ten digits or more (judged below).
    (
        "long_number",
        r#"(?:^|[\s"'`,;()<>\[\]{}])([+\-.\d]*\d[+\-.\d]*)"#,
        1,
    ),
    // Long runs of key-like characters, judged by entropy below.
    ("high_entropy", r"[A-Za-z0-9+/=_-]{24,}", 0),
];

/// A compiled rule: its name, pattern, the group that is the secret, and what a match must
/// also pass.
type Rule = (&'static str, Regex, usize, Option<Check>);

/// Every rule in order (earlier rules win where two overlap): private keys, the token formats
/// shared with the live redactor ([`super::formats::TOKENS`]), the scrubber's own keys, URL
/// passwords (`connection_string`), the written shapes of secrets shared with the live
/// redactor ([`super::formats::SHAPES`]), then personal data and high-entropy runs. With what
/// a match must also pass ([`super::formats::is_secret_strictly`]; personal data and high-entropy runs
/// are judged below instead).
static COMPILED: LazyLock<Vec<Rule>> = LazyLock::new(|| {
    let own = |rules: &'static [(&'static str, &'static str, usize)], check| {
        rules.iter().map(move |&(n, p, g)| (n, p, g, check))
    };
    let shared = |formats: &'static [super::formats::Format]| {
        formats.iter().map(|&(n, p, g, c)| (n, p, g, Some(c)))
    };
    std::iter::once(("private_key", super::PRIVATE_KEY, 0, Some(Check::Format)))
        .chain(shared(super::formats::TOKENS))
        .chain(own(&OWN_KEYS, Some(Check::Format)))
        .chain(std::iter::once((
            "connection_string",
            super::URL_PASSWORD,
            1,
            Some(Check::Format),
        )))
        .chain(shared(super::formats::SHAPES))
        .chain(own(&PERSONAL, None))
        .map(|(name, pattern, group, check)| {
            #[expect(
                clippy::expect_used,
                reason = "constant patterns; `every_rule_compiles` tests them"
            )]
            let regex = Regex::new(pattern).expect("scrub patterns compile");
            (name, regex, group, check)
        })
        .collect()
});

/// Every rule's pattern in one set: one pass says which rules match at all.
static COMPILED_SET: LazyLock<RegexSet> = LazyLock::new(|| {
    #[expect(
        clippy::expect_used,
        reason = "constant patterns; `every_rule_compiles` tests them"
    )]
    let set = RegexSet::new(COMPILED.iter().map(|r| r.1.as_str()))
        .expect("scrub patterns compile as a set");
    set
});

/// Bits of Shannon entropy per character above which a long run is taken for a key.
const ENTROPY_BITS: f64 = 4.0;

/// Whether a long run looks like a key: high entropy, letters and digits mixed.
fn keylike(run: &str) -> bool {
    let digits = run.chars().any(|c| c.is_ascii_digit());
    let letters = run.chars().any(|c| c.is_ascii_alphabetic());
    digits && letters && super::formats::entropy(run) >= ENTROPY_BITS
}

/// Whether `text[start..end]` is a whole token (nothing word-like right after it) with ten
/// digits or more.
fn long_number(text: &str, start: usize, end: usize) -> bool {
    let digits = text[start..end]
        .chars()
        .filter(char::is_ascii_digit)
        .count();
    let whole = text[end..]
        .chars()
        .next()
        .is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
    digits >= 10 && whole
}

/// What one scrub found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The rule.
    pub rule: &'static str,
    /// The placeholder that replaced it.
    pub placeholder: String,
}

/// Scrubs texts and JSON, giving each distinct value one placeholder across everything it
/// scrubs.
#[derive(Debug, Default)]
pub struct Scrubber {
    seen: HashMap<(&'static str, String), String>,
    counts: HashMap<&'static str, usize>,
    /// Everything replaced, in order.
    pub findings: Vec<Finding>,
}

impl Scrubber {
    /// A scrubber with nothing seen.
    pub fn new() -> Scrubber {
        Scrubber::default()
    }

    fn placeholder(&mut self, rule: &'static str, value: &str) -> String {
        if let Some(p) = self.seen.get(&(rule, value.to_string())) {
            return p.clone();
        }
        let n = self.counts.entry(rule).or_default();
        *n += 1;
        let p = format!("[REDACTED:{rule}:{n}]");
        self.seen.insert((rule, value.to_string()), p.clone());
        p
    }

    /// `text` with every secret and personal datum replaced.
    pub fn text(&mut self, text: &str) -> String {
        // A token split by a zero-width character is found as if it were whole.
        let spans = match super::formats::unfolded(text) {
            Some((unfolded, at)) => spans_of(&unfolded)
                .into_iter()
                .map(|(s, e, rule)| (at[s], at[e], rule))
                .collect(),
            None => spans_of(text),
        };
        let mut out = String::with_capacity(text.len());
        let mut at = 0;
        for (s, e, rule) in spans {
            out.push_str(&text[at..s]);
            let value = &text[s..e];
            let p = self.placeholder(rule, value);
            self.findings.push(Finding {
                rule,
                placeholder: p.clone(),
            });
            out.push_str(&p);
            at = e;
        }
        out.push_str(&text[at..]);
        out
    }

    /// `value` with every string (keys too) scrubbed.
    pub fn json(&mut self, value: &Value) -> Value {
        match value {
            Value::String(s) => Value::String(self.text(s)),
            Value::Array(a) => Value::Array(a.iter().map(|v| self.json(v)).collect()),
            Value::Object(o) => Value::Object(
                o.iter()
                    .map(|(k, v)| (self.text(k), self.json(v)))
                    .collect(),
            ),
            other => other.clone(),
        }
    }
}

/// The spans every rule finds in `text`, earlier rules first where two overlap, by start.
fn spans_of(text: &str) -> Vec<(usize, usize, &'static str)> {
    let mut spans: Vec<(usize, usize, &'static str)> = Vec::new();
    for index in COMPILED_SET.matches(text).into_iter() {
        let Some((rule, regex, group, check)) = COMPILED.get(index) else {
            continue;
        };
        for caps in regex.captures_iter(text) {
            let Some(m) = caps.get(*group) else { continue };
            if m.as_str().starts_with("[REDACTED:") {
                continue;
            }
            if check.is_some_and(|c| !super::formats::is_secret_strictly(c, m.as_str())) {
                continue;
            }
            if *rule == "high_entropy" && !keylike(m.as_str()) {
                continue;
            }
            if *rule == "long_number" && !long_number(text, m.start(), m.end()) {
                continue;
            }
            let (s, e) = (m.start(), m.end());
            if spans.iter().any(|&(a, b, _)| s < b && a < e) {
                continue;
            }
            spans.push((s, e, rule));
        }
    }
    // A Kubernetes `Secret`'s data values, where no rule found more.
    for (s, e) in super::formats::kubernetes_secret_values(text) {
        if !spans.iter().any(|&(a, b, _)| s < b && a < e) {
            spans.push((s, e, "kubernetes_secret"));
        }
    }
    spans.sort_by_key(|&(s, _, _)| s);
    spans
}

/// Known prefixes of service tokens, for [`rescan`].
const PREFIXES: [&str; 16] = [
    "AKIA",
    "ASIA",
    "AIza",
    "ghp_",
    "gho_",
    "ghs_",
    "ghu_",
    "github_pat_",
    "glpat-",
    "xox",
    "sk-",
    "sk_live_",
    "sk_test_",
    "rk_live_",
    "npm_",
    "eyJ",
];

/// An independent check of a scrubbed text, written without the scrubber's patterns: what in
/// it still looks like a secret or personal datum (a PEM header, a token with a known prefix,
/// a long key-like run, an address with `@` and a dotted domain, a run of ten or more digits,
/// `scheme://user:pass@`). Empty for a clean text.
pub fn rescan(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    if text.contains("PRIVATE KEY-----") {
        found.push("a PEM private key header".to_string());
    }
    for raw in text.split(|c: char| c.is_whitespace() || "\"'`,;()<>[]{}".contains(c)) {
        let token = raw.trim_matches(|c: char| c == '.' || c == ':');
        if token.is_empty() || token.starts_with("REDACTED:") {
            continue;
        }
        if let Some(p) = PREFIXES
            .iter()
            .find(|p| token.starts_with(*p) && token.len() >= p.len() + 12)
        {
            found.push(format!("`{p}…` token"));
            continue;
        }
        if let Some((user, domain)) = token.split_once('@')
            && !user.is_empty()
            && !user.contains('/')
            && domain.contains('.')
            && domain
                .rsplit('.')
                .next()
                .is_some_and(|tld| tld.len() >= 2 && tld.chars().all(|c| c.is_ascii_alphabetic()))
        {
            found.push("an email address".to_string());
            continue;
        }
        if let Some((_, rest)) = token.split_once("://")
            && let Some((creds, _)) = rest.split_once('@')
            && creds.contains(':')
        {
            found.push("credentials in a URL".to_string());
            continue;
        }
        let digits = token.chars().filter(char::is_ascii_digit).count();
        if digits >= 10
            && token
                .chars()
                .all(|c| c.is_ascii_digit() || "+-.".contains(c))
        {
            found.push("a phone-like number".to_string());
            continue;
        }
        for run in token.split(|c: char| !(c.is_ascii_alphanumeric() || "+/=_-".contains(c))) {
            if run.len() >= 24 && keylike(run) {
                found.push("a high-entropy string".to_string());
                break;
            }
        }
    }
    // Phone numbers written with spaces: ten or more digits in a short window.
    let chars: Vec<char> = text.chars().collect();
    for window in chars.windows(16) {
        let digits = window.iter().filter(|c| c.is_ascii_digit()).count();
        let others = window
            .iter()
            .all(|c| c.is_ascii_digit() || " +-.()".contains(*c));
        // A phone is a few groups (`+1 415 555 0134`), not a row of small numbers.
        let groups: Vec<usize> = window
            .split(|c| !c.is_ascii_digit())
            .map(<[char]>::len)
            .filter(|n| *n > 0)
            .collect();
        let phone_shaped = groups.len() <= 5 && groups.iter().skip(1).all(|n| *n >= 2);
        if digits >= 10 && others && window.contains(&' ') && phone_shaped {
            found.push("a spaced phone-like number".to_string());
            break;
        }
    }
    found
}

#[cfg(test)]
mod tests;
