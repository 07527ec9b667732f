//! Who is asking: Basic auth and `AuthSession` cookies, checked against the
//! server admin and the `_users` database
//! (https://docs.couchdb.org/en/stable/api/server/authn.html), with failed
//! logins throttled (`throttle.rs`) and weak stored hashes upgraded at the
//! next successful login.

pub mod access;
pub mod password;
pub mod session;
pub mod throttle;
pub mod users;

use crate::error::HttpError;
use crate::http::Request;
use crate::state::Server;
use base64::Engine;
use hmac::{Hmac, Mac};
use password::PasswordHash;
use rhizome_docs::ReadOptions;
use serde_json::{json, Value};
use sha2::Sha256;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, MutexGuard};

pub use session::SESSION_SECONDS;

/// Password hashing, login throttling and session cookies (`rhizome serve
/// --help`).
#[derive(Clone, Debug)]
pub struct AuthSettings {
    /// PBKDF2-HMAC-SHA-256 iterations of new and upgraded hashes.
    pub pbkdf2_iterations: u32,
    /// Failed logins of one user from one address before attempts are delayed.
    pub login_attempts: u32,
    /// The first delay; each further failure doubles it (up to 15 minutes).
    pub login_delay_secs: u64,
    /// The `SameSite` attribute of `AuthSession` cookies.
    pub same_site: SameSite,
    /// How long a session cookie lasts; it is renewed once a tenth of
    /// that has passed (CouchDB's `[chttpd_auth] timeout`).
    pub session_timeout_secs: u64,
}

/// The `SameSite` attribute of `AuthSession` cookies (CouchDB's
/// `[couch_httpd_auth] same_site`, which CouchDB leaves unset).
///
/// Rhizome sends `Lax` unless told otherwise: a browser then sends the
/// session cookie with no request another site makes it send in the
/// background (a form's `POST`, `fetch`, an image), which is how a page a
/// signed-in admin visits would write documents or start a replication;
/// it still sends it when the user follows a link to the server from
/// elsewhere, which only reads (a `GET` changes nothing here). `Strict`
/// drops that too (a link from a mail opens the console signed out);
/// `None` (with `Secure`, as browsers require) is for a console served
/// from another site over HTTPS, with CORS.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SameSite {
    Strict,
    #[default]
    Lax,
    None,
}

impl SameSite {
    pub fn parse(text: &str) -> Option<SameSite> {
        match text.to_ascii_lowercase().as_str() {
            "strict" => Some(SameSite::Strict),
            "lax" => Some(SameSite::Lax),
            "none" => Some(SameSite::None),
            _ => None,
        }
    }

    /// The setting's value as CouchDB's `_config` shows it.
    pub fn name(self) -> &'static str {
        match self {
            SameSite::Strict => "strict",
            SameSite::Lax => "lax",
            SameSite::None => "none",
        }
    }

    /// The attributes to append to a `Set-Cookie` value.
    pub fn attributes(self) -> &'static str {
        match self {
            SameSite::Strict => "; SameSite=Strict",
            SameSite::Lax => "; SameSite=Lax",
            SameSite::None => "; SameSite=None; Secure",
        }
    }
}

pub const DEFAULT_LOGIN_ATTEMPTS: u32 = 5;
pub const DEFAULT_LOGIN_DELAY_SECS: u64 = 1;

impl Default for AuthSettings {
    fn default() -> AuthSettings {
        AuthSettings {
            pbkdf2_iterations: password::DEFAULT_ITERATIONS,
            login_attempts: DEFAULT_LOGIN_ATTEMPTS,
            login_delay_secs: DEFAULT_LOGIN_DELAY_SECS,
            session_timeout_secs: SESSION_SECONDS,
            same_site: SameSite::default(),
        }
    }
}

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
    /// CouchDB's `userCtx` as validation functions get it, for `db`.
    pub fn for_validation(&self, db: &str) -> Value {
        json!({ "db": db, "name": self.name, "roles": self.roles })
    }
}

