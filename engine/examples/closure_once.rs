//! Transitive closure over the graph of the `transitive_closure` bench (10,000 random edges
//! over 10,500 nodes, same generator), evaluated once: a fixed workload for instruction
//! counts, which a shared machine's noise does not move. BENCHMARKS.md runs it as
//!
//! ```text
//! cargo build --release -p tollgate-engine --example closure_once
//! valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.out target/release/examples/closure_once
//! ```

use std::collections::HashSet;
use std::error::Error;

use tollgate_engine::{FactSet, Limits, Program, Value, diag::Source};

const PROGRAM: &str = r#"
.decl edge(x: number, y: number)
.decl path(x: number, y: number)
.output path
path(x, y) :- edge(x, y).
path(x, z) :- path(x, y), edge(y, z).
"#;

fn main() -> Result<(), Box<dyn Error>> {
    let m = 10_000usize;
    let n = (m as u32) * 21 / 20;
    // xorshift64 with the bench's seed.
    let mut s: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut below = |n: u32| {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        ((s >> 32) % u64::from(n)) as u32
    };
    let mut seen = HashSet::with_capacity(m);
    let mut facts = FactSet::new();
    while seen.len() < m {
        let (a, b) = (below(n) as i32, below(n) as i32);
        if seen.insert((a, b)) {
            facts.add("edge", vec![Value::Number(a), Value::Number(b)], "bench");
        }
    }
    let source = Source::new("tc.dl", PROGRAM);
    let program = Program::compile(&source)
        .map_err(|diags| diags.iter().map(|d| d.render(&source)).collect::<String>())?;
    let model = program.evaluate(&facts, &Limits::default())?;
    println!("{} path tuples", model.sizes()["path"]);
    Ok(())
}
