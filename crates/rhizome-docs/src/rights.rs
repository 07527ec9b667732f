//! Who may write what: one rule per kind of document, checked where every
//! write lands (`Database::write_one`, the graph-write path, `put_local`),
//! whatever door it came through: CouchDB's API, SPARQL Update, the Graph
//! Store Protocol, LDP, replication, Python. The doors only say who is
//! writing ([`Writer`]); the rule is here, so a new door cannot forget it.
//!
//! | kind | who may write it |
//! |---|---|
//! | design documents (`_design/*`) | database admins, as JSON documents only: they are the database's code and have no graph, so no graph write reaches one, whoever makes it |
//! | `_local/rhizome-context` | database admins: it decides how every JSON document of the database is read as RDF and how graph writes become JSON members |
//! | other `_local` documents | members (replication checkpoints) |
//! | `_security`, `_revs_limit` | database admins (the router's guard; they are no documents and no graph write names them) |
//! | graphs named `<base>/<db>/_...` that are no document's (`_local/...`, `_security`, ...) and graphs of other databases (`<base>/<other>/...`) | nobody: a graph write into one is refused |
//! | a system database (`_users`, `_replicator`: `crate::NoGraphs`) | no graph writes at all |
//! | LDP resources | their own rules, `rhizome-ldp` (`GraphProjector::check_change`): `ldp:contains` is nobody's, interaction models are fixed, membership settings are the admins', a parent must be a container |
//! | any other document | members |
//!
//! Refusals are CouchDB's 403 `forbidden` (a right the writer lacks) or 409
//! `conflict` (a rule nobody may break), per document for document writes
//! (as CouchDB's `_bulk_docs` answers), for the whole write for graph
//! writes (nothing of it is committed).

use crate::jsonld::DEFAULT_CONTEXT_DOC;
use crate::DocError;

/// Who makes a write, as far as the database's rules care: what the
/// database's `_security` makes the user (server admins are admins of every
/// database). In-process callers that own the data folder (Python, the
/// command line's tools) write as admins.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Writer {
    /// A member: documents and their graphs, nothing that configures the
    /// database. The default: a writer nobody named has no more rights.
    #[default]
    Member,
    /// A database admin (or a server admin).
    Admin,
    /// The bulk loader adopting loaded graphs as documents (`rhizome load
    /// --db`, run by the data folder's owner while no server runs): loaded
    /// data is taken as it is, no rule is checked. Never a request's writer.
    Loader,
}

impl Writer {
    /// The writer of a user who is (`true`) or is not a database admin.
    pub fn admin_if(admin: bool) -> Writer {
        if admin {
            Writer::Admin
        } else {
            Writer::Member
        }
    }

    /// Whether this writer has a database admin's rights.
    pub fn is_admin(self) -> bool {
        matches!(self, Writer::Admin | Writer::Loader)
    }
}

/// CouchDB's answer to a write that needs a database admin.
pub const NOT_ADMIN: &str = "You are not a db or server admin.";

impl DocError {
    /// 403 `forbidden`: the writer lacks the right.
    pub fn forbidden(reason: impl Into<String>) -> DocError {
        DocError::Coded { status: 403, error: "forbidden", reason: reason.into() }
    }

    /// 409 `conflict`: a rule nobody may break (a server-managed triple, a
    /// fixed interaction model, a missing parent).
    pub fn constraint(reason: impl Into<String>) -> DocError {
        DocError::Coded { status: 409, error: "conflict", reason: reason.into() }
    }
}

/// The rule for a document write (a new revision, a deletion) of `id`.
pub(crate) fn check_document(id: &str, writer: Writer) -> Result<(), DocError> {
    if id.starts_with("_design/") && !writer.is_admin() {
        return Err(DocError::forbidden(NOT_ADMIN));
    }
    Ok(())
}

/// The rule for a write of the `_local` document `id`.
pub(crate) fn check_local(id: &str, writer: Writer) -> Result<(), DocError> {
    if id == DEFAULT_CONTEXT_DOC && !writer.is_admin() {
        return Err(DocError::forbidden(format!(
            "{NOT_ADMIN} {DEFAULT_CONTEXT_DOC} is the database's default JSON-LD context, which decides how its documents are read as RDF: only its admins set it"
        )));
    }
    Ok(())
}

/// Why a graph write may not leave graph `iri` (whose document id would be
/// `id`) with triples in it, if it may not: `foreign` is the projector's
/// word on graphs of other databases (`GraphProjector::foreign_graph`).
pub(crate) fn graph_refusal(iri: &str, id: &str, foreign: Option<String>) -> Option<DocError> {
    if let Some(reason) = foreign {
        return Some(DocError::forbidden(reason));
    }
    if id.starts_with("_design/") {
        return Some(DocError::forbidden(format!(
            "{iri} is the graph of design document {id}: design documents are the database's code and have no graph; write them as JSON"
        )));
    }
    if crate::validate_doc_id(id).is_err() {
        return Some(DocError::forbidden(format!("{iri} is no document's graph ({id:?} is a reserved name, not a document id): graph writes reach only documents")));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn design_documents_and_the_default_context_are_the_admins() {
        assert!(check_document("_design/app", Writer::Member).is_err());
        assert!(check_document("_design/app", Writer::Admin).is_ok());
        assert!(check_document("doc", Writer::Member).is_ok());
        assert!(check_local(DEFAULT_CONTEXT_DOC, Writer::Member).is_err());
        assert!(check_local(DEFAULT_CONTEXT_DOC, Writer::Admin).is_ok());
        assert!(check_local("_local/checkpoint", Writer::Member).is_ok());
        let g = "http://h/db/";
        assert!(graph_refusal(&format!("{g}_design/app"), "_design/app", None).is_some());
        assert!(graph_refusal(&format!("{g}_local/x"), "_local/x", None).is_some());
        assert!(graph_refusal(&format!("{g}_security"), "_security", None).is_some());
        assert!(graph_refusal(&format!("{g}doc"), "doc", None).is_none());
        assert!(graph_refusal("http://h/other/doc", "http://h/other/doc", Some("other".into())).is_some());
    }
}
