//! TPC-B as pgbench runs it (its built-in "tpcb-like" script), for
//! `bench/tpcb`: branches, tellers (10 per branch), accounts (100,000 per
//! branch) and history; one transaction updates an account by a random
//! delta in [-5000, 5000], reads its balance, updates a teller and the
//! branch, and inserts a history row. Clients run it back to back for a
//! fixed time through one of Rhizome's transaction doors:
//!
//! - `atomic`: `_bulk_get` of the three rows, then `_bulk_docs` with
//!   `all_or_nothing` (retried on 409), over HTTP;
//! - `txn`: one `POST /{db}/_transaction` (increments), over HTTP;
//! - `sparql`: one SPARQL Update (DELETE/INSERT/WHERE over four graphs),
//!   over HTTP;
//! - `inproc`: `Database::begin()` in this process (retried on conflict);
//! - `inproc-ops`: the server-side operations in this process, through the
//!   server's group commit.
//!
//! `--init` creates the JSON database over HTTP; `--check` verifies that
//! the branch, teller and account sums equal the history's. Prints one
//! JSON line.

use anyhow::{bail, Context, Result};
use base64::Engine;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(clap::Args)]
pub struct Args {
    /// atomic | txn | sparql | inproc | inproc-ops
    #[arg(long, default_value = "txn")]
    door: String,
    /// http://user:pass@host:port (HTTP doors, --init, --check)
    #[arg(long)]
    url: Option<String>,
    #[arg(long, default_value = "tpcb")]
    db: String,
    #[arg(long, default_value_t = 1)]
    scale: u64,
    #[arg(long, default_value_t = 1)]
    clients: usize,
    #[arg(long, default_value_t = 10.0)]
    seconds: f64,
    /// Create the database's branches, tellers and accounts (JSON) over HTTP.
    #[arg(long)]
    init: bool,
    /// Check the sums over HTTP (`--door sparql`: by SPARQL).
    #[arg(long)]
    check: bool,
    /// `_revs_limit` of the database made by `--init`: every transaction
    /// adds a revision to the branch row, whose whole revision tree each
    /// write decodes and rewrites (CouchDB's default 1000: about 47 KB).
    #[arg(long, default_value_t = 10)]
    revs_limit: u64,
}

pub const NS: &str = "http://tpcb.example/";
/// pgbench's `filler` of an account row is char(84).
const FILLER: &str = "                                                                                    ";

/// One keep-alive HTTP/1.1 connection.
struct Http {
    stream: BufReader<TcpStream>,
    host: String,
    auth: Option<String>,
}

impl Http {
    fn connect(url: &str) -> Result<Http> {
        let rest = url.strip_prefix("http://").context("only http:// URLs")?;
        let authority = rest.split('/').next().unwrap_or(rest);
        let (auth, host) = match authority.rsplit_once('@') {
            Some((a, h)) => (Some(base64::engine::general_purpose::STANDARD.encode(a)), h),
            None => (None, authority),
        };
        let stream = TcpStream::connect(host).with_context(|| format!("connecting to {host}"))?;
        stream.set_nodelay(true)?;
        Ok(Http { stream: BufReader::new(stream), host: host.to_owned(), auth })
    }

    fn request(&mut self, method: &str, path: &str, content_type: &str, body: &str) -> Result<(u16, Vec<u8>)> {
        let mut req = format!("{method} {path} HTTP/1.1\r\nHost: {}\r\nConnection: keep-alive\r\n", self.host);
        if let Some(a) = &self.auth {
            req.push_str(&format!("Authorization: Basic {a}\r\n"));
        }
        req.push_str(&format!("Content-Type: {content_type}\r\nAccept: application/json\r\nContent-Length: {}\r\n\r\n", body.len()));
        req.push_str(body);
        self.stream.get_mut().write_all(req.as_bytes())?;
        let mut line = String::new();
        self.stream.read_line(&mut line)?;
        let status: u16 = line.split_whitespace().nth(1).and_then(|c| c.parse().ok()).context("no status line")?;
        let (mut length, mut chunked) = (0usize, false);
        loop {
            line.clear();
            if self.stream.read_line(&mut line)? == 0 {
                bail!("connection closed");
            }
            let l = line.trim_end().to_ascii_lowercase();
            if l.is_empty() {
                break;
            }
            if let Some(v) = l.strip_prefix("content-length:") {
                length = v.trim().parse().unwrap_or(0);
            } else if l.starts_with("transfer-encoding:") && l.contains("chunked") {
                chunked = true;
            }
        }
        let mut body = Vec::new();
        if chunked {
            loop {
                line.clear();
                self.stream.read_line(&mut line)?;
                let size = usize::from_str_radix(line.trim(), 16).unwrap_or(0);
                let mut chunk = vec![0; size + 2];
                self.stream.read_exact(&mut chunk)?;
                body.extend_from_slice(&chunk[..size]);
                if size == 0 {
                    break;
                }
            }
        } else {
            body.resize(length, 0);
            self.stream.read_exact(&mut body)?;
        }
        Ok((status, body))
    }

