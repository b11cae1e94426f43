//! Resources and prompts: what an upstream puts in the agent's context, decided as context
//! items exactly as a compile decides them (`Runtime::compile_offered`: the same
//! `context_offered` and `compile` events, item receipts, replay and dashboard timeline).
//!
//! - `resources/read`: each content of the answer is an item (`file` for a `file://` URI,
//!   else `doc`) with the scope, sensitivity and labels the server's `context` gives its URI;
//!   `prompts/get`: each message is a `message` item with its role (an embedded resource, an
//!   item as a resource's content is). Included → passed as the server sent it; redacted →
//!   its text as the data rules rewrote it; excluded → left out, and a read with nothing left
//!   is an error naming the reason and the receipt. Binary content (a blob, an image) cannot
//!   be redacted, so it passes only where policy allows it whole. What passes also goes
//!   through the live secret redactor, as tool results do.
//! - Listings hide a resource or a prompt the envelopes deny (templates cannot be decided
//!   before a URI exists, so they are all listed; a read of their URIs is decided).
//! - Prompts are named `SERVER.PROMPT` like tools; resource URIs are passed unchanged and
//!   routed to the server that listed them (or whose template they fall under, the longest
//!   literal prefix winning; or the only server with resources).

use rmcp::ErrorData as McpError;
use rmcp::model::{
    GetPromptRequestParams, GetPromptResult, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ReadResourceRequestParams, ReadResourceResult,
};
use serde_json::{Value, json};
use tollgate_rules::request::ContextItem;

use super::super::config::Seen;
use super::{Front, blocking};
use crate::compiler::{
    BYTES4, CandidateItem, CompileInput, CompileSettings, ItemKind, ItemOutcome, ItemStatus,
    Ordering,
};
use crate::runtime::RuntimeError;
use crate::secrets::{BodyPart, redact, redact_secrets};

/// Where a resource URI is read: the servers that listed it, and their templates' prefixes.
#[derive(Default)]
pub(super) struct Routes {
    /// URI → the upstream that listed it.
    uris: std::collections::HashMap<String, usize>,
    /// A template's literal prefix (before its first `{`) → its upstream, longest first.
    templates: Vec<(String, usize)>,
    /// Whether the upstreams have been listed once.
    listed: bool,
}

/// Where a piece's text lives in its entry of the answer's list.
#[derive(Clone, Copy)]
enum Place {
    /// `text` of a resource content.
    Content,
    /// `content.text` of a prompt message.
    Message,
    /// `content.resource.text` of a prompt message embedding a resource.
    Embedded,
}

/// One piece of a resource or a prompt, decided as a context item.
struct Piece {
    /// Its entry's index in the answer's list.
    at: usize,
    /// Where its text lives in the entry.
    place: Place,
    /// The item.
    item: CandidateItem,
    /// Whether its text may be rewritten (text), or it passes whole or not at all (binary).
    text: bool,
}

impl Front {
    /// Every upstream's resources, those the run's envelopes deny hidden.
    pub(super) async fn resources_listed(&self) -> Result<ListResourcesResult, McpError> {
        let mut all = Vec::new();
        let mut routes = Routes {
            listed: true,
            ..Routes::default()
        };
        for i in 0..self.inner.upstreams.len() {
            let up = self.upstream(i).await.map_err(failed)?;
            let listed = up.resources(self.timeout()).await.map_err(failed)?;
            let templates = up.templates(self.timeout()).await.map_err(failed)?;
            for r in listed {
                routes.uris.entry(r.uri.clone()).or_insert(i);
                all.push((i, r));
            }
            for t in templates {
                let prefix = t.uri_template.split('{').next().unwrap_or_default();
                routes.templates.push((prefix.to_string(), i));
            }
        }
        routes
            .templates
            .sort_by_key(|(prefix, _)| std::cmp::Reverse(prefix.len()));
        *self.inner.routes.write().await = routes;
        let items: Vec<ContextItem> = all
            .iter()
            .map(|(i, r)| self.seen_item(*i, &r.uri, Some(&r.uri)).context_item())
            .collect();
        let shown = self.listed(items).await?;
        Ok(ListResourcesResult::with_all_items(
            all.into_iter()
                .zip(shown)
                .filter(|(_, shown)| *shown)
                .map(|((_, r), _)| r)
                .collect(),
        ))
    }

    /// Every upstream's resource templates.
    pub(super) async fn templates_listed(&self) -> Result<ListResourceTemplatesResult, McpError> {
        let mut all = Vec::new();
        for i in 0..self.inner.upstreams.len() {
            let up = self.upstream(i).await.map_err(failed)?;
            all.extend(up.templates(self.timeout()).await.map_err(failed)?);
        }
        Ok(ListResourceTemplatesResult::with_all_items(all))
    }

