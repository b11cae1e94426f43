//! Links between operations (OpenAPI's `links`): where an answer carries the id of something,
//! and which operations take that id as a path parameter. A client follows them from opening
//! a run to reading it, from a created scenario to running it; Schemathesis's stateful phase
//! follows them to reach stored things rather than guessing ids (which only met 404s).
//!
//! Declared once per answer below; the targets are found in the document by path, so a route
//! added under a linked prefix is linked without a change here.

use serde_json::{Map, Value, json};

/// An answer that names something by id, and where that id is a path parameter.
struct Source {
    method: &'static str,
    path: &'static str,
    status: &'static str,
    /// JSON pointer to the id in the answer's body.
    pointer: &'static str,
    /// Path templates ending in the parameter the id fills: every operation whose path is one
    /// of them, or lies under one, is a target. Its other path parameters must be parameters of
    /// the source's path, passed on from the request.
    targets: &'static [&'static str],
}

const RUN: &[&str] = &[
    "/v1/runs/{run_id}",
    "/v2/handoffs/graphs/{run_id}",
    "/v2/memory/distill/run/{run_id}",
    "/v2/policies/decisions/{run_id}",
    "/v2/regressions/from-run/{run_id}",
];
const APPROVAL: &[&str] = &["/v1/approvals/{id}", "/v2/policies/approvals/{id}"];
const ENVELOPE: &[&str] = &["/v2/policies/envelopes/{id}"];
const CONTRACT: &[&str] = &["/v2/handoffs/contracts/{id}"];
const SCENARIO: &[&str] = &["/v2/replays/scenarios/{id}"];
const REPLAY: &[&str] = &[
    "/v2/replays/{id}",
    "/v2/regressions/from-replay/{replay_id}",
];
const REGRESSION: &[&str] = &["/v2/regressions/{id}"];
const SUITE: &[&str] = &["/v2/regressions/suites/{id}"];
const MEMORY: &[&str] = &["/v2/memory/{id}"];
const CASE: &[&str] = &["/cases/{case_id}"];
const TOKEN: &[&str] = &["/v1/tokens/{id}"];
const PROPOSAL: &[&str] = &["/cases/{case_id}/proposals/{proposal_id}"];

const fn source(
    method: &'static str,
    path: &'static str,
    status: &'static str,
    pointer: &'static str,
    targets: &'static [&'static str],
) -> Source {
    Source {
        method,
        path,
        status,
        pointer,
        targets,
    }
}

#[rustfmt::skip]
const SOURCES: &[Source] = &[
    source("post", "/v1/runs",                                       "201", "/run/id",                RUN),
    source("get",  "/v1/runs",                                       "200", "/runs/0/id",             RUN),
    source("get",  "/v1/runs/{run_id}",                              "200", "/run/id",                RUN),
    source("post", "/v1/runs/{run_id}/tool-calls",                   "200", "/approval/id",           APPROVAL),
    source("get",  "/v1/approvals",                                  "200", "/approvals/0/id",        APPROVAL),
    source("get",  "/v1/approvals",                                  "200", "/approvals/0/run",       RUN),
    source("post", "/v2/policies/envelopes",                         "201", "/stored/0/version/id",   ENVELOPE),
    source("get",  "/v2/policies/envelopes",                         "200", "/versions/0/id",         ENVELOPE),
    source("post", "/v2/handoffs/contracts",                         "201", "/contract/id",           CONTRACT),
    source("get",  "/v2/handoffs/contracts",                         "200", "/contracts/0/id",        CONTRACT),
    source("post", "/v2/replays/scenarios",                          "201", "/scenario/id",           SCENARIO),
    source("post", "/v2/replays/scenarios/{id}/execute",             "201", "/id",                    REPLAY),
    source("get",  "/v2/replays",                                    "200", "/results/0/id",          REPLAY),
    source("get",  "/v2/replays",                                    "200", "/results/0/run",         RUN),
    source("post", "/v2/regressions/from-run/{run_id}",              "201", "/case/id",               REGRESSION),
    source("post", "/v2/regressions/from-replay/{replay_id}",        "201", "/case/id",               REGRESSION),
    source("get",  "/v2/regressions",                                "200", "/cases/0/id",            REGRESSION),
    source("get",  "/v2/regressions",                                "200", "/cases/0/run",           RUN),
    source("post", "/v2/regressions/suites/execute",                 "202", "/suite/id",              SUITE),
    source("get",  "/v2/memory/search",                              "200", "/hits/0/id",             MEMORY),
    source("post", "/cases",                                         "201", "/case_id",               CASE),
    source("get",  "/cases",                                         "200", "/cases/0/case_id",       CASE),
    source("post", "/packs/{engine_id}/{engine_version}/demo-case",  "201", "/case_id",               CASE),
    source("post", "/cases/{case_id}/proposals",                     "201", "/proposal_id",           PROPOSAL),
    source("post", "/v1/tokens",                                     "201", "/record/id",             TOKEN),
    source("get",  "/v1/tokens",                                     "200", "/tokens/0/id",           TOKEN),
];

