use super::*;

const GOOD: &str = "\
run:
  agent: coder
  task: fix the flaky test
  scope: org:acme/repo
  clearance: internal
  envelopes: [coding-agent]
approval_wait_seconds: 30
servers:
  files:
    command: npx
    args: [-y, '@modelcontextprotocol/server-filesystem', /work/repo]
    env: [PATH, HOME]
    cwd: /work/repo
  search:
    command: ./search-server
";

#[test]
fn a_complete_configuration_reads_with_its_defaults() {
    let c = parse(GOOD).unwrap();
    assert_eq!(c.run.agent, "coder");
    assert_eq!(c.run.clearance, Some(Level::Internal));
    assert_eq!(c.run.envelopes, ["coding-agent"]);
    assert_eq!(c.approval_wait_seconds, 30);
    assert_eq!(c.call_timeout_seconds, DEFAULT_CALL_TIMEOUT_SECONDS);
    assert_eq!(c.max_result_bytes, DEFAULT_MAX_RESULT_BYTES);
    let names: Vec<&str> = c.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["files", "search"]);
    assert_eq!(c.servers[0].env, ["PATH", "HOME"]);
    assert_eq!(c.servers[0].cwd, Some(PathBuf::from("/work/repo")));
    assert!(
        c.servers[1].env.is_empty(),
        "nothing of the host by default"
    );
}

#[test]
fn a_misspelt_key_is_named_with_its_line_and_a_suggestion_once() {
    let text = GOOD.replace("    env: [PATH, HOME]", "    evn: [PATH, HOME]");
    let faults = parse(&text).unwrap_err().0;
    assert_eq!(faults.len(), 1, "{faults:?}");
    let f = &faults[0];
    assert_eq!(f.path, "/servers/files/evn");
    assert_eq!((f.line, f.column), (Some(12), Some(5)));
    assert_eq!(f.help, "did you mean `env`?");
    assert!(
        f.to_string()
            .starts_with("12:5: at `/servers/files/evn`: unknown key `evn`")
    );
}

#[test]
fn every_fault_is_reported_in_document_order() {
    let text = "\
run:
  agent: coder
  clearance: top
servers:
  'a.b':
    command: x
  ok:
    args: [1]
    env: ['A=1']
approval_wait_seconds: 0
";
    let faults = parse(text).unwrap_err().0;
    let said: Vec<String> = faults.iter().map(|f| f.message.clone()).collect();
    assert_eq!(
        said,
        [
            "`task` is missing",
            "`scope` is missing",
            "unknown clearance `top`",
            "server name `a.b` is not valid",
            "`command` is missing",
            "`approval_wait_seconds` must be a whole number from 1 to 86400, not 0",
        ],
        "{faults:#?}"
    );
    assert!(faults.iter().all(|f| f.line.is_some()));
}

#[test]
fn an_environment_entry_must_be_a_name_not_a_value() {
    let text = GOOD.replace("env: [PATH, HOME]", "env: [PATH, 'TOKEN=abc']");
    let faults = parse(&text).unwrap_err().0;
    assert_eq!(faults[0].path, "/servers/files/env/1");
    assert!(faults[0].help.contains("names only"));
}

#[test]
fn an_http_upstream_is_refused_until_it_is_supported() {
    let text = GOOD.replace(
        "  search:\n    command: ./search-server\n",
        "  search:\n    url: https://mcp.example.com/mcp\n",
    );
    let faults = parse(&text).unwrap_err().0;
    assert_eq!(faults[0].path, "/servers/search/url");
    assert!(faults[0].message.contains("not supported yet"));
}

#[test]
fn syntax_errors_and_missing_sections_are_faults_not_panics() {
    for text in [
        "",
        "[]",
        "run: [",
        "servers: {}\nrun: {agent: a, task: t, scope: s}",
    ] {
        let faults = parse(text).unwrap_err().0;
        assert!(!faults.is_empty(), "{text:?}");
    }
}
