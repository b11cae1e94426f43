//! The proof tree: what a derived fact's explanation is, as data. Built by the explain
//! stage (`explain.rs`), cached per model for facts a query does not reach (`model.rs`),
//! re-checked by `proof_check.rs` and serialized into every decision's receipt.

use std::collections::BTreeMap;
use std::fmt::{self, Write as _};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::Fact;
use crate::value::Value;

/// A proof tree.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Proof {
    /// The fact proved.
    pub fact: Fact,
    /// How.
    #[serde(flatten)]
    pub step: ProofStep,
}

/// One step of a proof.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "by", rename_all = "snake_case")]
pub enum ProofStep {
    /// An input fact.
    Input {
        /// Where it came from (`request`, `envelope:repo-default@3`, `edge.facts:3`,
        /// `program:12`).
        origin: Arc<str>,
    },
    /// An instance of a rule.
    Rule {
        /// The rule's stable id.
        rule: Arc<str>,
        /// Which head of the clause.
        head: usize,
        /// Which alternative of its body.
        disjunct: usize,
        /// Line of the clause.
        line: usize,
        /// Every variable of the rule outside aggregates (compiler temporaries start with `$`).
        bindings: BTreeMap<Arc<str>, Value>,
        /// Proofs of the positive body atoms, in body order. Shared: proofs of facts that do
        /// not depend on a query's request are built once per model and reused.
        premises: Vec<Arc<Proof>>,
        /// Instances of the negated atoms, which were absent (`None` for `_`).
        absent: Vec<Absent>,
    },
}

/// A negated atom's instance: the relation had no tuple matching it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Absent {
    /// Relation.
    pub relation: Arc<str>,
    /// Values; `None` where the atom had `_`.
    pub values: Vec<Option<Value>>,
}

impl fmt::Display for Absent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let args: Vec<String> = self
            .values
            .iter()
            .map(|v| v.as_ref().map_or("_".to_string(), Value::to_literal))
            .collect();
        write!(f, "{}({})", self.relation, args.join(", "))
    }
}

impl Proof {
    /// Indented text, one fact per line.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        self.write_text(&mut out, 0);
        out
    }

    fn write_text(&self, out: &mut String, depth: usize) {
        let pad = "  ".repeat(depth);
        match &self.step {
            ProofStep::Input { origin } => {
                let _ = writeln!(out, "{pad}{}  [input: {origin}]", self.fact);
            }
            ProofStep::Rule {
                rule,
                line,
                bindings,
                premises,
                absent,
                ..
            } => {
                let shown: Vec<String> = bindings
                    .iter()
                    .filter(|(k, _)| !k.starts_with('$'))
                    .map(|(k, v)| format!("{k} = {}", v.to_literal()))
                    .collect();
                let with = if shown.is_empty() {
                    String::new()
                } else {
                    format!(" with {}", shown.join(", "))
                };
                let _ = writeln!(out, "{pad}{}  [rule {rule}, line {line}{with}]", self.fact);
                for p in premises {
                    p.write_text(out, depth + 1);
                }
                for a in absent {
                    let _ = writeln!(out, "{pad}  !{a}  [absent]");
                }
            }
        }
    }

    /// Depth of the tree (an input is 1).
    pub fn depth(&self) -> usize {
        match &self.step {
            ProofStep::Input { .. } => 1,
            ProofStep::Rule { premises, .. } => {
                1 + premises.iter().map(|p| p.depth()).max().unwrap_or(0)
            }
        }
    }
}
