use std::collections::HashMap;

use proptest::prelude::*;

use super::{Includes, NoIncludes, preprocess};
use crate::diag::Source;

/// Files held in memory, named by path relative to the including file's folder.
struct Files(HashMap<&'static str, &'static str>);

impl Includes for Files {
    fn read(&self, from: &str, target: &str, _angled: bool) -> Result<(String, String), String> {
        let dir = from.rsplit_once('/').map_or("", |(d, _)| d);
        let name = if dir.is_empty() {
            target.to_string()
        } else {
            format!("{dir}/{target}")
        };
        self.0
            .get(name.as_str())
            .map(|t| (name.clone(), (*t).to_string()))
            .ok_or_else(|| format!("cannot find `{target}`"))
    }
}

fn run(text: &str) -> String {
    run_with(text, &NoIncludes)
}

fn run_with(text: &str, includes: &dyn Includes) -> String {
    match preprocess(&Source::new("main.dl", text), includes) {
        Ok(p) => p.source.text,
        Err(e) => panic!("{}", e[0].diagnostic.render(&e[0].source)),
    }
}

fn first_error(text: &str, includes: &dyn Includes) -> (String, String, (usize, usize)) {
    let errors = preprocess(&Source::new("main.dl", text), includes).unwrap_err();
    let e = &errors[0];
    (
        e.diagnostic.message.clone(),
        e.source.name.clone(),
        e.source.line_col(e.diagnostic.span.start),
    )
}

#[test]
fn directives_become_empty_lines_and_macros_are_replaced_outside_strings_and_comments() {
    let out = run("#define N 3\n#define P(a, b) p(a, b)\nP(N, \"N\"). // N\n/* N */ N\n");
    assert_eq!(out, "\n\np(3, \"N\"). // N\n/* N */ 3\n");
    // A macro is not replaced inside its own replacement; nested calls are.
    assert_eq!(run("#define A A + 1\nA\n"), "\nA + 1\n");
    assert_eq!(run("#define F(x) (x * 2)\nF(F(1))\n"), "\n((1 * 2) * 2)\n");
    // A function-like macro's name without `(` stays.
    assert_eq!(run("#define F(x) x\nF + 1\n"), "\nF + 1\n");
    // `#undef`, and a `#` line inside a block comment is not a directive.
    assert_eq!(
        run("#define X 1\n#undef X\nX\n/*\n#define X 2\n*/X\n"),
        "\n\nX\n/*\n#define X 2\n*/X\n"
    );
}

#[test]
fn conditions_choose_one_branch_and_nest() {
    let text = "#define A 2\n#if A > 1 && !defined(B)\nyes\n#if 0\nno\n#else\ninner\n#endif\n#elif 1\nno\n#else\nno\n#endif\n#ifdef B\nno\n#endif\n#ifndef B\nyes2\n#endif\n";
    let out = run(text);
    let kept: Vec<&str> = out.lines().filter(|l| !l.is_empty()).collect();
    assert_eq!(kept, ["yes", "inner", "yes2"]);
    assert_eq!(out.lines().count(), text.lines().count());
}

#[test]
fn included_text_keeps_the_file_and_line_it_came_from() {
    let files = Files(HashMap::from([
        (
            "lib/a.dl",
            "#pragma once\n.decl a(x: number)\n#include \"b.dl\"\na(1).\n",
        ),
        ("lib/b.dl", "b(2).\n"),
    ]));
    let src = preprocess(
        &Source::new(
            "main.dl",
            "first.\n#include \"lib/a.dl\"\n#include \"lib/a.dl\"\nlast.\n",
        ),
        &files,
    )
    .unwrap()
    .source;
    let at = |needle: &str| {
        let offset = u32::try_from(src.text.find(needle).unwrap()).unwrap();
        (src.name_at(offset).to_string(), src.line_col(offset))
    };
    assert_eq!(at("first."), ("main.dl".into(), (1, 1)));
    assert_eq!(at(".decl a"), ("lib/a.dl".into(), (2, 1)));
    assert_eq!(at("b(2)"), ("lib/b.dl".into(), (1, 1)));
    assert_eq!(at("a(1)"), ("lib/a.dl".into(), (4, 1)));
    assert_eq!(at("last."), ("main.dl".into(), (4, 1)));
    assert_eq!(src.text.matches(".decl a").count(), 1, "`#pragma once`");
    assert!(src.is_joined());
}

