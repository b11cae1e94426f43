//! The operations a sequence is made of, how they are drawn, and how an engine applies one.

use std::time::Duration;

use proptest::prelude::*;
use serde_json::{Value, json};
use tollgate_rules::envelope::EnvelopeSet;

use super::pools::{
    AGENTS, CASES, CONTRACTS, Call, DAYS, DECIDERS, FINISHES, JOB_KINDS, LEVELS, NOWS,
    OPEN_STATUSES, PAYLOADS, REVIEWS, RUNS, STARTS, STEP_NAMES, TIMES, TOOL, VERDICTS, WORKERS,
    arguments, case_body, contract_json, day_secs, day_text, header, payload, rate_header,
    rate_rules, request, run_file,
};
use super::{Engine, show};
use crate::approvals::{self, ApprovalAnswer, ApprovalFilter, ApprovalState};
use crate::cases::{self, NewEvent};
use crate::clock::{Clock, rfc3339};
use crate::handoff::{self, AckResponse, ConsumerAck};
use crate::jobs::{EnqueueOptions, JobId};
use crate::memory::{self, MemoryFeedback};
use crate::ratelimit;
use crate::recorder::format::EventKind;
use crate::store::Store;

/// One operation; indexes are into the [pools](super::pools), except what [`Picked`] resolves
/// against the stored state: a memory or approval operation's `memory` or `approval`, a case
/// append's `off_by`.
#[derive(Debug, Clone)]
pub(super) enum Op {
    OpenRun {
        run: usize,
        agent: usize,
        start: usize,
        status: usize,
    },
    AddStep {
        run: usize,
        name: usize,
    },
    Append {
        run: usize,
        step: u32,
        payload: usize,
        at: usize,
    },
    AppendMany {
        run: usize,
        steps: Vec<u32>,
        at: usize,
    },
    Finish {
        run: usize,
        status: usize,
        at: usize,
    },
    Import {
        run: usize,
        events: usize,
        finished: bool,
    },
    RequestApproval {
        call: Call,
        approvers: bool,
        ttl_seconds: i64,
        now: usize,
    },
    DecideApproval {
        approval: usize,
        approve: bool,
        by: usize,
        now: usize,
    },
    UseApproval {
        approval: usize,
        other_args: bool,
        other_envelopes: bool,
        now: usize,
    },
    Enqueue {
        kind: usize,
        dedupe: Option<usize>,
        max_attempts: u32,
        delay_secs: Option<i64>,
    },
    Lease {
        worker: usize,
        kind: Option<usize>,
        secs: u64,
    },
    Complete {
        lease: usize,
    },
    Fail {
        lease: usize,
        permanent: bool,
    },
    Progress {
        lease: usize,
        done: u64,
    },
    Cancel {
        job: i64,
    },
    Advance {
        secs: u64,
    },
    ExpireLeases,
    CaseAppend {
        case: usize,
        /// The version it expects, less the case's version (0: current, else stale or ahead).
        off_by: i64,
        bodies: Vec<usize>,
        event_ids: Option<usize>,
        at: usize,
    },
    Distill {
        run: usize,
        day: usize,
    },
    Review {
        memory: usize,
        decision: usize,
        by: usize,
        day: usize,
    },
    Feedback {
        memory: usize,
        verdict: usize,
        by: usize,
        day: usize,
    },
    Pin {
        memory: usize,
        pinned: bool,
        day: usize,
    },
    Sensitivity {
        memory: usize,
        level: usize,
        day: usize,
    },
    Decay {
        day: usize,
    },
    Collect {
        day: usize,
        retention_days: i64,
    },
    ReviewQuarantine {
        day: usize,
    },
    CountCall {
        run: usize,
        rules: usize,
        call: usize,
        now: usize,
    },
    Submit {
        contract: usize,
        producer: usize,
        complete: bool,
        wording: usize,
        at: usize,
    },
    Acknowledge {
        contract: usize,
        response: usize,
        reason: bool,
        at: usize,
    },
}

/// What an operation takes from where the stores stand, read from the SQLite one and given to
/// both, so that a difference shows in their answers rather than in what they were asked: the
/// memory or approval it names (the `k`-th stored, or an unknown one past the last) with the
/// approval's run and arguments, the version a case append expects.
#[derive(Debug, Default)]
pub(super) struct Picked {
    pub(super) id: String,
    call: Option<(String, Value)>,
    pub(super) version: i64,
}

