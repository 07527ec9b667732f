//! The store side of LDP writes and reads that every door shares (the HTTP
//! server's `/{db}/_ldp/` and the Python API): a resource's revision and
//! ETag, whether a name was ever used, its graph replaced, a slug turned
//! into a name, and the deletions that remove a resource with its
//! descendants.

use crate::{index, vocab, InteractionModel, LdpError, LdpPath};
use oxrdf::{NamedNode, NamedNodeRef, Triple};
use rhizome_docs::keys::{DocInfo, DOCS};
use rhizome_kv::KvRead;
use rhizome_rdf::StoreTransaction;
use serde_json::{Map, Value};

/// The most resources one DELETE removes (the resource and its
/// descendants): past it the delete is refused, not half done.
pub const MAX_DELETE_RESOURCES: usize = 10_000;

/// The winning revision of a document (`None`: missing or deleted).
pub fn current_rev(kv: &dyn KvRead, id: &str) -> Result<Option<String>, LdpError> {
    let Some(bytes) = kv.get(DOCS, id.as_bytes())? else { return Ok(None) };
    let info = DocInfo::from_bytes(id, &bytes).map_err(|e| LdpError::Corrupt(e.to_string()))?;
    Ok((!info.deleted).then(|| info.winner.to_string()))
}

/// The resource's ETag and model as stored in `kv` (`None`: it does not
/// exist). A container's ETag includes its children's generation unless
/// `without_children` (a container's description).
pub fn current_etag(kv: &dyn KvRead, path: &LdpPath, iri: &str, without_children: bool) -> Result<Option<(String, InteractionModel)>, LdpError> {
    let Some(entry) = index::get_or_root(kv, path)? else { return Ok(None) };
    let rev = current_rev(kv, iri)?.unwrap_or_else(|| "0".into());
    let generation = (entry.model.is_container() && !without_children).then_some(entry.generation);
    Ok(Some((crate::etag(&rev, generation), entry.model)))
}

/// Whether a document with this id exists or existed: the URI of a deleted
/// resource is not reused (LDP §5.2.3.7), and its document, deleted or
/// not, keeps it.
pub fn doc_known(kv: &dyn KvRead, id: &str) -> Result<bool, LdpError> {
    Ok(kv.get(DOCS, id.as_bytes())?.is_some())
}

/// Replaces the resource's graph with `triples` and its model's types.
pub fn write_graph(txn: &mut StoreTransaction<'_>, iri: &str, model: InteractionModel, triples: &[Triple]) -> Result<(), LdpError> {
    let g = txn.encode(NamedNodeRef::new_unchecked(iri).into())?;
    txn.drop_graph(g)?;
    let rdf_type = NamedNode::new_unchecked(vocab::RDF_TYPE);
    let types: Vec<Triple> = model.type_iris().iter().map(|t| Triple::new(NamedNode::new_unchecked(iri), rdf_type.clone(), NamedNode::new_unchecked(*t))).collect();
    // By reference: a clone of each triple was three string copies.
    for t in triples.iter().chain(&types) {
        let s = txn.encode(t.subject.as_ref().into())?;
        let p = txn.encode(t.predicate.as_ref().into())?;
        let o = txn.encode(t.object.as_ref())?;
        txn.insert(&[s, p, o, g])?;
    }
    txn.create_graph(g)?;
    Ok(())
}

/// A child's name from a (decoded) slug (RFC 5023 §9.7): letters, digits
/// and `-._~` kept, other characters as `-`, never starting with `_` or
/// `.`, at most 200 characters.
pub fn slug_name(slug: &str) -> Option<String> {
    let name: String = slug.trim().chars().map(|c| if c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_' | '~') { c } else { '-' }).collect();
    let name = name.trim_start_matches(['_', '.']).chars().take(200).collect::<String>();
    (!name.is_empty()).then_some(name)
}

/// The deletions (`_deleted` documents at their current revisions) that
/// remove the resource at `path` and every descendant, children before
/// their parents; `LdpError::Constraint` past `MAX_DELETE_RESOURCES`.
pub fn deletions(kv: &dyn KvRead, path: &LdpPath, root: &str) -> Result<Vec<Map<String, Value>>, LdpError> {
    let mut doomed = vec![path.clone()];
    let mut i = 0;
    while i < doomed.len() {
        let parent = doomed[i].clone();
        index::for_each_child(kv, &parent, |c| {
            doomed.push(c);
            Ok(doomed.len() <= MAX_DELETE_RESOURCES)
        })?;
        if doomed.len() > MAX_DELETE_RESOURCES {
            return Err(LdpError::Constraint(format!("{} has more than {MAX_DELETE_RESOURCES} descendants; delete them first", path.iri(root))));
        }
        i += 1;
    }
    let mut docs = Vec::with_capacity(doomed.len());
    for p in doomed.iter().rev() {
        let id = p.iri(root);
        if let Some(rev) = current_rev(kv, &id)? {
            docs.push(Map::from_iter([("_id".to_owned(), Value::String(id)), ("_rev".to_owned(), Value::String(rev)), ("_deleted".to_owned(), Value::Bool(true))]));
        }
    }
    Ok(docs)
}