/// Checks a name and password from `peer`; the roles of the user if they
/// match. Credentials verified already pass at once; others get a 401
/// without checking while failed attempts of this name from this source
/// make them wait (`throttle.rs`). A name with no account costs the same
/// verification as one with an account (against a hash made at start), so
/// the time of an answer does not tell which names exist.
pub fn check_password(server: &Server, name: &str, password: &str, peer: Option<IpAddr>) -> Result<Option<Vec<String>>, HttpError> {
    // The account's hash (a document read), and its document.
    let account = if name == server.identity.admin_name {
        Some((server.admin_hash(), None))
    } else {
        user_doc(server, name)?.and_then(|user| PasswordHash::from_json(&user).map(|hash| (hash, Some(user))))
    };
    // One HMAC per request, shared by the checks below.
    let key = credential_key(server, name, password);
    let remembered = account.as_ref().is_some_and(|(hash, _)| is_remembered(server, &key, hash));
    if !remembered {
        server.login_throttle.check(name, peer)?;
    }
    // A weak hash is upgraded only after a full verification: that one
    // runs on a blocking thread (`is_cheap` was false), as the upgrade's
    // PBKDF2 and write must.
    let roles = match account {
        None => {
            // No account: the same work as a wrong password.
            password::verify(password, &server.dummy_hash);
            None
        }
        Some((hash, None)) => match verify_cached(server, key, password, &hash) {
            Verified::Wrong => None,
            how => {
                if how == Verified::Now {
                    upgrade_admin(server, password, &hash);
                }
                Some(vec!["_admin".to_owned()])
            }
        },
        Some((hash, Some(user))) => match verify_cached(server, key, password, &hash) {
            Verified::Wrong => None,
            how => {
                let roles = roles_of(&user);
                if how == Verified::Now {
                    upgrade_user(server, name, password, &hash, user);
                }
                Some(roles)
            }
        },
    };
    match roles {
        Some(_) => server.login_throttle.succeeded(name, peer),
        None => server.login_throttle.failed(name, peer),
    }
    Ok(roles)
}

/// The roles of user `name` as now stored (a server admin's for the admin;
/// none for a name without an account).
pub(crate) fn roles_of_user(server: &Server, name: &str) -> Result<Vec<String>, HttpError> {
    if name == server.identity.admin_name {
        return Ok(vec!["_admin".to_owned()]);
    }
    Ok(user_doc(server, name)?.as_ref().map(roles_of).unwrap_or_default())
}

fn roles_of(user: &Value) -> Vec<String> {
    user.get("roles").and_then(Value::as_array).map(|r| r.iter().filter_map(Value::as_str).map(str::to_owned).collect()).unwrap_or_default()
}

