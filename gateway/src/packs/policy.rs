//! A pack's policy: its `rules/*.dl` read after the case vocabulary ([`VOCABULARY`]), compiled
//! once, and asked about one proposal at a time. A proposal is permitted when `permit(p)` holds
//! and no `deny(p, reason)` does; the decision carries the deciding rule ids and the proof of
//! the deciding fact (or, for a proposal nothing permits, why `permit(p)` does not hold).
//!
//! The facts are the case's own: its input, its worker evidence, the proposal with its input and
//! the changes its preview showed. Everything is a value of the case; nothing reads a clock.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value as Json};
use tollgate_rules::engine::diag::Source;
use tollgate_rules::engine::{Fact, FactSet, Limits, Program, Proof, Value, WhyNot};

use super::{Pack, PackFault};

/// The relations Tollgate gives a pack's rules, and the two it reads back.
pub const VOCABULARY: &str = r#"// The case vocabulary (Tollgate's, read before the pack's rules).
// Inputs: the case, its input, its evidence, the proposal, its input and its preview's changes.
.decl case(c: symbol, pack: symbol)
.decl case_input(c: symbol, key: symbol, value: symbol)
.decl evidence(c: symbol, worker: symbol, key: symbol, value: symbol)
.decl evidence_number(c: symbol, worker: symbol, key: symbol, value: number)
// Where each piece of evidence came from: `adapter` (the worker's adapter ran) or `api` (a
// caller posted it). A rule that must not trust posted evidence asks for `adapter`.
.decl evidence_source(c: symbol, worker: symbol, key: symbol, source: symbol)
.decl proposal(p: symbol, c: symbol, capability: symbol, action: symbol)
.decl proposal_input(p: symbol, key: symbol, value: symbol)
.decl preview_change(p: symbol, target: symbol, field: symbol, before: symbol, after: symbol)
// Outputs: a proposal is permitted when `permit(p)` holds and no `deny(p, _)` does.
.decl permit(p: symbol)
.decl deny(p: symbol, reason: symbol)
.output permit
.output deny
"#;

/// The name the vocabulary goes by in diagnostics.
pub const VOCABULARY_NAME: &str = "<case vocabulary>";

/// Spaces over `bytes[a..b]`, newlines kept (so lines and columns stay).
fn blank(bytes: &mut [u8], a: usize, b: usize) {
    for byte in bytes.iter_mut().take(b).skip(a) {
        if *byte != b'\n' {
            *byte = b' ';
        }
    }
}

/// A pack's compiled rules.
#[derive(Debug, Clone)]
pub struct PackPolicy {
    program: Program,
}

/// What the pack's rules decided about one proposal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct PackDecision {
    /// `allow` or `deny`.
    pub effect: String,
    /// The deciding rule ids (`intake.route-standard`; for a proposal nothing permits,
    /// `not-permitted`).
    pub rules: Vec<String>,
    /// Denial reasons (`deny(p, reason)`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reasons: Vec<String>,
    /// The proof of the deciding fact.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub proof: Option<Proof>,
    /// For a proposal nothing permits: why `permit(p)` does not hold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub why_not: Option<WhyNot>,
    /// blake3 of the facts the decision was made on (canonical order).
    pub input_hash: String,
}

/// One proposal as the rules see it.
#[derive(Debug, Clone, PartialEq)]
pub struct ProposalFacts<'a> {
    /// The case.
    pub case_id: &'a str,
    /// Its pack.
    pub pack_id: &'a str,
    /// The case's input.
    pub case_input: &'a Map<String, Json>,
    /// `(worker, key, value, source)` of every piece of evidence.
    pub evidence: Vec<(&'a str, &'a str, &'a Json, &'a str)>,
    /// The proposal.
    pub proposal_id: &'a str,
    /// Its capability.
    pub capability: &'a str,
    /// Its action.
    pub action: &'a str,
    /// Its input.
    pub input: &'a Map<String, Json>,
    /// `(target, field, before, after)` of each change the preview showed.
    pub changes: Vec<(String, String, String, String)>,
}

/// A JSON value as one symbol: a string as it is, anything else as its JSON text.
pub fn symbol_of(v: &Json) -> String {
    match v {
        Json::String(s) => s.clone(),
        Json::Null => String::new(),
        other => tollgate_rules::canonical::canonical_json(other),
    }
}

