//! The store's own interface to its database: [`Connection`], [`Statement`], [`Row`], the
//! values a statement binds ([`Param`], [`Params`], [`params!`](crate::store::params)) and
//! reads ([`Column`]), and the [`Dialect`] a module asks for where two engines' SQL differs.
//!
//! Modules reach the database only through these types (`tests/architecture.rs` refuses
//! `rusqlite` outside `store/`), so a second engine is a second arm of each type here, not a
//! change to every module. SQL is written as SQLite and PostgreSQL both accept it, with `?N`
//! placeholders; where they differ, a module writes both forms and picks one by
//! [`Connection::dialect`].

use rusqlite::types::{ToSqlOutput, ValueRef};

use super::StoreError;

/// Which SQL a connection speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// SQLite 3 (the embedded default).
    Sqlite,
}

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

impl Param for Value {
    fn value(&self) -> Result<SqlValue<'_>, StoreError> {
        Ok(match self {
            Value::Null => SqlValue::Null,
            Value::Integer(n) => SqlValue::Integer(*n),
            Value::Real(x) => SqlValue::Real(*x),
            Value::Text(s) => SqlValue::Text(s),
            Value::Blob(b) => SqlValue::Blob(b),
        })
    }
}

impl Param for SqlValue<'_> {
    fn value(&self) -> Result<SqlValue<'_>, StoreError> {
        Ok(*self)
    }
}

impl Param for str {
    fn value(&self) -> Result<SqlValue<'_>, StoreError> {
        Ok(SqlValue::Text(self))
    }
}

impl Param for String {
    fn value(&self) -> Result<SqlValue<'_>, StoreError> {
        Ok(SqlValue::Text(self))
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

/// A parameter as SQLite binds it.
struct Bound<P>(P);

impl<P: Param> rusqlite::ToSql for Bound<P> {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        let value = self
            .0
            .value()
            .map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))?;
        Ok(ToSqlOutput::Borrowed(match value {
            SqlValue::Null => ValueRef::Null,
            SqlValue::Integer(n) => ValueRef::Integer(n),
            SqlValue::Real(x) => ValueRef::Real(x),
            SqlValue::Text(s) => ValueRef::Text(s.as_bytes()),
            SqlValue::Blob(b) => ValueRef::Blob(b),
        }))
    }
}

fn sqlite_params<P: Params>(params: P) -> impl rusqlite::Params {
    rusqlite::params_from_iter(params.into_params().map(Bound))
}

/// One connection to the database.
pub struct Connection {
    sqlite: rusqlite::Connection,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("dialect", &self.dialect())
            .finish()
    }
}

impl Connection {
    /// Wraps a SQLite connection opened with the store's settings.
    pub(super) fn sqlite(sqlite: rusqlite::Connection) -> Connection {
        Connection { sqlite }
    }

    /// The SQLite connection underneath, for what only the store itself does (pragmas,
    /// checkpoints, transactions).
    pub(super) fn raw(&self) -> &rusqlite::Connection {
        &self.sqlite
    }

    /// The SQLite connection underneath, mutably (to set hooks).
    pub(super) fn raw_mut(&mut self) -> &mut rusqlite::Connection {
        &mut self.sqlite
    }

    /// Which SQL this connection speaks.
    pub fn dialect(&self) -> Dialect {
        Dialect::Sqlite
    }

    /// Runs one statement; the number of rows it changed.
    pub fn execute<P: Params>(&self, sql: &str, params: P) -> Result<usize, StoreError> {
        Ok(self.sqlite.execute(sql, sqlite_params(params))?)
    }

    /// Runs statements separated by `;`, without parameters (schema changes, migrations).
    pub fn execute_batch(&self, sql: &str) -> Result<(), StoreError> {
        Ok(self.sqlite.execute_batch(sql)?)
    }

