//! The envelope format: serde types for `PolicyEnvelope` and its rules, read from YAML or JSON.
//!
//! Defaults written here (`scopes: ["**"]`, `max_sensitivity: secret`, `*` for model globs,
//! `per: run`, `ttl_seconds: 3600`) are the same ones the loader's checks assume; a test loads
//! every fixture both ways and compares.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// A policy envelope: rules for the tools, data, models and memories a run may use and the
/// sensitivity levels of tools, attached to runs, agents or tasks, inheriting from parent
/// envelopes, versioned.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PolicyEnvelope {
    /// Unique id (no `/`, no spaces).
    pub id: String,
    /// Version, from 1 up; a changed envelope gets a higher version.
    pub version: i32,
    /// What the envelope is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Ids of parent envelopes: their rules apply wherever this one does, and this one can
    /// only narrow them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extends: Vec<String>,
    /// The runs, agents and tasks this envelope governs.
    #[serde(default, skip_serializing_if = "Attachments::is_empty")]
    pub attach: Attachments,
    /// The highest clearance a run this envelope governs may have: a run's clearance is the
    /// lowest of what it asked, its credential's and its envelopes'.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_clearance: Option<Level>,
    /// Tool rules.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ToolRule>,
    /// Data rules for context items.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub data: Vec<DataRule>,
    /// Model rules.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub models: Vec<ModelRule>,
    /// Memory rules.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub memory: Vec<MemoryRule>,
    /// Approval rules.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub approvals: Vec<ApprovalRule>,
    /// Sensitivity levels of tools: a run not cleared for a matching tool's level is denied
    /// it (`clearance-forbid`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_levels: Vec<ToolLevelRule>,
    /// Free extension fields that packs and user rules may read (as `envelope_extension`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub extensions: BTreeMap<String, serde_json::Value>,
}

/// Where an envelope applies.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Attachments {
    /// Run ids.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runs: Vec<String>,
    /// Agent ids.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub agents: Vec<String>,
    /// Task ids.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tasks: Vec<String>,
}

impl Attachments {
    /// Whether the envelope is attached to nothing (it may still apply through a child).
    pub fn is_empty(&self) -> bool {
        self.runs.is_empty() && self.agents.is_empty() && self.tasks.is_empty()
    }
}

/// What a tool rule does to matching calls.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum ToolEffect {
    /// The call may run.
    Allow,
    /// The call may not run.
    Deny,
    /// The call waits for a human approval.
    RequireApproval,
    /// The call may run while under its `limit`.
    RateLimit,
}

impl ToolEffect {
    /// Every effect, in the order written in help lines.
    pub const ALL: [ToolEffect; 4] = [
        ToolEffect::Allow,
        ToolEffect::Deny,
        ToolEffect::RequireApproval,
        ToolEffect::RateLimit,
    ];

    /// The name used in YAML and facts.
    pub fn as_str(self) -> &'static str {
        match self {
            ToolEffect::Allow => "allow",
            ToolEffect::Deny => "deny",
            ToolEffect::RequireApproval => "require_approval",
            ToolEffect::RateLimit => "rate_limit",
        }
    }
}

/// A rule about tool calls.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolRule {
    /// Rule id, unique within the envelope; `tools.N` when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// What the rule does.
    pub effect: ToolEffect,
    /// Glob patterns over tool names (`fs.read*`, `shell.*`).
    pub tools: Vec<String>,
    /// Conditions on arguments: JSON pointer (`/path`) to a pattern over the argument's value,
    /// read as its kind says (a path glob, a URL by its parts, or text). All must match.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub args: BTreeMap<String, super::ArgPattern>,
    /// The call may carry no argument but those `args` names: any other (a `proxy` beside a
    /// checked `url`) and the rule does not apply.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub only_named_args: bool,
    /// The limit of a `rate_limit` rule.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<RateLimit>,
    /// Why the rule exists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// At most `count` calls per `window_seconds`, counted per run, agent or task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RateLimit {
    /// Calls allowed per window (at least 1).
    pub count: i32,
    /// Window length in seconds (at least 1).
    pub window_seconds: i32,
    /// What the calls are counted per.
    #[serde(default)]
    pub per: RateScope,
}

/// What a rate limit counts calls per.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum RateScope {
    /// Each run has its own budget.
    #[default]
    Run,
    /// All runs of an agent share one budget.
    Agent,
    /// All runs of a task share one budget.
    Task,
}

