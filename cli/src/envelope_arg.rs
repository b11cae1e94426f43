//! Reading envelope files the way every command does: files, or folders whose `*.yaml`,
//! `*.yml` and `*.json` files are read (not their subfolders), loaded all or nothing.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use tollgate_rules::envelope::{EnvelopeErrors, EnvelopeSet, load_envelopes};

/// Envelope files named by `paths` (folders give their `*.yaml`, `*.yml`, `*.json` files),
/// sorted within each folder.
pub fn envelope_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            let mut entries: Vec<PathBuf> = std::fs::read_dir(p)
                .with_context(|| format!("cannot read `{}`", p.display()))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|e| {
                    e.is_file()
                        && e.extension()
                            .is_some_and(|x| x == "yaml" || x == "yml" || x == "json")
                })
                .collect();
            entries.sort();
            out.extend(entries);
        } else if p.exists() {
            out.push(p.clone());
        } else {
            bail!("`{}` does not exist", p.display());
        }
    }
    Ok(out)
}

pub fn read_sources(files: &[PathBuf]) -> Result<Vec<(String, String)>> {
    files
        .iter()
        .map(|f| {
            let text = std::fs::read_to_string(f)
                .with_context(|| format!("cannot read `{}`", f.display()))?;
            Ok((f.display().to_string(), text))
        })
        .collect()
}

/// Loads envelopes, printing diagnostics on failure; `Err(exit code)` when they do not load.
pub fn load(paths: &[PathBuf]) -> Result<std::result::Result<EnvelopeSet, ExitCode>> {
    let sources = read_sources(&envelope_files(paths)?)?;
    match load_envelopes(&sources) {
        Ok(set) => Ok(Ok(set)),
        Err(errors) => {
            report_errors(&errors);
            Ok(Err(ExitCode::from(2)))
        }
    }
}

pub fn report_errors(errors: &EnvelopeErrors) {
    eprint!("{}", errors.render());
    let n = errors.diagnostics.len();
    eprintln!(
        "error: the envelopes have {n} error{}",
        if n == 1 { "" } else { "s" }
    );
}
