//! The one table of secret formats, shared by the live redactor ([`super::find_spans`]) and
//! the fixture scrubber ([`super::scrub`]): tokens known by their shape (a vendor's prefix, a
//! fixed alphabet and length), and the shapes a secret is written in (`NAME = "…"`, `NAME :=
//! "…"`, `<password>…</password>`, `setProperty("X_TOKEN", "…")`, `curl -u user:pw`, an
//! `Authorization:` header). A format known to both is found by both.
//!
//! Prefixes distinctive enough are matched without a word boundary before them, so a token
//! glued to other text (`_AKIA…`, `xAKIA…x`) is still found; short or common prefixes (`sk-`,
//! `key-`) keep theirs.

/// `(name, pattern, group, placeholder_checked)`: the capture group that is the secret (0: the
/// whole match); earlier formats name a span where two overlap. A format whose value is
/// whatever follows a name (an assignment) has `placeholder_checked`: a value that is plainly a
/// placeholder (`xxxx`, `YOUR_TOKEN`, `<token>`, `${TOKEN}`, `changeme`) is not a secret.
pub(crate) type Format = (&'static str, &'static str, usize, bool);

/// The names a secret's holder is given, as a pattern (`db_password`, `apiToken`,
/// `CLIENT_SECRET`, `x-api-key`).
pub(crate) const SECRET_NAME: &str = r"[A-Za-z0-9_.-]*(?:password|passwd|pwd|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|auth[_-]?key|credential|client[_-]?secret)[A-Za-z0-9_-]*";

