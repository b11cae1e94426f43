//! Delivery checks: what a consumer did under a contract — the outputs it delivered, the tools
//! it executed, when — judged by the handoff pack; each breach is a violation alert, stored
//! and recorded in the consumer's run while it runs.
//!
//! What counts as the consumer's doing: the events of the consumer's run in the steps its
//! agent acts in (after the contract's own `handoff` event, when the consumer works in the
//! producer's run). A required output is delivered when an `output` event names it: a key of
//! its `outputs` object, a key of its content when that is a JSON object, or a line of its
//! text that heads a section with the output's name (`Test report:` for `test_report`,
//! `## Patch`). A tool was executed when its call's decision let it go ahead.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use serde_json::{Value, json};
use tollgate_rules::decide::DecisionEffect;
use tollgate_rules::envelope::EnvelopeSet;
use tollgate_rules::request::Delivery;

use super::store::{self, StoredContract, StoredDelivery};
use super::validate::{parties, request, rule_of};
use super::{ContractState, Finding, HandoffError, help_for};
use crate::clock::parse_rfc3339;
use crate::recorder::Recorder;
use crate::recorder::events::{DecisionEvent, Event, HandoffRecord, ViolationRecorded};
use crate::recorder::format::EventRecord;
use crate::recorder::write::{append_in, new_event};
use crate::run_policy::handoff_policy;

/// The violation codes of a delivery (the others are the contract's own, found when it was
/// validated).
const DELIVERY_CODES: [&str; 3] = ["missing_output", "blocked_action_taken", "deadline_missed"];

/// What a consumer delivered, with where each output shows.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Delivered {
    /// Each required output found, with the `output` events that name it.
    pub outputs: BTreeMap<String, Vec<u64>>,
    /// Each tool executed, with the `tool_call` events.
    pub actions: BTreeMap<String, Vec<u64>>,
    /// The consumer's events read.
    pub events: usize,
    /// When the last output naming a required output was recorded (seconds since the epoch).
    pub last_output_at: Option<i32>,
}

/// The result of a delivery check.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DeliveryReport {
    /// The contract after the check.
    pub contract: StoredContract,
    /// The check as stored, with its violations.
    pub delivery: StoredDelivery,
    /// The violations with what to do about them.
    pub findings: Vec<Finding>,
}

