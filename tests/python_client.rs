//! The Python client (`clients/python`, `tollgate-client`) against a real gateway serving the
//! examples' envelope (`clients/python/examples/support.yaml`): its own test suite (pytest:
//! the client's behaviour, its adapters' tools, and its contract with `/openapi.json`), and
//! the two example agents end to end on the real `openai-agents` and `langgraph` packages,
//! driven by the gateway's deterministic fake provider: a denied tool's side effect does not
//! happen, an approval given from the CLI releases the waiting call, and every decision is
//! recorded with its receipt in a chain that verifies.
//!
//! The Python interpreter is `TOLLGATE_TEST_PYTHON`, else `.ci/venv/bin/python` (which
//! `.ci/run` fills from `clients/python/requirements-test.txt`), else `python3` if it has the
//! packages. Under `CI` a missing interpreter fails the test; elsewhere the test says so and
//! passes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use support::{Gateway, TempDir};

const IMPORTS: &str =
    "import httpx, pydantic, pytest, openai, agents, langgraph, langchain_openai, ruff, mypy";

fn python() -> Option<String> {
    let venv = support::root().join(".ci/venv/bin/python");
    let candidates = match std::env::var("TOLLGATE_TEST_PYTHON") {
        Ok(p) => vec![p],
        Err(_) => vec![venv.display().to_string(), "python3".to_string()],
    };
    let found = candidates.into_iter().find(|p| {
        Command::new(p)
            .args(["-c", IMPORTS])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    });
    if found.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "no Python with the client's test packages: .ci/run installs clients/python/requirements-test.txt into .ci/venv"
        );
        eprintln!(
            "skipped: no Python with the client's test packages (pip install -r clients/python/requirements-test.txt, or set TOLLGATE_TEST_PYTHON)"
        );
    }
    found
}

fn client_dir() -> PathBuf {
    support::root().join("clients/python")
}

/// A gateway serving the examples' envelope, with an agent's and an approver's credentials.
struct Desk {
    gw: Gateway,
    agent_token: String,
    approver_token: String,
    _packs: TempDir,
}

fn desk() -> Desk {
    let envelope = client_dir().join("examples/support.yaml");
    // The case service's template pack, for the client's case tests.
    let packs = TempDir::new("packs");
    let pack = packs.path().join("intake_review");
    let made = support::tollgate(&["init", "intake_review", "--output", pack.to_str().unwrap()]);
    assert!(made.status.success(), "{}", support::stderr(&made));
    let gw = Gateway::start_args(
        &[("TOLLGATE_PACK_ROOTS", pack.to_str().unwrap())],
        &["--envelopes", envelope.to_str().unwrap()],
    );
    let agent_token = gw.create_token(&[
        "--kind",
        "agent",
        "--agent",
        "support",
        "--max-scope",
        "org:acme",
        "--max-clearance",
        "confidential",
    ]);
    let approver_token = gw.create_token(&["--kind", "approver", "--name", "team-lead"]);
    Desk {
        gw,
        agent_token,
        approver_token,
        _packs: packs,
    }
}

/// `python ARGS` in the client's directory, with the working tree's package first on the path
/// and the gateway's address and the agent's credential in the environment.
fn python_command(python: &str, desk: &Desk, args: &[&str]) -> Command {
    let mut cmd = Command::new(python);
    cmd.args(args)
        .current_dir(client_dir())
        .env("PYTHONPATH", client_dir().join("src"))
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("TOLLGATE_URL", &desk.gw.base)
        .env("TOLLGATE_TOKEN", &desk.agent_token)
        .env("OPENAI_AGENTS_DISABLE_TRACING", "1")
        .env_remove("OPENAI_API_KEY");
    cmd
}

