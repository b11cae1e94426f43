#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Differential and property tests on generated stratified programs: the engine against the
//! naive reference evaluator, order independence, checkable (and tamper-evident) proofs, and
//! staged queries against full evaluation.
//!
//! Programs are generated as Datalog source text from a *tape* of random numbers: every choice
//! reads the next number, and 0 always picks the simplest option, so proptest's shrinking (which
//! drives numbers toward 0) shrinks programs too. A failing case prints its program and facts.
//!
//! `PROPTEST_CASES` sets the number of cases per property (256 when unset).

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::TestCaseError;
use tollgate_engine::explain::ProofStep;
use tollgate_engine::ir::{IrExpr, IrLit};
use tollgate_engine::proof_check::ProofChecker;
use tollgate_engine::{Fact, FactSet, Limits, Model, Program, Proof, Source, Value, naive};

/// Numbers range over `0..NUMBERS`; every arithmetic bind is guarded to stay in that range.
const NUMBERS: usize = 6;
const SYMBOLS: [&str; 4] = ["a", "b", "c", "d"];
const TAPE_LEN: usize = 512;
/// At most this many facts per case are proved and checked.
const PROOFS_PER_CASE: usize = 20;

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256)
}

fn config() -> ProptestConfig {
    ProptestConfig {
        // Saved seeds replay different programs whenever the generator changes (as it does
        // when a workaround below is dropped), so failures are kept as named regression tests
        // instead, built from the program the failure prints.
        failure_persistence: None,
        ..ProptestConfig::with_cases(cases())
    }
}

// ---- the generator --------------------------------------------------------------------------

/// Random choices, read in order; past the end every choice is 0.
struct Tape<'a> {
    data: &'a [u32],
    pos: usize,
}

impl Tape<'_> {
    fn next(&mut self) -> u32 {
        let v = self.data.get(self.pos).copied().unwrap_or(0);
        self.pos += 1;
        v
    }

    /// A choice in `0..n`.
    fn pick(&mut self, n: usize) -> usize {
        self.next() as usize % n.max(1)
    }

    /// `true` with roughly `percent` % probability; `false` when the tape says 0.
    fn chance(&mut self, percent: u32) -> bool {
        self.next() % 100 >= 100 - percent
    }

    fn choose<'v, T>(&mut self, items: &'v [T]) -> &'v T {
        &items[self.pick(items.len())]
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ty {
    Num,
    Sym,
}

impl Ty {
    fn decl(self) -> &'static str {
        match self {
            Ty::Num => "number",
            Ty::Sym => "symbol",
        }
    }
}

#[derive(Clone, Debug)]
struct Rel {
    name: String,
    types: Vec<Ty>,
    /// `None` for input relations (below every stratum).
    stratum: Option<usize>,
}

impl Rel {
    /// Whether this relation may be read positively by a rule of stratum `s`.
    fn readable_from(&self, s: usize) -> bool {
        self.stratum.is_none_or(|r| r <= s)
    }

    /// Whether this relation may be negated or aggregated by a rule of stratum `s`.
    fn complete_below(&self, s: usize) -> bool {
        self.stratum.is_none_or(|r| r < s)
    }
}

/// A generated program and its input facts.
#[derive(Clone)]
struct Case {
    rels: Vec<Rel>,
    /// Rules and written facts, one clause per entry.
    clauses: Vec<String>,
    /// Input facts (relation index, values).
    facts: Vec<(usize, Vec<Value>)>,
}

impl fmt::Debug for Case {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "program:\n{}", self.source(None))?;
        writeln!(f, "facts:")?;
        for (r, vals) in &self.facts {
            writeln!(
                f,
                "  {}",
                Fact::new(self.rels[*r].name.clone(), vals.clone())
            )?;
        }
        Ok(())
    }
}

impl Case {
    /// The program text with the clauses in `order` (source order when `None`).
    fn source(&self, order: Option<&[usize]>) -> String {
        let mut out = String::new();
        for r in &self.rels {
            let cols: Vec<String> = r
                .types
                .iter()
                .enumerate()
                .map(|(i, t)| format!("c{i}: {}", t.decl()))
                .collect();
            out.push_str(&format!(".decl {}({})\n", r.name, cols.join(", ")));
            if r.stratum.is_some() {
                out.push_str(&format!(".output {}\n", r.name));
            }
        }
        let identity: Vec<usize> = (0..self.clauses.len()).collect();
        for &i in order.unwrap_or(&identity) {
            out.push_str(&self.clauses[i]);
            out.push('\n');
        }
        out
    }

