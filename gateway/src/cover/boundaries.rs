//! The boundary review of a covered pack: `cover boundaries suggest` turns each tool that
//! changes or runs something into a suggested action (its input from the tool's parameters, a
//! sample input from their annotations, what the preview shows, what verify checks, how it is
//! compensated, the capability's wording), `cover boundaries review template` writes them with
//! every decision `pending`, and `cover boundaries review apply` generates, from the accepted
//! ones and without executing anything of the inspected code: actions.yaml, capabilities.yaml,
//! rules/boundaries.dl (a permit per capability), the dry-run adapters' table, tests, a demo, and
//! the inert REAL_ADAPTER_RUNBOOK.md with its templates.

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::Value;

use super::generate;
use super::review::{self, Decision, ReviewFile, entry_faults, place, read_text, read_typed};
pub use super::review_files::{Boundary, BoundaryFile};
use super::scaffold::{
    self, ADAPTER, Role, TableEntry, Written, entry_of, id_of, pack_report, parameter_keys,
    samples, suggested_role, unique_ids,
};
use super::{Report, Tool};
use crate::packs::{Action, Capability, PackFault, PackFaults, load};

/// The schema of a boundary review file.
pub const BOUNDARY_SCHEMA: &str = "tollgate.cover.boundaries/v1";
/// The suggestions' file name.
pub const SUGGESTED_FILE: &str = "cover-boundaries.suggested.yaml";
/// The review file's name.
pub const REVIEW_FILE: &str = "cover-boundaries.review.yaml";
/// The applied review, kept in the pack.
pub const APPLIED: &str = "cover/boundaries.applied.yaml";
/// The rule file of the reviewed boundaries.
pub const RULES: &str = "rules/boundaries.dl";

/// The tools that are boundaries: those the applied mapping review accepted as boundaries, or,
/// before it, those the report classifies as changing or running something.
pub fn boundary_tools<'r>(report: &'r Report, applied: Option<&ReviewFile>) -> Vec<&'r Tool> {
    report
        .tools
        .iter()
        .filter(|t| match applied {
            Some(r) => r.mappings.iter().any(|m| {
                m.tool == t.id && m.role == Role::Boundary && m.decision == Some(Decision::Accept)
            }),
            None => suggested_role(t) == Role::Boundary,
        })
        .collect()
}

fn strongest_kind(tool: &Tool) -> Option<&super::Effect> {
    let rank = |c: &str| match c {
        "executes" => 2,
        "mutating" => 1,
        _ => 0,
    };
    tool.effects.iter().max_by_key(|e| rank(&e.classification))
}

fn compensation(tool: &Tool) -> String {
    let dry = "In dry run, compensation restores the adapter's record of the call as it was before apply.";
    let real = match strongest_kind(tool).map(|e| (e.kind.as_str(), e.operation.as_deref())) {
        Some(("http", Some("DELETE"))) => {
            "a real adapter recreates what the request deleted, from what it read before apply"
        }
        Some(("http", _)) => {
            "a real adapter sends the reverse request (cancel, delete or refund what apply created), using the id apply's receipt recorded"
        }
        Some(("file", Some("delete"))) => {
            "a real adapter restores the deleted file from the copy it kept before apply"
        }
        Some(("file", _)) => {
            "a real adapter restores the file's previous content, kept before apply (or removes a file apply created)"
        }
        Some(("database", _)) => {
            "a real adapter deletes the rows apply inserted or restores the ones it changed, in one transaction"
        }
        Some(("email", _)) => {
            "an email cannot be unsent: a real adapter sends a correction to the same recipient"
        }
        Some(("cloud", _)) => {
            "a real adapter deletes or reverts what apply created in the cloud service (the receipt records its id)"
        }
        Some(("process" | "code", _)) => {
            "what a process or code did cannot be undone in general: a real adapter runs the inverse operation, or this boundary should stay rejected"
        }
        _ => "a real adapter undoes the change apply made, from what its receipt recorded",
    };
    format!("{dry} For the real system: {real}.")
}

fn targets(tool: &Tool) -> String {
    let t: BTreeSet<String> = tool
        .effects
        .iter()
        .map(|e| match (&e.operation, &e.target) {
            (Some(op), Some(t)) => format!("{op} {t}"),
            (None, Some(t)) => t.clone(),
            (Some(op), None) => format!("{} {op}", e.kind),
            (None, None) => e.call.clone(),
        })
        .collect();
    if t.is_empty() {
        "what the tool calls".into()
    } else {
        t.into_iter().collect::<Vec<_>>().join(", ")
    }
}