    /// The first row of a query through `f`; [`StoreError::NoRow`] when there is none
    /// ([`OptionalExtension::optional`] makes that `None`).
    pub fn query_row<T, P, F>(&self, sql: &str, params: P, f: F) -> Result<T, StoreError>
    where
        P: Params,
        F: FnOnce(&Row<'_>) -> Result<T, StoreError>,
    {
        let mut stmt = self.sqlite.prepare(sql)?;
        let mut rows = stmt.query(sqlite_params(params))?;
        match rows.next()? {
            Some(row) => f(&Row { sqlite: row }),
            None => Err(StoreError::NoRow),
        }
    }

    /// Prepares a statement.
    pub fn prepare(&self, sql: &str) -> Result<Statement<'_>, StoreError> {
        Ok(Statement {
            sqlite: SqliteStatement::Plain(self.sqlite.prepare(sql)?),
        })
    }

    /// Prepares a statement, or takes it from the connection's cache (hot paths).
    pub fn prepare_cached(&self, sql: &str) -> Result<Statement<'_>, StoreError> {
        Ok(Statement {
            sqlite: SqliteStatement::Cached(self.sqlite.prepare_cached(sql)?),
        })
    }
}

enum SqliteStatement<'c> {
    Plain(rusqlite::Statement<'c>),
    Cached(rusqlite::CachedStatement<'c>),
}

/// A prepared statement.
pub struct Statement<'c> {
    sqlite: SqliteStatement<'c>,
}

impl<'c> Statement<'c> {
    fn raw(&mut self) -> &mut rusqlite::Statement<'c> {
        match &mut self.sqlite {
            SqliteStatement::Plain(s) => s,
            SqliteStatement::Cached(s) => s,
        }
    }

    /// How many columns the statement's rows have.
    pub fn column_count(&mut self) -> usize {
        self.raw().column_count()
    }

    /// The names of the statement's columns, in order.
    pub fn column_names(&mut self) -> Vec<String> {
        self.raw().column_names().map(str::to_string).collect()
    }

    /// Runs the statement; the number of rows it changed.
    pub fn execute<P: Params>(&mut self, params: P) -> Result<usize, StoreError> {
        Ok(self.raw().execute(sqlite_params(params))?)
    }

    /// The rows of the query, read one at a time with [`Rows::next`].
    pub fn query<P: Params>(&mut self, params: P) -> Result<Rows<'_>, StoreError> {
        Ok(Rows {
            sqlite: self.raw().query(sqlite_params(params))?,
        })
    }

    /// Each row of the query through `f`.
    pub fn query_map<'s, T, P, F>(
        &'s mut self,
        params: P,
        mut f: F,
    ) -> Result<impl Iterator<Item = Result<T, StoreError>> + 's, StoreError>
    where
        P: Params,
        F: FnMut(&Row<'_>) -> Result<T, StoreError> + 's,
        T: 's,
    {
        Ok(self
            .raw()
            .query_and_then(sqlite_params(params), move |row| f(&Row { sqlite: row }))?)
    }

    /// The first row through `f`; [`StoreError::NoRow`] when there is none.
    pub fn query_row<T, P, F>(&mut self, params: P, f: F) -> Result<T, StoreError>
    where
        P: Params,
        F: FnOnce(&Row<'_>) -> Result<T, StoreError>,
    {
        let mut rows = self.raw().query(sqlite_params(params))?;
        match rows.next()? {
            Some(row) => f(&Row { sqlite: row }),
            None => Err(StoreError::NoRow),
        }
    }

    /// Whether the query finds a row.
    pub fn exists<P: Params>(&mut self, params: P) -> Result<bool, StoreError> {
        Ok(self.raw().exists(sqlite_params(params))?)
    }
}

/// The rows of a query.
pub struct Rows<'s> {
    sqlite: rusqlite::Rows<'s>,
}

impl Rows<'_> {
    /// The next row, `None` after the last.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Result<Option<Row<'_>>, StoreError> {
        Ok(self.sqlite.next()?.map(|row| Row { sqlite: row }))
    }
}

/// One row of a query's answer.
#[derive(Clone, Copy)]
pub struct Row<'r> {
    sqlite: &'r rusqlite::Row<'r>,
}

impl<'r> Row<'r> {
    /// Column `idx` (from 0), read as `T`.
    pub fn get<T: Column>(&self, idx: usize) -> Result<T, StoreError> {
        T::from_value(self.value(idx)?)
            .map_err(|e| StoreError::corrupt(format!("column {idx} of a row: {e}")))
    }

