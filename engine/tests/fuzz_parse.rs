//! Rule programs from generated text (issue 19): token soups in Datalog's vocabulary and
//! byte-level mutations of the built-in packs. Whatever the text, `Program::compile` returns
//! within a bound, never panics, and every diagnostic's span lies in the text and renders.
//! CI runs `PROPTEST_CASES` (1,000) per property; RELIABILITY.md has the offline figures
//! (`PROPTEST_CASES=1000000 cargo test --release -p tollgate-engine --test fuzz_parse`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::mpsc;
use std::time::Duration;

use proptest::prelude::*;
use tollgate_engine::{Program, Source};

/// Longest a parse may take before the input counts as a hang.
const BOUND: Duration = Duration::from_secs(5);

/// Runs `f` on a thread of its own: a panic or a hang fails the property with the input.
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

/// A built-in pack with a few bytes replaced, inserted or removed.
fn mutated_pack() -> impl Strategy<Value = String> {
    let packs: Vec<&'static str> = vec![
        include_str!("../../rules/packs/envelopes.dl"),
        include_str!("../../rules/packs/memory.dl"),
        include_str!("../../rules/packs/scope.dl"),
    ];
    (
        prop::sample::select(packs),
        prop::collection::vec((any::<prop::sample::Index>(), 0u8..3, any::<char>()), 1..6),
    )
        .prop_map(|(pack, edits)| {
            let mut chars: Vec<char> = pack.chars().collect();
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
    let len = text.len() as u32;
    let outcome = within(move || {
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
    });
    match outcome {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) | Err(e) => Err(TestCaseError::fail(e)),
    }
}

proptest! {
    #[test]
    fn any_token_soup_compiles_or_fails_with_spans_in_the_text(text in token_soup()) {
        check(text)?;
    }

    #[test]
    fn a_mutated_pack_compiles_or_fails_with_spans_in_the_text(text in mutated_pack()) {
        check(text)?;
    }

    #[test]
    fn any_string_compiles_or_fails_with_spans_in_the_text(text in ".{0,200}") {
        check(text)?;
    }
}
