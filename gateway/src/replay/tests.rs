use serde_json::json;

use super::*;
use crate::compiler::{CompileSettings, ItemKind};
use crate::providers::{ChatRequest, ChatResponse, Usage};
use crate::recorder::format::{EnvelopeSource, RUN_FORMAT, RunHeader, StepRecord};

fn item(id: &str, content: &str) -> CandidateItem {
    CandidateItem::new(id, ItemKind::File, content)
}

fn event(seq: u64, kind: &str, payload: Value) -> EventRecord {
    EventRecord {
        seq,
        step: 0,
        kind: kind.into(),
        at: "2026-11-02T09:00:00Z".into(),
        payload,
        prev: None,
        hash: None,
    }
}

/// A one-step run recorded the way the gateway records: offer, compile, model call and
/// output, a tool call with its decision and result.
fn recorded_run(with_envelopes: bool) -> RunFile {
    let header = RunHeader {
        id: "run-r".into(),
        agent: "coder".into(),
        task: "T-12".into(),
        scope: "org:acme/repo:api/task:T-12".into(),
        clearance: "confidential".into(),
        status: "succeeded".into(),
        started_at: "2026-11-02T09:00:00Z".into(),
        finished_at: None,
        parent_run: None,
        envelopes: vec![],
        metadata: json!({}),
    };
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../fixtures/envelopes/");
    let sources: Vec<EnvelopeSource> = if with_envelopes {
        [("org-baseline", 1), ("coding-agent", 2)]
            .into_iter()
            .map(|(id, version)| EnvelopeSource {
                id: id.into(),
                version,
                yaml: std::fs::read_to_string(format!("{root}{id}.yaml")).unwrap(),
            })
            .collect()
    } else {
        vec![]
    };
    let mut file = RunFile {
        format: RUN_FORMAT.into(),
        run: header,
        steps: vec![StepRecord {
            index: 0,
            name: "read".into(),
            agent: "coder".into(),
        }],
        events: vec![],
        envelope_sources: sources,
    };
    let policies = ReplayPolicies::new(&file).unwrap();
    let engine = policies.as_ref().map(|p| p.opening_engine());
    let policy = engine.map(|engine| CompilePolicy {
        engine,
        run: "run-r",
        memo: None,
    });
    let items = vec![item("a", "fn main() {}"), item("b", "// notes")];
    let settings = CompileSettings::default();
    let compiled = compile(
        &CompileInput {
            items: items.clone(),
            settings: settings.clone(),
            subject: None,
        },
        policy.as_ref(),
    )
    .unwrap();
    let request = model_request(&compiled, "gpt-4.1-mini");
    let response = ChatResponse {
        id: "chatcmpl-1".into(),
        model: "gpt-4.1-mini".into(),
        content: "read src/main.rs".into(),
        finish_reason: "stop".into(),
        usage: Usage {
            prompt_tokens: compiled.tokens,
            completion_tokens: 3,
        },
        tool_calls: Vec::new(),
    };
    let mut decision = json!({"effect": "allow"});
    if let Some(engine) = engine {
        decision = serde_json::to_value(engine.decide_tool(
            "run-r",
            "fs.read_file",
            &json!({"path": "src/main.rs"}),
        ))
        .unwrap();
    }
    file.events = vec![
        event(0, "context_offered", json!({"items": items})),
        event(
            1,
            "compile",
            json!({"settings": settings, "item_ids": ["a", "b"], "hash": compiled.hash,
                   "tokens": compiled.tokens, "outcomes": compiled.outcomes, "text": compiled.text}),
        ),
        event(
            2,
            "model_call",
            json!({"provider": "openai", "request": request, "request_hash": request.hash(), "compile_seq": 1}),
        ),
        event(
            3,
            "model_output",
            json!({"request_hash": request.hash(), "response": response}),
        ),
        event(
            4,
            "tool_call",
            json!({"call_id": "c1", "tool": "fs.read_file", "arguments": {"path": "src/main.rs"}}),
        ),
        event(
            5,
            "decision",
            json!({"call_id": "c1", "decision": decision}),
        ),
        event(
            6,
            "tool_result",
            json!({"call_id": "c1", "status": "ok", "output": "fn main() {}"}),
        ),
    ];
    file
}

