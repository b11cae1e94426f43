use serde_json::json;
use tollgate_rules::canonical::canonical_json;

use super::*;
use crate::recorder::format::RunFile;

fn fixture_runs() -> Vec<(String, RunFile)> {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../fixtures");
    let mut files: Vec<String> = std::fs::read_dir(format!("{root}/runs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .map(|p| p.display().to_string())
        .collect();
    files.push(format!("{root}/otel/coding-agent-trace.run.json"));
    files.sort();
    files
        .into_iter()
        .map(|f| {
            let text = std::fs::read_to_string(&f).unwrap();
            (f, serde_json::from_str(&text).unwrap())
        })
        .collect()
}

/// Every event of every recorded fixture (the five coding-agent runs, the OTLP import) reads as
/// its kind's type, and writing the type back gives the recorded bytes: the types describe
/// exactly what was recorded, absent fields and `null`s included.
#[test]
fn every_fixture_event_reads_as_its_type_and_writes_back_byte_for_byte() {
    let mut kinds = std::collections::BTreeSet::new();
    for (file, run) in fixture_runs() {
        for e in &run.events {
            let event = e.event().unwrap_or_else(|err| panic!("{file}: {err}"));
            assert_eq!(event.kind().as_str(), e.kind);
            assert_eq!(
                event.to_canonical_json().unwrap(),
                canonical_json(&e.payload),
                "{file}: event {}",
                e.seq
            );
            kinds.insert(e.kind.clone());
        }
    }
    for kind in [
        "context_offered",
        "compile",
        "model_call",
        "model_output",
        "tool_call",
    ] {
        assert!(kinds.contains(kind), "the fixtures hold a `{kind}` event");
    }
    for kind in ["tool_result", "decision", "approval", "output", "note"] {
        assert!(kinds.contains(kind), "the fixtures hold a `{kind}` event");
    }
}

fn record(kind: EventKind, payload: Value) -> EventRecord {
    EventRecord {
        seq: 3,
        step: 0,
        kind: kind.as_str().into(),
        at: "2026-11-25T10:00:00Z".into(),
        payload,
        prev: None,
        hash: None,
    }
}

fn decision() -> Value {
    json!({
        "kind": "tool", "request": "call", "effect": "deny", "rules": ["e/r"],
        "envelope_versions": ["e@1"],
        "input_hash": "h"
    })
}

/// A field the gateway writes as `null` (no approval, no data decision) is kept apart from a
/// field a recorded session leaves out: both read and write back as they were.
#[test]
fn a_null_field_and_an_absent_field_stay_apart() {
    let gateway = json!({
        "approval_id": null, "call_id": "c1", "data_decision": null,
        "decision": decision(), "outcome": "deny", "reason": "denied by e/r"
    });
    let session = json!({ "call_id": "c1", "decision": decision() });
    for payload in [gateway, session] {
        let e = record(EventKind::Decision, payload.clone());
        let Ok(Event::Decision(d)) = e.event() else {
            panic!("a decision reads");
        };
        assert_eq!(d.call_id.as_deref(), Some("c1"));
        assert_eq!(d.answered(), DecisionEffect::Deny);
        assert_eq!(
            to_canonical_json(&d).unwrap(),
            canonical_json(&payload),
            "{payload}"
        );
    }
    let e = record(
        EventKind::Decision,
        json!({ "call_id": "c1", "decision": decision() }),
    );
    let d = e.read::<DecisionEvent>().unwrap();
    assert_eq!(
        (d.approval_id, d.data_decision, d.outcome),
        (None, None, None)
    );
}

/// A payload of the wrong shape is an error naming the event; another kind is `None`.
#[test]
fn a_payload_of_the_wrong_shape_is_an_error_naming_its_event() {
    let e = record(EventKind::ToolCall, json!({ "call_id": 7 }));
    let err = e.payload_as::<ToolCallEvent>().unwrap().unwrap_err();
    assert!(err.to_string().starts_with("event 3 (tool_call)"), "{err}");
    assert!(e.event().is_err());
    assert!(e.payload_as::<DecisionEvent>().is_none());
    assert!(e.read::<ToolResultEvent>().is_none());
    let unknown = EventRecord {
        kind: "telepathy".into(),
        ..record(EventKind::Note, json!({}))
    };
    assert!(matches!(
        unknown.event(),
        Err(EventReadError::UnknownKind { .. })
    ));
}

/// The hot path writes the tool decision's rendered text inside the event: the same bytes as
/// writing the decision itself.
#[test]
fn an_embedded_rendered_decision_writes_the_same_bytes() {
    let d: EnvelopeDecision = serde_json::from_value(decision()).unwrap();
    let raw = serde_json::value::RawValue::from_string(
        tollgate_rules::canonical::to_canonical_json(&d).unwrap(),
    )
    .unwrap();
    let typed = DecisionEvent {
        call_id: Some("c1".into()),
        approval_id: Some(None),
        data_decision: Some(None),
        reason: Some("why".into()),
        ..DecisionEvent::new(d, DecisionEffect::Deny)
    };
    let embedded = DecisionEvent {
        decision: &*raw,
        outcome: typed.outcome,
        call_id: typed.call_id.clone(),
        approval_id: typed.approval_id.clone(),
        data_decision: Some(None::<&serde_json::value::RawValue>),
        reason: typed.reason.clone(),
        request_hash: None,
        refused_model_call: None,
    };
    assert_eq!(
        to_canonical_json(&embedded).unwrap(),
        to_canonical_json(&typed).unwrap()
    );
}
