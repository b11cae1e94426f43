//! A run as a readable timeline: `tollgate runs show RUN`.

use std::fmt::Write as _;

use super::events::{Event, HandoffEvent, HandoffRecord};
use super::format::{EventRecord, RunFile};
use super::short;
use crate::compiler::ItemStatus;

/// Renders a run: its header, then every step with one line per event.
pub fn render_timeline(run: &RunFile) -> String {
    let h = &run.run;
    let mut out = String::new();
    let _ = writeln!(out, "run {}  [{}]", h.id, h.status);
    let _ = writeln!(
        out,
        "  agent {}  task {}  scope {}  clearance {}",
        h.agent, h.task, h.scope, h.clearance
    );
    let _ = writeln!(
        out,
        "  {} → {}  {} steps, {} events",
        h.started_at,
        h.finished_at.as_deref().unwrap_or("(running)"),
        run.steps.len(),
        run.events.len()
    );
    if !h.envelopes.is_empty() {
        let _ = writeln!(out, "  envelopes {}", h.envelopes.join(", "));
    }
    for step in &run.steps {
        let _ = writeln!(
            out,
            "\nstep {} · {} · {}",
            step.index, step.agent, step.name
        );
        for e in run.events.iter().filter(|e| e.step == step.index) {
            let time =
                e.at.split('T')
                    .nth(1)
                    .unwrap_or(&e.at)
                    .trim_end_matches('Z');
            let _ = writeln!(out, "  {:>4} {time}  {:<15} {}", e.seq, e.kind, describe(e));
        }
    }
    out
}

/// One line about one event (a payload that does not read is shown as its JSON).
fn describe(e: &EventRecord) -> String {
    let Ok(event) = e.event() else {
        return clip(&e.payload.to_string(), 100);
    };
    match event {
        Event::ContextOffered(offered) => {
            let ids: Vec<&str> = offered.items.iter().map(|i| i.id.as_str()).collect();
            format!("{} item(s): {}", ids.len(), clip(&ids.join(", "), 90))
        }
        Event::Compile(c) => {
            let count =
                |status: ItemStatus| c.outcomes.iter().filter(|o| o.status == status).count();
            format!(
                "{} tokens; {} included, {} summarised, {} redacted, {} excluded; hash {}",
                c.tokens,
                count(ItemStatus::Included),
                count(ItemStatus::Summarised),
                count(ItemStatus::Redacted),
                count(ItemStatus::Excluded),
                short(&c.hash)
            )
        }
        Event::ModelCall(call) => format!(
            "{}/{} request {}",
            call.provider,
            call.request.model,
            short(&call.request_hash)
        ),
        Event::ModelOutput(output) => format!("“{}”", clip(&output.response.content, 100)),
        Event::ToolCall(call) => format!(
            "{} {} {}",
            call.call_id,
            call.tool,
            clip(&call.arguments.to_string(), 80)
        ),
        Event::ToolResult(r) => {
            let output = r.output.as_str().unwrap_or("");
            format!("{} {}: {}", r.call_id, r.status, clip(output, 80))
        }
        Event::Decision(d) => {
            // What the gateway answered, when it differs from the policy's effect (an
            // approved call, secrets redacted from arguments).
            let effect = d.decision.effect;
            let answered = match d.outcome {
                Some(outcome) if outcome != effect => {
                    format!(" -> {}", outcome.as_str().to_uppercase())
                }
                _ => String::new(),
            };
            format!(
                "{} {} {}{answered} by {}",
                d.call_id.as_deref().unwrap_or(""),
                d.decision.kind.as_str(),
                effect.as_str().to_uppercase(),
                d.decision.rules.join(", ")
            )
        }
        Event::Approval(a) => format!(
            "{} {} by {}: {}",
            a.approval_id,
            a.decision,
            a.by,
            clip(&a.reason, 60)
        ),
        Event::Output(o) => format!("“{}”", clip(&o.content, 100)),
        Event::Note(n) => clip(&n.text, 100),
        Event::Error(err) => clip(&err.message, 100),
        Event::Handoff(h) => clip(&handoff_line(&h), 100),
    }
}

/// A `handoff` event in words: the handoff module's records (a contract validated, an answer,
/// a violation alert) read as sentences, an agent's own handoff as its JSON.
pub fn handoff_line(h: &HandoffEvent) -> String {
    match h.record() {
        Some(Ok(HandoffRecord::Contract(c))) => {
            let mut line = format!(
                "contract {} v{} to {}: {}",
                c.contract_id, c.version, c.consumer, c.state
            );
            if !c.problems.is_empty() {
                line.push_str(&format!(" ({})", c.problems.join(", ")));
            }
            if !c.dropped.is_empty() {
                line.push_str(&format!("; evidence dropped: {}", c.dropped.join(", ")));
            }
            line
        }
        Some(Ok(HandoffRecord::Ack(a))) => {
            let mut line = format!(
                "contract {} v{}: {} by {}",
                a.contract_id, a.version, a.response, a.by
            );
            if !a.reason.is_empty() {
                line.push_str(&format!(": {}", a.reason));
            }
            line
        }
        Some(Ok(HandoffRecord::Violation(v))) => format!(
            "VIOLATION of contract {} v{}: {} `{}` ({})",
            v.contract_id, v.version, v.code, v.detail, v.rule
        ),
        Some(Err(e)) => format!("a handoff record that does not read: {e}"),
        None => serde_json::Value::Object(h.0.clone()).to_string(),
    }
}

/// The first `max` characters of `text` on one line (a newline shown as `⏎`), `…` when cut.
pub fn clip(text: &str, max: usize) -> String {
    let one_line: String = text
        .chars()
        .map(|c| if c == '\n' { '⏎' } else { c })
        .collect();
    if one_line.chars().count() <= max {
        one_line
    } else {
        let mut cut: String = one_line.chars().take(max).collect();
        cut.push('…');
        cut
    }
}
