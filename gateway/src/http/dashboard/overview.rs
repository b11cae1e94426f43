//! The Overview screen, the dashboard's landing page: for a time window (the last hour, day or
//! week, or from and to) and optionally one agent or task, what was decided over time and
//! why decisions were not allowed, what waits for approval, whether the regression suite is
//! green, and memories, cases and handoffs by state. Every plot ([`charts`]) has its table
//! and downloads (`/ui/overview/data?panel=...&format=csv|json`); a bar of denials opens
//! the receipts behind it (`/ui/decisions`).

use axum::extract::{Query, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use maud::{Markup, html};
use serde::Deserialize;
use tollgate_rules::decide::DecisionEffect;

use super::charts::{self, Column, Series, Table};
use super::layout::{effect, empty, encode, receipt_href, run_href};
use super::{Viewer, blocking_page};
use crate::clock::{parse_rfc3339, rfc3339};
use crate::codes::http as codes;
use crate::http::{ApiError, AppState};
use crate::overview::{self, Count, Drill, Overview, Window};
use crate::runtime::RuntimeError;

/// The overview's query: the window and the runs.
#[derive(Debug, Default, Clone, Deserialize)]
pub struct OverviewQuery {
    /// `hour`, `day` (the default), `week` or `custom` (`from` and `to`).
    #[serde(default)]
    range: Option<String>,
    /// A custom window's start (`YYYY-MM-DDTHH:MM`, UTC).
    #[serde(default)]
    from: Option<String>,
    /// Its end.
    #[serde(default)]
    to: Option<String>,
    /// Only this agent's runs.
    #[serde(default)]
    agent: Option<String>,
    /// Only runs of this task.
    #[serde(default)]
    task: Option<String>,
}

/// The ranges offered, with their length in seconds.
const RANGES: [(&str, &str, i64); 3] = [
    ("hour", "Last hour", 3_600),
    ("day", "Last day", 86_400),
    ("week", "Last week", 7 * 86_400),
];

/// The longest custom window: a year (a bar is then a week).
const LONGEST: i64 = 366 * 86_400;

impl OverviewQuery {
    /// The window, counted back from `now_ms` (the runtime's clock), or why it is not one.
    fn window(&self, now_ms: i64) -> Result<Window, String> {
        let given = |v: &Option<String>| v.clone().filter(|s| !s.trim().is_empty());
        let now = now_ms.div_euclid(1000);
        let range = self.range_asked();
        let (since, until) = if range == "custom" {
            let at = |v: &Option<String>, name: &str| -> Result<i64, String> {
                let text = given(v).ok_or(format!("A custom range needs `{name}`."))?;
                let full = match text.len() {
                    16 => format!("{text}:00Z"),
                    19 => format!("{text}Z"),
                    _ => text.clone(),
                };
                parse_rfc3339(&full)
                    .and_then(|s| i64::try_from(s).ok())
                    .ok_or(format!(
                        "`{name}` is not a time: `{text}` (write it as 2026-12-05T09:30, UTC)."
                    ))
            };
            let (since, until) = (at(&self.from, "from")?, at(&self.to, "to")?);
            if until <= since {
                return Err("`to` must be after `from`.".into());
            }
            if until - since > LONGEST {
                return Err("A custom range may span a year at most.".into());
            }
            (since, until)
        } else {
            let (_, _, secs) = RANGES
                .iter()
                .find(|(name, _, _)| *name == range)
                .ok_or(format!("No range `{range}`: hour, day, week or custom."))?;
            (now - secs, now + 1)
        };
        Ok(Window {
            since,
            until,
            agent: given(&self.agent),
            task: given(&self.task),
        })
    }

    /// The range asked for: `custom` when both ends are given (whatever the list says: a
    /// person who typed dates means them), else the list's choice, `day` by default.
    fn range_asked(&self) -> &str {
        let given = |v: &Option<String>| v.as_deref().is_some_and(|s| !s.trim().is_empty());
        if given(&self.from) && given(&self.to) {
            return "custom";
        }
        self.range.as_deref().unwrap_or("day")
    }

    /// The query as URL parameters (for the downloads).
    fn params(&self) -> String {
        let mut out = Vec::new();
        for (k, v) in [
            ("range", &self.range),
            ("from", &self.from),
            ("to", &self.to),
            ("agent", &self.agent),
            ("task", &self.task),
        ] {
            if let Some(v) = v.as_deref().filter(|v| !v.is_empty()) {
                out.push(format!("{k}={}", encode(v)));
            }
        }
        out.join("&")
    }
}

/// `GET /ui`.
pub async fn page(
    State(state): State<AppState>,
    viewer: Viewer,
    Query(query): Query<OverviewQuery>,
) -> Response {
    blocking_page(&state, &viewer, "Overview", "/ui", move |rt| {
        let window = match query.window(rt.now_ms()) {
            Ok(w) => w,
            Err(problem) => {
                return Ok(html! {
                    h1 { "Overview" }
                    (filters(&query))
                    div.error role="alert" { (problem) }
                });
            }
        };
        let ov = overview::read(rt.store(), &window, rt.now_ms()).map_err(RuntimeError::Store)?;
        Ok(content(&query, &ov))
    })
    .await
}

/// `GET /ui/overview/data?panel=..&format=csv|json`: a panel's numbers, or (no panel, JSON)
/// the whole overview.
#[derive(Debug, Deserialize)]
pub struct DataQuery {
    #[serde(default)]
    panel: Option<String>,
    #[serde(default)]
    format: Option<String>,
    #[serde(flatten)]
    overview: OverviewQuery,
}

/// `GET /ui/overview/data`.
pub async fn data(
    State(state): State<AppState>,
    _viewer: Viewer,
    Query(query): Query<DataQuery>,
) -> Response {
    let rt = state.runtime.clone();
    let answer = tokio::task::spawn_blocking(move || -> Result<Response, ApiError> {
        let bad = |m: String| ApiError::new(codes::INVALID_QUERY, m);
        let window = query.overview.window(rt.now_ms()).map_err(bad)?;
        let csv = match query.format.as_deref().unwrap_or("csv") {
            "csv" => true,
            "json" => false,
            other => return Err(bad(format!("No format `{other}`: csv or json."))),
        };
        let ov = overview::read(rt.store(), &window, rt.now_ms())?;
        let Some(panel) = query.panel.as_deref() else {
            if csv {
                return Err(bad("CSV is by panel: add `panel=`.".into()));
            }
            return Ok(download(
                "overview.json",
                "application/json",
                serde_json::to_string_pretty(&ov).unwrap_or_default(),
            ));
        };
        let all = tables(&ov);
        let Some((_, _, table)) = all.iter().find(|(id, ..)| *id == panel) else {
            let ids: Vec<&str> = all.iter().map(|(id, ..)| *id).collect();
            return Err(ApiError::new(
                codes::NOT_FOUND,
                format!("No panel `{panel}`: {}.", ids.join(", ")),
            ));
        };
        Ok(if csv {
            download(
                &format!("{panel}.csv"),
                "text/csv; charset=utf-8",
                table.csv(),
            )
        } else {
            download(
                &format!("{panel}.json"),
                "application/json",
                table.json().to_string(),
            )
        })
    })
    .await;
    match answer {
        Ok(Ok(response)) => response,
        Ok(Err(e)) => e.into_response(),
        Err(e) => ApiError::new(codes::INTERNAL, e.to_string()).into_response(),
    }
}

fn download(name: &str, kind: &'static str, body: String) -> Response {
    (
        [
            (header::CONTENT_TYPE, kind.to_string()),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"tollgate-{name}\""),
            ),
            (header::CACHE_CONTROL, "no-store".to_string()),
        ],
        body,
    )
        .into_response()
}

