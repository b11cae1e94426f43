//! The agent runtime end to end on a real store, with a manual clock.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tollgate_rules::decide::DecisionEffect;

use super::*;
use crate::approvals::{self, ApprovalAnswer, ApprovalState};
use crate::clock::ManualClock;
use crate::compiler::{CandidateItem, CompileInput, ItemKind};
use crate::providers::{ChatMessage, ChatRequest, FakeProvider};
use crate::store::tests::tempdir::Dir;

pub(crate) const START_MS: i64 = 1_795_000_000_000;

/// A chat request to `model` with one user message.
fn user_says(model: &str, text: &str) -> ChatRequest {
    ChatRequest {
        model: model.into(),
        messages: vec![ChatMessage::new("user", text)],
        ..Default::default()
    }
}

pub(crate) fn fixture_sources() -> Vec<(String, String)> {
    ["org-baseline", "coding-agent"]
        .iter()
        .map(|n| {
            let path = format!(
                "{}/../fixtures/envelopes/{n}.yaml",
                env!("CARGO_MANIFEST_DIR")
            );
            (path.clone(), std::fs::read_to_string(&path).unwrap())
        })
        .collect()
}

/// A store with the fixture envelopes, and a runtime over it.
pub(crate) fn runtime(dir: &Dir, clock: &ManualClock) -> Runtime {
    let store = crate::store::tests::open_in(dir.path());
    crate::policy::store_envelopes(&store, &fixture_sources()).unwrap();
    Runtime::with_clock(
        store,
        Arc::new(FakeProvider::new()),
        Arc::new(clock.clone()),
    )
    .unwrap()
}

pub(crate) fn open(rt: &Runtime, id: &str) {
    rt.open_run(OpenRun {
        id: Some(id.into()),
        agent: "coder".into(),
        task: "T-12".into(),
        scope: "org:acme/repo:api/task:T-12".into(),
        clearance: Some(tollgate_rules::envelope::Level::Confidential),
        envelopes: vec![],
        parent_run: None,
        handoff: None,
        metadata: Default::default(),
    })
    .unwrap();
}

pub(crate) fn call(tool: &str, args: serde_json::Value) -> ToolCallRequest {
    ToolCallRequest {
        tool: tool.into(),
        arguments: args,
        step: None,
        call_id: None,
        approval_id: None,
        explain: false,
        credentials_seen: None,
    }
}

#[test]
fn a_run_records_the_governing_envelope_versions_and_replays_without_drift() {
    let dir = Dir::new("runtime");
    let clock = ManualClock::new(START_MS);
    let rt = runtime(&dir, &clock);
    open(&rt, "r1");
    let view = rt.run_view("r1").unwrap();
    assert_eq!(view.run.envelopes, ["coding-agent@2", "org-baseline@1"]);
    let mut item = CandidateItem::new("f1", ItemKind::File, "fn main() {}");
    item.scope = "org:acme/repo:api".into();
    let mut secret = CandidateItem::new("env", ItemKind::File, "AWS_KEY=AKIAPYDATUTGFKRXITKP");
    secret.scope = "org:acme/repo:api".into();
    secret.labels = vec!["secret".into()];
    let answer = rt
        .compile("r1", CompileInput::new(vec![item, secret]), None)
        .unwrap();
    assert!(
        !answer.compiled.text.contains("AKIA"),
        "{}",
        answer.compiled.text
    );
    rt.tool_call("r1", call("fs.read_file", json!({"path": "a"})))
        .unwrap();
    rt.chat("r1", user_says("gpt-4.1-mini", "hello")).unwrap();
    assert!(rt.recorder().verify("r1").unwrap().is_intact());
    let report = crate::replay::replay_exact(rt.recorder(), "r1").unwrap();
    assert!(!report.drifted(), "{}", report.to_text());
    assert_eq!(
        (report.compiles, report.tool_calls, report.model_calls),
        (1, 1, 1)
    );
    // The run's row counts its decisions as the recorded events list them (typed writes
    // count as they append; the compile's item decisions included).
    rt.tool_call(
        "r1",
        call("net.http_get", json!({"url": "https://example.com"})),
    )
    .unwrap();
    let mut listed = crate::recorder::DecisionCounts::default();
    for d in rt.decisions("r1", &Default::default()).unwrap() {
        listed.add(d.effect);
    }
    let row = rt.recorder().list().unwrap().remove(0).decisions;
    assert_eq!(row, listed);
    assert!(row.total() >= 4 && row.deny + row.redact >= 1, "{row:?}");
}

