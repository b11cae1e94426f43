//! `tollgate db check | upgrade | downgrade`: the store's schema version and migrations.

use std::process::ExitCode;

use anyhow::{Result, bail};
use clap::{Args, Subcommand};
use tollgate_gateway::store::Store;

use crate::store_arg;

#[derive(Subcommand, Debug)]
pub enum DbCommand {
    /// Show the schema version, pending migrations and SQLite's integrity check of the file;
    /// exit 1 if the database is behind or not sound.
    Check(JsonArg),
    /// Apply every pending migration.
    Upgrade(JsonArg),
    /// Revert migrations, newest first.
    Downgrade(DowngradeArgs),
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
            if a.json {
                let mut doc = serde_json::to_value(&status)?;
                doc["database"] = store.path().display().to_string().into();
                doc["current_schema"] = status.is_current().into();
                doc["integrity"] = serde_json::json!(problems);
                println!("{}", serde_json::to_string_pretty(&doc)?);
            } else {
                println!("database  {}", store.path().display());
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
            Ok(if status.is_current() && problems.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
        DbCommand::Upgrade(a) => {
            let applied = store.upgrade()?;
            let status = store.migration_status()?;
            if a.json {
                println!(
                    "{}",
                    serde_json::json!({"applied": applied, "version": status.current})
                );
            } else if applied.is_empty() {
                println!("up to date at version {}", status.current);
            } else {
                for v in &applied {
                    println!("applied {v:04}");
                }
                println!("now at version {}", status.current);
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
                println!(
                    "{}",
                    serde_json::json!({"reverted": reverted, "version": status.current})
                );
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
