//! JSON Web Tokens from a team's identity provider (issue 32): a gateway started with
//! `TOLLGATE_JWT_JWKS` (a JWKS file, or an `https://` URL fetched once at start),
//! `TOLLGATE_JWT_ISSUER` and `TOLLGATE_JWT_AUDIENCE` takes a bearer JWT signed by one of the
//! set's keys, from that issuer, for that audience, unexpired (with `TOLLGATE_JWT_LEEWAY`
//! seconds of clock skew, 60 by default), and maps its claims to a principal:
//!
//! | claim | becomes |
//! |---|---|
//! | `tollgate_kind` | the kind: `agent`, `approver` or `admin` (required: no kind, no access) |
//! | `tollgate_agent` | an agent's name (required for agents) |
//! | `sub` | a person's name (approvers, admins), unless `tollgate_name` gives one |
//! | `tollgate_max_scope`, `tollgate_max_clearance` | an agent's bounds |
//!
//! The principal's id is `jwt:ISSUER#SUB`. Signatures are checked by `jsonwebtoken`, which
//! takes only the algorithm the key declares (no `none`, no switching an RSA key to HMAC).

use std::path::Path;

use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{DecodingKey, Validation, decode, decode_header};
use serde::Deserialize;
use tollgate_rules::envelope::Level;

use super::{Principal, PrincipalKind, scope_within};

/// How JWTs are checked.
pub struct JwtVerifier {
    issuer: String,
    audience: String,
    keys: JwkSet,
    leeway: u64,
}

impl std::fmt::Debug for JwtVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JwtVerifier")
            .field("issuer", &self.issuer)
            .field("audience", &self.audience)
            .field("keys", &self.keys.keys.len())
            .finish()
    }
}

/// Why JWT verification could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum JwtSetupError {
    /// A variable is missing or wrong.
    #[error("{0}")]
    Config(String),
    /// The key set could not be read.
    #[error("cannot read the JWKS `{at}`: {detail}")]
    Keys {
        /// The file or URL.
        at: String,
        /// Why.
        detail: String,
    },
}

/// The claims Tollgate reads.
#[derive(Debug, Deserialize)]
struct Claims {
    sub: String,
    #[serde(default)]
    tollgate_kind: Option<String>,
    #[serde(default)]
    tollgate_agent: Option<String>,
    #[serde(default)]
    tollgate_name: Option<String>,
    #[serde(default)]
    tollgate_max_scope: Option<String>,
    #[serde(default)]
    tollgate_max_clearance: Option<String>,
}

