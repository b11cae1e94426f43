//! Transitive closure over a random sparse graph: our engine (`Program::evaluate`, no
//! provenance) against crepe (compile-time Datalog), same program, same edges.
//!
//! Run with `cargo bench -p tollgate-engine --bench transitive_closure`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashSet;
use std::hint::black_box;
use std::time::Duration;

use crepe::crepe;
use criterion::{BenchmarkId, Criterion, SamplingMode, criterion_group, criterion_main};
use tollgate_engine::{FactSet, Limits, Program, Value, diag::Source};

crepe! {
    @input
    struct Edge(i32, i32);

    @output
    struct Path(i32, i32);

    Path(x, y) <- Edge(x, y);
    Path(x, z) <- Path(x, y), Edge(y, z);
}

const PROGRAM: &str = r#"
.decl edge(x: number, y: number)
.decl path(x: number, y: number)
.output path
path(x, y) :- edge(x, y).
path(x, z) :- path(x, y), edge(y, z).
"#;

/// xorshift64: deterministic, no dependencies.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        let mut s = self.0;
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        self.0 = s;
        s
    }

    fn below(&mut self, n: u32) -> u32 {
        ((self.next() >> 32) % u64::from(n)) as u32
    }
}

/// `m` distinct random edges over `n` nodes.
fn edges(m: usize, n: u32) -> Vec<(i32, i32)> {
    let mut rng = XorShift(0x9E37_79B9_7F4A_7C15);
    let mut seen = HashSet::with_capacity(m);
    let mut out = Vec::with_capacity(m);
    while out.len() < m {
        let a = rng.below(n) as i32;
        let b = rng.below(n) as i32;
        if seen.insert((a, b)) {
            out.push((a, b));
        }
    }
    out
}

fn fact_set(edges: &[(i32, i32)]) -> FactSet {
    let mut facts = FactSet::new();
    for &(a, b) in edges {
        facts.add("edge", vec![Value::Number(a), Value::Number(b)], "bench");
    }
    facts
}

fn run_crepe(edges: &[(i32, i32)]) -> HashSet<Path> {
    let mut rt = Crepe::new();
    rt.extend(edges.iter().map(|&(a, b)| Edge(a, b)));
    let (paths,) = rt.run();
    paths
}

/// Checks that both engines derive the same closure; returns its size.
fn check_same(program: &Program, facts: &FactSet, edges: &[(i32, i32)]) -> usize {
    let model = program.evaluate(facts, &Limits::default()).unwrap();
    let ours: HashSet<(i32, i32)> = model
        .relation("path")
        .unwrap()
        .into_iter()
        .map(|row| match row.as_slice() {
            [Value::Number(a), Value::Number(b)] => (*a, *b),
            other => panic!("unexpected path row {other:?}"),
        })
        .collect();
    let theirs: HashSet<(i32, i32)> = run_crepe(edges)
        .into_iter()
        .map(|Path(a, b)| (a, b))
        .collect();
    assert_eq!(ours.len(), theirs.len(), "path tuple counts differ");
    assert!(ours == theirs, "path tuples differ");
    assert_eq!(model.sizes()["path"], ours.len());
    ours.len()
}

fn bench(c: &mut Criterion) {
    let program = Program::compile(&Source::new("tc.dl", PROGRAM)).unwrap();
    let limits = Limits::default();
    let mut group = c.benchmark_group("transitive_closure");
    group
        .sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_millis(500))
        // Enough for ten one-iteration samples at 100k edges (≈ 0.6 s each here).
        .measurement_time(Duration::from_secs(7));
    // Nodes = 1.05 × edges: just above the critical density of a random digraph, so the
    // closure is much larger than the input (≈ 10× at 10k, ≈ 16× at 100k) yet tractable.
    for m in [10_000usize, 100_000] {
        let n = (m as u32) * 21 / 20;
        let es = edges(m, n);
        let facts = fact_set(&es);
        let paths = check_same(&program, &facts, &es);
        println!("transitive_closure/{m}: {m} edges over {n} nodes, {paths} path tuples");

        group.bench_with_input(BenchmarkId::new("ours_evaluate", m), &facts, |b, facts| {
            b.iter(|| program.evaluate(black_box(facts), &limits).unwrap());
        });
        group.bench_with_input(
            BenchmarkId::new("ours_build_factset_and_evaluate", m),
            &es,
            |b, es| {
                b.iter(|| {
                    let facts = fact_set(black_box(es));
                    program.evaluate(&facts, &limits).unwrap()
                });
            },
        );
        group.bench_with_input(BenchmarkId::new("crepe", m), &es, |b, es| {
            b.iter(|| run_crepe(black_box(es)));
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
