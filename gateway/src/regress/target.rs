//! What a case runs against. By default, the **recorded** target: the envelope versions and
//! compile settings its bundle recorded, so a case checks this build of Tollgate against the
//! recording. A **target file** (`target.yaml`, committed beside the cases) names the policy
//! and compiler the cases must hold under — a folder of envelope files and compile settings
//! laid over the recorded ones — so a change to either that breaks a case fails the suite, and
//! `tollgate regress bisect` walks the file's history to the change that did it.
//!
//! ```yaml
//! # regressions/target.yaml
//! envelopes: ../policies        # a folder of envelope YAML, relative to this file
//! settings: {budget: 3000, kind_budgets: {doc: 700}}
//! ```
//!
//! A target replaces, in the bundle, every version of each envelope id it holds (ids it does
//! not hold keep their recorded versions; envelopes it adds join every decision's set) and
//! lays its settings over every compile's. The case then runs on that run file as usual; its
//! drift says whether the target compiles or decides anything differently from the recording.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tollgate_rules::envelope::load_envelopes;

use super::RegressError;
use crate::compiler::{CompileSettings, ItemKind, Ordering};
use crate::recorder::format::{EnvelopeSource, EventKind, RunFile};

/// Compile settings laid over the recorded ones: what is given replaces, what is not stays.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SettingsOverride {
    /// The total budget.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<u32>,
    /// Budgets by kind (replacing the recorded map when given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind_budgets: Option<BTreeMap<ItemKind, u32>>,
    /// Which items win when not all fit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order: Option<Ordering>,
    /// The tokenizer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokenizer: Option<String>,
}

impl SettingsOverride {
    /// `recorded` with this laid over it.
    pub fn apply(&self, recorded: &CompileSettings) -> CompileSettings {
        let mut s = recorded.clone();
        if let Some(b) = self.budget {
            s.budget = b;
        }
        if let Some(k) = &self.kind_budgets {
            s.kind_budgets = k.clone();
        }
        if let Some(o) = self.order {
            s.order = o;
        }
        if let Some(t) = &self.tokenizer {
            s.tokenizer = t.clone();
        }
        s
    }

    /// Whether it changes nothing.
    pub fn is_empty(&self) -> bool {
        self == &SettingsOverride::default()
    }
}

/// A target file, as written.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TargetFile {
    /// A folder of envelope files, relative to the target file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub envelopes: Option<String>,
    /// Compile settings laid over the recorded ones.
    #[serde(default, skip_serializing_if = "SettingsOverride::is_empty")]
    pub settings: SettingsOverride,
}

/// What cases run against.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Target {
    /// Names it in reports (`recorded`, a file, a commit).
    pub label: String,
    /// Envelope versions replacing the recorded ones of the same ids.
    pub envelopes: Vec<EnvelopeSource>,
    /// Settings laid over every compile's.
    pub settings: SettingsOverride,
    /// The LLM judge that answers `llm_judge` assertions, when it is on.
    pub judge: Option<crate::evaluators::Judge>,
}

impl Target {
    /// The recorded target: the bundle as it is.
    pub fn recorded() -> Target {
        Target {
            label: "recorded".to_string(),
            ..Target::default()
        }
    }

    /// Whether this is the recorded target (changes nothing).
    pub fn is_recorded(&self) -> bool {
        self.envelopes.is_empty() && self.settings.is_empty()
    }

    /// A target from its parts: envelope files as `(name, yaml)` (loaded all or nothing, as
    /// every command loads them) and settings.
    pub fn from_parts(
        label: &str,
        files: &[(String, String)],
        settings: SettingsOverride,
    ) -> Result<Target, RegressError> {
        let invalid = |detail: String| RegressError::Invalid(format!("target {label}: {detail}"));
        if !files.is_empty() {
            load_envelopes(files).map_err(|e| invalid(e.render()))?;
        }
        let mut envelopes = Vec::new();
        for (name, yaml) in files {
            // The set loaded, so each file is one well-formed envelope: its id and version.
            let head: Value =
                serde_yaml::from_str(yaml).map_err(|e| invalid(format!("{name}: {e}")))?;
            let id = head.get("id").and_then(Value::as_str);
            let version = head
                .get("version")
                .and_then(Value::as_u64)
                .and_then(|v| u32::try_from(v).ok());
            let (Some(id), Some(version)) = (id, version) else {
                return Err(invalid(format!(
                    "{name}: one envelope per file, with `id` and `version`"
                )));
            };
            envelopes.push(EnvelopeSource {
                id: id.to_string(),
                version,
                yaml: yaml.clone(),
            });
        }
        Ok(Target {
            label: label.to_string(),
            envelopes,
            settings,
            judge: None,
        })
    }

