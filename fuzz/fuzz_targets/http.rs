//! HTTP bodies: requests to the gateway's whole router (token, Host and Origin checks, body
//! limit, every route), in process, over a store holding the fixture envelopes and runs. An
//! input is a small HTTP request: `METHOD PATH` on the first line, header lines, a blank line,
//! then the body. No request makes the gateway answer 500 (an internal error is a bug: bad
//! input gets a 4xx in the error shape), and every 4xx from the API is in that shape.
#![no_main]

use std::sync::{Arc, OnceLock};

use axum::Router;
use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use libfuzzer_sys::fuzz_target;
use tollgate_gateway::http::{AppState, ServeConfig, router};
use tollgate_gateway::policy::store_envelopes;
use tollgate_gateway::providers::FakeProvider;
use tollgate_gateway::recorder::Recorder;
use tollgate_gateway::recorder::format::RunFile;
use tollgate_gateway::runtime::Runtime;
use tollgate_gateway::store::{Store, StoreLocation};
use tower::ServiceExt as _;

const TOKEN: &str = "fuzz-token";

const ENVELOPES: &[(&str, &str)] = &[
    (
        "coding-agent.yaml",
        include_str!("../../fixtures/envelopes/coding-agent.yaml"),
    ),
    (
        "org-baseline.yaml",
        include_str!("../../fixtures/envelopes/org-baseline.yaml"),
    ),
];

const RUNS: &[&str] = &[
    include_str!("../../fixtures/runs/01-bugfix-users-404.json"),
    include_str!("../../fixtures/runs/03-flaky-webhook-retry.json"),
    include_str!("../../fixtures/runs/05-planner-executor-rate-limit.json"),
];

struct Gateway {
    tokio: tokio::runtime::Runtime,
    router: Router,
}

fn gateway() -> &'static Gateway {
    static GATEWAY: OnceLock<Gateway> = OnceLock::new();
    GATEWAY.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("tollgate-fuzz-http-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        let store = Store::open(&StoreLocation::file(dir.join("tollgate.db")))
            .unwrap_or_else(|e| panic!("cannot open the store: {e}"));
        let sources: Vec<(String, String)> = ENVELOPES
            .iter()
            .map(|(n, t)| (n.to_string(), t.to_string()))
            .collect();
        if let Err(e) = store_envelopes(&store, &sources) {
            panic!("the fixture envelopes do not store: {e}");
        }
        let recorder = Recorder::new(store.clone());
        for text in RUNS {
            let file: RunFile =
                serde_json::from_str(text).unwrap_or_else(|e| panic!("a fixture run: {e}"));
            recorder
                .import(&file)
                .unwrap_or_else(|e| panic!("a fixture run does not import: {e}"));
        }
        let runtime = Runtime::new(store, Arc::new(FakeProvider::new()))
            .unwrap_or_else(|e| panic!("cannot start the runtime: {e}"));
        let state = AppState::new(Arc::new(runtime), TOKEN, ServeConfig::default());
        let tokio = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap_or_else(|e| panic!("cannot start tokio: {e}"));
        Gateway {
            tokio,
            router: router(state),
        }
    })
}

/// The request an input stands for, or `None` when it is not one.
fn request(input: &str) -> Option<Request<Body>> {
    let (head, body) = input.split_once("\n\n").unwrap_or((input, ""));
    let mut lines = head.lines();
    let (method, path) = lines.next()?.split_once(' ')?;
    // A long poll would wait out its seconds: not what this target is for.
    if !path.starts_with('/') || path.contains("wait") {
        return None;
    }
    let mut builder = Request::builder()
        .method(Method::from_bytes(method.as_bytes()).ok()?)
        .uri(path)
        .header("host", "127.0.0.1:8000")
        .header("authorization", format!("Bearer {TOKEN}"))
        .header("content-type", "application/json");
    for line in lines {
        let (name, value) = line.split_once(':')?;
        builder = builder.header(name.trim(), value.trim());
    }
    builder.body(Body::from(body.to_string())).ok()
}

fuzz_target!(|data: &[u8]| {
    let Ok(input) = std::str::from_utf8(data) else {
        return;
    };
    let Some(request) = request(input) else {
        return;
    };
    let api = request.uri().path().starts_with("/v");
    let gateway = gateway();
    let (status, body) = gateway.tokio.block_on(async {
        let response = gateway
            .router
            .clone()
            .oneshot(request)
            .await
            .unwrap_or_else(|e| match e {});
        let status = response.status();
        let body = axum::body::to_bytes(response.into_body(), 64 << 20)
            .await
            .unwrap_or_default();
        (status, body)
    });
    assert!(
        status != StatusCode::INTERNAL_SERVER_ERROR,
        "500 for {input:?}: {}",
        String::from_utf8_lossy(&body)
    );
    if api && status.is_client_error() {
        let value: serde_json::Value = serde_json::from_slice(&body).unwrap_or_else(|e| {
            panic!(
                "a {status} not in JSON ({e}) for {input:?}: {}",
                String::from_utf8_lossy(&body)
            )
        });
        assert!(
            value["error"]["code"].is_string() && value["error"]["message"].is_string(),
            "a {status} outside the error shape for {input:?}: {value}"
        );
    }
});
