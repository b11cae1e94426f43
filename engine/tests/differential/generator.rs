//! The random program generator: stratified programs and their facts, read off a tape.

use std::fmt;
use std::sync::Arc;

use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use tollgate_engine::{Fact, FactSet, Program, Source, Value};

/// Numbers range over `0..NUMBERS`; every arithmetic bind is guarded to stay in that range.
pub(crate) const NUMBERS: usize = 6;
pub(crate) const SYMBOLS: [&str; 4] = ["a", "b", "c", "d"];
const TAPE_LEN: usize = 512;

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
pub(crate) enum Ty {
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
pub(crate) struct Rel {
    pub(crate) name: String,
    pub(crate) types: Vec<Ty>,
    /// `None` for input relations (below every stratum).
    pub(crate) stratum: Option<usize>,
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
pub(crate) struct Case {
    pub(crate) rels: Vec<Rel>,
    /// Rules and written facts, one clause per entry.
    pub(crate) clauses: Vec<String>,
    /// Input facts (relation index, values).
    pub(crate) facts: Vec<(usize, Vec<Value>)>,
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

    pub(crate) fn program(&self, order: Option<&[usize]>) -> Result<Program, TestCaseError> {
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

    pub(crate) fn fact(&self, i: usize) -> Fact {
        let (r, vals) = &self.facts[i];
        Fact::new(self.rels[*r].name.clone(), vals.clone())
    }

    /// The facts in `order`, each with its own origin `input:INDEX`.
    pub(crate) fn fact_set(&self, order: impl IntoIterator<Item = usize>) -> FactSet {
        let mut set = FactSet::new();
        for i in order {
            set.push(self.fact(i), Arc::from(format!("input:{i}")));
        }
        set
    }

    pub(crate) fn all_facts(&self) -> FactSet {
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

    /// `z = x + 1` and friends, `z = range(x, 6)` among them, guarded so that `z` stays in
    /// `0..NUMBERS` (which keeps recursion through binds finite).
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
        let (guard, expr) = match self.t.pick(6) {
            0 => (format!("{} < 5", x.name), format!("{} + 1", x.name)),
            // Generators: every value up to 6, or down from 5 by twos, staying in 0..6.
            4 => (
                format!("{0} >= 0, {0} < 6", x.name),
                format!("range({}, 6)", x.name),
            ),
            5 => (
                format!("{0} >= -1, {0} < 6", x.name),
                format!("range(5, {}, -2)", x.name),
            ),
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

pub(crate) fn case_strategy() -> impl Strategy<Value = Case> {
    prop::collection::vec(any::<u32>(), TAPE_LEN).prop_map(move |tape| build(&tape))
}

/// A permutation of `0..n` from a seed (SplitMix64 driving Fisher–Yates).
pub(crate) fn permutation(n: usize, seed: u64) -> Vec<usize> {
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
