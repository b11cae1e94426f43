//! Pack test files (YAML) and their runner.
//!
//! A test file (`*.test.yaml`) holds cases; each gives facts, runs a program (the built-in
//! packs, or a user pack read with the vocabulary) and checks what must and must not follow:
//!
//! ```yaml
//! - name: deny overrides allow
//!   given:
//!     - run("r1", "coder", "T-1", "org:acme/repo:api")
//!     - envelope_attached("base", "agent", "coder")
//!     - tool_rule("base", "base/fs", "allow", "fs.*")
//!     - tool_rule("base", "base/no-write", "deny", "fs.write")
//!     - tool_request("q1", "r1", "fs.write")
//!   expect:
//!     - tool_decision("q1", "deny", "base/no-write")
//!   expect_absent:
//!     - tool_decision("q1", "allow", "base/fs")
//!   decisions:
//!     tool: { q1: deny }        # exactly this effect (also `context:`, `model:`)
//! ```
//!
//! A file may instead be a mapping with `cases:` and what every case shares (`given:` facts
//! put before each case's own, `program:`). `program:` names a `.dl` file or a folder of them,
//! relative to the test file. Mistakes in a file (YAML, a fact, an unknown relation, a program
//! that does not compile) are [`TestFileError`]s with file, line and column; a case whose
//! expectation does not hold is a failed [`CaseReport`] that says which fact was missing or
//! unexpected, with the engine's why-not or proof.
//!
//! Every case is also evaluated the way the gateway does it (the static facts materialised,
//! then the request facts of [`crate::packs::REQUEST_RELATIONS`] queried against the model);
//! outputs that differ from a plain evaluation fail the case.

mod files;
mod report;
mod spec;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tollgate_engine::diag::Source;
use tollgate_engine::{
    EvalError, Fact, FactSet, Limits, Model, Program, Proof, Type, Value, WhyNot,
};

pub use files::collect_test_files;
pub use report::{CaseReport, Failure, FailureKind, FileReport, TestReport};
pub use spec::{CaseSpec, DecisionKind, Effect, FactText, TestFileError, TestFileSpec};

use files::{diagnostics, dl_files, envelope_facts};

use crate::packs;

/// Runs test files, compiling each program once.
#[derive(Debug)]
pub struct PackTester {
    limits: Limits,
    builtin: Option<Program>,
    user: BTreeMap<PathBuf, Program>,
}

impl Default for PackTester {
    fn default() -> Self {
        PackTester::new(Limits {
            max_facts: 1_000_000,
            max_iterations: 100_000,
            deadline: None,
        })
    }
}

impl PackTester {
    /// A tester evaluating every case within `limits`.
    pub fn new(limits: Limits) -> Self {
        PackTester {
            limits,
            builtin: None,
            user: BTreeMap::new(),
        }
    }

    /// Runs every test file named or found under the folders named (`*.test.yaml`).
    pub fn run_paths(&mut self, paths: &[PathBuf]) -> TestReport {
        let mut report = TestReport::default();
        let files = match collect_test_files(paths) {
            Ok(f) => f,
            Err(errors) => {
                report.errors = errors;
                return report;
            }
        };
        for path in files {
            match self.run_file(&path) {
                Ok(file) => {
                    for case in &file.cases {
                        if case.passed {
                            report.passed += 1;
                        } else {
                            report.failed += 1;
                        }
                    }
                    report.files.push(file);
                }
                Err(errors) => report.errors.extend(errors),
            }
        }
        report
    }

