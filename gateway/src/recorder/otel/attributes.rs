//! OTLP attribute lists and `AnyValue`s, decoded to JSON, and typed reads of the GenAI
//! attributes that say which attribute is wrong and how to write it.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::{DocLocation, OtlpError};

const VALUE_HELP: &str = "an OTLP AnyValue holds exactly one of `stringValue`, `boolValue`, \
                          `intValue`, `doubleValue`, `bytesValue`, `arrayValue` or `kvlistValue`";

const ATTRIBUTE_SHAPE: &str = "{\"key\": \"…\", \"value\": {\"stringValue\": \"…\"}}";

/// Attribute values by key, each remembering its path for messages.
#[derive(Debug, Clone, Default)]
pub(super) struct Attributes {
    /// The document the list is in.
    at: DocLocation,
    /// The path of the list (`resourceSpans[0].scopeSpans[0].spans[3].attributes`).
    path: String,
    /// Key → (index in the list, value). A repeated key keeps its last value.
    entries: BTreeMap<String, (usize, Value)>,
}

impl Attributes {
    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.entries.get(key).map(|(_, value)| value)
    }

    /// Where `key` sits in the export.
    pub fn path(&self, key: &str) -> String {
        match self.entries.get(key) {
            Some((index, _)) => self.at.at(&format!("{}[{index}]", self.path)),
            None => self.at.at(&self.path),
        }
    }

    /// An error about the value of `key`.
    pub fn bad(&self, key: &str, reason: impl Into<String>, help: impl Into<String>) -> OtlpError {
        OtlpError::BadAttribute {
            location: self.path(key),
            key: key.to_owned(),
            reason: reason.into(),
            help: help.into(),
        }
    }

    /// A string attribute; any other type is an error.
    pub fn string(&self, key: &str) -> Result<Option<&str>, OtlpError> {
        match self.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(text)) => Ok(Some(text)),
            Some(other) => Err(self.bad(
                key,
                format!("is {}, not a string", json_type(other)),
                format!(
                    "write it as {{\"key\": \"{key}\", \"value\": {{\"stringValue\": \"…\"}}}}"
                ),
            )),
        }
    }

    /// A non-negative integer (token counts, `max_tokens`), saturating at `u32::MAX`. A
    /// decimal string is accepted too: some exporters write every value as a string.
    pub fn count(&self, key: &str) -> Result<Option<u32>, OtlpError> {
        let number = match self.get(key) {
            None | Some(Value::Null) => return Ok(None),
            Some(Value::Number(n)) => n.as_u64(),
            Some(Value::String(text)) => text.trim().parse::<u64>().ok(),
            Some(_) => None,
        };
        match number {
            Some(n) => Ok(Some(u32::try_from(n).unwrap_or(u32::MAX))),
            None => Err(self.bad(
                key,
                "is not a non-negative integer",
                format!("write it as {{\"key\": \"{key}\", \"value\": {{\"intValue\": \"42\"}}}}"),
            )),
        }
    }

    /// A number (`temperature`, `top_p`).
    pub fn number(&self, key: &str) -> Result<Option<f64>, OtlpError> {
        let number = match self.get(key) {
            None | Some(Value::Null) => return Ok(None),
            Some(Value::Number(n)) => n.as_f64(),
            Some(Value::String(text)) => text.trim().parse::<f64>().ok().filter(|f| f.is_finite()),
            Some(_) => None,
        };
        number.map(Some).ok_or_else(|| {
            self.bad(
                key,
                "is not a number",
                format!("write it as {{\"key\": \"{key}\", \"value\": {{\"doubleValue\": 0.2}}}}"),
            )
        })
    }

    /// A structured attribute that GenAI instrumentations write as a JSON string
    /// (`gen_ai.input.messages`) or, in newer SDKs, as an array or kvlist value.
    pub fn structured(&self, key: &str, shape: &str) -> Result<Option<Value>, OtlpError> {
        match self.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(text)) => serde_json::from_str(text).map(Some).map_err(|e| {
                self.bad(
                    key,
                    format!("is not valid JSON ({e})"),
                    format!("`{key}` holds {shape}, serialised as a JSON string"),
                )
            }),
            Some(value) => Ok(Some(value.clone())),
        }
    }

    /// A free-form attribute (`gen_ai.tool.call.arguments`, `…result`): see [`json_in_text`].
    pub fn loose(&self, key: &str) -> Option<Value> {
        match self.get(key)? {
            Value::String(text) => Some(json_in_text(text)),
            other => Some(other.clone()),
        }
    }
}

/// A string that holds a JSON object or array, parsed; any other string as it is (so a tool
/// that returned `"42"` keeps returning text).
pub(super) fn json_in_text(text: &str) -> Value {
    let trimmed = text.trim_start();
    if (trimmed.starts_with('{') || trimmed.starts_with('['))
        && let Ok(value) = serde_json::from_str(text)
    {
        return value;
    }
    Value::String(text.to_owned())
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "empty",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "a kvlist",
    }
}

