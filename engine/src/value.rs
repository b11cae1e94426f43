//! Values, their types, the table of symbols and records, and Soufflé's text format for them.
//!
//! Like Soufflé's default build, every value fits a 32-bit slot: `number` is `i32` with wrapping
//! arithmetic, `unsigned` is `u32`, `float` is `f32`, a `symbol` is an index into the symbol
//! table, and a record is an index into the record table (0 is `nil`). Records are hash-consed,
//! as in Soufflé: equal fields, equal index, so comparing records compares indices. Tuples are
//! arrays of such slots; the column types say how to read each slot.

use std::cmp::Ordering;
use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

mod interner;
pub(crate) use interner::Interner;

/// The type of a column or variable: one of the four primitive types, or a record type.
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
    /// A record type (`.type P = [a: number, b: symbol]`): an index into the program's
    /// [`RecordType`]s ([`crate::ir::Ir::records`]).
    Record(u16),
}

impl Type {
    /// The Soufflé name of the type.
    pub fn as_str(self) -> &'static str {
        match self {
            Type::Symbol => "symbol",
            Type::Number => "number",
            Type::Unsigned => "unsigned",
            Type::Float => "float",
            Type::Record(_) => "record",
        }
    }

    /// Whether arithmetic applies.
    pub fn is_numeric(self) -> bool {
        matches!(self, Type::Number | Type::Unsigned | Type::Float)
    }

    /// Whether `<`, `<=`, `>` and `>=` apply (not to records, as in Soufflé).
    pub fn is_ordered(self) -> bool {
        !matches!(self, Type::Record(_))
    }
}

impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A record type (`.type P = [a: number, b: P]`) or an algebraic data type (`.type T = A {x:
/// number} | B {}`): its name and its fields, or its branches.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RecordType {
    /// The name it was declared with.
    pub name: String,
    /// A record type's field names and types, in order (none for an algebraic data type).
    pub fields: Vec<(String, Type)>,
    /// An algebraic data type's branches, sorted by name as Soufflé numbers them (none for a
    /// record type). A value of branch `b` is kept as the record of `b`'s index and its fields.
    pub branches: Vec<Branch>,
}

/// A branch of an algebraic data type.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Branch {
    /// Its name, without the `$`.
    pub name: String,
    /// Its field names and types.
    pub fields: Vec<(String, Type)>,
}

impl RecordType {
    /// Whether it is an algebraic data type.
    pub fn is_adt(&self) -> bool {
        !self.branches.is_empty()
    }

    /// The branch called `name`, with its index.
    pub fn branch(&self, name: &str) -> Option<(usize, &Branch)> {
        self.branches
            .iter()
            .enumerate()
            .find(|(_, b)| b.name == name)
    }
}

