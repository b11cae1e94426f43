//! Eligibility by group, so it scales with the kinds of memory and not their number.
//!
//! The memory pack decides a memory's eligibility from its metadata alone: class, scope,
//! sensitivity, status, pinned, and how its expiry compares with `now` (none, not yet come,
//! passed). Memories that agree on those get the same verdict, so the store keeps each
//! combination once (`memory_groups`, migration 9, kept by triggers) and the pack decides one
//! representative per group and expiry window — a few hundred facts however many memories
//! there are. The eligible (group, window) pairs then become the store's filter: a group id and,
//! for a group with expiries, the window's comparison with `now`. The decision is the pack's;
//! the store only partitions.
//!
//! Groups are looked up by scope: only those on the run's scope chain (its scope and the
//! scopes above it) are decided. A memory anywhere else is out of scope whatever else it is —
//! a scope is visible only from within it (the scope pack's `within`, which the memory pack's
//! `memory.out-of-scope` rule applies) — so the scope index leaves it out and it is counted as
//! withheld for `out_of_scope` without being decided. That keeps the decision to the kinds of
//! memory a run could see, however many scopes the store holds.
//!
//! `groups_agree_with_deciding_every_memory` (a property test) checks that the partition is
//! faithful: the same memories come out as when the pack decides each memory itself, and the
//! same ones are withheld for the same reasons (those off the chain for `out_of_scope`).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

mod read;

use crate::store::Connection;
use tollgate_rules::decide::{MemoryVerdict, PolicyEngine};
use tollgate_rules::engine::{Proof, ProofStep};
use tollgate_rules::envelope::{EnvelopeSet, Level};
use tollgate_rules::request::{MemoryRecord, scope_parents, subject_facts};

use super::MemoryError;
use crate::recorder::events::RetrievalExclusion;
use crate::recorder::format::RunHeader;
use crate::run_policy::{attached_envelopes, run_facts};
use crate::store::{Store, StoreError};

/// Every group's ids of memories this many at most in an exclusion's examples.
const EXAMPLES: usize = 10;

/// One combination of the metadata eligibility depends on, and how many memories have it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Group {
    pub(crate) id: i64,
    pub(crate) class: String,
    pub(crate) scope: String,
    pub(crate) sensitivity: Level,
    pub(crate) status: String,
    pub(crate) pinned: bool,
    /// Whether its memories have an expiry (`expires_at` not 0).
    pub(crate) expiring: bool,
    pub(crate) members: u64,
}

impl Group {
    /// A memory of this group in `window` at `now`, as the pack's `memory` fact carries it.
    fn representative(&self, id: &str, window: Window, now: i32) -> MemoryRecord {
        MemoryRecord {
            id: id.to_string(),
            class: self.class.clone(),
            scope: self.scope.clone(),
            sensitivity: self.sensitivity,
            status: self.status.clone(),
            expires_at: window.representative(now),
            pinned: self.pinned,
        }
    }
}

/// How a memory's expiry compares with `now`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Window {
    /// It has none.
    None,
    /// It has not come yet.
    NotYet,
    /// It has passed.
    Passed,
}

impl Window {
    fn as_str(self) -> &'static str {
        match self {
            Window::None => "none",
            Window::NotYet => "not-yet",
            Window::Passed => "passed",
        }
    }

    /// The SQL condition on `m.expires_at` that selects this window at `now`.
    fn condition(self, now: i64) -> String {
        match self {
            Window::None => "TRUE".into(),
            Window::NotYet => format!("m.expires_at > {now}"),
            Window::Passed => format!("m.expires_at <= {now}"),
        }
    }

    /// An expiry in this window at `now`, as the pack's `memory` fact carries it.
    fn representative(self, now: i32) -> i32 {
        match self {
            Window::None => 0,
            Window::NotYet => now.saturating_add(1),
            // Not 0 (no expiry), and not after `now`.
            Window::Passed if now >= 1 => now,
            Window::Passed => now.saturating_sub(1),
        }
    }
}

/// The pack's verdict on one group in one window.
#[derive(Debug, Clone)]
pub(crate) struct Part {
    /// Shared with the chain it was read with (a warm search builds its parts without
    /// copying a group).
    pub(crate) group: Arc<Group>,
    pub(crate) window: Window,
    /// Shared with the cached decision (a search builds its parts on every call).
    pub(crate) verdict: Arc<MemoryVerdict>,
    /// The rule whose proof decided this kind of verdict (`memory.eligible`,
    /// `memory.out-of-scope`): the pack proves one part of each kind.
    pub(crate) rules: Arc<[String]>,
}

