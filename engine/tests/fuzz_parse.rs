//! Rule programs from generated text (issue 19): token soups in Datalog's vocabulary and
//! byte-level mutations of the built-in packs. Whatever the text, `Program::compile` returns
//! within a bound, never panics, and every diagnostic's span lies in the text and renders.
//! CI runs `PROPTEST_CASES` (1,000) per property; RELIABILITY.md has the offline figures
//! (`PROPTEST_CASES=1000000 cargo test --release -p tollgate-engine --test fuzz_parse`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../../tests/fuzz_support/mod.rs"]
mod fuzz_support;

use std::time::Duration;

use proptest::prelude::*;
use tollgate_engine::{Program, Source};

/// Longest a parse may take before the input counts as a hang.
const BOUND: Duration = Duration::from_secs(5);

const TOKENS: &[&str] = &[
    "edge",
    "path",
    "p",
    "q",
    "X",
    "Y",
    "_",
    "Z1",
    "(",
    ")",
    ",",
    ".",
    ":-",
    "!",
    ";",
    "=",
    "!=",
    "<",
    "<=",
    ">",
    "+",
    "-",
    "*",
    "/",
    "\"s\"",
    "\"",
    "1",
    "-7",
    "9999999999999999999",
    ".decl",
    ".input",
    ".output",
    "symbol",
    "number",
    "float",
    ":",
    "count",
    "sum",
    "min",
    "max",
    "{",
    "}",
    "//",
    "/*",
    "*/",
    "\n",
    " ",
    "\t",
    "\\",
    "é",
    "\u{0}",
    "\u{1b}",
    "glob",
    "#",
    "@",
    "0.5",
    "nan",
];

fn token_soup() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(TOKENS), 0..80).prop_map(|t| t.join(" "))
}

/// The built-in packs, for mutations.
fn packs() -> Vec<&'static str> {
    vec![
        include_str!("../../rules/packs/envelopes.dl"),
        include_str!("../../rules/packs/memory.dl"),
        include_str!("../../rules/packs/scope.dl"),
    ]
}

fn check(text: String) -> Result<(), TestCaseError> {
    let len = text.len() as u32;
    fuzz_support::checked(BOUND, move || {
        let source = Source::new("fuzz.dl", text);
        match Program::compile(&source) {
            Ok(_) => Ok(()),
            Err(diagnostics) => {
                for d in &diagnostics {
                    if d.span.start > d.span.end || d.span.end > len {
                        return Err(format!("span {:?} outside the text: {d:?}", d.span));
                    }
                    let _ = d.render(&source);
                }
                if diagnostics.is_empty() {
                    return Err("an error without a diagnostic".into());
                }
                Ok(())
            }
        }
    })
}

proptest! {
    #[test]
    fn any_token_soup_compiles_or_fails_with_spans_in_the_text(text in token_soup()) {
        check(text)?;
    }

    #[test]
    fn a_mutated_pack_compiles_or_fails_with_spans_in_the_text(text in fuzz_support::mutated(packs())) {
        check(text)?;
    }

    #[test]
    fn any_string_compiles_or_fails_with_spans_in_the_text(text in ".{0,200}") {
        check(text)?;
    }
}
