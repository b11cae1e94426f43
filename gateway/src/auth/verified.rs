//! Tokens verified, kept in memory for the route whose answer waits on a write: the tool call.
//!
//! Reading a token's row on every call was the one read of a recorded tool call (about 7% of
//! the gateway's time on one core, `benches/load`). A token once verified is kept here with the
//! store's count of credential changes (`changes/credentials`, raised by a trigger with every
//! token revoked or deleted) read before its row. A tool call presenting it again is admitted
//! from here without a read, and its write, which reads that count anyway (under the store's
//! write lock), records nothing when the count moved since: the call's token is then read
//! again (`AppState::authenticate`) and the call decided again, or refused when the token is
//! gone. So a revocation — through this gateway, another on the same database, or by hand —
//! holds from the first write after it commits, exactly as when every call read the row. An
//! answer that is not a success (no write, so no check) is given only after the token is read
//! again (`http::security::require_token`).
//!
//! An entry is found by the token's id and used only when the presented secret's keyed hash
//! equals the one verified (compared in constant time); an expired entry is never used. Every
//! other route reads the row each time (`tokens::verify`).

use std::collections::HashMap;
use std::sync::Mutex;

use super::Principal;
use super::tokens::{self, TokenKey, Verified};
use crate::store::{Store, StoreError};

/// Entries kept at most; past that the whole map is dropped and refilled as tokens are used.
const MAX_KEPT: usize = 4096;

/// A principal admitted from a verified token, and the count of credential changes its
/// verification holds for: the write that records the caller's call checks the count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Admitted {
    /// Who.
    pub principal: Principal,
    /// `changes/credentials` as read before the token's row.
    pub credentials_seen: i64,
}

/// The tokens a gateway verified (see the module's docs).
#[derive(Default)]
pub struct VerifiedTokens {
    kept: Mutex<HashMap<String, Verified>>,
}

impl std::fmt::Debug for VerifiedTokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VerifiedTokens").finish_non_exhaustive()
    }
}

impl VerifiedTokens {
    /// The principal `presented` stands for at `now_ms`, from memory when it was verified
    /// before, else from its row (then kept). `None` when it is no live token of the store.
    pub fn admit(
        &self,
        store: &Store,
        key: &TokenKey,
        presented: &str,
        now_ms: i64,
    ) -> Result<Option<Admitted>, StoreError> {
        let Some((id, hash)) = tokens::presented_hash(key, presented) else {
            return Ok(None);
        };
        {
            let kept = self.lock();
            if let Some(v) = kept.get(&id)
                // `blake3::Hash`'s equality is constant-time.
                && v.hash == hash
                && v.expires_at_ms.is_none_or(|e| now_ms < e)
            {
                return Ok(Some(Admitted {
                    principal: v.principal.clone(),
                    credentials_seen: v.generation,
                }));
            }
        }
        let Some(verified) = tokens::verify_row(store, id.clone(), hash, now_ms)? else {
            // The kept token itself no longer verifies (revoked, expired): forget it. Another
            // secret under its id does not evict it.
            let mut kept = self.lock();
            if kept.get(&id).is_some_and(|v| v.hash == hash) {
                kept.remove(&id);
            }
            return Ok(None);
        };
        let admitted = Admitted {
            principal: verified.principal.clone(),
            credentials_seen: verified.generation,
        };
        let mut kept = self.lock();
        if kept.len() >= MAX_KEPT {
            kept.clear();
        }
        kept.insert(verified.id.clone(), verified);
        Ok(Some(admitted))
    }

    /// Forgets every token verified before the count of credential changes reached
    /// `generation` (a write found it moved).
    pub fn forget_before(&self, generation: i64) {
        self.lock().retain(|_, v| v.generation >= generation);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Verified>> {
        self.kept
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use crate::auth::PrincipalKind;
    use crate::auth::tokens::{NewToken, create, revoke};
    use crate::store::tests::tempdir::Dir;

    fn agent_token(store: &Store, key: &TokenKey, expires_at_ms: Option<i64>) -> String {
        let new = NewToken {
            kind: PrincipalKind::Agent,
            name: "coder".into(),
            max_scope: None,
            max_clearance: None,
            expires_at_ms,
        };
        create(
            store,
            key,
            &new,
            &Principal::owner(),
            "2026-12-05T00:00:00Z",
        )
        .unwrap()
        .1
    }

    fn store() -> (Dir, Store, TokenKey) {
        let dir = Dir::new("verified");
        let store = crate::store::tests::open_in(dir.path());
        (dir, store, TokenKey::from_hex(&"ab".repeat(32)).unwrap())
    }

    #[test]
    fn a_kept_token_is_admitted_with_the_count_it_was_verified_at_and_a_revocation_moves_it() {
        let (_dir, store, key) = store();
        let token = agent_token(&store, &key, None);
        let kept = VerifiedTokens::default();
        let first = kept.admit(&store, &key, &token, 0).unwrap().unwrap();
        assert_eq!(first.principal.name, "coder");
        // Admitted again from memory even though the row is gone from sight: revoke it, and
        // the kept entry still answers, with the count from before; the write's check (the
        // count moved) is what refuses it.
        let id = first.principal.id.clone();
        revoke(&store, &id, &Principal::owner(), "2026-12-05T00:00:01Z").unwrap();
        let again = kept.admit(&store, &key, &token, 0).unwrap().unwrap();
        assert_eq!(again.credentials_seen, first.credentials_seen);
        let now = crate::store::changes(&store, crate::store::Changes::Credentials).unwrap();
        assert!(
            now > first.credentials_seen,
            "a revocation raises the count"
        );
        // Once the write saw the count move, the token is read again: revoked, refused.
        kept.forget_before(now);
        assert_eq!(kept.admit(&store, &key, &token, 0).unwrap(), None);
    }

    #[test]
    fn a_wrong_secret_for_a_kept_id_and_an_expired_token_are_refused() {
        let (_dir, store, key) = store();
        let token = agent_token(&store, &key, Some(1_000));
        let kept = VerifiedTokens::default();
        assert!(kept.admit(&store, &key, &token, 0).unwrap().is_some());
        // The same id with another secret: not admitted from memory, and not by its row.
        let (head, _) = token.rsplit_once('_').unwrap();
        let forged = format!("{head}_{}", "0".repeat(64));
        assert_eq!(kept.admit(&store, &key, &forged, 0).unwrap(), None);
        // The true token past its expiry: refused, though it is kept.
        assert_eq!(kept.admit(&store, &key, &token, 1_000).unwrap(), None);
        assert!(kept.admit(&store, &key, &token, 999).unwrap().is_some());
    }
}
