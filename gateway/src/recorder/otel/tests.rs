use std::path::PathBuf;

use proptest::prelude::*;
use serde_json::{Value, json};

use super::*;
use crate::providers::{ChatRequest, ChatResponse};
use crate::recorder::Recorder;
use crate::recorder::format::RUN_FORMAT;
use crate::store::tests::tempdir::Dir;

const TRACE: &str = "5b8efff798038103d269b633813fc60c";

fn fixture_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../fixtures/otel")
        .join(name)
}

fn fixture() -> Value {
    let text = std::fs::read_to_string(fixture_path("coding-agent-trace.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn options() -> OtlpImportOptions {
    OtlpImportOptions {
        scope: "org:acme/repo:api".to_owned(),
        clearance: "internal".to_owned(),
        task: None,
    }
}

fn one_run(doc: &Value) -> RunFile {
    let mut runs = runs_from_otlp(doc, &options()).unwrap();
    assert_eq!(runs.len(), 1);
    runs.remove(0)
}

/// `(step, kind)` of every event.
fn outline(run: &RunFile) -> Vec<(u32, &str)> {
    run.events
        .iter()
        .map(|e| (e.step, e.kind.as_str()))
        .collect()
}

fn events_of<'a>(run: &'a RunFile, kind: &str) -> Vec<&'a Value> {
    run.events
        .iter()
        .filter(|e| e.kind == kind)
        .map(|e| &e.payload)
        .collect()
}

// ---- small hand-built exports -------------------------------------------------------------

const T0_NANOS: u64 = 1_793_610_000_000_000_000;

fn attributes(pairs: &[(&str, Value)]) -> Value {
    Value::Array(
        pairs
            .iter()
            .map(|(key, value)| json!({ "key": key, "value": value }))
            .collect(),
    )
}

fn s(text: &str) -> Value {
    json!({ "stringValue": text })
}

/// A span of trace `TRACE` from `start_ms` to `end_ms` after 2026-11-02T09:00:00Z.
fn span(id: &str, parent: &str, name: &str, start_ms: u64, end_ms: u64, attrs: Value) -> Value {
    json!({
        "traceId": TRACE, "spanId": id, "parentSpanId": parent, "name": name, "kind": 1,
        "startTimeUnixNano": (T0_NANOS + start_ms * 1_000_000).to_string(),
        "endTimeUnixNano": (T0_NANOS + end_ms * 1_000_000).to_string(),
        "attributes": attrs, "status": {},
    })
}

fn export(spans: Vec<Value>) -> Value {
    json!({ "resourceSpans": [{
        "resource": { "attributes": attributes(&[("service.name", s("loop-service"))]) },
        "scopeSpans": [{ "scope": { "name": "test" }, "spans": spans }],
    }]})
}

fn chat_attrs(output_text: &str) -> Value {
    let output = json!([{ "role": "assistant", "parts": [{ "type": "text", "content": output_text }],
                          "finish_reason": "stop" }]);
    attributes(&[
        ("gen_ai.operation.name", s("chat")),
        ("gen_ai.provider.name", s("anthropic")),
        ("gen_ai.request.model", s("claude-sonnet-4")),
        ("gen_ai.output.messages", s(&output.to_string())),
    ])
}

fn tool_attrs(tool: &str, call_id: &str) -> Value {
    attributes(&[
        ("gen_ai.operation.name", s("execute_tool")),
        ("gen_ai.tool.name", s(tool)),
        ("gen_ai.tool.call.id", s(call_id)),
    ])
}

// ---- the fixture --------------------------------------------------------------------------

