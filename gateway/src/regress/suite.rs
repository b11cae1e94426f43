//! A suite: every case under a path, each run `repeat` times in parallel, and the figures a
//! CI gate reads — pass rate, drift, flaky cases (mixed verdicts over repeats, reported apart
//! from failures), coverage by agent and task type, failures clustered by signature — as
//! text, JSON or JUnit XML.
//!
//! A case that fails every repeat **fails**; one that passes some and fails others is
//! **flaky** (it does not fail the suite: it is listed apart so it gets looked at, not
//! retried into green); one whose file or bundle does not load is an **error** (it fails the
//! suite). Cases run in the order of their paths, so reports are stable.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::RegressError;
use super::bundle::FixtureBundle;
use super::case::RegressionCase;
use super::execute::signature::FailureSignature;
use super::execute::{CaseResult, LoadedCase, load, run_case};
use super::target::Target;

/// Every case file under `path` (a file, or a directory searched recursively for `.yaml` and
/// `.yml` files outside hidden directories, `target.yaml` excepted), sorted.
pub fn discover(path: &Path) -> Result<Vec<PathBuf>, RegressError> {
    let io = |source| RegressError::Io {
        path: path.display().to_string(),
        source,
    };
    let meta = std::fs::metadata(path).map_err(io)?;
    if meta.is_file() {
        return Ok(vec![path.to_path_buf()]);
    }
    let mut found = Vec::new();
    let mut dirs = vec![path.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let entries = std::fs::read_dir(&dir).map_err(|source| RegressError::Io {
            path: dir.display().to_string(),
            source,
        })?;
        for entry in entries.flatten() {
            let p = entry.path();
            let hidden = p
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with('.'));
            // A target file sits beside the cases; it is not one.
            let target = p
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n == "target.yaml" || n == "target.yml");
            if hidden || target {
                continue;
            }
            if p.is_dir() {
                dirs.push(p);
            } else if p
                .extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| e == "yaml" || e == "yml")
            {
                found.push(p);
            }
        }
    }
    found.sort();
    Ok(found)
}

/// How a case fared over its repeats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CaseStatus {
    /// Passed every repeat.
    Passed,
    /// Failed every repeat.
    Failed,
    /// Passed some repeats and failed others.
    Flaky,
    /// Did not load or could not run.
    Error,
}

impl CaseStatus {
    /// Its name.
    pub fn as_str(self) -> &'static str {
        match self {
            CaseStatus::Passed => "passed",
            CaseStatus::Failed => "failed",
            CaseStatus::Flaky => "flaky",
            CaseStatus::Error => "error",
        }
    }
}

/// One case in a suite.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseReport {
    /// The case file.
    pub path: String,
    /// The case id (the file stem when it did not load).
    pub case: String,
    /// How it fared.
    pub status: CaseStatus,
    /// Repeats that passed.
    pub passes: u32,
    /// Repeats run.
    pub runs: u32,
    /// The last repeat's result (the first failing one, when some failed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<CaseResult>,
    /// Why it did not load or run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl CaseReport {
    /// A case that did not load or could not run.
    pub fn error(path: &str, case: &str, e: &RegressError) -> CaseReport {
        CaseReport {
            path: path.to_string(),
            case: case.to_string(),
            status: CaseStatus::Error,
            passes: 0,
            runs: 0,
            result: None,
            error: Some(e.to_string()),
        }
    }
}

/// `f` of every item on up to `threads` threads, in the items' order; `done(n)` is called on
/// this thread as the `n`th result comes in (for progress).
pub fn par_map<T: Sync, R: Send>(
    items: &[T],
    threads: usize,
    f: impl Fn(&T) -> R + Sync,
    done: &mut dyn FnMut(usize),
) -> Vec<R> {
    let slots: Vec<Mutex<Option<R>>> = items.iter().map(|_| Mutex::new(None)).collect();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    std::thread::scope(|scope| {
        for _ in 0..threads.clamp(1, items.len().max(1)) {
            let (tx, next, slots, f) = (tx.clone(), &next, &slots, &f);
            scope.spawn(move || {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(item) = items.get(i) else { break };
                    let r = f(item);
                    if let Ok(mut slot) = slots[i].lock() {
                        *slot = Some(r);
                    }
                    let _ = tx.send(());
                }
            });
        }
        drop(tx);
        let mut n = 0;
        for () in rx {
            n += 1;
            done(n);
        }
    });
    slots
        .into_iter()
        .filter_map(|m| m.into_inner().ok().flatten())
        .collect()
}

/// Cases and passes for one agent or task type.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Coverage {
    /// Cases.
    pub cases: u32,
    /// Of which passed.
    pub passed: u32,
}

/// A signature and the cases that failed with it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SignatureCluster {
    /// The signature.
    pub signature: FailureSignature,
    /// The cases, by id.
    pub cases: Vec<String>,
}

