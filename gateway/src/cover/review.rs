//! The mapping review of a covered pack: `cover suggest` writes what each inspected tool should
//! become (a worker, a boundary, or left out) with the reason, `cover review template` writes
//! the same with every decision `pending`, and `cover review apply` promotes the decided
//! mappings into the pack — accepted workers reviewed, rejected tools out. Nothing changes until
//! a reviewed file is applied, and a file with a fault changes nothing. `cover review status`
//! says where the pack stands.

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::Value;

pub use super::review_files::{Decision, Mapping, ReviewFile};
use super::scaffold::{
    self, ADAPTER, Role, Written, entry_of, id_of, pack_report, parameter_keys, suggested_role,
    unique_ids, worker_of,
};
use super::{Report, Tool};
use crate::packs::{PackFault, PackFaults, load};

/// The schema of a mapping review file.
pub const REVIEW_SCHEMA: &str = "tollgate.cover.review/v1";
/// The suggestions' file name.
pub const SUGGESTED_FILE: &str = "cover-review.suggested.yaml";
/// The review file's name.
pub const REVIEW_FILE: &str = "cover-review.yaml";
/// The applied review, kept in the pack.
pub const APPLIED: &str = "cover/review.applied.yaml";

fn why(tool: &Tool, role: Role) -> String {
    match role {
        Role::Worker if tool.effects.is_empty() => {
            "no side effect was found in it: a worker records the arguments it would get".into()
        }
        Role::Worker => "it only reads: a worker records the arguments it would get".into(),
        Role::Boundary if tool.classification == "executes" => {
            "it runs processes or code: review it as a boundary (`cover boundaries suggest`), where rejecting it is suggested".into()
        }
        Role::Boundary => {
            "it changes something outside the agent: review it as a boundary (`cover boundaries suggest`)".into()
        }
        Role::Excluded => "left out of the pack".into(),
    }
}

/// The suggestions for the pack at `root`.
pub fn suggestions(root: &Path) -> Result<ReviewFile, PackFaults> {
    let report = pack_report(root)?;
    let pack = load(root)?;
    Ok(suggest_from(&report, &pack.manifest.pack_id))
}

fn suggest_from(report: &Report, pack_id: &str) -> ReviewFile {
    let roles: Vec<Role> = report.tools.iter().map(suggested_role).collect();
    let worker_ids = unique_ids(
        report
            .tools
            .iter()
            .zip(&roles)
            .filter(|(_, r)| **r == Role::Worker)
            .map(|(t, _)| id_of(&t.name)),
    );
    let mut ids = worker_ids.into_iter();
    let mappings = report
        .tools
        .iter()
        .zip(roles)
        .map(|(t, role)| {
            let worker = (role == Role::Worker).then(|| ids.next()).flatten();
            Mapping {
                tool: t.id.clone(),
                at: format!("{}:{}", t.at.file, t.at.line),
                classification: t.classification.clone(),
                effects: scaffold::effect_lines(t),
                role,
                description: worker.as_ref().map(|id| worker_of(t, id).description),
                worker,
                why: why(t, role),
                decision: None,
            }
        })
        .collect();
    ReviewFile {
        schema: REVIEW_SCHEMA.into(),
        pack_id: pack_id.to_string(),
        source: report.entrypoint.spec.clone(),
        mappings,
    }
}

/// The review template: the suggestions with every decision `pending`.
pub fn template(root: &Path) -> Result<ReviewFile, PackFaults> {
    let mut file = suggestions(root)?;
    for m in &mut file.mappings {
        m.decision = Some(Decision::Pending);
    }
    Ok(file)
}

/// The text of a review or suggestions file.
pub fn render(file: &ReviewFile, suggested: bool) -> String {
    let header = if suggested {
        format!(
            "Suggested mappings of the tools of `{}` into the pack `{}`. Inert: nothing changes\n\
             until a reviewed file is applied. Next: tollgate cover review template, decide each\n\
             mapping (accept or reject; edit role, worker or description), tollgate cover review apply.",
            file.source, file.pack_id
        )
    } else {
        format!(
            "The mapping review of the pack `{}` (tools of `{}`). Set each `decision` to accept\n\
             or reject; role is worker, boundary or excluded; a worker's id and description can\n\
             be edited. Then: tollgate cover review apply --pack-root DIR --mapping-file THIS_FILE.\n\
             A tool that changes or runs something cannot be a worker (workers run on every case,\n\
             without approval): review it as a boundary.",
            file.pack_id, file.source
        )
    };
    scaffold::yaml_file(&header, file)
}

/// Reads a review file, every fault with its line.
pub fn read(file_name: &str, text: &str) -> Result<ReviewFile, PackFaults> {
    read_typed(file_name, text, REVIEW_SCHEMA, "mappings")
}

