//! (tests) Every `tollgate` command the README and the guide show in a code block parses as the
//! binary's own parser reads it (issue 41): a renamed command, a flag taken away, a value no
//! longer allowed or a required flag left out fails here, naming the page and the line, before a
//! reader meets it. The chapters whose walk-throughs need a running gateway are run in full by
//! `tests/gateway_http/guide.rs` and `tests/cli_docs.rs`.

use std::path::{Path, PathBuf};

use clap::CommandFactory;

/// The README and every page of the guide.
fn pages() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut pages = vec![root.join("README.md")];
    let guide = root.join("docs/guide");
    let mut chapters: Vec<PathBuf> = std::fs::read_dir(&guide)
        .unwrap_or_else(|e| panic!("{}: {e}", guide.display()))
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    chapters.sort();
    pages.extend(chapters);
    pages
}

/// The `tollgate` command lines of a page's code blocks, with the line each starts on: a
/// prompt (`$ `) and a trailing `\` continuation are read as a shell would; what follows a
/// pipe, a redirection, `&&`, `;` or a comment is not the command's.
fn commands(text: &str) -> Vec<(usize, Vec<String>)> {
    let mut found = Vec::new();
    let mut in_block = false;
    let mut pending: Option<(usize, String)> = None;
    for (n, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            in_block = !in_block;
            pending = None;
            continue;
        }
        if !in_block {
            continue;
        }
        let (start, joined) = match pending.take() {
            Some((start, before)) => (start, format!("{before} {}", line.trim())),
            None => {
                let l = line.trim();
                let l = l.strip_prefix("$ ").unwrap_or(l);
                (n + 1, l.to_string())
            }
        };
        if let Some(before) = joined.strip_suffix('\\') {
            pending = Some((start, before.to_string()));
            continue;
        }
        let Some(words) = shlex::split(&joined) else {
            continue;
        };
        // Environment assignments before the command (`TOLLGATE_X=1 tollgate ...`).
        let mut words = words
            .into_iter()
            .skip_while(|w| w.contains('=') && !w.starts_with('-'))
            .peekable();
        if words.peek().map(String::as_str) != Some("tollgate") {
            continue;
        }
        let args: Vec<String> = words
            .take_while(|w| {
                !matches!(
                    w.as_str(),
                    "|" | "||" | "&&" | ";" | ">" | ">>" | "2>" | "&"
                ) && !w.starts_with('#')
                    && !w.starts_with('>')
            })
            .collect();
        found.push((start, args));
    }
    found
}

#[test]
fn every_command_the_readme_and_the_guide_show_parses() {
    let mut checked = 0;
    let mut failures = Vec::new();
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        for (line, args) in commands(&text) {
            checked += 1;
            if let Err(e) = crate::Cli::command().try_get_matches_from(&args)
                && !matches!(
                    e.kind(),
                    clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion
                )
            {
                let first = e.to_string();
                let first = first.lines().next().unwrap_or_default().to_string();
                failures.push(format!(
                    "{}:{line}: `{}`: {first}",
                    page.display(),
                    args.join(" ")
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // The README and the guide show dozens; fewer means the extraction broke.
    assert!(checked > 60, "only {checked} commands found");
}

#[test]
fn commands_are_read_from_code_blocks_as_a_shell_reads_them() {
    let page = "tollgate prose is not read\n\
                ```sh\n\
                $ tollgate runs import fixtures/runs/*.json\n\
                TOLLGATE_X=1 tollgate policy decide -e fixtures/envelopes \\\n  \
                  -r req.json --explain   # a comment\n\
                tollgate reference cli > docs/reference/cli.md\n\
                curl -s localhost:8000\n\
                ```\n";
    let found = commands(page);
    let lines: Vec<(usize, String)> = found.into_iter().map(|(n, a)| (n, a.join(" "))).collect();
    assert_eq!(
        lines,
        vec![
            (3, "tollgate runs import fixtures/runs/*.json".to_string()),
            (
                4,
                "tollgate policy decide -e fixtures/envelopes -r req.json --explain".to_string()
            ),
            (6, "tollgate reference cli".to_string()),
        ]
    );
}
