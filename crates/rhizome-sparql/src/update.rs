//! SPARQL 1.1 Update: every request is one store transaction, committed at
//! the end, so a request is atomic; the WHERE clause of DELETE/INSERT reads
//! through the transaction, so it sees the request's earlier operations.

use crate::error::{Result, SparqlError};
use crate::plan::Statistics;
use crate::query::{PreparedQuery, QueryResults};
use oxrdf::{BlankNode, GraphNameRef, NamedNode, NamedOrBlankNode, Quad, QuadRef, Term, TermRef, Variable};
use oxrdfio::RdfParser;
use rhizome_rdf::{DatasetMode, QuadPattern, Store, StoreTransaction, TermId};
use rustc_hash::FxHashMap;
use spargebra::algebra::GraphTarget;
use spargebra::term::{GraphName, GraphNamePattern, NamedNodePattern, TermPattern};
use spargebra::{GraphUpdateOperation, Query, Update};

pub fn parse_update(text: &str, base_iri: Option<&str>) -> Result<Update> {
    // Nesting and chains first: the parser recurses over them.
    crate::nesting::check_request_text(text)?;
    let mut parser = spargebra::SparqlParser::new();
    if let Some(base) = base_iri {
        parser = parser.with_base_iri(base).map_err(|e| SparqlError::Evaluation(format!("bad base IRI: {e}")))?;
    }
    Ok(parser.parse_update(text)?)
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UpdateSummary {
    pub quads_inserted: u64,
    pub quads_deleted: u64,
}

/// Runs a whole update request in one transaction, for the owner of a
/// local store: `LOAD` reads any local file the process can read
/// ([`LoadPolicy::AnyLocalFile`], as `rhizome load` does), within
/// [`DEFAULT_LOAD_MAX_BYTES`].
pub fn execute_update(store: &Store, update: &Update) -> Result<UpdateSummary> {
    let stats = Statistics::from_store(&store.planner_stats()?);
    let mut txn = store.transaction()?;
    let limits = UpdateLimits { load: LoadPolicy::AnyLocalFile, ..UpdateLimits::default() };
    let summary = execute_update_in(&mut txn, store.mode(), &stats, update, &limits)?;
    txn.commit()?;
    Ok(summary)
}

/// Bounds on an update (none by default but that `LOAD` is refused), so
/// that a runaway DELETE/INSERT or LOAD does not hold the store's writer
/// forever, and a client cannot read the server's files.
#[derive(Clone, Debug, Default)]
pub struct UpdateLimits {
    /// The whole request fails with `SparqlError::Timeout` past this
    /// instant (WHERE clauses and LOAD alike).
    pub deadline: Option<std::time::Instant>,
    /// As `PreparedQuery::set_memory_limit`, for each WHERE clause.
    pub memory_bytes: Option<usize>,
    /// What `LOAD` may read.
    pub load: LoadPolicy,
    /// The most bytes one `LOAD` reads (after decompression);
    /// [`DEFAULT_LOAD_MAX_BYTES`] when `None`.
    pub load_max_bytes: Option<u64>,
    /// Set from any thread to stop the update (`SparqlError::Cancelled`,
    /// nothing written): the server sets it when the client goes away.
    pub cancelled: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
    /// Memory shared with other requests (`PreparedQuery::set_memory_pool`),
    /// for each WHERE clause and the solutions it holds until its writes.
    pub memory_pool: Option<std::sync::Arc<crate::MemoryPool>>,
    /// The most quads the request may insert (a transaction holds every
    /// write until its commit, about 2 KB per quad): past it the update
    /// fails with `SparqlError::TooComplex`, nothing written.
    pub max_inserted_quads: Option<u64>,
}

/// The most bytes one `LOAD` reads unless set (256 MiB).
pub const DEFAULT_LOAD_MAX_BYTES: u64 = 256 << 20;

/// What `LOAD <file:...>` may read. `http:` and `https:` IRIs are never
/// fetched: a server that fetched them for its clients would reach
/// whatever its network reaches.
#[derive(Clone, Debug, Default)]
pub enum LoadPolicy {
    /// Nothing (a server's default: its members must not read its files).
    #[default]
    Refused,
    /// Files inside one folder: the IRI's path must lie in it as written
    /// (no `..`) and once symbolic links are resolved.
    Folder(LoadFolder),
    /// Any local file the process can read (the CLI on a local store: its
    /// user owns both).
    AnyLocalFile,
}

/// A folder `LOAD` may read from, as given and resolved.
#[derive(Clone, Debug)]
pub struct LoadFolder {
    given: std::path::PathBuf,
    canonical: std::path::PathBuf,
}

impl LoadFolder {
    /// The folder at `path`, which must exist.
    pub fn new(path: &std::path::Path) -> std::io::Result<LoadFolder> {
        let canonical = path.canonicalize()?;
        if !canonical.is_dir() {
            return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a folder"));
        }
        let given = if path.is_absolute() { path.to_owned() } else { canonical.clone() };
        Ok(LoadFolder { given, canonical })
    }

    /// The file `path` names, if it is a regular file inside the folder.
    /// Every other case gives the same `None`, so that a refusal tells
    /// nothing about what exists outside the folder; a path outside the
    /// folder as written is refused before the file system is asked.
    fn file(&self, path: &std::path::Path) -> Option<std::path::PathBuf> {
        use std::path::Component;
        if !path.is_absolute() || path.components().any(|c| matches!(c, Component::ParentDir | Component::CurDir)) {
            return None;
        }
        if !path.starts_with(&self.given) && !path.starts_with(&self.canonical) {
            return None;
        }
        let resolved = path.canonicalize().ok()?;
        (resolved.starts_with(&self.canonical) && resolved.is_file()).then_some(resolved)
    }
}

/// The local path of a `file:` IRI (`file:///p`, `file://localhost/p`),
/// percent-decoded; `None` for other hosts, paths that are not UTF-8 and
/// paths holding a NUL.
fn file_iri_path(iri: &str) -> Option<std::path::PathBuf> {
    let rest = iri.strip_prefix("file://")?;
    let path = rest.strip_prefix("localhost").unwrap_or(rest);
    if !path.starts_with('/') || path.contains(['?', '#']) {
        return None;
    }
    let bytes: Vec<u8> = percent_encoding::percent_decode_str(path).collect();
    if bytes.contains(&0) {
        return None;
    }
    Some(std::path::PathBuf::from(String::from_utf8(bytes).ok()?))
}

/// Runs a whole update request inside a transaction the caller opened and
/// will commit (or drop, if this fails): for callers that own the write
/// path, such as a database's documents. `mode` is the store's.
pub fn execute_update_in(txn: &mut StoreTransaction<'_>, mode: DatasetMode, stats: &Statistics, update: &Update, limits: &UpdateLimits) -> Result<UpdateSummary> {
    execute_update_with_stored_default(txn, mode, stats, update, limits, None)
}

/// As [`execute_update_in`]; in a union store, `stored_default` is the
/// graph that writes to the default graph go to (a database's own default
/// graph, as Jena's union mode keeps one): `INSERT` into the default graph
/// adds there, `DELETE` from it and `CLEAR`/`DROP DEFAULT` remove only
/// from there, and `NAMED` leaves it out; reads of the default graph are
/// still the union of every graph, and `ALL` is still every graph. Without
/// it, a triple written to the default graph of a union store goes to its
/// subject's graph and removals reach every graph.
pub fn execute_update_with_stored_default(
    txn: &mut StoreTransaction<'_>,
    mode: DatasetMode,
    stats: &Statistics,
    update: &Update,
    limits: &UpdateLimits,
    stored_default: Option<&NamedNode>,
) -> Result<UpdateSummary> {
    let mut summary = UpdateSummary::default();
    let stored_default = stored_default.filter(|_| mode == DatasetMode::Union);
    for op in &update.operations {
        Operation { txn, mode, stats, summary: &mut summary, limits, stored_default }.run(op)?;
    }
    Ok(summary)
}

struct Operation<'t, 's> {
    txn: &'t mut StoreTransaction<'s>,
    mode: DatasetMode,
    stats: &'t Statistics,
    summary: &'t mut UpdateSummary,
    limits: &'t UpdateLimits,
    stored_default: Option<&'t NamedNode>,
}

fn graph_ref(g: &GraphName) -> GraphNameRef<'_> {
    match g {
        GraphName::NamedNode(n) => n.into(),
        GraphName::DefaultGraph => GraphNameRef::DefaultGraph,
    }
}

