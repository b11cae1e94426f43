//! Decisions counted as they are recorded (migration 30), for the dashboard's overview: by
//! effect per five minutes, and the decisions not allowed by tool and deciding rules per hour,
//! each by the run's agent and, in tables of their own, its task; and how long the gateway
//! took (migration 31). An event's [`Tally`] holds both these and the run's own counts
//! ([`super::counts`]), and the write that records the event adds both, so the overview reads
//! counters instead of scanning events and its sums are the runs' sums.

use std::collections::{BTreeMap, HashMap};

use serde_json::Value;
use tollgate_rules::decide::DecisionEffect;

use super::counts::DecisionCounts;
use crate::store::{Connection, StoreError, params};

/// The width of a bucket, in seconds.
pub const BUCKET_SECS: i64 = 300;

/// What one event decided: its decisions by effect (the run's counts), each decision as the
/// overview counts it, and the tool of each call it asks for (a `tool_call` event), which a
/// `decision` event names only by the call's id.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Tally {
    /// By effect, for the run's row.
    pub(crate) counts: DecisionCounts,
    decisions: Vec<Counted>,
    calls: Vec<(String, String)>,
    /// How long the gateway took over the event (not part of the record).
    timings: Vec<(Timed, u64)>,
}

/// What a timing measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Timed {
    /// A tool call, from its arrival in the runtime to its decision (the write excluded).
    ToolCall,
    /// A chat call's round trip to the model.
    Chat,
}

impl Timed {
    /// `tool_call`, `chat`.
    pub fn as_str(self) -> &'static str {
        match self {
            Timed::ToolCall => "tool_call",
            Timed::Chat => "chat",
        }
    }
}

/// The histogram slot of `micros`: values under 16 one slot each, then eight slots per
/// power of two (a slot's width is at most 1/8 of its start: 6.25 % from its middle).
pub fn slot(micros: u64) -> i64 {
    if micros < 16 {
        return micros as i64;
    }
    let e = i64::from(63 - micros.leading_zeros());
    let sub = ((micros >> (e - 3)) & 7) as i64;
    16 + (e - 4) * 8 + sub
}

/// The microseconds a slot holds: `[low, high)`.
pub fn slot_bounds(slot: i64) -> (u64, u64) {
    if slot < 16 {
        let v = slot.max(0) as u64;
        return (v, v + 1);
    }
    let (e, sub) = ((slot - 16) / 8 + 4, ((slot - 16) % 8) as u128);
    let shift = u32::try_from(e - 3).unwrap_or(0).min(64);
    let at = |m: u128| u64::try_from(m << shift).unwrap_or(u64::MAX);
    (at(8 + sub), at(9 + sub))
}

/// One decision as the overview counts it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Counted {
    effect: DecisionEffect,
    /// The deciding rules, as a JSON array.
    rules: String,
    /// The tool call decided, when it is one.
    call_id: Option<String>,
}

impl Tally {
    /// One decision.
    pub(crate) fn decided(
        &mut self,
        effect: DecisionEffect,
        rules: &[String],
        call_id: Option<&str>,
    ) {
        self.counts.add(effect);
        self.decisions.push(Counted {
            effect,
            rules: serde_json::to_string(rules).unwrap_or_else(|_| "[]".to_string()),
            call_id: call_id.map(str::to_string),
        });
    }

    /// A timing of the event.
    pub(crate) fn time(&mut self, what: Timed, took: std::time::Duration) {
        let micros = u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
        self.timings.push((what, micros));
    }

    /// A call of `tool` with this id.
    pub(crate) fn call(&mut self, call_id: &str, tool: &str) {
        self.calls.push((call_id.to_string(), tool.to_string()));
    }
}

/// The decisions of events as JSON records (an agent's event, an imported run): a
/// `decision`'s answer (its `outcome`, else its decision's `effect`) with the decision's
/// `kind` and `rules`; each policy decision of a `compile`'s `outcomes`. What is not a known
/// effect is not counted; a `tool_call` gives its call's tool.
pub(crate) fn tally_json(kind: super::format::EventKind, payload: &Value) -> Tally {
    use super::format::EventKind;
    let effect = |v: Option<&Value>| {
        v.and_then(Value::as_str)
            .and_then(|s| serde_json::from_value::<DecisionEffect>(Value::from(s)).ok())
    };
    let rules_of = |v: Option<&Value>| -> Vec<String> {
        v.and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|r| r.as_str().map(str::to_string))
            .collect()
    };
    let mut tally = Tally::default();
    match kind {
        EventKind::Decision => {
            let answered = effect(payload.get("outcome"))
                .or_else(|| effect(payload.pointer("/decision/effect")));
            if let Some(e) = answered {
                tally.decided(
                    e,
                    &rules_of(payload.pointer("/decision/rules")),
                    payload.get("call_id").and_then(Value::as_str),
                );
            }
        }
        EventKind::Compile => {
            for outcome in payload
                .get("outcomes")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if let Some(e) = effect(outcome.pointer("/policy/effect")) {
                    tally.decided(e, &rules_of(outcome.pointer("/policy/rules")), None);
                }
            }
        }
        EventKind::ToolCall => {
            if let (Some(id), Some(tool)) = (
                payload.get("call_id").and_then(Value::as_str),
                payload.get("tool").and_then(Value::as_str),
            ) {
                tally.call(id, tool);
            }
        }
        _ => {}
    }
    tally
}

