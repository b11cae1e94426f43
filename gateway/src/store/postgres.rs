//! The PostgreSQL arm of the store's interface (issue 37): connecting, the store's `?N`
//! placeholders written as PostgreSQL's `$N`, values bound to whatever type the server gave a
//! parameter, and columns read back as [`SqlValue`]s.
//!
//! `tokio-postgres` does the protocol. Its connections run on one runtime thread of the
//! store's own; a statement is a request sent to that thread and awaited with
//! `futures-executor`, which needs no runtime of its own: the store's synchronous interface
//! then works from any thread, a tokio worker included, as SQLite's does.

use std::cell::RefCell;
use std::collections::HashMap;
use std::error::Error;
use std::sync::OnceLock;

use bytes::BytesMut;
use tokio_postgres::types::{IsNull, ToSql, Type, to_sql_checked};

use super::value::SqlValue;
use super::{ConstraintKind, StoreError, Violation};

/// The runtime the store's PostgreSQL connections run on: one thread, started on first use.
fn runtime() -> Result<&'static tokio::runtime::Runtime, StoreError> {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    if let Some(rt) = RUNTIME.get() {
        return Ok(rt);
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("tollgate-store-pg")
        .enable_all()
        .build()
        .map_err(|e| StoreError::Open {
            path: "postgres".into(),
            source: Box::new(e),
        })?;
    Ok(RUNTIME.get_or_init(|| rt))
}

/// Waits for `future` on the calling thread. The futures of a `tokio_postgres::Client` only
/// exchange messages with its connection, which runs on [`runtime`].
fn wait<F: std::future::Future>(future: F) -> F::Output {
    futures_executor::block_on(future)
}

/// One connection to a PostgreSQL database, with its prepared statements.
pub(super) struct PgConnection {
    client: tokio_postgres::Client,
    prepared: RefCell<HashMap<String, tokio_postgres::Statement>>,
}

impl PgConnection {
    /// Connects to `url` (`postgres://USER@HOST:PORT/DB`).
    pub(super) fn connect(url: &str) -> Result<PgConnection, StoreError> {
        let config = parse_url(url)?;
        let rt = runtime()?;
        let (sent, answer) = tokio::sync::oneshot::channel();
        rt.spawn(async move {
            match config.connect(tokio_postgres::NoTls).await {
                Ok((client, connection)) => {
                    let _ = sent.send(Ok(client));
                    // Ends when the client is dropped or the server goes away; a statement
                    // sent then fails with the connection's error.
                    let _ = connection.await;
                }
                Err(e) => {
                    let _ = sent.send(Err(e));
                }
            }
        });
        let client = wait(answer)
            .map_err(|_| StoreError::WriterGone)?
            .map_err(|e| unreachable_server(url, e))?;
        Ok(PgConnection {
            client,
            prepared: RefCell::new(HashMap::new()),
        })
    }

    /// The statement for `sql` (written with `?N`), prepared once per connection.
    pub(super) fn prepare(&self, sql: &str) -> Result<tokio_postgres::Statement, StoreError> {
        if let Some(found) = self.prepared.borrow().get(sql) {
            return Ok(found.clone());
        }
        let statement = wait(self.client.prepare(&placeholders(sql)))?;
        self.prepared
            .borrow_mut()
            .insert(sql.to_string(), statement.clone());
        Ok(statement)
    }