    /// The same target with `judge` answering its `llm_judge` assertions
    /// ([`Judge::from_env`](crate::evaluators::Judge::from_env) where the process turns it on).
    pub fn with_judge(mut self, judge: Option<crate::evaluators::Judge>) -> Target {
        self.judge = judge;
        self
    }

    /// Reads a target file and the envelope folder it names.
    pub fn load(path: &Path) -> Result<Target, RegressError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| RegressError::Io {
            path: shown.clone(),
            source,
        })?;
        let file: TargetFile =
            serde_yaml::from_str(&text).map_err(|e| RegressError::CaseFile {
                path: shown.clone(),
                line: e.location().map(|l| l.line()),
                detail: e.to_string(),
                help: "a target file has `envelopes` (a folder) and `settings` (budget, kind_budgets, order, tokenizer)".into(),
            })?;
        let mut files = Vec::new();
        if let Some(dir) = &file.envelopes {
            let dir = path.parent().unwrap_or_else(|| Path::new(".")).join(dir);
            let entries = std::fs::read_dir(&dir).map_err(|source| RegressError::Io {
                path: dir.display().to_string(),
                source,
            })?;
            let mut paths: Vec<_> = entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.is_file() && p.to_str().is_some_and(is_envelope_file))
                .collect();
            paths.sort();
            for p in paths {
                let yaml = std::fs::read_to_string(&p).map_err(|source| RegressError::Io {
                    path: p.display().to_string(),
                    source,
                })?;
                files.push((p.display().to_string(), yaml));
            }
            if files.is_empty() {
                return Err(RegressError::Invalid(format!(
                    "target {shown}: no envelope file in {}",
                    dir.display()
                )));
            }
        }
        Target::from_parts(&shown, &files, file.settings)
    }
}

/// Whether a file name is read as an envelope in a target's folder (as every command reads
/// envelope folders: `*.yaml`, `*.yml`, `*.json`).
pub fn is_envelope_file(name: &str) -> bool {
    [".yaml", ".yml", ".json"].iter().any(|x| name.ends_with(x))
}

/// `file` under `target` (borrowed as it is for the recorded target).
pub fn retarget<'a>(file: &'a RunFile, target: &Target) -> Cow<'a, RunFile> {
    if target.is_recorded() {
        return Cow::Borrowed(file);
    }
    let mut run = file.clone();
    let ids: BTreeSet<&str> = target.envelopes.iter().map(|e| e.id.as_str()).collect();
    let added: Vec<String> = target
        .envelopes
        .iter()
        .map(|e| format!("{}@{}", e.id, e.version))
        .collect();
    let relabel = |labels: &[String]| -> Vec<String> {
        let mut out: BTreeSet<String> = labels
            .iter()
            .filter(|l| !ids.contains(l.split('@').next().unwrap_or("")))
            .cloned()
            .collect();
        out.extend(added.iter().cloned());
        out.into_iter().collect()
    };
    if !target.envelopes.is_empty() {
        run.run.envelopes = relabel(&run.run.envelopes);
        run.envelope_sources
            .retain(|s| !ids.contains(s.id.as_str()));
        run.envelope_sources
            .extend(target.envelopes.iter().cloned());
    }
    for e in &mut run.events {
        if !target.envelopes.is_empty() {
            relabel_payload(&mut e.payload, &relabel);
        }
        if !target.settings.is_empty()
            && e.event_kind() == Some(EventKind::Compile)
            && let Some(settings) = e.payload.get("settings")
        {
            let recorded: CompileSettings =
                serde_json::from_value(settings.clone()).unwrap_or_default();
            let now = target.settings.apply(&recorded);
            if let Ok(v) = serde_json::to_value(now) {
                e.payload["settings"] = v;
            }
        }
    }
    Cow::Owned(run)
}

/// Every `envelope_versions` list under `value`, relabelled.
fn relabel_payload(value: &mut Value, relabel: &dyn Fn(&[String]) -> Vec<String>) {
    match value {
        Value::Object(o) => {
            for (k, v) in o.iter_mut() {
                if k == "envelope_versions"
                    && let Some(list) = v.as_array()
                {
                    let labels: Vec<String> = list
                        .iter()
                        .filter_map(|l| l.as_str().map(str::to_string))
                        .collect();
                    *v = Value::from(relabel(&labels));
                } else {
                    relabel_payload(v, relabel);
                }
            }
        }
        Value::Array(a) => {
            for v in a {
                relabel_payload(v, relabel);
            }
        }
        _ => {}
    }
}

/// The LLM judge the process environment turns on (`TOLLGATE_LLM_JUDGE=on`), or `None`; a
/// wrong setting is an invalid request naming it.
pub fn judge_from_env() -> Result<Option<crate::evaluators::Judge>, RegressError> {
    crate::evaluators::Judge::from_env().map_err(|e| RegressError::Invalid(e.to_string()))
}

#[cfg(test)]
mod tests;
