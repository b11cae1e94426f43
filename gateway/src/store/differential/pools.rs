//! The pools operations draw from, and the runs, calls, contracts and case events built from them.

use serde_json::{Map, Value, json};
use tollgate_rules::envelope::{Level, RateScope};

use crate::approvals::ApprovalRequest;
use crate::cases::EventBody;
use crate::clock::rfc3339;
use crate::memory;
use crate::ratelimit::LimitedRule;
use crate::recorder::format::{EventKind, EventRecord, RUN_FORMAT, RunFile, RunHeader, StepRecord};
use crate::recorder::{COMPRESS_PAYLOAD_OVER, INLINE_PAYLOAD_LIMIT};

/// Run ids: the last two are opened only by chance, so they are often unknown. Bytewise, `R2`
/// and `r-3` sort before `r0`; by a language's collation they sort after it, so a listing
/// ordered by the database's collation rather than by bytes shows.
pub(super) const RUNS: [&str; 4] = ["r0", "r1", "R2", "r-3"];
pub(super) const AGENTS: [&str; 2] = ["coder", "reviewer"];
/// Start times, two of them equal: runs tie on them and page by id.
pub(super) const STARTS: [&str; 3] = [
    "2026-11-02T09:00:00Z",
    "2026-11-02T09:00:00Z",
    "2026-11-02T10:30:00Z",
];
/// Statuses a run is opened with (`bogus` is refused before the store).
pub(super) const OPEN_STATUSES: [&str; 4] = ["running", "running", "succeeded", "bogus"];
/// Statuses a run is finished with (`running` is not a final one).
pub(super) const FINISHES: [&str; 4] = ["succeeded", "failed", "cancelled", "running"];
pub(super) const STEP_NAMES: [&str; 3] = ["read", "fix", "test"];
/// Event and case times (RFC 3339).
pub(super) const TIMES: [&str; 3] = [
    "2026-11-02T09:00:01Z",
    "2026-11-02T09:05:00Z",
    "2026-11-02T11:00:00Z",
];
/// Approval and rate-limit times (ms): approvals live 60 or 600 s, windows 30 or 60 s.
pub(super) const NOWS: [i64; 5] = [
    T0_MS,
    T0_MS + 20_000,
    T0_MS + 45_000,
    T0_MS + 70_000,
    T0_MS + 130_000,
];
/// 2026-11-02T09:00:00Z, in ms: the jobs' clocks start here.
pub(super) const T0_MS: i64 = 1_793_610_000_000;
pub(super) const TOOL: &str = "shell.exec";
/// Who answers an approval: a lead; the agent of `r0` (its own call); someone approvals naming
/// the lead refuse; nobody.
pub(super) const DECIDERS: [&str; 4] = ["lead", "coder", "intern", " "];
pub(super) const JOB_KINDS: [&str; 2] = ["index", "mail"];
pub(super) const WORKERS: [&str; 2] = ["w1", "w2"];
pub(super) const CASES: [&str; 2] = ["c0", "C-1"];
/// Memory times, in days after 2026-11-25 (decay expires what is unused for 180 days).
pub(super) const DAYS: [i64; 5] = [0, 1, 10, 40, 200];
/// 2026-11-25T00:00:00Z, in seconds.
const DAY0: i64 = 1_795_564_800;
pub(super) const LEVELS: [Level; 3] = [Level::Internal, Level::Confidential, Level::Secret];
pub(super) const REVIEWS: [memory::Decision; 5] = [
    memory::Decision::Accept,
    memory::Decision::Reject,
    memory::Decision::Expire,
    memory::Decision::Quarantine,
    memory::Decision::Merge,
];
pub(super) const VERDICTS: [memory::FeedbackVerdict; 3] = [
    memory::FeedbackVerdict::Helpful,
    memory::FeedbackVerdict::Unhelpful,
    memory::FeedbackVerdict::Wrong,
];
/// Event payloads: notes the distiller turns into memories, decisions the run counts, a
/// payload compressed in its row, one stored as an artifact, and one refused (not an object).
pub(super) const PAYLOADS: usize = 10;

