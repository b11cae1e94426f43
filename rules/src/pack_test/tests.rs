#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;

fn run(text: &str) -> Result<FileReport, Vec<TestFileError>> {
    PackTester::default().run_source("t.test.yaml", text, Path::new("."))
}

const BASE: &str = r#"
given:
  - run("r1", "coder", "T-1", "org:acme/repo:api")
  - envelope_attached("base", "agent", "coder")
  - tool_rule("base", "base/fs", "allow", "fs.*")
  - tool_rule("base", "base/no-write", "deny", "fs.write")
  - tool_request("q1", "r1", "fs.write")
  - tool_request("q2", "r1", "fs.read")
cases:
"#;

#[test]
fn a_passing_case_checks_facts_absences_and_decisions() {
    let text = format!(
        "{BASE}{}",
        r#"  - name: deny overrides allow
    expect:
      - tool_decision("q1", "deny", "base/no-write")
    expect_absent:
      - tool_decision("q1", "allow", "base/fs")
    decisions:
      tool: { q1: deny, q2: allow }
"#
    );
    let report = run(&text).unwrap();
    assert_eq!(report.cases.len(), 1);
    assert!(report.cases[0].passed, "{:?}", report.cases[0].failures);
    assert_eq!(report.cases[0].line, Some(10));
}

#[test]
fn a_missing_fact_fails_with_the_why_not() {
    let text = format!(
        "{BASE}{}",
        r#"  - name: wrong expectation
    expect:
      - tool_decision("q1", "allow", "base/fs")
"#
    );
    let report = run(&text).unwrap();
    let case = &report.cases[0];
    assert!(!case.passed);
    let f = &case.failures[0];
    assert_eq!(f.kind, FailureKind::Missing);
    assert_eq!(
        f.message,
        r#"missing `tool_decision("q1", "allow", "base/fs")`"#
    );
    let why = f.explanation.as_deref().unwrap();
    assert!(why.contains("rule tool.allow"), "{why}");
    assert!(why.contains("tool_denied"), "{why}");
}

#[test]
fn an_unexpected_fact_and_a_wrong_decision_fail_with_proofs() {
    let text = format!(
        "{BASE}{}",
        r#"  - name: wrong absence
    expect_absent:
      - tool_decision("q2", "allow", "base/fs")
    decisions:
      tool: { q1: allow }
"#
    );
    let report = run(&text).unwrap();
    let failures = &report.cases[0].failures;
    assert_eq!(failures.len(), 2);
    assert_eq!(failures[0].kind, FailureKind::Unexpected);
    assert!(
        failures[0]
            .explanation
            .as_deref()
            .unwrap()
            .contains("[rule tool.allow")
    );
    assert_eq!(failures[1].kind, FailureKind::WrongDecision);
    assert_eq!(
        failures[1].message,
        "tool_decision `q1`: expected `allow`, got `deny` by `base/no-write`"
    );
    let text = report_text(report);
    assert!(
        text.contains("FAIL t.test.yaml:10 `wrong absence`: unexpected"),
        "{text}"
    );
    assert!(text.ends_with("0 passed, 1 failed\n"), "{text}");
}

fn report_text(file: FileReport) -> String {
    TestReport {
        passed: 0,
        failed: 1,
        files: vec![file],
        errors: vec![],
    }
    .to_text()
}

#[test]
fn unknown_relations_wrong_arity_and_wrong_types_are_located_input_errors() {
    let text = "- name: bad\n  given:\n    - runn(\"r1\")\n    - now(\"noon\")\n  expect:\n    - within(\"a\")\n";
    let errors = run(text).unwrap_err();
    assert_eq!(errors.len(), 3, "{errors:?}");
    assert_eq!((errors[0].line, errors[0].column), (Some(3), Some(7)));
    assert!(errors[0].message.contains("unknown relation `runn`"));
    assert_eq!(errors[1].line, Some(4));
    assert!(
        errors[1]
            .message
            .contains("column `t` of `now` is `number`"),
        "{errors:?}"
    );
    assert!(errors[2].message.contains("`within` has 2 columns"));
    assert!(
        errors[2]
            .help
            .as_deref()
            .unwrap()
            .contains("within(s: Scope, ancestor: Scope)")
    );
}

#[test]
fn an_effect_of_another_kind_is_an_input_error() {
    let errors = run("- name: bad\n  decisions:\n    model: { q1: see }\n").unwrap_err();
    assert_eq!(errors[0].line, Some(3));
    assert!(
        errors[0]
            .message
            .contains("`see` is not an effect of a model_decision")
    );
}

