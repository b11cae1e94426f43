//! The dashboard's overview over loopback HTTP (issue 42): `tollgate serve` as a user starts
//! it, decisions recorded through the JSON API and imported from the fixture runs, the
//! landing page read with a session: the figures at a glance, the plots with their tables and
//! downloads, a bar's receipts, the custom range.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/mod.rs"]
mod support;

use support::Gateway;
use support::dashboard::{get_page, header, login, send};

/// The `href`s of the page that start with `prefix`, unescaped.
fn links(page: &str, prefix: &str) -> Vec<String> {
    page.split("href=\"")
        .skip(1)
        .filter_map(|rest| rest.split('"').next())
        .filter(|h| h.starts_with(prefix))
        .map(|h| h.replace("&amp;", "&"))
        .collect()
}

#[test]
fn the_overview_shows_the_days_decisions_denials_approvals_and_suite_at_a_glance() {
    let gw = Gateway::with_fixture_envelopes();
    let cookie = login(&gw);

    // Nothing recorded: the landing page says so, and what to do.
    let (status, page) = get_page(&gw, &cookie, "/ui");
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("No decision in this window"), "{page}");
    assert!(page.contains("no regression suite run yet"), "{page}");
    assert!(page.contains("aria-current=\"page\">Overview"), "{page}");

    // A run now: calls allowed, denied, redacted and held for approval.
    let (status, body) = gw.call(
        "POST",
        "/v1/runs",
        Some(
            &serde_json::json!({"id": "ov-now", "agent": "coder", "task": "T-12",
                                  "scope": "org:acme/repo:api/task:T-12",
                                  "clearance": "confidential"}),
        ),
    );
    assert_eq!(status, 201, "{body}");
    let mut effects = std::collections::BTreeMap::<String, u64>::new();
    for call in [
        serde_json::json!({"tool": "fs.read_file", "arguments": {"path": "src/main.rs"}}),
        serde_json::json!({"tool": "net.http_get", "arguments": {"url": "https://example.com"}}),
        serde_json::json!({"tool": "shell.exec", "arguments": {"cmd": "rm -rf /"}}),
        serde_json::json!({"tool": "shell.exec",
                            "arguments": {"cmd": "make test", "env": {"AWS_KEY": "AKIAPYDATUTGFKRXITKP"}}}),
    ] {
        let (status, answer) = gw.call("POST", "/v1/runs/ov-now/tool-calls", Some(&call));
        assert_eq!(status, 200, "{answer}");
        *effects
            .entry(answer["effect"].as_str().unwrap().to_string())
            .or_default() += 1;
    }
    let total: u64 = effects.values().sum();
    let denied = effects.get("deny").copied().unwrap_or(0);
    assert!(denied > 0, "{effects:?}");
    assert!(effects.contains_key("require_approval"), "{effects:?}");

    let (status, page) = get_page(&gw, &cookie, "/ui");
    assert_eq!(status, 200);
    // At a glance: decisions, denials, what waits, the suite.
    assert!(
        page.contains(&format!(
            "<span class=\"figure\">{total}</span><span class=\"what\">decisions"
        )),
        "{page}"
    );
    assert!(
        page.contains(&format!(
            "<span class=\"figure\">{denied}</span><span class=\"what\">denied"
        )),
        "{page}"
    );
    assert!(page.contains("waiting for approval</a>, oldest"), "{page}");
    // Every plot is an image with a title and a description, and has its table and downloads.
    for id in [
        "decisions",
        "latency_tool_call",
        "rules",
        "tools",
        "approvals",
        "time_to_decide",
    ] {
        assert!(
            page.contains(&format!(
                "aria-labelledby=\"plot-{id}-title plot-{id}-desc\""
            )),
            "plot {id}: {page}"
        );
        assert!(page.contains(&format!("id=\"panel-{id}\"")), "{id}");
        let csv = format!("/ui/overview/data?panel={id}&amp;format=csv");
        assert!(page.contains(&csv), "{id}: {page}");
    }
    assert!(page.contains("role=\"img\""));
    // Every call was timed; no chat call was made.
    let (_, _, json) = send(
        &gw,
        "GET",
        "/ui/overview/data?panel=latency_tool_call&format=json",
        None,
        &[("Cookie", &cookie)],
    );
    let timed: serde_json::Value = serde_json::from_str(&json).unwrap();
    let calls: u64 = timed
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["calls"].as_u64().unwrap())
        .sum();
    assert_eq!(calls, total, "{timed}");
    assert!(
        page.contains("None timed in this window"),
        "no chat call: {page}"
    );

    // A denial segment opens the receipts it counts.
    let drills = links(&page, "/ui/decisions?");
    let deny = drills
        .iter()
        .find(|h| h.contains("effect=deny") && !h.contains("rule=") && !h.contains("tool="))
        .expect("a denial bar links to its receipts");
    let (status, receipts) = get_page(&gw, &cookie, deny);
    assert_eq!(status, 200, "{receipts}");
    let found = links(&receipts, "/ui/runs/ov-now/receipts/");
    assert_eq!(found.len() as u64, denied, "{receipts}");
    let (status, receipt) = get_page(&gw, &cookie, &found[0]);
    assert_eq!(status, 200);
    assert!(receipt.contains("deny"), "{receipt}");
    // A tool's bar opens that tool's receipts only.
    let by_tool = drills
        .iter()
        .find(|h| h.contains("tool=shell.exec"))
        .expect("a bar per tool");
    let (_, receipts) = get_page(&gw, &cookie, by_tool);
    assert!(receipts.contains("<code>shell.exec</code>"), "{receipts}");
    assert!(
        !receipts.contains("<code>net.http_get</code>"),
        "{receipts}"
    );

    // The downloads carry the same numbers.
    let (status, headers, csv) = send(
        &gw,
        "GET",
        "/ui/overview/data?panel=decisions&format=csv",
        None,
        &[("Cookie", &cookie)],
    );
    assert_eq!(status, 200);
    assert_eq!(
        header(&headers, "content-type"),
        Some("text/csv; charset=utf-8")
    );
    assert!(
        header(&headers, "content-disposition")
            .unwrap()
            .contains("tollgate-decisions.csv")
    );
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some("start,allow,redact,require_approval,rate_limited,deny")
    );
    let summed: u64 = lines
        .flat_map(|l| {
            l.split(',')
                .skip(1)
                .map(|n| n.parse::<u64>().unwrap())
                .collect::<Vec<_>>()
        })
        .sum();
    assert_eq!(summed, total);
    let (status, _, json) = send(
        &gw,
        "GET",
        "/ui/overview/data?format=json",
        None,
        &[("Cookie", &cookie)],
    );
    assert_eq!(status, 200);
    let whole: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(whole["totals"]["deny"], denied);
    assert_eq!(
        whole["approvals"]["waiting_total"], effects["require_approval"],
        "every call held waits"
    );
    let (status, _, json) = send(
        &gw,
        "GET",
        "/ui/overview/data?panel=tools&format=json",
        None,
        &[("Cookie", &cookie)],
    );
    assert_eq!(status, 200);
    let tools: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert!(
        tools
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["tool"] == "shell.exec"),
        "{tools}"
    );
    let (status, _, body) = send(
        &gw,
        "GET",
        "/ui/overview/data?panel=nope&format=csv",
        None,
        &[("Cookie", &cookie)],
    );
    assert_eq!(status, 404);
    let error: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(error["error"]["code"], "not_found", "{body}");
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("decisions"),
        "the answer names the panels: {body}"
    );
    // Without a session, neither the page nor its data.
    let (status, _, _) = send(&gw, "GET", "/ui/overview/data?format=json", None, &[]);
    assert_eq!(status, 303);

    // Filtered to another agent: nothing.
    let (_, other) = get_page(&gw, &cookie, "/ui?agent=planner");
    assert!(other.contains("No decision in this window"), "{other}");
}