/// Soufflé's own `.include "file"` and `.once` (its scanner's, read after the preprocessor)
/// work as `#include` and `#pragma once`, with the same spans; `<file>` is `#include`'s alone.
#[test]
fn souffle_include_and_once_read_as_the_preprocessor_lines() {
    let files = Files(HashMap::from([
        ("lib/a.dl", ".once\n.decl a(x: number)\na(1).\n"),
        ("lib/b.dl", "b(2).\n"),
    ]));
    let text = "first.\n.include \"lib/a.dl\"\n  .include \"lib/a.dl\" // again\n.include \"lib/b.dl\"\nlast.\n";
    let src = preprocess(&Source::new("main.dl", text), &files)
        .unwrap()
        .source;
    let at = |needle: &str| {
        let offset = u32::try_from(src.text.find(needle).unwrap()).unwrap();
        (src.name_at(offset).to_string(), src.line_col(offset))
    };
    assert_eq!(at(".decl a"), ("lib/a.dl".into(), (2, 1)));
    assert_eq!(at("b(2)"), ("lib/b.dl".into(), (1, 1)));
    assert_eq!(at("last."), ("main.dl".into(), (5, 1)));
    assert_eq!(src.text.matches(".decl a").count(), 1, "`.once`");
    assert!(!src.text.contains(".include"));
    let (msg, file, at) = first_error(".include <lib/b.dl>\n", &files);
    assert_eq!(
        msg,
        "expected `\"file\"` after `.include`, found `<lib/b.dl>`"
    );
    assert_eq!((file.as_str(), at), ("main.dl", (1, 1)));
    // Only the words themselves: `.includes` and `.onces` are left for the parser to refuse.
    assert_eq!(
        run(".includes \"x\"\n.onces\n"),
        ".includes \"x\"\n.onces\n"
    );
}

#[test]
fn mistakes_are_named_in_the_file_and_line_they_are_in() {
    let files = Files(HashMap::from([
        ("inc.dl", "ok.\n#if\n#endif\n"),
        ("self.dl", "#include \"self.dl\"\n#include \"self.dl\"\n"),
    ]));
    let cases: [(&str, &str, &str, (usize, usize)); 9] = [
        (
            "#if 1\nx.\n",
            "this condition is never closed",
            "main.dl",
            (1, 1),
        ),
        ("#endif\n", "`#endif` without `#if`", "main.dl", (1, 1)),
        (
            "#if 1\n#else\n#else\n#endif\n",
            "`#else` after `#else`",
            "main.dl",
            (3, 1),
        ),
        (
            "x.\n#include \"inc.dl\"\n",
            "`#if` needs a condition",
            "inc.dl",
            (2, 1),
        ),
        (
            "#include \"nope.dl\"\n",
            "cannot find `nope.dl`",
            "main.dl",
            (1, 1),
        ),
        (
            "#include nope\n",
            "expected `\"file\"` or `<file>` after `#include`, found `nope`",
            "main.dl",
            (1, 1),
        ),
        (
            "#include \"self.dl\"\n",
            "`#include`s nest more than 64 levels deep",
            "self.dl",
            (1, 1),
        ),
        (
            "#define F(a, b) a\nF(1)\n",
            "macro `F` takes 2 arguments, given 1",
            "main.dl",
            (2, 1),
        ),
        ("#error stop here\n", "#error stop here", "main.dl", (1, 1)),
    ];
    for (text, message, file, at) in cases {
        let (m, f, a) = first_error(text, &files);
        assert_eq!((m.as_str(), f.as_str(), a), (message, file, at), "{text}");
    }
    let (m, _, _) = first_error("#define P(x) #x\n", &NoIncludes);
    assert_eq!(m, "`#` and `##` in the body of macro `P` are not supported");
    let (m, _, _) = first_error("#include \"a.dl\"\n", &NoIncludes);
    assert!(m.starts_with("cannot include `a.dl`"), "{m}");
}

#[test]
fn doubling_macros_stop_at_a_limit() {
    let mut text = String::from("#define M0 x\n");
    for i in 1..=20 {
        text.push_str(&format!("#define M{i} M{} M{}\n", i - 1, i - 1));
    }
    text.push_str("M20\n");
    let (m, _, _) = first_error(&text, &NoIncludes);
    assert_eq!(m, "macros replaced more than 10000 times on one line");
}

proptest! {
    /// Any mix of directive lines, macro uses and text: never a panic, errors point into the
    /// text, and without `#include` every line of the input is a line of the output.
    #[test]
    fn any_lines_preprocess_or_fail_with_spans_and_keep_the_line_count(
        lines in prop::collection::vec(prop::sample::select(vec![
            "#define A 1", "#define F(x) f(x, A)", "#undef A", "#if A", "#if defined(F) || 0",
            "#ifdef A", "#ifndef F", "#elif 1", "#else", "#endif", "#pragma once", "#bogus",
            "F(A)", "F(F(2)", "A + \"A\"", "/* open", "close */ A", "// A", "#define G(", "plain.",
        ]), 0..24)
    ) {
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        match preprocess(&Source::new("main.dl", text.as_str()), &NoIncludes) {
            Ok(p) => prop_assert_eq!(p.source.text.lines().count(), lines.len()),
            Err(errors) => {
                for e in errors {
                    prop_assert!(e.diagnostic.span.end as usize <= text.len());
                }
            }
        }
    }
}
