//! The model proxy's work: an OpenAI-style chat request of a run is decided by the model rules
//! (provider, model, reasoning mode), each message by the data rules (a message in which a
//! detector finds a secret — in its text, a `tool` message's result included, or in the
//! arguments of the tool calls an assistant message carries — is labelled `secret`; `redact`
//! replaces the secret in both, `block` refuses the call) — all before anything leaves — then
//! sent to the configured provider, and the call, its decisions and the response are recorded.
//! The response (text and tool calls) is recorded as the provider gave it, unscanned: replay
//! must serve it back byte for byte.
//!
//! The two halves are separate calls so a streaming caller can answer a refusal as an error
//! before it starts a stream: [`Runtime::allow_chat`] decides (`decide_chat`, which reads and
//! writes nothing, giving a `ChatDecision`: allowed with the request to forward, or refused)
//! and records the decisions and the `model_call` event (`record_chat_decision`, one write);
//! [`Runtime::complete_chat`] or [`Runtime::stream_chat`] forwards the allowed call and
//! records its `model_output` (or its error). Both forwards record the same events for the
//! same answer, so a streamed call replays and simulates like any other; [`Runtime::chat`] is
//! the two halves in one.
//!
//! The model string may name its provider (`openai/gpt-4.1-mini`); without one the provider
//! is `openai`, the dialect the endpoint speaks. The provider the gateway forwards to (`fake`,
//! `openai`, `replay`) is a deployment setting, recorded with each call.

use std::sync::Arc;

use serde::Serialize;
use serde_json::{Value, json};
use tollgate_rules::decide::{DecisionEffect, EnvelopeDecision};
use tollgate_rules::envelope::Level;
use tollgate_rules::request::{ContextItem, ModelCall};

use super::{RunPolicy, Runtime, RuntimeError};
use crate::providers::{ChatDelta, ChatRequest, ChatResponse, ProviderError};
use crate::recorder::events::{
    DecisionEvent, ErrorEvent, MessageDecision, ModelCallEvent, ModelOutputEvent,
};
use crate::recorder::write::new_event;
use crate::run_policy::requested_model_call;
use crate::secrets::{
    BodyPart, arguments_hold_secret, find_spans, object_holds_secret, redact, redact_arguments,
    redact_secrets,
};

/// Request fields the gateway handles itself and does not forward.
const GATEWAY_FIELDS: [&str; 2] = ["stream", "stream_options"];

/// A proxied chat call that went through.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChatOutcome {
    /// The provider's response.
    pub response: ChatResponse,
    /// The run.
    pub run: String,
    /// The request as forwarded (after redaction).
    pub request_hash: String,
    /// The model decision.
    pub model_decision: EnvelopeDecision,
    /// Per message.
    pub messages: Vec<MessageDecision>,
    /// The `model_output` event's sequence number.
    pub seq: u64,
}

/// A chat call policy has let through, its decisions and `model_call` event recorded: it must
/// now be forwarded (a dropped `AllowedChat` leaves a recorded call without an answer).
#[derive(Debug)]
#[must_use = "an allowed call is recorded and must be forwarded"]
pub struct AllowedChat {
    run: String,
    step: u32,
    /// As forwarded: the bare model, messages redacted, gateway fields removed.
    request: ChatRequest,
    request_hash: String,
    model_decision: EnvelopeDecision,
    messages: Vec<MessageDecision>,
}

/// A chat call decided and not yet recorded.
#[derive(Debug)]
pub(crate) struct ChatDecision {
    run: String,
    step: u32,
    /// The engine that decided: the write recording its decisions links its versions.
    engine: Arc<RunPolicy>,
    model_call: ModelCall,
    model_decision: EnvelopeDecision,
    verdict: ChatVerdict,
}

/// Whether a chat call may leave the gateway.
#[derive(Debug)]
pub(crate) enum ChatVerdict {
    /// Every message may leave.
    Allowed {
        /// As forwarded: the bare model, messages redacted, gateway fields removed.
        request: ChatRequest,
        /// What policy did to each message.
        messages: Vec<MessageDecision>,
        /// The message decisions that changed something (recorded with the call).
        recorded: Vec<EnvelopeDecision>,
    },
    /// The model or a message is refused; nothing leaves.
    Refused {
        /// Why, for the caller.
        message: String,
        /// The refused message's decision (`None`: the model was refused).
        data: Option<Box<EnvelopeDecision>>,
    },
}

impl Runtime {
    /// Decides, forwards and records a chat call of `run`. Blocking (the provider is).
    pub fn chat(&self, run: &str, request: ChatRequest) -> Result<ChatOutcome, RuntimeError> {
        let allowed = self.allow_chat(run, request)?;
        self.complete_chat(allowed)
    }

