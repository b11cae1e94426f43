//! Parser tests: the syntax tree of every construct, spans, and every error's code, message,
//! span and help.

use super::*;
use crate::ast::UnaryOp;

fn src(text: &str) -> Source {
    Source::new("t.dl", text)
}

fn parse(text: &str) -> Program {
    let source = src(text);
    parse_program(&source).unwrap_or_else(|errors| {
        panic!(
            "{}",
            errors.iter().map(|d| d.render(&source)).collect::<String>()
        )
    })
}

fn errors(text: &str) -> Vec<Diagnostic> {
    match parse_program(&src(text)) {
        Ok(p) => panic!("accepted {p:?}"),
        Err(errors) => errors,
    }
}

fn slice(text: &str, span: Span) -> &str {
    &text[span.start as usize..span.end as usize]
}

/// Source, code, message, start and end (line, column) of the span, help.
type ErrorCase<'a> = (
    &'a str,
    &'a str,
    &'a str,
    (usize, usize),
    (usize, usize),
    &'a str,
);

fn check(d: &Diagnostic, (text, code, message, start, end, help): ErrorCase<'_>) {
    let source = src(text);
    let shown = d.render(&source);
    assert_eq!((d.code, d.message.as_str()), (code, message), "{shown}");
    let at = (source.line_col(d.span.start), source.line_col(d.span.end));
    assert_eq!(at, (start, end), "{shown}");
    assert_eq!(d.help.as_deref(), Some(help), "{shown}");
}

fn fact_error(text: &str) -> Diagnostic {
    match parse_fact(&src(text)) {
        Ok(a) => panic!("accepted {a:?}"),
        Err(d) => d,
    }
}

fn join<T>(items: &[T], sep: &str, f: impl Fn(&T) -> String) -> String {
    items.iter().map(f).collect::<Vec<_>>().join(sep)
}

/// An S-expression dump of an expression: `(+ 1 (* 2 3))`.
fn dump_expr(e: &Expr) -> String {
    match e {
        Expr::Var(v) => v.name.clone(),
        Expr::Wildcard(_) => "_".into(),
        Expr::Number(n, _) => n.to_string(),
        Expr::Unsigned(u, _) => format!("{u}u"),
        Expr::Float(f, _) => format!("{f:?}f"),
        Expr::String(s, _) => format!("{s:?}"),
        Expr::Record(fields, _) => format!("[{}]", join(fields, " ", dump_expr)),
        Expr::Nil(_) => "nil".into(),
        Expr::Branch(name, args, _) => format!("(${} {})", name.name, join(args, " ", dump_expr)),
        Expr::Unary(UnaryOp::Neg, e, _) => format!("(neg {})", dump_expr(e)),
        Expr::Unary(op, e, _) => format!("({} {})", op.as_prefix().trim(), dump_expr(e)),
        Expr::Binary { op, lhs, rhs, .. } => {
            format!("({} {} {})", op.as_str(), dump_expr(lhs), dump_expr(rhs))
        }
        Expr::Call { func, args, .. } => {
            format!("({} {})", func.as_str(), join(args, " ", dump_expr))
        }
        Expr::UserCall { name, args, .. } => {
            format!("(@{} {})", name.name, join(args, " ", dump_expr))
        }
        Expr::Aggregate {
            kind, target, body, ..
        } => {
            let target = target.as_ref().map(|t| format!("{} ", dump_expr(t)));
            let body = join(body, ", ", dump_literal);
            format!(
                "({} {}{{{body}}})",
                kind.as_str(),
                target.unwrap_or_default()
            )
        }
    }
}

fn dump_atom(a: &Atom) -> String {
    format!("{}({})", a.relation, join(&a.args, ", ", dump_expr))
}

/// Atoms as written, tests as `?name(..)`, disjunctions as `[a | b]`.
fn dump_literal(l: &Literal) -> String {
    match l {
        Literal::Atom(a) => dump_atom(a),
        Literal::Negated(a, _) => format!("!{}", dump_atom(a)),
        Literal::Compare { op, lhs, rhs, .. } => {
            format!("({} {} {})", op.as_str(), dump_expr(lhs), dump_expr(rhs))
        }
        Literal::Test {
            func,
            args,
            negated,
            ..
        } => {
            let bang = if *negated { "!" } else { "" };
            format!("{bang}?{}({})", func.as_str(), join(args, ", ", dump_expr))
        }
        Literal::Disjunction(alts, _) => format!("[{}]", dump_body(alts)),
    }
}

