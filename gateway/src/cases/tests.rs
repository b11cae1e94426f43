use proptest::prelude::*;
use serde_json::{Map, Value, json};

use super::project::{self, CaseProjection};
use super::store::append;
use super::*;
use crate::store::Store;
use crate::store::tests::tempdir::Dir;

fn store(tag: &str) -> (Dir, Store) {
    let dir = Dir::new(tag);
    let store = crate::store::tests::open_in(dir.path());
    (dir, store)
}

fn opened(case: &str) -> NewEvent {
    NewEvent::new(
        EventBody::CaseOpened(Opened {
            pack_id: "p".into(),
            engine_id: "p".into(),
            engine_version: "1.0.0".into(),
            pack_root: "/packs/p".into(),
            pack_hash: "h".into(),
            title: format!("case {case}"),
            input: Map::new(),
            run_id: case.into(),
        }),
        "test",
    )
}

fn evidence(key: &str, value: Value) -> NewEvent {
    NewEvent::new(
        EventBody::EvidenceRecorded(Evidence {
            worker: "w".into(),
            evidence: Map::from_iter([(key.to_string(), value)]),
            source: "api".into(),
        }),
        "test",
    )
}

const AT: &str = "2026-11-26T10:00:00Z";

#[test]
fn an_append_at_a_stale_version_is_a_conflict_and_writes_nothing() {
    let (_d, s) = store("cases-stale");
    append(&s, "c1", 0, vec![opened("c1")], AT).unwrap();
    append(&s, "c1", 1, vec![evidence("a", json!(1))], AT).unwrap();
    let e = append(&s, "c1", 1, vec![evidence("b", json!(2))], AT).unwrap_err();
    assert!(
        matches!(
            e,
            CaseError::VersionConflict {
                expected: 1,
                actual: 2,
                ..
            }
        ),
        "{e:?}"
    );
    let events = s.read(|c| log::all_events_in(c, "c1")).unwrap();
    assert_eq!(events.len(), 2);
}

#[test]
fn an_event_id_appended_twice_is_stored_once() {
    let (_d, s) = store("cases-idempotent");
    append(&s, "c1", 0, vec![opened("c1")], AT).unwrap();
    let mut e = evidence("a", json!(1));
    e.event_id = Some("ev-1".into());
    let first = append(&s, "c1", 1, vec![e.clone()], AT).unwrap();
    // Retried at the version it first expected, and at a later one: both are the repeat.
    let again = append(&s, "c1", 1, vec![e.clone()], AT).unwrap();
    assert!(again.duplicate && !first.duplicate);
    assert_eq!(again.versions, first.versions);
    let later = append(&s, "c1", 2, vec![e.clone()], AT).unwrap();
    assert!(later.duplicate);
    assert_eq!(s.read(|c| log::version_in(c, "c1")).unwrap(), 2);
    let mut other = evidence("a", json!(2));
    other.event_id = Some("ev-1".into());
    let reused = append(&s, "c1", 2, vec![other], AT).unwrap_err();
    assert!(
        matches!(
            reused,
            CaseError::Conflict {
                code: crate::codes::http::EVENT_ID_REUSED,
                ..
            }
        ),
        "{reused:?}"
    );
}

#[test]
fn a_case_starts_with_case_opened_once() {
    let (_d, s) = store("cases-open");
    let e = append(&s, "c1", 0, vec![evidence("a", json!(1))], AT).unwrap_err();
    assert!(matches!(e, CaseError::Invalid(_)), "{e:?}");
    append(&s, "c1", 0, vec![opened("c1")], AT).unwrap();
    let e = append(&s, "c1", 1, vec![opened("c1")], AT).unwrap_err();
    assert!(matches!(e, CaseError::Invalid(_)), "{e:?}");
}

#[test]
fn a_tampered_event_breaks_the_chain_and_replay_health_says_so() {
    let (_d, s) = store("cases-tamper");
    append(&s, "c1", 0, vec![opened("c1")], AT).unwrap();
    append(&s, "c1", 1, vec![evidence("a", json!(1))], AT).unwrap();
    s.write(|c| {
        c.execute(
            "UPDATE case_events SET payload = ?1 WHERE case_id = 'c1' AND version = 2",
            [r#"{"evidence":{"a":2},"source":"api","worker":"w"}"#],
        )?;
        Ok(())
    })
    .unwrap();
    let h = s.read(|c| project::health_in(c, "c1")).unwrap();
    assert_eq!(h.status, "drift");
    assert!(h.chain.starts_with("broken: event 2"), "{}", h.chain);
}

/// One step of a generated case history.
#[derive(Debug, Clone)]
enum Step {
    Evidence(u8, i64),
    Propose,
    Preview(u8, u8),
    Decide(u8, bool),
    Answer(u8, bool),
    Commit(u8, u8),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        (0u8..4, -5i64..5).prop_map(|(k, v)| Step::Evidence(k, v)),
        Just(Step::Propose),
        (0u8..3, 0u8..3).prop_map(|(p, n)| Step::Preview(p, n)),
        (0u8..3, any::<bool>()).prop_map(|(p, a)| Step::Decide(p, a)),
        (0u8..3, any::<bool>()).prop_map(|(p, a)| Step::Answer(p, a)),
        (0u8..3, 0u8..4).prop_map(|(p, o)| Step::Commit(p, o)),
    ]
}

