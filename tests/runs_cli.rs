//! End-to-end tests of the store and the flight recorder from the command line: `db check |
//! upgrade | downgrade`, `runs import | list | show | export | verify`, `provenance` and
//! `replay exact`, on the fixture runs under `fixtures/runs/`, each test in its own database.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::PathBuf;
use std::process::Output;

use support::{TempDir, root, stderr, stdout, tollgate_env};

struct Db {
    dir: TempDir,
    url: String,
}

impl Db {
    fn new(tag: &str) -> Db {
        let dir = TempDir::new(tag);
        let url = dir.database_url();
        Db { dir, url }
    }

    fn run(&self, args: &[&str]) -> Output {
        tollgate_env(&[("TOLLGATE_DATABASE_URL", &self.url)], args)
    }

    fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "tollgate {args:?} failed:\n{}{}",
            stdout(&out),
            stderr(&out)
        );
        stdout(&out)
    }
}

fn fixture_runs() -> Vec<PathBuf> {
    let mut runs: Vec<PathBuf> = std::fs::read_dir(root().join("fixtures/runs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    runs.sort();
    assert!(
        runs.len() >= 5,
        "expected five fixture runs, found {runs:?}"
    );
    runs
}

fn run_id(path: &PathBuf) -> String {
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    doc["run"]["id"].as_str().unwrap().to_string()
}

fn import_all(db: &Db) -> Vec<String> {
    let paths = fixture_runs();
    let mut args = vec!["runs", "import"];
    let strs: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    args.extend(strs.iter().map(String::as_str));
    let out = db.ok(&args);
    assert_eq!(out.matches("imported").count(), paths.len(), "{out}");
    paths.iter().map(run_id).collect()
}

#[test]
fn db_check_reports_behind_then_current_after_upgrade() {
    let db = Db::new("dbcheck");
    let out = db.run(&["db", "check"]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    // PostgreSQL's schema begins at its baseline (ARCHITECTURE.md).
    let first = if support::on_postgres() {
        "0022 baseline"
    } else {
        "0001 core"
    };
    assert!(
        stdout(&out).contains(&format!("pending   {first}")),
        "{}",
        stdout(&out)
    );
    assert!(stdout(&out).contains("tollgate db upgrade"));
    let up = db.ok(&["db", "upgrade"]);
    assert!(up.contains(&format!("applied {}", &first[..4])), "{up}");
    let out = db.run(&["db", "check", "--json"]);
    assert_eq!(out.status.code(), Some(0));
    let status: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(status["current"], status["latest"]);
    assert_eq!(status["pending"], serde_json::json!([]));
    assert_eq!(status["integrity"], serde_json::json!([]));
    // Down one, behind again; up again, current.
    db.ok(&["db", "downgrade"]);
    assert_eq!(db.run(&["db", "check"]).status.code(), Some(1));
    db.ok(&["db", "upgrade"]);
    assert_eq!(db.run(&["db", "check"]).status.code(), Some(0));
    if !support::on_postgres() {
        assert!(db.dir.path().join("tollgate.db").exists());
    }
}

#[test]
fn the_first_command_creates_and_migrates_the_store() {
    let db = Db::new("first");
    let out = db.ok(&["runs", "list"]);
    assert!(out.contains("no runs recorded"), "{out}");
    assert_eq!(db.run(&["db", "check"]).status.code(), Some(0));
}

#[test]
fn every_fixture_run_imports_verifies_shows_and_replays_without_drift() {
    let db = Db::new("fixtures");
    let ids = import_all(&db);
    let list = db.ok(&["runs", "list"]);
    for id in &ids {
        assert!(list.contains(id.as_str()), "{list}");
        let verify = db.ok(&["runs", "verify", id]);
        assert!(verify.contains("chain intact"), "{verify}");
        let show = db.ok(&["runs", "show", id]);
        assert!(show.starts_with(&format!("run {id}")), "{show}");
        assert!(
            show.contains("compile") && show.contains("model_output"),
            "{show}"
        );
        let replay = db.ok(&["replay", "exact", id]);
        assert!(replay.contains("no drift"), "{replay}");
    }
    // Importing again changes nothing.
    let again = db.ok(&["runs", "import", fixture_runs()[0].to_str().unwrap()]);
    assert!(again.contains("already recorded"), "{again}");
}

#[test]
fn export_then_import_elsewhere_gives_the_same_chain() {
    let db = Db::new("export");
    let ids = import_all(&db);
    let exported = db.dir.path().join("exported.json");
    db.ok(&["runs", "export", &ids[0], "-o", exported.to_str().unwrap()]);
    let other = Db::new("export2");
    other.ok(&["runs", "import", exported.to_str().unwrap()]);
    let a = db.ok(&["runs", "verify", &ids[0], "--json"]);
    let b = other.ok(&["runs", "verify", &ids[0], "--json"]);
    let head = |s: &str| serde_json::from_str::<serde_json::Value>(s).unwrap()["head"].clone();
    assert_eq!(head(&a), head(&b));
}

#[test]
fn editing_one_stored_event_by_hand_makes_verify_name_it() {
    let db = Db::new("tamper");
    let ids = import_all(&db);
    let run = &ids[0];
    let id = run.clone();
    let changed = support::store_at(&db.url)
        .write(move |c| {
            c.execute(
                "UPDATE events SET payload = replace(payload, 'a', 'b') WHERE run_id = ?1 AND seq = 7 AND payload IS NOT NULL",
                [id],
            )
        })
        .unwrap();
    assert_eq!(changed, 1, "event 7 of {run} should be stored inline");
    let out = db.run(&["runs", "verify", run]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let text = stdout(&out);
    assert!(
        text.contains("event 7") && text.contains("edited"),
        "{text}"
    );
    // Other runs are untouched.
    assert!(db.ok(&["runs", "verify", &ids[1]]).contains("chain intact"));
}

#[test]
fn provenance_walks_back_to_the_run_and_forward_to_what_used_it() {
    let db = Db::new("prov");
    let ids = import_all(&db);
    let run = &ids[0];
    let show: serde_json::Value =
        serde_json::from_str(&db.ok(&["runs", "show", run, "--json"])).unwrap();
    let call = show["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["kind"] == "model_call")
        .unwrap()["seq"]
        .as_u64()
        .unwrap();
    let node = format!("event:{run}/{call}");
    let back = db.ok(&["provenance", &node]);
    assert!(back.starts_with(&format!("ancestors of {node}")), "{back}");
    assert!(
        back.contains("[compiled]") && back.contains(&format!("run:{run}")),
        "{back}"
    );
    let forward = db.ok(&["provenance", run, "--used-by", "--json"]);
    let answer: serde_json::Value = serde_json::from_str(&forward).unwrap();
    assert!(answer["nodes"].as_array().unwrap().len() > 10);
    let dot = db.ok(&["provenance", &node, "--dot"]);
    assert!(dot.starts_with("digraph"), "{dot}");
}

#[test]
fn bad_input_changes_nothing() {
    let db = Db::new("bad");
    let bad = db.dir.path().join("bad.json");
    std::fs::write(
        &bad,
        r#"{"format": "tollgate.run/v1", "run": {"id": "x y"}}"#,
    )
    .unwrap();
    let out = db.run(&["runs", "import", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("bad.json"), "{}", stderr(&out));
    assert!(db.ok(&["runs", "list"]).contains("no runs recorded"));
    let out = db.run(&["runs", "verify", "nope"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("no run `nope`"), "{}", stderr(&out));
    let out = tollgate_env(&[("TOLLGATE_DATABASE_URL", "mysql://x")], &["runs", "list"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("sqlite:PATH"), "{}", stderr(&out));
    assert!(stderr(&out).contains("postgres://"), "{}", stderr(&out));
    // PostgreSQL is an engine (issue 37): a server that is not there gets the seed's remedy.
    let out = tollgate_env(
        &[("TOLLGATE_DATABASE_URL", "postgres://x@127.0.0.1:1/x")],
        &["runs", "list"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("Database unreachable"),
        "{}",
        stderr(&out)
    );
    // The unreachable server's URL is said once (it was said twice: the store's name, then the
    // connection error naming it again).
    assert_eq!(
        stderr(&out).matches("127.0.0.1:1").count(),
        1,
        "{}",
        stderr(&out)
    );
}

#[test]
fn an_otlp_trace_imports_as_a_run_with_a_holding_chain() {
    let db = Db::new("otel");
    let out = db.ok(&[
        "runs",
        "import",
        "fixtures/otel/coding-agent-trace.json",
        "--scope",
        "org:acme/repo:api",
        "--json",
    ]);
    let summaries: serde_json::Value = serde_json::from_str(&out).unwrap();
    let run = summaries[0]["run"].as_str().unwrap().to_string();
    assert!(run.starts_with("otel-"), "{run}");
    assert!(summaries[0]["events"].as_u64().unwrap() > 10, "{out}");
    assert!(db.ok(&["runs", "verify", &run]).contains("chain intact"));
    let show = db.ok(&["runs", "show", &run]);
    assert!(
        show.contains("tool_call") && show.contains("model_call"),
        "{show}"
    );
    assert!(show.contains("scope org:acme/repo:api"), "{show}");
}

/// Bug 1 of issue 33: every command panicked ("failed printing to stdout: Broken pipe", exit
/// 101) when its reader stopped early, as `| head -1` does. The pipe here has no reader from
/// the start, so the command's first write meets it closed.
#[test]
fn a_closed_pipe_ends_every_command_quietly() {
    let db = Db::new("pipe");
    let ids = import_all(&db);
    let run = ids[0].as_str();
    let envelopes = root().join("fixtures/envelopes");
    let commands: Vec<Vec<&str>> = vec![
        vec!["runs", "list"],
        vec!["runs", "show", run, "--json"],
        vec!["runs", "export", run],
        vec!["memory", "list"],
        vec!["cases", "list"],
        vec!["policy", "check", envelopes.to_str().unwrap()],
        vec!["db", "check", "--json"],
    ];
    for args in commands {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_tollgate"))
            .current_dir(root())
            .env("TOLLGATE_DATABASE_URL", &db.url)
            .args(&args)
            .stdout(writer)
            .stderr(std::process::Stdio::piped())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "tollgate {args:?}: {:?}\n{}",
            out.status,
            stderr(&out)
        );
        assert!(!stderr(&out).contains("panicked"), "{}", stderr(&out));
    }
}

/// Bug 2 of issue 33: with the `case*` tables dropped, `cases list` said "run tollgate db
/// upgrade", `db check` said "integrity ok" and `db upgrade` "up to date": a dead end.
#[test]
fn db_check_names_the_tables_missing_and_db_repair_recreates_them() {
    let db = Db::new("missing");
    import_all(&db);
    support::store_at(&db.url)
        .write(|c| {
            c.execute_batch("DROP TABLE cases; DROP TABLE case_events; DROP TABLE case_timeline;")
        })
        .unwrap();
    let out = db.run(&["cases", "list"]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("tollgate db repair"),
        "{}",
        stderr(&out)
    );

    let out = db.run(&["db", "check"]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let text = stdout(&out);
    for missing in [
        "missing   table `cases`",
        "missing   index `cases_by_update`",
        "missing   table `case_events`",
        "missing   table `case_timeline`",
    ] {
        assert!(text.contains(missing), "{missing}: {text}");
    }
    assert!(text.contains("tollgate db repair"), "{text}");
    let upgrade = db.ok(&["db", "upgrade"]);
    assert!(upgrade.contains("run `tollgate db repair`"), "{upgrade}");

    let repaired = db.ok(&["db", "repair"]);
    assert!(repaired.contains("recreated table `cases`"), "{repaired}");
    assert!(
        repaired.contains("recreated index `cases_by_update`"),
        "{repaired}"
    );
    let out = db.run(&["db", "check", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let doc: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(doc["missing"], serde_json::json!([]));
    db.ok(&["cases", "list"]);
    // The runs were not touched, and a second repair has nothing to do.
    assert!(
        db.ok(&["runs", "list"])
            .contains(&run_id(&fixture_runs()[0]))
    );
    assert!(db.ok(&["db", "repair"]).contains("nothing to repair"));
}
