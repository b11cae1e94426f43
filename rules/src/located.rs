//! A YAML (or JSON, which YAML 1.2 reads too) document as a JSON value that remembers where
//! each node was written, so checks of user-authored files other than envelopes (handoff
//! contracts) can point at the line of every fault they find by its JSON pointer.

use std::collections::BTreeMap;

use crate::envelope::yaml::{Node, Value, parse_documents};

/// A parsed document and the place of each of its nodes.
#[derive(Debug, Clone, PartialEq)]
pub struct Located {
    /// The document as JSON.
    pub value: serde_json::Value,
    /// `(line, column)`, both from 1, of the node at each JSON pointer (`""` the root,
    /// `/evidence/0/scope`); a mapping entry's pointer is placed at its key.
    places: BTreeMap<String, (usize, usize)>,
}

/// Why a document does not parse: a message and where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message} (line {line}, column {column})")]
pub struct SyntaxError {
    /// What is wrong.
    pub message: String,
    /// Line, from 1.
    pub line: usize,
    /// Column, from 1.
    pub column: usize,
}

impl Located {
    /// Parses one YAML or JSON document; an empty text is `null`.
    pub fn parse(text: &str) -> Result<Located, SyntaxError> {
        let lines = LineIndex::new(text);
        let docs = parse_documents(text, 0).map_err(|d| {
            let (line, column) = lines.at(d.span.start as usize);
            SyntaxError {
                message: d.message.replace("envelopes", "this document"),
                line,
                column,
            }
        })?;
        let mut docs = docs.into_iter();
        let Some(root) = docs.next() else {
            return Ok(Located {
                value: serde_json::Value::Null,
                places: BTreeMap::new(),
            });
        };
        if let Some(extra) = docs.next() {
            let (line, column) = lines.at(extra.span.start as usize);
            return Err(SyntaxError {
                message: "a second YAML document: one file holds one document".into(),
                line,
                column,
            });
        }
        let mut places = BTreeMap::new();
        record(&root, String::new(), &lines, &mut places, None);
        Ok(Located {
            value: root.to_json(),
            places,
        })
    }

    /// Where the node at `pointer` was written, or its nearest written ancestor.
    pub fn place(&self, pointer: &str) -> Option<(usize, usize)> {
        let mut p = pointer;
        loop {
            if let Some(at) = self.places.get(p) {
                return Some(*at);
            }
            let (parent, _) = p.rsplit_once('/')?;
            p = parent;
        }
    }
}

fn record(
    node: &Node,
    pointer: String,
    lines: &LineIndex,
    places: &mut BTreeMap<String, (usize, usize)>,
    key_at: Option<usize>,
) {
    places.insert(
        pointer.clone(),
        lines.at(key_at.unwrap_or(node.span.start as usize)),
    );
    match &node.value {
        Value::Seq(items) => {
            for (i, item) in items.iter().enumerate() {
                record(item, format!("{pointer}/{i}"), lines, places, None);
            }
        }
        Value::Map(entries) => {
            for (key, value) in entries {
                let escaped = key.name.replace('~', "~0").replace('/', "~1");
                record(
                    value,
                    format!("{pointer}/{escaped}"),
                    lines,
                    places,
                    Some(key.span.start as usize),
                );
            }
        }
        Value::Null | Value::Bool(_) | Value::Int(_) | Value::Float(_) | Value::Str(_) => {}
    }
}

/// Byte offsets to lines and columns (columns count characters).
struct LineIndex<'a> {
    text: &'a str,
    starts: Vec<usize>,
}

impl<'a> LineIndex<'a> {
    fn new(text: &'a str) -> Self {
        let starts = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        LineIndex { text, starts }
    }

    fn at(&self, offset: usize) -> (usize, usize) {
        let offset = offset.min(self.text.len());
        let line = self.starts.partition_point(|s| *s <= offset).max(1);
        let start = self.starts[line - 1];
        let column = self
            .text
            .get(start..offset)
            .map_or(1, |t| t.chars().count() + 1);
        (line, column)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_pointer_finds_the_line_it_was_written_on() {
        let text = "id: h-1\ngoal:\n  objective: ship it\nevidence:\n  - item: a\n    scope: \"org:x\"\n  - {item: b, scope: y}\n";
        let doc = Located::parse(text).unwrap();
        assert_eq!(doc.value["evidence"][1]["item"], "b");
        assert_eq!(doc.place(""), Some((1, 1)));
        assert_eq!(doc.place("/goal/objective"), Some((3, 3)));
        assert_eq!(doc.place("/evidence/0/scope"), Some((6, 5)));
        assert_eq!(doc.place("/evidence/1/scope"), Some((7, 15)));
        // A pointer to something absent is placed at its nearest ancestor.
        assert_eq!(doc.place("/goal/expected_output"), Some((2, 1)));
    }

    #[test]
    fn json_reads_too_and_syntax_errors_say_where() {
        let doc = Located::parse("{\"id\": \"h-1\", \"outputs\": [1, 2]}").unwrap();
        assert_eq!(doc.value["outputs"][1], 2);
        let err = Located::parse("id: h-1\ngoal: [unclosed\n").unwrap_err();
        assert!(err.line >= 2, "{err}");
        assert!(Located::parse("a: 1\n---\nb: 2\n").is_err());
        assert_eq!(Located::parse("").unwrap().value, serde_json::Value::Null);
    }
}
