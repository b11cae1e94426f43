//! Loading (every diagnostic: code, message, position, help), facts, encoders and diffs.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use tollgate_engine::diag::LocatedDiagnostic;

use super::*;
use crate::request::*;

fn load_one(text: &str) -> Result<EnvelopeSet, EnvelopeErrors> {
    load_envelopes(&[("env.yaml", text)])
}

fn errors_of(sources: &[(&str, &str)]) -> Vec<LocatedDiagnostic> {
    match load_envelopes(sources) {
        Ok(_) => panic!("expected errors"),
        Err(e) => e.located(),
    }
}

/// Asserts the only error of one file: its code, message, `line:column` and a help fragment.
fn check_error(text: &str, code: &str, message: &str, at: (usize, usize), help: &str) {
    let errors = errors_of(&[("env.yaml", text)]);
    assert_eq!(errors.len(), 1, "{errors:#?}");
    let e = &errors[0];
    assert_eq!(e.code, code, "{e:#?}");
    assert_eq!(e.message, message, "{e:#?}");
    assert_eq!((e.line, e.column), at, "{e:#?}");
    let h = e.help.clone().unwrap_or_default();
    assert!(h.contains(help), "help `{h}` lacks `{help}`");
    assert_eq!(e.file, "env.yaml");
}

const MINIMAL: &str = "id: e\nversion: 1\n";

mod tool_levels;

#[test]
fn a_minimal_envelope_loads() {
    let set = load_one(MINIMAL).unwrap();
    assert_eq!(set.len(), 1);
    let e = set.get("e").unwrap();
    assert_eq!((e.id.as_str(), e.version), ("e", 1));
    assert!(e.tools.is_empty() && e.attach.is_empty());
}

#[test]
fn yaml_syntax_errors_have_a_position_and_help() {
    let errors = errors_of(&[("env.yaml", "id: e\nversion: 1\ntools: [a, b\n")]);
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].code, "E-envelope-syntax");
    assert!(errors[0].message.starts_with("invalid YAML: "));
    assert_eq!(errors[0].line, 4);
    assert!(
        errors[0]
            .help
            .as_deref()
            .unwrap()
            .contains("fix the YAML syntax")
    );
}

#[test]
fn unknown_keys_get_a_did_you_mean_and_no_missing_key_noise() {
    check_error(
        "id: e\nversion: 1\ntools:\n  - effect: allow\n    tool: [\"fs.*\"]\n",
        "E-envelope-unknown-key",
        "unknown key `tool` in a tool rule",
        (5, 5),
        "did you mean `tools`?",
    );
    check_error(
        "id: e\nversion: 1\nextend: [base]\n",
        "E-envelope-unknown-key",
        "unknown key `extend` in an envelope",
        (3, 1),
        "did you mean `extends`?",
    );
    check_error(
        "id: e\nversion: 1\ndata:\n  - {effect: see, max_level: internal}\n",
        "E-envelope-unknown-key",
        "unknown key `max_level` in a data rule",
        (4, 19),
        "a data rule has `id`, `effect`, `scopes`, `max_sensitivity`",
    );
}

#[test]
fn wrong_types_say_what_was_expected_and_found() {
    check_error(
        "id: e\nversion: three\n",
        "E-envelope-type",
        "`version` must be an integer, found text",
        (2, 10),
        "write a whole number: `version: 1`",
    );
    check_error(
        "id: e\nversion: \"2\"\n",
        "E-envelope-type",
        "`version` must be an integer, found text",
        (2, 10),
        "remove the quotes",
    );
    check_error(
        "id: e\nversion: 1\ntools: allow\n",
        "E-envelope-type",
        "`tools` must be a list, found text",
        (3, 8),
        "write a list",
    );
    check_error(
        "id: e\nversion: 1\nattach: {tasks: [12]}\n",
        "E-envelope-type",
        "an entry of `attach.tasks` must be text, found an integer",
        (3, 18),
        "quote it",
    );
    check_error(
        "- id: e\n",
        "E-envelope-type",
        "an envelope must be a mapping, found a list",
        (1, 1),
        "write an envelope as a mapping",
    );
}

