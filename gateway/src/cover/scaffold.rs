//! `tollgate cover scaffold`: a cover report becomes a draft pack. The draft is read-only: its
//! workers are the inspected tools that only read (each a dry-run collector that records the
//! arguments the tool would get, never calling it), it has no action, and every worker's mapping
//! is unreviewed — so `packs validate` passes and `packs author-check` fails, listing what awaits
//! review. The report is kept in the pack (`cover/report.json`): the review and boundary steps
//! read it from there.
//!
//! Also here, what every step of the loop shares: ids from Python names, sample values from
//! annotations, the pack files written whole, and the dry-run adapters' table.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::{Report, Tool, read_report};
use crate::packs::{Action, Capability, PackFault, PackFaults, PackManifest, Worker};

/// Where the draft goes by default, under the working directory.
pub const DEFAULT_OUTPUT: &str = ".tollgate/covered_system_pack";
/// The report, inside the pack root.
pub const PACK_REPORT: &str = "cover/report.json";
/// The dry-run external adapter every worker and action of a covered pack runs.
pub const ADAPTER: &str = "adapters/external_adapters.py";
/// Its table: which tool each worker and action stands for, with what arguments.
pub const ADAPTER_TABLE: &str = "adapters/external_adapters.json";
/// The rule file of the draft.
pub const DRAFT_RULES: &str = "rules/cover.dl";

const ADAPTER_TEXT: &str = include_str!("templates/external_adapters.py");

/// What a step of the loop wrote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Written {
    /// The pack root.
    pub root: String,
    /// The pack id.
    pub pack_id: String,
    /// The files written, relative to the root (or absolute, outside it).
    pub files: Vec<String>,
    /// What the step found worth saying.
    pub notes: Vec<String>,
    /// What to do next.
    pub next: Vec<String>,
}

/// The role a tool takes in a covered pack.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// It reads: a worker collects its evidence.
    Worker,
    /// It changes or runs something: an action behind a capability, reviewed as a boundary.
    Boundary,
    /// Left out of the pack.
    Excluded,
}

/// The role a tool's classification suggests.
pub fn suggested_role(tool: &Tool) -> Role {
    match tool.classification.as_str() {
        "mutating" | "executes" => Role::Boundary,
        _ => Role::Worker,
    }
}

/// A pack id from free text: lower-case letters, digits and `_`, starting with a letter, at
/// most 64.
pub fn id_of(text: &str) -> String {
    let mut out = String::new();
    let mut last_sep = true;
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            if c.is_ascii_uppercase() && !last_sep && !out.is_empty() {
                // `SaveReport` → `save_report`.
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
            last_sep = c.is_ascii_uppercase();
        } else if !out.ends_with('_') && !out.is_empty() {
            out.push('_');
            last_sep = true;
        }
    }
    let out = out.trim_matches('_').to_string();
    let out = if out.starts_with(|c: char| c.is_ascii_lowercase()) {
        out
    } else {
        format!("t_{out}")
    };
    out.chars()
        .take(64)
        .collect::<String>()
        .trim_end_matches('_')
        .to_string()
}

/// Ids made unique in order (`send`, `send_2`).
pub fn unique_ids(ids: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut seen = BTreeSet::new();
    ids.into_iter()
        .map(|id| {
            let mut candidate = id.clone();
            let mut n = 2;
            while !seen.insert(candidate.clone()) {
                let suffix = format!("_{n}");
                let base: String = id.chars().take(64 - suffix.len()).collect();
                candidate = format!("{base}{suffix}");
                n += 1;
            }
            candidate
        })
        .collect()
}

/// A tool's named parameters as input keys, with their annotations: `*args` and `**kwargs`
/// are left out (nothing names them).
pub fn parameter_keys(tool: &Tool) -> Vec<(String, Option<String>)> {
    let mut keys = Vec::new();
    let mut seen = BTreeSet::new();
    for p in &tool.parameters {
        if p.name.starts_with('*') || matches!(p.name.as_str(), "self" | "cls" | "ctx") {
            continue;
        }
        let key = id_of(&p.name);
        if seen.insert(key.clone()) {
            keys.push((key, p.ty.clone()));
        }
    }
    keys
}