    fn program(&self, order: Option<&[usize]>) -> Result<Program, TestCaseError> {
        let src = Source::new("gen.dl", self.source(order));
        Program::compile(&src).map_err(|diags| {
            let text: Vec<String> = diags.iter().map(|d| d.render(&src)).collect();
            TestCaseError::fail(format!(
                "generated program rejected:\n{}\n{}",
                src.text,
                text.join("\n")
            ))
        })
    }

    fn fact(&self, i: usize) -> Fact {
        let (r, vals) = &self.facts[i];
        Fact::new(self.rels[*r].name.clone(), vals.clone())
    }

    /// The facts in `order`, each with its own origin `input:INDEX`.
    fn fact_set(&self, order: impl IntoIterator<Item = usize>) -> FactSet {
        let mut set = FactSet::new();
        for i in order {
            set.push(self.fact(i), Arc::from(format!("input:{i}")));
        }
        set
    }

    fn all_facts(&self) -> FactSet {
        self.fact_set(0..self.facts.len())
    }
}

fn constant(t: &mut Tape, ty: Ty) -> String {
    match ty {
        Ty::Num => t.pick(NUMBERS).to_string(),
        Ty::Sym => format!("\"{}\"", t.choose(&SYMBOLS)),
    }
}

fn value(t: &mut Tape, ty: Ty) -> Value {
    match ty {
        Ty::Num => Value::Number(t.pick(NUMBERS) as i32),
        Ty::Sym => Value::sym(*t.choose(&SYMBOLS)),
    }
}

#[derive(Clone)]
struct Var {
    name: String,
    ty: Ty,
    /// Grounded before aggregates are lowered (bound by a positive atom or a bind over such
    /// variables), so an aggregate body may correlate with it.
    correlatable: bool,
}

/// Builds one rule.
struct RuleGen<'t, 'd> {
    t: &'t mut Tape<'d>,
    rels: &'t [Rel],
    stratum: usize,
    vars: Vec<Var>,
    lits: Vec<String>,
    fresh: usize,
}

impl RuleGen<'_, '_> {
    fn new_var(&mut self, prefix: &str) -> String {
        self.fresh += 1;
        format!("{prefix}{}", self.fresh)
    }

    fn bound(&self, ty: Ty) -> Vec<String> {
        self.vars
            .iter()
            .filter(|v| v.ty == ty)
            .map(|v| v.name.clone())
            .collect()
    }

    /// A positive body atom: shares variables, introduces new ones, or has constants,
    /// wildcards and (rarely) an expression over a bound variable. A rule's first atom mostly
    /// reads a complete relation (an input or a lower stratum), so that rules derive something.
    fn positive_atom(&mut self, first: bool) {
        let lower: Vec<&Rel> = self
            .rels
            .iter()
            .filter(|r| r.complete_below(self.stratum))
            .collect();
        let readable: Vec<&Rel> = self
            .rels
            .iter()
            .filter(|r| r.readable_from(self.stratum))
            .collect();
        let candidates = if first && !self.t.chance(25) {
            lower
        } else {
            readable
        };
        let rel = (*self.t.choose(&candidates)).clone();
        let mut args = Vec::new();
        for &ty in &rel.types {
            let same = self.bound(ty);
            let arg = match self.t.pick(20) {
                0..=4 if !same.is_empty() => self.t.choose(&same).clone(),
                16 | 17 => constant(self.t, ty),
                18 => "_".into(),
                19 if ty == Ty::Num && !same.is_empty() => {
                    let x = self.t.choose(&same).clone();
                    format!("{x} + 1")
                }
                _ => {
                    let name = self.new_var("x");
                    self.vars.push(Var {
                        name: name.clone(),
                        ty,
                        correlatable: true,
                    });
                    name
                }
            };
            args.push(arg);
        }
        self.lits.push(format!("{}({})", rel.name, args.join(", ")));
    }

    fn comparison(&mut self) {
        let nums = self.bound(Ty::Num);
        let syms = self.bound(Ty::Sym);
        if !nums.is_empty() && (syms.is_empty() || self.t.pick(3) > 0) {
            let op = *self.t.choose(&["<", "!=", "<=", ">", ">=", "="]);
            let a = self.t.choose(&nums).clone();
            let b = if self.t.chance(50) {
                self.t.choose(&nums).clone()
            } else {
                constant(self.t, Ty::Num)
            };
            self.lits.push(format!("{a} {op} {b}"));
        } else if !syms.is_empty() {
            let a = self.t.choose(&syms).clone();
            let op = *self.t.choose(&["!=", "="]);
            let b = if self.t.chance(50) {
                self.t.choose(&syms).clone()
            } else {
                constant(self.t, Ty::Sym)
            };
            self.lits.push(format!("{a} {op} {b}"));
        }
    }

