//! `tollgate packs adapter-dry-run`: the adapter harness. Every action's dry-run adapter is
//! driven, in a fresh state folder, through preview (which must show changes and change
//! nothing), apply (a receipt), verify (the change holds), idempotency (applying again with the
//! same key leaves the verified state as it was) and compensation (compensating restores the
//! state before apply); every worker collects on the demo input and may record only the keys it
//! declares. Each check is reported; nothing outside the temporary folder is touched.

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{Map, Value};

use super::adapter::{self, Call, Mode, Op};
use super::{Pack, PackFaults, load};

/// One check of the harness.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Check {
    /// `action:ID` or `worker:ID`.
    pub subject: String,
    /// `preview`, `preview_has_no_effect`, `apply`, `verify`, `idempotency`, `compensation`,
    /// `collect`.
    pub check: String,
    /// Whether it passed.
    pub ok: bool,
    /// What was seen.
    pub detail: String,
}

/// The harness's report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HarnessReport {
    /// The pack.
    pub pack_id: String,
    /// Whether every check passed.
    pub ok: bool,
    /// Every check, in order.
    pub checks: Vec<Check>,
}

/// Runs the harness over the pack at `root`; `progress` sees each check as it finishes.
pub fn dry_run(root: &Path, progress: &mut dyn FnMut(&Check)) -> Result<HarnessReport, PackFaults> {
    let pack = load(root)?;
    let scratch = std::env::temp_dir().join(format!(
        "tollgate-adapter-dry-run-{}",
        crate::runtime::random_hex(6)
    ));
    let mut checks = Vec::new();
    let mut report = |c: Check| {
        progress(&c);
        checks.push(c);
    };
    for worker in &pack.workers {
        let state = scratch.join(format!("worker-{}", worker.id));
        report(collect_check(&pack, worker, &state));
    }
    for action in &pack.actions {
        let state = scratch.join(format!("action-{}", action.id));
        for c in action_checks(&pack, &action.id, &state) {
            report(c);
        }
    }
    let _ = std::fs::remove_dir_all(&scratch);
    Ok(HarnessReport {
        pack_id: pack.manifest.pack_id.clone(),
        ok: checks.iter().all(|c| c.ok),
        checks,
    })
}

fn collect_check(pack: &Pack, worker: &super::Worker, state: &Path) -> Check {
    let input = pack
        .manifest
        .demo
        .as_ref()
        .map(|d| d.input.clone())
        .unwrap_or_default();
    let call = Call {
        root: &pack.root,
        executable: &worker.adapter,
        op: Op::Collect,
        mode: Mode::DryRun,
        pack_id: &pack.manifest.pack_id,
        name: &worker.id,
        case_id: "harness",
        input: &input,
        idempotency_key: "harness:collect",
        state_dir: state,
    };
    let subject = format!("worker:{}", worker.id);
    let (ok, detail) = match adapter::run(&call) {
        Err(e) => (false, e.to_string()),
        Ok(answer) => match answer.get("evidence").and_then(Value::as_object) {
            None => (false, "the answer has no `evidence` object".to_string()),
            Some(ev) => {
                let extra: Vec<&String> =
                    ev.keys().filter(|k| !worker.produces.contains(k)).collect();
                if extra.is_empty() {
                    (
                        true,
                        format!(
                            "recorded {}",
                            ev.keys().cloned().collect::<Vec<_>>().join(", ")
                        ),
                    )
                } else {
                    (
                        false,
                        format!(
                            "recorded keys it does not declare in `produces`: {}",
                            extra
                                .iter()
                                .map(|s| s.as_str())
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                    )
                }
            }
        },
    };
    Check {
        subject,
        check: "collect".into(),
        ok,
        detail,
    }
}

struct Driver<'a> {
    pack: &'a Pack,
    action: &'a super::Action,
    input: Map<String, Value>,
    state: PathBuf,
}

