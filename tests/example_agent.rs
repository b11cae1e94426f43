//! The example agent (`examples/agent/agent.py`, the official `openai` Python client plus plain
//! HTTP tool calls) against a real gateway: a redacted secret, a denied model, a denied tool
//! and a gated call approved from the CLI, all visible in the run's recorded decisions.
//!
//! The Python interpreter is `TOLLGATE_TEST_PYTHON`, else `.ci/venv/bin/python` (which
//! `.ci/run` creates with `openai` installed), else `python3` if it can import `openai`. Under
//! `CI` a missing interpreter fails the test; elsewhere the test says so and passes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::io::{BufRead as _, BufReader};
use std::process::{Command, Stdio};

use serde_json::json;
use support::Gateway;

fn python() -> Option<String> {
    if let Ok(p) = std::env::var("TOLLGATE_TEST_PYTHON") {
        return Some(p);
    }
    let venv = support::root().join(".ci/venv/bin/python");
    let candidates = [venv.display().to_string(), "python3".to_string()];
    candidates.into_iter().find(|p| {
        Command::new(p)
            .args(["-c", "import openai"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    })
}

#[test]
fn the_openai_client_agent_is_governed_and_recorded() {
    let Some(python) = python() else {
        assert!(
            std::env::var_os("CI").is_none(),
            "no Python with the `openai` package: .ci/run installs it into .ci/venv"
        );
        eprintln!(
            "skipped: no Python with the `openai` package (run .ci/run, or set TOLLGATE_TEST_PYTHON)"
        );
        return;
    };
    let gw = Gateway::with_fixture_envelopes();
    // The agent holds an agent's credential, as the README sets it up: it cannot approve
    // its own gated call; a person does, from the command line.
    let agent_token = gw.create_token(&[
        "--kind",
        "agent",
        "--agent",
        "coder",
        "--max-scope",
        "org:acme",
        "--max-clearance",
        "confidential",
    ]);
    let mut agent = Command::new(&python)
        .arg(support::root().join("examples/agent/agent.py"))
        .args([
            "--url",
            &gw.base,
            "--run",
            "agent-e2e",
            "--approval-wait",
            "30",
        ])
        .env("TOLLGATE_TOKEN", &agent_token)
        .current_dir(gw.dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start the example agent");
    let mut lines = Vec::new();
    for line in BufReader::new(agent.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        if let Some(rest) = line.strip_prefix("waiting for approval ") {
            let id = rest.split(':').next().unwrap().to_string();
            let out = gw.tollgate(&[
                "approvals",
                "approve",
                &id,
                "--by",
                "team-lead",
                "--reason",
                "e2e",
            ]);
            assert!(out.status.success(), "{}", support::stderr(&out));
        }
        lines.push(line);
    }
    let status = agent.wait().unwrap();
    let output = lines.join("\n");
    assert!(status.success(), "the agent failed:\n{output}");
    assert!(
        output.contains("[REDACTED:org-baseline/secrets-redacted]"),
        "{output}"
    );
    assert!(!output.contains("AKIAPYDATUTGFKRXITKP"), "{output}");
    assert!(output.contains("model gpt-5: denied"), "{output}");
    assert!(output.contains("tool shell.rm: deny"), "{output}");
    assert!(
        output.contains("tool shell.exec: allow - approved by team-lead"),
        "{output}"
    );

    let (status, doc) = gw.call("GET", "/v2/policies/decisions/agent-e2e", None);
    assert_eq!(status, 200);
    let decisions = doc["decisions"].as_array().unwrap();
    let has = |kind: &str, effect: &str, rule: &str| {
        decisions.iter().any(|d| {
            d["kind"] == kind
                && d["effect"] == effect
                && d["rules"].as_array().unwrap().contains(&json!(rule))
        })
    };
    assert!(has("tool", "deny", "org-baseline/no-rm"), "{doc}");
    assert!(
        has("context", "redact", "org-baseline/secrets-redacted"),
        "{doc}"
    );
    assert!(has("model", "deny", "default-deny"), "{doc}");
    assert!(has("tool", "allow", "coding-agent/shell"), "{doc}");
    // The client's calls were recorded as model calls, the streamed one included.
    let (_, run) = gw.call("GET", "/v1/runs/agent-e2e", None);
    assert_eq!(run["run"]["status"], "succeeded");
    let export = gw.tollgate(&["runs", "export", "agent-e2e"]);
    let file: serde_json::Value = serde_json::from_slice(&export.stdout).unwrap();
    let model_calls = file["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "model_call")
        .count();
    assert_eq!(model_calls, 2);
    let replay = gw.tollgate(&["replay", "exact", "agent-e2e"]);
    assert!(replay.status.success(), "{}", support::stdout(&replay));
}

#[test]
fn an_unmodified_openai_client_needs_only_base_url_and_api_key() {
    let Some(python) = python() else {
        assert!(
            std::env::var_os("CI").is_none(),
            "no Python with the `openai` package: .ci/run installs it into .ci/venv"
        );
        eprintln!("skipped: no Python with the `openai` package");
        return;
    };
    let envelopes = support::root().join("examples/envelopes");
    let gw = Gateway::start_args(&[], &["--envelopes", envelopes.to_str().unwrap()]);
    // The client as anyone writes it: no Tollgate header, no Tollgate field.
    let script = r#"
import sys
from openai import OpenAI
client = OpenAI(base_url=sys.argv[1] + "/v1", api_key=sys.argv[2])
for stream in (False, True):
    if stream:
        parts = client.chat.completions.create(model="gpt-4.1-mini", stream=True,
            messages=[{"role": "user", "content": "say hello"}])
        print("".join(c.choices[0].delta.content or "" for c in parts if c.choices))
    else:
        r = client.chat.completions.create(model="gpt-4.1-mini",
            messages=[{"role": "user", "content": "say hello"}])
        print(r.choices[0].message.content)
"#;
    let out = Command::new(&python)
        .args(["-c", script, &gw.base, &gw.token])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let said = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        said.lines().filter(|l| !l.trim().is_empty()).count(),
        2,
        "{said}"
    );
    let day: String = tollgate_gateway::clock::now_rfc3339()
        .chars()
        .take(10)
        .filter(char::is_ascii_digit)
        .collect();
    let (status, view) = gw.call(
        "GET",
        &format!("/v1/runs/implicit-openai-client-{day}"),
        None,
    );
    assert_eq!(status, 200, "{view}");
    let (_, decisions) = gw.call(
        "GET",
        &format!("/v2/policies/decisions/implicit-openai-client-{day}"),
        None,
    );
    let models = decisions["decisions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["kind"] == "model")
        .count();
    assert_eq!(
        models, 2,
        "both calls were decided and recorded: {decisions}"
    );
}

/// Runs `examples/demo.sh` with this build's binary, its logs in `dir` and its store there.
fn demo(dir: &std::path::Path, envs: &[(&str, &str)]) -> std::process::Output {
    let url = format!("sqlite:{}", dir.join("demo.db").display());
    Command::new("bash")
        .arg(support::root().join("examples/demo.sh"))
        .env("TOLLGATE_BIN", env!("CARGO_BIN_EXE_tollgate"))
        .env("DEMO_DIR", dir)
        .env("TOLLGATE_DATABASE_URL", url)
        .env_remove("PORT")
        .envs(envs.iter().copied())
        .output()
        .expect("run the demo")
}

/// Bug 3 of issue 33: the demo failed with no output at all when its port was taken (the
/// README's own "The gateway" section starts a gateway on 8000 first).
#[test]
fn the_demo_says_why_when_its_port_is_taken() {
    let dir = support::TempDir::new("demo-port");
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let out = demo(dir.path(), &[("PORT", &port)]);
    assert!(!out.status.success());
    let err = support::stderr(&out);
    assert!(err.contains("the gateway did not start"), "{err}");
    assert!(
        err.contains(&format!("cannot listen on 127.0.0.1:{port}")),
        "{err}"
    );
    assert!(err.contains(&format!("port {port} is taken")), "{err}");
    assert!(err.contains("leave PORT unset"), "{err}");
}

/// Bug 3 of issue 33: any other reason the gateway cannot start is shown too, from its log.
#[test]
fn the_demo_says_why_when_the_gateway_cannot_start() {
    let dir = support::TempDir::new("demo-store");
    std::fs::write(dir.path().join("a-file"), "").unwrap();
    let bad = format!("sqlite:{}", dir.path().join("a-file/demo.db").display());
    let out = demo(dir.path(), &[("TOLLGATE_DATABASE_URL", &bad)]);
    assert!(!out.status.success());
    let err = support::stderr(&out);
    assert!(err.contains("the gateway did not start"), "{err}");
    assert!(
        err.contains("a-file/demo.db"),
        "the log's lines say why: {err}"
    );
}

/// The README's first command, end to end: the demo picks a free port, the agent runs, a
/// person approves its gated call, and the run it recorded verifies.
#[test]
fn the_demo_runs_on_a_free_port_from_start_to_the_recorded_run() {
    let Some(python) = python() else {
        assert!(
            std::env::var_os("CI").is_none(),
            "no Python with the `openai` package: .ci/run installs it into .ci/venv"
        );
        eprintln!("skipped: no Python with the `openai` package");
        return;
    };
    let dir = support::TempDir::new("demo-run");
    // The demo's venv is this Python (with `openai`), so nothing is installed.
    let bin = dir.path().join("venv/bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::write(
        bin.join("python"),
        format!("#!/bin/sh\nexec {python} \"$@\"\n"),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(bin.join("python"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = demo(dir.path(), &[]);
    let text = support::stdout(&out);
    assert!(out.status.success(), "{text}{}", support::stderr(&out));
    assert!(text.contains("listening on http://127.0.0.1:"), "{text}");
    assert!(text.contains("a human approves apr-"), "{text}");
    assert!(text.contains("chain intact"), "{text}");
}
