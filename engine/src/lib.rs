//! Tollgate's Datalog engine.
//!
//! Stages: [`parse`] (source → [`ast::Program`] with spans) → [`check`] (names, arities, types,
//! range restriction) → stratify → plan (join orders, indexes) → evaluate (semi-naive on
//! datafrog) → explain (proofs, why-not) → re-check ([`proof_check`], independent of the
//! evaluator).
//!
//! The engine does no I/O and reads no clock: facts come in as values, time limits come in as
//! a caller-supplied deadline check.
//!
//! ```
//! use tollgate_engine::{Program, FactSet, Limits, Value, diag::Source};
//! let src = Source::new("tc.dl", r#"
//!     .decl edge(x: symbol, y: symbol)
//!     .decl path(x: symbol, y: symbol)
//!     .output path
//!     path(x, y) :- edge(x, y).
//!     path(x, z) :- path(x, y), edge(y, z).
//! "#);
//! let program = Program::compile(&src).unwrap();
//! let mut facts = FactSet::new();
//! facts.add("edge", vec![Value::sym("a"), Value::sym("b")], "test");
//! facts.add("edge", vec![Value::sym("b"), Value::sym("c")], "test");
//! let model = program.materialise(&facts, &Limits::default()).unwrap();
//! assert_eq!(model.relation("path").unwrap().len(), 3);
//! ```
#![warn(missing_docs)]

pub mod ast;
pub mod check;
pub mod components;
pub mod diag;
mod eval;
pub mod explain;
pub mod functions;
pub mod functors;
pub mod inline;
pub mod ir;
mod model;
pub mod naive;
pub mod parse;
mod plan;
mod prepared;
pub mod preprocess;
mod proof;
pub mod proof_check;
mod stratify;
pub mod tsv;
pub mod value;

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::{Arc, OnceLock};

pub use diag::{Diagnostic, Source};
pub use explain::{Proof, ProofStep, WhyNot};
pub use value::{Type, Value};

use diag::codes;
use eval::Db;
pub use model::QueryStats;
use model::{ModelData, QueryState};

/// A checked, stratified program, cheap to clone and share.
#[derive(Clone)]
pub struct Program {
    ir: Arc<ir::Ir>,
    /// Its rules compiled and planned, on first materialisation (shared by clones).
    prepared: Arc<OnceLock<prepared::Prepared>>,
}

impl std::fmt::Debug for Program {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Program")
            .field("ir", &self.ir)
            .finish_non_exhaustive()
    }
}

impl Program {
    /// Parses and checks a program. Errors are every diagnostic found. Preprocessor lines
    /// (`#include`, `#define`, ...) are not read here: a program file goes through
    /// [`preprocess::preprocess`] first, as `tollgate rules eval` does.
    pub fn compile(source: &Source) -> Result<Program, Vec<Diagnostic>> {
        Self::compile_with(source, &functors::Functors::default())
    }

    /// Like [`Program::compile`], with implementations for the program's user-defined
    /// functors (`.functor f(...): T`, called `@f(...)`): see [`functors`].
    pub fn compile_with(
        source: &Source,
        functors: &functors::Functors,
    ) -> Result<Program, Vec<Diagnostic>> {
        let ast = parse::parse_program(source)?;
        let ir = check::check_with(&ast, source, functors)?;
        Ok(Program {
            ir: Arc::new(ir),
            prepared: Arc::default(),
        })
    }

    /// What materialising needs of the program alone, prepared once.
    pub(crate) fn prepared(&self) -> &prepared::Prepared {
        self.prepared
            .get_or_init(|| prepared::Prepared::new(&self.ir))
    }

    /// The checked program.
    pub fn ir(&self) -> &ir::Ir {
        &self.ir
    }

    /// Warnings found while checking.
    pub fn warnings(&self) -> &[Diagnostic] {
        &self.ir.warnings
    }

    /// The source the program came from.
    pub fn source(&self) -> &Source {
        &self.ir.source
    }

