//! Evaluators: one interface ([`Evaluator`]) for everything that judges an output — replay
//! scoring and regression assertions alike — and the first deterministic evaluators, built from
//! a declarative [`AssertionSpec`] (YAML or JSON, tagged by `kind`).
//!
//! | kind | passes when |
//! |---|---|
//! | `json_path_equals` | the JSONPath selects exactly one node, equal to `value` |
//! | `contains` | the text (or, with `path`, any string the path selects) contains `text` |
//! | `regex` | the text (or, with `path`, any string the path selects) matches `pattern` |
//! | `json_schema` | the output (or, with `path`, every node the path selects) is valid |
//! | `tool_path` | the tools called match `expected` (`exact`, `subsequence` or `set`) |
//! | `llm_judge` | a model judges that the output meets `rubric` (off unless `TOLLGATE_LLM_JUDGE=on`: [`judge`]) |
//!
//! **What `contains` and `regex` read.** Without `path`, the subject's `text` when it has one,
//! else its `output` rendered as compact JSON. With `path`, every *string* the path selects
//! (other nodes are skipped); the assertion passes if any of them matches, so
//! `$.messages[*].content` asks "does some message say this".
//!
//! **Paths** are JSONPath queries (RFC 9535, `serde_json_path`) that start at `$` and are
//! evaluated against `output`. **Schemas** are JSON Schema (draft detected from `$schema`,
//! 2020-12 by default) with `format` asserted; they are compiled offline: a `$ref` to another
//! document (`https://...`, `file:...`) is a build error, not a fetch — put the referenced
//! schema under `$defs` instead.
//!
//! Every spec is validated when it is built ([`AssertionSpec::build`]): a bad path, pattern or
//! schema is an [`EvaluatorError`] before anything is judged. Evaluation is deterministic: no
//! clock, no I/O, and the same subject always gives the same outcome and message — except the
//! optional LLM judge, which asks a model and is as deterministic as its provider. The
//! evaluators here are pass/fail, so their score is `1.0` or `0.0`; graded evaluators (the
//! judge, replay's metrics) use the range in between.

mod json_path;
pub mod judge;
mod schema;
mod text;
mod tool_path;

use serde::{Deserialize, Serialize};

pub use json_path::JsonPathEquals;
pub use judge::{Judge, LlmJudge};
pub use schema::JsonSchemaValid;
pub use text::{Contains, RegexMatch};
pub use tool_path::{ToolPathMatch, ToolPathMode};

/// Judges one subject. Implementations are deterministic and cheap to share across threads.
pub trait Evaluator: Send + Sync {
    /// A short label naming the evaluator and what it looks at (`contains($.answer)`).
    fn name(&self) -> &str;
    /// Judges `subject`. Never fails: a subject that does not fit is a failed outcome whose
    /// message says why.
    fn evaluate(&self, subject: &EvalSubject) -> EvalOutcome;
}

/// What is judged: a model output, a run summary, a replayed step.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EvalSubject {
    /// The structured thing judged; paths are evaluated against it.
    #[serde(default)]
    pub output: serde_json::Value,
    /// Its text, when it has one (a model's reply); `contains` and `regex` without a path
    /// read it instead of the rendered `output`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// The names of the tools called, in call order.
    #[serde(default)]
    pub tool_path: Vec<String>,
}

impl EvalSubject {
    /// A subject with only an output.
    pub fn from_output(output: serde_json::Value) -> EvalSubject {
        EvalSubject {
            output,
            ..EvalSubject::default()
        }
    }

    /// A subject with only a text.
    pub fn from_text(text: impl Into<String>) -> EvalSubject {
        EvalSubject {
            text: Some(text.into()),
            ..EvalSubject::default()
        }
    }

    /// The same subject with these tool calls.
    pub fn with_tool_path<S: Into<String>>(
        mut self,
        tools: impl IntoIterator<Item = S>,
    ) -> EvalSubject {
        self.tool_path = tools.into_iter().map(Into::into).collect();
        self
    }
}

/// The verdict of one evaluator on one subject.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvalOutcome {
    /// The evaluator's [`Evaluator::name`].
    pub evaluator: String,
    /// Whether the subject passed.
    pub passed: bool,
    /// How well it did, from `0.0` to `1.0`.
    pub score: f64,
    /// What was expected and what was found.
    pub message: String,
    /// The quantity measured, for an evaluator that measures one (tokens, milliseconds, a
    /// share): what a replay compares between baseline and replay. Absent for a pass/fail
    /// check.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<f64>,
}

impl EvalOutcome {
    /// A pass with score `1.0`.
    pub fn pass(evaluator: &str, message: impl Into<String>) -> EvalOutcome {
        EvalOutcome {
            evaluator: evaluator.to_string(),
            passed: true,
            score: 1.0,
            message: message.into(),
            value: None,
        }
    }

