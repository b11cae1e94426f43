//! The schema a database should have, checked against what it has. What the applied
//! migrations create is known exactly: they are applied, in order, to an empty in-memory
//! database. A table dropped by hand (or lost with a damaged file) is then named by `db check`
//! instead of surfacing later as "no such table", and `db repair` recreates what is missing.

use crate::store::Connection;
use serde::Serialize;

use super::migrate::{self, migrations, migrations_for};
use super::{Dialect, StoreError};

/// One object of a schema (`sqlite_master`): a table, index, trigger or view.
#[derive(Debug, Clone, PartialEq, Eq)]
struct SchemaObject {
    kind: String,
    name: String,
    sql: String,
}

impl SchemaObject {
    fn label(&self) -> String {
        format!("{} `{}`", self.kind, self.name)
    }
}

/// How a database's schema differs from what its applied migrations create.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SchemaDrift {
    /// Objects the migrations create that the database lacks (`table `cases``).
    pub missing: Vec<String>,
    /// Objects whose definition differs from the migrations' (on SQLite compared without
    /// comments, quotes and layout; on PostgreSQL as its catalog prints them).
    pub changed: Vec<String>,
    /// Why definitions were not compared, when they could not be (on PostgreSQL, a user
    /// without the right to create a schema).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unchecked: Option<String>,
}

impl SchemaDrift {
    /// Whether nothing is missing.
    pub fn is_complete(&self) -> bool {
        self.missing.is_empty()
    }
}

/// Every object of the database behind `conn`, in the order it was created, leaving out the
/// migrations' bookkeeping and SQLite's own (`sqlite_*`, and automatic indexes without SQL).
fn objects(conn: &Connection) -> Result<Vec<SchemaObject>, StoreError> {
    if conn.dialect() == Dialect::Postgres {
        return postgres_objects(conn);
    }
    let mut stmt = conn.prepare(
        "SELECT type, name, sql FROM sqlite_master
         WHERE sql IS NOT NULL AND name <> 'tollgate_migrations' AND name NOT LIKE 'sqlite_%'
         ORDER BY rowid",
    )?;
    let rows = stmt.query_map((), |r| {
        Ok(SchemaObject {
            kind: r.get(0)?,
            name: r.get(1)?,
            sql: r.get(2)?,
        })
    })?;
    rows.collect::<Result<_, _>>()
}

/// The tables, indexes, triggers, functions and sequences of the current schema on PostgreSQL,
/// by name (their definitions as the catalog prints them differ from the migrations' text, so
/// what changed is found by [`postgres_changed`], against a schema the migrations make).
fn postgres_objects(conn: &Connection) -> Result<Vec<SchemaObject>, StoreError> {
    let mut stmt = conn.prepare(
        "SELECT CASE c.relkind WHEN 'r' THEN 'table' WHEN 'i' THEN 'index' ELSE 'sequence' END,
                c.relname::text
         FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
         WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'i', 'S')
         UNION ALL
         SELECT 'trigger', t.tgname::text
         FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
              JOIN pg_namespace n ON n.oid = c.relnamespace
         WHERE n.nspname = current_schema() AND NOT t.tgisinternal
         UNION ALL
         SELECT 'function', p.proname::text
         FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
         WHERE n.nspname = current_schema()",
    )?;
    let rows = stmt.query_map((), |r| {
        Ok(SchemaObject {
            kind: r.get(0)?,
            name: r.get(1)?,
            sql: String::new(),
        })
    })?;
    rows.collect::<Result<_, _>>()
}

