use std::sync::{Arc, Mutex};

use serde_json::json;

use super::*;
use crate::evaluators::AssertionSpec;
use crate::providers::{ChatResponse, FakeProvider, ProviderError, Usage};

/// A provider answering with a scripted text (or failing), and keeping the requests it got.
struct Scripted {
    answer: Result<String, ProviderError>,
    seen: Mutex<Vec<ChatRequest>>,
}

impl Scripted {
    fn new(answer: &str) -> Arc<Scripted> {
        Arc::new(Scripted {
            answer: Ok(answer.to_string()),
            seen: Mutex::new(Vec::new()),
        })
    }
}

impl Provider for Scripted {
    fn name(&self) -> &str {
        "scripted"
    }

    fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, ProviderError> {
        self.seen.lock().unwrap().push(request.clone());
        let content = self.answer.clone()?;
        Ok(ChatResponse {
            id: "scripted-1".into(),
            model: request.model.clone(),
            content,
            finish_reason: "stop".into(),
            usage: Usage::default(),
            tool_calls: Vec::new(),
        })
    }
}

fn spec(value: serde_json::Value) -> AssertionSpec {
    serde_json::from_value(value).unwrap()
}

fn rubric() -> AssertionSpec {
    spec(json!({"kind": "llm_judge", "rubric": "The answer names the failing test."}))
}

fn judged(spec: &AssertionSpec, provider: Arc<dyn Provider>, subject: &EvalSubject) -> EvalOutcome {
    let judge = Judge::new(provider, "judge-model");
    spec.build_with(Some(&judge)).unwrap().evaluate(subject)
}

fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let pairs: Vec<(String, String)> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    move |name| {
        pairs
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    }
}

#[test]
fn the_llm_judge_is_off_unless_the_flag_turns_it_on() {
    assert_eq!(Judge::from_lookup(&env(&[])).unwrap(), None);
    assert_eq!(
        Judge::from_lookup(&env(&[(FLAG_VAR, "off")])).unwrap(),
        None
    );
    let on = Judge::from_lookup(&env(&[(FLAG_VAR, "on")]))
        .unwrap()
        .unwrap();
    assert_eq!(on.model(), DEFAULT_MODEL);
    let named = Judge::from_lookup(&env(&[(FLAG_VAR, "on"), (MODEL_VAR, "judge-7")]))
        .unwrap()
        .unwrap();
    assert_eq!(named.model(), "judge-7");
    let wrong = Judge::from_lookup(&env(&[(FLAG_VAR, "yes")])).unwrap_err();
    assert!(
        wrong.to_string().contains("`TOLLGATE_LLM_JUDGE` is `yes`"),
        "{wrong}"
    );
    let no_provider =
        Judge::from_lookup(&env(&[(FLAG_VAR, "on"), ("TOLLGATE_PROVIDER", "nope")])).unwrap_err();
    assert!(
        no_provider.to_string().contains("unknown provider `nope`"),
        "{no_provider}"
    );
}

#[test]
fn an_llm_judge_assertion_with_the_judge_off_checks_but_does_not_build() {
    let a = rubric();
    assert_eq!(a.kind(), "llm_judge");
    a.check().unwrap();
    let off = a.build().err().unwrap();
    assert_eq!(off, EvaluatorError::JudgeOff);
    assert!(off.to_string().contains("TOLLGATE_LLM_JUDGE=on"), "{off}");
}

#[test]
fn an_llm_judge_assertion_is_checked_when_read() {
    let empty = spec(json!({"kind": "llm_judge", "rubric": "  "}));
    assert_eq!(empty.check(), Err(EvaluatorError::EmptyRubric));
    let high = spec(json!({"kind": "llm_judge", "rubric": "r", "threshold": 1.5}));
    assert_eq!(
        high.check(),
        Err(EvaluatorError::BadThreshold { threshold: 1.5 })
    );
    let path = spec(json!({"kind": "llm_judge", "rubric": "r", "path": "answer"}));
    assert!(matches!(
        path.check(),
        Err(EvaluatorError::BadJsonPath { .. })
    ));
    let unknown: Result<AssertionSpec, _> =
        serde_json::from_value(json!({"kind": "llm_judge", "rubric": "r", "rubrik": "x"}));
    assert!(unknown.is_err());
}

#[test]
fn a_verdict_that_passes_passes_with_its_score_and_reason() {
    let provider = Scripted::new(
        "```json\n{\"pass\": true, \"score\": 0.9, \"reason\": \"it names test_users_404\"}\n```",
    );
    let o = judged(
        &rubric(),
        provider.clone(),
        &EvalSubject::from_text("test_users_404 fails"),
    );
    assert!(o.passed, "{o:?}");
    assert_eq!(o.score, 0.9);
    assert_eq!(o.value, Some(0.9));
    assert_eq!(o.evaluator, "llm_judge");
    assert_eq!(
        o.message,
        "the judge (judge-model) says it meets the rubric: score 0.90; `it names test_users_404`"
    );
    let seen = provider.seen.lock().unwrap();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].temperature, Some(0.0));
    assert!(
        seen[0].messages[0]
            .content
            .contains("The answer names the failing test.")
    );
    assert!(seen[0].messages[1].content.contains("test_users_404 fails"));
}

