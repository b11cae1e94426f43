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
use super::value::{Column, Param, Params, SqlValue};

/// Which SQL a connection speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// SQLite 3 (the embedded default).
    Sqlite,
    /// PostgreSQL 14 or later.
    Postgres,
}

impl Dialect {
    /// ` INDEXED BY index` on SQLite, where its planner needs telling which index serves an
    /// ORDER BY; nothing on PostgreSQL, whose planner weighs them itself.
    pub fn indexed_by(self, index: &str) -> String {
        match self {
            Dialect::Sqlite => format!(" INDEXED BY {index}"),
            Dialect::Postgres => String::new(),
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
    use crate::store::{ConstraintKind, OptionalExtension, Value, params, params_from_iter};

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

    /// Bug found by Schemathesis on PostgreSQL (issue 37): `GET /v1/approvals?run=…%00`
    /// answered 500 there (PostgreSQL refuses a NUL in text) and an empty list on SQLite. Text
    /// holding a NUL is refused as invalid on both, written or looked up, and nothing stored.
    #[test]
    fn text_holding_a_nul_is_refused_alike_on_both_engines() {
        for c in engines() {
            c.execute_batch("CREATE TABLE t (s TEXT)").unwrap();
            let write = c
                .execute("INSERT INTO t VALUES (?1)", ["run\0../etc"])
                .unwrap_err();
            assert!(
                matches!(&write, StoreError::Invalid(m) if m.contains("NUL")),
                "{write}"
            );
            let read = c
                .query_row(
                    "SELECT s FROM t WHERE s = ?1",
                    [Value::Text("a\0".into())],
                    |r| r.get::<String>(0),
                )
                .unwrap_err();
            assert!(matches!(read, StoreError::Invalid(_)), "{read}");
            let n = c
                .query_row("SELECT COUNT(*) FROM t", (), |r| r.get::<i64>(0))
                .unwrap();
            assert_eq!(n, 0);
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
