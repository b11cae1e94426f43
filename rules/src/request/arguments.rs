//! What a tool call's arguments become besides `tool_arg` (issue 32): the facts that keep a
//! hostile value from slipping past an argument condition.
//!
//! - `tool_arg_in(req, container, leaf)`: the scalar at `leaf` lies inside the list or object
//!   at `container`. A `deny` (or `rate_limit`) condition on `/path` then holds on
//!   `{"path": [".env"]}` and `{"path": {"p": ".env"}}` too (hole 6): changing a value's type
//!   must not dodge a deny.
//! - `tool_arg_unsafe(req, arg, why)`: the value, normalised as a path or URL consumer would
//!   read it — tabs and line breaks dropped (URL parsers drop them), percent sequences decoded
//!   until nothing changes, `\` read as `/` — climbs (a `..` segment, also when trailing
//!   spaces, a NUL or a `;parameter` follow it), or cannot be normalised (percent decoding
//!   yields no valid UTF-8, or keeps changing). No permitting rule's condition holds on it
//!   (hole 4: `%\t2e%\t2e`, `..%2f`, `%2e%2e%2f`, `..%5c`, `..%00`, `.. `, `..;` walked past
//!   `src/**`-style rules).
//! - `tool_arg_url(req, arg, scheme, host, port, path)`: a string that a WHATWG parser reads
//!   as an absolute URL with a host, by its parts (hole 3): `https://evil.com#.example.com/`
//!   is host `evil.com`, whatever a glob over its text says.

use percent_encoding::percent_decode;
use serde_json::Value as Json;

/// How many rounds of percent decoding a value may need (`%252e` is two).
const DECODE_ROUNDS: usize = 4;

/// `(container, leaf)` for every scalar inside a list or object of the arguments, for every
/// container above it but the arguments themselves.
pub fn containment(args: &Json) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut stack = Vec::new();
    walk(String::new(), args, &mut stack, &mut out);
    out
}

fn walk(pointer: String, value: &Json, above: &mut Vec<String>, out: &mut Vec<(String, String)>) {
    let children: Vec<(String, &Json)> = match value {
        Json::Object(map) => map
            .iter()
            .map(|(k, v)| {
                let key = k.replace('~', "~0").replace('/', "~1");
                (format!("{pointer}/{key}"), v)
            })
            .collect(),
        Json::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, v)| (format!("{pointer}/{i}"), v))
            .collect(),
        _ => {
            for container in above.iter() {
                out.push((container.clone(), pointer.clone()));
            }
            return;
        }
    };
    let pushed = !pointer.is_empty();
    if pushed {
        above.push(pointer);
    }
    for (child, v) in children {
        walk(child, v, above, out);
    }
    if pushed {
        above.pop();
    }
}

/// Why a value is unsafe for a permitting condition, if it is: it climbs once normalised, or
/// cannot be normalised.
pub fn unsafe_reason(value: &str) -> Option<&'static str> {
    match normalise(value) {
        None => Some("cannot be normalised"),
        Some(n) if climbs(&n) => Some("climbs once normalised"),
        Some(_) => None,
    }
}

/// The value as a path or URL consumer reads it: tabs and line breaks dropped, percent
/// sequences decoded until stable, `\` as `/`; `None` when decoding gives no valid UTF-8 or
/// keeps changing.
pub fn normalise(value: &str) -> Option<String> {
    let mut current: String = value
        .chars()
        .filter(|c| !matches!(c, '\t' | '\n' | '\r'))
        .collect();
    for _ in 0..DECODE_ROUNDS {
        if !current.contains('%') {
            break;
        }
        let decoded = percent_decode(current.as_bytes()).decode_utf8().ok()?;
        let decoded: String = decoded
            .chars()
            .filter(|c| !matches!(c, '\t' | '\n' | '\r'))
            .collect();
        if decoded == current {
            break;
        }
        current = decoded;
    }
    if current.contains('%') && percent_decode(current.as_bytes()).decode_utf8().ok()? != current {
        return None;
    }
    Some(current.replace('\\', "/"))
}

