//! Reading what a scope chain's eligibility is decided from: the groups of each scope on it,
//! how many members of each expiring group have passed their expiry, the first group off the
//! chain and how many memories there are.
//!
//! Reads are kept per store, as of a generation of the kept columns (`columns`): every change
//! to a memory's group or expiry, and every memory added or deleted, is in the memory change log
//! the columns follow, so a read made at the columns' current generation, asked at a time its
//! expiry counts still hold, is what reading again would give. Two levels are kept: whole
//! chains, so the warm path of a search sends no statement for eligibility at all (on
//! PostgreSQL they were 1.5 ms of a search at a million memories: BENCHMARKS.md), and single
//! scopes, so a chain never seen before (a new task's) reads only the scopes no chain read
//! before it — its own, usually with no groups — and not again its organisation's and
//! repository's hundreds of groups.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use super::Group;
use crate::memory::store::stored_level;
use crate::store::{Connection, IN_LIST, StoreError, Value, in_list, params_from_iter};

/// What a scope chain's eligibility is decided from, as read from the store: its groups, the
/// first group off it, how many memories there are and how many of each expiring group's have
/// passed their expiry (counted at a time in `[from, until)`).
#[derive(Debug)]
pub(super) struct Chain {
    /// The kept columns' generation it was read at (`columns::Columns::generation`).
    generation: u64,
    /// From when its counts of passed expiries hold.
    from: i64,
    /// The first expiry after `from` of a member of an expiring group (`i64::MAX` if none):
    /// until then, the counts of passed expiries are those at `from`.
    until: i64,
    /// What the decision cache keys the groups by ([`digest`]), computed once per read.
    pub(super) digest: [u8; 32],
    /// By id.
    pub(super) groups: Vec<Arc<Group>>,
    pub(super) off_chain: Option<Group>,
    pub(super) total: u64,
    pub(super) passed: Arc<BTreeMap<i64, u64>>,
}

/// One scope's part of a chain: its groups with members and their passed expiries.
#[derive(Debug)]
struct ScopeRead {
    generation: u64,
    from: i64,
    until: i64,
    groups: Vec<Arc<Group>>,
    /// How many members of each of its expiring groups have passed their expiry.
    passed: BTreeMap<i64, u64>,
}

/// The chains and scopes read (see the module), each as of a generation of the kept columns.
#[derive(Debug, Default)]
pub(crate) struct Chains {
    chains: Mutex<BTreeMap<Vec<String>, Arc<Chain>>>,
    scopes: Mutex<BTreeMap<String, Arc<ScopeRead>>>,
}

/// At most this many chains are kept (all dropped when full).
const CHAINS_KEPT: usize = 256;

/// At most this many scopes are kept (all dropped when full).
const SCOPES_KEPT: usize = 1024;

/// Whether something read at `generation` over `[from, until)` is what reading at
/// `generation_now` and `now` would give.
fn holds(read: (u64, i64, i64), generation_now: u64, now: i64) -> bool {
    let (generation, from, until) = read;
    generation == generation_now && from <= now && now < until
}

impl Chains {
    fn chain(&self, chain: &[String], generation: u64, now: i64) -> Option<Arc<Chain>> {
        let kept = self.chains.lock().unwrap_or_else(|e| e.into_inner());
        kept.get(chain)
            .filter(|c| holds((c.generation, c.from, c.until), generation, now))
            .cloned()
    }

    fn put_chain(&self, chain: &[String], read: Arc<Chain>) {
        let mut kept = self.chains.lock().unwrap_or_else(|e| e.into_inner());
        if kept.len() >= CHAINS_KEPT && !kept.contains_key(chain) {
            kept.clear();
        }
        kept.insert(chain.to_vec(), read);
    }

    fn scope(&self, scope: &str, generation: u64, now: i64) -> Option<Arc<ScopeRead>> {
        let kept = self.scopes.lock().unwrap_or_else(|e| e.into_inner());
        kept.get(scope)
            .filter(|s| holds((s.generation, s.from, s.until), generation, now))
            .cloned()
    }

    fn put_scope(&self, scope: &str, read: Arc<ScopeRead>) {
        let mut kept = self.scopes.lock().unwrap_or_else(|e| e.into_inner());
        if kept.len() >= SCOPES_KEPT && !kept.contains_key(scope) {
            kept.clear();
        }
        kept.insert(scope.to_string(), read);
    }
}

