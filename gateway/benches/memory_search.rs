//! Memory search figures for BENCHMARKS.md (issue 13, done-when 5, second half): `search` over
//! 100,000 and 1,000,000 generated memories with eligibility enforced — the memory pack
//! deciding, the store selecting the eligible groups' members, BM25 ranking what is left.
//!
//! The memories are spread as distillation leaves them: 20 organisations, 50 repositories
//! each, most memories at repository scope (75%), some at organisation (15%) or task scope
//! (10%). Two shapes: `spread`, the organisations alike; `one large org`, `org:acme` holding
//! 40% of all memories, so a run there can see eight times as many. Every class;
//! mostly internal; 70% approved, the rest candidates, rejected, quarantined or expired; 30%
//! with an expiry (a tenth of those passed); 3% pinned. Each says 6 to 14 words drawn from a
//! 5,000-word vocabulary by a Zipf law, so common words match many memories. Queries are 3 to
//! 6 words drawn the same way, asked from a task of `org:acme` at clearance confidential.
//!
//! Two figures per store: *warm*, 400 queries from 40 vantage points (tasks), as compiles of
//! 40 running runs would ask them — the memory pack's decision for a vantage point is cached,
//! so it is paid once per run, not per compile; and *cold*, 100 queries each from a vantage
//! point never seen before, which pays the pack's decision every time.
//!
//! The stores are generated once into `target/bench-memory-search/` and kept.
//! `TOLLGATE_BENCH_ONLY=1000000-spread` (or `100000-skewed`, ...) runs one of them.
//!
//! `cargo bench -p tollgate-gateway --bench memory_search`; with
//! `TOLLGATE_BENCH_POSTGRES_URL=postgres://…` the stores are schemas of that database
//! (benches/support), searched with PostgreSQL's text search.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use tollgate_gateway::memory::{SearchQuery, search};
use tollgate_gateway::policy::{current_set, store_envelopes};
use tollgate_gateway::store::{Store, StoreLocation};

mod support;
use tollgate_rules::envelope::{EnvelopeSet, Level};

/// 2026-11-25T00:00:00Z, in seconds.
const NOW: i64 = 1_795_564_800;
const VOCABULARY: usize = 5_000;
const QUERIES: usize = 400;

fn fail(what: &str, e: impl std::fmt::Display) -> ! {
    panic!("{what}: {e}")
}

/// splitmix64: the same numbers every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn percent(&mut self) -> usize {
        self.below(100)
    }
}

/// The vocabulary (pronounceable words of 2 to 4 syllables) and the Zipf law's cumulative
/// weights over it.
struct Words {
    words: Vec<String>,
    cumulative: Vec<f64>,
}

impl Words {
    fn new() -> Words {
        const ONSETS: [&str; 16] = [
            "b", "c", "d", "f", "g", "h", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z",
        ];
        const VOWELS: [&str; 5] = ["a", "e", "i", "o", "u"];
        let mut words = Vec::with_capacity(VOCABULARY);
        let mut rng = Rng(7);
        while words.len() < VOCABULARY {
            let syllables = 2 + rng.below(3);
            let w: String = (0..syllables)
                .map(|_| format!("{}{}", ONSETS[rng.below(16)], VOWELS[rng.below(5)]))
                .collect();
            if !words.contains(&w) {
                words.push(w);
            }
        }
        let mut total = 0.0;
        let cumulative = (1..=VOCABULARY)
            .map(|rank| {
                total += 1.0 / rank as f64;
                total
            })
            .collect();
        Words { words, cumulative }
    }

    fn pick(&self, rng: &mut Rng) -> &str {
        let total = self.cumulative[VOCABULARY - 1];
        let x = (rng.next() >> 11) as f64 / (1u64 << 53) as f64 * total;
        let i = self.cumulative.partition_point(|c| *c < x);
        &self.words[i.min(VOCABULARY - 1)]
    }

    fn sentence(&self, rng: &mut Rng, min: usize, spread: usize) -> String {
        let n = min + rng.below(spread);
        (0..n).map(|_| self.pick(rng)).collect::<Vec<_>>().join(" ")
    }
}

fn envelope(name: &str) -> (String, String) {
    let path = format!(
        "{}/../fixtures/envelopes/{name}.yaml",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| fail(&path, e));
    (path, text)
}