/// Every object of schema `schema` as PostgreSQL's catalog prints it, by kind and name: a
/// table as its columns (type, collation when not the type's own, `NOT NULL`, default) and
/// constraints; an index, a trigger or a function as `pg_get_*def` prints it; a sequence as
/// its parameters. The schema's name is left out of the text (`@`), so two schemas made by the
/// same statements print alike. Read with `schema` first on the search path (the catalog
/// prints a name unqualified when it is found there).
const POSTGRES_DEFINITIONS: &str = "
    SELECT 'table', c.relname::text,
           (SELECT string_agg(a.attname || ' ' || format_type(a.atttypid, a.atttypmod)
                || CASE WHEN a.attcollation <> 0 AND a.attcollation <> ty.typcollation
                        THEN ' COLLATE ' || (SELECT quote_ident(l.collname) FROM pg_collation l
                                             WHERE l.oid = a.attcollation)
                        ELSE '' END
                || CASE WHEN a.attnotnull THEN ' NOT NULL' ELSE '' END
                || COALESCE(' DEFAULT ' || pg_get_expr(d.adbin, d.adrelid), ''),
                ', ' ORDER BY a.attnum)
            FROM pg_attribute a JOIN pg_type ty ON ty.oid = a.atttypid
                 LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
            WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped)
           || ' | ' || COALESCE((SELECT string_agg(k.conname || ' ' || pg_get_constraintdef(k.oid),
                                                   ', ' ORDER BY k.conname)
                                 FROM pg_constraint k WHERE k.conrelid = c.oid), '')
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = ?1 AND c.relkind = 'r'
    UNION ALL
    SELECT 'index', c.relname::text, pg_get_indexdef(c.oid)
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = ?1 AND c.relkind = 'i'
    UNION ALL
    SELECT 'sequence', c.relname::text,
           format('%s start %s by %s from %s to %s cycle %s', q.seqtypid::regtype, q.seqstart,
                  q.seqincrement, q.seqmin, q.seqmax, q.seqcycle)
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
         JOIN pg_sequence q ON q.seqrelid = c.oid
    WHERE n.nspname = ?1
    UNION ALL
    SELECT 'trigger', t.tgname::text, pg_get_triggerdef(t.oid)
    FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
         JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = ?1 AND NOT t.tgisinternal
    UNION ALL
    SELECT 'function', p.proname::text, pg_get_functiondef(p.oid)
    FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
    WHERE n.nspname = ?1";

/// [`POSTGRES_DEFINITIONS`] of schema `schema`.
fn postgres_definitions(conn: &Connection, schema: &str) -> Result<Vec<SchemaObject>, StoreError> {
    let mut stmt = conn.prepare(POSTGRES_DEFINITIONS)?;
    let rows = stmt.query_map([schema], |r| {
        let sql: Option<String> = r.get(2)?;
        Ok(SchemaObject {
            kind: r.get(0)?,
            name: r.get(1)?,
            sql: sql
                .unwrap_or_default()
                .replace(&format!("\"{schema}\"."), "@.")
                .replace(&format!("{schema}."), "@."),
        })
    })?;
    rows.collect::<Result<_, _>>()
}

/// The objects of the current schema whose definition differs from what the migrations up to
/// `version` make, as PostgreSQL's catalog prints both: the migrations are applied to a fresh
/// schema inside a savepoint that is then rolled back, the way SQLite's are applied to an
/// empty in-memory database (`expected`). Needs a transaction that may write (the writer's)
/// and the right to create a schema; without that right, `Err` says so and nothing is left.
fn postgres_changed(conn: &Connection, version: u32) -> Result<Vec<String>, StoreError> {
    let current: String = conn.query_row("SELECT current_schema()::text", (), |r| r.get(0))?;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let scratch = format!("tollgate_expected_{}_{nanos}", std::process::id());
    conn.execute_batch("SAVEPOINT tollgate_expected")?;
    let made = (|| {
        conn.execute_batch(&format!(
            "CREATE SCHEMA {scratch}; SET LOCAL search_path TO {scratch}"
        ))?;
        for m in migrations_for(Dialect::Postgres)
            .iter()
            .filter(|m| m.version <= version)
        {
            conn.execute_batch(m.up).map_err(|e| {
                StoreError::Migration(format!("migration {} `{}` failed: {e}", m.version, m.name))
            })?;
        }
        postgres_definitions(conn, &scratch)
    })();
    // Undoes the schema and the search path alike.
    conn.execute_batch(
        "ROLLBACK TO SAVEPOINT tollgate_expected; RELEASE SAVEPOINT tollgate_expected",
    )?;
    let want = made?;
    let has = postgres_definitions(conn, &current)?;
    Ok(want
        .iter()
        .filter(|w| {
            has.iter()
                .any(|h| h.kind == w.kind && h.name == w.name && h.sql != w.sql)
        })
        .map(SchemaObject::label)
        .collect())
}