/// `chain`'s read at the columns' `generation` and `now`: kept, assembled from kept scopes, or
/// read (only the scopes not kept).
pub(super) fn chain(
    c: &Connection,
    chains: &Chains,
    chain: &[String],
    generation: u64,
    now: i64,
) -> Result<Arc<Chain>, StoreError> {
    if let Some(hit) = chains.chain(chain, generation, now) {
        return Ok(hit);
    }
    let scopes: Vec<&String> = {
        let mut seen = BTreeSet::new();
        chain.iter().filter(|s| seen.insert(s.as_str())).collect()
    };
    let mut reads: BTreeMap<&str, Arc<ScopeRead>> = BTreeMap::new();
    let mut missing = Vec::new();
    for scope in &scopes {
        match chains.scope(scope, generation, now) {
            Some(read) => {
                reads.insert(scope.as_str(), read);
            }
            None => missing.push((*scope).clone()),
        }
    }
    for (scope, read) in read_scopes(c, &missing, generation, now)? {
        let read = Arc::new(read);
        chains.put_scope(&scope, read.clone());
        if let Some(s) = scopes.iter().find(|s| ***s == scope) {
            reads.insert(s.as_str(), read);
        }
    }
    let mut groups: Vec<Arc<Group>> = Vec::new();
    let mut passed = BTreeMap::new();
    let (mut from, mut until) = (i64::MIN, i64::MAX);
    for read in reads.values() {
        groups.extend(read.groups.iter().cloned());
        passed.extend(read.passed.iter().map(|(g, n)| (*g, *n)));
        from = from.max(read.from);
        until = until.min(read.until);
    }
    groups.sort_by_key(|g| g.id);
    let off_chain = first_group_off(c, chain)?;
    let total: i64 = c.query_row("SELECT members FROM memory_census", (), |r| r.get(0))?;
    let read = Arc::new(Chain {
        generation,
        from,
        until,
        digest: digest(&groups, off_chain.as_ref()),
        groups,
        off_chain,
        total: total.max(0) as u64,
        passed: Arc::new(passed),
    });
    chains.put_chain(chain, read.clone());
    Ok(read)
}

/// Reads `scopes`: every group with members in each, and for the expiring ones how many
/// members have passed their expiry at `now` and when the next one will.
fn read_scopes(
    c: &Connection,
    scopes: &[String],
    generation: u64,
    now: i64,
) -> Result<Vec<(String, ScopeRead)>, StoreError> {
    if scopes.is_empty() {
        return Ok(Vec::new());
    }
    let all = groups(c, scopes)?;
    let expiring: Vec<i64> = all.iter().filter(|g| g.expiring).map(|g| g.id).collect();
    let expiries = expiries(c, &expiring, now)?;
    let mut by_scope: BTreeMap<&str, Vec<Group>> =
        scopes.iter().map(|s| (s.as_str(), Vec::new())).collect();
    for g in all {
        if let Some(of) = by_scope.get_mut(g.scope.as_str()) {
            of.push(g);
        }
    }
    Ok(by_scope
        .into_iter()
        .map(|(scope, groups)| {
            let expiring = || groups.iter().filter(|g| g.expiring).map(|g| g.id);
            let read = ScopeRead {
                generation,
                from: now,
                until: expiring()
                    .filter_map(|g| expiries.get(&g)?.1)
                    .min()
                    .unwrap_or(i64::MAX),
                passed: expiring()
                    .map(|g| (g, expiries.get(&g).map_or(0, |e| e.0)))
                    .collect(),
                groups: groups.into_iter().map(Arc::new).collect(),
            };
            (scope.to_string(), read)
        })
        .collect())
}

/// A digest of `groups` and the group off the chain: each group's id and everything it stands
/// for (ids alone repeat across stores), as the decision cache keys them.
fn digest(groups: &[Arc<Group>], off_chain: Option<&Group>) -> [u8; 32] {
    let mut k = blake3::Hasher::new();
    for g in groups.iter().map(|g| &**g).chain(off_chain) {
        k.update(&g.id.to_le_bytes());
        for part in [&g.class, &g.scope, g.sensitivity.as_str(), &g.status] {
            k.update(part.as_bytes());
            k.update(b"\x1f");
        }
        k.update(&[u8::from(g.pinned), u8::from(g.expiring)]);
    }
    k.update(&[u8::from(off_chain.is_some())]);
    *k.finalize().as_bytes()
}