    /// Evaluates the program over `facts` (plus the facts written in it) into a model that
    /// can answer queries and explain every fact.
    pub fn materialise(&self, facts: &FactSet, limits: &Limits) -> Result<Model, EvalError> {
        Model::build(self, facts, limits, true)
    }

    /// Like [`Program::materialise`] but without recording what proofs need: faster, and
    /// the model cannot explain.
    pub fn evaluate(&self, facts: &FactSet, limits: &Limits) -> Result<Model, EvalError> {
        Model::build(self, facts, limits, false)
    }

    /// A dump of the plans of every rule as evaluated by [`Program::materialise`] (the plan
    /// stage's snapshot).
    pub fn plan_dump(&self) -> String {
        let mut out = String::new();
        for plans in &self.prepared().strata {
            for p in plans {
                let _ = writeln!(out, "{}", plan::DisplayPlan(&self.ir, p));
            }
        }
        out
    }
}

/// A fact outside the engine: relation name and values.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Fact {
    /// Relation name.
    pub relation: String,
    /// Values in column order.
    pub values: Vec<Value>,
}

impl Fact {
    /// A fact.
    pub fn new(relation: impl Into<String>, values: Vec<Value>) -> Self {
        Fact {
            relation: relation.into(),
            values,
        }
    }

    /// Parses `r("a", 3)` (a trailing `.` is allowed).
    pub fn parse(text: &str) -> Result<Fact, Box<Diagnostic>> {
        let src = Source::new("<fact>", text);
        let atom = parse::parse_fact(&src).map_err(Box::new)?;
        let values: Result<Vec<Value>, Box<Diagnostic>> =
            atom.args.iter().map(fact_value).collect();
        Ok(Fact {
            relation: atom.relation.name,
            values: values?,
        })
    }
}

/// A literal of a fact given as text: a number, a string, a record `[..]` or `nil`.
fn fact_value(a: &ast::Expr) -> Result<Value, Box<Diagnostic>> {
    {
        {
            let v = match a {
                ast::Expr::Nil(_) => Value::Nil,
                ast::Expr::Branch(name, args, _) => {
                    let values: Result<Vec<Value>, Box<Diagnostic>> =
                        args.iter().map(fact_value).collect();
                    Value::Adt {
                        branch: Arc::from(name.name.as_str()),
                        args: values?.into(),
                    }
                }
                ast::Expr::Record(fields, _) => {
                    let values: Result<Vec<Value>, Box<Diagnostic>> =
                        fields.iter().map(fact_value).collect();
                    Value::Record(values?.into())
                }
                ast::Expr::Number(n, s) => Value::Number(i32::try_from(*n).map_err(|_| {
                    Diagnostic::error(
                        codes::LITERAL,
                        format!("`{n}` does not fit a 32-bit number"),
                        *s,
                    )
                })?),
                ast::Expr::Unsigned(n, s) => Value::Unsigned(u32::try_from(*n).map_err(|_| {
                    Box::new(Diagnostic::error(
                        codes::LITERAL,
                        format!("`{n}` does not fit an unsigned"),
                        *s,
                    ))
                })?),
                ast::Expr::Float(x, _) => Value::Float(*x as f32),
                ast::Expr::String(s, _) => Value::sym(s),
                other => {
                    return Err(Box::new(
                        Diagnostic::error(codes::FACT, "a fact holds constants only", other.span())
                            .with_help("write strings in double quotes, numbers as digits and records as `[1, \"a\"]` or `nil`"),
                    ));
                }
            };
            Ok(v)
        }
    }
}

impl std::fmt::Display for Fact {
    /// `relation(literal, ...)`, written into one buffer (a retrieval's input hash writes
    /// every memory fact so).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut out = String::with_capacity(self.relation.len() + 2 + 12 * self.values.len());
        out.push_str(&self.relation);
        out.push('(');
        for (i, v) in self.values.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            v.write_literal(&mut out);
        }
        out.push(')');
        f.write_str(&out)
    }
}

