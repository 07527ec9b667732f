//! Remote JSON-LD contexts on the server side: the HTTP fetcher behind
//! [`rhizome_docs::ContextStore`] (its host allow-list, timeout and size
//! limit) and the admin endpoint `/_contexts` that adds, reads and removes
//! cached contexts.
//!
//! Fetching is off unless `--context-hosts` names hosts: by default only the
//! shipped contexts and the cache (`<data>/_contexts/`) are used. A fetch
//! is plain HTTP/1.1 over `std::net` (requests run on blocking threads, and
//! never under a database's lock: see `rhizome_docs::contexts`). There is no
//! TLS client in Rhizome, so `https:` contexts are served only from the
//! shipped ones and the cache (an admin adds them with `PUT /_contexts`).

use crate::error::HttpError;
use crate::http::{json, Body, Request};
use crate::state::Server;
use hyper::{Method, Response};
use rhizome_docs::{ContextFetcher, ContextSource};
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

/// How long one context fetch may take in all, redirects included.
pub const DEFAULT_CONTEXT_TIMEOUT_MS: u64 = 10_000;
/// The largest context document fetched.
pub const DEFAULT_CONTEXT_MAX_BYTES: usize = 1 << 20;
/// Redirects followed by one fetch (each to an allowed host).
const MAX_REDIRECTS: usize = 5;
/// The largest response header read.
const MAX_HEADER_BYTES: usize = 64 << 10;

/// What the server may fetch (`serve --context-hosts` and friends).
#[derive(Clone, Debug)]
pub struct ContextSettings {
    /// Hosts contexts may be fetched from (`host` for any port, `host:port`
    /// for one); `*` for any host; empty: no fetching.
    pub hosts: Vec<String>,
    pub timeout_ms: u64,
    pub max_bytes: usize,
}

impl Default for ContextSettings {
    fn default() -> Self {
        ContextSettings { hosts: Vec::new(), timeout_ms: DEFAULT_CONTEXT_TIMEOUT_MS, max_bytes: DEFAULT_CONTEXT_MAX_BYTES }
    }
}

/// Fetches contexts over HTTP within [`ContextSettings`].
pub struct HttpContextFetcher {
    settings: ContextSettings,
}

impl HttpContextFetcher {
    pub fn new(settings: ContextSettings) -> HttpContextFetcher {
        HttpContextFetcher { settings }
    }

    fn allowed(&self, host: &str, port: u16) -> bool {
        let with_port = format!("{host}:{port}");
        self.settings.hosts.iter().any(|h| h == "*" || h.eq_ignore_ascii_case(host) || h.eq_ignore_ascii_case(&with_port))
    }
}

impl ContextFetcher for HttpContextFetcher {
    fn fetch(&self, url: &str) -> Result<Vec<u8>, String> {
        let deadline = Instant::now() + Duration::from_millis(self.settings.timeout_ms);
        let mut current = url.to_owned();
        for _ in 0..=MAX_REDIRECTS {
            let (host, port, path) = split_http_url(&current).map_err(|why| format!("remote context {url}: {why}"))?;
            if !self.allowed(&host, port) {
                return Err(format!(
                    "remote context {url}: host {host} is not one contexts may be fetched from (serve --context-hosts: {})",
                    if self.settings.hosts.is_empty() { "none".to_owned() } else { self.settings.hosts.join(",") }
                ));
            }
            match get(&host, port, &path, deadline, self.settings.max_bytes) {
                Ok(Fetched::Body(bytes)) => return Ok(bytes),
                Ok(Fetched::Redirect(location)) => {
                    let base = oxiri::Iri::parse(current.clone()).map_err(|e| format!("remote context {url}: {e}"))?;
                    current = base.resolve(&location).map_err(|e| format!("remote context {url}: bad redirect to {location:?}: {e}"))?.into_inner();
                }
                Err(Failure::TimedOut) => {
                    return Err(format!("remote context {url}: no answer within {} ms (serve --context-timeout-ms)", self.settings.timeout_ms))
                }
                Err(Failure::TooLarge) => {
                    return Err(format!("remote context {url} is larger than {} bytes (serve --context-max-bytes)", self.settings.max_bytes))
                }
                Err(Failure::Other(why)) => return Err(format!("remote context {url}: {why}")),
            }
        }
        Err(format!("remote context {url}: more than {MAX_REDIRECTS} redirects"))
    }
}

