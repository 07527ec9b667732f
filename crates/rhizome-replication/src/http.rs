//! A CouchDB-compatible database over HTTP/1.1: one keep-alive connection,
//! one request at a time, Basic auth from the URL's user info.

use crate::changes_answer::ChangesPage;
use crate::endpoint::{ChangesBatch, Endpoint, Filter, Wanted, WriteFailure};
use crate::{Error, Result};
use base64::Engine;
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::client::conn::http1::{self, SendRequest};
use hyper::{header, Method, Request};
use hyper_util::rt::TokioIo;
use serde_json::{json, Map, Value};
use std::sync::Mutex;
use std::time::Duration;

/// How long one request may take, a long poll included.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(300);

/// The most bytes a replication reads of one answer by default (the
/// server's default request body limit, `--max-body-bytes`; a server
/// started with another sets its endpoints to it,
/// [`HttpEndpoint::set_max_answer_bytes`]): a source's `_changes` page or
/// `_bulk_get` answer past it is not held (a 200 MB document arrived
/// whole, and a `_changes` answer that never ended grew a server past
/// 4 GB). A `_bulk_get` answer past it is asked again a document at a
/// time; one document past it is reported as a failure.
pub const MAX_ANSWER_BYTES: usize = 64 << 20;

/// The message of the reading error past the answer limit.
const ANSWER_TOO_LARGE: &str = "the answer passed the replication's answer limit";

/// An answer's body, read from the replicator's thread a frame at a time,
/// within `limit` bytes.
struct Answer<'a> {
    runtime: &'a tokio::runtime::Runtime,
    limit: usize,
    body: hyper::body::Incoming,
    chunk: Bytes,
    read: usize,
    ended: bool,
}

impl Answer<'_> {
    /// Reads what is left of an answer whose value is read, if that is
    /// little (its last frame), so that its connection can be kept.
    fn finish(&mut self) {
        let mut rest = [0u8; 4096];
        for _ in 0..4 {
            match std::io::Read::read(self, &mut rest) {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    }

    /// The whole body (within the bound).
    fn read_all(&mut self) -> std::io::Result<Vec<u8>> {
        let mut out = Vec::new();
        std::io::Read::read_to_end(self, &mut out)?;
        Ok(out)
    }
}

impl std::io::Read for Answer<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.chunk.is_empty() {
            if self.ended {
                return Ok(0);
            }
            let frame = self.runtime.block_on(async { tokio::time::timeout(REQUEST_TIMEOUT, self.body.frame()).await });
            match frame {
                Err(_) => return Err(std::io::Error::new(std::io::ErrorKind::TimedOut, format!("no data in {} s", REQUEST_TIMEOUT.as_secs()))),
                Ok(None) => self.ended = true,
                Ok(Some(Err(e))) => return Err(std::io::Error::other(e)),
                Ok(Some(Ok(frame))) => {
                    if let Ok(data) = frame.into_data() {
                        self.read += data.len();
                        if self.read > self.limit {
                            return Err(std::io::Error::new(std::io::ErrorKind::FileTooLarge, ANSWER_TOO_LARGE));
                        }
                        self.chunk = data;
                    }
                }
            }
        }
        let n = buf.len().min(self.chunk.len());
        buf[..n].copy_from_slice(&self.chunk[..n]);
        let _ = self.chunk.split_to(n);
        Ok(n)
    }
}

pub struct HttpEndpoint {
    host: String,
    port: u16,
    /// The database's path, percent-encoded as given, without a trailing `/`.
    db_path: String,
    authorization: Option<String>,
    display: String,
    runtime: tokio::runtime::Runtime,
    connection: Mutex<Option<SendRequest<Full<Bytes>>>>,
    /// The most bytes read of one answer ([`MAX_ANSWER_BYTES`] unless set).
    max_answer_bytes: usize,
}

