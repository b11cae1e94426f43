//! End-to-end tests of auto-regression: `tollgate regress from-run|run|update` as a user runs
//! them, against a fresh store holding the fixture runs, and the `/v2/regressions` routes of a
//! running gateway, whose own worker runs the suite job.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/mod.rs"]
mod support;

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::json;
use support::{Gateway, TempDir, root, stderr, stdout};

/// Runs `tollgate ARGS...` in `dir`, with its own store there.
fn tollgate_in(dir: &Path, args: &[&str]) -> Output {
    support::with_store(&mut Command::new(env!("CARGO_BIN_EXE_tollgate")), dir)
        .current_dir(dir)
        .args(args)
        .output()
        .expect("run tollgate")
}

fn ok(out: &Output) -> String {
    assert!(out.status.success(), "{}\n{}", stdout(out), stderr(out));
    stdout(out)
}

fn import(dir: &Path, fixture: &str) {
    let path = root().join("fixtures/runs").join(fixture);
    ok(&tollgate_in(
        dir,
        &["runs", "import", path.to_str().unwrap()],
    ));
}

#[test]
fn a_fixture_run_becomes_a_case_in_one_command_and_runs_as_a_junit_suite() {
    let dir = TempDir::new("regress-junit");
    import(dir.path(), "04-forbidden-tool-pool-exhaustion.json");
    let made = ok(&tollgate_in(
        dir.path(),
        &["regress", "from-run", "run-forbidden-tool-pool-exhaustion"],
    ));
    assert!(
        made.contains("wrote regressions/run-forbidden-tool-pool-exhaustion.yaml"),
        "{made}"
    );
    let bundle = std::fs::read_to_string(
        dir.path()
            .join("regressions/fixtures/run-forbidden-tool-pool-exhaustion.json"),
    )
    .unwrap();
    for secret in ["AKIASFUHIPUR8FUTQKVQ", "Xk3r9tQe2mZwq7"] {
        assert!(
            !bundle.contains(secret),
            "{secret} is in the committed fixture"
        );
    }
    // A step case too, from the run file directly.
    let file = root().join("fixtures/runs/01-bugfix-users-404.json");
    ok(&tollgate_in(
        dir.path(),
        &[
            "regress",
            "from-run",
            "--file",
            file.to_str().unwrap(),
            "--step",
            "7",
            "--task-type",
            "bugfix",
        ],
    ));

    let out = tollgate_in(
        dir.path(),
        &[
            "regress",
            "run",
            "--format",
            "junit",
            "--report",
            "junit.xml",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("2 case(s): 2 passed"),
        "{}",
        stderr(&out)
    );
    let xml = std::fs::read_to_string(dir.path().join("junit.xml")).unwrap();
    assert!(xml.starts_with("<?xml"), "{xml}");
    assert!(
        xml.contains("tests=\"2\" failures=\"0\" errors=\"0\""),
        "{xml}"
    );
    assert!(xml.contains("classname=\"coder.bugfix\""), "{xml}");
    assert!(
        xml.contains("name=\"run-bugfix-users-404-step-7\""),
        "{xml}"
    );

    let json: serde_json::Value = serde_json::from_str(&ok(&tollgate_in(
        dir.path(),
        &[
            "regress",
            "run",
            "regressions",
            "--format",
            "json",
            "--repeat",
            "2",
        ],
    )))
    .unwrap();
    assert_eq!(json["figures"]["passed"], 2);
    assert_eq!(json["figures"]["flaky"], 0);
    assert_eq!(json["figures"]["by_task_type"]["bugfix"]["cases"], 1);
    assert_eq!(json["cases"][0]["runs"], 2);
}

#[test]
fn a_failing_case_exits_1_with_its_signature_and_an_update_makes_version_2() {
    let dir = TempDir::new("regress-update");
    import(dir.path(), "04-forbidden-tool-pool-exhaustion.json");
    ok(&tollgate_in(
        dir.path(),
        &[
            "regress",
            "from-run",
            "run-forbidden-tool-pool-exhaustion",
            "--id",
            "pool",
        ],
    ));
    let case = dir.path().join("regressions/pool.yaml");
    let text = std::fs::read_to_string(&case).unwrap();
    // Someone expects the denied `secrets.read` call to be allowed.
    assert!(text.contains("value: deny"), "{text}");
    std::fs::write(&case, text.replacen("value: deny", "value: allow", 1)).unwrap();

    let out = tollgate_in(dir.path(), &["regress", "run"]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let report = stdout(&out);
    assert!(report.contains("FAIL  pool"), "{report}");
    assert!(report.contains("signature sig-"), "{report}");
    assert!(report.contains("(expected allow)"), "{report}");

    let out = tollgate_in(
        dir.path(),
        &[
            "regress",
            "update",
            case.to_str().unwrap(),
            "--reason",
            "the denial is right",
        ],
    );
    let diff = ok(&out);
    assert!(diff.contains("-version: 1\n+version: 2"), "{diff}");
    assert!(
        diff.lines()
            .any(|l| l.starts_with('+') && l.ends_with("value: deny")),
        "{diff}"
    );
    assert!(stderr(&out).contains("version 2"), "{}", stderr(&out));
    ok(&tollgate_in(dir.path(), &["regress", "run"]));
    let text = std::fs::read_to_string(&case).unwrap();
    assert!(text.contains("reason: the denial is right"), "{text}");
}

/// The optional LLM judge from the command line: off by default, an `llm_judge` assertion
/// fails saying how to turn it on; `TOLLGATE_LLM_JUDGE=on` asks the configured provider (the
/// fake one here, whose answer is no verdict, so the case still fails, saying that); a wrong
/// flag is an error naming it.
#[test]
fn an_llm_judge_assertion_runs_only_with_the_judge_turned_on() {
    let dir = TempDir::new("regress-judge");
    import(dir.path(), "01-bugfix-users-404.json");
    ok(&tollgate_in(
        dir.path(),
        &[
            "regress",
            "from-run",
            "run-bugfix-users-404",
            "--id",
            "judged",
        ],
    ));
    let case = dir.path().join("regressions/judged.yaml");
    let text = std::fs::read_to_string(&case).unwrap();
    let at = text.find("\n  output:\n").expect("an output class") + "\n  output:\n".len();
    let judged = format!(
        "{}  - kind: llm_judge\n    rubric: The agent fixed the 404 on the users route.\n{}",
        &text[..at],
        &text[at..]
    );
    std::fs::write(&case, judged).unwrap();

    let off = tollgate_in(dir.path(), &["regress", "run"]);
    assert_eq!(off.status.code(), Some(1), "{}", stdout(&off));
    assert!(
        stdout(&off).contains("TOLLGATE_LLM_JUDGE=on"),
        "{}",
        stdout(&off)
    );

    let run_with = |flag: &str| {
        support::with_store(
            &mut Command::new(env!("CARGO_BIN_EXE_tollgate")),
            dir.path(),
        )
        .current_dir(dir.path())
        .env("TOLLGATE_LLM_JUDGE", flag)
        .env("TOLLGATE_PROVIDER", "fake")
        .args(["regress", "run"])
        .output()
        .unwrap()
    };
    let on = run_with("on");
    assert_eq!(on.status.code(), Some(1), "{}", stdout(&on));
    assert!(
        stdout(&on).contains("did not answer with a verdict"),
        "{}",
        stdout(&on)
    );
    let wrong = run_with("yes");
    assert!(!wrong.status.success());
    assert!(
        stderr(&wrong).contains("`TOLLGATE_LLM_JUDGE` is `yes`"),
        "{}",
        stderr(&wrong)
    );
}

#[test]
fn a_malformed_case_fails_the_suite_with_its_file_and_line() {
    let dir = TempDir::new("regress-bad");
    let cases = dir.path().join("regressions");
    std::fs::create_dir_all(&cases).unwrap();
    std::fs::write(
        cases.join("broken.yaml"),
        "format: tollgate.case/v1\nid: broken\nversion: one\n",
    )
    .unwrap();
    let out = tollgate_in(dir.path(), &["regress", "run"]);
    assert_eq!(out.status.code(), Some(1));
    let report = stdout(&out);
    assert!(report.contains("ERROR broken"), "{report}");
    assert!(report.contains("regressions/broken.yaml:3"), "{report}");
    assert!(report.contains("help:"), "{report}");
}

#[test]
fn bad_requests_write_nothing() {
    let dir = TempDir::new("regress-nothing");
    import(dir.path(), "03-flaky-webhook-retry.json");
    let out = tollgate_in(dir.path(), &["regress", "from-run", "run-nobody-recorded"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("run-nobody-recorded"),
        "{}",
        stderr(&out)
    );
    let out = tollgate_in(
        dir.path(),
        &[
            "regress",
            "from-run",
            "run-flaky-webhook-retry",
            "--step",
            "99",
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("has no step 99"), "{}", stderr(&out));
    assert!(!dir.path().join("regressions").exists());
    // An empty suite is an error, not a green gate.
    let out = tollgate_in(dir.path(), &["regress", "run", "."]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("no case under"), "{}", stderr(&out));
}

#[test]
fn the_api_makes_runs_versions_and_keeps_the_history_of_cases() {
    let gw = Gateway::with_fixture_envelopes();
    gw.import_fixture_runs(&[
        "04-forbidden-tool-pool-exhaustion.json",
        "03-flaky-webhook-retry.json",
    ]);

    // From a run: an empty POST takes the defaults.
    let (status, made) = gw.call(
        "POST",
        "/v2/regressions/from-run/run-forbidden-tool-pool-exhaustion",
        None,
    );
    assert_eq!(status, 201, "{made}");
    let id = made["case"]["id"].as_str().unwrap().to_string();
    assert_eq!(made["case"]["version"], 1);
    assert!(
        made["bundle"]["redactions"]["aws_access_key"]
            .as_u64()
            .unwrap()
            >= 1,
        "{made}"
    );
    assert!(
        !made["yaml"]
            .as_str()
            .unwrap()
            .contains("AKIASFUHIPUR8FUTQKVQ")
    );
    // The same id again is a conflict; nothing new is stored.
    let (status, err) = gw.call(
        "POST",
        "/v2/regressions/from-run/run-forbidden-tool-pool-exhaustion",
        None,
    );
    assert_eq!(status, 409, "{err}");
    assert_eq!(gw.count("regression_cases"), 1);
    // A step the run lacks, an unknown field, an unknown run.
    let bad = [
        ("run-flaky-webhook-retry", json!({"step": 99}), 422),
        ("run-flaky-webhook-retry", json!({"stpe": 1}), 422),
        ("run-nobody", json!({}), 404),
    ];
    for (run, body, code) in bad {
        let (status, err) = gw.call(
            "POST",
            &format!("/v2/regressions/from-run/{run}"),
            Some(&body),
        );
        assert_eq!(status, code, "{err}");
        assert!(err["error"]["code"].is_string(), "{err}");
    }
    assert_eq!(gw.count("regression_cases"), 1);

    // A step case, named.
    let (status, step) = gw.call(
        "POST",
        "/v2/regressions/from-run/run-flaky-webhook-retry",
        Some(&json!({"step": 3, "id": "flaky-step-3", "task_type": "flaky-test"})),
    );
    assert_eq!(status, 201, "{step}");

    // Executed twice: the history has both, newest first.
    for _ in 0..2 {
        let (status, run) = gw.call("POST", &format!("/v2/regressions/{id}/execute"), None);
        assert_eq!(status, 201, "{run}");
        assert_eq!(run["status"], "passed", "{run}");
        assert_eq!(run["drift"], false);
    }
    let (_, history) = gw.call("GET", &format!("/v2/regressions/{id}/history"), None);
    let runs = history["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    assert!(runs[0]["id"].as_i64() > runs[1]["id"].as_i64());
    let (status, _) = gw.call(
        "POST",
        &format!("/v2/regressions/{id}/execute?repeat=0"),
        None,
    );
    assert_eq!(status, 422);

    // Nothing to accept: no new version.
    let (status, same) = gw.call(
        "POST",
        &format!("/v2/regressions/{id}/versions"),
        Some(&json!({"reason": "check"})),
    );
    assert_eq!(
        (status, same["changed"].clone()),
        (200, json!(false)),
        "{same}"
    );
    let (status, one) = gw.call("GET", &format!("/v2/regressions/{id}"), None);
    assert_eq!(status, 200, "{one}");
    assert_eq!(one["versions"].as_array().unwrap().len(), 1);
    assert!(one["diff"].is_null());
    let (status, _) = gw.call("GET", &format!("/v2/regressions/{id}?version=7"), None);
    assert_eq!(status, 404);
    let (_, listed) = gw.call("GET", "/v2/regressions", None);
    assert_eq!(listed["cases"].as_array().unwrap().len(), 2);
    assert_eq!(listed["cases"][1]["last_status"], "passed", "{listed}");

    // A replay result becomes a case, and the suite runs every case as a job.
    let (status, scenario) = gw.call(
        "POST",
        "/v2/replays/scenarios",
        Some(&json!({"run": "run-flaky-webhook-retry", "step": 5,
                      "mutations": [{"kind": "change_budget", "budget": 900}]})),
    );
    assert_eq!(status, 201, "{scenario}");
    let scn = scenario["scenario"]["id"].as_str().unwrap();
    let (status, result) = gw.call(
        "POST",
        &format!("/v2/replays/scenarios/{scn}/execute"),
        None,
    );
    assert_eq!(status, 201, "{result}");
    let rpl = result["id"].as_str().unwrap();
    let (status, from_replay) =
        gw.call("POST", &format!("/v2/regressions/from-replay/{rpl}"), None);
    assert_eq!(status, 201, "{from_replay}");
    assert_eq!(from_replay["case"]["source"]["replay"], rpl);
    assert_eq!(from_replay["case"]["mutations"][0]["kind"], "change_budget");

    let (status, started) = gw.call(
        "POST",
        "/v2/regressions/suites/execute",
        Some(&json!({"repeat": 2})),
    );
    assert_eq!(status, 202, "{started}");
    let suite = started["suite"]["id"].as_str().unwrap().to_string();
    let began = Instant::now();
    let view = loop {
        let (_, view) = gw.call("GET", &format!("/v2/regressions/suites/{suite}"), None);
        if view["suite"]["finished_at"].is_string() {
            break view;
        }
        assert!(began.elapsed() < Duration::from_secs(120), "{view}");
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(view["suite"]["figures"]["cases"], 3, "{view}");
    assert_eq!(view["suite"]["figures"]["passed"], 3, "{view}");
    assert_eq!(view["runs"].as_array().unwrap().len(), 3);
    assert_eq!(view["runs"][0]["runs"], 2);
    let (status, err) = gw.call(
        "POST",
        "/v2/regressions/suites/execute",
        Some(&json!({"task_type": "nothing-like-this"})),
    );
    // No case matches: nothing found (a valid request, so not 422).
    assert_eq!(status, 404, "{err}");
    let (status, err) = gw.call(
        "POST",
        "/v2/regressions/suites/execute",
        Some(&json!({"cases": ["nobody"]})),
    );
    assert_eq!(status, 404, "{err}");

    // A case made over HTTP becomes files a repository commits, and runs from them.
    let (status, bundle) = gw.call("GET", &format!("/v2/regressions/{id}/bundle"), None);
    assert_eq!(
        (status, bundle["format"].clone()),
        (200, json!("tollgate.fixture/v1"))
    );
    ok(&gw.tollgate(&["regress", "pull", &id, "--output", "committed"]));
    let out = gw.tollgate(&["regress", "run", "committed", "--format", "json"]);
    let report: serde_json::Value = serde_json::from_str(&ok(&out)).unwrap();
    assert_eq!(report["figures"]["passed"], 1, "{report}");
}

/// Runs git in `dir`; it must succeed.
fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .current_dir(dir)
        .args([
            "-c",
            "user.name=Test",
            "-c",
            "user.email=test@example.invalid",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .output()
        .expect("run git");
    assert!(out.status.success(), "git {args:?}: {}", stderr(&out));
}

#[test]
fn bisect_finds_the_commit_whose_compiler_setting_broke_a_case() {
    let dir = TempDir::new("regress-bisect");
    let repo = dir.path();
    git(repo, &["init", "-q", "-b", "main"]);
    std::fs::create_dir_all(repo.join("policies")).unwrap();
    for name in ["coding-agent.yaml", "org-baseline.yaml"] {
        std::fs::copy(
            root().join("fixtures/envelopes").join(name),
            repo.join("policies").join(name),
        )
        .unwrap();
    }
    std::fs::create_dir_all(repo.join("regressions")).unwrap();
    let target = repo.join("regressions/target.yaml");
    std::fs::write(&target, "envelopes: ../policies\n").unwrap();
    let file = root().join("fixtures/runs/01-bugfix-users-404.json");
    ok(&tollgate_in(
        repo,
        &[
            "regress",
            "from-run",
            "--file",
            file.to_str().unwrap(),
            "--step",
            "12",
            "--id",
            "users-404",
        ],
    ));
    ok(&tollgate_in(repo, &["regress", "run"]));
    git(repo, &["add", "-A"]);
    git(repo, &["commit", "-q", "-m", "a case and its target"]);

    // An unrelated policy edit, the broken setting, then another unrelated edit.
    let org = repo.join("policies/org-baseline.yaml");
    let text = std::fs::read_to_string(&org).unwrap();
    std::fs::write(
        &org,
        text.replace("Organisation-wide floor", "The organisation's floor"),
    )
    .unwrap();
    git(repo, &["commit", "-q", "-am", "reword the org baseline"]);
    std::fs::write(&target, "envelopes: ../policies\nsettings: {budget: 400}\n").unwrap();
    git(repo, &["commit", "-q", "-am", "smaller context budget"]);
    std::fs::write(
        &target,
        "# what the suite runs against\nenvelopes: ../policies\nsettings: {budget: 400}\n",
    )
    .unwrap();
    git(repo, &["commit", "-q", "-am", "document the target"]);

    let out = tollgate_in(repo, &["regress", "run"]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(
        stdout(&out).contains("target: regressions/target.yaml"),
        "{}",
        stdout(&out)
    );
    // Against what the bundle recorded, it still passes: the target broke it, not the build.
    ok(&tollgate_in(repo, &["regress", "run", "--recorded"]));

    let out = tollgate_in(
        repo,
        &[
            "regress",
            "bisect",
            "regressions/users-404.yaml",
            "--target",
            "regressions/target.yaml",
        ],
    );
    let report = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{report}\n{}", stderr(&out));
    assert!(report.contains("(smaller context budget)"), "{report}");
    assert!(report.contains("the 2nd of 3 change(s)"), "{report}");
    assert!(
        report.contains("compile settings: budget (recorded) -> 400"),
        "{report}"
    );
    assert!(report.contains("fails: structural"), "{report}");
}