#[test]
fn rate_limits_are_counted_in_the_store_and_survive_a_restart() {
    let dir = Dir::new("runtime");
    let clock = ManualClock::new(START_MS);
    let rt = runtime(&dir, &clock);
    open(&rt, "r1");
    // coding-agent/web-budget: 30 calls of http.get per hour per run.
    for i in 0..29 {
        let a = rt
            .tool_call(
                "r1",
                call("http.get", json!({"url": format!("https://docs.rs/{i}")})),
            )
            .unwrap();
        assert_eq!(a.effect, DecisionEffect::Allow, "call {i}: {}", a.reason);
        clock.advance(Duration::from_secs(60));
    }
    drop(rt);
    // A new process on the same database.
    let rt = runtime(&dir, &clock);
    let last = rt
        .tool_call(
            "r1",
            call("http.get", json!({"url": "https://docs.rs/last"})),
        )
        .unwrap();
    assert_eq!(last.effect, DecisionEffect::Allow);
    let over = rt
        .tool_call(
            "r1",
            call("http.get", json!({"url": "https://docs.rs/over"})),
        )
        .unwrap();
    assert_eq!(over.effect, DecisionEffect::RateLimited, "{}", over.reason);
    assert!(!over.execute);
    assert_eq!(over.rules, ["coding-agent/web-budget"]);
    // The first call was made 29 minutes ago; it leaves the hour's window in 31 minutes.
    assert_eq!(over.retry_after, Some(31 * 60));
    clock.advance(Duration::from_secs(31 * 60));
    let again = rt
        .tool_call(
            "r1",
            call("http.get", json!({"url": "https://docs.rs/again"})),
        )
        .unwrap();
    assert_eq!(again.effect, DecisionEffect::Allow);
    // Another run has its own budget (`per: run`).
    open(&rt, "r2");
    let other = rt
        .tool_call("r2", call("http.get", json!({"url": "https://docs.rs"})))
        .unwrap();
    assert_eq!(other.effect, DecisionEffect::Allow);
    // Replay re-decides the limited call with the usage recorded for it.
    let report = crate::replay::replay_exact(rt.recorder(), "r1").unwrap();
    assert!(!report.drifted(), "{}", report.to_text());
}

#[test]
fn an_approval_binds_the_call_expires_and_is_used_once() {
    let dir = Dir::new("runtime");
    let clock = ManualClock::new(START_MS);
    let rt = runtime(&dir, &clock);
    open(&rt, "r1");
    let asked = rt
        .tool_call("r1", call("shell.exec", json!({"cmd": "make test"})))
        .unwrap();
    assert_eq!(asked.effect, DecisionEffect::RequireApproval);
    let approval = asked.approval.clone().unwrap();
    assert_eq!(approval.state, ApprovalState::Pending);
    assert_eq!(approval.approvers, ["team-lead"]);
    let id = approval.id.clone();
    let answer = |by: &str| ApprovalAnswer {
        approve: true,
        by: by.into(),
        reason: String::new(),
        principal: None,
    };
    approvals::decide(rt.store(), &id, &answer("team-lead"), rt.now_ms(), "t").unwrap();

    let with = |args: serde_json::Value| ToolCallRequest {
        approval_id: Some(id.clone()),
        ..call("shell.exec", args)
    };
    let other = rt
        .tool_call("r1", with(json!({"cmd": "rm -rf /"})))
        .unwrap_err();
    assert!(
        matches!(other, RuntimeError::Conflict(ref m) if m.contains("other arguments")),
        "{other}"
    );
    let ran = rt
        .tool_call("r1", with(json!({"cmd": "make test"})))
        .unwrap();
    assert_eq!(ran.effect, DecisionEffect::Allow, "{}", ran.reason);
    assert!(ran.execute);
    assert_eq!(ran.approval.as_ref().unwrap().state, ApprovalState::Used);
    let twice = rt
        .tool_call("r1", with(json!({"cmd": "make test"})))
        .unwrap_err();
    assert!(
        matches!(twice, RuntimeError::Conflict(ref m) if m.contains("used")),
        "{twice}"
    );

    // A second approval, left to expire (lead-approves holds 900 s).
    let asked = rt
        .tool_call("r1", call("fs.write_file", json!({"path": "src/a.rs"})))
        .unwrap();
    let id2 = asked.approval.unwrap().id;
    clock.advance(Duration::from_secs(901));
    let late = approvals::decide(rt.store(), &id2, &answer("team-lead"), rt.now_ms(), "t");
    assert!(late.is_err());
    assert_eq!(
        approvals::get(rt.store(), &id2, rt.now_ms()).unwrap().state,
        ApprovalState::Expired
    );
}

