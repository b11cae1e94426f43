//! A draft policy envelope per inspected agent: every tool it gets becomes a tool rule —
//! read-only → allow (narrowed where a parameter goes unchanged to a URL or a path, to the
//! literal hosts or folders the tool's code names), mutating → approval, processes and code
//! execution → deny — each commented with the file and line it came from. A draft is for a
//! person to review and `tollgate policy simulate` on recorded runs, not to trust as written.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use super::{Agent, Effect, Report, Tool};

/// One draft: the agent it is for, a file name, the YAML.
#[derive(Debug, Clone, PartialEq)]
pub struct DraftEnvelope {
    /// The agent's id in the report.
    pub agent: String,
    /// `cover-<agent>.yaml`.
    pub file: String,
    /// The envelope's id.
    pub id: String,
    /// The envelope, commented.
    pub text: String,
}

/// A draft for each agent of the report that gets tools.
pub fn drafts(report: &Report) -> Vec<DraftEnvelope> {
    report
        .agents
        .iter()
        .filter(|a| !a.tools.is_empty())
        .map(|a| draft(report, a))
        .collect()
}

fn draft(report: &Report, agent: &Agent) -> DraftEnvelope {
    let id = format!("cover-{}", slug(&agent.id));
    let mut y = String::new();
    let _ = writeln!(
        y,
        "# Draft envelope for `{}` ({} {}), written by `tollgate cover inspect` from {}:{}.",
        agent.id, agent.framework, agent.kind, agent.at.file, agent.at.line
    );
    y.push_str(
        "# Review every rule before relying on it: read-only tools are allowed, mutating ones wait for\n\
         # an approval, processes and code execution are denied. Attach it to the agent's runs with\n\
         # `attach: {agents: [NAME]}` (the name its runs carry), then try it on recorded runs:\n",
    );
    let _ = writeln!(
        y,
        "#   tollgate policy simulate --envelope {id}.yaml --run RUN"
    );
    if agent.kind == "mcp_server" {
        y.push_str(
            "# Behind `tollgate mcp proxy` these tools are named `SERVER.TOOL`, SERVER being this server's\n\
             # name in the MCP configuration: prefix the names below with it.\n",
        );
    }
    let _ = writeln!(y, "id: {id}");
    y.push_str("version: 1\n");
    let _ = writeln!(
        y,
        "description: {}",
        yaml_str(&format!(
            "Drafted by cover from the static inspection of {} (entrypoint {})",
            agent.id, report.entrypoint.spec
        ))
    );
    y.push_str("tools:\n");
    let mut ids = BTreeSet::new();
    for tool_id in &agent.tools {
        let Some(tool) = report.tools.iter().find(|t| &t.id == tool_id) else {
            continue;
        };
        let mut rule = slug(&tool.name);
        let mut n = 2;
        while !ids.insert(rule.clone()) {
            rule = format!("{}-{n}", slug(&tool.name));
            n += 1;
        }
        tool_rule(&mut y, &rule, tool);
    }
    if !report.unknowns.is_empty() {
        y.push_str(
            "# Not resolved statically (see the report's `unknowns`); tools reached that way are not\n\
             # listed above and are refused by any envelope that allows only what it names.\n",
        );
    }
    DraftEnvelope {
        agent: agent.id.clone(),
        file: format!("{id}.yaml"),
        id,
        text: y,
    }
}

fn tool_rule(y: &mut String, rule: &str, tool: &Tool) {
    let _ = writeln!(
        y,
        "  # `{}` ({}) at {}:{}: {}",
        one_line(&tool.name),
        tool.id,
        tool.at.file,
        tool.at.line,
        match tool.classification.as_str() {
            "none" => "no side effect found statically",
            other => other,
        }
    );
    for e in &tool.effects {
        let _ = writeln!(y, "  #   {}", one_line(&effect_line(e)));
    }
    let effect = match tool.classification.as_str() {
        "executes" => "deny",
        "mutating" => "require_approval",
        _ => "allow",
    };
    let _ = writeln!(y, "  - id: {rule}");
    let _ = writeln!(y, "    effect: {effect}");
    let _ = writeln!(y, "    tools: [{}]", yaml_str(&tool.name));
    if effect != "allow" {
        return;
    }
    // Narrowed where the tool hands a parameter, unchanged, to a URL or a path: to the hosts or
    // folders its code names literally, else left for the reviewer with a note.
    let mut args = Vec::new();
    for e in &tool.effects {
        let Some(param) = &e.parameter else { continue };
        let literals: BTreeSet<String> = tool
            .effects
            .iter()
            .filter(|o| o.kind == e.kind)
            .filter_map(|o| o.target.as_deref())
            .filter_map(|t| narrowing(&e.kind, t))
            .collect();
        match literals.into_iter().next() {
            Some(pattern) => args.push(format!(
                "      /{param}: {}",
                if e.kind == "http" {
                    format!("{{url: {}}}", yaml_str(&pattern))
                } else {
                    format!("{{path: {}}}", yaml_str(&pattern))
                }
            )),
            None => {
                let _ = writeln!(
                    y,
                    "    # `{param}` goes unchanged to {} {}: narrow it (`args: {{/{param}: ...}}`) before relying on this rule",
                    e.call, e.kind
                );
            }
        }
    }
    args.sort();
    args.dedup();
    if !args.is_empty() {
        y.push_str("    args:\n");
        for a in args {
            y.push_str(&a);
            y.push('\n');
        }
    }
}

/// The pattern an argument is narrowed to from a literal target: `https://host/**` for a URL,
/// `folder/**` for a path with a literal folder.
fn narrowing(kind: &str, target: &str) -> Option<String> {
    match kind {
        "http" => {
            let (scheme, rest) = target.split_once("://")?;
            let host = rest.split(['/', '?', '#']).next()?;
            (!host.is_empty() && !host.contains(['{', '}', '*']))
                .then(|| format!("{scheme}://{host}/**"))
        }
        "file" => {
            let folder = target.rsplit_once('/')?.0;
            (!folder.is_empty() && !folder.contains(['{', '}', '*']))
                .then(|| format!("{folder}/**"))
        }
        _ => None,
    }
}

fn effect_line(e: &Effect) -> String {
    let mut s = format!("{} {}", e.kind, e.call);
    if let Some(op) = &e.operation {
        let _ = write!(s, " {op}");
    }
    if let Some(t) = &e.target {
        let _ = write!(s, " {t}");
    }
    if let Some(p) = &e.parameter {
        let _ = write!(s, " (from `{p}`)");
    }
    let _ = write!(
        s,
        " at {}:{} ({}, {} confidence)",
        e.at.file, e.at.line, e.classification, e.confidence
    );
    s
}

/// Text for a comment line: no line breaks.
fn one_line(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// An id from free text: lower-case letters, digits and `-`.
fn slug(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
    }
    let out = out.trim_end_matches('-').to_string();
    if out.is_empty() { "tool".into() } else { out }
}

/// A YAML double-quoted string.
fn yaml_str(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}
