//! The request and response types the handlers see, independent of hyper:
//! a request with its body already read (bounded), and responses that are
//! either complete or a stream (the `_changes` feeds).

use crate::error::HttpError;
use bytes::Bytes;
use http_body::Frame;
use hyper::header::{HeaderMap, HeaderValue};
use hyper::{Method, Response, StatusCode};
use serde_json::Value;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::sync::mpsc;

/// A request as handlers see it.
pub struct Request {
    pub method: Method,
    /// Path segments, percent-decoded.
    pub segments: Vec<String>,
    pub query: Vec<(String, String)>,
    pub headers: HeaderMap,
    pub body: Bytes,
    /// The client's address (login throttling is per address too).
    pub peer: Option<std::net::IpAddr>,
    /// Set when the client went away before its answer was ready (hyper
    /// drops the request's future); long work (queries, graph writes)
    /// checks it and stops.
    pub cancelled: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// Where a streamed response sends its head (`crate::stream`).
    pub responder: crate::stream::Responder,
    /// What the request holds of the memory all requests share (its body),
    /// given back when the request is done with.
    #[allow(dead_code)] // held for its Drop
    pub memory: rhizome_sparql::MemoryReservation,
}

impl Request {
    pub fn param(&self, name: &str) -> Option<&str> {
        self.query.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    /// A boolean option of a document read or write or of `_changes`:
    /// `true` or `false`; absent, or any other value, is `default`. As
    /// CouchDB (`chttpd_db:parse_doc_query`, `parse_changes_query`), which
    /// matches these options' values exactly and ignores what it does not
    /// know (`revs=True` reads without revisions there). The options of
    /// `_all_docs` and views are read as CouchDB's view options instead
    /// (`couch/all_docs.rs`, `rhizome_views::ViewQuery`): any case, and
    /// a 400 for anything else. Never an error; a `Result` for its callers.
    pub fn flag(&self, name: &str, default: bool) -> Result<bool, HttpError> {
        Ok(match self.param(name) {
            Some("true") => true,
            Some("false") => false,
            _ => default,
        })
    }

    pub fn number(&self, name: &str) -> Result<Option<u64>, HttpError> {
        match self.param(name) {
            None => Ok(None),
            Some(v) => v.parse().map(Some).map_err(|_| HttpError::bad_request(format!("Invalid integer parameter {name}: {v:?}"))),
        }
    }

    /// A JSON-encoded query parameter (`startkey="a"`, `open_revs=[...]`).
    pub fn json_param(&self, name: &str) -> Result<Option<Value>, HttpError> {
        match self.param(name) {
            None => Ok(None),
            Some(v) => serde_json::from_str(v).map(Some).map_err(|e| HttpError::bad_request(format!("Invalid JSON in parameter {name}: {e}"))),
        }
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The body as JSON (400 with serde's reason if it is not).
    pub fn json(&self) -> Result<Value, HttpError> {
        if self.body.is_empty() {
            return Err(HttpError::bad_request("Request body is empty; a JSON value was expected"));
        }
        serde_json::from_slice(&self.body).map_err(|e| HttpError::bad_request(format!("Invalid JSON: {e}")))
    }

    pub fn json_object(&self) -> Result<serde_json::Map<String, Value>, HttpError> {
        match self.json()? {
            Value::Object(m) => Ok(m),
            _ => Err(HttpError::bad_request("Request body must be a JSON object")),
        }
    }
}

/// Decodes a request body sent with `Content-Encoding: gzip` (IBM's
/// Cloudant SDK gzips every request body), bounding what it decodes to
/// `limit` bytes as the raw body is bounded: a body that inflates past it
/// is a 413, not memory. Identity passes through; any other encoding is
/// a 415, as CouchDB answers. The header is removed once decoded, so an
/// attachment upload is stored decoded.
pub fn decode_body(headers: &mut HeaderMap, body: Bytes, limit: usize) -> Result<Bytes, HttpError> {
    use std::io::Read;
    let Some(encoding) = headers.get("content-encoding") else {
        return Ok(body);
    };
    if body.is_empty() {
        // Nothing to decode (a GET from a client that sets the header on
        // every request).
        headers.remove("content-encoding");
        return Ok(body);
    }
    let encoding = encoding.to_str().unwrap_or("").trim().to_ascii_lowercase();
    match encoding.as_str() {
        "" | "identity" => {}
        "gzip" | "x-gzip" => {
            let mut out = Vec::new();
            let mut decoder = flate2::read::MultiGzDecoder::new(&body[..]).take(limit as u64 + 1);
            decoder.read_to_end(&mut out).map_err(|e| HttpError::bad_request(format!("the gzip request body could not be decoded: {e}")))?;
            if out.len() > limit {
                return Err(HttpError::new(413, "too_large", format!("the request body is larger than the limit of {limit} bytes once decoded")));
            }
            headers.remove("content-encoding");
            return Ok(Bytes::from(out));
        }
        other => {
            return Err(HttpError::new(415, "bad_content_type", format!("Content-Encoding {other:?} is not supported (only gzip and identity)")));
        }
    }
    headers.remove("content-encoding");
    Ok(body)
}

/// A response body: all at once, or fed by a channel (streams end when the
/// sender is dropped).
pub enum Body {
    Full(Option<Bytes>),
    Stream(mpsc::Receiver<Bytes>),
    /// Written by a handler as it produces it (`crate::stream`); an error
    /// cuts it.
    Produced(crate::stream::Produced),
    /// The handler's answer went out through its request's responder
    /// already (`crate::stream::BodyWriter::finish`); never sent itself.
    Sent,
}

impl http_body::Body for Body {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        match self.get_mut() {
            Body::Full(b) => Poll::Ready(b.take().map(|b| Ok(Frame::data(b)))),
            Body::Stream(rx) => rx.poll_recv(cx).map(|o| o.map(|b| Ok(Frame::data(b)))),
            Body::Produced(p) => p.poll_chunk(cx).map(|o| o.map(|chunk| chunk.map(Frame::data))),
            Body::Sent => Poll::Ready(None),
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(self, Body::Full(None) | Body::Sent)
    }

    fn size_hint(&self) -> http_body::SizeHint {
        match self {
            Body::Full(Some(b)) => http_body::SizeHint::with_exact(b.len() as u64),
            Body::Full(None) | Body::Sent => http_body::SizeHint::with_exact(0),
            Body::Stream(_) | Body::Produced(_) => http_body::SizeHint::default(),
        }
    }
}

pub fn response(status: u16, content_type: &str, body: Bytes) -> Response<Body> {
    let mut r = Response::new(Body::Full(Some(body)));
    *r.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let h = r.headers_mut();
    h.insert("content-type", HeaderValue::from_str(content_type).unwrap_or(HeaderValue::from_static("application/octet-stream")));
    h.insert("cache-control", HeaderValue::from_static("must-revalidate"));
    r
}

pub fn json(status: u16, value: &Value) -> Response<Body> {
    let mut bytes = serde_json::to_vec(value).unwrap_or_default();
    bytes.push(b'\n');
    response(status, "application/json", Bytes::from(bytes))
}

pub fn error(e: &HttpError) -> Response<Body> {
    let mut r = json(e.status, &serde_json::json!({ "error": e.error, "reason": e.reason }));
    if e.status == 401 {
        // Without WWW-Authenticate browsers do not prompt; CouchDB omits it
        // too unless configured, so clients handle 401 themselves.
        r.headers_mut().insert("x-couch-error", HeaderValue::from_static("unauthorized"));
    }
    if let Some(secs) = e.retry_after_secs {
        r.headers_mut().insert("retry-after", HeaderValue::from(secs));
    }
    r
}

pub fn set_header(r: &mut Response<Body>, name: &'static str, value: &str) {
    if let Ok(v) = HeaderValue::from_str(value) {
        r.headers_mut().insert(name, v);
    }
}

/// Decodes `%XX` escapes (and `+` as space when `form` is set).
pub fn percent_decode(s: &str, form: bool) -> Result<String, HttpError> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hex = bytes.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok()).and_then(|h| u8::from_str_radix(h, 16).ok());
                match hex {
                    Some(b) => out.push(b),
                    None => return Err(HttpError::bad_request(format!("Invalid percent-encoding in {s:?}"))),
                }
                i += 3;
            }
            b'+' if form => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).map_err(|_| HttpError::bad_request(format!("{s:?} is not UTF-8 once decoded")))
}

