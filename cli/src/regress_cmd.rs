//! `tollgate regress`: regression cases from recorded runs and replays, run offline as a
//! suite (text, JSON or JUnit), and changed on purpose as new versions.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand, ValueEnum};
use tollgate_gateway::recorder::Recorder;
use tollgate_gateway::recorder::format::RunFile;
use tollgate_gateway::regress::execute::{load, run_case};
use tollgate_gateway::regress::jobs::load_stored;
use tollgate_gateway::regress::suite::{discover, run_suite};
use tollgate_gateway::regress::target::Target;
use tollgate_gateway::regress::templates::Template;
use tollgate_gateway::regress::update::update;
use tollgate_gateway::regress::{CaseOptions, from_replay, from_run, render, write};
use tollgate_gateway::replay::store as replay_store;

use crate::store_arg;

/// Where cases are written and looked for unless told otherwise.
const DEFAULT_DIR: &str = "regressions";

#[derive(Subcommand, Debug)]
pub enum RegressCommand {
    /// Make a case from a recorded run (or one of its steps): a scrubbed fixture bundle and
    /// assertions that hold on it, written as `DIR/ID.yaml` and `DIR/fixtures/ID.json`.
    FromRun(FromRunArgs),
    /// Make a case from a counterfactual replay result (`rpl-…`): its step and mutations, and
    /// assertions on what they lead to.
    FromReplay(FromReplayArgs),
    /// Run every case under PATH offline (no server, no network); exit 1 when a case fails or
    /// does not load. Flaky cases (mixed over `--repeat`) are reported apart and do not fail.
    #[command(
        after_help = "Examples:\n  tollgate regress run regressions\n  tollgate regress run regressions --format junit --report regress.xml --repeat 3"
    )]
    Run(SuiteArgs),
    /// Accept what a case does now as its next version: passing assertions kept, failing ones
    /// rewritten to the current outcome; prints the diff.
    Update(UpdateArgs),
    /// Write a case kept in the store (made over HTTP) as files: `DIR/ID.yaml` and its bundle.
    Pull(PullArgs),
    /// Find the change of a target (its compile settings or envelope files, in git history)
    /// that made a case start failing; exit 1 when one is found.
    Bisect(crate::regress_bisect::BisectArgs),
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum TemplateArg {
    CompileShape,
    ToolBehavior,
    PolicyDecisions,
    OutputStructure,
    ArtifactQuality,
}

impl From<TemplateArg> for Template {
    fn from(t: TemplateArg) -> Template {
        match t {
            TemplateArg::CompileShape => Template::CompileShape,
            TemplateArg::ToolBehavior => Template::ToolBehavior,
            TemplateArg::PolicyDecisions => Template::PolicyDecisions,
            TemplateArg::OutputStructure => Template::OutputStructure,
            TemplateArg::ArtifactQuality => Template::ArtifactQuality,
        }
    }
}

/// How a case is written.
#[derive(Args, Debug)]
struct CaseFlags {
    /// The directory the case goes in.
    #[arg(long, default_value = DEFAULT_DIR)]
    output: PathBuf,
    /// The case id (default: from the run and step, or the replay).
    #[arg(long)]
    id: Option<String>,
    /// A name for people.
    #[arg(long)]
    name: Option<String>,
    /// The task type, for coverage (default: the run's `metadata.task_type`, else
    /// `unspecified`).
    #[arg(long)]
    task_type: Option<String>,
    /// Assertion templates to write (repeatable; default all).
    #[arg(long = "template", value_enum)]
    templates: Vec<TemplateArg>,
    /// Replace a case of the same id.
    #[arg(long)]
    force: bool,
}

impl CaseFlags {
    fn options(&self, step: Option<u32>) -> CaseOptions {
        CaseOptions {
            step,
            id: self.id.clone(),
            name: self.name.clone(),
            task_type: self.task_type.clone(),
            templates: self.templates.iter().map(|t| Template::from(*t)).collect(),
        }
    }
}

#[derive(Args, Debug)]
pub struct FromRunArgs {
    /// The run id, in the store (`tollgate runs import` puts run files there).
    run: Option<String>,
    /// Read the run from a run file instead of the store.
    #[arg(long, conflicts_with = "run")]
    file: Option<PathBuf>,
    /// Cover only this step.
    #[arg(long)]
    step: Option<u32>,
    #[command(flatten)]
    case: CaseFlags,
}