/// A store of `n` generated memories (generated once, then reused).
fn generated(n: usize, skewed: bool, words: &Words) -> Store {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/bench-memory-search");
    let _ = std::fs::create_dir_all(&dir);
    let shape = if skewed { "skewed" } else { "spread" };
    let path = dir.join(format!("memories-{shape}-{n}.db"));
    let (store, built) = support::open(&format!("memories_{shape}_{n}"), &path);
    if built {
        return settled(store);
    }
    let started = Instant::now();
    store_envelopes(
        &store,
        &[envelope("org-baseline"), envelope("coding-agent")],
    )
    .unwrap_or_else(|e| fail("envelopes", e));
    let mut rng = Rng(n as u64);
    let mut rows = Vec::with_capacity(n);
    for i in 0..n {
        rows.push(memory(i, skewed, &mut rng, words));
    }
    // A thousand memories a transaction: on PostgreSQL each insert raises the census row, its
    // group's and its words' counts, and one transaction updating one row N times walks a chain
    // of N versions on each update (quadratic); between transactions the old versions are pruned.
    for chunk in rows.chunks(1_000) {
        let chunk = chunk.to_vec();
        store
            .write(move |c| {
                let mut stmt = c.prepare(
                    "INSERT INTO memories (id, class, text, norm, scope, sensitivity, status,
                         pinned, ttl_seconds, expires_at, strength, usage_count, score,
                         extractor, created_at, updated_at)
                     VALUES (?1, ?2, ?3, ?3, ?4, ?5, ?6, ?7, 0, ?8, ?9, ?10, ?11, 'generated',
                             '2026-11-01T00:00:00Z', '2026-11-01T00:00:00Z')",
                )?;
                for m in &chunk {
                    stmt.execute(tollgate_gateway::store::params![
                        m.id,
                        m.class,
                        m.text,
                        m.scope,
                        m.level,
                        m.status,
                        m.pinned,
                        m.expires_at,
                        m.strength,
                        m.usage,
                        m.score
                    ])?;
                }
                Ok(())
            })
            .unwrap_or_else(|e| fail("insert", e));
    }
    support::mark_built(&store);
    // Leave the store as a long-running gateway would have it: on SQLite the log
    // checkpointed; on PostgreSQL the tables analysed (autovacuum would have by then).
    let store = match store
        .location()
        .file_path()
        .map(std::path::Path::to_path_buf)
    {
        Some(path) => {
            drop(store);
            let raw = rusqlite::Connection::open(&path).unwrap_or_else(|e| fail("open", e));
            raw.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
                .unwrap_or_else(|e| fail("checkpoint", e));
            drop(raw);
            Store::open(&StoreLocation::file(&path)).unwrap_or_else(|e| fail("open", e))
        }
        None => settled(store),
    };
    eprintln!(
        "generated {n} memories ({shape}) in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    store
}

/// On PostgreSQL, the memory tables vacuumed and analysed, as autovacuum leaves them on a
/// running server (and after a migration has filled a table): the statistics the planner
/// needs, and the visibility map an index-only scan of the postings needs to skip the heap.
/// This schema's tables only: a bare VACUUM takes every schema of the database (a test
/// database holds hundreds) and runs out of lock slots. SQLite: nothing to do.
fn settled(store: Store) -> Store {
    if store.location().file_path().is_none() {
        store
            .read(|c| {
                c.execute_batch(
                    "VACUUM (ANALYZE) memories, memory_postings, memory_groups, memory_words, \
                     memory_changes, memory_census",
                )
            })
            .unwrap_or_else(|e| fail("vacuum", e));
    }
    store
}

#[derive(Clone)]
struct Row {
    id: String,
    class: &'static str,
    text: String,
    scope: String,
    level: &'static str,
    status: &'static str,
    pinned: bool,
    expires_at: i64,
    strength: u32,
    usage: i64,
    score: String,
}

