//! The partition by group checked against the memory pack deciding every memory itself.

use std::collections::BTreeSet;

use proptest::prelude::*;
use serde_json::json;

use super::*;

use crate::store::tests::tempdir::Dir;

const CLASSES: [&str; 5] = ["fact", "procedure", "preference", "warning", "summary"];
const SCOPES: [&str; 5] = [
    "org:acme",
    "org:acme/repo:api",
    "org:acme/repo:api/task:T-1",
    "org:acme/repo:web",
    "org:globex",
];
const LEVELS: [Level; 4] = [
    Level::Public,
    Level::Internal,
    Level::Confidential,
    Level::Secret,
];
const STATUSES: [&str; 5] = [
    "candidate",
    "approved",
    "rejected",
    "quarantined",
    "expired",
];
const NOW: i64 = 1_000_000;

/// A memory's metadata: class, scope, level, status, expiry, pinned (indexes).
type Meta = (usize, usize, usize, usize, i64, bool);

fn meta() -> impl Strategy<Value = Meta> {
    (
        0..CLASSES.len(),
        0..SCOPES.len(),
        0..LEVELS.len(),
        0..STATUSES.len(),
        prop_oneof![
            Just(0i64),
            Just(NOW),
            Just(NOW - 5),
            Just(NOW + 1),
            Just(NOW + 99)
        ],
        any::<bool>(),
    )
}

fn envelope(name: &str) -> (String, String) {
    let path = format!(
        "{}/../fixtures/envelopes/{name}.yaml",
        env!("CARGO_MANIFEST_DIR")
    );
    (path.clone(), std::fs::read_to_string(&path).unwrap())
}

fn header(agent: &str, scope: &str, clearance: Level) -> RunHeader {
    RunHeader {
        id: "run-1".into(),
        agent: agent.into(),
        task: "T-1".into(),
        scope: scope.into(),
        clearance: clearance.as_str().into(),
        status: "running".into(),
        started_at: "2026-11-25T00:00:00Z".into(),
        finished_at: None,
        parent_run: None,
        envelopes: Vec::new(),
        metadata: json!({}),
    }
}

fn put(c: &Connection, id: &str, m: &Meta) -> Result<usize, StoreError> {
    with_meta(
        c,
        "INSERT INTO memories (id, class, text, norm, scope, sensitivity, status, pinned,
             ttl_seconds, expires_at, strength, usage_count, score, extractor, created_at,
             updated_at)
         VALUES (?1, ?2, ?1, ?1, ?3, ?4, ?5, ?6, 0, ?7, 1, 0, '{}', 'test', 't', 't')",
        id,
        m,
    )
}

/// Runs `sql` with the memory's id and its metadata as `?1` to `?7` (class, scope, level,
/// status, pinned, expiry).
fn with_meta(c: &Connection, sql: &str, id: &str, m: &Meta) -> Result<usize, StoreError> {
    c.execute(
        sql,
        crate::store::params![
            id,
            CLASSES[m.0],
            SCOPES[m.1],
            LEVELS[m.2].as_str(),
            STATUSES[m.3],
            m.5,
            m.4
        ],
    )
}

/// What deciding every memory of `metas` (ids `m00`, `m01`...) for `h`'s run at `now`
/// gives: the eligible ones, and how many are withheld for which reasons (those off the
/// run's chain for `out_of_scope` alone, as groups count them).
fn each_decided(
    set: &EnvelopeSet,
    h: &RunHeader,
    metas: &[Meta],
    now: i64,
) -> (BTreeSet<String>, BTreeMap<Vec<String>, u64>) {
    let records: Vec<MemoryRecord> = metas
        .iter()
        .enumerate()
        .map(|(i, m)| MemoryRecord {
            id: format!("m{i:02}"),
            class: CLASSES[m.0].into(),
            scope: SCOPES[m.1].into(),
            sensitivity: LEVELS[m.2],
            status: STATUSES[m.3].into(),
            expires_at: m.4 as i32,
            pinned: m.5,
        })
        .collect();
    let mut facts = run_facts(h).unwrap();
    facts.extend_from(&subject_facts(&[], &records));
    let engine = PolicyEngine::new(set, &facts).unwrap();
    let each = engine.retrieve_memories(&h.id, Some(now as i32)).memories;
    let eligible = each
        .iter()
        .filter(|v| v.eligible)
        .map(|v| v.memory.clone())
        .collect();
    let on_chain = |scope: &str| h.scope == scope || h.scope.starts_with(&format!("{scope}/"));
    let mut withheld: BTreeMap<Vec<String>, u64> = BTreeMap::new();
    for v in each.iter().filter(|v| !v.eligible) {
        let i: usize = v.memory[1..].parse().unwrap();
        let reasons = if on_chain(SCOPES[metas[i].1]) {
            v.reasons.clone()
        } else {
            assert!(v.reasons.contains(&"out_of_scope".to_string()));
            vec!["out_of_scope".to_string()]
        };
        *withheld.entry(reasons).or_default() += 1;
    }
    (eligible, withheld)
}

