//! Rate limits of tool rules, kept in the store so they survive a restart and are shared by
//! every gateway on the database.
//!
//! A `rate_limit` tool rule allows `count` calls per `window_seconds`, counted per run, agent
//! or task. Before a tool call is decided, the gateway counts the calls of each applicable
//! rate-limited rule in its current (sliding) window and hands the counts to the policy as
//! `tool_usage` facts; the packs decide `rate_limited` when a count reached its limit. A call
//! that then goes ahead is counted against every applicable rule, in the same transaction that
//! records its decision, and that write checks the limit again: calls decided at once on the
//! same stale count cannot all go ahead (issue 32, hole 2) — the write refuses
//! ([`LimitReached`]) and the runtime decides the call again on the new count. Every decision
//! that goes ahead is one row, whatever `call_id` the caller gave (hole 1). Time is the
//! gateway's clock (the engine never reads one).

use std::collections::BTreeMap;

use crate::store::{Connection, params};
use serde_json::Value;
use tollgate_rules::engine::ast::TestFn;
use tollgate_rules::engine::functions::PatternCache;
use tollgate_rules::envelope::{
    ArgKind, EnvelopeSet, RateScope, ToolEffect, UrlPattern, text_regex,
};
use tollgate_rules::request::arguments::url_parts;
use tollgate_rules::request::flatten_arguments;

use crate::recorder::format::RunHeader;
use crate::store::StoreError;

/// A rate-limited rule that applies to a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LimitedRule {
    /// `ENVELOPE/RULE`.
    pub rule: String,
    /// Calls per window.
    pub count: i32,
    /// Window length in seconds.
    pub window_seconds: i32,
    /// What calls are counted per.
    pub per: RateScope,
}

/// The usage of one rule in its current window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Usage {
    /// Calls counted in the window.
    pub used: i32,
    /// When the oldest of them was made (ms), if any.
    pub oldest_ms: Option<i64>,
}

/// The rate-limited rules of the governing envelopes (`ID@VERSION` labels) whose tool patterns
/// and argument conditions match the call. Patterns are compiled once into `patterns` (the
/// same glob semantics as the packs' `glob` test).
pub fn applicable(
    set: &EnvelopeSet,
    governing: &[String],
    tool: &str,
    args: &Value,
    patterns: &PatternCache,
) -> Vec<LimitedRule> {
    let mut patterns = patterns.clone();
    let mut flat: Option<BTreeMap<String, String>> = None;
    let mut out = Vec::new();
    for label in governing {
        let id = label.split_once('@').map_or(label.as_str(), |(id, _)| id);
        let Some(envelope) = set.get(id) else {
            continue;
        };
        for (i, rule) in envelope.tools.iter().enumerate() {
            let (ToolEffect::RateLimit, Some(limit)) = (rule.effect, rule.limit) else {
                continue;
            };
            if !rule
                .tools
                .iter()
                .any(|p| patterns.test(TestFn::Glob, p, tool))
            {
                continue;
            }
            let flat = flat.get_or_insert_with(|| flatten_arguments(args).into_iter().collect());
            // As `envelopes.dl` reads a `rate_limit` condition: the scalar at the pointer, or
            // any scalar inside the list or object there (`tool.arg-holds-inside`).
            // As `envelopes.dl` reads a `rate_limit` condition: the scalar at the pointer, or
            // any scalar inside the list or object there (`tool.arg-holds-inside`), by glob;
            // or, for a URL pattern, the scalar at the pointer by its parsed parts
            // (`tool.arg-holds-url`).
            let args_match = rule.args.iter().all(|(pointer, written)| {
                let pattern = written.as_str();
                let inside = format!("{pointer}/");
                let mut values = flat
                    .iter()
                    .filter(|(k, _)| *k == pointer || k.starts_with(&inside))
                    .map(|(_, v)| v);
                let by_text = written.kind() == ArgKind::Text && {
                    let regex = text_regex(pattern);
                    values
                        .clone()
                        .any(|v| patterns.test(TestFn::Match, &regex, v))
                };
                by_text
                    || values.any(|v| patterns.test(TestFn::Glob, pattern, v))
                    || (written.kind() == ArgKind::Url
                        && url_matches(pattern, flat.get(pointer), &mut patterns))
            });
            if args_match {
                let local = rule.id.clone().unwrap_or_else(|| {
                    tollgate_rules::envelope::local_rule_id(
                        tollgate_rules::envelope::Section::Tools,
                        i,
                    )
                });
                out.push(LimitedRule {
                    rule: envelope.rule_id(&local),
                    count: limit.count,
                    window_seconds: limit.window_seconds,
                    per: limit.per,
                });
            }
        }
    }
    out
}

/// Whether a URL pattern matches a URL argument by its parsed parts.
fn url_matches(pattern: &str, value: Option<&String>, patterns: &mut PatternCache) -> bool {
    let (Some(Ok(url)), Some(value)) = (UrlPattern::parse(pattern), value) else {
        return false;
    };
    url_parts(value).is_some_and(|(scheme, host, port, path)| {
        scheme == url.scheme
            && port == url.port
            && patterns.test(TestFn::Glob, &url.host, &host)
            && patterns.test(TestFn::Glob, &url.path, &path)
    })
}