impl Op {
    pub(super) fn pick(&self, store: &Store) -> Option<Picked> {
        match self {
            Op::Review { memory, .. }
            | Op::Feedback { memory, .. }
            | Op::Pin { memory, .. }
            | Op::Sensitivity { memory, .. } => Some(Picked {
                id: memory_ids(store)
                    .get(*memory)
                    .cloned()
                    .unwrap_or_else(|| "mem-none".into()),
                ..Picked::default()
            }),
            Op::DecideApproval { approval, .. } | Op::UseApproval { approval, .. } => {
                // Those the operation can act on first: pending ones to decide, approved ones
                // to use.
                let ready = match self {
                    Op::DecideApproval { .. } => ApprovalState::Pending,
                    _ => ApprovalState::Approved,
                };
                let mut all =
                    approvals::list(store, &ApprovalFilter::default(), NOWS[0]).unwrap_or_default();
                all.sort_by_key(|a| a.state != ready);
                Some(match all.get(*approval) {
                    Some(a) => Picked {
                        id: a.id.clone(),
                        call: Some((a.run.clone(), a.arguments.clone())),
                        version: 0,
                    },
                    None => Picked {
                        id: "apr-none".into(),
                        ..Picked::default()
                    },
                })
            }
            Op::CaseAppend { case, off_by, .. } => {
                let case = CASES[*case];
                let version = store.read(move |c| cases::log::version_in(c, case));
                Some(Picked {
                    version: version.unwrap_or(0) + off_by,
                    ..Picked::default()
                })
            }
            _ => None,
        }
    }
}

/// 0 three times in four, else 1.
fn mostly_first() -> BoxedStrategy<usize> {
    prop_oneof![3 => Just(0usize), 1 => Just(1)].boxed()
}

/// A run of the pool: mostly the two the prelude opens, so that operations find them.
fn run() -> BoxedStrategy<usize> {
    prop_oneof![3 => Just(0usize), 3 => Just(1), 1 => Just(2), 1 => Just(3)].boxed()
}

/// A step: mostly the first, which the prelude adds to its runs.
fn step() -> BoxedStrategy<u32> {
    prop_oneof![4 => Just(0u32), 1 => Just(1), 1 => Just(2)].boxed()
}

fn recorder_op() -> impl Strategy<Value = Op> {
    let run = run();
    let at = 0..TIMES.len();
    prop_oneof![
        3 => (run.clone(), 0..AGENTS.len(), 0..STARTS.len(), 0..OPEN_STATUSES.len())
            .prop_map(|(run, agent, start, status)| Op::OpenRun { run, agent, start, status }),
        2 => (run.clone(), 0..STEP_NAMES.len()).prop_map(|(run, name)| Op::AddStep { run, name }),
        5 => (run.clone(), step(), 0..PAYLOADS, at.clone())
            .prop_map(|(run, step, payload, at)| Op::Append { run, step, payload, at }),
        1 => (run.clone(), prop::collection::vec(step(), 1..4), at.clone())
            .prop_map(|(run, steps, at)| Op::AppendMany { run, steps, at }),
        2 => (run.clone(), 0..FINISHES.len(), at)
            .prop_map(|(run, status, at)| Op::Finish { run, status, at }),
        1 => (run, 0usize..4, any::<bool>())
            .prop_map(|(run, events, finished)| Op::Import { run, events, finished }),
    ]
}

fn approval_op() -> impl Strategy<Value = Op> {
    // Mostly one call with its first arguments, so that its approval is asked, answered, used.
    let call = (run(), mostly_first(), mostly_first()).prop_map(|(run, call, args)| Call {
        run,
        call,
        args,
    });
    let now = 0..NOWS.len();
    // Mostly the first approvals asked; mostly a decider who may.
    let approval = prop_oneof![6 => Just(0usize), 2 => Just(1), 1 => 2usize..6];
    let decider = prop_oneof![4 => Just(0usize), 1 => 1..DECIDERS.len()];
    prop_oneof![
        (
            call,
            any::<bool>(),
            prop::sample::select(vec![60i64, 600]),
            now.clone()
        )
            .prop_map(|(call, approvers, ttl_seconds, now)| Op::RequestApproval {
                call,
                approvers,
                ttl_seconds,
                now
            }),
        (approval.clone(), any::<bool>(), decider, now.clone()).prop_map(
            |(approval, approve, by, now)| Op::DecideApproval {
                approval,
                approve,
                by,
                now
            }
        ),
        (
            approval,
            prop::bool::weighted(0.1),
            prop::bool::weighted(0.1),
            now
        )
            .prop_map(
                |(approval, other_args, other_envelopes, now)| Op::UseApproval {
                    approval,
                    other_args,
                    other_envelopes,
                    now
                }
            ),
    ]
}

