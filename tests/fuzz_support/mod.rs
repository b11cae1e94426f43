//! What the parser fuzzers share (issue 19): a watchdog that turns a panic or a hang into a
//! failed case, text mutated a few characters at a time, and token soups of YAML with a
//! format's own words. Included by path from each crate's fuzz test
//! (`engine/tests/fuzz_parse.rs`, `rules/tests/fuzz_envelopes.rs`,
//! `gateway/tests/fuzz_{contracts,imports,packs}.rs`); not every one uses every part.
#![allow(dead_code)]

use std::sync::mpsc;
use std::time::Duration;

use proptest::prelude::*;

/// Runs `check` on a thread of its own: its `Err`, a panic, or no answer within `bound` fails
/// the case, with proptest's shrunk input.
pub fn checked(
    bound: Duration,
    check: impl FnOnce() -> Result<(), String> + Send + 'static,
) -> Result<(), TestCaseError> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(check());
    });
    match rx.recv_timeout(bound) {
        Ok(outcome) => outcome.map_err(TestCaseError::fail),
        Err(mpsc::RecvTimeoutError::Timeout) => {
            Err(TestCaseError::fail(format!("no answer within {bound:?}")))
        }
        Err(mpsc::RecvTimeoutError::Disconnected) => Err(TestCaseError::fail("panicked")),
    }
}

/// YAML's punctuation, indentation, anchors, tags, scalars that parse as numbers or null, and
/// characters a reader must cope with: the part of every YAML token soup that is not a
/// format's own vocabulary.
pub const YAML_TOKENS: &[&str] = &[
    "-",
    "- ",
    ":",
    ": ",
    "{",
    "}",
    "[",
    "]",
    ",",
    "\n",
    "\n  ",
    "\n    ",
    "  ",
    "\t",
    "'",
    "\"",
    "&a",
    "*a",
    "<<:",
    "!!str",
    "!tag",
    "---",
    "...",
    "#",
    "|",
    ">",
    "?",
    "%YAML 1.2",
    "1",
    "-1",
    "2.5",
    "1e400",
    "null",
    "~",
    "true",
    "é",
    "\u{0}",
    "\u{1b}",
    "\u{feff}",
    "\\",
];

/// Up to `most` tokens, drawn from a format's `vocabulary` and [`YAML_TOKENS`], end to end.
pub fn yaml_soup(
    vocabulary: &'static [&'static str],
    most: usize,
) -> impl Strategy<Value = String> {
    let tokens: Vec<&'static str> = vocabulary.iter().chain(YAML_TOKENS).copied().collect();
    prop::collection::vec(prop::sample::select(tokens), 0..most).prop_map(|t| t.concat())
}

/// One of `texts` with one to five characters replaced, inserted or removed.
pub fn mutated(texts: Vec<&'static str>) -> impl Strategy<Value = String> {
    (
        prop::sample::select(texts),
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