    /// `z = x + 1` and friends, guarded so that `z` stays in `0..NUMBERS` (which keeps
    /// recursion through binds finite).
    fn bind(&mut self) {
        let nums: Vec<Var> = self
            .vars
            .iter()
            .filter(|v| v.ty == Ty::Num)
            .cloned()
            .collect();
        if nums.is_empty() {
            return;
        }
        let x = self.t.choose(&nums).clone();
        let z = self.new_var("z");
        let (guard, expr) = match self.t.pick(4) {
            0 => (format!("{} < 5", x.name), format!("{} + 1", x.name)),
            1 => (
                format!("{0} > 0, {0} < 6", x.name),
                format!("{} - 1", x.name),
            ),
            2 => (format!("{} < 3", x.name), format!("{} * 2", x.name)),
            _ => (format!("{} < 6", x.name), format!("({} + 7) % 6", x.name)),
        };
        self.lits.push(guard);
        if self.t.chance(50) {
            self.lits.push(format!("{z} = {expr}"));
        } else {
            self.lits.push(format!("{expr} = {z}"));
        }
        self.vars.push(Var {
            name: z,
            ty: Ty::Num,
            correlatable: x.correlatable,
        });
    }

    fn negation(&mut self) {
        let candidates: Vec<&Rel> = self
            .rels
            .iter()
            .filter(|r| r.complete_below(self.stratum))
            .collect();
        let rel = (*self.t.choose(&candidates)).clone();
        let mut args = Vec::new();
        for &ty in &rel.types {
            let same = self.bound(ty);
            args.push(match self.t.pick(10) {
                0..=6 if !same.is_empty() => self.t.choose(&same).clone(),
                7 => "_".into(),
                8 if ty == Ty::Num && !same.is_empty() => {
                    format!("{} + 1", self.t.choose(&same))
                }
                _ => constant(self.t, ty),
            });
        }
        self.lits
            .push(format!("!{}({})", rel.name, args.join(", ")));
    }

    /// One atom of an aggregate body: `_`, outer variables (grouping), constants, and local
    /// variables (new, or shared with an earlier atom of the body).
    fn aggregate_atom(&mut self, locals: &mut Vec<(String, Ty)>) -> String {
        let candidates: Vec<&Rel> = self
            .rels
            .iter()
            .filter(|r| r.complete_below(self.stratum))
            .collect();
        let rel = (*self.t.choose(&candidates)).clone();
        let mut args = Vec::new();
        for &ty in &rel.types {
            let outer: Vec<String> = self
                .vars
                .iter()
                .filter(|v| v.ty == ty && v.correlatable)
                .map(|v| v.name.clone())
                .collect();
            let shared: Vec<String> = locals
                .iter()
                .filter(|(_, t)| *t == ty)
                .map(|(n, _)| n.clone())
                .collect();
            args.push(match self.t.pick(7) {
                0 => "_".into(),
                1 if !outer.is_empty() => self.t.choose(&outer).clone(),
                2 => constant(self.t, ty),
                3 if !shared.is_empty() => self.t.choose(&shared).clone(),
                _ => {
                    let name = self.new_var("a");
                    locals.push((name.clone(), ty));
                    name
                }
            });
        }
        format!("{}({})", rel.name, args.join(", "))
    }

