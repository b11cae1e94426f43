//! The command line describing itself: shell completions (`clap_complete`), man pages
//! (`clap_mangen`) and the Markdown reference of every command and flag — all generated from
//! the clap definitions the parser itself uses, so none can say what the binary does not do.
//! `docs/reference/cli.md` is that reference as committed; a test fails when it is stale.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Args, Subcommand};
use clap_complete::Shell;

/// `tollgate completions SHELL`.
#[derive(Args, Debug)]
#[command(after_help = "Examples:\n  \
    tollgate completions bash > ~/.local/share/bash-completion/completions/tollgate\n  \
    tollgate completions zsh > ~/.zfunc/_tollgate   # with fpath+=~/.zfunc before compinit\n  \
    tollgate completions fish > ~/.config/fish/completions/tollgate.fish\n  \
    tollgate completions powershell >> $PROFILE")]
pub struct CompletionsArgs {
    /// The shell to complete in.
    #[arg(value_enum)]
    shell: Shell,
}

/// `tollgate man`.
#[derive(Args, Debug)]
#[command(after_help = "Example:\n  \
    tollgate man --out-dir ~/.local/share/man/man1 && man tollgate-rules-eval")]
pub struct ManArgs {
    /// Where to write the pages (created if missing): `tollgate.1`, and one page per command
    /// (`tollgate-rules.1`, `tollgate-rules-eval.1`, ...).
    #[arg(long, value_name = "DIR", default_value = "man")]
    out_dir: PathBuf,
}

/// `tollgate reference ...`.
#[derive(Subcommand, Debug)]
pub enum ReferenceCommand {
    /// Every command and flag as Markdown (what `docs/reference/cli.md` holds).
    Cli,
    /// Every HTTP operation of the gateway as Markdown, from its OpenAPI document
    /// (what `docs/reference/http.md` holds).
    Http,
    /// The policy vocabulary and the built-in packs' relations as Markdown, from the packs'
    /// declarations and comments (what `docs/reference/vocabulary.md` holds).
    Vocabulary,
    /// Every error code as Markdown, from the one table of each (the HTTP API's codes, the
    /// case commit refusals, the rule and envelope diagnostics): what each means and what to
    /// do (what `docs/reference/errors.md` holds).
    Errors,
    /// The envelope format's fields as Markdown, from its JSON Schema (`tollgate policy
    /// schema`; what `docs/reference/envelope.md` holds).
    Envelope,
    /// The handoff contract's fields as Markdown, from the JSON Schema posted contracts are
    /// read against (what `docs/reference/handoff-contract.md` holds).
    HandoffContract,
    /// A case pack's files' fields as Markdown, from the JSON Schema packs are read against
    /// (what `docs/reference/pack.md` holds).
    Pack,
}

/// Writes the completion script for `args.shell` to standard output.
pub fn completions(args: CompletionsArgs, mut cmd: clap::Command) -> anyhow::Result<ExitCode> {
    let name = cmd.get_name().to_string();
    // Into a buffer first: `generate` panics on a failed write (a closed pipe), where a
    // returned error ends the command quietly (`main`).
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, name, &mut script);
    std::io::Write::write_all(&mut std::io::stdout().lock(), &script)?;
    Ok(ExitCode::SUCCESS)
}

