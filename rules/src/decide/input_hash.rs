//! Input hashes: blake3 over the canonical JSON of `{"envelopes": set version, "request": the
//! request, "subject": the sorted subject facts}`.
//!
//! The document is written straight into one buffer, never built as a `serde_json::Value`:
//! the envelope-set prefix and each run's subject array are written once per engine, and a
//! tool request (the hot path) is written field by field in canonical key order. Other
//! requests go through `serde_json` and [`crate::canonical::canonical_json`]'s writer. Either
//! way the bytes are those of the canonical JSON of the whole document, so hashes recorded
//! before this module existed still match (`tests::fast_input_hashes_match_the_document`).

use std::collections::{BTreeMap, BTreeSet};

use crate::canonical::{write_canonical_into, write_json_string};
use crate::request::ToolCall;

use super::{PolicyRequest, RequestKind};

/// What every input hash of one engine shares, written once.
#[derive(Debug)]
pub(super) struct InputHasher {
    /// `{"envelopes":"SET_VERSION","request":`
    prefix: String,
    /// Per run: `,"subject":[…]}`, its `run` and `clearance` facts as sorted JSON strings.
    subject_suffix: BTreeMap<String, String>,
    /// Each run's subject facts as text, for requests that name several runs.
    subject: BTreeMap<String, Vec<String>>,
    /// Every `memory` fact as text, for retrievals.
    memories: Vec<String>,
}

impl InputHasher {
    pub(super) fn new(
        set_version: &str,
        subject: BTreeMap<String, Vec<String>>,
        memories: Vec<String>,
    ) -> InputHasher {
        let mut prefix = String::from("{\"envelopes\":");
        write_json_string(set_version, &mut prefix);
        prefix.push_str(",\"request\":");
        let subject_suffix = subject
            .iter()
            .map(|(run, facts)| {
                let mut sorted: Vec<&String> = facts.iter().collect();
                sorted.sort();
                (run.clone(), suffix(&sorted))
            })
            .collect();
        InputHasher {
            prefix,
            subject_suffix,
            subject,
            memories,
        }
    }

    /// The input hash of a request, as lowercase hex.
    pub(super) fn hash(&self, request: &PolicyRequest) -> String {
        let mut doc = String::with_capacity(self.prefix.len() + 256);
        doc.push_str(&self.prefix);
        match request {
            PolicyRequest::Tool { run, call, now } => write_tool_request(run, call, *now, &mut doc),
            other => write_canonical_into(
                &serde_json::to_value(other).unwrap_or(serde_json::Value::Null),
                &mut doc,
            ),
        }
        let several = matches!(request, PolicyRequest::Handoff { .. })
            || request.kind() == RequestKind::Memory;
        match self.subject_suffix.get(request.run()) {
            Some(s) if !several => doc.push_str(s),
            _ => doc.push_str(&self.general_suffix(request)),
        }
        blake3::hash(doc.as_bytes()).to_hex().to_string()
    }

    /// The subject array of a request that names several runs or reads the memories.
    fn general_suffix(&self, request: &PolicyRequest) -> String {
        let mut runs: BTreeSet<&str> = BTreeSet::from([request.run()]);
        if let PolicyRequest::Handoff { handoff } = request {
            runs.insert(&handoff.from_run);
        }
        let mut subject: Vec<&String> = runs
            .iter()
            .filter_map(|r| self.subject.get(*r))
            .flatten()
            .collect();
        if request.kind() == RequestKind::Memory {
            subject.extend(&self.memories);
        }
        subject.sort();
        suffix(&subject)
    }
}

/// `,"subject":["a","b"]}`
fn suffix(sorted: &[&String]) -> String {
    let mut out = String::from(",\"subject\":[");
    for (i, s) in sorted.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_json_string(s, &mut out);
    }
    out.push_str("]}");
    out
}