/// A sample value for a parameter, from its annotation.
pub fn sample_value(key: &str, ty: Option<&str>) -> Value {
    let ty = ty.unwrap_or("").replace(' ', "");
    let base = ty
        .strip_prefix("Optional[")
        .and_then(|t| t.strip_suffix(']'))
        .unwrap_or(&ty);
    let base = base.split('|').next().unwrap_or(base);
    match base {
        "int" => json!(1),
        "float" => json!(1.5),
        "bool" => json!(true),
        _ => Value::String(format!("sample-{}", key.replace('_', "-"))),
    }
}

/// The report kept in the pack at `root`.
pub fn pack_report(root: &Path) -> Result<Report, PackFaults> {
    let path = root.join(PACK_REPORT);
    let text = std::fs::read_to_string(&path).map_err(|e| {
        PackFaults(vec![PackFault::file(
            PACK_REPORT,
            format!("cannot read the cover report of `{}`: {e}", root.display()),
            "give the root of a pack written by `tollgate cover scaffold` (`--pack-root DIR`)",
        )])
    })?;
    read_report(&text).map_err(|m| {
        PackFaults(vec![PackFault::file(
            PACK_REPORT,
            m,
            "scaffold the pack again from a new report (`tollgate cover scaffold`)",
        )])
    })
}

/// The pack id a report's draft gets: `covered_` and the entrypoint's object.
pub fn pack_id_of(report: &Report) -> String {
    let id = id_of(&format!("covered_{}", report.entrypoint.object));
    id.chars().take(64).collect()
}

/// The worker a read-only tool becomes.
pub fn worker_of(tool: &Tool, id: &str) -> Worker {
    let keys = parameter_keys(tool);
    let mut produces: Vec<String> = keys.iter().map(|(k, _)| k.clone()).collect();
    produces.push("mode".into());
    Worker {
        id: id.to_string(),
        description: describe_tool(tool),
        adapter: ADAPTER.into(),
        produces: unique_ids(produces),
        reviewed: false,
    }
}

/// One line about a tool: its docstring's first line, or its name, and where it is.
pub fn describe_tool(tool: &Tool) -> String {
    let doc = tool
        .description
        .as_deref()
        .and_then(|d| d.lines().map(str::trim).find(|l| !l.is_empty()))
        .map(|l| l.trim_end_matches('.').to_string());
    let what = doc.unwrap_or_else(|| format!("The `{}` tool", tool.name));
    format!(
        "{what} (tool `{}`, {}:{}; dry run: records the arguments it would get, calls nothing).",
        tool.name, tool.at.file, tool.at.line
    )
}

/// One line per effect of a tool.
pub fn effect_lines(tool: &Tool) -> Vec<String> {
    tool.effects
        .iter()
        .map(|e| {
            let mut s = format!("{} {}", e.kind, e.call);
            if let Some(op) = &e.operation {
                s.push_str(&format!(" {op}"));
            }
            if let Some(t) = &e.target {
                s.push_str(&format!(" {t}"));
            }
            s.push_str(&format!(
                " ({}, {} confidence) at {}:{}",
                e.classification, e.confidence, e.at.file, e.at.line
            ));
            s
        })
        .collect()
}

/// The dry-run adapters' table: for each worker and action, the tool it stands for, its
/// arguments and the effects a real call would have.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AdapterTable {
    /// The pack.
    pub pack_id: String,
    /// By worker id.
    pub workers: std::collections::BTreeMap<String, TableEntry>,
    /// By action id.
    pub actions: std::collections::BTreeMap<String, TableEntry>,
}

/// One entry of the table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TableEntry {
    /// The tool's id in the report (`module:function`).
    pub tool: String,
    /// The name the model sees.
    pub name: String,
    /// The input keys, in order.
    pub arguments: Vec<String>,
    /// What a real call would do.
    pub effects: Vec<String>,
    /// An action's sample input (the generated tests drive the adapter with it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sample_input: Option<Map<String, Value>>,
}

