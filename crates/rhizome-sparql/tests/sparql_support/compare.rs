//! Expected and actual results, compared as the README says: solutions as
//! a multiset (in order when the query orders), blank nodes up to renaming,
//! graphs and datasets by isomorphism.

use oxrdf::dataset::CanonicalizationAlgorithm;
use oxrdf::vocab::{rdf, xsd};
use oxrdf::{BlankNode, Dataset, Graph, GraphName, Literal, NamedNode, NamedNodeRef, NamedOrBlankNode, Quad, Term, TermRef, Triple};
use oxrdfio::{RdfFormat, RdfParser};
use sparesults::{QueryResultsFormat, QueryResultsParser, SliceQueryResultsParserOutput};
use std::collections::BTreeSet;
use std::fmt::Write as _;

const RS: &str = "http://www.w3.org/2001/sw/DataAccess/tests/result-set#";

#[derive(Debug)]
pub enum Outcome {
    Solutions(Vec<Solution>),
    Boolean(bool),
    Graph(Box<Graph>),
}

/// A solution's bindings, by variable name.
pub type Solution = Vec<(String, Term)>;

pub fn parse_rdf(bytes: &[u8], format: RdfFormat, base: &str) -> Result<Dataset, String> {
    let parser = RdfParser::from_format(format).with_base_iri(base).map_err(|e| e.to_string())?;
    let mut d = Dataset::new();
    for q in parser.for_slice(bytes) {
        d.insert(&q.map_err(|e| e.to_string())?);
    }
    Ok(d)
}

/// Reads an expected result file by its extension.
pub fn read_expected(bytes: &[u8], iri: &str) -> Result<Outcome, String> {
    let ext = iri.rsplit('.').next().unwrap_or("");
    let format = match ext {
        "srx" => Some(QueryResultsFormat::Xml),
        "srj" => Some(QueryResultsFormat::Json),
        "tsv" => Some(QueryResultsFormat::Tsv),
        "csv" => Some(QueryResultsFormat::Csv),
        _ => None,
    };
    if let Some(format) = format {
        return match QueryResultsParser::from_format(format).for_slice(bytes).map_err(|e| e.to_string())? {
            SliceQueryResultsParserOutput::Boolean(b) => Ok(Outcome::Boolean(b)),
            SliceQueryResultsParserOutput::Solutions(solutions) => {
                let mut out = Vec::new();
                for s in solutions {
                    let s = s.map_err(|e| e.to_string())?;
                    out.push(s.iter().map(|(v, t)| (v.as_str().to_owned(), t.clone())).collect());
                }
                Ok(Outcome::Solutions(out))
            }
        };
    }
    let rdf_format = match ext {
        "rdf" => RdfFormat::RdfXml,
        "nt" => RdfFormat::NTriples,
        _ => RdfFormat::Turtle,
    };
    let dataset = parse_rdf(bytes, rdf_format, iri)?;
    let graph: Graph = dataset.iter().map(|q| Triple::from(q.into_owned())).collect();
    let result_set = graph.subject_for_predicate_object(rdf::TYPE, NamedNodeRef::new_unchecked(&format!("{RS}ResultSet"))).map(|s| s.into_owned());
    let Some(rset) = result_set else { return Ok(Outcome::Graph(Box::new(graph))) };
    let rs = |local: &str| NamedNode::new_unchecked(format!("{RS}{local}"));
    if let Some(TermRef::Literal(b)) = graph.object_for_subject_predicate(&rset, &rs("boolean")) {
        return Ok(Outcome::Boolean(b.value() == "true"));
    }
    let mut solutions: Vec<(Option<i64>, Solution)> = Vec::new();
    for s in graph.objects_for_subject_predicate(&rset, &rs("solution")) {
        let s: NamedOrBlankNode = match s {
            TermRef::BlankNode(b) => b.into_owned().into(),
            TermRef::NamedNode(n) => n.into_owned().into(),
            _ => continue,
        };
        let index = match graph.object_for_subject_predicate(&s, &rs("index")) {
            Some(TermRef::Literal(l)) => l.value().parse().ok(),
            _ => None,
        };
        let mut bindings = Vec::new();
        for b in graph.objects_for_subject_predicate(&s, &rs("binding")) {
            let b: NamedOrBlankNode = match b {
                TermRef::BlankNode(b) => b.into_owned().into(),
                TermRef::NamedNode(n) => n.into_owned().into(),
                _ => continue,
            };
            let var = match graph.object_for_subject_predicate(&b, &rs("variable")) {
                Some(TermRef::Literal(l)) => l.value().to_owned(),
                _ => continue,
            };
            if let Some(v) = graph.object_for_subject_predicate(&b, &rs("value")) {
                bindings.push((var, v.into_owned()));
            }
        }
        solutions.push((index, bindings));
    }
    solutions.sort_by_key(|(i, _)| *i);
    Ok(Outcome::Solutions(solutions.into_iter().map(|(_, s)| s).collect()))
}

