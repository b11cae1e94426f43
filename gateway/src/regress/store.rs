//! Cases, their versions and their run history in the store (migration 11): the store of
//! redacted fixture snapshots the seed asks for. A case version is its file's YAML; its bundle
//! is an artifact under the hash the case pins (stored once, whichever versions share it).
//! Each execution of a case is a row of `regression_runs`, the case's history; a suite
//! execution groups them (`regression_suites`).

use crate::store::{Connection, OptionalExtension, next_number, params};
use serde::{Deserialize, Serialize};

use super::RegressError;
use super::bundle::{FixtureBundle, file_hash};
use super::case::RegressionCase;
use super::suite::{CaseReport, SignatureCluster, SuiteFigures};
use crate::store::{Store, StoreError};

/// The media type of a stored bundle.
pub const BUNDLE_MEDIA_TYPE: &str = "application/vnd.tollgate.fixture+json";

fn corrupt(what: &str, e: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt(format!("{what}: {e}"))
}

/// One stored version of a case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseVersion {
    /// The case.
    pub id: String,
    /// The version.
    pub version: u32,
    /// Why it was made (its `changes` entry).
    pub reason: String,
    /// When it was stored.
    pub created_at: String,
}

/// A case as listed: its latest version and how it last ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseSummary {
    /// The case.
    pub id: String,
    /// Its latest version.
    pub version: u32,
    /// Its name.
    pub name: String,
    /// Its agent.
    pub agent: String,
    /// Its task type.
    pub task_type: String,
    /// The run it came from.
    pub run: String,
    /// The last execution's status, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_status: Option<String>,
    /// The last execution's signature, when it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_signature: Option<String>,
    /// When it last ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_run_at: Option<String>,
}

/// One execution of a case, as its history shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseRun {
    /// The row's id (pages go `before` it).
    pub id: i64,
    /// The case.
    pub case: String,
    /// The version run.
    pub version: u32,
    /// The suite execution it was part of.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suite: Option<String>,
    /// `passed`, `failed`, `flaky`, `error`.
    pub status: String,
    /// Repeats that passed, of those run.
    pub passes: u32,
    /// Repeats run.
    pub runs: u32,
    /// Whether the bundle drifted.
    pub drift: bool,
    /// The failure's signature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
    /// The report (the kept result, or the error).
    pub report: CaseReport,
    /// When.
    pub executed_at: String,
}

/// A stored suite execution.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredSuite {
    /// `sui-N`.
    pub id: String,
    /// What it selected (the request, as JSON).
    pub selection: serde_json::Value,
    /// The job running it, when it ran as one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<i64>,
    /// Its figures, once it finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub figures: Option<SuiteFigures>,
    /// Its failures by signature, once it finished.
    #[serde(default)]
    pub signatures: Vec<SignatureCluster>,
    /// When it was created.
    pub created_at: String,
    /// When it finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<String>,
}

/// Stores `case` and its bundle. The same version stored twice with the same file is kept
/// once (`Ok(false)`); a different file under a stored version is refused (versions are
/// immutable: a change is the next version).
pub fn save_case(
    c: &Connection,
    case: &RegressionCase,
    bundle: &FixtureBundle,
    at: &str,
) -> Result<bool, RegressError> {
    let yaml = case.to_yaml();
    let existing: Option<String> = c
        .query_row(
            "SELECT yaml FROM regression_cases WHERE id = ?1 AND version = ?2",
            params![case.id, case.version],
            |r| r.get(0),
        )
        .optional()?;
    if let Some(stored) = existing {
        if stored == yaml {
            return Ok(false);
        }
        return Err(RegressError::Conflict(format!(
            "case `{}` version {} is stored with other content; versions do not change: make the next one (`regress update`)",
            case.id, case.version
        )));
    }
    let body = bundle.to_file();
    let hash = file_hash(&body);
    if hash != case.bundle.hash {
        return Err(RegressError::Conflict(format!(
            "case `{}` pins bundle {} but was given {hash}",
            case.id, case.bundle.hash
        )));
    }
    crate::store::artifacts::store(c, &hash, BUNDLE_MEDIA_TYPE, body.as_bytes())?;
    let reason = case
        .changes
        .iter()
        .rev()
        .find(|ch| ch.version == case.version)
        .map_or_else(String::new, |ch| ch.reason.clone());
    c.execute(
        "INSERT INTO regression_cases (id, version, name, agent, task_type, run_id, bundle_hash, reason, yaml, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
        params![
            case.id,
            case.version,
            case.name,
            case.agent,
            case.task_type,
            case.source.run,
            hash,
            reason,
            yaml,
            at
        ],
    )?;
    Ok(true)
}

