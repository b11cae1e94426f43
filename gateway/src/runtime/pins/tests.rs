//! Runs stay on the envelope versions they opened with until an admin re-pins them.

use std::sync::Arc;

use serde_json::json;
use tollgate_rules::decide::DecisionEffect;

use super::super::tests::{
    START_MS, call, coding_agent_revoking_the_web, fixture_sources, open, runtime,
};
use super::*;
use crate::clock::ManualClock;
use crate::providers::FakeProvider;
use crate::store::tests::tempdir::Dir;

fn store_version(rt: &Runtime, name: &str, text: String) {
    crate::policy::store_envelopes(rt.store(), &[(format!("{name}.yaml"), text)]).unwrap();
    rt.reload_envelopes().unwrap();
}

fn coding_agent() -> String {
    fixture_sources()
        .into_iter()
        .find(|(p, _)| p.ends_with("coding-agent.yaml"))
        .unwrap()
        .1
}

fn http_get(rt: &Runtime, run: &str) -> crate::runtime::ToolCallAnswer {
    rt.tool_call(run, call("http.get", json!({"url": "https://docs.rs/a"})))
        .unwrap()
}

#[test]
fn a_run_stays_on_the_versions_it_opened_with_until_an_admin_repins_it() {
    let dir = Dir::new("pins");
    let rt = runtime(&dir, &ManualClock::new(START_MS));
    open(&rt, "old");
    store_version(&rt, "coding-agent", coding_agent_revoking_the_web());

    // The running run keeps version 2 (it allows the web); a run opened now gets version 3.
    let kept = http_get(&rt, "old");
    assert_eq!(kept.effect, DecisionEffect::Allow, "{}", kept.reason);
    assert_eq!(kept.receipt.envelopes, ["coding-agent@2", "org-baseline@1"]);
    open(&rt, "new");
    let fresh = http_get(&rt, "new");
    assert_eq!(fresh.effect, DecisionEffect::Deny, "{}", fresh.reason);
    assert_eq!(
        fresh.receipt.envelopes,
        ["coding-agent@3", "org-baseline@1"]
    );

    // A dry run says what would move and moves nothing.
    let plan = rt.repin("old", "admin:ops", true).unwrap();
    assert!(plan.changed && plan.seq.is_none(), "{plan:?}");
    assert_eq!(plan.from, ["coding-agent@2", "org-baseline@1"]);
    assert_eq!(plan.to, ["coding-agent@3", "org-baseline@1"]);
    assert_eq!(http_get(&rt, "old").effect, DecisionEffect::Allow);
    assert!(pins::history(rt.store(), "old").unwrap().is_empty());

    let done = rt.repin("old", "admin:ops", false).unwrap();
    assert_eq!(done.seq, Some(1));
    let after = http_get(&rt, "old");
    assert_eq!(after.effect, DecisionEffect::Deny, "{}", after.reason);
    assert_eq!(
        after.receipt.envelopes,
        ["coding-agent@3", "org-baseline@1"]
    );
    let history = pins::history(rt.store(), "old").unwrap();
    assert_eq!(history.len(), 1);
    assert_eq!(history[0].pinned_by, "admin:ops");
    assert_eq!(history[0].envelopes, done.to);
    // The run's view names the versions it is on now; its header, those it opened with.
    assert_eq!(rt.run_view("old").unwrap().governing, done.to);
    assert_eq!(rt.recorder().header("old").unwrap().envelopes, done.from);

    // Re-pinning again changes nothing and records nothing.
    let again = rt.repin("old", "admin:ops", false).unwrap();
    assert!(!again.changed && again.seq.is_none(), "{again:?}");
    assert_eq!(pins::history(rt.store(), "old").unwrap().len(), 1);
}

#[test]
fn a_run_stays_pinned_when_the_gateway_restarts() {
    let dir = Dir::new("pins");
    let clock = ManualClock::new(START_MS);
    let rt = runtime(&dir, &clock);
    open(&rt, "r");
    open(&rt, "moved");
    store_version(&rt, "coding-agent", coding_agent_revoking_the_web());
    rt.repin("moved", "admin:ops", false).unwrap();
    drop(rt);

    // A new process builds each run's engine from the store: no cache to lean on.
    let rt = Runtime::with_clock(
        crate::store::tests::open_in(dir.path()),
        Arc::new(FakeProvider::new()),
        Arc::new(clock.clone()),
    )
    .unwrap();
    assert!(!rt.engine_cached("r"));
    let kept = http_get(&rt, "r");
    assert_eq!(kept.effect, DecisionEffect::Allow, "{}", kept.reason);
    assert_eq!(kept.receipt.envelopes, ["coding-agent@2", "org-baseline@1"]);
    let moved = http_get(&rt, "moved");
    assert_eq!(moved.effect, DecisionEffect::Deny, "{}", moved.reason);
    assert_eq!(
        moved.receipt.envelopes,
        ["coding-agent@3", "org-baseline@1"]
    );
}

