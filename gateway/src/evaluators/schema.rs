//! `json_schema`: the output, or the nodes a JSONPath selects, valid against a JSON Schema.

use serde_json::Value;

use super::{EvalOutcome, EvalSubject, Evaluator, EvaluatorError, Path, count, quote};

/// Passes when the output (or every node the path selects, at least one) is valid. The schema
/// is compiled once, offline, with `format` asserted.
#[derive(Debug)]
pub struct JsonSchemaValid {
    name: String,
    path: Option<Path>,
    validator: jsonschema::Validator,
}

impl JsonSchemaValid {
    /// Parses `path` if given and compiles `schema`; fails if the schema is not valid against
    /// its meta-schema or refers to another document.
    pub fn new(path: Option<&str>, schema: &Value) -> Result<JsonSchemaValid, EvaluatorError> {
        let path = path.map(Path::parse).transpose()?;
        let validator = jsonschema::options()
            .offline()
            .should_validate_formats(true)
            .build(schema)
            .map_err(|e| EvaluatorError::BadSchema {
                reason: describe(&e),
            })?;
        Ok(JsonSchemaValid {
            name: match &path {
                Some(p) => format!("json_schema({})", p.text),
                None => "json_schema".to_string(),
            },
            path,
            validator,
        })
    }

    /// Why `instance` is invalid (the first few errors), or `None` when it is valid.
    fn problems(&self, instance: &Value) -> Option<String> {
        let errors: Vec<String> = self
            .validator
            .iter_errors(instance)
            .map(|e| describe(&e))
            .collect();
        if errors.is_empty() {
            return None;
        }
        let mut shown: Vec<String> = errors.iter().take(ERROR_LIMIT).cloned().collect();
        if errors.len() > ERROR_LIMIT {
            shown.push(format!("and {} more", errors.len() - ERROR_LIMIT));
        }
        Some(shown.join("; "))
    }
}

/// Most schema errors listed in a message.
const ERROR_LIMIT: usize = 3;

/// One validation error with where it is: `at `/a/0`: 5 is not of type "string"`.
fn describe(e: &jsonschema::ValidationError<'_>) -> String {
    let at = e.instance_path().to_string();
    if at.is_empty() {
        e.to_string()
    } else {
        format!("at `{at}`: {e}")
    }
}

impl Evaluator for JsonSchemaValid {
    fn name(&self) -> &str {
        &self.name
    }

    fn evaluate(&self, subject: &EvalSubject) -> EvalOutcome {
        let Some(path) = &self.path else {
            return match self.problems(&subject.output) {
                None => EvalOutcome::pass(&self.name, "the output matches the schema"),
                Some(why) => EvalOutcome::fail(
                    &self.name,
                    format!("the output does not match the schema: {why}"),
                ),
            };
        };
        let nodes = path.query.query_located(&subject.output).all();
        if nodes.is_empty() {
            return EvalOutcome::fail(
                &self.name,
                format!(
                    "expected `{}` to select nodes matching the schema; the path selected nothing",
                    path.text
                ),
            );
        }
        for node in &nodes {
            if let Some(why) = self.problems(node.node()) {
                return EvalOutcome::fail(
                    &self.name,
                    format!(
                        "`{}` does not match the schema ({}): {why}",
                        node.location(),
                        quote(&node.node().to_string())
                    ),
                );
            }
        }
        EvalOutcome::pass(
            &self.name,
            format!(
                "{} selected by `{}` {} the schema",
                count(nodes.len(), "node"),
                path.text,
                if nodes.len() == 1 { "matches" } else { "match" }
            ),
        )
    }
}