fn filters(q: &OverviewQuery) -> Markup {
    let range = q.range_asked();
    html! {
        form.filters method="get" action="/ui" {
            label { "Time" select name="range" {
                @for (name, label, _) in RANGES {
                    option value=(name) selected[range == name] { (label) }
                }
                option value="custom" selected[range == "custom"] { "From … to … (UTC)" }
            } }
            label { "From (UTC)" input type="datetime-local" name="from" value=[q.from.as_deref()]; }
            label { "To (UTC)" input type="datetime-local" name="to" value=[q.to.as_deref()]; }
            label { "Agent" input type="text" name="agent" value=[q.agent.as_deref()]; }
            label { "Task" input type="text" name="task" value=[q.task.as_deref()]; }
            button type="submit" { "Show" }
        }
    }
}

/// The five effects, as plot series, most permissive first.
const EFFECTS: [(DecisionEffect, Series); 5] = [
    (
        DecisionEffect::Allow,
        Series {
            name: "allow",
            class: "effect-allow",
        },
    ),
    (
        DecisionEffect::Redact,
        Series {
            name: "redact",
            class: "effect-redact",
        },
    ),
    (
        DecisionEffect::RequireApproval,
        Series {
            name: "require approval",
            class: "effect-require_approval",
        },
    ),
    (
        DecisionEffect::RateLimited,
        Series {
            name: "rate limited",
            class: "effect-rate_limited",
        },
    ),
    (
        DecisionEffect::Deny,
        Series {
            name: "deny",
            class: "effect-deny",
        },
    ),
];

