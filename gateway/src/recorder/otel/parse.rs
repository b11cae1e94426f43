//! OTLP/JSON → [`Span`]s: the export's structure, ids, times, status and attribute values,
//! checked with the path of whatever is wrong.

use serde_json::{Map, Value};

use super::attributes::{Attributes, parse_attributes};
use super::{DocLocation, OtlpError};

/// One span, its values decoded.
#[derive(Debug, Clone)]
pub(super) struct Span {
    /// `resourceSpans[i].scopeSpans[j].spans[k]`, for messages.
    pub location: String,
    /// 32 lowercase hex digits.
    pub trace_id: String,
    /// 16 lowercase hex digits.
    pub span_id: String,
    /// The parent's span id; `None` for a root.
    pub parent_span_id: Option<String>,
    pub name: String,
    /// Nanoseconds since the Unix epoch.
    pub start: u64,
    /// Nanoseconds since the Unix epoch, never before `start`.
    pub end: u64,
    pub attributes: Attributes,
    /// Span events, by time (ties keep the export's order).
    pub events: Vec<SpanEvent>,
    /// `status.code` is `STATUS_CODE_ERROR`.
    pub status_error: bool,
    /// `status.message`, possibly empty.
    pub status_message: String,
    /// The resource's `service.name`.
    pub service_name: Option<String>,
}

/// A span event (`gen_ai.user.message`, `gen_ai.choice`, `exception`, …).
#[derive(Debug, Clone)]
pub(super) struct SpanEvent {
    pub name: String,
    pub time: u64,
    pub attributes: Attributes,
}

const IDS_HELP: &str = "OTLP/JSON writes `traceId` as 32 and `spanId` as 16 hex digits (not \
                        base64, as the protobuf JSON mapping would); export the trace again \
                        with an OTLP/JSON exporter (for example the collector's `file` exporter)";
const TIME_HELP: &str = "OTLP/JSON writes times as nanoseconds since the Unix epoch in a \
                         decimal string, for example \"1793610000000000000\"";
/// Appends the spans of one OTLP/JSON trace export to `out`.
pub(super) fn collect_spans(
    doc: &Value,
    at: DocLocation,
    out: &mut Vec<Span>,
) -> Result<(), OtlpError> {
    let not_otlp = |reason: &str, help: &str| OtlpError::NotOtlp {
        location: at.whole(),
        reason: reason.to_owned(),
        help: help.to_owned(),
    };
    let Some(object) = doc.as_object() else {
        return Err(not_otlp(
            "it is not a JSON object",
            "an OTLP/JSON trace export is an object: {\"resourceSpans\": [...]}",
        ));
    };
    let resource_spans = match object.get("resourceSpans") {
        Some(Value::Array(list)) => list,
        Some(_) => {
            return Err(not_otlp(
                "`resourceSpans` is not an array",
                "write `resourceSpans` as an array of {\"resource\": …, \"scopeSpans\": […]}",
            ));
        }
        None if object.contains_key("resource_spans") => {
            return Err(not_otlp(
                "it uses snake_case keys (`resource_spans`)",
                "OTLP/JSON uses lowerCamelCase keys (`resourceSpans`, `scopeSpans`, `traceId`); \
                 export with an OTLP/JSON exporter rather than a protobuf text dump",
            ));
        }
        None if object.contains_key("resourceMetrics") || object.contains_key("resourceLogs") => {
            return Err(not_otlp(
                "it holds metrics or logs, not traces",
                "export the traces signal (`resourceSpans`)",
            ));
        }
        None => {
            return Err(not_otlp(
                "it has no `resourceSpans`",
                "an OTLP/JSON trace export looks like {\"resourceSpans\": [{\"resource\": …, \
                 \"scopeSpans\": [{\"scope\": …, \"spans\": […]}]}]}",
            ));
        }
    };
    for (i, resource) in resource_spans.iter().enumerate() {
        let path = format!("resourceSpans[{i}]");
        let resource = as_object(resource, at, &path)?;
        let resource_attributes = parse_attributes(
            resource.get("resource").and_then(|r| r.get("attributes")),
            at,
            &format!("{path}.resource.attributes"),
        )?;
        let service_name = resource_attributes
            .string("service.name")?
            .filter(|name| !name.is_empty())
            .map(str::to_owned);
        // `instrumentationLibrarySpans` is the name before OTLP 0.15; old files still use it.
        let scope_spans = resource
            .get("scopeSpans")
            .or_else(|| resource.get("instrumentationLibrarySpans"));
        for (j, scope) in list(scope_spans, at, &format!("{path}.scopeSpans"))?
            .iter()
            .enumerate()
        {
            let path = format!("{path}.scopeSpans[{j}]");
            let scope = as_object(scope, at, &path)?;
            for (k, span) in list(scope.get("spans"), at, &format!("{path}.spans"))?
                .iter()
                .enumerate()
            {
                let path = format!("{path}.spans[{k}]");
                out.push(parse_span(span, at, &path, service_name.clone())?);
            }
        }
    }
    Ok(())
}

fn malformed(location: String, reason: impl Into<String>, help: impl Into<String>) -> OtlpError {
    OtlpError::Malformed {
        location,
        reason: reason.into(),
        help: help.into(),
    }
}

fn as_object<'a>(
    value: &'a Value,
    at: DocLocation,
    path: &str,
) -> Result<&'a Map<String, Value>, OtlpError> {
    value.as_object().ok_or_else(|| {
        malformed(
            at.at(path),
            "is not a JSON object",
            "see the OTLP/JSON trace export shape in the OpenTelemetry protocol specification",
        )
    })
}

