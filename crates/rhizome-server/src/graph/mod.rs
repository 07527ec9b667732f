//! Graph traversals over a database's documents (`rhizome-graph`):
//! `POST /{db}/_traverse` (neighbours to depth k) and `POST /{db}/_path`
//! (shortest, all shortest or cheapest paths), JSON in and out. A link is
//! a quad whose object is an IRI or blank node, in any of the database's
//! graphs (the union of its documents). Routed and access-checked like
//! `_sparql` (members of the database may read; `_path` and `_traverse`
//! only read).
//!
//! Nodes are named by IRI; a string that is not an absolute IRI is a
//! document id, standing for the document's IRI (`<base>/<db>/<id>`).
//! Every walk runs on one snapshot within [`TIMEOUT_MS`] and a node limit
//! ([`DEFAULT_MAX_NODES`] unless the request says `"limit"`, at most
//! [`max_nodes_cap`]): a traversal past it answers the nodes of the
//! smallest depths with `"truncated": true`, a path search past it is a
//! 400, so a two-hop walk from a hub with 30k neighbours costs bounded
//! memory and time.

mod request;

use crate::error::HttpError;
use crate::http::{self, Body, Request};
use crate::state::{DbHandle, Server};
use hyper::{Method, Response};
use oxrdf::{NamedNode, Term};
use request::{Endpoint, WalkRequest};
use rhizome_docs::{DocError, DocumentIris, ReadOptions};
use rhizome_graph::{Limits, PathOptions, Source, WeightOptions};
use rhizome_rdf::{StoreSnapshot, TermId};
use serde_json::{json, Map, Value};
use std::time::{Duration, Instant};

/// A walk stops with 503 after this long (as a SPARQL query).
pub const TIMEOUT_MS: u64 = 30_000;

/// Nodes a walk may reach when the request does not say `"limit"`.
pub const DEFAULT_MAX_NODES: usize = 100_000;

/// With `"include_docs": true`, the node limit's default and maximum:
/// every node reached is a document read.
pub const MAX_NODES_WITH_DOCS: usize = 10_000;

/// The largest `"limit"` a request may ask for: `RHIZOME_GRAPH_MAX_NODES`
/// (default 1,000,000, about 100 MB of answer at most).
pub fn max_nodes_cap() -> usize {
    static CAP: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CAP.get_or_init(|| std::env::var("RHIZOME_GRAPH_MAX_NODES").ok().and_then(|v| v.trim().parse().ok()).filter(|n| *n > 0).unwrap_or(1_000_000))
}

