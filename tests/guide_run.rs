//! The guide cannot rot (issue 41): every `tollgate` command of the README's and the guide's
//! code blocks is run, page by page in order, as a reader would type it — in a fresh folder
//! holding the repository's `fixtures/`, `rules/` and `examples/`, with its own
//! store — and must succeed; where a page shows what a command prints (a `$ ` line followed by
//! its output), what it shows must be in what the command prints (`...` and `…` stand for what
//! the page leaves out). A command that cannot run as written is listed below with the reason
//! (it needs an id an earlier answer gave, a running gateway, or a file the reader edits), and
//! the walk-throughs of `tests/gateway_http/guide.rs` cover those chapters instead.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::Path;
use std::process::Command;

use support::{TempDir, root, stderr, stdout};

/// Commands shown but not run here, by a text they contain, and why.
const NOT_RUN: &[(&str, &str)] = &[
    ("tollgate serve", "starts a server that runs until stopped"),
    ("$CASE", "needs the id of a case an earlier command opened"),
    (
        "CASE_ID",
        "needs the id of a case an earlier command opened",
    ),
    (
        "MEMORY_ID",
        "needs the id of a memory an earlier answer listed",
    ),
    ("tok_…", "needs the id of a token an earlier command made"),
    (
        "apr-0817555ce346a24b",
        "needs the id of an approval a tool call asked for (tests/gateway_http/guide.rs)",
    ),
    (
        "mcp pins accept",
        "needs a pin an MCP server's changed tool made (tests/mcp_gateway.rs)",
    ),
    (
        "handoff submit plan.yaml",
        "the page asks the reader to edit the template first (tests/handoff.rs)",
    ),
    (
        "handoff check plan-T-200",
        "needs the contract the edited template becomes (tests/handoff.rs)",
    ),
    (
        "regress bisect",
        "needs a git history and a target file of the reader's (tests/regress.rs)",
    ),
    (
        "runs explain run-1 9",
        "needs a run and a tool call of the reader's (tests/gateway_http)",
    ),
    (
        "review apply --mapping-file",
        "the reader decides each mapping in the file first (tests/cover_loop.rs)",
    ),
    (
        "covered_system_pack        # passes now",
        "passes once the reader's decisions are applied (tests/cover_loop.rs)",
    ),
    (
        "handoff validate plan.yaml",
        "the reader fills in the template first: its producer run, its evidence (tests/handoff.rs)",
    ),
    (
        "mcp pins list --changed",
        "shows a pin an MCP server's changed tool made (tests/mcp_gateway.rs)",
    ),
    (
        "replay run scenario.yaml",
        "the reader writes the scenario file the comment shows (tests/counterfactual.rs)",
    ),
    (
        "db downgrade --to 30",
        "the page shows going back with the build that applied the next migration",
    ),
];

/// Commands the page shows failing, with the exit code they fail with.
const FAILS: &[(&str, i32)] = &[
    (
        "policy check fixtures/envelopes/invalid/unknown-key.yaml",
        2,
    ),
    (
        "rules check fixtures/rules/diagnostics/negation_cycle.dl",
        2,
    ),
];

struct Shown {
    line: usize,
    command: String,
    output: Vec<String>,
}

/// The `tollgate` commands of a page's code blocks with the output shown after each (for a
/// `$ ` line: the lines up to the next prompt or the block's end).
fn shown(text: &str) -> Vec<Shown> {
    let mut found: Vec<Shown> = Vec::new();
    let mut in_block = false;
    let mut prompted = false;
    let mut continued = false;
    for (n, raw) in text.lines().enumerate() {
        if raw.trim_start().starts_with("```") {
            in_block = !in_block;
            prompted = false;
            continue;
        }
        if !in_block {
            continue;
        }
        let line = raw.trim();
        if continued {
            let last = found.last_mut().unwrap();
            last.command.push(' ');
            last.command.push_str(line.trim_end_matches('\\'));
            continued = line.ends_with('\\');
            continue;
        }
        let (is_prompt, command) = match line.strip_prefix("$ ") {
            Some(c) => (true, c),
            None => (false, line),
        };
        let starts = command.starts_with("tollgate ")
            || command
                .split_whitespace()
                .find(|w| !w.contains('=') || w.starts_with('-'))
                == Some("tollgate");
        if starts && (is_prompt || !prompted) {
            prompted = is_prompt;
            continued = command.ends_with('\\');
            found.push(Shown {
                line: n + 1,
                command: command.trim_end_matches('\\').trim().to_string(),
                output: Vec::new(),
            });
        } else if is_prompt {
            // Another program's prompt (`curl`): what follows is not ours.
            prompted = false;
        } else if prompted && !line.is_empty() {
            found.last_mut().unwrap().output.push(line.to_string());
        }
    }
    found
}

