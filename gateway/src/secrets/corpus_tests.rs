//! A generated corpus for the shared table of secret formats (issue 33): a sample of every
//! token format, written in every shape secrets are written in, through the live redactor and
//! the fixture scrubber; and placeholders and look-alikes that are not secrets. Figures go in
//! RELIABILITY.md.

use serde_json::json;

use super::formats::{SHAPES, TOKENS};
use super::scrub::Scrubber;
use super::{find_spans, redact_secrets};

/// `n` characters of `alphabet`, chosen by a fixed linear congruential sequence from `seed`.
fn chars(alphabet: &str, n: usize, seed: u64) -> String {
    let a: Vec<char> = alphabet.chars().collect();
    let mut x = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            a[((x >> 33) % a.len() as u64) as usize]
        })
        .collect()
}

const UPPER: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZ";
const LOWER: &str = "abcdefghijklmnopqrstuvwxyz";
const DIGITS: &str = "0123456789";
const HEX: &str = "0123456789abcdef";
const ALNUM: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const B64: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const URLSAFE: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-";

/// Samples of every token format, by format name, `seed` varying them.
fn tokens(seed: u64) -> Vec<(&'static str, String)> {
    let c = |alphabet: &str, n: usize, k: u64| chars(alphabet, n, seed * 1000 + k);
    let upnum = format!("{UPPER}{DIGITS}");
    let lownum = format!("{LOWER}{DIGITS}");
    let uuid = |k: u64| {
        format!(
            "{}-{}-{}-{}-{}",
            c(HEX, 8, k * 10),
            c(HEX, 4, k * 10 + 1),
            c(HEX, 4, k * 10 + 2),
            c(HEX, 4, k * 10 + 3),
            c(HEX, 12, k * 10 + 4)
        )
    };
    vec![
        ("aws_access_key", format!("AKIA{}", c(&upnum, 16, 1))),
        ("aws_bedrock_key", format!("ABSK{}=", c(B64, 120, 2))),
        ("github_token", format!("ghp_{}", c(ALNUM, 36, 3))),
        ("github_token", format!("github_pat_{}", c(ALNUM, 82, 4))),
        ("gitlab_token", format!("glpat-{}", c(URLSAFE, 20, 5))),
        ("gitlab_token", format!("glrt-{}", c(URLSAFE, 20, 6))),
        (
            "slack_webhook",
            format!(
                "https://hooks.slack.com/services/T{}/B{}/{}",
                c(&upnum, 8, 7),
                c(&upnum, 10, 8),
                c(ALNUM, 24, 9)
            ),
        ),
        (
            "slack_token",
            format!("xoxb-{}-{}", c(DIGITS, 12, 10), c(ALNUM, 24, 11)),
        ),
        (
            "slack_token",
            format!(
                "xapp-1-A{}-{}-{}",
                c(&upnum, 10, 12),
                c(DIGITS, 13, 13),
                c(HEX, 64, 14)
            ),
        ),
        ("slack_token", format!("xoxe.xoxp-1-{}", c(&upnum, 163, 15))),
        ("stripe_key", format!("sk_live_{}", c(ALNUM, 24, 16))),
        ("gcp_api_key", format!("AIza{}", c(URLSAFE, 35, 17))),
        (
            "anthropic_key",
            format!("sk-ant-api03-{}", c(URLSAFE, 93, 18)),
        ),
        ("openai_key", format!("sk-proj-{}", c(URLSAFE, 48, 19))),
        ("npm_token", format!("npm_{}", c(ALNUM, 36, 20))),
        (
            "pypi_token",
            format!("pypi-AgEIcHlwaS5vcmc{}", c(URLSAFE, 60, 21)),
        ),
        (
            "huggingface_token",
            format!("hf_{}", c(&format!("{UPPER}{LOWER}"), 34, 22)),
        ),
        ("sentry_token", format!("sntrys_eyJ{}", c(B64, 80, 23))),
        ("sentry_token", format!("sntryu_{}", c(HEX, 64, 24))),
        ("atlassian_token", format!("ATATT3x{}", c(URLSAFE, 186, 25))),
        (
            "age_secret_key",
            format!(
                "AGE-SECRET-KEY-1{}",
                c("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58, 26)
            ),
        ),
        (
            "cloudflare_origin_ca_key",
            format!("v1.0-{}-{}", c(HEX, 24, 27), c(HEX, 146, 28)),
        ),
        (
            "sonar_token",
            format!("squ_{}", c(&format!("{LOWER}{DIGITS}"), 40, 29)),
        ),
        ("clickhouse_cloud_key", format!("4b1d{}", c(ALNUM, 38, 30))),
        (
            "maxmind_license_key",
            format!("{}_{}_mmk", c(ALNUM, 6, 31), c(ALNUM, 29, 32)),
        ),
        (
            "sendgrid_key",
            format!("SG.{}.{}", c(URLSAFE, 22, 33), c(URLSAFE, 43, 34)),
        ),
        ("mailgun_key", format!("key-{}", c(HEX, 32, 35))),
        ("shopify_token", format!("shpat_{}", c(HEX, 32, 36))),
        ("digitalocean_token", format!("dop_v1_{}", c(HEX, 64, 37))),
        ("databricks_token", format!("dapi{}", c(HEX, 32, 38))),
        ("grafana_token", format!("glc_{}", c(B64, 40, 39))),
        ("vault_token", format!("hvs.{}", c(URLSAFE, 90, 40))),
        (
            "terraform_token",
            format!(
                "{}.atlasv1.{}",
                c(&format!("{LOWER}{DIGITS}"), 14, 41),
                c(&format!("{LOWER}{DIGITS}"), 67, 42)
            ),
        ),
        (
            "postman_key",
            format!("PMAK-{}-{}", c(HEX, 24, 43), c(HEX, 34, 44)),
        ),
        ("linear_key", format!("lin_api_{}", c(ALNUM, 40, 45))),
        ("newrelic_key", format!("NRAK-{}", c(&upnum, 27, 46))),
        (
            "dynatrace_token",
            format!("dt0c01.{}.{}", c(&upnum, 24, 47), c(&upnum, 64, 48)),
        ),
        ("doppler_token", format!("dp.pt.{}", c(ALNUM, 43, 49))),
        ("pulumi_token", format!("pul-{}", c(HEX, 40, 50))),
        (
            "airtable_token",
            format!("pat{}.{}", c(ALNUM, 14, 51), c(HEX, 64, 52)),
        ),
        (
            "notion_token",
            format!("ntn_{}{}", c(DIGITS, 11, 53), c(ALNUM, 35, 54)),
        ),
        (
            "telegram_bot_token",
            format!("{}:AA{}", c(DIGITS, 10, 55), c(URLSAFE, 33, 56)),
        ),
        ("square_token", format!("sq0atp-{}", c(URLSAFE, 22, 57))),
        (
            "azure_client_secret",
            format!("{}8Q~{}", c(ALNUM, 3, 58), c(ALNUM, 34, 59)),
        ),
        ("onepassword_token", format!("ops_eyJ{}", c(B64, 250, 60))),
        (
            "jwt",
            format!(
                "eyJhbGciOiJIUzI1NiJ9.eyJ{}.{}",
                c(URLSAFE, 40, 61),
                c(URLSAFE, 43, 62)
            ),
        ),
        (
            "jwt_base64",
            format!("ZXlKaGJHY2lPaUpJVXpJMU5pSjku{}", c(B64, 60, 63)),
        ),
        // Formats added against the public scanner's samples (issue 33, second slice).
        ("alibaba_access_key", format!("LTAI{}", c(ALNUM, 20, 64))),
        ("adobe_client_secret", format!("p8e-{}", c(ALNUM, 32, 65))),
        (
            "adyen_api_key",
            format!("AQE{}.{}", c(&lownum, 6, 66), c(URLSAFE, 60, 67)),
        ),
        ("artifactory_key", format!("AKCp{}", c(ALNUM, 69, 68))),
        ("artifactory_key", format!("cmVmd{}", c(ALNUM, 59, 69))),
        (
            "authress_key",
            format!(
                "sc_{}.{}.acc_{}.{}",
                c(&lownum, 10, 70),
                c(&lownum, 4, 71),
                c(&lownum, 10, 72),
                c(URLSAFE, 40, 73)
            ),
        ),
        (
            "braintree_token",
            format!("access_token$production${}", c(ALNUM, 16, 74)),
        ),
        (
            "braintree_token",
            format!("sandbox_{}_{}", c(ALNUM, 8, 75), c(ALNUM, 16, 76)),
        ),
        (
            "castai_key",
            format!("castai_v1_{}_{}", c(ALNUM, 64, 77), c(ALNUM, 8, 78)),
        ),
        ("chieftools_token", format!("ctp_{}", c(ALNUM, 36, 79))),
        (
            "claude_session_url",
            format!("https://claude.ai/code/session_{}", c(ALNUM, 24, 80)),
        ),
        ("clojars_token", format!("CLOJARS_{}", c(&lownum, 60, 81))),
        (
            "defined_networking_key",
            format!("dnkey-{}-{}", c(URLSAFE, 26, 82), c(URLSAFE, 52, 83)),
        ),
        (
            "duffel_token",
            format!("duffel_test_{}", c(URLSAFE, 43, 84)),
        ),
        ("easypost_key", format!("EZAK{}", c(ALNUM, 54, 85))),
        (
            "flutterwave_key",
            format!("FLWSECK_TEST-{}-X", c(HEX, 32, 86)),
        ),
        ("flyio_token", format!("fo1_{}", c(URLSAFE, 43, 87))),
        ("flyio_token", format!("fm2_{}", c(B64, 120, 88))),
        ("frameio_token", format!("fio-u-{}", c(URLSAFE, 64, 89))),
        ("grafana_api_key", format!("eyJrIjoi{}", c(ALNUM, 72, 90))),
        ("groq_key", format!("gsk_{}", c(ALNUM, 48, 91))),
        ("heroku_key", format!("HRKU-AA{}", c(URLSAFE, 58, 92))),
        ("infracost_token", format!("ico-{}", c(ALNUM, 32, 93))),
        ("intra42_secret", format!("s-s4t2ud-{}", c(HEX, 64, 94))),
        (
            "langsmith_key",
            format!("lsv2_pt_{}_{}", c(ALNUM, 32, 95), c(ALNUM, 10, 96)),
        ),
        ("mailchimp_key", format!("{}-us20", c(HEX, 32, 97))),
        (
            "teams_webhook",
            format!(
                "https://acme.webhook.office.com/webhookb2/{}@{}/IncomingWebhook/{}/{}",
                uuid(98),
                uuid(99),
                c(&lownum, 32, 100),
                uuid(101)
            ),
        ),
        (
            "onepassword_secret_key",
            format!(
                "A3-{}-{}-{}-{}-{}",
                c(&upnum, 6, 102),
                c(&upnum, 11, 103),
                c(&upnum, 5, 104),
                c(&upnum, 5, 105),
                c(&upnum, 5, 106)
            ),
        ),
        ("openshift_token", format!("sha256~{}", c(URLSAFE, 43, 107))),
        (
            "planetscale_token",
            format!("pscale_tkn_{}", c(URLSAFE, 43, 108)),
        ),
        ("prefect_token", format!("pnu_{}", c(ALNUM, 36, 109))),
        ("readme_token", format!("rdme_{}", c(ALNUM, 70, 110))),
        ("rubygems_token", format!("rubygems_{}", c(HEX, 48, 111))),
        ("scalingo_token", format!("tk-us-{}", c(URLSAFE, 48, 112))),
        (
            "sendinblue_key",
            format!("xkeysib-{}-{}", c(HEX, 64, 113), c(ALNUM, 16, 114)),
        ),
        ("shippo_token", format!("shippo_live_{}", c(HEX, 40, 115))),
        (
            "sidekiq_credentials",
            format!("{}:{}@gems.contribsys.com", c(HEX, 8, 116), c(HEX, 8, 117)),
        ),
        (
            "sourcegraph_token",
            format!("sgp_{}_{}", c(HEX, 16, 118), c(HEX, 40, 119)),
        ),
        ("twilio_key", format!("SK{}", c(HEX, 32, 120))),
        ("typeform_token", format!("tfp_{}", c(URLSAFE, 59, 121))),
        (
            "ansible_vault",
            format!("$ANSIBLE_VAULT;1.1;AES256\n{}", c(HEX, 80, 123)),
        ),
        (
            "datafactory_runtime_key",
            format!("IR@{}@adf-acme-001@we@{}=", uuid(124), c(B64, 43, 125)),
        ),
        ("private_key_der", format!("MIIE{}", c(B64, 200, 122))),
    ]
}

/// A secret of no known format, as a person picks one.
fn password(seed: u64) -> String {
    format!(
        "{}-{}{}",
        chars(LOWER, 7, seed),
        chars(ALNUM, 6, seed + 1),
        chars(DIGITS, 2, seed + 2)
    )
}

/// The shapes a token is written in: `(shape, text)`; glued to other text only when its
/// format's prefix is distinctive (no word boundary asked before it).
fn shaped(secret: &str, glued: bool) -> Vec<(&'static str, String)> {
    let mut out = vec![("plain", format!("use {secret} for the deploy"))];
    if glued {
        out.push(("glued", format!("key_{secret}_end")));
        out.push(("glued", format!("x{secret}x")));
    }
    out.extend([
        ("env", format!("export SERVICE_KEY={secret}")),
        ("go", format!("ageToken := \"{secret}\"")),
        ("php", format!("$token .= '{secret}';")),
        ("ruby", format!("config[:api_key] => \"{secret}\"")),
        ("make", format!("TOKEN ?= {secret}")),
        ("yaml", format!("credentials:\n  api_key: {secret}\n")),
        ("json", format!("{{\"auth\": {{\"key\": \"{secret}\"}}}}")),
        (
            "xml",
            format!("<settings><apiToken>{secret}</apiToken></settings>"),
        ),
        (
            "call",
            format!("System.setProperty(\"X_TOKEN\", \"{secret}\");"),
        ),
        ("header", format!("Authorization: {secret}")),
        ("zero_width", zero_width(secret)),
    ]);
    out
}

/// `secret` with a zero-width space after its fourth character.
fn zero_width(secret: &str) -> String {
    let cut = secret
        .char_indices()
        .nth(4)
        .map_or(secret.len(), |(i, _)| i);
    format!("token {}\u{200B}{}", &secret[..cut], &secret[cut..])
}

/// Whether any run of 8 characters of `secret` survives in `out` (what is left of it could be
/// put back together), ignoring the zero-width space.
pub(super) fn leaks(out: &str, secret: &str) -> bool {
    // The scrubber's markers name the rule (`[REDACTED:claude_session_url:1]`), not the secret.
    static MARKER: std::sync::LazyLock<regex::Regex> =
        std::sync::LazyLock::new(|| regex::Regex::new(r"\[REDACTED:[^\]]*\]").unwrap());
    let out = MARKER.replace_all(out, "").replace('\u{200B}', "");
    let cs: Vec<char> = secret.chars().collect();
    cs.windows(8.min(cs.len()))
        .any(|w| out.contains(&w.iter().collect::<String>()))
}

/// `text` through the live redactor, as a tool endpoint sees a string argument.
pub(super) fn live(text: &str) -> String {
    redact_secrets(&json!(text), "r")
        .0
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[test]
fn every_format_of_the_shared_table_has_samples_here() {
    let sampled: std::collections::BTreeSet<&str> = tokens(1).iter().map(|t| t.0).collect();
    for (name, ..) in TOKENS {
        assert!(sampled.contains(name), "no sample of `{name}`");
    }
    for (name, pattern, ..) in TOKENS.iter().chain(SHAPES) {
        assert!(regex::Regex::new(pattern).is_ok(), "{name}");
    }
}

/// Every sample of every format, in every shape, with three seeds: gone from the live
/// redactor's output and from the scrubber's.
#[test]
fn the_live_redactor_and_the_scrubber_remove_every_token_of_the_corpus_in_every_shape() {
    let (mut total, mut live_missed, mut scrub_missed) = (0, Vec::new(), Vec::new());
    for seed in 1..=3 {
        for (format, secret) in tokens(seed) {
            // Every sample is found alone, under its own format's name.
            let spans = find_spans(&secret);
            assert!(
                spans.iter().any(|s| s.2 == format),
                "{format}: {secret} found as {spans:?}"
            );
            let glued = TOKENS
                .iter()
                .find(|t| t.0 == format)
                .is_some_and(|t| !t.1.starts_with(r"\b") && !t.1.contains(r"\b("));
            for (shape, text) in shaped(&secret, glued) {
                total += 1;
                if leaks(&live(&text), &secret) {
                    live_missed.push(format!("{format}/{shape}: {text}"));
                }
                if leaks(&Scrubber::new().text(&text), &secret) {
                    scrub_missed.push(format!("{format}/{shape}: {text}"));
                }
            }
        }
    }
    assert!(total > 1500, "{total}");
    eprintln!(
        "token corpus: {total} texts; live missed {}, scrubber missed {}",
        live_missed.len(),
        scrub_missed.len()
    );
    assert_eq!(live_missed, Vec::<String>::new(), "live missed");
    // The scrubber does not unfold zero-width characters: its output is checked by `rescan`,
    // and a split token there is two high-entropy runs at most.
    let scrub_missed: Vec<_> = scrub_missed
        .into_iter()
        .filter(|m| !m.contains("/zero_width"))
        .collect();
    assert_eq!(scrub_missed, Vec::<String>::new(), "scrubber missed");
}

/// Secrets of no known format are found by the name they are written under, in every way the
/// field tests saw them written; a JSON field named for a secret is redacted whole.
#[test]
fn a_secret_of_no_known_format_is_found_by_the_name_it_is_written_under() {
    let mut missed = Vec::new();
    let mut total = 0;
    for seed in 1..=20 {
        let pw = password(seed * 7);
        let basic = chars(B64, 24, seed);
        let shapes = [
            (format!("ageToken := \"{pw}\""), pw.clone()),
            (format!("db_password ::= '{pw}'"), pw.clone()),
            (format!("'api_key' => '{pw}'"), pw.clone()),
            (format!("var apiToken string = \"{pw}\""), pw.clone()),
            (format!("$secret .= \"{pw}\";"), pw.clone()),
            (format!("CLIENT_SECRET ?= {pw}"), pw.clone()),
            (format!("password={pw}"), pw.clone()),
            (format!("<password>{pw}</password>"), pw.clone()),
            (
                format!("props.setProperty(\"X_TOKEN\", \"{pw}\")"),
                pw.clone(),
            ),
            (
                format!("curl -u admin:{pw} https://api.example.net"),
                pw.clone(),
            ),
            (format!("Authorization: Basic {basic}"), basic.clone()),
            (format!("authorization: token {pw}"), pw.clone()),
        ];
        for (text, secret) in shapes {
            total += 1;
            let out = live(&text);
            if out.contains(&secret) {
                missed.push(format!("{text} -> {out}"));
            }
        }
        let args = json!({"user": "ops", "password": pw, "nested": {"clientSecret": pw}});
        let (redacted, spans) = redact_secrets(&args, "r");
        assert_eq!(spans, 2, "{redacted}");
        assert!(!redacted.to_string().contains(&pw), "{redacted}");
    }
    eprintln!("named secrets: {total} texts; live missed {}", missed.len());
    assert_eq!(missed, Vec::<String>::new(), "of {total}");
}

/// Placeholders and look-alikes are not secrets: at most one in ten is redacted.
#[test]
fn placeholders_and_look_alikes_are_mostly_left_alone() {
    let negatives = [
        "password=xxxxxxxx",
        "api_key: YOUR_API_KEY",
        "token = \"<your-token-here>\"",
        "SECRET_KEY=${SECRET_KEY}",
        "password: {{ vault_password }}",
        "\"apiKey\": \"EXAMPLE_KEY\"",
        "aws_secret_access_key = AKIAIOSFODNN7EXAMPLE",
        "db_password: changeme",
        "token: null",
        "password = process.env.DB_PASSWORD",
        "API_TOKEN=$API_TOKEN",
        "password: ********",
        "client_secret: placeholder",
        "token := os.Getenv(\"TOKEN\")",
        "the token expires in an hour",
        "pass the api key in a header",
        "sk-learn is a library",
        "key-value stores",
        "my-password-manager",
        "see https://docs.example.com/tokens",
        "password_reset_url = /reset",
        "ghp_ is GitHub's prefix",
        "AKIA prefixes AWS key ids",
        "xoxb tokens are bot tokens",
        "a 40-character hex string like a commit 3f786850e387550fdab836ed7e6dc881de23001b",
        "uuid 123e4567-e89b-12d3-a456-426614174000",
        "Authorization: Bearer <token>",
        "curl -u user:password",
        "<password></password>",
        "\"password\": \"\"",
    ];
    let fired: Vec<&str> = negatives
        .iter()
        .copied()
        .filter(|n| !find_spans(n).is_empty())
        .collect();
    eprintln!(
        "placeholders and look-alikes: {} of {} fired: {fired:?}",
        fired.len(),
        negatives.len()
    );
    assert!(
        fired.len() * 10 <= negatives.len(),
        "{} of {} fired: {fired:#?}",
        fired.len(),
        negatives.len()
    );
    // A JSON field named for a secret holding a placeholder is not redacted.
    for value in ["", "YOUR_TOKEN", "${TOKEN}", "********", "<token>"] {
        let (_, spans) = redact_secrets(&json!({"token": value}), "r");
        assert_eq!(spans, 0, "{value}");
    }
}

/// `secret` is gone from `text` through both paths.
fn removed_by_both(text: &str, secret: &str) {
    let out = live(text);
    assert!(!leaks(&out, secret), "live: {text:?} -> {out:?}");
    let out = Scrubber::new().text(text);
    assert!(!leaks(&out, secret), "scrubber: {text:?} -> {out:?}");
}

/// Bug (issue 33, measured on the public scanner's samples): JSON escaped inside a string
/// (`\"api_token\": \"…\"`) kept its value, the name's closing `\"` not read as a quote.
#[test]
fn an_escaped_json_value_after_a_secret_name_is_redacted() {
    let pw = password(3);
    removed_by_both(
        &format!("\\{{\n    \\\"acme_token\\\": \\\"{pw}\\\"\n\\}}"),
        &pw,
    );
}

/// Bug: `api_token: |` and the value on the next line: `|` was taken for the value (and
/// passed over as a placeholder), the secret kept.
#[test]
fn a_yaml_block_scalar_after_a_secret_name_is_redacted() {
    let pw = password(4);
    for indicator in ["|", ">", "|-", ">+"] {
        removed_by_both(&format!("acme_token: {indicator}\n  {pw}\n"), &pw);
    }
}

/// Bug: an XML element whose value is on a line of its own was not read.
#[test]
fn a_multiline_xml_element_is_redacted() {
    let pw = password(5);
    removed_by_both(&format!("<acmeToken>\n    {pw}\n</acmeToken>"), &pw);
}

/// Bug: Make's `:::=` was read as `:` and a value `::=`, the secret after it kept; a CSV row
/// (`acmeToken,…,`) was not read at all.
#[test]
fn a_make_evaluated_shell_assignment_is_redacted() {
    let pw = password(6);
    removed_by_both(&format!("ACME_TOKEN :::= \"{pw}\""), &pw);
    removed_by_both(&format!("acmeToken,{pw},"), &pw);
}

/// Bug: a routable GitLab token (`glpat-….xxxxxxxxx`) lost its part before the dot only;
/// Dynatrace tokens were matched in upper case only; Slack webhooks only with `https://`.
#[test]
fn routable_gitlab_mixed_case_dynatrace_and_bare_slack_webhook_tokens_are_removed_whole() {
    let routable = format!("glpat-{}.{}", chars(ALNUM, 27, 1), chars(ALNUM, 9, 2));
    removed_by_both(&format!("use {routable} now"), &routable);
    let dynatrace = format!("dt0c01.{}.{}", chars(ALNUM, 24, 3), chars(ALNUM, 64, 4));
    removed_by_both(&format!("use {dynatrace} now"), &dynatrace);
    let hook = format!("hooks.slack.com/services/{}", chars(ALNUM, 44, 5));
    removed_by_both(&format!("post to {hook}"), &hook);
}

/// Bug: `curl --user kevin:'pw'` (the password quoted apart) and `-u ":pw"` (no user name) kept
/// the password; `Authorization: Api-Token …` redacted the scheme and kept the credential.
#[test]
fn curl_credentials_quoted_apart_and_api_token_schemes_are_redacted() {
    let pw = password(7);
    removed_by_both(&format!("curl --user kevin:'{pw}' -X PATCH"), &pw);
    removed_by_both(&format!("curl -u \":{pw}\" https://localhost:9200"), &pw);
    let key = chars(&format!("{LOWER}{DIGITS}"), 40, 8);
    removed_by_both(&format!("curl -H \"Authorization: Api-Token {key}\""), &key);
    for clean in [
        "curl -i -u 'test:test'",
        "curl -u username:token",
        "curl --user \"xxx:yyy\"",
        "curl -u <user:password> https://test.com/endpoint",
        "curl --user neo4j:[PASSWORD] http://[IP]:7474/db/data/",
        "curl -u \"${username}:${password}\"",
    ] {
        assert_eq!(find_spans(clean), [], "{clean}");
    }
}

/// A token of a known format written out masked (`AKIAXXXXXXXXXXXXXXXX`) or with filler for its
/// random part (issue 33: lowercase `x`, counting, a repeating stretch, a word documentation
/// puts there) is not a secret to the live path; a real token that merely repeats a digit
/// here and there is.
#[test]
fn a_masked_token_or_one_of_filler_is_not_a_secret() {
    for clean in [
        "key = AKIAXXXXXXXXXXXXXXXX",
        "glpat-XXXXXXXXXXX-XXXXXXXX",
        "PREFECT_API_KEY = \"pnu_XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX\"",
        "glpat-xxxxxxxxxxxxxxxxxxxx",
        "GSK_API_KEY=gsk_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
        "sgp_5555555dAAAAA7777777CcccCFaaaaaaaaaaaaaa",
        "sk_live_abcdefghijklmnopqrstuvwxyz123",
        "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB",
        "LANGCHAIN_API_KEY=ls__0123456789abcdef0123456789abcdef",
        "AKIAIOSFODNN7EXAMPLE",
        "xoxe.xoxp-1-RANDOMSTRINGHERE",
        "api_key: x9kx9kx9kx9kx9kx9kx9k",
        "<add key=\"ClearTextPassword\" value=\"abc\" />",
    ] {
        assert_eq!(find_spans(clean), [], "{clean}");
    }
    // The scrubber keeps filler a secret: a fixture loses nothing by it.
    assert_ne!(
        Scrubber::new().text("glpat-xxxxxxxxxxxxxxxxxxxx"),
        "glpat-xxxxxxxxxxxxxxxxxxxx"
    );
    for secret in [
        "glpat-lqvjrmmfvdbluxvrdcec",
        "xoxa-2-511111111-31111111111-3111111111111-e039d02840a0b9379c",
        "ghp_4288649736iajfpjajjzxgjobhitnqllwdgaNK",
    ] {
        removed_by_both(&format!("token {secret}"), secret);
    }
}

/// Generated tokens of every format are not filler: the checks that pass filler over leave
/// random tokens alone (a sequence or a repeat by chance is rarer than one in a million).
#[test]
fn random_tokens_are_never_taken_for_filler() {
    for seed in 1..=20 {
        for (name, token) in tokens(seed) {
            assert!(!super::formats::filler(&token), "{name}: {token}");
        }
    }
}

/// Bug: a YAML key named for a secret took the next line's key for its value (`kind: Secret`,
/// then `metadata:` / `name: db` lost `name:`), the operator and value read across lines.
#[test]
fn a_yaml_key_named_for_a_secret_does_not_take_the_next_lines_key_for_its_value() {
    for clean in [
        "kind: Secret\nmetadata:\n  name: registry-auth-data\n",
        "login:\n  serviceAccountToken:\n    fn::invoke: vault\n",
    ] {
        assert_eq!(find_spans(clean), [], "{clean}");
    }
}

/// A value that names another variable (`var.db_password`, `ACCESS_TOKEN`, `{SumoAccessKey}`,
/// `$(cat token.txt)`) is a reference, not a secret; the same words quoted are kept a secret.
#[test]
fn a_reference_to_another_variable_is_not_a_secret() {
    for clean in [
        "administrator_login_password = var.db_password",
        "access_token=ACCESS_TOKEN",
        "SUMO_ACCESS_KEY={SumoAccessKey}",
        "API_TOKEN=$(cat ./token.txt)",
        "-e SUMO_ACCESS_KEY=`etcdctl get /sumologic_secret`",
        "credentials: new AWS.SharedIniFileCredentials({ profile: '<YOUR_PROFILE>' })",
    ] {
        assert_eq!(find_spans(clean), [], "{clean}");
    }
    assert_ne!(find_spans("db_password = \"ACCESS_TOKEN_2024\""), []);
}

/// The generic rule of public scanners: a key-like value after a looser name is a secret;
/// words, versions and paths after such a name are not.
#[test]
fn a_key_like_value_after_a_loose_name_is_redacted_and_words_are_not() {
    for seed in 1..=10 {
        let key = chars(ALNUM, 32, seed);
        for text in [
            format!("\"client_id\" : \"{key}\""),
            format!("const HEROKU_KEY = \"{key}\""),
            format!("sumologic.accessId = \"{key}\""),
        ] {
            removed_by_both(&text, &key);
        }
    }
    for clean in [
        "client_vpn_endpoint_id = aws_ec2_client_vpn_endpoint.client-vpn-endpoint.id",
        "\"api_version\": \"2024-02-15-preview\"",
        "access_log = /var/log/nginx/access.log",
        "\"api_base\": \"https://api.acme.dev/v1\"",
        "keyboard: us-intl-altgr",
    ] {
        assert_eq!(find_spans(clean), [], "{clean}");
    }
}

/// A Kubernetes `Secret`'s data values are secrets by where they are, named or not; the same
/// YAML of another kind, or an empty or templated value, is left alone.
#[test]
fn the_data_of_a_kubernetes_secret_is_redacted() {
    let value = chars(B64, 24, 9);
    let secret = format!(
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\ntype: Opaque\ndata:\n  extra: {value}=\n  .dockercfg: |\n    {value}\n"
    );
    removed_by_both(&secret, &value);
    for clean in [
        secret.replace("kind: Secret", "kind: ExternalSecret"),
        "apiVersion: v1\nkind: Secret\ndata:\n  htpasswd: ''\n  password: {{ .Values.Password }}\n"
            .to_string(),
    ] {
        assert_eq!(find_spans(&clean), [], "{clean}");
    }
}

/// Bug (issue 33, the public scanner's false positives): the next manifest's `kind:` after a
/// `kind: Secret` was taken for the secret's data, and a value that only names a secret
/// (`secretKey: api-key`) for a secret.
#[test]
fn a_manifests_own_fields_and_a_secrets_name_for_a_value_are_not_secrets() {
    for clean in [
        "apiVersion: v1\nkind: Secret\ndata:\n  htpasswd: {{ htpasswd }}\n---\napiVersion: v1\n  kind: ReplicationController",
        "data:\n  - secretKey: api-key\n    remoteRef:\n      key: my-secrets-manager-secret",
        "apiVersion: external-secrets.io/v1beta1",
    ] {
        assert_eq!(find_spans(clean), [], "{clean}");
    }
    removed_by_both(
        "kind: Secret\ndata:\n  token: c2VjcmV0LXZhbHVlLTk4NzY1\n",
        "c2VjcmV0LXZhbHVlLTk4NzY1",
    );
}
