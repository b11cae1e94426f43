//! `loadgen`: an HTTP/1.1 load generator for the side-by-side gateway bench.
//!
//! - **Closed loop** (`--connections N`): N keep-alive connections, each sending its next
//!   request as soon as the last is answered.
//! - **Open loop** (`--rate R`): requests are due at fixed times (`R` per second, spread over the
//!   connections); each latency is measured from when the request was *due*, not from when it
//!   was sent, so a server that falls behind is charged for the wait it caused (coordinated
//!   omission corrected, as wrk2 does).
//!
//! Latencies go into an HdrHistogram (1 µs to 60 s, 3 significant digits); the answer is one
//! line of JSON (`--json`) or text: requests, errors, throughput, p50, p99, p99.9, max. A
//! response counts only when its status is 2xx and its body has been read to the end (a
//! streamed answer's last byte).

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use bytes::Bytes;
use clap::Parser;
use hdrhistogram::Histogram;
use http_body_util::{BodyExt, Full};
use hyper::Request;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

#[derive(Parser, Debug, Clone)]
#[command(
    about = "Closed- and open-loop HTTP/1.1 load with coordinated-omission-corrected latencies"
)]
struct Args {
    /// The URL (`http://127.0.0.1:8000/v1/runs/bench/tool-calls`).
    url: String,
    /// The method.
    #[arg(long, default_value = "POST")]
    method: String,
    /// The request body (JSON text).
    #[arg(long, default_value = "")]
    body: String,
    /// A header `Name: value` (repeatable).
    #[arg(long = "header", short = 'H')]
    headers: Vec<String>,
    /// Connections.
    #[arg(long, short = 'c', default_value_t = 1)]
    connections: usize,
    /// Seconds measured.
    #[arg(long, short = 'd', default_value_t = 10.0)]
    duration: f64,
    /// Seconds of warm-up before measuring (not recorded).
    #[arg(long, default_value_t = 2.0)]
    warmup: f64,
    /// Open loop: requests per second in all (closed loop when absent).
    #[arg(long)]
    rate: Option<f64>,
    /// A label for the row.
    #[arg(long, default_value = "")]
    label: String,
    /// Print one JSON object.
    #[arg(long)]
    json: bool,
}

struct Target {
    host: String,
    port: u16,
    path: String,
}

fn parse_url(url: &str) -> Result<Target> {
    let rest = url
        .strip_prefix("http://")
        .context("only http:// URLs (loopback benches)")?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], rest[i..].to_string()),
        None => (rest, "/".to_string()),
    };
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) => (h.to_string(), p.parse().context("port")?),
        None => (authority.to_string(), 80),
    };
    Ok(Target { host, port, path })
}

/// What one connection saw.
struct Tally {
    hist: Histogram<u64>,
    ok: u64,
    errors: u64,
}

fn histogram() -> Result<Histogram<u64>> {
    Ok(Histogram::<u64>::new_with_bounds(1, 60_000_000, 3)?)
}