pub fn parse_query(q: &str) -> Result<Vec<(String, String)>, HttpError> {
    parse_query_split(q, &['&'])
}

/// A request's query string. CouchDB's endpoints split it at `;` as at
/// `&`, as CouchDB's mochiweb does (CouchDB's Mango suite sends
/// `_index?limit=2;skip=1`); the RDF doors split at `&` alone, since a
/// SPARQL query in a URL holds `;` of its own.
pub fn parse_request_query(segments: &[String], q: &str) -> Result<Vec<(String, String)>, HttpError> {
    let rdf = segments.get(1).is_some_and(|s| s == "_sparql" || s == "_graph" || s == "_ldp");
    parse_query_split(q, if rdf { &['&'] } else { &['&', ';'] })
}

fn parse_query_split(q: &str, separators: &[char]) -> Result<Vec<(String, String)>, HttpError> {
    q.split(separators)
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            Ok((percent_decode(k, true)?, percent_decode(v, true)?))
        })
        .collect()
}

pub fn split_path(path: &str) -> Result<Vec<String>, HttpError> {
    let trimmed = path.trim_start_matches('/');
    if trimmed.is_empty() {
        return Ok(Vec::new());
    }
    let mut segs: Vec<String> = trimmed.split('/').map(|s| percent_decode(s, false)).collect::<Result<_, _>>()?;
    // `/db/` is `/db`.
    if segs.len() > 1 && segs.last().is_some_and(String::is_empty) {
        segs.pop();
    }
    Ok(segs)
}

