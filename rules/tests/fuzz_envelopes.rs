//! Envelopes from generated text (issue 19): token soups in YAML's and the envelope language's
//! vocabulary, byte-level mutations of the fixture envelopes, and any string. Whatever the
//! text, `load_envelopes` returns within a bound, never panics, and fails with at least one
//! diagnostic whose span lies in the text. CI runs `PROPTEST_CASES` (1,000) per property;
//! RELIABILITY.md has the offline figures.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../../tests/fuzz_support/mod.rs"]
mod fuzz_support;

use std::time::Duration;

use proptest::prelude::*;
use tollgate_rules::envelope::load_envelopes;

const BOUND: Duration = Duration::from_secs(5);

const TOKENS: &[&str] = &[
    "id:",
    "version:",
    "extends:",
    "attach:",
    "agents:",
    "tasks:",
    "tools:",
    "data:",
    "models:",
    "memory:",
    "approvals:",
    "tool_levels:",
    "effect:",
    "allow",
    "deny",
    "redact",
    "require_approval",
    "args:",
    "only_named_args:",
    "true",
    "/path:",
    "\"src/../**\"",
    "limit:",
    "rate_limit:",
    "level:",
    "secret",
    "public",
    "scope:",
    "labels:",
    "ttl_seconds:",
    "coder",
    "fs.*",
    "shell.exec",
    "\"*\"",
];

fn token_soup() -> impl Strategy<Value = String> {
    fuzz_support::yaml_soup(TOKENS, 80)
}

/// The fixture envelopes, for mutations.
fn fixtures() -> Vec<&'static str> {
    vec![
        include_str!("../../fixtures/envelopes/coding-agent.yaml"),
        include_str!("../../fixtures/envelopes/org-baseline.yaml"),
    ]
}

fn check(text: String) -> Result<(), TestCaseError> {
    fuzz_support::checked(BOUND, move || {
        match load_envelopes(&[("fuzz.yaml", text.as_str())]) {
            Ok(_) => Ok(()),
            Err(errors) => {
                let len = errors.source.text.len() as u32;
                if errors.diagnostics.is_empty() {
                    return Err("an error without a diagnostic".to_string());
                }
                for d in &errors.diagnostics {
                    if d.span.start > d.span.end || d.span.end > len {
                        return Err(format!("span {:?} outside the text: {d:?}", d.span));
                    }
                }
                let _ = errors.render();
                let _ = errors.located();
                Ok(())
            }
        }
    })
}

proptest! {
    #[test]
    fn any_token_soup_loads_or_fails_with_spans_in_the_text(text in token_soup()) {
        check(text)?;
    }

    #[test]
    fn a_mutated_fixture_loads_or_fails_with_spans_in_the_text(text in fuzz_support::mutated(fixtures())) {
        check(text)?;
    }

    #[test]
    fn any_string_loads_or_fails_with_spans_in_the_text(text in ".{0,200}") {
        check(text)?;
    }
}