/// Facts with an origin label each (`request`, `envelope:repo-default@3`, `edge.facts:12`).
#[derive(Debug, Clone, Default)]
pub struct FactSet {
    facts: Vec<(Fact, Arc<str>)>,
}

impl FactSet {
    /// An empty set.
    pub fn new() -> Self {
        FactSet::default()
    }

    /// Adds a fact.
    pub fn add(&mut self, relation: impl Into<String>, values: Vec<Value>, origin: &str) {
        self.facts
            .push((Fact::new(relation, values), Arc::from(origin)));
    }

    /// Adds a fact with a shared origin label.
    pub fn push(&mut self, fact: Fact, origin: Arc<str>) {
        self.facts.push((fact, origin));
    }

    /// Adds every fact of another set.
    pub fn extend_from(&mut self, other: &FactSet) {
        self.facts.extend(other.facts.iter().cloned());
    }

    /// The facts with their origins, in insertion order.
    pub fn iter(&self) -> impl Iterator<Item = &(Fact, Arc<str>)> {
        self.facts.iter()
    }

    /// Number of facts.
    pub fn len(&self) -> usize {
        self.facts.len()
    }

    /// Whether empty.
    pub fn is_empty(&self) -> bool {
        self.facts.is_empty()
    }
}

/// A caller-supplied check that says when time is up. The engine calls it between rounds;
/// it never reads a clock itself.
pub type Deadline = Arc<dyn Fn() -> bool + Send + Sync>;

/// Bounds on one evaluation.
#[derive(Clone)]
pub struct Limits {
    /// Most facts derived (counted over all relations, inputs included).
    pub max_facts: usize,
    /// Most rounds of one stratum.
    pub max_iterations: usize,
    /// Checked between rounds; `true` stops evaluation with [`EvalError::Deadline`].
    pub deadline: Option<Deadline>,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_facts: 50_000_000,
            max_iterations: 1_000_000,
            deadline: None,
        }
    }
}

impl std::fmt::Debug for Limits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Limits")
            .field("max_facts", &self.max_facts)
            .field("max_iterations", &self.max_iterations)
            .field("deadline", &self.deadline.is_some())
            .finish()
    }
}

/// Why evaluation stopped without a result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EvalError {
    /// A fact does not fit the program.
    #[error("bad fact from `{origin}`: {message}")]
    BadFact {
        /// Where the fact came from.
        origin: String,
        /// What is wrong.
        message: String,
    },
    /// More facts than allowed.
    #[error("evaluation derived more than {limit} facts")]
    FactLimit {
        /// The limit.
        limit: usize,
    },
    /// More rounds than allowed.
    #[error("a stratum ran more than {limit} rounds")]
    IterationLimit {
        /// The limit.
        limit: usize,
    },
    /// The deadline check said time is up.
    #[error("evaluation ran past its deadline")]
    Deadline,
    /// `range` generated more values than allowed (as many as facts may be derived).
    #[error("`range` generated more than {limit} values")]
    GenerateLimit {
        /// The limit.
        limit: usize,
    },
    /// A record or branch nested deeper than [`value::MAX_RECORD_DEPTH`].
    #[error("a record nested more than {limit} deep (records and branches nest at most that deep)")]
    RecordDepth {
        /// The limit.
        limit: u16,
    },
    /// Something asked of a model that it cannot do.
    #[error("{0}")]
    Unsupported(String),
}

/// The rows of some relations, sorted, with Soufflé's text output and a content hash.
#[derive(Debug, Clone, PartialEq)]
pub struct Outputs {
    relations: BTreeMap<String, Vec<Vec<Value>>>,
    arities: BTreeMap<String, usize>,
}

impl Outputs {
    pub(crate) fn new(
        relations: BTreeMap<String, Vec<Vec<Value>>>,
        arities: BTreeMap<String, usize>,
    ) -> Self {
        Outputs { relations, arities }
    }

