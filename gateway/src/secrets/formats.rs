//! The one table of secret formats, shared by the live redactor ([`super::find_spans`]) and
//! the fixture scrubber ([`super::scrub`]): tokens known by their shape (a vendor's prefix, a
//! fixed alphabet and length; [`TOKENS`], in `formats/tokens.rs`), and the shapes a secret is
//! written in (`NAME = "…"`, `NAME :=  "…"`, `<password>…</password>`, `setProperty("X_TOKEN",
//! "…")`, `curl -u user:pw`, an `Authorization:` header, a YAML block, a Kubernetes `Secret`'s
//! data). A format known to both is found by both.
//!
//! Prefixes distinctive enough are matched without a word boundary before them, so a token
//! glued to other text (`_AKIA…`, `xAKIA…x`) is still found; short or common prefixes (`sk-`,
//! `key-`) keep theirs.

use std::sync::LazyLock;

use regex::Regex;

mod tokens;

pub(crate) use tokens::TOKENS;

/// What a match must also pass to be taken for a secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Check {
    /// A token by its format: passed over only when it is plainly filler (`AKIAXXXXXXXXXXXX`,
    /// `glpat-XXXXXXXXXXX-XXXXXXXX`).
    Format,
    /// A value after a name that says it is a secret: passed over when it is a placeholder.
    Placeholder,
    /// A value after a looser name (`client_id`, `auth`, `heroku_key`): a secret only when it
    /// looks like a key (long enough, letters and digits, varied), as generic scanners judge.
    KeyLike,
}

/// `(name, pattern, group, check)`: the capture group that is the secret (0: the whole match);
/// earlier formats name a span where two overlap.
pub(crate) type Format = (&'static str, &'static str, usize, Check);

/// The names a secret's holder is given, as a pattern (`db_password`, `apiToken`,
/// `CLIENT_SECRET`, `x-api-key`).
pub(crate) const SECRET_NAME: &str = r"[A-Za-z0-9_.-]*(?:password|passwd|pwd|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|auth[_-]?key|credential|client[_-]?secret)[A-Za-z0-9_-]*";

