//! The W3C protocol manifests: `mf:ProtocolTest` and
//! `mf:GraphStoreProtocolTest` entries, each an `ht:Connection` whose
//! `ht:requests` list holds `ht:Request`s (method, `ht:absolutePath`,
//! headers, a `cnt:ContentAsText` body) with an `ht:resp` giving the
//! expected status (`mf:expectedStatus`), and optionally a boolean
//! (`mf:expectedBoolean`), a kind of result (`mf:expectedFormat`), headers
//! and an RDF body to compare, or a `mf:expectedLocation` variable.
//! `ut:graphData` names the data each test starts with.

use oxrdf::{Graph, NamedOrBlankNode, Term};
use std::path::{Path, PathBuf};

use rhizome_w3c::{get, get_all, iri_to_path, node, rdf_list, MF};
const HT: &str = "http://www.w3.org/2011/http#";
const CNT: &str = "http://www.w3.org/2011/content#";
const UT: &str = "http://www.w3.org/2009/sparql/tests/test-update#";
const DAWGT: &str = "http://www.w3.org/2001/sw/DataAccess/tests/test-dawg#";
const HTS: &str = "http://www.w3.org/2011/http-statusCodes#";
const RDFS_LABEL: &str = "http://www.w3.org/2000/01/rdf-schema#label";

#[derive(Clone, Debug)]
pub struct HttpTest {
    pub iri: String,
    pub name: String,
    /// `mf:requires` features (local names).
    pub requires: Vec<String>,
    /// Files to load first: (path, graph IRI).
    pub graph_data: Vec<(PathBuf, String)>,
    pub requests: Vec<HttpRequest>,
    /// NotApproved or Withdrawn.
    pub skip: bool,
}

#[derive(Clone, Debug)]
pub struct HttpRequest {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Option<String>,
    /// `cnt:characterEncoding` of the body (UTF-8 unless said).
    pub encoding: String,
    pub expect: Expected,
}

#[derive(Clone, Debug, Default)]
pub struct Expected {
    /// Local names in `hts:`: `OK`, `Created`, `StatusCode2xx`, ...
    pub statuses: Vec<String>,
    pub boolean: Option<bool>,
    /// `boolean`, `tabular` or `RDF`.
    pub format: Option<String>,
    pub headers: Vec<(String, String)>,
    pub body: Option<String>,
    /// The template variable the `Location` header's value fills.
    pub location_var: Option<String>,
}

/// Whether a status code is one of the expected ones.
pub fn status_matches(names: &[String], code: u16) -> bool {
    names.iter().any(|n| match n.as_str() {
        "OK" => code == 200,
        "Created" => code == 201,
        "NoContent" => code == 204,
        "BadRequest" => code == 400,
        "NotFound" => code == 404,
        "NotAcceptable" => code == 406,
        "UnsupportedMediaType" => code == 415,
        other => match other.strip_prefix("StatusCode").and_then(|c| c.strip_suffix("xx")).and_then(|c| c.parse::<u16>().ok()) {
            Some(class) => code / 100 == class,
            None => false,
        },
    })
}

pub fn read_manifest(root: &Path, rel: &str) -> Result<Vec<HttpTest>, String> {
    rhizome_w3c::read_manifest(root, rel, |graph, entry| test(root, graph, entry))
}

fn text(t: Option<Term>) -> Option<String> {
    match t {
        Some(Term::Literal(l)) => Some(l.value().to_owned()),
        Some(Term::NamedNode(n)) => Some(n.into_string()),
        _ => None,
    }
}

fn local(t: &Term, ns: &str) -> Option<String> {
    match t {
        Term::NamedNode(n) => n.as_str().strip_prefix(ns).map(str::to_owned),
        _ => None,
    }
}

