//! The LDP rules every write keeps, whatever its door (LDP, CouchDB's API,
//! SPARQL Update, the Graph Store Protocol, replication, Python): checked by
//! [`crate::LdpProjector`] before a revision of an LDP resource's document
//! is stored (`rhizome_docs::GraphProjector::check_change`), so the LDP
//! endpoints' own checks are not the only guard.
//!
//! - Ids under the root container are resources' IRIs (`<root>a/b`, no
//!   trailing slash, no segment starting with `_`): 409 otherwise.
//! - `ldp:contains` is derived from the children index: a graph stating
//!   it is refused to everyone (409).
//! - A resource's interaction model is fixed when it is created: a graph
//!   naming another LDP type is refused (409), so an RDF source never
//!   becomes a container.
//! - Only database admins create direct or indirect containers or change
//!   their membership settings (`ldp:membershipResource`,
//!   `hasMemberRelation`, `isMemberOfRelation`, `insertedContentRelation`):
//!   403 for members.
//! - A new resource's parent is a container, and a container with children
//!   is not deleted from under them (409). Revisions replicated by a
//!   database admin (`new_edits=false`) are exempt from these two: a
//!   source's `_changes` lists each document at its latest change, so a
//!   container edited after its children were made arrives after them (the
//!   source kept the rule when they were written).

use crate::membership::{named_nodes, objects_of_ids};
use crate::vocab::*;
use crate::{index, InteractionModel, LdpPath};
use oxrdf::{NamedNodeRef, NamedOrBlankNode, Quad, Term};
use rhizome_docs::{DocError, GraphChange, GraphProjector, Writer};
use rhizome_kv::KvRead;
use rhizome_rdf::term::Dictionary;
use rhizome_rdf::{QuadPattern, QuadScan, StoreTransaction, TermId};

/// What the rules look at in a resource's graph.
#[derive(Default)]
struct Facts {
    /// A triple with predicate `ldp:contains`, any subject.
    contains: Option<String>,
    /// The resource's own `rdf:type`s.
    types: Vec<String>,
    /// Its membership settings, `(predicate, object)` sorted.
    settings: Vec<(String, String)>,
}

impl Facts {
    /// From quads a JSON body projects to (all in the resource's graph).
    fn of_quads(iri: &str, quads: &[Quad]) -> Facts {
        let mut f = Facts::default();
        for q in quads {
            let own = matches!(&q.subject, NamedOrBlankNode::NamedNode(n) if n.as_str() == iri);
            let p = q.predicate.as_str();
            if p == CONTAINS {
                f.contains.get_or_insert_with(|| format!("{} {} {}", q.subject, q.predicate, q.object));
            } else if own && p == RDF_TYPE {
                if let Term::NamedNode(t) = &q.object {
                    f.types.push(t.as_str().to_owned());
                }
            } else if own && MEMBERSHIP_PREDICATES.contains(&p) {
                f.settings.push((p.to_owned(), q.object.to_string()));
            }
        }
        f.settings.sort();
        f
    }

    /// From the resource's graph in a store, by the terms' ids.
    fn of_store(kv: &dyn KvRead, ids: &FactIds) -> Result<Facts, DocError> {
        let corrupt = |e: crate::LdpError| DocError::Corrupt(e.to_string());
        let mut f = Facts::default();
        let Some(g) = ids.iri else { return Ok(f) };
        if let Some(p) = ids.rdf_type {
            f.types = named_nodes(objects_of_ids(kv, g, g, p).map_err(corrupt)?);
        }
        for (name, p) in MEMBERSHIP_PREDICATES.iter().zip(ids.settings) {
            let Some(p) = p else { continue };
            for o in objects_of_ids(kv, g, g, p).map_err(corrupt)? {
                f.settings.push(((*name).to_owned(), o.to_string()));
            }
        }
        f.settings.sort();
        if let Some(p) = ids.contains {
            if let Some(q) = QuadScan::new(kv, QuadPattern { p: Some(p), g: Some(g), ..Default::default() }).next() {
                let q = q?;
                let decode = |t| Dictionary::decode(kv, t).map(|t| t.map(|t| t.to_string()).unwrap_or_default());
                f.contains = Some(format!("{} <{CONTAINS}> {}", decode(q[0])?, decode(q[2])?));
            }
        }
        Ok(f)
    }
}

/// The ids [`Facts::of_store`] reads by: the resource's IRI and the
/// predicates, looked up once per change through the transaction (its own
/// new terms, the store's cache of known ones, then its reads) and used
/// for the graph before the change as well: an id never changes meaning,
/// and one a snapshot did not have yet finds no quads there. Looked up in
/// each scan's reader instead, they cost an LDP PUT 34 dictionary reads
/// (issue 46).
struct FactIds {
    iri: Option<TermId>,
    rdf_type: Option<TermId>,
    /// Of [`MEMBERSHIP_PREDICATES`], in its order.
    settings: [Option<TermId>; 4],
    contains: Option<TermId>,
}

