//! The values the store binds and reads: [`SqlValue`] (borrowed) and [`Value`] (owned), what
//! can be bound ([`Param`], [`Params`], [`params!`](crate::store::params)) and what a column
//! can be read as ([`Column`]). Both engines' arms of [`super::sql`] speak these.

use super::StoreError;

/// A value as a statement binds it or a row holds it, borrowed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SqlValue<'a> {
    /// SQL NULL.
    Null,
    /// A 64-bit integer.
    Integer(i64),
    /// A 64-bit float.
    Real(f64),
    /// UTF-8 text.
    Text(&'a str),
    /// Bytes.
    Blob(&'a [u8]),
}

impl<'a> SqlValue<'a> {
    /// The text, or what the value is instead.
    pub fn as_str(&self) -> Result<&'a str, StoreError> {
        match *self {
            SqlValue::Text(s) => Ok(s),
            other => Err(StoreError::corrupt(format!(
                "expected text, found {}",
                other.kind()
            ))),
        }
    }

    /// The value's kind, for messages.
    pub fn kind(&self) -> &'static str {
        match self {
            SqlValue::Null => "null",
            SqlValue::Integer(_) => "an integer",
            SqlValue::Real(_) => "a real",
            SqlValue::Text(_) => "text",
            SqlValue::Blob(_) => "a blob",
        }
    }
}

/// An owned value: for statements whose parameters are assembled at run time.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// SQL NULL.
    Null,
    /// A 64-bit integer.
    Integer(i64),
    /// A 64-bit float.
    Real(f64),
    /// UTF-8 text.
    Text(String),
    /// Bytes.
    Blob(Vec<u8>),
}

impl From<i64> for Value {
    fn from(n: i64) -> Value {
        Value::Integer(n)
    }
}

impl From<String> for Value {
    fn from(s: String) -> Value {
        Value::Text(s)
    }
}

impl From<&str> for Value {
    fn from(s: &str) -> Value {
        Value::Text(s.to_string())
    }
}

/// Something a statement can bind.
pub trait Param {
    /// The value bound; an error when it has no SQL form (an unsigned number past `i64`).
    fn value(&self) -> Result<SqlValue<'_>, StoreError>;
}

impl<T: Param + ?Sized> Param for &T {
    fn value(&self) -> Result<SqlValue<'_>, StoreError> {
        (**self).value()
    }
}

impl<T: Param> Param for Option<T> {
    fn value(&self) -> Result<SqlValue<'_>, StoreError> {
        match self {
            Some(v) => v.value(),
            None => Ok(SqlValue::Null),
        }
    }
}

/// Text as a parameter. Text holding a NUL character (U+0000) is refused on both engines:
/// PostgreSQL can neither store nor compare it, and SQLite alone accepting it would make the
/// engines answer differently (a NUL is also how a name is cut short in the C code a tool may
/// hand it to). An agent sending one gets the store's `invalid` answer, and nothing is stored.
fn text(s: &str) -> Result<SqlValue<'_>, StoreError> {
    if s.contains('\0') {
        return Err(StoreError::Invalid(format!(
            "text holding a NUL character (U+0000) cannot be stored or looked up: {:?}\n  help: remove the NUL character",
            s.chars().take(80).collect::<String>()
        )));
    }
    Ok(SqlValue::Text(s))
}

impl Param for Value {
    fn value(&self) -> Result<SqlValue<'_>, StoreError> {
        Ok(match self {
            Value::Null => SqlValue::Null,
            Value::Integer(n) => SqlValue::Integer(*n),
            Value::Real(x) => SqlValue::Real(*x),
            Value::Text(s) => return text(s),
            Value::Blob(b) => SqlValue::Blob(b),
        })
    }
}

impl Param for SqlValue<'_> {
    fn value(&self) -> Result<SqlValue<'_>, StoreError> {
        match *self {
            SqlValue::Text(s) => text(s),
            other => Ok(other),
        }
    }
}

impl Param for str {
    fn value(&self) -> Result<SqlValue<'_>, StoreError> {
        text(self)
    }
}

impl Param for String {
    fn value(&self) -> Result<SqlValue<'_>, StoreError> {
        text(self)
    }
}

impl Param for [u8] {
    fn value(&self) -> Result<SqlValue<'_>, StoreError> {
        Ok(SqlValue::Blob(self))
    }
}

impl Param for Vec<u8> {
    fn value(&self) -> Result<SqlValue<'_>, StoreError> {
        Ok(SqlValue::Blob(self))
    }
}

impl Param for f64 {
    fn value(&self) -> Result<SqlValue<'_>, StoreError> {
        Ok(SqlValue::Real(*self))
    }
}

impl Param for bool {
    fn value(&self) -> Result<SqlValue<'_>, StoreError> {
        Ok(SqlValue::Integer(i64::from(*self)))
    }
}

macro_rules! integer_param {
    ($($t:ty),*) => {$(
        impl Param for $t {
            fn value(&self) -> Result<SqlValue<'_>, StoreError> {
                i64::try_from(*self).map(SqlValue::Integer).map_err(|_| {
                    StoreError::Invalid(format!("the number {self} is too large to store"))
                })
            }
        }
    )*};
}
integer_param!(i64, i32, i16, i8, u64, u32, u16, u8, usize);

/// The parameters of one statement, bound in order to `?1`, `?2`, ...
pub trait Params {
    /// One parameter.
    type Item: Param;
    /// The parameters in order.
    fn into_params(self) -> impl Iterator<Item = Self::Item>;
}

