//! `tollgate cover review status`: where a covered pack stands — the mapping and boundary
//! reviews applied or not, its workers and actions, what author-check still owes, and the next
//! command.

use std::path::Path;

use serde::Serialize;

use super::boundaries;
use super::review::{self, REVIEW_FILE, SUGGESTED_FILE};
use super::scaffold::pack_report;
use crate::packs::{PackFaults, author_check, load};

/// Where a covered pack stands.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Status {
    /// The pack.
    pub pack_id: String,
    /// The entrypoint it covers.
    pub source: String,
    /// Tools inspected.
    pub tools: usize,
    /// Whether the mapping review is applied.
    pub mappings_applied: bool,
    /// Workers, and how many are reviewed.
    pub workers: usize,
    /// Of them, reviewed.
    pub workers_reviewed: usize,
    /// Boundaries the review keeps (or the report suggests, before it).
    pub boundaries: usize,
    /// Whether the boundary review is applied.
    pub boundaries_applied: bool,
    /// Actions generated.
    pub actions: usize,
    /// Whether author-check passes.
    pub author_check_ok: bool,
    /// What author-check still owes, one line each.
    pub awaiting: Vec<String>,
    /// The next command.
    pub next: Vec<String>,
}

/// The status of the covered pack at `root`.
pub fn status(root: &Path) -> Result<Status, PackFaults> {
    let report = pack_report(root)?;
    let pack = load(root)?;
    let applied = review::applied(root);
    let boundaries = boundaries::boundary_tools(&report, applied.as_ref()).len();
    let boundaries_applied = root.join(boundaries::APPLIED).exists();
    let check = author_check::author_check(root);
    let mut awaiting: Vec<String> = check
        .faults
        .iter()
        .map(ToString::to_string)
        .chain(
            check
                .missing
                .iter()
                .map(|m| format!("{}: {}", m.file, m.message)),
        )
        .collect();
    awaiting.dedup();
    let r = pack.root.display();
    let next = if applied.is_none() {
        vec![
            format!("tollgate cover suggest --pack-root {r} --output {r}/{SUGGESTED_FILE}"),
            format!("tollgate cover review template --pack-root {r} --output {r}/{REVIEW_FILE}"),
            format!("tollgate cover review apply --pack-root {r} --mapping-file {r}/{REVIEW_FILE}"),
        ]
    } else if !boundaries_applied {
        let s = boundaries::SUGGESTED_FILE;
        let f = boundaries::REVIEW_FILE;
        vec![
            format!("tollgate cover boundaries suggest --pack-root {r} --output {r}/{s}"),
            format!(
                "tollgate cover boundaries review template --pack-root {r} --suggestions {r}/{s} --output {r}/{f}"
            ),
            format!(
                "tollgate cover boundaries review apply --pack-root {r} --mapping-file {r}/{f}"
            ),
        ]
    } else {
        vec![
            format!("tollgate packs author-check --pack-root {r}"),
            format!("tollgate packs adapter-dry-run --pack-root {r}"),
            format!("tollgate packs adapter-preflight --pack-root {r} --mode dry_run"),
            format!("TOLLGATE=$(command -v tollgate) {r}/demo.sh   # prints a case_id"),
        ]
    };
    Ok(Status {
        pack_id: pack.manifest.pack_id.clone(),
        source: report.entrypoint.spec.clone(),
        tools: report.tools.len(),
        mappings_applied: applied.is_some(),
        workers: pack.workers.len(),
        workers_reviewed: pack.workers.iter().filter(|w| w.reviewed).count(),
        boundaries,
        boundaries_applied,
        actions: pack.actions.len(),
        author_check_ok: check.ok,
        awaiting,
        next,
    })
}
