//! The gateway's tokens: created by an admin for one principal (`tollgate tokens create`),
//! shown once, stored only as a keyed hash of their secret, checked in constant time on every
//! use, revoked at once: every use reads the token's row, except a tool call's, whose write
//! checks instead that no token changed since it was read (`super::verified`).
//!
//! A token reads `tg_ID_SECRET`: `ID` (16 hex digits) names its row (`tok_ID`), `SECRET` (64
//! hex digits, 32 random bytes) is hashed with blake3 in keyed mode under the gateway's token
//! key. The key lives outside the database (`TOLLGATE_TOKEN_KEY`, else `token-key` beside
//! it, owner-only), so a copy of the database alone does not let anyone check guesses.

use std::path::Path;

use crate::store::{Connection, OptionalExtension, params};
use serde::Serialize;
use tollgate_rules::envelope::Level;

use super::{Principal, PrincipalKind, scope_within};
use crate::store::{Store, StoreError};

/// What a token's text starts with.
pub const PREFIX: &str = "tg_";

/// The file beside the database holding the token key.
pub const KEY_FILE: &str = "token-key";

/// The key token secrets are hashed under.
#[derive(Clone)]
pub struct TokenKey([u8; 32]);

impl std::fmt::Debug for TokenKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TokenKey(..)")
    }
}

impl TokenKey {
    /// `TOLLGATE_TOKEN_KEY` (64 hex digits) when given; else the key in `dir/token-key`,
    /// created with 32 random bytes (owner-only) when there is none. Gateways sharing one
    /// database must share the key.
    pub fn resolve(env_key: Option<String>, dir: &Path) -> std::io::Result<TokenKey> {
        if let Some(hex) = env_key.filter(|k| !k.trim().is_empty()) {
            return TokenKey::from_hex(hex.trim()).ok_or_else(|| {
                std::io::Error::other(
                    "TOLLGATE_TOKEN_KEY is not 64 hex digits\n  help: leave it unset to keep the key in `token-key` beside the database",
                )
            });
        }
        let path = dir.join(KEY_FILE);
        if let Ok(existing) = std::fs::read_to_string(&path) {
            return TokenKey::from_hex(existing.trim()).ok_or_else(|| {
                std::io::Error::other(format!(
                    "{} is not 64 hex digits\n  help: restore it from a backup; a new key makes every token unusable",
                    path.display()
                ))
            });
        }
        std::fs::create_dir_all(dir)?;
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes).map_err(|e| std::io::Error::other(e.to_string()))?;
        super::write_private(&path, &hex(&bytes))?;
        Ok(TokenKey(bytes))
    }

    /// A key from its hex text.
    pub fn from_hex(text: &str) -> Option<TokenKey> {
        if text.len() != 64 {
            return None;
        }
        let mut out = [0u8; 32];
        for (i, byte) in out.iter_mut().enumerate() {
            *byte = u8::from_str_radix(text.get(2 * i..2 * i + 2)?, 16).ok()?;
        }
        Some(TokenKey(out))
    }

    fn hash(&self, secret: &str) -> blake3::Hash {
        blake3::keyed_hash(&self.0, secret.as_bytes())
    }
}

/// What an admin asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewToken {
    /// The kind of principal.
    pub kind: PrincipalKind,
    /// The agent's or the person's name.
    pub name: String,
    /// Agents: the scope their runs must lie within.
    pub max_scope: Option<String>,
    /// Agents: the highest clearance of their runs.
    pub max_clearance: Option<Level>,
    /// Milliseconds since the epoch after which the token no longer works.
    pub expires_at_ms: Option<i64>,
}

/// A token as listed: never its secret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TokenRecord {
    /// `tok_…`.
    pub id: String,
    /// The kind of principal.
    pub kind: PrincipalKind,
    /// The agent's or the person's name.
    pub name: String,
    /// Agents: their scope.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_scope: Option<String>,
    /// Agents: their highest clearance.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_clearance: Option<Level>,
    /// RFC 3339.
    pub created_at: String,
    /// The principal that created it.
    pub created_by: String,
    /// Milliseconds since the epoch, when it expires.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires_at_ms: Option<i64>,
    /// RFC 3339, when revoked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revoked_at: Option<String>,
    /// Who revoked it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revoked_by: Option<String>,
}

impl TokenRecord {
    /// The principal it stands for.
    pub fn principal(&self) -> Principal {
        Principal {
            id: self.id.clone(),
            kind: self.kind,
            name: self.name.clone(),
            max_scope: self.max_scope.clone(),
            max_clearance: self.max_clearance,
        }
    }
}

