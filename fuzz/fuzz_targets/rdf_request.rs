//! Arbitrary `Accept`, `Content-Type` and body bytes through the parsers
//! of `/{db}/_sparql` and `/{db}/_graph` (content negotiation, RDF media
//! types, `multipart/form-data`): never a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // Two header lines, then the body.
    let mut fields = data.splitn(3, |b| *b == b'\n');
    let accept = String::from_utf8_lossy(fields.next().unwrap_or_default());
    let content_type = String::from_utf8_lossy(fields.next().unwrap_or_default());
    let body = fields.next().unwrap_or_default();
    rhizome_server::fuzz_parse_request(&accept, &content_type, body);
});
