//! Arguments chosen to slip past a condition (issue 32, holes 3, 4, 6 and 7), each decided by
//! the built-in packs the way the gateway decides them.

use super::*;

fn engine(rules: &str) -> PolicyEngine {
    let yaml = format!("id: e\nversion: 1\nattach: {{agents: [coder]}}\ntools:\n{rules}");
    let set = load_envelopes(&[("e.yaml", yaml.as_str())]).unwrap();
    PolicyEngine::new(&set, &subject_facts(&[coder()], &[])).unwrap()
}

#[test]
fn a_host_wildcard_matches_the_parsed_host_by_whole_labels_not_the_urls_text() {
    let e = engine(
        "  - {id: web, effect: allow, tools: [http.get], args: {/url: \"https://*.example.com/**\"}}\n",
    );
    let decide = |u: &str| {
        e.decide_tool("run-42", "http.get", &serde_json::json!({ "url": u }))
            .effect
    };
    for allowed in [
        "https://api.example.com/v1/users",
        "https://a.b.example.com/x",
    ] {
        assert_eq!(decide(allowed), DecisionEffect::Allow, "{allowed}");
    }
    // An allow needs the text and the parsed parts to agree: parsers differ on a backslash
    // before `@` (WHATWG reads host `docs.example.com`, others `evil.example`), and an
    // upper-case host is not what the pattern spells.
    for differing in [
        "https://docs.example.com\\@evil.example/",
        "https://API.Example.com/v1",
    ] {
        assert_eq!(decide(differing), DecisionEffect::Deny, "{differing}");
    }
    // The red team's URLs: each matched the pattern as a glob over its text.
    for hostile in [
        "https://evil.com#.example.com/x",
        "https://evil.com?.example.com/x",
        "https://evil.com\\.example.com/x",
        "https://user@evil.com#.example.com/",
        "https://2130706433#.example.com/",
        "https://evilexample.com/x",
        "http://api.example.com/x",
        "https://api.example.com:8443/x",
    ] {
        assert_eq!(decide(hostile), DecisionEffect::Deny, "{hostile}");
    }
}

#[test]
fn a_deny_on_a_url_holds_on_its_parsed_parts_too() {
    let e = engine(
        "  - {id: web, effect: allow, tools: [http.get]}\n  \
         - {id: internal, effect: deny, tools: [http.get], args: {/url: \"https://*.internal.acme/**\"}}\n",
    );
    let decide = |u: &str| {
        e.decide_tool("run-42", "http.get", &serde_json::json!({ "url": u }))
            .effect
    };
    assert_eq!(decide("https://db.internal.acme/x"), DecisionEffect::Deny);
    // Upper case and a default port spelled out: the text is not the pattern's, the parts are.
    assert_eq!(
        decide("https://DB.Internal.ACME:443/x"),
        DecisionEffect::Deny
    );
    assert_eq!(decide("https://docs.acme.dev/x"), DecisionEffect::Allow);
}

#[test]
fn split_encoded_and_suffixed_parent_segments_climb_past_a_path_rule() {
    let e = engine(
        "  - {id: public, effect: allow, tools: [http.get], args: {/path: \"/v1/public/**\"}}\n  \
         - {id: docs, effect: allow, tools: [fs.read_file], args: {/path: \"docs/**\"}}\n",
    );
    let get = |p: &str| {
        e.decide_tool("run-42", "http.get", &serde_json::json!({ "path": p }))
            .effect
    };
    let read = |p: &str| {
        e.decide_tool("run-42", "fs.read_file", &serde_json::json!({ "path": p }))
            .effect
    };
    assert_eq!(get("/v1/public/items"), DecisionEffect::Allow);
    for hostile in [
        "/v1/public/%\t2e%\t2e/admin",
        "/v1/public/%2\te%2e/admin",
        "/v1/public/%252e%252e/admin",
    ] {
        assert_eq!(get(hostile), DecisionEffect::Deny, "{hostile:?}");
    }
    assert_eq!(read("docs/guide.md"), DecisionEffect::Allow);
    for hostile in [
        "docs/..%2fsecrets",
        "docs/%2e%2e%2fsecrets",
        "docs/..%5csecrets",
        "docs/..\u{0}/secrets",
        "docs/..%00/secrets",
        "docs/.. /secrets",
        "docs/..;/secrets",
        "docs/..%c0%afsecrets",
    ] {
        assert_eq!(read(hostile), DecisionEffect::Deny, "{hostile:?}");
    }
}

#[test]
fn a_deny_holds_on_every_string_inside_a_list_or_an_object() {
    let e = engine(
        "  - {id: any, effect: allow, tools: [fs.read_file]}\n  \
         - {id: env, effect: deny, tools: [fs.read_file], args: {/path: \"**/.env\"}}\n",
    );
    let decide = |args: serde_json::Value| e.decide_tool("run-42", "fs.read_file", &args).effect;
    assert_eq!(
        decide(serde_json::json!({"path": ".env"})),
        DecisionEffect::Deny
    );
    for dodge in [
        serde_json::json!({"path": [".env"]}),
        serde_json::json!({"path": {"p": ".env"}}),
        serde_json::json!({"path": ["README.md", [{"deep": "config/.env"}]]}),
    ] {
        assert_eq!(decide(dodge.clone()), DecisionEffect::Deny, "{dodge}");
    }
    assert_eq!(
        decide(serde_json::json!({"path": ["README.md"]})),
        DecisionEffect::Allow
    );
}

