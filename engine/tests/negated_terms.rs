#![allow(clippy::unwrap_used, clippy::expect_used)]
//! `!` before any term (Soufflé's `RuleBody::negated`): the rewritten rules give the same
//! relations in every evaluator and the naive oracle, with checked proofs, and each equals the
//! relation written out by hand without the `!( .. )`.

mod common;

use tollgate_engine::{FactSet, Program, Source};

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
        assert_eq!(
            common::agreeing_rows(&a, &FactSet::new(), "r"),
            common::agreeing_rows(&b, &FactSet::new(), "r"),
            "{negated}"
        );
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
