//! The overview's panels read from their own tables: approvals, regression suites, memories,
//! cases and handoffs.

use serde::Serialize;

use super::Window;
use crate::clock::rfc3339;
use crate::regress::store as regress;
use crate::store::{Store, StoreError, params, params_from_iter};

/// A name and how many things have it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Count {
    /// The state, status, class or code (`approved`, `candidate/fact`...).
    pub name: String,
    /// How many.
    pub n: u64,
}

/// An approval waiting now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Waiting {
    /// The approval.
    pub id: String,
    /// The run asking.
    pub run: String,
    /// The tool.
    pub tool: String,
    /// When it was asked for (RFC 3339).
    pub requested_at: String,
    /// How long it has waited, in seconds.
    pub age_secs: i64,
}

/// The approvals panel.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Approvals {
    /// Approvals waiting now (pending and not expired), however old.
    pub waiting_total: u64,
    /// The oldest [`WAITING_SHOWN`] of them, oldest first.
    pub waiting: Vec<Waiting>,
    /// Approvals decided in the window, by answer (`approved`, `rejected`), and those that
    /// expired in it unanswered (`expired`).
    pub decided: Vec<Count>,
    /// How long a person took to answer the approvals decided in the window (labels of
    /// [`WAIT_BINS`]).
    pub time_to_decide: Vec<Count>,
}

/// Waiting approvals listed.
pub const WAITING_SHOWN: usize = 10;

/// The histogram's bins: a label and the bin's upper bound in seconds (the last is open).
pub const WAIT_BINS: [(&str, i64); 6] = [
    ("under 1 min", 60),
    ("1–5 min", 300),
    ("5–15 min", 900),
    ("15–60 min", 3_600),
    ("1–4 h", 4 * 3_600),
    ("4 h or more", i64::MAX),
];

/// The filter on an approval's run (parameters 3 and 4).
const APPROVAL_RUN: &str = "AND (CAST(?3 AS TEXT) IS NULL OR r.agent = ?3)
     AND (CAST(?4 AS TEXT) IS NULL OR r.task = ?4)";

pub(super) fn approvals(store: &Store, w: &Window, now_ms: i64) -> Result<Approvals, StoreError> {
    let (since_ms, until_ms) = (w.since * 1000, w.until * 1000);
    let (agent, task) = (w.agent.clone(), w.task.clone());
    let (waiting_total, waiting, answered, expired) = store.read(move |c| {
        let waiting_total: i64 = c
            .prepare_cached(&format!(
                "SELECT COUNT(*) FROM approvals a JOIN runs r ON r.id = a.run_id
                 WHERE a.state = 'pending' AND a.expires_at > ?1 AND a.requested_at <= ?2 {APPROVAL_RUN}"
            ))?
            .query_row(params![now_ms, now_ms, agent, task], |r| r.get(0))?;
        let mut stmt = c.prepare_cached(&format!(
            "SELECT a.id, a.run_id, a.tool, a.requested_at
             FROM approvals a JOIN runs r ON r.id = a.run_id
             WHERE a.state = 'pending' AND a.expires_at > ?1 AND a.requested_at <= ?2 {APPROVAL_RUN}
             ORDER BY a.requested_at, a.id LIMIT {WAITING_SHOWN}"
        ))?;
        let waiting = stmt
            .query_map(params![now_ms, now_ms, agent, task], |r| {
                let requested: i64 = r.get(3)?;
                Ok(Waiting {
                    id: r.get(0)?,
                    run: r.get(1)?,
                    tool: r.get(2)?,
                    requested_at: rfc3339(u64::try_from(requested / 1000).unwrap_or(0)),
                    age_secs: (now_ms - requested).max(0) / 1000,
                })
            })?
            .collect::<Result<Vec<_>, _>>()?;
        let mut stmt = c.prepare_cached(&format!(
            "SELECT a.state, a.decided_at - a.requested_at
             FROM approvals a JOIN runs r ON r.id = a.run_id
             WHERE a.decided_at >= ?1 AND a.decided_at < ?2 {APPROVAL_RUN}"
        ))?;
        let answered = stmt
            .query_map(params![since_ms, until_ms, agent, task], |r| {
                Ok((r.get::<String>(0)?, r.get::<i64>(1)?))
            })?
            .collect::<Result<Vec<_>, _>>()?;
        let expired: i64 = c
            .prepare_cached(&format!(
                "SELECT COUNT(*) FROM approvals a JOIN runs r ON r.id = a.run_id
                 WHERE a.decided_at IS NULL AND a.state IN ('pending', 'expired')
                   AND a.expires_at >= ?1 AND a.expires_at < ?2 AND a.expires_at <= ?5
                   {APPROVAL_RUN}"
            ))?
            .query_row(params![since_ms, until_ms, agent, task, now_ms], |r| r.get(0))?;
        Ok((waiting_total, waiting, answered, expired))
    })?;
    let (mut approved, mut rejected) = (0_u64, 0_u64);
    let mut bins = [0_u64; WAIT_BINS.len()];
    for (state, took_ms) in answered {
        // A used approval was approved, then used by its call.
        if state == "rejected" {
            rejected += 1;
        } else {
            approved += 1;
        }
        let secs = took_ms.max(0) / 1000;
        let bin = WAIT_BINS
            .iter()
            .position(|(_, upper)| secs < *upper)
            .unwrap_or(WAIT_BINS.len() - 1);
        bins[bin] += 1;
    }
    Ok(Approvals {
        waiting_total: u64::try_from(waiting_total).unwrap_or(0),
        waiting,
        decided: vec![
            count("approved", approved),
            count("rejected", rejected),
            count("expired", u64::try_from(expired).unwrap_or(0)),
        ],
        time_to_decide: WAIT_BINS
            .iter()
            .zip(bins)
            .map(|((label, _), n)| count(label, n))
            .collect(),
    })
}

