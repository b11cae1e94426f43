//! Soufflé compatibility: every case under `fixtures/souffle/` is run through
//! `tollgate rules eval program.dl -F facts -D out` (the mirror of
//! `souffle -F facts -D out program.dl`), and each `out/<rel>.csv` must be
//! byte-identical to `expected/<rel>.csv`. The expected files were derived by hand
//! from Soufflé's documented semantics; each `program.dl` says what it checks.
//!
//! All cases run; the failures are reported together at the end.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Fewer cases than this means the fixtures went missing, not that all is well.
const MIN_CASES: usize = 36;

#[test]
fn souffle_fixtures_match_expected_outputs() {
    let root = fixtures_root();
    let cases = match case_dirs(&root) {
        Ok(cases) => cases,
        Err(err) => panic!("cannot list {}: {err}", root.display()),
    };
    assert!(
        cases.len() >= MIN_CASES,
        "expected at least {MIN_CASES} cases in {}, found {}",
        root.display(),
        cases.len()
    );

    let failures: Vec<String> = cases
        .iter()
        .filter_map(|case| run_case(case).err())
        .collect();

    if !failures.is_empty() {
        panic!(
            "{} of {} Soufflé compatibility cases failed:\n\n{}",
            failures.len(),
            cases.len(),
            failures.join("\n")
        );
    }
}

fn fixtures_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    // The test belongs to the CLI package; the fixtures live at the workspace root.
    let workspace = manifest.parent().unwrap_or(manifest);
    workspace.join("fixtures").join("souffle")
}

fn case_dirs(root: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut dirs = Vec::new();
    for entry in fs::read_dir(root)? {
        let path = entry?.path();
        if path.is_dir() {
            dirs.push(path);
        }
    }
    dirs.sort();
    Ok(dirs)
}

fn case_name(case: &Path) -> String {
    case.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| case.display().to_string())
}

/// Runs one case in a fresh output folder, which is removed afterwards.
fn run_case(case: &Path) -> Result<(), String> {
    let name = case_name(case);
    let out = std::env::temp_dir().join(format!("tollgate-souffle-{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&out);
    if let Err(err) = fs::create_dir_all(&out) {
        return Err(format!(
            "== {name}\ncannot create {}: {err}\n",
            out.display()
        ));
    }
    let result = check_case(case, &out).map_err(|problems| format!("== {name}\n{problems}"));
    let _ = fs::remove_dir_all(&out);
    result
}

fn check_case(case: &Path, out: &Path) -> Result<(), String> {
    let output = Command::new(env!("CARGO_BIN_EXE_tollgate"))
        .args(["rules", "eval"])
        .arg(case.join("program.dl"))
        .arg("-F")
        .arg(case.join("facts"))
        .arg("-D")
        .arg(out)
        .output()
        .map_err(|err| format!("cannot run tollgate: {err}\n"))?;
    if !output.status.success() {
        return Err(format!(
            "`tollgate rules eval` exited with {}\n--- stderr\n{}--- stdout\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr),
            String::from_utf8_lossy(&output.stdout)
        ));
    }

    let expected_dir = case.join("expected");
    let expected = csv_files(&expected_dir)
        .map_err(|err| format!("cannot list {}: {err}\n", expected_dir.display()))?;
    let produced =
        csv_files(out).map_err(|err| format!("cannot list {}: {err}\n", out.display()))?;

    let mut problems = String::new();
    for missing in expected.difference(&produced) {
        problems.push_str(&format!("missing output file {missing}\n"));
    }
    for extra in produced.difference(&expected) {
        problems.push_str(&format!("unexpected output file {extra}\n"));
    }
    for file in expected.intersection(&produced) {
        let want = read(&expected_dir.join(file))?;
        let got = read(&out.join(file))?;
        if want != got {
            problems.push_str(&format!("{file} differs (- expected, + produced):\n"));
            problems.push_str(&line_diff(
                &String::from_utf8_lossy(&want),
                &String::from_utf8_lossy(&got),
            ));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems)
    }
}

/// Names of the `.csv` files directly in `dir`.
fn csv_files(dir: &Path) -> std::io::Result<BTreeSet<String>> {
    let mut names = BTreeSet::new();
    for entry in fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_file()
            && path.extension().is_some_and(|ext| ext == "csv")
            && let Some(name) = path.file_name()
        {
            names.insert(name.to_string_lossy().into_owned());
        }
    }
    Ok(names)
}

fn read(path: &Path) -> Result<Vec<u8>, String> {
    fs::read(path).map_err(|err| format!("cannot read {}: {err}\n", path.display()))
}

/// A line diff (longest common subsequence), each line shown with `{:?}` so
/// tabs, empty fields and a missing final newline are visible. The files were
/// compared as bytes; the diff is only for reading.
fn line_diff(want: &str, got: &str) -> String {
    let a: Vec<&str> = want.split_inclusive('\n').collect();
    let b: Vec<&str> = got.split_inclusive('\n').collect();
    // lcs[i][j] = length of the longest common subsequence of a[i..] and b[j..].
    let mut lcs = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let mut diff = String::new();
    let mut changed = false;
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            diff.push_str(&format!("    {:?}\n", a[i]));
            i += 1;
            j += 1;
        } else if i < a.len() && (j == b.len() || lcs[i + 1][j] >= lcs[i][j + 1]) {
            diff.push_str(&format!("  - {:?}\n", a[i]));
            changed = true;
            i += 1;
        } else {
            diff.push_str(&format!("  + {:?}\n", b[j]));
            changed = true;
            j += 1;
        }
    }
    if !changed {
        diff.push_str("    (the bytes differ where they are not valid UTF-8)\n");
    }
    diff
}