/// The shapes a secret is written in, after a name that says it is one.
pub(crate) const SHAPES: &[Format] = &[
    // `Authorization: Basic …`, `Authorization: Api-Token …`, or a bare credential.
    (
        "authorization_header",
        r#"(?i)\bauthorization["']?\s*[:=]\s*["']?(?:(?:basic|token|digest|apikey|api-key|api-token|key)\s+)?([A-Za-z0-9._~+/-]{8,}=*)"#,
        1,
        Check::Placeholder,
    ),
    (
        "bearer_token",
        r"(?i)\bbearer\s+([A-Za-z0-9._~+/-]{8,}=*)",
        1,
        Check::Format,
    ),
    // `curl -u user:password`, `--user 'user:password'`, `-u ":password"`, `--user=u:'pw'`.
    (
        "user_password",
        r#"(?:^|\s)(?:-u|--user)(?:=|\s+)["']?[^\s:"']*["']?:["']?([^\s"']+)"#,
        1,
        Check::Placeholder,
    ),
    // `<password>…</password>`, also with the value on a line of its own; the value ends at
    // the closing tag (named for a secret too), so a `<` inside it is read.
    (
        "xml_element",
        r"(?i)<([$A-Za-z0-9_.:-]*(?:password|passwd|pwd|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|credential)[A-Za-z0-9_.:-]*)>\s*([^\s][^\n]*?)\s*</[$A-Za-z0-9_.:-]*(?:password|passwd|pwd|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|credential)",
        2,
        Check::Placeholder,
    ),
    // `setProperty("X_TOKEN", "…")`, `os.environ["API_KEY"] = …` is an assignment below.
    (
        "assignment_call",
        r#"(?i)["'][A-Za-z0-9_.-]*(?:password|passwd|pwd|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|credential)[A-Za-z0-9_-]*["']\s*,\s*("[^"\n]*"|'[^'\n]*')"#,
        1,
        Check::Placeholder,
    ),
    // `api_token: |` and the value on the next line (a YAML block scalar). Before the
    // assignment below, which takes `|` for the value and passes it over as a placeholder.
    (
        "yaml_block",
        r#"(?i)[A-Za-z0-9_.-]*(?:password|passwd|pwd|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|auth[_-]?key|credential|client[_-]?secret)[A-Za-z0-9_-]*["']?[ \t]*:[ \t]*[|>][-+]?[ \t]*\r?\n[ \t]+([^\s"']+)"#,
        1,
        Check::Placeholder,
    ),
    // `password=…`, `db_password: …`, `"api_key": "…"`, `apiToken := "…"`, `$token .= '…'`,
    // `TOKEN ?= …`, `TOKEN :::= …`, `var apiToken string = "…"`, `key => "…"`, and JSON
    // escaped inside a string (`\"api_token\": \"…\"`): the value, quotes included. The
    // operator is read whole, so `:=` is not taken for `:` and a value `=…`; name, operator and
    // value are on one line, so a YAML key named for a secret does not take the next line's
    // key (`kind: Secret` / `metadata:` / `name:`) for its value.
    (
        "assignment",
        r#"(?i)[A-Za-z0-9_.-]*(?:password|passwd|pwd|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|auth[_-]?key|credential|client[_-]?secret)[A-Za-z0-9_-]*["'\\\]]*(?:[ \t]*(?::::=|::=|:=|=>|\?=|\.=|\+=|:|=)|[ \t]+[A-Za-z_][A-Za-z0-9_]*[ \t]*=)[ \t]*(\\"[^"\n]*?\\"|"[^"\n]*"|'[^'\n]*'|`[^`\n]*`|[^\s"'`,;=>][^\s"'`,;]*)"#,
        1,
        Check::Placeholder,
    ),
    // `apiToken,…,` (a CSV row).
    (
        "csv_field",
        r#"(?i)[A-Za-z0-9_.-]*(?:password|passwd|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|credential)[A-Za-z0-9_-]*,([^\s,"']{8,})(?:,|$)"#,
        1,
        Check::Placeholder,
    ),
    // Sidekiq's gem server credentials, set in the environment under the server's name.
    (
        "sidekiq_secret",
        r#"(?i)BUNDLE_(?:ENTERPRISE|GEMS)__CONTRIBSYS__COM["']?\s*[:=]\s*["']?([a-f0-9]{8}:[a-f0-9]{8})"#,
        1,
        Check::Format,
    ),
    // The generic rule of public scanners: a value after a looser name (`client_id`, `auth`,
    // `api`, `heroku_key`, `sumologic.accessId`, `SONAR_LOGIN`, `oauth2 v0.15.0 h1:…`), up to two words
    // between name and operator, kept only when it looks like a key ([`Check::KeyLike`]).
    (
        "generic_key",
        r#"(?i)[A-Za-z0-9_.-]*(?:key|api|token|secret|client|passwd|password|auth|access|pwd|credential|login)[A-Za-z0-9_.-]*(?:[ \t][A-Za-z0-9_.-]{1,20}){0,2}["'\\\]]*[ \t]*(?::::=|::=|:=|=>|\?=|\.=|\+=|:|=|,)[ \t]*\\?["'`]?([A-Za-z0-9_.=+/~-]{10,150})"#,
        1,
        Check::KeyLike,
    ),
];

/// Whether `value`, found by a format checked by `check`, is a secret on the live path: as
/// [`is_secret_strictly`], and not [`filler`].
pub(crate) fn is_secret(check: Check, value: &str) -> bool {
    is_secret_strictly(check, value) && !filler(value)
}

/// The fixture scrubber's judgement: filler in a token's place is kept a secret, since a
/// fixture loses nothing by it and public scanners' own true positives hold such tokens
/// (`12345678-ABCD-ABCD-ABCD-1234567890AB` as a Snyk token).
pub(crate) fn is_secret_strictly(check: Check, value: &str) -> bool {
    match check {
        Check::Format => !masked(value),
        Check::Placeholder => !is_placeholder(value),
        Check::KeyLike => !is_placeholder(value) && key_like(value),
    }
}

