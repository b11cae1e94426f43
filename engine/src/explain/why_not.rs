//! Why a fact does not hold: for each rule that could derive it, the furthest its body
//! gets (depth first) and the literal where every branch stops.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use super::{ExplainError, cmp_bindings, encode_fact, unify_head};
use crate::Fact;
use crate::eval::{self, Db};
use crate::ir::DisplayLit;
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
    pub rule: String,
    /// Which alternative of the body.
    pub disjunct: usize,
    /// Line of the clause.
    pub line: usize,
    /// The body literal that found no match (in evaluation order), if the head matched.
    pub failed_literal: Option<String>,
    /// Its index in the rule's body.
    pub literal_index: Option<usize>,
    /// The bindings under which it failed (variables bound so far, compiler temporaries
    /// left out).
    pub bindings: BTreeMap<String, Value>,
    /// A sentence saying what happened.
    pub reason: String,
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

pub(crate) fn why_not<const W: usize>(
    data: &ModelData<W>,
    db: &Db<'_, W>,
    cx: &mut EvalCx,
    fact: &Fact,
) -> Result<WhyNot, ExplainError> {
    let ir = data.program.ir();
    let (rel, t) = encode_fact(data, &cx.symbols, fact)?;
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
    let is_input = ir.relations[rel].input.is_some() || ir.rules_for(rel).next().is_none();
    let mut rules = Vec::new();
    for (ri, ir_rule) in ir.rules_for(rel) {
        let rule = &data.rules[ri];
        let mut env = vec![0u32; rule.nvars];
        let mut bound = vec![false; rule.nvars];
        let mut failure = RuleFailure {
            rule: ir_rule.id.clone(),
            disjunct: ir_rule.disjunct,
            line: ir_rule.line,
            failed_literal: None,
            literal_index: None,
            bindings: BTreeMap::new(),
            reason: String::new(),
        };
        if !unify_head(&rule.head, &t, &mut env, &mut bound) {
            failure.reason =
                "its head cannot produce this fact (a constant or repeated variable differs)"
                    .into();
            rules.push(failure);
            continue;
        }
        let mut deepest: Deepest = None;
        deepest_failure(
            &ir_rule.vars,
            &rule.lits,
            0,
            &mut env,
            &mut bound,
            db,
            cx,
            &mut deepest,
        );
        match deepest {
            Some((i, env, bound)) if i < rule.lits.len() => {
                let text = DisplayLit(ir, ir_rule, &ir_rule.body[i]).to_string();
                for (v, var) in ir_rule.vars.iter().enumerate() {
                    if bound[v] && var.is_shown() {
                        failure
                            .bindings
                            .insert(var.name.clone(), decode(env[v], var.ty, &cx.symbols));
                    }
                }
                // ` with a = "x", b = 3`, written into one buffer.
                let mut under = String::new();
                for (k, v) in &failure.bindings {
                    under.push_str(if under.is_empty() { " with " } else { ", " });
                    under.push_str(k);
                    under.push_str(" = ");
                    v.write_literal(&mut under);
                }
                failure.reason = match &rule.lits[i] {
                    CLit::Pos(_) => format!("`{text}` found no match{under}"),
                    CLit::Neg(_) => format!("`{text}` failed: the atom is present{under}"),
                    _ => format!("`{text}` does not hold{under}"),
                };
                failure.failed_literal = Some(text);
                failure.literal_index = Some(i);
            }
            _ => {
                failure.reason =
                    "the body holds but the head's expressions give a different fact".into();
            }
        }
        rules.push(failure);
    }
    Ok(WhyNot {
        fact: fact.clone(),
        is_input,
        rules,
    })
}

/// The furthest failure found so far: literal index, bindings, which variables are bound.
type Deepest = Option<(usize, Vec<u32>, Vec<bool>)>;

/// Depth-first over the body; records the furthest literal index at which every branch
/// failed. Among branches failing equally far, the one with the smallest bindings in value
/// order is kept, so the answer does not depend on the order facts were given in.
#[allow(clippy::too_many_arguments)]
fn deepest_failure<const W: usize>(
    vars: &[crate::ir::Var],
    lits: &[CLit],
    i: usize,
    env: &mut Vec<u32>,
    bound: &mut Vec<bool>,
    db: &Db<'_, W>,
    cx: &mut EvalCx,
    deepest: &mut Deepest,
) {
    let record = |deepest: &mut Deepest, env: &[u32], bound: &[bool], symbols: &Interner| {
        let better = match deepest {
            None => true,
            Some((d, e, _)) => *d < i || (*d == i && cmp_bindings(env, e, vars, symbols).is_lt()),
        };
        if better {
            *deepest = Some((i, env.to_vec(), bound.to_vec()));
        }
    };
    if i >= lits.len() {
        record(deepest, env, bound, &cx.symbols);
        return;
    }
    let mut any = false;
    let lit = &lits[i];
    match lit {
        CLit::Pos(a) => {
            let one = std::slice::from_ref(lit);
            // Every match's bindings, back to back (one buffer, not one per match).
            let width = env.len();
            let mut matches: Vec<u32> = Vec::new();
            let mut count = 0usize;
            let outs: Vec<usize> = a
                .args
                .iter()
                .filter_map(|x| match x {
                    CArg::Var(v) if !bound[*v] => Some(*v),
                    _ => None,
                })
                .collect();
            eval::search(one, 0, env, bound, db, cx, &mut |e, _| {
                matches.extend_from_slice(&e[..width]);
                count += 1;
                count < 10_000
            });
            if count > 0 {
                any = true;
                let saved = env.clone();
                for m in 0..count {
                    env.copy_from_slice(&matches[m * width..(m + 1) * width]);
                    outs.iter().for_each(|&v| bound[v] = true);
                    deepest_failure(vars, lits, i + 1, env, bound, db, cx, deepest);
                    outs.iter().for_each(|&v| bound[v] = false);
                }
                env.copy_from_slice(&saved);
            }
        }
        other => {
            let saved = env.clone();
            if let Some(newly) = eval::apply_bound_filter(other, env, bound, db, cx) {
                any = true;
                deepest_failure(vars, lits, i + 1, env, bound, db, cx, deepest);
                if let Some(v) = newly {
                    bound[v] = false;
                }
            }
            *env = saved;
        }
    }
    if !any {
        record(deepest, env, bound, &cx.symbols);
    }
}
