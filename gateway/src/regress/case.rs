//! The regression case file (`tollgate.case/v1`, YAML): a frozen scenario — a fixture bundle,
//! the step it covers, the mutations it makes — and the assertions its outcome must pass,
//! grouped by what they judge.
//!
//! ```yaml
//! format: tollgate.case/v1
//! id: run-bugfix-users-404-step-7
//! version: 1
//! name: bugfix users 404, step 7 (run the failing test)
//! agent: coder
//! task_type: bugfix
//! source: {run: run-bugfix-users-404, step: 7}
//! bundle: {path: fixtures/run-bugfix-users-404-step-7.json, hash: 3f2a…}
//! step: 7
//! templates: [compile_shape, tool_behavior, policy_decisions, output_structure]
//! assertions:
//!   structural:  [{kind: json_path_equals, path: $.blocked, value: [mem-globex-pool]}]
//!   behavioral:  [{kind: tool_path, expected: [shell.exec], mode: exact}]
//!   output:      []
//!   policy:      [{kind: json_path_equals, path: "$.calls[0].effect", value: allow}]
//! changes: [{version: 1, reason: created from run run-bugfix-users-404, step 7}]
//! ```
//!
//! Assertions are the shared [`AssertionSpec`]s, judged on the case's outcome as
//! [`crate::replay::metrics::subject`] describes it. A malformed file is an error naming the
//! file, the line and how to fix it.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::RegressError;
use crate::evaluators::AssertionSpec;
use crate::replay::scenario::{Mutation, ToolMode};

/// The case format.
pub const CASE_FORMAT: &str = "tollgate.case/v1";

/// Where a case came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CaseSource {
    /// The recorded run.
    pub run: String,
    /// The step, when the case covers one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<u32>,
    /// The replay result it was made from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay: Option<String>,
}

/// The bundle a case reruns: its path, relative to the case file, and its content hash.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BundleRef {
    /// Relative to the case file's directory.
    pub path: String,
    /// [`super::bundle::FixtureBundle::hash`]: a bundle that changed is refused.
    pub hash: String,
}

/// What an assertion judges.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AssertionClass {
    /// The compiles' shape: what was blocked, redacted, summarised; budgets kept.
    Structural,
    /// What the agent did: the tool path.
    Behavioral,
    /// What came out: the final output's structure, the artifacts written.
    Output,
    /// What policy decided.
    Policy,
}

impl AssertionClass {
    /// Every class, in file order.
    pub const ALL: [AssertionClass; 4] = [
        AssertionClass::Structural,
        AssertionClass::Behavioral,
        AssertionClass::Output,
        AssertionClass::Policy,
    ];

    /// Its name in the file.
    pub fn as_str(self) -> &'static str {
        match self {
            AssertionClass::Structural => "structural",
            AssertionClass::Behavioral => "behavioral",
            AssertionClass::Output => "output",
            AssertionClass::Policy => "policy",
        }
    }
}

impl fmt::Display for AssertionClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An assertion template (what the `templates` module writes for it).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    utoipa::ToSchema,
)]
#[serde(rename_all = "snake_case")]
#[schema(as = AssertionTemplate)]
pub enum Template {
    /// Structural: blocked and redacted items, intact steps, compiles that succeed.
    CompileShape,
    /// Behavioural: the tool path.
    ToolBehavior,
    /// Policy: each call's decision.
    PolicyDecisions,
    /// Output: the final output's structure.
    OutputStructure,
    /// Output: the writes made.
    ArtifactQuality,
}

impl Template {
    /// Every template.
    pub const ALL: [Template; 5] = [
        Template::CompileShape,
        Template::ToolBehavior,
        Template::PolicyDecisions,
        Template::OutputStructure,
        Template::ArtifactQuality,
    ];

    /// Its name.
    pub fn as_str(self) -> &'static str {
        match self {
            Template::CompileShape => "compile_shape",
            Template::ToolBehavior => "tool_behavior",
            Template::PolicyDecisions => "policy_decisions",
            Template::OutputStructure => "output_structure",
            Template::ArtifactQuality => "artifact_quality",
        }
    }

    /// The template named `name`.
    pub fn parse(name: &str) -> Option<Template> {
        Template::ALL.into_iter().find(|t| t.as_str() == name)
    }

    /// The class of the assertions it writes.
    pub fn class(self) -> AssertionClass {
        match self {
            Template::CompileShape => AssertionClass::Structural,
            Template::ToolBehavior => AssertionClass::Behavioral,
            Template::PolicyDecisions => AssertionClass::Policy,
            Template::OutputStructure | Template::ArtifactQuality => AssertionClass::Output,
        }
    }
}

