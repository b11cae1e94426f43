//! The records' screens: provenance, memories, replays, regressions, handoffs, cases.

use fantoccini::Locator;
use serde_json::{Value, json};

use super::driver::*;
use super::support::{self, Gateway};

#[test]
fn the_provenance_graph_is_drawn_in_svg_and_its_nodes_lead_on() {
    with_browser(async |gw, client| {
        gw.import_fixture_runs(&["01-bugfix-users-404.json"]);
        log_in(gw, client).await;
        open(gw, client, "/ui/runs/run-bugfix-users-404").await;
        let link = client
            .find(Locator::Css("a[href*='/ui/provenance?id=event']"))
            .await
            .unwrap();
        click_element_to(client, link, "/ui/provenance").await;
        let svg = client.find(Locator::Css("svg")).await.unwrap();
        assert!(svg.is_displayed().await.unwrap());
        let nodes = client.find_all(Locator::Css("svg a")).await.unwrap();
        assert!(nodes.len() >= 2, "the record and at least one relative");
        screen(client, "provenance").await;
        // A node is a link to its own provenance.
        let before = client.current_url().await.unwrap();
        let target = nodes
            .iter()
            .last()
            .unwrap()
            .attr("href")
            .await
            .unwrap()
            .unwrap();
        click_element_to(client, nodes.into_iter().last().unwrap(), "/ui/provenance").await;
        let after = client.current_url().await.unwrap();
        assert_ne!(before, after, "the graph moved to {target}");
    });
}

#[test]
fn the_memory_screen_reviews_a_candidate_pins_it_and_raises_its_sensitivity() {
    with_browser(async |gw, client| {
        gw.import_fixture_runs(&["01-bugfix-users-404.json"]);
        let out = gw.tollgate(&["memory", "distill", "run-bugfix-users-404", "--json"]);
        assert!(out.status.success(), "{}", support::stderr(&out));
        let lead = gw.create_token(&["--kind", "admin", "--name", "lead"]);
        log_in_with(gw, client, &lead).await;
        click_to(client, Locator::LinkText("Memories"), "/ui/memories").await;
        // The review queue: the candidates distillation left below the thresholds.
        let queue = text(client).await;
        assert!(queue.contains("Review queue"), "{queue}");
        let first = client
            .find(Locator::Css("table a[href^='/ui/memories/mem-']"))
            .await
            .unwrap();
        let href = first.attr("href").await.unwrap().unwrap();
        screen(client, "memories").await;
        click_element_to(client, first, &href).await;
        let page = text(client).await;
        for part in ["Confidence", "Reuse", "Recency", "Evidence", "candidate"] {
            assert!(page.contains(part), "{part} in {page}");
        }
        // Its evidence links to the event it came from.
        let evidence = client
            .find(Locator::Css(
                "ol.evidence a[href^='/ui/runs/run-bugfix-users-404']",
            ))
            .await
            .unwrap();
        assert!(evidence.is_displayed().await.unwrap());
        screen(client, "memory").await;

        // A control without a reason is refused by the browser itself (required fields);
        // with one, pinning a candidate accepts and pins it.
        let form = client.find(Locator::Css("form.decide")).await.unwrap();
        form.find(Locator::Css("input[name=reason]"))
            .await
            .unwrap()
            .send_keys("we always do this")
            .await
            .unwrap();
        let pin = form.find(Locator::Css("button[value=pin]")).await.unwrap();
        click_element_to(client, pin, &href).await;
        let page = text(client).await;
        assert!(page.contains("Done: pin."), "{page}");
        assert!(
            page.contains("approved") && page.contains("pinned"),
            "{page}"
        );
        assert!(page.contains("accept by lead"), "{page}");

        // Raise its sensitivity: recorded with who and why, shown in the history.
        let forms = client.find_all(Locator::Css("form.decide")).await.unwrap();
        let edit = forms.into_iter().last().unwrap();
        edit.find(Locator::Css("input[name=reason]"))
            .await
            .unwrap()
            .send_keys("names a customer")
            .await
            .unwrap();
        edit.find(Locator::Css("select[name=level] option[value=secret]"))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        let save = edit
            .find(Locator::Css("button[type=submit]"))
            .await
            .unwrap();
        click_element_to(client, save, &href).await;
        let page = text(client).await;
        assert!(page.contains(" → secret by lead"), "{page}");
        // The JSON route sees the same memory.
        let id = href.trim_start_matches("/ui/memories/");
        let (status, json) = gw.call("GET", &format!("/v2/memory/{id}"), None);
        assert_eq!(status, 200, "{json}");
        assert_eq!(json["sensitivity"], "secret", "{json}");
        assert_eq!(json["pinned"], true, "{json}");
        assert_eq!(json["status"], "approved", "{json}");
    });
}

