//! Deterministic extractors: each reads a run's events and proposes typed candidates with the
//! evidence and the reason it took them.
//!
//! - `note`: an agent's note that names its class (`user preference: …`, `warning: …`,
//!   `fact: …`, `procedure: …`, `policy: …`); an unlabelled note is a fact of lower confidence.
//! - `user_request`: a sentence or bullet of a user's message that states how they want things
//!   done (`please`, `prefer`, `don't`, `never`, `always`, `keep`, `make sure`, ...).
//! - `denial`: a tool call policy denied: a warning with the rules that denied it.
//! - `failure`: a tool call that failed: a warning with the first line of what it said.
//! - `procedure`: the commands an execute episode ran, in order, when all of them succeeded.
//! - `summary`: one line per episode that changed something.
//!
//! What a candidate says is cleaned first: detected secrets, credentials in URLs, email
//! addresses and phone numbers are replaced by markers and raise its sensitivity.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::LazyLock;

use regex::Regex;
use tollgate_rules::decide::{DecisionEffect, RequestKind};
use tollgate_rules::envelope::Level;

use super::episodes::{EpisodeOutcome, ToolPhase, TraceEpisode, episode_of, events_by_step};
use super::score::ScoreParts;
use super::{Evidence, MemoryCandidate, MemoryClass, dedupe};
use crate::compiler::ItemKind;
use crate::recorder::events::Event;
use crate::recorder::format::{EventRecord, RunFile};

/// A memory says at most this many characters.
const MAX_TEXT: usize = 280;

/// Words that make a user's sentence a stated preference, with the confidence they give.
const PREFERENCE_MARKERS: [(&str, f64); 12] = [
    ("i prefer", 0.9),
    ("prefer ", 0.85),
    ("always ", 0.85),
    ("never ", 0.85),
    ("don't ", 0.85),
    ("do not ", 0.85),
    ("make sure", 0.85),
    ("stick to", 0.85),
    ("please ", 0.8),
    ("keep ", 0.8),
    (" after the ticket", 0.8),
    ("should ", 0.75),
];

/// Every candidate the extractors find in a run, in the order of their evidence. `now` (seconds
/// since the epoch) dates the recency part of the scores.
pub fn candidates(run: &RunFile, episodes: &[TraceEpisode], now: i64) -> Vec<MemoryCandidate> {
    let context = Context::new(run, episodes, now);
    let mut out = Vec::new();
    let mut calls: BTreeMap<String, (String, String)> = BTreeMap::new();
    let mut offered: BTreeSet<String> = BTreeSet::new();
    for e in &run.events {
        match e.event() {
            Ok(Event::Note(n)) => out.extend(from_note(&context, e, &n.text)),
            Ok(Event::ContextOffered(o)) => {
                for item in o.items {
                    let from_user =
                        item.kind == ItemKind::Message && item.role.as_deref() == Some("user");
                    if from_user && offered.insert(item.id.clone()) {
                        let text = item.content.as_deref().unwrap_or_default();
                        out.extend(from_user_request(&context, e, text, item.sensitivity));
                    }
                }
            }
            Ok(Event::ToolCall(c)) => {
                let command = ["command", "cmd", "path", "url", "query"]
                    .iter()
                    .find_map(|k| c.arguments.get(*k).and_then(|v| v.as_str()))
                    .map(str::to_string)
                    .unwrap_or_else(|| c.arguments.to_string());
                calls.insert(c.call_id.clone(), (c.tool.clone(), command));
            }
            Ok(Event::Decision(d))
                if d.decision.kind == RequestKind::Tool && d.answered() == DecisionEffect::Deny =>
            {
                let tool = d
                    .call_id
                    .as_ref()
                    .and_then(|id| calls.get(id))
                    .map_or("a tool", |(tool, _)| tool.as_str());
                let text = format!(
                    "`{tool}` is denied to {} here (by {})",
                    run.run.agent,
                    d.decision.rules.join(", ")
                );
                out.extend(context.candidate(
                    e,
                    MemoryClass::Warning,
                    &text,
                    0.95,
                    "denial",
                    "policy denied this call",
                    Level::Internal,
                ));
            }
            Ok(Event::ToolResult(r)) if r.status != "ok" => {
                if let Some((tool, command)) = calls.get(&r.call_id) {
                    let said = output_text(&r.output);
                    let text = format!(
                        "`{}` ({tool}) failed: {}",
                        clip(command, 100),
                        clip(telling_line(&said), 140)
                    );
                    out.extend(context.candidate(
                        e,
                        MemoryClass::Warning,
                        &text,
                        0.6,
                        "failure",
                        "the call failed",
                        Level::Internal,
                    ));
                }
            }
            _ => {}
        }
    }
    out.extend(procedures(&context, &calls));
    out.extend(summaries(&context));
    out.sort_by(|a, b| {
        a.evidence
            .event
            .cmp(&b.evidence.event)
            .then(a.id.cmp(&b.id))
    });
    out
}