/// Tokens known by their shape.
pub(crate) const TOKENS: &[Format] = &[
    (
        "aws_access_key",
        r"((?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|APKA|ABIA|ACCA)[0-9A-Z]{16})(?:[^0-9A-Z]|\z)",
        1,
        false,
    ),
    ("aws_bedrock_key", r"ABSK[A-Za-z0-9+/]{60,}={0,2}", 0, false),
    (
        "github_token",
        r"(?:gh[pousr]|github_pat)_[A-Za-z0-9_]{20,}",
        0,
        false,
    ),
    (
        "gitlab_token",
        r"(?:glpat|gldt|glptt|glrt|glcbt|glimt|glft|glsoat|glagent|gloas)-[A-Za-z0-9_-]{20,}|GR1348941[A-Za-z0-9_-]{20,}",
        0,
        false,
    ),
    (
        "slack_webhook",
        r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/_-]{16,}",
        0,
        false,
    ),
    (
        "slack_token",
        r"(?:xoxe\.)?xox[abposre]-[A-Za-z0-9-]{10,}|xapp-\d-[A-Za-z0-9]+-\d+-[A-Za-z0-9]+",
        0,
        false,
    ),
    (
        "stripe_key",
        r"\b(?:sk|rk)_(?:live|test|prod)_[A-Za-z0-9]{10,}",
        0,
        false,
    ),
    ("gcp_api_key", r"AIza[0-9A-Za-z_-]{35}", 0, false),
    ("anthropic_key", r"\bsk-ant-[A-Za-z0-9_-]{20,}", 0, false),
    (
        "openai_key",
        r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{16,}",
        0,
        false,
    ),
    ("npm_token", r"npm_[A-Za-z0-9]{36}", 0, false),
    (
        "pypi_token",
        r"pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{40,}",
        0,
        false,
    ),
    (
        "huggingface_token",
        r"\b(?:hf_|api_org_)[A-Za-z]{34}\b",
        0,
        false,
    ),
    (
        "sentry_token",
        r"sntrys_eyJ[A-Za-z0-9+/=_-]{40,}|sntryu_[a-f0-9]{64}",
        0,
        false,
    ),
    ("atlassian_token", r"AT[AC]TT3[A-Za-z0-9_=-]{60,}", 0, false),
    (
        "age_secret_key",
        r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}",
        0,
        false,
    ),
    (
        "cloudflare_origin_ca_key",
        r"v1\.0-[a-f0-9]{24}-[a-f0-9]{140,160}",
        0,
        false,
    ),
    ("sonar_token", r"\b(?:squ|sqp|sqa)_[a-z0-9]{40}\b", 0, false),
    ("clickhouse_cloud_key", r"\b4b1d[A-Za-z0-9]{38}\b", 0, false),
    (
        "maxmind_license_key",
        r"\b[A-Za-z0-9]{6}_[A-Za-z0-9]{29}_mmk\b",
        0,
        false,
    ),
    (
        "sendgrid_key",
        r"SG\.[A-Za-z0-9_-]{20,24}\.[A-Za-z0-9_-]{40,45}",
        0,
        false,
    ),
    ("mailgun_key", r"\bkey-[0-9a-f]{32}\b", 0, false),
    (
        "shopify_token",
        r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}",
        0,
        false,
    ),
    ("digitalocean_token", r"do[por]_v1_[a-f0-9]{64}", 0, false),
    (
        "databricks_token",
        r"\bdapi[a-f0-9]{32}(?:-\d)?\b",
        0,
        false,
    ),
    (
        "grafana_token",
        r"glc_[A-Za-z0-9+/]{32,}={0,2}|glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}",
        0,
        false,
    ),
    ("vault_token", r"hv[sb]\.[A-Za-z0-9_-]{24,}", 0, false),
    (
        "terraform_token",
        r"\b[a-z0-9]{14}\.atlasv1\.[a-z0-9_=-]{60,70}",
        0,
        false,
    ),
    ("postman_key", r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}", 0, false),
    ("linear_key", r"lin_api_[A-Za-z0-9]{40}", 0, false),
    ("newrelic_key", r"NRAK-[A-Z0-9]{27}", 0, false),
    (
        "dynatrace_token",
        r"dt0c01\.[A-Z0-9]{24}\.[A-Z0-9]{64}",
        0,
        false,
    ),
    ("doppler_token", r"dp\.pt\.[A-Za-z0-9]{43}", 0, false),
    ("pulumi_token", r"pul-[a-f0-9]{40}", 0, false),
    (
        "airtable_token",
        r"\bpat[A-Za-z0-9]{14}\.[a-f0-9]{64}\b",
        0,
        false,
    ),
    (
        "notion_token",
        r"\b(?:secret_[A-Za-z0-9]{43}|ntn_[0-9]{11}[A-Za-z0-9]{35})\b",
        0,
        false,
    ),
    (
        "telegram_bot_token",
        r"\b\d{8,10}:AA[A-Za-z0-9_-]{33}",
        0,
        false,
    ),
    (
        "square_token",
        r"sq0(?:atp|csp)-[0-9A-Za-z_-]{22,43}",
        0,
        false,
    ),
    (
        "azure_client_secret",
        r"\b[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.-]{31,34}",
        0,
        false,
    ),
    (
        "onepassword_token",
        r"ops_eyJ[A-Za-z0-9+/]{100,}={0,3}",
        0,
        false,
    ),
    (
        "jwt",
        r"\beyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}",
        0,
        false,
    ),
    // A JWT wrapped in base64 (`eyJ` encodes as `ZXlK`).
    ("jwt_base64", r"\bZXlK[A-Za-z0-9+/]{40,}={0,2}", 0, false),
];

/// The shapes a secret is written in, after a name that says it is one.
pub(crate) const SHAPES: &[Format] = &[
    // `Authorization: Basic …`, `Authorization: token …`, or a bare credential.
    (
        "authorization_header",
        r#"(?i)\bauthorization["']?\s*[:=]\s*["']?(?:basic|token|digest|apikey|api-key)?\s*([A-Za-z0-9._~+/-]{8,}=*)"#,
        1,
        true,
    ),
    (
        "bearer_token",
        r"(?i)\bbearer\s+([A-Za-z0-9._~+/-]{8,}=*)",
        1,
        false,
    ),
    // `curl -u user:password`, `--user user:password`.
    (
        "user_password",
        r#"(?:^|\s)(?:-u|--user)\s*["']?[^\s:"']+:([^\s"']+)"#,
        1,
        true,
    ),
    // `<password>…</password>`, `<add key="ApiToken" value="…"/>` is an assignment below.
    (
        "xml_element",
        r"(?i)<([A-Za-z0-9_.:-]*(?:password|passwd|pwd|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|credential)[A-Za-z0-9_.:-]*)>([^<\n]+)</",
        2,
        true,
    ),
    // `setProperty("X_TOKEN", "…")`, `os.environ["API_KEY"] = …` is an assignment below.
    (
        "assignment_call",
        r#"(?i)["'][A-Za-z0-9_.-]*(?:password|passwd|pwd|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|credential)[A-Za-z0-9_-]*["']\s*,\s*("[^"\n]*"|'[^'\n]*')"#,
        1,
        true,
    ),
    // `password=…`, `db_password: …`, `"api_key": "…"`, `apiToken := "…"`, `$token .= '…'`,
    // `TOKEN ?= …`, `var apiToken string = "…"`, `key => "…"`: the value, quotes included. The
    // operator is read whole, so `:=` is not taken for `:` and a value `=…`.
    (
        "assignment",
        r#"(?i)[A-Za-z0-9_.-]*(?:password|passwd|pwd|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|auth[_-]?key|credential|client[_-]?secret)[A-Za-z0-9_-]*["'\]]*(?:\s+[A-Za-z_][A-Za-z0-9_]*)?\s*(?:::=|:=|=>|\?=|\.=|\+=|:|=)\s*("[^"\n]*"|'[^'\n]*'|`[^`\n]*`|[^\s"'`,;=>][^\s"'`,;]*)"#,
        1,
        true,
    ),
];

