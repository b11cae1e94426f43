//! Assertion templates: what a new case asserts about the outcome it was made from. Each
//! template writes assertions of one class, preferring structure and policy over exact text:
//!
//! | template | class | asserts |
//! |---|---|---|
//! | `compile_shape` | structural | the items policy blocked and redacted, the items left out for want of room, the steps that held together, every compile succeeded |
//! | `tool_behavior` | behavioral | the tool path (the calls that ran, in order) |
//! | `policy_decisions` | policy | each tool call's decision, by call id |
//! | `output_structure` | output | the final output's shape: a JSON output's type and keys, else a non-empty text |
//! | `artifact_quality` | output | the writes made (tool and arguments), when there are any |
//!
//! Every assertion a template writes holds on the subject it was written from.

use serde_json::{Value, json};

use super::case::AssertionSet;
pub use super::case::Template;
use crate::evaluators::{AssertionSpec, EvalSubject, ToolPathMode};

/// The assertions `templates` write about `subject`.
pub fn assertions(templates: &[Template], subject: &EvalSubject) -> AssertionSet {
    let mut set = AssertionSet::default();
    for t in Template::ALL.into_iter().filter(|t| templates.contains(t)) {
        let out = set.of_mut(t.class());
        match t {
            Template::CompileShape => compile_shape(subject, out),
            Template::ToolBehavior => out.push(AssertionSpec::ToolPath {
                expected: subject.tool_path.clone(),
                mode: ToolPathMode::Exact,
            }),
            Template::PolicyDecisions => policy_decisions(subject, out),
            Template::OutputStructure => output_structure(subject, out),
            Template::ArtifactQuality => {
                let writes = &subject.output["writes"];
                if writes.as_array().is_some_and(|w| !w.is_empty()) {
                    out.push(equals("$.writes", writes.clone()));
                }
            }
        }
    }
    set
}

fn equals(path: &str, value: Value) -> AssertionSpec {
    AssertionSpec::JsonPathEquals {
        path: path.to_string(),
        value,
    }
}

fn compile_shape(subject: &EvalSubject, out: &mut Vec<AssertionSpec>) {
    let o = &subject.output;
    out.push(equals("$.blocked", o["blocked"].clone()));
    out.push(equals("$.redacted", o["redacted"].clone()));
    out.push(equals("$.budget_excluded", o["budget_excluded"].clone()));
    out.push(equals("$.intact_steps", o["intact_steps"].clone()));
    let compiles = o["compiles"].as_array();
    if compiles.is_some_and(|c| !c.is_empty() && c.iter().all(|c| c["failed"] == false)) {
        out.push(AssertionSpec::JsonSchema {
            path: Some("$.compiles[*]".to_string()),
            schema: json!({
                "type": "object",
                "properties": {"failed": {"const": false}},
                "required": ["failed"],
            }),
        });
    }
}

fn policy_decisions(subject: &EvalSubject, out: &mut Vec<AssertionSpec>) {
    let empty = Vec::new();
    for call in subject.output["calls"].as_array().unwrap_or(&empty) {
        let Some(id) = call["call"].as_str() else {
            continue;
        };
        // A filter selector names the call, so an inserted call does not shift the others.
        out.push(equals(
            &format!("$.calls[?@.call == {}].effect", quoted(id)),
            call["effect"].clone(),
        ));
    }
}

/// `id` as a JSONPath string literal.
fn quoted(id: &str) -> String {
    format!("'{}'", id.replace('\\', "\\\\").replace('\'', "\\'"))
}

fn output_structure(subject: &EvalSubject, out: &mut Vec<AssertionSpec>) {
    let Some(text) = subject.output["output"].as_str() else {
        out.push(equals("$.output", Value::Null));
        return;
    };
    if text.trim().is_empty() {
        out.push(equals("$.output", Value::String(text.to_string())));
        return;
    }
    let schema = match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(o)) => {
            let keys: Vec<&String> = o.keys().collect();
            // The output is a JSON object in a string: its keys are the structure.
            out.push(AssertionSpec::Regex {
                path: Some("$.output".to_string()),
                pattern: r"^\s*\{".to_string(),
            });
            for k in keys {
                out.push(AssertionSpec::Contains {
                    path: Some("$.output".to_string()),
                    text: format!("\"{k}\""),
                    case_sensitive: true,
                });
            }
            return;
        }
        _ => json!({"type": "string", "minLength": 1}),
    };
    out.push(AssertionSpec::JsonSchema {
        path: Some("$.output".to_string()),
        schema,
    });
}
