//! Staged queries against a materialised policy model of ~10k facts: add three `request`
//! facts, derive the decisions, read them, and (optionally) build the proof of one decision.
//!
//! Besides criterion's figures (mean/median), a manual loop of 20k timed queries per variant
//! prints p50/p99, the figures the targets are stated in (p50 < 10 µs without proofs;
//! proofs at most 1.5× that).
//!
//! Run with `cargo bench -p tollgate-engine --bench staged_query`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashSet;
use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use tollgate_engine::{Fact, FactSet, Limits, Model, Program, Value, diag::Source};

const PROGRAM: &str = r#"
.decl inherits(child: symbol, parent: symbol)
.decl member(agent: symbol, role: symbol)
.decl grant(role: symbol, tool: symbol)
.decl tool_category(tool: symbol, cat: symbol)
.decl denied_category(role: symbol, cat: symbol)
.decl request(req: symbol, agent: symbol, tool: symbol)

.decl role_of(agent: symbol, role: symbol)
role_of(a, r) :- member(a, r).
role_of(a, p) :- role_of(a, r), inherits(r, p).

.decl allowed(req: symbol)
allowed(req) :- request(req, a, t), role_of(a, r), grant(r, t).

.decl denied(req: symbol)
denied(req) :- request(req, a, t), role_of(a, r), tool_category(t, c), denied_category(r, c).

.decl decision(req: symbol, d: symbol)
.output decision
decision(req, "deny") :- denied(req).
decision(req, "allow") :- allowed(req), !denied(req).
decision(req, "deny") :- request(req, _, _), !allowed(req).
"#;

const ROLES: u32 = 200;
const AGENTS: u32 = 2_000;
const TOOLS: u32 = 1_000;
const CATEGORIES: u32 = 25;
const GRANTS: usize = 5_500;
const DENIED: usize = 150;

/// Requests per query.
const PER_QUERY: usize = 3;
/// Timed iterations of the manual loop, per variant.
const ITERATIONS: usize = 20_000;
const WARM_UP: usize = 2_000;

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

fn role(i: u32) -> Value {
    Value::sym(format!("role-{i}"))
}
fn agent(i: u32) -> Value {
    Value::sym(format!("agent-{i}"))
}
fn tool(i: u32) -> Value {
    Value::sym(format!("tool-{i}"))
}
fn cat(i: u32) -> Value {
    Value::sym(format!("cat-{i}"))
}

/// The static policy facts, plus each agent's direct roles and each role's grants (to draw
/// requests that are sometimes allowed).
struct Policy {
    facts: FactSet,
    member_of: Vec<Vec<u32>>,
    grants_of: Vec<Vec<u32>>,
}

fn policy() -> Policy {
    let mut rng = XorShift(0x2545_F491_4F6C_DD1D);
    let mut facts = FactSet::new();
    // A role tree of fan-out 3 (depth ≈ 5).
    for r in 1..ROLES {
        facts.add("inherits", vec![role(r), role((r - 1) / 3)], "static");
    }
    // One or two direct roles per agent, drawn from the non-root roles.
    let mut member_of = vec![Vec::new(); AGENTS as usize];
    for a in 0..AGENTS {
        let k = 1 + rng.below(2);
        for _ in 0..k {
            let r = 1 + rng.below(ROLES - 1);
            if !member_of[a as usize].contains(&r) {
                member_of[a as usize].push(r);
                facts.add("member", vec![agent(a), role(r)], "static");
            }
        }
    }
    for t in 0..TOOLS {
        facts.add(
            "tool_category",
            vec![tool(t), cat(rng.below(CATEGORIES))],
            "static",
        );
    }
    let mut grants_of = vec![Vec::new(); ROLES as usize];
    let mut seen = HashSet::new();
    while seen.len() < GRANTS {
        let (r, t) = (rng.below(ROLES), rng.below(TOOLS));
        if seen.insert((r, t)) {
            grants_of[r as usize].push(t);
            facts.add("grant", vec![role(r), tool(t)], "static");
        }
    }
    let mut seen = HashSet::new();
    while seen.len() < DENIED {
        // No denials on the root role: it is everyone's ancestor.
        let (r, c) = (1 + rng.below(ROLES - 1), rng.below(CATEGORIES));
        if seen.insert((r, c)) {
            facts.add("denied_category", vec![role(r), cat(c)], "static");
        }
    }
    Policy {
        facts,
        member_of,
        grants_of,
    }
}

