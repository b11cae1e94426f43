//! One error type for every route: `{"error": {"code", "message", "details"}}` with the right
//! status, and a JSON extractor whose rejections use the same body. A 5xx body says only that
//! something failed; the detail goes to the log (stderr).

use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::extract::{FromRequest, FromRequestParts};
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::codes::{ErrorCode, http as codes};
use crate::recorder::RecorderError;
use crate::runtime::RuntimeError;
use crate::store::StoreError;

/// An error answered to an HTTP client. Its code comes from the one table of codes
/// ([`crate::codes::http`], [`crate::codes::case_refusals`]), and with it its status.
#[derive(Debug)]
pub enum ApiError {
    /// An error with a code of the table, answered with the code's status.
    Coded {
        /// The code (its status, summary and remedy are the table's).
        code: ErrorCode,
        /// What is wrong and how to fix it, for this request.
        message: String,
        /// Structured detail (the denying decision with its receipt, diagnostics with line and
        /// column...).
        details: Value,
    },
    /// 401: no bearer token.
    Unauthorized,
    /// 401: a bearer token that is no credential here (unknown, revoked or expired).
    WrongToken,
    /// 404.
    NotFound(String),
    /// 409: conflicts with stored state.
    Conflict(String),
    /// 413: the body is larger than the limit.
    PayloadTooLarge {
        /// The limit in bytes.
        limit: usize,
    },
    /// 415: not JSON.
    UnsupportedMediaType(String),
    /// 429: rate limited.
    TooManyRequests {
        /// Why.
        message: String,
        /// Seconds until a retry may succeed.
        retry_after: u64,
    },
    /// 502: the upstream model provider failed (its message carries no secret).
    Upstream(String),
    /// 500: logged, never shown.
    Internal(String),
}

impl ApiError {
    /// An error with a code of the table and no details.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> ApiError {
        ApiError::Coded {
            code,
            message: message.into(),
            details: Value::Null,
        }
    }

    /// An error with a code of the table and structured details.
    pub fn with_details(code: ErrorCode, message: impl Into<String>, details: Value) -> ApiError {
        ApiError::Coded {
            code,
            message: message.into(),
            details,
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, body, retry_after) = self.into_parts();
        let mut response = (status, Json(body)).into_response();
        if let Some(seconds) = retry_after
            && let Ok(value) = HeaderValue::from_str(&seconds.to_string())
        {
            response.headers_mut().insert(header::RETRY_AFTER, value);
        }
        response
    }
}

impl ApiError {
    /// The error's body, `{"error": {"code", "message", "details"}}`, without a status: what
    /// a stream that has already answered 200 sends as its last event. A 500's detail goes to
    /// the log, as for a response.
    pub fn into_body(self) -> Value {
        self.into_parts().1
    }

    /// The status the error answers with (a 500's detail goes to the log, as for a response):
    /// what the dashboard's pages answer for the same error.
    pub(crate) fn status(self) -> StatusCode {
        self.into_parts().0
    }

    /// The status, the body and the `Retry-After` seconds (if any).
    fn into_parts(self) -> (StatusCode, Value, Option<u64>) {
        let (code, message, details, retry_after) = match self {
            ApiError::Coded {
                code,
                message,
                details,
            } => (code, message, details, None),
            ApiError::Unauthorized => (
                codes::UNAUTHORIZED,
                "a bearer token is required: send `Authorization: Bearer TOKEN` (the token is in .tollgate/token, or TOLLGATE_TOKEN)".to_string(),
                Value::Null,
                None,
            ),
            // The same code as without a token: a client handles both alike. The message does
            // not say whether the token was unknown, revoked or expired.
            ApiError::WrongToken => (
                codes::UNAUTHORIZED,
                "the bearer token sent is not a credential of this gateway (unknown, revoked or expired)\n  help: send the owner's token (.tollgate/token, or TOLLGATE_TOKEN) or one made by `tollgate tokens create`; `tollgate tokens list` shows which are revoked or expired".to_string(),
                Value::Null,
                None,
            ),
            ApiError::NotFound(message) => (codes::NOT_FOUND, message, Value::Null, None),
            ApiError::Conflict(message) => (codes::CONFLICT, message, Value::Null, None),
            ApiError::PayloadTooLarge { limit } => (
                codes::PAYLOAD_TOO_LARGE,
                format!("the request body is larger than {limit} bytes"),
                json!({ "limit": limit }),
                None,
            ),
            ApiError::UnsupportedMediaType(message) => {
                (codes::UNSUPPORTED_MEDIA_TYPE, message, Value::Null, None)
            }
            ApiError::TooManyRequests {
                message,
                retry_after,
            } => (
                codes::RATE_LIMITED,
                message,
                json!({ "retry_after": retry_after }),
                Some(retry_after),
            ),
            ApiError::Upstream(message) => (codes::UPSTREAM_ERROR, message, Value::Null, None),
            ApiError::Internal(detail) => {
                eprintln!("tollgate: internal error: {detail}");
                (
                    codes::INTERNAL,
                    "the gateway failed to handle the request; see its log".to_string(),
                    Value::Null,
                    None,
                )
            }
        };
        // Every code of the table has a valid status (`codes::tests`).
        let status = StatusCode::from_u16(code.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let code = code.code;
        let body = json!({ "error": { "code": code, "message": message, "details": details } });
        (status, body, retry_after)
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::NotFound(m) => ApiError::NotFound(m),
            StoreError::Invalid(m) => ApiError::new(codes::INVALID, m),
            StoreError::Duplicate(m) => ApiError::Conflict(m),
            other => ApiError::Internal(other.to_string()),
        }
    }
}

