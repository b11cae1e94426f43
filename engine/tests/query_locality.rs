//! A staged query reaches the model only through indexed lookups from its request facts: it
//! never scans a whole relation of the model, and what it derives is only what depends on the
//! request.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use tollgate_engine::{FactSet, Limits, Program, Value, diag::Source};

const POLICY: &str = r#"
.decl member(agent: symbol, role: symbol)
.decl inherits(child: symbol, parent: symbol)
.decl grant(role: symbol, tool: symbol)
.decl denied_role(role: symbol, tool: symbol)
.decl request(req: symbol, agent: symbol, tool: symbol)
.input member
.input inherits
.input grant
.input denied_role
.input request

.decl role_of(agent: symbol, role: symbol)
role_of(a, r) :- member(a, r).
role_of(a, p) :- role_of(a, r), inherits(r, p).

.decl allowed(req: symbol)
allowed(q) :- request(q, a, t), role_of(a, r), grant(r, t).
.decl denied(req: symbol)
denied(q) :- request(q, a, t), role_of(a, r), denied_role(r, t).

.decl decision(req: symbol, effect: symbol)
.output decision
decision(q, "deny") :- denied(q).
decision(q, "allow") :- allowed(q), !denied(q).
decision(q, "deny") :- request(q, _, _), !allowed(q).
"#;

fn model_facts(agents: usize) -> FactSet {
    let mut f = FactSet::new();
    for i in 0..agents {
        f.add(
            "member",
            vec![
                Value::sym(format!("agent{i}")),
                Value::sym(format!("role{}", i % 50)),
            ],
            "static",
        );
    }
    for r in 1..50 {
        f.add(
            "inherits",
            vec![
                Value::sym(format!("role{r}")),
                Value::sym(format!("role{}", (r - 1) / 2)),
            ],
            "static",
        );
    }
    for t in 0..200 {
        f.add(
            "grant",
            vec![
                Value::sym(format!("role{}", t % 50)),
                Value::sym(format!("tool{t}")),
            ],
            "static",
        );
    }
    f.add(
        "denied_role",
        vec![Value::sym("role0"), Value::sym("tool7")],
        "static",
    );
    f
}

#[test]
fn a_query_scans_no_model_relation_and_derives_only_what_the_request_reaches() {
    let program = Program::compile(&Source::new("policy.dl", POLICY)).unwrap();
    let model = program
        .materialise(&model_facts(5000), &Limits::default())
        .unwrap();
    let before = model.sizes();
    assert!(before["role_of"] > 5000);
    let mut request = FactSet::new();
    request.add(
        "request",
        vec![Value::sym("q1"), Value::sym("agent3"), Value::sym("tool3")],
        "request",
    );
    let answer = model.query(&request, &Limits::default()).unwrap();
    assert_eq!(
        answer.relation("decision").unwrap(),
        vec![vec![Value::sym("q1"), Value::sym("allow")]]
    );
    let stats = answer.stats();
    assert_eq!(stats.model_tuples_scanned, 0, "{stats:?}");
    // request, allowed, decision: three tuples, nothing else.
    assert_eq!(stats.derived, 3, "{stats:?}");
    // The model is untouched.
    assert_eq!(model.sizes(), before);
}

#[test]
fn a_rule_without_a_request_atom_falls_back_to_a_counted_scan() {
    // `stale` negates a request-dependent relation without a positive request atom: it must be
    // recomputed from the model's `grant`, and the scan is reported.
    let src = format!(
        "{POLICY}\n.decl unused(tool: symbol)\n.output unused\nunused(t) :- grant(_, t), !requested(t).\n.decl requested(tool: symbol)\nrequested(t) :- request(_, _, t).\n"
    );
    let program = Program::compile(&Source::new("policy.dl", src)).unwrap();
    let model = program
        .materialise(&model_facts(100), &Limits::default())
        .unwrap();
    let mut request = FactSet::new();
    request.add(
        "request",
        vec![Value::sym("q1"), Value::sym("agent3"), Value::sym("tool3")],
        "request",
    );
    let answer = model.query(&request, &Limits::default()).unwrap();
    assert_eq!(answer.relation("unused").unwrap().len(), 199);
    assert_eq!(answer.stats().model_tuples_scanned, 200);
}