async fn connection(
    args: Arc<Args>,
    target: Arc<Target>,
    index: usize,
    start: Instant,
    warm_until: Instant,
    end: Instant,
) -> Result<Tally> {
    let stream = TcpStream::connect((target.host.as_str(), target.port)).await?;
    stream.set_nodelay(true)?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
    tokio::spawn(conn);
    let mut tally = Tally {
        hist: histogram()?,
        ok: 0,
        errors: 0,
    };
    let body = Bytes::from(args.body.clone());
    let headers: Vec<(String, String)> = args
        .headers
        .iter()
        .filter_map(|h| h.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect();
    // Open loop: this connection sends requests index, index + N, index + 2N, ... of a
    // schedule of `rate` per second.
    let interval = args
        .rate
        .map(|r| Duration::from_secs_f64(args.connections as f64 / r));
    let offset = args
        .rate
        .map(|r| Duration::from_secs_f64(index as f64 / r))
        .unwrap_or_default();
    let mut n: u32 = 0;
    loop {
        let due = match interval {
            Some(every) => start + offset + every * n,
            None => Instant::now(),
        };
        if due >= end {
            break;
        }
        // The timer wakes a millisecond late or so; an open loop must send on time, or it
        // charges its own lateness to the server: sleep to just before, then yield until due.
        let now = Instant::now();
        if due > now + Duration::from_millis(2) {
            tokio::time::sleep_until((due - Duration::from_millis(2)).into()).await;
        }
        while Instant::now() < due {
            tokio::task::yield_now().await;
        }
        n += 1;
        let mut req = Request::builder()
            .method(args.method.as_str())
            .uri(target.path.as_str())
            .header("host", format!("{}:{}", target.host, target.port));
        if !body.is_empty() {
            req = req.header("content-type", "application/json");
        }
        for (k, v) in &headers {
            req = req.header(k.as_str(), v.as_str());
        }
        let req = req.body(Full::new(body.clone()))?;
        sender.ready().await?;
        let answered = match sender.send_request(req).await {
            Ok(resp) => {
                let status = resp.status();
                let body = resp.into_body().collect().await.map(|b| b.to_bytes());
                if !status.is_success() && tally.errors == 0 {
                    // The first failure of each connection, so an error count can be explained.
                    let text = body.as_ref().map(|b| b.to_vec()).unwrap_or_default();
                    eprintln!("error: {status}: {}", String::from_utf8_lossy(&text));
                }
                status.is_success() && body.is_ok()
            }
            Err(e) => {
                if tally.errors == 0 {
                    eprintln!("error: {e}");
                }
                false
            }
        };
        let done = Instant::now();
        if due < warm_until {
            continue;
        }
        if answered {
            let micros = u64::try_from(done.duration_since(due).as_micros()).unwrap_or(u64::MAX);
            tally.hist.saturating_record(micros.max(1));
            tally.ok += 1;
        } else {
            tally.errors += 1;
        }
    }
    Ok(tally)
}

#[tokio::main]
async fn main() -> Result<()> {
    let args = Arc::new(Args::parse());
    if args.connections == 0 {
        bail!("--connections must be at least 1");
    }
    let target = Arc::new(parse_url(&args.url)?);
    let start = Instant::now() + Duration::from_millis(50);
    let warm_until = start + Duration::from_secs_f64(args.warmup);
    let end = warm_until + Duration::from_secs_f64(args.duration);
    let tasks: Vec<_> = (0..args.connections)
        .map(|i| {
            tokio::spawn(connection(
                args.clone(),
                target.clone(),
                i,
                start,
                warm_until,
                end,
            ))
        })
        .collect();
    let mut all = histogram()?;
    let (mut ok, mut errors) = (0u64, 0u64);
    for t in tasks {
        let tally = t.await??;
        all.add(&tally.hist)?;
        ok += tally.ok;
        errors += tally.errors;
    }
    let secs = args.duration;
    let q = |p: f64| all.value_at_quantile(p) as f64 / 1000.0;
    let row = serde_json::json!({
        "label": args.label,
        "mode": if args.rate.is_some() { "open" } else { "closed" },
        "connections": args.connections,
        "rate": args.rate,
        "requests": ok,
        "errors": errors,
        "throughput": ok as f64 / secs,
        "p50_ms": q(0.5),
        "p99_ms": q(0.99),
        "p999_ms": q(0.999),
        "max_ms": all.max() as f64 / 1000.0,
    });
    if args.json {
        println!("{row}");
    } else {
        println!(
            "{:<40} {:>6} {:>4} {:>10.0}/s  p50 {:>8.3} ms  p99 {:>8.3} ms  p99.9 {:>8.3} ms  errors {}",
            args.label,
            row["mode"].as_str().unwrap_or_default(),
            args.connections,
            ok as f64 / secs,
            q(0.5),
            q(0.99),
            q(0.999),
            errors
        );
    }
    Ok(())
}