/// An HTTP date (RFC 9110 IMF-fixdate): `Sun, 06 Nov 1994 08:49:37 GMT`.
pub fn http_date(t: std::time::SystemTime) -> String {
    let secs = t.duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (year, month, day) = civil_date(days);
    const WEEKDAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
    format!(
        "{}, {day:02} {} {year} {:02}:{:02}:{:02} GMT",
        WEEKDAYS[(days % 7) as usize],
        MONTHS[(month - 1) as usize],
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// A time in seconds since 1970 as CouchDB's scheduler writes times
/// (`start_time`, `last_updated`): ISO 8601 in UTC, `2026-11-29T00:15:00Z`.
pub fn iso_time(secs: u64) -> String {
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (year, month, day) = civil_date(days);
    format!("{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z", rem / 3600, rem % 3600 / 60, rem % 60)
}

/// Year, month (1-12) and day of a count of days since 1970-01-01.
fn civil_date(days: u64) -> (i64, i64, i64) {
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// 32 random hex digits, as CouchDB's uuids.
pub fn uuid() -> String {
    let mut b = [0u8; 16];
    // The OS random source failing is not something a request can fix;
    // fall back to the clock so ids stay unique enough to proceed.
    if getrandom::fill(&mut b).is_err() {
        let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
        b = t.to_be_bytes();
    }
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn http_dates_are_imf_fixdates() {
        assert_eq!(http_date(UNIX_EPOCH), "Thu, 01 Jan 1970 00:00:00 GMT");
        assert_eq!(http_date(UNIX_EPOCH + Duration::from_secs(784_111_777)), "Sun, 06 Nov 1994 08:49:37 GMT");
        assert_eq!(http_date(UNIX_EPOCH + Duration::from_secs(951_782_400)), "Tue, 29 Feb 2000 00:00:00 GMT");
    }

    #[test]
    fn iso_times_are_utc_seconds() {
        assert_eq!(iso_time(0), "1970-01-01T00:00:00Z");
        assert_eq!(iso_time(784_111_777), "1994-11-06T08:49:37Z");
        assert_eq!(iso_time(951_782_400), "2000-02-29T00:00:00Z");
    }

    #[test]
    fn gzip_bodies_are_decoded_within_the_limit() {
        use std::io::Write;
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(&[b'a'; 1000]).unwrap();
        let packed = Bytes::from(gz.finish().unwrap());
        let mut h = HeaderMap::new();
        h.insert("content-encoding", HeaderValue::from_static("gzip"));
        assert_eq!(decode_body(&mut h.clone(), packed.clone(), 1000).unwrap().len(), 1000);
        assert_eq!(decode_body(&mut h.clone(), packed.clone(), 999).unwrap_err().status, 413);
        assert_eq!(decode_body(&mut h, Bytes::from_static(b"not gzip"), 1000).unwrap_err().status, 400);
        let mut br = HeaderMap::new();
        br.insert("content-encoding", HeaderValue::from_static("br"));
        assert_eq!(decode_body(&mut br, packed, 1000).unwrap_err().status, 415);
    }
}