    fn json(&mut self, method: &str, path: &str, body: &Value) -> Result<(u16, Value)> {
        let (status, bytes) = self.request(method, path, "application/json", &body.to_string())?;
        Ok((status, serde_json::from_slice(&bytes).unwrap_or(Value::Null)))
    }
}

/// pgbench's random choices, from a small xorshift per client.
struct Pick {
    state: u64,
    scale: u64,
}

impl Pick {
    fn next(&mut self) -> u64 {
        self.state ^= self.state << 13;
        self.state ^= self.state >> 7;
        self.state ^= self.state << 17;
        self.state
    }
    /// (aid, tid, bid, delta), as pgbench's tpcb-like script draws them.
    fn transaction(&mut self) -> (u64, u64, u64, i64) {
        let aid = 1 + self.next() % (100_000 * self.scale);
        let bid = 1 + self.next() % self.scale;
        let tid = 1 + self.next() % (10 * self.scale);
        let delta = (self.next() % 10_001) as i64 - 5000;
        (aid, tid, bid, delta)
    }
}

#[derive(Default)]
struct Tally {
    committed: u64,
    retries: u64,
    latencies_us: Vec<u32>,
}

pub fn run(data: &Path, args: Args) -> Result<()> {
    if args.init {
        return init(&args);
    }
    if args.check {
        let out = if args.door == "sparql" { check_sparql(&args)? } else { check_json(&args)? };
        println!("{out}");
        return Ok(());
    }
    let stop = Arc::new(AtomicBool::new(false));
    let history = Arc::new(AtomicU64::new(0));
    let seconds = args.seconds;
    let started = Instant::now();
    let tallies: Vec<Tally> = match args.door.as_str() {
        "atomic" | "txn" | "sparql" => {
            let url = args.url.clone().context("--url is needed for an HTTP door")?;
            let handles: Vec<_> = (0..args.clients)
                .map(|c| {
                    let (url, stop, door, db, scale) = (url.clone(), stop.clone(), args.door.clone(), args.db.clone(), args.scale);
                    std::thread::spawn(move || -> Result<Tally> {
                        let mut http = Http::connect(&url)?;
                        let mut pick = Pick { state: 0x9E37_79B9_7F4A_7C15 ^ (c as u64 + 1) * 0x2545_F491_4F6C_DD1D, scale };
                        let mut tally = Tally::default();
                        let mut n = 0u64;
                        while !stop.load(Ordering::Relaxed) {
                            let t0 = Instant::now();
                            let (aid, tid, bid, delta) = pick.transaction();
                            let h = format!("h:{}:{c}:{n}", std::process::id());
                            n += 1;
                            tally.retries += http_transaction(&mut http, &door, &db, aid, tid, bid, delta, &h)?;
                            tally.committed += 1;
                            tally.latencies_us.push(t0.elapsed().as_micros().min(u32::MAX as u128) as u32);
                        }
                        Ok(tally)
                    })
                })
                .collect();
            std::thread::sleep(Duration::from_secs_f64(seconds));
            stop.store(true, Ordering::Relaxed);
            handles.into_iter().map(|h| h.join().map_err(|_| anyhow::anyhow!("a client panicked"))?).collect::<Result<_>>()?
        }
        "inproc" | "inproc-ops" => {
            let dir = rhizome_server::database_dir(data, &args.db);
            let base = rhizome_server::base_iri(data)?;
            let db = Arc::new(rhizome_docs::Database::open(&dir, rhizome_server::projector_for(&base, &args.db, rhizome_server::context_store(data)?))?);
            let group = Arc::new(rhizome_server::GroupCommit::default());
            let handles: Vec<_> = (0..args.clients)
                .map(|c| {
                    let (db, group, stop, door, scale, history) = (db.clone(), group.clone(), stop.clone(), args.door.clone(), args.scale, history.clone());
                    std::thread::spawn(move || -> Result<Tally> {
                        let mut pick = Pick { state: 0x9E37_79B9_7F4A_7C15 ^ (c as u64 + 1) * 0x2545_F491_4F6C_DD1D, scale };
                        let mut tally = Tally::default();
                        while !stop.load(Ordering::Relaxed) {
                            let t0 = Instant::now();
                            let (aid, tid, bid, delta) = pick.transaction();
                            let h = format!("h:{}:{}", std::process::id(), history.fetch_add(1, Ordering::Relaxed));
                            tally.retries += if door == "inproc" { inproc_transaction(&db, aid, tid, bid, delta, &h)? } else { inproc_ops(&db, &group, aid, tid, bid, delta, &h)? };
                            tally.committed += 1;
                            tally.latencies_us.push(t0.elapsed().as_micros().min(u32::MAX as u128) as u32);
                        }
                        Ok(tally)
                    })
                })
                .collect();
            std::thread::sleep(Duration::from_secs_f64(seconds));
            stop.store(true, Ordering::Relaxed);
            handles.into_iter().map(|h| h.join().map_err(|_| anyhow::anyhow!("a client panicked"))?).collect::<Result<_>>()?
        }
        other => bail!("unknown door {other:?} (atomic, txn, sparql, inproc, inproc-ops)"),
    };
    let elapsed = started.elapsed().as_secs_f64();
    let committed: u64 = tallies.iter().map(|t| t.committed).sum();
    let mut lat: Vec<u32> = tallies.iter().flat_map(|t| t.latencies_us.iter().copied()).collect();
    lat.sort_unstable();
    let pct = |p: f64| lat.get(((lat.len() as f64 * p) as usize).min(lat.len().saturating_sub(1))).map_or(0.0, |us| *us as f64 / 1000.0);
    println!(
        "{}",
        json!({
            "door": args.door, "clients": args.clients, "scale": args.scale,
            "transactions": committed, "seconds": elapsed, "tps": committed as f64 / elapsed,
            "retries": tallies.iter().map(|t| t.retries).sum::<u64>(), "p50_ms": pct(0.5), "p99_ms": pct(0.99),
        })
    );
    Ok(())
}