/// `count` request sets of [`PER_QUERY`] requests each, with fresh request ids; half the
/// tools are drawn from a grant of one of the agent's direct roles, half at random.
fn requests(policy: &Policy, count: usize, seed: u64) -> Vec<FactSet> {
    let mut rng = XorShift(seed);
    (0..count)
        .map(|q| {
            let mut facts = FactSet::new();
            for k in 0..PER_QUERY {
                let a = rng.below(AGENTS);
                let direct = &policy.member_of[a as usize];
                let r = direct[rng.below(direct.len() as u32) as usize];
                let granted = &policy.grants_of[r as usize];
                let t = if rng.below(2) == 0 && !granted.is_empty() {
                    granted[rng.below(granted.len() as u32) as usize]
                } else {
                    rng.below(TOOLS)
                };
                facts.add(
                    "request",
                    vec![Value::sym(format!("req-{seed}-{q}-{k}")), agent(a), tool(t)],
                    "request",
                );
            }
            facts
        })
        .collect()
}

/// The first request's id in a request set.
fn first_req(request: &FactSet) -> Value {
    request.iter().next().unwrap().0.values[0].clone()
}

/// Query, read the decisions. Returns the number of decision rows.
fn decide(model: &Model, request: &FactSet, limits: &Limits) -> usize {
    let answer = model.query(request, limits).unwrap();
    answer.relation("decision").unwrap().len()
}

/// Query, read the decisions, prove the first request's decision. Returns the proof's depth.
fn decide_and_prove(model: &Model, request: &FactSet, limits: &Limits) -> usize {
    let answer = model.query(request, limits).unwrap();
    let rows = answer.relation("decision").unwrap();
    let req = first_req(request);
    let row = rows.into_iter().find(|r| r[0] == req).unwrap();
    let proof = answer.prove(&Fact::new("decision", row)).unwrap();
    proof.depth()
}

/// The profiled loop (a function of its own, for callgrind's `--toggle-collect`).
#[inline(never)]
fn profiled(
    model: &Model,
    queries: &[FactSet],
    limits: &Limits,
    f: fn(&Model, &FactSet, &Limits) -> usize,
) -> usize {
    queries.iter().map(|r| f(model, black_box(r), limits)).sum()
}

/// Times `f` on each request set in turn; returns sorted durations.
fn timed(requests: &[FactSet], mut f: impl FnMut(&FactSet) -> usize) -> Vec<Duration> {
    let mut out = Vec::with_capacity(requests.len());
    for r in requests {
        let start = Instant::now();
        black_box(f(black_box(r)));
        out.push(start.elapsed());
    }
    out.sort_unstable();
    out
}

