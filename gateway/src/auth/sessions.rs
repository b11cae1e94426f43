//! Who may see the dashboard: a browser session opened with a login token, carried by an
//! HttpOnly, SameSite=Strict cookie, with a CSRF token for every form that changes something.
//!
//! A session acts for one principal (issue 32): the one-time login token `tollgate serve`
//! prints in its dashboard URL (as Jupyter does; spent by its first use, and by 24 hours)
//! opens the owner's, and the login page takes an approver's or admin's own token (or the
//! owner's). Agents' tokens open no session.
//!
//! Sessions and login tokens are stored (issue 38), so several gateways on one database are one
//! dashboard: a login token one gateway printed opens a session on any of them, and the session
//! works on every one; a restart logs nobody out. The store keeps only blake3 hashes of the
//! session ids and login tokens (256 random bits each, so an unkeyed hash is enough): whoever
//! reads the database cannot present them. Looking a session up by its id's hash compares no
//! secret byte by byte.

use std::sync::atomic::{AtomicBool, Ordering};

use crate::auth::Principal;
use crate::store::{OptionalExtension, Store, StoreError, params};

/// How long a session lasts without logging in again.
pub const SESSION_TTL_MS: i64 = 12 * 60 * 60 * 1000;

/// How long a one-time login token stays good when unused.
pub const LOGIN_TTL_MS: i64 = 24 * 60 * 60 * 1000;

/// The dashboard's sessions, in the store, and this gateway's one-time login token.
#[derive(Debug)]
pub struct Sessions {
    store: Store,
    /// The one-time login token this gateway prints.
    login: String,
    /// Whether the login token's hash is stored yet (on first use of it).
    announced: AtomicBool,
}

/// One browser's session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    /// Its id (the cookie's value).
    pub id: String,
    /// Who it acts for.
    pub principal: Principal,
    /// The token every form of this session must carry.
    pub csrf: String,
    /// Milliseconds since the epoch.
    pub expires_ms: i64,
}

impl Sessions {
    /// The sessions of `store`, and a fresh one-time login token (stored when first shown or
    /// presented).
    pub fn new(store: Store) -> Sessions {
        Sessions {
            store,
            login: random_token(),
            announced: AtomicBool::new(false),
        }
    }

    /// Stores the login token's hash, once, good until `now_ms` + [`LOGIN_TTL_MS`]; the
    /// expired login tokens and sessions go in the same write.
    fn announce(&self, now_ms: i64) -> Result<(), StoreError> {
        if self.announced.load(Ordering::Acquire) {
            return Ok(());
        }
        let hash = hashed(&self.login);
        let expires = now_ms.saturating_add(LOGIN_TTL_MS);
        self.store.write(move |c| {
            c.execute(
                "DELETE FROM dashboard_logins WHERE expires_ms <= ?1",
                params![now_ms],
            )?;
            c.execute(
                "DELETE FROM dashboard_sessions WHERE expires_ms <= ?1",
                params![now_ms],
            )?;
            c.execute(
                "INSERT INTO dashboard_logins (token_hash, expires_ms) VALUES (?1, ?2)
                 ON CONFLICT DO NOTHING",
                params![hash, expires],
            )?;
            Ok(())
        })?;
        self.announced.store(true, Ordering::Release);
        Ok(())
    }

    /// This gateway's one-time login token, while it is unused and unexpired (for the URL
    /// `serve` prints).
    pub fn login_token(&self, now_ms: i64) -> Result<Option<String>, StoreError> {
        self.announce(now_ms)?;
        let hash = hashed(&self.login);
        let live = self.store.read(move |c| {
            c.query_row(
                "SELECT 1 FROM dashboard_logins WHERE token_hash = ?1 AND expires_ms > ?2",
                params![hash, now_ms],
                |r| r.get::<i64>(0),
            )
            .optional()
        })?;
        Ok(live.map(|_| self.login.clone()))
    }

