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
    pub fn code(&self) -> crate::codes::ErrorCode {
        use crate::codes::case_refusals as codes;
        match self {
            RealRefusal::NotAllowed => codes::REAL_ADAPTERS_OFF,
            RealRefusal::NoPolicy => codes::ADAPTER_POLICY_MISSING,
            RealRefusal::BadPolicy { .. } => codes::ADAPTER_POLICY_INVALID,
            RealRefusal::NotInPolicy { .. } => codes::ADAPTER_POLICY_REFUSES,
            RealRefusal::NotWired { .. } => codes::REAL_ADAPTER_NOT_WIRED,
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
    // A key it does not know, or a field it lacks, is named where it is (once each); other
    // faults say where, never what the file holds (it may not be a policy at all).
    let fields = fields_faults(&file, &text);
    if !fields.is_empty() {
        return Err(fields);
    }
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

/// What an adapter policy holds, and what it must.
const POLICY_FIELDS: [&str; 5] = ["version", "pack_id", "allow_actions", "owner", "reason"];
const REQUIRED_FIELDS: [&str; 3] = ["version", "pack_id", "allow_actions"];

/// The unknown keys (with the field meant, where one is close) and the missing fields of an
/// adapter policy that is a YAML mapping, each at its line and column.
fn fields_faults(file: &str, text: &str) -> Vec<PackFault> {
    let Ok(doc) = tollgate_rules::located::Located::parse(text) else {
        return Vec::new();
    };
    let Some(map) = doc.value.as_object() else {
        return Vec::new();
    };
    let at = |pointer: &str, message: String, help: String| {
        let mut fault = PackFault::at(file, pointer.to_string(), message, help);
        if let Some((line, column)) = doc.place(pointer) {
            fault.line = Some(line);
            fault.column = Some(column);
        }
        fault
    };
    let listing = "an adapter policy holds `version`, `pack_id`, `allow_actions` (and optionally `owner`, `reason`)";
    let mut faults: Vec<PackFault> = map
        .keys()
        .filter(|k| !POLICY_FIELDS.contains(&k.as_str()))
        .map(|k| {
            let help = match tollgate_rules::envelope::closest(k, &POLICY_FIELDS) {
                Some(meant) => format!("did you mean `{meant}`? {listing}"),
                None => listing.to_string(),
            };
            at(
                &format!("/{}", k.replace('~', "~0").replace('/', "~1")),
                format!("unknown field `{k}`"),
                help,
            )
        })
        .collect();
    faults.extend(
        REQUIRED_FIELDS
            .iter()
            .filter(|f| !map.contains_key(**f))
            .map(|f| {
                at(
                    "",
                    format!("missing field `{f}`"),
                    format!("add `{f}`: {listing}"),
                )
            }),
    );
    faults
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::tests::tempdir::Dir;

    /// Bug 5 of issue 33: a policy with an unknown key was "not an adapter policy" (twice;
    /// four times with two bad keys) and the key was never named.
    #[test]
    fn an_adapter_policy_names_each_unknown_key_once_where_it_is_with_the_field_meant() {
        let dir = Dir::new("adapter-policy");
        let path = dir.path().join("policy.yaml");
        std::fs::write(
            &path,
            "version: 1\npack_id: intake_review\nalow_actions: [send]\nowner: ops\npolcy: x\n",
        )
        .unwrap();
        let faults = read_policy(&path).unwrap_err();
        let said: Vec<(String, Option<usize>, String)> = faults
            .iter()
            .map(|f| (f.message.clone(), f.line, f.help.clone()))
            .collect();
        assert_eq!(said.len(), 3, "{said:#?}");
        assert_eq!(said[0].0, "unknown field `alow_actions`");
        assert_eq!(said[0].1, Some(3));
        assert!(
            said[0].2.starts_with("did you mean `allow_actions`?"),
            "{said:#?}"
        );
        assert_eq!(said[1].0, "unknown field `polcy`");
        assert_eq!(said[1].1, Some(5));
        assert_eq!(said[2].0, "missing field `allow_actions`");

        // A file that is no mapping at all still says nothing of what it holds.
        std::fs::write(&path, "root:x:0:0 is not yaml: [").unwrap();
        let faults = read_policy(&path).unwrap_err();
        assert!(
            faults.iter().all(|f| !f.message.contains("root:x")),
            "{faults:?}"
        );
        std::fs::write(&path, "version: 1\npack_id: p\nallow_actions: [a]\n").unwrap();
        assert!(read_policy(&path).is_ok());
    }
}