impl PackPolicy {
    /// Compiles the pack's rules after the vocabulary: every diagnostic as a fault of its file.
    pub fn compile(pack: &Pack) -> Result<PackPolicy, Vec<PackFault>> {
        let mut files = vec![Source::new(VOCABULARY_NAME, VOCABULARY)];
        files.extend(pack.rules.iter().map(|r| Source::new(&r.path, &r.text)));
        let source = Source::join(&files);
        let program = Program::compile(&source).map_err(|diags| {
            diags
                .iter()
                .map(|d| {
                    let start = d.span.start;
                    let (line, column) = source.line_col(start);
                    PackFault {
                        file: source.name_at(start).to_string(),
                        path: String::new(),
                        line: Some(line),
                        column: Some(column),
                        message: d.message.clone(),
                        help: d.help.clone().unwrap_or_else(|| d.render(&source)),
                    }
                })
                .collect::<Vec<_>>()
        })?;
        Ok(PackPolicy { program })
    }

    /// The rule with `// @id ID`, and the relation its head derives.
    pub fn rule_head(&self, id: &str) -> Option<String> {
        let ir = self.program.ir();
        ir.rules
            .iter()
            .find(|r| r.id == id)
            .map(|r| ir.relations[r.head.rel].name.clone())
    }

    /// Every rule id of the pack's own files (not the vocabulary's).
    pub fn rule_ids(&self) -> Vec<String> {
        let mut ids: Vec<String> = self
            .program
            .ir()
            .rules
            .iter()
            .map(|r| r.id.clone())
            .collect();
        ids.sort();
        ids.dedup();
        ids
    }

    /// The program in which only the rule `id` derives `permit`: every other `permit` clause is
    /// blanked out of the source (spaces, so lines and columns stay), then compiled again.
    fn only_permit_rule(&self, id: &str) -> Result<Program, String> {
        let ir = self.program.ir();
        let mut source = self.program.source().clone();
        let mut bytes = std::mem::take(&mut source.text).into_bytes();
        for r in &ir.rules {
            if ir.relations[r.head.rel].name == "permit" && r.id != id {
                let a = r.span.start as usize;
                let b = (r.span.end as usize).min(bytes.len());
                blank(&mut bytes, a, b);
                // Its `// @id` line too, or that would name no rule.
                let mut end = a;
                while end > 0 {
                    let start = bytes[..end - 1]
                        .iter()
                        .rposition(|&c| c == b'\n')
                        .map_or(0, |i| i + 1);
                    let line = String::from_utf8_lossy(&bytes[start..end])
                        .trim()
                        .to_string();
                    if line.starts_with("// @id") {
                        blank(&mut bytes, start, end);
                        break;
                    }
                    if !(line.is_empty() || line.starts_with("//")) {
                        break;
                    }
                    end = start;
                }
            }
        }
        source.text = String::from_utf8(bytes).map_err(|e| e.to_string())?;
        Program::compile(&source)
            .map_err(|d| d.first().map_or_else(String::new, |d| d.render(&source)))
    }

    /// Decides one proposal of a capability whose `policy_rule` is `rule`: permitted when that
    /// rule derives `permit(p)` (another rule's `permit` does not stand in for it) and no rule
    /// derives `deny(p, _)`.
    pub fn decide_for(&self, p: &ProposalFacts<'_>, rule: &str) -> Result<PackDecision, String> {
        let mut d = self.decide(p)?;
        if d.effect == "deny" && d.rules != ["not-permitted"] {
            return Ok(d);
        }
        let only = PackPolicy {
            program: self.only_permit_rule(rule)?,
        };
        let by_rule = only.decide(p)?;
        if by_rule.effect == "allow" {
            return Ok(by_rule);
        }
        d.effect = "deny".into();
        d.rules = vec!["not-permitted".into()];
        d.reasons = vec![if d.proof.is_some() {
            format!(
                "the capability's rule `{rule}` does not permit `{}` (another rule does, but a capability is permitted only by the rule it names)",
                p.proposal_id
            )
        } else {
            format!(
                "the capability's rule `{rule}` does not permit `{}`",
                p.proposal_id
            )
        }];
        d.proof = None;
        d.why_not = by_rule.why_not;
        Ok(d)
    }

