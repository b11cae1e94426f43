//! Envelope versions kept in the store. Storing a set of envelope files validates them all
//! (all or nothing, the same checks as `policy check`) and records each envelope as a version:
//! its identity is the hash of its canonical JSON, so reformatting or re-ordering keys is not a
//! new version, while any change of meaning must come with a higher `version`. Stored versions
//! can be listed, read back as source, and assembled into the set in force (the latest version
//! of every envelope), which `policy diff` and the gateway decide against.

use crate::store::{Connection, OptionalExtension, params};
use serde::Serialize;
use tollgate_rules::canonical::canonical_json;
use tollgate_rules::envelope::{EnvelopeErrors, EnvelopeSet, PolicyEnvelope, load_envelopes};

use crate::clock::now_rfc3339;
use crate::store::artifacts;
use crate::store::{Store, StoreError};

/// What can go wrong keeping envelope versions.
#[derive(Debug, thiserror::Error)]
pub enum PolicyStoreError {
    /// The envelopes do not load; nothing was stored.
    #[error("{0}")]
    Envelopes(#[from] EnvelopeErrors),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A changed envelope reuses a stored version number, or goes backwards.
    #[error("{0}")]
    Version(String),
    /// No such version.
    #[error("{0}")]
    NotFound(String),
}

/// One stored version of an envelope.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EnvelopeVersion {
    /// Envelope id.
    pub id: String,
    /// Its declared version.
    pub version: u32,
    /// blake3 of its canonical JSON.
    pub content_hash: String,
    /// When it was first stored.
    pub created_at: String,
}

impl EnvelopeVersion {
    /// `ID@VERSION`.
    pub fn label(&self) -> String {
        format!("{}@{}", self.id, self.version)
    }
}

/// The result of storing one envelope.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Stored {
    /// The version.
    pub version: EnvelopeVersion,
    /// False when the same content was already stored.
    pub new: bool,
}

/// The identity of an envelope's content: blake3 of its canonical JSON.
pub fn content_hash(envelope: &PolicyEnvelope) -> String {
    let value = serde_json::to_value(envelope).unwrap_or(serde_json::Value::Null);
    blake3::hash(canonical_json(&value).as_bytes())
        .to_hex()
        .to_string()
}

/// Validates `sources` (`(file name, text)`) as one set with the stored envelopes they do not
/// redefine (so an envelope can extend one already stored), and stores every envelope the
/// sources define. All or nothing.
pub fn store_envelopes(
    store: &Store,
    sources: &[(String, String)],
) -> Result<Vec<Stored>, PolicyStoreError> {
    let given: Vec<String> = sources.iter().flat_map(|(_, t)| document_ids(t)).collect();
    let mut all: Vec<(String, String)> = sources.to_vec();
    let mut stored_ids: Vec<String> = list_versions(store, None)?
        .into_iter()
        .map(|v| v.id)
        .filter(|id| !given.contains(id))
        .collect();
    stored_ids.dedup();
    for id in &stored_ids {
        all.push(version_source(store, id)?);
    }
    let set = load_envelopes(&all)?;
    // An envelope alone in its file keeps its text (comments and all); otherwise its
    // canonical JSON is what is kept.
    let single_file_text = |id: &str| {
        sources.iter().find_map(|(_, text)| {
            let ids = document_ids(text);
            (ids.len() == 1 && ids[0] == id).then(|| text.clone())
        })
    };
    let entries: Vec<(PolicyEnvelope, String)> = set
        .envelopes()
        .iter()
        .filter(|e| !stored_ids.contains(&e.id))
        .map(|e| {
            let text = single_file_text(&e.id)
                .unwrap_or_else(|| serde_json::to_string_pretty(e).unwrap_or_default() + "\n");
            (e.clone(), text)
        })
        .collect();
    store
        .write(move |c| {
            entries
                .iter()
                .map(|(e, text)| store_version(c, e, text, true))
                .collect::<Result<Vec<_>, _>>()
        })
        .map_err(|e| match e {
            StoreError::Invalid(m) => PolicyStoreError::Version(m),
            other => other.into(),
        })
}

/// The ids of the YAML documents in a text, one per document read (empty for a document
/// without one), up to the first that does not parse.
pub(crate) fn document_ids(text: &str) -> Vec<String> {
    use serde::Deserialize as _;
    // `map_while`: after a syntax error the deserializer yields the same error forever (a
    // simulate request whose envelope held a control character once spun a core until the
    // process ended).
    serde_yaml::Deserializer::from_str(text)
        .map_while(|doc| serde_yaml::Value::deserialize(doc).ok())
        .map(|v| {
            v.get("id")
                .and_then(|i| i.as_str().map(str::to_string))
                .unwrap_or_default()
        })
        .collect()
}

