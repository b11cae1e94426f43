//! The MCP gateway's configuration file (YAML or JSON): the upstream servers and the run each
//! session opens. Checked whole, every fault with its line and column, a `did you mean` for a
//! misspelt key, and a help line, as envelopes and contracts are.
//!
//! ```yaml
//! run:
//!   agent: coder
//!   task: fix the flaky test
//!   scope: org:acme/repo:api
//!   clearance: internal            # default public
//!   envelopes: [coding-agent]      # stored envelopes to attach (besides those attaching by agent)
//! approval_wait_seconds: 120       # how long a call held for approval waits (default 120)
//! call_timeout_seconds: 60         # how long an upstream may take to answer (default 60)
//! max_result_bytes: 1048576        # larger results are cut, with a note (default 1 MiB)
//! servers:
//!   files:                         # tools are listed as `files.read_file`, …
//!     command: npx
//!     args: [-y, "@modelcontextprotocol/server-filesystem", /work/repo]
//!     env: [PATH, HOME]            # names passed on from the host; nothing else is
//!     cwd: /work/repo
//!     prefix: true                 # false: the client sees `read_file` (envelopes still
//!                                  # see `files.read_file`)
//!     context:                     # how policy sees its resources and prompts
//!       scope: org:acme/repo:api   # default: none, which no scoped data rule matches
//!       sensitivity: internal      # default: secret (fail closed)
//!       labels: []
//!       uris:                      # a URI under a prefix is seen as its entry says (the
//!         "file:///work/repo/hr/": # longest prefix wins; what an entry leaves out is the
//!           sensitivity: confidential  # server's)
//! ```

use std::collections::BTreeSet;
use std::path::PathBuf;

use serde_json::{Map, Value};
use tollgate_rules::envelope::{Level, closest};
use tollgate_rules::located::Located;

/// How long a call held for approval waits for a decision, by default.
pub const DEFAULT_APPROVAL_WAIT_SECONDS: u64 = 120;
/// How long an upstream may take to answer a call, by default.
pub const DEFAULT_CALL_TIMEOUT_SECONDS: u64 = 60;
/// The largest result passed on whole, by default.
pub const DEFAULT_MAX_RESULT_BYTES: usize = 1 << 20;

/// A checked configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct McpConfig {
    /// The upstream servers, in name order.
    pub servers: Vec<ServerConfig>,
    /// The run each session opens.
    pub run: RunConfig,
    /// Seconds a call held for approval waits.
    pub approval_wait_seconds: u64,
    /// Seconds an upstream may take to answer a call.
    pub call_timeout_seconds: u64,
    /// Bytes of a result passed on whole.
    pub max_result_bytes: usize,
}

/// The run a session opens.
#[derive(Debug, Clone, PartialEq)]
pub struct RunConfig {
    /// The agent.
    pub agent: String,
    /// The task.
    pub task: String,
    /// The scope path.
    pub scope: String,
    /// The clearance (default public).
    pub clearance: Option<Level>,
    /// Stored envelopes to attach.
    pub envelopes: Vec<String>,
}

/// An upstream server: its name (the prefix of its tools' names) and how to reach it.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerConfig {
    /// `files` in `files.read_file`.
    pub name: String,
    /// A child process, or a URL.
    pub reach: Reach,
    /// How policy sees its resources and prompts.
    pub context: ContextConfig,
    /// Whether the client is shown its tools and prompts as `SERVER.TOOL` (the default) or
    /// by the server's own names; envelopes and receipts name them `SERVER.TOOL` either way.
    pub prefix: bool,
}

/// How policy sees what a server's resources and prompts put in an agent's context: each is
/// decided as a context item with a scope, a sensitivity and labels, which the server does not
/// say, so the configuration does. Unsaid, an item has no scope and is `secret`: no scoped
/// data rule lets it through (fail closed).
#[derive(Debug, Clone, PartialEq)]
pub struct ContextConfig {
    /// The server's items.
    pub seen: Seen,
    /// Items whose URI starts with a prefix, longest prefixes first.
    pub uris: Vec<(String, Seen)>,
}

