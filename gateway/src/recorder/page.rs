//! A page of runs, newest first, filtered by agent and status and paged by key: the next page
//! starts after the last run of this one (`started_at`, `id`), so a page costs the same
//! whether it is the first or the thousandth (indexes of migration 5; never `OFFSET`).

use serde::{Deserialize, Serialize};

use super::{Recorder, RecorderError, RunSummary, SUMMARY_COLUMNS, summary_of_row};

/// Which runs, and from where.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunFilter {
    /// Only this agent's runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// Only runs with this status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// Only runs of this task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
    /// Only runs started at or after this time (RFC 3339, UTC, as runs record it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<String>,
    /// Leave out the runs cases open (agent `pack:…`): a case's run lives as long as the case,
    /// and the Cases screen shows them.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub without_cases: bool,
    /// Only runs older than this one (the key of the last run of the previous page).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<RunKey>,
}

/// Where a run sits in the newest-first order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunKey {
    /// Its start time.
    pub started_at: String,
    /// Its id (ties on the start time).
    pub id: String,
}

/// One page of runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunPage {
    /// The runs, newest first.
    pub runs: Vec<RunSummary>,
    /// The key to ask for the next page with, when there is one.
    pub next: Option<RunKey>,
}

impl Recorder {
    /// Up to `limit` runs matching `filter`, newest first (by start time, then id).
    pub fn page(&self, filter: &RunFilter, limit: usize) -> Result<RunPage, RecorderError> {
        let filter = filter.clone();
        let limit = limit.clamp(1, 500);
        let mut runs = self.store.read(move |c| {
            // Only the conditions asked for, so SQLite seeks the index that serves them
            // (`runs_by_agent`, `runs_by_status`, `runs_by_start`) from the key of the last run
            // of the previous page (a row-value comparison), rather than scanning past it.
            let mut conditions = Vec::new();
            let mut values: Vec<String> = Vec::new();
            if let Some(agent) = &filter.agent {
                values.push(agent.clone());
                conditions.push(format!("r.agent = ?{}", values.len()));
            }
            if let Some(status) = &filter.status {
                values.push(status.clone());
                conditions.push(format!("r.status = ?{}", values.len()));
            }
            if let Some(task) = &filter.task {
                values.push(task.clone());
                conditions.push(format!("r.task = ?{}", values.len()));
            }
            if let Some(since) = &filter.since {
                values.push(since.clone());
                conditions.push(format!("r.started_at >= ?{}", values.len()));
            }
            if filter.without_cases {
                conditions.push("r.agent NOT LIKE 'pack:%'".to_string());
            }
            if let Some(k) = &filter.after {
                values.push(k.started_at.clone());
                values.push(k.id.clone());
                conditions.push(format!(
                    "(r.started_at, r.id) < (?{}, ?{})",
                    values.len() - 1,
                    values.len()
                ));
            }
            let filter_sql = if conditions.is_empty() {
                String::new()
            } else {
                format!("WHERE {}", conditions.join(" AND "))
            };
            let mut stmt = c.prepare_cached(&format!(
                "SELECT {SUMMARY_COLUMNS} FROM runs r {filter_sql}
                 ORDER BY r.started_at DESC, r.id DESC
                 LIMIT {}",
                limit + 1
            ))?;
            let rows = stmt.query_map(
                crate::store::params_from_iter(values.iter()),
                summary_of_row,
            )?;
            rows.collect::<Result<Vec<_>, _>>()
        })?;
        let next = (runs.len() > limit).then(|| {
            runs.truncate(limit);
            runs.last().map(|r| RunKey {
                started_at: r.started_at.clone(),
                id: r.id.clone(),
            })
        });
        Ok(RunPage {
            runs,
            next: next.flatten(),
        })
    }
}
