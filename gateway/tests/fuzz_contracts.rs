//! Handoff contracts from generated text (issue 19): byte-level mutations of the shipped
//! templates, token soups in the contract's vocabulary, and any string. Whatever the text,
//! `handoff::contract::parse` returns within a bound, never panics, and a refusal names at
//! least one fault, each with a line inside the text when it has one. CI runs
//! `PROPTEST_CASES` (1,000) per property; RELIABILITY.md has the offline figures.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../../tests/fuzz_support/mod.rs"]
mod fuzz_support;

use std::time::Duration;

use proptest::prelude::*;
use tollgate_gateway::handoff::contract::parse;

const BOUND: Duration = Duration::from_secs(5);

const TEMPLATES: &[&str] = &[
    include_str!("../src/handoff/templates/research_to_implementation.yaml"),
    include_str!("../src/handoff/templates/code_patch_review.yaml"),
    include_str!("../src/handoff/templates/lightweight.yaml"),
    include_str!("../src/handoff/templates/planner_to_executor.yaml"),
];

const TOKENS: &[&str] = &[
    "schema: tollgate.handoff/v1",
    "template:",
    "goal:",
    "producer:",
    "consumer:",
    "run:",
    "agent:",
    "evidence:",
    "constraints:",
    "required_outputs:",
    "success_criteria:",
    "deadline:",
    "extensions:",
    "scope:",
    "sensitivity:",
    "secret",
    "{\"goal\": ",
    "\"x\"",
];

fn check(text: String) -> Result<(), TestCaseError> {
    let lines = text.lines().count().max(1);
    fuzz_support::checked(BOUND, move || match parse(&text) {
        Ok(_) => Ok(()),
        Err(faults) => {
            if faults.0.is_empty() {
                return Err("a refusal without a fault".to_string());
            }
            for f in &faults.0 {
                if f.line.is_some_and(|l| l == 0 || l > lines + 1) {
                    return Err(format!(
                        "line {:?} outside the text's {lines}: {f:?}",
                        f.line
                    ));
                }
            }
            Ok(())
        }
    })
}

proptest! {
    #[test]
    fn a_mutated_template_parses_or_names_its_faults(text in fuzz_support::mutated(TEMPLATES.to_vec())) {
        check(text)?;
    }

    #[test]
    fn any_token_soup_parses_or_names_its_faults(
        text in fuzz_support::yaml_soup(TOKENS, 60)
    ) {
        check(text)?;
    }

    #[test]
    fn any_string_parses_or_names_its_faults(text in ".{0,200}") {
        check(text)?;
    }
}
