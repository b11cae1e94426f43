//! What the dashboard's end-to-end tests share: requests with headers and no redirects
//! followed, logging in, and reading a page's CSRF token.

use super::Gateway;

/// Sends a request, following no redirect: status, headers, body (a form when given).
pub fn send(
    gw: &Gateway,
    method: &str,
    path_or_url: &str,
    body: Option<&str>,
    headers: &[(&str, &str)],
) -> (u16, Vec<(String, String)>, String) {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .max_redirects(0)
        .build()
        .into();
    let url = if path_or_url.starts_with("http") {
        path_or_url.to_string()
    } else {
        format!("{}{path_or_url}", gw.base)
    };
    let mut req = ureq::http::Request::builder().method(method).uri(&url);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    if body.is_some() {
        req = req.header("Content-Type", "application/x-www-form-urlencoded");
    }
    let req = req
        .body(body.unwrap_or_default().to_string())
        .expect("request");
    let mut resp = agent.run(req).expect("send");
    let headers = resp
        .headers()
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("").to_string()))
        .collect();
    let status = resp.status().as_u16();
    (
        status,
        headers,
        resp.body_mut().read_to_string().unwrap_or_default(),
    )
}

/// A page with the session cookie.
pub fn get_page(gw: &Gateway, cookie: &str, path: &str) -> (u16, String) {
    let (status, _, body) = send(gw, "GET", path, None, &[("Cookie", cookie)]);
    (status, body)
}

pub fn header<'h>(headers: &'h [(String, String)], name: &str) -> Option<&'h str> {
    headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// Logs in through the one-time URL; returns the `Cookie` header to send.
pub fn login(gw: &Gateway) -> String {
    let (status, headers, _) = send(gw, "GET", &gw.dashboard_url, None, &[]);
    assert_eq!(status, 303);
    cookie_of(&headers)
}

/// Logs in with a token through the login form; returns the `Cookie` header to send.
pub fn login_with(gw: &Gateway, token: &str) -> String {
    let form = format!("token={token}");
    let (status, headers, body) = send(gw, "POST", "/ui/login", Some(&form), &[]);
    assert_eq!(status, 303, "{body}");
    cookie_of(&headers)
}

pub fn cookie_of(headers: &[(String, String)]) -> String {
    let set = header(headers, "set-cookie").expect("a session cookie");
    set.split(';').next().unwrap().to_string()
}

/// The value of the first `name="csrf"` hidden field of a page.
pub fn csrf_of(page: &str) -> String {
    let at = page.find("name=\"csrf\" value=\"").expect("a CSRF field");
    let rest = &page[at + "name=\"csrf\" value=\"".len()..];
    rest[..rest.find('"').unwrap()].to_string()
}
