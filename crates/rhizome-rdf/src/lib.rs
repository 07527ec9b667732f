//! `rhizome-rdf`: RDF on the key-value layer.
//!
//! Owns: the encoding of terms to 8-byte ids (small literals inlined, the
//! rest in a dictionary, [`term`]), the quad indexes and their pattern
//! scans ([`index`]), kept in segment files of our own ([`segment`]) plus
//! an in-memory delta of recent writes ([`segmented`]), the bulk loader
//! (parse, encode, sort runs, ingest), the transactional write path
//! ([`StoreTransaction`]), dumps, statistics, the two dataset modes (union
//! of document graphs, or a plain RDF dataset), the nesting bounds checked
//! before an RDF parser runs ([`nesting`]) and the store's self-check
//! ([`Store::check`]). Does not own: query evaluation (`rhizome-sparql`),
//! documents and revisions (`rhizome-docs`), parsing and serializing RDF
//! syntaxes (`oxttl`, `oxrdfio`).
//!
//! Main types: [`Store`], [`StoreSnapshot`], [`StoreTransaction`],
//! [`TermId`], [`QuadPattern`], [`QuadScan`], [`LoadOptions`],
//! [`LoadSummary`], [`Stats`].
//!
//! # Invariants and choices
//!
//! - **Term ids** ([`term`]): every term is 8 bytes. The top byte is a tag
//!   (blank < IRI < literals, as in SPARQL's order); below it, either a
//!   dictionary sequence number or the value itself for small literals:
//!   xsd:integer (56-bit), xsd:decimal (fixed point, 6 digits),
//!   xsd:boolean, xsd:date, xsd:dateTime (to the second), xsd:string up to
//!   7 bytes. Inlined payloads sort by value within their tag, so a numeric
//!   or date range is an index key range. A literal is inlined only if
//!   decoding gives back its exact lexical form (`"01"^^xsd:integer` goes
//!   to the dictionary and round-trips). Language-tagged strings carry
//!   their primary language subtag in the id ([`TermId::lang_code`]: 2-3
//!   lowercase letters in 15 bits, a subtags flag, over a 40-bit sequence
//!   number), so a language test reads no term.
//! - **Dictionary**: `id2term` (id -> bytes) and `term2id` (tag and bytes ->
//!   id). Ids are sequential rather than hashes, so index keys have small,
//!   compressible ids, and are never reused: a committed id never changes
//!   meaning. `term2id` is keyed by the term itself, not by a hash: sorted
//!   terms share their namespaces, which prefix compression removes (3.6 MB
//!   at 4.8M triples, against 13 MB for 64-bit hash keys), and finding a
//!   term is one read with nothing to verify. Terms over 240 bytes (long
//!   literals) are keyed by their xxh3 hash so that their text is not
//!   stored twice; a collision costs a read, never a wrong id. Blank nodes
//!   take a fresh id per load or transaction and store nothing.
//! - **RDF 1.2**: a triple term (`<<( s p o )>>`) is a dictionary term
//!   (tag `TRIPLE`, after literals as SPARQL 1.2 orders terms) whose bytes
//!   are its parts' three ids, so nested triple terms are ids of ids, a
//!   triple term is found by its parts' ids, and rebasing IRIs reaches
//!   inside it; the loader numbers a chunk's triple terms after their
//!   parts. A language-tagged string with a base direction (`"x"@en--rtl`)
//!   has a tag of its own (`DIR_LANG_STRING`, no language code in its id).
//!   Data without either pays one tag test per distinct term of a chunk
//!   in the loader.
//! - **Indexes** ([`index`], keyspaces in `index::layout`): a quad whose
//!   graph is its subject (the document model puts every triple loaded
//!   without a graph there) is stored as a triple in SPO, POS, OSP, the
//!   graph implied. Every other quad is in GSPO, GPOS, GOSP, SPOG, POSG,
//!   OSPG: six is the minimum for all sixteen patterns of four components
//!   to be prefixes. Each quad lives in exactly one family; [`QuadScan`]
//!   runs one prefix scan per family and merges the two streams in one key
//!   order, so every pattern is one prefix scan per family and comes out
//!   sorted. A snapshot's scans skip a family that holds no quads
//!   (`FamilyMarks`, set by writers before they commit quads to a family):
//!   in union mode, while every quad is in its subject's graph, one cursor
//!   instead of two. Named graphs are listed by `index::graph_names`, a
//!   skip scan (one seek per graph) over GSPO, SPO and `GRAPHS`.
//! - **Dataset modes** ([`DatasetMode`]): union (default: triples without a
//!   graph go to their subject's graph, the default graph is the union of
//!   all graphs) and plain (`init --plain`: a default graph of its own,
//!   id 0).
//! - **Bulk loader** (`load/`): a reader splits N-Triples and N-Quads at
//!   line ends into 4 MiB chunks that worker threads parse (oxttl) and
//!   pre-encode (inlined ids, serialized and hashed dictionary terms,
//!   deduplicated per chunk); other formats are parsed by one thread
//!   (oxrdfio). One thread assigns ids (one hash-map lookup per distinct
//!   term of a chunk) and fills the run buffer (1 GiB,
//!   `RHIZOME_LOAD_BUFFER_BYTES`); a full buffer is sorted in every
//!   ordering and spilled, one ordering per core while the parse waits
//!   (one after another, full Pokec's spill was 30 s on one core of a 110 s
//!   load). At
//!   the end each ordering's runs are merged (dropping duplicates and quads
//!   already present) straight into segment files, the dictionary entries,
//!   statistics and counters into SST files, and all are ingested at once
//!   (one atomic engine ingestion). Small loads use one write batch
//!   instead. Chunks are parsed in oxttl's lenient mode and then each
//!   chunk's *distinct* terms are validated as strict mode would, re-parsing
//!   the chunk strictly on any doubt (per-occurrence IRI validation was a
//!   sixth of the load's CPU); the loader releases its snapshot before
//!   ingesting (while a snapshot is alive RocksDB stamps ingested files
//!   with a sequence number and later rewrites them all). In a union store
//!   a blank node's triples go to the graph of the IRI up its chain of
//!   referrers (`load/blank_owners.rs`: the first referrer of each blank
//!   node is kept, chains resolved once at the end, cycles included), so a
//!   document carries its blank nodes. Run files of a killed load
//!   (`DIR/segments/run-*.tmp`, `DIR/load-tmp-*`) are never part of the
//!   store.
//! - **Nesting** ([`nesting`]): a one-pass scan of a Turtle, TriG, RDF/XML
//!   or JSON-LD body that refuses nesting past 256 levels and RDF/XML entity
//!   expansion past 1 MiB per entity / 64 MiB per document, with line and
//!   column, before a parser runs.
//! - **Write path** ([`StoreTransaction`]): encodes terms (adding new
//!   ones), inserts and removes quads in every ordering of their family and
//!   keeps counters true; SPARQL Update, document, LDP and Python writes all
//!   go through it. It records the graphs it changed (for `rhizome-docs`).
//!   What a write reads is what makes it slow, so it reads as little as it
//!   can: a term this transaction numbered (`is_fresh`) is in no committed
//!   quad, so a quad or pair holding it needs no lookup; a graph named by
//!   such a term, and not created empty by it, is new (no seek for its
//!   quads: a new document's graph); `IdCache` (`term/cache.rs`, one id per KiB of
//!   `RHIZOME_CACHE_BYTES`, at least 262k) maps committed terms to ids for
//!   every writer and reader (a transaction's new terms join it after its
//!   commit; `StoreSnapshot::lookup` reads and fills it too, so a snapshot
//!   older than a term may learn its id, and finds none of its quads);
//!   `WriterCache` carries committed predicate statistics and (predicate,
//!   term) pairs known to exist from one writer to the next, locked only
//!   inside the writer lock and updated after a successful commit (a pair a
//!   removal emptied leaves it before the commit; pairs with a term new to
//!   the transaction stay out, since only a later write of that term could
//!   meet them; bulk loads and recounts clear it); it also keeps
//!   `rdf:type`'s id, or that there is none. Statistics are written once
//!   per transaction, at commit. An LDP PUT of a 200-triple
//!   resource went from 18.3M to about 9M instructions in the server.
//! - **Statistics** (`stats.rs`, [`Stats`]): quads, terms, graphs, and per
//!   predicate the quads, distinct subjects and distinct objects
//!   (`PREDICATE_STATS`), quads per class (`CLASS_STATS`), kept exactly by
//!   every transactional write (a test checks them against a recount after
//!   random writes, aborts and loads); a bulk load counts the pairs it
//!   brings as new, so its distinct counts run high (where its pairs were
//!   in the store already or in both index families) until `compact`
//!   recounts, counting a pair present in both families once. On
//!   segments a commit's statistics writes (keyspaces 3, 5 and 6) go into
//!   its quad log record, not the engine, and readers see them over the
//!   engine's keys until a merge writes them there (`segmented/carried.rs`).
//! - **Value counts** ([`value_counts`], keyspace 6): for each predicate
//!   with at most [`VALUE_COUNT_LIMIT`] (1,024) distinct objects, its quads
//!   per object (a key per pair, and an entry per predicate saying whether
//!   it is counted), kept exactly in the same transaction as the quads,
//!   added to by bulk loads from their sorted POS runs, recounted by
//!   `compact`. A predicate that passes the limit is marked uncounted until
//!   a recount finds it under again: a transaction deletes its object
//!   counts at once; a bulk load cannot delete from its runs, so it leaves
//!   them, unread behind the entry, until a transaction empties the
//!   predicate or `compact` recounts. A store written before value counts
//!   reads as uncounted until `compact`. (A first version kept each
//!   predicate's counts as one value, which every transaction touching a
//!   counted predicate rewrote, up to 16 KiB.) Why: "how many documents
//!   have each value of a field" is the commonest aggregation over
//!   documents, and a scan of the field's quads cost 0.27 s for Pokec's
//!   1.6M ages (about 1,300 instructions a quad in RocksDB's iterator); the
//!   counts answer it from one short range. `count_by_object`
//!   (`rhizome-graph`) and SPARQL's `{ ?s <p> ?o } GROUP BY ?o` with only
//!   `COUNT(*)`/`COUNT(?s)`/`COUNT(?o)` over the whole union default graph
//!   read them; anything else (FILTER, DISTINCT, FROM, plain datasets, more
//!   patterns) is evaluated from the quads. Fields with many values (names,
//!   links) are not counted: their counts would be as large as an index.
//! - **Segments and the delta**: every store on disk and in memory keeps
//!   its nine orderings in segments (store format 3; [`segment`] is the
//!   file, [`segmented`] how writes, reads, merges and loads use it).
//!   [`Store::over_kv`] keeps them as keys in any `Kv` instead (format 2):
//!   the path of a backend without local files, and of every store under
//!   `RHIZOME_INDEXES=keys`, to compare the two or to run the whole test
//!   suite on the key-value path.
//! - **Check** ([`Store::check`], `rhizome check`): every block of every
//!   segment (checksum, encodings, order), every other keyspace read whole
//!   (the engine checks its blocks' checksums), every ordering of a family
//!   holding the same quads (a count and a sum of xxh3 hashes of the
//!   quads), the quad counter against the orderings, and ids below the
//!   dictionary's next id.

mod check;
#[cfg(test)]
mod round_trips;
mod dump;
mod error;
pub mod index;
mod load;
pub mod nesting;
pub mod segment;
pub mod segmented;
mod stats;
mod store;
pub mod term;
mod write;

pub use check::CheckReport;
pub use dump::{dump, DecodeCache, DumpOptions};
pub use error::{Error, Result, SyntaxIssue};
pub use index::{QuadBatch, QuadPattern, QuadScan};
pub use load::{format_from_name, format_from_path, LoadInput, LoadOptions, LoadSummary};
pub use oxrdfio::RdfFormat;
pub use stats::{quads_counted, value_counts, PredicateStats, Stats, ValueCounts, VALUE_COUNT_LIMIT};
pub use store::{DatasetMode, Store, StoreSnapshot};
pub use term::TermId;
pub use write::StoreTransaction;