/// `http://host[:port]/path` -> (host, port, path with query).
fn split_http_url(url: &str) -> Result<(String, u16, String), String> {
    let rest = match url.strip_prefix("http://") {
        Some(rest) => rest,
        None if url.starts_with("https://") => {
            return Err("https needs TLS, which Rhizome does not fetch with; a server admin can add the context with PUT /_contexts?url=...".into())
        }
        None => return Err("only http URLs are fetched".into()),
    };
    let rest = rest.split('#').next().unwrap_or_default();
    let (authority, path) = rest.split_at(rest.find(['/', '?']).unwrap_or(rest.len()));
    if authority.contains('@') {
        return Err("user info in a context URL is not fetched".into());
    }
    let (host, port) = match authority.strip_prefix('[') {
        Some(v6) => {
            let (h, after) = v6.split_once(']').ok_or("an IPv6 address without its closing ]")?;
            (h.to_owned(), after.strip_prefix(':'))
        }
        None => match authority.rsplit_once(':') {
            Some((h, p)) => (h.to_owned(), Some(p)),
            None => (authority.to_owned(), None),
        },
    };
    if host.is_empty() {
        return Err("no host".into());
    }
    let port = match port {
        Some(p) => p.parse::<u16>().map_err(|_| "the port is not a number")?,
        None => 80,
    };
    let path = if path.is_empty() { "/".to_owned() } else if path.starts_with('?') { format!("/{path}") } else { path.to_owned() };
    Ok((host, port, path))
}

enum Fetched {
    Body(Vec<u8>),
    Redirect(String),
}

enum Failure {
    TimedOut,
    TooLarge,
    Other(String),
}

fn io_failure(e: std::io::Error) -> Failure {
    match e.kind() {
        std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock => Failure::TimedOut,
        _ => Failure::Other(e.to_string()),
    }
}

/// Time left before `deadline`, or a timeout.
fn left(deadline: Instant) -> Result<Duration, Failure> {
    deadline.checked_duration_since(Instant::now()).filter(|d| !d.is_zero()).ok_or(Failure::TimedOut)
}

/// One GET, the whole response read before `deadline` (each read's
/// timeout is the time left, so a slow drip cannot outlast it).
fn get(host: &str, port: u16, path: &str, deadline: Instant, max_bytes: usize) -> Result<Fetched, Failure> {
    let addrs: Vec<_> = (host, port).to_socket_addrs().map_err(|e| Failure::Other(format!("cannot resolve {host}: {e}")))?.collect();
    let mut stream = None;
    let mut last = Failure::Other(format!("no address for {host}"));
    for addr in addrs {
        match TcpStream::connect_timeout(&addr, left(deadline)?) {
            Ok(s) => {
                stream = Some(s);
                break;
            }
            Err(e) => last = io_failure(e),
        }
    }
    let mut stream = stream.ok_or(last)?;
    let host_header = if port == 80 { host.to_owned() } else if host.contains(':') { format!("[{host}]:{port}") } else { format!("{host}:{port}") };
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: {host_header}\r\nAccept: application/ld+json, application/json;q=0.9\r\nUser-Agent: rhizome\r\nConnection: close\r\n\r\n"
    );
    stream.set_write_timeout(Some(left(deadline)?)).map_err(io_failure)?;
    stream.write_all(request.as_bytes()).map_err(io_failure)?;
    // The raw response: header, then a body of at most max_bytes (chunked
    // framing may add to it; bounded too).
    let raw_limit = MAX_HEADER_BYTES + max_bytes.saturating_mul(2) + 4096;
    let mut raw = Vec::new();
    let mut buf = [0u8; 16 << 10];
    let mut header_end = None;
    loop {
        stream.set_read_timeout(Some(left(deadline)?)).map_err(io_failure)?;
        let n = stream.read(&mut buf).map_err(io_failure)?;
        if n == 0 {
            break;
        }
        raw.extend_from_slice(&buf[..n]);
        if header_end.is_none() {
            header_end = raw.windows(4).position(|w| w == b"\r\n\r\n").map(|i| i + 4);
            if header_end.is_none() && raw.len() > MAX_HEADER_BYTES {
                return Err(Failure::Other("response header too large".into()));
            }
            if let Some(end) = header_end {
                // A Content-Length past the limit is refused before its body.
                if let Some(len) = header_value(&raw[..end], "content-length").and_then(|v| v.trim().parse::<usize>().ok()) {
                    if len > max_bytes {
                        return Err(Failure::TooLarge);
                    }
                }
            }
        }
        if raw.len() > raw_limit {
            return Err(Failure::TooLarge);
        }
    }
    parse_response(&raw, max_bytes)
}

