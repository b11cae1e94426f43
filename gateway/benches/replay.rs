//! Counterfactual replay: a batch of 100 mutations against the largest fixture run
//! (`02-feature-users-pagination`: 31 steps, 243 events), with the exact replay of the same
//! run as the yardstick in the same process.
//!
//! The 100 scenarios: `drop_item` and `change_weight` (to 0) for each of the 39 items the run
//! offers, `disable_rule` for each envelope rule it was decided under, and total budgets from
//! 500 tokens up until there are 100. Timed: the baseline (the exact replay, checked for drift,
//! and the unmutated trajectory) and all 100 scenarios with their comparisons, on 1 thread and
//! on 2 (as `replay.batch` runs them), in memory (the store's writes are not timed).
//!
//! Run with `cargo bench -p tollgate-gateway --bench replay`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::sync::Mutex;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use tollgate_gateway::recorder::format::RunFile;
use tollgate_gateway::replay::replay_file;
use tollgate_gateway::replay::result::Baseline;
use tollgate_gateway::replay::scenario::{
    ModelSource, Mutation, RunInventory, ScenarioSpec, ToolMode,
};

const SCENARIOS: usize = 100;

fn fixture() -> RunFile {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../fixtures/runs/02-feature-users-pagination.json"
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn scenarios(file: &RunFile) -> Vec<ScenarioSpec> {
    let inventory = RunInventory::of(file, None);
    let mut mutations: Vec<Mutation> = Vec::new();
    for id in inventory.items.keys() {
        mutations.push(Mutation::DropItem { item: id.clone() });
        mutations.push(Mutation::ChangeWeight {
            item: id.clone(),
            weight: 0.0,
        });
    }
    for rule in &inventory.rules {
        mutations.push(Mutation::DisableRule { rule: rule.clone() });
    }
    let mut budget = 500;
    while mutations.len() < SCENARIOS {
        mutations.push(Mutation::ChangeBudget {
            item_kind: None,
            budget,
        });
        budget += 250;
    }
    mutations.truncate(SCENARIOS);
    mutations
        .into_iter()
        .map(|m| ScenarioSpec {
            run: file.run.id.clone(),
            step: None,
            name: None,
            mutations: vec![m],
            mode: ToolMode::DryRun,
            model: ModelSource::Recorded,
            metrics: Vec::new(),
            rubric: Vec::new(),
        })
        .collect()
}

/// The baseline, then every scenario on `threads` threads; the number of losses.
fn batch(file: &RunFile, specs: &[ScenarioSpec], threads: usize) -> usize {
    let baseline = Baseline::new(file, None).unwrap();
    let next = Mutex::new(specs.iter());
    let losses = Mutex::new(0usize);
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                loop {
                    let Some(spec) = next.lock().unwrap().next() else {
                        break;
                    };
                    let r = baseline.run(spec, None, None).unwrap();
                    if r.label == tollgate_gateway::replay::metrics::Label::Loss {
                        *losses.lock().unwrap() += 1;
                    }
                }
            });
        }
    });
    losses.into_inner().unwrap()
}

fn bench(c: &mut Criterion) {
    let file = fixture();
    let specs = scenarios(&file);
    assert_eq!(specs.len(), SCENARIOS);
    let mut group = c.benchmark_group("replay");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(20));
    group.bench_function("exact replay (yardstick)", |b| {
        b.iter(|| black_box(replay_file(&file).unwrap()))
    });
    group.bench_function("100-mutation batch, 1 thread", |b| {
        b.iter(|| black_box(batch(&file, &specs, 1)))
    });
    group.bench_function("100-mutation batch, 2 threads", |b| {
        b.iter(|| black_box(batch(&file, &specs, 2)))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
