//! `tollgate compile --items FILE.json [--envelope PATH]... [--budget N] [--explain] [--json]`:
//! compiles candidate context items, under a set of envelopes when given.
//!
//! The items file is a [`CompileInput`]: `{"items": [...], "settings": {...}, "subject":
//! {...}}`, or a bare array of items. Policy needs to know which run the context is for: that
//! is the file's `subject` (run, agent, task, scope, clearance), as in a `policy decide`
//! request file, so one file holds everything a compile is decided on.
//!
//! Output: the compiled text on stdout (a one-line account on stderr); `--explain` prints the
//! outcome of every item instead, with the rules and proofs of policy decisions; `--json`
//! prints the whole [`CompiledContext`] (text, hash, outcomes, decisions) and wins over
//! `--explain`. Exit codes: 0 compiled (whatever was excluded); 1 evaluating the envelopes hit
//! a limit; 2 a bad items file, bad envelopes or bad flags.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::envelope_arg::load;
use anyhow::{Context, Result};
use clap::Args;
use tollgate_engine::ast::Span;
use tollgate_engine::diag::{Diagnostic, Source};
use tollgate_gateway::compiler::{CompileInput, CompilePolicy, CompiledContext, compile};
use tollgate_rules::decide::{PolicyEngine, PolicyError};
use tollgate_rules::request::subject_facts;

#[derive(Args, Debug)]
pub struct CompileArgs {
    /// The items: a JSON file with `items` (id, kind, content or reference, tokens, weight,
    /// scope, sensitivity, labels, summary, role), optional `settings` (budget, kind_budgets,
    /// order, tokenizer) and `subject` (the run, needed with --envelope); or a bare array of
    /// items.
    #[arg(long)]
    items: PathBuf,
    /// Envelope files or folders (their `*.yaml`, `*.yml`, `*.json`); every item is decided
    /// under them for the items file's `subject` before anything is rendered.
    #[arg(long = "envelope", short = 'e')]
    envelopes: Vec<PathBuf>,
    /// The token budget (overrides the file's `settings.budget`).
    #[arg(long)]
    budget: Option<u32>,
    /// The tokenizer: o200k_base, cl100k_base or bytes4 (overrides `settings.tokenizer`).
    #[arg(long)]
    tokenizer: Option<String>,
    /// Print every item's outcome and reason, with the rules and proofs of policy decisions,
    /// instead of the compiled text.
    #[arg(long)]
    explain: bool,
    /// Print the whole compiled context as JSON: text, hash, tokens and every outcome, with
    /// the policy decisions and their proofs (wins over --explain).
    #[arg(long)]
    json: bool,
}

const ITEMS_HELP: &str = "an items file is `{\"items\": [...], \"settings\": {...}, \"subject\": {...}}` or a bare array of items; an item has `id`, `kind` (file | doc | message | tool_result | memory | summary) and `content`, `reference` or `tokens`; see fixtures/compile/items.json";

pub fn run(args: CompileArgs) -> Result<ExitCode> {
    let text = std::fs::read_to_string(&args.items)
        .with_context(|| format!("cannot read `{}`", args.items.display()))?;
    let mut input: CompileInput = match serde_json::from_str(&text) {
        Ok(input) => input,
        Err(e) => {
            let at = offset_of(&text, e.line(), e.column());
            let source = Source::new(args.items.display().to_string(), text.clone());
            eprint!(
                "{}",
                Diagnostic::error(
                    tollgate_engine::diag::codes::ITEMS,
                    format!("invalid items file: {e}"),
                    Span::new(at, at + 1)
                )
                .with_help(ITEMS_HELP)
                .render(&source)
            );
            return Ok(ExitCode::from(2));
        }
    };
    if let Some(budget) = args.budget {
        input.settings.budget = budget;
    }
    if let Some(tokenizer) = &args.tokenizer {
        input.settings.tokenizer.clone_from(tokenizer);
    }
    let engine = if args.envelopes.is_empty() {
        None
    } else {
        let Some(subject) = &input.subject else {
            eprintln!(
                "error: `--envelope` needs the run the context is compiled for: add \
                 `\"subject\": {{\"run\": ..., \"agent\": ..., \"task\": ..., \"scope\": ..., \
                 \"clearance\": ...}}` to `{}`",
                args.items.display()
            );
            return Ok(ExitCode::from(2));
        };
        let set = match load(&args.envelopes)? {
            Ok(set) => set,
            Err(code) => return Ok(code),
        };
        match PolicyEngine::new(&set, &subject_facts(std::slice::from_ref(subject), &[])) {
            Ok(engine) => Some((engine, subject.run.clone())),
            Err(e @ PolicyError::Eval(_)) => {
                eprintln!("error: {e}");
                return Ok(ExitCode::from(1));
            }
            Err(e) => return Err(e.into()),
        }
    };
    let policy = engine.as_ref().map(|(engine, run)| CompilePolicy {
        engine,
        run,
        memo: None,
    });
    let compiled = match compile(&input, policy.as_ref()) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}\n  --> {}", args.items.display());
            return Ok(ExitCode::from(2));
        }
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&compiled)?);
    } else if args.explain {
        print!("{}", compiled.explain());
    } else {
        print!("{}", compiled.text);
        eprintln!("{}", account(&compiled));
    }
    Ok(ExitCode::SUCCESS)
}

/// The first line of the explanation: items, tokens, hash.
fn account(c: &CompiledContext) -> String {
    c.explain().lines().next().unwrap_or_default().to_string()
}

/// Byte offset of a one-based line and column (serde_json's columns count bytes).
fn offset_of(text: &str, line: usize, column: usize) -> usize {
    let start: usize = text
        .split_inclusive('\n')
        .take(line.saturating_sub(1))
        .map(str::len)
        .sum();
    (start + column.saturating_sub(1)).min(text.len())
}
