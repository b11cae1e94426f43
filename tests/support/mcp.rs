//! What the MCP gateway's end-to-end tests share: a gateway serving MCP with an envelope
//! stored, and the official Python SDK's client (`tests/mcp/client.py`) run on JSON steps.

use std::io::Write as _;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::{Gateway, TempDir};

/// [`serve_mcp`] with these environment variables, the configuration's run naming these
/// envelopes.
pub fn serve_mcp_with(
    dir: TempDir,
    envelope: &str,
    agent: &str,
    servers: &str,
    envs: &[(&str, &str)],
    envelopes: &[&str],
) -> Gateway {
    std::fs::write(dir.path().join("envelope.yaml"), envelope).unwrap();
    let stored = super::with_store(
        &mut Command::new(env!("CARGO_BIN_EXE_tollgate")),
        dir.path(),
    )
    .current_dir(dir.path())
    .args(["policy", "store", "envelope.yaml"])
    .output()
    .unwrap();
    assert!(stored.status.success(), "{}", super::stderr(&stored));
    std::fs::write(
        dir.path().join("mcp.yaml"),
        format!(
            "run:\n  agent: {agent}\n  task: mcp over http\n  scope: org:acme/repo\n  envelopes: [{}]\napproval_wait_seconds: 60\nservers:\n{servers}",
            envelopes.join(", ")
        ),
    )
    .unwrap();
    Gateway::start_in(dir, envs, &["--mcp-config", "mcp.yaml"])
}

/// Waits for the first pending approval, checks nothing ran (`not_yet` does not exist), and
/// approves it as a new approver credential.
pub fn approve_first(gw: &Gateway, not_yet: &std::path::Path) {
    let lead = gw.create_token(&["--kind", "approver", "--name", "team-lead"]);
    let mut id = String::new();
    eventually("an approval was asked for", || {
        let (_, listed) = gw.call("GET", "/v1/approvals?state=pending", None);
        match listed["approvals"].as_array().and_then(|a| a.first()) {
            Some(a) => {
                id = a["id"].as_str().unwrap().to_string();
                true
            }
            None => false,
        }
    });
    assert!(!not_yet.exists(), "nothing runs before the approval");
    let (status, decided) = gw.call_as(
        &lead,
        "POST",
        &format!("/v2/policies/approvals/{id}"),
        Some(&json!({"decision": "approve"})),
    );
    assert_eq!(status, 200, "{decided}");
}

/// Starts the Python client on `steps` with `token` (and `x-tollgate-run: run`).
pub fn client(
    python: &str,
    gw: &Gateway,
    token: &str,
    run: Option<&str>,
    steps: &Value,
) -> std::process::Child {
    client_at(python, &format!("{}/v1/mcp", gw.base), token, run, steps)
}

/// Starts the Python client on `steps` against the MCP endpoint at `url`.
pub fn client_at(
    python: &str,
    url: &str,
    token: &str,
    run: Option<&str>,
    steps: &Value,
) -> std::process::Child {
    let mut cmd = Command::new(python);
    cmd.arg(super::root().join("tests/mcp/client.py"))
        .arg(url)
        .arg(token);
    if let Some(run) = run {
        cmd.arg(run);
    }
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(steps.to_string().as_bytes())
        .unwrap();
    child
}

/// What the client saw: its first entry is the server's instructions, then one per step.
pub fn finish(child: std::process::Child) -> Vec<Value> {
    let out = child.wait_with_output().unwrap();
    let said = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "the client failed:\n{said}");
    assert!(
        !said.contains("Session termination failed"),
        "the session did not close cleanly:\n{said}"
    );
    serde_json::from_slice::<Value>(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{said}", String::from_utf8_lossy(&out.stdout)))
        .as_array()
        .unwrap()
        .clone()
}

pub fn session(
    python: &str,
    gw: &Gateway,
    token: &str,
    run: Option<&str>,
    steps: Value,
) -> Vec<Value> {
    finish(client(python, gw, token, run, &steps))
}

/// The run named in the server's instructions at `initialize`.
pub fn run_of(seen: &[Value]) -> String {
    let said = seen[0]["instructions"].as_str().unwrap_or_default();
    said.split_whitespace()
        .skip_while(|w| *w != "run")
        .nth(1)
        .unwrap_or_else(|| panic!("no run in {said:?}"))
        .to_string()
}

/// Waits up to a minute for `check` to hold.
pub fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !check() {
        assert!(Instant::now() < deadline, "{what} did not happen");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The entry script of a reference server installed from npm by `.ci/run`
/// (`npm ci --prefix tests/mcp/node`), when it and node are there; else `None`, the test
/// saying it is skipped.
pub fn npm_server(package: &str) -> Option<String> {
    let script = super::root().join(format!(
        "tests/mcp/node/node_modules/@modelcontextprotocol/{package}/dist/index.js"
    ));
    let node = Command::new("node").arg("--version").output();
    if script.exists() && node.is_ok_and(|o| o.status.success()) {
        return Some(script.display().to_string());
    }
    eprintln!("skipped: no node, or no `npm ci --prefix tests/mcp/node` (run .ci/run)");
    None
}