#[test]
fn a_faithful_recording_replays_without_drift() {
    for envelopes in [false, true] {
        let report = replay_file(&recorded_run(envelopes)).unwrap();
        assert!(!report.drifted(), "{}", report.to_text());
        assert_eq!(
            (report.compiles, report.model_calls, report.tool_calls),
            (1, 1, 1)
        );
        let checks: Vec<&str> = report.steps[0].checks.iter().map(|c| c.check).collect();
        if envelopes {
            assert_eq!(checks, ["compile", "model", "decision", "tool"]);
        } else {
            assert_eq!(checks, ["compile", "model", "tool"]);
        }
    }
}

#[test]
fn an_edited_item_is_drift_named_by_the_first_differing_item() {
    let mut file = recorded_run(false);
    file.events[0].payload["items"][1]["content"] = json!("// notes, edited");
    let report = replay_file(&file).unwrap();
    assert!(report.drifted());
    let compile = &report.steps[0].checks[0];
    assert_eq!((compile.check, compile.matched), ("compile", false));
    assert!(
        compile.first_difference.as_deref().unwrap().contains("`b`")
            || compile
                .first_difference
                .as_deref()
                .unwrap()
                .contains("line"),
        "{compile:?}"
    );
    // The model request changes with the context, so the recorded output is not served.
    let model = &report.steps[0].checks[1];
    assert!(!model.matched, "{model:?}");
    assert!(report.to_text().contains("DRIFT"));
}

#[test]
fn a_recorded_fake_output_is_recomputed_and_an_edit_is_drift() {
    let mut file = recorded_run(false);
    let request: ChatRequest =
        serde_json::from_value(file.events[2].payload["request"].clone()).unwrap();
    let fake = FakeProvider::new().complete(&request).unwrap();
    file.events[2].payload["provider"] = json!("fake");
    file.events[3].payload["response"] = serde_json::to_value(&fake).unwrap();
    assert!(!replay_file(&file).unwrap().drifted());
    file.events[3].payload["response"]["content"] = json!("something else");
    let report = replay_file(&file).unwrap();
    let model = &report.steps[0].checks[1];
    assert!(
        !model.matched && model.detail.contains("answers differently"),
        "{model:?}"
    );
}

#[test]
fn a_recorded_upstream_output_is_served_as_recorded() {
    // An upstream model's answer cannot be recomputed: replay serves what was recorded.
    let mut file = recorded_run(false);
    file.events[3].payload["response"]["content"] = json!("something else");
    assert!(!replay_file(&file).unwrap().drifted());
}

#[test]
fn a_policy_change_shows_as_decision_drift() {
    let mut file = recorded_run(true);
    // Recorded under envelopes that allowed the read; now the baseline forbids fs.*.
    file.envelope_sources[0].yaml = file.envelope_sources[0]
        .yaml
        .replace("tools: [\"shell.rm*\"]", "tools: [\"shell.rm*\", \"fs.*\"]");
    let report = replay_file(&file).unwrap();
    let decision = report.steps[0]
        .checks
        .iter()
        .find(|c| c.check == "decision")
        .unwrap();
    assert!(!decision.matched, "{decision:?}");
    assert!(
        decision.detail.contains("allow was recorded"),
        "{decision:?}"
    );
}

#[test]
fn replay_exact_runs_as_a_job() {
    use crate::job_kinds::builtin_registry;
    use crate::jobs::{EnqueueOptions, JobQueue, JobState, Worker, WorkerConfig};
    use crate::store::tests::tempdir::Dir;

    let dir = Dir::new("replay-job");
    let store = crate::store::tests::open_in(dir.path());
    Recorder::new(store.clone())
        .import(&recorded_run(true))
        .unwrap();
    let queue = JobQueue::new(store);
    let good = queue
        .enqueue(
            REPLAY_EXACT_JOB,
            json!({"run": "run-r"}),
            EnqueueOptions::default(),
        )
        .unwrap();
    let missing = queue
        .enqueue(
            REPLAY_EXACT_JOB,
            json!({"run": "nope"}),
            EnqueueOptions::default(),
        )
        .unwrap();
    let worker = Worker::new(queue.clone(), builtin_registry(), WorkerConfig::default()).unwrap();
    worker.run_once().unwrap();
    worker.run_once().unwrap();
    let done = queue.get(good).unwrap();
    assert_eq!(done.state, JobState::Succeeded);
    let result = done.result.unwrap();
    assert_eq!(result["drift"], json!(false));
    assert_eq!(result["compiles"], json!(1));
    let failed = queue.get(missing).unwrap();
    assert_eq!(failed.state, JobState::Dead, "{failed:?}");
    assert!(failed.last_error.unwrap().contains("no run `nope`"));
}
