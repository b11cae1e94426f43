//! The counterfactual executor: a recorded run walked event by event with a scenario's
//! mutations applied, giving a [`Trajectory`] — per step, what each compile included, how
//! each model call was answered, which tool calls ran and how they were served.
//!
//! **Each step sees the recorded past.** The items a compile is offered are the recorded ones
//! (the mutations acting on them), tool results among them included, whatever the replay did
//! at earlier steps. A change therefore shows at the steps it reaches instead of making every
//! later step unknowable, and two scenarios compare step by step. (What a changed answer
//! would have led the agent to do next is not knowable offline; a live model in
//! `stubbed_tool` mode answers it one step at a time.)
//!
//! **Serving.** A model request equal to the recorded one is served its recorded answer (the
//! exact-replay path); a changed one is answered by the fake provider, or by a live provider
//! when the scenario opted in. Policy is re-decided under the scenario's envelopes (a disabled
//! rule taken out of every version the run was decided under): model calls, context items and
//! tool calls. A tool call runs when allowed, or when it needs approval and the recording holds
//! an approval of it; its result is the recorded one, or an explicit `unrecorded` stub when
//! the recording never ran that call. Nothing is executed for real.
//!
//! The baseline is this executor with no mutation; [`super::result::execute`] checks that it
//! reproduces the recording before comparing anything with it.

use std::collections::{BTreeMap, HashMap, HashSet};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tollgate_rules::decide::DecisionEffect;

use super::scenario::{ModelSource, Mutation, SummaryForm, ToolMode, memory_class};
use super::{ReplayError, ReplayPolicies};
use crate::clock::parse_rfc3339;
use crate::compiler::{
    CandidateItem, CompileInput, CompilePolicy, CompileSettings, ContextMemo, ItemKind, compile,
    model_request,
};
use crate::providers::{ChatResponse, FakeProvider, Provider};
use crate::recorder::events::{
    ApprovalEvent, ContextOfferedEvent, Event, ModelCallEvent, OutputEvent, ToolCallEvent,
    ToolResultEvent,
};
use crate::recorder::format::{EventRecord, RunFile};
use crate::run_policy::{recorded_tool_request, requested_model_call};

/// What one compile did with its items.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompileTrace {
    /// The recorded `compile` event.
    pub seq: u64,
    /// The compiled text's hash (empty when the compile failed).
    pub hash: String,
    /// Its tokens.
    pub tokens: u32,
    /// The total budget.
    pub budget: u32,
    /// Every item, in the compile's order, then the items the mutations dropped.
    pub items: Vec<ItemTrace>,
    /// Why the compile failed, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// What became of one item in a compile.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ItemTrace {
    /// Its id.
    pub id: String,
    /// Its kind.
    pub kind: ItemKind,
    /// `included`, `redacted`, `summarised`, `excluded`, or `dropped` (by a mutation).
    pub status: String,
    /// Tokens it took.
    pub tokens: u32,
    /// Why.
    pub why: String,
    /// The policy rules that decided it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<String>,
    /// Whether policy left it out (not the budget, nor a mutation).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub by_policy: bool,
}

/// Who answered a model call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Answered {
    /// The recorded answer (the request was unchanged).
    Recorded,
    /// The fake provider (the request changed).
    Fake,
    /// A live provider (the request changed; the scenario opted in).
    Live,
    /// Nobody: policy refused the call.
    Refused,
    /// Nobody: the provider failed, or no recorded answer follows the call.
    Failed,
}

/// One model call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelTrace {
    /// The recorded `model_call` event.
    pub seq: u64,
    /// The request's hash.
    pub request_hash: String,
    /// Who answered.
    pub answered: Answered,
    /// Prompt tokens: the compiled context's tokens (the recorded usage for an agent's own
    /// request); none when the call was refused or failed.
    pub prompt_tokens: u32,
    /// Completion tokens (a fake answer is costed as the recorded one: its text is a stand-in).
    pub completion_tokens: u32,
    /// The answer's text.
    pub content: String,
    /// Why it was refused or failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
    /// Modelled milliseconds: the recorded duration, scaled by the prompt for a fake answer.
    pub latency_ms: f64,
}

