//! Packs: a folder that teaches the case service one kind of work — `pack.yaml` (id, kind,
//! engine id and version, the demo), `workers.yaml` (evidence collectors), `actions.yaml`
//! (what can change: preview, apply, verify, compensate, through an adapter), `capabilities.yaml`
//! (proposal wording, the policy rule that permits it, the action it wires to), `rules/*.dl`
//! (the pack's Datalog policy, read over the case vocabulary) and `adapters/` (executables in
//! any language speaking JSON on stdin and stdout).
//!
//! [`load`] reads a pack root (every fault with its file, JSON pointer, line and column);
//! [`validate`] checks references and compiles the rules; [`author_check`] checks what an
//! author still owes; [`harness`] drives the adapters through their checks; [`preflight`]
//! checks the guardrails of a mode without running anything; [`templates`] writes new packs;
//! [`registry`] holds the packs registered at startup (`TOLLGATE_PACK_ROOTS`).

pub mod adapter;
pub mod author_check;
pub mod harness;
mod load;
pub mod policy;
pub mod preflight;
pub mod real;
pub mod registry;
pub mod templates;
pub mod validate;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub use load::load;
pub use registry::{PACK_ROOTS_VAR, PackRegistry};

/// The JSON Schema of the pack files (`$defs`: `pack`, `workers`, `actions`, `capabilities`,
/// `adapter_policy`).
pub const JSON_SCHEMA: &str = include_str!("packs/pack.schema.json");

/// The variable that must be `1` before any real adapter runs.
pub const ALLOW_REAL_VAR: &str = "TOLLGATE_ALLOW_REAL_ADAPTERS";

/// The variable naming the adapter policy file of a server's real-mode commits (a client of the
/// API cannot name one: the operator does, where the server starts).
pub const ADAPTER_POLICY_VAR: &str = "TOLLGATE_ADAPTER_POLICY";

/// `pack.yaml`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PackManifest {
    /// The pack's id.
    pub pack_id: String,
    /// `transactional` or `advisory`.
    pub kind: String,
    /// The engine id it registers under.
    pub engine_id: String,
    /// `MAJOR.MINOR.PATCH`.
    pub engine_version: String,
    /// A title for people.
    #[serde(default)]
    pub title: String,
    /// What the pack is for.
    #[serde(default)]
    pub description: String,
    /// The demo case.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub demo: Option<Demo>,
}

/// The demo case of a pack: what its script opens.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Demo {
    /// The demo script, relative to the root.
    pub script: String,
    /// The case's title.
    #[serde(default)]
    pub title: String,
    /// The case's input.
    pub input: Map<String, Value>,
    /// The capability the demo proposes (default: the first).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capability: Option<String>,
}

/// One worker: an adapter that reads the case and records evidence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Worker {
    /// Its id.
    pub id: String,
    /// What it collects.
    #[serde(default)]
    pub description: String,
    /// The executable, relative to the root.
    pub adapter: String,
    /// The evidence keys it may record.
    pub produces: Vec<String>,
    /// Whether a person reviewed the mapping (a generated one, from `tollgate cover scaffold`,
    /// starts false).
    #[serde(default = "reviewed_default")]
    pub reviewed: bool,
}

/// One action: a change an adapter previews, applies, verifies and compensates.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Action {
    /// Its id.
    pub id: String,
    /// What it changes.
    #[serde(default)]
    pub description: String,
    /// The dry-run adapter, relative to the root.
    pub adapter: String,
    /// The real adapter, wired explicitly (run only by a commit in real mode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub real_adapter: Option<String>,
    /// Input keys it requires.
    #[serde(default)]
    pub input: Vec<String>,
    /// What its preview shows.
    #[serde(default)]
    pub preview: String,
    /// What its verification checks.
    #[serde(default)]
    pub verify: String,
    /// How it is compensated.
    #[serde(default)]
    pub compensate: String,
    /// The input the adapter harness uses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sample_input: Option<Map<String, Value>>,
}