/// Why a token cannot be made or used.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    /// The request is not valid.
    #[error("{0}")]
    Invalid(String),
    /// No such token.
    #[error("no token `{0}`\n  help: `tollgate tokens list` shows them")]
    NotFound(String),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Creates a token; returns its record and its text, which is shown once and never stored.
pub fn create(
    store: &Store,
    key: &TokenKey,
    new: &NewToken,
    created_by: &Principal,
    now: &str,
) -> Result<(TokenRecord, String), TokenError> {
    check_new(new)?;
    let id = random_hex(8);
    let secret = random_hex(32);
    let record = TokenRecord {
        id: format!("tok_{id}"),
        kind: new.kind,
        name: new.name.clone(),
        max_scope: new.max_scope.clone(),
        max_clearance: new.max_clearance,
        created_at: now.to_string(),
        created_by: created_by.id.clone(),
        expires_at_ms: new.expires_at_ms,
        revoked_at: None,
        revoked_by: None,
    };
    let hash = key.hash(&secret).to_hex().to_string();
    let row = record.clone();
    store.write(move |c| {
        c.execute(
            "INSERT INTO tokens (id, kind, name, max_scope, max_clearance, secret_hash,
                                 created_at, created_by, expires_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            params![
                row.id,
                row.kind.as_str(),
                row.name,
                row.max_scope,
                row.max_clearance.map(Level::as_str),
                hash,
                row.created_at,
                row.created_by,
                row.expires_at_ms,
            ],
        )?;
        Ok(())
    })?;
    Ok((record, format!("{PREFIX}{id}_{secret}")))
}

fn check_new(new: &NewToken) -> Result<(), TokenError> {
    let name_ok = !new.name.is_empty()
        && new.name.len() <= 128
        && new
            .name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':' | '@'));
    if !name_ok {
        return Err(TokenError::Invalid(format!(
            "`{}` is not a principal name\n  help: use letters, digits and `-_.:@`, at most 128",
            new.name
        )));
    }
    let agent = new.kind == PrincipalKind::Agent;
    if !agent && (new.max_scope.is_some() || new.max_clearance.is_some()) {
        return Err(TokenError::Invalid(format!(
            "`--max-scope` and `--max-clearance` bound an agent's runs; a {} token has none\n  help: leave them out, or create an agent token",
            new.kind
        )));
    }
    if let Some(scope) = &new.max_scope
        && !scope_within(scope, scope)
    {
        return Err(TokenError::Invalid(format!(
            "`{scope}` is not a scope\n  help: write it as `org:acme/repo:api`: segments without `.`, `..` or spaces"
        )));
    }
    Ok(())
}

/// The principal `presented` stands for: `None` when it is not a token of this store, or is
/// revoked or expired at `now_ms`. The secret's keyed hash is compared in constant time.
pub fn verify(
    store: &Store,
    key: &TokenKey,
    presented: &str,
    now_ms: i64,
) -> Result<Option<Principal>, StoreError> {
    let Some((row_id, hash)) = presented_hash(key, presented) else {
        return Ok(None);
    };
    Ok(verify_row(store, row_id, hash, now_ms)?.map(|v| v.principal))
}

/// A token verified against its row.
pub(crate) struct Verified {
    /// Its id (`tok_…`).
    pub(crate) id: String,
    /// The keyed hash of its secret.
    pub(crate) hash: blake3::Hash,
    pub(crate) principal: Principal,
    pub(crate) expires_at_ms: Option<i64>,
    /// `changes/credentials` read before the row: a token changed later moves it past this.
    pub(crate) generation: i64,
}

/// The token's id and secret, if `presented` reads as a token of this kind.
fn parts(presented: &str) -> Option<(&str, &str)> {
    let (id, secret) = presented.strip_prefix(PREFIX)?.split_once('_')?;
    (id.len() == 16 && id.bytes().all(|b| b.is_ascii_hexdigit())).then_some((id, secret))
}

/// The keyed hash of `presented`'s secret, with the row id it names (`None` when it does not
/// read as a token).
pub(crate) fn presented_hash(key: &TokenKey, presented: &str) -> Option<(String, blake3::Hash)> {
    let (id, secret) = parts(presented)?;
    Some((format!("tok_{id}"), key.hash(secret)))
}