impl Operation<'_, '_> {
    fn run(&mut self, op: &GraphUpdateOperation) -> Result<()> {
        match op {
            GraphUpdateOperation::InsertData { data } => {
                // Blank nodes of the data are fresh for this operation.
                let mut blanks: FxHashMap<String, BlankNode> = FxHashMap::default();
                for q in data {
                    let subject: NamedOrBlankNode = match &q.subject {
                        NamedOrBlankNode::BlankNode(b) => blanks.entry(b.as_str().to_owned()).or_default().clone().into(),
                        other => other.clone(),
                    };
                    let object = crate::triple_terms::rename_blanks(&q.object, &mut |b| blanks.entry(b.as_str().to_owned()).or_default().clone());
                    self.insert(QuadRef::new(&subject, &q.predicate, &object, graph_ref(&q.graph_name)))?;
                }
            }
            GraphUpdateOperation::DeleteData { data } => {
                for q in data {
                    let object = Term::from(q.object.clone());
                    let graph = match &q.graph_name {
                        GraphName::NamedNode(n) => Some(n.clone().into()),
                        GraphName::DefaultGraph => None,
                    };
                    self.delete(&q.subject.clone().into(), &q.predicate, &object, graph.as_ref())?;
                }
            }
            GraphUpdateOperation::DeleteInsert { delete, insert, using, pattern } => {
                let query = Query::Select { dataset: using.clone(), pattern: (**pattern).clone(), base_iri: None };
                // Held with the solutions, until this operation's writes.
                let mut held_in_pool = self.limits.memory_pool.as_ref().map(|p| p.reservation());
                let (variables, solutions) = {
                    let prepared = PreparedQuery::for_update(self.txn.reader(), self.mode, self.stats.clone(), &query)?;
                    if let Some(deadline) = self.limits.deadline {
                        prepared.set_timeout(deadline.saturating_duration_since(std::time::Instant::now()));
                    }
                    if let Some(bytes) = self.limits.memory_bytes {
                        prepared.set_memory_limit(bytes);
                    }
                    if let Some(pool) = &self.limits.memory_pool {
                        prepared.set_memory_pool(pool);
                    }
                    if let Some(flag) = &self.limits.cancelled {
                        prepared.cancel_with(flag.clone());
                    }
                    let out = match prepared.execute()? {
                        QueryResults::Solutions { variables, solutions } => {
                            // The solutions are held until the writes: they
                            // count against the memory budget too.
                            let limit = self.limits.memory_bytes.unwrap_or(usize::MAX);
                            let mut held = 0usize;
                            let mut all = Vec::new();
                            for s in solutions {
                                let s = s?;
                                held = held.saturating_add(s.iter().map(|t| 32 + t.as_ref().map_or(0, term_bytes)).sum::<usize>());
                                if held > limit {
                                    return Err(SparqlError::MemoryLimit { limit_bytes: limit });
                                }
                                if let Some(r) = &mut held_in_pool {
                                    if !r.grow_to(held) {
                                        return Err(SparqlError::ServerMemory { limit_bytes: r.pool().limit_bytes() });
                                    }
                                }
                                all.push(s);
                            }
                            (variables, all)
                        }
                        _ => unreachable!("a SELECT gives solutions"),
                    };
                    out
                };
                let index: FxHashMap<&Variable, usize> = variables.iter().enumerate().map(|(i, v)| (v, i)).collect();
                let value = |s: &[Option<Term>], v: &Variable| index.get(v).and_then(|i| s[*i].clone());
                let mut deletes = Vec::new();
                let mut inserts = Vec::new();
                for s in &solutions {
                    for q in delete {
                        let subject = crate::triple_terms::instantiate_ground(&q.subject, &|v| value(s, v));
                        let object = crate::triple_terms::instantiate_ground(&q.object, &|v| value(s, v));
                        let predicate = named(&q.predicate, |v| value(s, v));
                        let graph = graph_pattern(&q.graph_name, |v| value(s, v));
                        if let (Some(Term::NamedNode(subject)), Some(Term::NamedNode(p)), Some(o), Some(g)) = (subject.clone(), predicate.clone(), object.clone(), graph.clone()) {
                            deletes.push((Term::from(subject), p, o, g));
                        } else if let (Some(Term::BlankNode(b)), Some(Term::NamedNode(p)), Some(o), Some(g)) = (subject, predicate, object, graph) {
                            deletes.push((Term::from(b), p, o, g));
                        }
                    }
                    let mut blanks: FxHashMap<String, BlankNode> = FxHashMap::default();
                    for q in insert {
                        let mut term = |t: &TermPattern| -> Option<Term> {
                            crate::triple_terms::instantiate(t, &|v| value(s, v), &mut |b| blanks.entry(b.as_str().to_owned()).or_default().clone().into())
                        };
                        let (subject, object) = (term(&q.subject), term(&q.object));
                        let predicate = named(&q.predicate, |v| value(s, v));
                        let graph = graph_pattern(&q.graph_name, |v| value(s, v));
                        let subject: Option<NamedOrBlankNode> = match subject {
                            Some(Term::NamedNode(n)) => Some(n.into()),
                            Some(Term::BlankNode(b)) => Some(b.into()),
                            _ => None,
                        };
                        if let (Some(subject), Some(Term::NamedNode(p)), Some(o), Some(g)) = (subject, predicate, object, graph) {
                            let graph_name = match g {
                                Some(Term::NamedNode(n)) => oxrdf::GraphName::NamedNode(n),
                                None => oxrdf::GraphName::DefaultGraph,
                                _ => continue,
                            };
                            inserts.push(Quad::new(subject, p, o, graph_name));
                        }
                    }
                }
                for (s, p, o, g) in &deletes {
                    self.delete(s, p, o, g.as_ref())?;
                }
                for q in &inserts {
                    self.insert(q.as_ref())?;
                }
            }
            GraphUpdateOperation::Load { silent, source, destination } => {
                if let Err(e) = self.load(source, destination) {
                    if !silent {
                        return Err(e);
                    }
                }
            }
            GraphUpdateOperation::Clear { silent, graph } => self.clear(graph, *silent, false)?,
            GraphUpdateOperation::Drop { silent, graph } => self.clear(graph, *silent, true)?,
            GraphUpdateOperation::Create { silent, graph } => {
                let id = self.txn.encode(graph.as_ref().into())?;
                if !self.txn.create_graph(id)? && !silent {
                    return Err(SparqlError::GraphExists(graph.to_string()));
                }
            }
        }
        Ok(())
    }

