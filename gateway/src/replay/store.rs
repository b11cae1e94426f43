//! Scenarios, batches and results in the store (migration 10). A scenario's id is a hash of
//! its spec, so storing the same scenario twice keeps one; a result's id counts the
//! executions of its scenario (`rpl-HASH-N`), a batch's the batches of its run.

use crate::store::{Connection, OptionalExtension, next_number, params};
use serde::Serialize;
use serde_json::Value;

use super::batch::BatchSpec;
use super::result::{ReplayResult, ResultSummary};
use super::scenario::ScenarioSpec;
use crate::store::{Store, StoreError};

/// A stored scenario.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StoredScenario {
    /// `scn-...`.
    pub id: String,
    /// Its spec.
    pub spec: ScenarioSpec,
    /// Who created it.
    pub created_by: String,
    /// When.
    pub created_at: String,
}

/// A stored batch.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StoredBatch {
    /// `bat-...`.
    pub id: String,
    /// Its spec.
    pub spec: BatchSpec,
    /// Its scenarios, in order.
    pub scenarios: Vec<String>,
    /// The job running it.
    pub job: Option<i64>,
    /// Who created it.
    pub created_by: String,
    /// When.
    pub created_at: String,
}

fn corrupt(what: &str, e: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt(format!("{what}: {e}"))
}

fn json_text<T: Serialize>(value: &T) -> Result<String, StoreError> {
    let v = serde_json::to_value(value).map_err(|e| corrupt("encoding", e))?;
    Ok(tollgate_rules::canonical::canonical_json(&v))
}

/// Stores `spec` (once: the same spec is the same scenario); whether it was new.
pub fn save_scenario(
    c: &Connection,
    spec: &ScenarioSpec,
    by: &str,
    at: &str,
) -> Result<(StoredScenario, bool), StoreError> {
    let id = spec.id();
    let added = c.execute(
        "INSERT INTO replay_scenarios (id, run_id, step, name, spec, created_by, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT DO NOTHING",
        params![id, spec.run, spec.step, spec.name, json_text(spec)?, by, at],
    )? == 1;
    let stored =
        scenario_in(c, &id)?.ok_or_else(|| StoreError::NotFound(format!("no scenario `{id}`")))?;
    Ok((stored, added))
}

/// The scenario `id`.
pub fn scenario(store: &Store, id: &str) -> Result<Option<StoredScenario>, StoreError> {
    let id = id.to_string();
    store.read(move |c| scenario_in(c, &id))
}

fn scenario_in(c: &Connection, id: &str) -> Result<Option<StoredScenario>, StoreError> {
    let row = c
        .query_row(
            "SELECT spec, created_by, created_at FROM replay_scenarios WHERE id = ?1",
            [id],
            |r| {
                Ok((
                    r.get::<String>(0)?,
                    r.get::<String>(1)?,
                    r.get::<String>(2)?,
                ))
            },
        )
        .optional()?;
    row.map(|(spec, created_by, created_at)| {
        Ok(StoredScenario {
            id: id.to_string(),
            spec: serde_json::from_str(&spec).map_err(|e| corrupt("a stored scenario", e))?,
            created_by,
            created_at,
        })
    })
    .transpose()
}

/// Stores a result, giving it its id and time; the stored result.
pub fn save_result(
    c: &Connection,
    mut result: ReplayResult,
    at: &str,
) -> Result<ReplayResult, StoreError> {
    let n = next_number(c, &format!("replay_results/{}", result.scenario))?;
    let hash = result.scenario.trim_start_matches("scn-");
    result.id = format!("rpl-{}-{n}", &hash[..hash.len().min(12)]);
    result.executed_at = at.to_string();
    // The baseline is the same for every scenario of a run (or step): stored once, as an
    // artifact under its hash, and referred to from the result.
    let baseline =
        serde_json::to_vec(&result.baseline).map_err(|e| corrupt("encoding a baseline", e))?;
    let hash = blake3::hash(&baseline).to_hex().to_string();
    crate::store::artifacts::store(c, &hash, TRAJECTORY_MEDIA_TYPE, &baseline)?;
    let mut row = serde_json::to_value(&result).map_err(|e| corrupt("encoding a result", e))?;
    row["baseline"] = serde_json::json!({ "artifact": hash });
    c.execute(
        "INSERT INTO replay_results (id, scenario_id, batch_id, run_id, label, first_change, result, executed_at, seq)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        params![
            result.id,
            result.scenario,
            result.batch,
            result.run,
            result.label.as_str(),
            result.first_change,
            row.to_string(),
            at,
            next_number(c, "replay_results")?
        ],
    )?;
    Ok(result)
}

/// The media type of a stored trajectory.
const TRAJECTORY_MEDIA_TYPE: &str = "application/vnd.tollgate.trajectory+json";

/// A stored result's row, its baseline read back from its artifact.
fn load_result(c: &Connection, text: &str) -> Result<ReplayResult, StoreError> {
    let mut row: Value = serde_json::from_str(text).map_err(|e| corrupt("a stored result", e))?;
    if let Some(hash) = row["baseline"]["artifact"].as_str().map(str::to_string) {
        let body: Vec<u8> = c
            .prepare_cached("SELECT body FROM artifacts WHERE hash = ?1")?
            .query_row([&hash], |r| r.get(0))
            .optional()?
            .ok_or_else(|| corrupt("a stored result", format!("baseline {hash} is missing")))?;
        row["baseline"] =
            serde_json::from_slice(&body).map_err(|e| corrupt("a stored baseline", e))?;
    }
    serde_json::from_value(row).map_err(|e| corrupt("a stored result", e))
}

