//! The `tool_levels:` section: loading, every diagnostic, facts and diffs.

use super::*;

#[test]
fn tool_levels_load_with_generated_ids_and_compile_to_tool_level_facts() {
    let set = load_one(
        "id: e\nversion: 1\ntool_levels:\n  - {id: prod, tools: [\"deploy.prod*\", \"db.prod.*\"], level: secret, description: Production.}\n  - {tools: [fs.read], level: internal}\n",
    )
    .unwrap();
    let e = set.get("e").unwrap();
    assert_eq!(e.tool_levels.len(), 2);
    assert_eq!(e.tool_levels[0].level, Level::Secret);
    assert_eq!(e.tool_levels[0].description.as_deref(), Some("Production."));
    assert!(e.tools.is_empty());
    let rules: Vec<(Section, String)> = e.rules().into_iter().map(|(s, id, _)| (s, id)).collect();
    assert_eq!(
        rules,
        [
            (Section::ToolLevels, "prod".to_string()),
            (Section::ToolLevels, "tool_levels.1".to_string()),
        ]
    );
    assert_eq!(
        fact_lines(&set.facts()),
        [
            r#"envelope("e", 1)  # envelope:e@1"#,
            r#"tool_level("e", "e/prod", "db.prod.*", "secret")  # envelope:e@1"#,
            r#"tool_level("e", "e/prod", "deploy.prod*", "secret")  # envelope:e@1"#,
            r#"tool_level("e", "e/tool_levels.1", "fs.read", "internal")  # envelope:e@1"#,
        ]
    );
    // Read back as serde reads it, and an envelope without the section hashes as before.
    let direct: PolicyEnvelope = serde_json::from_value(serde_json::to_value(e).unwrap()).unwrap();
    assert_eq!(&direct, e);
    let json = serde_json::to_value(load_one(MINIMAL).unwrap().get("e").unwrap()).unwrap();
    assert!(json.get("tool_levels").is_none(), "{json}");
}

#[test]
fn tool_level_problems_have_a_position_and_help() {
    check_error(
        "id: e\nversion: 1\ntool_level:\n  - {tools: [x], level: secret}\n",
        "E-envelope-unknown-key",
        "unknown key `tool_level` in an envelope",
        (3, 1),
        "did you mean `tool_levels`?",
    );
    // The suggested key is not also reported missing.
    check_error(
        "id: e\nversion: 1\ntool_levels:\n  - {tools: [x], levels: secret}\n",
        "E-envelope-unknown-key",
        "unknown key `levels` in a tool level rule",
        (4, 18),
        "did you mean `level`? a tool level rule has `id`, `tools`, `level`, `description`",
    );
    check_error(
        "id: e\nversion: 1\ntool_levels:\n  - {tools: [x], effect: deny, level: secret}\n",
        "E-envelope-unknown-key",
        "unknown key `effect` in a tool level rule",
        (4, 18),
        "a tool level rule has `id`, `tools`, `level`, `description`",
    );
    check_error(
        "id: e\nversion: 1\ntool_levels:\n  - {tools: [\"fs.[read\"], level: secret}\n",
        "E-envelope-glob",
        "invalid glob pattern `fs.[read`: unclosed character class; missing ']'",
        (4, 14),
        "`**` across segments",
    );
    check_error(
        "id: e\nversion: 1\ntool_levels:\n  - {tools: [x], level: secert}\n",
        "E-envelope-unknown-value",
        "unknown sensitivity level `secert`",
        (4, 25),
        "did you mean `secret`? a sensitivity level is one of `public`, `internal`, `confidential`, `secret`",
    );
    check_error(
        "id: e\nversion: 1\ntool_levels:\n  - {tools: [x], level: 3}\n",
        "E-envelope-type",
        "the sensitivity level must be text, found an integer",
        (4, 25),
        "quote it",
    );
    check_error(
        "id: e\nversion: 1\ntool_levels:\n  - {tools: [x]}\n",
        "E-envelope-missing-key",
        "a tool level rule needs `level`",
        (4, 5),
        "add `level: secret`",
    );
    check_error(
        "id: e\nversion: 1\ntool_levels:\n  - {level: secret}\n",
        "E-envelope-missing-key",
        "a tool level rule needs `tools`",
        (4, 5),
        "add `tools: [\"secrets.*\"]`",
    );
    check_error(
        "id: e\nversion: 1\ntool_levels:\n  - {tools: [], level: secret}\n",
        "E-envelope-empty",
        "`tools` must not be empty",
        (4, 13),
        "a rule with no patterns matches nothing",
    );
    check_error(
        "id: e\nversion: 1\ntool_levels: {tools: [x], level: secret}\n",
        "E-envelope-type",
        "`tool_levels` must be a list, found a mapping",
        (3, 14),
        "write a list, e.g. `- {id: secret-store, tools: [\"secrets.*\"], level: secret}`",
    );
    check_error(
        "id: e\nversion: 1\ntool_levels:\n  - {id: \"a b\", tools: [x], level: secret}\n",
        "E-envelope-bad-id",
        "a rule `id` `a b` is not a valid id",
        (4, 10),
        "no spaces",
    );
}

