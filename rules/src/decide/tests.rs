//! Decisions on the coding-agent fixtures: every effect, its rules, a proof that re-checks
//! without the evaluator, why-not for default denials, hashes, and failing closed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tollgate_engine::{FactSet, Limits, proof_check};

use super::*;
use crate::envelope::{EnvelopeSet, Level, load_envelopes};
use crate::request::*;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fixtures/envelopes")
}

fn envelopes() -> EnvelopeSet {
    let sources: Vec<(String, String)> = ["org-baseline.yaml", "coding-agent.yaml"]
        .iter()
        .map(|f| {
            (
                (*f).to_string(),
                std::fs::read_to_string(fixtures().join(f)).unwrap(),
            )
        })
        .collect();
    load_envelopes(&sources).unwrap()
}

fn coder() -> RunSubject {
    RunSubject {
        run: "run-42".into(),
        agent: "coder".into(),
        task: "T-12".into(),
        scope: "org:acme/repo:api/task:T-12".into(),
        clearance: Level::Confidential,
    }
}

fn stranger() -> RunSubject {
    RunSubject {
        run: "run-7".into(),
        agent: "someone".into(),
        task: "T-1".into(),
        scope: "org:acme".into(),
        clearance: Level::Secret,
    }
}

fn subjects() -> FactSet {
    subject_facts(&[coder(), stranger()], &[])
}

fn engine() -> PolicyEngine {
    PolicyEngine::new(&envelopes(), &subjects()).unwrap()
}

/// Re-checks a decision's proof against every input the engine saw.
fn recheck(decision: &EnvelopeDecision, request_facts: &FactSet) {
    let mut inputs = envelopes().facts();
    inputs.extend_from(&subjects());
    inputs.extend_from(request_facts);
    let program = crate::packs::builtin_program().unwrap();
    proof_check::check_proof(&program, &inputs, decision.proof.as_ref().unwrap()).unwrap();
}

fn tool(engine: &PolicyEngine, name: &str, args: serde_json::Value) -> EnvelopeDecision {
    engine.decide_tool("run-42", name, &args)
}

#[test]
fn read_only_tools_are_allowed_with_a_checkable_proof() {
    let e = engine();
    let args = serde_json::json!({"path": "src/main.rs"});
    let d = tool(&e, "fs.read_file", args.clone());
    assert_eq!(d.effect, DecisionEffect::Allow);
    assert_eq!(
        d.rules,
        ["coding-agent/read-only", "org-baseline/rest-to-children"]
    );
    assert_eq!(d.envelope_versions, ["coding-agent@2", "org-baseline@1"]);
    assert!(d.why_not.is_empty() && d.error.is_none());
    let proof = d.proof.as_ref().unwrap();
    assert_eq!(
        proof.fact.to_string(),
        format!(
            "tool_decision(\"{}\", \"allow\", \"coding-agent/read-only\")",
            d.request
        )
    );
    let text = proof.to_text();
    assert!(text.contains("[rule tool.allow"), "{text}");
    assert!(text.contains("[input: envelope:coding-agent@2]"), "{text}");
    assert!(text.contains("[input: request]"), "{text}");
    let call = ToolCall {
        name: "fs.read_file".into(),
        args,
        usage: Default::default(),
    };
    recheck(&d, &tool_request_facts(&d.request, "run-42", &call));
}

#[test]
fn the_baseline_denies_whatever_the_child_says() {
    let d = tool(&engine(), "shell.rm", serde_json::json!({"path": "/"}));
    assert_eq!(d.effect, DecisionEffect::Deny);
    assert_eq!(d.rules, ["org-baseline/no-rm"]);
    assert!(d.why_not.is_empty());
    assert!(
        d.proof
            .unwrap()
            .to_text()
            .contains("[rule tool.deny-overrides")
    );
}

