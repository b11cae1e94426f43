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
    let Reach::Command { env, cwd, .. } = &c.servers[0].reach else {
        panic!("a command: {:?}", c.servers[0]);
    };
    assert_eq!(env, &["PATH", "HOME"]);
    assert_eq!(cwd, &Some(PathBuf::from("/work/repo")));
    let Reach::Command { env, .. } = &c.servers[1].reach else {
        panic!("a command: {:?}", c.servers[1]);
    };
    assert!(env.is_empty(), "nothing of the host by default");
}

#[test]
fn an_http_server_takes_its_headers_from_named_environment_variables() {
    let c = parse(
        "run: {agent: a, task: t, scope: s}\nservers:\n  remote:\n    url: https://mcp.example.com/mcp\n    headers:\n      Authorization: REMOTE_MCP_AUTH\n",
    )
    .unwrap();
    assert_eq!(
        c.servers[0].reach,
        Reach::Url {
            url: "https://mcp.example.com/mcp".into(),
            headers: vec![("Authorization".into(), "REMOTE_MCP_AUTH".into())],
        }
    );
}

#[test]
fn a_secret_written_as_a_header_value_is_refused_with_the_remedy() {
    let faults = parse(
        "run: {agent: a, task: t, scope: s}\nservers:\n  remote:\n    url: https://mcp.example.com/mcp\n    headers:\n      Authorization: Bearer sk-live-123\n      mcp-session-id: X\n",
    )
    .unwrap_err()
    .0;
    assert_eq!(faults.len(), 2, "{faults:?}");
    assert_eq!(faults[0].path, "/servers/remote/headers/Authorization");
    assert_eq!((faults[0].line, faults[0].column), (Some(6), Some(7)));
    assert!(
        faults[0].help.contains("never written in this file"),
        "{faults:?}"
    );
    assert!(
        faults[1].message.contains("set by the MCP transport"),
        "{faults:?}"
    );
}

#[test]
fn a_server_with_a_url_and_a_command_or_a_bad_url_is_refused() {
    for (server, said) in [
        (
            "url: https://x.dev/mcp\n    command: x",
            "both `url` and `command`",
        ),
        ("url: ftp://x.dev/mcp", "not an http or https URL"),
        ("url: not a url", "is not a URL"),
        (
            "url: https://x.dev/mcp\n    headrs: {}",
            "did you mean `headers`?",
        ),
    ] {
        let text = format!("run: {{agent: a, task: t, scope: s}}\nservers:\n  r:\n    {server}\n");
        let faults = parse(&text).unwrap_err().0;
        assert!(
            faults.iter().any(|f| f.to_string().contains(said)),
            "{server}: {faults:?}"
        );
    }
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

#[test]
fn a_server_context_is_secret_and_unscoped_unless_the_configuration_says() {
    let c = parse(GOOD).unwrap();
    let seen = c.servers[0].context.seen(Some("file:///work/repo/a.txt"));
    assert_eq!(seen.scope, "");
    assert_eq!(seen.sensitivity, Level::Secret, "fail closed");
}

#[test]
fn a_uri_under_the_longest_prefix_is_seen_as_its_entry_says_the_rest_from_the_server() {
    let c = parse(
        "run: {agent: a, task: t, scope: s}\nservers:\n  files:\n    command: x\n    context:\n      scope: org:acme/docs\n      sensitivity: internal\n      labels: [docs]\n      uris:\n        'file:///srv/': {sensitivity: confidential}\n        'file:///srv/hr/': {scope: org:acme/hr, labels: [pii]}\n",
    )
    .unwrap();
    let ctx = &c.servers[0].context;
    let hr = ctx.seen(Some("file:///srv/hr/pay.csv"));
    assert_eq!(
        (hr.scope.as_str(), hr.sensitivity, hr.labels.as_slice()),
        ("org:acme/hr", Level::Internal, &["pii".to_string()][..])
    );
    let srv = ctx.seen(Some("file:///srv/a"));
    assert_eq!(
        (srv.scope.as_str(), srv.sensitivity),
        ("org:acme/docs", Level::Confidential)
    );
    assert_eq!(ctx.seen(None).sensitivity, Level::Internal);
    assert_eq!(ctx.seen(Some("https://x")).labels, ["docs"]);
}

#[test]
fn a_bad_context_is_a_fault_with_its_place() {
    let faults = parse(
        "run: {agent: a, task: t, scope: s}\nservers:\n  files:\n    command: x\n    context:\n      sensitivity: top\n      scop: x\n      uris: {'': {}}\n",
    )
    .unwrap_err()
    .to_string();
    assert!(faults.contains("unknown sensitivity `top`"), "{faults}");
    assert!(faults.contains("did you mean `scope`?"), "{faults}");
    assert!(faults.contains("an empty URI prefix"), "{faults}");
    assert!(
        faults.contains("6:7: at `/servers/files/context/sensitivity`"),
        "with the line and column: {faults}"
    );
}

#[test]
fn prefix_is_on_unless_turned_off_and_must_be_a_boolean() {
    let c = parse(
        "run: {agent: a, task: t, scope: s}\nservers:\n  a: {command: x}\n  b: {command: x, prefix: false}\n",
    )
    .unwrap();
    assert!(c.servers[0].prefix);
    assert!(!c.servers[1].prefix);
    let faults =
        parse("run: {agent: a, task: t, scope: s}\nservers:\n  a: {command: x, prefix: no}\n")
            .unwrap_err()
            .to_string();
    assert!(
        faults.contains("`prefix` must be true or false"),
        "{faults}"
    );
}

#[test]
fn a_uri_that_could_climb_out_of_its_prefix_is_seen_as_secret() {
    let c = parse(
        "run: {agent: a, task: t, scope: s}\nservers:\n  files:\n    command: x\n    context:\n      scope: org:acme/notes\n      sensitivity: public\n      uris:\n        'file:///srv/hr/': {sensitivity: confidential}\n",
    )
    .unwrap();
    let ctx = &c.servers[0].context;
    // An agent names the URI it reads; a server may resolve what it hides.
    for uri in [
        "file:///srv/docs/../hr/pay.csv",
        "file:///srv/docs/./../hr/pay.csv",
        "file:///srv/docs/..%2Fhr/pay.csv",
        "file:///srv/docs/%2e%2e/hr/pay.csv",
        "file:///srv/docs/..\\hr\\pay.csv",
        "not a uri",
    ] {
        assert_eq!(ctx.seen(Some(uri)).sensitivity, Level::Secret, "{uri}");
    }
    assert_eq!(
        ctx.seen(Some("file:///srv/docs/a.md")).sensitivity,
        Level::Public
    );
    assert_eq!(
        ctx.seen(Some("file:///srv/hr/pay.csv")).sensitivity,
        Level::Confidential
    );
    assert_eq!(
        ctx.seen(Some("file:///srv/docs/a..b.md")).sensitivity,
        Level::Public,
        "two dots inside a name are no segment"
    );
}
