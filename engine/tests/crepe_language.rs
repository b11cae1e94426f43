#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The crepe differential for the language Soufflé programs use beyond the policy packs:
//! bitwise and logical operators, `^`, numeric conversions, `range`, `eqrel` and components,
//! each written again with crepe (Datalog compiled by a macro, its expressions plain Rust) and
//! run against the engine on generated inputs. crepe knows none of these constructs, so each
//! is spelled out the way Soufflé's documentation defines it: a generator as a `for` over
//! Soufflé's counting rule, an equivalence relation as its closure rules, a component as the
//! relations its instances become.
//!
//! `PROPTEST_CASES` sets the number of cases (256 when unset).

use std::collections::BTreeSet;

use crepe::crepe;
use proptest::prelude::*;
use tollgate_engine::{FactSet, Limits, Program, Source, Value};

const PROGRAM: &str = r#"
.decl pair(x: number, y: number)
.decl bits(x: number, y: number, a: number, o: number, e: number, l: number, r: number, ru: number)
bits(x, y, x band y, x bor y, x bxor y, x bshl (y band 7), x bshr (y band 7), x bshru (y band 7)) :- pair(x, y).
.decl logic(x: number, y: number, a: number, o: number, e: number, n: number, b: number)
logic(x, y, x land y, x lor y, x lxor y, lnot x, bnot y) :- pair(x, y).
.decl power(x: number, y: number, p: number)
power(x, y, x ^ (y band 3)) :- pair(x, y).
.decl unsigned(x: number, u: unsigned)
unsigned(x, to_unsigned(x)) :- pair(x, _).
.decl counted(x: number, y: number, z: number)
counted(x, y, z) :- pair(x, y), z = range(x, y).
.decl stepped(x: number, y: number, z: number)
stepped(x, y, z) :- pair(x, y), z = range(y, x, -2).
.decl same(a: number, b: number) eqrel
same(x, y) :- pair(x, y), x < y + 2.
.comp Reach {
    .decl edge(a: number, b: number)
    .decl path(a: number, b: number)
    path(x, y) :- edge(x, y).
    path(x, z) :- path(x, y), edge(y, z).
}
.init up = Reach
.init down = Reach
up.edge(x, y) :- pair(x, y), x < y.
down.edge(x, y) :- pair(x, y), x > y.
"#;

/// Soufflé's `range(from, to, step)`: up while below `to`, down while above, `from` once for
/// a zero step unless empty; without a step, 1 or -1 toward `to`.
fn souffle_range(from: i32, to: i32, step: Option<i32>) -> Vec<i32> {
    let step = step.unwrap_or(if from <= to { 1 } else { -1 });
    let mut out = Vec::new();
    let mut x = i64::from(from);
    let (to, step) = (i64::from(to), i64::from(step));
    match step.signum() {
        1 => {
            while x < to {
                out.push(x as i32);
                x += step;
            }
        }
        -1 => {
            while x > to {
                out.push(x as i32);
                x += step;
            }
        }
        _ => {
            if x != to {
                out.push(from);
            }
        }
    }
    out
}

fn truth(b: bool) -> i32 {
    i32::from(b)
}

