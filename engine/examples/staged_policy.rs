//! Materialise the sample tool policy once, then decide requests against it as staged
//! queries, explain one decision and re-check its proof independently.
//!
//! Run from the workspace root: `cargo run -p tollgate-engine --example staged_policy`.

use std::error::Error;
use std::path::Path;

use tollgate_engine::{Fact, FactSet, Limits, Program, Value, diag::Source, proof_check, tsv};

fn main() -> Result<(), Box<dyn Error>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/rules/tool_policy");
    let text = std::fs::read_to_string(dir.join("policy.dl"))?;
    let source = Source::new("policy.dl", text);
    let program = Program::compile(&source)
        .map_err(|diags| diags.iter().map(|d| d.render(&source)).collect::<String>())?;

    // The slow-changing facts: envelopes, attachments, tool rules (not the sample requests).
    let mut static_facts = FactSet::new();
    for name in ["attached", "extends", "tool_rule"] {
        let rel = program.ir().relation(name).ok_or("relation missing")?;
        let file = format!("{name}.facts");
        let text = std::fs::read_to_string(dir.join(&file))?;
        tsv::parse_facts(
            &text,
            &file,
            &program.ir().relations[rel],
            "\t",
            &program.ir().records,
            &mut static_facts,
        )?;
    }
    let model = program.materialise(&static_facts, &Limits::default())?;

    for (id, agent, tool) in [
        ("q1", "coder", "fs.read_file"),
        ("q2", "coder", "shell.exec"),
        ("q3", "reviewer", "fs.write_file"),
    ] {
        let mut request = FactSet::new();
        request.add(
            "request",
            vec![Value::sym(id), Value::sym(agent), Value::sym(tool)],
            "request",
        );
        let answer = model.query(&request, &Limits::default())?;
        let decision = answer
            .relation("decision")
            .ok_or("no decision relation")?
            .into_iter()
            .find(|row| row[0] == Value::sym(id))
            .ok_or("no decision")?;
        println!("{agent} calls {tool}: {}", decision[1]);
        if id == "q2" {
            let proof = answer.prove(&Fact::new("decision", decision))?;
            print!("{}", proof.to_text());
            let mut inputs = static_facts.clone();
            inputs.extend_from(&request);
            proof_check::check_proof(&program, &inputs, &proof)?;
            println!("proof re-checked without the evaluator: ok");
        }
    }
    Ok(())
}
