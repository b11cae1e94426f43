//! The sidecar's front door, checked in this order for every request: the Host and Origin
//! headers (a page on another site, or a DNS-rebound name, is refused with 403), the body size
//! (413 from `Content-Length` before the body is read; streamed bodies are cut by the
//! extractor's limit), then the bearer token (401) — every route except `GET /health` and the
//! dashboard under `/ui`, which has its own session (`dashboard::sessions`).

use crate::codes::http as codes;
use std::path::Path;

use axum::extract::{Request, State};
use axum::http::{Method, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::error::BodyLimit;
use super::{ApiError, AppState};
use crate::auth::write_private;

/// Host and Origin must name this loopback listener (at its port), or a host name the gateway
/// was told it is reached by (`serve --allow-host`, at any port: a load balancer's).
pub async fn check_origin(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let port = state.config.port;
    let allowed_host = |host: &str| {
        let (name, host_port) = match host.rsplit_once(':') {
            Some((n, p)) if !n.ends_with(']') || host.starts_with('[') => (n, Some(p)),
            _ => (host, None),
        };
        let loopback = matches!(name, "127.0.0.1" | "localhost" | "[::1]")
            && host_port.is_none_or(|p| p == port.to_string());
        loopback
            || state
                .config
                .extra_hosts
                .iter()
                .any(|h| h.eq_ignore_ascii_case(name))
    };
    if let Some(host) = req.headers().get(header::HOST) {
        let host = host.to_str().unwrap_or("");
        if !allowed_host(host) {
            let error = ApiError::Coded {
                code: codes::FOREIGN_HOST,
                message: format!(
                    "host `{host}` is not this gateway: it answers on 127.0.0.1:{port} and localhost:{port}, and on the names `serve --allow-host` gives it"
                ),
                details: serde_json::Value::Null,
            };
            return refuse(req, error).await;
        }
    }
    if let Some(origin) = req.headers().get(header::ORIGIN) {
        let origin = origin.to_str().unwrap_or("");
        let host = origin
            .strip_prefix("http://")
            .or_else(|| origin.strip_prefix("https://"));
        if !host.is_some_and(allowed_host) {
            let error = ApiError::Coded {
                code: codes::FOREIGN_ORIGIN,
                message: format!("requests from origin `{origin}` are refused"),
                details: serde_json::Value::Null,
            };
            return refuse(req, error).await;
        }
    }
    next.run(req).await
}

/// Refuses a declared body larger than the limit before reading it, and tells the extractors
/// the limit ([`BodyLimit`]) for a body that turns out larger than it declared (or is chunked).
pub async fn check_body_size(
    State(state): State<AppState>,
    mut req: Request,
    next: Next,
) -> Response {
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    if declared.is_some_and(|n| n > state.config.body_limit) {
        return ApiError::PayloadTooLarge {
            limit: state.config.body_limit,
        }
        .into_response();
    }
    req.extensions_mut()
        .insert(BodyLimit(state.config.body_limit));
    next.run(req).await
}

/// Requires `Authorization: Bearer TOKEN` except on `GET /health` and the dashboard's pages
/// (`/ui`), which a browser session guards instead (`dashboard::Viewer`), and puts the
/// [`Principal`](crate::auth::Principal) the token stands for in the request's extensions: the owner's token is the
/// admin `owner`; a `tg_…` token is looked up in the store (revoked and expired ones fail).
/// What the principal may do is decided after routing (`access::authorize`).
pub async fn require_token(
    State(state): State<AppState>,
    mut req: Request,
    next: Next,
) -> Response {
    let path = req.uri().path();
    let dashboard = path == "/ui" || path.starts_with("/ui/");
    if (req.method() == Method::GET && path == "/health") || dashboard {
        return next.run(req).await;
    }
    // A person who opens the gateway's address in a browser is after the dashboard.
    if req.method() == Method::GET && path == "/" && accepts_html(&req) {
        return axum::response::Redirect::to("/ui").into_response();
    }
    let given = presented_token(req.headers());
    let admitted = if records_in_its_write(&req) {
        state.admit_for_write(given)
    } else {
        state.authenticate(given).map(|p| p.map(|p| (p, None)))
    };
    match admitted {
        Ok(Some((principal, None))) => {
            req.extensions_mut().insert(principal);
            next.run(req).await
        }
        Ok(Some((principal, Some(seen)))) => {
            let presented = given.to_owned();
            req.extensions_mut().insert(principal.clone());
            req.extensions_mut().insert(CredentialsSeen(seen));
            let response = next.run(req).await;
            // Admitted from memory: a recorded call was checked in its write, but an answer
            // without a write (a run not found, a body refused, an approval that does not
            // match) must not reach a token revoked since. Such answers are rare; the token is
            // read again before one is given.
            let status = response.status();
            if status.is_success() || status == axum::http::StatusCode::UNAUTHORIZED {
                return response;
            }
            match state.authenticate(&presented) {
                Ok(Some(now)) if now == principal => response,
                Ok(_) => ApiError::WrongToken.into_response(),
                Err(e) => ApiError::from(e).into_response(),
            }
        }
        Ok(None) if given.is_empty() => refuse(req, ApiError::Unauthorized).await,
        Ok(None) => refuse(req, ApiError::WrongToken).await,
        Err(e) => refuse(req, ApiError::from(e)).await,
    }
}

/// The count of credential changes a token kept verified was verified at
/// (`auth::verified`): the handler hands it to the write that records its call, which checks
/// it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CredentialsSeen(pub i64);

/// Whether the request is a tool call (`POST /v1/runs/{run_id}/tool-calls`): the one route
/// admitted from tokens kept verified, its write checking that none changed since.
fn records_in_its_write(req: &Request) -> bool {
    req.method() == Method::POST
        && req
            .uri()
            .path()
            .strip_prefix("/v1/runs/")
            .and_then(|rest| rest.strip_suffix("/tool-calls"))
            .is_some_and(|run| !run.is_empty() && !run.contains('/'))
}

/// The token of a request's `Authorization: Bearer` header (empty when there is none).
pub(super) fn presented_token(headers: &axum::http::HeaderMap) -> &str {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(bearer)
        .unwrap_or("")
}

/// Whether the request is a browser's asking for a page (`Accept: text/html`).
fn accepts_html(req: &Request) -> bool {
    req.headers()
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.contains("text/html"))
}