#[test]
fn a_rejected_approval_denies_the_call() {
    let dir = Dir::new("runtime");
    let clock = ManualClock::new(START_MS);
    let rt = runtime(&dir, &clock);
    open(&rt, "r1");
    let asked = rt
        .tool_call("r1", call("shell.exec", json!({"cmd": "make"})))
        .unwrap();
    let id = asked.approval.unwrap().id;
    let no = ApprovalAnswer {
        approve: false,
        by: "team-lead".into(),
        reason: "not today".into(),
        principal: None,
    };
    approvals::decide(rt.store(), &id, &no, rt.now_ms(), "t").unwrap();
    let denied = rt
        .tool_call(
            "r1",
            ToolCallRequest {
                approval_id: Some(id),
                ..call("shell.exec", json!({"cmd": "make"}))
            },
        )
        .unwrap();
    assert_eq!(denied.effect, DecisionEffect::Deny);
    assert!(denied.reason.contains("not today"), "{}", denied.reason);
}

#[test]
fn secrets_in_arguments_are_redacted_and_never_recorded() {
    let dir = Dir::new("runtime");
    let clock = ManualClock::new(START_MS);
    let rt = runtime(&dir, &clock);
    open(&rt, "r1");
    let key = "sk-pjayvazapjtkkqexkdkmpyoigc";
    let a = rt
        .tool_call(
            "r1",
            call(
                "http.get",
                json!({"url": format!("https://x.example/?key={key}")}),
            ),
        )
        .unwrap();
    assert_eq!(a.effect, DecisionEffect::Redact, "{}", a.reason);
    assert!(a.execute);
    let url = a.arguments["url"].as_str().unwrap();
    assert!(
        !url.contains(key) && url.contains("[REDACTED:org-baseline/secrets-redacted]"),
        "{url}"
    );
    assert_eq!(
        a.data_decision.unwrap().rules,
        ["org-baseline/secrets-redacted"]
    );
    // A denied call's secret is not recorded either.
    rt.tool_call("r1", call("secrets.read", json!({"token": key})))
        .unwrap();
    let file = rt.recorder().export("r1").unwrap();
    let text = serde_json::to_string(&file).unwrap();
    assert!(!text.contains(key), "a secret reached the recorder");
}

#[test]
fn a_tool_above_the_run_clearance_is_denied_by_clearance_forbid_and_never_gated() {
    let dir = Dir::new("runtime");
    let clock = ManualClock::new(START_MS);
    let store = crate::store::tests::open_in(dir.path());
    let mut sources = fixture_sources();
    sources.push((
        "levels.yaml".into(),
        "id: shell-levels\nversion: 1\nattach: {agents: [coder]}\ntool_levels:\n  - {id: shell-secret, tools: [\"shell.*\"], level: secret}\n".into(),
    ));
    crate::policy::store_envelopes(&store, &sources).unwrap();
    let rt = Runtime::with_clock(
        store,
        Arc::new(FakeProvider::new()),
        Arc::new(clock.clone()),
    )
    .unwrap();
    open(&rt, "r1"); // cleared for confidential
    let denied = rt
        .tool_call("r1", call("shell.exec", json!({"cmd": "make test"})))
        .unwrap();
    assert_eq!(denied.effect, DecisionEffect::Deny, "{}", denied.reason);
    assert!(!denied.execute);
    assert_eq!(denied.rules, ["clearance-forbid"]);
    assert!(
        denied.approval.is_none(),
        "a forbidden call asks for no approval"
    );
    // An envelope with only tool levels does not take part in the intersection.
    let read = rt
        .tool_call("r1", call("fs.read_file", json!({"path": "src/main.rs"})))
        .unwrap();
    assert_eq!(read.effect, DecisionEffect::Allow, "{}", read.reason);
    // A run cleared for `secret` meets coding-agent's approval as before.
    rt.open_run(OpenRun {
        id: Some("r2".into()),
        agent: "coder".into(),
        task: "T-12".into(),
        scope: "org:acme/repo:api/task:T-12".into(),
        clearance: Some(tollgate_rules::envelope::Level::Secret),
        envelopes: vec![],
        parent_run: None,
        handoff: None,
        metadata: Default::default(),
    })
    .unwrap();
    let asked = rt
        .tool_call("r2", call("shell.exec", json!({"cmd": "make test"})))
        .unwrap();
    assert_eq!(
        asked.effect,
        DecisionEffect::RequireApproval,
        "{}",
        asked.reason
    );
    // Recorded with its receipt, and replayed without drift.
    let recorded = rt.decisions("r1", &DecisionFilter::default()).unwrap();
    assert!(
        recorded
            .iter()
            .any(|d| d.effect == DecisionEffect::Deny && d.rules == ["clearance-forbid"]),
        "{recorded:?}"
    );
    let report = crate::replay::replay_exact(rt.recorder(), "r1").unwrap();
    assert!(!report.drifted(), "{}", report.to_text());
}

