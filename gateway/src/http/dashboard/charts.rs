//! Plots drawn on the server as SVG inside the page: no script, no build step, nothing from
//! outside. Each is an `img` for screen readers, named by its `<title>` and described by its
//! `<desc>`, and is shown with a [`Table`] of the same numbers that can be downloaded as CSV or
//! JSON. Drawn here rather than with a plotting crate because a bar must be a link (a denial
//! bar opens its receipts), colours come from the stylesheet (one palette with the badges),
//! and the text stays text a browser can search and zoom.

use maud::{Markup, html};
use serde_json::{Map, Value};

/// The numbers of a plot: its columns and rows, shown as a table and downloaded as CSV or JSON.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Table {
    /// The columns' names.
    pub columns: Vec<&'static str>,
    /// The rows, each cell as text.
    pub rows: Vec<Vec<String>>,
}

impl Table {
    /// As CSV (RFC 4180; a cell a spreadsheet would read as a formula is prefixed with `'`:
    /// tool and rule names come from agents and envelopes).
    pub fn csv(&self) -> String {
        let line = |cells: &mut dyn Iterator<Item = &str>| {
            cells.map(csv_cell).collect::<Vec<_>>().join(",") + "\r\n"
        };
        let mut out = line(&mut self.columns.iter().copied());
        for row in &self.rows {
            out.push_str(&line(&mut row.iter().map(String::as_str)));
        }
        out
    }

    /// As JSON: an array of objects keyed by column, numbers as numbers.
    pub fn json(&self) -> Value {
        Value::Array(
            self.rows
                .iter()
                .map(|row| {
                    let object: Map<String, Value> = self
                        .columns
                        .iter()
                        .zip(row)
                        .map(|(k, v)| {
                            let value = v
                                .parse::<i64>()
                                .map(Value::from)
                                .unwrap_or_else(|_| Value::from(v.as_str()));
                            ((*k).to_string(), value)
                        })
                        .collect();
                    Value::Object(object)
                })
                .collect(),
        )
    }

