//! Replay of runs recorded over HTTP, across envelope updates, exports and imports.

use serde_json::json;

use super::support::{self, Gateway};
use super::{open_run, tool};

/// `coding-agent` version 3 as the fixture's version 2 with the web revoked.
fn coding_agent_revoking_the_web() -> String {
    let v2 = std::fs::read_to_string(support::root().join("fixtures/envelopes/coding-agent.yaml"))
        .unwrap();
    let v3 = v2.replace("version: 2", "version: 3").replace(
        "  - id: web\n    effect: allow",
        "  - id: web\n    effect: deny",
    );
    assert!(
        v3.contains("effect: deny\n    tools: [http.get]"),
        "the fixture changed shape"
    );
    v3
}

#[test]
fn replay_exact_of_a_run_spanning_an_envelope_update_reports_no_drift() {
    let gw = Gateway::with_fixture_envelopes();
    open_run(&gw, "r-span");
    let before = tool(
        &gw,
        "r-span",
        json!({"tool": "http.get", "arguments": {"url": "https://docs.rs/a"}}),
    );
    assert_eq!(before["effect"], "allow", "{before}");

    // The envelope is updated while the run runs, and the run is re-pinned to the new
    // version: the revocation bites its next call.
    let (status, stored) = gw.raw(
        "POST",
        "/v2/policies/envelopes",
        Some(coding_agent_revoking_the_web()),
        &[
            ("Authorization", &format!("Bearer {}", gw.token)),
            ("Content-Type", "application/yaml"),
        ],
    );
    assert_eq!(status, 201, "{stored}");
    let (status, repinned) = gw.call("POST", "/v1/runs/r-span/repin", None);
    assert_eq!(status, 200, "{repinned}");
    let after = tool(
        &gw,
        "r-span",
        json!({"tool": "http.get", "arguments": {"url": "https://docs.rs/b"}}),
    );
    assert_eq!(after["effect"], "deny", "{after}");
    assert_eq!(
        after["receipt"]["envelopes"],
        json!(["coding-agent@3", "org-baseline@1"])
    );
    let (status, _) = gw.call(
        "POST",
        "/v1/runs/r-span/finish",
        Some(&json!({"status": "succeeded"})),
    );
    assert_eq!(status, 200);

    // Both versions are linked, and each decision replays under its own.
    assert_eq!(gw.count("run_envelopes"), 3);
    let out = gw.tollgate(&["replay", "exact", "r-span"]);
    let text = support::stdout(&out);
    assert!(out.status.success(), "{text}{}", support::stderr(&out));
    assert!(text.contains("2 tool calls replayed; no drift"), "{text}");

    // Exported and imported into another store, both versions travel and replay clean.
    let exported = gw.dir.path().join("r-span.json");
    let out = gw.tollgate(&["runs", "export", "r-span", "-o", exported.to_str().unwrap()]);
    assert!(out.status.success(), "{}", support::stderr(&out));
    let file: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&exported).unwrap()).unwrap();
    let sources: Vec<String> = file["envelope_sources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| format!("{}@{}", s["id"].as_str().unwrap(), s["version"]))
        .collect();
    assert_eq!(
        sources,
        ["coding-agent@2", "coding-agent@3", "org-baseline@1"]
    );
    let other = support::TempDir::new("span-import");
    let url = other.database_url();
    let env = [("TOLLGATE_DATABASE_URL", url.as_str())];
    let out = support::tollgate_env(&env, &["runs", "import", exported.to_str().unwrap()]);
    assert!(out.status.success(), "{}", support::stderr(&out));
    let out = support::tollgate_env(&env, &["replay", "exact", "r-span"]);
    let text = support::stdout(&out);
    assert!(out.status.success(), "{text}{}", support::stderr(&out));
    assert!(text.contains("no drift"), "{text}");

    // A genuine change still drifts: version 3 edited in the file to allow the web again.
    let edited = exported.with_file_name("r-span-edited.json");
    let mut file = file;
    for s in file["envelope_sources"].as_array_mut().unwrap() {
        if s["id"] == "coding-agent" && s["version"] == 3 {
            let yaml = s["yaml"].as_str().unwrap().replace(
                "  - id: web\n    effect: deny",
                "  - id: web\n    effect: allow",
            );
            s["yaml"] = json!(yaml);
        }
    }
    file["run"]["id"] = json!("r-span-edited");
    for e in file["events"].as_array_mut().unwrap() {
        let e = e.as_object_mut().unwrap();
        e.remove("hash");
        e.remove("prev");
    }
    std::fs::write(&edited, serde_json::to_string(&file).unwrap()).unwrap();
    // (A store that holds the real version 3 refuses a different content under its number.)
    let out = support::tollgate_env(&env, &["runs", "import", edited.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", support::stderr(&out));
    assert!(
        support::stderr(&out).contains("version 3 is already stored with different content"),
        "{}",
        support::stderr(&out)
    );
    let third = support::TempDir::new("span-edited");
    let url = third.database_url();
    let env = [("TOLLGATE_DATABASE_URL", url.as_str())];
    let out = support::tollgate_env(&env, &["runs", "import", edited.to_str().unwrap()]);
    assert!(out.status.success(), "{}", support::stderr(&out));
    let out = support::tollgate_env(&env, &["replay", "exact", "r-span-edited"]);
    let text = support::stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("deny was recorded, the envelopes now say allow"),
        "{text}"
    );
}
