//! What a session passes to its servers with no decision of its own, because it carries no
//! context and runs nothing: the client's logging level (to every server that logs), its
//! completions of a prompt's or a resource template's arguments (to the server the prompt or
//! the template is of) and its subscriptions to a resource (to the server the URI is read
//! from). What comes back — log messages, completion values, resource updates — passes the
//! live secret redactor on its way to the client (`super::relay`).

#![expect(
    deprecated,
    reason = "the gateway speaks MCP up to 2025-11-25, where sampling, logging and resource subscriptions are current; rmcp marks them deprecated for 2026-07-28"
)]

use rmcp::ErrorData as McpError;
use rmcp::model::{
    CompleteRequestParams, CompleteResult, Reference, SetLevelRequestParams,
    SubscribeRequestParams, UnsubscribeRequestParams,
};
use serde_json::Value;

use super::Front;
use crate::secrets::redact_secrets;

impl Front {
    /// Sets the logging level of every server that logs.
    pub(super) async fn level_set(&self, request: SetLevelRequestParams) -> Result<(), McpError> {
        for i in 0..self.inner.upstreams.len() {
            let up = self.upstream(i).await.map_err(failed)?;
            if up.offers(|c| c.logging.is_some()) {
                up.set_level(request.clone(), self.timeout())
                    .await
                    .map_err(failed)?;
            }
        }
        Ok(())
    }

    /// Completes an argument of a prompt (named as the listing shows it) or of a resource
    /// template, at the server it is of.
    pub(super) async fn completed(
        &self,
        mut request: CompleteRequestParams,
    ) -> Result<CompleteResult, McpError> {
        let at = match &mut request.r#ref {
            Reference::Prompt(prompt) => {
                let listed = self.prompt_entries().await?;
                let Some((at, own)) = listed
                    .iter()
                    .find(|(_, _, p)| p.name == prompt.name)
                    .map(|(at, own, _)| (*at, own.clone()))
                else {
                    let known = listed.into_iter().map(|(_, _, p)| p.name).collect();
                    return Err(super::unknown("prompt", &prompt.name, known));
                };
                prompt.name = own;
                at
            }
            Reference::Resource(template) => self.route(&template.uri).await?,
            other => {
                return Err(McpError::invalid_params(
                    format!(
                        "a completion of {other:?} is not passed on: complete a prompt's or a resource template's argument"
                    ),
                    None,
                ));
            }
        };
        let up = self.upstream(at).await.map_err(failed)?;
        let result = up.complete(request, self.timeout()).await.map_err(failed)?;
        let value = serde_json::to_value(&result).map_err(failed)?;
        let (value, _) = redact_secrets(&value, "mcp_result");
        serde_json::from_value::<CompleteResult>(value).map_err(failed)
    }

    /// Subscribes to (or, `on` false, unsubscribes from) a resource at the server it is read
    /// from.
    pub(super) async fn subscription(&self, uri: String, on: bool) -> Result<(), McpError> {
        let at = self.route(&uri).await?;
        let up = self.upstream(at).await.map_err(failed)?;
        let params: Value = serde_json::json!({"uri": uri});
        let result = if on {
            let p: SubscribeRequestParams = serde_json::from_value(params).map_err(failed)?;
            up.subscribe(p, self.timeout()).await
        } else {
            let p: UnsubscribeRequestParams = serde_json::from_value(params).map_err(failed)?;
            up.unsubscribe(p, self.timeout()).await
        };
        result.map_err(failed)
    }
}

fn failed(e: impl std::fmt::Display) -> McpError {
    McpError::internal_error(e.to_string(), None)
}
