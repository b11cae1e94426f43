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
use super::postgres::PgConnection;

/// Which SQL a connection speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// SQLite 3 (the embedded default).
    Sqlite,
    /// PostgreSQL 14 or later.
    Postgres,
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
    engine: Engine,
}

enum Engine {
    Sqlite(rusqlite::Connection),
    Postgres(PgConnection),
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("dialect", &self.dialect())
            .finish()
    }
}

/// The values of `params`, kept alive while their borrowed forms are bound.
fn values<P: Params>(params: P) -> Vec<P::Item> {
    params.into_params().collect()
}

fn borrowed<T: Param>(kept: &[T]) -> Result<Vec<SqlValue<'_>>, StoreError> {
    kept.iter().map(Param::value).collect()
}

impl Connection {
    /// Wraps a SQLite connection opened with the store's settings.
    pub(super) fn sqlite(sqlite: rusqlite::Connection) -> Connection {
        Connection {
            engine: Engine::Sqlite(sqlite),
        }
    }

    /// Connects to the PostgreSQL database at `url`.
    #[cfg_attr(
        not(test),
        expect(
            dead_code,
            reason = "the store opens PostgreSQL in the next step of issue 37 (its migrations)"
        )
    )]
    pub(super) fn postgres(url: &str) -> Result<Connection, StoreError> {
        Ok(Connection {
            engine: Engine::Postgres(PgConnection::connect(url)?),
        })
    }

    /// The SQLite connection underneath, for what only the store itself does on SQLite
    /// (pragmas, checkpoints, transactions); `None` on PostgreSQL.
    pub(super) fn raw(&self) -> Option<&rusqlite::Connection> {
        match &self.engine {
            Engine::Sqlite(c) => Some(c),
            Engine::Postgres(_) => None,
        }
    }

    /// The SQLite connection underneath, mutably (to set hooks).
    pub(super) fn raw_mut(&mut self) -> Option<&mut rusqlite::Connection> {
        match &mut self.engine {
            Engine::Sqlite(c) => Some(c),
            Engine::Postgres(_) => None,
        }
    }

    /// Which SQL this connection speaks.
    pub fn dialect(&self) -> Dialect {
        match self.engine {
            Engine::Sqlite(_) => Dialect::Sqlite,
            Engine::Postgres(_) => Dialect::Postgres,
        }
    }

    /// Runs one statement; the number of rows it changed.
    pub fn execute<P: Params>(&self, sql: &str, params: P) -> Result<usize, StoreError> {
        match &self.engine {
            Engine::Sqlite(c) => Ok(c.execute(sql, sqlite_params(params))?),
            Engine::Postgres(c) => {
                let kept = values(params);
                c.execute(&c.prepare(sql)?, &borrowed(&kept)?)
            }
        }
    }

    /// Runs statements separated by `;`, without parameters (schema changes, migrations).
    pub fn execute_batch(&self, sql: &str) -> Result<(), StoreError> {
        match &self.engine {
            Engine::Sqlite(c) => Ok(c.execute_batch(sql)?),
            Engine::Postgres(c) => c.batch(sql),
        }
    }

    /// The first row of a query through `f`; [`StoreError::NoRow`] when there is none
    /// ([`OptionalExtension::optional`] makes that `None`).
    pub fn query_row<T, P, F>(&self, sql: &str, params: P, f: F) -> Result<T, StoreError>
    where
        P: Params,
        F: FnOnce(&Row<'_>) -> Result<T, StoreError>,
    {
        self.prepare(sql)?.query_row(params, f)
    }

    /// Prepares a statement.
    pub fn prepare(&self, sql: &str) -> Result<Statement<'_>, StoreError> {
        Ok(Statement {
            inner: match &self.engine {
                Engine::Sqlite(c) => StatementInner::Sqlite(c.prepare(sql)?),
                Engine::Postgres(c) => StatementInner::Postgres(c, c.prepare(sql)?),
            },
        })
    }

    /// Prepares a statement, or takes it from the connection's cache (hot paths).
    pub fn prepare_cached(&self, sql: &str) -> Result<Statement<'_>, StoreError> {
        Ok(Statement {
            inner: match &self.engine {
                Engine::Sqlite(c) => StatementInner::SqliteCached(c.prepare_cached(sql)?),
                Engine::Postgres(c) => StatementInner::Postgres(c, c.prepare(sql)?),
            },
        })
    }
}

