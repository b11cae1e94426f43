//! Where decisions are made and seen: an approval released, the simulator, the overview.

use std::time::{Duration, Instant};

use fantoccini::Locator;
use serde_json::{Value, json};

use super::driver::*;
use super::support::root;

#[test]
fn an_approval_clicked_in_the_browser_releases_the_waiting_tool_call() {
    with_browser(async |gw, client| {
        let (status, body) = gw.call(
            "POST",
            "/v1/runs",
            Some(
                &json!({"id": "browser-approve", "agent": "coder", "task": "T-12",
                          "scope": "org:acme/repo:api/task:T-12",
                          "clearance": "confidential"}),
            ),
        );
        assert_eq!(status, 201, "{body}");
        let call = json!({"tool": "shell.exec", "arguments": {"cmd": "make test"}});
        let (_, gated) = gw.call("POST", "/v1/runs/browser-approve/tool-calls", Some(&call));
        assert_eq!(gated["effect"], "require_approval", "{gated}");
        let id = gated["approval"]["id"].as_str().unwrap().to_string();

        // The approver the rule names decides in a session of their own token.
        let lead = gw.create_token(&["--kind", "approver", "--name", "team-lead"]);
        log_in_with(gw, client, &lead).await;
        click_to(client, Locator::LinkText("Approvals"), "/ui/approvals").await;
        let card = client
            .find(Locator::Css(&format!(
                "article[aria-labelledby='apr-{id}']"
            )))
            .await
            .unwrap();
        let shown = card.text().await.unwrap();
        assert!(
            shown.contains("shell.exec") && shown.contains("make test"),
            "{shown}"
        );
        screen(client, "approvals").await;

        // The agent waits on the approval, as the example agent does.
        let (base, token) = (gw.base.clone(), gw.token.clone());
        let path = format!("/v1/approvals/{id}?wait=60");
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
            (
                serde_json::from_str::<Value>(&text).unwrap(),
                Instant::now(),
            )
        });
        // Let the long poll start waiting before the click.
        tokio::time::sleep(Duration::from_millis(300)).await;

        // The page says who decides; the person gives a reason and clicks Approve.
        assert!(
            card.text().await.unwrap().contains("Deciding as team-lead"),
            "{}",
            card.text().await.unwrap()
        );
        card.find(Locator::Css("input[name=reason]"))
            .await
            .unwrap()
            .send_keys("tests only")
            .await
            .unwrap();
        let approve = card
            .find(Locator::Css("button[value=approve]"))
            .await
            .unwrap();
        let clicked = Instant::now();
        click_element_to(client, approve, "/ui/approvals").await;
        let (approval, heard) = tokio::task::spawn_blocking(move || waiter.join().unwrap())
            .await
            .unwrap();
        assert_eq!(approval["state"], "approved", "{approval}");
        assert_eq!(approval["decided_by"], "team-lead");
        assert_eq!(approval["reason"], "tests only");
        assert!(
            heard.saturating_duration_since(clicked) < Duration::from_secs(10),
            "the waiting agent heard at once"
        );
        assert!(
            text(client).await.contains(&id),
            "the page confirms the decision"
        );

        // The released call goes ahead.
        let mut again = call;
        again["approval_id"] = Value::String(id.clone());
        let (_, allowed) = gw.call("POST", "/v1/runs/browser-approve/tool-calls", Some(&again));
        assert_eq!(allowed["execute"], true, "{allowed}");
    });
}

#[test]
fn the_simulator_in_the_browser_shows_the_decisions_a_new_envelope_version_changes() {
    with_browser(async |gw, client| {
        gw.import_fixture_runs(&["01-bugfix-users-404.json"]);
        let v3 = root().join("fixtures/envelopes/diff/coding-agent.v3.yaml");
        let out = gw.tollgate(&["policy", "store", v3.to_str().unwrap()]);
        assert!(out.status.success());
        log_in(gw, client).await;
        click_to(client, Locator::LinkText("Envelopes"), "/ui/envelopes").await;
        screen(client, "envelopes").await;
        click_to(
            client,
            Locator::Css("a[href='/ui/envelopes/coding-agent']"),
            "/ui/envelopes/coding-agent",
        )
        .await;
        assert!(text(client).await.contains("coding-agent@3"));
        screen(client, "envelope").await;

        // The diff between the two versions.
        let diff = client
            .find(Locator::Css("form[action$='/diff']"))
            .await
            .unwrap();
        diff.find(Locator::Css("select[name=from]"))
            .await
            .unwrap()
            .select_by_value("2")
            .await
            .unwrap();
        let compare = diff
            .find(Locator::Css("button[type=submit]"))
            .await
            .unwrap();
        click_element_to(client, compare, "/ui/envelopes/coding-agent/diff").await;
        let changes = client
            .find_all(Locator::Css("tr[class^='change-']"))
            .await
            .unwrap();
        assert!(!changes.is_empty(), "the diff lists changed rules");
        screen(client, "envelope-diff").await;
        open(gw, client, "/ui/envelopes/coding-agent").await;

        // Simulate the newest version on the recorded run.
        let form = client
            .find(Locator::Css("form[action$='/simulate']"))
            .await
            .unwrap();
        form.find(Locator::Css("select[name=run]"))
            .await
            .unwrap()
            .select_by_value("run-bugfix-users-404")
            .await
            .unwrap();
        let simulate = form
            .find(Locator::Css("button[type=submit]"))
            .await
            .unwrap();
        click_element_to(client, simulate, "/ui/envelopes/coding-agent/simulate").await;
        let changed = client.find_all(Locator::Css("tr.changed")).await.unwrap();
        assert_eq!(
            changed.len(),
            4,
            "four decisions change (as `policy simulate` says)"
        );
        let row = changed[0].text().await.unwrap();
        let effects = [
            "allow",
            "deny",
            "redact",
            "require_approval",
            "rate_limited",
        ];
        assert!(
            effects.iter().filter(|e| row.contains(*e)).count() >= 1,
            "a changed row shows the effects: {row}"
        );
        screen(client, "simulate").await;
    });
}