/// One capability: a proposal the case service can make, wired to an action and permitted by
/// a rule of the pack.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Capability {
    /// Its id.
    pub id: String,
    /// The action it wires to.
    pub action: String,
    /// The `// @id` of the rule that derives `permit(p)` for its proposals.
    pub policy_rule: String,
    /// The proposal's wording.
    #[serde(default)]
    pub wording: String,
    /// The action's input, with placeholders.
    #[serde(default)]
    pub input: Map<String, Value>,
    /// Whether a person reviewed the mapping.
    #[serde(default = "reviewed_default")]
    pub reviewed: bool,
}

fn reviewed_default() -> bool {
    true
}

/// One rule file of the pack.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RuleFile {
    /// Relative to the root (`rules/intake.dl`).
    pub path: String,
    /// Its text.
    pub text: String,
}

/// A loaded pack.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Pack {
    /// The root folder (absolute).
    pub root: PathBuf,
    /// `pack.yaml`.
    pub manifest: PackManifest,
    /// `workers.yaml`.
    pub workers: Vec<Worker>,
    /// `actions.yaml`.
    pub actions: Vec<Action>,
    /// `capabilities.yaml`.
    pub capabilities: Vec<Capability>,
    /// `rules/*.dl`, by path.
    pub rules: Vec<RuleFile>,
    /// blake3 over every file read, in a fixed order: what a case records of its pack.
    pub hash: String,
}

impl Pack {
    /// The action called `id`.
    pub fn action(&self, id: &str) -> Option<&Action> {
        self.actions.iter().find(|a| a.id == id)
    }

    /// The capability called `id`.
    pub fn capability(&self, id: &str) -> Option<&Capability> {
        self.capabilities.iter().find(|c| c.id == id)
    }

    /// The worker called `id`.
    pub fn worker(&self, id: &str) -> Option<&Worker> {
        self.workers.iter().find(|w| w.id == id)
    }

    /// `ENGINE_ID@ENGINE_VERSION`.
    pub fn engine(&self) -> String {
        format!(
            "{}@{}",
            self.manifest.engine_id, self.manifest.engine_version
        )
    }

    /// A path of the pack, relative to its root.
    pub fn path(&self, relative: &str) -> PathBuf {
        self.root.join(relative)
    }
}

/// One fault of a pack: which file, where in it, what, and how to fix it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct PackFault {
    /// The file, relative to the pack root (`capabilities.yaml`, `rules/intake.dl`).
    pub file: String,
    /// JSON pointer of the node at fault in a YAML file (`""`: the whole file).
    #[serde(default)]
    pub path: String,
    /// Line, from 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    /// Column, from 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub column: Option<usize>,
    /// What is wrong.
    pub message: String,
    /// How to fix it.
    pub help: String,
}

impl PackFault {
    /// A fault of a whole file.
    pub fn file(file: &str, message: impl Into<String>, help: impl Into<String>) -> PackFault {
        PackFault {
            file: file.to_string(),
            path: String::new(),
            line: None,
            column: None,
            message: message.into(),
            help: help.into(),
        }
    }

    /// A fault at a JSON pointer of a file (placed on its line later, when the file is known).
    pub fn at(
        file: &str,
        path: impl Into<String>,
        message: impl Into<String>,
        help: impl Into<String>,
    ) -> PackFault {
        PackFault {
            path: path.into(),
            ..PackFault::file(file, message, help)
        }
    }
}

impl std::fmt::Display for PackFault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.line, self.column) {
            (Some(l), Some(c)) => write!(f, "{}:{l}:{c}", self.file)?,
            _ => write!(f, "{}", self.file)?,
        }
        if !self.path.is_empty() {
            write!(f, ": at `{}`", self.path)?;
        }
        write!(f, ": {}\n    help: {}", self.message, self.help)
    }
}

/// Every fault found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the pack does not read ({} fault(s)):\n{}", .0.len(), render(.0))]
pub struct PackFaults(pub Vec<PackFault>);

/// The faults, one per paragraph.
pub fn render(faults: &[PackFault]) -> String {
    faults
        .iter()
        .map(|f| format!("  {f}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The canonical absolute form of a pack root (as given when it does not exist).
pub fn absolute_root(root: &Path) -> PathBuf {
    std::fs::canonicalize(root).unwrap_or_else(|_| {
        if root.is_absolute() {
            root.to_path_buf()
        } else {
            std::env::current_dir()
                .map(|d| d.join(root))
                .unwrap_or_else(|_| root.to_path_buf())
        }
    })
}