impl RateScope {
    /// The name used in YAML and facts.
    pub fn as_str(self) -> &'static str {
        match self {
            RateScope::Run => "run",
            RateScope::Agent => "agent",
            RateScope::Task => "task",
        }
    }
}

/// What a data rule does to matching context items.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum DataEffect {
    /// The item may be seen as it is.
    See,
    /// The item is shown redacted.
    Redact,
    /// The item is left out.
    Block,
}

impl DataEffect {
    /// Every effect.
    pub const ALL: [DataEffect; 3] = [DataEffect::See, DataEffect::Redact, DataEffect::Block];

    /// The name used in YAML and facts.
    pub fn as_str(self) -> &'static str {
        match self {
            DataEffect::See => "see",
            DataEffect::Redact => "redact",
            DataEffect::Block => "block",
        }
    }
}

/// A sensitivity level: `public < internal < confidential < secret`.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    /// Anyone may see it.
    Public,
    /// Inside the organisation.
    Internal,
    /// A need to know.
    Confidential,
    /// Credentials and the like.
    Secret,
}

impl Level {
    /// Every level, lowest first.
    pub const ALL: [Level; 4] = [
        Level::Public,
        Level::Internal,
        Level::Confidential,
        Level::Secret,
    ];

    /// The name used in YAML and facts.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Public => "public",
            Level::Internal => "internal",
            Level::Confidential => "confidential",
            Level::Secret => "secret",
        }
    }
}

/// A rule about which context items a run may see.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DataRule {
    /// Rule id; `data.N` when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// What the rule does.
    pub effect: DataEffect,
    /// Glob patterns over item scopes (`org:acme/**`); every scope by default.
    #[serde(default = "every_scope")]
    pub scopes: Vec<String>,
    /// The rule applies to items at most this sensitive.
    #[serde(default = "highest_level")]
    pub max_sensitivity: Level,
    /// Glob patterns over item kinds (`file`, `doc.*`); any kind when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kinds: Vec<String>,
    /// Labels the item must carry (`secret`, `pii`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub labels: Vec<String>,
    /// Why the rule exists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

fn every_scope() -> Vec<String> {
    vec!["**".to_string()]
}

fn highest_level() -> Level {
    Level::Secret
}

/// Allow or deny, for model and memory rules.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum RuleEffect {
    /// Permitted.
    Allow,
    /// Forbidden.
    Deny,
}

impl RuleEffect {
    /// Both effects.
    pub const ALL: [RuleEffect; 2] = [RuleEffect::Allow, RuleEffect::Deny];

    /// The name used in YAML and facts.
    pub fn as_str(self) -> &'static str {
        match self {
            RuleEffect::Allow => "allow",
            RuleEffect::Deny => "deny",
        }
    }
}

/// A rule about model calls: providers, models and reasoning modes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ModelRule {
    /// Rule id; `models.N` when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Allow or deny.
    pub effect: RuleEffect,
    /// Glob over provider names (`openai`).
    #[serde(default = "any")]
    pub provider: String,
    /// Glob over model names (`gpt-4.1-*`).
    #[serde(default = "any")]
    pub model: String,
    /// Glob over reasoning modes (`low`, `{low,medium}`).
    #[serde(default = "any")]
    pub reasoning: String,
    /// Why the rule exists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

fn any() -> String {
    "*".to_string()
}

/// A rule about which memory classes a run may retrieve.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MemoryRule {
    /// Rule id; `memory.N` when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Allow or deny.
    pub effect: RuleEffect,
    /// Glob patterns over memory classes (`fact`, `procedure`, `*`).
    pub classes: Vec<String>,
    /// Why the rule exists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// Who must approve calls of matching tools, and for how long an approval holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ApprovalRule {
    /// Rule id; `approvals.N` when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Glob patterns over tool names.
    pub tools: Vec<String>,
    /// Who may approve (user or group ids).
    pub approvers: Vec<String>,
    /// How long an approval stays valid, in seconds (default one hour).
    #[serde(default = "one_hour")]
    pub ttl_seconds: i32,
    /// Why the rule exists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

fn one_hour() -> i32 {
    3600
}

