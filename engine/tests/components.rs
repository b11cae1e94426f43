#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Components (`.comp`, `.init`, inheritance, `.override`, type parameters): an instance
//! behaves exactly as the same relations written out by hand under qualified names, in every
//! evaluator and in proofs; mistakes are named with spans into the component.

use proptest::prelude::*;
use tollgate_engine::proof_check::check_proof;
use tollgate_engine::{Diagnostic, Fact, FactSet, Limits, Program, Source, Value, naive};

const GRAPH: &str = r#"
.comp Graph<N> {
    .decl edge(a: N, b: N)
    // @id reach.base
    reach(x, y) :- edge(x, y).
    // @id reach.step
    reach(x, z) :- reach(x, y), edge(y, z).
    .decl reach(a: N, b: N) overridable
}
.comp Blocked<N> : Graph<N> {
    .override reach
    reach(x, y) :- edge(x, y), !stop(y).
    reach(x, z) :- reach(x, y), edge(y, z), !stop(z).
}
.comp Pair {
    .init left = Graph<number>
    .init right = Blocked<number>
    .decl both(a: number, b: number)
    both(x, y) :- left.reach(x, y), right.reach(x, y).
}
.decl stop(n: number)
.init p = Pair
"#;

/// The same program, written out by hand as the expansion must read it.
const FLAT: &str = r#"
.decl p.left.edge(a: number, b: number)
.decl p.left.reach(a: number, b: number)
p.left.reach(x, y) :- p.left.edge(x, y).
p.left.reach(x, z) :- p.left.reach(x, y), p.left.edge(y, z).
.decl p.right.edge(a: number, b: number)
.decl p.right.reach(a: number, b: number)
p.right.reach(x, y) :- p.right.edge(x, y), !stop(y).
p.right.reach(x, z) :- p.right.reach(x, y), p.right.edge(y, z), !stop(z).
.decl p.both(a: number, b: number)
p.both(x, y) :- p.left.reach(x, y), p.right.reach(x, y).
.decl stop(n: number)
"#;

const RELATIONS: [&str; 5] = [
    "p.left.reach",
    "p.right.reach",
    "p.both",
    "p.left.edge",
    "p.right.edge",
];

fn compile(text: &str) -> Program {
    match Program::compile(&Source::new("components.dl", text)) {
        Ok(p) => p,
        Err(d) => panic!("{}", d[0].render(&Source::new("components.dl", text))),
    }
}

fn input(left: &[(i32, i32)], right: &[(i32, i32)], stops: &[i32]) -> FactSet {
    let mut set = FactSet::new();
    for (rel, edges) in [("p.left.edge", left), ("p.right.edge", right)] {
        for &(a, b) in edges {
            set.add(rel, vec![Value::Number(a), Value::Number(b)], "edges");
        }
    }
    for &s in stops {
        set.add("stop", vec![Value::Number(s)], "stops");
    }
    set
}

#[test]
fn an_instance_is_its_component_with_qualified_names() {
    let program = compile(GRAPH);
    let mut names: Vec<&str> = program
        .ir()
        .relations
        .iter()
        .map(|r| r.name.as_str())
        .collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "p.both",
            "p.left.edge",
            "p.left.reach",
            "p.right.edge",
            "p.right.reach",
            "stop"
        ]
    );
    let facts = input(&[(1, 2), (2, 3)], &[(1, 2), (2, 3)], &[3]);
    let model = program.materialise(&facts, &Limits::default()).unwrap();
    let rows = |name: &str| -> Vec<(i32, i32)> {
        model
            .relation(name)
            .unwrap()
            .iter()
            .map(|r| match (&r[0], &r[1]) {
                (Value::Number(a), Value::Number(b)) => (*a, *b),
                other => panic!("{other:?}"),
            })
            .collect()
    };
    assert_eq!(rows("p.left.reach"), [(1, 2), (1, 3), (2, 3)]);
    // `.override` replaced the inherited rules: nothing reaches the stop.
    assert_eq!(rows("p.right.reach"), [(1, 2)]);
    assert_eq!(rows("p.both"), [(1, 2)]);
}

