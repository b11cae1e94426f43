//! The canary corpus: every rule kind, in several variants and settings (a config line, JSON,
//! prose, a shell command), generated deterministically. Recall must be at least 99 %, the
//! independent rescan must find nothing in the scrubbed text, and ordinary text must survive.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;

/// xorshift64: deterministic, no dependencies.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn pick(&mut self, alphabet: &str, n: usize) -> String {
        let chars: Vec<char> = alphabet.chars().collect();
        (0..n)
            .map(|_| chars[(self.next() % chars.len() as u64) as usize])
            .collect()
    }
}

const UPPER_DIGITS: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
const ALNUM: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const B64: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const URLSAFE: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-";
const HEX: &str = "0123456789abcdef";

/// `(kind, secret value, the text it sits in)`.
fn canaries() -> Vec<(&'static str, String, String)> {
    let mut rng = Rng(0x5eed_cafe_f00d_beef);
    let mut out = Vec::new();
    for i in 0..12 {
        let wrap = |kind: &'static str, secret: String, line: String| (kind, secret, line);
        let aws = format!("AKIA{}", rng.pick(UPPER_DIGITS, 16));
        out.push(wrap(
            "aws_access_key",
            aws.clone(),
            format!("export AWS_ACCESS_KEY_ID={aws}"),
        ));
        let aws_secret = rng.pick(B64, 40);
        out.push(wrap(
            "aws_secret_key",
            aws_secret.clone(),
            format!("aws_secret_access_key = {aws_secret}"),
        ));
        let gcp = format!("AIza{}", rng.pick(URLSAFE, 35));
        out.push(wrap(
            "gcp_api_key",
            gcp.clone(),
            format!("{{\"key\": \"{gcp}\", \"n\": {i}}}"),
        ));
        let sa = rng.pick(HEX, 40);
        out.push(wrap(
            "gcp_service_account_key",
            sa.clone(),
            format!("{{\"type\": \"service_account\", \"private_key_id\": \"{sa}\"}}"),
        ));
        let azure = format!("{}==", rng.pick(B64, 86));
        out.push(wrap(
            "azure_storage_key",
            azure.clone(),
            format!("DefaultEndpointsProtocol=https;AccountName=acme;AccountKey={azure};EndpointSuffix=core.windows.net"),
        ));
        let gh = format!("ghp_{}", rng.pick(ALNUM, 36));
        out.push(wrap(
            "github_token",
            gh.clone(),
            format!("git clone https://x:{gh}@github.com/acme/api"),
        ));
        let gl = format!("glpat-{}", rng.pick(URLSAFE, 20));
        out.push(wrap(
            "gitlab_token",
            gl.clone(),
            format!("The CI uses {gl} to push."),
        ));
        let slack = format!(
            "xoxb-{}-{}",
            rng.pick("0123456789", 12),
            rng.pick(ALNUM, 24)
        );
        out.push(wrap(
            "slack_token",
            slack.clone(),
            format!("SLACK_BOT_TOKEN: '{slack}'"),
        ));
        let hook = format!(
            "https://hooks.slack.com/services/T{}/B{}/{}",
            rng.pick(UPPER_DIGITS, 8),
            rng.pick(UPPER_DIGITS, 8),
            rng.pick(ALNUM, 24)
        );
        out.push(wrap(
            "slack_webhook",
            hook.clone(),
            format!("curl -X POST {hook} -d @msg.json"),
        ));
        let stripe = format!("sk_live_{}", rng.pick(ALNUM, 24));
        out.push(wrap(
            "stripe_key",
            stripe.clone(),
            format!("Stripe::api_key = \"{stripe}\""),
        ));
        let ant = format!("sk-ant-api03-{}", rng.pick(URLSAFE, 40));
        out.push(wrap(
            "anthropic_key",
            ant.clone(),
            format!("client = Anthropic(api_key=\"{ant}\")"),
        ));
        let oai = format!("sk-proj-{}", rng.pick(URLSAFE, 40));
        out.push(wrap(
            "openai_key",
            oai.clone(),
            format!("OPENAI_API_KEY={oai} python agent.py"),
        ));
        let npm = format!("npm_{}", rng.pick(ALNUM, 36));
        out.push(wrap(
            "npm_token",
            npm.clone(),
            format!("//registry.npmjs.org/:_authToken={npm}"),
        ));
        let jwt = format!(
            "eyJ{}.eyJ{}.{}",
            rng.pick(URLSAFE, 20),
            rng.pick(URLSAFE, 40),
            rng.pick(URLSAFE, 43)
        );
        out.push(wrap(
            "jwt",
            jwt.clone(),
            format!("the session cookie was {jwt} until it expired"),
        ));
        let pw = rng.pick(ALNUM, 14);
        out.push(wrap(
            "connection_string",
            pw.clone(),
            format!("DATABASE_URL=postgres://app:{pw}@db.internal:5432/acme"),
        ));
        let basic = rng.pick(B64, 28);
        out.push(wrap(
            "basic_auth",
            basic.clone(),
            format!("Authorization: Basic {basic}"),
        ));
        let bearer = rng.pick(URLSAFE, 32);
        out.push(wrap(
            "bearer_token",
            bearer.clone(),
            format!("curl -H 'Authorization: Bearer {bearer}' https://api"),
        ));
        let secret = rng.pick(ALNUM, 12);
        out.push(wrap(
            "assignment",
            secret.clone(),
            format!("db_password: {secret}"),
        ));
        let email = format!(
            "{}.{}@{}.com",
            rng.pick("abcdefghij", 5),
            rng.pick("klmnopqrst", 6),
            rng.pick("uvwxyzabc", 5)
        );
        out.push(wrap(
            "email",
            email.clone(),
            format!("Ask {email} before merging."),
        ));
        let phone = format!(
            "+1 {} {} {}",
            rng.pick("23456789", 3),
            rng.pick("0123456789", 3),
            rng.pick("0123456789", 4)
        );
        out.push(wrap(
            "phone",
            phone.clone(),
            format!("On call: {phone} (after 6pm)"),
        ));
        let long = format!("17{}", rng.pick("0123456789", 11));
        out.push(wrap(
            "long_number",
            long.clone(),
            format!("order {long} shipped"),
        ));
        let entropy = rng.pick(B64, 40);
        out.push(wrap(
            "high_entropy",
            entropy.clone(),
            format!("signing_material {entropy}"),
        ));
        let pem = format!(
            "-----BEGIN RSA PRIVATE KEY-----\n{}\n{}\n-----END RSA PRIVATE KEY-----",
            rng.pick(B64, 64),
            rng.pick(B64, 64)
        );
        out.push(wrap(
            "private_key",
            pem.clone(),
            format!("key.pem:\n{pem}\n"),
        ));
    }
    out
}