/// What every extractor needs: the run, its episodes and the time.
struct Context<'a> {
    run: &'a RunFile,
    episodes: &'a [TraceEpisode],
    age_days: f64,
}

impl<'a> Context<'a> {
    fn new(run: &'a RunFile, episodes: &'a [TraceEpisode], now: i64) -> Context<'a> {
        let ended = run
            .run
            .finished_at
            .as_deref()
            .unwrap_or(&run.run.started_at);
        let age_days = crate::clock::parse_rfc3339(ended)
            .map_or(0.0, |t| (now - t as i64).max(0) as f64 / 86_400.0);
        Context {
            run,
            episodes,
            age_days,
        }
    }

    /// A candidate from `text` found at event `e`, or none when nothing is left of it.
    #[expect(clippy::too_many_arguments, reason = "the parts of one candidate")]
    fn candidate(
        &self,
        e: &EventRecord,
        class: MemoryClass,
        text: &str,
        confidence: f64,
        extractor: &str,
        why: &str,
        level: Level,
    ) -> Option<MemoryCandidate> {
        let (text, redacted) = sanitise(&one_line(text));
        let text = clip(&text, MAX_TEXT);
        let normalised = dedupe::normalise(&text);
        if normalised.split(' ').filter(|w| !w.is_empty()).count() < 3 {
            return None;
        }
        let level = if redacted.is_empty() {
            level.max(Level::Internal)
        } else {
            level.max(Level::Confidential)
        };
        let task = &self.run.run.task;
        let task_specific = class == MemoryClass::Summary
            || (!task.is_empty() && normalised.contains(&dedupe::normalise(task)));
        let scope = if task_specific {
            self.run.run.scope.clone()
        } else {
            without_task(&self.run.run.scope)
        };
        let ttl_days: u64 = match class {
            MemoryClass::Preference => 0,
            MemoryClass::Procedure => 180,
            MemoryClass::Fact | MemoryClass::Warning => 90,
            MemoryClass::Summary => 30,
        };
        let id = format!(
            "mem-{}",
            &blake3::hash(format!("{}\n{normalised}", class.as_str()).as_bytes()).to_hex()[..16]
        );
        Some(MemoryCandidate {
            id,
            class,
            scope,
            sensitivity: level,
            ttl_seconds: ttl_days * 86_400,
            score: ScoreParts::new(confidence, class, task_specific, self.age_days, level),
            extractor: extractor.to_string(),
            why: why.to_string(),
            evidence: Evidence {
                run: self.run.run.id.clone(),
                step: e.step,
                event: e.seq,
                episode: episode_of(self.episodes, e.step),
                quote: clip(&text, 160),
            },
            text,
            redacted,
        })
    }
}

/// `org:acme/repo:api/task:T-1` → `org:acme/repo:api`: what was learnt on a task applies to
/// the place the task is in.
fn without_task(scope: &str) -> String {
    match scope.rsplit_once('/') {
        Some((parent, last)) if last.starts_with("task:") => parent.to_string(),
        _ => scope.to_string(),
    }
}

