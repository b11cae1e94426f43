//! Tool pinning, the defence against an upstream server changing a tool under an agent (a
//! "rug pull": a description rewritten to carry instructions, a schema widened). A tool's
//! definition — name, title, description, input and output schemas, annotations — is hashed
//! (blake3 of its canonical JSON) when first seen and accepted on that first use. A different
//! definition seen later is held beside the accepted one; until a person accepts it
//! (`tollgate mcp pins accept SERVER.TOOL`), clients are shown the accepted definition and the
//! tool's calls are refused. Pins are kept per server name and tool name in the store
//! (`mcp_tool_pins`), so every session and every gateway on the store sees the same.

use crate::store::{Connection, OptionalExtension, params};
use rmcp::model::Tool;
use serde::Serialize;
use serde_json::{Value, json};
use tollgate_rules::canonical::canonical_json;

use crate::store::{Store, StoreError};

/// A tool's pin.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolPin {
    /// The server's name in the configuration.
    pub server: String,
    /// The tool's name as the server gives it.
    pub tool: String,
    /// The accepted definition's hash.
    pub hash: String,
    /// The accepted definition.
    pub definition: Value,
    /// Who accepted it (`first use` for the first definition seen).
    pub accepted_by: String,
    /// When (RFC 3339).
    pub accepted_at: String,
    /// A different definition seen since, waiting to be accepted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub changed: Option<Changed>,
}

/// A definition seen after the accepted one, not accepted yet.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Changed {
    /// Its hash.
    pub hash: String,
    /// The definition.
    pub definition: Value,
    /// When it was first seen (RFC 3339).
    pub at: String,
}

impl ToolPin {
    /// `SERVER.TOOL`.
    pub fn name(&self) -> String {
        format!("{}.{}", self.server, self.tool)
    }
}

/// What observing a definition found.
#[derive(Debug, Clone, PartialEq)]
pub enum Seen {
    /// The tool was not pinned: this definition is now, accepted on first use.
    First,
    /// The accepted definition.
    Same,
    /// A definition other than the accepted one (new, or the one already waiting).
    Changed {
        /// Whether it was seen for the first time now (and so recorded now).
        new: bool,
    },
}

/// The parts of a tool that are pinned, as MCP writes them (`name`, `title`, `description`,
/// `inputSchema`, `outputSchema`, `annotations`); icons and `_meta` are not.
pub fn definition(tool: &Tool) -> Value {
    let mut value = serde_json::to_value(tool).unwrap_or_else(|_| json!({"name": tool.name}));
    if let Value::Object(map) = &mut value {
        map.retain(|k, _| PINNED.contains(&k.as_str()));
    }
    value
}

const PINNED: [&str; 6] = [
    "name",
    "title",
    "description",
    "inputSchema",
    "outputSchema",
    "annotations",
];

/// The fields of two definitions that differ, as compact JSON: `(field, before, after)`, a
/// field one side lacks shown as `(none)`.
pub fn differences(before: &Value, after: &Value) -> Vec<(String, String, String)> {
    let keys: std::collections::BTreeSet<&String> = before
        .as_object()
        .into_iter()
        .chain(after.as_object())
        .flat_map(|m| m.keys())
        .collect();
    keys.into_iter()
        .filter(|k| before.get(k.as_str()) != after.get(k.as_str()))
        .map(|k| {
            let show = |v: Option<&Value>| v.map_or("(none)".to_string(), Value::to_string);
            (
                k.clone(),
                show(before.get(k.as_str())),
                show(after.get(k.as_str())),
            )
        })
        .collect()
}

/// The tool a pinned definition describes.
pub fn tool_of(definition: &Value) -> Option<Tool> {
    serde_json::from_value(definition.clone()).ok()
}

/// A definition's hash: blake3 of its canonical JSON.
pub fn hash(definition: &Value) -> String {
    blake3::hash(canonical_json(definition).as_bytes())
        .to_hex()
        .to_string()
}

/// Observes `tool` of `server` as listed now: pins it on first use, or holds a different
/// definition as changed. One write.
pub fn observe(
    store: &Store,
    server: &str,
    tool: &Tool,
    at: &str,
) -> Result<(Seen, ToolPin), StoreError> {
    let (server, name, at) = (server.to_string(), tool.name.to_string(), at.to_string());
    let definition = definition(tool);
    let hash = hash(&definition);
    // Every listing observes every tool: the usual answer (the accepted definition, nothing
    // waiting) is a read, and only a new or changed definition takes the writer.
    let (s, n, h) = (server.clone(), name.clone(), hash.clone());
    if let Some(pin) = store.read(move |c| load(c, &s, &n))?
        && pin.hash == h
        && pin.changed.is_none()
    {
        return Ok((Seen::Same, pin));
    }
    store.write(move |c| {
        let Some(pin) = load(c, &server, &name)? else {
            let text = serde_json::to_string(&definition).map_err(StoreError::corrupt)?;
            c.execute(
                "INSERT INTO mcp_tool_pins (server, tool, hash, definition, accepted_by, accepted_at)
                 VALUES (?1, ?2, ?3, ?4, 'first use', ?5)",
                params![server, name, hash, text, at],
            )?;
            let pin = load(c, &server, &name)?
                .ok_or_else(|| StoreError::Invalid("a pin just written is gone".into()))?;
            return Ok((Seen::First, pin));
        };
        if pin.hash == hash {
            if pin.changed.is_some() {
                // The server went back to the accepted definition: nothing waits any more.
                c.execute(
                    "UPDATE mcp_tool_pins SET changed_hash = NULL, changed_definition = NULL,
                     changed_at = NULL WHERE server = ?1 AND tool = ?2",
                    params![server, name],
                )?;
                let pin = load(c, &server, &name)?.unwrap_or(pin);
                return Ok((Seen::Same, pin));
            }
            return Ok((Seen::Same, pin));
        }
        if pin.changed.as_ref().is_some_and(|ch| ch.hash == hash) {
            return Ok((Seen::Changed { new: false }, pin));
        }
        let text = serde_json::to_string(&definition).map_err(StoreError::corrupt)?;
        c.execute(
            "UPDATE mcp_tool_pins SET changed_hash = ?3, changed_definition = ?4, changed_at = ?5
             WHERE server = ?1 AND tool = ?2",
            params![server, name, hash, text, at],
        )?;
        let pin = load(c, &server, &name)?
            .ok_or_else(|| StoreError::Invalid("a pin just written is gone".into()))?;
        Ok((Seen::Changed { new: true }, pin))
    })
}