/// Reads a YAML file of the loop: its header fields, then each item of `list` on its own, so a
/// fault names the item's pointer and line.
pub(crate) fn read_typed<T: serde::de::DeserializeOwned>(
    file_name: &str,
    text: &str,
    schema: &str,
    list: &str,
) -> Result<T, PackFaults> {
    let doc = tollgate_rules::located::Located::parse(text).map_err(|e| {
        PackFaults(vec![PackFault {
            line: Some(e.line),
            column: Some(e.column),
            ..PackFault::file(file_name, e.message, "fix the YAML syntax")
        }])
    })?;
    let place = |mut f: PackFault| {
        if let Some((line, column)) = doc.place(&f.path) {
            f.line = Some(line);
            f.column = Some(column);
        }
        f
    };
    let found = doc.value.get("schema").and_then(Value::as_str);
    if found != Some(schema) {
        return Err(PackFaults(vec![place(PackFault::at(
            file_name,
            "/schema",
            format!("`schema` is {found:?}, not `{schema}`"),
            "write the file with the command that makes it (`tollgate cover review template`, `tollgate cover boundaries review template`)",
        ))]));
    }
    match serde_json::from_value::<T>(doc.value.clone()) {
        Ok(v) => Ok(v),
        Err(e) => {
            // Which entry is at fault: the first that does not read on its own.
            let pointer = doc
                .value
                .get(list)
                .and_then(Value::as_array)
                .and_then(|items| {
                    items.iter().position(|item| {
                        let mut probe = doc.value.clone();
                        if let Some(o) = probe.as_object_mut() {
                            o.insert(list.into(), Value::Array(vec![item.clone()]));
                        }
                        serde_json::from_value::<T>(probe).is_err()
                    })
                })
                .map_or_else(String::new, |i| format!("/{list}/{i}"));
            Err(PackFaults(vec![place(PackFault::at(
                file_name,
                pointer,
                e.to_string(),
                "keep the fields the template wrote; decisions are pending, accept or reject",
            ))]))
        }
    }
}

/// Applies a decided review file to the pack at `root`. Every fault is found before anything is
/// written.
pub fn apply(root: &Path, mapping_file: &Path) -> Result<Written, PackFaults> {
    let (name, text) = read_text(
        mapping_file,
        "tollgate cover review template --pack-root DIR --output FILE",
    )?;
    let review = read(&name, &text)?;
    let report = pack_report(root)?;
    let pack = load(root)?;
    let mut faults = Vec::new();
    let mut fault = |i: Option<usize>, field: &str, message: String, help: &str| {
        let path = match i {
            Some(i) => format!("/mappings/{i}/{field}"),
            None => format!("/{field}"),
        };
        faults.push(PackFault::at(&name, path, message, help));
    };
    if review.pack_id != pack.manifest.pack_id {
        fault(
            None,
            "pack_id",
            format!(
                "the review is for pack `{}`, the pack root holds `{}`",
                review.pack_id, pack.manifest.pack_id
            ),
            "apply a review written for this pack (`tollgate cover review template --pack-root DIR`)",
        );
    }
    let mut seen_tools = BTreeSet::new();
    let mut seen_workers = BTreeSet::new();
    let mut accepted: Vec<(usize, &Mapping, &Tool)> = Vec::new();
    for (i, m) in review.mappings.iter().enumerate() {
        for (field, message, help) in entry_faults(&report, &m.tool, m.decision, &mut seen_tools) {
            fault(Some(i), field, message, help);
        }
        let Some(tool) = report.tools.iter().find(|t| t.id == m.tool) else {
            continue;
        };
        match m.decision {
            None | Some(Decision::Pending) => {}
            Some(Decision::Reject) => {}
            Some(Decision::Accept) => {
                if m.role == Role::Worker {
                    if suggested_role(tool) == Role::Boundary {
                        fault(
                            Some(i),
                            "role",
                            format!(
                                "`{}` is {}: a worker runs on every case without approval, so it cannot be one",
                                m.tool,
                                tool.classification.replace('_', "-")
                            ),
                            "set `role: boundary` and review it with `tollgate cover boundaries suggest`, or `role: excluded`",
                        );
                    }
                    match &m.worker {
                        None => fault(
                            Some(i),
                            "worker",
                            format!("the worker mapping of `{}` names no worker id", m.tool),
                            "set `worker: ID` (lower-case letters, digits and `_`)",
                        ),
                        Some(id) if id_of(id) != *id => fault(
                            Some(i),
                            "worker",
                            format!("`{id}` is not a worker id"),
                            "use lower-case letters, digits and `_`, starting with a letter",
                        ),
                        Some(id) if !seen_workers.insert(id.clone()) => fault(
                            Some(i),
                            "worker",
                            format!("worker `{id}` is named twice"),
                            "give each worker its own id",
                        ),
                        Some(_) => {}
                    }
                }
                accepted.push((i, m, tool));
            }
        }
    }
    for t in &report.tools {
        if !seen_tools.contains(t.id.as_str()) {
            faults.push(PackFault::at(
                &name,
                "/mappings",
                format!("tool `{}` has no mapping", t.id),
                "keep every tool the template listed (reject the ones to leave out)",
            ));
        }
    }
    if !faults.is_empty() {
        return Err(PackFaults(place(faults, &text)));
    }
    let mut workers = Vec::new();
    let mut table = scaffold::read_table(root);
    table.workers.clear();
    for (_, m, tool) in accepted.iter().filter(|(_, m, _)| m.role == Role::Worker) {
        let id = m.worker.clone().unwrap_or_default();
        let mut w = worker_of(tool, &id);
        if let Some(d) = m.description.as_ref().filter(|d| !d.trim().is_empty()) {
            w.description = d.clone();
        }
        w.reviewed = true;
        w.adapter = ADAPTER.into();
        table.workers.insert(id, entry_of(tool));
        workers.push(w);
    }
    let applied = scaffold::yaml_file(
        "The mapping review applied to this pack (kept so `cover boundaries suggest` and\n\
         `cover review status` know it).",
        &review,
    );
    let files = vec![
        (
            "workers.yaml".to_string(),
            scaffold::workers_file(&workers),
            false,
        ),
        (
            scaffold::ADAPTER_TABLE.to_string(),
            scaffold::table_file(&table),
            false,
        ),
        (APPLIED.to_string(), applied, false),
    ];
    scaffold::write_files(root, &files)?;
    let r = pack.root.display();
    let boundaries = accepted
        .iter()
        .filter(|(_, m, _)| m.role == Role::Boundary)
        .count();
    let rejected = review
        .mappings
        .iter()
        .filter(|m| m.decision == Some(Decision::Reject))
        .count();
    Ok(Written {
        root: r.to_string(),
        pack_id: pack.manifest.pack_id.clone(),
        files: files.into_iter().map(|(p, _, _)| p).collect(),
        notes: vec![format!(
            "{} worker(s) reviewed, {boundaries} boundar(ies) to review, {rejected} tool(s) left out",
            workers.len()
        )],
        next: vec![
            format!(
                "tollgate cover boundaries suggest --pack-root {r} --output {r}/cover-boundaries.suggested.yaml"
            ),
            format!("tollgate cover review status --pack-root {r}"),
        ],
    })
}