/// Checks the delivery under the latest version of contract `id` at `now` (seconds since the
/// epoch) and stores the check; the contract becomes `fulfilled` or `violated`.
pub fn check(
    recorder: &Recorder,
    set: &EnvelopeSet,
    id: &str,
    now: i32,
    at: &str,
) -> Result<DeliveryReport, HandoffError> {
    let store = recorder.store();
    let stored = store::get(store, id, None)?
        .ok_or_else(|| HandoffError::NotFound(format!("no contract `{id}`")))?;
    if !checkable(stored.state) {
        return Err(HandoffError::Conflict(format!(
            "contract `{id}` is {}: there is no delivery to check\n  help: only a contract the consumer may work on has a delivery",
            stored.state.as_str()
        )));
    }
    if stored.consumer_run.starts_with("handoff:") {
        return Err(HandoffError::Conflict(format!(
            "the consumer of `{id}` has not opened its run\n  help: open it with `\"handoff\": \"{id}\"`, then check its delivery"
        )));
    }
    let mut contract = stored.contract.clone();
    contract.consumer.run = Some(stored.consumer_run.clone());
    contract.consumer.scope = None;
    contract.consumer.clearance = None;
    let parties = parties(recorder, set, &contract, false)?;
    let delivered = delivered(recorder, &stored, &parties.consumer.id)?;
    let engine = handoff_policy(set, &parties.producer, Some(&parties.consumer))
        .map_err(|e| HandoffError::Evaluation(e.to_string()))?;
    let delivery = Delivery {
        outputs: delivered.outputs.keys().cloned().collect(),
        actions: delivered.actions.keys().cloned().collect(),
    };
    // The deadline is judged at the delivery: when every required output is in, the time of
    // the last of them; otherwise now.
    let complete = contract
        .required_outputs
        .iter()
        .all(|o| delivered.outputs.contains_key(&o.name));
    let delivered_at = match delivered.last_output_at {
        Some(t) if complete && !contract.required_outputs.is_empty() => t,
        _ => now,
    };
    let decision = engine.validate_handoff(&request(
        &contract,
        &parties,
        Vec::new(),
        Some((delivery, delivered_at)),
    ));
    let mut findings: Vec<Finding> = decision
        .violations
        .iter()
        .filter(|v| DELIVERY_CODES.contains(&v.code.as_str()))
        .map(|v| Finding {
            code: v.code.clone(),
            detail: v.detail.clone(),
            rule: v.proof.as_ref().map(rule_of).unwrap_or_default(),
            help: help_for(&v.code).to_string(),
        })
        .collect();
    if let Some(error) = &decision.error {
        findings.push(Finding {
            code: "evaluation_failed".into(),
            detail: error.clone(),
            rule: String::new(),
            help: "the delivery counts as violated while policy cannot be evaluated (fail closed)"
                .into(),
        });
    }
    let state = if findings.is_empty() {
        ContractState::Fulfilled
    } else {
        ContractState::Violated
    };
    let delivered_json = json!(delivered);
    let decision_json = serde_json::to_value(&decision).unwrap_or(Value::Null);
    let (id_owned, at_owned) = (id.to_string(), at.to_string());
    let (version, consumer_run, agent) = (
        stored.version,
        stored.consumer_run.clone(),
        stored.consumer_agent.clone(),
    );
    let to_record = findings.clone();
    let delivery_id = store.transact(move |c| -> Result<i64, HandoffError> {
        let now = store::get_in(c, &id_owned, None)?
            .ok_or_else(|| HandoffError::NotFound(format!("no contract `{id_owned}`")))?;
        if now.version != version || !checkable(now.state) {
            return Err(HandoffError::Conflict(format!(
                "contract `{id_owned}` changed while its delivery was checked (version {}, {})",
                now.version,
                now.state.as_str()
            )));
        }
        let delivery = store::insert_delivery_in(
            c,
            &id_owned,
            version,
            &consumer_run,
            state,
            &delivered_json,
            &decision_json,
            &at_owned,
        )?;
        let running = store::running_in(c, &consumer_run)?;
        for f in &to_record {
            // An alert is raised once per version: a later check that finds the same breach
            // lists it without alerting again.
            let raised = store::raised_in(c, &id_owned, version, &f.code, &f.detail)?;
            let recorded = if running && !raised {
                let record = HandoffRecord::Violation(ViolationRecorded {
                    contract_id: id_owned.clone(),
                    version,
                    code: f.code.clone(),
                    detail: f.detail.clone(),
                    rule: f.rule.clone(),
                });
                let step = store::last_step_in(c, &consumer_run, &agent)?;
                append_in(
                    c,
                    &consumer_run,
                    vec![new_event(step, at_owned.clone(), &record)?],
                )?
                .first()
                .map(|a| a.seq)
            } else {
                None
            };
            store::insert_violation_in(
                c, delivery, &id_owned, version, &f.code, &f.detail, &f.rule, recorded, &at_owned,
            )?;
        }
        store::set_state_in(c, &id_owned, version, state, &at_owned)?;
        Ok(delivery)
    })?;
    let contract = store::get(store, id, Some(stored.version))?
        .ok_or_else(|| HandoffError::NotFound(format!("no contract `{id}`")))?;
    let delivery = store::deliveries(store, id)?
        .into_iter()
        .find(|d| d.id == delivery_id)
        .ok_or_else(|| HandoffError::NotFound(format!("no delivery {delivery_id}")))?;
    Ok(DeliveryReport {
        contract,
        delivery,
        findings,
    })
}

/// Whether a contract in `state` has a delivery to check: the consumer may have worked under
/// it (validated, accepted, or checked before).
fn checkable(state: ContractState) -> bool {
    matches!(
        state,
        ContractState::Validated
            | ContractState::Accepted
            | ContractState::Fulfilled
            | ContractState::Violated
    )
}

