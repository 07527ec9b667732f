//! `rhizome-docs`: CouchDB's document semantics over the store.
//!
//! Owns: revision trees exactly as CouchDB keeps them ([`RevTree`]: `N-hash`
//! ids, branches and conflicts, deleted leaves, the deterministic winner,
//! merging replicated paths, stemming at `_revs_limit`); document storage in
//! the same store (and transaction) as the database's quads ([`Database`]):
//! writes with and without `new_edits`, reads with CouchDB's options,
//! `_all_docs`, `_changes` with `_doc_ids` and Mango `_selector` filters,
//! Mango queries ([`mango`]: `_find`, `_explain`, JSON indexes kept in the
//! store), CouchDB's collation ([`collate`]) and selectors ([`selector`]),
//! attachments stored by digest, `_local` documents, `_security`,
//! `_revs_limit`, `_purge` and compaction; who may write what ([`Writer`],
//! `rights.rs`); transactions across documents and graphs
//! ([`DocTransaction`], `_bulk_docs` with `all_or_nothing`, the server-side
//! operation list [`TxnOp`]); the [`GraphProjector`] hook through which a write updates
//! the document's graph in its own transaction, and the JSON-LD projection
//! ([`JsonLdProjector`]); graph writes as revisions
//! ([`Database::rdf_write`]); and remote JSON-LD contexts ([`ContextStore`]:
//! shipped ones and a cache, no network of its own). Does not own HTTP
//! (`rhizome-server`), replication (`rhizome-replication`), views and
//! validation functions (`rhizome-views`) or LDP (`rhizome-ldp`, a
//! projector wrapping this one).
//!
//! Everything here is synchronous: a write returns when it is durable.
//!
//! Main types: [`Database`], [`RevTree`], [`Rev`], [`DocError`],
//! [`ReadOptions`], [`AllDocsOptions`], [`ChangesOptions`].
//!
//! # Storage
//!
//! One store per database (the server keeps it in `DATA/dbs/<name>/`, names
//! as CouchDB's `^[a-z][a-z0-9_$()+/-]*$`): documents live beside the
//! database's quads so a document write and its graph commit in one batch.
//! Keyspaces 30-39 are this crate's ([`keys`] has the table; format
//! [`keys::FORMAT_VERSION`]): `DOCS` (id -> seq, winner, deleted flag, the
//! winner's graph IRI when its body is that graph alone, which is format 2
//! of the record, refused by an older build rather than misread, whether
//! the document's graph is known empty so a write need not look for one
//! to drop, the winner's body (format 3 of the record and of the
//! database: a read of the winner is one read, a new winner one key; a
//! record written before reads its body from `BODIES` and takes the new
//! form when next written), and the revision tree; ordered by id, so `_all_docs` is one scan, and deleted documents
//! are skipped from the record's header without decoding the tree),
//! `SEQS` (seq -> id, one entry per document, so `_changes` is one scan
//! from `since`), `BODIES` ((id, rev) -> JSON body of each other leaf and,
//! as in CouchDB, of older revisions until compaction: a winner's body
//! moves there from its record when another revision wins; every read
//! goes through `read::stored_body_of`, which knows both), `ATTACHMENTS` and
//! `ATTACHMENT_CHUNKS` (by `md5-<base64>` digest, shared between revisions,
//! in 256 KiB chunks past 256 KiB so a reader sends them a chunk at a
//! time: format 2; formats 1 and 2 are read as they are, and raised to 3
//! when opened for writing, so that older builds refuse the database), `LOCAL` (`_local/` documents: `_rev` `0-N`, no history, not in
//! `_changes`), `DB_META` (counters, `_revs_limit`, default 1000, the
//! security object, purge settings, the format version, whether the database is partitioned) and Mango's three.
//! Older bodies of graph-bodied documents go with the write that
//! supersedes them; bodies of revisions stemmed at `_revs_limit` stay
//! until compaction (a read of a revision the tree lacks finds none).
//! [`Database::compact`] drops the bodies of non-leaf revisions and the
//! attachment data no remaining body refers to, in one write transaction
//! (so a concurrent write cannot refer to data as it goes), then compacts
//! the engine.
//!
//! Revision ids are CouchDB 3.5's (`rev_id.rs`): the MD5 of Erlang's
//! `term_to_binary` of `[Deleted, OldStart, OldRev, Body, Atts]`, the body
//! as EJSON with its members in the order written, so the same edit gets
//! the same id in Rhizome and in CouchDB (checked against the real peer by
//! the CLI's `couchdb_revision_ids` test). JSON objects keep their members
//! in the order written (serde_json's `preserve_order`); a document is read
//! in CouchDB's order: `_id`, `_rev`, the body, `_deleted`, `_revisions`,
//! `_revs_info`, `_conflicts`, `_deleted_conflicts`, `_local_seq`, then
//! `_attachments`.
//!
//! # The write path
//!
//! [`Database::update_docs`] (and [`Database::update_prepared`], which the
//! server's group commit calls with documents [`Database::prepare_docs`]
//! parsed on the request's own thread) opens one `StoreTransaction`; per
//! document it checks special members and the id, checks the writer's
//! rights (`rights.rs`: one rule per kind of document, whatever the door),
//! reads the tree, either edits it (`new_edits=true`: `_rev` must be a
//! leaf, else 409; inline attachments stored by digest, stubs taken from
//! the parent) or merges the replicated path (`_revisions`), stems, writes
//! the body, drops superseded leaf bodies, moves the document's `SEQS`
//! entry to a new seq, updates the counters and, when the winner changed,
//! calls the [`GraphProjector`] with the transaction, the id and the new
//! winning body (or `None` when the winner is deleted). Then one fsynced
//! commit. A document that fails gets its own error; the others of the
//! batch are still written, as CouchDB's `_bulk_docs`. A document
//! rewritten again soon after its last write (TPC-B's branch and teller
//! rows) keeps its decoded record for the writer (`hot_docs.rs`: the
//! revision tree and parsed body, used only while its record has exactly
//! the bytes they were decoded from), so the next write neither parses its
//! body nor decodes its tree. Bodies of revisions stemmed from the tree
//! stay in `BODIES`, unread, until compaction.
//!
//! RDF writes (SPARQL Update, the Graph Store, LDP, Python) go the other
//! way, through [`Database::rdf_write`] / [`Database::rdf_write_checked`]:
//! the closure writes quads in a `StoreTransaction`, which records the
//! graphs it changed, and each gets a new revision of its document (a JSON
//! document keeps its body, re-compacted against its own `@context` by
//! `graph_write.rs` and `compact.rs` (terms, coercion,
//! `@list`/`@set`/`@language` containers, `@vocab`, prefixes; full IRIs
//! where a term cannot hold a value), members the context does not map and
//! attachments kept, and the result read back (graph signatures by colour
//! refinement) before use; a graph-bodied
//! one stays graph-bodied; a deletion only when the graph became empty and
//! nothing else is left), a `_changes` entry and updated counters, in the
//! same commit; every revision is shown to a check first (validation,
//! rights) and a refusal refuses the whole write. In a union database
//! writes to the default graph go to the stored default graph, the
//! document `default-graph` ([`DEFAULT_GRAPH_DOC`]).
//!
//! # Documents are RDF
//!
//! - A document's graph IRI is `<base>/<db>/<percent-encoded id>`, or the
//!   id itself when it is an absolute IRI ([`DocumentIris`], both
//!   directions). Ids that are absolute IRIs under the database's own
//!   prefix are refused (409): they would be another document's graph.
//!   The base is `RHIZOME_BASE_IRI`, else the address the first `serve`
//!   listens on (`rhizome_server::listen_base`: `serve` binds before it
//!   opens the data folder), or `http://localhost:5984` when `load --db`
//!   comes first; it is fixed per data folder (`rhizome_server::base_iri_or`):
//!   the first `serve` or `load --db` writes it to `DATA/base-iri`, every
//!   start prints it, and a later `RHIZOME_BASE_IRI` that disagrees is
//!   refused, since it would rename every graph. A server moved to another
//!   address keeps the stored names and answers them by path (routing never
//!   reads the host); mapping them to the request's address in answers and
//!   back in request bodies is the design that would make a moved server's
//!   IRIs resolvable from its new address, not done yet.
//! - [`JsonLdProjector`] reads the winning body as JSON-LD (`oxjsonld`)
//!   with its own `@context`, else the database's default (the `@context`
//!   of `_local/rhizome-context`), the graph IRI as base, and replaces the
//!   document's graph with every triple it yields; a deleted winner
//!   empties the graph; plain JSON (no context, no `@` keyword) has no
//!   graph. The document is parsed in full before the write's transaction
//!   (`GraphProjector::prepare`), and a malformed one is refused there,
//!   alone (400 `doc_validation`, and in `_bulk_docs` the others are
//!   written; a replicated one, `new_edits=false`, 403
//!   `forbidden`, which replicators skip where any other error stops
//!   them). The projection is a hook because it needs a context, `oxjsonld`
//!   and the term encoder, and a database of system documents (`_users`)
//!   has none ([`NoGraphs`]); the store guarantees only that it runs inside
//!   the document's transaction, sees the winner only, and that its failure
//!   aborts the write.
//! - JSON-LD is bounded before `oxjsonld` reads it (`jsonld_limits.rs`):
//!   chains of term definitions plus nested scoped contexts at most 256
//!   deep, no cyclic terms, JSON at most 256 deep, 10,000 terms, then run on
//!   a thread with a 16 MiB stack (oxjsonld recurses on contexts); a
//!   document whose JSON and chains of terms are within 32 levels, with no
//!   scoped or remote context, is expanded on the writer's own thread
//!   (`on_stack_for`, from the depths the check measured, `Depths`: the
//!   hand-over cost a small write a tenth of its time).
//!   `_local/rhizome-context` is checked the same way when written and when
//!   read.
//! - A document whose body *is* its graph (loaded as RDF, or first made by
//!   an RDF write) stores only `{"_graph": IRI}` (plus its attachments);
//!   every read renders the graph's quads as expanded JSON-LD
//!   (`{"@graph": [...]}`, full IRIs, so the rendering written back
//!   unchanged projects to the same graph), built straight from the quads
//!   in the form `oxjsonld`'s serializer writes (a test holds the two
//!   equal): serializing and parsing back was half a read's cost. Nothing
//!   is stored twice. A read of a committed snapshot hands its snapshot
//!   down (`read::body`), so the render uses the store's shared term cache
//!   and scans only the index families the snapshot has quads in. A plain
//!   read of the winner ([`Database::get_doc_json`]) writes the graph's
//!   JSON as bytes (`jsonld::write_graph_json`): each distinct term once,
//!   from the shared term cache in place, copied into every node naming it
//!   (the terms the dense table holds are all loaded first, slots then
//!   text, so that their cache misses overlap), members in the order
//!   `serde_json` writes them (a test holds the bytes equal to
//!   `get_doc`'s); the graph's id comes from the shared `IdCache`, an IRI's
//!   object form is written from its name, and names are checked for
//!   escapes eight bytes at a time. The winner comes from the record's
//!   header without decoding its tree; when the record says the winner's
//!   body is its graph alone (the one write site, `write_one`, keeps that
//!   true as winners change), the body is not read at all. A plain read of
//!   a JSON body whose members' names do not start with `_` is copied as
//!   stored bytes with `_id` and `_rev` put where their keys sort
//!   (`read::splice_members`; stored bodies are the compact, key-ordered
//!   JSON `serde_json` writes, which the splice checks as it scans,
//!   building values otherwise). Reads with options (`get_doc_bytes`,
//!   `open_revs_bytes`, `all_docs_bytes`: `GET` with options, `open_revs`,
//!   `_bulk_get`, `_all_docs`, which replicators use) splice the same way,
//!   adding `_revisions`, `_conflicts` and the rest (`read::render_json`,
//!   whose members come from `added_members`, as `render`'s do), and the
//!   server writes its answers around those bytes; the `documents` fuzz
//!   target holds their bytes equal to the value-building reads'. `_changes` with `include_docs` and Mango still build values.
//! - `json_ld_view.rs`: the body served for `Accept: application/ld+json`,
//!   whose context (`@base` = graph IRI, the document's or the default
//!   context, CouchDB's `_` members mapped to null) makes any JSON-LD
//!   processor read exactly the document's graph.
//! - [`Database::adopt_graphs`] (after `rhizome load --db NAME`) makes every
//!   graph without a document (each loaded subject's triples, each named
//!   graph) a graph-bodied document in revision 1; blank nodes no IRI
//!   references go to `default-graph`. After a database's first load (no
//!   document yet) the records (`DOCS`, `BODIES`, `SEQS` and the counters)
//!   are built in memory, sorted and ingested as sorted runs through the
//!   store's bulk writer (`Store::bulk_writer`), up to 2M documents per
//!   atomic ingest, the bytes `write_one` would write (a test compares them
//!   key for key); they land at the bottom level, so a document read
//!   searches one level (36 s of a 137 s full Pokec load through
//!   transactions became 12-18 s). Later loads, documents whose projection
//!   has work to do for a graph-bodied document
//!   (`GraphProjector::projects_graph_bodies`: LDP resources) and design
//!   documents go through transactions of 10,000; a first load written that
//!   way ends by settling the document keyspaces (`Kv::settle`), not later
//!   ones (it would rewrite every record the database has). Two graphs naming one
//!   document id: the first has it.
//! - Remote contexts ([`contexts`], issue 14): schema.org, Activity
//!   Streams, VC v1/v2 and Web Annotation are compiled in (`contexts/`,
//!   with sources and licenses); others live in [`ContextStore`]'s cache
//!   (`DATA/_contexts/`, one versioned file each). `GraphProjector::prepare`
//!   fetches what a document names (at most 8 deep, 32 per document)
//!   before the write takes its transaction; inside it only the cache is
//!   read (oxjsonld's loader sees only what was resolved), and graph writes
//!   compact against the resolved contexts.
//!
//! # Mango and secondary indexes
//!
//! [`collate`] is CouchDB's collation of JSON values as a comparison and an
//! order-preserving, prefix-free byte encoding; [`selector`] is the one
//! selector engine (`_find`, partial indexes, `_changes?filter=_selector`,
//! replication), in CouchDB's normal form with its errors. [`mango`] keeps
//! JSON indexes (views of `"language": "query"` design documents) as
//! `MANGO_ROWS` keys (index id, collated columns, doc id), brought up to the
//! database's sequence in batches of 1000 documents per transaction when
//! queried or created; it chooses an index as CouchDB 3.5 does
//! (`ranges.rs`: each field's range through `$and`; `plan.rs`: usable
//! indexes, the one using most ranged fields; `candidates.rs`: `_explain`'s
//! `index_candidates` and `selector_hints`) and runs `_find`/`_explain`
//! over one snapshot, answering from the rows' keys alone when the index
//! covers every field the query needs (`collate::decode_prefix`); the
//! server streams answers past 1000 documents. [`secondary`] is what
//! Mango's indexes and `rhizome-views`' view indexes share: the documents
//! changed since an index's sequence (`changed_since`), indexes no design
//! document defines (`IndexSpaces::stale`) and their dropping in bounded
//! transactions (`Database::drop_indexes`).
//!
//! A partitioned database (`partition.rs`, a `DB_META` flag set at
//! creation) takes ids `partition:docid` only, checked on every door's
//! write. A partition is the `DOCS` key range `[p:, p;)`: its counts and
//! `_all_docs` scan it alone; a partitioned Mango index puts the collated
//! partition before its columns (as `rhizome-views` does for partitioned
//! views), so a partition's `_find` is one range of its rows, and the
//! planner keeps partitioned indexes for partition queries and global ones
//! for the rest (`mango_idx:filter_partition_indexes`).

