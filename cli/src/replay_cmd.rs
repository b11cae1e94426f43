//! `tollgate replay`: `exact` recompiles every step of a recorded run and reports drift
//! (exit 1); `scenario`, `run`, `batch`, `show` and `list` are counterfactual replay — a
//! recorded run rerun with mutations, compared with its baseline.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand, ValueEnum};
use serde::de::DeserializeOwned;
use tollgate_gateway::clock::now_rfc3339;
use tollgate_gateway::compiler::ItemKind;
use tollgate_gateway::memory::MemoryClass;
use tollgate_gateway::recorder::Recorder;
use tollgate_gateway::replay::batch::{BatchSpec, Sweep};
use tollgate_gateway::replay::export::{draft_yaml, regression_draft};
use tollgate_gateway::replay::jobs::{
    batch_view, create_batch, create_scenario, execute_scenario, run_batch,
};
use tollgate_gateway::replay::replay_exact;
use tollgate_gateway::replay::scenario::{
    ModelSource, Mutation, OutcomeMetric, ScenarioSpec, SummaryForm, ToolMode,
};
use tollgate_gateway::replay::store::{self, ResultFilter};

use crate::store_arg;

#[derive(Subcommand, Debug)]
pub enum ReplayCommand {
    /// Recompile every step from the recorded items and settings, serve recorded model and
    /// tool outputs, and report per step whether hashes, outputs and decisions match; exit 1
    /// on any drift.
    Exact(ExactArgs),
    /// Create a counterfactual scenario: a recorded run (or step) and mutations, from a
    /// YAML/JSON file or flags; checked against the run.
    Scenario(Box<ScenarioArgs>),
    /// Execute a scenario (its `scn-…` id, or a scenario file) against its run's baseline and
    /// print the comparison.
    Run(RunArgs),
    /// Run many mutations against one baseline, in the foreground with progress (or as a
    /// background job with `--background`).
    Batch(BatchArgs),
    /// Show a result (`rpl-…`) or a batch (`bat-…`).
    Show(ShowArgs),
    /// List results, newest first.
    List(ListArgs),
    /// Draft a regression case from a result: its mutations and assertions that hold on it,
    /// as YAML.
    Export(ExportArgs),
}