fn job_op() -> impl Strategy<Value = Op> {
    let kind = 0..JOB_KINDS.len();
    prop_oneof![
        3 => (kind.clone(), prop::option::of(0usize..2), 0u32..3, prop::option::of(0i64..20))
            .prop_map(|(kind, dedupe, max_attempts, delay_secs)| Op::Enqueue {
                kind,
                dedupe,
                max_attempts,
                delay_secs
            }),
        3 => (0..WORKERS.len(), prop::option::of(kind), prop::sample::select(vec![5u64, 60]))
            .prop_map(|(worker, kind, secs)| Op::Lease { worker, kind, secs }),
        2 => (0usize..8).prop_map(|lease| Op::Complete { lease }),
        2 => (0usize..8, any::<bool>()).prop_map(|(lease, permanent)| Op::Fail { lease, permanent }),
        1 => (0usize..8, 0u64..10).prop_map(|(lease, done)| Op::Progress { lease, done }),
        1 => (1i64..6).prop_map(|job| Op::Cancel { job }),
        2 => prop::sample::select(vec![1u64, 4, 30, 90]).prop_map(|secs| Op::Advance { secs }),
        1 => Just(Op::ExpireLeases),
    ]
}

fn case_op() -> impl Strategy<Value = Op> {
    // Mostly at the case's version; the opening event now and then, first.
    let off_by = prop_oneof![5 => Just(0i64), 1 => Just(-1), 1 => Just(1)];
    let first = prop_oneof![1 => Just(0usize), 4 => 1usize..10];
    (
        0..CASES.len(),
        off_by,
        first,
        prop::collection::vec(1usize..10, 0..2),
        prop::option::of(0usize..4),
        0..TIMES.len(),
    )
        .prop_map(
            |(case, off_by, first, rest, event_ids, at)| Op::CaseAppend {
                case,
                off_by,
                bodies: [vec![first], rest].concat(),
                event_ids,
                at,
            },
        )
}

fn memory_op() -> impl Strategy<Value = Op> {
    let memory = 0usize..8;
    let day = 0..DAYS.len();
    prop_oneof![
        3 => (0..RUNS.len(), day.clone()).prop_map(|(run, day)| Op::Distill { run, day }),
        2 => (memory.clone(), 0..REVIEWS.len(), mostly_first(), day.clone())
            .prop_map(|(memory, decision, by, day)| Op::Review { memory, decision, by, day }),
        2 => (memory.clone(), 0..VERDICTS.len(), mostly_first(), day.clone())
            .prop_map(|(memory, verdict, by, day)| Op::Feedback { memory, verdict, by, day }),
        1 => (memory.clone(), any::<bool>(), day.clone())
            .prop_map(|(memory, pinned, day)| Op::Pin { memory, pinned, day }),
        1 => (memory, 0..LEVELS.len(), day.clone())
            .prop_map(|(memory, level, day)| Op::Sensitivity { memory, level, day }),
        1 => day.clone().prop_map(|day| Op::Decay { day }),
        1 => (day.clone(), prop::sample::select(vec![-1i64, 0, 30]))
            .prop_map(|(day, retention_days)| Op::Collect { day, retention_days }),
        1 => day.prop_map(|day| Op::ReviewQuarantine { day }),
    ]
}

fn rate_op() -> impl Strategy<Value = Op> {
    (run(), 0usize..3, 0usize..3, 0..NOWS.len()).prop_map(|(run, rules, call, now)| Op::CountCall {
        run,
        rules,
        call,
        now,
    })
}

fn handoff_op() -> impl Strategy<Value = Op> {
    let contract = 0..CONTRACTS.len();
    let at = 0..TIMES.len();
    prop_oneof![
        (
            contract.clone(),
            run(),
            prop::bool::weighted(0.8),
            0usize..2,
            at.clone()
        )
            .prop_map(|(contract, producer, complete, wording, at)| Op::Submit {
                contract,
                producer,
                complete,
                wording,
                at
            }),
        (contract, 0usize..3, prop::bool::weighted(0.8), at).prop_map(
            |(contract, response, reason, at)| Op::Acknowledge {
                contract,
                response,
                reason,
                at
            }
        ),
    ]
}