fn from_note(context: &Context<'_>, e: &EventRecord, note: &str) -> Vec<MemoryCandidate> {
    const LABELS: [(&str, MemoryClass, f64); 7] = [
        ("user preference:", MemoryClass::Preference, 0.9),
        ("preference:", MemoryClass::Preference, 0.9),
        ("warning:", MemoryClass::Warning, 0.9),
        ("policy:", MemoryClass::Warning, 0.9),
        ("fact:", MemoryClass::Fact, 0.9),
        ("procedure:", MemoryClass::Procedure, 0.9),
        ("follow-up:", MemoryClass::Fact, 0.5),
    ];
    let trimmed = note.trim();
    let lower = trimmed.to_lowercase();
    let labelled = LABELS.iter().find(|(label, _, _)| lower.starts_with(label));
    let Some(&(label, class, confidence)) = labelled else {
        return context
            .candidate(
                e,
                MemoryClass::Fact,
                trimmed,
                0.5,
                "note",
                "an unlabelled note of the agent",
                Level::Internal,
            )
            .into_iter()
            .collect();
    };
    let body = trimmed[label.len()..].trim();
    let why = format!("the agent noted it as `{}`", label.trim_end_matches(':'));
    // A preference note may list several, `;`-separated.
    let parts: Vec<&str> = if class == MemoryClass::Preference {
        body.split(';').map(str::trim).collect()
    } else {
        vec![body]
    };
    parts
        .into_iter()
        .filter_map(|p| context.candidate(e, class, p, confidence, "note", &why, Level::Internal))
        .collect()
}

fn from_user_request(
    context: &Context<'_>,
    e: &EventRecord,
    text: &str,
    level: Level,
) -> Vec<MemoryCandidate> {
    statements(text)
        .into_iter()
        // A line that introduces a list (`A few preferences, please stick to them:`) states
        // nothing itself.
        .filter(|s| !s.ends_with(':'))
        .filter_map(|s| {
            let lower = format!(" {} ", s.to_lowercase());
            let (marker, confidence) =
                PREFERENCE_MARKERS.iter().find(|(m, _)| lower.contains(m))?;
            context.candidate(
                e,
                MemoryClass::Preference,
                &s,
                *confidence,
                "user_request",
                &format!("the user asked it (`{}`)", marker.trim()),
                level,
            )
        })
        .collect()
}

/// A message's statements: each bullet whole, and the sentences of the prose around them.
fn statements(text: &str) -> Vec<String> {
    let mut blocks: Vec<String> = Vec::new();
    let mut current = String::new();
    let mut bullet = false;
    for line in text.lines() {
        let t = line.trim();
        let starts_bullet = t.starts_with("- ") || t.starts_with("* ");
        if t.is_empty() || starts_bullet || (bullet && !line.starts_with(' ')) {
            if !current.trim().is_empty() {
                blocks.push((bullet, std::mem::take(&mut current)).1);
            }
            current.clear();
            bullet = starts_bullet;
        }
        let t = t.trim_start_matches("- ").trim_start_matches("* ");
        if !current.is_empty() {
            current.push(' ');
        }
        current.push_str(t);
    }
    if !current.trim().is_empty() {
        blocks.push(current);
    }
    let mut out = Vec::new();
    for block in blocks {
        let mut sentence = String::new();
        let chars: Vec<char> = block.chars().collect();
        for (i, c) in chars.iter().enumerate() {
            sentence.push(*c);
            let ends =
                matches!(c, '.' | '?' | '!') && chars.get(i + 1).is_none_or(|n| n.is_whitespace());
            if ends {
                out.push(std::mem::take(&mut sentence).trim().to_string());
            }
        }
        if !sentence.trim().is_empty() {
            out.push(sentence.trim().to_string());
        }
    }
    out.retain(|s| !s.is_empty());
    out
}