/// Filler where a token's random part belongs, as documentation, tests and examples write it
/// (`glpat-xxxxxxxx-xxxx`, `glc_1111…`, `sgp_5555555dAAAAA7777777…`, `sk_abcdefghijklmno…`,
/// `ls__0123456789abcdef…`, `GR13489411231231231231…`, `AKIAIOSFODNN7EXAMPLE`,
/// `xoxe.xoxp-1-RANDOMSTRINGHERE`): [`low_variety`]; more than 60% of it in runs of four or
/// more of one character; eight or more characters counting up or down (`abcdefgh`,
/// `klmnopqr`, `01234567`, case aside); a stretch of 12 or more repeating with a period of
/// two to four (`123123123123`); or a word documentation puts there (`EXAMPLE`,
/// `RANDOMSTRING`, `…TokenHere`). A random token does any of these with odds below one in a
/// million (a run of eight counting up among 62 characters: 62⁻⁷ a position), so the real
/// tokens of the public scanners' samples stay secrets (`xoxa-2-511111111-31111111111-…`,
/// its ones short of 60%).
pub(crate) fn filler(value: &str) -> bool {
    let cs: Vec<char> = value
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect();
    if cs.is_empty() {
        return false;
    }
    low_variety(value) || mostly_runs(&cs) || counting(&cs) >= 8 || periodic(&cs) || worded(value)
}

/// More than 60% of `cs` in runs of four or more of one character.
fn mostly_runs(cs: &[char]) -> bool {
    let mut in_runs = 0;
    let mut i = 0;
    while i < cs.len() {
        let j = cs[i..].iter().take_while(|&&c| c == cs[i]).count();
        if j >= 4 {
            in_runs += j;
        }
        i += j;
    }
    in_runs * 10 > cs.len() * 6
}

/// The longest stretch of `cs` counting up or down by one (`abcd`, `6543`), within letters or
/// within digits.
fn counting(cs: &[char]) -> usize {
    let step = |a: char, b: char| {
        let same_class = a.is_ascii_digit() == b.is_ascii_digit();
        let d = b as i32 - a as i32;
        if same_class && (d == 1 || d == -1) {
            d
        } else {
            0
        }
    };
    let (mut longest, mut len, mut dir) = (1, 1, 0);
    for w in cs.windows(2) {
        let d = step(w[0], w[1]);
        if d != 0 && (d == dir || len == 1) {
            len += 1;
        } else if d != 0 {
            len = 2;
        } else {
            len = 1;
        }
        dir = d;
        longest = longest.max(len);
    }
    longest
}

/// A stretch of 12 or more characters of `cs` repeating a unit of two to four characters, not
/// all one (`123123…`, `x9kx9k…`; a run of one character is [`mostly_runs`]' to judge).
fn periodic(cs: &[char]) -> bool {
    (2..=4).any(|p| {
        let mut same = 0;
        (p..cs.len()).any(|i| {
            same = if cs[i] == cs[i - p] { same + 1 } else { 0 };
            let start = (i + 1).saturating_sub(same + p);
            same + p >= 12 && cs[start..start + p].iter().any(|&c| c != cs[start])
        })
    })
}

/// A word documentation puts where a token's random part belongs.
fn worded(value: &str) -> bool {
    let lower = value.to_ascii_lowercase();
    let here = lower.ends_with("here")
        && ["token", "key", "secret", "string", "password"]
            .iter()
            .any(|w| lower.contains(w));
    here || [
        "example",
        "placeholder",
        "randomstring",
        "yourtoken",
        "your_token",
        "yourkey",
        "yourapikey",
        "redacted",
        "dummy",
        "changeme",
        "notreal",
    ]
    .iter()
    .any(|w| lower.contains(w))
}

/// A token of a known format written out masked, as documentation does: six `X`, `*` or `#`
/// in a row (`AKIAXXXXXXXXXXXXXXXX`, `glpat-XXXXXXXXXXX-XXXXXXXX`, `xoxp-…-####…`). Other
/// filler is [`filler`].
pub(crate) fn masked(value: &str) -> bool {
    ["XXXXXX", "******", "######"]
        .iter()
        .any(|run| value.contains(run))
}

/// Filler, not a key: a run of six or more of one character in a value of few distinct ones
/// (`XXXXXXXXXXX-XXXXXXXX`, `0000…`). Real keys are random.
pub(crate) fn low_variety(value: &str) -> bool {
    let mut distinct: Vec<char> = value.chars().collect();
    distinct.sort_unstable();
    distinct.dedup();
    let mut run = (None, 0);
    let mut longest = 0;
    for c in value.chars() {
        run = if run.0 == Some(c) {
            (run.0, run.1 + 1)
        } else {
            (Some(c), 1)
        };
        longest = longest.max(run.1);
    }
    distinct.len() < 10 && longest >= 6
}