#[test]
fn the_replay_screen_shows_a_baseline_and_its_replay_side_by_side() {
    with_browser(async |gw, client| {
        gw.import_fixture_runs(&["03-flaky-webhook-retry.json"]);
        let json_of = |out: std::process::Output| -> Value {
            assert!(out.status.success(), "{}", support::stderr(&out));
            serde_json::from_slice(&out.stdout).unwrap()
        };
        let created = json_of(gw.tollgate(&[
            "replay",
            "scenario",
            "--run",
            "run-flaky-webhook-retry",
            "--disable-rule",
            "coding-agent/read-only",
            "--drop",
            "doc-agent-guidelines",
            "--json",
        ]));
        let scenario = created["scenario"]["id"].as_str().unwrap().to_string();
        let result = json_of(gw.tollgate(&["replay", "run", &scenario, "--json"]));
        let id = result["id"].as_str().unwrap().to_string();
        let batch = json_of(gw.tollgate(&[
            "replay",
            "batch",
            "--run",
            "run-flaky-webhook-retry",
            "--sweep",
            "disable-each-memory-class",
            "--json",
        ]));
        let batch_id = batch["id"].as_str().unwrap().to_string();
        log_in(gw, client).await;
        click_to(client, Locator::LinkText("Replays"), "/ui/replays").await;
        let list = text(client).await;
        assert!(list.contains(&id) && list.contains("loss"), "{list}");
        screen(client, "replays").await;
        let href = format!("/ui/replays/{id}");
        click_to(client, Locator::Css(&format!("a[href='{href}']")), &href).await;
        let page = text(client).await;
        for part in [
            "Baseline",
            "Replay",
            "Tokens by kind",
            "structural_success",
            "disable rule `coding-agent/read-only`",
            "dropped",
            "fs.read_file",
            "deny",
            "fake provider",
        ] {
            assert!(page.contains(part), "{part} in {page}");
        }
        // The model's answers, recorded and fake, as a diff.
        let added = client.find(Locator::Css("pre.diff .add")).await.unwrap();
        assert!(added.text().await.unwrap().contains("[fake"));
        screen(client, "replay").await;
        // The batch: every memory class dropped in turn, each result linked.
        let batch_href = format!("/ui/replays/{batch_id}");
        open(gw, client, &batch_href).await;
        let page = text(client).await;
        assert!(page.contains("2 of 2 scenarios"), "{page}");
        assert!(page.contains("no `procedure` memories"), "{page}");
        // The side-by-side view folds to one column on a phone.
        client.set_window_size(390, 844).await.unwrap();
        open(gw, client, &href).await;
        assert_fits(client, "replay (narrow)").await;
    });
}

