//! Generated policy worlds shared by the differential test (`crepe_oracle.rs`) and the
//! memory and proof properties (`decision_properties.rs`): a random scope tree, runs with
//! clearances, an envelope graph (`extends`, possibly cyclic) with attachments, tool, data,
//! model and memory rules and tool levels drawn from small alphabets, memories, and requests of
//! every kind.
//!
//! The alphabets follow `pack_properties.rs`, widened with what it leaves fixed: several runs
//! (and a run with no `run` fact), scope trees, misspelt levels, several argument conditions,
//! kind and label conditions, memory rules and memories.
#![allow(dead_code, reason = "each test crate uses part of the module")]

use std::sync::OnceLock;

use proptest::prelude::*;
use tollgate_engine::{Fact, FactSet, Program, Value};
use tollgate_rules::packs::{REQUEST_RELATIONS, builtin_program};

/// `PROPTEST_CASES` (default 256; CI sets 1000).
pub fn config() -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256);
    ProptestConfig {
        failure_persistence: None,
        ..ProptestConfig::with_cases(cases)
    }
}

pub fn program() -> &'static Program {
    static PROGRAM: OnceLock<Program> = OnceLock::new();
    PROGRAM.get_or_init(|| builtin_program().unwrap())
}

pub const SCOPE_NODES: usize = 6;
/// Runs `r0..r2` may have a `run` fact; `r9` never does (requests for it still happen).
pub const RUNS: [&str; 4] = ["r0", "r1", "r2", "r9"];
pub const AGENTS: [&str; 2] = ["coder", "reviewer"];
pub const TASKS: [&str; 2] = ["T-1", "T-2"];
pub const ENVS: usize = 5;
/// Attachment kinds and their target alphabets (a target may name nothing).
pub const ATTACH_KINDS: [&str; 3] = ["run", "agent", "task"];
pub const ATTACH_TARGETS: [[&str; 3]; 3] = [
    ["r0", "r1", "r9"],
    ["coder", "reviewer", "ghost"],
    ["T-1", "T-2", "T-9"],
];
pub const TOOLS: [&str; 5] = ["fs.read", "fs.write", "shell.exec", "net.fetch", "fs"];
pub const TOOL_PATTERNS: [&str; 8] = [
    "fs.*",
    "fs.read",
    "shell.*",
    "**",
    "net.fetch",
    "*.write",
    "{fs,net}.*",
    "fs*",
];
pub const TOOL_EFFECTS: [&str; 4] = ["allow", "deny", "require_approval", "rate_limit"];
pub const ARGS: [&str; 2] = ["/path", "/mode"];
pub const ARG_PATTERNS: [&str; 4] = ["src/**", "*.md", "**", "r*"];
pub const ARG_VALUES: [&str; 5] = ["src/a.rs", "README.md", "etc/passwd", "ro", ""];
pub const SCOPE_PATTERNS: [&str; 7] = [
    "org:acme/**",
    "**",
    "org:acme",
    "*",
    "{org:acme,org:acme/**}",
    "org:acme/n1",
    "org:*/**",
];
/// The four levels and one misspelt level (never ranked, never cleared).
pub const LEVELS: [&str; 5] = ["public", "internal", "confidential", "secret", "restricted"];
pub const DATA_EFFECTS: [&str; 3] = ["see", "redact", "block"];
pub const KINDS: [&str; 3] = ["file", "credential", "web"];
pub const KIND_PATTERNS: [&str; 3] = ["file", "cred*", "*"];
pub const LABELS: [&str; 2] = ["pii", "legal"];
pub const MODELS: [(&str, &str, &str); 4] = [
    ("openai", "gpt-4o", ""),
    ("openai", "o3", "high"),
    ("ollama", "llama3", ""),
    ("anthropic", "claude", "low"),
];
pub const MODEL_PATTERNS: [(&str, &str, &str); 4] = [
    ("openai", "*", "*"),
    ("*", "gpt-4*", "*"),
    ("ollama", "*", ""),
    ("**", "**", "{low,high}"),
];
pub const CLASSES: [&str; 3] = ["fact", "preference", "procedure"];
pub const CLASS_PATTERNS: [&str; 4] = ["fact", "pref*", "*", "{fact,procedure}"];
pub const STATUSES: [&str; 4] = ["approved", "candidate", "rejected", "quarantined"];
pub const EXPIRIES: [i32; 4] = [0, 50, 100, 150];
pub const NOWS: [i32; 3] = [50, 100, 149];

