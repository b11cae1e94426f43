//! The rule language: any text compiles or fails with diagnostics whose spans lie in the text;
//! a program that compiles is evaluated under small limits, and the proof of every fact it
//! derives (up to a bound per relation) passes the independent proof checker.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tollgate_engine::proof_check::check_proof;
use tollgate_engine::{Fact, FactSet, Limits, Program, Source};

/// Facts proved per relation: enough to reach every rule of a small program.
const PROVED: usize = 8;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let len = text.len() as u32;
    let source = Source::new("fuzz.dl", text.to_string());
    let program = match Program::compile(&source) {
        Ok(p) => p,
        Err(diagnostics) => {
            assert!(!diagnostics.is_empty(), "a refusal without a diagnostic");
            for d in &diagnostics {
                assert!(
                    d.span.start <= d.span.end && d.span.end <= len,
                    "span {:?} outside the text of {len} bytes: {d:?}",
                    d.span
                );
                let _ = d.render(&source);
            }
            return;
        }
    };
    let limits = Limits {
        max_facts: 2_000,
        max_iterations: 64,
        deadline: None,
    };
    let inputs = FactSet::new();
    let Ok(model) = program.materialise(&inputs, &limits) else {
        return;
    };
    for relation in model.sizes().keys() {
        let Some(rows) = model.relation(relation) else {
            continue;
        };
        for values in rows.into_iter().take(PROVED) {
            let fact = Fact::new(relation.clone(), values);
            match model.prove(&fact) {
                Ok(proof) => {
                    if let Err(e) = check_proof(&program, &inputs, &proof) {
                        panic!("the proof of {fact:?} does not check: {e:?}");
                    }
                }
                Err(e) => panic!("{fact:?} is derived but has no proof: {e:?}"),
            }
        }
    }
});