    /// `n = count : { r(...) }`, `sum`, `min` or `max` over relations of lower strata, possibly
    /// correlated with outer variables (grouping), with one or two atoms and a filter.
    fn aggregate(&mut self) {
        let mut kind = *self.t.choose(&["count", "sum", "min", "max"]);
        let mut locals: Vec<(String, Ty)> = Vec::new();
        let mut atoms = vec![self.aggregate_atom(&mut locals)];
        if self.t.chance(30) {
            atoms.push(self.aggregate_atom(&mut locals));
        }
        let local_nums: Vec<String> = locals
            .iter()
            .filter(|(_, ty)| *ty == Ty::Num)
            .map(|(n, _)| n.clone())
            .collect();
        let mut target = String::new();
        if kind != "count" {
            match local_nums.first() {
                Some(x) if self.t.chance(20) => target = format!(" {x} + 1"),
                Some(x) => target = format!(" {x}"),
                None => kind = "count",
            }
        }
        let mut body = atoms.join(", ");
        if let Some(x) = local_nums.last()
            && self.t.chance(25)
        {
            body.push_str(&format!(", {x} > 1"));
        }
        // Soufflé scoping: the variables of the aggregated expression are local even when the
        // same name is bound outside. Rename the target's variable to an outer name now and
        // then (it must not be a grouping variable of this aggregate, or it would be shared).
        if let Some(x) = local_nums.first()
            && !target.is_empty()
            && self.t.chance(20)
        {
            let outer: Vec<String> = self
                .vars
                .iter()
                .filter(|v| v.ty == Ty::Num && !has_word(&body, &v.name))
                .map(|v| v.name.clone())
                .collect();
            if !outer.is_empty() {
                let y = self.t.choose(&outer).clone();
                body = replace_word(&body, x, &y);
                target = replace_word(&target, x, &y);
            }
        }
        let n = self.new_var("n");
        self.lits
            .push(format!("{n} = {kind}{target} : {{ {body} }}"));
        self.vars.push(Var {
            name: n,
            ty: Ty::Num,
            correlatable: false,
        });
    }

    fn head(&mut self, rel: &Rel) -> String {
        let mut args = Vec::new();
        for &ty in &rel.types {
            let same: Vec<String> = self
                .vars
                .iter()
                .filter(|v| v.ty == ty)
                .map(|v| v.name.clone())
                .collect();
            args.push(match self.t.pick(20) {
                0..=17 if !same.is_empty() => self.t.choose(&same).clone(),
                // An expression in the head, guarded to stay in the domain.
                18 if ty == Ty::Num && !same.is_empty() => {
                    let x = self.t.choose(&same).clone();
                    self.lits.push(format!("{x} < 5"));
                    format!("{x} + 1")
                }
                _ => constant(self.t, ty),
            });
        }
        format!("{}({})", rel.name, args.join(", "))
    }
}

fn has_word(text: &str, word: &str) -> bool {
    text.split(|c: char| !c.is_ascii_alphanumeric())
        .any(|w| w == word)
}

fn replace_word(text: &str, from: &str, to: &str) -> String {
    let mut out = String::new();
    let mut word = String::new();
    for c in text.chars().chain(std::iter::once(' ')) {
        if c.is_ascii_alphanumeric() {
            word.push(c);
        } else {
            out.push_str(if word == from { to } else { &word });
            word.clear();
            out.push(c);
        }
    }
    out.pop();
    out
}

fn rule(t: &mut Tape, rels: &[Rel], head: &Rel) -> String {
    let stratum = head.stratum.unwrap_or(0);
    let mut g = RuleGen {
        t,
        rels,
        stratum,
        vars: Vec::new(),
        lits: Vec::new(),
        fresh: 0,
    };
    let atoms = 1 + g.t.pick(3);
    for i in 0..atoms {
        g.positive_atom(i == 0);
    }
    let extras = g.t.pick(3);
    for _ in 0..extras {
        match g.t.pick(6) {
            0 | 1 => g.comparison(),
            2 => g.bind(),
            3 | 4 => g.negation(),
            _ => g.aggregate(),
        }
    }
    let head = g.head(head);
    format!("{head} :- {}.", g.lits.join(", "))
}

fn build(tape: &[u32]) -> Case {
    let t = &mut Tape { data: tape, pos: 0 };
    let inputs = 1 + t.pick(2);
    let derived = 2 + t.pick(3);
    let mut rels = Vec::new();
    let mut stratum = 0;
    for i in 0..inputs + derived {
        let arity = 1 + t.pick(3);
        let types = (0..arity)
            .map(|_| if t.chance(25) { Ty::Sym } else { Ty::Num })
            .collect();
        let (name, s) = if i < inputs {
            (format!("in{i}"), None)
        } else {
            if i > inputs && t.chance(50) {
                stratum += 1;
            }
            (format!("d{}", i - inputs), Some(stratum))
        };
        rels.push(Rel {
            name,
            types,
            stratum: s,
        });
    }
    let mut clauses = Vec::new();
    for head in rels.iter().filter(|r| r.stratum.is_some()) {
        let n = 1 + t.pick(4);
        for _ in 0..n {
            clauses.push(rule(t, &rels, head));
        }
    }
    // Facts written in the program, now and then also for a derived relation.
    for _ in 0..t.pick(3) {
        let r = &rels[t.pick(rels.len())];
        let vals: Vec<String> = r.types.iter().map(|&ty| constant(t, ty)).collect();
        clauses.push(format!("{}({}).", r.name, vals.join(", ")));
    }
    let mut facts = Vec::new();
    for (ri, r) in rels.iter().enumerate() {
        if r.stratum.is_some() && !t.chance(15) {
            continue;
        }
        let most = if r.stratum.is_some() { 4 } else { 25 };
        for _ in 0..t.pick(most) {
            let vals = r.types.iter().map(|&ty| value(t, ty)).collect();
            facts.push((ri, vals));
        }
    }
    // A duplicated fact now and then (the same fact from two origins).
    if !facts.is_empty() && t.chance(20) {
        let f = facts[t.pick(facts.len())].clone();
        facts.push(f);
    }
    Case {
        rels,
        clauses,
        facts,
    }
}