    /// The policy half of a chat call: model rules, then data rules over every message
    /// (redacting them), recorded as the decisions and the `model_call` event. A refusal is
    /// recorded too and answered [`RuntimeError::Denied`]; nothing has left the gateway then.
    pub fn allow_chat(&self, run: &str, request: ChatRequest) -> Result<AllowedChat, RuntimeError> {
        let decided = self.decide_chat(run, request)?;
        self.record_chat_decision(decided)
    }

    /// Decides a chat call: the model rules, then the data rules over each message (a
    /// secret in its text or its tool calls' arguments labels it; `redact` rewrites it in
    /// the request to forward). Reads the store; writes nothing.
    pub(crate) fn decide_chat(
        &self,
        run: &str,
        mut request: ChatRequest,
    ) -> Result<ChatDecision, RuntimeError> {
        if request.model.trim().is_empty() {
            return Err(RuntimeError::Invalid("`model` must not be empty".into()));
        }
        if request.messages.is_empty() {
            return Err(RuntimeError::Invalid(
                "`messages` must hold at least one message".into(),
            ));
        }
        for field in GATEWAY_FIELDS {
            request.extra.remove(field);
        }
        let (header, engine) = self.running_engine(run)?;
        let step = self.current_step(run, &header)?;
        let model_call = requested_model_call(&request);
        let model_decision = engine.decide_model(run, &model_call);
        let refused = |message: String, data: Option<Box<EnvelopeDecision>>| ChatDecision {
            run: run.to_string(),
            step,
            engine: engine.clone(),
            model_call: model_call.clone(),
            model_decision: model_decision.clone(),
            verdict: ChatVerdict::Refused { message, data },
        };
        if model_decision.effect != DecisionEffect::Allow {
            let message = format!(
                "model `{}` is not allowed for run `{run}` ({} by {})",
                request.model,
                model_decision.effect.as_str(),
                model_decision.rules.join(", ")
            );
            return Ok(refused(message, None));
        }
        request.model = model_call.model.clone();

        // Data rules over every message before it leaves.
        let mut messages = Vec::with_capacity(request.messages.len());
        let mut recorded = Vec::new();
        for (index, m) in request.messages.iter_mut().enumerate() {
            // The message's text and the arguments of the calls it carries are one item: a
            // secret in either labels it, and `redact` replaces it in both.
            let secret_in_text = !find_spans(&m.content).is_empty();
            let secret_in_calls = m
                .tool_calls
                .iter()
                .any(|call| arguments_hold_secret(&call.function.arguments));
            let secret = secret_in_text || secret_in_calls;
            let item = ContextItem {
                id: format!("message-{index}"),
                kind: "message".into(),
                scope: header.scope.clone(),
                sensitivity: Level::Internal,
                labels: if secret {
                    vec!["secret".into()]
                } else {
                    Vec::new()
                },
            };
            let decision = engine.decide_context(run, &item);
            let mut redacted_spans = 0;
            match decision.effect {
                DecisionEffect::Allow => {}
                DecisionEffect::Redact => {
                    let rule = decision.rules.join(",");
                    // `redact` replaces a text without a detected secret whole: the text is
                    // left alone when the secret is only in the calls' arguments.
                    if secret_in_text || !secret_in_calls {
                        let r = redact(&m.content, BodyPart::Content, &rule);
                        redacted_spans = r.spans.len();
                        m.content = r.text;
                    }
                    for call in &mut m.tool_calls {
                        let (arguments, spans) = redact_arguments(&call.function.arguments, &rule);
                        call.function.arguments = arguments;
                        redacted_spans += spans;
                    }
                }
                DecisionEffect::Deny
                | DecisionEffect::RequireApproval
                | DecisionEffect::RateLimited => {
                    let message = format!(
                        "message {index} may not be sent for run `{run}` (denied by {})",
                        decision.rules.join(", ")
                    );
                    return Ok(refused(message, Some(Box::new(decision))));
                }
            }
            messages.push(MessageDecision {
                index,
                effect: decision.effect,
                rules: decision.rules.clone(),
                redacted_spans,
            });
            if decision.effect != DecisionEffect::Allow {
                recorded.push(decision);
            }
        }
        // Everything else that leaves with the request is one more item: a message's role and
        // name, the ids and function names of the calls it carries, the call a tool message
        // answers, and every other field (tools and their descriptions, metadata, user,
        // response_format, stop, logit_bias and its keys, tool_choice...).
        if request_fields_hold_secret(&mut request) {
            let item = ContextItem {
                id: "request-fields".into(),
                kind: "message".into(),
                scope: header.scope.clone(),
                sensitivity: Level::Internal,
                labels: vec!["secret".into()],
            };
            let decision = engine.decide_context(run, &item);
            match decision.effect {
                DecisionEffect::Allow => {}
                DecisionEffect::Redact => {
                    redact_request_fields(&mut request, &decision.rules.join(","));
                    recorded.push(decision);
                }
                DecisionEffect::Deny
                | DecisionEffect::RequireApproval
                | DecisionEffect::RateLimited => {
                    let message = format!(
                        "a field of the request other than the messages' text holds a secret and may not be sent for run `{run}` (denied by {})",
                        decision.rules.join(", ")
                    );
                    return Ok(refused(message, Some(Box::new(decision))));
                }
            }
        }
        Ok(ChatDecision {
            run: run.to_string(),
            step,
            engine,
            model_call,
            model_decision,
            verdict: ChatVerdict::Allowed {
                request,
                messages,
                recorded,
            },
        })
    }