#[test]
fn rate_limits_and_approval_terms_come_from_the_pinned_versions() {
    let dir = Dir::new("pins");
    let rt = runtime(&dir, &ManualClock::new(START_MS));
    open(&rt, "r");
    // Version 3 allows one `http.get` an hour and lets anyone approve shell calls.
    let tight = coding_agent()
        .replace("version: 2", "version: 3")
        .replace("limit: {count: 30,", "limit: {count: 1,")
        .replace("approvers: [team-lead]", "approvers: [anyone-at-all]");
    store_version(&rt, "coding-agent", tight);
    for _ in 0..3 {
        let kept = http_get(&rt, "r");
        assert_eq!(kept.effect, DecisionEffect::Allow, "{}", kept.reason);
    }
    let gated = rt
        .tool_call("r", call("shell.exec", json!({"cmd": "ls"})))
        .unwrap();
    assert_eq!(gated.effect, DecisionEffect::RequireApproval);
    let approval = gated.approval.unwrap();
    assert_eq!(approval.approvers, ["team-lead"]);

    rt.repin("r", "admin:ops", false).unwrap();
    let limited = http_get(&rt, "r");
    assert_eq!(
        limited.effect,
        DecisionEffect::RateLimited,
        "{}",
        limited.reason
    );
}

#[test]
fn a_new_envelope_for_the_agent_reaches_its_running_runs_only_when_they_are_repinned() {
    let dir = Dir::new("pins");
    let rt = runtime(&dir, &ManualClock::new(START_MS));
    open(&rt, "a");
    open(&rt, "b");
    rt.finish_run("b", "succeeded").unwrap();
    let lockdown = "id: lockdown\nversion: 1\nattach:\n  agents: [coder]\ntools:\n  - id: no-web\n    effect: deny\n    tools: [http.get]\n";
    store_version(&rt, "lockdown", lockdown.to_string());
    assert_eq!(http_get(&rt, "a").effect, DecisionEffect::Allow);

    // Every running run the new envelope governs under the set in force is found (the
    // finished one is not), though none is pinned to it yet.
    let plan = rt.repin_governed_by("lockdown", "admin:ops", true).unwrap();
    assert_eq!(plan.len(), 1, "{plan:?}");
    assert_eq!(plan[0].run, "a");
    assert!(plan[0].to.contains(&"lockdown@1".to_string()), "{plan:?}");
    rt.repin_governed_by("lockdown", "admin:ops", false)
        .unwrap();
    let denied = http_get(&rt, "a");
    assert_eq!(denied.effect, DecisionEffect::Deny, "{}", denied.reason);
    assert!(denied.receipt.envelopes.contains(&"lockdown@1".to_string()));

    let err = rt
        .repin_governed_by("nothing", "admin:ops", false)
        .unwrap_err();
    assert!(matches!(err, RuntimeError::NotFound(_)), "{err}");
}

#[test]
fn a_finished_or_unknown_run_is_not_repinned() {
    let dir = Dir::new("pins");
    let rt = runtime(&dir, &ManualClock::new(START_MS));
    open(&rt, "done");
    rt.finish_run("done", "failed").unwrap();
    store_version(&rt, "coding-agent", coding_agent_revoking_the_web());
    let err = rt.repin("done", "admin:ops", false).unwrap_err();
    assert!(matches!(err, RuntimeError::Conflict(_)), "{err}");
    let err = rt.repin("nope", "admin:ops", false).unwrap_err();
    assert!(matches!(err, RuntimeError::NotFound(_)), "{err}");
    assert!(pins::history(rt.store(), "done").unwrap().is_empty());
}

/// Two gateways on one store (issue 38): a decision made on one under the run's old pins,
/// then a re-pin committed through the other before the decision's write, is not recorded —
/// its write reads the store's count of policy changes under the write lock — and the call
/// made again is decided under the new pins, with no read of the count before deciding.
#[test]
fn a_decision_whose_policy_changed_before_its_write_is_not_recorded_and_decided_again() {
    let dir = Dir::new("pins");
    let a = runtime(&dir, &ManualClock::new(START_MS));
    let b = Runtime::with_clock(
        crate::store::tests::open_in(dir.path()),
        Arc::new(FakeProvider::new()),
        Arc::new(ManualClock::new(START_MS)),
    )
    .unwrap();
    open(&a, "old");
    assert_eq!(http_get(&a, "old").effect, DecisionEffect::Allow);
    let recorded = || a.recorder().export("old").unwrap().events.len();
    let before = recorded();

    let decided = a
        .decide_tool_call("old", call("http.get", json!({"url": "https://docs.rs/a"})))
        .unwrap();
    assert_eq!(decided.effect(), DecisionEffect::Allow);
    store_version(&b, "coding-agent", coding_agent_revoking_the_web());
    assert!(b.repin("old", "admin:ops", false).unwrap().changed);
    let refused = a.record_tool_call(decided).unwrap_err().to_string();
    assert!(refused.contains("policy changed"), "{refused}");
    let after_repin = recorded();

    let again = http_get(&a, "old");
    assert_eq!(again.effect, DecisionEffect::Deny, "{}", again.reason);
    assert_eq!(
        again.receipt.envelopes,
        ["coding-agent@3", "org-baseline@1"]
    );
    // The refused decision added nothing to the run; the call made again did.
    assert_eq!(
        after_repin, before,
        "nothing of the refused decision is stored"
    );
    assert_eq!(recorded(), before + 2);
    assert!(a.recorder().verify("old").unwrap().is_intact());
}