/// A tool's pin, if it has one.
pub fn get(store: &Store, server: &str, tool: &str) -> Result<Option<ToolPin>, StoreError> {
    let (server, tool) = (server.to_string(), tool.to_string());
    store.read(move |c| load(c, &server, &tool))
}

/// Every pin, by server and tool; with `changed_only`, those waiting for acceptance.
pub fn list(store: &Store, changed_only: bool) -> Result<Vec<ToolPin>, StoreError> {
    store.read(move |c| {
        let mut stmt = c.prepare(
            "SELECT server, tool FROM mcp_tool_pins
             WHERE ?1 = 0 OR changed_hash IS NOT NULL ORDER BY server, tool",
        )?;
        let keys = stmt
            .query_map([i64::from(changed_only)], |r| {
                Ok((r.get::<String>(0)?, r.get::<String>(1)?))
            })?
            .collect::<Result<Vec<_>, _>>()?;
        keys.iter()
            .filter_map(|(s, t)| load(c, s, t).transpose())
            .collect()
    })
}

/// Why a pin could not be accepted.
#[derive(Debug, thiserror::Error)]
pub enum AcceptError {
    /// No such pin.
    #[error("no pinned tool `{0}`\n  help: `tollgate mcp pins list` shows the pinned tools")]
    NotFound(String),
    /// Nothing waits to be accepted.
    #[error("tool `{0}` has no changed definition to accept")]
    NothingChanged(String),
    /// The definition waiting is not the one the person reviewed.
    #[error(
        "the changed definition of `{name}` is {waiting}, not {reviewed}: it changed again\n  help: review it again (`tollgate mcp pins list`) and accept that hash"
    )]
    Stale {
        /// `SERVER.TOOL`.
        name: String,
        /// The hash waiting.
        waiting: String,
        /// The hash the caller named.
        reviewed: String,
    },
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Accepts the definition waiting for `server`'s `tool` (only if its hash starts with
/// `reviewed`, when given: the person accepts what they read). One write.
pub fn accept(
    store: &Store,
    server: &str,
    tool: &str,
    reviewed: Option<&str>,
    by: &str,
    at: &str,
) -> Result<ToolPin, AcceptError> {
    let (server, tool) = (server.to_string(), tool.to_string());
    let (reviewed, by, at) = (reviewed.map(str::to_string), by.to_string(), at.to_string());
    store.transact(move |c| {
        let name = format!("{server}.{tool}");
        let pin = load(c, &server, &tool)?.ok_or_else(|| AcceptError::NotFound(name.clone()))?;
        let changed = pin
            .changed
            .ok_or_else(|| AcceptError::NothingChanged(name.clone()))?;
        if let Some(r) = reviewed
            && (r.is_empty() || !changed.hash.starts_with(&r))
        {
            return Err(AcceptError::Stale {
                name,
                waiting: changed.hash,
                reviewed: r,
            });
        }
        c.execute(
            "UPDATE mcp_tool_pins SET hash = changed_hash, definition = changed_definition,
             accepted_by = ?3, accepted_at = ?4, changed_hash = NULL, changed_definition = NULL,
             changed_at = NULL WHERE server = ?1 AND tool = ?2",
            params![server, tool, by, at],
        )?;
        load(c, &server, &tool)?.ok_or_else(|| AcceptError::NotFound(name))
    })
}

fn load(c: &Connection, server: &str, tool: &str) -> Result<Option<ToolPin>, StoreError> {
    let row = c
        .prepare_cached(
            "SELECT hash, definition, accepted_by, accepted_at, changed_hash,
                    changed_definition, changed_at
             FROM mcp_tool_pins WHERE server = ?1 AND tool = ?2",
        )?
        .query_row(params![server, tool], |r| {
            Ok((
                r.get::<String>(0)?,
                r.get::<String>(1)?,
                r.get::<String>(2)?,
                r.get::<String>(3)?,
                r.get::<Option<String>>(4)?,
                r.get::<Option<String>>(5)?,
                r.get::<Option<String>>(6)?,
            ))
        })
        .optional()?;
    let Some((hash, definition, accepted_by, accepted_at, ch, cd, ca)) = row else {
        return Ok(None);
    };
    let changed = match (ch, cd, ca) {
        (Some(hash), Some(d), Some(at)) => Some(Changed {
            hash,
            definition: serde_json::from_str(&d).map_err(StoreError::corrupt)?,
            at,
        }),
        _ => None,
    };
    Ok(Some(ToolPin {
        server: server.to_string(),
        tool: tool.to_string(),
        hash,
        definition: serde_json::from_str(&definition).map_err(StoreError::corrupt)?,
        accepted_by,
        accepted_at,
        changed,
    }))
}

#[cfg(test)]
mod tests;
