//! The reference server that exercises the protocol's features
//! (`@modelcontextprotocol/server-everything`, from npm) behind Tollgate with an allow-all
//! envelope: what the official Python SDK's client sees through Tollgate equals what it sees
//! talking to the server directly — tools, calls, progress, sampling, resources, templates,
//! prompts (issue 34). The server is configured with `prefix: false`, so the client sees the
//! server's own names; envelopes and receipts name them `everything.TOOL`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::net::{TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::TempDir;
use support::mcp::{client_at, finish, npm_server, serve_mcp_with};

const ENVELOPE: &str = "\
id: everything
version: 1
description: Everything allowed, to compare what passes with what the server says.
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

/// The server-everything process, killed when dropped.
struct Direct(std::process::Child);

impl Drop for Direct {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts server-everything over streamable HTTP on a free port; its endpoint.
fn direct(script: &str) -> (Direct, String) {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new("node")
        .arg(script)
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "server-everything did not listen"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    (Direct(child), format!("http://127.0.0.1:{port}/mcp"))
}

/// What the client saw, without what only Tollgate adds (`_meta`) or what may differ
/// between two runs of the server (progress messages: how many arrive is a race).
fn comparable(seen: &[Value]) -> Vec<Value> {
    seen.iter()
        .skip(1)
        .map(|s| {
            let mut s = s.clone();
            if let Value::Object(o) = &mut s {
                o.remove("meta");
                if let Some(Value::Array(p)) = o.remove("progress") {
                    o.insert("progressed".into(), json!(!p.is_empty()));
                }
            }
            s
        })
        .collect()
}

#[test]
fn the_everything_server_answers_the_same_through_tollgate_as_directly() {
    let Some(python) = support::python_with("mcp.client") else {
        return;
    };
    let Some(script) = npm_server("server-everything") else {
        return;
    };
    let gw = serve_mcp_with(
        TempDir::new("mcp-everything"),
        ENVELOPE,
        "mcp-agent",
        &format!(
            "  everything:\n    command: node\n    args: [{script}]\n    env: [PATH]\n    prefix: false\n    context: {{scope: org:acme/repo, sensitivity: public}}\n"
        ),
        &[],
        &[],
    );
    let steps = json!([
        {"op": "list"},
        {"op": "call", "tool": "echo", "arguments": {"message": "hello through the gate"}},
        {"op": "call", "tool": "get-sum", "arguments": {"a": 2, "b": 40}},
        {"op": "call", "tool": "trigger-long-running-operation",
         "arguments": {"duration": 1, "steps": 3}, "progress": true},
        {"op": "call", "tool": "trigger-sampling-request",
         "arguments": {"prompt": "six times seven?", "maxTokens": 20}},
        {"op": "call", "tool": "no-such-tool"},
        {"op": "resources"},
        {"op": "templates"},
        {"op": "read", "uri": "demo://resource/static/document/features.md"},
        {"op": "prompts"},
        {"op": "prompt", "name": "simple-prompt"},
    ]);
    let token = gw.create_token(&["--kind", "agent", "--agent", "mcp-agent"]);
    let through = finish(client_at(
        &python,
        &format!("{}/v1/mcp", gw.base),
        &token,
        None,
        &steps,
    ));
    let (_server, url) = direct(&script);
    let directly = finish(client_at(&python, &url, "unused", None, &steps));

    let (a, b) = (comparable(&through), comparable(&directly));
    assert_eq!(a.len(), b.len());
    for (i, (t, d)) in a.iter().zip(&b).enumerate() {
        let step = &steps
            .as_array()
            .unwrap()
            .get(i)
            .cloned()
            .unwrap_or(json!("asked"));
        if step["tool"] == "no-such-tool" {
            // Both refuse it; the gateway names the tools it knows.
            assert!(t.get("error").is_some() || t["isError"] == true, "{t}");
            continue;
        }
        assert_eq!(t, d, "step {step}: through Tollgate, then directly");
    }
    // Nothing was empty: the comparison compared something.
    assert!(a[0]["tools"].as_array().unwrap().len() > 5, "{}", a[0]);
    assert!(
        a[1]["text"]
            .as_str()
            .unwrap()
            .contains("hello through the gate")
    );
    assert_eq!(a[3]["progressed"], true, "{}", a[3]);
    assert!(
        a[4]["text"].as_str().unwrap().contains("forty-two"),
        "{}",
        a[4]
    );
    assert!(!a[6]["uris"].as_array().unwrap().is_empty());
    // Every call was decided under the envelope, by the name policy sees.
    let run = support::mcp::run_of(&through);
    let (_, decisions) = gw.call("GET", &format!("/v2/policies/decisions/{run}"), None);
    let allowed = decisions["decisions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["effect"] == "allow")
        .count();
    assert!(allowed >= 5, "{decisions}");
}