mod all_docs;
mod attachment_data;
mod batch_keys;
mod changes;
mod compact;
pub mod contexts;
mod database;
mod doc_checks;
mod error;
mod graph_write;
mod hot_docs;
pub mod keys;
mod jsonld;
mod json_ld_view;
mod jsonld_flat;
mod jsonld_limits;
mod local_docs;
mod member;
pub mod mango;
mod partition;
mod projector;
mod purge;
mod read;
mod read_in_order;
pub mod rebase;
mod rev_id;
mod revtree;
mod rights;
mod transaction;
mod triple_terms;
pub mod collate;
pub mod secondary;
pub mod selector;
mod write;

pub use all_docs::{AllDocs, AllDocsOptions};
pub use contexts::{ContextFetcher, ContextSource, ContextStore};
pub use changes::{Changes, ChangesFilter, ChangesOptions, DocFilter};
pub use doc_checks::check_document_json;
pub use database::{valid_db_name, Compacted, Database, DbInfo, DEFAULT_REVS_LIMIT};
pub use error::{DocError, Result};
pub use graph_write::{EmptiedGraphs, DEFAULT_GRAPH_DOC};
pub use jsonld::{DocumentIris, JsonLdProjector, DEFAULT_CONTEXT_DOC, MAX_DOCUMENT_JSON_VALUES, MAX_DOCUMENT_TRIPLES};
pub use jsonld_limits::{check_json_ld, on_known_stack, on_known_stack_if, JSONLD_STACK_BYTES, MAX_CONTEXT_COPIES, MAX_CONTEXT_DEPTH, MAX_CONTEXT_TERMS, MAX_JSON_DEPTH};
pub use partition::{check_partition_name, check_partitioned_id, partition_of, partition_range, PartitionInfo};
pub use purge::{DEFAULT_PURGED_INFOS_LIMIT, MAX_PURGE_DOCS, MAX_PURGE_REVS};
pub use projector::{GraphChange, GraphProjector, NoGraphs, NoProjection, Prepared};
pub use rights::{Writer, NOT_ADMIN};
pub use read_in_order::{DocReader, SteppingReader};
pub use read::{Attachment, AttachmentReader, OpenRev, OpenRevs, ReadOptions};
pub use revtree::{EditError, Leaf, Rev, RevTree};
pub use transaction::{conflict_on, is_aborted, parse_ops, DocTransaction, OpKind, OpResult, Refusals, TxnOp};
pub use write::{attachment_digest, validate_attachment_name, validate_doc_id, PreparedDoc, WriteCheck, WriteOutcome};
