//! `tollgate rules eval | check | explain | test`: Soufflé's conventions for programs, fact
//! files and output files; pack test files (`*.test.yaml`) run against the built-in packs or a
//! user pack.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand};
use tollgate_engine::diag::{Source, SourcedDiagnostic};
use tollgate_engine::preprocess;
use tollgate_engine::{EvalError, Fact, FactSet, Limits, Model, Program, tsv};
use tollgate_gateway::rules::pack_test::PackTester;

#[derive(Subcommand, Debug)]
pub enum RulesCommand {
    /// Evaluate a program: `.input r` reads `FACT_DIR/r.facts`, `.output r` writes
    /// `OUT_DIR/r.csv` (tab-separated, rows sorted).
    #[command(
        after_help = "Examples:\n  tollgate rules eval fixtures/rules/tool_policy/policy.dl -F fixtures/rules/tool_policy -D -\n  tollgate rules eval program.dl -F facts -D out        # as `souffle -F facts -D out program.dl`"
    )]
    Eval(EvalArgs),
    /// Check programs and print diagnostics; exit 2 if any has errors.
    Check(CheckArgs),
    /// Explain a fact: its proof if it holds, why not if it does not.
    #[command(
        after_help = "Examples:\n  tollgate rules explain fixtures/rules/tool_policy/policy.dl -F fixtures/rules/tool_policy --fact 'decision(\"r4\", \"require_approval\")'\n  tollgate rules explain fixtures/rules/tool_policy/policy.dl -F fixtures/rules/tool_policy --fact 'decision(\"r3\", \"allow\")' --json"
    )]
    Explain(ExplainArgs),
    /// Run pack test files: given facts, expected facts, expected absences and decisions.
    /// Exit 1 if a case fails, 2 if a file cannot be read.
    Test(TestArgs),
}

#[derive(Args, Debug)]
pub struct EvalInputs {
    /// The Datalog program.
    program: PathBuf,
    /// Folder of input fact files (`r.facts`); may be absent. Default: the program's
    /// `.pragma "fact-dir"`, else the working folder.
    #[arg(short = 'F', long = "facts")]
    fact_dir: Option<PathBuf>,
    /// A folder searched for `#include`d files after the including file's own (as `cpp -I`);
    /// may be given several times.
    #[arg(short = 'I', long = "include-dir")]
    include_dirs: Vec<PathBuf>,
    /// Most facts derived before stopping with an error.
    #[arg(long, default_value_t = 50_000_000)]
    max_facts: usize,
    /// Most rounds of one stratum before stopping with an error.
    #[arg(long, default_value_t = 1_000_000)]
    max_iterations: usize,
    /// Stop after this many milliseconds.
    #[arg(long)]
    timeout_ms: Option<u64>,
}

