//! A run's steps grouped into episodes: consecutive steps of one agent, one task intent and one
//! tool phase, closed at an outcome boundary. Each episode says why it starts where it does.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use tollgate_rules::decide::DecisionEffect;

use crate::compiler::ItemKind;
use crate::recorder::events::Event;
use crate::recorder::format::{EventRecord, RunFile};

/// What a step's tool calls do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolPhase {
    /// Reading, listing, searching, fetching.
    Explore,
    /// Writing, committing, deleting.
    Change,
    /// Running commands.
    Execute,
    /// No tool call: thinking, answering.
    Talk,
}

impl ToolPhase {
    /// The phase of one tool, from its name (`fs.read_file`, `shell.exec`, `git.commit`).
    pub fn of_tool(tool: &str) -> ToolPhase {
        let (family, action) = tool.split_once('.').unwrap_or((tool, tool));
        let has = |words: &[&str]| words.iter().any(|w| action.contains(w));
        if family == "shell" || family == "exec" || has(&["exec", "run"]) {
            ToolPhase::Execute
        } else if has(&[
            "write", "commit", "push", "delete", "remove", "rm", "create", "update", "put",
            "patch", "move",
        ]) {
            ToolPhase::Change
        } else {
            ToolPhase::Explore
        }
    }

    /// The stored and wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            ToolPhase::Explore => "explore",
            ToolPhase::Change => "change",
            ToolPhase::Execute => "execute",
            ToolPhase::Talk => "talk",
        }
    }
}

/// How an episode ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EpisodeOutcome {
    /// Its calls went through and succeeded.
    Succeeded,
    /// A tool call failed.
    Failed,
    /// Policy denied a call.
    Blocked,
}

/// A clustered slice of a run that can be distilled.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceEpisode {
    /// Its place in the run (0, 1, ...).
    pub index: u32,
    /// Its first step.
    pub first_step: u32,
    /// Its last step.
    pub last_step: u32,
    /// The agent whose steps these are.
    pub agent: String,
    /// What it set out to do: the name of its first step.
    pub intent: String,
    /// What its tool calls do.
    pub phase: ToolPhase,
    /// How it ended.
    pub outcome: EpisodeOutcome,
    /// Why it starts where it does.
    pub boundary: String,
}

/// What one step is, for grouping.
struct StepTraits {
    index: u32,
    name: String,
    agent: String,
    phase: ToolPhase,
    outcome: EpisodeOutcome,
    /// A user message first offered in this step.
    new_request: Option<String>,
}

/// The episodes of a run, in order.
pub fn episodes(run: &RunFile) -> Vec<TraceEpisode> {
    let traits = step_traits(run);
    let mut out: Vec<TraceEpisode> = Vec::new();
    let mut previous: Option<&StepTraits> = None;
    for step in &traits {
        let boundary = match previous {
            None => Some("the run starts".to_string()),
            Some(p) if p.agent != step.agent => {
                Some(format!("{} hands over to {}", p.agent, step.agent))
            }
            Some(_) if step.new_request.is_some() => Some(format!(
                "a new request from the user ({})",
                step.new_request.as_deref().unwrap_or_default()
            )),
            Some(p) if p.outcome != EpisodeOutcome::Succeeded => Some(format!(
                "after a {} step",
                match p.outcome {
                    EpisodeOutcome::Failed => "failed",
                    _ => "blocked",
                }
            )),
            Some(p) if p.phase != step.phase => Some(format!(
                "the tool phase turns from {} to {}",
                p.phase.as_str(),
                step.phase.as_str()
            )),
            Some(_) => None,
        };
        match (boundary, out.last_mut()) {
            (None, Some(current)) => {
                current.last_step = step.index;
                current.outcome = worse(current.outcome, step.outcome);
            }
            (boundary, _) => out.push(TraceEpisode {
                index: out.len() as u32,
                first_step: step.index,
                last_step: step.index,
                agent: step.agent.clone(),
                intent: step.name.clone(),
                phase: step.phase,
                outcome: step.outcome,
                boundary: boundary.unwrap_or_else(|| "the run starts".into()),
            }),
        }
        previous = Some(step);
    }
    out
}

/// The episode a step falls in.
pub(crate) fn episode_of(episodes: &[TraceEpisode], step: u32) -> u32 {
    // Episodes are contiguous and in order: the last one starting at or before the step.
    let i = episodes.partition_point(|e| e.first_step <= step);
    episodes
        .get(i.wrapping_sub(1))
        .filter(|e| step <= e.last_step)
        .map_or(0, |e| e.index)
}

fn worse(a: EpisodeOutcome, b: EpisodeOutcome) -> EpisodeOutcome {
    a.max(b)
}

/// A run's events by step, in order (one pass, not one per step).
pub(crate) fn events_by_step(run: &RunFile) -> BTreeMap<u32, Vec<&EventRecord>> {
    let mut out: BTreeMap<u32, Vec<&EventRecord>> = BTreeMap::new();
    for e in &run.events {
        out.entry(e.step).or_default().push(e);
    }
    out
}

fn step_traits(run: &RunFile) -> Vec<StepTraits> {
    let mut offered: BTreeSet<String> = BTreeSet::new();
    let by_step = events_by_step(run);
    run.steps
        .iter()
        .map(|s| {
            let mut phases = BTreeSet::new();
            let mut outcome = EpisodeOutcome::Succeeded;
            let mut new_request = None;
            for e in by_step.get(&s.index).into_iter().flatten() {
                match e.event() {
                    Ok(Event::ToolCall(c)) => {
                        phases.insert(ToolPhase::of_tool(&c.tool));
                    }
                    Ok(Event::ToolResult(r)) if r.status != "ok" => {
                        outcome = worse(outcome, EpisodeOutcome::Failed);
                    }
                    Ok(Event::Decision(d)) if d.answered() == DecisionEffect::Deny => {
                        outcome = worse(outcome, EpisodeOutcome::Blocked);
                    }
                    Ok(Event::ContextOffered(o)) => {
                        for item in o.items {
                            let from_user = item.kind == ItemKind::Message
                                && item.role.as_deref() == Some("user");
                            if offered.insert(item.id.clone()) && from_user && new_request.is_none()
                            {
                                new_request = Some(item.id);
                            }
                        }
                    }
                    _ => {}
                }
            }
            // A step's phase is its most consequential call's: change over execute over explore.
            let phase = [ToolPhase::Change, ToolPhase::Execute, ToolPhase::Explore]
                .into_iter()
                .find(|p| phases.contains(p))
                .unwrap_or(ToolPhase::Talk);
            StepTraits {
                index: s.index,
                name: s.name.clone(),
                agent: s.agent.clone(),
                phase,
                outcome,
                new_request: (s.index > 0).then_some(new_request).flatten(),
            }
        })
        .collect()
}
