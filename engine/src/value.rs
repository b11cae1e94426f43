//! Values, their four primitive types, the symbol table, and Soufflé's text format for them.
//!
//! Like Soufflé's default build, every value fits a 32-bit slot: `number` is `i32` with wrapping
//! arithmetic, `unsigned` is `u32`, `float` is `f32`, and a `symbol` is an index into the symbol
//! table. Tuples are arrays of such slots; the column types say how to read each slot.

use rustc_hash::FxHashMap as HashMap;
use std::cmp::Ordering;
use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// The primitive type of a column or variable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Type {
    /// Interned strings.
    Symbol,
    /// 32-bit signed integers.
    Number,
    /// 32-bit unsigned integers.
    Unsigned,
    /// 32-bit floats.
    Float,
}

impl Type {
    /// The Soufflé name of the type.
    pub fn as_str(self) -> &'static str {
        match self {
            Type::Symbol => "symbol",
            Type::Number => "number",
            Type::Unsigned => "unsigned",
            Type::Float => "float",
        }
    }

    /// Whether arithmetic applies.
    pub fn is_numeric(self) -> bool {
        !matches!(self, Type::Symbol)
    }
}

impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A value outside the engine: what callers pass in and get back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Value {
    /// A number.
    Number(i32),
    /// An unsigned number.
    Unsigned(u32),
    /// A float.
    Float(f32),
    /// A symbol. Shared with the symbol table it was decoded from: decoding a symbol (for a
    /// proof, say) copies no string.
    Symbol(Arc<str>),
}

impl Value {
    /// A symbol value.
    pub fn sym(s: impl AsRef<str>) -> Self {
        Value::Symbol(Arc::from(s.as_ref()))
    }

    /// The symbol's text, if the value is a symbol.
    pub fn as_symbol(&self) -> Option<&str> {
        match self {
            Value::Symbol(s) => Some(s),
            _ => None,
        }
    }

    /// The value's type.
    pub fn ty(&self) -> Type {
        match self {
            Value::Number(_) => Type::Number,
            Value::Unsigned(_) => Type::Unsigned,
            Value::Float(_) => Type::Float,
            Value::Symbol(_) => Type::Symbol,
        }
    }

    /// The greatest (`max`) or least of `values` by [`Value::total_cmp`], the first of equals;
    /// none for none.
    pub(crate) fn extreme(values: &[Value], max: bool) -> Option<&Value> {
        let wins = if max {
            Ordering::Greater
        } else {
            Ordering::Less
        };
        let (first, rest) = values.split_first()?;
        Some(rest.iter().fold(
            first,
            |best, x| {
                if x.total_cmp(best) == wins { x } else { best }
            },
        ))
    }

    /// Total order used for output rows: numbers numerically, symbols by bytes.
    /// Values of different types (never in one column) order by type.
    pub fn total_cmp(&self, other: &Value) -> Ordering {
        match (self, other) {
            (Value::Number(a), Value::Number(b)) => a.cmp(b),
            (Value::Unsigned(a), Value::Unsigned(b)) => a.cmp(b),
            (Value::Float(a), Value::Float(b)) => a.total_cmp(b),
            (Value::Symbol(a), Value::Symbol(b)) => a.as_bytes().cmp(b.as_bytes()),
            _ => self.ty().cmp(&other.ty()),
        }
    }

    /// Appends [`Value::to_literal`] to `out` (symbols without an intermediate string).
    pub(crate) fn write_literal(&self, out: &mut String) {
        match self {
            Value::Symbol(s) => {
                out.reserve(s.len() + 2);
                out.push('"');
                // Runs between escapes are copied whole (most symbols are one run). Every
                // escaped character is ASCII, so its byte index is a character boundary.
                let mut run = 0;
                for (i, b) in s.bytes().enumerate() {
                    let escaped = match b {
                        b'"' => "\\\"",
                        b'\\' => "\\\\",
                        b'\n' => "\\n",
                        b'\t' => "\\t",
                        b'\r' => "\\r",
                        _ => continue,
                    };
                    out.push_str(&s[run..i]);
                    out.push_str(escaped);
                    run = i + 1;
                }
                out.push_str(&s[run..]);
                out.push('"');
            }
            Value::Number(n) => {
                use std::fmt::Write as _;
                let _ = write!(out, "{n}");
            }
            other => out.push_str(&other.to_literal()),
        }
    }

    /// Writes the value as a Datalog literal (`"a"`, `3`, `3u`, `1.5`).
    pub fn to_literal(&self) -> String {
        match self {
            Value::Symbol(_) => {
                let mut out = String::new();
                self.write_literal(&mut out);
                out
            }
            Value::Unsigned(u) => format!("{u}u"),
            Value::Float(x) => {
                let s = format_float(*x);
                if s.contains(['.', 'e', 'n', 'i']) {
                    s
                } else {
                    format!("{s}.0")
                }
            }
            Value::Number(n) => n.to_string(),
        }
    }
}