fn dump_body(alts: &[Vec<Literal>]) -> String {
    join(alts, " | ", |c| join(c, ", ", dump_literal))
}

/// The body of the only clause of `text`.
fn body(text: &str) -> String {
    dump_body(&parse(text).clauses[0].body)
}

/// `text` parsed as the right-hand side of a comparison.
fn expr(text: &str) -> String {
    match &parse(&format!("r(x) :- x = {text}.")).clauses[0].body[0][0] {
        Literal::Compare { rhs, .. } => dump_expr(rhs),
        other => panic!("not a comparison: {other:?}"),
    }
}

/// Every declaration as `name(attr:type,...)`, space-separated.
fn dump_decls(p: &Program) -> String {
    join(&p.decls, " ", |d| {
        format!(
            "{}({})",
            d.name,
            join(&d.attrs, ",", |a| format!("{}:{}", a.name, a.ty))
        )
    })
}

#[test]
fn declarations_types_and_qualifiers() {
    let text = ".decl edge(x: number, y: symbol) btree\n.decl flag()\n\
                .decl p(a: T) brie inline no_inline magic no_magic\n\
                .type T <: symbol\n.type N = number\n.type U = A | B\n\
                .number_type Old\n.symbol_type S\n.type Bare\n.type Last";
    let p = parse(text);
    let decls = dump_decls(&p);
    assert_eq!(decls, "edge(x:number,y:symbol) flag() p(a:T)");
    assert_eq!(
        slice(text, p.decls[0].span),
        ".decl edge(x: number, y: symbol) btree"
    );
    assert_eq!(slice(text, p.decls[0].attrs[1].ty.span), "symbol");
    let types = join(&p.types, " ", |t| {
        format!("{}={}", t.name, join(&t.bases, "|", |b| b.name.clone()))
    });
    // `.type Bare` alone is Soufflé's deprecated `.type Bare <: symbol`.
    assert_eq!(
        types,
        "T=symbol N=number U=A|B Old=number S=symbol Bare=symbol Last=symbol"
    );
    assert_eq!(slice(text, p.types[2].span), ".type U = A | B");
    assert!(p.clauses.is_empty() && p.directives.is_empty());
}

#[test]
fn one_declaration_names_several_relations() {
    let text = ".decl a, b,c(x: number, y: symbol) btree\n";
    let p = parse(text);
    let decls = dump_decls(&p);
    assert_eq!(
        decls,
        "a(x:number,y:symbol) b(x:number,y:symbol) c(x:number,y:symbol)"
    );
    assert_eq!(slice(text, p.decls[1].name.span), "b");
    assert_eq!(
        slice(text, p.decls[2].span),
        ".decl a, b,c(x: number, y: symbol) btree"
    );
}

#[test]
fn io_directives_with_parameters() {
    let text = ".input a, b\n.output r()\n\
                .output r(IO=file, filename=\"x.csv\", delimiter=\",\")\n.printsize r\n";
    let p = parse(text);
    let dump = join(&p.directives, " ", |d| {
        let params = join(&d.params, ",", |(k, v)| format!("{k}={v}"));
        let names = join(&d.relations, ",", |r| r.name.clone());
        format!("{:?}:{names}({params})", d.kind)
    });
    assert_eq!(
        dump,
        "Input:a,b() Output:r() Output:r(IO=file,filename=x.csv,delimiter=,) PrintSize:r()"
    );
    assert_eq!(slice(text, p.directives[0].span), ".input a, b");
    assert_eq!(slice(text, p.directives[1].span), ".output r()");
    assert!(slice(text, p.directives[2].span).ends_with("delimiter=\",\")"));
}