const _: () = assert!(MEMBERSHIP_PREDICATES.len() == 4, "FactIds holds an id per membership predicate");

impl FactIds {
    fn of(txn: &StoreTransaction<'_>, iri: &str) -> Result<FactIds, DocError> {
        let id = |t: &str| txn.lookup(NamedNodeRef::new_unchecked(t).into()).map_err(|e| DocError::Corrupt(e.to_string()));
        let mut settings = [None; 4];
        for (slot, p) in settings.iter_mut().zip(MEMBERSHIP_PREDICATES) {
            *slot = id(p)?;
        }
        Ok(FactIds { iri: id(iri)?, rdf_type: id(RDF_TYPE)?, settings, contains: id(CONTAINS)? })
    }
}

/// Checks a change of the document `doc_id` (see the module comment);
/// `inner` is the projection that reads JSON bodies as RDF.
pub(crate) fn check_change(
    root: &str,
    inner: &dyn GraphProjector,
    txn: &StoreTransaction<'_>,
    doc_id: &str,
    change: GraphChange<'_>,
    writer: Writer,
    replicated: bool,
) -> Result<(), DocError> {
    if !(doc_id.starts_with(root) || Some(doc_id) == root.strip_suffix('/')) {
        return Ok(());
    }
    let path = LdpPath::from_iri(root, doc_id)
        .filter(|p| p.iri(root) == doc_id && !p.as_str().split('/').any(|s| s.starts_with('_')))
        .ok_or_else(|| {
            DocError::constraint(format!(
                "{doc_id} is under the LDP root {root} but is no resource's IRI (a resource's IRI has no trailing slash, no query or fragment, and no path segment starting with _)"
            ))
        })?;
    let corrupt = |e: crate::LdpError| DocError::Corrupt(e.to_string());
    let tree_rules = !(writer.is_admin() && replicated);
    let current = index::get_or_root(txn.reader(), &path).map_err(corrupt)?;
    let (after, before) = match change {
        GraphChange::Deleted => {
            if tree_rules && current.as_ref().is_some_and(|e| e.model.is_container()) && index::has_children(txn.reader(), &path).map_err(corrupt)? {
                return Err(DocError::constraint(format!(
                    "{doc_id} is a container with children: delete them first (an LDP DELETE of the container removes it with its descendants)"
                )));
            }
            return Ok(());
        }
        GraphChange::Body(body) => {
            let quads = inner.graph_of(txn.reader(), doc_id, body).map_err(|reason| DocError::Projection { id: doc_id.to_owned(), reason })?;
            (Facts::of_quads(doc_id, &quads), Facts::of_store(txn.reader(), &FactIds::of(txn, doc_id)?)?)
        }
        GraphChange::Written { before } => {
            let ids = FactIds::of(txn, doc_id)?;
            (Facts::of_store(txn.reader(), &ids)?, Facts::of_store(before, &ids)?)
        }
    };
    if let Some(t) = after.contains {
        return Err(DocError::constraint(format!("ldp:contains is managed by the server (it lists a container's children); the graph of {doc_id} states {t}")));
    }
    let named = InteractionModel::most_specific(after.types.iter().map(String::as_str));
    let model = match &current {
        Some(entry) => entry.model,
        None => named.unwrap_or(InteractionModel::RdfSource),
    };
    if let Some(t) = after.types.iter().find(|t| !model.accepts_type(t)) {
        return Err(DocError::constraint(format!(
            "{doc_id} is an {} (its interaction model is fixed when it is created); its graph may not say it is a {t}",
            model.iri()
        )));
    }
    if model.has_membership() && !writer.is_admin() {
        if current.is_none() {
            return Err(DocError::forbidden(format!("{} Only the database's admins create direct and indirect containers ({doc_id})", rhizome_docs::NOT_ADMIN)));
        }
        if after.settings != before.settings {
            return Err(DocError::forbidden(format!(
                "{} Only the database's admins change a container's membership settings (ldp:membershipResource, ldp:hasMemberRelation, ldp:isMemberOfRelation, ldp:insertedContentRelation of {doc_id})",
                rhizome_docs::NOT_ADMIN
            )));
        }
    }
    if current.is_none() && tree_rules {
        let parent = path.parent().expect("only the root has no parent, and the root always has an entry");
        match index::get_or_root(txn.reader(), &parent).map_err(corrupt)? {
            Some(e) if e.model.is_container() => {}
            Some(_) => return Err(DocError::constraint(format!("{} is not a container: {doc_id} cannot be created under it", parent.iri(root)))),
            None => return Err(DocError::constraint(format!("the parent container {} does not exist: create it before {doc_id}", parent.iri(root)))),
        }
    }
    Ok(())
}
