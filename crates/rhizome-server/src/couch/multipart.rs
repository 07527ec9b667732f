//! `multipart/related` document bodies: the JSON document first, then one
//! part per attachment marked `"follows": true`. CouchDB's replicator sends
//! documents with attachments this way
//! (https://docs.couchdb.org/en/stable/api/document/common.html#creating-multiple-attachments).
//! Attachment parts are matched by their `Content-Disposition` filename
//! when present, else by the order of the `follows` entries in the JSON.

use crate::error::HttpError;
use base64::Engine;
use serde_json::{Map, Value};

pub fn is_multipart(content_type: Option<&str>) -> bool {
    content_type.is_some_and(|c| c.trim_start().to_ascii_lowercase().starts_with("multipart/related"))
}

fn boundary(content_type: &str) -> Option<String> {
    content_type.split(';').map(str::trim).find_map(|p| {
        let (k, v) = p.split_once('=')?;
        k.trim().eq_ignore_ascii_case("boundary").then(|| v.trim().trim_matches('"').to_owned())
    })
}

fn find(hay: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    if needle.is_empty() || from > hay.len() {
        return None;
    }
    hay[from..].windows(needle.len()).position(|w| w == needle).map(|p| p + from)
}

struct Part<'a> {
    headers: Vec<(String, String)>,
    body: &'a [u8],
}

fn parts<'a>(body: &'a [u8], boundary: &str) -> Result<Vec<Part<'a>>, HttpError> {
    let bad = || HttpError::bad_request("Malformed multipart/related body");
    let delim = format!("--{boundary}");
    let mut at = find(body, delim.as_bytes(), 0).ok_or_else(bad)? + delim.len();
    let mut out = Vec::new();
    loop {
        if body[at..].starts_with(b"--") {
            return Ok(out);
        }
        let start = at + if body[at..].starts_with(b"\r\n") { 2 } else { 0 };
        let next = find(body, format!("\r\n{delim}").as_bytes(), start).ok_or_else(bad)?;
        let part = &body[start..next];
        let (head, content) = match find(part, b"\r\n\r\n", 0) {
            Some(0) => (&part[..0], &part[4..]),
            Some(p) => (&part[..p], &part[p + 4..]),
            None if part.starts_with(b"\r\n") => (&part[..0], &part[2..]),
            None => return Err(bad()),
        };
        let headers = String::from_utf8_lossy(head)
            .lines()
            .filter_map(|l| l.split_once(':').map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned())))
            .collect();
        out.push(Part { headers, body: content });
        at = next + 2 + delim.len();
    }
}

fn filename(part: &Part<'_>) -> Option<String> {
    let disposition = &part.headers.iter().find(|(k, _)| k == "content-disposition")?.1;
    disposition.split(';').map(str::trim).find_map(|p| p.strip_prefix("filename=")).map(|f| f.trim_matches('"').to_owned())
}

/// The document of a `multipart/related` body, with each `follows`
/// attachment turned into inline `data`.
pub fn parse(content_type: &str, body: &[u8]) -> Result<Map<String, Value>, HttpError> {
    let boundary = boundary(content_type).ok_or_else(|| HttpError::bad_request("multipart/related without a boundary"))?;
    let parts = parts(body, &boundary)?;
    let (first, rest) = parts.split_first().ok_or_else(|| HttpError::bad_request("multipart/related body without parts"))?;
    let mut doc: Map<String, Value> = match serde_json::from_slice(first.body) {
        Ok(Value::Object(m)) => m,
        Ok(_) => return Err(HttpError::bad_request("the first part must be a JSON object")),
        Err(e) => return Err(HttpError::bad_request(format!("Invalid JSON in the first part: {e}"))),
    };
    let Some(Value::Object(atts)) = doc.get_mut("_attachments") else { return Ok(doc) };
    // The order of `follows` entries as written (serde_json's map sorts keys).
    let text = String::from_utf8_lossy(first.body);
    let atts_at = text.find("\"_attachments\"").unwrap_or(0);
    let mut follows: Vec<(usize, String)> = atts
        .iter()
        .filter(|(_, a)| a.get("follows").and_then(Value::as_bool) == Some(true))
        .map(|(name, _)| {
            let quoted = serde_json::to_string(name).unwrap_or_default();
            (text[atts_at..].find(&quoted).unwrap_or(usize::MAX), name.clone())
        })
        .collect();
    follows.sort();
    let mut unnamed = follows.into_iter().map(|(_, n)| n);
    for part in rest {
        let name = match filename(part) {
            Some(f) if atts.contains_key(&f) => f,
            _ => unnamed.next().ok_or_else(|| HttpError::bad_request("more attachment parts than attachments that follow"))?,
        };
        if let Some(Value::Object(att)) = atts.get_mut(&name) {
            att.shift_remove("follows");
            att.shift_remove("length");
            att.insert("data".into(), Value::String(base64::engine::general_purpose::STANDARD.encode(part.body)));
        }
    }
    if atts.values().any(|a| a.get("follows").is_some()) {
        return Err(HttpError::bad_request("an attachment marked follows has no part"));
    }
    Ok(doc)
}

/// Whether the client's `Accept` names `media_type` explicitly. CouchDB
/// also answers multipart to `*/*`; we answer it only to clients that ask
/// (CouchDB's replicator does), so that `curl` and JSON clients keep JSON.
pub fn accepts(accept: Option<&str>, media_type: &str) -> bool {
    accept.is_some_and(|a| a.split(',').any(|t| t.split(';').next().is_some_and(|t| t.trim().eq_ignore_ascii_case(media_type))))
}