pub(super) fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => recorder_op(),
        4 => approval_op(),
        4 => job_op(),
        2 => case_op(),
        3 => memory_op(),
        1 => rate_op(),
        2 => handoff_op(),
    ]
}

impl Engine {
    /// Applies `op`, with what it took from the stored state, and gives its answer.
    pub(super) fn apply(&mut self, op: &Op, picked: &Picked) -> String {
        let store = self.store().clone();
        let memory = picked.id.as_str();
        match op.clone() {
            Op::OpenRun {
                run,
                agent,
                start,
                status,
            } => show(self.recorder.open_run(&header(run, agent, start, status))),
            Op::AddStep { run, name } => show(self.recorder.add_step(
                RUNS[run],
                STEP_NAMES[name],
                AGENTS[0],
            )),
            Op::Append {
                run,
                step,
                payload: p,
                at,
            } => {
                let (kind, body) = payload(p);
                show(self.recorder.append(RUNS[run], step, kind, TIMES[at], body))
            }
            Op::AppendMany { run, steps, at } => {
                // Events after one at a missing step are never written: the batch is one write.
                let events = steps
                    .iter()
                    .enumerate()
                    .map(|(i, step)| {
                        let text = format!("fact: batch note {i} at step {step}");
                        (
                            *step,
                            EventKind::Note,
                            TIMES[at].to_string(),
                            json!({ "text": text }),
                        )
                    })
                    .collect();
                show(self.recorder.append_many(RUNS[run], events))
            }
            Op::Finish { run, status, at } => show(self.recorder.finish_run(
                RUNS[run],
                FINISHES[status],
                TIMES[at],
            )),
            Op::Import {
                run,
                events,
                finished,
            } => show(self.recorder.import(&run_file(run, events, finished))),
            Op::RequestApproval {
                call,
                approvers,
                ttl_seconds,
                now,
            } => {
                let req = request(call, approvers, ttl_seconds);
                let now = NOWS[now];
                show(store.write(move |c| approvals::insert_pending(c, &req, now)))
            }
            Op::DecideApproval {
                approve, by, now, ..
            } => {
                let answer = ApprovalAnswer {
                    approve,
                    by: DECIDERS[by].into(),
                    reason: "looked at it".into(),
                    principal: None,
                };
                let at = rfc3339(NOWS[now].unsigned_abs() / 1000);
                show(approvals::decide(
                    &store, &picked.id, &answer, NOWS[now], &at,
                ))
            }
            Op::UseApproval {
                other_args,
                other_envelopes,
                now,
                ..
            } => {
                let id = picked.id.clone();
                let (run, mut args) = picked
                    .call
                    .clone()
                    .unwrap_or((RUNS[0].into(), arguments(0)));
                if other_args {
                    args = json!({ "cmd": "rm -rf /" });
                }
                let hash = approvals::call_hash(&run, TOOL, &args);
                let envelopes = vec![if other_envelopes { "e@2" } else { "e@1" }.to_string()];
                let now = NOWS[now];
                show(
                    store
                        .transact(move |c| approvals::use_in(c, &id, &run, &hash, &envelopes, now)),
                )
            }
            Op::Enqueue {
                kind,
                dedupe,
                max_attempts,
                delay_secs,
            } => {
                let options = EnqueueOptions {
                    max_attempts,
                    run_after_ms: delay_secs.map(|s| self.clock.now_ms() + s * 1000),
                    dedupe_key: dedupe.map(|k| format!("key-{k}")),
                };
                show(
                    self.jobs
                        .enqueue(JOB_KINDS[kind], json!({ "n": kind }), options),
                )
            }
            Op::Lease { worker, kind, secs } => {
                let kinds: Vec<&str> = kind.map(|k| JOB_KINDS[k]).into_iter().collect();
                let leased = self
                    .jobs
                    .lease(WORKERS[worker], &kinds, Duration::from_secs(secs));
                if let Ok(Some(lease)) = &leased {
                    self.leases.push(lease.clone());
                }
                show(leased)
            }
            Op::Complete { lease } => match self.lease(lease) {
                Some(l) => show(self.jobs.complete(&l, json!({ "done": l.id }))),
                None => "no lease taken yet".into(),
            },
            Op::Fail { lease, permanent } => match self.lease(lease) {
                Some(l) if permanent => show(
                    self.jobs
                        .fail(&l, crate::jobs::JobFailure::permanent("bad payload")),
                ),
                Some(l) => show(self.jobs.fail(&l, "flaky")),
                None => "no lease taken yet".into(),
            },
            Op::Progress { lease, done } => match self.lease(lease) {
                Some(l) => show(self.jobs.progress(&l, done, 10, "working")),
                None => "no lease taken yet".into(),
            },
            Op::Cancel { job } => show(self.jobs.cancel(JobId(job))),
            Op::Advance { secs } => {
                self.clock.advance(Duration::from_secs(secs));
                format!("the clock is at {}", self.clock.now_ms())
            }
            Op::ExpireLeases => show(self.jobs.expire_leases()),
            Op::CaseAppend {
                case,
                bodies,
                event_ids,
                at,
                ..
            } => {
                let events = bodies
                    .iter()
                    .enumerate()
                    .map(|(i, b)| NewEvent {
                        event_id: event_ids.map(|k| format!("ev-{}", k + i)),
                        body: case_body(*b, case),
                        actor: "worker".into(),
                    })
                    .collect();
                show(cases::store::append(
                    &store,
                    CASES[case],
                    picked.version,
                    events,
                    TIMES[at],
                ))
            }
            Op::Distill { run, day } => show(memory::distill_run(
                &self.recorder,
                RUNS[run],
                day_secs(day) * 1000,
                &mut |_, _, _| {},
            )),
            Op::Review {
                decision, by, day, ..
            } => show(memory::record_decision(
                &store,
                memory,
                REVIEWS[decision],
                ["lead", " "][by],
                "checked it",
                &day_text(day),
            )),
            Op::Feedback {
                verdict, by, day, ..
            } => show(memory::give_feedback(
                &store,
                memory,
                MemoryFeedback {
                    verdict: VERDICTS[verdict],
                    by: "coder".into(),
                    note: ["", "the handler moved"][by].into(),
                    run: Some(RUNS[0].into()),
                    at: day_text(day),
                },
            )),
            Op::Pin { pinned, day, .. } => {
                show(memory::set_pinned(&store, memory, pinned, &day_text(day)))
            }
            Op::Sensitivity { level, day, .. } => show(memory::set_sensitivity(
                &store,
                memory,
                LEVELS[level],
                "lead",
                "it names a host",
                &day_text(day),
            )),
            Op::Decay { day } => show(memory::decay(&store, day_secs(day))),
            Op::Collect {
                day,
                retention_days,
            } => show(memory::collect(&store, day_secs(day), retention_days)),
            Op::ReviewQuarantine { day } => show(memory::review_quarantine(&store, day_secs(day))),
            Op::CountCall {
                run,
                rules,
                call,
                now,
            } => {
                let (header, rules) = (rate_header(run), rate_rules(rules));
                let (call, now) = (format!("call-{call}"), NOWS[now]);
                show(store.write(move |c| ratelimit::record_in(c, &header, &rules, &call, now)))
            }
            Op::Submit {
                contract,
                producer,
                complete,
                wording,
                at,
            } => match handoff::contract::from_value(&contract_json(
                contract, producer, complete, wording,
            )) {
                Ok(c) => show(handoff::submit::submit(
                    &self.recorder,
                    &EnvelopeSet::empty(),
                    c,
                    AGENTS[0],
                    TIMES[at],
                )),
                Err(faults) => format!("the contract does not read: {faults}"),
            },
            Op::Acknowledge {
                contract,
                response,
                reason,
                at,
            } => {
                let ack = ConsumerAck {
                    response: [
                        AckResponse::Accept,
                        AckResponse::Reject,
                        AckResponse::Clarify,
                    ][response],
                    version: None,
                    run: None,
                    by: None,
                    reason: reason.then(|| "the plan is unclear".into()),
                    questions: vec![],
                };
                show(handoff::submit::acknowledge(
                    &self.recorder,
                    CONTRACTS[contract],
                    ack,
                    TIMES[at],
                ))
            }
        }
    }
}

/// The ids of the memories stored, by id.
pub(super) fn memory_ids(store: &Store) -> Vec<String> {
    memory::page(store, None, None, None, 500)
        .map(|p| p.memories.into_iter().map(|m| m.id).collect())
        .unwrap_or_default()
}
