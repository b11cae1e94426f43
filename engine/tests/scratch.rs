#![allow(clippy::unwrap_used, clippy::expect_used)]
use tollgate_engine::*;
fn run(src: &str, facts: &[&str]) -> (Program, FactSet) {
    let s = Source::new("s.dl", src);
    let p = match Program::compile(&s) {
        Ok(p) => p,
        Err(d) => {
            for x in d {
                eprintln!("{}", x.render(&s));
            }
            panic!()
        }
    };
    let mut fs = FactSet::new();
    for f in facts {
        fs.push(Fact::parse(f).unwrap(), std::sync::Arc::from("t"));
    }
    (p, fs)
}
fn show(p: &Program, fs: &FactSet) {
    println!("{}", p.ir().dump());
    let m = p.materialise(fs, &Limits::default()).unwrap();
    let n = naive::evaluate(p.ir(), fs).rows(p.ir());
    for r in &p.ir().relations {
        println!(
            "{}: engine {:?}\n   naive {:?}",
            r.name,
            m.relation(&r.name).unwrap(),
            n[&r.name]
        );
    }
}
#[test]
fn a() {
    let (p, fs) = run(
        ".decl in0(a: number, b: number)\n.decl d(x: number)\nd(x) :- in0(x, _), n = sum a : { in0(x, a) }, n = x.\n",
        &["in0(1, 1)", "in0(2, 3)", "in0(3, 3)"],
    );
    show(&p, &fs);
}
#[test]
fn c() {
    let (p, fs) = run(
        ".decl in0(a: number, b: number)\n.decl d(x: number, y: number)\nd(z, x) :- in0(x, y), y > 0, z = y - 1.\n",
        &["in0(1, 2)", "in0(1, 3)"],
    );
    show(&p, &fs);
    let m = p.materialise(&fs, &Limits::default()).unwrap();
    let pr = m.prove(&Fact::parse("d(2, 1)").unwrap()).unwrap();
    println!("{}", pr.to_text());
    println!("{:?}", proof_check::check_proof(&p, &fs, &pr));
}
#[test]
fn d() {
    let (p, fs) = run(
        ".decl in0(a: number, b: number)\n.decl d1(x: number)\nd1(1).\nd1(x) :- in0(x, _).\n",
        &["in0(0, 1)"],
    );
    show(&p, &fs);
    let m = p.materialise(&fs, &Limits::default()).unwrap();
    let a = m.query(&FactSet::new(), &Limits::default()).unwrap();
    println!("answer d1 {:?}", a.relation("d1"));
    let mut req = FactSet::new();
    req.add("in0", vec![Value::Number(3), Value::Number(3)], "request");
    let a = m.query(&req, &Limits::default()).unwrap();
    println!("answer d1 {:?}", a.relation("d1"));
}
#[test]
fn d2() {
    let (p, fs) = run(
        ".decl in0(a: number, b: number)\n.decl d0(x: number, s: symbol)\n.decl d1(x: number)\nd0(x1, \"a\") :- d1(x1), d1(x1 + 1).\nd1(x1) :- d0(x1, _).\nd1(1).\n",
        &["in0(0, 1)"],
    );
    show(&p, &fs);
    let m = p.materialise(&fs, &Limits::default()).unwrap();
    let a = m.query(&FactSet::new(), &Limits::default()).unwrap();
    println!("answer d1 {:?}", a.relation("d1"));
}
#[test]
fn a2() {
    let (p, fs) = run(
        ".decl r(a: number)\n.decl d(x: number)\nd(x) :- r(x), x = count : { r(_) }.\n",
        &["r(1)", "r(2)", "r(3)"],
    );
    show(&p, &fs);
}
#[test]
fn d3() {
    let (p, fs) = run(
        ".decl in0(a: number, b: number)\n.decl d0(x: number, s: symbol)\n.decl d1(x: number)\nd0(x1, \"a\") :- in0(_, _), d1(x1), !in0(x1, x1).\nd1(x1) :- d0(x1, _).\nd1(1).\n",
        &["in0(0, 1)"],
    );
    show(&p, &fs);
    let m = p.materialise(&fs, &Limits::default()).unwrap();
    let a = m.query(&FactSet::new(), &Limits::default()).unwrap();
    println!("answer d1 {:?}", a.relation("d1"));
    let (p, fs) = run(
        ".decl in0(a: number)\n.decl d1(x: number)\nd1(x1) :- d1(x1), !in0(x1).\nd1(1).\n",
        &[],
    );
    show(&p, &fs);
    let m = p.materialise(&fs, &Limits::default()).unwrap();
    let a = m.query(&FactSet::new(), &Limits::default()).unwrap();
    println!("answer d1 {:?}", a.relation("d1"));
}
#[test]
fn d4() {
    for src in [
        ".decl in0(a: number, b: number)\n.decl d0(x: number, s: symbol)\n.decl d1(x: number)\nd0(x1, \"a\") :- in0(_, _), d1(x1), d1(x1 + 1), !in0(x1, x1).\nd1(x1) :- d0(x1, _).\nd1(5) :- d0(x1, x2), d1(x1), d1(x1), x2 != x2, x1 < 5, x1 + 1 = z3.\nd1(1).\n",
        ".decl in0(a: number, b: number)\n.decl d0(x: number, s: symbol)\n.decl d1(x: number)\nd0(x1, \"a\") :- d1(x1), d1(x1 + 1), !in0(x1, x1).\nd1(x1) :- d0(x1, _).\nd1(1).\n",
        ".decl in0(a: number)\n.decl d1(x: number)\nd1(x1) :- d1(x1), !in0(x1).\nd1(1).\n",
        ".decl in0(a: number)\n.decl d1(x: number)\nd1(x1) :- d1(x1), !in0(x1).\nd1(1).\n",
    ] {
        let (p, fs) = run(
            src,
            &["in0(0, 1)"][..if src.contains("a: number, b") { 1 } else { 0 }],
        );
        let m = p.materialise(&fs, &Limits::default()).unwrap();
        println!("model d1 {:?}", m.relation("d1"));
        let a = m.query(&FactSet::new(), &Limits::default()).unwrap();
        println!("answer d1 {:?}", a.relation("d1"));
    }
}
#[test]
fn d5() {
    let (p, fs) = run(
        ".decl in0(a: number)\n.decl d1(x: number)\n.decl d2(x: number)\nd1(x) :- d2(x), !in0(x).\nd1(1).\n",
        &["d1(2)", "d2(3)"],
    );
    let m = p.materialise(&fs, &Limits::default()).unwrap();
    println!("model d1 {:?}", m.relation("d1"));
    let mut req = FactSet::new();
    req.add("in0", vec![Value::Number(7)], "request");
    let a = m.query(&req, &Limits::default()).unwrap();
    println!("answer d1 {:?}", a.relation("d1"));
}
