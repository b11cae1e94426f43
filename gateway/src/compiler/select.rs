//! Selection: the items policy let through compete for the budgets in the settings' order.
//!
//! Each item, in turn, takes its full block if that fits the tokens left in the total budget
//! and in its kind's budget; else its summary block if that fits; else it is excluded. An
//! excluded item's reason says which budget stopped it and whether any choice could have made
//! room: more than the whole budget is [`Reason::Budget`]; room taken by items ahead of it is
//! [`Reason::LowerWeight`] when all of those are heavier, else [`Reason::LaterInOrder`]. A
//! smaller item later in the order may still fit after a larger one was skipped.

use std::collections::BTreeMap;

use super::items::{CandidateItem, CompileSettings, ItemKind, Ordering};
use super::outcome::{ItemStatus, Limit, Reason};
use crate::secrets::RedactedSpan;

/// One rendered form of an item and what it costs.
#[derive(Debug, Clone)]
pub(crate) struct Rendered {
    /// Its block, as it would appear in the text.
    pub(crate) block: String,
    /// Tokens of the block.
    pub(crate) cost: u32,
    /// Spans redacted in it.
    pub(crate) spans: Vec<RedactedSpan>,
}

/// An item policy let through, ready to compete.
#[derive(Debug, Clone)]
pub(crate) struct Eligible {
    /// Its full form (none when it has neither content nor reference).
    pub(crate) full: Option<Rendered>,
    /// Its summary form.
    pub(crate) summary: Option<Rendered>,
    /// Whether policy redacted it.
    pub(crate) redacted: bool,
}

/// Which form made it into the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Chosen {
    Full,
    Summary,
}

/// What selection decided for one item.
#[derive(Debug, Clone)]
pub(crate) struct Selection {
    pub(crate) status: ItemStatus,
    pub(crate) reason: Reason,
    pub(crate) chosen: Option<Chosen>,
}

/// The tokens left in the budgets, and the lightest item that took room in each.
struct Room {
    total: (u32, u32),
    kinds: BTreeMap<ItemKind, (u32, u32)>,
    lightest_total: Option<f64>,
    lightest_kind: BTreeMap<ItemKind, f64>,
}

/// A budget an item does not fit: which, how much it had left, and whether the item exceeds
/// all of it.
#[derive(Debug, Clone, Copy)]
struct Shortfall {
    limit: Limit,
    left: u32,
    hard: bool,
}

impl Room {
    fn new(settings: &CompileSettings) -> Room {
        Room {
            total: (settings.budget, settings.budget),
            kinds: settings
                .kind_budgets
                .iter()
                .map(|(k, b)| (*k, (*b, *b)))
                .collect(),
            lightest_total: None,
            lightest_kind: BTreeMap::new(),
        }
    }

    /// The budget `cost` does not fit, if any: one it exceeds entirely before one that ran
    /// out, the total before the kind's.
    fn shortfall(&self, kind: ItemKind, cost: u32) -> Option<Shortfall> {
        let mut failing = Vec::with_capacity(2);
        let (left, budget) = self.total;
        if cost > left {
            failing.push(Shortfall {
                limit: Limit::Total { budget },
                left,
                hard: cost > budget,
            });
        }
        if let Some(&(left, budget)) = self.kinds.get(&kind)
            && cost > left
        {
            failing.push(Shortfall {
                limit: Limit::Kind { kind, budget },
                left,
                hard: cost > budget,
            });
        }
        let hard = failing.iter().position(|s| s.hard).unwrap_or(0);
        (!failing.is_empty()).then(|| failing.swap_remove(hard))
    }

    fn take(&mut self, kind: ItemKind, cost: u32, weight: f64) {
        self.total.0 = self.total.0.saturating_sub(cost);
        self.lightest_total = Some(self.lightest_total.map_or(weight, |w| w.min(weight)));
        if let Some(room) = self.kinds.get_mut(&kind) {
            room.0 = room.0.saturating_sub(cost);
            let lightest = self.lightest_kind.entry(kind).or_insert(weight);
            *lightest = lightest.min(weight);
        }
    }

