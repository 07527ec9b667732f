//! SPARQL's text search on the server: the property function's calls in a
//! query (`rhizome_sparql::text_search`) answered from the database's
//! literal index (`rhizome_search::rdf_text`), brought up to date first,
//! before the query is planned.

use crate::error::HttpError;
use crate::state::DbHandle;
use oxrdf::{BlankNode, Literal, NamedNode, Term};
use rhizome_sparql::text_search::{TextAnswers, TextCall, TextHit};

/// The hits of each call (none asked: nothing read).
pub fn answer(db: &DbHandle, calls: &[TextCall]) -> Result<TextAnswers, HttpError> {
    let mut out = TextAnswers::new();
    if calls.is_empty() {
        return Ok(out);
    }
    let files = rhizome_search::rdf_text::refresh(&db.db, &db.name)?;
    for call in calls {
        let hits = rhizome_search::rdf_text::search(&files, &call.query, call.predicate.as_deref(), call.limit)?;
        let hits = hits
            .into_iter()
            .map(|h| {
                let subject = match h.subject.strip_prefix("_:") {
                    Some(label) => Term::BlankNode(BlankNode::new_unchecked(label)),
                    None => Term::NamedNode(NamedNode::new_unchecked(h.subject)),
                };
                let literal = if h.language.is_empty() {
                    Literal::new_typed_literal(h.text, NamedNode::new_unchecked(h.datatype))
                } else {
                    Literal::new_language_tagged_literal_unchecked(h.text, h.language)
                };
                TextHit { subject, literal, score: h.score }
            })
            .collect();
        out.insert(call.clone(), hits);
    }
    Ok(out)
}
