//! Reading a pack root: each YAML file against its schema definition (every fault with its
//! line and column), then into the pack's types; the rule files as text.

use std::collections::HashMap;
use std::path::Path;
use std::sync::OnceLock;

use serde::de::DeserializeOwned;
use serde_json::Value;
use tollgate_rules::located::Located;

use super::{
    Action, Capability, JSON_SCHEMA, Pack, PackFault, PackFaults, PackManifest, RuleFile, Worker,
    absolute_root,
};

/// The definitions of the schema, one validator each.
fn validator(def: &str) -> &'static jsonschema::Validator {
    static VALIDATORS: OnceLock<HashMap<String, jsonschema::Validator>> = OnceLock::new();
    let all = VALIDATORS.get_or_init(|| {
        let schema: Value = serde_json::from_str(JSON_SCHEMA).unwrap_or(Value::Null);
        [
            "pack",
            "workers",
            "actions",
            "capabilities",
            "adapter_policy",
        ]
        .into_iter()
        .filter_map(|name| {
            let mut root = schema.clone();
            root.as_object_mut()?
                .insert("$ref".into(), Value::String(format!("#/$defs/{name}")));
            let v = jsonschema::options().offline().build(&root).ok()?;
            Some((name.to_string(), v))
        })
        .collect()
    });
    static REFUSE_ALL: OnceLock<jsonschema::Validator> = OnceLock::new();
    all.get(def).unwrap_or_else(|| {
        // The embedded schema is checked by a test; a broken one refuses everything.
        REFUSE_ALL.get_or_init(|| {
            #[expect(clippy::unwrap_used, reason = "`false` is a valid schema")]
            jsonschema::validator_for(&Value::Bool(false)).unwrap()
        })
    })
}

/// Reads `text` (the file `file`) as the schema definition `def`, then as `T`.
pub(crate) fn read_document<T: DeserializeOwned>(
    file: &str,
    def: &str,
    text: &str,
) -> Result<T, Vec<PackFault>> {
    let doc = Located::parse(text).map_err(|e| {
        vec![PackFault {
            line: Some(e.line),
            column: Some(e.column),
            ..PackFault::file(file, e.message, "fix the YAML syntax")
        }]
    })?;
    let place = |mut f: PackFault| {
        if let Some((line, column)) = doc.place(&f.path) {
            f.line = Some(line);
            f.column = Some(column);
        }
        f
    };
    let mut faults: Vec<PackFault> = validator(def)
        .iter_errors(&doc.value)
        .map(|e| {
            let help = match e.kind() {
                jsonschema::error::ValidationErrorKind::AdditionalProperties { .. } => {
                    format!("remove the field: `{file}` has only the fields its schema lists (`tollgate packs schema`)")
                }
                jsonschema::error::ValidationErrorKind::Required { .. } => {
                    "add the field (`tollgate init intake_review` writes a complete pack to compare with)".to_string()
                }
                jsonschema::error::ValidationErrorKind::Pattern { .. } => {
                    "ids are lower-case letters, digits and `_`, starting with a letter; versions are MAJOR.MINOR.PATCH".to_string()
                }
                _ => format!("see the `{def}` definition in `tollgate packs schema`"),
            };
            place(PackFault::at(file, e.instance_path().to_string(), e.to_string(), help))
        })
        .collect();
    if !faults.is_empty() {
        faults.sort_by(|a, b| (a.line, a.column, &a.path).cmp(&(b.line, b.column, &b.path)));
        faults.dedup();
        return Err(faults);
    }
    serde_json::from_value(doc.value.clone()).map_err(|e| {
        vec![PackFault::file(
            file,
            e.to_string(),
            format!("see the `{def}` definition in `tollgate packs schema`"),
        )]
    })
}

fn read_text(root: &Path, file: &str, faults: &mut Vec<PackFault>) -> Option<String> {
    match std::fs::read_to_string(root.join(file)) {
        Ok(t) => Some(t),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            faults.push(PackFault::file(
                file,
                format!("`{file}` is missing from the pack root `{}`", root.display()),
                "every pack root has pack.yaml, workers.yaml, actions.yaml and capabilities.yaml (`tollgate packs scaffold` writes them)",
            ));
            None
        }
        Err(e) => {
            faults.push(PackFault::file(
                file,
                format!("cannot read `{file}`: {e}"),
                "check the file's permissions",
            ));
            None
        }
    }
}

#[derive(serde::Deserialize)]
struct WorkersFile {
    workers: Vec<Worker>,
}
#[derive(serde::Deserialize)]
struct ActionsFile {
    actions: Vec<Action>,
}
#[derive(serde::Deserialize)]
struct CapabilitiesFile {
    capabilities: Vec<Capability>,
}

