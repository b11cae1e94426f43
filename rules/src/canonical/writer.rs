//! Canonical JSON written straight from a [`Serialize`] value: the same text as
//! [`canonical_json`](super::canonical_json) of `serde_json::to_value(value)`, without building
//! the `Value` tree (a map per object, a `String` per string, all dropped again right after).
//! The gateway records every decision, proof included, as canonical JSON; this is its path.
//!
//! Objects are written in two steps: each entry's value is serialized into the object's own
//! scratch buffer, then the entries are sorted by key (bytewise, as `String` orders) and copied
//! out. Scratch buffers are reused across objects. As with `serde_json::Map`, a repeated key
//! keeps its last value.
//!
//! A `serde_json::value::RawValue` is copied as it is: it must hold canonical JSON already
//! (the gateway's rendered decisions do), so a payload can embed text written once.

use std::borrow::Cow;

use serde::Serialize;
use serde::ser::{self, Impossible};

use super::write_json_string;

/// Why a value has no JSON form (a map key that is not a string, number or bool; a custom
/// serializer's error).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct CanonicalError(String);

impl ser::Error for CanonicalError {
    fn custom<T: std::fmt::Display>(msg: T) -> Self {
        CanonicalError(msg.to_string())
    }
}

/// The canonical JSON text of `value`: keys sorted at every level, no insignificant
/// whitespace; byte for byte what `canonical_json(&serde_json::to_value(value)?)` gives.
pub fn to_canonical_json<T: Serialize + ?Sized>(value: &T) -> Result<String, CanonicalError> {
    let mut out = String::new();
    let mut spare = Vec::new();
    value.serialize(Writer {
        out: &mut out,
        spare: &mut spare,
    })?;
    Ok(out)
}

/// The struct name `serde_json` serializes a `RawValue` under.
const RAW_VALUE_TOKEN: &str = "$serde_json::private::RawValue";

/// Writes one value into `out`; `spare` holds scratch buffers for objects to reuse.
struct Writer<'a> {
    out: &'a mut String,
    spare: &'a mut Vec<Object>,
}

/// An object being written: its entries' keys and where each value's text lies in `buf`.
#[derive(Default)]
struct Object {
    keys: Vec<(Cow<'static, str>, usize, usize)>,
    buf: String,
}

impl<'a> Writer<'a> {
    fn float(self, v: f64) -> Result<(), CanonicalError> {
        // `to_value` turns a non-finite float into null and prints the rest as serde_json does.
        match serde_json::Number::from_f64(v) {
            Some(n) => self.out.push_str(&n.to_string()),
            None => self.out.push_str("null"),
        }
        Ok(())
    }

    /// An object writer; `direct`: start writing straight into `out` (see [`ObjectWriter`]).
    fn object(self, direct: bool) -> ObjectWriter<'a> {
        let object = self.spare.pop().unwrap_or_default();
        let direct = direct.then(|| {
            self.out.push('{');
            self.out.len()
        });
        ObjectWriter {
            out: self.out,
            spare: self.spare,
            object,
            key: None,
            variant: None,
            raw: false,
            direct,
        }
    }

    fn array(self) -> ArrayWriter<'a> {
        self.out.push('[');
        ArrayWriter {
            out: self.out,
            spare: self.spare,
            first: true,
            variant_close: false,
        }
    }

    /// `{"VARIANT":` before an enum variant's content; the caller closes the brace.
    fn open_variant(&mut self, variant: &str) {
        self.out.push('{');
        write_json_string(variant, self.out);
        self.out.push(':');
    }
}

impl<'a> ser::Serializer for Writer<'a> {
    type Ok = ();
    type Error = CanonicalError;
    type SerializeSeq = ArrayWriter<'a>;
    type SerializeTuple = ArrayWriter<'a>;
    type SerializeTupleStruct = ArrayWriter<'a>;
    type SerializeTupleVariant = ArrayWriter<'a>;
    type SerializeMap = ObjectWriter<'a>;
    type SerializeStruct = ObjectWriter<'a>;
    type SerializeStructVariant = ObjectWriter<'a>;

