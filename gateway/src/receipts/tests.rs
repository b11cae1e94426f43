//! Receipts recorded by the runtime and rendered on read: byte for byte what deciding in full
//! gives, from a live engine or one rebuilt from the store; refused, and said, when what they
//! name is gone.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use serde_json::json;
use tollgate_rules::canonical::to_canonical_json;
use tollgate_rules::decide::{DecisionEffect, OnRead, PolicyEngine};
use tollgate_rules::envelope::{Level, load_envelopes};
use tollgate_rules::packs::{builtin_files, program_from_files, program_hash_of};

use super::*;
use crate::clock::ManualClock;
use crate::providers::FakeProvider;
use crate::recorder::events::DecisionEvent;
use crate::runtime::tests::{START_MS, call, fixture_sources};
use crate::runtime::{DecisionFilter, OpenRun, Runtime};
use crate::store::tests::tempdir::Dir;

/// Another agent's envelope, stored beside the fixtures: it governs no run of `coder`.
const SUPPORT: &str = "id: support-agent\nversion: 1\nattach: {agents: [support]}\ntools:\n  - {id: tickets, effect: allow, tools: [\"tickets.*\"]}\n";

fn sources() -> Vec<(String, String)> {
    let mut out = fixture_sources();
    out.push(("support.yaml".into(), SUPPORT.into()));
    out
}

fn runtime_over(store: crate::store::Store) -> Runtime {
    Runtime::with_clock(
        store,
        Arc::new(FakeProvider::new()),
        Arc::new(ManualClock::new(START_MS)),
    )
    .unwrap()
}

/// A run of `coder` with a call of each kind: allowed, default-denied (with why-nots), needing
/// approval, and one whose arguments hold a secret.
fn recorded(dir: &Dir) -> Runtime {
    let store = crate::store::tests::open_in(dir.path());
    crate::policy::store_envelopes(&store, &sources()).unwrap();
    let rt = runtime_over(store);
    rt.open_run(OpenRun {
        id: Some("r1".into()),
        agent: "coder".into(),
        task: "T-12".into(),
        scope: "org:acme/repo:api/task:T-12".into(),
        clearance: Some(Level::Confidential),
        envelopes: Vec::new(),
        parent_run: None,
        handoff: None,
        metadata: Default::default(),
    })
    .unwrap();
    for (tool, args) in [
        ("fs.read_file", json!({"path": "src/main.rs"})),
        ("net.http_post", json!({"url": "https://example.com"})),
        ("shell.exec", json!({"cmd": "ls"})),
        ("fs.read_file", json!({"path": "AKIAPYDATUTGFKRXITKP"})),
        ("http.get", json!({"url": "https://docs.acme.dev/a"})),
    ] {
        rt.tool_call("r1", call(tool, args)).unwrap();
    }
    rt
}

/// Every tool decision of `r1` as recorded, with the request it decided.
fn tool_decisions(rt: &Runtime) -> Vec<(u64, DecisionEvent, PolicyRequest)> {
    let file = rt.recorder().export("r1").unwrap();
    let mut out = Vec::new();
    for e in &file.events {
        if let Some(call) = e.read::<ToolCallEvent>() {
            let d = file
                .events
                .iter()
                .filter(|o| o.seq > e.seq)
                .filter_map(|o| Some((o.seq, o.read::<DecisionEvent>()?)))
                .find(|(_, d)| d.call_id.as_ref() == Some(&call.call_id))
                .unwrap();
            out.push((d.0, d.1, recorded_tool_request("r1", &call)));
        }
    }
    out
}

