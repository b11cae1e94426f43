//! The links of `/openapi.json` lead somewhere: for each answer that declares links, the id
//! each one names is in the answer where the link says, and every linked read (`GET`) of it
//! answers 200. Walked through a session a client would have: a run, a held call, an envelope,
//! a contract, a scenario and its replay, regression cases, a suite and a token.

use serde_json::{Value, json};

use super::support::Gateway;

/// The document's operations: (method, path) by operationId.
fn operations(doc: &Value) -> std::collections::BTreeMap<String, (String, String)> {
    let mut all = std::collections::BTreeMap::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            let id = operation["operationId"].as_str().unwrap().to_string();
            all.insert(id, (method.clone(), path.clone()));
        }
    }
    all
}

struct Walk<'a> {
    gw: &'a Gateway,
    doc: Value,
    /// Links followed by a read that answered 200.
    read: usize,
}

impl Walk<'_> {
    /// Sends `method path` (the template filled with `params`) with `body`, expects `status`,
    /// then checks every link the document declares for that answer; returns the answer.
    fn call(
        &mut self,
        method: &str,
        template: &str,
        params: &[(&str, &str)],
        body: Option<Value>,
        status: u16,
    ) -> Value {
        let mut path = template.to_string();
        for (name, value) in params {
            path = path.replace(&format!("{{{name}}}"), value);
        }
        let (got, answer) = match &body {
            Some(Value::String(yaml)) => {
                let auth = format!("Bearer {}", self.gw.token);
                let (s, text) = self.gw.raw(
                    method,
                    &path,
                    Some(yaml.clone()),
                    &[
                        ("Authorization", &auth),
                        ("Content-Type", "application/yaml"),
                    ],
                );
                (s, serde_json::from_str(&text).unwrap())
            }
            other => self.gw.call(method, &path, other.as_ref()),
        };
        assert_eq!(got, status, "{method} {path}: {answer}");
        let at = format!(
            "/paths/{}/{}/responses/{status}/links",
            template.replace('/', "~1"),
            method.to_lowercase()
        );
        let links = self.doc.pointer(&at).cloned().unwrap_or_default();
        let links = links.as_object().cloned().unwrap_or_default();
        assert!(
            !links.is_empty(),
            "{method} {template} {status} declares no links"
        );
        let operations = operations(&self.doc);
        for (name, link) in links {
            let (target_method, target) = &operations[link["operationId"].as_str().unwrap()];
            let mut filled = target.clone();
            for (param, expression) in link["parameters"].as_object().unwrap() {
                let expression = expression.as_str().unwrap();
                let value = if let Some(pointer) = expression.strip_prefix("$response.body#") {
                    answer
                        .pointer(pointer)
                        .and_then(Value::as_str)
                        .unwrap_or_else(|| {
                            panic!("{method} {template}: link `{name}`: no `{pointer}` in {answer}")
                        })
                        .to_string()
                } else {
                    let p = expression.strip_prefix("$request.path.").unwrap();
                    params.iter().find(|(n, _)| *n == p).unwrap().1.to_string()
                };
                filled = filled.replace(&format!("{{{param}}}"), &value);
            }
            // A read that needs query parameters too (an envelope's diff: `from`, `to`) is
            // left to Schemathesis, which generates them.
            let needs_query = self.doc["paths"][target][target_method]["parameters"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|p| p["in"] == "query" && p["required"] == true);
            if target_method == "get" && !needs_query {
                let (s, read) = self.gw.call("GET", &filled, None);
                assert_eq!(
                    s, 200,
                    "{method} {template}: link `{name}` to {filled}: {read}"
                );
                self.read += 1;
            }
        }
        answer
    }
}

#[test]
fn every_declared_link_names_an_id_in_the_answer_and_its_reads_find_it() {
    let gw = Gateway::with_fixture_envelopes();
    let (status, doc) = gw.call("GET", "/openapi.json", None);
    assert_eq!(status, 200);
    let mut walk = Walk {
        gw: &gw,
        doc,
        read: 0,
    };

    let run = json!({"id": "lnk-1", "agent": "coder", "task": "T-12",
                     "scope": "org:acme/repo:api/task:T-12", "clearance": "confidential"});
    walk.call("POST", "/v1/runs", &[], Some(run), 201);
    walk.call(
        "GET",
        "/v1/runs/{run_id}",
        &[("run_id", "lnk-1")],
        None,
        200,
    );
    walk.call("GET", "/v1/runs", &[], None, 200);
    let held = json!({"tool": "shell.exec", "arguments": {"command": "ls"}});
    let path = "/v1/runs/{run_id}/tool-calls";
    walk.call("POST", path, &[("run_id", "lnk-1")], Some(held), 200);
    walk.call("GET", "/v1/approvals", &[], None, 200);

    let envelope = "id: lnk-env\nversion: 1\ntools:\n  - id: read\n    effect: allow\n    tools: [fs.read_file]\n";
    walk.call(
        "POST",
        "/v2/policies/envelopes",
        &[],
        Some(json!(envelope)),
        201,
    );
    walk.call("GET", "/v2/policies/envelopes", &[], None, 200);

    let contract = json!({"schema": "tollgate.handoff/v1", "id": "lnk-h", "producer": {"run": "lnk-1"},
                          "consumer": {"agent": "helper"}, "goal": "Check the fix"});
    walk.call("POST", "/v2/handoffs/contracts", &[], Some(contract), 201);
    walk.call("GET", "/v2/handoffs/contracts", &[], None, 200);

    let scenario = json!({"run": "lnk-1",
                          "mutations": [{"kind": "disable_rule", "rule": "coding-agent/shell"}]});
    let made = walk.call("POST", "/v2/replays/scenarios", &[], Some(scenario), 201);
    let scn = made["scenario"]["id"].as_str().unwrap().to_string();
    let path = "/v2/replays/scenarios/{id}/execute";
    let replay = walk.call("POST", path, &[("id", &scn)], None, 201);
    let rpl = replay["id"].as_str().unwrap().to_string();
    walk.call("GET", "/v2/replays", &[], None, 200);

    let path = "/v2/regressions/from-run/{run_id}";
    walk.call("POST", path, &[("run_id", "lnk-1")], Some(json!({})), 201);
    let path = "/v2/regressions/from-replay/{replay_id}";
    walk.call("POST", path, &[("replay_id", &rpl)], None, 201);
    walk.call("GET", "/v2/regressions", &[], None, 200);
    let path = "/v2/regressions/suites/execute";
    walk.call("POST", path, &[], Some(json!({})), 202);

    let token = json!({"kind": "approver", "name": "lnk-jane"});
    walk.call("POST", "/v1/tokens", &[], Some(token), 201);
    walk.call("GET", "/v1/tokens", &[], None, 200);

    // Links not walked here: memory search (hits need a distilled run; `tests/memory.rs`
    // has one) and the cases (they need a pack).
    assert!(walk.read >= 35, "only {} linked reads", walk.read);
}
