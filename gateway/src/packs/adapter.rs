//! Running an adapter: an executable of the pack (any language) given one JSON request on stdin
//! (`tollgate.adapter/v1`: the operation, the mode, the action, the input, an idempotency key and
//! a state folder) that answers one JSON object on stdout. It runs with a cleared environment
//! (only `PATH`, `LANG` and `TOLLGATE_ADAPTER_MODE`: no token, no provider key), in the pack
//! root, under a time limit; its answer is capped in size.
//!
//! The operations: `collect` (a worker: `{"evidence": {KEY: VALUE}}`), `preview`
//! (`{"changes": [{"target", "field", "before", "after"}], "summary"}`), `apply`
//! (`{"receipt": {...}, "applied": bool}`; the same idempotency key applied twice has one
//! effect), `verify` (`{"verified": bool, "state": ...}`) and `compensate`
//! (`{"compensated": bool}`). Any operation may answer `{"error": "..."}` or exit non-zero.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

/// The protocol every request names.
pub const PROTOCOL: &str = "tollgate.adapter/v1";
/// How long an adapter may run.
pub const TIME_LIMIT: Duration = Duration::from_secs(30);
/// The largest answer read.
const ANSWER_LIMIT: u64 = 1024 * 1024;

/// `dry_run` (the default: effects stay in the state folder) or `real`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Effects stay in the adapter's state folder.
    #[default]
    DryRun,
    /// The real adapter runs: only through a commit, with the variable and a policy file.
    Real,
}

impl Mode {
    /// `dry_run` or `real`.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::DryRun => "dry_run",
            Mode::Real => "real",
        }
    }

    /// Reads `dry_run` or `real`.
    pub fn parse(s: &str) -> Option<Mode> {
        match s {
            "dry_run" | "dry-run" => Some(Mode::DryRun),
            "real" => Some(Mode::Real),
            _ => None,
        }
    }
}

/// The operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Op {
    /// A worker collects evidence.
    Collect,
    /// What the change would be.
    Preview,
    /// Make the change.
    Apply,
    /// Check the change holds.
    Verify,
    /// Undo it.
    Compensate,
}

impl Op {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Op::Collect => "collect",
            Op::Preview => "preview",
            Op::Apply => "apply",
            Op::Verify => "verify",
            Op::Compensate => "compensate",
        }
    }
}

/// One call of an adapter.
#[derive(Debug, Clone, PartialEq)]
pub struct Call<'a> {
    /// The pack root (the adapter's working folder).
    pub root: &'a Path,
    /// The executable, relative to the root.
    pub executable: &'a str,
    /// The operation.
    pub op: Op,
    /// The mode.
    pub mode: Mode,
    /// The pack.
    pub pack_id: &'a str,
    /// The action or worker.
    pub name: &'a str,
    /// The case (empty in the harness).
    pub case_id: &'a str,
    /// The input.
    pub input: &'a Map<String, Value>,
    /// Applying twice with the same key has one effect.
    pub idempotency_key: &'a str,
    /// Where a dry-run adapter keeps its effects.
    pub state_dir: &'a Path,
}

/// Why an adapter call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AdapterError {
    /// It could not be started.
    #[error("adapter `{executable}` cannot start: {message}\n  help: {help}")]
    Start {
        /// The executable.
        executable: String,
        /// Why.
        message: String,
        /// How to fix it.
        help: String,
    },
    /// It ran past the time limit and was killed.
    #[error(
        "adapter `{0}` ran past {TIME_LIMIT:?} and was stopped (with every process it started)\n  help: an adapter answers within the limit; run it by hand with its request on stdin to see where it waits"
    )]
    Timeout(String),
    /// It exited non-zero or answered `{"error": ...}`.
    #[error("adapter `{executable}` failed on `{op}`: {message}")]
    Failed {
        /// The executable.
        executable: String,
        /// The operation.
        op: String,
        /// Its message (stderr or its `error`).
        message: String,
    },
    /// Its answer is not one JSON object.
    #[error(
        "adapter `{executable}` answered `{op}` with something that is not a JSON object: {message}\n  help: print exactly one JSON object on stdout"
    )]
    BadAnswer {
        /// The executable.
        executable: String,
        /// The operation.
        op: String,
        /// Why.
        message: String,
    },
}