#[test]
fn a_denied_model_is_refused_before_anything_leaves_and_recorded() {
    let dir = Dir::new("runtime");
    let clock = ManualClock::new(START_MS);
    let rt = runtime(&dir, &clock);
    open(&rt, "r1");
    let err = rt
        .chat("r1", user_says("anthropic/claude", "hi"))
        .unwrap_err();
    let RuntimeError::Denied { decision, .. } = err else {
        panic!("expected a denial, got {err}");
    };
    assert_eq!(decision.effect, DecisionEffect::Deny);
    let recorded = rt.decisions("r1", &DecisionFilter::default()).unwrap();
    assert_eq!(recorded.len(), 1);
    assert_eq!(recorded[0].effect, DecisionEffect::Deny);
    let events = rt.recorder().events("r1", None).unwrap();
    assert!(
        events.iter().all(|e| e.kind != "model_call"),
        "nothing was sent"
    );
}

#[test]
fn a_finished_run_takes_no_more_calls() {
    let dir = Dir::new("runtime");
    let clock = ManualClock::new(START_MS);
    let rt = runtime(&dir, &clock);
    open(&rt, "r1");
    rt.finish_run("r1", "succeeded").unwrap();
    let err = rt
        .tool_call("r1", call("fs.read_file", json!({})))
        .unwrap_err();
    assert!(matches!(err, RuntimeError::Conflict(_)), "{err}");
    let err = rt.open_run(OpenRun {
        id: Some("bad id".into()),
        agent: "a".into(),
        task: "t".into(),
        scope: "s".into(),
        clearance: None,
        envelopes: vec!["no-such".into()],
        parent_run: None,
        handoff: None,
        metadata: Default::default(),
    });
    assert!(matches!(err, Err(RuntimeError::Invalid(_))));
}

/// The engine cache holds a run's header, so a tool call on a cached run reads nothing before
/// it decides: the write must still refuse a run another process finished meanwhile, and
/// record nothing.
#[test]
fn calls_on_a_run_finished_by_another_process_are_refused_by_their_writes() {
    let dir = Dir::new("runtime");
    let clock = ManualClock::new(START_MS);
    let rt = runtime(&dir, &clock);
    open(&rt, "r1");
    rt.tool_call("r1", call("fs.read_file", json!({}))).unwrap();
    let events = rt.recorder().events("r1", None).unwrap().len();
    // Another process (the CLI) finishes the run: this runtime's cached engine does not know.
    Recorder::new(crate::store::tests::open_in(dir.path()))
        .finish_run("r1", "succeeded", "2026-01-01T00:00:00Z")
        .unwrap();
    let err = rt
        .tool_call("r1", call("fs.read_file", json!({})))
        .unwrap_err();
    assert!(
        matches!(&err, RuntimeError::Conflict(m) if m.contains("is succeeded")),
        "{err}"
    );
    // A chat call and a compile under the same cached engine are refused by their writes too,
    // before anything is forwarded.
    let err = rt
        .chat("r1", user_says("gpt-4.1-mini", "hello"))
        .unwrap_err();
    assert!(matches!(&err, RuntimeError::Conflict(_)), "{err}");
    let mut item = CandidateItem::new("f1", ItemKind::File, "fn main() {}");
    item.scope = "org:acme/repo:api".into();
    let err = rt
        .compile("r1", CompileInput::new(vec![item]), None)
        .unwrap_err();
    assert!(matches!(&err, RuntimeError::Conflict(_)), "{err}");
    assert_eq!(rt.recorder().events("r1", None).unwrap().len(), events);
}

