//! The built-in rule packs: the vocabulary plus the scope, sensitivity, envelopes, memory and
//! handoff packs, embedded in the binary and read as one program.
//!
//! The `.dl` files live in `rules/packs/`; each begins with a comment saying what it derives
//! and, for `envelopes.dl`, how envelopes combine.

use tollgate_engine::Program;
use tollgate_engine::diag::{Diagnostic, Source};

/// One `.dl` file of the built-in program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pack {
    /// Short name (`envelopes`).
    pub name: &'static str,
    /// The file's path in the repository (`rules/packs/envelopes.dl`), used in diagnostics
    /// and proofs.
    pub file: &'static str,
    /// The Datalog text.
    pub source: &'static str,
}

impl Pack {
    /// The pack as a named engine source.
    pub fn to_source(&self) -> Source {
        Source::new(self.file, self.source)
    }
}

/// The vocabulary: the relation declarations every pack (built-in or user-written) reads.
pub const VOCABULARY: Pack = Pack {
    name: "vocabulary",
    file: "rules/packs/vocabulary.dl",
    source: include_str!("../packs/vocabulary.dl"),
};

const PACKS: [Pack; 5] = [
    Pack {
        name: "scope",
        file: "rules/packs/scope.dl",
        source: include_str!("../packs/scope.dl"),
    },
    Pack {
        name: "sensitivity",
        file: "rules/packs/sensitivity.dl",
        source: include_str!("../packs/sensitivity.dl"),
    },
    Pack {
        name: "envelopes",
        file: "rules/packs/envelopes.dl",
        source: include_str!("../packs/envelopes.dl"),
    },
    Pack {
        name: "memory",
        file: "rules/packs/memory.dl",
        source: include_str!("../packs/memory.dl"),
    },
    Pack {
        name: "handoff",
        file: "rules/packs/handoff.dl",
        source: include_str!("../packs/handoff.dl"),
    },
];

/// The relations that hold the facts of one decision (see the vocabulary). Everything else is
/// the static part, materialised once per envelope set; these go to `Model::query`.
pub const REQUEST_RELATIONS: &[&str] = &[
    "now",
    "tool_request",
    "tool_arg",
    "tool_arg_in",
    "tool_arg_unsafe",
    "tool_arg_url",
    "tool_usage",
    "context_request",
    "context_label",
    "memory_request",
    "model_request",
    "handoff",
    "handoff_goal",
    "handoff_evidence",
    "handoff_output",
    "handoff_template",
    "handoff_field",
    "handoff_parties",
    "delegation",
    "handoff_delivery",
    "handoff_action",
    "contract_requires",
    "contract_constraint",
];

/// The built-in packs in load order (the vocabulary not included: see [`VOCABULARY`]).
pub fn builtin_packs() -> &'static [Pack] {
    &PACKS
}

/// The vocabulary and every built-in pack joined into one source; diagnostics and proofs name
/// `rules/packs/NAME.dl` and the line within it.
pub fn builtin_source() -> Source {
    let files: Vec<Source> = std::iter::once(VOCABULARY)
        .chain(PACKS)
        .map(|p| p.to_source())
        .collect();
    Source::join(&files)
}

/// The vocabulary joined with other `.dl` sources (a user pack), for programs that replace the
/// built-in packs.
pub fn with_vocabulary(files: &[Source]) -> Source {
    let mut all = vec![VOCABULARY.to_source()];
    all.extend(files.iter().cloned());
    Source::join(&all)
}

/// The engine's proof format: part of [`program_hash`], so a receipt rendered on read is only
/// ever rendered by an engine that writes proofs and why-nots exactly as the one that decided.
/// Bump it with any change to how a proof or a why-not is derived or written (the
/// `dump_decisions` hash of AgentGW-Bench moves when that happens).
pub const PROOF_FORMAT: u32 = 1;

/// The built-in program's files, `(path, text)`, in load order: what the store keeps under
/// [`program_hash`] so a receipt names a program it can be rendered under after an upgrade.
pub fn builtin_files() -> Vec<(&'static str, &'static str)> {
    std::iter::once(VOCABULARY)
        .chain(PACKS)
        .map(|p| (p.file, p.source))
        .collect()
}

/// The hash of a program's files and the proof format (blake3 over their JSON).
pub fn program_hash_of<N: AsRef<str>, T: AsRef<str>>(files: &[(N, T)]) -> String {
    let files: Vec<(&str, &str)> = files
        .iter()
        .map(|(n, t)| (n.as_ref(), t.as_ref()))
        .collect();
    let doc = serde_json::json!({"files": files, "proof_format": PROOF_FORMAT});
    blake3::hash(crate::canonical::canonical_json(&doc).as_bytes())
        .to_hex()
        .to_string()
}

/// The built-in program's hash: what a receipt rendered on read names.
pub fn program_hash() -> &'static str {
    static HASH: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    HASH.get_or_init(|| program_hash_of(&builtin_files()))
}

/// Compiles a program from files as [`builtin_files`] lists them (a stored older program).
pub fn program_from_files<N: AsRef<str>, T: AsRef<str>>(
    files: &[(N, T)],
) -> Result<Program, Vec<Diagnostic>> {
    let sources: Vec<Source> = files
        .iter()
        .map(|(n, t)| Source::new(n.as_ref(), t.as_ref()))
        .collect();
    Program::compile(&Source::join(&sources))
}

