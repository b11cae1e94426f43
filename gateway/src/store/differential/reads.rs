//! The reads compared at the end of a sequence, over everything the operations may have written.

use tollgate_rules::envelope::{EnvelopeSet, Level};

use super::pools::{
    AGENTS, CASES, CONTRACTS, Call, NOWS, RUNS, day_secs, rate_header, rate_rules, request,
};
use super::{Engine, show};
use crate::approvals::{self, ApprovalFilter, ApprovalKey, ApprovalState};
use crate::handoff;
use crate::jobs::{JobId, JobState};
use crate::memory::{self, MemoryFilter, MemoryStatus, SearchQuery};
use crate::provenance::{self, Walk};
use crate::ratelimit;
use crate::recorder::format::EventKind;
use crate::recorder::{RunFilter, RunKey};
use crate::store::Store;

/// Every read compared at the end, labelled; `memories` are the ids the SQLite store holds.
pub(super) fn reads(e: &Engine, memories: &[String]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    runs_read(e, &mut out);
    approvals_read(e.store(), &mut out);
    jobs_read(e, &mut out);
    cases_read(e.store(), &mut out);
    memories_read(e, memories, &mut out);
    handoffs_read(e, &mut out);
    let store = e.store();
    for run in 0..RUNS.len() {
        for k in 0..3 {
            for now in NOWS {
                let (header, rules) = (rate_header(run), rate_rules(k));
                let usage = store.read(move |c| ratelimit::usage(c, &header, &rules, now));
                out.push((format!("rate usage of {run}/{k} at {now}"), show(usage)));
            }
        }
    }
    out
}

fn runs_read(e: &Engine, out: &mut Vec<(String, String)>) {
    let rec = &e.recorder;
    out.push(("runs listed".into(), show(rec.list())));
    let filters = [
        RunFilter::default(),
        RunFilter {
            agent: Some(AGENTS[1].into()),
            ..RunFilter::default()
        },
        RunFilter {
            status: Some("running".into()),
            ..RunFilter::default()
        },
        RunFilter {
            task: Some("T-1".into()),
            since: Some("2026-11-02T09:30:00Z".into()),
            ..RunFilter::default()
        },
    ];
    for filter in filters {
        // Pages of two, each from the key of the last run of the one before.
        let mut after: Option<RunKey> = None;
        for page in 0..RUNS.len() + 1 {
            let asked = RunFilter {
                after: after.clone(),
                ..filter.clone()
            };
            let answer = rec.page(&asked, 2);
            after = answer.as_ref().ok().and_then(|p| p.next.clone());
            out.push((format!("runs page {page} of {filter:?}"), show(answer)));
            if after.is_none() {
                break;
            }
        }
    }
    for run in RUNS {
        out.push((format!("summary of {run}"), show(rec.summary(run))));
        out.push((format!("steps of {run}"), show(rec.steps(run))));
        out.push((format!("events of {run}"), show(rec.events(run, None))));
        let notes = rec.events(run, Some(&[EventKind::Note]));
        out.push((format!("notes of {run}"), show(notes)));
        out.push((
            format!("events 1..3 of {run}"),
            show(rec.events_window(run, 1, 2)),
        ));
        out.push((format!("verification of {run}"), show(rec.verify(run))));
        out.push((format!("export of {run}"), show(rec.export(run))));
        let graph = provenance::query(rec, &format!("run:{run}"), Walk::Descendants);
        out.push((format!("provenance below {run}"), show(graph)));
    }
}

fn approvals_read(store: &Store, out: &mut Vec<(String, String)>) {
    let states = [
        ApprovalState::Pending,
        ApprovalState::Approved,
        ApprovalState::Rejected,
        ApprovalState::Used,
        ApprovalState::Expired,
    ];
    for now in NOWS {
        let all = approvals::list(store, &ApprovalFilter::default(), now);
        out.push((format!("approvals at {now}"), show(all)));
        let of_run = ApprovalFilter {
            run: Some(RUNS[0].into()),
            ..ApprovalFilter::default()
        };
        out.push((
            format!("approvals of r0 at {now}"),
            show(approvals::list(store, &of_run, now)),
        ));
        let of_agent = ApprovalFilter {
            agent: Some(AGENTS[1].into()),
            ..ApprovalFilter::default()
        };
        let answer = approvals::list(store, &of_agent, now);
        out.push((format!("approvals of the reviewer at {now}"), show(answer)));
        for state in states.into_iter().map(Some).chain([None]) {
            let mut after: Option<ApprovalKey> = None;
            for page in 0..10 {
                let answer = approvals::page(store, state, after.as_ref(), now, 2);
                after = answer.as_ref().ok().and_then(|p| p.next.clone());
                out.push((
                    format!("approvals page {page} in {state:?} at {now}"),
                    show(answer),
                ));
                if after.is_none() {
                    break;
                }
            }
        }
    }
    for run in 0..RUNS.len() {
        for call in 0..2 {
            for args in 0..2 {
                let id = request(Call { run, call, args }, false, 0).id();
                let answer = approvals::get(store, &id, NOWS[2]);
                out.push((format!("approval {id}"), show(answer)));
            }
        }
    }
}