#[test]
fn facts_rules_several_heads_and_alternatives() {
    let text = "edge(1, 2).\npath(x, y) :- edge(x, y).\n\
                a(x), b(x) :- c(x); d(x), !e(x).\nflag().";
    let p = parse(text);
    let heads = join(&p.clauses, " ", |c| join(&c.heads, "+", dump_atom));
    assert_eq!(heads, "edge(1, 2) path(x, y) a(x)+b(x) flag()");
    assert!(p.clauses[0].body.is_empty() && p.clauses[3].body.is_empty());
    assert_eq!(dump_body(&p.clauses[2].body), "c(x) | d(x), !e(x)");
    assert_eq!(slice(text, p.clauses[1].span), "path(x, y) :- edge(x, y).");
    assert_eq!(slice(text, p.clauses[2].heads[1].span), "b(x)");
    assert_eq!(slice(text, p.clauses[2].body[1][1].span()), "!e(x)");
    // A clause may end glued to the next one.
    assert_eq!(parse("a(1).a(2).").clauses.len(), 2);
}

#[test]
fn bracketed_disjunction_and_parenthesized_comparison() {
    let text = "r(x) :- a(x), (b(x) ; c(x), d(x)), (e(x)), (x + 1) * 2 < 7.";
    assert_eq!(
        body(text),
        "a(x), [b(x) | c(x), d(x)], [e(x)], (< (* (+ x 1) 2) 7)"
    );
    let p = parse(text);
    assert_eq!(
        slice(text, p.clauses[0].body[0][1].span()),
        "(b(x) ; c(x), d(x))"
    );
    assert_eq!(
        slice(text, p.clauses[0].body[0][3].span()),
        "(x + 1) * 2 < 7"
    );
}

#[test]
fn atoms_comparisons_and_tests() {
    let text = "r(x) :- a(x, \"s\", _, 3, y+1, cat(a, b)), x = 1, x != 2, x < 3, x <= 4, \
                x > 5, x >= 6.";
    let want = "a(x, \"s\", _, 3, (+ y 1), (cat a b)), (= x 1), (!= x 2), (< x 3), \
                (<= x 4), (> x 5), (>= x 6)";
    assert_eq!(body(text), want);
    let text = "r(x) :- match(\"a.*\", x), !contains(\"b\", x), glob(\"*.rs\", x), \
                !glob(\"x\", x), strlen(x) > 2.";
    let want = "?match(\"a.*\", x), !?contains(\"b\", x), ?glob(\"*.rs\", x), \
                !?glob(\"x\", x), (> (strlen x) 2)";
    assert_eq!(body(text), want);
    let p = parse(text);
    assert_eq!(
        slice(text, p.clauses[0].body[0][1].span()),
        "!contains(\"b\", x)"
    );
    assert_eq!(slice(text, p.clauses[0].body[0][4].span()), "strlen(x) > 2");
}

#[test]
fn true_and_false_are_constraints_unless_called() {
    let text = "r(x) :- a(x), true, false, !true, !false, true(x).";
    assert_eq!(
        body(text),
        "a(x), (= 0 0), (!= 0 0), (!= 0 0), (= 0 0), true(x)"
    );
    let p = parse(text);
    assert_eq!(slice(text, p.clauses[0].body[0][3].span()), "!true");
    // In Soufflé a `.plan` follows the rule it orders; it is read and dropped.
    let p = parse("r(x) :- a(x), b(x).\n.plan 0:(2,1), 1:()\ns(1).");
    assert_eq!(p.clauses.len(), 2);
}

#[test]
fn a_negated_term_pushes_its_bang_inward_as_soufflé_does() {
    let cases = [
        ("r(x) :- a(x), !(x < 2).", "a(x), (>= x 2)"),
        ("r(x) :- a(x), !x = 2.", "a(x), (!= x 2)"),
        ("r(x) :- a(x), !!b(x).", "a(x), b(x)"),
        ("r(x) :- a(x), !(b(x) ; x >= 3).", "a(x), [!b(x), (< x 3)]"),
        ("r(x) :- a(x), !(b(x), x > 3).", "a(x), [!b(x) | (<= x 3)]"),
        (
            "r(x) :- a(x), !(!match(\"a\", s)).",
            "a(x), ?match(\"a\", s)",
        ),
        (
            "r(x) :- a(x), !(b(x), !(c(x) ; x = 1)).",
            "a(x), [!b(x) | [c(x) | (= x 1)]]",
        ),
    ];
    for (text, want) in cases {
        assert_eq!(body(text), want, "{text}");
    }
    let text = "r(x) :- a(x), !(x < 2).";
    let p = parse(text);
    assert_eq!(slice(text, p.clauses[0].body[0][1].span()), "!(x < 2)");
}

