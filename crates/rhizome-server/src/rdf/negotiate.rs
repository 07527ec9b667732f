//! Content negotiation (RFC 9110 §12.5.1 `Accept` with q-values) and the
//! media types of the RDF endpoints: what a request body is, and which of
//! the formats we can write a client prefers.

use crate::error::HttpError;
use oxrdfio::RdfFormat;

/// One media range of an `Accept` header.
#[derive(Clone, Debug, PartialEq)]
struct MediaRange {
    kind: String,
    subtype: String,
    q: f32,
}

fn parse_accept(header: &str) -> Vec<MediaRange> {
    header
        .split(',')
        .filter_map(|item| {
            let mut parts = item.split(';');
            let (kind, subtype) = parts.next()?.trim().split_once('/')?;
            let mut q = 1.0;
            for p in parts {
                if let Some((k, v)) = p.split_once('=') {
                    if k.trim().eq_ignore_ascii_case("q") {
                        q = v.trim().parse().unwrap_or(0.0);
                    }
                }
            }
            Some(MediaRange { kind: kind.trim().to_ascii_lowercase(), subtype: subtype.trim().to_ascii_lowercase(), q })
        })
        .collect()
}

/// The quality an `Accept` gives to a media type: from its most specific
/// matching range (`a/b` over `a/*` over `*/*`); 0 if none matches.
fn quality(ranges: &[MediaRange], media_type: &str) -> f32 {
    rank(ranges, media_type).0
}

/// How `accept` ranks `media_type`: its q-value and how specific the
/// range that gave it is (3: the type itself, 2: `type/*`, 1: `*/*`, 0:
/// not accepted).
pub fn ranking(accept: &str, media_type: &str) -> (f32, u8) {
    rank(&parse_accept(accept), media_type)
}

fn rank(ranges: &[MediaRange], media_type: &str) -> (f32, u8) {
    let (kind, subtype) = media_type.split_once('/').unwrap_or((media_type, ""));
    let mut best: Option<(u8, f32)> = None;
    for r in ranges {
        let specificity = match (r.kind.as_str(), r.subtype.as_str()) {
            (k, s) if k == kind && s == subtype => 3,
            (k, "*") if k == kind => 2,
            ("*", "*") => 1,
            _ => continue,
        };
        if best.is_none_or(|(s, _)| specificity > s) {
            best = Some((specificity, r.q));
        }
    }
    best.map_or((0.0, 0), |(s, q)| (q, s))
}

/// Picks from `offers` (media type and value, in the server's order of
/// preference) the one the client ranks highest; ties go to the server's
/// order; no `Accept` means the first. 406 when nothing is acceptable.
pub fn choose<T: Copy>(accept: Option<&str>, offers: &[(&str, T)]) -> Result<T, HttpError> {
    let Some(accept) = accept.filter(|a| !a.trim().is_empty()) else {
        return Ok(offers[0].1);
    };
    let ranges = parse_accept(accept);
    let mut best: Option<(f32, T)> = None;
    for (media_type, value) in offers {
        let q = quality(&ranges, media_type);
        if q > 0.0 && best.is_none_or(|(b, _)| q > b) {
            best = Some((q, *value));
        }
    }
    best.map(|(_, v)| v).ok_or_else(|| {
        let types: Vec<&str> = offers.iter().map(|(t, _)| *t).collect();
        HttpError::new(406, "not_acceptable", format!("none of the media types in Accept: {accept} can be produced here; available: {}", types.join(", ")))
    })
}

/// The formats a graph (CONSTRUCT, DESCRIBE, a Graph Store GET) can be
/// written in, Turtle first.
pub const GRAPH_OFFERS: &[(&str, GraphFormat)] = &[
    ("text/turtle", GraphFormat(RdfFormat::Turtle)),
    ("application/n-triples", GraphFormat(RdfFormat::NTriples)),
    ("application/rdf+xml", GraphFormat(RdfFormat::RdfXml)),
    ("application/ld+json", GraphFormat(RdfFormat::JsonLd { profile: oxjsonld_profile() })),
    ("application/n-quads", GraphFormat(RdfFormat::NQuads)),
    ("application/trig", GraphFormat(RdfFormat::TriG)),
    ("text/plain", GraphFormat(RdfFormat::NTriples)),
    ("application/x-turtle", GraphFormat(RdfFormat::Turtle)),
    ("application/xml", GraphFormat(RdfFormat::RdfXml)),
    ("application/json", GraphFormat(RdfFormat::JsonLd { profile: oxjsonld_profile() })),
];