pub fn handle(server: &Server, req: &Request, db: &DbHandle, endpoint: &str) -> Result<Response<Body>, HttpError> {
    if req.method != Method::POST {
        return Err(HttpError::method_not_allowed("POST"));
    }
    let endpoint = match endpoint {
        "_traverse" => Endpoint::Traverse,
        _ => Endpoint::Path,
    };
    let iris = DocumentIris::new(&server.base_iri, &db.name);
    let walk = WalkRequest::parse(&req.json_object()?, endpoint, &iris)?;
    let started = Instant::now();
    let limits = Limits { max_nodes: walk.limit, deadline: Some(started + Duration::from_millis(TIMEOUT_MS)) };
    let store = db.db.store();
    let snapshot = store.snapshot().map_err(store_error)?;
    let filter = rhizome_graph::LinkFilter::new(walk.direction, resolve_predicates(&snapshot, &walk.predicates)?);
    let body = match endpoint {
        Endpoint::Traverse => {
            let Some(start) = lookup(&snapshot, &walk.start)? else {
                return Ok(http::json(200, &json!({ "nodes": [], "truncated": false })));
            };
            let found = rhizome_graph::neighbours(Source::of(&snapshot), start, walk.depth, &filter, limits).map_err(graph_error)?;
            let ids: Vec<TermId> = found.nodes.iter().map(|r| r.id).collect();
            if !walk.include_docs {
                // Written straight out: a 2-hop answer is thousands of
                // nodes, and a JSON tree costs a map per node.
                let mut body = String::with_capacity(32 + 64 * ids.len());
                body.push_str("{\"nodes\":[");
                let mut depths = found.nodes.iter().map(|r| r.depth);
                let mut first = true;
                each_name(&snapshot, &ids, |name| {
                    if !first {
                        body.push(',');
                    }
                    first = false;
                    body.push_str("{\"id\":");
                    json_string(&mut body, name);
                    body.push_str(",\"depth\":");
                    let _ = std::fmt::Write::write_fmt(&mut body, format_args!("{}", depths.next().unwrap_or_default()));
                    body.push('}');
                })?;
                body.push_str(if found.truncated { "],\"truncated\":true}" } else { "],\"truncated\":false}" });
                return Ok(http::response(200, "application/json", body.into()));
            }
            let names = names(&snapshot, &ids)?;
            let mut nodes = Vec::with_capacity(ids.len());
            for (r, name) in found.nodes.iter().zip(names) {
                let mut node = Map::new();
                node.insert("doc".into(), document(db, &iris, &name)?);
                node.insert("id".into(), Value::String(name));
                node.insert("depth".into(), json!(r.depth));
                nodes.push(Value::Object(node));
            }
            json!({ "nodes": nodes, "truncated": found.truncated })
        }
        Endpoint::Path => {
            let (from, to) = (lookup(&snapshot, &walk.start)?, lookup(&snapshot, &walk.to)?);
            let (from, to) = match (from, to) {
                (Some(f), Some(t)) => (f, t),
                // A node the store lacks is linked to nothing.
                _ if walk.start == walk.to => return Ok(http::json(200, &json!({ "path": [walk.start] }))),
                _ => return Ok(http::json(200, &no_path(&walk))),
            };
            if let Some(weight) = &walk.weight {
                let Some(weight) = lookup(&snapshot, weight)? else {
                    // No node has the property: every node costs the default.
                    let options = WeightOptions { weight: TermId::DEFAULT_GRAPH, default_weight: walk.default_weight };
                    return cheapest(&snapshot, from, to, &filter, options, limits);
                };
                return cheapest(&snapshot, from, to, &filter, WeightOptions { weight, default_weight: walk.default_weight }, limits);
            }
            let options = PathOptions { all: walk.all, max_paths: walk.max_paths, max_depth: walk.max_depth };
            let found = rhizome_graph::shortest_paths(Source::of(&snapshot), from, to, &filter, options, limits).map_err(graph_error)?;
            let mut paths = Vec::with_capacity(found.paths.len());
            for p in &found.paths {
                paths.push(Value::Array(names(&snapshot, p)?.into_iter().map(Value::String).collect()));
            }
            let first = paths.first().cloned().unwrap_or(Value::Null);
            if walk.all {
                json!({ "path": first, "paths": paths, "truncated": found.truncated })
            } else {
                json!({ "path": first })
            }
        }
    };
    Ok(http::json(200, &body))
}

/// For the fuzz target `graph_request`, the same bytes two ways: as a JSON
/// body through the checks of `_traverse` and `_path` (a body that passes
/// has a limit in range), and as a walk on a small graph: the first six
/// bytes say the start, the end, the depth, the direction, the node limit
/// and the predicates, the rest are links (each byte pair a link between
/// two of 16 nodes, under one of two predicates). Never a panic; a
/// traversal names each node once, within its depth and limit and never
/// the start; a path runs from its start to its end and follows links.
pub fn fuzz_walk_request(data: &[u8]) {
    use oxrdf::{GraphNameRef, NamedNodeRef, QuadRef};
    if let Ok(Value::Object(body)) = serde_json::from_slice::<Value>(data) {
        let iris = DocumentIris::new("http://h", "db");
        for endpoint in [Endpoint::Traverse, Endpoint::Path] {
            if let Ok(walk) = WalkRequest::parse(&body, endpoint, &iris) {
                assert!((1..=max_nodes_cap()).contains(&walk.limit), "limit {} out of range", walk.limit);
            }
        }
    }
    let [start, to, depth, direction, limit, predicates, edges @ ..] = data else { return };
    let node = |b: u8| format!("http://h/db/n{}", b % 16);
    let predicate = |b: u8| format!("http://h/p{}", b >> 7);
    let store = rhizome_rdf::Store::memory(rhizome_rdf::DatasetMode::Union);
    let mut txn = store.transaction().expect("a memory store's transaction");
    let mut links = std::collections::HashSet::new();
    for pair in edges.chunks_exact(2) {
        let (s, o, p) = (node(pair[0]), node(pair[1]), predicate(pair[0]));
        let quad = QuadRef::new(NamedNodeRef::new_unchecked(&s), NamedNodeRef::new_unchecked(&p), NamedNodeRef::new_unchecked(&o), GraphNameRef::NamedNode(NamedNodeRef::new_unchecked(&s)));
        let ids = txn.encode_quad(quad).expect("encoding a quad");
        txn.insert(&ids).expect("inserting a quad");
        links.insert((ids[0], ids[2]));
    }
    txn.commit().expect("committing to memory");
    let snapshot = store.snapshot().expect("a snapshot");
    let id = |iri: &str| lookup(&snapshot, iri).ok().flatten();
    let (Some(start), Some(to)) = (id(&node(*start)), id(&node(*to))) else { return };
    let direction = [rhizome_graph::Direction::Out, rhizome_graph::Direction::In, rhizome_graph::Direction::Any][*direction as usize % 3];
    let predicates = match predicates % 4 {
        0 => None,
        k => Some([0u8, 128].iter().enumerate().filter(|(i, _)| k & (1 << i) != 0).filter_map(|(_, b)| id(&predicate(*b))).collect()),
    };
    let filter = rhizome_graph::LinkFilter::new(direction, predicates);
    let (depth, limit) = (1 + *depth as u32 % 8, 1 + *limit as usize % 32);
    let limits = Limits { max_nodes: limit, deadline: None };
    if let Ok(found) = rhizome_graph::neighbours(Source::of(&snapshot), start, depth, &filter, limits) {
        let mut seen: Vec<TermId> = found.nodes.iter().map(|r| r.id).collect();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), found.nodes.len(), "a node named twice");
        assert!(found.nodes.len() <= limit, "past the limit");
        assert!(found.nodes.iter().all(|r| r.id != start && (1..=depth).contains(&r.depth)), "the start, or a depth out of range");
    }
    let options = PathOptions { all: depth % 2 == 0, max_paths: limit, max_depth: None };
    if let Ok(found) = rhizome_graph::shortest_paths(Source::of(&snapshot), start, to, &filter, options, limits) {
        for p in &found.paths {
            assert_eq!((p.first(), p.last()), (Some(&start), Some(&to)), "a path from its start to its end");
            for w in p.windows(2) {
                let linked = match direction {
                    rhizome_graph::Direction::Out => links.contains(&(w[0], w[1])),
                    rhizome_graph::Direction::In => links.contains(&(w[1], w[0])),
                    rhizome_graph::Direction::Any => links.contains(&(w[0], w[1])) || links.contains(&(w[1], w[0])),
                };
                assert!(linked, "a step of a path that is no link");
            }
        }
    }
}

