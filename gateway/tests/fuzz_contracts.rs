//! Handoff contracts from generated text (issue 19): byte-level mutations of the shipped
//! templates, token soups in the contract's vocabulary, and any string. Whatever the text,
//! `handoff::contract::parse` returns within a bound, never panics, and a refusal names at
//! least one fault, each with a line inside the text when it has one. CI runs
//! `PROPTEST_CASES` (1,000) per property; RELIABILITY.md has the offline figures.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::mpsc;
use std::time::Duration;

use proptest::prelude::*;
use tollgate_gateway::handoff::contract::parse;

const BOUND: Duration = Duration::from_secs(5);

fn within<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Result<T, String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(BOUND).map_err(|e| match e {
        mpsc::RecvTimeoutError::Timeout => format!("no answer within {BOUND:?}"),
        mpsc::RecvTimeoutError::Disconnected => "panicked".to_string(),
    })
}

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
    "\n",
    "\n  ",
    "- ",
    ": ",
    "{",
    "}",
    "[",
    "]",
    "\"",
    "'",
    "&a",
    "*a",
    "---",
    "#",
    "1",
    "-1",
    "1e999",
    "null",
    "é",
    "\u{0}",
    "\u{1b}",
    "\u{feff}",
    "{\"goal\": ",
    "\"x\"",
    ",",
];

fn mutated_template() -> impl Strategy<Value = String> {
    (
        prop::sample::select(TEMPLATES),
        prop::collection::vec((any::<prop::sample::Index>(), 0u8..3, any::<char>()), 1..6),
    )
        .prop_map(|(text, edits)| {
            let mut chars: Vec<char> = text.chars().collect();
            for (at, kind, c) in edits {
                if chars.is_empty() {
                    break;
                }
                let i = at.index(chars.len());
                match kind {
                    0 => chars[i] = c,
                    1 => chars.insert(i, c),
                    _ => {
                        chars.remove(i);
                    }
                }
            }
            chars.into_iter().collect()
        })
}

fn check(text: String) -> Result<(), TestCaseError> {
    let lines = text.lines().count().max(1);
    let outcome = within(move || match parse(&text) {
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
    });
    match outcome {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) | Err(e) => Err(TestCaseError::fail(e)),
    }
}

proptest! {
    #[test]
    fn a_mutated_template_parses_or_names_its_faults(text in mutated_template()) {
        check(text)?;
    }

    #[test]
    fn any_token_soup_parses_or_names_its_faults(
        text in prop::collection::vec(prop::sample::select(TOKENS), 0..60).prop_map(|t| t.concat())
    ) {
        check(text)?;
    }

    #[test]
    fn any_string_parses_or_names_its_faults(text in ".{0,200}") {
        check(text)?;
    }
}
