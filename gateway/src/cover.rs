//! Cover (issue 35): a static inspection of an existing Python agent codebase. The code is read
//! as text and parsed with Ruff's parser; nothing of it is imported, executed or sent anywhere.
//! The report (`tollgate.cover/v1`, written to `.tollgate/cover/latest.json` by the CLI) says
//! which agents there are and how they are wired, every tool with its parameters and the agents
//! that get it, the model calls, and the side effects inside each tool, followed through the
//! calls it makes within the codebase. What cannot be resolved statically is listed as unknown,
//! never guessed.
//!
//! - `files`: the walk (symlink loops, binary, oversized files and paths outside the root are
//!   skipped and counted), module names from paths;
//! - `index`: each module parsed once, its imports and top-level definitions, and the
//!   resolution of a name or dotted expression to a qualified name;
//! - `frameworks`: agents, tools and model calls of the frameworks known;
//! - `effects`: the catalogue of side-effect boundaries and the walk of a tool's calls;
//! - `envelope`: a draft policy envelope per agent, from the report;
//! - `scaffold`: the report becomes a draft pack (read-only: its reading tools are unreviewed
//!   workers, it has no action), with what the loop's steps share;
//! - `review`: the mapping review (`cover suggest`, `cover review status|template|apply`);
//! - `boundaries`: the boundary review (`cover boundaries suggest`, `... review template|apply`),
//!   which generates actions, capabilities, permits, tests and a demo through `generate`.

pub mod boundaries;
mod effects;
pub mod envelope;
mod files;
mod frameworks;
mod generate;
mod index;
pub mod review;
pub mod review_files;
pub mod scaffold;
pub mod status;
#[cfg(test)]
mod tests;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use files::{MAX_FILE_BYTES, Skipped};

/// The report's schema name; a reader refuses another.
pub const REPORT_SCHEMA: &str = "tollgate.cover/v1";

/// Where the CLI writes the latest report, under the working directory.
pub const LATEST_REPORT: &str = ".tollgate/cover/latest.json";

/// A place in the inspected code: a path relative to the root, a line and a column from 1
/// (columns count characters).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Location {
    /// Relative to the inspected root, `/`-separated.
    pub file: String,
    /// From 1.
    pub line: u32,
    /// From 1, in characters.
    pub column: u32,
}

/// The static inspection of one codebase.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// [`REPORT_SCHEMA`].
    pub schema: String,
    /// The entrypoint, resolved.
    pub entrypoint: Entrypoint,
    /// What was read.
    pub files: FileCounts,
    /// Files that did not parse (inspection went on without them).
    pub parse_errors: Vec<ParseFault>,
    /// Frameworks seen (imports used by what was found), sorted.
    pub frameworks: Vec<String>,
    /// Agents (and agent-like wirings: graphs, crews, MCP servers), in file order.
    pub agents: Vec<Agent>,
    /// Tools, in file order.
    pub tools: Vec<Tool>,
    /// Model calls and model configurations with a provider.
    pub model_calls: Vec<ModelCall>,
    /// What could not be resolved statically.
    pub unknowns: Vec<Unknown>,
}

/// The `module:object` the inspection started from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entrypoint {
    /// As given.
    pub spec: String,
    /// The dotted module.
    pub module: String,
    /// The object's name.
    pub object: String,
    /// What the object is: `agent`, `tool`, `function`, `class` or `value`.
    pub kind: String,
    /// Its definition.
    pub at: Location,
}

/// Files read and skipped.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FileCounts {
    /// Python files read.
    pub python: u64,
    /// Of them, parsed without error.
    pub parsed: u64,
    /// Lines of Python read.
    pub lines: u64,
    /// Skipped, by reason.
    pub skipped: Skipped,
}

/// A file that did not parse.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ParseFault {
    /// Where the first error is.
    pub at: Location,
    /// The parser's message.
    pub message: String,
}

/// An agent, or what wires tools to a model: an Agents SDK `Agent`, a LangGraph graph or
/// prebuilt agent, a CrewAI agent or crew, a pydantic-ai agent, an MCP server, an OpenAI
/// client conversation with tools.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Agent {
    /// `module:variable` (or `module:function` for a conversation loop).
    pub id: String,
    /// The name it gives itself (`name=`, `role=`, the server's name), when a literal.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// `openai_agents`, `langgraph`, `crewai`, `pydantic_ai`, `mcp`, `openai`.
    pub framework: String,
    /// `agent`, `graph`, `crew`, `mcp_server`, `conversation`.
    pub kind: String,
    /// The model, when a literal.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Ids of the tools it gets.
    pub tools: Vec<String>,
    /// Ids of the agents it hands off to, or the members of a crew.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub handoffs: Vec<String>,
    /// A graph's nodes and edges (`from -> to`), in source order.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub nodes: Vec<String>,
    /// A graph's edges.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub edges: Vec<String>,
    /// Whether the entrypoint reaches it through the code's references.
    pub reachable: bool,
    /// Where it is defined.
    pub at: Location,
}

