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

#[test]
fn the_committed_cli_reference_is_what_the_binary_generates() {
    let o = tollgate(&["reference", "cli"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let generated = stdout(&o);
    let path = root().join("docs/reference/cli.md");
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        generated == committed,
        "{} is stale: regenerate it with `cargo run -p tollgate -- reference cli > docs/reference/cli.md`",
        path.display()
    );
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