    /// Records a decided chat call in one write: an allowed call's model decision, the
    /// decisions that changed a message and the `model_call` event (the call must then be
    /// forwarded); a refusal's decisions and an error event, answered
    /// [`RuntimeError::Denied`].
    pub(crate) fn record_chat_decision(
        &self,
        decided: ChatDecision,
    ) -> Result<AllowedChat, RuntimeError> {
        let ChatDecision {
            run,
            step,
            engine,
            model_call,
            model_decision,
            verdict,
        } = decided;
        let (request, messages, recorded) = match verdict {
            ChatVerdict::Refused { message, data } => {
                let receipt = self.record_refusal(
                    &run,
                    &engine,
                    step,
                    &model_call,
                    &model_decision,
                    data.as_deref(),
                    &message,
                )?;
                return Err(RuntimeError::Denied {
                    message,
                    decision: data.unwrap_or_else(|| Box::new(model_decision)),
                    receipt: Some(receipt),
                });
            }
            ChatVerdict::Allowed {
                request,
                messages,
                recorded,
            } => (request, messages, recorded),
        };
        let request_hash = request.hash();
        let provider_name = self.provider().name().to_string();
        let at = self.now_rfc3339();
        let mut events = vec![new_event(
            step,
            at.clone(),
            &DecisionEvent::new(&model_decision, model_decision.effect),
        )?];
        for d in &recorded {
            let event = DecisionEvent {
                request_hash: Some(request_hash.clone()),
                ..DecisionEvent::new(d, d.effect)
            };
            events.push(new_event(step, at.clone(), &event)?);
        }
        let call = ModelCallEvent {
            provider: provider_name,
            request,
            request_hash,
            compile_seq: None,
            messages: Some(messages),
        };
        events.push(new_event(step, at, &call)?);
        self.append_decided(&run, &engine, events)?;
        let ModelCallEvent {
            request,
            request_hash,
            messages,
            ..
        } = call;
        Ok(AllowedChat {
            run,
            step,
            request,
            request_hash,
            model_decision,
            messages: messages.unwrap_or_default(),
        })
    }

    /// Forwards an allowed call to the provider and records its answer (`model_output`) or
    /// its failure (`error`).
    pub fn complete_chat(&self, allowed: AllowedChat) -> Result<ChatOutcome, RuntimeError> {
        let started = std::time::Instant::now();
        let answer = self.provider().complete(&allowed.request);
        self.record_answer(allowed, answer, started.elapsed())
    }

