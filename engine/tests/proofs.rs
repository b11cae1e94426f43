#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Proofs and why-not: deterministic, well-founded, named by `// @id`, recording absent negated
//! atoms, checked by the independent checker, which rejects tampered proofs with a reason.

use std::sync::Arc;

use serde_json::{Value as Json, json};
use tollgate_engine::explain::{ExplainError, ProofStep};
use tollgate_engine::proof_check::{ProofChecker, ProofError, check_proof};
use tollgate_engine::{Fact, FactSet, Limits, Model, Program, Proof, Source, Value};

/// The clauses of the fixture program, each with its `// @id` line; reordered by some tests.
const CLAUSES: &[&str] = &[
    "// @id tc.base\npath(x, y) :- edge(x, y).",
    "// @id tc.step\npath(x, z) :- path(x, y), edge(y, z).",
    "// @id open\nopen(x, y) :- path(x, y), !blocked(y).",
    "// @id sink\nsink(y) :- edge(_, y), !edge(y, _).",
    "// @id deg\ndeg(x, n) :- edge(x, _), n = count : { edge(x, _) }.",
    "// @id hub\nhub(x), busy(x) :- deg(x, n), n > 1 ; blocked(x).",
    "reach(y) :- path(\"a\", y).",
    "blocked(\"c\").",
];

const DECLS: &str = "\
.decl edge(x: symbol, y: symbol)
.decl path(x: symbol, y: symbol)
.decl blocked(x: symbol)
.decl open(x: symbol, y: symbol)
.decl sink(x: symbol)
.decl deg(x: symbol, n: number)
.decl hub(x: symbol)
.decl busy(x: symbol)
.decl reach(x: symbol)
";

/// A diamond with a tail: `path("a", "d")` has two derivations.
const DIAMOND: &[&str] = &[
    r#"edge("a", "b")"#,
    r#"edge("a", "c")"#,
    r#"edge("b", "d")"#,
    r#"edge("c", "d")"#,
    r#"edge("d", "e")"#,
];

fn program_with(order: &[usize]) -> Program {
    let mut text = DECLS.to_string();
    for &i in order {
        text.push_str(CLAUSES[i]);
        text.push('\n');
    }
    Program::compile(&Source::new("access.dl", text)).unwrap()
}

fn program() -> Program {
    program_with(&(0..CLAUSES.len()).collect::<Vec<_>>())
}

/// Facts in the given order; each keeps the origin of its position in `lines`.
fn facts_in(lines: &[&str], order: &[usize]) -> FactSet {
    let mut set = FactSet::new();
    for &i in order {
        let origin = format!("edges.facts:{}", i + 1);
        set.push(Fact::parse(lines[i]).unwrap(), Arc::from(origin));
    }
    set
}

fn facts(lines: &[&str]) -> FactSet {
    facts_in(lines, &(0..lines.len()).collect::<Vec<_>>())
}

fn fact(text: &str) -> Fact {
    Fact::parse(text).unwrap()
}

fn diamond() -> (Program, FactSet, Model) {
    let program = program();
    let input = facts(DIAMOND);
    let model = program.materialise(&input, &Limits::default()).unwrap();
    (program, input, model)
}

/// Every fact of every relation of a model.
fn every_fact(model: &Model) -> Vec<Fact> {
    let mut out = Vec::new();
    for rel in &model.program().ir().relations {
        for row in model.relation(&rel.name).unwrap() {
            out.push(Fact::new(rel.name.clone(), row));
        }
    }
    out
}

// ---- shape ----------------------------------------------------------------------------------

