//! Pack roots: the packs `tollgate init intake_review` and both `tollgate packs scaffold`
//! kinds write, with one file replaced by the input. An input is `BASE/PATH` on its first line
//! (`init/pack.yaml`, `tx/rules/policy.dl`, ...) and the file's new text after it. The pack
//! validates, or every fault names a file of the pack (or the root, or `rules`), carries a
//! message and a help line, and points inside the file.
#![no_main]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use tollgate_gateway::packs::templates::{init, scaffold};
use tollgate_gateway::packs::validate::validate;

/// A written pack: its root and its files' paths under it with their original texts.
struct Base {
    name: &'static str,
    root: PathBuf,
    files: Vec<(String, String)>,
}

/// The three packs, written once per process under the temporary folder.
fn bases() -> &'static [Base] {
    static BASES: OnceLock<Vec<Base>> = OnceLock::new();
    BASES.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("tollgate-fuzz-packs-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let written = [
            ("init", init("intake_review", &dir.join("init"))),
            ("tx", scaffold("transactional", "fuzz_tx", &dir.join("tx"))),
            ("adv", scaffold("advisory", "fuzz_adv", &dir.join("adv"))),
        ];
        written
            .into_iter()
            .map(|(name, w)| {
                let w = w.unwrap_or_else(|e| panic!("cannot write the {name} pack: {e}"));
                let root = dir.join(name);
                assert!(validate(&root).ok, "the {name} pack does not validate");
                let files = w
                    .files
                    .into_iter()
                    .map(|f| {
                        let text = std::fs::read_to_string(root.join(&f)).unwrap_or_default();
                        (f, text)
                    })
                    .collect();
                Base { name, root, files }
            })
            .collect()
    })
}

fn write(path: &Path, text: &str) {
    if let Err(e) = std::fs::write(path, text) {
        panic!("cannot write {}: {e}", path.display());
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(input) = std::str::from_utf8(data) else {
        return;
    };
    let (target, text) = input.split_once('\n').unwrap_or((input, ""));
    let Some((base_name, path)) = target.split_once('/') else {
        return;
    };
    let Some(base) = bases().iter().find(|b| b.name == base_name) else {
        return;
    };
    let Some((_, original)) = base.files.iter().find(|(p, _)| p == path) else {
        return;
    };
    let file = base.root.join(path);
    write(&file, text);
    let report = validate(&base.root);
    write(&file, original);
    if report.ok {
        return;
    }
    assert!(!report.faults.is_empty(), "a refusal without a fault");
    for f in &report.faults {
        let lines = if f.file == path {
            Some(text.lines().count().max(1))
        } else {
            base.files
                .iter()
                .find(|(p, _)| *p == f.file)
                .map(|(_, t)| t.lines().count().max(1))
        };
        assert!(
            f.file == "." || f.file == "rules" || lines.is_some(),
            "a fault in `{}`, not a file of the pack: {f:?}",
            f.file
        );
        if let (Some(line), Some(n)) = (f.line, lines) {
            assert!(
                line != 0 && line <= n + 1,
                "line {line} outside `{}`'s {n}: {f:?}",
                f.file
            );
        }
        assert!(
            !f.message.trim().is_empty() && !f.help.trim().is_empty(),
            "a fault without a message or help: {f:?}"
        );
    }
});