#[test]
fn glob_is_an_atom_when_a_relation_is_declared_glob() {
    let text = "r(x) :- glob(\"*\", x), !glob(x, \"y\").\n.decl glob(p: symbol, s: symbol)\n";
    assert_eq!(body(text), "glob(\"*\", x), !glob(x, \"y\")");
}

#[test]
fn precedence_and_associativity() {
    let cases = [
        ("1 + 2 * 3", "(+ 1 (* 2 3))"),
        ("1 * 2 + 3", "(+ (* 1 2) 3)"),
        ("1 - 2 - 3", "(- (- 1 2) 3)"),
        ("8 / 4 % 3 * 2", "(* (% (/ 8 4) 3) 2)"),
        ("(1 + 2) * 3", "(* (+ 1 2) 3)"),
        ("-x * y", "(* (neg x) y)"),
        ("1 - -5", "(- 1 -5)"),
        ("-(5)", "(neg 5)"),
        ("- - x", "(neg (neg x))"),
        // Soufflé's levels: lor < lxor < land < bor < bxor < band < shifts < + - < * / %
        // < bnot lnot < ^ (right-associative) < unary minus.
        ("a lor b land c", "(lor a (land b c))"),
        ("a lxor b lor c", "(lor (lxor a b) c)"),
        ("a bor b bxor c band d", "(bor a (bxor b (band c d)))"),
        ("a band b bshl 2", "(band a (bshl b 2))"),
        ("1 bshl 2 + 3", "(bshl 1 (+ 2 3))"),
        ("a bshr 1 bshru 2", "(bshru (bshr a 1) 2)"),
        ("2 ^ 3 ^ 2", "(^ 2 (^ 3 2))"),
        ("2 * 3 ^ 2", "(* 2 (^ 3 2))"),
        ("-2 ^ 2", "(^ -2 2)"),
        ("-x ^ 2", "(^ (neg x) 2)"),
        ("bnot x ^ 2", "(bnot (^ x 2))"),
        ("bnot x * 2", "(* (bnot x) 2)"),
        ("lnot lnot x band y", "(band (lnot (lnot x)) y)"),
        ("- bnot x", "(neg (bnot x))"),
        ("bnot", "bnot"),
    ];
    for (text, want) in cases {
        assert_eq!(expr(text), want, "{text}");
    }
}

