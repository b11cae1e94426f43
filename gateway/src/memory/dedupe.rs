//! Near-duplicate detection: normalised text (case, punctuation and spacing folded) and the
//! Jaccard similarity of word shingles, so "Run `make db-up` first." and "run make db-up first"
//! are one memory, and a paraphrase that keeps most of the wording strengthens the memory it
//! repeats instead of adding a copy.

use std::collections::BTreeSet;

/// At or above this similarity, two memories of one class and scope say the same thing.
pub const MERGE_SIMILARITY: f64 = 0.6;

/// `text` lowercased, every run of characters other than letters and digits one space.
pub fn normalise(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut gap = false;
    for c in text.chars() {
        if c.is_alphanumeric() {
            if gap && !out.is_empty() {
                out.push(' ');
            }
            gap = false;
            out.extend(c.to_lowercase());
        } else {
            gap = true;
        }
    }
    out
}

/// The word pairs of a normalised text (its single word when it has one).
fn shingles(normalised: &str) -> BTreeSet<(&str, &str)> {
    let words: Vec<&str> = normalised.split(' ').filter(|w| !w.is_empty()).collect();
    match words.as_slice() {
        [] => BTreeSet::new(),
        [one] => BTreeSet::from([(*one, "")]),
        _ => words.windows(2).map(|w| (w[0], w[1])).collect(),
    }
}

/// How alike two texts are, from 0 (nothing shared) to 1 (the same once normalised): the
/// Jaccard similarity of their word pairs.
pub fn similarity(a: &str, b: &str) -> f64 {
    let (a, b) = (normalise(a), normalise(b));
    if a == b {
        return 1.0;
    }
    let (sa, sb) = (shingles(&a), shingles(&b));
    let union = sa.union(&sb).count();
    if union == 0 {
        return 0.0;
    }
    sa.intersection(&sb).count() as f64 / union as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn punctuation_case_and_spacing_do_not_make_a_new_memory() {
        assert_eq!(
            normalise("Run `make db-up`  first."),
            normalise("run make db up first")
        );
        assert_eq!(
            similarity("Run `make db-up` first.", "run make db-up FIRST"),
            1.0
        );
    }

    #[test]
    fn a_paraphrase_keeping_most_words_is_similar_and_another_statement_is_not() {
        let a = "name regression tests after the ticket, like t101_get_unknown_user_is_404";
        let b = "regression tests are named after the ticket like t101_get_unknown_user_is_404";
        let c = "keep handlers thin; parsing goes in its own module";
        assert!(similarity(a, b) >= 0.4, "{}", similarity(a, b));
        assert!(similarity(a, c) < 0.1);
    }

    proptest! {
        #[test]
        fn similarity_is_symmetric_bounded_and_one_on_itself(a in ".{0,60}", b in ".{0,60}") {
            let s = similarity(&a, &b);
            prop_assert!((0.0..=1.0).contains(&s));
            prop_assert_eq!(s, similarity(&b, &a));
            prop_assert_eq!(similarity(&a, &a), 1.0);
        }
    }
}
