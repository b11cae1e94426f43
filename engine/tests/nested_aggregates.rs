#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Aggregates inside aggregates, as Soufflé allows: the inner one is evaluated for each binding
//! of the outer one's body, seeing the outer one's variables and the rule's. Each evaluator and
//! the naive oracle agree, proofs check, and a nested aggregate equals the same computation
//! written with a helper relation.

mod common;

use common::agreeing_rows as rows;
use proptest::prelude::*;
use tollgate_engine::{FactSet, Program, Source, Value};

const DECLS: &str = ".decl b(x: number)\n.decl e(x: number, y: number)\n";

fn facts(b: &[i32], e: &[(i32, i32)]) -> FactSet {
    let mut facts = FactSet::new();
    for x in b {
        facts.add("b", vec![Value::Number(*x)], "test");
    }
    for (x, y) in e {
        facts.add("e", vec![Value::Number(*x), Value::Number(*y)], "test");
    }
    facts
}

fn compile(rules: &str) -> Program {
    Program::compile(&Source::new("n.dl", format!("{DECLS}{rules}"))).unwrap()
}

#[test]
fn an_inner_aggregate_sees_the_outer_bindings() {
    let program = compile(
        ".decl below_max(n: number)\n\
         below_max(n) :- n = max x : { b(x), x < max y : { b(y) } }.\n\
         .decl out_degrees(n: number)\n\
         out_degrees(n) :- n = sum c : { b(x), c = count : { e(x, _) } }.\n\
         .decl reach_on(x: number, n: number)\n\
         reach_on(x, n) :- b(x), n = count : { e(x, y), b(y), count : { e(y, _) } > 0 }.\n",
    );
    let f = facts(&[1, 2, 5], &[(1, 2), (1, 3), (2, 3), (5, 1)]);
    assert_eq!(
        rows(&program, &f, "below_max"),
        vec![vec![Value::Number(2)]]
    );
    assert_eq!(
        rows(&program, &f, "out_degrees"),
        vec![vec![Value::Number(4)]]
    );
    assert_eq!(
        rows(&program, &f, "reach_on"),
        vec![
            vec![Value::Number(1), Value::Number(1)],
            vec![Value::Number(2), Value::Number(0)],
            vec![Value::Number(5), Value::Number(1)],
        ]
    );
}

#[test]
fn an_unbound_variable_of_an_inner_aggregate_is_refused() {
    let text = format!(
        "{DECLS}.decl a(n: number)\na(n) :- n = count : {{ b(x), y = count : {{ b(z), z > w }} }}.\n"
    );
    let errors = Program::compile(&Source::new("n.dl", text)).unwrap_err();
    assert_eq!(errors[0].code, "E-unbound");
    assert_eq!(
        errors[0].message,
        "variable `w` is not bound by a positive atom"
    );
}

proptest! {
    /// `sum c : { b(x), c = count : { e(x, _) } }` is the sum over `b` of each one's out-degree,
    /// as a helper relation of the degrees gives it.
    #[test]
    fn nested_equals_a_helper_relation(
        b in proptest::collection::btree_set(0i32..8, 0..6),
        e in proptest::collection::btree_set((0i32..8, 0i32..8), 0..20),
    ) {
        let program = compile(
            ".decl nested(n: number)\n\
             nested(n) :- n = sum c : { b(x), c = count : { e(x, _) } }.\n\
             .decl degree(x: number, c: number)\n\
             degree(x, c) :- b(x), c = count : { e(x, _) }.\n\
             .decl helper(n: number)\n\
             helper(n) :- n = sum c : { degree(_, c) }.\n",
        );
        let b: Vec<i32> = b.into_iter().collect();
        let e: Vec<(i32, i32)> = e.into_iter().collect();
        let f = facts(&b, &e);
        let want: i32 = b.iter().map(|x| e.iter().filter(|(s, _)| s == x).count() as i32).sum();
        prop_assert_eq!(rows(&program, &f, "nested"), vec![vec![Value::Number(want)]]);
        prop_assert_eq!(rows(&program, &f, "nested"), rows(&program, &f, "helper"));
    }
}