fn pct(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// Checks the answers against a full evaluation and the proofs against the proof checker.
fn check(program: &Program, policy: &Policy, model: &Model, sample: &[FactSet]) {
    let limits = Limits::default();
    let (mut allow, mut deny, mut derived) = (0, 0, 0);
    for (i, request) in sample.iter().enumerate() {
        let answer = model.query(request, &limits).unwrap();
        let stats = answer.stats();
        assert_eq!(stats.model_tuples_scanned, 0, "a query scanned the model");
        derived += stats.derived;
        let staged = answer.relation("decision").unwrap();
        let mut all = policy.facts.clone();
        all.extend_from(request);
        let full = program.evaluate(&all, &limits).unwrap();
        assert_eq!(staged, full.relation("decision").unwrap(), "staged != full");
        assert_eq!(staged.len(), PER_QUERY, "one decision per request");
        for row in &staged {
            if row[1] == Value::sym("allow") {
                allow += 1;
            } else {
                deny += 1;
            }
        }
        if i < 20 {
            let req = first_req(request);
            let row = staged.iter().find(|r| r[0] == req).unwrap().clone();
            let proof = answer.prove(&Fact::new("decision", row)).unwrap();
            tollgate_engine::proof_check::check_proof(program, &all, &proof).unwrap();
        }
    }
    println!(
        "staged_query: checked {} queries against full evaluation: {allow} allow, {deny} deny; \
         {:.1} tuples derived per query, no model scans",
        sample.len(),
        derived as f64 / sample.len() as f64
    );
}

fn bench(c: &mut Criterion) {
    let program = Program::compile(&Source::new("policy.dl", PROGRAM)).unwrap();
    let policy = policy();
    let limits = Limits::default();
    let start = Instant::now();
    let model = program.materialise(&policy.facts, &limits).unwrap();
    let sizes = model.sizes();
    println!(
        "staged_query: {} static facts, materialised in {:.1} ms; role_of = {}",
        policy.facts.len(),
        start.elapsed().as_secs_f64() * 1e3,
        sizes["role_of"]
    );
    // `STAGED_PROFILE=no_proof|with_proof` runs one variant on a fixed set of
    // `STAGED_PROFILE_COUNT` queries (default 2,000), once to warm up (model proofs are cached
    // on first use, as in the timed loops' steady state), then through `profiled`, and exits
    // (before the checks below): the same work in every run, for instruction counts under
    // callgrind (`--toggle-collect='staged_query::profiled'`).
    if let Ok(variant) = std::env::var("STAGED_PROFILE") {
        let f: fn(&Model, &FactSet, &Limits) -> usize = match variant.as_str() {
            "no_proof" => decide,
            "with_proof" => decide_and_prove,
            other => panic!("STAGED_PROFILE is no_proof or with_proof, not {other}"),
        };
        let count: usize = std::env::var("STAGED_PROFILE_COUNT").map_or(2_000, |n| {
            n.parse().expect("STAGED_PROFILE_COUNT is a number")
        });
        // `STAGED_PROFILE_REPEAT=N` runs the profiled set N times (for `perf record`, whose
        // samples should be the loop's, not the setup's).
        let repeat: usize = std::env::var("STAGED_PROFILE_REPEAT")
            .map_or(1, |n| n.parse().expect("STAGED_PROFILE_REPEAT is a number"));
        let queries = requests(&policy, count, 13);
        for r in &queries {
            black_box(f(&model, r, &limits));
        }
        for _ in 0..repeat {
            black_box(profiled(&model, &queries, &limits, f));
        }
        println!("staged_query profile {variant}: {count} queries");
        return;
    }
    check(&program, &policy, &model, &requests(&policy, 200, 7));

    // Proofs of model facts (the role chains) are cached in the model once built. On a fresh
    // model the first proofs build them: time the first 1,000 queries of a new model.
    let fresh = program.materialise(&policy.facts, &limits).unwrap();
    let cold = timed(&requests(&policy, 1_000, 23), |r| {
        decide_and_prove(&fresh, r, &limits)
    });
    println!(
        "staged_query manual with_proof_fresh_model n={} p50={:.2}us p90={:.2}us p99={:.2}us",
        cold.len(),
        us(pct(&cold, 0.50)),
        us(pct(&cold, 0.90)),
        us(pct(&cold, 0.99)),
    );
    drop(fresh);

    // Manual p50/p99: warm up, then the two variants in turn on fresh request sets.
    let warm = requests(&policy, WARM_UP, 11);
    timed(&warm, |r| decide(&model, r, &limits));
    timed(&warm, |r| decide_and_prove(&model, r, &limits));
    let plain = timed(&requests(&policy, ITERATIONS, 13), |r| {
        decide(&model, r, &limits)
    });
    let proved = timed(&requests(&policy, ITERATIONS, 17), |r| {
        decide_and_prove(&model, r, &limits)
    });
    for (name, d) in [("no_proof", &plain), ("with_proof", &proved)] {
        println!(
            "staged_query manual {name:<10} n={} p50={:.2}us p90={:.2}us p99={:.2}us max={:.2}us",
            d.len(),
            us(pct(d, 0.50)),
            us(pct(d, 0.90)),
            us(pct(d, 0.99)),
            us(pct(d, 1.0)),
        );
    }
    println!(
        "staged_query manual ratio with_proof/no_proof p50={:.2}x p99={:.2}x",
        us(pct(&proved, 0.50)) / us(pct(&plain, 0.50)),
        us(pct(&proved, 0.99)) / us(pct(&plain, 0.99)),
    );

    let pool = requests(&policy, 4_096, 19);
    let mut group = c.benchmark_group("staged_query");
    group
        .sample_size(50)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    let mut i = 0usize;
    group.bench_function("no_proof", |b| {
        b.iter(|| {
            i = (i + 1) % pool.len();
            decide(&model, black_box(&pool[i]), &limits)
        });
    });
    let mut i = 0usize;
    group.bench_function("with_proof", |b| {
        b.iter(|| {
            i = (i + 1) % pool.len();
            decide_and_prove(&model, black_box(&pool[i]), &limits)
        });
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