impl Part {
    /// The SQL condition selecting this part's memories (`m` the memories table).
    pub(crate) fn condition(&self, now: i64) -> String {
        format!(
            "(m.group_id = {} AND {})",
            self.group.id,
            self.window.condition(now)
        )
    }

    /// The rule whose proof decided this kind of verdict.
    pub(crate) fn rules(&self) -> Vec<String> {
        self.rules.to_vec()
    }
}

/// The pack's verdicts for a run at `now`, one per (group, window) that has members.
#[derive(Debug, Clone)]
pub(crate) struct Eligibility {
    pub(crate) now: i64,
    pub(crate) parts: Vec<Part>,
    /// How many memories are off the run's scope chain (withheld as out of scope).
    pub(crate) elsewhere: u64,
    /// The pack's proof that one of them (a representative of the first group off the chain)
    /// is out of scope.
    elsewhere_proof: Option<Proof>,
    /// How many memories are stored.
    pub(crate) total: u64,
    /// How many members of each group with expiries have passed theirs (the chain's own).
    passed: Arc<BTreeMap<i64, u64>>,
}

impl Eligibility {
    /// Decides every group for `header`'s run at `now` under `set`: nothing of what the
    /// memories say is read, and no memory row either.
    pub(crate) fn decide(
        store: &Store,
        set: &EnvelopeSet,
        header: &RunHeader,
        now: i64,
    ) -> Result<Eligibility, MemoryError> {
        let chain: Vec<String> = std::iter::once(header.scope.clone())
            .chain(scope_parents(&header.scope).into_iter().map(|(_, p)| p))
            .collect();
        let kept = super::columns::of(store);
        let chains = store.derived::<read::Chains>();
        let chain = store.read(move |c| {
            // The columns' generation before the groups are read: a change committed between
            // makes what is read newer than the generation says, never older. (A read holds no
            // transaction: each statement sees what was committed when it began, so it sees
            // every change the columns had applied when `current` returned, whichever
            // connection applied them.)
            let generation = super::columns::current(&kept, c)?.generation();
            read::chain(c, &chains, &chain, generation, now)
        })?;
        let (groups, off_chain, total) = (&chain.groups, chain.off_chain.as_ref(), chain.total);
        let passed = Arc::clone(&chain.passed);
        let elsewhere = total.saturating_sub(groups.iter().map(|g| g.members).sum());
        let now32 = i32::try_from(now).unwrap_or(if now < 0 { i32::MIN } else { i32::MAX });
        let decided = decided(set, header, groups, off_chain, &chain.digest, now32)?;
        let by_id: BTreeMap<i64, &Arc<Group>> = groups.iter().map(|g| (g.id, g)).collect();
        let mut parts: Vec<Part> = decided
            .verdicts
            .iter()
            .filter_map(|(id, window, verdict, rules)| {
                Some(Part {
                    group: (*by_id.get(id)?).clone(),
                    window: *window,
                    verdict: verdict.clone(),
                    rules: rules.clone(),
                })
            })
            .collect();
        parts.sort_by_key(|p| (p.group.id, p.window));
        Ok(Eligibility {
            now,
            parts,
            elsewhere,
            elsewhere_proof: decided.elsewhere.clone(),
            total,
            passed,
        })
    }