/// [`verify`] of a token whose row id and secret's keyed hash are taken
/// ([`presented_hash`]), with what a cache of verified tokens keeps.
pub(crate) fn verify_row(
    store: &Store,
    row_id: String,
    hash: blake3::Hash,
    now_ms: i64,
) -> Result<Option<Verified>, StoreError> {
    let found = store.read(move |c| {
        // The counter first: a revocation committed between the two reads shows in the row.
        let generation = c
            .prepare_cached(
                "SELECT COALESCE((SELECT value FROM tollgate_counters WHERE name = ?1), 0)",
            )?
            .query_row([crate::store::Changes::Credentials.counter()], |r| {
                r.get::<i64>(0)
            })?;
        Ok::<_, StoreError>(load(c, &row_id)?.map(|found| (found, generation)))
    })?;
    // An unknown id costs the hash a known one does: it was taken above either way.
    let Some(((record, stored), generation)) = found else {
        return Ok(None);
    };
    let Ok(stored) = blake3::Hash::from_hex(&stored) else {
        return Err(StoreError::corrupt(format!(
            "token `{}` has no valid hash",
            record.id
        )));
    };
    // `blake3::Hash`'s equality is constant-time.
    if hash != stored {
        return Ok(None);
    }
    if record.revoked_at.is_some() || record.expires_at_ms.is_some_and(|e| e <= now_ms) {
        return Ok(None);
    }
    Ok(Some(Verified {
        principal: record.principal(),
        expires_at_ms: record.expires_at_ms,
        id: record.id,
        hash,
        generation,
    }))
}

/// Every token, newest first.
pub fn list(store: &Store) -> Result<Vec<TokenRecord>, StoreError> {
    store.read(|c| {
        let mut stmt = c.prepare(&format!(
            "SELECT {COLUMNS} FROM tokens ORDER BY created_at DESC, id"
        ))?;
        let rows = stmt.query_map((), |r| Ok((record(r)?, ())))?;
        rows.map(|r| r.and_then(|(rec, ())| rec)).collect()
    })
}

/// Revokes a token at once; revoking it again changes nothing.
pub fn revoke(
    store: &Store,
    id: &str,
    by: &Principal,
    now: &str,
) -> Result<TokenRecord, TokenError> {
    let (id, by, now) = (id.to_string(), by.id.clone(), now.to_string());
    store.transact(move |c| {
        c.execute(
            "UPDATE tokens SET revoked_at = ?2, revoked_by = ?3 WHERE id = ?1 AND revoked_at IS NULL",
            params![id, now, by],
        )?;
        load(c, &id)?
            .map(|(r, _)| r)
            .ok_or(TokenError::NotFound(id))
    })
}

const COLUMNS: &str = "id, kind, name, max_scope, max_clearance, created_at, created_by, \
                       expires_at, revoked_at, revoked_by, secret_hash";

fn load(c: &Connection, id: &str) -> Result<Option<(TokenRecord, String)>, StoreError> {
    let found = c
        .prepare_cached(&format!("SELECT {COLUMNS} FROM tokens WHERE id = ?1"))?
        .query_row([id], |r| Ok((record(r)?, r.get::<String>(10)?)))
        .optional()?;
    match found {
        None => Ok(None),
        Some((record, hash)) => Ok(Some((record?, hash))),
    }
}

/// A row as a record: SQLite's error outside, a value that does not read as ours inside.
fn record(r: &crate::store::Row<'_>) -> Result<Result<TokenRecord, StoreError>, StoreError> {
    let kind: String = r.get(1)?;
    let clearance: Option<String> = r.get(4)?;
    let Some(kind) = PrincipalKind::parse(&kind) else {
        return Ok(Err(StoreError::corrupt(format!("token kind `{kind}`"))));
    };
    let max_clearance = match clearance {
        None => None,
        Some(c) => match Level::ALL.into_iter().find(|l| l.as_str() == c) {
            Some(l) => Some(l),
            None => return Ok(Err(StoreError::corrupt(format!("token clearance `{c}`")))),
        },
    };
    Ok(Ok(TokenRecord {
        id: r.get(0)?,
        kind,
        name: r.get(2)?,
        max_scope: r.get(3)?,
        max_clearance,
        created_at: r.get(5)?,
        created_by: r.get(6)?,
        expires_at_ms: r.get(7)?,
        revoked_at: r.get(8)?,
        revoked_by: r.get(9)?,
    }))
}

/// A duration like `30d`, `12h`, `45m` or `90s`, in milliseconds.
pub fn parse_duration_ms(text: &str) -> Option<i64> {
    let text = text.trim();
    let unit = text.chars().last()?;
    let n: i64 = text.get(..text.len() - unit.len_utf8())?.parse().ok()?;
    let per = match unit {
        'd' => 86_400_000,
        'h' => 3_600_000,
        'm' => 60_000,
        's' => 1_000,
        _ => return None,
    };
    (n > 0).then_some(n)?.checked_mul(per)
}