fn no_path(walk: &WalkRequest) -> Value {
    if walk.all {
        json!({ "path": null, "paths": [], "truncated": false })
    } else if walk.weight.is_some() {
        json!({ "path": null, "cost": null })
    } else {
        json!({ "path": null })
    }
}

fn cheapest(snapshot: &StoreSnapshot, from: TermId, to: TermId, filter: &rhizome_graph::LinkFilter, options: WeightOptions, limits: Limits) -> Result<Response<Body>, HttpError> {
    let found = rhizome_graph::cheapest_path(Source::of(snapshot), from, to, filter, options, limits).map_err(graph_error)?;
    Ok(http::json(
        200,
        &match found {
            Some(p) => json!({ "path": names(snapshot, &p.path)?, "cost": p.cost }),
            None => json!({ "path": null, "cost": null }),
        },
    ))
}

fn resolve_predicates(snapshot: &StoreSnapshot, predicates: &Option<Vec<String>>) -> Result<Option<Vec<TermId>>, HttpError> {
    let Some(predicates) = predicates else { return Ok(None) };
    let mut ids = Vec::new();
    for p in predicates {
        // A predicate the store lacks links nothing.
        if let Some(id) = lookup(snapshot, p)? {
            ids.push(id);
        }
    }
    Ok(Some(ids))
}

fn lookup(snapshot: &StoreSnapshot, iri: &str) -> Result<Option<TermId>, HttpError> {
    let node = NamedNode::new_unchecked(iri);
    snapshot.lookup(node.as_ref().into()).map_err(store_error)
}

/// The IRIs (or `_:` labels) of `ids`, in their order.
fn names(snapshot: &StoreSnapshot, ids: &[TermId]) -> Result<Vec<String>, HttpError> {
    let mut out = Vec::with_capacity(ids.len());
    each_name(snapshot, ids, |name| out.push(name.to_owned()))?;
    Ok(out)
}