impl Driver<'_> {
    fn call(&self, op: Op, key: &str) -> Result<Map<String, Value>, String> {
        adapter::run(&Call {
            root: &self.pack.root,
            executable: &self.action.adapter,
            op,
            mode: Mode::DryRun,
            pack_id: &self.pack.manifest.pack_id,
            name: &self.action.id,
            case_id: "harness",
            input: &self.input,
            idempotency_key: key,
            state_dir: &self.state,
        })
        .map_err(|e| e.to_string())
    }

    /// The verified flag and the state, from `verify`.
    fn verify(&self) -> Result<(bool, Value), String> {
        let answer = self.call(Op::Verify, "harness:1")?;
        let verified = answer
            .get("verified")
            .and_then(Value::as_bool)
            .ok_or("`verify` answers `verified`: true or false")?;
        Ok((
            verified,
            answer.get("state").cloned().unwrap_or(Value::Null),
        ))
    }
}

fn action_checks(pack: &Pack, action_id: &str, state: &Path) -> Vec<Check> {
    let Some(action) = pack.action(action_id) else {
        return Vec::new();
    };
    let d = Driver {
        pack,
        action,
        input: action.sample_input.clone().unwrap_or_default(),
        state: state.to_path_buf(),
    };
    let subject = format!("action:{action_id}");
    let mut out = Vec::new();
    let mut push = |check: &str, r: Result<String, String>| {
        let ok = r.is_ok();
        out.push(Check {
            subject: subject.clone(),
            check: check.into(),
            ok,
            detail: r.unwrap_or_else(|e| e),
        });
        ok
    };
    let before = match d.verify() {
        Ok((_, s)) => s,
        Err(e) => {
            push("verify", Err(format!("`verify` before apply failed: {e}")));
            return out;
        }
    };
    let previewed = d.call(Op::Preview, "harness:1").and_then(|a| {
        let (changes, _) = adapter::preview_of(&a)?;
        if changes.is_empty() {
            return Err("the preview shows no change".into());
        }
        Ok(format!("{} change(s)", changes.len()))
    });
    if !push("preview", previewed) {
        return out;
    }
    let untouched = d.verify().and_then(|(_, s)| {
        if s == before {
            Ok("the state is as it was".to_string())
        } else {
            Err(format!("preview changed the state: {before} became {s}"))
        }
    });
    push("preview_has_no_effect", untouched);
    let applied = d
        .call(Op::Apply, "harness:1")
        .and_then(|a| match a.get("receipt") {
            Some(r) if !r.is_null() => Ok(format!("receipt {r}")),
            _ => Err("`apply` answers a `receipt`".to_string()),
        });
    if !push("apply", applied) {
        return out;
    }
    let after = match d.verify() {
        Ok((true, s)) if s != before => {
            push("verify", Ok(format!("verified; state {s}")));
            s
        }
        Ok((true, s)) => {
            push(
                "verify",
                Err(format!(
                    "verified, but the state did not change ({s}): apply had no effect"
                )),
            );
            return out;
        }
        Ok((false, s)) => {
            push(
                "verify",
                Err(format!("`verified` is false after apply; state {s}")),
            );
            return out;
        }
        Err(e) => {
            push("verify", Err(e));
            return out;
        }
    };
    let again = d
        .call(Op::Apply, "harness:1")
        .and_then(|_| d.verify())
        .and_then(|(v, s)| {
            if v && s == after {
                Ok("applying again with the same key had no further effect".to_string())
            } else {
                Err(format!(
                    "applying again with the same key changed the state: {after} became {s}"
                ))
            }
        });
    push("idempotency", again);
    let compensated = d
        .call(Op::Compensate, "harness:1")
        .and_then(|_| d.verify())
        .and_then(|(_, s)| {
            if s == before {
                Ok("compensation restored the state before apply".to_string())
            } else {
                Err(format!(
                    "after compensation the state is {s}, before apply it was {before}"
                ))
            }
        });
    push("compensation", compensated);
    out
}
