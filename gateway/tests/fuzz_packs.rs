//! Pack roots from generated text (issue 19): the shipped `intake_review` template and both
//! scaffolds, one file at a time replaced by a byte-level mutation of itself, a token soup in
//! the pack vocabulary, or any string. Whatever the files say, `packs::validate` (every YAML
//! file against its schema, the rule files compiled, the references checked) answers within a
//! bound, never panics, and a refusal names at least one fault, each in a file of the pack and,
//! when it has a line, a line inside that file. CI runs `PROPTEST_CASES` (1,000) per property;
//! RELIABILITY.md has the offline figures.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../../tests/fuzz_support/mod.rs"]
mod fuzz_support;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use proptest::prelude::*;
use tollgate_gateway::packs::templates::{init, scaffold};
use tollgate_gateway::packs::validate::validate;

const BOUND: Duration = Duration::from_secs(10);

/// A pack root: each file's path under the root and its text.
type Files = Vec<(String, String)>;

/// The packs the cases start from, read once from what `tollgate init` and `tollgate packs
/// scaffold` write.
fn bases() -> &'static [Files] {
    static BASES: OnceLock<Vec<Files>> = OnceLock::new();
    BASES.get_or_init(|| {
        let dir = scratch();
        let mut out = Vec::new();
        let written = [
            init("intake_review", &dir.join("init")).map(|w| (dir.join("init"), w.files)),
            scaffold("transactional", "fuzz_tx", &dir.join("tx"))
                .map(|w| (dir.join("tx"), w.files)),
            scaffold("advisory", "fuzz_adv", &dir.join("adv")).map(|w| (dir.join("adv"), w.files)),
        ];
        for w in written {
            let (root, files) = w.unwrap();
            let report = validate(&root);
            assert!(
                report.ok,
                "{} does not validate: {:?}",
                root.display(),
                report.faults
            );
            out.push(
                files
                    .into_iter()
                    .map(|f| {
                        let text = std::fs::read_to_string(root.join(&f)).unwrap();
                        (f, text)
                    })
                    .collect(),
            );
        }
        let _ = std::fs::remove_dir_all(&dir);
        out
    })
}

/// A fresh folder under the system's temporary one.
fn scratch() -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "tollgate-fuzz-packs-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn write(root: &Path, files: &Files) {
    for (path, text) in files {
        let to = root.join(path);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::write(to, text).unwrap();
    }
}

/// Writes `base` with the file at `which` (its index among the YAML and rule files) holding
/// `text`, and validates it.
fn check(base: usize, which: prop::sample::Index, text: String) -> Result<(), TestCaseError> {
    let mut files = bases()[base].clone();
    let edited: Vec<usize> = (0..files.len())
        .filter(|i| files[*i].0.ends_with(".yaml") || files[*i].0.ends_with(".dl"))
        .collect();
    let at = edited[which.index(edited.len())];
    files[at].1 = text;
    let lines: Vec<(String, usize)> = files
        .iter()
        .map(|(p, t)| (p.clone(), t.lines().count().max(1)))
        .collect();
    let root = scratch();
    write(&root, &files);
    let checked = root.clone();
    let outcome = fuzz_support::checked(BOUND, move || {
        let report = validate(&checked);
        if report.ok {
            return Ok(());
        }
        if report.faults.is_empty() {
            return Err("a refusal without a fault".to_string());
        }
        for f in &report.faults {
            let in_pack =
                f.file == "." || f.file == "rules" || lines.iter().any(|(p, _)| *p == f.file);
            if !in_pack {
                return Err(format!(
                    "a fault in `{}`, not a file of the pack: {f:?}",
                    f.file
                ));
            }
            if let (Some(line), Some((_, n))) = (f.line, lines.iter().find(|(p, _)| *p == f.file))
                && (line == 0 || line > n + 1)
            {
                return Err(format!("line {line} outside `{}`'s {n}: {f:?}", f.file));
            }
            if f.message.trim().is_empty() || f.help.trim().is_empty() {
                return Err(format!("a fault without a message or help: {f:?}"));
            }
        }
        Ok(())
    });
    let _ = std::fs::remove_dir_all(&root);
    outcome
}

const TOKENS: &[&str] = &[
    "pack_id: ",
    "kind: ",
    "engine_id: ",
    "engine_version: ",
    "workers:",
    "actions:",
    "capabilities:",
    "- id: ",
    "adapter: ",
    "produces: [",
    "input: ",
    "policy_rule: ",
    "wording: ",
    "reviewed: true",
    "action: ",
    "transactional",
    "advisory",
    "intake_review",
    "0.1.0",
    "adapters/triage.py",
    "{case.title}",
    "{input.queue}",
    "rule ",
    ":- ",
    "permitted(",
    "intake.route-permitted",
    "not ",
    ").",
];

/// One file of a base pack, mutated a few characters at a time.
fn mutated_file() -> impl Strategy<Value = (usize, prop::sample::Index, String)> {
    (0..3usize, any::<prop::sample::Index>()).prop_flat_map(|(base, which)| {
        let files: &'static Files = &bases()[base];
        let edited: Vec<&'static str> = files
            .iter()
            .filter(|(p, _)| p.ends_with(".yaml") || p.ends_with(".dl"))
            .map(|(_, t)| t.as_str())
            .collect();
        let text = edited[which.index(edited.len())];
        fuzz_support::mutated(vec![text]).prop_map(move |t| (base, which, t))
    })
}

proptest! {
    #[test]
    fn a_pack_with_a_mutated_file_validates_or_names_its_faults((base, which, text) in mutated_file()) {
        check(base, which, text)?;
    }

    #[test]
    fn a_pack_file_of_pack_tokens_validates_or_names_its_faults(
        base in 0..3usize,
        which in any::<prop::sample::Index>(),
        text in fuzz_support::yaml_soup(TOKENS, 60),
    ) {
        check(base, which, text)?;
    }

    #[test]
    fn a_pack_file_of_any_string_validates_or_names_its_faults(
        base in 0..3usize,
        which in any::<prop::sample::Index>(),
        text in ".{0,200}",
    ) {
        check(base, which, text)?;
    }
}
