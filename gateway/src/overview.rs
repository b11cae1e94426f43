//! The overview: what the agents did and what policy did to them over a time window, read for
//! the dashboard's landing page and its downloads. Decisions come from the counters the
//! recorder keeps as it records them (by effect per five minutes, the decisions not allowed by
//! tool and rules per hour; [`crate::recorder::buckets`]), never from the events, so the page costs the same at a million decisions as at ten; approvals,
//! regression suites, memories, cases and handoffs are counted from their own tables, which
//! hold one row per approval, suite, memory, case or contract.

mod drill;
mod panels;

use serde::Serialize;
use tollgate_rules::decide::DecisionEffect;

use crate::clock::rfc3339;
use crate::recorder::DecisionCounts;
use crate::recorder::buckets::{BUCKET_SECS, REASON_SECS};
use crate::store::{Store, StoreError, params};

pub use drill::{Drill, DrillRow, drill};
pub use panels::{Approvals, Count, Handoffs, Regressions, SuitePoint, Waiting};

/// The window and the runs an overview counts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Window {
    /// Its start, in seconds since the epoch (inclusive).
    pub since: i64,
    /// Its end (exclusive).
    pub until: i64,
    /// Only this agent's runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// Only runs of this task.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
}

/// The widths a plot's bars may have, in seconds: the narrowest that gives at most
/// [`MAX_BARS`] bars is used.
const STEPS: [i64; 8] = [
    300,
    900,
    1_800,
    3_600,
    3 * 3_600,
    6 * 3_600,
    86_400,
    7 * 86_400,
];

/// Most bars a plot of decisions over time has.
pub const MAX_BARS: i64 = 48;

impl Window {
    /// The window's bars' width.
    pub fn step(&self) -> i64 {
        let span = (self.until - self.since).max(1);
        STEPS
            .into_iter()
            .find(|s| (span + s - 1) / s <= MAX_BARS)
            .unwrap_or(STEPS[STEPS.len() - 1])
    }

    /// The first bar's start: the window's start rounded down to a bucket.
    fn first(&self) -> i64 {
        self.since - self.since.rem_euclid(BUCKET_SECS)
    }
}

/// Decisions in one bar of time.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Bar {
    /// Its start (RFC 3339).
    pub start: String,
    /// Its start in seconds since the epoch.
    pub start_secs: i64,
    /// Decisions by the effect answered.
    pub counts: DecisionCounts,
}

/// A rule or a tool, and how many decisions of one effect it stands behind.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Reason {
    /// `deny`, `redact`, `require_approval`, `rate_limited`.
    pub effect: DecisionEffect,
    /// The rule's id, or the tool's name.
    pub name: String,
    /// Decisions.
    pub n: u64,
}

/// How long the gateway took, in microseconds, over the calls of one bar.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Percentiles {
    /// Calls timed.
    pub count: u64,
    /// The median.
    pub p50_us: u64,
    /// The 99th percentile.
    pub p99_us: u64,
}

/// Latency in one bar of time.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LatencyBar {
    /// Its start (RFC 3339).
    pub start: String,
    /// Tool calls, from arrival to decision (`None`: none in the bar).
    pub tool_call: Option<Percentiles>,
    /// Chat calls' round trips to the model.
    pub chat: Option<Percentiles>,
}

/// Everything the overview shows.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Overview {
    /// The window.
    pub window: Window,
    /// The bars' width, in seconds.
    pub step_secs: i64,
    /// Decisions over time, one bar per step, oldest first.
    pub decisions: Vec<Bar>,
    /// All decisions of the window, by effect.
    pub totals: DecisionCounts,
    /// Latency over time, one bar per step (the decisions' bars); kept by agent, not by task,
    /// so empty when a task is asked for.
    pub latency: Vec<LatencyBar>,
    /// The rules behind most decisions that were not plain allows, most first (a decision
    /// counts once for each of its deciding rules), counted by the hour: over the hours the
    /// window touches.
    pub rules: Vec<Reason>,
    /// The tools behind most tool calls that were not plain allows, most first.
    pub tools: Vec<Reason>,
    /// Approvals.
    pub approvals: Approvals,
    /// Regression suites.
    pub regressions: Regressions,
    /// Memories by status and class (all of them, not only the window's).
    pub memories: Vec<Count>,
    /// The memories compiles used in the window, by class.
    pub memories_used: Vec<Count>,
    /// Cases by state (all of them).
    pub cases: Vec<Count>,
    /// Case proposals by the state they are in, from proposed to committed (all of them).
    pub proposals: Vec<Count>,
    /// Case commits by state, and refused ones by code (all of them).
    pub commits: Vec<Count>,
    /// Handoffs in the window.
    pub handoffs: Handoffs,
}