/// How a tool call was served.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Served {
    /// The recorded result of the same call.
    Recorded,
    /// Allowed, but the recording never ran it: an explicit stub, a divergence.
    Unrecorded,
    /// Not run (denied, rate limited, rejected, or waiting for an approval nobody gives).
    NotRun,
}

/// One tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolTrace {
    /// The `tool_call` event (or, for a call a changed answer asked for, its `model_call`).
    pub seq: u64,
    /// The call's id.
    pub call_id: String,
    /// The tool.
    pub tool: String,
    /// Its arguments.
    pub arguments: Value,
    /// What policy decided.
    pub effect: String,
    /// The deciding rules.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<String>,
    /// How it was served.
    pub served: Served,
    /// The result's status (`ok`, `error`; `unrecorded` for a stub).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// Why it ran or did not.
    pub why: String,
    /// Modelled milliseconds (the recorded duration when served from the recording).
    pub latency_ms: f64,
}

impl ToolTrace {
    /// Whether the call ran (served from the recording or stubbed).
    pub fn ran(&self) -> bool {
        self.served != Served::NotRun
    }
}

/// One step of a trajectory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepTrace {
    /// Step index.
    pub step: u32,
    /// Step name.
    pub name: String,
    /// Its compiles.
    pub compiles: Vec<CompileTrace>,
    /// Its model calls.
    pub model_calls: Vec<ModelTrace>,
    /// Its tool calls.
    pub tools: Vec<ToolTrace>,
}

impl StepTrace {
    /// Whether the step held together: every compile compiled, every model call was
    /// answered, every tool call ran and returned `ok`.
    pub fn intact(&self) -> bool {
        self.compiles.iter().all(|c| c.error.is_none())
            && self.model_calls.iter().all(|m| {
                matches!(
                    m.answered,
                    Answered::Recorded | Answered::Fake | Answered::Live
                )
            })
            && self
                .tools
                .iter()
                .all(|t| t.served == Served::Recorded && t.status.as_deref() == Some("ok"))
    }
}

/// A run as replayed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Trajectory {
    /// The steps covered.
    pub steps: Vec<StepTrace>,
    /// The run's final output: the recorded one while its step's answer is unchanged, else
    /// that step's new answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
}

impl Trajectory {
    /// Tool names of the calls that ran, in order (a stub marked `(unrecorded)`).
    pub fn tool_path(&self) -> Vec<String> {
        self.tools()
            .filter(|t| t.ran())
            .map(|t| match t.served {
                Served::Unrecorded => format!("{} (unrecorded)", t.tool),
                _ => t.tool.clone(),
            })
            .collect()
    }

    /// Every tool call, in order.
    pub fn tools(&self) -> impl Iterator<Item = &ToolTrace> {
        self.steps.iter().flat_map(|s| s.tools.iter())
    }

    /// Every model call, in order.
    pub fn model_calls(&self) -> impl Iterator<Item = &ModelTrace> {
        self.steps.iter().flat_map(|s| s.model_calls.iter())
    }
}

/// How a trajectory is produced: the mutations, the step covered, the tool mode, and the
/// provider answering changed requests when the scenario opted in to a live one.
pub struct Execution<'a> {
    /// The mutations (none for the baseline).
    pub mutations: &'a [Mutation],
    /// Only this step.
    pub step: Option<u32>,
    /// How tools are served.
    pub mode: ToolMode,
    /// Who answers a changed request.
    pub model: ModelSource,
    /// The live provider, for [`ModelSource::Live`].
    pub live: Option<&'a dyn Provider>,
}

/// Walks `file` under `execution`.
pub fn trajectory(file: &RunFile, execution: &Execution<'_>) -> Result<Trajectory, ReplayError> {
    Prepared::new(file)?.trajectory(execution)
}

/// A run read once for many trajectories (a batch's scenarios): its events decoded, what the
/// recording holds by key, and the policies it was decided under.
pub struct Prepared<'a> {
    file: &'a RunFile,
    /// Each event's payload, read once (`None` for one that does not read).
    events: Vec<Option<Event>>,
    recorded: Recorded,
    policies: Option<ReplayPolicies<'a>>,
}

