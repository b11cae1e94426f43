//! Auto-regression: recorded runs, steps and replays become versioned, redacted regression
//! cases — files a repository commits — that rerun offline, locally and in CI.
//!
//! A case ([`case::RegressionCase`], YAML) pins a fixture bundle ([`bundle::FixtureBundle`]:
//! the run cut at its step, scrubbed of secrets and personal data, resealed so it replays
//! exactly), the mutations it makes, and assertions ([`case::AssertionSet`]) written by
//! templates ([`templates`]) on the outcome it was made from. Running a case
//! ([`execute::run_case`]) walks its bundle with the counterfactual executor
//! ([`crate::replay::counterfactual`]) — tools served from the recording, nothing executed,
//! no network — and judges the outcome ([`crate::replay::metrics::subject`]) with the shared
//! evaluators. A suite ([`suite`]) runs many cases, repeated, and gives pass rate, drift (a
//! bundle that no longer replays exactly under this build), flaky cases, coverage by agent
//! and task type, and failure signatures ([`signature`]) that cluster similar failures.
//!
//! Files: `DIR/ID.yaml` is the case, `DIR/fixtures/ID.json` its bundle (the case names it by
//! relative path and content hash).

pub mod bundle;
pub mod case;
pub mod execute;
pub mod jobs;
pub mod render;
pub mod store;
pub mod suite;
pub mod target;
pub mod templates;
pub mod update;

use std::path::{Path, PathBuf};

use crate::recorder::format::RunFile;
use crate::replay::ReplayError;
use crate::replay::result::ReplayResult;
use crate::replay::scenario::{ModelSource, Mutation, ToolMode};
use bundle::{FixtureBundle, cut};
use case::{BundleRef, CASE_FORMAT, CaseChange, CaseSource, RegressionCase, slug, valid_id};
use templates::Template;