#[test]
fn proofs_name_rules_by_id_with_lines_and_bindings() {
    let (program, input, model) = diamond();
    let proof = model.prove(&fact(r#"open("a", "e")"#)).unwrap();
    assert_eq!(
        proof.to_text(),
        r#"open("a", "e")  [rule open, line 15 with x = "a", y = "e"]
  path("a", "e")  [rule tc.step, line 13 with x = "a", y = "d", z = "e"]
    path("a", "d")  [rule tc.step, line 13 with x = "a", y = "b", z = "d"]
      path("a", "b")  [rule tc.base, line 11 with x = "a", y = "b"]
        edge("a", "b")  [input: edges.facts:1]
      edge("b", "d")  [input: edges.facts:3]
    edge("d", "e")  [input: edges.facts:5]
  !blocked("e")  [absent]
"#
    );
    assert_eq!(proof.depth(), 5);
    check_proof(&program, &input, &proof).unwrap();
}

#[test]
fn proof_json_format() {
    let (_, _, model) = diamond();
    let proof = model.prove(&fact(r#"sink("e")"#)).unwrap();
    let json = serde_json::to_value(&proof).unwrap();
    assert_eq!(
        json,
        json!({
            "fact": { "relation": "sink", "values": ["e"] },
            "by": "rule",
            "rule": "sink",
            "head": 0,
            "disjunct": 0,
            "line": 17,
            "bindings": { "y": "e" },
            "premises": [{
                "fact": { "relation": "edge", "values": ["d", "e"] },
                "by": "input",
                "origin": "edges.facts:5"
            }],
            "absent": [{ "relation": "edge", "values": ["e", null] }]
        })
    );
    let back: Proof = serde_json::from_value(json).unwrap();
    assert_eq!(back, proof);
}

#[test]
fn proofs_record_absent_negated_atoms() {
    let (_, _, model) = diamond();
    let absent = |f: &str| match model.prove(&fact(f)).unwrap().step {
        ProofStep::Rule { absent, .. } => {
            absent.iter().map(ToString::to_string).collect::<Vec<_>>()
        }
        ProofStep::Input { .. } => panic!("{f} is not derived"),
    };
    assert_eq!(absent(r#"open("a", "d")"#), [r#"blocked("d")"#]);
    assert_eq!(absent(r#"sink("e")"#), [r#"edge("e", _)"#]);
    assert!(absent(r#"path("a", "d")"#).is_empty());
}

#[test]
fn program_facts_are_leaves_with_their_line() {
    let (program, input, model) = diamond();
    let proof = model.prove(&fact(r#"busy("c")"#)).unwrap();
    assert_eq!(
        proof.to_text(),
        "busy(\"c\")  [rule hub, line 21 with x = \"c\"]\n  blocked(\"c\")  [input: program:23]\n"
    );
    check_proof(&program, &input, &proof).unwrap();
}

#[test]
fn several_heads_and_alternatives_are_told_apart() {
    let (program, input, model) = diamond();
    let checker = ProofChecker::new(&program, &input);
    for (f, want_head, want_disjunct) in [
        (r#"hub("a")"#, 0, 0),
        (r#"busy("a")"#, 1, 0),
        (r#"hub("c")"#, 0, 1),
        (r#"busy("c")"#, 1, 1),
    ] {
        let proof = model.prove(&fact(f)).unwrap();
        let ProofStep::Rule {
            rule,
            head,
            disjunct,
            ..
        } = &proof.step
        else {
            panic!("{f} is not derived")
        };
        assert_eq!(
            (&**rule, *head, *disjunct),
            ("hub", want_head, want_disjunct),
            "{f}"
        );
        checker.check(&proof).unwrap();
    }
}

#[test]
fn rules_without_an_id_get_one_from_their_text() {
    let (_, _, model) = diamond();
    let proof = model.prove(&fact(r#"reach("e")"#)).unwrap();
    let ProofStep::Rule { rule, .. } = &proof.step else {
        panic!()
    };
    assert!(rule.starts_with("reach:"), "{rule}");
    // The id depends on the clause's text only, not on where it stands.
    let moved = program_with(&[7, 6, 5, 4, 3, 2, 1, 0]);
    let model = moved
        .materialise(&facts(DIAMOND), &Limits::default())
        .unwrap();
    let ProofStep::Rule { rule: again, .. } = model.prove(&fact(r#"reach("e")"#)).unwrap().step
    else {
        panic!()
    };
    assert_eq!(&again, rule);
}

#[test]
fn aggregates_in_proofs_bind_their_value() {
    let (program, input, model) = diamond();
    let proof = model.prove(&fact(r#"deg("a", 2)"#)).unwrap();
    let ProofStep::Rule { bindings, .. } = &proof.step else {
        panic!()
    };
    assert_eq!(bindings.get("n"), Some(&Value::Number(2)));
    assert_eq!(bindings.get("x"), Some(&Value::sym("a")));
    check_proof(&program, &input, &proof).unwrap();
}

// ---- determinism and well-foundedness -------------------------------------------------------

/// A proof as JSON without what depends on where clauses stand: lines.
fn position_free(proof: &Proof) -> Json {
    fn strip(j: &mut Json) {
        match j {
            Json::Object(map) => {
                map.remove("line");
                if let Some(Json::String(o)) = map.get_mut("origin")
                    && o.starts_with("program:")
                {
                    *o = "program".into();
                }
                map.values_mut().for_each(strip);
            }
            Json::Array(items) => items.iter_mut().for_each(strip),
            _ => {}
        }
    }
    let mut j = serde_json::to_value(proof).unwrap();
    strip(&mut j);
    j
}

#[test]
fn proofs_do_not_depend_on_fact_order() {
    let (_, _, model) = diamond();
    let n = DIAMOND.len();
    let orders: Vec<Vec<usize>> = vec![
        (0..n).rev().collect(),
        (0..n).map(|i| (i + 2) % n).collect(),
        vec![3, 0, 4, 2, 1],
    ];
    for order in orders {
        let other = program()
            .materialise(&facts_in(DIAMOND, &order), &Limits::default())
            .unwrap();
        for f in every_fact(&model) {
            let a = serde_json::to_value(model.prove(&f).unwrap()).unwrap();
            let b = serde_json::to_value(other.prove(&f).unwrap()).unwrap();
            assert_eq!(a, b, "{f} with facts in order {order:?}");
        }
    }
}

#[test]
fn proofs_do_not_depend_on_rule_order() {
    let (_, _, model) = diamond();
    let n = CLAUSES.len();
    let orders: Vec<Vec<usize>> = vec![
        (0..n).rev().collect(),
        (0..n).map(|i| (i + 3) % n).collect(),
        vec![1, 4, 7, 0, 2, 6, 5, 3],
    ];
    for order in orders {
        let other = program_with(&order)
            .materialise(&facts(DIAMOND), &Limits::default())
            .unwrap();
        for f in every_fact(&model) {
            let a = position_free(&model.prove(&f).unwrap());
            let b = position_free(&other.prove(&f).unwrap());
            assert_eq!(a, b, "{f} with clauses in order {order:?}");
        }
    }
}

fn assert_well_founded(p: &Proof, ancestors: &mut Vec<Fact>) {
    assert!(
        !ancestors.contains(&p.fact),
        "{} is among its own ancestors",
        p.fact
    );
    if let ProofStep::Rule { premises, .. } = &p.step {
        ancestors.push(p.fact.clone());
        premises
            .iter()
            .for_each(|q| assert_well_founded(q, ancestors));
        ancestors.pop();
    }
}

#[test]
fn proofs_through_cycles_are_well_founded() {
    let program = program();
    let lines = [
        r#"edge("a", "b")"#,
        r#"edge("b", "c")"#,
        r#"edge("c", "a")"#,
        r#"edge("c", "d")"#,
    ];
    let input = facts(&lines);
    let model = program.materialise(&input, &Limits::default()).unwrap();
    let checker = ProofChecker::new(&program, &input);
    let all = every_fact(&model);
    assert_eq!(all.iter().filter(|f| f.relation == "path").count(), 12);
    for f in all {
        let proof = model.prove(&f).unwrap();
        assert_well_founded(&proof, &mut Vec::new());
        checker.check(&proof).unwrap();
    }
}

#[test]
fn the_checker_rejects_a_fact_used_to_prove_itself() {
    let program = program();
    let input = facts(&[r#"edge("a", "b")"#, r#"edge("b", "a")"#]);
    let model = program.materialise(&input, &Limits::default()).unwrap();
    let base = model.prove(&fact(r#"path("a", "b")"#)).unwrap();
    let edge = |a: &str, b: &str, line: usize| Proof {
        fact: Fact::new("edge", vec![Value::sym(a), Value::sym(b)]),
        step: ProofStep::Input {
            origin: format!("edges.facts:{line}").into(),
        },
    };
    let step = |x: &str, y: &str, z: &str, premises: Vec<Proof>| Proof {
        fact: Fact::new("path", vec![Value::sym(x), Value::sym(z)]),
        step: ProofStep::Rule {
            rule: "tc.step".into(),
            head: 0,
            disjunct: 0,
            line: 13,
            bindings: [("x", x), ("y", y), ("z", z)]
                .into_iter()
                .map(|(k, v)| (k.into(), Value::sym(v)))
                .collect(),
            premises: premises.into_iter().map(Arc::new).collect(),
            absent: Vec::new(),
        },
    };
    // path(a, b) <- path(a, a) <- path(a, b): every step is an instance of its rule, but the
    // tree is not well-founded.
    let loop_ab = step(
        "a",
        "a",
        "b",
        vec![
            step("a", "b", "a", vec![base, edge("b", "a", 2)]),
            edge("a", "b", 1),
        ],
    );
    assert_eq!(
        check_proof(&program, &input, &loop_ab),
        Err(ProofError {
            fact: r#"path("a", "b")"#.into(),
            reason: "the fact is used to prove itself".into()
        })
    );
}

// ---- tampering ------------------------------------------------------------------------------

/// Applies `edit` to the JSON of the proof of `of` and returns the checker's verdict.
fn tampered(of: &str, edit: impl FnOnce(&mut Json)) -> Result<(), ProofError> {
    let (program, input, model) = diamond();
    let mut j = serde_json::to_value(model.prove(&fact(of)).unwrap()).unwrap();
    edit(&mut j);
    let proof: Proof = serde_json::from_value(j).unwrap();
    check_proof(&program, &input, &proof)
}

fn rejected(fact: &str, reason: &str) -> Result<(), ProofError> {
    Err(ProofError {
        fact: fact.into(),
        reason: reason.into(),
    })
}

fn at<'j>(j: &'j mut Json, pointer: &str) -> &'j mut Json {
    j.pointer_mut(pointer)
        .unwrap_or_else(|| panic!("no {pointer}"))
}

const PATH_AD: &str = r#"path("a", "d")"#;

#[test]
fn untampered_proofs_check() {
    for f in [
        PATH_AD,
        r#"open("a", "e")"#,
        r#"deg("a", 2)"#,
        r#"sink("e")"#,
    ] {
        assert_eq!(tampered(f, |_| {}), Ok(()), "{f}");
    }
}

#[test]
fn a_forged_origin_is_rejected() {
    let verdict = tampered(PATH_AD, |j| {
        *at(j, "/premises/1/origin") = json!("forged");
    });
    assert_eq!(
        verdict,
        rejected(
            r#"edge("b", "d")"#,
            "not an input fact with origin `forged`"
        )
    );
}

#[test]
fn a_changed_binding_is_rejected() {
    let verdict = tampered(PATH_AD, |j| *at(j, "/bindings/y") = json!("c"));
    assert_eq!(
        verdict,
        rejected(
            PATH_AD,
            r#"premise `path("a", "b")` does not match the rule's atom under the bindings"#
        )
    );
    let verdict = tampered(PATH_AD, |j| *at(j, "/bindings/z") = json!("e"));
    assert_eq!(
        verdict,
        rejected(
            PATH_AD,
            "the head of `tc.step` under these bindings is not this fact (column 1)"
        )
    );
    let verdict = tampered(PATH_AD, |j| *at(j, "/bindings/y") = json!(3));
    assert_eq!(
        verdict,
        rejected(PATH_AD, "variable `y` is `symbol`, bound to `3`")
    );
    let verdict = tampered(PATH_AD, |j| {
        at(j, "/bindings").as_object_mut().unwrap().remove("y");
    });
    assert_eq!(verdict, rejected(PATH_AD, "variable `y` has no binding"));
}

#[test]
fn swapped_missing_and_extra_premises_are_rejected() {
    let verdict = tampered(PATH_AD, |j| {
        at(j, "/premises").as_array_mut().unwrap().swap(0, 1);
    });
    assert_eq!(
        verdict,
        rejected(
            PATH_AD,
            r#"premise `edge("b", "d")` is not an instance of `path`"#
        )
    );
    let verdict = tampered(PATH_AD, |j| {
        at(j, "/premises").as_array_mut().unwrap().pop();
    });
    assert_eq!(
        verdict,
        rejected(PATH_AD, "fewer premises than positive body atoms")
    );
    let verdict = tampered(PATH_AD, |j| {
        let extra = at(j, "/premises/1").clone();
        at(j, "/premises").as_array_mut().unwrap().push(extra);
    });
    assert_eq!(
        verdict,
        rejected(PATH_AD, "more premises than positive body atoms")
    );
}

#[test]
fn a_wrong_rule_is_rejected() {
    let verdict = tampered(PATH_AD, |j| *at(j, "/rule") = json!("nope"));
    assert_eq!(
        verdict,
        rejected(PATH_AD, "no rule `nope` (head 0, alternative 0)")
    );
    let verdict = tampered(PATH_AD, |j| *at(j, "/rule") = json!("open"));
    assert_eq!(verdict, rejected(PATH_AD, "rule `open` derives `open`"));
    let verdict = tampered(PATH_AD, |j| *at(j, "/disjunct") = json!(1));
    assert_eq!(
        verdict,
        rejected(PATH_AD, "no rule `tc.step` (head 0, alternative 1)")
    );
}

#[test]
fn a_dropped_or_false_absence_is_rejected() {
    let open_ae = r#"open("a", "e")"#;
    let verdict = tampered(open_ae, |j| {
        at(j, "/absent").as_array_mut().unwrap().clear();
    });
    assert_eq!(
        verdict,
        rejected(
            open_ae,
            "the negated atom `blocked` is not recorded as absent"
        )
    );
    let verdict = tampered(open_ae, |j| *at(j, "/absent/0/values/0") = json!("d"));
    assert_eq!(
        verdict,
        rejected(
            open_ae,
            "the negated atom `blocked` is not recorded as absent"
        )
    );
    // A proof of `open("a", "c")` built from the proof of `open("a", "e")`: every positive
    // step checks, but `blocked("c")` holds.
    let (program, input, model) = diamond();
    let mut j = serde_json::to_value(model.prove(&fact(open_ae)).unwrap()).unwrap();
    let path_ac = model.prove(&fact(r#"path("a", "c")"#)).unwrap();
    *at(&mut j, "/fact/values/1") = json!("c");
    *at(&mut j, "/bindings/y") = json!("c");
    *at(&mut j, "/premises/0") = serde_json::to_value(&path_ac).unwrap();
    *at(&mut j, "/absent/0/values/0") = json!("c");
    let forged: Proof = serde_json::from_value(j).unwrap();
    assert_eq!(
        check_proof(&program, &input, &forged),
        rejected(
            r#"open("a", "c")"#,
            "`blocked` is present, so `!blocked` fails"
        )
    );
}

#[test]
fn a_wrong_aggregate_value_is_rejected() {
    let deg = r#"deg("a", 2)"#;
    let verdict = tampered(deg, |j| {
        *at(j, "/fact/values/1") = json!(3);
        *at(j, "/bindings/n") = json!(3);
    });
    let reason = "a comparison, functor or aggregate of `deg` does not hold under the bindings \
                  (line 19)";
    assert_eq!(verdict, rejected(r#"deg("a", 3)"#, reason));
}

// ---- why not --------------------------------------------------------------------------------

fn chain() -> Model {
    let lines = [
        r#"edge("a", "b")"#,
        r#"edge("b", "c")"#,
        r#"edge("c", "d")"#,
    ];
    program()
        .materialise(&facts(&lines), &Limits::default())
        .unwrap()
}

#[test]
fn why_not_names_the_first_failing_atom_with_the_bindings_so_far() {
    let model = chain();
    let why = model.why_not(&fact(r#"path("d", "a")"#)).unwrap();
    assert!(!why.is_input);
    let failures: Vec<(&str, Option<usize>, Option<&str>)> = why
        .rules
        .iter()
        .map(|r| (&*r.rule, r.literal_index, r.failed_literal.as_deref()))
        .collect();
    assert_eq!(
        failures,
        [
            ("tc.base", Some(0), Some("edge(x, y)")),
            ("tc.step", Some(0), Some("path(x, y)")),
        ]
    );
    let step = &why.rules[1];
    assert_eq!(step.line, 13);
    assert_eq!(
        step.bindings
            .iter()
            .map(|(k, v)| (&**k, v))
            .collect::<Vec<_>>(),
        [("x", &Value::sym("d")), ("z", &Value::sym("a"))]
    );
    assert_eq!(
        why.to_text(),
        r#"path("d", "a") does not hold
  rule tc.base (line 11): `edge(x, y)` found no match with x = "d", y = "a"
  rule tc.step (line 13): `path(x, y)` found no match with x = "d", z = "a"
"#
    );
}

#[test]
fn why_not_goes_as_deep_as_any_branch_gets() {
    let model = chain();
    let why = model.why_not(&fact(r#"path("a", "zz")"#)).unwrap();
    let step = &why.rules[1];
    assert_eq!(step.literal_index, Some(1));
    assert_eq!(step.failed_literal.as_deref(), Some("edge(y, z)"));
    // Which `y` is shown is the subject of `why_not_does_not_depend_on_fact_order`.
    let y = step.bindings.get("y").cloned().unwrap();
    assert!(model.contains(&Fact::new("path", vec![Value::sym("a"), y.clone()])));
    assert_eq!(
        step.reason,
        format!(
            r#"`edge(y, z)` found no match with x = "a", y = {}, z = "zz""#,
            y.to_literal()
        )
    );
    let why = model.why_not(&fact(r#"open("a", "c")"#)).unwrap();
    assert_eq!(
        why.to_text(),
        "open(\"a\", \"c\") does not hold\n  rule open (line 15): `!blocked(y)` failed: the atom is \
         present with x = \"a\", y = \"c\"\n"
    );
    let why = model.why_not(&fact(r#"sink("c")"#)).unwrap();
    assert_eq!(
        why.rules[0].reason,
        r#"`!edge(y, _)` failed: the atom is present with y = "c""#
    );
}

#[test]

fn why_not_does_not_depend_on_fact_order() {
    let program = Program::compile(&Source::new(
        "tc.dl",
        ".decl edge(x: symbol, y: symbol)\n.decl path(x: symbol, y: symbol)\n\
         path(x, y) :- edge(x, y).\npath(x, z) :- path(x, y), edge(y, z).\n",
    ))
    .unwrap();
    let lines = [
        r#"edge("a", "b")"#,
        r#"edge("b", "c")"#,
        r#"edge("c", "d")"#,
    ];
    let why = |order: &[usize]| {
        let model = program
            .materialise(&facts_in(&lines, order), &Limits::default())
            .unwrap();
        model.why_not(&fact(r#"path("a", "zz")"#)).unwrap()
    };
    assert_eq!(why(&[0, 1, 2]), why(&[2, 1, 0]));
}

#[test]
fn why_not_of_an_input_fact() {
    let model = chain();
    let why = model.why_not(&fact(r#"edge("x", "y")"#)).unwrap();
    assert!(why.is_input);
    assert!(why.rules.is_empty());
    assert_eq!(
        why.to_text(),
        "edge(\"x\", \"y\") does not hold\n  no input fact `edge(\"x\", \"y\")` was given\n"
    );
}

#[test]

fn why_not_of_a_wrong_aggregate_value_names_the_aggregate() {
    let model = chain();
    let why = model.why_not(&fact(r#"deg("a", 3)"#)).unwrap();
    let failure = &why.rules[0];
    assert!(failure.failed_literal.is_some(), "{}", failure.reason);
    assert_eq!(failure.bindings.get("n"), Some(&Value::Number(3)));
    assert!(
        failure.reason.contains("does not hold"),
        "{}",
        failure.reason
    );
}

// ---- errors ---------------------------------------------------------------------------------

#[test]
fn explaining_errors() {
    let (program, input, model) = diamond();
    assert_eq!(
        model.prove(&fact(r#"path("e", "a")"#)),
        Err(ExplainError::NotHolds(r#"path("e", "a")"#.into()))
    );
    assert_eq!(
        model.why_not(&fact(r#"path("a", "e")"#)).unwrap_err(),
        ExplainError::Holds(r#"path("a", "e")"#.into())
    );
    assert_eq!(
        model.prove(&fact(r#"nope("a")"#)),
        Err(ExplainError::UnknownRelation("nope".into()))
    );
    assert_eq!(
        model.prove(&fact(r#"path("a")"#)),
        Err(ExplainError::BadFact(
            r#"`path` has 2 columns, `path("a")` has 1"#.into()
        ))
    );
    let quick = program.evaluate(&input, &Limits::default()).unwrap();
    assert_eq!(
        quick.prove(&fact(r#"path("a", "e")"#)),
        Err(ExplainError::NoProvenance)
    );
}

#[test]
fn query_proofs_end_in_request_facts() {
    let (program, input, model) = diamond();
    let mut request = FactSet::new();
    request.add("edge", vec![Value::sym("e"), Value::sym("f")], "request");
    let answer = model.query(&request, &Limits::default()).unwrap();
    let proof = answer.prove(&fact(r#"open("a", "f")"#)).unwrap();
    let text = proof.to_text();
    assert!(
        text.contains("edge(\"e\", \"f\")  [input: request]"),
        "{text}"
    );
    assert!(
        text.contains("edge(\"a\", \"b\")  [input: edges.facts:1]"),
        "{text}"
    );
    let mut union = input.clone();
    union.extend_from(&request);
    check_proof(&program, &union, &proof).unwrap();
    assert_eq!(
        model.prove(&fact(r#"open("a", "f")"#)),
        Err(ExplainError::NotHolds(r#"open("a", "f")"#.into()))
    );
}

#[test]

fn proof_of_head_variable_computed_by_a_bind_matches_the_fact() {
    let program = Program::compile(&Source::new(
        "bind.dl",
        ".decl in0(a: number, b: number)\n.decl d(x: number, y: number)\n\
         d(z, x) :- in0(x, y), z = y - 1.\n",
    ))
    .unwrap();
    let input = facts(&["in0(1, 2)", "in0(1, 3)"]);
    let model = program.materialise(&input, &Limits::default()).unwrap();
    for f in ["d(1, 1)", "d(2, 1)"] {
        let proof = model.prove(&fact(f)).unwrap();
        assert_eq!(proof.fact, fact(f));
        check_proof(&program, &input, &proof).unwrap();
    }
}
