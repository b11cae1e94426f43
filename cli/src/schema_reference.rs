//! A JSON Schema as a Markdown reference page: the document's title and description, its
//! top-level properties, then each definition of `$defs` as a section of its own that the
//! properties referring to it link to. What `tollgate reference handoff-contract` and
//! `tollgate reference pack` print, from the schemas the gateway reads contracts and packs
//! against (so the page says what is checked, not what someone remembered to write down).

use std::fmt::Write as _;

use serde_json::Value;

/// The page for `schema`, titled `title`; `regenerate` is the command that writes it.
pub fn render(title: &str, schema: &Value, regenerate: &str) -> String {
    let mut out = format!(
        "# {title}\n\n\
         Generated from the JSON Schema the gateway reads it against (`{}`, draft 2020-12) by\n\
         `{regenerate}`; do not edit (a test fails when it is stale).\n",
        text(&schema["$id"])
    );
    if let Some(d) = schema["description"].as_str() {
        let _ = write!(out, "\n{d}\n");
    }
    if schema.get("properties").is_some() {
        out.push_str("\n## The document\n\n");
        object(&mut out, schema);
    }
    if let Some(defs) = schema["$defs"].as_object() {
        for (name, def) in defs {
            let _ = write!(out, "\n## `{name}`\n\n");
            if let Some(d) = def["description"].as_str() {
                let _ = write!(out, "{}\n\n", sentence(d));
            }
            if def.get("properties").is_some() {
                object(&mut out, def);
            } else {
                let _ = writeln!(out, "A {}.", kind(def));
            }
        }
    }
    out
}

/// An object's properties as a list: name, whether required, type with its limits, description.
fn object(out: &mut String, schema: &Value) {
    fields(out, schema, 0);
    match &schema["additionalProperties"] {
        Value::Bool(false) => out.push_str("\nNo other keys are read: another key is an error.\n"),
        Value::Object(_) => {
            let _ = writeln!(
                out,
                "\nOther keys: each a {}.",
                kind(&schema["additionalProperties"])
            );
        }
        _ => {}
    }
}

/// The fields of `schema`, indented `depth` levels; a field holding an object of its own (or a
/// list of them) has that object's fields listed under it.
fn fields(out: &mut String, schema: &Value, depth: usize) {
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if let Some(props) = schema["properties"].as_object() {
        for (name, p) in props {
            let need = if required.contains(&name.as_str()) {
                "required"
            } else {
                "optional"
            };
            let indent = "  ".repeat(depth);
            let _ = write!(out, "{indent}- `{name}` ({need}): {}", kind(p));
            if let Some(d) = p["description"].as_str() {
                let _ = write!(out, ". {}", sentence(d));
            } else {
                out.push('.');
            }
            out.push('\n');
            let inner = if p["type"] == "array" { &p["items"] } else { p };
            if inner.get("properties").is_some() {
                fields(out, inner, depth + 1);
            }
        }
    }
}

/// What a value must be, in words: its type (a definition linked), its allowed values and its
/// limits.
fn kind(s: &Value) -> String {
    if let Some(r) = s["$ref"].as_str() {
        let name = r.rsplit('/').next().unwrap_or(r);
        return format!("[`{name}`](#{})", name.to_lowercase());
    }
    if let Some(c) = s.get("const") {
        return format!("the value `{}`", literal(c));
    }
    if let Some(values) = s["enum"].as_array() {
        let values: Vec<String> = values.iter().map(|v| format!("`{}`", literal(v))).collect();
        return format!("one of {}", values.join(", "));
    }
    if let Some(options) = s["oneOf"].as_array().or(s["anyOf"].as_array()) {
        let options: Vec<String> = options.iter().map(kind).collect();
        return format!("either {}", options.join(", or "));
    }
    let mut k = match s["type"].as_str() {
        Some("array") => format!("list of {}", kind(&s["items"])),
        Some("object") if s.get("properties").is_some() => {
            let keys: Vec<String> = s["properties"]
                .as_object()
                .map(|p| p.keys().map(|k| format!("`{k}`")).collect())
                .unwrap_or_default();
            format!("mapping with {}", keys.join(", "))
        }
        Some("object") => "mapping".to_string(),
        Some("integer") => "whole number".to_string(),
        Some(t) => t.to_string(),
        None => "value".to_string(),
    };
    let mut limits = Vec::new();
    if s.get("minLength") == Some(&Value::from(1)) {
        limits.push("not empty".to_string());
    }
    if s.get("minItems") == Some(&Value::from(1)) {
        limits.push("at least one".to_string());
    }
    for (key, say) in [
        ("minLength", "at least {} characters"),
        ("maxLength", "at most {} characters"),
        ("minItems", "at least {} items"),
        ("maxItems", "at most {} items"),
        ("minimum", "from {}"),
        ("maximum", "up to {}"),
        ("format", "format {}"),
    ] {
        match s.get(key) {
            Some(v) if !(matches!(key, "minLength" | "minItems") && v == &Value::from(1)) => {
                limits.push(say.replace("{}", &literal(v)));
            }
            _ => {}
        }
    }
    if let Some(p) = s["pattern"].as_str() {
        limits.push(format!("matching `{p}`"));
    }
    if s["uniqueItems"] == Value::Bool(true) {
        limits.push("no repeats".to_string());
    }
    if !limits.is_empty() {
        let _ = write!(k, " ({})", limits.join(", "));
    }
    k
}

fn literal(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn text(v: &Value) -> &str {
    v.as_str().unwrap_or_default()
}

/// A description as a sentence: capitalised as written, ending with a full stop.
fn sentence(d: &str) -> String {
    let d = d.trim();
    if d.ends_with(['.', '!', '?', ')']) {
        d.to_string()
    } else {
        format!("{d}.")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn properties_definitions_and_limits_are_written_out() {
        let schema = serde_json::json!({
            "$id": "https://example/s",
            "description": "A thing.",
            "required": ["id"],
            "additionalProperties": false,
            "properties": {
                "id": {"$ref": "#/$defs/id", "description": "Its id"},
                "tags": {"type": "array", "items": {"type": "string", "maxLength": 5}, "maxItems": 3},
                "mode": {"enum": ["a", "b"]}
            },
            "$defs": {"id": {"type": "string", "pattern": "^[a-z]+$", "description": "Lower-case"}}
        });
        let page = render("Thing", &schema, "tollgate reference thing");
        assert!(
            page.contains("- `id` (required): [`id`](#id). Its id.\n"),
            "{page}"
        );
        assert!(
            page.contains(
                "- `tags` (optional): list of string (at most 5 characters) (at most 3 items).\n"
            ),
            "{page}"
        );
        assert!(
            page.contains("- `mode` (optional): one of `a`, `b`.\n"),
            "{page}"
        );
        assert!(page.contains("No other keys are read"), "{page}");
        assert!(
            page.contains("## `id`\n\nLower-case.\n\nA string (matching `^[a-z]+$`).\n"),
            "{page}"
        );
    }
}
