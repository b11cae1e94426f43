//! A run stays on the envelope versions it opened with (issue 32): the red team rewrote the
//! envelope governing its own run mid-run and the same run's calls changed at once. Now a new
//! version reaches a running run only when an admin re-pins it.

use serde_json::{Value, json};

use super::support::Gateway;

fn http_get(gw: &Gateway, token: &str, run: &str) -> Value {
    let (status, answer) = gw.call_as(
        token,
        "POST",
        &format!("/v1/runs/{run}/tool-calls"),
        Some(&json!({"tool": "http.get", "arguments": {"url": "https://docs.rs/a"}})),
    );
    assert_eq!(status, 200, "{answer}");
    answer
}

#[test]
fn a_new_envelope_version_reaches_a_running_run_only_when_an_admin_repins_it() {
    let gw = Gateway::with_fixture_envelopes();
    let coder = gw.create_token(&["--kind", "agent", "--agent", "coder"]);
    let lead = gw.create_token(&["--kind", "approver", "--name", "team-lead"]);
    let admin = gw.create_token(&["--kind", "admin", "--name", "ada"]);
    let (status, run) = gw.call_as(
        &coder,
        "POST",
        "/v1/runs",
        Some(&json!({"id": "r", "agent": "coder", "task": "T-12", "scope": "org:acme/repo:api"})),
    );
    assert_eq!(status, 201, "{run}");
    assert_eq!(
        run["governing"],
        json!(["coding-agent@2", "org-baseline@1"])
    );
    assert_eq!(http_get(&gw, &coder, "r")["effect"], "allow");

    // An admin stores version 3, which denies the web. The running run is named as behind.
    let v3 = json!({"id": "coding-agent", "version": 3, "extends": ["org-baseline"],
                    "attach": {"agents": ["coder"]},
                    "tools": [{"id": "web", "effect": "deny", "tools": ["http.get"]}]});
    let (status, stored) = gw.call_as(&admin, "POST", "/v2/policies/envelopes", Some(&v3));
    assert_eq!(status, 201, "{stored}");
    assert_eq!(
        stored["runs_behind"],
        json!([{"run": "r", "pinned": ["coding-agent@2"]}]),
        "{stored}"
    );

    // The run stays on version 2; its receipts say so.
    let kept = http_get(&gw, &coder, "r");
    assert_eq!(kept["effect"], "allow", "{kept}");
    assert_eq!(
        kept["receipt"]["envelopes"],
        json!(["coding-agent@2", "org-baseline@1"])
    );

    // Neither the agent nor an approver may move it.
    for token in [&coder, &lead] {
        let (status, answer) = gw.call_as(token, "POST", "/v1/runs/r/repin", None);
        assert_eq!(status, 403, "{answer}");
        assert_eq!(answer["error"]["code"], "kind_not_admitted", "{answer}");
    }

    // A dry run says what would move, and moves nothing.
    let (status, plan) = gw.call_as(
        &admin,
        "POST",
        "/v2/policies/envelopes/coding-agent/repin?dry_run=true",
        None,
    );
    assert_eq!(status, 200, "{plan}");
    assert_eq!(plan["runs"][0]["run"], "r", "{plan}");
    assert_eq!(plan["runs"][0]["changed"], true, "{plan}");
    assert_eq!(
        plan["runs"][0]["to"],
        json!(["coding-agent@3", "org-baseline@1"])
    );
    assert_eq!(http_get(&gw, &coder, "r")["effect"], "allow");

    let (status, done) = gw.call_as(&admin, "POST", "/v1/runs/r/repin", None);
    assert_eq!(status, 200, "{done}");
    assert_eq!(done["seq"], 1, "{done}");
    let denied = http_get(&gw, &coder, "r");
    assert_eq!(denied["effect"], "deny", "{denied}");
    assert_eq!(
        denied["receipt"]["envelopes"],
        json!(["coding-agent@3", "org-baseline@1"])
    );
    let (_, view) = gw.call_as(&admin, "GET", "/v1/runs/r", None);
    assert_eq!(
        view["governing"],
        json!(["coding-agent@3", "org-baseline@1"])
    );

    // The re-pin is in the audit log with who did it; a finished run cannot be re-pinned.
    let (_, log) = gw.call_as(&admin, "GET", "/v1/audit", None);
    assert!(
        log["entries"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["name"] == "ada" && e["target"] == "/v1/runs/r/repin" && e["status"] == 200),
        "{log}"
    );
    let (status, _) = gw.call_as(
        &coder,
        "POST",
        "/v1/runs/r/finish",
        Some(&json!({"status": "succeeded"})),
    );
    assert_eq!(status, 200);
    let (status, answer) = gw.call_as(&admin, "POST", "/v1/runs/r/repin", None);
    assert_eq!(status, 409, "{answer}");
    let (status, answer) = gw.call_as(&admin, "POST", "/v1/runs/nope/repin", None);
    assert_eq!(status, 404, "{answer}");
}
