//! End-to-end tests of `tollgate jobs`: enqueue jobs, run workers as child processes, kill one
//! mid-job and check that the next worker finishes what it left.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use support::{root, stderr, stdout, tollgate};

/// A fresh folder for one test's database.
fn temp_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tollgate-jobs-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `tollgate ARGS...` on the database in `dir`.
fn command(dir: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_tollgate"));
    cmd.current_dir(root())
        .env(
            "TOLLGATE_DATABASE_URL",
            support::postgres_url(dir)
                .unwrap_or_else(|| format!("sqlite:{}", dir.join("t.db").display())),
        )
        .args(args);
    cmd
}

fn run(dir: &Path, args: &[&str]) -> Output {
    let out = command(dir, args).output().unwrap();
    assert!(
        out.status.success(),
        "tollgate {args:?} failed: {}{}",
        stdout(&out),
        stderr(&out)
    );
    out
}

fn show(dir: &Path, id: &str) -> Value {
    serde_json::from_str(&stdout(&run(dir, &["jobs", "show", id, "--json"]))).unwrap()
}

/// Waits for `child` to exit, killing it and failing after `limit`.
fn wait(mut child: Child, limit: Duration) -> std::process::ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            panic!("the worker did not finish within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_job_of_a_killed_worker_is_finished_by_the_next_one() {
    let dir = temp_dir("crash");
    let out = run(
        &dir,
        &[
            "jobs",
            "enqueue",
            "sleep",
            "--payload",
            r#"{"ms": 3000, "steps": 6}"#,
            "--json",
        ],
    );
    let id = serde_json::from_str::<Value>(&stdout(&out)).unwrap()["id"].to_string();
    assert_eq!(id, "1");

    let log = std::fs::File::create(dir.join("first.log")).unwrap();
    let mut first = command(
        &dir,
        &[
            "jobs",
            "run",
            "--lease-seconds",
            "2",
            "--worker-id",
            "first",
            "--poll-ms",
            "50",
        ],
    )
    .stderr(Stdio::from(log))
    .spawn()
    .unwrap();
    // Wait until the first worker has done part of the job.
    let start = Instant::now();
    loop {
        let job = show(&dir, &id);
        if job["job"]["progress"]["done"].as_u64().unwrap_or(0) >= 1 {
            assert_eq!(job["job"]["state"], "leased");
            assert_eq!(job["job"]["leased_by"], "first");
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "no progress: {job}\n{}",
            std::fs::read_to_string(dir.join("first.log")).unwrap()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    first.kill().unwrap();
    first.wait().unwrap();
    let job = show(&dir, &id);
    assert_eq!(
        job["job"]["state"], "leased",
        "the killed worker still holds the lease"
    );

    let second = command(
        &dir,
        &[
            "jobs",
            "run",
            "--lease-seconds",
            "2",
            "--worker-id",
            "second",
            "--idle-exit",
            "--poll-ms",
            "50",
        ],
    )
    .stdout(Stdio::null())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let status = wait(second, Duration::from_secs(60));
    assert!(status.success());

    let shown = show(&dir, &id);
    let job = &shown["job"];
    assert_eq!(job["state"], "succeeded", "{shown}");
    assert_eq!(job["attempts"], 2);
    assert_eq!(
        job["result"],
        serde_json::json!({"slept_ms": 3000, "steps": 6})
    );
    assert_eq!(job["progress"]["done"], 6);
    let history = shown["history"].as_array().unwrap();
    assert_eq!(history.len(), 2, "{shown}");
    assert_eq!(history[0]["worker"], "first");
    assert_eq!(history[0]["outcome"], "expired");
    assert_eq!(history[0]["error"], "lease expired: worker `first` stopped");
    assert_eq!(history[1]["worker"], "second");
    assert_eq!(history[1]["outcome"], "succeeded");

    let text = stdout(&run(&dir, &["jobs", "show", &id]));
    assert!(text.starts_with("job 1 (sleep): succeeded\n"), "{text}");
    assert!(
        text.contains(": expired: lease expired: worker `first` stopped\n"),
        "{text}"
    );
    // The killed worker left the database sound.
    let check = run(&dir, &["db", "check"]);
    assert!(
        stdout(&check).contains("integrity ok"),
        "{}",
        stdout(&check)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn enqueue_list_run_once_and_cancel() {
    let dir = temp_dir("basics");
    let out = run(
        &dir,
        &["jobs", "enqueue", "sleep", "--payload", r#"{"ms": 10}"#],
    );
    assert_eq!(stdout(&out), "enqueued job 1 (sleep)\n");
    run(
        &dir,
        &["jobs", "enqueue", "sleep", "--payload", r#"{"ms": 10}"#],
    );

    let out = run(&dir, &["jobs", "run", "--once", "--worker-id", "w"]);
    let log = stderr(&out);
    assert!(
        log.contains("job 1 (sleep): leased, attempt 1 of 5\n"),
        "{log}"
    );
    assert!(
        log.contains("job 1 (sleep): 1/1 slept 10 of 10 ms\n"),
        "{log}"
    );
    assert!(log.contains("job 1 (sleep): succeeded\n"), "{log}");

    let out = run(&dir, &["jobs", "cancel", "2"]);
    assert_eq!(stdout(&out), "cancelled job 2 (it was queued)\n");

    let list = stdout(&run(&dir, &["jobs", "list"]));
    let lines: Vec<&str> = list.lines().collect();
    assert!(
        lines[0].starts_with("ID  KIND   STATE      ATTEMPTS  PROGRESS"),
        "{list}"
    );
    assert!(lines[1].starts_with("2   sleep  cancelled  0/5"), "{list}");
    assert!(
        lines[2].starts_with("1   sleep  succeeded  1/5       1/1 slept 10 of 10 ms"),
        "{list}"
    );

    let json: Value = serde_json::from_str(&stdout(&run(
        &dir,
        &["jobs", "list", "--state", "succeeded", "--json"],
    )))
    .unwrap();
    assert_eq!(json.as_array().unwrap().len(), 1);
    assert_eq!(json[0]["id"], 1);

    // Nothing left: `--once` exits 0 and says so.
    let out = run(&dir, &["jobs", "run", "--once"]);
    assert!(stderr(&out).contains("no job is ready"), "{}", stderr(&out));

    // A payload that is not JSON, a missing job: input errors.
    let out = command(&dir, &["jobs", "enqueue", "sleep", "--payload", "{ms: 1}"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).starts_with("error: `--payload` is not JSON: `{ms: 1}`"),
        "{}",
        stderr(&out)
    );
    let out = command(&dir, &["jobs", "show", "7"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("there is no job `7`"),
        "{}",
        stderr(&out)
    );
    // A job that fails for good makes `run --once` exit 1.
    run(
        &dir,
        &["jobs", "enqueue", "sleep", "--payload", r#"{"steps": 2}"#],
    );
    let out = command(&dir, &["jobs", "run", "--once"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("job 3 (sleep): failed for good: the `sleep` payload needs `ms`"),
        "{}",
        stderr(&out)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn flags_are_checked_before_the_store_is_opened() {
    let out = tollgate(&["jobs", "list", "--state", "running"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("`running` is not a job state"),
        "{}",
        stderr(&out)
    );
    let out = tollgate(&["jobs", "run", "--lease-seconds", "0"]);
    assert_eq!(out.status.code(), Some(2));
}