    /// The eligible parts whose group `keep` accepts.
    pub(crate) fn eligible<'a>(
        &'a self,
        keep: &'a dyn Fn(&Group) -> bool,
    ) -> impl Iterator<Item = &'a Part> + 'a {
        self.parts
            .iter()
            .filter(move |p| p.verdict.eligible && keep(&p.group))
    }

    /// The SQL condition selecting every eligible memory whose group `keep` accepts (`m` the
    /// memories table), or `None` when there is none. Ranking filters from the kept columns
    /// (`columns`); tests select with this to check it against the pack's decisions.
    #[cfg(test)]
    pub(crate) fn filter(&self, keep: &dyn Fn(&Group) -> bool) -> Option<String> {
        use std::fmt::Write as _;
        let mut whole = Vec::new();
        let mut out = String::new();
        let mut by_group: BTreeMap<i64, Vec<&Part>> = BTreeMap::new();
        for p in self.eligible(keep) {
            by_group.entry(p.group.id).or_default().push(p);
        }
        for (id, parts) in by_group {
            // Every window of the group is eligible: no need to compare expiries.
            let windows = if parts[0].group.expiring { 2 } else { 1 };
            if parts.len() == windows {
                whole.push(id.to_string());
            } else {
                for p in parts {
                    if !out.is_empty() {
                        out.push_str(" OR ");
                    }
                    out.push_str(&p.condition(self.now));
                }
            }
        }
        if !whole.is_empty() {
            if !out.is_empty() {
                out.push_str(" OR ");
            }
            let _ = write!(out, "m.group_id IN ({})", whole.join(", "));
        }
        (!out.is_empty()).then(|| format!("({out})"))
    }

    /// How many memories a part holds.
    pub(crate) fn members(&self, part: &Part) -> u64 {
        let passed = self.passed.get(&part.group.id).copied().unwrap_or(0);
        match part.window {
            Window::None => part.group.members,
            Window::Passed => passed,
            Window::NotYet => part.group.members.saturating_sub(passed),
        }
    }

    /// What policy withheld, by reason set: how many memories, the rule, and (with
    /// `examples`) the strongest few memories' ids.
    pub(crate) fn withheld(
        &self,
        c: &Connection,
        examples: bool,
    ) -> Result<Vec<RetrievalExclusion>, StoreError> {
        let mut out: BTreeMap<Vec<String>, RetrievalExclusion> = BTreeMap::new();
        for p in self.parts.iter().filter(|p| !p.verdict.eligible) {
            let count = self.members(p);
            if count == 0 {
                continue;
            }
            let entry =
                out.entry(p.verdict.reasons.clone())
                    .or_insert_with(|| RetrievalExclusion {
                        reasons: p.verdict.reasons.clone(),
                        rules: p.rules(),
                        count: 0,
                        examples: Vec::new(),
                        proof: None,
                    });
            entry.count += count;
            if entry.proof.is_none() {
                entry.proof = p.verdict.proof.clone();
            }
            if examples && entry.examples.len() < EXAMPLES {
                let more = strongest(c, p, self.now, EXAMPLES - entry.examples.len())?;
                entry.examples.extend(more);
            }
        }
        if self.elsewhere > 0 {
            let scope = vec!["out_of_scope".to_string()];
            let entry = out
                .entry(scope.clone())
                .or_insert_with(|| RetrievalExclusion {
                    reasons: scope,
                    rules: vec!["memory.out-of-scope".into()],
                    count: 0,
                    examples: Vec::new(),
                    proof: None,
                });
            entry.count += self.elsewhere;
            if entry.proof.is_none() {
                entry.proof = self.elsewhere_proof.clone();
            }
        }
        let mut out: Vec<RetrievalExclusion> = out.into_values().collect();
        for e in &mut out {
            e.examples.sort();
        }
        Ok(out)
    }
}

/// The pack's verdicts on groups, by group id and window, with the rule of each kind; and
/// its proof that a memory off the run's scope chain is out of scope.
#[derive(Debug)]
struct DecidedGroups {
    verdicts: Vec<DecidedPart>,
    elsewhere: Option<Proof>,
}

/// A group's id, a window, the pack's verdict and the rule of its kind.
type DecidedPart = (i64, Window, Arc<MemoryVerdict>, Arc<[String]>);

type Decided = Arc<DecidedGroups>;

/// Decided groups, by everything the decision depends on: the envelope set's version, the run
/// as policy sees it, and the groups' metadata.
/// The verdicts do not depend on `now` itself: each window's representative is placed
/// relative to it. Deterministic decisions make a cached answer the answer; a run compiling
/// step after step, or a screen searching from one place, decides once.
static DECIDED: Mutex<BTreeMap<String, Decided>> = Mutex::new(BTreeMap::new());

/// At most this many decisions are kept (all dropped when full).
const DECIDED_KEPT: usize = 256;