fn memory(i: usize, skewed: bool, rng: &mut Rng, words: &Words) -> Row {
    let acme = if skewed { 40 } else { 5 };
    let org = if rng.percent() < acme {
        "org:acme".to_string()
    } else {
        format!("org:o{}", rng.below(19))
    };
    let repo = format!("{org}/repo:r{}", rng.below(50));
    let scope = match rng.percent() {
        0..15 => org,
        15..90 => repo,
        _ => format!("{repo}/task:t{}", rng.below(200)),
    };
    let class = ["fact", "procedure", "preference", "warning", "summary"][rng.below(5)];
    let level = match rng.percent() {
        0..20 => "public",
        20..75 => "internal",
        75..95 => "confidential",
        _ => "secret",
    };
    let status = match rng.percent() {
        0..70 => "approved",
        70..90 => "candidate",
        90..94 => "rejected",
        94..97 => "quarantined",
        _ => "expired",
    };
    let expires_at = match rng.percent() {
        0..70 => 0,
        70..97 => NOW + 86_400 * (1 + rng.below(90)) as i64,
        _ => NOW - 86_400 * (1 + rng.below(30)) as i64,
    };
    let recency = rng.below(1000) as f64 / 1000.0;
    Row {
        id: format!("mem-{i:08x}"),
        class,
        text: words.sentence(rng, 6, 9),
        scope,
        level,
        status,
        pinned: rng.percent() < 3,
        expires_at,
        strength: 1 + rng.below(5) as u32,
        usage: rng.below(50) as i64,
        score: format!(
            "{{\"confidence\":0.9,\"recency\":{recency},\"reuse\":0.7,\"sensitivity\":0.0,\"total\":0.8}}"
        ),
    }
}

fn query(rng: &mut Rng, words: &Words, scope: String) -> SearchQuery {
    SearchQuery {
        scope,
        clearance: Level::Confidential,
        agent: None,
        task: None,
        user: None,
        repo: None,
        class: None,
        text: words.sentence(rng, 3, 4),
        limit: 10,
    }
}

/// Runs `queries` once each and prints the percentiles.
fn report(name: &str, store: &Store, set: &EnvelopeSet, queries: &[SearchQuery]) {
    let mut times = Vec::with_capacity(queries.len());
    let mut hits = 0;
    let mut eligible = 0;
    for q in queries {
        let t = Instant::now();
        let answer = search(store, set, q, NOW).unwrap_or_else(|e| fail("search", e));
        times.push(t.elapsed());
        hits += answer.hits.len();
        eligible += answer.eligible;
    }
    times.sort();
    let n = queries.len();
    eprintln!(
        "memory_search ({}) {name}: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms over {n} queries; \
         {:.1} hits and {} eligible memories per query on average",
        support::engine(),
        percentile(&times, 0.5).as_secs_f64() * 1e3,
        percentile(&times, 0.99).as_secs_f64() * 1e3,
        times[n - 1].as_secs_f64() * 1e3,
        hits as f64 / n as f64,
        eligible / n as u64,
    );
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn searching(c: &mut Criterion) {
    let words = Words::new();
    let mut group = c.benchmark_group(format!("memory_search ({})", support::engine()));
    group.sample_size(50);
    group.measurement_time(Duration::from_secs(10));
    for (n, skewed) in [
        (100_000, false),
        (1_000_000, false),
        (100_000, true),
        (1_000_000, true),
    ] {
        let shape = if skewed { "one large org" } else { "spread" };
        // `TOLLGATE_BENCH_ONLY=1000000-spread` runs one shape (to profile it).
        if let Ok(only) = std::env::var("TOLLGATE_BENCH_ONLY") {
            let name = format!("{n}-{}", if skewed { "skewed" } else { "spread" });
            if only != name {
                continue;
            }
        }
        let store = generated(n, skewed, &words);
        let set = current_set(&store).unwrap_or_else(|e| fail("envelopes", e));
        let mut rng = Rng(42);
        let vantage: Vec<String> = (0..40)
            .map(|i| format!("org:acme/repo:r{}/task:t{i}", rng.below(50)))
            .collect();
        let queries: Vec<SearchQuery> = (0..QUERIES)
            .map(|i| query(&mut rng, &words, vantage[i % vantage.len()].clone()))
            .collect();
        // Warm: percentiles over the fixed queries after one pass.
        for q in &queries {
            search(&store, &set, q, NOW).unwrap_or_else(|e| fail("search", e));
        }
        report(&format!("{n} {shape}, warm"), &store, &set, &queries);
        // Cold: every query from a task never asked from before.
        let cold: Vec<SearchQuery> = (0..100)
            .map(|i| {
                let scope = format!("org:acme/repo:r{}/task:cold{n}-{i}", rng.below(50));
                query(&mut rng, &words, scope)
            })
            .collect();
        report(&format!("{n} {shape}, cold"), &store, &set, &cold);
        let mut i = 0;
        group.bench_function(format!("{n} memories, {shape}"), |b| {
            b.iter(|| {
                i = (i + 1) % QUERIES;
                search(&store, &set, &queries[i], NOW).unwrap_or_else(|e| fail("search", e))
            });
        });
    }
    group.finish();
}

criterion_group!(benches, searching);
criterion_main!(benches);
