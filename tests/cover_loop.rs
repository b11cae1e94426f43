//! The cover loop of seed 001 on every fixture app, as a new user runs it: inspect, scaffold (the
//! draft validates, author-check fails listing what awaits review), review status, suggest,
//! review template (a file with pending decisions changes nothing), review apply, boundaries
//! suggest, boundary review template and apply — then author-check, adapter-dry-run and
//! adapter-preflight pass, the generated tests pass, and the demo opens a case that
//! `cases inspect` shows.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::Path;
use std::process::{Command, Output};

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

const PACK: &str = ".tollgate/covered_system_pack";

fn run(cwd: &TempDir, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tollgate"))
        .current_dir(cwd.path())
        .env("TOLLGATE_DATABASE_URL", cwd.database_url())
        .env_remove("TOLLGATE_PACK_ROOTS")
        .args(args)
        .output()
        .expect("run tollgate")
}

fn ok(cwd: &TempDir, args: &[&str]) -> String {
    let out = run(cwd, args);
    assert!(
        out.status.success(),
        "tollgate {}: {}{}",
        args.join(" "),
        stdout(&out),
        stderr(&out)
    );
    stdout(&out)
}

fn read(cwd: &TempDir, rel: &str) -> String {
    std::fs::read_to_string(cwd.path().join(rel)).unwrap()
}

/// Every pending decision of a review file accepted, as a developer who agrees with all does.
fn accept_all(cwd: &TempDir, rel: &str) {
    let text = read(cwd, rel);
    assert!(text.contains("decision: pending"), "{rel}: {text}");
    std::fs::write(
        cwd.path().join(rel),
        text.replace("decision: pending", "decision: accept"),
    )
    .unwrap();
}

fn inspect_and_scaffold(app: &str, entry: &str) -> TempDir {
    let cwd = TempDir::new("cover-loop");
    let path = root().join("fixtures/agent-codebases").join(app);
    ok(
        &cwd,
        &[
            "cover",
            "inspect",
            path.to_str().unwrap(),
            "--entrypoint",
            entry,
        ],
    );
    let out = ok(
        &cwd,
        &["cover", "scaffold", "--from", ".tollgate/cover/latest.json"],
    );
    assert!(out.contains("author-check fails until"), "{out}");
    cwd
}

