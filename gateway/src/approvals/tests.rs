use serde_json::json;

use super::*;
use crate::recorder::Recorder;
use crate::recorder::format::{EventKind, RunHeader};
use crate::store::tests::tempdir::Dir;

fn store_with_run() -> (Dir, Store) {
    let dir = Dir::new("approvals");
    let store = crate::store::tests::open_in(dir.path());
    let recorder = Recorder::new(store.clone());
    recorder
        .open_run(&RunHeader {
            id: "r1".into(),
            agent: "coder".into(),
            task: "T-1".into(),
            scope: "org:acme".into(),
            clearance: "internal".into(),
            status: "running".into(),
            started_at: "2026-11-24T00:00:00Z".into(),
            finished_at: None,
            parent_run: None,
            envelopes: vec![],
            metadata: json!({}),
        })
        .unwrap();
    recorder.add_step("r1", "main", "coder").unwrap();
    (dir, store)
}

fn request(approvers: &[&str]) -> ApprovalRequest {
    ApprovalRequest {
        run: "r1".into(),
        call_id: "c1".into(),
        tool: "shell.exec".into(),
        arguments: json!({"cmd": "make"}),
        envelopes: vec!["e@1".into()],
        rules: vec!["e/gate".into()],
        approvers: approvers.iter().map(|s| s.to_string()).collect(),
        ttl_seconds: 60,
    }
}

fn pending(store: &Store, req: ApprovalRequest, now: i64) -> Approval {
    store.write(move |c| insert_pending(c, &req, now)).unwrap()
}

fn answer(approve: bool, by: &str) -> ApprovalAnswer {
    ApprovalAnswer {
        approve,
        by: by.into(),
        reason: "looked at it".into(),
        principal: None,
    }
}

#[test]
fn an_approval_is_decided_once_and_recorded_in_the_run() {
    let (_d, store) = store_with_run();
    let a = pending(&store, request(&[]), 1_000);
    assert_eq!(a.state, ApprovalState::Pending);
    assert_eq!(a.id, request(&[]).id());
    assert_eq!(a.expires_at, 61_000);
    let decided = decide(&store, &a.id, &answer(true, "lead"), 2_000, "t").unwrap();
    assert_eq!(decided.state, ApprovalState::Approved);
    assert_eq!(decided.decided_by.as_deref(), Some("lead"));
    let again = decide(&store, &a.id, &answer(false, "lead"), 3_000, "t").unwrap_err();
    assert!(
        matches!(
            again,
            ApprovalError::Final {
                state: ApprovalState::Approved,
                ..
            }
        ),
        "{again}"
    );
    let events = Recorder::new(store.clone())
        .events("r1", Some(&[EventKind::Approval]))
        .unwrap();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].payload["decision"], "approved");
    assert_eq!(events[0].payload["approval_id"], a.id.as_str());
}

#[test]
fn only_a_named_approver_may_decide() {
    let (_d, store) = store_with_run();
    let a = pending(&store, request(&["team-lead"]), 0);
    let err = decide(&store, &a.id, &answer(true, "intern"), 1, "t").unwrap_err();
    assert!(matches!(err, ApprovalError::NotAnApprover { .. }), "{err}");
    assert_eq!(get(&store, &a.id, 1).unwrap().state, ApprovalState::Pending);
    let empty = decide(&store, &a.id, &answer(true, " "), 1, "t").unwrap_err();
    assert!(matches!(empty, ApprovalError::Invalid(_)));
    decide(&store, &a.id, &answer(true, "team-lead"), 1, "t").unwrap();
}

#[test]
fn an_approval_expires_and_then_cannot_be_decided() {
    let (_d, store) = store_with_run();
    let a = pending(&store, request(&[]), 0);
    assert_eq!(
        get(&store, &a.id, 59_999).unwrap().state,
        ApprovalState::Pending
    );
    assert_eq!(
        get(&store, &a.id, 60_000).unwrap().state,
        ApprovalState::Expired
    );
    let err = decide(&store, &a.id, &answer(true, "lead"), 60_000, "t").unwrap_err();
    assert!(matches!(
        err,
        ApprovalError::Final {
            state: ApprovalState::Expired,
            ..
        }
    ));
}

