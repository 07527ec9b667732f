//! Password hashes as CouchDB stores them: PBKDF2 with a random salt,
//! `derived_key` in hex
//! (https://docs.couchdb.org/en/stable/intro/security.html#password-hashing).
//! New hashes use HMAC-SHA-256 (`"pbkdf2_prf": "sha256"`, CouchDB 3.4's
//! form); hashes without `pbkdf2_prf` are CouchDB's older HMAC-SHA-1 and
//! are still accepted, then upgraded at the next successful login.

use serde_json::{json, Value};
use sha1::Sha1;
use sha2::Sha256;

/// PBKDF2 iterations of new hashes (CouchDB 3.4's default, OWASP's advice
/// for PBKDF2-HMAC-SHA-256). Verified credentials are cached in memory, so
/// a password costs this once per process, not once per request.
pub const DEFAULT_ITERATIONS: u32 = 600_000;

/// The pseudo-random function of PBKDF2.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Prf {
    Sha1,
    Sha256,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PasswordHash {
    pub derived_key: String,
    pub salt: String,
    pub iterations: u32,
    pub prf: Prf,
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
thread_local! {
    /// The iteration counts of the PBKDF2 runs this thread made (tests).
    pub static DERIVATIONS: std::cell::RefCell<Vec<u32>> = const { std::cell::RefCell::new(Vec::new()) };
}

fn derive(password: &str, salt: &str, iterations: u32, prf: Prf) -> String {
    #[cfg(test)]
    DERIVATIONS.with(|d| d.borrow_mut().push(iterations));
    match prf {
        Prf::Sha1 => {
            let mut out = [0u8; 20];
            pbkdf2::pbkdf2_hmac::<Sha1>(password.as_bytes(), salt.as_bytes(), iterations, &mut out);
            hex(&out)
        }
        Prf::Sha256 => {
            let mut out = [0u8; 32];
            pbkdf2::pbkdf2_hmac::<Sha256>(password.as_bytes(), salt.as_bytes(), iterations, &mut out);
            hex(&out)
        }
    }
}

impl PasswordHash {
    /// A new hash with a fresh salt.
    pub fn new(password: &str, iterations: u32) -> PasswordHash {
        Self::with_salt(password, &crate::http::uuid(), iterations)
    }

    /// A new SHA-256 hash with the given salt (an upgrade keeps the salt,
    /// which session cookies are signed with, so upgrading a hash does not
    /// end the user's sessions; a password change makes a new salt and does).
    pub fn with_salt(password: &str, salt: &str, iterations: u32) -> PasswordHash {
        let iterations = iterations.max(1);
        PasswordHash { derived_key: derive(password, salt, iterations, Prf::Sha256), salt: salt.to_owned(), iterations, prf: Prf::Sha256 }
    }

    /// A hash no password matches (its derived key is random, not derived),
    /// whose verification costs what a real one's at `iterations` does:
    /// what a login for a name without an account is checked against.
    pub fn unmatchable(iterations: u32) -> PasswordHash {
        PasswordHash { derived_key: format!("{}{}", crate::http::uuid(), crate::http::uuid()), salt: crate::http::uuid(), iterations: iterations.max(1), prf: Prf::Sha256 }
    }

    /// Whether this hash is weaker than new ones: SHA-1, or fewer iterations.
    pub fn needs_upgrade(&self, iterations: u32) -> bool {
        self.prf != Prf::Sha256 || self.iterations < iterations
    }

    /// Reads the fields of a `_users` document or of `server.json`.
    pub fn from_json(v: &Value) -> Option<PasswordHash> {
        if v.get("password_scheme").and_then(Value::as_str) != Some("pbkdf2") {
            return None;
        }
        let prf = match v.get("pbkdf2_prf").map(Value::as_str) {
            None | Some(Some("sha" | "sha1")) => Prf::Sha1,
            Some(Some("sha256")) => Prf::Sha256,
            Some(_) => return None,
        };
        Some(PasswordHash {
            derived_key: v.get("derived_key")?.as_str()?.to_owned(),
            salt: v.get("salt")?.as_str()?.to_owned(),
            iterations: u32::try_from(v.get("iterations")?.as_u64()?).ok()?.max(1),
            prf,
        })
    }

    pub fn fields(&self) -> Value {
        let mut v = json!({ "password_scheme": "pbkdf2", "derived_key": self.derived_key, "salt": self.salt, "iterations": self.iterations });
        if self.prf == Prf::Sha256 {
            v["pbkdf2_prf"] = json!("sha256");
        }
        v
    }
}

/// Constant-time comparison of the derived keys.
pub fn verify(password: &str, hash: &PasswordHash) -> bool {
    let got = derive(password, &hash.salt, hash.iterations, hash.prf);
    got.len() == hash.derived_key.len() && got.bytes().zip(hash.derived_key.bytes()).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn old_sha1_hashes_verify_and_need_an_upgrade() {
        // CouchDB 3.3's form: PBKDF2-HMAC-SHA1, 10 iterations, no pbkdf2_prf.
        let old = json!({ "password_scheme": "pbkdf2", "salt": "abc", "iterations": 10, "derived_key": derive("pw", "abc", 10, Prf::Sha1) });
        let hash = PasswordHash::from_json(&old).unwrap();
        assert_eq!(hash.prf, Prf::Sha1);
        assert!(verify("pw", &hash) && !verify("pw2", &hash));
        assert!(hash.needs_upgrade(1000));
        let new = PasswordHash::with_salt("pw", &hash.salt, 1000);
        assert!(!new.needs_upgrade(1000) && verify("pw", &new) && new.derived_key.len() == 64);
        assert_eq!(PasswordHash::from_json(&new.fields()), Some(new));
    }
}
