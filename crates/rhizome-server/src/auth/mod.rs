//! Who is asking: Basic auth and `AuthSession` cookies, checked against the
//! server admin and the `_users` database
//! (https://docs.couchdb.org/en/stable/api/server/authn.html).

pub mod access;
pub mod password;
pub mod users;

use crate::error::HttpError;
use crate::http::Request;
use crate::state::Server;
use base64::Engine;
use hmac::{Hmac, Mac};
use password::PasswordHash;
use rhizome_docs::ReadOptions;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

/// How long a session cookie lasts (CouchDB's default `timeout`).
pub const SESSION_SECONDS: u64 = 600;

/// The user of a request (CouchDB's `userCtx`).
#[derive(Clone, Debug, Default)]
pub struct UserCtx {
    pub name: Option<String>,
    pub roles: Vec<String>,
    /// `cookie` or `default` (Basic), for `GET /_session`.
    pub method: Option<&'static str>,
}

impl UserCtx {
    pub fn is_server_admin(&self) -> bool {
        self.roles.iter().any(|r| r == "_admin")
    }
    pub fn to_json(&self) -> Value {
        json!({ "name": self.name, "roles": self.roles })
    }
}

/// Checks a name and password; the roles of the user if they match.
pub fn check_password(server: &Server, name: &str, password: &str) -> Result<Option<Vec<String>>, HttpError> {
    if name == server.identity.admin_name {
        return Ok(verify_cached(server, name, password, &server.identity.admin_hash).then(|| vec!["_admin".to_owned()]));
    }
    let Some(user) = user_doc(server, name)? else { return Ok(None) };
    let Some(hash) = PasswordHash::from_json(&user) else { return Ok(None) };
    if !verify_cached(server, name, password, &hash) {
        return Ok(None);
    }
    Ok(Some(roles_of(&user)))
}

fn roles_of(user: &Value) -> Vec<String> {
    user.get("roles").and_then(Value::as_array).map(|r| r.iter().filter_map(Value::as_str).map(str::to_owned).collect()).unwrap_or_default()
}

fn user_doc(server: &Server, name: &str) -> Result<Option<Value>, HttpError> {
    let Some(users) = server.db("_users")? else { return Ok(None) };
    match users.db.get_doc(&format!("org.couchdb.user:{name}"), &ReadOptions::default()) {
        Ok(doc) => Ok(Some(Value::Object(doc))),
        Err(rhizome_docs::DocError::NotFound(_)) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

fn verify_cached(server: &Server, name: &str, password: &str, hash: &PasswordHash) -> bool {
    let mut h = Sha256::new();
    for part in [name, password, &hash.salt, &hash.derived_key] {
        h.update(part.as_bytes());
        h.update([0]);
    }
    let fingerprint: [u8; 32] = h.finalize().into();
    let mut cache = server.verified.lock().unwrap_or_else(|p| p.into_inner());
    if cache.contains(&fingerprint) {
        return true;
    }
    drop(cache);
    if !password::verify(password, hash) {
        return false;
    }
    cache = server.verified.lock().unwrap_or_else(|p| p.into_inner());
    if cache.len() > 10_000 {
        cache.clear();
    }
    cache.insert(fingerprint);
    true
}

/// The user of a request. Wrong Basic credentials are a 401 (CouchDB does
/// not fall back to anonymous); a bad or expired cookie is ignored.
pub fn authenticate(server: &Server, req: &Request) -> Result<UserCtx, HttpError> {
    if let Some(auth) = req.header("authorization") {
        if let Some(b64) = auth.strip_prefix("Basic ").or_else(|| auth.strip_prefix("basic ")) {
            let decoded = base64::engine::general_purpose::STANDARD.decode(b64.trim()).map_err(|_| HttpError::unauthorized("Invalid Basic authorization header"))?;
            let text = String::from_utf8(decoded).map_err(|_| HttpError::unauthorized("Invalid Basic authorization header"))?;
            let (name, pass) = text.split_once(':').ok_or_else(|| HttpError::unauthorized("Invalid Basic authorization header"))?;
            return match check_password(server, name, pass)? {
                Some(roles) => Ok(UserCtx { name: Some(name.to_owned()), roles, method: Some("default") }),
                None => Err(HttpError::unauthorized("Name or password is incorrect.")),
            };
        }
    }
    if let Some(name) = req.header("cookie").and_then(|c| session_cookie(c)).and_then(|v| verify_cookie(server, v)) {
        let roles = if name == server.identity.admin_name {
            vec!["_admin".to_owned()]
        } else {
            match user_doc(server, &name)? {
                Some(user) => roles_of(&user),
                None => return Ok(UserCtx::default()),
            }
        };
        return Ok(UserCtx { name: Some(name), roles, method: Some("cookie") });
    }
    Ok(UserCtx::default())
}

fn session_cookie(header: &str) -> Option<&str> {
    header.split(';').map(str::trim).find_map(|c| c.strip_prefix("AuthSession=")).filter(|v| !v.is_empty())
}

fn now_secs() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

fn sign(server: &Server, payload: &str) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(server.identity.secret.as_bytes()).expect("HMAC takes keys of any length");
    mac.update(payload.as_bytes());
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes())
}

/// A session token: `base64url(name:expiry_hex):hmac`, signed with the
/// server's secret (CouchDB signs `name:timestamp` with HMAC-SHA1 of its
/// secret and the user's salt; ours is the same idea with SHA-256).
pub fn make_cookie(server: &Server, name: &str) -> String {
    let payload = format!("{name}:{:x}", now_secs() + SESSION_SECONDS);
    let encoded = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(payload.as_bytes());
    format!("{encoded}.{}", sign(server, &payload))
}

fn verify_cookie(server: &Server, value: &str) -> Option<String> {
    let (encoded, mac) = value.split_once('.')?;
    let payload = String::from_utf8(base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(encoded).ok()?).ok()?;
    let expected = sign(server, &payload);
    if expected.len() != mac.len() || expected.bytes().zip(mac.bytes()).fold(0u8, |a, (x, y)| a | (x ^ y)) != 0 {
        return None;
    }
    let (name, expiry) = payload.rsplit_once(':')?;
    (u64::from_str_radix(expiry, 16).ok()? > now_secs()).then(|| name.to_owned())
}