    /// Reads a resource from the server it belongs to, each content decided as a context item.
    pub(super) async fn resource_read(
        &self,
        request: ReadResourceRequestParams,
    ) -> Result<ReadResourceResult, McpError> {
        let uri = request.uri.clone();
        let at = self.route(&uri).await?;
        let read = self
            .upstream(at)
            .await
            .map_err(failed)?
            .read(&uri, self.timeout())
            .await
            .map_err(failed)?;
        let mut value = to_value(&read)?;
        let mut pieces = Vec::new();
        if let Some(Value::Array(contents)) = value.get("contents") {
            let many = contents.len() > 1;
            for (n, c) in contents.iter().enumerate() {
                let id = if many {
                    format!("{}:{uri}#{n}", self.inner.upstreams[at].name)
                } else {
                    format!("{}:{uri}", self.inner.upstreams[at].name)
                };
                pieces.push(self.resource_piece(at, n, Place::Content, id, c));
            }
        }
        self.decide_pieces(&mut value, "contents", pieces, &format!("resource `{uri}`"))
            .await?;
        from_value(value)
    }

    /// Every upstream's prompts as the client is shown them (`SERVER.PROMPT`, or the
    /// server's own name: `Front::shown_names`), those the run's envelopes deny hidden.
    pub(super) async fn prompts_listed(&self) -> Result<ListPromptsResult, McpError> {
        let listed = self.prompt_entries().await?;
        Ok(ListPromptsResult::with_all_items(
            listed.into_iter().map(|(_, _, p)| p).collect(),
        ))
    }

    /// The prompts the run may see: (upstream, the server's own name, the prompt as shown).
    pub(super) async fn prompt_entries(
        &self,
    ) -> Result<Vec<(usize, String, rmcp::model::Prompt)>, McpError> {
        let mut all = Vec::new();
        for i in 0..self.inner.upstreams.len() {
            let up = self.upstream(i).await.map_err(failed)?;
            for p in up.prompts(self.timeout()).await.map_err(failed)? {
                all.push((i, p));
            }
        }
        let items: Vec<ContextItem> = all
            .iter()
            .map(|(i, p)| {
                let name = format!("{}.{}", self.inner.upstreams[*i].name, p.name);
                let mut item = self.seen_item(*i, &name, None);
                item.kind = ItemKind::Message;
                item.context_item()
            })
            .collect();
        let visible = self.listed(items).await?;
        let all: Vec<(usize, rmcp::model::Prompt)> = all
            .into_iter()
            .zip(visible)
            .filter(|(_, v)| *v)
            .map(|(p, _)| p)
            .collect();
        let own: Vec<(usize, String)> = all.iter().map(|(i, p)| (*i, p.name.clone())).collect();
        let shown = self.shown_names(&own);
        Ok(all
            .into_iter()
            .zip(shown)
            .map(|((i, mut p), shown)| {
                let own = std::mem::replace(&mut p.name, shown);
                (i, own, p)
            })
            .collect())
    }

    /// Gets a prompt, named as the listing shows it, from its server, each message decided
    /// as a context item.
    pub(super) async fn prompt_got(
        &self,
        request: GetPromptRequestParams,
    ) -> Result<GetPromptResult, McpError> {
        let name = request.name.clone();
        // Named as the listing names them: a hidden prompt stays unsaid.
        let listed = self.prompt_entries().await?;
        let Some((at, prompt)) = listed
            .iter()
            .find(|(_, _, p)| p.name == name)
            .map(|(at, own, _)| (*at, own.clone()))
        else {
            let known = listed.into_iter().map(|(_, _, p)| p.name).collect();
            return Err(super::unknown("prompt", &name, known));
        };
        // Decided and recorded by the name policy sees.
        let name = format!("{}.{prompt}", self.inner.upstreams[at].name);
        let got = self
            .upstream(at)
            .await
            .map_err(failed)?
            .prompt(&prompt, request.arguments, self.timeout())
            .await
            .map_err(failed)?;
        let mut value = to_value(&got)?;
        let mut pieces = Vec::new();
        if let Some(Value::Array(messages)) = value.get("messages") {
            for (n, m) in messages.iter().enumerate() {
                let id = format!("{name}#{n}");
                let content = m.get("content").cloned().unwrap_or(Value::Null);
                let piece = if content.get("type").and_then(Value::as_str) == Some("resource") {
                    let inner = content.get("resource").cloned().unwrap_or(Value::Null);
                    self.resource_piece(at, n, Place::Embedded, id, &inner)
                } else {
                    let mut item = self.seen_item(at, &id, None);
                    item.kind = ItemKind::Message;
                    item.role = m.get("role").and_then(Value::as_str).map(str::to_string);
                    let text = content.get("text").and_then(Value::as_str);
                    let is_text = content.get("type").and_then(Value::as_str) == Some("text");
                    match text.filter(|_| is_text) {
                        Some(t) => item.content = Some(t.to_string()),
                        None => binary(&mut item, &content),
                    }
                    Piece {
                        at: n,
                        place: Place::Message,
                        item,
                        text: is_text,
                    }
                };
                pieces.push(piece);
            }
        }
        self.decide_pieces(&mut value, "messages", pieces, &format!("prompt `{name}`"))
            .await?;
        from_value(value)
    }