/// Reads the pack at `root`: every fault of every file, or the pack. References between the
/// files are [`super::validate`]'s.
pub fn load(root: &Path) -> Result<Pack, PackFaults> {
    let root = absolute_root(root);
    if !root.is_dir() {
        return Err(PackFaults(vec![PackFault::file(
            ".",
            format!("the pack root `{}` is not a folder", root.display()),
            "pass the folder holding pack.yaml (`--pack-root DIR`)",
        )]));
    }
    let mut faults = Vec::new();
    let mut hasher = blake3::Hasher::new();
    let mut texts = Vec::new();
    for file in [
        "pack.yaml",
        "workers.yaml",
        "actions.yaml",
        "capabilities.yaml",
    ] {
        let text = read_text(&root, file, &mut faults);
        if let Some(t) = &text {
            hasher.update(file.as_bytes());
            hasher.update(&[0]);
            hasher.update(t.as_bytes());
            hasher.update(&[0]);
        }
        texts.push(text);
    }
    let mut doc = |i: usize, file: &str, def: &str| -> Option<Value> {
        let text = texts.get(i)?.as_deref()?;
        match read_document::<Value>(file, def, text) {
            Ok(v) => Some(v),
            Err(f) => {
                faults.extend(f);
                None
            }
        }
    };
    let manifest = doc(0, "pack.yaml", "pack");
    let workers = doc(1, "workers.yaml", "workers");
    let actions = doc(2, "actions.yaml", "actions");
    let capabilities = doc(3, "capabilities.yaml", "capabilities");
    let rules = read_rules(&root, &mut faults, &mut hasher);
    let (Some(manifest), Some(workers), Some(actions), Some(capabilities)) =
        (manifest, workers, actions, capabilities)
    else {
        return Err(PackFaults(faults));
    };
    if !faults.is_empty() {
        return Err(PackFaults(faults));
    }
    let typed = (|| {
        let manifest: PackManifest =
            serde_json::from_value(manifest).map_err(|e| ("pack.yaml", e))?;
        let workers: WorkersFile =
            serde_json::from_value(workers).map_err(|e| ("workers.yaml", e))?;
        let actions: ActionsFile =
            serde_json::from_value(actions).map_err(|e| ("actions.yaml", e))?;
        let capabilities: CapabilitiesFile =
            serde_json::from_value(capabilities).map_err(|e| ("capabilities.yaml", e))?;
        Ok::<_, (&str, serde_json::Error)>((manifest, workers, actions, capabilities))
    })();
    let (manifest, workers, actions, capabilities) = typed.map_err(|(file, e)| {
        PackFaults(vec![PackFault::file(
            file,
            e.to_string(),
            "see `tollgate packs schema`",
        )])
    })?;
    Ok(Pack {
        root,
        manifest,
        workers: workers.workers,
        actions: actions.actions,
        capabilities: capabilities.capabilities,
        rules,
        hash: hasher.finalize().to_hex().to_string(),
    })
}

fn read_rules(
    root: &Path,
    faults: &mut Vec<PackFault>,
    hasher: &mut blake3::Hasher,
) -> Vec<RuleFile> {
    let dir = root.join("rules");
    let entries = match std::fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(_) => {
            faults.push(PackFault::file(
                "rules",
                "the pack has no `rules/` folder",
                "add `rules/NAME.dl` with the rules your capabilities name (`policy_rule`)",
            ));
            return Vec::new();
        }
    };
    let mut paths: Vec<_> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "dl"))
        .collect();
    paths.sort();
    let mut rules = Vec::new();
    for p in paths {
        let name = format!(
            "rules/{}",
            p.file_name()
                .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
        );
        match std::fs::read_to_string(&p) {
            Ok(text) => {
                hasher.update(name.as_bytes());
                hasher.update(&[0]);
                hasher.update(text.as_bytes());
                hasher.update(&[0]);
                rules.push(RuleFile { path: name, text });
            }
            Err(e) => faults.push(PackFault::file(
                &name,
                format!("cannot read `{name}`: {e}"),
                "check the file's permissions",
            )),
        }
    }
    if rules.is_empty() && faults.iter().all(|f| f.file != "rules") {
        faults.push(PackFault::file(
            "rules",
            "`rules/` holds no `.dl` file",
            "add `rules/NAME.dl` with the rules your capabilities name (`policy_rule`)",
        ));
    }
    rules
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_schema_definition_builds() {
        for def in [
            "pack",
            "workers",
            "actions",
            "capabilities",
            "adapter_policy",
        ] {
            assert!(
                !validator(def).is_valid(&serde_json::json!({})),
                "`{def}` must refuse an empty document"
            );
        }
        let ok: Value = serde_json::json!({"pack_id": "a", "kind": "transactional", "engine_id": "a", "engine_version": "1.0.0"});
        assert!(validator("pack").is_valid(&ok));
    }

    #[test]
    fn a_fault_names_its_file_line_and_column() {
        let text =
            "pack_id: intake\nkind: transactional\nengine_id: Intake\nengine_version: 1.0.0\n";
        let faults = read_document::<Value>("pack.yaml", "pack", text).unwrap_err();
        assert_eq!(faults.len(), 1, "{faults:?}");
        assert_eq!(faults[0].path, "/engine_id");
        assert_eq!(faults[0].line, Some(3));
        assert!(
            faults[0].to_string().starts_with("pack.yaml:3:"),
            "{}",
            faults[0]
        );
    }

    #[test]
    fn an_unknown_field_is_a_fault_with_help() {
        let text =
            "workers:\n  - id: w\n    adapter: adapters/w.py\n    produces: [k]\n    colour: red\n";
        let faults = read_document::<Value>("workers.yaml", "workers", text).unwrap_err();
        assert!(faults[0].message.contains("colour"), "{faults:?}");
        assert!(faults[0].help.contains("remove the field"));
    }
}