/// A context item's scope, sensitivity and labels.
#[derive(Debug, Clone, PartialEq)]
pub struct Seen {
    /// The scope path (empty: none).
    pub scope: String,
    /// The sensitivity.
    pub sensitivity: Level,
    /// Labels policy reads (`secret`, `pii`).
    pub labels: Vec<String>,
}

impl Seen {
    /// No scope and `secret`: what no scoped data rule lets through.
    pub fn unknown() -> Seen {
        Seen {
            scope: String::new(),
            sensitivity: Level::Secret,
            labels: Vec::new(),
        }
    }
}

impl Default for ContextConfig {
    fn default() -> Self {
        ContextConfig {
            seen: Seen::unknown(),
            uris: Vec::new(),
        }
    }
}

impl ContextConfig {
    /// How the item at `uri` is seen (a prompt's messages: `None`). An agent chooses the URI
    /// it reads, and a server may resolve `..` in it, or escapes, out of the prefix it starts
    /// with: a URI with a dot segment, a percent-escaped dot, slash or backslash, a backslash,
    /// or that does not parse is seen as [`Seen::unknown`] (fail closed).
    pub fn seen(&self, uri: Option<&str>) -> std::borrow::Cow<'_, Seen> {
        use std::borrow::Cow;
        let Some(uri) = uri else {
            return Cow::Borrowed(&self.seen);
        };
        let lower = uri.to_ascii_lowercase();
        let dotted = uri
            .split(['?', '#'])
            .next()
            .unwrap_or_default()
            .split('/')
            .any(|segment| segment == "." || segment == "..");
        let escaped = ["%2e", "%2f", "%5c", "\\"]
            .iter()
            .any(|h| lower.contains(h));
        if dotted || escaped || url::Url::parse(uri).is_err() {
            return Cow::Owned(Seen::unknown());
        }
        Cow::Borrowed(
            self.uris
                .iter()
                .find(|(prefix, _)| uri.starts_with(prefix.as_str()))
                .map_or(&self.seen, |(_, seen)| seen),
        )
    }
}

/// How an upstream server is reached.
#[derive(Debug, Clone, PartialEq)]
pub enum Reach {
    /// A child process spoken to on its stdin and stdout.
    Command {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Names of the host's environment variables passed on (nothing else is).
        env: Vec<String>,
        /// Its working directory (default: the gateway's).
        cwd: Option<PathBuf>,
    },
    /// A server over MCP's streamable HTTP.
    Url {
        /// Its endpoint (`http` or `https`).
        url: String,
        /// Headers sent with every request: `(header, environment variable)`, the value
        /// read from the variable when the server is reached, never written in the file.
        headers: Vec<(String, String)>,
    },
}

/// One fault of a configuration file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigFault {
    /// JSON pointer of the faulty node (`/servers/files/args`).
    pub path: String,
    /// Line, from 1.
    pub line: Option<usize>,
    /// Column, from 1.
    pub column: Option<usize>,
    /// What is wrong.
    pub message: String,
    /// How to fix it.
    pub help: String,
}

impl std::fmt::Display for ConfigFault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let at = if self.path.is_empty() {
            "the file"
        } else {
            &self.path
        };
        match (self.line, self.column) {
            (Some(l), Some(c)) => write!(f, "{l}:{c}: at `{at}`: {}", self.message)?,
            _ => write!(f, "at `{at}`: {}", self.message)?,
        }
        write!(f, "\n  help: {}", self.help)
    }
}

/// Every fault of a configuration file, in document order.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the MCP gateway's configuration does not read ({} fault(s)):\n{}", .0.len(), render(.0))]
pub struct ConfigFaults(pub Vec<ConfigFault>);

fn render(faults: &[ConfigFault]) -> String {
    faults
        .iter()
        .map(|f| format!("  {f}"))
        .collect::<Vec<_>>()
        .join("\n")
}