/// Numbers compared by value: results written by other engines (the
/// expected files) use other lexical forms for the same double or decimal
/// ("3.21E4" and "32100").
fn normalize(t: &Term) -> Term {
    if let Term::Literal(l) = t {
        let dt = l.datatype();
        let v = l.value();
        let canonical = if dt == xsd::DOUBLE || dt == xsd::FLOAT {
            v.parse::<f64>().ok().map(|f| format!("{f:?}"))
        } else if dt == xsd::DECIMAL {
            v.parse::<oxsdatatypes::Decimal>().ok().map(|d| d.to_string())
        } else if dt == xsd::INTEGER {
            v.parse::<oxsdatatypes::Integer>().ok().map(|i| i.to_string())
        } else {
            None
        };
        if let Some(c) = canonical {
            return Literal::new_typed_literal(c, dt).into();
        }
    }
    t.clone()
}

/// Solutions as a graph: one blank node per solution (so duplicates stay),
/// its bindings as arcs, its position when order matters.
fn solutions_graph(solutions: &[Vec<(String, Term)>], ordered: bool, lax: bool) -> Dataset {
    let mut d = Dataset::new();
    let mut seen = BTreeSet::new();
    for (i, s) in solutions.iter().enumerate() {
        let mut s: Vec<(String, Term)> = s.iter().map(|(v, t)| (v.clone(), normalize(t))).collect();
        s.sort_by(|a, b| a.0.cmp(&b.0));
        if lax && !seen.insert(format!("{s:?}")) {
            continue;
        }
        let node = BlankNode::default();
        d.insert(&Quad::new(node.clone(), rdf::TYPE, NamedNode::new_unchecked(format!("{RS}Solution")), GraphName::DefaultGraph));
        for (var, value) in &s {
            d.insert(&Quad::new(node.clone(), NamedNode::new_unchecked(format!("{RS}var-{var}")), value.clone(), GraphName::DefaultGraph));
        }
        if ordered {
            d.insert(&Quad::new(node.clone(), NamedNode::new_unchecked(format!("{RS}index")), Literal::new_typed_literal(i.to_string(), xsd::INTEGER), GraphName::DefaultGraph));
        }
    }
    d
}

pub fn compare_outcomes(actual: Outcome, expected: Outcome, ordered: bool, lax: bool) -> Result<(), String> {
    match (actual, expected) {
        (Outcome::Boolean(a), Outcome::Boolean(e)) if a == e => Ok(()),
        (Outcome::Boolean(a), Outcome::Boolean(e)) => Err(format!("ASK gave {a}, expected {e}")),
        (Outcome::Solutions(a), Outcome::Solutions(e)) => {
            let (n, m) = (a.len(), e.len());
            compare_datasets(solutions_graph(&a, ordered, lax), solutions_graph(&e, ordered, lax))
                .map_err(|why| format!("solutions differ ({n} rows, expected {m}): {why}"))
        }
        (Outcome::Graph(a), Outcome::Graph(e)) => {
            let to_dataset = |g: Box<Graph>| -> Dataset {
                g.iter()
                    .map(|t| {
                        let t = t.into_owned();
                        Triple::new(t.subject, t.predicate, normalize(&t.object)).in_graph(GraphName::DefaultGraph)
                    })
                    .collect()
            };
            compare_datasets(to_dataset(a), to_dataset(e))
        }
        (a, e) => Err(format!("result kind differs: got {}, expected {}", kind(&a), kind(&e))),
    }
}

fn kind(o: &Outcome) -> &'static str {
    match o {
        Outcome::Solutions(_) => "solutions",
        Outcome::Boolean(_) => "a boolean",
        Outcome::Graph(_) => "a graph",
    }
}

pub fn compare_datasets(mut actual: Dataset, mut expected: Dataset) -> Result<(), String> {
    actual.canonicalize(CanonicalizationAlgorithm::Unstable);
    expected.canonicalize(CanonicalizationAlgorithm::Unstable);
    if actual == expected {
        return Ok(());
    }
    let a: BTreeSet<String> = actual.iter().map(|q| q.to_string()).collect();
    let e: BTreeSet<String> = expected.iter().map(|q| q.to_string()).collect();
    let mut why = format!("not isomorphic ({} quads, expected {})", a.len(), e.len());
    for (label, diff) in [("missing", e.difference(&a).collect::<Vec<_>>()), ("unexpected", a.difference(&e).collect())] {
        for q in diff.iter().take(6) {
            let _ = write!(why, "\n      {label}: {q}");
        }
    }
    Err(why)
}
