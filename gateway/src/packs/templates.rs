//! New packs: `tollgate init TEMPLATE --output DIR` writes a complete, realistic pack
//! (`intake_review`), and `tollgate packs scaffold --kind KIND --pack-id ID --output DIR` writes
//! the skeleton of a new one — it validates, passes the adapter harness, and fails author-check
//! until its author says what its action previews, verifies and compensates and reviews its
//! mapping.

use std::path::{Path, PathBuf};

use serde::Serialize;

/// The generic record-keeping dry-run adapter both the template and the scaffold start from.
const RECORDS_ADAPTER: &str = include_str!("templates/common/records.py");

/// The templates `tollgate init` knows.
pub const TEMPLATES: [&str; 1] = ["intake_review"];

/// The kinds `tollgate packs scaffold` knows.
pub const KINDS: [&str; 2] = ["transactional", "advisory"];

/// One file of a template: its path under the root, its text, whether it is executable.
type TemplateFile = (&'static str, &'static str, bool);

const INTAKE_REVIEW: [TemplateFile; 8] = [
    (
        "pack.yaml",
        include_str!("templates/intake_review/pack.yaml"),
        false,
    ),
    (
        "workers.yaml",
        include_str!("templates/intake_review/workers.yaml"),
        false,
    ),
    (
        "actions.yaml",
        include_str!("templates/intake_review/actions.yaml"),
        false,
    ),
    (
        "capabilities.yaml",
        include_str!("templates/intake_review/capabilities.yaml"),
        false,
    ),
    (
        "rules/intake.dl",
        include_str!("templates/intake_review/rules/intake.dl"),
        false,
    ),
    (
        "adapters/triage.py",
        include_str!("templates/intake_review/adapters/triage.py"),
        true,
    ),
    ("adapters/intake_desk.py", RECORDS_ADAPTER, true),
    (
        "demo.sh",
        include_str!("templates/intake_review/demo.sh"),
        true,
    ),
];

/// What was written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Written {
    /// The pack root.
    pub root: String,
    /// The pack id.
    pub pack_id: String,
    /// The files, relative to the root.
    pub files: Vec<String>,
    /// What to do next.
    pub next: Vec<String>,
}

/// Why nothing was written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    /// No such template or kind.
    #[error("{0}")]
    Unknown(String),
    /// The output folder holds files already.
    #[error(
        "`{0}` exists and is not empty\n  help: choose a new folder for --output (nothing was written)"
    )]
    NotEmpty(String),
    /// The pack id is not an id.
    #[error(
        "`{0}` is not a pack id\n  help: use lower-case letters, digits and `_`, starting with a letter"
    )]
    BadId(String),
    /// Writing failed.
    #[error("cannot write `{path}`: {message}")]
    Io {
        /// The file.
        path: String,
        /// Why.
        message: String,
    },
}

fn valid_id(id: &str) -> bool {
    let mut chars = id.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && id.len() <= 64
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

fn empty_or_absent(dir: &Path) -> bool {
    match std::fs::read_dir(dir) {
        Ok(mut entries) => entries.next().is_none(),
        Err(_) => !dir.exists(),
    }
}

fn write_all(dir: &Path, files: &[(String, String, bool)]) -> Result<(), TemplateError> {
    for (rel, text, exec) in files {
        let path = dir.join(rel);
        let io = |e: std::io::Error| TemplateError::Io {
            path: path.display().to_string(),
            message: e.to_string(),
        };
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(io)?;
        }
        std::fs::write(&path, text).map_err(io)?;
        #[cfg(unix)]
        if *exec {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).map_err(io)?;
        }
        #[cfg(not(unix))]
        let _ = exec;
    }
    Ok(())
}

fn next_steps(root: &Path) -> Vec<String> {
    let r = root.display();
    vec![
        format!("tollgate packs validate --pack-root {r}"),
        format!("tollgate packs author-check --pack-root {r}"),
        format!("tollgate packs adapter-dry-run --pack-root {r}"),
        format!("TOLLGATE=$(command -v tollgate) {r}/demo.sh   # prints a case_id"),
        "tollgate cases inspect CASE_ID".to_string(),
    ]
}

