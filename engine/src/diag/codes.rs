//! Every diagnostic code, once: its id (`E-parse`, `W-singleton`, ...), what it means and what
//! to do about it. [`Diagnostic::error`](super::Diagnostic::error) and
//! [`Diagnostic::warning`](super::Diagnostic::warning) take a [`Code`] from here, so a code
//! cannot be used without an entry, and [`ALL`] lists every one for the documentation.
//!
//! Codes starting `E-` are errors (the input is rejected), `W-` warnings. Codes starting
//! `E-envelope-` concern envelope YAML; the others before them concern a rule pack or Soufflé
//! program, except the last two errors, which concern command-line input files.

/// One diagnostic code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Code {
    /// The code itself, as shown in `error[E-parse]` and in `--json` output.
    pub id: &'static str,
    /// What the diagnostic means: when it is reported (one sentence).
    pub summary: &'static str,
    /// What the user does about it (one or two sentences).
    pub remedy: &'static str,
}

/// Declares each code once, as a `pub const`, and lists them all in [`ALL`], in order.
macro_rules! codes {
    ($($name:ident = $id:literal {
        summary: $summary:literal,
        remedy: $remedy:literal $(,)?
    })*) => {
        $(
            #[doc = concat!("`", $id, "`: ", $summary, "\n\n", $remedy)]
            pub const $name: Code = Code {
                id: $id,
                summary: $summary,
                remedy: $remedy,
            };
        )*

        /// Every code: errors (parsing, preprocessor and components, names, types and binding,
        /// envelopes, command-line input files), then warnings.
        pub const ALL: &[Code] = &[$($name),*];
    };
}