#[test]
fn missing_keys_are_reported_at_their_mapping() {
    check_error(
        "version: 1\n",
        "E-envelope-missing-key",
        "an envelope needs `id`",
        (1, 1),
        "add `id: my-envelope`",
    );
    check_error(
        "id: e\nversion: 1\ntools:\n  - tools: [\"fs.*\"]\n",
        "E-envelope-missing-key",
        "a tool rule needs `effect`",
        (4, 5),
        "add `effect: allow`",
    );
}

#[test]
fn bad_globs_quote_the_pattern_and_explain_glob_syntax() {
    check_error(
        "id: e\nversion: 1\ntools:\n  - {effect: allow, tools: [\"fs.[read\"]}\n",
        "E-envelope-glob",
        "invalid glob pattern `fs.[read`: unclosed character class; missing ']'",
        (4, 29),
        "`**` across segments",
    );
    check_error(
        "id: e\nversion: 1\nmodels:\n  - {effect: allow, model: \"gpt-{4\"}\n",
        "E-envelope-glob",
        "invalid glob pattern `gpt-{4`: unclosed alternate group; missing '}' (maybe escape '{' with '[{]'?)",
        (4, 28),
        "`{a,b}` alternatives",
    );
}

#[test]
fn unknown_effects_and_levels_list_the_choices() {
    check_error(
        "id: e\nversion: 1\ntools:\n  - {effect: alow, tools: [x]}\n",
        "E-envelope-unknown-effect",
        "unknown tool rule effect `alow`",
        (4, 14),
        "did you mean `allow`? a tool rule effect is one of `allow`, `deny`, `require_approval`, `rate_limit`",
    );
    check_error(
        "id: e\nversion: 1\ndata:\n  - {effect: hide}\n",
        "E-envelope-unknown-effect",
        "unknown data rule effect `hide`",
        (4, 14),
        "one of `see`, `redact`, `block`",
    );
    check_error(
        "id: e\nversion: 1\ndata:\n  - {effect: see, max_sensitivity: top-secret}\n",
        "E-envelope-unknown-value",
        "unknown sensitivity level `top-secret`",
        (4, 36),
        "one of `public`, `internal`, `confidential`, `secret`",
    );
}

#[test]
fn a_rate_limit_needs_a_limit_and_only_it_may_have_one() {
    check_error(
        "id: e\nversion: 1\ntools:\n  - {id: api, effect: rate_limit, tools: [\"http.*\"]}\n",
        "E-envelope-missing-limit",
        "a `rate_limit` tool rule needs a `limit`",
        (4, 23),
        "add `limit: {count: 10, window_seconds: 60, per: run}`",
    );
    check_error(
        "id: e\nversion: 1\ntools:\n  - {effect: allow, tools: [x], limit: {count: 1, window_seconds: 1}}\n",
        "E-envelope-unused-limit",
        "`limit` only applies to `effect: rate_limit`, not `allow`",
        (4, 33),
        "remove `limit`",
    );
    check_error(
        "id: e\nversion: 1\ntools:\n  - {effect: rate_limit, tools: [x], limit: {count: 0, window_seconds: 60}}\n",
        "E-envelope-range",
        "`count` must be between 1 and 2147483647, found `0`",
        (4, 53),
        "count: 10",
    );
}

#[test]
fn argument_conditions_are_json_pointers() {
    check_error(
        "id: e\nversion: 1\ntools:\n  - {effect: allow, tools: [x], args: {path: \"src/**\"}}\n",
        "E-envelope-bad-pointer",
        "`path` is not a JSON pointer",
        (4, 40),
        "write `/path`",
    );
    let set = load_one(
        "id: e\nversion: 1\ntools:\n  - {effect: allow, tools: [x], args: {/opts/a~1b: \"*\"}}\n",
    )
    .unwrap();
    assert_eq!(
        set.get("e").unwrap().tools[0]
            .args
            .keys()
            .collect::<Vec<_>>(),
        ["/opts/a~1b"]
    );
}

#[test]
fn ids_may_not_hold_slashes_or_spaces() {
    check_error(
        "id: team/a\nversion: 1\n",
        "E-envelope-bad-id",
        "`id` `team/a` is not a valid id",
        (1, 5),
        "no `/`",
    );
}