    fn serialize_bool(self, v: bool) -> Result<(), CanonicalError> {
        self.out.push_str(if v { "true" } else { "false" });
        Ok(())
    }
    fn serialize_i8(self, v: i8) -> Result<(), CanonicalError> {
        self.serialize_i64(i64::from(v))
    }
    fn serialize_i16(self, v: i16) -> Result<(), CanonicalError> {
        self.serialize_i64(i64::from(v))
    }
    fn serialize_i32(self, v: i32) -> Result<(), CanonicalError> {
        self.serialize_i64(i64::from(v))
    }
    fn serialize_i64(self, v: i64) -> Result<(), CanonicalError> {
        self.out.push_str(itoa::Buffer::new().format(v));
        Ok(())
    }
    fn serialize_i128(self, v: i128) -> Result<(), CanonicalError> {
        let n = serde_json::to_value(v).map_err(|e| CanonicalError(e.to_string()))?;
        self.out.push_str(&n.to_string());
        Ok(())
    }
    fn serialize_u8(self, v: u8) -> Result<(), CanonicalError> {
        self.serialize_u64(u64::from(v))
    }
    fn serialize_u16(self, v: u16) -> Result<(), CanonicalError> {
        self.serialize_u64(u64::from(v))
    }
    fn serialize_u32(self, v: u32) -> Result<(), CanonicalError> {
        self.serialize_u64(u64::from(v))
    }
    fn serialize_u64(self, v: u64) -> Result<(), CanonicalError> {
        self.out.push_str(itoa::Buffer::new().format(v));
        Ok(())
    }
    fn serialize_u128(self, v: u128) -> Result<(), CanonicalError> {
        let n = serde_json::to_value(v).map_err(|e| CanonicalError(e.to_string()))?;
        self.out.push_str(&n.to_string());
        Ok(())
    }
    fn serialize_f32(self, v: f32) -> Result<(), CanonicalError> {
        // serde_json widens an f32 the same way before printing it.
        self.float(f64::from(v))
    }
    fn serialize_f64(self, v: f64) -> Result<(), CanonicalError> {
        self.float(v)
    }
    fn serialize_char(self, v: char) -> Result<(), CanonicalError> {
        write_json_string(v.encode_utf8(&mut [0; 4]), self.out);
        Ok(())
    }
    fn serialize_str(self, v: &str) -> Result<(), CanonicalError> {
        write_json_string(v, self.out);
        Ok(())
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<(), CanonicalError> {
        use ser::SerializeSeq as _;
        let mut seq = self.array();
        for b in v {
            seq.serialize_element(b)?;
        }
        seq.end()
    }
    fn serialize_none(self) -> Result<(), CanonicalError> {
        self.out.push_str("null");
        Ok(())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), CanonicalError> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<(), CanonicalError> {
        self.out.push_str("null");
        Ok(())
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<(), CanonicalError> {
        self.serialize_unit()
    }
    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
    ) -> Result<(), CanonicalError> {
        self.serialize_str(variant)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        value: &T,
    ) -> Result<(), CanonicalError> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        mut self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<(), CanonicalError> {
        self.open_variant(variant);
        value.serialize(Writer {
            out: self.out,
            spare: self.spare,
        })?;
        self.out.push('}');
        Ok(())
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<ArrayWriter<'a>, CanonicalError> {
        Ok(self.array())
    }
    fn serialize_tuple(self, _: usize) -> Result<ArrayWriter<'a>, CanonicalError> {
        Ok(self.array())
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<ArrayWriter<'a>, CanonicalError> {
        Ok(self.array())
    }
    fn serialize_tuple_variant(
        mut self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<ArrayWriter<'a>, CanonicalError> {
        self.open_variant(variant);
        let mut array = self.array();
        array.variant_close = true;
        Ok(array)
    }
    fn serialize_map(self, _: Option<usize>) -> Result<ObjectWriter<'a>, CanonicalError> {
        Ok(self.object(true))
    }
    fn serialize_struct(
        self,
        name: &'static str,
        _: usize,
    ) -> Result<ObjectWriter<'a>, CanonicalError> {
        let raw = name == RAW_VALUE_TOKEN;
        let mut object = self.object(!raw);
        object.raw = raw;
        Ok(object)
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<ObjectWriter<'a>, CanonicalError> {
        let mut object = self.object(false);
        object.variant = Some(variant);
        Ok(object)
    }
}

