use serde_json::{Value, json};

use super::*;
use crate::recorder::format::{EventRecord, RUN_FORMAT, RunFile, RunHeader, StepRecord};
use crate::recorder::{PromotedRecord, Provenance};
use crate::store::tests::tempdir::Dir;

/// A candidate item as a `context_offered` event records it.
fn item(id: &str) -> Value {
    serde_json::to_value(crate::compiler::CandidateItem::new(
        id,
        crate::compiler::ItemKind::File,
        "text",
    ))
    .unwrap()
}

fn event(seq: u64, step: u32, kind: &str, payload: Value) -> EventRecord {
    EventRecord {
        seq,
        step,
        kind: kind.into(),
        at: "2026-11-02T09:00:00Z".into(),
        payload,
        prev: None,
        hash: None,
    }
}

fn recorded() -> (Dir, Recorder) {
    let dir = Dir::new("prov");
    let rec = Recorder::new(crate::store::tests::open_in(dir.path()));
    let file = RunFile {
        format: RUN_FORMAT.into(),
        run: RunHeader {
            id: "r1".into(),
            agent: "coder".into(),
            task: "T-1".into(),
            scope: "org:acme".into(),
            clearance: "internal".into(),
            status: "succeeded".into(),
            started_at: "2026-11-02T09:00:00Z".into(),
            finished_at: None,
            parent_run: None,
            envelopes: vec![],
            metadata: json!({}),
        },
        steps: vec![StepRecord {
            index: 0,
            name: "fix".into(),
            agent: "coder".into(),
        }],
        events: vec![
            event(
                0,
                0,
                "context_offered",
                json!({"items": [item("f1"), item("f2")]}),
            ),
            event(1, 0, "compile", json!({"item_ids": ["f1"], "hash": "abc"})),
            event(
                2,
                0,
                "model_call",
                json!({"compile_seq": 1, "request_hash": "rq", "request": {"model": "m", "messages": []}}),
            ),
            event(
                3,
                0,
                "model_output",
                json!({"request_hash": "rq", "response": {"id": "o", "model": "m", "content": "",
                       "finish_reason": "stop",
                       "usage": {"prompt_tokens": 1, "completion_tokens": 1}}}),
            ),
            event(
                4,
                0,
                "tool_call",
                json!({"call_id": "c1", "tool": "fs.read_file"}),
            ),
            event(
                5,
                0,
                "decision",
                json!({"call_id": "c1", "decision": {"kind": "tool", "request": "c1", "effect": "allow",
                       "rules": [], "envelope_versions": [], "input_hash": "h"}}),
            ),
            event(
                6,
                0,
                "tool_result",
                json!({"call_id": "c1", "output": "ok"}),
            ),
            event(7, 0, "note", json!({"text": "unrelated"})),
        ],
        envelope_sources: vec![],
    };
    rec.import(&file).unwrap();
    rec.promote(&PromotedRecord {
        id: "memory:m1".into(),
        kind: "memory".into(),
        body: json!({}),
        provenance: Some(Provenance {
            run: "r1".into(),
            step: 0,
            event: 6,
        }),
        scope: "org:acme".into(),
        ttl_seconds: Some(0),
        sensitivity: Some("internal".into()),
    })
    .unwrap();
    (dir, rec)
}

fn ids(answer: &ProvenanceAnswer) -> Vec<&str> {
    answer.nodes.iter().map(|n| n.id.as_str()).collect()
}

#[test]
fn a_memory_traces_back_through_the_tool_call_to_the_compile_and_the_run() {
    let (_d, rec) = recorded();
    let a = query(&rec, "memory:m1", Walk::Ancestors).unwrap();
    let found = ids(&a);
    for expected in [
        "memory:m1",
        "event:r1/6",
        "event:r1/5",
        "event:r1/4",
        "event:r1/3",
        "event:r1/2",
        "event:r1/1",
        "event:r1/0",
        "step:r1/0",
        "run:r1",
    ] {
        assert!(
            found.contains(&expected),
            "{expected} missing from {found:?}"
        );
    }
    assert!(!found.contains(&"event:r1/7"), "{found:?}");
    let text = a.to_text();
    assert!(
        text.starts_with("ancestors of memory:m1\nmemory:m1"),
        "{text}"
    );
    assert!(text.contains("[promoted] event:r1/6"), "{text}");
}

#[test]
fn what_used_a_compile() {
    let (_d, rec) = recorded();
    let d = query(&rec, "event:r1/1", Walk::Descendants).unwrap();
    assert_eq!(
        ids(&d),
        [
            "event:r1/1",
            "event:r1/2",
            "event:r1/3",
            "event:r1/4",
            "event:r1/5",
            "event:r1/6",
            "memory:m1"
        ]
    );
    let dot = d.to_dot();
    assert!(
        dot.starts_with("digraph {") && dot.contains("compiled"),
        "{dot}"
    );
}

#[test]
fn unknown_ids_are_reported() {
    let (_d, rec) = recorded();
    assert!(resolve_id(&rec, "nope").is_err());
    assert_eq!(resolve_id(&rec, "r1").unwrap(), "run:r1");
    let err = query(&rec, "memory:zzz", Walk::Ancestors).unwrap_err();
    assert!(
        err.to_string()
            .contains("nothing is recorded as `memory:zzz`")
    );
}