/// A tool call's decision event is written with the decision's already rendered text
/// embedded; it must be exactly what the general canonical writer gives for the same content
/// (its hash is part of the chain), and read back as the recorder's `DecisionEvent`.
#[test]
fn tool_decision_event_is_canonical_and_typed() {
    use crate::recorder::events::DecisionEvent;
    let dir = Dir::new("runtime");
    let clock = ManualClock::new(START_MS);
    let rt = runtime(&dir, &clock);
    open(&rt, "r1");
    for (tool, args) in [
        ("fs.read_file", json!({"path": "a\"b"})),
        ("shell.exec", json!({"cmd": "make"})),
        ("net.raw", json!({})),
        (
            "fs.write_file",
            json!({"path": "x", "body": "AKIAPYDATUTGFKRXITKP"}),
        ),
    ] {
        rt.tool_call("r1", call(tool, args)).unwrap();
    }
    let decisions = rt
        .recorder()
        .events("r1", Some(&[crate::recorder::format::EventKind::Decision]))
        .unwrap();
    assert_eq!(decisions.len(), 4);
    for e in &decisions {
        let p = &e.payload;
        let value = json!({
            "approval_id": p["approval_id"],
            "call_id": p["call_id"],
            "data_decision": p["data_decision"],
            "decision": p["decision"],
            "outcome": p["outcome"],
            "reason": p["reason"],
        });
        assert_eq!(value, *p, "no other keys");
        let typed = e.read::<DecisionEvent>().expect("a tool decision reads");
        assert!(typed.call_id.is_some() && typed.reason.is_some());
        assert!(typed.approval_id.is_some() && typed.data_decision.is_some());
        let rendered = tools::Rendered::new(typed.decision.clone()).unwrap();
        let data = typed
            .data_decision
            .clone()
            .flatten()
            .map(|d| tools::Rendered::new(d).unwrap());
        let written = DecisionEvent {
            decision: &rendered,
            outcome: typed.outcome,
            call_id: typed.call_id.clone(),
            approval_id: typed.approval_id.clone(),
            data_decision: Some(data.as_ref()),
            reason: typed.reason.clone(),
            request_hash: None,
            refused_model_call: None,
        };
        let text = tollgate_rules::canonical::to_canonical_json(&written).unwrap();
        assert_eq!(text, tollgate_rules::canonical::canonical_json(&value));
        assert_eq!(
            rendered.json(),
            tollgate_rules::canonical::canonical_json(&p["decision"])
        );
    }
    assert!(rt.recorder().verify("r1").unwrap().is_intact());
}

/// A model call refused by policy records no `model_call` event; its decision carries the call,
/// so a simulation still sees it (`refused_model_calls_are_simulated`).
#[test]
fn refused_model_calls_are_simulated() {
    let dir = Dir::new("runtime");
    let clock = ManualClock::new(START_MS);
    let rt = runtime(&dir, &clock);
    open(&rt, "r1");
    let refused = rt.chat("r1", user_says("gpt-5", "hello"));
    assert!(matches!(refused, Err(RuntimeError::Denied { .. })));
    let coding = fixture_sources()
        .into_iter()
        .find(|(p, _)| p.ends_with("coding-agent.yaml"))
        .unwrap()
        .1;
    let widened = coding
        .replace("version: 2", "version: 3")
        .replace("model: gpt-4.1-mini", "model: \"gpt-*\"");
    assert_ne!(widened, coding, "the fixture changed shape");
    let file = rt.recorder().export("r1").unwrap();
    let report =
        crate::simulate::simulate(&file, &[("coding-agent.yaml".into(), widened)]).unwrap();
    let models: Vec<_> = report
        .decisions
        .iter()
        .filter(|d| d.kind == tollgate_rules::decide::RequestKind::Model)
        .collect();
    assert_eq!(models.len(), 1, "{models:?}");
    assert_eq!(models[0].subject, "openai/gpt-5");
    assert_eq!(models[0].recorded, DecisionEffect::Deny);
    assert!(models[0].recorded_in_run);
    assert_eq!(models[0].simulated, DecisionEffect::Allow);
    assert!(models[0].changed);
    // Replay re-decides the refusal under the run's own envelopes: the same denial.
    let report = crate::replay::replay_exact(rt.recorder(), "r1").unwrap();
    let checks: Vec<_> = report
        .steps
        .iter()
        .flat_map(|s| &s.checks)
        .filter(|c| c.detail.starts_with("model openai/gpt-5"))
        .collect();
    assert_eq!(checks.len(), 1, "{report:?}");
    assert!(checks[0].matched, "{:?}", checks[0]);
}