/// A case's assertions, by class.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AssertionSet {
    /// On the compiles' shape.
    #[serde(default)]
    pub structural: Vec<AssertionSpec>,
    /// On the tool path.
    #[serde(default)]
    pub behavioral: Vec<AssertionSpec>,
    /// On the output and artifacts.
    #[serde(default)]
    pub output: Vec<AssertionSpec>,
    /// On policy decisions.
    #[serde(default)]
    pub policy: Vec<AssertionSpec>,
}

impl AssertionSet {
    /// The assertions of one class.
    pub fn of(&self, class: AssertionClass) -> &[AssertionSpec] {
        match class {
            AssertionClass::Structural => &self.structural,
            AssertionClass::Behavioral => &self.behavioral,
            AssertionClass::Output => &self.output,
            AssertionClass::Policy => &self.policy,
        }
    }

    /// The assertions of one class, to add to.
    pub fn of_mut(&mut self, class: AssertionClass) -> &mut Vec<AssertionSpec> {
        match class {
            AssertionClass::Structural => &mut self.structural,
            AssertionClass::Behavioral => &mut self.behavioral,
            AssertionClass::Output => &mut self.output,
            AssertionClass::Policy => &mut self.policy,
        }
    }

    /// Every assertion with its class and index in it, in file order.
    pub fn iter(&self) -> impl Iterator<Item = (AssertionClass, usize, &AssertionSpec)> {
        AssertionClass::ALL
            .into_iter()
            .flat_map(move |c| self.of(c).iter().enumerate().map(move |(i, a)| (c, i, a)))
    }

    /// How many.
    pub fn len(&self) -> usize {
        AssertionClass::ALL.iter().map(|c| self.of(*c).len()).sum()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// One intentional change of a case's expectations.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaseChange {
    /// The version it made.
    pub version: u32,
    /// Why.
    pub reason: String,
}

/// A regression case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RegressionCase {
    /// [`CASE_FORMAT`].
    pub format: String,
    /// A stable id (letters, digits, `-`, `_`, `.`).
    pub id: String,
    /// Bumped by each intentional change of expectations.
    pub version: u32,
    /// What it checks, for people.
    pub name: String,
    /// More words, when wanted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The agent of the run, for coverage.
    pub agent: String,
    /// The kind of task, for coverage (`bugfix`, `feature`…; `unspecified` when unknown).
    pub task_type: String,
    /// Where it came from.
    pub source: CaseSource,
    /// The fixture it reruns.
    pub bundle: BundleRef,
    /// The step it covers; the whole run when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<u32>,
    /// The mutations it makes (a case from a replay keeps the replay's).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mutations: Vec<Mutation>,
    /// How tools are served (always from the recording: a case never runs a tool).
    #[serde(default)]
    pub mode: ToolMode,
    /// The templates its assertions were generated from (`update` regenerates them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub templates: Vec<Template>,
    /// What its outcome must pass.
    pub assertions: AssertionSet,
    /// Its versions, oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub changes: Vec<CaseChange>,
}

impl RegressionCase {
    /// The case as its file: a comment saying what it is, then YAML.
    pub fn to_yaml(&self) -> String {
        let body =
            serde_yaml::to_string(self).unwrap_or_else(|e| format!("# cannot encode: {e}\n"));
        format!(
            "# A Tollgate regression case: `tollgate regress run` reruns its fixture offline and checks\n# the assertions. Change expectations with `tollgate regress update`, which bumps `version`.\n{body}"
        )
    }

