//! The guide's chapters, walked through as they are written (issue 41): each step a chapter
//! shows, against a running gateway with the fixture envelopes, answers as the chapter says.

use serde_json::{Value, json};

use super::support::{Gateway, stderr, stdout};

/// `docs/guide/approvals.md`, step by step.
#[test]
fn the_approvals_chapter_works_as_written() {
    let gw = Gateway::with_fixture_envelopes();
    let agent = gw.create_token(&["--kind", "agent", "--agent", "coder"]);
    let lead = gw.create_token(&["--kind", "approver", "--name", "team-lead"]);
    let other = gw.create_token(&["--kind", "approver", "--name", "bob"]);
    let (status, run) = gw.call_as(
        &agent,
        "POST",
        "/v1/runs",
        Some(
            &json!({"id": "run-1", "agent": "coder", "task": "T-1", "scope": "org:acme/repo:api"}),
        ),
    );
    assert_eq!(status, 201, "{run}");
    let call = json!({"tool": "shell.exec", "arguments": {"cmd": "make test"}});
    let ask = |body: &Value| gw.call_as(&agent, "POST", "/v1/runs/run-1/tool-calls", Some(body));

    // "What the agent sees": an approval to wait for, not a call to run.
    let (status, gated) = ask(&call);
    assert_eq!(status, 200, "{gated}");
    assert_eq!(gated["effect"], "require_approval", "{gated}");
    assert_eq!(gated["execute"], false, "{gated}");
    assert_eq!(gated["approval"]["state"], "pending", "{gated}");
    assert_eq!(
        gated["approval"]["approvers"],
        json!(["team-lead"]),
        "{gated}"
    );
    let id = gated["approval"]["id"].as_str().unwrap().to_string();
    let (status, polled) = gw.call_as(&agent, "GET", &format!("/v1/approvals/{id}?wait=1"), None);
    assert_eq!(
        (status, &polled["state"]),
        (200, &json!("pending")),
        "{polled}"
    );

    // "Deciding": the list shows it; an approver the rule does not name, and the agent, may not
    // decide it; the named one does, from the command line.
    let listed = gw.tollgate(&["approvals", "list", "--json"]);
    assert!(listed.status.success(), "{}", stderr(&listed));
    let list: Value = serde_json::from_str(&stdout(&listed)).unwrap();
    assert_eq!(list[0]["id"], id.as_str(), "{list}");
    let decide = json!({"decision": "approve", "reason": "tests only"});
    let path = format!("/v2/policies/approvals/{id}");
    let (status, refused) = gw.call_as(&agent, "POST", &path, Some(&decide));
    assert_eq!(
        (status, &refused["error"]["code"]),
        (403, &json!("kind_not_admitted"))
    );
    let (status, refused) = gw.call_as(&other, "POST", &path, Some(&decide));
    assert_eq!(status, 403, "{refused}");
    let out = gw.tollgate(&[
        "approvals",
        "approve",
        &id,
        "--by",
        "team-lead",
        "--reason",
        "tests only",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let (status, polled) = gw.call_as(&agent, "GET", &format!("/v1/approvals/{id}?wait=30"), None);
    assert_eq!(
        (status, &polled["state"]),
        (200, &json!("approved")),
        "{polled}"
    );

    // "What an approval guarantees": other arguments are asked about afresh; the exact call is
    // allowed once; a second use is refused.
    let mut other_args = call.clone();
    other_args["arguments"]["cmd"] = json!("rm -rf /");
    other_args["approval_id"] = json!(id);
    let (status, refused) = ask(&other_args);
    assert_eq!(
        (status, &refused["error"]["code"]),
        (409, &json!("conflict")),
        "{refused}"
    );
    let mut with_approval = call.clone();
    with_approval["approval_id"] = json!(id);
    let (status, allowed) = ask(&with_approval);
    assert_eq!(status, 200, "{allowed}");
    assert_eq!(
        (&allowed["effect"], &allowed["execute"]),
        (&json!("allow"), &json!(true))
    );
    let (status, again) = ask(&with_approval);
    assert_eq!(
        (status, &again["error"]["code"]),
        (409, &json!("conflict")),
        "{again}"
    );

    // Rejecting over HTTP, as the approver's own credential.
    let (_, gated) = ask(&call);
    let second = gated["approval"]["id"].as_str().unwrap();
    let (status, rejected) = gw.call_as(
        &lead,
        "POST",
        &format!("/v2/policies/approvals/{second}"),
        Some(&json!({"decision": "reject", "reason": "not on main"})),
    );
    assert_eq!(status, 200, "{rejected}");
    assert_eq!(rejected["state"], "rejected", "{rejected}");
    assert_eq!(rejected["decided_by"], "team-lead", "{rejected}");
}

/// `docs/guide/memory.md`, step by step.
#[test]
fn the_memory_chapter_works_as_written() {
    let gw = Gateway::start();
    gw.import_fixture_runs(&["01-bugfix-users-404.json"]);
    let run = |args: &[&str]| {
        let out = gw.tollgate(args);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        stdout(&out)
    };
    let json = |args: &[&str]| -> Value { serde_json::from_str(&run(args)).unwrap() };
    run(&["memory", "distill", "run-bugfix-users-404"]);
    // Distilling twice adds nothing.
    let again = json(&["memory", "distill", "run-bugfix-users-404", "--json"]);
    let outcomes = again["outcomes"].as_array().unwrap();
    assert!(
        outcomes.iter().all(|o| o["action"] == "unchanged"),
        "{again}"
    );

    // Review: a candidate is shown with its sources, accepted with who and why.
    let candidates = json(&["memory", "list", "--status", "candidate", "--json"]);
    let id = candidates[0]["id"]
        .as_str()
        .expect("a candidate")
        .to_string();
    assert!(run(&["memory", "show", &id]).contains("run-bugfix-users-404"));
    run(&["provenance", &id]);
    run(&[
        "memory",
        "review",
        &id,
        "--decision",
        "accept",
        "--by",
        "alice",
        "--reason",
        "checked",
    ]);
    let shown = json(&["memory", "show", &id, "--json"]);
    assert_eq!(shown["status"], "approved", "{shown}");
    assert_eq!(shown["decisions"][0]["by"], "alice", "{shown}");

    // Search, both forms the chapter shows.
    run(&[
        "memory",
        "search",
        "flaky test retries",
        "--scope",
        "org:acme/repo:api/task:T-1",
    ]);
    let found = json(&[
        "memory",
        "search",
        "--scope",
        "org:acme/repo:api",
        "--clearance",
        "confidential",
        "--class",
        "warning",
        "--json",
    ]);
    assert!(
        found["hits"].is_array() && found["withheld"].is_object(),
        "{found}"
    );
    // The accepted memory is found from where its run stood, by its words, while it lasts (its
    // expiry follows from the fixture run's dates, and searches read the wall clock).
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    // `0` is no fixed end.
    let lasts = shown["expires_at"]
        .as_u64()
        .is_none_or(|at| at == 0 || at > now + 3600);
    let scope = shown["scope"].as_str().unwrap();
    let words = shown["text"].as_str().unwrap();
    let words: Vec<&str> = words.split_whitespace().take(4).collect();
    let hits = json(&[
        "memory",
        "search",
        &words.join(" "),
        "--scope",
        scope,
        "--json",
    ]);
    let found = hits["hits"]
        .as_array()
        .unwrap()
        .iter()
        .any(|h| h.to_string().contains(&id));
    assert!(found || !lasts, "{hits}");

    // Lifecycle.
    run(&["memory", "decay"]);
    run(&["memory", "quarantine-review"]);
    run(&["memory", "gc", "--retention-days", "90"]);
}