#[test]
fn the_regression_screen_shows_the_last_suite_and_a_failing_case_with_its_signature() {
    with_browser(async |gw, client| {
        gw.import_fixture_runs(&[
            "04-forbidden-tool-pool-exhaustion.json",
            "01-bugfix-users-404.json",
        ]);
        for (run, body) in [
            (
                "run-forbidden-tool-pool-exhaustion",
                json!({"id": "pool", "task_type": "incident"}),
            ),
            (
                "run-bugfix-users-404",
                json!({"id": "users-404", "step": 7, "task_type": "bugfix"}),
            ),
        ] {
            let (status, made) = gw.call(
                "POST",
                &format!("/v2/regressions/from-run/{run}"),
                Some(&body),
            );
            assert_eq!(status, 201, "{made}");
        }
        // A suite, run by the gateway's worker.
        let (status, started) = gw.call("POST", "/v2/regressions/suites/execute", Some(&json!({})));
        assert_eq!(status, 202, "{started}");
        let suite = started["suite"]["id"].as_str().unwrap().to_string();
        wait_for(client, "the suite to finish", async || {
            let (_, view) = gw.call("GET", &format!("/v2/regressions/suites/{suite}"), None);
            view["suite"]["finished_at"].is_string()
        })
        .await;
        // A candidate policy that no longer denies `shell.rm_rf`: the pool case fails.
        let read = |name: &str| {
            std::fs::read_to_string(support::root().join("fixtures/envelopes").join(name)).unwrap()
        };
        let loose = read("org-baseline.yaml")
            .replace("version: 1", "version: 2")
            .replace(
                "tools: [\"shell.rm*\"]",
                "tools: [\"shell.rmdir_never_called\"]",
            );
        let (status, run) = gw.call(
            "POST",
            "/v2/regressions/pool/execute",
            Some(&json!({"envelopes": [
                {"name": "org-baseline.yaml", "yaml": loose},
                {"name": "coding-agent.yaml", "yaml": read("coding-agent.yaml")},
            ]})),
        );
        assert_eq!(status, 201, "{run}");
        assert_eq!(run["status"], "failed", "{run}");
        let signature = run["signature"].as_str().unwrap().to_string();

        log_in(gw, client).await;
        click_to(client, Locator::LinkText("Regressions"), "/ui/regressions").await;
        let list = text(client).await;
        for part in [
            "Last suite",
            "100.0 %",
            "incident 1/1",
            "pool",
            "users-404",
            "failed",
            &signature,
        ] {
            assert!(list.contains(part), "{part} in {list}");
        }
        screen(client, "regressions").await;
        click_to(
            client,
            Locator::Css("a[href='/ui/regressions/pool']"),
            "/ui/regressions/pool",
        )
        .await;
        let page = text(client).await;
        for part in [
            "Failure signature",
            signature.as_str(),
            "(expected deny)",
            "Failed assertions",
            "policy",
            "the request",
            "drift",
            "created from run run-forbidden-tool-pool-exhaustion",
        ] {
            assert!(page.contains(part), "{part} in {page}");
        }
        screen(client, "regression-case").await;
        client.set_window_size(390, 844).await.unwrap();
        open(gw, client, "/ui/regressions/pool").await;
        assert_fits(client, "regression case (narrow)").await;
    });
}

#[test]
fn the_handoff_screen_shows_a_contract_its_dropped_evidence_violations_and_graph() {
    with_browser(async |gw, client| {
        let (status, run) = gw.call(
            "POST",
            "/v1/runs",
            Some(&json!({"id": "run-plan", "agent": "coder", "task": "T-300",
                         "scope": "org:acme/repo:api/task:T-300", "clearance": "internal"})),
        );
        assert_eq!(status, 201, "{run}");
        let contract = json!({
            "id": "plan-T-300", "template": "planner_to_executor",
            "producer": {"run": "run-plan"}, "consumer": {"agent": "executor"},
            "goal": {"objective": "Paginate GET /teams", "expected_output": "a patch and a test report"},
            "evidence": [
                {"item": "doc-ticket-T-300", "scope": "org:acme/repo:api/task:T-300", "sensitivity": "internal"},
                {"item": "doc-globex", "scope": "org:globex/repo:web", "sensitivity": "internal"}
            ],
            "constraints": {"hard_rules": ["no new crates"]},
            "required_outputs": ["patch", "test_report"]
        });
        let (status, posted) = gw.call("POST", "/v2/handoffs/contracts", Some(&contract));
        assert_eq!(status, 201, "{posted}");
        let (status, _) = gw.call(
            "POST",
            "/v1/runs",
            Some(
                &json!({"id": "run-exec", "agent": "executor", "task": "T-300",
                         "scope": "org:acme/repo:api/task:T-300", "handoff": "plan-T-300"}),
            ),
        );
        assert_eq!(status, 201);
        // Opening the run under the contract accepted it.
        gw.call(
            "POST",
            "/v1/runs/run-exec/events",
            Some(&json!({"events": [{"kind": "output", "payload": {"content": "Patch:\n- src/teams.rs\n"}}]})),
        );
        let (status, _) = gw.call(
            "POST",
            "/v1/runs/run-exec/finish",
            Some(&json!({"status": "succeeded"})),
        );
        assert_eq!(status, 200);

        log_in(gw, client).await;
        click_to(client, Locator::LinkText("Handoffs"), "/ui/handoffs").await;
        let list = text(client).await;
        for part in [
            "plan-T-300",
            "planner_to_executor",
            "violated",
            "run-plan",
            "run-exec",
        ] {
            assert!(list.contains(part), "{part} in {list}");
        }
        screen(client, "handoffs").await;
        click_to(
            client,
            Locator::Css("a[href='/ui/handoffs/plan-T-300']"),
            "/ui/handoffs/plan-T-300",
        )
        .await;
        let page = text(client).await;
        for part in [
            "Paginate GET /teams",
            "doc-globex dropped: evidence_out_of_scope",
            "doc-ticket-T-300 crosses",
            "accept by executor",
            "missing_output test_report",
            "handoff.missing-output",
        ] {
            assert!(page.contains(part), "{part} in {page}");
        }
        let svg = client.find(Locator::Css(".graph svg")).await.unwrap();
        assert!(svg.text().await.unwrap().contains("executor"));
        screen(client, "handoff").await;
        client.set_window_size(390, 844).await.unwrap();
        open(gw, client, "/ui/handoffs/plan-T-300").await;
        assert_fits(client, "handoff (narrow)").await;
    });
}