#[test]
fn a_custom_range_counts_imported_runs_at_their_own_times() {
    let gw = Gateway::with_fixture_envelopes();
    gw.import_fixture_runs(&[
        "01-bugfix-users-404.json",
        "02-feature-users-pagination.json",
        "03-flaky-webhook-retry.json",
        "04-forbidden-tool-pool-exhaustion.json",
        "05-planner-executor-rate-limit.json",
    ]);
    let (_, runs) = gw.call("GET", "/v1/runs", None);
    let listed: u64 = runs["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            [
                "allow",
                "redact",
                "require_approval",
                "rate_limited",
                "deny",
            ]
            .iter()
            .map(|e| r["decisions"][e].as_u64().unwrap_or(0))
            .sum::<u64>()
        })
        .sum();
    assert!(listed > 0, "{runs}");

    let cookie = login(&gw);
    // The fixture runs are of November 2026: not in the last day, all in the month.
    let (_, today) = get_page(&gw, &cookie, "/ui");
    assert!(today.contains("No decision in this window"), "{today}");
    let month = "/ui?range=custom&from=2026-11-01T00:00&to=2026-12-01T00:00";
    let (status, page) = get_page(&gw, &cookie, month);
    assert_eq!(status, 200);
    assert!(
        page.contains(&format!(
            "<span class=\"figure\">{listed}</span><span class=\"what\">decisions"
        )),
        "{page}"
    );
    assert!(
        page.contains("<option value=\"custom\" selected>"),
        "{page}"
    );
    // Dates typed in while the list still says "Last day" are a custom range all the same.
    let (_, typed) = get_page(
        &gw,
        &cookie,
        "/ui?range=day&from=2026-11-01T00%3A00&to=2026-12-01T00%3A00",
    );
    assert!(
        typed.contains(&format!("<span class=\"figure\">{listed}</span>")),
        "{typed}"
    );
    // A range that is not one says why, and the data route refuses it.
    let (status, page) = get_page(
        &gw,
        &cookie,
        "/ui?range=custom&from=2026-11-02T00:00&to=2026-11-01T00:00",
    );
    assert_eq!(status, 200);
    assert!(page.contains("`to` must be after `from`"), "{page}");
    let (status, _, body) = send(
        &gw,
        "GET",
        "/ui/overview/data?format=json&range=custom&from=yesterday&to=2026-11-01T00:00",
        None,
        &[("Cookie", &cookie)],
    );
    assert_eq!(status, 422);
    let error: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(error["error"]["code"], "invalid_query", "{body}");
    assert!(body.contains("not a time"), "{body}");
}