#[derive(Debug, Clone)]
pub struct RunSpec {
    pub agent: usize,
    pub task: usize,
    pub scope: usize,
    pub clearance: Option<usize>,
}

#[derive(Debug, Clone)]
pub struct ToolRuleSpec {
    pub env: usize,
    pub pattern: usize,
    pub effect: usize,
    pub args: Vec<(usize, usize)>,
    /// `tool_rule_limit` count for `rate_limit` rules (`None`: no limit fact).
    pub limit: Option<i32>,
}

#[derive(Debug, Clone)]
pub struct DataRuleSpec {
    pub env: usize,
    pub effect: usize,
    pub scope: usize,
    pub max_level: usize,
    pub kinds: Vec<usize>,
    pub labels: Vec<usize>,
}

#[derive(Debug, Clone)]
pub struct MemorySpec {
    pub class: usize,
    /// A scope node, or `SCOPE_NODES` for a scope outside the tree.
    pub scope: usize,
    pub level: usize,
    pub status: usize,
    pub expires: usize,
    pub pinned: bool,
}

#[derive(Debug, Clone)]
pub struct ToolRequestSpec {
    pub run: usize,
    pub tool: usize,
    pub args: Vec<(usize, usize)>,
    /// `tool_usage` for the tool rule with this index (if it exists).
    pub usage: Vec<(usize, i32)>,
}

#[derive(Debug, Clone)]
pub struct ContextRequestSpec {
    pub run: usize,
    pub kind: usize,
    pub scope: usize,
    pub level: usize,
    pub labels: Vec<usize>,
}

#[derive(Debug, Clone)]
pub struct World {
    /// `scope_parents[i]`: node `i`'s parent, always a lower index (a forest).
    pub scope_parents: Vec<Option<usize>>,
    pub runs: Vec<RunSpec>,
    /// A clearance for `r9`, the run without a `run` fact.
    pub ghost_clearance: Option<usize>,
    /// Per envelope: whether it has `allow **` for tools and `see **` (up to `secret`) for
    /// data, the idiom that leaves the rest to the other envelopes; without it the
    /// intersection over several envelopes rarely permits anything.
    pub broad: Vec<(bool, bool)>,
    pub attached: Vec<(usize, usize, usize)>,
    pub extends: Vec<(usize, usize)>,
    pub tool_rules: Vec<ToolRuleSpec>,
    pub approvals: Vec<(usize, usize)>,
    /// `tool_level`s: envelope, tool pattern, level (misspelt sometimes).
    pub tool_levels: Vec<(usize, usize, usize)>,
    pub data_rules: Vec<DataRuleSpec>,
    pub model_rules: Vec<(usize, bool, usize)>,
    pub memory_rules: Vec<(usize, bool, usize)>,
    pub memories: Vec<MemorySpec>,
    pub now: Option<usize>,
    pub tool_requests: Vec<ToolRequestSpec>,
    pub context_requests: Vec<ContextRequestSpec>,
    pub memory_requests: Vec<usize>,
    pub model_requests: Vec<(usize, usize)>,
}

fn scope_tree() -> impl Strategy<Value = Vec<Option<usize>>> {
    // Node 0 is `org:acme`; node i > 0 hangs below an earlier node or starts a new root.
    (1..SCOPE_NODES)
        .map(|i| prop::option::weighted(0.8, 0..i).boxed())
        .collect::<Vec<_>>()
        .prop_map(|rest| std::iter::once(None).chain(rest).collect())
}

fn run_spec() -> impl Strategy<Value = RunSpec> {
    (
        prop::sample::select(vec![0usize, 0, 1]),
        prop::sample::select(vec![0usize, 0, 1]),
        0..SCOPE_NODES,
        prop::option::weighted(0.85, prop::sample::select(vec![0usize, 1, 2, 2, 3, 3, 4])),
    )
        .prop_map(|(agent, task, scope, clearance)| RunSpec {
            agent,
            task,
            scope,
            clearance,
        })
}