    /// Decides one proposal: `permit(p)` by any rule and no `deny(p, _)`.
    pub fn decide(&self, p: &ProposalFacts<'_>) -> Result<PackDecision, String> {
        let facts = facts_of(p);
        let input_hash = {
            let mut lines: Vec<String> = facts
                .iter()
                .map(|(f, _)| {
                    let values: Vec<String> = f.values.iter().map(|v| v.to_string()).collect();
                    format!("{}({})", f.relation, values.join("\u{1f}"))
                })
                .collect();
            lines.sort();
            blake3::hash(lines.join("\n").as_bytes())
                .to_hex()
                .to_string()
        };
        let model = self
            .program
            .materialise(&facts, &Limits::default())
            .map_err(|e| e.to_string())?;
        let pid = Value::sym(p.proposal_id);
        let denials: Vec<Vec<Value>> = model
            .relation("deny")
            .unwrap_or_default()
            .into_iter()
            .filter(|row| row.first() == Some(&pid))
            .collect();
        if let Some(first) = denials.first() {
            let fact = Fact::new("deny", first.clone());
            let proof = model.prove(&fact).map_err(|e| e.to_string())?;
            let mut rules = Vec::new();
            let mut reasons = Vec::new();
            for row in &denials {
                if let Ok(pr) = model.prove(&Fact::new("deny", row.clone()))
                    && let Some(id) = rule_of(&pr)
                    && !rules.contains(&id)
                {
                    rules.push(id);
                }
                if let Some(Value::Symbol(r)) = row.get(1) {
                    reasons.push(r.to_string());
                }
            }
            return Ok(PackDecision {
                effect: "deny".into(),
                rules,
                reasons,
                proof: Some(proof),
                why_not: None,
                input_hash,
            });
        }
        let permit = Fact::new("permit", vec![pid]);
        if model.contains(&permit) {
            let proof = model.prove(&permit).map_err(|e| e.to_string())?;
            return Ok(PackDecision {
                effect: "allow".into(),
                rules: rule_of(&proof).into_iter().collect(),
                reasons: Vec::new(),
                proof: Some(proof),
                why_not: None,
                input_hash,
            });
        }
        let why_not = model.why_not(&permit).ok();
        Ok(PackDecision {
            effect: "deny".into(),
            rules: vec!["not-permitted".into()],
            reasons: vec![format!(
                "no rule of the pack derives `permit(\"{}\")`",
                p.proposal_id
            )],
            proof: None,
            why_not,
            input_hash,
        })
    }
}

fn rule_of(proof: &Proof) -> Option<String> {
    match &proof.step {
        tollgate_rules::engine::ProofStep::Rule { rule, .. } => Some(rule.to_string()),
        tollgate_rules::engine::ProofStep::Input { .. } => None,
    }
}

