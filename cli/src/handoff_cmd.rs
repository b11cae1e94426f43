//! `tollgate handoff`: typed handoff contracts between agents — a template's starter file,
//! validation (the schema, then the handoff pack; `validate` stores nothing, `submit` stores a
//! version), the consumer's answer, the delivery check, a contract's record, a run's handoff
//! graph, and A2A messages. Exit 1 when a contract is refused or a delivery breaks it.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result};
use clap::{Args, Subcommand, ValueEnum};
use serde_json::json;
use tollgate_gateway::handoff::contract::{self, ContractFaults, HandoffContract};
use tollgate_gateway::handoff::store::{self, StoredContract};
use tollgate_gateway::handoff::submit::{Judged, judge};
use tollgate_gateway::handoff::{
    AckResponse, ConsumerAck, ContractState, HandoffError, Template, Validation, a2a, graph,
    templates,
};
use tollgate_gateway::providers::FakeProvider;
use tollgate_gateway::runtime::Runtime;

use crate::store_arg;

#[derive(Subcommand, Debug)]
pub enum HandoffCommand {
    /// Print a template's starter contract (YAML): lightweight, code_patch_review,
    /// research_to_implementation, planner_to_executor.
    Template(TemplateArgs),
    /// Read a contract file and judge it with the handoff pack under the stored envelopes,
    /// without storing it; exit 1 if it would be refused.
    Validate(FileArgs),
    /// Validate a contract file and store it as a new version (recorded in the producer's run
    /// while it runs); exit 1 if it is refused.
    Submit(FileArgs),
    /// The consumer's answer to the latest version: accept, reject or clarify.
    Ack(AckArgs),
    /// Check the consumer's delivery now (required outputs, blocked actions, deadline); exit 1
    /// when it breaks the contract.
    Check(IdArgs),
    /// A contract: a version with its validation and receipt, its versions, answers and
    /// delivery checks.
    Show(ShowArgs),
    /// The handoff graph of a run, as text, JSON, DOT or SVG.
    Graph(GraphArgs),
    /// The latest version of a contract as an A2A message (JSON).
    Export(IdArgs),
    /// Submit the contract an A2A message (JSON file) carries.
    Import(FileArgs),
}

#[derive(Args, Debug)]
pub struct TemplateArgs {
    /// The template.
    name: String,
}

