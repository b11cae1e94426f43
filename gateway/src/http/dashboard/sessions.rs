//! Who may see the dashboard: a browser session opened with a login token, kept in memory
//! (a restart logs everyone out), carried by an HttpOnly, SameSite=Strict cookie, with a CSRF
//! token for every form that changes something.
//!
//! A session acts for one principal (issue 32): the one-time login token `tollgate serve`
//! prints in its dashboard URL (as Jupyter does; spent by its first use) opens the owner's,
//! and the login page takes an approver's or admin's own token (or the owner's). Agents'
//! tokens open no session. Tokens and session ids are compared through their blake3 hashes,
//! whose equality is constant-time.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::auth::Principal;

/// How long a session lasts without logging in again.
pub const SESSION_TTL_MS: i64 = 12 * 60 * 60 * 1000;

/// The cookie carrying the session id.
pub const COOKIE: &str = "tollgate_session";

/// The dashboard's sessions.
#[derive(Debug)]
pub struct Sessions {
    inner: Mutex<Inner>,
}

#[derive(Debug)]
struct Inner {
    /// The one-time login token, until it is used.
    login: Option<String>,
    /// By session id.
    sessions: HashMap<String, Session>,
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

impl Default for Sessions {
    fn default() -> Self {
        Sessions::new()
    }
}

impl Sessions {
    /// No session yet, and a fresh one-time login token.
    pub fn new() -> Sessions {
        Sessions {
            inner: Mutex::new(Inner {
                login: Some(random_token()),
                sessions: HashMap::new(),
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The one-time login token, while it has not been used (for the URL `serve` prints).
    pub fn login_token(&self) -> Option<String> {
        self.lock().login.clone()
    }

    /// Spends the one-time login token when `given` is it (and it is unused).
    pub fn spend_login(&self, given: &str) -> bool {
        let mut inner = self.lock();
        let one_time = inner.login.as_deref().is_some_and(|t| same(t, given));
        if one_time {
            inner.login = None;
        }
        one_time
    }

    /// Opens a session acting for `principal`.
    pub fn open(&self, principal: Principal, now_ms: i64) -> Session {
        let mut inner = self.lock();
        inner.sessions.retain(|_, s| s.expires_ms > now_ms);
        let session = Session {
            id: random_token(),
            principal,
            csrf: random_token(),
            expires_ms: now_ms.saturating_add(SESSION_TTL_MS),
        };
        inner.sessions.insert(session.id.clone(), session.clone());
        session
    }

    /// The live session of a cookie's id; an expired one is forgotten.
    pub fn check(&self, id: &str, now_ms: i64) -> Option<Session> {
        let mut inner = self.lock();
        let found = inner
            .sessions
            .iter()
            .find(|(key, _)| same(key, id))
            .map(|(_, s)| s.clone())?;
        if found.expires_ms <= now_ms {
            inner.sessions.remove(&found.id);
            return None;
        }
        Some(found)
    }

    /// Ends a session.
    pub fn logout(&self, id: &str) {
        self.lock().sessions.remove(id);
    }
}

/// Whether a form's CSRF token is its session's.
pub fn csrf_ok(session: &Session, given: &str) -> bool {
    same(&session.csrf, given)
}

/// Equal texts, compared in constant time (through their hashes).
fn same(a: &str, b: &str) -> bool {
    blake3::hash(a.as_bytes()) == blake3::hash(b.as_bytes())
}

/// 32 random bytes as hex.
fn random_token() -> String {
    crate::runtime::random_hex(32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_login_token_is_spent_by_its_first_use() {
        let sessions = Sessions::new();
        let login = sessions.login_token().unwrap();
        assert!(!sessions.spend_login("wrong"));
        assert!(sessions.spend_login(&login));
        assert!(sessions.login_token().is_none());
        assert!(!sessions.spend_login(&login), "spent");
    }

    #[test]
    fn sessions_act_for_their_principal_with_their_own_csrf_token() {
        let sessions = Sessions::new();
        let first = sessions.open(Principal::owner(), 0);
        let second = sessions.open(Principal::local("ann"), 0);
        assert_ne!(first.id, second.id);
        assert_ne!(first.csrf, second.csrf);
        assert_eq!(sessions.check(&first.id, 1), Some(first.clone()));
        assert_eq!(sessions.check(&second.id, 1).unwrap().principal.name, "ann");
        assert!(csrf_ok(&first, &first.csrf) && !csrf_ok(&first, &second.csrf));
    }

    #[test]
    fn a_session_expires_and_ends_at_logout() {
        let sessions = Sessions::new();
        let s = sessions.open(Principal::owner(), 1_000);
        assert!(sessions.check(&s.id, 1_000 + SESSION_TTL_MS - 1).is_some());
        assert!(sessions.check(&s.id, 1_000 + SESSION_TTL_MS).is_none());
        assert!(sessions.check(&s.id, 0).is_none(), "forgotten once expired");
        let t = sessions.open(Principal::owner(), 0);
        sessions.logout(&t.id);
        assert!(sessions.check(&t.id, 0).is_none());
        assert!(sessions.check("", 0).is_none());
    }
}
