//! The optional LLM judge (seed 000: "an optional LLM judge sits behind a feature flag"): an
//! `llm_judge` assertion asks a model whether an output meets a rubric written in prose, for
//! replay rubrics and regression assertions alike, through the one [`Evaluator`] interface.
//!
//! **Off by default.** A process judges with a model only when `TOLLGATE_LLM_JUDGE=on`; the
//! model answers through the provider the environment configures (`TOLLGATE_PROVIDER`, as for
//! live replays), under `TOLLGATE_LLM_JUDGE_MODEL` (default [`DEFAULT_MODEL`]) unless the
//! assertion names one. With the flag off, an `llm_judge` assertion is written and checked as
//! usual but fails when judged, saying how to turn the judge on: a suite never passes on a
//! judgement nobody made.
//!
//! **What the model is asked.** A system message with the rubric and the answer's shape, and a
//! user message with the output judged (the strings `path` selects, else the subject's text,
//! else its output as JSON) and the tools called. The request has temperature 0. The answer
//! must hold one JSON object `{"pass": bool, "score": 0..1, "reason": "..."}`; with
//! `threshold`, the score decides (`score >= threshold`), else `pass` does (or, when the model
//! gave only a score, `score >= 0.5`). An answer that is not a verdict, or a provider that
//! fails, is a failed outcome quoting what came back, never a pass.
//!
//! Unlike every other evaluator, a judge is not deterministic unless its provider is (the fake
//! and replay providers are): its outcome names the model, so a report says who judged.

use std::sync::Arc;

use serde_json::Value;

use super::{EvalOutcome, EvalSubject, Evaluator, EvaluatorError, Path, quote};
use crate::providers::{ChatMessage, ChatRequest, Provider};

/// The flag: `on` turns the judge on; unset, empty or `off` leaves it off.
pub const FLAG_VAR: &str = "TOLLGATE_LLM_JUDGE";
/// The model asked when an assertion names none.
pub const MODEL_VAR: &str = "TOLLGATE_LLM_JUDGE_MODEL";
/// The model asked when neither the assertion nor [`MODEL_VAR`] names one.
pub const DEFAULT_MODEL: &str = "gpt-4.1-mini";

/// Longest output shown to the judge, in characters; the rest is cut with a note.
const OUTPUT_LIMIT: usize = 16_000;

/// The judge a process may use: a provider and the model it asks by default.
#[derive(Clone)]
pub struct Judge {
    provider: Arc<dyn Provider>,
    model: String,
}

impl std::fmt::Debug for Judge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Judge")
            .field("provider", &self.provider.name())
            .field("model", &self.model)
            .finish()
    }
}

impl PartialEq for Judge {
    fn eq(&self, other: &Judge) -> bool {
        self.provider.name() == other.provider.name() && self.model == other.model
    }
}

impl Judge {
    /// A judge asking `model` through `provider`.
    pub fn new(provider: Arc<dyn Provider>, model: impl Into<String>) -> Judge {
        Judge {
            provider,
            model: model.into(),
        }
    }

    /// The judge the process environment turns on, or `None` when the flag is off.
    pub fn from_env() -> Result<Option<Judge>, EvaluatorError> {
        Judge::from_lookup(&|name| std::env::var(name).ok())
    }

    /// [`Judge::from_env`] with an injectable environment.
    pub fn from_lookup(
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Option<Judge>, EvaluatorError> {
        let flag = lookup(FLAG_VAR).unwrap_or_default();
        match flag.trim() {
            "" | "off" => return Ok(None),
            "on" => {}
            other => {
                return Err(EvaluatorError::JudgeSetting {
                    reason: format!("`{FLAG_VAR}` is `{other}`; it is `on` or `off`"),
                });
            }
        }
        let provider = crate::providers::provider_from_lookup(lookup).map_err(|e| {
            EvaluatorError::JudgeSetting {
                reason: format!("the judge's provider is not configured: {e}"),
            }
        })?;
        let model = lookup(MODEL_VAR)
            .map(|m| m.trim().to_string())
            .filter(|m| !m.is_empty())
            .unwrap_or_else(|| DEFAULT_MODEL.to_string());
        Ok(Some(Judge::new(Arc::from(provider), model)))
    }

    /// The model asked by default.
    pub fn model(&self) -> &str {
        &self.model
    }
}

/// An `llm_judge` assertion's fields, checked.
#[derive(Debug, Clone)]
pub(super) struct JudgeSpec {
    pub rubric: String,
    pub path: Option<Path>,
    pub threshold: Option<f64>,
    pub model: Option<String>,
}

impl JudgeSpec {
    /// Checks the fields: a rubric with words in it, a path that parses, a threshold from 0
    /// to 1, a model name that is not blank.
    pub fn new(
        rubric: &str,
        path: Option<&str>,
        threshold: Option<f64>,
        model: Option<&str>,
    ) -> Result<JudgeSpec, EvaluatorError> {
        if rubric.trim().is_empty() {
            return Err(EvaluatorError::EmptyRubric);
        }
        if let Some(t) = threshold
            && !(0.0..=1.0).contains(&t)
        {
            return Err(EvaluatorError::BadThreshold { threshold: t });
        }
        if model.is_some_and(|m| m.trim().is_empty()) {
            return Err(EvaluatorError::JudgeSetting {
                reason: "`model` is blank; name a model or leave the field out".to_string(),
            });
        }
        Ok(JudgeSpec {
            rubric: rubric.to_string(),
            path: path.map(Path::parse).transpose()?,
            threshold,
            model: model.map(str::to_string),
        })
    }
}

/// The evaluator of one `llm_judge` assertion with a judge to ask.
pub struct LlmJudge {
    name: String,
    spec: JudgeSpec,
    judge: Judge,
}

impl LlmJudge {
    pub(super) fn new(spec: JudgeSpec, judge: &Judge) -> LlmJudge {
        let name = match &spec.path {
            Some(p) => format!("llm_judge({})", p.text),
            None => "llm_judge".to_string(),
        };
        LlmJudge {
            name,
            spec,
            judge: judge.clone(),
        }
    }

