//! A YAML tree that keeps where every node was written, as byte spans into the joined source
//! of all envelope files (so diagnostics render like rule diagnostics).
//!
//! `saphyr` parses (YAML 1.2 core schema: `yes` is text, `1.5` a float); this module copies its
//! marked tree into a small owned one with byte offsets instead of character indices.

use saphyr::{LoadableYamlNode, MarkedYaml, Scalar, ScalarStyle, YamlData};
use tollgate_engine::Diagnostic;
use tollgate_engine::ast::Span;
use tollgate_engine::diag::codes;

/// A YAML node with its span.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Node {
    /// Where the node was written (for a mapping or sequence, from its first to its last entry).
    pub span: Span,
    /// What it holds.
    pub value: Value,
}

/// A YAML value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Value {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Seq(Vec<Node>),
    /// Entries in document order.
    Map(Vec<(Key, Node)>),
}

/// A mapping key and where it was written.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Key {
    pub name: String,
    pub span: Span,
}

impl Node {
    /// What kind of value this is, for "expected X, found Y" messages.
    pub fn kind_name(&self) -> &'static str {
        match &self.value {
            Value::Null => "nothing",
            Value::Bool(_) => "a boolean",
            Value::Int(_) => "an integer",
            Value::Float(_) => "a number",
            Value::Str(_) => "text",
            Value::Seq(_) => "a list",
            Value::Map(_) => "a mapping",
        }
    }

    /// The entries of a mapping.
    pub fn as_map(&self) -> Option<&[(Key, Node)]> {
        match &self.value {
            Value::Map(m) => Some(m),
            _ => None,
        }
    }

    /// The value as JSON (mapping keys in document order are re-sorted by `serde_json`).
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::Value as J;
        match &self.value {
            Value::Null => J::Null,
            Value::Bool(b) => J::Bool(*b),
            Value::Int(i) => J::from(*i),
            Value::Float(f) => serde_json::Number::from_f64(*f).map_or(J::Null, J::Number),
            Value::Str(s) => J::String(s.clone()),
            Value::Seq(items) => J::Array(items.iter().map(Node::to_json).collect()),
            Value::Map(entries) => J::Object(
                entries
                    .iter()
                    .map(|(k, v)| (k.name.clone(), v.to_json()))
                    .collect(),
            ),
        }
    }
}

/// Maps `saphyr`'s character indices to byte offsets in the joined source.
struct Offsets {
    /// Byte offset of every character, plus the text's length.
    bytes: Vec<usize>,
    /// Where this file starts in the joined source.
    base: usize,
}

impl Offsets {
    fn new(text: &str, base: usize) -> Self {
        let mut bytes: Vec<usize> = text.char_indices().map(|(b, _)| b).collect();
        bytes.push(text.len());
        Offsets { bytes, base }
    }

    fn at(&self, char_index: usize) -> usize {
        let last = self.bytes.len().saturating_sub(1);
        self.base + self.bytes.get(char_index.min(last)).copied().unwrap_or(0)
    }

    fn span(&self, node: &MarkedYaml<'_>, text: &str) -> Span {
        let start = self.at(node.span.start.index());
        let mut end = self.at(node.span.end.index()).max(start);
        // A block collection ends where the next token starts, often lines below; trailing
        // blank lines and comments do not belong to it.
        let local = &text[start - self.base..end - self.base];
        let trimmed = trim_trailing_layout(local);
        end = start + trimmed.len();
        Span::new(start, end)
    }
}

/// `text` without trailing whitespace and whole comment lines.
fn trim_trailing_layout(text: &str) -> &str {
    let mut t = text.trim_end();
    loop {
        let line_start = t.rfind('\n').map_or(0, |i| i + 1);
        if line_start > 0 && t[line_start..].trim_start().starts_with('#') {
            t = t[..line_start].trim_end();
        } else {
            return t;
        }
    }
}

/// Parses every YAML document of one file. `base` is where the file starts in the joined
/// source. A syntax error becomes one diagnostic.
pub(crate) fn parse_documents(text: &str, base: usize) -> Result<Vec<Node>, Box<Diagnostic>> {
    let offsets = Offsets::new(text, base);
    let docs = MarkedYaml::load_from_str(text).map_err(|e| {
        let at = offsets.at(e.marker().index());
        let end = (at + 1).min(offsets.base + text.len()).max(at);
        Box::new(
            Diagnostic::error(
                codes::ENVELOPE_SYNTAX,
                format!("invalid YAML: {}", e.info()),
                Span::new(at, end),
            )
            .with_label("here")
            .with_help(
                "fix the YAML syntax: indent nested keys consistently, put a space after `:` and `-`, close quotes and brackets",
            ),
        )
    })?;
    let mut out = Vec::new();
    for doc in &docs {
        // An empty document (a stray `---` or an empty file) holds no envelope.
        if matches!(doc.data, YamlData::BadValue | YamlData::Value(Scalar::Null)) {
            continue;
        }
        out.push(convert(doc, &offsets, text)?);
    }
    Ok(out)
}

