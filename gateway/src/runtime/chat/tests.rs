//! The fields of a chat request other than its messages' text.

use serde_json::json;

use super::super::tests::{START_MS, open, runtime};
use crate::clock::ManualClock;
use crate::providers::{ChatMessage, ChatRequest, FunctionCall, ToolCall};
use crate::store::tests::tempdir::Dir;

/// Issue 33: fields never scanned reached the provider as sent — a message's `name`, tool-call
/// ids and function names, `tools[].function.description`, `metadata`, `user`, `stop`,
/// `logit_bias` keys and any other field.
#[test]
fn a_secret_in_any_field_of_a_chat_request_is_redacted_before_it_leaves_and_never_recorded() {
    let dir = Dir::new("chat-fields");
    let rt = runtime(&dir, &ManualClock::new(START_MS));
    open(&rt, "r1");
    let key = "AKIAPYDATUTGFKRXITKP";
    let token = format!("ghp_{}", "a1B2c3D4e5".repeat(4));
    let mut assistant = ChatMessage::new("assistant", "");
    assistant.tool_calls = vec![ToolCall {
        id: format!("call_{key}"),
        kind: "function".into(),
        function: FunctionCall {
            name: "lookup".into(),
            arguments: "{}".into(),
        },
    }];
    let mut tool = ChatMessage::new("tool", "done");
    tool.tool_call_id = Some(format!("call_{key}"));
    let mut user = ChatMessage::new("user", "hello");
    user.name = Some(format!("bot {token}"));
    let mut request = ChatRequest {
        model: "gpt-4.1-mini".into(),
        messages: vec![user, assistant, tool],
        ..Default::default()
    };
    request
        .extra
        .insert("user".into(), json!(format!("u {token}")));
    request.extra.insert(
        "metadata".into(),
        json!({"session_token": "hunter2-prod-77", "note": key}),
    );
    request.extra.insert("stop".into(), json!([key]));
    request.extra.insert("logit_bias".into(), json!({key: 1}));
    request.extra.insert(
        "tools".into(),
        json!([{"type": "function", "function": {"name": "lookup",
                "description": format!("uses {token}"), "parameters": {"type": "object"}}}]),
    );
    let allowed = rt.allow_chat("r1", request).unwrap();
    let sent = serde_json::to_string(&allowed.request).unwrap();
    for secret in [key, token.as_str(), "hunter2-prod-77"] {
        assert!(!sent.contains(secret), "{secret} left in {sent}");
    }
    assert!(
        sent.contains("[REDACTED:org-baseline/secrets-redacted]"),
        "{sent}"
    );
    // The call and a tool message still name one id.
    assert_eq!(
        allowed.request.messages[1].tool_calls[0].id,
        allowed.request.messages[2].tool_call_id.clone().unwrap()
    );
    let file = serde_json::to_string(&rt.recorder().export("r1").unwrap()).unwrap();
    for secret in [key, token.as_str(), "hunter2-prod-77"] {
        assert!(!file.contains(secret), "{secret} recorded");
    }

    // A request whose other fields hold nothing is sent as it is.
    let mut clean = ChatRequest {
        model: "gpt-4.1-mini".into(),
        messages: vec![ChatMessage::new("user", "hello")],
        ..Default::default()
    };
    clean
        .extra
        .insert("metadata".into(), json!({"team": "api"}));
    let allowed = rt.allow_chat("r1", clean.clone()).unwrap();
    assert_eq!(allowed.request.extra, clean.extra);
}