codes! {
    // ----- Errors: parsing -----

    PARSE = "E-parse" {
        summary: "The rule pack or Soufflé program does not follow the grammar: an unexpected character or token, a missing `.` or bracket, an unknown directive or relation qualifier, a keyword used as a relation name, a relation or test used as a value, a built-in functor or test given the wrong number of arguments, a number literal out of 64-bit range, an expression nested too deeply, or a `// @id` comment or `.plan` not directly after its rule.",
        remedy: "Fix the text at the reported position; the help line says what is expected there.",
    }
    UNSUPPORTED = "E-unsupported" {
        summary: "The rule pack or Soufflé program uses a Soufflé feature Tollgate does not implement: subsumption, `choice-domain`, stateful functors, `ord`, `autoinc` or its `$` form, `_` inside a record or branch in a negated atom, an `inline` relation that reaches itself, a disjunction inside an aggregate, the `.limitsize` and `.lattice` directives, or `.include`/`.once` in a rule pack or envelope.",
        remedy: "Rewrite that part without the feature; the help line suggests an equivalent, such as an aggregate, separate attributes or a helper relation.",
    }
    EQREL = "E-eqrel" {
        summary: "A relation of the rule pack or Soufflé program is declared `eqrel` but does not have exactly two attributes.",
        remedy: "Give an equivalence relation two attributes of one type, as in `.decl same(a: T, b: T) eqrel`, or drop `eqrel`.",
    }

    // ----- Errors: preprocessor and components -----

    PREPROCESSOR = "E-preprocessor" {
        summary: "The preprocessor could not process the Soufflé program: an unknown or malformed directive, a `#define` or macro use it cannot read, an `#if` condition it cannot evaluate, an unbalanced `#elif`/`#else`/`#endif` or an unclosed condition, an `#include` it cannot read or that nests or repeats past the limit, output past the size limit, or an `#error` directive reached.",
        remedy: "Fix the directive on the reported line; give an `#include` path relative to the including file (or a folder with `-I`) and guard a file included more than once with `#pragma once`.",
    }
    COMPONENT = "E-component" {
        summary: "A component (`.comp`, `.init`, `.override`) of the rule pack or Soufflé program is misused: an unknown component, a component or instance name declared twice, the wrong number of type parameters, `.override` outside a component or of a relation not inherited or not `overridable`, or components nested or instantiated past the limits (often a component that instantiates or inherits from itself).",
        remedy: "Fix the component reference or declaration the help line points at; a component must not instantiate or inherit from itself, directly or through others.",
    }

    // ----- Errors: names, types and binding -----

    UNKNOWN_RELATION = "E-unknown-relation" {
        summary: "A rule, fact or `.input`/`.output`/`.printsize` directive of the rule pack or Soufflé program names a relation that is not declared.",
        remedy: "Declare it with `.decl name(...)` or fix the name; the help line suggests a declared relation with a close name.",
    }
    DUPLICATE_DECL = "E-duplicate-decl" {
        summary: "The rule pack or Soufflé program declares the same relation twice.",
        remedy: "Remove one of the declarations; the help line gives the line of the first.",
    }
    ARITY = "E-arity" {
        summary: "An atom, a call of a functor or a test in the rule pack or Soufflé program has a different number of arguments from its declaration, or a relation is declared with more columns than Tollgate supports.",
        remedy: "Give one argument per declared column or parameter (the help line shows the declaration), or split a too-wide relation into narrower relations joined by a key.",
    }
    TYPE = "E-type" {
        summary: "Types in the rule pack or Soufflé program do not agree: a value or variable of one type where another is expected, a variable used as two types, an operator, aggregate, `range` or `as` applied to a type it does not take, or a `.type` declaration that is unknown, circular, mixes primitive types in a union or redeclares a built-in type.",
        remedy: "Use a value of the expected type or convert it (`to_string`, `to_number`, `to_float`; symbols in double quotes), or fix the `.type` declaration.",
    }
    FUNCTOR = "E-functor" {
        summary: "A user-defined functor (`@name`) of the rule pack or Soufflé program is called without a `.functor` declaration, is declared twice, or has no implementation registered by the program's host.",
        remedy: "Declare each functor once with `.functor name(x: T): T`; its implementation is Rust code the host registers with `Functors::register` (`tollgate rules` registers none).",
    }
    LITERAL = "E-literal" {
        summary: "A number literal in a rule of the rule pack or Soufflé program, or in a fact given on its own, does not fit Tollgate's 32-bit `number` or `unsigned`.",
        remedy: "Use a number between -2147483648 and 2147483647, or an unsigned between 0 and 4294967295.",
    }
    FACT = "E-fact" {
        summary: "A fact of the rule pack or Soufflé program, or a fact given on its own, holds something other than a constant of its column's type: a variable, a functor call, a value of another type or a number out of range.",
        remedy: "Write only literal values in a fact, matching each column's declared type: strings in double quotes, numbers as digits.",
    }
    PATTERN = "E-pattern" {
        summary: "A `match` or `glob` test in the rule pack or Soufflé program has a constant pattern that is not a valid regular expression or glob.",
        remedy: "Fix the pattern: `match` takes a Rust `regex` that must match the whole string, `glob` takes `*`, `**`, `?`, `[abc]` and `{a,b}`.",
    }
    RANGE = "E-range" {
        summary: "`range(...)` in the rule pack or Soufflé program is used as a value inside an expression or atom, where it would have to give several values at once.",
        remedy: "Bind it to a variable as a body literal, `x = range(from, to)`, and use `x`.",
    }
    UNBOUND = "E-unbound" {
        summary: "A rule of the rule pack or Soufflé program uses a variable that no positive body atom binds, or has `_` in its head, so the values of its head cannot be enumerated.",
        remedy: "Add a body atom that binds the variable or give it a value with `x = ...`; in a head, write a bound variable or a constant instead of `_`.",
    }
    RULE_ID = "E-rule-id" {
        summary: "A `// @id` rule id in the rule pack or Soufflé program names two rules, or is put on a fact.",
        remedy: "Give each rule its own id, and remove ids from facts (facts are named by their origin).",
    }
    UNSTRATIFIABLE = "E-unstratifiable" {
        summary: "A relation of the rule pack or Soufflé program depends on itself through negation or an aggregate, inside a recursive cycle, so there is no order in which to compute it.",
        remedy: "Move the negation or aggregate out of the cycle, or split the relation so it is negated or aggregated only once complete; the help line lists the rules of the cycle.",
    }

    // ----- Errors: envelopes -----

    ENVELOPE_SYNTAX = "E-envelope-syntax" {
        summary: "An envelope file is not valid YAML.",
        remedy: "Fix the YAML at the reported position: indent nested keys consistently, put a space after `:` and `-`, and close quotes and brackets.",
    }
    ENVELOPE_TYPE = "E-envelope-type" {
        summary: "A value in envelope YAML is not of the kind its key takes (text, an integer, true or false, a list or a mapping), or the YAML uses what envelopes do not accept: a list or mapping as a key, an empty extension key, a tag or an alias.",
        remedy: "Write the value as the help line says (quote text, unquote numbers and booleans), in plain YAML with keys as plain words.",
    }
    ENVELOPE_UNKNOWN_KEY = "E-envelope-unknown-key" {
        summary: "A mapping in envelope YAML has a key that its part of the envelope format does not define, often a misspelling.",
        remedy: "Correct or remove the key; the help line lists the keys accepted there and suggests the closest.",
    }
    ENVELOPE_MISSING_KEY = "E-envelope-missing-key" {
        summary: "A mapping in envelope YAML lacks a key it requires, such as an envelope's `id` or a rule's `effect` or `tools`.",
        remedy: "Add the key; the help line gives an example.",
    }
    ENVELOPE_EMPTY = "E-envelope-empty" {
        summary: "An envelope file holds no envelope, or a value in envelope YAML that must not be empty (a list of patterns or approvers, or an entry of a list of ids) is empty.",
        remedy: "Write an envelope in the file (`id`, `version`, then its rules), or fill in the empty value or remove its key.",
    }
    ENVELOPE_RANGE = "E-envelope-range" {
        summary: "An integer in envelope YAML (`version`, a rate limit's `count` or `window_seconds`, `ttl_seconds`) is below its minimum or above 2147483647.",
        remedy: "Give a whole number within the range the message states.",
    }
    ENVELOPE_BAD_ID = "E-envelope-bad-id" {
        summary: "An envelope id, rule id or `extends` entry in envelope YAML is empty or contains whitespace or `/`, or an approver id is empty or contains a comma.",
        remedy: "Write ids without spaces or `/` (it joins envelope and rule ids, as in `coding-agent/read-only`), and approver ids without commas.",
    }
    ENVELOPE_UNKNOWN_EFFECT = "E-envelope-unknown-effect" {
        summary: "A tool, data, model or memory rule in envelope YAML has an `effect` that rules of its kind do not take.",
        remedy: "Use one of the effects the help line lists; it suggests the closest.",
    }
    ENVELOPE_UNKNOWN_VALUE = "E-envelope-unknown-value" {
        summary: "A rate limit's `per` or a sensitivity level (`level`, `max_sensitivity`) in envelope YAML is not one of the values it takes.",
        remedy: "Use `run`, `agent` or `task` for `per`, and `public`, `internal`, `confidential` or `secret` for a level; the help line suggests the closest.",
    }
    ENVELOPE_GLOB = "E-envelope-glob" {
        summary: "A glob pattern in envelope YAML (of `tools` or of an argument) is invalid, or a `{text: ...}` argument pattern cannot be compiled.",
        remedy: "Fix the pattern: `*` matches within a `/` segment, `**` across segments, `?` one character, `[abc]` a class and `{a,b}` alternatives; escape a literal character with `\\`.",
    }
    ENVELOPE_GLOB_COMPLEX = "E-envelope-glob-complex" {
        summary: "A glob pattern in envelope YAML is longer than 1024 bytes or has more than 32 wildcards, which would slow every decision.",
        remedy: "Split it into several simpler patterns, in several rules if need be.",
    }
    ENVELOPE_BAD_POINTER = "E-envelope-bad-pointer" {
        summary: "A key of a rule's `args` in envelope YAML is not a JSON pointer.",
        remedy: "Start the key with `/`: `/opts/force` names a nested key, `/files/0` a list item, and `~1` and `~0` stand for `/` and `~` inside a key.",
    }
    ENVELOPE_ARG_KIND = "E-envelope-arg-kind" {
        summary: "An argument pattern written as a mapping in envelope YAML does not have exactly one key, or its key is not `text`, `path` or `url`.",
        remedy: "Write `{text: ...}`, `{path: ...}` or `{url: ...}` with one pattern.",
    }
    ENVELOPE_URL_PATTERN = "E-envelope-url-pattern" {
        summary: "A URL argument pattern in envelope YAML (a `{url: ...}` pattern, or a plain pattern starting with a scheme) cannot be matched by its parsed scheme, host, port and path.",
        remedy: "Write a scheme, a host and a path, without user, query or fragment, as in `https://*.example.com/**`.",
    }
    ENVELOPE_CLOSED_DENIAL = "E-envelope-closed-denial" {
        summary: "A `deny` or `rate_limit` tool rule in envelope YAML sets `only_named_args: true`, which would let a call escape the rule by carrying one more argument.",
        remedy: "Remove `only_named_args` from the rule; it narrows only `allow` and `require_approval` rules.",
    }
    ENVELOPE_MISSING_LIMIT = "E-envelope-missing-limit" {
        summary: "A tool rule in envelope YAML has `effect: rate_limit` but no `limit`.",
        remedy: "Add a `limit`, as in `limit: {count: 10, window_seconds: 60, per: run}`.",
    }
    ENVELOPE_UNUSED_LIMIT = "E-envelope-unused-limit" {
        summary: "A tool rule in envelope YAML has a `limit` but an effect other than `rate_limit`, so the limit would be ignored.",
        remedy: "Remove `limit`, or set `effect: rate_limit`.",
    }
    ENVELOPE_DUPLICATE_RULE = "E-envelope-duplicate-rule" {
        summary: "Two rules of one envelope in envelope YAML have the same rule id.",
        remedy: "Give each rule of an envelope its own `id`, since decisions and receipts name rules as `ENVELOPE/RULE`.",
    }
    ENVELOPE_DUPLICATE_ID = "E-envelope-duplicate-id" {
        summary: "Two envelopes loaded together from envelope YAML have the same id.",
        remedy: "Give each envelope its own id; to change an envelope, edit it and raise its `version`.",
    }
    ENVELOPE_UNKNOWN_PARENT = "E-envelope-unknown-parent" {
        summary: "An envelope's `extends` in envelope YAML names an id that no loaded envelope has.",
        remedy: "Load the file that defines the parent too, correct the id, or remove it from `extends`.",
    }
    ENVELOPE_CYCLE = "E-envelope-cycle" {
        summary: "The `extends` entries of envelopes in envelope YAML form a cycle: an envelope inherits from itself, directly or through others.",
        remedy: "Remove one `extends` entry of the cycle the help line shows.",
    }
    ENVELOPE_INVALID = "E-envelope-invalid" {
        summary: "An envelope in envelope YAML passed every check but could not be read into the envelope format, which is a bug in Tollgate rather than in the envelope.",
        remedy: "Report it, with the envelope that causes it.",
    }

    // ----- Errors: command-line input files -----

    REQUEST = "E-request" {
        summary: "A decision request file given to `tollgate policy` is not valid JSON for a request, or lacks the payload its `kind` needs.",
        remedy: "Write the request as the help line describes (`kind`, `subject` and the payload of its kind); fixtures/envelopes/requests/ holds examples.",
    }
    ITEMS = "E-items" {
        summary: "The items file given to `tollgate compile` is not valid JSON for a list of context items.",
        remedy: "Write `{\"items\": [...], \"settings\": {...}, \"subject\": {...}}` or a bare array of items, as in fixtures/compile/items.json.",
    }

    // ----- Warnings -----

    SINGLETON = "W-singleton" {
        summary: "A variable in a rule of the rule pack or Soufflé program occurs only once, which is often a misspelling of another variable.",
        remedy: "Replace it with `_` if any value will do, or start its name with `_`; otherwise correct the misspelt name.",
    }
    PRAGMA = "W-pragma" {
        summary: "A `.pragma` in the rule pack or Soufflé program sets a Soufflé option that Tollgate ignores (only `fact-dir` and `output-dir` are honoured).",
        remedy: "Remove the pragma if it is not needed for Soufflé; it changes nothing Tollgate derives.",
    }
    PREPROCESSOR_WARNING = "W-preprocessor" {
        summary: "The preprocessor reached a `#warning` directive in the Soufflé program.",
        remedy: "Read the directive's message; it is the program's own, and the program still runs.",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn ids_are_unique() {
        let mut seen = HashSet::new();
        for c in ALL {
            assert!(seen.insert(c.id), "`{}` is listed twice", c.id);
        }
    }

    #[test]
    fn ids_start_with_e_or_w() {
        for c in ALL {
            assert!(
                c.id.starts_with("E-") || c.id.starts_with("W-"),
                "`{}` is neither an error nor a warning",
                c.id
            );
        }
    }

    #[test]
    fn errors_come_before_warnings() {
        let first_warning = ALL
            .iter()
            .position(|c| c.id.starts_with("W-"))
            .unwrap_or(ALL.len());
        assert!(ALL[first_warning..].iter().all(|c| c.id.starts_with("W-")));
    }

    #[test]
    fn summaries_and_remedies_are_sentences() {
        for c in ALL {
            for (what, text) in [("summary", c.summary), ("remedy", c.remedy)] {
                assert!(!text.trim().is_empty(), "`{}` has an empty {what}", c.id);
                assert!(
                    text.ends_with('.'),
                    "the {what} of `{}` ends without a full stop",
                    c.id
                );
            }
        }
    }
}