impl HttpEndpoint {
    /// `http://[user:password@]host[:port]/db`. The user and password may be
    /// percent-encoded; the database name must be (`/` as `%2F`).
    pub fn new(url: &str) -> Result<HttpEndpoint> {
        let bad = |why: &str| Error::Address(format!("{}: {why}", redact(url)));
        let rest = if let Some(rest) = url.strip_prefix("http://") {
            rest
        } else if url.starts_with("https://") {
            return Err(bad("https is not supported yet; use http (on a trusted network or through a TLS tunnel)"));
        } else {
            return Err(bad("not an http:// URL"));
        };
        let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        let (userinfo, hostport) = match authority.rfind('@') {
            Some(i) => (Some(&authority[..i]), &authority[i + 1..]),
            None => (None, authority),
        };
        // `[v6 address]:port`, `host:port`, or either without a port.
        let (host, port) = match hostport.strip_prefix('[') {
            Some(v6) => {
                let (h, after) = v6.split_once(']').ok_or_else(|| bad("an IPv6 address without its closing ]"))?;
                (h, after.strip_prefix(':'))
            }
            None => match hostport.rsplit_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (hostport, None),
            },
        };
        let port = match port {
            Some(p) => p.parse::<u16>().map_err(|_| bad("the port is not a number"))?,
            None => 80,
        };
        if host.is_empty() {
            return Err(bad("no host"));
        }
        let db_path = path.trim_end_matches('/').to_owned();
        if db_path.is_empty() || db_path.contains(['?', '#']) {
            return Err(bad("the URL must name a database: http://host:port/db"));
        }
        let authorization = userinfo.map(|u| {
            let decoded = percent_decode(u);
            format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(decoded))
        });
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()
            .map_err(|e| Error::Connection { endpoint: redact(url), reason: format!("cannot start the HTTP client: {e}") })?;
        Ok(HttpEndpoint {
            host: host.to_owned(),
            port,
            db_path,
            authorization,
            display: redact(url),
            runtime,
            connection: Mutex::new(None),
            max_answer_bytes: MAX_ANSWER_BYTES,
        })
    }

    /// Reads answers of up to `bytes` (a server gives its own request body
    /// limit: a document it would take in a `PUT` it also replicates in).
    pub fn set_max_answer_bytes(&mut self, bytes: usize) {
        self.max_answer_bytes = bytes;
    }

    /// Sends this `Authorization` header instead of the URL's credentials.
    pub fn set_authorization(&mut self, value: String) {
        self.authorization = Some(value);
    }

    fn connection_error(&self, reason: impl std::fmt::Display) -> Error {
        Error::Connection { endpoint: self.display.clone(), reason: reason.to_string() }
    }

    async fn connect(&self) -> Result<SendRequest<Full<Bytes>>> {
        let stream = tokio::net::TcpStream::connect((self.host.as_str(), self.port))
            .await
            .map_err(|e| self.connection_error(format!("cannot connect to {}:{}: {e}", self.host, self.port)))?;
        stream.set_nodelay(true).ok();
        let (sender, connection) = http1::handshake(TokioIo::new(stream)).await.map_err(|e| self.connection_error(e))?;
        // Driven whenever the runtime runs, i.e. during our own requests.
        tokio::spawn(async move {
            let _ = connection.await;
        });
        Ok(sender)
    }

    /// One request; the answer's status and JSON body, read up to the
    /// answer limit. A request on a kept connection the server has
    /// since closed is sent again on a new one (every request the
    /// replicator makes is safe to repeat).
    fn call(&self, method: Method, path_and_query: &str, body: Option<&Value>) -> Result<(u16, Value)> {
        let (status, bytes) = self.call_with(method.clone(), path_and_query, body, |_, answer| answer.read_all())?;
        let value = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes).map_err(|e| Error::Protocol {
                endpoint: self.display.clone(),
                reason: format!("{method} {path_and_query} answered {status} with a body that is not JSON: {e}"),
            })?
        };
        Ok((status, value))
    }

    /// One request, its answer's body read by `read` (from this thread,
    /// a frame at a time) into what it makes of it.
    fn call_with<T>(
        &self,
        method: Method,
        path_and_query: &str,
        body: Option<&Value>,
        mut read: impl FnMut(u16, &mut Answer<'_>) -> std::io::Result<T>,
    ) -> Result<(u16, T)> {
        let body = body.map(|b| Bytes::from(b.to_string())).unwrap_or_default();
        let mut slot = self.connection.lock().unwrap_or_else(|p| p.into_inner());
        for attempt in 0..2 {
            let reused = slot.as_ref().is_some_and(|s| !s.is_closed());
            let sent = self.runtime.block_on(async {
                if !reused {
                    *slot = Some(self.connect().await?);
                }
                let sender = slot.as_mut().expect("connected above");
                sender.ready().await.map_err(|e| self.connection_error(e))?;
                let mut request = Request::builder()
                    .method(method.clone())
                    .uri(path_and_query)
                    .header(header::HOST, if self.host.contains(':') { format!("[{}]:{}", self.host, self.port) } else { format!("{}:{}", self.host, self.port) })
                    .header(header::ACCEPT, "application/json")
                    .header(header::CONTENT_TYPE, "application/json");
                if let Some(auth) = &self.authorization {
                    request = request.header(header::AUTHORIZATION, auth);
                }
                let request = request.body(Full::new(body.clone())).map_err(|e| self.connection_error(e))?;
                tokio::time::timeout(REQUEST_TIMEOUT, sender.send_request(request))
                    .await
                    .map_err(|_| self.connection_error(format!("{method} {path_and_query}: no answer in {} s", REQUEST_TIMEOUT.as_secs())))?
                    .map_err(|e| self.connection_error(format!("{method} {path_and_query}: {e}")))
            });
            let response = match sent {
                Ok(r) => r,
                Err(Error::Connection { .. }) if reused && attempt == 0 => {
                    *slot = None;
                    continue;
                }
                Err(e) => {
                    *slot = None;
                    return Err(e);
                }
            };
            let status = response.status().as_u16();
            let mut answer = Answer { runtime: &self.runtime, limit: self.max_answer_bytes, body: response.into_body(), chunk: Bytes::new(), read: 0, ended: false };
            let made = read(status, &mut answer);
            if made.is_ok() {
                answer.finish();
            }
            // An answer not read to its end (cut at a bound) leaves the
            // connection unusable.
            if !answer.ended {
                *slot = None;
            }
            return match made {
                Ok(made) => Ok((status, made)),
                Err(e) if e.kind() == std::io::ErrorKind::FileTooLarge => Err(Error::TooLarge {
                    endpoint: self.display.clone(),
                    reason: format!("{method} {path_and_query}: the answer passed {} bytes, the most a replication reads in one answer", self.max_answer_bytes),
                }),
                Err(e) => {
                    *slot = None;
                    Err(self.connection_error(format!("{method} {path_and_query}: {e}")))
                }
            };
        }
        unreachable!("the second attempt always returns")
    }

    /// A request whose answer must be a success.
    fn expect(&self, method: Method, path_and_query: &str, body: Option<&Value>) -> Result<Value> {
        let (status, value) = self.call(method.clone(), path_and_query, body)?;
        if status >= 400 {
            return Err(self.http_error(&method, path_and_query, status, &value));
        }
        Ok(value)
    }

    fn http_error(&self, method: &Method, path: &str, status: u16, body: &Value) -> Error {
        let field = |k: &str| body.get(k).and_then(Value::as_str).unwrap_or_default().to_owned();
        self.failure(method, path, status, &field("error"), &field("reason"))
    }

    fn failure(&self, method: &Method, path: &str, status: u16, error: &str, reason: &str) -> Error {
        let hint = match status {
            401 => " (give the user and password in the URL: http://user:password@host/db)",
            403 => " (the user needs to be a member of the database, or its admin to write design documents)",
            404 if *method == Method::GET && path == self.db_path => " (a target can be created with --create-target)",
            _ => "",
        };
        Error::Http { status, message: format!("{}: {method} {path} answered {status} {error}: {reason}{hint}", self.display) }
    }

    fn doc_path(&self, id: &str) -> String {
        match id.strip_prefix("_design/") {
            Some(rest) => format!("{}/_design/{}", self.db_path, percent_encode(rest)),
            None => format!("{}/{}", self.db_path, percent_encode(id)),
        }
    }
}

