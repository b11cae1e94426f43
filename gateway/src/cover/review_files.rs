//! The files of the cover loop's reviews, as written and read: the mapping review
//! (`tollgate.cover.review/v1`: what each inspected tool becomes) and the boundary review
//! (`tollgate.cover.boundaries/v1`: the action each side-effect boundary becomes).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::scaffold::Role;

/// A decision on a suggestion.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// Not decided yet.
    Pending,
    /// Applied as written.
    Accept,
    /// Left out.
    Reject,
}

/// A mapping review file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReviewFile {
    /// `tollgate.cover.review/v1`.
    pub schema: String,
    /// The pack it is for.
    pub pack_id: String,
    /// The entrypoint inspected.
    pub source: String,
    /// One per inspected tool.
    pub mappings: Vec<Mapping>,
}

/// What one inspected tool becomes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Mapping {
    /// The tool's id in the report.
    pub tool: String,
    /// Where it is defined.
    pub at: String,
    /// Its classification in the report.
    pub classification: String,
    /// What the inspection found it does.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub effects: Vec<String>,
    /// `worker`, `boundary` or `excluded`.
    pub role: Role,
    /// The worker's id (role `worker`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker: Option<String>,
    /// The worker's description (role `worker`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Why this role is suggested.
    pub why: String,
    /// `pending`, `accept` or `reject` (absent in suggestions: they decide nothing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<Decision>,
}

/// A boundary review file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BoundaryFile {
    /// `tollgate.cover.boundaries/v1`.
    pub schema: String,
    /// The pack it is for.
    pub pack_id: String,
    /// The entrypoint inspected.
    pub source: String,
    /// One per boundary.
    pub boundaries: Vec<Boundary>,
}

/// One side-effect boundary and the action it would become.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Boundary {
    /// The tool's id in the report.
    pub tool: String,
    /// Where it is defined.
    pub at: String,
    /// `mutating` or `executes`.
    pub classification: String,
    /// What the inspection found it does.
    #[serde(default)]
    pub effects: Vec<String>,
    /// `accept` or `reject`: what the inspection suggests.
    pub suggested: Decision,
    /// Why.
    pub why: String,
    /// The action's id.
    pub action: String,
    /// The capability's id.
    pub capability: String,
    /// What the action changes.
    pub description: String,
    /// Its input keys.
    #[serde(default)]
    pub input: Vec<String>,
    /// The input the adapter harness and the demo use.
    #[serde(default)]
    pub sample_input: Map<String, Value>,
    /// The proposal's wording.
    pub wording: String,
    /// What the preview shows.
    pub preview: String,
    /// What verification checks.
    pub verify: String,
    /// How it is compensated.
    pub compensate: String,
    /// `pending`, `accept` or `reject` (absent in suggestions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<Decision>,
}