impl fmt::Display for Value {
    /// Soufflé's output format: symbols bare, numbers plain.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Number(n) => write!(f, "{n}"),
            Value::Unsigned(u) => write!(f, "{u}"),
            Value::Float(x) => f.write_str(&format_float(*x)),
            Value::Symbol(s) => f.write_str(s),
        }
    }
}

/// Formats a float like C++ `std::ostream << float` with default precision (`%g`, 6 digits):
/// how values read in proofs, why-nots and texts.
pub fn format_float(x: f32) -> String {
    format_float_g(x, 6)
}

/// Formats a float as Soufflé writes it to an output file: the stream's precision set to
/// `max_digits10` of a 32-bit float (`%.9g`), so every float reads back as itself
/// (`0.0009765625`, `0.100000001`).
pub fn format_float_output(x: f32) -> String {
    format_float_g(x, 9)
}

/// Formats a float as C++ `std::to_string` does (`%f`: six decimals), which is Soufflé's
/// `to_string` of a float (`to_string(3.14)` is `3.140000`).
pub fn format_float_fixed(x: f32) -> String {
    if x.is_nan() {
        return if x.is_sign_negative() { "-nan" } else { "nan" }.into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf".into() } else { "-inf".into() };
    }
    format!("{:.6}", f64::from(x))
}

/// Soufflé's `to_string` of a value: a float with six decimals (`std::to_string`), anything
/// else as it reads.
pub fn to_string_functor(v: &Value) -> String {
    match v {
        Value::Float(x) => format_float_fixed(*x),
        v => v.to_string(),
    }
}

/// `%.{precision}g` of a float (promoted to double, as C++ streams format it).
fn format_float_g(x: f32, precision: usize) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if x == 0.0 {
        return if x.is_sign_negative() {
            "-0".into()
        } else {
            "0".into()
        };
    }
    let x = f64::from(x);
    let p = precision.max(1);
    // %g: the exponent after rounding to `p` significant digits decides the notation;
    // scientific when it is below -4 or at least `p`.
    let sci = format!("{x:.prec$e}", prec = p - 1);
    let (mantissa, e) = sci.split_once('e').unwrap_or((&sci, "0"));
    let e: i32 = e.parse().unwrap_or(0);
    let p = i32::try_from(p).unwrap_or(i32::MAX);
    if e < -4 || e >= p {
        let m = trim_zeros(mantissa);
        let sign = if e < 0 { '-' } else { '+' };
        format!("{m}e{sign}{:02}", e.abs())
    } else {
        let decimals = usize::try_from(p - 1 - e).unwrap_or(0);
        trim_zeros(&format!("{x:.decimals$}")).to_string()
    }
}

fn trim_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

/// Encodes a typed value into a 32-bit slot, interning symbols.
pub(crate) fn encode(value: &Value, symbols: &mut Interner) -> u32 {
    match value {
        Value::Number(n) => *n as u32,
        Value::Unsigned(u) => *u,
        Value::Float(x) => x.to_bits(),
        Value::Symbol(s) => symbols.intern(s),
    }
}

/// Decodes a slot of a known type.
pub(crate) fn decode(slot: u32, ty: Type, symbols: &Interner) -> Value {
    match ty {
        Type::Number => Value::Number(slot as i32),
        Type::Unsigned => Value::Unsigned(slot),
        Type::Float => Value::Float(f32::from_bits(slot)),
        Type::Symbol => Value::Symbol(symbols.resolve_shared(slot)),
    }
}

/// The symbol table. A query's table is a child of the model's: it resolves the model's
/// symbols through the shared parent and numbers its own after them, so the model is never
/// copied or changed by a query.
#[derive(Debug, Default, Clone)]
pub(crate) struct Interner {
    parent: Option<Arc<Interner>>,
    offset: u32,
    strings: Vec<Arc<str>>,
    /// Ids by string, once there are more than [`SCAN_SYMBOLS`] of them (a query's table
    /// holds a few symbols of its request, searched in place).
    ids: HashMap<Arc<str>, u32>,
}

/// Tables with at most this many symbols of their own are searched without a hash map.
const SCAN_SYMBOLS: usize = 8;

impl Interner {
    /// A child table over a frozen parent.
    pub(crate) fn child(parent: Arc<Interner>) -> Self {
        let offset = parent.len();
        Interner {
            parent: Some(parent),
            offset,
            strings: Vec::new(),
            ids: HashMap::default(),
        }
    }

    /// Number of symbols visible (parent's and own).
    pub(crate) fn len(&self) -> u32 {
        self.offset + self.strings.len() as u32
    }