    /// Like [`Runtime::complete_chat`], reporting each piece of the answer's text to
    /// `on_delta` as the provider streams it. The answer is recorded once it is whole, the
    /// same `model_output` a completed call records; `on_delta` cannot stop the call, so a
    /// caller that has gone away still gets its call recorded.
    pub fn stream_chat(
        &self,
        allowed: AllowedChat,
        on_delta: &mut dyn FnMut(&ChatDelta<'_>),
    ) -> Result<ChatOutcome, RuntimeError> {
        let started = std::time::Instant::now();
        let answer = self.provider().stream(&allowed.request, on_delta);
        self.record_answer(allowed, answer, started.elapsed())
    }

    /// Records a model's answer, with how long the model took (`took`, counted for the
    /// overview), or its failure.
    fn record_answer(
        &self,
        allowed: AllowedChat,
        answer: Result<ChatResponse, ProviderError>,
        took: std::time::Duration,
    ) -> Result<ChatOutcome, RuntimeError> {
        let AllowedChat {
            run,
            step,
            request: _,
            request_hash,
            model_decision,
            messages,
        } = allowed;
        let response = match answer {
            Ok(r) => r,
            Err(e) => {
                let error = ErrorEvent {
                    message: e.to_string(),
                    request_hash: Some(request_hash),
                };
                self.recorder()
                    .append_event(&run, step, &self.now_rfc3339(), &error)?;
                return Err(RuntimeError::Upstream(e));
            }
        };
        let output = ModelOutputEvent {
            request_hash,
            response,
        };
        let event = new_event(step, self.now_rfc3339(), &output)
            .map_err(RuntimeError::Store)?
            .timed(crate::recorder::buckets::Timed::Chat, took);
        let appended = self.recorder().append_new(&run, event)?;
        let ModelOutputEvent {
            request_hash,
            response,
        } = output;
        Ok(ChatOutcome {
            response,
            run,
            request_hash,
            model_decision,
            messages,
            seq: appended.seq,
        })
    }

    /// Records a refused model call: the model decision with the call it decided (no
    /// `model_call` event follows, so this is where replay and simulation find it) and, when a
    /// message was refused, its decision, and an error event saying why.
    #[expect(clippy::too_many_arguments, reason = "what one refusal records")]
    fn record_refusal(
        &self,
        run: &str,
        engine: &RunPolicy,
        step: u32,
        call: &ModelCall,
        model: &EnvelopeDecision,
        data: Option<&EnvelopeDecision>,
        message: &str,
    ) -> Result<Value, RuntimeError> {
        let at = self.now_rfc3339();
        let refused = DecisionEvent {
            refused_model_call: Some(call.clone()),
            ..DecisionEvent::new(model, model.effect)
        };
        let mut events = vec![new_event(step, at.clone(), &refused)?];
        if let Some(d) = data {
            events.push(new_event(
                step,
                at.clone(),
                &DecisionEvent::new(d, d.effect),
            )?);
        }
        let error = ErrorEvent {
            message: message.to_string(),
            request_hash: None,
        };
        events.push(new_event(step, at, &error)?);
        let appended = self.append_decided(run, engine, events)?;
        // The receipt is the refusing decision: the model's, or the data decision after it.
        let decided = appended.get(usize::from(data.is_some()));
        Ok(serde_json::json!({
            "run": run,
            "seq": decided.map(|a| a.seq),
            "hash": decided.map(|a| a.hash.as_str()),
        }))
    }
}

impl ChatOutcome {
    /// The completion in OpenAI's shape, with a `tollgate` member naming the run, the receipt
    /// and what policy did (clients ignore members they do not know).
    pub fn to_openai_json(&self) -> Value {
        let mut body = self.response.to_openai_json();
        if let Some(obj) = body.as_object_mut() {
            obj.insert("tollgate".into(), self.tollgate_member());
        }
        body
    }

    /// The `tollgate` member: the run, the `model_output` event's sequence number (the
    /// receipt), the request hash, the model rules and what policy did to each message.
    pub fn tollgate_member(&self) -> Value {
        json!({
            "run": self.run,
            "seq": self.seq,
            "request_hash": self.request_hash,
            "model_rules": self.model_decision.rules,
            "messages": self.messages,
        })
    }
}

/// The strings of a chat request other than its messages' text and their calls' arguments
/// (which the messages' own items cover), each with the way to replace it.
fn request_field_strings(request: &mut ChatRequest) -> Vec<&mut String> {
    let mut out = Vec::new();
    for m in &mut request.messages {
        out.push(&mut m.role);
        if let Some(name) = m.name.as_mut() {
            out.push(name);
        }
        if let Some(id) = m.tool_call_id.as_mut() {
            out.push(id);
        }
        for call in &mut m.tool_calls {
            out.push(&mut call.id);
            out.push(&mut call.kind);
            out.push(&mut call.function.name);
        }
    }
    out
}

/// Whether a detector finds a secret in a field of the request other than its messages'
/// text and their calls' arguments: the strings [`request_field_strings`] names, and every
/// string and key of the other fields.
/// (Takes the request mutably only to share [`request_field_strings`]: nothing is changed,
/// nor copied, on a chat call's path.)
fn request_fields_hold_secret(request: &mut ChatRequest) -> bool {
    object_holds_secret(&request.extra)
        || request_field_strings(request)
            .iter()
            .any(|s| !find_spans(s).is_empty())
}

/// Replaces every secret span of those fields by `rule`'s marker.
fn redact_request_fields(request: &mut ChatRequest, rule: &str) {
    for s in request_field_strings(request) {
        if !find_spans(s).is_empty() {
            *s = redact(s, BodyPart::Content, rule).text;
        }
    }
    if let (Value::Object(extra), _) = redact_secrets(&Value::Object(request.extra.clone()), rule) {
        request.extra = extra;
    }
}

#[cfg(test)]
mod tests;