#[test]
fn every_tool_receipt_renders_byte_for_byte_as_deciding_in_full_from_a_live_or_rebuilt_engine() {
    let dir = Dir::new("receipts");
    let rt = recorded(&dir);
    let decisions = tool_decisions(&rt);
    assert_eq!(decisions.len(), 5);
    let engine = rt.engine_for("r1").unwrap();
    // The run's engine holds only the envelopes that govern it, not the support agent's.
    assert_eq!(engine.set().len(), 2);
    let rebuilt = runtime_over(rt.store().clone());
    let listed = |rt: &Runtime| rt.decisions("r1", &DecisionFilter::default()).unwrap();
    let (live, cold) = (listed(&rt), listed(&rebuilt));
    let mut why_nots = 0;
    for (seq, event, request) in &decisions {
        let full = engine.decide(request);
        let secret = seq == &decisions[3].0;
        // Recorded without proof and why-not, except the call whose arguments hold a secret
        // (its recorded request is not the one decided).
        assert_eq!(event.decision.on_read.is_none(), secret, "{seq}");
        assert_eq!(event.decision.proof.is_some(), secret, "{seq}");
        assert!(event.decision.why_not.is_empty());
        why_nots += full.why_not.len();
        for list in [&live, &cold] {
            let d = list.iter().find(|d| d.seq == *seq).unwrap();
            assert_eq!(d.unrendered, None);
            if secret {
                assert_eq!(d.decision, event.decision);
            } else {
                assert_eq!(
                    to_canonical_json(&d.decision).unwrap(),
                    to_canonical_json(&full).unwrap(),
                    "{seq}"
                );
            }
        }
    }
    assert!(why_nots > 0, "a default denial is among them");
    // Raw: as recorded.
    let raw = rebuilt
        .decisions(
            "r1",
            &DecisionFilter {
                raw: true,
                seq: Some(decisions[1].0),
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(raw.len(), 1);
    assert_eq!(raw[0].decision, decisions[1].1.decision);
}

#[test]
fn a_receipt_whose_envelope_versions_are_gone_says_so_and_is_shown_as_recorded() {
    let dir = Dir::new("receipts");
    let rt = recorded(&dir);
    rt.store()
        .transact(|c| {
            c.execute("DELETE FROM run_envelopes WHERE run_id = 'r1'", ())?;
            Ok::<_, StoreError>(())
        })
        .unwrap();
    let cold = runtime_over(rt.store().clone());
    let decisions = tool_decisions(&rt);
    let seq = decisions[1].0;
    let d = cold
        .decisions(
            "r1",
            &DecisionFilter {
                seq: Some(seq),
                ..Default::default()
            },
        )
        .unwrap()
        .remove(0);
    let why = d.unrendered.expect("not rendered");
    assert!(why.contains("cannot rebuild the envelopes"), "{why}");
    assert_eq!(d.decision, decisions[1].1.decision);
    assert_eq!(d.decision.effect, DecisionEffect::Deny);
}

#[test]
fn a_receipt_decided_under_another_program_renders_under_that_program_when_the_store_keeps_it() {
    let dir = Dir::new("receipts");
    let rt = recorded(&dir);
    let mut file = rt.recorder().export("r1").unwrap();
    let (seq, event, request) = tool_decisions(&rt).remove(1);
    // An older release's program: the same packs with one more comment line.
    let mut files: Vec<(String, String)> = builtin_files()
        .iter()
        .map(|(n, t)| (n.to_string(), t.to_string()))
        .collect();
    assert!(files[3].0.ends_with("envelopes.dl"));
    files[3].1.insert_str(0, "// an older release\n");
    let older = program_hash_of(&files);
    let program = program_from_files(&files).unwrap();
    let set = load_envelopes(&sources()[..2]).unwrap();
    let subject = crate::run_policy::run_facts(&file.run).unwrap();
    let engine =
        PolicyEngine::with_program(&program, &older, &set, &subject, Default::default()).unwrap();
    let receipt = engine.decide_receipt(&request);
    assert_eq!(
        receipt.on_read,
        Some(OnRead {
            program: older.clone()
        })
    );
    let at = file.events.iter().position(|e| e.seq == seq).unwrap();
    let mut payload = event.clone();
    payload.decision = receipt;
    file.events[at].payload = crate::recorder::events::to_json(&payload);

    // Not kept by the store: said, not rendered under this build's program.
    let err = Renderer::new(&file, Some(rt.store()))
        .render(seq, &payload)
        .unwrap_err();
    assert_eq!(err, ReceiptError::Program(older.clone()));
    // Kept: rendered under it, byte for byte what that program decided.
    let text = serde_json::to_string(&files).unwrap();
    rt.store()
        .transact(move |c| {
            c.execute(
                "INSERT INTO rule_programs (hash, files, created_at) VALUES (?1, ?2, 'then')",
                params![older, text],
            )?;
            Ok::<_, StoreError>(())
        })
        .unwrap();
    let rendered = Renderer::new(&file, Some(rt.store()))
        .render(seq, &payload)
        .unwrap();
    assert_eq!(rendered, engine.decide(&request));
    // The proof names the older program's lines (one further down in the file with the
    // comment), so it is not what this build's program would have written.
    assert_ne!(
        to_canonical_json(&rendered).unwrap(),
        to_canonical_json(&rt.engine_for("r1").unwrap().decide(&request)).unwrap()
    );
}

#[test]
fn the_runtime_keeps_its_program_and_an_answer_asked_with_explain_carries_the_proof() {
    let dir = Dir::new("receipts");
    let rt = recorded(&dir);
    let files = stored_program(rt.store(), program_hash()).unwrap().unwrap();
    assert_eq!(program_hash_of(&files), program_hash());
    let mut req = call("net.http_post", json!({"url": "https://example.com"}));
    req.explain = true;
    let answer = rt.tool_call("r1", req).unwrap();
    assert!(answer.decision.proof.is_some() && !answer.decision.why_not.is_empty());
    assert_eq!(answer.decision.on_read, None);
    // The receipt is recorded without them all the same.
    let (_, event, request) = tool_decisions(&rt).pop().unwrap();
    assert!(event.decision.proof.is_none() && event.decision.on_read.is_some());
    assert_eq!(
        *answer.decision,
        rt.engine_for("r1").unwrap().decide(&request)
    );
    // Without `explain`, the answer is the receipt.
    let answer = rt
        .tool_call(
            "r1",
            call("net.http_post", json!({"url": "https://example.com"})),
        )
        .unwrap();
    assert!(answer.decision.proof.is_none() && answer.decision.on_read.is_some());
}

/// Every decision of every fixture run (recorded in full, as deciding wrote them before
/// receipts were rendered on read): decided again as a receipt and rendered, it is the
/// recorded decision byte for byte. Tool decisions and refused model calls go through the
/// renderer of the run file (its engine rebuilt from the file's envelope versions); each
/// compile's item decisions through the engine's render.
#[test]
fn every_fixture_run_decision_decided_as_a_receipt_renders_as_recorded() {
    use crate::compiler::CandidateItem;
    use crate::recorder::events::{CompileEvent, ContextOfferedEvent, Event};
    use crate::recorder::format::RunFile;
    use std::collections::HashMap;

    let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fixtures/runs");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    assert_eq!(files.len(), 5);
    let (mut tools, mut models, mut items) = (0, 0, 0);
    for path in files {
        let file: RunFile = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        let run = file.run.id.clone();
        let versions = RecordedVersions::new(&file);
        let subject = run_facts(&file.run).unwrap();
        let engine_of = |labels: &[String]| {
            let set = load_envelopes(&versions.sources(labels).unwrap()).unwrap();
            PolicyEngine::new(&set, &subject).unwrap()
        };
        let mut renderer = Renderer::new(&file, None);
        let mut offered: HashMap<String, CandidateItem> = HashMap::new();
        for e in &file.events {
            match e.event().unwrap() {
                Event::ContextOffered(ContextOfferedEvent { items: list }) => {
                    offered.extend(list.into_iter().map(|i| (i.id.clone(), i)));
                }
                Event::Compile(CompileEvent { outcomes, .. }) => {
                    for o in outcomes {
                        let Some(recorded) = o.policy else { continue };
                        let engine = engine_of(&recorded.envelope_versions);
                        let request = PolicyRequest::Context {
                            run: run.clone(),
                            item: offered[&o.id].context_item(),
                        };
                        let receipt = engine.decide_receipt(&request);
                        let rendered = engine.render(&request, &receipt).unwrap();
                        let mut full = engine.decide(&request);
                        assert_eq!(
                            to_canonical_json(&rendered).unwrap(),
                            to_canonical_json(&full).unwrap()
                        );
                        // An allowed item's proof is left out of a compile's record.
                        if recorded.proof.is_none() {
                            full.proof = None;
                        }
                        assert_eq!(full, recorded, "{} {}", path.display(), o.id);
                        items += 1;
                    }
                }
                Event::Decision(recorded) if recorded.decision.kind != RequestKind::Handoff => {
                    let engine = engine_of(&recorded.decision.envelope_versions);
                    let mut receipt = recorded.clone();
                    let request = renderer_request(&file, e.seq, &recorded);
                    receipt.decision = engine.decide_receipt(&request);
                    assert!(receipt.decision.on_read.is_some() && receipt.decision.proof.is_none());
                    let rendered = renderer.render(e.seq, &receipt).unwrap();
                    assert_eq!(
                        to_canonical_json(&rendered).unwrap(),
                        to_canonical_json(&recorded.decision).unwrap(),
                        "{} event {}",
                        path.display(),
                        e.seq
                    );
                    match recorded.decision.kind {
                        RequestKind::Tool => tools += 1,
                        _ => models += 1,
                    }
                }
                _ => {}
            }
        }
    }
    assert!(
        tools >= 50 && items >= 100,
        "{tools} tool, {models} model, {items} item decisions"
    );
}

/// The request a recorded decision decided, as the renderer rebuilds it.
fn renderer_request(file: &RunFile, seq: u64, event: &DecisionEvent) -> PolicyRequest {
    Renderer::new(file, None).request(seq, event).unwrap()
}

#[test]
fn an_exported_run_imported_into_another_store_renders_its_receipts_there() {
    let dir = Dir::new("receipts");
    let rt = recorded(&dir);
    let file = rt.recorder().export("r1").unwrap();
    // The export keeps the receipts as recorded (the chain hashes their bytes).
    assert!(file.events.iter().any(|e| {
        e.read::<DecisionEvent>()
            .is_some_and(|d| d.decision.on_read.is_some())
    }));
    let there = Dir::new("receipts-import");
    let store = crate::store::tests::open_in(there.path());
    let other = runtime_over(store);
    other.recorder().import(&file).unwrap();
    let here = rt.decisions("r1", &DecisionFilter::default()).unwrap();
    let imported = other.decisions("r1", &DecisionFilter::default()).unwrap();
    assert_eq!(here.len(), imported.len());
    for (a, b) in here.iter().zip(&imported) {
        assert_eq!(b.unrendered, None, "{}", b.seq);
        assert_eq!(
            to_canonical_json(&a.decision).unwrap(),
            to_canonical_json(&b.decision).unwrap()
        );
    }
}