fn convert(node: &MarkedYaml<'_>, offsets: &Offsets, text: &str) -> Result<Node, Box<Diagnostic>> {
    let span = offsets.span(node, text);
    let unsupported = |what: &str, help: &str| {
        Box::new(
            Diagnostic::error(
                codes::ENVELOPE_TYPE,
                format!("{what} are not supported in envelopes"),
                span,
            )
            .with_label("here")
            .with_help(help.to_string()),
        )
    };
    let value = match &node.data {
        YamlData::Value(scalar) => scalar_value(scalar),
        YamlData::Representation(text, style, _) => {
            let scalar = if *style == ScalarStyle::Plain {
                Scalar::parse_from_cow(text.clone())
            } else {
                Scalar::String(text.clone())
            };
            scalar_value(&scalar)
        }
        YamlData::Sequence(items) => Value::Seq(
            items
                .iter()
                .map(|n| convert(n, offsets, text))
                .collect::<Result<_, _>>()?,
        ),
        YamlData::Mapping(entries) => {
            let mut out = Vec::with_capacity(entries.len());
            for (k, v) in entries {
                let key_span = offsets.span(k, text);
                let name = match &convert(k, offsets, text)?.value {
                    Value::Str(s) => s.clone(),
                    Value::Int(i) => i.to_string(),
                    Value::Bool(b) => b.to_string(),
                    Value::Float(f) => f.to_string(),
                    Value::Null => String::new(),
                    Value::Seq(_) | Value::Map(_) => {
                        return Err(Box::new(
                            Diagnostic::error(
                                codes::ENVELOPE_TYPE,
                                "mapping keys must be plain text",
                                key_span,
                            )
                            .with_label("a list or mapping used as a key")
                            .with_help("write keys as plain words: `tools:`, `effect:`"),
                        ));
                    }
                };
                out.push((
                    Key {
                        name,
                        span: key_span,
                    },
                    convert(v, offsets, text)?,
                ));
            }
            Value::Map(out)
        }
        YamlData::Tagged(..) => {
            return Err(unsupported(
                "YAML tags (`!name`)",
                "remove the tag; envelopes use plain YAML values",
            ));
        }
        YamlData::Alias(_) | YamlData::BadValue => {
            return Err(unsupported(
                "unresolved aliases or invalid values",
                "write the value out in full",
            ));
        }
    };
    Ok(Node { span, value })
}

fn scalar_value(scalar: &Scalar<'_>) -> Value {
    match scalar {
        Scalar::Null => Value::Null,
        Scalar::Boolean(b) => Value::Bool(*b),
        Scalar::Integer(i) => Value::Int(*i),
        Scalar::FloatingPoint(f) => Value::Float(f.into_inner()),
        Scalar::String(s) => Value::Str(s.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text_of(src: &str, span: Span) -> &str {
        &src[span.start as usize..span.end as usize]
    }

    #[test]
    fn keys_and_scalars_have_byte_spans_even_after_multibyte_text() {
        let src = "id: héllo # note\nversion: 3\ntools:\n  - effect: allow\n    tools: [\"fs.*\"]\n\n# end\n";
        let docs = parse_documents(src, 0).unwrap();
        let map = docs[0].as_map().unwrap();
        assert_eq!(map[0].0.name, "id");
        assert_eq!(text_of(src, map[0].1.span), "héllo");
        assert_eq!(text_of(src, map[1].1.span), "3");
        assert_eq!(map[1].1.value, Value::Int(3));
        let Value::Seq(rules) = &map[2].1.value else {
            panic!()
        };
        let rule = rules[0].as_map().unwrap();
        assert_eq!(text_of(src, rule[1].0.span), "tools");
        let Value::Seq(pats) = &rule[1].1.value else {
            panic!()
        };
        assert_eq!(text_of(src, pats[0].span), "\"fs.*\"");
        assert!(text_of(src, docs[0].span).ends_with("[\"fs.*\"]"));
    }

    #[test]
    fn spans_are_offset_by_the_file_start_in_the_joined_source() {
        let docs = parse_documents("a: b\n", 100).unwrap();
        let map = docs[0].as_map().unwrap();
        assert_eq!(map[0].1.span, Span::new(103, 104));
    }

    #[test]
    fn syntax_errors_point_at_the_problem() {
        let err = parse_documents("id: x\ntools: [a, b\n", 0).unwrap_err();
        assert_eq!(err.code, "E-envelope-syntax");
        assert!(err.message.starts_with("invalid YAML: "), "{}", err.message);
    }

    #[test]
    fn several_documents_and_empty_ones() {
        let docs = parse_documents("---\na: 1\n---\n---\nb: 2\n", 0).unwrap();
        assert_eq!(docs.len(), 2);
        assert!(parse_documents("", 0).unwrap().is_empty());
        assert!(parse_documents("# only a comment\n", 0).unwrap().is_empty());
    }

    #[test]
    fn json_is_yaml() {
        let docs = parse_documents("{\"id\": \"x\", \"version\": 2, \"extends\": []}", 0).unwrap();
        let map = docs[0].as_map().unwrap();
        assert_eq!(map[1].1.value, Value::Int(2));
        assert_eq!(map[2].1.value, Value::Seq(vec![]));
    }

    #[test]
    fn quoted_scalars_stay_text() {
        let docs = parse_documents("a: \"3\"\nb: yes\nc: null\nd: 1.5\n", 0).unwrap();
        let map = docs[0].as_map().unwrap();
        assert_eq!(map[0].1.value, Value::Str("3".into()));
        assert_eq!(map[1].1.value, Value::Str("yes".into()));
        assert_eq!(map[2].1.value, Value::Null);
        assert_eq!(map[3].1.value, Value::Float(1.5));
    }
}
