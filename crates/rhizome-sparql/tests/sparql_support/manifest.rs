//! Reading the SPARQL test manifests (`shared/conformance/README.md`).

use oxrdf::vocab::rdf;
use oxrdf::{Graph, NamedOrBlankNode, Term};
use std::path::Path;

pub use rhizome_w3c::iri_to_path;
use rhizome_w3c::{get, get_all, node, MF};
const QT: &str = "http://www.w3.org/2001/sw/DataAccess/tests/test-query#";
const UT: &str = "http://www.w3.org/2009/sparql/tests/test-update#";
const DAWGT: &str = "http://www.w3.org/2001/sw/DataAccess/tests/test-dawg#";
const RDFT: &str = "http://www.w3.org/ns/rdftest#";
const RDFS_LABEL: &str = "http://www.w3.org/2000/01/rdf-schema#label";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    PositiveSyntax,
    NegativeSyntax,
    PositiveUpdateSyntax,
    NegativeUpdateSyntax,
    QueryEvaluation,
    UpdateEvaluation,
    CsvResultFormat,
    /// Protocol, service description and other tests outside this runner.
    Other,
}

#[derive(Clone, Debug, Default)]
pub struct GraphData {
    /// The file's IRI.
    pub file: String,
    /// The graph's name (the file IRI for queries, `rdfs:label` for updates).
    pub name: String,
}

#[derive(Clone, Debug)]
pub struct TestCase {
    pub iri: String,
    pub name: String,
    pub kind: Kind,
    /// The query or update file (syntax tests: the action itself).
    pub request: Option<String>,
    pub data: Vec<String>,
    pub graph_data: Vec<GraphData>,
    pub result: Option<String>,
    pub result_data: Vec<String>,
    pub result_graph_data: Vec<GraphData>,
    /// NotApproved or Withdrawn.
    pub skip: bool,
    /// `mf:resultCardinality mf:LaxCardinality` (REDUCED).
    pub lax: bool,
}

pub fn read_manifest(root: &Path, rel: &str) -> Result<Vec<TestCase>, String> {
    rhizome_w3c::read_manifest(root, rel, test_case)
}

fn iri(t: Option<Term>) -> Option<String> {
    match t {
        Some(Term::NamedNode(n)) => Some(n.into_string()),
        _ => None,
    }
}

fn graph_data(graph: &Graph, s: &NamedOrBlankNode, p: &str, query: bool) -> Vec<GraphData> {
    let mut out = Vec::new();
    for t in get_all(graph, s, p) {
        match &t {
            Term::NamedNode(n) if query => out.push(GraphData { file: n.as_str().to_owned(), name: n.as_str().to_owned() }),
            Term::NamedNode(n) => out.push(GraphData { file: n.as_str().to_owned(), name: n.as_str().to_owned() }),
            Term::BlankNode(_) => {
                let b = node(&t).expect("a blank node is a node");
                let file = iri(get(graph, &b, &format!("{UT}graph"))).unwrap_or_default();
                let name = match get(graph, &b, RDFS_LABEL) {
                    Some(Term::Literal(l)) => l.value().to_owned(),
                    _ => file.clone(),
                };
                out.push(GraphData { file, name });
            }
            _ => {}
        }
    }
    out
}

fn test_case(graph: &Graph, entry: &Term) -> Result<TestCase, String> {
    let s = node(entry).ok_or_else(|| format!("bad test entry {entry}"))?;
    let test_iri = match entry {
        Term::NamedNode(n) => n.as_str().to_owned(),
        other => other.to_string(),
    };
    let mut kind = Kind::Other;
    for t in get_all(graph, &s, rdf::TYPE.as_str()) {
        let Term::NamedNode(t) = t else { continue };
        let Some(local) = t.as_str().strip_prefix(MF) else { continue };
        kind = match local {
            "PositiveSyntaxTest" | "PositiveSyntaxTest11" => Kind::PositiveSyntax,
            "NegativeSyntaxTest" | "NegativeSyntaxTest11" => Kind::NegativeSyntax,
            "PositiveUpdateSyntaxTest11" | "PositiveUpdateSyntaxTest" => Kind::PositiveUpdateSyntax,
            "NegativeUpdateSyntaxTest11" | "NegativeUpdateSyntaxTest" => Kind::NegativeUpdateSyntax,
            "QueryEvaluationTest" => Kind::QueryEvaluation,
            "UpdateEvaluationTest" => Kind::UpdateEvaluation,
            "CSVResultFormatTest" => Kind::CsvResultFormat,
            _ => Kind::Other,
        };
    }
    let mut case = TestCase {
        iri: test_iri,
        name: match get(graph, &s, &format!("{MF}name")) {
            Some(Term::Literal(l)) => l.value().to_owned(),
            _ => String::new(),
        },
        kind,
        request: None,
        data: Vec::new(),
        graph_data: Vec::new(),
        result: None,
        result_data: Vec::new(),
        result_graph_data: Vec::new(),
        skip: false,
        lax: iri(get(graph, &s, &format!("{MF}resultCardinality"))).is_some_and(|c| c.ends_with("LaxCardinality")),
    };
    let approval = iri(get(graph, &s, &format!("{DAWGT}approval"))).or_else(|| iri(get(graph, &s, &format!("{RDFT}approval"))));
    case.skip = approval.is_some_and(|a| a.ends_with("NotApproved") || a.ends_with("Withdrawn"));
    match get(graph, &s, &format!("{MF}action")) {
        Some(Term::NamedNode(n)) => case.request = Some(n.into_string()),
        Some(t @ Term::BlankNode(_)) => {
            let a = node(&t).expect("a blank node is a node");
            case.request = iri(get(graph, &a, &format!("{QT}query"))).or_else(|| iri(get(graph, &a, &format!("{UT}request"))));
            for p in [format!("{QT}data"), format!("{UT}data")] {
                case.data.extend(get_all(graph, &a, &p).into_iter().filter_map(|t| iri(Some(t))));
            }
            case.graph_data.extend(graph_data(graph, &a, &format!("{QT}graphData"), true));
            case.graph_data.extend(graph_data(graph, &a, &format!("{UT}graphData"), false));
        }
        _ => {}
    }
    match get(graph, &s, &format!("{MF}result")) {
        Some(Term::NamedNode(n)) => case.result = Some(n.into_string()),
        Some(t @ Term::BlankNode(_)) => {
            let r = node(&t).expect("a blank node is a node");
            case.result_data = get_all(graph, &r, &format!("{UT}data")).into_iter().filter_map(|t| iri(Some(t))).collect();
            case.result_graph_data = graph_data(graph, &r, &format!("{UT}graphData"), false);
        }
        _ => {}
    }
    Ok(case)
}