#[test]
fn proofs_of_instance_facts_name_the_components_rules_and_check() {
    let program = compile(GRAPH);
    let facts = input(&[(1, 2), (2, 3)], &[], &[]);
    let model = program.materialise(&facts, &Limits::default()).unwrap();
    let fact = Fact::parse("p.left.reach(1, 3)").unwrap();
    let proof = model.prove(&fact).unwrap();
    let text = proof.to_text();
    assert!(text.contains("[rule p.left.reach.step"), "{text}");
    assert!(text.contains("[rule p.left.reach.base"), "{text}");
    check_proof(&program, &facts, &proof).unwrap();
    let why = model
        .why_not(&Fact::parse("p.left.reach(3, 1)").unwrap())
        .unwrap();
    assert!(why.to_text().contains("p.left.edge"), "{}", why.to_text());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    /// The expansion is the flat program: same rows in every relation, in the staged
    /// evaluator and in the naive oracle.
    #[test]
    fn expansion_equals_the_program_written_out(
        left in prop::collection::vec((0i32..6, 0i32..6), 0..12),
        right in prop::collection::vec((0i32..6, 0i32..6), 0..12),
        stops in prop::collection::vec(0i32..6, 0..3),
    ) {
        let expanded = compile(GRAPH);
        let flat = compile(FLAT);
        let facts = input(&left, &right, &stops);
        let a = expanded.materialise(&facts, &Limits::default()).unwrap();
        let b = flat.evaluate(&facts, &Limits::default()).unwrap();
        let oracle = naive::evaluate(expanded.ir(), &facts).rows(expanded.ir());
        for rel in RELATIONS {
            let rows = a.relation(rel).unwrap();
            prop_assert_eq!(&rows, &b.relation(rel).unwrap(), "{}", rel);
            let sorted = |rows: &[Vec<Value>]| {
                let mut v: Vec<String> = rows.iter().map(|r| format!("{r:?}")).collect();
                v.sort();
                v
            };
            prop_assert_eq!(sorted(&rows), sorted(&oracle[rel]), "{} (naive)", rel);
        }
    }
}

fn errors(text: &str) -> (Source, Vec<Diagnostic>) {
    let src = Source::new("components.dl", text);
    match Program::compile(&src) {
        Ok(_) => panic!("program accepted:\n{text}"),
        Err(d) => (src, d),
    }
}

/// The first diagnostic: code, message, what its span covers, and where.
#[track_caller]
fn first(text: &str) -> (String, String, String, (usize, usize)) {
    let (src, d) = errors(text);
    let d = &d[0];
    let covers = src.text[d.span.start as usize..d.span.end as usize].to_string();
    (
        d.code.to_string(),
        d.message.clone(),
        covers,
        src.line_col(d.span.start),
    )
}

#[test]
fn an_unknown_component_is_named_with_the_ones_in_scope() {
    let text = ".comp Graph { .decl e(x: number) }\n.init g = Grahp\n";
    let (src, d) = errors(text);
    assert_eq!(d[0].code, "E-component");
    assert_eq!(d[0].message, "unknown component `Grahp`");
    assert_eq!(src.line_col(d[0].span.start), (2, 11));
    assert_eq!(
        d[0].help.as_deref(),
        Some("the components visible here are `Graph`")
    );
}