    /// A graded outcome: `score` (clamped to `0.0..=1.0`) measuring `value`; passed when the
    /// score is `1.0`.
    pub fn measured(
        evaluator: &str,
        score: f64,
        value: f64,
        message: impl Into<String>,
    ) -> EvalOutcome {
        let score = if score.is_finite() {
            score.clamp(0.0, 1.0)
        } else {
            0.0
        };
        EvalOutcome {
            evaluator: evaluator.to_string(),
            passed: score >= 1.0,
            score,
            message: message.into(),
            value: Some(value),
        }
    }

    /// A failure with score `0.0`.
    pub fn fail(evaluator: &str, message: impl Into<String>) -> EvalOutcome {
        EvalOutcome {
            evaluator: evaluator.to_string(),
            passed: false,
            score: 0.0,
            message: message.into(),
            value: None,
        }
    }
}

/// A spec that cannot become an evaluator.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EvaluatorError {
    /// The JSONPath does not parse.
    #[error(
        "`{path}` is not a valid JSONPath: {reason}\n  help: paths follow RFC 9535 and start at the root `$`, for example `$.answer`, `$.items[0].name` or `$.messages[*].content`"
    )]
    BadJsonPath {
        /// The path as written.
        path: String,
        /// The parser's complaint.
        reason: String,
    },
    /// The regular expression does not compile.
    #[error(
        "`{pattern}` is not a valid regular expression: {reason}\n  help: the syntax is the `regex` crate's (no look-around or backreferences); escape `.`, `(`, `[`, `{{`, `*`, `+`, `?` and `|` with `\\` to match them literally, and prefix `(?i)` to ignore case"
    )]
    BadRegex {
        /// The pattern as written.
        pattern: String,
        /// The compiler's complaint.
        reason: String,
    },
    /// The JSON schema is not a valid schema, or refers to a document it cannot load.
    #[error(
        "the JSON schema is not valid: {reason}\n  help: check it against its draft's meta-schema (2020-12 unless `$schema` says otherwise); remote `$ref`s are not fetched, so put referenced schemas under `$defs` and refer to them as `#/$defs/NAME`"
    )]
    BadSchema {
        /// The compiler's complaint.
        reason: String,
    },
    /// The `contains` text is empty, which every string contains.
    #[error(
        "a `contains` assertion needs a non-empty `text`\n  help: an empty text matches everything; use `json_path_equals` or `json_schema` to check that a value exists"
    )]
    EmptyNeedle,
    /// An `llm_judge` rubric is empty.
    #[error(
        "an `llm_judge` assertion needs a `rubric`\n  help: write what the output must do in a sentence or two, e.g. `the answer names the failing test and proposes a fix`"
    )]
    EmptyRubric,
    /// An `llm_judge` threshold outside 0 to 1.
    #[error(
        "`threshold` is {threshold}; it runs from 0 to 1\n  help: the judge scores from 0 (fails the rubric) to 1 (meets it); leave `threshold` out to take the judge's own pass or fail"
    )]
    BadThreshold {
        /// The threshold as written.
        threshold: f64,
    },
    /// An `llm_judge` assertion judged with the judge off.
    #[error(
        "the LLM judge is off, so this `llm_judge` assertion cannot be judged\n  help: set `TOLLGATE_LLM_JUDGE=on` and a provider (`TOLLGATE_PROVIDER`, as for live replays) to judge with a model; `TOLLGATE_LLM_JUDGE_MODEL` picks the model"
    )]
    JudgeOff,
    /// The judge's settings are wrong.
    #[error(
        "the LLM judge cannot start: {reason}\n  help: `TOLLGATE_LLM_JUDGE=on` turns it on; the provider is the one `TOLLGATE_PROVIDER` configures"
    )]
    JudgeSetting {
        /// What is wrong.
        reason: String,
    },
}

/// A declarative assertion, as written in a regression suite or a replay's scoring config.
/// Deserialised from `{"kind": "contains", "text": "..."}` and the like.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum AssertionSpec {
    /// The path selects exactly one node, equal to `value` (numbers compare by value, so `1`
    /// equals `1.0`).
    JsonPathEquals {
        /// A JSONPath query into the output.
        path: String,
        /// The expected value.
        value: serde_json::Value,
    },
    /// The text, or any string the path selects, contains `text`.
    Contains {
        /// Where to look; without it, the subject's text (or its output as compact JSON).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        path: Option<String>,
        /// The text to find.
        text: String,
        /// Whether case matters (default `true`).
        #[serde(default = "yes")]
        case_sensitive: bool,
    },
    /// The text, or any string the path selects, matches `pattern` (unanchored: add `^` and
    /// `$` to match a whole string).
    Regex {
        /// Where to look; without it, the subject's text (or its output as compact JSON).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        path: Option<String>,
        /// The regular expression (`regex` crate syntax).
        pattern: String,
    },
    /// The output, or every node the path selects (at least one), is valid against `schema`.
    JsonSchema {
        /// Which nodes to validate; without it, the whole output.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        path: Option<String>,
        /// The JSON schema.
        schema: serde_json::Value,
    },
    /// The tools called match `expected`.
    ToolPath {
        /// Tool names.
        expected: Vec<String>,
        /// How to compare (default `exact`).
        #[serde(default)]
        mode: ToolPathMode,
    },
    /// A model judges that the output meets `rubric` (the optional LLM judge: off unless
    /// `TOLLGATE_LLM_JUDGE=on`; with it off, the assertion fails saying so).
    LlmJudge {
        /// What the output must do, in prose.
        rubric: String,
        /// What the judge reads; without it, the subject's text (or its output as JSON).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        path: Option<String>,
        /// The least score that passes, from 0 to 1; without it, the judge's own pass or fail.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        threshold: Option<f64>,
        /// The model asked; without it, `TOLLGATE_LLM_JUDGE_MODEL`'s.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model: Option<String>,
    },
}