/// Each execute episode that succeeded: its commands, in order.
fn procedures(
    context: &Context<'_>,
    calls: &BTreeMap<String, (String, String)>,
) -> Vec<MemoryCandidate> {
    let by_step = events_by_step(context.run);
    let mut out = Vec::new();
    for ep in context
        .episodes
        .iter()
        .filter(|ep| ep.phase == ToolPhase::Execute && ep.outcome == EpisodeOutcome::Succeeded)
    {
        let mut commands: Vec<String> = Vec::new();
        let mut last: Option<&EventRecord> = None;
        for e in by_step
            .range(ep.first_step..=ep.last_step)
            .flat_map(|(_, events)| events.iter().copied())
        {
            if let Ok(Event::ToolCall(c)) = e.event()
                && ToolPhase::of_tool(&c.tool) == ToolPhase::Execute
                && let Some((_, command)) = calls.get(&c.call_id)
                && !commands.contains(command)
            {
                commands.push(command.clone());
                last = Some(e);
            }
        }
        let (Some(e), false) = (last, commands.is_empty()) else {
            continue;
        };
        let steps: Vec<String> = commands
            .iter()
            .map(|c| format!("`{}`", clip(c, 90)))
            .collect();
        let text = format!("to {}: run {}", ep.intent, steps.join(", then "));
        out.extend(context.candidate(
            e,
            MemoryClass::Procedure,
            &text,
            0.7,
            "procedure",
            "the commands of an episode that succeeded",
            Level::Internal,
        ));
    }
    out
}

/// One line for each episode that changed something and succeeded.
fn summaries(context: &Context<'_>) -> Vec<MemoryCandidate> {
    let run = context.run;
    let by_step = events_by_step(run);
    context
        .episodes
        .iter()
        .filter(|ep| ep.phase == ToolPhase::Change && ep.outcome == EpisodeOutcome::Succeeded)
        .filter_map(|ep| {
            let e = *by_step.get(&ep.last_step)?.last()?;
            let steps = ep.last_step - ep.first_step + 1;
            let text = format!(
                "{} ({}, {steps} step(s)) on {}: {}",
                ep.intent, ep.agent, run.run.task, run.run.id
            );
            context.candidate(
                e,
                MemoryClass::Summary,
                &text,
                0.5,
                "summary",
                "an episode that changed something",
                Level::Internal,
            )
        })
        .collect()
}

/// The line of a failed call's output that says what went wrong: the first that names an
/// error, a failure or a panic, else the last that says anything.
fn telling_line(output: &str) -> &str {
    const SIGNS: [&str; 6] = [
        "error",
        "failed",
        "panicked",
        "fatal",
        "denied",
        "not found",
    ];
    let lines = || output.lines().map(str::trim).filter(|l| !l.is_empty());
    lines()
        .find(|l| {
            let lower = l.to_lowercase();
            SIGNS.iter().any(|s| lower.contains(s))
        })
        .or_else(|| lines().next_back())
        .unwrap_or("")
}