impl<'a> Prepared<'a> {
    /// Reads `file`.
    pub fn new(file: &'a RunFile) -> Result<Prepared<'a>, ReplayError> {
        let events: Vec<Option<Event>> = file.events.iter().map(|e| e.event().ok()).collect();
        Ok(Prepared {
            recorded: Recorded::of(file, &events),
            policies: ReplayPolicies::with_disabled(file, &[])?,
            events,
            file,
        })
    }

    /// The run under `execution`. The recorded policies are shared; a scenario that disables
    /// rules builds its own.
    pub fn trajectory(&self, execution: &Execution<'_>) -> Result<Trajectory, ReplayError> {
        let disabled: Vec<String> = execution
            .mutations
            .iter()
            .filter_map(|m| match m {
                Mutation::DisableRule { rule } => Some(rule.clone()),
                _ => None,
            })
            .collect();
        let own;
        let policies = if disabled.is_empty() {
            self.policies.as_ref()
        } else {
            own = ReplayPolicies::with_disabled(self.file, &disabled)?;
            own.as_ref()
        };
        let file = self.file;
        let mut walk = Walk {
            file,
            execution,
            policies,
            recorded: &self.recorded,
            offered: HashMap::new(),
            compiled: HashMap::new(),
            steered: HashSet::new(),
            memo: ContextMemo::default(),
            steps: file
                .steps
                .iter()
                .filter(|s| execution.step.is_none_or(|only| only == s.index))
                .map(|s| StepTrace {
                    step: s.index,
                    name: s.name.clone(),
                    compiles: Vec::new(),
                    model_calls: Vec::new(),
                    tools: Vec::new(),
                })
                .collect(),
            output: None,
        };
        for (e, event) in file.events.iter().zip(&self.events) {
            if let Some(event) = event {
                walk.event(e, event);
            }
        }
        Ok(Trajectory {
            steps: walk.steps,
            output: walk.output,
        })
    }
}

/// What the recording holds, by key: results and approvals by call, outputs by request, event
/// times.
struct Recorded {
    /// Model outputs by request hash, in event order.
    outputs: HashMap<String, Vec<(u64, ChatResponse)>>,
    /// The seq of each recorded tool call, by call id.
    calls: HashMap<String, u64>,
    results: HashMap<String, (u64, ToolResultEvent)>,
    /// The call id of each recorded call that has a result, by tool and canonical arguments.
    by_call: HashMap<(String, String), String>,
    approvals: HashMap<String, ApprovalEvent>,
    /// The seconds of each event, by seq.
    at: HashMap<u64, u64>,
}

impl Recorded {
    fn of(file: &RunFile, events: &[Option<Event>]) -> Recorded {
        let mut recorded = Recorded {
            outputs: HashMap::new(),
            calls: HashMap::new(),
            results: HashMap::new(),
            by_call: HashMap::new(),
            approvals: HashMap::new(),
            at: HashMap::new(),
        };
        let mut calls: HashMap<String, (String, String)> = HashMap::new();
        for (e, event) in file.events.iter().zip(events) {
            if let Some(at) = parse_rfc3339(&e.at) {
                recorded.at.insert(e.seq, at);
            }
            match event {
                Some(Event::ToolCall(c)) => {
                    recorded.calls.entry(c.call_id.clone()).or_insert(e.seq);
                    calls.insert(c.call_id.clone(), (c.tool.clone(), canonical(&c.arguments)));
                }
                Some(Event::ModelOutput(o)) => {
                    recorded
                        .outputs
                        .entry(o.request_hash.clone())
                        .or_default()
                        .push((e.seq, o.response.clone()));
                }
                Some(Event::ToolResult(r)) => {
                    if let Some(key) = calls.get(&r.call_id) {
                        recorded
                            .by_call
                            .entry(key.clone())
                            .or_insert_with(|| r.call_id.clone());
                    }
                    recorded
                        .results
                        .insert(r.call_id.clone(), (e.seq, r.clone()));
                }
                Some(Event::Approval(a)) => {
                    if let Some(call) = a.call_id.clone() {
                        recorded.approvals.insert(call, a.clone());
                    }
                }
                _ => {}
            }
        }
        recorded
    }

    /// The first recorded answer to `request_hash` after event `seq`.
    fn output_after(&self, request_hash: &str, seq: u64) -> Option<&(u64, ChatResponse)> {
        self.outputs
            .get(request_hash)?
            .iter()
            .find(|(at, _)| *at > seq)
    }