/// Compiles the built-in program. It compiles without errors or warnings (a unit test checks);
/// the `Err` arm exists because the engine's API has one.
pub fn builtin_program() -> Result<Program, Vec<Diagnostic>> {
    Program::compile(&builtin_source())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[test]
    fn the_builtin_packs_compile_without_errors_or_warnings() {
        let source = builtin_source();
        let program = match builtin_program() {
            Ok(p) => p,
            Err(diags) => panic!(
                "{}",
                diags.iter().map(|d| d.render(&source)).collect::<String>()
            ),
        };
        let warnings: String = program
            .warnings()
            .iter()
            .map(|d| d.render(&source))
            .collect();
        assert!(warnings.is_empty(), "{warnings}");
    }

    #[test]
    fn the_program_hash_names_the_files_and_the_proof_format() {
        let files = builtin_files();
        assert_eq!(program_hash(), program_hash_of(&files));
        let mut changed = files.clone();
        changed[1].1 = "// one more comment\n";
        assert_ne!(program_hash(), program_hash_of(&changed));
        let renamed: Vec<(String, &str)> = files
            .iter()
            .map(|(n, t)| (format!("{n}.old"), *t))
            .collect();
        assert_ne!(program_hash(), program_hash_of(&renamed));
        // The files compile to the program, source for source.
        let program = program_from_files(&files).expect("the built-in files compile");
        assert_eq!(program.source().text, builtin_source().text);
    }

    #[test]
    fn every_rule_of_the_packs_has_an_id() {
        // A rule without `// @id` gets a derived id `head:hash`; the packs name all of theirs.
        let program = builtin_program().unwrap();
        for rule in &program.ir().rules {
            assert!(
                !rule.id.contains(':'),
                "rule `{}` (line {}) has no `// @id`",
                rule.id,
                rule.line
            );
        }
    }

    #[test]
    fn every_pack_file_is_named_and_request_relations_are_declared() {
        let names: Vec<&str> = builtin_packs().iter().map(|p| p.name).collect();
        assert_eq!(
            names,
            ["scope", "sensitivity", "envelopes", "memory", "handoff"]
        );
        for p in builtin_packs() {
            assert_eq!(p.file, format!("rules/packs/{}.dl", p.name));
        }
        let program = builtin_program().unwrap();
        for r in REQUEST_RELATIONS {
            let rel = program.ir().relation(r).expect(r);
            assert!(program.ir().relations[rel].input.is_some(), "{r}");
        }
    }

    #[test]
    fn a_tool_model_or_context_request_reads_the_model_only_through_indexes() {
        use tollgate_engine::{Fact, FactSet, Limits};
        let mut fixed = FactSet::new();
        let mut add = |text: &str| fixed.push(Fact::parse(text).unwrap(), "test".into());
        for i in 0..200 {
            add(&format!(
                r#"run("r{i}", "agent{i}", "T-{i}", "org:acme/repo:r{i}")"#
            ));
            add(&format!(
                r#"scope_parent("org:acme/repo:r{i}", "org:acme")"#
            ));
            add(&format!(
                r#"envelope_attached("e{i}", "agent", "agent{i}")"#
            ));
            add(&format!(r#"envelope_extends("e{i}", "base")"#));
            add(&format!(r#"tool_rule("e{i}", "e{i}/fs", "allow", "fs.*")"#));
            add(&format!(
                r#"model_rule("e{i}", "e{i}/m", "allow", "*", "*", "*")"#
            ));
            add(&format!(
                r#"memory("m{i}", "fact", "org:acme", "public", "approved", 0, 0)"#
            ));
        }
        add(r#"tool_rule("base", "base/all", "allow", "**")"#);
        add(r#"data_rule("base", "base/see", "see", "org:acme/**", "internal")"#);
        add(r#"clearance("r7", "internal")"#);
        let model = builtin_program()
            .unwrap()
            .materialise(&fixed, &Limits::default())
            .unwrap();
        for request in [
            r#"tool_request("q", "r7", "fs.read")"#,
            r#"model_request("q", "r7", "openai", "gpt-4o", "")"#,
            r#"context_request("q", "r7", "a.md", "file", "org:acme/repo:r7", "internal")"#,
        ] {
            let mut facts = FactSet::new();
            facts.push(Fact::parse(request).unwrap(), "request".into());
            let answer = model.query(&facts, &Limits::default()).unwrap();
            assert_eq!(answer.stats().model_tuples_scanned, 0, "{request}");
            let decisions = answer.outputs();
            let effects: std::collections::BTreeSet<_> = decisions
                .iter()
                .filter(|(name, _)| name.ends_with("_decision"))
                .flat_map(|(_, rows)| rows.iter().map(|r| r[1].to_string()))
                .collect();
            let expected = if request.starts_with("context") {
                "see"
            } else {
                "allow"
            };
            assert_eq!(effects, [expected.to_string()].into(), "{request}");
        }
    }

    #[test]
    fn diagnostics_name_the_pack_file() {
        let source = builtin_source();
        let at = source.text.find("// @id tool.deny-overrides").unwrap();
        assert_eq!(source.name_at(at as u32), "rules/packs/envelopes.dl");
    }
}