/// A whole HTTP/1.1 response (read until the server closed): a redirect's
/// target, or the body of a 200 within `max_bytes`.
fn parse_response(raw: &[u8], max_bytes: usize) -> Result<Fetched, Failure> {
    let end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|i| i + 4)
        .ok_or_else(|| Failure::Other("the connection closed before a full response header".into()))?;
    let head = std::str::from_utf8(&raw[..end]).map_err(|_| Failure::Other("response header is not UTF-8".into()))?;
    let status: u16 = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| Failure::Other(format!("not an HTTP response: {:?}", head.lines().next().unwrap_or_default())))?;
    if matches!(status, 301 | 302 | 303 | 307 | 308) {
        let location = header_value(&raw[..end], "location").ok_or_else(|| Failure::Other(format!("HTTP {status} without a Location")))?;
        return Ok(Fetched::Redirect(location.trim().to_owned()));
    }
    if status != 200 {
        return Err(Failure::Other(format!("HTTP {status}")));
    }
    let body = &raw[end..];
    let chunked = header_value(&raw[..end], "transfer-encoding").is_some_and(|v| v.to_ascii_lowercase().contains("chunked"));
    let body = if chunked { dechunk(body).map_err(Failure::Other)? } else { body.to_vec() };
    let body = match header_value(&raw[..end], "content-length").and_then(|v| v.trim().parse::<usize>().ok()) {
        Some(len) if !chunked && body.len() < len => return Err(Failure::Other(format!("the body ended after {} of {len} bytes", body.len()))),
        Some(len) if !chunked => body[..len].to_vec(),
        _ => body,
    };
    if body.len() > max_bytes {
        return Err(Failure::TooLarge);
    }
    Ok(Fetched::Body(body))
}

fn header_value(head: &[u8], name: &str) -> Option<String> {
    let text = std::str::from_utf8(head).ok()?;
    text.split("\r\n").skip(1).find_map(|line| {
        let (k, v) = line.split_once(':')?;
        k.trim().eq_ignore_ascii_case(name).then(|| v.trim().to_owned())
    })
}

/// A chunked body (RFC 9112 §7.1), trailers ignored.
fn dechunk(mut raw: &[u8]) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    loop {
        let line_end = raw.windows(2).position(|w| w == b"\r\n").ok_or("a chunk size line without its end")?;
        let line = std::str::from_utf8(&raw[..line_end]).map_err(|_| "a chunk size that is not text")?;
        let size = usize::from_str_radix(line.split(';').next().unwrap_or_default().trim(), 16).map_err(|_| format!("bad chunk size {line:?}"))?;
        raw = &raw[line_end + 2..];
        if size == 0 {
            return Ok(out);
        }
        // A size near usize::MAX must not wrap past the check.
        if size.checked_add(2).is_none_or(|n| raw.len() < n) {
            return Err("the body ended inside a chunk".into());
        }
        out.extend_from_slice(&raw[..size]);
        raw = &raw[size + 2..];
    }
}

/// Fuzzing: an arbitrary response through the fetcher's parser (never a
/// panic).
pub(crate) fn fuzz_response(raw: &[u8]) {
    let _ = parse_response(raw, 4096);
    let _ = dechunk(raw);
    let _ = split_http_url(&String::from_utf8_lossy(raw));
}

