//! What a run of pack tests reports: per case, passed or failed with the reasons, serializable
//! to JSON; as text, one line per failure with its explanation indented below, then the counts.

use std::fmt::Write as _;

use serde::Serialize;
use tollgate_engine::{Proof, WhyNot};

use super::TestFileError;

/// Why a case failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureKind {
    /// An `expect:` fact does not hold.
    Missing,
    /// An `expect_absent:` fact holds.
    Unexpected,
    /// A `decisions:` entry got another effect, several, or none.
    WrongDecision,
    /// Evaluation stopped (a limit).
    Evaluation,
    /// Staged evaluation (materialise, then query) disagreed with a plain evaluation.
    StagedMismatch,
}

/// One reason a case failed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Failure {
    /// What kind of failure.
    pub kind: FailureKind,
    /// The fact concerned, as Datalog text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fact: Option<String>,
    /// One line saying what went wrong.
    pub message: String,
    /// The engine's why-not (for a missing fact) or proof (for an unexpected one), as text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub explanation: Option<String>,
    /// The proof of a fact that should not hold, or of the decision actually made.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub proof: Option<Proof>,
    /// Why a fact that should hold does not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why_not: Option<WhyNot>,
}

impl Failure {
    pub(super) fn plain(kind: FailureKind, message: String) -> Self {
        Failure {
            kind,
            fact: None,
            message,
            explanation: None,
            proof: None,
            why_not: None,
        }
    }
}

/// The outcome of one case.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CaseReport {
    /// The case's name.
    pub name: String,
    /// The line of its `name:`, when found.
    pub line: Option<usize>,
    /// Whether every expectation held.
    pub passed: bool,
    /// Why not, one entry per expectation that failed.
    pub failures: Vec<Failure>,
}

/// The outcome of one test file.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FileReport {
    /// The file.
    pub file: String,
    /// Its cases, in file order.
    pub cases: Vec<CaseReport>,
}

/// The outcome of a run over several files.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct TestReport {
    /// Cases that passed.
    pub passed: usize,
    /// Cases that failed.
    pub failed: usize,
    /// Files that ran.
    pub files: Vec<FileReport>,
    /// Input errors (bad files, missing paths); a file with errors runs no case.
    pub errors: Vec<TestFileError>,
}

impl TestReport {
    /// Whether every case passed and no file had errors.
    pub fn is_success(&self) -> bool {
        self.failed == 0 && self.errors.is_empty()
    }

    /// The failing cases with their reasons (explanations indented below), then the counts.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        for file in &self.files {
            for case in file.cases.iter().filter(|c| !c.passed) {
                let at = case
                    .line
                    .map_or_else(|| file.file.clone(), |l| format!("{}:{l}", file.file));
                for f in &case.failures {
                    let _ = writeln!(out, "FAIL {at} `{}`: {}", case.name, f.message);
                    for line in f.explanation.iter().flat_map(|e| e.lines()) {
                        let _ = writeln!(out, "    {line}");
                    }
                }
            }
        }
        let _ = write!(out, "{} passed, {} failed", self.passed, self.failed);
        if !self.errors.is_empty() {
            let n = self.errors.len();
            let _ = write!(out, ", {n} input error{}", if n == 1 { "" } else { "s" });
        }
        out.push('\n');
        out
    }
}
