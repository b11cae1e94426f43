//! What materialising a program needs that depends on the program alone: its rules compiled
//! (constants interned), each stratum's plans, the row width, and the names and orders proofs
//! are written with. Computed on a program's first materialisation and shared by every later
//! one (a policy engine materialises the same program for every run; recomputing these was a
//! tenth of a materialisation: BENCHMARKS.md, "Memory search, cold").
//!
//! Nothing here depends on facts, so a model built from a prepared program is the model built
//! from scratch: the same symbols in the same order (the rules' constants are interned first,
//! then the facts, by a copy of the prepared table), the same plans, the same proofs.

use std::sync::Arc;

use crate::ir::Ir;
use crate::plan::{self, CRule, RulePlan, Which};
use crate::value::Interner;

/// A program's fact-independent preparation for materialising (see the module).
pub(crate) struct Prepared {
    /// The widest row any plan of the program can need ([`plan::row_width`]).
    pub width: usize,
    /// The symbol table after compiling the rules: their constants, in order.
    pub symbols: Interner,
    pub rules: Arc<[CRule]>,
    /// Per stratum (in `ir.strata` order), the plan of each of its rules reading local parts.
    pub strata: Vec<Vec<RulePlan>>,
    pub names: Arc<ProofNames>,
    /// Per relation, its rules ordered by id (then head and alternative): the order in which
    /// proofs try them, independent of the order rules are written in.
    pub rules_by_id: Arc<[Vec<usize>]>,
    /// Per rule, its position in its head relation's `rules_by_id`.
    pub rule_rank: Arc<[u32]>,
    /// Per rule, its number of variables.
    pub rule_vars: Arc<[usize]>,
}

impl Prepared {
    pub(crate) fn new(ir: &Ir) -> Prepared {
        let mut symbols = Interner::with_record_types(std::sync::Arc::clone(&ir.records));
        let rules = plan::compile_rules(ir, &mut symbols);
        let strata = ir
            .strata
            .iter()
            .map(|stratum| {
                let live = |r| stratum.contains(&r);
                rules
                    .iter()
                    .enumerate()
                    .filter(|(_, rule)| stratum.contains(&rule.head_rel))
                    .map(|(ri, rule)| {
                        let which = vec![Which::Local; rule.lits.len()];
                        plan::plan_rule(ri, rule, &which, &live)
                    })
                    .collect()
            })
            .collect();
        let mut rules_by_id: Vec<Vec<usize>> = vec![Vec::new(); ir.relations.len()];
        for (i, rule) in ir.rules.iter().enumerate() {
            rules_by_id[rule.head.rel].push(i);
        }
        for rs in &mut rules_by_id {
            rs.sort_by(|&a, &b| {
                let (ra, rb) = (&ir.rules[a], &ir.rules[b]);
                (&ra.id, ra.head_index, ra.disjunct).cmp(&(&rb.id, rb.head_index, rb.disjunct))
            });
        }
        let mut rule_rank = vec![0u32; ir.rules.len()];
        for rs in &rules_by_id {
            for (k, &ri) in rs.iter().enumerate() {
                rule_rank[ri] = k as u32;
            }
        }
        Prepared {
            width: plan::row_width(ir),
            symbols,
            rule_vars: rules.iter().map(|r| r.nvars).collect(),
            rules: rules.into(),
            strata,
            names: Arc::new(ProofNames::new(ir)),
            rules_by_id: rules_by_id.into(),
            rule_rank: rule_rank.into(),
        }
    }
}

/// Relation names, rule ids and variable names as shared strings: a proof node refers to
/// them instead of copying them.
pub(crate) struct ProofNames {
    /// Per relation, its name.
    pub relations: Vec<Arc<str>>,
    /// Per rule, its id.
    pub rules: Vec<Arc<str>>,
    /// Per rule, the variables a proof binds (those outside aggregates): slot and name.
    pub bindings: Vec<Vec<(usize, Arc<str>)>>,
}

impl ProofNames {
    fn new(ir: &Ir) -> Self {
        ProofNames {
            relations: ir
                .relations
                .iter()
                .map(|r| Arc::from(r.name.as_str()))
                .collect(),
            rules: ir.rules.iter().map(|r| Arc::from(r.id.as_str())).collect(),
            bindings: ir
                .rules
                .iter()
                .map(|r| {
                    r.vars
                        .iter()
                        .enumerate()
                        .filter(|(_, v)| !v.local)
                        .map(|(i, v)| (i, Arc::from(v.name.as_str())))
                        .collect()
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::{Fact, FactSet, Limits, Program, Value, diag::Source};

    /// A program materialised again (its preparation kept from the first time) gives the
    /// model a fresh compile gives: the same rows, proofs and why-nots, also for a query
    /// whose request interns symbols after the model's.
    #[test]
    fn a_prepared_program_materialises_what_a_fresh_one_does() {
        let src = Source::new(
            "p.dl",
            r#".decl edge(x: symbol, y: symbol)
               .decl path(x: symbol, y: symbol)
               .decl blocked(x: symbol)
               .decl ask(x: symbol)
               .decl open(x: symbol, y: symbol)
               .output path
               path(x, y) :- edge(x, y).
               path(x, z) :- path(x, y), edge(y, z).
               open(x, y) :- ask(x), path(x, y), !blocked(y), y != "z".
               edge("a", "b"). edge("b", "c"). blocked("c")."#,
        );
        let mut facts = FactSet::new();
        facts.add("edge", vec![Value::sym("c"), Value::sym("d")], "input");
        let mut request = FactSet::new();
        request.add("ask", vec![Value::sym("a")], "request");
        let run = |program: &Program| {
            let model = program.materialise(&facts, &Limits::default()).unwrap();
            let answer = model.query(&request, &Limits::default()).unwrap();
            let open = answer.relation("open").unwrap();
            let proof = answer
                .prove(&Fact::new("open", vec![Value::sym("a"), Value::sym("d")]))
                .unwrap();
            let why_not = answer
                .why_not(&Fact::new("open", vec![Value::sym("a"), Value::sym("c")]))
                .unwrap();
            (
                model.relation("path"),
                open,
                format!("{proof:?}"),
                format!("{why_not:?}"),
            )
        };
        let kept = Program::compile(&src).unwrap();
        let first = run(&kept);
        assert_eq!(run(&kept), first);
        assert_eq!(run(&kept.clone()), first);
        assert_eq!(run(&Program::compile(&src).unwrap()), first);
        assert_eq!(first.1.len(), 2, "open(a, b) and open(a, d)");
    }
}