    /// Runs one test file; relative `program:` paths are resolved against its folder.
    pub fn run_file(&mut self, path: &Path) -> Result<FileReport, Vec<TestFileError>> {
        let name = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| {
            vec![TestFileError::new(
                &name,
                None,
                format!("cannot read `{name}`: {e}"),
            )]
        })?;
        let base = path.parent().unwrap_or(Path::new("."));
        self.run_source(&name, &text, base)
    }

    /// Runs a test file's text; `file` names it in reports, `base` resolves `program:` paths.
    pub fn run_source(
        &mut self,
        file: &str,
        text: &str,
        base: &Path,
    ) -> Result<FileReport, Vec<TestFileError>> {
        let spec = spec::parse(file, text).map_err(|e| vec![e])?;
        let input = FileInput { file, text, base };
        // Check every case before running any, so input errors are all reported at once.
        let mut prepared = Vec::new();
        let mut errors = Vec::new();
        for case in &spec.cases {
            match self.prepare(&input, &spec, case) {
                Ok(p) => prepared.push(p),
                Err(e) => errors.extend(e),
            }
        }
        if !errors.is_empty() {
            // Shared parts (envelope files, the program) fail the same way in every case.
            let mut seen = Vec::new();
            errors.retain(|e| {
                let new = !seen.contains(e);
                if new {
                    seen.push(e.clone());
                }
                new
            });
            return Err(errors);
        }
        let mut cases = Vec::new();
        for p in prepared {
            cases.push(self.run_case(&input, p)?);
        }
        Ok(FileReport {
            file: file.to_string(),
            cases,
        })
    }

    fn program(
        &mut self,
        input: &FileInput<'_>,
        path: Option<&str>,
    ) -> Result<Program, Vec<TestFileError>> {
        let Some(rel) = path else {
            if let Some(p) = &self.builtin {
                return Ok(p.clone());
            }
            let source = packs::builtin_source();
            let program = packs::builtin_program().map_err(|d| diagnostics(&source, &d))?;
            self.builtin = Some(program.clone());
            return Ok(program);
        };
        let full = input.base.join(rel);
        if let Some(p) = self.user.get(&full) {
            return Ok(p.clone());
        }
        let at = spec::locate(input.text, rel);
        let files = dl_files(&full).map_err(|m| {
            vec![TestFileError::new(input.file, at, m).with_help(
                "`program` is a `.dl` file or a folder of them, relative to the test file",
            )]
        })?;
        let mut sources = Vec::new();
        for f in &files {
            let name = f.display().to_string();
            let text = std::fs::read_to_string(f).map_err(|e| {
                vec![TestFileError::new(
                    input.file,
                    at,
                    format!("cannot read `{name}`: {e}"),
                )]
            })?;
            sources.push(Source::new(name, text));
        }
        let source = packs::with_vocabulary(&sources);
        let program = Program::compile(&source).map_err(|d| diagnostics(&source, &d))?;
        self.user.insert(full, program.clone());
        Ok(program)
    }

    fn prepare<'s>(
        &mut self,
        input: &FileInput<'_>,
        suite: &'s TestFileSpec,
        case: &'s CaseSpec,
    ) -> Result<PreparedCase<'s>, Vec<TestFileError>> {
        // Facts and values of the case are searched for from its own `name:` line on.
        let from = spec::case_offset(input.text, &case.name).unwrap_or(0);
        let program = self.program(input, case.program.as_deref().or(suite.program.as_deref()))?;
        let mut errors = Vec::new();
        let envelope_facts = envelope_facts(input, suite.envelopes.iter().chain(&case.envelopes))
            .unwrap_or_else(|e| {
                errors.extend(e);
                Vec::new()
            });
        let mut check = |facts: &[FactText], from: usize, wildcards: bool| -> Vec<Expectation> {
            let mut out = Vec::new();
            for f in facts {
                let at = spec::locate_from(input.text, &f.text, from);
                if f.has_wildcards() && !wildcards {
                    errors.push(
                        TestFileError::new(input.file, at, format!("`_` in the given fact `{}`", f.text))
                            .with_help("given facts are complete; `_` (any value) is for `expect` and `expect_absent`"),
                    );
                    continue;
                }
                match fit_fact(&program, &f.fact, &f.wildcards) {
                    Ok(fact) => {
                        let origin = at.map_or_else(
                            || input.file.to_string(),
                            |(l, _)| format!("{}:{l}", input.file),
                        );
                        out.push(Expectation {
                            text: f.text.clone(),
                            fact,
                            wildcards: f.wildcards.clone(),
                            origin,
                        });
                    }
                    Err((message, help)) => {
                        errors.push(TestFileError::new(input.file, at, message).with_help(help));
                    }
                }
            }
            out
        };
        let given: Vec<(Fact, String)> = check(&suite.given, 0, false)
            .into_iter()
            .chain(check(&case.given, from, false))
            .map(|e| (e.fact, e.origin))
            .chain(envelope_facts)
            .collect();
        let expect = check(&case.expect, from, true);
        let expect_absent = check(&case.expect_absent, from, true);
        for (kind, entries) in &case.decisions {
            let rel = program.ir().relation(kind.relation());
            if rel.is_none_or(|r| program.ir().relations[r].arity() < 2) {
                errors.push(TestFileError::new(
                    input.file,
                    spec::locate_from(input.text, "decisions", from),
                    format!(
                        "the program has no `{}(req, effect, ...)` relation",
                        kind.relation()
                    ),
                ));
            }
            for (req, effect) in entries {
                if !kind.effects().contains(effect) {
                    let allowed: Vec<&str> = kind.effects().iter().map(|e| e.as_str()).collect();
                    errors.push(
                        TestFileError::new(
                            input.file,
                            spec::locate_from(input.text, req, from),
                            format!(
                                "`{}` is not an effect of a {} decision",
                                effect.as_str(),
                                kind.relation()
                            ),
                        )
                        .with_help(format!("use one of {}", allowed.join(", "))),
                    );
                }
            }
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        Ok(PreparedCase {
            case,
            program,
            given,
            expect,
            expect_absent,
        })
    }

    fn run_case(
        &self,
        input: &FileInput<'_>,
        p: PreparedCase<'_>,
    ) -> Result<CaseReport, Vec<TestFileError>> {
        let mut report = CaseReport {
            name: p.case.name.clone(),
            line: spec::locate_case(input.text, &p.case.name).map(|a| a.0),
            passed: false,
            failures: Vec::new(),
        };
        let mut facts = FactSet::new();
        for (f, origin) in &p.given {
            facts.push(f.clone(), Arc::from(origin.as_str()));
        }
        let model = match p.program.materialise(&facts, &self.limits) {
            Ok(m) => m,
            Err(e) => {
                if let EvalError::BadFact { .. } = e {
                    return Err(vec![TestFileError::new(input.file, None, e.to_string())]);
                }
                report.failures.push(Failure::plain(
                    FailureKind::Evaluation,
                    format!("evaluation failed: {e}"),
                ));
                return Ok(report);
            }
        };
        report.failures.extend(self.staged_mismatch(&p, &model));
        for e in &p.expect {
            if !e.matches(&model).is_empty() {
                continue;
            }
            // A pattern has no single fact to explain; a complete fact gets the why-not.
            let why = if e.wildcards.iter().any(|w| *w) {
                None
            } else {
                model.why_not(&e.fact).ok()
            };
            report.failures.push(Failure {
                kind: FailureKind::Missing,
                fact: Some(e.text.clone()),
                message: format!("missing `{}`", e.text),
                explanation: why.as_ref().map(why_not_text),
                proof: None,
                why_not: why,
            });
        }
        for e in &p.expect_absent {
            let found = e.matches(&model);
            let Some(first) = found.first() else { continue };
            let proof = model.prove(first).ok();
            let message = if found.len() == 1 && found[0] == e.fact {
                format!("unexpected `{}`", e.text)
            } else {
                let all: Vec<String> = found.iter().map(|f| format!("`{f}`")).collect();
                format!("unexpected `{}`: {}", e.text, all.join(", "))
            };
            report.failures.push(Failure {
                kind: FailureKind::Unexpected,
                fact: Some(first.to_string()),
                message,
                explanation: proof.as_ref().map(Proof::to_text),
                proof,
                why_not: None,
            });
        }
        for (kind, entries) in &p.case.decisions {
            for (req, expected) in entries {
                if let Some(f) = check_decision(&model, *kind, req, *expected) {
                    report.failures.push(f);
                }
            }
        }
        report.passed = report.failures.is_empty();
        Ok(report)
    }

    /// Evaluates the case as the gateway does (static facts materialised, request facts
    /// queried) and reports any output that differs from the plain evaluation.
    fn staged_mismatch(&self, p: &PreparedCase<'_>, full: &Model) -> Option<Failure> {
        let mut static_facts = FactSet::new();
        let mut request = FactSet::new();
        for (f, origin) in &p.given {
            let set = if packs::REQUEST_RELATIONS.contains(&f.relation.as_str()) {
                &mut request
            } else {
                &mut static_facts
            };
            set.push(f.clone(), Arc::from(origin.as_str()));
        }
        if request.is_empty() {
            return None;
        }
        let staged = p
            .program
            .materialise(&static_facts, &self.limits)
            .and_then(|m| m.query(&request, &self.limits).map(|a| a.outputs()));
        let staged = match staged {
            Ok(o) => o,
            Err(e) => {
                return Some(Failure::plain(
                    FailureKind::StagedMismatch,
                    format!("staged evaluation failed where a plain one did not: {e}"),
                ));
            }
        };
        let plain = full.outputs();
        if staged == plain {
            return None;
        }
        let rows = |o: &tollgate_engine::Outputs, name: &str| -> BTreeSet<String> {
            o.get(name)
                .unwrap_or_default()
                .iter()
                .map(|r| {
                    r.iter()
                        .map(Value::to_literal)
                        .collect::<Vec<_>>()
                        .join(", ")
                })
                .collect()
        };
        let names: BTreeSet<&str> = plain.iter().chain(staged.iter()).map(|(n, _)| n).collect();
        let mut explanation = String::new();
        for name in names {
            let (a, b) = (rows(&plain, name), rows(&staged, name));
            for r in a.difference(&b) {
                let _ = writeln!(explanation, "only in plain evaluation: {name}({r})");
            }
            for r in b.difference(&a) {
                let _ = writeln!(explanation, "only in staged evaluation: {name}({r})");
            }
        }
        Some(Failure {
            explanation: Some(explanation),
            ..Failure::plain(
                FailureKind::StagedMismatch,
                "staged evaluation (materialise, then query) differs from plain evaluation (an engine bug)"
                    .to_string(),
            )
        })
    }
}

