//! `json_path_equals`: one node at a JSONPath, equal to an expected value.

use serde_json::Value;

use super::{EvalOutcome, EvalSubject, Evaluator, EvaluatorError, Path, count, quote, quote_json};

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
                    "expected `{path}` to be {expected}; found {}{}",
                    quote_json(node),
                    first_difference(&self.value, node)
                        .map(|d| format!("; they first differ at {d}"))
                        .unwrap_or_default()
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

/// Where two values first differ, when one is too long to show whole (quotes cut at the same
/// point look alike, issue 33): the place below the path, and what each side has there. `None`
/// when the quotes alone show it.
fn first_difference(expected: &Value, found: &Value) -> Option<String> {
    let cut = |v: &Value| quote_json(v).ends_with("…`");
    if !(cut(expected) || cut(found)) {
        return None;
    }
    let (at, want, have) = differ(expected, found, String::new())?;
    let at = if at.is_empty() {
        "the start".to_string()
    } else {
        format!("`{at}`")
    };
    Some(format!("{at}: expected {want}, found {have}"))
}

/// The first place (`[2]`, `.key`) where two values differ, and what each has there.
fn differ(expected: &Value, found: &Value, at: String) -> Option<(String, String, String)> {
    let absent = || "nothing".to_string();
    match (expected, found) {
        (Value::Array(xs), Value::Array(ys)) => {
            for i in 0..xs.len().max(ys.len()) {
                let here = format!("{at}[{i}]");
                match (xs.get(i), ys.get(i)) {
                    (Some(x), Some(y)) if json_equal(x, y) => {}
                    (Some(x), Some(y)) => return differ(x, y, here),
                    (Some(x), None) => return Some((here, quote_json(x), absent())),
                    (None, Some(y)) => return Some((here, absent(), quote_json(y))),
                    (None, None) => {}
                }
            }
            None
        }
        (Value::Object(xs), Value::Object(ys)) => {
            let mut keys: Vec<&String> = xs.keys().chain(ys.keys()).collect();
            keys.sort();
            keys.dedup();
            for k in keys {
                let here = format!("{at}.{k}");
                match (xs.get(k), ys.get(k)) {
                    (Some(x), Some(y)) if json_equal(x, y) => {}
                    (Some(x), Some(y)) => return differ(x, y, here),
                    (Some(x), None) => return Some((here, quote_json(x), absent())),
                    (None, Some(y)) => return Some((here, absent(), quote_json(y))),
                    (None, None) => {}
                }
            }
            None
        }
        // A short string is shown whole; a long one from a little before where it differs.
        (Value::String(x), Value::String(y))
            if x != y && (quote(x).ends_with("…`") || quote(y).ends_with("…`")) =>
        {
            let i = x.chars().zip(y.chars()).take_while(|(a, b)| a == b).count();
            let tail = |s: &str| {
                let rest: String = s.chars().skip(i.saturating_sub(8)).collect();
                quote(&rest)
            };
            Some((format!("{at} (character {i})"), tail(x), tail(y)))
        }
        _ if json_equal(expected, found) => None,
        _ => Some((at, quote_json(expected), quote_json(found))),
    }
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