#[derive(Args, Debug)]
pub struct FileArgs {
    /// The file (YAML or JSON).
    file: PathBuf,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
pub struct IdArgs {
    /// The contract's id.
    id: String,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum ResponseArg {
    Accept,
    Reject,
    Clarify,
}

#[derive(Args, Debug)]
pub struct AckArgs {
    /// The contract's id.
    id: String,
    /// The answer.
    #[arg(long, value_enum)]
    response: ResponseArg,
    /// Why (required to reject or clarify, unless questions are given).
    #[arg(long)]
    reason: Option<String>,
    /// A question for the producer (repeatable).
    #[arg(long = "question")]
    questions: Vec<String>,
    /// The consumer's run, when it is open.
    #[arg(long)]
    run: Option<String>,
    /// Who answers (the consumer agent by default).
    #[arg(long)]
    by: Option<String>,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
pub struct ShowArgs {
    /// The contract's id.
    id: String,
    /// A version (the latest by default).
    #[arg(long)]
    version: Option<u32>,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum GraphFormat {
    Text,
    Json,
    Dot,
    Svg,
}

#[derive(Args, Debug)]
pub struct GraphArgs {
    /// The run.
    run: String,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    format: GraphFormat,
}

/// Runs a `handoff` subcommand.
pub fn run(cmd: HandoffCommand) -> Result<ExitCode> {
    match cmd {
        HandoffCommand::Template(a) => {
            let t = Template::parse(&a.name).with_context(|| {
                format!(
                    "no template `{}`: use lightweight, code_patch_review, research_to_implementation or planner_to_executor",
                    a.name
                )
            })?;
            print!("{}", templates::starter(t));
            Ok(ExitCode::SUCCESS)
        }
        HandoffCommand::Validate(a) => {
            let c = read_contract(&a.file)?;
            let rt = runtime()?;
            let v = match judge(rt.recorder(), &*rt.envelopes()?, c).map_err(handoff_error)? {
                Judged::Unchanged(stored) => {
                    if !a.json {
                        println!("unchanged: version {} has this content", stored.version);
                    }
                    stored.validation
                }
                Judged::New { validation, .. } => *validation,
            };
            if a.json {
                println!("{}", serde_json::to_string_pretty(&v)?);
            } else {
                print!("{}", validation_text(&v.decision.request, &v));
            }
            Ok(exit_for(v.state))
        }
        HandoffCommand::Submit(a) => {
            let c = read_contract(&a.file)?;
            submit(c, a.json)
        }
        HandoffCommand::Import(a) => {
            let text = std::fs::read_to_string(&a.file)
                .with_context(|| format!("cannot read `{}`", a.file.display()))?;
            let value: serde_json::Value = serde_json::from_str(&text)
                .with_context(|| format!("`{}` is not JSON", a.file.display()))?;
            let c = a2a::import(&value).map_err(|f| faults(&a.file, f))?;
            submit(c, a.json)
        }
        HandoffCommand::Ack(a) => {
            let rt = runtime()?;
            let ack = ConsumerAck {
                response: match a.response {
                    ResponseArg::Accept => AckResponse::Accept,
                    ResponseArg::Reject => AckResponse::Reject,
                    ResponseArg::Clarify => AckResponse::Clarify,
                },
                version: None,
                run: a.run,
                by: a.by,
                reason: a.reason,
                questions: a.questions,
            };
            let c = rt.ack_contract(&a.id, ack).map_err(handoff_error)?;
            if a.json {
                println!("{}", serde_json::to_string_pretty(&c)?);
            } else {
                println!(
                    "contract {} version {}: {}",
                    c.id,
                    c.version,
                    c.state.as_str()
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        HandoffCommand::Check(a) => {
            let rt = runtime()?;
            let report = rt.check_delivery(&a.id).map_err(handoff_error)?;
            if a.json {
                println!("{}", serde_json::to_string_pretty(&report)?);
            } else {
                println!(
                    "contract {} version {}: {} (consumer run {}, {} event(s) read)",
                    report.contract.id,
                    report.contract.version,
                    report.contract.state.as_str(),
                    report.delivery.consumer_run,
                    report.delivery.delivered["events"]
                );
                for f in &report.findings {
                    println!(
                        "  violation {} `{}` ({})\n    help: {}",
                        f.code, f.detail, f.rule, f.help
                    );
                }
            }
            Ok(exit_for(report.contract.state))
        }
        HandoffCommand::Show(a) => {
            let store = store_arg::open()?;
            let c = store::get(&store, &a.id, a.version)?
                .with_context(|| format!("no contract `{}`", a.id))?;
            if a.json {
                let body = json!({
                    "contract": c,
                    "acks": store::acks(&store, &a.id)?,
                    "deliveries": store::deliveries(&store, &a.id)?,
                });
                println!("{}", serde_json::to_string_pretty(&body)?);
            } else {
                print!("{}", stored_text(&c));
                for ack in store::acks(&store, &a.id)? {
                    println!(
                        "  answer v{}: {} by {}{}",
                        ack.version,
                        ack.response,
                        ack.by,
                        if ack.reason.is_empty() {
                            String::new()
                        } else {
                            format!(": {}", ack.reason)
                        }
                    );
                }
                for d in store::deliveries(&store, &a.id)? {
                    println!(
                        "  delivery check v{} at {}: {}",
                        d.version,
                        d.at,
                        d.state.as_str()
                    );
                    for v in &d.violations {
                        println!("    violation {} `{}` ({})", v.code, v.detail, v.rule);
                    }
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        HandoffCommand::Graph(a) => {
            let store = store_arg::open()?;
            let recorder = tollgate_gateway::recorder::Recorder::new(store);
            let g = graph::graph(&recorder, &a.run).map_err(handoff_error)?;
            match a.format {
                GraphFormat::Json => println!("{}", serde_json::to_string_pretty(&g)?),
                GraphFormat::Dot => print!("{}", g.to_dot()),
                GraphFormat::Svg => print!("{}", g.to_svg()),
                GraphFormat::Text => {
                    println!("handoffs around {} ({} run(s))", g.run, g.runs.len());
                    for e in &g.edges {
                        println!("  {} -> {}: {} [{}]", e.from, e.to, e.contract, e.state);
                        for m in &e.missing {
                            println!("    missing {m}");
                        }
                        for d in &e.dropped {
                            println!("    dropped evidence {d}");
                        }
                        for v in &e.violations {
                            println!("    violation {v}");
                        }
                    }
                    for c in &g.cycles {
                        println!("  delegation cycle: {}", c.join(" -> "));
                    }
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        HandoffCommand::Export(a) => {
            let store = store_arg::open()?;
            let c = store::get(&store, &a.id, None)?
                .with_context(|| format!("no contract `{}`", a.id))?;
            println!("{}", serde_json::to_string_pretty(&a2a::export(&c))?);
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn runtime() -> Result<Runtime> {
    let store = store_arg::open()?;
    Ok(Runtime::new(store, Arc::new(FakeProvider::new()))?)
}

fn read_contract(path: &PathBuf) -> Result<HandoffContract> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read `{}`", path.display()))?;
    contract::parse(&text).map_err(|f| faults(path, f))
}

fn faults(path: &std::path::Path, f: ContractFaults) -> anyhow::Error {
    let lines: Vec<String> =
        f.0.iter()
            .map(|fault| format!("{}:{fault}", path.display()))
            .collect();
    anyhow::anyhow!(
        "the handoff contract does not read ({} fault(s)):\n{}",
        f.0.len(),
        lines.join("\n")
    )
}

fn handoff_error(e: HandoffError) -> anyhow::Error {
    anyhow::anyhow!("{e}")
}

fn submit(c: HandoffContract, json: bool) -> Result<ExitCode> {
    let rt = runtime()?;
    let s = rt.submit_contract(c, "cli").map_err(handoff_error)?;
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&json!({"contract": s.contract, "created": s.created}))?
        );
    } else {
        if !s.created {
            println!("unchanged: the latest version has this content");
        }
        print!("{}", stored_text(&s.contract));
    }
    Ok(exit_for(s.contract.state))
}

fn exit_for(state: ContractState) -> ExitCode {
    match state {
        ContractState::Rejected | ContractState::Violated => ExitCode::from(1),
        _ => ExitCode::SUCCESS,
    }
}

fn stored_text(c: &StoredContract) -> String {
    let mut out = format!(
        "contract {} version {} ({}): {} -> {}#{}\n",
        c.id,
        c.version,
        c.template,
        tollgate_gateway::handoff::party(&c.producer_run, &c.producer_agent),
        c.consumer_run,
        c.consumer_agent
    );
    out.push_str(&validation_text(&c.id, &c.validation));
    if let Some(seq) = c.recorded_seq {
        out.push_str(&format!(
            "  recorded: event {seq} of run {}\n",
            c.producer_run
        ));
    }
    out
}

fn validation_text(id: &str, v: &Validation) -> String {
    let mut out = format!("  {id}: {}\n", v.state.as_str());
    for p in &v.problems {
        out.push_str(&format!(
            "  problem {} `{}` ({})\n    help: {}\n",
            p.code, p.detail, p.rule, p.help
        ));
    }
    for d in &v.dropped {
        out.push_str(&format!(
            "  dropped evidence `{}`: {} ({})\n",
            d.item, d.code, d.rule
        ));
    }
    if !v.crossing.is_empty() {
        out.push_str(&format!("  evidence crossing: {}\n", v.crossing.join(", ")));
    }
    out.push_str(&format!(
        "  decision: {} by {} (input {})\n",
        v.decision.effect.as_str(),
        if v.decision.rules.is_empty() {
            "no violation".to_string()
        } else {
            v.decision.rules.join(", ")
        },
        &v.decision.input_hash[..16.min(v.decision.input_hash.len())]
    ));
    out
}
