//! Receipts rendered on read: a receipt decided without its proof and why-not, rendered by an
//! engine materialised afresh over the same envelopes and subject, is byte for byte the
//! decision deciding in full gives; an engine that is not the one that decided refuses.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use proptest::prelude::*;
use tollgate_engine::Limits;

use super::*;
use crate::canonical::to_canonical_json;
use crate::envelope::{EnvelopeSet, Level, load_envelopes};
use crate::request::*;

fn envelopes(files: &[&str]) -> EnvelopeSet {
    let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fixtures/envelopes");
    let sources: Vec<(String, String)> = files
        .iter()
        .map(|f| {
            let text = std::fs::read_to_string(dir.join(f)).unwrap();
            ((*f).to_string(), text)
        })
        .collect();
    load_envelopes(&sources).unwrap()
}

fn set() -> EnvelopeSet {
    envelopes(&["org-baseline.yaml", "coding-agent.yaml"])
}

fn subjects() -> FactSet {
    let run = |run: &str, agent: &str, scope: &str, clearance| RunSubject {
        run: run.into(),
        agent: agent.into(),
        task: "T-12".into(),
        scope: scope.into(),
        clearance,
    };
    subject_facts(
        &[
            run(
                "run-42",
                "coder",
                "org:acme/repo:api/task:T-12",
                Level::Confidential,
            ),
            run("run-7", "someone", "org:acme", Level::Secret),
        ],
        &[],
    )
}

fn engine() -> PolicyEngine {
    PolicyEngine::new(&set(), &subjects()).unwrap()
}

fn tool(run: &str, name: &str, args: serde_json::Value) -> PolicyRequest {
    PolicyRequest::Tool {
        run: run.into(),
        call: ToolCall {
            name: name.into(),
            args,
            usage: Default::default(),
        },
        now: None,
    }
}

/// Decides `request` for a receipt on one engine, renders it on another built the same way,
/// and checks the bytes against deciding in full.
fn renders_as_decided(decider: &PolicyEngine, renderer: &PolicyEngine, request: &PolicyRequest) {
    let full = decider.decide(request);
    let receipt = decider.decide_receipt(request);
    let rendered = renderer.render(request, &receipt).unwrap();
    assert_eq!(
        to_canonical_json(&rendered).unwrap(),
        to_canonical_json(&full).unwrap()
    );
}

#[test]
fn a_receipt_holds_the_decision_without_its_explanations_and_names_the_program() {
    let e = engine();
    let request = tool(
        "run-42",
        "http.post",
        serde_json::json!({"url": "https://x"}),
    );
    let full = e.decide(&request);
    assert_eq!(full.rules, ["default-deny"]);
    assert!(full.proof.is_some() && !full.why_not.is_empty());
    let receipt = e.decide_receipt(&request);
    assert_eq!(
        (receipt.effect, &receipt.rules, &receipt.input_hash),
        (full.effect, &full.rules, &full.input_hash)
    );
    assert_eq!(
        (&receipt.request, &receipt.envelope_versions),
        (&full.request, &full.envelope_versions)
    );
    assert!(receipt.proof.is_none() && receipt.why_not.is_empty());
    assert_eq!(
        receipt.on_read,
        Some(OnRead {
            program: crate::packs::program_hash().to_string()
        })
    );
    // The receipt is a fraction of the decision's size.
    let (small, large) = (
        to_canonical_json(&receipt).unwrap().len(),
        to_canonical_json(&full).unwrap().len(),
    );
    assert!(small * 4 < large, "{small} vs {large}");
}

#[test]
fn every_kind_of_request_renders_as_decided_on_a_fresh_engine() {
    let (decider, renderer) = (engine(), engine());
    for request in [
        tool(
            "run-42",
            "fs.read_file",
            serde_json::json!({"path": "src/main.rs"}),
        ),
        tool("run-42", "shell.exec", serde_json::json!({"cmd": "ls"})),
        tool("run-42", "http.post", serde_json::json!({})),
        tool("run-7", "fs.read_file", serde_json::json!({})),
        PolicyRequest::Context {
            run: "run-42".into(),
            item: ContextItem {
                id: "p".into(),
                kind: "doc".into(),
                scope: "org:partner/x:y".into(),
                sensitivity: Level::Public,
                labels: vec![],
            },
        },
        PolicyRequest::Model {
            run: "run-42".into(),
            call: ModelCall {
                provider: "openai".into(),
                model: "gpt-4.1".into(),
                reasoning: String::new(),
            },
        },
    ] {
        renders_as_decided(&decider, &renderer, &request);
    }
}