/// The consumer's outputs and executed tools under `stored`, in its run `run`.
pub(crate) fn delivered(
    recorder: &Recorder,
    stored: &StoredContract,
    run: &str,
) -> Result<Delivered, HandoffError> {
    let agent = &stored.consumer_agent;
    let steps: BTreeSet<u32> = recorder
        .steps(run)?
        .into_iter()
        .filter(|s| s.agent == *agent)
        .map(|s| s.index)
        .collect();
    // In the producer's own run, the consumer's doing starts after the contract's event.
    let after = match stored.recorded_seq {
        Some(seq) if run == stored.producer_run => seq,
        _ => 0,
    };
    let names: Vec<String> = stored
        .contract
        .required_outputs
        .iter()
        .map(|o| o.name.clone())
        .collect();
    let mut out = Delivered::default();
    let mut calls: BTreeMap<String, (String, u64)> = BTreeMap::new();
    for e in recorder.events(run, None)? {
        if !steps.contains(&e.step) || (after > 0 && e.seq <= after) {
            continue;
        }
        out.events += 1;
        match e.event() {
            Ok(Event::Output(_)) => {
                let named = outputs_named(&e, &names);
                if !named.is_empty() {
                    out.last_output_at = parse_rfc3339(&e.at)
                        .and_then(|t| i32::try_from(t).ok())
                        .or(out.last_output_at);
                }
                for name in named {
                    out.outputs.entry(name).or_default().push(e.seq);
                }
            }
            Ok(Event::ToolCall(call)) => {
                calls.insert(call.call_id.clone(), (call.tool.clone(), e.seq));
            }
            Ok(Event::Decision(d)) => executed(&d, &calls, &mut out),
            _ => {}
        }
    }
    Ok(out)
}

fn executed(d: &DecisionEvent, calls: &BTreeMap<String, (String, u64)>, out: &mut Delivered) {
    let Some((tool, seq)) = d.call_id.as_ref().and_then(|id| calls.get(id)) else {
        return;
    };
    if matches!(d.answered(), DecisionEffect::Allow | DecisionEffect::Redact) {
        out.actions.entry(tool.clone()).or_default().push(*seq);
    }
}

/// The required outputs an `output` event names.
fn outputs_named(e: &EventRecord, names: &[String]) -> Vec<String> {
    let mut keys: BTreeSet<String> = BTreeSet::new();
    if let Some(Value::Object(m)) = e.payload.get("outputs") {
        keys.extend(m.keys().cloned());
    }
    let content = e
        .payload
        .get("content")
        .and_then(Value::as_str)
        .unwrap_or("");
    if let Ok(Value::Object(m)) = serde_json::from_str::<Value>(content) {
        keys.extend(m.keys().cloned());
    }
    let headings: BTreeSet<String> = content.lines().filter_map(heading).collect();
    names
        .iter()
        .filter(|n| keys.contains(*n) || headings.contains(&normalise(n)))
        .cloned()
        .collect()
}

/// The name a line heads a section with: `Test report:`, `## Patch`, `- **Patch**:`.
fn heading(line: &str) -> Option<String> {
    let t = line.trim().trim_start_matches(['#', '-', '*', ' ']);
    let t = t.trim_end();
    let name = if let Some(i) = t.find(':') {
        &t[..i]
    } else if line.trim_start().starts_with('#') {
        t
    } else {
        return None;
    };
    let name = normalise(name.trim_matches(['*', '_', '`', ' ']));
    (!name.is_empty() && name.split(' ').count() <= 4).then_some(name)
}

/// Lowercase words separated by one space (`test_report` and `Test report` alike).
fn normalise(s: &str) -> String {
    s.split(|c: char| c == '_' || c == '-' || c.is_whitespace())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn output(payload: Value) -> EventRecord {
        EventRecord {
            seq: 9,
            step: 0,
            kind: "output".into(),
            at: String::new(),
            payload,
            prev: None,
            hash: None,
        }
    }

    #[test]
    fn outputs_are_found_by_key_or_by_section_heading() {
        let names = vec!["patch".to_string(), "test_report".to_string()];
        let text =
            output(json!({"content": "Done.\n\nPatch:\n- src/a.rs\n\nTest report: 51 passed\n"}));
        assert_eq!(outputs_named(&text, &names), names);
        let md = output(json!({"content": "## Patch\nthe diff\n"}));
        assert_eq!(outputs_named(&md, &names), ["patch"]);
        let keyed = output(json!({"content": "{\"test_report\": \"ok\"}"}));
        assert_eq!(outputs_named(&keyed, &names), ["test_report"]);
        let typed = output(json!({"content": "", "outputs": {"patch": "diff"}}));
        assert_eq!(outputs_named(&typed, &names), ["patch"]);
        // Words in running text are not a delivery.
        let prose = output(json!({"content": "I will write the patch and a test report later."}));
        assert!(outputs_named(&prose, &names).is_empty());
    }
}