    /// A term's id: a blank node the store gave out (read by the WHERE
    /// clause) keeps its id; any other term is encoded (new blank nodes
    /// get fresh ids).
    fn encode(&mut self, t: TermRef<'_>) -> Result<TermId> {
        if let TermRef::BlankNode(_) = t {
            if let Some(id) = self.txn.lookup(t)? {
                return Ok(id);
            }
        }
        Ok(self.txn.encode(t)?)
    }

    fn insert(&mut self, quad: QuadRef<'_>) -> Result<()> {
        let s = self.encode(quad.subject.into())?;
        let p = self.encode(quad.predicate.into())?;
        let o = self.encode(quad.object)?;
        let g = match quad.graph_name {
            GraphNameRef::DefaultGraph => match self.stored_default {
                Some(d) => self.encode(d.as_ref().into())?,
                None => self.txn.default_graph_of(s),
            },
            GraphNameRef::NamedNode(n) => self.encode(n.into())?,
            GraphNameRef::BlankNode(b) => self.encode(b.into())?,
        };
        let ids = [s, p, o, g];
        if self.txn.insert(&ids)? {
            self.summary.quads_inserted += 1;
            if let Some(max) = self.limits.max_inserted_quads.filter(|max| self.summary.quads_inserted > *max) {
                return Err(SparqlError::TooComplex(format!(
                    "the update inserts more than {max} quads, the most one request may write (it holds every write until its commit); split it into several requests"
                )));
            }
        }
        Ok(())
    }

