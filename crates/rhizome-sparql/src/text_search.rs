//! Full-text search inside SPARQL: a property function, in Jena's
//! `text:query` shapes (https://jena.apache.org/documentation/query/text-query.html),
//! under Rhizome's namespace `urn:rhizome:text#` (`rt:search`) and
//! Jena's own (`http://jena.apache.org/text#query`):
//!
//! - `?s rt:search "query"`: subjects with a literal matching the query;
//! - `?s rt:search (<predicate> "query" limit)`: of one predicate, at most
//!   `limit` hits (the predicate and the limit are optional);
//! - `(?s ?score ?literal) rt:search ...`: also the hit's score (an
//!   `xsd:double`, higher is better) and the literal matched.
//!
//! The query is Lucene's syntax. This crate does not own the index (it
//! is `rhizome-search`'s, below the documents): the caller finds the
//! property function's calls in a query ([`text_calls`]), answers them,
//! and plans the query inside [`with_answers`]; each call then enters the
//! plan as a VALUES block of its hits, joined with the rest of its group
//! (as `SERVICE <urn:rhizome:graph>` with constant ends does).

use crate::error::{Result, SparqlError};
use crate::plan::{Plan, Row, Translator, Var};
use oxrdf::vocab::{rdf, xsd};
use oxrdf::{Literal, Term};
use spargebra::algebra::GraphPattern;
use spargebra::term::{NamedNodePattern, TermPattern, TriplePattern};
use spargebra::Query;
use std::cell::RefCell;
use std::collections::HashMap;

/// Rhizome's property function.
pub const RHIZOME_SEARCH: &str = "urn:rhizome:text#search";
/// Jena's.
pub const JENA_QUERY: &str = "http://jena.apache.org/text#query";

/// Hits of a call unless its limit says (Jena's default).
pub const DEFAULT_LIMIT: usize = 10_000;

/// One call of the property function: what to search.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TextCall {
    pub query: String,
    /// Only literals of this predicate (an IRI).
    pub predicate: Option<String>,
    pub limit: usize,
}

/// One hit: the subject of the literal, the literal, and its score.
#[derive(Clone, Debug)]
pub struct TextHit {
    pub subject: Term,
    pub literal: Literal,
    pub score: f64,
}

/// The answers of the calls a query makes, by call.
pub type TextAnswers = HashMap<TextCall, Vec<TextHit>>;

thread_local! {
    static ANSWERS: RefCell<Option<TextAnswers>> = const { RefCell::new(None) };
}

/// Runs `f` (which plans a query) with these answers to its calls.
pub fn with_answers<R>(answers: TextAnswers, f: impl FnOnce() -> R) -> R {
    let before = ANSWERS.with(|a| a.replace(Some(answers)));
    let out = f();
    ANSWERS.with(|a| *a.borrow_mut() = before);
    out
}

fn is_function(p: &NamedNodePattern) -> bool {
    matches!(p, NamedNodePattern::NamedNode(n) if n.as_str() == RHIZOME_SEARCH || n.as_str() == JENA_QUERY)
}

fn err(m: impl Into<String>) -> SparqlError {
    SparqlError::Evaluation(format!("text search: {}", m.into()))
}

/// A BGP's RDF lists (`( a b c )` is written as `rdf:first`/`rdf:rest`
/// triples on blank nodes), by head.
struct Lists<'p> {
    first: HashMap<&'p str, &'p TermPattern>,
    rest: HashMap<&'p str, &'p TermPattern>,
}

impl<'p> Lists<'p> {
    fn of(patterns: &'p [TriplePattern]) -> Lists<'p> {
        let mut first = HashMap::new();
        let mut rest = HashMap::new();
        for p in patterns {
            let (TermPattern::BlankNode(b), NamedNodePattern::NamedNode(pred)) = (&p.subject, &p.predicate) else { continue };
            if pred.as_ref() == rdf::FIRST {
                first.insert(b.as_str(), &p.object);
            } else if pred.as_ref() == rdf::REST {
                rest.insert(b.as_str(), &p.object);
            }
        }
        Lists { first, rest }
    }

    /// The items of the list at `t`, and its blank nodes; `None` when `t`
    /// is no list.
    fn items(&self, t: &'p TermPattern) -> Option<(Vec<&'p TermPattern>, Vec<&'p str>)> {
        let mut at = t;
        let (mut items, mut nodes) = (Vec::new(), Vec::new());
        loop {
            match at {
                TermPattern::NamedNode(n) if n.as_ref() == rdf::NIL => return Some((items, nodes)),
                TermPattern::BlankNode(b) => {
                    let head = self.first.get(b.as_str())?;
                    items.push(*head);
                    nodes.push(b.as_str());
                    at = self.rest.get(b.as_str())?;
                    if nodes.len() > 16 {
                        return None;
                    }
                }
                _ => return None,
            }
        }
    }
}

/// A call as written: the call, and the patterns of its outputs.
struct Written<'p> {
    call: TextCall,
    subject: &'p TermPattern,
    score: Option<&'p TermPattern>,
    literal: Option<&'p TermPattern>,
    /// The list nodes it used (their triples are its, not the BGP's).
    nodes: Vec<&'p str>,
}