fn count(name: &str, n: u64) -> Count {
    Count {
        name: name.to_string(),
        n,
    }
}

/// One finished suite run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SuitePoint {
    /// `sui-N`.
    pub id: String,
    /// When it finished.
    pub finished_at: String,
    /// Cases run.
    pub cases: u32,
    /// Passed every repeat.
    pub passed: u32,
    /// Failed every repeat.
    pub failed: u32,
    /// Mixed.
    pub flaky: u32,
    /// Did not load or run.
    pub errors: u32,
}

impl SuitePoint {
    /// Whether every case passed.
    pub fn green(&self) -> bool {
        self.cases > 0 && self.passed == self.cases
    }

    /// Passed cases in percent (0 for an empty suite).
    pub fn pass_percent(&self) -> u32 {
        (self.passed * 100).checked_div(self.cases).unwrap_or(0)
    }
}

/// The regressions panel.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Regressions {
    /// The last [`SUITES_SHOWN`] finished suite runs, oldest first.
    pub suites: Vec<SuitePoint>,
    /// The newest suite run's flaky cases.
    pub flaky: Vec<String>,
    /// The newest suite run's failures by signature, with their cases.
    pub signatures: Vec<Count>,
}

/// Suite runs plotted.
pub const SUITES_SHOWN: usize = 20;

