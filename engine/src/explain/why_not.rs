//! Why a fact does not hold: for each rule that could derive it, the furthest its body
//! gets (depth first) and the literal where every branch stops.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::{ExplainError, cmp_bindings, encode_fact, unify_head};
use crate::Fact;
use crate::eval::{self, Db, Row};
use crate::ir::{RelId, RuleTexts, Var};
use crate::model::ModelData;
use crate::plan::{CArg, CLit, EvalCx};
use crate::value::{Interner, Value, decode, encode};

/// Why a fact does not hold.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WhyNot {
    /// The absent fact.
    pub fact: Fact,
    /// Whether the relation takes input facts (and none matched).
    pub is_input: bool,
    /// For each rule that could derive the fact, where it failed.
    pub rules: Vec<RuleFailure>,
}

/// Where one rule failed to derive a fact.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RuleFailure {
    /// Rule id.
    pub rule: Arc<str>,
    /// Which alternative of the body.
    pub disjunct: usize,
    /// Line of the clause.
    pub line: usize,
    /// The body literal that found no match (in evaluation order), if the head matched.
    pub failed_literal: Option<Arc<str>>,
    /// Its index in the rule's body.
    pub literal_index: Option<usize>,
    /// The bindings under which it failed (variables bound so far, compiler temporaries
    /// left out).
    pub bindings: BTreeMap<Arc<str>, Value>,
    /// A sentence saying what happened (most are written for the failure; the few fixed
    /// ones are not copied).
    pub reason: Cow<'static, str>,
}

impl WhyNot {
    /// Indented text.
    pub fn to_text(&self) -> String {
        let mut out = format!("{} does not hold\n", self.fact);
        if self.is_input {
            let _ = writeln!(out, "  no input fact `{}` was given", self.fact);
        }
        if self.rules.is_empty() && !self.is_input {
            let _ = writeln!(out, "  no rule derives `{}`", self.fact.relation);
        }
        for r in &self.rules {
            let _ = writeln!(out, "  rule {} (line {}): {}", r.rule, r.line, r.reason);
        }
        out
    }
}

const HEAD_DIFFERS: &str =
    "its head cannot produce this fact (a constant or repeated variable differs)";
const HEAD_EXPRESSIONS_DIFFER: &str =
    "the body holds but the head's expressions give a different fact";

pub(crate) fn why_not<const W: usize>(
    data: &ModelData<W>,
    db: &Db<'_, W>,
    cx: &mut EvalCx,
    fact: Cow<'_, Fact>,
) -> Result<WhyNot, ExplainError> {
    let ir = data.program.ir();
    let (rel, t) = encode_fact(data, &cx.symbols, &fact)?;
    // Unknown symbols get fresh ids in the explanation's own table: they match nothing.
    let t = match t {
        Some(t) => t,
        None => {
            let info = &ir.relations[rel];
            let mut t = [0u32; W];
            for (i, v) in fact.values.iter().enumerate() {
                let v = if info.types[i] == crate::Type::Unsigned {
                    match v {
                        Value::Number(n) => Value::Unsigned(*n as u32),
                        o => o.clone(),
                    }
                } else {
                    v.clone()
                };
                t[i] = encode(&v, &mut cx.symbols);
            }
            t
        }
    };
    if db.contains(rel, &t) {
        return Err(ExplainError::Holds(fact.to_string()));
    }
    let texts = data.rule_texts.get_or_init(|| RuleTexts::new(ir));
    let heads = &texts.rules_by_head[rel];
    let is_input = ir.relations[rel].input.is_some() || heads.is_empty();
    let mut rules = Vec::with_capacity(heads.len());
    // One set of buffers for every rule tried, sized for the widest. The stack holds a few
    // levels of saved bindings and matches: a few dozen rows covers the built-in packs.
    let width = heads
        .iter()
        .map(|&ri| data.rules[ri].nvars)
        .max()
        .unwrap_or(0);
    let mut env: Vec<u32> = Vec::with_capacity(width);
    let mut bound: Vec<bool> = Vec::with_capacity(width);
    let mut search = FailureSearch {
        db,
        vars: &[],
        lits: &[],
        stack: Vec::with_capacity(32 * width),
        trail: Vec::new(),
        deepest: Deepest {
            at: None,
            env: Vec::with_capacity(width),
            bound: Vec::with_capacity(width),
        },
    };
    for &ri in heads {
        let ir_rule = &ir.rules[ri];
        let rule = &data.rules[ri];
        env.clear();
        env.resize(rule.nvars, 0);
        bound.clear();
        bound.resize(rule.nvars, false);
        let mut failure = RuleFailure {
            rule: data.names.rules[ri].clone(),
            disjunct: ir_rule.disjunct,
            line: ir_rule.line,
            failed_literal: None,
            literal_index: None,
            bindings: BTreeMap::new(),
            reason: Cow::Borrowed(HEAD_DIFFERS),
        };
        if !unify_head(&rule.head, &t, &mut env, &mut bound) {
            rules.push(failure);
            continue;
        }
        search.vars = &ir_rule.vars;
        search.lits = &rule.lits;
        search.deepest.at = None;
        search.descend(0, &mut env, &mut bound, cx);
        let deepest = &search.deepest;
        match deepest.at {
            Some(i) if i < rule.lits.len() => {
                for (v, name) in &texts.shown[ri] {
                    if deepest.bound[*v] {
                        let value = decode(deepest.env[*v], ir_rule.vars[*v].ty, &cx.symbols);
                        failure.bindings.insert(name.clone(), value);
                    }
                }
                let text = &texts.literals[ri][i];
                let what = match &rule.lits[i] {
                    CLit::Pos(_) => "` found no match",
                    CLit::Neg(_) => "` failed: the atom is present",
                    _ => "` does not hold",
                };
                // "`lit` found no match with a = "x", b = 3", written into one buffer: a
                // backquote, the literal, `what`, " with " once and ", a = " per binding.
                let shown: usize = (failure.bindings.iter())
                    .map(|(name, value)| 2 + name.len() + 3 + literal_len(value))
                    .sum();
                let mut reason = String::with_capacity(1 + text.len() + what.len() + 4 + shown);
                reason.push('`');
                reason.push_str(text);
                reason.push_str(what);
                for (k, (name, value)) in failure.bindings.iter().enumerate() {
                    reason.push_str(if k == 0 { " with " } else { ", " });
                    reason.push_str(name);
                    reason.push_str(" = ");
                    value.write_literal(&mut reason);
                }
                failure.reason = Cow::Owned(reason);
                failure.failed_literal = Some(text.clone());
                failure.literal_index = Some(i);
            }
            _ => failure.reason = Cow::Borrowed(HEAD_EXPRESSIONS_DIFFER),
        }
        rules.push(failure);
    }
    Ok(WhyNot {
        fact: fact.into_owned(),
        is_input,
        rules,
    })
}