fn jobs_read(e: &Engine, out: &mut Vec<(String, String)>) {
    let q = &e.jobs;
    out.push(("jobs listed".into(), show(q.list(None, 100))));
    out.push(("jobs listed, 2".into(), show(q.list(None, 2))));
    for state in JobState::ALL {
        out.push((format!("jobs {state}"), show(q.list(Some(state), 100))));
    }
    for id in 1..=12 {
        out.push((format!("job {id}"), show(q.get(JobId(id)))));
        out.push((format!("attempts at job {id}"), show(q.attempts(JobId(id)))));
    }
    out.push(("unfinished jobs".into(), show(q.has_unfinished(&[]))));
    out.push(("unfinished mail".into(), show(q.has_unfinished(&["mail"]))));
}

fn cases_read(store: &Store, out: &mut Vec<(String, String)>) {
    use crate::cases::{inspect, project};
    out.push(("cases listed".into(), show(inspect::list(store, None, 50))));
    out.push((
        "cases listed, 1".into(),
        show(inspect::list(store, None, 1)),
    ));
    let of_pack = inspect::list(store, Some("pack-b"), 50);
    out.push(("cases of pack-b".into(), show(of_pack)));
    for case in CASES {
        out.push((
            format!("timeline of {case}"),
            show(inspect::timeline(store, case, 0, 100)),
        ));
        let window = inspect::timeline(store, case, 1, 2);
        out.push((format!("timeline 2..3 of {case}"), show(window)));
        let projection = store.read(move |c| project::load_in(c, case, true));
        out.push((format!("projection of {case}"), show(projection)));
        let health = store.read(move |c| project::health_in(c, case));
        out.push((format!("replay health of {case}"), show(health)));
    }
}

fn memories_read(e: &Engine, memories: &[String], out: &mut Vec<(String, String)>) {
    let store = e.store();
    let all = memory::list(store, &MemoryFilter::default());
    out.push(("memories listed".into(), show(all)));
    for status in [
        MemoryStatus::Candidate,
        MemoryStatus::Approved,
        MemoryStatus::Quarantined,
    ] {
        let filter = MemoryFilter {
            status: Some(status),
            run: Some(RUNS[0].into()),
            ..MemoryFilter::default()
        };
        out.push((
            format!("memories {status:?} of r0"),
            show(memory::list(store, &filter)),
        ));
        let mut after: Option<String> = None;
        for page in 0..20 {
            let answer = memory::page(store, Some(status), None, after.as_deref(), 3);
            after = answer.as_ref().ok().and_then(|p| p.next.clone());
            out.push((format!("memories page {page} {status:?}"), show(answer)));
            if after.is_none() {
                break;
            }
        }
    }
    for id in memories {
        out.push((format!("memory {id}"), show(memory::get(store, id))));
        out.push((format!("use of {id}"), show(memory::usage(store, id))));
        let graph = provenance::query(&e.recorder, &format!("memory:{id}"), Walk::Ancestors);
        out.push((format!("provenance of {id}"), show(graph)));
    }
    let set = EnvelopeSet::empty();
    for text in ["", "tests ticket", "staging database midnight", "cargo"] {
        for (user, class) in [
            (None, None),
            (Some("alice"), None),
            (None, Some(memory::MemoryClass::Preference)),
        ] {
            for limit in [2, 200] {
                let query = SearchQuery {
                    scope: "org:acme/repo:api/task:T-1".into(),
                    clearance: Level::Confidential,
                    agent: None,
                    task: None,
                    user: user.map(str::to_string),
                    repo: None,
                    class,
                    text: text.into(),
                    limit,
                };
                let answer = memory::search(store, &set, &query, day_secs(1));
                out.push((format!("search {query:?}"), show(answer)));
            }
        }
    }
}

fn handoffs_read(e: &Engine, out: &mut Vec<(String, String)>) {
    use crate::handoff::store;
    let s = e.store();
    out.push(("contracts listed".into(), show(store::list(s, 50))));
    for id in CONTRACTS {
        out.push((format!("contract {id}"), show(store::get(s, id, None))));
        out.push((
            format!("contract {id}, 1"),
            show(store::get(s, id, Some(1))),
        ));
        out.push((format!("versions of {id}"), show(store::versions(s, id))));
        out.push((format!("answers to {id}"), show(store::acks(s, id))));
    }
    for run in RUNS {
        out.push((format!("contracts of {run}"), show(store::for_run(s, run))));
        let graph = handoff::graph::graph(&e.recorder, run);
        out.push((format!("handoff graph of {run}"), show(graph)));
    }
}