#[test]
fn after_demo_seed_the_overview_counts_the_cases_their_proposals_and_commits() {
    let gw = Gateway::start();
    let out = gw.tollgate(&["demo", "seed", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let seeded: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let cases = seeded["cases"].as_array().unwrap().len() as u64;
    assert!(cases > 0);

    let cookie = login(&gw);
    let (status, page) = get_page(&gw, &cookie, "/ui");
    assert_eq!(status, 200, "{page}");
    for id in ["cases", "proposals", "commits"] {
        assert!(
            page.contains(&format!(
                "aria-labelledby=\"plot-{id}-title plot-{id}-desc\""
            )),
            "plot {id}: {page}"
        );
    }
    let (_, _, json) = send(
        &gw,
        "GET",
        "/ui/overview/data?format=json",
        None,
        &[("Cookie", &cookie)],
    );
    let whole: serde_json::Value = serde_json::from_str(&json).unwrap();
    let sum = |key: &str| -> u64 {
        whole[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["n"].as_u64().unwrap())
            .sum()
    };
    assert_eq!(sum("cases"), cases, "{whole}");
    assert!(sum("proposals") > 0, "{whole}");
    assert!(
        whole["commits"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["name"] == "committed"),
        "the seed commits one change: {whole}"
    );
    // The funnel lists the proposals' states in the order a proposal passes through them.
    let steps: Vec<&str> = whole["proposals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    let order = [
        "proposed",
        "previewed",
        "allowed",
        "denied",
        "awaiting_approval",
        "approved",
        "rejected",
        "committing",
        "committed",
        "failed",
    ];
    let at: Vec<usize> = steps
        .iter()
        .map(|s| order.iter().position(|o| o == s).unwrap_or(order.len()))
        .collect();
    assert!(at.windows(2).all(|w| w[0] <= w[1]), "{steps:?}");
}

/// The overview's pages and downloads need a dashboard session: an agent's bearer token, or
/// nothing, is sent to the login page and reads no number.
#[test]
fn the_overview_and_its_downloads_need_a_dashboard_session_not_an_agent_token() {
    let gw = Gateway::with_fixture_envelopes();
    let bearer = format!("Bearer {}", gw.token);
    for path in [
        "/ui",
        "/ui/overview/data?panel=decisions&format=csv",
        "/ui/decisions?effect=deny",
    ] {
        for headers in [vec![], vec![("Authorization", bearer.as_str())]] {
            let (status, h, body) = send(&gw, "GET", path, None, &headers);
            assert_eq!(status, 303, "{path}: {body}");
            assert_eq!(header(&h, "location"), Some("/ui/login"), "{path}");
        }
    }
}