fn read_call<'p>(lists: &Lists<'p>, p: &'p TriplePattern) -> Result<Written<'p>> {
    let mut nodes = Vec::new();
    let (subject, score, literal) = match lists.items(&p.subject) {
        Some((items, n)) => {
            nodes.extend(n);
            match items.as_slice() {
                [s] => (*s, None, None),
                [s, score] => (*s, Some(*score), None),
                [s, score, literal] => (*s, Some(*score), Some(*literal)),
                _ => return Err(err("the subject list is (?subject ?score ?literal)")),
            }
        }
        None => (&p.subject, None, None),
    };
    let args: Vec<&TermPattern> = match lists.items(&p.object) {
        Some((items, n)) => {
            nodes.extend(n);
            items
        }
        None => vec![&p.object],
    };
    let (predicate, rest) = match args.split_first() {
        Some((TermPattern::NamedNode(n), rest)) => (Some(n.as_str().to_owned()), rest),
        _ => (None, args.as_slice()),
    };
    let (query, limit) = match rest {
        [TermPattern::Literal(q)] => (q.value().to_owned(), DEFAULT_LIMIT),
        [TermPattern::Literal(q), TermPattern::Literal(l)] => (q.value().to_owned(), l.value().parse::<usize>().map_err(|_| err(format!("the limit must be a non-negative integer, not {l}")))?),
        _ => return Err(err("the object is \"query\" or ([<predicate>] \"query\" [limit]), with constants")),
    };
    for out in [Some(subject), score, literal].into_iter().flatten() {
        if !matches!(out, TermPattern::Variable(_) | TermPattern::NamedNode(_) | TermPattern::BlankNode(_) | TermPattern::Literal(_)) {
            return Err(err("outputs are variables or constants"));
        }
    }
    Ok(Written { call: TextCall { query, predicate, limit }, subject, score, literal, nodes })
}

/// The calls of the property function in a BGP, and its other patterns.
fn split_bgp(patterns: &[TriplePattern]) -> Result<Option<(Vec<Written<'_>>, Vec<TriplePattern>)>> {
    if !patterns.iter().any(|p| is_function(&p.predicate)) {
        return Ok(None);
    }
    let lists = Lists::of(patterns);
    let mut calls = Vec::new();
    for p in patterns.iter().filter(|p| is_function(&p.predicate)) {
        calls.push(read_call(&lists, p)?);
    }
    let used: Vec<&str> = calls.iter().flat_map(|c| c.nodes.iter().copied()).collect();
    let rest = patterns
        .iter()
        .filter(|p| !is_function(&p.predicate))
        .filter(|p| !matches!(&p.subject, TermPattern::BlankNode(b) if used.contains(&b.as_str())))
        .cloned()
        .collect();
    Ok(Some((calls, rest)))
}

/// Every call of the property function a query makes, to answer before
/// planning it.
pub fn text_calls(query: &Query) -> Result<Vec<TextCall>> {
    let pattern = match query {
        Query::Select { pattern, .. } | Query::Ask { pattern, .. } | Query::Construct { pattern, .. } | Query::Describe { pattern, .. } => pattern,
    };
    let mut out = Vec::new();
    let mut failed = None;
    visit_bgps(pattern, &mut |patterns| match split_bgp(patterns) {
        Ok(Some((calls, _))) => out.extend(calls.into_iter().map(|c| c.call)),
        Ok(None) => {}
        Err(e) => failed = Some(e),
    });
    match failed {
        Some(e) => Err(e),
        None => Ok(out),
    }
}

