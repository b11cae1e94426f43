//! `tollgate packs adapter-preflight`: the guardrails of a mode, checked without running any
//! adapter. Dry run: every adapter exists and can run. Real: besides, the variable is set, the
//! policy file reads and names this pack, and every action it allows has a real adapter wired.
//! The findings are written to `.tollgate/adapter-preflight/PACK-MODE.json`.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::adapter::{self, Mode};
use super::real::{self, RealRefusal};
use super::{ALLOW_REAL_VAR, PackFaults, load};

/// One finding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// What was checked.
    pub check: String,
    /// Whether it holds.
    pub ok: bool,
    /// In words.
    pub detail: String,
}

/// The preflight's report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Preflight {
    /// The pack.
    pub pack_id: String,
    /// The mode checked.
    pub mode: Mode,
    /// Whether every guardrail holds.
    pub ok: bool,
    /// Every finding.
    pub findings: Vec<Finding>,
    /// Where the report was written.
    pub written_to: String,
}

/// Checks the pack at `root` for `mode` and writes the report under `out_dir`
/// (`.tollgate/adapter-preflight`).
pub fn preflight(
    root: &Path,
    mode: Mode,
    policy: Option<&Path>,
    env: &dyn Fn(&str) -> Option<String>,
    out_dir: &Path,
) -> Result<Preflight, PackFaults> {
    let pack = load(root)?;
    let mut findings = Vec::new();
    let mut note = |check: String, r: Result<String, String>| {
        findings.push(Finding {
            check,
            ok: r.is_ok(),
            detail: r.unwrap_or_else(|e| e),
        });
    };
    for w in &pack.workers {
        note(
            format!("worker:{}:adapter", w.id),
            adapter::resolve(&pack.root, &w.adapter).map(|p| format!("{} can run", p.display())),
        );
    }
    for a in &pack.actions {
        note(
            format!("action:{}:dry_run_adapter", a.id),
            adapter::resolve(&pack.root, &a.adapter).map(|p| format!("{} can run", p.display())),
        );
    }
    if mode == Mode::Real {
        note(
            format!("env:{ALLOW_REAL_VAR}"),
            match env(ALLOW_REAL_VAR).as_deref() {
                Some("1") => Ok("set to 1".into()),
                _ => Err(RealRefusal::NotAllowed.to_string()),
            },
        );
        match policy {
            None => note("policy".into(), Err(RealRefusal::NoPolicy.to_string())),
            Some(path) => match real::read_policy(path) {
                Err(f) => note(
                    "policy".into(),
                    Err(format!(
                        "`{}` does not read:\n{}",
                        path.display(),
                        super::render(&f)
                    )),
                ),
                Ok(p) if p.pack_id != pack.manifest.pack_id => note(
                    "policy".into(),
                    Err(format!(
                        "`{}` is for pack `{}`, not `{}`",
                        path.display(),
                        p.pack_id,
                        pack.manifest.pack_id
                    )),
                ),
                Ok(p) => {
                    note(
                        "policy".into(),
                        Ok(format!(
                            "`{}` allows {}",
                            path.display(),
                            if p.allow_actions.is_empty() {
                                "no action".to_string()
                            } else {
                                p.allow_actions.join(", ")
                            }
                        )),
                    );
                    for allowed in &p.allow_actions {
                        let r = match pack.action(allowed) {
                            None => Err(format!(
                                "the policy allows `{allowed}`, which actions.yaml does not define"
                            )),
                            Some(a) => match &a.real_adapter {
                                None => Err(RealRefusal::NotWired {
                                    action: allowed.clone(),
                                }
                                .to_string()),
                                Some(x) => adapter::resolve(&pack.root, x)
                                    .map(|p| format!("real adapter {} can run", p.display())),
                            },
                        };
                        note(format!("action:{allowed}:real_adapter"), r);
                    }
                }
            },
        }
    }
    let ok = findings.iter().all(|f| f.ok);
    let file: PathBuf = out_dir.join(format!("{}-{}.json", pack.manifest.pack_id, mode.as_str()));
    let mut report = Preflight {
        pack_id: pack.manifest.pack_id.clone(),
        mode,
        ok,
        findings,
        written_to: file.display().to_string(),
    };
    let written = std::fs::create_dir_all(out_dir).and_then(|()| {
        let text = serde_json::to_string_pretty(&report).unwrap_or_default();
        std::fs::write(&file, text + "\n")
    });
    if let Err(e) = written {
        report.ok = false;
        report.findings.push(Finding {
            check: "report".into(),
            ok: false,
            detail: format!("cannot write `{}`: {e}", file.display()),
        });
    }
    Ok(report)
}