/// A stored result's summary, without reading its baseline.
fn summary_of(text: &str) -> Result<ResultSummary, StoreError> {
    #[derive(serde::Deserialize)]
    struct Row {
        id: String,
        scenario: String,
        #[serde(default)]
        batch: Option<String>,
        run: String,
        #[serde(default)]
        name: Option<String>,
        mutations: Vec<super::scenario::Mutation>,
        label: super::metrics::Label,
        #[serde(default)]
        first_change: Option<u32>,
        metrics: Vec<super::metrics::MetricDelta>,
        #[serde(default)]
        executed_at: String,
    }
    let r: Row = serde_json::from_str(text).map_err(|e| corrupt("a stored result", e))?;
    Ok(ResultSummary {
        id: r.id,
        scenario: r.scenario,
        batch: r.batch,
        run: r.run,
        name: r.name,
        mutations: r.mutations,
        label: r.label,
        first_change: r.first_change,
        deltas: r
            .metrics
            .iter()
            .map(|m| (m.metric.as_str().to_string(), m.delta))
            .collect(),
        executed_at: r.executed_at,
    })
}

/// The result `id`.
pub fn result(store: &Store, id: &str) -> Result<Option<ReplayResult>, StoreError> {
    let id = id.to_string();
    store.read(move |c| {
        let text: Option<String> = c
            .query_row(
                "SELECT result FROM replay_results WHERE id = ?1",
                [&id],
                |r| r.get(0),
            )
            .optional()?;
        text.map(|t| load_result(c, &t)).transpose()
    })
}

/// Which results to list.
#[derive(Debug, Clone, Default)]
pub struct ResultFilter {
    /// Of this run.
    pub run: Option<String>,
    /// Of this scenario.
    pub scenario: Option<String>,
    /// Of this batch.
    pub batch: Option<String>,
    /// Only those stored before this result (the last of the previous page).
    pub before: Option<String>,
    /// At most this many, newest first.
    pub limit: usize,
}

/// Results, newest first (in the order they were stored), paged by key.
pub fn results(store: &Store, filter: &ResultFilter) -> Result<Vec<ResultSummary>, StoreError> {
    let f = filter.clone();
    store.read(move |c| {
        let mut stmt = c.prepare(
            "SELECT result FROM replay_results
             WHERE (CAST(?1 AS TEXT) IS NULL OR run_id = ?1) AND (CAST(?2 AS TEXT) IS NULL OR scenario_id = ?2)
               AND (CAST(?3 AS TEXT) IS NULL OR batch_id = ?3)
               AND (CAST(?5 AS TEXT) IS NULL OR seq < (SELECT seq FROM replay_results WHERE id = ?5))
             ORDER BY seq DESC LIMIT ?4",
        )?;
        let limit = i64::try_from(f.limit.max(1)).unwrap_or(i64::MAX);
        let rows = stmt.query_map(params![f.run, f.scenario, f.batch, limit, f.before], |r| {
            r.get::<String>(0)
        })?;
        let mut out = Vec::new();
        for text in rows {
            out.push(summary_of(&text?)?);
        }
        Ok(out)
    })
}

/// Stores a batch of `scenarios` (each stored too); its id.
pub fn save_batch(
    c: &Connection,
    spec: &BatchSpec,
    scenarios: &[ScenarioSpec],
    by: &str,
    at: &str,
) -> Result<StoredBatch, StoreError> {
    let mut ids = Vec::with_capacity(scenarios.len());
    for s in scenarios {
        ids.push(save_scenario(c, s, by, at)?.0.id);
    }
    let n = next_number(c, &format!("replay_batches/{}", spec.run))?;
    let hash = blake3::hash(spec.run.as_bytes()).to_hex();
    let id = format!("bat-{}-{n}", &hash[..12]);
    c.execute(
        "INSERT INTO replay_batches (id, run_id, name, spec, scenarios, created_by, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        params![
            id,
            spec.run,
            spec.name,
            json_text(spec)?,
            json_text(&ids)?,
            by,
            at
        ],
    )?;
    Ok(StoredBatch {
        id,
        spec: spec.clone(),
        scenarios: ids,
        job: None,
        created_by: by.to_string(),
        created_at: at.to_string(),
    })
}

/// Records the job that runs batch `id`.
pub fn set_batch_job(c: &Connection, id: &str, job: i64) -> Result<(), StoreError> {
    c.execute(
        "UPDATE replay_batches SET job_id = ?2 WHERE id = ?1",
        params![id, job],
    )?;
    Ok(())
}

/// The batch `id`.
pub fn batch(store: &Store, id: &str) -> Result<Option<StoredBatch>, StoreError> {
    let id = id.to_string();
    store.read(move |c| {
        let row = c
            .query_row(
                "SELECT spec, scenarios, job_id, created_by, created_at FROM replay_batches
                 WHERE id = ?1",
                [&id],
                |r| {
                    Ok((
                        r.get::<String>(0)?,
                        r.get::<String>(1)?,
                        r.get::<Option<i64>>(2)?,
                        r.get::<String>(3)?,
                        r.get::<String>(4)?,
                    ))
                },
            )
            .optional()?;
        row.map(|(spec, scenarios, job, created_by, created_at)| {
            Ok(StoredBatch {
                id: id.clone(),
                spec: serde_json::from_str(&spec).map_err(|e| corrupt("a stored batch", e))?,
                scenarios: serde_json::from_str::<Value>(&scenarios)
                    .ok()
                    .and_then(|v| serde_json::from_value(v).ok())
                    .ok_or_else(|| corrupt("a stored batch", "its scenarios do not read"))?,
                job,
                created_by,
                created_at,
            })
        })
        .transpose()
    })
}