/// Most rules and tools listed.
pub const TOP: usize = 10;

/// Reads the overview of `window`; `now_ms` is the runtime's clock (approvals waiting now).
pub fn read(store: &Store, window: &Window, now_ms: i64) -> Result<Overview, StoreError> {
    let (decisions, totals) = decisions(store, window)?;
    let (rules, tools) = reasons(store, window)?;
    Ok(Overview {
        window: window.clone(),
        step_secs: window.step(),
        decisions,
        totals,
        latency: latency(store, window)?,
        rules,
        tools,
        approvals: panels::approvals(store, window, now_ms)?,
        regressions: panels::regressions(store)?,
        memories: panels::memories(store)?,
        memories_used: panels::memories_used(store, window)?,
        cases: panels::cases(store)?,
        proposals: panels::proposals(store)?,
        commits: panels::commits(store)?,
        handoffs: panels::handoffs(store, window)?,
    })
}

/// The filter on a counter's agent (parameter 3).
const AGENT: &str = "AND (CAST(?3 AS TEXT) IS NULL OR agent = ?3)";

/// The table of counts by effect to read, and the task's condition (parameter 4): a task asked
/// for reads the table kept by task, which its key seeks.
fn by_effect_table(w: &Window) -> (&'static str, &'static str) {
    match w.task {
        Some(_) => ("decision_task_buckets", "AND task = ?4"),
        None => ("decision_buckets", "AND CAST(?4 AS TEXT) IS NULL"),
    }
}

fn decisions(store: &Store, w: &Window) -> Result<(Vec<Bar>, DecisionCounts), StoreError> {
    let step = w.step();
    let first = w.first();
    let bars = usize::try_from(((w.until - first).max(0) + step - 1) / step).unwrap_or(0);
    let mut counts = vec![DecisionCounts::default(); bars];
    let mut totals = DecisionCounts::default();
    let w2 = w.clone();
    let (table, task) = by_effect_table(w);
    let rows: Vec<(i64, String, i64)> = store.read(move |c| {
        let mut stmt = c.prepare_cached(&format!(
            "SELECT bucket, effect, CAST(SUM(n) AS BIGINT) FROM {table}
             WHERE bucket >= ?1 AND bucket < ?2 {AGENT} {task}
             GROUP BY bucket, effect"
        ))?;
        let rows = stmt.query_map(params![first, w2.until, w2.agent, w2.task], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })?;
        rows.collect()
    })?;
    for (bucket, effect, n) in rows {
        let Some(effect) = effect_of(&effect) else {
            continue;
        };
        let Ok(i) = usize::try_from((bucket - first) / step) else {
            continue;
        };
        let n = u64::try_from(n).unwrap_or(0);
        if let Some(bar) = counts.get_mut(i) {
            bar.add_n(effect, n);
            totals.add_n(effect, n);
        }
    }
    let decisions = counts
        .into_iter()
        .enumerate()
        .map(|(i, counts)| {
            let start_secs = first + step * i as i64;
            Bar {
                start: rfc3339(u64::try_from(start_secs).unwrap_or(0)),
                start_secs,
                counts,
            }
        })
        .collect();
    Ok((decisions, totals))
}