/// A rendered document's inline attachments, taken out of the JSON (which
/// then marks them `follows`), in the JSON's order. Empty when every
/// attachment is a stub.
fn take_inline(doc: &mut Map<String, Value>) -> Result<Vec<(String, String, Vec<u8>)>, HttpError> {
    let Some(Value::Object(atts)) = doc.get_mut("_attachments") else { return Ok(Vec::new()) };
    let mut out = Vec::new();
    for (name, att) in atts.iter_mut() {
        let Some(att) = att.as_object_mut() else { continue };
        let Some(Value::String(data)) = att.shift_remove("data") else { continue };
        let bytes = base64::engine::general_purpose::STANDARD.decode(data.as_bytes()).map_err(|e| HttpError::internal(format!("attachment {name}: {e}")))?;
        att.insert("follows".into(), Value::Bool(true));
        att.insert("length".into(), Value::from(bytes.len()));
        let content_type = att.get("content_type").and_then(Value::as_str).unwrap_or("application/octet-stream").to_owned();
        out.push((name.clone(), content_type, bytes));
    }
    Ok(out)
}

/// A document as one part of a multipart body: `application/json` when it
/// has no inline attachment, else a `multipart/related` of the JSON and
/// one part per attachment, as CouchDB sends them
/// (https://docs.couchdb.org/en/stable/api/document/common.html#efficient-multiple-attachments-retrieving).
/// Returns the part's content type and body.
pub fn document_part(mut doc: Map<String, Value>) -> Result<(String, Vec<u8>), HttpError> {
    let atts = take_inline(&mut doc)?;
    let json = serde_json::to_vec(&Value::Object(doc)).unwrap_or_default();
    if atts.is_empty() {
        return Ok(("application/json".to_owned(), json));
    }
    let boundary = crate::http::uuid();
    let mut out = Vec::new();
    out.extend_from_slice(format!("--{boundary}\r\nContent-Type: application/json\r\n\r\n").as_bytes());
    out.extend_from_slice(&json);
    for (name, content_type, bytes) in atts {
        let quoted = name.replace('\\', "\\\\").replace('"', "\\\"");
        out.extend_from_slice(
            format!("\r\n--{boundary}\r\nContent-Disposition: attachment; filename=\"{quoted}\"\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\r\n", bytes.len()).as_bytes(),
        );
        out.extend_from_slice(&bytes);
    }
    out.extend_from_slice(format!("\r\n--{boundary}--").as_bytes());
    Ok((format!("multipart/related; boundary=\"{boundary}\""), out))
}

/// `open_revs` as `multipart/mixed`: one part per revision (a document
/// part, or `{"missing": rev}` marked `error="true"`), as CouchDB's
/// replicator reads them.
pub fn mixed(parts: Vec<(String, Vec<u8>)>) -> (String, Vec<u8>) {
    let boundary = crate::http::uuid();
    let mut out = Vec::new();
    for (content_type, body) in parts {
        out.extend_from_slice(format!("--{boundary}\r\nContent-Type: {content_type}\r\n\r\n").as_bytes());
        out.extend_from_slice(&body);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(format!("--{boundary}--").as_bytes());
    (format!("multipart/mixed; boundary=\"{boundary}\""), out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_with_inline_attachments_become_multipart_related_and_parse_back() {
        let doc: Map<String, Value> = serde_json::from_str(r#"{"_id":"d","_rev":"1-a","_attachments":{"a.txt":{"content_type":"text/plain","digest":"md5-x","revpos":1,"data":"eW8h"},"s":{"stub":true,"length":1}}}"#).unwrap();
        let (ct, body) = document_part(doc).unwrap();
        assert!(ct.starts_with("multipart/related; boundary="), "{ct}");
        let back = parse(&ct, &body).unwrap();
        assert_eq!(back["_attachments"]["a.txt"]["data"], "eW8h");
        assert_eq!(back["_attachments"]["s"]["stub"], true);
        let (ct, body) = document_part(serde_json::from_str(r#"{"_id":"d"}"#).unwrap()).unwrap();
        assert_eq!((ct.as_str(), body.as_slice()), ("application/json", br#"{"_id":"d"}"#.as_slice()));
        assert!(accepts(Some("multipart/mixed, application/json"), "multipart/mixed"));
        assert!(!accepts(Some("*/*"), "multipart/mixed"));
    }

    #[test]
    fn multipart_documents_get_their_attachments_inline() {
        let body = "--abc\r\nContent-Type: application/json\r\n\r\n{\"_id\":\"d\",\"_attachments\":{\"z.txt\":{\"follows\":true,\"content_type\":\"text/plain\",\"length\":2},\"a.txt\":{\"follows\":true,\"content_type\":\"text/plain\",\"length\":3}}}\r\n--abc\r\n\r\nhi\r\n--abc\r\nContent-Disposition: attachment; filename=\"a.txt\"\r\n\r\nyo!\r\n--abc--";
        let doc = parse("multipart/related; boundary=\"abc\"", body.as_bytes()).unwrap();
        assert_eq!(doc["_attachments"]["z.txt"]["data"], "aGk=");
        assert_eq!(doc["_attachments"]["a.txt"]["data"], "eW8h");
        assert!(parse("multipart/related; boundary=abc", b"--abc\r\n\r\nnot json\r\n--abc--").is_err());
    }
}
