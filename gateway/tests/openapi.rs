//! The OpenAPI document is generated from the handlers; this snapshot makes every change to
//! the HTTP contract visible in review. Regenerate with `UPDATE_SNAPSHOTS=1 cargo test -p
//! tollgate-gateway --test openapi`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;

const SNAPSHOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/snapshots/openapi.json");

#[test]
fn the_openapi_document_matches_its_snapshot() {
    let doc = serde_json::to_string_pretty(&tollgate_gateway::http::openapi()).unwrap() + "\n";
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(SNAPSHOT, &doc).unwrap();
    }
    let expected = std::fs::read_to_string(SNAPSHOT).unwrap_or_default();
    assert!(
        doc == expected,
        "the OpenAPI document changed; review it and run with UPDATE_SNAPSHOTS=1\n{doc}"
    );
}

#[test]
fn every_route_is_documented_with_its_method() {
    let doc = serde_json::to_value(tollgate_gateway::http::openapi()).unwrap();
    assert_eq!(doc["openapi"], "3.1.0");
    let mut routes = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for method in item.as_object().unwrap().keys() {
            routes.insert(format!("{} {path}", method.to_uppercase()));
        }
    }
    let expected: BTreeSet<String> = [
        "GET /health",
        "POST /v1/runs",
        "GET /v1/runs",
        "GET /v1/runs/{run_id}",
        "POST /v1/runs/{run_id}/steps",
        "POST /v1/runs/{run_id}/events",
        "POST /v1/runs/{run_id}/compile",
        "POST /v1/runs/{run_id}/finish",
        "POST /v1/runs/{run_id}/repin",
        "POST /v1/runs/{run_id}/tool-calls",
        "GET /v1/approvals",
        "GET /v1/approvals/{id}",
        "POST /v1/chat/completions",
        "POST /v2/policies/envelopes",
        "GET /v2/policies/envelopes",
        "GET /v2/policies/envelopes/{id}",
        "GET /v2/policies/envelopes/{id}/diff",
        "POST /v2/policies/envelopes/{id}/simulate",
        "POST /v2/policies/envelopes/{id}/repin",
        "GET /v2/policies/decisions/{run_id}",
        "POST /v2/policies/approvals/{id}",
        "POST /v2/memory/distill/run/{run_id}",
        "GET /v2/memory/search",
        "GET /v2/memory/{id}",
        "GET /v2/memory/{id}/usage",
        "POST /v2/memory/{id}/promote",
        "POST /v2/memory/{id}/expire",
        "POST /v2/memory/{id}/feedback",
        "POST /v2/replays/scenarios",
        "GET /v2/replays/scenarios/{id}",
        "POST /v2/replays/scenarios/{id}/execute",
        "POST /v2/replays/batches",
        "GET /v2/replays",
        "GET /v2/replays/{id}",
        "GET /v2/replays/{id}/export",
        "POST /v2/regressions/from-run/{run_id}",
        "POST /v2/regressions/from-replay/{replay_id}",
        "GET /v2/regressions",
        "GET /v2/regressions/{id}",
        "POST /v2/regressions/{id}/execute",
        "POST /v2/regressions/{id}/versions",
        "GET /v2/regressions/{id}/history",
        "GET /v2/regressions/{id}/bundle",
        "POST /v2/regressions/suites/execute",
        "GET /v2/regressions/suites/{id}",
        "GET /v2/handoffs/schema",
        "GET /cases",
        "POST /cases",
        "GET /cases/{case_id}",
        "GET /cases/{case_id}/inspection",
        "GET /cases/{case_id}/timeline",
        "GET /cases/{case_id}/graph",
        "POST /cases/{case_id}/evidence",
        "GET /cases/{case_id}/runtime",
        "POST /cases/{case_id}/runtime/collect",
        "GET /cases/{case_id}/proposals",
        "POST /cases/{case_id}/proposals",
        "POST /cases/{case_id}/proposals/{proposal_id}/preview",
        "POST /cases/{case_id}/proposals/{proposal_id}/policy",
        "POST /cases/{case_id}/proposals/{proposal_id}/approval",
        "POST /cases/{case_id}/proposals/{proposal_id}/commit",
        "POST /cases/{case_id}/model-runs",
        "GET /cases/{case_id}/replay",
        "POST /cases/{case_id}/replay",
        "GET /packs",
        "POST /packs/{engine_id}/{engine_version}/demo-case",
        "GET /v2/handoffs/templates/{name}",
        "POST /v2/handoffs/contracts",
        "GET /v2/handoffs/contracts",
        "GET /v2/handoffs/contracts/{id}",
        "POST /v2/handoffs/contracts/{id}/ack",
        "POST /v2/handoffs/contracts/{id}/check",
        "GET /v2/handoffs/contracts/{id}/a2a",
        "POST /v2/handoffs/a2a",
        "GET /v2/handoffs/graphs/{run_id}",
        "GET /v1/mcp/pins",
        "POST /v1/mcp/pins/{tool}/accept",
        "POST /v1/tokens",
        "GET /v1/tokens",
        "POST /v1/tokens/{id}/revoke",
        "GET /v1/audit",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    assert_eq!(routes, expected);
    // Every route but /health needs the bearer token.
    assert_eq!(doc["security"], serde_json::json!([{ "bearer": [] }]));
    assert_eq!(
        doc["paths"]["/health"]["get"]["security"],
        serde_json::json!([{}])
    );
}