#[test]
fn the_coding_agent_trace_becomes_one_run() {
    let run = one_run(&fixture());
    assert_eq!(run.format, RUN_FORMAT);
    let header = &run.run;
    assert_eq!(header.id, format!("otel-{TRACE}"));
    assert_eq!(header.agent, "coder");
    assert_eq!(header.task, "conv_01JC8X4TQ6");
    assert_eq!(header.scope, "org:acme/repo:api");
    assert_eq!(header.clearance, "internal");
    assert_eq!(header.status, "succeeded");
    assert_eq!(header.started_at, "2026-11-02T09:00:00Z");
    assert_eq!(header.finished_at.as_deref(), Some("2026-11-02T09:01:11Z"));
    assert_eq!(
        header.metadata,
        json!({ "source": "otlp", "trace_id": TRACE, "root_span": "invoke_agent coder",
                "service_name": "acme-coder", "conversation_id": "conv_01JC8X4TQ6" })
    );
    let steps: Vec<(u32, &str, &str)> = run
        .steps
        .iter()
        .map(|s| (s.index, s.name.as_str(), s.agent.as_str()))
        .collect();
    assert_eq!(
        steps,
        [
            (0, "invoke_agent coder", "coder"),
            (1, "invoke_agent reviewer", "reviewer")
        ]
    );
    let turn = [
        (0, "model_call"),
        (0, "model_output"),
        (0, "tool_call"),
        (0, "tool_result"),
    ];
    let mut expected = vec![(0, "model_call"), (0, "note"), (0, "model_output")];
    expected.extend([(0, "tool_call"), (0, "tool_result")]);
    expected.extend(turn); // run_tests
    expected.extend(turn[..3].iter().copied()); // apply_patch, which fails
    expected.extend([(0, "tool_result"), (0, "error")]);
    expected.extend(turn); // read_file
    expected.extend(turn); // apply_patch
    expected.extend(turn); // run_tests
    expected.extend([(1, "model_call"), (1, "model_output"), (1, "note")]); // reviewer
    expected.extend([(0, "model_call"), (0, "model_output"), (0, "output")]);
    assert_eq!(outline(&run), expected);
    for (i, event) in run.events.iter().enumerate() {
        assert_eq!(event.seq, i as u64);
        assert!(event.prev.is_none() && event.hash.is_none());
    }
    assert_eq!(run.events[0].at, "2026-11-02T09:00:00Z");
    assert_eq!(run.events.last().unwrap().at, "2026-11-02T09:01:11Z");
}

#[test]
fn model_calls_carry_a_chat_request_and_its_hash() {
    let run = one_run(&fixture());
    let call = events_of(&run, "model_call")[0];
    assert_eq!(call["provider"], "openai");
    let request: ChatRequest = serde_json::from_value(call["request"].clone()).unwrap();
    assert_eq!(request.model, "gpt-4.1");
    assert_eq!(request.temperature, Some(0.2));
    assert_eq!(request.max_tokens, Some(4096));
    let roles: Vec<&str> = request.messages.iter().map(|m| m.role.as_str()).collect();
    assert_eq!(roles, ["system", "user"]);
    assert!(request.messages[0].content.starts_with("You are coder"));
    assert!(request.messages[1].content.contains("test_parse_iso_week"));
    assert_eq!(call["request_hash"], request.hash());
    // The request round-trips: what is recorded is exactly what hashes.
    assert_eq!(request.to_json(), call["request"]);

    let output = events_of(&run, "model_output")[0];
    assert_eq!(output["request_hash"], call["request_hash"]);
    let response: ChatResponse = serde_json::from_value(output["response"].clone()).unwrap();
    assert_eq!(response.id, "chatcmpl-BQ7x01");
    assert_eq!(response.model, "gpt-4.1-2025-04-14");
    assert_eq!(response.content, "");
    assert_eq!(response.finish_reason, "tool_call");
    assert_eq!(
        (
            response.usage.prompt_tokens,
            response.usage.completion_tokens
        ),
        (1184, 37)
    );
    assert_eq!(serde_json::to_value(&response).unwrap(), output["response"]);

    // Later turns carry the history: tool responses are message text.
    let second: ChatRequest =
        serde_json::from_value(events_of(&run, "model_call")[1]["request"].clone()).unwrap();
    let roles: Vec<&str> = second.messages.iter().map(|m| m.role.as_str()).collect();
    assert_eq!(roles, ["system", "user", "assistant", "tool"]);
    assert!(
        second.messages[3]
            .content
            .starts_with("from datetime import date")
    );

    let last = events_of(&run, "model_output").last().copied().unwrap();
    assert_eq!(last["response"]["finish_reason"], "stop");
    assert!(
        last["response"]["content"]
            .as_str()
            .unwrap()
            .starts_with("Fixed `parse_iso_week`")
    );
}