#[test]
fn a_streamed_call_records_what_a_completed_call_records() {
    // Two stores, the same clock and run: the two runs must export byte for byte the same,
    // hash chain included, whether the call was completed or streamed.
    let request = ChatRequest {
        model: "gpt-4.1-mini".into(),
        messages: vec![ChatMessage::new(
            "user",
            "the key is AKIAPYDATUTGFKRXITKP, summarise the repo",
        )],
        ..Default::default()
    };
    let mut exports = Vec::new();
    let mut streamed_pieces = Vec::new();
    for streamed in [false, true] {
        let dir = Dir::new("runtime");
        let clock = ManualClock::new(START_MS);
        let rt = runtime(&dir, &clock);
        open(&rt, "r1");
        let outcome = if streamed {
            let mut request = request.clone();
            request.extra.insert("stream".into(), json!(true));
            request
                .extra
                .insert("stream_options".into(), json!({"include_usage": true}));
            let allowed = rt.allow_chat("r1", request).unwrap();
            rt.stream_chat(allowed, &mut |delta| {
                streamed_pieces.push(delta.content.to_owned());
            })
            .unwrap()
        } else {
            rt.chat("r1", request.clone()).unwrap()
        };
        assert!(!outcome.response.content.contains("AKIA"));
        exports.push(serde_json::to_value(rt.recorder().export("r1").unwrap()).unwrap());
    }
    assert_eq!(exports[0], exports[1]);
    assert_eq!(streamed_pieces.concat(), {
        let events = exports[1]["events"].as_array().unwrap();
        let output = events.iter().find(|e| e["kind"] == "model_output").unwrap();
        output["payload"]["response"]["content"]
            .as_str()
            .unwrap()
            .to_owned()
    });
}

/// `coding-agent` version 3: the web is revoked (`web` denies `http.get`).
pub(super) fn coding_agent_revoking_the_web() -> String {
    let coding = fixture_sources()
        .into_iter()
        .find(|(p, _)| p.ends_with("coding-agent.yaml"))
        .unwrap()
        .1;
    let revoked = coding.replace("version: 2", "version: 3").replace(
        "  - id: web\n    effect: allow",
        "  - id: web\n    effect: deny",
    );
    assert!(
        revoked.contains("effect: deny\n    tools: [http.get]"),
        "the fixture changed shape"
    );
    revoked
}

/// A run that calls `http.get` under `coding-agent@2` (allowed), sees the envelope updated to
/// version 3 while it runs and stays on version 2 (allowed), is re-pinned, then calls it
/// again (denied) and compiles.
fn run_spanning_an_envelope_update(rt: &Runtime) {
    open(rt, "r1");
    let before = rt
        .tool_call("r1", call("http.get", json!({"url": "https://docs.rs/a"})))
        .unwrap();
    assert_eq!(before.effect, DecisionEffect::Allow, "{}", before.reason);
    crate::policy::store_envelopes(
        rt.store(),
        &[("coding-agent.yaml".into(), coding_agent_revoking_the_web())],
    )
    .unwrap();
    rt.reload_envelopes().unwrap();
    let pinned = rt
        .tool_call("r1", call("http.get", json!({"url": "https://docs.rs/a"})))
        .unwrap();
    assert_eq!(pinned.effect, DecisionEffect::Allow, "{}", pinned.reason);
    assert_eq!(
        pinned.receipt.envelopes,
        ["coding-agent@2", "org-baseline@1"]
    );
    let repinned = rt.repin("r1", "admin:ops", false).unwrap();
    assert_eq!(repinned.to, ["coding-agent@3", "org-baseline@1"]);
    let after = rt
        .tool_call("r1", call("http.get", json!({"url": "https://docs.rs/b"})))
        .unwrap();
    // Re-pinned, the revocation bites the running run.
    assert_eq!(after.effect, DecisionEffect::Deny, "{}", after.reason);
    assert_eq!(
        after.receipt.envelopes,
        ["coding-agent@3", "org-baseline@1"]
    );
    let mut item = CandidateItem::new("f1", ItemKind::File, "fn main() {}");
    item.scope = "org:acme/repo:api".into();
    rt.compile("r1", CompileInput::new(vec![item]), None)
        .unwrap();
}

#[test]
fn a_run_links_every_envelope_version_its_decisions_used() {
    let dir = Dir::new("runtime");
    let clock = ManualClock::new(START_MS);
    let rt = runtime(&dir, &clock);
    run_spanning_an_envelope_update(&rt);
    let sources: Vec<String> = rt
        .recorder()
        .envelope_sources("r1")
        .unwrap()
        .iter()
        .map(|s| format!("{}@{}", s.id, s.version))
        .collect();
    assert_eq!(
        sources,
        ["coding-agent@2", "coding-agent@3", "org-baseline@1"]
    );
    // The header keeps the versions the run opened with (it is part of the chain's genesis).
    assert_eq!(
        rt.recorder().header("r1").unwrap().envelopes,
        ["coding-agent@2", "org-baseline@1"]
    );
}

