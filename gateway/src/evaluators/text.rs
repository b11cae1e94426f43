//! `contains` and `regex`: text tests on the subject's text, its rendered output, or the
//! strings a JSONPath selects.

use std::borrow::Cow;

use serde_json::Value;

use super::{EvalOutcome, EvalSubject, Evaluator, EvaluatorError, Path, count, quote};

/// Passes when the text contains a substring (see the module docs of
/// [`evaluators`](super) for what "the text" is).
#[derive(Debug, Clone)]
pub struct Contains {
    name: String,
    target: Target,
    /// The text as written, for messages.
    needle: String,
    /// The text compared: as written, or lowercased when case does not matter.
    folded: String,
    case_sensitive: bool,
}

impl Contains {
    /// Parses `path` if given; fails on a bad path or an empty `text`.
    pub fn new(
        path: Option<&str>,
        text: &str,
        case_sensitive: bool,
    ) -> Result<Contains, EvaluatorError> {
        if text.is_empty() {
            return Err(EvaluatorError::EmptyNeedle);
        }
        let target = Target::parse(path)?;
        Ok(Contains {
            name: target.label("contains"),
            target,
            needle: text.to_string(),
            folded: if case_sensitive {
                text.to_string()
            } else {
                text.to_lowercase()
            },
            case_sensitive,
        })
    }
}

impl Evaluator for Contains {
    fn name(&self) -> &str {
        &self.name
    }

    fn evaluate(&self, subject: &EvalSubject) -> EvalOutcome {
        let case = if self.case_sensitive {
            ""
        } else {
            " (ignoring case)"
        };
        let want = Want {
            infinitive: format!("contain {}{case}", quote(&self.needle)),
            present: format!("contains {}{case}", quote(&self.needle)),
        };
        judge(&self.name, &self.target, subject, &want, |s| {
            if self.case_sensitive {
                s.contains(&self.folded)
            } else {
                s.to_lowercase().contains(&self.folded)
            }
        })
    }
}

/// Passes when the text matches a regular expression, anywhere in it.
#[derive(Debug, Clone)]
pub struct RegexMatch {
    name: String,
    target: Target,
    regex: regex::Regex,
}

impl RegexMatch {
    /// Parses `path` if given and compiles `pattern`.
    pub fn new(path: Option<&str>, pattern: &str) -> Result<RegexMatch, EvaluatorError> {
        let target = Target::parse(path)?;
        let regex = regex::Regex::new(pattern).map_err(|e| EvaluatorError::BadRegex {
            pattern: pattern.to_string(),
            reason: regex_reason(&e),
        })?;
        Ok(RegexMatch {
            name: target.label("regex"),
            target,
            regex,
        })
    }
}

impl Evaluator for RegexMatch {
    fn name(&self) -> &str {
        &self.name
    }

    fn evaluate(&self, subject: &EvalSubject) -> EvalOutcome {
        let pattern = quote(self.regex.as_str());
        let want = Want {
            infinitive: format!("match {pattern}"),
            present: format!("matches {pattern}"),
        };
        judge(&self.name, &self.target, subject, &want, |s| {
            self.regex.is_match(s)
        })
    }
}

/// The regex crate's error without its multi-line drawing of the pattern: the last line says
/// what is wrong.
fn regex_reason(e: &regex::Error) -> String {
    let text = e.to_string();
    text.lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .map(|l| l.trim().trim_start_matches("error: ").to_string())
        .unwrap_or(text)
}

/// Where a text test looks.
#[derive(Debug, Clone)]
enum Target {
    /// The subject's text, else its output as compact JSON.
    Text,
    /// Every string a path selects in the output.
    Path(Path),
}

impl Target {
    fn parse(path: Option<&str>) -> Result<Target, EvaluatorError> {
        Ok(match path {
            Some(p) => Target::Path(Path::parse(p)?),
            None => Target::Text,
        })
    }

    fn label(&self, kind: &str) -> String {
        match self {
            Target::Text => kind.to_string(),
            Target::Path(p) => format!("{kind}({})", p.text),
        }
    }
}

/// What a test wants, for messages: "expected the text to {infinitive}", "the text {present}".
struct Want {
    infinitive: String,
    present: String,
}

/// Most non-matching strings listed in a failure message.
const LIST_LIMIT: usize = 3;

fn judge(
    name: &str,
    target: &Target,
    subject: &EvalSubject,
    want: &Want,
    test: impl Fn(&str) -> bool,
) -> EvalOutcome {
    let Want {
        infinitive,
        present,
    } = want;
    match target {
        Target::Text => {
            let (what, text): (&str, Cow<'_, str>) = match &subject.text {
                Some(text) => ("text", Cow::Borrowed(text)),
                None => ("output", Cow::Owned(subject.output.to_string())),
            };
            if test(&text) {
                EvalOutcome::pass(name, format!("the {what} {present}"))
            } else {
                EvalOutcome::fail(
                    name,
                    format!(
                        "expected the {what} to {infinitive}; it does not ({what}: {})",
                        quote(&text)
                    ),
                )
            }
        }
        Target::Path(path) => {
            let nodes = path.query.query_located(&subject.output).all();
            let strings: Vec<(String, &str)> = nodes
                .iter()
                .filter_map(|n| match n.node() {
                    Value::String(s) => Some((n.location().to_string(), s.as_str())),
                    _ => None,
                })
                .collect();
            if let Some((at, _)) = strings.iter().find(|(_, s)| test(s)) {
                return EvalOutcome::pass(name, format!("the string at `{at}` {present}"));
            }
            let expected = format!("expected a string at `{}` to {infinitive}", path.text);
            let found = if nodes.is_empty() {
                "the path selected nothing".to_string()
            } else if strings.is_empty() {
                format!(
                    "the path selected {}, none of them a string",
                    count(nodes.len(), "node")
                )
            } else {
                let mut shown: Vec<String> = strings
                    .iter()
                    .take(LIST_LIMIT)
                    .map(|(at, s)| format!("`{at}` is {}", quote(s)))
                    .collect();
                if strings.len() > LIST_LIMIT {
                    shown.push(format!("and {} more", strings.len() - LIST_LIMIT));
                }
                format!(
                    "none of the {} selected does: {}",
                    count(strings.len(), "string"),
                    shown.join(", ")
                )
            };
            EvalOutcome::fail(name, format!("{expected}; {found}"))
        }
    }
}
