#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Diagnostics of rejected programs: code, message, the line and column of the primary span,
//! and the help line of every error; full rendered snapshots of a few.

use tollgate_engine::diag::Severity;
use tollgate_engine::{Diagnostic, Program, Source};

/// What one diagnostic must say.
struct Want<'a> {
    code: &'a str,
    message: &'a str,
    /// One-based line and column of the primary span's start.
    at: (usize, usize),
    /// The text the primary span covers.
    covers: &'a str,
    help: &'a str,
}

fn errors(text: &str) -> (Source, Vec<Diagnostic>) {
    let src = Source::new("rules.dl", text);
    match Program::compile(&src) {
        Ok(_) => panic!("program accepted:\n{text}"),
        Err(d) => (src, d),
    }
}

fn covered<'s>(src: &'s Source, d: &Diagnostic) -> &'s str {
    &src.text[d.span.start as usize..d.span.end as usize]
}

#[track_caller]
fn assert_diagnostic(src: &Source, d: &Diagnostic, want: &Want<'_>) {
    let rendered = d.render(src);
    assert_eq!(d.code, want.code, "{rendered}");
    assert_eq!(d.message, want.message, "{rendered}");
    assert_eq!(src.line_col(d.span.start), want.at, "{rendered}");
    assert_eq!(covered(src, d), want.covers, "{rendered}");
    assert_eq!(d.help.as_deref(), Some(want.help), "{rendered}");
    assert_eq!(d.severity, Severity::Error);
}

/// The program is rejected, and its first diagnostic is `want`.
#[track_caller]
fn check_first(text: &str, want: Want<'_>) -> Vec<Diagnostic> {
    let (src, diags) = errors(text);
    assert_diagnostic(&src, &diags[0], &want);
    diags
}

/// The program is rejected with exactly `want`.
#[track_caller]
fn check(text: &str, want: Want<'_>) {
    let (src, diags) = errors(text);
    let all: Vec<String> = diags.iter().map(|d| d.render(&src)).collect();
    assert_eq!(diags.len(), 1, "{}", all.join("\n"));
    assert_diagnostic(&src, &diags[0], &want);
}

const EDGE: &str = ".decl edge(x: symbol, y: symbol)\n.decl path(x: symbol, y: symbol)\n";

fn with_edge(rules: &str) -> String {
    format!("{EDGE}{rules}")
}

// ---- names and arities ----------------------------------------------------------------------

#[test]
fn unknown_relation_suggests_the_closest_name() {
    check_first(
        &with_edge("path(x, y) :- edg(x, y).\n"),
        Want {
            code: "E-unknown-relation",
            message: "unknown relation `edg`",
            at: (3, 15),
            covers: "edg",
            help: "did you mean `edge`? otherwise declare it with `.decl edg(...)`",
        },
    );
    check(
        &with_edge("path(x, y) :- edge(x, y), zebra(x).\n"),
        Want {
            code: "E-unknown-relation",
            message: "unknown relation `zebra`",
            at: (3, 27),
            covers: "zebra",
            help: "declare it with `.decl zebra(...)`",
        },
    );
    check(
        &with_edge("pth(x, y) :- edge(x, y).\n"),
        Want {
            code: "E-unknown-relation",
            message: "unknown relation `pth`",
            at: (3, 1),
            covers: "pth",
            help: "did you mean `path`? otherwise declare it with `.decl pth(...)`",
        },
    );
}

#[test]

fn unknown_relation_does_not_cascade_into_unbound_errors() {
    check(
        &with_edge("path(x, y) :- edg(x, y).\n"),
        Want {
            code: "E-unknown-relation",
            message: "unknown relation `edg`",
            at: (3, 15),
            covers: "edg",
            help: "did you mean `edge`? otherwise declare it with `.decl edg(...)`",
        },
    );
    check(
        &with_edge("path(x, y) :- edge(x).\n"),
        Want {
            code: "E-arity",
            message: "`edge` has 2 columns, but 1 argument given",
            at: (3, 15),
            covers: "edge(x)",
            help: "it is declared as `edge(x: symbol, y: symbol)`",
        },
    );
}

