//! `tollgate packs validate`: a pack reads (schema), its references hold (every capability
//! names an action of the pack and a rule of its rules that derives `permit`; ids are unique;
//! adapters and the demo script exist and can run) and its rules compile over the case
//! vocabulary.

use std::collections::BTreeSet;
use std::path::Path;

use serde::Serialize;

use super::policy::PackPolicy;
use super::{Pack, PackFault, adapter, load};

/// What validation found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Validation {
    /// The pack id, when pack.yaml read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pack_id: Option<String>,
    /// `ENGINE@VERSION`, when pack.yaml read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub engine: Option<String>,
    /// Whether it holds.
    pub ok: bool,
    /// Every fault.
    pub faults: Vec<PackFault>,
    /// What was checked, counted.
    pub counted: Counted,
}

/// What a validation looked at.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Counted {
    /// Workers.
    pub workers: usize,
    /// Actions.
    pub actions: usize,
    /// Capabilities.
    pub capabilities: usize,
    /// Rule files.
    pub rule_files: usize,
    /// Rules compiled.
    pub rules: usize,
}

/// Validates the pack at `root`.
pub fn validate(root: &Path) -> Validation {
    match load(root) {
        Err(faults) => Validation {
            pack_id: None,
            engine: None,
            ok: false,
            faults: faults.0,
            counted: Counted::default(),
        },
        Ok(pack) => {
            let (faults, rules) = check(&pack);
            Validation {
                pack_id: Some(pack.manifest.pack_id.clone()),
                engine: Some(pack.engine()),
                ok: faults.is_empty(),
                faults,
                counted: Counted {
                    workers: pack.workers.len(),
                    actions: pack.actions.len(),
                    capabilities: pack.capabilities.len(),
                    rule_files: pack.rules.len(),
                    rules,
                },
            }
        }
    }
}

fn duplicates<'a>(ids: impl Iterator<Item = &'a str>) -> Vec<(usize, &'a str)> {
    let mut seen = BTreeSet::new();
    ids.enumerate()
        .filter(|(_, id)| !seen.insert(*id))
        .collect()
}