/// Calls `f` with the IRI (or `_:` label) of each of `ids`, in order: terms
/// from the store's shared cache where it has them (a walk meets the same
/// hubs again and again), the others read in one pass over the dictionary
/// in id order and added to the cache. One look in the cache per id: a hit
/// copies its name into one buffer at once (a 2-hop answer names thousands
/// of nodes, and each look is a lock and a random memory access).
fn each_name(snapshot: &StoreSnapshot, ids: &[TermId], mut f: impl FnMut(&str)) -> Result<(), HttpError> {
    const MISS: (usize, usize) = (usize::MAX, 0);
    let cache = snapshot.term_cache();
    let push_name = |out: &mut String, t: &Term| match t {
        Term::NamedNode(n) => out.push_str(n.as_str()),
        t => out.push_str(&t.to_string()),
    };
    let mut cached = String::with_capacity(48 * ids.len());
    let mut spans = Vec::with_capacity(ids.len());
    let mut missing = Vec::new();
    // In batches whose terms the dense table loads ahead, so that their
    // cache misses overlap (`TermCache::dense_terms_of`); a batch's loads
    // still fit the CPU's caches when its names are copied.
    for batch in ids.chunks(256) {
        for (id, dense) in batch.iter().zip(cache.dense_terms_of(batch)) {
            let start = cached.len();
            let hit = match dense {
                Some(t) => {
                    push_name(&mut cached, t);
                    true
                }
                None => id.is_in_dictionary() && cache.with(*id, |t| push_name(&mut cached, t)).is_some(),
            };
            if hit {
                spans.push((start, cached.len()));
            } else {
                spans.push(MISS);
                missing.push(*id);
            }
        }
    }
    let mut decoded = std::collections::HashMap::with_capacity(missing.len());
    cache
        .decode_missing(snapshot.kv(), &mut missing, |id, term| {
            decoded.insert(id, term.clone());
        })
        .map_err(store_error)?;
    let mut one = String::new();
    for (id, &(start, end)) in ids.iter().zip(&spans) {
        if start != MISS.0 {
            f(&cached[start..end]);
            continue;
        }
        one.clear();
        match decoded.get(id) {
            Some(t) => push_name(&mut one, t),
            // Not a dictionary term (an inlined value).
            None => match snapshot.decode(*id).map_err(store_error)? {
                Some(t) => push_name(&mut one, &t),
                None => return Err(HttpError::internal(format!("term id {:#x} has no term", id.0))),
            },
        }
        f(&one);
    }
    Ok(())
}

/// The document whose IRI is `iri`, or `null` when there is none.
fn document(db: &DbHandle, iris: &DocumentIris, iri: &str) -> Result<Value, HttpError> {
    match db.db.get_doc(&iris.doc_id(iri), &ReadOptions::default()) {
        Ok(doc) => Ok(Value::Object(doc)),
        Err(DocError::NotFound(_)) => Ok(Value::Null),
        Err(e) => Err(e.into()),
    }
}

fn graph_error(e: rhizome_graph::Error) -> HttpError {
    use rhizome_graph::Error;
    match e {
        Error::Timeout => HttpError::new(503, "query_limit", format!("{e} ({TIMEOUT_MS} ms)")),
        Error::NodeLimit(_) => HttpError::new(400, "query_limit", format!("{e}; ask for a larger \"limit\" (at most {}) or a \"max_depth\"", max_nodes_cap())),
        Error::BadWeight { .. } => HttpError::bad_request(e.to_string()),
        Error::Store(e) => store_error(e),
    }
}

fn store_error(e: rhizome_rdf::Error) -> HttpError {
    HttpError::internal(e.to_string())
}

/// `s` as a JSON string literal.
fn json_string(out: &mut String, s: &str) {
    use std::fmt::Write;
    out.push('"');
    // IRIs rarely hold a character to escape: copied whole when none does.
    if !s.bytes().any(|b| b == b'"' || b == b'\\' || b < 0x20) {
        out.push_str(s);
        out.push('"');
        return;
    }
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::{fuzz_walk_request, json_string};

    /// The fuzz target's hook walks what its bytes ask for, and reads them
    /// as a request body too.
    #[test]
    fn the_fuzz_hook_walks_traversals_and_paths() {
        let links = [0u8, 1, 1, 2, 2, 3, 130, 4, 4, 4];
        for params in [[0u8, 3, 2, 0, 31, 0], [2, 0, 1, 2, 1, 3], [0, 4, 7, 1, 5, 2], [9, 9, 0, 0, 0, 1]] {
            fuzz_walk_request(&[&params[..], &links[..]].concat());
        }
        fuzz_walk_request(br#"{"start": "n0", "depth": 3}"#);
        fuzz_walk_request(br#"{"from": "n0", "to": "n3", "all": true, "limit": 0}"#);
    }

    #[test]
    fn names_written_as_json_strings_read_back_unchanged() {
        for s in ["http://pokec.example/p/12", "_:b0", "", "quote \" backslash \\ nl \n tab \t nul \u{0} é 𝄞", "\"", "\\"] {
            let mut out = String::from("x");
            json_string(&mut out, s);
            let back: String = serde_json::from_str(&out[1..]).unwrap_or_else(|e| panic!("{out:?}: {e}"));
            assert_eq!(back, s);
        }
    }
}
