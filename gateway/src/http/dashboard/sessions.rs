//! Who may see the dashboard: a browser session opened with a login token, kept in memory
//! (a restart logs everyone out), carried by an HttpOnly, SameSite=Strict cookie, with a CSRF
//! token for every form that changes something.
//!
//! Two tokens open a session: the one-time login token `tollgate serve` prints in its
//! dashboard URL (as Jupyter does; spent by its first use), and the gateway's bearer token
//! (`.tollgate/token`), which the login page accepts. Tokens and session ids are compared
//! through their blake3 hashes, whose equality is constant-time.

use std::collections::HashMap;
use std::sync::Mutex;

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

    /// Opens a session for `given`, when it is the unused one-time login token (which is then
    /// spent) or the bearer token.
    pub fn login(&self, given: &str, bearer: &str, now_ms: i64) -> Option<Session> {
        let mut inner = self.lock();
        let one_time = inner.login.as_deref().is_some_and(|t| same(t, given));
        if one_time {
            inner.login = None;
        } else if !same(bearer, given) {
            return None;
        }
        inner.sessions.retain(|_, s| s.expires_ms > now_ms);
        let session = Session {
            id: random_token(),
            csrf: random_token(),
            expires_ms: now_ms.saturating_add(SESSION_TTL_MS),
        };
        inner.sessions.insert(session.id.clone(), session.clone());
        Some(session)
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
    fn the_login_token_opens_one_session_and_the_bearer_token_any_number() {
        let sessions = Sessions::new();
        let login = sessions.login_token().unwrap();
        assert!(sessions.login("wrong", "bearer", 0).is_none());
        let first = sessions.login(&login, "bearer", 0).unwrap();
        assert!(sessions.login_token().is_none());
        assert!(sessions.login(&login, "bearer", 0).is_none(), "spent");
        let second = sessions.login("bearer", "bearer", 0).unwrap();
        assert_ne!(first.id, second.id);
        assert_ne!(first.csrf, second.csrf);
        assert_eq!(sessions.check(&first.id, 1), Some(first.clone()));
        assert!(csrf_ok(&first, &first.csrf) && !csrf_ok(&first, &second.csrf));
    }

    #[test]
    fn a_session_expires_and_ends_at_logout() {
        let sessions = Sessions::new();
        let s = sessions.login("b", "b", 1_000).unwrap();
        assert!(sessions.check(&s.id, 1_000 + SESSION_TTL_MS - 1).is_some());
        assert!(sessions.check(&s.id, 1_000 + SESSION_TTL_MS).is_none());
        assert!(sessions.check(&s.id, 0).is_none(), "forgotten once expired");
        let t = sessions.login("b", "b", 0).unwrap();
        sessions.logout(&t.id);
        assert!(sessions.check(&t.id, 0).is_none());
        assert!(sessions.check("", 0).is_none());
    }
}
