use serde_json::{Value, json};

use super::*;

/// Builds the spec (written as JSON, the way suites write it), judges `subject` and checks
/// the verdict and the exact message.
#[track_caller]
fn check(spec: Value, subject: &EvalSubject, passed: bool, message: &str) {
    let spec: AssertionSpec = serde_json::from_value(spec).unwrap();
    let evaluator = spec.build().unwrap();
    let outcome = evaluator.evaluate(subject);
    assert_eq!(outcome.message, message);
    assert_eq!(outcome.passed, passed, "{outcome:?}");
    assert_eq!(outcome.score, if passed { 1.0 } else { 0.0 });
    assert_eq!(outcome.evaluator, evaluator.name());
}

/// Builds the spec and checks the error it gives.
#[track_caller]
fn check_build_error(spec: Value, message: &str) {
    let spec: AssertionSpec = serde_json::from_value(spec).unwrap();
    match spec.build() {
        Ok(e) => panic!("`{}` built", e.name()),
        Err(e) => assert_eq!(e.to_string(), message),
    }
}

fn answer() -> EvalSubject {
    EvalSubject::from_output(json!({
        "answer": 42,
        "ratio": 0.5,
        "tags": ["billing", "Refund", 7],
        "items": [{"name": "a", "qty": 1}, {"name": "b", "qty": 2}],
        "messages": [{"content": "Hello there"}, {"content": "your refund is on its way"}],
    }))
}

#[test]
fn json_path_equals() {
    let s = answer();
    let spec = |path: &str, value: Value| json!({"kind": "json_path_equals", "path": path, "value": value});
    check(spec("$.answer", json!(42)), &s, true, "`$.answer` is `42`");
    check(
        spec("$.answer", json!(42.0)),
        &s,
        true,
        "`$.answer` is `42.0`",
    );
    check(
        spec("$.items[1]", json!({"qty": 2, "name": "b"})),
        &s,
        true,
        r#"`$.items[1]` is `{"name":"b","qty":2}`"#,
    );
    check(
        spec("$.answer", json!("42")),
        &s,
        false,
        r#"expected `$.answer` to be `"42"`; found `42`"#,
    );
    check(
        spec("$.missing", json!(1)),
        &s,
        false,
        "expected `$.missing` to be `1`; the path selected nothing",
    );
    check(
        spec("$.items[*].qty", json!(1)),
        &s,
        false,
        "expected `$.items[*].qty` to select one node equal to `1`; it selected 2 nodes: `1`, `2`",
    );
    check(
        spec("$..*", json!(1)),
        &EvalSubject::from_output(json!([1, 2, 3, 4, 5, 6, 7])),
        false,
        "expected `$..*` to select one node equal to `1`; it selected 7 nodes: `1`, `2`, `3`, `4`, `5`, and 2 more",
    );
}

