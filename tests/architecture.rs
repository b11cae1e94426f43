//! The house's shape, checked: no two modules of a crate import each other (a parent and its
//! own child excepted: a child reads its parent's items, the parent re-exports the child's).
//! A circle between siblings is how a module becomes a hidden hub; when this fails, move what
//! both need into a module below both (as `run_policy.rs` is below the runtime, replay and the
//! simulator). And the database is reached only through the store: no module but `store.rs`
//! and `gateway/src/store/` names a database engine's crate, so a second engine is added in one
//! place.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type ModPath = Vec<String>;

/// Every non-test module of a crate, by path (`["recorder", "write"]`), with its source.
fn modules(src: &Path) -> BTreeMap<ModPath, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let rel: PathBuf = path.strip_prefix(src).unwrap().with_extension("");
            let mut parts: ModPath = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if parts.iter().any(|p| p == "tests") {
                continue;
            }
            if matches!(
                parts.last().map(String::as_str),
                Some("lib" | "main" | "mod")
            ) {
                parts.pop();
            }
            let text = std::fs::read_to_string(&path).unwrap();
            out.insert(parts, code_of(&text));
        }
    }
    out
}

/// The source without comments and without an inline `mod tests { ... }` at its end.
fn code_of(text: &str) -> String {
    let text = match text.find("#[cfg(test)]\nmod tests {") {
        Some(at) => &text[..at],
        None => text,
    };
    text.lines()
        .map(|line| line.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The longest module path `path` starts with.
fn resolve(mods: &BTreeMap<ModPath, String>, path: &[String]) -> Option<ModPath> {
    (1..=path.len())
        .rev()
        .map(|n| path[..n].to_vec())
        .find(|p| mods.contains_key(p))
}

/// The modules `module` names through `crate::` or `super::` paths, `use` lists included.
fn imports(mods: &BTreeMap<ModPath, String>, module: &ModPath, code: &str) -> BTreeSet<ModPath> {
    let mut out = BTreeSet::new();
    for root in ["crate::", "super::"] {
        let base: ModPath = if root == "crate::" {
            Vec::new()
        } else {
            module[..module.len().saturating_sub(1)].to_vec()
        };
        for (at, _) in code.match_indices(root) {
            let before = code[..at].chars().last();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            let rest = &code[at + root.len()..];
            let path_end = rest
                .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                .unwrap_or(rest.len());
            let path: ModPath = rest[..path_end]
                .split("::")
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect();
            let mut targets = vec![path.clone()];
            // `crate::a::{b, c::d}`
            if rest[path_end..].starts_with('{') {
                let list = &rest[path_end + 1..];
                let list = &list[..list.find('}').unwrap_or(list.len())];
                for item in list.split(',') {
                    let mut full = path.clone();
                    full.extend(
                        item.split("::")
                            .map(str::trim)
                            .filter(|s| !s.is_empty())
                            .map(str::to_string),
                    );
                    targets.push(full);
                }
            }
            for target in targets {
                let mut full = base.clone();
                full.extend(target);
                if let Some(found) = resolve(mods, &full)
                    && found != *module
                {
                    out.insert(found);
                }
            }
        }
    }
    out
}

#[test]
fn no_two_modules_of_a_crate_import_each_other() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut circles = Vec::new();
    for krate in ["engine", "rules", "gateway", "cli"] {
        let mods = modules(&root.join(krate).join("src"));
        let deps: BTreeMap<&ModPath, BTreeSet<ModPath>> = mods
            .iter()
            .map(|(m, code)| (m, imports(&mods, m, code)))
            .collect();
        for (a, a_deps) in &deps {
            for b in a_deps {
                let related = a.starts_with(b) || b.starts_with(a);
                if *a < b && !related && deps.get(b).is_some_and(|d| d.contains(*a)) {
                    circles.push(format!("{krate}: {} <-> {}", a.join("/"), b.join("/")));
                }
            }
        }
        assert!(
            deps.len() > 5,
            "{krate}: the walk found its modules ({})",
            deps.len()
        );
    }
    assert!(
        circles.is_empty(),
        "modules that import each other:\n{}",
        circles.join("\n")
    );
}

/// The check itself finds a circle when there is one.
#[test]
fn the_circle_check_sees_a_circle() {
    let mut mods = BTreeMap::new();
    let a: ModPath = vec!["a".into()];
    let b: ModPath = vec!["b".into(), "c".into()];
    mods.insert(a.clone(), "use crate::b::c::Thing;".to_string());
    mods.insert(b.clone(), "use crate::{a::Other, x};".to_string());
    mods.insert(vec!["b".into()], String::new());
    assert!(imports(&mods, &a, &mods[&a]).contains(&b));
    assert!(imports(&mods, &b, &mods[&b]).contains(&a));
    let commented = code_of("// use crate::a::Other;\nfn f() {}");
    assert!(imports(&mods, &b, &commented).is_empty());
}

/// The database engines' crates, which only the store may name.
const ENGINE_CRATES: [&str; 3] = ["rusqlite", "postgres", "libsqlite3_sys"];

/// Every `.rs` file under `dir`, with its source.
fn sources(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                out.push((path, text));
            }
        }
    }
    out
}

/// The lines of `text` (comments aside) that name an engine's crate as a path (`rusqlite::`).
fn engine_uses(text: &str) -> Vec<String> {
    text.lines()
        .map(|line| line.split("//").next().unwrap_or(""))
        .filter(|code| {
            ENGINE_CRATES
                .iter()
                .any(|krate| code.contains(&format!("{krate}::")))
        })
        .map(|code| code.trim().to_string())
        .collect()
}

#[test]
fn only_the_store_names_a_database_engine() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let store = root.join("gateway/src/store");
    let mut found = Vec::new();
    let mut seen = 0;
    for krate in ["engine", "rules", "gateway", "cli"] {
        for (path, text) in sources(&root.join(krate).join("src")) {
            seen += 1;
            if path.starts_with(&store) || path == store.with_extension("rs") {
                continue;
            }
            for line in engine_uses(&text) {
                found.push(format!("{}: {line}", path.display()));
            }
        }
    }
    assert!(seen > 100, "the walk found the sources ({seen})");
    assert!(
        found.is_empty(),
        "outside the store, use the store's own types (store::Connection, Row, \
         params!, Value) instead of an engine's crate:\n{}",
        found.join("\n")
    );
}

/// The engine check sees a use, and not a comment.
#[test]
fn the_engine_check_sees_a_use() {
    assert_eq!(
        engine_uses("use rusqlite::Connection;\n// rusqlite::Row in a comment\nfn f() {}"),
        vec!["use rusqlite::Connection;".to_string()]
    );
    assert!(engine_uses("let c = store::Connection;").is_empty());
}