    /// The upstream a resource URI is read from.
    pub(super) async fn route(&self, uri: &str) -> Result<usize, McpError> {
        if !self.inner.routes.read().await.listed {
            self.resources_listed().await?;
        }
        let routes = self.inner.routes.read().await;
        if let Some(at) = routes.uris.get(uri) {
            return Ok(*at);
        }
        if let Some((_, at)) = routes
            .templates
            .iter()
            .find(|(prefix, _)| !prefix.is_empty() && uri.starts_with(prefix.as_str()))
        {
            return Ok(*at);
        }
        let mut offering = Vec::new();
        for i in 0..self.inner.upstreams.len() {
            if self
                .upstream(i)
                .await
                .map_err(failed)?
                .offers(|c| c.resources.is_some())
            {
                offering.push(i);
            }
        }
        match offering.as_slice() {
            [only] => Ok(*only),
            _ => Err(McpError::invalid_params(
                format!(
                    "no upstream server lists the resource `{uri}`; list the resources (resources/list) or the templates (resources/templates/list) to see what can be read"
                ),
                Some(json!({"uri": uri})),
            )),
        }
    }

    /// A candidate item of upstream `at` (a resource's at `uri`; a prompt's without), seen as
    /// its configuration says.
    fn seen_item(&self, at: usize, id: &str, uri: Option<&str>) -> CandidateItem {
        // The upstreams are started in the configuration's order.
        let server = &self.inner.config.servers[at];
        let Seen {
            scope,
            sensitivity,
            labels,
        } = server.context.seen(uri).into_owned();
        let uri = uri.unwrap_or(id);
        let kind = if uri.starts_with("file://") {
            ItemKind::File
        } else {
            ItemKind::Doc
        };
        let mut item = CandidateItem::new(id, kind, String::new());
        item.content = None;
        item.reference = Some(uri.to_string());
        item.scope = scope;
        item.sensitivity = sensitivity;
        item.labels = labels;
        item
    }

    /// A resource content (`{uri, text}` or `{uri, blob}`) as a piece.
    fn resource_piece(
        &self,
        at: usize,
        entry: usize,
        place: Place,
        id: String,
        content: &Value,
    ) -> Piece {
        let uri = content.get("uri").and_then(Value::as_str).unwrap_or("");
        let mut item = self.seen_item(at, &id, Some(uri));
        match content.get("text").and_then(Value::as_str) {
            Some(text) => {
                item.content = Some(text.to_string());
                item.reference = None;
                Piece {
                    at: entry,
                    place,
                    item,
                    text: true,
                }
            }
            None => {
                binary(&mut item, content);
                Piece {
                    at: entry,
                    place,
                    item,
                    text: false,
                }
            }
        }
    }

    /// Which of `items` the run is shown in a listing.
    async fn listed(&self, items: Vec<ContextItem>) -> Result<Vec<bool>, McpError> {
        let (rt, run) = (self.inner.runtime.clone(), self.inner.run.clone());
        blocking(move || rt.contexts_listed(&run, &items))
            .await?
            .map_err(super::relay::runtime_error)
    }

