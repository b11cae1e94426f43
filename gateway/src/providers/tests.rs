//! Tests of the request types, the fake and replay providers and configuration. The OpenAI
//! adapter's tests, against a mock server on loopback, are in `tests/openai.rs`.

mod openai;

use std::collections::HashMap;
use std::time::Duration;

use proptest::prelude::*;
use serde_json::json;

use super::*;

fn request(messages: &[(&str, &str)]) -> ChatRequest {
    ChatRequest {
        model: "gpt-test".to_owned(),
        messages: messages
            .iter()
            .map(|(role, content)| ChatMessage::new(*role, *content))
            .collect(),
        temperature: Some(0.2),
        max_tokens: Some(64),
        extra: serde_json::Map::new(),
    }
}

fn conversation() -> ChatRequest {
    request(&[
        ("system", "You are a careful coding agent."),
        (
            "user",
            "List the files in the repository and explain the layout please",
        ),
        ("assistant", "Here are the files."),
        ("user", "Now summarise README.md"),
    ])
}

fn response(content: &str) -> ChatResponse {
    ChatResponse {
        id: format!("rec-{content}"),
        model: "gpt-test".to_owned(),
        content: content.to_owned(),
        finish_reason: "stop".to_owned(),
        usage: Usage {
            prompt_tokens: 3,
            completion_tokens: 1,
        },
        tool_calls: Vec::new(),
    }
}

// ---- request and response types ----

#[test]
fn hash_ignores_key_order_and_whitespace() {
    let a = r#"{"model":"gpt-4o","messages":[{"role":"user","content":"hi","name":"ann"}],
                "temperature":0.5,"top_p":1,"tools":[{"type":"function","function":{"name":"ls","parameters":{"b":1,"a":2}}}]}"#;
    let b = r#"{
        "tools": [ { "function": { "parameters": { "a": 2, "b": 1 }, "name": "ls" }, "type": "function" } ],
        "top_p": 1,
        "messages": [ { "name": "ann", "content": "hi", "role": "user" } ],
        "temperature": 0.5,
        "model": "gpt-4o"
    }"#;
    let a: ChatRequest = serde_json::from_str(a).unwrap();
    let b: ChatRequest = serde_json::from_str(b).unwrap();
    assert_eq!(a, b);
    assert_eq!(a.hash(), b.hash());
    assert_eq!(a.hash().len(), 64);
    assert_eq!(a.extra.get("top_p"), Some(&json!(1)));
}

#[test]
fn hash_sees_every_field() {
    let base = conversation();
    let mut changes = Vec::new();
    let mut c = base.clone();
    c.model.push('x');
    changes.push(c);
    let mut c = base.clone();
    c.temperature = None;
    changes.push(c);
    let mut c = base.clone();
    c.max_tokens = Some(65);
    changes.push(c);
    let mut c = base.clone();
    c.extra.insert("seed".to_owned(), json!(7));
    changes.push(c);
    let mut c = base.clone();
    c.messages[0].name = Some("ops".to_owned());
    changes.push(c);
    let mut c = base.clone();
    c.messages[2].role = "user".to_owned();
    changes.push(c);
    for changed in changes {
        assert_ne!(changed.hash(), base.hash(), "{changed:?}");
    }
}

#[test]
fn unknown_fields_are_kept_and_sent_back_verbatim() {
    let body = json!({
        "model": "m",
        "messages": [{"role": "user", "content": "hi", "refusal": "dropped"}],
        "response_format": {"type": "json_object"},
        "stream": true,
    });
    let parsed: ChatRequest = serde_json::from_value(body).unwrap();
    assert_eq!(parsed.extra.len(), 2);
    assert_eq!(
        parsed.to_json(),
        json!({
            "model": "m",
            "messages": [{"role": "user", "content": "hi"}],
            "response_format": {"type": "json_object"},
            "stream": true,
        })
    );
}

#[test]
fn content_may_be_text_parts_or_null() {
    let body = json!({"model": "m", "messages": [
        {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
        {"role": "assistant", "content": null},
        {"role": "assistant"},
    ]});
    let parsed: ChatRequest = serde_json::from_value(body).unwrap();
    let contents: Vec<&str> = parsed.messages.iter().map(|m| m.content.as_str()).collect();
    assert_eq!(contents, ["a\nb", "", ""]);

    let image = json!({"model": "m", "messages": [
        {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]},
    ]});
    let error = serde_json::from_value::<ChatRequest>(image).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("unsupported message content part `image_url`"),
        "{error}"
    );
}

