//! The command line describing itself (issue 41): the committed CLI reference is what the
//! binary generates, the bash completion script completes commands and flags in a real bash,
//! every shell's script names every command, and the man pages render without warnings.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::process::Command;

use support::{root, stderr, stdout, tollgate};

/// The top-level commands, as `tollgate --help` lists them.
fn commands() -> Vec<String> {
    let help = stdout(&tollgate(&["--help"]));
    help.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .filter(|c| c != "help")
        .collect()
}

/// `tollgate reference KIND`, checked against the committed `docs/reference/KIND.md`.
fn current_reference(kind: &str) -> String {
    let o = tollgate(&["reference", kind]);
    assert!(o.status.success(), "{}", stderr(&o));
    let generated = stdout(&o);
    let path = root().join(format!("docs/reference/{kind}.md"));
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        generated == committed,
        "{} is stale: regenerate it with `cargo run -p tollgate -- reference {kind} > docs/reference/{kind}.md`",
        path.display()
    );
    generated
}

#[test]
fn the_committed_http_reference_is_what_the_binary_generates() {
    let generated = current_reference("http");
    for operation in [
        "### `POST /v1/runs/{run_id}/tool-calls`",
        "### `POST /v1/chat/completions`",
        "### `GET /health`",
    ] {
        assert!(generated.contains(operation), "no {operation}");
    }
    assert!(generated.contains("Body: `ToolCallRequest` (`application/json`)."));
}

#[test]
fn the_committed_vocabulary_reference_is_what_the_binary_generates() {
    let generated = current_reference("vocabulary");
    // Every declared relation of every built-in file is listed, inputs and requests marked.
    for (file, text) in [
        ("vocabulary", include_str!("../rules/packs/vocabulary.dl")),
        ("envelopes", include_str!("../rules/packs/envelopes.dl")),
        ("memory", include_str!("../rules/packs/memory.dl")),
        ("handoff", include_str!("../rules/packs/handoff.dl")),
    ] {
        for decl in text.lines().filter_map(|l| l.strip_prefix(".decl ")) {
            assert!(
                generated.contains(&format!("- `{}`", decl.trim())),
                "{file}: {decl} is not listed"
            );
        }
    }
    assert!(
        generated.contains("- `run(run: Id, agent: Id, task: Id, scope: Scope)` (input): A run of")
    );
    assert!(generated.contains("- `tool_request("), "{generated}");
    assert!(generated.contains("(input, request)") || generated.contains("(request)"));
}

#[test]
fn the_committed_cli_reference_is_what_the_binary_generates() {
    let generated = current_reference("cli");
    // Every command and subcommand has its section, and options their flags.
    for command in commands() {
        assert!(
            generated.contains(&format!("## `tollgate {command}`")),
            "no section for {command}"
        );
    }
    assert!(generated.contains("## `tollgate rules eval`"));
    assert!(generated.contains("`--max-facts <MAX_FACTS>`"));
}

