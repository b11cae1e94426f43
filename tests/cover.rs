//! `tollgate cover inspect` on the fixture agent codebases (`fixtures/agent-codebases/`): each
//! report is the one expected (`APP.expected.json`; `UPDATE_EXPECT=1` rewrites them after a
//! reviewed change), written to `.tollgate/cover/latest.json` under the working directory.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::process::Command;

use support::{TempDir, root, stderr, stdout};

/// Each fixture app and its entrypoint.
const APPS: &[(&str, &str)] = &[
    ("openai_agents_support", "support.app:triage_agent"),
    ("langgraph_research", "research.graph:graph"),
    ("crewai_marketing", "marketing.crew:crew"),
    ("pydantic_ai_bank", "bank.agent:support_agent"),
    ("mcp_files_server", "files_server.server:mcp"),
    ("plain_openai_tools", "ops.bot:run_conversation"),
    ("mixed_agents_mcp", "mixed.main:planner"),
    ("dynamic_and_broken", "weird.app:agent"),
];

fn inspect(cwd: &std::path::Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_tollgate"))
        .current_dir(cwd)
        .arg("cover")
        .arg("inspect")
        .args(args)
        .output()
        .expect("run tollgate")
}

#[test]
fn every_fixture_app_gives_its_expected_report() {
    let fixtures = root().join("fixtures/agent-codebases");
    let mut stale = Vec::new();
    for (app, entry) in APPS {
        let cwd = TempDir::new("cover");
        let path = fixtures.join(app);
        let out = inspect(cwd.path(), &[path.to_str().unwrap(), "--entrypoint", entry]);
        assert!(out.status.success(), "{app}: {}", stderr(&out));
        assert!(
            stdout(&out).contains("report: .tollgate/cover/latest.json"),
            "{}",
            stdout(&out)
        );
        let written =
            std::fs::read_to_string(cwd.path().join(".tollgate/cover/latest.json")).unwrap();
        let report: serde_json::Value = serde_json::from_str(&written).unwrap();
        assert_eq!(report["schema"], "tollgate.cover/v1");
        // A draft envelope per agent with tools, each valid.
        let drafts = cwd.path().join(".tollgate/cover/envelopes");
        let with_tools = report["agents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|a| !a["tools"].as_array().unwrap().is_empty())
            .count();
        assert_eq!(
            std::fs::read_dir(&drafts).unwrap().count(),
            with_tools,
            "{app}"
        );
        let check = Command::new(env!("CARGO_BIN_EXE_tollgate"))
            .current_dir(cwd.path())
            .args(["policy", "check", ".tollgate/cover/envelopes"])
            .output()
            .unwrap();
        assert!(
            check.status.success(),
            "{app}: {}{}",
            stdout(&check),
            stderr(&check)
        );
        let expected_path = fixtures.join(format!("{app}.expected.json"));
        if std::env::var_os("UPDATE_EXPECT").is_some() {
            std::fs::write(&expected_path, &written).unwrap();
            continue;
        }
        let expected = std::fs::read_to_string(&expected_path).unwrap_or_default();
        if expected != written {
            stale.push(format!(
                "{app}: the report differs from {}:\n{written}",
                expected_path.display()
            ));
        }
    }
    assert!(
        stale.is_empty(),
        "{}\n(review, then UPDATE_EXPECT=1 to accept)",
        stale.join("\n")
    );
}

#[test]
fn json_output_and_an_explicit_report_path() {
    let cwd = TempDir::new("cover-json");
    let app = root().join("fixtures/agent-codebases/plain_openai_tools");
    let out = inspect(
        cwd.path(),
        &[
            app.to_str().unwrap(),
            "--entrypoint",
            "ops.bot:run_conversation",
            "--output",
            "r/report.json",
            "--json",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let printed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let written: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(cwd.path().join("r/report.json")).unwrap())
            .unwrap();
    assert_eq!(printed, written);
    let tools: Vec<&str> = printed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(tools, ["get_weather", "restart_service", "query_metrics"]);
}

#[test]
fn a_wrong_entrypoint_is_refused_with_the_candidates_and_nothing_written() {
    let cwd = TempDir::new("cover-wrong");
    let app = root().join("fixtures/agent-codebases/openai_agents_support");
    let out = inspect(
        cwd.path(),
        &[app.to_str().unwrap(), "--entrypoint", "support.app:triage"],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("no top-level `triage` in `support.app`"),
        "{err}"
    );
    assert!(err.contains("triage_agent"), "{err}");
    let out = inspect(
        cwd.path(),
        &[app.to_str().unwrap(), "--entrypoint", "support/app.py"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("module:object"));
    assert!(!cwd.path().join(".tollgate").exists());
}

#[test]
fn a_draft_envelope_simulates_on_a_recorded_run() {
    let cwd = TempDir::new("cover-simulate");
    let app = root().join("fixtures/agent-codebases/mcp_files_server");
    let out = inspect(
        cwd.path(),
        &[
            app.to_str().unwrap(),
            "--entrypoint",
            "files_server.server:mcp",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let url = cwd.database_url();
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_tollgate"))
            .current_dir(cwd.path())
            .env("TOLLGATE_DATABASE_URL", &url)
            .args(args)
            .output()
            .unwrap()
    };
    let fixture = root().join("fixtures/runs/01-bugfix-users-404.json");
    let imported = run(&["runs", "import", fixture.to_str().unwrap()]);
    assert!(imported.status.success(), "{}", stderr(&imported));
    let draft = ".tollgate/cover/envelopes/cover-files-server-server-mcp.yaml";
    let simulated = run(&[
        "policy",
        "simulate",
        "--envelope",
        draft,
        "--run",
        "run-bugfix-users-404",
        "--json",
    ]);
    assert!(
        simulated.status.code().is_some_and(|c| c <= 1),
        "{}",
        stderr(&simulated)
    );
    let doc: serde_json::Value = serde_json::from_slice(&simulated.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}{}", stdout(&simulated), stderr(&simulated)));
    assert!(doc.is_object(), "{doc}");
}