    /// Relation names and rows, by name.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &[Vec<Value>])> {
        self.relations
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_slice()))
    }

    /// Rows of one relation.
    pub fn get(&self, name: &str) -> Option<&[Vec<Value>]> {
        self.relations.get(name).map(Vec::as_slice)
    }

    /// Soufflé's `.csv` text of one relation: rows sorted, columns joined by `delimiter`,
    /// `()` for a zero-column relation that holds.
    pub fn to_text(&self, name: &str, delimiter: &str) -> String {
        let mut out = String::new();
        let arity = self.arities.get(name).copied().unwrap_or(0);
        for row in self
            .relations
            .get(name)
            .map(Vec::as_slice)
            .unwrap_or_default()
        {
            if arity == 0 {
                out.push_str("()\n");
                continue;
            }
            // As Soufflé writes a file: floats to `max_digits10`, the rest as they read.
            for (i, v) in row.iter().enumerate() {
                if i > 0 {
                    out.push_str(delimiter);
                }
                v.write_output(&mut out);
            }
            out.push('\n');
        }
        out
    }

    /// A hash of every relation's name and rows: equal outputs, equal hashes.
    pub fn hash(&self) -> String {
        let mut h = blake3::Hasher::new();
        for name in self.relations.keys() {
            h.update(name.as_bytes());
            h.update(b"\n");
            h.update(self.to_text(name, "\t").as_bytes());
            h.update(b"\x1e");
        }
        h.finalize().to_hex().to_string()
    }

    /// `{ "relation": [[values...], ...] }`.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(&self.relations).unwrap_or(serde_json::Value::Null)
    }
}

/// The width-specific data of a model.
pub(crate) enum ModelInner {
    W2(ModelData<2>),
    W4(ModelData<4>),
    W8(ModelData<8>),
    W16(ModelData<16>),
    W32(ModelData<32>),
}

macro_rules! with_model {
    ($inner:expr, $d:ident => $body:expr) => {
        match $inner {
            ModelInner::W2($d) => $body,
            ModelInner::W4($d) => $body,
            ModelInner::W8($d) => $body,
            ModelInner::W16($d) => $body,
            ModelInner::W32($d) => $body,
        }
    };
}

/// An immutable, evaluated program: every relation complete. `Send + Sync`.
pub struct Model {
    inner: ModelInner,
}

impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Model").finish_non_exhaustive()
    }
}

impl Model {
    fn build(
        program: &Program,
        facts: &FactSet,
        limits: &Limits,
        ranks: bool,
    ) -> Result<Model, EvalError> {
        let w = program.prepared().width;
        let inner = if w <= 2 {
            ModelInner::W2(ModelData::materialise(program, facts, limits, ranks)?)
        } else if w <= 4 {
            ModelInner::W4(ModelData::materialise(program, facts, limits, ranks)?)
        } else if w <= 8 {
            ModelInner::W8(ModelData::materialise(program, facts, limits, ranks)?)
        } else if w <= 16 {
            ModelInner::W16(ModelData::materialise(program, facts, limits, ranks)?)
        } else if w <= 32 {
            ModelInner::W32(ModelData::materialise(program, facts, limits, ranks)?)
        } else {
            return Err(EvalError::Unsupported(format!(
                "a rule carries {w} variables between joins; at most 32 are supported: split it into smaller rules"
            )));
        };
        Ok(Model { inner })
    }

    /// The program.
    pub fn program(&self) -> &Program {
        with_model!(&self.inner, d => &d.program)
    }

    /// All rows of a relation, sorted.
    pub fn relation(&self, name: &str) -> Option<Vec<Vec<Value>>> {
        with_model!(&self.inner, d => {
            let rel = d.program.ir().relation(name)?;
            let valid = vec![true; d.parts.len()];
            let db = d.db(&valid);
            Some(d.rows(rel, &db, &d.symbols))
        })
    }

    /// The `.output` relations.
    pub fn outputs(&self) -> Outputs {
        with_model!(&self.inner, d => {
            let ir = d.program.ir();
            let rels: Vec<usize> = (0..ir.relations.len()).filter(|&r| ir.relations[r].output.is_some()).collect();
            let valid = vec![true; d.parts.len()];
            let db = d.db(&valid);
            model::outputs_of(d, &rels, &db, &d.symbols)
        })
    }