#[test]
fn the_cases_screen_opens_a_demo_case_approves_and_commits_it() {
    let packs = support::TempDir::new("browser-pack");
    let out = support::tollgate(&[
        "init",
        "intake_review",
        "--output",
        packs.path().join("intake").to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", support::stderr(&out));
    let root = packs.path().join("intake").display().to_string();
    with_browser_on(
        || Gateway::start_with(&[("TOLLGATE_PACK_ROOTS", root.as_str())]),
        async |gw, client| {
            let lead = gw.create_token(&["--kind", "admin", "--name", "lead"]);
            log_in_with(gw, client, &lead).await;
            click_to(client, Locator::LinkText("Cases"), "/ui/cases").await;
            let list = text(client).await;
            assert!(
                list.contains("intake_review@0.1.0") && list.contains("No case yet"),
                "{list}"
            );
            let demo = client
                .find(Locator::Css("form.inline button[type=submit]"))
                .await
                .unwrap();
            demo.click().await.unwrap();
            wait_for(client, "the demo case", async || {
                client
                    .current_url()
                    .await
                    .unwrap()
                    .path()
                    .starts_with("/ui/cases/case-")
            })
            .await;
            let href = client.current_url().await.unwrap().path().to_string();
            let page = text(client).await;
            for part in [
                "Vendor contract renewal",
                "awaiting_approval",
                "triage",
                "legal",
                "intake.route-permitted",
                "healthy",
                "case_opened",
            ] {
                assert!(page.contains(part), "{part} in {page}");
            }
            screen(client, "cases-case").await;
            let form = client.find(Locator::Css("form.decide")).await.unwrap();
            let approve = form
                .find(Locator::Css("button[value=approve]"))
                .await
                .unwrap();
            click_element_to(client, approve, &href).await;
            let page = text(client).await;
            assert!(
                page.contains("Done: approve") && page.contains("approved"),
                "{page}"
            );
            let commit = client
                .find(Locator::Css("button[value=commit]"))
                .await
                .unwrap();
            click_element_to(client, commit, &href).await;
            let page = text(client).await;
            assert!(
                page.contains("Done: commit") && page.contains("committed"),
                "{page}"
            );
            assert!(page.contains("commit_applied"), "{page}");
            click_to(client, Locator::LinkText("Cases"), "/ui/cases").await;
            let list = text(client).await;
            assert!(list.contains("committed"), "{list}");
            screen(client, "cases").await;
            client.set_window_size(390, 844).await.unwrap();
            open(gw, client, &href).await;
            assert_fits(client, "case (narrow)").await;
        },
    );
}
