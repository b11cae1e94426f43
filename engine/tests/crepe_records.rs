#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The crepe differential for records and algebraic data types (issue 40): lists built and
//! taken apart by patterns, and an option type, written again with crepe over plain Rust values
//! (a list of at most three numbers as its length and an array, the option as `Option<i32>`)
//! and run against the engine on generated inputs.
//!
//! `PROPTEST_CASES` sets the number of cases (256 when unset).

use std::collections::BTreeSet;

use crepe::crepe;
use proptest::prelude::*;
use tollgate_engine::{FactSet, Limits, Program, Source, Value};

const PROGRAM: &str = r#"
.type List = [head: number, tail: List]
.type Opt = None {} | Some {v: number}
.decl pair(x: number, y: number)
// Walks of up to three steps along `pair`, newest first.
.decl chain(l: List)
chain([x, nil]) :- pair(x, _).
chain([y, [x, t]]) :- chain([x, t]), pair(x, y), len([x, t], n), n < 3.
.decl len(l: List, n: number)
len(nil, 0).
len([h, t], n + 1) :- chain([h, t]), len(t, n).
.decl heads(x: number, y: number)
heads(x, y) :- chain([x, [y, _]]).
.decl ends(x: number)
ends(x) :- chain(l), l = [x, t], t = nil.
.decl opt(x: number, o: Opt)
opt(x, $Some(y)) :- pair(x, y), y > 0.
opt(x, $None) :- pair(x, y), y <= 0.
.decl some_val(x: number, v: number)
some_val(x, v) :- opt(x, $Some(v)).
.decl same_opt(a: number, b: number)
same_opt(a, b) :- opt(a, o), opt(b, p), o = p.
.decl no_some(x: number)
no_some(x) :- opt(x, _), !opt(x, $Some(1)).
"#;

/// A list of at most three numbers, newest first: its length and its elements.
type List = (u8, [i32; 3]);

fn push(l: List, y: i32) -> List {
    (l.0 + 1, [y, l.1[0], l.1[1]])
}

crepe! {
    @input
    struct Pair(i32, i32);

    @output
    struct Chain(List);
    Chain((1, [x, 0, 0])) <- Pair(x, _);
    Chain(push(l, y)) <- Chain(l), Pair(x, y), (l.1[0] == x), (l.0 < 3);

    @output
    struct Heads(i32, i32);
    Heads(x, y) <- Chain(l), (l.0 >= 2), let x = l.1[0], let y = l.1[1];

    @output
    struct Ends(i32);
    Ends(x) <- Chain(l), (l.0 == 1), let x = l.1[0];

    @output
    struct Opt(i32, Option<i32>);
    Opt(x, Some(y)) <- Pair(x, y), (y > 0);
    Opt(x, None) <- Pair(x, y), (y <= 0);

    @output
    struct SomeVal(i32, i32);
    SomeVal(x, v) <- Opt(x, o), let Some(v) = o;

    @output
    struct SameOpt(i32, i32);
    SameOpt(a, b) <- Opt(a, o), Opt(b, p), (o == p);

    @output
    struct NoSome(i32);
    NoSome(x) <- Opt(x, _), !Opt(x, Some(1));
}

/// A value as crepe's: a number, a list as `[length, elements...]`, an option as `[0]` or
/// `[1, v]`.
fn flat(v: &Value, out: &mut Vec<i64>) {
    match v {
        Value::Number(n) => out.push(i64::from(*n)),
        Value::Nil | Value::Record(_) => {
            let mut items = Vec::new();
            let mut at = v;
            while let Value::Record(fields) = at {
                items.push(i64::from(match fields[0] {
                    Value::Number(n) => n,
                    ref other => panic!("unexpected {other:?}"),
                }));
                at = &fields[1];
            }
            let n = i64::try_from(items.len()).unwrap();
            items.resize(3, 0);
            out.push(n);
            out.extend(items);
        }
        Value::Adt { branch, args } => match (&**branch, &args[..]) {
            ("None", []) => out.push(0),
            ("Some", [Value::Number(n)]) => out.extend([1, i64::from(*n)]),
            other => panic!("unexpected {other:?}"),
        },
        other => panic!("unexpected {other:?}"),
    }
}

fn ours(model: &tollgate_engine::Model, rel: &str) -> BTreeSet<Vec<i64>> {
    let rows = model.relation(rel).unwrap();
    rows.iter()
        .map(|r| {
            let mut out = Vec::new();
            r.iter().for_each(|v| flat(v, &mut out));
            out
        })
        .collect()
}

/// A crepe list as `flat` writes the engine's: its length, then its elements padded to three.
fn list(l: List) -> Vec<i64> {
    let mut items: Vec<i64> = l.1[..usize::from(l.0)]
        .iter()
        .map(|&x| i64::from(x))
        .collect();
    items.resize(3, 0);
    let mut out = vec![i64::from(l.0)];
    out.extend(items);
    out
}

fn option(o: Option<i32>) -> Vec<i64> {
    o.map_or_else(|| vec![0], |v| vec![1, i64::from(v)])
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(
        std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(256)
    ))]
    #[test]
    fn the_engine_agrees_with_crepe_on_records(pairs in prop::collection::vec((-3i32..4, -3i32..4), 0..8)) {
        let program = Program::compile(&Source::new("records.dl", PROGRAM)).unwrap();
        let mut facts = FactSet::new();
        for &(x, y) in &pairs {
            facts.add("pair", vec![Value::Number(x), Value::Number(y)], "generated");
        }
        let model = program.materialise(&facts, &Limits::default()).unwrap();

        let mut rt = Crepe::new();
        rt.extend(pairs.iter().map(|&(x, y)| Pair(x, y)));
        let (chain, heads, ends, opt, some_val, same_opt, no_some) = rt.run();

        prop_assert_eq!(ours(&model, "chain"), chain.into_iter().map(|Chain(l)| list(l)).collect::<BTreeSet<_>>());
        prop_assert_eq!(ours(&model, "heads"), heads.into_iter().map(|Heads(x, y)| vec![i64::from(x), i64::from(y)]).collect::<BTreeSet<_>>());
        prop_assert_eq!(ours(&model, "ends"), ends.into_iter().map(|Ends(x)| vec![i64::from(x)]).collect::<BTreeSet<_>>());
        prop_assert_eq!(ours(&model, "opt"), opt.into_iter().map(|Opt(x, o)| {
            let mut v = vec![i64::from(x)];
            v.extend(option(o));
            v
        }).collect::<BTreeSet<_>>());
        prop_assert_eq!(ours(&model, "some_val"), some_val.into_iter().map(|SomeVal(x, v)| vec![i64::from(x), i64::from(v)]).collect::<BTreeSet<_>>());
        prop_assert_eq!(ours(&model, "same_opt"), same_opt.into_iter().map(|SameOpt(a, b)| vec![i64::from(a), i64::from(b)]).collect::<BTreeSet<_>>());
        prop_assert_eq!(ours(&model, "no_some"), no_some.into_iter().map(|NoSome(x)| vec![i64::from(x)]).collect::<BTreeSet<_>>());
    }
}
