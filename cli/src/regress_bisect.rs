//! `tollgate regress bisect CASE --target FILE`: which change of the target — its compile
//! settings or its envelope files, as committed to git — made a case start failing.
//!
//! The case and its bundle are read as they are now; the target is read at each commit
//! (`git show`), from the commit that added the case (or `--good`) to `HEAD` (or `--bad`),
//! with the working tree as the last step when it differs. Only commits that touch the target
//! file or its envelope folder are candidates. Each candidate is judged by running the case
//! against the target as it was there; evaluation is deterministic, so a binary search over
//! the candidates finds the first failing one exactly.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use anyhow::{Context, Result, bail};
use clap::Args;
use serde_json::json;
use tollgate_gateway::regress::execute::{CaseResult, load, run_case};
use tollgate_gateway::regress::target::{SettingsOverride, Target, TargetFile, is_envelope_file};

#[derive(Args, Debug)]
pub struct BisectArgs {
    /// The case file.
    case: PathBuf,
    /// The target file (committed in a git repository).
    #[arg(long)]
    target: PathBuf,
    /// A commit where the case passes (default: the commit that added the case file).
    #[arg(long)]
    good: Option<String>,
    /// A commit where it fails (default: `HEAD`, and the working tree after it).
    #[arg(long)]
    bad: Option<String>,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

/// Runs git in `repo`; its standard output.
fn git(repo: &Path, args: &[&str]) -> Result<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(args)
        .output()
        .context("cannot run git (bisect reads the target's history from git)")?;
    if !out.status.success() {
        bail!(
            "git {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Where the target's parts are, relative to the repository.
struct Layout {
    repo: PathBuf,
    /// The target file.
    target: String,
}

impl Layout {
    fn envelope_dir(&self, file: &TargetFile) -> Option<String> {
        let dir = file.envelopes.as_ref()?;
        let parent = Path::new(&self.target).parent().unwrap_or(Path::new(""));
        Some(normalise(&parent.join(dir)))
    }

    /// The target as committed at `rev`; `None` for the working tree.
    fn at(&self, rev: Option<&str>) -> Result<(Target, TargetFile)> {
        let read = |path: &str| -> Result<String> {
            match rev {
                Some(r) => git(&self.repo, &["show", &format!("{r}:{path}")]),
                None => std::fs::read_to_string(self.repo.join(path))
                    .with_context(|| format!("cannot read {path}")),
            }
        };
        let label = rev.map_or("the working tree".to_string(), short);
        let file: TargetFile = serde_yaml::from_str(&read(&self.target)?)
            .with_context(|| format!("{} at {label}", self.target))?;
        let mut files = Vec::new();
        if let Some(dir) = self.envelope_dir(&file) {
            let names: Vec<String> = match rev {
                Some(r) => git(
                    &self.repo,
                    &["ls-tree", "--name-only", &format!("{r}:{dir}")],
                )?
                .lines()
                .map(str::to_string)
                .collect(),
                None => {
                    let mut n: Vec<String> = std::fs::read_dir(self.repo.join(&dir))
                        .with_context(|| format!("cannot read {dir}"))?
                        .filter_map(|e| e.ok())
                        .filter(|e| e.path().is_file())
                        .filter_map(|e| e.file_name().to_str().map(str::to_string))
                        .collect();
                    n.sort();
                    n
                }
            };
            for name in names.iter().filter(|n| is_envelope_file(n)) {
                let path = format!("{dir}/{name}");
                files.push((path.clone(), read(&path)?));
            }
        }
        let target = Target::from_parts(&label, &files, file.settings.clone())?;
        Ok((target, file))
    }
}

fn short(rev: &str) -> String {
    rev.chars().take(12).collect()
}

/// `a/./b/../c` as `a/c`, with `/` separators.
fn normalise(p: &Path) -> String {
    let mut parts: Vec<String> = Vec::new();
    for c in p.components() {
        match c {
            std::path::Component::ParentDir => {
                parts.pop();
            }
            std::path::Component::Normal(s) => parts.push(s.to_string_lossy().into_owned()),
            _ => {}
        }
    }
    parts.join("/")
}

/// One judged point of the history.
struct Point {
    /// The commit, or `None` for the working tree.
    rev: Option<String>,
    /// Its subject line.
    subject: String,
}

pub fn run(a: &BisectArgs) -> Result<ExitCode> {
    let loaded = load(&a.case)?;
    let target_abs = std::fs::canonicalize(&a.target)
        .with_context(|| format!("cannot find {}", a.target.display()))?;
    let dir = target_abs.parent().unwrap_or(Path::new("/"));
    let repo = PathBuf::from(git(dir, &["rev-parse", "--show-toplevel"])?.trim());
    let layout = Layout {
        target: normalise(target_abs.strip_prefix(&repo).unwrap_or(&target_abs)),
        repo: repo.clone(),
    };
    let case_abs = std::fs::canonicalize(&a.case)?;
    let case_rel = normalise(case_abs.strip_prefix(&repo).unwrap_or(&case_abs));
    let good = match &a.good {
        Some(g) => git(&repo, &["rev-parse", g])?.trim().to_string(),
        None => {
            let added = git(
                &repo,
                &[
                    "log",
                    "--diff-filter=A",
                    "--format=%H",
                    "-n",
                    "1",
                    "--",
                    &case_rel,
                ],
            )?;
            let added = added.trim();
            if added.is_empty() {
                bail!(
                    "{} is not committed, so there is no history to bisect\n  help: commit it, or name a passing commit with --good",
                    a.case.display()
                );
            }
            added.to_string()
        }
    };
    let bad = git(&repo, &["rev-parse", a.bad.as_deref().unwrap_or("HEAD")])?
        .trim()
        .to_string();
    // Candidates: commits after `good` up to `bad` touching the target or its envelopes.
    let mut paths = vec![layout.target.clone()];
    for rev in [&good, &bad] {
        if let Ok((_, file)) = layout.at(Some(rev))
            && let Some(d) = layout.envelope_dir(&file)
            && !paths.contains(&d)
        {
            paths.push(d);
        }
    }
    let mut args = vec![
        "log".to_string(),
        "--reverse".to_string(),
        "--format=%H %s".to_string(),
        format!("{good}..{bad}"),
        "--".to_string(),
    ];
    args.extend(paths.iter().cloned());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut points: Vec<Point> = git(&repo, &args)?
        .lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(h, s)| Point {
            rev: Some(h.to_string()),
            subject: s.to_string(),
        })
        .collect();
    if a.bad.is_none() {
        let mut status = vec!["status", "--porcelain", "--"];
        status.extend(paths.iter().map(String::as_str));
        if !git(&repo, &status)?.trim().is_empty() {
            points.push(Point {
                rev: None,
                subject: "uncommitted changes".to_string(),
            });
        }
    }
    let judge = |rev: Option<&str>| -> Result<CaseResult> {
        let (target, _) = layout.at(rev)?;
        Ok(run_case(&loaded.case, &loaded.bundle, &target)?)
    };
    let first = judge(Some(&good))?;
    if !first.passed {
        bail!(
            "case `{}` already fails at {} (the good end)\n  help: name an earlier passing commit with --good",
            loaded.case.id,
            short(&good)
        );
    }
    let Some(last) = points.last() else {
        bail!(
            "no commit between {} and {} changes the target ({})",
            short(&good),
            short(&bad),
            paths.join(", ")
        );
    };
    if judge(last.rev.as_deref())?.passed {
        println!(
            "case `{}` passes at {}: nothing to bisect",
            loaded.case.id,
            last.rev.as_deref().map_or("the working tree".into(), short)
        );
        return Ok(ExitCode::SUCCESS);
    }
    // The first failing point: everything before `lo` passes, `hi` fails.
    let (mut lo, mut hi) = (0usize, points.len() - 1);
    let mut steps = 1;
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        steps += 1;
        if judge(points[mid].rev.as_deref())?.passed {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    let culprit = &points[lo];
    let before: Option<&str> = if lo == 0 {
        Some(&good)
    } else {
        points[lo - 1].rev.as_deref()
    };
    let result = judge(culprit.rev.as_deref())?;
    let (t_before, f_before) = layout.at(before)?;
    let (t_after, f_after) = layout.at(culprit.rev.as_deref())?;
    let settings = settings_changes(&f_before.settings, &f_after.settings);
    let envelopes = envelope_changes(&t_before, &t_after);
    let at = culprit
        .rev
        .as_deref()
        .map_or("the working tree".into(), short);
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&json!({
                "case": loaded.case.id,
                "first_failing": culprit.rev,
                "subject": culprit.subject,
                "candidates": points.len(),
                "evaluated": steps + 1,
                "settings": settings,
                "envelopes": envelopes,
                "failures": result.failures().collect::<Vec<_>>(),
                "signature": result.signature,
            }))?
        );
    } else {
        println!(
            "case `{}` starts failing at {at} ({}), the {} of {} change(s) to the target after {} ({} evaluation(s))",
            loaded.case.id,
            culprit.subject,
            ordinal(lo + 1),
            points.len(),
            short(&good),
            steps + 1
        );
        for s in &settings {
            println!("  compile settings: {s}");
        }
        for e in &envelopes {
            println!("  envelope {e}");
        }
        for f in result.failures() {
            println!(
                "  fails: {} #{} {}: {}",
                f.class,
                f.index + 1,
                f.kind,
                f.message
            );
        }
    }
    Ok(ExitCode::from(1))
}