#[test]
fn arity_mismatch_shows_the_declaration() {
    check(
        &with_edge("path(x, y) :- edge(x, y), edge(x, y, x).\n"),
        Want {
            code: "E-arity",
            message: "`edge` has 2 columns, but 3 arguments given",
            at: (3, 27),
            covers: "edge(x, y, x)",
            help: "it is declared as `edge(x: symbol, y: symbol)`",
        },
    );
    check(
        &with_edge("path(x) :- edge(x, _).\n"),
        Want {
            code: "E-arity",
            message: "`path` has 2 columns, but 1 argument given",
            at: (3, 1),
            covers: "path(x)",
            help: "it is declared as `path(x: symbol, y: symbol)`",
        },
    );
}

#[test]
fn duplicate_declaration() {
    check(
        ".decl s(x: symbol)\n.decl s(x: number)\n",
        Want {
            code: "E-duplicate-decl",
            message: "relation `s` is declared twice",
            at: (2, 7),
            covers: "s",
            help: "it was first declared on line 1; remove one declaration",
        },
    );
}

// ---- types ----------------------------------------------------------------------------------

#[test]
fn symbol_where_a_number_is_expected() {
    check(
        &with_edge(".decl n(x: number)\nn(x) :- edge(x, _).\n"),
        Want {
            code: "E-type",
            message: "variable `x` is `symbol` but `number` is expected here",
            at: (4, 1),
            covers: "n(x)",
            help: "convert with `to_string(...)` or `to_number(...)`, or use a variable of the \
                   right type",
        },
    );
    check(
        &with_edge(".decl n(x: number)\nn(1) :- edge(\"a\", 3).\n"),
        Want {
            code: "E-type",
            message: "`3` is a `number` but `symbol` is expected here",
            at: (4, 9),
            covers: "edge(\"a\", 3)",
            help: "write symbols in double quotes",
        },
    );
}

#[test]
fn variable_used_with_two_types() {
    let text = ".decl e(x: number)\n.decl s(x: symbol)\n.decl r(x: number)\n\
                r(x) :- e(x), s(x).\n";
    check(
        text,
        Want {
            code: "E-type",
            message: "variable `x` is used as `symbol` here and as `number` elsewhere",
            at: (4, 15),
            covers: "s(x)",
            help: "a variable has one type; use a second variable or convert with \
                   `to_string`/`to_number`",
        },
    );
    let (src, diags) = errors(text);
    let other = &diags[0].labels[0];
    assert_eq!(src.line_col(other.span.start), (4, 9));
    assert_eq!(other.message, "used as `number` here (line 4)");
}

#[test]
fn aggregates_over_symbols_and_unknown_types() {
    check_first(
        ".decl s(x: symbol)\n.decl r(x: number)\nr(n) :- n = sum x : { s(x) }.\n",
        Want {
            code: "E-type",
            message: "`sum` over symbols",
            at: (3, 13),
            covers: "sum x : { s(x) }",
            help: "sum, min and max take numeric values",
        },
    );
    check(
        ".decl s(x: strng)\n",
        Want {
            code: "E-type",
            message: "unknown type `strng`",
            at: (1, 12),
            covers: "strng",
            help: "use symbol, number, unsigned, float or declare it with `.type`",
        },
    );
}

#[test]
fn literals_that_do_not_fit_32_bits() {
    check(
        ".decl s(x: number)\n.decl r(x: number)\nr(x) :- s(x), x = 3000000000.\n",
        Want {
            code: "E-literal",
            message: "`3000000000` does not fit a 32-bit number",
            at: (3, 19),
            covers: "3000000000",
            help: "numbers are 32-bit: -2147483648 to 2147483647",
        },
    );
    check(
        ".decl s(x: number)\ns(3000000000).\n",
        Want {
            code: "E-fact",
            message: "`3000000000` does not fit a 32-bit number",
            at: (2, 3),
            covers: "3000000000",
            help: "a fact holds constants; column `x` of `s` is `number`",
        },
    );
}

#[test]

fn invalid_constant_patterns_are_reported() {
    for (text, pattern) in [
        (
            ".decl s(x: symbol)\n.decl r(x: symbol)\nr(x) :- s(x), match(\"(\", x).\n",
            "\"(\"",
        ),
        (
            ".decl s(x: symbol)\n.decl r(x: symbol)\nr(x) :- s(x), glob(\"[\", x).\n",
            "\"[\"",
        ),
    ] {
        let (src, diags) = errors(text);
        assert_eq!(diags.len(), 1);
        assert!(diags[0].is_error());
        assert_eq!(src.line_col(diags[0].span.start).0, 3);
        assert!(covered(&src, &diags[0]).contains(pattern));
        assert!(diags[0].help.is_some());
    }
}