    /// Runs a prepared statement; the rows it changed.
    pub(super) fn execute(
        &self,
        statement: &tokio_postgres::Statement,
        params: &[SqlValue<'_>],
    ) -> Result<usize, StoreError> {
        let bound: Vec<&(dyn ToSql + Sync)> =
            params.iter().map(|p| p as &(dyn ToSql + Sync)).collect();
        let n = wait(self.client.execute(statement, &bound))?;
        Ok(usize::try_from(n).unwrap_or(usize::MAX))
    }

    /// Runs a prepared query; all its rows.
    pub(super) fn query(
        &self,
        statement: &tokio_postgres::Statement,
        params: &[SqlValue<'_>],
    ) -> Result<Vec<tokio_postgres::Row>, StoreError> {
        let bound: Vec<&(dyn ToSql + Sync)> =
            params.iter().map(|p| p as &(dyn ToSql + Sync)).collect();
        Ok(wait(self.client.query(statement, &bound))?)
    }

    /// Runs statements separated by `;` without parameters (the simple query protocol).
    pub(super) fn batch(&self, sql: &str) -> Result<(), StoreError> {
        Ok(wait(self.client.batch_execute(sql))?)
    }
}

/// `url` as tokio-postgres reads it.
pub(super) fn parse_url(url: &str) -> Result<tokio_postgres::Config, StoreError> {
    url.parse()
        .map_err(|e: tokio_postgres::Error| StoreError::BadPostgresUrl {
            url: redact_password(url),
            reason: e.to_string(),
        })
}

/// What a failed connection says, with the seed's remedy.
fn unreachable_server(url: &str, e: tokio_postgres::Error) -> StoreError {
    let shown = redact_password(url);
    let help = match e.as_db_error().map(|d| d.code().clone()) {
        Some(code)
            if code == tokio_postgres::error::SqlState::INVALID_PASSWORD
                || code == tokio_postgres::error::SqlState::INVALID_AUTHORIZATION_SPECIFICATION =>
        {
            "the server refused the user or password in TOLLGATE_DATABASE_URL: check them, or grant the user access (`CREATE ROLE … LOGIN`)"
        }
        Some(code) if code == tokio_postgres::error::SqlState::INVALID_CATALOG_NAME => {
            "the database named in TOLLGATE_DATABASE_URL does not exist: create it (`createdb NAME`) or name another"
        }
        Some(_) => "the server refused the connection: see its message above",
        None => {
            "Database unreachable: start the development database or set TOLLGATE_DATABASE_URL (`postgres://USER@HOST:PORT/DB`)"
        }
    };
    StoreError::Unreachable {
        url: shown,
        detail: format!("{}\n  help: {help}", cause(&e)),
    }
}

/// What went wrong, in the server's words when it answered, else the client's and its cause
/// (`tokio_postgres::Error` shows neither by itself).
fn cause(e: &tokio_postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        return db.message().to_string();
    }
    match e.source() {
        Some(source) => format!("{e}: {source}"),
        None => e.to_string(),
    }
}

/// `url` with its password, if any, replaced by `***`: a URL is shown in errors.
pub(super) fn redact_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let Some((user_info, host)) = rest.split_once('@') else {
        return url.to_string();
    };
    match user_info.split_once(':') {
        Some((user, _)) => format!("{scheme}://{user}:***@{host}"),
        None => url.to_string(),
    }
}

/// The store's SQL with its placeholders as PostgreSQL writes them: `?N` becomes `$N` and a
/// bare `?` the next number; string literals, quoted names and comments are left as they are.
pub(super) fn placeholders(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len() + 8);
    let mut next = 0u32;
    let mut chars = sql.chars().peekable();
    while let Some(ch) = chars.next() {
        match ch {
            '\'' | '"' => {
                out.push(ch);
                for inner in chars.by_ref() {
                    out.push(inner);
                    // A doubled quote closes and reopens: the same as going on.
                    if inner == ch {
                        break;
                    }
                }
            }
            '-' if chars.peek() == Some(&'-') => {
                out.push(ch);
                for inner in chars.by_ref() {
                    out.push(inner);
                    if inner == '\n' {
                        break;
                    }
                }
            }
            '?' => {
                let mut digits = String::new();
                while let Some(d) = chars.peek().filter(|d| d.is_ascii_digit()) {
                    digits.push(*d);
                    chars.next();
                }
                if digits.is_empty() {
                    next += 1;
                    out.push_str(&format!("${next}"));
                } else {
                    next = next.max(digits.parse().unwrap_or(0));
                    out.push('$');
                    out.push_str(&digits);
                }
            }
            other => out.push(other),
        }
    }
    out
}