#[test]
fn the_whole_cover_loop_runs_on_every_fixture_app() {
    for (app, entry) in APPS {
        let cwd = inspect_and_scaffold(app, entry);
        let report: serde_json::Value =
            serde_json::from_str(&read(&cwd, ".tollgate/cover/latest.json")).unwrap();
        let tools = report["tools"].as_array().unwrap().len();

        // The draft: validates, author-check fails with what awaits review.
        ok(&cwd, &["packs", "validate", "--pack-root", PACK]);
        let check = run(
            &cwd,
            &["packs", "author-check", "--pack-root", PACK, "--json"],
        );
        assert_eq!(check.status.code(), Some(1), "{app}: {}", stdout(&check));
        let check: serde_json::Value = serde_json::from_str(&stdout(&check)).unwrap();
        let owed: Vec<&str> = check["missing"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["what"].as_str().unwrap())
            .collect();
        assert!(owed.contains(&"demo"), "{app}: {owed:?}");
        let status = ok(&cwd, &["cover", "review", "status", "--pack-root", PACK]);
        assert!(status.contains("mapping review: not applied"), "{status}");
        assert!(status.contains("author-check: fails"), "{status}");

        // The mapping review: suggestions are inert, a template with pending decisions is
        // refused and changes nothing, the decided one applies.
        let workers_before = read(&cwd, &format!("{PACK}/workers.yaml"));
        ok(
            &cwd,
            &[
                "cover",
                "suggest",
                "--pack-root",
                PACK,
                "--output",
                "cover-review.suggested.yaml",
            ],
        );
        let suggested = read(&cwd, "cover-review.suggested.yaml");
        assert_eq!(suggested.matches("- tool: ").count(), tools, "{suggested}");
        assert!(!suggested.contains("decision:"), "{suggested}");
        ok(
            &cwd,
            &[
                "cover",
                "review",
                "template",
                "--pack-root",
                PACK,
                "--output",
                "cover-review.yaml",
            ],
        );
        let pending = run(
            &cwd,
            &[
                "cover",
                "review",
                "apply",
                "--pack-root",
                PACK,
                "--mapping-file",
                "cover-review.yaml",
            ],
        );
        assert_eq!(pending.status.code(), Some(1), "{app}");
        assert!(
            stderr(&pending).contains("is not decided"),
            "{}",
            stderr(&pending)
        );
        assert_eq!(read(&cwd, &format!("{PACK}/workers.yaml")), workers_before);
        accept_all(&cwd, "cover-review.yaml");
        ok(
            &cwd,
            &[
                "cover",
                "review",
                "apply",
                "--pack-root",
                PACK,
                "--mapping-file",
                "cover-review.yaml",
            ],
        );

        // The boundary review generates the actions.
        ok(
            &cwd,
            &[
                "cover",
                "boundaries",
                "suggest",
                "--pack-root",
                PACK,
                "--output",
                "cover-boundaries.suggested.yaml",
            ],
        );
        ok(
            &cwd,
            &[
                "cover",
                "boundaries",
                "review",
                "template",
                "--pack-root",
                PACK,
                "--suggestions",
                "cover-boundaries.suggested.yaml",
                "--output",
                "cover-boundaries.review.yaml",
            ],
        );
        accept_all(&cwd, "cover-boundaries.review.yaml");
        ok(
            &cwd,
            &[
                "cover",
                "boundaries",
                "review",
                "apply",
                "--pack-root",
                PACK,
                "--mapping-file",
                "cover-boundaries.review.yaml",
            ],
        );
        for f in [
            "REAL_ADAPTER_RUNBOOK.md",
            "templates/real_external_adapters.py",
            "templates/real_actions.yaml",
            "templates/real_adapter_policy.yaml",
            "templates/real_demo.sh",
            "tests/test_external_adapters.py",
        ] {
            assert!(cwd.path().join(PACK).join(f).is_file(), "{app}: {f}");
        }
        // The templates are inert: nothing in the pack names them.
        assert!(!read(&cwd, &format!("{PACK}/actions.yaml")).contains("real_adapter"));

        // After review: every check passes.
        let passed = ok(&cwd, &["packs", "author-check", "--pack-root", PACK]);
        assert!(passed.contains("nothing is missing"), "{app}: {passed}");
        ok(&cwd, &["packs", "adapter-dry-run", "--pack-root", PACK]);
        ok(
            &cwd,
            &[
                "packs",
                "adapter-preflight",
                "--pack-root",
                PACK,
                "--mode",
                "dry_run",
            ],
        );
        assert!(
            cwd.path()
                .join(".tollgate/adapter-preflight")
                .read_dir()
                .unwrap()
                .next()
                .is_some()
        );
        let status = ok(&cwd, &["cover", "review", "status", "--pack-root", PACK]);
        assert!(status.contains("author-check: passes"), "{status}");

        // The generated tests pass.
        let tests = Command::new("python3")
            .current_dir(cwd.path().join(PACK))
            .args(["-m", "unittest", "discover", "-s", "tests"])
            .output()
            .unwrap();
        assert!(tests.status.success(), "{app}: {}", stderr(&tests));

        // The demo opens a case; `cases inspect` shows it awaiting approval.
        let demo = Command::new(cwd.path().join(PACK).join("demo.sh"))
            .current_dir(cwd.path())
            .env("TOLLGATE", env!("CARGO_BIN_EXE_tollgate"))
            .env("TOLLGATE_DATABASE_URL", cwd.database_url())
            .output()
            .unwrap();
        assert!(demo.status.success(), "{app}: {}", stderr(&demo));
        let case_id = stdout(&demo).trim().to_string();
        assert!(case_id.starts_with("case-"), "{app}: {case_id}");
        let inspected = ok(&cwd, &["cases", "inspect", &case_id]);
        assert!(
            inspected.contains("awaiting_approval") && inspected.contains("dry run"),
            "{app}: {inspected}"
        );
    }
}