#[test]
fn wrong_type_arguments_override_errors_and_self_instantiation_are_refused() {
    let (code, msg, covers, at) =
        first(".comp G<N> { .decl e(x: N) }\n.init g = G<number, symbol>\n");
    assert_eq!(code, "E-component");
    assert_eq!(msg, "component `G` takes 1 type parameter, given 2");
    assert_eq!((covers.as_str(), at), ("G<number, symbol>", (2, 11)));

    let (_, msg, covers, _) =
        first(".comp A { .decl r(x: number) r(1). }\n.comp B : A { .override r }\n.init b = B\n");
    assert_eq!(msg, "relation `r` is not declared `overridable`");
    assert_eq!(covers, "r");

    let (_, msg, _, _) =
        first(".comp A { .decl r(x: number) }\n.comp B : A { .override s }\n.init b = B\n");
    assert_eq!(msg, "`.override s`: no base of component `B` declares `s`");

    let (_, msg, _, at) = first(".decl r(x: number)\n.override r\n");
    assert_eq!(
        (msg.as_str(), at),
        ("`.override r` outside a component", (2, 11))
    );

    let (_, msg, _, _) = first(".comp Loop { .init again = Loop }\n.init l = Loop\n");
    assert_eq!(msg, "components nest more than 64 levels deep at `Loop`");

    // Doubling at each of 20 levels would be a million instances.
    let mut text = String::from(".comp C0 { .decl r(x: number) }\n");
    for i in 1..=20 {
        text.push_str(&format!(
            ".comp C{i} {{ .init a = C{} .init b = C{} }}\n",
            i - 1,
            i - 1
        ));
    }
    text.push_str(".init top = C20\n");
    let (_, msg, _, _) = first(&text);
    assert_eq!(msg, "the program makes more than 10000 component instances");

    let (_, msg, _, at) = first(".comp A { .decl r(x: number) }\n.init a = A\n.init a = A\n");
    assert_eq!(
        (msg.as_str(), at),
        ("instance `a` is declared twice", (3, 7))
    );
}

#[test]
fn a_mistake_inside_a_component_body_points_into_it_and_parsing_goes_on() {
    let text = ".comp A {\n  .decl r(x: number)\n  r(1) :- .\n}\n.decl s(x: number)\ns(1\n";
    let (src, d) = errors(text);
    assert_eq!(d.len(), 2, "{d:?}");
    assert_eq!(src.line_col(d[0].span.start).0, 3);
    assert_eq!(src.line_col(d[1].span.start).0, 7);
}

#[test]
fn an_uninstantiated_component_adds_nothing_and_instance_names_stay_apart() {
    let program = compile(
        ".comp A { .decl r(x: number) r(1). .output r }\n.decl r(x: number)\nr(2).\n.init a = A\n.comp Unused { .decl u(x: number) u(3). }\n",
    );
    let model = program
        .materialise(&FactSet::new(), &Limits::default())
        .unwrap();
    assert_eq!(model.relation("r").unwrap(), [vec![Value::Number(2)]]);
    assert_eq!(model.relation("a.r").unwrap(), [vec![Value::Number(1)]]);
    assert!(model.relation("Unused.u").is_none() && model.relation("u").is_none());
    let outputs: Vec<&str> = program
        .ir()
        .relations
        .iter()
        .filter(|r| r.output.is_some())
        .map(|r| r.name.as_str())
        .collect();
    assert_eq!(outputs, ["a.r"]);
}

/// A type parameter may name the component to instantiate (Soufflé's "selector" idiom), and a
/// relation a nested component uses without declaring it is the enclosing instance's.
#[test]
fn a_type_parameter_can_select_the_component_and_undeclared_names_resolve_outward() {
    let program = compile(
        ".decl r(x: number)\n.comp Case<Selector> {\n  .comp One { r(1). }\n  .comp Two { r(2). }\n  .init selection = Selector\n}\n.init mine = Case<Two>\n\
         .decl out(x: number)\n.comp A {\n  .decl s(x: number)\n  .comp Count { s(1). s(x + 1) :- s(x), x < 3. }\n  .init counter = Count\n  out(x) :- s(x).\n}\n.init a = A\n",
    );
    let model = program
        .materialise(&FactSet::new(), &Limits::default())
        .unwrap();
    assert_eq!(model.relation("r").unwrap(), [vec![Value::Number(2)]]);
    assert_eq!(model.relation("a.s").unwrap().len(), 3);
    assert_eq!(model.relation("out").unwrap().len(), 3);
}