#[test]
fn a_user_program_is_read_with_the_vocabulary_and_its_errors_name_its_file() {
    let dir = std::env::temp_dir().join(format!("tollgate-pack-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("mine.dl"),
        "// @id mine.allow-all\ntool_decision(q, \"allow\", \"mine\") :- tool_request(q, _, _).\n",
    )
    .unwrap();
    std::fs::write(dir.join("broken.dl"), "tool_decision(q) :- nothing(q).\n").unwrap();
    let mut tester = PackTester::default();
    let ok = tester
        .run_source(
            "t.test.yaml",
            "- name: mine\n  program: mine.dl\n  given: ['tool_request(\"q\", \"r\", \"x\")']\n  decisions: { tool: { q: allow } }\n",
            &dir,
        )
        .unwrap();
    assert!(ok.cases[0].passed, "{:?}", ok.cases[0].failures);
    let errors = tester
        .run_source(
            "t.test.yaml",
            "- name: broken\n  program: broken.dl\n",
            &dir,
        )
        .unwrap_err();
    assert!(
        errors.iter().all(|e| e.file.ends_with("broken.dl")),
        "{errors:?}"
    );
    assert_eq!(errors[0].line, Some(1));
    let errors = tester
        .run_source("t.test.yaml", "- name: gone\n  program: gone.dl\n", &dir)
        .unwrap_err();
    assert_eq!(errors[0].line, Some(2));
    assert!(errors[0].message.contains("does not exist"));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn envelope_files_give_their_facts_and_their_errors_are_located() {
    let dir = std::env::temp_dir().join(format!("tollgate-pack-env-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("base.yaml"),
        "id: base\nversion: 1\nattach: {agents: [coder]}\ntools:\n  - {id: fs, effect: allow, tools: [\"fs.*\"]}\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("broken.yaml"),
        "id: broken\nversion: 1\ntools: 3\n",
    )
    .unwrap();
    let mut tester = PackTester::default();
    let report = tester
        .run_source(
            "t.test.yaml",
            "- name: e\n  envelopes: [base.yaml]\n  given:\n    - run(\"r1\", \"coder\", \"T-1\", \"org:acme\")\n    - tool_request(\"q1\", \"r1\", \"fs.read\")\n  decisions: { tool: { q1: allow } }\n",
            &dir,
        )
        .unwrap();
    assert!(report.cases[0].passed, "{:?}", report.cases[0].failures);
    let errors = tester
        .run_source(
            "t.test.yaml",
            "- name: e\n  envelopes: [broken.yaml]\n",
            &dir,
        )
        .unwrap_err();
    assert!(errors[0].file.ends_with("broken.yaml"), "{errors:?}");
    assert_eq!(errors[0].line, Some(3), "{errors:?}");
    let errors = tester
        .run_source("t.test.yaml", "- name: e\n  envelopes: [gone.yaml]\n", &dir)
        .unwrap_err();
    assert_eq!(errors[0].line, Some(2), "{errors:?}");
    assert!(
        errors[0].message.contains("cannot read envelope file"),
        "{errors:?}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_program_given_as_a_test_file_is_pointed_to_rules_check() {
    let report = PackTester::default().run_paths(&[PathBuf::from("packs/envelopes.dl")]);
    assert!(!report.is_success());
    assert_eq!(report.errors.len(), 1, "{:?}", report.errors);
    let e = &report.errors[0];
    assert!(e.message.contains("is a Datalog program"), "{e:?}");
    assert!(
        e.help
            .as_deref()
            .is_some_and(|h| h.contains("tollgate rules check packs/envelopes.dl")),
        "{e:?}"
    );
}

#[test]
fn a_folder_without_test_files_and_a_missing_path_are_input_errors() {
    let report = PackTester::default().run_paths(&[PathBuf::from("/nonexistent/tollgate")]);
    assert!(!report.is_success());
    assert!(report.errors[0].message.contains("does not exist"));
    let dir = std::env::temp_dir().join(format!("tollgate-empty-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let report = PackTester::default().run_paths(std::slice::from_ref(&dir));
    assert!(report.errors[0].message.contains("no `*.test.yaml` files"));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn the_report_serialises_to_json() {
    let text = format!(
        "{BASE}  - name: x\n    expect: ['tool_decision(\"q2\", \"deny\", \"default-deny\")']\n"
    );
    let report = run(&text).unwrap();
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["cases"][0]["failures"][0]["kind"], "missing");
    assert_eq!(
        json["cases"][0]["failures"][0]["why_not"]["fact"]["relation"],
        "tool_decision"
    );
}

#[test]
fn wildcards_match_any_value_in_expectations_only() {
    let text = format!(
        "{BASE}{}",
        r#"  - name: patterns
    expect:
      - tool_decision("q2", "allow", _)
    expect_absent:
      - tool_decision("q1", _, _)
"#
    );
    let report = run(&text).unwrap();
    let failures = &report.cases[0].failures;
    assert_eq!(failures.len(), 1, "{failures:?}");
    assert_eq!(
        failures[0].message,
        r#"unexpected `tool_decision("q1", _, _)`: `tool_decision("q1", "deny", "base/no-write")`"#
    );
    let errors = run("- name: g\n  given: ['now(_)']\n").unwrap_err();
    assert!(
        errors[0].message.contains("`_` in the given fact"),
        "{errors:?}"
    );
}

#[test]
fn the_same_bad_fact_in_two_cases_is_reported_at_each_case() {
    let text = "- name: a\n  given: ['runn(\"x\")']\n- name: b\n  given: ['runn(\"x\")']\n";
    let errors = run(text).unwrap_err();
    let lines: Vec<_> = errors.iter().map(|e| e.line).collect();
    assert_eq!(lines, [Some(2), Some(4)]);
}
