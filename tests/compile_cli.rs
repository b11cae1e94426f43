//! End-to-end tests of `tollgate compile`: spawn the binary on `fixtures/compile/` under
//! `fixtures/envelopes/` and assert outcomes, the compiled bytes, explanations, and exit code
//! 2 with its message for bad input.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::process::Output;

use support::{root, stderr, stdout, tollgate};

const ITEMS: &str = "fixtures/compile/items.json";
const ENVELOPES: &str = "fixtures/envelopes";

fn compile(extra: &[&str]) -> Output {
    let mut args = vec!["compile", "--items", ITEMS];
    args.extend_from_slice(extra);
    tollgate(&args)
}

fn json(o: &Output) -> serde_json::Value {
    assert_eq!(o.status.code(), Some(0), "{}", stderr(o));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// `(id, status, reason)` of every outcome.
fn outcomes(j: &serde_json::Value) -> Vec<(String, String, String)> {
    j["outcomes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            (
                o["id"].as_str().unwrap().to_string(),
                o["status"].as_str().unwrap().to_string(),
                o["reason"]["reason"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn row(id: &str, status: &str, reason: &str) -> (String, String, String) {
    (id.into(), status.into(), reason.into())
}

#[test]
fn the_fixture_under_the_envelopes_shows_every_status() {
    let j = json(&compile(&["--envelope", ENVELOPES, "--json"]));
    assert_eq!(
        outcomes(&j),
        [
            row("msg-task", "included", "fits"),
            row("file-auth", "summarised", "replaced_by_summary"),
            row("file-readme", "included", "fits"),
            row("doc-partner", "excluded", "policy"),
            row("doc-deploy-keys", "redacted", "fits"),
            row("doc-runbook", "included", "fits"),
            row("mem-style", "included", "fits"),
            row("tool-old-log", "excluded", "lower_weight"),
        ]
    );
    let partner = &j["outcomes"][3];
    assert_eq!(partner["reason"]["rules"][0], "default-deny");
    assert_eq!(partner["policy"]["effect"], "deny");
    assert!(partner["policy"]["proof"].is_object());
    let keys = &j["outcomes"][4];
    assert_eq!(keys["spans"][0]["detector"], "aws_access_key");
    assert_eq!(keys["spans"][0]["rule"], "org-baseline/secrets-redacted");
    assert_eq!(j["hash"].as_str().unwrap().len(), 64);
    assert!(j["tokens"].as_u64().unwrap() <= 600);
    let text = j["text"].as_str().unwrap();
    assert!(!text.contains("AKIASFUHIPUR8FUTQKVQ"), "{text}");
    assert!(!text.contains("Partner SDK"), "{text}");
}

#[test]
fn the_text_is_the_expected_bytes_and_stderr_gives_the_account() {
    let o = compile(&["--envelope", ENVELOPES]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let expected =
        std::fs::read_to_string(root().join("fixtures/compile/items.expected.txt")).unwrap();
    assert_eq!(stdout(&o), expected);
    let err = stderr(&o);
    assert!(err.starts_with("compiled 6 of 8 items: "), "{err}");
    assert!(err.contains(" of 600 tokens (o200k_base), hash "), "{err}");
}

#[test]
fn explain_prints_each_reason_with_rules_and_proofs() {
    let o = compile(&["--envelope", ENVELOPES, "--explain"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    for line in [
        "excluded   doc-partner (doc): policy: deny by default-deny\n",
        "  | context req-",
        "  | why not allowed:\n",
        "  policy: redact by org-baseline/secrets-redacted\n",
        "  redacted content bytes 26..46 (aws_access_key) by org-baseline/secrets-redacted\n",
        "summarised file-auth (file): replaced by its summary: needs ",
        "excluded   tool-old-log (tool_result): lower weight: ",
    ] {
        assert!(out.contains(line), "missing {line:?} in\n{out}");
    }
}

#[test]
fn without_envelopes_only_the_budget_decides() {
    let j = json(&compile(&["--json"]));
    let rows = outcomes(&j);
    assert_eq!(rows[3], row("doc-partner", "included", "fits"));
    assert_eq!(rows[4], row("doc-deploy-keys", "included", "fits"));
    assert!(j["outcomes"][3].get("policy").is_none());
}

#[test]
fn flags_override_the_settings_of_the_file() {
    let j = json(&compile(&[
        "--budget",
        "60",
        "--tokenizer",
        "bytes4",
        "--json",
    ]));
    assert_eq!(j["budget"], 60);
    assert_eq!(j["tokenizer"], "bytes4");
    assert!(j["tokens"].as_u64().unwrap() <= 60);
    let rows = outcomes(&j);
    assert_eq!(rows[0], row("msg-task", "included", "fits"));
    assert_eq!(rows[1], row("file-auth", "excluded", "lower_weight"));
}

/// `tollgate ARGS` exits 2 and its stderr contains every one of `messages`.
fn check_input_error(args: &[&str], messages: &[&str]) {
    let o = tollgate(args);
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    let err = stderr(&o);
    for m in messages {
        assert!(err.contains(m), "missing {m:?} in\n{err}");
    }
}

#[test]
fn bad_input_exits_2_with_what_where_and_how_to_fix() {
    check_input_error(
        &[
            "compile",
            "--items",
            "fixtures/compile/invalid/unknown-field.json",
        ],
        &[
            "error[E-items]: invalid items file: unknown field `budgt`, expected one of `items`, `settings`, `subject`",
            " --> fixtures/compile/invalid/unknown-field.json:5:",
            "  = help: an items file is ",
        ],
    );
    check_input_error(
        &[
            "compile",
            "--items",
            "fixtures/compile/invalid/duplicate-ids.json",
        ],
        &[
            "error: items 0 and 1 (counting from 0) share the id `notes`; ids must be unique\n",
            "  --> fixtures/compile/invalid/duplicate-ids.json\n",
        ],
    );
    check_input_error(
        &[
            "compile",
            "--items",
            "fixtures/compile/invalid/no-subject.json",
            "--envelope",
            ENVELOPES,
        ],
        &["error: `--envelope` needs the run the context is compiled for: add `\"subject\": {"],
    );
    check_input_error(
        &["compile", "--items", ITEMS, "--tokenizer", "gpt2"],
        &["error: unknown tokenizer `gpt2`; use `o200k_base`"],
    );
    check_input_error(
        &["compile", "--items", "fixtures/compile/missing.json"],
        &["error: cannot read `fixtures/compile/missing.json`"],
    );
    check_input_error(
        &[
            "compile",
            "--items",
            ITEMS,
            "--envelope",
            "fixtures/envelopes/invalid/unknown-key.yaml",
        ],
        &["error: the envelopes have 1 error"],
    );
}
