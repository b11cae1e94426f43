//! The log of what approvers and admins did (`audit_log`): who (the credential, its kind and
//! name), what (the method), on what (the path), and the answer's status. Agents' actions are
//! recorded in their runs' chains instead.

use crate::store::params;
use serde::Serialize;

use super::Principal;
use crate::store::{Store, StoreError};

/// One logged action.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AuditEntry {
    /// Its place in the log (increasing).
    pub seq: i64,
    /// RFC 3339.
    pub at: String,
    /// The credential's id.
    pub principal: String,
    /// Its kind.
    pub kind: String,
    /// Its name.
    pub name: String,
    /// The method (`POST`) or command (`tokens create`).
    pub action: String,
    /// The path or what the command named.
    pub target: String,
    /// The answer's HTTP status (0 for a command).
    pub status: u16,
}

const INSERT: &str = "INSERT INTO audit_log (at, principal, kind, name, action, target, status)
                      VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)";

/// Logs one action.
pub async fn record(
    store: &Store,
    who: &Principal,
    at: String,
    action: String,
    target: String,
    status: u16,
) -> Result<(), StoreError> {
    let who = who.clone();
    store
        .transact_async(move |c| {
            c.execute(
                "INSERT INTO audit_log (at, principal, kind, name, action, target, status)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                params![
                    at,
                    who.id,
                    who.kind.as_str(),
                    who.name,
                    action,
                    target,
                    status
                ],
            )?;
            Ok::<_, StoreError>(())
        })
        .await
}

/// Logs one action of a command (blocking).
pub fn record_blocking(
    store: &Store,
    who: &Principal,
    at: String,
    action: String,
    target: String,
) -> Result<(), StoreError> {
    let who = who.clone();
    store.write(move |c| {
        c.execute(
            INSERT,
            params![at, who.id, who.kind.as_str(), who.name, action, target, 0],
        )?;
        Ok(())
    })
}

/// Up to `limit` entries before `before` (a `seq`), newest first.
pub fn page(store: &Store, before: Option<i64>, limit: u32) -> Result<Vec<AuditEntry>, StoreError> {
    store.read(move |c| {
        let mut stmt = c.prepare_cached(
            "SELECT seq, at, principal, kind, name, action, target, status FROM audit_log
             WHERE seq < ?1 ORDER BY seq DESC LIMIT ?2",
        )?;
        let rows = stmt.query_map(params![before.unwrap_or(i64::MAX), limit], |r| {
            Ok(AuditEntry {
                seq: r.get(0)?,
                at: r.get(1)?,
                principal: r.get(2)?,
                kind: r.get(3)?,
                name: r.get(4)?,
                action: r.get(5)?,
                target: r.get(6)?,
                status: r.get(7)?,
            })
        })?;
        rows.collect::<Result<Vec<_>, _>>()
    })
}