fn suggest_one(tool: &Tool, action: &str) -> Boundary {
    let keys = parameter_keys(tool);
    let input: Vec<String> = keys.iter().map(|(k, _)| k.clone()).collect();
    let executes = tool.classification == "executes";
    let args = if input.is_empty() {
        String::new()
    } else {
        format!(
            ": {}",
            input
                .iter()
                .map(|k| format!("{k} {{input.{k}}}"))
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    let target = targets(tool);
    let doc = tool
        .description
        .as_deref()
        .and_then(|d| d.lines().map(str::trim).find(|l| !l.is_empty()))
        .map(|l| l.trim_end_matches('.').to_string())
        .unwrap_or_else(|| format!("Calls the `{}` tool", tool.name));
    Boundary {
        tool: tool.id.clone(),
        at: format!("{}:{}", tool.at.file, tool.at.line),
        classification: tool.classification.clone(),
        effects: scaffold::effect_lines(tool),
        suggested: if executes {
            Decision::Reject
        } else {
            Decision::Accept
        },
        why: if executes {
            "it runs processes or code: a pack should wrap the narrow operation it stands for; accept only if you know what it runs".into()
        } else {
            format!(
                "it changes something outside the agent ({target}): every call is proposed, previewed, decided by policy and approved"
            )
        },
        action: action.to_string(),
        capability: action.to_string(),
        description: format!(
            "{doc} (tool `{}`, {}:{}).",
            tool.name, tool.at.file, tool.at.line
        ),
        sample_input: samples(&keys),
        input,
        wording: format!("Call `{}`{args}", tool.name),
        preview: format!(
            "The call `{}` would make, with its arguments, and what it reaches ({target}); in dry run it is recorded, not sent.",
            tool.name
        ),
        verify: format!(
            "The adapter's record of the call holds the arguments applied; a real adapter reads {target} back and checks the change is there."
        ),
        compensate: compensation(tool),
        decision: None,
    }
}

/// The suggestions for the pack at `root`.
pub fn suggestions(root: &Path) -> Result<BoundaryFile, PackFaults> {
    let report = pack_report(root)?;
    let pack = load(root)?;
    let applied = review::applied(root);
    let tools = boundary_tools(&report, applied.as_ref());
    // Action ids must not collide with the workers'.
    let taken: BTreeSet<String> = pack.workers.iter().map(|w| w.id.clone()).collect();
    let ids = unique_ids(tools.iter().map(|t| {
        let id = id_of(&t.name);
        if taken.contains(&id) {
            format!("{id}_action")
        } else {
            id
        }
    }));
    Ok(BoundaryFile {
        schema: BOUNDARY_SCHEMA.into(),
        pack_id: pack.manifest.pack_id.clone(),
        source: report.entrypoint.spec.clone(),
        boundaries: tools
            .iter()
            .zip(&ids)
            .map(|(t, id)| suggest_one(t, id))
            .collect(),
    })
}

/// The review template from a suggestions file: the same boundaries, every decision `pending`.
pub fn template(root: &Path, suggestions_file: &Path) -> Result<BoundaryFile, PackFaults> {
    let (name, text) = read_text(
        suggestions_file,
        "tollgate cover boundaries suggest --pack-root DIR --output FILE",
    )?;
    let mut file: BoundaryFile = read_typed(&name, &text, BOUNDARY_SCHEMA, "boundaries")?;
    let pack = load(root)?;
    if file.pack_id != pack.manifest.pack_id {
        return Err(PackFaults(place(
            vec![PackFault::at(
                &name,
                "/pack_id",
                format!(
                    "the suggestions are for pack `{}`, the pack root holds `{}`",
                    file.pack_id, pack.manifest.pack_id
                ),
                "suggest again for this pack (`tollgate cover boundaries suggest --pack-root DIR`)",
            )],
            &text,
        )));
    }
    for b in &mut file.boundaries {
        b.decision = Some(Decision::Pending);
    }
    Ok(file)
}

/// The text of a boundary suggestions or review file.
pub fn render(file: &BoundaryFile, suggested: bool) -> String {
    let header = if suggested {
        format!(
            "Suggested side-effect boundaries of `{}` for the pack `{}`: each would become an\n\
             action behind a capability. Inert: nothing changes until a reviewed file is applied.\n\
             Next: tollgate cover boundaries review template --suggestions THIS_FILE.",
            file.source, file.pack_id
        )
    } else {
        format!(
            "The boundary review of the pack `{}` (tools of `{}`). Set each `decision` to accept\n\
             or reject (`suggested` is the inspection's view); edit ids, input, sample_input and\n\
             the texts as needed. Then: tollgate cover boundaries review apply --pack-root DIR\n\
             --mapping-file THIS_FILE. Accepted boundaries become actions run in dry run.",
            file.pack_id, file.source
        )
    };
    scaffold::yaml_file(&header, file)
}

fn check(
    name: &str,
    file: &BoundaryFile,
    report: &Report,
    pack: &crate::packs::Pack,
) -> Vec<PackFault> {
    let mut faults = Vec::new();
    let mut fault = |i: Option<usize>, field: &str, message: String, help: &str| {
        let path = match i {
            Some(i) => format!("/boundaries/{i}/{field}"),
            None => format!("/{field}"),
        };
        faults.push(PackFault::at(name, path, message, help));
    };
    if file.pack_id != pack.manifest.pack_id {
        fault(
            None,
            "pack_id",
            format!(
                "the review is for pack `{}`, the pack root holds `{}`",
                file.pack_id, pack.manifest.pack_id
            ),
            "apply a review written for this pack",
        );
    }
    let workers: BTreeSet<&str> = pack.workers.iter().map(|w| w.id.as_str()).collect();
    let mut actions = BTreeSet::new();
    let mut capabilities = BTreeSet::new();
    let mut tools = BTreeSet::new();
    for (i, b) in file.boundaries.iter().enumerate() {
        for (field, message, help) in entry_faults(report, &b.tool, b.decision, &mut tools) {
            fault(Some(i), field, message, help);
        }
        match b.decision {
            None | Some(Decision::Pending) => {}
            Some(Decision::Reject) => {}
            Some(Decision::Accept) => {
                for (field, id, seen) in [
                    ("action", &b.action, &mut actions),
                    ("capability", &b.capability, &mut capabilities),
                ] {
                    if id_of(id) != *id {
                        fault(
                            Some(i),
                            field,
                            format!("`{id}` is not an id"),
                            "use lower-case letters, digits and `_`, starting with a letter",
                        );
                    } else if !seen.insert(id.clone()) {
                        fault(
                            Some(i),
                            field,
                            format!("{field} `{id}` is named twice"),
                            "give each its own id",
                        );
                    }
                }
                if workers.contains(b.action.as_str()) {
                    fault(
                        Some(i),
                        "action",
                        format!("`{}` is already a worker of the pack", b.action),
                        "give the action another id",
                    );
                }
                for (j, key) in b.input.iter().enumerate() {
                    if id_of(key) != *key {
                        fault(
                            Some(i),
                            &format!("input/{j}"),
                            format!("`{key}` is not an input key"),
                            "use lower-case letters, digits and `_`, starting with a letter",
                        );
                    } else if !b.sample_input.contains_key(key) {
                        fault(
                            Some(i),
                            "sample_input",
                            format!("`sample_input` has no value for input `{key}`"),
                            "give every input key a sample value (the harness and the demo use it)",
                        );
                    }
                }
            }
        }
    }
    faults
}

/// Applies a decided boundary review to the pack at `root`: every fault is found before anything
/// is written; then the pack's actions, capabilities, rules, adapters' table, tests, demo and
/// real-adapter templates are generated from the accepted boundaries.
pub fn apply(root: &Path, mapping_file: &Path) -> Result<Written, PackFaults> {
    let (name, text) = read_text(
        mapping_file,
        "tollgate cover boundaries review template --pack-root DIR --suggestions FILE --output FILE",
    )?;
    let file: BoundaryFile = read_typed(&name, &text, BOUNDARY_SCHEMA, "boundaries")?;
    let report = pack_report(root)?;
    let pack = load(root)?;
    let faults = check(&name, &file, &report, &pack);
    if !faults.is_empty() {
        return Err(PackFaults(place(faults, &text)));
    }
    let accepted: Vec<&Boundary> = file
        .boundaries
        .iter()
        .filter(|b| b.decision == Some(Decision::Accept))
        .collect();
    let actions: Vec<Action> = accepted
        .iter()
        .map(|b| Action {
            id: b.action.clone(),
            description: b.description.clone(),
            adapter: ADAPTER.into(),
            real_adapter: None,
            input: b.input.clone(),
            preview: b.preview.clone(),
            verify: b.verify.clone(),
            compensate: b.compensate.clone(),
            sample_input: Some(b.sample_input.clone()),
        })
        .collect();
    let capabilities: Vec<Capability> = accepted
        .iter()
        .map(|b| Capability {
            id: b.capability.clone(),
            action: b.action.clone(),
            policy_rule: generate::rule_id(&b.capability),
            wording: b.wording.clone(),
            input: b
                .input
                .iter()
                .map(|k| (k.clone(), Value::String(format!("{{case.{k}}}"))))
                .collect(),
            reviewed: true,
        })
        .collect();
    let mut table = scaffold::read_table(root);
    table.pack_id = pack.manifest.pack_id.clone();
    table.actions.clear();
    for b in &accepted {
        if let Some(tool) = report.tools.iter().find(|t| t.id == b.tool) {
            let mut entry: TableEntry = entry_of(tool);
            entry.arguments = b.input.clone();
            entry.sample_input = Some(b.sample_input.clone());
            table.actions.insert(b.action.clone(), entry);
        }
    }
    let mut manifest = pack.manifest.clone();
    manifest.description = scaffold::description_of(&report);
    manifest.demo = generate::demo(&report, &table, &accepted);
    let mut files = vec![
        (
            "pack.yaml".to_string(),
            scaffold::manifest_file(&manifest),
            false,
        ),
        (
            "actions.yaml".into(),
            scaffold::actions_file(&actions),
            false,
        ),
        (
            "capabilities.yaml".into(),
            scaffold::capabilities_file(&capabilities),
            false,
        ),
        (
            RULES.into(),
            generate::rules(&report.entrypoint.spec, &accepted),
            false,
        ),
        (
            scaffold::ADAPTER_TABLE.into(),
            scaffold::table_file(&table),
            false,
        ),
        (
            generate::TESTS.into(),
            generate::TESTS_TEXT.to_string(),
            false,
        ),
        ("demo.sh".into(), generate::demo_script(&manifest), true),
        (
            "REAL_ADAPTER_RUNBOOK.md".into(),
            generate::runbook(&report, &manifest.pack_id, &accepted),
            false,
        ),
        (
            "templates/real_external_adapters.py".into(),
            generate::real_adapters(&accepted),
            false,
        ),
        (
            "templates/real_actions.yaml".into(),
            generate::real_actions(&actions),
            false,
        ),
        (
            "templates/real_adapter_policy.yaml".into(),
            generate::real_policy(&manifest.pack_id, &actions),
            false,
        ),
        (
            "templates/real_demo.sh".into(),
            generate::real_demo(&manifest.pack_id),
            false,
        ),
    ];
    files.push((
        APPLIED.into(),
        scaffold::yaml_file(
            "The boundary review applied to this pack (kept so `cover review status` knows it).",
            &file,
        ),
        false,
    ));
    scaffold::write_files(root, &files)?;
    let r = pack.root.display();
    let rejected = file.boundaries.len() - accepted.len();
    let mut notes = vec![format!(
        "{} boundar(ies) became actions with capabilities, {rejected} rejected",
        accepted.len()
    )];
    if accepted.is_empty() {
        notes.push(
            "no boundary was accepted: the pack only collects evidence, and author-check owes a demo"
                .into(),
        );
    }
    Ok(Written {
        root: r.to_string(),
        pack_id: pack.manifest.pack_id.clone(),
        files: files.into_iter().map(|(p, _, _)| p).collect(),
        notes,
        next: vec![
            format!("tollgate packs author-check --pack-root {r}"),
            format!("tollgate packs adapter-dry-run --pack-root {r}"),
            format!("tollgate packs adapter-preflight --pack-root {r} --mode dry_run"),
            format!("(cd {r} && python3 -m unittest discover -s tests)"),
            format!("TOLLGATE=$(command -v tollgate) {r}/demo.sh   # prints a case_id"),
        ],
    })
}