#[test]
fn an_approval_authorises_only_its_exact_call_once() {
    let (_d, store) = store_with_run();
    let a = pending(&store, request(&[]), 0);
    let envs = vec!["e@1".to_string()];
    let hash = call_hash("r1", "shell.exec", &json!({"cmd": "make"}));
    let other = call_hash("r1", "shell.exec", &json!({"cmd": "make install"}));
    assert!(matches!(
        check_use(&get(&store, &a.id, 1).unwrap(), "r1", &hash, &envs),
        Err(ApprovalError::Pending(_))
    ));
    decide(&store, &a.id, &answer(true, "lead"), 1, "t").unwrap();
    let approved = get(&store, &a.id, 2).unwrap();
    assert!(matches!(
        check_use(&approved, "r1", &other, &envs),
        Err(ApprovalError::Mismatch { .. })
    ));
    assert!(matches!(
        check_use(&approved, "r1", &hash, &["e@2".to_string()]),
        Err(ApprovalError::Mismatch { .. })
    ));
    let (id, h, e) = (a.id.clone(), hash.clone(), envs.clone());
    let used = store
        .write(move |c| {
            use_in(c, &id, "r1", &h, &e, 3).map_err(|e| StoreError::Invalid(e.to_string()))
        })
        .unwrap();
    assert_eq!(used.state, ApprovalState::Used);
    let (id, h, e) = (a.id.clone(), hash, envs);
    let twice = store.write(move |c| {
        use_in(c, &id, "r1", &h, &e, 4).map_err(|e| StoreError::Invalid(e.to_string()))
    });
    assert!(twice.unwrap_err().to_string().contains("used"));
}

#[test]
fn the_call_hash_ignores_key_order_but_not_values() {
    let a = call_hash("r", "t", &json!({"a": 1, "b": [1, 2]}));
    let b = call_hash("r", "t", &json!({"b": [1, 2], "a": 1}));
    assert_eq!(a, b);
    assert_ne!(a, call_hash("r", "t", &json!({"a": 1, "b": [2, 1]})));
    assert_ne!(a, call_hash("r2", "t", &json!({"a": 1, "b": [1, 2]})));
}

#[test]
fn pages_of_approvals_walk_every_state_newest_first_as_the_full_list_reads_them() {
    let (_d, store) = store_with_run();
    // Seven calls at different times: some decided, some used, some left to expire.
    for i in 0..7i64 {
        let mut req = request(&[]);
        req.call_id = format!("c{i}");
        let a = pending(&store, req, i * 10_000);
        match i % 4 {
            1 => {
                decide(&store, &a.id, &answer(true, "lead"), i * 10_000 + 1, "t").unwrap();
            }
            2 => {
                decide(&store, &a.id, &answer(false, "lead"), i * 10_000 + 1, "t").unwrap();
            }
            _ => {}
        }
    }
    // At 100 s the earliest pending and approved ones (60 s lifetimes) have expired.
    let now = 100_000;
    let states = [
        None,
        Some(ApprovalState::Pending),
        Some(ApprovalState::Approved),
        Some(ApprovalState::Rejected),
        Some(ApprovalState::Used),
        Some(ApprovalState::Expired),
    ];
    for state in states {
        let mut expected = list(
            &store,
            &ApprovalFilter {
                run: None,
                state,
                agent: None,
            },
            now,
        )
        .unwrap();
        expected.reverse();
        let mut walked = Vec::new();
        let mut after = None;
        loop {
            let p = page(&store, state, after.as_ref(), now, 2).unwrap();
            assert!(p.approvals.len() <= 2);
            walked.extend(p.approvals);
            match p.next {
                Some(next) => after = Some(next),
                None => break,
            }
        }
        let ids = |v: &[Approval]| v.iter().map(|a| a.id.clone()).collect::<Vec<_>>();
        assert_eq!(ids(&walked), ids(&expected), "{state:?}");
        assert!(walked.iter().all(|a| state.is_none_or(|s| a.state == s)));
    }
    let expired = page(&store, Some(ApprovalState::Expired), None, now, 50).unwrap();
    assert!(!expired.approvals.is_empty(), "some expired by now");
}

/// Two calls using one approval at once (on two gateways) both read it approved; the UPDATE
/// that marks it used lets only the first through.
#[test]
fn an_approval_used_meanwhile_is_refused_by_its_update_not_only_by_the_read_before() {
    let (_d, store) = store_with_run();
    let a = pending(&store, request(&[]), 1_000);
    let approved = decide(&store, &a.id, &answer(true, "lead"), 2_000, "t").unwrap();
    assert_eq!(approved.state, ApprovalState::Approved);
    let first = approved.clone();
    store
        .transact(move |c| mark_used(c, &first, 3_000))
        .unwrap();
    // The second call's read happened before the first call's write.
    let stale = approved.clone();
    let err = store
        .transact(move |c| mark_used(c, &stale, 3_001))
        .unwrap_err();
    assert!(
        matches!(
            err,
            ApprovalError::Final {
                state: ApprovalState::Used,
                ..
            }
        ),
        "{err}"
    );
    // Past its expiry an approved approval is not used either.
    let mut second = request(&["lead"]);
    second.call_id = "c2".into();
    let b = pending(&store, second, 1_000);
    let approved = decide(&store, &b.id, &answer(true, "lead"), 2_000, "t").unwrap();
    let err = store
        .transact(move |c| mark_used(c, &approved, 61_000))
        .unwrap_err();
    assert!(matches!(err, ApprovalError::Final { .. }), "{err}");
}
