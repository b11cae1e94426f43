#![allow(clippy::unwrap_used, clippy::expect_used)]
//! User-defined functors: `.functor` declares, `@f(...)` calls, the host registers a Rust
//! implementation; every evaluator and proof use it; a call without one is refused when the
//! program is checked, with the declaration's types enforced.

use tollgate_engine::functors::Functors;
use tollgate_engine::proof_check::check_proof;
use tollgate_engine::{Fact, FactSet, Limits, Program, Source, Value, naive};

const PROGRAM: &str = r#"
.functor double(x: number): number
.functor shout(symbol): symbol
.functor half(x: number): number
.decl n(x: number)
.decl out(x: number, y: number, s: symbol)
n(1). n(2). n(7).
// @id out
out(x, @double(x) + 1, @shout(cat("n", to_string(x)))) :- n(x), @half(x) * 2 = x.
"#;

fn registry() -> Functors {
    let mut f = Functors::new();
    f.register("double", |args| match args {
        [Value::Number(n)] => n.checked_mul(2).map(Value::Number),
        _ => None,
    })
    .register("shout", |args| match args {
        [Value::Symbol(s)] => Some(Value::sym(s.to_uppercase())),
        _ => None,
    })
    // Only even numbers have a half; a value of the wrong type counts as none.
    .register("half", |args| match args {
        [Value::Number(n)] if n % 2 == 0 => Some(Value::Number(n / 2)),
        [Value::Number(_)] => Some(Value::sym("odd")),
        _ => None,
    });
    f
}

#[test]
fn registered_functors_run_in_every_evaluator_and_in_checked_proofs() {
    let program = Program::compile_with(&Source::new("f.dl", PROGRAM), &registry()).unwrap();
    let facts = FactSet::new();
    let model = program.materialise(&facts, &Limits::default()).unwrap();
    let want = vec![vec![Value::Number(2), Value::Number(5), Value::sym("N2")]];
    assert_eq!(model.relation("out").unwrap(), want);
    assert_eq!(
        program
            .evaluate(&facts, &Limits::default())
            .unwrap()
            .relation("out")
            .unwrap(),
        want
    );
    assert_eq!(
        naive::evaluate(program.ir(), &facts).rows(program.ir())["out"],
        want
    );
    let proof = model
        .prove(&Fact::parse(r#"out(2, 5, "N2")"#).unwrap())
        .unwrap();
    check_proof(&program, &facts, &proof).unwrap();
    let why = model
        .why_not(&Fact::parse(r#"out(7, 15, "N7")"#).unwrap())
        .unwrap();
    assert!(why.to_text().contains("@half(x)"), "{}", why.to_text());
}

#[test]
fn calls_without_a_declaration_or_an_implementation_are_refused() {
    let src = Source::new("f.dl", PROGRAM);
    let errors = Program::compile(&src).unwrap_err();
    assert_eq!(errors[0].code, "E-functor");
    assert_eq!(errors[0].message, "functor `@half` has no implementation");

    let src = Source::new("f.dl", ".decl r(x: number)\nr(y) :- r(x), y = @nope(x).\n");
    let errors = Program::compile_with(&src, &registry()).unwrap_err();
    assert_eq!(errors[0].message, "functor `@nope` is not declared");

    let src = Source::new(
        "f.dl",
        ".functor double(x: number): number\n.decl r(x: symbol)\nr(y) :- r(x), y = @double(x).\n",
    );
    let errors = Program::compile_with(&src, &registry()).unwrap_err();
    assert_eq!(errors[0].code, "E-type");

    let src = Source::new(
        "f.dl",
        ".functor double(x: number): number\n.decl r(x: number)\nr(y) :- r(x), y = @double(x, x).\n",
    );
    let errors = Program::compile_with(&src, &registry()).unwrap_err();
    assert_eq!(errors[0].message, "`@double` takes 1 argument(s), 2 given");
}

/// `as(x, T)` keeps the bits and changes the type, alike in every evaluator; reading a symbol
/// as a number (its place in Soufflé's symbol table) is refused.
#[test]
fn as_reads_the_same_bits_as_another_type() {
    let text = ".decl n(x: number)\nn(-1).\nn(1069547520).\n.decl v(u: unsigned, f: float)\nv(as(x, unsigned), as(x, float)) :- n(x).\n";
    let program = Program::compile(&Source::new("as.dl", text)).unwrap();
    let facts = FactSet::new();
    let want = vec![
        vec![Value::Unsigned(1_069_547_520), Value::Float(1.5)],
        vec![
            Value::Unsigned(u32::MAX),
            Value::Float(f32::from_bits(u32::MAX)),
        ],
    ];
    let rows = |rows: Vec<Vec<Value>>| -> Vec<String> {
        let mut v: Vec<String> = rows.iter().map(|r| format!("{r:?}")).collect();
        v.sort();
        v
    };
    let model = program.materialise(&facts, &Limits::default()).unwrap();
    assert_eq!(rows(model.relation("v").unwrap()), rows(want.clone()));
    let oracle = naive::evaluate(program.ir(), &facts).rows(program.ir());
    assert_eq!(rows(oracle["v"].clone()), rows(want));

    let src = Source::new(
        "as.dl",
        ".decl s(x: symbol)\n.decl n(x: number)\nn(as(x, number)) :- s(x).\n",
    );
    let errors = Program::compile(&src).unwrap_err();
    assert_eq!(errors[0].code, "E-type");
    assert_eq!(
        errors[0].message,
        "`as` cannot read a `symbol` as a `number`"
    );
}

/// Found by the `rules` fuzz target on the `as_cast` fixture: the naive evaluator (which the
/// proof checker uses) read `as(s, symbol)` of a symbol through a number slot, so the proof of
/// a fact made with it did not check.
#[test]
fn as_of_a_symbol_keeps_it_in_checked_proofs() {
    let text = ".type Label <: symbol\n.decl r(w: Label)\nr(\"garden\").\n.decl plain(s: symbol)\nplain(as(w, symbol)) :- r(w).\n";
    let program = Program::compile(&Source::new("as.dl", text)).unwrap();
    let facts = FactSet::new();
    let model = program.materialise(&facts, &Limits::default()).unwrap();
    let fact = Fact::parse(r#"plain("garden")"#).unwrap();
    let proof = model.prove(&fact).unwrap();
    check_proof(&program, &facts, &proof).unwrap();
    let oracle = naive::evaluate(program.ir(), &facts).rows(program.ir());
    assert_eq!(oracle["plain"], [vec![Value::sym("garden")]]);
}