/// One TPC-B transaction over HTTP; the number of retries it took.
#[allow(clippy::too_many_arguments)]
fn http_transaction(http: &mut Http, door: &str, db: &str, aid: u64, tid: u64, bid: u64, delta: i64, h: &str) -> Result<u64> {
    match door {
        "txn" => {
            let ops = json!({"ops": [
                {"id": format!("a:{aid}"), "inc": {"balance": delta}},
                {"id": format!("t:{tid}"), "inc": {"balance": delta}},
                {"id": format!("b:{bid}"), "inc": {"balance": delta}},
                {"id": h, "put": {"tid": tid, "bid": bid, "aid": aid, "delta": delta}},
            ]});
            let (status, v) = http.json("POST", &format!("/{db}/_transaction"), &ops)?;
            if status != 200 || v["results"][0]["doc"]["balance"].as_i64().is_none() {
                bail!("_transaction answered {status}: {v}");
            }
            Ok(0)
        }
        "atomic" => {
            let mut retries = 0;
            loop {
                let ids = json!({"docs": [{"id": format!("a:{aid}")}, {"id": format!("t:{tid}")}, {"id": format!("b:{bid}")}]});
                let (status, v) = http.json("POST", &format!("/{db}/_bulk_get"), &ids)?;
                if status != 200 {
                    bail!("_bulk_get answered {status}: {v}");
                }
                let mut docs = Vec::with_capacity(4);
                for r in v["results"].as_array().context("_bulk_get results")? {
                    let mut d = r["docs"][0]["ok"].clone();
                    let balance = d["balance"].as_i64().context("a balance")?;
                    d["balance"] = json!(balance + delta);
                    docs.push(d);
                }
                docs.push(json!({"_id": h, "tid": tid, "bid": bid, "aid": aid, "delta": delta}));
                let (status, v) = http.json("POST", &format!("/{db}/_bulk_docs"), &json!({"all_or_nothing": true, "docs": docs}))?;
                match status {
                    201 => return Ok(retries),
                    409 => retries += 1,
                    _ => bail!("_bulk_docs answered {status}: {v}"),
                }
            }
        }
        "sparql" => {
            let u = format!(
                "PREFIX t: <{NS}> \
                 DELETE {{ GRAPH t:a{aid} {{ t:a{aid} t:balance ?a }} GRAPH t:t{tid} {{ t:t{tid} t:balance ?t }} GRAPH t:b{bid} {{ t:b{bid} t:balance ?b }} }} \
                 INSERT {{ GRAPH t:a{aid} {{ t:a{aid} t:balance ?a2 }} GRAPH t:t{tid} {{ t:t{tid} t:balance ?t2 }} GRAPH t:b{bid} {{ t:b{bid} t:balance ?b2 }} \
                          GRAPH t:{h} {{ t:{h} t:tid {tid} ; t:bid {bid} ; t:aid {aid} ; t:delta {delta} }} }} \
                 WHERE {{ GRAPH t:a{aid} {{ t:a{aid} t:balance ?a }} GRAPH t:t{tid} {{ t:t{tid} t:balance ?t }} GRAPH t:b{bid} {{ t:b{bid} t:balance ?b }} \
                          BIND(?a + {delta} AS ?a2) BIND(?t + {delta} AS ?t2) BIND(?b + {delta} AS ?b2) }}",
                h = h.replace(':', "_")
            );
            let (status, body) = http.request("POST", &format!("/{db}/_sparql"), "application/sparql-update", &u)?;
            if !(200..300).contains(&status) {
                bail!("SPARQL Update answered {status}: {}", String::from_utf8_lossy(&body));
            }
            Ok(0)
        }
        other => bail!("unknown door {other}"),
    }
}

