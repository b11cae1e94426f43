//! Artifacts: bodies stored once under their content hash (blake3 hex) with a media type.
//! Event payloads too large to keep inline and envelope YAML versions live here; whoever
//! stores a body keeps its hash and joins on it to read it back.

use crate::store::{Connection, params};

use super::StoreError;
use crate::clock::now_rfc3339;

/// Stores a body once under its content hash.
pub(crate) fn store(
    c: &Connection,
    hash: &str,
    media_type: &str,
    body: &[u8],
) -> Result<(), StoreError> {
    c.prepare_cached(
        "INSERT INTO artifacts (hash, media_type, size, body, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT DO NOTHING",
    )?
    .execute(params![
        hash,
        media_type,
        body.len() as i64,
        body,
        now_rfc3339()
    ])?;
    Ok(())
}