fn tool_rule_spec() -> impl Strategy<Value = ToolRuleSpec> {
    (
        0..ENVS,
        0..TOOL_PATTERNS.len(),
        // Mostly allow, so the other effects meet a permitted request.
        prop::sample::select(vec![0usize, 0, 0, 0, 1, 2, 3, 3]),
        // Mostly no argument conditions; sometimes one or two.
        prop::option::weighted(
            0.3,
            prop::collection::vec((0..ARGS.len(), 0..ARG_PATTERNS.len()), 1..3),
        ),
        prop::option::weighted(0.85, -1..3i32),
    )
        .prop_map(|(env, pattern, effect, args, limit)| {
            let args = args.unwrap_or_default();
            ToolRuleSpec {
                env,
                pattern,
                effect,
                args,
                limit,
            }
        })
}

fn data_rule_spec() -> impl Strategy<Value = DataRuleSpec> {
    (
        0..ENVS,
        prop::sample::select(vec![0usize, 0, 0, 1, 1, 2]),
        0..SCOPE_PATTERNS.len(),
        prop::sample::select(vec![1usize, 2, 3, 3, 4]),
        prop::collection::vec(0..KIND_PATTERNS.len(), 0..3),
        prop::collection::vec(0..LABELS.len(), 0..2),
    )
        .prop_map(
            |(env, effect, scope, max_level, kinds, labels)| DataRuleSpec {
                env,
                effect,
                scope,
                max_level,
                kinds,
                labels,
            },
        )
}

fn memory_spec() -> impl Strategy<Value = MemorySpec> {
    (
        0..CLASSES.len(),
        0..=SCOPE_NODES,
        0..LEVELS.len(),
        prop::sample::select(vec![0usize, 0, 0, 1, 2, 3]),
        0..EXPIRIES.len(),
        prop::bool::weighted(0.3),
    )
        .prop_map(
            |(class, scope, level, status, expires, pinned)| MemorySpec {
                class,
                scope,
                level,
                status,
                expires,
                pinned,
            },
        )
}

fn tool_request_spec() -> impl Strategy<Value = ToolRequestSpec> {
    (
        request_run(),
        0..TOOLS.len(),
        prop::collection::btree_map(0..ARGS.len(), 0..ARG_VALUES.len(), 0..3),
        // Usage for most rules (it only counts for rate-limit rules).
        prop::collection::vec(prop::option::weighted(0.7, 0..3i32), 9),
    )
        .prop_map(|(run, tool, args, usage)| ToolRequestSpec {
            run,
            tool,
            args: args.into_iter().collect(),
            usage: usage
                .into_iter()
                .enumerate()
                .filter_map(|(i, u)| Some((i, u?)))
                .collect(),
        })
}

fn context_request_spec() -> impl Strategy<Value = ContextRequestSpec> {
    (
        request_run(),
        0..KINDS.len(),
        0..=SCOPE_NODES,
        prop::sample::select(vec![0usize, 0, 1, 1, 2, 3, 4]),
        prop::collection::btree_set(0..LABELS.len(), 0..3),
    )
        .prop_map(|(run, kind, scope, level, labels)| ContextRequestSpec {
            run,
            kind,
            scope,
            level,
            labels: labels.into_iter().collect(),
        })
}

/// A request's run: mostly `r0` (which always exists), sometimes `r9` (which never does).
fn request_run() -> impl Strategy<Value = usize> {
    prop::sample::select(vec![0usize, 0, 0, 0, 1, 2, 3])
}