/// The case `id` at `version` (the latest when `None`).
pub fn case(
    store: &Store,
    id: &str,
    version: Option<u32>,
) -> Result<Option<RegressionCase>, StoreError> {
    let (id, version) = (id.to_string(), version);
    store.read(move |c| {
        let yaml: Option<String> = match version {
            Some(v) => c
                .query_row(
                    "SELECT yaml FROM regression_cases WHERE id = ?1 AND version = ?2",
                    params![id, v],
                    |r| r.get(0),
                )
                .optional()?,
            None => c
                .query_row(
                    "SELECT yaml FROM regression_cases WHERE id = ?1 ORDER BY version DESC LIMIT 1",
                    params![id],
                    |r| r.get(0),
                )
                .optional()?,
        };
        yaml.map(|y| {
            RegressionCase::parse(&y, &format!("stored case {id}"))
                .map_err(|e| corrupt("a stored case", e))
        })
        .transpose()
    })
}

/// The bundle stored under `hash`.
pub fn bundle(store: &Store, hash: &str) -> Result<Option<FixtureBundle>, StoreError> {
    let hash = hash.to_string();
    store.read(move |c| {
        let body: Option<Vec<u8>> = c
            .query_row("SELECT body FROM artifacts WHERE hash = ?1", [&hash], |r| {
                r.get(0)
            })
            .optional()?;
        body.map(|b| {
            let text = String::from_utf8(b).map_err(|e| corrupt("a stored bundle", e))?;
            FixtureBundle::from_file(&text, &format!("stored bundle {hash}"))
                .map_err(|e| corrupt("a stored bundle", e))
        })
        .transpose()
    })
}

/// Every version of a case, oldest first.
pub fn versions(store: &Store, id: &str) -> Result<Vec<CaseVersion>, StoreError> {
    let id = id.to_string();
    store.read(move |c| {
        let mut stmt = c.prepare_cached(
            "SELECT id, version, reason, created_at FROM regression_cases WHERE id = ?1 ORDER BY version",
        )?;
        let rows = stmt.query_map([&id], |r| {
            Ok(CaseVersion {
                id: r.get(0)?,
                version: r.get(1)?,
                reason: r.get(2)?,
                created_at: r.get(3)?,
            })
        })?;
        rows.collect::<Result<Vec<_>, _>>()
    })
}

/// Every case at its latest version, by id, with how it last ran.
pub fn cases(store: &Store) -> Result<Vec<CaseSummary>, StoreError> {
    store.read(|c| {
        let mut stmt = c.prepare_cached(
            "SELECT k.id, k.version, k.name, k.agent, k.task_type, k.run_id,
                    (SELECT status FROM regression_runs r WHERE r.case_id = k.id ORDER BY r.id DESC LIMIT 1),
                    (SELECT signature FROM regression_runs r WHERE r.case_id = k.id ORDER BY r.id DESC LIMIT 1),
                    (SELECT executed_at FROM regression_runs r WHERE r.case_id = k.id ORDER BY r.id DESC LIMIT 1)
             FROM regression_cases k
             WHERE k.version = (SELECT max(version) FROM regression_cases v WHERE v.id = k.id)
             ORDER BY k.id",
        )?;
        let rows = stmt.query_map((), |r| {
            Ok(CaseSummary {
                id: r.get(0)?,
                version: r.get(1)?,
                name: r.get(2)?,
                agent: r.get(3)?,
                task_type: r.get(4)?,
                run: r.get(5)?,
                last_status: r.get(6)?,
                last_signature: r.get(7)?,
                last_run_at: r.get(8)?,
            })
        })?;
        rows.collect::<Result<Vec<_>, _>>()
    })
}

/// Records one execution of a case (its latest report over its repeats).
pub fn record_run(
    c: &Connection,
    version: u32,
    report: &CaseReport,
    suite: Option<&str>,
    at: &str,
) -> Result<i64, StoreError> {
    let result = report.result.as_ref();
    let body = serde_json::to_string(report).map_err(|e| corrupt("encoding a report", e))?;
    c.query_row(
        "INSERT INTO regression_runs (case_id, version, suite_id, status, passes, runs, drift, signature, report, executed_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10) RETURNING id",
        params![
            report.case,
            version,
            suite,
            report.status.as_str(),
            report.passes,
            report.runs,
            result.is_some_and(|r| r.drift),
            result.and_then(|r| r.signature.as_ref()).map(|s| s.id.clone()),
            body,
            at
        ],
        |r| r.get(0),
    )
}

/// A case's executions, newest first: at most `limit`, older than row `before` when given.
pub fn history(
    store: &Store,
    id: &str,
    limit: u32,
    before: Option<i64>,
) -> Result<Vec<CaseRun>, StoreError> {
    let id = id.to_string();
    store.read(move |c| {
        runs(
            c,
            "WHERE case_id = ?1 AND id < ?2 ORDER BY id DESC LIMIT ?3",
            params![id, before.unwrap_or(i64::MAX), limit],
        )
    })
}