/// The faults every entry of a review file can have: a tool the report does not have, a tool
/// listed twice, a decision not taken. Each is `(field, message, help)`.
pub(crate) fn entry_faults(
    report: &Report,
    tool: &str,
    decision: Option<Decision>,
    seen: &mut BTreeSet<String>,
) -> Vec<(&'static str, String, &'static str)> {
    let mut out = Vec::new();
    if !report.tools.iter().any(|t| t.id == tool) {
        out.push((
            "tool",
            format!("the cover report has no tool `{tool}`"),
            "keep the tools the template listed",
        ));
    } else if !seen.insert(tool.to_string()) {
        out.push((
            "tool",
            format!("tool `{tool}` is listed twice"),
            "review each tool once",
        ));
    }
    if matches!(decision, None | Some(Decision::Pending)) {
        out.push((
            "decision",
            format!("`{tool}` is not decided"),
            "set `decision: accept` or `decision: reject`",
        ));
    }
    out
}

/// The text of a file the loop reads, or a fault saying how to write it.
pub(crate) fn read_text(path: &Path, how: &str) -> Result<(String, String), PackFaults> {
    let name = path.display().to_string();
    match std::fs::read_to_string(path) {
        Ok(text) => Ok((name, text)),
        Err(e) => Err(PackFaults(vec![PackFault::file(
            &name,
            format!("cannot read `{name}`: {e}"),
            format!("write it with `{how}`"),
        )])),
    }
}

/// Places faults on their lines in the file's text.
pub(crate) fn place(mut faults: Vec<PackFault>, text: &str) -> Vec<PackFault> {
    if let Ok(doc) = tollgate_rules::located::Located::parse(text) {
        for f in faults.iter_mut().filter(|f| f.line.is_none()) {
            if let Some((line, column)) = doc.place(&f.path) {
                f.line = Some(line);
                f.column = Some(column);
            }
        }
    }
    faults
}

/// The applied mapping review of the pack, when there is one.
pub fn applied(root: &Path) -> Option<ReviewFile> {
    let text = std::fs::read_to_string(root.join(APPLIED)).ok()?;
    read(APPLIED, &text).ok()
}

/// The input keys of a tool, for callers outside this module.
pub fn keys_of(tool: &Tool) -> Vec<String> {
    parameter_keys(tool).into_iter().map(|(k, _)| k).collect()
}
