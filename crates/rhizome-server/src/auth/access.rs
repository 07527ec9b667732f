//! The one place that decides whether a request may run: every route names
//! the access it needs and the router checks it here before any handler
//! runs (CouchDB 3 semantics,
//! https://docs.couchdb.org/en/stable/api/database/security.html).
//!
//! - server admins (role `_admin`) may do everything;
//! - a database's `_security.admins` (names or roles) may also write its
//!   `_security`, `_revs_limit`, design documents and compact it;
//! - its `_security.members` read and write documents;
//! - a database whose `_security` was never set is for server admins only
//!   (`rhizome_docs::Database::security` answers CouchDB 3's `admin_only`
//!   default, members and admins the role `_admin`); one whose `members`
//!   names nobody (no names, no roles, or no `members` at all) is public,
//!   anonymous users included, as in CouchDB 3;
//! - refusals are CouchDB's: a server admin's route is a 401 "You are not a
//!   server admin." for everyone else; a database's, a 401 without
//!   credentials and a 403 with them;
//! - in `_users`, a user may read and update their own
//!   `org.couchdb.user:NAME` document.

use super::UserCtx;
use crate::error::HttpError;
use crate::state::DbHandle;
use serde_json::Value;

/// What a route needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Access {
    /// Anyone, even without credentials (`/`, `/_up`, `/_session`, `/_uuids`).
    Public,
    ServerAdmin,
    /// A member (or admin) of the route's database.
    Member,
    /// An admin of the route's database.
    DbAdmin,
    /// The owner of this `_users` document, or else a member.
    UserDoc(String),
}

fn listed(ctx: &UserCtx, section: Option<&Value>) -> bool {
    let Some(section) = section else { return false };
    let strings = |k: &str| section.get(k).and_then(Value::as_array).map(|a| a.iter().filter_map(Value::as_str).collect::<Vec<_>>()).unwrap_or_default();
    let names = strings("names");
    let roles = strings("roles");
    ctx.name.as_deref().is_some_and(|n| names.contains(&n)) || ctx.roles.iter().any(|r| roles.contains(&r.as_str()))
}

fn names_anyone(section: Option<&Value>) -> bool {
    let Some(section) = section else { return false };
    ["names", "roles"].iter().any(|k| section.get(*k).and_then(Value::as_array).is_some_and(|a| !a.is_empty()))
}

pub fn is_db_admin(ctx: &UserCtx, security: &Value) -> bool {
    ctx.is_server_admin() || listed(ctx, security.get("admins"))
}

/// Who `ctx` writes to `db` as: the rights `rhizome_docs::rights` checks
/// wherever the write lands, whatever its door.
pub fn writer(ctx: &UserCtx, db: &DbHandle) -> Result<rhizome_docs::Writer, HttpError> {
    if ctx.is_server_admin() {
        return Ok(rhizome_docs::Writer::Admin);
    }
    Ok(rhizome_docs::Writer::admin_if(is_db_admin(ctx, &db.db.security()?)))
}

pub fn is_member(ctx: &UserCtx, security: &Value) -> bool {
    is_db_admin(ctx, security) || !names_anyone(security.get("members")) || listed(ctx, security.get("members"))
}

/// The guard. `db` is the route's database when it has one and it exists.
pub fn check(ctx: &UserCtx, access: &Access, db: Option<&DbHandle>) -> Result<(), HttpError> {
    if *access == Access::Public || ctx.is_server_admin() {
        return Ok(());
    }
    if *access == Access::ServerAdmin {
        // couch_httpd:verify_is_server_admin: unauthorized, signed in or not.
        return Err(HttpError::unauthorized("You are not a server admin."));
    }
    let Some(db) = db else {
        return Err(if ctx.name.is_none() { HttpError::unauthorized("You are not authorized to access this db.") } else { HttpError::no_db() });
    };
    if let Access::UserDoc(id) = access {
        if ctx.name.as_deref().is_some_and(|n| id.strip_prefix("org.couchdb.user:") == Some(n)) {
            return Ok(());
        }
    }
    let security = db.db.security()?;
    let allowed = match access {
        Access::DbAdmin => is_db_admin(ctx, &security),
        _ => is_member(ctx, &security),
    };
    match (allowed, *access == Access::DbAdmin, ctx.name.is_none()) {
        (true, ..) => Ok(()),
        (false, true, true) => Err(HttpError::unauthorized("You are not a db or server admin.")),
        (false, true, false) => Err(HttpError::forbidden("You are not a db or server admin.")),
        (false, false, true) => Err(HttpError::unauthorized("You are not authorized to access this db.")),
        (false, false, false) => Err(HttpError::forbidden("You are not allowed to access this db.")),
    }
}