/// The runs `tail` (a `WHERE` clause and order) selects.
fn runs(
    c: &Connection,
    tail: &str,
    args: impl crate::store::Params,
) -> Result<Vec<CaseRun>, StoreError> {
    let mut stmt = c.prepare_cached(&format!(
        "SELECT id, case_id, version, suite_id, status, passes, runs, drift, signature, report, executed_at
         FROM regression_runs {tail}"
    ))?;
    let mut rows = stmt.query(args)?;
    let mut out = Vec::new();
    while let Some(r) = rows.next()? {
        let report: String = r.get(9)?;
        out.push(CaseRun {
            id: r.get(0)?,
            case: r.get(1)?,
            version: r.get(2)?,
            suite: r.get(3)?,
            status: r.get(4)?,
            passes: r.get(5)?,
            runs: r.get(6)?,
            drift: r.get(7)?,
            signature: r.get(8)?,
            report: serde_json::from_str(&report).map_err(|e| corrupt("a stored report", e))?,
            executed_at: r.get(10)?,
        });
    }
    Ok(out)
}

/// Stores a new suite execution; its id.
pub fn create_suite(
    c: &Connection,
    selection: &serde_json::Value,
    at: &str,
) -> Result<String, StoreError> {
    let n = next_number(c, "regression_suites")?;
    let id = format!("sui-{n}");
    c.execute(
        "INSERT INTO regression_suites (id, selection, created_at, seq) VALUES (?1, ?2, ?3, ?4)",
        params![id, selection.to_string(), at, n],
    )?;
    Ok(id)
}

/// Notes the job running a suite.
pub fn set_suite_job(c: &Connection, id: &str, job: i64) -> Result<(), StoreError> {
    c.execute(
        "UPDATE regression_suites SET job_id = ?2 WHERE id = ?1",
        params![id, job],
    )?;
    Ok(())
}

/// Records a suite's outcome.
pub fn finish_suite(
    c: &Connection,
    id: &str,
    figures: &SuiteFigures,
    signatures: &[SignatureCluster],
    at: &str,
) -> Result<(), StoreError> {
    let figures = serde_json::to_string(figures).map_err(|e| corrupt("encoding figures", e))?;
    let signatures =
        serde_json::to_string(signatures).map_err(|e| corrupt("encoding signatures", e))?;
    c.execute(
        "UPDATE regression_suites SET figures = ?2, signatures = ?3, finished_at = ?4 WHERE id = ?1",
        params![id, figures, signatures, at],
    )?;
    Ok(())
}

/// A suite execution.
pub fn suite(store: &Store, id: &str) -> Result<Option<StoredSuite>, StoreError> {
    let id = id.to_string();
    store.read(move |c| {
        c.query_row(
            "SELECT id, selection, job_id, figures, signatures, created_at, finished_at FROM regression_suites WHERE id = ?1",
            [&id],
            |r| {
                Ok((
                    r.get::<String>(0)?,
                    r.get::<String>(1)?,
                    r.get::<Option<i64>>(2)?,
                    r.get::<Option<String>>(3)?,
                    r.get::<Option<String>>(4)?,
                    r.get::<String>(5)?,
                    r.get::<Option<String>>(6)?,
                ))
            },
        )
        .optional()?
        .map(|(id, selection, job, figures, signatures, created_at, finished_at)| {
            Ok(StoredSuite {
                id,
                selection: serde_json::from_str(&selection)
                    .map_err(|e| corrupt("a suite's selection", e))?,
                job,
                figures: figures
                    .map(|f| serde_json::from_str(&f))
                    .transpose()
                    .map_err(|e| corrupt("a suite's figures", e))?,
                signatures: signatures
                    .map(|s| serde_json::from_str(&s))
                    .transpose()
                    .map_err(|e| corrupt("a suite's signatures", e))?
                    .unwrap_or_default(),
                created_at,
                finished_at,
            })
        })
        .transpose()
    })
}

/// The newest suite execution that finished.
pub fn last_suite(store: &Store) -> Result<Option<StoredSuite>, StoreError> {
    let id: Option<String> = store.read(|c| {
        c.query_row(
            "SELECT id FROM regression_suites WHERE finished_at IS NOT NULL ORDER BY seq DESC LIMIT 1",
            (),
            |r| r.get(0),
        )
        .optional()
    })?;
    match id {
        Some(id) => suite(store, &id),
        None => Ok(None),
    }
}

/// The runs of a suite, by case id.
pub fn suite_runs(store: &Store, id: &str) -> Result<Vec<CaseRun>, StoreError> {
    let id = id.to_string();
    store.read(move |c| runs(c, "WHERE suite_id = ?1 ORDER BY case_id, id", [&id]))
}