#[test]
fn the_overview_plots_the_days_decisions_and_a_denial_bar_opens_its_receipts() {
    with_browser(async |gw, client| {
        gw.import_fixture_runs(&["01-bugfix-users-404.json"]);
        let (status, made) = gw.call(
            "POST",
            "/v2/regressions/from-run/run-bugfix-users-404",
            Some(&json!({"id": "users-404", "step": 7, "task_type": "bugfix"})),
        );
        assert_eq!(status, 201, "{made}");
        let (status, started) = gw.call("POST", "/v2/regressions/suites/execute", Some(&json!({})));
        assert_eq!(status, 202, "{started}");
        let suite = started["suite"]["id"].as_str().unwrap().to_string();
        // Today's run: a call allowed, one denied, one held for approval.
        let (status, body) = gw.call(
            "POST",
            "/v1/runs",
            Some(&json!({"id": "today", "agent": "coder", "task": "T-12",
                          "scope": "org:acme/repo:api/task:T-12", "clearance": "confidential"})),
        );
        assert_eq!(status, 201, "{body}");
        let mut denied = 0;
        for call in [
            json!({"tool": "fs.read_file", "arguments": {"path": "src/main.rs"}}),
            json!({"tool": "net.http_get", "arguments": {"url": "https://example.com"}}),
            json!({"tool": "shell.exec", "arguments": {"cmd": "make test"}}),
        ] {
            let (status, answer) = gw.call("POST", "/v1/runs/today/tool-calls", Some(&call));
            assert_eq!(status, 200, "{answer}");
            denied += u32::from(answer["effect"] == "deny");
        }
        assert!(denied > 0);
        wait_for(client, "the suite to finish", async || {
            let (_, view) = gw.call("GET", &format!("/v2/regressions/suites/{suite}"), None);
            view["suite"]["finished_at"].is_string()
        })
        .await;

        // Without a click: how many were denied today and why, what waits, the suite.
        log_in(gw, client).await;
        let page = text(client).await;
        for part in [
            "3\ndecisions".to_string(),
            format!("{denied}\ndenied"),
            "waiting for approval".to_string(),
            "regression suite green".to_string(),
            "Why decisions were not allowed".to_string(),
        ] {
            assert!(page.contains(&part), "the overview shows `{part}`: {page}");
        }
        // Every plot is an image with a name, and has its numbers and its downloads.
        let plots: Value = client
            .execute(
                "return [...document.querySelectorAll('figure.plot')].map(f => {
                   const svg = f.querySelector('svg');
                   const panel = f.closest('.panel');
                   const named = svg.getAttribute('aria-labelledby').split(' ')
                     .map(id => document.getElementById(id).textContent).join(' | ');
                   return {role: svg.getAttribute('role'), named,
                           table: !!panel.querySelector('details.numbers table'),
                           downloads: [...panel.querySelectorAll('p.downloads a')].map(a => a.textContent)};
                 });",
                vec![],
            )
            .await
            .unwrap();
        let plots = plots.as_array().unwrap();
        assert!(plots.len() >= 5, "{plots:?}");
        for p in plots {
            assert_eq!(p["role"], "img", "{p}");
            assert!(p["named"].as_str().unwrap().len() > 10, "{p}");
            assert_eq!(p["table"], true, "{p}");
            assert_eq!(p["downloads"], json!(["CSV", "JSON"]), "{p}");
        }
        // A plot's numbers open under it.
        let summary = client
            .find(Locator::Css("#panel-decisions details.numbers summary"))
            .await
            .unwrap();
        summary.click().await.unwrap();
        let table = client
            .find(Locator::Css("#panel-decisions details.numbers table"))
            .await
            .unwrap();
        assert!(table.text().await.unwrap().contains("deny"));
        screen(client, "overview").await;

        // A click on a denial bar opens the receipts it counts.
        let bar = client
            .find(Locator::Css("#plot-decisions a[href*='effect=deny']"))
            .await
            .unwrap();
        click_element_to(client, bar, "/ui/decisions").await;
        let receipts = client
            .find_all(Locator::Css("a[href^='/ui/runs/today/receipts/']"))
            .await
            .unwrap();
        assert_eq!(receipts.len(), denied as usize);
        let first = receipts.into_iter().next().unwrap();
        let href = first.attr("href").await.unwrap().unwrap();
        click_element_to(client, first, href.split('?').next().unwrap()).await;
        assert!(text(client).await.contains("deny"));

        // The page holds at 390 px.
        client.set_window_size(390, 844).await.unwrap();
        open(gw, client, "/ui").await;
        assert_fits(client, "overview at 390 px").await;
        screen(client, "overview-narrow").await;
    });
}
