//! Embeds the SQL migrations of `migrations/` (in this crate, so its package holds them) into
//! the library.
//!
//! Every `NNNN_name.up.sql` must have a `NNNN_name.down.sql` beside it; the numbers must run
//! 1, 2, 3... without gaps. The generated file is a sorted table of
//! `(version, name, up, down)` with the SQL included by `include_str!`, so adding a migration
//! is adding two files.

use std::fmt::Write as _;
use std::path::Path;
use std::{env, fs};

fn main() {
    // The manifest dir of this build, read when the script runs: `env!` would bake in the
    // path the script was compiled at, and a target dir shared by two checkouts reuses it.
    let manifest = env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| ".".into());
    let dir = Path::new(&manifest).join("migrations");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut ups = Vec::new();
    let entries = match fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(e) => panic!("cannot read {}: {e}", dir.display()),
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        println!("cargo:rerun-if-changed={}", entry.path().display());
        if let Some(stem) = name.strip_suffix(".up.sql") {
            ups.push(stem.to_string());
        }
    }
    ups.sort();
    let mut out = String::from("/// `(version, name, up SQL, down SQL)`, in order.\n");
    out.push_str("pub(crate) const MIGRATIONS: &[(u32, &str, &str, &str)] = &[\n");
    for (i, stem) in ups.iter().enumerate() {
        let Some((number, name)) = stem.split_once('_') else {
            panic!("migration `{stem}` must be named NNNN_name.up.sql");
        };
        let version: u32 = match number.parse() {
            Ok(v) => v,
            Err(_) => panic!("migration `{stem}` must start with its number"),
        };
        assert_eq!(
            version as usize,
            i + 1,
            "migrations must be numbered 1, 2, 3... without gaps (found `{stem}`)"
        );
        let up = dir.join(format!("{stem}.up.sql"));
        let down = dir.join(format!("{stem}.down.sql"));
        assert!(down.exists(), "migration `{stem}` has no down file");
        let _ = writeln!(
            out,
            "    ({version}, {name:?}, include_str!({:?}), include_str!({:?})),",
            up.display().to_string(),
            down.display().to_string()
        );
    }
    out.push_str("];\n");
    let target = Path::new(&env::var("OUT_DIR").unwrap_or_default()).join("migrations.rs");
    if let Err(e) = fs::write(&target, out) {
        panic!("cannot write {}: {e}", target.display());
    }
}
