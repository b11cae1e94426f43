//! `tollgate policy store | versions | show`: envelope versions kept in the store, and the
//! stored side of `policy diff` (`ID@VERSION` instead of a file).

use std::path::Path;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use tollgate_gateway::policy::{
    PolicyStoreError, current_set, list_versions, store_envelopes, version_source,
};
use tollgate_rules::envelope::{EnvelopeSet, load_envelopes};

use crate::envelope_arg::{envelope_files, read_sources, report_errors};
use crate::store_arg;

#[derive(Args, Debug)]
pub struct StoreArgs {
    /// Envelope files or folders, validated together and stored as versions.
    #[arg(required = true)]
    paths: Vec<std::path::PathBuf>,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
pub struct VersionsArgs {
    /// Only this envelope.
    id: Option<String>,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
pub struct ShowArgs {
    /// `ID@VERSION`, or `ID` for its latest version.
    reference: String,
}

pub fn store(args: StoreArgs) -> Result<ExitCode> {
    let sources = read_sources(&envelope_files(&args.paths)?)?;
    let store = store_arg::open()?;
    let stored = match store_envelopes(&store, &sources) {
        Ok(s) => s,
        Err(PolicyStoreError::Envelopes(errors)) => {
            report_errors(&errors);
            return Ok(ExitCode::from(2));
        }
        Err(e) => return Err(e.into()),
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&stored)?);
    } else {
        for s in &stored {
            let what = if s.new { "stored" } else { "unchanged" };
            println!(
                "{:<10} {} ({})",
                what,
                s.version.label(),
                &s.version.content_hash[..12]
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub fn versions(args: VersionsArgs) -> Result<ExitCode> {
    let store = store_arg::open()?;
    let versions = list_versions(&store, args.id.as_deref())?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&versions)?);
    } else if versions.is_empty() {
        println!("no envelope versions stored\nhelp: `tollgate policy store fixtures/envelopes`");
    } else {
        for v in &versions {
            println!(
                "{:<28} {}  {}",
                v.label(),
                &v.content_hash[..12],
                v.created_at
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub fn show(args: ShowArgs) -> Result<ExitCode> {
    let store = store_arg::open()?;
    let (_, text) = version_source(&store, &args.reference)?;
    print!("{text}");
    Ok(ExitCode::SUCCESS)
}

/// Whether a `policy diff` side names a stored version rather than a file.
pub fn is_stored_reference(side: &Path) -> bool {
    !side.exists()
        && side
            .to_str()
            .and_then(|s| s.split_once('@'))
            .is_some_and(|(id, v)| !id.is_empty() && v.parse::<u32>().is_ok())
}

/// One side of a diff from the store: the named version, with the latest stored version of
/// every other envelope (or the `--with` files instead of those).
pub fn stored_side(
    reference: &str,
    with: &[(String, String)],
) -> Result<std::result::Result<EnvelopeSet, ExitCode>> {
    let store = store_arg::open()?;
    let named = version_source(&store, reference)?;
    let id = reference.split('@').next().unwrap_or(reference);
    let mut sources = vec![named];
    if with.is_empty() {
        for e in current_set(&store)?.envelopes() {
            if e.id != id {
                sources.push(version_source(&store, &e.id)?);
            }
        }
    } else {
        sources.extend(with.iter().cloned());
    }
    match load_envelopes(&sources) {
        Ok(set) => Ok(Ok(set)),
        Err(errors) => {
            report_errors(&errors);
            Ok(Err(ExitCode::from(2)))
        }
    }
}