/// A value bound to a parameter of whatever type the server inferred for it: an integer to any
/// integer type (checked), a boolean or a float; text to text types; bytes to `bytea`.
impl ToSql for SqlValue<'_> {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut BytesMut,
    ) -> Result<IsNull, Box<dyn Error + Sync + Send>> {
        match *self {
            SqlValue::Null => Ok(IsNull::Yes),
            SqlValue::Integer(n) => match *ty {
                Type::INT8 => n.to_sql(ty, out),
                Type::INT4 => i32::try_from(n)?.to_sql(ty, out),
                Type::INT2 => i16::try_from(n)?.to_sql(ty, out),
                Type::BOOL => (n != 0).to_sql(ty, out),
                #[allow(clippy::cast_precision_loss)]
                Type::FLOAT8 => (n as f64).to_sql(ty, out),
                Type::TEXT | Type::VARCHAR => n.to_string().to_sql(ty, out),
                _ => Err(format!("an integer cannot be stored as `{ty}`").into()),
            },
            SqlValue::Real(x) => match *ty {
                Type::FLOAT8 => x.to_sql(ty, out),
                #[allow(clippy::cast_possible_truncation)]
                Type::FLOAT4 => (x as f32).to_sql(ty, out),
                _ => Err(format!("a real cannot be stored as `{ty}`").into()),
            },
            SqlValue::Text(s) => match *ty {
                Type::BYTEA => s.as_bytes().to_sql(ty, out),
                _ => s.to_sql(ty, out),
            },
            SqlValue::Blob(b) => b.to_sql(ty, out),
        }
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    to_sql_checked!();
}

/// Column `idx` of `row` as the store reads it.
pub(super) fn value(row: &tokio_postgres::Row, idx: usize) -> Result<SqlValue<'_>, StoreError> {
    let column = row
        .columns()
        .get(idx)
        .ok_or_else(|| StoreError::corrupt(format!("a row has no column {idx}")))?;
    let ty = column.type_().clone();
    let read = |e: tokio_postgres::Error| StoreError::corrupt(format!("column {idx}: {e}"));
    Ok(match ty {
        Type::INT8 => row
            .try_get::<_, Option<i64>>(idx)
            .map_err(read)?
            .map_or(SqlValue::Null, SqlValue::Integer),
        Type::INT4 => row
            .try_get::<_, Option<i32>>(idx)
            .map_err(read)?
            .map_or(SqlValue::Null, |n| SqlValue::Integer(n.into())),
        Type::INT2 => row
            .try_get::<_, Option<i16>>(idx)
            .map_err(read)?
            .map_or(SqlValue::Null, |n| SqlValue::Integer(n.into())),
        Type::BOOL => row
            .try_get::<_, Option<bool>>(idx)
            .map_err(read)?
            .map_or(SqlValue::Null, |b| SqlValue::Integer(b.into())),
        Type::FLOAT8 => row
            .try_get::<_, Option<f64>>(idx)
            .map_err(read)?
            .map_or(SqlValue::Null, SqlValue::Real),
        Type::FLOAT4 => row
            .try_get::<_, Option<f32>>(idx)
            .map_err(read)?
            .map_or(SqlValue::Null, |x| SqlValue::Real(x.into())),
        Type::BYTEA => row
            .try_get::<_, Option<&[u8]>>(idx)
            .map_err(read)?
            .map_or(SqlValue::Null, SqlValue::Blob),
        Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME | Type::UNKNOWN => row
            .try_get::<_, Option<&str>>(idx)
            .map_err(read)?
            .map_or(SqlValue::Null, SqlValue::Text),
        other => {
            return Err(StoreError::corrupt(format!(
                "column {idx} (`{}`) is of type `{other}`, which the store does not read; cast it in the query",
                column.name()
            )));
        }
    })
}

