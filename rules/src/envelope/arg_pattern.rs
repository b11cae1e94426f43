//! The kind of an argument condition (issue 32, hole 5): a pattern reads its argument as a
//! `path` (a glob whose `*` stays within a `/` segment and `**` crosses them), a `url` (matched
//! by its parsed parts, [`super::UrlPattern`]) or `text` (a glob whose `*` and `?` match any
//! character, `/` and line breaks included).
//!
//! Written as a bare string — a path glob, or a URL pattern when it starts with a scheme and
//! `://` — or as `{text: "*rm -rf*"}`, `{path: "src/**"}`, `{url: "https://*.example.com/**"}`.
//! A bare string is stored as written, so the envelopes written before kinds keep their
//! identity (the hash of their canonical JSON).

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::UrlPattern;

/// How a pattern reads its argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ArgKind {
    /// `*` within a `/` segment, `**` across.
    Path,
    /// By the parsed scheme, host, port and path.
    Url,
    /// `*` and `?` match any character.
    Text,
}

impl ArgKind {
    /// Every kind.
    pub const ALL: [ArgKind; 3] = [ArgKind::Path, ArgKind::Url, ArgKind::Text];

    /// The name used in YAML.
    pub fn as_str(self) -> &'static str {
        match self {
            ArgKind::Path => "path",
            ArgKind::Url => "url",
            ArgKind::Text => "text",
        }
    }
}

/// An argument condition's pattern and how it reads the argument.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ArgPattern {
    /// The kind written (`{text: ...}`), or `None` for a bare string.
    pub written: Option<ArgKind>,
    /// The glob.
    pub pattern: String,
}

impl ArgPattern {
    /// A bare pattern.
    pub fn bare(pattern: impl Into<String>) -> ArgPattern {
        ArgPattern {
            written: None,
            pattern: pattern.into(),
        }
    }

    /// How it reads its argument: as written, else `url` for a pattern with a scheme and
    /// `://`, else `path`.
    pub fn kind(&self) -> ArgKind {
        match self.written {
            Some(kind) => kind,
            None if UrlPattern::parse(&self.pattern).is_some() => ArgKind::Url,
            None => ArgKind::Path,
        }
    }

    /// The pattern text.
    pub fn as_str(&self) -> &str {
        &self.pattern
    }

    /// Whether a value with a `/` would escape this pattern where a reader of the value as text
    /// expects it to match: a path glob with a `*` or `?` that stays within a segment. Such a
    /// pattern on a `deny` misses `rm -rf /` for `*rm -rf*`.
    pub fn stops_at_slashes(&self) -> bool {
        if self.kind() != ArgKind::Path {
            return false;
        }
        let chars: Vec<char> = self.pattern.chars().collect();
        chars.iter().enumerate().any(|(i, c)| match c {
            '?' => true,
            '*' => {
                let before = i > 0 && chars[i - 1] == '*';
                let after = chars.get(i + 1) == Some(&'*');
                !before && !after
            }
            _ => false,
        })
    }
}

impl std::fmt::Display for ArgPattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.written {
            None => write!(f, "{}", self.pattern),
            Some(kind) => write!(f, "{{{}: {}}}", kind.as_str(), self.pattern),
        }
    }
}

impl Serialize for ArgPattern {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        match self.written {
            None => s.serialize_str(&self.pattern),
            Some(kind) => {
                let mut map = s.serialize_map(Some(1))?;
                map.serialize_entry(kind.as_str(), &self.pattern)?;
                map.end()
            }
        }
    }
}

/// As written: a bare glob, or a mapping of one kind to its glob.
impl schemars::JsonSchema for ArgPattern {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ArgPattern".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let kinded = |kind: &str, reads: &str| {
            serde_json::json!({
                "type": "object",
                "additionalProperties": false,
                "required": [kind],
                "properties": {kind: {"type": "string", "description": reads}},
            })
        };
        schemars::json_schema!({
            "description": "A pattern over an argument's value: a bare glob (read as a URL pattern when it starts with a scheme and `://`, else as a path glob), or `{path: ...}`, `{url: ...}` or `{text: ...}` saying how to read it.",
            "oneOf": [
                {"type": "string", "description": "A path glob (`*` within a `/` segment, `**` across), or a URL pattern (`https://*.example.com/**`)."},
                kinded("path", "`*` within a `/` segment, `**` across."),
                kinded("url", "Matched by the parsed scheme, host, port and path."),
                kinded("text", "`*` and `?` match any character, `/` and line breaks included."),
            ]
        })
    }
}

impl<'de> Deserialize<'de> for ArgPattern {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<ArgPattern, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Written {
            Bare(String),
            Kinded(std::collections::BTreeMap<ArgKind, String>),
        }
        match Written::deserialize(d)? {
            Written::Bare(pattern) => Ok(ArgPattern::bare(pattern)),
            Written::Kinded(map) => {
                let mut entries = map.into_iter();
                match (entries.next(), entries.next()) {
                    (Some((kind, pattern)), None) => Ok(ArgPattern {
                        written: Some(kind),
                        pattern,
                    }),
                    _ => Err(serde::de::Error::custom(
                        "an argument pattern is a glob, or one of `{text: ...}`, `{path: ...}`, `{url: ...}`",
                    )),
                }
            }
        }
    }
}