/// Whether a normalised value has a parent segment: one that, cut at a `;` (a path parameter
/// servers drop), a NUL (where C strings end), a `?` or a `#`, is `..` with nothing after it
/// but spaces (which Windows strips). `...` and `..name` are names, not climbs.
fn climbs(normalised: &str) -> bool {
    normalised.split('/').any(|segment| {
        let core = segment
            .split([';', '\0', '?', '#'])
            .next()
            .unwrap_or_default();
        core.strip_prefix("..")
            .is_some_and(|rest| rest.trim_end_matches(' ').is_empty())
    })
}

/// A string's parts as a WHATWG URL parser reads them — scheme, host, port (empty for the
/// scheme's default) and path — when it is an absolute URL with a host.
pub fn url_parts(value: &str) -> Option<(String, String, String, String)> {
    if !value.contains(':') {
        return None;
    }
    let parsed = url::Url::parse(value).ok()?;
    let host = parsed.host_str()?.to_string();
    let port = parsed.port().map(|p| p.to_string()).unwrap_or_default();
    Some((
        parsed.scheme().to_string(),
        host,
        port,
        parsed.path().to_string(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_scalar_is_inside_each_container_above_it() {
        let got = containment(&json!({"path": [".env", {"p": "x"}], "mode": "r"}));
        assert_eq!(
            got,
            [
                ("/path".to_string(), "/path/0".to_string()),
                ("/path".to_string(), "/path/1/p".to_string()),
                ("/path/1".to_string(), "/path/1/p".to_string()),
            ]
        );
    }

    #[test]
    fn the_red_teams_climbs_are_unsafe_once_normalised() {
        for v in [
            "/v1/public/%\t2e%\t2e/admin",
            "/v1/public/%2\te%2e/admin",
            "docs/..%2fsecrets",
            "docs/%2e%2e%2fsecrets",
            "docs/..%5csecrets",
            "docs/..%00/x",
            "docs/.. /x",
            "docs/..;/x",
            "docs/%252e%252e/x",
            "src\\..\\..\\.ssh",
            "..",
            "a/..",
            "https://docs.acme.dev/a/%2e%2e/%2e%2e/admin",
        ] {
            assert!(unsafe_reason(v).is_some(), "{v:?}");
        }
        // Invalid UTF-8 after decoding (an overlong `/`) cannot be normalised.
        assert_eq!(
            unsafe_reason("..%c0%af..%c0%af"),
            Some("cannot be normalised")
        );
    }

    #[test]
    fn plain_values_are_safe() {
        for v in [
            "src/main.rs",
            "src/..rs/x",
            "a.b/c..d",
            "src/.../x",
            "100%",
            "50% off",
            "https://docs.acme.dev/guide?q=a#b",
            ".env",
            "./x",
        ] {
            assert_eq!(unsafe_reason(v), None, "{v:?}");
        }
    }

    #[test]
    fn urls_are_read_by_their_parts() {
        let parts = |v: &str| url_parts(v).map(|(s, h, p, path)| format!("{s} {h} {p} {path}"));
        assert_eq!(
            parts("https://evil.com#.example.com/x").as_deref(),
            Some("https evil.com  /")
        );
        assert_eq!(
            parts("https://user@evil.com#.example.com/").as_deref(),
            Some("https evil.com  /")
        );
        assert_eq!(
            parts("https://2130706433#.example.com/").as_deref(),
            Some("https 127.0.0.1  /")
        );
        assert_eq!(
            parts("https://evil.com\\.example.com/x").as_deref(),
            Some("https evil.com  /.example.com/x")
        );
        assert_eq!(
            parts("https://a.example.com:8443/v1/%2e%2e/admin").as_deref(),
            Some("https a.example.com 8443 /admin")
        );
        assert_eq!(parts("src/main.rs"), None);
        assert_eq!(parts("mailto:a@b.c"), None);
    }
}