fn decided(
    set: &EnvelopeSet,
    header: &RunHeader,
    groups: &[Arc<Group>],
    off_chain: Option<&Group>,
    digest: &[u8; 32],
    now32: i32,
) -> Result<Decided, MemoryError> {
    let key = {
        let mut k = blake3::Hasher::new();
        for part in [
            set.version(),
            &header.id,
            &header.agent,
            &header.task,
            &header.scope,
            &header.clearance,
        ] {
            k.update(part.as_bytes());
            k.update(b"\x1f");
        }
        for id in attached_envelopes(&header.metadata) {
            k.update(id.as_bytes());
            k.update(b"\x1e");
        }
        k.update(digest);
        k.finalize().to_hex().to_string()
    };
    let cache = || DECIDED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(hit) = cache().get(&key) {
        return Ok(hit.clone());
    }
    let mut records = Vec::new();
    let mut by_key = BTreeMap::new();
    for g in groups {
        let windows: &[Window] = if g.expiring {
            &[Window::NotYet, Window::Passed]
        } else {
            &[Window::None]
        };
        for w in windows {
            let key = format!("group-{}-{}", g.id, w.as_str());
            records.push(g.representative(&key, *w, now32));
            by_key.insert(key, (g.id, *w));
        }
    }
    // One memory off the chain, to prove what `out_of_scope` means for the rest of them.
    let elsewhere_key = off_chain.map(|g| {
        let key = format!("elsewhere-{}", g.id);
        let window = if g.expiring {
            Window::NotYet
        } else {
            Window::None
        };
        records.push(g.representative(&key, window, now32));
        key
    });
    if records.is_empty() {
        return Ok(Arc::new(DecidedGroups {
            verdicts: Vec::new(),
            elsewhere: None,
        }));
    }
    let mut facts = run_facts(header).map_err(MemoryError::Invalid)?;
    facts.extend_from(&subject_facts(&[], &records));
    let engine = PolicyEngine::new(set, &facts)
        .map_err(|e| MemoryError::Invalid(e.to_string()))?
        .prove_every_memory(false);
    let decision = engine.retrieve_memories(&header.id, Some(now32));
    if let Some(error) = decision.error {
        return Err(MemoryError::Invalid(format!(
            "the memory pack could not decide: {error}"
        )));
    }
    // The rule of each kind of verdict, from the part of that kind the pack proved.
    let mut rules: BTreeMap<(bool, Vec<String>), Vec<String>> = BTreeMap::new();
    for v in &decision.memories {
        if let Some(ProofStep::Rule { rule, .. }) = v.proof.as_ref().map(|p| &p.step) {
            rules.insert((v.eligible, v.reasons.clone()), vec![rule.to_string()]);
        }
    }
    // The representative's verdict carries the proof of its first reason: out of scope,
    // unless it is also above clearance, of a denied class or expired (reasons sort), when
    // the pack is asked for that reason's proof.
    let elsewhere = elsewhere_key.and_then(|k| {
        let verdict = decision.memories.iter().find(|v| v.memory == k)?;
        match (&verdict.proof, verdict.reasons.first()) {
            (Some(p), Some(first)) if first == "out_of_scope" => Some(p.clone()),
            _ => engine.prove_memory_reason(&header.id, &k, "out_of_scope", Some(now32)),
        }
    });
    let out: Decided = Arc::new(DecidedGroups {
        verdicts: decision
            .memories
            .into_iter()
            .filter_map(|verdict| {
                let (id, window) = *by_key.get(&verdict.memory)?;
                let rules: Arc<[String]> = rules
                    .get(&(verdict.eligible, verdict.reasons.clone()))
                    .cloned()
                    .unwrap_or_default()
                    .into();
                Some((id, window, Arc::new(verdict), rules))
            })
            .collect(),
        elsewhere,
    });
    let mut kept = cache();
    if kept.len() >= DECIDED_KEPT {
        kept.clear();
    }
    kept.insert(key, out.clone());
    Ok(out)
}

/// The strongest `n` memories of a part (the rank index serves it without sorting).
fn strongest(c: &Connection, part: &Part, now: i64, n: usize) -> Result<Vec<String>, StoreError> {
    let mut stmt = c.prepare_cached(&format!(
        "SELECT m.id FROM memories m{}
         WHERE m.group_id = ?1
           AND (?2 = 0 OR (?2 = 1 AND m.expires_at > ?3) OR (?2 = 2 AND m.expires_at <= ?3))
         ORDER BY m.group_id, m.strength DESC, m.usage_count DESC, m.id LIMIT ?4",
        c.dialect().indexed_by("memories_by_group_rank")
    ))?;
    let window = match part.window {
        Window::None => 0,
        Window::NotYet => 1,
        Window::Passed => 2,
    };
    let ids = stmt
        .query_map(
            crate::store::params![part.group.id, window, now, n as i64],
            |r| r.get(0),
        )?
        .collect::<Result<Vec<String>, _>>()?;
    Ok(ids)
}

/// The first group (by id) with members in none of `scopes`. Asked of the store with its
#[cfg(test)]
mod tests;