/// The algebraic data type with a branch called `name` (branch names are unique in a program),
/// with the branch's index.
pub(crate) fn branch_of<'a>(
    records: &'a [RecordType],
    name: &str,
) -> Option<(usize, &'a RecordType)> {
    records
        .iter()
        .find_map(|rt| rt.branch(name).map(|(b, _)| (b, rt)))
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
    /// A record's fields (`[1, "a"]`).
    Record(Arc<[Value]>),
    /// The record `nil`.
    Nil,
    /// A value of an algebraic data type: its branch and its fields (`$Some(1, "a")`).
    Adt {
        /// The branch's name, without the `$`.
        branch: Arc<str>,
        /// Its fields.
        args: Arc<[Value]>,
    },
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

    /// The value's type. A record does not carry which record type it is: records and `nil`
    /// give [`Value::ANY_RECORD`]; [`Value::fits`] checks a value against a column's type.
    pub fn ty(&self) -> Type {
        match self {
            Value::Number(_) => Type::Number,
            Value::Unsigned(_) => Type::Unsigned,
            Value::Float(_) => Type::Float,
            Value::Symbol(_) => Type::Symbol,
            Value::Record(_) | Value::Nil | Value::Adt { .. } => Value::ANY_RECORD,
        }
    }

    /// What [`Value::ty`] gives for a record or `nil`: no record type of a program.
    pub const ANY_RECORD: Type = Type::Record(u16::MAX);

    /// The value as one of type `ty` (whose record types, if any, are `records`), integer
    /// literals converted where lossless, in records too; none if it is not one.
    pub fn coerce(&self, ty: Type, records: &[RecordType]) -> Option<Value> {
        match (self, ty) {
            (Value::Number(n), Type::Unsigned) => u32::try_from(*n).ok().map(Value::Unsigned),
            (Value::Number(n), Type::Float) => Some(Value::Float(*n as f32)),
            (Value::Unsigned(n), Type::Number) => i32::try_from(*n).ok().map(Value::Number),
            (Value::Nil, Type::Record(id)) => {
                (!records.get(usize::from(id))?.is_adt()).then_some(Value::Nil)
            }
            (Value::Record(fields), Type::Record(id)) => {
                let rt = records.get(usize::from(id))?;
                if rt.is_adt() || rt.fields.len() != fields.len() {
                    return None;
                }
                let values: Option<Vec<Value>> = (fields.iter().zip(&rt.fields))
                    .map(|(v, (_, t))| v.coerce(*t, records))
                    .collect();
                Some(Value::Record(values?.into()))
            }
            (Value::Adt { branch, args }, Type::Record(id)) => {
                let (_, b) = records.get(usize::from(id))?.branch(branch)?;
                if b.fields.len() != args.len() {
                    return None;
                }
                let values: Option<Vec<Value>> = (args.iter().zip(&b.fields))
                    .map(|(v, (_, t))| v.coerce(*t, records))
                    .collect();
                Some(Value::Adt {
                    branch: Arc::clone(branch),
                    args: values?.into(),
                })
            }
            (v, t) if v.ty() == t => Some(v.clone()),
            _ => None,
        }
    }

    /// Whether the value is one of type `ty`, whose record types (if any) are `records`.
    pub fn fits(&self, ty: Type, records: &[RecordType]) -> bool {
        let all_fit = |values: &[Value], fields: &[(String, Type)]| {
            values.len() == fields.len()
                && (values.iter().zip(fields)).all(|(v, (_, t))| v.fits(*t, records))
        };
        match (self, ty) {
            (Value::Nil, Type::Record(id)) => {
                records.get(usize::from(id)).is_some_and(|rt| !rt.is_adt())
            }
            (Value::Record(fields), Type::Record(id)) => records
                .get(usize::from(id))
                .is_some_and(|rt| !rt.is_adt() && all_fit(fields, &rt.fields)),
            (Value::Adt { branch, args }, Type::Record(id)) => records
                .get(usize::from(id))
                .and_then(|rt| rt.branch(branch))
                .is_some_and(|(_, b)| all_fit(args, &b.fields)),
            (v, t) => v.ty() == t,
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
            // `nil` first, then records field by field.
            (Value::Nil, Value::Nil) => Ordering::Equal,
            (Value::Nil, Value::Record(_)) => Ordering::Less,
            (Value::Record(_), Value::Nil) => Ordering::Greater,
            (Value::Record(a), Value::Record(b)) => fields_cmp(a, b),
            // By branch (Soufflé numbers branches in the order of their names), then fields.
            (Value::Adt { branch: x, args: a }, Value::Adt { branch: y, args: b }) => x
                .as_bytes()
                .cmp(y.as_bytes())
                .then_with(|| fields_cmp(a, b)),
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
            Value::Record(fields) => {
                out.push('[');
                for (i, f) in fields.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    f.write_literal(out);
                }
                out.push(']');
            }
            Value::Adt { branch, args } => {
                out.push('$');
                out.push_str(branch);
                if !args.is_empty() {
                    out.push('(');
                    for (i, f) in args.iter().enumerate() {
                        if i > 0 {
                            out.push_str(", ");
                        }
                        f.write_literal(out);
                    }
                    out.push(')');
                }
            }
            other => out.push_str(&other.to_literal()),
        }
    }

    /// Writes the value as a Datalog literal (`"a"`, `3`, `3u`, `1.5`, `[1, "a"]`, `nil`).
    pub fn to_literal(&self) -> String {
        match self {
            Value::Symbol(_) | Value::Record(_) | Value::Adt { .. } => {
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
            Value::Nil => "nil".into(),
        }
    }

    /// Appends the value as Soufflé writes it to an output file: as [`fmt::Display`], but
    /// floats to `max_digits10` (`%.9g`), in records too.
    pub fn write_output(&self, out: &mut String) {
        let fields = |values: &[Value], out: &mut String| {
            for (i, f) in values.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                f.write_output(out);
            }
        };
        match self {
            Value::Float(x) => out.push_str(&format_float_output(*x)),
            Value::Record(values) => {
                out.push('[');
                fields(values, out);
                out.push(']');
            }
            Value::Adt { branch, args } => {
                out.push('$');
                out.push_str(branch);
                if !args.is_empty() {
                    out.push('(');
                    fields(args, out);
                    out.push(')');
                }
            }
            other => {
                use std::fmt::Write as _;
                let _ = write!(out, "{other}");
            }
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
            // Soufflé's record format: fields joined by `", "`, symbols bare.
            Value::Record(fields) => {
                f.write_str("[")?;
                for (i, v) in fields.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{v}")?;
                }
                f.write_str("]")
            }
            Value::Nil => f.write_str("nil"),
            // Soufflé's: `$Name` for a branch without fields, `$Name(a, b)` otherwise.
            Value::Adt { branch, args } => {
                write!(f, "${branch}")?;
                if !args.is_empty() {
                    f.write_str("(")?;
                    for (i, v) in args.iter().enumerate() {
                        if i > 0 {
                            f.write_str(", ")?;
                        }
                        write!(f, "{v}")?;
                    }
                    f.write_str(")")?;
                }
                Ok(())
            }
        }
    }
}