    /// Deletes a triple from a graph; from the default graph of a union
    /// store, which is every graph, it is deleted wherever it is.
    fn delete(&mut self, s: &Term, p: &NamedNode, o: &Term, g: Option<&Term>) -> Result<()> {
        let (Some(s), Some(p), Some(o)) = (self.txn.lookup(s.as_ref())?, self.txn.lookup(p.as_ref().into())?, self.txn.lookup(o.as_ref())?) else {
            return Ok(());
        };
        let graphs: Vec<TermId> = match (g, self.mode) {
            (Some(g), _) => match self.txn.lookup(g.as_ref())? {
                Some(g) => vec![g],
                None => return Ok(()),
            },
            (None, DatasetMode::Plain) => vec![TermId::DEFAULT_GRAPH],
            (None, DatasetMode::Union) if self.stored_default.is_some() => self.stored_default_id()?.into_iter().collect(),
            (None, DatasetMode::Union) => self
                .txn
                .scan(QuadPattern { s: Some(s), p: Some(p), o: Some(o), g: None })
                .map(|q| q.map(|q| q[3]))
                .collect::<rhizome_rdf::Result<_>>()?,
        };
        for g in graphs {
            if self.txn.remove(&[s, p, o, g])? {
                self.summary.quads_deleted += 1;
            }
        }
        Ok(())
    }