fn facts_of(p: &ProposalFacts<'_>) -> FactSet {
    let mut facts = FactSet::new();
    fn s(x: impl AsRef<str>) -> Value {
        Value::sym(x)
    }
    facts.add("case", vec![s(p.case_id), s(p.pack_id)], "case");
    for (k, v) in p.case_input {
        facts.add(
            "case_input",
            vec![s(p.case_id), s(k), s(symbol_of(v))],
            "case",
        );
    }
    for (worker, key, value, source) in &p.evidence {
        facts.add(
            "evidence",
            vec![s(p.case_id), s(worker), s(key), s(symbol_of(value))],
            "evidence",
        );
        facts.add(
            "evidence_source",
            vec![s(p.case_id), s(worker), s(key), s(source)],
            "evidence",
        );
        if let Some(n) = value.as_i64().and_then(|n| i32::try_from(n).ok()) {
            facts.add(
                "evidence_number",
                vec![s(p.case_id), s(worker), s(key), Value::Number(n)],
                "evidence",
            );
        }
    }
    facts.add(
        "proposal",
        vec![s(p.proposal_id), s(p.case_id), s(p.capability), s(p.action)],
        "proposal",
    );
    for (k, v) in p.input {
        facts.add(
            "proposal_input",
            vec![s(p.proposal_id), s(k), s(symbol_of(v))],
            "proposal",
        );
    }
    for (target, field, before, after) in &p.changes {
        facts.add(
            "preview_change",
            vec![s(p.proposal_id), s(target), s(field), s(before), s(after)],
            "preview",
        );
    }
    facts
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packs::{PackManifest, RuleFile};

    fn pack(rules: &str) -> Pack {
        Pack {
            root: std::path::PathBuf::from("/p"),
            manifest: PackManifest {
                pack_id: "p".into(),
                kind: "transactional".into(),
                engine_id: "p".into(),
                engine_version: "1.0.0".into(),
                title: String::new(),
                description: String::new(),
                demo: None,
            },
            workers: Vec::new(),
            actions: Vec::new(),
            capabilities: Vec::new(),
            rules: vec![RuleFile {
                path: "rules/p.dl".into(),
                text: rules.into(),
            }],
            hash: String::new(),
        }
    }

    const RULES: &str = r#"
// @id small-refund
permit(p) :- proposal(p, c, "refund", _), evidence_number(c, "w", "amount", n), n <= 100.
// @id flagged
deny(p, "the customer is flagged") :- proposal(p, c, _, _), evidence(c, "w", "flagged", "yes").
"#;

    fn decide(amount: i64, flagged: &str) -> PackDecision {
        let policy = PackPolicy::compile(&pack(RULES)).unwrap();
        let input = Map::new();
        let (a, f) = (serde_json::json!(amount), serde_json::json!(flagged));
        policy
            .decide(&ProposalFacts {
                case_id: "c",
                pack_id: "p",
                case_input: &input,
                evidence: vec![
                    ("w", "amount", &a, "adapter"),
                    ("w", "flagged", &f, "adapter"),
                ],
                proposal_id: "prop-1",
                capability: "refund",
                action: "pay",
                input: &input,
                changes: Vec::new(),
            })
            .unwrap()
    }

    #[test]
    fn a_permitted_proposal_is_allowed_with_the_proof_of_its_rule() {
        let d = decide(40, "no");
        assert_eq!(d.effect, "allow");
        assert_eq!(d.rules, ["small-refund"]);
        let proof = serde_json::to_value(d.proof.unwrap()).unwrap();
        assert_eq!(proof["rule"], "small-refund");
    }

    #[test]
    fn a_denial_overrides_a_permit_and_says_why() {
        let d = decide(40, "yes");
        assert_eq!(d.effect, "deny");
        assert_eq!(d.rules, ["flagged"]);
        assert_eq!(d.reasons, ["the customer is flagged"]);
    }

    #[test]
    fn a_proposal_nothing_permits_is_denied_with_why_not() {
        let d = decide(500, "no");
        assert_eq!(d.effect, "deny");
        assert_eq!(d.rules, ["not-permitted"]);
        assert!(d.why_not.is_some());
        // Same facts, same input hash: decisions are deterministic.
        assert_eq!(decide(500, "no").input_hash, d.input_hash);
        assert_ne!(decide(501, "no").input_hash, d.input_hash);
    }

    #[test]
    fn a_capability_is_permitted_only_by_the_rule_it_names() {
        let rules = format!("{RULES}\n// @id anything-goes\npermit(p) :- proposal(p, _, _, _).\n");
        let policy = PackPolicy::compile(&pack(&rules)).unwrap();
        let input = Map::new();
        let (a, f) = (serde_json::json!(500), serde_json::json!("no"));
        let facts = ProposalFacts {
            case_id: "c",
            pack_id: "p",
            case_input: &input,
            evidence: vec![
                ("w", "amount", &a, "adapter"),
                ("w", "flagged", &f, "adapter"),
            ],
            proposal_id: "prop-1",
            capability: "refund",
            action: "pay",
            input: &input,
            changes: Vec::new(),
        };
        assert_eq!(policy.decide(&facts).unwrap().effect, "allow");
        let d = policy.decide_for(&facts, "small-refund").unwrap();
        assert_eq!(d.effect, "deny", "{d:?}");
        assert!(d.reasons[0].contains("`small-refund`"), "{:?}", d.reasons);
        let d = policy.decide_for(&facts, "anything-goes").unwrap();
        assert_eq!(
            (d.effect.as_str(), d.rules.as_slice()),
            ("allow", ["anything-goes".to_string()].as_slice())
        );
    }

    #[test]
    fn a_rule_error_is_a_fault_of_its_file_and_line() {
        let faults = PackPolicy::compile(&pack("\n\npermit(p) :- nope(p).\n")).unwrap_err();
        assert_eq!(faults[0].file, "rules/p.dl");
        assert_eq!(faults[0].line, Some(3));
    }
}