/// What PostgreSQL's migrations up to `version` create, read from their SQL: each `CREATE`
/// statement, by kind and name, in order.
fn postgres_expected(version: u32) -> Vec<SchemaObject> {
    let mut out = Vec::new();
    for m in migrations_for(Dialect::Postgres)
        .iter()
        .filter(|m| m.version <= version)
    {
        for statement in statements(m.up) {
            let words: Vec<&str> = statement.split_whitespace().take(5).collect();
            let (kind, name, dropped) = match words.as_slice() {
                ["CREATE", "UNIQUE", "INDEX", name, ..] | ["CREATE", "INDEX", name, ..] => {
                    ("index", *name, false)
                }
                [
                    "CREATE",
                    kind @ ("TABLE" | "TRIGGER" | "FUNCTION" | "SEQUENCE"),
                    name,
                    ..,
                ]
                | ["CREATE", "OR", "REPLACE", kind @ "FUNCTION", name, ..] => (*kind, *name, false),
                [
                    "DROP",
                    kind @ ("TABLE" | "INDEX" | "TRIGGER" | "FUNCTION" | "SEQUENCE"),
                    name,
                    ..,
                ] => (*kind, *name, true),
                _ => continue,
            };
            let kind = kind.to_ascii_lowercase();
            let name = name.split('(').next().unwrap_or(name).trim_end_matches(';');
            // A later migration's definition replaces the earlier one; a dropped object is no
            // longer expected.
            out.retain(|o: &SchemaObject| !(o.kind == kind && o.name == name));
            if !dropped {
                out.push(SchemaObject {
                    kind,
                    name: name.to_string(),
                    sql: statement,
                });
            }
        }
    }
    out
}

/// The statements of a migration, without comments: split at each `;` outside quotes and
/// `$$` bodies.
fn statements(sql: &str) -> Vec<String> {
    let code: String = sql
        .lines()
        .map(|l| l.split_once("--").map_or(l, |(code, _)| code))
        .collect::<Vec<_>>()
        .join("\n");
    let mut out = Vec::new();
    let mut current = String::new();
    let (mut quoted, mut body) = (false, false);
    let mut chars = code.chars().peekable();
    while let Some(ch) = chars.next() {
        current.push(ch);
        match ch {
            '\'' if !body => quoted = !quoted,
            '$' if !quoted && chars.peek() == Some(&'$') => {
                current.push('$');
                chars.next();
                body = !body;
            }
            ';' if !quoted && !body => {
                let done = current.trim().trim_end_matches(';').trim().to_string();
                if !done.is_empty() {
                    out.push(done);
                }
                current.clear();
            }
            _ => {}
        }
    }
    if !current.trim().is_empty() {
        out.push(current.trim().to_string());
    }
    out
}

/// What migrations `1..=version` create, applied to an empty in-memory database.
fn expected(version: u32) -> Result<Vec<SchemaObject>, StoreError> {
    let conn = Connection::sqlite(rusqlite::Connection::open_in_memory()?);
    for m in migrations().iter().filter(|m| m.version <= version) {
        conn.execute_batch(m.up).map_err(|e| {
            StoreError::Migration(format!("migration {} `{}` failed: {e}", m.version, m.name))
        })?;
    }
    objects(&conn)
}

/// What the migrations up to `version` create, for the engine behind `conn`.
fn expected_on(conn: &Connection, version: u32) -> Result<Vec<SchemaObject>, StoreError> {
    match conn.dialect() {
        Dialect::Sqlite => expected(version),
        Dialect::Postgres => Ok(postgres_expected(version)),
    }
}

/// A definition as compared: without comments, identifier quotes and layout (SQLite keeps a
/// table's SQL as written, and quotes its name when `ALTER TABLE … RENAME` rewrites it, so a
/// table a down migration rebuilds reads differently from the one the up created).
fn squeezed(sql: &str) -> String {
    let code: String = sql
        .lines()
        .map(|l| l.split_once("--").map_or(l, |(code, _)| code))
        .collect::<Vec<_>>()
        .join(" ")
        .replace(['"', '`'], "");
    let mut out = String::new();
    for token in code.split_whitespace() {
        let glued = out.ends_with(['(', ',']) || token.starts_with([')', ',', '(']);
        if !out.is_empty() && !glued {
            out.push(' ');
        }
        out.push_str(token);
    }
    out
}