#[test]
fn replay_exact_of_a_run_spanning_an_envelope_update_reports_no_drift() {
    let dir = Dir::new("runtime");
    let clock = ManualClock::new(START_MS);
    let rt = runtime(&dir, &clock);
    run_spanning_an_envelope_update(&rt);
    let report = crate::replay::replay_exact(rt.recorder(), "r1").unwrap();
    assert!(!report.drifted(), "{}", report.to_text());
    assert_eq!((report.compiles, report.tool_calls), (1, 3));

    // Exported and imported elsewhere, both versions travel and the run still replays clean.
    let file = rt.recorder().export("r1").unwrap();
    let other = Dir::new("runtime-import");
    let store = crate::store::tests::open_in(other.path());
    let recorder = crate::recorder::Recorder::new(store);
    let mut stored = recorder.import(&file).unwrap().envelope_versions;
    stored.sort();
    assert_eq!(
        stored,
        ["coding-agent@2", "coding-agent@3", "org-baseline@1"]
    );
    assert_eq!(recorder.export("r1").unwrap(), file);
    let report = crate::replay::replay_exact(&recorder, "r1").unwrap();
    assert!(!report.drifted(), "{}", report.to_text());
}

#[test]
fn replay_exact_of_a_run_spanning_an_envelope_update_still_reports_a_genuine_change() {
    let dir = Dir::new("runtime");
    let clock = ManualClock::new(START_MS);
    let rt = runtime(&dir, &clock);
    run_spanning_an_envelope_update(&rt);
    let mut file = rt.recorder().export("r1").unwrap();
    // Version 3 as the run recorded it denied the web; make it allow it again.
    let v3 = file
        .envelope_sources
        .iter_mut()
        .find(|s| s.id == "coding-agent" && s.version == 3)
        .unwrap();
    v3.yaml = v3.yaml.replace(
        "  - id: web\n    effect: deny",
        "  - id: web\n    effect: allow",
    );
    let report = crate::replay::replay_file(&file).unwrap();
    let drifts: Vec<_> = report
        .steps
        .iter()
        .flat_map(|s| &s.checks)
        .filter(|c| !c.matched)
        .collect();
    // Only the call decided under version 3 drifts; those under version 2 still match.
    assert_eq!(drifts.len(), 1, "{}", report.to_text());
    assert!(
        drifts[0]
            .detail
            .contains("deny was recorded, the envelopes now say allow"),
        "{}",
        report.to_text()
    );
    let decisions: Vec<bool> = report
        .steps
        .iter()
        .flat_map(|s| &s.checks)
        .filter(|c| c.check == "decision")
        .map(|c| c.matched)
        .collect();
    assert_eq!(decisions, [true, true, false], "{}", report.to_text());
}

#[test]
fn simulating_a_candidate_on_a_run_spanning_an_envelope_update_replaces_every_version() {
    let dir = Dir::new("runtime");
    let clock = ManualClock::new(START_MS);
    let rt = runtime(&dir, &clock);
    run_spanning_an_envelope_update(&rt);
    let file = rt.recorder().export("r1").unwrap();
    // Version 4 revokes the web too: only the calls decided under version 2 change.
    let v4 = coding_agent_revoking_the_web().replace("version: 3", "version: 4");
    let report = crate::simulate::simulate(&file, &[("coding-agent.yaml".into(), v4)]).unwrap();
    assert_eq!(report.candidates, ["coding-agent@4"]);
    assert_eq!(report.replaces, ["coding-agent@2", "coding-agent@3"]);
    let changed: Vec<_> = report.changed().map(|d| d.subject.as_str()).collect();
    assert_eq!(changed.len(), 2, "{}", report.to_text());
    let tools: Vec<_> = report
        .decisions
        .iter()
        .filter(|d| d.kind == tollgate_rules::decide::RequestKind::Tool)
        .map(|d| (d.recorded, d.simulated))
        .collect();
    assert_eq!(
        tools,
        [
            (DecisionEffect::Allow, DecisionEffect::Deny),
            (DecisionEffect::Allow, DecisionEffect::Deny),
            (DecisionEffect::Deny, DecisionEffect::Deny)
        ]
    );
}

