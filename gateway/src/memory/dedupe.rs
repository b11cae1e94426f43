//! Near-duplicate detection: normalised text (case, punctuation and spacing folded) and the
//! Jaccard similarity of word shingles, so "Run `make db-up` first." and "run make db-up first"
//! are one memory, and a paraphrase that keeps most of the wording strengthens the memory it
//! repeats instead of adding a copy.

use std::collections::{BTreeSet, HashMap};

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
    similarity_normalised(&normalise(a), &normalise(b))
}

/// The memories of one class and scope, indexed to find the one most like a text without
/// comparing it with every one: prefix filtering. Two sets of word pairs with a Jaccard
/// similarity of at least `t` share a pair among the first `|A| - ceil(t|A|) + 1` of each,
/// in any fixed order of pairs (here by a hash), so only memories sharing one of those pairs
/// with the text are compared. The answer is the one a comparison with every memory gives.
#[derive(Debug, Default)]
pub(crate) struct NearIndex {
    /// Each memory's id, normalised text and word pairs (as sorted hashes).
    entries: Vec<(String, String, Vec<u64>)>,
    by_text: HashMap<String, usize>,
    by_prefix: HashMap<u64, Vec<usize>>,
}

impl NearIndex {
    /// Adds memory `id`, which says `text`.
    pub(crate) fn add(&mut self, id: &str, text: &str) {
        let norm = normalise(text);
        let pairs = pair_hashes(&norm);
        let i = self.entries.len();
        for token in &pairs[..prefix_len(pairs.len())] {
            self.by_prefix.entry(*token).or_default().push(i);
        }
        self.by_text.entry(norm.clone()).or_insert(i);
        self.entries.push((id.to_string(), norm, pairs));
    }

    /// The memory most like `text` at or above [`MERGE_SIMILARITY`] (ties: the smallest id).
    pub(crate) fn best(&self, text: &str) -> Option<String> {
        let norm = normalise(text);
        let pairs = pair_hashes(&norm);
        let mut seen: BTreeSet<usize> = BTreeSet::new();
        if let Some(i) = self.by_text.get(&norm) {
            seen.insert(*i);
        }
        for token in &pairs[..prefix_len(pairs.len())] {
            if let Some(found) = self.by_prefix.get(token) {
                seen.extend(found.iter().copied());
            }
        }
        let mut best: Option<(f64, &str)> = None;
        for i in seen {
            let (id, other, other_pairs) = &self.entries[i];
            let s = if norm == *other {
                1.0
            } else {
                jaccard(&pairs, other_pairs)
            };
            if s < MERGE_SIMILARITY {
                continue;
            }
            let better = match best {
                None => true,
                Some((b, bid)) => s > b || (s == b && id.as_str() < bid),
            };
            if better {
                best = Some((s, id.as_str()));
            }
        }
        best.map(|(_, id)| id.to_string())
    }
}

/// The Jaccard similarity of two sorted, deduplicated sets.
fn jaccard(a: &[u64], b: &[u64]) -> f64 {
    let (mut i, mut j, mut shared) = (0, 0, 0usize);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                shared += 1;
                i += 1;
                j += 1;
            }
        }
    }
    let union = a.len() + b.len() - shared;
    if union == 0 {
        0.0
    } else {
        shared as f64 / union as f64
    }
}

/// A normalised text's word pairs as FNV-1a hashes, sorted and deduplicated (equal to the
/// pairs themselves but for a 64-bit hash collision).
fn pair_hashes(normalised: &str) -> Vec<u64> {
    let mut hashes: Vec<u64> = shingles(normalised)
        .into_iter()
        .map(|(a, b)| fnv1a(a, b))
        .collect();
    hashes.sort_unstable();
    hashes.dedup();
    hashes
}

/// How many of `n` pairs (in hash order) prefix filtering indexes: `n - ceil(t·n) + 1`.
fn prefix_len(n: usize) -> usize {
    // A hair below the product, so rounding never shortens the prefix (longer is safe).
    let shared = (MERGE_SIMILARITY * n as f64 - 1e-9).ceil().max(0.0) as usize;
    (n - shared.min(n) + 1).min(n)
}

/// FNV-1a of a word pair (a fixed order of pairs, the same on every machine).
fn fnv1a(a: &str, b: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in a.bytes().chain(std::iter::once(b' ')).chain(b.bytes()) {
        h ^= u64::from(byte);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// [`similarity`] of two texts normalised already.
fn similarity_normalised(a: &str, b: &str) -> f64 {
    if a == b {
        return 1.0;
    }
    let (sa, sb) = (shingles(a), shingles(b));
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
        /// The index finds what comparing with every memory finds.
        #[test]
        fn the_near_index_finds_what_comparing_with_every_memory_finds(
            texts in prop::collection::vec("(alpha|beta|gamma|delta|eps|zeta)( (alpha|beta|gamma|delta|eps|zeta)){0,6}", 0..30),
            probe in "(alpha|beta|gamma|delta|eps|zeta)( (alpha|beta|gamma|delta|eps|zeta)){0,6}",
        ) {
            let mut index = NearIndex::default();
            let mut best: Option<(f64, String)> = None;
            for (i, t) in texts.iter().enumerate() {
                let id = format!("m{i:02}");
                index.add(&id, t);
                let s = similarity(&probe, t);
                if s >= MERGE_SIMILARITY && best.as_ref().is_none_or(|(b, _)| s > *b) {
                    best = Some((s, id));
                }
            }
            prop_assert_eq!(index.best(&probe), best.map(|(_, id)| id));
        }

        #[test]
        fn similarity_is_symmetric_bounded_and_one_on_itself(a in ".{0,60}", b in ".{0,60}") {
            let s = similarity(&a, &b);
            prop_assert!((0.0..=1.0).contains(&s));
            prop_assert_eq!(s, similarity(&b, &a));
            prop_assert_eq!(similarity(&a, &a), 1.0);
        }
    }
}