/// The figures of a suite run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SuiteFigures {
    /// Cases.
    pub cases: u32,
    /// Passed every repeat.
    pub passed: u32,
    /// Failed every repeat.
    pub failed: u32,
    /// Mixed.
    pub flaky: u32,
    /// Did not load or run.
    pub errors: u32,
    /// `passed / cases` (0 for an empty suite).
    pub pass_rate: f64,
    /// Cases whose bundle no longer replays exactly under this build.
    pub drift: u32,
    /// By agent.
    pub by_agent: BTreeMap<String, Coverage>,
    /// By task type.
    pub by_task_type: BTreeMap<String, Coverage>,
}

/// A suite run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SuiteReport {
    /// What was run.
    pub path: String,
    /// What it ran against (`recorded`, or a target file).
    pub target: String,
    /// Repeats per case.
    pub repeat: u32,
    /// Per case, in path order.
    pub cases: Vec<CaseReport>,
    /// The figures.
    pub figures: SuiteFigures,
    /// Failures clustered by signature, the largest cluster first.
    pub signatures: Vec<SignatureCluster>,
    /// Milliseconds the suite took.
    pub duration_ms: f64,
}

impl SuiteReport {
    /// Whether the suite fails a gate: a case failed or did not load.
    pub fn failed(&self) -> bool {
        self.figures.failed > 0 || self.figures.errors > 0
    }
}

/// Runs every case in `paths`, each `repeat` times, on `threads` threads.
pub fn run_suite(
    label: &str,
    paths: &[PathBuf],
    repeat: u32,
    threads: usize,
    target: &Target,
) -> SuiteReport {
    let started = Instant::now();
    let repeat = repeat.max(1);
    let cases = par_map(
        paths,
        threads,
        |path| run_one(path, repeat, target),
        &mut |_| {},
    );
    let mut report = SuiteReport {
        path: label.to_string(),
        target: target.label.clone(),
        repeat,
        figures: figures(&cases),
        signatures: clusters(&cases),
        cases,
        duration_ms: 0.0,
    };
    report.duration_ms = started.elapsed().as_secs_f64() * 1000.0;
    report
}

fn run_one(path: &Path, repeat: u32, target: &Target) -> CaseReport {
    let shown = path.display().to_string();
    match load(path) {
        Ok(LoadedCase { case, bundle, .. }) => run_loaded(&shown, &case, &bundle, repeat, target),
        Err(e) => {
            let stem = path
                .file_stem()
                .and_then(|s| s.to_str())
                .unwrap_or_default();
            CaseReport::error(&shown, stem, &e)
        }
    }
}

/// Runs a loaded case `repeat` times; `shown` names where it came from.
pub fn run_loaded(
    shown: &str,
    case: &RegressionCase,
    bundle: &FixtureBundle,
    repeat: u32,
    target: &Target,
) -> CaseReport {
    let mut passes = 0;
    let mut kept: Option<CaseResult> = None;
    for _ in 0..repeat {
        match run_case(case, bundle, target) {
            Ok(r) => {
                if r.passed {
                    passes += 1;
                }
                // Keep the first failing result: it explains the failure.
                if kept.as_ref().is_none_or(|k| k.passed) {
                    kept = Some(r);
                }
            }
            Err(e) => return CaseReport::error(shown, &case.id, &e),
        }
    }
    let status = match passes {
        p if p == repeat => CaseStatus::Passed,
        0 => CaseStatus::Failed,
        _ => CaseStatus::Flaky,
    };
    CaseReport {
        path: shown.to_string(),
        case: case.id.clone(),
        status,
        passes,
        runs: repeat,
        result: kept,
        error: None,
    }
}

/// The figures of `cases`.
pub fn figures(cases: &[CaseReport]) -> SuiteFigures {
    let mut f = SuiteFigures::default();
    for c in cases {
        f.cases += 1;
        match c.status {
            CaseStatus::Passed => f.passed += 1,
            CaseStatus::Failed => f.failed += 1,
            CaseStatus::Flaky => f.flaky += 1,
            CaseStatus::Error => f.errors += 1,
        }
        let Some(r) = &c.result else { continue };
        if r.drift {
            f.drift += 1;
        }
        let passed = u32::from(c.status == CaseStatus::Passed);
        for (map, key) in [
            (&mut f.by_agent, &r.agent),
            (&mut f.by_task_type, &r.task_type),
        ] {
            let entry = map.entry(key.clone()).or_default();
            entry.cases += 1;
            entry.passed += passed;
        }
    }
    if f.cases > 0 {
        f.pass_rate = f64::from(f.passed) / f64::from(f.cases);
    }
    f
}

/// Failures grouped by signature: the largest cluster first, then by id.
pub fn clusters(cases: &[CaseReport]) -> Vec<SignatureCluster> {
    let mut by: BTreeMap<FailureSignature, Vec<String>> = BTreeMap::new();
    for c in cases {
        if let Some(sig) = c.result.as_ref().and_then(|r| r.signature.clone()) {
            by.entry(sig).or_default().push(c.case.clone());
        }
    }
    let mut out: Vec<SignatureCluster> = by
        .into_iter()
        .map(|(signature, cases)| SignatureCluster { signature, cases })
        .collect();
    out.sort_by(|a, b| {
        b.cases
            .len()
            .cmp(&a.cases.len())
            .then_with(|| a.signature.id.cmp(&b.signature.id))
    });
    out
}

#[cfg(test)]
mod tests;
