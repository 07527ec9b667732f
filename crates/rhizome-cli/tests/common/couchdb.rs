//! The peer Apache CouchDB 3.5.0 (`../shared/peers/couchdb`, its README)
//! started in a fresh folder for a test and stopped when dropped, so that
//! a test can hold Rhizome's answers beside the real CouchDB's.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The admin the peer is started with.
pub const COUCH_ADMIN: &str = "admin:secret";

pub struct CouchDbPeer {
    pub port: u16,
    dir: PathBuf,
    tool: PathBuf,
}

/// The peer's folder: `RHIZOME_SHARED` or `../shared` beside the clone.
pub fn peer_folder() -> PathBuf {
    let shared = std::env::var_os("RHIZOME_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared"));
    shared.join("peers/couchdb")
}

impl CouchDbPeer {
    /// Starts a CouchDB 3.5.0 in `dir` on a free port; `start` waits until
    /// it answers (its own readiness poll with a deadline).
    pub fn start(dir: &Path) -> CouchDbPeer {
        let tool = peer_folder();
        assert!(tool.join("start").exists(), "no peer CouchDB at {} (set RHIZOME_SHARED)", tool.display());
        // The peer's epmd takes PORT+1 too: both handed out by
        // `free_port`, so no server of the same test process takes either.
        let port = loop {
            let p = super::server::free_port();
            if super::server::free_port() == p + 1 {
                break p;
            }
        };
        let out = Command::new(tool.join("start")).arg(dir).arg(port.to_string()).arg(COUCH_ADMIN).output().expect("the peer's start script runs");
        assert!(out.status.success(), "CouchDB did not start: {}", String::from_utf8_lossy(&out.stderr));
        CouchDbPeer { port, dir: dir.to_owned(), tool }
    }

    /// One request on a new connection. The reference server now and then
    /// resets a connection instead of answering (seen once in a whole test
    /// run, on an error answer); that request is sent once more, as an
    /// HTTP client retries a reset connection. Rhizome's side gets no
    /// such allowance.
    pub fn request(&self, method: &str, path: &str, auth: Option<&str>, body: Option<&str>) -> (u16, String) {
        use std::io::ErrorKind::{BrokenPipe, ConnectionReset};
        match super::server::try_request(self.port, method, path, auth, body, &[]) {
            Err(e) if matches!(e.kind(), ConnectionReset | BrokenPipe) => {
                super::server::try_request(self.port, method, path, auth, body, &[]).expect("CouchDB answers")
            }
            answer => answer.expect("CouchDB answers"),
        }
    }
}

impl Drop for CouchDbPeer {
    fn drop(&mut self) {
        let _ = Command::new(self.tool.join("stop")).arg(&self.dir).output();
    }
}