enum StatementInner<'c> {
    Sqlite(rusqlite::Statement<'c>),
    SqliteCached(rusqlite::CachedStatement<'c>),
    Postgres(&'c PgConnection, tokio_postgres::Statement),
}

/// A prepared statement.
pub struct Statement<'c> {
    inner: StatementInner<'c>,
}

/// One of two iterators of the same items.
enum Either<A, B> {
    Left(A),
    Right(B),
}

impl<T, A: Iterator<Item = T>, B: Iterator<Item = T>> Iterator for Either<A, B> {
    type Item = T;
    fn next(&mut self) -> Option<T> {
        match self {
            Either::Left(a) => a.next(),
            Either::Right(b) => b.next(),
        }
    }
}

impl<'c> Statement<'c> {
    /// How many columns the statement's rows have.
    pub fn column_count(&mut self) -> usize {
        match &mut self.inner {
            StatementInner::Sqlite(s) => s.column_count(),
            StatementInner::SqliteCached(s) => s.column_count(),
            StatementInner::Postgres(_, s) => s.columns().len(),
        }
    }

    /// The names of the statement's columns, in order.
    pub fn column_names(&mut self) -> Vec<String> {
        match &mut self.inner {
            StatementInner::Sqlite(s) => s.column_names().map(str::to_string).collect(),
            StatementInner::SqliteCached(s) => s.column_names().map(str::to_string).collect(),
            StatementInner::Postgres(_, s) => {
                s.columns().iter().map(|c| c.name().to_string()).collect()
            }
        }
    }

    fn sqlite(&mut self) -> Option<&mut rusqlite::Statement<'c>> {
        match &mut self.inner {
            StatementInner::Sqlite(s) => Some(s),
            StatementInner::SqliteCached(s) => Some(s),
            StatementInner::Postgres(..) => None,
        }
    }

    /// Runs the statement; the number of rows it changed.
    pub fn execute<P: Params>(&mut self, params: P) -> Result<usize, StoreError> {
        if let Some(s) = self.sqlite() {
            return Ok(s.execute(sqlite_params(params))?);
        }
        let StatementInner::Postgres(c, s) = &self.inner else {
            unreachable!("a statement is of one engine or the other")
        };
        let kept = values(params);
        c.execute(s, &borrowed(&kept)?)
    }

    /// The rows of the query, read one at a time with [`Rows::next`].
    pub fn query<P: Params>(&mut self, params: P) -> Result<Rows<'_>, StoreError> {
        if let StatementInner::Postgres(c, s) = &self.inner {
            let kept = values(params);
            let rows = c.query(s, &borrowed(&kept)?)?;
            return Ok(Rows {
                inner: RowsInner::Postgres(rows, 0),
            });
        }
        let Some(s) = self.sqlite() else {
            unreachable!("a statement is of one engine or the other")
        };
        Ok(Rows {
            inner: RowsInner::Sqlite(s.query(sqlite_params(params))?),
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
        if let StatementInner::Postgres(c, s) = &self.inner {
            let kept = values(params);
            let rows = c.query(s, &borrowed(&kept)?)?;
            return Ok(Either::Right(
                rows.into_iter().map(move |row| f(&Row::Postgres(&row))),
            ));
        }
        let Some(s) = self.sqlite() else {
            unreachable!("a statement is of one engine or the other")
        };
        Ok(Either::Left(
            s.query_and_then(sqlite_params(params), move |row| f(&Row::Sqlite(row)))?,
        ))
    }

    /// The first row through `f`; [`StoreError::NoRow`] when there is none.
    pub fn query_row<T, P, F>(&mut self, params: P, f: F) -> Result<T, StoreError>
    where
        P: Params,
        F: FnOnce(&Row<'_>) -> Result<T, StoreError>,
    {
        let mut rows = self.query(params)?;
        match rows.next()? {
            Some(row) => f(&row),
            None => Err(StoreError::NoRow),
        }
    }

    /// Whether the query finds a row.
    pub fn exists<P: Params>(&mut self, params: P) -> Result<bool, StoreError> {
        Ok(self.query(params)?.next()?.is_some())
    }
}

enum RowsInner<'s> {
    Sqlite(rusqlite::Rows<'s>),
    Postgres(Vec<tokio_postgres::Row>, usize),
}

/// The rows of a query.
pub struct Rows<'s> {
    inner: RowsInner<'s>,
}

impl Rows<'_> {
    /// The next row, `None` after the last.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Result<Option<Row<'_>>, StoreError> {
        match &mut self.inner {
            RowsInner::Sqlite(rows) => Ok(rows.next()?.map(Row::Sqlite)),
            RowsInner::Postgres(rows, at) => {
                let row = rows.get(*at);
                *at += 1;
                Ok(row.map(Row::Postgres))
            }
        }
    }
}