/// Checks a fact against the program's declarations and converts its numbers to the column
/// types (`3` for an `unsigned` column); `Err((message, help))` if it cannot fit.
fn fit_fact(program: &Program, fact: &Fact, wildcards: &[bool]) -> Result<Fact, (String, String)> {
    let ir = program.ir();
    let Some(rel) = ir.relation(&fact.relation) else {
        return Err((
            format!("unknown relation `{}` in `{fact}`", fact.relation),
            "use a relation the program declares (the vocabulary is rules/packs/vocabulary.dl)"
                .to_string(),
        ));
    };
    let info = &ir.relations[rel];
    let declared = || {
        let cols: Vec<String> = info
            .attrs
            .iter()
            .zip(&info.type_names)
            .map(|(a, t)| format!("{a}: {t}"))
            .collect();
        format!("it is declared as `{}({})`", info.name, cols.join(", "))
    };
    if info.arity() != fact.values.len() {
        return Err((
            format!(
                "`{}` has {} columns, `{fact}` has {}",
                info.name,
                info.arity(),
                fact.values.len()
            ),
            declared(),
        ));
    }
    let mut values = Vec::new();
    for (i, v) in fact.values.iter().enumerate() {
        if wildcards.get(i).copied().unwrap_or(false) {
            values.push(v.clone());
            continue;
        }
        let fitted = match (v, info.types[i]) {
            (Value::Number(n), Type::Unsigned) => u32::try_from(*n).ok().map(Value::Unsigned),
            (Value::Number(n), Type::Float) => Some(Value::Float(*n as f32)),
            (Value::Unsigned(n), Type::Number) => i32::try_from(*n).ok().map(Value::Number),
            (v, t) if v.ty() == t => Some(v.clone()),
            _ => None,
        };
        let Some(fitted) = fitted else {
            return Err((
                format!(
                    "column `{}` of `{}` is `{}`, got `{}` in `{fact}`",
                    info.attrs[i],
                    info.name,
                    info.type_names[i],
                    v.to_literal()
                ),
                declared(),
            ));
        };
        values.push(fitted);
    }
    Ok(Fact::new(fact.relation.clone(), values))
}

