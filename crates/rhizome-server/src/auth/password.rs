//! Password hashes as CouchDB stores them: PBKDF2-HMAC-SHA1 with a random
//! salt, `derived_key` in hex
//! (https://docs.couchdb.org/en/stable/intro/security.html#password-hashing).

use serde_json::{json, Value};
use sha1::Sha1;

/// Iterations for `_users` documents: CouchDB 3.3's default.
pub const USER_ITERATIONS: u32 = 10;
/// Iterations for the server admin, verified once per process per password
/// (verified credentials are cached), so it can afford more.
pub const ADMIN_ITERATIONS: u32 = 100_000;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PasswordHash {
    pub derived_key: String,
    pub salt: String,
    pub iterations: u32,
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn derive(password: &str, salt: &str, iterations: u32) -> String {
    let mut out = [0u8; 20];
    pbkdf2::pbkdf2_hmac::<Sha1>(password.as_bytes(), salt.as_bytes(), iterations, &mut out);
    hex(&out)
}

impl PasswordHash {
    pub fn new(password: &str, iterations: u32) -> PasswordHash {
        let salt = crate::http::uuid();
        PasswordHash { derived_key: derive(password, &salt, iterations), salt, iterations }
    }

    /// Reads the fields of a `_users` document or of `server.json`.
    pub fn from_json(v: &Value) -> Option<PasswordHash> {
        if v.get("password_scheme").and_then(Value::as_str) != Some("pbkdf2") {
            return None;
        }
        Some(PasswordHash {
            derived_key: v.get("derived_key")?.as_str()?.to_owned(),
            salt: v.get("salt")?.as_str()?.to_owned(),
            iterations: u32::try_from(v.get("iterations")?.as_u64()?).ok()?.max(1),
        })
    }

    pub fn fields(&self) -> Value {
        json!({ "password_scheme": "pbkdf2", "derived_key": self.derived_key, "salt": self.salt, "iterations": self.iterations })
    }
}

/// Constant-time comparison of the derived keys.
pub fn verify(password: &str, hash: &PasswordHash) -> bool {
    let got = derive(password, &hash.salt, hash.iterations);
    got.len() == hash.derived_key.len() && got.bytes().zip(hash.derived_key.bytes()).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
}
