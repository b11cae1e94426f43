//! Every job kind a worker of this gateway runs, in one registry. The job runner (`jobs`)
//! knows no kind but its diagnostic `sleep`; each module that works in the background exports
//! its handler and is registered here, so `jobs` never imports the modules whose work it runs.

use crate::jobs::{JobRegistry, SLEEP_KIND, sleep_job};

/// The handlers every worker has: `sleep` (see [`crate::jobs::sleep_job`]), `replay.exact`
/// ([`crate::replay::replay_exact_job`]), `replay.batch` ([`crate::replay::jobs::batch_job`]),
/// `regress.suite` ([`crate::regress::jobs::suite_job`]), `memory.distill`
/// ([`crate::memory::distill_job`]),
/// `memory.decay` ([`crate::memory::decay_job`]), `memory.gc` ([`crate::memory::collect_job`])
/// and `memory.quarantine_review` ([`crate::memory::review_quarantine_job`]).
pub fn builtin_registry() -> JobRegistry {
    let mut registry = JobRegistry::new();
    registry.register(SLEEP_KIND, sleep_job);
    registry.register(
        crate::replay::REPLAY_EXACT_JOB,
        crate::replay::replay_exact_job,
    );
    registry.register(
        crate::replay::jobs::BATCH_JOB,
        crate::replay::jobs::batch_job,
    );
    registry.register(
        crate::regress::jobs::SUITE_JOB,
        crate::regress::jobs::suite_job,
    );
    registry.register(crate::memory::DISTILL_JOB, crate::memory::distill_job);
    registry.register(crate::memory::DECAY_JOB, crate::memory::decay_job);
    registry.register(crate::memory::GC_JOB, crate::memory::collect_job);
    registry.register(
        crate::memory::QUARANTINE_JOB,
        crate::memory::review_quarantine_job,
    );
    registry
}
