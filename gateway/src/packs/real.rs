//! Real mode: the explicit wiring a real adapter needs before a commit may run it. A pack author
//! wires an action's real adapter in `actions.yaml` (`real_adapter`); an operator allows it
//! with `TOLLGATE_ALLOW_REAL_ADAPTERS=1` and an adapter policy file naming the pack and the
//! actions; [`authorize`] (the seed's `authorize_external_real_execution`) checks all three and
//! gives a [`RealAuthorization`], and [`RealAuthorization::executable`] (its
//! `build_external_real_callbacks`) is the only way to the real executable. Nothing else runs a
//! real adapter: the engine host's commit asks for the authorisation after proposal, preview,
//! policy and approval.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::load::read_document;
use super::{ALLOW_REAL_VAR, Pack, PackFault};

/// The adapter policy file (`--policy FILE`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdapterPolicy {
    /// `1`.
    pub version: u32,
    /// The pack it allows.
    pub pack_id: String,
    /// The actions whose real adapters may run.
    pub allow_actions: Vec<String>,
    /// Who owns the decision.
    #[serde(default)]
    pub owner: String,
    /// Why.
    #[serde(default)]
    pub reason: String,
}

/// Why a real adapter may not run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[serde(tag = "code", rename_all = "snake_case")]
pub enum RealRefusal {
    /// The variable is not `1`.
    #[error(
        "real adapters are off: set {ALLOW_REAL_VAR}=1 in the environment of the process that commits"
    )]
    NotAllowed,
    /// No policy file was given.
    #[error(
        "real mode needs an adapter policy file (`--policy FILE`, or `policy` in the commit request) naming the pack and the actions it allows"
    )]
    NoPolicy,
    /// The policy file does not read.
    #[error("the adapter policy file `{file}` does not read:\n{faults}")]
    BadPolicy {
        /// The file.
        file: String,
        /// Its faults.
        faults: String,
    },
    /// The policy is for another pack, or does not allow the action.
    #[error(
        "the adapter policy `{file}` does not allow action `{action}` of pack `{pack}`\n  help: add `{action}` to `allow_actions` (and check `pack_id`)"
    )]
    NotInPolicy {
        /// The file.
        file: String,
        /// The pack.
        pack: String,
        /// The action.
        action: String,
    },
    /// The action has no real adapter wired.
    #[error(
        "action `{action}` has no `real_adapter` in actions.yaml: a real adapter is wired explicitly by the pack's author"
    )]
    NotWired {
        /// The action.
        action: String,
    },
}

impl RealRefusal {
    /// The machine-readable code.
    pub fn code(&self) -> &'static str {
        match self {
            RealRefusal::NotAllowed => "real_adapters_off",
            RealRefusal::NoPolicy => "adapter_policy_missing",
            RealRefusal::BadPolicy { .. } => "adapter_policy_invalid",
            RealRefusal::NotInPolicy { .. } => "adapter_policy_refuses",
            RealRefusal::NotWired { .. } => "real_adapter_not_wired",
        }
    }
}

/// Reads an adapter policy file.
pub fn read_policy(path: &Path) -> Result<AdapterPolicy, Vec<PackFault>> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| {
        vec![PackFault::file(
            &file,
            format!("cannot read the adapter policy: {e}"),
            "pass the path of a YAML file with `version: 1`, `pack_id` and `allow_actions`",
        )]
    })?;
    // Faults say where, never what the file holds (it may not be a policy at all).
    read_document(&file, "adapter_policy", &text).map_err(|faults| {
        faults
            .into_iter()
            .map(|f| PackFault {
                message: if f.path.is_empty() {
                    "the file is not an adapter policy".to_string()
                } else {
                    format!("`{}` is not what an adapter policy holds there", f.path)
                },
                help: "an adapter policy is YAML: `version: 1`, `pack_id: ID`, `allow_actions: [ACTION, ...]` (optional `owner`, `reason`)".into(),
                ..f
            })
            .collect()
    })
}

/// The permission to run one action's real adapter, once every guardrail held.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RealAuthorization {
    /// The pack.
    pub pack_id: String,
    /// The action.
    pub action: String,
    /// The policy file that allowed it.
    pub policy_file: String,
    /// blake3 of the policy file's text.
    pub policy_hash: String,
    /// The policy's owner.
    pub owner: String,
    executable: String,
}

impl RealAuthorization {
    /// The real adapter's executable, relative to the pack root.
    pub fn executable(&self) -> &str {
        &self.executable
    }
}

/// Checks every guardrail of running `action`'s real adapter: the variable, the policy file, the
/// policy's pack and actions, the wiring.
pub fn authorize(
    pack: &Pack,
    action: &str,
    env: &dyn Fn(&str) -> Option<String>,
    policy: Option<&Path>,
) -> Result<RealAuthorization, RealRefusal> {
    if env(ALLOW_REAL_VAR).as_deref() != Some("1") {
        return Err(RealRefusal::NotAllowed);
    }
    let path = policy.ok_or(RealRefusal::NoPolicy)?;
    let file = path.display().to_string();
    let read = read_policy(path).map_err(|f| RealRefusal::BadPolicy {
        file: file.clone(),
        faults: super::render(&f),
    })?;
    if read.pack_id != pack.manifest.pack_id || !read.allow_actions.iter().any(|a| a == action) {
        return Err(RealRefusal::NotInPolicy {
            file,
            pack: pack.manifest.pack_id.clone(),
            action: action.into(),
        });
    }
    let executable = pack
        .action(action)
        .and_then(|a| a.real_adapter.clone())
        .ok_or_else(|| RealRefusal::NotWired {
            action: action.into(),
        })?;
    let text = std::fs::read(path).unwrap_or_default();
    Ok(RealAuthorization {
        pack_id: pack.manifest.pack_id.clone(),
        action: action.into(),
        policy_file: absolute(path).display().to_string(),
        policy_hash: blake3::hash(&text).to_hex().to_string(),
        owner: read.owner,
        executable,
    })
}

fn absolute(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}