#[test]
fn duplicate_envelope_ids_point_at_both_definitions_across_files() {
    let errors = errors_of(&[
        ("a.yaml", MINIMAL),
        ("b.yaml", "# again\nid: e\nversion: 2\n"),
    ]);
    assert_eq!(errors.len(), 1, "{errors:#?}");
    let e = &errors[0];
    assert_eq!(e.code, "E-envelope-duplicate-id");
    assert_eq!(e.message, "envelope id `e` is defined twice");
    assert_eq!((e.file.as_str(), e.line, e.column), ("b.yaml", 2, 5));
    assert_eq!((e.related[0].line, e.related[0].column), (1, 5));
    assert!(e.help.as_deref().unwrap().contains("raise its `version`"));
}

#[test]
fn duplicate_rule_ids_include_generated_ones() {
    check_error(
        "id: e\nversion: 1\ntools:\n  - {id: r, effect: allow, tools: [x]}\ndata:\n  - {id: r, effect: see}\n",
        "E-envelope-duplicate-rule",
        "rule id `r` is used twice in envelope `e`",
        (6, 10),
        "give each rule of an envelope its own `id`",
    );
    check_error(
        "id: e\nversion: 1\ntools:\n  - {effect: allow, tools: [x]}\n  - {id: tools.0, effect: deny, tools: [y]}\n",
        "E-envelope-duplicate-rule",
        "rule id `tools.0` is used twice in envelope `e`",
        (5, 10),
        "`ENVELOPE/RULE`",
    );
}

#[test]
fn unknown_parents_suggest_a_loaded_envelope() {
    let errors = errors_of(&[
        ("base.yaml", "id: org-baseline\nversion: 1\n"),
        (
            "child.yaml",
            "id: child\nversion: 1\nextends: [org-basline]\n",
        ),
    ]);
    assert_eq!(errors.len(), 1);
    let e = &errors[0];
    assert_eq!(e.code, "E-envelope-unknown-parent");
    assert_eq!(
        e.message,
        "envelope `child` extends unknown envelope `org-basline`"
    );
    assert_eq!((e.file.as_str(), e.line, e.column), ("child.yaml", 3, 11));
    assert!(
        e.help
            .as_deref()
            .unwrap()
            .starts_with("did you mean `org-baseline`?")
    );
}

#[test]
fn a_parent_that_fails_its_own_checks_is_not_also_unknown() {
    let errors = errors_of(&[
        ("base.yaml", "id: base\nversion: zero\n"),
        ("child.yaml", "id: child\nversion: 1\nextends: [base]\n"),
    ]);
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert_eq!(errors[0].code, "E-envelope-type");
}

#[test]
fn cycles_across_files_name_every_envelope_once() {
    let errors = errors_of(&[
        ("a.yaml", "id: a\nversion: 1\nextends: [b]\n"),
        ("b.yaml", "id: b\nversion: 1\nextends: [c]\n"),
        ("c.yaml", "id: c\nversion: 1\nextends: [a]\n"),
        ("d.yaml", "id: d\nversion: 1\nextends: [a]\n"),
    ]);
    assert_eq!(errors.len(), 1, "{errors:#?}");
    let e = &errors[0];
    assert_eq!(e.code, "E-envelope-cycle");
    assert_eq!(
        e.message,
        "envelopes `a`, `b` and `c` extend each other in a cycle"
    );
    assert_eq!((e.file.as_str(), e.line, e.column), ("a.yaml", 3, 11));
    assert_eq!(e.related.len(), 2);
    assert!(e.help.as_deref().unwrap().contains("a -> b -> c -> a"));
    let rendered = load_envelopes(&[
        ("a.yaml", "id: a\nversion: 1\nextends: [b]\n"),
        ("b.yaml", "id: b\nversion: 1\nextends: [a]\n"),
    ])
    .unwrap_err()
    .render();
    assert!(rendered.contains(" --> a.yaml:3:11\n"), "{rendered}");
    assert!(rendered.contains(" ::: b.yaml:3:11\n"), "{rendered}");
    assert!(rendered.contains("`b` extends `a`"), "{rendered}");
}

#[test]
fn an_envelope_extending_itself_is_a_cycle_of_one() {
    check_error(
        "id: e\nversion: 1\nextends: [e]\n",
        "E-envelope-cycle",
        "envelope `e` extends itself",
        (3, 11),
        "e -> e",
    );
}