pub fn world() -> impl Strategy<Value = World> {
    let setting = (
        scope_tree(),
        prop::collection::vec(run_spec(), 1..4),
        prop::option::weighted(0.3, 0..LEVELS.len()),
        // Mostly targets that exist, so most requests are governed.
        prop::collection::vec(
            (
                0..ENVS,
                0..ATTACH_KINDS.len(),
                prop::sample::select(vec![0usize, 0, 0, 1, 2]),
            ),
            1..5,
        ),
        prop::collection::vec((0..ENVS, 0..ENVS), 0..5),
        prop::option::weighted(0.8, 0..NOWS.len()),
        prop::collection::vec((prop::bool::weighted(0.6), prop::bool::weighted(0.5)), ENVS),
    );
    let rules = (
        prop::collection::vec(tool_rule_spec(), 0..9),
        prop::collection::vec((0..ENVS, 0..TOOL_PATTERNS.len()), 0..2),
        prop::collection::vec(data_rule_spec(), 0..7),
        prop::collection::vec(
            (0..ENVS, prop::bool::weighted(0.3), 0..MODEL_PATTERNS.len()),
            0..4,
        ),
        prop::collection::vec(
            (0..ENVS, prop::bool::weighted(0.3), 0..CLASS_PATTERNS.len()),
            0..4,
        ),
        prop::collection::vec(memory_spec(), 0..6),
        prop::collection::vec(
            (
                0..ENVS,
                0..TOOL_PATTERNS.len(),
                prop::sample::select(vec![0usize, 1, 2, 2, 3, 3, 3, 4]),
            ),
            0..3,
        ),
    );
    let requests = (
        prop::collection::vec(tool_request_spec(), 0..5),
        prop::collection::vec(context_request_spec(), 0..5),
        prop::collection::vec(request_run(), 0..3),
        prop::collection::vec((request_run(), 0..MODELS.len()), 0..3),
    );
    (setting, rules, requests).prop_map(
        |(
            (scope_parents, runs, ghost_clearance, attached, extends, now, broad),
            (tool_rules, approvals, data_rules, model_rules, memory_rules, memories, tool_levels),
            (tool_requests, context_requests, memory_requests, model_requests),
        )| World {
            scope_parents,
            runs,
            ghost_clearance,
            broad,
            attached,
            extends,
            tool_rules,
            approvals,
            tool_levels,
            data_rules,
            model_rules,
            memory_rules,
            memories,
            now,
            tool_requests,
            context_requests,
            memory_requests,
            model_requests,
        },
    )
}

pub fn env(i: usize) -> String {
    format!("e{i}")
}

pub fn rule_id(kind: &str, i: usize, env_index: usize) -> String {
    format!("{}/{kind}-{i}", env(env_index))
}

fn s(text: &str) -> Value {
    Value::sym(text)
}

fn n(x: i32) -> Value {
    Value::Number(x)
}

/// One request: its id and the facts of that decision (`now` included).
#[derive(Debug, Clone)]
pub struct Request {
    pub id: String,
    pub facts: Vec<Fact>,
}

impl World {
    /// The path of a scope node (`org:acme/n1/n3`); `SCOPE_NODES` is a scope outside the tree.
    pub fn scope(&self, node: usize) -> String {
        if node >= SCOPE_NODES {
            return "org:elsewhere".to_string();
        }
        match self.scope_parents[node] {
            None if node == 0 => "org:acme".to_string(),
            None => format!("org:o{node}"),
            Some(p) => format!("{}/n{node}", self.scope(p)),
        }
    }

    /// The nodes at or above `node`, `node` first.
    pub fn ancestors(&self, node: usize) -> Vec<usize> {
        let mut out = vec![node];
        if node >= SCOPE_NODES {
            return out;
        }
        let mut at = node;
        while let Some(p) = self.scope_parents[at] {
            out.push(p);
            at = p;
        }
        out
    }

    /// Whether request run index `r` has a `run` fact.
    pub fn run_exists(&self, r: usize) -> bool {
        r < self.runs.len() && RUNS[r] != "r9"
    }