/// The id a rule counts calls per, for a run.
fn per_id(per: RateScope, run: &RunHeader) -> &str {
    match per {
        RateScope::Run => &run.id,
        RateScope::Agent => &run.agent,
        RateScope::Task => &run.task,
    }
}

/// Counts each rule's calls in its window ending at `now_ms`.
pub fn usage(
    c: &Connection,
    run: &RunHeader,
    rules: &[LimitedRule],
    now_ms: i64,
) -> Result<BTreeMap<String, Usage>, StoreError> {
    let mut out = BTreeMap::new();
    for r in rules {
        let since = now_ms - i64::from(r.window_seconds) * 1000;
        let (used, oldest): (i64, Option<i64>) = c
            .prepare_cached(
                "SELECT COUNT(*), MIN(at) FROM tool_usage
                 WHERE rule_id = ?1 AND per_kind = ?2 AND per_id = ?3 AND at > ?4",
            )?
            .query_row(
                params![r.rule, r.per.as_str(), per_id(r.per, run), since],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )?;
        out.insert(
            r.rule.clone(),
            Usage {
                used: i32::try_from(used).unwrap_or(i32::MAX),
                oldest_ms: oldest,
            },
        );
    }
    Ok(out)
}

/// Seconds until the first of the `limited` rules frees a call: when the oldest call in its
/// window leaves it.
pub fn retry_after(
    rules: &[LimitedRule],
    usage: &BTreeMap<String, Usage>,
    limited: &[String],
    now_ms: i64,
) -> u64 {
    rules
        .iter()
        .filter(|r| limited.contains(&r.rule))
        .filter_map(|r| {
            let oldest = usage.get(&r.rule)?.oldest_ms?;
            let free_at = oldest + i64::from(r.window_seconds) * 1000;
            Some(
                u64::try_from((free_at - now_ms).max(0))
                    .unwrap_or(0)
                    .div_ceil(1000),
            )
        })
        .min()
        .unwrap_or(1)
        .max(1)
}

/// A call decided on a count that another call's write has since raised to its limit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LimitReached {
    /// The rule whose limit was reached meanwhile.
    pub rule: String,
}

/// Counts a call that goes ahead against every applicable rule (inside the caller's write),
/// after counting again inside the same write: when a rule's window is already full (calls
/// recorded since this one was decided), nothing is counted and the write must fail.
pub(crate) fn record_in(
    c: &Connection,
    run: &RunHeader,
    rules: &[LimitedRule],
    call_id: &str,
    now_ms: i64,
) -> Result<Result<(), LimitReached>, StoreError> {
    let usage = usage(c, run, rules, now_ms)?;
    if let Some(full) = rules
        .iter()
        .find(|r| usage.get(&r.rule).is_some_and(|u| u.used >= r.count))
    {
        return Ok(Err(LimitReached {
            rule: full.rule.clone(),
        }));
    }
    for r in rules {
        c.prepare_cached(
            "INSERT INTO tool_usage (rule_id, per_kind, per_id, run_id, call_id, at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        )?
        .execute(params![
            r.rule,
            r.per.as_str(),
            per_id(r.per, run),
            run.id,
            call_id,
            now_ms
        ])?;
    }
    Ok(Ok(()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use tollgate_rules::envelope::load_envelopes;

    fn set() -> EnvelopeSet {
        load_envelopes(&[(
            "e.yaml",
            r#"
id: e
version: 1
attach: {agents: [a]}
tools:
  - {id: web, effect: allow, tools: ["http.*"]}
  - {id: web-budget, effect: rate_limit, tools: ["http.get"], limit: {count: 2, window_seconds: 60, per: agent}}
  - {effect: rate_limit, tools: ["http.*"], args: {/host: "*.example"}, limit: {count: 5, window_seconds: 10}}
"#,
        )])
        .unwrap()
    }

    #[test]
    fn only_rules_whose_tools_and_arguments_match_apply() {
        let set = set();
        let gov = vec!["e@1".to_string()];
        let p = PatternCache::default();
        let got = applicable(&set, &gov, "http.get", &json!({"host": "a.example"}), &p);
        let ids: Vec<&str> = got.iter().map(|r| r.rule.as_str()).collect();
        assert_eq!(ids, ["e/web-budget", "e/tools.2"]);
        assert_eq!(got[0].per, RateScope::Agent);
        let got = applicable(&set, &gov, "http.get", &json!({"host": "a.org"}), &p);
        assert_eq!(got.len(), 1);
        assert!(applicable(&set, &gov, "http.post", &json!({}), &p).is_empty());
        assert!(applicable(&set, &[], "http.get", &json!({}), &p).is_empty());
    }

    #[test]
    fn retry_after_is_when_the_oldest_call_leaves_the_window() {
        let rules = vec![LimitedRule {
            rule: "e/r".into(),
            count: 1,
            window_seconds: 60,
            per: RateScope::Run,
        }];
        let usage = BTreeMap::from([(
            "e/r".to_string(),
            Usage {
                used: 1,
                oldest_ms: Some(1_000),
            },
        )]);
        assert_eq!(retry_after(&rules, &usage, &["e/r".into()], 31_000), 30);
        assert_eq!(retry_after(&rules, &usage, &["e/r".into()], 61_500), 1);
        assert_eq!(retry_after(&rules, &usage, &[], 31_000), 1);
    }
}
