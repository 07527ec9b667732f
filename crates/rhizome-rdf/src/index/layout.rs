//! Keyspaces and key layouts.
//!
//! A quad whose graph is its own subject (the document model: a subject's
//! triples form the subject's document graph, see ARCHITECTURE.md) is stored
//! as a triple in three orderings, SPO, POS and OSP, with the graph implied.
//! Every other quad (named graphs of N-Quads and TriG, the default graph of a
//! plain dataset) is stored in six orderings, GSPO, GPOS, GOSP, SPOG, POSG,
//! OSPG: six is the fewest orderings of four components in which each of the
//! sixteen bound/unbound patterns is a prefix (one ordering per 2-element
//! subset is needed, and there are six). A graph-bound pattern on the
//! subject-graph triples binds the subject to the graph, so three suffice
//! there. Each quad lives in exactly one of the two families.

use crate::term::TermId;
use rhizome_kv::Keyspace;

pub const META: Keyspace = Keyspace(0);
pub const ID2TERM: Keyspace = Keyspace(1);
pub const TERM2ID: Keyspace = Keyspace(2);
// Its misses are filtered in the memtable (see `rhizome_kv::MEMTABLE_FILTERED`).
const _: () = assert!(rhizome_kv::MEMTABLE_FILTERED[0].0 == TERM2ID.0);
pub const PREDICATE_STATS: Keyspace = Keyspace(3);
/// Graphs that exist while empty (SPARQL CREATE GRAPH).
pub const GRAPHS: Keyspace = Keyspace(4);
/// Quads per class: `rdf:type` id, class id -> count, kept by every write
/// (the typed-subject pattern `?x a C` is the planner's commonest start,
/// and classes differ in size by orders of magnitude).
pub const CLASS_STATS: Keyspace = Keyspace(5);
/// Quads per object of each predicate with few distinct objects: predicate
/// id, object id -> quads, and predicate id -> whether it is counted (see
/// `stats::value_counts`), kept by every write.
pub const VALUE_COUNTS: Keyspace = Keyspace(6);

// Subject-graph triples (graph = subject).
pub const SPO: Keyspace = Keyspace(10);
pub const POS: Keyspace = Keyspace(11);
pub const OSP: Keyspace = Keyspace(12);
// Other quads.
pub const GSPO: Keyspace = Keyspace(20);
pub const GPOS: Keyspace = Keyspace(21);
pub const GOSP: Keyspace = Keyspace(22);
pub const SPOG: Keyspace = Keyspace(23);
pub const POSG: Keyspace = Keyspace(24);
pub const OSPG: Keyspace = Keyspace(25);

/// Component positions in a quad array `[s, p, o, g]`.
pub const S: usize = 0;
pub const P: usize = 1;
pub const O: usize = 2;
pub const G: usize = 3;

/// One index: a keyspace and the order of quad components in its keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ordering {
    pub ks: Keyspace,
    /// Quad positions in key order; 3 long for subject-graph triples.
    pub components: &'static [usize],
}

impl Ordering {
    pub fn is_triple(&self) -> bool {
        self.components.len() == 3
    }
    pub fn key_len(&self) -> usize {
        self.components.len() * 8
    }
    pub fn name(&self) -> String {
        self.components.iter().map(|c| ['S', 'P', 'O', 'G'][*c]).collect()
    }
    /// Writes the key of `quad` in this ordering.
    pub fn encode(&self, quad: &[TermId; 4], key: &mut Vec<u8>) {
        key.clear();
        for c in self.components {
            key.extend_from_slice(&quad[*c].to_be_bytes());
        }
    }
    /// Reads a key back into a quad; for triple orderings the graph is the
    /// subject.
    pub fn decode(&self, key: &[u8]) -> [TermId; 4] {
        debug_assert_eq!(key.len(), self.key_len());
        let mut quad = [TermId(0); 4];
        for (i, c) in self.components.iter().enumerate() {
            quad[*c] = TermId::from_be_slice(&key[i * 8..]);
        }
        if self.is_triple() {
            quad[G] = quad[S];
        }
        quad
    }
}

pub const TRIPLE_SPO: Ordering = Ordering { ks: SPO, components: &[S, P, O] };
pub const TRIPLE_POS: Ordering = Ordering { ks: POS, components: &[P, O, S] };
pub const TRIPLE_OSP: Ordering = Ordering { ks: OSP, components: &[O, S, P] };
pub const QUAD_GSPO: Ordering = Ordering { ks: GSPO, components: &[G, S, P, O] };
pub const QUAD_GPOS: Ordering = Ordering { ks: GPOS, components: &[G, P, O, S] };
pub const QUAD_GOSP: Ordering = Ordering { ks: GOSP, components: &[G, O, S, P] };
pub const QUAD_SPOG: Ordering = Ordering { ks: SPOG, components: &[S, P, O, G] };
pub const QUAD_POSG: Ordering = Ordering { ks: POSG, components: &[P, O, S, G] };
pub const QUAD_OSPG: Ordering = Ordering { ks: OSPG, components: &[O, S, P, G] };

pub const TRIPLE_ORDERINGS: [Ordering; 3] = [TRIPLE_SPO, TRIPLE_POS, TRIPLE_OSP];
pub const QUAD_ORDERINGS: [Ordering; 6] = [QUAD_GSPO, QUAD_GPOS, QUAD_GOSP, QUAD_SPOG, QUAD_POSG, QUAD_OSPG];

/// Whether a quad is stored as a subject-graph triple.
pub fn is_subject_graph(quad: &[TermId; 4]) -> bool {
    quad[G] == quad[S]
}

/// META keys.
pub mod meta {
    pub const FORMAT_VERSION: &[u8] = b"format_version";
    pub const MODE: &[u8] = b"mode";
    pub const NEXT_ID: &[u8] = b"next_id";
    pub const QUADS: &[u8] = b"quads";
    pub const TERMS: &[u8] = b"terms";
    pub const GRAPHS: &[u8] = b"graphs";
}

/// Version of the on-disk layout; bumped on any incompatible change. 3:
/// the quad orderings in segment files and a delta (`crate::segmented`),
/// every other keyspace as in 2.
pub const FORMAT_VERSION: u64 = 3;
/// The layout of stores whose quad orderings are keys in the engine:
/// format 2, the layout a store over a key-value backend without local
/// files keeps (`Store::over_kv`), and the one format-2 stores on disk
/// are migrated from.
pub const KEYS_FORMAT_VERSION: u64 = 2;
