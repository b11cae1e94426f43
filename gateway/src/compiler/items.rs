//! The compiler's input: candidate items, compile settings, and the file that holds both
//! (`tollgate compile --items FILE.json`), with the checks that run before anything else.

use std::collections::{BTreeMap, HashMap};
use std::fmt;

use serde::de::value::{MapAccessDeserializer, SeqAccessDeserializer};
use serde::de::{MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};
use tollgate_rules::envelope::Level;
use tollgate_rules::request::{ContextItem, RunSubject};

use super::CompileError;
use super::tokens::{DEFAULT_TOKENIZER, TokenCounter};

/// The token budget when the settings give none.
pub const DEFAULT_BUDGET: u32 = 8_000;

/// What a candidate item is. Its snake_case name is also the `kind` policy sees (envelope data
/// rules match it with `kinds` globs).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    utoipa::ToSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum ItemKind {
    /// A source file.
    File,
    /// A document.
    Doc,
    /// A conversation message (see [`CandidateItem::role`]).
    Message,
    /// The output of a tool call.
    ToolResult,
    /// A retrieved memory.
    Memory,
    /// A summary of earlier context.
    Summary,
}

impl ItemKind {
    /// Every kind, in declaration order.
    pub const ALL: [ItemKind; 6] = [
        ItemKind::File,
        ItemKind::Doc,
        ItemKind::Message,
        ItemKind::ToolResult,
        ItemKind::Memory,
        ItemKind::Summary,
    ];

    /// `file`, `doc`, `message`, `tool_result`, `memory`, `summary`.
    pub fn as_str(self) -> &'static str {
        match self {
            ItemKind::File => "file",
            ItemKind::Doc => "doc",
            ItemKind::Message => "message",
            ItemKind::ToolResult => "tool_result",
            ItemKind::Memory => "memory",
            ItemKind::Summary => "summary",
        }
    }
}

impl fmt::Display for ItemKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One piece of context the compiler may include.
///
/// An item renders its `content`; an item without content renders its `reference` (a path or
/// URL) instead. An item with neither can only appear as its `summary`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CandidateItem {
    /// Unique among the candidates of one compile.
    #[schema(min_length = 1)]
    pub id: String,
    /// What it is.
    pub kind: ItemKind,
    /// The text to include.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// Where the content lives; rendered when there is no `content`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
    /// Its size in tokens. Trusted when given (a caller that already counted, or knows the
    /// size of a referenced file); counted with the settings' tokenizer when absent. A
    /// redacted body is always counted again, since redaction changed it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<u32>,
    /// Importance: with [`Ordering::Weight`], heavier items are chosen first. Finite, `>= 0`.
    #[serde(default = "default_weight")]
    #[schema(minimum = 0)]
    pub weight: f64,
    /// Scope path (`org:acme/repo:api`). Empty when not given, which no scoped data rule
    /// matches (fail closed).
    #[serde(default)]
    pub scope: String,
    /// Sensitivity; `secret` when not given (fail closed).
    #[serde(default = "highest_level")]
    #[schema(schema_with = item_sensitivity)]
    pub sensitivity: Level,
    /// Labels policy reads (`secret`, `pii`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub labels: Vec<String>,
    /// A shorter alternative, used when the full item does not fit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// For messages: `system`, `user`, `assistant`, `tool`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
}

fn item_sensitivity() -> utoipa::openapi::Object {
    crate::schemas::level("Sensitivity; `secret` when not given (fail closed).")
}

fn default_weight() -> f64 {
    1.0
}

fn highest_level() -> Level {
    Level::Secret
}

impl CandidateItem {
    /// An item of `kind` with `content`, weight 1 and no scope, labels or summary.
    pub fn new(id: impl Into<String>, kind: ItemKind, content: impl Into<String>) -> Self {
        CandidateItem {
            id: id.into(),
            kind,
            content: Some(content.into()),
            reference: None,
            tokens: None,
            weight: default_weight(),
            scope: String::new(),
            sensitivity: highest_level(),
            labels: Vec::new(),
            summary: None,
            role: None,
        }
    }

    /// The item as the policy layer sees it.
    pub fn context_item(&self) -> ContextItem {
        ContextItem {
            id: self.id.clone(),
            kind: self.kind.as_str().to_string(),
            scope: self.scope.clone(),
            sensitivity: self.sensitivity,
            labels: self.labels.clone(),
        }
    }

    /// What the item renders in full: its content, else its reference.
    pub(crate) fn body(&self) -> Option<&str> {
        self.content.as_deref().or(self.reference.as_deref())
    }
}

/// The order in which items compete for the budget (and appear in the output).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Ordering {
    /// Heaviest first; equal weights by id (bytes). Independent of the input order.
    #[default]
    Weight,
    /// The input order (a conversation that must stay in sequence).
    Given,
}