const fn oxjsonld_profile() -> oxrdfio::JsonLdProfileSet {
    oxrdfio::JsonLdProfileSet::empty()
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GraphFormat(pub RdfFormat);

impl GraphFormat {
    /// The `Content-Type` of a response in this format.
    pub fn content_type(self) -> String {
        format!("{}; charset=utf-8", self.0.media_type())
    }
}

/// The RDF syntax of a request body, from its `Content-Type` (RFC 9110
/// §8.3); 415 when it is not one we parse. A charset other than UTF-8 is
/// refused too: every RDF syntax we parse is UTF-8.
pub fn body_format(content_type: Option<&str>) -> Result<RdfFormat, HttpError> {
    let Some(ct) = content_type else {
        return Err(HttpError::new(415, "unsupported_media_type", "a Content-Type naming an RDF syntax is required (text/turtle, application/n-triples, application/n-quads, application/trig, application/rdf+xml, application/ld+json)"));
    };
    check_utf8(ct)?;
    let essence = ct.split(';').next().unwrap_or("").trim();
    // `text/plain` and `application/json` are what oxrdfio guesses for
    // N-Triples and JSON-LD; an RDF body must say what it is.
    if essence.eq_ignore_ascii_case("text/plain") {
        return Ok(RdfFormat::NTriples);
    }
    RdfFormat::from_media_type(essence)
        .filter(|f| *f != RdfFormat::N3)
        .ok_or_else(|| HttpError::new(415, "unsupported_media_type", format!("cannot parse {essence} as RDF (text/turtle, application/n-triples, application/n-quads, application/trig, application/rdf+xml, application/ld+json)")))
}

/// 415 for a `charset` parameter other than UTF-8 (or its subset ASCII).
pub fn check_utf8(content_type: &str) -> Result<(), HttpError> {
    for param in content_type.split(';').skip(1) {
        if let Some((k, v)) = param.split_once('=') {
            let v = v.trim().trim_matches('"').to_ascii_lowercase();
            if k.trim().eq_ignore_ascii_case("charset") && !matches!(v.as_str(), "utf-8" | "utf8" | "us-ascii" | "ascii") {
                return Err(HttpError::new(415, "unsupported_media_type", format!("charset {v} is not supported; send UTF-8")));
            }
        }
    }
    Ok(())
}

/// The media type of a `Content-Type` header without its parameters,
/// lowercased.
pub fn essence(content_type: Option<&str>) -> Option<String> {
    content_type.map(|ct| ct.split(';').next().unwrap_or("").trim().to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    const OFFERS: &[(&str, u8)] = &[("application/sparql-results+json", 1), ("application/sparql-results+xml", 2), ("text/csv", 3)];

    #[test]
    fn no_accept_gives_the_first_offer() {
        assert_eq!(choose(None, OFFERS).unwrap(), 1);
        assert_eq!(choose(Some("*/*"), OFFERS).unwrap(), 1);
    }

    #[test]
    fn q_values_rank_offers() {
        assert_eq!(choose(Some("application/sparql-results+json;q=0.5, text/csv"), OFFERS).unwrap(), 3);
        assert_eq!(choose(Some("text/*;q=0.9, application/sparql-results+xml"), OFFERS).unwrap(), 2);
        assert_eq!(choose(Some("text/csv;q=0, */*;q=0.1"), OFFERS).unwrap(), 1);
    }

    #[test]
    fn a_more_specific_range_overrides_a_wildcard() {
        assert_eq!(choose(Some("*/*;q=0.9, application/sparql-results+json;q=0"), OFFERS).unwrap(), 2);
    }

    #[test]
    fn nothing_acceptable_is_406() {
        assert_eq!(choose(Some("image/png"), OFFERS).unwrap_err().status, 406);
    }

    #[test]
    fn body_formats_come_from_the_content_type() {
        assert_eq!(body_format(Some("text/turtle; charset=utf-8")).unwrap(), RdfFormat::Turtle);
        assert_eq!(body_format(Some("application/rdf+xml")).unwrap(), RdfFormat::RdfXml);
        assert_eq!(body_format(Some("image/png")).unwrap_err().status, 415);
        assert_eq!(body_format(Some("text/turtle; charset=UTF-16")).unwrap_err().status, 415);
        assert_eq!(body_format(None).unwrap_err().status, 415);
    }
}
