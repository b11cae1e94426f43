#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Aggregate witnesses (issue 40), as Soufflé reads them: a variable the head reads that only
//! a `min` or `max` aggregate's body binds takes the values of the bindings that reach the
//! result (the arg-min), jointly when there are several; through a nested aggregate too. The
//! witnesses of `count`, `sum` and `mean` are refused. `_ = aggregate` drops the value, and a
//! `_` compared with anything else is refused (it once compared as 0).

use proptest::prelude::*;
use tollgate_engine::proof_check::check_proof;
use tollgate_engine::{Fact, FactSet, Limits, Program, Source, Value, naive};

fn compile(text: &str) -> Program {
    Program::compile(&Source::new("witness.dl", text)).unwrap()
}

fn refused(text: &str) -> (String, String) {
    let src = Source::new("witness.dl", text);
    let d = Program::compile(&src).expect_err("refused");
    (d[0].code.to_string(), d[0].message.clone())
}

fn sorted(rows: &[Vec<Value>]) -> Vec<String> {
    let mut v: Vec<String> = rows
        .iter()
        .map(|r| {
            r.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    v.sort();
    v
}

/// Every evaluator's rows of `rel`, which must agree.
fn rows(program: &Program, facts: &FactSet, rel: &str) -> Vec<String> {
    let model = program.materialise(facts, &Limits::default()).unwrap();
    let quick = program.evaluate(facts, &Limits::default()).unwrap();
    let oracle = naive::evaluate(program.ir(), facts).rows(program.ir());
    let a = sorted(&model.relation(rel).unwrap());
    assert_eq!(a, sorted(&quick.relation(rel).unwrap()), "{rel} (evaluate)");
    assert_eq!(a, sorted(&oracle[rel]), "{rel} (naive)");
    a
}

const PROGRAM: &str = r#"
.decl student(name: symbol, height: number)
.decl a(x: number, y: number)
.decl tallest(name: symbol, height: number)
.decl min_sum(x: number, y: number, s: number)
.decl any_min(x: number, y: number)
.decl per_class(class: symbol, name: symbol, n: number)
.decl member(class: symbol, name: symbol)
// @id tallest
tallest(s, h) :- h = max x : { student(s, x) }.
min_sum(x, y, s) :- s = min w : { a(x, y), w = x + y }.
any_min(x, y) :- _ = min x + y : { a(x, y) }.
// The witness of an inner aggregate, exported through the outer one.
per_class(c, s, n) :- member(c, _), n = max h : { member(c, s), h = max x : { student(s, x) } }.
"#;

#[test]
fn min_and_max_export_the_bindings_that_reach_the_result() {
    let program = compile(PROGRAM);
    let mut facts = FactSet::new();
    for (s, h) in [("anna", 170), ("rachel", 177), ("quinn", 180), ("tia", 180)] {
        facts.add("student", vec![Value::sym(s), Value::Number(h)], "f");
    }
    // Two pairs reach the minimum 3: the witnesses are those pairs, not their cross product.
    for (x, y) in [(1, 2), (2, 1), (5, 6), (-1, 9)] {
        facts.add("a", vec![Value::Number(x), Value::Number(y)], "f");
    }
    for (c, s) in [("c1", "anna"), ("c1", "rachel"), ("c2", "quinn")] {
        facts.add("member", vec![Value::sym(c), Value::sym(s)], "f");
    }
    assert_eq!(rows(&program, &facts, "tallest"), ["quinn 180", "tia 180"]);
    assert_eq!(rows(&program, &facts, "min_sum"), ["1 2 3", "2 1 3"]);
    assert_eq!(rows(&program, &facts, "any_min"), ["1 2", "2 1"]);
    assert_eq!(
        rows(&program, &facts, "per_class"),
        ["c1 rachel 177", "c2 quinn 180"]
    );
    // Proofs of a witness's fact check: the copy of the body is an ordinary rule body.
    let model = program.materialise(&facts, &Limits::default()).unwrap();
    let proof = model
        .prove(&Fact::parse(r#"tallest("tia", 180)"#).unwrap())
        .unwrap();
    assert!(
        proof.to_text().contains("[rule tallest"),
        "{}",
        proof.to_text()
    );
    check_proof(&program, &facts, &proof).unwrap();
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    /// The arg-min of `min_sum`, stated independently: every pair whose sum is the least.
    #[test]
    fn min_witnesses_are_the_arg_min(pairs in prop::collection::vec((-4i32..4, -4i32..4), 0..8)) {
        let program = compile(PROGRAM);
        let mut facts = FactSet::new();
        for &(x, y) in &pairs {
            facts.add("a", vec![Value::Number(x), Value::Number(y)], "f");
        }
        let mut want: Vec<String> = match pairs.iter().map(|(x, y)| x + y).min() {
            Some(m) => pairs
                .iter()
                .filter(|(x, y)| x + y == m)
                .map(|(x, y)| format!("{x} {y} {m}"))
                .collect(),
            None => Vec::new(),
        };
        want.sort();
        want.dedup();
        prop_assert_eq!(rows(&program, &facts, "min_sum"), want);
    }
}

#[test]
fn witnesses_of_count_sum_and_mean_are_refused() {
    for agg in ["count", "sum x"] {
        let text = format!(
            ".decl b(x: number, y: number)\n.decl r(n: number, w: number)\n\
             r(n, w) :- n = {agg} : {{ b(x, w) }}.\n"
        );
        let (code, message) = refused(&text);
        assert_eq!(code, "E-unsupported", "{text}");
        assert!(
            message.starts_with("`w` is bound only inside a"),
            "{message}"
        );
    }
    // Through a nested `min`, as in Soufflé's `aggregate_witnesses` test.
    let text = ".decl b(x: number, y: number)\n.decl d(x: number, y: number)\n\
                .decl r(n: number, w: number)\n\
                r(n, w) :- n = count : { b(x, _), x > min y : { d(y, w) } }.\n";
    assert_eq!(refused(text).0, "E-unsupported");
}

/// A bug: `_ = 5` compared `_` as 0 and silently held for nothing; Soufflé refuses `_` in a
/// comparison ("Underscore in binary relation"), but for `_ = aggregate`, which drops the value.
#[test]
fn an_underscore_compared_is_refused_not_read_as_zero() {
    for body in ["_ = 5", "5 = _", "x != _ + 1", "x = _"] {
        let text = format!(".decl s(x: number)\n.decl r(x: number)\nr(x) :- s(x), {body}.\n");
        let (code, message) = refused(&text);
        assert_eq!(
            (code.as_str(), message.as_str()),
            ("E-unbound", "`_` in a comparison"),
            "{body}"
        );
    }
    let program = compile(
        ".decl s(x: number)\n.decl r(x: number)\nr(1) :- _ = count : { s(_) }.\n\
         r(2) :- max x : { s(x) } = _.\n",
    );
    let mut facts = FactSet::new();
    facts.add("s", vec![Value::Number(4)], "f");
    assert_eq!(rows(&program, &facts, "r"), ["1", "2"]);
    // `max` over nothing gives no value: the rule does not hold.
    assert_eq!(rows(&program, &FactSet::new(), "r"), ["1"]);
}
