//! The shared layout and components of every dashboard page: the page shell (navigation,
//! the logout form), badges, empty states, the pager, and the response headers every page
//! carries. A page module renders its content with these and nothing else of its own style.

use axum::http::{HeaderValue, header};
use axum::response::{Html, IntoResponse, Response};
use maud::{DOCTYPE, Markup, html};
use tollgate_rules::decide::DecisionEffect;

use super::sessions::Session;

/// The screens in the navigation, by path and name.
const SCREENS: [(&str, &str); 11] = [
    ("/ui", "Overview"),
    ("/ui/runs", "Runs"),
    ("/ui/approvals", "Approvals"),
    ("/ui/envelopes", "Envelopes"),
    ("/ui/memories", "Memories"),
    ("/ui/replays", "Replays"),
    ("/ui/regressions", "Regressions"),
    ("/ui/handoffs", "Handoffs"),
    ("/ui/cases", "Cases"),
    ("/ui/provenance", "Provenance"),
    ("/ui/mcp/pins", "MCP pins"),
];

/// A whole page: `title`, the screen it belongs to (`/ui/runs`), its content.
pub fn page(title: &str, screen: &str, session: &Session, content: Markup) -> Response {
    let body = html! {
        (DOCTYPE)
        html lang="en" {
            (head(title))
            body {
                a.skip href="#main" { "Skip to content" }
                header.top {
                    a.brand href="/ui" { "Tollgate" }
                    nav aria-label="Screens" {
                        ul {
                            @for (path, name) in SCREENS {
                                li {
                                    @if path == screen {
                                        a href=(path) aria-current="page" { (name) }
                                    } @else {
                                        a href=(path) { (name) }
                                    }
                                }
                            }
                        }
                    }
                    form.logout method="post" action="/ui/logout" {
                        span.who { (session.principal.kind.as_str()) " " strong { (session.principal.name) } }
                        input type="hidden" name="csrf" value=(session.csrf);
                        button type="submit" { "Log out" }
                    }
                }
                main #main { (content) }
            }
        }
    };
    respond(body)
}

/// A page without a session (the login page).
pub fn bare_page(title: &str, content: Markup) -> Response {
    respond(html! {
        (DOCTYPE)
        html lang="en" {
            (head(title))
            body { main #main.narrow { (content) } }
        }
    })
}

/// Every page's `<head>`: the title and the gateway's own stylesheet.
fn head(title: &str) -> Markup {
    html! {
        head {
            meta charset="utf-8";
            meta name="viewport" content="width=device-width, initial-scale=1";
            title { (title) " · Tollgate" }
            link rel="stylesheet" href="/ui/assets/dashboard.css";
        }
    }
}

/// HTML with the headers every page carries: nothing cached, nothing framed, a referrer only
/// to the gateway itself (a login URL never leaks), scripts and styles from the gateway only.
///
/// Not `no-referrer`: under it a browser sends `Origin: null` with every form it posts, and
/// the gateway's Origin check (rightly) refuses that, so no form would work in a real browser
/// (found by the headless-Chromium tests; clients without an Origin never showed it).
fn respond(body: Markup) -> Response {
    let mut response = Html(body.into_string()).into_response();
    let headers = response.headers_mut();
    for (name, value) in [
        (header::CACHE_CONTROL, "no-store"),
        (header::X_FRAME_OPTIONS, "DENY"),
        (header::REFERRER_POLICY, "same-origin"),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (
            header::CONTENT_SECURITY_POLICY,
            "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; form-action 'self'",
        ),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
    response
}

/// An effect as a badge.
pub fn effect(effect: DecisionEffect) -> Markup {
    html! { span class=(format!("badge effect-{}", effect.as_str())) { (effect.as_str()) } }
}

/// A run status as a badge.
pub fn status(status: &str) -> Markup {
    html! { span class=(format!("badge status-{status}")) { (status) } }
}

/// What to say where there is nothing to show, and what to do next.
pub fn empty(what: &str, next: Markup) -> Markup {
    html! {
        div.empty role="status" {
            p { strong { (what) } }
            p { (next) }
        }
    }
}

/// A command to type, shown as code.
pub fn command(text: &str) -> Markup {
    html! { code.command { (text) } }
}

pub use crate::recorder::clip;

/// The first 12 characters of a hash, the whole in a tooltip.
pub fn hash(h: &str) -> Markup {
    let short: String = h.chars().take(12).collect();
    html! { code title=(h) { (short) } }
}

/// A definition list of label and value pairs.
pub fn facts(rows: &[(&str, Markup)]) -> Markup {
    html! {
        dl.facts {
            @for (label, value) in rows {
                dt { (label) }
                dd { (value) }
            }
        }
    }
}

/// The stylesheet, served from the binary (no page needs anything from outside).
pub const STYLESHEET: &str = include_str!("../../../assets/dashboard.css");

// Links between screens: every page module links to the others through these, so no page
// module imports another.

/// The link to a run's timeline.
pub fn run_href(run: &str) -> String {
    format!("/ui/runs/{}", encode(run))
}

/// Events on one page of a run's timeline (a page starts at a multiple of it).
pub const TIMELINE_PAGE: u64 = 200;

/// The link to one event in its run's timeline: the page that holds it, scrolled to it.
pub fn event_href(run: &str, seq: u64) -> String {
    let from = seq - seq % TIMELINE_PAGE;
    if from == 0 {
        format!("{}#event-{seq}", run_href(run))
    } else {
        format!("{}?from={from}#event-{seq}", run_href(run))
    }
}

/// The link to a decision's receipt (`item`: a compile item's decision).
pub fn receipt_href(run: &str, seq: u64, item: Option<&str>) -> String {
    match item {
        Some(item) => format!(
            "/ui/runs/{}/receipts/{seq}?item={}",
            encode(run),
            encode(item)
        ),
        None => format!("/ui/runs/{}/receipts/{seq}", encode(run)),
    }
}

/// The link to a node's provenance.
pub fn provenance_href(id: &str) -> String {
    format!("/ui/provenance?id={}", encode(id))
}

/// Percent-encodes everything but unreserved characters (RFC 3986).
pub fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Rule ids, or a dash.
pub fn rules(rules: &[String]) -> Markup {
    html! {
        @if rules.is_empty() { span.muted { "no rule" } }
        @for (i, r) in rules.iter().enumerate() {
            @if i > 0 { ", " }
            code { (r) }
        }
    }
}