#[derive(Args, Debug)]
pub struct EvalArgs {
    #[command(flatten)]
    inputs: EvalInputs,
    /// Folder for output files, or `-` to print every output relation to stdout. Default: the
    /// program's `.pragma "output-dir"`, else the working folder.
    #[arg(short = 'D', long = "output")]
    out_dir: Option<String>,
    /// Print the outputs as JSON (`{"relations": {...}, "hash": ...}`) instead of writing files.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
pub struct CheckArgs {
    /// Programs, or folders searched for `*.dl` files. A folder holding a `vocabulary.dl` is a
    /// pack: its files are checked together as one program.
    #[arg(required = true)]
    paths: Vec<PathBuf>,
    /// Check each path (a file, or a folder's files together) as a pack written against the
    /// built-in policy vocabulary.
    #[arg(long)]
    pack: bool,
    /// Machine-readable diagnostics.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
pub struct ExplainArgs {
    #[command(flatten)]
    inputs: EvalInputs,
    /// The fact to explain, e.g. `path("a", "d")`.
    #[arg(long)]
    fact: String,
    /// Print the proof or why-not as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
pub struct TestArgs {
    /// Test files, or folders searched for `*.test.yaml`.
    #[arg(required = true)]
    paths: Vec<PathBuf>,
    /// Print the report as JSON (cases, failures with proofs or why-nots, input errors).
    #[arg(long)]
    json: bool,
}

pub fn run(cmd: RulesCommand) -> Result<ExitCode> {
    match cmd {
        RulesCommand::Eval(a) => eval(a),
        RulesCommand::Check(a) => check(a),
        RulesCommand::Explain(a) => explain(a),
        RulesCommand::Test(a) => test(a),
    }
}

/// Loads, preprocesses and compiles a program, printing diagnostics; `Err(code)` when it has
/// errors.
fn load_program(
    path: &Path,
    include_dirs: &[PathBuf],
) -> Result<std::result::Result<Program, ExitCode>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read `{}`", path.display()))?;
    let source = Source::new(path.display().to_string(), text);
    let compiled = preprocessed(&source, include_dirs).and_then(|source| {
        Program::compile(&source)
            .map_err(|diags| diags.into_iter().map(|d| d.with_source(&source)).collect())
    });
    match compiled {
        Ok(p) => {
            for w in p.warnings() {
                eprint!("{}", w.render(p.source()));
            }
            Ok(Ok(p))
        }
        Err(diags) => {
            for d in &diags {
                eprint!("{}", d.diagnostic.render(&d.source));
            }
            let n = diags.iter().filter(|d| d.diagnostic.is_error()).count();
            eprintln!(
                "error: `{}` has {n} error{}",
                path.display(),
                if n == 1 { "" } else { "s" }
            );
            Ok(Err(ExitCode::from(2)))
        }
    }
}

/// A program file run through the preprocessor (`#include` relative to the file, then
/// `include_dirs`); `#warning`s are printed.
fn preprocessed(
    source: &Source,
    include_dirs: &[PathBuf],
) -> std::result::Result<Source, Vec<SourcedDiagnostic>> {
    if !preprocess::has_directives(&source.text) {
        return Ok(source.clone());
    }
    let includes = preprocess::FileIncludes {
        dirs: include_dirs.to_vec(),
    };
    let pre = preprocess::preprocess(source, &includes)?;
    for w in &pre.warnings {
        eprint!("{}", w.diagnostic.render(&w.source));
    }
    Ok(pre.source)
}

fn limits(inputs: &EvalInputs) -> Limits {
    let deadline = inputs.timeout_ms.map(|ms| {
        let end = Instant::now() + Duration::from_millis(ms);
        Arc::new(move || Instant::now() >= end) as tollgate_engine::Deadline
    });
    Limits {
        max_facts: inputs.max_facts,
        max_iterations: inputs.max_iterations,
        deadline,
    }
}

/// Reads every `.input` relation's fact file from the facts folder.
fn read_facts(program: &Program, dir: &Path) -> Result<FactSet> {
    let mut facts = FactSet::new();
    for rel in &program.ir().relations {
        let Some(params) = &rel.input else { continue };
        let name = tsv::filename(params, &format!("{}.facts", rel.name));
        let path = dir.join(&name);
        if !path.exists() {
            continue;
        }
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("cannot read `{}`", path.display()))?;
        let records = &program.ir().records;
        tsv::parse_facts(
            &text,
            &name,
            rel,
            &tsv::delimiter(params),
            records,
            &mut facts,
        )?;
    }
    Ok(facts)
}

/// The value of the program's last `.pragma KEY` (Soufflé: a later pragma overrides an earlier).
fn pragma<'a>(program: &'a Program, key: &str) -> Option<&'a str> {
    program
        .ir()
        .pragmas
        .iter()
        .rev()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

