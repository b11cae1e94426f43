//! `HandoffContract` (`tollgate.handoff/v1`): the seed's typed handoff — the `GoalPacket`, the
//! `EvidenceBundle`, the `ConstraintSet`, required outputs, success criteria and extension
//! fields — with its JSON Schema, and parsing that reports every fault with its JSON pointer
//! (and its line and column, for a file).

use std::collections::BTreeSet;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tollgate_rules::envelope::Level;
use tollgate_rules::located::Located;

use crate::clock::parse_rfc3339;

/// The schema version this module reads and writes.
pub const SCHEMA: &str = "tollgate.handoff/v1";

/// The contract's JSON Schema (draft 2020-12), served at `GET /v2/handoffs/schema`.
pub const JSON_SCHEMA: &str = include_str!("contract.schema.json");

/// A typed handoff from a producing agent to a consuming one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct HandoffContract {
    /// `tollgate.handoff/v1`.
    #[serde(default = "schema_v1")]
    pub schema: String,
    /// The contract's id: the same id with other content is a new version.
    pub id: String,
    /// The template whose required fields the handoff pack checks (`lightweight` when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<Template>,
    /// Who hands the work over.
    pub producer: Producer,
    /// Who takes it.
    pub consumer: Consumer,
    /// What is to be done.
    #[schema(value_type = GoalForm)]
    pub goal: GoalPacket,
    /// The sources approved for transfer.
    #[serde(default, skip_serializing_if = "EvidenceBundle::is_empty")]
    pub evidence: EvidenceBundle,
    /// Hard rules, blocked actions, deadline, style, evidence limits.
    #[serde(default, skip_serializing_if = "ConstraintSet::is_empty")]
    pub constraints: ConstraintSet,
    /// What the consumer must deliver.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schema(value_type = Vec<OutputForm>)]
    pub required_outputs: Vec<RequiredOutput>,
    /// How the producer will judge the result.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub success_criteria: Vec<String>,
    /// Fields for needs the schema does not name: carried, never checked.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    #[schema(value_type = Object)]
    pub extensions: Map<String, Value>,
}

fn schema_v1() -> String {
    SCHEMA.to_string()
}

/// The three templates of the seed, and the lightweight contract.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, utoipa::ToSchema,
)]
#[serde(rename_all = "snake_case")]
#[schema(as = HandoffTemplate)]
pub enum Template {
    /// Only a goal is required.
    Lightweight,
    /// A patch handed to a reviewer.
    CodePatchReview,
    /// Research findings handed to an implementer.
    ResearchToImplementation,
    /// A plan handed to an executor.
    PlannerToExecutor,
}

impl Template {
    /// Every template.
    pub const ALL: [Template; 4] = [
        Template::Lightweight,
        Template::CodePatchReview,
        Template::ResearchToImplementation,
        Template::PlannerToExecutor,
    ];

    /// Its name, as the pack and the files write it.
    pub fn as_str(self) -> &'static str {
        match self {
            Template::Lightweight => "lightweight",
            Template::CodePatchReview => "code_patch_review",
            Template::ResearchToImplementation => "research_to_implementation",
            Template::PlannerToExecutor => "planner_to_executor",
        }
    }

    /// The template named `name`.
    pub fn parse(name: &str) -> Option<Template> {
        Template::ALL.into_iter().find(|t| t.as_str() == name)
    }
}

/// The producing side.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Producer {
    /// The producing run.
    pub run: String,
    /// The producing agent (the run's agent when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
}

/// The consuming side: a run already open, the producer's own run, or one to be opened.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Consumer {
    /// The consuming agent.
    pub agent: String,
    /// The consuming run, when it exists (it may be the producer's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
    /// The scope of a run not yet open (the producer run's when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// The clearance of a run not yet open (the producer run's when absent; never above it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub clearance: Option<Level>,
}

/// The current objective and the output expected.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(from = "GoalForm")]
pub struct GoalPacket {
    /// What is to be done.
    pub objective: String,
    /// What the producer expects back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_output: Option<String>,
}

/// A goal as a contract may write it: the objective alone, or the packet.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(untagged)]
enum GoalForm {
    /// The objective.
    Text(String),
    /// The goal packet.
    Packet {
        /// What is to be done.
        objective: String,
        /// What the producer expects back.
        #[serde(default)]
        expected_output: Option<String>,
    },
}