    /// The id of `s`, if interned.
    pub(crate) fn get(&self, s: &str) -> Option<u32> {
        if let Some(parent) = &self.parent
            && let Some(id) = parent.get(s)
        {
            return Some(id);
        }
        if self.ids.is_empty() {
            return self
                .strings
                .iter()
                .position(|x| **x == *s)
                .map(|i| self.offset + i as u32);
        }
        self.ids.get(s).copied()
    }

    /// The id of `s`, interning it if new.
    pub(crate) fn intern(&mut self, s: &str) -> u32 {
        if let Some(id) = self.get(s) {
            return id;
        }
        let id = self.len();
        let arc: Arc<str> = Arc::from(s);
        self.strings.push(arc.clone());
        if !self.ids.is_empty() {
            self.ids.insert(arc, id);
        } else if self.strings.len() > SCAN_SYMBOLS {
            let offset = self.offset;
            self.ids = (self.strings.iter().cloned()).zip(offset..).collect();
        }
        id
    }

    /// The string of an id, shared (no copy). Unknown ids resolve to "".
    pub(crate) fn resolve_shared(&self, id: u32) -> Arc<str> {
        if id < self.offset {
            return self
                .parent
                .as_ref()
                .map_or_else(|| Arc::from(""), |p| p.resolve_shared(id));
        }
        self.strings
            .get((id - self.offset) as usize)
            .cloned()
            .unwrap_or_else(|| Arc::from(""))
    }

    /// The string of an id. Unknown ids (never produced by this table) resolve to "".
    pub(crate) fn resolve(&self, id: u32) -> &str {
        if id < self.offset {
            return self.parent.as_ref().map_or("", |p| p.resolve(id));
        }
        self.strings
            .get((id - self.offset) as usize)
            .map_or("", |s| s.as_ref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_print_like_cpp_ostream() {
        assert_eq!(format_float(0.5), "0.5");
        assert_eq!(format_float(1.0), "1");
        assert_eq!(format_float(-2.25), "-2.25");
        assert_eq!(format_float(1.0e10), "1e+10");
        assert_eq!(format_float(123456.0), "123456");
        assert_eq!(format_float(1234567.0), "1.23457e+06");
        assert_eq!(format_float(0.0001), "0.0001");
        // Output files: `%.9g`, as Soufflé's `setprecision(max_digits10)` (its
        // `indexed_inequalities` test: 2^-10 and 2^-9).
        assert_eq!(format_float_output(0.000_976_562_5), "0.0009765625");
        assert_eq!(format_float_output(0.001_953_125), "0.001953125");
        assert_eq!(format_float_output(0.1), "0.100000001");
        assert_eq!(format_float_output(3.75), "3.75");
        assert_eq!(format_float_output(1.0e10), "1e+10");
        assert_eq!(format_float_output(123_456_790.0), "123456792");
        assert_eq!(format_float_output(1.0e9), "1e+09");
        // `to_string`: `%f` (Soufflé's `symbol_operations` test).
        assert_eq!(format_float_fixed(2.75), "2.750000");
        assert_eq!(format_float_fixed(1.0 / 3.0), "0.333333");
        assert_eq!(format_float_fixed(-0.5), "-0.500000");
        assert_eq!(format_float_fixed(1.0e10), "10000000000.000000");
        assert_eq!(format_float(0.00001), "1e-05");
        assert_eq!(format_float(1.0 / 3.0), "0.333333");
    }

    #[test]
    fn child_interner_sees_parent_and_appends() {
        let mut base = Interner::default();
        let a = base.intern("a");
        let base = Arc::new(base);
        let mut child = Interner::child(base.clone());
        assert_eq!(child.intern("a"), a);
        let b = child.intern("b");
        assert_eq!(b, 1);
        assert_eq!(child.resolve(b), "b");
        assert_eq!(child.resolve(a), "a");
        assert_eq!(base.get("b"), None);
    }

    #[test]
    fn symbol_literals_escape_only_what_needs_it() {
        let check = |s: &str, expected: &str| assert_eq!(Value::sym(s).to_literal(), expected);
        check("", r#""""#);
        check("plain café", r#""plain café""#);
        check("a\"b", r#""a\"b""#);
        check("\\", r#""\\""#);
        check("\n\tx\r", r#""\n\tx\r""#);
        check("é\"", r#""é\"""#);
        let mut out = String::from("x = ");
        Value::sym("y\\z").write_literal(&mut out);
        assert_eq!(out, r#"x = "y\\z""#);
    }

    #[test]
    fn output_order_is_numeric_then_bytewise() {
        let mut v = vec![Value::Number(10), Value::Number(-2), Value::Number(3)];
        v.sort_by(Value::total_cmp);
        assert_eq!(
            v,
            vec![Value::Number(-2), Value::Number(3), Value::Number(10)]
        );
        assert_eq!(Value::sym("B").total_cmp(&Value::sym("a")), Ordering::Less);
    }
}
