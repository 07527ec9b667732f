//! Dumps: the whole store or one graph, streamed in any format.

use crate::index::QuadPattern;
use crate::store::StoreSnapshot;
use crate::term::TermId;
use crate::{Error, Result};
use oxrdf::{GraphName, NamedOrBlankNode, Quad, Term};
use oxrdfio::{RdfFormat, RdfSerializer};
use rustc_hash::FxHashMap;
use std::io::Write;

#[derive(Clone, Debug)]
pub struct DumpOptions {
    pub format: RdfFormat,
    /// One graph only (written in that graph for quad formats).
    pub graph: Option<GraphName>,
}

/// Decodes ids with a bounded cache: predicates, classes and subjects
/// repeat, so most lookups never reach the dictionary.
pub struct DecodeCache<'a> {
    snapshot: &'a StoreSnapshot,
    cache: FxHashMap<u64, Term>,
}

const DECODE_CACHE_ENTRIES: usize = 1 << 20;

impl<'a> DecodeCache<'a> {
    pub fn new(snapshot: &'a StoreSnapshot) -> Self {
        DecodeCache { snapshot, cache: FxHashMap::default() }
    }
    /// Records a term the caller already holds with the id the store gave
    /// it (a lookup's own term), so that decoding that id reads nothing:
    /// a lookup by subject then reads the subject's triples and their other
    /// terms only.
    pub fn remember(&mut self, id: TermId, term: Term) {
        self.cache.insert(id.0, term);
    }

    pub fn term(&mut self, id: TermId) -> Result<Term> {
        if let Some(t) = self.cache.get(&id.0) {
            return Ok(t.clone());
        }
        let t = self
            .snapshot
            .decode(id)?
            .ok_or_else(|| Error::Corrupt("the default graph appears as a term".into()))?;
        if self.cache.len() >= DECODE_CACHE_ENTRIES {
            self.cache.clear();
        }
        self.cache.insert(id.0, t.clone());
        Ok(t)
    }
    pub fn quad(&mut self, q: &[TermId; 4]) -> Result<Quad> {
        let subject = match self.term(q[0])? {
            Term::NamedNode(n) => NamedOrBlankNode::NamedNode(n),
            Term::BlankNode(b) => NamedOrBlankNode::BlankNode(b),
            _ => return Err(Error::Corrupt("a literal in subject position".into())),
        };
        let predicate = match self.term(q[1])? {
            Term::NamedNode(n) => n,
            _ => return Err(Error::Corrupt("a non-IRI in predicate position".into())),
        };
        let object = self.term(q[2])?;
        let graph_name = if q[3] == TermId::DEFAULT_GRAPH {
            GraphName::DefaultGraph
        } else {
            match self.term(q[3])? {
                Term::NamedNode(n) => GraphName::NamedNode(n),
                Term::BlankNode(b) => GraphName::BlankNode(b),
                _ => return Err(Error::Corrupt("a literal as graph name".into())),
            }
        };
        Ok(Quad { subject: subject.into(), predicate, object, graph_name })
    }
}

/// Writes the quads; returns how many.
pub fn dump(snapshot: &StoreSnapshot, options: &DumpOptions, out: impl Write) -> Result<u64> {
    let graph_id = match &options.graph {
        None => None,
        Some(GraphName::DefaultGraph) => Some(snapshot.default_graph()),
        Some(GraphName::NamedNode(n)) => match snapshot.lookup(n.into())? {
            Some(id) => Some(Some(id)),
            None => return Ok(0),
        },
        Some(GraphName::BlankNode(b)) => match snapshot.lookup(b.into())? {
            Some(id) => Some(Some(id)),
            None => return Ok(0),
        },
    };
    let quad_format = options.format.supports_datasets();
    let pattern_graph = match graph_id {
        Some(g) => g,
        // Triple formats get the default graph; quad formats everything.
        None if !quad_format => snapshot.default_graph(),
        None => None,
    };
    let io = |e: std::io::Error| Error::Output { format: options.format.name().to_owned(), source: e };
    let mut serializer = RdfSerializer::from_format(options.format).for_writer(out);
    let mut cache = DecodeCache::new(snapshot);
    let mut n = 0;
    for q in snapshot.scan(QuadPattern { g: pattern_graph, ..Default::default() }) {
        let quad = cache.quad(&q?)?;
        if quad_format {
            serializer.serialize_quad(&quad).map_err(io)?;
        } else {
            serializer.serialize_triple(quad.as_ref()).map_err(io)?;
        }
        n += 1;
    }
    serializer.finish().map_err(io)?;
    Ok(n)
}