#[test]
fn the_threshold_decides_over_the_judges_own_pass() {
    let provider = Scripted::new(r#"{"pass": true, "score": 0.6, "reason": "mostly"}"#);
    let strict = spec(json!({"kind": "llm_judge", "rubric": "r", "threshold": 0.8}));
    let o = judged(&strict, provider.clone(), &EvalSubject::from_text("x"));
    assert!(!o.passed, "{o:?}");
    assert_eq!(o.score, 0.6);
    assert!(o.message.contains("threshold 0.80"), "{}", o.message);
    let lenient = spec(json!({"kind": "llm_judge", "rubric": "r", "threshold": 0.5}));
    assert!(judged(&lenient, provider, &EvalSubject::from_text("x")).passed);
    // A score alone passes from 0.5.
    let only_score = Scripted::new(r#"The verdict: {"score": 0.4}"#);
    assert!(!judged(&rubric(), only_score, &EvalSubject::from_text("x")).passed);
}

#[test]
fn an_answer_that_is_not_a_verdict_fails_and_is_quoted() {
    let o = judged(
        &rubric(),
        Scripted::new("I think it is fine {not json} really"),
        &EvalSubject::from_text("x"),
    );
    assert!(!o.passed);
    assert_eq!(o.score, 0.0);
    assert!(
        o.message.contains("did not answer with a verdict") && o.message.contains("really"),
        "{}",
        o.message
    );
    // A score outside 0..1 is not a verdict either.
    let o = judged(
        &rubric(),
        Scripted::new(r#"{"score": 7}"#),
        &EvalSubject::from_text("x"),
    );
    assert!(!o.passed, "{o:?}");
}

#[test]
fn the_fake_provider_never_passes_a_judgement() {
    let o = judged(
        &rubric(),
        Arc::new(FakeProvider::new()),
        &EvalSubject::from_text("x"),
    );
    assert!(!o.passed, "{o:?}");
    assert!(o.message.contains("[fake judge-model"), "{}", o.message);
}

#[test]
fn a_provider_that_fails_is_a_failed_outcome_naming_the_model() {
    let provider = Arc::new(Scripted {
        answer: Err(ProviderError::Timeout {
            after: std::time::Duration::from_secs(3),
        }),
        seen: Mutex::new(Vec::new()),
    });
    let named = spec(json!({"kind": "llm_judge", "rubric": "r", "model": "m-2"}));
    let o = judged(&named, provider, &EvalSubject::from_text("x"));
    assert!(!o.passed);
    assert_eq!(
        o.message,
        "the judge (m-2) could not be asked: the provider did not answer within 3 s"
    );
}

#[test]
fn the_judge_reads_what_the_path_selects_and_the_tools_called() {
    let provider = Scripted::new(r#"{"pass": false, "score": 0.1, "reason": "no"}"#);
    let a = spec(json!({"kind": "llm_judge", "rubric": "r", "path": "$.messages[*].content"}));
    let subject = EvalSubject::from_output(json!({
        "messages": [{"content": "first"}, {"content": "second"}],
        "secret_elsewhere": "not shown"
    }))
    .with_tool_path(["fs.read_file", "shell.exec"]);
    let o = judged(&a, provider.clone(), &subject);
    assert_eq!(o.evaluator, "llm_judge($.messages[*].content)");
    let seen = provider.seen.lock().unwrap();
    let user = &seen[0].messages[1].content;
    assert!(user.contains("first\nsecond"), "{user}");
    assert!(!user.contains("not shown"), "{user}");
    assert!(user.contains("fs.read_file, shell.exec"), "{user}");
}

#[test]
fn the_same_subject_makes_the_same_request() {
    let provider = Scripted::new(r#"{"pass": true}"#);
    let a = rubric();
    let subject = EvalSubject::from_output(json!({"answer": 42}));
    judged(&a, provider.clone(), &subject);
    judged(&a, provider.clone(), &subject);
    let seen = provider.seen.lock().unwrap();
    assert_eq!(seen[0], seen[1]);
    assert_eq!(seen[0].hash(), seen[1].hash());
}

#[test]
fn a_long_output_is_cut_for_the_judge() {
    let provider = Scripted::new(r#"{"pass": true}"#);
    let long = "x".repeat(OUTPUT_LIMIT + 100);
    judged(&rubric(), provider.clone(), &EvalSubject::from_text(long));
    let seen = provider.seen.lock().unwrap();
    assert!(seen[0].messages[1].content.contains("[output cut here]"));
    assert!(seen[0].messages[1].content.chars().count() < OUTPUT_LIMIT + 200);
}