#[test]
fn response_round_trips_through_openai_json() {
    let original = response("hello");
    let value = original.to_openai_json();
    assert_eq!(value["object"], "chat.completion");
    assert_eq!(value["choices"][0]["message"]["role"], "assistant");
    assert_eq!(value["usage"]["total_tokens"], 4);
    assert_eq!(ChatResponse::from_openai_json(&value).unwrap(), original);
}

#[test]
fn response_parsing_tolerates_optional_fields_and_names_missing_ones() {
    let minimal = json!({"id": "c1", "model": "m", "choices": [{"message": {"content": null}}]});
    let parsed = ChatResponse::from_openai_json(&minimal).unwrap();
    assert_eq!(parsed.content, "");
    assert_eq!(parsed.finish_reason, "unknown");
    assert_eq!(parsed.usage, Usage::default());

    let check = |value: serde_json::Value, expected: &str| {
        let error = ChatResponse::from_openai_json(&value).unwrap_err();
        assert_eq!(error.to_string(), expected);
    };
    check(
        json!([1]),
        "the provider's response is not a chat completion: the body is not a json object",
    );
    check(
        json!({"model": "m", "choices": []}),
        "the provider's response is not a chat completion: `id` is missing or not a string",
    );
    check(
        json!({"id": "c", "model": "m", "choices": []}),
        "the provider's response is not a chat completion: `choices` is missing or empty",
    );
}

// ---- fake ----

#[test]
fn fake_is_deterministic_and_readable() {
    let fake = FakeProvider::new();
    let request = conversation();
    let first = fake.complete(&request).unwrap();
    let second = fake.complete(&request.clone()).unwrap();
    assert_eq!(first, second);
    assert_eq!(fake.name(), "fake");
    let hash = request.hash();
    assert_eq!(first.id, format!("fake-{}", &hash[..24]));
    assert_eq!(
        first.content,
        format!(
            "[fake gpt-test · 4 messages · request {}] you said: \"Now summarise README.md\"",
            &hash[..12]
        )
    );
    assert_eq!(first.finish_reason, "stop");
    // 6 + 11 + 4 + 3 whitespace words in the messages.
    assert_eq!(first.usage.prompt_tokens, 24);
    assert_eq!(
        first.usage.completion_tokens as usize,
        first.content.split_whitespace().count()
    );
}

/// A request offering the functions `names`.
fn offering(mut request: ChatRequest, names: &[&str]) -> ChatRequest {
    let tools: Vec<serde_json::Value> = names
        .iter()
        .map(|n| json!({"type": "function", "function": {"name": n, "parameters": {"type": "object"}}}))
        .collect();
    request.extra.insert("tools".to_owned(), json!(tools));
    request
}

/// The assistant's call of `name` with `arguments`, and its result.
fn called(request: &mut ChatRequest, name: &str, arguments: &str, result: &str) {
    request.messages.push(ChatMessage {
        role: "assistant".to_owned(),
        tool_calls: vec![ToolCall {
            id: format!("call-{name}"),
            kind: "function".to_owned(),
            function: FunctionCall {
                name: name.to_owned(),
                arguments: arguments.to_owned(),
            },
        }],
        ..ChatMessage::default()
    });
    request.messages.push(ChatMessage {
        role: "tool".to_owned(),
        content: result.to_owned(),
        tool_call_id: Some(format!("call-{name}")),
        ..ChatMessage::default()
    });
}