// ---- range restriction ----------------------------------------------------------------------

#[test]
fn unbound_variables() {
    let help = "add a body atom that binds `y`, or give it a value with `y = ...`";
    let message = "variable `y` is not bound by a positive atom";
    let decls = ".decl e(x: number)\n.decl r(x: number, y: number)\n.decl q(x: number)\n";
    // In the head.
    check(
        &format!("{decls}r(x, y) :- e(x).\n"),
        Want {
            code: "E-unbound",
            message,
            at: (4, 6),
            covers: "y",
            help,
        },
    );
    // Only in a negation.
    check(
        &format!("{decls}q(x) :- e(x), !e(y).\n"),
        Want {
            code: "E-unbound",
            message,
            at: (4, 18),
            covers: "y",
            help,
        },
    );
    // Only in a comparison.
    check(
        &format!("{decls}q(x) :- e(x), y < 3.\n"),
        Want {
            code: "E-unbound",
            message,
            at: (4, 15),
            covers: "y",
            help,
        },
    );
    // Bound only inside an aggregate, used outside it: a witness, which only `min` and
    // `max` export.
    check(
        &format!("{decls}q(x) :- e(x), n = count : {{ e(y) }}, y > n.\n"),
        Want {
            code: "E-unsupported",
            message: "`y` is bound only inside a `count` aggregate: witnesses are supported for `min` and `max`",
            at: (4, 19),
            covers: "count : { e(y) }",
            help: "bind the variable outside the aggregate (it then groups it), or use `min`/`max`",
        },
    );
    check(
        &format!("{decls}q(_) :- e(_).\n"),
        Want {
            code: "E-unbound",
            message: "`_` in a rule head",
            at: (4, 3),
            covers: "_",
            help: "a head needs a value in every column: use a variable bound in the body or a \
                   constant",
        },
    );
}

// ---- stratification -------------------------------------------------------------------------

/// Asserts that an E-unstratifiable diagnostic names every rule of the cycle with its line,
/// in its labels and in its help.
#[track_caller]
fn assert_names_cycle(src: &Source, d: &Diagnostic, rules: &[(&str, usize)]) {
    assert_eq!(d.code, "E-unstratifiable");
    assert_eq!(d.labels.len(), rules.len(), "{}", d.render(src));
    let help = d.help.as_deref().unwrap();
    for ((id, line), label) in rules.iter().zip(&d.labels) {
        assert_eq!(src.line_col(label.span.start), (*line, 1));
        assert_eq!(
            label.message,
            format!("rule `{id}` of the cycle, line {line}")
        );
        assert!(
            help.contains(&format!("`{id}` (line {line})")),
            "help does not name `{id}`: {help}"
        );
    }
}

const NEGATION_CYCLE: &str = "\
.decl e(x: number)
.decl p(x: number)
.decl q(x: number)
.decl r(x: number)
// @id p.base
p(x) :- e(x), !r(x).
// @id q.from-p
q(x) :- p(x).
// @id r.from-q
r(x) :- q(x).
// @id unrelated
q(x) :- e(x), x > 3.
";

#[test]
fn negation_in_a_recursive_cycle_names_every_rule() {
    let (src, diags) = errors(NEGATION_CYCLE);
    assert_eq!(diags.len(), 1);
    let d = &diags[0];
    assert_eq!(
        d.message,
        "`p` depends on `r` through negation or aggregation inside a recursive cycle"
    );
    assert_eq!(src.line_col(d.span.start), (6, 16));
    assert_eq!(covered(&src, d), "r(x)");
    assert_eq!(d.label, "negated or aggregated here");
    assert_names_cycle(&src, d, &[("p.base", 6), ("q.from-p", 8), ("r.from-q", 10)]);
    assert_eq!(
        d.render(&src),
        "\
error[E-unstratifiable]: `p` depends on `r` through negation or aggregation inside a recursive cycle
 --> rules.dl:6:16
  |
6 | p(x) :- e(x), !r(x).
  |                ^^^^ negated or aggregated here
 ::: rules.dl:6:1
  |
6 | p(x) :- e(x), !r(x).
  | ^^^^^^^^^^^^^^^^^^^^ rule `p.base` of the cycle, line 6
 ::: rules.dl:8:1
  |
8 | q(x) :- p(x).
  | ^^^^^^^^^^^^^ rule `q.from-p` of the cycle, line 8
 ::: rules.dl:10:1
   |
10 | r(x) :- q(x).
   | ^^^^^^^^^^^^^ rule `r.from-q` of the cycle, line 10
  = help: the cycle is formed by the rules `p.base` (line 6), `q.from-p` (line 8), `r.from-q` (line 10); a relation may only be negated or aggregated after it is complete: move the negation out of the cycle or split the relation
"
    );
}