/// The table as the pack at `root` has it (empty when absent).
pub fn read_table(root: &Path) -> AdapterTable {
    std::fs::read_to_string(root.join(ADAPTER_TABLE))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default()
}

/// A file to write: its path under the root, its text, whether it is executable.
pub type File = (String, String, bool);

/// Writes `files` under `root`, each whole (a temporary file renamed over it).
pub fn write_files(root: &Path, files: &[File]) -> Result<(), PackFaults> {
    for (rel, text, exec) in files {
        let path = root.join(rel);
        let fault = |e: std::io::Error| {
            PackFaults(vec![PackFault::file(
                rel,
                format!("cannot write `{}`: {e}", path.display()),
                "check the permissions of the pack root",
            )])
        };
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(fault)?;
        }
        let tmp = path.with_extension("tmp~");
        std::fs::write(&tmp, text).map_err(fault)?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = if *exec { 0o755 } else { 0o644 };
            std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(mode)).map_err(fault)?;
        }
        #[cfg(not(unix))]
        let _ = exec;
        std::fs::rename(&tmp, &path).map_err(fault)?;
    }
    Ok(())
}

/// A YAML file: a comment header, then the value.
pub fn yaml_file(header: &str, value: &impl Serialize) -> String {
    let body = serde_yaml::to_string(value).unwrap_or_default();
    let mut out = String::new();
    for line in header.lines() {
        out.push_str("# ");
        out.push_str(line);
        out.push('\n');
    }
    out.push_str(&body);
    out
}

/// `workers.yaml` of the pack.
pub fn workers_file(workers: &[Worker]) -> String {
    #[derive(Serialize)]
    struct F<'a> {
        workers: &'a [Worker],
    }
    yaml_file(
        "The covered system's tools that only read, each a worker that records the arguments the\n\
         tool would get (dry run: adapters/external_adapters.py calls nothing). Generated by\n\
         `tollgate cover`: change it through `tollgate cover review template` and `apply`.",
        &F { workers },
    )
}

/// `actions.yaml` of the pack.
pub fn actions_file(actions: &[Action]) -> String {
    #[derive(Serialize)]
    struct F<'a> {
        actions: &'a [Action],
    }
    yaml_file(
        "The covered system's side-effect boundaries, reviewed: each an action whose dry-run\n\
         adapter records the call the tool would make and sends nothing. Generated by\n\
         `tollgate cover boundaries review apply`; a real adapter is wired by hand\n\
         (REAL_ADAPTER_RUNBOOK.md).",
        &F { actions },
    )
}

/// `capabilities.yaml` of the pack.
pub fn capabilities_file(capabilities: &[Capability]) -> String {
    #[derive(Serialize)]
    struct F<'a> {
        capabilities: &'a [Capability],
    }
    yaml_file(
        "What the case service may propose for the covered system: one capability per reviewed\n\
         boundary, permitted by its rule in rules/boundaries.dl. Generated by\n\
         `tollgate cover boundaries review apply`.",
        &F { capabilities },
    )
}

/// `pack.yaml` of the pack.
pub fn manifest_file(manifest: &PackManifest) -> String {
    yaml_file(
        "A pack covering an existing agent codebase, generated by `tollgate cover` from a static\n\
         inspection (nothing of the code was imported or run). The loop: tollgate cover review\n\
         status --pack-root DIR.",
        manifest,
    )
}

/// The table's file.
pub fn table_file(table: &AdapterTable) -> String {
    serde_json::to_string_pretty(table).unwrap_or_default() + "\n"
}

fn draft_rules(report: &Report) -> String {
    format!(
        "// The policy of the pack covering `{}`, over the case vocabulary (case, case_input,\n\
         // evidence, evidence_number, evidence_source, proposal, proposal_input, preview_change →\n\
         // permit, deny). The permit of each reviewed boundary is in rules/boundaries.dl, written\n\
         // by `tollgate cover boundaries review apply`.\n\n\
         // Evidence counts only as a worker collected it: evidence posted through the API under a\n\
         // worker's name needs the workers to run again.\n\
         // @id cover.evidence-collected\n\
         deny(p, \"evidence was posted, not collected: run the workers again\") :-\n    \
         proposal(p, c, _, _), evidence_source(c, _, _, \"api\").\n",
        report.entrypoint.spec
    )
}