/// The canonical JSON of `PolicyRequest::Tool`: keys in byte order at every level (`call`,
/// `kind`, `now`, `run`; in the call `args`, `name`, `usage`), empty usage and absent `now`
/// left out as `serde` leaves them out.
fn write_tool_request(run: &str, call: &ToolCall, now: Option<i32>, out: &mut String) {
    out.push_str("{\"call\":{\"args\":");
    write_canonical_into(&call.args, out);
    out.push_str(",\"name\":");
    write_json_string(&call.name, out);
    if !call.usage.is_empty() {
        out.push_str(",\"usage\":{");
        // A `BTreeMap<String, _>` iterates in byte order, the canonical order.
        for (i, (rule, used)) in call.usage.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            write_json_string(rule, out);
            out.push(':');
            out.push_str(&used.to_string());
        }
        out.push('}');
    }
    out.push_str("},\"kind\":\"tool\"");
    if let Some(t) = now {
        out.push_str(",\"now\":");
        out.push_str(&t.to_string());
    }
    out.push_str(",\"run\":");
    write_json_string(run, out);
    out.push('}');
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::canonical::canonical_json;
    use crate::envelope::Level;
    use crate::request::{Constraint, ContextItem, Evidence, Handoff, HandoffContract, ModelCall};

    /// The input hash as it was defined before the direct writer: the whole document built as
    /// a `serde_json::Value`, then canonical JSON.
    fn hash_of_document(h: &InputHasher, set_version: &str, request: &PolicyRequest) -> String {
        let mut runs: BTreeSet<&str> = BTreeSet::from([request.run()]);
        if let PolicyRequest::Handoff { handoff } = request {
            runs.insert(&handoff.from_run);
        }
        let mut subject: Vec<&String> = runs
            .iter()
            .filter_map(|r| h.subject.get(*r))
            .flatten()
            .collect();
        if request.kind() == RequestKind::Memory {
            subject.extend(&h.memories);
        }
        subject.sort();
        let doc = serde_json::json!({
            "request": serde_json::to_value(request).unwrap_or(serde_json::Value::Null),
            "subject": subject,
            "envelopes": set_version,
        });
        blake3::hash(canonical_json(&doc).as_bytes())
            .to_hex()
            .to_string()
    }

    fn tool(run: &str, name: &str, args: serde_json::Value) -> PolicyRequest {
        PolicyRequest::Tool {
            run: run.into(),
            call: ToolCall {
                name: name.into(),
                args,
                usage: BTreeMap::new(),
            },
            now: None,
        }
    }

    #[test]
    fn fast_input_hashes_match_the_document() {
        let version = "set-\"v1\"\\\n";
        let subject = BTreeMap::from([
            (
                "run-42".to_string(),
                vec![
                    "run(\"run-42\", \"coder\", \"T-12\", \"org:acme\")".to_string(),
                    "clearance(\"run-42\", \"confidential\")".to_string(),
                ],
            ),
            (
                "run-\u{1}7".to_string(),
                vec!["clearance(\"run-\\u00017\", \"secret\")".to_string()],
            ),
        ]);
        let memories = vec!["memory(\"m-2\")".to_string(), "memory(\"m-1\")".to_string()];
        let h = InputHasher::new(version, subject, memories);
        let mut usage_call = tool(
            "run-42",
            "http.get",
            serde_json::json!({"z": 1, "a": {"y": [1, "two", null, true, 2.5], "b": "\t\"q\""}}),
        );
        if let PolicyRequest::Tool { call, now, .. } = &mut usage_call {
            call.usage = BTreeMap::from([("b/rule".into(), 3), ("a\"rule".into(), -1)]);
            *now = Some(1_700_000_000);
        }
        let requests = [
            tool("run-42", "fs.read_file", serde_json::json!({})),
            tool("run-42", "fs.read_file", serde_json::Value::Null),
            tool("run-\u{1}7", "sh\u{7f}ell\\x", serde_json::json!("scalar")),
            tool("nobody", "fs.read_file", serde_json::json!({"path": "é/ü"})),
            usage_call,
            PolicyRequest::Context {
                run: "run-42".into(),
                item: ContextItem {
                    id: "i".into(),
                    kind: "file".into(),
                    scope: "org:acme".into(),
                    sensitivity: Level::Internal,
                    labels: vec!["pii".into()],
                },
            },
            PolicyRequest::Model {
                run: "run-42".into(),
                call: ModelCall {
                    provider: "openai".into(),
                    model: "gpt".into(),
                    reasoning: String::new(),
                },
            },
            PolicyRequest::Memory {
                run: "run-42".into(),
                now: Some(5),
            },
            PolicyRequest::Handoff {
                handoff: Box::new(Handoff {
                    id: "h".into(),
                    from_run: "run-\u{1}7".into(),
                    to_run: "run-42".into(),
                    contract: HandoffContract {
                        id: "c".into(),
                        requires: vec!["patch".into()],
                        constraints: vec![Constraint {
                            name: "max_level".into(),
                            value: "internal".into(),
                        }],
                    },
                    goal: None,
                    evidence: vec![Evidence {
                        item: "d".into(),
                        scope: "org:acme".into(),
                        sensitivity: Level::Public,
                    }],
                    ..Handoff::default()
                }),
            },
        ];
        for r in &requests {
            assert_eq!(h.hash(r), hash_of_document(&h, version, r), "{r:?}");
        }
    }
}
