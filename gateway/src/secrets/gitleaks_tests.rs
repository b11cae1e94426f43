//! The public scanner's own samples, measured (issue 33): a samples file built from a gitleaks
//! checkout by `gitleaks_samples.py` beside this file, read from `TOLLGATE_GITLEAKS_SAMPLES`.
//! For the live redactor and the fixture scrubber: recall (the secret is gone from the output,
//! not merely "a detector fired") per rule and overall, and how often a false-positive sample
//! is changed at all. Ignored by default: the samples are not in this repository.
//!
//! ```text
//! python3 gateway/src/secrets/gitleaks_samples.py ~/src/gitleaks > /tmp/gitleaks-samples.jsonl
//! TOLLGATE_GITLEAKS_SAMPLES=/tmp/gitleaks-samples.jsonl \
//!   cargo test -p tollgate-gateway --lib gitleaks -- --ignored --nocapture
//! ```
//!
//! `TOLLGATE_GITLEAKS_ALL=1` prints every rule and every miss, not only rules with a miss and
//! their first three.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use regex::Regex;

use serde::Deserialize;

use super::corpus_tests::{leaks, live};
use super::scrub::Scrubber;

#[derive(Deserialize)]
struct Sample {
    rule: String,
    kind: String,
    text: String,
    secret: Option<String>,
}

/// Per rule: true positives, removed live, removed by the scrubber; false positives, changed
/// live, changed by the scrubber; and false positives that hold another rule's secret (the
/// scanner's samples of one format that another format must not take), which are secrets
/// here and not counted as false positives.
#[derive(Default)]
struct Tally {
    tps: usize,
    live: usize,
    scrub: usize,
    fps: usize,
    live_fp: usize,
    scrub_fp: usize,
    other_rules: usize,
    missed: Vec<String>,
}

/// Whether what is left of `secret` in `out` could be put back together: a run of 8 of its
/// characters ([`leaks`]) that the rest of `text` does not hold anyway (`rubygemsToken=…`
/// keeps `rubygems` of `rubygems_…` without leaking anything).
fn leaks_beyond(text: &str, out: &str, secret: &str) -> bool {
    // The markers name the rule (`[REDACTED:rubygems_token:1]`), not the secret.
    let out = MARKER.replace_all(out, "");
    let out = out.as_ref();
    let rest = text.replace(secret, "\u{0}");
    let cs: Vec<char> = secret.chars().collect();
    if cs.len() < 8 {
        return leaks(out, secret);
    }
    cs.windows(8)
        .map(|w| w.iter().collect::<String>())
        .any(|w| out.contains(&w) && !rest.contains(&w))
}

static MARKER: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\[REDACTED:[^\]]*\]").unwrap());

fn pct(n: usize, of: usize) -> f64 {
    if of == 0 {
        100.0
    } else {
        100.0 * n as f64 / of as f64
    }
}

#[test]
#[ignore = "needs a samples file built from a gitleaks checkout (TOLLGATE_GITLEAKS_SAMPLES)"]
fn gitleaks_samples_recall_and_false_positives() {
    let Ok(path) = std::env::var("TOLLGATE_GITLEAKS_SAMPLES") else {
        eprintln!("TOLLGATE_GITLEAKS_SAMPLES is not set; nothing measured");
        return;
    };
    let text = std::fs::read_to_string(&path).unwrap();
    let all = std::env::var("TOLLGATE_GITLEAKS_ALL").is_ok();
    let samples: Vec<Sample> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let secrets: Vec<(&str, &str)> = samples
        .iter()
        .filter_map(|s| Some((s.rule.as_str(), s.secret.as_deref()?)))
        .filter(|(_, secret)| secret.len() >= 12)
        .collect();
    let mut rules: BTreeMap<String, Tally> = BTreeMap::new();
    for s in &samples {
        let other_rule = s.kind != "tp"
            && secrets
                .iter()
                .any(|(rule, secret)| *rule != s.rule && s.text.contains(secret));
        let t = rules.entry(s.rule.clone()).or_default();
        let live_out = live(&s.text);
        let scrub_out = Scrubber::new().text(&s.text);
        match (s.kind.as_str(), s.secret.as_deref()) {
            ("tp", Some(secret)) => {
                t.tps += 1;
                let gone_live = !leaks_beyond(&s.text, &live_out, secret);
                let gone_scrub = !leaks_beyond(&s.text, &scrub_out, secret);
                t.live += usize::from(gone_live);
                t.scrub += usize::from(gone_scrub);
                if !gone_live || !gone_scrub {
                    t.missed.push(format!(
                        "{}{} {:?} in {:?} -> {:?} / {:?}",
                        if gone_live { "" } else { "L" },
                        if gone_scrub { "" } else { "S" },
                        secret,
                        s.text,
                        live_out,
                        scrub_out
                    ));
                }
            }
            _ if other_rule => t.other_rules += 1,
            _ => {
                t.fps += 1;
                t.live_fp += usize::from(live_out != s.text);
                t.scrub_fp += usize::from(scrub_out != s.text);
                if live_out != s.text {
                    t.missed.push(format!("fp {:?} -> {live_out:?}", s.text));
                }
            }
        }
    }
    let sum = |f: fn(&Tally) -> usize| rules.values().map(f).sum::<usize>();
    let with_tps: Vec<&Tally> = rules.values().filter(|t| t.tps > 0).collect();
    let macro_avg = |f: fn(&Tally) -> usize| {
        with_tps.iter().map(|t| pct(f(t), t.tps)).sum::<f64>() / with_tps.len().max(1) as f64
    };
    eprintln!("rule | tps | live | scrubber | fps | live fp | scrubber fp");
    for (rule, t) in &rules {
        if all || t.live < t.tps || t.scrub < t.tps || t.live_fp > 0 || t.scrub_fp > 0 {
            eprintln!(
                "{rule} | {} | {} | {} | {} | {} | {}",
                t.tps, t.live, t.scrub, t.fps, t.live_fp, t.scrub_fp
            );
            for m in t.missed.iter().take(if all { usize::MAX } else { 3 }) {
                eprintln!("    {m}");
            }
        }
    }
    let (tps, fps) = (sum(|t| t.tps), sum(|t| t.fps));
    let other_rules = sum(|t| t.other_rules);
    let full = |f: fn(&Tally) -> usize| with_tps.iter().filter(|t| f(t) == t.tps).count();
    eprintln!(
        "rules {} ({} with true positives); true positives {tps}: live removes {:.1}% \
         (mean over rules {:.1}%, {} rules whole), scrubber {:.1}% (mean over rules {:.1}%, {} \
         rules whole); false-positive samples {fps}: live changes {:.1}%, scrubber {:.1}% \
         ({other_rules} more hold another rule's secret)",
        rules.len(),
        with_tps.len(),
        pct(sum(|t| t.live), tps),
        macro_avg(|t| t.live),
        full(|t| t.live),
        pct(sum(|t| t.scrub), tps),
        macro_avg(|t| t.scrub),
        full(|t| t.scrub),
        pct(sum(|t| t.live_fp), fps),
        pct(sum(|t| t.scrub_fp), fps),
    );
}
