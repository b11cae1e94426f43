//! No escalation through a handoff: on generated worlds (see `generated_world`), whenever the
//! handoff pack lets a run hand work to another (no `envelope_escalation`, no
//! `clearance_escalation`), every tool call, context item and model call is decided for the
//! consumer at least as strictly as for the producer — the consumer's envelopes never exceed
//! the producer's.
//!
//! `PROPTEST_CASES` sets the number of worlds (256 when unset; CI sets 1000).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod generated_world;

use proptest::prelude::*;
use tollgate_engine::{Fact, Limits, Value};

use generated_world::{RUNS, config, fact_set, program, world};

/// How strict an effect is, per kind of request (higher is stricter).
fn strictness(relation: &str, effect: &str) -> usize {
    match (relation, effect) {
        ("tool_decision", "allow") | ("context_decision", "see") | ("model_decision", "allow") => 0,
        ("tool_decision", "require_approval") | ("context_decision", "redact") => 1,
        ("tool_decision", "rate_limited") => 2,
        ("context_decision", "block") | ("model_decision", "deny") => 3,
        ("tool_decision", "deny") => 3,
        other => panic!("unexpected effect {other:?}"),
    }
}

const DECIDING: [(&str, &str); 3] = [
    ("tool_request", "tool_decision"),
    ("context_request", "context_decision"),
    ("model_request", "model_decision"),
];

/// `facts` of one request, renamed to id `id` and run `run`.
fn retarget(facts: &[Fact], old: &str, id: &str, run: &str) -> Vec<Fact> {
    facts
        .iter()
        .map(|f| {
            let mut values = f.values.clone();
            if values.first() == Some(&Value::sym(old)) {
                values[0] = Value::sym(id);
                if DECIDING.iter().any(|(r, _)| *r == f.relation) {
                    values[1] = Value::sym(run);
                }
            }
            Fact::new(f.relation.clone(), values)
        })
        .collect()
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn a_consumer_the_pack_lets_a_handoff_reach_never_may_do_more_than_its_producer(w in world()) {
        let limits = Limits::default();
        let model = program()
            .materialise(&fact_set(&w.static_facts(), "static"), &limits)
            .unwrap();
        let runs: Vec<&str> = (0..w.runs.len()).map(|i| RUNS[i]).collect();
        let requests = w.requests();
        for &p in &runs {
            for &c in runs.iter().filter(|c| **c != p) {
                let handoff = vec![
                    Fact::new("handoff", vec![Value::sym("h"), Value::sym(p), Value::sym(c), Value::sym("k")]),
                    Fact::new("handoff_goal", vec![Value::sym("h"), Value::sym("go")]),
                ];
                let answer = model.query(&fact_set(&handoff, "request"), &limits).unwrap();
                let escalates = answer
                    .relation("handoff_violation")
                    .unwrap()
                    .iter()
                    .any(|row| row[1].to_string().ends_with("_escalation"));
                if escalates {
                    continue;
                }
                for q in &requests {
                    let Some((_, decision)) = DECIDING
                        .iter()
                        .find(|(r, _)| q.facts.iter().any(|f| f.relation == *r))
                    else {
                        continue;
                    };
                    let effect = |run: &str| {
                        let id = format!("{}-{run}", q.id);
                        let facts = retarget(&q.facts, &q.id, &id, run);
                        let a = model.query(&fact_set(&facts, "request"), &limits).unwrap();
                        let effects: Vec<String> = a
                            .relation(decision)
                            .unwrap()
                            .iter()
                            .filter(|row| row[0] == Value::sym(&id))
                            .map(|row| row[1].to_string())
                            .collect();
                        effects.first().cloned().unwrap_or_default()
                    };
                    let (as_producer, as_consumer) = (effect(p), effect(c));
                    prop_assert!(
                        strictness(decision, &as_consumer) >= strictness(decision, &as_producer),
                        "{} by consumer {} is `{}` but by producer {} `{}`",
                        q.id, c, as_consumer, p, as_producer
                    );
                }
            }
        }
    }
}
