//! The memory distiller: a finished run's steps grouped into episodes, typed memory candidates
//! extracted from them by deterministic extractors, scored (the parts shown), stripped of
//! secrets and personal data, merged with the memories that say the same thing, and promoted
//! under strict thresholds or left for review. Every memory keeps its sources (run, step,
//! event) and every review outcome is a recorded `PromotionDecision`.
//!
//! Retrieval (`retrieve`) makes approved memories a context source of the compiler, policy
//! deciding eligibility first; decay (`lifecycle`) expires what is stale.
//!
//! Distilling is deterministic: the same run gives the same episodes, candidates, ids and
//! scores (the clock enters only as the time of the decisions), and distilling a run twice
//! adds nothing.

mod columns;
mod dedupe;
mod distill;
mod episodes;
mod extract;
mod groups;
mod lifecycle;
mod retrieve;
mod score;
mod search;
mod store;

use serde::{Deserialize, Serialize};
use tollgate_rules::envelope::Level;

pub use crate::recorder::events::{RetrievalExclusion, RetrievalVerdict};
pub use columns::warm;
pub use dedupe::{normalise, similarity};
pub use distill::{DISTILL_JOB, DistillOutcome, DistillReport, distill_job, distill_run};
pub use episodes::{EpisodeOutcome, ToolPhase, TraceEpisode, episodes};
pub use extract::candidates;
pub use lifecycle::{
    DECAY_JOB, DecayReport, GC_JOB, GcReport, QUARANTINE_DAYS, QUARANTINE_JOB, QuarantineReport,
    RETENTION_DAYS, STALE_DAYS, collect, collect_job, decay, decay_job, review_quarantine,
    review_quarantine_job,
};
pub(crate) use retrieve::link_in;
pub use retrieve::{RETRIEVE_LIMIT, Retrieval, retrieve};
pub use score::{ACCEPT_CONFIDENCE, ACCEPT_TOTAL, ScoreParts};
pub use search::{MAX_HITS, SearchAnswer, SearchHit, SearchQuery, search};
pub use store::{
    MemoryFilter, MemoryLink, MemoryPage, get, give_feedback, list, page, record_decision,
    set_pinned, set_sensitivity, usage,
};

/// What kind of thing a memory says.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    utoipa::ToSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum MemoryClass {
    /// Something true of the world the agent works in.
    Fact,
    /// How to do something.
    Procedure,
    /// What a person wants done their way.
    Preference,
    /// Something to avoid, or that went wrong.
    Warning,
    /// A short account of an episode.
    Summary,
}

impl MemoryClass {
    /// `fact`, `procedure`, `preference`, `warning`, `summary`.
    pub fn as_str(self) -> &'static str {
        match self {
            MemoryClass::Fact => "fact",
            MemoryClass::Procedure => "procedure",
            MemoryClass::Preference => "preference",
            MemoryClass::Warning => "warning",
            MemoryClass::Summary => "summary",
        }
    }

    /// The class named `name`.
    pub fn parse(name: &str) -> Option<MemoryClass> {
        Some(match name {
            "fact" => MemoryClass::Fact,
            "procedure" => MemoryClass::Procedure,
            "preference" => MemoryClass::Preference,
            "warning" => MemoryClass::Warning,
            "summary" => MemoryClass::Summary,
            _ => return None,
        })
    }
}

/// Where a memory stands. Only `approved` memories are ever retrieved.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    utoipa::ToSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum MemoryStatus {
    /// Extracted, waiting for review (below the promotion thresholds).
    Candidate,
    /// Accepted: retrievable where policy allows.
    Approved,
    /// Rejected by a reviewer.
    Rejected,
    /// Held back for a closer look (a reviewer's doubt, or data that must not spread).
    Quarantined,
    /// Past its time, or expired by hand.
    Expired,
}

impl MemoryStatus {
    /// The stored and wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            MemoryStatus::Candidate => "candidate",
            MemoryStatus::Approved => "approved",
            MemoryStatus::Rejected => "rejected",
            MemoryStatus::Quarantined => "quarantined",
            MemoryStatus::Expired => "expired",
        }
    }

    /// The status named `name`.
    pub fn parse(name: &str) -> Option<MemoryStatus> {
        Some(match name {
            "candidate" => MemoryStatus::Candidate,
            "approved" => MemoryStatus::Approved,
            "rejected" => MemoryStatus::Rejected,
            "quarantined" => MemoryStatus::Quarantined,
            "expired" => MemoryStatus::Expired,
            _ => return None,
        })
    }
}

/// The outcome of reviewing a candidate (or of a later look at a memory).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// Promote it: it becomes retrievable.
    Accept,
    /// Turn it down.
    Reject,
    /// It says what another memory says: that memory is strengthened instead.
    Merge,
    /// Its time is over.
    Expire,
    /// Hold it back.
    Quarantine,
}

impl Decision {
    /// The stored and wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Accept => "accept",
            Decision::Reject => "reject",
            Decision::Merge => "merge",
            Decision::Expire => "expire",
            Decision::Quarantine => "quarantine",
        }
    }

    /// The status a memory has after this decision (`Merge` leaves the source as it was).
    pub fn status(self) -> Option<MemoryStatus> {
        match self {
            Decision::Accept => Some(MemoryStatus::Approved),
            Decision::Reject => Some(MemoryStatus::Rejected),
            Decision::Expire => Some(MemoryStatus::Expired),
            Decision::Quarantine => Some(MemoryStatus::Quarantined),
            Decision::Merge => None,
        }
    }
}