    fn lightest(&self, limit: &Limit) -> Option<f64> {
        match limit {
            Limit::Total { .. } => self.lightest_total,
            Limit::Kind { kind, .. } => self.lightest_kind.get(kind).copied(),
        }
    }
}

/// The order in which `candidates` compete: indices into it.
pub(crate) fn rank(candidates: &[CandidateItem], order: Ordering) -> Vec<usize> {
    let mut ranked: Vec<usize> = (0..candidates.len()).collect();
    if order == Ordering::Weight {
        ranked.sort_by(|&a, &b| {
            let (a, b) = (&candidates[a], &candidates[b]);
            b.weight.total_cmp(&a.weight).then_with(|| a.id.cmp(&b.id))
        });
    }
    ranked
}

/// Selects among the `eligible` items (indexed like `candidates`; `None` for items policy
/// excluded), visiting them in `ranked` order. Returns the selection of each eligible item in
/// that order.
pub(crate) fn select(
    candidates: &[CandidateItem],
    eligible: &[Option<Eligible>],
    ranked: &[usize],
    settings: &CompileSettings,
) -> Vec<(usize, Selection)> {
    let mut room = Room::new(settings);
    let mut out = Vec::with_capacity(ranked.len());
    for &i in ranked {
        let (Some(item), Some(Some(e))) = (candidates.get(i), eligible.get(i)) else {
            continue;
        };
        let selection = choose(item, e, &mut room, settings.order);
        out.push((i, selection));
    }
    out
}

fn choose(item: &CandidateItem, e: &Eligible, room: &mut Room, order: Ordering) -> Selection {
    let full_short = e
        .full
        .as_ref()
        .map(|f| (f, room.shortfall(item.kind, f.cost)));
    if let Some((full, None)) = full_short {
        room.take(item.kind, full.cost, item.weight);
        return Selection {
            status: if e.redacted {
                ItemStatus::Redacted
            } else {
                ItemStatus::Included
            },
            reason: Reason::Fits { left: room.total.0 },
            chosen: Some(Chosen::Full),
        };
    }
    let summary_short = e
        .summary
        .as_ref()
        .map(|s| (s, room.shortfall(item.kind, s.cost)));
    if let Some((summary, None)) = summary_short {
        room.take(item.kind, summary.cost, item.weight);
        let reason = match full_short {
            Some((full, Some(short))) => Reason::ReplacedBySummary {
                needed: full.cost,
                left: short.left,
                limit: short.limit,
            },
            _ => Reason::SummaryOnly { left: room.total.0 },
        };
        return Selection {
            status: ItemStatus::Summarised,
            reason,
            chosen: Some(Chosen::Summary),
        };
    }
    // Excluded: every form it has fell short; explain with the smallest (the summary on a
    // tie, the form that came closest to fitting).
    let smallest = [
        full_short.and_then(|(f, short)| Some((f.cost, false, short?))),
        summary_short.and_then(|(s, short)| Some((s.cost, true, short?))),
    ]
    .into_iter()
    .flatten()
    .min_by_key(|(cost, as_summary, _)| (*cost, !as_summary));
    let reason = match smallest {
        None => Reason::NoContent,
        Some((needed, as_summary, short)) => {
            crowded_or_over(item.weight, needed, as_summary, short, room, order)
        }
    };
    Selection {
        status: ItemStatus::Excluded,
        reason,
        chosen: None,
    }
}

fn crowded_or_over(
    weight: f64,
    needed: u32,
    as_summary: bool,
    short: Shortfall,
    room: &Room,
    order: Ordering,
) -> Reason {
    let Shortfall { limit, left, hard } = short;
    if hard {
        return Reason::Budget {
            needed,
            left,
            limit,
            as_summary,
        };
    }
    match room.lightest(&limit) {
        // In weight order every item ahead weighs at least as much; only when the lightest
        // of them is strictly heavier did weight (not the id tie-break) decide.
        Some(lightest_ahead) if order == Ordering::Weight && lightest_ahead > weight => {
            Reason::LowerWeight {
                needed,
                left,
                limit,
                as_summary,
                weight,
                lightest_ahead,
            }
        }
        _ => Reason::LaterInOrder {
            needed,
            left,
            limit,
            as_summary,
        },
    }
}