    /// As an HTML table.
    pub fn html(&self, caption: &str) -> Markup {
        html! {
            div.scroll {
                table {
                    caption { (caption) }
                    thead { tr { @for c in &self.columns { th scope="col" { (c) } } } }
                    tbody {
                        @for row in &self.rows {
                            tr {
                                @for cell in row {
                                    @if cell.parse::<i64>().is_ok() { td.num { (cell) } } @else { td { (cell) } }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

fn csv_cell(cell: &str) -> String {
    let cell = if cell.starts_with(['=', '+', '-', '@', '\t', '\r']) && cell.parse::<f64>().is_err()
    {
        format!("'{cell}")
    } else {
        cell.to_string()
    };
    if cell.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", cell.replace('"', "\"\""))
    } else {
        cell
    }
}

/// One series of a stacked plot: its name and its CSS class (its colour).
#[derive(Debug, Clone, Copy)]
pub struct Series {
    /// Its name, in the legend and tooltips.
    pub name: &'static str,
    /// Its class (`effect-deny`...), which gives it its colour.
    pub class: &'static str,
}

/// One bar of a stacked plot: its label and a value per series, each maybe a link.
#[derive(Debug, Clone)]
pub struct Column {
    /// Under the bar (the first, middle and last are printed), and in tooltips.
    pub label: String,
    /// A value per series, in the series' order.
    pub values: Vec<u64>,
    /// Where a click on each segment goes, in the series' order.
    pub links: Vec<Option<String>>,
}

const WIDTH: u32 = 720;
const HEIGHT: u32 = 220;
const LEFT: u32 = 48;
const BOTTOM: u32 = 28;
const TOP: u32 = 10;

/// A segment of a stacked bar, placed.
struct Segment {
    class: &'static str,
    x: f64,
    y: f64,
    width: f64,
    height: f64,
    tip: String,
    href: Option<String>,
}

/// A stacked bar plot of `columns` by `series`, with a legend.
pub fn stacked(id: &str, title: &str, desc: &str, series: &[Series], columns: &[Column]) -> Markup {
    let max = columns
        .iter()
        .map(|c| c.values.iter().sum::<u64>())
        .max()
        .unwrap_or(0);
    let top = nice(max);
    let plot_w = f64::from(WIDTH - LEFT - 8);
    let slot = plot_w / columns.len().max(1) as f64;
    let bar = (slot * 0.8).max(1.0);
    let y = |v: u64| y_at(v, top);
    let mut segments = Vec::new();
    let mut labels = Vec::new();
    for (i, c) in columns.iter().enumerate() {
        let x = f64::from(LEFT) + slot * i as f64 + (slot - bar) / 2.0;
        let mut base = 0_u64;
        for (k, (s, v)) in series.iter().zip(&c.values).enumerate() {
            if *v == 0 {
                continue;
            }
            let (y0, y1) = (y(base), y(base + v));
            segments.push(Segment {
                class: s.class,
                x,
                y: y1,
                width: bar,
                height: (y0 - y1).max(0.5),
                tip: format!("{}: {} {}", c.label, v, s.name),
                href: c.links.get(k).cloned().flatten(),
            });
            base += v;
        }
        if let Some(anchor) = anchor(i, columns.len()) {
            let at = match anchor {
                "start" => x,
                "end" => x + bar,
                _ => x + bar / 2.0,
            };
            labels.push((at, anchor, c.label.clone()));
        }
    }
    let body = html! {
        @for s in &segments {
            @let rect = html! {
                rect class=(format!("bar {}", s.class)) x=(fmt(s.x)) y=(fmt(s.y))
                    width=(fmt(s.width)) height=(fmt(s.height)) { title { (s.tip) } }
            };
            @match &s.href {
                Some(href) => { a href=(href) aria-label=(s.tip) { (rect) } }
                None => { (rect) }
            }
        }
    };
    html! {
        figure.plot {
            (frame(id, title, desc, top, &|t| t.to_string(), &labels, body))
            @if series.len() > 1 {
                figcaption.legend {
                    @for s in series {
                        span class=(format!("key {}", s.class)) { span.swatch aria-hidden="true" {} (s.name) }
                    }
                }
            }
        }
    }
}

/// Where an x label under column `i` of `n` is anchored: the first, the middle and the last
/// are labelled, the others not.
fn anchor(i: usize, n: usize) -> Option<&'static str> {
    if i == 0 {
        Some("start")
    } else if i + 1 == n {
        Some("end")
    } else if i == n / 2 {
        Some("middle")
    } else {
        None
    }
}

/// The height of `v` on an axis from 0 to `top`.
fn y_at(v: u64, top: u64) -> f64 {
    let plot_h = f64::from(HEIGHT - BOTTOM - TOP);
    f64::from(TOP) + plot_h - plot_h * (v as f64) / (top.max(1) as f64)
}

/// The frame a vertical plot is drawn in: the `img` with its title and description, three
/// ticks labelled by `tick`, `body`, the x labels and the axis.
fn frame(
    id: &str,
    title: &str,
    desc: &str,
    top: u64,
    tick: &dyn Fn(u64) -> String,
    labels: &[(f64, &'static str, String)],
    body: Markup,
) -> Markup {
    html! {
        svg id=(id) viewBox=(format!("0 0 {WIDTH} {HEIGHT}")) role="img"
            aria-labelledby=(format!("{id}-title {id}-desc")) preserveAspectRatio="xMinYMin meet" {
            title id=(format!("{id}-title")) { (title) }
            desc id=(format!("{id}-desc")) { (desc) }
            @for t in [0, top / 2, top] {
                line.grid x1=(LEFT) x2=(WIDTH - 8) y1=(fmt(y_at(t, top))) y2=(fmt(y_at(t, top))) {}
                text.tick x=(LEFT - 6) y=(fmt(y_at(t, top) + 4.0)) text-anchor="end" { (tick(t)) }
            }
            (body)
            @for (x, anchor, label) in labels {
                text.tick x=(fmt(*x)) y=(HEIGHT - 8) text-anchor=(anchor) { (label) }
            }
            line.axis x1=(LEFT) x2=(WIDTH - 8) y1=(fmt(y_at(0, top))) y2=(fmt(y_at(0, top))) {}
        }
    }
}

/// A line per series over `labels`, a point per value (none where a value is missing, and the
/// line broken there); values are microseconds, the axis in words (`850 µs`, `1.2 ms`).
pub fn lines(
    id: &str,
    title: &str,
    desc: &str,
    series: &[Series],
    labels: &[String],
    values: &[Vec<Option<u64>>],
) -> Markup {
    let max = values
        .iter()
        .flatten()
        .flatten()
        .copied()
        .max()
        .unwrap_or(0);
    let top = nice(max);
    let plot_w = f64::from(WIDTH - LEFT - 8);
    let slot = plot_w / labels.len().max(1) as f64;
    let x = |i: usize| f64::from(LEFT) + slot * i as f64 + slot / 2.0;
    let y = |v: u64| y_at(v, top);
    // Each series' runs of consecutive points, as polyline coordinates, and its points.
    let mut paths: Vec<(&'static str, String)> = Vec::new();
    let mut points: Vec<(&'static str, f64, f64, String)> = Vec::new();
    for (s, vals) in series.iter().zip(values) {
        let mut run: Vec<String> = Vec::new();
        for (i, v) in vals.iter().enumerate() {
            match v {
                Some(v) => {
                    run.push(format!("{},{}", fmt(x(i)), fmt(y(*v))));
                    let label = labels.get(i).map_or("", String::as_str);
                    points.push((
                        s.class,
                        x(i),
                        y(*v),
                        format!("{label}: {} {}", s.name, duration(*v)),
                    ));
                }
                None if !run.is_empty() => {
                    paths.push((s.class, std::mem::take(&mut run).join(" ")))
                }
                None => {}
            }
        }
        if !run.is_empty() {
            paths.push((s.class, run.join(" ")));
        }
    }
    let n = labels.len();
    let ticks: Vec<(f64, &'static str, String)> = labels
        .iter()
        .enumerate()
        .filter_map(|(i, l)| anchor(i, n).map(|a| (x(i), a, l.clone())))
        .collect();
    let body = html! {
        @for (class, coords) in &paths {
            polyline class=(format!("line {class}")) points=(coords) {}
        }
        @for (class, px, py, tip) in &points {
            circle class=(format!("point {class}")) cx=(fmt(*px)) cy=(fmt(*py)) r="3" { title { (tip) } }
        }
    };
    html! {
        figure.plot {
            (frame(id, title, desc, top, &duration, &ticks, body))
            figcaption.legend {
                @for s in series {
                    span class=(format!("key {}", s.class)) { span.swatch aria-hidden="true" {} (s.name) }
                }
            }
        }
    }
}

/// Microseconds in words: `850 µs`, `1.2 ms`, `3.4 s`.
pub fn duration(micros: u64) -> String {
    match micros {
        m if m < 1_000 => format!("{m} µs"),
        m if m < 1_000_000 => format!("{:.1} ms", m as f64 / 1_000.0),
        m => format!("{:.1} s", m as f64 / 1_000_000.0),
    }
}

/// A horizontal bar per row (a rule, a tool), each a link when it has one.
pub fn horizontal(
    id: &str,
    title: &str,
    desc: &str,
    rows: &[(String, u64, &'static str, Option<String>)],
) -> Markup {
    let max = rows.iter().map(|r| r.1).max().unwrap_or(0).max(1);
    let row_h = 26_u32;
    let height = row_h * u32::try_from(rows.len().max(1)).unwrap_or(1) + 4;
    let (label_w, bar_w) = (260.0, f64::from(WIDTH) - 260.0 - 60.0);
    html! {
        figure.plot {
            svg id=(id) viewBox=(format!("0 0 {WIDTH} {height}")) role="img"
                aria-labelledby=(format!("{id}-title {id}-desc")) preserveAspectRatio="xMinYMin meet" {
                title id=(format!("{id}-title")) { (title) }
                desc id=(format!("{id}-desc")) { (desc) }
                @for (i, (label, n, class, href)) in rows.iter().enumerate() {
                    @let top = f64::from(row_h) * i as f64 + 2.0;
                    @let w = (bar_w * (*n as f64) / (max as f64)).max(1.0);
                    @let tip = format!("{label}: {n}");
                    @let body = html! {
                        text.label x=(fmt(label_w - 8.0)) y=(fmt(top + 17.0)) text-anchor="end" { (clip_label(label)) }
                        rect class=(format!("bar {class}")) x=(fmt(label_w)) y=(fmt(top + 4.0)) width=(fmt(w)) height="18" {
                            title { (tip) }
                        }
                        text.tick x=(fmt(label_w + w + 6.0)) y=(fmt(top + 17.0)) { (n) }
                    };
                    @match href {
                        Some(href) => { a href=(href) aria-label=(tip) { (body) } }
                        None => { g { (body) } }
                    }
                }
            }
        }
    }
}

/// A label short enough for the plot's left column (the table shows it whole).
fn clip_label(label: &str) -> String {
    const MAX: usize = 36;
    if label.chars().count() <= MAX {
        label.to_string()
    } else {
        let head: String = label.chars().take(MAX - 1).collect();
        format!("{head}…")
    }
}

/// The axis's top: the least of 1, 2 and 4 times a power of ten that is at least `max` (and
/// at least 1), so the middle tick is a whole number.
fn nice(max: u64) -> u64 {
    let mut unit = 1_u64;
    loop {
        for m in [1, 2, 4] {
            let top = unit.saturating_mul(m);
            if max <= top || top == u64::MAX {
                return top;
            }
        }
        unit = unit.saturating_mul(10);
    }
}

/// A coordinate, with one decimal.
fn fmt(v: f64) -> String {
    format!("{v:.1}")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[test]
    fn the_axis_top_is_round_even_and_above_the_highest_bar() {
        for (max, top) in [
            (0, 1),
            (1, 1),
            (2, 2),
            (3, 4),
            (7, 10),
            (11, 20),
            (150, 200),
            (2001, 4_000),
        ] {
            assert_eq!(nice(max), top, "max {max}");
        }
    }

    #[test]
    fn a_line_breaks_where_a_value_is_missing() {
        let series = [Series {
            name: "p50",
            class: "lat-p50",
        }];
        let labels: Vec<String> = ["a", "b", "c", "d"].map(String::from).to_vec();
        let svg = lines(
            "l",
            "Latency",
            "p50",
            &series,
            &labels,
            &[vec![Some(10), None, Some(1_500), Some(2_000)]],
        )
        .into_string();
        assert_eq!(svg.matches("<polyline").count(), 2, "{svg}");
        assert_eq!(svg.matches("<circle").count(), 3);
        assert!(svg.contains("<title>c: p50 1.5 ms</title>"), "{svg}");
        assert_eq!(duration(999), "999 µs");
        assert_eq!(duration(2_500_000), "2.5 s");
    }

    #[test]
    fn csv_quotes_what_it_must_and_defuses_formulas() {
        let t = Table {
            columns: vec!["tool", "n"],
            rows: vec![
                vec!["=HYPERLINK(\"x\")".into(), "3".into()],
                vec!["a,b".into(), "-4".into()],
            ],
        };
        assert_eq!(
            t.csv(),
            "tool,n\r\n\"'=HYPERLINK(\"\"x\"\")\",3\r\n\"a,b\",-4\r\n"
        );
        assert_eq!(
            t.json(),
            serde_json::json!([{"tool": "=HYPERLINK(\"x\")", "n": 3}, {"tool": "a,b", "n": -4}])
        );
    }

    #[test]
    fn a_stacked_plot_is_an_image_named_and_described_with_a_linked_segment() {
        let series = [
            Series {
                name: "allow",
                class: "effect-allow",
            },
            Series {
                name: "deny",
                class: "effect-deny",
            },
        ];
        let columns = vec![Column {
            label: "10:00".into(),
            values: vec![3, 2],
            links: vec![None, Some("/ui/decisions?effect=deny".into())],
        }];
        let svg = stacked("d", "Decisions", "By effect", &series, &columns).into_string();
        assert!(svg.contains(r#"role="img""#), "{svg}");
        assert!(svg.contains(r#"aria-labelledby="d-title d-desc""#));
        assert!(svg.contains("<title id=\"d-title\">Decisions</title>"));
        assert!(
            svg.contains(r#"<a href="/ui/decisions?effect=deny" aria-label="10:00: 2 deny">"#),
            "{svg}"
        );
        assert_eq!(svg.matches("<rect").count(), 2);
    }
}