/// The draft pack's files, from a report.
pub fn draft_files(report: &Report, pack_id: &str) -> Vec<File> {
    let readers: Vec<&Tool> = report
        .tools
        .iter()
        .filter(|t| suggested_role(t) == Role::Worker)
        .collect();
    let ids = unique_ids(readers.iter().map(|t| id_of(&t.name)));
    let workers: Vec<Worker> = readers
        .iter()
        .zip(&ids)
        .map(|(t, id)| worker_of(t, id))
        .collect();
    let mut table = AdapterTable {
        pack_id: pack_id.to_string(),
        ..AdapterTable::default()
    };
    for (t, id) in readers.iter().zip(&ids) {
        table.workers.insert(id.clone(), entry_of(t));
    }
    let manifest = PackManifest {
        pack_id: pack_id.to_string(),
        kind: "transactional".into(),
        engine_id: pack_id.to_string(),
        engine_version: "0.1.0".into(),
        title: format!("Covered: {}", report.entrypoint.spec),
        description: description_of(report),
        demo: None,
    };
    let report_text = serde_json::to_string_pretty(report).unwrap_or_default() + "\n";
    vec![
        ("pack.yaml".into(), manifest_file(&manifest), false),
        ("workers.yaml".into(), workers_file(&workers), false),
        ("actions.yaml".into(), actions_file(&[]), false),
        ("capabilities.yaml".into(), capabilities_file(&[]), false),
        (DRAFT_RULES.into(), draft_rules(report), false),
        (ADAPTER.into(), ADAPTER_TEXT.into(), true),
        (ADAPTER_TABLE.into(), table_file(&table), false),
        (PACK_REPORT.into(), report_text, false),
    ]
}

/// The table entry of a tool.
pub fn entry_of(tool: &Tool) -> TableEntry {
    TableEntry {
        tool: tool.id.clone(),
        name: tool.name.clone(),
        arguments: parameter_keys(tool).into_iter().map(|(k, _)| k).collect(),
        effects: effect_lines(tool),
        sample_input: None,
    }
}

/// The pack's description, from the report.
pub fn description_of(report: &Report) -> String {
    let frameworks = if report.frameworks.is_empty() {
        "no known framework".to_string()
    } else {
        report.frameworks.join(", ")
    };
    format!(
        "Covers the agent system at `{}` ({frameworks}): {} agent(s), {} tool(s), inspected statically. Its tools that read are workers; its side-effect boundaries, once reviewed, are actions run in dry run.",
        report.entrypoint.spec,
        report.agents.len(),
        report.tools.len()
    )
}

/// Why a scaffold was refused.
#[derive(Debug, thiserror::Error)]
pub enum ScaffoldError {
    /// The report does not read.
    #[error("cannot read the cover report `{path}`: {message}")]
    Report {
        /// The file.
        path: String,
        /// Why.
        message: String,
    },
    /// The output is not empty.
    #[error(
        "`{0}` exists and is not empty\n  help: choose a new folder for --output, or remove it to scaffold again (nothing was written)"
    )]
    NotEmpty(String),
    /// The pack id is not an id.
    #[error(
        "`{0}` is not a pack id\n  help: use lower-case letters, digits and `_`, starting with a letter"
    )]
    BadId(String),
    /// Writing failed.
    #[error("{0}")]
    Write(PackFaults),
}

