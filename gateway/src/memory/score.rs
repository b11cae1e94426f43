//! A candidate's score, by parts, and the strict thresholds for promoting it without a person.
//!
//! - **confidence**: how sure the extractor is that the source says this (an agent's note
//!   naming its class, a user's stated preference, a policy denial: high; a pattern inferred
//!   from commands: lower).
//! - **reuse**: how likely it is to matter again (preferences, procedures and warnings more than
//!   facts, summaries least; 0.4 less when it names the run's own task, which keeps such a
//!   memory below the promotion threshold whatever its class).
//! - **recency**: how fresh the source is at distillation, halving every 30 days. It ranks and
//!   decays memories; it does not decide promotion (an old run's preference is no less true).
//! - **sensitivity**: a penalty for what the memory may reveal (0 up to internal).
//!
//! `total` weighs them `0.5 confidence + 0.3 reuse + 0.2 recency − penalty`.

use serde::{Deserialize, Serialize};
use tollgate_rules::envelope::Level;

use super::MemoryClass;

/// Promotion without review needs at least this confidence...
pub const ACCEPT_CONFIDENCE: f64 = 0.8;
/// ...and at least this reuse potential, and a sensitivity no higher than `internal`.
pub const ACCEPT_REUSE: f64 = 0.6;
/// Reported beside the parts: the total a candidate that just passes would have when fresh.
pub const ACCEPT_TOTAL: f64 = 0.5 * ACCEPT_CONFIDENCE + 0.3 * ACCEPT_REUSE + 0.2;

/// Recency halves every this many days.
const HALF_LIFE_DAYS: f64 = 30.0;

/// A score and its parts, each in 0..=1 (the penalty subtracted).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ScoreParts {
    /// How sure the extractor is.
    pub confidence: f64,
    /// How likely it is to matter again.
    pub reuse: f64,
    /// How fresh the source was when distilled.
    pub recency: f64,
    /// What it may reveal, as a penalty.
    pub sensitivity: f64,
    /// The weighted total.
    pub total: f64,
}

impl ScoreParts {
    /// The score of a candidate of `class` at `level`, `age_days` old when distilled.
    pub fn new(
        confidence: f64,
        class: MemoryClass,
        task_specific: bool,
        age_days: f64,
        level: Level,
    ) -> ScoreParts {
        let base_reuse = match class {
            MemoryClass::Preference => 0.9,
            MemoryClass::Procedure | MemoryClass::Warning => 0.8,
            MemoryClass::Fact => 0.7,
            MemoryClass::Summary => 0.3,
        };
        let reuse = if task_specific {
            (base_reuse - 0.4f64).max(0.0)
        } else {
            base_reuse
        };
        let recency = 0.5f64.powf(age_days.max(0.0) / HALF_LIFE_DAYS);
        let sensitivity = match level {
            Level::Public | Level::Internal => 0.0,
            Level::Confidential => 0.3,
            Level::Secret => 1.0,
        };
        let round = |x: f64| (x * 1000.0).round() / 1000.0;
        ScoreParts {
            confidence: round(confidence),
            reuse: round(reuse),
            recency: round(recency),
            sensitivity,
            total: round(0.5 * confidence + 0.3 * reuse + 0.2 * recency - sensitivity),
        }
    }

    /// Whether it may be promoted without review, and why (or why not).
    pub fn verdict(&self, level: Level) -> (bool, String) {
        let mut short = Vec::new();
        if self.confidence < ACCEPT_CONFIDENCE {
            short.push(format!(
                "confidence {:.2} < {ACCEPT_CONFIDENCE:.2}",
                self.confidence
            ));
        }
        if self.reuse < ACCEPT_REUSE {
            short.push(format!("reuse {:.2} < {ACCEPT_REUSE:.2}", self.reuse));
        }
        if level > Level::Internal {
            short.push(format!("sensitivity {} > internal", level.as_str()));
        }
        if short.is_empty() {
            (
                true,
                format!(
                    "confidence {:.2} ≥ {ACCEPT_CONFIDENCE:.2}, reuse {:.2} ≥ {ACCEPT_REUSE:.2}, sensitivity {}",
                    self.confidence,
                    self.reuse,
                    level.as_str()
                ),
            )
        } else {
            (false, format!("waits for review: {}", short.join(", ")))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stated_preference_passes_and_an_inferred_or_sensitive_one_waits() {
        let p = ScoreParts::new(0.9, MemoryClass::Preference, false, 0.0, Level::Internal);
        assert!(p.verdict(Level::Internal).0);
        assert_eq!(p.recency, 1.0);
        let inferred = ScoreParts::new(0.7, MemoryClass::Procedure, false, 0.0, Level::Internal);
        let (ok, why) = inferred.verdict(Level::Internal);
        assert!(!ok && why.contains("confidence 0.70 < 0.80"), "{why}");
        let task = ScoreParts::new(0.9, MemoryClass::Fact, true, 0.0, Level::Internal);
        assert!(!task.verdict(Level::Internal).0, "task-specific facts wait");
        let secret = ScoreParts::new(0.95, MemoryClass::Fact, false, 0.0, Level::Confidential);
        let (ok, why) = secret.verdict(Level::Confidential);
        assert!(!ok && why.contains("sensitivity confidential"), "{why}");
    }

    #[test]
    fn recency_halves_every_thirty_days() {
        let fresh = ScoreParts::new(0.9, MemoryClass::Fact, false, 0.0, Level::Internal);
        let month = ScoreParts::new(0.9, MemoryClass::Fact, false, 30.0, Level::Internal);
        assert_eq!(month.recency, 0.5);
        assert!(month.total < fresh.total);
    }
}
