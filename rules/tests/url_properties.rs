//! The URL matcher held to the parser (issue 32, hole 3): whatever string an agent sends, an
//! allow under `https://*.example.com/**` means a WHATWG parser (the `url` crate) reads it as
//! an `https` URL on the default port whose host is a subdomain of `example.com`, and a path
//! under `/v1/public/` that does not climb out of it.
//!
//! `PROPTEST_CASES` sets the number of cases (256 when unset; CI sets 1000).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use proptest::prelude::*;
use tollgate_rules::decide::{DecisionEffect, PolicyEngine};
use tollgate_rules::envelope::{Level, load_envelopes};
use tollgate_rules::request::{RunSubject, subject_facts};

fn engine() -> PolicyEngine {
    let set = load_envelopes(&[(
        "e.yaml",
        "id: e\nversion: 1\nattach: {agents: [agent]}\ntools:\n  \
         - {id: web, effect: allow, tools: [http.get], args: {/url: \"https://*.example.com/**\"}}\n  \
         - {id: api, effect: allow, tools: [api.get], args: {/url: \"https://api.acme.dev/v1/public/**\"}}\n",
    )])
    .unwrap();
    let run = RunSubject {
        run: "r".into(),
        agent: "agent".into(),
        task: "t".into(),
        scope: "org:acme".into(),
        clearance: Level::Internal,
    };
    PolicyEngine::new(&set, &subject_facts(&[run], &[])).unwrap()
}

/// URLs built from the pieces the red team used: hosts, separators a parser reads differently
/// from a glob, and suffixes that spell the allowed domain.
fn hostile_url() -> impl Strategy<Value = String> {
    let scheme = prop::sample::select(vec!["https", "HTTPS", "http", "hTtPs"]);
    let user = prop::sample::select(vec!["", "user@", "a:b@", "api.example.com@"]);
    let host = prop::sample::select(vec![
        "api.example.com",
        "evil.com",
        "example.com",
        "evilexample.com",
        "2130706433",
        "127.0.0.1",
        "[::1]",
        "a.example.com.evil.com",
        "API.EXAMPLE.COM",
        "xn--e1a.example.com",
    ]);
    let sep = prop::sample::select(vec![
        "", "#", "?", "\\", "/", "%2f", "\t", ":443", ":8443", "%00", "@", ";", "%23", "..",
    ]);
    let tail = prop::sample::select(vec![
        "",
        ".example.com",
        ".example.com/x",
        "example.com/",
        "/x",
        "/../x",
        "/%2e%2e/x",
    ]);
    (scheme, user, host, sep, tail).prop_map(|(s, u, h, p, t)| format!("{s}://{u}{h}{p}{t}"))
}

fn allowed_host_is_a_subdomain(v: &str) -> bool {
    let Ok(parsed) = url::Url::parse(v) else {
        return false;
    };
    parsed.scheme() == "https"
        && parsed.port().is_none()
        && parsed
            .host_str()
            .is_some_and(|h| h.ends_with(".example.com"))
}

fn allowed_path_stays_public(v: &str) -> bool {
    let Ok(parsed) = url::Url::parse(v) else {
        return false;
    };
    parsed.scheme() == "https"
        && parsed.host_str() == Some("api.acme.dev")
        && parsed.port().is_none()
        && parsed.path().starts_with("/v1/public/")
}

proptest! {
    #[test]
    fn an_allowed_url_is_on_an_allowed_host_as_the_parser_reads_it(
        v in prop_oneof![hostile_url(), "\\PC{0,40}", "https://[a-z.#?@\\\\]{0,20}\\.example\\.com/[a-z]{0,4}"]
    ) {
        let e = engine();
        let d = e.decide_tool("r", "http.get", &serde_json::json!({ "url": v }));
        if d.effect == DecisionEffect::Allow {
            prop_assert!(allowed_host_is_a_subdomain(&v), "allowed {v:?}");
        }
    }

    #[test]
    fn an_allowed_url_stays_under_the_allowed_path_as_the_parser_reads_it(
        path in prop::collection::vec(
            prop::sample::select(vec![
                "a", "..", ".", "%2e%2e", "%2E.", ".%2e", "%252e%252e", "..%2f", "..\\", "\t", "%09",
                "..;", ".. ", "%00", "?", "#", "b.json",
            ]),
            0..6,
        )
    ) {
        let v = format!("https://api.acme.dev/v1/public/{}", path.join("/"));
        let e = engine();
        let d = e.decide_tool("r", "api.get", &serde_json::json!({ "url": v }));
        if d.effect == DecisionEffect::Allow {
            prop_assert!(allowed_path_stays_public(&v), "allowed {v:?}");
        }
    }
}

#[test]
fn subdomains_are_allowed_and_lookalikes_are_not() {
    let e = engine();
    let decide = |v: &str| {
        e.decide_tool("r", "http.get", &serde_json::json!({ "url": v }))
            .effect
    };
    assert_eq!(
        decide("https://api.example.com/x"),
        DecisionEffect::Allow,
        "the property is not vacuous"
    );
    assert_eq!(
        decide("https://evil.com#.example.com/x"),
        DecisionEffect::Deny
    );
}