/// What went wrong making, reading or running a case.
#[derive(Debug, thiserror::Error)]
pub enum RegressError {
    /// A case file that does not read or does not validate.
    #[error("{path}{}: {detail}\n  help: {help}", line.map(|l| format!(":{l}")).unwrap_or_default())]
    CaseFile {
        /// The file.
        path: String,
        /// The 1-based line, when known.
        line: Option<usize>,
        /// What is wrong.
        detail: String,
        /// How to fix it.
        help: String,
    },
    /// A bundle file that does not read.
    #[error("{path}: {detail}")]
    Bundle {
        /// The file.
        path: String,
        /// What is wrong.
        detail: String,
    },
    /// A bundle that would not be safe or faithful to commit.
    #[error("{0}")]
    Unsafe(String),
    /// A request that cannot be met.
    #[error("{0}")]
    Invalid(String),
    /// Replay failed.
    #[error(transparent)]
    Replay(#[from] ReplayError),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    /// Conflicts with what is stored (a version stored with other content, an id taken).
    #[error("{0}")]
    Conflict(String),
    /// No such case, suite or result.
    #[error("{0}")]
    NotFound(String),
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
}

/// How a case is made.
#[derive(Debug, Clone, Default)]
pub struct CaseOptions {
    /// Cover only this step (the bundle is cut at it).
    pub step: Option<u32>,
    /// The id; derived from the run (and step, or replay) when absent.
    pub id: Option<String>,
    /// The name; derived when absent.
    pub name: Option<String>,
    /// The task type; the run's `metadata.task_type`, else `unspecified`.
    pub task_type: Option<String>,
    /// The templates; all when empty.
    pub templates: Vec<Template>,
}

/// A case and its bundle, made from a recorded run (or one of its steps).
pub fn from_run(
    file: &RunFile,
    options: &CaseOptions,
) -> Result<(RegressionCase, FixtureBundle), RegressError> {
    let step = options.step;
    let id = match &options.id {
        Some(id) => id.clone(),
        None => match step {
            Some(s) => format!("{}-step-{s}", slug(&file.run.id)),
            None => slug(&file.run.id),
        },
    };
    let name = options.name.clone().unwrap_or_else(|| {
        let task = &file.run.task;
        match step.and_then(|s| file.steps.iter().find(|x| x.index == s)) {
            Some(s) => format!("{task}, step {} ({})", s.index, s.name),
            None => format!("{task}, whole run ({})", file.run.id),
        }
    });
    let reason = match step {
        Some(s) => format!("created from run {}, step {s}", file.run.id),
        None => format!("created from run {}", file.run.id),
    };
    make(
        file,
        options,
        Draft {
            id,
            name,
            source: CaseSource {
                run: file.run.id.clone(),
                step,
                replay: None,
            },
            mutations: Vec::new(),
            mode: ToolMode::DryRun,
            reason,
        },
    )
}

/// A case and its bundle, made from a replay result of `file`: the result's step and
/// mutations, assertions on what they lead to.
pub fn from_replay(
    file: &RunFile,
    result: &ReplayResult,
    options: &CaseOptions,
) -> Result<(RegressionCase, FixtureBundle), RegressError> {
    if result.model == ModelSource::Live {
        return Err(RegressError::Invalid(format!(
            "replay `{}` asked a live model; a regression case runs offline, served from its fixture\n  help: replay the scenario with `model: recorded` and make the case from that result",
            result.id
        )));
    }
    let options = CaseOptions {
        step: result.step,
        ..options.clone()
    };
    let id = options
        .id
        .clone()
        .unwrap_or_else(|| format!("{}-{}", slug(&result.run), slug(&result.id)));
    let name = options.name.clone().unwrap_or_else(|| {
        result.name.clone().unwrap_or_else(|| {
            result
                .mutations
                .iter()
                .map(Mutation::to_string)
                .collect::<Vec<_>>()
                .join("; ")
        })
    });
    make(
        file,
        &options,
        Draft {
            id,
            name,
            source: CaseSource {
                run: result.run.clone(),
                step: result.step,
                replay: Some(result.id.clone()),
            },
            mutations: result.mutations.clone(),
            mode: result.mode,
            reason: format!(
                "created from replay {} ({} against the baseline)",
                result.id,
                result.label.as_str()
            ),
        },
    )
}

struct Draft {
    id: String,
    name: String,
    source: CaseSource,
    mutations: Vec<Mutation>,
    mode: ToolMode,
    reason: String,
}

fn make(
    file: &RunFile,
    options: &CaseOptions,
    d: Draft,
) -> Result<(RegressionCase, FixtureBundle), RegressError> {
    if !valid_id(&d.id) {
        return Err(RegressError::Invalid(format!(
            "`{}` is not a valid case id\n  help: use letters, digits, `-`, `_` and `.`",
            d.id
        )));
    }
    let bundle = cut(file, options.step)?;
    let templates = if options.templates.is_empty() {
        Template::ALL.to_vec()
    } else {
        options.templates.clone()
    };
    let task_type = options.task_type.clone().unwrap_or_else(|| {
        file.run
            .metadata
            .get("task_type")
            .and_then(serde_json::Value::as_str)
            .unwrap_or("unspecified")
            .to_string()
    });
    let mut case = RegressionCase {
        format: CASE_FORMAT.to_string(),
        id: d.id.clone(),
        version: 1,
        name: d.name,
        description: None,
        agent: options
            .step
            .and_then(|s| file.steps.iter().find(|x| x.index == s))
            .map_or_else(|| file.run.agent.clone(), |s| s.agent.clone()),
        task_type,
        source: d.source,
        bundle: BundleRef {
            path: format!("fixtures/{}.json", d.id),
            hash: bundle.hash(),
        },
        step: options.step,
        mutations: d.mutations,
        mode: d.mode,
        templates: templates.clone(),
        assertions: case::AssertionSet::default(),
        changes: vec![CaseChange {
            version: 1,
            reason: d.reason,
        }],
    };
    let subject = execute::outcome(&case, &bundle, &target::Target::recorded())?;
    case.assertions = templates::assertions(&templates, &subject);
    if case.assertions.is_empty() {
        return Err(RegressError::Invalid(
            "the templates wrote no assertion for this outcome\n  help: add `compile_shape` or `tool_behavior`, which always assert something".to_string(),
        ));
    }
    Ok((case, bundle))
}

/// Writes `case` as `dir/ID.yaml` and its bundle where the case names it; refuses to replace
/// an existing case unless `replace`. Returns the case file's path. Nothing is left half
/// written: the bundle is removed again if the case cannot be written.
pub fn write(
    dir: &Path,
    case: &RegressionCase,
    bundle: &FixtureBundle,
    replace: bool,
) -> Result<PathBuf, RegressError> {
    let case_path = dir.join(format!("{}.yaml", case.id));
    let bundle_path = dir.join(&case.bundle.path);
    if !replace && case_path.exists() {
        return Err(RegressError::Invalid(format!(
            "{} exists\n  help: pass --id to name the new case differently, or --force to replace it",
            case_path.display()
        )));
    }
    let io = |path: &Path| {
        let path = path.display().to_string();
        move |source| RegressError::Io { path, source }
    };
    if let Some(parent) = bundle_path.parent() {
        std::fs::create_dir_all(parent).map_err(io(parent))?;
    }
    std::fs::write(&bundle_path, bundle.to_file()).map_err(io(&bundle_path))?;
    if let Err(e) = std::fs::write(&case_path, case.to_yaml()) {
        let _ = std::fs::remove_file(&bundle_path);
        return Err(io(&case_path)(e));
    }
    Ok(case_path)
}

#[cfg(test)]
mod tests;
