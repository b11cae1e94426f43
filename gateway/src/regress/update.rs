//! Changing a case's expectations on purpose: the next version of a case, accepting what it
//! does now, with the diff of its file.
//!
//! Like a snapshot tool's review, an update keeps every assertion that passes as written (hand
//! edits survive) and rewrites each failing one to what holds now: a `json_path_equals` takes
//! the value its path selects now (it is dropped when the path selects nothing any more), a
//! `tool_path` takes the current path; a failing `contains`, `regex` or `json_schema` cannot
//! be rewritten from the outcome, so it is dropped and named. `regenerate` instead writes all
//! assertions again from the case's templates.

use serde_json::Value;

use super::RegressError;
use super::bundle::FixtureBundle;
use super::case::{AssertionSet, CaseChange, RegressionCase, version_diff};
use super::execute::outcome;
use super::target::Target;
use super::templates::{Template, assertions};
use crate::evaluators::{AssertionSpec, EvalSubject};

/// The next version of a case and how it differs.
#[derive(Debug, Clone)]
pub struct CaseUpdate {
    /// The case at its next version.
    pub case: RegressionCase,
    /// Unified diff of the case file.
    pub diff: String,
    /// Assertions rewritten to the current outcome.
    pub rewritten: usize,
    /// Assertions dropped, described.
    pub dropped: Vec<String>,
}

/// The next version of `case` accepting its outcome on `bundle`, or `None` when every
/// assertion already passes (and `regenerate` is off, or writes the same assertions).
pub fn update(
    case: &RegressionCase,
    bundle: &FixtureBundle,
    target: &Target,
    reason: &str,
    regenerate: bool,
) -> Result<Option<CaseUpdate>, RegressError> {
    let subject = outcome(case, bundle, target)?;
    let (set, rewritten, dropped) = if regenerate {
        let templates = if case.templates.is_empty() {
            Template::ALL.to_vec()
        } else {
            case.templates.clone()
        };
        (assertions(&templates, &subject), 0, Vec::new())
    } else {
        accept(&case.assertions, &subject)
    };
    if set == case.assertions {
        return Ok(None);
    }
    if set.is_empty() {
        return Err(RegressError::Invalid(format!(
            "accepting the current outcome would leave case `{}` with no assertion\n  help: pass --regenerate to write them again from its templates",
            case.id
        )));
    }
    let mut next = case.clone();
    next.assertions = set;
    next.version += 1;
    next.changes.push(CaseChange {
        version: next.version,
        reason: reason.to_string(),
    });
    let diff = version_diff(case, &next);
    Ok(Some(CaseUpdate {
        case: next,
        diff,
        rewritten,
        dropped,
    }))
}

/// Passing assertions kept, failing ones rewritten or dropped.
fn accept(set: &AssertionSet, subject: &EvalSubject) -> (AssertionSet, usize, Vec<String>) {
    let mut out = AssertionSet::default();
    let (mut rewritten, mut dropped) = (0, Vec::new());
    for (class, i, spec) in set.iter() {
        // A judge's rubric is a person's words about the output, not a value recorded from
        // it: accepting new behaviour keeps it as written, and the judge is not asked.
        let kept = matches!(spec, AssertionSpec::LlmJudge { .. })
            || spec.build().is_ok_and(|j| j.evaluate(subject).passed);
        if kept {
            out.of_mut(class).push(spec.clone());
            continue;
        }
        let now = match spec {
            AssertionSpec::JsonPathEquals { path, .. } => {
                select_one(path, &subject.output).map(|value| AssertionSpec::JsonPathEquals {
                    path: path.clone(),
                    value,
                })
            }
            AssertionSpec::ToolPath { mode, .. } => Some(AssertionSpec::ToolPath {
                expected: subject.tool_path.clone(),
                mode: *mode,
            }),
            _ => None,
        };
        match now {
            Some(spec) => {
                rewritten += 1;
                out.of_mut(class).push(spec);
            }
            None => dropped.push(format!("{class} #{} ({})", i + 1, spec.kind())),
        }
    }
    (out, rewritten, dropped)
}

/// The one node `path` selects in `output`.
fn select_one(path: &str, output: &Value) -> Option<Value> {
    let query = serde_json_path::JsonPath::parse(path).ok()?;
    match query.query(output).all().as_slice() {
        [one] => Some((*one).clone()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use crate::regress::bundle::tests::fixture;
    use crate::regress::execute::run_case;
    use crate::regress::{CaseOptions, from_run};
    use crate::replay::scenario::Mutation;

    #[test]
    fn an_update_accepts_a_new_decision_as_a_new_version_with_a_diff() {
        let run = fixture("04-forbidden-tool-pool-exhaustion");
        let (mut case, bundle) = from_run(&run, &CaseOptions::default()).unwrap();
        assert!(
            update(
                &case,
                &bundle,
                &Target::recorded(),
                "nothing changed",
                false
            )
            .unwrap()
            .is_none()
        );
        case.mutations = vec![Mutation::DisableRule {
            rule: "org-baseline/no-rm".into(),
        }];
        assert!(
            !run_case(&case, &bundle, &Target::recorded())
                .unwrap()
                .passed
        );
        let u = update(
            &case,
            &bundle,
            &Target::recorded(),
            "rm needs approval now",
            false,
        )
        .unwrap()
        .unwrap();
        assert_eq!(u.case.version, 2);
        assert_eq!(
            u.case.changes.last().unwrap().reason,
            "rm needs approval now"
        );
        assert!(u.rewritten >= 1 && u.dropped.is_empty(), "{u:?}");
        let changed = |sign: char, text: &str| {
            u.diff
                .lines()
                .any(|l| l.starts_with(sign) && l.trim_end().ends_with(text))
        };
        assert!(changed('-', "value: deny"), "{}", u.diff);
        assert!(changed('+', "value: require_approval"), "{}", u.diff);
        assert!(u.diff.contains("-version: 1\n+version: 2"), "{}", u.diff);
        assert!(
            run_case(&u.case, &bundle, &Target::recorded())
                .unwrap()
                .passed
        );
        // Reading it back gives the same case.
        let back = RegressionCase::parse(&u.case.to_yaml(), "c.yaml").unwrap();
        assert_eq!(back, u.case);
    }

    #[test]
    fn a_failing_text_assertion_is_dropped_and_named() {
        let run = fixture("03-flaky-webhook-retry");
        let options = CaseOptions {
            step: Some(2),
            ..CaseOptions::default()
        };
        let (mut case, bundle) = from_run(&run, &options).unwrap();
        case.assertions.output.push(AssertionSpec::Contains {
            path: None,
            text: "a sentence nobody wrote".into(),
            case_sensitive: true,
        });
        let u = update(&case, &bundle, &Target::recorded(), "drop it", false)
            .unwrap()
            .unwrap();
        assert_eq!(
            u.dropped,
            vec![format!(
                "output #{} (contains)",
                case.assertions.output.len()
            )]
        );
        assert!(
            run_case(&u.case, &bundle, &Target::recorded())
                .unwrap()
                .passed
        );
    }
}
