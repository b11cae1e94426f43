//! Compile latency for 1,000 candidate items: without policy, and with a policy engine over
//! `fixtures/envelopes/` (one context decision per item, before selection), counted with
//! o200k_base and with the `bytes4` fallback.
//!
//! The items are generated deterministically: all six kinds, 40–2,400 bytes each, a quarter
//! with a summary, one in ten labelled `secret` (redacted under the fixtures, with an AWS key
//! id in the text) and one in ten from another organisation (denied). The budget is 32,000
//! tokens, so selection excludes and summarises too. The BPE vocabulary and the engine are
//! loaded before timing.
//!
//! Run with `cargo bench -p tollgate-gateway --bench compile`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::path::PathBuf;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use tollgate_gateway::compiler::{
    BYTES4, CandidateItem, CompileInput, CompilePolicy, ItemKind, compile,
};
use tollgate_rules::decide::PolicyEngine;
use tollgate_rules::envelope::{Level, load_envelopes};
use tollgate_rules::request::{RunSubject, subject_facts};

const ITEMS: usize = 1_000;
const BUDGET: u32 = 32_000;

/// xorshift64: deterministic, no dependencies.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const WORDS: [&str; 16] = [
    "session", "login", "the", "handler", "returns", "an", "error", "when", "token", "store", "fn",
    "let", "user", "request", "cache", "timeout",
];

fn items() -> Vec<CandidateItem> {
    let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
    (0..ITEMS)
        .map(|i| {
            let kind = ItemKind::ALL[i % ItemKind::ALL.len()];
            let bytes = 40 + rng.below(2_360) as usize;
            let mut content = String::with_capacity(bytes + 16);
            while content.len() < bytes {
                content.push_str(WORDS[rng.below(16) as usize]);
                content.push(if rng.below(12) == 0 { '\n' } else { ' ' });
            }
            let mut item = CandidateItem::new(format!("item-{i:04}"), kind, content);
            item.weight = (rng.below(100) as f64) / 10.0;
            item.scope = if i % 10 == 3 {
                "org:partner/repo:sdk".into()
            } else {
                "org:acme/repo:api".into()
            };
            item.sensitivity = Level::Internal;
            if i % 10 == 7 {
                item.labels = vec!["secret".into()];
                if let Some(c) = item.content.as_mut() {
                    c.push_str(" key AKIASFUHIPUR8FUTQKVQ end");
                }
            }
            if i % 4 == 0 {
                item.summary = Some(format!("summary of item {i}: the session handler"));
            }
            if kind == ItemKind::Message {
                item.role = Some("user".into());
            }
            item
        })
        .collect()
}

fn engine() -> PolicyEngine {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fixtures/envelopes");
    let sources: Vec<(String, String)> = ["org-baseline.yaml", "coding-agent.yaml"]
        .iter()
        .map(|f| (f.to_string(), std::fs::read_to_string(dir.join(f)).unwrap()))
        .collect();
    let set = load_envelopes(&sources).unwrap();
    let coder = RunSubject {
        run: "run-42".into(),
        agent: "coder".into(),
        task: "T-12".into(),
        scope: "org:acme/repo:api/task:T-12".into(),
        clearance: Level::Confidential,
    };
    PolicyEngine::new(&set, &subject_facts(&[coder], &[])).unwrap()
}

fn bench(c: &mut Criterion) {
    let mut input = CompileInput::new(items());
    input.settings.budget = BUDGET;
    let mut bytes4 = input.clone();
    bytes4.settings.tokenizer = BYTES4.into();
    let engine = engine();
    let policy = CompilePolicy {
        engine: &engine,
        run: "run-42",
        memo: None,
    };
    // Load the vocabulary and print what one compile does, once.
    let with = compile(&input, Some(&policy)).unwrap();
    let shown = with
        .outcomes
        .iter()
        .filter(|o| o.status != tollgate_gateway::compiler::ItemStatus::Excluded)
        .count();
    eprintln!(
        "1,000 items under policy: {shown} in the text, {} tokens of {BUDGET}",
        with.tokens
    );

    let mut group = c.benchmark_group("compile_1000_items");
    group.sample_size(20);
    group.measurement_time(Duration::from_secs(8));
    group.bench_function("o200k/no_policy", |b| {
        b.iter(|| compile(black_box(&input), None).unwrap())
    });
    group.bench_function("o200k/policy", |b| {
        b.iter(|| compile(black_box(&input), Some(&policy)).unwrap())
    });
    group.bench_function("bytes4/no_policy", |b| {
        b.iter(|| compile(black_box(&bytes4), None).unwrap())
    });
    group.bench_function("bytes4/policy", |b| {
        b.iter(|| compile(black_box(&bytes4), Some(&policy)).unwrap())
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