/// Writes template `name` into `output` (absent or empty).
pub fn init(name: &str, output: &Path) -> Result<Written, TemplateError> {
    let files: &[TemplateFile] = match name {
        "intake_review" => &INTAKE_REVIEW,
        other => {
            return Err(TemplateError::Unknown(format!(
                "no template `{other}`\n  help: the templates are {}",
                TEMPLATES.join(", ")
            )));
        }
    };
    if !empty_or_absent(output) {
        return Err(TemplateError::NotEmpty(output.display().to_string()));
    }
    let owned: Vec<(String, String, bool)> = files
        .iter()
        .map(|(p, t, x)| ((*p).to_string(), (*t).to_string(), *x))
        .collect();
    write_all(output, &owned)?;
    let root = super::absolute_root(output);
    Ok(Written {
        next: next_steps(&root),
        root: root.display().to_string(),
        pack_id: name.to_string(),
        files: owned.into_iter().map(|(p, _, _)| p).collect(),
    })
}

/// Writes the skeleton of a new pack of `kind` called `pack_id` into `output`.
pub fn scaffold(kind: &str, pack_id: &str, output: &Path) -> Result<Written, TemplateError> {
    if !KINDS.contains(&kind) {
        return Err(TemplateError::Unknown(format!(
            "no pack kind `{kind}`\n  help: the kinds are {}",
            KINDS.join(", ")
        )));
    }
    if !valid_id(pack_id) {
        return Err(TemplateError::BadId(pack_id.to_string()));
    }
    if !empty_or_absent(output) {
        return Err(TemplateError::NotEmpty(output.display().to_string()));
    }
    let files = scaffold_files(kind, pack_id);
    write_all(output, &files)?;
    let root: PathBuf = super::absolute_root(output);
    Ok(Written {
        next: next_steps(&root),
        root: root.display().to_string(),
        pack_id: pack_id.to_string(),
        files: files.into_iter().map(|(p, _, _)| p).collect(),
    })
}

fn scaffold_files(kind: &str, id: &str) -> Vec<(String, String, bool)> {
    let pack = format!(
        "# The {id} pack ({kind}). Fill in `description`, then the TODOs of actions.yaml and\n\
         # capabilities.yaml: `tollgate packs author-check` lists what is still owed.\n\
         pack_id: {id}\nkind: {kind}\nengine_id: {id}\nengine_version: 0.1.0\ntitle: {id}\ndescription: \"\"\n\
         demo:\n  script: demo.sh\n  title: A first {id} case\n  capability: record_subject\n  input:\n    subject: Hello from the {id} scaffold\n"
    );
    let workers = "workers:\n  - id: reader\n    description: Reads the case input and records its subject and the subject's length.\n    adapter: adapters/collect.py\n    produces: [subject, length]\n".to_string();
    let actions = "actions:\n  - id: record_subject\n    description: Records the case's subject in the system of record.\n    adapter: adapters/records.py\n    input: [subject]\n    # TODO: say what the preview shows, what verify checks and how a failed apply is undone.\n    preview: \"\"\n    verify: \"\"\n    compensate: \"\"\n    sample_input: {subject: a sample subject}\n".to_string();
    let capabilities = "capabilities:\n  - id: record_subject\n    action: record_subject\n    policy_rule: subject-present\n    wording: \"Record the subject “{input.subject}”\"\n    input:\n      subject: \"{evidence.reader.subject}\"\n    # TODO: check the action, input and policy rule, then set reviewed: true.\n    reviewed: false\n".to_string();
    let rules = format!(
        "// The {id} pack's policy over the case vocabulary (case, case_input, evidence,\n\
         // evidence_number, proposal, proposal_input, preview_change → permit, deny).\n\n\
         // A subject is recorded when the worker found one.\n\
         // @id subject-present\n\
         permit(p) :- proposal(p, c, \"record_subject\", _), evidence_number(c, \"reader\", \"length\", n), n > 0.\n\n\
         // Subjects longer than 200 characters are refused.\n\
         // @id subject-too-long\n\
         deny(p, \"the subject is longer than 200 characters\") :- proposal(p, c, _, _), evidence_number(c, \"reader\", \"length\", n), n > 200.\n"
    );
    let demo = format!(
        "#!/bin/sh\n# Opens the {id} demo case, runs it up to approval and prints its case_id.\n\
         set -eu\nhere=$(cd \"$(dirname \"$0\")\" && pwd)\nexec \"${{TOLLGATE:-tollgate}}\" cases demo --pack-root \"$here\" \"$@\"\n"
    );
    vec![
        ("pack.yaml".into(), pack, false),
        ("workers.yaml".into(), workers, false),
        ("actions.yaml".into(), actions, false),
        ("capabilities.yaml".into(), capabilities, false),
        ("rules/policy.dl".into(), rules, false),
        (
            "adapters/collect.py".into(),
            include_str!("templates/scaffold/collect.py").into(),
            true,
        ),
        ("adapters/records.py".into(), RECORDS_ADAPTER.into(), true),
        ("demo.sh".into(), demo, true),
    ]
}
