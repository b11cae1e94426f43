//! Ranking from the columns kept in memory, reading whole rows for the best only, gives what
//! reading and scoring every eligible match gives — after writes through this store, writes
//! by another process, and a change log that no longer reaches back.

use proptest::prelude::*;
use serde_json::json;
use tollgate_rules::envelope::EnvelopeSet;

use super::*;
use crate::store::tests::tempdir::Dir;

const WORDS: [&str; 8] = [
    "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel",
];
const CLASSES: [&str; 5] = ["fact", "procedure", "preference", "warning", "summary"];
const SCOPES: [&str; 4] = [
    "org:acme",
    "org:acme/repo:api",
    "org:acme/repo:api/task:T-1",
    "org:acme/repo:web",
];
const STATUSES: [&str; 3] = ["approved", "approved", "candidate"];
const NOW: i64 = 1_000_000;

/// A memory: its words, class, scope, status, expiry, strength, use, helpful, recency.
type Memory = (Vec<usize>, usize, usize, usize, i64, u32, i64, i64, u32);

fn memory() -> impl Strategy<Value = Memory> {
    (
        prop::collection::vec(0..WORDS.len(), 1..7),
        0..CLASSES.len(),
        0..SCOPES.len(),
        0..STATUSES.len(),
        prop_oneof![Just(0i64), Just(NOW - 5), Just(NOW + 50)],
        1u32..6,
        0i64..40,
        0i64..3,
        0u32..=100,
    )
}

/// A write: a new memory, a memory's use or score changed, its words, its status, its scope, or
/// deleted; through this store or another one on the same file; the log trimmed after it or not.
#[derive(Debug, Clone)]
enum Change {
    Insert(Memory),
    Used(prop::sample::Index, i64),
    Rescored(prop::sample::Index, u32),
    Reworded(prop::sample::Index, Vec<usize>),
    Status(prop::sample::Index, usize),
    /// Moved to another scope: its postings (terms) move with it.
    Rescoped(prop::sample::Index, usize),
    Deleted(prop::sample::Index),
}

fn change() -> impl Strategy<Value = Change> {
    prop_oneof![
        memory().prop_map(Change::Insert),
        (any::<prop::sample::Index>(), 0i64..40).prop_map(|(i, n)| Change::Used(i, n)),
        (any::<prop::sample::Index>(), 0u32..=100).prop_map(|(i, r)| Change::Rescored(i, r)),
        (
            any::<prop::sample::Index>(),
            prop::collection::vec(0..WORDS.len(), 1..7)
        )
            .prop_map(|(i, w)| Change::Reworded(i, w)),
        (any::<prop::sample::Index>(), 0..STATUSES.len()).prop_map(|(i, s)| Change::Status(i, s)),
        (any::<prop::sample::Index>(), 0..SCOPES.len()).prop_map(|(i, s)| Change::Rescoped(i, s)),
        any::<prop::sample::Index>().prop_map(Change::Deleted),
    ]
}

fn text(words: &[usize]) -> String {
    words
        .iter()
        .map(|w| WORDS[*w])
        .collect::<Vec<_>>()
        .join(" ")
}

fn insert(c: &Connection, id: &str, m: &Memory) -> Result<usize, crate::store::StoreError> {
    let score = json!({"confidence": 0.9, "reuse": 0.5, "recency": f64::from(m.8) / 100.0,
                       "sensitivity": 0.0, "total": 0.7});
    c.execute(
        "INSERT INTO memories (id, class, text, norm, scope, sensitivity, status, pinned,
             ttl_seconds, expires_at, strength, usage_count, helpful, score, extractor,
             created_at, updated_at)
         VALUES (?1, ?2, ?3, ?3, ?4, 'internal', ?5, 0, 0, ?6, ?7, ?8, ?9, ?10, 'test', 't', 't')",
        crate::store::params![
            id,
            CLASSES[m.1],
            text(&m.0),
            SCOPES[m.2],
            STATUSES[m.3],
            m.4,
            m.5,
            m.6,
            m.7,
            score.to_string()
        ],
    )
}

fn apply(
    c: &Connection,
    ids: &[String],
    change: &Change,
    next: usize,
) -> Result<(), crate::store::StoreError> {
    let pick = |i: &prop::sample::Index| ids[i.index(ids.len())].clone();
    match change {
        Change::Insert(m) => {
            insert(c, &format!("mem-{next:03}"), m)?;
        }
        Change::Used(i, n) => {
            c.execute(
                "UPDATE memories SET usage_count = ?2 WHERE id = ?1",
                crate::store::params![pick(i), n],
            )?;
        }
        Change::Rescored(i, r) => {
            // The whole score, as the lifecycle writes it (`json_set` is SQLite's alone).
            let score = json!({"confidence": 0.9, "reuse": 0.5, "recency": f64::from(*r) / 100.0,
                               "sensitivity": 0.0, "total": 0.7});
            c.execute(
                "UPDATE memories SET score = ?2 WHERE id = ?1",
                crate::store::params![pick(i), score.to_string()],
            )?;
        }
        Change::Reworded(i, w) => {
            c.execute(
                "UPDATE memories SET text = ?2, norm = ?2 WHERE id = ?1",
                crate::store::params![pick(i), text(w)],
            )?;
        }
        Change::Status(i, s) => {
            c.execute(
                "UPDATE memories SET status = ?2 WHERE id = ?1",
                crate::store::params![pick(i), STATUSES[*s]],
            )?;
        }
        Change::Rescoped(i, s) => {
            c.execute(
                "UPDATE memories SET scope = ?2 WHERE id = ?1",
                crate::store::params![pick(i), SCOPES[*s]],
            )?;
        }
        Change::Deleted(i) => {
            c.execute("DELETE FROM memories WHERE id = ?1", [pick(i)])?;
        }
    }
    Ok(())
}

