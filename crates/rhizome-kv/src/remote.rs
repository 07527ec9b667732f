//! Shared stores: where a process's stores live when they are not folders
//! of its own (`--store cassandra://HOST[:PORT][,HOST...]/KEYSPACE`, or
//! `RHIZOME_STORE`).
//!
//! The layers above name a store by its folder (`<data>/dbs/<db>`); with a
//! shared store configured, [`crate::Kv::open`] opens the store of that
//! name in the cluster instead, named by the folder's path under the data
//! folder (`dbs/<db>`), so that every server given the same `--store`
//! serves the same databases whatever its own data folder. The folder
//! functions here ([`store_exists`], [`list_stores`], [`destroy_store`])
//! answer for the cluster then, and for the file system otherwise.

use crate::{Backend, Error, Result};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

struct Remote {
    /// The address without Rhizome's own settings (what the driver reads).
    url: String,
    /// The data folder: stores are named by their path under it.
    root: Option<PathBuf>,
    #[cfg(feature = "cassandra")]
    cluster: OnceLock<std::result::Result<Arc<crate::backend::cassandra::Cluster>, String>>,
}

static REMOTE: OnceLock<Option<Remote>> = OnceLock::new();

fn new_remote(url: String, root: Option<PathBuf>) -> Remote {
    // `isolate=data`: stores are named by their absolute paths, so that
    // servers with different data folders share nothing (tests run many
    // servers on one cluster this way).
    let (url, isolate) = strip_setting(&url, "isolate=data");
    Remote {
        url,
        root: if isolate { None } else { root.map(|r| std::path::absolute(&r).unwrap_or(r)) },
        #[cfg(feature = "cassandra")]
        cluster: OnceLock::new(),
    }
}

/// `url` without the query setting `setting`, and whether it was there.
fn strip_setting(url: &str, setting: &str) -> (String, bool) {
    let Some((base, query)) = url.split_once('?') else { return (url.to_owned(), false) };
    let rest: Vec<&str> = query.split('&').filter(|p| *p != setting).collect();
    let found = rest.len() != query.split('&').count();
    (if rest.is_empty() { base.to_owned() } else { format!("{base}?{}", rest.join("&")) }, found)
}

/// Sets the process's shared store (`None` or empty: stores are folders),
/// with the data folder its stores are named under. Call once, before any
/// store opens; a second call with another setting is an error.
pub fn configure(url: Option<&str>, data_dir: &Path) -> Result<()> {
    let url = url.map(str::trim).filter(|u| !u.is_empty());
    if let Some(url) = url {
        if !url.starts_with("cassandra://") {
            return Err(Error::Engine(format!("--store {url}: expected cassandra://HOST[:PORT][,HOST...]/KEYSPACE")));
        }
    }
    let wanted = url.map(|u| new_remote(u.to_owned(), Some(data_dir.to_owned())));
    let same = |a: &Option<Remote>, b: &Option<Remote>| match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => a.url == b.url && a.root == b.root,
        _ => false,
    };
    let mut wanted = Some(wanted);
    let set = REMOTE.get_or_init(|| wanted.take().expect("taken once"));
    match wanted {
        None => Ok(()),
        Some(w) if same(set, &w) => Ok(()),
        Some(_) => Err(Error::Engine("the shared store was already configured otherwise in this process".into())),
    }
}

/// The configured shared store, or the one `RHIZOME_STORE` names (stores
/// named by their absolute paths: tests and tools without a data folder).
fn remote() -> Option<&'static Remote> {
    REMOTE
        .get_or_init(|| {
            let url = std::env::var("RHIZOME_STORE").ok().filter(|u| !u.trim().is_empty())?;
            Some(new_remote(url.trim().to_owned(), None))
        })
        .as_ref()
}

/// Whether stores live in a shared store rather than folders.
pub fn is_shared() -> bool {
    remote().is_some()
}

/// A store's name in the shared store: its path under the data folder.
#[cfg_attr(not(feature = "cassandra"), allow(dead_code))]
fn store_name(remote: &Remote, path: &Path) -> String {
    let path = std::path::absolute(path).unwrap_or_else(|_| path.to_owned());
    let relative = remote.root.as_ref().and_then(|root| path.strip_prefix(root).ok()).unwrap_or(&path);
    // "/" and the folders under the data folder ("/" is the data folder
    // itself, the store of `rhizome load` and `query`).
    let parts: Vec<String> = relative
        .components()
        .filter_map(|c| match c {
            std::path::Component::Normal(part) => Some(part.to_string_lossy().into_owned()),
            _ => None,
        })
        .collect();
    format!("/{}", parts.join("/"))
}