    fn model(&self) -> &str {
        self.spec.model.as_deref().unwrap_or(&self.judge.model)
    }

    /// The request the judge is sent for `subject`.
    pub fn request(&self, subject: &EvalSubject) -> ChatRequest {
        let system = format!(
            "You judge the output of an AI agent against a rubric. Read the output and decide \
             whether it meets the rubric. Answer with one JSON object and nothing else: \
             {{\"pass\": true or false, \"score\": a number from 0 to 1, \"reason\": \"one \
             sentence\"}}.\n\nRubric:\n{}",
            self.spec.rubric.trim()
        );
        let mut shown = judged_text(self.spec.path.as_ref(), subject);
        if shown.chars().count() > OUTPUT_LIMIT {
            shown = shown.chars().take(OUTPUT_LIMIT).collect();
            shown.push_str("\n[output cut here]");
        }
        let tools = if subject.tool_path.is_empty() {
            "none".to_string()
        } else {
            subject.tool_path.join(", ")
        };
        let user = format!("Output:\n{shown}\n\nTools called, in order: {tools}");
        ChatRequest {
            model: self.model().to_string(),
            messages: vec![
                ChatMessage::new("system", system),
                ChatMessage::new("user", user),
            ],
            temperature: Some(0.0),
            max_tokens: Some(300),
            extra: serde_json::Map::new(),
        }
    }
}

/// What the judge reads: the strings (or values) `path` selects, one per line; else the
/// subject's text; else its output as JSON.
fn judged_text(path: Option<&Path>, subject: &EvalSubject) -> String {
    match path {
        Some(p) => p
            .query
            .query(&subject.output)
            .all()
            .into_iter()
            .map(|v| match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        None => match &subject.text {
            Some(t) => t.clone(),
            None => subject.output.to_string(),
        },
    }
}

/// A verdict read from the judge's answer.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Verdict {
    pub pass: Option<bool>,
    pub score: Option<f64>,
    pub reason: String,
}

/// The verdict in `answer`: the first JSON object in it (a model may wrap it in a code fence
/// or a sentence) with a boolean `pass` or a `score` from 0 to 1.
pub(super) fn verdict(answer: &str) -> Option<Verdict> {
    let mut from = 0;
    while let Some(at) = answer[from..].find('{') {
        let start = from + at;
        let mut stream = serde_json::Deserializer::from_str(&answer[start..]).into_iter::<Value>();
        if let Some(Ok(Value::Object(map))) = stream.next() {
            let pass = map.get("pass").and_then(Value::as_bool);
            let score = map
                .get("score")
                .and_then(Value::as_f64)
                .filter(|s| (0.0..=1.0).contains(s));
            if pass.is_some() || score.is_some() {
                let reason = map
                    .get("reason")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .trim()
                    .to_string();
                return Some(Verdict {
                    pass,
                    score,
                    reason,
                });
            }
        }
        from = start + 1;
    }
    None
}

impl Evaluator for LlmJudge {
    fn name(&self) -> &str {
        &self.name
    }

    fn evaluate(&self, subject: &EvalSubject) -> EvalOutcome {
        let model = self.model().to_string();
        let answer = match self.judge.provider.complete(&self.request(subject)) {
            Ok(a) => a.content,
            Err(e) => {
                return EvalOutcome::fail(
                    &self.name,
                    format!("the judge ({model}) could not be asked: {e}"),
                );
            }
        };
        let Some(v) = verdict(&answer) else {
            return EvalOutcome::fail(
                &self.name,
                format!(
                    "the judge ({model}) did not answer with a verdict (`{{\"pass\", \"score\", \"reason\"}}`): {}",
                    quote(answer.trim())
                ),
            );
        };
        let score = v
            .score
            .unwrap_or(if v.pass == Some(true) { 1.0 } else { 0.0 });
        let passed = match (self.spec.threshold, v.pass) {
            (Some(t), _) => v.score.is_some_and(|s| s >= t),
            (None, Some(pass)) => pass,
            (None, None) => score >= 0.5,
        };
        let mut message = format!(
            "the judge ({model}) says {}: score {score:.2}",
            if passed {
                "it meets the rubric"
            } else {
                "it does not meet the rubric"
            }
        );
        if let Some(t) = self.spec.threshold {
            message.push_str(&format!(", threshold {t:.2}"));
        }
        if !v.reason.is_empty() {
            message.push_str(&format!("; {}", quote(&v.reason)));
        }
        EvalOutcome {
            evaluator: self.name.clone(),
            passed,
            score,
            message,
            value: Some(score),
        }
    }
}

#[cfg(test)]
mod tests;