    /// The static facts: runs, scopes, clearances, envelopes, rules, memories.
    pub fn static_facts(&self) -> Vec<Fact> {
        let mut out = Vec::new();
        // Encoders emit `scope_parent` for every prefix of every scope; the tree's names are
        // those prefixes.
        for (child, parent) in self.scope_parents.iter().enumerate() {
            if let Some(p) = parent {
                out.push(Fact::new(
                    "scope_parent",
                    vec![s(&self.scope(child)), s(&self.scope(*p))],
                ));
            }
        }
        for (i, run) in self.runs.iter().enumerate() {
            out.push(Fact::new(
                "run",
                vec![
                    s(RUNS[i]),
                    s(AGENTS[run.agent]),
                    s(TASKS[run.task]),
                    s(&self.scope(run.scope)),
                ],
            ));
            if let Some(c) = run.clearance {
                out.push(Fact::new("clearance", vec![s(RUNS[i]), s(LEVELS[c])]));
            }
        }
        if let Some(c) = self.ghost_clearance {
            out.push(Fact::new("clearance", vec![s("r9"), s(LEVELS[c])]));
        }
        for e in 0..ENVS {
            out.push(Fact::new("envelope", vec![s(&env(e)), n(1)]));
        }
        for &(e, kind, target) in &self.attached {
            out.push(Fact::new(
                "envelope_attached",
                vec![
                    s(&env(e)),
                    s(ATTACH_KINDS[kind]),
                    s(ATTACH_TARGETS[kind][target]),
                ],
            ));
        }
        for &(c, p) in &self.extends {
            out.push(Fact::new("envelope_extends", vec![s(&env(c)), s(&env(p))]));
        }
        for (e, &(tools, data)) in self.broad.iter().enumerate() {
            if tools {
                out.push(Fact::new(
                    "tool_rule",
                    vec![s(&env(e)), s(&rule_id("tool", 99, e)), s("allow"), s("**")],
                ));
            }
            if data {
                out.push(Fact::new(
                    "data_rule",
                    vec![
                        s(&env(e)),
                        s(&rule_id("data", 99, e)),
                        s("see"),
                        s("**"),
                        s("secret"),
                    ],
                ));
            }
        }
        for (i, r) in self.tool_rules.iter().enumerate() {
            let id = rule_id("tool", i, r.env);
            out.push(Fact::new(
                "tool_rule",
                vec![
                    s(&env(r.env)),
                    s(&id),
                    s(TOOL_EFFECTS[r.effect]),
                    s(TOOL_PATTERNS[r.pattern]),
                ],
            ));
            for &(a, p) in &r.args {
                out.push(Fact::new(
                    "tool_rule_arg",
                    vec![s(&env(r.env)), s(&id), s(ARGS[a]), s(ARG_PATTERNS[p])],
                ));
            }
            if let (Some(count), "rate_limit") = (r.limit, TOOL_EFFECTS[r.effect]) {
                out.push(Fact::new(
                    "tool_rule_limit",
                    vec![s(&env(r.env)), s(&id), n(count), n(60), s("run")],
                ));
            }
        }
        for (i, &(e, p)) in self.approvals.iter().enumerate() {
            out.push(Fact::new(
                "approval_rule",
                vec![
                    s(&env(e)),
                    s(&rule_id("approval", i, e)),
                    s(TOOL_PATTERNS[p]),
                    s("alice"),
                    n(600),
                ],
            ));
        }
        for (i, &(e, p, l)) in self.tool_levels.iter().enumerate() {
            out.push(Fact::new(
                "tool_level",
                vec![
                    s(&env(e)),
                    s(&rule_id("level", i, e)),
                    s(TOOL_PATTERNS[p]),
                    s(LEVELS[l]),
                ],
            ));
        }
        for (i, r) in self.data_rules.iter().enumerate() {
            let id = rule_id("data", i, r.env);
            out.push(Fact::new(
                "data_rule",
                vec![
                    s(&env(r.env)),
                    s(&id),
                    s(DATA_EFFECTS[r.effect]),
                    s(SCOPE_PATTERNS[r.scope]),
                    s(LEVELS[r.max_level]),
                ],
            ));
            for &k in &r.kinds {
                out.push(Fact::new(
                    "data_rule_kind",
                    vec![s(&env(r.env)), s(&id), s(KIND_PATTERNS[k])],
                ));
            }
            for &l in &r.labels {
                out.push(Fact::new(
                    "data_rule_label",
                    vec![s(&env(r.env)), s(&id), s(LABELS[l])],
                ));
            }
        }
        for (i, &(e, deny, p)) in self.model_rules.iter().enumerate() {
            let (pp, mp, rp) = MODEL_PATTERNS[p];
            out.push(Fact::new(
                "model_rule",
                vec![
                    s(&env(e)),
                    s(&rule_id("model", i, e)),
                    s(if deny { "deny" } else { "allow" }),
                    s(pp),
                    s(mp),
                    s(rp),
                ],
            ));
        }
        for (i, &(e, deny, p)) in self.memory_rules.iter().enumerate() {
            out.push(Fact::new(
                "memory_rule",
                vec![
                    s(&env(e)),
                    s(&rule_id("memory", i, e)),
                    s(if deny { "deny" } else { "allow" }),
                    s(CLASS_PATTERNS[p]),
                ],
            ));
        }
        for (i, m) in self.memories.iter().enumerate() {
            out.push(Fact::new(
                "memory",
                vec![
                    s(&format!("mem{i}")),
                    s(CLASSES[m.class]),
                    s(&self.scope(m.scope)),
                    s(LEVELS[m.level]),
                    s(STATUSES[m.status]),
                    n(EXPIRIES[m.expires]),
                    n(i32::from(m.pinned)),
                ],
            ));
        }
        out
    }