/// How the database behind `conn` differs from what its applied migrations create (nothing,
/// for a database with migrations this build does not know: it cannot say what they made).
/// On PostgreSQL, run in a transaction that may write ([`postgres_changed`]).
pub(super) fn drift(conn: &Connection) -> Result<SchemaDrift, StoreError> {
    let status = migrate::status(conn)?;
    if !status.unknown.is_empty() {
        return Ok(SchemaDrift::default());
    }
    let has = objects(conn)?;
    let postgres = conn.dialect() == Dialect::Postgres;
    let mut drift = SchemaDrift::default();
    for want in expected_on(conn, status.current)? {
        match has
            .iter()
            .find(|o| o.kind == want.kind && o.name == want.name)
        {
            None => drift.missing.push(want.label()),
            Some(o) if !postgres && squeezed(&o.sql) != squeezed(&want.sql) => {
                drift.changed.push(want.label());
            }
            Some(_) => {}
        }
    }
    if postgres {
        match postgres_changed(conn, status.current) {
            Ok(changed) => drift.changed = changed,
            Err(e) => {
                let e = e.to_string();
                let cause = e.lines().next().unwrap_or_default();
                drift.unchecked = Some(format!(
                    "definitions not compared: that applies the migrations to a scratch schema \
                     (rolled back), and creating it failed: {cause}\n  help: grant the user the \
                     right to create schemas (`GRANT CREATE ON DATABASE db TO user`) to compare \
                     them; what is missing is checked without it"
                ));
            }
        }
    }
    Ok(drift)
}

/// Recreates, in the order the migrations created them, the objects the database lacks; the
/// labels of those recreated. A recreated table is empty: the rows it held are gone. Runs
/// inside the writer's transaction: all or nothing.
pub(super) fn repair(conn: &Connection) -> Result<Vec<String>, StoreError> {
    let status = migrate::status(conn)?;
    if let Some(v) = status.unknown.first() {
        return Err(StoreError::Migration(format!(
            "the database has migration {v}, which this build does not know\n  help: repair it with the build that applied it"
        )));
    }
    let mut done = Vec::new();
    for want in expected_on(conn, status.current)? {
        // Looked up again each time: creating a full-text table creates its shadow tables.
        let present = objects(conn)?
            .iter()
            .any(|o| o.kind == want.kind && o.name == want.name);
        if present {
            continue;
        }
        conn.execute_batch(&want.sql).map_err(|e| {
            StoreError::Migration(format!("could not recreate {}: {e}", want.label()))
        })?;
        done.push(want.label());
    }
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::{SchemaObject, postgres_expected, squeezed, statements};

    #[test]
    fn postgres_migrations_split_into_statements_with_function_bodies_whole() {
        let split = statements(
            "CREATE TABLE a (x TEXT); -- a; comment\nCREATE FUNCTION f() RETURNS TRIGGER LANGUAGE plpgsql AS $$\nBEGIN\n  INSERT INTO a VALUES (';');\n  RETURN NULL;\nEND\n$$;\nCREATE INDEX a_x ON a (x);",
        );
        assert_eq!(split.len(), 3, "{split:#?}");
        assert!(split[1].contains("RETURN NULL;") && split[1].ends_with("$$"));
        let names: Vec<(String, String)> = postgres_expected(u32::MAX)
            .into_iter()
            .map(|o| (o.kind, o.name))
            .collect();
        for gone in [
            ("index", "memories_fts_terms"),
            ("table", "memories_fts"),
            ("function", "tollgate_memory_terms"),
        ] {
            assert!(
                !names.iter().any(|(k, n)| k == gone.0 && n == gone.1),
                "{gone:?}, dropped by 0025, still expected"
            );
        }
        // Replaced by 0025 (`CREATE OR REPLACE`): its definition there, once.
        let reworded: Vec<SchemaObject> = postgres_expected(u32::MAX)
            .into_iter()
            .filter(|o| o.name == "tollgate_memories_reworded")
            .collect();
        assert_eq!(reworded.len(), 1);
        assert!(reworded[0].sql.contains("memory_postings"));
        for want in [
            ("table", "runs"),
            ("table", "memory_postings"),
            ("function", "tollgate_memories_reworded"),
            ("trigger", "memories_indexed"),
            ("sequence", "memories_fts_rowid"),
        ] {
            assert!(
                names.iter().any(|(k, n)| k == want.0 && n == want.1),
                "{want:?} not in {names:?}"
            );
        }
    }

    #[test]
    fn definitions_compare_without_comments_quotes_or_layout() {
        let written = "CREATE TABLE tool_usage (\n    rule_id TEXT NOT NULL,\n    -- run | agent\n    at BIGINT NOT NULL,\n    PRIMARY KEY (rule_id, at)\n)";
        let renamed = "CREATE TABLE \"tool_usage\" (rule_id TEXT NOT NULL, at BIGINT NOT NULL, PRIMARY KEY (rule_id, at))";
        assert_eq!(squeezed(written), squeezed(renamed));
        assert_ne!(
            squeezed(written),
            squeezed(&renamed.replace("BIGINT", "TEXT"))
        );
    }
}