fn ordinal(n: usize) -> String {
    let suffix = match (n % 10, n % 100) {
        (1, 11) | (2, 12) | (3, 13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

/// Each settings field that changed: `budget 3000 -> 300`.
fn settings_changes(before: &SettingsOverride, after: &SettingsOverride) -> Vec<String> {
    let (b, a) = (
        serde_json::to_value(before).unwrap_or_default(),
        serde_json::to_value(after).unwrap_or_default(),
    );
    let mut out = Vec::new();
    for key in ["budget", "kind_budgets", "order", "tokenizer"] {
        let (x, y) = (&b[key], &a[key]);
        if x != y {
            let show = |v: &serde_json::Value| {
                if v.is_null() {
                    "(recorded)".to_string()
                } else {
                    v.to_string()
                }
            };
            out.push(format!("{key} {} -> {}", show(x), show(y)));
        }
    }
    out
}

/// Each envelope added, removed or changed: `org-baseline 1 -> 2`.
fn envelope_changes(before: &Target, after: &Target) -> Vec<String> {
    let mut out = Vec::new();
    for e in &after.envelopes {
        match before.envelopes.iter().find(|b| b.id == e.id) {
            None => out.push(format!("{} added at version {}", e.id, e.version)),
            Some(b) if b.yaml != e.yaml => out.push(format!(
                "{} changed: version {} -> {}",
                e.id, b.version, e.version
            )),
            Some(_) => {}
        }
    }
    for b in &before.envelopes {
        if !after.envelopes.iter().any(|e| e.id == b.id) {
            out.push(format!("{} removed", b.id));
        }
    }
    out
}
