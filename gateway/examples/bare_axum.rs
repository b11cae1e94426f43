//! The baseline of the gateway load benchmark (`benches/gateway/run.sh`): a bare axum route
//! answering a fixed JSON body, on the same tokio and axum versions and runtime settings as
//! `tollgate serve`, so the gateway's overhead can be read as a ratio.
//!
//! `cargo run --release -p tollgate-gateway --example bare_axum -- PORT`

use axum::Router;
use axum::routing::post;

fn main() -> std::io::Result<()> {
    let port: u16 = std::env::args()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(8001);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let app = Router::new().route(
            "/v1/runs/{run}/tool-calls",
            post(|| async {
                axum::Json(serde_json::json!({
                    "effect": "allow", "execute": true, "rules": ["coding-agent/read-only"]
                }))
            }),
        );
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
        println!("listening on http://127.0.0.1:{port}");
        axum::serve(listener, app).await
    })
}