/// The request a call sends.
pub fn request_of(call: &Call<'_>) -> Value {
    json!({
        "protocol": PROTOCOL,
        "op": call.op.as_str(),
        "mode": call.mode.as_str(),
        "pack_id": call.pack_id,
        "name": call.name,
        "case_id": call.case_id,
        "input": call.input,
        "idempotency_key": call.idempotency_key,
        "state_dir": call.state_dir.display().to_string(),
    })
}

/// Where the executable is, and whether it can run.
pub fn resolve(root: &Path, executable: &str) -> Result<PathBuf, String> {
    let path = root.join(executable);
    let meta = std::fs::metadata(&path).map_err(|e| format!("`{executable}`: {e}"))?;
    // A pack runs only its own files: no `..` or link out of its root.
    let inside = std::fs::canonicalize(&path)
        .ok()
        .zip(std::fs::canonicalize(root).ok())
        .is_some_and(|(p, r)| p.starts_with(r));
    if !inside {
        return Err(format!(
            "`{executable}` is outside the pack root: a pack runs only files under its own folder"
        ));
    }
    if !meta.is_file() {
        return Err(format!("`{executable}` is not a file"));
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if meta.permissions().mode() & 0o111 == 0 {
            return Err(format!(
                "`{executable}` is not executable (run `chmod +x {executable}`)"
            ));
        }
    }
    Ok(path)
}

/// Runs one call and returns its answer object.
pub fn run(call: &Call<'_>) -> Result<Map<String, Value>, AdapterError> {
    let path = resolve(call.root, call.executable).map_err(|message| AdapterError::Start {
        executable: call.executable.to_string(),
        message,
        help:
            "adapters are executables under the pack root, named in workers.yaml and actions.yaml"
                .into(),
    })?;
    std::fs::create_dir_all(call.state_dir).map_err(|e| AdapterError::Start {
        executable: call.executable.to_string(),
        message: format!("cannot create its state folder: {e}"),
        help: "check the permissions of `.tollgate/`".into(),
    })?;
    let mut command = Command::new(&path);
    command
        .current_dir(call.root)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("LANG", "C.UTF-8")
        .env("TOLLGATE_ADAPTER_MODE", call.mode.as_str())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // Its own process group, so a time-out stops everything it started, not only itself.
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    let mut child = command.spawn().map_err(|e| AdapterError::Start {
        executable: call.executable.to_string(),
        message: e.to_string(),
        help:
            "check its first line (`#!/usr/bin/env python3`) and that the interpreter is installed"
                .into(),
    })?;
    let body = request_of(call).to_string();
    // Written from a thread, so an adapter that never reads cannot hold the time limit off; one
    // that exits without reading its request is judged by its answer.
    let stdin = child.stdin.take();
    let writer = std::thread::spawn(move || {
        if let Some(mut stdin) = stdin {
            let _ = stdin.write_all(body.as_bytes());
        }
    });
    let mut stdout = child.stdout.take();
    let mut stderr = child.stderr.take();
    let out_reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(s) = stdout.as_mut() {
            let _ = s.take(ANSWER_LIMIT).read_to_end(&mut buf);
        }
        buf
    });
    let err_reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(s) = stderr.as_mut() {
            let _ = s.take(64 * 1024).read_to_end(&mut buf);
        }
        buf
    });
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() > TIME_LIMIT => {
                stop_group(&mut child);
                return Err(AdapterError::Timeout(call.executable.to_string()));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => {
                return Err(AdapterError::Failed {
                    executable: call.executable.to_string(),
                    op: call.op.as_str().into(),
                    message: e.to_string(),
                });
            }
        }
    };
    // The call ends when the adapter exits: anything it left running goes with it.
    kill_group(child.id());
    let _ = writer.join();
    let out = out_reader.join().unwrap_or_default();
    let err = err_reader.join().unwrap_or_default();
    let failed = |message: String| AdapterError::Failed {
        executable: call.executable.to_string(),
        op: call.op.as_str().into(),
        message,
    };
    if !status.success() {
        let stderr = String::from_utf8_lossy(&err).trim().to_string();
        return Err(failed(if stderr.is_empty() {
            format!("it exited with {status}")
        } else {
            format!("it exited with {status}: {stderr}")
        }));
    }
    let answer: Value = serde_json::from_slice(&out).map_err(|e| AdapterError::BadAnswer {
        executable: call.executable.to_string(),
        op: call.op.as_str().into(),
        message: e.to_string(),
    })?;
    let Value::Object(answer) = answer else {
        return Err(AdapterError::BadAnswer {
            executable: call.executable.to_string(),
            op: call.op.as_str().into(),
            message: "the answer is not an object".into(),
        });
    };
    if let Some(e) = answer.get("error").filter(|e| !e.is_null()) {
        return Err(failed(super::policy::symbol_of(e)));
    }
    Ok(answer)
}