#[test]
fn shell_and_writes_under_src_need_approval() {
    let e = engine();
    let d = tool(&e, "shell.exec", serde_json::json!({"cmd": "cargo test"}));
    assert_eq!(d.effect, DecisionEffect::RequireApproval);
    assert_eq!(
        d.rules,
        ["coding-agent/lead-approves", "coding-agent/shell"]
    );
    let d = tool(
        &e,
        "fs.write_file",
        serde_json::json!({"path": "src/lib.rs"}),
    );
    assert_eq!(d.effect, DecisionEffect::RequireApproval);
    // Outside `src/**` the argument condition fails: nothing permits the write.
    let d = tool(
        &e,
        "fs.write_file",
        serde_json::json!({"path": "Cargo.toml"}),
    );
    assert_eq!(d.effect, DecisionEffect::Deny);
    assert_eq!(d.rules, ["default-deny"]);
    let why: String = d.why_not.iter().map(|w| w.to_text()).collect();
    assert!(why.contains("tool_rule_applies("), "{why}");
    assert!(why.contains("coding-agent/writes"), "{why}");
}

#[test]
fn a_used_up_budget_rate_limits() {
    let e = engine();
    let mut call = ToolCall {
        name: "http.get".into(),
        args: serde_json::json!({"url": "https://docs.rs"}),
        usage: [("coding-agent/web-budget".to_string(), 29)].into(),
    };
    let decide = |call: &ToolCall| {
        e.decide(&PolicyRequest::Tool {
            run: "run-42".into(),
            call: call.clone(),
            now: Some(1_767_225_600),
        })
    };
    assert_eq!(decide(&call).effect, DecisionEffect::Allow);
    call.usage.insert("coding-agent/web-budget".into(), 30);
    let d = decide(&call);
    assert_eq!(d.effect, DecisionEffect::RateLimited);
    assert_eq!(d.rules, ["coding-agent/web-budget"]);
}

#[test]
fn a_default_denial_without_explanations_keeps_its_proof_and_decision() {
    let quiet = engine().explain_denials(false);
    let d = tool(&quiet, "net.upload", serde_json::json!({}));
    let loud = tool(&engine(), "net.upload", serde_json::json!({}));
    assert_eq!(d.effect, DecisionEffect::Deny);
    assert_eq!(d.rules, ["default-deny"]);
    assert!(d.proof.is_some());
    assert!(d.why_not.is_empty());
    assert_eq!(
        (d.input_hash.as_str(), d.proof.as_ref()),
        (loud.input_hash.as_str(), loud.proof.as_ref())
    );
    assert!(!loud.why_not.is_empty());
}

#[test]
fn a_default_denial_says_why_nothing_allowed_it() {
    let d = tool(&engine(), "net.upload", serde_json::json!({}));
    assert_eq!(d.effect, DecisionEffect::Deny);
    assert_eq!(d.rules, ["default-deny"]);
    assert!(d.proof.is_some());
    let why: Vec<String> = d.why_not.iter().map(|w| w.to_text()).collect();
    assert!(
        why[0].starts_with(&format!("tool_permitted(\"{}\") does not hold", d.request)),
        "{why:#?}"
    );
    let all = why.concat();
    assert!(all.contains("`glob(p, t)` does not hold"), "{all}");
    assert!(all.contains("t = \"net.upload\""), "{all}");
    // Rules whose head cannot give the fact are left out.
    assert!(!all.contains("its head cannot produce"), "{all}");
    let explained = d.explain();
    assert!(explained.contains("why not allowed:"), "{explained}");
}

#[test]
fn a_run_no_envelope_governs_is_denied() {
    let d = engine().decide_tool("run-7", "fs.read_file", &serde_json::json!({}));
    assert_eq!(d.effect, DecisionEffect::Deny);
    assert_eq!(d.rules, ["no-envelope"]);
    assert!(d.envelope_versions.is_empty());
}

