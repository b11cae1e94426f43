//! URL patterns of argument conditions (issue 32, hole 3): a pattern that starts with a
//! scheme and `://` is matched against a URL argument by its parsed parts — scheme, host,
//! port, path — as a WHATWG parser reads the argument, not as a glob over its text, so
//! `https://*.example.com/**` no longer matches `https://evil.com#.example.com/x`.
//!
//! A host pattern's wildcard stands for whole labels only: `*.example.com` (one or more labels
//! before `example.com`) or `*`; `foo*.example.com` is refused when the envelope is checked.

/// A URL pattern's parts: scheme, host glob, port (empty: the scheme's default) and path glob
/// (`/` when the pattern names no path, as a parser reads `https://host`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UrlPattern {
    /// `https`.
    pub scheme: String,
    /// `*.example.com`.
    pub host: String,
    /// `8443`, or empty.
    pub port: String,
    /// `/v1/**`.
    pub path: String,
}

impl UrlPattern {
    /// The parts of `pattern` when it is a URL pattern (`scheme://...`); `None` for any other
    /// pattern. An invalid URL pattern is an `Err` saying why.
    pub fn parse(pattern: &str) -> Option<Result<UrlPattern, String>> {
        let (scheme, rest) = pattern.split_once("://")?;
        if scheme.is_empty()
            || !scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
        {
            return None;
        }
        Some(parse_rest(&scheme.to_ascii_lowercase(), rest))
    }
}

fn parse_rest(scheme: &str, rest: &str) -> Result<UrlPattern, String> {
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    if authority.contains(['@', '?', '#', '\\']) || path.contains(['?', '#']) {
        return Err(
            "a URL pattern names a scheme, a host, a port and a path: no user, query or fragment"
                .into(),
        );
    }
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) if !h.ends_with(']') || authority.starts_with('[') => (h, p),
        _ => (authority, ""),
    };
    if !port.is_empty() && port.parse::<u16>().is_err() {
        return Err(format!("`{port}` is not a port"));
    }
    if host.is_empty() {
        return Err("a URL pattern names its host (`*` for any)".into());
    }
    let labels: Vec<&str> = host.split('.').collect();
    let leading = labels.iter().take_while(|l| **l == "*").count();
    if labels[leading..]
        .iter()
        .any(|l| l.contains(['*', '?', '[', '{']))
        || labels.contains(&"")
    {
        return Err(format!(
            "in host `{host}`, a wildcard stands for whole labels only: write `*.example.com`, not `foo*.example.com`"
        ));
    }
    let port = match (scheme, port) {
        ("https", "443") | ("http", "80") | ("ws", "80") | ("wss", "443") | ("ftp", "21") => "",
        (_, p) => p,
    };
    Ok(UrlPattern {
        scheme: scheme.to_string(),
        host: host.to_ascii_lowercase(),
        port: port.to_string(),
        path: path.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(p: &str) -> Option<Result<UrlPattern, String>> {
        UrlPattern::parse(p)
    }

    #[test]
    fn a_url_pattern_is_read_by_its_parts() {
        let p = parts("https://*.Example.com/v1/**").unwrap().unwrap();
        assert_eq!(
            (
                p.scheme.as_str(),
                p.host.as_str(),
                p.port.as_str(),
                p.path.as_str()
            ),
            ("https", "*.example.com", "", "/v1/**")
        );
        let p = parts("https://docs.acme.dev").unwrap().unwrap();
        assert_eq!(p.path, "/");
        let p = parts("http://localhost:8080/**").unwrap().unwrap();
        assert_eq!(p.port, "8080");
        assert_eq!(parts("https://a.b:443/x").unwrap().unwrap().port, "");
        assert!(parts("src/**").is_none());
        assert!(parts("*rm -rf*").is_none());
    }

    #[test]
    fn a_host_wildcard_stands_for_whole_labels_only() {
        assert!(parts("https://foo*.example.com/**").unwrap().is_err());
        assert!(parts("https://*.exa*.com/**").unwrap().is_err());
        assert!(parts("https://*/**").unwrap().is_ok());
        assert!(parts("https://user@x.com/**").unwrap().is_err());
        assert!(parts("https://x.com/a?b").unwrap().is_err());
        assert!(parts("https://x.com:99999/").unwrap().is_err());
        assert!(parts("https://x..com/").unwrap().is_err());
    }
}