impl From<RecorderError> for ApiError {
    fn from(e: RecorderError) -> Self {
        match e {
            RecorderError::Store(s) => s.into(),
            RecorderError::Invalid(m) => ApiError::new(codes::INVALID_RECORD, m),
            RecorderError::UnknownRun(run) => ApiError::NotFound(format!("no run `{run}`")),
        }
    }
}

impl From<crate::replay::ReplayError> for ApiError {
    fn from(e: crate::replay::ReplayError) -> Self {
        use crate::replay::ReplayError as R;
        match e {
            R::Recorder(r) => r.into(),
            R::Store(s) => s.into(),
            R::Scenario(s) => ApiError::Coded {
                code: codes::INVALID_SCENARIO,
                message: s.message,
                details: json!({ "mutation": s.mutation }),
            },
            R::NotFound(m) => ApiError::NotFound(m),
            e @ (R::Baseline { .. } | R::Envelopes { .. } | R::Policy { .. }) => {
                ApiError::Conflict(e.to_string())
            }
            R::Job(m) | R::Internal(m) => ApiError::Internal(m),
        }
    }
}

impl From<crate::regress::RegressError> for ApiError {
    fn from(e: crate::regress::RegressError) -> Self {
        use crate::regress::RegressError as R;
        match e {
            R::CaseFile {
                path,
                line,
                detail,
                help,
            } => ApiError::Coded {
                code: codes::INVALID_CASE,
                message: format!("{detail}\n  help: {help}"),
                details: json!({ "path": path, "line": line }),
            },
            e @ R::Bundle { .. } => ApiError::new(codes::INVALID_BUNDLE, e.to_string()),
            R::Unsafe(m) => ApiError::new(codes::UNSAFE_FIXTURE, m),
            R::Invalid(m) => ApiError::new(codes::INVALID, m),
            R::Replay(r) => r.into(),
            R::Store(s) => s.into(),
            R::Conflict(m) => ApiError::Conflict(m),
            R::NotFound(m) => ApiError::NotFound(m),
            e @ R::Io { .. } => ApiError::Internal(e.to_string()),
        }
    }
}