/// The path parameters of a template, in order.
fn parameters(path: &str) -> impl Iterator<Item = &str> {
    path.split('/')
        .filter_map(|s| s.strip_prefix('{').and_then(|s| s.strip_suffix('}')))
}

/// Whether `path` is `template` or lies under it.
fn under(path: &str, template: &str) -> bool {
    path.strip_prefix(template)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

/// The link from `source` to the operation at `path`, if `path` is one of its targets and
/// each of its parameters can be filled.
fn link(source: &Source, path: &str, operation_id: &str) -> Option<(String, Value)> {
    let template = source.targets.iter().find(|t| under(path, t))?;
    let id = parameters(template).last()?;
    let mut filled = Map::new();
    for p in parameters(path) {
        let value = if p == id {
            format!("$response.body#{}", source.pointer)
        } else if parameters(source.path).any(|q| q == p) {
            format!("$request.path.{p}")
        } else {
            return None;
        };
        filled.insert(p.to_string(), Value::String(value));
    }
    let description = format!(
        "`{p}` from the answer's `{ptr}`",
        p = id,
        ptr = source.pointer
    );
    Some((
        operation_id.to_string(),
        json!({ "operationId": operation_id, "parameters": filled, "description": description }),
    ))
}

/// Adds the links of every source to the document (in its JSON form).
pub(super) fn add(doc: &mut Value) {
    let mut found: Vec<(usize, String, Value)> = Vec::new();
    if let Some(paths) = doc.get("paths").and_then(Value::as_object) {
        for (n, source) in SOURCES.iter().enumerate() {
            for (path, item) in paths {
                for operation in item.as_object().into_iter().flat_map(Map::values) {
                    let Some(operation_id) = operation.get("operationId").and_then(Value::as_str)
                    else {
                        continue;
                    };
                    if let Some((name, link)) = link(source, path, operation_id) {
                        found.push((n, name, link));
                    }
                }
            }
        }
    }
    for (n, name, link) in found {
        let source = &SOURCES[n];
        let response = doc
            .pointer_mut(&format!(
                "/paths/{}/{}/responses/{}",
                source.path.replace('~', "~0").replace('/', "~1"),
                source.method,
                source.status
            ))
            .and_then(Value::as_object_mut);
        // A source missing from the document is caught by `every_source_is_in_the_document`.
        if let Some(response) = response {
            let links = response
                .entry("links")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Some(links) = links.as_object_mut() {
                // Two sources of one answer may reach one operation (an approval's id and its
                // run's are not both path parameters of one route): the first declared wins.
                links.entry(name).or_insert(link);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_source_is_in_the_document_and_links_somewhere() {
        let doc = crate::http::openapi();
        for source in SOURCES {
            let at = format!(
                "/paths/{}/{}/responses/{}",
                source.path.replace('/', "~1"),
                source.method,
                source.status
            );
            let response = doc.pointer(&at);
            assert!(response.is_some(), "no response at {at}");
            let links = response
                .and_then(|r| r.get("links"))
                .and_then(Value::as_object);
            assert!(
                links.is_some_and(|l| !l.is_empty()),
                "{} {} links nowhere",
                source.method,
                source.path
            );
            for template in source.targets {
                assert!(
                    doc["paths"]
                        .as_object()
                        .unwrap()
                        .keys()
                        .any(|p| under(p, template)),
                    "no operation under {template}"
                );
            }
        }
    }

    #[test]
    fn a_target_with_a_parameter_the_source_cannot_fill_is_not_linked() {
        let from_list = source("get", "/cases", "200", "/cases/0/case_id", PROPOSAL);
        assert!(
            link(
                &from_list,
                "/cases/{case_id}/proposals/{proposal_id}/commit",
                "commit"
            )
            .is_none()
        );
        let from_case = source(
            "post",
            "/cases/{case_id}/proposals",
            "201",
            "/proposal_id",
            PROPOSAL,
        );
        let (_, l) = link(
            &from_case,
            "/cases/{case_id}/proposals/{proposal_id}/commit",
            "commit",
        )
        .unwrap();
        assert_eq!(l["parameters"]["case_id"], "$request.path.case_id");
        assert_eq!(
            l["parameters"]["proposal_id"],
            "$response.body#/proposal_id"
        );
        assert!(link(&from_case, "/cases/{case_id}", "get_case").is_none());
        // `/v2/replays/{id}` does not take in `/v2/replays/scenarios/{id}` by prefix alone.
        let replay = source("get", "/v2/replays", "200", "/results/0/id", REPLAY);
        assert!(link(&replay, "/v2/replays/scenarios/{id}", "get_scenario").is_none());
        assert!(link(&replay, "/v2/replays/{id}/export", "export").is_some());
    }
}
