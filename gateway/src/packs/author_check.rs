//! `tollgate packs author-check`: what an author still owes a pack that validates — every action
//! says what its preview shows, what verification checks and how it is compensated; every
//! capability has wording and a reviewed mapping, and every worker a reviewed one; the pack, its
//! workers and actions are described; every action is reachable from a capability; the demo is
//! there. Fails with the list of what is missing.

use std::path::Path;

use serde::Serialize;

use super::{PackFault, load, validate};

/// What the author check found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AuthorCheck {
    /// The pack id, when it read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pack_id: Option<String>,
    /// Whether nothing is missing.
    pub ok: bool,
    /// Validation faults (author-check fails while the pack does not validate).
    pub faults: Vec<PackFault>,
    /// What is missing, one line each.
    pub missing: Vec<Missing>,
}

/// One thing an author still owes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Missing {
    /// The file.
    pub file: String,
    /// JSON pointer.
    pub path: String,
    /// `preview`, `verify`, `compensate`, `wording`, `reviewed`, `description`, `unused`, `demo`.
    pub what: String,
    /// In words.
    pub message: String,
}

/// Author-checks the pack at `root`.
pub fn author_check(root: &Path) -> AuthorCheck {
    let validation = validate::validate(root);
    let pack = match load(root) {
        Ok(p) => p,
        Err(_) => {
            return AuthorCheck {
                pack_id: None,
                ok: false,
                faults: validation.faults,
                missing: Vec::new(),
            };
        }
    };
    let mut missing = Vec::new();
    let mut owe = |file: &str, path: String, what: &str, message: String| {
        missing.push(Missing {
            file: file.into(),
            path,
            what: what.into(),
            message,
        });
    };
    if pack.manifest.description.trim().is_empty() {
        owe(
            "pack.yaml",
            "/description".into(),
            "description",
            "the pack has no description".into(),
        );
    }
    if pack.manifest.demo.is_none() {
        owe(
            "pack.yaml",
            "/demo".into(),
            "demo",
            "the pack has no demo (a script and the input of the case it opens)".into(),
        );
    }
    for (i, w) in pack.workers.iter().enumerate() {
        if w.description.trim().is_empty() {
            owe(
                "workers.yaml",
                format!("/workers/{i}/description"),
                "description",
                format!("worker `{}` has no description", w.id),
            );
        }
        if !w.reviewed {
            owe(
                "workers.yaml",
                format!("/workers/{i}/reviewed"),
                "reviewed",
                format!(
                    "worker `{}`'s mapping is not reviewed: check what it collects, then set `reviewed: true` (for a covered pack: `tollgate cover review apply`)",
                    w.id
                ),
            );
        }
    }
    for (i, a) in pack.actions.iter().enumerate() {
        for (what, text) in [
            ("description", &a.description),
            ("preview", &a.preview),
            ("verify", &a.verify),
            ("compensate", &a.compensate),
        ] {
            if text.trim().is_empty() {
                owe(
                    "actions.yaml",
                    format!("/actions/{i}/{what}"),
                    what,
                    format!("action `{}` does not say {}", a.id, owed(what)),
                );
            }
        }
        if a.sample_input.is_none() {
            owe(
                "actions.yaml",
                format!("/actions/{i}/sample_input"),
                "sample_input",
                format!(
                    "action `{}` has no `sample_input` for the adapter harness",
                    a.id
                ),
            );
        }
        if !pack.capabilities.iter().any(|c| c.action == a.id) {
            owe(
                "actions.yaml",
                format!("/actions/{i}"),
                "unused",
                format!("no capability wires action `{}`", a.id),
            );
        }
    }
    for (i, c) in pack.capabilities.iter().enumerate() {
        if c.wording.trim().is_empty() {
            owe(
                "capabilities.yaml",
                format!("/capabilities/{i}/wording"),
                "wording",
                format!("capability `{}` has no proposal wording", c.id),
            );
        }
        if !c.reviewed {
            owe(
                "capabilities.yaml",
                format!("/capabilities/{i}/reviewed"),
                "reviewed",
                format!(
                    "capability `{}`'s mapping is not reviewed: check its action, input and policy rule, then set `reviewed: true`",
                    c.id
                ),
            );
        }
    }
    AuthorCheck {
        pack_id: Some(pack.manifest.pack_id),
        ok: validation.ok && missing.is_empty(),
        faults: validation.faults,
        missing,
    }
}

fn owed(what: &str) -> &'static str {
    match what {
        "preview" => "what its preview shows (`preview`)",
        "verify" => "what verification checks after apply (`verify`)",
        "compensate" => "how a failed apply is compensated (`compensate`)",
        _ => "what it does (`description`)",
    }
}