impl From<RuntimeError> for ApiError {
    fn from(e: RuntimeError) -> Self {
        match e {
            RuntimeError::Store(s) => s.into(),
            RuntimeError::Recorder(r) => r.into(),
            RuntimeError::Policy(p) => match p {
                crate::policy::PolicyStoreError::Envelopes(errors) => ApiError::Coded {
                    code: codes::INVALID_ENVELOPE,
                    message: errors.render(),
                    details: serde_json::to_value(errors.located()).unwrap_or(Value::Null),
                },
                crate::policy::PolicyStoreError::Version(m) => ApiError::Conflict(m),
                crate::policy::PolicyStoreError::NotFound(m) => ApiError::NotFound(m),
                crate::policy::PolicyStoreError::Store(s) => s.into(),
            },
            RuntimeError::Envelopes(errors) => ApiError::Coded {
                code: codes::INVALID_ENVELOPE,
                message: errors.render(),
                details: serde_json::to_value(errors.located()).unwrap_or(Value::Null),
            },
            RuntimeError::Invalid(m) => ApiError::new(codes::INVALID, m),
            RuntimeError::NotFound(m) => ApiError::NotFound(m),
            RuntimeError::Conflict(m) => ApiError::Conflict(m),
            RuntimeError::Denied {
                message,
                decision,
                receipt,
            } => {
                let mut details = serde_json::to_value(&decision).unwrap_or(Value::Null);
                if let (Some(obj), Some(receipt)) = (details.as_object_mut(), receipt) {
                    obj.insert("receipt".to_owned(), receipt);
                }
                ApiError::Coded {
                    code: codes::POLICY_DENIED,
                    message,
                    details,
                }
            }
            RuntimeError::Forbidden(message) => ApiError::Coded {
                code: codes::FORBIDDEN,
                message,
                details: Value::Null,
            },
            RuntimeError::Refused(refusal) => ApiError::Coded {
                code: refusal.code(),
                message: refusal.to_string(),
                details: Value::Null,
            },
            RuntimeError::Upstream(e) => match e {
                crate::providers::ProviderError::RateLimited { retry_after } => {
                    ApiError::TooManyRequests {
                        message: e.to_string(),
                        retry_after: retry_after.map_or(1, |d| d.as_secs().max(1)),
                    }
                }
                other => ApiError::Upstream(other.to_string()),
            },
            RuntimeError::Evaluation(m) => ApiError::Internal(m),
            // The tool-call handler reads the token again and retries; reached only if a
            // caller does not.
            e @ RuntimeError::CredentialsChanged(_) => ApiError::Conflict(e.to_string()),
        }
    }
}

/// `Json<T>` whose rejections are [`ApiError`]s: malformed JSON is a 400 saying where, a body
/// of the wrong shape a 422 saying which field, a body over the limit a 413.
#[derive(Debug, Clone, Copy, Default)]
pub struct ApiJson<T>(pub T);

impl<S, T> FromRequest<S> for ApiJson<T>
where
    T: serde::de::DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(req: axum::extract::Request, state: &S) -> Result<Self, Self::Rejection> {
        if !json_content_type(req.headers()) {
            return Err(ApiError::UnsupportedMediaType(
                "send the body as JSON with `Content-Type: application/json`".into(),
            ));
        }
        // The limit the gateway was started with (`--body-limit`), which `check_body_size`
        // hands on; without that layer (a router built alone), axum's default applies.
        let limit = req
            .extensions()
            .get::<BodyLimit>()
            .map_or(super::DEFAULT_BODY_LIMIT, |l| l.0);
        let bytes = axum::body::Bytes::from_request(req, state)
            .await
            .map_err(|e| json_rejection(JsonRejection::BytesRejection(e), limit))?;
        // Every body the gateway takes is an object: serde would read a struct from an array
        // too, field by field in order (`[null, null]` was a case request), so arrays are
        // refused before they reach it.
        if bytes.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[') {
            return Err(ApiError::new(
                codes::INVALID_BODY,
                "the body is a JSON array: send an object with the documented fields",
            ));
        }
        if let Some(at) = super::duplicate_keys::first_duplicate(&bytes) {
            return Err(ApiError::new(
                codes::DUPLICATE_KEY,
                format!(
                    "the body gives the key at `{at}` twice: send each key once (JSON parsers \
                     disagree on which of the two counts)"
                ),
            ));
        }
        match axum::Json::<T>::from_bytes(&bytes) {
            Ok(axum::Json(value)) => Ok(ApiJson(value)),
            // JSON Schema's `integer` admits `3.0`, and so do the clients generated from the
            // document: read again with integral numbers as integers (`3.5` stays refused).
            Err(rejection) if rejection.body_text().contains("floating point") => {
                match integral(&bytes).map(|b| axum::Json::<T>::from_bytes(&b)) {
                    Some(Ok(axum::Json(value))) => Ok(ApiJson(value)),
                    _ => Err(json_rejection(rejection, limit)),
                }
            }
            Err(rejection) => Err(json_rejection(rejection, limit)),
        }
    }
}

/// The body with every integral floating-point number (`3.0`, `1e3`) written as an integer,
/// when it has one.
fn integral(bytes: &[u8]) -> Option<Vec<u8>> {
    fn walk(v: &mut serde_json::Value, changed: &mut bool) {
        match v {
            serde_json::Value::Number(n) if n.is_f64() => {
                if let Some(f) = n.as_f64()
                    && f.fract() == 0.0
                    && f.abs() < 9.0e15
                {
                    #[expect(clippy::cast_possible_truncation, reason = "integral, below 2^53")]
                    let i = f as i64;
                    *v = serde_json::Value::from(i);
                    *changed = true;
                }
            }
            serde_json::Value::Array(items) => items.iter_mut().for_each(|i| walk(i, changed)),
            serde_json::Value::Object(map) => map.values_mut().for_each(|i| walk(i, changed)),
            _ => {}
        }
    }
    let mut value: serde_json::Value = serde_json::from_slice(bytes).ok()?;
    let mut changed = false;
    walk(&mut value, &mut changed);
    changed.then(|| value.to_string().into_bytes())
}