/// `/_contexts` (server admins only): `GET` lists the shipped and cached
/// contexts; with `?url=`, `GET` returns that context document, `PUT` adds
/// or replaces it in the cache (the body: a JSON object with `@context`),
/// `DELETE` removes it from the cache.
pub fn handle(server: &Server, req: &Request) -> Result<Response<Body>, HttpError> {
    let store = &server.contexts;
    let Some(url) = req.param("url") else {
        return match req.method {
            Method::GET | Method::HEAD => {
                let list: Vec<Value> = store.list().into_iter().map(|(url, source)| json!({ "url": url, "source": source.as_str() })).collect();
                Ok(json(200, &json!({ "contexts": list, "fetch": store.fetches() })))
            }
            Method::PUT | Method::DELETE => Err(HttpError::bad_request("the context's URL is required: /_contexts?url=...")),
            _ => Err(HttpError::method_not_allowed("DELETE,GET,HEAD,PUT")),
        };
    };
    match req.method {
        Method::GET | Method::HEAD => match store.get(url) {
            Some(c) => Ok(json(200, &c.document)),
            None => Err(HttpError::not_found(format!("no context {url} is shipped or cached"))),
        },
        Method::PUT => {
            let document = req.json()?;
            store.put(url, document, ContextSource::Admin).map_err(HttpError::bad_request)?;
            Ok(json(201, &json!({ "ok": true, "url": url })))
        }
        Method::DELETE => match store.remove(url).map_err(|e| HttpError::new(500, "error", e))? {
            true => Ok(json(200, &json!({ "ok": true, "url": url }))),
            false if store.get(url).is_some() => Err(HttpError::bad_request(format!("{url} is shipped with Rhizome, not cached; it cannot be removed"))),
            false => Err(HttpError::not_found(format!("no context {url} is cached"))),
        },
        _ => Err(HttpError::method_not_allowed("DELETE,GET,HEAD,PUT")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_urls_split_and_https_is_explained() {
        assert_eq!(split_http_url("http://h.example/a/b?c").unwrap(), ("h.example".into(), 80, "/a/b?c".into()));
        assert_eq!(split_http_url("http://127.0.0.1:8080").unwrap(), ("127.0.0.1".into(), 8080, "/".into()));
        assert_eq!(split_http_url("http://[::1]:81/x#f").unwrap(), ("::1".into(), 81, "/x".into()));
        assert!(split_http_url("https://schema.org/").unwrap_err().contains("TLS"));
    }

    #[test]
    fn responses_parse_redirects_statuses_and_sizes() {
        let body = |r: Result<Fetched, Failure>| match r {
            Ok(Fetched::Body(b)) => String::from_utf8(b).unwrap(),
            Ok(Fetched::Redirect(l)) => format!("redirect {l}"),
            Err(Failure::TooLarge) => "too large".into(),
            Err(Failure::TimedOut) => "timed out".into(),
            Err(Failure::Other(why)) => why,
        };
        assert_eq!(body(parse_response(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}", 10)), "{}");
        assert_eq!(body(parse_response(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n", 10)), "{}");
        assert_eq!(body(parse_response(b"HTTP/1.1 301 Moved\r\nLocation: /x\r\n\r\n", 10)), "redirect /x");
        assert_eq!(body(parse_response(b"HTTP/1.1 404 Not Found\r\n\r\n", 10)), "HTTP 404");
        assert_eq!(body(parse_response(b"HTTP/1.1 200 OK\r\n\r\n0123456789ab", 10)), "too large");
        assert_eq!(body(parse_response(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n{}", 10)), "the body ended after 2 of 5 bytes");
        assert!(body(parse_response(b"garbage", 10)).contains("header"));
    }

    #[test]
    fn chunked_bodies_decode() {
        assert_eq!(dechunk(b"3\r\nabc\r\n2;x=y\r\nde\r\n0\r\n\r\n").unwrap(), b"abcde");
        assert!(dechunk(b"5\r\nab").is_err());
        // A chunk size that overflows when its CRLF is added (found by the
        // couch_request fuzz target).
        assert!(dechunk(b"FFFFFFFFFFFFFFFF\r\n\r\n").is_err());
    }

    #[test]
    fn hosts_match_with_or_without_port() {
        let f = HttpContextFetcher::new(ContextSettings { hosts: vec!["a.example".into(), "127.0.0.1:81".into()], ..Default::default() });
        assert!(f.allowed("a.example", 8080));
        assert!(f.allowed("127.0.0.1", 81));
        assert!(!f.allowed("127.0.0.1", 82));
        assert!(HttpContextFetcher::new(ContextSettings { hosts: vec!["*".into()], ..Default::default() }).allowed("x", 1));
    }
}
