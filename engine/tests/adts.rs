#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Algebraic data types (issue 40), as Soufflé has them: `.type T = A {..} | B {}`, branches
//! built with `$A(..)` (`$B` and `$B()` one value), taken apart by patterns (a branch of another
//! name matches nothing), `=`/`!=` by branch and fields, recursive types. Every evaluator
//! agrees, every derived fact's proof checks, a staged query builds the values the model holds,
//! and what Soufflé refuses is refused.

mod common;

use proptest::prelude::*;
use tollgate_engine::proof_check::check_proof;
use tollgate_engine::tsv;
use tollgate_engine::{Fact, FactSet, Limits, Program, Source, Value};

fn compile(text: &str) -> Program {
    Program::compile(&Source::new("adts.dl", text))
        .map_err(|d| d.iter().map(|d| d.message.clone()).collect::<Vec<_>>())
        .unwrap()
}

fn first_error(text: &str) -> (String, String) {
    let diags = Program::compile(&Source::new("adts.dl", text)).expect_err("refused");
    let d = diags.iter().find(|d| d.is_error()).unwrap();
    (d.code.to_string(), d.message.clone())
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

const EXPRS: &str = r#"
.type Expr = Num {n: number} | Add {a: Expr, b: Expr} | Neg {e: Expr} | Unit {}
.decl term(e: Expr)
term($Add($Num(1), $Neg($Num(2)))).
term($Add($Unit(), $Num(5))).
term($Neg($Neg($Num(3)))).
.decl sub(e: Expr)
sub(e) :- term(e).
sub(a) :- sub($Add(a, _)).
sub(b) :- sub($Add(_, b)).
sub(e) :- sub($Neg(e)).
.decl eval(e: Expr, v: number)
eval($Num(n), n) :- sub($Num(n)).
eval($Unit, 0) :- sub($Unit).
eval(e, -v) :- sub(e), e = $Neg(x), eval(x, v).
eval(e, x + y) :- sub(e), e = $Add(a, b), eval(a, x), eval(b, y).
.decl adds(e: Expr)
adds(e) :- sub(e), e = $Add(_, _).
.decl not_num(e: Expr)
not_num(e) :- sub(e), e != $Num(1), e != $Num(2), e != $Num(3), e != $Num(5).
"#;

#[test]
fn expressions_are_built_taken_apart_and_evaluated() {
    let program = compile(EXPRS);
    let facts = FactSet::new();
    assert_eq!(
        rows(&program, &facts, "eval"),
        [
            "$Add($Num(1), $Neg($Num(2))) | -1",
            "$Add($Unit, $Num(5)) | 5",
            "$Neg($Neg($Num(3))) | 3",
            "$Neg($Num(2)) | -2",
            "$Neg($Num(3)) | -3",
            "$Num(1) | 1",
            "$Num(2) | 2",
            "$Num(3) | 3",
            "$Num(5) | 5",
            "$Unit | 0"
        ]
    );
    // `$Add(_, _)` matches only additions.
    assert_eq!(rows(&program, &facts, "adds").len(), 2);
    assert_eq!(rows(&program, &facts, "not_num").len(), 6);
    let model = program.materialise(&facts, &Limits::default()).unwrap();
    let mut proved = 0;
    for rel in ["sub", "eval", "adds", "not_num"] {
        for values in model.relation(rel).unwrap() {
            let fact = Fact {
                relation: rel.into(),
                values,
            };
            check_proof(&program, &facts, &model.prove(&fact).unwrap()).unwrap();
            proved += 1;
        }
    }
    assert_eq!(proved, 28);
    // A fact as text names branches as written; `$Unit` and `$Unit()` are one value.
    let unit = Fact::parse("eval($Add($Unit(), $Num(5)), 5)").unwrap();
    assert!(model.contains(&unit));
    let why = model
        .why_not(&Fact::parse("eval($Num(4), 4)").unwrap())
        .unwrap();
    // The pattern `sub($Num(n))` reads its field as `$1[$Num:0]`; no `sub` has `$Num(4)`.
    let shown = format!("{why:?}");
    assert!(
        shown.contains("`n = $1[$Num:0]` does not hold with n = 4"),
        "{shown}"
    );
}

#[test]
fn a_staged_query_builds_the_values_the_model_holds() {
    let program = compile(
        r#"
        .type Opt = None {} | Some {v: number}
        .decl known(o: Opt)
        known($Some(1)).
        known($None).
        .decl ask(v: number)
        .decl hit(v: number)
        hit(v) :- ask(v), known($Some(v)).
        .decl made(o: Opt)
        made($Some(v)) :- ask(v).
        "#,
    );
    let model = program
        .materialise(&FactSet::new(), &Limits::default())
        .unwrap();
    let mut request = FactSet::new();
    request.add("ask", vec![Value::Number(1)], "request");
    request.add("ask", vec![Value::Number(2)], "request");
    let answer = model.query(&request, &Limits::default()).unwrap();
    assert_eq!(text(&answer.relation("hit").unwrap()), ["1"]);
    assert_eq!(
        text(&answer.relation("made").unwrap()),
        ["$Some(1)", "$Some(2)"]
    );
    let proof = answer
        .prove(&Fact::parse("made($Some(2))").unwrap())
        .unwrap();
    check_proof(&program, &request, &proof).unwrap();
    assert!(!model.contains(&Fact::parse("known($Some(2))").unwrap()));
    // A branch no type has is not a value of the column.
    assert!(!model.contains(&Fact::parse("known($Other(1))").unwrap()));
}

#[test]
fn branches_in_facts_files_read_as_soufflé_writes_them() {
    let program = compile(
        ".type Opt = None {} | Some {v: number, l: symbol}\n.decl e(k: symbol, o: Opt)\n.output e\n",
    );
    let rel = &program.ir().relations[program.ir().relation("e").unwrap()];
    let records = &program.ir().records;
    let mut facts = FactSet::new();
    let input = "a\t$Some(1, one)\nb\t$None\nc\t$Some( -7 , \"x, y)\")\n";
    tsv::parse_facts(input, "e.facts", rel, "\t", records, &mut facts).unwrap();
    let model = program.materialise(&facts, &Limits::default()).unwrap();
    assert_eq!(
        model.outputs().to_text("e", "\t"),
        "a\t$Some(1, one)\nb\t$None\nc\t$Some(-7, x, y))\n"
    );
    for bad in [
        "a\t$Some(1)",
        "a\t$Maybe(1, x)",
        "a\tnil",
        "a\t[1, x]",
        "a\t$Some(1, x) y",
    ] {
        let err =
            tsv::parse_facts(bad, "e.facts", rel, "\t", records, &mut FactSet::new()).unwrap_err();
        assert_eq!((err.line, err.column), (1, 2), "{bad}");
        assert!(err.message.contains("`$Name(1, a)`"), "{err}");
    }
}

#[test]
fn what_soufflé_refuses_about_branches_is_refused() {
    let decls = ".type T = A {x: number} | B {}\n.type R = [x: number]\n.decl t(v: T)\n.decl r(v: R)\n.decl n(x: number)\n";
    let case = |body: &str| first_error(&format!("{decls}{body}"));
    assert_eq!(case("t($C(1)).").1, "`$C` is not a branch of `T`");
    assert_eq!(case("n(1) :- t($C(1)).").1, "unknown branch `$C`");
    assert_eq!(
        case("n(1) :- t($A(1, 2)).").1,
        "`$A` takes 1 field(s), 2 given"
    );
    assert_eq!(case("t(nil).").0, "E-fact");
    assert_eq!(
        case("n(1) :- t(v), v = nil.").1,
        "`nil` where a `T` is expected"
    );
    assert_eq!(
        case("n(1) :- r(v), v = $B.").1,
        "`$B` is a `T` but `R` is expected here"
    );
    assert_eq!(
        case("n(1) :- t(v), v = [1].").1,
        "a record where the algebraic data type `T` is expected"
    );
    assert_eq!(
        case("n(1) :- t(v), w = $A(1), v < w.").1,
        "records are compared only with `=` and `!=`, not `<`"
    );
    assert_eq!(case("n(x) :- t(v), v = $A(x), x = \"a\".").0, "E-type");
    assert_eq!(
        first_error(".type T = A {} | B {}\n.type U = B {x: number}\n").1,
        "branch `B` is declared twice"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    /// Branch values are equal exactly when their branch and fields are.
    #[test]
    fn branch_values_are_equal_exactly_when_branch_and_fields_are(
        items in prop::collection::vec((any::<bool>(), 0i32..3), 0..8),
    ) {
        let program = compile(
            r#"
            .type O = None {} | Some {v: number}
            .decl in(i: number, some: number, v: number)
            .decl val(i: number, o: O)
            val(i, $Some(v)) :- in(i, 1, v).
            val(i, $None) :- in(i, 0, _).
            .decl eq(i: number, j: number)
            eq(i, j) :- val(i, o), val(j, p), o = p.
            "#,
        );
        let mut facts = FactSet::new();
        for (i, &(some, v)) in items.iter().enumerate() {
            let i = i32::try_from(i).unwrap();
            facts.add(
                "in",
                vec![Value::Number(i), Value::Number(i32::from(some)), Value::Number(v)],
                "f",
            );
        }
        let key = |&(some, v): &(bool, i32)| if some { Some(v) } else { None };
        let mut want = Vec::new();
        for (i, a) in items.iter().enumerate() {
            for (j, b) in items.iter().enumerate() {
                if key(a) == key(b) {
                    want.push(format!("{i} | {j}"));
                }
            }
        }
        want.sort();
        prop_assert_eq!(rows(&program, &facts, "eq"), want);
    }
}
