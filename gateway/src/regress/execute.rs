//! Running one case: its bundle walked by the counterfactual executor with the case's
//! mutations (tools served from the recording, the model's recorded answers where the request
//! is unchanged and the fake provider's otherwise: nothing leaves the process), the outcome
//! judged by each assertion, and the bundle's exact replay under this build checked for drift.

pub mod signature;

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::RegressError;
use super::bundle::{FixtureBundle, file_hash};
use super::case::{AssertionClass, RegressionCase};
use super::target::{Target, retarget};
use crate::evaluators::EvalSubject;
use crate::recorder::format::RunFile;
use crate::replay::counterfactual::{Execution, Prepared};
use crate::replay::metrics::subject;
use crate::replay::replay_file;
use crate::replay::scenario::{ModelSource, ScenarioSpec, check};
use signature::{FailureSignature, signature};

/// A case read from its file, with its bundle.
#[derive(Debug, Clone)]
pub struct LoadedCase {
    /// The case file.
    pub path: PathBuf,
    /// The case.
    pub case: RegressionCase,
    /// Its bundle.
    pub bundle: FixtureBundle,
}

/// Reads the case at `path` and the bundle it names, checking the bundle's hash.
pub fn load(path: &Path) -> Result<LoadedCase, RegressError> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| RegressError::Io {
        path: shown.clone(),
        source,
    })?;
    let case = RegressionCase::parse(&text, &shown)?;
    let bundle_path = path
        .parent()
        .unwrap_or_else(|| Path::new("."))
        .join(&case.bundle.path);
    let bundle_shown = bundle_path.display().to_string();
    let bundle_text =
        std::fs::read_to_string(&bundle_path).map_err(|e| RegressError::CaseFile {
            path: shown.clone(),
            line: text
                .lines()
                .position(|l| l.starts_with("bundle:"))
                .map(|n| n + 1),
            detail: format!("its bundle `{bundle_shown}` cannot be read: {e}"),
            help: "`bundle.path` is relative to the case file; commit the bundle with the case"
                .into(),
        })?;
    let hash = file_hash(&bundle_text);
    if hash != case.bundle.hash {
        return Err(RegressError::Bundle {
            path: bundle_shown,
            detail: format!(
                "its content hash is {hash}, the case `{}` pins {}\n  help: bundles are not edited by hand; restore it, or make the case again with `tollgate regress from-run`",
                case.id, case.bundle.hash
            ),
        });
    }
    let bundle = FixtureBundle::from_file(&bundle_text, &bundle_shown)?;
    Ok(LoadedCase {
        path: path.to_path_buf(),
        case,
        bundle,
    })
}

/// One assertion's verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AssertionResult {
    /// Its class.
    pub class: AssertionClass,
    /// Its index in the class.
    pub index: usize,
    /// Its kind.
    pub kind: String,
    /// Its path, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// The value it expects, for `json_path_equals`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected: Option<serde_json::Value>,
    /// Whether it passed.
    pub passed: bool,
    /// What was expected and found.
    pub message: String,
}

/// One execution of a case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseResult {
    /// The case.
    pub case: String,
    /// Its version.
    pub version: u32,
    /// Its name.
    pub name: String,
    /// Its agent.
    pub agent: String,
    /// Its task type.
    pub task_type: String,
    /// What it ran against (`recorded`, a target file, a commit).
    pub target: String,
    /// Whether every assertion passed.
    pub passed: bool,
    /// Whether the bundle no longer replays exactly under this build (a compiler or policy
    /// engine change): reported apart from pass and fail.
    pub drift: bool,
    /// The first drift, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drift_detail: Option<String>,
    /// Every assertion's verdict, in file order.
    pub assertions: Vec<AssertionResult>,
    /// The failure's signature, when it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<FailureSignature>,
    /// Milliseconds it took.
    pub duration_ms: f64,
}

impl CaseResult {
    /// The assertions that failed.
    pub fn failures(&self) -> impl Iterator<Item = &AssertionResult> {
        self.assertions.iter().filter(|a| !a.passed)
    }
}

/// The outcome of `case` on `bundle` under `target`: the subject its assertions judge.
pub fn outcome(
    case: &RegressionCase,
    bundle: &FixtureBundle,
    target: &Target,
) -> Result<EvalSubject, RegressError> {
    outcome_on(case, &retarget(&bundle.run, target))
}

/// The outcome of `case` on a run file (its bundle, retargeted).
fn outcome_on(case: &RegressionCase, run: &RunFile) -> Result<EvalSubject, RegressError> {
    let spec = ScenarioSpec {
        run: run.run.id.clone(),
        step: case.step,
        name: None,
        mutations: case.mutations.clone(),
        mode: case.mode,
        model: ModelSource::Recorded,
        metrics: Vec::new(),
        rubric: Vec::new(),
    };
    // A case without mutations is the recording itself; one with them is checked like a
    // scenario (a mutation naming what the bundle lacks is refused with what exists).
    if !case.mutations.is_empty() {
        check(&spec, run).map_err(crate::replay::ReplayError::from)?;
    }
    let trajectory = Prepared::new(run)?.trajectory(&Execution {
        mutations: &case.mutations,
        step: case.step,
        mode: case.mode,
        model: ModelSource::Recorded,
        live: None,
    })?;
    Ok(subject(&trajectory))
}

/// Runs `case` on `bundle` under `target`.
pub fn run_case(
    case: &RegressionCase,
    bundle: &FixtureBundle,
    target: &Target,
) -> Result<CaseResult, RegressError> {
    let started = Instant::now();
    let run = retarget(&bundle.run, target);
    let subject = outcome_on(case, &run)?;
    let mut assertions = Vec::with_capacity(case.assertions.len());
    for (class, index, spec) in case.assertions.iter() {
        let (passed, message) = match spec.build_with(target.judge.as_ref()) {
            Ok(judge) => {
                let o = judge.evaluate(&subject);
                (o.passed, o.message)
            }
            Err(e) => (false, e.to_string()),
        };
        let written = serde_json::to_value(spec).unwrap_or_default();
        let path = written
            .get("path")
            .and_then(|p| p.as_str().map(str::to_string));
        let expected = match spec {
            crate::evaluators::AssertionSpec::JsonPathEquals { value, .. } => Some(value.clone()),
            _ => None,
        };
        assertions.push(AssertionResult {
            class,
            index,
            kind: spec.kind().to_string(),
            path,
            expected,
            passed,
            message,
        });
    }
    let report = replay_file(&run)?;
    let drift_detail = report
        .steps
        .iter()
        .flat_map(|s| s.checks.iter().map(move |c| (s.step, c)))
        .find(|(_, c)| !c.matched)
        .map(|(step, c)| format!("step {step}, event {} {}: {}", c.seq, c.check, c.detail));
    let passed = assertions.iter().all(|a| a.passed);
    let mut result = CaseResult {
        case: case.id.clone(),
        version: case.version,
        name: case.name.clone(),
        agent: case.agent.clone(),
        task_type: case.task_type.clone(),
        target: target.label.clone(),
        passed,
        drift: drift_detail.is_some(),
        drift_detail,
        assertions,
        signature: None,
        duration_ms: 0.0,
    };
    result.signature = (!passed).then(|| signature(&result));
    result.duration_ms = started.elapsed().as_secs_f64() * 1000.0;
    Ok(result)
}
