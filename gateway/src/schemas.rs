//! OpenAPI schemas for values that travel as plain text and are checked by hand (a level, a
//! state, an effect), so the document names the values there are. Shared by the HTTP routes
//! and the runtime's request types. utoipa drops a field's doc comment when its schema is
//! given by a function, so each schema carries its own description.

use utoipa::openapi::Object;
use utoipa::openapi::schema::{SchemaType, Type};

/// A string schema, described, that takes only `values`.
pub fn one_of(description: &str, values: &[&str]) -> Object {
    utoipa::openapi::ObjectBuilder::new()
        .schema_type(Type::String)
        .description(Some(description))
        .enum_values(Some(values.iter().copied()))
        .build()
}

/// A sensitivity level, described: `public`, `internal`, `confidential` or `secret`.
pub fn level(description: &str) -> Object {
    one_of(
        description,
        &["public", "internal", "confidential", "secret"],
    )
}

/// A decision's effect, described.
pub fn effect(description: &str) -> Object {
    one_of(
        description,
        &[
            "allow",
            "deny",
            "redact",
            "require_approval",
            "rate_limited",
        ],
    )
}

/// What a decision is about, described.
pub fn request_kind(description: &str) -> Object {
    one_of(
        description,
        &["tool", "context", "model", "memory", "handoff"],
    )
}

/// The same schema that also takes null (an optional field of a body).
pub fn or_null(mut schema: Object) -> Object {
    if let SchemaType::Type(t) = schema.schema_type {
        schema.schema_type = SchemaType::from_iter([t, Type::Null]);
    }
    if let Some(values) = schema.enum_values.as_mut() {
        values.push(serde_json::Value::Null);
    }
    schema
}
