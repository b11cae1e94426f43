//! A run as a readable timeline: `tollgate runs show RUN`.

use std::fmt::Write as _;

use serde_json::Value;

use super::format::RunFile;
use super::short;

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
            let _ = writeln!(
                out,
                "  {:>4} {time}  {:<15} {}",
                e.seq,
                e.kind,
                describe(&e.kind, &e.payload)
            );
        }
    }
    out
}

fn s<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// One line about one event.
fn describe(kind: &str, p: &Value) -> String {
    match kind {
        "context_offered" => {
            let items = p.get("items").and_then(Value::as_array);
            let ids: Vec<&str> = items
                .map(|is| is.iter().map(|i| s(i, "id")).collect())
                .unwrap_or_default();
            format!("{} item(s): {}", ids.len(), clip(&ids.join(", "), 90))
        }
        "compile" => {
            let outcomes = p.get("outcomes").and_then(Value::as_array);
            let count = |status: &str| {
                outcomes.map_or(0, |os| {
                    os.iter().filter(|o| s(o, "status") == status).count()
                })
            };
            format!(
                "{} tokens; {} included, {} summarised, {} redacted, {} excluded; hash {}",
                p.get("tokens").and_then(Value::as_u64).unwrap_or(0),
                count("included"),
                count("summarised"),
                count("redacted"),
                count("excluded"),
                short(s(p, "hash"))
            )
        }
        "model_call" => format!(
            "{}/{} request {}",
            s(p, "provider"),
            p.pointer("/request/model")
                .and_then(Value::as_str)
                .unwrap_or(""),
            short(s(p, "request_hash"))
        ),
        "model_output" => {
            let content = p
                .pointer("/response/content")
                .and_then(Value::as_str)
                .unwrap_or("");
            format!("“{}”", clip(content, 100))
        }
        "tool_call" => format!(
            "{} {} {}",
            s(p, "call_id"),
            s(p, "tool"),
            clip(
                &p.get("arguments").map(Value::to_string).unwrap_or_default(),
                80
            )
        ),
        "tool_result" => format!(
            "{} {}: {}",
            s(p, "call_id"),
            s(p, "status"),
            clip(s(p, "output"), 80)
        ),
        "decision" => {
            let d = p.get("decision").unwrap_or(&Value::Null);
            let rules: Vec<&str> = d
                .get("rules")
                .and_then(Value::as_array)
                .map(|rs| rs.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            // What the gateway answered, when it differs from the policy's effect (an
            // approved call, secrets redacted from arguments).
            let outcome = s(p, "outcome");
            let answered = if outcome.is_empty() || outcome == s(d, "effect") {
                String::new()
            } else {
                format!(" -> {}", outcome.to_uppercase())
            };
            format!(
                "{} {} {}{answered} by {}",
                s(p, "call_id"),
                s(d, "kind"),
                s(d, "effect").to_uppercase(),
                rules.join(", ")
            )
        }
        "approval" => format!(
            "{} {} by {}: {}",
            s(p, "approval_id"),
            s(p, "decision"),
            s(p, "by"),
            clip(s(p, "reason"), 60)
        ),
        "output" => format!("“{}”", clip(s(p, "content"), 100)),
        "note" => clip(s(p, "text"), 100),
        "error" => clip(s(p, "message"), 100),
        _ => clip(&p.to_string(), 100),
    }
}

/// The first `max` characters on one line.
fn clip(text: &str, max: usize) -> String {
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
