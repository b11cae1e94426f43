//! End-to-end tests of the dashboard over loopback HTTP: `tollgate serve` started as a user
//! would, its one-time login URL read from the owner-only file it names
//! (`Gateway::dashboard_url`), pages fetched with the session cookie. These check what the
//! server answers; `dashboard_browser.rs` drives the same screens in headless Chromium.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/mod.rs"]
mod support;

use support::dashboard::{cookie_of, csrf_of, get_page, header, login, login_with, send};
use support::{Gateway, root};

/// Runs `tollgate ARGS...` on the gateway's store; it must succeed.
fn tollgate_ok(gw: &Gateway, args: &[&str]) {
    let out = gw.tollgate(args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_login_url_opens_a_session_once_and_every_page_needs_one() {
    let gw = Gateway::start();
    let token = gw
        .dashboard_url
        .rsplit("token=")
        .next()
        .unwrap()
        .to_string();
    assert_ne!(token, gw.token, "the login token is not the bearer token");

    // Without a session, a page sends the browser to the login page.
    let (status, headers, _) = send(&gw, "GET", "/ui/runs", None, &[]);
    assert_eq!(status, 303);
    assert_eq!(header(&headers, "location"), Some("/ui/login"));
    let (status, _, body) = send(&gw, "GET", "/ui/login", None, &[]);
    assert_eq!(status, 200);
    assert!(body.contains("name=\"token\""), "{body}");

    // The URL serve printed logs in once, to a URL without the token, with a strict cookie.
    let (status, headers, _) = send(&gw, "GET", &gw.dashboard_url, None, &[]);
    assert_eq!(status, 303);
    assert_eq!(header(&headers, "location"), Some("/ui"));
    let set = header(&headers, "set-cookie").unwrap();
    for part in ["HttpOnly", "SameSite=Strict", "Path=/ui"] {
        assert!(set.contains(part), "{set}");
    }
    let cookie = cookie_of(&headers);
    let (status, page) = get_page(&gw, &cookie, "/ui/runs");
    assert_eq!(status, 200);
    assert!(page.contains("No runs are recorded yet"), "{page}");
    assert!(
        page.contains("tollgate runs import"),
        "the empty state says what to do"
    );
    let (status, _, _) = send(&gw, "GET", &gw.dashboard_url, None, &[]);
    assert_eq!(status, 401, "a one-time token is spent");

    // The bearer token logs in through the form, as often as needed.
    let form = format!("token={}", gw.token);
    let (status, headers, _) = send(&gw, "POST", "/ui/login", Some(&form), &[]);
    assert_eq!(status, 303);
    assert!(header(&headers, "set-cookie").is_some());
    let (status, _, page) = send(&gw, "POST", "/ui/login", Some("token=wrong"), &[]);
    assert_eq!(status, 401);
    assert!(page.contains("not valid"), "{page}");
    // An agent's token opens no session; an approver's opens one acting as the approver,
    // who may read but not do what only an admin may (issue 32).
    let agent = gw.create_token(&["--kind", "agent", "--agent", "coder"]);
    let (status, _, page) = send(
        &gw,
        "POST",
        "/ui/login",
        Some(&format!("token={agent}")),
        &[],
    );
    assert_eq!(status, 401);
    assert!(page.contains("agent"), "{page}");
    let approver = login_with(
        &gw,
        &gw.create_token(&["--kind", "approver", "--name", "ann"]),
    );
    let (status, page) = get_page(&gw, &approver, "/ui/runs");
    assert_eq!(status, 200);
    assert!(
        page.contains("ann"),
        "the page says who is logged in: {page}"
    );
    let demo = format!("csrf={}", csrf_of(&page));
    let (status, _, page) = send(
        &gw,
        "POST",
        "/ui/packs/intake_review/1/demo-case",
        Some(&demo),
        &[("Cookie", &approver)],
    );
    assert_eq!(status, 403, "{page}");
    assert!(page.contains("only an admin"), "{page}");

    // A made-up session is no session.
    let (status, _, _) = send(
        &gw,
        "GET",
        "/ui/runs",
        None,
        &[("Cookie", "tollgate_session=f00")],
    );
    assert_eq!(status, 303);
    // The JSON routes still want the bearer token, even with a session cookie.
    let (status, _, _) = send(&gw, "GET", "/v1/runs/x", None, &[("Cookie", &cookie)]);
    assert_eq!(status, 401);

    // No page shows either token; every page is served with protective headers and needs
    // nothing from outside the machine.
    let (_, headers, page) = send(&gw, "GET", "/ui/runs", None, &[("Cookie", &cookie)]);
    assert!(!page.contains(&token) && !page.contains(&gw.token));
    assert_eq!(header(&headers, "cache-control"), Some("no-store"));
    assert_eq!(header(&headers, "referrer-policy"), Some("same-origin"));
    assert!(header(&headers, "content-security-policy").is_some());
    assert!(
        !page.contains("http://") && !page.contains("https://"),
        "{page}"
    );
    let (status, headers, css) = send(&gw, "GET", "/ui/assets/dashboard.css", None, &[]);
    assert_eq!(status, 200);
    assert!(
        header(&headers, "content-type")
            .unwrap()
            .starts_with("text/css")
    );
    assert!(css.contains("--fg") && !css.contains("@import") && !css.contains("url("));
}

#[test]
fn the_login_token_never_reaches_a_log_the_recorder_or_a_readable_file() {
    let mut gw = Gateway::with_fixture_envelopes();
    let token = gw
        .dashboard_url
        .rsplit("token=")
        .next()
        .unwrap()
        .to_string();
    assert!(token.len() >= 32, "{token}");
    // serve's stderr is a pipe here, as when it is redirected to a log: it names the file.
    let log = gw.log.lock().unwrap().clone();
    assert!(log.contains("dashboard login URL in"), "{log}");
    assert!(
        !log.contains(&token),
        "the login token reached the log: {log}"
    );
    let file = gw.dir.path().join(".tollgate/dashboard-url");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&file).unwrap().permissions().mode();
        assert_eq!(
            mode & 0o077,
            0,
            "the URL file is readable by others: {mode:o}"
        );
    }
    // Logging in, browsing and recording leave no trace of it in the store either.
    let cookie = login(&gw);
    tollgate_ok(
        &gw,
        &[
            "runs",
            "import",
            root()
                .join("fixtures/runs/01-bugfix-users-404.json")
                .to_str()
                .unwrap(),
        ],
    );
    for path in ["/ui/runs", "/ui/approvals", "/ui/envelopes"] {
        let (status, page) = get_page(&gw, &cookie, path);
        assert_eq!(status, 200, "{path}");
        assert!(!page.contains(&token), "{path} shows the login token");
    }
    assert!(gw.terminate());
    let log = gw.log.lock().unwrap().clone();
    assert!(!log.contains(&token), "{log}");
    for entry in std::fs::read_dir(gw.dir.path().join(".tollgate")).unwrap() {
        let path = entry.unwrap().path();
        if path.ends_with("dashboard-url") || path.is_dir() {
            continue;
        }
        let bytes = std::fs::read(&path).unwrap();
        assert!(
            !bytes.windows(token.len()).any(|w| w == token.as_bytes()),
            "{} holds the login token",
            path.display()
        );
    }
}

