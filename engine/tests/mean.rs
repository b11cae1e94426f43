#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The `mean` aggregate: floats only (as in Soufflé), no tuple over an empty set, alike in
//! every evaluator and in checked proofs, and independent of the order the values come in.

mod common;

use common::agreeing_rows as rows;
use proptest::prelude::*;
use tollgate_engine::{FactSet, Program, Source, Value};

const PROGRAM: &str = r#"
.decl reading(sensor: symbol, value: float)
.decl per_sensor(sensor: symbol, mean: float)
per_sensor(s, m) :- reading(s, _), m = mean v : { reading(s, v) }.
.decl none(mean: float)
none(m) :- m = mean v : { reading("nobody", v) }.
"#;

fn readings(values: &[(&str, f32)]) -> FactSet {
    let mut facts = FactSet::new();
    for (s, v) in values {
        facts.add("reading", vec![Value::sym(s), Value::Float(*v)], "test");
    }
    facts
}

#[test]
fn mean_groups_by_the_outer_variables_and_gives_nothing_for_no_values() {
    let program = Program::compile(&Source::new("m.dl", PROGRAM)).unwrap();
    let facts = readings(&[("a", 1.5), ("a", 2.0), ("a", 3.0), ("b", -1.0)]);
    assert_eq!(
        rows(&program, &facts, "per_sensor"),
        vec![
            vec![Value::sym("a"), Value::Float(6.5 / 3.0)],
            vec![Value::sym("b"), Value::Float(-1.0)],
        ]
    );
    assert!(rows(&program, &facts, "none").is_empty());
}

#[test]
fn mean_of_numbers_is_refused_with_the_conversion_to_write() {
    let text = ".decl n(x: number)\n.decl m(x: float)\nm(y) :- y = mean x : n(x).\n";
    let errors = Program::compile(&Source::new("m.dl", text)).unwrap_err();
    assert_eq!(errors[0].code, "E-type");
    assert_eq!(errors[0].message, "`mean` over `number` values");
    let text = ".decl n(x: number)\n.decl m(x: float)\nm(y) :- y = mean to_float(x) : n(x).\n";
    assert!(Program::compile(&Source::new("m.dl", text)).is_ok());
}

proptest! {
    /// Whatever the values and their order, every evaluator gives the sum (exact here: small
    /// halves) divided by the count, in 32-bit floats.
    #[test]
    fn mean_is_the_sum_over_the_count(halves in proptest::collection::btree_set(-4000i32..4000, 1..40)) {
        let program = Program::compile(&Source::new("m.dl", PROGRAM)).unwrap();
        let values: Vec<(&str, f32)> = halves.iter().map(|h| ("s", *h as f32 / 2.0)).collect();
        let want = values.iter().map(|(_, v)| *v).sum::<f32>() / values.len() as f32;
        prop_assert_eq!(
            rows(&program, &readings(&values), "per_sensor"),
            vec![vec![Value::sym("s"), Value::Float(want)]]
        );
    }
}
