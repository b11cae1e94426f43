//! The bearer token never leaves the front door: not recorded in the store, not in an export,
//! not in the gateway's log, whether it was right or a wrong guess (issue 19).

use serde_json::json;

use super::support::{self, Gateway};
use super::{open_run, tool};

#[test]
fn the_token_is_never_recorded_exported_or_logged() {
    let gw = Gateway::with_fixture_envelopes();
    open_run(&gw, "tok-1");
    tool(
        &gw,
        "tok-1",
        json!({"tool": "fs.read_file", "arguments": {"path": "README.md"}}),
    );
    tool(&gw, "tok-1", json!({"tool": "net.upload"}));
    let (status, chat) = gw.call_with(
        "POST",
        "/v1/chat/completions",
        Some(&json!({"model": "gpt-4.1-mini", "messages": [{"role": "user", "content": "hello"}]})),
        &[
            ("Authorization", &format!("Bearer {}", gw.token)),
            ("X-Tollgate-Run", "tok-1"),
        ],
    );
    assert_eq!(status, 200, "{chat}");
    // An unmodified OpenAI client: its implicit run (no envelope of the fixtures governs it,
    // so the model is denied) is recorded too.
    let (status, chat) = gw.call(
        "POST",
        "/v1/chat/completions",
        Some(&json!({"model": "gpt-4.1-mini", "messages": [{"role": "user", "content": "hi"}]})),
    );
    assert_eq!(status, 403, "{chat}");
    let guess = "wrong-guess-9876543210";
    let (status, _) = gw.call_with(
        "POST",
        "/v1/runs/tok-1/tool-calls",
        Some(&json!({"tool": "fs.read_file"})),
        &[("Authorization", &format!("Bearer {guess}"))],
    );
    assert_eq!(status, 401);
    let (status, _) = gw.call(
        "POST",
        "/v1/runs/tok-1/finish",
        Some(&json!({"status": "succeeded"})),
    );
    assert_eq!(status, 200);

    let secrets = [gw.token.as_str(), guess];
    // The store, log included (read as bytes: payloads may be compressed, so the test also
    // reads every run back through an export; on PostgreSQL, which keeps no file here, every
    // stored row is read as text below).
    for file in ["tollgate.db", "tollgate.db-wal"] {
        let path = gw.dir.path().join(".tollgate").join(file);
        let bytes = std::fs::read(&path).unwrap_or_default();
        for secret in secrets {
            assert!(
                !bytes.windows(secret.len()).any(|w| w == secret.as_bytes()),
                "{file} holds `{secret}`"
            );
        }
    }
    // On PostgreSQL, every row of every table of the test's schema, as text (a `bytea` column
    // reads as hex, so the secrets are looked for in hex too).
    if support::on_postgres() {
        let rows: Vec<String> = support::store_in(gw.dir.path())
            .read(|c| {
                let tables: Vec<String> = c
                    .prepare(
                        "SELECT table_name::text FROM information_schema.tables
                         WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'",
                    )?
                    .query_map((), |r| r.get(0))?
                    .collect::<Result<_, _>>()?;
                let mut rows = Vec::new();
                for table in &tables {
                    let mut stmt = c.prepare(&format!("SELECT t::text FROM \"{table}\" t"))?;
                    for row in stmt.query_map((), |r| r.get::<String>(0))? {
                        rows.push(format!("{table}: {}", row?));
                    }
                }
                Ok(rows)
            })
            .unwrap();
        assert!(
            rows.iter().any(|r| r.starts_with("events: ")),
            "the schema's rows were read"
        );
        for secret in secrets {
            let hex: String = secret.bytes().map(|b| format!("{b:02x}")).collect();
            for row in &rows {
                assert!(
                    !row.contains(secret) && !row.contains(&hex),
                    "a stored row holds `{secret}`: {row}"
                );
            }
        }
    }
    let listed = gw.tollgate(&["runs", "list", "--json"]);
    assert!(listed.status.success(), "{}", support::stderr(&listed));
    let runs: serde_json::Value = serde_json::from_slice(&listed.stdout).unwrap();
    let ids: Vec<String> = runs
        .as_array()
        .or_else(|| runs["runs"].as_array())
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect();
    assert!(ids.len() >= 2, "{runs}");
    for id in &ids {
        let export = gw.tollgate(&["runs", "export", id]);
        assert!(export.status.success(), "{}", support::stderr(&export));
        let text = String::from_utf8_lossy(&export.stdout);
        assert!(text.contains(id.as_str()));
        for secret in secrets {
            assert!(
                !text.contains(secret),
                "the export of {id} holds `{secret}`"
            );
        }
    }
    let log = gw.log.lock().unwrap().clone();
    for secret in secrets {
        assert!(!log.contains(secret), "the log holds `{secret}`:\n{log}");
    }
}