#[test]
fn context_items_are_seen_redacted_or_blocked() {
    let e = engine();
    let item = |id: &str, scope: &str, level: Level, labels: &[&str]| ContextItem {
        id: id.into(),
        kind: "doc".into(),
        scope: scope.into(),
        sensitivity: level,
        labels: labels.iter().map(|l| l.to_string()).collect(),
    };
    let d = e.decide_context(
        "run-42",
        &item("readme", "org:acme/repo:api", Level::Internal, &[]),
    );
    assert_eq!(d.effect, DecisionEffect::Allow);
    assert_eq!(
        d.rules,
        ["coding-agent/own-org", "org-baseline/rest-visible"]
    );
    let secret = item(
        "keys",
        "org:acme/repo:api",
        Level::Confidential,
        &["secret"],
    );
    let d = e.decide_context("run-42", &secret);
    assert_eq!(d.effect, DecisionEffect::Redact);
    assert_eq!(d.rules, ["org-baseline/secrets-redacted"]);
    recheck(&d, &context_request_facts(&d.request, "run-42", &secret));
    let d = e.decide_context(
        "run-42",
        &item("vault", "org:acme/repo:api", Level::Secret, &[]),
    );
    assert_eq!(d.effect, DecisionEffect::Deny);
    assert_eq!(d.rules, ["clearance-forbid"]);
    let d = e.decide_context("run-42", &item("p", "org:partner/x:y", Level::Public, &[]));
    assert_eq!(
        (d.effect, d.rules.as_slice()),
        (DecisionEffect::Deny, &["default-deny".to_string()][..])
    );
    assert!(!d.why_not.is_empty());
}

#[test]
fn one_model_is_allowed() {
    let e = engine();
    let call = |model: &str| ModelCall {
        provider: "openai".into(),
        model: model.into(),
        reasoning: String::new(),
    };
    let d = e.decide_model("run-42", &call("gpt-4.1-mini"));
    assert_eq!(
        (d.effect, d.rules.clone()),
        (DecisionEffect::Allow, vec!["coding-agent/mini".to_string()])
    );
    let d = e.decide_model("run-42", &call("gpt-4.1"));
    assert_eq!(d.effect, DecisionEffect::Deny);
    let why: String = d.why_not.iter().map(|w| w.to_text()).collect();
    assert!(why.contains("m = \"gpt-4.1\""), "{why}");
}

#[test]
fn memories_are_filtered_before_retrieval_with_reasons() {
    let memory = |id: &str, class: &str, scope: &str, status: &str, expires_at: i32| MemoryRecord {
        id: id.into(),
        class: class.into(),
        scope: scope.into(),
        sensitivity: Level::Internal,
        status: status.into(),
        expires_at,
        pinned: false,
    };
    let memories = [
        memory("build", "procedure", "org:acme/repo:api", "approved", 0),
        memory("elsewhere", "fact", "org:acme/repo:web", "approved", 0),
        memory("pref", "preference", "org:acme", "approved", 0),
        memory("draft", "fact", "org:acme", "candidate", 0),
        memory("stale", "warning", "org:acme", "approved", 100),
    ];
    let e = PolicyEngine::new(&envelopes(), &subject_facts(&[coder()], &memories)).unwrap();
    let d = e.retrieve_memories("run-42", Some(1000));
    assert_eq!(d.effect, DecisionEffect::Allow);
    let verdicts: Vec<(&str, bool, Vec<&str>)> = d
        .memories
        .iter()
        .map(|m| {
            (
                m.memory.as_str(),
                m.eligible,
                m.reasons.iter().map(String::as_str).collect(),
            )
        })
        .collect();
    assert_eq!(
        verdicts,
        [
            ("build", true, vec![]),
            ("draft", false, vec!["status_candidate"]),
            ("elsewhere", false, vec!["out_of_scope"]),
            ("pref", false, vec!["class_denied"]),
            ("stale", false, vec!["expired"]),
        ]
    );
    assert!(d.memories.iter().all(|m| m.proof.is_some()));
    assert_eq!(d.rules, ["memory.eligible"]);
}