fn test(root: &Path, graph: &Graph, entry: &Term) -> Result<HttpTest, String> {
    let s = node(entry).ok_or("a test that is a literal")?;
    let iri = match &s {
        NamedOrBlankNode::NamedNode(n) => n.as_str().to_owned(),
        NamedOrBlankNode::BlankNode(b) => format!("_:{}", b.as_str()),
    };
    let name = text(get(graph, &s, &format!("{MF}name"))).unwrap_or_default();
    let requires = get_all(graph, &s, &format!("{MF}requires")).iter().filter_map(|t| local(t, MF)).collect();
    let approval = get(graph, &s, &format!("{DAWGT}approval")).and_then(|t| local(&t, DAWGT));
    let skip = matches!(approval.as_deref(), Some("NotApproved" | "Withdrawn"));
    let mut graph_data = Vec::new();
    for gd in get_all(graph, &s, &format!("{UT}graphData")) {
        let gd = node(&gd).ok_or("ut:graphData is a literal")?;
        let file = text(get(graph, &gd, &format!("{UT}graph"))).ok_or_else(|| format!("{iri}: ut:graphData without ut:graph"))?;
        let label = text(get(graph, &gd, RDFS_LABEL)).ok_or_else(|| format!("{iri}: ut:graphData without rdfs:label"))?;
        graph_data.push((iri_to_path(root, &file)?, label));
    }
    let action = get(graph, &s, &format!("{MF}action")).and_then(|a| node(&a)).ok_or_else(|| format!("{iri}: no mf:action"))?;
    let list = get(graph, &action, &format!("{HT}requests")).ok_or_else(|| format!("{iri}: no ht:requests"))?;
    let mut requests = Vec::new();
    for r in rdf_list(graph, list)? {
        let r = node(&r).ok_or("a request that is a literal")?;
        requests.push(request(graph, &r).map_err(|e| format!("{iri}: {e}"))?);
    }
    Ok(HttpTest { iri, name, requires, graph_data, requests, skip })
}

fn headers(graph: &Graph, s: &NamedOrBlankNode) -> Result<Vec<(String, String)>, String> {
    let Some(list) = get(graph, s, &format!("{HT}headers")) else { return Ok(Vec::new()) };
    let mut out = Vec::new();
    for h in rdf_list(graph, list)? {
        let h = node(&h).ok_or("a header that is a literal")?;
        let name = text(get(graph, &h, &format!("{HT}fieldName"))).ok_or("a header without ht:fieldName")?;
        let value = text(get(graph, &h, &format!("{HT}fieldValue"))).ok_or("a header without ht:fieldValue")?;
        out.push((name.to_ascii_lowercase(), value));
    }
    Ok(out)
}

fn body(graph: &Graph, s: &NamedOrBlankNode) -> (Option<String>, String) {
    match get(graph, s, &format!("{HT}body")).and_then(|b| node(&b)) {
        Some(b) => (text(get(graph, &b, &format!("{CNT}chars"))), text(get(graph, &b, &format!("{CNT}characterEncoding"))).unwrap_or_else(|| "UTF-8".into())),
        None => (None, "UTF-8".into()),
    }
}

fn request(graph: &Graph, r: &NamedOrBlankNode) -> Result<HttpRequest, String> {
    let method = text(get(graph, r, &format!("{HT}methodName"))).ok_or("a request without ht:methodName")?;
    let path = text(get(graph, r, &format!("{HT}absolutePath"))).ok_or("a request without ht:absolutePath")?;
    let (request_body, encoding) = body(graph, r);
    let resp = get(graph, r, &format!("{HT}resp")).and_then(|x| node(&x)).ok_or("a request without ht:resp")?;
    let (expected_body, _) = body(graph, &resp);
    let expect = Expected {
        statuses: get_all(graph, &resp, &format!("{MF}expectedStatus")).iter().filter_map(|t| local(t, HTS)).collect(),
        boolean: match get(graph, &resp, &format!("{MF}expectedBoolean")) {
            Some(Term::Literal(l)) => Some(l.value() == "true"),
            _ => None,
        },
        format: text(get(graph, &resp, &format!("{MF}expectedFormat"))),
        headers: headers(graph, &resp)?,
        body: expected_body,
        location_var: text(get(graph, &resp, &format!("{MF}expectedLocation"))),
    };
    Ok(HttpRequest { method, path, headers: headers(graph, r)?, body: request_body, encoding, expect })
}