/// The sensitivity level of calls of matching tools. A run whose clearance does not reach the
/// level is denied them whatever the tool rules say; a level never permits a call by itself.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolLevelRule {
    /// Rule id; `tool_levels.N` when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Glob patterns over tool names (`secrets.*`).
    pub tools: Vec<String>,
    /// How sensitive calls of these tools are.
    pub level: Level,
    /// Why the rule exists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// The sections of an envelope that hold rules, with the prefix of generated rule ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Section {
    /// `tools:`
    Tools,
    /// `data:`
    Data,
    /// `models:`
    Models,
    /// `memory:`
    Memory,
    /// `approvals:`
    Approvals,
    /// `tool_levels:`
    ToolLevels,
}

impl Section {
    /// Every section, in the order they are compiled.
    pub const ALL: [Section; 6] = [
        Section::Tools,
        Section::Data,
        Section::Models,
        Section::Memory,
        Section::Approvals,
        Section::ToolLevels,
    ];

    /// The key of the section in YAML, also the prefix of generated rule ids.
    pub fn key(self) -> &'static str {
        match self {
            Section::Tools => "tools",
            Section::Data => "data",
            Section::Models => "models",
            Section::Memory => "memory",
            Section::Approvals => "approvals",
            Section::ToolLevels => "tool_levels",
        }
    }
}

impl PolicyEnvelope {
    /// Every rule's local id (given, or `SECTION.INDEX`) with its section and its content as
    /// JSON, in section order then written order.
    pub fn rules(&self) -> Vec<(Section, String, serde_json::Value)> {
        fn each<T: Serialize>(
            out: &mut Vec<(Section, String, serde_json::Value)>,
            section: Section,
            rules: &[T],
            id: impl Fn(&T) -> Option<&String>,
        ) {
            for (i, rule) in rules.iter().enumerate() {
                let local = id(rule)
                    .cloned()
                    .unwrap_or_else(|| local_rule_id(section, i));
                let json = serde_json::to_value(rule).unwrap_or(serde_json::Value::Null);
                out.push((section, local, json));
            }
        }
        let mut out = Vec::new();
        each(&mut out, Section::Tools, &self.tools, |r| r.id.as_ref());
        each(&mut out, Section::Data, &self.data, |r| r.id.as_ref());
        each(&mut out, Section::Models, &self.models, |r| r.id.as_ref());
        each(&mut out, Section::Memory, &self.memory, |r| r.id.as_ref());
        each(&mut out, Section::Approvals, &self.approvals, |r| {
            r.id.as_ref()
        });
        each(&mut out, Section::ToolLevels, &self.tool_levels, |r| {
            r.id.as_ref()
        });
        out
    }

    /// Takes out the rule whose local id is `local`, after naming every unnamed rule by its
    /// position so that no other rule's id changes; whether there was one.
    pub(crate) fn remove_rule(&mut self, local: &str) -> bool {
        fn take<T>(
            rules: &mut Vec<T>,
            section: Section,
            id: impl Fn(&mut T) -> &mut Option<String>,
            local: &str,
        ) -> bool {
            for (i, rule) in rules.iter_mut().enumerate() {
                let slot = id(rule);
                if slot.is_none() {
                    *slot = Some(local_rule_id(section, i));
                }
            }
            match rules
                .iter_mut()
                .position(|r| id(r).as_deref() == Some(local))
            {
                Some(i) => {
                    rules.remove(i);
                    true
                }
                None => false,
            }
        }
        take(&mut self.tools, Section::Tools, |r| &mut r.id, local)
            || take(&mut self.data, Section::Data, |r| &mut r.id, local)
            || take(&mut self.models, Section::Models, |r| &mut r.id, local)
            || take(&mut self.memory, Section::Memory, |r| &mut r.id, local)
            || take(
                &mut self.approvals,
                Section::Approvals,
                |r| &mut r.id,
                local,
            )
            || take(
                &mut self.tool_levels,
                Section::ToolLevels,
                |r| &mut r.id,
                local,
            )
    }

    /// The id a rule has in facts and decisions: `ENVELOPE/RULE`.
    pub fn rule_id(&self, local: &str) -> String {
        format!("{}/{local}", self.id)
    }

    /// `ID@VERSION`, the origin label of this envelope's facts.
    pub fn label(&self) -> String {
        format!("{}@{}", self.id, self.version)
    }
}

/// The id of the `index`-th rule of a section that was written without one: `tools.0`.
pub fn local_rule_id(section: Section, index: usize) -> String {
    format!("{}.{index}", section.key())
}