#[test]
fn tool_spans_become_calls_and_results_and_a_failure_an_error() {
    let run = one_run(&fixture());
    let calls = events_of(&run, "tool_call");
    let tools: Vec<&str> = calls.iter().map(|c| c["tool"].as_str().unwrap()).collect();
    assert_eq!(
        tools,
        [
            "read_file",
            "run_tests",
            "apply_patch",
            "read_file",
            "apply_patch",
            "run_tests"
        ]
    );
    assert_eq!(calls[0]["call_id"], "call_01");
    assert_eq!(calls[0]["arguments"], json!({ "path": "src/dates.py" }));
    // A kvlist value is structured arguments as they are.
    assert_eq!(
        calls[1]["arguments"],
        json!({ "paths": ["tests/test_dates.py"], "verbose": false })
    );
    let results = events_of(&run, "tool_result");
    let statuses: Vec<&str> = results
        .iter()
        .map(|r| r["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["ok", "ok", "error", "ok", "ok", "ok"]);
    // Text stays text; JSON in a string is parsed.
    assert!(
        results[0]["output"]
            .as_str()
            .unwrap()
            .starts_with("from datetime")
    );
    assert_eq!(results[1]["output"]["failed"], 1);
    assert_eq!(
        results[2],
        &json!({ "call_id": "call_03", "status": "error",
                 "output": "patch does not apply: hunk #1 FAILED at src/dates.py:41" })
    );
    assert_eq!(
        events_of(&run, "error"),
        [&json!({ "message": "patch does not apply: hunk #1 FAILED at src/dates.py:41" })]
    );
}

#[test]
fn event_based_content_of_older_instrumentations_is_read() {
    let run = one_run(&fixture());
    let reviewer_call = run
        .events
        .iter()
        .find(|e| e.kind == "model_call" && e.step == 1)
        .unwrap();
    assert_eq!(reviewer_call.payload["provider"], "openai"); // from `gen_ai.system`
    let request: ChatRequest =
        serde_json::from_value(reviewer_call.payload["request"].clone()).unwrap();
    assert_eq!(request.model, "gpt-4.1-mini");
    let roles: Vec<&str> = request.messages.iter().map(|m| m.role.as_str()).collect();
    assert_eq!(roles, ["system", "user"]);
    assert!(request.messages[1].content.starts_with("Review this diff:"));
    let output = run
        .events
        .iter()
        .find(|e| e.kind == "model_output" && e.step == 1)
        .unwrap();
    let response: ChatResponse =
        serde_json::from_value(output.payload["response"].clone()).unwrap();
    assert!(response.content.starts_with("LGTM."));
    assert_eq!(response.finish_reason, "stop");
    assert_eq!(
        (
            response.usage.prompt_tokens,
            response.usage.completion_tokens
        ),
        (642, 23)
    );
}

/// The whole run, compared with `fixtures/otel/coding-agent-trace.run.json`. Set
/// `TOLLGATE_BLESS=1` to rewrite the expected file after a deliberate change.
#[test]
fn the_coding_agent_trace_matches_its_expected_run_file() {
    let run = one_run(&fixture());
    let actual = serde_json::to_string_pretty(&run).unwrap() + "\n";
    let path = fixture_path("coding-agent-trace.run.json");
    if std::env::var_os("TOLLGATE_BLESS").is_some() {
        std::fs::write(&path, &actual).unwrap();
    }
    let expected = std::fs::read_to_string(&path).unwrap();
    assert!(
        actual == expected,
        "{} differs; rerun with TOLLGATE_BLESS=1 to update",
        path.display()
    );
}

#[test]
fn the_imported_run_passes_the_recorders_checks() {
    let dir = Dir::new("otel-import");
    let store = crate::store::tests::open_in(dir.path());
    let recorder = Recorder::new(store);
    let run = one_run(&fixture());
    let summary = recorder.import(&run).unwrap();
    assert_eq!(
        (summary.steps, summary.events),
        (2, run.events.len() as u64)
    );
    assert!(recorder.verify(&run.run.id).unwrap().is_intact());
}

// ---- determinism --------------------------------------------------------------------------

/// Every span of the fixture with its resource and scope, one per `resourceSpans` entry.
fn spans_apart(doc: &Value) -> Vec<Value> {
    let mut out = Vec::new();
    for resource in doc["resourceSpans"].as_array().unwrap() {
        for scope in resource["scopeSpans"].as_array().unwrap() {
            for span in scope["spans"].as_array().unwrap() {
                out.push(json!({
                    "resource": resource["resource"],
                    "scopeSpans": [{ "scope": scope["scope"], "spans": [span] }],
                }));
            }
        }
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn the_order_of_spans_in_the_export_never_matters(
        order in Just(spans_apart(&fixture())).prop_shuffle(),
        lines in any::<bool>(),
    ) {
        let expected = one_run(&fixture());
        let runs = if lines {
            // One document per line, as the collector's file exporter writes them.
            let text: Vec<String> = order
                .iter()
                .map(|entry| json!({ "resourceSpans": [entry] }).to_string())
                .collect();
            runs_from_otlp_str(&text.join("\n"), &options()).unwrap()
        } else {
            runs_from_otlp(&json!({ "resourceSpans": order }), &options()).unwrap()
        };
        prop_assert_eq!(runs, vec![expected]);
    }
}

#[test]
fn a_pretty_printed_file_and_json_lines_read_alike() {
    let text = std::fs::read_to_string(fixture_path("coding-agent-trace.json")).unwrap();
    let from_text = runs_from_otlp_str(&text, &options()).unwrap();
    assert_eq!(from_text, vec![one_run(&fixture())]);
    // Two exports, one per line, split between resources.
    let doc = fixture();
    let lines: Vec<String> = doc["resourceSpans"]
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| json!({ "resourceSpans": [entry] }).to_string())
        .collect();
    assert_eq!(
        runs_from_otlp_str(&lines.join("\n\n"), &options()).unwrap(),
        from_text
    );
}

// ---- the mapping on small traces ----------------------------------------------------------

#[test]
fn without_invoke_agent_each_top_level_model_call_is_a_step() {
    let doc = export(vec![
        span(
            "00000000000000a0",
            "",
            "agent loop",
            0,
            10_000,
            attributes(&[]),
        ),
        span(
            "00000000000000a1",
            "00000000000000a0",
            "chat claude",
            100,
            900,
            chat_attrs(""),
        ),
        span(
            "00000000000000a2",
            "00000000000000a0",
            "execute_tool grep",
            1_000,
            1_100,
            tool_attrs("grep", "t1"),
        ),
        span(
            "00000000000000a3",
            "00000000000000a0",
            "chat claude",
            2_000,
            2_900,
            chat_attrs("done"),
        ),
    ]);
    let run = one_run(&doc);
    assert_eq!(run.run.agent, "loop-service");
    assert_eq!(run.run.task, TRACE);
    let steps: Vec<&str> = run.steps.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(steps, ["chat claude", "chat claude"]);
    assert_eq!(
        outline(&run),
        [
            (0, "note"),
            (0, "model_call"),
            (0, "model_output"),
            (0, "tool_call"),
            (0, "tool_result"),
            (1, "model_call"),
            (1, "model_output"),
        ]
    );
    assert_eq!(
        run.events[0].payload,
        json!({ "text": "span `agent loop` (no gen_ai operation)" })
    );
}

#[test]
fn requested_tool_calls_are_kept_when_no_tool_span_records_them() {
    let output = json!([{ "role": "assistant", "finish_reason": "tool_call", "parts": [
        { "type": "tool_call", "id": "call_9", "name": "search", "arguments": { "q": "otel" } },
        { "type": "tool_call", "name": "open", "arguments": "{\"url\": \"https://x\"}" },
    ]}]);
    let attrs = attributes(&[
        ("gen_ai.operation.name", s("chat")),
        ("gen_ai.output.messages", s(&output.to_string())),
    ]);
    let run = one_run(&export(vec![span(
        "00000000000000b1",
        "",
        "chat",
        0,
        500,
        attrs,
    )]));
    assert_eq!(
        events_of(&run, "tool_call"),
        [
            &json!({ "call_id": "call_9", "tool": "search", "arguments": { "q": "otel" } }),
            &json!({ "call_id": "otel-00000000000000b1-1", "tool": "open",
                     "arguments": { "url": "https://x" } }),
        ]
    );
    // No provider or model recorded: still a valid request.
    assert_eq!(events_of(&run, "model_call")[0]["provider"], "unknown");
}

#[test]
fn unknown_operations_and_failures_are_never_dropped() {
    let mut failing = span(
        "00000000000000c2",
        "00000000000000c1",
        "embeddings text-embedding-3-small",
        100,
        200,
        attributes(&[("gen_ai.operation.name", s("embeddings"))]),
    );
    failing["status"] = json!({ "code": "STATUS_CODE_ERROR" });
    failing["events"] = json!([{ "name": "exception", "timeUnixNano": (T0_NANOS + 150_000_000).to_string(),
        "attributes": attributes(&[("exception.type", s("RateLimitError")), ("exception.message", s("slow down"))]) }]);
    let mut root = span(
        "00000000000000c1",
        "",
        "invoke_agent",
        0,
        300,
        attributes(&[("gen_ai.operation.name", s("invoke_agent"))]),
    );
    root["status"] = json!({ "code": 2, "message": "agent gave up" });
    let run = one_run(&export(vec![failing, root]));
    assert_eq!(run.run.status, "failed");
    // No agent name: the service's.
    assert_eq!(run.run.agent, "loop-service");
    assert_eq!(run.steps[0].agent, "loop-service");
    let payloads: Vec<(&str, &Value)> = run
        .events
        .iter()
        .map(|e| (e.kind.as_str(), &e.payload))
        .collect();
    assert_eq!(
        payloads,
        [
            (
                "note",
                &json!({ "text": "span `embeddings text-embedding-3-small` (gen_ai operation `embeddings`, not mapped)" })
            ),
            ("error", &json!({ "message": "RateLimitError: slow down" })),
            ("error", &json!({ "message": "agent gave up" })),
        ]
    );
}

#[test]
fn a_failed_model_call_without_an_answer_has_no_output() {
    let mut call = span(
        "00000000000000d1",
        "",
        "chat gpt-4o",
        0,
        100,
        attributes(&[
            ("gen_ai.operation.name", s("chat")),
            ("gen_ai.request.model", s("gpt-4o")),
            ("error.type", s("timeout")),
        ]),
    );
    call["status"] = json!({ "code": 2 });
    let run = one_run(&export(vec![call]));
    assert_eq!(outline(&run), [(0, "model_call"), (0, "error")]);
    assert_eq!(
        events_of(&run, "error")[0]["message"],
        "span `chat gpt-4o` failed: timeout"
    );
}

#[test]
fn an_instant_span_keeps_its_call_before_its_result() {
    let run = one_run(&export(vec![
        span(
            "00000000000000e2",
            "",
            "execute_tool now",
            50,
            50,
            tool_attrs("now", "c1"),
        ),
        span(
            "00000000000000e1",
            "",
            "execute_tool later",
            50,
            90,
            tool_attrs("later", "c2"),
        ),
    ]));
    let calls: Vec<(&str, &Value)> = run
        .events
        .iter()
        .map(|e| (e.kind.as_str(), &e.payload["call_id"]))
        .collect();
    assert_eq!(
        calls,
        [
            ("tool_call", &json!("c2")),
            ("tool_call", &json!("c1")),
            ("tool_result", &json!("c1")),
            ("tool_result", &json!("c2"))
        ]
    );
    // Neither a model call nor an agent: one step named after the root.
    assert_eq!(run.steps.len(), 1);
    assert_eq!(run.steps[0].name, "execute_tool later");
}

#[test]
fn each_trace_is_a_run_ordered_by_start_and_the_task_can_be_set() {
    let mut later = span(
        "00000000000000f1",
        "",
        "chat",
        5_000,
        6_000,
        chat_attrs("b"),
    );
    later["traceId"] = json!("0000000000000000000000000000000a");
    let mut earlier = span(
        "00000000000000f2",
        "",
        "chat",
        1_000,
        2_000,
        chat_attrs("a"),
    );
    earlier["traceId"] = json!("FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF");
    let options = OtlpImportOptions {
        task: Some("T-7".to_owned()),
        ..options()
    };
    let runs = runs_from_otlp(&export(vec![later, earlier]), &options).unwrap();
    let ids: Vec<(&str, &str)> = runs
        .iter()
        .map(|r| (r.run.id.as_str(), r.run.task.as_str()))
        .collect();
    assert_eq!(
        ids,
        [
            ("otel-ffffffffffffffffffffffffffffffff", "T-7"),
            ("otel-0000000000000000000000000000000a", "T-7")
        ]
    );
}

#[test]
fn attribute_values_of_every_otlp_type_are_read() {
    let arguments = json!({ "kvlistValue": { "values": [
        { "key": "text", "value": { "stringValue": "hi" } },
        { "key": "count", "value": { "intValue": "-3" } },
        { "key": "big", "value": { "intValue": 9_007_199_254_740_993_i64 } },
        { "key": "ratio", "value": { "doubleValue": 0.5 } },
        { "key": "whole", "value": { "doubleValue": "2" } },
        { "key": "flag", "value": { "boolValue": true } },
        { "key": "raw", "value": { "bytesValue": "AAE=" } },
        { "key": "unset", "value": {} },
        { "key": "list", "value": { "arrayValue": { "values": [{ "intValue": "1" }, { "stringValue": "two" }] } } },
        { "key": "empty", "value": { "arrayValue": {} } },
    ]}});
    let attrs = attributes(&[
        ("gen_ai.operation.name", s("execute_tool")),
        ("gen_ai.tool.name", s("probe")),
        ("gen_ai.tool.call.arguments", arguments),
        ("gen_ai.tool.call.result", s("[1, 2]")),
    ]);
    let run = one_run(&export(vec![span(
        "0000000000000101",
        "",
        "execute_tool probe",
        0,
        10,
        attrs,
    )]));
    assert_eq!(
        events_of(&run, "tool_call")[0]["arguments"],
        json!({ "text": "hi", "count": -3, "big": 9_007_199_254_740_993_i64, "ratio": 0.5,
                "whole": 2.0, "flag": true, "raw": "AAE=", "unset": null,
                "list": [1, "two"], "empty": [] })
    );
    assert_eq!(
        events_of(&run, "tool_call")[0]["call_id"],
        "otel-0000000000000101"
    );
    assert_eq!(events_of(&run, "tool_result")[0]["output"], json!([1, 2]));

    // Numbers for the request: integers as strings or numbers, doubles as integers.
    let attrs = attributes(&[
        ("gen_ai.operation.name", s("text_completion")),
        ("gen_ai.request.max_tokens", json!({ "intValue": 256 })),
        ("gen_ai.request.temperature", json!({ "intValue": "1" })),
        (
            "gen_ai.request.stop_sequences",
            json!({ "arrayValue": { "values": [s("END")] } }),
        ),
        ("gen_ai.usage.input_tokens", json!({ "intValue": "12" })),
        (
            "gen_ai.input.messages",
            json!({ "arrayValue": { "values": [{ "kvlistValue": { "values": [
                { "key": "role", "value": s("user") },
                { "key": "parts", "value": { "arrayValue": { "values": [{ "kvlistValue": { "values": [
                    { "key": "type", "value": s("text") }, { "key": "content", "value": s("2+2?") },
                ]}}]}}},
            ]}}]}}),
        ),
    ]);
    let run = one_run(&export(vec![span(
        "0000000000000102",
        "",
        "text_completion",
        0,
        10,
        attrs,
    )]));
    let request: ChatRequest =
        serde_json::from_value(events_of(&run, "model_call")[0]["request"].clone()).unwrap();
    assert_eq!(
        (request.max_tokens, request.temperature),
        (Some(256), Some(1.0))
    );
    assert_eq!(request.extra["stop"], json!(["END"]));
    assert_eq!(request.messages[0].content, "2+2?");
    assert_eq!(
        events_of(&run, "model_output")[0]["response"]["usage"]["prompt_tokens"],
        12
    );
}

// ---- errors -------------------------------------------------------------------------------

fn error_of(doc: Value) -> String {
    runs_from_otlp(&doc, &options()).unwrap_err().to_string()
}

fn with_span_field(field: &str, value: Value) -> Value {
    let mut bad = span("0000000000000201", "", "chat", 0, 10, attributes(&[]));
    bad[field] = value;
    export(vec![
        span("0000000000000200", "", "root", 0, 10, attributes(&[])),
        bad,
    ])
}

fn with_attribute(key: &str, value: Value) -> Value {
    let attrs = attributes(&[("gen_ai.operation.name", s("chat")), (key, value)]);
    export(vec![span("0000000000000201", "", "chat", 0, 10, attrs)])
}

#[test]
fn structural_errors_say_where_and_how_to_fix() {
    let span_path = "resourceSpans[0].scopeSpans[0].spans[1]";
    let ids_help = "  help: OTLP/JSON writes `traceId` as 32 and `spanId` as 16 hex digits (not \
                    base64, as the protobuf JSON mapping would); export the trace again with an \
                    OTLP/JSON exporter (for example the collector's `file` exporter)";
    assert_eq!(
        error_of(with_span_field("traceId", Value::Null)),
        format!("{span_path} has no `traceId`\n{ids_help}")
    );
    assert_eq!(
        error_of(with_span_field("spanId", json!(""))),
        format!("{span_path} has no `spanId`\n{ids_help}")
    );
    assert_eq!(
        error_of(with_span_field("spanId", json!("AAAAAAAAAAE="))),
        format!(
            "{span_path} has a `spanId` (`AAAAAAAAAAE=`) that is not 16 hex digits\n{ids_help}"
        )
    );
    let cases = [
        (
            with_span_field("startTimeUnixNano", Value::Null),
            "has no `startTimeUnixNano`",
        ),
        (
            with_span_field("endTimeUnixNano", json!("soon")),
            "has a `endTimeUnixNano` that is not a time",
        ),
        (
            with_span_field("status", json!({ "code": 7 })),
            "has a `status.code` (`7`) that is not a status code",
        ),
        (
            with_span_field("traceId", json!("00000000000000000000000000000000")),
            "has an all-zero `traceId`",
        ),
        (
            with_span_field("attributes", json!({})),
            ".attributes is not an array",
        ),
        (
            with_span_field("spanId", json!("0000000000000200")),
            "repeats the span id `0000000000000200` of resourceSpans[0].scopeSpans[0].spans[0]",
        ),
    ];
    for (doc, expected) in cases {
        let message = error_of(doc);
        assert!(
            message.starts_with(span_path) && message.contains(expected),
            "{message}"
        );
        assert!(message.contains("\n  help: "), "{message}");
    }
    let mut looped = export(vec![
        span(
            "0000000000000301",
            "0000000000000302",
            "a",
            0,
            10,
            attributes(&[]),
        ),
        span(
            "0000000000000302",
            "0000000000000301",
            "b",
            0,
            10,
            attributes(&[]),
        ),
    ]);
    let message = error_of(looped.take());
    assert!(
        message.contains("has ancestors whose `parentSpanId`s loop"),
        "{message}"
    );
}

#[test]
fn documents_that_are_not_trace_exports_are_refused() {
    assert_eq!(
        error_of(json!({ "resource_spans": [] })),
        "the document is not an OTLP/JSON trace export: it uses snake_case keys \
         (`resource_spans`)\n  help: OTLP/JSON uses lowerCamelCase keys (`resourceSpans`, \
         `scopeSpans`, `traceId`); export with an OTLP/JSON exporter rather than a protobuf text dump"
    );
    assert!(
        error_of(json!({ "resourceMetrics": [] })).contains("it holds metrics or logs, not traces")
    );
    assert!(error_of(json!([1])).contains("it is not a JSON object"));
    assert!(error_of(json!({ "resourceSpans": {} })).contains("`resourceSpans` is not an array"));
    assert_eq!(
        error_of(json!({ "resourceSpans": [] })),
        "the export holds no spans\n  help: check that the exporter wrote traces; an empty \
         export has nothing to import"
    );
    let scopeless = OtlpImportOptions {
        scope: " ".to_owned(),
        ..options()
    };
    assert_eq!(
        runs_from_otlp(&fixture(), &scopeless).unwrap_err(),
        OtlpError::EmptyScope
    );
}

#[test]
fn text_that_is_not_json_says_where() {
    let error = runs_from_otlp_str("{\"resourceSpans\": []}\n{oops", &options()).unwrap_err();
    assert!(
        matches!(&error, OtlpError::NotJson { message } if message.contains("line 2 column 2")),
        "{error}"
    );
    // The document of a JSON-lines file is named by its line.
    let good = json!({ "resourceSpans": [] }).to_string();
    let bad = with_span_field("traceId", Value::Null).to_string();
    let message = runs_from_otlp_str(&format!("{good}\n\n{bad}\n"), &options())
        .unwrap_err()
        .to_string();
    assert!(
        message.starts_with("resourceSpans[0].scopeSpans[0].spans[1] (line 3) has no `traceId`"),
        "{message}"
    );
    let message = runs_from_otlp_str(&format!("{good}\n[]"), &options())
        .unwrap_err()
        .to_string();
    assert!(
        message.starts_with("the document at line 2 is not an OTLP/JSON trace export"),
        "{message}"
    );
}

#[test]
fn bad_attribute_values_name_the_attribute() {
    let at = "resourceSpans[0].scopeSpans[0].spans[0].attributes[1]";
    assert_eq!(
        error_of(with_attribute(
            "gen_ai.usage.input_tokens",
            json!({ "intValue": "12x" })
        )),
        format!(
            "attribute `gen_ai.usage.input_tokens` at {at} has an `intValue` that is not a \
                 64-bit integer\n  help: OTLP/JSON writes integers as decimal strings: \
                 {{\"intValue\": \"42\"}}"
        )
    );
    let cases = [
        (
            json!({ "stringValue": "a", "intValue": "1" }),
            "has a value with both `intValue` and `stringValue`",
        ),
        (
            json!({ "mapValue": {} }),
            "has an unknown value type `mapValue`",
        ),
        (
            json!({ "boolValue": "yes" }),
            "has a `boolValue` that is not a boolean",
        ),
        (
            json!({ "doubleValue": "NaN" }),
            "has a `doubleValue` that is not a finite number",
        ),
        (
            json!({ "arrayValue": { "values": [{ "intValue": "x" }] } }),
            "has an `intValue` that is not a 64-bit integer (at `value.arrayValue.values[0]`)",
        ),
        (json!("plain"), "has a value that is not an object"),
    ];
    for (value, expected) in cases {
        let message = error_of(with_attribute("gen_ai.tool.call.arguments", value));
        assert!(
            message.starts_with(&format!("attribute `gen_ai.tool.call.arguments` at {at} ")),
            "{message}"
        );
        assert!(message.contains(expected), "{message}");
    }
    // Values that are valid OTLP but not what the GenAI convention says.
    let conventions = [
        (
            "gen_ai.input.messages",
            s("[{\"role\": "),
            "is not valid JSON",
        ),
        (
            "gen_ai.input.messages",
            s("{\"role\": \"user\"}"),
            "is not an array of messages",
        ),
        (
            "gen_ai.usage.output_tokens",
            s("many"),
            "is not a non-negative integer",
        ),
        (
            "gen_ai.request.model",
            json!({ "intValue": "4" }),
            "is a number, not a string",
        ),
        (
            "gen_ai.request.temperature",
            json!({ "boolValue": true }),
            "is not a number",
        ),
    ];
    for (key, value, expected) in conventions {
        let message = error_of(with_attribute(key, value));
        assert!(
            message.starts_with(&format!("attribute `{key}` at {at} {expected}")),
            "{message}"
        );
        assert!(message.contains("\n  help: "), "{message}");
    }
    let message = error_of(with_span_field("attributes", json!([{ "value": s("x") }])));
    assert!(
        message.starts_with(
            "resourceSpans[0].scopeSpans[0].spans[1].attributes[0] has no string `key`"
        ),
        "{message}"
    );
}