#[test]
fn every_rule_compiles() {
    assert_eq!(
        COMPILED.len(),
        1 + crate::secrets::formats::TOKENS.len()
            + OWN_KEYS.len()
            + 1
            + crate::secrets::formats::SHAPES.len()
            + PERSONAL.len()
    );
}

#[test]
fn the_canary_corpus_is_caught_with_recall_of_at_least_99_percent_and_rescans_clean() {
    let corpus = canaries();
    let kinds: std::collections::BTreeSet<&str> = corpus.iter().map(|c| c.0).collect();
    assert_eq!(kinds.len(), 23, "every rule kind has canaries");
    let mut scrubber = Scrubber::new();
    let mut missed = Vec::new();
    let mut dirty = Vec::new();
    for (kind, secret, text) in &corpus {
        let out = scrubber.text(text);
        if out.contains(secret.as_str()) {
            missed.push(format!("{kind}: {text}"));
        }
        let left = rescan(&out);
        if !left.is_empty() {
            dirty.push(format!("{kind}: {out} -> {left:?}"));
        }
    }
    let recall = 1.0 - missed.len() as f64 / corpus.len() as f64;
    assert!(
        recall >= 0.99,
        "recall {recall:.3}; missed:\n{}",
        missed.join("\n")
    );
    assert!(dirty.is_empty(), "the rescan finds:\n{}", dirty.join("\n"));
    // The rescan is not vacuous: it flags the raw canaries.
    let flagged = corpus
        .iter()
        .filter(|(_, _, t)| !rescan(t).is_empty())
        .count();
    assert!(
        flagged as f64 >= 0.9 * corpus.len() as f64,
        "{flagged} of {}",
        corpus.len()
    );
}

#[test]
fn the_same_value_gets_the_same_placeholder_and_json_is_scrubbed_string_by_string() {
    let mut s = Scrubber::new();
    let a = s.text("mail ann@acme.dev or bob@acme.dev, then ann@acme.dev again");
    assert_eq!(
        a,
        "mail [REDACTED:email:1] or [REDACTED:email:2], then [REDACTED:email:1] again"
    );
    let v =
        s.json(&serde_json::json!({"to": "bob@acme.dev", "n": 3, "list": ["x", "ann@acme.dev"]}));
    assert_eq!(
        v,
        serde_json::json!({"to": "[REDACTED:email:2]", "n": 3, "list": ["x", "[REDACTED:email:1]"]})
    );
    assert_eq!(s.findings.len(), 5);
    // Scrubbing scrubbed text changes nothing.
    let again = Scrubber::new().text(&a);
    assert_eq!(again, a);
}

#[test]
fn ordinary_text_survives() {
    let text = "Fix GET /users/{id} in src/routes/users.rs (T-101): use fetch_optional.\n\
                See https://docs.rs/reqwest/0.12.9/reqwest/struct.Error.html and run\n\
                `cargo test -p acme-api --lib routes::webhooks::tests::test_fetch_timeout`.\n\
                Commit 3f2a9c1 on 2026-11-25T09:14:03Z; request 550e8400-e29b-41d4-a716-446655440000;\n\
                DB_MAX_CONNECTIONS stays at 5; the rate limit is 1200/min.\n\
                latency p50 12 ms, p99 48 ms, max 310 ms; 3 of 40 runs failed.";
    let out = Scrubber::new().text(text);
    assert_eq!(out, text);
    assert!(rescan(text).is_empty(), "{:?}", rescan(text));
}

#[test]
fn bare_long_numbers_are_scrubbed_so_the_rescan_passes() {
    // Found by reading the rescan: an epoch timestamp in milliseconds is ten or more bare
    // digits, which the rescan takes for a phone number; the scrubber now redacts it too.
    let text = "deployed at 1732573200123 (unix 1732573200); snowflake 1234567890123456789;\n\
                call 06 12 34 56 78; percentiles 10 20 30 40 50 60 70";
    let out = Scrubber::new().text(text);
    assert!(rescan(&out).is_empty(), "{out} -> {:?}", rescan(&out));
    assert!(!out.contains("1732573200"), "{out}");
}