#[derive(Args, Debug)]
pub struct ExactArgs {
    /// Run id.
    run: String,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum ModeArg {
    DryRun,
    StubbedTool,
}

/// Mutations and settings given as flags.
#[derive(Args, Debug, Default)]
struct MutationFlags {
    /// The recorded run.
    #[arg(long)]
    run: Option<String>,
    /// Only this step.
    #[arg(long)]
    step: Option<u32>,
    /// A name for the scenario.
    #[arg(long)]
    name: Option<String>,
    /// Drop an item (repeatable).
    #[arg(long = "drop", value_name = "ITEM")]
    drop: Vec<String>,
    /// Weigh an item differently: `ITEM=WEIGHT` (repeatable).
    #[arg(long = "weight", value_name = "ITEM=WEIGHT")]
    weight: Vec<String>,
    /// The total token budget.
    #[arg(long)]
    budget: Option<u32>,
    /// A kind's budget: `KIND=TOKENS` (repeatable).
    #[arg(long = "kind-budget", value_name = "KIND=TOKENS")]
    kind_budget: Vec<String>,
    /// Offer an item as its summary only (repeatable).
    #[arg(long = "summary", value_name = "ITEM")]
    summary: Vec<String>,
    /// Offer an item without its summary (repeatable).
    #[arg(long = "raw", value_name = "ITEM")]
    raw: Vec<String>,
    /// Disable an envelope rule, `ENVELOPE/RULE` (repeatable).
    #[arg(long = "disable-rule", value_name = "RULE")]
    disable_rule: Vec<String>,
    /// Offer no memory of a class (repeatable).
    #[arg(long = "disable-class", value_name = "CLASS")]
    disable_class: Vec<String>,
    /// Drop a retrieved doc (repeatable).
    #[arg(long = "drop-doc", value_name = "ITEM")]
    drop_doc: Vec<String>,
    /// How tools are served.
    #[arg(long, value_enum)]
    mode: Option<ModeArg>,
    /// Answer changed model calls with the configured provider (TOLLGATE_PROVIDER...), not
    /// the fake one.
    #[arg(long)]
    live: bool,
    /// A metric the label is judged on (repeatable; default all).
    #[arg(long = "metric", value_name = "METRIC")]
    metric: Vec<String>,
}

impl MutationFlags {
    fn mutations(&self) -> Result<Vec<Mutation>> {
        let mut out = Vec::new();
        let pair = |text: &str, what: &str| -> Result<(String, String)> {
            text.split_once('=')
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .with_context(|| format!("`{text}` is not {what}"))
        };
        out.extend(
            self.drop
                .iter()
                .map(|i| Mutation::DropItem { item: i.clone() }),
        );
        for w in &self.weight {
            let (item, weight) = pair(w, "ITEM=WEIGHT")?;
            let weight: f64 = weight
                .parse()
                .with_context(|| format!("`{weight}` is not a weight (a number >= 0)"))?;
            out.push(Mutation::ChangeWeight { item, weight });
        }
        if let Some(budget) = self.budget {
            out.push(Mutation::ChangeBudget {
                item_kind: None,
                budget,
            });
        }
        for k in &self.kind_budget {
            let (kind, tokens) = pair(k, "KIND=TOKENS")?;
            let item_kind: ItemKind = serde_json::from_value(serde_json::Value::String(
                kind.clone(),
            ))
            .with_context(|| {
                format!("`{kind}` is not a kind: file, doc, message, tool_result, memory, summary")
            })?;
            let budget = tokens
                .parse()
                .with_context(|| format!("`{tokens}` is not a number of tokens"))?;
            out.push(Mutation::ChangeBudget {
                item_kind: Some(item_kind),
                budget,
            });
        }
        out.extend(self.summary.iter().map(|i| Mutation::SwapSummary {
            item: i.clone(),
            to: SummaryForm::Summary,
        }));
        out.extend(self.raw.iter().map(|i| Mutation::SwapSummary {
            item: i.clone(),
            to: SummaryForm::Raw,
        }));
        out.extend(
            self.disable_rule
                .iter()
                .map(|r| Mutation::DisableRule { rule: r.clone() }),
        );
        for c in &self.disable_class {
            let class = MemoryClass::parse(c).with_context(|| {
                format!(
                    "`{c}` is not a memory class: fact, procedure, preference, warning, summary"
                )
            })?;
            out.push(Mutation::DisableMemoryClass { class });
        }
        out.extend(
            self.drop_doc
                .iter()
                .map(|i| Mutation::DropRetrievalDoc { item: i.clone() }),
        );
        Ok(out)
    }

    fn metrics(&self) -> Result<Vec<OutcomeMetric>> {
        self.metric
            .iter()
            .map(|m| {
                serde_json::from_value(serde_json::Value::String(m.clone())).with_context(|| {
                    format!(
                        "`{m}` is not a metric: structural_success, tool_path, latency, cost, \
                         diff_quality, rubric"
                    )
                })
            })
            .collect()
    }