#[test]
fn an_empty_file_holds_no_envelope() {
    check_error(
        "# nothing here\n",
        "E-envelope-empty",
        "`env.yaml` holds no envelope",
        (1, 1),
        "write an envelope",
    );
}

#[test]
fn every_problem_of_every_file_is_reported_and_nothing_loads() {
    let errors = errors_of(&[
        ("good.yaml", MINIMAL),
        (
            "bad.yaml",
            "id: x\nversion: 0\ntools:\n  - {effect: nope, tools: []}\n",
        ),
    ]);
    let codes: Vec<&str> = errors.iter().map(|e| e.code).collect();
    assert_eq!(
        codes,
        [
            "E-envelope-range",
            "E-envelope-unknown-effect",
            "E-envelope-empty"
        ]
    );
    assert!(errors.iter().all(|e| e.file == "bad.yaml"));
}

#[test]
fn positions_count_from_each_file_even_after_files_without_a_final_newline() {
    let errors = errors_of(&[
        ("a.yaml", ""),
        ("b.yaml", "id: a\nversion: 1"),
        ("c.yaml", "id: c\nversion: x\n"),
    ]);
    let last = errors.last().unwrap();
    assert_eq!(
        (last.file.as_str(), last.line, last.column),
        ("c.yaml", 2, 10)
    );
}

#[test]
fn json_and_several_yaml_documents_load_too() {
    let set = load_envelopes(&[
        (
            "a.json",
            r#"{"id": "a", "version": 1, "tools": [{"effect": "deny", "tools": ["x"]}]}"#,
        ),
        (
            "b.yaml",
            "id: b\nversion: 1\n---\nid: c\nversion: 1\nextends: [a, b]\n",
        ),
    ])
    .unwrap();
    let ids: Vec<&str> = set.envelopes().iter().map(|e| e.id.as_str()).collect();
    assert_eq!(ids, ["a", "b", "c"]);
}

#[test]
fn keys_left_empty_are_absent() {
    let set = load_one("id: e\nversion: 1\ntools:\nextensions:\n").unwrap();
    assert!(set.get("e").unwrap().tools.is_empty());
}

fn fixture_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fixtures/envelopes")
}

fn fixture_sources() -> Vec<(String, String)> {
    ["org-baseline.yaml", "coding-agent.yaml"]
        .iter()
        .map(|f| {
            (
                (*f).to_string(),
                std::fs::read_to_string(fixture_dir().join(f)).unwrap(),
            )
        })
        .collect()
}

#[test]
fn the_loader_reads_fixtures_exactly_as_serde_does() {
    let set = load_envelopes(&fixture_sources()).unwrap();
    for (_, text) in fixture_sources() {
        let direct: PolicyEnvelope = serde_yaml::from_str(&text).unwrap();
        assert_eq!(set.get(&direct.id), Some(&direct));
    }
    let v3 = std::fs::read_to_string(fixture_dir().join("diff/coding-agent.v3.yaml")).unwrap();
    let direct: PolicyEnvelope = serde_yaml::from_str(&v3).unwrap();
    let mut sources = fixture_sources();
    sources[1].1 = v3;
    assert_eq!(
        load_envelopes(&sources).unwrap().get("coding-agent"),
        Some(&direct)
    );
}

#[test]
fn every_invalid_fixture_fails_to_load() {
    let dir = fixture_dir().join("invalid");
    let mut codes = Vec::new();
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    names.sort();
    for path in names {
        let text = std::fs::read_to_string(&path).unwrap();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let err = load_envelopes(&[(name.clone(), text)]).unwrap_err();
        codes.push((name, err.diagnostics[0].code));
    }
    assert_eq!(
        codes,
        [
            ("bad-glob.yaml".to_string(), "E-envelope-glob"),
            ("cycle.yaml".to_string(), "E-envelope-cycle"),
            ("unknown-key.yaml".to_string(), "E-envelope-unknown-key"),
            (
                "unknown-parent.yaml".to_string(),
                "E-envelope-unknown-parent"
            ),
        ]
    );
}

fn fact_lines(facts: &tollgate_engine::FactSet) -> Vec<String> {
    let mut lines: Vec<String> = facts
        .iter()
        .map(|(f, origin)| format!("{f}  # {origin}"))
        .collect();
    lines.sort();
    lines
}

