#![allow(clippy::unwrap_used, clippy::expect_used)]
//! `max(a, b, ...)` and `min(a, b, ...)`, Soufflé's variadic functors: one type for all
//! arguments and the value, alike in every evaluator and in checked proofs; told from the
//! aggregates of the same names by the comma; `.plan` after a rule is read and changes nothing.

mod common;

use common::agreeing_rows as rows;
use proptest::prelude::*;
use tollgate_engine::{FactSet, Program, Source, Value};

#[test]
fn max_and_min_agree_in_every_evaluator_for_each_type() {
    let text = r#"
.decl n(x: number, y: number)
n(1, -5). n(-2, 7).
.decl s(a: symbol, b: symbol)
s("b", "ab"). s("é", "z").
.decl nums(hi: number, lo: number)
nums(max(x, y, 0), min(x, y, 0)) :- n(x, y).
.decl syms(hi: symbol, lo: symbol)
syms(max(a, b), min(a, b, "a")) :- s(a, b).
.decl floats(hi: float, lo: float)
floats(max(to_float(x), 0.5), min(to_float(y), -0.5)) :- n(x, y).
.decl uns(hi: unsigned, lo: unsigned)
uns(max(to_unsigned(x), 3u), min(4294967295u, 2u)) :- n(x, _).
"#;
    let program = Program::compile(&Source::new("m.dl", text)).unwrap();
    let facts = FactSet::new();
    assert_eq!(
        rows(&program, &facts, "nums"),
        vec![
            vec![Value::Number(1), Value::Number(-5)],
            vec![Value::Number(7), Value::Number(-2)],
        ]
    );
    // By bytes: "é" (0xC3 0xA9) sorts after "z".
    assert_eq!(
        rows(&program, &facts, "syms"),
        vec![
            vec![Value::sym("b"), Value::sym("a")],
            vec![Value::sym("é"), Value::sym("a")],
        ]
    );
    assert_eq!(
        rows(&program, &facts, "floats"),
        vec![
            vec![Value::Float(0.5), Value::Float(-0.5)],
            vec![Value::Float(1.0), Value::Float(-5.0)],
        ]
    );
    // -2 as an unsigned is the largest of all.
    assert_eq!(
        rows(&program, &facts, "uns"),
        vec![
            vec![Value::Unsigned(3), Value::Unsigned(2)],
            vec![Value::Unsigned(4294967294), Value::Unsigned(2)],
        ]
    );
}

#[test]
fn a_comma_makes_max_a_functor_and_none_an_aggregate() {
    let text = r#"
.decl n(x: number)
n(3). n(9).
.decl agg(m: number)
agg(m) :- m = max (x) : { n(x) }.
.decl fun(m: number)
fun(m) :- n(x), m = max((x), 5).
"#;
    let program = Program::compile(&Source::new("m.dl", text)).unwrap();
    let facts = FactSet::new();
    assert_eq!(rows(&program, &facts, "agg"), vec![vec![Value::Number(9)]]);
    assert_eq!(
        rows(&program, &facts, "fun"),
        vec![vec![Value::Number(5)], vec![Value::Number(9)]]
    );
}

#[test]
fn max_of_one_argument_or_of_two_types_is_refused() {
    let one = ".decl n(x: number)\nn(max(1)).\n";
    let errors = Program::compile(&Source::new("m.dl", one)).unwrap_err();
    assert_eq!(errors[0].code, "E-parse", "{errors:?}");
    let mixed = ".decl n(x: number)\n.decl s(x: symbol)\nn(max(x, 1)) :- s(x).\n";
    let errors = Program::compile(&Source::new("m.dl", mixed)).unwrap_err();
    assert_eq!(errors[0].code, "E-type", "{errors:?}");
}

#[test]
fn a_plan_after_a_rule_changes_nothing_and_elsewhere_is_refused() {
    let with = ".decl e(x: number, y: number)\ne(1, 2). e(2, 3).\n.decl p(x: number, y: number)\np(x, y) :- e(x, y).\np(x, z) :- p(x, y), e(y, z).\n.plan 0:(1,2), 1:(2,1)\n";
    let without = with.replace(".plan 0:(1,2), 1:(2,1)\n", "");
    let facts = FactSet::new();
    let a = Program::compile(&Source::new("p.dl", with)).unwrap();
    let b = Program::compile(&Source::new("p.dl", &without)).unwrap();
    assert_eq!(rows(&a, &facts, "p"), rows(&b, &facts, "p"));
    let stray = ".decl e(x: number)\ne(1).\n.plan 0:(1)\n";
    let errors = Program::compile(&Source::new("p.dl", stray)).unwrap_err();
    assert_eq!(errors[0].message, "`.plan` must follow the rule it orders");
}

proptest! {
    /// The functors are the fold of the order the comparisons use: the greatest and least of
    /// the arguments, whatever their order.
    #[test]
    fn max_and_min_are_the_extremes_of_their_arguments(xs in proptest::collection::vec(-1000i32..1000, 2..6)) {
        let args: Vec<String> = xs.iter().map(ToString::to_string).collect();
        let text = format!(
            ".decl one(x: number)\none(0).\n.decl r(hi: number, lo: number)\nr(max({a}), min({a})) :- one(_).\n",
            a = args.join(", ")
        );
        let program = Program::compile(&Source::new("p.dl", &text)).unwrap();
        let got = rows(&program, &FactSet::new(), "r");
        let want = vec![vec![
            Value::Number(*xs.iter().max().unwrap()),
            Value::Number(*xs.iter().min().unwrap()),
        ]];
        prop_assert_eq!(got, want);
    }
}