/// How to compile.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields, default)]
pub struct CompileSettings {
    /// Tokens the whole compiled text may take, delimiters included.
    pub budget: u32,
    /// Tokens the items of one kind may take together, for the kinds listed.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub kind_budgets: BTreeMap<ItemKind, u32>,
    /// Which items win when not all fit.
    pub order: Ordering,
    /// `o200k_base` (default), `cl100k_base`, or `bytes4` (the fallback: a quarter of the
    /// UTF-8 bytes, rounded up).
    #[schema(schema_with = tokenizers)]
    pub tokenizer: String,
}

fn tokenizers() -> utoipa::openapi::Object {
    crate::schemas::one_of(
        "`o200k_base` (default), `cl100k_base`, or `bytes4` (a quarter of the UTF-8 bytes, rounded up).",
        &["o200k_base", "cl100k_base", "bytes4"],
    )
}

impl Default for CompileSettings {
    fn default() -> Self {
        CompileSettings {
            budget: DEFAULT_BUDGET,
            kind_budgets: BTreeMap::new(),
            order: Ordering::Weight,
            tokenizer: DEFAULT_TOKENIZER.to_string(),
        }
    }
}

/// The candidates and the settings; the format of `tollgate compile --items FILE.json`.
///
/// ```json
/// {"subject": {"run": "run-42", "agent": "coder", "task": "T-12",
///              "scope": "org:acme/repo:api/task:T-12", "clearance": "confidential"},
///  "settings": {"budget": 1000, "kind_budgets": {"file": 300}},
///  "items": [{"id": "msg-1", "kind": "message", "role": "user", "content": "Fix the test"}]}
/// ```
///
/// A bare JSON array of items is read as `{"items": [...]}` with default settings.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CompileInput {
    /// The candidates.
    pub items: Vec<CandidateItem>,
    /// How to compile.
    pub settings: CompileSettings,
    /// The run the context is compiled for: whose envelopes decide what it may see. The
    /// compiler itself ignores it (it takes a [`super::CompilePolicy`]); the command line
    /// builds the policy engine from it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<RunSubject>,
}

/// The object form of [`CompileInput`], read field by field.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CompileInputObject {
    items: Vec<CandidateItem>,
    #[serde(default)]
    settings: CompileSettings,
    #[serde(default)]
    subject: Option<RunSubject>,
}

impl<'de> Deserialize<'de> for CompileInput {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct InputVisitor;
        impl<'de> Visitor<'de> for InputVisitor {
            type Value = CompileInput;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(
                    "an object with `items` (and `settings`, `subject`) or an array of items",
                )
            }

            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<CompileInput, A::Error> {
                let items = Vec::<CandidateItem>::deserialize(SeqAccessDeserializer::new(seq))?;
                Ok(CompileInput {
                    items,
                    settings: CompileSettings::default(),
                    subject: None,
                })
            }

            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<CompileInput, A::Error> {
                let o = CompileInputObject::deserialize(MapAccessDeserializer::new(map))?;
                Ok(CompileInput {
                    items: o.items,
                    settings: o.settings,
                    subject: o.subject,
                })
            }
        }
        deserializer.deserialize_any(InputVisitor)
    }
}

impl CompileInput {
    /// Items with default settings and no subject.
    pub fn new(items: Vec<CandidateItem>) -> Self {
        CompileInput {
            items,
            settings: CompileSettings::default(),
            subject: None,
        }
    }

    /// Checks what [`super::compile`] needs before it starts: the tokenizer exists, ids are
    /// non-empty and unique, weights are finite and not negative, every item has something
    /// to measure or render. The first problem is returned.
    pub fn check(&self) -> Result<(), CompileError> {
        TokenCounter::for_name(&self.settings.tokenizer)?;
        let mut seen: HashMap<&str, usize> = HashMap::with_capacity(self.items.len());
        for (index, item) in self.items.iter().enumerate() {
            if item.id.is_empty() {
                return Err(CompileError::EmptyId { index });
            }
            if let Some(first) = seen.insert(&item.id, index) {
                return Err(CompileError::DuplicateId {
                    id: item.id.clone(),
                    first,
                    second: index,
                });
            }
            if !item.weight.is_finite() || item.weight < 0.0 {
                return Err(CompileError::BadWeight {
                    id: item.id.clone(),
                    weight: item.weight.to_string(),
                });
            }
            if item.content.is_none() && item.reference.is_none() && item.tokens.is_none() {
                return Err(CompileError::NothingToMeasure {
                    id: item.id.clone(),
                });
            }
        }
        Ok(())
    }
}
