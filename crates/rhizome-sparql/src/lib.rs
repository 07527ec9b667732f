//! `rhizome-sparql`: SPARQL 1.1 and 1.2 query and update over the encoded store.
//!
//! Owns: the translation of spargebra's algebra to a plan over term ids
//! (`plan`), its execution as iterators of rows of ids with index nested
//! loop, hash and merge joins (`eval`), expressions and built-in functions
//! over XSD values (`expression`), SPARQL Update as one store transaction
//! per request (`update`), result serialization (`results`), EXPLAIN
//! (`explain`), `SERVICE <urn:rhizome:graph>` over `rhizome-graph`'s walks
//! (`graph_service`), and the bounds on a request's nesting and chains
//! checked before anything recursive runs ([`nesting`]), and SPARQL 1.2's
//! triple term patterns, rewritten with their BGP into expressions over a
//! hidden variable so that scans and joins know nothing of them
//! (`triple_terms`).
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
//!   the constant's own tag cut at it, dates widened a day for time zones,
//!   the other tags of its kind and the dictionary's typed literals whole;
//!   a scan ordered by object seeks from range to range; the filter still
//!   runs above, so the ranges need only be a superset, and comparisons
//!   with inlined values are not split out where their ranges apply them),
//!   the share a range keeps estimated from the bytes it covers
//!   (`KvRead::approximate_bytes`). `SELECT DISTINCT ?x` over
//!   one pattern ordered by `?x` seeks from value to value (a skip scan).
//! - **Term space** (`terms.rs`): terms the store lacks (query constants,
//!   computed values) get ids under the reserved tag `QUERY_LOCAL`, in
//!   memory only; every term has one id, so joins, DISTINCT and GROUP BY
//!   compare ids. Terms are decoded only for expressions and output (with
//!   the query's own cache), and above it through the store's term cache,
//!   shared by all its snapshots, so the terms every query meets again are
//!   read once per process, as Jena's node cache does
//!   (`rhizome_rdf::term::TermCache`: one term per KiB of
//!   `RHIZOME_CACHE_BYTES`, at least 262k, two generations per shard as an
//!   approximate LRU). In front of its shards sits a dense table of whole
//!   dictionary chunks (1,024 sequence numbers each, IRIs, strings and
//!   typed literals): a miss loads its id's chunk by one scan of `id2term`
//!   per tag once every id in it is committed, and the chunk stays until
//!   the store closes, up to a quarter of `RHIZOME_CACHE_BYTES`; a hit is
//!   two pointer loads, without the shards' lock and hash probe
//!   (`TermCache::decode_missing`). Safe because a committed id never
//!   changes meaning; only snapshots fill it, never a write transaction,
//!   whose new ids an abort would hand out again. A query keeps decoded
//!   terms there alone (`TermCache::touch` when prefetching a batch of
//!   results), so each result term is cloned once.
//! - **Execution** (`eval/`): every operator takes its left context's
//!   bindings: patterns whose meaning does not depend on what is bound
//!   around them (BGPs, paths, joins and unions of them) bind their scans
//!   from it (index nested loops); the others run alone and are hash-joined
//!   on the variables all their rows bind. Each pattern of a BGP keeps a
//!   pool of reusable scans (`QuadScan::reusable`, cursors over whole
//!   keyspaces checking the prefix themselves) that each lookup re-points
//!   with a seek (`rebind`), since opening an iterator per row cost more
//!   than the seek. A re-pointed scan whose new key lies after every key it
//!   has read since its last seek steps forward up to 4 keys instead
//!   (`Stream::reposition`): rows on the left often come from a sorted
//!   scan (a sequence path to a bound end: a third of its seeks gone). The
//!   pools of a BGP on the right of a join or OPTIONAL last across the left
//!   rows. A pattern switches from lookups to a hash join at run time once
//!   the lookups made with the same positions bound reach what reading it
//!   whole costs (`QuadPlan::alone_rows`: its quads with only its constants
//!   bound, from the statistics, over 12 quads per lookup, and at least
//!   256); its quads are then grouped by the bound positions (`HashedQuads`;
//!   read from an index sorted by the one bound position they come grouped,
//!   and only the runs are hashed) and each later row is a probe. Deciding by lookups made rather than by
//!   the planner's guess keeps a wrong guess from costing more than about
//!   twice the better method; when the planner expects at least twice the
//!   break-even lookups (`QuadPlan::left_rows`) the pattern is hashed after
//!   a quarter of them (`TRUST_EARLY`: a right guess then costs 1.25x the
//!   better method instead of 2x, a wrong one at most 5x). The tests run
//!   every W3C and differential query with hashing forced at the first
//!   lookup too (`set_hash_join_after`). A row on the left costs one
//!   iterator (`PatternRows`) over its quads, hashed or looked up, which
//!   reads a quad ahead so that the last match takes the row instead of
//!   copying it. Consecutive patterns on one bound subject with constant
//!   predicates (a star: `?x :name ?n ; :email ?e`) read the subject's
//!   quads with one seek, in batches from the first quad (stepping them
//!   one at a time cost 17% more on m22 and q08), and match them in
//!   memory (`star_lookup`; a pattern
//!   with one matching quad extends the rows in place; a subject with more
//!   than 64 quads goes back to one lookup per pattern). A BGP whose first
//!   patterns bind only one subject variable, their predicate and object
//!   bound (`?s a :A . ?s a :B`), starts with a merge join: those scans come
//!   out of POS sorted by subject and are intersected by leapfrogging
//!   (`QuadScan::seek_component`; a scan behind steps over up to 8 quads
//!   before it seeks, as the next shared subject is often a quad or two
//!   ahead). A query's scans skip an index family with no quads
//!   (`Families`, from the store's `FamilyMarks`: two seeks per query were
//!   a third of a one-quad lookup; a family emptied later stays marked,
//!   which costs a seek, never an answer).
//! - **On ids** (`expression::eval::order_by_id`, `equal_by_id`): FILTER is
//!   evaluated to a truth value without building terms for its logical
//!   operators; inlined integers, decimals, booleans and short strings of
//!   one type, and dates and date-times with the same time zone field,
//!   compare by id as by value; stored IRIs, blank nodes and long strings
//!   are equal only when their ids are; `lang(?l) = "de"` and
//!   `langMatches` read the language code in the id; `STRSTARTS` of an
//!   inlined short string reads its bytes, and `STRSTARTS`/`STRENDS`/
//!   `CONTAINS`/`REGEX` of stored text test it in place in the term cache
//!   (regular expressions compiled once per query); other comparisons
//!   decode and compare values. `+ - *` over inlined integers (in BIND
//!   and comparisons) are computed on the ids (`integer_id`). SUM and AVG keep a number (`value::Num`)
//!   between rows and read inlined integers from the id; GROUP BY finds a
//!   row's group by its key ids without allocating a key per row;
//!   COUNT(?v) counts ids; COUNT(*) sees through a projection, and of one
//!   pattern over the whole union default graph with only its predicate
//!   bound (or nothing) reads the counters every write keeps
//!   (`rhizome_rdf::quads_counted`, in the query's own snapshot), and
//!   `{ ?s <p> ?o } GROUP BY ?o` with only counts reads the value counts.
//!   COUNT(*) over a join of patterns builds the rows of all but the last
//!   and counts the last one's quads per row (`count_quad`: a hashed
//!   group's length when no free variable repeats, or on segments the
//!   rows under the lookup's prefix counted from the fences and one or
//!   two blocks, `QuadScan::count_pattern`, when no delta entry falls
//!   among them), so the rows it would give are never built; not for a
//!   last pattern a star would read with the one before it, nor under
//!   EXPLAIN. A UNION's count is its sides' counts added; an OPTIONAL of
//!   one pattern without a filter counts each left row's extensions, or
//!   the row once.
//! - **Semi- and anti-joins**: MINUS groups its right side by the variables
//!   each row binds and probes a hash set per group (one lookup per left
//!   row, not a scan of the right side; a group sharing one variable is a
//!   set of ids); EXISTS / NOT EXISTS look their pattern up per row (a
//!   FILTER of one (NOT) EXISTS through scans it keeps across its rows, as
//!   a join's right side does), and try reading it whole (a BGP in the
//!   order it has alone, not the one for lookups) after 256 lookups, at
//!   most 16 solutions per lookup made (a try that gives up costs about
//!   what those lookups did), then after 1,024 with up to 2^21 solutions
//!   (2^18 kept); once read, every row is a probe of a hash set. A FILTER
//!   of one (NOT) EXISTS over a BGP of one pattern expected (from the
//!   statistics) to give 256 rows or more is a semi-join scan
//!   (`eval/semi_scan.rs`): the EXISTS read first, capped at 16 solutions
//!   per expected row (a one-pattern EXISTS sharing one variable read as
//!   id columns into a set of ids), then the pattern's quads read in
//!   batches (`QuadScan::next_batch`) and probed, a row built only for
//!   those that pass; past the cap, row by row as above.
//! - **Dataset**: union mode's default graph is `QuadPattern.g = None`,
//!   plain mode's is graph 0; `GRAPH ?g` never yields graph 0, is pushed
//!   into the scans when that cannot change the answer, else run once per
//!   named graph (subqueries, MINUS, `?g` used inside); FROM / FROM NAMED
//!   replace both.
//! - **Paths and sorting**: property paths and ORDER BY / GROUP BY
//!   materialize; a path's lookups re-point a small pool of reusable scans
//!   (`Walk` in `eval/path.rs`); `*` and `+` with both ends free read the
//!   one-step relation once and walk it in memory; ORDER BY under a LIMIT
//!   keeps a top-k whose keys stay ids until a comparison needs terms
//!   (inlined numbers and dates of one kind compare by id), and drops a row
//!   as soon as its first key is past the k-th.
//!   LIMIT stops the pull.
//! - **Graph walks** (`graph_service.rs`): `SERVICE <urn:rhizome:graph>`
//!   runs walks from IRIs once at planning, as a VALUES block, and from
//!   variables once per row of the patterns that bind them (`Plan::Walk`,
//!   a lateral join placed after them).
//! - **Text search** (`text_search.rs`): the property function
//!   `rt:search` (and Jena's `text:query`) is answered by the caller
//!   before planning (the index is `rhizome-search`'s), and each call's
//!   hits enter the plan as a VALUES block joined with its BGP.
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
//! one; the server sets 256 MiB), failing with a clear error: terms it
//! computes (BIND results) stay charged, and every sort, group, join table,
//! path result or string being built (CONCAT, REPLACE, GROUP_CONCAT) must
//! fit in what is left. Before spargebra parses a request, a small lexer
//! bounds its nesting (256 brackets, braces and prefix operators; 5 nested
//! `!`, which spargebra parses twice per level) and its chained operators
//! (10,000 UNION, OPTIONAL, path steps, `||`...), since parsing, translation,
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
//! and update mutated at the token level (25k mutants with a fixed seed,
//! about 2.5k of them valid SPARQL) and
//! requires an answer or a clear error, never a panic, and a failed update
//! to leave the store as it was. `bench/sparql` runs a 22-query mix beside
//! Oxigraph, Virtuoso and Jena TDB2 (`rhizome bench-queries` times queries
//! in one process; results in `BENCHMARKS.md`). EXPLAIN (`explain.rs`,
//! `rhizome query --explain`) shows the plan with each operator's actual
//! rows and each quad pattern's estimated rows per lookup beside its
//! actual rows and lookups.

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
pub mod text_search;
mod triple_terms;
mod update;

pub use error::{Result, SparqlError};
pub use memory::{MemoryPool, MemoryReservation};
pub use plan::Statistics;
pub use query::{parse_query, PreparedQuery, QueryResults};
pub use results::{write_results, ResultFormat};
pub use update::{execute_update, execute_update_in, execute_update_with_stored_default, parse_update, LoadFolder, LoadPolicy, UpdateLimits, UpdateSummary, DEFAULT_LOAD_MAX_BYTES};