/// One row of a query's answer.
#[derive(Clone, Copy)]
pub enum Row<'r> {
    /// A SQLite row.
    #[doc(hidden)]
    Sqlite(&'r rusqlite::Row<'r>),
    /// A PostgreSQL row.
    #[doc(hidden)]
    Postgres(&'r tokio_postgres::Row),
}

impl<'r> Row<'r> {
    /// Column `idx` (from 0), read as `T`.
    pub fn get<T: Column>(&self, idx: usize) -> Result<T, StoreError> {
        T::from_value(self.value(idx)?)
            .map_err(|e| StoreError::corrupt(format!("column {idx} of a row: {e}")))
    }

    /// Column `idx` (from 0) as it is stored, borrowed.
    pub fn value(&self, idx: usize) -> Result<SqlValue<'r>, StoreError> {
        match *self {
            Row::Sqlite(row) => Ok(match row.get_ref(idx)? {
                ValueRef::Null => SqlValue::Null,
                ValueRef::Integer(n) => SqlValue::Integer(n),
                ValueRef::Real(x) => SqlValue::Real(x),
                ValueRef::Text(t) => SqlValue::Text(std::str::from_utf8(t).map_err(|e| {
                    StoreError::corrupt(format!("column {idx} of a row is not UTF-8: {e}"))
                })?),
                ValueRef::Blob(b) => SqlValue::Blob(b),
            }),
            Row::Postgres(row) => super::postgres::value(row, idx),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use crate::store::ConstraintKind;

    /// A connection of each engine: SQLite in memory, and PostgreSQL when
    /// `TOLLGATE_TEST_POSTGRES_URL` names a server (`scripts/pg-throwaway`), in a schema of its
    /// own. CI sets it; without it, under CI, the test fails rather than pass on SQLite alone.
    fn engines() -> Vec<Connection> {
        static SCHEMAS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let sqlite = Connection::sqlite(rusqlite::Connection::open_in_memory().unwrap());
        sqlite.execute_batch("PRAGMA foreign_keys = ON").unwrap();
        let mut out = vec![sqlite];
        match std::env::var("TOLLGATE_TEST_POSTGRES_URL") {
            Ok(url) if !url.is_empty() => {
                let c = Connection::postgres(&url).unwrap();
                let n = SCHEMAS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let schema = format!("sql_{}_{n}", std::process::id());
                c.execute_batch(&format!(
                    "CREATE SCHEMA {schema}; SET search_path TO {schema}"
                ))
                .unwrap();
                out.push(c);
            }
            _ => assert!(
                std::env::var_os("CI").is_none(),
                "under CI the store's tests run on PostgreSQL too: set TOLLGATE_TEST_POSTGRES_URL (scripts/pg-throwaway start DIR)"
            ),
        }
        out
    }

    /// `sqlite` or `postgres`, as `c` speaks.
    fn either<'a>(c: &Connection, sqlite: &'a str, postgres: &'a str) -> &'a str {
        match c.dialect() {
            Dialect::Sqlite => sqlite,
            Dialect::Postgres => postgres,
        }
    }

    #[test]
    fn values_bind_and_read_back_as_they_were() {
        for c in engines() {
            c.execute_batch(either(
                &c,
                "CREATE TABLE t (i INTEGER, r REAL, s TEXT, b BLOB, n TEXT, small INTEGER)",
                "CREATE TABLE t (i BIGINT, r DOUBLE PRECISION, s TEXT, b BYTEA, n TEXT, small INTEGER)",
            ))
            .unwrap();
            let blob = vec![0u8, 1, 255];
            c.execute(
                "INSERT INTO t VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![-7i64, 2.5, "é", blob, None::<String>, 3u32],
            )
            .unwrap();
            let row = c
                .query_row("SELECT i, r, s, b, n, small FROM t", (), |r| {
                    Ok((
                        r.get::<i64>(0)?,
                        r.get::<f64>(1)?,
                        r.get::<String>(2)?,
                        r.get::<Vec<u8>>(3)?,
                        r.get::<Option<String>>(4)?,
                        r.get::<u32>(5)?,
                    ))
                })
                .unwrap();
            assert_eq!(row, (-7, 2.5, "é".to_string(), blob.clone(), None, 3));
        }
    }

    #[test]
    fn a_query_without_a_row_is_none_when_optional() {
        for c in engines() {
            c.execute_batch("CREATE TABLE t (i BIGINT)").unwrap();
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
    }

    #[test]
    fn a_number_past_i64_is_refused_not_wrapped() {
        for c in engines() {
            c.execute_batch("CREATE TABLE t (i BIGINT)").unwrap();
            let err = c
                .execute("INSERT INTO t VALUES (?1)", [u64::MAX])
                .unwrap_err();
            assert!(err.to_string().contains("too large"), "{err}");
            let n: i64 = c
                .query_row("SELECT count(*) FROM t", (), |r| r.get(0))
                .unwrap();
            assert_eq!(n, 0);
        }
    }

    #[test]
    fn a_column_of_the_wrong_kind_says_what_it_found() {
        for c in engines() {
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
    }

    #[test]
    fn statements_map_rows_and_bind_from_iterators() {
        for c in engines() {
            c.execute_batch("CREATE TABLE t (i BIGINT); INSERT INTO t VALUES (1), (2), (3);")
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

    #[test]
    fn constraint_violations_are_classified_alike_on_both_engines() {
        for c in engines() {
            c.execute_batch(
                "CREATE TABLE p (id TEXT PRIMARY KEY);
                 CREATE TABLE k (id TEXT PRIMARY KEY, p TEXT NOT NULL REFERENCES p (id),
                                 n BIGINT CHECK (n > 0));
                 INSERT INTO p VALUES ('a');",
            )
            .unwrap();
            c.execute("INSERT INTO k VALUES ('x', 'a', 1)", ()).unwrap();
            let kind = |sql: &str| c.execute(sql, ()).unwrap_err().violation().map(|v| v.kind);
            assert_eq!(
                kind("INSERT INTO k VALUES ('x', 'a', 1)"),
                Some(ConstraintKind::Unique)
            );
            assert_eq!(
                kind("INSERT INTO k VALUES ('y', 'missing', 1)"),
                Some(ConstraintKind::ForeignKey)
            );
            assert_eq!(
                kind("INSERT INTO k VALUES ('y', 'a', 0)"),
                Some(ConstraintKind::Check)
            );
            assert_eq!(
                kind("INSERT INTO k VALUES ('y', NULL, 1)"),
                Some(ConstraintKind::NotNull)
            );
            // Portable upserts and RETURNING, as the store writes them.
            let added = c
                .execute("INSERT INTO p VALUES (?1) ON CONFLICT DO NOTHING", ["a"])
                .unwrap();
            assert_eq!(added, 0);
            let id: String = c
                .query_row("INSERT INTO p VALUES (?1) RETURNING id", ["b"], |r| {
                    r.get(0)
                })
                .unwrap();
            assert_eq!(id, "b");
        }
    }
}