fn user_doc(server: &Server, name: &str) -> Result<Option<Value>, HttpError> {
    let Some(users) = server.db("_users")? else { return Ok(None) };
    match users.db.get_doc(&format!("{}{name}", users::USER_PREFIX), &ReadOptions::default()) {
        Ok(doc) => Ok(Some(Value::Object(doc))),
        Err(rhizome_docs::DocError::NotFound(_)) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// The cache key of a name and password: an HMAC under the server's
/// secret, so that the cache holds nothing a fast offline guess could use.
fn credential_key(server: &Server, name: &str, password: &str) -> [u8; 32] {
    let mut mac = Hmac::<Sha256>::new_from_slice(server.identity.secret.as_bytes()).expect("HMAC takes keys of any length");
    mac.update(name.as_bytes());
    mac.update(&[0]);
    mac.update(password.as_bytes());
    mac.finalize().into_bytes().into()
}

/// Verifies against `hash`, remembering a success for this (name,
/// password, salt and derived key), as CouchDB's auth cache does: only the
/// first request with a password pays PBKDF2. A changed hash (new password,
/// upgrade) misses the cache. Requests with the same credentials that
/// arrive while they are being verified wait for that verification and
/// then find it remembered: 25 clients starting at once with one password
/// paid 25 PBKDF2s (about 0.1 s each here at 600,000 iterations; their
/// first answers took 1.2 s), now one.
fn verify_cached(server: &Server, key: [u8; 32], password: &str, hash: &PasswordHash) -> Verified {
    let remembered = || is_remembered(server, &key, hash);
    if remembered() {
        return Verified::Cached;
    }
    let turn = lock(&server.verifying).entry(key).or_default().clone();
    let verified = {
        let _mine = lock(&turn);
        if remembered() {
            Verified::Cached
        } else if password::verify(password, hash) {
            remember(server, key, hash);
            Verified::Now
        } else {
            Verified::Wrong
        }
    };
    // The last one out removes the entry. Its Arcs are cloned and dropped
    // only under the map's lock, so the count is exact.
    let mut verifying = lock(&server.verifying);
    drop(turn);
    if verifying.get(&key).is_some_and(|t| Arc::strong_count(t) == 1) {
        verifying.remove(&key);
    }
    verified
}

/// Whether these credentials (by their key) were verified against `hash`
/// already.
fn is_remembered(server: &Server, key: &[u8; 32], hash: &PasswordHash) -> bool {
    let cache = server.verified.lock().unwrap_or_else(|p| p.into_inner());
    cache.get(key).is_some_and(|(salt, derived)| *salt == hash.salt && *derived == hash.derived_key)
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Verified {
    /// Matched a verification remembered in memory.
    Cached,
    /// Matched now, by PBKDF2.
    Now,
    Wrong,
}

fn remember(server: &Server, key: [u8; 32], hash: &PasswordHash) {
    let mut cache = server.verified.lock().unwrap_or_else(|p| p.into_inner());
    if cache.len() > 10_000 {
        cache.clear();
    }
    cache.insert(key, (hash.salt.clone(), hash.derived_key.clone()));
}

/// Whether authenticating `req` is cheap: no Basic credentials, or ones
/// verified already (so it may run on the async threads; PBKDF2 may not).
pub fn is_cheap(server: &Server, req: &Request) -> bool {
    match basic_credentials(req) {
        Some(Ok((name, pass))) => server.verified.lock().unwrap_or_else(|p| p.into_inner()).contains_key(&credential_key(server, &name, &pass)),
        _ => true,
    }
}

fn upgrade_admin(server: &Server, password: &str, hash: &PasswordHash) {
    let iterations = server.auth.pbkdf2_iterations;
    if !hash.needs_upgrade(iterations) {
        return;
    }
    let new = PasswordHash::with_salt(password, &hash.salt, iterations);
    match server.set_admin_hash(new.clone()) {
        Ok(()) => remember(server, credential_key(server, &server.identity.admin_name, password), &new),
        Err(e) => eprintln!("rhizome: upgrading the admin's password hash: {e}"),
    }
}

/// Rewrites a user's document with a stronger hash of the same password
/// (same salt, so sessions survive). A concurrent write wins: the upgrade
/// is tried again at the next login.
fn upgrade_user(server: &Server, name: &str, password: &str, hash: &PasswordHash, user: Value) {
    let iterations = server.auth.pbkdf2_iterations;
    if !hash.needs_upgrade(iterations) {
        return;
    }
    let Value::Object(mut doc) = user else { return };
    let new = PasswordHash::with_salt(password, &hash.salt, iterations);
    if let Value::Object(fields) = new.fields() {
        doc.shift_remove("pbkdf2_prf");
        doc.extend(fields);
    }
    let result = server.db("_users").and_then(|users| {
        let users = users.ok_or_else(HttpError::no_db)?;
        let out = users.writes.write(&users.db, vec![doc], true, rhizome_docs::Writer::Admin)?;
        users.notify();
        Ok(out)
    });
    match result {
        Ok(out) if out.iter().all(|(_, o)| o.is_ok()) => {
            remember(server, credential_key(server, name, password), &new);
        }
        Ok(_) => {}
        Err(e) => eprintln!("rhizome: upgrading the password hash of {name}: {}", e.reason),
    }
}

fn basic_credentials(req: &Request) -> Option<Result<(String, String), HttpError>> {
    let auth = req.header("authorization")?;
    let b64 = auth.strip_prefix("Basic ").or_else(|| auth.strip_prefix("basic "))?;
    let invalid = || HttpError::unauthorized("Invalid Basic authorization header");
    let parsed = (|| {
        let decoded = base64::engine::general_purpose::STANDARD.decode(b64.trim()).map_err(|_| invalid())?;
        let text = String::from_utf8(decoded).map_err(|_| invalid())?;
        let (name, pass) = text.split_once(':').ok_or_else(invalid)?;
        Ok((name.to_owned(), pass.to_owned()))
    })();
    Some(parsed)
}

/// The user of a request. Wrong Basic credentials are a 401 (CouchDB does
/// not fall back to anonymous); a bad, expired or revoked cookie is ignored.
pub fn authenticate(server: &Server, req: &Request) -> Result<UserCtx, HttpError> {
    if let Some(credentials) = basic_credentials(req) {
        let (name, pass) = credentials?;
        return match check_password(server, &name, &pass, req.peer)? {
            Some(roles) => Ok(UserCtx { name: Some(name), roles, method: Some("default") }),
            None => Err(HttpError::unauthorized("Name or password is incorrect.")),
        };
    }
    match cookie_session(server, req)? {
        Some(s) => Ok(UserCtx { name: Some(s.name), roles: s.roles, method: Some("cookie") }),
        None => Ok(UserCtx::default()),
    }
}

/// A valid session cookie of a request.
struct CookieSession {
    name: String,
    roles: Vec<String>,
    mac: String,
    expiry: u64,
}

fn cookie_session(server: &Server, req: &Request) -> Result<Option<CookieSession>, HttpError> {
    let Some(value) = req.header("cookie").and_then(session_cookie) else { return Ok(None) };
    let Some(claim) = session::claim(value) else { return Ok(None) };
    let (salt, roles) = if claim.name == server.identity.admin_name {
        (server.admin_hash().salt, vec!["_admin".to_owned()])
    } else {
        let Some(user) = user_doc(server, &claim.name)? else { return Ok(None) };
        let Some(hash) = PasswordHash::from_json(&user) else { return Ok(None) };
        (hash.salt, roles_of(&user))
    };
    if !claim.verify(&server.identity.secret, &salt) || server.revoked_sessions.contains(claim.mac()) {
        return Ok(None);
    }
    Ok(Some(CookieSession { name: claim.name.clone(), roles, mac: claim.mac().to_owned(), expiry: claim.expiry }))
}

fn session_cookie(header: &str) -> Option<&str> {
    header.split(';').map(str::trim).find_map(|c| c.strip_prefix("AuthSession=")).filter(|v| !v.is_empty())
}

/// A new session cookie for `name` (whose password was just checked).
pub fn make_cookie(server: &Server, name: &str) -> Result<String, HttpError> {
    let salt = if name == server.identity.admin_name {
        server.admin_hash().salt
    } else {
        user_doc(server, name)?.as_ref().and_then(PasswordHash::from_json).map(|h| h.salt).ok_or_else(|| HttpError::unauthorized("Name or password is incorrect."))?
    };
    Ok(session::make_cookie(&server.identity.secret, name, &salt, server.auth.session_timeout_secs))
}

/// The `Set-Cookie` of a renewed session, when `req` was authenticated by
/// a session cookie past a tenth of its lifetime (`session::needs_renewal`).
pub fn renewal_cookie(server: &Server, req: &Request, ctx: &UserCtx) -> Option<String> {
    if ctx.method != Some("cookie") {
        return None;
    }
    let claim = req.header("cookie").and_then(session_cookie).and_then(session::claim)?;
    if !session::needs_renewal(claim.expiry, server.auth.session_timeout_secs) || ctx.name.as_deref() != Some(claim.name.as_str()) {
        return None;
    }
    crate::couch::server::session_set_cookie(server, &claim.name).ok()
}

/// Logout: the request's session cookie, if valid, is forgotten by the
/// server too.
pub fn end_session(server: &Server, req: &Request) -> Result<(), HttpError> {
    if let Some(session) = cookie_session(server, req)? {
        server.revoked_sessions.revoke(&session.mac, session.expiry).map_err(|e| HttpError::internal(format!("recording a logout: {e}")))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Clients that start at once with one password share one PBKDF2: one
    /// verifies, the others wait and find it remembered. A wrong password
    /// is never remembered, and the in-flight map is left empty.
    #[test]
    fn concurrent_requests_with_one_password_run_one_pbkdf2() {
        let dir = tempfile::tempdir().unwrap();
        let settings = AuthSettings { pbkdf2_iterations: 100_000, ..AuthSettings::default() };
        let (_stop, shutdown) = tokio::sync::watch::channel(false);
        let server = Server::open(dir.path(), Some(("admin".into(), "s3cret".into())), 1 << 20, settings, shutdown).unwrap();
        let hash = server.admin_hash();
        let start = std::sync::Barrier::new(8);
        let outcomes: Vec<Verified> = std::thread::scope(|s| {
            let threads: Vec<_> = (0..8)
                .map(|_| {
                    s.spawn(|| {
                        start.wait();
                        verify_cached(&server, credential_key(&server, "admin", "s3cret"), "s3cret", &hash)
                    })
                })
                .collect();
            threads.into_iter().map(|t| t.join().unwrap()).collect()
        });
        let now = outcomes.iter().filter(|v| **v == Verified::Now).count();
        let cached = outcomes.iter().filter(|v| **v == Verified::Cached).count();
        assert_eq!((now, cached), (1, 7), "one PBKDF2 for eight requests");
        assert!(verify_cached(&server, credential_key(&server, "admin", "wrong"), "wrong", &hash) == Verified::Wrong);
        assert!(verify_cached(&server, credential_key(&server, "admin", "wrong"), "wrong", &hash) == Verified::Wrong, "a wrong password is not remembered");
        assert!(lock(&server.verifying).is_empty(), "nothing left in flight");
    }

    /// A login for a name with no account made no PBKDF2 run, and answered
    /// in 1 ms where one with an account took 70 ms (issue 44): it runs
    /// one, at the server's iteration count, as a wrong password does.
    #[test]
    fn a_name_without_an_account_costs_what_a_wrong_password_costs() {
        let dir = tempfile::tempdir().unwrap();
        let settings = AuthSettings { pbkdf2_iterations: 2_000, ..AuthSettings::default() };
        let (_stop, shutdown) = tokio::sync::watch::channel(false);
        let server = Server::open(dir.path(), Some(("admin".into(), "s3cret".into())), 1 << 20, settings, shutdown).unwrap();
        let runs = |name: &str| {
            password::DERIVATIONS.with(|d| d.borrow_mut().clear());
            assert_eq!(check_password(&server, name, "guess", None).unwrap(), None);
            password::DERIVATIONS.with(|d| d.borrow().clone())
        };
        assert_eq!(runs("admin"), vec![2_000], "a wrong password: one run at the stored count");
        assert_eq!(runs("nobody"), vec![2_000], "no account: the same run");
    }
}