#[test]
fn a_pathological_pattern_is_refused_when_the_envelope_is_checked() {
    let pattern = "*a".repeat(20_000);
    let yaml = format!(
        "id: e\nversion: 1\ntools:\n  - {{effect: deny, tools: [fs.read_file], args: {{/path: \"{pattern}\"}}}}\n"
    );
    let err = load_envelopes(&[("e.yaml", yaml.as_str())]).unwrap_err();
    let text = err.render();
    assert!(text.contains("E-envelope-glob-complex"), "{text}");
    assert!(text.contains("more than 1024"), "{text}");
    let many = "*a".repeat(40);
    let yaml = format!("id: e\nversion: 1\ntools:\n  - {{effect: deny, tools: [\"{many}\"]}}\n");
    let err = load_envelopes(&[("e.yaml", yaml.as_str())]).unwrap_err();
    assert!(err.render().contains("40 wildcards"), "{}", err.render());
}

#[test]
fn a_url_pattern_with_a_partial_label_wildcard_is_refused() {
    let yaml = "id: e\nversion: 1\ntools:\n  - {effect: allow, tools: [http.get], args: {/url: \"https://api*.example.com/**\"}}\n";
    let err = load_envelopes(&[("e.yaml", yaml)]).unwrap_err();
    assert!(
        err.render().contains("E-envelope-url-pattern"),
        "{}",
        err.render()
    );
}

#[test]
fn a_text_condition_crosses_slashes_so_a_deny_catches_what_a_path_glob_misses() {
    let e = engine(
        "  - {id: shell, effect: allow, tools: [shell.exec]}\n  \
         - {id: no-rm, effect: deny, tools: [shell.exec], args: {/cmd: {text: \"*rm -rf*\"}}}\n  \
         - {id: no-drop, effect: deny, tools: [shell.exec], args: {/cmd: {text: \"**DROP TABLE**\"}}}\n  \
         - {id: old-style, effect: deny, tools: [shell.run], args: {/cmd: \"*rm -rf*\"}}\n  \
         - {id: run, effect: allow, tools: [shell.run]}\n",
    );
    let decide = |tool: &str, cmd: serde_json::Value| {
        e.decide_tool("run-42", tool, &serde_json::json!({ "cmd": cmd }))
            .effect
    };
    for denied in [
        "rm -rf /",
        "cd /tmp && rm -rf ./build/",
        "psql -h db/x -c 'DROP TABLE users'",
    ] {
        assert_eq!(
            decide("shell.exec", denied.into()),
            DecisionEffect::Deny,
            "{denied}"
        );
    }
    // Inside a list too.
    assert_eq!(
        decide("shell.exec", serde_json::json!(["ls", "rm -rf /"])),
        DecisionEffect::Deny
    );
    assert_eq!(decide("shell.exec", "ls -la".into()), DecisionEffect::Allow);
    // A bare pattern reads its argument as a path: `rm -rf /` escapes it, and the envelope's
    // check says so.
    assert_eq!(
        decide("shell.run", "rm -rf /".into()),
        DecisionEffect::Allow
    );
    let set = load_envelopes(&[(
        "e.yaml",
        "id: e\nversion: 1\ntools:\n  - {id: old-style, effect: deny, tools: [shell.run], args: {/cmd: \"*rm -rf*\"}}\n  - {id: fine, effect: deny, tools: [x], args: {/path: \"**/.env\", /cmd: {text: \"*rm*\"}}}\n",
    )])
    .unwrap();
    let warnings = crate::envelope::slash_warnings(set.get("e").unwrap());
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].contains("e/old-style") && warnings[0].contains("{text:"));
}

#[test]
fn an_argument_kind_is_one_of_text_path_or_url() {
    for (body, expected) in [
        ("{/cmd: {glob: \"*\"}}", "`glob` is not a kind of argument"),
        ("{/cmd: {text: \"*\", path: \"*\"}}", "names one kind"),
        ("{/url: {url: \"src/**\"}}", "E-envelope-url-pattern"),
    ] {
        let yaml =
            format!("id: e\nversion: 1\ntools:\n  - {{effect: deny, tools: [x], args: {body}}}\n");
        let err = load_envelopes(&[("e.yaml", yaml.as_str())]).unwrap_err();
        assert!(err.render().contains(expected), "{body}: {}", err.render());
    }
    // An explicit path reads a URL-looking pattern as a glob, as before kinds.
    let set = load_envelopes(&[(
        "e.yaml",
        "id: e\nversion: 1\ntools:\n  - {effect: allow, tools: [x], args: {/u: {path: \"https://a.b/**\"}}}\n",
    )])
    .unwrap();
    let rule = &set.get("e").unwrap().tools[0];
    assert_eq!(rule.args["/u"].kind(), crate::envelope::ArgKind::Path);
}

#[test]
fn an_envelopes_max_clearance_caps_the_clearance_of_the_runs_it_governs() {
    let yaml = |cap: &str| {
        format!(
            "id: e\nversion: 1\nattach: {{agents: [coder]}}\n{cap}tools:\n  \
             - {{id: any, effect: allow, tools: [\"*\"]}}\n\
             tool_levels:\n  - {{id: prod, tools: [deploy.prod], level: confidential}}\n"
        )
    };
    let decide = |cap: &str| {
        let text = yaml(cap);
        let set = load_envelopes(&[("e.yaml", text.as_str())]).unwrap();
        // The run asked for (and its credential allowed) `confidential`.
        let e = PolicyEngine::new(&set, &subject_facts(&[coder()], &[])).unwrap();
        e.decide_tool("run-42", "deploy.prod", &serde_json::json!({}))
            .effect
    };
    assert_eq!(decide(""), DecisionEffect::Allow);
    assert_eq!(decide("max_clearance: internal\n"), DecisionEffect::Deny);
    assert_eq!(decide("max_clearance: secret\n"), DecisionEffect::Allow);
    let err = load_envelopes(&[("e.yaml", yaml("max_clearance: top\n").as_str())]).unwrap_err();
    assert!(err.render().contains("top"), "{}", err.render());
}