/// Bits of Shannon entropy per character of `text`.
pub(crate) fn entropy(text: &str) -> f64 {
    let mut counts = std::collections::HashMap::new();
    let mut n = 0usize;
    for c in text.chars() {
        *counts.entry(c).or_insert(0usize) += 1;
        n += 1;
    }
    counts
        .values()
        .map(|&k| {
            let p = k as f64 / n as f64;
            -p * p.log2()
        })
        .sum()
}

/// Whether a value after a loose name looks like a key: ten characters or more, letters and
/// digits, varied (3.5 bits a character, less for short values, whose entropy cannot reach
/// it), and not words joined by separators (`aws_ec2_client_vpn_endpoint.id`,
/// `2024-02-15-preview`).
pub(crate) fn key_like(value: &str) -> bool {
    let v = value.trim_matches(|c| matches!(c, '"' | '\'' | '`' | '\\'));
    let n = v.chars().count();
    let digits = v.chars().any(|c| c.is_ascii_digit());
    let letters = v.chars().any(|c| c.is_ascii_alphabetic());
    let threshold = 3.5_f64.min(0.8 * (n.max(1) as f64).log2());
    n >= 10 && digits && letters && entropy(v) >= threshold && !joined_words(v)
}

/// Words and small numbers joined by `_`, `.`, `-` or `/`, one of them a word of three letters
/// or more: a name or a version (`external-secrets.io/v1beta1`), not a key.
fn joined_words(v: &str) -> bool {
    static WORD: LazyLock<Regex> = LazyLock::new(|| {
        #[expect(clippy::expect_used, reason = "a constant pattern, tested")]
        let regex =
            Regex::new(r"^(?:[a-z]+[0-9]{0,2}(?:(?:alpha|beta|rc)[0-9]{0,2})?|[0-9]{1,4})$")
                .expect("the word pattern");
        regex
    });
    let parts: Vec<&str> = v
        .split(['_', '.', '-', '/'])
        .filter(|p| !p.is_empty())
        .collect();
    parts.len() >= 2
        && parts.iter().all(|p| WORD.is_match(p))
        && parts
            .iter()
            .any(|p| p.len() >= 3 && p.chars().all(|c| c.is_ascii_lowercase()))
}