/// Stores one envelope version inside the caller's write. A version number names one content:
/// a different content under a stored `ID@VERSION` is refused; with `newest`, so is any new
/// content not above every stored version (an edit must raise the version). Recorded runs
/// store with `newest` off: they may bring back an older version.
pub(crate) fn store_version(
    c: &Connection,
    envelope: &PolicyEnvelope,
    text: &str,
    newest: bool,
) -> Result<Stored, StoreError> {
    let hash = content_hash(envelope);
    let version = u32::try_from(envelope.version).unwrap_or(0);
    if let Some(existing) = find(c, &envelope.id, Some(&hash))? {
        return Ok(Stored {
            version: existing,
            new: false,
        });
    }
    let taken: Option<String> = c
        .query_row(
            "SELECT content_hash FROM envelope_versions WHERE id = ?1 AND version = ?2",
            params![envelope.id, version],
            |r| r.get(0),
        )
        .optional()?;
    if taken.is_some() {
        return Err(StoreError::Invalid(format!(
            "envelope `{}` version {version} is already stored with different content\n  help: a changed envelope needs a new `version`",
            envelope.id
        )));
    }
    let highest: Option<u32> = c
        .query_row(
            "SELECT MAX(version) FROM envelope_versions WHERE id = ?1",
            [&envelope.id],
            |r| r.get(0),
        )
        .optional()?
        .flatten();
    if let Some(highest) = highest
        && newest
        && version <= highest
    {
        return Err(StoreError::Invalid(format!(
            "envelope `{}` changed but its version is {version}, and version {highest} is already stored\n  help: give the changed envelope `version: {}`",
            envelope.id,
            highest + 1
        )));
    }
    let body_hash = blake3::hash(text.as_bytes()).to_hex().to_string();
    artifacts::store(c, &body_hash, "application/yaml", text.as_bytes())?;
    let created_at = now_rfc3339();
    c.execute(
        "INSERT INTO envelope_versions (id, version, content_hash, artifact, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5)",
        params![envelope.id, version, hash, body_hash, created_at],
    )?;
    Ok(Stored {
        version: EnvelopeVersion {
            id: envelope.id.clone(),
            version,
            content_hash: hash,
            created_at,
        },
        new: true,
    })
}

fn find(
    c: &Connection,
    id: &str,
    hash: Option<&str>,
) -> Result<Option<EnvelopeVersion>, StoreError> {
    c.query_row(
        "SELECT id, version, content_hash, created_at FROM envelope_versions
         WHERE id = ?1 AND (CAST(?2 AS TEXT) IS NULL OR content_hash = ?2)",
        params![id, hash],
        row_version,
    )
    .optional()
}

fn row_version(r: &crate::store::Row<'_>) -> Result<EnvelopeVersion, StoreError> {
    Ok(EnvelopeVersion {
        id: r.get(0)?,
        version: r.get(1)?,
        content_hash: r.get(2)?,
        created_at: r.get(3)?,
    })
}

/// Every stored version (of one envelope, or of all), by id then version.
pub fn list_versions(
    store: &Store,
    id: Option<&str>,
) -> Result<Vec<EnvelopeVersion>, PolicyStoreError> {
    let id = id.map(str::to_string);
    Ok(store.read(move |c| {
        let mut stmt = c.prepare(
            "SELECT id, version, content_hash, created_at FROM envelope_versions
             WHERE CAST(?1 AS TEXT) IS NULL OR id = ?1 ORDER BY id, version",
        )?;
        let rows = stmt.query_map([id], row_version)?;
        rows.collect::<Result<_, _>>()
    })?)
}

/// The source of `ID@VERSION` (or of the latest version of `ID`), named `ID@VERSION`.
pub fn version_source(
    store: &Store,
    reference: &str,
) -> Result<(String, String), PolicyStoreError> {
    let (id, version) = match reference.split_once('@') {
        Some((id, v)) => {
            let v: u32 = v.parse().map_err(|_| {
                PolicyStoreError::NotFound(format!(
                    "`{reference}` is not `ID@VERSION`\n  help: the version is a number, as in `coding-agent@2`"
                ))
            })?;
            (id.to_string(), Some(v))
        }
        None => (reference.to_string(), None),
    };
    let (i, v) = (id.clone(), version);
    let found: Option<(u32, Vec<u8>)> = store.read(move |c| {
        c.query_row(
            "SELECT v.version, a.body FROM envelope_versions v JOIN artifacts a ON a.hash = v.artifact
             WHERE v.id = ?1 AND (CAST(?2 AS BIGINT) IS NULL OR v.version = ?2)
             ORDER BY v.version DESC LIMIT 1",
            params![i, v],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()
    })?;
    let (version, body) = found.ok_or_else(|| {
        PolicyStoreError::NotFound(format!(
            "no stored envelope `{reference}`\n  help: `tollgate policy versions` lists what is stored; `tollgate policy store FILE` stores one"
        ))
    })?;
    Ok((
        format!("{id}@{version}"),
        String::from_utf8_lossy(&body).into_owned(),
    ))
}

/// The set in force: the latest stored version of every envelope.
pub fn current_set(store: &Store) -> Result<EnvelopeSet, PolicyStoreError> {
    let mut latest: Vec<String> = Vec::new();
    for v in list_versions(store, None)? {
        if latest.last().is_some_and(|l| l == &v.id) {
            continue;
        }
        latest.push(v.id);
    }
    let sources = latest
        .iter()
        .map(|id| version_source(store, id))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(load_envelopes(&sources)?)
}

pub mod pins;

#[cfg(test)]
mod tests;
