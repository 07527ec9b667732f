//! Keeps the LDP index true in every document write: wraps the database's
//! projector, and after it has put the document's graph in the
//! transaction, records the resource (its interaction model, read from
//! its graph's `rdf:type`s), its place in its parent's children and its
//! membership resource. Writes through any door (LDP, CouchDB's API,
//! SPARQL Update, the Graph Store Protocol, replication) go through here,
//! so a replicated LDP resource is listed by its container on the other
//! side too.

use crate::index::{self, ResourceEntry};
use crate::{InteractionModel, LdpError, LdpPath, Membership};
use rhizome_docs::GraphProjector;
use rhizome_rdf::StoreTransaction;
use serde_json::{Map, Value};
use std::sync::Arc;

pub struct LdpProjector {
    inner: Arc<dyn GraphProjector>,
    /// The root container's IRI, `<base>/<db>/_ldp/`.
    root: String,
}

impl LdpProjector {
    pub fn new(inner: Arc<dyn GraphProjector>, root: String) -> LdpProjector {
        LdpProjector { inner, root }
    }

    fn record(&self, txn: &mut StoreTransaction<'_>, doc_id: &str, live: bool) -> Result<(), LdpError> {
        let Some(path) = LdpPath::from_iri(&self.root, doc_id).filter(|p| p.iri(&self.root) == doc_id) else {
            return Ok(());
        };
        let old = index::get(txn.reader(), &path)?;
        if !live {
            if let Some(old) = old {
                index::delete(txn.kv_mut(), &path);
                index::set_child(txn.kv_mut(), &path, false)?;
                if let Some(m) = &old.membership_resource {
                    index::set_membership_target(txn.kv_mut(), m, &path, false);
                }
            }
            return Ok(());
        }
        let types = crate::membership::types(txn.reader(), doc_id)?;
        let default = if path.is_root() { InteractionModel::BasicContainer } else { InteractionModel::RdfSource };
        let model = InteractionModel::most_specific(types.iter().map(String::as_str)).or(old.as_ref().map(|o| o.model)).unwrap_or(default);
        let membership_resource = match model.has_membership() {
            true => Membership::read(txn.reader(), doc_id)?.map(|m| m.resource),
            false => None,
        };
        let entry = ResourceEntry { model, generation: old.as_ref().map_or(0, |o| o.generation), membership_resource };
        if old.as_ref() == Some(&entry) {
            return Ok(());
        }
        index::put(txn.kv_mut(), &path, &entry);
        if old.is_none() {
            index::set_child(txn.kv_mut(), &path, true)?;
        }
        let before = old.and_then(|o| o.membership_resource);
        if before != entry.membership_resource {
            if let Some(m) = &before {
                index::set_membership_target(txn.kv_mut(), m, &path, false);
            }
            if let Some(m) = &entry.membership_resource {
                index::set_membership_target(txn.kv_mut(), m, &path, true);
            }
        }
        Ok(())
    }
}

impl GraphProjector for LdpProjector {
    fn project(&self, txn: &mut StoreTransaction<'_>, doc_id: &str, winner: Option<&Map<String, Value>>) -> Result<(), String> {
        self.inner.project(txn, doc_id, winner)?;
        self.record(txn, doc_id, winner.is_some()).map_err(|e| e.to_string())
    }

    fn graph_iri(&self, doc_id: &str) -> Option<String> {
        self.inner.graph_iri(doc_id)
    }

    fn doc_id(&self, graph_iri: &str) -> Option<String> {
        self.inner.doc_id(graph_iri)
    }

    fn id_conflict(&self, txn: &StoreTransaction<'_>, doc_id: &str) -> Result<Option<String>, String> {
        self.inner.id_conflict(txn, doc_id)
    }

    fn check_local(&self, id: &str, doc: &Map<String, Value>) -> Result<(), String> {
        self.inner.check_local(id, doc)
    }

    /// An LDP resource's document keeps the LDP index, whatever its body.
    fn projects_graph_bodies(&self, doc_id: &str) -> bool {
        self.inner.projects_graph_bodies(doc_id) || LdpPath::from_iri(&self.root, doc_id).is_some_and(|p| p.iri(&self.root) == doc_id)
    }

    fn prepare(&self, reader: &dyn rhizome_kv::KvRead, doc: &Map<String, Value>) -> Result<Option<rhizome_docs::Prepared>, String> {
        self.inner.prepare(reader, doc)
    }

    fn project_prepared(&self, txn: &mut StoreTransaction<'_>, doc_id: &str, winner: &Map<String, Value>, prepared: rhizome_docs::Prepared) -> Result<(), String> {
        self.inner.project_prepared(txn, doc_id, winner, prepared)?;
        self.record(txn, doc_id, true).map_err(|e| e.to_string())
    }

    /// The inner projection's answer: the LDP index this adds is kept
    /// beside the graph, not in it.
    fn project_known(&self, txn: &mut StoreTransaction<'_>, doc_id: &str, winner: Option<&Map<String, Value>>, prepared: Option<rhizome_docs::Prepared>, graph_empty: bool) -> Result<bool, String> {
        let empty = self.inner.project_known(txn, doc_id, winner, prepared, graph_empty)?;
        self.record(txn, doc_id, winner.is_some()).map_err(|e| e.to_string())?;
        Ok(empty)
    }

    fn contexts(&self) -> Option<&rhizome_docs::ContextStore> {
        self.inner.contexts()
    }

    fn foreign_graph(&self, iri: &str) -> Option<String> {
        self.inner.foreign_graph(iri)
    }

    fn graph_of(&self, reader: &dyn rhizome_kv::KvRead, doc_id: &str, body: &Map<String, Value>) -> Result<Vec<oxrdf::Quad>, String> {
        self.inner.graph_of(reader, doc_id, body)
    }

    /// The LDP rules (`crate::rights`), after the inner projection's own.
    fn check_change(&self, txn: &StoreTransaction<'_>, doc_id: &str, change: rhizome_docs::GraphChange<'_>, writer: rhizome_docs::Writer, replicated: bool) -> Result<(), rhizome_docs::DocError> {
        self.inner.check_change(txn, doc_id, change, writer, replicated)?;
        crate::rights::check_change(&self.root, &*self.inner, txn, doc_id, change, writer, replicated)
    }
}