/// Whether an assigned value is plainly a placeholder, not a secret: empty, one character
/// repeated (`xxxxxx`, `******`) or filler ([`low_variety`]), a template (`<token>`,
/// `${TOKEN}`, `{{ token }}`, `%(token)s`, `$TOKEN`, `[PASSWORD]`, `%TOKEN%`), a reference to
/// where the secret lives (`process.env.X`, `os.environ[...]`), an example in words only
/// (`EXAMPLE`, `your_token_here`, `changeme`), the name of what it stands for (`password`,
/// `token`, `test`) or a literal (`null`, `true`). (A marker already there, `[REDACTED…]`, is
/// redacted again by the live path, as recorded runs were; the scrubber passes it over.)
pub(crate) fn is_placeholder(value: &str) -> bool {
    let v = value
        .trim_matches(|c| c == '"' || c == '\'' || c == '`' || c == '\\')
        .trim();
    if v.is_empty() {
        return true;
    }
    let mut chars = v.chars();
    let first = chars.next().unwrap_or(' ');
    if chars.all(|c| c == first) || low_variety(v) || masked(v) {
        return true;
    }
    // A short value counting up (`abc`, `1234`): a stand-in.
    let alnum: Vec<char> = v.chars().map(|c| c.to_ascii_lowercase()).collect();
    if alnum.len() >= 3
        && alnum.iter().all(char::is_ascii_alphanumeric)
        && counting(&alnum) == alnum.len()
    {
        return true;
    }
    let quoted = value.trim_start().starts_with(['"', '\'', '`']);
    let lower = v.to_ascii_lowercase();
    let templated = (v.starts_with('<') && v.ends_with('>'))
        || (v.starts_with('[') && v.ends_with(']'))
        || (v.starts_with('{') && v.ends_with('}'))
        || v.starts_with("$(")
        || (value.trim_start().starts_with('`') && v.contains(' '))
        || (v.starts_with('%') && v.ends_with('%') && v.len() > 2)
        || v.starts_with("${")
        || v.starts_with("{{")
        || v.starts_with("%(")
        || (v.starts_with('$')
            && v[1..]
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_'));
    // Another variable's name, unquoted: a path (`var.db_password`) or a constant
    // (`ACCESS_TOKEN`).
    let variable = !quoted
        && (v.split('.').count() >= 2
            && v.split('.').all(|p| {
                p.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
                    && p.chars().all(|c| c.is_ascii_alphabetic() || c == '_')
            })
            || (v.contains('_')
                && v.chars()
                    .all(|c| c.is_ascii_uppercase() || c == '_' || c.is_ascii_digit())));
    let referenced = variable
        || ["process.env", "os.environ", "os.getenv", "env(", "getenv("]
            .iter()
            .any(|r| lower.starts_with(r));
    let literal = matches!(
        lower.as_str(),
        "null" | "none" | "nil" | "true" | "false" | "undefined" | "required" | "optional" | "new"
    );
    // The name of what the value stands for, as documentation writes it (`curl -u user:pass`).
    let named = matches!(
        lower.trim_matches(['<', '>', '[', ']', '{', '}']),
        "password" | "passwd" | "pass" | "pwd" | "secret" | "token" | "test" | "apikey"
    ) || lower.split(['-', '_', '.']).all(|w| {
        matches!(
            w,
            "api"
                | "key"
                | "token"
                | "secret"
                | "password"
                | "access"
                | "private"
                | "auth"
                | "client"
                | "id"
        )
    });
    // Words only (`EXAMPLE_KEY`, `your-token-here`); with digits or symbols beside them, only
    // the words of [`filler`] (`wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY`).
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
    templated || referenced || literal || named || example
}

/// The values of a Kubernetes `Secret`'s `data:` (base64, one a line, or a block scalar on the
/// next line), when the text declares `kind: Secret`: named for nothing, they are secrets by
/// where they are. Byte ranges, in order.
pub(crate) fn kubernetes_secret_values(text: &str) -> Vec<(usize, usize)> {
    static KIND: LazyLock<Regex> = LazyLock::new(|| {
        #[expect(clippy::expect_used, reason = "a constant pattern, tested")]
        let regex = Regex::new(r#"(?im)^[ \t]*kind:[ \t]*["']?secret["']?[ \t]*$"#)
            .expect("the kind pattern");
        regex
    });
    static VALUE: LazyLock<Regex> = LazyLock::new(|| {
        #[expect(clippy::expect_used, reason = "a constant pattern, tested")]
        let regex = Regex::new(
            r#"(?m)^[ \t]+([A-Za-z0-9_.-]+):[ \t]*(?:[|>][-+]?[ \t]*\r?\n[ \t]+)?["']?([A-Za-z0-9+/]{10,}={0,2})["']?[ \t]*\r?$"#,
        )
        .expect("the value pattern");
        regex
    });
    if !KIND.is_match(text) {
        return Vec::new();
    }
    VALUE
        .captures_iter(text)
        // The manifest's own fields (`kind: ReplicationController` of the next document).
        .filter(|c| {
            !matches!(
                c.get(1).map(|k| k.as_str()),
                Some("kind" | "name" | "apiVersion" | "namespace" | "type" | "generateName")
            )
        })
        .filter_map(|c| c.get(2))
        .filter(|m| {
            let v = m.as_str();
            // Base64 of something: padded, or with digits or both cases, not a plain word.
            v.ends_with('=')
                || (v.chars().any(|c| c.is_ascii_digit())
                    && v.chars().any(|c| c.is_ascii_alphabetic()))
                || (v.chars().any(|c| c.is_ascii_uppercase())
                    && v.chars().any(|c| c.is_ascii_lowercase())
                    && !v[1..].chars().all(|c| c.is_ascii_lowercase()))
        })
        .filter(|m| !low_variety(m.as_str()))
        .map(|m| (m.start(), m.end()))
        .collect()
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