fn random_hex(n: usize) -> String {
    crate::runtime::random_hex(n)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::store::tests::tempdir::Dir;

    fn store() -> (Dir, Store) {
        let dir = Dir::new("tokens");
        let store = crate::store::tests::open_in(dir.path());
        (dir, store)
    }

    fn agent() -> NewToken {
        NewToken {
            kind: PrincipalKind::Agent,
            name: "coder".into(),
            max_scope: Some("org:acme/repo:api".into()),
            max_clearance: Some(Level::Internal),
            expires_at_ms: None,
        }
    }

    #[test]
    fn a_token_verifies_as_its_principal_until_revoked() {
        let (dir, store) = store();
        let key = TokenKey::resolve(None, dir.path()).unwrap();
        let (record, text) = create(&store, &key, &agent(), &Principal::owner(), "t0").unwrap();
        let p = verify(&store, &key, &text, 0).unwrap().unwrap();
        assert_eq!(p.id, record.id);
        assert_eq!(p.kind, PrincipalKind::Agent);
        assert_eq!(p.max_clearance, Some(Level::Internal));
        // The stored row holds no part of the secret.
        let secret = text.rsplit('_').next().unwrap().to_string();
        let stored: String = store
            .read(|c| c.query_row("SELECT secret_hash FROM tokens", (), |r| r.get(0)))
            .unwrap();
        assert!(!stored.contains(&secret));
        // A wrong secret, a wrong id, another key: nothing.
        // The same token but for its last hex digit (changed, whatever it was).
        let last = if text.ends_with('0') { '1' } else { '0' };
        let wrong = format!("{}{last}", &text[..text.len() - 1]);
        assert_eq!(verify(&store, &key, &wrong, 0).unwrap(), None);
        assert_eq!(verify(&store, &key, "tg_zz_zz", 0).unwrap(), None);
        let other = TokenKey::from_hex(&"ab".repeat(32)).unwrap();
        assert_eq!(verify(&store, &other, &text, 0).unwrap(), None);
        revoke(&store, &record.id, &Principal::owner(), "t1").unwrap();
        assert_eq!(verify(&store, &key, &text, 0).unwrap(), None);
        let listed = list(&store).unwrap();
        assert_eq!(listed[0].revoked_by.as_deref(), Some("owner"));
    }

    #[test]
    fn an_expired_token_does_not_verify() {
        let (dir, store) = store();
        let key = TokenKey::resolve(None, dir.path()).unwrap();
        let mut new = agent();
        new.expires_at_ms = Some(1_000);
        let (_, text) = create(&store, &key, &new, &Principal::owner(), "t0").unwrap();
        assert!(verify(&store, &key, &text, 999).unwrap().is_some());
        assert_eq!(verify(&store, &key, &text, 1_000).unwrap(), None);
    }

    #[test]
    fn the_key_file_is_kept_and_reread() {
        let dir = Dir::new("token-key");
        let a = TokenKey::resolve(None, dir.path()).unwrap();
        let b = TokenKey::resolve(None, dir.path()).unwrap();
        assert_eq!(a.0, b.0);
        assert!(TokenKey::resolve(Some("nothex".into()), dir.path()).is_err());
    }

    #[test]
    fn bounds_belong_to_agents_and_names_are_plain() {
        let (dir, store) = store();
        let key = TokenKey::resolve(None, dir.path()).unwrap();
        let mut approver = agent();
        approver.kind = PrincipalKind::Approver;
        assert!(create(&store, &key, &approver, &Principal::owner(), "t").is_err());
        let mut bad = agent();
        bad.name = "co der".into();
        assert!(create(&store, &key, &bad, &Principal::owner(), "t").is_err());
        let mut climbing = agent();
        climbing.max_scope = Some("org:acme/..".into());
        assert!(create(&store, &key, &climbing, &Principal::owner(), "t").is_err());
    }

    #[test]
    fn durations_read_days_hours_minutes_and_seconds() {
        assert_eq!(parse_duration_ms("30d"), Some(30 * 86_400_000));
        assert_eq!(parse_duration_ms("2h"), Some(7_200_000));
        assert_eq!(parse_duration_ms("0d"), None);
        assert_eq!(parse_duration_ms("d"), None);
        assert_eq!(parse_duration_ms("5w"), None);
    }
}
