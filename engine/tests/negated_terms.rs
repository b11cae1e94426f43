#![allow(clippy::unwrap_used, clippy::expect_used)]
//! `!` before any term (Soufflé's `RuleBody::negated`): the rewritten rules give the same
//! relations in every evaluator and the naive oracle, with checked proofs, and each equals the
//! relation written out by hand without the `!( .. )`.

use tollgate_engine::proof_check::check_proof;
use tollgate_engine::{Fact, FactSet, Limits, Program, Source, Value, naive};

fn rows(program: &Program, rel: &str) -> Vec<Vec<Value>> {
    let facts = FactSet::new();
    let model = program.materialise(&facts, &Limits::default()).unwrap();
    let staged = model.relation(rel).unwrap();
    let evaluated = program
        .evaluate(&facts, &Limits::default())
        .unwrap()
        .relation(rel)
        .unwrap();
    let oracle = naive::evaluate(program.ir(), &facts).rows(program.ir())[rel].clone();
    assert_eq!(staged, evaluated, "{rel}");
    assert_eq!(staged, oracle, "{rel}");
    for row in &staged {
        let proof = model.prove(&Fact::new(rel, row.clone())).unwrap();
        check_proof(program, &facts, &proof).unwrap();
    }
    staged
}

const FACTS: &str = ".decl n(x: number)\nn(1). n(2). n(3). n(4).\n.decl even(x: number)\neven(2). even(4).\n.decl r(x: number)\n";

#[test]
fn negated_terms_equal_their_rules_written_out() {
    let pairs = [
        ("r(x) :- n(x), !(x < 3).", "r(x) :- n(x), x >= 3."),
        (
            "r(x) :- n(x), !(even(x) ; x = 3).",
            "r(x) :- n(x), !even(x), x != 3.",
        ),
        (
            "r(x) :- n(x), !(even(x), x > 2).",
            "r(x) :- n(x), !even(x).\nr(x) :- n(x), x <= 2.",
        ),
        (
            "r(x) :- n(x), !!even(x), !x = 4.",
            "r(x) :- n(x), even(x), x != 4.",
        ),
        (
            "r(x) :- n(x), !(even(x), !(x = 2 ; x = 3)).",
            "r(x) :- n(x), !even(x).\nr(x) :- n(x), x = 2.\nr(x) :- n(x), x = 3.",
        ),
        ("r(x) :- n(x), !(!false).", "r(x) :- n(x), false."),
    ];
    for (negated, written) in pairs {
        let a = Program::compile(&Source::new("a.dl", format!("{FACTS}{negated}\n"))).unwrap();
        let b = Program::compile(&Source::new("b.dl", format!("{FACTS}{written}\n"))).unwrap();
        assert_eq!(rows(&a, "r"), rows(&b, "r"), "{negated}");
    }
}

#[test]
fn a_negated_body_whose_atom_binds_nothing_is_refused_as_unsafe() {
    // `!(n(y), y = x)` is `!n(y) ; y != x`: `y` is bound by nothing outside the negation.
    let text = format!("{FACTS}r(x) :- n(x), !(n(y), y = x).\n");
    let errors = Program::compile(&Source::new("u.dl", &text)).unwrap_err();
    assert!(
        errors.iter().any(|e| e.code == "E-unbound"),
        "{:?}",
        errors.iter().map(|e| &e.message).collect::<Vec<_>>()
    );
}