#[test]
fn fake_makes_the_scripted_calls_in_order_then_answers_with_the_last_result() {
    let fake = FakeProvider::new();
    let script = r#"Refund order 7. [[call lookup {"order": 7}]] then [[call refund {"order": 7, "items": [[1, 2]]}]] and [[call missing]]"#;
    let mut req = offering(request(&[("user", script)]), &["lookup", "refund"]);
    let first = fake.complete(&req).unwrap();
    assert_eq!(first.finish_reason, "tool_calls");
    assert_eq!(first.content, "");
    assert_eq!(first.tool_calls.len(), 1);
    assert_eq!(first.tool_calls[0].function.name, "lookup");
    assert_eq!(first.tool_calls[0].function.arguments, r#"{"order":7}"#);
    assert_eq!(fake.complete(&req).unwrap(), first, "deterministic");

    // Arguments written with other spacing are the same call.
    called(
        &mut req,
        "lookup",
        r#"{ "order" : 7 }"#,
        "order 7: two mugs",
    );
    let second = fake.complete(&req).unwrap();
    assert_eq!(second.tool_calls[0].function.name, "refund");
    assert_eq!(
        second.tool_calls[0].function.arguments,
        r#"{"items":[[1,2]],"order":7}"#
    );
    assert_ne!(second.tool_calls[0].id, first.tool_calls[0].id);

    // `missing` is not offered: the script is done, and the answer echoes the last result.
    called(
        &mut req,
        "refund",
        r#"{"order":7,"items":[[1,2]]}"#,
        "refunded 7",
    );
    let done = fake.complete(&req).unwrap();
    assert_eq!(done.finish_reason, "stop");
    assert!(done.tool_calls.is_empty());
    assert!(
        done.content.ends_with("the tool said: \"refunded 7\""),
        "{}",
        done.content
    );
}

#[test]
fn fake_makes_no_call_without_tools_or_after_a_new_user_message() {
    let fake = FakeProvider::new();
    let script = "[[call lookup]]";
    // Tools not offered: the directive is only text.
    let plain = fake.complete(&request(&[("user", script)])).unwrap();
    assert!(plain.tool_calls.is_empty());
    assert!(plain.content.ends_with("you said: \"[[call lookup]]\""));
    // Offered: called with `{}`.
    let mut req = offering(request(&[("user", script)]), &["lookup"]);
    let call = fake.complete(&req).unwrap();
    assert_eq!(call.tool_calls[0].function.arguments, "{}");
    // A later user message without directives ends the script.
    called(&mut req, "lookup", "{}", "ok");
    req.messages.push(ChatMessage::new("user", "thanks"));
    assert!(fake.complete(&req).unwrap().tool_calls.is_empty());
}

#[test]
fn fake_reads_malformed_directives_as_text() {
    let fake = FakeProvider::new();
    for text in [
        "[[call lookup {\"order\": ]]",
        "[[call lookup [1]]]",
        "[[call lookup {} ",
        "[[call ]]",
        "[[call lookup {}} ]]",
    ] {
        let req = offering(request(&[("user", text)]), &["lookup", ""]);
        let answer = fake.complete(&req).unwrap();
        assert!(answer.tool_calls.is_empty(), "{text}: {answer:?}");
    }
}

#[test]
fn fake_echo_is_cut_after_eight_words() {
    let fake = FakeProvider::new();
    let long = request(&[("user", "one two three four five six seven eight nine ten")]);
    let answer = fake.complete(&long).unwrap().content;
    assert!(answer.contains(" · 1 message · "), "{answer}");
    assert!(
        answer.ends_with("you said: \"one two three four five six seven eight…\""),
        "{answer}"
    );
    let silent = request(&[("system", "rules")]);
    assert!(
        fake.complete(&silent)
            .unwrap()
            .content
            .ends_with("no user message")
    );
}

#[test]
fn fake_changes_when_one_character_of_any_message_changes() {
    let fake = FakeProvider::new();
    let base = conversation();
    let original = fake.complete(&base).unwrap();
    for index in 0..base.messages.len() {
        let length = base.messages[index].content.chars().count();
        for position in [0, length / 2, length - 1] {
            let mut changed = base.clone();
            let text: String = changed.messages[index]
                .content
                .chars()
                .enumerate()
                .map(|(i, c)| if i == position { flip(c) } else { c })
                .collect();
            changed.messages[index].content = text;
            let answer = fake.complete(&changed).unwrap();
            assert_ne!(
                answer.content, original.content,
                "message {index} at {position}"
            );
            assert_ne!(answer.id, original.id);
        }
    }
}

fn flip(c: char) -> char {
    if c == 'a' { 'b' } else { 'a' }
}

// ---- replay ----

#[test]
fn replay_serves_recordings_by_hash_and_reports_misses() {
    let asked = conversation();
    let other = request(&[("user", "never asked")]);
    let replay = ReplayProvider::new([
        (asked.hash(), response("first")),
        (other.hash(), response("unused")),
        (asked.hash(), response("second")),
    ]);
    assert_eq!(replay.name(), "replay");
    assert_eq!(replay.len(), 3);

    let contents: Vec<String> = (0..3)
        .map(|_| replay.complete(&asked).unwrap().content)
        .collect();
    assert_eq!(contents, ["first", "second", "second"]);
    assert_eq!(replay.served(), vec![asked.hash(); 3]);
    assert_eq!(replay.unused(), [other.hash()]);

    let mut changed = asked.clone();
    changed.messages[0].content.push('!');
    let error = replay.complete(&changed).unwrap_err();
    assert_eq!(
        error,
        ProviderError::ReplayMiss {
            hash: changed.hash(),
            model: "gpt-test".to_owned(),
        }
    );
    assert_eq!(
        error.to_string(),
        format!(
            "replay miss: request `{}` (model `gpt-test`) differs from every recorded request",
            changed.hash()
        )
    );
    assert_eq!(replay.served().len(), 3, "a miss is not served");
}

/// What `stream` reported and returned.
fn streamed(provider: &dyn Provider, request: &ChatRequest) -> (Vec<String>, ChatResponse) {
    let mut pieces = Vec::new();
    let answer = provider
        .stream(request, &mut |delta| pieces.push(delta.content.to_owned()))
        .unwrap();
    (pieces, answer)
}

#[test]
fn fake_and_replay_stream_what_they_complete_in_one_piece() {
    let asked = conversation();
    let fake = FakeProvider::new();
    let (pieces, answer) = streamed(&fake, &asked);
    assert_eq!(answer, fake.complete(&asked).unwrap());
    assert_eq!(pieces.concat(), answer.content);
    assert_eq!(pieces.len(), 1);

    let replay = ReplayProvider::new([(asked.hash(), response("recorded"))]);
    let (pieces, answer) = streamed(&replay, &asked);
    assert_eq!(
        answer,
        response("recorded"),
        "replay streams the recording byte for byte"
    );
    assert_eq!(pieces, ["recorded"]);
    assert_eq!(replay.served(), [asked.hash()]);

    // An empty answer reports no piece.
    let empty = ReplayProvider::new([(asked.hash(), response(""))]);
    assert_eq!(streamed(&empty, &asked), (vec![], response("")));
}

// ---- configuration ----

fn lookup(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let vars: HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    move |name| vars.get(name).cloned()
}

#[test]
fn configuration_defaults_to_fake() {
    assert_eq!(
        ProviderConfig::from_lookup(&lookup(&[])).unwrap(),
        ProviderConfig::Fake
    );
    let provider = provider_from_lookup(&lookup(&[("TOLLGATE_PROVIDER", " ")])).unwrap();
    assert_eq!(provider.name(), "fake");
}

#[test]
fn configuration_reads_openai_settings_in_order_of_preference() {
    let config = ProviderConfig::from_lookup(&lookup(&[
        ("TOLLGATE_PROVIDER", "openai"),
        ("PROVIDER_API_KEY", "sk-primary"),
        ("OPENAI_API_KEY", "sk-secondary"),
        ("TOLLGATE_PROVIDER_BASE_URL", "http://127.0.0.1:9/v1/"),
        ("OPENAI_BASE_URL", "http://unused.invalid/v1"),
        ("TOLLGATE_PROVIDER_TIMEOUT_SECS", "2.5"),
    ]))
    .unwrap();
    let ProviderConfig::OpenAi(openai) = config.clone() else {
        panic!("expected openai, got {config:?}");
    };
    assert_eq!(openai.api_key.expose(), "sk-primary");
    assert_eq!(openai.base_url, "http://127.0.0.1:9/v1/");
    assert_eq!(openai.timeout, Duration::from_millis(2500));
    assert!(!format!("{config:?}").contains("sk-primary"));
    let provider = OpenAiProvider::new(openai).unwrap();
    assert_eq!(
        provider.endpoint(),
        "http://127.0.0.1:9/v1/chat/completions"
    );
    assert!(!format!("{provider:?}").contains("sk-primary"));

    let fallback = ProviderConfig::from_lookup(&lookup(&[
        ("TOLLGATE_PROVIDER", "openai"),
        ("OPENAI_API_KEY", "sk-secondary"),
    ]))
    .unwrap();
    let ProviderConfig::OpenAi(openai) = fallback else {
        panic!("expected openai");
    };
    assert_eq!(openai.api_key.expose(), "sk-secondary");
    assert_eq!(openai.base_url, "https://api.openai.com/v1");
    assert_eq!(openai.timeout, Duration::from_secs(60));
}

#[test]
fn configuration_errors_are_clear() {
    let check = |vars: &[(&str, &str)], expected: &str| {
        let error = provider_from_lookup(&lookup(vars)).err().unwrap();
        assert_eq!(error.to_string(), expected);
    };
    check(
        &[("TOLLGATE_PROVIDER", "openai"), ("PROVIDER_API_KEY", "")],
        "the openai provider needs an api key: set `PROVIDER_API_KEY` or `OPENAI_API_KEY`",
    );
    check(
        &[("TOLLGATE_PROVIDER", "anthropic")],
        "unknown provider `anthropic`: expected `fake` or `openai`",
    );
    check(
        &[
            ("TOLLGATE_PROVIDER", "openai"),
            ("OPENAI_API_KEY", "sk-x"),
            ("TOLLGATE_PROVIDER_TIMEOUT_SECS", "0"),
        ],
        "invalid provider setting `TOLLGATE_PROVIDER_TIMEOUT_SECS`: `0` is not a positive \
         number of seconds",
    );
    check(
        &[
            ("TOLLGATE_PROVIDER", "openai"),
            ("OPENAI_API_KEY", "sk-x"),
            ("OPENAI_BASE_URL", "ftp://host/v1"),
        ],
        "invalid provider setting `base url`: `ftp://host/v1` is not an http:// or https:// \
         url with a host",
    );
}

// ---- properties ----

fn arb_message() -> impl Strategy<Value = ChatMessage> {
    (
        prop::sample::select(vec!["system", "user", "assistant", "tool"]),
        any::<String>(),
        prop::option::of("[a-z_]{1,8}"),
        prop::collection::vec(arb_tool_call(), 0..3),
        prop::option::of("call_[a-z0-9]{1,8}"),
    )
        .prop_map(
            |(role, content, name, tool_calls, tool_call_id)| ChatMessage {
                role: role.to_owned(),
                content,
                name,
                tool_calls,
                tool_call_id,
            },
        )
}

fn arb_tool_call() -> impl Strategy<Value = ToolCall> {
    ("call_[a-z0-9]{1,8}", "[a-z_]{1,8}", any::<String>()).prop_map(|(id, name, arguments)| {
        ToolCall {
            id,
            kind: "function".to_owned(),
            function: FunctionCall { name, arguments },
        }
    })
}

proptest! {
    #[test]
    fn hash_is_stable_under_serialisation_round_trip(
        messages in prop::collection::vec(arb_message(), 0..6),
        temperature in prop::option::of((0u32..=200).prop_map(|t| f64::from(t) / 100.0)),
        max_tokens in prop::option::of(any::<u32>()),
        seed in prop::option::of(any::<i64>()),
    ) {
        let mut extra = serde_json::Map::new();
        if let Some(seed) = seed {
            extra.insert("seed".to_owned(), json!(seed));
        }
        let request = ChatRequest { model: "m".to_owned(), messages, temperature, max_tokens, extra };
        let compact = serde_json::to_string(&request).unwrap();
        let pretty = serde_json::to_string_pretty(&request).unwrap();
        let from_compact: ChatRequest = serde_json::from_str(&compact).unwrap();
        let from_pretty: ChatRequest = serde_json::from_str(&pretty).unwrap();
        prop_assert_eq!(&from_compact, &request);
        prop_assert_eq!(from_compact.hash(), request.hash());
        prop_assert_eq!(from_pretty.hash(), request.hash());
    }
}

// ---- tool calls ----

#[test]
fn tool_calls_and_tool_call_ids_survive_a_round_trip() {
    let body = json!({"model": "m", "tools": [{"type": "function",
                                           "function": {"name": "read_file"}}],
    "messages": [
        {"role": "user", "content": "read it"},
        {"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_a", "type": "function",
             "function": {"name": "read_file", "arguments": "{\"path\":\"README.md\"}"}}]},
        {"role": "tool", "tool_call_id": "call_a", "content": "hello"},
    ]});
    let request: ChatRequest = serde_json::from_value(body.clone()).unwrap();
    assert_eq!(request.messages[1].tool_calls[0].function.name, "read_file");
    assert_eq!(request.messages[2].tool_call_id.as_deref(), Some("call_a"));
    // What reaches the provider is what the agent sent.
    assert_eq!(request.to_json(), body);
    // An assistant message without `content` at all is read the same way.
    let mut absent = body;
    absent["messages"][1]
        .as_object_mut()
        .unwrap()
        .remove("content");
    let from_absent: ChatRequest = serde_json::from_value(absent).unwrap();
    assert_eq!(from_absent.hash(), request.hash());
}