/// Kills an adapter and every process of its group.
fn stop_group(child: &mut std::process::Child) {
    kill_group(child.id());
    let _ = child.kill();
    let _ = child.wait();
}

/// Kills what is left of an adapter's process group (its leftovers would hold its pipes open).
fn kill_group(pid: u32) {
    #[cfg(unix)]
    {
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{pid}")])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
    #[cfg(not(unix))]
    let _ = pid;
}

/// One change a preview shows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Change {
    /// What changes (`queue:legal`).
    pub target: String,
    /// Which field of it.
    pub field: String,
    /// Before (JSON text of a non-string).
    pub before: String,
    /// After.
    pub after: String,
}

/// Reads a preview's answer: its changes and summary.
pub fn preview_of(answer: &Map<String, Value>) -> Result<(Vec<Change>, String), String> {
    let changes = answer
        .get("changes")
        .and_then(Value::as_array)
        .ok_or("a preview answers `changes`: a list of {target, field, before, after}")?;
    let mut out = Vec::new();
    for (i, c) in changes.iter().enumerate() {
        let get = |k: &str| {
            c.get(k)
                .map(super::policy::symbol_of)
                .ok_or_else(|| format!("change {i} has no `{k}`"))
        };
        out.push(Change {
            target: get("target")?,
            field: get("field")?,
            before: c
                .get("before")
                .map(super::policy::symbol_of)
                .unwrap_or_default(),
            after: c
                .get("after")
                .map(super::policy::symbol_of)
                .unwrap_or_default(),
        });
    }
    let summary = answer
        .get("summary")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    Ok((out, summary))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_adapter_outside_the_pack_root_cannot_run() {
        let dir =
            std::env::temp_dir().join(format!("tollgate-adapter-root-{}", std::process::id()));
        let root = dir.join("pack");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(dir.join("outside.sh"), "#!/bin/sh\n").unwrap();
        let e = resolve(&root, "../outside.sh").unwrap_err();
        assert!(e.contains("outside the pack root"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn an_adapter_answers_one_object_and_its_failures_are_typed() {
        let dir = std::env::temp_dir().join(format!("tollgate-adapter-run-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let write = |name: &str, body: &str| {
            let p = dir.join(name);
            std::fs::write(&p, body).unwrap();
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
            }
        };
        write(
            "ok.sh",
            "#!/bin/sh\ncat >/dev/null\necho '{\"changes\": [], \"summary\": \"none\"}'\n",
        );
        write("fails.sh", "#!/bin/sh\necho 'no access' >&2\nexit 3\n");
        write("garbage.sh", "#!/bin/sh\necho 'hello'\n");
        write(
            "refuses.sh",
            "#!/bin/sh\necho '{\"error\": \"not today\"}'\n",
        );
        let input = Map::new();
        let state = dir.join("state");
        let call = |exe: &'static str| Call {
            root: &dir,
            executable: exe,
            op: Op::Preview,
            mode: Mode::DryRun,
            pack_id: "p",
            name: "a",
            case_id: "c",
            input: &input,
            idempotency_key: "k",
            state_dir: &state,
        };
        let ok = run(&call("ok.sh")).unwrap();
        assert_eq!(ok["summary"], "none");
        let e = run(&call("fails.sh")).unwrap_err();
        assert!(e.to_string().contains("no access"), "{e}");
        assert!(matches!(
            run(&call("garbage.sh")),
            Err(AdapterError::BadAnswer { .. })
        ));
        let e = run(&call("refuses.sh")).unwrap_err();
        assert!(e.to_string().contains("not today"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