    /// Every request with its own facts; ids are unique across kinds.
    pub fn requests(&self) -> Vec<Request> {
        let now: Vec<Fact> = self
            .now
            .map(|t| Fact::new("now", vec![n(NOWS[t])]))
            .into_iter()
            .collect();
        let mut out = Vec::new();
        for (i, q) in self.tool_requests.iter().enumerate() {
            let id = format!("t{i}");
            let mut facts = now.clone();
            facts.push(Fact::new(
                "tool_request",
                vec![s(&id), s(RUNS[q.run]), s(TOOLS[q.tool])],
            ));
            for &(a, v) in &q.args {
                facts.push(Fact::new(
                    "tool_arg",
                    vec![s(&id), s(ARGS[a]), s(ARG_VALUES[v])],
                ));
            }
            for &(rule, used) in &q.usage {
                if let Some(r) = self.tool_rules.get(rule) {
                    facts.push(Fact::new(
                        "tool_usage",
                        vec![s(&id), s(&rule_id("tool", rule, r.env)), n(used)],
                    ));
                }
            }
            out.push(Request { id, facts });
        }
        for (i, q) in self.context_requests.iter().enumerate() {
            let id = format!("c{i}");
            let mut facts = now.clone();
            facts.push(Fact::new(
                "context_request",
                vec![
                    s(&id),
                    s(RUNS[q.run]),
                    s(&format!("item{i}")),
                    s(KINDS[q.kind]),
                    s(&self.scope(q.scope)),
                    s(LEVELS[q.level]),
                ],
            ));
            for &l in &q.labels {
                facts.push(Fact::new("context_label", vec![s(&id), s(LABELS[l])]));
            }
            out.push(Request { id, facts });
        }
        for (i, &r) in self.memory_requests.iter().enumerate() {
            let id = format!("m{i}");
            let mut facts = now.clone();
            facts.push(Fact::new("memory_request", vec![s(&id), s(RUNS[r])]));
            out.push(Request { id, facts });
        }
        for (i, &(r, m)) in self.model_requests.iter().enumerate() {
            let id = format!("d{i}");
            let (provider, model, reasoning) = MODELS[m];
            let mut facts = now.clone();
            facts.push(Fact::new(
                "model_request",
                vec![s(&id), s(RUNS[r]), s(provider), s(model), s(reasoning)],
            ));
            out.push(Request { id, facts });
        }
        out
    }

    /// Every fact, static and request (`now` once).
    pub fn all_facts(&self) -> Vec<Fact> {
        let mut out = self.static_facts();
        for r in self.requests() {
            for f in r.facts {
                if !out.contains(&f) {
                    out.push(f);
                }
            }
        }
        out
    }
}

/// Facts as a set with one origin, for the engine and the proof checker.
pub fn fact_set(facts: &[Fact], origin: &str) -> FactSet {
    let mut set = FactSet::new();
    for f in facts {
        assert!(
            (origin == "request") == REQUEST_RELATIONS.contains(&f.relation.as_str()),
            "{} is not a {origin} fact",
            f.relation
        );
        set.add(f.relation.clone(), f.values.clone(), origin);
    }
    set
}
