//! The checks CouchDB makes while it reads a document's JSON, before any
//! write: `couch_doc:from_json_obj` (special members, `_rev`, `_revisions`,
//! `_deleted`, inline attachment data) and `chttpd_db`'s `validate_revs`
//! (`new_edits=false` needs a revision) and `validate_attachment_names`.
//! CouchDB throws on the first failure, so a document that fails them fails
//! its whole request, a `_bulk_docs` of many documents included: a client's
//! test of these errors expects the request's error, not a per-document one.

use crate::{DocError, Result};
use base64::Engine;
use serde_json::{Map, Value};

/// Members starting with `_` that CouchDB reads (the others are refused).
const SPECIAL_MEMBERS: &[&str] = &[
    "_id",
    "_rev",
    "_attachments",
    "_revisions",
    "_deleted",
    "_revs_info",
    "_local_seq",
    "_conflicts",
    "_deleted_conflicts",
    "_replication_state",
    "_replication_state_time",
    "_replication_state_reason",
    "_replication_id",
    "_replication_stats",
];

/// Whether CouchDB reads `name` (a member starting with `_`) in a document.
pub(crate) fn is_special_member(name: &str) -> bool {
    SPECIAL_MEMBERS.contains(&name)
}

fn bad_member(name: &str) -> DocError {
    DocError::Validation(format!("Bad special document member: {name}"))
}

/// Checks `doc` as CouchDB reads it for a write with `new_edits`; the error
/// is the one CouchDB answers the whole request with (400 `doc_validation`
/// or `bad_request`, with CouchDB's reason).
pub fn check_document_json(doc: &Map<String, Value>, new_edits: bool) -> Result<()> {
    for (name, value) in doc {
        if !name.starts_with('_') {
            continue;
        }
        match name.as_str() {
            "_id" => check_id(value)?,
            "_rev" if !doc.contains_key("_revisions") => {
                if !value.as_str().is_some_and(valid_rev) {
                    return Err(DocError::BadRequest("Invalid rev format".into()));
                }
            }
            "_revisions" => check_revisions(value)?,
            "_deleted" if !value.is_boolean() => return Err(bad_member(name)),
            "_attachments" => {
                let Value::Object(atts) = value else { return Err(bad_member(name)) };
                for (att_name, att) in atts {
                    // CouchDB reads only the members that are objects.
                    let Value::Object(att) = att else { continue };
                    check_attachment(att_name, att)?;
                }
            }
            _ if !is_special_member(name) => return Err(bad_member(name)),
            _ => {}
        }
    }
    if !new_edits && !doc.contains_key("_rev") && !doc.get("_revisions").is_some_and(Value::is_object) {
        return Err(DocError::BadRequest("When `new_edits: false`, the document needs `_rev` or `_revisions` specified".into()));
    }
    Ok(())
}

fn illegal_docid(reason: &str) -> DocError {
    DocError::Coded { status: 400, error: "illegal_docid", reason: reason.into() }
}

/// `couch_doc:validate_docid` (400 `illegal_docid`).
fn check_id(id: &Value) -> Result<()> {
    let Value::String(id) = id else { return Err(illegal_docid("Document id must be a string")) };
    match id.as_str() {
        "" => Err(illegal_docid("Document id must not be empty")),
        "_design/" => Err(illegal_docid("Illegal document id `_design/`")),
        "_local/" => Err(illegal_docid("Illegal document id `_local/`")),
        _ if id.starts_with('_') && !id.starts_with("_design/") && !id.starts_with("_local/") => {
            Err(illegal_docid("Only reserved document ids may start with underscore."))
        }
        _ => Ok(()),
    }
}

/// `couch_doc:parse_rev`: `N-ID`, N an integer; an ID of 32 characters
/// after a non-zero N must be hexadecimal.
fn valid_rev(rev: &str) -> bool {
    let Some((pos, id)) = rev.split_once('-') else { return false };
    let Ok(pos) = pos.parse::<i64>() else { return false };
    pos == 0 || id.len() != 32 || id.bytes().all(|b| b.is_ascii_hexdigit())
}

fn check_revisions(value: &Value) -> Result<()> {
    let Value::Object(revisions) = value else { return Err(bad_member("_revisions")) };
    let start = revisions.get("start").and_then(Value::as_i64);
    let Some(start) = start else {
        return Err(DocError::Validation("_revisions.start isn't an integer.".into()));
    };
    let Some(ids) = revisions.get("ids").and_then(Value::as_array) else {
        return Err(DocError::Validation("_revisions.ids isn't a array.".into()));
    };
    for id in ids {
        let Some(id) = id.as_str() else { return Err(DocError::Validation("RevId isn't a string".into())) };
        if start != 0 && id.len() == 32 && !id.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(DocError::Validation("RevId isn't a valid hexadecimal".into()));
        }
    }
    Ok(())
}