/// Warnings for `deny` and `rate_limit` conditions whose path glob a value containing `/`
/// escapes (`*rm -rf*` misses `rm -rf /`): each names the rule, the argument and the fix.
pub fn slash_warnings(envelope: &super::PolicyEnvelope) -> Vec<String> {
    let mut out = Vec::new();
    for (i, rule) in envelope.tools.iter().enumerate() {
        if !matches!(
            rule.effect,
            super::ToolEffect::Deny | super::ToolEffect::RateLimit
        ) {
            continue;
        }
        let local = rule
            .id
            .clone()
            .unwrap_or_else(|| super::local_rule_id(super::Section::Tools, i));
        for (pointer, pattern) in &rule.args {
            if pattern.stops_at_slashes() {
                out.push(format!(
                    "`{}`: the {} condition `{pointer}: \"{}\"` reads the argument as a path, where `*` and `?` stop at `/`, so a value with a `/` in it escapes it (`*rm -rf*` misses `rm -rf /`)\n  help: write `{pointer}: {{text: \"{}\"}}` to match across `/`, or `**` where a path may hold several segments",
                    envelope.rule_id(&local),
                    rule.effect.as_str(),
                    pattern.as_str(),
                    pattern.as_str(),
                ));
            }
        }
    }
    out
}

/// A text pattern as a regular expression the engine's `match` takes (anchored there): `*`
/// any characters, `?` one, `[...]` a class (`[!...]` negated), `{a,b}` alternatives, `\x` the
/// character `x`; everything else literal.
pub fn text_regex(pattern: &str) -> String {
    let mut out = String::from("(?s)");
    let mut chars = pattern.chars().peekable();
    let mut depth = 0usize;
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(next) = chars.next() {
                    literal(&mut out, next);
                }
            }
            '*' => {
                while chars.peek() == Some(&'*') {
                    chars.next();
                }
                out.push_str(".*");
            }
            '?' => out.push('.'),
            '[' => {
                out.push('[');
                if chars.peek() == Some(&'!') {
                    chars.next();
                    out.push('^');
                }
                for k in chars.by_ref() {
                    if k == ']' {
                        break;
                    }
                    if matches!(k, '[' | '\\' | '&' | '~' | '^') {
                        out.push('\\');
                    }
                    out.push(k);
                }
                out.push(']');
            }
            '{' => {
                depth += 1;
                out.push_str("(?:");
            }
            ',' if depth > 0 => out.push('|'),
            '}' if depth > 0 => {
                depth -= 1;
                out.push(')');
            }
            other => literal(&mut out, other),
        }
    }
    for _ in 0..depth {
        out.push(')');
    }
    out
}

fn literal(out: &mut String, c: char) {
    if "\\.+*?()|[]{}^$#&-~".contains(c) {
        out.push('\\');
    }
    out.push(c);
}

#[cfg(test)]
mod tests {
    use super::*;
    use tollgate_engine::functions::compile_regex;

    fn text_matches(pattern: &str, value: &str) -> bool {
        compile_regex(&text_regex(pattern)).unwrap().is_match(value)
    }

    #[test]
    fn a_text_pattern_crosses_slashes_and_line_breaks() {
        assert!(text_matches("*rm -rf*", "rm -rf /"));
        assert!(text_matches(
            "**DROP TABLE**",
            "psql -h db/x -c 'DROP TABLE users'"
        ));
        assert!(text_matches("*secret*", "a/b\nc secret d"));
        assert!(!text_matches("*rm -rf*", "rm -r /"));
        assert!(text_matches("a?c", "a/c"));
        assert!(text_matches("{curl,wget} *", "wget http://x/y"));
        assert!(text_matches("[!a]b", "xb") && !text_matches("[!a]b", "ab"));
        assert!(text_matches("1+1=2 (a.b)$", "1+1=2 (a.b)$"));
        assert!(!text_matches("a.b", "axb"));
        assert!(text_matches("\\*literal", "*literal"));
    }

    #[test]
    fn a_bare_pattern_keeps_its_written_form_and_a_kinded_one_says_its_kind() {
        let bare: ArgPattern = serde_json::from_str("\"src/**\"").unwrap();
        assert_eq!(bare.kind(), ArgKind::Path);
        assert_eq!(serde_json::to_string(&bare).unwrap(), "\"src/**\"");
        let url: ArgPattern = serde_json::from_str("\"https://*.a.com/**\"").unwrap();
        assert_eq!(url.kind(), ArgKind::Url);
        let text: ArgPattern = serde_json::from_str("{\"text\": \"*rm*\"}").unwrap();
        assert_eq!(text.kind(), ArgKind::Text);
        assert_eq!(serde_json::to_string(&text).unwrap(), "{\"text\":\"*rm*\"}");
        assert!(serde_json::from_str::<ArgPattern>("{\"text\": \"a\", \"path\": \"b\"}").is_err());
        assert!(serde_json::from_str::<ArgPattern>("{\"glob\": \"a\"}").is_err());
    }

    #[test]
    fn a_path_glob_with_a_single_star_stops_at_slashes() {
        assert!(ArgPattern::bare("*rm -rf*").stops_at_slashes());
        assert!(!ArgPattern::bare("**/.env").stops_at_slashes());
        assert!(!ArgPattern::bare(".env").stops_at_slashes());
        assert!(!ArgPattern::bare("https://*.example.com/**").stops_at_slashes());
        let text = ArgPattern {
            written: Some(ArgKind::Text),
            pattern: "*rm -rf*".into(),
        };
        assert!(!text.stops_at_slashes());
    }
}