/// About the length of a value's literal (exact for a symbol with nothing to escape), to size
/// a reason in one allocation.
fn literal_len(value: &Value) -> usize {
    match value {
        Value::Symbol(s) => s.len() + 2,
        _ => 12,
    }
}

/// The furthest failure found so far: literal index, bindings, which variables are bound
/// (the buffers are kept from one rule to the next).
struct Deepest {
    at: Option<usize>,
    env: Vec<u32>,
    bound: Vec<bool>,
}

/// A depth-first search of one rule's body for the furthest literal at which every branch
/// fails, with buffers shared by all its levels and by the rules of one why-not.
struct FailureSearch<'a, 'db, const W: usize> {
    db: &'a Db<'db, W>,
    vars: &'a [Var],
    lits: &'a [CLit],
    /// Each level's saved state, above the levels that called it: for a positive atom its
    /// newly bound variables, its matches' bindings back to back, and the bindings to restore;
    /// for another literal, the bindings to restore.
    stack: Vec<u32>,
    /// The searches' matched tuples (unused, but `search_with` records them).
    trail: Vec<(RelId, Row<W>)>,
    deepest: Deepest,
}

impl<const W: usize> FailureSearch<'_, '_, W> {
    /// Depth-first over the body from literal `i`; records the furthest literal index at which
    /// every branch failed. Among branches failing equally far, the one with the smallest
    /// bindings in value order is kept, so the answer does not depend on the order facts were
    /// given in.
    fn descend(&mut self, i: usize, env: &mut Vec<u32>, bound: &mut Vec<bool>, cx: &mut EvalCx) {
        if i >= self.lits.len() {
            self.record(i, env, bound, &cx.symbols);
            return;
        }
        let width = env.len();
        let base = self.stack.len();
        let mut any = false;
        let lit = &self.lits[i];
        match lit {
            CLit::Pos(a) => {
                // The variables the atom binds: each match binds them.
                for arg in &a.args {
                    if let CArg::Var(v) = arg
                        && !bound[*v]
                    {
                        self.stack.push(*v as u32);
                    }
                }
                let outs = self.stack.len() - base;
                let mut count = 0usize;
                let stack = &mut self.stack;
                eval::search_with(
                    std::slice::from_ref(lit),
                    0,
                    env,
                    bound,
                    self.db,
                    cx,
                    None,
                    &mut self.trail,
                    &mut |e, _, _| {
                        stack.extend_from_slice(&e[..width]);
                        count += 1;
                        count < 10_000
                    },
                );
                if count > 0 {
                    any = true;
                    let matches = base + outs;
                    let saved = self.stack.len();
                    self.stack.extend_from_slice(env);
                    for m in 0..count {
                        let at = matches + m * width;
                        env.copy_from_slice(&self.stack[at..at + width]);
                        self.set_bound(base, outs, bound, true);
                        self.descend(i + 1, env, bound, cx);
                        self.set_bound(base, outs, bound, false);
                    }
                    env.copy_from_slice(&self.stack[saved..saved + width]);
                }
            }
            other => {
                self.stack.extend_from_slice(env);
                if let Some((var, values)) = eval::generated(other, env, Some(bound), cx) {
                    // As for an atom's matches, at most 10,000 values are followed.
                    bound[var] = true;
                    for x in values.take(10_000) {
                        any = true;
                        env[var] = x;
                        self.descend(i + 1, env, bound, cx);
                    }
                    bound[var] = false;
                } else if let Some(newly) = eval::apply_bound_filter(other, env, bound, self.db, cx)
                {
                    any = true;
                    self.descend(i + 1, env, bound, cx);
                    if let Some(v) = newly {
                        bound[v] = false;
                    }
                }
                env.copy_from_slice(&self.stack[base..base + width]);
            }
        }
        self.stack.truncate(base);
        if !any {
            self.record(i, env, bound, &cx.symbols);
        }
    }

    /// Marks the `outs` variables saved at `base` of the stack as bound or not.
    fn set_bound(&self, base: usize, outs: usize, bound: &mut [bool], to: bool) {
        for &v in &self.stack[base..base + outs] {
            bound[v as usize] = to;
        }
    }

    fn record(&mut self, i: usize, env: &[u32], bound: &[bool], symbols: &Interner) {
        let d = &mut self.deepest;
        let better = match d.at {
            None => true,
            Some(at) => {
                at < i || (at == i && cmp_bindings(env, &d.env, self.vars, symbols).is_lt())
            }
        };
        if better {
            d.at = Some(i);
            d.env.clear();
            d.env.extend_from_slice(env);
            d.bound.clear();
            d.bound.extend_from_slice(bound);
        }
    }
}