#[test]
fn handoff_violations_deny_with_a_proof_each() {
    let reviewer = RunSubject {
        run: "run-43".into(),
        agent: "reviewer".into(),
        task: "T-12".into(),
        scope: "org:acme/repo:api/task:T-12".into(),
        clearance: Level::Internal,
    };
    let e = PolicyEngine::new(&envelopes(), &subject_facts(&[coder(), reviewer], &[])).unwrap();
    let mut handoff = Handoff {
        id: "h-1".into(),
        from_run: "run-42".into(),
        to_run: "run-43".into(),
        contract: HandoffContract {
            id: "review".into(),
            requires: vec!["patch".into()],
            constraints: vec![],
        },
        goal: Some("review the patch".into()),
        // Evidence below the consumer's scope: its `scope_parent` rows come with the request.
        evidence: vec![Evidence {
            item: "diff".into(),
            scope: "org:acme/repo:api/task:T-12/file:src~main.rs".into(),
            sensitivity: Level::Internal,
        }],
        delivery: Some(Delivery {
            outputs: vec!["patch".into()],
            actions: vec![],
        }),
        ..Handoff::default()
    };
    let d = e.validate_handoff(&handoff);
    assert_eq!(d.effect, DecisionEffect::Allow, "{d:#?}");
    assert!(d.violations.is_empty());
    handoff.goal = None;
    handoff.delivery = Some(Delivery::default());
    let d = e.validate_handoff(&handoff);
    assert_eq!(d.effect, DecisionEffect::Deny);
    let codes: Vec<(&str, &str)> = d
        .violations
        .iter()
        .map(|v| (v.code.as_str(), v.detail.as_str()))
        .collect();
    assert_eq!(
        codes,
        [("missing_goal", "goal"), ("missing_output", "patch")]
    );
    assert_eq!(d.rules, ["handoff.missing-goal", "handoff.missing-output"]);
    assert_eq!(d.request, "h-1");
}

#[test]
fn input_hashes_follow_the_request_the_subject_and_the_envelopes() {
    let e = engine();
    let a = tool(&e, "fs.read_file", serde_json::json!({"path": "a"}));
    let b = tool(&e, "fs.read_file", serde_json::json!({"path": "a"}));
    let c = tool(&e, "fs.read_file", serde_json::json!({"path": "b"}));
    assert_eq!(a.input_hash, b.input_hash);
    assert_eq!(a, b);
    assert_ne!(a.input_hash, c.input_hash);
    // Other runs known to the engine do not change the hash; this run's clearance does.
    let alone = PolicyEngine::new(&envelopes(), &subject_facts(&[coder()], &[])).unwrap();
    assert_eq!(
        tool(&alone, "fs.read_file", serde_json::json!({"path": "a"})).input_hash,
        a.input_hash
    );
    let mut cleared = coder();
    cleared.clearance = Level::Secret;
    let other = PolicyEngine::new(&envelopes(), &subject_facts(&[cleared], &[])).unwrap();
    assert_ne!(
        tool(&other, "fs.read_file", serde_json::json!({"path": "a"})).input_hash,
        a.input_hash
    );
}

#[test]
fn an_engine_error_fails_closed() {
    let late = Arc::new(AtomicBool::new(false));
    let flag = late.clone();
    let limits = Limits {
        deadline: Some(Arc::new(move || flag.load(Ordering::SeqCst))),
        ..Limits::default()
    };
    let e = PolicyEngine::with_limits(&envelopes(), &subjects(), limits).unwrap();
    late.store(true, Ordering::SeqCst);
    let d = tool(&e, "fs.read_file", serde_json::json!({}));
    assert_eq!(d.effect, DecisionEffect::Deny);
    assert!(d.rules.is_empty() && d.proof.is_none());
    assert_eq!(d.error.as_deref(), Some("evaluation ran past its deadline"));
    assert!(d.explain().contains("error (failed closed)"));
}

#[test]
fn decisions_round_trip_through_json() {
    let d = tool(&engine(), "net.upload", serde_json::json!({}));
    let json = serde_json::to_string(&d).unwrap();
    let back: EnvelopeDecision = serde_json::from_str(&json).unwrap();
    assert_eq!(back, d);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["effect"], "deny");
    assert_eq!(v["kind"], "tool");
    assert!(v["why_not"].is_array());
}

#[test]
fn every_fixture_request_gets_its_documented_effect() {
    let set = envelopes();
    let expected = [
        ("handoff.json", "deny"),
        ("memory.json", "allow"),
        ("model-allowed.json", "allow"),
        ("model-denied.json", "deny"),
        ("other-org-context.json", "deny"),
        ("read-file.json", "allow"),
        ("readme-context.json", "allow"),
        ("rm-rf.json", "deny"),
        ("secret-context.json", "redact"),
        ("shell-exec.json", "require_approval"),
        ("upload.json", "deny"),
        ("web-over-budget.json", "rate_limited"),
        ("write-file.json", "require_approval"),
        ("write-outside-src.json", "deny"),
    ];
    for (file, effect) in expected {
        let text = std::fs::read_to_string(fixtures().join("requests").join(file)).unwrap();
        let request: DecisionRequest = serde_json::from_str(&text).unwrap();
        let d = decide_request(&set, &request).unwrap();
        assert_eq!(d.effect.as_str(), effect, "{file}: {d:#?}");
        assert!(d.error.is_none(), "{file}");
    }
}

