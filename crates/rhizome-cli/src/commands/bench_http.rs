//! A keep-alive HTTP/1.1 load generator for `bench/documents`: C
//! connections, each sending its next request as soon as the previous
//! answer is read, until N requests are done. One thread (a current-thread
//! runtime), so the client costs one core at most and leaves the rest to the
//! server under test; much lighter per request than autocannon, so a fast
//! server is not capped by its client. `{i}` (or `{n}`) in the path and body is the
//! request number, or with `--random K` a uniform random number below K.
//! Prints one JSON line: requests, seconds, non2xx, errors, p50_ms, p99_ms.

use anyhow::{bail, Context, Result};
use base64::Engine;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

#[derive(clap::Args)]
pub struct Args {
    /// http://[user:pass@]host:port
    #[arg(long)]
    url: String,
    #[arg(long, default_value_t = 25)]
    connections: u64,
    #[arg(long, default_value_t = 100_000)]
    requests: u64,
    #[arg(long, default_value = "GET")]
    method: String,
    /// Path template: `{i}` becomes the request's number, e.g. `/bench/w-{i}`
    /// (the older spelling, n in braces, works too).
    #[arg(long)]
    path: String,
    /// Body template (JSON), numbered as the path, e.g. `{"i":{i}}`.
    #[arg(long)]
    body: Option<String>,
    /// Number requests with random numbers below this instead of in order.
    #[arg(long)]
    random: Option<u64>,
}

struct Target {
    addr: String,
    host: String,
    auth: Option<String>,
}

fn parse_url(url: &str) -> Result<Target> {
    let rest = url.strip_prefix("http://").context("only http:// URLs")?;
    let authority = rest.split('/').next().unwrap_or(rest);
    let (auth, host) = match authority.rsplit_once('@') {
        Some((a, h)) => (Some(base64::engine::general_purpose::STANDARD.encode(a)), h),
        None => (None, authority),
    };
    Ok(Target { addr: host.to_owned(), host: host.to_owned(), auth })
}

/// Small xorshift: random document numbers without a dependency.
fn next_random(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

#[derive(Default)]
struct Tally {
    non2xx: u64,
    errors: u64,
    latencies_us: Vec<u32>,
}

async fn connection(target: Arc<Target>, args: Arc<Args>, counter: Arc<AtomicU64>, seed: u64) -> Tally {
    let mut tally = Tally::default();
    let mut rng = seed | 1;
    let mut stream: Option<BufReader<TcpStream>> = None;
    let mut line = String::new();
    let mut body_buf = Vec::new();
    loop {
        let i = counter.fetch_add(1, Ordering::Relaxed);
        if i >= args.requests {
            return tally;
        }
        let n = match args.random {
            Some(k) => next_random(&mut rng) % k.max(1),
            None => i,
        };
        let number = |t: &str| t.replace("{n}", &n.to_string()).replace("{i}", &n.to_string());
        let path = number(&args.path);
        let body = args.body.as_deref().map(number).unwrap_or_default();
        let mut req = format!("{} {} HTTP/1.1\r\nHost: {}\r\nConnection: keep-alive\r\n", args.method, path, target.host);
        if let Some(a) = &target.auth {
            req.push_str(&format!("Authorization: Basic {a}\r\n"));
        }
        if !body.is_empty() || args.method != "GET" {
            req.push_str(&format!("Content-Type: application/json\r\nContent-Length: {}\r\n", body.len()));
        }
        req.push_str("\r\n");
        req.push_str(&body);
        let started = Instant::now();
        let s = match stream.as_mut() {
            Some(s) => s,
            None => match TcpStream::connect(&target.addr).await {
                Ok(t) => {
                    let _ = t.set_nodelay(true);
                    stream.insert(BufReader::new(t))
                }
                Err(_) => {
                    tally.errors += 1;
                    continue;
                }
            },
        };
        let result: std::io::Result<u16> = async {
            s.get_mut().write_all(req.as_bytes()).await?;
            line.clear();
            s.read_line(&mut line).await?;
            let status: u16 = line.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
            let (mut length, mut chunked) = (0usize, false);
            loop {
                line.clear();
                if s.read_line(&mut line).await? == 0 {
                    return Err(std::io::ErrorKind::UnexpectedEof.into());
                }
                let l = line.trim_end();
                if l.is_empty() {
                    break;
                }
                let lower = l.to_ascii_lowercase();
                if let Some(v) = lower.strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap_or(0);
                } else if lower.starts_with("transfer-encoding:") && lower.contains("chunked") {
                    chunked = true;
                }
            }
            if chunked {
                loop {
                    line.clear();
                    s.read_line(&mut line).await?;
                    let size = usize::from_str_radix(line.trim(), 16).unwrap_or(0);
                    body_buf.resize(size + 2, 0);
                    s.read_exact(&mut body_buf).await?;
                    if size == 0 {
                        break;
                    }
                }
            } else {
                body_buf.resize(length, 0);
                s.read_exact(&mut body_buf).await?;
            }
            Ok(status)
        }
        .await;
        match result {
            Ok(status) => {
                if !(200..300).contains(&status) {
                    tally.non2xx += 1;
                }
                tally.latencies_us.push(started.elapsed().as_micros().min(u32::MAX as u128) as u32);
            }
            Err(_) => {
                tally.errors += 1;
                stream = None;
            }
        }
    }
}

pub fn run(args: Args) -> Result<()> {
    if args.connections == 0 {
        bail!("--connections must be at least 1");
    }
    let target = Arc::new(parse_url(&args.url)?);
    let args = Arc::new(args);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let started = Instant::now();
    let tallies = runtime.block_on(async {
        let counter = Arc::new(AtomicU64::new(0));
        let tasks: Vec<_> = (0..args.connections)
            .map(|c| tokio::spawn(connection(target.clone(), args.clone(), counter.clone(), 0x9E37_79B9_7F4A_7C15 ^ (c + 1))))
            .collect();
        let mut out = Vec::new();
        for t in tasks {
            out.push(t.await.unwrap_or_default());
        }
        out
    });
    let seconds = started.elapsed().as_secs_f64();
    let mut lat: Vec<u32> = tallies.iter().flat_map(|t| t.latencies_us.iter().copied()).collect();
    lat.sort_unstable();
    let pct = |p: f64| lat.get(((lat.len() as f64 * p) as usize).min(lat.len().saturating_sub(1))).map_or(0.0, |us| *us as f64 / 1000.0);
    let out = serde_json::json!({
        "requests": lat.len(),
        "seconds": seconds,
        "non2xx": tallies.iter().map(|t| t.non2xx).sum::<u64>(),
        "errors": tallies.iter().map(|t| t.errors).sum::<u64>(),
        "p50_ms": pct(0.5),
        "p99_ms": pct(0.99),
    });
    println!("{out}");
    Ok(())
}