/// The reference checks of a loaded pack, and the number of rules compiled.
pub fn check(pack: &Pack) -> (Vec<PackFault>, usize) {
    let mut faults = Vec::new();
    for (i, id) in duplicates(pack.workers.iter().map(|w| w.id.as_str())) {
        faults.push(PackFault::at(
            "workers.yaml",
            format!("/workers/{i}/id"),
            format!("worker `{id}` is defined twice"),
            "give each worker its own id",
        ));
    }
    for (i, id) in duplicates(pack.actions.iter().map(|a| a.id.as_str())) {
        faults.push(PackFault::at(
            "actions.yaml",
            format!("/actions/{i}/id"),
            format!("action `{id}` is defined twice"),
            "give each action its own id",
        ));
    }
    for (i, id) in duplicates(pack.capabilities.iter().map(|c| c.id.as_str())) {
        faults.push(PackFault::at(
            "capabilities.yaml",
            format!("/capabilities/{i}/id"),
            format!("capability `{id}` is defined twice"),
            "give each capability its own id",
        ));
    }
    for (i, w) in pack.workers.iter().enumerate() {
        if let Err(m) = adapter::resolve(&pack.root, &w.adapter) {
            faults.push(PackFault::at(
                "workers.yaml",
                format!("/workers/{i}/adapter"),
                format!("worker `{}`'s adapter cannot run: {m}", w.id),
                "put an executable at that path under the pack root",
            ));
        }
    }
    for (i, a) in pack.actions.iter().enumerate() {
        if let Err(m) = adapter::resolve(&pack.root, &a.adapter) {
            faults.push(PackFault::at(
                "actions.yaml",
                format!("/actions/{i}/adapter"),
                format!("action `{}`'s adapter cannot run: {m}", a.id),
                "put an executable at that path under the pack root",
            ));
        }
        if let Some(real) = &a.real_adapter
            && let Err(m) = adapter::resolve(&pack.root, real)
        {
            faults.push(PackFault::at(
                "actions.yaml",
                format!("/actions/{i}/real_adapter"),
                format!("action `{}`'s real adapter cannot run: {m}", a.id),
                "put an executable at that path, or remove `real_adapter` (the action then runs only in dry_run)",
            ));
        }
    }
    let policy = match PackPolicy::compile(pack) {
        Ok(p) => Some(p),
        Err(f) => {
            faults.extend(f);
            None
        }
    };
    for (i, c) in pack.capabilities.iter().enumerate() {
        match pack.action(&c.action) {
            None => faults.push(PackFault::at(
                "capabilities.yaml",
                format!("/capabilities/{i}/action"),
                format!(
                    "capability `{}` names action `{}`, which actions.yaml does not define",
                    c.id, c.action
                ),
                format!(
                    "use one of: {}",
                    pack.actions
                        .iter()
                        .map(|a| a.id.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )),
            Some(action) => {
                for key in &action.input {
                    if !c.input.contains_key(key) {
                        faults.push(PackFault::at(
                            "capabilities.yaml",
                            format!("/capabilities/{i}/input"),
                            format!(
                                "capability `{}` does not give action `{}` its input `{key}`",
                                c.id, action.id
                            ),
                            format!("add `{key}:` under `input` (a value, `{{case.KEY}}` or `{{evidence.WORKER.KEY}}`)"),
                        ));
                    }
                }
            }
        }
        if let Some(policy) = &policy {
            match policy.rule_head(&c.policy_rule) {
                None => faults.push(PackFault::at(
                    "capabilities.yaml",
                    format!("/capabilities/{i}/policy_rule"),
                    format!(
                        "capability `{}` names policy rule `{}`, which no rule of rules/*.dl has",
                        c.id, c.policy_rule
                    ),
                    "write `// @id NAME` above the rule that permits it, and name that id here",
                )),
                Some(head) if head != "permit" => faults.push(PackFault::at(
                    "capabilities.yaml",
                    format!("/capabilities/{i}/policy_rule"),
                    format!(
                        "policy rule `{}` of capability `{}` derives `{head}`, not `permit`",
                        c.policy_rule, c.id
                    ),
                    "name the rule whose head is `permit(p)`",
                )),
                Some(_) => {}
            }
        }
        for (pointer, placeholder) in placeholders(&c.input) {
            if let Some(msg) = bad_placeholder(pack, &placeholder) {
                faults.push(PackFault::at(
                    "capabilities.yaml",
                    format!("/capabilities/{i}/input{pointer}"),
                    msg,
                    "use `{case.KEY}` or `{evidence.WORKER.KEY}` with a worker of workers.yaml and a key it produces",
                ));
            }
        }
    }
    if let Some(demo) = &pack.manifest.demo {
        if let Err(m) = adapter::resolve(&pack.root, &demo.script) {
            faults.push(PackFault::at(
                "pack.yaml",
                "/demo/script",
                format!("the demo script cannot run: {m}"),
                "put an executable script there that opens a case and prints its case_id",
            ));
        }
        if let Some(cap) = &demo.capability
            && pack.capability(cap).is_none()
        {
            faults.push(PackFault::at(
                "pack.yaml",
                "/demo/capability",
                format!(
                    "the demo proposes capability `{cap}`, which capabilities.yaml does not define"
                ),
                "name a capability of the pack",
            ));
        }
    }
    place(pack, &mut faults);
    let rules = policy.map_or(0, |p| p.rule_ids().len());
    (faults, rules)
}

/// Every `{...}` placeholder in a capability's input, with its JSON pointer.
pub fn placeholders(input: &serde_json::Map<String, serde_json::Value>) -> Vec<(String, String)> {
    input
        .iter()
        .filter_map(|(k, v)| {
            let s = v.as_str()?;
            let inner = s.strip_prefix('{')?.strip_suffix('}')?;
            Some((format!("/{k}"), inner.to_string()))
        })
        .collect()
}

fn bad_placeholder(pack: &Pack, placeholder: &str) -> Option<String> {
    let parts: Vec<&str> = placeholder.split('.').collect();
    match parts.as_slice() {
        ["case", key] if !key.is_empty() => None,
        ["evidence", worker, key] => match pack.worker(worker) {
            None => Some(format!(
                "`{{{placeholder}}}` names worker `{worker}`, which workers.yaml does not define"
            )),
            Some(w) if !w.produces.iter().any(|p| p == key) => Some(format!(
                "`{{{placeholder}}}`: worker `{worker}` does not produce `{key}` (it produces {})",
                w.produces.join(", ")
            )),
            Some(_) => None,
        },
        _ => Some(format!(
            "`{{{placeholder}}}` is not a placeholder Tollgate fills"
        )),
    }
}

/// Places faults that name a JSON pointer on their line, by reading their file again.
fn place(pack: &Pack, faults: &mut [PackFault]) {
    for f in faults
        .iter_mut()
        .filter(|f| f.line.is_none() && !f.path.is_empty())
    {
        if let Ok(text) = std::fs::read_to_string(pack.root.join(&f.file))
            && let Ok(doc) = tollgate_rules::located::Located::parse(&text)
            && let Some((line, column)) = doc.place(&f.path)
        {
            f.line = Some(line);
            f.column = Some(column);
        }
    }
}