fn obj(v: Value) -> serde_json::Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => serde_json::Map::new(),
    }
}

/// One transaction through `Database::begin()`; its retries.
fn inproc_transaction(db: &rhizome_docs::Database, aid: u64, tid: u64, bid: u64, delta: i64, h: &str) -> Result<u64> {
    let mut retries = 0;
    loop {
        let mut txn = db.begin()?;
        for id in [format!("a:{aid}"), format!("t:{tid}"), format!("b:{bid}")] {
            let mut doc = txn.get(&id)?.with_context(|| format!("{id} is missing"))?;
            let balance = doc.get("balance").and_then(Value::as_i64).context("a balance")?;
            doc.insert("balance".into(), json!(balance + delta));
            txn.put(doc)?;
        }
        txn.put(obj(json!({"_id": h, "tid": tid, "bid": bid, "aid": aid, "delta": delta})))?;
        match txn.commit(None) {
            Ok(_) => return Ok(retries),
            Err(rhizome_docs::DocError::Coded { status: 409, .. }) => retries += 1,
            Err(e) => return Err(e.into()),
        }
    }
}

/// One transaction as server-side operations, through group commit.
fn inproc_ops(db: &rhizome_docs::Database, group: &rhizome_server::GroupCommit, aid: u64, tid: u64, bid: u64, delta: i64, h: &str) -> Result<u64> {
    let ops = rhizome_docs::parse_ops(&obj(json!({"ops": [
        {"id": format!("a:{aid}"), "inc": {"balance": delta}},
        {"id": format!("t:{tid}"), "inc": {"balance": delta}},
        {"id": format!("b:{bid}"), "inc": {"balance": delta}},
        {"id": h, "put": {"tid": tid, "bid": bid, "aid": aid, "delta": delta}},
    ]})))?;
    match group.apply_ops(db, ops, rhizome_docs::Writer::Admin).map_err(|e| anyhow::anyhow!("{e}"))? {
        Ok(_) => Ok(0),
        Err((i, e)) => bail!("operation {i} refused: {e}"),
    }
}

/// Creates the database and its branches, tellers and accounts (balance
/// 0; an account carries pgbench's 84-character filler), then compacts it.
fn init(args: &Args) -> Result<()> {
    let url = args.url.as_deref().context("--init needs --url")?;
    let mut http = Http::connect(url)?;
    let db = &args.db;
    let (status, v) = http.json("PUT", &format!("/{db}"), &Value::Null)?;
    if status != 201 {
        bail!("creating {db}: {status} {v}");
    }
    let (status, bytes) = http.request("PUT", &format!("/{db}/_revs_limit"), "application/json", &args.revs_limit.to_string())?;
    if status != 200 {
        bail!("_revs_limit: {status} {}", String::from_utf8_lossy(&bytes));
    }
    let mut docs = Vec::new();
    let flush = |docs: &mut Vec<Value>, http: &mut Http| -> Result<()> {
        if docs.is_empty() {
            return Ok(());
        }
        let (status, v) = http.json("POST", &format!("/{db}/_bulk_docs"), &json!({ "docs": std::mem::take(docs) }))?;
        if status != 201 {
            bail!("_bulk_docs: {status} {v}");
        }
        Ok(())
    };
    for b in 1..=args.scale {
        docs.push(json!({"_id": format!("b:{b}"), "balance": 0}));
    }
    for t in 1..=10 * args.scale {
        docs.push(json!({"_id": format!("t:{t}"), "bid": 1 + (t - 1) / 10, "balance": 0}));
    }
    for a in 1..=100_000 * args.scale {
        docs.push(json!({"_id": format!("a:{a}"), "bid": 1 + (a - 1) / 100_000, "balance": 0, "filler": FILLER}));
        if docs.len() == 10_000 {
            flush(&mut docs, &mut http)?;
        }
    }
    flush(&mut docs, &mut http)?;
    // `pgbench -i` ends by vacuuming the tables it loaded; the same step
    // here is a compaction, so both sides start from settled tables.
    let (status, v) = http.json("POST", &format!("/{db}/_compact"), &json!({}))?;
    if !(200..300).contains(&status) {
        bail!("_compact: {status} {v}");
    }
    println!("{}", json!({"initialized": db, "scale": args.scale, "revs_limit": args.revs_limit}));
    Ok(())
}