/// One place a memory comes from: an event of a run, and the words there that support it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Evidence {
    /// Source run.
    pub run: String,
    /// Source step.
    pub step: u32,
    /// Source event (its sequence number in the run).
    pub event: u64,
    /// The episode of the run it falls in.
    pub episode: u32,
    /// What the event said (clipped, secrets and personal data removed).
    pub quote: String,
}

/// A proposed memory, as an extractor found it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryCandidate {
    /// The memory it would be (`mem-` and a hash of its class and normalised text), so the
    /// same thing said twice is one memory.
    pub id: String,
    /// Its class.
    pub class: MemoryClass,
    /// What it says: short, with secrets and personal data replaced by markers.
    pub text: String,
    /// Where it applies (the run's scope without its task, unless it is about the task).
    pub scope: String,
    /// How sensitive it is (raised when the source held secrets or personal data).
    pub sensitivity: Level,
    /// Time to live in seconds (0: until it decays or is expired).
    pub ttl_seconds: u64,
    /// Its score, by parts.
    pub score: ScoreParts,
    /// The extractor that found it.
    pub extractor: String,
    /// Why the extractor took it.
    pub why: String,
    /// Where it comes from.
    pub evidence: Evidence,
    /// What was removed from it (`aws_access_key`, `email`, ...).
    pub redacted: Vec<String>,
}

/// A stored memory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct MemoryArtifact {
    /// `mem-…`.
    pub id: String,
    /// Its class.
    pub class: MemoryClass,
    /// What it says.
    pub text: String,
    /// Where it applies.
    pub scope: String,
    /// How sensitive it is.
    #[schema(schema_with = memory_sensitivity)]
    pub sensitivity: Level,
    /// Where it stands.
    pub status: MemoryStatus,
    /// Pinned memories do not decay.
    pub pinned: bool,
    /// Seconds since the epoch after which it is expired (0: no fixed end).
    pub expires_at: i64,
    /// How many distinct sources said it (a paraphrase strengthens, never copies).
    pub strength: u32,
    /// How many compiles included it.
    pub usage_count: u64,
    /// Its score when last distilled, by parts.
    #[schema(value_type = Object)]
    pub score: ScoreParts,
    /// Every source, oldest first: its provenance.
    #[schema(value_type = Vec<Object>)]
    pub sources: Vec<Evidence>,
    /// Its review history, oldest first.
    #[schema(value_type = Vec<Object>)]
    pub decisions: Vec<PromotionDecision>,
    /// People's edits of its metadata, oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schema(value_type = Vec<Object>)]
    pub edits: Vec<MemoryEdit>,
    /// Feedback from those who used it, oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schema(value_type = Vec<Object>)]
    pub feedback: Vec<MemoryFeedback>,
}

fn memory_sensitivity() -> utoipa::openapi::Object {
    crate::schemas::level("How sensitive it is.")
}

/// What someone who used a memory says of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FeedbackVerdict {
    /// It helped: it ranks a little higher.
    Helpful,
    /// It did not help: it ranks a little lower.
    Unhelpful,
    /// It is wrong: it is quarantined until a person looks.
    Wrong,
}

impl FeedbackVerdict {
    /// `helpful`, `unhelpful`, `wrong`.
    pub fn as_str(self) -> &'static str {
        match self {
            FeedbackVerdict::Helpful => "helpful",
            FeedbackVerdict::Unhelpful => "unhelpful",
            FeedbackVerdict::Wrong => "wrong",
        }
    }

    /// The verdict named `name`.
    pub fn parse(name: &str) -> Option<FeedbackVerdict> {
        Some(match name {
            "helpful" => FeedbackVerdict::Helpful,
            "unhelpful" => FeedbackVerdict::Unhelpful,
            "wrong" => FeedbackVerdict::Wrong,
            _ => return None,
        })
    }
}

/// One piece of feedback on a memory: who, what, why, from which run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryFeedback {
    /// The verdict.
    pub verdict: FeedbackVerdict,
    /// Who (a person or an agent).
    pub by: String,
    /// Why (may be empty for helpful or unhelpful).
    pub note: String,
    /// The run it was used in, if given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
    /// When (RFC 3339).
    pub at: String,
}

/// A person's edit of a memory's metadata: today its sensitivity.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryEdit {
    /// What changed (`sensitivity`).
    pub field: String,
    /// Before.
    pub from: String,
    /// After.
    pub to: String,
    /// Who.
    pub by: String,
    /// Why.
    pub reason: String,
    /// When (RFC 3339).
    pub at: String,
}

/// A recorded review outcome: who decided what about which memory, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PromotionDecision {
    /// The memory decided.
    pub memory: String,
    /// The outcome.
    pub decision: Decision,
    /// Who: a person, or `distiller` for an automatic promotion.
    pub by: String,
    /// Why.
    pub reason: String,
    /// When (RFC 3339).
    pub at: String,
    /// For a merge: the memory strengthened instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merged_into: Option<String>,
}

/// What can go wrong with memories.
#[derive(Debug, thiserror::Error)]
pub enum MemoryError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    /// The recorder failed (an unknown run, ...).
    #[error(transparent)]
    Recorder(#[from] crate::recorder::RecorderError),
    /// No such memory.
    #[error("no memory `{0}`\n  help: `tollgate memory list` shows the memories")]
    NotFound(String),
    /// A request that cannot be honoured; nothing changed.
    #[error("{0}")]
    Invalid(String),
    /// The request conflicts with where things stand (a final review, a run still
    /// running); nothing changed.
    #[error("{0}")]
    Conflict(String),
}

#[cfg(test)]
mod tests;