    /// Number of tuples per relation name.
    pub fn sizes(&self) -> BTreeMap<String, usize> {
        with_model!(&self.inner, d => {
            let ir = d.program.ir();
            (0..ir.relations.len()).map(|r| (ir.relations[r].name.clone(), d.parts[r].len())).collect()
        })
    }

    /// Adds request facts and derives what depends on them, reusing the model in place.
    pub fn query(&self, request: &FactSet, limits: &Limits) -> Result<Answer<'_>, EvalError> {
        let state = match &self.inner {
            ModelInner::W2(d) => AnswerInner::W2(d.query(request, limits)?),
            ModelInner::W4(d) => AnswerInner::W4(d.query(request, limits)?),
            ModelInner::W8(d) => AnswerInner::W8(d.query(request, limits)?),
            ModelInner::W16(d) => AnswerInner::W16(d.query(request, limits)?),
            ModelInner::W32(d) => AnswerInner::W32(d.query(request, limits)?),
        };
        Ok(Answer { model: self, state })
    }

    /// Whether a fact holds.
    pub fn contains(&self, fact: &Fact) -> bool {
        with_model!(&self.inner, d => {
            let valid = vec![true; d.parts.len()];
            let db = d.db(&valid);
            explain::contains(d, &db, &d.symbols, fact)
        })
    }

    /// The proof of a fact that holds.
    pub fn prove(&self, fact: &Fact) -> Result<Proof, explain::ExplainError> {
        with_model!(&self.inner, d => {
            let valid = vec![true; d.parts.len()];
            let db = d.db(&valid);
            let mut cx = plan::EvalCx { symbols: value::Interner::child(d.symbols.clone()), patterns: d.patterns.clone(), generate_left: usize::MAX, generate_exceeded: false };
            explain::prove(d, &db, &mut cx, explain::ProofInputs { inputs: &Vec::new(), origins: &[], affected: &[], derivations: None }, fact)
        })
    }

    /// Why a fact does not hold.
    pub fn why_not(&self, fact: &Fact) -> Result<WhyNot, explain::ExplainError> {
        with_model!(&self.inner, d => {
            let valid = vec![true; d.parts.len()];
            let db = d.db(&valid);
            let mut cx = plan::EvalCx { symbols: value::Interner::child(d.symbols.clone()), patterns: d.patterns.clone(), generate_left: usize::MAX, generate_exceeded: false };
            explain::why_not(d, &db, &mut cx, Cow::Borrowed(fact))
        })
    }
}

enum AnswerInner {
    W2(QueryState<2>),
    W4(QueryState<4>),
    W8(QueryState<8>),
    W16(QueryState<16>),
    W32(QueryState<32>),
}

macro_rules! with_answer {
    ($self:expr, $d:ident, $q:ident => $body:expr) => {
        match (&$self.model.inner, &$self.state) {
            (ModelInner::W2($d), AnswerInner::W2($q)) => $body,
            (ModelInner::W4($d), AnswerInner::W4($q)) => $body,
            (ModelInner::W8($d), AnswerInner::W8($q)) => $body,
            (ModelInner::W16($d), AnswerInner::W16($q)) => $body,
            (ModelInner::W32($d), AnswerInner::W32($q)) => $body,
            _ => unreachable_width(),
        }
    };
}

fn unreachable_width() -> ! {
    // An answer is always built from its own model, with the model's width.
    panic!("answer and model widths differ")
}

/// The result of a query: the model plus what the request derived, borrowed from the model.
pub struct Answer<'m> {
    model: &'m Model,
    state: AnswerInner,
}

impl std::fmt::Debug for Answer<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Answer").finish_non_exhaustive()
    }
}

