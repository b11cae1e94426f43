//! Distilling one finished run: its episodes, its candidates, and for each candidate what
//! became of it — a new memory (promoted at once when it passes the thresholds, else waiting
//! for review), a new source strengthening the memory that already says it, or nothing when
//! this run already is a source of it. All in one write: a failure stores nothing.

use std::collections::HashMap;

use serde::Serialize;
use serde_json::{Value, json};

use super::dedupe::NearIndex;
use super::episodes::{TraceEpisode, episodes};
use super::extract::candidates;
use super::{
    Decision, MemoryCandidate, MemoryClass, MemoryError, MemoryStatus, PromotionDecision, store,
};
use crate::clock::{parse_rfc3339, rfc3339};
use crate::jobs::{JobContext, JobFailure};
use crate::recorder::{Recorder, RecorderError};

/// The job kind that distills a run (`{"run": "run-1"}`).
pub const DISTILL_JOB: &str = "memory.distill";

/// Who the distiller's own decisions are by.
pub const DISTILLER: &str = "distiller";

/// What became of one candidate.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DistillOutcome {
    /// The candidate, as extracted.
    pub candidate: MemoryCandidate,
    /// `created`, `strengthened` (a new source of an existing memory) or `unchanged` (this
    /// run already is a source of it).
    pub action: &'static str,
    /// The memory it is or strengthened.
    pub memory: String,
    /// That memory's status now.
    pub status: MemoryStatus,
    /// Why it was promoted or waits (for a created memory), or what it merged into.
    pub verdict: String,
}

/// A run distilled.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DistillReport {
    /// The run.
    pub run: String,
    /// Its episodes.
    pub episodes: Vec<TraceEpisode>,
    /// Each candidate and what became of it, in the order of their evidence.
    pub outcomes: Vec<DistillOutcome>,
}

impl DistillReport {
    /// How many outcomes had `action`.
    pub fn count(&self, action: &str) -> usize {
        self.outcomes.iter().filter(|o| o.action == action).count()
    }

    /// A human-readable account.
    pub fn to_text(&self) -> String {
        let mut out = format!(
            "run {}: {} episode(s), {} candidate(s): {} new memory(ies), {} strengthened, {} unchanged\n",
            self.run,
            self.episodes.len(),
            self.outcomes.len(),
            self.count("created"),
            self.count("strengthened"),
            self.count("unchanged")
        );
        for e in &self.episodes {
            out.push_str(&format!(
                "episode {} steps {}-{} {} {} {}: {} (starts: {})\n",
                e.index,
                e.first_step,
                e.last_step,
                e.agent,
                e.phase.as_str(),
                serde_json::to_value(e.outcome)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default(),
                e.intent,
                e.boundary
            ));
        }
        for o in &self.outcomes {
            let c = &o.candidate;
            out.push_str(&format!(
                "{:<12} {} {:<10} {:<11} score {:.2} (confidence {:.2}, reuse {:.2}, recency {:.2}, sensitivity -{:.1}) {}\n    {}\n    {} · event {} · {}\n",
                o.action,
                o.memory,
                c.class.as_str(),
                o.status.as_str(),
                c.score.total,
                c.score.confidence,
                c.score.reuse,
                c.score.recency,
                c.score.sensitivity,
                c.scope,
                c.text,
                c.extractor,
                c.evidence.event,
                o.verdict
            ));
        }
        out
    }
}