#[test]
fn negation_of_itself_is_a_cycle_of_one_rule() {
    let (src, diags) =
        errors(".decl e(x: number)\n.decl p(x: number)\n// @id self\np(x) :- e(x), !p(x).\n");
    assert_eq!(diags.len(), 1);
    assert_eq!(
        diags[0].message,
        "`p` depends on `p` through negation or aggregation inside a recursive cycle"
    );
    assert_names_cycle(&src, &diags[0], &[("self", 4)]);
}

#[test]
fn aggregation_in_a_recursive_cycle_names_every_rule() {
    let text = "\
.decl e(x: number)
.decl p(x: number)
.decl c(n: number)
p(x) :- e(x).
// @id p.from-count
p(n) :- c(n).
// @id count.p
c(n) :- n = count : { p(_) }.
";
    let (src, diags) = errors(text);
    assert_eq!(diags.len(), 1);
    let d = &diags[0];
    assert_eq!(
        d.message,
        "`c` depends on `p` through negation or aggregation inside a recursive cycle"
    );
    assert_eq!(src.line_col(d.span.start), (8, 23));
    assert_eq!(covered(&src, d), "p(_)");
    // The rule on line 4 reads only `e`: it is not part of the cycle.
    assert_names_cycle(&src, d, &[("p.from-count", 6), ("count.p", 8)]);
}

// ---- rule ids and parsing -------------------------------------------------------------------

const DUPLICATE_ID: &str = "\
.decl e(x: number)
.decl p(x: number)
// @id same
p(x) :- e(x).
// @id same
p(x) :- e(x), x > 1.
";

#[test]
fn duplicate_rule_id() {
    let (src, diags) = errors(DUPLICATE_ID);
    assert_eq!(diags.len(), 1);
    let d = &diags[0];
    assert_eq!(d.code, "E-rule-id");
    assert_eq!(d.message, "rule id `same` is used twice");
    assert_eq!(src.line_col(d.span.start), (5, 8));
    assert_eq!(covered(&src, d), "same");
    assert!(
        d.help
            .as_deref()
            .unwrap()
            .ends_with("rule ids must be unique"),
        "{:?}",
        d.help
    );
}

#[test]

fn duplicate_rule_id_help_gives_the_line_of_the_first_rule() {
    let (_, diags) = errors(DUPLICATE_ID);
    assert_eq!(
        diags[0].help.as_deref(),
        Some("it already names the rule on line 4; rule ids must be unique")
    );
}

#[test]
fn a_rule_id_on_a_fact() {
    check(
        ".decl e(x: number)\n// @id fact\ne(1).\n",
        Want {
            code: "E-rule-id",
            message: "a rule id on a fact",
            at: (2, 8),
            covers: "fact",
            help: "rule ids name rules; facts are named by their origin",
        },
    );
}

#[test]
fn parse_errors() {
    check(
        ".decl e(x: number)\n.decl p(x: number)\np(x) :- e(x)\n",
        Want {
            code: "E-parse",
            message: "missing `.` at the end of the rule",
            at: (3, 13),
            covers: "",
            help: "end every fact and rule with `.`",
        },
    );
    check(
        ".inptu edge\n",
        Want {
            code: "E-parse",
            message: "unknown directive `.inptu`",
            at: (1, 1),
            covers: ".inptu",
            help: "did you mean `.input`? the directives are `.decl`, `.type`, `.input`, \
                   `.output`, `.printsize`, `.number_type`, `.symbol_type`, `.pragma`, `.comp`, \
                   `.init`, `.override`, `.functor`",
        },
    );
}

#[test]
fn every_parse_error_is_reported_in_source_order() {
    let (src, diags) = errors(".decl e(x: number)\ne(1) e(2).\np(x) :- .\ne(3).\nq(x) :- e(x)\n");
    let lines: Vec<usize> = diags.iter().map(|d| src.line_col(d.span.start).0).collect();
    assert_eq!(lines, [2, 3, 5]);
    assert!(diags.iter().all(|d| d.code == "E-parse"));
}