#[test]
fn a_tool_that_changes_something_cannot_be_reviewed_into_a_worker() {
    let cwd = inspect_and_scaffold("openai_agents_support", "support.app:triage_agent");
    ok(
        &cwd,
        &[
            "cover",
            "review",
            "template",
            "--pack-root",
            PACK,
            "--output",
            "review.yaml",
        ],
    );
    // The developer turns `issue_refund` (it POSTs a refund) into a worker.
    let text = read(&cwd, "review.yaml").replace("decision: pending", "decision: accept");
    let text = text.replacen(
        "  role: boundary\n",
        "  role: worker\n  worker: issue_refund\n",
        1,
    );
    std::fs::write(cwd.path().join("review.yaml"), &text).unwrap();
    let workers_before = read(&cwd, &format!("{PACK}/workers.yaml"));
    let out = run(
        &cwd,
        &[
            "cover",
            "review",
            "apply",
            "--pack-root",
            PACK,
            "--mapping-file",
            "review.yaml",
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    let refund = text
        .lines()
        .position(|l| l == "- tool: support.app:issue_refund")
        .unwrap();
    let line = text
        .lines()
        .enumerate()
        .skip(refund)
        .find(|(_, l)| *l == "  role: worker")
        .map(|(i, _)| i + 1)
        .unwrap();
    assert!(
        err.contains(&format!("review.yaml:{line}:"))
            && err.contains("cannot be one")
            && err.contains("role: boundary"),
        "{err}"
    );
    assert_eq!(read(&cwd, &format!("{PACK}/workers.yaml")), workers_before);
    assert!(
        !cwd.path()
            .join(PACK)
            .join("cover/review.applied.yaml")
            .exists()
    );
}

#[test]
fn a_rejected_boundary_becomes_no_action_and_a_bad_review_changes_nothing() {
    let cwd = inspect_and_scaffold("plain_openai_tools", "ops.bot:run_conversation");
    ok(
        &cwd,
        &["cover", "boundaries", "suggest", "--pack-root", PACK],
    );
    let suggested = read(&cwd, &format!("{PACK}/cover-boundaries.suggested.yaml"));
    // `restart_service` runs `systemctl`: rejecting it is suggested.
    assert!(suggested.contains("suggested: reject"), "{suggested}");
    ok(
        &cwd,
        &[
            "cover",
            "boundaries",
            "review",
            "template",
            "--pack-root",
            PACK,
        ],
    );
    let review = format!("{PACK}/cover-boundaries.review.yaml");
    // A review for another pack, with a bad action id: refused whole, with lines.
    let bad = read(&cwd, &review)
        .replace("decision: pending", "decision: accept")
        .replace("action: restart_service", "action: Restart-Service")
        .replace("pack_id: covered_run_conversation", "pack_id: someone_else");
    std::fs::write(cwd.path().join("bad.yaml"), &bad).unwrap();
    let actions_before = read(&cwd, &format!("{PACK}/actions.yaml"));
    let out = run(
        &cwd,
        &[
            "cover",
            "boundaries",
            "review",
            "apply",
            "--pack-root",
            PACK,
            "--mapping-file",
            "bad.yaml",
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("`Restart-Service` is not an id") && err.contains("someone_else"),
        "{err}"
    );
    assert_eq!(read(&cwd, &format!("{PACK}/actions.yaml")), actions_before);
    // Rejected, as suggested: no action, and the author still owes a demo.
    let text = read(&cwd, &review).replace("decision: pending", "decision: reject");
    std::fs::write(cwd.path().join(&review), text).unwrap();
    let out = ok(
        &cwd,
        &[
            "cover",
            "boundaries",
            "review",
            "apply",
            "--pack-root",
            PACK,
            "--mapping-file",
            &review,
        ],
    );
    assert!(out.contains("no boundary was accepted"), "{out}");
    assert!(!read(&cwd, &format!("{PACK}/actions.yaml")).contains("restart_service"));
    assert!(read(&cwd, &format!("{PACK}/rules/boundaries.dl")).contains("nothing is permitted"));
    let check = run(&cwd, &["packs", "author-check", "--pack-root", PACK]);
    assert_eq!(check.status.code(), Some(1));
}

#[test]
fn scaffold_refuses_a_folder_that_is_not_empty_and_a_report_that_is_not_one() {
    let cwd = inspect_and_scaffold("mixed_agents_mcp", "mixed.main:planner");
    let again = run(&cwd, &["cover", "scaffold"]);
    assert_eq!(again.status.code(), Some(2));
    assert!(stderr(&again).contains("not empty"), "{}", stderr(&again));
    std::fs::write(cwd.path().join("other.json"), r#"{"schema": "other/v9"}"#).unwrap();
    let out = run(
        &cwd,
        &[
            "cover",
            "scaffold",
            "--from",
            "other.json",
            "--output",
            "p2",
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("`other/v9` is not `tollgate.cover/v1`"),
        "{}",
        stderr(&out)
    );
    assert!(!Path::new(&cwd.path().join("p2")).exists());
}