impl Endpoint for HttpEndpoint {
    fn name(&self) -> String {
        self.display.clone()
    }

    fn ensure_exists(&self, create: bool) -> Result<()> {
        let (status, body) = self.call(Method::GET, &self.db_path, None)?;
        match status {
            200 => Ok(()),
            404 if create => {
                let (status, body) = self.call(Method::PUT, &self.db_path, None)?;
                // 412: created meanwhile by someone else.
                if status >= 400 && status != 412 {
                    return Err(self.http_error(&Method::PUT, &self.db_path, status, &body));
                }
                Ok(())
            }
            404 => Err(self.failure(&Method::GET, &self.db_path, status, "not_found", "the database does not exist")),
            _ => Err(self.http_error(&Method::GET, &self.db_path, status, &body)),
        }
    }

    fn changes(&self, since: &Value, limit: usize, filter: Option<&Filter>, wait: Option<Duration>) -> Result<ChangesBatch> {
        let since = match since {
            Value::String(s) => percent_encode(s),
            other => percent_encode(&other.to_string()),
        };
        let mut path = format!("{}/_changes?style=all_docs&since={since}&limit={limit}", self.db_path);
        if let Some(w) = wait {
            path.push_str(&format!("&feed=longpoll&timeout={}", w.as_millis()));
        }
        let (method, path, body) = match filter {
            None => (Method::GET, path, None),
            Some(Filter::DocIds(ids)) => (Method::POST, format!("{path}&filter=_doc_ids"), Some(json!({ "doc_ids": ids }))),
            Some(Filter::Selector(s)) => (Method::POST, format!("{path}&filter=_selector"), Some(json!({ "selector": s }))),
            Some(Filter::Design { name, query_params }) => {
                let mut path = format!("{path}&filter={}", percent_encode(name));
                for (k, v) in query_params {
                    let v = match v {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    };
                    path.push_str(&format!("&{}={}", percent_encode(k), percent_encode(&v)));
                }
                (Method::GET, path, None)
            }
        };
        // Read a row at a time, at most `limit` rows, whatever the source
        // sends (`changes_answer.rs`); an error status is read whole (bounded).
        let (status, page) = self.call_with(method.clone(), &path, body.as_ref(), |status, answer| {
            if status >= 400 {
                return answer.read_all().map(Err);
            }
            Ok(Ok(ChangesPage::read(&mut *answer, limit)))
        })?;
        let page = match page {
            Err(bytes) => return Err(self.http_error(&method, &path, status, &serde_json::from_slice(&bytes).unwrap_or(Value::Null))),
            Ok(Err(reason)) if reason.contains(ANSWER_TOO_LARGE) => {
                return Err(Error::TooLarge {
                    endpoint: self.display.clone(),
                    reason: format!("{method} {path}: the answer passed {} bytes before {limit} changes, the most a replication reads in one answer", self.max_answer_bytes),
                })
            }
            Ok(Err(reason)) => return Err(Error::Protocol { endpoint: self.display.clone(), reason: format!("{method} {path}: {reason}") }),
            Ok(Ok(page)) => page,
        };
        Ok(page.into_batch())
    }