/// A tool's output as text.
fn output_text(output: &serde_json::Value) -> String {
    match output {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Lines joined, runs of spaces folded, and control characters (a terminal's escapes, a
/// carriage return) and bidirectional overrides dropped as spaces: a memory's text is shown
/// in terminals, the dashboard and compiled context, where either could disguise what it says.
fn one_line(text: &str) -> String {
    text.split(|c: char| c.is_whitespace() || c.is_control() || is_bidi_control(c))
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Unicode's bidirectional formatting characters (embeddings, overrides, isolates, marks).
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// At most `max` characters, cut at a word with `…`.
fn clip(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let cut: String = text.chars().take(max).collect();
    let at = cut.rfind(' ').filter(|&i| i > max / 2).unwrap_or(cut.len());
    format!("{}…", cut[..at].trim_end())
}

/// Personal data and credentials the secret detectors leave: email addresses, phone numbers,
/// and the user and password of a URL.
static PERSONAL: LazyLock<[(&str, Regex); 3]> = LazyLock::new(|| {
    #[expect(clippy::expect_used, reason = "constant patterns; the tests use each")]
    let re = |p: &str| Regex::new(p).expect("personal-data patterns compile");
    [
        (
            "url_credentials",
            re(r"\b[a-z][a-z0-9+.-]*://([^\s:/@]+:[^\s@/]+)@"),
        ),
        (
            "email",
            re(r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}\b"),
        ),
        (
            "phone",
            re(r"(?:\+\d{1,3}[ .-]?)?\(?\b\d{3}\)?[ .-]\d{3}[ .-]\d{4}\b"),
        ),
    ]
});

/// `text` with every detected secret and piece of personal data replaced by its marker, and
/// the names of what was replaced.
pub(crate) fn sanitise(text: &str) -> (String, Vec<String>) {
    let mut spans: Vec<(usize, usize, String)> = crate::secrets::find_spans(text)
        .into_iter()
        .map(|(s, e, name)| (s, e, name.to_string()))
        .collect();
    for (name, re) in PERSONAL.iter() {
        for caps in re.captures_iter(text) {
            if let Some(m) = caps.get(1).or_else(|| caps.get(0)) {
                spans.push((m.start(), m.end(), name.to_string()));
            }
        }
    }
    spans.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
    let mut out = String::with_capacity(text.len());
    let mut names = BTreeSet::new();
    let mut at = 0;
    for (start, end, name) in spans {
        if start < at {
            continue;
        }
        out.push_str(&text[at..start]);
        out.push_str(&crate::secrets::marker(&name));
        names.insert(name);
        at = end;
    }
    out.push_str(&text[at..]);
    (out, names.into_iter().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_credentials_emails_and_phone_numbers_never_reach_a_memory() {
        let (text, found) = sanitise(
            "use AKIAPYDATUTGFKRXITKP with postgres://acme:hunter2@db:5432/x, mail ana@acme.io \
             or call +1 415-555-0134",
        );
        for gone in ["AKIAPYDATUTGFKRXITKP", "hunter2", "ana@acme.io", "555-0134"] {
            assert!(!text.contains(gone), "{text}");
        }
        assert_eq!(
            found,
            ["aws_access_key", "email", "phone", "url_credentials"]
        );
        assert!(
            text.contains("postgres://[REDACTED:url_credentials]@db"),
            "{text}"
        );
        assert_eq!(sanitise("nothing to hide here").1, Vec::<String>::new());
    }

    /// Bug carried from issue 38's notes: text distilled from a run kept the agent's control
    /// characters (terminal escapes) and bidirectional overrides in the memory.
    #[test]
    fn distilled_text_keeps_no_control_characters_or_bidi_overrides() {
        let text =
            one_line("run \u{1b}[2Jcargo test\r\u{7}ok\u{202E}sdrawkcab\u{2066}x\u{2069}\u{0}");
        assert_eq!(text, "run [2Jcargo test ok sdrawkcab x");
        assert!(
            !text.chars().any(|c| c.is_control() || is_bidi_control(c)),
            "{text:?}"
        );
    }

    #[test]
    fn a_message_splits_into_its_bullets_and_sentences() {
        let text = "Next one: T-114. A few preferences:\n- Don't add new crates without asking.\n  We keep the tree small.\n- I prefer keyset pagination.\nThanks!";
        assert_eq!(
            statements(text),
            [
                "Next one: T-114.",
                "A few preferences:",
                "Don't add new crates without asking.",
                "We keep the tree small.",
                "I prefer keyset pagination.",
                "Thanks!"
            ]
        );
    }

    #[test]
    fn a_failure_is_told_by_the_line_that_names_it() {
        let out =
            "   Compiling acme-api v0.7.3\nerror[E0308]: mismatched types\n  --> src/x.rs:3\n";
        assert_eq!(telling_line(out), "error[E0308]: mismatched types");
        assert_eq!(telling_line("a\nlast words\n\n"), "last words");
    }

    #[test]
    fn a_task_scope_widens_to_where_the_task_is() {
        assert_eq!(
            without_task("org:acme/repo:api/task:T-1"),
            "org:acme/repo:api"
        );
        assert_eq!(without_task("org:acme/repo:api"), "org:acme/repo:api");
    }

    #[test]
    fn tools_fall_into_phases_by_name() {
        assert_eq!(ToolPhase::of_tool("fs.read_file"), ToolPhase::Explore);
        assert_eq!(ToolPhase::of_tool("fs.write_file"), ToolPhase::Change);
        assert_eq!(ToolPhase::of_tool("shell.exec"), ToolPhase::Execute);
        assert_eq!(ToolPhase::of_tool("search.grep"), ToolPhase::Explore);
        assert_eq!(ToolPhase::of_tool("git.commit"), ToolPhase::Change);
    }
}
