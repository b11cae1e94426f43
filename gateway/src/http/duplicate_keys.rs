//! Finds a key given twice in one JSON object. serde_json keeps the last of them; another
//! parser (the agent's, the tool's) may keep the first. A body that says `"url"` twice could
//! then be decided on one value and executed with the other, so bodies with a repeated key are
//! refused (`ApiJson`).

use std::collections::HashSet;
use std::fmt;

use serde::de::{DeserializeSeed, Error as _, MapAccess, SeqAccess, Visitor};

/// The JSON pointer of the first key given twice in an object of `bytes`, if any. Text that is
/// not JSON has none (the caller's parse reports it).
pub(super) fn first_duplicate(bytes: &[u8]) -> Option<String> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    match Walk(String::new()).deserialize(&mut de) {
        Err(e) => e.to_string().strip_prefix(MARK).map(|rest| {
            // serde_json appends " at line L column C" to a custom error.
            rest.rsplit_once(" at line ")
                .map_or(rest, |(p, _)| p)
                .to_string()
        }),
        Ok(()) => None,
    }
}

const MARK: &str = "duplicate key at ";

/// Walks a value; `.0` is the JSON pointer to it.
struct Walk(String);

impl<'de> DeserializeSeed<'de> for Walk {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Walk {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            let at = format!("{}/{}", self.0, key.replace('~', "~0").replace('/', "~1"));
            if !seen.insert(key) {
                return Err(A::Error::custom(format!("{MARK}{at}")));
            }
            map.next_value_seed(Walk(at))?;
        }
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut i = 0usize;
        while seq
            .next_element_seed(Walk(format!("{}/{i}", self.0)))?
            .is_some()
        {
            i += 1;
        }
        Ok(())
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_given_twice_is_found_with_its_pointer() {
        let found = |s: &str| first_duplicate(s.as_bytes());
        assert_eq!(
            found(r#"{"tool": "a", "tool": "b"}"#).as_deref(),
            Some("/tool")
        );
        assert_eq!(
            found(r#"{"arguments": {"url": "https://evil.example/", "url": "https://docs.acme.dev/"}}"#)
                .as_deref(),
            Some("/arguments/url")
        );
        assert_eq!(
            found(r#"{"a": [{"b": 1}, {"x/y": 1, "x/y": 2}]}"#).as_deref(),
            Some("/a/1/x~1y")
        );
        // The same key in different objects, or escaped differently but equal, or not at all.
        assert_eq!(found(r#"{"a": {"k": 1}, "b": {"k": 1}}"#), None);
        assert_eq!(found(r#"{"k": 1, "\u006b": 2}"#).as_deref(), Some("/k"));
        assert_eq!(found(r#"{"k": 1, "K": 2}"#), None);
        // Not JSON: none here (the body's own parse says what is wrong).
        assert_eq!(found(r#"{"k": "#), None);
    }
}