    /// Reads a case file; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<RegressionCase, RegressError> {
        if let Some(replay) = replay_draft(text) {
            return Err(RegressError::CaseFile {
                path: origin.to_string(),
                line: None,
                detail: format!(
                    "this is a draft exported by `tollgate replay export` (replay `{replay}`), not a regression case"
                ),
                help: format!(
                    "make a case of the replay with `tollgate regress from-replay {replay}` (it writes the case and its fixture bundle), and move the draft out of the cases' folder"
                ),
            });
        }
        let case: RegressionCase = serde_yaml::from_str(text).map_err(|e| {
            let line = e.location().map(|l| l.line());
            RegressError::CaseFile {
                path: origin.to_string(),
                line,
                detail: e.to_string(),
                help: help_for(&e.to_string()),
            }
        })?;
        case.validate(text, origin)?;
        Ok(case)
    }

    /// Checks what serde cannot: the format, the id, the version, every assertion builds.
    fn validate(&self, text: &str, origin: &str) -> Result<(), RegressError> {
        let fault = |key: &str, detail: String, help: &str| RegressError::CaseFile {
            path: origin.to_string(),
            line: line_of_key(text, key),
            detail,
            help: help.to_string(),
        };
        if self.format != CASE_FORMAT {
            return Err(fault(
                "format",
                format!("format `{}` is not `{CASE_FORMAT}`", self.format),
                "write `format: tollgate.case/v1`",
            ));
        }
        if !valid_id(&self.id) {
            return Err(fault(
                "id",
                format!("id `{}` is not a valid case id", self.id),
                "use letters, digits, `-`, `_` and `.` (at most 120), starting with a letter or digit",
            ));
        }
        if self.version == 0 {
            return Err(fault(
                "version",
                "version 0".to_string(),
                "versions start at 1",
            ));
        }
        if self.assertions.is_empty() {
            return Err(fault(
                "assertions",
                "the case asserts nothing, so it cannot fail".to_string(),
                "add assertions under `structural`, `behavioral`, `output` or `policy`, or regenerate them with `tollgate regress update`",
            ));
        }
        for (class, i, a) in self.assertions.iter() {
            if let Err(e) = a.check() {
                return Err(RegressError::CaseFile {
                    path: origin.to_string(),
                    line: line_of_item(text, class.as_str(), i),
                    detail: format!("assertion {} of `{class}`: {e}", i + 1),
                    help: "fix the assertion; its kinds and fields are those of replay rubrics (`json_path_equals`, `contains`, `regex`, `json_schema`, `tool_path`, `llm_judge`)".to_string(),
                });
            }
        }
        Ok(())
    }
}

/// The unified diff of two versions of a case's file.
pub fn version_diff(old: &RegressionCase, new: &RegressionCase) -> String {
    similar::TextDiff::from_lines(old.to_yaml().as_str(), new.to_yaml().as_str())
        .unified_diff()
        .context_radius(3)
        .header(
            &format!("{} version {}", old.id, old.version),
            &format!("{} version {}", new.id, new.version),
        )
        .to_string()
}

/// Whether `id` can name a case (and its files).
pub fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 120
        && id.chars().next().is_some_and(|c| c.is_ascii_alphanumeric())
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// A case id made from free text: lower case, runs of other characters as `-`.
pub fn slug(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
    }
    let out: String = out.trim_end_matches('-').chars().take(100).collect();
    if out.is_empty() {
        "case".to_string()
    } else {
        out
    }
}

/// How to fix the commonest serde complaints.
/// The replay a `replay export` draft was made from, when `text` is one (no `format`, and a
/// `source` naming a replay).
fn replay_draft(text: &str) -> Option<String> {
    let doc: serde_yaml::Value = serde_yaml::from_str(text).ok()?;
    if doc.get("format").is_some() {
        return None;
    }
    doc.get("source")?
        .get("replay")?
        .as_str()
        .map(str::to_string)
}

fn help_for(message: &str) -> String {
    if message.contains("unknown field") {
        "remove or rename the field; a case has format, id, version, name, description, agent, task_type, source, bundle, step, mutations, mode, templates, assertions and changes".to_string()
    } else if message.contains("missing field") {
        "add the field; `tollgate regress from-run RUN` writes a complete case to start from"
            .to_string()
    } else if message.contains("unknown variant") {
        "use one of the variants the message lists".to_string()
    } else {
        "the file is YAML in the `tollgate.case/v1` format; see `tollgate regress from-run --help`"
            .to_string()
    }
}

/// The 1-based line where top-level `key:` is written.
fn line_of_key(text: &str, key: &str) -> Option<usize> {
    let prefix = format!("{key}:");
    text.lines()
        .position(|l| l.starts_with(&prefix))
        .map(|n| n + 1)
}