/// A bar's label: the time of day within a day, the date (and time) beyond.
fn bar_label(start: &str, step: i64) -> String {
    match step {
        s if s < 3 * 3_600 => start.get(11..16).unwrap_or(start).to_string(),
        s if s < 86_400 => format!(
            "{} {}",
            start.get(5..10).unwrap_or(""),
            start.get(11..16).unwrap_or("")
        ),
        _ => start.get(0..10).unwrap_or(start).to_string(),
    }
}

/// The receipts behind a bar or a row: `/ui/decisions` for the window and the runs.
fn drill_href(w: &Window, since: i64, until: i64, drill: &Drill) -> String {
    let mut q = vec![format!("since={since}"), format!("until={until}")];
    if let Some(e) = drill.effect {
        q.push(format!("effect={}", e.as_str()));
    }
    for (k, v) in [
        ("rule", &drill.rule),
        ("tool", &drill.tool),
        ("agent", &w.agent),
        ("task", &w.task),
    ] {
        if let Some(v) = v {
            q.push(format!("{k}={}", encode(v)));
        }
    }
    format!("/ui/decisions?{}", q.join("&"))
}

/// Every panel's numbers: its id, its caption and its table.
fn tables(ov: &Overview) -> Vec<(&'static str, &'static str, Table)> {
    let counts = |rows: &[Count], what: &'static str| Table {
        columns: vec![what, "count"],
        rows: rows
            .iter()
            .map(|c| vec![c.name.clone(), c.n.to_string()])
            .collect(),
    };
    let reasons = |rows: &[overview::Reason], what: &'static str| Table {
        columns: vec!["effect", what, "decisions"],
        rows: rows
            .iter()
            .map(|r| {
                vec![
                    r.effect.as_str().to_string(),
                    r.name.clone(),
                    r.n.to_string(),
                ]
            })
            .collect(),
    };
    let mut decisions = Table {
        columns: vec![
            "start",
            "allow",
            "redact",
            "require_approval",
            "rate_limited",
            "deny",
        ],
        rows: Vec::new(),
    };
    for bar in &ov.decisions {
        let mut row = vec![bar.start.clone()];
        row.extend(bar.counts.values().iter().map(i64::to_string));
        decisions.rows.push(row);
    }
    let a = &ov.approvals;
    let r = &ov.regressions;
    let latency = |pick: fn(&overview::LatencyBar) -> Option<overview::Percentiles>| Table {
        columns: vec!["start", "calls", "p50_us", "p99_us"],
        rows: ov
            .latency
            .iter()
            .filter_map(|bar| {
                pick(bar).map(|p| {
                    vec![
                        bar.start.clone(),
                        p.count.to_string(),
                        p.p50_us.to_string(),
                        p.p99_us.to_string(),
                    ]
                })
            })
            .collect(),
    };
    vec![
        ("decisions", "Decisions over time, by effect", decisions),
        (
            "latency_tool_call",
            "Tool-call decisions: time from arrival to decision, in microseconds",
            latency(|b| b.tool_call),
        ),
        (
            "latency_chat",
            "Chat calls: the model's round trip, in microseconds",
            latency(|b| b.chat),
        ),
        (
            "rules",
            "Rules behind decisions not allowed",
            reasons(&ov.rules, "rule"),
        ),
        (
            "tools",
            "Tools behind calls not allowed",
            reasons(&ov.tools, "tool"),
        ),
        (
            "waiting",
            "Approvals waiting now, oldest first",
            Table {
                columns: vec!["approval", "tool", "run", "requested_at", "waiting_seconds"],
                rows: a
                    .waiting
                    .iter()
                    .map(|w| {
                        vec![
                            w.id.clone(),
                            w.tool.clone(),
                            w.run.clone(),
                            w.requested_at.clone(),
                            w.age_secs.to_string(),
                        ]
                    })
                    .collect(),
            },
        ),
        (
            "approvals",
            "Approvals answered or expired in the window",
            counts(&a.decided, "answer"),
        ),
        (
            "time_to_decide",
            "Time a person took to answer",
            counts(&a.time_to_decide, "took"),
        ),
        (
            "suites",
            "Regression suite runs, oldest first",
            Table {
                columns: vec![
                    "suite",
                    "finished_at",
                    "cases",
                    "passed",
                    "flaky",
                    "failed",
                    "errors",
                ],
                rows: r
                    .suites
                    .iter()
                    .map(|s| {
                        vec![
                            s.id.clone(),
                            s.finished_at.clone(),
                            s.cases.to_string(),
                            s.passed.to_string(),
                            s.flaky.to_string(),
                            s.failed.to_string(),
                            s.errors.to_string(),
                        ]
                    })
                    .collect(),
            },
        ),
        (
            "signatures",
            "The newest suite run's failures by signature",
            counts(&r.signatures, "signature"),
        ),
        (
            "memories",
            "Memories by status and class",
            counts(&ov.memories, "status/class"),
        ),
        (
            "memories_used",
            "Memories compiles used in the window, by class",
            counts(&ov.memories_used, "class"),
        ),
        ("cases", "Cases by state", counts(&ov.cases, "state")),
        (
            "proposals",
            "Case proposals by state, from proposed to committed",
            counts(&ov.proposals, "state"),
        ),
        (
            "commits",
            "Case commits by state",
            counts(&ov.commits, "state"),
        ),
        (
            "violations",
            "Handoff violations in the window, by code",
            counts(&ov.handoffs.violations, "code"),
        ),
        (
            "contracts",
            "Handoff contracts made in the window, by state",
            counts(&ov.handoffs.contracts, "state"),
        ),
    ]
}