#[test]
fn contains() {
    let s = answer();
    let spec = |path: Option<&str>, text: &str| match path {
        Some(p) => json!({"kind": "contains", "path": p, "text": text}),
        None => json!({"kind": "contains", "text": text}),
    };
    // Without a path and without text: the output as compact JSON.
    check(
        spec(None, r#""qty":2"#),
        &s,
        true,
        r#"the output contains `"qty":2`"#,
    );
    check(
        spec(None, "nope"),
        &EvalSubject::from_output(json!({"a": 1})),
        false,
        r#"expected the output to contain `nope`; it does not (output: `{"a":1}`)"#,
    );
    // The text wins over the output.
    let text = EvalSubject {
        output: json!({"hidden": "secret"}),
        text: Some("The refund was issued.".into()),
        tool_path: vec![],
    };
    check(
        spec(None, "refund"),
        &text,
        true,
        "the text contains `refund`",
    );
    check(
        spec(None, "secret"),
        &text,
        false,
        "expected the text to contain `secret`; it does not (text: `The refund was issued.`)",
    );
    check(
        json!({"kind": "contains", "text": "THE REFUND", "case_sensitive": false}),
        &text,
        true,
        "the text contains `THE REFUND` (ignoring case)",
    );
    // With a path: any selected string.
    check(
        spec(Some("$.messages[*].content"), "refund"),
        &s,
        true,
        "the string at `$['messages'][1]['content']` contains `refund`",
    );
    check(
        spec(Some("$.tags[*]"), "refund"),
        &s,
        false,
        "expected a string at `$.tags[*]` to contain `refund`; none of the 2 strings selected does: `$['tags'][0]` is `billing`, `$['tags'][1]` is `Refund`",
    );
    check(
        json!({"kind": "contains", "path": "$.tags[*]", "text": "refund", "case_sensitive": false}),
        &s,
        true,
        "the string at `$['tags'][1]` contains `refund` (ignoring case)",
    );
    check(
        spec(Some("$.items[*].qty"), "1"),
        &s,
        false,
        "expected a string at `$.items[*].qty` to contain `1`; the path selected 2 nodes, none of them a string",
    );
    check(
        spec(Some("$.nothing"), "x"),
        &s,
        false,
        "expected a string at `$.nothing` to contain `x`; the path selected nothing",
    );
    // Long texts are shortened in messages.
    let long = EvalSubject::from_text("x".repeat(100));
    check(
        spec(None, "y"),
        &long,
        false,
        &format!(
            "expected the text to contain `y`; it does not (text: `{}…`)",
            "x".repeat(80)
        ),
    );
}

#[test]
fn regex() {
    let s = answer();
    let spec = |path: Option<&str>, pattern: &str| match path {
        Some(p) => json!({"kind": "regex", "path": p, "pattern": pattern}),
        None => json!({"kind": "regex", "pattern": pattern}),
    };
    let text = EvalSubject::from_text("order #1234 shipped");
    check(
        spec(None, r"#\d{4}\b"),
        &text,
        true,
        r"the text matches `#\d{4}\b`",
    );
    check(
        spec(None, r"^shipped"),
        &text,
        false,
        "expected the text to match `^shipped`; it does not (text: `order #1234 shipped`)",
    );
    check(
        spec(Some("$.messages[*].content"), "(?i)^hello"),
        &s,
        true,
        "the string at `$['messages'][0]['content']` matches `(?i)^hello`",
    );
    check(
        spec(Some("$.items[*].name"), "^[0-9]+$"),
        &s,
        false,
        "expected a string at `$.items[*].name` to match `^[0-9]+$`; none of the 2 strings selected does: `$['items'][0]['name']` is `a`, `$['items'][1]['name']` is `b`",
    );
    check(
        spec(Some("$.answer"), "4"),
        &s,
        false,
        "expected a string at `$.answer` to match `4`; the path selected 1 node, none of them a string",
    );
}

#[test]
fn json_schema() {
    let s = answer();
    let schema = json!({
        "type": "object",
        "required": ["answer", "items"],
        "properties": {
            "answer": {"type": "integer"},
            "items": {"type": "array", "items": {"$ref": "#/$defs/item"}},
        },
        "$defs": {"item": {"type": "object", "required": ["name", "qty"], "properties": {"qty": {"type": "integer", "minimum": 1}}}},
    });
    check(
        json!({"kind": "json_schema", "schema": schema}),
        &s,
        true,
        "the output matches the schema",
    );
    check(
        json!({"kind": "json_schema", "schema": schema}),
        &EvalSubject::from_output(json!({"answer": "x", "items": [{"name": "a", "qty": 0}]})),
        false,
        r#"the output does not match the schema: at `/answer`: "x" is not of type "integer"; at `/items/0/qty`: 0 is less than the minimum of 1"#,
    );
    check(
        json!({"kind": "json_schema", "schema": {"required": ["a"]}}),
        &EvalSubject::from_output(json!({})),
        false,
        r#"the output does not match the schema: "a" is a required property"#,
    );
    // With a path: every selected node.
    let item = json!({"type": "object", "properties": {"qty": {"type": "integer", "maximum": 1}}});
    check(
        json!({"kind": "json_schema", "path": "$.items[0]", "schema": item}),
        &s,
        true,
        "1 node selected by `$.items[0]` matches the schema",
    );
    check(
        json!({"kind": "json_schema", "path": "$.items[*]", "schema": item}),
        &s,
        false,
        r#"`$['items'][1]` does not match the schema (`{"name":"b","qty":2}`): at `/qty`: 2 is greater than the maximum of 1"#,
    );
    check(
        json!({"kind": "json_schema", "path": "$.items[*]", "schema": {"type": "object"}}),
        &s,
        true,
        "2 nodes selected by `$.items[*]` match the schema",
    );
    check(
        json!({"kind": "json_schema", "path": "$.none", "schema": item}),
        &s,
        false,
        "expected `$.none` to select nodes matching the schema; the path selected nothing",
    );
    // Formats are asserted.
    check(
        json!({"kind": "json_schema", "schema": {"type": "string", "format": "date"}}),
        &EvalSubject::from_output(json!("2024-02-30")),
        false,
        r#"the output does not match the schema: "2024-02-30" is not a "date""#,
    );
}

#[test]
fn tool_path() {
    let calls = EvalSubject::default().with_tool_path(["search", "read", "read", "write"]);
    let spec = |expected: &[&str], mode: &str| json!({"kind": "tool_path", "expected": expected, "mode": mode});
    check(
        json!({"kind": "tool_path", "expected": ["search", "read", "read", "write"]}),
        &calls,
        true,
        "the tools called `[search, read, read, write]` match",
    );
    check(
        spec(&["search", "write"], "exact"),
        &calls,
        false,
        "expected the tools `[search, write]` in this order; called `[search, read, read, write]`: call 2 is `read`, expected `write`",
    );
    check(
        spec(&["search", "read", "read", "write", "send"], "exact"),
        &calls,
        false,
        "expected the tools `[search, read, read, write, send]` in this order; called `[search, read, read, write]`: call 5 to `send` is missing",
    );
    check(
        spec(&["search", "read", "read"], "exact"),
        &calls,
        false,
        "expected the tools `[search, read, read]` in this order; called `[search, read, read, write]`: call 4 to `write` is extra",
    );
    check(
        spec(&[], "exact"),
        &EvalSubject::default(),
        true,
        "the tools called `[]` match",
    );
    check(
        spec(&["search", "write"], "subsequence"),
        &calls,
        true,
        "the tools called `[search, read, read, write]` match",
    );
    check(
        spec(&["write", "search"], "subsequence"),
        &calls,
        false,
        "expected the tools `[write, search]` in this order, other calls allowed between them; called `[search, read, read, write]`: no call to `search` after `write`",
    );
    check(
        spec(&["delete"], "subsequence"),
        &calls,
        false,
        "expected the tools `[delete]` in this order, other calls allowed between them; called `[search, read, read, write]`: no call to `delete`",
    );
    check(
        spec(&["write", "read", "search"], "set"),
        &calls,
        true,
        "the tools called `[search, read, read, write]` match",
    );
    check(
        spec(&["read", "send", "search", "delete"], "set"),
        &calls,
        false,
        "expected the set of tools {delete, read, search, send}; called `[search, read, read, write]`: never called `delete`, `send`, also called `write`",
    );
}

#[test]
fn build_errors() {
    check_build_error(
        json!({"kind": "json_path_equals", "path": "answer", "value": 1}),
        "`answer` is not a valid JSONPath: parser error at `answer` (character 1)\n  help: paths follow RFC 9535 and start at the root `$`, for example `$.answer`, `$.items[0].name` or `$.messages[*].content`",
    );
    check_build_error(
        json!({"kind": "regex", "pattern": "a(b"}),
        "`a(b` is not a valid regular expression: unclosed group\n  help: the syntax is the `regex` crate's (no look-around or backreferences); escape `.`, `(`, `[`, `{`, `*`, `+`, `?` and `|` with `\\` to match them literally, and prefix `(?i)` to ignore case",
    );
    let bad_path = |path: &str| {
        AssertionSpec::Regex {
            path: Some(path.into()),
            pattern: "a".into(),
        }
        .build()
        .err()
        .unwrap()
    };
    assert_eq!(
        bad_path("$.items[*]."),
        EvaluatorError::BadJsonPath {
            path: "$.items[*].".into(),
            reason: "in dot member name, must start with lowercase alpha or '_' at the end".into(),
        }
    );
    assert_eq!(
        bad_path("$.a b"),
        EvaluatorError::BadJsonPath {
            path: "$.a b".into(),
            reason: "parser error at ` b` (character 4)".into(),
        }
    );
    check_build_error(
        json!({"kind": "json_schema", "schema": {"type": "strin"}}),
        "the JSON schema is not valid: at `/type`: \"strin\" is not valid under any of the schemas listed in the 'anyOf' keyword\n  help: check it against its draft's meta-schema (2020-12 unless `$schema` says otherwise); remote `$ref`s are not fetched, so put referenced schemas under `$defs` and refer to them as `#/$defs/NAME`",
    );
    let remote = AssertionSpec::JsonSchema {
        path: None,
        schema: json!({"$ref": "https://example.com/schema.json"}),
    };
    let err = remote.build().err().unwrap().to_string();
    assert!(
        err.starts_with("the JSON schema is not valid: Resource 'https://example.com/schema.json' is not present in a registry and retrieving it failed: Retrieval is disabled"),
        "{err}"
    );
    check_build_error(
        json!({"kind": "contains", "text": ""}),
        "a `contains` assertion needs a non-empty `text`\n  help: an empty text matches everything; use `json_path_equals` or `json_schema` to check that a value exists",
    );
}

#[test]
fn specs_deserialise_with_defaults_and_reject_unknown_fields() {
    let spec: AssertionSpec =
        serde_json::from_value(json!({"kind": "contains", "text": "x"})).unwrap();
    assert_eq!(
        spec,
        AssertionSpec::Contains {
            path: None,
            text: "x".into(),
            case_sensitive: true
        }
    );
    let spec: AssertionSpec =
        serde_json::from_value(json!({"kind": "tool_path", "expected": ["a"]})).unwrap();
    assert_eq!(
        spec,
        AssertionSpec::ToolPath {
            expected: vec!["a".into()],
            mode: ToolPathMode::Exact
        }
    );
    assert_eq!(spec.kind(), "tool_path");
    let err = serde_json::from_value::<AssertionSpec>(
        json!({"kind": "regex", "pattern": "a", "paht": "$"}),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("unknown field `paht`"), "{err}");
    let err = serde_json::from_value::<AssertionSpec>(json!({"kind": "sentiment"}))
        .unwrap_err()
        .to_string();
    assert!(err.contains("unknown variant `sentiment`"), "{err}");
    // Round trip.
    let yaml = "kind: json_schema\npath: $.a\nschema: {type: object}\n";
    let spec: AssertionSpec = serde_yaml::from_str(yaml).unwrap();
    let back: AssertionSpec = serde_json::from_value(serde_json::to_value(&spec).unwrap()).unwrap();
    assert_eq!(spec, back);
}

#[test]
fn evaluators_are_shareable_and_subjects_serialise() {
    fn shareable<T: Send + Sync + ?Sized>(_: &T) {}
    let e = AssertionSpec::JsonSchema {
        path: None,
        schema: json!({}),
    }
    .build()
    .unwrap();
    shareable(&*e);
    let s: EvalSubject = serde_json::from_value(json!({"output": {"a": 1}})).unwrap();
    assert_eq!(s, EvalSubject::from_output(json!({"a": 1})));
    assert_eq!(
        serde_json::to_value(e.evaluate(&s)).unwrap(),
        json!({"evaluator": "json_schema", "passed": true, "score": 1.0, "message": "the output matches the schema"})
    );
}

/// Bug 4 of issue 33: with a changed budget, "expected `$.budget_excluded` to be [… found
/// […" cut both sides at the same point and hid their difference.
#[test]
fn a_failure_between_long_values_shows_where_they_first_differ() {
    let ids = |last: &str| -> Vec<String> {
        (0..6)
            .map(|i| format!("mem-fact-the-same-long-prefix-{i}"))
            .chain([last.to_string()])
            .collect()
    };
    let subject = EvalSubject::from_output(json!({"budget_excluded": ids("mem-fact-z")}));
    let spec = json!({"kind": "json_path_equals", "path": "$.budget_excluded",
                      "value": ids("mem-fact-y")});
    let evaluator = serde_json::from_value::<AssertionSpec>(spec)
        .unwrap()
        .build()
        .unwrap();
    let outcome = evaluator.evaluate(&subject);
    assert!(!outcome.passed);
    assert!(
        outcome.message.ends_with(
            "; they first differ at `[6]`: expected `\"mem-fact-y\"`, found `\"mem-fact-z\"`"
        ),
        "{}",
        outcome.message
    );

    // Objects by key, strings by character; short values need no pointer.
    let long = "x".repeat(100);
    let subject = EvalSubject::from_output(json!({"o": {"a": 1, "b": format!("{long}-found")}}));
    let spec = json!({"kind": "json_path_equals", "path": "$.o",
                      "value": {"a": 1, "b": format!("{long}-wanted")}});
    let outcome = serde_json::from_value::<AssertionSpec>(spec)
        .unwrap()
        .build()
        .unwrap()
        .evaluate(&subject);
    assert!(
        outcome
            .message
            .contains("they first differ at `.b (character 101)`: expected `xxxxxxx-wanted`, found `xxxxxxx-found`"),
        "{}",
        outcome.message
    );
}
