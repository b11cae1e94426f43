//! Embeds the SQL migrations of `migrations/` (SQLite) and `migrations/postgres/` (PostgreSQL),
//! in this crate so its package holds them, into the library.
//!
//! Every `NNNN_name.up.sql` must have a `NNNN_name.down.sql` beside it; the numbers must run
//! without gaps (SQLite's from 1; PostgreSQL's from its baseline, the version at which the
//! engine arrived, whose one migration creates the whole schema of that version). The
//! generated file holds one sorted table of `(version, name, up, down)` per engine, the SQL
//! included by `include_str!`, so adding a migration is adding two files per engine.

use std::fmt::Write as _;
use std::path::Path;
use std::{env, fs};

fn main() {
    // The manifest dir of this build, read when the script runs: `env!` would bake in the
    // path the script was compiled at, and a target dir shared by two checkouts reuses it.
    let manifest = env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| ".".into());
    let dir = Path::new(&manifest).join("migrations");
    let mut out = String::new();
    embed(&mut out, "MIGRATIONS", &dir, Some(1));
    embed(&mut out, "POSTGRES_MIGRATIONS", &dir.join("postgres"), None);
    let target = Path::new(&env::var("OUT_DIR").unwrap_or_default()).join("migrations.rs");
    if let Err(e) = fs::write(&target, out) {
        panic!("cannot write {}: {e}", target.display());
    }
}

/// Writes the table `name` of the migrations in `dir`, numbered from `first` (or from the
/// lowest number found) without gaps.
fn embed(out: &mut String, name: &str, dir: &Path, first: Option<u32>) {
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut ups = Vec::new();
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) => panic!("cannot read {}: {e}", dir.display()),
    };
    for entry in entries.flatten() {
        let file = entry.file_name().to_string_lossy().into_owned();
        println!("cargo:rerun-if-changed={}", entry.path().display());
        if let Some(stem) = file.strip_suffix(".up.sql") {
            ups.push(stem.to_string());
        }
    }
    ups.sort();
    let _ = writeln!(out, "/// `(version, name, up SQL, down SQL)`, in order.");
    let _ = writeln!(
        out,
        "pub(crate) const {name}: &[(u32, &str, &str, &str)] = &["
    );
    let mut expected = first;
    for stem in &ups {
        let Some((number, label)) = stem.split_once('_') else {
            panic!("migration `{stem}` must be named NNNN_name.up.sql");
        };
        let version: u32 = match number.parse() {
            Ok(v) => v,
            Err(_) => panic!("migration `{stem}` must start with its number"),
        };
        let want = expected.unwrap_or(version);
        assert_eq!(
            version,
            want,
            "migrations in {} must be numbered without gaps (found `{stem}`, expected {want})",
            dir.display()
        );
        expected = Some(version + 1);
        let up = dir.join(format!("{stem}.up.sql"));
        let down = dir.join(format!("{stem}.down.sql"));
        assert!(down.exists(), "migration `{stem}` has no down file");
        let _ = writeln!(
            out,
            "    ({version}, {label:?}, include_str!({:?}), include_str!({:?})),",
            up.display().to_string(),
            down.display().to_string()
        );
    }
    out.push_str("];\n");
}