fn body_of(step: &Step, proposals: &mut u8) -> EventBody {
    let pid = |p: &u8| format!("prop-{}", p % (*proposals).max(1) + 1);
    match step {
        Step::Evidence(k, v) => EventBody::EvidenceRecorded(Evidence {
            worker: format!("w{}", k % 2),
            evidence: Map::from_iter([(format!("k{k}"), json!(v))]),
            source: "adapter".into(),
        }),
        Step::Propose => {
            *proposals += 1;
            EventBody::ProposalMade(Proposal {
                proposal_id: format!("prop-{proposals}"),
                capability: "cap".into(),
                action: "act".into(),
                input: Map::from_iter([("n".to_string(), json!(proposals))]),
                wording: "do it".into(),
            })
        }
        Step::Preview(p, n) => EventBody::PreviewRecorded(Preview {
            proposal_id: pid(p),
            preview_hash: format!("h{n}"),
            changes: vec![crate::packs::adapter::Change {
                target: "t".into(),
                field: "f".into(),
                before: String::new(),
                after: n.to_string(),
            }],
            summary: format!("f → {n}"),
        }),
        Step::Decide(p, allow) => EventBody::PolicyDecided(Box::new(PolicyDecided {
            proposal_id: pid(p),
            preview_hash: "h0".into(),
            effect: if *allow { "allow" } else { "deny" }.into(),
            rules: vec!["r".into()],
            pack: crate::packs::policy::PackDecision {
                effect: if *allow { "allow" } else { "deny" }.into(),
                rules: vec!["r".into()],
                reasons: Vec::new(),
                proof: None,
                why_not: None,
                input_hash: "i".into(),
            },
            envelopes: None,
        })),
        Step::Answer(p, approved) => EventBody::ApprovalDecided(ApprovalDecided {
            proposal_id: pid(p),
            approval_id: "apr".into(),
            approved: *approved,
            by: "alice".into(),
            reason: String::new(),
        }),
        Step::Commit(p, outcome) => match outcome {
            0 => EventBody::CommitStarted(CommitStarted {
                proposal_id: pid(p),
                preview_hash: "h0".into(),
                approval_id: "apr".into(),
                mode: crate::packs::adapter::Mode::DryRun,
                authorization: None,
            }),
            1 => EventBody::CommitApplied(CommitApplied {
                proposal_id: pid(p),
                receipt: json!({"ok": true}),
                verification: json!({"verified": true}),
            }),
            2 => EventBody::CommitFailed(CommitFailed {
                proposal_id: pid(p),
                error: "boom".into(),
                compensated: true,
                compensation: json!({}),
            }),
            _ => EventBody::CommitRefused(CommitRefused {
                proposal_id: pid(p),
                code: "approval_required".into(),
                message: "no".into(),
                mode: crate::packs::adapter::Mode::DryRun,
            }),
        },
    }
}

proptest! {
    /// Whatever the history and however it was split into appends, the projection the appends
    /// kept is the one a fresh replay of the events gives, and rebuilding it changes nothing.
    #[test]
    fn appends_in_any_batches_keep_the_projection_a_fresh_replay_gives(
        steps in prop::collection::vec(step(), 1..30),
        cuts in prop::collection::vec(1usize..5, 1..30),
    ) {
        let (_d, s) = store("cases-prop");
        append(&s, "c1", 0, vec![opened("c1")], AT).unwrap();
        let mut proposals = 0u8;
        let bodies: Vec<EventBody> = steps.iter().map(|st| body_of(st, &mut proposals)).collect();
        let mut version = 1;
        let mut rest = bodies.as_slice();
        let mut cuts = cuts.iter().cycle();
        while !rest.is_empty() {
            let n = (*cuts.next().unwrap()).min(rest.len());
            let batch: Vec<NewEvent> = rest[..n].iter().map(|b| NewEvent::new(b.clone(), "test")).collect();
            version = append(&s, "c1", version, batch, AT).unwrap().version;
            rest = &rest[n..];
        }
        let health = s.read(|c| project::health_in(c, "c1")).unwrap();
        prop_assert_eq!(&health.status, "healthy", "{:?}", health.drift);
        let before = s.read(|c| project::load_in(c, "c1", true)).unwrap();
        s.write(|c| project::rebuild_case_in(c, "c1").map(|_| ())).unwrap();
        let after = s.read(|c| project::load_in(c, "c1", true)).unwrap();
        prop_assert_eq!(&before, &after);
        let events = s.read(|c| log::all_events_in(c, "c1")).unwrap();
        prop_assert_eq!(CaseProjection::fold(&events), after);
    }
}
