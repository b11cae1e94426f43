#![allow(clippy::unwrap_used, clippy::expect_used)]
//! `x = range(from, to[, step])`, Soufflé's multi-result functor: one row per value in every
//! evaluator (staged, one-pass, naive, a staged query), explained by checked proofs and
//! why-nots, refused where it cannot give values.

use proptest::prelude::*;
use tollgate_engine::proof_check::check_proof;
use tollgate_engine::{Fact, FactSet, Limits, Program, Source, Value, naive};

const PROGRAM: &str = r#"
.decl bounds(from: number, to: number, step: number)
.decl stepped(from: number, to: number, step: number, x: number)
stepped(f, t, s, x) :- bounds(f, t, s), x = range(f, t, s).
.decl plain(from: number, to: number, x: number)
plain(f, t, x) :- bounds(f, t, _), x = range(f, t).
.decl reach(x: number)
reach(0).
// @id reach.step
reach(y) :- reach(x), y = range(x + 2, x + 4), y < 9.
.decl req(n: number)
.decl answer(n: number, x: number)
answer(n, x) :- req(n), x = range(0, n).
"#;

fn compile(text: &str) -> Program {
    Program::compile(&Source::new("range.dl", text)).unwrap()
}

/// Soufflé's rule, written out independently with wide integers.
fn expected(from: i64, to: i64, step: Option<i64>) -> Vec<i64> {
    let step = step.unwrap_or(if from <= to { 1 } else { -1 });
    let mut out = Vec::new();
    let mut x = from;
    if step > 0 {
        while x < to {
            out.push(x);
            x += step;
        }
    } else if step < 0 {
        while x > to {
            out.push(x);
            x += step;
        }
    } else if from != to {
        out.push(from);
    }
    out
}

fn sorted(rows: &[Vec<Value>]) -> Vec<String> {
    let mut v: Vec<String> = rows.iter().map(|r| format!("{r:?}")).collect();
    v.sort();
    v
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn every_evaluator_gives_the_values_souffle_gives(
        bounds in prop::collection::vec((-6i32..6, -6i32..6, -3i32..4), 1..4)
    ) {
        let program = compile(PROGRAM);
        let mut facts = FactSet::new();
        for &(f, t, s) in &bounds {
            facts.add("bounds", vec![Value::Number(f), Value::Number(t), Value::Number(s)], "b");
        }
        let model = program.materialise(&facts, &Limits::default()).unwrap();
        let quick = program.evaluate(&facts, &Limits::default()).unwrap();
        let oracle = naive::evaluate(program.ir(), &facts).rows(program.ir());
        let mut want_stepped = Vec::new();
        let mut want_plain = Vec::new();
        for &(f, t, s) in &bounds {
            for x in expected(f.into(), t.into(), Some(s.into())) {
                want_stepped.push(vec![Value::Number(f), Value::Number(t), Value::Number(s), Value::Number(x as i32)]);
            }
            for x in expected(f.into(), t.into(), None) {
                want_plain.push(vec![Value::Number(f), Value::Number(t), Value::Number(x as i32)]);
            }
        }
        for (rel, want) in [("stepped", want_stepped), ("plain", want_plain)] {
            let mut want = sorted(&want);
            want.dedup();
            prop_assert_eq!(sorted(&model.relation(rel).unwrap()), want.clone(), "{}", rel);
            prop_assert_eq!(sorted(&quick.relation(rel).unwrap()), want.clone(), "{} (evaluate)", rel);
            prop_assert_eq!(sorted(&oracle[rel]), want, "{} (naive)", rel);
        }
    }
}

#[test]
fn recursion_through_a_range_and_a_staged_query() {
    let program = compile(PROGRAM);
    let model = program
        .materialise(&FactSet::new(), &Limits::default())
        .unwrap();
    let reach: Vec<i32> = model
        .relation("reach")
        .unwrap()
        .iter()
        .map(|r| match r[0] {
            Value::Number(n) => n,
            _ => panic!(),
        })
        .collect();
    assert_eq!(reach, [0, 2, 3, 4, 5, 6, 7, 8]);
    let mut request = FactSet::new();
    request.add("req", vec![Value::Number(3)], "request");
    let answer = model.query(&request, &Limits::default()).unwrap();
    assert_eq!(answer.relation("answer").unwrap().len(), 3);
    assert!(model.relation("answer").unwrap().is_empty());
}

#[test]
fn facts_made_by_a_range_have_checked_proofs_and_why_nots_name_it() {
    let program = compile(PROGRAM);
    let facts = FactSet::new();
    let model = program.materialise(&facts, &Limits::default()).unwrap();
    let proof = model.prove(&Fact::parse("reach(5)").unwrap()).unwrap();
    let text = proof.to_text();
    assert!(text.contains("[rule reach.step"), "{text}");
    check_proof(&program, &facts, &proof).unwrap();
    let why = model.why_not(&Fact::parse("reach(1)").unwrap()).unwrap();
    let text = why.to_text();
    assert!(
        text.contains("`y = range((x + 2), (x + 4))` does not hold with x = 0, y = 1"),
        "{text}"
    );
}

