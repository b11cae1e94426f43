#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Relations wider than sixteen columns (up to 32): evaluated the same by the staged
//! evaluator, the one-pass evaluator and the naive oracle; their facts explained with proofs
//! the independent checker accepts; and a 33rd column refused with a clear error.

use tollgate_engine::proof_check::check_proof;
use tollgate_engine::{Fact, FactSet, Limits, Program, Source, Value, naive};

fn program(width: usize) -> Result<Program, Vec<tollgate_engine::Diagnostic>> {
    let cols: Vec<String> = (1..=width).map(|i| format!("c{i}: number")).collect();
    let vars: Vec<String> = (1..=width).map(|i| format!("v{i}")).collect();
    let shifted: Vec<String> = vars[1..].iter().chain(&vars[..1]).cloned().collect();
    let text = format!(
        ".decl row({cols})\n.decl rot({cols})\n.decl both(a: number, b: number)\n\
         rot({shifted}) :- row({vars}).\n\
         rot({shifted}) :- rot({vars}), v1 < 3.\n\
         both(v1, w) :- row({vars}), rot(v2, {rest}, w).\n",
        cols = cols.join(", "),
        vars = vars.join(", "),
        shifted = shifted.join(", "),
        rest = vec!["_"; width - 2].join(", "),
    );
    Program::compile(&Source::new("wide.dl", text))
}

#[test]
fn twenty_five_columns_evaluate_alike_everywhere_and_explain_checked_proofs() {
    let program = program(25).unwrap();
    let mut facts = FactSet::new();
    facts.add("row", (1..=25).map(Value::Number).collect(), "rows");
    let model = program.materialise(&facts, &Limits::default()).unwrap();
    let quick = program.evaluate(&facts, &Limits::default()).unwrap();
    let oracle = naive::evaluate(program.ir(), &facts).rows(program.ir());
    for rel in ["rot", "both"] {
        let rows = model.relation(rel).unwrap();
        assert!(!rows.is_empty(), "{rel}");
        assert_eq!(rows, quick.relation(rel).unwrap(), "{rel}");
        let mut a: Vec<String> = rows.iter().map(|r| format!("{r:?}")).collect();
        let mut b: Vec<String> = oracle[rel].iter().map(|r| format!("{r:?}")).collect();
        a.sort();
        b.sort();
        assert_eq!(a, b, "{rel} (naive)");
    }
    // Rotated once from the row (first column 2), then once more (first column 3).
    assert_eq!(model.relation("rot").unwrap().len(), 2);
    assert_eq!(
        model.relation("both").unwrap(),
        [vec![Value::Number(1), Value::Number(1)]]
    );
    let first = &model.relation("rot").unwrap()[0];
    let fact = Fact::new("rot", first.clone());
    let proof = model.prove(&fact).unwrap();
    check_proof(&program, &facts, &proof).unwrap();
}

#[test]
fn a_thirty_third_column_is_refused_with_the_limit() {
    assert!(program(32).is_ok());
    let errors = program(33).unwrap_err();
    assert_eq!(errors[0].code, "E-arity");
    assert_eq!(
        errors[0].message,
        "relation `row` has 33 columns; at most 32 are supported"
    );
}