crepe! {
    @input
    struct Pair(i32, i32);

    @output
    struct Bits(i32, i32, i32, i32, i32, i32, i32, i32);
    Bits(x, y, x & y, x | y, x ^ y, x.wrapping_shl((y & 7) as u32), x.wrapping_shr((y & 7) as u32),
         ((x as u32).wrapping_shr((y & 7) as u32)) as i32) <- Pair(x, y);

    @output
    struct Logic(i32, i32, i32, i32, i32, i32, i32);
    Logic(x, y, truth(x != 0 && y != 0), truth(x != 0 || y != 0), truth((x != 0) != (y != 0)),
          truth(x == 0), !y) <- Pair(x, y);

    @output
    struct Power(i32, i32, i32);
    Power(x, y, p) <- Pair(x, y), let Some(p) = x.checked_pow((y & 3) as u32);

    @output
    struct Unsigned(i32, u32);
    Unsigned(x, x as u32) <- Pair(x, _);

    @output
    struct Counted(i32, i32, i32);
    Counted(x, y, z) <- Pair(x, y), for z in souffle_range(x, y, None);

    @output
    struct Stepped(i32, i32, i32);
    Stepped(x, y, z) <- Pair(x, y), for z in souffle_range(y, x, Some(-2));

    @output
    struct Same(i32, i32);
    Same(x, y) <- Pair(x, y), (x < y + 2);
    Same(x, x) <- Same(x, _);
    Same(y, y) <- Same(_, y);
    Same(y, x) <- Same(x, y);
    Same(x, z) <- Same(x, y), Same(y, z);

    @output
    struct UpPath(i32, i32);
    struct UpEdge(i32, i32);
    UpEdge(x, y) <- Pair(x, y), (x < y);
    UpPath(x, y) <- UpEdge(x, y);
    UpPath(x, z) <- UpPath(x, y), UpEdge(y, z);

    @output
    struct DownPath(i32, i32);
    struct DownEdge(i32, i32);
    DownEdge(x, y) <- Pair(x, y), (x > y);
    DownPath(x, y) <- DownEdge(x, y);
    DownPath(x, z) <- DownPath(x, y), DownEdge(y, z);
}

fn num(v: &Value) -> i64 {
    match v {
        Value::Number(n) => i64::from(*n),
        Value::Unsigned(u) => i64::from(*u),
        other => panic!("unexpected {other:?}"),
    }
}

fn ours(model: &tollgate_engine::Model, rel: &str) -> BTreeSet<Vec<i64>> {
    model
        .relation(rel)
        .unwrap()
        .iter()
        .map(|r| r.iter().map(num).collect())
        .collect()
}

fn theirs<T>(rows: impl IntoIterator<Item = T>, f: impl Fn(T) -> Vec<i64>) -> BTreeSet<Vec<i64>> {
    rows.into_iter().map(f).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(
        std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(256)
    ))]
    #[test]
    fn the_engine_agrees_with_crepe(pairs in prop::collection::vec((-9i32..9, -9i32..9), 0..10)) {
        let program = Program::compile(&Source::new("language.dl", PROGRAM)).unwrap();
        let mut facts = FactSet::new();
        for &(x, y) in &pairs {
            facts.add("pair", vec![Value::Number(x), Value::Number(y)], "generated");
        }
        let model = program.materialise(&facts, &Limits::default()).unwrap();

        let mut rt = Crepe::new();
        rt.extend(pairs.iter().map(|&(x, y)| Pair(x, y)));
        let (bits, logic, power, unsigned, counted, stepped, same, up, down) = rt.run();
        let w = |v: &[i32]| v.iter().map(|&x| i64::from(x)).collect::<Vec<i64>>();

        prop_assert_eq!(ours(&model, "bits"), theirs(bits, |Bits(a, b, c, d, e, f, g, h)| w(&[a, b, c, d, e, f, g, h])));
        prop_assert_eq!(ours(&model, "logic"), theirs(logic, |Logic(a, b, c, d, e, f, g)| w(&[a, b, c, d, e, f, g])));
        prop_assert_eq!(ours(&model, "power"), theirs(power, |Power(a, b, c)| w(&[a, b, c])));
        prop_assert_eq!(ours(&model, "unsigned"), theirs(unsigned, |Unsigned(a, b)| vec![i64::from(a), i64::from(b)]));
        prop_assert_eq!(ours(&model, "counted"), theirs(counted, |Counted(a, b, c)| w(&[a, b, c])));
        prop_assert_eq!(ours(&model, "stepped"), theirs(stepped, |Stepped(a, b, c)| w(&[a, b, c])));
        prop_assert_eq!(ours(&model, "same"), theirs(same, |Same(a, b)| w(&[a, b])));
        prop_assert_eq!(ours(&model, "up.path"), theirs(up, |UpPath(a, b)| w(&[a, b])));
        prop_assert_eq!(ours(&model, "down.path"), theirs(down, |DownPath(a, b)| w(&[a, b])));
    }
}