/// `LIMIT`, not by reading groups until one is off: PostgreSQL answers a query with all its
/// rows, and a store holds tens of thousands of groups (a task scope each).
fn first_group_off(c: &Connection, scopes: &[String]) -> Result<Option<Group>, StoreError> {
    let off = if scopes.is_empty() {
        String::new()
    } else {
        let marks: Vec<String> = (1..=scopes.len()).map(|i| format!("?{i}")).collect();
        format!(" AND scope NOT IN ({})", marks.join(", "))
    };
    let mut stmt = c.prepare_cached(&format!(
        "SELECT {GROUP_COLUMNS} FROM memory_groups WHERE members > 0{off} ORDER BY id LIMIT 1"
    ))?;
    let mut rows = stmt.query(params_from_iter(scopes.iter().map(String::as_str)))?;
    rows.next()?.map(|r| group_row(&r)).transpose()
}

/// The columns [`group_row`] reads.
const GROUP_COLUMNS: &str = "id, class, scope, sensitivity, status, pinned, expiring, members";

fn group_row(r: &crate::store::Row<'_>) -> Result<Group, StoreError> {
    let id: i64 = r.get(0)?;
    Ok(Group {
        sensitivity: stored_level(&format!("group {id}"), r.get(3)?)?,
        id,
        class: r.get(1)?,
        scope: r.get(2)?,
        status: r.get(4)?,
        pinned: r.get(5)?,
        expiring: r.get(6)?,
        members: r.get::<i64>(7)?.max(0) as u64,
    })
}

/// Every group with members in one of `scopes`, by id: one statement for the whole chain
/// (a round trip each on PostgreSQL).
fn groups(c: &Connection, scopes: &[String]) -> Result<Vec<Group>, StoreError> {
    let mut out = Vec::new();
    for chunk in scopes.chunks(IN_LIST) {
        let mut stmt = c.prepare_cached(&format!(
            "SELECT {GROUP_COLUMNS} FROM memory_groups WHERE scope IN ({}) AND members > 0",
            in_list(1)
        ))?;
        // Padded with the empty scope, which no memory has.
        let values = (0..IN_LIST).map(|i| chunk.get(i).map_or("", String::as_str));
        let mut rows = stmt.query(params_from_iter(values))?;
        while let Some(r) = rows.next()? {
            out.push(group_row(&r)?);
        }
    }
    out.sort_by_key(|g| g.id);
    Ok(out)
}

/// For each of `groups`, how many members have an expiry at or before `now`, and the first
/// expiry after `now` of a member, if one has: lookups of the (group, expiry) index, one
/// statement per [`IN_LIST`] groups, not one per group (a scope has tens of expiring groups).
fn expiries(
    c: &Connection,
    groups: &[i64],
    now: i64,
) -> Result<BTreeMap<i64, (u64, Option<i64>)>, StoreError> {
    let mut out = BTreeMap::new();
    for chunk in groups.chunks(IN_LIST) {
        let mut stmt = c.prepare_cached(&format!(
            "SELECT g.id,
                    (SELECT COUNT(*) FROM memories m
                     WHERE m.group_id = g.id AND m.expires_at <= ?1),
                    (SELECT m.expires_at FROM memories m
                     WHERE m.group_id = g.id AND m.expires_at > ?1
                     ORDER BY m.expires_at LIMIT 1)
             FROM memory_groups g WHERE g.id IN ({})",
            in_list(2)
        ))?;
        // Padded with a group id no group has (ids start at 1).
        let mut values = vec![Value::Integer(now)];
        values.extend((0..IN_LIST).map(|i| Value::Integer(chunk.get(i).map_or(0, |g| *g))));
        let mut rows = stmt.query(params_from_iter(values))?;
        while let Some(r) = rows.next()? {
            let passed: i64 = r.get(1)?;
            out.insert(r.get(0)?, (passed.max(0) as u64, r.get::<Option<i64>>(2)?));
        }
    }
    Ok(out)
}