#[test]
fn a_request_without_tool_calls_hashes_as_before_they_were_kept() {
    let request = request(&[("system", "be brief"), ("tool", "42")]);
    // The canonical text (and so the hash) recordings were made with: no new keys.
    let canonical = r#"{"max_tokens":64,"messages":[{"content":"be brief","role":"system"},{"content":"42","role":"tool"}],"model":"gpt-test","temperature":0.2}"#;
    assert_eq!(
        tollgate_rules::canonical::canonical_json(&request.to_json()),
        canonical
    );
    assert_eq!(
        request.hash(),
        blake3::hash(canonical.as_bytes()).to_hex().to_string()
    );
}

#[test]
fn a_whole_completion_with_tool_calls_is_read_and_written_in_openai_shape() {
    let body = json!({"id": "chatcmpl-1", "object": "chat.completion", "created": 0,
        "model": "gpt-test",
        "choices": [{"index": 0, "finish_reason": "tool_calls",
            "message": {"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_a", "type": "function",
                 "function": {"name": "read_file", "arguments": "{\"path\":\"a\"}"}},
                {"id": "call_b", "type": "function",
                 "function": {"name": "list_dir", "arguments": "{}"}}]}}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 5, "total_tokens": 8}});
    let response = ChatResponse::from_openai_json(&body).unwrap();
    assert_eq!(response.content, "");
    assert_eq!(response.finish_reason, "tool_calls");
    assert_eq!(response.tool_calls.len(), 2);
    assert_eq!(response.tool_calls[1].function.name, "list_dir");
    assert_eq!(response.to_openai_json(), body);
    // As recorded: the calls are kept, and read back the same.
    let recorded = serde_json::to_value(&response).unwrap();
    assert_eq!(
        serde_json::from_value::<ChatResponse>(recorded).unwrap(),
        response
    );
}