    /// Spends a one-time login token, this gateway's or another's on the same store, when
    /// `given` is one that is unused and unexpired. Of two gateways spending one token at
    /// once, one does.
    pub fn spend_login(&self, given: &str, now_ms: i64) -> Result<bool, StoreError> {
        self.announce(now_ms)?;
        let hash = hashed(given);
        let spent = self.store.write(move |c| {
            c.execute(
                "DELETE FROM dashboard_logins WHERE token_hash = ?1 AND expires_ms > ?2",
                params![hash, now_ms],
            )
        })?;
        Ok(spent == 1)
    }

    /// Opens a session acting for `principal`.
    pub fn open(&self, principal: Principal, now_ms: i64) -> Result<Session, StoreError> {
        let session = Session {
            id: random_token(),
            principal,
            csrf: random_token(),
            expires_ms: now_ms.saturating_add(SESSION_TTL_MS),
        };
        let principal = serde_json::to_string(&session.principal)
            .map_err(|e| StoreError::Invalid(format!("a session's principal: {e}")))?;
        let (hash, csrf, expires) = (
            hashed(&session.id),
            session.csrf.clone(),
            session.expires_ms,
        );
        self.store.write(move |c| {
            c.execute(
                "DELETE FROM dashboard_sessions WHERE expires_ms <= ?1",
                params![now_ms],
            )?;
            c.execute(
                "INSERT INTO dashboard_sessions (id_hash, principal, csrf, expires_ms)
                 VALUES (?1, ?2, ?3, ?4)",
                params![hash, principal, csrf, expires],
            )?;
            Ok(())
        })?;
        Ok(session)
    }

    /// The live session of a cookie's id (`None` when unknown or expired).
    pub fn check(&self, id: &str, now_ms: i64) -> Result<Option<Session>, StoreError> {
        if id.is_empty() {
            return Ok(None);
        }
        let hash = hashed(id);
        let found = self.store.read(move |c| {
            c.query_row(
                "SELECT principal, csrf, expires_ms FROM dashboard_sessions
                 WHERE id_hash = ?1 AND expires_ms > ?2",
                params![hash, now_ms],
                |r| Ok((r.get::<String>(0)?, r.get::<String>(1)?, r.get::<i64>(2)?)),
            )
            .optional()
        })?;
        let Some((principal, csrf, expires_ms)) = found else {
            return Ok(None);
        };
        let principal = serde_json::from_str(&principal)
            .map_err(|e| StoreError::corrupt(format!("a dashboard session's principal: {e}")))?;
        Ok(Some(Session {
            id: id.to_string(),
            principal,
            csrf,
            expires_ms,
        }))
    }

    /// Ends a session, on every gateway.
    pub fn logout(&self, id: &str) -> Result<(), StoreError> {
        let hash = hashed(id);
        self.store.write(move |c| {
            c.execute(
                "DELETE FROM dashboard_sessions WHERE id_hash = ?1",
                params![hash],
            )?;
            Ok(())
        })
    }
}

/// Whether a form's CSRF token is its session's (compared through their hashes, whose equality
/// is constant-time).
pub fn csrf_ok(session: &Session, given: &str) -> bool {
    blake3::hash(session.csrf.as_bytes()) == blake3::hash(given.as_bytes())
}

/// What the store keeps of a session id or login token.
fn hashed(secret: &str) -> String {
    blake3::hash(secret.as_bytes()).to_hex().to_string()
}