#[cfg(feature = "cassandra")]
fn cluster(remote: &Remote) -> Result<Arc<crate::backend::cassandra::Cluster>> {
    remote
        .cluster
        .get_or_init(|| crate::backend::cassandra::Cluster::connect(&remote.url).map(Arc::new).map_err(|e| e.to_string()))
        .clone()
        .map_err(Error::Engine)
}

#[cfg(not(feature = "cassandra"))]
fn unsupported(remote: &Remote) -> Error {
    Error::Engine(format!("{}: this build has no Cassandra backend (build with the cargo feature `cassandra`)", remote.url))
}

/// The shared store named by `path`, created on first use, when the
/// process has one; `None` when stores are folders.
pub fn open(path: &Path) -> Result<Option<Arc<dyn Backend>>> {
    let Some(remote) = remote() else { return Ok(None) };
    #[cfg(feature = "cassandra")]
    {
        let backend = crate::backend::cassandra::CassandraBackend::open(cluster(remote)?, &store_name(remote, path))?;
        Ok(Some(Arc::new(backend)))
    }
    #[cfg(not(feature = "cassandra"))]
    {
        let _ = path;
        Err(unsupported(remote))
    }
}

/// What this process has waited on the shared store's cluster so far
/// (waits, each one round trip or several sent together; their seconds;
/// the statements sent): `None` when stores are folders or the cluster
/// was not reached yet.
pub fn cluster_wait_stats() -> Option<crate::WaitStats> {
    let remote = remote()?;
    #[cfg(feature = "cassandra")]
    {
        remote.cluster.get()?.as_ref().ok().map(|c| c.wait_stats())
    }
    #[cfg(not(feature = "cassandra"))]
    {
        let _ = remote;
        None
    }
}

/// Whether the store named by `path` exists (a folder with the embedded
/// engine's `CURRENT` file, or a store of that name in the cluster).
pub fn store_exists(path: &Path) -> Result<bool> {
    let Some(remote) = remote() else { return Ok(path.join("CURRENT").exists()) };
    #[cfg(feature = "cassandra")]
    {
        cluster(remote)?.store_exists(&store_name(remote, path))
    }
    #[cfg(not(feature = "cassandra"))]
    {
        Err(unsupported(remote))
    }
}

/// The names of the stores directly inside folder `dir` (folder names, as
/// the file system spells them), or `None` when stores are folders (the
/// caller lists the folder).
pub fn list_stores(dir: &Path) -> Result<Option<Vec<String>>> {
    let Some(remote) = remote() else { return Ok(None) };
    #[cfg(feature = "cassandra")]
    {
        let prefix = format!("{}/", store_name(remote, dir).trim_end_matches('/'));
        let names = cluster(remote)?.store_names()?;
        Ok(Some(
            names.into_iter().filter_map(|n| n.strip_prefix(&prefix).filter(|rest| !rest.contains('/')).map(str::to_owned)).collect(),
        ))
    }
    #[cfg(not(feature = "cassandra"))]
    {
        let _ = dir;
        Err(unsupported(remote))
    }
}

/// Deletes the shared store named by `path` (its folder, if any, is the
/// caller's); nothing to do when stores are folders.
pub fn destroy_store(path: &Path) -> Result<()> {
    let Some(remote) = remote() else { return Ok(()) };
    #[cfg(feature = "cassandra")]
    {
        cluster(remote)?.destroy_store(&store_name(remote, path))
    }
    #[cfg(not(feature = "cassandra"))]
    {
        let _ = path;
        Err(unsupported(remote))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stores_are_named_under_the_data_folder_unless_isolated() {
        let shared = new_remote("cassandra://h/ks".into(), Some(PathBuf::from("/srv/a")));
        assert_eq!(shared.url, "cassandra://h/ks");
        assert_eq!(store_name(&shared, Path::new("/srv/a/dbs/people")), "/dbs/people");
        assert_eq!(store_name(&shared, Path::new("/srv/a")), "/");
        let other = new_remote("cassandra://h/ks".into(), Some(PathBuf::from("/srv/b")));
        assert_eq!(store_name(&other, Path::new("/srv/b/dbs/people")), "/dbs/people", "two servers' data folders name the same store");
        let isolated = new_remote("cassandra://h/ks?isolate=data&lease_ms=500".into(), Some(PathBuf::from("/srv/a")));
        assert_eq!(isolated.url, "cassandra://h/ks?lease_ms=500");
        assert_eq!(store_name(&isolated, Path::new("/srv/a/dbs/people")), "/srv/a/dbs/people");
    }
}