/// The why-not as text, leaving out the rules whose head cannot produce the fact (a decision
/// relation has a rule per effect; only the ones that could have given this fact matter).
fn why_not_text(why: &WhyNot) -> String {
    let mut relevant = why.clone();
    relevant
        .rules
        .retain(|r| r.failed_literal.is_some() || !r.reason.starts_with("its head cannot"));
    if relevant.rules.is_empty() {
        why.to_text()
    } else {
        relevant.to_text()
    }
}

/// Checks that request `req` got exactly the `expected` effect.
fn check_decision(
    model: &Model,
    kind: DecisionKind,
    req: &str,
    expected: Effect,
) -> Option<Failure> {
    let rows = model.relation(kind.relation()).unwrap_or_default();
    let key = Value::sym(req);
    let mine: Vec<&Vec<Value>> = rows.iter().filter(|r| r.first() == Some(&key)).collect();
    let effects: BTreeSet<String> = mine
        .iter()
        .filter_map(|r| r.get(1))
        .map(ToString::to_string)
        .collect();
    if effects.len() == 1 && effects.contains(expected.as_str()) {
        return None;
    }
    let what = format!("{} `{req}`", kind.relation());
    let Some(first) = mine.first() else {
        return Some(Failure::plain(
            FailureKind::WrongDecision,
            format!(
                "{what}: expected `{}`, got no decision (is there a request fact with id `{req}`?)",
                expected.as_str()
            ),
        ));
    };
    let got: Vec<String> = mine
        .iter()
        .map(|r| {
            let rest: Vec<String> = r.iter().skip(1).map(ToString::to_string).collect();
            format!("`{}`", rest.join("` by `"))
        })
        .collect();
    let fact = Fact::new(kind.relation(), (*first).clone());
    let proof = model.prove(&fact).ok();
    Some(Failure {
        kind: FailureKind::WrongDecision,
        fact: Some(fact.to_string()),
        message: format!(
            "{what}: expected `{}`, got {}",
            expected.as_str(),
            got.join(", ")
        ),
        explanation: proof.as_ref().map(Proof::to_text),
        proof,
        why_not: None,
    })
}