/// A tool an agent may call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tool {
    /// `module:function` (or `module:Class` for a tool class).
    pub id: String,
    /// The name the model sees.
    pub name: String,
    /// `openai_agents`, `langchain`, `crewai`, `pydantic_ai`, `mcp`, `openai`.
    pub framework: String,
    /// Its docstring or declared description.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its parameters, with types from annotations.
    pub parameters: Vec<Parameter>,
    /// Ids of the agents that get it.
    pub agents: Vec<String>,
    /// Side effects inside it, followed through its calls within the codebase.
    pub effects: Vec<Effect>,
    /// The strongest of its effects: `read_only`, `mutating`, `executes` (shell, processes,
    /// code), or `none` when none was found.
    pub classification: String,
    /// Whether the entrypoint reaches it.
    pub reachable: bool,
    /// Where it is defined.
    pub at: Location,
}

/// A tool parameter.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Parameter {
    /// Its name.
    pub name: String,
    /// Its annotation as written, when there is one.
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub ty: Option<String>,
    /// False when it has a default.
    pub required: bool,
}

/// A side-effect boundary.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Effect {
    /// `http`, `network`, `file`, `process`, `code`, `database`, `email`, `cloud`, `mcp`, or
    /// `unknown` for code nested too deep to inspect (classified `executes`: fail closed).
    pub kind: String,
    /// What is called, qualified (`requests.post`, `open`, `boto3.client(s3).upload_file`).
    pub call: String,
    /// The operation: an HTTP method, `read`/`write`/`delete`, `shell`, a SQL verb...
    #[serde(skip_serializing_if = "Option::is_none")]
    pub operation: Option<String>,
    /// A literal target: a URL, a path, a host, a service, a table.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// `read_only`, `mutating` or `executes`.
    pub classification: String,
    /// `high` (the callee resolved through imports and the operation is literal), `medium`
    /// (resolved, operation inferred), `low` (matched by a method name on an object whose type
    /// was not resolved).
    pub confidence: String,
    /// The tool's parameter the target is taken from, unchanged, when the tool itself makes
    /// the call (`httpx.get(url)` in `def fetch_url(url)`): what an envelope can narrow.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parameter: Option<String>,
    /// The functions of the codebase the call was reached through, from the tool inward.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub via: Vec<String>,
    /// The call.
    pub at: Location,
}

/// A model call or a model configured for an agent.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ModelCall {
    /// `openai`, `anthropic`, `google`, ... or `unknown`.
    pub provider: String,
    /// The model, when a literal.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// What configures or calls it (`chat.completions.create`, `ChatOpenAI`, `Agent(model=)`).
    pub api: String,
    /// Where.
    pub at: Location,
}

/// Something the inspection could not resolve statically.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Unknown {
    /// What it is about (a tool list, a callee, a method, a URL...).
    pub what: String,
    /// Why it could not be resolved.
    pub why: String,
    /// Where.
    pub at: Location,
}

/// Why an inspection could not be made.
#[derive(Debug, thiserror::Error)]
pub enum CoverError {
    /// The path to inspect is not a readable folder.
    #[error("cannot inspect `{}`: {reason}\n  help: give the folder holding the agent's Python code", path.display())]
    Root {
        /// The path.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// `--entrypoint` is not `module:object`.
    #[error(
        "`{0}` is not an entrypoint\n  help: write it `module:object`, the module dotted from the inspected folder (`support.app:triage_agent`)"
    )]
    Spec(String),
    /// The entrypoint's module or object is not in the code.
    #[error("{what}\n  help: {candidates}")]
    NotFound {
        /// What was not found.
        what: String,
        /// The candidates, said.
        candidates: String,
    },
}

/// The stack the inspection runs on. Ruff's parser guards its own recursion and the inspection
/// reads only [`index::MAX_NESTING`] levels, but a syntax tree is dropped recursively: a hostile
/// file of 2 MiB nests up to two million levels (`----…1`), about 200 MB of stack to drop. The
/// stack is reserved, not committed: an ordinary codebase touches a few hundred kilobytes.
const STACK_BYTES: usize = 1 << 30;

