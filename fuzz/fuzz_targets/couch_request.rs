//! Arbitrary `Content-Encoding`, `Content-Type` and body bytes through the
//! decoders of CouchDB's endpoints (gzip bodies, `multipart/related`
//! documents, multipart answers) and the query parser: never a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // Two header lines, then the body.
    let mut fields = data.splitn(3, |b| *b == b'\n');
    let encoding = String::from_utf8_lossy(fields.next().unwrap_or_default());
    let content_type = String::from_utf8_lossy(fields.next().unwrap_or_default());
    let body = fields.next().unwrap_or_default();
    rhizome_server::fuzz_couch_request(&encoding, &content_type, body);
});