impl From<GoalForm> for GoalPacket {
    fn from(form: GoalForm) -> GoalPacket {
        match form {
            GoalForm::Text(objective) => GoalPacket {
                objective,
                expected_output: None,
            },
            GoalForm::Packet {
                objective,
                expected_output,
            } => GoalPacket {
                objective,
                expected_output,
            },
        }
    }
}

/// The exact sources approved for transfer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(transparent)]
pub struct EvidenceBundle(pub Vec<EvidenceItem>);

impl EvidenceBundle {
    /// Whether it holds nothing.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// One source approved for transfer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EvidenceItem {
    /// Its id (a context item, a tool call, a document).
    pub item: String,
    /// Its scope path.
    pub scope: String,
    /// Its sensitivity.
    #[schema(value_type = String)]
    pub sensitivity: Level,
    /// What it says, in short.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// Where it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<EvidenceSource>,
}

/// The recorded event a piece of evidence comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EvidenceSource {
    /// The run.
    pub run: String,
    /// The event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<u64>,
}

/// Hard rules, blocked actions, deadline, style requirements, evidence limits.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ConstraintSet {
    /// Rules the consumer must keep, in words.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hard_rules: Vec<String>,
    /// Tool globs the consumer must not execute.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub blocked_actions: Vec<String>,
    /// When the delivery is due (RFC 3339); left out when there is none (`null` is refused).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub deadline: Option<String>,
    /// Style requirements, in words.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub style: Vec<String>,
    /// No evidence above this level crosses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = String, nullable = false)]
    pub max_level: Option<Level>,
    /// Only evidence whose scope matches this glob crosses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub scope: Option<String>,
}

impl ConstraintSet {
    /// Whether it constrains nothing.
    pub fn is_empty(&self) -> bool {
        *self == ConstraintSet::default()
    }
}

/// An output the consumer must deliver.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(from = "OutputForm")]
pub struct RequiredOutput {
    /// Its name (`patch`, `test_report`).
    pub name: String,
    /// What it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// A required output as a contract may write it: its name alone, or named and described.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(untagged)]
enum OutputForm {
    /// Its name.
    Name(String),
    /// Named and described.
    Described {
        /// Its name (`patch`, `test_report`).
        name: String,
        /// What it is.
        #[serde(default)]
        description: Option<String>,
    },
}

impl From<OutputForm> for RequiredOutput {
    fn from(form: OutputForm) -> RequiredOutput {
        match form {
            OutputForm::Name(name) => RequiredOutput {
                name,
                description: None,
            },
            OutputForm::Described { name, description } => RequiredOutput { name, description },
        }
    }
}

/// One fault of a contract that does not read: where (a JSON pointer, and the line and column
/// in a file), what, and how to fix it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct ContractFault {
    /// JSON pointer of the node at fault (`""` the whole contract).
    pub path: String,
    /// Line in the file, from 1.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    /// Column in the file, from 1.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub column: Option<usize>,
    /// What is wrong.
    pub message: String,
    /// How to fix it.
    pub help: String,
}

