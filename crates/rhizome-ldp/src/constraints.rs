//! What a client may not write (LDP §5.2.4.1, §4.2.4.3): the triples the
//! server manages. `ldp:contains` is derived from the children index and
//! a resource's interaction model is fixed at creation; a body that states
//! either otherwise is refused (409 with a `constrainedBy` link). The
//! model's own `rdf:type` triples are accepted and dropped (the server
//! writes them back).

use crate::vocab::*;
use crate::{InteractionModel, LdpError};
use oxrdf::{NamedOrBlankNode, Term, Triple};

/// The triples of a body a client may store, or why not. `is_child`
/// tells the resource's current children: a body that states exactly
/// those (a representation GET gave, PUT back) is accepted, and the
/// triples dropped.
pub fn client_triples(iri: &str, model: InteractionModel, triples: Vec<Triple>, is_child: &dyn Fn(&str) -> bool) -> Result<Vec<Triple>, LdpError> {
    let mut kept = Vec::with_capacity(triples.len());
    for t in triples {
        let about_self = matches!(&t.subject, NamedOrBlankNode::NamedNode(n) if n.as_str() == iri);
        if t.predicate.as_str() == CONTAINS && about_self && matches!(&t.object, Term::NamedNode(c) if is_child(c.as_str())) {
            continue;
        }
        if t.predicate.as_str() == CONTAINS {
            return Err(LdpError::Constraint(format!(
                "ldp:contains is managed by the server (it lists a container's children); the body states {t}"
            )));
        }
        if about_self && t.predicate.as_str() == RDF_TYPE {
            if let Term::NamedNode(ty) = &t.object {
                if !model.accepts_type(ty.as_str()) {
                    return Err(LdpError::Constraint(format!(
                        "{iri} is an {} (its interaction model is fixed when it is created); the body says it is a {ty}",
                        model.iri()
                    )));
                }
                if ty.as_str().starts_with(LDP) {
                    continue;
                }
            }
        }
        kept.push(t);
    }
    Ok(kept)
}

/// The membership settings among triples (to tell whether a write changes
/// them: only database admins may).
pub fn membership_settings(iri: &str, triples: &[Triple]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = triples
        .iter()
        .filter(|t| matches!(&t.subject, NamedOrBlankNode::NamedNode(n) if n.as_str() == iri) && MEMBERSHIP_PREDICATES.contains(&t.predicate.as_str()))
        .map(|t| (t.predicate.as_str().to_owned(), t.object.to_string()))
        .collect();
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxrdf::NamedNode;

    fn t(s: &str, p: &str, o: &str) -> Triple {
        Triple::new(NamedNode::new(s).unwrap(), NamedNode::new(p).unwrap(), NamedNode::new(o).unwrap())
    }

    #[test]
    fn server_managed_triples_are_refused_and_own_types_dropped() {
        let r = "http://h/db/_ldp/c";
        let err = client_triples(r, InteractionModel::BasicContainer, vec![t(r, CONTAINS, "http://h/db/_ldp/c/x")], &|_| false).unwrap_err();
        assert!(matches!(err, LdpError::Constraint(_)));
        assert!(client_triples(r, InteractionModel::BasicContainer, vec![t(r, RDF_TYPE, DIRECT_CONTAINER)], &|_| false).is_err());
        let existing = |c: &str| c == "http://h/db/_ldp/c/x";
        let kept = client_triples(r, InteractionModel::BasicContainer, vec![t(r, RDF_TYPE, BASIC_CONTAINER), t(r, RDF_TYPE, "http://e/T"), t(r, CONTAINS, "http://h/db/_ldp/c/x")], &existing).unwrap();
        assert_eq!(kept, vec![t(r, RDF_TYPE, "http://e/T")]);
    }
}