#[test]
fn envelopes_compile_to_vocabulary_facts_with_their_origin() {
    let set = load_one(
        r#"
id: agent
version: 3
extends: [base]
attach: {agents: [coder], tasks: [T-1]}
tools:
  - {id: read, effect: allow, tools: ["fs.read*", fs.list]}
  - {effect: require_approval, tools: [fs.write], args: {/path: "src/**"}}
  - {id: api, effect: rate_limit, tools: ["http.*"], limit: {count: 5, window_seconds: 60, per: agent}}
data:
  - {id: secrets, effect: redact, labels: [secret], kinds: [doc]}
  - {effect: see}
models:
  - {effect: allow, provider: openai, model: gpt-4.1-mini}
memory:
  - {effect: deny, classes: [preference]}
approvals:
  - {tools: ["shell.*"], approvers: [lead, oncall]}
extensions:
  ticket: JIRA-1
  review: {min: 2, teams: [a, b]}
  flag: true
---
id: base
version: 1
"#,
    )
    .unwrap();
    let expected = [
        r#"approval_rule("agent", "agent/approvals.0", "shell.*", "lead,oncall", 3600)  # envelope:agent@3"#,
        r#"data_rule("agent", "agent/data.1", "see", "**", "secret")  # envelope:agent@3"#,
        r#"data_rule("agent", "agent/secrets", "redact", "**", "secret")  # envelope:agent@3"#,
        r#"data_rule_kind("agent", "agent/secrets", "doc")  # envelope:agent@3"#,
        r#"data_rule_label("agent", "agent/secrets", "secret")  # envelope:agent@3"#,
        r#"envelope("agent", 3)  # envelope:agent@3"#,
        r#"envelope("base", 1)  # envelope:base@1"#,
        r#"envelope_attached("agent", "agent", "coder")  # envelope:agent@3"#,
        r#"envelope_attached("agent", "task", "T-1")  # envelope:agent@3"#,
        r#"envelope_extends("agent", "base")  # envelope:agent@3"#,
        r#"envelope_extension("agent", "flag", "true")  # envelope:agent@3"#,
        r#"envelope_extension("agent", "review.min", "2")  # envelope:agent@3"#,
        r#"envelope_extension("agent", "review.teams", "a")  # envelope:agent@3"#,
        r#"envelope_extension("agent", "review.teams", "b")  # envelope:agent@3"#,
        r#"envelope_extension("agent", "ticket", "JIRA-1")  # envelope:agent@3"#,
        r#"memory_rule("agent", "agent/memory.0", "deny", "preference")  # envelope:agent@3"#,
        r#"model_rule("agent", "agent/models.0", "allow", "openai", "gpt-4.1-mini", "*")  # envelope:agent@3"#,
        r#"tool_rule("agent", "agent/api", "rate_limit", "http.*")  # envelope:agent@3"#,
        r#"tool_rule("agent", "agent/read", "allow", "fs.list")  # envelope:agent@3"#,
        r#"tool_rule("agent", "agent/read", "allow", "fs.read*")  # envelope:agent@3"#,
        r#"tool_rule("agent", "agent/tools.1", "require_approval", "fs.write")  # envelope:agent@3"#,
        r#"tool_rule_arg("agent", "agent/tools.1", "/path", "src/**")  # envelope:agent@3"#,
        r#"tool_rule_limit("agent", "agent/api", 5, 60, "agent")  # envelope:agent@3"#,
    ];
    assert_eq!(fact_lines(&set.facts()), expected);
}

#[test]
fn envelope_facts_fit_the_vocabulary() {
    let vocabulary =
        tollgate_engine::Source::new("vocabulary.dl", include_str!("../../packs/vocabulary.dl"));
    let program = tollgate_engine::Program::compile(&vocabulary).unwrap();
    let set = load_envelopes(&fixture_sources()).unwrap();
    let mut facts = set.facts();
    let subject = RunSubject {
        run: "r".into(),
        agent: "coder".into(),
        task: "t".into(),
        scope: "org:a/repo:b".into(),
        clearance: Level::Internal,
    };
    facts.extend_from(&subject_facts(&[subject], &[]));
    facts.extend_from(&tool_request_facts(
        "q",
        "r",
        &ToolCall {
            name: "fs.read".into(),
            args: serde_json::json!({"path": "a", "n": 1}),
            usage: [("coding-agent/web-budget".to_string(), 3)].into(),
        },
    ));
    program
        .evaluate(&facts, &tollgate_engine::Limits::default())
        .unwrap();
}