    /// Milliseconds between two recorded events.
    fn between(&self, from: u64, to: u64) -> f64 {
        match (self.at.get(&from), self.at.get(&to)) {
            (Some(a), Some(b)) => b.saturating_sub(*a) as f64 * 1000.0,
            _ => 0.0,
        }
    }
}

fn canonical(value: &Value) -> String {
    tollgate_rules::canonical::canonical_json(value)
}

struct Walk<'a> {
    file: &'a RunFile,
    execution: &'a Execution<'a>,
    policies: Option<&'a ReplayPolicies<'a>>,
    recorded: &'a Recorded,
    /// Items offered so far, by id.
    offered: HashMap<String, CandidateItem>,
    /// Compiles by the seq of their event: the compiled context and the recorded tokens.
    compiled: HashMap<u64, (crate::compiler::CompiledContext, u32)>,
    /// Steps whose answer changed in `stubbed_tool` mode: their recorded calls are not made.
    steered: HashSet<u32>,
    /// Context decisions made so far in this walk (its engines live as long).
    memo: ContextMemo,
    steps: Vec<StepTrace>,
    output: Option<String>,
}

impl Walk<'_> {
    fn covers(&self, step: u32) -> bool {
        self.execution.step.is_none_or(|s| s == step)
    }

    fn step_mut(&mut self, step: u32) -> Option<&mut StepTrace> {
        self.steps.iter_mut().find(|s| s.step == step)
    }

    fn event(&mut self, e: &EventRecord, event: &Event) {
        if let Event::ContextOffered(ContextOfferedEvent { items }) = event {
            for item in items {
                self.offered.insert(item.id.clone(), item.clone());
            }
            return;
        }
        if !self.covers(e.step) {
            return;
        }
        match event {
            Event::Compile(c) => {
                let trace = self.compile(e, &c.item_ids, &c.settings, c.tokens);
                if let Some(step) = self.step_mut(e.step) {
                    step.compiles.push(trace);
                }
            }
            Event::ModelCall(call) => self.model_call(e, call),
            Event::ToolCall(call) if !self.steered.contains(&e.step) => {
                let trace = self.tool_call(e.seq, call, true);
                if let Some(step) = self.step_mut(e.step) {
                    step.tools.push(trace);
                }
            }
            Event::Output(OutputEvent { content, .. }) => {
                let changed = self
                    .steps
                    .iter()
                    .find(|s| s.step == e.step)
                    .and_then(|s| s.model_calls.last())
                    .filter(|m| m.answered != Answered::Recorded);
                self.output = Some(match changed {
                    Some(m) => m.content.clone(),
                    None => content.clone(),
                });
            }
            _ => {}
        }
    }

    /// The mutated items and settings of a compile.
    fn mutated(
        &self,
        ids: &[String],
        settings: &CompileSettings,
    ) -> (
        Vec<CandidateItem>,
        Vec<(CandidateItem, String)>,
        CompileSettings,
    ) {
        let mut items = Vec::with_capacity(ids.len());
        let mut dropped = Vec::new();
        let mut settings = settings.clone();
        for id in ids {
            let Some(item) = self.offered.get(id) else {
                continue;
            };
            let mut item = item.clone();
            let mut drop_why = None;
            for m in self.execution.mutations {
                match m {
                    Mutation::DropItem { item: id } if *id == item.id => {
                        drop_why = Some(m.to_string());
                    }
                    Mutation::DropRetrievalDoc { item: id } if *id == item.id => {
                        drop_why = Some(m.to_string());
                    }
                    Mutation::DisableMemoryClass { class }
                        if memory_class(&item) == Some(*class) =>
                    {
                        drop_why = Some(m.to_string());
                    }
                    Mutation::ChangeWeight { item: id, weight } if *id == item.id => {
                        item.weight = *weight;
                    }
                    Mutation::SwapSummary { item: id, to } if *id == item.id => match to {
                        SummaryForm::Summary => {
                            if let Some(summary) = item.summary.take() {
                                item.content = Some(summary);
                                item.reference = None;
                                item.tokens = None;
                            }
                        }
                        SummaryForm::Raw => item.summary = None,
                    },
                    _ => {}
                }
            }
            match drop_why {
                Some(why) => dropped.push((item, why)),
                None => items.push(item),
            }
        }
        for m in self.execution.mutations {
            if let Mutation::ChangeBudget { item_kind, budget } = m {
                match item_kind {
                    None => settings.budget = *budget,
                    Some(kind) => {
                        settings.kind_budgets.insert(*kind, *budget);
                    }
                }
            }
        }
        (items, dropped, settings)
    }

    fn compile(
        &mut self,
        e: &EventRecord,
        ids: &[String],
        settings: &CompileSettings,
        recorded_tokens: u32,
    ) -> CompileTrace {
        let (items, dropped, settings) = self.mutated(ids, settings);
        let dropped: Vec<ItemTrace> = dropped
            .into_iter()
            .map(|(item, why)| ItemTrace {
                id: item.id,
                kind: item.kind,
                status: "dropped".into(),
                tokens: 0,
                why: format!("mutation: {why}"),
                rules: Vec::new(),
                by_policy: false,
            })
            .collect();
        let failed = |error: String, dropped: Vec<ItemTrace>| CompileTrace {
            seq: e.seq,
            hash: String::new(),
            tokens: 0,
            budget: settings.budget,
            items: dropped,
            error: Some(error),
        };
        let engine = match self.policies.map(|p| p.engine(e)).transpose() {
            Ok(engine) => engine,
            Err(why) => return failed(why, dropped),
        };
        let policy = engine.map(|engine| CompilePolicy {
            engine,
            run: &self.file.run.id,
            memo: Some(&self.memo),
        });
        let input = CompileInput {
            items,
            settings: settings.clone(),
            subject: None,
        };
        let compiled = match compile(&input, policy.as_ref()) {
            Ok(c) => c,
            Err(err) => return failed(err.to_string(), dropped),
        };
        let mut traces: Vec<ItemTrace> = compiled
            .outcomes
            .iter()
            .map(|o| ItemTrace {
                id: o.id.clone(),
                kind: o.kind,
                status: o.status.as_str().to_string(),
                tokens: o.tokens,
                why: o.reason.to_string(),
                rules: o
                    .policy
                    .as_ref()
                    .map(|d| d.rules.clone())
                    .unwrap_or_default(),
                by_policy: matches!(o.reason, crate::compiler::Reason::Policy { .. }),
            })
            .collect();
        traces.extend(dropped);
        let trace = CompileTrace {
            seq: e.seq,
            hash: compiled.hash.clone(),
            tokens: compiled.tokens,
            budget: compiled.budget,
            items: traces,
            error: None,
        };
        self.compiled.insert(e.seq, (compiled, recorded_tokens));
        trace
    }

    fn model_call(&mut self, e: &EventRecord, call: &ModelCallEvent) {
        let recorded_output = self
            .recorded
            .output_after(&call.request_hash, e.seq)
            .cloned();
        let recorded_latency = recorded_output
            .as_ref()
            .map_or(0.0, |(seq, _)| self.recorded.between(e.seq, *seq));
        let (request, prompt_tokens, recorded_prompt) = match call.compile_seq {
            Some(seq) => match self.compiled.get(&seq) {
                Some((compiled, recorded_tokens)) => (
                    model_request(compiled, &call.request.model),
                    compiled.tokens,
                    *recorded_tokens,
                ),
                None => {
                    let trace = ModelTrace {
                        seq: e.seq,
                        request_hash: String::new(),
                        answered: Answered::Failed,
                        prompt_tokens: 0,
                        completion_tokens: 0,
                        content: String::new(),
                        why: Some(format!("compile {seq} did not run")),
                        latency_ms: 0.0,
                    };
                    if let Some(step) = self.step_mut(e.step) {
                        step.model_calls.push(trace);
                    }
                    return;
                }
            },
            None => {
                let tokens = recorded_output
                    .as_ref()
                    .map_or(0, |(_, r)| r.usage.prompt_tokens);
                (call.request.clone(), tokens, tokens)
            }
        };
        let hash = request.hash();
        let mut trace = ModelTrace {
            seq: e.seq,
            request_hash: hash.clone(),
            answered: Answered::Failed,
            prompt_tokens,
            completion_tokens: 0,
            content: String::new(),
            why: None,
            latency_ms: 0.0,
        };
        let refusal = self.policies.and_then(|p| match p.engine(e) {
            Err(why) => Some(why),
            Ok(engine) => {
                let d = engine.decide_model(&self.file.run.id, &requested_model_call(&request));
                (d.effect != DecisionEffect::Allow).then(|| {
                    format!(
                        "{} by {}",
                        d.effect.as_str(),
                        if d.rules.is_empty() {
                            "default".to_string()
                        } else {
                            d.rules.join(", ")
                        }
                    )
                })
            }
        });
        let mut answer: Option<ChatResponse> = None;
        if let Some(why) = refusal {
            trace.answered = Answered::Refused;
            trace.why = Some(why);
        } else if hash == call.request_hash {
            match &recorded_output {
                Some((_, response)) => {
                    trace.answered = Answered::Recorded;
                    trace.latency_ms = recorded_latency;
                    answer = Some(response.clone());
                }
                None => trace.why = Some("no recorded answer follows the call".into()),
            }
        } else {
            let recorded_completion = recorded_output
                .as_ref()
                .map_or(0, |(_, r)| r.usage.completion_tokens);
            let scale = if recorded_prompt == 0 {
                1.0
            } else {
                f64::from(prompt_tokens) / f64::from(recorded_prompt)
            };
            let (answered, result) = match (self.execution.model, self.execution.live) {
                (ModelSource::Live, Some(live)) => (
                    Answered::Live,
                    live.complete(&request).map_err(|e| e.to_string()),
                ),
                (ModelSource::Live, None) => (
                    Answered::Failed,
                    Err("the scenario asked for a live model, but none is configured".into()),
                ),
                (ModelSource::Recorded, _) => (
                    Answered::Fake,
                    FakeProvider::new()
                        .complete(&request)
                        .map_err(|e| e.to_string()),
                ),
            };
            match result {
                Ok(mut response) => {
                    trace.answered = answered;
                    trace.latency_ms = recorded_latency * scale;
                    if answered == Answered::Fake {
                        response.usage.completion_tokens = recorded_completion;
                    }
                    answer = Some(response);
                }
                Err(why) => trace.why = Some(why),
            }
        }
        if answer.is_none() {
            // Refused or failed: no prompt was sent, so none is paid for.
            trace.prompt_tokens = 0;
        }
        let changed = trace.answered != Answered::Recorded;
        if let Some(response) = &answer {
            trace.completion_tokens = response.usage.completion_tokens;
            trace.content = response.content.clone();
        }
        if let Some(step) = self.step_mut(e.step) {
            step.model_calls.push(trace);
        }
        if changed && self.execution.mode == ToolMode::StubbedTool {
            self.steered.insert(e.step);
            let proposals = answer.as_ref().map(proposed_calls).unwrap_or_default();
            for (n, (tool, arguments)) in proposals.into_iter().enumerate() {
                let call = ToolCallEvent {
                    arguments,
                    call_hash: None,
                    call_id: format!("replay-{}-{n}", e.seq),
                    tool,
                    usage: None,
                };
                let trace = self.tool_call(e.seq, &call, false);
                if let Some(step) = self.step_mut(e.step) {
                    step.tools.push(trace);
                }
            }
        }
    }

    /// Decides a call and serves it. `recorded` says the call is the recording's own (its
    /// result and approval are found by its id); a call a changed answer asked for is found
    /// by tool and arguments.
    fn tool_call(&self, seq: u64, call: &ToolCallEvent, recorded: bool) -> ToolTrace {
        let mut trace = ToolTrace {
            seq,
            call_id: call.call_id.clone(),
            tool: call.tool.clone(),
            arguments: call.arguments.clone(),
            effect: "allow".into(),
            rules: Vec::new(),
            served: Served::NotRun,
            status: None,
            why: String::new(),
            latency_ms: 0.0,
        };
        let recorded_id = if recorded {
            Some(call.call_id.clone())
        } else {
            self.recorded
                .by_call
                .get(&(call.tool.clone(), canonical(&call.arguments)))
                .cloned()
        };
        let mut runs = true;
        if let Some(policies) = self.policies {
            let engine = event_at(self.file, seq).map(|e| policies.engine(e));
            let decision = match engine {
                Some(Ok(engine)) => engine.decide(&recorded_tool_request(&self.file.run.id, call)),
                Some(Err(why)) => {
                    trace.effect = "deny".into();
                    trace.why = why;
                    return trace;
                }
                None => {
                    trace.why = "the call's event is not in the run".into();
                    return trace;
                }
            };
            trace.effect = decision.effect.as_str().to_string();
            trace.rules = decision.rules.clone();
            let by = if decision.rules.is_empty() {
                "default".to_string()
            } else {
                decision.rules.join(", ")
            };
            match decision.effect {
                DecisionEffect::Allow => trace.why = format!("allowed by {by}"),
                DecisionEffect::RequireApproval => {
                    match recorded_id
                        .as_ref()
                        .and_then(|id| self.recorded.approvals.get(id))
                    {
                        Some(a) if a.decision == "approved" => {
                            trace.why = format!("needs approval ({by}); {} approved it", a.by);
                        }
                        Some(a) => {
                            runs = false;
                            trace.why = format!("needs approval ({by}); {} rejected it", a.by);
                        }
                        None => {
                            runs = false;
                            trace.why = format!(
                                "needs approval ({by}), and the recording holds none: nobody \
                                 approves during a replay"
                            );
                        }
                    }
                }
                effect => {
                    runs = false;
                    trace.why = format!("{} by {by}", effect.as_str());
                }
            }
        }
        if !runs {
            return trace;
        }
        match recorded_id.and_then(|id| self.recorded.results.get(&id)) {
            Some((result_seq, result)) => {
                trace.served = Served::Recorded;
                trace.status = Some(result.status.clone());
                let call_seq = if recorded {
                    seq
                } else {
                    self.call_seq(&result.call_id).unwrap_or(*result_seq)
                };
                trace.latency_ms = self.recorded.between(call_seq, *result_seq);
            }
            None => {
                trace.served = Served::Unrecorded;
                trace.status = Some("unrecorded".into());
                trace
                    .why
                    .push_str("; the recording never ran this call: stubbed");
            }
        }
        trace
    }

    fn call_seq(&self, call_id: &str) -> Option<u64> {
        self.recorded.calls.get(call_id).copied()
    }
}