#[test]
fn a_decision_that_carries_its_proof_renders_as_it_is() {
    let e = engine();
    let request = tool("run-42", "http.post", serde_json::json!({}));
    let full = e.decide(&request);
    // Recorded before receipts were rendered on read: read as is, whatever engine reads it.
    let other = PolicyEngine::new(&envelopes(&["org-baseline.yaml"]), &subjects()).unwrap();
    assert_eq!(other.render(&request, &full).unwrap(), full);
}

#[test]
fn a_receipt_is_never_rendered_against_other_envelopes_another_request_or_another_program() {
    let e = engine();
    let request = tool("run-42", "http.post", serde_json::json!({}));
    let receipt = e.decide_receipt(&request);
    // Other envelopes (the baseline alone): the input differs.
    let other = PolicyEngine::new(&envelopes(&["org-baseline.yaml"]), &subjects()).unwrap();
    let err = other.render(&request, &receipt).unwrap_err();
    assert!(matches!(err, RenderError::Input { .. }), "{err}");
    // Another request: the input differs.
    let elsewhere = tool("run-42", "http.post", serde_json::json!({"a": 1}));
    assert!(matches!(
        e.render(&elsewhere, &receipt),
        Err(RenderError::Input { .. })
    ));
    // Another program.
    let mut older = receipt.clone();
    older.on_read = Some(OnRead {
        program: "0".repeat(64),
    });
    let err = e.render(&request, &older).unwrap_err();
    assert!(
        err.to_string().contains("the store keeps every program"),
        "{err}"
    );
    // The same input recorded as deciding otherwise (an engine that is not this one).
    let mut forged = receipt.clone();
    forged.effect = DecisionEffect::Allow;
    forged.rules = vec!["coding-agent/read-only".into()];
    assert!(matches!(
        e.render(&request, &forged),
        Err(RenderError::Decision { .. })
    ));
}

#[test]
fn an_engine_under_a_stored_program_renders_what_it_decided() {
    let files = crate::packs::builtin_files();
    let program = crate::packs::program_from_files(&files).unwrap();
    let hash = crate::packs::program_hash_of(&files);
    let stored =
        PolicyEngine::with_program(&program, &hash, &set(), &subjects(), Limits::default())
            .unwrap();
    renders_as_decided(
        &engine(),
        &stored,
        &tool("run-42", "http.post", serde_json::json!({})),
    );
}

#[test]
fn retrievals_and_handoffs_are_decided_in_full() {
    let e = engine();
    let request = PolicyRequest::Memory {
        run: "run-42".into(),
        now: None,
    };
    assert_eq!(e.decide_receipt(&request), e.decide(&request));
}

fn tools() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "fs.read_file",
        "fs.write_file",
        "fs.list",
        "search.code",
        "shell.exec",
        "http.get",
        "http.post",
        "deploy.prod",
        "git.push",
        "",
    ])
}

fn args() -> impl Strategy<Value = serde_json::Value> {
    let value = prop_oneof![
        Just(serde_json::json!("src/main.rs")),
        Just(serde_json::json!("../etc/passwd")),
        Just(serde_json::json!("https://docs.acme.dev/x")),
        Just(serde_json::json!("https://evil.example/x")),
        Just(serde_json::json!(3)),
        Just(serde_json::json!(null)),
        "[a-z/.]{0,12}".prop_map(serde_json::Value::String),
    ];
    let key = prop::sample::select(vec!["path", "url", "cmd", "x"]);
    prop::collection::btree_map(key, value, 0..3).prop_map(|m| serde_json::to_value(m).unwrap())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn any_tool_request_renders_byte_for_byte_as_decided(
        run in prop::sample::select(vec!["run-42", "run-7", "run-unknown"]),
        name in tools(),
        args in args(),
        used in prop::option::of(0i32..20),
    ) {
        thread_local! {
            static ENGINES: (PolicyEngine, PolicyEngine) = (engine(), engine());
        }
        let mut request = tool(run, name, args);
        if let (PolicyRequest::Tool { call, .. }, Some(n)) = (&mut request, used) {
            call.usage.insert("coding-agent/web-budget".into(), n);
        }
        ENGINES.with(|(decider, renderer)| renders_as_decided(decider, renderer, &request));
    }
}

#[test]
fn a_set_narrowed_to_a_run_s_governing_envelopes_keeps_their_parents_or_is_none() {
    let all = set();
    assert!(
        all.only(&["coding-agent"]).is_none(),
        "its parent is left out"
    );
    let both = all.only(&["coding-agent", "org-baseline"]).unwrap();
    assert_eq!(both.version(), all.version());
    let baseline = all.only(&["org-baseline"]).unwrap();
    assert_eq!(baseline.len(), 1);
    assert_eq!(
        baseline.version(),
        envelopes(&["org-baseline.yaml"]).version()
    );
}
