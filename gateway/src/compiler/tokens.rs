//! Token counting: OpenAI's BPE vocabularies through `tiktoken-rs`, or the documented
//! fallback `bytes4`.
//!
//! A vocabulary is parsed from the data embedded in `tiktoken-rs` the first time it is used
//! (o200k_base: about 200,000 ranks, on the order of 100 ms) and kept for the life of the
//! process; every later count is a plain encode. Special-token text such as `<|endoftext|>`
//! in an item is counted as ordinary text: items are data, never control tokens.
//!
//! `bytes4` counts `ceil(bytes / 4)`, the usual rule of thumb for English text with BPE
//! vocabularies. It is used only when asked for by name, never as a silent substitute when a
//! vocabulary fails to load: the count decides what is included, so a silent switch would
//! change the compiled bytes from one machine to another.

use std::sync::OnceLock;

use tiktoken_rs::CoreBPE;

use super::CompileError;

/// The tokenizer when the settings name none (GPT-4o and later).
pub const DEFAULT_TOKENIZER: &str = "o200k_base";

/// The name of the fallback counter: a quarter of the UTF-8 bytes, rounded up.
pub const BYTES4: &str = "bytes4";

/// Every tokenizer name the compiler accepts.
pub const TOKENIZERS: [&str; 3] = [DEFAULT_TOKENIZER, "cl100k_base", BYTES4];

/// A loaded counter.
#[derive(Clone, Copy)]
pub(crate) enum TokenCounter {
    /// A BPE vocabulary, loaded once per process.
    Bpe(&'static CoreBPE),
    /// `ceil(bytes / 4)`.
    Bytes4,
}

impl std::fmt::Debug for TokenCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TokenCounter::Bpe(_) => f.write_str("Bpe"),
            TokenCounter::Bytes4 => f.write_str("Bytes4"),
        }
    }
}

type Loaded = OnceLock<Result<CoreBPE, String>>;

fn load(
    name: &str,
    cell: &'static Loaded,
    make: fn() -> Result<CoreBPE, String>,
) -> Result<TokenCounter, CompileError> {
    match cell.get_or_init(make) {
        Ok(bpe) => Ok(TokenCounter::Bpe(bpe)),
        Err(message) => Err(CompileError::TokenizerLoad {
            name: name.to_string(),
            message: message.clone(),
        }),
    }
}

fn o200k() -> Result<CoreBPE, String> {
    tiktoken_rs::o200k_base().map_err(|e| e.to_string())
}

fn cl100k() -> Result<CoreBPE, String> {
    tiktoken_rs::cl100k_base().map_err(|e| e.to_string())
}

impl TokenCounter {
    /// The counter called `name`, loading its vocabulary on first use.
    pub(crate) fn for_name(name: &str) -> Result<TokenCounter, CompileError> {
        static O200K: Loaded = OnceLock::new();
        static CL100K: Loaded = OnceLock::new();
        match name {
            "o200k_base" => load(name, &O200K, o200k),
            "cl100k_base" => load(name, &CL100K, cl100k),
            BYTES4 => Ok(TokenCounter::Bytes4),
            _ => Err(CompileError::UnknownTokenizer {
                name: name.to_string(),
            }),
        }
    }

    /// Tokens in `text` (saturating at `u32::MAX`). A BPE count of a text of
    /// [`MEMO_MIN_BYTES`] or more is remembered (see [`memo`]).
    pub(crate) fn count(self, text: &str) -> u32 {
        let n = match self {
            TokenCounter::Bpe(bpe) if text.len() >= MEMO_MIN_BYTES => {
                return memo(bpe, text);
            }
            TokenCounter::Bpe(bpe) => bpe.count_ordinary(text),
            TokenCounter::Bytes4 => text.len().div_ceil(4),
        };
        u32::try_from(n).unwrap_or(u32::MAX)
    }
}

/// Texts shorter than this are counted every time (hashing them costs about as much).
pub(crate) const MEMO_MIN_BYTES: usize = 48;

/// The most counts remembered; when full, the memo starts again empty.
const MEMO_CAPACITY: usize = 65_536;

/// Remembered BPE counts, by vocabulary and the blake3 of the text.
type Memo = std::sync::Mutex<std::collections::HashMap<(usize, [u8; 32]), u32>>;

/// The count of `text` under `bpe`, remembered. Every compile of a run measures the items the
/// run offered so far, most of them as before, so one run recounts the same blocks step after
/// step (and a counterfactual replay, across scenarios). A count is a pure function of the
/// vocabulary and the text, so remembering it changes no result; the key is the vocabulary's
/// address (each is loaded once per process) and the text's hash.
fn memo(bpe: &'static CoreBPE, text: &str) -> u32 {
    static MEMO: OnceLock<Memo> = OnceLock::new();
    let memo = MEMO.get_or_init(Default::default);
    let key = (
        std::ptr::from_ref(bpe) as usize,
        *blake3::hash(text.as_bytes()).as_bytes(),
    );
    if let Some(n) = memo.lock().ok().and_then(|m| m.get(&key).copied()) {
        return n;
    }
    let n = u32::try_from(bpe.count_ordinary(text)).unwrap_or(u32::MAX);
    if let Ok(mut m) = memo.lock() {
        if m.len() >= MEMO_CAPACITY {
            m.clear();
        }
        m.insert(key, n);
    }
    n
}

/// Tokens in `text` under the tokenizer called `name` (see [`TOKENIZERS`]).
pub fn count_tokens(name: &str, text: &str) -> Result<u32, CompileError> {
    Ok(TokenCounter::for_name(name)?.count(text))
}
