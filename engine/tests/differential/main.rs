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

mod generator;

use std::collections::BTreeMap;
use std::sync::Arc;

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::TestCaseError;
use tollgate_engine::explain::ProofStep;
use tollgate_engine::ir::{IrExpr, IrLit};
use tollgate_engine::proof_check::ProofChecker;
use tollgate_engine::{Fact, FactSet, Limits, Model, Program, Proof, Value, naive};

use generator::{Case, NUMBERS, Rel, SYMBOLS, Ty, case_strategy, permutation};

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
        // Saved seeds replay different programs whenever the generator changes, so failures
        // are kept as named regression tests instead, built from the program the failure
        // prints.
        failure_persistence: None,
        ..ProptestConfig::with_cases(cases())
    }
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
        .find(|r| *r.id == **rule && r.head_index == *head && r.disjunct == *disjunct)
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
                IrExpr::Var(x) => bindings.get(r.vars[*x].name.as_str()) == Some(v),
                IrExpr::Const(c) => c == v,
                _ => false,
            })
}

/// A value no rule instance of a generated program allows in place of `v`: numbers move far
/// outside `0..NUMBERS`, since a variable a `range` binds would be just as valid at any other
/// value of its range (that proof is a true one, not a tampered one).
fn changed(v: &Value) -> Value {
    match v {
        Value::Number(n) => Value::Number(n.wrapping_add(1000)),
        Value::Unsigned(n) => Value::Unsigned(n.wrapping_add(1)),
        Value::Float(x) => Value::Float(x + 1.0),
        Value::Symbol(s) => Value::sym(format!("{s}'")),
        Value::Record(fields) => match fields.split_first() {
            Some((first, rest)) => {
                let mut changed_fields = vec![changed(first)];
                changed_fields.extend(rest.iter().cloned());
                Value::Record(changed_fields.into())
            }
            None => Value::Nil,
        },
        Value::Nil => Value::Record(Vec::new().into()),
        Value::Adt { branch, args } => Value::Adt {
            branch: format!("{branch}'").into(),
            args: args.clone(),
        },
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
