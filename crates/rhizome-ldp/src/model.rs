//! Interaction models, resource paths and ETags.

use crate::vocab::*;

/// How a resource behaves (LDP §5, §4.2.1.4): fixed when it is created.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum InteractionModel {
    RdfSource,
    NonRdfSource,
    BasicContainer,
    DirectContainer,
    IndirectContainer,
}

impl InteractionModel {
    pub fn to_byte(self) -> u8 {
        match self {
            InteractionModel::RdfSource => 1,
            InteractionModel::NonRdfSource => 2,
            InteractionModel::BasicContainer => 3,
            InteractionModel::DirectContainer => 4,
            InteractionModel::IndirectContainer => 5,
        }
    }

    pub fn from_byte(b: u8) -> Option<InteractionModel> {
        Some(match b {
            1 => InteractionModel::RdfSource,
            2 => InteractionModel::NonRdfSource,
            3 => InteractionModel::BasicContainer,
            4 => InteractionModel::DirectContainer,
            5 => InteractionModel::IndirectContainer,
            _ => return None,
        })
    }

    pub fn is_container(self) -> bool {
        matches!(self, InteractionModel::BasicContainer | InteractionModel::DirectContainer | InteractionModel::IndirectContainer)
    }

    /// Whether the resource has membership settings (direct or indirect).
    pub fn has_membership(self) -> bool {
        matches!(self, InteractionModel::DirectContainer | InteractionModel::IndirectContainer)
    }

    /// The most specific type IRI.
    pub fn iri(self) -> &'static str {
        match self {
            InteractionModel::RdfSource => RDF_SOURCE,
            InteractionModel::NonRdfSource => NON_RDF_SOURCE,
            InteractionModel::BasicContainer => BASIC_CONTAINER,
            InteractionModel::DirectContainer => DIRECT_CONTAINER,
            InteractionModel::IndirectContainer => INDIRECT_CONTAINER,
        }
    }

    /// The `rdf:type` triples the server keeps in the resource's graph
    /// (so that SPARQL finds `?s a ldp:Container`).
    pub fn type_iris(self) -> &'static [&'static str] {
        match self {
            InteractionModel::RdfSource => &[RESOURCE, RDF_SOURCE],
            InteractionModel::NonRdfSource => &[RESOURCE, NON_RDF_SOURCE],
            InteractionModel::BasicContainer => &[RESOURCE, RDF_SOURCE, CONTAINER, BASIC_CONTAINER],
            InteractionModel::DirectContainer => &[RESOURCE, RDF_SOURCE, CONTAINER, DIRECT_CONTAINER],
            InteractionModel::IndirectContainer => &[RESOURCE, RDF_SOURCE, CONTAINER, INDIRECT_CONTAINER],
        }
    }

    /// The model an interaction-model type IRI names (`ldp:Container` is a
    /// basic container, as LDP §5.2.3.4 allows; `ldp:Resource` an RDF
    /// source).
    pub fn from_iri(iri: &str) -> Option<InteractionModel> {
        Some(match iri {
            RESOURCE | RDF_SOURCE => InteractionModel::RdfSource,
            NON_RDF_SOURCE => InteractionModel::NonRdfSource,
            CONTAINER | BASIC_CONTAINER => InteractionModel::BasicContainer,
            DIRECT_CONTAINER => InteractionModel::DirectContainer,
            INDIRECT_CONTAINER => InteractionModel::IndirectContainer,
            _ => return None,
        })
    }

    /// The most specific model among type IRIs (a graph's `rdf:type`s, a
    /// request's `Link: <...>; rel="type"`s).
    pub fn most_specific<'a>(iris: impl IntoIterator<Item = &'a str>) -> Option<InteractionModel> {
        let rank = |m: InteractionModel| match m {
            InteractionModel::RdfSource => 0,
            InteractionModel::BasicContainer => 1,
            InteractionModel::NonRdfSource | InteractionModel::DirectContainer | InteractionModel::IndirectContainer => 2,
        };
        iris.into_iter().filter_map(InteractionModel::from_iri).max_by_key(|m| rank(*m))
    }

    /// Whether a client-sent type IRI agrees with this model (it is one of
    /// the types the server keeps, or no LDP type at all).
    pub fn accepts_type(self, iri: &str) -> bool {
        !iri.starts_with(LDP) || self.type_iris().contains(&iri)
    }
}

/// The types a `Link` header names with `rel="type"` (RFC 8288).
pub fn link_types(header: &str) -> Vec<String> {
    let mut out = Vec::new();
    for link in split_links(header) {
        let Some((target, params)) = link.trim().strip_prefix('<').and_then(|l| l.split_once('>')) else { continue };
        let is_type = params.split(';').filter_map(|p| p.split_once('=')).any(|(k, v)| k.trim().eq_ignore_ascii_case("rel") && v.trim().trim_matches('"').split_whitespace().any(|r| r == "type" || r == RDF_TYPE));
        if is_type {
            out.push(target.trim().to_owned());
        }
    }
    out
}