#[test]
fn a_request_file_names_what_its_kind_lacks() {
    let request: DecisionRequest = serde_json::from_value(serde_json::json!({
        "kind": "tool",
        "subject": {"run": "r", "agent": "a", "task": "t", "scope": "org:x"}
    }))
    .unwrap();
    assert_eq!(
        decide_request(&envelopes(), &request)
            .unwrap_err()
            .to_string(),
        "a `tool` request needs a `tool` object"
    );
    let unknown = serde_json::from_value::<DecisionRequest>(serde_json::json!({
        "kind": "tool", "subject": {"run": "r", "agent": "a", "task": "t", "scope": "s"}, "tools": {}
    }));
    assert!(
        unknown
            .unwrap_err()
            .to_string()
            .contains("unknown field `tools`")
    );
}

#[test]
fn why_not_names_only_rules_of_envelopes_governing_the_run() {
    let other = "id: other-team\nversion: 1\nattach: {agents: [someone]}\ntools:\n  - {id: uploads, effect: allow, tools: [\"net.*\"]}\n";
    let mut sources: Vec<(String, String)> = envelopes()
        .envelopes()
        .iter()
        .map(|e| (e.id.clone(), serde_json::to_string(e).unwrap()))
        .collect();
    sources.push(("other.yaml".into(), other.into()));
    let set = load_envelopes(&sources).unwrap();
    let e = PolicyEngine::new(&set, &subjects()).unwrap();
    let d = e.decide_tool("run-42", "net.upload", &serde_json::json!({}));
    assert_eq!(d.rules, ["default-deny"]);
    let why: String = d.why_not.iter().map(|w| w.to_text()).collect();
    assert!(!why.contains("other-team"), "{why}");
    let d = e.decide_tool("run-7", "net.upload", &serde_json::json!({}));
    assert_eq!(d.rules, ["other-team/uploads"]);
    assert_eq!(d.envelope_versions, ["other-team@1"]);
}

#[test]
fn a_closed_rule_does_not_apply_to_a_call_with_an_argument_it_does_not_name() {
    // `only_named_args`: the URL is checked, and nothing may ride beside it (a `proxy`, a
    // nested option); the injection corpus's `proxy` beside a docs URL was allowed before.
    let set = load_envelopes(&[(
        "e.yaml",
        "id: docs\nversion: 1\nattach: {agents: [coder]}\ntools:\n  \
         - {id: get, effect: allow, tools: [http.get], args: {/url: \"https://docs.acme.dev/**\"}, only_named_args: true}\n  \
         - {id: list, effect: allow, tools: [fs.list], only_named_args: true}\n  \
         - {id: open, effect: allow, tools: [http.head], args: {/url: \"https://docs.acme.dev/**\"}}\n",
    )])
    .unwrap();
    let subjects = subject_facts(&[coder()], &[]);
    let e = PolicyEngine::new(&set, &subjects).unwrap();
    let decide = |t: &str, args: serde_json::Value| e.decide_tool("run-42", t, &args).effect;
    let docs = "https://docs.acme.dev/guide";
    assert_eq!(
        decide("http.get", serde_json::json!({"url": docs})),
        DecisionEffect::Allow
    );
    for args in [
        serde_json::json!({"url": docs, "proxy": "https://evil.example"}),
        serde_json::json!({"url": docs, "opts": {"follow": true}}),
        serde_json::json!({"url": [docs]}),
    ] {
        assert_eq!(
            decide("http.get", args.clone()),
            DecisionEffect::Deny,
            "{args}"
        );
    }
    // Closed with no `args`: no argument at all.
    assert_eq!(
        decide("fs.list", serde_json::json!({})),
        DecisionEffect::Allow
    );
    assert_eq!(
        decide("fs.list", serde_json::json!({"path": "/"})),
        DecisionEffect::Deny
    );
    // An open rule still lets other arguments ride along.
    let extra = serde_json::json!({"url": docs, "proxy": "https://evil.example"});
    assert_eq!(decide("http.head", extra), DecisionEffect::Allow);
    // The denial's proof re-checks without the evaluator.
    let args = serde_json::json!({"url": docs, "proxy": "https://evil.example"});
    let d = e.decide_tool("run-42", "http.get", &args);
    let mut inputs = set.facts();
    inputs.extend_from(&subjects);
    let call = ToolCall {
        name: "http.get".into(),
        args,
        usage: Default::default(),
    };
    inputs.extend_from(&tool_request_facts(&d.request, "run-42", &call));
    let program = crate::packs::builtin_program().unwrap();
    proof_check::check_proof(&program, &inputs, d.proof.as_ref().unwrap()).unwrap();
}