fn yes() -> bool {
    true
}

impl AssertionSpec {
    /// The spec's `kind` tag.
    pub fn kind(&self) -> &'static str {
        match self {
            AssertionSpec::JsonPathEquals { .. } => "json_path_equals",
            AssertionSpec::Contains { .. } => "contains",
            AssertionSpec::Regex { .. } => "regex",
            AssertionSpec::JsonSchema { .. } => "json_schema",
            AssertionSpec::ToolPath { .. } => "tool_path",
            AssertionSpec::LlmJudge { .. } => "llm_judge",
        }
    }

    /// Validates the spec and builds its evaluator, without a judge: an `llm_judge` spec is
    /// [`EvaluatorError::JudgeOff`].
    pub fn build(&self) -> Result<Box<dyn Evaluator>, EvaluatorError> {
        self.build_with(None)
    }

    /// Validates the spec without building it: what a case file or a scenario is checked
    /// with when it is read or stored, whether or not a judge is on.
    pub fn check(&self) -> Result<(), EvaluatorError> {
        match self {
            AssertionSpec::LlmJudge {
                rubric,
                path,
                threshold,
                model,
            } => judge::JudgeSpec::new(rubric, path.as_deref(), *threshold, model.as_deref())
                .map(drop),
            _ => self.build().map(drop),
        }
    }

    /// Validates the spec and builds its evaluator; `judge` answers `llm_judge` specs.
    pub fn build_with(&self, judge: Option<&Judge>) -> Result<Box<dyn Evaluator>, EvaluatorError> {
        Ok(match self {
            AssertionSpec::JsonPathEquals { path, value } => {
                Box::new(JsonPathEquals::new(path, value.clone())?)
            }
            AssertionSpec::Contains {
                path,
                text,
                case_sensitive,
            } => Box::new(Contains::new(path.as_deref(), text, *case_sensitive)?),
            AssertionSpec::Regex { path, pattern } => {
                Box::new(RegexMatch::new(path.as_deref(), pattern)?)
            }
            AssertionSpec::JsonSchema { path, schema } => {
                Box::new(JsonSchemaValid::new(path.as_deref(), schema)?)
            }
            AssertionSpec::ToolPath { expected, mode } => {
                Box::new(ToolPathMatch::new(expected.clone(), *mode))
            }
            AssertionSpec::LlmJudge {
                rubric,
                path,
                threshold,
                model,
            } => {
                let spec =
                    judge::JudgeSpec::new(rubric, path.as_deref(), *threshold, model.as_deref())?;
                let judge = judge.ok_or(EvaluatorError::JudgeOff)?;
                Box::new(LlmJudge::new(spec, judge))
            }
        })
    }
}

/// A parsed JSONPath with the text it came from.
#[derive(Debug, Clone)]
struct Path {
    text: String,
    query: serde_json_path::JsonPath,
}

impl Path {
    fn parse(text: &str) -> Result<Path, EvaluatorError> {
        let query =
            serde_json_path::JsonPath::parse(text).map_err(|e| EvaluatorError::BadJsonPath {
                path: text.to_string(),
                reason: path_error(text, &e),
            })?;
        Ok(Path {
            text: text.to_string(),
            query,
        })
    }
}

/// The parser's message and where it stopped: `parser error at ` b` (character 4)`.
fn path_error(text: &str, e: &serde_json_path::ParseError) -> String {
    let at = e.position();
    match text.get(at..) {
        Some(rest) if !rest.is_empty() => format!(
            "{} at `{rest}` (character {})",
            e.message(),
            text[..at].chars().count() + 1
        ),
        _ => format!("{} at the end", e.message()),
    }
}

/// Longest quoted value in a message, in characters.
const QUOTE_LIMIT: usize = 80;

/// `value` in backticks, shortened to [`QUOTE_LIMIT`] characters with `…`.
fn quote(value: &str) -> String {
    if value.chars().count() <= QUOTE_LIMIT {
        format!("`{value}`")
    } else {
        let head: String = value.chars().take(QUOTE_LIMIT).collect();
        format!("`{head}…`")
    }
}

/// A JSON value as compact text, quoted.
fn quote_json(value: &serde_json::Value) -> String {
    quote(&value.to_string())
}

/// `1 node`, `2 nodes`.
fn count(n: usize, word: &str) -> String {
    format!("{n} {word}{}", if n == 1 { "" } else { "s" })
}

#[cfg(test)]
mod tests;