impl std::fmt::Display for ContractFault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let at = if self.path.is_empty() {
            "the contract"
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

/// Every fault found, in document order.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the handoff contract does not read ({} fault(s)):\n{}", .0.len(), render(.0))]
pub struct ContractFaults(pub Vec<ContractFault>);

fn render(faults: &[ContractFault]) -> String {
    faults
        .iter()
        .map(|f| format!("  {f}"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn validator() -> &'static jsonschema::Validator {
    static VALIDATOR: OnceLock<jsonschema::Validator> = OnceLock::new();
    VALIDATOR.get_or_init(|| {
        let schema: Value = serde_json::from_str(JSON_SCHEMA).unwrap_or(Value::Bool(false));
        jsonschema::options()
            .offline()
            .should_validate_formats(true)
            .build(&schema)
            .unwrap_or_else(|_| {
                // The embedded schema is checked by a test; a broken one refuses everything.
                #[expect(clippy::unwrap_used, reason = "`false` is a valid schema")]
                jsonschema::validator_for(&Value::Bool(false)).unwrap()
            })
    })
}

/// Reads a contract file (YAML or JSON): every fault with its line and column.
pub fn parse(text: &str) -> Result<HandoffContract, ContractFaults> {
    let doc = Located::parse(text).map_err(|e| {
        ContractFaults(vec![ContractFault {
            path: String::new(),
            line: Some(e.line),
            column: Some(e.column),
            message: e.message,
            help: "fix the YAML or JSON syntax".into(),
        }])
    })?;
    from_value(&doc.value).map_err(|ContractFaults(faults)| {
        ContractFaults(
            faults
                .into_iter()
                .map(|mut f| {
                    if let Some((line, column)) = doc.place(&f.path) {
                        f.line = Some(line);
                        f.column = Some(column);
                    }
                    f
                })
                .collect(),
        )
    })
}

/// Reads a contract from JSON: first against the schema (every fault), then the checks the
/// schema cannot state (unique evidence items and outputs, a deadline the clock can read).
pub fn from_value(value: &Value) -> Result<HandoffContract, ContractFaults> {
    let mut faults: Vec<ContractFault> = validator()
        .iter_errors(value)
        .map(|e| schema_fault(&e))
        .collect();
    if !faults.is_empty() {
        faults.sort_by(|a, b| a.path.cmp(&b.path));
        faults.dedup();
        return Err(ContractFaults(faults));
    }
    let contract: HandoffContract = serde_json::from_value(value.clone()).map_err(|e| {
        ContractFaults(vec![fault(
            "",
            e.to_string(),
            "compare the contract with `GET /v2/handoffs/schema`",
        )])
    })?;
    check(&contract)?;
    Ok(contract)
}

fn schema_fault(e: &jsonschema::ValidationError<'_>) -> ContractFault {
    let path = e.instance_path().to_string();
    let help = match e.kind() {
        jsonschema::error::ValidationErrorKind::AdditionalProperties { .. } => {
            "remove the field, or put it under `extensions`".to_string()
        }
        jsonschema::error::ValidationErrorKind::Required { .. } => {
            "add the field (see `tollgate handoff template` for a complete contract)".to_string()
        }
        jsonschema::error::ValidationErrorKind::Enum { .. } => {
            "use one of the values the schema lists".to_string()
        }
        _ => "compare the contract with `GET /v2/handoffs/schema`".to_string(),
    };
    fault(&path, e.to_string(), help)
}

fn fault(path: &str, message: impl Into<String>, help: impl Into<String>) -> ContractFault {
    ContractFault {
        path: path.to_string(),
        line: None,
        column: None,
        message: message.into(),
        help: help.into(),
    }
}

fn check(c: &HandoffContract) -> Result<(), ContractFaults> {
    let mut faults = Vec::new();
    let mut items = BTreeSet::new();
    for (i, e) in c.evidence.0.iter().enumerate() {
        if !items.insert(e.item.as_str()) {
            faults.push(fault(
                &format!("/evidence/{i}/item"),
                format!("evidence `{}` is listed twice", e.item),
                "list each piece of evidence once",
            ));
        }
    }
    let mut names = BTreeSet::new();
    for (i, o) in c.required_outputs.iter().enumerate() {
        if !names.insert(o.name.as_str()) {
            faults.push(fault(
                &format!("/required_outputs/{i}"),
                format!("output `{}` is required twice", o.name),
                "name each required output once",
            ));
        }
    }
    if let Some(d) = &c.constraints.deadline
        && parse_rfc3339(d).is_none_or(|s| s > i32::MAX as u64)
    {
        faults.push(fault(
            "/constraints/deadline",
            format!("deadline `{d}` is not a time the policy engine can compare"),
            "write an RFC 3339 time in UTC before 2038, such as `2026-12-01T17:00:00Z`",
        ));
    }
    if c.goal.objective.trim().is_empty() {
        // Not a schema fault: an empty goal is a policy matter (`missing_goal`), checked with
        // a proof, so it is let through here.
    }
    if faults.is_empty() {
        Ok(())
    } else {
        Err(ContractFaults(faults))
    }
}

impl HandoffContract {
    /// The fields the contract fills, as the handoff pack's `handoff_field` names them.
    pub fn fields(&self) -> Vec<String> {
        let mut out = Vec::new();
        if !self.goal.objective.trim().is_empty() {
            out.push("goal");
        }
        if self
            .goal
            .expected_output
            .as_deref()
            .is_some_and(|t| !t.trim().is_empty())
        {
            out.push("expected_output");
        }
        if !self.evidence.is_empty() {
            out.push("evidence");
        }
        if !self.constraints.is_empty() {
            out.push("constraints");
        }
        if !self.required_outputs.is_empty() {
            out.push("required_outputs");
        }
        if !self.success_criteria.is_empty() {
            out.push("success_criteria");
        }
        out.into_iter().map(str::to_string).collect()
    }

    /// The template (`lightweight` when none is named).
    pub fn template(&self) -> Template {
        self.template.unwrap_or(Template::Lightweight)
    }

    /// The deadline in seconds since the epoch (checked to fit when the contract was read).
    pub fn deadline_secs(&self) -> Option<i32> {
        self.constraints
            .deadline
            .as_deref()
            .and_then(parse_rfc3339)
            .and_then(|s| i32::try_from(s).ok())
    }

    /// blake3 of the contract's canonical JSON: its content's identity (a version).
    pub fn content_hash(&self) -> String {
        let text = tollgate_rules::canonical::to_canonical_json(self).unwrap_or_default();
        blake3::hash(text.as_bytes()).to_hex().to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PLAN: &str = r#"
id: handoff-T-140-plan
template: planner_to_executor
producer: {run: run-planner}
consumer: {agent: executor}
goal:
  objective: per-client rate limiting
  expected_output: a patch and a test report
evidence:
  - {item: doc-ticket-T-140, scope: "org:acme/repo:api/task:T-140", sensitivity: internal}
constraints:
  blocked_actions: ["shell.rm_rf"]
  deadline: "2026-12-01T17:00:00Z"
required_outputs: [patch, {name: test_report, description: cargo test output}]
"#;

    #[test]
    fn a_complete_contract_reads_with_its_short_forms() {
        let c = parse(PLAN).unwrap();
        assert_eq!(c.schema, SCHEMA);
        assert_eq!(c.template(), Template::PlannerToExecutor);
        assert_eq!(c.required_outputs[0].name, "patch");
        assert_eq!(
            c.required_outputs[1].description.as_deref(),
            Some("cargo test output")
        );
        assert_eq!(
            c.fields(),
            [
                "goal",
                "expected_output",
                "evidence",
                "constraints",
                "required_outputs"
            ]
        );
        assert_eq!(c.deadline_secs(), Some(1_796_144_400));
        let lightweight =
            parse("id: h\nproducer: {run: r}\nconsumer: {agent: a}\ngoal: fix it\n").unwrap();
        assert_eq!(lightweight.goal.objective, "fix it");
        assert_eq!(lightweight.template(), Template::Lightweight);
    }

    #[test]
    fn every_fault_is_reported_with_its_path_and_line() {
        let text = "id: h-1\nproducer: {run: r}\nconsumer: {agent: a, clearence: secret}\ngoal: x\nevidence:\n  - {item: a, scope: \"org:x\", sensitivity: top}\n  - {item: b}\n";
        let faults = parse(text).unwrap_err().0;
        let at: Vec<(&str, Option<usize>)> =
            faults.iter().map(|f| (f.path.as_str(), f.line)).collect();
        assert_eq!(
            at,
            [
                ("/consumer", Some(3)),
                ("/evidence/0/sensitivity", Some(6)),
                ("/evidence/1", Some(7)),
                ("/evidence/1", Some(7)),
            ],
            "{faults:#?}"
        );
        assert!(faults[0].message.contains("clearence"), "{}", faults[0]);
        assert!(faults[0].help.contains("extensions"));
        assert!(faults[2].message.contains("scope") && faults[3].message.contains("sensitivity"));
    }

    #[test]
    fn duplicates_and_unreadable_deadlines_are_faults() {
        let text = "id: h\nproducer: {run: r}\nconsumer: {agent: a}\ngoal: x\nevidence:\n  - {item: a, scope: s, sensitivity: public}\n  - {item: a, scope: s, sensitivity: public}\nrequired_outputs: [patch, patch]\nconstraints: {deadline: \"2040-01-01T00:00:00Z\"}\n";
        let faults = parse(text).unwrap_err().0;
        let paths: Vec<&str> = faults.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "/evidence/1/item",
                "/required_outputs/1",
                "/constraints/deadline"
            ]
        );
    }

    #[test]
    fn the_schema_compiles_and_a_syntax_error_has_a_line() {
        let schema: Value = serde_json::from_str(JSON_SCHEMA).unwrap();
        assert!(jsonschema::meta::is_valid(&schema));
        let faults = parse("id: [\n").unwrap_err().0;
        assert_eq!(faults.len(), 1);
        assert!(faults[0].line.is_some());
    }

    #[test]
    fn the_content_hash_is_the_same_whatever_the_order_or_form() {
        let a = parse("id: h\nproducer: {run: r}\nconsumer: {agent: a}\ngoal: x\n").unwrap();
        let b = parse("{\"goal\": {\"objective\": \"x\"}, \"consumer\": {\"agent\": \"a\"}, \"producer\": {\"run\": \"r\"}, \"id\": \"h\"}").unwrap();
        assert_eq!(a.content_hash(), b.content_hash());
    }
}