#[test]
fn a_text_answer_is_recorded_without_a_tool_calls_key() {
    let recorded = serde_json::to_value(response("hi")).unwrap();
    assert!(recorded.get("tool_calls").is_none(), "{recorded}");
    let whole = response("hi").to_openai_json();
    assert!(whole["choices"][0]["message"].get("tool_calls").is_none());
}

#[test]
fn tool_calls_that_are_not_function_calls_are_malformed() {
    let body = json!({"id": "c", "model": "m", "choices": [{"message": {"tool_calls": [7]}}]});
    let error = ChatResponse::from_openai_json(&body).unwrap_err();
    assert!(
        matches!(&error, ProviderError::MalformedResponse { reason }
                 if reason.starts_with("`choices[0].message.tool_calls` are not function calls")),
        "{error}"
    );
}

#[test]
fn replay_streams_recorded_tool_calls_as_it_completes_them() {
    let mut recorded = response("");
    recorded.tool_calls = vec![ToolCall {
        id: "call_a".to_owned(),
        kind: "function".to_owned(),
        function: FunctionCall {
            name: "read_file".to_owned(),
            arguments: "{}".to_owned(),
        },
    }];
    let request = conversation();
    let provider = ReplayProvider::new([(request.hash(), recorded.clone())]);
    let mut calls = Vec::new();
    let served = provider
        .stream(&request, &mut |delta| {
            calls.push(delta.tool_call.map(|c| (c.index, c.id.map(str::to_owned))))
        })
        .unwrap();
    assert_eq!(served, recorded);
    assert_eq!(calls, [Some((0, Some("call_a".to_owned())))]);
}
