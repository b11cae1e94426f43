//! A suite report as text (for people), JSON (the report itself) or JUnit XML (for CI: one
//! `testcase` per case; a failure carries its signature as its `type`; a flaky case passes
//! with a `flakyFailure` per failed repeat, as Maven Surefire writes reruns; drift is a
//! property).

use std::fmt::Write as _;

use super::suite::{CaseStatus, SuiteReport};

/// The report for people: one line per case, each failure's assertions, then the figures.
pub fn text(r: &SuiteReport) -> String {
    let mut out = String::new();
    for c in &r.cases {
        let mark = match c.status {
            CaseStatus::Passed => "ok   ",
            CaseStatus::Failed => "FAIL ",
            CaseStatus::Flaky => "FLAKY",
            CaseStatus::Error => "ERROR",
        };
        let repeats = if r.repeat > 1 {
            format!(" ({}/{} passed)", c.passes, c.runs)
        } else {
            String::new()
        };
        let drift = if c.result.as_ref().is_some_and(|x| x.drift) {
            " [drift]"
        } else {
            ""
        };
        let _ = writeln!(out, "{mark} {}{repeats}{drift}", c.case);
        if let Some(e) = &c.error {
            for line in e.lines() {
                let _ = writeln!(out, "        {line}");
            }
        }
        if let Some(res) = c.result.as_ref().filter(|x| !x.passed) {
            for a in res.failures() {
                let _ = writeln!(
                    out,
                    "        {} #{} {}: {}",
                    a.class,
                    a.index + 1,
                    a.kind,
                    a.message
                );
            }
            if let Some(s) = &res.signature {
                let _ = writeln!(out, "        signature {}: {}", s.id, s.summary);
            }
        }
        if let Some(d) = c.result.as_ref().and_then(|x| x.drift_detail.as_ref()) {
            let _ = writeln!(out, "        drift: {d}");
        }
    }
    let f = &r.figures;
    let _ = writeln!(
        out,
        "\n{} case(s): {} passed, {} failed, {} flaky, {} error(s); pass rate {:.1}%; drift in {}",
        f.cases,
        f.passed,
        f.failed,
        f.flaky,
        f.errors,
        f.pass_rate * 100.0,
        f.drift
    );
    let coverage = |map: &std::collections::BTreeMap<String, super::suite::Coverage>| {
        map.iter()
            .map(|(k, v)| format!("{k} {}/{}", v.passed, v.cases))
            .collect::<Vec<_>>()
            .join(", ")
    };
    if !f.by_agent.is_empty() {
        let _ = writeln!(out, "by agent: {}", coverage(&f.by_agent));
        let _ = writeln!(out, "by task type: {}", coverage(&f.by_task_type));
    }
    for s in &r.signatures {
        let _ = writeln!(
            out,
            "signature {} ({} case(s)): {}\n  {}",
            s.signature.id,
            s.cases.len(),
            s.signature.summary,
            s.cases.join(", ")
        );
    }
    let _ = writeln!(out, "target: {}; took {:.0} ms", r.target, r.duration_ms);
    out
}

/// The report as pretty JSON.
pub fn json(r: &SuiteReport) -> String {
    serde_json::to_string_pretty(r).unwrap_or_default() + "\n"
}

/// The report as JUnit XML.
pub fn junit(r: &SuiteReport) -> String {
    let f = &r.figures;
    let secs = |ms: f64| format!("{:.3}", ms / 1000.0);
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuites name=\"tollgate regress\" tests=\"{}\" failures=\"{}\" errors=\"{}\" time=\"{}\">",
        f.cases,
        f.failed,
        f.errors,
        secs(r.duration_ms)
    );
    let _ = writeln!(
        out,
        "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"0\" time=\"{}\">",
        escape(&r.path),
        f.cases,
        f.failed,
        f.errors,
        secs(r.duration_ms)
    );
    let _ = writeln!(
        out,
        "    <properties>\n      <property name=\"pass_rate\" value=\"{:.4}\"/>\n      <property name=\"flaky\" value=\"{}\"/>\n      <property name=\"drift\" value=\"{}\"/>\n      <property name=\"target\" value=\"{}\"/>\n    </properties>",
        f.pass_rate,
        f.flaky,
        f.drift,
        escape(&r.target)
    );
    for c in &r.cases {
        let (classname, time) = match &c.result {
            Some(x) => (format!("{}.{}", x.agent, x.task_type), x.duration_ms),
            None => ("unloaded".to_string(), 0.0),
        };
        let _ = write!(
            out,
            "    <testcase classname=\"{}\" name=\"{}\" file=\"{}\" time=\"{}\"",
            escape(&classname),
            escape(&c.case),
            escape(&c.path),
            secs(time)
        );
        let body = body(c);
        if body.is_empty() {
            out.push_str("/>\n");
        } else {
            let _ = write!(out, ">\n{body}    </testcase>\n");
        }
    }
    out.push_str("  </testsuite>\n</testsuites>\n");
    out
}

fn body(c: &super::suite::CaseReport) -> String {
    let mut out = String::new();
    if let Some(e) = &c.error {
        let first = e.lines().next().unwrap_or_default();
        let _ = writeln!(
            out,
            "      <error message=\"{}\" type=\"load\">{}</error>",
            escape(first),
            escape(e)
        );
        return out;
    }
    let Some(r) = &c.result else { return out };
    if r.drift {
        let _ = writeln!(
            out,
            "      <properties><property name=\"drift\" value=\"{}\"/></properties>",
            escape(r.drift_detail.as_deref().unwrap_or("true"))
        );
    }
    if r.passed {
        return out;
    }
    let failed: Vec<_> = r.failures().collect();
    let message = format!(
        "{} of {} assertion(s) failed",
        failed.len(),
        r.assertions.len()
    );
    let detail = failed
        .iter()
        .map(|a| format!("{} #{} {}: {}", a.class, a.index + 1, a.kind, a.message))
        .collect::<Vec<_>>()
        .join("\n");
    let kind = r
        .signature
        .as_ref()
        .map_or("assertion".to_string(), |s| s.id.clone());
    let tag = if c.status == CaseStatus::Flaky {
        "flakyFailure"
    } else {
        "failure"
    };
    let _ = writeln!(
        out,
        "      <{tag} message=\"{}\" type=\"{}\">{}</{tag}>",
        escape(&message),
        escape(&kind),
        escape(&detail)
    );
    out
}

/// Text safe in XML attributes and content.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\n' => out.push_str("&#10;"),
            c if (c as u32) < 0x20 && c != '\t' => {}
            c => out.push(c),
        }
    }
    out
}
