#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Records (issue 40), as Soufflé has them: record types (recursive ones too), `nil`, record
//! terms in facts, heads and bodies, patterns taking records apart (nested, with `_`), `=` and
//! `!=` between records. Every evaluator agrees (the model, the one-shot evaluation and the
//! naive oracle), every derived fact's proof checks, a staged query packs the records the
//! model holds to the same values, and what Soufflé refuses is refused with its place.

mod common;

use proptest::prelude::*;
use tollgate_engine::proof_check::check_proof;
use tollgate_engine::tsv;
use tollgate_engine::{Fact, FactSet, Limits, Program, Source, Value};

fn compile(text: &str) -> Program {
    Program::compile(&Source::new("records.dl", text))
        .map_err(|d| d.iter().map(|d| d.message.clone()).collect::<Vec<_>>())
        .unwrap()
}

fn refused(text: &str) -> Vec<(String, String)> {
    let src = Source::new("records.dl", text);
    let diags = Program::compile(&src).expect_err("refused");
    diags
        .iter()
        .filter(|d| d.is_error())
        .map(|d| (d.code.to_string(), d.message.clone()))
        .collect()
}

fn text(rows: &[Vec<Value>]) -> Vec<String> {
    let mut v: Vec<String> = rows
        .iter()
        .map(|r| {
            r.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(" | ")
        })
        .collect();
    v.sort();
    v
}

/// Every evaluator's rows of `rel`, which must agree, each row's proof checked.
fn rows(program: &Program, facts: &FactSet, rel: &str) -> Vec<String> {
    text(&common::agreeing_rows(program, facts, rel))
}

const LISTS: &str = r#"
.type List = [head: number, tail: List]
.type Pair = [a: number, b: symbol]
.decl s(l: List)
s(nil).
s([n, r]) :- s(r), len(r, l), l < 4, n = l + 1.
.decl len(l: List, n: number)
len(nil, 0).
len([x, r], n + 1) :- s([x, r]), len(r, n).
.decl fst(x: number)
fst(x) :- s([x, _]).
.decl second(x: number)
second(x) :- s([_, [x, _]]).
.decl nonempty(l: List)
nonempty(l) :- s(l), l = [_, _].
.decl p(p: Pair)
p([1, "a"]).
p([2, "b, c"]).
.decl q(x: number, y: symbol)
q(x, y) :- p([x, y]).
.decl lit(l: List)
lit([1, [2, nil]]).
.decl m(a: number, b: number)
m(a, b) :- lit([a, [b, nil]]).
.decl same(a: number, b: number)
same(a, b) :- s(l), s(k), l = k, len(l, a), len(k, b).
.decl other(a: number, b: number)
other(a, b) :- s(l), s(k), l != k, len(l, a), len(k, b), a < b.
.decl built(l: List)
built(l) :- m(a, b), l = [a, [b, nil]].
.decl also(l: List)
also(l) :- built(l), lit(l).
"#;

fn lists() -> (Program, FactSet) {
    (compile(LISTS), FactSet::new())
}

#[test]
fn lists_are_built_by_rules_and_taken_apart_by_patterns() {
    let (program, facts) = lists();
    assert_eq!(
        rows(&program, &facts, "s"),
        [
            "[1, nil]",
            "[2, [1, nil]]",
            "[3, [2, [1, nil]]]",
            "[4, [3, [2, [1, nil]]]]",
            "nil"
        ]
    );
    assert_eq!(
        rows(&program, &facts, "len"),
        [
            "[1, nil] | 1",
            "[2, [1, nil]] | 2",
            "[3, [2, [1, nil]]] | 3",
            "[4, [3, [2, [1, nil]]]] | 4",
            "nil | 0"
        ]
    );
    assert_eq!(rows(&program, &facts, "fst"), ["1", "2", "3", "4"]);
    assert_eq!(rows(&program, &facts, "second"), ["1", "2", "3"]);
    // `[_, _]` matches every record but `nil`.
    assert_eq!(rows(&program, &facts, "nonempty").len(), 4);
    assert_eq!(rows(&program, &facts, "q"), ["1 | a", "2 | b, c"]);
    assert_eq!(rows(&program, &facts, "m"), ["1 | 2"]);
    // Records are equal when their fields are: a list equals only itself.
    assert_eq!(
        rows(&program, &facts, "same"),
        ["0 | 0", "1 | 1", "2 | 2", "3 | 3", "4 | 4"]
    );
    assert_eq!(rows(&program, &facts, "other").len(), 10);
    // A record packed by a rule is the record written in a fact.
    assert_eq!(rows(&program, &facts, "also"), ["[1, [2, nil]]"]);
}