#[test]
fn an_argument_that_climbs_is_permitted_by_no_pattern_but_still_denied() {
    // `src/**` matches `src/../../.ssh/id_ed25519` as a glob: an allow (or an approval) must not
    // reach past the prefix it names. A deny must still catch what climbs: `**/.env` denies
    // `../.env` though the read-only rule allows any path.
    let set = load_envelopes(&[(
        "e.yaml",
        "id: e\nversion: 1\nattach: {agents: [coder]}\ntools:\n  \
         - {id: src, effect: allow, tools: [fs.read_file], args: {/path: \"src/**\"}}\n  \
         - {id: any, effect: allow, tools: [fs.list]}\n  \
         - {id: env, effect: deny, tools: [fs.list], args: {/path: \"**/.env\"}}\n  \
         - {id: docs, effect: require_approval, tools: [http.get], args: {/url: \"https://docs.acme.dev/public/**\"}}\n  \
         - {id: up, effect: allow, tools: [fs.stat], args: {/path: \"../shared/**\"}}\n",
    )])
    .unwrap();
    let e = PolicyEngine::new(&set, &subject_facts(&[coder()], &[])).unwrap();
    let decide = |t: &str, args: serde_json::Value| e.decide_tool("run-42", t, &args).effect;
    let path = |p: &str| serde_json::json!({ "path": p });
    let url = |u: &str| serde_json::json!({ "url": u });
    assert_eq!(
        decide("fs.read_file", path("src/a/b.rs")),
        DecisionEffect::Allow
    );
    for (climbing, why) in [
        ("src/../../home/dev/.ssh/id_ed25519", "plain"),
        ("src/a/../../../etc/shadow", "from a subfolder"),
        ("src/..\\..\\secrets.txt", "Windows separators"),
        ("src/%2e%2e/%2E%2E/etc/passwd", "percent-encoded"),
        ("src/.%2e/.env", "half-encoded"),
        ("src/..", "the parent itself"),
        ("src/.\t./x", "a tab a URL parser drops"),
    ] {
        assert_eq!(
            decide("fs.read_file", path(climbing)),
            DecisionEffect::Deny,
            "{why}"
        );
    }
    for name in ["src/.../x", "src/..hidden/x", "src/a../b", "src/./main.rs"] {
        assert_eq!(
            decide("fs.read_file", path(name)),
            DecisionEffect::Allow,
            "{name}"
        );
    }
    let docs = "https://docs.acme.dev/public/guide";
    assert_eq!(
        decide("http.get", url(docs)),
        DecisionEffect::RequireApproval
    );
    for climbing in [
        "https://docs.acme.dev/public/..?x",
        "https://docs.acme.dev/public/..#x",
        "https://docs.acme.dev/public/a/../../admin",
    ] {
        assert_eq!(
            decide("http.get", url(climbing)),
            DecisionEffect::Deny,
            "{climbing}"
        );
    }
    // The deny still applies to what climbs.
    assert_eq!(decide("fs.list", path("src")), DecisionEffect::Allow);
    for denied in ["../.env", "src/../.env", "a/.env"] {
        assert_eq!(
            decide("fs.list", path(denied)),
            DecisionEffect::Deny,
            "{denied}"
        );
    }
    // A pattern that spells `..` opts out.
    assert_eq!(
        decide("fs.stat", path("../shared/DESIGN.md")),
        DecisionEffect::Allow
    );
}

mod hostile_arguments;