#[test]
fn check_errors_of_different_rules_are_all_reported() {
    let (src, diags) = errors(&with_edge(
        "path(x, y) :- edge(x, y), x = 1.\npath(x, y) :- edge(y, x), edge(y, x, x).\n",
    ));
    let found: Vec<(&str, usize)> = diags
        .iter()
        .map(|d| (d.code, src.line_col(d.span.start).0))
        .collect();
    assert_eq!(found, [("E-type", 3), ("E-arity", 4)]);
}

// ---- warnings and rendering -----------------------------------------------------------------

#[test]
fn singleton_variables_warn_but_compile() {
    let src = Source::new(
        "rules.dl",
        ".decl e(x: number)\n.decl p(x: number)\np(x) :- e(x), e(y), e(_z).\n",
    );
    let program = Program::compile(&src).unwrap();
    let warnings = program.warnings();
    assert_eq!(warnings.len(), 1);
    let w = &warnings[0];
    assert_eq!(w.severity, Severity::Warning);
    assert!(!w.is_error());
    assert_eq!(w.code, "W-singleton");
    assert_eq!(w.message, "variable `y` occurs only once");
    assert_eq!(src.line_col(w.span.start), (3, 17));
    assert_eq!(
        w.help.as_deref(),
        Some("replace `y` with `_` if any value will do")
    );
    assert_eq!(
        w.render(&src),
        "\
warning[W-singleton]: variable `y` occurs only once
 --> rules.dl:3:17
  |
3 | p(x) :- e(x), e(y), e(_z).
  |                 ^
  = help: replace `y` with `_` if any value will do
"
    );
}

/// An expression nested deeper than the parser allows is an error, not a crash: parentheses,
/// prefix operators, a long chain of one operator and bracketed bodies all count. At the limit
/// a program still compiles on a thread with a 2 MiB stack (a tokio worker's), every stage's
/// recursion included (found reviewing issue 40's operators: a deep program overflowed the
/// stack and aborted the process).
#[test]
fn an_expression_nested_too_deeply_is_an_error_not_a_stack_overflow() {
    use tollgate_engine::parse::MAX_NESTING;
    let compile = |body: String| {
        let text =
            format!(".decl a(x: number)\n.decl b(x: number)\nb(1).\na(y) :- b(x), y = {body}.\n");
        std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(move || {
                let src = Source::new("deep.dl", &text);
                Program::compile(&src).map(|_| ()).map_err(|d| {
                    d.iter()
                        .map(|d| format!("{}: {}", d.code, d.message))
                        .collect::<Vec<_>>()
                })
            })
            .unwrap()
            .join()
            .unwrap()
    };
    let parens = |n: usize| format!("{}x{}", "(".repeat(n), ")".repeat(n));
    let chain = |n: usize| vec!["x"; n + 1].join(" + ");
    let too_deep = format!("E-parse: the expression nests more than {MAX_NESTING} levels deep");
    // The comparison's right side is one expression: one level, and one per parenthesis.
    assert_eq!(compile(parens(MAX_NESTING - 1)), Ok(()));
    assert_eq!(compile(parens(MAX_NESTING)), Err(vec![too_deep.clone()]));
    assert_eq!(compile(chain(MAX_NESTING - 1)), Ok(()));
    assert_eq!(compile(chain(100_000)), Err(vec![too_deep.clone()]));
    assert_eq!(
        compile(format!("{}x", "bnot ".repeat(100_000))),
        Err(vec![too_deep.clone()])
    );
    assert_eq!(
        compile(format!("{}x", "- ".repeat(100_000))),
        Err(vec![too_deep.clone()])
    );
    assert_eq!(compile(vec!["2"; 100_000].join(" ^ ")), Err(vec![too_deep]));
}

/// Bitwise and logical operators take integers: on a float they are a type error at the
/// atom that holds them (a power of floats is fine).
#[test]
fn bitwise_and_logical_operators_refuse_floats() {
    let src = Source::new(
        "f.dl",
        ".decl f(x: float)\n.decl g(x: float)\ng(x band 1.0) :- f(x).\ng(lnot x) :- f(x).\ng(x ^ 2.0) :- f(x).\n",
    );
    let diags = Program::compile(&src).unwrap_err();
    let got: Vec<(&str, &str, (usize, usize))> = diags
        .iter()
        .map(|d| (d.code, d.message.as_str(), src.line_col(d.span.start)))
        .collect();
    assert_eq!(
        got,
        [
            ("E-type", "`band` where a `float` is expected", (3, 1)),
            ("E-type", "`lnot` where a `float` is expected", (4, 1)),
        ]
    );
    assert_eq!(
        diags[0].help.as_deref(),
        Some("bitwise and logical operators take numbers or unsigneds")
    );
}