    /// Column `idx` (from 0) as it is stored, borrowed.
    pub fn value(&self, idx: usize) -> Result<SqlValue<'r>, StoreError> {
        Ok(match self.sqlite.get_ref(idx)? {
            ValueRef::Null => SqlValue::Null,
            ValueRef::Integer(n) => SqlValue::Integer(n),
            ValueRef::Real(x) => SqlValue::Real(x),
            ValueRef::Text(t) => SqlValue::Text(std::str::from_utf8(t).map_err(|e| {
                StoreError::corrupt(format!("column {idx} of a row is not UTF-8: {e}"))
            })?),
            ValueRef::Blob(b) => SqlValue::Blob(b),
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    fn conn() -> Connection {
        Connection::sqlite(rusqlite::Connection::open_in_memory().unwrap())
    }

    #[test]
    fn values_bind_and_read_back_as_they_were() {
        let c = conn();
        c.execute_batch("CREATE TABLE t (i INTEGER, r REAL, s TEXT, b BLOB, n TEXT)")
            .unwrap();
        let blob = vec![0u8, 1, 255];
        c.execute(
            "INSERT INTO t VALUES (?1, ?2, ?3, ?4, ?5)",
            params![-7i64, 2.5, "é", blob, None::<String>],
        )
        .unwrap();
        let row = c
            .query_row("SELECT i, r, s, b, n FROM t", (), |r| {
                Ok((
                    r.get::<i64>(0)?,
                    r.get::<f64>(1)?,
                    r.get::<String>(2)?,
                    r.get::<Vec<u8>>(3)?,
                    r.get::<Option<String>>(4)?,
                ))
            })
            .unwrap();
        assert_eq!(row, (-7, 2.5, "é".to_string(), blob, None));
    }

    #[test]
    fn a_query_without_a_row_is_none_when_optional() {
        let c = conn();
        c.execute_batch("CREATE TABLE t (i INTEGER)").unwrap();
        let found = c
            .query_row("SELECT i FROM t WHERE i = ?1", [1], |r| r.get::<i64>(0))
            .optional()
            .unwrap();
        assert_eq!(found, None);
        let err = c
            .query_row("SELECT i FROM t", (), |r| r.get::<i64>(0))
            .unwrap_err();
        assert!(matches!(err, StoreError::NoRow), "{err}");
    }

    #[test]
    fn a_number_past_i64_is_refused_not_wrapped() {
        let c = conn();
        c.execute_batch("CREATE TABLE t (i INTEGER)").unwrap();
        let err = c
            .execute("INSERT INTO t VALUES (?1)", [u64::MAX])
            .unwrap_err();
        assert!(err.to_string().contains("too large"), "{err}");
        let n: i64 = c
            .query_row("SELECT count(*) FROM t", (), |r| r.get(0))
            .unwrap();
        assert_eq!(n, 0);
    }

    #[test]
    fn a_column_of_the_wrong_kind_says_what_it_found() {
        let c = conn();
        let err = c
            .query_row("SELECT 'x'", (), |r| r.get::<i64>(0))
            .unwrap_err();
        assert!(
            err.to_string().contains("expected an integer, found text"),
            "{err}"
        );
        let err = c
            .query_row("SELECT -1", (), |r| r.get::<u32>(0))
            .unwrap_err();
        assert!(err.to_string().contains("out of range"), "{err}");
    }

    #[test]
    fn statements_map_rows_and_bind_from_iterators() {
        let c = conn();
        c.execute_batch("CREATE TABLE t (i INTEGER); INSERT INTO t VALUES (1), (2), (3);")
            .unwrap();
        let mut stmt = c
            .prepare_cached("SELECT i FROM t WHERE i IN (?1, ?2) ORDER BY i")
            .unwrap();
        let got: Vec<i64> = stmt
            .query_map(
                params_from_iter([Value::Integer(3), Value::Integer(1)]),
                |r| r.get(0),
            )
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(got, vec![1, 3]);
        let mut rows = stmt.query(params![2, 9]).unwrap();
        let mut seen = Vec::new();
        while let Some(r) = rows.next().unwrap() {
            seen.push(r.get::<i64>(0).unwrap());
        }
        assert_eq!(seen, vec![2]);
    }
}
