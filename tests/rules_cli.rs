//! End-to-end tests of `tollgate rules eval | check | explain`: spawn the binary on the
//! fixtures under `fixtures/rules/` and assert exit codes, files and printed explanations.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::PathBuf;

use support::{stderr, stdout, tollgate};

const POLICY: &str = "fixtures/rules/tool_policy/policy.dl";
const FACTS: &str = "fixtures/rules/tool_policy";

#[test]
fn eval_writes_sorted_csv_files_for_every_output() {
    let out = std::env::temp_dir().join(format!("tollgate-eval-{}", std::process::id()));
    let o = tollgate(&[
        "rules",
        "eval",
        POLICY,
        "-F",
        FACTS,
        "-D",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let decision = std::fs::read_to_string(out.join("decision.csv")).unwrap();
    assert_eq!(
        decision,
        "r1\tallow\nr2\trequire_approval\nr3\tdeny\nr4\trequire_approval\nr5\tdeny\nr6\tallow\nr7\tdeny\n"
    );
    let counts = std::fs::read_to_string(out.join("decisions_per_effect.csv")).unwrap();
    assert_eq!(counts, "allow\t2\ndeny\t3\nrequire_approval\t2\n");
    std::fs::remove_dir_all(&out).ok();
}

/// `.pragma "fact-dir"` and `.pragma "output-dir"` name the folders when `-F` and `-D` do not
/// (relative to the working folder, as in Soufflé); the command line wins when it names them.
/// Other pragmas are ignored with a warning on stderr.
#[test]
fn eval_takes_its_folders_from_the_programs_pragmas_unless_the_command_line_names_them() {
    let dir = std::env::temp_dir().join(format!("tollgate-pragma-{}", std::process::id()));
    std::fs::remove_dir_all(&dir).ok();
    std::fs::create_dir_all(dir.join("in")).unwrap();
    std::fs::create_dir_all(dir.join("other")).unwrap();
    std::fs::write(dir.join("in/edge.facts"), "1\t2\n2\t3\n").unwrap();
    std::fs::write(dir.join("other/edge.facts"), "7\t8\n").unwrap();
    let program = dir.join("p.dl");
    std::fs::write(
        &program,
        ".pragma \"fact-dir\" \"in\"\n.pragma \"output-dir\" \"out\"\n.pragma \"jobs\" \"4\"\n\
         .decl edge(a: number, b: number)\n.input edge\n\
         .decl path(a: number, b: number)\n.output path\n\
         path(a, b) :- edge(a, b).\npath(a, c) :- path(a, b), edge(b, c).\n",
    )
    .unwrap();
    let run = |args: &[&str]| {
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_tollgate"))
            .current_dir(&dir)
            .args(["rules", "eval", "p.dl"])
            .args(args)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        o
    };
    let o = run(&[]);
    assert_eq!(
        std::fs::read_to_string(dir.join("out/path.csv")).unwrap(),
        "1\t2\n1\t3\n2\t3\n"
    );
    assert!(
        stderr(&o).contains("warning[W-pragma]: `.pragma \"jobs\"` is ignored"),
        "{}",
        stderr(&o)
    );
    run(&["-F", "other", "-D", "cli"]);
    assert_eq!(
        std::fs::read_to_string(dir.join("cli/path.csv")).unwrap(),
        "7\t8\n"
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn eval_to_stdout_prints_each_relation_under_its_name() {
    let o = tollgate(&["rules", "eval", POLICY, "-F", FACTS, "-D", "-"]);
    assert!(o.status.success());
    let text = stdout(&o);
    assert!(
        text.contains("---------------\ndecision\n===============\nr1\tallow\n"),
        "{text}"
    );
    assert!(
        text.contains("decisions_per_effect\n===============\nallow\t2\n"),
        "{text}"
    );
}

#[test]
fn eval_json_has_relations_and_a_stable_hash() {
    let a = tollgate(&["rules", "eval", POLICY, "-F", FACTS, "--json"]);
    let b = tollgate(&["rules", "eval", POLICY, "-F", FACTS, "--json"]);
    assert!(a.status.success());
    let ja: serde_json::Value = serde_json::from_slice(&a.stdout).unwrap();
    let jb: serde_json::Value = serde_json::from_slice(&b.stdout).unwrap();
    assert_eq!(ja["hash"], jb["hash"]);
    assert_eq!(
        ja["relations"]["decision"][2],
        serde_json::json!(["r3", "deny"])
    );
}

#[test]
fn a_negation_cycle_exits_2_naming_every_rule_of_the_cycle_with_its_line() {
    let o = tollgate(&[
        "rules",
        "check",
        "fixtures/rules/diagnostics/negation_cycle.dl",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(err.contains("error[E-unstratifiable]"), "{err}");
    assert!(
        err.contains("rule `trust.default` of the cycle, line 10"),
        "{err}"
    );
    assert!(
        err.contains("rule `suspicion.untrusted` of the cycle, line 14"),
        "{err}"
    );
    assert!(err.contains("= help: the cycle is formed by the rules `trust.default` (line 10), `suspicion.untrusted` (line 14)"), "{err}");
    // The rule outside the cycle is not blamed.
    assert!(!err.contains("suspicion.spreads"), "{err}");
    // eval refuses it the same way.
    let o = tollgate(&[
        "rules",
        "eval",
        "fixtures/rules/diagnostics/negation_cycle.dl",
        "-D",
        "-",
    ]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn check_json_gives_code_position_and_help() {
    let o = tollgate(&[
        "rules",
        "check",
        "--json",
        "fixtures/rules/diagnostics/negation_cycle.dl",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let d = &j["diagnostics"][0];
    assert_eq!(d["code"], "E-unstratifiable");
    assert_eq!(d["line"], 10);
    assert_eq!(d["column"], 26);
    assert!(d["help"].as_str().unwrap().contains("line 14"));
    assert_eq!(d["file"], "fixtures/rules/diagnostics/negation_cycle.dl");
}

#[test]
fn check_of_a_folder_of_clean_programs_exits_0() {
    let o = tollgate(&["rules", "check", "fixtures/rules/tool_policy"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("1 program checked, no errors"));
}

#[test]
fn explain_prints_the_proof_of_a_derived_fact() {
    let o = tollgate(&[
        "rules",
        "explain",
        POLICY,
        "-F",
        FACTS,
        "--fact",
        r#"decision("r4", "require_approval")"#,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    let expected = r#"decision("r4", "require_approval")  [rule combine.approval-overrides-allow, line 32 with r = "r4"]
  matches("r4", "require_approval")  [rule tool.match, line 24 with a = "coder", e = "repo-default", eff = "require_approval", p = "shell.*", r = "r4", t = "shell.exec"]
    request("r4", "coder", "shell.exec")  [input: request.facts:4]
    governs("coder", "repo-default")  [rule envelope.attached, line 18 with a = "coder", e = "repo-default"]
      attached("coder", "repo-default")  [input: attached.facts:1]
    tool_rule("repo-default", "shell.*", "require_approval")  [input: tool_rule.facts:6]
  !matches("r4", "deny")  [absent]
"#;
    assert_eq!(text, expected);
}

#[test]
fn explain_prints_why_not_for_an_absent_fact() {
    let o = tollgate(&[
        "rules",
        "explain",
        POLICY,
        "-F",
        FACTS,
        "--fact",
        r#"decision("r5", "allow")"#,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(
        text.starts_with("decision(\"r5\", \"allow\") does not hold\n"),
        "{text}"
    );
    assert!(
        text.contains(
            "rule combine.allow (line 34): `matches(r, \"allow\")` found no match with r = \"r5\""
        ),
        "{text}"
    );
}

#[test]
fn explain_json_proof_names_rule_ids_and_origins() {
    let o = tollgate(&[
        "rules",
        "explain",
        POLICY,
        "-F",
        FACTS,
        "--json",
        "--fact",
        r#"decision("r7", "deny")"#,
    ]);
    assert!(o.status.success());
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["holds"], true);
    assert_eq!(j["proof"]["rule"], "combine.default-deny");
    assert_eq!(j["proof"]["premises"][0]["origin"], "request.facts:7");
    assert_eq!(j["proof"]["absent"][0]["relation"], "matches");
}

#[test]
fn a_bad_fact_file_is_an_input_error_with_file_and_line() {
    let dir = std::env::temp_dir().join(format!("tollgate-badfacts-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("p.dl"),
        ".decl n(x: number)\n.input n\n.output n\n",
    )
    .unwrap();
    std::fs::write(dir.join("n.facts"), "1\ntwo\n").unwrap();
    let o = tollgate(&[
        "rules",
        "eval",
        dir.join("p.dl").to_str().unwrap(),
        "-F",
        dir.to_str().unwrap(),
        "-D",
        "-",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("n.facts:2:1: `two` is not a `number`"),
        "{}",
        stderr(&o)
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn unbounded_recursion_stops_at_the_fact_limit_with_exit_1() {
    let dir = std::env::temp_dir().join(format!("tollgate-limit-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("p.dl"),
        ".decl n(x: number)\n.output n\nn(0).\nn(x + 1) :- n(x).\n",
    )
    .unwrap();
    let o = tollgate(&[
        "rules",
        "eval",
        dir.join("p.dl").to_str().unwrap(),
        "-D",
        "-",
        "--max-facts",
        "1000",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("more than 1000 facts"),
        "{}",
        stderr(&o)
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn an_output_with_io_stdout_is_printed_whatever_the_output_folder() {
    let dir = std::env::temp_dir().join(format!("tollgate-iostdout-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("p.dl"),
        ".decl n(x: number)\n.output n(IO=stdout)\nn(2). n(1).\n",
    )
    .unwrap();
    let o = tollgate(&[
        "rules",
        "eval",
        dir.join("p.dl").to_str().unwrap(),
        "-D",
        dir.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        "---------------\nn\n===============\n1\n2\n===============\n"
    );
    assert!(!dir.join("n.csv").exists());
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn test_of_the_rules_folder_runs_every_builtin_pack_test_and_passes() {
    let o = tollgate(&["rules", "test", "rules/"]);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    let text = stdout(&o);
    assert!(text.ends_with(" passed, 0 failed\n"), "{text}");
    let passed: usize = text.split(' ').next().unwrap().parse().unwrap();
    assert!(passed >= 40, "{text}");
}

fn temp_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tollgate-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn a_failing_pack_test_exits_1_naming_the_case_and_the_missing_fact() {
    let dir = temp_dir("packtest-fail");
    std::fs::write(
        dir.join("shell.test.yaml"),
        r#"- name: shell is allowed outright
  given:
    - run("r1", "coder", "T-1", "org:acme")
    - envelope_attached("base", "agent", "coder")
    - tool_rule("base", "base/shell", "require_approval", "shell.*")
    - tool_request("q1", "r1", "shell.exec")
  expect:
    - tool_decision("q1", "allow", "base/shell")
- name: shell needs approval
  given:
    - run("r1", "coder", "T-1", "org:acme")
    - envelope_attached("base", "agent", "coder")
    - tool_rule("base", "base/shell", "require_approval", "shell.*")
    - tool_request("q1", "r1", "shell.exec")
  decisions:
    tool: { q1: require_approval }
"#,
    )
    .unwrap();
    let o = tollgate(&["rules", "test", dir.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(
        text.contains(r#"shell.test.yaml:1 `shell is allowed outright`: missing `tool_decision("q1", "allow", "base/shell")`"#),
        "{text}"
    );
    // The engine's why-not names the rule that could have derived it and where it failed.
    assert!(
        text.contains(r#"rule tool.allow (line "#) && text.contains("found no match"),
        "{text}"
    );
    assert!(!text.contains("shell needs approval"), "{text}");
    assert!(text.ends_with("1 passed, 1 failed\n"), "{text}");

    let o = tollgate(&["rules", "test", "--json", dir.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        (j["passed"].as_u64(), j["failed"].as_u64()),
        (Some(1), Some(1))
    );
    let failure = &j["files"][0]["cases"][0]["failures"][0];
    assert_eq!(failure["kind"], "missing");
    assert_eq!(failure["why_not"]["fact"]["relation"], "tool_decision");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_malformed_pack_test_exits_2_with_file_line_and_column() {
    let dir = temp_dir("packtest-bad");
    let file = dir.join("bad.test.yaml");
    std::fs::write(
        &file,
        "- name: oops\n  given:\n    - now(1)\n    - run(\"r1\", coder)\n",
    )
    .unwrap();
    let o = tollgate(&["rules", "test", file.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    let err = stderr(&o);
    assert!(
        err.contains(&format!(" --> {}:4:7", file.display())),
        "{err}"
    );
    assert!(err.contains("bad fact `run(\"r1\", coder)`"), "{err}");
    assert!(err.contains("= help: "), "{err}");
    // Broken YAML and a missing path are input errors too.
    std::fs::write(&file, "- name: oops\n  given: [\n").unwrap();
    let o = tollgate(&["rules", "test", file.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains(&format!(" --> {}:", file.display())));
    let o = tollgate(&["rules", "test", "no/such/folder"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("`no/such/folder` does not exist"));
    let o = tollgate(&["rules", "test", "rules/packs/scope.dl"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("help: check a program with `tollgate rules check"));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_folder_with_a_vocabulary_is_checked_as_one_pack() {
    let o = tollgate(&["rules", "check", "rules/packs"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("1 program checked, no errors"));
}

#[test]
fn a_user_pack_is_checked_against_the_builtin_vocabulary() {
    let dir = std::env::temp_dir().join(format!("tollgate-userpack-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("extra.dl"),
        ".decl risky(req: Id)\nrisky(q) :- tool_request(q, _, t), glob(\"shell.*\", t).\n",
    )
    .unwrap();
    let o = tollgate(&["rules", "check", "--pack", dir.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    std::fs::write(dir.join("extra.dl"), "risky(q) :- tool_requst(q, _, _).\n").unwrap();
    let o = tollgate(&["rules", "check", "--pack", dir.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(err.contains("extra.dl:1:"), "{err}");
    assert!(err.contains("did you mean `tool_request`?"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}

/// `#include` is resolved relative to the including file, then `-I` folders; a mistake in an
/// included file is reported at its own file and line, one after an include at the including
/// file's line; a missing include names where it looked.
#[test]
fn preprocessed_programs_report_mistakes_in_the_file_and_line_they_are_in() {
    let dir = temp_dir("preprocess");
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    std::fs::create_dir_all(dir.join("shared")).unwrap();
    std::fs::write(
        dir.join("main.dl"),
        "// main\n#include \"sub/rules.dl\"\n#define ONE 1\n.decl out(x: number)\n.output out\nout(ONE) :- in(ONE).\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("sub/rules.dl"),
        "#include <decls.dl>\n\nbroken(x :- in(x).\n",
    )
    .unwrap();
    std::fs::write(dir.join("shared/decls.dl"), ".decl in(x: number)\n").unwrap();
    let main = dir.join("main.dl");
    let shared = dir.join("shared");
    let o = tollgate(&["rules", "check", main.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(err.contains("cannot find `decls.dl`"), "{err}");
    assert!(err.contains("sub/rules.dl:1:1"), "{err}");

    let o = tollgate(&[
        "rules",
        "eval",
        main.to_str().unwrap(),
        "-I",
        shared.to_str().unwrap(),
        "-D",
        "-",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(err.contains("sub/rules.dl:3:"), "{err}");
    assert!(err.contains("broken(x :- in(x)."), "{err}");

    std::fs::write(
        dir.join("sub/rules.dl"),
        "#include <decls.dl>\nin(1).\nin(2).\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("main.dl"),
        "// main\n#include \"sub/rules.dl\"\n#define ONE 1\n.decl out(x: number)\n.output out\nout(ONE) :- in(ONE), nope(ONE).\n",
    )
    .unwrap();
    let o = tollgate(&[
        "rules",
        "eval",
        main.to_str().unwrap(),
        "-I",
        shared.to_str().unwrap(),
        "-D",
        "-",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(err.contains("main.dl:6:"), "{err}");

    std::fs::write(
        dir.join("main.dl"),
        "#include \"sub/rules.dl\"\n#define ONE 1\n.decl out(x: number)\n.output out\nout(ONE) :- in(ONE).\n",
    )
    .unwrap();
    let o = tollgate(&[
        "rules",
        "eval",
        main.to_str().unwrap(),
        "-I",
        shared.to_str().unwrap(),
        "-D",
        "-",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("out\n===============\n1\n"),
        "{}",
        stdout(&o)
    );
    std::fs::remove_dir_all(&dir).ok();
}