/// Writes an array's elements as they come.
struct ArrayWriter<'a> {
    out: &'a mut String,
    spare: &'a mut Vec<Object>,
    first: bool,
    /// Inside `{"VARIANT":[...]}`: close the brace too.
    variant_close: bool,
}

impl ArrayWriter<'_> {
    fn element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), CanonicalError> {
        if !self.first {
            self.out.push(',');
        }
        self.first = false;
        value.serialize(Writer {
            out: self.out,
            spare: self.spare,
        })
    }

    fn close(self) -> Result<(), CanonicalError> {
        self.out.push(']');
        if self.variant_close {
            self.out.push('}');
        }
        Ok(())
    }
}

impl ser::SerializeSeq for ArrayWriter<'_> {
    type Ok = ();
    type Error = CanonicalError;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), CanonicalError> {
        self.element(v)
    }
    fn end(self) -> Result<(), CanonicalError> {
        self.close()
    }
}

impl ser::SerializeTuple for ArrayWriter<'_> {
    type Ok = ();
    type Error = CanonicalError;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), CanonicalError> {
        self.element(v)
    }
    fn end(self) -> Result<(), CanonicalError> {
        self.close()
    }
}

impl ser::SerializeTupleStruct for ArrayWriter<'_> {
    type Ok = ();
    type Error = CanonicalError;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), CanonicalError> {
        self.element(v)
    }
    fn end(self) -> Result<(), CanonicalError> {
        self.close()
    }
}

impl ser::SerializeTupleVariant for ArrayWriter<'_> {
    type Ok = ();
    type Error = CanonicalError;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), CanonicalError> {
        self.element(v)
    }
    fn end(self) -> Result<(), CanonicalError> {
        self.close()
    }
}

/// Writes an object's entries sorted by key. While keys arrive in increasing order (a struct
/// whose fields are declared sorted, a `BTreeMap`, a `serde_json::Map`) each entry is written
/// straight into `out`; the first key out of order moves what was written into the scratch
/// buffer, and from then on entries are collected there and sorted when the object closes.
struct ObjectWriter<'a> {
    out: &'a mut String,
    spare: &'a mut Vec<Object>,
    object: Object,
    /// The key given by `serialize_key`, waiting for its value.
    key: Option<String>,
    /// Inside `{"VARIANT":{...}}`.
    variant: Option<&'static str>,
    /// A `serde_json::value::RawValue`: its one field is JSON text, copied as it is.
    raw: bool,
    /// Writing straight into `out`, where the object's text starts (after its `{`); the
    /// entries' value ranges in `object.keys` are then ranges of `out`.
    direct: Option<usize>,
}