struct FileInput<'a> {
    file: &'a str,
    text: &'a str,
    base: &'a Path,
}

struct PreparedCase<'s> {
    case: &'s CaseSpec,
    program: Program,
    given: Vec<(Fact, String)>,
    expect: Vec<Expectation>,
    expect_absent: Vec<Expectation>,
}

/// A fact of a case, fitted to the program's column types.
struct Expectation {
    /// As written.
    text: String,
    fact: Fact,
    /// Columns written `_`.
    wildcards: Vec<bool>,
    /// `file:line`, for given facts' proofs.
    origin: String,
}

impl Expectation {
    /// The rows of the model this fact (or pattern) matches.
    fn matches(&self, model: &Model) -> Vec<Fact> {
        if !self.wildcards.iter().any(|w| *w) {
            return if model.contains(&self.fact) {
                vec![self.fact.clone()]
            } else {
                Vec::new()
            };
        }
        let rows = model.relation(&self.fact.relation).unwrap_or_default();
        rows.into_iter()
            .filter(|row| {
                row.iter()
                    .zip(&self.fact.values)
                    .zip(&self.wildcards)
                    .all(|((v, want), any)| *any || v == want)
            })
            .map(|row| Fact::new(self.fact.relation.clone(), row))
            .collect()
    }
}

#[cfg(test)]
mod tests;
