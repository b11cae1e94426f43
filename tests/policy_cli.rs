//! End-to-end tests of `tollgate policy check | decide | diff`: spawn the binary on the
//! fixtures under `fixtures/envelopes/` and assert exit codes, positions, effects and
//! explanations.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::process::Output;

use support::{root, stderr, stdout, tollgate};

const ENVELOPES: &str = "fixtures/envelopes";

fn request(name: &str) -> String {
    format!("fixtures/envelopes/requests/{name}.json")
}

fn decide(name: &str, extra: &[&str]) -> Output {
    let req = request(name);
    let mut args = vec![
        "policy",
        "decide",
        "--envelope",
        ENVELOPES,
        "--request",
        &req,
    ];
    args.extend_from_slice(extra);
    tollgate(&args)
}

#[test]
fn check_of_the_fixture_envelopes_exits_0_and_lists_them() {
    let o = tollgate(&["policy", "check", ENVELOPES]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("coding-agent@2: 9 rules, extends org-baseline\n"),
        "{out}"
    );
    assert!(out.contains("org-baseline@1: 5 rules\n"), "{out}");
    assert!(
        out.contains("2 envelopes in 2 files checked, no errors"),
        "{out}"
    );
}

#[test]
fn check_json_lists_envelopes_and_the_set_version() {
    let o = tollgate(&[
        "policy",
        "check",
        "fixtures/envelopes/org-baseline.yaml",
        "fixtures/envelopes/coding-agent.yaml",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["errors"], 0);
    assert_eq!(j["envelopes"][0]["id"], "coding-agent");
    assert_eq!(j["envelopes"][0]["extends"][0], "org-baseline");
    assert_eq!(j["version"].as_str().unwrap().len(), 64);
}

/// `policy check FILE` exits 2 with `file:line:column`, the message and the help line.
fn check_invalid(file: &str, code: &str, at: &str, message: &str, help: &str) {
    let path = format!("fixtures/envelopes/invalid/{file}");
    let o = tollgate(&["policy", "check", &path]);
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    let err = stderr(&o);
    assert!(
        err.contains(&format!("error[{code}]: {message}\n")),
        "{err}"
    );
    assert!(err.contains(&format!(" --> {path}:{at}\n")), "{err}");
    assert!(err.contains(&format!("  = help: {help}")), "{err}");
}

#[test]
fn an_unknown_key_is_located_with_a_did_you_mean() {
    check_invalid(
        "unknown-key.yaml",
        "E-envelope-unknown-key",
        "6:5",
        "unknown key `tool` in a tool rule",
        "did you mean `tools`?",
    );
}

#[test]
fn a_cycle_names_every_envelope_and_each_extends_entry() {
    check_invalid(
        "cycle.yaml",
        "E-envelope-cycle",
        "4:11",
        "envelopes `team-a`, `team-b` and `team-c` extend each other in a cycle",
        "an envelope cannot inherit from itself: remove one `extends` entry of the cycle team-a -> team-b -> team-c -> team-a",
    );
    let err = stderr(&tollgate(&[
        "policy",
        "check",
        "fixtures/envelopes/invalid/cycle.yaml",
    ]));
    assert!(
        err.contains(" ::: fixtures/envelopes/invalid/cycle.yaml:8:11\n"),
        "{err}"
    );
    assert!(
        err.contains(" ::: fixtures/envelopes/invalid/cycle.yaml:12:11\n"),
        "{err}"
    );
}

#[test]
fn an_unknown_parent_is_located() {
    check_invalid(
        "unknown-parent.yaml",
        "E-envelope-unknown-parent",
        "3:11",
        "envelope `reviewer` extends unknown envelope `org-basline`",
        "load the file that defines `org-basline` too",
    );
    // With the baseline loaded, the typo gets a suggestion.
    let o = tollgate(&[
        "policy",
        "check",
        "fixtures/envelopes/org-baseline.yaml",
        "fixtures/envelopes/invalid/unknown-parent.yaml",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("= help: did you mean `org-baseline`?"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_bad_glob_is_located_with_glob_help() {
    check_invalid(
        "bad-glob.yaml",
        "E-envelope-glob",
        "6:13",
        "invalid glob pattern `fs.{read,list`: unclosed alternate group; missing '}' (maybe escape '{' with '[{]'?)",
        "in a glob, `*` matches within a `/` segment",
    );
    let err = stderr(&tollgate(&[
        "policy",
        "check",
        "fixtures/envelopes/invalid/bad-glob.yaml",
    ]));
    assert!(
        err.contains("6 |     tools: [\"fs.{read,list\"]\n"),
        "{err}"
    );
    assert!(err.contains("^^^^^^^^^^^^^^^ invalid pattern"), "{err}");
}

#[test]
fn check_json_gives_code_position_and_help() {
    let o = tollgate(&[
        "policy",
        "check",
        "fixtures/envelopes/invalid/unknown-key.yaml",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let d = &j["diagnostics"][0];
    assert_eq!(d["code"], "E-envelope-unknown-key");
    assert_eq!(d["file"], "fixtures/envelopes/invalid/unknown-key.yaml");
    assert_eq!(
        (d["line"].as_u64(), d["column"].as_u64()),
        (Some(6), Some(5))
    );
    assert!(
        d["help"]
            .as_str()
            .unwrap()
            .starts_with("did you mean `tools`?")
    );
}

#[test]
fn a_missing_file_is_an_input_error() {
    let o = tollgate(&["policy", "check", "fixtures/envelopes/nope.yaml"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("`fixtures/envelopes/nope.yaml` does not exist"));
}

#[test]
fn decide_shows_allow_deny_redact_and_require_approval() {
    for (name, first_line) in [
        (
            "read-file",
            "allow by coding-agent/read-only, org-baseline/rest-to-children",
        ),
        ("rm-rf", "deny by org-baseline/no-rm"),
        ("secret-context", "redact by org-baseline/secrets-redacted"),
        (
            "shell-exec",
            "require_approval by coding-agent/lead-approves, coding-agent/shell",
        ),
        ("web-over-budget", "rate_limited by coding-agent/web-budget"),
        ("model-allowed", "allow by coding-agent/mini"),
        ("upload", "deny by default-deny"),
    ] {
        let o = decide(name, &[]);
        assert_eq!(o.status.code(), Some(0), "{name}: {}", stderr(&o));
        let out = stdout(&o);
        let line = out.lines().next().unwrap();
        assert!(line.ends_with(first_line), "{name}: {out}");
        assert!(
            out.contains("envelopes: coding-agent@2, org-baseline@1\n"),
            "{out}"
        );
        assert!(!out.contains("proof:"), "{out}");
    }
}

#[test]
fn explain_prints_a_readable_proof() {
    let o = decide("read-file", &["--explain"]);
    assert_eq!(o.status.code(), Some(0));
    let out = stdout(&o);
    assert!(out.contains("proof:\n"), "{out}");
    assert!(
        out.contains("\"allow\", \"coding-agent/read-only\")  [rule tool.allow, line "),
        "{out}"
    );
    assert!(
        out.contains("tool_rule(\"coding-agent\", \"coding-agent/read-only\", \"allow\", \"fs.read*\")  [input: envelope:coding-agent@2]"),
        "{out}"
    );
    assert!(out.contains("\"fs.read_file\")  [input: request]"), "{out}");
    assert!(out.contains("!tool_denied("), "{out}");

    let out = stdout(&decide("rm-rf", &["--explain"]));
    assert!(out.contains("[rule tool.deny-overrides"), "{out}");
    assert!(
        out.contains("\"shell.rm*\")  [input: envelope:org-baseline@1]"),
        "{out}"
    );

    let out = stdout(&decide("secret-context", &["--explain"]));
    assert!(out.contains("[rule context.redact-overrides-see"), "{out}");
    assert!(
        out.contains("data_rule_label(") || out.contains("secret"),
        "{out}"
    );

    let out = stdout(&decide("write-file", &["--explain"]));
    assert!(out.contains("require_approval"), "{out}");
    assert!(out.contains("approval_rule(\"coding-agent\", \"coding-agent/lead-approves\", \"fs.write*\", \"team-lead\", 900)"), "{out}");
}

#[test]
fn a_default_denial_explains_why_not() {
    let o = decide("upload", &["--explain"]);
    assert_eq!(o.status.code(), Some(0));
    let out = stdout(&o);
    assert!(out.contains("[rule tool.default-deny"), "{out}");
    assert!(out.contains("why not allowed:\n"), "{out}");
    assert!(out.contains("tool_permitted(\"req-"), "{out}");
    assert!(
        out.contains("rule tool.rule-hit (line ") && out.contains("`glob(p, t)` does not hold"),
        "{out}"
    );
    assert!(out.contains("t = \"net.upload\""), "{out}");

    let out = stdout(&decide("model-denied", &["--explain"]));
    assert!(out.contains("why not allowed:"), "{out}");
    assert!(out.contains("mp = \"gpt-4.1-mini\""), "{out}");
}

#[test]
fn decide_json_is_the_whole_decision() {
    let o = decide("shell-exec", &["--json"]);
    assert_eq!(o.status.code(), Some(0));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["kind"], "tool");
    assert_eq!(j["effect"], "require_approval");
    assert_eq!(j["rules"][1], "coding-agent/shell");
    assert_eq!(j["proof"]["rule"], "tool.approval-overrides-allow");
    assert_eq!(j["envelope_versions"][0], "coding-agent@2");
    assert_eq!(j["input_hash"].as_str().unwrap().len(), 64);
    let again: serde_json::Value =
        serde_json::from_slice(&decide("shell-exec", &["--json"]).stdout).unwrap();
    assert_eq!(again, j);
}

#[test]
fn memory_and_handoff_requests_list_their_verdicts() {
    let out = stdout(&decide("memory", &[]));
    assert!(out.contains("memory mem-build: eligible\n"), "{out}");
    assert!(
        out.contains("memory mem-other-task: ineligible (out_of_scope)\n"),
        "{out}"
    );
    assert!(
        out.contains("memory mem-stale: ineligible (expired)\n"),
        "{out}"
    );
    let out = stdout(&decide("handoff", &[]));
    assert!(out.starts_with("handoff h-1: deny by "), "{out}");
    assert!(
        out.contains("violation missing_output: test_report\n"),
        "{out}"
    );
    assert!(
        out.contains("violation evidence_above_clearance: keys\n"),
        "{out}"
    );
}

#[test]
fn decide_denies_a_tool_above_the_run_clearance_by_clearance_forbid() {
    // coding-agent@3 puts `deploy.prod*` at `secret` (`tool_levels:`).
    let dir = std::env::temp_dir().join(format!("tollgate-levels-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (clearance, first_line, rule) in [
        (
            "confidential",
            "deny by clearance-forbid",
            "[rule tool.clearance-forbid",
        ),
        // Cleared, the level permits nothing: no tool rule allows deploys.
        ("secret", "deny by default-deny", "[rule tool.default-deny"),
    ] {
        let req = dir.join(format!("deploy-{clearance}.json"));
        std::fs::write(
            &req,
            format!(
                "{{\"kind\": \"tool\", \"subject\": {{\"run\": \"r\", \"agent\": \"coder\", \"task\": \"T-1\", \"scope\": \"org:acme/repo:api\", \"clearance\": \"{clearance}\"}}, \"tool\": {{\"name\": \"deploy.prod_api\", \"args\": {{}}}}}}"
            ),
        )
        .unwrap();
        let o = tollgate(&[
            "policy",
            "decide",
            "-e",
            "fixtures/envelopes/org-baseline.yaml",
            "-e",
            "fixtures/envelopes/diff/coding-agent.v3.yaml",
            "-r",
            req.to_str().unwrap(),
            "--explain",
        ]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let out = stdout(&o);
        assert!(out.lines().next().unwrap().ends_with(first_line), "{out}");
        assert!(out.contains(rule), "{out}");
        if clearance == "confidential" {
            assert!(
                out.contains("tool_level(\"coding-agent\", \"coding-agent/prod-secret\", \"deploy.prod*\", \"secret\")  [input: envelope:coding-agent@3]"),
                "{out}"
            );
        }
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_bad_request_file_is_an_input_error_with_its_position() {
    let dir = std::env::temp_dir().join(format!("tollgate-policy-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.json");
    std::fs::write(
        &bad,
        "{\"kind\": \"tool\",\n \"subject\": {\"run\": \"r\", \"agent\": \"a\", \"task\": \"t\", \"scope\": \"s\"},\n \"tols\": {}}\n",
    )
    .unwrap();
    let o = tollgate(&[
        "policy",
        "decide",
        "-e",
        ENVELOPES,
        "-r",
        bad.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(
        err.contains("error[E-request]: invalid request: unknown field `tols`"),
        "{err}"
    );
    assert!(err.contains("bad.json:3:"), "{err}");
    assert!(err.contains("= help: a request has `kind`"), "{err}");
    // Invalid envelopes stop a decision too.
    let o = tollgate(&[
        "policy",
        "decide",
        "-e",
        "fixtures/envelopes/invalid/bad-glob.yaml",
        "-r",
        &request("read-file"),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("error[E-envelope-glob]"));
    // In a JSON Lines file of requests, the line is the file's line.
    let good = std::fs::read_to_string(root().join(request("read-file"))).unwrap();
    let jsonl = dir.join("requests.jsonl");
    std::fs::write(
        &jsonl,
        format!(
            "{}\n{{\"kind\": \"model\", \"subject\": {{\"run\": \"r\", \"agent\": \"a\", \"task\": \"t\", \"scope\": \"s\"}}}}\n",
            serde_json::to_string(&serde_json::from_str::<serde_json::Value>(&good).unwrap())
                .unwrap()
        ),
    )
    .unwrap();
    let o = tollgate(&[
        "policy",
        "diff",
        "fixtures/envelopes/coding-agent.yaml",
        "fixtures/envelopes/coding-agent.yaml",
        "-w",
        "fixtures/envelopes/org-baseline.yaml",
        "--requests",
        jsonl.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(
        err.contains("invalid request: a `model` request needs a `model` object"),
        "{err}"
    );
    assert!(err.contains("requests.jsonl:2:1\n"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn diff_lists_rule_changes_and_the_decisions_they_change() {
    let o = tollgate(&[
        "policy",
        "diff",
        "fixtures/envelopes/coding-agent.yaml",
        "fixtures/envelopes/diff/coding-agent.v3.yaml",
        "--with",
        "fixtures/envelopes/org-baseline.yaml",
        "--requests",
        "fixtures/envelopes/diff/requests.jsonl",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.starts_with("modified coding-agent (version 2 -> 3)\n"),
        "{out}"
    );
    assert!(out.contains("  - tools coding-agent/web-budget\n"), "{out}");
    assert!(out.contains("  ~ tools coding-agent/writes\n"), "{out}");
    assert!(out.contains("  + models coding-agent/full\n"), "{out}");
    assert!(
        out.contains("  + tool_levels coding-agent/prod-secret\n"),
        "{out}"
    );
    let rule_changes = out.split("requests change decision").next().unwrap();
    assert!(!rule_changes.contains("read-only"), "{out}");
    assert!(out.contains("4 of 6 requests change decision\n"), "{out}");
    assert!(
        out.contains("line 2: tool require_approval (coding-agent/lead-approves, coding-agent/writes) -> allow (coding-agent/writes, org-baseline/rest-to-children)\n"),
        "{out}"
    );
    assert!(
        out.contains(
            "line 3: tool rate_limited (coding-agent/web-budget) -> deny (default-deny)\n"
        ),
        "{out}"
    );
    assert!(
        out.contains("line 5: model deny (default-deny) -> allow (coding-agent/full)\n"),
        "{out}"
    );
    // Both proofs are shown.
    assert!(
        out.contains("[input: envelope:coding-agent@2]")
            && out.contains("[input: envelope:coding-agent@3]"),
        "{out}"
    );

    let o = tollgate(&[
        "policy",
        "diff",
        "fixtures/envelopes/coding-agent.yaml",
        "fixtures/envelopes/diff/coding-agent.v3.yaml",
        "-w",
        "fixtures/envelopes/org-baseline.yaml",
        "--requests",
        "fixtures/envelopes/diff/requests.jsonl",
        "--json",
    ]);
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["requests"], 6);
    assert_eq!(j["envelopes"][0]["id"], "coding-agent");
    let lines: Vec<u64> = j["changed_decisions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["line"].as_u64().unwrap())
        .collect();
    assert_eq!(lines, [2, 3, 4, 5]);
    assert_eq!(j["changed_decisions"][0]["new"]["effect"], "allow");
    assert!(j["changed_decisions"][0]["old"]["proof"].is_object());
}

#[test]
fn diff_of_identical_sets_says_so() {
    let o = tollgate(&[
        "policy",
        "diff",
        "fixtures/envelopes/coding-agent.yaml",
        "fixtures/envelopes/coding-agent.yaml",
        "--with",
        "fixtures/envelopes/org-baseline.yaml",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), "no envelope changed\n");
}

#[test]
fn envelope_versions_are_kept_in_the_store_and_diffed_by_reference() {
    let dir = support::TempDir::new("versions");
    let url = dir.database_url();
    let run = |args: &[&str]| support::tollgate_env(&[("TOLLGATE_DATABASE_URL", &url)], args);
    let out = run(&["policy", "store", ENVELOPES]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("stored     coding-agent@2"),
        "{}",
        stdout(&out)
    );
    // Storing the same content again keeps one version.
    assert!(stdout(&run(&["policy", "store", ENVELOPES])).contains("unchanged  coding-agent@2"));
    // A change without a new version number is refused, and nothing is stored.
    let original =
        std::fs::read_to_string(root().join("fixtures/envelopes/coding-agent.yaml")).unwrap();
    let changed = original.replace(
        "tools: [\"fs.read*\", \"fs.list\", \"search.*\"]",
        "tools: [\"fs.list\", \"search.*\"]",
    );
    assert_ne!(changed, original);
    let edited = dir.path().join("coding-agent.yaml");
    std::fs::write(&edited, &changed).unwrap();
    let baseline = root().join("fixtures/envelopes/org-baseline.yaml");
    let paths = [edited.to_str().unwrap(), baseline.to_str().unwrap()];
    let out = run(&["policy", "store", paths[0], paths[1]]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("already stored with different content"),
        "{}",
        stderr(&out)
    );
    std::fs::write(&edited, changed.replace("version: 2", "version: 3")).unwrap();
    let out = run(&["policy", "store", paths[0], paths[1]]);
    assert!(
        stdout(&out).contains("stored     coding-agent@3"),
        "{}",
        stdout(&out)
    );
    let versions = stdout(&run(&["policy", "versions", "coding-agent"]));
    assert!(
        versions.contains("coding-agent@2") && versions.contains("coding-agent@3"),
        "{versions}"
    );
    assert_eq!(
        stdout(&run(&["policy", "show", "coding-agent@2"])),
        original
    );
    // The diff between stored versions names the rule and the decision it changes.
    let requests = dir.path().join("requests.jsonl");
    let read = std::fs::read_to_string(root().join(request("read-file"))).unwrap();
    let one_line: serde_json::Value = serde_json::from_str(&read).unwrap();
    std::fs::write(&requests, format!("{one_line}\n")).unwrap();
    let out = run(&[
        "policy",
        "diff",
        "coding-agent@2",
        "coding-agent@3",
        "--requests",
        requests.to_str().unwrap(),
    ]);
    let text = stdout(&out);
    assert!(
        text.contains("modified coding-agent (version 2 -> 3)"),
        "{text}"
    );
    assert!(text.contains("coding-agent/read-only"), "{text}");
    assert!(text.contains("1 of 1 request"), "{text}");
}

#[test]
fn check_warns_of_a_deny_pattern_a_value_with_a_slash_escapes() {
    let file = "fixtures/envelopes/warnings/slash-escape.yaml";
    let o = tollgate(&["policy", "check", file]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("warning: `shell-guard/no-rm`") && err.contains("/cmd: {text: \"*rm -rf*\"}"),
        "{err}"
    );
    assert!(
        !err.contains("no-drop"),
        "a text pattern is not warned of: {err}"
    );
    assert!(
        stdout(&o).contains("no errors, 1 warning"),
        "{}",
        stdout(&o)
    );
    let o = tollgate(&["policy", "check", file, "--json"]);
    let doc: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(doc["warnings"].as_array().unwrap().len(), 1, "{doc}");
}

/// Bug 7 of issue 33: `policy simulate --run run-nope` printed its help line twice.
#[test]
fn simulating_on_an_unknown_run_says_so_once() {
    let dir = support::TempDir::new("simulate-nope");
    let url = dir.database_url();
    let out = support::tollgate_env(
        &[("TOLLGATE_DATABASE_URL", &url)],
        &[
            "policy",
            "simulate",
            "--envelope",
            ENVELOPES,
            "--run",
            "run-nope",
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("no run `run-nope`"), "{err}");
    assert_eq!(err.matches("tollgate runs list").count(), 1, "{err}");
}