/// Whether an assigned value is plainly a placeholder, not a secret: empty, one character
/// repeated (`xxxxxx`, `******`), a template (`<token>`, `${TOKEN}`, `{{ token }}`,
/// `%(token)s`, `$TOKEN`), a reference to where the secret lives (`process.env.X`,
/// `os.environ[...]`), an example in words only (`EXAMPLE`, `your_token_here`, `changeme`) or a
/// literal (`null`, `true`). (A marker already there, `[REDACTED…]`, is redacted again by the
/// live path, as recorded runs were; the scrubber passes it over.)
pub(crate) fn is_placeholder(value: &str) -> bool {
    let v = value
        .trim_matches(|c| c == '"' || c == '\'' || c == '`')
        .trim();
    if v.is_empty() {
        return true;
    }
    let mut chars = v.chars();
    let first = chars.next().unwrap_or(' ');
    if chars.all(|c| c == first) {
        return true;
    }
    let lower = v.to_ascii_lowercase();
    let templated = (v.starts_with('<') && v.ends_with('>'))
        || v.starts_with("${")
        || v.starts_with("{{")
        || v.starts_with("%(")
        || (v.starts_with('$')
            && v[1..]
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_'));
    let referenced = ["process.env", "os.environ", "os.getenv", "env(", "getenv("]
        .iter()
        .any(|r| lower.starts_with(r));
    let literal = matches!(
        lower.as_str(),
        "null" | "none" | "nil" | "true" | "false" | "undefined" | "required" | "optional"
    );
    // Words only (`EXAMPLE_KEY`, `your-token-here`): a value with digits or symbols beside
    // such a word (`wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY`) is kept a secret, failing closed.
    let wordy = v
        .chars()
        .all(|c| c.is_ascii_alphabetic() || matches!(c, '_' | '-' | '.' | ' '));
    let example = wordy
        && [
            "example",
            "placeholder",
            "changeme",
            "change_me",
            "change-me",
            "your_",
            "your-",
            "yourtoken",
            "yourpassword",
            "xxxx",
            "****",
            "dummy",
            "redacted",
            "<your",
            "insert_",
            "replace_me",
            "todo",
        ]
        .iter()
        .any(|p| lower.contains(p));
    templated || referenced || literal || example
}

/// Zero-width characters and soft hyphens, dropped before detecting (a token split by one is
/// still the token); non-breaking and other Unicode hyphens, read as `-`.
pub(crate) fn unfolded(text: &str) -> Option<(String, Vec<usize>)> {
    let hidden = |c: char| {
        matches!(
            c,
            '\u{200B}'..='\u{200D}' | '\u{2060}' | '\u{FEFF}' | '\u{00AD}'
        )
    };
    let hyphen = |c: char| matches!(c, '\u{2010}'..='\u{2014}' | '\u{2212}');
    if !text.chars().any(|c| hidden(c) || hyphen(c)) {
        return None;
    }
    // `at[i]`: the byte of `text` that byte `i` of the unfolded text came from.
    let mut out = String::with_capacity(text.len());
    let mut at = Vec::with_capacity(text.len() + 1);
    for (i, c) in text.char_indices() {
        if hidden(c) {
            continue;
        }
        let c = if hyphen(c) { '-' } else { c };
        for _ in 0..c.len_utf8() {
            at.push(i);
        }
        out.push(c);
    }
    at.push(text.len());
    Some((out, at))
}
