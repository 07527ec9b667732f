//! Containers' membership settings (LDP §5.4, §5.5) and reading a
//! resource's own triples from the store.

use crate::vocab::*;
use crate::LdpError;
use oxrdf::{NamedNodeRef, Term};
use rhizome_kv::KvRead;
use rhizome_rdf::term::Dictionary;
use rhizome_rdf::{QuadPattern, QuadScan, TermId};

/// The direction of a container's membership triples.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MemberRelation {
    /// `<membershipResource> p <member>`.
    HasMember(String),
    /// `<member> p <membershipResource>`.
    IsMemberOf(String),
}

/// A direct or indirect container's membership settings, from its graph.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Membership {
    pub resource: String,
    pub relation: MemberRelation,
    /// `ldp:insertedContentRelation`; `None` is `ldp:MemberSubject` (the
    /// member is the child itself).
    pub inserted_content: Option<String>,
}

/// The objects of `<subject> <predicate> ?o` in graph `graph`.
pub fn objects(kv: &dyn KvRead, graph: &str, subject: &str, predicate: &str) -> Result<Vec<Term>, LdpError> {
    let id = |iri: &str| Dictionary::lookup(kv, NamedNodeRef::new_unchecked(iri).into());
    let (Some(g), Some(s), Some(p)) = (id(graph)?, id(subject)?, id(predicate)?) else {
        return Ok(Vec::new());
    };
    objects_of_ids(kv, g, s, p)
}

/// [`objects`] for terms already looked up.
pub(crate) fn objects_of_ids(kv: &dyn KvRead, g: TermId, s: TermId, p: TermId) -> Result<Vec<Term>, LdpError> {
    let mut out = Vec::new();
    for q in QuadScan::new(kv, QuadPattern { s: Some(s), p: Some(p), o: None, g: Some(g) }) {
        let q = q?;
        if let Some(t) = Dictionary::decode(kv, q[2])? {
            out.push(t);
        }
    }
    Ok(out)
}

fn first_iri(kv: &dyn KvRead, iri: &str, predicate: &str) -> Result<Option<String>, LdpError> {
    Ok(objects(kv, iri, iri, predicate)?.into_iter().find_map(|t| match t {
        Term::NamedNode(n) => Some(n.into_string()),
        _ => None,
    }))
}

impl Membership {
    /// The settings in the graph of the container at `iri`; `None` when it
    /// names no membership resource or no relation.
    pub fn read(kv: &dyn KvRead, iri: &str) -> Result<Option<Membership>, LdpError> {
        let Some(resource) = first_iri(kv, iri, MEMBERSHIP_RESOURCE)? else { return Ok(None) };
        let relation = match (first_iri(kv, iri, HAS_MEMBER_RELATION)?, first_iri(kv, iri, IS_MEMBER_OF_RELATION)?) {
            (Some(p), _) => MemberRelation::HasMember(p),
            (None, Some(p)) => MemberRelation::IsMemberOf(p),
            (None, None) => return Ok(None),
        };
        let inserted_content = first_iri(kv, iri, INSERTED_CONTENT_RELATION)?.filter(|r| r != MEMBER_SUBJECT);
        Ok(Some(Membership { resource, relation, inserted_content }))
    }

    /// The members a child contributes: the child itself, or for an
    /// indirect container the objects of its `insertedContentRelation`.
    pub fn members_of_child(&self, kv: &dyn KvRead, child_iri: &str) -> Result<Vec<Term>, LdpError> {
        match &self.inserted_content {
            None => Ok(vec![Term::NamedNode(oxrdf::NamedNode::new_unchecked(child_iri))]),
            Some(r) => objects(kv, child_iri, child_iri, r),
        }
    }
}

/// The `rdf:type`s of a resource in its own graph.
pub fn types(kv: &dyn KvRead, iri: &str) -> Result<Vec<String>, LdpError> {
    Ok(named_nodes(objects(kv, iri, iri, RDF_TYPE)?))
}

/// The IRIs among `terms` (a resource's types).
pub(crate) fn named_nodes(terms: Vec<Term>) -> Vec<String> {
    terms
        .into_iter()
        .filter_map(|t| match t {
            Term::NamedNode(n) => Some(n.into_string()),
            _ => None,
        })
        .collect()
}