impl ObjectWriter<'_> {
    fn entry<T: Serialize + ?Sized>(
        &mut self,
        key: Cow<'static, str>,
        value: &T,
    ) -> Result<(), CanonicalError> {
        if let Some(start) = self.direct {
            let in_order = self
                .object
                .keys
                .last()
                .is_none_or(|(last, _, _)| last.as_ref() < key.as_ref());
            if in_order {
                if !self.object.keys.is_empty() {
                    self.out.push(',');
                }
                write_json_string(&key, self.out);
                self.out.push(':');
                let from = self.out.len();
                value.serialize(Writer {
                    out: self.out,
                    spare: self.spare,
                })?;
                self.object.keys.push((key, from, self.out.len()));
                return Ok(());
            }
            self.leave_direct(start);
        }
        let start = self.object.buf.len();
        value.serialize(Writer {
            out: &mut self.object.buf,
            spare: self.spare,
        })?;
        self.object.keys.push((key, start, self.object.buf.len()));
        Ok(())
    }

    /// Moves the values written straight into `out` to the scratch buffer and takes the
    /// object's text out of `out` again (its `{` included).
    fn leave_direct(&mut self, start: usize) {
        let Object { keys, buf } = &mut self.object;
        for (_, from, to) in keys.iter_mut() {
            let at = buf.len();
            buf.push_str(&self.out[*from..*to]);
            (*from, *to) = (at, buf.len());
        }
        self.out.truncate(start - 1);
        self.direct = None;
    }

    fn close(mut self) -> Result<(), CanonicalError> {
        if self.direct.is_some() {
            self.out.push('}');
            self.object.keys.clear();
            self.spare.push(std::mem::take(&mut self.object));
            return Ok(());
        }
        let Object { keys, buf } = &mut self.object;
        // Stable: of equal keys the last one given ends last, and wins below. Struct fields
        // often come in order already.
        if !keys.is_sorted_by(|a, b| a.0 <= b.0) {
            keys.sort_by(|a, b| a.0.cmp(&b.0));
        }
        if let Some(variant) = self.variant {
            self.out.push('{');
            write_json_string(variant, self.out);
            self.out.push(':');
        }
        self.out.push('{');
        let mut first = true;
        for (i, (key, start, end)) in keys.iter().enumerate() {
            if keys.get(i + 1).is_some_and(|next| next.0 == *key) {
                continue;
            }
            if !first {
                self.out.push(',');
            }
            first = false;
            write_json_string(key, self.out);
            self.out.push(':');
            self.out.push_str(&buf[*start..*end]);
        }
        self.out.push('}');
        if self.variant.is_some() {
            self.out.push('}');
        }
        keys.clear();
        buf.clear();
        self.spare.push(std::mem::take(&mut self.object));
        Ok(())
    }
}

impl ser::SerializeMap for ObjectWriter<'_> {
    type Ok = ();
    type Error = CanonicalError;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), CanonicalError> {
        self.key = Some(key.serialize(KeyWriter)?);
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), CanonicalError> {
        let key = self
            .key
            .take()
            .ok_or_else(|| CanonicalError("a map value without its key".into()))?;
        self.entry(Cow::Owned(key), v)
    }
    fn end(self) -> Result<(), CanonicalError> {
        self.close()
    }
}

impl ser::SerializeStruct for ObjectWriter<'_> {
    type Ok = ();
    type Error = CanonicalError;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        v: &T,
    ) -> Result<(), CanonicalError> {
        if self.raw {
            // The text serializes as a string; `KeyWriter` hands a string back as it is.
            self.out.push_str(&v.serialize(KeyWriter)?);
            return Ok(());
        }
        self.entry(Cow::Borrowed(key), v)
    }
    fn end(mut self) -> Result<(), CanonicalError> {
        if self.raw {
            self.spare.push(std::mem::take(&mut self.object));
            return Ok(());
        }
        self.close()
    }
}

impl ser::SerializeStructVariant for ObjectWriter<'_> {
    type Ok = ();
    type Error = CanonicalError;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        v: &T,
    ) -> Result<(), CanonicalError> {
        self.entry(Cow::Borrowed(key), v)
    }
    fn end(self) -> Result<(), CanonicalError> {
        self.close()
    }
}

/// A map key as `serde_json::to_value` accepts it: strings, chars, integers and bools
/// (written as their text), unit variants (their name).
struct KeyWriter;

fn key_error() -> CanonicalError {
    CanonicalError("a JSON object key must be a string, a number or a bool".into())
}

impl ser::Serializer for KeyWriter {
    type Ok = String;
    type Error = CanonicalError;
    type SerializeSeq = Impossible<String, CanonicalError>;
    type SerializeTuple = Impossible<String, CanonicalError>;
    type SerializeTupleStruct = Impossible<String, CanonicalError>;
    type SerializeTupleVariant = Impossible<String, CanonicalError>;
    type SerializeMap = Impossible<String, CanonicalError>;
    type SerializeStruct = Impossible<String, CanonicalError>;
    type SerializeStructVariant = Impossible<String, CanonicalError>;