/// A conversion of the wrong type is a type error naming it, with the conversions' help.
#[test]
fn a_conversion_of_the_wrong_type_is_a_type_error() {
    let src = Source::new(
        "c.dl",
        ".decl n(x: number)\n.decl f(x: float)\nf(ftoi(x)) :- n(x).\n",
    );
    let diags = Program::compile(&src).unwrap_err();
    assert_eq!(diags[0].code, "E-type", "{diags:?}");
    assert_eq!(
        diags[0].message,
        "`ftoi` gives a `number` but `float` is expected here"
    );
    assert!(
        diags[0]
            .help
            .as_deref()
            .unwrap_or("")
            .contains("`itof`, `itou`"),
        "{diags:?}"
    );
}

/// Soufflé's `.pragma` (`'.pragma' STRING STRING?`): accepted; `fact-dir` and `output-dir` are
/// kept for `rules eval` (which honours them as `-F` and `-D`), every other option is ignored
/// with a warning that says why.
#[test]
fn pragmas_are_kept_and_the_ignored_ones_warn() {
    let src = Source::new(
        "p.dl",
        ".pragma \"fact-dir\" \"in\"\n.pragma \"jobs\" \"8\"\n.pragma \"legacy\"\n\
         .decl e(x: number)\n.output e\ne(1).\n",
    );
    let program = Program::compile(&src).unwrap();
    assert_eq!(
        program.ir().pragmas,
        [("fact-dir", "in"), ("jobs", "8"), ("legacy", "")]
            .map(|(k, v)| (k.to_string(), v.to_string()))
    );
    let warned: Vec<(&str, &str, (usize, usize))> = program
        .warnings()
        .iter()
        .map(|w| (w.code, w.message.as_str(), src.line_col(w.span.start)))
        .collect();
    assert_eq!(
        warned,
        [
            ("W-pragma", "`.pragma \"jobs\"` is ignored", (2, 1)),
            ("W-pragma", "`.pragma \"legacy\"` is ignored", (3, 1)),
        ]
    );
    assert_eq!(
        program.warnings()[0].help.as_deref(),
        Some("evaluation here is deterministic and needs no threads")
    );
}

#[test]
fn rendered_unknown_relation() {
    let (src, diags) = errors(&with_edge("path(x, y) :- edg(x, y).\n"));
    assert_eq!(
        diags[0].render(&src),
        "\
error[E-unknown-relation]: unknown relation `edg`
 --> rules.dl:3:15
  |
3 | path(x, y) :- edg(x, y).
  |               ^^^ not declared
  = help: did you mean `edge`? otherwise declare it with `.decl edg(...)`
"
    );
}

#[test]
fn rendered_type_conflict_with_its_second_location() {
    let (src, diags) =
        errors(".decl e(x: number)\n.decl s(x: symbol)\n.decl r(x: number)\nr(x) :- e(x), s(x).\n");
    assert_eq!(
        diags[0].render(&src),
        "\
error[E-type]: variable `x` is used as `symbol` here and as `number` elsewhere
 --> rules.dl:4:15
  |
4 | r(x) :- e(x), s(x).
  |               ^^^^
 ::: rules.dl:4:9
  |
4 | r(x) :- e(x), s(x).
  |         ^^^^ used as `number` here (line 4)
  = help: a variable has one type; use a second variable or convert with `to_string`/`to_number`
"
    );
}

#[test]
fn located_diagnostics_for_json() {
    let (src, diags) = errors(NEGATION_CYCLE);
    let located = diags[0].located(&src);
    assert_eq!(located.severity, "error");
    assert_eq!(located.code, "E-unstratifiable");
    assert_eq!(located.file, "rules.dl");
    assert_eq!((located.line, located.column), (6, 16));
    assert_eq!((located.end_line, located.end_column), (6, 20));
    let related: Vec<(usize, usize)> = located.related.iter().map(|r| (r.line, r.column)).collect();
    assert_eq!(related, [(6, 1), (8, 1), (10, 1)]);
    let json = serde_json::to_value(&located).unwrap();
    assert_eq!(
        json["related"][2]["message"],
        "rule `r.from-q` of the cycle, line 10"
    );
}
