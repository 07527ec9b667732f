//! Writes to `_users`: the cleartext `password` of a user document is
//! replaced by its PBKDF2 hash before the document is stored, and only
//! admins may set roles
//! (https://docs.couchdb.org/en/stable/intro/security.html#users-documents).

use super::password::PasswordHash;
use super::UserCtx;
use crate::error::HttpError;
use serde_json::{Map, Value};

pub const USER_PREFIX: &str = "org.couchdb.user:";

/// The members of a user document that make up its password's hash.
const HASH_FIELDS: &[&str] = &["password_scheme", "pbkdf2_prf", "derived_key", "salt", "iterations"];

/// Checks and rewrites one document written to `_users`. `current` is the
/// stored winner, if any.
pub fn prepare(ctx: &UserCtx, doc: &mut Map<String, Value>, current: Option<&Map<String, Value>>, iterations: u32) -> Result<(), HttpError> {
    let id = doc.get("_id").and_then(Value::as_str).unwrap_or_default().to_owned();
    if id.starts_with("_design/") {
        return Ok(());
    }
    let Some(name) = id.strip_prefix(USER_PREFIX) else {
        return Err(HttpError::forbidden("doc.type must be user and the id org.couchdb.user:NAME"));
    };
    if doc.get("_deleted").and_then(Value::as_bool) == Some(true) {
        return Ok(());
    }
    if doc.get("name").and_then(Value::as_str) != Some(name) {
        return Err(HttpError::forbidden("doc.name must match the id org.couchdb.user:NAME"));
    }
    if doc.get("type").and_then(Value::as_str) != Some("user") {
        return Err(HttpError::forbidden("doc.type must be user"));
    }
    match doc.get("roles") {
        Some(Value::Array(r)) if r.iter().all(Value::is_string) => {}
        None => {
            doc.insert("roles".into(), Value::Array(Vec::new()));
        }
        Some(_) => return Err(HttpError::forbidden("doc.roles must be an array of strings")),
    }
    if !ctx.is_server_admin() {
        let old = current.and_then(|c| c.get("roles")).cloned().unwrap_or(Value::Array(Vec::new()));
        if doc.get("roles") != Some(&old) {
            return Err(HttpError::forbidden("Only _admin may set roles"));
        }
    }
    match doc.shift_remove("password") {
        Some(Value::String(p)) => {
            let hash = PasswordHash::new(&p, iterations);
            // A SHA-1 hash's `pbkdf2_prf` is absent; a new hash sets its own.
            doc.shift_remove("pbkdf2_prf");
            if let Value::Object(fields) = hash.fields() {
                doc.extend(fields);
            }
        }
        Some(_) => return Err(HttpError::forbidden("doc.password must be a string")),
        None => {
            // A user's own hash is the server's to make, from `password`:
            // one written directly could have any iteration count (one
            // PBKDF2 round instead of the server's 600,000), which makes
            // the password cheap to guess offline from a leaked copy. Only
            // server admins may write hashes (moving users from another
            // server), and an admin's weak hash is upgraded at the user's
            // next login.
            if !ctx.is_server_admin() {
                if let Some(k) = HASH_FIELDS.iter().find(|k| doc.get(**k).is_some_and(|v| Some(v) != current.and_then(|c| c.get(**k)))) {
                    return Err(HttpError::forbidden(format!("{k} is part of the password's hash, which the server makes: set `password` to change a password")));
                }
            }
            // An update without a password keeps the stored hash.
            if let Some(current) = current {
                for k in HASH_FIELDS {
                    if let (Some(v), false) = (current.get(*k), doc.contains_key(*k)) {
                        doc.insert((*k).into(), v.clone());
                    }
                }
            }
        }
    }
    Ok(())
}
