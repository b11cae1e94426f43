//! The official MCP conformance suite (`@modelcontextprotocol/conformance` 0.1.13, from npm; the
//! newest that runs on Node 20) run against Tollgate's `/v1/mcp` in front of a server that
//! implements what its server scenarios call (`tests/mcp/conformance_server.py`, on the official
//! Python SDK), and against that server directly: every scenario passes through Tollgate, and
//! none that passes directly fails through it — tools, content kinds, errors, progress,
//! sampling, elicitation, JSON Schema 2020-12, resources, templates, subscriptions, prompts,
//! completions, logging, SSE streams and DNS-rebinding protection (issue 34).
//!
//! The suite cannot send a bearer token, so it reaches Tollgate through `tests/mcp/auth_proxy.py`,
//! which adds one (and passes a hostile Host or Origin on unchanged).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::collections::BTreeMap;
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use support::TempDir;
use support::mcp::serve_mcp_with;

const ENVELOPE: &str = "\
id: conformance
version: 1
description: Everything allowed, the suite checks the protocol and not policy.
attach:
  agents: [mcp-agent]
tools:
  - id: all
    effect: allow
    tools: [\"**\"]
data:
  - id: see-all
    effect: see
";

/// A child process killed when dropped.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn listening(port: u16, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "{what} did not listen");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The suite's entry script, when `.ci/run` installed it and node is there.
fn suite() -> Option<String> {
    let script = support::root()
        .join("tests/mcp/node/node_modules/@modelcontextprotocol/conformance/dist/index.js");
    let node = Command::new("node").arg("--version").output();
    if script.exists() && node.is_ok_and(|o| o.status.success()) {
        return Some(script.display().to_string());
    }
    eprintln!("skipped: no node, or no `npm ci --prefix tests/mcp/node` (run .ci/run)");
    None
}

/// Runs every server scenario against `url`: scenario → (checks passed, checks failed).
fn run_suite(script: &str, url: &str, out: &std::path::Path) -> BTreeMap<String, (u32, u32)> {
    let ran = Command::new("node")
        .arg(script)
        .args(["server", "--url", url, "--suite", "all", "-o"])
        .arg(out)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&ran.stdout).to_string();
    let summary = said
        .split("=== SUMMARY ===")
        .nth(1)
        .unwrap_or_else(|| panic!("no summary:\n{said}\n{}", support::stderr(&ran)));
    let mut results = BTreeMap::new();
    for line in summary.lines() {
        // `✓ tools-list: 1 passed, 0 failed`
        let Some((name, counts)) = line.get(4..).and_then(|l| l.split_once(": ")) else {
            continue;
        };
        let numbers: Vec<u32> = counts
            .split(|c: char| !c.is_ascii_digit())
            .filter_map(|n| n.parse().ok())
            .collect();
        if let [passed, failed] = numbers[..] {
            results.insert(name.trim().to_string(), (passed, failed));
        }
    }
    assert!(!results.is_empty(), "{said}");
    results
}

#[test]
fn the_conformance_suite_passes_through_tollgate_as_against_the_server_directly() {
    let Some(python) = support::python_with("mcp.server") else {
        return;
    };
    let Some(script) = suite() else {
        return;
    };
    let server = support::root().join("tests/mcp/conformance_server.py");
    let dir = TempDir::new("mcp-conformance");
    let out = dir.path().join("results");

    // Directly.
    let port = free_port();
    let _direct = Killed(
        Command::new(&python)
            .arg(&server)
            .args(["http", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    listening(port, "the conformance server");
    let directly = run_suite(
        &script,
        &format!("http://127.0.0.1:{port}/mcp"),
        &out.join("direct"),
    );

    // Through Tollgate, the server its stdio upstream.
    let gw = serve_mcp_with(
        TempDir::new("mcp-conformance-gw"),
        ENVELOPE,
        "mcp-agent",
        &format!(
            "  cts:\n    command: {python}\n    args: [{}]\n    prefix: false\n    context: {{scope: org:acme/repo, sensitivity: public}}\n",
            server.display()
        ),
        &[],
        &[],
    );
    let token = gw.create_token(&["--kind", "agent", "--agent", "mcp-agent"]);
    let proxy_port = free_port();
    let _proxy = Killed(
        Command::new(&python)
            .arg(support::root().join("tests/mcp/auth_proxy.py"))
            .arg(proxy_port.to_string())
            .arg(&gw.base)
            .arg("CONFORMANCE_TOKEN")
            .env("CONFORMANCE_TOKEN", &token)
            .stdout(Stdio::null())
            .spawn()
            .unwrap(),
    );
    listening(proxy_port, "the auth proxy");
    let through = run_suite(
        &script,
        &format!("http://127.0.0.1:{proxy_port}/v1/mcp"),
        &out.join("through"),
    );

    assert!(
        through.len() >= 30,
        "every server scenario ran: {through:?}"
    );
    let failed: Vec<_> = through.iter().filter(|(_, (_, f))| *f > 0).collect();
    assert!(failed.is_empty(), "through Tollgate: {failed:?}");
    for (name, (passed, failed)) in &directly {
        let (p, f) = through.get(name).copied().unwrap_or_default();
        assert!(
            f <= *failed && p >= *passed,
            "{name}: directly {passed} passed and {failed} failed, through Tollgate {p} and {f}"
        );
    }
}
