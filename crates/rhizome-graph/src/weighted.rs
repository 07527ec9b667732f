//! Cheapest paths (Dijkstra): each node entered costs the numeric value of
//! its `weight` property (RDF has no properties on a link itself, so the
//! cost sits on the node a link leads to; model a weighted link as a node
//! of its own to weigh links). A node without a numeric value costs
//! `default_weight`; a negative, infinite or NaN value is an error.

use crate::{Error, LinkFilter, LinkReader, Limits, Result, Source};
use oxrdf::Term;
use rhizome_rdf::{QuadPattern, TermId};
use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap};

#[derive(Clone, Copy, Debug)]
pub struct WeightOptions {
    /// The predicate whose (first numeric) value is a node's cost.
    pub weight: TermId,
    pub default_weight: f64,
}

/// The cheapest path found, `from` and `to` included, and its cost.
#[derive(Clone, Debug)]
pub struct CheapestPath {
    pub path: Vec<TermId>,
    pub cost: f64,
}

#[derive(PartialEq)]
struct Entry(f64, TermId);
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Entry {
    // Reversed: BinaryHeap is a max-heap. Costs are never NaN (checked).
    fn cmp(&self, other: &Self) -> Ordering {
        other.0.total_cmp(&self.0).then_with(|| other.1.cmp(&self.1))
    }
}

/// The cheapest path from `from` to `to`; `None` when `to` is not reached.
pub fn cheapest_path(source: Source<'_>, from: TermId, to: TermId, filter: &LinkFilter, weights: WeightOptions, limits: Limits) -> Result<Option<CheapestPath>> {
    let mut links = LinkReader::new(source, filter.clone(), limits);
    // node -> (best cost so far, parent)
    let mut best: HashMap<TermId, (f64, TermId)> = HashMap::new();
    let mut weight_of: HashMap<TermId, f64> = HashMap::new();
    let mut heap = BinaryHeap::new();
    best.insert(from, (0.0, from));
    heap.push(Entry(0.0, from));
    let mut next = Vec::new();
    while let Some(Entry(cost, node)) = heap.pop() {
        if best.get(&node).is_some_and(|b| b.0 < cost) {
            continue;
        }
        if node == to {
            let mut path = vec![to];
            let mut at = to;
            while at != from {
                at = best[&at].1;
                path.push(at);
            }
            path.reverse();
            return Ok(Some(CheapestPath { path, cost }));
        }
        next.clear();
        links.for_each(node, |n| next.push(n))?;
        next.sort_unstable();
        next.dedup();
        for &n in &next {
            let w = match weight_of.get(&n) {
                Some(w) => *w,
                None => {
                    let w = node_weight(source, n, weights)?;
                    weight_of.insert(n, w);
                    w
                }
            };
            let c = cost + w;
            if best.get(&n).is_none_or(|b| c < b.0) {
                if best.len() > limits.max_nodes {
                    return Err(Error::NodeLimit(limits.max_nodes));
                }
                best.insert(n, (c, node));
                heap.push(Entry(c, n));
            }
        }
    }
    Ok(None)
}

fn node_weight(source: Source<'_>, node: TermId, weights: WeightOptions) -> Result<f64> {
    for q in source.scan(QuadPattern { s: Some(node), p: Some(weights.weight), o: None, g: None }) {
        let o = q?[2];
        if let Some(Term::Literal(l)) = source.decode(o)? {
            if let Some(v) = numeric(&l) {
                if v.is_finite() && v >= 0.0 {
                    return Ok(v);
                }
                let name = source.decode(node)?.map(|t| t.to_string()).unwrap_or_default();
                return Err(Error::BadWeight { node: name, value: l.value().to_owned() });
            }
        }
    }
    Ok(weights.default_weight)
}

fn numeric(l: &oxrdf::Literal) -> Option<f64> {
    const XSD: &str = "http://www.w3.org/2001/XMLSchema#";
    let dt = l.datatype().as_str().strip_prefix(XSD)?;
    let numeric = matches!(
        dt,
        "integer" | "decimal" | "double" | "float" | "int" | "long" | "short" | "byte" | "nonNegativeInteger" | "positiveInteger" | "unsignedInt" | "unsignedLong" | "unsignedShort" | "unsignedByte" | "negativeInteger" | "nonPositiveInteger"
    );
    if !numeric {
        return None;
    }
    match l.value().trim() {
        "INF" => Some(f64::INFINITY),
        "-INF" => Some(f64::NEG_INFINITY),
        v => v.parse().ok(),
    }
}
