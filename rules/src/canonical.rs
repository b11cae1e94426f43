//! Canonical JSON: object keys sorted at every level, no insignificant whitespace, strings
//! escaped as `serde_json` escapes them. Equal values give equal text, so equal hashes: every
//! hash the project records (input hashes, request hashes, event payloads, the run chain,
//! envelope versions, approval bindings) is over this text.
//!
//! Two writers give the same bytes: [`canonical_json`] over a `serde_json::Value`, and
//! [`to_canonical_json`] straight from any `Serialize` value without building the tree (a
//! proptest checks they agree).

mod writer;

pub use writer::{CanonicalError, to_canonical_json};

/// JSON text with object keys sorted at every level and no insignificant whitespace, so equal
/// values hash equally whatever `serde_json`'s map order.
pub fn canonical_json(value: &serde_json::Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

/// Appends the canonical text of `value` to `out` (one buffer, no intermediate strings: this
/// runs for every decision's input hash).
fn write_canonical(value: &serde_json::Value, out: &mut String) {
    use serde_json::Value as J;
    match value {
        J::Object(map) => {
            let mut entries: Vec<(&String, &J)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (i, (k, v)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json_string(k, out);
                out.push(':');
                write_canonical(v, out);
            }
            out.push('}');
        }
        J::Array(items) => {
            out.push('[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(v, out);
            }
            out.push(']');
        }
        J::String(s) => write_json_string(s, out),
        other => out.push_str(&other.to_string()),
    }
}

/// Appends the canonical text of `value` to `out`; what [`canonical_json`] returns.
pub(crate) fn write_canonical_into(value: &serde_json::Value, out: &mut String) {
    write_canonical(value, out);
}

/// A JSON string literal, escaped as `serde_json` escapes it. Strings with nothing to escape
/// (the usual case) are copied as they are; the rest go through `serde_json`.
pub(crate) fn write_json_string(s: &str, out: &mut String) {
    if !s.bytes().any(|b| b < 0x20 || b == b'"' || b == b'\\') {
        out.push('"');
        out.push_str(s);
        out.push('"');
        return;
    }
    match serde_json::to_string(s) {
        Ok(text) => out.push_str(&text),
        Err(_) => out.push_str("\"\""),
    }
}