/// Records' fields in order, then the shorter first.
fn fields_cmp(a: &[Value], b: &[Value]) -> Ordering {
    let mut by_field = a.iter().zip(b).map(|(x, y)| x.total_cmp(y));
    by_field
        .find(|o| o.is_ne())
        .unwrap_or_else(|| a.len().cmp(&b.len()))
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

/// How deeply records (and branches) may nest: deeper, an evaluation stops with
/// `EvalError::RecordDepth` and a facts file's line is refused. Reading and writing a record
/// goes down it recursively; a bound keeps that within any thread's stack.
pub const MAX_RECORD_DEPTH: u16 = 1000;

/// Encodes a typed value into a 32-bit slot, interning symbols and records.
pub(crate) fn encode(value: &Value, symbols: &mut Interner) -> u32 {
    encode_nested(value, symbols).0
}

/// [`encode`], with how deeply the value's records nest.
fn encode_nested(value: &Value, symbols: &mut Interner) -> (u32, u16) {
    let (fields, head) = match value {
        Value::Number(n) => return (*n as u32, 0),
        Value::Unsigned(u) => return (*u, 0),
        Value::Float(x) => return (x.to_bits(), 0),
        Value::Symbol(s) => return (symbols.intern(s), 0),
        Value::Nil => return (NIL, 0),
        Value::Record(fields) => (fields, None),
        // A branch no type has (which no coerced value holds) is encoded as `nil`, which no
        // algebraic data type's column holds.
        Value::Adt { branch, args } => match branch_of(&symbols.record_types, branch) {
            Some((b, _)) => (args, Some(b as u32)),
            None => return (NIL, 0),
        },
    };
    let mut slots: Vec<u32> = head.into_iter().collect();
    let mut depth = 0;
    for f in fields.iter() {
        let (slot, d) = encode_nested(f, symbols);
        slots.push(slot);
        depth = depth.max(d);
    }
    let depth = depth.saturating_add(1);
    (symbols.intern_record(&slots, depth), depth)
}

/// The slot of `value` if every symbol and record in it is already in the table, interning
/// nothing: a value never interned is in no tuple.
pub(crate) fn encode_existing(value: &Value, symbols: &Interner) -> Option<u32> {
    match value {
        Value::Symbol(s) => symbols.get(s),
        Value::Nil => Some(NIL),
        Value::Record(fields) => {
            let slots: Option<Vec<u32>> =
                fields.iter().map(|f| encode_existing(f, symbols)).collect();
            symbols.get_record(&slots?)
        }
        Value::Adt { branch, args } => {
            let (b, _) = branch_of(&symbols.record_types, branch)?;
            let mut slots = vec![b as u32];
            for f in args.iter() {
                slots.push(encode_existing(f, symbols)?);
            }
            symbols.get_record(&slots)
        }
        other => Some(encode(other, &mut Interner::default())),
    }
}

/// Decodes a slot of a known type.
pub(crate) fn decode(slot: u32, ty: Type, symbols: &Interner) -> Value {
    match ty {
        Type::Number => Value::Number(slot as i32),
        Type::Unsigned => Value::Unsigned(slot),
        Type::Float => Value::Float(f32::from_bits(slot)),
        Type::Symbol => Value::Symbol(symbols.resolve_shared(slot)),
        Type::Record(id) => {
            let (Some(fields), Some(rt)) = (
                symbols.resolve_record(slot),
                symbols.record_types.get(usize::from(id)),
            ) else {
                return Value::Nil;
            };
            let decoded = |slots: &[u32], types: &[(String, Type)]| -> Arc<[Value]> {
                (slots.iter().zip(types))
                    .map(|(s, (_, t))| decode(*s, *t, symbols))
                    .collect()
            };
            if rt.is_adt() {
                let Some((b, args)) = fields.split_first() else {
                    return Value::Nil;
                };
                let Some(branch) = rt.branches.get(*b as usize) else {
                    return Value::Nil;
                };
                return Value::Adt {
                    branch: Arc::from(branch.name.as_str()),
                    args: decoded(args, &branch.fields),
                };
            }
            Value::Record(decoded(fields, &rt.fields))
        }
    }
}

/// The slot of `nil`.
pub(crate) const NIL: u32 = 0;

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