/// Distills a finished run at `now_ms`, calling `progress(done, total, message)` as it goes.
/// Refused, storing nothing, for a run still running.
pub fn distill_run(
    recorder: &Recorder,
    run: &str,
    now_ms: i64,
    progress: &mut dyn FnMut(u64, u64, &str),
) -> Result<DistillReport, MemoryError> {
    let header = recorder.header(run)?;
    if header.status == "running" {
        return Err(MemoryError::Conflict(format!(
            "run `{run}` is still running\n  help: distill a run once it has finished (`POST /v1/runs/{run}/finish`)"
        )));
    }
    let file = recorder.export(run)?;
    let episodes = episodes(&file);
    let found = candidates(&file, &episodes, now_ms.div_euclid(1000));
    let total = found.len() as u64;
    progress(
        0,
        total,
        &format!("{} episode(s), {total} candidate(s)", episodes.len()),
    );
    let ended = file
        .run
        .finished_at
        .as_deref()
        .and_then(parse_rfc3339)
        .or_else(|| parse_rfc3339(&file.run.started_at))
        .unwrap_or(0) as i64;
    let at = rfc3339(u64::try_from(now_ms / 1000).unwrap_or(0));
    let outcomes = recorder.store().write(move |c| {
        let mut outcomes = Vec::with_capacity(found.len());
        // The memories of each class and scope met, indexed for near duplicates once.
        let mut near: HashMap<(MemoryClass, String), NearIndex> = HashMap::new();
        for candidate in found {
            let expires_at = if candidate.ttl_seconds == 0 {
                0
            } else {
                ended + candidate.ttl_seconds as i64
            };
            let key = (candidate.class, candidate.scope.clone());
            if !near.contains_key(&key) {
                let index = store::near_index(c, candidate.class, &candidate.scope)?;
                near.insert(key.clone(), index);
            }
            let (action, memory, verdict) = if store::status(c, &candidate.id)?.is_some() {
                let added =
                    store::add_source(c, &candidate.id, &candidate.evidence, expires_at, &at)?;
                let action = if added { "strengthened" } else { "unchanged" };
                (
                    action,
                    candidate.id.clone(),
                    "the same memory, said again".to_string(),
                )
            } else if let Some(other) = near.get(&key).and_then(|n| n.best(&candidate.text)) {
                let added = store::add_source(c, &other, &candidate.evidence, expires_at, &at)?;
                let why = format!("says what {other} says");
                if added {
                    store::insert_decision(
                        c,
                        &PromotionDecision {
                            memory: candidate.id.clone(),
                            decision: Decision::Merge,
                            by: DISTILLER.into(),
                            reason: why.clone(),
                            at: at.clone(),
                            merged_into: Some(other.clone()),
                        },
                    )?;
                }
                (if added { "strengthened" } else { "unchanged" }, other, why)
            } else {
                store::insert(c, &candidate, expires_at, &at)?;
                if let Some(index) = near.get_mut(&key) {
                    index.add(&candidate.id, &candidate.text);
                }
                let (accept, why) = candidate.score.verdict(candidate.sensitivity);
                if accept {
                    store::set_status(c, &candidate.id, MemoryStatus::Approved, &at)?;
                    store::insert_decision(
                        c,
                        &PromotionDecision {
                            memory: candidate.id.clone(),
                            decision: Decision::Accept,
                            by: DISTILLER.into(),
                            reason: why.clone(),
                            at: at.clone(),
                            merged_into: None,
                        },
                    )?;
                }
                ("created", candidate.id.clone(), why)
            };
            let status = store::status(c, &memory)?.unwrap_or(MemoryStatus::Candidate);
            outcomes.push(DistillOutcome {
                candidate,
                action,
                memory,
                status,
                verdict,
            });
        }
        Ok(outcomes)
    })?;
    progress(total, total, "stored");
    Ok(DistillReport {
        run: run.to_string(),
        episodes,
        outcomes,
    })
}

/// The `memory.distill` job: distills `{"run": ID}` with progress; the result counts what
/// became of the candidates.
pub fn distill_job(context: &JobContext<'_>, payload: &Value) -> Result<Value, JobFailure> {
    let run = payload.get("run").and_then(Value::as_str).ok_or_else(|| {
        JobFailure::permanent(
            "a `memory.distill` payload names its run\n  help: {\"run\": \"run-1\"}",
        )
    })?;
    let recorder = Recorder::new(context.store().clone());
    let mut failed_progress = None;
    let report = distill_run(&recorder, run, context.clock().now_ms(), &mut |d, t, m| {
        if let Err(e) = context.progress(d, t, m) {
            failed_progress = Some(e);
        }
    });
    if let Some(e) = failed_progress {
        return Err(JobFailure::retry(e.to_string()));
    }
    match report {
        Ok(r) => Ok(json!({
            "run": r.run,
            "episodes": r.episodes.len(),
            "candidates": r.outcomes.len(),
            "created": r.count("created"),
            "strengthened": r.count("strengthened"),
            "unchanged": r.count("unchanged"),
            "approved": r.outcomes.iter().filter(|o| o.action == "created" && o.status == MemoryStatus::Approved).count(),
        })),
        Err(MemoryError::Recorder(RecorderError::UnknownRun(r))) => {
            Err(JobFailure::permanent(format!("no run `{r}`")))
        }
        Err(
            e @ (MemoryError::Invalid(_) | MemoryError::Conflict(_) | MemoryError::NotFound(_)),
        ) => Err(JobFailure::permanent(e.to_string())),
        Err(e) => Err(JobFailure::retry(e.to_string())),
    }
}