/// Completes `words` (the last one being completed) with the generated bash script.
fn bash_complete(words: &[&str]) -> Vec<String> {
    let script = stdout(&tollgate(&["completions", "bash"]));
    let dir = std::env::temp_dir().join(format!("tollgate-completions-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("tollgate.bash");
    std::fs::write(&file, script).unwrap();
    let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
    let cur = words.last().unwrap();
    let prev = words[words.len() - 2];
    let program = format!(
        "source '{}'; COMP_WORDS=({}); COMP_CWORD={}; _tollgate tollgate '{cur}' '{prev}'; \
         printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        file.display(),
        quoted.join(" "),
        words.len() - 1
    );
    let o = Command::new("bash")
        .args(["-c", &program])
        .output()
        .unwrap();
    std::fs::remove_dir_all(&dir).ok();
    assert!(o.status.success(), "{}", stderr(&o));
    stdout(&o).lines().map(str::to_string).collect()
}

#[test]
fn bash_completes_commands_subcommands_and_flags() {
    let file = std::env::temp_dir().join(format!("tollgate-bash-n-{}", std::process::id()));
    std::fs::write(&file, stdout(&tollgate(&["completions", "bash"]))).unwrap();
    let check = Command::new("bash").arg("-n").arg(&file).output().unwrap();
    std::fs::remove_file(&file).ok();
    assert!(check.status.success(), "{}", stderr(&check));
    assert_eq!(bash_complete(&["tollgate", "ru"]), ["rules", "runs"]);
    assert_eq!(
        bash_complete(&["tollgate", "rules", "ex"]),
        ["explain"],
        "subcommands of rules"
    );
    assert_eq!(
        bash_complete(&["tollgate", "rules", "eval", "--max"]),
        ["--max-facts", "--max-iterations"]
    );
}

#[test]
fn every_shell_s_script_names_every_command() {
    let commands = commands();
    assert!(commands.len() > 20, "{commands:?}");
    for shell in ["bash", "zsh", "fish", "powershell", "elvish"] {
        let o = tollgate(&["completions", shell]);
        assert!(o.status.success(), "{shell}: {}", stderr(&o));
        let script = stdout(&o);
        for command in &commands {
            assert!(script.contains(command.as_str()), "{shell}: no {command}");
        }
    }
    let o = tollgate(&["completions", "tcsh"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("possible values"), "{}", stderr(&o));
}

#[test]
fn man_pages_are_written_for_every_command_and_render_cleanly() {
    let dir = std::env::temp_dir().join(format!("tollgate-man-{}", std::process::id()));
    let o = tollgate(&["man", "--out-dir", dir.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    for command in commands() {
        let page = dir.join(format!("tollgate-{command}.1"));
        let text = std::fs::read_to_string(&page).unwrap_or_else(|e| panic!("{page:?}: {e}"));
        assert!(
            text.contains(&format!(".TH tollgate-{command} 1")),
            "{text}"
        );
        assert!(text.contains("\"Tollgate Manual\""));
    }
    let eval = dir.join("tollgate-rules-eval.1");
    let text = std::fs::read_to_string(&eval).unwrap();
    assert!(text.contains("max\\-facts"), "{text}");
    // Rendered by man(1) with its warnings on, where the machine has it.
    if Command::new("man").arg("--version").output().is_ok() {
        let o = Command::new("man")
            .args(["--warnings", "-l"])
            .arg(&eval)
            .env("MANPAGER", "cat")
            .env("MANWIDTH", "100")
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(stdout(&o).contains("tollgate-rules-eval"));
        assert_eq!(stderr(&o), "", "man's warnings");
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// The example lines of a command's `--help` (after `Examples:`), comments cut.
fn examples(command: &[&str]) -> Vec<String> {
    let mut args = command.to_vec();
    args.push("--help");
    let help = stdout(&tollgate(&args));
    help.lines()
        .skip_while(|l| !l.starts_with("Examples:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .map(|l| l.split("  #").next().unwrap().trim().to_string())
        .collect()
}

/// The `--help` examples that need only the repository's fixtures run as written, and succeed.
#[test]
fn help_examples_on_the_fixtures_run() {
    let mut ran = 0;
    for command in [
        &["rules", "eval"][..],
        &["rules", "explain"],
        &["policy", "decide"],
        &["serve"],
        &["memory", "search"],
        &["approvals", "approve"],
        &["regress", "run"],
    ] {
        let lines = examples(command);
        assert!(!lines.is_empty(), "no examples in {command:?} --help");
        for line in lines {
            assert!(line.starts_with("tollgate "), "{line}");
            if !line.contains("fixtures/") || command == ["serve"] {
                continue;
            }
            let shell = line.replacen("tollgate", env!("CARGO_BIN_EXE_tollgate"), 1);
            let o = Command::new("bash")
                .args(["-c", &shell])
                .current_dir(root())
                .output()
                .unwrap();
            assert!(o.status.success(), "{line}: {}", stderr(&o));
            assert!(!stdout(&o).is_empty(), "{line} printed nothing");
            ran += 1;
        }
    }
    assert_eq!(ran, 5, "the examples that run on fixtures");
}

/// Colour only on a terminal and without `NO_COLOR`: clap's errors (the only coloured output)
/// are plain through a pipe, and plain on a terminal (util-linux `script`, where the machine
/// has it) once `NO_COLOR` is set.
#[test]
fn colour_only_on_a_terminal_without_no_color() {
    let piped = tollgate(&["rules", "evl"]);
    assert_eq!(piped.status.code(), Some(2));
    assert!(stderr(&piped).contains("unrecognized subcommand 'evl'"));
    assert!(!stderr(&piped).contains('\u{1b}'), "{}", stderr(&piped));
    if Command::new("script").arg("--version").output().is_err() {
        return;
    }
    let on_terminal = |no_color: bool| {
        let mut c = Command::new("script");
        c.args([
            "-qec",
            &format!("{} rules evl", env!("CARGO_BIN_EXE_tollgate")),
            "/dev/null",
        ])
        .env("TERM", "xterm-256color")
        .env_remove("NO_COLOR")
        .env_remove("CLICOLOR_FORCE");
        if no_color {
            c.env("NO_COLOR", "1");
        }
        stdout(&c.output().unwrap())
    };
    let coloured = on_terminal(false);
    assert!(coloured.contains("unrecognized subcommand"), "{coloured}");
    assert!(coloured.contains('\u{1b}'), "{coloured}");
    let plain = on_terminal(true);
    assert!(plain.contains("unrecognized subcommand"), "{plain}");
    assert!(!plain.contains('\u{1b}'), "{plain}");
}

/// The Markdown files of the front door and the guide: `README.md` and everything under `docs/`.
fn markdown_files() -> Vec<std::path::PathBuf> {
    fn walk(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "md") {
                out.push(path);
            }
        }
    }
    let mut files = vec![root().join("README.md")];
    walk(&root().join("docs"), &mut files);
    files.sort();
    files
}

/// The link targets of a Markdown text, outside code blocks and code spans.
fn links(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        // Code spans cannot hold links.
        let plain: String = line
            .split('`')
            .enumerate()
            .filter(|(i, _)| i % 2 == 0)
            .map(|(_, s)| s)
            .collect::<Vec<_>>()
            .join(" ");
        let mut rest = plain.as_str();
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(')') else { break };
            out.push(after[..end].to_string());
            rest = &after[end..];
        }
    }
    out
}

/// GitHub's (and mdBook's) anchor of a heading: lowercase, punctuation dropped, spaces as `-`.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

fn anchors(text: &str) -> Vec<String> {
    let mut fenced = false;
    text.lines()
        .filter(|l| {
            if l.trim_start().starts_with("```") {
                fenced = !fenced;
            }
            !fenced && l.starts_with('#')
        })
        .map(|l| slug(l.trim_start_matches('#')))
        .collect()
}

/// Every relative link of the README and the guide names a file that exists, and every anchor a
/// heading of its file; the book's summary lists every chapter, and the README links to each
/// (a new user reaches every chapter in one click).
#[test]
fn every_link_in_the_readme_and_the_guide_resolves() {
    let mut broken = Vec::new();
    let mut checked = 0;
    for file in markdown_files() {
        let text = std::fs::read_to_string(&file).unwrap();
        for target in links(&text) {
            if target.starts_with("http://")
                || target.starts_with("https://")
                || target.starts_with("mailto:")
            {
                continue;
            }
            let (path, anchor) = target.split_once('#').unwrap_or((&target, ""));
            let resolved = if path.is_empty() {
                file.clone()
            } else {
                file.parent().unwrap().join(path)
            };
            checked += 1;
            if !resolved.exists() {
                broken.push(format!("{}: {target} (no such file)", file.display()));
                continue;
            }
            if !anchor.is_empty() {
                let target_text = std::fs::read_to_string(&resolved).unwrap_or_default();
                if !anchors(&target_text).iter().any(|a| a == anchor) {
                    broken.push(format!("{}: {target} (no such heading)", file.display()));
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
    assert!(checked > 100, "only {checked} links checked");

    let summary = std::fs::read_to_string(root().join("docs/SUMMARY.md")).unwrap();
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    for entry in std::fs::read_dir(root().join("docs/guide")).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        assert!(
            summary.contains(&format!("(guide/{name})")),
            "docs/SUMMARY.md does not list {name}"
        );
        if name != "introduction.md" {
            assert!(
                readme.contains(&format!("(docs/guide/{name})")),
                "README.md does not link to {name}"
            );
        }
    }
    // The front door opens with the two set-up commands, in one block, under "Set up".
    let setup = readme
        .split("## Set up")
        .nth(1)
        .and_then(|rest| rest.split("```sh\n").nth(1))
        .and_then(|block| block.split("\n```\n").next())
        .expect("a ```sh block under ## Set up");
    let commands: Vec<&str> = setup
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .collect();
    assert_eq!(
        commands,
        ["bash examples/demo.sh", "cargo test --workspace"]
    );
    assert!(
        readme.find("## Set up") < readme.find("## A 30-second look"),
        "set-up comes first"
    );
    assert!(
        readme.lines().count() < 150,
        "the README is a front door: {} lines",
        readme.lines().count()
    );
}

#[test]
fn headings_become_the_anchors_links_use() {
    assert_eq!(slug(" `tollgate rules eval`"), "tollgate-rules-eval");
    assert_eq!(
        slug(" Counterfactual replay: what if?"),
        "counterfactual-replay-what-if"
    );
    assert_eq!(
        links("see [a](b.md#c) and `[x](y)`\n```\n[z](w)\n```\n"),
        ["b.md#c"]
    );
}

/// The operations chapter's store commands do what it says, on a fresh store of their own.
#[test]
fn the_operations_chapter_s_store_commands_do_what_it_says() {
    let chapter = std::fs::read_to_string(root().join("docs/guide/operations.md")).unwrap();
    for command in [
        "tollgate db check",
        "tollgate db upgrade",
        "tollgate db downgrade --to 30",
        "tollgate db repair",
    ] {
        assert!(
            chapter.contains(command),
            "the chapter no longer shows {command}"
        );
    }
    let dir = std::env::temp_dir().join(format!("tollgate-ops-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_tollgate"))
            .args(args)
            .current_dir(&dir)
            .env_remove("TOLLGATE_DATABASE_URL")
            .output()
            .unwrap()
    };
    // `db check` changes nothing: a fresh store stays behind, and says how to upgrade.
    for _ in 0..2 {
        let o = run(&["db", "check"]);
        assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
        assert!(stdout(&o).contains("help: run `tollgate db upgrade`"));
    }
    assert!(run(&["db", "upgrade"]).status.success());
    let o = run(&["db", "check"]);
    assert!(o.status.success(), "{}", stdout(&o));
    assert!(stdout(&o).contains("schema    complete") && stdout(&o).contains("integrity ok"));
    let o = run(&["db", "downgrade", "--to", "30"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("now at version 30"), "{}", stdout(&o));
    assert_eq!(run(&["db", "check"]).status.code(), Some(1));
    // Any other command migrates the store when it opens it.
    assert!(run(&["runs", "list"]).status.success());
    assert!(run(&["db", "check"]).status.success());
    assert!(run(&["db", "repair"]).status.success());
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn the_committed_error_reference_lists_every_code_of_every_table() {
    let generated = current_reference("errors");
    let gateway = tollgate_gateway::codes::http::ALL
        .iter()
        .chain(tollgate_gateway::codes::case_refusals::ALL);
    for c in gateway {
        assert!(
            generated.contains(&format!(
                "\n### {}\n\n**{}** {}",
                c.code, c.status, c.summary
            )),
            "{} is not listed with its status and summary",
            c.code
        );
    }
    for c in tollgate_engine::diag::codes::ALL {
        assert!(
            generated.contains(&format!("\n### {}\n\n{}", c.id, c.summary)),
            "{} is not listed",
            c.id
        );
    }
}

/// The envelope's schema as `tollgate policy schema` prints it is the one the reference is
/// generated from, and reads as JSON.
#[test]
fn policy_schema_prints_the_envelope_schema() {
    let o = tollgate(&["policy", "schema"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let printed: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(printed, tollgate_rules::envelope::envelope_json_schema());
    assert_eq!(printed["$id"], tollgate_rules::envelope::SCHEMA_ID);
}

#[test]
fn the_committed_schema_references_list_every_field_of_their_schemas() {
    let text = |s: &str| serde_json::from_str::<serde_json::Value>(s).unwrap();
    for (kind, schema) in [
        ("envelope", tollgate_rules::envelope::envelope_json_schema()),
        (
            "handoff-contract",
            text(tollgate_gateway::handoff::contract::JSON_SCHEMA),
        ),
        ("pack", text(tollgate_gateway::packs::JSON_SCHEMA)),
    ] {
        let generated = current_reference(kind);
        let mut objects = vec![&schema];
        if let Some(defs) = schema["$defs"].as_object() {
            for (name, def) in defs {
                assert!(
                    generated.contains(&format!("\n## `{name}`\n")),
                    "{kind}: no section for {name}"
                );
                objects.push(def);
            }
        }
        for object in objects {
            for field in object["properties"].as_object().into_iter().flatten() {
                assert!(
                    generated.contains(&format!("- `{}` (", field.0)),
                    "{kind}: {} is not listed",
                    field.0
                );
            }
        }
    }
}