#[derive(Args, Debug)]
pub struct FromReplayArgs {
    /// The replay result (`rpl-…`).
    replay: String,
    #[command(flatten)]
    case: CaseFlags,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Format {
    Text,
    Json,
    Junit,
}

#[derive(Args, Debug)]
pub struct SuiteArgs {
    /// A case file, or a directory searched for `.yaml` case files.
    #[arg(default_value = DEFAULT_DIR)]
    path: PathBuf,
    /// How to print the report.
    #[arg(long, value_enum, default_value = "text")]
    format: Format,
    /// Run each case this many times; mixed results make a case flaky.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100))]
    repeat: u32,
    /// Write the report to this file instead of standard output (the summary line still
    /// goes to standard error).
    #[arg(long)]
    report: Option<PathBuf>,
    /// Worker threads (default: the machine's cores).
    #[arg(long)]
    threads: Option<usize>,
    /// What the cases run against: a target file (envelope folder and compile settings).
    /// Default: `target.yaml` in PATH when there is one, else what each bundle recorded.
    #[arg(long)]
    target: Option<PathBuf>,
    /// Run against what each bundle recorded, even when PATH has a `target.yaml`.
    #[arg(long, conflicts_with = "target")]
    recorded: bool,
}

#[derive(Args, Debug)]
pub struct PullArgs {
    /// The case id.
    id: String,
    /// A version (default the latest).
    #[arg(long)]
    version: Option<u32>,
    /// The directory the files go in.
    #[arg(long, default_value = DEFAULT_DIR)]
    output: PathBuf,
    /// Replace files of the same case.
    #[arg(long)]
    force: bool,
}

#[derive(Args, Debug)]
pub struct UpdateArgs {
    /// The case file.
    case: PathBuf,
    /// Why the expectations change (kept in the case's `changes`).
    #[arg(long)]
    reason: String,
    /// Write every assertion again from the case's templates instead.
    #[arg(long)]
    regenerate: bool,
    /// Print the diff without writing.
    #[arg(long)]
    dry_run: bool,
    /// Accept the outcome under this target file (default: `target.yaml` beside the case
    /// when there is one, else what the bundle recorded).
    #[arg(long)]
    target: Option<PathBuf>,
}

/// The target: the one named, else `target.yaml` in `dir` when there is one, else recorded;
/// with the LLM judge when the environment turns it on (`TOLLGATE_LLM_JUDGE=on`).
fn target_for(named: Option<&Path>, dir: &Path, recorded: bool) -> Result<Target> {
    let judge = tollgate_gateway::evaluators::Judge::from_env()?;
    Ok(target_file(named, dir, recorded)?.with_judge(judge))
}

fn target_file(named: Option<&Path>, dir: &Path, recorded: bool) -> Result<Target> {
    if recorded {
        return Ok(Target::recorded());
    }
    match named {
        Some(path) => Ok(Target::load(path)?),
        None => {
            let beside = dir.join("target.yaml");
            if beside.is_file() {
                Ok(Target::load(&beside)?)
            } else {
                Ok(Target::recorded())
            }
        }
    }
}

pub fn run(cmd: RegressCommand) -> Result<ExitCode> {
    match cmd {
        RegressCommand::FromRun(a) => {
            let file = match (&a.run, &a.file) {
                (_, Some(path)) => read_run_file(path)?,
                (Some(run), None) => Recorder::new(store_arg::open()?)
                    .export(run)
                    .with_context(|| format!("run `{run}`"))?,
                (None, None) => bail!(
                    "name a run (`tollgate regress from-run RUN`) or a run file (`--file RUN.json`)"
                ),
            };
            let (case, bundle) = from_run(&file, &a.case.options(a.step))?;
            let path = write(&a.case.output, &case, &bundle, a.case.force)?;
            written(&path, &case.bundle.path, &bundle, case.assertions.len());
            Ok(ExitCode::SUCCESS)
        }
        RegressCommand::FromReplay(a) => {
            let store = store_arg::open()?;
            let Some(result) = replay_store::result(&store, &a.replay)? else {
                bail!("no replay result `{}` (`tollgate replay list`)", a.replay);
            };
            let file = Recorder::new(store)
                .export(&result.run)
                .with_context(|| format!("run `{}`", result.run))?;
            let (case, bundle) = from_replay(&file, &result, &a.case.options(result.step))?;
            let path = write(&a.case.output, &case, &bundle, a.case.force)?;
            written(&path, &case.bundle.path, &bundle, case.assertions.len());
            Ok(ExitCode::SUCCESS)
        }
        RegressCommand::Run(a) => suite(&a),
        RegressCommand::Bisect(a) => crate::regress_bisect::run(&a),
        RegressCommand::Pull(a) => {
            let store = store_arg::open()?;
            let (case, bundle) = load_stored(&store, &a.id, a.version)?;
            let path = write(&a.output, &case, &bundle, a.force)?;
            written(&path, &case.bundle.path, &bundle, case.assertions.len());
            Ok(ExitCode::SUCCESS)
        }
        RegressCommand::Update(a) => {
            let loaded = load(&a.case)?;
            let dir = a.case.parent().unwrap_or(Path::new("."));
            let target = target_for(a.target.as_deref(), dir, false)?;
            let Some(u) = update(
                &loaded.case,
                &loaded.bundle,
                &target,
                &a.reason,
                a.regenerate,
            )?
            else {
                let passed = run_case(&loaded.case, &loaded.bundle, &target)?.passed;
                println!(
                    "{} version {}: nothing to change ({})",
                    loaded.case.id,
                    loaded.case.version,
                    if passed {
                        "every assertion passes"
                    } else {
                        "the templates write the same assertions"
                    }
                );
                return Ok(ExitCode::SUCCESS);
            };
            print!("{}", u.diff);
            for d in &u.dropped {
                eprintln!("dropped {d}: it fails now and cannot be rewritten from the outcome");
            }
            if a.dry_run {
                eprintln!("dry run: {} not written", a.case.display());
            } else {
                std::fs::write(&a.case, u.case.to_yaml())
                    .with_context(|| format!("cannot write {}", a.case.display()))?;
                eprintln!(
                    "wrote {} version {} ({} assertion(s) rewritten, {} dropped)",
                    a.case.display(),
                    u.case.version,
                    u.rewritten,
                    u.dropped.len()
                );
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn read_run_file(path: &Path) -> Result<RunFile> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("{} is not a run file", path.display()))
}

fn written(
    path: &Path,
    bundle_path: &str,
    bundle: &tollgate_gateway::regress::bundle::FixtureBundle,
    assertions: usize,
) {
    let redacted: usize = bundle.redactions.values().sum();
    println!("wrote {}", path.display());
    println!(
        "  fixture {bundle_path}: {} step(s), {} event(s), {redacted} value(s) redacted",
        bundle.run.steps.len(),
        bundle.run.events.len()
    );
    println!(
        "  {assertions} assertion(s); run it with `tollgate regress run {}`",
        path.display()
    );
}

fn suite(a: &SuiteArgs) -> Result<ExitCode> {
    let paths = discover(&a.path)?;
    if paths.is_empty() {
        bail!(
            "no case under {} (cases are `.yaml` files; `tollgate regress from-run RUN` makes one)",
            a.path.display()
        );
    }
    let threads = a.threads.unwrap_or_else(|| {
        std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
    });
    let dir = if a.path.is_dir() {
        a.path.as_path()
    } else {
        a.path.parent().unwrap_or(Path::new("."))
    };
    let target = target_for(a.target.as_deref(), dir, a.recorded)?;
    let report = run_suite(
        &a.path.display().to_string(),
        &paths,
        a.repeat,
        threads,
        &target,
    );
    let text = match a.format {
        Format::Text => render::text(&report),
        Format::Json => render::json(&report),
        Format::Junit => render::junit(&report),
    };
    match &a.report {
        Some(path) => {
            std::fs::write(path, &text)
                .with_context(|| format!("cannot write {}", path.display()))?;
            let f = &report.figures;
            eprintln!(
                "{} case(s): {} passed, {} failed, {} flaky, {} error(s); report in {}",
                f.cases,
                f.passed,
                f.failed,
                f.flaky,
                f.errors,
                path.display()
            );
        }
        None => print!("{text}"),
    }
    Ok(if report.failed() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