/// The branch, teller, account and history sums of a JSON database, read
/// in pages of `_all_docs`.
fn check_json(args: &Args) -> Result<Value> {
    let url = args.url.as_deref().context("--check needs --url")?;
    let mut http = Http::connect(url)?;
    let mut sums = [0i64; 4];
    let mut counts = [0u64; 4];
    let mut start: Option<String> = None;
    loop {
        let mut path = format!("/{}/_all_docs?include_docs=true&limit=10000", args.db);
        if let Some(s) = &start {
            path.push_str(&format!("&startkey={}&skip=1", urlencode(&Value::String(s.clone()).to_string())));
        }
        let (status, bytes) = http.request("GET", &path, "application/json", "")?;
        if status != 200 {
            bail!("_all_docs answered {status}");
        }
        let v: Value = serde_json::from_slice(&bytes)?;
        let rows = v["rows"].as_array().context("rows")?;
        if rows.is_empty() {
            break;
        }
        for r in rows {
            let id = r["id"].as_str().unwrap_or_default();
            let (k, value) = match id.as_bytes().first() {
                Some(b'b') => (0, &r["doc"]["balance"]),
                Some(b't') => (1, &r["doc"]["balance"]),
                Some(b'a') => (2, &r["doc"]["balance"]),
                Some(b'h') => (3, &r["doc"]["delta"]),
                _ => continue,
            };
            sums[k] += value.as_i64().with_context(|| format!("{id} has no number"))?;
            counts[k] += 1;
        }
        start = rows.last().and_then(|r| r["id"].as_str()).map(str::to_owned);
    }
    let consistent = sums[0] == sums[3] && sums[1] == sums[3] && sums[2] == sums[3];
    Ok(json!({"branches": sums[0], "tellers": sums[1], "accounts": sums[2], "history": sums[3], "history_rows": counts[3], "consistent": consistent}))
}

fn check_sparql(args: &Args) -> Result<Value> {
    let url = args.url.as_deref().context("--check needs --url")?;
    let mut http = Http::connect(url)?;
    let mut sums = Vec::new();
    for (what, filter) in [("branches", "b"), ("tellers", "t"), ("accounts", "a")] {
        let q = format!("PREFIX t: <{NS}> SELECT (SUM(?v) AS ?sum) WHERE {{ ?s t:balance ?v FILTER(STRSTARTS(STR(?s), \"{NS}{filter}\")) }}");
        sums.push((what, sparql_number(&mut http, &args.db, &q)?));
    }
    let history = sparql_number(&mut http, &args.db, &format!("PREFIX t: <{NS}> SELECT (SUM(?v) AS ?sum) WHERE {{ ?s t:delta ?v }}"))?;
    let rows = sparql_number(&mut http, &args.db, &format!("PREFIX t: <{NS}> SELECT (COUNT(?s) AS ?sum) WHERE {{ ?s t:delta ?v }}"))?;
    let consistent = sums.iter().all(|(_, s)| *s == history);
    let mut out = json!({"history": history, "history_rows": rows, "consistent": consistent});
    for (what, s) in sums {
        out[what] = json!(s);
    }
    Ok(out)
}

fn sparql_number(http: &mut Http, db: &str, q: &str) -> Result<i64> {
    let (status, bytes) = http.request("POST", &format!("/{db}/_sparql"), "application/sparql-query", q)?;
    if status != 200 {
        bail!("SPARQL answered {status}: {}", String::from_utf8_lossy(&bytes));
    }
    let v: Value = serde_json::from_slice(&bytes)?;
    let value = &v["results"]["bindings"][0]["sum"]["value"];
    Ok(value.as_str().map_or(Ok(0), |s| s.parse::<i64>()).context("a sum")?)
}

fn urlencode(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => out.push(b as char),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}
