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
use spargebra::term::{GraphName, GraphNamePattern, GroundTermPattern, NamedNodePattern, TermPattern};
use spargebra::{GraphUpdateOperation, Query, Update};

pub fn parse_update(text: &str, base_iri: Option<&str>) -> Result<Update> {
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

/// Runs a whole update request in one transaction.
pub fn execute_update(store: &Store, update: &Update) -> Result<UpdateSummary> {
    let stats = Statistics::from_store(&store.stats()?);
    let mut txn = store.transaction()?;
    let summary = execute_update_in(&mut txn, store.mode(), &stats, update, &UpdateLimits::default())?;
    txn.commit()?;
    Ok(summary)
}

/// Bounds on the WHERE clauses of an update (none by default), so that a
/// runaway DELETE/INSERT does not hold the store's writer forever.
#[derive(Clone, Debug, Default)]
pub struct UpdateLimits {
    /// The whole request fails with `SparqlError::Timeout` past this instant.
    pub deadline: Option<std::time::Instant>,
    /// As `PreparedQuery::set_memory_limit`, for each WHERE clause.
    pub memory_bytes: Option<usize>,
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
                    let object = match &q.object {
                        Term::BlankNode(b) => blanks.entry(b.as_str().to_owned()).or_default().clone().into(),
                        other => other.clone(),
                    };
                    self.insert(QuadRef::new(&subject, &q.predicate, &object, graph_ref(&q.graph_name)))?;
                }
            }
            GraphUpdateOperation::DeleteData { data } => {
                for q in data {
                    let object: Term = match &q.object {
                        spargebra::term::GroundTerm::NamedNode(n) => n.clone().into(),
                        spargebra::term::GroundTerm::Literal(l) => l.clone().into(),
                        #[allow(unreachable_patterns)]
                        _ => return Err(SparqlError::Unsupported("RDF 1.2 triple terms".into())),
                    };
                    let graph = match &q.graph_name {
                        GraphName::NamedNode(n) => Some(n.clone().into()),
                        GraphName::DefaultGraph => None,
                    };
                    self.delete(&q.subject.clone().into(), &q.predicate, &object, graph.as_ref())?;
                }
            }
            GraphUpdateOperation::DeleteInsert { delete, insert, using, pattern } => {
                let query = Query::Select { dataset: using.clone(), pattern: (**pattern).clone(), base_iri: None };
                let (variables, solutions) = {
                    let prepared = PreparedQuery::for_update(self.txn.reader(), self.mode, self.stats.clone(), &query)?;
                    if let Some(deadline) = self.limits.deadline {
                        prepared.set_timeout(deadline.saturating_duration_since(std::time::Instant::now()));
                    }
                    if let Some(bytes) = self.limits.memory_bytes {
                        prepared.set_memory_limit(bytes);
                    }
                    let out = match prepared.execute()? {
                        QueryResults::Solutions { variables, solutions } => (variables, solutions.collect::<Result<Vec<_>>>()?),
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
                        let subject = match &q.subject {
                            GroundTermPattern::Variable(v) => value(s, v),
                            GroundTermPattern::NamedNode(n) => Some(n.clone().into()),
                            GroundTermPattern::Literal(l) => Some(l.clone().into()),
                            #[allow(unreachable_patterns)]
                            _ => None,
                        };
                        let object = match &q.object {
                            GroundTermPattern::Variable(v) => value(s, v),
                            GroundTermPattern::NamedNode(n) => Some(n.clone().into()),
                            GroundTermPattern::Literal(l) => Some(l.clone().into()),
                            #[allow(unreachable_patterns)]
                            _ => None,
                        };
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
                            match t {
                                TermPattern::Variable(v) => value(s, v),
                                TermPattern::BlankNode(b) => Some(blanks.entry(b.as_str().to_owned()).or_default().clone().into()),
                                TermPattern::NamedNode(n) => Some(n.clone().into()),
                                TermPattern::Literal(l) => Some(l.clone().into()),
                                #[allow(unreachable_patterns)]
                                _ => None,
                            }
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
        let error = |reason: String| SparqlError::Load { iri: source.to_string(), reason };
        let path = source
            .as_str()
            .strip_prefix("file://")
            .ok_or_else(|| error("only file: IRIs can be loaded".into()))?;
        let path = std::path::Path::new(path);
        let format = rhizome_rdf::format_from_path(path).ok_or_else(|| error("unknown RDF format (by file extension)".into()))?;
        let bytes = std::fs::read(path).map_err(|e| error(e.to_string()))?;
        let parser = RdfParser::from_format(format).with_base_iri(source.as_str()).map_err(|e| error(e.to_string()))?;
        let quads: Vec<Quad> = parser.for_slice(&bytes).collect::<std::result::Result<_, _>>().map_err(|e| error(e.to_string()))?;
        for q in quads {
            let graph = match destination {
                GraphName::NamedNode(n) => n.as_ref().into(),
                GraphName::DefaultGraph => q.graph_name.as_ref(),
            };
            self.insert(QuadRef::new(&q.subject, &q.predicate, &q.object, graph))?;
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