    fn serialize_bool(self, v: bool) -> Result<String, CanonicalError> {
        Ok(v.to_string())
    }
    fn serialize_i8(self, v: i8) -> Result<String, CanonicalError> {
        Ok(v.to_string())
    }
    fn serialize_i16(self, v: i16) -> Result<String, CanonicalError> {
        Ok(v.to_string())
    }
    fn serialize_i32(self, v: i32) -> Result<String, CanonicalError> {
        Ok(v.to_string())
    }
    fn serialize_i64(self, v: i64) -> Result<String, CanonicalError> {
        Ok(v.to_string())
    }
    fn serialize_i128(self, v: i128) -> Result<String, CanonicalError> {
        Ok(v.to_string())
    }
    fn serialize_u8(self, v: u8) -> Result<String, CanonicalError> {
        Ok(v.to_string())
    }
    fn serialize_u16(self, v: u16) -> Result<String, CanonicalError> {
        Ok(v.to_string())
    }
    fn serialize_u32(self, v: u32) -> Result<String, CanonicalError> {
        Ok(v.to_string())
    }
    fn serialize_u64(self, v: u64) -> Result<String, CanonicalError> {
        Ok(v.to_string())
    }
    fn serialize_u128(self, v: u128) -> Result<String, CanonicalError> {
        Ok(v.to_string())
    }
    fn serialize_f32(self, _: f32) -> Result<String, CanonicalError> {
        Err(key_error())
    }
    fn serialize_f64(self, _: f64) -> Result<String, CanonicalError> {
        Err(key_error())
    }
    fn serialize_char(self, v: char) -> Result<String, CanonicalError> {
        Ok(v.to_string())
    }
    fn serialize_str(self, v: &str) -> Result<String, CanonicalError> {
        Ok(v.to_string())
    }
    fn serialize_bytes(self, _: &[u8]) -> Result<String, CanonicalError> {
        Err(key_error())
    }
    fn serialize_none(self) -> Result<String, CanonicalError> {
        Err(key_error())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, _: &T) -> Result<String, CanonicalError> {
        Err(key_error())
    }
    fn serialize_unit(self) -> Result<String, CanonicalError> {
        Err(key_error())
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<String, CanonicalError> {
        Err(key_error())
    }
    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
    ) -> Result<String, CanonicalError> {
        Ok(variant.to_string())
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        value: &T,
    ) -> Result<String, CanonicalError> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<String, CanonicalError> {
        Err(key_error())
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, CanonicalError> {
        Err(key_error())
    }
    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, CanonicalError> {
        Err(key_error())
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct, CanonicalError> {
        Err(key_error())
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, CanonicalError> {
        Err(key_error())
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, CanonicalError> {
        Err(key_error())
    }
    fn serialize_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStruct, CanonicalError> {
        Err(key_error())
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, CanonicalError> {
        Err(key_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::canonical::canonical_json;
    use proptest::prelude::*;
    use serde_json::{Value, json};
    use std::collections::BTreeMap;

    fn same_as_value_path<T: Serialize>(v: &T) {
        let via_value = canonical_json(&serde_json::to_value(v).unwrap());
        assert_eq!(to_canonical_json(v).unwrap(), via_value);
    }

    /// Entries written straight out while keys come in order are moved aside when one comes
    /// out of order, nested objects and all; objects inside later entries start afresh.
    #[test]
    fn an_object_whose_keys_turn_out_of_order_is_sorted_all_the_same() {
        #[derive(Serialize)]
        struct Inner {
            a: u8,
            b: Vec<u8>,
        }
        #[derive(Serialize)]
        struct Outer {
            b: Inner,
            c: BTreeMap<String, Inner>,
            a: Inner,
            d: Option<Inner>,
            ab: serde_json::Value,
        }
        let inner = || Inner { a: 1, b: vec![2] };
        let outer = Outer {
            b: inner(),
            c: [("y".to_string(), inner()), ("x".to_string(), inner())].into(),
            a: inner(),
            d: None,
            ab: json!({"z": {"k": [1, {"q": 1, "p": 2}]}, "m": null}),
        };
        same_as_value_path(&outer);
        same_as_value_path(&vec![outer]);
        assert_eq!(
            to_canonical_json(&Inner { a: 1, b: vec![] }).unwrap(),
            r#"{"a":1,"b":[]}"#
        );
    }

    #[test]
    fn a_raw_value_is_copied_as_it_is_inside_a_sorted_object() {
        #[derive(Serialize)]
        struct Event<'a> {
            z: u8,
            decision: &'a serde_json::value::RawValue,
            a: Option<&'a serde_json::value::RawValue>,
        }
        let raw =
            serde_json::value::RawValue::from_string(r#"{"b":[1,{"c":null}],"d":"x"}"#.into())
                .unwrap();
        let event = Event {
            z: 1,
            decision: &raw,
            a: None,
        };
        same_as_value_path(&event);
        assert_eq!(
            to_canonical_json(&event).unwrap(),
            r#"{"a":null,"decision":{"b":[1,{"c":null}],"d":"x"},"z":1}"#
        );
        // Objects after the raw value still reuse their scratch buffers correctly.
        same_as_value_path(&vec![json!({"y": 1, "x": {"q": 2, "p": 3}}); 2]);
    }

    #[derive(Serialize)]
    enum Shape {
        Unit,
        Newtype(u8),
        Tuple(i32, String),
        Struct { z: bool, a: Option<f64> },
    }

    #[derive(Serialize)]
    struct Everything {
        zeta: Vec<Shape>,
        alpha: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        skipped: Option<u8>,
        map: BTreeMap<u32, char>,
        bytes: Vec<u8>,
        floats: (f32, f64, f64),
        big: (i128, u128, i64, u64),
        #[serde(flatten)]
        extra: BTreeMap<String, Value>,
        unit: (),
    }

    #[test]
    fn structs_enums_maps_and_scalars_match_the_value_path() {
        let mut extra = BTreeMap::new();
        extra.insert(
            "mid".to_string(),
            json!({"b": [1, {"d": null, "c": "x\ny"}], "a": 2.5}),
        );
        same_as_value_path(&Everything {
            zeta: vec![
                Shape::Unit,
                Shape::Newtype(7),
                Shape::Tuple(-3, "é\"".into()),
                Shape::Struct {
                    z: true,
                    a: Some(f64::NAN),
                },
                Shape::Struct {
                    z: false,
                    a: Some(0.1),
                },
            ],
            alpha: None,
            skipped: None,
            map: [(10, 'a'), (2, 'b')].into_iter().collect(),
            bytes: vec![0, 255],
            floats: (0.1, 1e300, -0.0),
            big: (-(1 << 40), 1 << 40, i64::MIN, u64::MAX),
            extra,
            unit: (),
        });
    }

    #[test]
    fn a_repeated_key_keeps_its_last_value() {
        struct Twice;
        impl Serialize for Twice {
            fn serialize<S: ser::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                use ser::SerializeMap as _;
                let mut m = s.serialize_map(None)?;
                m.serialize_entry("k", &1)?;
                m.serialize_entry("a", &0)?;
                m.serialize_entry("k", &2)?;
                m.end()
            }
        }
        assert_eq!(to_canonical_json(&Twice).unwrap(), r#"{"a":0,"k":2}"#);
        same_as_value_path(&Twice);
    }

    #[test]
    fn non_string_keys_are_refused() {
        let mut m = BTreeMap::new();
        m.insert(vec![1], 1);
        assert!(to_canonical_json(&m).is_err());
    }

    fn arb_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|n| json!(n)),
            any::<u64>().prop_map(|n| json!(n)),
            any::<f64>().prop_map(|f| json!(f)),
            "\\PC{0,8}".prop_map(Value::String),
            "[a-c\"\\\\\n]{0,4}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 48, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::btree_map("[a-d\u{e9}\u{1f600}]{0,3}", inner, 0..6)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn any_json_value_gives_the_same_text(v in arb_json()) {
            prop_assert_eq!(to_canonical_json(&v).unwrap(), canonical_json(&v));
        }
    }
}