/// Event `seq` of `file` (seqs are contiguous from 0; a file that breaks this is searched).
fn event_at(file: &RunFile, seq: u64) -> Option<&EventRecord> {
    let at = usize::try_from(seq).ok()?;
    match file.events.get(at) {
        Some(e) if e.seq == seq => Some(e),
        _ => file.events.iter().find(|e| e.seq == seq),
    }
}

/// The tool calls an answer asks for: its OpenAI `tool_calls`, then each `Action: TOOL {json}`
/// line of its text (the convention of the recorded sessions and the example agent).
pub fn proposed_calls(response: &ChatResponse) -> Vec<(String, Value)> {
    let mut calls: Vec<(String, Value)> = response
        .tool_calls
        .iter()
        .map(|c| {
            let arguments = serde_json::from_str(&c.function.arguments)
                .unwrap_or(Value::Object(Default::default()));
            (c.function.name.clone(), arguments)
        })
        .collect();
    for line in response.content.lines() {
        let Some(rest) = line.trim().strip_prefix("Action:") else {
            continue;
        };
        let rest = rest.trim();
        let (tool, arguments) = match rest.split_once(char::is_whitespace) {
            Some((tool, json)) => (tool, serde_json::from_str(json.trim()).ok()),
            None => (rest, None),
        };
        if !tool.is_empty() {
            calls.push((
                tool.to_string(),
                arguments.unwrap_or(Value::Object(Default::default())),
            ));
        }
    }
    calls
}

/// Tokens per item kind that the compiles of a step allocated (included items only).
pub fn allocation(step: &StepTrace) -> BTreeMap<ItemKind, u32> {
    let mut by_kind = BTreeMap::new();
    for c in &step.compiles {
        for item in &c.items {
            *by_kind.entry(item.kind).or_insert(0) += item.tokens;
        }
    }
    by_kind
}

#[cfg(test)]
mod tests;