const TOP: [&str; 5] = [
    "run",
    "servers",
    "approval_wait_seconds",
    "call_timeout_seconds",
    "max_result_bytes",
];
const RUN: [&str; 5] = ["agent", "task", "scope", "clearance", "envelopes"];
const SERVER: [&str; 6] = ["command", "args", "env", "cwd", "context", "prefix"];
const HTTP_SERVER: [&str; 4] = ["url", "headers", "context", "prefix"];
const CONTEXT: [&str; 4] = ["scope", "sensitivity", "labels", "uris"];
const URI: [&str; 3] = ["scope", "sensitivity", "labels"];
/// Headers the streamable HTTP transport sets itself.
const RESERVED_HEADERS: [&str; 4] = [
    "accept",
    "mcp-session-id",
    "last-event-id",
    "mcp-protocol-version",
];

/// Reads a configuration file's text.
pub fn parse(text: &str) -> Result<McpConfig, ConfigFaults> {
    let doc = Located::parse(text).map_err(|e| {
        ConfigFaults(vec![ConfigFault {
            path: String::new(),
            line: Some(e.line),
            column: Some(e.column),
            message: e.message,
            help: "fix the YAML or JSON syntax".into(),
        }])
    })?;
    let mut c = Checker {
        doc: &doc,
        faults: Vec::new(),
    };
    let config = c.config();
    if c.faults.is_empty()
        && let Some(config) = config
    {
        return Ok(config);
    }
    c.faults.sort_by_key(|f| (f.line, f.column));
    Err(ConfigFaults(c.faults))
}

struct Checker<'a> {
    doc: &'a Located,
    faults: Vec<ConfigFault>,
}