    fn revs_diff(&self, revs: &Map<String, Value>) -> Result<Map<String, Value>> {
        match self.expect(Method::POST, &format!("{}/_revs_diff", self.db_path), Some(&Value::Object(revs.clone())))? {
            Value::Object(m) => Ok(m),
            _ => Err(Error::Protocol { endpoint: self.display.clone(), reason: "_revs_diff answered something other than an object".into() }),
        }
    }

    fn fetch(&self, wanted: &[Wanted]) -> Result<Vec<Value>> {
        let requests: Vec<Value> = wanted
            .iter()
            .flat_map(|w| w.revs.iter().map(|r| json!({ "id": w.id, "rev": r, "atts_since": w.atts_since })))
            .collect();
        let path = format!("{}/_bulk_get?revs=true&attachments=true&latest=true", self.db_path);
        let (status, body) = self.call(Method::POST, &path, Some(&json!({ "docs": requests })))?;
        if status == 404 || status == 405 {
            // A server without `_bulk_get` (CouchDB 1.x): one `open_revs` per document.
            return self.fetch_each(wanted);
        }
        if status >= 400 {
            return Err(self.http_error(&Method::POST, &path, status, &body));
        }
        let mut docs = Vec::new();
        for result in body.get("results").and_then(Value::as_array).into_iter().flatten() {
            for answer in result.get("docs").and_then(Value::as_array).into_iter().flatten() {
                if let Some(doc) = answer.get("ok") {
                    docs.push(doc.clone());
                }
            }
        }
        Ok(docs)
    }