    fn load(&mut self, source: &NamedNode, destination: &GraphName) -> Result<()> {
        use std::io::Read;
        let iri = source.as_str();
        // A file is named by its last segment only: the rest is a path on
        // the server's machine, which errors do not show.
        let shown = match iri.strip_prefix("file:") {
            Some(path) => path.rsplit('/').next().unwrap_or_default().to_owned(),
            None => source.to_string(),
        };
        let error = |reason: String| SparqlError::Load { iri: shown.clone(), reason };
        if iri.starts_with("http:") || iri.starts_with("https:") {
            return Err(error("LOAD of http: and https: IRIs is off on this server".into()));
        }
        if !iri.starts_with("file:") {
            return Err(error("only file: IRIs can be loaded".into()));
        }
        let path = match &self.limits.load {
            LoadPolicy::Refused => {
                return Err(error("LOAD of file: IRIs is off on this server (an admin can allow one folder with rhizome serve --load-dir)".into()))
            }
            LoadPolicy::Folder(folder) => file_iri_path(iri)
                .and_then(|p| folder.file(&p))
                .ok_or_else(|| error("no readable file of that name in the server's load folder".into()))?,
            LoadPolicy::AnyLocalFile => file_iri_path(iri).ok_or_else(|| error("not a local file IRI".into()))?,
        };
        let format = rhizome_rdf::format_from_path(&path).ok_or_else(|| error("unknown RDF format (by file extension)".into()))?;
        let max_bytes = self.limits.load_max_bytes.unwrap_or(DEFAULT_LOAD_MAX_BYTES);
        let mut file = std::fs::File::open(&path).map_err(|e| error(io_reason(&e)))?;
        let mut magic = [0u8; 2];
        let gzip = file.read_exact(&mut magic).is_ok() && magic == [0x1f, 0x8b];
        std::io::Seek::rewind(&mut file).map_err(|e| error(io_reason(&e)))?;
        let raw: Box<dyn Read> = if gzip { Box::new(flate2::read::MultiGzDecoder::new(std::io::BufReader::new(file))) } else { Box::new(file) };
        let over = std::rc::Rc::new(std::cell::Cell::new(false));
        let limited = LimitedRead { inner: raw, left: max_bytes, over: over.clone() };
        let parser = RdfParser::from_format(format).with_base_iri(iri).map_err(|e| error(e.to_string()))?;
        let quads = parser.for_reader(limited);
        let mut n = 0u64;
        for q in quads {
            n += 1;
            if n.is_multiple_of(1024) {
                if let Some(deadline) = self.limits.deadline {
                    if std::time::Instant::now() >= deadline {
                        return Err(SparqlError::Timeout);
                    }
                }
                if self.limits.cancelled.as_ref().is_some_and(|f| f.load(std::sync::atomic::Ordering::Relaxed)) {
                    return Err(SparqlError::Cancelled);
                }
            }
            let q = match q {
                Ok(q) => q,
                Err(_) if over.get() => return Err(error(format!("the file is larger than the load limit of {max_bytes} bytes"))),
                Err(e) => return Err(error(e.to_string())),
            };
            let graph = match destination {
                GraphName::NamedNode(n) => n.as_ref().into(),
                GraphName::DefaultGraph => q.graph_name.as_ref(),
            };
            self.insert(QuadRef::new(&q.subject, &q.predicate, &q.object, graph))?;
        }
        if over.get() {
            return Err(error(format!("the file is larger than the load limit of {max_bytes} bytes")));
        }
        Ok(())
    }