#[test]
fn a_range_anywhere_but_bound_to_a_variable_is_refused() {
    let cases = [
        (".decl r(x: number)\nr(range(1, 3)).\n", "E-fact"),
        (
            ".decl r(x: number)\n.decl s(x: number)\nr(x + 1) :- s(x), x = range(1) .\n",
            "E-parse",
        ),
        (
            ".decl r(x: symbol)\nr(x) :- x = range(\"a\", \"b\").\n",
            "E-type",
        ),
        (
            ".decl r(x: number)\n.decl s(x: number)\nr(y) :- s(x), y = range(0, 3) + 1.\n",
            "E-range",
        ),
    ];
    for (text, code) in cases {
        let errors = match Program::compile(&Source::new("range.dl", text)) {
            Ok(_) => panic!("accepted:\n{text}"),
            Err(e) => e,
        };
        let codes: Vec<&str> = errors.iter().map(|d| d.code).collect();
        assert!(
            codes.contains(&code),
            "{text}: {codes:?} {:?}",
            errors[0].message
        );
    }
}

/// A range of two billion values that a filter then discards derives nothing, so the fact
/// limit alone would let it run (and the buffers of one that is kept grow past any memory);
/// generated values count against the same limit, in every evaluator.
#[test]
fn a_huge_range_stops_at_the_limit_with_an_error() {
    let text = ".decl r(x: number)\nr(x) :- x = range(0, 2000000000), x < 0.\n.decl s(x: number)\ns(x) :- x = range(0, 2000000000).\n";
    let program = compile(text);
    let limits = Limits {
        max_facts: 10_000,
        ..Limits::default()
    };
    for result in [
        program.materialise(&FactSet::new(), &limits).map(|_| ()),
        program.evaluate(&FactSet::new(), &limits).map(|_| ()),
    ] {
        let err = result.unwrap_err();
        assert_eq!(err.to_string(), "`range` generated more than 10000 values");
    }
    let small = compile(".decl r(x: number)\nr(x) :- x = range(0, 100), x < 0.\n");
    assert!(small.materialise(&FactSet::new(), &limits).is_ok());
}

/// Inside an aggregate's body a range generates as anywhere else.
#[test]
fn a_range_inside_an_aggregate_body() {
    let text = ".decl r(x: number)\nr(3).\nr(2).\n.decl c(n: number)\nc(n) :- n = count : { r(x), y = range(0, x) }.\n.decl s(n: number)\ns(n) :- n = sum y : { r(x), y = range(0, x) }.\n";
    let program = compile(text);
    let facts = FactSet::new();
    let model = program.materialise(&facts, &Limits::default()).unwrap();
    assert_eq!(model.relation("c").unwrap(), [vec![Value::Number(5)]]);
    assert_eq!(model.relation("s").unwrap(), [vec![Value::Number(4)]]);
    let oracle = naive::evaluate(program.ir(), &facts).rows(program.ir());
    assert_eq!(oracle["c"], [vec![Value::Number(5)]]);
    assert_eq!(oracle["s"], [vec![Value::Number(4)]]);
}

/// Soufflé counts an unsigned range without a step down by one when `from > to`
/// (`runRangeBackward`: `range(9u, 7u)` is 9, 8); with a step, which is never negative for
/// unsigneds, such a range is empty. Every evaluator, the generator and the membership test
/// (a bound `x`) alike.
#[test]
fn an_unsigned_range_without_a_step_counts_down() {
    let program = compile(
        "
        .decl ubounds(f: unsigned, t: unsigned)
        .decl candidate(x: unsigned)
        .decl plain(f: unsigned, t: unsigned, x: unsigned)
        .decl stepped(f: unsigned, t: unsigned, x: unsigned)
        .decl member(f: unsigned, t: unsigned, x: unsigned)
        plain(f, t, x) :- ubounds(f, t), x = range(f, t).
        stepped(f, t, x) :- ubounds(f, t), x = range(f, t, 1).
        member(f, t, x) :- ubounds(f, t), candidate(x), x = range(f, t).
        ",
    );
    let mut facts = FactSet::new();
    for (f, t) in [(9u32, 7u32), (2, 0), (3, 3), (0, 2)] {
        facts.add("ubounds", vec![Value::Unsigned(f), Value::Unsigned(t)], "b");
    }
    for x in 0..11 {
        facts.add("candidate", vec![Value::Unsigned(x)], "c");
    }
    let row =
        |f: u32, t: u32, x: u32| vec![Value::Unsigned(f), Value::Unsigned(t), Value::Unsigned(x)];
    let want_plain = sorted(&[
        row(0, 2, 0),
        row(0, 2, 1),
        row(2, 0, 2),
        row(2, 0, 1),
        row(9, 7, 9),
        row(9, 7, 8),
    ]);
    let want_stepped = sorted(&[row(0, 2, 0), row(0, 2, 1)]);
    let model = program.materialise(&facts, &Limits::default()).unwrap();
    let quick = program.evaluate(&facts, &Limits::default()).unwrap();
    let oracle = naive::evaluate(program.ir(), &facts).rows(program.ir());
    for (rel, want) in [
        ("plain", &want_plain),
        ("stepped", &want_stepped),
        ("member", &want_plain),
    ] {
        assert_eq!(&sorted(&model.relation(rel).unwrap()), want, "{rel}");
        assert_eq!(
            &sorted(&quick.relation(rel).unwrap()),
            want,
            "{rel} (evaluate)"
        );
        assert_eq!(&sorted(&oracle[rel]), want, "{rel} (naive)");
    }
}