impl Answer<'_> {
    /// What the query did: tuples it derived, and model tuples it had to scan.
    pub fn stats(&self) -> QueryStats {
        match &self.state {
            AnswerInner::W2(q) => q.stats,
            AnswerInner::W4(q) => q.stats,
            AnswerInner::W8(q) => q.stats,
            AnswerInner::W16(q) => q.stats,
            AnswerInner::W32(q) => q.stats,
        }
    }

    /// All rows of a relation as seen by this query, sorted.
    pub fn relation(&self, name: &str) -> Option<Vec<Vec<Value>>> {
        with_answer!(self, d, q => {
            let rel = d.program.ir().relation(name)?;
            let db = Db { model: Some(&d.parts), model_valid: &q.plan.model_valid, local: eval::LocalParts::Sparse(&q.local) };
            Some(d.rows(rel, &db, &q.symbols))
        })
    }

    /// The rows of a relation as seen by this query whose column `column` holds `value`,
    /// sorted. Like filtering [`Answer::relation`], without decoding the other rows.
    pub fn relation_where(
        &self,
        name: &str,
        column: usize,
        value: &Value,
    ) -> Option<Vec<Vec<Value>>> {
        with_answer!(self, d, q => {
            let rel = d.program.ir().relation(name)?;
            let db = Db { model: Some(&d.parts), model_valid: &q.plan.model_valid, local: eval::LocalParts::Sparse(&q.local) };
            Some(d.rows_where(rel, &db, &q.symbols, column, value))
        })
    }

    /// The `.output` relations as seen by this query.
    pub fn outputs(&self) -> Outputs {
        with_answer!(self, d, q => {
            let ir = d.program.ir();
            let rels: Vec<usize> = (0..ir.relations.len()).filter(|&r| ir.relations[r].output.is_some()).collect();
            let db = Db { model: Some(&d.parts), model_valid: &q.plan.model_valid, local: eval::LocalParts::Sparse(&q.local) };
            model::outputs_of(d, &rels, &db, &q.symbols)
        })
    }

    /// Whether a fact holds for this query.
    pub fn contains(&self, fact: &Fact) -> bool {
        with_answer!(self, d, q => {
            let db = Db { model: Some(&d.parts), model_valid: &q.plan.model_valid, local: eval::LocalParts::Sparse(&q.local) };
            explain::contains(d, &db, &q.symbols, fact)
        })
    }

    /// The proof of a fact that holds for this query.
    pub fn prove(&self, fact: &Fact) -> Result<Proof, explain::ExplainError> {
        with_answer!(self, d, q => {
            let db = Db { model: Some(&d.parts), model_valid: &q.plan.model_valid, local: eval::LocalParts::Sparse(&q.local) };
            let mut cx = plan::EvalCx { symbols: value::Interner::child(q.symbols.clone()), patterns: d.patterns.clone(), generate_left: usize::MAX, generate_exceeded: false };
            explain::prove(d, &db, &mut cx, explain::ProofInputs { inputs: &q.inputs, origins: &q.origins, affected: &q.plan.affected, derivations: Some(&q.derivations) }, fact)
        })
    }

    /// Why a fact does not hold for this query.
    pub fn why_not(&self, fact: &Fact) -> Result<WhyNot, explain::ExplainError> {
        self.why_not_of(Cow::Borrowed(fact))
    }

    /// [`Answer::why_not`] of a fact the caller gives away: the why-not keeps it instead of a
    /// copy (a decision asks for several why-nots of facts it builds for the purpose).
    pub fn why_not_owned(&self, fact: Fact) -> Result<WhyNot, explain::ExplainError> {
        self.why_not_of(Cow::Owned(fact))
    }

    fn why_not_of(&self, fact: Cow<'_, Fact>) -> Result<WhyNot, explain::ExplainError> {
        with_answer!(self, d, q => {
            let db = Db { model: Some(&d.parts), model_valid: &q.plan.model_valid, local: eval::LocalParts::Sparse(&q.local) };
            let mut cx = plan::EvalCx { symbols: value::Interner::child(q.symbols.clone()), patterns: d.patterns.clone(), generate_left: usize::MAX, generate_exceeded: false };
            explain::why_not(d, &db, &mut cx, fact)
        })
    }
}