#[test]
fn the_client_suite_passes_against_a_real_gateway() {
    let Some(python) = python() else { return };
    let desk = desk();
    let out = python_command(
        &python,
        &desk,
        &["-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
    )
    .env("TOLLGATE_APPROVER_TOKEN", &desk.approver_token)
    .env("TOLLGATE_ADMIN_TOKEN", &desk.gw.token)
    .env("TOLLGATE_TEST_PACKS", "intake_review")
    .output()
    .unwrap();
    let text = format!("{}{}", support::stdout(&out), support::stderr(&out));
    assert!(out.status.success(), "the client's tests failed:\n{text}");
    assert!(!text.contains("skipped"), "no test may skip here:\n{text}");
}

/// Runs an example agent, approves its refund from the CLI once it waits (checking the refund
/// did not happen before), and checks what it did and what the gateway recorded.
fn run_example(script: &str) {
    let Some(python) = python() else { return };
    let desk = desk();
    let out_dir = TempDir::new("desk");
    let mut agent = python_command(&python, &desk, &[script])
        .env("DESK_DIR", out_dir.path())
        .env("APPROVAL_TIMEOUT", "60")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the example");
    let approval = wait_for_pending(&desk.gw, &mut agent);
    assert!(
        !out_dir.path().join("refund-7.json").exists(),
        "the refund ran before it was approved"
    );
    let approved = desk.gw.tollgate(&[
        "approvals",
        "approve",
        &approval,
        "--by",
        "team-lead",
        "--reason",
        "refund checked",
    ]);
    assert!(approved.status.success(), "{}", support::stderr(&approved));
    let output = agent.wait_with_output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "the example failed:\n{text}");

    // What ran, and what did not.
    let dir = out_dir.path();
    assert!(dir.join("refund-7.json").exists(), "{text}");
    assert!(
        !dir.join("deleted-42").exists(),
        "a denied tool ran:\n{text}"
    );
    let note = std::fs::read_to_string(dir.join("note-42.txt")).unwrap();
    assert!(!note.contains("AKIAPYDATUTGFKRXITKP"), "{note}");
    assert!(
        note.contains("[REDACTED:support-desk/secrets-redacted]"),
        "{note}"
    );
    assert!(
        text.contains("the tool said: \"refunded 1999 cents"),
        "{text}"
    );

    // What the gateway recorded: every tool decision with its receipt, a result for each call
    // that ran, the model calls, and a chain that verifies.
    let run = text
        .lines()
        .find_map(|l| l.strip_prefix("run "))
        .and_then(|l| l.split_whitespace().next())
        .expect("the example names its run")
        .to_string();
    let (status, doc) = desk.gw.call(
        "GET",
        &format!("/v2/policies/decisions/{run}?kind=tool"),
        None,
    );
    assert_eq!(status, 200, "{doc}");
    let tools: Vec<(String, String)> = doc["decisions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["effect"].as_str().unwrap().to_string(),
                d["rules"][0].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let effects: Vec<&str> = tools.iter().map(|(e, _)| e.as_str()).collect();
    assert_eq!(
        effects,
        ["allow", "allow", "deny", "require_approval", "allow"],
        "{doc}"
    );
    assert_eq!(tools[2].1, "support-desk/no-deleting-customers");
    for d in doc["decisions"].as_array().unwrap() {
        assert_eq!(d["event_hash"].as_str().unwrap().len(), 64, "{d}");
    }
    let export = desk.gw.tollgate(&["runs", "export", &run]);
    let file: Value = serde_json::from_slice(&export.stdout).unwrap();
    let events = file["events"].as_array().unwrap();
    let count = |kind: &str| events.iter().filter(|e| e["kind"] == kind).count();
    assert_eq!(count("tool_result"), 3, "lookup, note and refund ran");
    assert!(count("model_call") >= 4, "{}", count("model_call"));
    assert_eq!(file["run"]["status"], "succeeded");
    let verify = desk.gw.tollgate(&["runs", "verify", &run]);
    assert!(verify.status.success(), "{}", support::stdout(&verify));
}

/// The id of the first pending approval, once the agent waits on one.
fn wait_for_pending(gw: &Gateway, agent: &mut Child) -> String {
    let start = Instant::now();
    loop {
        let (_, listed) = gw.call("GET", "/v1/approvals?state=pending", None);
        if let Some(id) = listed["approvals"]
            .as_array()
            .and_then(|a| a.first())
            .and_then(|a| a["id"].as_str())
        {
            return id.to_string();
        }
        if let Some(status) = agent.try_wait().unwrap() {
            let out = agent_output(agent);
            panic!("the example ended ({status}) before asking for an approval:\n{out}");
        }
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "no approval was asked for in 120 s"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn agent_output(agent: &mut Child) -> String {
    use std::io::Read as _;
    let mut text = String::new();
    if let Some(mut out) = agent.stdout.take() {
        let _ = out.read_to_string(&mut text);
    }
    if let Some(mut err) = agent.stderr.take() {
        let _ = err.read_to_string(&mut text);
    }
    text
}

#[test]
fn an_openai_agents_sdk_agent_is_governed_end_to_end() {
    run_example("examples/support_agent.py");
}

#[test]
fn a_langgraph_graph_is_governed_end_to_end() {
    run_example("examples/langgraph_agent.py");
}

#[test]
fn the_client_is_clean_under_ruff_and_mypy() {
    let Some(python) = python() else { return };
    for args in [
        &[
            "-m",
            "ruff",
            "check",
            "--no-cache",
            "src",
            "tests",
            "examples",
        ][..],
        &[
            "-m",
            "ruff",
            "format",
            "--no-cache",
            "--check",
            "src",
            "tests",
            "examples",
        ][..],
        &[
            "-m",
            "mypy",
            "--no-incremental",
            "--cache-dir",
            "/dev/null",
            "--ignore-missing-imports",
            "src",
        ][..],
    ] {
        let out = Command::new(&python)
            .args(args)
            .current_dir(client_dir())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?}:\n{}{}",
            support::stdout(&out),
            support::stderr(&out)
        );
    }
}