#[test]
fn number_string_and_functor_literals() {
    let cases = [
        ("-5", "-5"),
        ("-2147483648", "-2147483648"),
        ("-9223372036854775808", "-9223372036854775808"),
        ("9223372036854775807", "9223372036854775807"),
        ("0x1F + 0b101", "(+ 31 5)"),
        ("7u + 18446744073709551615u", "(+ 7u 18446744073709551615u)"),
        ("1.5 + 2.0e3 + -0.5", "(+ (+ 1.5f 2000.0f) -0.5f)"),
        (r#""a\"b\\c\n\t\r\x""#, r#""a\"b\\c\n\t\r\\x""#),
        (
            "cat(a, \"-\", to_string(n), substr(s, 0, strlen(s)), to_number(\"4\"))",
            "(cat a \"-\" (to_string n) (substr s 0 (strlen s)) (to_number \"4\"))",
        ),
    ];
    for (text, want) in cases {
        assert_eq!(expr(text), want, "{text}");
    }
    let text = "r(x) :- x = -5 + 1.";
    let Literal::Compare { rhs, .. } = &parse(text).clauses[0].body[0][0] else {
        panic!()
    };
    assert_eq!(slice(text, rhs.span()), "-5 + 1");
    let Expr::Binary { lhs, .. } = rhs else {
        panic!("{rhs:?}")
    };
    assert_eq!(slice(text, lhs.span()), "-5");
}

#[test]
fn aggregates_with_and_without_braces() {
    let cases = [
        ("count : { a(x), b(x) }", "(count {a(x), b(x)})"),
        ("sum y : { a(_, y) }", "(sum y {a(_, y)})"),
        ("min y : a(_, y)", "(min y {a(_, y)})"),
        ("count : a(_, _)", "(count {a(_, _)})"),
        (
            "max y + 1 : { a(y) ; b(y), y > 0 }",
            "(max (+ y 1) {[a(y) | b(y), (> y 0)]})",
        ),
    ];
    for (text, want) in cases {
        assert_eq!(expr(text), want, "{text}");
    }
    let text = "total(sum y : { a(y) }) :- b().";
    let p = parse(text);
    assert_eq!(dump_atom(&p.clauses[0].heads[0]), "total((sum y {a(y)}))");
    assert_eq!(
        slice(text, p.clauses[0].heads[0].args[0].span()),
        "sum y : { a(y) }"
    );
}

#[test]
fn rule_ids_attach_to_the_next_clause() {
    let text = "// @id tc.base\npath(x, y) :- edge(x, y).\n//@id tc/step-2:x\n// other\n\
                /* block */\npath(x, z) :- path(x, y), edge(y, z).\nedge(1, 2).\n\
                // @identity is a comment\nedge(2, 3).";
    let p = parse(text);
    let ids = join(&p.clauses, " ", |c| {
        c.id.as_ref().map_or("-".into(), |i| i.name.clone())
    });
    assert_eq!(ids, "tc.base tc/step-2:x - -");
    assert_eq!(
        p.clauses[1].id.as_ref().map(|i| slice(text, i.span)),
        Some("tc/step-2:x")
    );
}

#[rustfmt::skip]
const ERROR_CASES: &[ErrorCase<'static>] = &[
    ("// @id x\n.decl a(n: number)\n", "E-parse", "rule id `x` is not followed by a rule",
     (1, 1), (1, 9), ID_HELP),
    ("a(1).\n  // @id x\n", "E-parse", "rule id `x` is not followed by a rule",
     (2, 3), (2, 11), ID_HELP),
    ("a(x) :-\n// @id x\n b(x).", "E-parse", "rule id `x` is not followed by a rule",
     (2, 1), (2, 9), ID_HELP),
    ("// @id x\n// @id y\na(1).", "E-parse", "rule id `x` is not followed by a rule",
     (1, 1), (1, 9), ID_HELP),
    ("edge(1, 2)\nedge(2, 3).\n", "E-parse", "missing `.` at the end of the fact",
     (1, 11), (1, 11), DOT_HELP),
    ("p(x) :- e(x)\n.decl a(x: number)", "E-parse", "missing `.` at the end of the rule",
     (1, 13), (1, 13), DOT_HELP),
    ("r(x) :- a(x y).", "E-parse", "expected `)` or `,` after argument, found `y`",
     (1, 13), (1, 14), "close the atom's argument list with `)`, separating arguments with `,`"),
    ("r(x) :- a(x, y.", "E-parse", "expected `)` or `,` after argument, found `.`",
     (1, 15), (1, 16), "close the atom's argument list with `)`, separating arguments with `,`"),
    ("r(x) :- a(x) b(x).", "E-parse", "expected `,`, `;` or `.` after the body literal, found `b`",
     (1, 14), (1, 15), DOT_HELP),
    ("b(", "E-parse", "expected an expression, found end of file", (1, 3), (1, 3),
     "write a variable, `_`, a number, a string, a functor call or an aggregate"),
    (".inptu edge\nedge(1).\n", "E-parse", "unknown directive `.inptu`", (1, 1), (1, 7),
     "did you mean `.input`? the directives are `.decl`, `.type`, `.input`, `.output`, \
      `.printsize`, `.number_type`, `.symbol_type`, `.pragma`, `.comp`, `.init`, `.override`, `.functor`"),
    (".decl edge(x: number)\n.decl path, count(x: number)\n", "E-parse",
     "`count` is a keyword and cannot name a relation", (2, 13), (2, 18),
     "rename the relation (`count_rel`, say): Soufflé reserves the same words"),
    (".decl true(x: number)\n", "E-parse", "`true` is a keyword and cannot name a relation",
     (1, 7), (1, 11), "rename the relation (`true_rel`, say): Soufflé reserves the same words"),
    (".plan 0: (1, 2)\n", "E-parse", "`.plan` must follow the rule it orders", (1, 1), (1, 6),
     "move it right after the rule's `.`, as in `a(x) :- b(x), c(x). .plan 0:(2,1)`"),
    (".limitsize r(n=2)\n", "E-unsupported", "directive `.limitsize` is not supported", (1, 1), (1, 11),
     "Tollgate reads `.decl`, `.type`, `.input`, `.output`, `.printsize`, `.pragma`, `.comp`, `.init`, `.override` and `.functor`"),
    ("r(x) :- r(x).\n.plan 0:(1 2)\n", "E-parse", "expected `,` or `)` in the atoms' order, found `2`", (2, 12), (2, 13),
     "write a plan as `.plan 0:(1,2)`: a version of the rule, then the order of its body atoms, numbered from 1"),
    (".functor f(x: number): number stateful\n", "E-unsupported", "stateful functors are not supported", (1, 31), (1, 39),
     "a stateful functor reaches Soufflé's record and symbol tables from C++; write a pure functor"),
    (".comp A {\n .decl r(x: number)\n", "E-parse", "expected `}` to close component `A`, found end of file", (3, 1), (3, 1),
     "close the component's body with `}`"),
    ("}\n", "E-parse", "expected a directive, a fact or a rule, found `}`", (1, 1), (1, 2),
     "this `}` closes no component; remove it"),
    (".pragma jobs\n", "E-parse", "expected the option's name as a string after `.pragma`, found `jobs`",
     (1, 9), (1, 13), "write a pragma as `.pragma \"key\" \"value\"`, as in `.pragma \"fact-dir\" \"facts\"`"),
    (".decl eq(x: number, y: number, z: number) eqrel\n", "E-eqrel",
     "an `eqrel` relation has two attributes; this one has 3", (1, 43), (1, 48),
     "an equivalence relation pairs two values of one type, as in `.decl same(a: T, b: T) eqrel`"),
    (".decl r(x: number) fast\n", "E-parse", "unknown relation qualifier `fast`", (1, 20), (1, 24),
     "the qualifiers are `eqrel` and `overridable`; `btree`, `btree_delete`, `brie`, `inline`, `no_inline`, `magic` and `no_magic` are accepted and ignored"),
    (".decl r(x number)\n", "E-parse", "expected `:` after attribute `x`, found `number`", (1, 11), (1, 17),
     "give every attribute a type, as in `x: number`"),
    (".type T foo\n", "E-parse", "expected `<:` or `=` after type `T`, found `foo`", (1, 9), (1, 12),
     "write `.type T <: symbol`, `.type T = number` or `.type T = A | B`"),
    ("r(9223372036854775808).", "E-parse", "invalid number literal `9223372036854775808`: out of range",
     (1, 3), (1, 22), "integers must lie between -9223372036854775808 and 9223372036854775807, \
                       unsigned integers between 0u and 18446744073709551615u"),
    ("r(x) :- x = -9223372036854775809.", "E-parse",
     "invalid number literal `-9223372036854775809`: out of range", (1, 13), (1, 33),
     "integers must lie between -9223372036854775808 and 9223372036854775807, \
      unsigned integers between 0u and 18446744073709551615u"),
    ("r(x) :- a(y), x = foo(y).", "E-parse", "`foo` is not a functor: relations cannot be used as terms",
     (1, 19), (1, 22), "add `foo(..., v)` as a separate body literal and use the variable `v`; \
                        the functors are `cat`, `strlen`, `substr`, `to_number`, `to_string`, `to_float`, \
                        `to_unsigned`, `max`, `min`, `range` and `as`"),
    (".type T = A | B {}\n", "E-unsupported",
     "a union of types mixed with a branch of an algebraic data type", (1, 17), (1, 18),
     "write every alternative as a branch, as in `.type T = A {x: number} | B {}`"),
    ("r($) :- a(1).", "E-unsupported",
     "`$` alone (Soufflé's deprecated counter, `autoinc()`) is not supported", (1, 3), (1, 4),
     "`$Name(..)` is a branch of an algebraic data type; a counter numbers tuples in the order Soufflé derives them, which is not the order Tollgate does"),
    (".decl r(x: number, y: number) choice-domain x\n", "E-unsupported", "`choice-domain` is not supported",
     (1, 31), (1, 37),
     "keep one tuple per key with an aggregate instead, as in `r(k, v) :- s(k, _), v = min w : { s(k, w) }`"),
    ("r(x) <= r(y) :- x < y.\n", "E-unsupported", "subsumption (`r(..) <= r(..) :- body`) is not supported",
     (1, 6), (1, 8),
     "it removes tuples while the rules run, which Tollgate's evaluation does not do; keep the best tuple with an aggregate, as in `best(k, v) :- r(k, _), v = min w : { r(k, w) }`"),
    ("r(autoinc()).\n", "E-unsupported", "functor `autoinc` is not supported", (1, 3), (1, 10),
     "`autoinc()` numbers tuples in the order Soufflé derives them, which is not the order Tollgate does: the same program would give other numbers"),
    ("r(ord(\"a\")).\n", "E-unsupported", "functor `ord` is not supported", (1, 3), (1, 6),
     "`ord(x)` is a value's place in Soufflé's symbol table, which Tollgate does not share"),
    ("r(x) :- a(x, y), ord(x) < ord(y).", "E-unsupported", "functor `ord` is not supported", (1, 18), (1, 21),
     "`ord(x)` is a value's place in Soufflé's symbol table, which Tollgate does not share"),
    ("r(x) :- a(foo(x)).", "E-parse", "`foo` is not a functor: relations cannot be used as terms",
     (1, 11), (1, 14), "add `foo(..., v)` as a separate body literal and use the variable `v`; \
                        the functors are `cat`, `strlen`, `substr`, `to_number`, `to_string`, `to_float`, \
                        `to_unsigned`, `max`, `min`, `range` and `as`"),
    ("r(x) :- x = match(\"a\", x).", "E-parse", "`match` is a test, not a value", (1, 13), (1, 18),
     "use it as a body literal on its own, as in `match(\"a*\", x)`"),
    ("r(x) :- x = substr(\"a\", 1).", "E-parse", "`substr` takes 3 arguments, found 2", (1, 13), (1, 27),
     "write `substr(s, start, length)`"),
    ("r(x) :- x = cat(\"a\").", "E-parse", "`cat` takes at least 2 arguments, found 1", (1, 13), (1, 21),
     "write `cat(a, b, ...)`"),
    ("r(x) :- !contains(x).", "E-parse", "`contains` takes 2 arguments, found 1", (1, 9), (1, 21),
     "write `contains(pattern, text)`"),
    ("r(x) :- a(x), b.", "E-parse", "expected a literal, found `b`", (1, 15), (1, 16),
     "a variable alone is not a condition; write a relation with no columns as `b()`"),
    ("r(x) :- x + 1.", "E-parse", "expected a comparison operator, found `.`", (1, 14), (1, 15),
     "compare with `=`, `!=`, `<`, `<=`, `>` or `>=`"),
    ("r(x) :- !x.", "E-parse", "expected a literal, found `x`", (1, 10), (1, 11),
     "a variable alone is not a condition; write a relation with no columns as `x()`"),
    ("r(x) :- !.", "E-parse", "expected a relation name after `!`, found `.`", (1, 10), (1, 11),
     "negate an atom, as in `!edge(x, y)`"),
    ("!r(x) :- a(x).", "E-parse", "expected a directive, a fact or a rule, found `!`", (1, 1), (1, 2),
     "start each item with a directive such as `.decl`, or with a relation name"),
    ("r(n) :- n = count { a(_) }.", "E-parse", "expected `:` after `count`, found `{`", (1, 19), (1, 20),
     "write an aggregate as `count : { r(x) }`"),
    ("r(n) :- n = sum y : { a(y) .", "E-parse", "expected `}` to close the aggregate body, found `.`",
     (1, 28), (1, 29), "close the body with `}`"),
    ("r(n) :- n = min y : y.", "E-parse", "expected `{` or an atom after the aggregate's `:`, found `y`",
     (1, 21), (1, 22), "write the body in braces, as in `min x : { r(x) }`"),
    ("r(x) :- (a(x) ; b(x).", "E-parse", "expected `)`, `,` or `;` in the bracketed body, found `.`",
     (1, 21), (1, 22), "close the bracketed disjunction with `)`"),
    ("r(x) :- a(x), [x = y.", "E-parse", "expected `]` or `,` after a field, found `=`", (1, 18), (1, 19),
     "close the record with `]`, separating its fields with `,`"),
];

#[test]
fn errors_have_code_message_span_and_help() {
    for case in ERROR_CASES {
        let found = errors(case.0);
        assert_eq!(found.len(), 1, "{}: {found:?}", case.0);
        check(&found[0], *case);
    }
    let misplaced = errors("// @id x\n.decl a(n: number)\n");
    assert_eq!(misplaced[0].label, "this comment names no rule");
    assert_eq!(errors("a(1)\na(2).")[0].label, "expected `.` here");
}

#[test]
fn recovery_reports_every_broken_item() {
    let text = "a(1) b.\n.inptu x\nc(1).\nd(x) :- .\ne(x) :- f(x)\n.decl g()\nh(1).\n// @id z\n";
    let lines = join(&errors(text), " ", |d| {
        src(text).line_col(d.span.start).0.to_string()
    });
    assert_eq!(lines, "1 2 4 5 8");
}

#[test]
fn single_facts() {
    let fact = |t: &str| parse_fact(&src(t)).map(|a| dump_atom(&a)).ok();
    assert_eq!(fact("r(\"a\", 3)").as_deref(), Some("r(\"a\", 3)"));
    let all_kinds = fact(" r(\"a\", -3, 7u, -1.5, 0x10).\n");
    assert_eq!(all_kinds.as_deref(), Some("r(\"a\", -3, 7u, -1.5f, 16)"));
    assert_eq!(fact("flag()").as_deref(), Some("flag()"));
    let text = "r(\"a\", 3).";
    let span = parse_fact(&src(text)).map(|a| a.span).ok();
    assert_eq!(span.map(|s| slice(text, s)), Some("r(\"a\", 3)"));
    let help = "fact arguments are literals: strings in double quotes (`\"a\"`), numbers \
                (`3`, `-3`, `3u`, `1.5`), records (`[1, \"a\"]`) or `nil`";
    let d = fact_error("r(x)");
    check(
        &d,
        (
            "r(x)",
            "E-parse",
            "expected a literal value, found `x`",
            (1, 3),
            (1, 4),
            help,
        ),
    );
    let d = fact_error("r(1) s(2)");
    let help = "give exactly one fact, such as `r(\"a\", 3)`";
    let msg = "expected the end of the fact, found `s`";
    check(&d, ("r(1) s(2)", "E-parse", msg, (1, 6), (1, 7), help));
    let d = fact_error("r(\"a)");
    assert_eq!(d.message, "unterminated string literal");
}

#[test]
fn ip_addresses_read_as_soufflé_reads_them() {
    let fact = |t: &str| parse_fact(&src(t)).map(|a| dump_atom(&a)).ok();
    assert_eq!(
        fact("r(127.0.0.1, 0.0.0.0, 10.1.2.3)").as_deref(),
        Some("r(2130706433, 0, 167838211)")
    );
    // 32 bits: negative from 128.0.0.0 on, and a minus negates the number.
    assert_eq!(
        fact("r(192.168.0.1, 255.255.255.255, -128.0.0.0)").as_deref(),
        Some("r(-1062731775, -1, 2147483648)")
    );
    // Three parts are a float and a stray `.3`, not an address.
    assert_ne!(fact("r(1.2.3)").as_deref(), Some("r(66051)"));
    let d = fact_error("r(10.0.256.1)");
    assert_eq!(
        d.message,
        "invalid IP address `10.0.256.1`: a part is over 255"
    );
    assert_eq!(slice("r(10.0.256.1)", d.span), "10.0.256.1");
}

#[test]
fn line_and_file_are_those_of_the_file_they_are_written_in() {
    let a = Source::new(
        "a.dl",
        ".decl r(f: symbol, n: number)\nr(__FILE__, __LINE__).\n",
    );
    let b = Source::new("lib/b.dl", "// b\n\nr(__FILE__, __LINE__ * 10).\n");
    let program = parse_program(&Source::join(&[a, b])).unwrap();
    let facts = join(&program.clauses, " ", |c| join(&c.heads, "+", dump_atom));
    assert_eq!(facts, "r(\"a.dl\", 2) r(\"lib/b.dl\", (* 3 10))");
}

/// Newer Soufflé's forms: `a::edge` qualifies a relation as `a.edge` does (glued only: `a ::`
/// stays an error), and `bnot(..)`/`lnot(..)` starting a body literal are operators applied
/// to a bracketed operand, not atoms.
#[test]
fn double_colon_qualifiers_and_bnot_calls() {
    assert_eq!(
        body("p(x) :- g::edge(x, y), !g::h::e(x)."),
        "g.edge(x, y), !g.h.e(x)"
    );
    assert_eq!(
        body("p(1) :- bnot(1) > 0, lnot(0) != 0."),
        "(> (bnot 1) 0), (!= (lnot 0) 0)"
    );
    assert!(!errors("p(x) :- g ::edge(x).").is_empty());
}
