//! The envelope format's JSON Schema, derived from the serde types envelopes are read into
//! (`format.rs`), so it cannot name a key the reader does not take or miss one it does. Editors
//! validate and complete envelope YAML with it (`tollgate policy schema`), and the guide's
//! envelope reference is generated from it. The checker stays the authority: it also refuses
//! what a schema cannot say (an `extends` cycle, a rate limit on a rule that is not
//! `rate_limit`, a glob that cannot match), each with a span and a help line.

use serde_json::Value;

use super::PolicyEnvelope;

/// The schema's `$id`.
pub const SCHEMA_ID: &str = "https://tollgate.dev/schemas/envelope/v1";

/// The JSON Schema (draft 2020-12) of one envelope document.
pub fn envelope_json_schema() -> Value {
    let mut schema =
        serde_json::to_value(schemars::schema_for!(PolicyEnvelope)).unwrap_or(Value::Null);
    if let Some(o) = schema.as_object_mut() {
        o.insert("$id".into(), Value::from(SCHEMA_ID));
        o.insert("title".into(), Value::from("PolicyEnvelope"));
    }
    schema
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::envelope::check::{
        APPROVAL_RULE, ATTACH, DATA_RULE, ENVELOPE, LIMIT, MEMORY_RULE, MODEL_RULE, Shape,
        TOOL_LEVEL_RULE, TOOL_RULE,
    };

    fn keys_of(schema: &Value, object: &Value) -> Vec<String> {
        let object = match object["$ref"].as_str() {
            Some(r) => schema.pointer(&r[1..]).unwrap_or(&Value::Null),
            None => object,
        };
        let mut keys: Vec<String> = object["properties"]
            .as_object()
            .map(|p| p.keys().cloned().collect())
            .unwrap_or_default();
        keys.sort();
        keys
    }

    fn sorted(shape: &Shape) -> Vec<String> {
        let mut keys: Vec<String> = shape.keys.iter().map(|k| k.to_string()).collect();
        keys.sort();
        keys
    }

    /// The schema and the checker's unknown-key lists name the same keys for every mapping.
    #[test]
    fn the_schema_names_the_keys_the_checker_takes() {
        let schema = envelope_json_schema();
        let def = |name: &str| schema["$defs"][name].clone();
        for (shape, object) in [
            (&ENVELOPE, schema.clone()),
            (&ATTACH, def("Attachments")),
            (&TOOL_RULE, def("ToolRule")),
            (&LIMIT, def("RateLimit")),
            (&DATA_RULE, def("DataRule")),
            (&MODEL_RULE, def("ModelRule")),
            (&MEMORY_RULE, def("MemoryRule")),
            (&APPROVAL_RULE, def("ApprovalRule")),
            (&TOOL_LEVEL_RULE, def("ToolLevelRule")),
        ] {
            assert_eq!(keys_of(&schema, &object), sorted(shape), "{}", shape.what);
            assert_eq!(
                object["additionalProperties"],
                Value::Bool(false),
                "{}",
                shape.what
            );
        }
    }

    /// Every envelope of the fixtures and the examples, which the checker accepts, is valid
    /// under the schema; and a mistyped key or effect is not.
    #[test]
    fn every_fixture_envelope_is_valid_under_the_schema_and_a_wrong_one_is_not() {
        let schema = envelope_json_schema();
        let validator = jsonschema::validator_for(&schema).unwrap();
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut checked = 0;
        for dir in ["fixtures/envelopes", "examples/envelopes"] {
            let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
                continue;
            };
            for entry in entries.filter_map(Result::ok) {
                let path = entry.path();
                if !path.extension().is_some_and(|e| e == "yaml" || e == "yml") {
                    continue;
                }
                let text = std::fs::read_to_string(&path).unwrap();
                for doc in serde_yaml::Deserializer::from_str(&text) {
                    let value: Value = serde::Deserialize::deserialize(doc).unwrap();
                    let errors: Vec<String> = validator
                        .iter_errors(&value)
                        .map(|e| format!("{} at {}", e, e.instance_path()))
                        .collect();
                    assert!(errors.is_empty(), "{}: {errors:?}", path.display());
                    checked += 1;
                }
            }
        }
        assert!(checked >= 3, "{checked}");
        for wrong in [
            serde_json::json!({"id": "e", "version": 1, "tool": []}),
            serde_json::json!({"id": "e", "version": 1, "tools": [{"effect": "permit", "tools": ["x"]}]}),
            serde_json::json!({"id": "e", "version": 1, "tools": [{"effect": "allow", "tools": ["x"], "args": {"/p": {"glob": "x"}}}]}),
            serde_json::json!({"version": 1}),
        ] {
            assert!(!validator.is_valid(&wrong), "{wrong}");
        }
    }
}