fn case_strategy() -> impl Strategy<Value = Case> {
    prop::collection::vec(any::<u32>(), TAPE_LEN).prop_map(move |tape| build(&tape))
}

/// A permutation of `0..n` from a seed (SplitMix64 driving Fisher–Yates).
fn permutation(n: usize, seed: u64) -> Vec<usize> {
    let mut state = seed;
    let mut next = || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    let mut p: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        let j = (next() % (i as u64 + 1)) as usize;
        p.swap(i, j);
    }
    p
}

// ---- helpers --------------------------------------------------------------------------------

fn relation_names(program: &Program) -> Vec<String> {
    program
        .ir()
        .relations
        .iter()
        .map(|r| r.name.clone())
        .collect()
}

fn model_rows(model: &Model, program: &Program) -> BTreeMap<String, Vec<Vec<Value>>> {
    relation_names(program)
        .into_iter()
        .map(|n| {
            let rows = model.relation(&n).expect("declared relation");
            (n, rows)
        })
        .collect()
}

fn naive_rows(program: &Program, facts: &FactSet) -> BTreeMap<String, Vec<Vec<Value>>> {
    naive::evaluate(program.ir(), facts).rows(program.ir())
}

fn limits() -> Limits {
    Limits::default()
}

/// Every node of a proof tree, as paths of premise indices, in preorder.
fn proof_paths(p: &Proof, cur: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
    out.push(cur.clone());
    if let ProofStep::Rule { premises, .. } = &p.step {
        for (i, q) in premises.iter().enumerate() {
            cur.push(i);
            proof_paths(q, cur, out);
            cur.pop();
        }
    }
}

fn node_mut<'a>(p: &'a mut Proof, path: &[usize]) -> &'a mut Proof {
    match path.split_first() {
        None => p,
        Some((i, rest)) => match &mut p.step {
            ProofStep::Rule { premises, .. } => node_mut(Arc::make_mut(&mut premises[*i]), rest),
            ProofStep::Input { .. } => panic!("a path through an input leaf"),
        },
    }
}

fn node<'a>(p: &'a Proof, path: &[usize]) -> &'a Proof {
    match path.split_first() {
        None => p,
        Some((i, rest)) => match &p.step {
            ProofStep::Rule { premises, .. } => node(&premises[*i], rest),
            ProofStep::Input { .. } => panic!("a path through an input leaf"),
        },
    }
}

/// Whether `fact` is an instance of the `k`-th positive body atom of the rule of a proof step
/// under the step's bindings (an independent re-statement of what the checker verifies).
fn premise_fits(program: &Program, step: &ProofStep, k: usize, fact: &Fact) -> bool {
    let ProofStep::Rule {
        rule,
        head,
        disjunct,
        bindings,
        ..
    } = step
    else {
        return false;
    };
    let ir = program.ir();
    let Some(r) = ir
        .rules
        .iter()
        .find(|r| &r.id == rule && r.head_index == *head && r.disjunct == *disjunct)
    else {
        return false;
    };
    let Some(atom) = r
        .body
        .iter()
        .filter_map(|l| match l {
            IrLit::Pos(a) => Some(a),
            _ => None,
        })
        .nth(k)
    else {
        return false;
    };
    ir.relations[atom.rel].name == fact.relation
        && atom.args.len() == fact.values.len()
        && atom
            .args
            .iter()
            .zip(&fact.values)
            .all(|(arg, v)| match arg {
                IrExpr::Wild => true,
                IrExpr::Var(x) => bindings.get(&r.vars[*x].name) == Some(v),
                IrExpr::Const(c) => c == v,
                _ => false,
            })
}

