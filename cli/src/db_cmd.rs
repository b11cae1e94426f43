//! `tollgate db check | upgrade | downgrade | recount`: the store's schema version and migrations, and the overview's counters counted again.

use std::process::ExitCode;

use anyhow::{Result, bail};
use clap::{Args, Subcommand};
use tollgate_gateway::store::Store;

use crate::store_arg;

#[derive(Subcommand, Debug)]
pub enum DbCommand {
    /// Show the schema version, pending migrations, the tables, indexes and triggers missing
    /// from what the applied migrations create, and SQLite's integrity check of the file; exit
    /// 1 if the database is behind, incomplete or not sound.
    Check(JsonArg),
    /// Apply every pending migration.
    Upgrade(JsonArg),
    /// Recreate what the applied migrations create and the database lacks (a table dropped by
    /// hand comes back empty: the rows it held are gone).
    Repair(JsonArg),
    /// Revert migrations, newest first.
    Downgrade(DowngradeArgs),
    /// Count every recorded decision again into the counters the dashboard's overview plots
    /// (per five minutes, by agent, task, effect, tool and rule): for decisions recorded
    /// before the counters were kept (schema version 30). One write; safe while a gateway runs.
    Recount(JsonArg),
}

#[derive(Args, Debug)]
pub struct JsonArg {
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
pub struct DowngradeArgs {
    /// Revert every migration above this version (default: only the newest applied one).
    #[arg(long)]
    to: Option<u32>,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

pub fn run(cmd: DbCommand) -> Result<ExitCode> {
    let location = store_arg::location()?;
    // `db` commands look at the database as it is: opening must not migrate it.
    let store = Store::open_unmigrated(&location)?;
    match cmd {
        DbCommand::Check(a) => {
            let status = store.migration_status()?;
            let problems = store.integrity()?;
            let drift = store.schema_drift()?;
            if a.json {
                let mut doc = serde_json::to_value(&status)?;
                doc["database"] = store.location().to_string().into();
                doc["current_schema"] = status.is_current().into();
                doc["missing"] = serde_json::json!(drift.missing);
                doc["changed"] = serde_json::json!(drift.changed);
                if let Some(why) = &drift.unchecked {
                    doc["unchecked"] = why.as_str().into();
                }
                doc["integrity"] = serde_json::json!(problems);
                println!("{}", serde_json::to_string_pretty(&doc)?);
            } else {
                println!("database  {}", store.location());
                println!("version   {} (latest {})", status.current, status.latest);
                if status.pending.is_empty() {
                    println!("pending   none");
                } else {
                    for (v, name) in &status.pending {
                        println!("pending   {v:04} {name}");
                    }
                    println!("help: run `tollgate db upgrade`");
                }
                for v in &status.changed {
                    println!(
                        "warning: migration {v:04} was applied from SQL that differs from this build's"
                    );
                }
                for v in &status.unknown {
                    println!("warning: migration {v} is newer than this build");
                }
                if drift.missing.is_empty() {
                    println!("schema    complete");
                } else {
                    for m in &drift.missing {
                        println!("missing   {m}");
                    }
                    println!(
                        "help: run `tollgate db repair` to recreate them (empty: the rows they held are gone; restore a backup to get them back)"
                    );
                }
                for c in &drift.changed {
                    println!("warning: {c} differs from what the migrations create");
                }
                if let Some(why) = &drift.unchecked {
                    println!("note: {why}");
                }
                if problems.is_empty() {
                    println!("integrity ok");
                } else {
                    for p in &problems {
                        println!("integrity {p}");
                    }
                    println!(
                        "help: the file is damaged: keep a copy, then `sqlite3 FILE .recover` rebuilds what it can"
                    );
                }
            }
            Ok(
                if status.is_current() && drift.is_complete() && problems.is_empty() {
                    ExitCode::SUCCESS
                } else {
                    ExitCode::from(1)
                },
            )
        }
        DbCommand::Recount(a) => {
            let status = store.migration_status()?;
            if !status.is_current() {
                anyhow::bail!(
                    "the database is at version {}, not {}\n  help: run `tollgate db upgrade` first",
                    status.current,
                    status.latest
                );
            }
            let counted = tollgate_gateway::recorder::Recorder::new(store).recount_buckets()?;
            if a.json {
                println!("{}", serde_json::json!({"decisions": counted}));
            } else {
                println!("counted {counted} decisions");
            }
            Ok(ExitCode::SUCCESS)
        }
        DbCommand::Upgrade(a) => {
            let applied = store.upgrade()?;
            let status = store.migration_status()?;
            let drift = store.schema_drift()?;
            if a.json {
                let doc = serde_json::json!({"applied": applied, "version": status.current,
                                             "missing": drift.missing});
                println!("{}", serde_json::to_string_pretty(&doc)?);
            } else {
                if applied.is_empty() {
                    println!("up to date at version {}", status.current);
                } else {
                    for v in &applied {
                        println!("applied {v:04}");
                    }
                    println!("now at version {}", status.current);
                }
                if !drift.missing.is_empty() {
                    println!(
                        "warning: {} missing from what the migrations create ({}): run `tollgate db repair`",
                        plural(drift.missing.len()),
                        drift.missing.join(", ")
                    );
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        DbCommand::Repair(a) => {
            let recreated = store.repair_schema()?;
            if a.json {
                let doc = serde_json::json!({ "recreated": recreated });
                println!("{}", serde_json::to_string_pretty(&doc)?);
            } else if recreated.is_empty() {
                println!("nothing to repair: the schema is complete");
            } else {
                for r in &recreated {
                    println!("recreated {r}");
                }
                println!(
                    "{} recreated, empty; `tollgate db check` checks the rest",
                    plural(recreated.len())
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        DbCommand::Downgrade(a) => {
            let before = store.migration_status()?;
            if let Some(to) = a.to
                && to > before.current
            {
                bail!(
                    "cannot downgrade to {to}: the database is at {}",
                    before.current
                );
            }
            let reverted = store.downgrade(a.to)?;
            let status = store.migration_status()?;
            if a.json {
                let doc = serde_json::json!({"reverted": reverted, "version": status.current});
                println!("{}", serde_json::to_string_pretty(&doc)?);
            } else {
                for v in &reverted {
                    println!("reverted {v:04}");
                }
                println!("now at version {}", status.current);
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// `1 object`, `3 objects`.
fn plural(n: usize) -> String {
    if n == 1 {
        "1 object".to_string()
    } else {
        format!("{n} objects")
    }
}