/// What a panel missing from [`tables`] shows (none is: each id is written twice, here and
/// there).
static NO_TABLE: Table = Table {
    columns: Vec::new(),
    rows: Vec::new(),
};

/// A plot with its table and downloads.
fn panel(id: &str, plot: Markup, caption: &str, table: &Table, params: &str) -> Markup {
    let href = |format: &str| {
        let sep = if params.is_empty() { "" } else { "&" };
        format!("/ui/overview/data?panel={id}&format={format}{sep}{params}")
    };
    html! {
        div.panel id=(format!("panel-{id}")) {
            (plot)
            details.numbers {
                summary { "The numbers" }
                (table.html(caption))
            }
            p.downloads {
                "Download: " a href=(href("csv")) download { "CSV" } " · " a href=(href("json")) download { "JSON" }
            }
        }
    }
}

/// A horizontal plot of counts, no links.
fn count_plot(id: &str, title: &str, desc: &str, rows: &[Count], class: &'static str) -> Markup {
    let rows: Vec<(String, u64, &'static str, Option<String>)> = rows
        .iter()
        .map(|c| (c.name.clone(), c.n, class, None))
        .collect();
    charts::horizontal(id, title, desc, &rows)
}

fn content(q: &OverviewQuery, ov: &Overview) -> Markup {
    let params = q.params();
    let all = tables(ov);
    let table = |id: &str| -> (&'static str, &Table) {
        all.iter()
            .find(|(i, ..)| *i == id)
            .map_or(("", &NO_TABLE), |(_, caption, t)| (*caption, t))
    };
    let w = &ov.window;
    let step = ov.step_secs;
    let denied = ov.totals.deny;
    let total = ov.totals.total();
    let last_suite = ov.regressions.suites.last();
    let oldest = ov.approvals.waiting.first();
    let columns: Vec<Column> = ov
        .decisions
        .iter()
        .map(|bar| {
            let end = (bar.start_secs + step).min(w.until);
            let since = bar.start_secs.max(w.since);
            Column {
                label: bar_label(&bar.start, step),
                values: EFFECTS.iter().map(|(e, _)| bar.counts.of(*e)).collect(),
                links: EFFECTS
                    .iter()
                    .map(|(e, _)| {
                        (*e != DecisionEffect::Allow).then(|| {
                            drill_href(
                                w,
                                since,
                                end,
                                &Drill {
                                    effect: Some(*e),
                                    ..Drill::default()
                                },
                            )
                        })
                    })
                    .collect(),
            }
        })
        .collect();
    let series: Vec<Series> = EFFECTS.iter().map(|(_, s)| *s).collect();
    let reason_rows = |reasons: &[overview::Reason],
                       by_rule: bool|
     -> Vec<(String, u64, &'static str, Option<String>)> {
        reasons
            .iter()
            .map(|r| {
                let drill = Drill {
                    effect: Some(r.effect),
                    rule: by_rule.then(|| r.name.clone()),
                    tool: (!by_rule).then(|| r.name.clone()),
                };
                let class = EFFECTS
                    .iter()
                    .find(|(e, _)| *e == r.effect)
                    .map_or("", |(_, s)| s.class);
                (
                    format!("{} · {}", r.name, r.effect.as_str()),
                    r.n,
                    class,
                    Some(drill_href(w, w.since, w.until, &drill)),
                )
            })
            .collect()
    };
    let window_words = format!(
        "from {} to {}",
        rfc3339(u64::try_from(w.since).unwrap_or(0)),
        rfc3339(u64::try_from(w.until).unwrap_or(0))
    );
    html! {
        h1 { "Overview" }
        (filters(q))
        p.muted {
            "Counted " (window_words) " (UTC)"
            @if let Some(a) = &w.agent { ", agent " code { (a) } }
            @if let Some(t) = &w.task { ", task " code { (t) } }
            ". Memories, cases and suites are counted whenever they are."
        }
        section.glance aria-label="At a glance" {
            div.stat {
                span.figure { (total) } span.what { "decisions" }
            }
            div.stat.effect-deny {
                span.figure { (denied) } span.what { "denied"
                    @if total > 0 { " (" (denied * 100 / total) "%)" } }
            }
            div.stat {
                span.figure { (ov.approvals.waiting_total) }
                span.what {
                    a href="/ui/approvals" { "waiting for approval" }
                    @if let Some(o) = oldest { ", oldest " (age(o.age_secs)) }
                }
            }
            div.stat class=(match last_suite { Some(s) if s.green() => "stat effect-allow", Some(_) => "stat effect-deny", None => "stat" }) {
                @match last_suite {
                    Some(s) => {
                        span.figure { (s.passed) "/" (s.cases) }
                        span.what { a href="/ui/regressions" { "regression suite " (if s.green() { "green" } else { "red" }) } }
                    }
                    None => { span.figure { "—" } span.what { a href="/ui/regressions" { "no regression suite run yet" } } }
                }
            }
        }

        h2 { "Decisions over time" }
        @if total == 0 {
            (empty("No decision in this window.", html! {
                "Decisions are counted as the gateway records them. Try a longer range, or record some: "
                code.command { "tollgate demo seed" } ". Decisions recorded before this version are counted by "
                code.command { "tollgate db recount" } "."
            }))
        } @else {
            @let (caption, t) = table("decisions");
            (panel("decisions", charts::stacked("plot-decisions", "Decisions over time, by effect",
                &format!("{total} decisions {window_words}, {denied} denied; one bar per {}; a segment opens its receipts.", age(step)),
                &series, &columns), caption, t, &params))
        }

        h2 { "Latency" }
        div.side-by-side {
            @for (id, title, desc, pick) in [
                ("latency_tool_call", "Tool-call decisions", "The median and 99th percentile of the time from a tool call's arrival to its decision (the write that records it excluded), per bar.", (|b: &overview::LatencyBar| b.tool_call) as fn(&overview::LatencyBar) -> Option<overview::Percentiles>),
                ("latency_chat", "Chat calls", "The median and 99th percentile of a chat call's round trip to the model, per bar.", |b: &overview::LatencyBar| b.chat),
            ] {
                div {
                    h3 { (title) }
                    @if w.task.is_some() {
                        p.muted { "Latency is kept by agent, not by task: clear the task to see it." }
                    } @else if ov.latency.iter().all(|b| pick(b).is_none()) {
                        p.muted { "None timed in this window." }
                    } @else {
                        @let (caption, t) = table(id);
                        @let labels: Vec<String> = ov.latency.iter().map(|b| bar_label(&b.start, step)).collect();
                        @let p50: Vec<Option<u64>> = ov.latency.iter().map(|b| pick(b).map(|p| p.p50_us)).collect();
                        @let p99: Vec<Option<u64>> = ov.latency.iter().map(|b| pick(b).map(|p| p.p99_us)).collect();
                        (panel(id, charts::lines(&format!("plot-{id}"), title, desc,
                            &[Series { name: "p50", class: "lat-p50" }, Series { name: "p99", class: "lat-p99" }],
                            &labels, &[p50, p99]), caption, t, &params))
                    }
                }
            }
        }

        h2 { "Why decisions were not allowed" }
        p.muted { "Counted by the hour, over the hours this window touches." }
        @if ov.rules.is_empty() {
            p.muted { "Every decision in this window was allowed." }
        } @else {
            div.side-by-side {
                div {
                    h3 { "By rule" }
                    @let (caption, t) = table("rules");
                    (panel("rules", charts::horizontal("plot-rules", "Rules behind decisions not allowed",
                        "The deciding rules of the decisions denied, redacted, held for approval or rate limited, most first; a bar opens their receipts.",
                        &reason_rows(&ov.rules, true)), caption, t, &params))
                }
                div {
                    h3 { "By tool" }
                    @if ov.tools.is_empty() {
                        p.muted { "No tool call was refused or held." }
                    } @else {
                        @let (caption, t) = table("tools");
                        (panel("tools", charts::horizontal("plot-tools", "Tools behind calls not allowed",
                            "The tools of the calls denied, redacted, held for approval or rate limited, most first; a bar opens their receipts.",
                            &reason_rows(&ov.tools, false)), caption, t, &params))
                    }
                }
            }
        }

        h2 { "Approvals" }
        div.side-by-side {
            div {
                h3 { "Waiting now" }
                @if ov.approvals.waiting.is_empty() {
                    p.muted { "Nothing waits for approval." }
                } @else {
                    div.scroll { table {
                        caption.visually-hidden { "Approvals waiting, oldest first" }
                        thead { tr { th scope="col" { "Tool" } th scope="col" { "Run" } th scope="col" { "Waiting" } } }
                        tbody { @for wt in &ov.approvals.waiting { tr {
                            td { a href="/ui/approvals" { code { (wt.tool) } } }
                            td { a href=(run_href(&wt.run)) { code { (wt.run) } } }
                            td { (age(wt.age_secs)) }
                        } } }
                    } }
                    @if ov.approvals.waiting_total > ov.approvals.waiting.len() as u64 {
                        p { a href="/ui/approvals" { "All " (ov.approvals.waiting_total) " waiting" } }
                    }
                }
                @let (caption, t) = table("approvals");
                (panel("approvals", count_plot("plot-approvals", "Approvals answered or expired",
                    "Approvals approved, rejected or left to expire in this window.", &ov.approvals.decided, "effect-require_approval"), caption, t, &params))
            }
            div {
                h3 { "Time a person took" }
                @let (caption, t) = table("time_to_decide");
                (panel("time_to_decide", charts::stacked("plot-time_to_decide", "Time a person took to answer an approval",
                    "How many approvals answered in this window took each length of time.",
                    &[Series { name: "approvals", class: "effect-require_approval" }],
                    &ov.approvals.time_to_decide.iter().map(|c| Column { label: c.name.clone(), values: vec![c.n], links: vec![None] }).collect::<Vec<_>>()),
                    caption, t, &params))
            }
        }

        h2 { "Regression suites" }
        @if ov.regressions.suites.is_empty() {
            (empty("No regression suite has run.", html! {
                "Cut cases from runs and run them: " code.command { "tollgate regress run" } "."
            }))
        } @else {
            @let (caption, t) = table("suites");
            (panel("suites", charts::stacked("plot-suites", "Regression suite runs",
                "The cases of each of the last suite runs, by result, oldest first.",
                &[Series { name: "passed", class: "effect-allow" }, Series { name: "flaky", class: "effect-redact" },
                  Series { name: "failed", class: "effect-deny" }, Series { name: "errors", class: "label-neutral" }],
                &ov.regressions.suites.iter().map(|s| Column {
                    label: s.id.clone(),
                    values: vec![u64::from(s.passed), u64::from(s.flaky), u64::from(s.failed), u64::from(s.errors)],
                    links: vec![None; 4],
                }).collect::<Vec<_>>()), caption, t, &params))
            @if !ov.regressions.flaky.is_empty() {
                p { "Flaky in the newest run: " @for (i, c) in ov.regressions.flaky.iter().enumerate() {
                    @if i > 0 { ", " } a href=(format!("/ui/regressions/{}", encode(c))) { code { (c) } } } }
            }
            @if !ov.regressions.signatures.is_empty() {
                @let (caption, t) = table("signatures");
                h3 { "Newest failure signatures" }
                (panel("signatures", count_plot("plot-signatures", "Failures by signature",
                    "The newest suite run's failed cases, by failure signature.", &ov.regressions.signatures, "effect-deny"), caption, t, &params))
            }
        }

        h2 { "Memories, cases and handoffs" }
        div.side-by-side {
            @for (id, title, desc, rows, class) in [
                ("memories", "Memories by status and class", "Every memory, by review status and class.", &ov.memories, "effect-allow"),
                ("memories_used", "Memories used in compiles", "The memories compiles put in context in this window, by class (a memory used twice counts twice).", &ov.memories_used, "effect-allow"),
                ("cases", "Cases by state", "Every case, by the state it is in.", &ov.cases, "effect-require_approval"),
                ("proposals", "Case proposals, from proposed to committed", "Every case proposal, by the state it is in, in the order a proposal passes through them.", &ov.proposals, "effect-require_approval"),
                ("commits", "Case commits by state", "Every case commit, by state; refused ones by the refusal's code.", &ov.commits, "effect-redact"),
                ("violations", "Handoff violations", "Violations of handoff contracts found on delivery in this window, by code.", &ov.handoffs.violations, "effect-deny"),
                ("contracts", "Handoff contracts", "Handoff contracts made in this window, by state.", &ov.handoffs.contracts, "effect-allow"),
            ] {
                div {
                    h3 { (title) }
                    @if rows.is_empty() {
                        p.muted { "None." }
                    } @else {
                        @let (caption, t) = table(id);
                        (panel(id, count_plot(&format!("plot-{id}"), title, desc, rows, class), caption, t, &params))
                    }
                }
            }
        }
        p.downloads { "Everything on this page: " a href=(format!("/ui/overview/data?format=json{}{params}", if params.is_empty() { "" } else { "&" })) download { "JSON" } }
    }
}

/// A duration in words (`45 s`, `12 min`, `3 h`, `2 d`).
fn age(secs: i64) -> String {
    match secs {
        s if s < 60 => format!("{s} s"),
        s if s < 3_600 => format!("{} min", s / 60),
        s if s < 86_400 => format!("{} h", s / 3_600),
        s => format!("{} d", s / 86_400),
    }
}

/// `/ui/decisions`'s query: the window in seconds, the runs, and which decisions.
#[derive(Debug, Deserialize)]
pub struct DecisionsQuery {
    since: i64,
    until: i64,
    #[serde(default)]
    agent: Option<String>,
    #[serde(default)]
    task: Option<String>,
    #[serde(flatten)]
    drill: Drill,
}

/// Receipts listed on the drill-down page.
pub const DRILL_PAGE: usize = 50;

/// `GET /ui/decisions`: the receipts behind a bar of the overview.
pub async fn decisions(
    State(state): State<AppState>,
    viewer: Viewer,
    Query(q): Query<DecisionsQuery>,
) -> Response {
    blocking_page(&state, &viewer, "Decisions", "/ui", move |rt| {
        let window = Window {
            since: q.since,
            until: q.until,
            agent: q.agent.clone().filter(|s| !s.is_empty()),
            task: q.task.clone().filter(|s| !s.is_empty()),
        };
        let (rows, more) = overview::drill(rt, &window, &q.drill, DRILL_PAGE)?;
        let from = rfc3339(u64::try_from(q.since).unwrap_or(0));
        let to = rfc3339(u64::try_from(q.until).unwrap_or(0));
        Ok(html! {
            p.crumbs { a href="/ui" { "Overview" } " / decisions" }
            h1 {
                "Decisions"
                @if let Some(e) = q.drill.effect { " " (effect(e)) }
            }
            p.muted {
                "From " (from) " to " (to)
                @if let Some(r) = &q.drill.rule { ", decided by rule " code { (r) } }
                @if let Some(t) = &q.drill.tool { ", calls of tool " code { (t) } }
                @if let Some(a) = &window.agent { ", agent " code { (a) } }
                @if let Some(t) = &window.task { ", task " code { (t) } }
                ", newest run first."
            }
            @if rows.is_empty() {
                (empty("No recorded decision matches.", html! { a href="/ui" { "Back to the overview" } }))
            } @else {
                div.scroll { table {
                    caption.visually-hidden { "Matching decisions" }
                    thead { tr {
                        th scope="col" { "When" } th scope="col" { "Run" } th scope="col" { "Agent" }
                        th scope="col" { "What" } th scope="col" { "Effect" } th scope="col" { "Rules" }
                        th scope="col" { "Receipt" }
                    } }
                    tbody { @for r in &rows { tr {
                        td { (r.at) }
                        td { a href=(run_href(&r.run)) { code { (r.run) } } }
                        td { (r.agent) }
                        td { (r.kind.as_str()) @if let Some(t) = &r.tool { " " code { (t) } } @if let Some(i) = &r.item { " " code { (i) } } }
                        td { (effect(r.effect)) }
                        td { @for rule in &r.rules { code { (rule) } " " } }
                        td { a href=(receipt_href(&r.run, r.seq, r.item.as_deref())) { "Receipt " (r.seq) } }
                    } } }
                } }
                @if more { p.muted { "The first " (rows.len()) " are shown; narrow the window to see the rest." } }
            }
        })
    })
    .await
}