fn changed(v: &Value) -> Value {
    match v {
        Value::Number(n) => Value::Number(n.wrapping_add(1)),
        Value::Unsigned(n) => Value::Unsigned(n.wrapping_add(1)),
        Value::Float(x) => Value::Float(x + 1.0),
        Value::Symbol(s) => Value::Symbol(format!("{s}'")),
    }
}

/// Tampers with a proof in every way that applies and checks the checker's verdicts: a changed
/// binding and a changed input origin are always rejected; a swap of two premises is rejected
/// exactly when a swapped premise no longer fits its atom.
fn check_tampering(
    program: &Program,
    checker: &ProofChecker<'_>,
    proof: &Proof,
    pick: usize,
) -> Result<(), TestCaseError> {
    let mut paths = Vec::new();
    proof_paths(proof, &mut Vec::new(), &mut paths);
    let rule_steps: Vec<&Vec<usize>> = paths
        .iter()
        .filter(|p| matches!(node(proof, p).step, ProofStep::Rule { .. }))
        .collect();
    let leaves: Vec<&Vec<usize>> = paths
        .iter()
        .filter(|p| matches!(node(proof, p).step, ProofStep::Input { .. }))
        .collect();

    // A changed binding.
    if !rule_steps.is_empty() {
        let path = rule_steps[pick % rule_steps.len()];
        let mut bad = proof.clone();
        if let ProofStep::Rule { bindings, .. } = &mut node_mut(&mut bad, path).step
            && !bindings.is_empty()
        {
            let key = bindings.keys().nth(pick % bindings.len()).cloned().unwrap();
            let v = changed(&bindings[&key]);
            bindings.insert(key.clone(), v);
            prop_assert!(
                checker.check(&bad).is_err(),
                "a proof with `{key}` changed at {path:?} was accepted:\n{}",
                bad.to_text()
            );
        }
    }

    // A changed input origin.
    if !leaves.is_empty() {
        let path = leaves[pick % leaves.len()];
        let mut bad = proof.clone();
        if let ProofStep::Input { origin } = &mut node_mut(&mut bad, path).step {
            *origin = "tampered".into();
        }
        prop_assert!(
            checker.check(&bad).is_err(),
            "a proof with a forged origin at {path:?} was accepted:\n{}",
            bad.to_text()
        );
    }

    // Two premises swapped.
    for path in &rule_steps {
        let step = &node(proof, path).step;
        let ProofStep::Rule { premises, .. } = step else {
            continue;
        };
        let Some((i, j)) = (0..premises.len())
            .flat_map(|i| (i + 1..premises.len()).map(move |j| (i, j)))
            .find(|&(i, j)| premises[i].fact != premises[j].fact)
        else {
            continue;
        };
        let still_fits = premise_fits(program, step, i, &premises[j].fact)
            && premise_fits(program, step, j, &premises[i].fact);
        let mut bad = proof.clone();
        if let ProofStep::Rule { premises, .. } = &mut node_mut(&mut bad, path).step {
            premises.swap(i, j);
        }
        let verdict = checker.check(&bad);
        prop_assert_eq!(
            verdict.is_ok(),
            still_fits,
            "premises {} and {} swapped at {:?}: checker said {:?}\n{}",
            i,
            j,
            path,
            verdict,
            bad.to_text()
        );
        break;
    }
    Ok(())
}

// ---- properties -----------------------------------------------------------------------------

/// A: the engine (with and without provenance) derives exactly what the naive evaluator does.
fn engine_matches_naive(case: &Case) -> Result<(), TestCaseError> {
    let program = case.program(None)?;
    let facts = case.all_facts();
    let want = naive_rows(&program, &facts);
    let evaluated = program.evaluate(&facts, &limits()).unwrap();
    let materialised = program.materialise(&facts, &limits()).unwrap();
    prop_assert_eq!(&model_rows(&evaluated, &program), &want, "evaluate");
    prop_assert_eq!(&model_rows(&materialised, &program), &want, "materialise");
    prop_assert_eq!(evaluated.outputs().hash(), materialised.outputs().hash());
    Ok(())
}