/// An attribute list (`[{key, value}]`) at `path`; missing or `null` reads as empty.
pub(super) fn parse_attributes(
    value: Option<&Value>,
    at: DocLocation,
    path: &str,
) -> Result<Attributes, OtlpError> {
    let items = match value {
        None | Some(Value::Null) => &[][..],
        Some(Value::Array(items)) => items,
        Some(_) => {
            return Err(OtlpError::Malformed {
                location: at.at(path),
                reason: "is not an array".to_owned(),
                help: format!("write attributes as [{ATTRIBUTE_SHAPE}]"),
            });
        }
    };
    let mut entries = BTreeMap::new();
    for (index, entry) in items.iter().enumerate() {
        let entry_path = at.at(&format!("{path}[{index}]"));
        let Some(key) = entry.get("key").and_then(Value::as_str) else {
            return Err(OtlpError::Malformed {
                location: entry_path,
                reason: "has no string `key`".to_owned(),
                help: format!("write each attribute as {ATTRIBUTE_SHAPE}"),
            });
        };
        let value = match entry.get("value") {
            // An empty value is legal OTLP (an unset AnyValue).
            None | Some(Value::Null) => Value::Null,
            Some(value) => any_value(value, key, &entry_path, "value")?,
        };
        entries.insert(key.to_owned(), (index, value));
    }
    Ok(Attributes {
        at,
        path: path.to_owned(),
        entries,
    })
}

/// One OTLP `AnyValue` as JSON: a kvlist becomes an object, an array an array, bytes stay
/// base64 text. `path` is relative to the attribute (`value.arrayValue.values[1]`).
fn any_value(value: &Value, key: &str, location: &str, path: &str) -> Result<Value, OtlpError> {
    // Nested values say where they are; the attribute's own value needs no more than its key.
    let inside = if path == "value" {
        String::new()
    } else {
        format!(" (at `{path}`)")
    };
    let bad = |reason: String, help: &str| OtlpError::BadAttribute {
        location: location.to_owned(),
        key: key.to_owned(),
        reason: format!("{reason}{inside}"),
        help: help.to_owned(),
    };
    let Some(object) = value.as_object() else {
        return Err(bad(
            "has a value that is not an object".to_owned(),
            VALUE_HELP,
        ));
    };
    let mut fields = object.iter();
    let (kind, inner) = match (fields.next(), fields.next()) {
        (None, _) => return Ok(Value::Null),
        (Some(field), None) => field,
        (Some((first, _)), Some((second, _))) => {
            return Err(bad(
                format!("has a value with both `{first}` and `{second}`"),
                VALUE_HELP,
            ));
        }
    };
    let wrong = |expected: &str| bad(format!("has a `{kind}` that is not {expected}"), VALUE_HELP);
    match kind.as_str() {
        "stringValue" | "bytesValue" => inner
            .as_str()
            .map(|s| Value::String(s.to_owned()))
            .ok_or_else(|| wrong("a string")),
        "boolValue" => inner
            .as_bool()
            .map(Value::Bool)
            .ok_or_else(|| wrong("a boolean")),
        "intValue" => {
            let int = match inner {
                Value::String(text) => text.parse::<i64>().ok(),
                Value::Number(n) => n.as_i64(),
                _ => None,
            };
            int.map(Value::from).ok_or_else(|| {
                bad(
                    "has an `intValue` that is not a 64-bit integer".to_owned(),
                    "OTLP/JSON writes integers as decimal strings: {\"intValue\": \"42\"}",
                )
            })
        }
        "doubleValue" => {
            let double = match inner {
                Value::Number(n) => n.as_f64(),
                Value::String(text) => text.parse::<f64>().ok(),
                _ => None,
            };
            double
                .and_then(serde_json::Number::from_f64)
                .map(Value::Number)
                .ok_or_else(|| {
                    bad(
                        "has a `doubleValue` that is not a finite number".to_owned(),
                        "write a JSON number, for example {\"doubleValue\": 0.5}; NaN and \
                         infinities cannot be imported",
                    )
                })
        }
        "arrayValue" => {
            let items = match inner.get("values") {
                None | Some(Value::Null) => &[][..],
                Some(Value::Array(items)) => items,
                Some(_) => return Err(wrong("{\"values\": [...]}")),
            };
            items
                .iter()
                .enumerate()
                .map(|(n, item)| {
                    let item_path = format!("{path}.arrayValue.values[{n}]");
                    any_value(item, key, location, &item_path)
                })
                .collect::<Result<Vec<_>, _>>()
                .map(Value::Array)
        }
        "kvlistValue" => {
            let items = match inner.get("values") {
                None | Some(Value::Null) => &[][..],
                Some(Value::Array(items)) => items,
                Some(_) => return Err(wrong("{\"values\": [{\"key\": …, \"value\": …}]}")),
            };
            let mut map = Map::new();
            for (n, item) in items.iter().enumerate() {
                let item_path = format!("{path}.kvlistValue.values[{n}]");
                let Some(item_key) = item.get("key").and_then(Value::as_str) else {
                    return Err(bad(
                        format!("has a kvlist entry without a string `key` (at `{item_path}`)"),
                        "write kvlist entries as {\"key\": \"…\", \"value\": {…}}",
                    ));
                };
                let item_value = match item.get("value") {
                    None | Some(Value::Null) => Value::Null,
                    Some(v) => any_value(v, key, location, &format!("{item_path}.value"))?,
                };
                map.insert(item_key.to_owned(), item_value);
            }
            Ok(Value::Object(map))
        }
        other => Err(bad(
            format!("has an unknown value type `{other}`"),
            VALUE_HELP,
        )),
    }
}