/// The 1-based line of item `index` of the list under `assertions:` → `group:` (block style).
fn line_of_item(text: &str, group: &str, index: usize) -> Option<usize> {
    let lines: Vec<&str> = text.lines().collect();
    let top = lines.iter().position(|l| l.starts_with("assertions:"))?;
    let head = format!("{group}:");
    let at = (top + 1..lines.len()).find(|&n| {
        let l = lines[n];
        l.trim_start().starts_with(&head) && l.starts_with(' ')
    })?;
    let indent = |l: &str| l.len() - l.trim_start().len();
    let base = indent(lines[at]);
    let mut seen = 0;
    for (n, l) in lines.iter().enumerate().skip(at + 1) {
        if l.trim().is_empty() {
            continue;
        }
        if indent(l) < base || (indent(l) == base && !l.trim_start().starts_with("- ")) {
            break;
        }
        if l.trim_start().starts_with("- ") && indent(l) <= base + 2 {
            if seen == index {
                return Some(n + 1);
            }
            seen += 1;
        }
    }
    Some(at + 1)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    const CASE: &str = "\
format: tollgate.case/v1
id: run-a-step-1
version: 1
name: step one
agent: coder
task_type: bugfix
source: {run: run-a, step: 1}
bundle: {path: fixtures/run-a-step-1.json, hash: abc}
step: 1
assertions:
  structural:
  - kind: json_path_equals
    path: $.blocked
    value: []
  policy:
  - kind: json_path_equals
    path: $.calls[0].effect
    value: allow
  - kind: regex
    pattern: '(unclosed'
";

    /// Bug 15 of issue 33: a `replay export` draft among the cases failed `regress run` on
    /// "unknown field `scenario`".
    #[test]
    fn a_replay_draft_among_the_cases_says_what_it_is_and_how_to_make_a_case_of_it() {
        let draft = "# A regression case drafted from replay rpl-1 of run run-a.\nname: x\nsource:\n  replay: rpl-1\n  scenario: scn-1\n  run: run-a\nmutations: []\n";
        let err = RegressionCase::parse(draft, "regressions/draft.yaml")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("a draft exported by `tollgate replay export` (replay `rpl-1`)"),
            "{err}"
        );
        assert!(err.contains("tollgate regress from-replay rpl-1"), "{err}");
        assert!(!err.contains("unknown field"), "{err}");
        // A case is read as a case.
        assert!(
            RegressionCase::parse(CASE, "c.yaml").is_err_and(|e| !e.to_string().contains("draft"))
        );
    }

    #[test]
    fn a_bad_assertion_is_refused_with_its_line() {
        let err = RegressionCase::parse(CASE, "cases/a.yaml").unwrap_err();
        let RegressError::CaseFile {
            path, line, detail, ..
        } = &err
        else {
            panic!("{err:?}")
        };
        assert_eq!(path, "cases/a.yaml");
        assert_eq!(*line, Some(19), "{err}");
        assert!(detail.contains("assertion 2 of `policy`"), "{detail}");
        assert!(err.to_string().contains("cases/a.yaml:19"), "{err}");
    }

    #[test]
    fn an_unknown_field_is_refused_with_its_line_and_help() {
        let text = CASE.replace("task_type: bugfix", "task_type: bugfix\ncolour: red");
        let err = RegressionCase::parse(&text, "a.yaml").unwrap_err();
        let shown = err.to_string();
        assert!(shown.contains("a.yaml:7"), "{shown}");
        assert!(shown.contains("unknown field `colour`"), "{shown}");
        assert!(shown.contains("help: remove or rename"), "{shown}");
    }

    #[test]
    fn a_case_without_assertions_is_refused() {
        let text = CASE.split("assertions:").next().unwrap().to_string() + "assertions: {}\n";
        let err = RegressionCase::parse(&text, "a.yaml").unwrap_err();
        assert!(err.to_string().contains("cannot fail"), "{err}");
    }

    #[test]
    fn a_case_reads_back_as_written() {
        let text = CASE.replace("'(unclosed'", "'^allow$'");
        let case = RegressionCase::parse(&text, "a.yaml").unwrap();
        assert_eq!(case.assertions.len(), 3);
        let again = RegressionCase::parse(&case.to_yaml(), "b.yaml").unwrap();
        assert_eq!(again, case);
    }

    #[test]
    fn slugs_are_valid_ids() {
        for text in ["Run: bugfix/users 404!", "", "---", "ÄÖ x"] {
            assert!(valid_id(&slug(text)), "{text:?} -> {}", slug(text));
        }
        assert_eq!(slug("Run: bugfix/users 404!"), "run-bugfix-users-404");
    }
}