    /// Decides `pieces` as one compile of offered items, recorded, and rewrites `value`'s
    /// `list` (contents or messages): excluded pieces left out, redacted texts rewritten,
    /// then the whole through the live secret redactor. Nothing left: an error.
    async fn decide_pieces(
        &self,
        value: &mut Value,
        list: &str,
        pieces: Vec<Piece>,
        what: &str,
    ) -> Result<(), McpError> {
        let input = CompileInput {
            items: pieces.iter().map(|p| p.item.clone()).collect(),
            settings: CompileSettings {
                budget: u32::MAX,
                order: Ordering::Given,
                tokenizer: BYTES4.to_string(),
                ..CompileSettings::default()
            },
            subject: None,
        };
        let (rt, run) = (self.inner.runtime.clone(), self.inner.run.clone());
        let answer = blocking(move || rt.compile_offered(&run, input))
            .await?
            .map_err(|e| match e {
                RuntimeError::Invalid(m) => McpError::invalid_params(m, None),
                other => McpError::internal_error(other.to_string(), None),
            })?;
        let receipt = format!("{}#{}", self.inner.run, answer.seq);
        let outcomes = &answer.compiled.outcomes;
        let mut kept = Vec::new();
        let mut withheld = Vec::new();
        if let Some(Value::Array(entries)) = value.get_mut(list) {
            for (piece, outcome) in pieces.iter().zip(outcomes) {
                let Some(entry) = entries.get(piece.at).cloned() else {
                    continue;
                };
                match passed(piece, outcome, entry) {
                    Some(entry) => kept.push(entry),
                    None => withheld.push(outcome),
                }
            }
            *entries = kept;
        }
        let left = value
            .get(list)
            .and_then(Value::as_array)
            .map_or(0, Vec::len);
        if left == 0 && !withheld.is_empty() {
            let reasons: Vec<String> = withheld.iter().map(|o| reason(o)).collect();
            return Err(McpError::invalid_request(
                format!(
                    "Tollgate refused the {what}: {} (receipt {receipt})",
                    reasons.join("; ")
                ),
                Some(json!({"receipt": receipt, "withheld": reasons})),
            ));
        }
        let (clean, _) = redact_secrets(value, "mcp_result");
        *value = clean;
        if let Value::Object(o) = value {
            let meta = o
                .entry("_meta")
                .or_insert_with(|| Value::Object(Default::default()));
            if let Value::Object(meta) = meta {
                meta.insert(
                    super::DECISION_META.into(),
                    json!({
                        "receipt": receipt,
                        "withheld": withheld.iter().map(|o| json!({"item": o.id, "reason": reason(o)})).collect::<Vec<_>>(),
                    }),
                );
            }
        }
        Ok(())
    }
}

/// A binary part's item: its description as the reference, its size given (never counted).
fn binary(item: &mut CandidateItem, content: &Value) {
    let kind = content
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("blob");
    let mime = content
        .get("mimeType")
        .and_then(Value::as_str)
        .unwrap_or("unknown type");
    let size = ["blob", "data"]
        .iter()
        .find_map(|k| content.get(*k).and_then(Value::as_str))
        .map_or(0, str::len);
    item.content = None;
    item.reference = Some(format!("[{kind}, {mime}, {size} bytes of base64]"));
    item.tokens = Some(u32::try_from(size / 4).unwrap_or(u32::MAX));
}

/// `entry` as the client may see it after `outcome`, or `None` when withheld.
fn passed(piece: &Piece, outcome: &ItemOutcome, mut entry: Value) -> Option<Value> {
    match outcome.status {
        ItemStatus::Included => Some(entry),
        ItemStatus::Redacted if piece.text => {
            let rules = outcome
                .policy
                .as_ref()
                .map(|d| d.rules.join(","))
                .unwrap_or_default();
            let text = piece.item.content.as_deref().unwrap_or_default();
            let rewritten = redact(text, BodyPart::Content, &rules).text;
            let target = match piece.place {
                Place::Content => entry.get_mut("text"),
                Place::Message => entry.get_mut("content").and_then(|c| c.get_mut("text")),
                Place::Embedded => entry
                    .get_mut("content")
                    .and_then(|c| c.get_mut("resource"))
                    .and_then(|r| r.get_mut("text")),
            };
            *target? = Value::String(rewritten);
            Some(entry)
        }
        // A binary part cannot be partly hidden; a summary is never what a server sent.
        ItemStatus::Redacted | ItemStatus::Summarised | ItemStatus::Excluded => None,
    }
}

/// Why an item was withheld, in words.
fn reason(o: &ItemOutcome) -> String {
    let rules = o
        .policy
        .as_ref()
        .map(|d| d.rules.join(", "))
        .unwrap_or_default();
    match (&o.status, o.policy.as_ref()) {
        (ItemStatus::Excluded, Some(d)) => format!(
            "`{}` is {} by policy (rule {})",
            o.id,
            match d.effect {
                tollgate_rules::decide::DecisionEffect::Redact => "redacted",
                _ => "denied",
            },
            if rules.is_empty() {
                "none matched: fail closed".into()
            } else {
                rules
            }
        ),
        (ItemStatus::Redacted, _) => format!(
            "`{}` is binary and policy redacts it (rule {rules}); binary content passes only whole",
            o.id
        ),
        _ => format!("`{}` is not passed", o.id),
    }
}

fn failed(e: impl std::fmt::Display) -> McpError {
    McpError::internal_error(e.to_string(), None)
}

fn to_value<T: serde::Serialize>(v: &T) -> Result<Value, McpError> {
    serde_json::to_value(v).map_err(|e| McpError::internal_error(e.to_string(), None))
}

fn from_value<T: serde::de::DeserializeOwned>(v: Value) -> Result<T, McpError> {
    serde_json::from_value(v).map_err(|e| McpError::internal_error(e.to_string(), None))
}