/// The counts of one write, by bucket and what they count, before they are added to the tables.
#[derive(Debug, Default)]
pub(crate) struct Buckets {
    /// The tool of every call seen so far in the write (a decision and its call are recorded
    /// together; one recorded apart from its call counts under no tool).
    tools: HashMap<String, String>,
    /// Decisions by five minutes, resolved to their tool when the write is added.
    pending: Vec<(i64, Counted)>,
    /// Timings by bucket, what they measured and slot.
    timings: BTreeMap<(i64, &'static str, i64), i64>,
}

/// The width of a reasons row, in seconds.
pub const REASON_SECS: i64 = 3_600;

/// A write's counts: by effect per five minutes, and the decisions not allowed by tool and
/// rules per hour.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Counts {
    pub(crate) by_effect: BTreeMap<(i64, &'static str), i64>,
    pub(crate) reasons: BTreeMap<(i64, &'static str, String, String), i64>,
}

impl Buckets {
    /// Counts an event's tally at its time `at` (RFC 3339; a time that is not is counted on the
    /// run only).
    pub(crate) fn add(&mut self, at: &str, tally: &Tally) {
        for (id, tool) in &tally.calls {
            self.tools.insert(id.clone(), tool.clone());
        }
        if tally.decisions.is_empty() && tally.timings.is_empty() {
            return;
        }
        let Some(secs) = crate::clock::parse_rfc3339(at).and_then(|s| i64::try_from(s).ok()) else {
            return;
        };
        let bucket = secs - secs.rem_euclid(BUCKET_SECS);
        for (what, micros) in &tally.timings {
            *self
                .timings
                .entry((bucket, what.as_str(), slot(*micros)))
                .or_default() += 1;
        }
        for counted in &tally.decisions {
            self.pending.push((bucket, counted.clone()));
        }
    }

    /// The decisions counted, each resolved to its call's tool.
    pub(crate) fn counts(&mut self) -> Counts {
        let mut counts = Counts::default();
        for (bucket, counted) in std::mem::take(&mut self.pending) {
            let effect = counted.effect.as_str();
            *counts.by_effect.entry((bucket, effect)).or_default() += 1;
            if counted.effect == DecisionEffect::Allow {
                continue;
            }
            let tool = counted
                .call_id
                .as_ref()
                .and_then(|id| self.tools.get(id))
                .cloned()
                .unwrap_or_default();
            let hour = bucket - bucket.rem_euclid(REASON_SECS);
            *counts
                .reasons
                .entry((hour, effect, tool, counted.rules))
                .or_default() += 1;
        }
        counts
    }

    /// Adds the write's counts to the tables for a run of `agent` and `task`, inside the write.
    pub(crate) fn write(
        mut self,
        c: &Connection,
        agent: &str,
        task: &str,
    ) -> Result<(), StoreError> {
        let counts = self.counts();
        for ((bucket, effect), n) in &counts.by_effect {
            c.prepare_cached(
                "INSERT INTO decision_buckets (bucket, agent, effect, n) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (bucket, agent, effect) DO UPDATE SET n = decision_buckets.n + excluded.n",
            )?
            .execute(params![bucket, agent, effect, n])?;
            c.prepare_cached(
                "INSERT INTO decision_task_buckets (task, bucket, agent, effect, n)
                 VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT (task, bucket, agent, effect)
                 DO UPDATE SET n = decision_task_buckets.n + excluded.n",
            )?
            .execute(params![task, bucket, agent, effect, n])?;
        }
        for ((hour, effect, tool, rules), n) in &counts.reasons {
            c.prepare_cached(
                "INSERT INTO decision_reasons (hour, agent, effect, tool, rules, n)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                 ON CONFLICT (hour, agent, effect, tool, rules)
                 DO UPDATE SET n = decision_reasons.n + excluded.n",
            )?
            .execute(params![hour, agent, effect, tool, rules, n])?;
            c.prepare_cached(
                "INSERT INTO decision_task_reasons (task, hour, agent, effect, tool, rules, n)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
                 ON CONFLICT (task, hour, agent, effect, tool, rules)
                 DO UPDATE SET n = decision_task_reasons.n + excluded.n",
            )?
            .execute(params![task, hour, agent, effect, tool, rules, n])?;
        }
        for ((bucket, kind, slot), n) in &self.timings {
            c.prepare_cached(
                "INSERT INTO latency_buckets (bucket, agent, kind, slot, n)
                 VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT (bucket, agent, kind, slot)
                 DO UPDATE SET n = latency_buckets.n + excluded.n",
            )?
            .execute(params![bucket, agent, kind, slot, n])?;
        }
        Ok(())
    }
}

/// The tables [`Buckets::write`] adds decisions to (a recount empties them first).
pub(crate) const DECISION_TABLES: [&str; 4] = [
    "decision_buckets",
    "decision_task_buckets",
    "decision_reasons",
    "decision_task_reasons",
];

#[cfg(test)]
mod tests {
    #[test]
    fn every_value_falls_in_its_slots_bounds_and_slots_are_at_most_an_eighth_wide() {
        let mut last = -1;
        for micros in (0..5_000_u64).chain([65_535, 65_536, 1 << 40, u64::MAX / 2]) {
            let s = super::slot(micros);
            let (low, high) = super::slot_bounds(s);
            assert!(
                low <= micros && micros < high,
                "{micros} in slot {s} [{low}, {high})"
            );
            assert!(
                micros < 16 || (high - low) * 8 <= low,
                "{micros}: [{low}, {high})"
            );
            if micros < 5_000 {
                assert!(s >= last, "slots grow with the value");
                last = s;
            }
        }
    }

    use super::super::format::EventKind;
    use super::*;
    use serde_json::json;

    #[test]
    fn a_json_decision_counts_its_answer_kind_rules_and_call() {
        let t = tally_json(
            EventKind::Decision,
            &json!({"call_id": "c1", "outcome": "allow",
                    "decision": {"kind": "tool", "effect": "require_approval", "rules": ["a/b"]}}),
        );
        assert_eq!(t.counts.allow, 1);
        assert_eq!(
            t.decisions,
            vec![Counted {
                effect: DecisionEffect::Allow,
                rules: r#"["a/b"]"#.into(),
                call_id: Some("c1".into()),
            }]
        );
        let call = tally_json(EventKind::ToolCall, &json!({"call_id": "c1", "tool": "sh"}));
        assert!(call.decisions.is_empty());
        assert_eq!(call.calls, vec![("c1".into(), "sh".into())]);
        let unknown = tally_json(
            EventKind::Decision,
            &json!({"decision": {"effect": "maybe"}}),
        );
        assert_eq!(unknown, Tally::default());
    }

    #[test]
    fn decisions_fall_in_five_minute_buckets_and_reasons_in_hours_with_their_calls_tool() {
        let mut b = Buckets::default();
        let call = tally_json(EventKind::ToolCall, &json!({"call_id": "c1", "tool": "sh"}));
        let deny = tally_json(
            EventKind::Decision,
            &json!({"call_id": "c1", "decision": {"kind": "tool", "effect": "deny", "rules": ["r"]}}),
        );
        let allow = tally_json(
            EventKind::Decision,
            &json!({"call_id": "c1", "decision": {"kind": "tool", "effect": "allow", "rules": []}}),
        );
        b.add("2026-12-05T10:04:59Z", &call);
        b.add("2026-12-05T10:04:59Z", &deny);
        b.add("2026-12-05T10:05:00Z", &deny);
        b.add("2026-12-05T10:05:00Z", &allow);
        b.add("not a time", &deny);
        let counts = b.counts();
        let by_effect: Vec<(i64, &str, i64)> = counts
            .by_effect
            .iter()
            .map(|((bucket, e), n)| (bucket % 3600, *e, *n))
            .collect();
        assert_eq!(
            by_effect,
            vec![(0, "deny", 1), (300, "allow", 1), (300, "deny", 1)]
        );
        let reasons: Vec<(i64, &str, &str, &str, i64)> = counts
            .reasons
            .iter()
            .map(|((hour, e, tool, rules), n)| (hour % 3600, *e, tool.as_str(), rules.as_str(), *n))
            .collect();
        assert_eq!(
            reasons,
            vec![(0, "deny", "sh", r#"["r"]"#, 2)],
            "allows are not reasons"
        );
    }
}
