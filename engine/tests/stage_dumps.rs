//! Snapshots of the named stages' text dumps: check (strata and lowered rules) and plan.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use tollgate_engine::{Program, diag::Source};

#[test]
fn check_and_plan_dumps_of_transitive_closure_with_negation() {
    let src = Source::new(
        "tc.dl",
        r#".decl edge(x: number, y: number)
.decl path(x: number, y: number)
.decl node(x: number)
.decl unreachable(x: number, y: number)
.output unreachable
node(x) :- edge(x, _) ; edge(_, x).
// @id tc.base
path(x, y) :- edge(x, y).
// @id tc.step
path(x, z) :- path(x, y), edge(y, z).
unreachable(x, y) :- node(x), node(y), x != y, !path(x, y).
"#,
    );
    let p = Program::compile(&src).unwrap();
    assert_eq!(
        p.ir().dump(),
        "stratum 0: edge
stratum 1: path
stratum 2: node
stratum 3: unreachable
[node:3e518724] node(x) :- edge(x, _).
[node:3e518724] node(x) :- edge(_, x).
[tc.base] path(x, y) :- edge(x, y).
[tc.step] path(x, z) :- path(x, y), edge(y, z).
[unreachable:c26f19e9] unreachable(x, y) :- node(x), node(y), x != y, !path(x, y).
"
    );
    assert_eq!(
        p.plan_dump(),
        "tc.base: scan edge[] filters [] -> path;
tc.step: scan path[] filters [] -> (x, y); lookup edge[0] -> path;
node:3e518724: scan edge[] filters [] -> node;
node:3e518724: scan edge[] filters [] -> node;
unreachable:c26f19e9: scan node[] filters [] -> (x); lookup node[] -> (x, y); map [2, 3] -> unreachable;
"
    );
}