    fn spec(&self) -> Result<ScenarioSpec> {
        let Some(run) = self.run.clone() else {
            bail!("name the run with --run RUN, or give a scenario file");
        };
        Ok(ScenarioSpec {
            run,
            step: self.step,
            name: self.name.clone(),
            mutations: self.mutations()?,
            mode: mode(self.mode),
            model: if self.live {
                ModelSource::Live
            } else {
                ModelSource::Recorded
            },
            metrics: self.metrics()?,
            rubric: Vec::new(),
        })
    }
}

fn mode(m: Option<ModeArg>) -> ToolMode {
    match m {
        Some(ModeArg::StubbedTool) => ToolMode::StubbedTool,
        _ => ToolMode::DryRun,
    }
}

#[derive(Args, Debug)]
pub struct ScenarioArgs {
    /// A scenario file (YAML or JSON); without it, the flags say what to mutate.
    file: Option<PathBuf>,
    #[command(flatten)]
    flags: MutationFlags,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
pub struct RunArgs {
    /// A scenario id (`scn-…`) or a scenario file.
    scenario: String,
    /// Machine-readable output (the whole result).
    #[arg(long)]
    json: bool,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum SweepArg {
    DisableEachRule,
    DropEachItem,
    DisableEachMemoryClass,
}

#[derive(Args, Debug)]
pub struct BatchArgs {
    /// A batch file (YAML or JSON); without it, `--run` and `--sweep`.
    file: Option<PathBuf>,
    /// The recorded run.
    #[arg(long)]
    run: Option<String>,
    /// Only this step.
    #[arg(long)]
    step: Option<u32>,
    /// One scenario per rule, item or memory class of the run.
    #[arg(long, value_enum)]
    sweep: Option<SweepArg>,
    /// How tools are served.
    #[arg(long, value_enum)]
    mode: Option<ModeArg>,
    /// Enqueue a `replay.batch` job for a worker instead of running here.
    #[arg(long)]
    background: bool,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
pub struct ShowArgs {
    /// A result (`rpl-…`) or batch (`bat-…`) id.
    id: String,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
pub struct ExportArgs {
    /// A result id (`rpl-…`).
    id: String,
    /// Write the YAML here instead of printing it.
    #[arg(long, short)]
    output: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct ListArgs {
    /// Only of this run.
    #[arg(long)]
    run: Option<String>,
    /// At most this many.
    #[arg(long, default_value_t = 50)]
    limit: usize,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

fn read_file<T: DeserializeOwned>(path: &PathBuf) -> Result<T> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    serde_yaml::from_str(&text).with_context(|| format!("{} does not read", path.display()))
}

fn print_json<T: serde::Serialize>(value: &T) -> Result<()> {
    println!("{}", serde_json::to_string_pretty(value)?);
    Ok(())
}

pub fn run(cmd: ReplayCommand) -> Result<ExitCode> {
    match cmd {
        ReplayCommand::Exact(a) => {
            let recorder = Recorder::new(store_arg::open()?);
            let report = replay_exact(&recorder, &a.run)?;
            if a.json {
                let mut doc = serde_json::to_value(&report)?;
                doc["drift"] = report.drifted().into();
                println!("{}", serde_json::to_string_pretty(&doc)?);
            } else {
                print!("{}", report.to_text());
            }
            Ok(if report.drifted() {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            })
        }
        ReplayCommand::Scenario(a) => {
            let spec = match &a.file {
                Some(path) => read_file(path)?,
                None => a.flags.spec()?,
            };
            let store = store_arg::open()?;
            let (scenario, created) = create_scenario(&store, spec, "cli", &now_rfc3339())?;
            if a.json {
                print_json(&serde_json::json!({"scenario": scenario, "created": created}))?;
            } else {
                println!(
                    "scenario {} {} ({} mutation(s) on {}); run it with `tollgate replay run {}`",
                    scenario.id,
                    if created { "created" } else { "exists" },
                    scenario.spec.mutations.len(),
                    scenario.spec.run,
                    scenario.id
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        ReplayCommand::Run(a) => {
            let store = store_arg::open()?;
            let id = if a.scenario.starts_with("scn-") {
                a.scenario.clone()
            } else {
                let spec: ScenarioSpec = read_file(&PathBuf::from(&a.scenario))?;
                create_scenario(&store, spec, "cli", &now_rfc3339())?.0.id
            };
            let result = execute_scenario(&store, &id, &now_rfc3339())?;
            if a.json {
                print_json(&result)?;
            } else {
                print!("{}", result.to_text());
            }
            Ok(ExitCode::SUCCESS)
        }
        ReplayCommand::Batch(a) => {
            let spec: BatchSpec = match &a.file {
                Some(path) => read_file(path)?,
                None => {
                    let Some(run) = a.run.clone() else {
                        bail!("name the run with --run RUN (and a --sweep), or give a batch file");
                    };
                    BatchSpec {
                        run,
                        step: a.step,
                        name: None,
                        scenarios: Vec::new(),
                        mutations: Vec::new(),
                        sweep: a.sweep.map(|s| match s {
                            SweepArg::DisableEachRule => Sweep::DisableEachRule,
                            SweepArg::DropEachItem => Sweep::DropEachItem,
                            SweepArg::DisableEachMemoryClass => Sweep::DisableEachMemoryClass,
                        }),
                        mode: mode(a.mode),
                        model: ModelSource::Recorded,
                        metrics: Vec::new(),
                        rubric: Vec::new(),
                    }
                }
            };
            let store = store_arg::open()?;
            let (batch, job) = create_batch(&store, spec, "cli", &now_rfc3339(), a.background)?;
            if let Some(job) = job {
                if a.json {
                    print_json(&serde_json::json!({"batch": batch, "job": job}))?;
                } else {
                    println!(
                        "batch {} of {} scenarios enqueued as job {}; follow it with `tollgate replay show {}`",
                        batch.id,
                        batch.scenarios.len(),
                        job.id,
                        batch.id
                    );
                }
                return Ok(ExitCode::SUCCESS);
            }
            let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
            let progress = |done: u64, total: u64| {
                eprint!("\r{done} of {total} scenarios");
                if done == total {
                    eprintln!();
                }
            };
            let view = run_batch(&store, &batch.id, threads, &now_rfc3339(), &progress)?;
            if a.json {
                print_json(&view)?;
            } else {
                print!("{}", view.to_text());
            }
            Ok(ExitCode::SUCCESS)
        }
        ReplayCommand::Show(a) => {
            let store = store_arg::open()?;
            if a.id.starts_with("bat-") {
                let view = batch_view(&store, &a.id)?;
                if a.json {
                    print_json(&view)?;
                } else {
                    print!("{}", view.to_text());
                }
                return Ok(ExitCode::SUCCESS);
            }
            let Some(result) = store::result(&store, &a.id)? else {
                bail!(
                    "no replay `{}`: results are `rpl-…` and batches `bat-…` (`tollgate replay list`)",
                    a.id
                );
            };
            if a.json {
                print_json(&result)?;
            } else {
                print!("{}", result.to_text());
            }
            Ok(ExitCode::SUCCESS)
        }
        ReplayCommand::Export(a) => {
            let store = store_arg::open()?;
            let Some(result) = store::result(&store, &a.id)? else {
                bail!("no replay result `{}` (`tollgate replay list`)", a.id);
            };
            let yaml = draft_yaml(&regression_draft(&result));
            match a.output {
                Some(path) => {
                    std::fs::write(&path, yaml)
                        .with_context(|| format!("cannot write {}", path.display()))?;
                    eprintln!("wrote {}", path.display());
                }
                None => print!("{yaml}"),
            }
            Ok(ExitCode::SUCCESS)
        }
        ReplayCommand::List(a) => {
            let store = store_arg::open()?;
            let results = store::results(
                &store,
                &ResultFilter {
                    run: a.run,
                    limit: a.limit,
                    ..ResultFilter::default()
                },
            )?;
            if a.json {
                print_json(&results)?;
            } else if results.is_empty() {
                println!("no replay results yet; `tollgate replay run SCENARIO` makes one");
            } else {
                for r in results {
                    let mutations: Vec<String> =
                        r.mutations.iter().map(ToString::to_string).collect();
                    println!(
                        "{:<22} {:<7} {:<32} {}",
                        r.id,
                        r.label.as_str(),
                        r.run,
                        mutations.join("; ")
                    );
                }
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}