impl Checker<'_> {
    fn fault(&mut self, path: &str, message: impl Into<String>, help: impl Into<String>) {
        let (line, column) = self.doc.place(path).unzip();
        self.faults.push(ConfigFault {
            path: path.to_string(),
            line,
            column,
            message: message.into(),
            help: help.into(),
        });
    }

    /// A mapping with only `known` keys; unknown ones are faults with a suggestion.
    fn mapping<'v>(
        &mut self,
        value: &'v Value,
        path: &str,
        known: &[&str],
        what: &str,
    ) -> Option<&'v Map<String, Value>> {
        let Some(map) = value.as_object() else {
            self.fault(
                path,
                format!("{what} must be a mapping"),
                format!("write it as `key: value` lines ({})", known.join(", ")),
            );
            return None;
        };
        for key in map.keys() {
            if !known.contains(&key.as_str()) {
                let help = match closest(key, known) {
                    Some(k) => format!("did you mean `{k}`?"),
                    None => format!("{what} holds {}", known.join(", ")),
                };
                self.fault(
                    &format!("{path}/{}", escape(key)),
                    format!("unknown key `{key}` in {what}"),
                    help,
                );
            }
        }
        Some(map)
    }

    fn text(&mut self, map: &Map<String, Value>, path: &str, key: &str) -> Option<String> {
        let at = format!("{path}/{key}");
        match map.get(key) {
            Some(Value::String(s)) if !s.trim().is_empty() => Some(s.clone()),
            Some(Value::String(_)) => {
                self.fault(
                    &at,
                    format!("`{key}` is empty"),
                    format!("give `{key}` a value"),
                );
                None
            }
            Some(other) => {
                self.fault(
                    &at,
                    format!("`{key}` must be text, not {}", kind(other)),
                    "quote it",
                );
                None
            }
            None => None,
        }
    }

    fn required(&mut self, map: &Map<String, Value>, path: &str, key: &str) -> Option<String> {
        if !map.contains_key(key) {
            self.fault(path, format!("`{key}` is missing"), format!("add `{key}:`"));
            return None;
        }
        self.text(map, path, key)
    }

    fn texts(&mut self, map: &Map<String, Value>, path: &str, key: &str) -> Vec<String> {
        let at = format!("{path}/{key}");
        match map.get(key) {
            None => Vec::new(),
            Some(Value::Array(items)) => {
                let mut out = Vec::new();
                for (i, item) in items.iter().enumerate() {
                    match item {
                        Value::String(s) => out.push(s.clone()),
                        Value::Number(n) => out.push(n.to_string()),
                        Value::Bool(b) => out.push(b.to_string()),
                        other => self.fault(
                            &format!("{at}/{i}"),
                            format!("an item of `{key}` must be text, not {}", kind(other)),
                            "quote it",
                        ),
                    }
                }
                out
            }
            Some(other) => {
                self.fault(
                    &at,
                    format!("`{key}` must be a list, not {}", kind(other)),
                    format!("write `{key}: [a, b]`"),
                );
                Vec::new()
            }
        }
    }

    fn seconds(&mut self, map: &Map<String, Value>, key: &str, default: u64, max: u64) -> u64 {
        match map.get(key) {
            None => default,
            Some(v) => match v.as_u64().or_else(|| {
                v.as_f64()
                    .filter(|f| f.fract() == 0.0 && *f >= 0.0)
                    .map(|f| f as u64)
            }) {
                Some(n) if (1..=max).contains(&n) => n,
                _ => {
                    self.fault(
                        &format!("/{key}"),
                        format!("`{key}` must be a whole number from 1 to {max}, not {v}"),
                        format!("write `{key}: {default}`"),
                    );
                    default
                }
            },
        }
    }

    fn config(&mut self) -> Option<McpConfig> {
        let doc = self.doc.value.clone();
        let root = self.mapping(&doc, "", &TOP, "the configuration")?.clone();
        let run = match root.get("run") {
            Some(v) => self.run(v),
            None => {
                self.fault(
                    "",
                    "`run` is missing",
                    "add `run:` with the agent, task and scope of the run each session opens",
                );
                None
            }
        };
        let servers = match root.get("servers") {
            Some(v) => self.servers(v),
            None => {
                self.fault(
                    "",
                    "`servers` is missing",
                    "add `servers:` with at least one upstream server (`NAME: {command: …}`)",
                );
                Vec::new()
            }
        };
        let approval_wait_seconds = self.seconds(
            &root,
            "approval_wait_seconds",
            DEFAULT_APPROVAL_WAIT_SECONDS,
            86_400,
        );
        let call_timeout_seconds = self.seconds(
            &root,
            "call_timeout_seconds",
            DEFAULT_CALL_TIMEOUT_SECONDS,
            3_600,
        );
        let max_result_bytes = self.seconds(
            &root,
            "max_result_bytes",
            DEFAULT_MAX_RESULT_BYTES as u64,
            64 << 20,
        ) as usize;
        Some(McpConfig {
            servers,
            run: run?,
            approval_wait_seconds,
            call_timeout_seconds,
            max_result_bytes,
        })
    }

    fn run(&mut self, value: &Value) -> Option<RunConfig> {
        let map = self.mapping(value, "/run", &RUN, "`run`")?.clone();
        let agent = self.required(&map, "/run", "agent");
        let task = self.required(&map, "/run", "task");
        let scope = self.required(&map, "/run", "scope");
        let clearance = match self.text(&map, "/run", "clearance") {
            None => None,
            Some(s) => match Level::ALL.iter().find(|l| l.as_str() == s) {
                Some(l) => Some(*l),
                None => {
                    self.fault(
                        "/run/clearance",
                        format!("unknown clearance `{s}`"),
                        "use public, internal, confidential or secret",
                    );
                    None
                }
            },
        };
        let envelopes = self.texts(&map, "/run", "envelopes");
        Some(RunConfig {
            agent: agent?,
            task: task?,
            scope: scope?,
            clearance,
            envelopes,
        })
    }

    fn servers(&mut self, value: &Value) -> Vec<ServerConfig> {
        let Some(map) = value.as_object() else {
            self.fault(
                "/servers",
                "`servers` must be a mapping of names to servers",
                "write `servers:` and under it `NAME: {command: …, args: […]}`",
            );
            return Vec::new();
        };
        if map.is_empty() {
            self.fault(
                "/servers",
                "no upstream server is configured",
                "add one under `servers:` (`NAME: {command: …}`)",
            );
        }
        let mut out = Vec::new();
        for (name, server) in map {
            let path = format!("/servers/{}", escape(name));
            if !valid_name(name) {
                self.fault(
                    &path,
                    format!("server name `{name}` is not valid"),
                    "use letters, digits, `-` and `_` (a tool is named `SERVER.TOOL`, so no `.`)",
                );
                continue;
            }
            let context = match server.get("context") {
                Some(v) => self.context(v, &format!("{path}/context")),
                None => ContextConfig::default(),
            };
            let prefix = match server.get("prefix") {
                None | Some(Value::Bool(true)) => true,
                Some(Value::Bool(false)) => false,
                Some(other) => {
                    self.fault(
                        &format!("{path}/prefix"),
                        format!("`prefix` must be true or false, not {}", kind(other)),
                        "write `prefix: false` to show the server's own tool names to the client",
                    );
                    true
                }
            };
            if server.get("url").is_some() {
                if let Some(reach) = self.url_server(server, &path, name) {
                    out.push(ServerConfig {
                        name: name.clone(),
                        reach,
                        context,
                        prefix,
                    });
                }
                continue;
            }
            let Some(m) = self
                .mapping(server, &path, &SERVER, &format!("server `{name}`"))
                .cloned()
            else {
                continue;
            };
            let Some(command) = self.required(&m, &path, "command") else {
                continue;
            };
            let args = self.texts(&m, &path, "args");
            let env = self.texts(&m, &path, "env");
            let mut seen = BTreeSet::new();
            for (i, var) in env.iter().enumerate() {
                if !env_name(var) || !seen.insert(var.clone()) {
                    self.fault(
                        &format!("{path}/env/{i}"),
                        format!("`{var}` is not the name of an environment variable, or is listed twice"),
                        "list names only (`PATH`, `HOME`); their values are taken from the host when the server starts",
                    );
                }
            }
            let cwd = self.text(&m, &path, "cwd").map(PathBuf::from);
            out.push(ServerConfig {
                name: name.clone(),
                reach: Reach::Command {
                    command,
                    args,
                    env,
                    cwd,
                },
                context,
                prefix,
            });
        }
        out
    }

    /// A server's `context`: its items' scope, sensitivity and labels, and those of URIs
    /// under prefixes.
    fn context(&mut self, value: &Value, path: &str) -> ContextConfig {
        let mut out = ContextConfig::default();
        let Some(m) = self.mapping(value, path, &CONTEXT, "`context`").cloned() else {
            return out;
        };
        out.seen = self.seen(&m, path, &out.seen);
        match m.get("uris") {
            None => {}
            Some(Value::Object(uris)) => {
                for (prefix, entry) in uris {
                    let at = format!("{path}/uris/{}", escape(prefix));
                    if prefix.is_empty() {
                        self.fault(
                            &at,
                            "an empty URI prefix",
                            "give the start of the URIs the entry is for (`file:///srv/hr/`), or set the server's own `scope` and `sensitivity`",
                        );
                        continue;
                    }
                    let what = format!("the entry of `{prefix}`");
                    if let Some(e) = self.mapping(entry, &at, &URI, &what).cloned() {
                        let seen = self.seen(&e, &at, &out.seen);
                        out.uris.push((prefix.clone(), seen));
                    }
                }
            }
            Some(other) => self.fault(
                &format!("{path}/uris"),
                format!("`uris` must be a mapping, not {}", kind(other)),
                "write `uris:` and under it `\"PREFIX\": {scope: …, sensitivity: …}`",
            ),
        }
        out.uris
            .sort_by(|(a, _), (b, _)| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        out
    }

    /// Scope, sensitivity and labels as `m` gives them, the rest as `base` has them.
    fn seen(&mut self, m: &Map<String, Value>, path: &str, base: &Seen) -> Seen {
        let scope = self
            .text(m, path, "scope")
            .unwrap_or_else(|| base.scope.clone());
        let sensitivity = match self.text(m, path, "sensitivity") {
            None => base.sensitivity,
            Some(s) => match Level::ALL.iter().find(|l| l.as_str() == s) {
                Some(l) => *l,
                None => {
                    self.fault(
                        &format!("{path}/sensitivity"),
                        format!("unknown sensitivity `{s}`"),
                        "use public, internal, confidential or secret",
                    );
                    base.sensitivity
                }
            },
        };
        let labels = if m.contains_key("labels") {
            self.texts(m, path, "labels")
        } else {
            base.labels.clone()
        };
        Seen {
            scope,
            sensitivity,
            labels,
        }
    }

    /// A server reached over streamable HTTP: `url`, and `headers` naming the environment
    /// variables their values come from.
    fn url_server(&mut self, server: &Value, path: &str, name: &str) -> Option<Reach> {
        let what = format!("server `{name}`");
        let m = self.mapping(server, path, &HTTP_SERVER, &what)?.clone();
        if m.keys().any(|k| SERVER.contains(&k.as_str())) {
            self.fault(
                path,
                format!("{what} has both `url` and `command`"),
                "a server is reached either at a URL or as a command: keep one",
            );
            return None;
        }
        let url = self.required(&m, path, "url")?;
        let at = format!("{path}/url");
        match url::Url::parse(&url) {
            Ok(u) if matches!(u.scheme(), "http" | "https") && u.host().is_some() => {}
            Ok(_) => {
                self.fault(
                    &at,
                    format!("`{url}` is not an http or https URL"),
                    "give the server's streamable HTTP endpoint, as `https://host/mcp`",
                );
                return None;
            }
            Err(e) => {
                self.fault(
                    &at,
                    format!("`{url}` is not a URL: {e}"),
                    "give the server's streamable HTTP endpoint, as `https://host/mcp`",
                );
                return None;
            }
        }
        let mut headers = Vec::new();
        match m.get("headers") {
            None => {}
            Some(Value::Object(h)) => {
                for (header, var) in h {
                    let at = format!("{path}/headers/{}", escape(header));
                    let lower = header.to_ascii_lowercase();
                    if axum::http::HeaderName::from_bytes(header.as_bytes()).is_err() {
                        self.fault(
                            &at,
                            format!("`{header}` is not an HTTP header name"),
                            "use letters, digits and `-` (`Authorization`, `X-Api-Key`)",
                        );
                        continue;
                    }
                    if RESERVED_HEADERS.contains(&lower.as_str()) {
                        self.fault(
                            &at,
                            format!("`{header}` is set by the MCP transport itself"),
                            "leave it out",
                        );
                        continue;
                    }
                    match var {
                        Value::String(var) if env_name(var) => {
                            headers.push((header.clone(), var.clone()));
                        }
                        _ => self.fault(
                            &at,
                            format!("the value of header `{header}` must be the name of an environment variable"),
                            format!("write `{header}: VARIABLE` and set VARIABLE (`Bearer …` for Authorization) where the gateway runs: a secret is never written in this file"),
                        ),
                    }
                }
            }
            Some(other) => self.fault(
                &format!("{path}/headers"),
                format!("`headers` must be a mapping, not {}", kind(other)),
                "write `headers:` and under it `Header-Name: ENVIRONMENT_VARIABLE`",
            ),
        }
        Some(Reach::Url { url, headers })
    }
}

/// The name of an environment variable: a letter or `_`, then letters, digits and `_`.
fn env_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// A server name: letters, digits, `-`, `_`, at most 64.
fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_'))
}

fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "nothing",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "text",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

#[cfg(test)]
mod tests;
