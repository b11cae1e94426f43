//! End-to-end tests of the memory distiller: `tollgate memory` on the fixture runs, and the
//! `/v2/memory` routes of a running gateway, whose own worker runs the distillation job.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/mod.rs"]
mod support;

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{Gateway, stderr, stdout};

fn json_of(out: &std::process::Output) -> Value {
    assert!(out.status.success(), "{}", stderr(out));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn the_cli_distills_a_run_once_lists_and_shows_its_memories_and_reviews_them() {
    let gw = Gateway::start();
    gw.import_fixture_runs(&["01-bugfix-users-404.json"]);
    let first = gw.tollgate(&["memory", "distill", "run-bugfix-users-404"]);
    assert!(first.status.success(), "{}", stderr(&first));
    let text = stdout(&first);
    assert!(text.contains("episode 0 steps 0-"), "{text}");
    assert!(
        stderr(&first).contains("candidate(s)"),
        "progress on stderr"
    );
    // Distilling again creates nothing.
    let again = json_of(&gw.tollgate(&["memory", "distill", "run-bugfix-users-404", "--json"]));
    let outcomes = again["outcomes"].as_array().unwrap();
    assert!(!outcomes.is_empty());
    assert!(
        outcomes.iter().all(|o| o["action"] == "unchanged"),
        "{again}"
    );

    let approved = json_of(&gw.tollgate(&["memory", "list", "--status", "approved", "--json"]));
    let pref = approved
        .as_array()
        .unwrap()
        .iter()
        .find(|m| {
            m["class"] == "preference" && m["text"].as_str().unwrap().contains("after the ticket")
        })
        .expect("the user's testing preference, approved");
    let id = pref["id"].as_str().unwrap();
    assert_eq!(pref["scope"], "org:acme/repo:api");
    let shown = stdout(&gw.tollgate(&["memory", "show", id]));
    assert!(shown.contains("source run run-bugfix-users-404"), "{shown}");
    assert!(shown.contains("accept by distiller"), "{shown}");
    // Its provenance leads back to the run.
    let prov = stdout(&gw.tollgate(&["provenance", id]));
    assert!(prov.contains("run:run-bugfix-users-404"), "{prov}");

    // A waiting candidate is reviewed; bad input changes nothing.
    let waiting = json_of(&gw.tollgate(&["memory", "list", "--status", "candidate", "--json"]));
    let cand = waiting[0]["id"].as_str().unwrap().to_string();
    let bad = gw.tollgate(&[
        "memory",
        "review",
        &cand,
        "--decision",
        "bless",
        "--by",
        "lead",
        "--reason",
        "x",
    ]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(stderr(&bad).contains("accept, reject, expire or quarantine"));
    let bad = gw.tollgate(&["memory", "list", "--status", "maybe"]);
    assert_eq!(bad.status.code(), Some(2));
    let ok = gw.tollgate(&[
        "memory",
        "review",
        &cand,
        "--decision",
        "reject",
        "--by",
        "lead",
        "--reason",
        "too specific",
    ]);
    assert!(ok.status.success(), "{}", stderr(&ok));
    let twice = gw.tollgate(&[
        "memory",
        "review",
        &cand,
        "--decision",
        "reject",
        "--by",
        "lead",
        "--reason",
        "again",
    ]);
    assert_eq!(twice.status.code(), Some(2));
    // Bug 13 of issue 33: an expired memory showed its expiry still to come.
    let id = id.to_string();
    let expired = gw.tollgate(&[
        "memory",
        "review",
        &id,
        "--decision",
        "expire",
        "--by",
        "lead",
        "--reason",
        "stale",
    ]);
    assert!(expired.status.success(), "{}", stderr(&expired));
    let shown = stdout(&gw.tollgate(&["memory", "show", &id]));
    assert!(shown.contains("\nexpired 20"), "{shown}");
    assert!(shown.contains("(stale by lead)"), "{shown}");
    assert!(!shown.contains("\nexpires "), "{shown}");
    // Decay now expires nothing fresh (the clock is the machine's: the fixture run is weeks
    // old, well inside its memories' lives).
    let decayed = json_of(&gw.tollgate(&["memory", "decay", "--json"]));
    assert!(decayed["considered"].as_u64().unwrap() > 0, "{decayed}");
    let unknown = gw.tollgate(&["memory", "show", "mem-nothing"]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(stderr(&unknown).contains("no memory"));
}

/// Bug 14 of issue 33: memory search was HTTP only. The command line finds what the route
/// finds, with the same filters.
#[test]
fn memory_search_on_the_command_line_finds_what_the_route_finds() {
    let gw = Gateway::with_fixture_envelopes();
    gw.import_fixture_runs(&["01-bugfix-users-404.json"]);
    let out = gw.tollgate(&["memory", "distill", "run-bugfix-users-404"]);
    assert!(out.status.success(), "{}", stderr(&out));
    // The coder may use every class the distiller keeps.
    let v2 = std::fs::read_to_string(support::root().join("fixtures/envelopes/coding-agent.yaml"))
        .unwrap();
    let v3 = v2.replace("version: 2", "version: 3").replace(
        "classes: [fact, procedure, warning]",
        "classes: [fact, procedure, warning, preference, summary]",
    );
    let (status, stored) = gw.raw(
        "POST",
        "/v2/policies/envelopes",
        Some(v3),
        &[
            ("Authorization", &format!("Bearer {}", gw.token)),
            ("Content-Type", "application/yaml"),
        ],
    );
    assert_eq!(status, 201, "{stored}");
    let cli = json_of(&gw.tollgate(&[
        "memory",
        "search",
        "users 404",
        "--scope",
        "org:acme/repo:api/task:T-101",
        "--clearance",
        "confidential",
        "--agent",
        "coder",
        "--json",
    ]));
    let (status, http) = gw.call(
        "GET",
        "/v2/memory/search?q=users%20404&scope=org:acme/repo:api/task:T-101&clearance=confidential&agent=coder",
        None,
    );
    assert_eq!(status, 200, "{http}");
    // The same memories in the same order, and the same counts (scores read the clock).
    let ids = |v: &Value| -> Vec<String> {
        v["hits"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["memory"]["id"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(ids(&cli), ids(&http));
    assert_eq!(cli["eligible"], http["eligible"]);
    assert_eq!(cli["withheld"], http["withheld"]);
    assert!(!cli["hits"].as_array().unwrap().is_empty(), "{cli}");
    let text = stdout(&gw.tollgate(&[
        "memory",
        "search",
        "test",
        "--scope",
        "org:acme/repo:api",
        "--class",
        "procedure",
    ]));
    assert!(text.contains("eligible from org:acme/repo:api"), "{text}");
    let bad = gw.tollgate(&[
        "memory",
        "search",
        "--scope",
        "org:acme",
        "--clearance",
        "top",
    ]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(stderr(&bad).contains("not a clearance"), "{}", stderr(&bad));
}

#[test]
fn the_gateway_distills_a_run_as_a_job_and_promotes_pins_and_expires_memories() {
    let gw = Gateway::with_fixture_envelopes();
    gw.import_fixture_runs(&["02-feature-users-pagination.json"]);
    let (status, answer) = gw.call(
        "POST",
        "/v2/memory/distill/run/run-feature-users-pagination",
        None,
    );
    assert_eq!(status, 202, "{answer}");
    assert_eq!(answer["job"]["kind"], "memory.distill");
    let job = answer["job"]["id"].to_string();

    // The gateway's own worker runs it.
    let started = Instant::now();
    let done = loop {
        let shown = json_of(&gw.tollgate(&["jobs", "show", &job, "--json"]))["job"].clone();
        if shown["state"] == "succeeded" {
            break shown;
        }
        assert!(
            shown["state"] != "dead" && started.elapsed() < Duration::from_secs(30),
            "{shown}"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(done["result"]["created"].as_u64().unwrap() > 0, "{done}");

    let memories = json_of(&gw.tollgate(&["memory", "list", "--json"]));
    let find = |status: &str| {
        memories
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["status"] == status)
            .map(|m| m["id"].as_str().unwrap().to_string())
            .unwrap_or_else(|| panic!("a memory in {status}"))
    };
    let (candidate, approved) = (find("candidate"), find("approved"));
    let (status, m) = gw.call("GET", &format!("/v2/memory/{approved}"), None);
    assert_eq!(status, 200);
    assert!(
        m["sources"][0]["run"] == "run-feature-users-pagination",
        "{m}"
    );
    assert!(m["score"]["confidence"].as_f64().unwrap() >= 0.8);

    // Promote with a pin; a missing reason is refused and changes nothing. Who reviews is the
    // admin's credential (issue 32), never a field of the body.
    let lead = gw.create_token(&["--kind", "admin", "--name", "lead"]);
    let path = format!("/v2/memory/{candidate}/promote");
    let (status, err) = gw.call_as(&lead, "POST", &path, Some(&json!({})));
    assert_eq!(status, 422, "{err}");
    let (status, err) = gw.call_as(&lead, "POST", &path, Some(&json!({"reason": " "})));
    assert_eq!(status, 422, "{err}");
    assert_eq!(err["error"]["code"], "invalid");
    let (status, err) = gw.call_as(
        &lead,
        "POST",
        &path,
        Some(&json!({"by": "someone", "reason": "r"})),
    );
    assert_eq!(status, 422, "`by` is not taken from the body: {err}");
    let (status, m) = gw.call_as(
        &lead,
        "POST",
        &path,
        Some(&json!({"reason": "true for the repo", "pin": true})),
    );
    assert_eq!(status, 200, "{m}");
    assert_eq!(
        (m["status"].clone(), m["pinned"].clone()),
        (json!("approved"), json!(true))
    );
    assert_eq!(
        m["decisions"].as_array().unwrap().last().unwrap()["by"],
        "lead"
    );

    // Expire it; expiring again is a conflict; an unknown memory is a 404.
    let expire = format!("/v2/memory/{candidate}/expire");
    let body = json!({"reason": "superseded"});
    let (status, m) = gw.call_as(&lead, "POST", &expire, Some(&body));
    assert_eq!((status, m["status"].clone()), (200, json!("expired")));
    let (status, err) = gw.call_as(&lead, "POST", &expire, Some(&body));
    assert_eq!(status, 409, "{err}");
    let (status, _) = gw.call("GET", "/v2/memory/mem-nothing", None);
    assert_eq!(status, 404);
    let (status, used) = gw.call("GET", &format!("/v2/memory/{approved}/usage"), None);
    assert_eq!(status, 200);
    assert_eq!(used["usage"], json!([]), "no compile used it yet");
    let (status, _) = gw.call("GET", "/v2/memory/mem-nothing/usage", None);
    assert_eq!(status, 404);

    // Feedback: helpful is counted; `wrong` without a note, or an unknown verdict, is a 422
    // that records nothing; `wrong` with one quarantines the memory.
    let feedback = format!("/v2/memory/{approved}/feedback");
    let (status, m) = gw.call_as(
        &lead,
        "POST",
        &feedback,
        Some(&json!({"verdict": "helpful", "run": "run-feature-users-pagination"})),
    );
    assert_eq!(status, 200, "{m}");
    assert_eq!(m["feedback"][0]["verdict"], "helpful");
    assert_eq!(m["feedback"][0]["by"], "lead");
    for bad in [json!({"verdict": "wrong"}), json!({"verdict": "meh"})] {
        let (status, err) = gw.call("POST", &feedback, Some(&bad));
        assert_eq!(status, 422, "{err}");
        assert_eq!(err["error"]["code"], "invalid");
    }
    let (_, m) = gw.call("GET", &format!("/v2/memory/{approved}"), None);
    assert_eq!(m["feedback"].as_array().unwrap().len(), 1, "{m}");

    // Search: what a run at a scope could retrieve, ranked by the text; policy's withholdings
    // counted by reason.
    let (status, found) = gw.call(
        "GET",
        "/v2/memory/search?scope=org:acme/repo:api/task:T-300&q=cursor%20pagination&limit=3",
        None,
    );
    assert_eq!(status, 200, "{found}");
    let hits = found["hits"].as_array().unwrap();
    assert!(!hits.is_empty() && hits.len() <= 3, "{found}");
    assert_eq!(hits[0]["rank"], 1);
    assert!(
        hits[0]["memory"]["text"]
            .as_str()
            .unwrap()
            .to_lowercase()
            .contains("cursor"),
        "the best hit is about cursors: {found}"
    );
    assert!(hits.iter().all(|h| h["memory"]["status"] == "approved"));
    assert!(
        found["withheld"]["status_candidate"].as_u64().unwrap() > 0,
        "{found}"
    );
    // From another organisation nothing is visible; as the coding agent, whose envelope
    // allows no preferences, none is found.
    let (_, elsewhere) = gw.call("GET", "/v2/memory/search?scope=org:globex/repo:web", None);
    assert_eq!(elsewhere["hits"], json!([]));
    assert!(elsewhere["withheld"]["out_of_scope"].as_u64().unwrap() > 0);
    let (_, coder) = gw.call(
        "GET",
        "/v2/memory/search?scope=org:acme/repo:api&agent=coder&class=preference",
        None,
    );
    assert_eq!(coder["hits"], json!([]), "{coder}");
    assert!(
        coder["withheld"]["class_denied"].as_u64().unwrap() > 0,
        "{coder}"
    );
    let (_, warnings) = gw.call(
        "GET",
        "/v2/memory/search?scope=org:acme/repo:api&class=warning&repo=api",
        None,
    );
    assert!(
        warnings["hits"]
            .as_array()
            .unwrap()
            .iter()
            .all(|h| h["memory"]["class"] == "warning")
    );
    for bad in [
        "/v2/memory/search",
        "/v2/memory/search?scope=org:acme&clearance=top",
        "/v2/memory/search?scope=org:acme&class=rumour",
    ] {
        let (status, err) = gw.call("GET", bad, None);
        assert_eq!(status, 422, "{bad}: {err}");
        let message = err["error"]["message"].as_str().unwrap();
        assert!(
            message.contains("use ") || message.contains("help:"),
            "{err}"
        );
    }

    // A run still running is not distilled; an unknown one is a 404.
    let (status, _) = gw.call(
        "POST",
        "/v1/runs",
        Some(&json!({"id": "open-run", "agent": "coder", "task": "T-1",
                     "scope": "org:acme/repo:api", "clearance": "internal"})),
    );
    assert_eq!(status, 201);
    let (status, err) = gw.call("POST", "/v2/memory/distill/run/open-run", None);
    assert_eq!(status, 409, "{err}");
    let (status, _) = gw.call("POST", "/v2/memory/distill/run/no-such-run", None);
    assert_eq!(status, 404);
}