#[test]
fn every_derived_record_fact_has_a_proof_that_checks() {
    let (program, facts) = lists();
    let model = program.materialise(&facts, &Limits::default()).unwrap();
    let mut proved = 0;
    for rel in [
        "s", "len", "fst", "second", "nonempty", "q", "m", "same", "also",
    ] {
        for values in model.relation(rel).unwrap() {
            let fact = Fact {
                relation: rel.into(),
                values,
            };
            let proof = model.prove(&fact).unwrap();
            check_proof(&program, &facts, &proof).unwrap();
            proved += 1;
        }
    }
    assert_eq!(proved, 30);
    // A record in a proof's bindings reads as it is written.
    let proof = model
        .prove(&Fact::parse("len([2, [1, nil]], 2)").unwrap())
        .unwrap();
    let shown = proof.to_text();
    assert!(shown.contains("r = [1, nil]"), "{shown}");
    // Why not: the pattern's field that fails is named.
    let why = model.why_not(&Fact::parse("m(1, 3)").unwrap()).unwrap();
    let shown = format!("{why:?}");
    assert!(shown.contains("$2[1][0]"), "{shown}");
}

#[test]
fn a_staged_query_packs_the_records_the_model_holds() {
    let program = compile(
        r#"
        .type P = [a: number, b: symbol]
        .decl known(p: P)
        known([1, "a"]).
        known([2, "b"]).
        .decl ask(a: number, b: symbol)
        .decl hit(a: number, b: symbol)
        hit(a, b) :- ask(a, b), known([a, b]).
        .decl made(p: P)
        made([a, b]) :- ask(a, b).
        .decl both(p: P)
        both(p) :- made(p), known(p).
        "#,
    );
    let model = program
        .materialise(&FactSet::new(), &Limits::default())
        .unwrap();
    let mut request = FactSet::new();
    request.add("ask", vec![Value::Number(2), Value::sym("b")], "request");
    request.add("ask", vec![Value::Number(3), Value::sym("c")], "request");
    let answer = model.query(&request, &Limits::default()).unwrap();
    assert_eq!(text(&answer.relation("hit").unwrap()), ["2 | b"]);
    assert_eq!(text(&answer.relation("both").unwrap()), ["[2, b]"]);
    assert_eq!(
        text(&answer.relation("made").unwrap()),
        ["[2, b]", "[3, c]"]
    );
    // The model is unchanged by the records the query made.
    assert!(model.relation("made").unwrap().is_empty());
    let proof = answer.prove(&Fact::parse(r#"both([2, "b"])"#).unwrap());
    check_proof(&program, &request, &proof.unwrap()).unwrap();
    // A record nothing holds is not contained, and is not made by asking.
    assert!(!model.contains(&Fact::parse(r#"known([9, "z"])"#).unwrap()));
    assert!(model.contains(&Fact::parse(r#"known([1, "a"])"#).unwrap()));
}

#[test]
fn records_in_facts_files_read_as_soufflé_writes_them() {
    let program = compile(
        r#"
        .type Point = [x: float, y: float]
        .type Named = [name: symbol, at: Point]
        .decl place(p: Named, rank: number)
        .output place
        "#,
    );
    let rel = &program.ir().relations[program.ir().relation("place").unwrap()];
    let records = &program.ir().records;
    let mut facts = FactSet::new();
    let text_in =
        "[home, [0.5, 1.25]],1\n[\"work, main\", [-2, 3.1]],2\nnil,3\n[ shed , [0,0] ],4\n";
    tsv::parse_facts(text_in, "place.facts", rel, ",", records, &mut facts).unwrap();
    let model = program.materialise(&facts, &Limits::default()).unwrap();
    let out = model.outputs().to_text("place", "\t");
    // Symbols bare (a leading space skipped, a trailing one kept), floats to nine digits.
    assert_eq!(
        out,
        "nil\t3\n[home, [0.5, 1.25]]\t1\n[shed , [0, 0]]\t4\n[work, main, [-2, 3.0999999]]\t2\n"
    );
    // What does not fit names its line and column.
    for bad in [
        "[home, [0.5]],1",
        "[home, [0.5, 1]] x,1",
        "[home, 1],1",
        "[h, [a, 3]],1",
    ] {
        let err = tsv::parse_facts(bad, "place.facts", rel, ",", records, &mut FactSet::new())
            .unwrap_err();
        assert_eq!((err.line, err.column), (1, 1), "{bad}: {err}");
        assert!(err.message.contains("`Named`"), "{err}");
    }
}

#[test]
fn what_soufflé_refuses_about_records_is_refused_with_its_place() {
    let decls = ".type P = [a: number, b: symbol]\n.decl r(p: P)\n.decl n(x: number)\n";
    let case = |body: &str| refused(&format!("{decls}{body}"));
    let first = |body: &str| case(body).into_iter().next().unwrap();
    assert_eq!(first("n(nil).").0, "E-fact");
    assert_eq!(first("r([1]).").1, "a record of 1 field where `P` has 2");
    assert_eq!(
        first("n(1) :- [1, 2] = [1, 2].").1,
        "the type of this record cannot be told"
    );
    assert_eq!(
        first("n(x) :- r([x, _, _]).").1,
        "a record of 3 field(s) where `P` has 2"
    );
    assert_eq!(
        first("n(1) :- r(p), r(q), p < q.").1,
        "records are compared only with `=` and `!=`, not `<`"
    );
    assert_eq!(
        first("n(1) :- r(p), !r([_, \"a\"]).").1,
        "`_` inside a record in a negated atom"
    );
    assert_eq!(
        first("n(x) :- r(p), x = p.").1,
        "variable `x` is `P` but `number` is expected here"
    );
    assert_eq!(
        first("n(1) :- r(p), p = [x, \"a\"] + 1, x = 1.").1,
        "arithmetic where a record `P` is expected"
    );
    // `p = [_, _]` is `p` is not nil; with nothing to bind `p`, refused.
    assert_eq!(first("n(1) :- p = [_, _].").0, "E-unbound");
    assert_eq!(
        refused(".type Q = [a: number, a: symbol]\n")[0].1,
        "field `a` is declared twice in record type `Q`"
    );
    assert_eq!(
        refused(".type Q = [a: nope]\n")[0].1,
        "unknown type `nope` of field `a`"
    );
    // A pattern whose fields nothing binds: the variables are unbound.
    assert_eq!(first("n(x) :- p = [x, \"a\"].").0, "E-unbound");
}

#[test]
fn facts_given_as_text_hold_records() {
    let f = Fact::parse(r#"r([1, ["a", nil]], nil)"#).unwrap();
    assert_eq!(
        f.values,
        vec![
            Value::Record(
                vec![
                    Value::Number(1),
                    Value::Record(vec![Value::sym("a"), Value::Nil].into())
                ]
                .into()
            ),
            Value::Nil
        ]
    );
    assert_eq!(f.to_string(), r#"r([1, ["a", nil]], nil)"#);
    let deep = format!("r({}1{})", "[".repeat(500), "]".repeat(500));
    assert!(Fact::parse(&deep).is_err(), "nesting is bounded");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    /// Records are hash-consed: two records are equal exactly when their fields are, whatever
    /// the order they were made in, in the model and in a staged query over it.
    #[test]
    fn records_are_equal_exactly_when_their_fields_are(
        pairs in prop::collection::vec((0i32..4, 0i32..4), 0..10),
        asked in prop::collection::vec((0i32..4, 0i32..4), 0..4),
    ) {
        let program = compile(
            r#"
            .type P = [a: number, b: number]
            .decl in(x: number, y: number)
            .decl r(p: P)
            r([x, y]) :- in(x, y).
            .decl eq(x1: number, y1: number, x2: number, y2: number)
            eq(x1, y1, x2, y2) :- r(p), r(q), p = q, p = [x1, y1], q = [x2, y2].
            .decl ask(x: number, y: number)
            .decl found(x: number, y: number)
            found(x, y) :- ask(x, y), r(p), p = [x, y].
            "#,
        );
        let mut facts = FactSet::new();
        for &(x, y) in &pairs {
            facts.add("in", vec![Value::Number(x), Value::Number(y)], "f");
        }
        let eq = rows(&program, &facts, "eq");
        let mut distinct: Vec<(i32, i32)> = pairs.clone();
        distinct.sort_unstable();
        distinct.dedup();
        let expected: Vec<String> = {
            let mut v: Vec<String> = distinct
                .iter()
                .map(|(x, y)| format!("{x} | {y} | {x} | {y}"))
                .collect();
            v.sort();
            v
        };
        prop_assert_eq!(eq, expected);
        let model = program.materialise(&facts, &Limits::default()).unwrap();
        let mut request = FactSet::new();
        for &(x, y) in &asked {
            request.add("ask", vec![Value::Number(x), Value::Number(y)], "request");
        }
        let answer = model.query(&request, &Limits::default()).unwrap();
        let mut want: Vec<String> = asked
            .iter()
            .filter(|p| distinct.contains(p))
            .map(|(x, y)| format!("{x} | {y}"))
            .collect();
        want.sort();
        want.dedup();
        prop_assert_eq!(text(&answer.relation("found").unwrap()), want);
    }
}

#[test]
fn a_record_nested_past_the_limit_stops_the_evaluation_instead_of_the_stack() {
    // A list built by rules 100,000 deep once overflowed the stack writing it out.
    let program = |n: u32| {
        compile(&format!(
            ".type List = [head: number, tail: List]\n.decl l(x: List, n: number)\nl(nil, 0).\nl([n, r], n + 1) :- l(r, n), n < {n}.\n.output l\n"
        ))
    };
    let deep = program(100_000);
    for result in [
        deep.evaluate(&FactSet::new(), &Limits::default()).err(),
        deep.materialise(&FactSet::new(), &Limits::default()).err(),
    ] {
        let err = result.expect("refused");
        assert_eq!(
            err.to_string(),
            "a record nested more than 1000 deep (records and branches nest at most that deep)"
        );
    }
    // At the limit, every evaluator reads and writes it (on a test thread's stack).
    let ok = program(1000);
    let quick = ok.evaluate(&FactSet::new(), &Limits::default()).unwrap();
    assert_eq!(quick.relation("l").unwrap().len(), 1001);
    let model = ok.materialise(&FactSet::new(), &Limits::default()).unwrap();
    assert_eq!(model.relation("l").unwrap().len(), 1001);
    assert!(model.outputs().to_text("l", "\t").len() > 3_000_000);
    // A facts file's line nested past it is refused, not read down to the stack's end.
    let rel = &ok.ir().relations[0];
    let line = format!("{}nil{}\t1\n", "[1, ".repeat(100_000), "]".repeat(100_000));
    let err = tsv::parse_facts(
        &line,
        "l.facts",
        rel,
        "\t",
        &ok.ir().records,
        &mut FactSet::new(),
    )
    .unwrap_err();
    assert!(err.message.contains("nested at most 1000 deep"), "{err}");
}
