//! The files a pack test reads besides itself: test files found under folders, user pack
//! programs and envelope files, with their problems as located [`TestFileError`]s.

use std::path::{Path, PathBuf};

use tollgate_engine::Fact;
use tollgate_engine::diag::Source;

use super::{FileInput, TestFileError, spec};

/// Loads the envelope files of a case (paths relative to the test file) and compiles them to
/// facts, each with its envelope as origin (`envelope:ID@VERSION`).
pub(super) fn envelope_facts<'a>(
    input: &FileInput<'_>,
    paths: impl Iterator<Item = &'a String>,
) -> Result<Vec<(Fact, String)>, Vec<TestFileError>> {
    let mut files = Vec::new();
    for rel in paths {
        let full = input.base.join(rel);
        let text = std::fs::read_to_string(&full).map_err(|e| {
            vec![
                TestFileError::new(
                    input.file,
                    spec::locate(input.text, rel),
                    format!("cannot read envelope file `{}`: {e}", full.display()),
                )
                .with_help("`envelopes` lists envelope YAML files, relative to the test file"),
            ]
        })?;
        files.push((full.display().to_string(), text));
    }
    if files.is_empty() {
        return Ok(Vec::new());
    }
    let set = crate::envelope::load_envelopes(&files).map_err(|errs| {
        errs.located()
            .into_iter()
            .map(|l| TestFileError {
                file: l.file,
                line: Some(l.line),
                column: Some(l.column),
                message: l.message,
                help: l.help,
            })
            .collect::<Vec<_>>()
    })?;
    Ok(set
        .facts()
        .iter()
        .map(|(f, origin)| (f.clone(), origin.to_string()))
        .collect())
}

/// Finds the test files under `paths`: files as given, folders searched recursively for
/// `*.test.yaml`, in path order.
pub fn collect_test_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>, Vec<TestFileError>> {
    let mut out = Vec::new();
    let mut errors = Vec::new();
    for p in paths {
        let name = p.display().to_string();
        if p.is_dir() {
            let before = out.len();
            if let Err(m) = walk(p, &mut out) {
                errors.push(TestFileError::new(&name, None, m));
            } else if out.len() == before {
                errors.push(
                    TestFileError::new(
                        &name,
                        None,
                        format!("no `*.test.yaml` files under `{name}`"),
                    )
                    .with_help("name pack test files `NAME.test.yaml`"),
                );
            }
        } else if p.extension().is_some_and(|x| x == "dl") {
            // A program, not a test file: reading it as YAML would report a type mismatch.
            errors.push(
                TestFileError::new(
                    &name,
                    None,
                    format!("`{name}` is a Datalog program, not a pack test file"),
                )
                .with_help(format!(
                    "check a program with `tollgate rules check {name}`; test it with a \
                     `NAME.test.yaml` file whose `program:` names it (see rules/README.md)"
                )),
            );
        } else if p.is_file() {
            out.push(p.clone());
        } else {
            errors.push(
                TestFileError::new(&name, None, format!("`{name}` does not exist"))
                    .with_help("give test files, or folders to search for `*.test.yaml`"),
            );
        }
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(errors)
    }
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), String> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("cannot read `{}`: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    for e in entries {
        if e.is_dir() {
            walk(&e, out)?;
        } else if e
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.ends_with(".test.yaml"))
        {
            out.push(e);
        }
    }
    Ok(())
}

/// The `.dl` files of a program path: the file itself, or a folder's `*.dl` files (recursively,
/// in path order).
pub(super) fn dl_files(path: &Path) -> Result<Vec<PathBuf>, String> {
    if path.is_file() {
        return Ok(vec![path.to_path_buf()]);
    }
    if !path.is_dir() {
        return Err(format!("program `{}` does not exist", path.display()));
    }
    let mut out = Vec::new();
    let mut stack = vec![path.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let entries =
            std::fs::read_dir(&dir).map_err(|e| format!("cannot read `{}`: {e}", dir.display()))?;
        for e in entries.filter_map(Result::ok).map(|e| e.path()) {
            if e.is_dir() {
                stack.push(e);
            } else if e.extension().is_some_and(|x| x == "dl") {
                out.push(e);
            }
        }
    }
    out.sort();
    if out.is_empty() {
        return Err(format!("no `.dl` files in `{}`", path.display()));
    }
    Ok(out)
}

pub(super) fn diagnostics(
    source: &Source,
    diags: &[tollgate_engine::Diagnostic],
) -> Vec<TestFileError> {
    diags
        .iter()
        .filter(|d| d.is_error())
        .map(|d| {
            let l = d.located(source);
            TestFileError {
                file: l.file,
                line: Some(l.line),
                column: Some(l.column),
                message: format!("{} [{}]", l.message, l.code),
                help: l.help,
            }
        })
        .collect()
}
