//! Opening the store the way every command does: `TOLLGATE_DATABASE_URL`, else
//! `.tollgate/tollgate.db` under the working directory; created and migrated on first use.

use anyhow::Context as _;
use tollgate_gateway::store::{Store, StoreError, StoreLocation};

/// Where the database is, from the environment and the working directory.
pub fn location() -> anyhow::Result<StoreLocation> {
    let cwd = std::env::current_dir().context("cannot read the working directory")?;
    Ok(StoreLocation::from_env(&|k| std::env::var(k).ok(), &cwd)?)
}

/// Opens the store and applies pending migrations. An error that names the database already
/// (an unreachable server, a URL it cannot read) is said once, not after the store's name too.
pub fn open() -> anyhow::Result<Store> {
    let location = location()?;
    match Store::open(&location) {
        Ok(store) => Ok(store),
        Err(e @ (StoreError::Unreachable { .. } | StoreError::BadPostgresUrl { .. })) => {
            Err(e.into())
        }
        Err(e) => Err(anyhow::Error::new(e).context(format!("store `{location}`"))),
    }
}
