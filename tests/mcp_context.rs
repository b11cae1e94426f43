//! What an MCP server puts in an agent's context, through the gateway (issue 34): resources and
//! prompts decided as context items (listed only when the envelopes let the run see them,
//! read with secrets and redacted parts rewritten, refused with a receipt), the server's
//! progress passed to the client under the client's token, and the server's sampling and
//! elicitation requests reaching the client only when the envelopes allow them. The client is
//! the official Python SDK (`tests/mcp/client.py`), the upstream the Python server of the other
//! MCP tests (`tests/mcp/upstream.py`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use serde_json::{Value, json};
use support::mcp::{serve_mcp_with, session};
use support::{Gateway, TempDir};

/// Sees public notes, and notes labelled `pii` redacted; asks the model through sampling but
/// never the user.
const ENVELOPE: &str = "\
id: mcp-context
version: 1
description: The MCP context tests' agent.
attach:
  agents: [mcp-agent]
tools:
  - id: tools
    effect: allow
    tools: [\"up.*\", \"up/sampling\"]
  - id: no-asking
    effect: deny
    tools: [\"up/elicitation\"]
data:
  - id: pii-hidden
    effect: redact
    labels: [pii]
  - id: notes
    effect: see
    scopes: [\"org:acme/repo/**\"]
    max_sensitivity: internal
";

/// The Python upstream, its notes seen as `org:acme/repo/notes` (public, within the run's
/// clearance) and its HR notes as confidential (which the run may not see); the template's
/// notes labelled `pii`.
fn gateway(python: &str) -> Gateway {
    let upstream = support::root().join("tests/mcp/upstream.py");
    serve_mcp_with(
        TempDir::new("mcp-context"),
        ENVELOPE,
        "mcp-agent",
        &format!(
            "  up:\n    command: {python}\n    args: [{}]\n    context:\n      scope: org:acme/repo/notes\n      sensitivity: public\n      uris:\n        'notes://hr/': {{sensitivity: confidential}}\n        'notes://public/by-name/': {{labels: [pii]}}\n",
            upstream.display()
        ),
        &[],
        &[],
    )
}

/// The run as `tollgate runs export` writes it.
fn exported(gw: &Gateway, run: &str) -> Value {
    let out = gw.tollgate(&["runs", "export", run]);
    assert!(out.status.success(), "{}", support::stderr(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn resources_and_prompts_are_decided_as_context_items_listed_read_redacted_or_refused() {
    let Some(python) = support::python_with("mcp.client") else {
        return;
    };
    let gw = gateway(&python);
    let token = gw.create_token(&["--kind", "agent", "--agent", "mcp-agent"]);
    let seen = session(
        &python,
        &gw,
        &token,
        None,
        json!([
            {"op": "resources"},
            {"op": "templates"},
            {"op": "read", "uri": "notes://public/readme"},
            {"op": "read", "uri": "notes://hr/salaries"},
            {"op": "read", "uri": "notes://public/deploy"},
            {"op": "read", "uri": "notes://public/by-name/alice"},
            {"op": "prompts"},
            {"op": "prompt", "name": "up.review", "arguments": {"file": "src/main.rs"}},
            {"op": "prompt", "name": "up.nothing"},
        ]),
    );
    let run = support::mcp::run_of(&seen);
    // The confidential note is not listed; the template is (its URIs are decided when read).
    assert_eq!(
        seen[1]["uris"],
        json!(["notes://public/deploy", "notes://public/readme"]),
        "{}",
        seen[1]
    );
    assert_eq!(
        seen[2]["templates"],
        json!(["notes://public/by-name/{name}"])
    );
    assert_eq!(seen[3]["texts"], json!(["Public readme: build with make."]));
    let receipt = seen[3]["meta"]["tollgate/decision"]["receipt"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(receipt.starts_with(&format!("{run}#")), "{receipt}");
    // Read anyway by its URI: refused, with the reason and the receipt.
    let refused = seen[4]["error"].as_str().unwrap_or_default();
    assert!(
        refused.contains("Tollgate refused the resource `notes://hr/salaries`")
            && refused.contains(&format!("{run}#")),
        "{}",
        seen[4]
    );
    assert!(!refused.contains("Alice"), "nothing of it: {refused}");
    // A credential in a visible note is cut out by the live redactor.
    let deploy = seen[5]["texts"][0].as_str().unwrap();
    assert!(
        deploy.starts_with("deploy with token ") && !deploy.contains("ghp_R8mK"),
        "{deploy}"
    );
    // A note labelled `pii` is redacted by the data rule: its text replaced by the marker.
    let pii = seen[6]["texts"][0].as_str().unwrap();
    assert!(
        !pii.contains("alice") && pii.contains("pii-hidden"),
        "{pii}"
    );
    assert_eq!(seen[7]["prompts"], json!(["up.review"]));
    assert_eq!(
        seen[8]["texts"],
        json!(["Please review src/main.rs carefully."])
    );
    let unknown = seen[9]["error"].as_str().unwrap_or_default();
    assert!(
        unknown.contains("unknown prompt `up.nothing`") && unknown.contains("up.review"),
        "{}",
        seen[9]
    );
    // Every read is a compile in the run: offered items and their decisions, with receipts.
    let events = exported(&gw, &run);
    let compiles: Vec<&Value> = events["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "compile")
        .collect();
    assert_eq!(compiles.len(), 5, "four reads and one prompt: {events}");
    let statuses: Vec<Vec<&str>> = compiles
        .iter()
        .map(|c| {
            c["payload"]["outcomes"]
                .as_array()
                .unwrap()
                .iter()
                .map(|o| o["status"].as_str().unwrap())
                .collect()
        })
        .collect();
    assert_eq!(
        statuses,
        [
            vec!["included"],
            vec!["excluded"],
            vec!["included"],
            vec!["redacted"],
            vec!["included"]
        ]
    );
    // Recorded as compiles are, they replay exactly and the chain holds.
    let verify = gw.tollgate(&["runs", "verify", &run]);
    assert!(verify.status.success(), "{}", support::stderr(&verify));
    let replay = gw.tollgate(&["replay", "exact", &run]);
    assert!(
        replay.status.success(),
        "{}{}",
        support::stdout(&replay),
        support::stderr(&replay)
    );
}

#[test]
fn progress_reaches_the_client_and_sampling_is_asked_only_when_the_envelopes_allow() {
    let Some(python) = support::python_with("mcp.client") else {
        return;
    };
    let gw = gateway(&python);
    let token = gw.create_token(&["--kind", "agent", "--agent", "mcp-agent"]);
    let seen = session(
        &python,
        &gw,
        &token,
        None,
        json!([
            {"op": "call", "tool": "up.slow_count", "arguments": {"n": 3}, "progress": true},
            {"op": "call", "tool": "up.ask_model", "arguments": {"question": "six times seven?"}},
            {"op": "call", "tool": "up.ask_user", "arguments": {"question": "deploy?"}},
        ]),
    );
    let run = support::mcp::run_of(&seen);
    assert_eq!(seen[1]["text"], "counted to 3", "{}", seen[1]);
    // The server's progress, under the client's token, increasing (rmcp hands each
    // notification to a task of its own: one overtaken by a later one is dropped).
    let heard: Vec<&str> = seen[1]["progress"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m.as_str().unwrap())
        .collect();
    let mut increasing = heard.clone();
    increasing.sort_unstable();
    increasing.dedup();
    assert!(!heard.is_empty() && heard == increasing, "{heard:?}");
    assert!(
        heard
            .iter()
            .all(|m| ["counted 1", "counted 2", "counted 3"].contains(m)),
        "{heard:?}"
    );
    assert_eq!(seen[2]["isError"], false, "{}", seen[2]);
    assert_eq!(seen[2]["text"], "the model said: forty-two");
    // Elicitation is denied: the server's request fails with the reason, the client is
    // never asked.
    assert_eq!(seen[3]["isError"], true, "{}", seen[3]);
    let said = seen[3]["text"].as_str().unwrap();
    assert!(said.contains("up/elicitation"), "{said}");
    let asked = &seen.last().unwrap()["asked"];
    assert_eq!(asked, &json!({"sampling": 1, "elicitation": 0}));
    // Both requests are decided and recorded in the run as calls, with receipts; the
    // allowed one's answer is recorded as its result.
    let events = exported(&gw, &run);
    let events = events["events"].as_array().unwrap().clone();
    let call_of = |tool: &str| -> String {
        events
            .iter()
            .find(|e| e["kind"] == "tool_call" && e["payload"]["tool"] == tool)
            .unwrap_or_else(|| panic!("no call of {tool}: {events:?}"))["payload"]["call_id"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let (_, decisions) = gw.call("GET", &format!("/v2/policies/decisions/{run}"), None);
    let effect_of = |call: &str| -> String {
        decisions["decisions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["subject"] == call)
            .unwrap()["effect"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let sampling = call_of("up/sampling");
    assert_eq!(effect_of(&sampling), "allow");
    assert_eq!(effect_of(&call_of("up/elicitation")), "deny");
    let answered = events
        .iter()
        .find(|e| e["kind"] == "tool_result" && e["payload"]["call_id"] == sampling.as_str())
        .unwrap();
    assert_eq!(answered["payload"]["status"], "ok", "{answered}");
}