/// An optional body: none when the request has no content type (an empty POST), else read as
/// [`ApiJson`] reads it.
impl<S, T> axum::extract::OptionalFromRequest<S> for ApiJson<T>
where
    T: serde::de::DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(
        req: axum::extract::Request,
        state: &S,
    ) -> Result<Option<Self>, Self::Rejection> {
        if !req.headers().contains_key(header::CONTENT_TYPE) {
            return Ok(None);
        }
        <ApiJson<T> as FromRequest<S>>::from_request(req, state)
            .await
            .map(Some)
    }
}

/// `application/json`, or another `application/…+json`, with any parameters.
fn json_content_type(headers: &axum::http::HeaderMap) -> bool {
    let Some(value) = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
    else {
        return false;
    };
    let essence = value
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    essence == "application/json"
        || (essence.starts_with("application/") && essence.ends_with("+json"))
}

/// The body limit in force for a request, in bytes: put in its extensions by
/// `security::check_body_size`, so that a 413 names the limit the gateway was started with.
#[derive(Debug, Clone, Copy)]
pub struct BodyLimit(pub usize);

fn json_rejection(rejection: JsonRejection, limit: usize) -> ApiError {
    match rejection {
        JsonRejection::JsonSyntaxError(e) => ApiError::new(
            codes::MALFORMED_JSON,
            format!("the body is not valid JSON: {}", e.body_text()),
        ),
        JsonRejection::JsonDataError(e) => ApiError::new(codes::INVALID_BODY, e.body_text()),
        JsonRejection::MissingJsonContentType(_) => ApiError::UnsupportedMediaType(
            "send the body as JSON with `Content-Type: application/json`".into(),
        ),
        JsonRejection::BytesRejection(e) => {
            if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
                ApiError::PayloadTooLarge { limit }
            } else {
                ApiError::new(codes::UNREADABLE_BODY, e.body_text())
            }
        }
        other => ApiError::new(codes::UNREADABLE_BODY, other.body_text()),
    }
}

/// `Query<T>` whose rejection is an [`ApiError`]: a query string that does not read as the
/// parameters (a number that is not one, a repeated value) is a 422 `invalid_query` saying which.
#[derive(Debug, Clone, Copy, Default)]
pub struct ApiQuery<T>(pub T);

impl<S, T> FromRequestParts<S> for ApiQuery<T>
where
    T: serde::de::DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        match axum::extract::Query::<T>::from_request_parts(parts, state).await {
            Ok(axum::extract::Query(value)) => Ok(ApiQuery(value)),
            Err(rejection) => Err(ApiError::new(
                codes::INVALID_QUERY,
                format!(
                    "the query string cannot be read: {}",
                    rejection
                        .body_text()
                        .trim_start_matches("Failed to deserialize query string: ")
                ),
            )),
        }
    }
}

/// `Path<T>` whose rejection is an [`ApiError`]: a path segment that does not read as its
/// parameter (a version that is not a number) is a 422 `invalid_path`.
#[derive(Debug, Clone, Copy, Default)]
pub struct ApiPath<T>(pub T);

impl<S, T> FromRequestParts<S> for ApiPath<T>
where
    T: serde::de::DeserializeOwned + Send,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        use axum::extract::rejection::PathRejection;
        match axum::extract::Path::<T>::from_request_parts(parts, state).await {
            Ok(axum::extract::Path(value)) => Ok(ApiPath(value)),
            Err(PathRejection::FailedToDeserializePathParams(e)) => Err(ApiError::new(
                codes::INVALID_PATH,
                format!("the path cannot be read: {}", e.body_text()),
            )),
            // The route and its handler disagree: the gateway's fault, not the client's.
            Err(other) => Err(ApiError::Internal(other.body_text())),
        }
    }
}

impl<T: serde::Serialize> IntoResponse for ApiJson<T> {
    fn into_response(self) -> Response {
        axum::Json(self.0).into_response()
    }
}