/// No parameters.
impl Params for () {
    type Item = SqlValue<'static>;
    fn into_params(self) -> impl Iterator<Item = Self::Item> {
        std::iter::empty()
    }
}

impl<T: Param, const N: usize> Params for [T; N] {
    type Item = T;
    fn into_params(self) -> impl Iterator<Item = T> {
        self.into_iter()
    }
}

impl<'a> Params for &'a [&'a dyn Param] {
    type Item = &'a dyn Param;
    fn into_params(self) -> impl Iterator<Item = &'a dyn Param> {
        self.iter().copied()
    }
}

/// Parameters from an iterator ([`params_from_iter`]).
#[derive(Debug, Clone)]
pub struct ParamsFromIter<I>(I);

/// Binds the items of `iter` in order: for statements whose parameters are counted at run time.
pub fn params_from_iter<I>(iter: I) -> ParamsFromIter<I>
where
    I: IntoIterator,
    I::Item: Param,
{
    ParamsFromIter(iter)
}

impl<I> Params for ParamsFromIter<I>
where
    I: IntoIterator,
    I::Item: Param,
{
    type Item = I::Item;
    fn into_params(self) -> impl Iterator<Item = I::Item> {
        self.0.into_iter()
    }
}

/// How many values an `IN (...)` list built by [`in_list`] holds: one statement text for any
/// number of keys (prepared once), a statement per this many keys rather than one per key (a
/// round trip each on PostgreSQL).
pub const IN_LIST: usize = 32;

/// `?first, ?first+1, ...`: the [`IN_LIST`] placeholders of an `IN (...)` list whose values
/// begin at parameter `first`. Bind each chunk of keys padded with a key no row has.
pub fn in_list(first: usize) -> String {
    (first..first + IN_LIST)
        .map(|i| format!("?{i}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The parameters of a statement, as `&[&dyn Param]`: `params![id, n]` (exported as
/// `store::params`).
#[doc(hidden)]
#[macro_export]
macro_rules! __store_params {
    () => {
        ()
    };
    ($($param:expr),+ $(,)?) => {
        &[$(&$param as &dyn $crate::store::Param),+] as &[&dyn $crate::store::Param]
    };
}
pub use crate::__store_params as params;

/// Something a column can be read as.
pub trait Column: Sized {
    /// Reads `value`; an error says what was found instead.
    fn from_value(value: SqlValue<'_>) -> Result<Self, String>;
}

impl<T: Column> Column for Option<T> {
    fn from_value(value: SqlValue<'_>) -> Result<Self, String> {
        match value {
            SqlValue::Null => Ok(None),
            other => T::from_value(other).map(Some),
        }
    }
}

impl Column for String {
    fn from_value(value: SqlValue<'_>) -> Result<Self, String> {
        match value {
            SqlValue::Text(s) => Ok(s.to_string()),
            other => Err(format!("expected text, found {}", other.kind())),
        }
    }
}

impl Column for Vec<u8> {
    fn from_value(value: SqlValue<'_>) -> Result<Self, String> {
        match value {
            SqlValue::Blob(b) => Ok(b.to_vec()),
            other => Err(format!("expected a blob, found {}", other.kind())),
        }
    }
}

impl Column for f64 {
    fn from_value(value: SqlValue<'_>) -> Result<Self, String> {
        match value {
            SqlValue::Real(x) => Ok(x),
            // As SQLite reads an integer column as a real.
            #[allow(clippy::cast_precision_loss)]
            SqlValue::Integer(n) => Ok(n as f64),
            other => Err(format!("expected a number, found {}", other.kind())),
        }
    }
}

impl Column for bool {
    fn from_value(value: SqlValue<'_>) -> Result<Self, String> {
        match value {
            SqlValue::Integer(n) => Ok(n != 0),
            other => Err(format!("expected a boolean, found {}", other.kind())),
        }
    }
}

impl Column for Value {
    fn from_value(value: SqlValue<'_>) -> Result<Self, String> {
        Ok(match value {
            SqlValue::Null => Value::Null,
            SqlValue::Integer(n) => Value::Integer(n),
            SqlValue::Real(x) => Value::Real(x),
            SqlValue::Text(s) => Value::Text(s.to_string()),
            SqlValue::Blob(b) => Value::Blob(b.to_vec()),
        })
    }
}

macro_rules! integer_column {
    ($($t:ty),*) => {$(
        impl Column for $t {
            fn from_value(value: SqlValue<'_>) -> Result<Self, String> {
                match value {
                    SqlValue::Integer(n) => <$t>::try_from(n)
                        .map_err(|_| format!("{n} is out of range for {}", stringify!($t))),
                    other => Err(format!("expected an integer, found {}", other.kind())),
                }
            }
        }
    )*};
}
integer_column!(i64, i32, u64, u32, u16, u8, usize);

/// `Ok(None)` for a query that found no row: `conn.query_row(..).optional()?`.
pub trait OptionalExtension<T> {
    /// The row's value, `None` when there was no row, or the error.
    fn optional(self) -> Result<Option<T>, StoreError>;
}

impl<T> OptionalExtension<T> for Result<T, StoreError> {
    fn optional(self) -> Result<Option<T>, StoreError> {
        match self {
            Ok(v) => Ok(Some(v)),
            Err(StoreError::NoRow) => Ok(None),
            Err(e) => Err(e),
        }
    }
}