#[test]
fn the_set_version_ignores_file_order_and_layout() {
    let a = load_envelopes(&fixture_sources()).unwrap();
    let mut reversed = fixture_sources();
    reversed.reverse();
    let b = load_envelopes(&reversed).unwrap();
    assert_eq!(a.version(), b.version());
    let json: Vec<(String, String)> = a
        .envelopes()
        .iter()
        .map(|e| (e.id.clone(), serde_json::to_string(e).unwrap()))
        .collect();
    assert_eq!(load_envelopes(&json).unwrap().version(), a.version());
    assert_eq!(
        EnvelopeSet::from_envelopes(a.envelopes())
            .unwrap()
            .version(),
        a.version()
    );
    let changed = load_one("id: e\nversion: 2\n").unwrap();
    assert_ne!(changed.version(), load_one(MINIMAL).unwrap().version());
}

#[test]
fn arguments_flatten_to_json_pointers_and_scalar_text() {
    let args = serde_json::json!({
        "path": "src/main.rs",
        "opts": {"force": true, "depth": 2, "none": null},
        "files": ["a", "b"],
        "a/b~c": "x",
        "empty": {}
    });
    let mut got = flatten_arguments(&args);
    got.sort();
    let want: Vec<(String, String)> = [
        ("/a~1b~0c", "x"),
        ("/files/0", "a"),
        ("/files/1", "b"),
        ("/opts/depth", "2"),
        ("/opts/force", "true"),
        ("/opts/none", "null"),
        ("/path", "src/main.rs"),
    ]
    .iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect();
    assert_eq!(got, want);
}

#[test]
fn scope_parents_cover_every_prefix() {
    assert_eq!(
        scope_parents("org:acme/repo:api/task:T-1"),
        [
            (
                "org:acme/repo:api/task:T-1".to_string(),
                "org:acme/repo:api".to_string()
            ),
            ("org:acme/repo:api".to_string(), "org:acme".to_string()),
        ]
    );
    assert!(scope_parents("org:acme").is_empty());
}