/// Splits a `Link` header at the commas between links (not those inside
/// `<...>` or quotes).
fn split_links(header: &str) -> Vec<&str> {
    let (mut out, mut start, mut in_iri, mut in_quote) = (Vec::new(), 0, false, false);
    for (i, c) in header.char_indices() {
        match c {
            '<' if !in_quote => in_iri = true,
            '>' if !in_quote => in_iri = false,
            '"' if !in_iri => in_quote = !in_quote,
            ',' if !in_iri && !in_quote => {
                out.push(&header[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&header[start..]);
    out
}

/// A resource's place under the root container: its path segments,
/// percent-encoded, joined by `/`, without a trailing slash (`a/b`; the
/// root is the empty path). `.../_ldp/a/b/` and `.../_ldp/a/b` are one
/// resource; its IRI has no trailing slash.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LdpPath(String);

/// Characters kept as they are in a path segment: RFC 3986's unreserved
/// characters and those sub-delimiters that need no escaping in Turtle.
fn keep(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_' | '~' | '!' | '$' | '&' | '\'' | '(' | ')' | '*' | '+' | ',' | ';' | '=' | ':' | '@')
}

pub fn encode_segment(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if keep(c) {
            out.push(c);
        } else {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("%{b:02X}"));
            }
        }
    }
    out
}

impl LdpPath {
    pub fn root() -> LdpPath {
        LdpPath(String::new())
    }

    /// From decoded request segments (empty ones, as a trailing slash
    /// leaves, are skipped). `.` and `..` are refused: a path names one
    /// resource.
    pub fn from_segments<S: AsRef<str>>(segments: &[S]) -> Result<LdpPath, String> {
        let mut parts = Vec::new();
        for s in segments.iter().map(AsRef::as_ref).filter(|s| !s.is_empty()) {
            if s == "." || s == ".." {
                return Err(format!("the path segment {s:?} is not allowed in an LDP resource's path"));
            }
            parts.push(encode_segment(s));
        }
        Ok(LdpPath(parts.join("/")))
    }

    /// The path of an IRI under `root` (the root container's IRI, ending
    /// in `/`); `None` for IRIs elsewhere.
    pub fn from_iri(root: &str, iri: &str) -> Option<LdpPath> {
        if iri == root || Some(iri) == root.strip_suffix('/') {
            return Some(LdpPath::root());
        }
        let rest = iri.strip_prefix(root)?;
        let rest = rest.strip_suffix('/').unwrap_or(rest);
        (!rest.is_empty() && !rest.contains(['#', '?']) && !rest.split('/').any(|s| s.is_empty() || s == "." || s == "..")).then(|| LdpPath(rest.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn is_root(&self) -> bool {
        self.0.is_empty()
    }

    /// The resource's IRI (also its document id and graph IRI).
    pub fn iri(&self, root: &str) -> String {
        format!("{root}{}", self.0)
    }

    pub fn parent(&self) -> Option<LdpPath> {
        if self.0.is_empty() {
            return None;
        }
        Some(LdpPath(self.0.rsplit_once('/').map(|(p, _)| p.to_owned()).unwrap_or_default()))
    }

    /// A child named by one decoded segment.
    pub fn child(&self, name: &str) -> LdpPath {
        let seg = encode_segment(name);
        if self.0.is_empty() {
            LdpPath(seg)
        } else {
            LdpPath(format!("{}/{seg}", self.0))
        }
    }

    /// The last segment, still encoded.
    pub fn name(&self) -> &str {
        self.0.rsplit('/').next().unwrap_or("")
    }
}

/// A resource's strong ETag: its document's revision, and for a
/// container the generation of its children (which changes the
/// representation without a new revision). The same for every `Accept`.
pub fn etag(rev: &str, children_generation: Option<u64>) -> String {
    match children_generation {
        Some(g) => format!("\"{rev}.{g}\""),
        None => format!("\"{rev}\""),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_round_trip_through_iris() {
        let root = "http://h/db/_ldp/";
        let p = LdpPath::from_segments(&["a b", "", "c"]).unwrap();
        assert_eq!(p.as_str(), "a%20b/c");
        assert_eq!(LdpPath::from_iri(root, &p.iri(root)), Some(p.clone()));
        assert_eq!(LdpPath::from_iri(root, "http://h/db/_ldp/a%20b/c/"), Some(p.clone()));
        assert_eq!(p.parent().unwrap().as_str(), "a%20b");
        assert_eq!(p.parent().unwrap().parent(), Some(LdpPath::root()));
        assert_eq!(LdpPath::from_iri(root, "http://h/db/_ldp"), Some(LdpPath::root()));
        assert_eq!(LdpPath::from_iri(root, "http://h/db/x"), None);
        assert_eq!(LdpPath::from_iri(root, "http://h/db/_ldp/a#frag"), None);
        assert!(LdpPath::from_segments(&[".."]).is_err());
    }

    #[test]
    fn link_headers_name_interaction_models() {
        let h = "<http://www.w3.org/ns/ldp#Resource>; rel=\"type\", <http://www.w3.org/ns/ldp#DirectContainer>; rel=\"type\", <http://x/a,b>; rel=\"other\"";
        let types = link_types(h);
        assert_eq!(types.len(), 2);
        assert_eq!(InteractionModel::most_specific(types.iter().map(String::as_str)), Some(InteractionModel::DirectContainer));
        assert_eq!(InteractionModel::most_specific(["http://www.w3.org/ns/ldp#Container"]), Some(InteractionModel::BasicContainer));
        assert!(InteractionModel::BasicContainer.accepts_type(CONTAINER));
        assert!(!InteractionModel::BasicContainer.accepts_type(DIRECT_CONTAINER));
        assert!(InteractionModel::RdfSource.accepts_type("http://xmlns.com/foaf/0.1/Person"));
    }
}

impl LdpPath {
    /// A path already in its encoded form (from the index).
    pub(crate) fn from_raw(s: &str) -> LdpPath {
        LdpPath(s.to_owned())
    }
}