#[test]
fn forms_without_the_csrf_token_or_from_a_foreign_origin_change_nothing() {
    let gw = Gateway::start();
    let cookie = login(&gw);
    let (_, page) = get_page(&gw, &cookie, "/ui/runs");
    let csrf = csrf_of(&page);

    let (status, _, body) = send(
        &gw,
        "POST",
        "/ui/logout",
        Some("csrf=wrong"),
        &[("Cookie", &cookie)],
    );
    assert_eq!(status, 403, "{body}");
    let (status, _, _) = send(&gw, "POST", "/ui/logout", Some(""), &[("Cookie", &cookie)]);
    assert_eq!(status, 403);
    let form = format!("csrf={csrf}");
    let (status, _, _) = send(
        &gw,
        "POST",
        "/ui/logout",
        Some(&form),
        &[("Cookie", &cookie), ("Origin", "http://evil.example")],
    );
    assert_eq!(status, 403);
    // An opaque origin (a sandboxed frame, a `file:` page) is foreign too.
    let (status, _, _) = send(
        &gw,
        "POST",
        "/ui/logout",
        Some(&form),
        &[("Cookie", &cookie), ("Origin", "null")],
    );
    assert_eq!(status, 403);
    assert_eq!(get_page(&gw, &cookie, "/ui/runs").0, 200, "still logged in");

    // A browser posts with the gateway's own origin, which its pages' referrer policy lets
    // it send (under `no-referrer` it sent `null`, and every form in Chromium was refused).
    let own = gw.base.clone();
    let (status, headers, _) = send(
        &gw,
        "POST",
        "/ui/logout",
        Some(&form),
        &[("Cookie", &cookie), ("Origin", &own)],
    );
    assert_eq!(status, 303);
    assert!(
        header(&headers, "set-cookie")
            .unwrap()
            .contains("Max-Age=0")
    );
    assert_eq!(
        get_page(&gw, &cookie, "/ui/runs").0,
        303,
        "the session ended"
    );
}

