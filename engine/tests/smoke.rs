use tollgate_engine::{FactSet, Limits, Program, Value, diag::Source};

#[test]
fn tc() {
    let src = Source::new(
        "tc.dl",
        r#"
        .decl edge(x: symbol, y: symbol)
        .decl path(x: symbol, y: symbol)
        .output path
        path(x, y) :- edge(x, y).
        path(x, z) :- path(x, y), edge(y, z).
    "#,
    );
    let program = Program::compile(&src).unwrap();
    println!("{}", program.ir().dump());
    println!("{}", program.plan_dump());
    let mut facts = FactSet::new();
    facts.add("edge", vec![Value::sym("a"), Value::sym("b")], "test");
    facts.add("edge", vec![Value::sym("b"), Value::sym("c")], "test");
    facts.add("edge", vec![Value::sym("c"), Value::sym("d")], "test");
    let model = program.materialise(&facts, &Limits::default()).unwrap();
    let rows = model.relation("path").unwrap();
    println!("{rows:?}");
    assert_eq!(rows.len(), 6);
    let f = tollgate_engine::Fact::parse(r#"path("a", "d")"#).unwrap();
    let p = model.prove(&f).unwrap();
    println!("{}", p.to_text());
    tollgate_engine::proof_check::check_proof(&program, &facts, &p).unwrap();
    let f = tollgate_engine::Fact::parse(r#"path("d", "a")"#).unwrap();
    println!("{}", model.why_not(&f).unwrap().to_text());
    let mut req = FactSet::new();
    req.add("edge", vec![Value::sym("d"), Value::sym("e")], "request");
    let ans = model.query(&req, &Limits::default()).unwrap();
    let rows = ans.relation("path").unwrap();
    println!("{rows:?}");
    assert_eq!(rows.len(), 10);
    let f = tollgate_engine::Fact::parse(r#"path("a", "e")"#).unwrap();
    let p = ans.prove(&f).unwrap();
    println!("{}", p.to_text());
}
