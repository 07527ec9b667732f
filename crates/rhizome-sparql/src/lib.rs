//! `rhizome-sparql`: SPARQL 1.1 query and update over the encoded store.
//!
//! Owns: the translation of spargebra's algebra to a plan over term ids
//! (`plan`), its execution as iterators of rows of ids with index nested
//! loop, hash and merge joins (`eval`), expressions and built-in functions
//! over XSD values (`expression`), SPARQL Update as one store transaction
//! per request (`update`), result serialization (`results`), EXPLAIN
//! (`explain`), `SERVICE <urn:rhizome:graph>` over `rhizome-graph`'s walks
//! (`graph_service`), and the bounds on a request's nesting and chains
//! checked before anything recursive runs ([`nesting`]).
//! Does not own: parsing (spargebra), result formats (sparesults), storage,
//! term encoding and statistics (`rhizome-rdf`), documents (an update's
//! graphs become document revisions in `rhizome-docs`, which runs it
//! through [`execute_update_in`]).
//!
//! Main types: [`PreparedQuery`], [`QueryResults`], [`SparqlError`];
//! functions [`parse_query`], [`execute_update`], [`write_results`].
//!
//! Limits of this version (the next steps): rows are vectors of ids and
//! scans are boxed iterators (no batching yet); merge joins only for
//! patterns binding one shared subject (with predicate and object bound);
//! property paths, ORDER BY, GROUP BY and hash-join sides are materialized
//! (bounded by the memory limit, no spilling); expressions other than the
//! comparisons and string tests decided on ids (below) work on decoded
//! terms; EXPLAIN counts rows but estimates only quad patterns.
//!
//! # How a query runs
//!
//! - **Plan** (`plan/`): spargebra's algebra with variables numbered (a row
//!   is one `Option<TermId>` per variable), constants encoded to term ids,
//!   the active graph pushed into every quad pattern, and each BGP's
//!   patterns ordered greedily by expected rows from `PREDICATE_STATS`
//!   (quads, distinct subjects, distinct objects per predicate),
//!   `CLASS_STATS` (quads of `rdf:type` per class, so `?x a C` is estimated
//!   exactly) and boundness, keeping joins connected. The patterns of an
//!   EXISTS are ordered knowing the variables of the rows it filters.
//!   `SELECT *` lists its variables in the order they first appear in the
//!   query's text (`select_star.rs`; spargebra lists them by name).
//! - **Rewrites** (`plan/pushdown.rs`, `plan/prune.rs`): a FILTER over a
//!   BGP is split into its conjuncts, each checked right after the patterns
//!   that bind its variables; a BIND whose variable nothing above reads is
//!   dropped. A FILTER comparing a variable with an inlined number, date or
//!   date-time is pushed into the scans whose object is that variable
//!   (`plan/ranges.rs`: the id ranges `rhizome_rdf::term::range` gives,
//!   dates widened a day for time zones; the filter still runs above, so
//!   the ranges need only be a superset), estimated from the bytes the
//!   range covers (`KvRead::approximate_bytes`). `SELECT DISTINCT ?x` over
//!   one pattern ordered by `?x` seeks from value to value (a skip scan).
//! - **Term space** (`terms.rs`): terms the store lacks (query constants,
//!   computed values) get ids under the reserved tag `QUERY_LOCAL`, in
//!   memory only; every term has one id, so joins, DISTINCT and GROUP BY
//!   compare ids. Terms are decoded only for expressions and output,
//!   through the store's shared term cache (`rhizome_rdf::term::TermCache`:
//!   one term per KiB of `RHIZOME_CACHE_BYTES`, at least 262k, two
//!   generations per shard; in front of it a dense table of whole
//!   dictionary chunks of 1,024 ids, up to a quarter of
//!   `RHIZOME_CACHE_BYTES`, a hit being two pointer loads). Safe because a
//!   committed id never changes meaning; only snapshots fill it, never a
//!   write transaction, whose new ids an abort would hand out again.
//! - **Execution** (`eval/`): every operator takes its left context's
//!   bindings: patterns whose meaning does not depend on what is bound
//!   around them (BGPs, paths, joins and unions of them) bind their scans
//!   from it (index nested loops); the others run alone and are hash-joined
//!   on the variables all their rows bind. Each pattern of a BGP keeps a
//!   pool of reusable scans (`QuadScan::reusable`) that each lookup
//!   re-points with a seek, or by stepping up to 4 keys forward when the
//!   new key lies just ahead (`reposition`). A pattern switches from
//!   lookups to a hash join at run time once its lookups reach what reading
//!   it whole costs (`QuadPlan::alone_rows`, at least 256), its quads then
//!   grouped by the bound positions (`HashedQuads`); when the planner
//!   expects at least twice the break-even lookups (`QuadPlan::left_rows`)
//!   it hashes after a quarter of them (`TRUST_EARLY`), so a wrong guess
//!   costs at most about 5x the better method and a right one 1.25x. The
//!   tests run every W3C and differential query with hashing forced at the
//!   first lookup too (`set_hash_join_after`). Consecutive patterns on one
//!   bound subject with constant predicates (a star) read the subject's
//!   quads with one seek (`star_lookup`, up to 64 quads). A BGP whose first
//!   patterns bind only one subject variable, their predicate and object
//!   bound, starts with a merge join by leapfrogging over POS
//!   (`QuadScan::seek_component`, stepping up to 8 quads before a seek).
//!   A query's scans skip an index family with no quads (`Families`).
//! - **On ids** (`expression::eval::order_by_id`, `equal_by_id`): FILTER is
//!   evaluated to a truth value without building terms for its logical
//!   operators; inlined integers, decimals, booleans and short strings of
//!   one type, and dates and date-times with the same time zone field,
//!   compare by id as by value; stored IRIs, blank nodes and long strings
//!   are equal only when their ids are; `lang(?l) = "de"` and
//!   `langMatches` read the language code in the id; `STRSTARTS` of an
//!   inlined short string reads its bytes, and `STRSTARTS`/`STRENDS`/
//!   `CONTAINS`/`REGEX` of stored text test it in place in the term cache
//!   (regular expressions compiled once per query). SUM and AVG keep a
//!   number (`value::Num`) between rows; GROUP BY finds a row's group by
//!   its key ids; COUNT(?v) counts ids; COUNT(*) of one pattern over the
//!   whole union default graph with only its predicate bound (or nothing)
//!   reads the counters (`rhizome_rdf::quads_counted`), and
//!   `{ ?s <p> ?o } GROUP BY ?o` with only counts reads the value counts.
//! - **Semi- and anti-joins**: MINUS probes a hash set per group of the
//!   variables its right rows bind; EXISTS / NOT EXISTS look their pattern
//!   up per row, and after 1,024 lookups read it whole once (up to 2^18
//!   solutions) and probe a hash set instead.
//! - **Dataset**: union mode's default graph is `QuadPattern.g = None`,
//!   plain mode's is graph 0; `GRAPH ?g` never yields graph 0, is pushed
//!   into the scans when that cannot change the answer, else run once per
//!   named graph; FROM / FROM NAMED replace both.
//! - **Paths and sorting**: property paths and ORDER BY / GROUP BY
//!   materialize; a path's lookups re-point a small pool of reusable scans
//!   (`Walk` in `eval/path.rs`); `*` and `+` with both ends free read the
//!   one-step relation once and walk it in memory; ORDER BY under a LIMIT
//!   keeps a top-k whose keys stay ids until a comparison needs terms.
//!   LIMIT stops the pull.
//! - **Graph walks** (`graph_service.rs`): `SERVICE <urn:rhizome:graph>`
//!   runs walks from IRIs once at planning, as a VALUES block, and from
//!   variables once per row of the patterns that bind them (`Plan::Walk`,
//!   a lateral join placed after them).
//! - **Update** (`update.rs`): one `StoreTransaction` per request,
//!   committed at the end (atomic); DELETE/INSERT WHERE evaluates through
//!   the transaction's reader, so it sees the request's earlier operations.
//!   LOAD reads files only under a [`LoadPolicy`] (refused by default, one
//!   folder for a server, any local file for the CLI), never http(s),
//!   within a size limit and the deadline.
//!
//! # Bounds
//!
//! A per-query deadline and cancellation flag (checked as scans yield
//! quads), and one memory budget per query (1 GiB unless the caller sets
//! one; the server sets 256 MiB): terms it computes stay charged, and every
//! sort, group, join table, path result or string being built must fit in
//! what is left. Before spargebra parses a request, a small lexer bounds
//! its nesting (256 brackets, braces and prefix operators; 5 nested `!`)
//! and its chained operators (10,000), since parsing, translation,
//! evaluation and drop all recurse over them; the translator bounds the
//! algebra's depth again, and requests run on a 256 MiB-stack thread
//! (`nesting::run_with_query_stack`) that `tests/nesting.rs` shows holds
//! the worst allowed request in a quarter of it.
//!
//! # Proof
//!
//! `tests/w3c_sparql.rs` runs the W3C SPARQL 1.1 query, update and
//! result-format suites and SPARQL 1.0 data-r2, known failures listed per
//! suite in `tests/w3c/`; `tests/differential.rs` compares 2,000 random
//! queries with `spareval`; `tests/mutated_requests.rs` runs every W3C query
//! and update mutated at the token level (25k mutants, fixed seed) and
//! requires an answer or a clear error, never a panic, and a failed update
//! to leave the store as it was. `bench/sparql` runs a 22-query mix beside
//! Oxigraph, Virtuoso and Jena TDB2 (`BENCHMARKS.md`); `rhizome query
//! --explain` shows each operator's rows and each pattern's estimate.

mod error;
mod eval;
mod explain;
mod memory;
mod expression;
mod graph_service;
pub mod nesting;
mod plan;
mod query;
mod results;
mod select_star;
mod terms;
mod update;

pub use error::{Result, SparqlError};
pub use memory::{MemoryPool, MemoryReservation};
pub use plan::Statistics;
pub use query::{parse_query, PreparedQuery, QueryResults};
pub use results::{write_results, ResultFormat};
pub use update::{execute_update, execute_update_in, execute_update_with_stored_default, parse_update, LoadFolder, LoadPolicy, UpdateLimits, UpdateSummary, DEFAULT_LOAD_MAX_BYTES};