fn evaluate(
    inputs: &EvalInputs,
    with_proofs: bool,
) -> Result<std::result::Result<(Program, FactSet, Model), ExitCode>> {
    let program = match load_program(&inputs.program, &inputs.include_dirs)? {
        Ok(p) => p,
        Err(code) => return Ok(Err(code)),
    };
    // The command line wins over the program's pragma, as in Soufflé.
    let fact_dir = inputs
        .fact_dir
        .clone()
        .or_else(|| pragma(&program, "fact-dir").map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from("."));
    let facts = read_facts(&program, &fact_dir)?;
    let limits = limits(inputs);
    let result = if with_proofs {
        program.materialise(&facts, &limits)
    } else {
        program.evaluate(&facts, &limits)
    };
    match result {
        Ok(model) => Ok(Ok((program, facts, model))),
        Err(e @ EvalError::BadFact { .. }) => {
            eprintln!("error: {e}");
            Ok(Err(ExitCode::from(2)))
        }
        Err(e @ EvalError::RecordDepth { .. }) => {
            eprintln!("error: {e}");
            eprintln!(
                "  = help: a rule builds records inside records without end: bound the recursion that nests them (as `len < 100`)"
            );
            Ok(Err(ExitCode::from(1)))
        }
        Err(e) => {
            eprintln!("error: {e}");
            eprintln!(
                "  = help: raise --max-facts, --max-iterations or --timeout-ms, or check the program for unbounded recursion"
            );
            Ok(Err(ExitCode::from(1)))
        }
    }
}

fn eval(args: EvalArgs) -> Result<ExitCode> {
    let (program, _, model) = match evaluate(&args.inputs, false)? {
        Ok(x) => x,
        Err(code) => return Ok(code),
    };
    let outputs = model.outputs();
    if args.json {
        let doc = serde_json::json!({ "relations": outputs.to_json(), "hash": outputs.hash() });
        println!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(ExitCode::SUCCESS);
    }
    let out_dir = args
        .out_dir
        .clone()
        .or_else(|| pragma(&program, "output-dir").map(str::to_owned))
        .unwrap_or_else(|| ".".to_owned());
    let to_stdout = out_dir == "-";
    let out_dir = PathBuf::from(out_dir);
    if !to_stdout {
        std::fs::create_dir_all(&out_dir)
            .with_context(|| format!("cannot create `{}`", out_dir.display()))?;
    }
    for rel in &program.ir().relations {
        if let Some(params) = &rel.output {
            let text = outputs.to_text(&rel.name, &tsv::delimiter(params));
            // Soufflé's `.output r(IO=stdout)` prints the relation whatever `-D` says.
            let io_stdout = params.iter().any(|(k, v)| k == "IO" && v == "stdout");
            if to_stdout || io_stdout {
                println!("---------------\n{}\n===============", rel.name);
                print!("{text}");
                println!("===============");
            } else {
                let path = out_dir.join(tsv::filename(params, &format!("{}.csv", rel.name)));
                std::fs::write(&path, text)
                    .with_context(|| format!("cannot write `{}`", path.display()))?;
            }
        }
        if rel.printsize {
            println!(
                "{}\t{}",
                rel.name,
                model.sizes().get(&rel.name).copied().unwrap_or(0)
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The `.dl` files under a folder, sorted.
fn dl_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let entries =
            std::fs::read_dir(&dir).with_context(|| format!("cannot read `{}`", dir.display()))?;
        for e in entries.filter_map(|e| e.ok().map(|e| e.path())) {
            if e.is_dir() {
                stack.push(e);
            } else if e.extension().is_some_and(|x| x == "dl") {
                out.push(e);
            }
        }
    }
    out.sort();
    Ok(out)
}

/// What `rules check` compiles: groups of files read as one program each.
fn collect_programs(paths: &[PathBuf], pack: bool) -> Result<Vec<Vec<PathBuf>>> {
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            let files = dl_files(p)?;
            let is_pack_folder = p.join("vocabulary.dl").is_file();
            if pack || is_pack_folder {
                // The vocabulary first: packs use its declarations.
                let (mut group, rest): (Vec<PathBuf>, Vec<PathBuf>) = files
                    .into_iter()
                    .partition(|f| f.file_name().is_some_and(|n| n == "vocabulary.dl"));
                group.extend(rest);
                if !group.is_empty() {
                    out.push(group);
                }
            } else {
                out.extend(files.into_iter().map(|f| vec![f]));
            }
        } else if p.exists() {
            out.push(vec![p.clone()]);
        } else {
            bail!("`{}` does not exist", p.display());
        }
    }
    Ok(out)
}

