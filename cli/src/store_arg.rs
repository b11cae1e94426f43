//! Opening the store the way every command does: `TOLLGATE_DATABASE_URL`, else
//! `.tollgate/tollgate.db` under the working directory; created and migrated on first use.

use anyhow::Context as _;
use tollgate_gateway::store::{Store, StoreLocation};

/// Where the database is, from the environment and the working directory.
pub fn location() -> anyhow::Result<StoreLocation> {
    let cwd = std::env::current_dir().context("cannot read the working directory")?;
    Ok(StoreLocation::from_env(&|k| std::env::var(k).ok(), &cwd)?)
}

/// Opens the store and applies pending migrations.
pub fn open() -> anyhow::Result<Store> {
    let location = location()?;
    Store::open(&location).with_context(|| format!("store `{location}`"))
}