/// A PostgreSQL error as the store reports it: the server's message, its detail and hint, and
/// how to fix what there is something to say about.
pub(super) fn describe(e: &tokio_postgres::Error) -> String {
    use tokio_postgres::error::SqlState;
    let Some(db) = e.as_db_error() else {
        return format!(
            "{}\n  help: Database unreachable: start the development database or set TOLLGATE_DATABASE_URL (`postgres://USER@HOST:PORT/DB`)",
            cause(e)
        );
    };
    let mut text = db.message().to_string();
    if let Some(detail) = db.detail() {
        text.push_str(&format!(" ({detail})"));
    }
    if let Some(hint) = db.hint() {
        text.push_str(&format!("\n  hint: {hint}"));
    }
    let help = match db.code() {
        c if *c == SqlState::UNDEFINED_TABLE || *c == SqlState::UNDEFINED_COLUMN => {
            "the database lacks a table or column this build needs: `tollgate db check` says whether migrations are pending (`tollgate db upgrade` applies them) or tables are missing (`tollgate db repair` recreates them)"
        }
        c if *c == SqlState::INSUFFICIENT_PRIVILEGE => {
            "the user in TOLLGATE_DATABASE_URL lacks a right it needs: grant it the database's tables (`GRANT ALL ON ALL TABLES IN SCHEMA public TO USER`) or connect as their owner"
        }
        c if *c == SqlState::READ_ONLY_SQL_TRANSACTION => {
            "the server is read-only (a standby?): nothing was written; point TOLLGATE_DATABASE_URL at the primary"
        }
        c if *c == SqlState::DISK_FULL => {
            "the server's disk is full: nothing of this write was stored; free some space and try again"
        }
        _ => "",
    };
    if !help.is_empty() {
        text.push_str("\n  help: ");
        text.push_str(help);
    }
    text
}

/// The constraint a PostgreSQL error reports broken, by its SQLSTATE.
pub(super) fn violation(e: &tokio_postgres::Error) -> Option<Violation> {
    use tokio_postgres::error::SqlState;
    let db = e.as_db_error()?;
    let kind = match db.code() {
        c if *c == SqlState::UNIQUE_VIOLATION => ConstraintKind::Unique,
        c if *c == SqlState::FOREIGN_KEY_VIOLATION => ConstraintKind::ForeignKey,
        c if *c == SqlState::CHECK_VIOLATION => ConstraintKind::Check,
        c if *c == SqlState::NOT_NULL_VIOLATION => ConstraintKind::NotNull,
        c if c.code().starts_with("23") => ConstraintKind::Other,
        _ => return None,
    };
    let detail = match (db.constraint(), db.detail()) {
        (Some(name), Some(detail)) => format!("{} ({name}): {detail}", db.message()),
        (Some(name), None) => format!("{} ({name})", db.message()),
        (None, _) => db.message().to_string(),
    };
    Some(Violation { kind, detail })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_numbered_as_postgres_writes_them_outside_literals() {
        assert_eq!(
            placeholders("SELECT a FROM t WHERE a = ?1 AND b IN (?2, ?10)"),
            "SELECT a FROM t WHERE a = $1 AND b IN ($2, $10)"
        );
        assert_eq!(placeholders("VALUES (?, ?, ?)"), "VALUES ($1, $2, $3)");
        assert_eq!(
            placeholders("SELECT '?1', \"a?\" -- ?2\n FROM t WHERE x = ?1"),
            "SELECT '?1', \"a?\" -- ?2\n FROM t WHERE x = $1"
        );
        assert_eq!(placeholders("SELECT 'it''s ?'"), "SELECT 'it''s ?'");
    }

    #[test]
    fn a_password_is_not_shown() {
        assert_eq!(
            redact_password("postgres://tg:secret@db:5432/tollgate"),
            "postgres://tg:***@db:5432/tollgate"
        );
        assert_eq!(
            redact_password("postgres://tg@db/tollgate"),
            "postgres://tg@db/tollgate"
        );
    }
}