pub(super) fn regressions(store: &Store) -> Result<Regressions, StoreError> {
    let rows: Vec<(String, String, String)> = store.read(|c| {
        let mut stmt = c.prepare_cached(&format!(
            "SELECT id, figures, finished_at FROM regression_suites
             WHERE finished_at IS NOT NULL AND figures IS NOT NULL
             ORDER BY seq DESC LIMIT {SUITES_SHOWN}"
        ))?;
        let rows = stmt.query_map((), |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
        rows.collect()
    })?;
    let mut suites = Vec::with_capacity(rows.len());
    for (id, figures, finished_at) in rows.into_iter().rev() {
        let f: crate::regress::suite::SuiteFigures = serde_json::from_str(&figures)
            .map_err(|e| StoreError::Corrupt(format!("suite {id}'s figures: {e}")))?;
        suites.push(SuitePoint {
            id,
            finished_at,
            cases: f.cases,
            passed: f.passed,
            failed: f.failed,
            flaky: f.flaky,
            errors: f.errors,
        });
    }
    let (mut flaky, mut signatures) = (Vec::new(), Vec::new());
    if let Some(last) = regress::last_suite(store)? {
        flaky = regress::suite_runs(store, &last.id)?
            .into_iter()
            .filter(|r| r.status == "flaky")
            .map(|r| r.case)
            .collect();
        signatures = last
            .signatures
            .iter()
            .map(|s| {
                count(
                    &format!("{} · {}", s.signature.id, s.signature.summary),
                    s.cases.len() as u64,
                )
            })
            .collect();
    }
    Ok(Regressions {
        suites,
        flaky,
        signatures,
    })
}

/// `SELECT name, COUNT(*) ... GROUP BY name` (over the text parameters `args`) as counts,
/// largest first.
fn grouped(store: &Store, sql: &'static str, args: Vec<String>) -> Result<Vec<Count>, StoreError> {
    let mut counts: Vec<Count> = store.read(move |c| {
        let mut stmt = c.prepare_cached(sql)?;
        let rows = stmt.query_map(params_from_iter(args.iter()), |r| {
            Ok(count(
                &r.get::<String>(0)?,
                u64::try_from(r.get::<i64>(1)?).unwrap_or(0),
            ))
        })?;
        rows.collect()
    })?;
    counts.sort_by(|a, b| b.n.cmp(&a.n).then(a.name.cmp(&b.name)));
    Ok(counts)
}

pub(super) fn memories(store: &Store) -> Result<Vec<Count>, StoreError> {
    grouped(
        store,
        "SELECT status || '/' || class, COUNT(*) FROM memories GROUP BY status, class",
        Vec::new(),
    )
}

/// The memories compiles used in the window, by class (a memory used by two compiles counts
/// twice).
pub(super) fn memories_used(store: &Store, w: &Window) -> Result<Vec<Count>, StoreError> {
    let since = rfc3339(u64::try_from(w.since).unwrap_or(0));
    let until = rfc3339(u64::try_from(w.until).unwrap_or(0));
    grouped(
        store,
        "SELECT m.class, COUNT(*) FROM memory_links l JOIN memories m ON m.id = l.memory_id
         WHERE l.at >= ?1 AND l.at < ?2 GROUP BY m.class",
        vec![since, until],
    )
}

pub(super) fn cases(store: &Store) -> Result<Vec<Count>, StoreError> {
    grouped(
        store,
        "SELECT state, COUNT(*) FROM cases GROUP BY state",
        Vec::new(),
    )
}

/// The states a case's proposal passes through, in order: the funnel's steps.
pub const PROPOSAL_STEPS: [&str; 10] = [
    "proposed",
    "previewed",
    "allowed",
    "denied",
    "awaiting_approval",
    "approved",
    "rejected",
    "committing",
    "committed",
    "failed",
];

/// Case proposals by the state they are in, in the order of [`PROPOSAL_STEPS`] (a state not
/// among them last): the funnel from proposal to commit.
pub(super) fn proposals(store: &Store) -> Result<Vec<Count>, StoreError> {
    let mut counts = grouped(
        store,
        "SELECT state, COUNT(*) FROM case_proposals GROUP BY state",
        Vec::new(),
    )?;
    counts.sort_by_key(|c| {
        PROPOSAL_STEPS
            .iter()
            .position(|s| *s == c.name)
            .unwrap_or(PROPOSAL_STEPS.len())
    });
    Ok(counts)
}

/// Commits by state; a refused one by its code (`refused: approval_missing`).
pub(super) fn commits(store: &Store) -> Result<Vec<Count>, StoreError> {
    let rows: Vec<(String, String)> = store.read(|c| {
        let mut stmt = c.prepare_cached("SELECT state, detail FROM case_commits")?;
        let rows = stmt.query_map((), |r| Ok((r.get(0)?, r.get(1)?)))?;
        rows.collect()
    })?;
    let mut by: std::collections::BTreeMap<String, u64> = Default::default();
    for (state, detail) in rows {
        let name = if state == "refused" {
            let code = serde_json::from_str::<serde_json::Value>(&detail)
                .ok()
                .and_then(|d| d.get("code").and_then(|c| c.as_str()).map(str::to_string))
                .unwrap_or_default();
            format!("refused: {code}")
        } else {
            state
        };
        *by.entry(name).or_default() += 1;
    }
    let mut counts: Vec<Count> = by.into_iter().map(|(k, n)| count(&k, n)).collect();
    counts.sort_by(|a, b| b.n.cmp(&a.n).then(a.name.cmp(&b.name)));
    Ok(counts)
}

/// The handoffs panel.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Handoffs {
    /// Violations found on delivery in the window, by code.
    pub violations: Vec<Count>,
    /// Contracts made in the window, by state (`rejected` ones were refused at validation).
    pub contracts: Vec<Count>,
}

pub(super) fn handoffs(store: &Store, w: &Window) -> Result<Handoffs, StoreError> {
    let since = rfc3339(u64::try_from(w.since).unwrap_or(0));
    let until = rfc3339(u64::try_from(w.until).unwrap_or(0));
    let (violations, contracts) = store.read(move |c| {
        let by = |sql: &str| -> Result<Vec<Count>, StoreError> {
            let mut stmt = c.prepare_cached(sql)?;
            let rows = stmt.query_map(params![since, until], |r| {
                Ok(count(
                    &r.get::<String>(0)?,
                    u64::try_from(r.get::<i64>(1)?).unwrap_or(0),
                ))
            })?;
            rows.collect()
        };
        Ok((
            by("SELECT code, COUNT(*) FROM handoff_violations
                WHERE at >= ?1 AND at < ?2 GROUP BY code ORDER BY code")?,
            by("SELECT state, COUNT(*) FROM handoff_contracts
                WHERE created_at >= ?1 AND created_at < ?2 GROUP BY state ORDER BY state")?,
        ))
    })?;
    Ok(Handoffs {
        violations,
        contracts,
    })
}