fn header(scope: &str) -> RunHeader {
    RunHeader {
        id: "run-1".into(),
        agent: "coder".into(),
        task: "T-1".into(),
        scope: scope.into(),
        clearance: "confidential".into(),
        status: "running".into(),
        started_at: "2026-11-25T00:00:00Z".into(),
        finished_at: None,
        parent_run: None,
        envelopes: Vec::new(),
        metadata: json!({}),
    }
}

/// Every eligible memory that says a query word, read and scored, best first.
fn every_match(
    c: &Connection,
    eligibility: &Eligibility,
    query: &str,
    limit: usize,
) -> Result<Vec<(String, f64)>, StoreError> {
    let words = query_terms(c, query)?;
    let Some(filter) = eligibility.filter(&|_| true) else {
        return Ok(Vec::new());
    };
    let mut stmt = c.prepare(&format!("SELECT {COLUMNS} FROM memories m WHERE {filter}"))?;
    let mut rows = stmt.query(())?;
    let mut found = Vec::new();
    while let Some(r) = rows.next()? {
        let norm: String = r.get(9)?;
        let mut counts = [0u16; QUERY_TERMS];
        let mut length = 0;
        for w in norm.split(' ') {
            length += 1;
            if let Some(i) = words.iter().position(|t| t.word == w) {
                counts[i] += 1;
            }
        }
        if counts.iter().any(|c| *c > 0) {
            let (ranked, _) = row(&r)?;
            found.push((ranked, length, counts));
        }
    }
    let matched: Vec<Match> = found
        .iter()
        .map(|(_, length, counts)| Match {
            rowid: 0,
            length: *length,
            counts: *counts,
            fixed: 0.0,
        })
        .collect();
    let weights = Bm25::over(&words, &matched, eligibility.total);
    let mut out: Vec<(String, f64)> = found
        .into_iter()
        .map(|(r, length, counts)| {
            let lexical = weights.score(length, &counts);
            (r.id, relevance(r.relevance, lexical))
        })
        .collect();
    out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    out.truncate(limit);
    Ok(out)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]

    #[test]
    fn ranking_from_the_kept_columns_is_ranking_every_match(
        first in prop::collection::vec(memory(), 1..30),
        rounds in prop::collection::vec(
            (prop::collection::vec((change(), any::<bool>()), 0..6), any::<bool>()),
            1..5,
        ),
        queries in prop::collection::vec(
            (prop::collection::vec(0..WORDS.len(), 1..4), 0..SCOPES.len(), 1usize..8),
            1..4,
        ),
    ) {
        let dir = Dir::new("ranking-columns");
        // Either engine (`TOLLGATE_TEST_ENGINE`): on PostgreSQL the postings' triggers are
        // checked too, through rewording, rescoping and deleting.
        let location = crate::store::tests::location_in(dir.path());
        let store = Store::open(&location).unwrap();
        let other = Store::open(&location).unwrap();
        let mut ids: Vec<String> = Vec::new();
        for m in first {
            let id = format!("mem-{:03}", ids.len());
            let inserted = id.clone();
            store.write(move |c| insert(c, &inserted, &m)).unwrap();
            ids.push(id);
        }
        let set = EnvelopeSet::empty();
        let kept = columns::of(&store);
        for (changes, trim) in rounds {
            for (change, elsewhere) in changes {
                let (at, known, next) = (if elsewhere { &other } else { &store }, ids.clone(), ids.len());
                let done = change.clone();
                at.write(move |c| apply(c, &known, &done, next)).unwrap();
                if matches!(change, Change::Insert(_)) {
                    ids.push(format!("mem-{next:03}"));
                }
            }
            if trim {
                // As if the log had moved on past what this process last read.
                other
                    .write(|c| {
                        c.execute(
                            "DELETE FROM memory_changes WHERE seq < (SELECT MAX(seq) FROM memory_changes)",
                            (),
                        )?;
                        Ok(())
                    })
                    .unwrap();
            }
            for (words, scope, limit) in &queries {
                let query = text(words);
                let eligibility = Eligibility::decide(&store, &set, &header(SCOPES[*scope]), NOW).unwrap();
                let (got, want) = {
                    let (query, limit, kept) = (query.clone(), *limit, kept.clone());
                    store
                        .read(move |c| {
                            let got = ranked(c, &eligibility, &|_| true, &Narrow::default(), &kept, &query, limit)?;
                            let want = every_match(c, &eligibility, &query, limit)?;
                            Ok((got, want))
                        })
                        .unwrap()
                };
                let got: Vec<(String, f64)> = got.into_iter().map(|r| (r.id, r.relevance)).collect();
                // Without a word any memory says, ranking falls back to the strongest memories.
                if !want.is_empty() {
                    prop_assert_eq!(got, want, "{} from {}", query, SCOPES[*scope]);
                }
            }
        }
    }
}