#[test]
fn tool_level_ids_clash_with_every_other_rule_id_of_the_envelope() {
    check_error(
        "id: e\nversion: 1\ntools:\n  - {id: r, effect: allow, tools: [x]}\ntool_levels:\n  - {id: r, tools: [x], level: secret}\n",
        "E-envelope-duplicate-rule",
        "rule id `r` is used twice in envelope `e`",
        (6, 10),
        "give each rule of an envelope its own `id`",
    );
    check_error(
        "id: e\nversion: 1\ntool_levels:\n  - {tools: [x], level: secret}\n  - {id: tool_levels.0, tools: [y], level: public}\n",
        "E-envelope-duplicate-rule",
        "rule id `tool_levels.0` is used twice in envelope `e`",
        (5, 10),
        "`ENVELOPE/RULE`",
    );
}

#[test]
fn a_bad_tool_level_loads_nothing_and_every_problem_is_reported() {
    let errors = errors_of(&[
        (
            "good.yaml",
            "id: good\nversion: 1\ntool_levels:\n  - {tools: [x], level: secret}\n",
        ),
        (
            "bad.yaml",
            "id: bad\nversion: 1\ntool_levels:\n  - {tools: [x], level: top}\n  - {tools: [\"y[\"], level: public}\n",
        ),
    ]);
    let found: Vec<(&str, &str, usize)> = errors
        .iter()
        .map(|e| (e.file.as_str(), e.code, e.line))
        .collect();
    assert_eq!(
        found,
        [
            ("bad.yaml", "E-envelope-unknown-value", 4),
            ("bad.yaml", "E-envelope-glob", 5),
        ]
    );
}

#[test]
fn diffs_list_tool_level_rules_in_their_section() {
    let old = load_one(
        "id: e\nversion: 1\ntools:\n  - {id: a, effect: allow, tools: [x]}\n  - {id: b, effect: deny, tools: [y]}\n",
    )
    .unwrap();
    let levelled = load_one(
        "id: e\nversion: 2\ntools:\n  - {id: a, effect: allow, tools: [x]}\n  - {id: b, effect: deny, tools: [y]}\ntool_levels:\n  - {id: prod, tools: [\"prod.*\"], level: secret}\n  - {tools: [x], level: internal}\n",
    )
    .unwrap();
    let diff = diff_envelopes(&old, &levelled);
    let rules: Vec<(Section, &str, Change)> = diff.envelopes[0]
        .rules
        .iter()
        .map(|r| (r.section, r.rule.as_str(), r.change))
        .collect();
    assert_eq!(
        rules,
        [
            (Section::ToolLevels, "e/prod", Change::Added),
            (Section::ToolLevels, "e/tool_levels.1", Change::Added),
        ]
    );
    let json = serde_json::to_value(&diff).unwrap();
    assert_eq!(json["envelopes"][0]["rules"][0]["section"], "tool_levels");
    assert_eq!(json["envelopes"][0]["rules"][0]["new"]["level"], "secret");
    let raised = load_one(
        "id: e\nversion: 3\ntools:\n  - {id: a, effect: allow, tools: [x]}\n  - {id: b, effect: deny, tools: [y]}\ntool_levels:\n  - {id: prod, tools: [\"prod.*\"], level: confidential}\n  - {tools: [x], level: internal}\n",
    )
    .unwrap();
    let diff = diff_envelopes(&levelled, &raised);
    assert_eq!(diff.envelopes[0].rules.len(), 1);
    assert_eq!(
        (
            diff.envelopes[0].rules[0].rule.as_str(),
            diff.envelopes[0].rules[0].change
        ),
        ("e/prod", Change::Modified)
    );
}
