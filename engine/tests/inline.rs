#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Relations declared `inline` (issue 40), as Soufflé reads them: an atom of one is replaced by
//! the relation's rules where it is used, so its rules need not bind their heads themselves;
//! used where it cannot be inlined (negated, in an aggregate) it is evaluated as any relation.
//! And a bug found on the way: an aggregate reading a variable an earlier aggregate bound.

mod common;

use tollgate_engine::{FactSet, Program, Source, Value};

fn compile(text: &str) -> Program {
    Program::compile(&Source::new("inline.dl", text))
        .map_err(|d| d.iter().map(|d| d.message.clone()).collect::<Vec<_>>())
        .unwrap()
}

/// Every evaluator's rows of `rel`, which must agree, each row's proof checked.
fn rows(program: &Program, facts: &FactSet, rel: &str) -> Vec<String> {
    let mut v: Vec<String> = common::agreeing_rows(program, facts, rel)
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

const PROGRAM: &str = r#"
.type P = [x: number, y: number]
.decl point(x: number, y: number)
.decl at(p: P)
at([x, y]) :- point(x, y).
// Not range-restricted on its own: inlined where it is used.
.decl cross(a: P, b: P, v: number) inline
cross([a0, a1], [b0, b1], v) :- v = a0 * b1 - a1 * b0.
.decl turns(a: number, b: number, c: number, d: number)
turns(a, b, c, d) :- at(p), at(q), p = [a, b], q = [c, d], cross(p, q, v), v > 0.
// Two rules: one alternative each; `_` for an argument.
.decl near(a: number, b: number) inline
near(a, b) :- point(a, b), a < 2.
near(a, b) :- point(a, b), b < 2.
.decl close(a: number)
close(a) :- near(a, _).
// Negated: evaluated as any relation (it is range-restricted).
.decl far(a: number, b: number)
far(a, b) :- point(a, b), !near(a, b).
"#;

#[test]
fn an_inline_relation_is_replaced_by_its_rules_where_it_is_used() {
    let program = compile(PROGRAM);
    let mut facts = FactSet::new();
    for (x, y) in [(0, 1), (1, 0), (2, 3), (3, 2)] {
        facts.add("point", vec![Value::Number(x), Value::Number(y)], "f");
    }
    assert_eq!(
        rows(&program, &facts, "turns"),
        [
            "1 0 0 1", "1 0 2 3", "1 0 3 2", "2 3 0 1", "3 2 0 1", "3 2 2 3"
        ]
    );
    assert_eq!(rows(&program, &facts, "close"), ["0", "1"]);
    assert_eq!(rows(&program, &facts, "far"), ["2 3", "3 2"]);
    // `cross` is only ever inlined: it has no clauses of its own left.
    assert!(
        program
            .ir()
            .rules_for(program.ir().relation("cross").unwrap())
            .next()
            .is_none()
    );
    // `near` is also read negated, so it keeps its clauses.
    assert!(
        program
            .ir()
            .rules_for(program.ir().relation("near").unwrap())
            .next()
            .is_some()
    );
}

#[test]
fn a_recursive_inline_relation_is_refused() {
    let diags = Program::compile(&Source::new(
        "inline.dl",
        ".decl e(a: number, b: number)\n.decl p(a: number, b: number) inline\np(a, b) :- e(a, b).\np(a, c) :- p(a, b), e(b, c).\n.decl q(a: number)\nq(a) :- p(a, _).\n",
    ))
    .expect_err("refused");
    assert_eq!(diags[0].code.to_string(), "E-unsupported");
    assert!(
        diags[0]
            .message
            .contains("inline relation `p` reaches itself"),
        "{}",
        diags[0].message
    );
}

#[test]
fn an_aggregate_reads_a_variable_an_earlier_aggregate_bound() {
    // `y = min b : { .., a = x }` reads `x`, which `x = min ..` binds first; it once made
    // `x` a variable of its own inside, so `y` was the least `b` of every point.
    let program = compile(
        r#"
        .decl point(a: number, b: number)
        .decl least(x: number, y: number)
        least(x, y) :- x = min a : { point(a, _) }, y = min b : { point(a, b), a = x }.
        "#,
    );
    let mut facts = FactSet::new();
    for (a, b) in [(1, 5), (1, 7), (2, 0)] {
        facts.add("point", vec![Value::Number(a), Value::Number(b)], "f");
    }
    assert_eq!(rows(&program, &facts, "least"), ["1 5"]);
}
