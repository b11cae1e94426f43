//! Implicit runs: the front door for an unmodified OpenAI client, which changes only `base_url`
//! and `api_key` and so sends no `X-Tollgate-Run`. Its chat calls are recorded in one run per
//! client per UTC day:
//!
//! - **Named** `implicit-CLIENT-YYYYMMDD`, where `CLIENT` is the request's `user` field (OpenAI's
//!   own end-user id) when it is a plain id, else `openai-client`.
//! - **Governed** like any run: agent `CLIENT`, task `implicit`, scope `client:CLIENT`, cleared
//!   for `internal` (the sensitivity of the messages it sends), so the
//!   envelopes attached to that agent (or to task `implicit`) decide its model calls; with none,
//!   every model call is denied (`no-envelope`), as for any run.
//! - **Ended** by `POST /v1/runs/{id}/finish`, or left open: the next UTC day's calls open the
//!   next day's run.

use tollgate_rules::envelope::Level;

use super::runs::OpenRun;
use super::{Runtime, RuntimeError};
use crate::auth::Principal;
use crate::recorder::RecorderError;

/// The client an implicit run belongs to when the request names none.
pub const DEFAULT_CLIENT: &str = "openai-client";

/// The task of every implicit run.
pub const IMPLICIT_TASK: &str = "implicit";

/// The client named by a request's `user` field, when it is an id a run may carry.
pub fn client_of(user: Option<&str>) -> String {
    match user.map(str::trim) {
        Some(u)
            if !u.is_empty()
                && u.len() <= 64
                && u.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')) =>
        {
            u.to_string()
        }
        _ => DEFAULT_CLIENT.to_string(),
    }
}

impl Runtime {
    /// The id of `client`'s implicit run today, `implicit-CLIENT-YYYYMMDD` (whether or not it
    /// is open yet).
    pub fn implicit_run_id(&self, client: &str) -> String {
        let secs = u64::try_from(self.now_ms() / 1000).unwrap_or(0);
        let day: String = crate::clock::rfc3339(secs)
            .chars()
            .take(10)
            .filter(char::is_ascii_digit)
            .collect();
        format!("implicit-{client}-{day}")
    }

    /// The implicit run of `client` today (opened on its first call of the day).
    pub fn implicit_run(&self, client: &str) -> Result<String, RuntimeError> {
        self.implicit_run_as(client, None)
    }

    /// [`Runtime::implicit_run`] for `principal`: an agent's credential names the client (its
    /// agent), and its run lies at the credential's scope, cleared no higher than it.
    pub fn implicit_run_as(
        &self,
        client: &str,
        principal: Option<&Principal>,
    ) -> Result<String, RuntimeError> {
        let id = self.implicit_run_id(client);
        match self.recorder().header(&id) {
            Ok(_) => return Ok(id),
            Err(RecorderError::UnknownRun(_)) => {}
            Err(e) => return Err(e.into()),
        }
        let agent_bounds = principal.filter(|p| p.is_agent());
        let scope = agent_bounds
            .and_then(|p| p.max_scope.clone())
            .unwrap_or_else(|| format!("client:{client}"));
        // Messages go out as `internal` context: the run may send its own.
        let clearance = agent_bounds
            .and_then(|p| p.max_clearance)
            .map_or(Level::Internal, |max| max.min(Level::Internal));
        let opened = self.open_run_as(
            OpenRun {
                id: Some(id.clone()),
                agent: client.to_string(),
                task: IMPLICIT_TASK.to_string(),
                scope,
                clearance: Some(clearance),
                envelopes: Vec::new(),
                parent_run: None,
                handoff: None,
                metadata: serde_json::Map::from_iter([(
                    "implicit".to_string(),
                    serde_json::Value::Bool(true),
                )]),
            },
            principal,
        );
        match opened {
            Ok(_) => Ok(id),
            // Two first calls at once: the other opened it.
            Err(_) if self.recorder().header(&id).is_ok() => Ok(id),
            Err(e) => Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_is_its_user_field_when_that_is_an_id() {
        assert_eq!(client_of(Some("billing-bot")), "billing-bot");
        assert_eq!(client_of(None), DEFAULT_CLIENT);
        assert_eq!(client_of(Some("alice@example.com")), DEFAULT_CLIENT);
        assert_eq!(client_of(Some("  ")), DEFAULT_CLIENT);
    }
}