fn latency(store: &Store, w: &Window) -> Result<Vec<LatencyBar>, StoreError> {
    use std::collections::BTreeMap;
    let step = w.step();
    let first = w.first();
    let bars = usize::try_from(((w.until - first).max(0) + step - 1) / step).unwrap_or(0);
    let w2 = w.clone();
    // Latency is kept by agent, not by task: with a task asked for, none is shown.
    let rows: Vec<(i64, String, i64, i64)> = store.read(move |c| {
        let mut stmt = c.prepare_cached(&format!(
            "SELECT bucket, kind, slot, CAST(SUM(n) AS BIGINT) FROM latency_buckets
             WHERE bucket >= ?1 AND bucket < ?2 {AGENT} AND CAST(?4 AS TEXT) IS NULL
             GROUP BY bucket, kind, slot"
        ))?;
        let rows = stmt.query_map(params![first, w2.until, w2.agent, w2.task], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
        })?;
        rows.collect()
    })?;
    // Per bar, per kind (0: tool calls, 1: chat): the histogram.
    let mut hist: Vec<[BTreeMap<i64, u64>; 2]> = vec![Default::default(); bars];
    for (bucket, kind, slot, n) in rows {
        let k = match kind.as_str() {
            "tool_call" => 0,
            "chat" => 1,
            _ => continue,
        };
        let Ok(i) = usize::try_from((bucket - first) / step) else {
            continue;
        };
        if let Some(bar) = hist.get_mut(i) {
            *bar[k].entry(slot).or_default() += u64::try_from(n).unwrap_or(0);
        }
    }
    Ok(hist
        .into_iter()
        .enumerate()
        .map(|(i, [tools, chat])| LatencyBar {
            start: rfc3339(u64::try_from(first + step * i as i64).unwrap_or(0)),
            tool_call: percentiles(&tools),
            chat: percentiles(&chat),
        })
        .collect())
}

/// The median and 99th percentile of a histogram of slots (each read as its middle).
pub fn percentiles(hist: &std::collections::BTreeMap<i64, u64>) -> Option<Percentiles> {
    let count: u64 = hist.values().sum();
    if count == 0 {
        return None;
    }
    let at = |q_per_mille: u64| {
        let rank = (count * q_per_mille).div_ceil(1000).max(1);
        let mut seen = 0;
        for (slot, n) in hist {
            seen += n;
            if seen >= rank {
                let (low, high) = crate::recorder::buckets::slot_bounds(*slot);
                return low + (high - low) / 2;
            }
        }
        0
    };
    Some(Percentiles {
        count,
        p50_us: at(500),
        p99_us: at(990),
    })
}

type Reasons = (Vec<Reason>, Vec<Reason>);

fn reasons(store: &Store, w: &Window) -> Result<Reasons, StoreError> {
    let w2 = w.clone();
    let first = w.since - w.since.rem_euclid(REASON_SECS);
    let (table, task) = match w.task {
        Some(_) => ("decision_task_reasons", "AND task = ?4"),
        None => ("decision_reasons", "AND CAST(?4 AS TEXT) IS NULL"),
    };
    let rows: Vec<(String, String, String, i64)> = store.read(move |c| {
        let mut stmt = c.prepare_cached(&format!(
            "SELECT effect, tool, rules, CAST(SUM(n) AS BIGINT) FROM {table}
             WHERE hour >= ?1 AND hour < ?2 {AGENT} {task}
             GROUP BY effect, tool, rules"
        ))?;
        let rows = stmt.query_map(params![first, w2.until, w2.agent, w2.task], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
        })?;
        rows.collect()
    })?;
    let mut by_rule: std::collections::BTreeMap<(DecisionEffect, String), u64> = Default::default();
    let mut by_tool: std::collections::BTreeMap<(DecisionEffect, String), u64> = Default::default();
    for (effect, tool, rules, n) in rows {
        let Some(effect) = effect_of(&effect) else {
            continue;
        };
        let n = u64::try_from(n).unwrap_or(0);
        let rules: Vec<String> = serde_json::from_str(&rules).unwrap_or_default();
        if rules.is_empty() {
            *by_rule.entry((effect, NO_RULE.to_string())).or_default() += n;
        }
        for rule in rules {
            *by_rule.entry((effect, rule)).or_default() += n;
        }
        if !tool.is_empty() {
            *by_tool.entry((effect, tool)).or_default() += n;
        }
    }
    Ok((top(by_rule), top(by_tool)))
}

/// What a decision with no deciding rule is listed under.
pub const NO_RULE: &str = "(no rule)";

/// The [`TOP`] largest counts, most first (ties by effect, then name).
fn top(counts: std::collections::BTreeMap<(DecisionEffect, String), u64>) -> Vec<Reason> {
    let mut all: Vec<Reason> = counts
        .into_iter()
        .map(|((effect, name), n)| Reason { effect, name, n })
        .collect();
    all.sort_by(|a, b| {
        b.n.cmp(&a.n)
            .then(a.effect.cmp(&b.effect))
            .then(a.name.cmp(&b.name))
    });
    all.truncate(TOP);
    all
}

/// An effect as stored.
pub fn effect_of(s: &str) -> Option<DecisionEffect> {
    serde_json::from_value(serde_json::Value::from(s)).ok()
}

#[cfg(test)]
mod tests;
