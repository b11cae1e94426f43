//! Finds a key given twice in one JSON object. serde_json keeps the last of them; another
//! parser (the agent's, the tool's) may keep the first. A body that says `"url"` twice could
//! then be decided on one value and executed with the other, so bodies with a repeated key are
//! refused (`ApiJson`).

use std::cell::RefCell;
use std::collections::HashSet;
use std::fmt;

use serde::de::{DeserializeSeed, Error as _, MapAccess, SeqAccess, Visitor};

/// The JSON pointer of the first key given twice in an object of `bytes`, if any. Text that is
/// not JSON has none (the caller's parse reports it).
pub(super) fn first_duplicate(bytes: &[u8]) -> Option<String> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let path = RefCell::new(Vec::new());
    let found = RefCell::new(None);
    let walk = Walk {
        path: &path,
        found: &found,
    };
    // Stopped at the first duplicate (an error), or at a syntax error, or at the end.
    let _ = walk.deserialize(&mut de);
    found.into_inner()
}

/// Walks a value. `path` holds the keys and indexes down to it, as JSON pointer segments: one
/// stack for the whole walk, so a long key above a long array is not copied per element, and
/// the pointer is written only for a duplicate (into `found`).
struct Walk<'a> {
    path: &'a RefCell<Vec<String>>,
    found: &'a RefCell<Option<String>>,
}

impl Walk<'_> {
    fn below(&self) -> Self {
        Walk {
            path: self.path,
            found: self.found,
        }
    }
}

impl<'de> DeserializeSeed<'de> for Walk<'_> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Walk<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            let segment = key.replace('~', "~0").replace('/', "~1");
            if !seen.insert(key) {
                let mut pointer = String::new();
                for s in self.path.borrow().iter().chain([&segment]) {
                    pointer.push('/');
                    pointer.push_str(s);
                }
                *self.found.borrow_mut() = Some(pointer);
                return Err(A::Error::custom("duplicate key"));
            }
            self.path.borrow_mut().push(segment);
            let walked = map.next_value_seed(self.below());
            self.path.borrow_mut().pop();
            walked?;
        }
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut i = 0usize;
        loop {
            self.path.borrow_mut().push(i.to_string());
            let walked = seq.next_element_seed(self.below());
            self.path.borrow_mut().pop();
            if walked?.is_none() {
                return Ok(());
            }
            i += 1;
        }
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
        // A key that looks like serde_json's position suffix is reported as it is.
        assert_eq!(
            found(r#"{"a at line 3": 1, "a at line 3": 2}"#).as_deref(),
            Some("/a at line 3")
        );
        // A long key above a long array: the pointer is not built per element. It was, a
        // megabyte copied for each of half a million elements (minutes of a runtime thread).
        let body = format!(
            r#"{{"{}": [{}0]}}"#,
            "k".repeat(1 << 20),
            "0,".repeat(500_000)
        );
        assert_eq!(found(&body), None);
    }
}
