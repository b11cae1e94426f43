//! `json_path_equals`: one node at a JSONPath, equal to an expected value.

use serde_json::Value;

use super::{EvalOutcome, EvalSubject, Evaluator, EvaluatorError, Path, count, quote_json};

/// Passes when the path selects exactly one node and that node equals the expected value.
/// Numbers compare by value (`1` equals `1.0`); everything else compares structurally.
#[derive(Debug, Clone)]
pub struct JsonPathEquals {
    name: String,
    path: Path,
    value: Value,
}

impl JsonPathEquals {
    /// Parses `path`; fails if it is not a valid JSONPath.
    pub fn new(path: &str, value: Value) -> Result<JsonPathEquals, EvaluatorError> {
        let path = Path::parse(path)?;
        Ok(JsonPathEquals {
            name: format!("json_path_equals({})", path.text),
            path,
            value,
        })
    }
}

impl Evaluator for JsonPathEquals {
    fn name(&self) -> &str {
        &self.name
    }

    fn evaluate(&self, subject: &EvalSubject) -> EvalOutcome {
        let nodes = self.path.query.query(&subject.output).all();
        let path = &self.path.text;
        let expected = quote_json(&self.value);
        match nodes.as_slice() {
            [] => EvalOutcome::fail(
                &self.name,
                format!("expected `{path}` to be {expected}; the path selected nothing"),
            ),
            [node] if json_equal(node, &self.value) => {
                EvalOutcome::pass(&self.name, format!("`{path}` is {expected}"))
            }
            [node] => EvalOutcome::fail(
                &self.name,
                format!(
                    "expected `{path}` to be {expected}; found {}",
                    quote_json(node)
                ),
            ),
            several => EvalOutcome::fail(
                &self.name,
                format!(
                    "expected `{path}` to select one node equal to {expected}; it selected {}: {}",
                    count(several.len(), "node"),
                    list(several)
                ),
            ),
        }
    }
}

/// Most nodes listed in a message.
const LIST_LIMIT: usize = 5;

/// The first few nodes, quoted and comma-separated.
fn list(nodes: &[&Value]) -> String {
    let mut out: Vec<String> = nodes
        .iter()
        .take(LIST_LIMIT)
        .map(|n| quote_json(n))
        .collect();
    if nodes.len() > LIST_LIMIT {
        out.push(format!("and {} more", nodes.len() - LIST_LIMIT));
    }
    out.join(", ")
}

/// Structural equality where numbers compare by value: serde_json's own `==` tells `1` from
/// `1.0`, which a hand-written expectation should not have to.
pub(super) fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            if x.is_f64() || y.is_f64() {
                x.as_f64() == y.as_f64()
            } else {
                x == y
            }
        }
        (Value::Array(xs), Value::Array(ys)) => {
            xs.len() == ys.len() && xs.iter().zip(ys).all(|(x, y)| json_equal(x, y))
        }
        (Value::Object(xs), Value::Object(ys)) => {
            xs.len() == ys.len()
                && xs
                    .iter()
                    .all(|(k, x)| ys.get(k).is_some_and(|y| json_equal(x, y)))
        }
        _ => a == b,
    }
}