#[test]
fn the_runs_screen_shows_imported_fixture_runs_their_timelines_and_receipts() {
    let gw = Gateway::start();
    let runs = root().join("fixtures/runs");
    let mut files: Vec<String> = std::fs::read_dir(&runs)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .map(|p| p.display().to_string())
        .collect();
    files.sort();
    let mut args = vec!["runs", "import"];
    args.extend(files.iter().map(String::as_str));
    tollgate_ok(&gw, &args);

    let cookie = login(&gw);
    let (status, list) = get_page(&gw, &cookie, "/ui/runs");
    assert_eq!(status, 200);
    let ids: Vec<String> = files
        .iter()
        .map(|f| {
            let text = std::fs::read_to_string(f).unwrap();
            let v: serde_json::Value = serde_json::from_str(&text).unwrap();
            v["run"]["id"].as_str().unwrap().to_string()
        })
        .collect();
    for id in &ids {
        assert!(list.contains(&format!("/ui/runs/{id}\"")), "{id} listed");
    }
    // A filter that matches nothing says so and offers the way back.
    let (_, none) = get_page(&gw, &cookie, "/ui/runs?agent=nobody");
    assert!(none.contains("No run matches"), "{none}");
    // By task: the runs of that task alone, the field keeping what was asked.
    let tasks: Vec<(String, String)> = files
        .iter()
        .map(|f| {
            let v: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(f).unwrap()).unwrap();
            (
                v["run"]["id"].as_str().unwrap().to_string(),
                v["run"]["task"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let (first, task) = &tasks[0];
    let (_, by_task) = get_page(&gw, &cookie, &format!("/ui/runs?task={task}"));
    assert!(
        by_task.contains(&format!("/ui/runs/{first}\"")),
        "{by_task}"
    );
    for (id, other) in &tasks {
        if other != task {
            assert!(
                !by_task.contains(&format!("/ui/runs/{id}\"")),
                "{id} is of {other}"
            );
        }
    }
    assert!(
        by_task.contains(&format!("name=\"task\" value=\"{task}\"")),
        "{by_task}"
    );
    // By start time: the fixture runs started days before this test, so the last hour has none
    // of them and a run opened now is there.
    let (_, last_hour) = get_page(&gw, &cookie, "/ui/runs?range=hour");
    assert!(last_hour.contains("No run matches"), "{last_hour}");
    let (status, _) = gw.call(
        "POST",
        "/v1/runs",
        Some(&serde_json::json!({"id": "run-now", "agent": "coder", "task": "T-now", "scope": "org:acme/repo:api"})),
    );
    assert_eq!(status, 201);
    let (_, last_hour) = get_page(&gw, &cookie, "/ui/runs?range=hour");
    assert!(last_hour.contains("/ui/runs/run-now\""), "{last_hour}");
    assert!(
        !last_hour.contains(&format!("/ui/runs/{first}\"")),
        "{last_hour}"
    );
    assert!(
        last_hour.contains("<option value=\"hour\" selected>"),
        "{last_hour}"
    );
    let (_, any_time) = get_page(&gw, &cookie, "/ui/runs?range=week&task=T-now");
    assert!(any_time.contains("/ui/runs/run-now\""), "{any_time}");

    // A run's timeline: its steps, its compiles' items, its decisions with receipt links.
    let run = &ids[0];
    let (status, timeline) = get_page(&gw, &cookie, &format!("/ui/runs/{run}"));
    assert_eq!(status, 200);
    for part in ["Step 0", "compile", "tool call", "decision", "receipts/"] {
        assert!(timeline.contains(part), "the timeline shows `{part}`");
    }
    // Every receipt the timeline links to opens.
    let mut receipts = 0;
    let mut with_proof = 0;
    for (at, _) in timeline.match_indices("href=\"/ui/runs/") {
        let rest = &timeline[at + "href=\"".len()..];
        let href = rest[..rest.find('"').unwrap()].replace("&amp;", "&");
        if !href.contains("/receipts/") {
            continue;
        }
        let (status, receipt) = get_page(&gw, &cookie, &href);
        assert_eq!(status, 200, "{href}");
        assert!(
            receipt.contains("Receipt:") && receipt.contains("Input hash"),
            "{href}"
        );
        receipts += 1;
        if receipt.contains("class=\"proof\"") {
            with_proof += 1;
            assert!(receipt.contains("<details"), "the proof is collapsible");
        }
    }
    assert!(
        receipts > 0 && with_proof > 0,
        "{receipts} receipts, {with_proof} with proofs"
    );

    // A long run's timeline comes a page of 200 events at a time, and a link to an event
    // opens the page that holds it.
    let long = "run-feature-users-pagination";
    assert!(ids.iter().any(|id| id == long));
    let (_, first) = get_page(&gw, &cookie, &format!("/ui/runs/{long}"));
    assert!(first.contains("id=\"event-199\"") && !first.contains("id=\"event-200\""));
    assert!(
        first.contains("Events 0–199 of 243"),
        "the pager says where it is"
    );
    assert!(
        first.contains(&format!("/ui/runs/{long}?from=200")),
        "a link to the rest"
    );
    let (status, second) = get_page(&gw, &cookie, &format!("/ui/runs/{long}?from=200"));
    assert_eq!(status, 200);
    assert!(second.contains("id=\"event-242\"") && !second.contains("id=\"event-199\""));
    assert!(second.contains("Earlier events"));
    let late = second
        .match_indices("/receipts/")
        .map(|(at, _)| {
            let rest = &second[at + "/receipts/".len()..];
            rest[..rest.find(|c: char| !c.is_ascii_digit()).unwrap()].to_string()
        })
        .next()
        .expect("a receipt on the second page");
    let (_, receipt) = get_page(&gw, &cookie, &format!("/ui/runs/{long}/receipts/{late}"));
    assert!(
        receipt.contains(&format!("/ui/runs/{long}?from=200#event-{late}")),
        "the receipt links back to the page of its event"
    );

    // What does not exist is a 404 page, not an error in JSON.
    let (status, missing) = get_page(&gw, &cookie, "/ui/runs/no-such-run");
    assert_eq!(status, 404);
    assert!(missing.contains("no run"), "{missing}");
    let (status, page) = get_page(&gw, &cookie, &format!("/ui/runs/{run}/receipts/100000"));
    assert_eq!(status, 200);
    assert!(page.contains("No decision is recorded there"), "{page}");
}

#[test]
fn an_approval_given_in_the_dashboard_releases_the_waiting_call_at_once() {
    let gw = Gateway::with_fixture_envelopes();
    let (status, body) = gw.call(
        "POST",
        "/v1/runs",
        Some(
            &serde_json::json!({"id": "ui-approve", "agent": "coder", "task": "T-12",
                                 "scope": "org:acme/repo:api/task:T-12",
                                 "clearance": "confidential"}),
        ),
    );
    assert_eq!(status, 201, "{body}");
    let secret = "AKIAPYDATUTGFKRXITKP";
    let call = serde_json::json!({"tool": "shell.exec",
                                  "arguments": {"cmd": "make test", "env": {"AWS_KEY": secret}}});
    let (status, gated) = gw.call("POST", "/v1/runs/ui-approve/tool-calls", Some(&call));
    assert_eq!(status, 200, "{gated}");
    assert_eq!(gated["effect"], "require_approval");
    let id = gated["approval"]["id"].as_str().unwrap().to_string();

    // The agent waits on the approval.
    let (base, token, path) = (
        gw.base.clone(),
        gw.token.clone(),
        format!("/v1/approvals/{id}?wait=30"),
    );
    let started = std::time::Instant::now();
    let waiter = std::thread::spawn(move || {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .build()
            .into();
        let mut resp = agent
            .get(format!("{base}{path}"))
            .header("Authorization", format!("Bearer {token}"))
            .call()
            .unwrap();
        let text = resp.body_mut().read_to_string().unwrap();
        let approval: serde_json::Value = serde_json::from_str(&text).unwrap();
        (approval, started.elapsed())
    });

    // Each person decides in a session of their own credential (issue 32).
    let intern = login_with(
        &gw,
        &gw.create_token(&["--kind", "approver", "--name", "intern"]),
    );
    let cookie = login_with(
        &gw,
        &gw.create_token(&["--kind", "approver", "--name", "team-lead"]),
    );
    let (status, page) = get_page(&gw, &cookie, "/ui/approvals");
    assert_eq!(status, 200);
    assert!(page.contains(&id) && page.contains("shell.exec") && page.contains("make test"));
    assert!(page.contains("Deciding as"), "{page}");
    assert!(
        !page.contains(secret),
        "a secret in the arguments is hidden"
    );
    assert!(page.contains("[REDACTED:secret]"), "{page}");
    let csrf = csrf_of(&page);

    // Refused: no CSRF token, someone the rule does not name, or the owner's session on a
    // run the owner's token opened; a `by` field names no one. Nothing changes.
    let form = "decision=approve&reason=ok";
    let action = format!("/ui/approvals/{id}");
    let (status, _, _) = send(&gw, "POST", &action, Some(form), &[("Cookie", &cookie)]);
    assert_eq!(status, 403);
    let (_, page) = get_page(&gw, &intern, "/ui/approvals");
    let form = format!("csrf={}&decision=approve&by=team-lead", csrf_of(&page));
    let (status, _, body) = send(&gw, "POST", &action, Some(&form), &[("Cookie", &intern)]);
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("intern"), "the page says who may not approve");
    let owner = login(&gw);
    let (_, page) = get_page(&gw, &owner, "/ui/approvals");
    let form = format!("csrf={}&decision=approve", csrf_of(&page));
    let (status, _, body) = send(&gw, "POST", &action, Some(&form), &[("Cookie", &owner)]);
    assert_eq!(status, 403, "{body}");
    let (_, approval) = gw.call("GET", &format!("/v1/approvals/{id}"), None);
    assert_eq!(approval["state"], "pending");

    // Approved in the dashboard: the waiting agent hears at once and its call goes ahead.
    let approve = format!("csrf={csrf}&decision=approve&reason=tests+only");
    let (status, headers, _) = send(&gw, "POST", &action, Some(&approve), &[("Cookie", &cookie)]);
    assert_eq!(status, 303);
    assert!(
        header(&headers, "location")
            .unwrap()
            .starts_with("/ui/approvals?decided=")
    );
    let (approval, waited) = waiter.join().unwrap();
    assert_eq!(approval["state"], "approved", "{approval}");
    assert_eq!(approval["decided_by"], "team-lead");
    assert!(waited < std::time::Duration::from_secs(20), "{waited:?}");
    let mut again = call;
    again["approval_id"] = serde_json::Value::String(id.clone());
    let (status, allowed) = gw.call("POST", "/v1/runs/ui-approve/tool-calls", Some(&again));
    assert_eq!(status, 200);
    // It goes ahead, its secret redacted by the data rules.
    assert_eq!(allowed["execute"], true);
    assert_eq!(allowed["effect"], "redact");
    assert!(!allowed["arguments"].to_string().contains(secret));

    // Decided once: a second answer is a conflict, and the pending list is empty again.
    let (status, _, _) = send(&gw, "POST", &action, Some(&approve), &[("Cookie", &cookie)]);
    assert_eq!(status, 409);
    let (_, page) = get_page(&gw, &cookie, "/ui/approvals");
    assert!(page.contains("No gated call is waiting"), "{page}");
    let (_, used) = get_page(&gw, &cookie, "/ui/approvals?state=used");
    assert!(used.contains(&id) && used.contains("team-lead"));
}

#[test]
fn an_admin_repins_a_running_run_from_its_page_and_the_form_is_in_the_audit_log() {
    let gw = Gateway::with_fixture_envelopes();
    let (status, body) = gw.call(
        "POST",
        "/v1/runs",
        Some(
            &serde_json::json!({"id": "pinned", "agent": "coder", "task": "T-12",
                                  "scope": "org:acme/repo:api"}),
        ),
    );
    assert_eq!(status, 201, "{body}");
    let v3 = serde_json::json!({"id": "coding-agent", "version": 3, "extends": ["org-baseline"],
                                "attach": {"agents": ["coder"]},
                                "tools": [{"id": "web", "effect": "deny", "tools": ["http.get"]}]});
    let (status, body) = gw.call("POST", "/v2/policies/envelopes", Some(&v3));
    assert_eq!(status, 201, "{body}");

    // An approver sees the versions and no form; a re-pin it sends anyway is refused.
    let lead = login_with(
        &gw,
        &gw.create_token(&["--kind", "approver", "--name", "team-lead"]),
    );
    let (_, page) = get_page(&gw, &lead, "/ui/runs/pinned");
    assert!(page.contains("coding-agent@2, org-baseline@1"), "{page}");
    assert!(!page.contains("Re-pin to the versions in force"), "{page}");
    let (_, approvals) = get_page(&gw, &lead, "/ui/approvals");
    let form = format!("csrf={}", csrf_of(&approvals));
    let (status, _, _) = send(
        &gw,
        "POST",
        "/ui/runs/pinned/repin",
        Some(&form),
        &[("Cookie", &lead)],
    );
    assert_eq!(status, 403);

    let admin = login_with(&gw, &gw.create_token(&["--kind", "admin", "--name", "ada"]));
    let (_, page) = get_page(&gw, &admin, "/ui/runs/pinned");
    assert!(page.contains("Re-pin to the versions in force"), "{page}");
    let form = format!("csrf={}", csrf_of(&page));
    let (status, headers, _) = send(
        &gw,
        "POST",
        "/ui/runs/pinned/repin",
        Some(&form),
        &[("Cookie", &admin)],
    );
    assert_eq!(status, 303);
    assert_eq!(header(&headers, "location"), Some("/ui/runs/pinned"));
    let (_, page) = get_page(&gw, &admin, "/ui/runs/pinned");
    assert!(
        page.contains("re-pinned to coding-agent@3, org-baseline@1 by"),
        "{page}"
    );
    let (_, run) = gw.call("GET", "/v1/runs/pinned", None);
    assert_eq!(
        run["governing"],
        serde_json::json!(["coding-agent@3", "org-baseline@1"])
    );

    // Both forms are in the audit log (newest first), each with the person who sent it.
    let (_, log) = gw.call("GET", "/v1/audit", None);
    let sent: Vec<(String, u64)> = log["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["target"] == "/ui/runs/pinned/repin")
        .map(|e| {
            (
                e["name"].as_str().unwrap().to_string(),
                e["status"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        sent,
        [("ada".to_string(), 303), ("team-lead".to_string(), 403)],
        "{log}"
    );
}

/// Bug 11 of issue 33: every case opens a run that stays `running` as long as the case, and
/// after `demo seed` they were most of the Runs screen. They are listed on asking.
#[test]
fn the_runs_screen_leaves_case_runs_to_the_cases_screen_unless_asked() {
    let gw = Gateway::start();
    tollgate_ok(&gw, &["demo", "seed"]);
    gw.import_fixture_runs(&["01-bugfix-users-404.json"]);
    let cookie = login(&gw);
    let (_, page) = get_page(&gw, &cookie, "/ui/runs");
    assert!(page.contains("run-bugfix-users-404"), "{page}");
    assert!(!page.contains("case-"), "{page}");
    let (_, page) = get_page(&gw, &cookie, "/ui/runs?cases=shown");
    assert!(
        page.contains("case-") && page.contains("run-bugfix-users-404"),
        "{page}"
    );
    // An agent asked for by name is listed whoever it is.
    let (_, page) = get_page(&gw, &cookie, "/ui/runs?agent=pack:intake_review");
    assert!(page.contains("case-"), "{page}");
}

#[test]
fn the_envelopes_screen_lists_versions_diffs_them_and_simulates_one_on_a_run() {
    let gw = Gateway::with_fixture_envelopes();
    let run = root().join("fixtures/runs/01-bugfix-users-404.json");
    let v3 = root().join("fixtures/envelopes/diff/coding-agent.v3.yaml");
    tollgate_ok(&gw, &["runs", "import", run.to_str().unwrap()]);
    tollgate_ok(&gw, &["policy", "store", v3.to_str().unwrap()]);
    let cookie = login(&gw);
    let (status, list) = get_page(&gw, &cookie, "/ui/envelopes");
    assert_eq!(status, 200);
    assert!(list.contains("/ui/envelopes/coding-agent\"") && list.contains("org-baseline"));

    let (status, page) = get_page(&gw, &cookie, "/ui/envelopes/coding-agent");
    assert_eq!(status, 200);
    assert!(page.contains("coding-agent@2") && page.contains("coding-agent@3"));
    assert!(
        page.contains("id: coding-agent"),
        "the YAML source is shown"
    );
    assert!(
        page.contains("run-bugfix-users-404"),
        "the simulator offers the run"
    );
    let (_, old) = get_page(&gw, &cookie, "/ui/envelopes/coding-agent?version=2");
    assert!(old.contains("<strong>coding-agent@2</strong>"), "{old}");

    let (status, diff) = get_page(&gw, &cookie, "/ui/envelopes/coding-agent/diff?from=2&to=3");
    assert_eq!(status, 200);
    assert!(diff.contains("coding-agent/"), "rule ids are listed");
    assert!(diff.contains("class=\"change-"), "{diff}");
    let (_, same) = get_page(&gw, &cookie, "/ui/envelopes/coding-agent/diff?from=2&to=2");
    assert!(same.contains("decide alike"), "{same}");

    // The simulator shows the same changes `policy simulate` reports (README: 4 changed).
    let (status, sim) = get_page(
        &gw,
        &cookie,
        "/ui/envelopes/coding-agent/simulate?run=run-bugfix-users-404&version=3",
    );
    assert_eq!(status, 200, "{sim}");
    assert!(sim.contains("<strong>4</strong>"), "four decisions change");
    assert_eq!(sim.matches("<tr class=\"changed\">").count(), 4);
    assert_eq!(
        sim.matches("<tr class=").count(),
        4,
        "only the changed points, at first"
    );
    let (status, all) = get_page(
        &gw,
        &cookie,
        "/ui/envelopes/coding-agent/simulate?run=run-bugfix-users-404&version=3&all=1",
    );
    assert_eq!(status, 200);
    assert_eq!(all.matches("<tr class=\"changed\">").count(), 4);
    assert!(
        all.matches("<tr class=").count() > 100,
        "every decision point"
    );
    let cli = gw.tollgate(&[
        "policy",
        "simulate",
        "-e",
        v3.to_str().unwrap(),
        "--run",
        "run-bugfix-users-404",
    ]);
    assert!(String::from_utf8_lossy(&cli.stdout).contains("4 changed"));

    let (status, missing) = get_page(&gw, &cookie, "/ui/envelopes/no-such-envelope");
    assert_eq!(status, 404, "{missing}");
}

#[test]
fn the_provenance_screen_draws_a_records_ancestors_and_descendants_in_svg() {
    let gw = Gateway::start();
    let run = root().join("fixtures/runs/01-bugfix-users-404.json");
    tollgate_ok(&gw, &["runs", "import", run.to_str().unwrap()]);
    let cookie = login(&gw);
    let (status, empty) = get_page(&gw, &cookie, "/ui/provenance");
    assert_eq!(status, 200);
    assert!(empty.contains("Name a record to trace"));

    // The first decision of the run: its tool call and step are ancestors; the graph is SVG
    // whose nodes link to their own provenance.
    let (_, timeline) = get_page(&gw, &cookie, "/ui/runs/run-bugfix-users-404");
    let at = timeline
        .find("provenance?id=event%3Arun-bugfix-users-404%2F")
        .unwrap();
    assert!(timeline.contains("Provenance of this run"));
    let _ = at;
    let export = gw.tollgate(&["runs", "export", "run-bugfix-users-404"]);
    let file: serde_json::Value = serde_json::from_slice(&export.stdout).unwrap();
    let decision = file["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["kind"] == "decision")
        .unwrap();
    let seq = decision["seq"].as_u64().unwrap();
    let path = format!("/ui/provenance?id=event%3Arun-bugfix-users-404%2F{seq}");
    let (status, page) = get_page(&gw, &cookie, &path);
    assert_eq!(status, 200, "{page}");
    assert!(
        page.contains("<svg") && page.contains("class=\"node start\""),
        "{page}"
    );
    assert!(page.contains("class=\"edge\""), "edges are drawn");
    assert!(
        page.contains("tool call"),
        "the decided tool call is an ancestor"
    );
    assert!(
        page.contains("step:run-bugfix-users-404/"),
        "so is its step"
    );
    assert!(page.contains("href=\"/ui/provenance?id="), "nodes link on");

    let (status, missing) = get_page(&gw, &cookie, "/ui/provenance?id=no-such-run");
    assert_eq!(status, 404, "{missing}");
}