pub(super) fn payload(i: usize) -> (EventKind, Value) {
    let note = |text: &str| (EventKind::Note, json!({ "text": text }));
    match i {
        0 => {
            note("preference: name regression tests after the ticket; no new crates without asking")
        }
        1 => note("fact: the users handler lives in src/users.rs"),
        2 => note("warning: the staging database resets at midnight"),
        3 => note("remember to run cargo fmt before a commit"),
        4 => (EventKind::Decision, json!({"decision": {"effect": "deny"}})),
        5 => (
            EventKind::Decision,
            json!({"decision": {"effect": "require_approval"}}),
        ),
        6 => (
            EventKind::Decision,
            json!({"decision": {"effect": "allow"}, "outcome": "redact"}),
        ),
        7 => (
            EventKind::Output,
            json!({ "text": "done ".repeat(COMPRESS_PAYLOAD_OVER) }),
        ),
        8 => (EventKind::Output, json!({ "text": incompressible() })),
        _ => (EventKind::Note, json!(["not", "an", "object"])),
    }
}

/// Hex of a hash chain, too random for LZ4 to bring under the inline limit: an artifact.
fn incompressible() -> String {
    let mut out = String::new();
    let mut h = blake3::hash(b"differential");
    while out.len() < INLINE_PAYLOAD_LIMIT * 2 {
        h = blake3::hash(h.as_bytes());
        out.push_str(&h.to_hex());
    }
    out
}

pub(super) fn header(run: usize, agent: usize, start: usize, status: usize) -> RunHeader {
    RunHeader {
        id: RUNS[run].into(),
        agent: AGENTS[agent].into(),
        task: "T-1".into(),
        scope: "org:acme/repo:api/task:T-1".into(),
        clearance: "internal".into(),
        status: OPEN_STATUSES[status].into(),
        started_at: STARTS[start].into(),
        finished_at: None,
        parent_run: None,
        envelopes: vec![],
        // The reviewer's runs are for a user: memory search narrows by it.
        metadata: if agent == 1 {
            json!({"user": "alice"})
        } else {
            json!({})
        },
    }
}

/// A run file of `events` notes over two steps, finished or not.
pub(super) fn run_file(run: usize, events: usize, finished: bool) -> RunFile {
    let mut header = header(run, 0, 0, 0);
    if finished {
        header.status = "succeeded".into();
        header.finished_at = Some(TIMES[2].into());
    }
    RunFile {
        format: RUN_FORMAT.into(),
        run: header,
        steps: (0..2)
            .map(|index| StepRecord {
                index,
                name: STEP_NAMES[index as usize].into(),
                agent: AGENTS[0].into(),
            })
            .collect(),
        events: (0..events)
            .map(|i| EventRecord {
                seq: i as u64,
                step: (i % 2) as u32,
                kind: EventKind::Note.as_str().into(),
                at: TIMES[i % TIMES.len()].into(),
                payload: payload(i % 4).1,
                prev: None,
                hash: None,
            })
            .collect(),
        envelope_sources: vec![],
    }
}

/// An approval's call: which run, which call id, which arguments.
#[derive(Debug, Clone, Copy)]
pub(super) struct Call {
    pub(super) run: usize,
    pub(super) call: usize,
    pub(super) args: usize,
}

pub(super) fn arguments(i: usize) -> Value {
    [json!({"cmd": "make"}), json!({"cmd": "make install"})][i % 2].clone()
}

pub(super) fn request(call: Call, approvers: bool, ttl_seconds: i64) -> ApprovalRequest {
    ApprovalRequest {
        run: RUNS[call.run].into(),
        call_id: format!("call-{}", call.call),
        tool: TOOL.into(),
        arguments: arguments(call.args),
        envelopes: vec!["e@1".into()],
        rules: vec!["e/gate".into()],
        approvers: if approvers {
            vec!["lead".into()]
        } else {
            vec![]
        },
        ttl_seconds,
    }
}

/// Contract ids: bytewise `Plan-2` sorts first, by a language's collation last.
pub(super) const CONTRACTS: [&str; 2] = ["plan-1", "Plan-2"];

/// A planner-to-executor contract from a producer run: complete, or with only its goal (the
/// handoff pack refuses it, and it is stored refused); `wording` makes a new version.
pub(super) fn contract_json(
    contract: usize,
    producer: usize,
    complete: bool,
    wording: usize,
) -> Value {
    let objective = [
        "Add a per-client rate limit",
        "Add a per-client rate limit, with tests",
    ];
    let mut c = json!({
        "id": CONTRACTS[contract],
        "template": "planner_to_executor",
        "producer": {"run": RUNS[producer]},
        "consumer": {"agent": "executor"},
        "goal": objective[wording],
    });
    if complete {
        c["goal"] = json!({"objective": objective[wording], "expected_output": "a patch"});
        c["evidence"] = json!([
            {"item": "ticket", "scope": "org:acme/repo:api/task:T-1", "sensitivity": "internal"},
            {"item": "elsewhere", "scope": "org:globex/repo:edge", "sensitivity": "internal"}
        ]);
        c["constraints"] =
            json!({"blocked_actions": ["http.get"], "hard_rules": ["no new crates"]});
        c["required_outputs"] = json!(["patch", "test_report"]);
        c["success_criteria"] = json!(["cargo test passes"]);
    }
    c
}

