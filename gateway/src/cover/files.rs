//! The walk of the inspected folder: Python files read as text, in path order (so reports are
//! the same from one machine to the next); what cannot or must not be read is skipped and
//! counted.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::CoverError;

/// Larger Python files are skipped (generated code, vendored bundles).
pub const MAX_FILE_BYTES: u64 = 2 * 1024 * 1024;

/// Folders never entered: caches, virtual environments, version control.
const IGNORED_DIRS: &[&str] = &[
    ".git",
    ".hg",
    ".svn",
    "__pycache__",
    ".venv",
    "venv",
    ".tox",
    ".nox",
    ".mypy_cache",
    ".pytest_cache",
    ".ruff_cache",
    "node_modules",
    "site-packages",
    ".tollgate",
];

/// Files and folders skipped, by reason.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Skipped {
    /// Symbolic links back into a folder already being walked.
    pub symlink_loop: u64,
    /// Links (or files) leading outside the inspected folder.
    pub outside_root: u64,
    /// `.py` files holding NUL bytes or text that is not UTF-8.
    pub binary: u64,
    /// `.py` files over [`MAX_FILE_BYTES`].
    pub oversized: u64,
    /// Entries that could not be read (permissions, races).
    pub unreadable: u64,
}

/// A Python file read.
pub struct SourceFile {
    /// Relative to the root, `/`-separated.
    pub path: String,
    /// The dotted module (`pkg/mod.py` → `pkg.mod`, `pkg/__init__.py` → `pkg`).
    pub module: String,
    /// Its text.
    pub text: String,
}

/// What the walk found.
pub struct Walked {
    /// Python files, by path.
    pub files: Vec<SourceFile>,
    /// What was skipped.
    pub skipped: Skipped,
}

/// Walks `root` for Python files.
pub fn walk(root: &Path) -> Result<Walked, CoverError> {
    let fail = |reason: String| CoverError::Root {
        path: root.to_path_buf(),
        reason,
    };
    let canonical = root.canonicalize().map_err(|e| fail(e.to_string()))?;
    if !canonical.is_dir() {
        return Err(fail("not a folder".into()));
    }
    let mut walked = Walked {
        files: Vec::new(),
        skipped: Skipped::default(),
    };
    let mut open = HashSet::new();
    visit(&canonical, &canonical, "", &mut open, &mut walked);
    walked.files.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(walked)
}

/// `dir` (canonical) at `rel` from the root; `open` holds the canonical folders on the way
/// down, so a link back to one of them is a loop.
fn visit(root: &Path, dir: &Path, rel: &str, open: &mut HashSet<PathBuf>, w: &mut Walked) {
    if !open.insert(dir.to_path_buf()) {
        w.skipped.symlink_loop += 1;
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        w.skipped.unreadable += 1;
        open.remove(dir);
        return;
    };
    let mut names: Vec<(String, PathBuf)> = entries
        .filter_map(Result::ok)
        .map(|e| (e.file_name().to_string_lossy().into_owned(), e.path()))
        .collect();
    names.sort();
    for (name, path) in names {
        let child_rel = if rel.is_empty() {
            name.clone()
        } else {
            format!("{rel}/{name}")
        };
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            w.skipped.unreadable += 1;
            continue;
        };
        let target = if meta.file_type().is_symlink() {
            match path.canonicalize() {
                Ok(t) => t,
                Err(_) => {
                    w.skipped.unreadable += 1;
                    continue;
                }
            }
        } else {
            path.clone()
        };
        if !target.starts_with(root) {
            w.skipped.outside_root += 1;
            continue;
        }
        if target.is_dir() {
            if IGNORED_DIRS.contains(&name.as_str()) || name.ends_with(".egg-info") {
                continue;
            }
            if open.contains(&target) {
                w.skipped.symlink_loop += 1;
                continue;
            }
            visit(root, &target, &child_rel, open, w);
        } else if name.ends_with(".py") {
            read(&target, child_rel, w);
        }
    }
    open.remove(dir);
}

fn read(path: &Path, rel: String, w: &mut Walked) {
    let Ok(meta) = std::fs::metadata(path) else {
        w.skipped.unreadable += 1;
        return;
    };
    if meta.len() > MAX_FILE_BYTES {
        w.skipped.oversized += 1;
        return;
    }
    let Ok(bytes) = std::fs::read(path) else {
        w.skipped.unreadable += 1;
        return;
    };
    if bytes.contains(&0) {
        w.skipped.binary += 1;
        return;
    }
    let Ok(text) = String::from_utf8(bytes) else {
        w.skipped.binary += 1;
        return;
    };
    let Some(module) = module_of(&rel) else {
        // Not importable under a dotted name (`my-script.py`): still read, named by path.
        w.files.push(SourceFile {
            module: rel.trim_end_matches(".py").replace('/', "."),
            path: rel,
            text,
        });
        return;
    };
    w.files.push(SourceFile {
        path: rel,
        module,
        text,
    });
}

/// The dotted module of a relative path, when every part is an identifier.
pub fn module_of(rel: &str) -> Option<String> {
    let stem = rel.strip_suffix(".py")?;
    let mut parts: Vec<&str> = stem.split('/').collect();
    if parts.last() == Some(&"__init__") {
        parts.pop();
    }
    let ok = !parts.is_empty()
        && parts.iter().all(|p| {
            let mut c = p.chars();
            c.next().is_some_and(|f| f == '_' || f.is_alphabetic())
                && c.all(|x| x == '_' || x.is_alphanumeric())
        });
    ok.then(|| parts.join("."))
}