#[test]
fn subject_and_request_facts() {
    let runs = [RunSubject {
        run: "r1".into(),
        agent: "coder".into(),
        task: "T-1".into(),
        scope: "org:a/repo:b".into(),
        clearance: Level::Confidential,
    }];
    let memories = [MemoryRecord {
        id: "m1".into(),
        class: "fact".into(),
        scope: "org:a/repo:c".into(),
        sensitivity: Level::Internal,
        status: "approved".into(),
        expires_at: 0,
        pinned: true,
    }];
    assert_eq!(
        fact_lines(&subject_facts(&runs, &memories)),
        [
            r#"clearance("r1", "confidential")  # subject"#,
            r#"memory("m1", "fact", "org:a/repo:c", "internal", "approved", 0, 1)  # subject"#,
            r#"run("r1", "coder", "T-1", "org:a/repo:b")  # subject"#,
            r#"scope_parent("org:a/repo:b", "org:a")  # subject"#,
            r#"scope_parent("org:a/repo:c", "org:a")  # subject"#,
        ]
    );
    let item = ContextItem {
        id: "i".into(),
        kind: "doc".into(),
        scope: "org:a/x:y".into(),
        sensitivity: Level::Secret,
        labels: vec!["secret".into()],
    };
    assert_eq!(
        fact_lines(&context_request_facts("q", "r1", &item)),
        [
            r#"context_label("q", "secret")  # request"#,
            r#"context_request("q", "r1", "i", "doc", "org:a/x:y", "secret")  # request"#,
            r#"scope_parent("org:a/x:y", "org:a")  # request"#,
        ]
    );
    let call = ModelCall {
        provider: "openai".into(),
        model: "m".into(),
        reasoning: String::new(),
    };
    assert_eq!(
        fact_lines(&model_request_facts("q", "r1", &call)),
        [r#"model_request("q", "r1", "openai", "m", "")  # request"#]
    );
    assert_eq!(
        fact_lines(&memory_request_facts("q", "r1")),
        [r#"memory_request("q", "r1")  # request"#]
    );
    let handoff = Handoff {
        id: "h".into(),
        from_run: "r1".into(),
        to_run: "r2".into(),
        contract: HandoffContract {
            id: "c".into(),
            requires: vec!["patch".into()],
            constraints: vec![Constraint {
                name: "max_level".into(),
                value: "internal".into(),
            }],
        },
        goal: Some("review".into()),
        evidence: vec![Evidence {
            item: "e1".into(),
            scope: "org:a/repo:b".into(),
            sensitivity: Level::Public,
        }],
        fields: vec!["goal".into()],
        parties: Some(Delegation {
            producer: "r1#coder".into(),
            consumer: "r2#reviewer".into(),
        }),
        delegations: vec![Delegation {
            producer: "r2#reviewer".into(),
            consumer: "r3#tester".into(),
        }],
        delivery: Some(Delivery {
            outputs: vec!["patch".into()],
            actions: vec!["fs.read_file".into()],
        }),
        ..Handoff::default()
    };
    assert_eq!(
        fact_lines(&handoff_facts(&handoff)),
        [
            r#"contract_constraint("c", "max_level", "internal")  # request"#,
            r#"contract_requires("c", "patch")  # request"#,
            r#"delegation("r2#reviewer", "r3#tester")  # request"#,
            r#"handoff("h", "r1", "r2", "c")  # request"#,
            r#"handoff_action("h", "fs.read_file")  # request"#,
            r#"handoff_delivery("h")  # request"#,
            r#"handoff_evidence("h", "e1", "org:a/repo:b", "public")  # request"#,
            r#"handoff_field("h", "goal")  # request"#,
            r#"handoff_goal("h", "review")  # request"#,
            r#"handoff_output("h", "patch")  # request"#,
            r#"handoff_parties("h", "r1#coder", "r2#reviewer")  # request"#,
            r#"handoff_template("h", "lightweight")  # request"#,
            r#"scope_parent("org:a/repo:b", "org:a")  # request"#,
        ]
    );
}

#[test]
fn diffs_list_added_removed_and_modified_rules() {
    let old = load_one(
        "id: e\nversion: 1\ntools:\n  - {id: a, effect: allow, tools: [x]}\n  - {id: b, effect: deny, tools: [y]}\n",
    )
    .unwrap();
    let new = load_one(
        "id: e\nversion: 2\nattach: {agents: [c]}\ntools:\n  - {id: a, effect: require_approval, tools: [x]}\nmodels:\n  - {effect: allow}\n---\nid: f\nversion: 1\n",
    )
    .unwrap();
    let diff = diff_envelopes(&old, &new);
    assert_eq!(diff.envelopes.len(), 2);
    let e = &diff.envelopes[0];
    assert_eq!((e.id.as_str(), e.change), ("e", Change::Modified));
    assert_eq!((e.old_version, e.new_version), (Some(1), Some(2)));
    assert_eq!(e.fields, ["attach"]);
    let rules: Vec<(&str, Change)> = e
        .rules
        .iter()
        .map(|r| (r.rule.as_str(), r.change))
        .collect();
    assert_eq!(
        rules,
        [
            ("e/a", Change::Modified),
            ("e/b", Change::Removed),
            ("e/models.0", Change::Added)
        ]
    );
    assert!(!e.version_not_raised);
    assert_eq!(diff.envelopes[1].change, Change::Added);
    assert!(diff_envelopes(&old, &old).is_empty());
    let same_version = load_one("id: e\nversion: 1\n").unwrap();
    assert!(diff_envelopes(&old, &same_version).envelopes[0].version_not_raised);
}

#[test]
fn the_module_doc_example_loads() {
    let docs: String = include_str!("../envelope.rs")
        .lines()
        .filter_map(|l| l.strip_prefix("//!"))
        .map(|l| format!("{}\n", l.strip_prefix(' ').unwrap_or(l)))
        .collect();
    let start = docs.find("```yaml\n").unwrap() + "```yaml\n".len();
    let end = start + docs[start..].find("```").unwrap();
    let set = load_envelopes(&[
        ("doc.yaml", &docs[start..end]),
        ("base.yaml", "id: org-baseline\nversion: 1\n"),
    ])
    .unwrap();
    assert_eq!(set.get("coding-agent").unwrap().rules().len(), 9);
}

#[test]
fn odd_yaml_is_an_error_never_a_panic() {
    let inputs = [
        "---\n...\n",
        "? [a]: b\n",
        "id: &a x\nversion: 1\nextends: [*a]\n",
        "a: &x [*x]\n",
        "id: !!str e\nversion: 1\n",
        "id: !custom e\nversion: 1\n",
        ": x\n",
        "[",
        "]",
        "{",
        "a: b: c\n",
        "\t- a\n",
        "\u{feff}id: e\nversion: 1\n",
        "id: e\nversion: 99999999999999999999\n",
        "id: e\nversion: 1\ntools:\n  - \n",
        "id: e\nversion: 1\nextensions: [a]\n",
        "id: e\nversion: 1\nattach: {agents: [\"\"]}\n",
        "\"just text\"\n",
        "42",
    ];
    for text in inputs {
        match load_one(text) {
            Ok(set) => assert!(!set.is_empty(), "{text:?}"),
            Err(e) => assert!(!e.render().is_empty(), "{text:?}"),
        }
    }
}

#[test]
fn taking_out_a_rule_keeps_every_other_rules_id() {
    let set = load_one(
        "id: e\nversion: 1\ntools:\n  - {effect: allow, tools: [a]}\n  - {effect: deny, tools: [b]}\n  - {id: named, effect: allow, tools: [c]}\n  - {effect: allow, tools: [d]}\n",
    )
    .unwrap();
    assert_eq!(
        set.rule_ids(),
        ["e/tools.0", "e/tools.1", "e/named", "e/tools.3"]
    );
    let without = set.without_rule("e/tools.1").unwrap();
    assert_eq!(without.rule_ids(), ["e/tools.0", "e/named", "e/tools.3"]);
    assert_ne!(without.version(), set.version());
    let without = without.without_rule("e/named").unwrap();
    assert_eq!(without.rule_ids(), ["e/tools.0", "e/tools.3"]);
    assert!(set.without_rule("e/nothing").is_none());
    assert!(set.without_rule("other/tools.0").is_none());
    assert!(set.without_rule("no-slash").is_none());
}

#[test]
fn only_named_args_is_true_or_false() {
    check_error(
        "id: e\nversion: 1\ntools:\n  - {effect: allow, tools: [x], only_named_args: \"true\"}\n",
        "E-envelope-type",
        "`only_named_args` must be true or false, found text",
        (4, 50),
        "remove the quotes: `only_named_args: true`",
    );
    check_error(
        "id: e\nversion: 1\ntools:\n  - {effect: allow, tools: [x], only_named_args: 1}\n",
        "E-envelope-type",
        "`only_named_args` must be true or false, found an integer",
        (4, 50),
        "write `only_named_args: true`",
    );
    let set = load_one(
        "id: e\nversion: 1\ntools:\n  - {effect: allow, tools: [x], only_named_args: true}\n",
    )
    .unwrap();
    assert!(set.get("e").unwrap().tools[0].only_named_args);
    // On a deny, a call would escape the rule by carrying one more argument.
    check_error(
        "id: e\nversion: 1\ntools:\n  - {effect: deny, tools: [x], only_named_args: true}\n",
        "E-envelope-closed-denial",
        "`only_named_args` narrows `allow` and `require_approval` rules, not `deny`",
        (4, 49),
        "remove `only_named_args`",
    );
}

/// Bug (issue 34, the MCP configuration's `evn:`): two neighbouring letters swapped counted as
/// two edits, so a short key got no suggestion.
#[test]
fn a_key_with_two_letters_swapped_is_suggested() {
    assert_eq!(
        super::closest("evn", &["command", "env", "cwd"]),
        Some("env")
    );
    assert_eq!(super::closest("tools", &["tools", "data"]), Some("tools"));
    assert_eq!(super::closest("dtaa", &["tools", "data"]), Some("data"));
    assert_eq!(super::closest("xyz", &["tools", "data"]), None);
}