fn check(args: CheckArgs) -> Result<ExitCode> {
    let files = collect_programs(&args.paths, args.pack)?;
    let mut all = Vec::new();
    let mut errors = 0usize;
    for group in &files {
        let mut sources = Vec::with_capacity(group.len());
        for path in group {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read `{}`", path.display()))?;
            sources.push(Source::new(path.display().to_string(), text));
        }
        let source = if args.pack {
            tollgate_gateway::rules::packs::with_vocabulary(&sources)
        } else {
            Source::join(&sources)
        };
        // A program file is preprocessed (as `rules eval` does); a pack is not.
        let source = match (args.pack, group.len()) {
            (false, 1) => preprocessed(&source, &[]),
            _ => Ok(source),
        };
        let diags: Vec<SourcedDiagnostic> = match source {
            Err(d) => d,
            Ok(source) => match Program::compile(&source) {
                Ok(p) => p
                    .warnings()
                    .iter()
                    .map(|w| w.clone().with_source(&source))
                    .collect(),
                Err(d) => d.into_iter().map(|d| d.with_source(&source)).collect(),
            },
        };
        errors += diags.iter().filter(|d| d.diagnostic.is_error()).count();
        for d in &diags {
            if args.json {
                all.push(d.diagnostic.located(&d.source));
            } else {
                eprint!("{}", d.diagnostic.render(&d.source));
            }
        }
    }
    if args.json {
        let doc = serde_json::json!({ "files": files.len(), "errors": errors, "diagnostics": all });
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else if errors == 0 {
        println!(
            "{} program{} checked, no errors",
            files.len(),
            if files.len() == 1 { "" } else { "s" }
        );
    } else {
        eprintln!(
            "{errors} error{} in {} program{}",
            if errors == 1 { "" } else { "s" },
            files.len(),
            if files.len() == 1 { "" } else { "s" }
        );
    }
    Ok(if errors > 0 {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    })
}

fn explain(args: ExplainArgs) -> Result<ExitCode> {
    let fact = match Fact::parse(&args.fact) {
        Ok(f) => f,
        Err(d) => {
            eprint!("{}", d.render(&Source::new("--fact", args.fact.clone())));
            return Ok(ExitCode::from(2));
        }
    };
    let (_, _, model) = match evaluate(&args.inputs, true)? {
        Ok(x) => x,
        Err(code) => return Ok(code),
    };
    if model.contains(&fact) {
        let proof = model.prove(&fact)?;
        if args.json {
            let doc = serde_json::json!({ "holds": true, "proof": proof });
            println!("{}", serde_json::to_string_pretty(&doc)?);
        } else {
            print!("{}", proof.to_text());
        }
    } else {
        let why = match model.why_not(&fact) {
            Ok(w) => w,
            Err(e) => {
                eprintln!("error: {e}");
                return Ok(ExitCode::from(2));
            }
        };
        if args.json {
            let doc = serde_json::json!({ "holds": false, "why_not": why });
            println!("{}", serde_json::to_string_pretty(&doc)?);
        } else {
            print!("{}", why.to_text());
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn test(args: TestArgs) -> Result<ExitCode> {
    let report = PackTester::default().run_paths(&args.paths);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        for e in &report.errors {
            eprint!("{}", e.render());
        }
        print!("{}", report.to_text());
    }
    Ok(if !report.errors.is_empty() {
        ExitCode::from(2)
    } else if report.failed > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