/// `couch_att:from_json` (a stub, data that follows, or inline data that
/// must be base64) and `validate_attachment_name`.
fn check_attachment(name: &str, att: &Map<String, Value>) -> Result<()> {
    let flag = |member: &str| att.get(member).is_some_and(|v| v == &Value::Bool(true));
    if !(flag("stub") || flag("follows")) {
        let valid = att.get("data").and_then(Value::as_str).is_some_and(|data| base64::engine::general_purpose::STANDARD.decode(data).is_ok());
        if !valid {
            return Err(DocError::BadRequest(format!("Invalid attachment data for {name}")));
        }
    }
    if name.starts_with('_') {
        return Err(DocError::BadRequest(format!("Attachment name '{name}' starts with prohibited character '_'")));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(doc: Value, new_edits: bool) -> std::result::Result<(), (String, String)> {
        check_document_json(doc.as_object().unwrap(), new_edits).map_err(|e| {
            let kind = match e {
                DocError::Validation(_) => "doc_validation",
                DocError::BadRequest(_) => "bad_request",
                DocError::Coded { error, .. } => error,
                _ => "other",
            };
            (kind.to_owned(), e.to_string())
        })
    }

    fn refused(kind: &str, reason: &str) -> std::result::Result<(), (String, String)> {
        Err((kind.to_owned(), reason.to_owned()))
    }

    #[test]
    fn unknown_special_members_are_refused_with_couchdbs_reason() {
        assert_eq!(check(json!({"_zing": 4}), true), refused("doc_validation", "Bad special document member: _zing"));
        assert_eq!(check(json!({"zane": 1, "_fan": "x"}), true), refused("doc_validation", "Bad special document member: _fan"));
        assert_eq!(check(json!({"_deleted": "yes"}), true), refused("doc_validation", "Bad special document member: _deleted"));
        assert_eq!(check(json!({"_attachments": []}), true), refused("doc_validation", "Bad special document member: _attachments"));
        assert_eq!(check(json!({"_replication_state": "triggered", "_conflicts": [], "_revs_info": []}), true), Ok(()));
    }

    #[test]
    fn ids_are_checked_as_couchdb_validates_them() {
        assert_eq!(check(json!({"_id": 123}), true), refused("illegal_docid", "Document id must be a string"));
        assert_eq!(check(json!({"_id": null}), true), refused("illegal_docid", "Document id must be a string"));
        assert_eq!(check(json!({"_id": ""}), true), refused("illegal_docid", "Document id must not be empty"));
        assert_eq!(check(json!({"_id": "_design/"}), true), refused("illegal_docid", "Illegal document id `_design/`"));
        assert_eq!(check(json!({"_id": "_foo"}), true), refused("illegal_docid", "Only reserved document ids may start with underscore."));
        assert_eq!(check(json!({"_id": "_design/a"}), true), Ok(()));
        assert_eq!(check(json!({"_id": "a_b"}), true), Ok(()));
    }

    #[test]
    fn new_edits_false_needs_a_revision() {
        let reason = "When `new_edits: false`, the document needs `_rev` or `_revisions` specified";
        assert_eq!(check(json!({"_id": "a"}), false), refused("bad_request", reason));
        assert_eq!(check(json!({"_id": "a", "_rev": "1-abc"}), false), Ok(()));
        assert_eq!(check(json!({"_id": "a", "_revisions": {"start": 1, "ids": ["abc"]}}), false), Ok(()));
        assert_eq!(check(json!({"_id": "a"}), true), Ok(()));
    }

    #[test]
    fn revisions_are_checked_as_couchdb_parses_them() {
        assert_eq!(check(json!({"_rev": "abc"}), true), refused("bad_request", "Invalid rev format"));
        assert_eq!(check(json!({"_rev": 3}), true), refused("bad_request", "Invalid rev format"));
        assert_eq!(check(json!({"_rev": "1-zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz"}), true), refused("bad_request", "Invalid rev format"));
        assert_eq!(check(json!({"_revisions": {"start": "1", "ids": []}}), true), refused("doc_validation", "_revisions.start isn't an integer."));
        assert_eq!(check(json!({"_revisions": {"start": 1, "ids": "a"}}), true), refused("doc_validation", "_revisions.ids isn't a array."));
        assert_eq!(check(json!({"_revisions": {"start": 1, "ids": [1]}}), true), refused("doc_validation", "RevId isn't a string"));
    }

    #[test]
    fn inline_attachment_data_must_be_base64() {
        assert_eq!(check(json!({"_attachments": {"a.txt": {"data": "not base64!"}}}), true), refused("bad_request", "Invalid attachment data for a.txt"));
        assert_eq!(check(json!({"_attachments": {"a.txt": {"content_type": "text/plain"}}}), true), refused("bad_request", "Invalid attachment data for a.txt"));
        assert_eq!(check(json!({"_attachments": {"a.txt": {"data": "Zm9v"}}}), true), Ok(()));
        assert_eq!(check(json!({"_attachments": {"a.txt": {"stub": true, "digest": "md5-x"}}}), true), Ok(()));
        assert_eq!(check(json!({"_attachments": {"a.txt": {"follows": true}}}), true), Ok(()));
        assert_eq!(check(json!({"_attachments": {"_a": {"data": "Zm9v"}}}), true), refused("bad_request", "Attachment name '_a' starts with prohibited character '_'"));
    }
}