/// An optional array: missing or `null` reads as empty.
fn list<'a>(
    value: Option<&'a Value>,
    at: DocLocation,
    path: &str,
) -> Result<&'a [Value], OtlpError> {
    match value {
        None | Some(Value::Null) => Ok(&[]),
        Some(Value::Array(items)) => Ok(items),
        Some(_) => Err(malformed(
            at.at(path),
            "is not an array",
            "see the OTLP/JSON trace export shape in the OpenTelemetry protocol specification",
        )),
    }
}

fn parse_span(
    value: &Value,
    at: DocLocation,
    path: &str,
    service_name: Option<String>,
) -> Result<Span, OtlpError> {
    let location = at.at(path);
    let span = as_object(value, at, path)?;
    let trace_id = hex_id(span.get("traceId"), "traceId", 32, &location)?
        .ok_or_else(|| malformed(location.clone(), "has no `traceId`", IDS_HELP))?;
    let span_id = hex_id(span.get("spanId"), "spanId", 16, &location)?
        .ok_or_else(|| malformed(location.clone(), "has no `spanId`", IDS_HELP))?;
    let parent_span_id = hex_id(span.get("parentSpanId"), "parentSpanId", 16, &location)?;
    let name = match span.get("name") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(name)) => name.clone(),
        Some(_) => {
            return Err(malformed(
                location,
                "has a `name` that is not a string",
                "write the span name as a JSON string",
            ));
        }
    };
    let start = nanos(
        span.get("startTimeUnixNano"),
        "startTimeUnixNano",
        &location,
    )?
    .ok_or_else(|| malformed(location.clone(), "has no `startTimeUnixNano`", TIME_HELP))?;
    let end = nanos(span.get("endTimeUnixNano"), "endTimeUnixNano", &location)?
        .unwrap_or(start)
        .max(start);
    let attributes = parse_attributes(span.get("attributes"), at, &format!("{path}.attributes"))?;
    let mut events = Vec::new();
    for (e, event) in list(span.get("events"), at, &format!("{path}.events"))?
        .iter()
        .enumerate()
    {
        let path = format!("{path}.events[{e}]");
        let event = as_object(event, at, &path)?;
        let time =
            nanos(event.get("timeUnixNano"), "timeUnixNano", &at.at(&path))?.unwrap_or(start);
        let name = event
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        let attributes =
            parse_attributes(event.get("attributes"), at, &format!("{path}.attributes"))?;
        events.push(SpanEvent {
            name,
            time,
            attributes,
        });
    }
    events.sort_by_key(|event| event.time);
    let (status_error, status_message) = status(span.get("status"), &location)?;
    Ok(Span {
        location,
        trace_id,
        span_id,
        parent_span_id,
        name,
        start,
        end,
        attributes,
        events,
        status_error,
        status_message,
        service_name,
    })
}

/// A hex id of `digits` digits, lowercased; missing or empty reads as `None`.
fn hex_id(
    value: Option<&Value>,
    field: &str,
    digits: usize,
    location: &str,
) -> Result<Option<String>, OtlpError> {
    let text = match value {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::String(text)) if text.is_empty() => return Ok(None),
        Some(Value::String(text)) => text,
        Some(_) => {
            return Err(malformed(
                location.to_owned(),
                format!("has a `{field}` that is not a string"),
                IDS_HELP,
            ));
        }
    };
    if text.len() != digits || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(malformed(
            location.to_owned(),
            format!("has a `{field}` (`{text}`) that is not {digits} hex digits"),
            IDS_HELP,
        ));
    }
    if text.bytes().all(|b| b == b'0') {
        return Err(malformed(
            location.to_owned(),
            format!("has an all-zero `{field}`, which OpenTelemetry reserves for “no id”"),
            IDS_HELP,
        ));
    }
    Ok(Some(text.to_ascii_lowercase()))
}

/// A `…UnixNano` time: a decimal string or a JSON integer.
fn nanos(value: Option<&Value>, field: &str, location: &str) -> Result<Option<u64>, OtlpError> {
    let parsed = match value {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::String(text)) => text.parse::<u64>().ok(),
        Some(Value::Number(n)) => n.as_u64(),
        Some(_) => None,
    };
    match parsed {
        Some(0) | None => Err(malformed(
            location.to_owned(),
            format!("has a `{field}` that is not a time after the Unix epoch"),
            TIME_HELP,
        )),
        Some(n) => Ok(Some(n)),
    }
}

/// `(is error, message)` of a span's `status`. The code may be OTLP/JSON's integer or the
/// enum's name, which some exporters write instead.
fn status(value: Option<&Value>, location: &str) -> Result<(bool, String), OtlpError> {
    let Some(Value::Object(status)) = value else {
        return Ok((false, String::new()));
    };
    let message = status
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let error = match status.get("code") {
        None | Some(Value::Null) => false,
        Some(Value::Number(n)) => match n.as_u64() {
            Some(0 | 1) => false,
            Some(2) => true,
            _ => return Err(bad_status(location, &n.to_string())),
        },
        Some(Value::String(name)) => match name.as_str() {
            "STATUS_CODE_UNSET" | "STATUS_CODE_OK" | "UNSET" | "OK" | "Unset" | "Ok" => false,
            "STATUS_CODE_ERROR" | "ERROR" | "Error" => true,
            _ => return Err(bad_status(location, name)),
        },
        Some(other) => return Err(bad_status(location, &other.to_string())),
    };
    Ok((error, message))
}

fn bad_status(location: &str, code: &str) -> OtlpError {
    malformed(
        location.to_owned(),
        format!("has a `status.code` (`{code}`) that is not a status code"),
        "use 0 (unset), 1 (ok) or 2 (error)",
    )
}