/// The token of an `Authorization: Bearer TOKEN` header (the scheme's name in any case, as
/// RFC 9110 has it).
fn bearer(value: &str) -> Option<&str> {
    let (scheme, token) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

/// A refusal that first reads a small request body: closing a connection with unread bytes
/// makes the kernel reset it, and a reset can destroy the refusal before the client reads it.
/// Bodies over [`DRAIN_LIMIT`] are not read (the connection is closed after the answer).
async fn refuse(req: Request, error: ApiError) -> Response {
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    if declared.is_some_and(|n| n <= DRAIN_LIMIT) {
        let _ = axum::body::to_bytes(req.into_body(), DRAIN_LIMIT).await;
    }
    error.into_response()
}

/// The largest body a refusal reads before answering.
const DRAIN_LIMIT: usize = 64 * 1024;

/// Compares without an early exit on the first differing byte.
pub(crate) fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The token: `TOLLGATE_TOKEN` when set, else `.tollgate/token` (created on first start with
/// 32 random bytes in hex, readable by its owner only).
pub fn resolve_token(env_token: Option<String>, dir: &Path) -> std::io::Result<String> {
    if let Some(token) = env_token.filter(|t| !t.trim().is_empty()) {
        return Ok(token.trim().to_string());
    }
    let path = dir.join("token");
    if let Ok(existing) = std::fs::read_to_string(&path)
        && !existing.trim().is_empty()
    {
        return Ok(existing.trim().to_string());
    }
    std::fs::create_dir_all(dir)?;
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| std::io::Error::other(e.to_string()))?;
    let token: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    write_private(&path, &token)?;
    Ok(token)
}

#[cfg(test)]
mod tests {
    use std::net::IpAddr;

    use crate::http::ServeConfig;

    fn config(addr: &str, hosts: &[&str]) -> ServeConfig {
        ServeConfig {
            addr: addr.parse::<IpAddr>().unwrap(),
            port: 8000,
            extra_hosts: hosts.iter().map(|h| h.to_string()).collect(),
            ..ServeConfig::default()
        }
    }

    /// The login URL printed by a gateway behind a load balancer named `0.0.0.0`, which no
    /// browser can be sent to and which the Host check refuses.
    #[test]
    fn the_dashboard_login_url_names_a_host_the_gateway_answers_to() {
        assert_eq!(
            config("127.0.0.1", &[]).public_authority(),
            "127.0.0.1:8000"
        );
        assert_eq!(config("::1", &[]).public_authority(), "[::1]:8000");
        assert_eq!(config("0.0.0.0", &[]).public_authority(), "localhost:8000");
        assert_eq!(config("::", &[]).public_authority(), "localhost:8000");
        assert_eq!(
            config("0.0.0.0", &["tollgate.internal", "gw1"]).public_authority(),
            "tollgate.internal:8000"
        );
        assert_eq!(
            config("127.0.0.1", &["tollgate.internal"]).public_authority(),
            "tollgate.internal:8000"
        );
    }
}
