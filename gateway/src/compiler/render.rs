//! Rendering: each chosen item becomes one delimited block, and the blocks, in the order of
//! selection, are the compiled text.
//!
//! ```text
//! <item id="msg-1" kind="message" role="user">
//! Fix the failing test.
//! </item>
//! <item id="file-auth" kind="file" form="summary">
//! src/auth.rs: the login handler and its session checks.
//! </item>
//! ```
//!
//! `form` is absent for an item rendered from its content, `reference` for an item rendered
//! from its reference (it has no content: the block's body is the reference itself, a path
//! or URL the agent can fetch under its own tool policy), and `summary` for a summary.
//! Attribute values escape `&`, `"`, `<` and `>`; in a body, `</item` is written `<\/item`
//! so an item cannot close its block and forge another. Nothing else is touched, so the
//! same items render the same bytes.

use std::fmt::Write as _;

use super::items::ItemKind;

/// What a block's body is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Form {
    /// The item's content.
    Content,
    /// Its reference (it has no content).
    Reference,
    /// Its summary.
    Summary,
}

fn escape_attribute(value: &str, out: &mut String) {
    for c in value.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            c => out.push(c),
        }
    }
}

/// The block of one item: the opening tag, the body on its own lines, the closing tag, and a
/// final newline (so blocks concatenate without a separator).
pub(crate) fn block(
    id: &str,
    kind: ItemKind,
    role: Option<&str>,
    form: Form,
    body: &str,
) -> String {
    let mut out = String::with_capacity(body.len() + id.len() + 48);
    out.push_str("<item id=\"");
    escape_attribute(id, &mut out);
    let _ = write!(out, "\" kind=\"{kind}\"");
    if let Some(role) = role {
        out.push_str(" role=\"");
        escape_attribute(role, &mut out);
        out.push('"');
    }
    match form {
        Form::Content => {}
        Form::Reference => out.push_str(" form=\"reference\""),
        Form::Summary => out.push_str(" form=\"summary\""),
    }
    out.push_str(">\n");
    if body.contains("</item") {
        out.push_str(&body.replace("</item", "<\\/item"));
    } else {
        out.push_str(body);
    }
    out.push_str("\n</item>\n");
    out
}

/// The hash of a compiled text: blake3 of its bytes, in hex.
pub(crate) fn hash(text: &str) -> String {
    blake3::hash(text.as_bytes()).to_hex().to_string()
}