    /// The id of the stored default graph, if the store has its IRI.
    fn stored_default_id(&self) -> Result<Option<TermId>> {
        match self.stored_default {
            Some(d) => Ok(self.txn.lookup(d.as_ref().into())?),
            None => Ok(None),
        }
    }

    fn graphs(&self) -> Result<Vec<TermId>> {
        Ok(rhizome_rdf::index::graph_names(self.txn.reader())?)
    }

    fn clear(&mut self, target: &GraphTarget, silent: bool, drop: bool) -> Result<()> {
        let graphs = match target {
            GraphTarget::NamedNode(n) => {
                let id = self.txn.lookup(n.as_ref().into())?;
                let exists = match id {
                    Some(id) => self.txn.graph_exists(id)?,
                    None => false,
                };
                if !exists {
                    return if silent { Ok(()) } else { Err(SparqlError::NoSuchGraph(n.to_string())) };
                }
                id.into_iter().collect()
            }
            GraphTarget::DefaultGraph => match self.mode {
                DatasetMode::Plain => vec![TermId::DEFAULT_GRAPH],
                DatasetMode::Union if self.stored_default.is_some() => self.stored_default_id()?.into_iter().collect(),
                DatasetMode::Union => self.graphs()?,
            },
            GraphTarget::NamedGraphs => {
                let stored_default = self.stored_default_id()?;
                self.graphs()?.into_iter().filter(|g| *g != TermId::DEFAULT_GRAPH && Some(*g) != stored_default).collect()
            }
            GraphTarget::AllGraphs => self.graphs()?,
        };
        for g in graphs {
            let n = self.txn.drop_graph(g)?;
            self.summary.quads_deleted += n;
            if !drop && g != TermId::DEFAULT_GRAPH && matches!(target, GraphTarget::NamedNode(_)) {
                // CLEAR keeps the (now empty) graph.
                self.txn.create_graph(g)?;
            }
        }
        Ok(())
    }
}

/// The bytes of a term's text, roughly.
fn term_bytes(t: &Term) -> usize {
    match t {
        Term::NamedNode(n) => n.as_str().len(),
        Term::BlankNode(b) => b.as_str().len(),
        Term::Literal(l) => l.value().len() + l.datatype().as_str().len(),
        Term::Triple(t) => term_bytes(&t.subject.clone().into()) + t.predicate.as_str().len() + term_bytes(&t.object),
    }
}

/// An I/O error's kind and text without any path (std's messages hold none).
fn io_reason(e: &std::io::Error) -> String {
    e.to_string()
}

/// A reader that gives at most `left` bytes, then fails (and says so).
struct LimitedRead<R> {
    inner: R,
    left: u64,
    over: std::rc::Rc<std::cell::Cell<bool>>,
}

impl<R: std::io::Read> std::io::Read for LimitedRead<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.left == 0 {
            // One byte more than the limit means the file is larger.
            let mut probe = [0u8; 1];
            if self.inner.read(&mut probe)? == 0 {
                return Ok(0);
            }
            self.over.set(true);
            return Err(std::io::Error::other("past the load limit"));
        }
        let want = buf.len().min(self.left.min(usize::MAX as u64) as usize);
        let n = self.inner.read(&mut buf[..want])?;
        self.left -= n as u64;
        Ok(n)
    }
}

fn named(p: &NamedNodePattern, value: impl Fn(&Variable) -> Option<Term>) -> Option<Term> {
    match p {
        NamedNodePattern::NamedNode(n) => Some(n.clone().into()),
        NamedNodePattern::Variable(v) => value(v),
    }
}

/// `Some(None)`: the default graph; `None`: an unbound graph variable.
fn graph_pattern(g: &GraphNamePattern, value: impl Fn(&Variable) -> Option<Term>) -> Option<Option<Term>> {
    match g {
        GraphNamePattern::DefaultGraph => Some(None),
        GraphNamePattern::NamedNode(n) => Some(Some(n.clone().into())),
        GraphNamePattern::Variable(v) => value(v).map(Some),
    }
}