/// Every status a route can answer is in the document (Schemathesis found 401, 400, 415
/// and query-string 400s undocumented).
#[test]
fn every_operation_documents_the_errors_it_can_give() {
    let doc = serde_json::to_value(tollgate_gateway::http::openapi()).unwrap_or_default();
    let paths = doc["paths"].as_object().cloned().unwrap_or_default();
    assert!(!paths.is_empty());
    for (path, item) in paths {
        for (method, op) in item.as_object().cloned().unwrap_or_default() {
            let has = |status: &str| op["responses"].get(status).is_some();
            assert!(has("500") && has("403"), "{method} {path}");
            assert_eq!(has("401"), path != "/health", "{method} {path}");
            if op.get("requestBody").is_some() {
                for status in ["400", "413", "415", "422"] {
                    assert!(has(status), "{method} {path} lacks {status}");
                }
            }
            if path.contains('{') {
                assert!(has("404") && has("422"), "{method} {path}");
            }
        }
    }
}

/// An unsigned integer is documented with its real maximum, not as a signed `int32`/`int64`
/// (Schemathesis sent 2^31 to a `u32` the document said could not take it, and it was taken).
#[test]
fn unsigned_integers_carry_their_maximum() {
    fn walk(v: &serde_json::Value, at: &str, bad: &mut Vec<String>) {
        match v {
            serde_json::Value::Object(map) => {
                let integer = map.get("type").is_some_and(|t| {
                    t == "integer"
                        || t.as_array()
                            .is_some_and(|a| a.iter().any(|t| t == "integer"))
                });
                let unsigned = map
                    .get("minimum")
                    .and_then(serde_json::Value::as_f64)
                    .is_some_and(|m| m >= 0.0);
                if integer && unsigned && !map.contains_key("maximum") {
                    bad.push(at.to_string());
                }
                for (k, child) in map {
                    walk(child, &format!("{at}/{k}"), bad);
                }
            }
            serde_json::Value::Array(items) => {
                for (i, child) in items.iter().enumerate() {
                    walk(child, &format!("{at}/{i}"), bad);
                }
            }
            _ => {}
        }
    }
    let doc = tollgate_gateway::http::openapi();
    let mut bad = Vec::new();
    walk(&doc, "", &mut bad);
    assert!(bad.is_empty(), "unsigned without a maximum: {bad:#?}");
}

#[test]
fn operation_ids_are_unique() {
    // OpenAPI requires it; a generated client names its methods by them. Four handlers were
    // `list`, two `create`, two `execute`, two `get_case`.
    let doc = tollgate_gateway::http::openapi();
    let mut seen = BTreeSet::new();
    for item in doc["paths"].as_object().unwrap().values() {
        for operation in item.as_object().unwrap().values() {
            let id = operation["operationId"].as_str().unwrap();
            assert!(
                seen.insert(id.to_string()),
                "operationId `{id}` is used twice"
            );
        }
    }
}

#[test]
fn every_link_fills_each_path_parameter_of_an_operation_that_exists() {
    let doc = tollgate_gateway::http::openapi();
    let mut operations = std::collections::BTreeMap::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for operation in item.as_object().unwrap().values() {
            operations.insert(operation["operationId"].as_str().unwrap(), path.clone());
        }
    }
    let mut count = 0;
    for (path, item) in doc["paths"].as_object().unwrap() {
        let own: BTreeSet<&str> = path
            .split('/')
            .filter_map(|s| s.strip_prefix('{')?.strip_suffix('}'))
            .collect();
        for operation in item.as_object().unwrap().values() {
            for response in operation["responses"].as_object().unwrap().values() {
                let Some(links) = response.get("links").and_then(|l| l.as_object()) else {
                    continue;
                };
                for (name, link) in links {
                    count += 1;
                    let target = link["operationId"].as_str().unwrap();
                    let target_path = operations
                        .get(target)
                        .unwrap_or_else(|| panic!("{path}: link `{name}` to no operation"));
                    let wanted: BTreeSet<&str> = target_path
                        .split('/')
                        .filter_map(|s| s.strip_prefix('{')?.strip_suffix('}'))
                        .collect();
                    let parameters = link["parameters"].as_object().unwrap();
                    let given: BTreeSet<&str> = parameters.keys().map(String::as_str).collect();
                    assert_eq!(given, wanted, "{path}: link `{name}` to {target_path}");
                    for expression in parameters.values() {
                        let e = expression.as_str().unwrap();
                        let ok = e.starts_with("$response.body#/")
                            || e.strip_prefix("$request.path.")
                                .is_some_and(|p| own.contains(p));
                        assert!(ok, "{path}: link `{name}`: `{e}`");
                    }
                }
            }
        }
    }
    assert!(count >= 40, "only {count} links");
}