impl JwtVerifier {
    /// From the environment: `None` when `TOLLGATE_JWT_JWKS` is unset; an error when it is set
    /// without its issuer and audience, or its keys cannot be read.
    pub fn from_env(
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Option<Result<JwtVerifier, JwtSetupError>> {
        let jwks = env("TOLLGATE_JWT_JWKS").filter(|v| !v.trim().is_empty())?;
        Some(Self::configured(env, jwks.trim()))
    }

    fn configured(
        env: &dyn Fn(&str) -> Option<String>,
        jwks: &str,
    ) -> Result<JwtVerifier, JwtSetupError> {
        let need = |name: &str| {
            env(name)
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
                .ok_or_else(|| {
                    JwtSetupError::Config(format!(
                        "TOLLGATE_JWT_JWKS is set but {name} is not\n  help: set TOLLGATE_JWT_ISSUER and TOLLGATE_JWT_AUDIENCE to what your identity provider puts in `iss` and `aud`"
                    ))
                })
        };
        let issuer = need("TOLLGATE_JWT_ISSUER")?;
        let audience = need("TOLLGATE_JWT_AUDIENCE")?;
        let leeway = match env("TOLLGATE_JWT_LEEWAY") {
            None => 60,
            Some(v) => v.trim().parse().map_err(|_| {
                JwtSetupError::Config(format!(
                    "TOLLGATE_JWT_LEEWAY is `{v}`\n  help: seconds of clock skew, such as 60"
                ))
            })?,
        };
        let text = if jwks.starts_with("https://") || jwks.starts_with("http://") {
            fetch(jwks)?
        } else {
            std::fs::read_to_string(Path::new(jwks)).map_err(|e| JwtSetupError::Keys {
                at: jwks.into(),
                detail: e.to_string(),
            })?
        };
        let keys = Self::parse_keys(&text).map_err(|detail| JwtSetupError::Keys {
            at: jwks.into(),
            detail,
        })?;
        Ok(JwtVerifier {
            issuer,
            audience,
            keys,
            leeway,
        })
    }

    /// A verifier over a JWKS document's text.
    pub fn new(
        issuer: &str,
        audience: &str,
        jwks: &str,
        leeway: u64,
    ) -> Result<JwtVerifier, String> {
        Ok(JwtVerifier {
            issuer: issuer.into(),
            audience: audience.into(),
            keys: Self::parse_keys(jwks)?,
            leeway,
        })
    }

    fn parse_keys(text: &str) -> Result<JwkSet, String> {
        let keys: JwkSet = serde_json::from_str(text).map_err(|e| e.to_string())?;
        if keys.keys.is_empty() {
            return Err("the set holds no key".into());
        }
        Ok(keys)
    }

    /// The principal a JWT stands for, or why it stands for none.
    pub fn verify(&self, token: &str) -> Result<Principal, String> {
        let header = decode_header(token).map_err(|e| format!("not a JWT: {e}"))?;
        let jwk = match &header.kid {
            Some(kid) => self.keys.find(kid),
            None if self.keys.keys.len() == 1 => self.keys.keys.first(),
            None => None,
        }
        .ok_or("no key of the set signs it (its `kid` names none)")?;
        let key = DecodingKey::from_jwk(jwk).map_err(|e| format!("the key is unusable: {e}"))?;
        let mut validation = Validation::new(header.alg);
        validation.set_issuer(&[&self.issuer]);
        validation.set_audience(&[&self.audience]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        validation.leeway = self.leeway;
        if let Some(alg) = jwk.common.key_algorithm
            && format!("{alg:?}") != format!("{:?}", header.alg)
        {
            return Err("its algorithm is not its key's".into());
        }
        let data = decode::<Claims>(token, &key, &validation).map_err(|e| e.to_string())?;
        principal_of(&self.issuer, data.claims)
    }
}

/// The principal of verified claims.
fn principal_of(issuer: &str, c: Claims) -> Result<Principal, String> {
    let kind = c
        .tollgate_kind
        .as_deref()
        .and_then(PrincipalKind::parse)
        .ok_or("no `tollgate_kind` claim naming agent, approver or admin")?;
    let name = match kind {
        PrincipalKind::Agent => c
            .tollgate_agent
            .clone()
            .ok_or("an agent's token names its agent in `tollgate_agent`")?,
        _ => c.tollgate_name.clone().unwrap_or_else(|| c.sub.clone()),
    };
    let max_clearance = match c.tollgate_max_clearance.as_deref() {
        None => None,
        Some(l) => Some(
            Level::ALL
                .into_iter()
                .find(|x| x.as_str() == l)
                .ok_or_else(|| format!("`tollgate_max_clearance` is `{l}`, not a level"))?,
        ),
    };
    if let Some(scope) = &c.tollgate_max_scope
        && !scope_within(scope, scope)
    {
        return Err(format!("`tollgate_max_scope` is `{scope}`, not a scope"));
    }
    if kind != PrincipalKind::Agent && (c.tollgate_max_scope.is_some() || max_clearance.is_some()) {
        return Err(
            "only an agent's token carries `tollgate_max_scope` or `tollgate_max_clearance`".into(),
        );
    }
    Ok(Principal {
        id: format!("jwt:{issuer}#{}", c.sub),
        kind,
        name,
        max_scope: c.tollgate_max_scope,
        max_clearance,
    })
}

/// Fetches a JWKS document (once, at start).
fn fetch(url: &str) -> Result<String, JwtSetupError> {
    let fail = |detail: String| JwtSetupError::Keys {
        at: url.into(),
        detail,
    };
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(std::time::Duration::from_secs(10)))
        .build()
        .into();
    let mut response = agent.get(url).call().map_err(|e| fail(e.to_string()))?;
    response
        .body_mut()
        .read_to_string()
        .map_err(|e| fail(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use jsonwebtoken::{Algorithm, EncodingKey, Header, encode};

    /// A test's own Ed25519 key: its seed, the PKCS#8 document that signs and the JWKS that
    /// verifies.
    pub(crate) fn test_key(seed: u8, kid: &str) -> (EncodingKey, String) {
        let signing = ed25519_dalek::SigningKey::from_bytes(&[seed; 32]);
        let mut pkcs8 = vec![
            0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22,
            0x04, 0x20,
        ];
        pkcs8.extend_from_slice(&[seed; 32]);
        let x = base64url(signing.verifying_key().as_bytes());
        let jwks = format!(
            r#"{{"keys": [{{"kty": "OKP", "crv": "Ed25519", "alg": "EdDSA", "use": "sig", "kid": "{kid}", "x": "{x}"}}]}}"#
        );
        (EncodingKey::from_ed_der(&pkcs8), jwks)
    }

    fn base64url(bytes: &[u8]) -> String {
        use base64::Engine as _;
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
    }

    fn now() -> u64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs()
    }

    fn sign(key: &EncodingKey, kid: &str, claims: serde_json::Value) -> String {
        let mut header = Header::new(Algorithm::EdDSA);
        header.kid = Some(kid.into());
        encode(&header, &claims, key).unwrap()
    }

    #[test]
    fn a_token_from_the_issuer_for_the_audience_maps_to_its_principal() {
        let (key, jwks) = test_key(7, "k1");
        let v = JwtVerifier::new("https://idp.acme", "tollgate", &jwks, 0).unwrap();
        let claims = |extra: serde_json::Value| {
            let mut c = serde_json::json!({"iss": "https://idp.acme", "aud": "tollgate",
                "sub": "u-1", "exp": now() + 300});
            c.as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            c
        };
        let p = v
            .verify(&sign(
                &key,
                "k1",
                claims(
                    serde_json::json!({"tollgate_kind": "approver", "tollgate_name": "team-lead"}),
                ),
            ))
            .unwrap();
        assert_eq!(
            (p.kind, p.name.as_str(), p.id.as_str()),
            (
                PrincipalKind::Approver,
                "team-lead",
                "jwt:https://idp.acme#u-1"
            )
        );
        let p = v
            .verify(&sign(
                &key,
                "k1",
                claims(
                    serde_json::json!({"tollgate_kind": "agent", "tollgate_agent": "coder",
                    "tollgate_max_scope": "org:acme", "tollgate_max_clearance": "internal"}),
                ),
            ))
            .unwrap();
        assert_eq!(p.max_clearance, Some(Level::Internal));
        // Refused: another issuer, another audience, expired beyond the leeway, no kind, a
        // key the set does not hold, a tampered payload.
        let refused = [
            sign(&key, "k1", {
                let mut c = claims(serde_json::json!({"tollgate_kind": "admin"}));
                c["iss"] = "https://evil".into();
                c
            }),
            sign(&key, "k1", {
                let mut c = claims(serde_json::json!({"tollgate_kind": "admin"}));
                c["aud"] = "other".into();
                c
            }),
            sign(&key, "k1", {
                let mut c = claims(serde_json::json!({"tollgate_kind": "admin"}));
                c["exp"] = (now() - 10).into();
                c
            }),
            sign(&key, "k1", claims(serde_json::json!({}))),
            sign(
                &test_key(8, "k1").0,
                "k1",
                claims(serde_json::json!({"tollgate_kind": "admin"})),
            ),
            sign(
                &key,
                "k2",
                claims(serde_json::json!({"tollgate_kind": "admin"})),
            ),
        ];
        for token in refused {
            assert!(v.verify(&token).is_err(), "{token}");
        }
        let good = sign(
            &key,
            "k1",
            claims(serde_json::json!({"tollgate_kind": "approver"})),
        );
        let mut parts: Vec<&str> = good.split('.').collect();
        let forged = base64url(
            serde_json::to_string(&claims(serde_json::json!({"tollgate_kind": "admin"})))
                .unwrap()
                .as_bytes(),
        );
        parts[1] = &forged;
        assert!(v.verify(&parts.join(".")).is_err());
        // `alg: none` is never taken.
        let none = format!(
            "{}.{}.",
            base64url(br#"{"alg":"none","typ":"JWT","kid":"k1"}"#),
            parts[1]
        );
        assert!(v.verify(&none).is_err());
    }

    #[test]
    fn the_environment_needs_issuer_and_audience_beside_the_keys() {
        let env = |k: &str| (k == "TOLLGATE_JWT_JWKS").then(|| "/nonexistent.json".to_string());
        assert!(matches!(
            JwtVerifier::from_env(&env),
            Some(Err(JwtSetupError::Config(_)))
        ));
        let none = |_: &str| None;
        assert!(JwtVerifier::from_env(&none).is_none());
    }
}