fn visit_bgps(p: &GraphPattern, f: &mut dyn FnMut(&[TriplePattern])) {
    use GraphPattern as G;
    match p {
        G::Bgp { patterns } => f(patterns),
        G::Path { .. } | G::Values { .. } => {}
        G::Join { left, right } | G::LeftJoin { left, right, .. } | G::Union { left, right } | G::Minus { left, right } => {
            visit_bgps(left, f);
            visit_bgps(right, f);
        }
        G::Filter { inner, .. }
        | G::Graph { inner, .. }
        | G::Extend { inner, .. }
        | G::OrderBy { inner, .. }
        | G::Project { inner, .. }
        | G::Distinct { inner }
        | G::Reduced { inner }
        | G::Slice { inner, .. }
        | G::Group { inner, .. }
        | G::Service { inner, .. } => visit_bgps(inner, f),
        #[allow(unreachable_patterns)]
        _ => {}
    }
}

/// The plan of a BGP holding the property function: each call's hits as
/// rows, joined with the BGP's other patterns; `None` without a call.
pub(crate) fn translate(t: &mut Translator<'_, '_>, patterns: &[TriplePattern]) -> Result<Option<Plan>> {
    let Some((calls, rest)) = split_bgp(patterns)? else { return Ok(None) };
    let mut plan: Option<Plan> = None;
    for c in calls {
        let hits = ANSWERS
            .with(|a| a.borrow().as_ref().map(|a| a.get(&c.call).cloned()))
            .ok_or_else(|| err("this database has no text index to search (the query ran without one)"))?
            .ok_or_else(|| err("a call was not answered before planning"))?;
        let mut rows = Vec::with_capacity(hits.len());
        'hits: for hit in hits {
            let score = Term::Literal(Literal::new_typed_literal(hit.score.to_string(), xsd::DOUBLE));
            let mut row: Vec<(Var, rhizome_rdf::TermId)> = Vec::new();
            for (pattern, value) in [(Some(c.subject), hit.subject), (c.score, score), (c.literal, Term::Literal(hit.literal))] {
                let Some(pattern) = pattern else { continue };
                match pattern {
                    TermPattern::Variable(v) => {
                        let var = t.var(v);
                        let id = t.space.encode(value.as_ref())?;
                        if row.iter().any(|(w, other)| *w == var && *other != id) {
                            continue 'hits;
                        }
                        row.push((var, id));
                    }
                    TermPattern::NamedNode(n) if Term::NamedNode(n.clone()) != value => continue 'hits,
                    TermPattern::Literal(l) if Term::Literal(l.clone()) != value => continue 'hits,
                    _ => {}
                }
            }
            rows.push(widen(row));
        }
        let values = Plan::Values(rows);
        plan = Some(match plan {
            None => values,
            Some(p) => Plan::Join(Box::new(p), Box::new(values)),
        });
    }
    let values = plan.expect("a BGP with a call has a plan");
    if rest.is_empty() {
        return Ok(Some(values));
    }
    let rest = t.pattern(&GraphPattern::Bgp { patterns: rest })?;
    Ok(Some(Plan::Join(Box::new(values), Box::new(rest))))
}

fn widen(pairs: Vec<(Var, rhizome_rdf::TermId)>) -> Row {
    let width = pairs.iter().map(|(v, _)| v + 1).max().unwrap_or(0);
    let mut row = vec![None; width];
    for (v, id) in pairs {
        row[v] = Some(id);
    }
    row
}

#[cfg(test)]
mod tests {
    use super::*;

    fn calls(q: &str) -> Vec<TextCall> {
        text_calls(&crate::parse_query(q, None).unwrap()).unwrap()
    }

    #[test]
    fn reads_both_namespaces_and_jenas_list_forms() {
        let one = calls("SELECT * { ?s <urn:rhizome:text#search> \"fox\" }");
        assert_eq!(one, [TextCall { query: "fox".into(), predicate: None, limit: DEFAULT_LIMIT }]);
        let jena = calls("PREFIX text: <http://jena.apache.org/text#> SELECT * { (?s ?score ?lit) text:query (<http://ex/p> \"brown fox\" 5) . ?s ?p ?o }");
        assert_eq!(jena, [TextCall { query: "brown fox".into(), predicate: Some("http://ex/p".into()), limit: 5 }]);
        let nested = calls("SELECT * { { ?s <urn:rhizome:text#search> \"a\" } UNION { OPTIONAL { ?s <urn:rhizome:text#search> (\"b\" 3) } } }");
        assert_eq!(nested.len(), 2);
        assert!(text_calls(&crate::parse_query("SELECT * { ?s <urn:rhizome:text#search> ?q }", None).unwrap()).is_err());
    }
}