/// Writes a man page per command into `args.out_dir`.
pub fn man(args: ManArgs, cmd: clap::Command) -> anyhow::Result<ExitCode> {
    std::fs::create_dir_all(&args.out_dir)
        .with_context(|| format!("cannot create {}", args.out_dir.display()))?;
    // As `clap_mangen::generate_to`, every page naming the program and its version as its
    // source and the manual it belongs to (a subcommand's page would otherwise say neither).
    fn generate(cmd: clap::Command, source: &str, dir: &std::path::Path) -> std::io::Result<()> {
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()).cloned() {
            generate(sub, source, dir)?;
        }
        clap_mangen::Man::new(cmd)
            .source(source)
            .manual("Tollgate Manual")
            .generate_to(dir)?;
        Ok(())
    }
    let source = format!("tollgate {}", env!("CARGO_PKG_VERSION"));
    let mut cmd = cmd.disable_help_subcommand(true);
    cmd.build();
    generate(cmd, &source, &args.out_dir)
        .with_context(|| format!("cannot write the man pages into {}", args.out_dir.display()))?;
    let mut pages: Vec<String> = std::fs::read_dir(&args.out_dir)?
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|name| name.starts_with("tollgate") && name.ends_with(".1"))
        .collect();
    pages.sort();
    println!(
        "wrote {} man pages into {} (tollgate.1 first; `man -l {}/tollgate.1` reads one)",
        pages.len(),
        args.out_dir.display(),
        args.out_dir.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// Prints a reference.
pub fn reference(command: ReferenceCommand, cmd: clap::Command) -> anyhow::Result<ExitCode> {
    match command {
        ReferenceCommand::Cli => print!("{}", cli_reference(cmd)),
        ReferenceCommand::Http => print!("{}", http_reference(&tollgate_gateway::http::openapi())),
        ReferenceCommand::Vocabulary => print!("{}", vocabulary_reference()),
        ReferenceCommand::Errors => print!("{}", errors_reference()),
        ReferenceCommand::Envelope => print!(
            "{}",
            crate::schema_reference::render(
                "Policy envelopes",
                &tollgate_rules::envelope::envelope_json_schema(),
                "the JSON Schema of the types envelopes are read into, which `tollgate policy schema` prints",
                "tollgate reference envelope > docs/reference/envelope.md",
            )
        ),
        ReferenceCommand::HandoffContract => print!(
            "{}",
            crate::schema_reference::render(
                "Handoff contracts",
                &serde_json::from_str(tollgate_gateway::handoff::contract::JSON_SCHEMA)?,
                "the JSON Schema posted contracts are read against, which `GET /v2/handoffs/schema` answers",
                "tollgate reference handoff-contract > docs/reference/handoff-contract.md",
            )
        ),
        ReferenceCommand::Pack => print!(
            "{}",
            crate::schema_reference::render(
                "Pack files",
                &serde_json::from_str(tollgate_gateway::packs::JSON_SCHEMA)?,
                "the JSON Schema pack files are read against, which `tollgate packs schema` prints",
                "tollgate reference pack > docs/reference/pack.md",
            )
        ),
    }
    Ok(ExitCode::SUCCESS)
}

/// The Markdown reference of every visible command, depth first in declaration order: its
/// description, usage, arguments and options (with defaults and possible values).
pub fn cli_reference(mut cmd: clap::Command) -> String {
    cmd.build();
    let mut out = String::from(
        "# Command-line reference\n\n\
         Generated from the code by `tollgate reference cli`; do not edit (a test fails when it\n\
         is stale: regenerate with `cargo run -p tollgate -- reference cli > docs/reference/cli.md`).\n\
         Every command also answers `--help`.\n",
    );
    let mut contents = String::new();
    let mut body = String::new();
    write_command(&mut cmd, 0, &mut contents, &mut body);
    let _ = write!(out, "\n{contents}\n{body}");
    out
}

fn write_command(cmd: &mut clap::Command, depth: usize, contents: &mut String, body: &mut String) {
    let path = cmd.get_bin_name().unwrap_or(cmd.get_name()).to_string();
    let anchor = path.replace(' ', "-");
    let _ = writeln!(contents, "{}- [`{path}`](#{anchor})", "  ".repeat(depth));
    let _ = writeln!(body, "## `{path}`\n");
    if let Some(about) = cmd.get_long_about().or(cmd.get_about()) {
        let _ = writeln!(body, "{}\n", about.to_string().trim_end());
    }
    let usage = cmd.render_usage().to_string();
    let usage = usage.trim_start_matches("Usage: ").trim_end();
    let _ = writeln!(body, "```text\n{usage}\n```\n");
    let args: Vec<&clap::Arg> = cmd
        .get_arguments()
        .filter(|a| !a.is_hide_set() && !matches!(a.get_id().as_str(), "help" | "version"))
        .collect();
    let (positionals, options): (Vec<&clap::Arg>, Vec<&clap::Arg>) =
        args.into_iter().partition(|a| a.is_positional());
    for (title, list) in [("Arguments", positionals), ("Options", options)] {
        if list.is_empty() {
            continue;
        }
        let _ = writeln!(body, "{title}:\n");
        for arg in list {
            let _ = writeln!(body, "- {}", describe(arg));
        }
        body.push('\n');
    }
    if let Some(after) = cmd.get_after_help() {
        let _ = writeln!(body, "```text\n{}\n```\n", after.to_string().trim_end());
    }
    let names: Vec<String> = cmd
        .get_subcommands()
        .filter(|s| !s.is_hide_set() && s.get_name() != "help")
        .map(|s| s.get_name().to_string())
        .collect();
    for name in names {
        if let Some(sub) = cmd.find_subcommand_mut(&name) {
            write_command(sub, depth + 1, contents, body);
        }
    }
}

/// `` `--name <VALUE>` `` (or `` `<NAME>` ``), then its help, default and possible values.
fn describe(arg: &clap::Arg) -> String {
    let names = arg
        .get_value_names()
        .map(|v| {
            v.iter()
                .map(|n| format!("<{n}>"))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_else(|| format!("<{}>", arg.get_id().as_str().to_uppercase()));
    let takes_value = arg.get_action().takes_values();
    let mut spelled = Vec::new();
    if let Some(short) = arg.get_short() {
        spelled.push(format!("-{short}"));
    }
    if let Some(long) = arg.get_long() {
        spelled.push(format!("--{long}"));
    }
    let mut text = if arg.is_positional() {
        format!("`{names}`")
    } else if takes_value {
        format!("`{} {names}`", spelled.join(", "))
    } else {
        format!("`{}`", spelled.join(", "))
    };
    if let Some(help) = arg.get_long_help().or(arg.get_help()) {
        let help = help.to_string();
        let _ = write!(text, ": {}", help.trim_end().replace('\n', " "));
    }
    let defaults: Vec<String> = arg
        .get_default_values()
        .iter()
        .map(|v| v.to_string_lossy().into_owned())
        .collect();
    if takes_value && !defaults.is_empty() {
        let _ = write!(text, " (default: `{}`)", defaults.join(","));
    }
    let possible: Vec<String> = arg
        .get_possible_values()
        .iter()
        .filter(|v| !v.is_hide_set())
        .map(|v| format!("`{}`", v.get_name()))
        .collect();
    if !possible.is_empty() && takes_value {
        let _ = write!(text, " (one of {})", possible.join(", "));
    }
    if arg.is_required_set() && !arg.is_positional() {
        text.push_str(" (required)");
    }
    text
}

/// The Markdown reference of the gateway's HTTP API, from its OpenAPI document: per tag, every
/// operation with its description (which says the principals it admits), its parameters, body
/// and responses.
pub fn http_reference(doc: &serde_json::Value) -> String {
    use serde_json::Value;
    let text = |v: &Value| v.as_str().unwrap_or("").trim().to_string();
    let mut out = String::from(
        "# HTTP API reference\n\n\
         Generated from the gateway's OpenAPI document (`GET /openapi.json`) by `tollgate reference\n\
         http`; do not edit (a test fails when it is stale: regenerate with\n\
         `cargo run -p tollgate -- reference http > docs/reference/http.md`).\n",
    );
    if let Some(description) = doc.pointer("/info/description") {
        let _ = write!(out, "\n{}\n", text(description));
    }
    // Operations by tag, in the document's tag order; untagged last.
    let mut tags: Vec<(String, String)> = doc["tags"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| (text(&t["name"]), text(&t["description"])))
        .collect();
    let mut by_tag: std::collections::BTreeMap<String, Vec<(String, String, &Value)>> =
        Default::default();
    for (path, ops) in doc["paths"].as_object().into_iter().flatten() {
        for (method, op) in ops.as_object().into_iter().flatten() {
            if !matches!(method.as_str(), "get" | "post" | "put" | "patch" | "delete") {
                continue;
            }
            let tag = op["tags"][0].as_str().unwrap_or("other").to_string();
            if !tags.iter().any(|(t, _)| *t == tag) {
                tags.push((tag.clone(), String::new()));
            }
            by_tag
                .entry(tag)
                .or_default()
                .push((method.to_uppercase(), path.clone(), op));
        }
    }
    let mut contents = String::new();
    let mut body = String::new();
    for (tag, description) in &tags {
        let Some(ops) = by_tag.get(tag) else { continue };
        let _ = writeln!(
            contents,
            "- [{tag}](#{})",
            tag.to_lowercase().replace(' ', "-")
        );
        let _ = writeln!(body, "## {tag}\n");
        if !description.is_empty() {
            let _ = writeln!(body, "{description}\n");
        }
        for (method, path, op) in ops {
            let _ = writeln!(body, "### `{method} {path}`\n");
            for key in ["summary", "description"] {
                let t = text(&op[key]);
                if !t.is_empty() {
                    let _ = writeln!(body, "{t}\n");
                }
            }
            let params: Vec<&Value> = op["parameters"].as_array().into_iter().flatten().collect();
            if !params.is_empty() {
                let _ = writeln!(body, "Parameters:\n");
                for p in params {
                    let required = if p["required"].as_bool() == Some(true) {
                        ", required"
                    } else {
                        ""
                    };
                    let _ = write!(
                        body,
                        "- `{}` ({}{required})",
                        text(&p["name"]),
                        text(&p["in"])
                    );
                    let d = text(&p["description"]);
                    if !d.is_empty() {
                        let _ = write!(body, ": {}", d.replace('\n', " "));
                    }
                    body.push('\n');
                }
                body.push('\n');
            }
            if let Some(content) = op
                .pointer("/requestBody/content")
                .and_then(Value::as_object)
            {
                for (media, c) in content {
                    let schema = schema_name(&c["schema"]);
                    let _ = writeln!(body, "Body: {schema} (`{media}`).\n");
                }
            }
            if let Some(responses) = op["responses"].as_object() {
                let _ = writeln!(body, "Responses:\n");
                for (status, r) in responses {
                    let _ = write!(body, "- `{status}`");
                    let d = text(&r["description"]);
                    if !d.is_empty() {
                        let _ = write!(body, ": {}", d.replace('\n', " "));
                    }
                    if let Some(c) = r.pointer("/content/application~1json/schema") {
                        let _ = write!(body, " ({})", schema_name(c));
                    }
                    body.push('\n');
                }
                body.push('\n');
            }
        }
    }
    let _ = write!(out, "\n{contents}\n{body}");
    out
}

/// A schema as a reader meets it: the name it refers to, an array of one, or its type.
fn schema_name(schema: &serde_json::Value) -> String {
    if let Some(r) = schema["$ref"].as_str() {
        return format!("`{}`", r.rsplit('/').next().unwrap_or(r));
    }
    match schema["type"].as_str() {
        Some("array") => format!("array of {}", schema_name(&schema["items"])),
        Some(t) => format!("`{t}`"),
        None => "a JSON value".to_string(),
    }
}

/// The Markdown reference of the built-in program: per file (the vocabulary first), its opening
/// comment, then its sections (`// ---- title ----`) and every relation it declares, with the
/// comment written above the declaration and whether it is an input or a request relation.
pub fn vocabulary_reference() -> String {
    use tollgate_rules::packs::{REQUEST_RELATIONS, builtin_files};
    let mut out = String::from(
        "# Policy vocabulary and built-in packs\n\n\
         Generated from `rules/packs/*.dl` by `tollgate reference vocabulary`; do not edit (a test\n\
         fails when it is stale: regenerate with\n\
         `cargo run -p tollgate -- reference vocabulary > docs/reference/vocabulary.md`).\n\
         A rule pack of your own reads these relations (`tollgate rules check` checks it against\n\
         them); *input* relations are facts the encoders write from envelopes and runs, *request*\n\
         relations the facts of one decision, the rest are derived by the packs.\n",
    );
    for (file, text) in builtin_files() {
        let inputs: Vec<&str> = text
            .lines()
            .filter_map(|l| l.trim().strip_prefix(".input "))
            .map(str::trim)
            .collect();
        let _ = write!(out, "\n## `{file}`\n\n");
        let mut lines = text.lines().peekable();
        // The opening comment: what the file is.
        let mut opening = Vec::new();
        while let Some(l) = lines.peek().and_then(|l| l.strip_prefix("//")) {
            opening.push(l.strip_prefix(' ').unwrap_or(l).to_string());
            lines.next();
        }
        let _ = writeln!(out, "{}\n", opening.join("\n").trim_end());
        let mut comment: Vec<String> = Vec::new();
        for line in lines {
            let line = line.trim_end();
            if let Some(c) = line.strip_prefix("//") {
                let c = c.strip_prefix(' ').unwrap_or(c);
                if let Some(title) = c.strip_prefix("---- ") {
                    let title = title.trim_end_matches('-').trim();
                    if !out.ends_with("\n\n") {
                        out.push('\n');
                    }
                    let _ = writeln!(out, "### {title}\n");
                    comment.clear();
                } else {
                    comment.push(c.to_string());
                }
                continue;
            }
            if let Some(decl) = line.strip_prefix(".decl ") {
                let name = decl.split('(').next().unwrap_or(decl).trim();
                let mut kinds = Vec::new();
                if inputs.contains(&name) {
                    kinds.push("input");
                }
                if REQUEST_RELATIONS.contains(&name) {
                    kinds.push("request");
                }
                let kinds = if kinds.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", kinds.join(", "))
                };
                let _ = write!(out, "- `{}`{kinds}", decl.trim());
                if !comment.is_empty() {
                    let _ = write!(out, ": {}", comment.join(" "));
                }
                out.push('\n');
                comment.clear();
                continue;
            }
            if let Some(ty) = line.strip_prefix(".type ") {
                let _ = write!(out, "- type `{}`", ty.trim());
                if !comment.is_empty() {
                    let _ = write!(out, ": {}", comment.join(" "));
                }
                out.push('\n');
            }
            if line.trim().is_empty() || !line.starts_with('.') || line.starts_with(".type ") {
                comment.clear();
            }
        }
    }
    out
}

/// The Markdown reference of every error code: the HTTP API's (`tollgate_gateway::codes`) and
/// the rule and envelope diagnostics' (`tollgate_engine::diag::codes`), each code a heading so
/// the guide and messages can link to it.
pub fn errors_reference() -> String {
    use tollgate_gateway::codes::{ErrorCode, case_refusals, http};
    let mut out = String::from(
        "# Error codes\n\n\
         Generated from the gateway's and the engine's tables of codes by `tollgate reference\n\
         errors`; do not edit (a test fails when it is stale: regenerate with\n\
         `cargo run -p tollgate -- reference errors > docs/reference/errors.md`). Every code a\n\
         client or a policy author can meet is here, because the code at each place that reports\n\
         one is a constant of those tables.\n",
    );
    let section = |out: &mut String, codes: &[ErrorCode]| {
        for c in codes {
            let _ = write!(
                out,
                "\n### {}\n\n**{}** {}\n\n**What to do:** {}\n",
                c.code, c.status, c.summary, c.remedy
            );
        }
    };
    out.push_str(
        "\n## HTTP API errors\n\n\
         Every error answer has the body `{\"error\": {\"code\": ..., \"message\": ..., \"details\": ...}}`\n\
         with the status below; `message` says what was wrong with this request and how to fix it,\n\
         `details` carries what a program needs (a decision with its receipt, diagnostics with\n\
         their lines). A 500 says only that something failed: the detail is in the gateway's log.\n",
    );
    section(&mut out, http::ALL);
    out.push_str(
        "\n## Case commit refusals\n\n\
         A commit of a case's proposal that a guardrail refuses is recorded on the case as a\n\
         `commit_refused` event with one of these codes, and answered as a 409 whose\n\
         `details.recorded` is `true` (`tollgate cases commit` prints the same). Three of them\n\
         (`policy_denied`, `preview_required`, `stale_preview`) are also HTTP errors above, with\n\
         another status or meaning there: a commit refusal is told apart by its 409 and\n\
         `details.recorded`.\n",
    );
    section(&mut out, case_refusals::ALL);
    out.push_str(
        "\n## Rule and envelope diagnostics\n\n\
         `tollgate rules check`, `tollgate policy check` and the routes that take rule packs or\n\
         envelopes report these with the file, line and column they concern, the offending text\n\
         underlined, and a `help:` line for the case at hand; so do the commands that read a\n\
         request or items file (`E-request`, `E-items`). `E-` codes are errors (nothing is\n\
         stored or evaluated); `W-` codes are warnings.\n",
    );
    for c in tollgate_engine::diag::codes::ALL {
        let _ = write!(
            out,
            "\n### {}\n\n{}\n\n**What to do:** {}\n",
            c.id, c.summary, c.remedy
        );
    }
    out
}