/// The rate-limited rules a call is counted against (one, the other, or both).
pub(super) fn rate_rules(k: usize) -> Vec<LimitedRule> {
    let per_run = LimitedRule {
        rule: "e/per-run".into(),
        count: 2,
        window_seconds: 60,
        per: RateScope::Run,
    };
    let per_agent = LimitedRule {
        rule: "e/per-agent".into(),
        count: 3,
        window_seconds: 30,
        per: RateScope::Agent,
    };
    match k % 3 {
        0 => vec![per_run],
        1 => vec![per_agent],
        _ => vec![per_run, per_agent],
    }
}

/// The run a rate-limited call is counted for (as the gateway has it; counting does not read
/// the stored run).
pub(super) fn rate_header(run: usize) -> RunHeader {
    header(run, run % 2, 0, 0)
}

/// A case event: the opening, evidence, and a proposal moving through preview, policy,
/// approval and commit.
pub(super) fn case_body(i: usize, case: usize) -> EventBody {
    use crate::cases::{
        ApprovalDecided, CommitApplied, CommitRefused, CommitStarted, Evidence, Opened,
        PolicyDecided, Preview, Proposal,
    };
    use crate::packs::adapter::{Change, Mode};
    let proposal = "prop-1".to_string();
    match i {
        0 => EventBody::CaseOpened(Opened {
            pack_id: ["pack-a", "pack-b"][case].into(),
            engine_id: "pack-a".into(),
            engine_version: "1.0.0".into(),
            pack_root: "/packs/a".into(),
            pack_hash: "h".into(),
            title: format!("case {case}"),
            input: Map::new(),
            run_id: RUNS[case].into(),
        }),
        1 | 2 => EventBody::EvidenceRecorded(Evidence {
            worker: format!("w{i}"),
            evidence: Map::from_iter([("amount".to_string(), json!(i * 10))]),
            source: "api".into(),
        }),
        3 => EventBody::ProposalMade(Proposal {
            proposal_id: proposal,
            capability: "refund".into(),
            action: "refund".into(),
            input: Map::from_iter([("amount".to_string(), json!(20))]),
            wording: "refund 20".into(),
        }),
        4 => EventBody::PreviewRecorded(Preview {
            proposal_id: proposal,
            preview_hash: "h0".into(),
            changes: vec![Change {
                target: "order-1".into(),
                field: "refunded".into(),
                before: "0".into(),
                after: "20".into(),
            }],
            summary: "refunded 0 → 20".into(),
        }),
        5 => EventBody::PolicyDecided(Box::new(PolicyDecided {
            proposal_id: proposal,
            preview_hash: "h0".into(),
            effect: "allow".into(),
            rules: vec!["pack/refund-small".into()],
            pack: crate::packs::policy::PackDecision {
                effect: "allow".into(),
                rules: vec!["pack/refund-small".into()],
                reasons: vec![],
                proof: None,
                why_not: None,
                input_hash: "i".into(),
            },
            envelopes: None,
        })),
        6 => EventBody::ApprovalDecided(ApprovalDecided {
            proposal_id: proposal,
            approval_id: "apr-1".into(),
            approved: true,
            by: "lead".into(),
            reason: String::new(),
        }),
        7 => EventBody::CommitStarted(CommitStarted {
            proposal_id: proposal,
            preview_hash: "h0".into(),
            approval_id: "apr-1".into(),
            mode: Mode::DryRun,
            authorization: None,
        }),
        8 => EventBody::CommitApplied(CommitApplied {
            proposal_id: proposal,
            receipt: json!({"ok": true}),
            verification: json!({"verified": true}),
        }),
        _ => EventBody::CommitRefused(CommitRefused {
            proposal_id: proposal,
            code: "approval_required".into(),
            message: "no approval".into(),
            mode: Mode::DryRun,
        }),
    }
}

/// Seconds since the epoch, `DAYS[day]` days after 2026-11-25.
pub(super) fn day_secs(day: usize) -> i64 {
    DAY0 + DAYS[day] * 86_400
}

pub(super) fn day_text(day: usize) -> String {
    rfc3339(day_secs(day).unsigned_abs())
}