#[test]
fn a_run_file_giving_an_envelope_version_twice_or_mislabelled_is_refused_and_stores_nothing() {
    let dir = Dir::new("runtime");
    let clock = ManualClock::new(START_MS);
    let rt = runtime(&dir, &clock);
    run_spanning_an_envelope_update(&rt);
    let file = rt.recorder().export("r1").unwrap();
    let other = Dir::new("runtime-import");
    let store = crate::store::tests::open_in(other.path());
    let recorder = crate::recorder::Recorder::new(store.clone());

    let mut twice = file.clone();
    let mut again = twice.envelope_sources[1].clone();
    again.yaml = again.yaml.replace("effect: deny", "effect: allow");
    twice.envelope_sources.push(again);
    let err = recorder.import(&twice).unwrap_err().to_string();
    assert!(err.contains("`coding-agent@3` is given twice"), "{err}");

    let mut mislabelled = file.clone();
    mislabelled.envelope_sources[1].version = 4;
    let err = recorder.import(&mislabelled).unwrap_err().to_string();
    assert!(
        err.contains("`coding-agent@4` holds `coding-agent@3`"),
        "{err}"
    );

    assert!(
        crate::policy::list_versions(&store, None)
            .unwrap()
            .is_empty()
    );
    assert!(recorder.header("r1").is_err());
}

#[test]
fn a_changed_mcp_tool_is_held_only_when_an_envelope_says_hold_and_none_says_deny() {
    let held = |extra: &[(&str, &str)]| {
        let dir = Dir::new("runtime");
        let store = crate::store::tests::open_in(dir.path());
        let mut sources = fixture_sources();
        for (id, said) in extra {
            sources.push((
                format!("{id}.yaml"),
                format!("id: {id}\nversion: 1\nattach: {{agents: [coder]}}\nextensions: {{mcp_changed_tools: {said}}}\n"),
            ));
        }
        crate::policy::store_envelopes(&store, &sources).unwrap();
        let rt = Runtime::with_clock(
            store,
            Arc::new(FakeProvider::new()),
            Arc::new(ManualClock::new(START_MS)),
        )
        .unwrap();
        open(&rt, "r1");
        rt.changed_tools_held("r1").unwrap()
    };
    assert!(!held(&[]), "refused unless an envelope says otherwise");
    assert!(held(&[("hold-changed", "hold")]));
    assert!(
        !held(&[("hold-changed", "hold"), ("deny-changed", "deny")]),
        "deny wins (fail closed)"
    );
    assert!(
        !held(&[("odd-changed", "maybe")]),
        "anything but hold refuses"
    );
}

/// Bug found with the PostgreSQL engine (issue 37): an agent, task, scope, user or tool name
/// of a few kilobytes failed the write on PostgreSQL (its btree indexes take entries up to
/// about 2.7 KB) and was stored on SQLite. Both now refuse it at the edge, alike, and store
/// nothing.
#[test]
fn a_name_longer_than_the_longest_indexed_name_is_refused_on_either_engine() {
    let dir = Dir::new("runtime-long-names");
    let clock = ManualClock::new(START_MS);
    let rt = runtime(&dir, &clock);
    let long = "a".repeat(LONGEST_NAME + 1);
    let base = || OpenRun {
        id: Some("r-long".into()),
        agent: "coder".into(),
        task: "T-12".into(),
        scope: "org:acme/repo:api/task:T-12".into(),
        clearance: None,
        envelopes: vec![],
        parent_run: None,
        handoff: None,
        metadata: Default::default(),
    };
    let mut with_user = base();
    with_user
        .metadata
        .insert("user".into(), json!(long.clone()));
    for (what, req) in [
        (
            "agent",
            OpenRun {
                agent: long.clone(),
                ..base()
            },
        ),
        (
            "task",
            OpenRun {
                task: long.clone(),
                ..base()
            },
        ),
        (
            "scope",
            OpenRun {
                scope: format!("org:{long}"),
                ..base()
            },
        ),
        ("metadata.user", with_user),
    ] {
        match rt.open_run(req) {
            Err(RuntimeError::Invalid(m)) => {
                assert!(m.contains(&format!("`{what}` is")), "{m}");
                assert!(m.contains("at most 1024"), "{m}");
            }
            other => panic!("{what}: {other:?}"),
        }
    }
    assert!(rt.recorder().list().unwrap().is_empty(), "nothing stored");
    // At the longest, a name is stored.
    rt.open_run(OpenRun {
        agent: "a".repeat(LONGEST_NAME),
        ..base()
    })
    .unwrap();
    match rt.tool_call("r-long", call(&long, json!({}))) {
        Err(RuntimeError::Invalid(m)) => assert!(m.contains("`tool` is"), "{m}"),
        other => panic!("{other:?}"),
    }
    assert!(
        rt.tool_call("r-long", call(&"t".repeat(LONGEST_NAME), json!({})))
            .is_ok()
    );
}