/// 32 random bytes as hex.
fn random_token() -> String {
    crate::runtime::random_hex(32)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::tests::tempdir::Dir;

    fn sessions() -> (Dir, Sessions) {
        let dir = Dir::new("sessions");
        let store = crate::store::tests::open_in(dir.path());
        (dir, Sessions::new(store))
    }

    #[test]
    fn the_login_token_is_spent_by_its_first_use() {
        let (_d, sessions) = sessions();
        let login = sessions.login_token(0).unwrap().unwrap();
        assert!(!sessions.spend_login("wrong", 0).unwrap());
        assert!(sessions.spend_login(&login, 0).unwrap());
        assert!(sessions.login_token(0).unwrap().is_none());
        assert!(!sessions.spend_login(&login, 0).unwrap(), "spent");
    }

    #[test]
    fn an_unused_login_token_expires() {
        let (_d, sessions) = sessions();
        let login = sessions.login_token(1_000).unwrap().unwrap();
        assert!(
            sessions
                .login_token(1_000 + LOGIN_TTL_MS)
                .unwrap()
                .is_none()
        );
        assert!(!sessions.spend_login(&login, 1_000 + LOGIN_TTL_MS).unwrap());
    }

    #[test]
    fn sessions_act_for_their_principal_with_their_own_csrf_token() {
        let (_d, sessions) = sessions();
        let first = sessions.open(Principal::owner(), 0).unwrap();
        let second = sessions.open(Principal::local("ann"), 0).unwrap();
        assert_ne!(first.id, second.id);
        assert_ne!(first.csrf, second.csrf);
        assert_eq!(sessions.check(&first.id, 1).unwrap(), Some(first.clone()));
        assert_eq!(
            sessions
                .check(&second.id, 1)
                .unwrap()
                .unwrap()
                .principal
                .name,
            "ann"
        );
        assert!(csrf_ok(&first, &first.csrf) && !csrf_ok(&first, &second.csrf));
    }

    #[test]
    fn a_session_expires_and_ends_at_logout() {
        let (_d, sessions) = sessions();
        let s = sessions.open(Principal::owner(), 1_000).unwrap();
        assert!(
            sessions
                .check(&s.id, 1_000 + SESSION_TTL_MS - 1)
                .unwrap()
                .is_some()
        );
        assert!(
            sessions
                .check(&s.id, 1_000 + SESSION_TTL_MS)
                .unwrap()
                .is_none()
        );
        let t = sessions.open(Principal::owner(), 0).unwrap();
        sessions.logout(&t.id).unwrap();
        assert!(sessions.check(&t.id, 0).unwrap().is_none());
        assert!(sessions.check("", 0).unwrap().is_none());
    }

    /// Several gateways on one database (issue 38): each has its own `Sessions` over its own
    /// store. A login token printed by one is spent on another, once; the session it opens
    /// works on all of them, and a logout on one ends it everywhere.
    #[test]
    fn a_login_on_one_gateway_is_a_session_on_every_gateway() {
        let dir = Dir::new("sessions");
        let gateways: Vec<Sessions> = (0..3)
            .map(|_| Sessions::new(crate::store::tests::open_in(dir.path())))
            .collect();
        let printed = gateways[0].login_token(0).unwrap().unwrap();
        let spent: Vec<bool> = std::thread::scope(|threads| {
            let spending: Vec<_> = gateways[1..]
                .iter()
                .map(|g| threads.spawn(|| g.spend_login(&printed, 1).unwrap()))
                .collect();
            spending.into_iter().map(|t| t.join().unwrap()).collect()
        });
        assert_eq!(spent.iter().filter(|s| **s).count(), 1, "{spent:?}");
        assert!(gateways[0].login_token(2).unwrap().is_none());
        let session = gateways[1].open(Principal::owner(), 2).unwrap();
        for g in &gateways {
            assert_eq!(g.check(&session.id, 3).unwrap(), Some(session.clone()));
        }
        gateways[2].logout(&session.id).unwrap();
        for g in &gateways {
            assert!(g.check(&session.id, 4).unwrap().is_none());
        }
    }

    #[test]
    fn the_store_keeps_no_session_id_or_login_token() {
        let (_d, sessions) = sessions();
        let login = sessions.login_token(0).unwrap().unwrap();
        let s = sessions.open(Principal::owner(), 0).unwrap();
        let kept: Vec<String> = sessions
            .store
            .read(|c| {
                let mut stmt = c.prepare(
                    "SELECT id_hash FROM dashboard_sessions
                     UNION ALL SELECT token_hash FROM dashboard_logins",
                )?;
                let rows = stmt.query_map((), |r| r.get::<String>(0))?;
                rows.collect()
            })
            .unwrap();
        assert_eq!(kept.len(), 2);
        assert!(!kept.contains(&login) && !kept.contains(&s.id));
        assert!(kept.contains(&hashed(&login)) && kept.contains(&hashed(&s.id)));
    }
}