/// A folder where a page's commands run as a reader's would, holding the repository's
/// fixtures and the built-in packs' folders.
fn reader_folder(page: &str) -> TempDir {
    let dir = TempDir::new(&format!("guide-{page}"));
    // Not `regressions/`: a reader's regression cases are their own (the page makes one).
    for name in ["fixtures", "rules", "examples"] {
        std::os::unix::fs::symlink(root().join(name), dir.path().join(name)).unwrap();
    }
    dir
}

fn bin_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_BIN_EXE_tollgate"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn run(dir: &Path, command: &str) -> std::process::Output {
    let path = format!(
        "{}:{}",
        bin_dir().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    Command::new("bash")
        .args(["-c", &format!("set -o pipefail; {command}")])
        .current_dir(dir)
        .env("PATH", path)
        .env_remove("TOLLGATE_DATABASE_URL")
        .env_remove("TOLLGATE_TOKEN")
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

#[test]
fn every_command_of_the_readme_and_the_guide_runs_as_shown() {
    let mut pages = vec![root().join("README.md")];
    let mut chapters: Vec<_> = std::fs::read_dir(root().join("docs/guide"))
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    chapters.sort();
    pages.extend(chapters);
    let (mut ran, mut skipped) = (0, 0);
    let mut failures = Vec::new();
    for page in pages {
        let name = page.file_name().unwrap().to_string_lossy().to_string();
        let text = std::fs::read_to_string(&page).unwrap();
        let commands = shown(&text);
        if commands.is_empty() {
            continue;
        }
        let dir = reader_folder(&name);
        // A page that works on recorded runs without importing them reads the fixture runs, as
        // a reader who followed the runs chapter has them.
        if !commands.iter().any(|c| c.command.contains("runs import")) {
            let o = run(dir.path(), "tollgate runs import fixtures/runs/*.json");
            assert!(o.status.success(), "{}", stderr(&o));
        }
        for c in commands {
            if NOT_RUN.iter().any(|(t, _)| c.command.contains(t)) {
                skipped += 1;
                continue;
            }
            let o = run(dir.path(), &c.command);
            ran += 1;
            let all = format!("{}{}", stdout(&o), stderr(&o));
            let expected = FAILS
                .iter()
                .find(|(t, _)| c.command.contains(t))
                .map_or(0, |(_, code)| *code);
            let at = format!("{name}:{}: `{}`", c.line, c.command);
            if o.status.code() != Some(expected) {
                failures.push(format!(
                    "{at}: exit {:?}, expected {expected}\n{}",
                    o.status.code(),
                    all.lines().take(8).collect::<Vec<_>>().join("\n")
                ));
                continue;
            }
            for line in &c.output {
                let missing: Vec<&str> = line
                    .split("...")
                    .flat_map(|part| part.split('…'))
                    .map(str::trim)
                    .filter(|part| !part.is_empty() && !all.contains(part))
                    .collect();
                if !missing.is_empty() {
                    failures.push(format!("{at}: shows `{line}`, which it does not print"));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    assert!(ran >= 50, "ran {ran}, skipped {skipped}");
}

#[test]
fn commands_and_their_shown_output_are_read_from_code_blocks() {
    let page = "```text\n\
                $ tollgate runs import fixtures/runs/*.json\n\
                run-a: imported 2 steps\n\
                ...\n\
                $ curl -s localhost:8000\n\
                {\"ok\": true}\n\
                ```\n\
                ```sh\n\
                tollgate rules explain a.dl \\\n  \
                  --fact 'p(1)'\n\
                ```\n";
    let found = shown(page);
    let got: Vec<(usize, &str, Vec<String>)> = found
        .iter()
        .map(|s| (s.line, s.command.as_str(), s.output.clone()))
        .collect();
    assert_eq!(
        got,
        vec![
            (
                2,
                "tollgate runs import fixtures/runs/*.json",
                vec!["run-a: imported 2 steps".to_string(), "...".to_string()]
            ),
            (9, "tollgate rules explain a.dl --fact 'p(1)'", vec![]),
        ]
    );
}
