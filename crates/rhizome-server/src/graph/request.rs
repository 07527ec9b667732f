//! The JSON bodies of `_traverse` and `_path`, checked member by member:
//! an unknown member, a wrong type or a value out of range is a 400 naming
//! the member.

use super::{max_nodes_cap, DEFAULT_MAX_NODES, MAX_NODES_WITH_DOCS};
use crate::error::HttpError;
use rhizome_docs::DocumentIris;
use rhizome_graph::Direction;
use serde_json::{Map, Value};

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    Traverse,
    Path,
}

/// The largest `depth` (`_traverse`) or `max_depth` (`_path`).
const MAX_DEPTH: u64 = 1000;

/// Shortest paths answered with `"all": true` unless `max_paths` says.
const DEFAULT_MAX_PATHS: u64 = 100;
const MAX_MAX_PATHS: u64 = 10_000;

pub struct WalkRequest {
    /// `start` (`_traverse`) or `from` (`_path`), as an IRI.
    pub start: String,
    pub to: String,
    pub depth: u32,
    pub direction: Direction,
    pub predicates: Option<Vec<String>>,
    pub limit: usize,
    pub include_docs: bool,
    pub all: bool,
    pub max_paths: usize,
    pub max_depth: Option<u32>,
    pub weight: Option<String>,
    pub default_weight: f64,
}

impl WalkRequest {
    pub fn parse(body: &Map<String, Value>, endpoint: Endpoint, iris: &DocumentIris) -> Result<WalkRequest, HttpError> {
        let allowed: &[&str] = match endpoint {
            Endpoint::Traverse => &["start", "depth", "direction", "predicates", "limit", "include_docs"],
            Endpoint::Path => &["from", "to", "direction", "predicates", "limit", "all", "max_paths", "max_depth", "weight", "default_weight"],
        };
        if let Some(k) = body.keys().find(|k| !allowed.contains(&k.as_str())) {
            return Err(HttpError::bad_request(format!("unknown member {k:?}; expected one of {}", allowed.join(", "))));
        }
        let node = |name: &str| -> Result<String, HttpError> {
            match body.get(name) {
                Some(Value::String(s)) if !s.is_empty() => Ok(iris.graph_iri(s)),
                Some(_) => Err(HttpError::bad_request(format!("{name} must be a non-empty string: an IRI or a document id"))),
                None => Err(HttpError::bad_request(format!("missing member {name:?}"))),
            }
        };
        let (start, to) = match endpoint {
            Endpoint::Traverse => (node("start")?, String::new()),
            Endpoint::Path => (node("from")?, node("to")?),
        };
        let include_docs = flag(body, "include_docs")?;
        let (default_limit, max_limit) = if include_docs { (MAX_NODES_WITH_DOCS, MAX_NODES_WITH_DOCS) } else { (DEFAULT_MAX_NODES.min(max_nodes_cap()), max_nodes_cap()) };
        let limit = match number(body, "limit", 1, max_limit as u64)? {
            Some(n) => n as usize,
            None => default_limit,
        };
        let depth = match endpoint {
            Endpoint::Traverse => number(body, "depth", 1, MAX_DEPTH)?.unwrap_or(1) as u32,
            Endpoint::Path => 0,
        };
        let direction = match body.get("direction") {
            None => Direction::Out,
            Some(Value::String(s)) if s == "out" => Direction::Out,
            Some(Value::String(s)) if s == "in" => Direction::In,
            Some(Value::String(s)) if s == "any" => Direction::Any,
            Some(_) => return Err(HttpError::bad_request("direction must be \"out\", \"in\" or \"any\"")),
        };
        let predicates = match body.get("predicates") {
            None | Some(Value::Null) => None,
            Some(Value::Array(items)) => {
                let mut out = Vec::with_capacity(items.len());
                for (i, p) in items.iter().enumerate() {
                    out.push(iri(p).ok_or_else(|| HttpError::bad_request(format!("predicates[{i}] must be an absolute IRI")))?);
                }
                Some(out)
            }
            Some(_) => return Err(HttpError::bad_request("predicates must be an array of IRIs")),
        };
        let all = flag(body, "all")?;
        let max_paths = number(body, "max_paths", 1, MAX_MAX_PATHS)?.unwrap_or(DEFAULT_MAX_PATHS) as usize;
        let max_depth = number(body, "max_depth", 0, MAX_DEPTH)?.map(|n| n as u32);
        let weight = match body.get("weight") {
            None | Some(Value::Null) => None,
            Some(w) => Some(iri(w).ok_or_else(|| HttpError::bad_request("weight must be the absolute IRI of a property"))?),
        };
        if weight.is_some() && (all || max_depth.is_some()) {
            return Err(HttpError::bad_request("weight (the cheapest path) goes with neither all nor max_depth"));
        }
        let default_weight = match body.get("default_weight") {
            None => 1.0,
            Some(v) => v.as_f64().filter(|w| w.is_finite() && *w >= 0.0).ok_or_else(|| HttpError::bad_request("default_weight must be a non-negative number"))?,
        };
        Ok(WalkRequest { start, to, depth, direction, predicates, limit, include_docs, all, max_paths, max_depth, weight, default_weight })
    }
}

fn iri(v: &Value) -> Option<String> {
    let s = v.as_str()?;
    oxiri::Iri::parse(s).ok().map(|_| s.to_owned())
}

fn flag(body: &Map<String, Value>, name: &str) -> Result<bool, HttpError> {
    match body.get(name) {
        None => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(HttpError::bad_request(format!("{name} must be true or false"))),
    }
}

fn number(body: &Map<String, Value>, name: &str, min: u64, max: u64) -> Result<Option<u64>, HttpError> {
    match body.get(name) {
        None => Ok(None),
        Some(v) => match v.as_u64() {
            Some(n) if (min..=max).contains(&n) => Ok(Some(n)),
            _ => Err(HttpError::bad_request(format!("{name} must be an integer from {min} to {max}"))),
        },
    }
}