/// B: neither the order of the facts nor the order of the clauses changes anything.
fn order_does_not_matter(case: &Case, seed: u64) -> Result<(), TestCaseError> {
    let program = case.program(None)?;
    let facts = case.all_facts();
    let base = program.evaluate(&facts, &limits()).unwrap();
    let base_rows = model_rows(&base, &program);
    let base_hash = base.outputs().hash();

    let shuffled = case.fact_set(permutation(case.facts.len(), seed));
    let m = program.evaluate(&shuffled, &limits()).unwrap();
    prop_assert_eq!(&model_rows(&m, &program), &base_rows, "facts shuffled");
    prop_assert_eq!(m.outputs().hash(), base_hash.clone(), "facts shuffled");

    let order = permutation(case.clauses.len(), seed ^ 0x5555);
    let reordered = case.program(Some(&order))?;
    let m = reordered.materialise(&facts, &limits()).unwrap();
    prop_assert_eq!(&model_rows(&m, &reordered), &base_rows, "clauses shuffled");
    prop_assert_eq!(m.outputs().hash(), base_hash, "clauses shuffled");
    Ok(())
}

/// C: every fact that holds has a proof the independent checker accepts; tampered proofs are
/// rejected.
fn proofs_check(case: &Case) -> Result<(), TestCaseError> {
    let program = case.program(None)?;
    let facts = case.all_facts();
    let model = program.materialise(&facts, &limits()).unwrap();
    let checker = ProofChecker::new(&program, &facts);
    let mut proved = 0;
    // Derived relations first: they make the interesting proofs.
    let mut names = relation_names(&program);
    names.sort_by_key(|n| n.starts_with("in"));
    for name in names {
        for row in model.relation(&name).unwrap() {
            if proved == PROOFS_PER_CASE {
                return Ok(());
            }
            let fact = Fact::new(name.clone(), row);
            let proof = match model.prove(&fact) {
                Ok(p) => p,
                Err(e) => return Err(TestCaseError::fail(format!("no proof of {fact}: {e}"))),
            };
            prop_assert_eq!(&proof.fact, &fact);
            if let Err(e) = checker.check(&proof) {
                return Err(TestCaseError::fail(format!(
                    "proof of {fact} rejected: {e}\n{}",
                    proof.to_text()
                )));
            }
            check_tampering(&program, &checker, &proof, proved)?;
            proved += 1;
        }
    }
    Ok(())
}