/// Writes the draft pack of the report at `from` into `output` (absent or empty).
pub fn scaffold(
    from: &Path,
    output: &Path,
    pack_id: Option<&str>,
) -> Result<Written, ScaffoldError> {
    let text = std::fs::read_to_string(from).map_err(|e| ScaffoldError::Report {
        path: from.display().to_string(),
        message: format!(
            "{e}\n  help: inspect first: `tollgate cover inspect PATH --entrypoint module:object` writes {}",
            super::LATEST_REPORT
        ),
    })?;
    let report = read_report(&text).map_err(|message| ScaffoldError::Report {
        path: from.display().to_string(),
        message,
    })?;
    let pack_id = match pack_id {
        Some(id) if id_of(id) == id => id.to_string(),
        Some(id) => return Err(ScaffoldError::BadId(id.to_string())),
        None => pack_id_of(&report),
    };
    let empty = match std::fs::read_dir(output) {
        Ok(mut entries) => entries.next().is_none(),
        Err(_) => !output.exists(),
    };
    if !empty {
        return Err(ScaffoldError::NotEmpty(output.display().to_string()));
    }
    let files = draft_files(&report, &pack_id);
    write_files(output, &files).map_err(ScaffoldError::Write)?;
    let root: PathBuf = crate::packs::absolute_root(output);
    let r = root.display();
    let workers = report
        .tools
        .iter()
        .filter(|t| suggested_role(t) == Role::Worker)
        .count();
    Ok(Written {
        root: r.to_string(),
        pack_id,
        files: files.into_iter().map(|(p, _, _)| p).collect(),
        notes: vec![
            format!(
                "{workers} tool(s) that read became unreviewed workers; {} side-effect boundar(ies) await review",
                report.tools.len() - workers
            ),
            "the draft validates; author-check fails until the reviewed mappings are applied"
                .into(),
        ],
        next: vec![
            format!("tollgate cover review status --pack-root {r}"),
            format!(
                "tollgate cover suggest --pack-root {r} --output {r}/cover-review.suggested.yaml"
            ),
            format!(
                "tollgate cover review template --pack-root {r} --output {r}/cover-review.yaml"
            ),
        ],
    })
}

/// A field of a JSON object as a string map (for sample inputs).
pub fn samples(keys: &[(String, Option<String>)]) -> Map<String, Value> {
    keys.iter()
        .map(|(k, ty)| (k.clone(), sample_value(k, ty.as_deref())))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_from_python_names() {
        assert_eq!(id_of("SaveReport"), "save_report");
        assert_eq!(id_of("Competitor lookup"), "competitor_lookup");
        assert_eq!(id_of("send_receipt_email"), "send_receipt_email");
        assert_eq!(id_of("_private"), "private");
        assert_eq!(id_of("2fa"), "t_2fa");
        assert_eq!(id_of("HTTPGet"), "httpget");
        assert_eq!(id_of(&"x".repeat(100)).len(), 64);
        assert_eq!(
            unique_ids(["a".to_string(), "a".to_string(), "a".to_string()]),
            ["a", "a_2", "a_3"]
        );
    }

    #[test]
    fn samples_follow_annotations() {
        assert_eq!(sample_value("n", Some("int")), json!(1));
        assert_eq!(sample_value("n", Some("Optional[float]")), json!(1.5));
        assert_eq!(sample_value("flag", Some("bool | None")), json!(true));
        assert_eq!(
            sample_value("order_id", Some("str")),
            json!("sample-order-id")
        );
        assert_eq!(sample_value("x", None), json!("sample-x"));
    }
}

#[cfg(test)]
mod properties {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        #[test]
        fn any_name_gives_a_pack_id(name in "\\PC{0,80}") {
            let id = id_of(&name);
            let pattern = regex::Regex::new("^[a-z][a-z0-9_]{0,63}$").unwrap();
            prop_assert!(pattern.is_match(&id), "{name:?} gave {id:?}");
            prop_assert_eq!(id_of(&id), id.clone());
        }

        #[test]
        fn unique_ids_are_unique_and_ids(names in proptest::collection::vec("[a-z]{1,3}", 0..30)) {
            let ids = unique_ids(names.iter().map(|n| id_of(n)));
            let set: BTreeSet<&String> = ids.iter().collect();
            prop_assert_eq!(set.len(), ids.len());
        }
    }
}