    fn store(&self, docs: Vec<Value>) -> Result<Vec<WriteFailure>> {
        let body = self.expect(Method::POST, &format!("{}/_bulk_docs", self.db_path), Some(&json!({ "docs": docs, "new_edits": false })))?;
        let field = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or_default().to_owned();
        Ok(body
            .as_array()
            .into_iter()
            .flatten()
            .filter(|r| r.get("error").is_some())
            .map(|r| WriteFailure { id: field(r, "id"), error: field(r, "error"), reason: field(r, "reason") })
            .collect())
    }

    fn get_local(&self, id: &str) -> Result<Option<Map<String, Value>>> {
        let path = format!("{}/_local/{}", self.db_path, percent_encode(id));
        match self.call(Method::GET, &path, None)? {
            (404, _) => Ok(None),
            (status, body) if status >= 400 => Err(self.http_error(&Method::GET, &path, status, &body)),
            (_, Value::Object(doc)) => Ok(Some(doc)),
            _ => Err(Error::Protocol { endpoint: self.display.clone(), reason: format!("{path} is not a JSON object") }),
        }
    }

    fn put_local(&self, id: &str, doc: &Map<String, Value>) -> Result<()> {
        let path = format!("{}/_local/{}", self.db_path, percent_encode(id));
        self.expect(Method::PUT, &path, Some(&Value::Object(doc.clone()))).map(drop)
    }
}

impl HttpEndpoint {
    fn fetch_each(&self, wanted: &[Wanted]) -> Result<Vec<Value>> {
        let mut docs = Vec::new();
        for w in wanted {
            let revs = percent_encode(&Value::from(w.revs.clone()).to_string());
            let since = percent_encode(&Value::from(w.atts_since.clone()).to_string());
            let path = format!("{}?revs=true&attachments=true&latest=true&open_revs={revs}&atts_since={since}", self.doc_path(&w.id));
            let body = self.expect(Method::GET, &path, None)?;
            docs.extend(body.as_array().into_iter().flatten().filter_map(|a| a.get("ok").cloned()));
        }
        Ok(docs)
    }
}

/// The URL with its password replaced, for messages and replication ids.
fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else { return url.to_owned() };
    let authority_end = rest.find('/').unwrap_or(rest.len());
    match rest[..authority_end].rfind('@') {
        Some(at) => {
            let user = rest[..at].split(':').next().unwrap_or_default();
            format!("{scheme}://{user}:*****@{}", &rest[at + 1..])
        }
        None => url.to_owned(),
    }
}

/// Everything but RFC 3986's unreserved characters.
const RESERVED: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC.remove(b'-').remove(b'.').remove(b'_').remove(b'~');

fn percent_encode(text: &str) -> String {
    percent_encoding::utf8_percent_encode(text, RESERVED).to_string()
}

fn percent_decode(text: &str) -> Vec<u8> {
    percent_encoding::percent_decode_str(text).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_give_host_port_database_and_credentials() {
        let e = HttpEndpoint::new("http://ann:p%40ss@example.org:5984/my%2Fdb/").unwrap();
        assert_eq!((e.host.as_str(), e.port, e.db_path.as_str()), ("example.org", 5984, "/my%2Fdb"));
        let expected = format!("Basic {}", base64::engine::general_purpose::STANDARD.encode("ann:p@ss"));
        assert_eq!(e.authorization.as_deref(), Some(expected.as_str()));
        assert_eq!(e.name(), "http://ann:*****@example.org:5984/my%2Fdb/");
        let e = HttpEndpoint::new("http://[::1]/db").unwrap();
        assert_eq!((e.host.as_str(), e.port), ("::1", 80));
        for bad in ["https://h/db", "ftp://h/db", "http://h:x/db", "http://h:5984", "http://h/", "http:///db"] {
            assert!(HttpEndpoint::new(bad).is_err(), "{bad} was taken");
        }
    }

    #[test]
    fn design_document_ids_keep_their_slash() {
        let e = HttpEndpoint::new("http://h/db").unwrap();
        assert_eq!(e.doc_path("_design/a b"), "/db/_design/a%20b");
        assert_eq!(e.doc_path("x/y"), "/db/x%2Fy");
    }
}