/// What deciding by group gives for `h`'s run at `now`: the members of the eligible parts
/// as selected from the store, how many the parts count, and the withheld counts.
fn by_group(
    store: &Store,
    set: &EnvelopeSet,
    h: &RunHeader,
    now: i64,
) -> (BTreeSet<String>, u64, BTreeMap<Vec<String>, u64>) {
    let e = Eligibility::decide(store, set, h, now).unwrap();
    let filter = e.filter(&|_| true);
    let (got, withheld, counted) = store
        .read(move |c| {
            let got: BTreeSet<String> = match &filter {
                Some(f) => c
                    .prepare(&format!("SELECT m.id FROM memories m WHERE {f}"))?
                    .query_map((), |r| r.get(0))?
                    .collect::<Result<_, _>>()?,
                None => BTreeSet::new(),
            };
            let mut counted = 0;
            for p in e.eligible(&|_| true) {
                counted += e.members(p);
            }
            Ok((got, e.withheld(c, false)?, counted))
        })
        .unwrap();
    let withheld = withheld.into_iter().map(|x| (x.reasons, x.count)).collect();
    (got, counted, withheld)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Deciding groups and selecting their members gives what deciding every memory
    /// gives: the same eligible memories, the same reasons for the rest — after inserts,
    /// later (when expiries have passed since), and after updates that move memories
    /// between groups. The same store decides all three, so a chain kept from a decision
    /// before (`Chains`) must be read again when time or the memories moved. Two vantage
    /// points decide each time, the second's chain assembled in part from scopes the first
    /// read (`read::chain`).
    #[test]
    fn groups_agree_with_deciding_every_memory(
        first in prop::collection::vec(meta(), 0..24),
        changes in prop::collection::vec((any::<prop::sample::Index>(), meta()), 0..8),
        coder in any::<bool>(),
        scope in 0..SCOPES.len(),
        other in 0..SCOPES.len(),
        clearance in 0..LEVELS.len(),
    ) {
        let dir = Dir::new("groups");
        let store = crate::store::tests::open_in(dir.path());
        crate::policy::store_envelopes(
            &store,
            &[envelope("org-baseline"), envelope("coding-agent")],
        )
        .unwrap();
        let set = crate::policy::current_set(&store).unwrap();
        let agent = if coder { "coder" } else { "reviewer" };
        let h = header(agent, SCOPES[scope], LEVELS[clearance]);
        let h2 = header(agent, SCOPES[other], LEVELS[clearance]);
        let inserted = first.clone();
        store
            .write(move |c| {
                for (i, m) in inserted.iter().enumerate() {
                    put(c, &format!("m{i:02}"), m)?;
                }
                Ok(())
            })
            .unwrap();
        // Before some expiries (`NOW - 5`, `NOW`) have passed, then after.
        for now in [NOW - 10, NOW] {
            for h in [&h, &h2] {
                let (want, want_withheld) = each_decided(&set, h, &first, now);
                let (got, counted, withheld) = by_group(&store, &set, h, now);
                prop_assert_eq!(&got, &want, "at {} from {}", now, h.scope);
                prop_assert_eq!(counted, want.len() as u64);
                prop_assert_eq!(withheld, want_withheld);
            }
        }

        // The updates, as indexes into `first` and the metadata each ends with.
        let updates: Vec<(usize, Meta)> = if first.is_empty() {
            Vec::new()
        } else {
            changes.iter().map(|(at, m)| (at.index(first.len()), *m)).collect()
        };
        let mut metas = first.clone();
        for (i, m) in &updates {
            metas[*i] = *m;
        }
        store
            .write(move |c| {
                for (i, m) in &updates {
                    with_meta(
                        c,
                        "UPDATE memories SET class = ?2, scope = ?3, sensitivity = ?4,
                             status = ?5, pinned = ?6, expires_at = ?7 WHERE id = ?1",
                        &format!("m{i:02}"),
                        m,
                    )?;
                }
                Ok(())
            })
            .unwrap();
        for h in [&h2, &h] {
            let (want, want_withheld) = each_decided(&set, h, &metas, NOW);
            let (got, counted, withheld) = by_group(&store, &set, h, NOW);
            prop_assert_eq!(&got, &want, "from {}", h.scope);
            prop_assert_eq!(counted, want.len() as u64);
            prop_assert_eq!(withheld, want_withheld);
        }
    }
}
