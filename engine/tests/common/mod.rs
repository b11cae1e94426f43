//! What several language tests share.

use tollgate_engine::proof_check::check_proof;
use tollgate_engine::{Fact, FactSet, Limits, Program, Value, naive};

/// The rows of `rel` after evaluating `program` over `facts`, asserting that the staged
/// (materialised) evaluation, the one-pass evaluation and the naive oracle agree, and that
/// every row's proof checks.
pub fn agreeing_rows(program: &Program, facts: &FactSet, rel: &str) -> Vec<Vec<Value>> {
    let model = program.materialise(facts, &Limits::default()).unwrap();
    let staged = model.relation(rel).unwrap();
    let evaluated = program
        .evaluate(facts, &Limits::default())
        .unwrap()
        .relation(rel)
        .unwrap();
    let oracle = naive::evaluate(program.ir(), facts).rows(program.ir())[rel].clone();
    assert_eq!(staged, evaluated, "{rel}: staged and one-pass evaluation");
    assert_eq!(
        staged, oracle,
        "{rel}: staged evaluation and the naive oracle"
    );
    for row in &staged {
        let proof = model.prove(&Fact::new(rel, row.clone())).unwrap();
        check_proof(program, facts, &proof).unwrap();
    }
    staged
}