/// Inspects the Python code under `root` from `entrypoint` (`module:object`), on a thread of its
/// own with a stack deep enough for any file it reads.
pub fn inspect(root: &Path, entrypoint: &str) -> Result<Report, CoverError> {
    std::thread::scope(|scope| {
        match std::thread::Builder::new()
            .name("cover-inspect".into())
            .stack_size(STACK_BYTES)
            .spawn_scoped(scope, || inspect_here(root, entrypoint))
        {
            Ok(handle) => handle
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
            // No thread to be had: inspect here, as deep as this stack goes.
            Err(_) => inspect_here(root, entrypoint),
        }
    })
}

fn inspect_here(root: &Path, entrypoint: &str) -> Result<Report, CoverError> {
    let (module, object) = entrypoint
        .split_once(':')
        .filter(|(m, o)| is_dotted(m) && is_dotted(o) && !o.contains('.'))
        .ok_or_else(|| CoverError::Spec(entrypoint.to_string()))?;
    let walked = files::walk(root)?;
    let index = index::Index::build(&walked);
    let entry = index.entrypoint(module, object)?;
    let mut found = frameworks::find(&index);
    let reached = index.reachable_from(&entry.def);
    for agent in &mut found.agents {
        agent.reachable = reached.contains(&agent.id);
    }
    let by_agent: Vec<(String, Vec<String>)> = found
        .agents
        .iter()
        .map(|a| (a.id.clone(), a.tools.clone()))
        .collect();
    for tool in &mut found.tools {
        tool.agents = by_agent
            .iter()
            .filter(|(_, tools)| tools.contains(&tool.id))
            .map(|(a, _)| a.clone())
            .collect();
        tool.reachable = reached.contains(&tool.id)
            || found
                .agents
                .iter()
                .any(|a| a.reachable && a.tools.contains(&tool.id));
        let (effects, unknowns) = effects::of_tool(&index, &found.definitions[&tool.id]);
        tool.classification = effects::strongest(&effects).to_string();
        tool.effects = effects;
        found.unknowns.extend(unknowns);
    }
    let kind = if found.agents.iter().any(|a| a.id == entry.id) {
        "agent"
    } else if found.tools.iter().any(|t| t.id == entry.id) {
        "tool"
    } else {
        entry.kind
    };
    let frameworks: BTreeSet<String> = found
        .agents
        .iter()
        .map(|a| a.framework.clone())
        .chain(found.tools.iter().map(|t| t.framework.clone()))
        .collect();
    let mut unknowns = found.unknowns;
    unknowns.sort();
    unknowns.dedup();
    let mut model_calls = found.model_calls;
    model_calls.sort_by(|a, b| a.at.cmp(&b.at).then_with(|| a.api.cmp(&b.api)));
    model_calls.dedup();
    Ok(Report {
        schema: REPORT_SCHEMA.to_string(),
        entrypoint: Entrypoint {
            spec: entrypoint.to_string(),
            module: module.to_string(),
            object: object.to_string(),
            kind: kind.to_string(),
            at: entry.at,
        },
        files: index.counts(&walked),
        parse_errors: index.parse_errors(),
        frameworks: frameworks.into_iter().collect(),
        agents: found.agents,
        tools: found.tools,
        model_calls,
        unknowns,
    })
}

/// Reads a report written by [`inspect`], refusing another schema.
pub fn read_report(text: &str) -> Result<Report, String> {
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    match value.get("schema").and_then(|s| s.as_str()) {
        Some(REPORT_SCHEMA) => {}
        Some(other) => {
            return Err(format!(
                "schema `{other}` is not `{REPORT_SCHEMA}`\n  help: inspect again with this version: `tollgate cover inspect PATH --entrypoint module:object`"
            ));
        }
        None => {
            return Err(format!(
                "no `schema`; a cover report says `{REPORT_SCHEMA}`"
            ));
        }
    }
    serde_json::from_value(value).map_err(|e| format!("not a cover report: {e}"))
}

fn is_dotted(s: &str) -> bool {
    !s.is_empty()
        && s.split('.').all(|part| {
            let mut chars = part.chars();
            chars.next().is_some_and(|c| c == '_' || c.is_alphabetic())
                && chars.all(|c| c == '_' || c.is_alphanumeric())
        })
}
