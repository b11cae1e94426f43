//! JWTs from a team's identity provider (issue 32), with keys this test makes: a gateway
//! started with `TOLLGATE_JWT_JWKS`, `TOLLGATE_JWT_ISSUER` and `TOLLGATE_JWT_AUDIENCE` takes
//! an agent's and an approver's JWT as their principals, and refuses a forged, expired or
//! foreign one.

use jsonwebtoken::{Algorithm, EncodingKey, Header, encode};
use serde_json::{Value, json};

use super::support::{Gateway, TempDir};

const ISSUER: &str = "https://idp.acme.test";

/// An Ed25519 key from a seed: what signs (PKCS#8) and the JWKS that verifies.
fn key(seed: u8, kid: &str) -> (EncodingKey, String) {
    let signing = ed25519_dalek::SigningKey::from_bytes(&[seed; 32]);
    let mut pkcs8 = vec![
        0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04,
        0x20,
    ];
    pkcs8.extend_from_slice(&[seed; 32]);
    let x = base64url(signing.verifying_key().as_bytes());
    let jwks = format!(
        r#"{{"keys": [{{"kty": "OKP", "crv": "Ed25519", "alg": "EdDSA", "kid": "{kid}", "x": "{x}"}}]}}"#
    );
    (EncodingKey::from_ed_der(&pkcs8), jwks)
}

fn base64url(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

fn jwt(key: &EncodingKey, claims: Value) -> String {
    let mut header = Header::new(Algorithm::EdDSA);
    header.kid = Some("team-key".into());
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let mut all = json!({"iss": ISSUER, "aud": "tollgate", "exp": now + 600});
    all.as_object_mut()
        .unwrap()
        .extend(claims.as_object().unwrap().clone());
    encode(&header, &all, key).unwrap()
}

#[test]
fn an_identity_providers_jwts_stand_for_agents_and_approvers() {
    let dir = TempDir::new("jwks");
    let (signer, jwks) = key(3, "team-key");
    let file = dir.path().join("jwks.json");
    std::fs::write(&file, jwks).unwrap();
    let envelopes = super::support::root().join("fixtures/envelopes");
    let gw = Gateway::start_args(
        &[
            ("TOLLGATE_JWT_JWKS", file.to_str().unwrap()),
            ("TOLLGATE_JWT_ISSUER", ISSUER),
            ("TOLLGATE_JWT_AUDIENCE", "tollgate"),
        ],
        &["--envelopes", envelopes.to_str().unwrap()],
    );
    let agent = jwt(
        &signer,
        json!({"sub": "svc-coder", "tollgate_kind": "agent", "tollgate_agent": "coder",
               "tollgate_max_scope": "org:acme"}),
    );
    let lead = jwt(
        &signer,
        json!({"sub": "u-17", "tollgate_kind": "approver", "tollgate_name": "team-lead"}),
    );
    let open = |token: &str, agent: &str| {
        gw.call_as(
            token,
            "POST",
            "/v1/runs",
            Some(&json!({"id": format!("jwt-{agent}"), "agent": agent, "task": "t", "scope": "org:acme/repo:api"})),
        )
    };
    let (status, run) = open(&agent, "coder");
    assert_eq!(status, 201, "{run}");
    assert_eq!(
        run["run"]["metadata"]["opened_by"],
        format!("jwt:{ISSUER}#svc-coder")
    );
    let (status, refused) = open(&agent, "deployer");
    assert_eq!(status, 403, "{refused}");
    assert_eq!(refused["error"]["code"], "other_agent");
    let (_, gated) = gw.call_as(
        &agent,
        "POST",
        "/v1/runs/jwt-coder/tool-calls",
        Some(&json!({"tool": "shell.exec", "arguments": {"cmd": "make test"}})),
    );
    assert_eq!(gated["effect"], "require_approval", "{gated}");
    let id = gated["approval"]["id"].as_str().unwrap();
    let path = format!("/v2/policies/approvals/{id}");
    let (status, _) = gw.call_as(&agent, "POST", &path, Some(&json!({"decision": "approve"})));
    assert_eq!(status, 403, "the agent's JWT approves nothing");
    let (status, decided) = gw.call_as(&lead, "POST", &path, Some(&json!({"decision": "approve"})));
    assert_eq!(status, 200, "{decided}");
    assert_eq!(decided["decided_by"], "team-lead");

    // Refused: another key, another issuer, expired, no kind.
    let (stranger, _) = key(4, "team-key");
    let forged = jwt(&stranger, json!({"sub": "x", "tollgate_kind": "admin"}));
    let foreign = jwt(
        &signer,
        json!({"sub": "x", "tollgate_kind": "admin", "iss": "https://evil.test"}),
    );
    let expired = jwt(
        &signer,
        json!({"sub": "x", "tollgate_kind": "admin", "exp": 1_000_000}),
    );
    let kindless = jwt(&signer, json!({"sub": "x"}));
    for token in [forged, foreign, expired, kindless] {
        let (status, _) = gw.call_as(&token, "GET", "/v1/approvals", None);
        assert_eq!(status, 401, "{token}");
    }
}

#[test]
fn a_jwks_without_its_issuer_stops_the_start() {
    let dir = TempDir::new("jwks-half");
    let out = super::support::with_store(
        &mut std::process::Command::new(env!("CARGO_BIN_EXE_tollgate")),
        dir.path(),
    )
    .current_dir(dir.path())
    .env("TOLLGATE_JWT_JWKS", "jwks.json")
    .env_remove("TOLLGATE_JWT_ISSUER")
    .args(["serve", "--port", "0"])
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("TOLLGATE_JWT_ISSUER"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
