//! `AuthSession` cookies: `base64url(name:expiry_hex:nonce).hmac`, the HMAC
//! (SHA-256) keyed by the server's secret and the user's password salt, as
//! CouchDB keys its HMAC-SHA1 with secret + salt
//! (https://docs.couchdb.org/en/stable/api/server/authn.html#cookie-authentication).
//! A password change makes a new salt, so it ends every session of the user.
//!
//! Logout (`DELETE /_session`) also makes the server forget the cookie
//! (CouchDB only asks the browser to drop it, so a copied cookie lives on
//! until it expires). Revoked cookies are kept until their expiry in memory
//! and in `DATA/revoked-sessions` (one `expiry_hex mac` line each,
//! appended; rewritten with the live ones when mostly expired), so a
//! restart does not bring them back. A per-user generation would be
//! smaller but would end every session of the user on every device at
//! each logout, which is not what logging out of one browser means.

use base64::Engine;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// How long a session cookie lasts by default (CouchDB's default
/// `[chttpd_auth] timeout`; `rhizome serve --session-timeout-secs`).
pub const SESSION_SECONDS: u64 = 600;

pub fn now_secs() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

fn sign(secret: &str, salt: &str, payload: &str) -> String {
    let key = format!("{secret}{salt}");
    let mut mac = Hmac::<Sha256>::new_from_slice(key.as_bytes()).expect("HMAC takes keys of any length");
    mac.update(payload.as_bytes());
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes())
}

/// Whether a valid session expiring at `expiry` is renewed by the answer
/// to the request it authenticated: once a tenth of its lifetime has
/// passed, as CouchDB does (`couch_httpd_auth:cookie_auth_header`), so that
/// a client busy for longer than the timeout stays logged in.
pub fn needs_renewal(expiry: u64, lifetime_secs: u64) -> bool {
    expiry.saturating_sub(now_secs()) * 10 < lifetime_secs * 9
}

pub fn make_cookie(secret: &str, name: &str, salt: &str, lifetime_secs: u64) -> String {
    // The nonce tells apart two logins in the same second, so that logging
    // out of one leaves the other.
    let nonce = &crate::http::uuid()[..16];
    let payload = format!("{name}:{:x}:{nonce}", now_secs() + lifetime_secs);
    let encoded = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(payload.as_bytes());
    format!("{encoded}.{}", sign(secret, salt, &payload))
}

/// The name and expiry a cookie claims, before its MAC is checked (the MAC
/// needs the user's salt).
pub struct Claim<'a> {
    pub name: String,
    pub expiry: u64,
    payload: String,
    mac: &'a str,
}

pub fn claim(value: &str) -> Option<Claim<'_>> {
    let (encoded, mac) = value.split_once('.')?;
    let payload = String::from_utf8(base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(encoded).ok()?).ok()?;
    let (rest, _nonce) = payload.rsplit_once(':')?;
    let (name, expiry) = rest.rsplit_once(':')?;
    let expiry = u64::from_str_radix(expiry, 16).ok()?;
    (expiry > now_secs()).then(|| Claim { name: name.to_owned(), expiry, payload: payload.clone(), mac })
}

impl Claim<'_> {
    /// Whether the MAC is right for this salt (constant-time comparison).
    pub fn verify(&self, secret: &str, salt: &str) -> bool {
        let expected = sign(secret, salt, &self.payload);
        expected.len() == self.mac.len() && expected.bytes().zip(self.mac.bytes()).fold(0u8, |a, (x, y)| a | (x ^ y)) == 0
    }
    pub fn mac(&self) -> &str {
        self.mac
    }
}

/// Cookies logged out before their expiry.
pub struct RevokedSessions {
    path: PathBuf,
    state: Mutex<Revoked>,
}

#[derive(Default)]
struct Revoked {
    /// MAC -> expiry.
    live: HashMap<String, u64>,
    lines_in_file: usize,
}

impl RevokedSessions {
    pub fn open(data_dir: &Path) -> RevokedSessions {
        let path = data_dir.join("revoked-sessions");
        let now = now_secs();
        let mut state = Revoked::default();
        if let Ok(text) = std::fs::read_to_string(&path) {
            for line in text.lines() {
                state.lines_in_file += 1;
                if let Some((expiry, mac)) = line.split_once(' ') {
                    if let Ok(expiry) = u64::from_str_radix(expiry, 16) {
                        if expiry > now {
                            state.live.insert(mac.to_owned(), expiry);
                        }
                    }
                }
            }
        }
        RevokedSessions { path, state: Mutex::new(state) }
    }

    pub fn contains(&self, mac: &str) -> bool {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).live.contains_key(mac)
    }

    /// Forgets a cookie for good (until its expiry, after which it is dead
    /// anyway). The file is written before this returns.
    pub fn revoke(&self, mac: &str, expiry: u64) -> std::io::Result<()> {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let now = now_secs();
        state.live.retain(|_, e| *e > now);
        state.live.insert(mac.to_owned(), expiry);
        if state.lines_in_file >= 2 * state.live.len() + 64 {
            let text: String = state.live.iter().map(|(m, e)| format!("{e:x} {m}\n")).collect();
            crate::state::write_durably(&self.path, text.as_bytes(), true)?;
            state.lines_in_file = state.live.len();
        } else {
            let mut f = std::fs::OpenOptions::new().create(true).append(true).open(&self.path)?;
            f.write_all(format!("{expiry:x} {mac}\n").as_bytes())?;
            f.sync_data()?;
            state.lines_in_file += 1;
        }
        Ok(())
    }
}