/// D: a query over a model of the static facts sees exactly what full evaluation over the
/// static and request facts derives, leaves the model as it was, and proves what it derives.
fn queries_match_full_evaluation(case: &Case, split: &[u8]) -> Result<(), TestCaseError> {
    let program = case.program(None)?;
    let Some(&(split_rel, _)) = case.facts.first() else {
        return Ok(());
    };
    let mut statics = FactSet::new();
    let mut request = FactSet::new();
    let mut union = FactSet::new();
    for (i, (r, _)) in case.facts.iter().enumerate() {
        let fact = case.fact(i);
        // 0: static, 1: request, 2: both.
        let side = if *r == split_rel {
            split.get(i).copied().unwrap_or(0) % 3
        } else {
            0
        };
        if side != 1 {
            let origin: Arc<str> = Arc::from(format!("static:{i}"));
            statics.push(fact.clone(), origin.clone());
            union.push(fact.clone(), origin);
        }
        if side != 0 {
            request.push(fact.clone(), Arc::from("request"));
            union.push(fact, Arc::from("request"));
        }
    }
    // Now and then the request also gives a fact to a derived relation.
    let derived: Vec<&Rel> = case.rels.iter().filter(|r| r.stratum.is_some()).collect();
    if split.last().is_some_and(|b| b % 4 == 0) && !derived.is_empty() {
        let rel = derived[split[0] as usize % derived.len()];
        let values = rel
            .types
            .iter()
            .enumerate()
            .map(|(i, ty)| {
                let b = split[1 + i] as usize;
                match ty {
                    Ty::Num => Value::Number((b % NUMBERS) as i32),
                    Ty::Sym => Value::sym(SYMBOLS[b % SYMBOLS.len()]),
                }
            })
            .collect();
        let fact = Fact::new(rel.name.clone(), values);
        request.push(fact.clone(), Arc::from("request"));
        union.push(fact, Arc::from("request"));
    }
    let model = program.materialise(&statics, &limits()).unwrap();
    let before = model_rows(&model, &program);
    let want = naive_rows(&program, &union);
    let answer = model.query(&request, &limits()).unwrap();
    let mut got = BTreeMap::new();
    for name in relation_names(&program) {
        got.insert(name.clone(), answer.relation(&name).unwrap());
    }
    prop_assert_eq!(&got, &want, "query answer differs from full evaluation");
    prop_assert_eq!(
        answer.outputs().hash(),
        program
            .evaluate(&union, &limits())
            .unwrap()
            .outputs()
            .hash()
    );
    prop_assert_eq!(
        &model_rows(&model, &program),
        &before,
        "the query changed the model"
    );

    let checker = ProofChecker::new(&program, &union);
    let mut proved = 0;
    for (name, rows) in &got {
        for row in rows {
            if proved == PROOFS_PER_CASE / 2 {
                return Ok(());
            }
            let fact = Fact::new(name.clone(), row.clone());
            let proof = answer
                .prove(&fact)
                .map_err(|e| TestCaseError::fail(format!("no proof of {fact}: {e}")))?;
            if let Err(e) = checker.check(&proof) {
                return Err(TestCaseError::fail(format!(
                    "query proof of {fact} rejected: {e}\n{}",
                    proof.to_text()
                )));
            }
            proved += 1;
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn a_engine_matches_naive_evaluator(case in case_strategy()) {
        engine_matches_naive(&case)?;
    }

    #[test]
    fn b_fact_and_rule_order_never_matter(
        case in case_strategy(),
        seed in any::<u64>(),
    ) {
        order_does_not_matter(&case, seed)?;
    }

    #[test]
    fn c_every_fact_has_a_checkable_tamper_evident_proof(case in case_strategy()) {
        proofs_check(&case)?;
    }

    #[test]
    fn d_staged_queries_match_full_evaluation(
        case in case_strategy(),
        split in prop::collection::vec(any::<u8>(), 32),
    ) {
        queries_match_full_evaluation(&case, &split)?;
    }
}

/// The generator stays inside the language, uses every feature it is meant to, and makes
/// programs that derive something.
#[test]
fn generator_covers_the_features() {
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    let mut derived_total = 0;
    let cases = 300;
    for _ in 0..cases {
        let case = case_strategy().new_tree(&mut runner).unwrap().current();
        let program = case.program(None).unwrap();
        let rules = case.clauses.iter().filter(|c| c.contains(":-"));
        let mut features: Vec<&str> = Vec::new();
        for rule in rules {
            let (head, body) = rule.split_once(":-").unwrap();
            for (feature, needle) in [
                ("negation", "!in"),
                ("negation of a derived relation", "!d"),
                ("count", "count :"),
                ("sum", " sum "),
                ("min", " min "),
                ("max", " max "),
                ("aggregate over a derived relation", ": { d"),
                ("grouped aggregate", ": { in0(x"),
                ("bind", " + 1 = "),
                ("expression in an atom", " + 1)"),
                ("wildcard", "_"),
                ("comparison", " < "),
                ("inequality", " != "),
            ] {
                if body.contains(needle) {
                    features.push(feature);
                }
            }
            if head.contains('+') {
                features.push("expression in a head");
            }
            let two_atoms = body.split('{').skip(1).any(|agg| {
                let inner = agg.split('}').next().unwrap_or("");
                inner.contains("), in") || inner.contains("), d")
            });
            if two_atoms {
                features.push("two-atom aggregate");
            }
            let shadowed = ["sum", "min", "max"].iter().any(|k| {
                ["x", "z", "n"]
                    .iter()
                    .any(|v| body.contains(&format!("{k} {v}")))
            });
            if shadowed {
                features.push("aggregate target named like an outer variable");
            }
        }
        if case
            .clauses
            .iter()
            .any(|c| c.starts_with('d') && !c.contains(":-"))
        {
            features.push("written fact of a derived relation");
        }
        if case
            .facts
            .iter()
            .any(|(r, _)| case.rels[*r].stratum.is_some())
        {
            features.push("input fact of a derived relation");
        }
        if case.rels.iter().any(|r| r.types.contains(&Ty::Sym)) {
            features.push("symbol column");
        }
        let ir = program.ir();
        if ir.recursive.iter().any(|&r| r) {
            features.push("recursion");
        }
        if ir.strata.iter().any(|s| s.len() > 1) {
            features.push("mutual recursion");
        }
        features.sort_unstable();
        features.dedup();
        for f in features {
            *seen.entry(f).or_default() += 1;
        }
        let model = program.evaluate(&case.all_facts(), &limits()).unwrap();
        derived_total += model
            .sizes()
            .iter()
            .filter(|(n, _)| n.starts_with('d'))
            .map(|(_, s)| s)
            .sum::<usize>();
    }
    assert_eq!(seen.len(), 21, "a feature is never generated: {seen:?}");
    for (feature, n) in &seen {
        assert!(*n >= 10, "feature `{feature}` is rare: {seen:?}");
    }
    assert!(
        derived_total / cases >= 8,
        "programs derive {} tuples on average",
        derived_total / cases
    );
}
