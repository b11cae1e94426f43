//! What the end-to-end tests share: the workspace root and running the `tollgate` binary.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The workspace root (tests run the binary from there, as a user would).
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// Runs `tollgate ARGS...` from the workspace root.
pub fn tollgate(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tollgate"))
        .current_dir(root())
        .args(args)
        .output()
        .expect("run tollgate")
}

/// The command's standard output as text.
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The command's standard error as text.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}
